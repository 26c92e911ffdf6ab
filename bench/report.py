"""report.py: the C benchmarks and NumPy's time for the same work, in one run.

    .venv/bin/python bench/report.py build/labs

Runs every build/<impl>/bin/bench* binary and echoes its lines:
    bench <lab> <case> n=<n> ns=<nanoseconds per call>
    ratio <lab> <case> ...=<x>
then times NumPy on the cases it knows (best of 5, outputs preallocated so that neither side
pays for allocation) and prints `numpy <lab> <case> n=<n> ns=<ns>` and, where the C binary
reported the same case and n, `ratio <lab> <case> n=<n> kernel/numpy=<x>`.
"""
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

BENCH_LINE = re.compile(r"bench (\S+) (\S+) n=(\d+) ns=([0-9.eE+-]+)")
REPEATS = 5


def square_plus_one(n):
  x, out = np.random.default_rng(0).standard_normal(n).astype(np.float32), np.empty(n, np.float32)
  return lambda: np.add(np.multiply(x, x, out=out), 1, out=out)


def strided_fallback(n):
  """x[::2] computed on the view, as the lab's fallback does."""
  base, out = np.random.default_rng(0).standard_normal(2 * n).astype(np.float32), np.empty(n, np.float32)
  x = base[::2]
  return lambda: np.add(np.multiply(x, x, out=out), 1, out=out)


def copy_then_kernel(n):
  """x[::2] copied into a contiguous buffer (kept, as a caller would), then computed there."""
  base, tmp, out = (np.random.default_rng(0).standard_normal(2 * n).astype(np.float32), np.empty(n, np.float32),
                    np.empty(n, np.float32))
  x = base[::2]

  def run():
    np.copyto(tmp, x)
    np.add(np.multiply(tmp, tmp, out=out), 1, out=out)
  return run


def chain(n):
  a, b, c = (np.random.default_rng(k).standard_normal(n).astype(np.float32) for k in range(3))
  out = np.empty(n, np.float32)

  def run():   # out = (a + b) * c - a
    np.add(a, b, out=out)
    np.multiply(out, c, out=out)
    np.subtract(out, a, out=out)
  return run


def rowsum(n, rows=8):
  """The C benchmark's shape: `rows` rows of n elements each (n is the row length)."""
  x = np.random.default_rng(0).standard_normal((rows, n)).astype(np.float32)
  out = np.empty(rows, np.float32)
  return lambda: np.sum(x, axis=1, out=out)


# (lab, case) -> (setup(n) -> callable, default n, bytes moved per element or None)
CASES = {
  ("23.6", "square_plus_one"): (square_plus_one, 16777216, 8),
  ("23.6", "strided_fallback"): (strided_fallback, 1048576, None),
  ("23.6", "copy_then_kernel"): (copy_then_kernel, 1048576, None),
  ("23.1", "chain-dynamic"): (chain, 1048576, None),
  ("23.1", "rowsum-dynamic"): (rowsum, 1048576, None),
}


def best_ns(fn):
  fn()   # warm: page faults and caches are not what is measured
  times = []
  for _ in range(REPEATS):
    start = time.perf_counter_ns()
    fn()
    times.append(time.perf_counter_ns() - start)
  return min(times)


def run_binaries(build):
  """{(lab, case, n): ns} from every bench_* binary, echoing what they print."""
  found = {}
  binaries = sorted(p for p in (build / "bin").glob("bench*") if p.is_file() and os.access(p, os.X_OK))
  if not binaries:
    print(f"note: no {build}/bin/bench* binaries yet; NumPy timings only")
  for binary in binaries:
    try:
      proc = subprocess.run([str(binary)], capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
      print(f"note: {binary} ran past 600 s; skipped")
      continue
    print(proc.stdout, end="")
    if proc.returncode != 0:
      print(f"note: {binary} exited with status {proc.returncode}: {proc.stderr.strip()[-300:]}")
    for m in BENCH_LINE.finditer(proc.stdout):
      found[(m.group(1), m.group(2), int(m.group(3)))] = float(m.group(4))
  return found


def main(argv):
  if len(argv) != 1:
    print("usage: bench/report.py BUILD_DIR (e.g. build/labs)", file=sys.stderr)
    return 2
  kernels = run_binaries(Path(argv[0]))
  for (lab, case), (setup, default_n, bytes_per_element) in CASES.items():
    sizes = sorted({n for (l, c, n) in kernels if (l, c) == (lab, case)}) or [default_n]
    for n in sizes:
      ns = best_ns(setup(n))
      line = f"numpy {lab} {case} n={n} ns={ns}"
      if bytes_per_element:
        line += f" GB/s={bytes_per_element * n / ns:.2f}"
      print(line)
      if (lab, case, n) in kernels:
        print(f"ratio {lab} {case} n={n} kernel/numpy={kernels[(lab, case, n)] / ns:.3f}")
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
