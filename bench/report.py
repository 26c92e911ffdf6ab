"""report.py: the C benchmarks and NumPy's time for the same work, in one run.

    .venv/bin/python bench/report.py build/labs [--lab 23.3]

Runs every build/<impl>/bin/bench* binary (--lab: only bench_<lab>, and only
that lab's NumPy cases) and echoes its lines:
    bench <lab> <case> n=<n> ns=<nanoseconds per call>
    ratio <lab> <case> ...=<x>
then times NumPy on the cases it knows (best of 5, outputs preallocated so that neither side
pays for allocation) and prints `numpy <lab> <case> n=<n> ns=<ns>` and, where the C binary
reported the same case and n, `ratio <lab> <case> n=<n> kernel/numpy=<x>`.
The labs in INTERLEAVED are timed as their C benchmark times them: every case
of the lab in turn, round after round, and the median of the rounds.
"""
import os
import re
import statistics
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


def copy(n):
  a, out = np.random.default_rng(0).standard_normal(n).astype(np.float32), np.empty(n, np.float32)
  return lambda: np.copyto(out, a)


def halves(n):
  """a[:h] += a[h:] with n = 2h: in place, the two halves disjoint."""
  a, h = np.random.default_rng(0).standard_normal(n).astype(np.float32), n // 2

  def run():
    a[:h] += a[h:]
  return run


def shift(n):
  """a[1:] = a[:-1] + 1: NumPy computes the right-hand side into a new array, then copies it."""
  a = np.random.default_rng(0).standard_normal(n).astype(np.float32)

  def run():
    a[1:] = a[:-1] + 1
  return run


# (lab, case) -> (setup(n) -> callable, default n, bytes moved per element or None)
CASES = {
  ("23.6", "square_plus_one"): (square_plus_one, 16777216, 8),
  ("23.1", "chain-dynamic"): (chain, 1048576, None),
  ("23.1", "rowsum-dynamic"): (rowsum, 1048576, None),
  ("23.3", "memcpy"): (copy, 16777216, 8),
  ("23.3", "halves-direct"): (halves, 16777216, 6),      # reads 2h, writes h
  ("23.3", "shift-staged"): (shift, 16777216, 16),       # a temporary written, then copied
}
# lab -> rounds: timed interleaved, medians (bench_23_3.c does the same).
INTERLEAVED = {"23.3": 15}


def best_ns(fn):
  fn()   # warm: page faults and caches are not what is measured
  times = []
  for _ in range(REPEATS):
    start = time.perf_counter_ns()
    fn()
    times.append(time.perf_counter_ns() - start)
  return min(times)


def median_ns_interleaved(fns, rounds):
  """Each callable's median time per call: after a warm-up round, `rounds`
  rounds in which each runs in turn, repeated until a batch takes ~1 ms."""
  calls = []
  for fn in fns:
    k, start = 1, time.perf_counter_ns()
    fn()
    while time.perf_counter_ns() - start < 1_000_000 and k < 1 << 16:
      fn()
      k += 1
    calls.append(k)
  times = [[] for _ in fns]
  for _ in range(rounds):
    for fn, k, t in zip(fns, calls, times):
      start = time.perf_counter_ns()
      for _ in range(k):
        fn()
      t.append((time.perf_counter_ns() - start) / k)
  return [statistics.median(t) for t in times]


def run_binaries(build, lab=None):
  """{(lab, case, n): ns} from every bench_* binary (or lab's), echoing what they print."""
  found = {}
  pattern = f"bench_{lab.replace('.', '_')}" if lab else "bench*"
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


def report(lab, case, n, ns, kernels):
  bytes_per_element = CASES[(lab, case)][2]
  line = f"numpy {lab} {case} n={n} ns={ns:.0f}"
  if bytes_per_element:
    line += f" GB/s={bytes_per_element * n / ns:.2f}"
  print(line)
  if (lab, case, n) in kernels:
    print(f"ratio {lab} {case} n={n} kernel/numpy={kernels[(lab, case, n)] / ns:.3f}")


def main(argv):
  lab_only = None
  if len(argv) == 3 and argv[1] == "--lab":
    lab_only = argv[2]
  elif len(argv) != 1:
    print("usage: bench/report.py BUILD_DIR [--lab 23.N] (e.g. build/labs)", file=sys.stderr)
    return 2
  kernels = run_binaries(Path(argv[0]), lab_only)
  runs = []   # (lab, case, n)
  for (lab, case), (_, default_n, _) in CASES.items():
    if lab_only in (None, lab):
      sizes = sorted({n for (l, c, n) in kernels if (l, c) == (lab, case)}) or [default_n]
      runs += [(lab, case, n) for n in sizes]
  interleaved = {}
  for lab, rounds in INTERLEAVED.items():
    mine = [r for r in runs if r[0] == lab]
    interleaved.update(zip(mine, median_ns_interleaved([CASES[r[:2]][0](r[2]) for r in mine], rounds)))
  for lab, case, n in runs:
    ns = interleaved.get((lab, case, n)) or best_ns(CASES[(lab, case)][0](n))
    report(lab, case, n, ns, kernels)
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
