"""kv_table.py: lab 23.5's table of figures (its README, "Figures"), from one run of bench_23_5.

report.py calls table() with the C benchmark's output, its `bench` lines by (lab, case, n) and
NumPy's times, and writes the Markdown beside the figure (`make bench LAB=23.5`:
build/kv_latency.md), so that the README's table and the figure come from the same run. Needs
no matplotlib. A row whose lines are missing (an older binary) is left out.
"""
import re

RATIO = {
    "capacity": re.compile(r"ratio 23\.5 capacity-independence length=(\d+) cap(\d+)/cap64: "
                           r"dynamic=([\d.]+) masked=([\d.]+)"),
    "uncached": re.compile(r"ratio 23\.5 cached-vs-uncached length=(\d+) uncached/cached=([\d.]+)"),
    "batch": re.compile(r"ratio 23\.5 batch length=(\d+) four-rows/one-row=([\d.]+)"),
    "compile": re.compile(r"ratio 23\.5 compile cold/warm=([\d.]+) \((\d+) compiler runs"),
}
CAPACITY_GOAL, UNCACHED_GOAL = 1.10, 20   # bench_23_5.c's goals, as it prints them


def us(ns):
  return f"{ns / 1e3:.0f} µs"


def row(what, measured, goal=""):
  return f"| {what} | {measured} | {goal} |"


def met(ok):
  return "met" if ok else "not met in this run"


def table(output, kernels, numpy_ns):
  """The table's Markdown lines."""
  found = {k: r.search(output) for k, r in RATIO.items()}
  step = {(c, n): ns for (lab, c, n), ns in kernels.items() if lab == "23.5"}
  lines = ["| what | measured | goal |", "| --- | --- | --- |"]
  if found["capacity"]:
    length, cap, dyn, masked = found["capacity"].groups()
    lines.append(row(f"per-token latency at length {length}, capacity {cap} / capacity 64",
                     f"dynamic {float(dyn):.2f}, masked {float(masked):.1f}",
                     f"dynamic at most {CAPACITY_GOAL:.2f}: {met(float(dyn) <= CAPACITY_GOAL)}"))
  if found["uncached"] and ("decode-step", 512) in step and ("uncached", 512) in step:
    x = float(found["uncached"].group(2))
    lines.append(row("cached step vs the uncached reference at length 512",
                     f"{us(step[('decode-step', 512)])} vs {step[('uncached', 512)] / 1e6:.1f} ms: {x:.0f}x",
                     f"at least {UNCACHED_GOAL}x: {met(x >= UNCACHED_GOAL)}"))
  dyn = {n: ns for (c, n), ns in step.items() if c == "len-dynamic"}
  if dyn:
    ends = [n for n in (1, 512, max(dyn)) if n in dyn]
    lines.append(row(f"dynamic step, length {' / '.join(map(str, ends))}, capacity {max(dyn)}",
                     " / ".join(f"{dyn[n] / 1e3:.0f}" for n in ends) + " µs"))
  masked = [ns for (c, n), ns in step.items() if c == "len-masked"]
  if masked:
    lines.append(row(f"masked step, any length, capacity {max(dyn or [0])}",
                     f"{min(masked) / 1e3:.0f} to {max(masked) / 1e3:.0f} µs"))
  versus = [(n, dyn[n] / numpy_ns[("23.5", "len-dynamic", n)]) for n in sorted(dyn)
            if n in (1, 512, max(dyn)) and ("23.5", "len-dynamic", n) in numpy_ns]
  if versus:
    lines.append(row("decode step vs NumPy's f32 step of the same model",
                     ", ".join(f"{x:.1f} (length {n})" for n, x in versus) + " of NumPy's time", "none set"))
  if found["batch"]:
    lines.append(row(f"a step of 4 rows vs 1 row, length {found['batch'].group(1)}",
                     f"{float(found['batch'].group(2)):.2f}"))
  cold = [(n, ns) for (c, n), ns in step.items() if c == "model-cold"]
  warm = [ns for (c, _), ns in step.items() if c == "model-warm"]
  if cold and warm:
    lines.append(row("the model's programs, empty disk cache / warm",
                     f"{cold[0][1] / 1e9:.2f} s ({cold[0][0]} gcc runs) / {warm[0] / 1e6:.1f} ms"))
  return lines
