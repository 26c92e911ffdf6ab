"""kv_plot.py: lab 23.5's latency figure, from the lines of bench_23_5 and report.py's NumPy times.

Two panels, per-token decode latency of one row: (a) against the populated length at capacity 4096,
(b) against the capacity at populated length 32; the dynamic-prefix decode and the masked baseline
in both, NumPy's f32 step of the same model in (a). Headless (Agg): nothing opens a window. The
footer names the machine and the date, so a figure says where it was measured.
"""
import datetime
import os
import platform

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)


def series(times, lab, case):
  """[(n, microseconds)] of one case, by n."""
  return sorted((n, ns / 1e3) for (l, c, n), ns in times.items() if (l, c) == (lab, case))


def machine():
  cpu = platform.processor() or platform.machine()
  try:
    with open("/proc/cpuinfo") as f:
      cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
  except OSError:
    pass
  return f"{cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}"


def line(ax, points, label, style):
  if points:
    xs, ys = zip(*points)
    ax.plot(xs, ys, style, label=label, markersize=4)


def draw(kernels, numpy_ns, path):
  fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
  line(a, series(kernels, "23.5", "len-dynamic"), "dynamic prefix (L = length)", "o-")
  line(a, series(kernels, "23.5", "len-masked"), "masked, full capacity", "s-")
  line(a, series(numpy_ns, "23.5", "len-dynamic"), "NumPy f32, same step", "^--")
  a.set(title="(a) against the populated length, capacity 4096", xlabel="populated length (slots)",
        ylabel="per-token latency (µs)")
  line(b, series(kernels, "23.5", "cap-dynamic"), "dynamic prefix (L = length)", "o-")
  line(b, series(kernels, "23.5", "cap-masked"), "masked, full capacity", "s-")
  b.set(title="(b) against the capacity, populated length 32", xlabel="capacity (slots)",
        ylabel="per-token latency (µs)", xscale="log", yscale="log")
  b.set_xscale("log", base=2)
  for ax in (a, b):
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
  fig.text(0.01, 0.01, f"lab 23.5, batch 1, 2 layers, d_model 64, 4 heads of 16; best of 5; "
                       f"{machine()}; {datetime.date.today().isoformat()}", fontsize=7, color="0.4")
  fig.tight_layout(rect=(0, 0.04, 1, 1))
  path.parent.mkdir(parents=True, exist_ok=True)
  fig.savefig(path, dpi=110)
  plt.close(fig)
