"""report.py: the C benchmarks and NumPy's time for the same work, in one run.

    .venv/bin/python bench/report.py build/labs [--lab 23.N] [--plot build/kv_latency.png]
                                     [--tj-plot chapters/figures/23.7-latency.png --tj-table build/tj_latency.md]

Runs every build/<impl>/bin/bench* binary (--lab: only bench_<lab>, and only
that lab's NumPy cases) and echoes its lines:
    bench <lab> <case> n=<n> ns=<nanoseconds per call>
    ratio <lab> <case> ...=<x>
then times NumPy on the cases it knows (best of 5, outputs preallocated so that neither side
pays for allocation) and prints `numpy <lab> <case> n=<n> ns=<ns>` and, where the C binary
reported the same case and n, `ratio <lab> <case> n=<n> kernel/numpy=<x>`.
The labs in INTERLEAVED are timed as their C benchmark times them: every case
of the lab in turn, round after round, and the median of the rounds. With
--plot and lab 23.5's lines, it draws the latency figure (bench/kv_plot.py,
matplotlib) into that file, and writes lab 23.5's README table from the same run beside it
(bench/kv_table.py; build/kv_latency.md for build/kv_latency.png). With --tj-plot and
bench_tj_latency's lines (--lab tj_latency), it draws tensorjit's latency figure
(bench/tj_plot.py) and prints its table (written to --tj-table too).
"""
import os
import re
import statistics
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


def chain6(n):
  """((a*b + a) * 0.5 - b) ** 2 + 1 as NumPy evaluates the expression: a temporary per step."""
  a, b = (np.random.default_rng(k).standard_normal(n).astype(np.float32) for k in range(2))
  return lambda: ((a * b + a) * np.float32(0.5) - b) ** 2 + np.float32(1)


def rows_case(kind, rows, cols):
  """Row softmax or layer norm over (rows, cols), NumPy at its best: every step into a
  preallocated buffer (out=), no temporary allocated per call."""
  def setup(n):
    x = np.random.default_rng(0).standard_normal((rows, cols)).astype(np.float32)
    e, r = np.empty_like(x), np.empty((rows, 1), np.float32)

    def softmax():
      np.max(x, axis=1, keepdims=True, out=r)
      np.subtract(x, r, out=e)
      np.exp(e, out=e)
      np.sum(e, axis=1, keepdims=True, out=r)
      np.divide(e, r, out=e)

    def layernorm():
      np.mean(x, axis=1, keepdims=True, out=r)
      np.subtract(x, r, out=e)
      np.mean(np.square(e), axis=1, keepdims=True, out=r)   # (np.square's one temporary)
      np.add(r, np.float32(1e-5), out=r)
      np.sqrt(r, out=r)
      np.divide(e, r, out=e)
    return softmax if kind == "softmax" else layernorm
  return setup


def peak_temporaries(fn):
  """The most bytes NumPy held at once beyond what existed before one call (tracemalloc sees
  NumPy's allocations), the result included."""
  import tracemalloc
  fn()
  tracemalloc.start()
  tracemalloc.reset_peak()
  before = tracemalloc.get_traced_memory()[0]
  fn()
  peak = tracemalloc.get_traced_memory()[1] - before
  tracemalloc.stop()
  return peak


def two_layer_step(batch, d_in=64, d_hid=128, d_out=16):
  """bench_train.c's step by hand: loss = mean((tanh(x @ w1) @ w2 - y)^2) and d/d w1, d/d w2, f32."""
  rng = np.random.default_rng(0)
  x, y = (rng.standard_normal((batch, d)).astype(np.float32) for d in (d_in, d_out))
  w1, w2 = rng.standard_normal((d_in, d_hid)).astype(np.float32), rng.standard_normal((d_hid, d_out)).astype(np.float32)
  def run():
    h = np.tanh(x @ w1)
    d = h @ w2 - y
    loss = np.mean(d * d)
    gd = d * np.float32(2 / d.size)
    gw2 = h.T @ gd
    gw1 = x.T @ ((gd @ w2.T) * (1 - h * h))
    return loss, gw1, gw2
  return run

def layer_norm_step(batch, cols=512):
  """bench_train.c's layer norm step by hand: loss = mean((xhat * g + b)^2), xhat = (x - mean) /
  sqrt(var + 1e-5) over each row, and d/dx, d/dg, d/db, f32."""
  rng = np.random.default_rng(0)
  x = rng.standard_normal((batch, cols)).astype(np.float32)
  g, b = rng.standard_normal(cols).astype(np.float32), rng.standard_normal(cols).astype(np.float32)
  def run():
    xc = x - x.mean(1, keepdims=True)
    inv = np.float32(1) / np.sqrt((xc * xc).mean(1, keepdims=True) + np.float32(1e-5))
    xhat = xc * inv
    y = xhat * g + b
    loss = np.mean(y * y)
    gy = y * np.float32(2 / y.size)
    gg, gb = (gy * xhat).sum(0), gy.sum(0)
    gxhat = gy * g
    gx = inv * (gxhat - gxhat.mean(1, keepdims=True) - xhat * (gxhat * xhat).mean(1, keepdims=True))
    return loss, gx, gg, gb
  return run

# (lab, case) -> (setup(n) -> callable, default n, bytes moved per element or None)
CASES = {
  ("23.6", "square_plus_one"): (square_plus_one, 16777216, 8),
  ("23.6", "strided_fallback"): (strided_fallback, 1048576, None),
  ("23.6", "copy_then_kernel"): (copy_then_kernel, 1048576, None),
  ("23.1", "chain-dynamic"): (chain, 1048576, None),
  ("23.1", "rowsum-dynamic"): (rowsum, 1048576, None),
  ("23.3", "memcpy"): (copy, 16777216, 8),
  ("23.3", "halves-direct"): (halves, 16777216, 6),      # reads 2h, writes h
  ("23.3", "shift-staged"): (shift, 16777216, 16),       # a temporary written, then copied
  ("23.5", "len-dynamic"): (kv_step, 512, None),
  ("23.5", "decode-step"): (kv_step, 512, None),
  ("fuse", "chain6-dynamic"): (chain6, 16777216, 12),
  ("fuse", "chain6_threads2"): (chain6, 16777216, 12),  # the same with LOWER_PARALLEL on both cores
  ("tj_latency", "chain6"): (chain6, 4096, None),        # bench_tj_latency.c's lengths, 1..4096
  **{("fuse", f"{kind}-{r}x{c}"): (rows_case(kind, r, c), r * c, None)
     for kind in ("softmax", "layernorm") for r, c in ((64, 64), (256, 256), (1024, 1024), (4096, 512))},
  ("train", "two-layer"): (two_layer_step, 64, None),   # n is the batch
  ("train", "layer-norm"): (layer_norm_step, 64, None),   # n is the batch
  # bench_fuse.c's softmax with LOWER_VEC_EXP (exp_f32), and compiled -march=native, against the
  # same NumPy softmax
  **{("fuse", f"{kind}-{r}x{c}"): (rows_case("softmax", r, c), r * c, None)
     for kind in ("softmax_vexp", "softmax_vexp_native", "softmax_threads2")
     for r, c in ((64, 64), (256, 256), (1024, 1024), (4096, 512))},
  **{("fuse", f"layernorm_threads2-{r}x{c}"): (rows_case("layernorm", r, c), r * c, None)
     for r, c in ((64, 64), (256, 256), (1024, 1024), (4096, 512))},
}
# lab -> rounds: timed interleaved, medians (bench_23_3.c does the same).
INTERLEAVED = {"23.3": 15}


def best_ns(fn, clock=time.perf_counter_ns):
  fn()   # warm: page faults and caches are not what is measured
  times = []
  for _ in range(REPEATS):
    start = clock()
    fn()
    times.append(clock() - start)
  return min(times)


def best_batch_ns(fn, clock=time.perf_counter_ns, batch_ns=20_000_000):
  """bench_train.c's estimator: the calls that take batch_ns together (doubling from 1), then
  the best mean over REPEATS such batches."""
  calls, took = 1, 0
  while took < batch_ns:
    start = clock()
    for _ in range(calls):
      fn()
    took = clock() - start
    calls *= 2
  best = float("inf")
  for _ in range(REPEATS):
    start = clock()
    for _ in range(calls):
      fn()
    best = min(best, (clock() - start) / calls)
  return best


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


# Labs whose C benchmark times the process's CPU time, not the wall (bench_23_5.c says why):
# NumPy is timed the same way, so that the ratio compares like with like.
CPU_TIMED = {"23.5"}
# Benchmarks whose C side is the best mean of batches of about 20 ms (bench_train.c): NumPy's
# side is timed with the same estimator, not as the fastest single call.
BATCH_TIMED = {"train"}


def run_binaries(build, lab=None):
  """({(lab, case, n): ns}, everything they printed) from every bench_* binary (or lab's),
  echoing what they print."""
  found, printed = {}, []
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
    printed.append(proc.stdout)
    if proc.returncode != 0:
      print(f"note: {binary} exited with status {proc.returncode}: {proc.stderr.strip()[-300:]}")
    for m in BENCH_LINE.finditer(proc.stdout):
      found[(m.group(1), m.group(2), int(m.group(3)))] = float(m.group(4))
  return found, "".join(printed)


def report(lab, case, n, ns, kernels):
  bytes_per_element = CASES[(lab, case)][2]
  line = f"numpy {lab} {case} n={n} ns={ns:.0f}"
  if bytes_per_element:
    line += f" GB/s={bytes_per_element * n / ns:.2f}"
  print(line)
  if (lab, case, n) in kernels:
    print(f"ratio {lab} {case} n={n} kernel/numpy={kernels[(lab, case, n)] / ns:.3f}")


def main(argv):
  import argparse
  ap = argparse.ArgumentParser(description="The C benchmarks and NumPy's time for the same work.")
  ap.add_argument("build", help="the build directory, e.g. build/labs")
  ap.add_argument("--lab", "--only", dest="lab", help="lab 23.N's benchmark alone (e.g. 23.3)")
  ap.add_argument("--plot", help="draw lab 23.5's latency figure into this PNG")
  ap.add_argument("--tj-plot", help="draw tensorjit's latency figure (bench_tj_latency) into this PNG")
  ap.add_argument("--tj-table", help="with --tj-plot: write its table (Markdown) into this file")
  args = ap.parse_args(argv)
  kernels, printed = run_binaries(Path(args.build), args.lab)
  runs = []   # (lab, case, n)
  for (lab, case), (_, default_n, _) in CASES.items():
    if args.lab in (None, lab):
      sizes = sorted({n for (l, c, n) in kernels if (l, c) == (lab, case)}) or [default_n]
      runs += [(lab, case, n) for n in sizes]
  interleaved = {}
  for lab, rounds in INTERLEAVED.items():
    mine = [r for r in runs if r[0] == lab]
    interleaved.update(zip(mine, median_ns_interleaved([CASES[r[:2]][0](r[2]) for r in mine], rounds)))
  numpy_ns = {}
  for lab, case, n in runs:
    clock = time.process_time_ns if lab in CPU_TIMED else time.perf_counter_ns
    timer = best_batch_ns if lab in BATCH_TIMED else best_ns
    ns = interleaved.get((lab, case, n)) or timer(CASES[(lab, case)][0](n), clock)
    numpy_ns[(lab, case, n)] = ns
    report(lab, case, n, ns, kernels)
  if args.lab in (None, "fuse") and ("fuse", "chain6-dynamic", 16777216) in numpy_ns:
    # NumPy materialises every step; the fused program holds none (bench_fuse.c's temps line)
    peak = peak_temporaries(chain6(16777216))
    print(f"numpy-temps fuse chain6 n=16777216 peak_bytes={peak} (the result's {4 * 16777216} included)")
  if args.plot:
    plot(kernels, numpy_ns, Path(args.plot))
    write_table(printed, kernels, numpy_ns, Path(args.plot).with_suffix(".md"))
  if args.tj_plot:
    plot_tj(printed, kernels, numpy_ns, Path(args.tj_plot), args.tj_table and Path(args.tj_table))
  return 0


def plot_tj(printed, kernels, numpy_ns, path, table_path):
  """tensorjit's figure and table (bench/tj_plot.py), when bench_tj_latency ran; the table is
  printed too, and drawn without matplotlib it is all there is."""
  import tj_plot
  if not any(lab == tj_plot.LAB for (lab, _, _) in kernels):
    print("note: no bench_tj_latency lines; no figure drawn")
    return
  lines = tj_plot.table(printed, kernels, numpy_ns)
  print("\n".join(lines))
  if table_path:
    table_path.parent.mkdir(parents=True, exist_ok=True)
    table_path.write_text("\n".join(lines) + "\n")
    print(f"table: {table_path}")
  try:
    tj_plot.draw(kernels, numpy_ns, path)
  except ImportError as e:
    print(f"note: no figure ({e}); tools/setup.sh --plot installs matplotlib (bench/requirements.txt)")
    return
  print(f"figure: {path}")


def write_table(printed, kernels, numpy_ns, path):
  """Lab 23.5's README table from this run, beside its figure (bench/kv_table.py)."""
  if not any(lab == "23.5" for (lab, _, _) in kernels):
    return
  import kv_table
  path.parent.mkdir(parents=True, exist_ok=True)
  path.write_text("\n".join(kv_table.table(printed, kernels, numpy_ns)) + "\n")
  print(f"table: {path}")


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
