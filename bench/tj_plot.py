"""tj_plot.py: tensorjit's latency figure and table (chapter 23.7, "Latency against length"), from
the lines of bench_tj_latency and report.py's NumPy times for the same expression.

One panel, log-log, time per call against the length n of the 6-op chain
((a*b + a) * 0.5 - b) ** 2 + 1 (f32): tensorjit's warm call (one artifact for every n >= 2), NumPy,
and a static compiler's (tensorjit with dynamic = TJ_OFF) warm call and first call at each new
length, whose trace and compile are included. table() needs no matplotlib; draw() draws headless
(Agg), with the machine and the date in the footer, as kv_plot.py does.
"""
import re

LAB = "tj_latency"
COMPILES = re.compile(rf"bench {LAB} (\S+) n=(\d+) ns=\S+ compiles=(\d+)")
REJECTED = re.compile(rf"bench {LAB} chain6-static n=(\d+) ns=\S+ rejected=(\d+)")
COUNT = re.compile(rf"count {LAB} lengths=\S+ (dynamic|static): artifacts=(\d+) compiles=(\d+)")


def series(times, case):
  """{n: ns} of one case."""
  return {n: ns for (lab, c, n), ns in times.items() if (lab, c) == (LAB, case)}


def duration(ns):
  """A first call: a compile is milliseconds, a warm path microseconds."""
  return f"{ns / 1e6:.1f} ms" if ns >= 1e6 else f"{ns / 1e3:.1f} µs"


def table(printed, kernels, numpy_ns):
  """The chapter's table, Markdown lines: per length, each series' time and the compiles."""
  warm, static, first = series(kernels, "chain6"), series(kernels, "chain6-static"), series(kernels, "chain6-static-first")
  dyn_first = series(kernels, "chain6-first")
  numpy = series(numpy_ns, "chain6")
  compiles = {(case, int(n)): int(k) for case, n, k in COMPILES.findall(printed)}
  rejected = {int(n): r for n, r in REJECTED.findall(printed)}
  lines = ["| n | tensorjit warm | NumPy | NumPy / tensorjit | tensorjit first call | static warm | static first call "
           "| compiles (tensorjit, static) | static: guards failed a warm call |",
           "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
  for n in sorted(warm):
    if n in numpy and n in static and n in first and n in dyn_first:
      lines.append(f"| {n} | {warm[n] / 1e3:.2f} µs | {numpy[n] / 1e3:.2f} µs | {numpy[n] / warm[n]:.1f} | "
                   f"{duration(dyn_first[n])} | "
                   f"{static[n] / 1e3:.2f} µs | {first[n] / 1e6:.1f} ms | "
                   f"{compiles.get(('chain6-first', n), '?')}, {compiles.get(('chain6-static-first', n), '?')} | {rejected.get(n, '?')} |")
  counts = [f"{kind}: {artifacts} artifacts, {k} compiles over the {len(warm)} lengths"
            for kind, artifacts, k in COUNT.findall(printed)]
  return lines + ([""] + counts if counts else [])


def draw(kernels, numpy_ns, path):
  import datetime

  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt
  from kv_plot import machine   # one footer for both figures

  fig, ax = plt.subplots(figsize=(7.5, 4.6))
  for case, times, label, style in (
      ("chain6-static-first", kernels, "static: first call at a new length (trace + compile)", "x-"),
      ("chain6-first", kernels, "tensorjit: first call at a new length", "+:"),
      ("chain6", numpy_ns, "NumPy, the same expression", "^--"),
      ("chain6-static", kernels, "static: warm call (an artifact per length)", "s-"),
      ("chain6", kernels, "tensorjit: warm call (one artifact, n >= 2)", "o-")):
    points = sorted(series(times, case).items())
    if points:
      ax.plot([n for n, _ in points], [ns / 1e3 for _, ns in points], style, label=label, markersize=4)
  ax.set(title="((a*b + a) * 0.5 - b) ** 2 + 1, f32: time per call against length",
         xlabel="length n", ylabel="time per call (µs)")
  ax.set_xscale("log", base=2)
  ax.set_yscale("log")
  ax.grid(True, which="both", alpha=0.3)
  ax.legend(fontsize=7.5, loc="center right")
  fig.text(0.01, 0.01, f"bench_tj_latency; warm: best of 7 batches; first call: one sample; "
                       f"{machine()}; {datetime.date.today().isoformat()}", fontsize=6.5, color="0.4")
  fig.tight_layout(rect=(0, 0.03, 1, 1))
  path.parent.mkdir(parents=True, exist_ok=True)
  fig.savefig(path, dpi=110)
  plt.close(fig)
