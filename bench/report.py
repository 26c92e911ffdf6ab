"""report.py: the C benchmarks and NumPy's time for the same work, in one run.

    .venv/bin/python bench/report.py build/labs [--only 23.5] [--plot build/kv_latency.png]

Runs every build/<impl>/bin/bench* binary (--only: lab 23.N's alone) and echoes its lines:
    bench <lab> <case> n=<n> ns=<nanoseconds per call>
    ratio <lab> <case> ...=<x>
then times NumPy on the cases it knows (best of 5, outputs preallocated so that neither side
pays for allocation) and prints `numpy <lab> <case> n=<n> ns=<ns>` and, where the C binary
reported the same case and n, `ratio <lab> <case> n=<n> kernel/numpy=<x>`. With --plot and lab
23.5's lines, it draws the latency figure (bench/kv_plot.py, matplotlib) into that file.
"""
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # harness/, for lab 23.5's NumPy model
BENCH_LINE = re.compile(r"bench (\S+) (\S+) n=(\d+) ns=([0-9.eE+-]+)")
REPEATS = 5


def square_plus_one(n):
  x, out = np.random.default_rng(0).standard_normal(n).astype(np.float32), np.empty(n, np.float32)
  return lambda: np.add(np.multiply(x, x, out=out), 1, out=out)


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


_KV_MODELS = {}


def kv_step(n, capacity=4096):
  """Lab 23.5's decode step in NumPy, f32, one row, at populated length n (after the step) in a
  cache of `capacity`: the same weights (harness/kv_reference.py), the same work per token."""
  from harness.kv_reference import KvModel
  if capacity not in _KV_MODELS:
    _KV_MODELS[capacity] = KvModel(capacity, dtype=np.float32)
  model = _KV_MODELS[capacity]
  cache = model.cache(1, capacity)

  def run():
    cache.length[0] = n - 1
    model.step(cache, 0, 17)
  return run


# (lab, case) -> (setup(n) -> callable, default n, bytes moved per element or None)
CASES = {
  ("23.6", "square_plus_one"): (square_plus_one, 16777216, 8),
  ("23.1", "chain-dynamic"): (chain, 1048576, None),
  ("23.1", "rowsum-dynamic"): (rowsum, 1048576, None),
  ("23.5", "len-dynamic"): (kv_step, 512, None),
  ("23.5", "decode-step"): (kv_step, 512, None),
}


def best_ns(fn, clock=time.perf_counter_ns):
  fn()   # warm: page faults and caches are not what is measured
  times = []
  for _ in range(REPEATS):
    start = clock()
    fn()
    times.append(clock() - start)
  return min(times)


# Labs whose C benchmark times the process's CPU time, not the wall (bench_23_5.c says why):
# NumPy is timed the same way, so that the ratio compares like with like.
CPU_TIMED = {"23.5"}


def run_binaries(build, only=None):
  """{(lab, case, n): ns} from every bench_* binary (only: lab 23.N's), echoing what they print."""
  found = {}
  pattern = f"bench_{only.replace('.', '_')}" if only else "bench*"
  binaries = sorted(p for p in (build / "bin").glob(pattern) if p.is_file() and os.access(p, os.X_OK))
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
  import argparse
  ap = argparse.ArgumentParser(description="The C benchmarks and NumPy's time for the same work.")
  ap.add_argument("build", help="the build directory, e.g. build/labs")
  ap.add_argument("--only", help="run lab 23.N's benchmark alone (e.g. 23.5)")
  ap.add_argument("--plot", help="draw lab 23.5's latency figure into this PNG")
  args = ap.parse_args(argv)
  kernels = run_binaries(Path(args.build), args.only)
  numpy_ns = {}
  for (lab, case), (setup, default_n, bytes_per_element) in CASES.items():
    if args.only and lab != args.only:
      continue
    sizes = sorted({n for (l, c, n) in kernels if (l, c) == (lab, case)}) or [default_n]
    for n in sizes:
      ns = best_ns(setup(n), time.process_time_ns if lab in CPU_TIMED else time.perf_counter_ns)
      numpy_ns[(lab, case, n)] = ns
      line = f"numpy {lab} {case} n={n} ns={ns}"
      if bytes_per_element:
        line += f" GB/s={bytes_per_element * n / ns:.2f}"
      print(line)
      if (lab, case, n) in kernels:
        print(f"ratio {lab} {case} n={n} kernel/numpy={kernels[(lab, case, n)] / ns:.3f}")
  if args.plot:
    plot(kernels, numpy_ns, Path(args.plot))
  return 0


def plot(kernels, numpy_ns, path):
  """Lab 23.5's figure, when its benchmark ran; a note, not a failure, without matplotlib."""
  if not any(lab == "23.5" for (lab, _, _) in kernels):
    print("note: no lab 23.5 benchmark lines; no figure drawn")
    return
  try:
    import kv_plot
  except ImportError as e:
    print(f"note: no figure ({e}); tools/setup.sh --plot installs matplotlib (bench/requirements.txt)")
    return
  kv_plot.draw(kernels, numpy_ns, path)
  print(f"figure: {path}")


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
