"""check_tensorjit.py: tensorjit's indexing (section 23.7) against NumPy on random chains.

    .venv/bin/python -m harness.check_tensorjit --build build/solutions [--seed N] [--chains N] [--only K]

Each chain is a random sequence of slices (constant, negative and size-expression bounds, steps of
either sign), selects (constant, negative and size-expression indices), reshapes (-1, and (-1, 2)),
transposes, permutes, squeezes and unsqueezes, flattens, diagonals, repeats (NumPy's tile) and casts
to i32 and back over an input of random rank; half of them end in a relu, which a kernel
computes by reading through the chain's index expressions (the others are views, which no kernel
computes). Its model is a Python function that 23.4's tracer calls back through ctypes, calling
the tp_ operations; NumPy applies the same chain to the same array, lent to C without a copy. The
chain is compiled once (tj_compile, sizes 0 and 1 specialised or not) and called on several shapes
of that rank, sizes 0 and 1 included, contiguous or transposed. Each output must equal NumPy's;
an index or a reshape NumPy refuses must be refused with the matching code (UOPC_E_BOUNDS,
UOPC_E_INVALID); an output that shares the input's storage must be one NumPy's result also shares,
at NumPy's offset and strides;
a chain of slices, selects, permutes and squeezes alone (NumPy's views) must return a view; and the first
shape called again must run an artifact already built. The last line is `N passed, N failed`,
counting chains.
"""
import argparse
import ctypes
import random

import numpy as np

from harness import ffi
from harness.common import Report, progress, start_check
from harness.tj_ffi import TJ_TENSOR, Tj, TjArg, TjOptions, storage_of, to_numpy, traced_model

LAB = "23.7 tensorjit"
DEFAULTS = {"chains": 40}
CALLS = 4               # shapes per chain, then the first one again
MAX_SIZE = 6
SITE_FILE = b"check_tensorjit.py"
# Ops that compute a new tensor in NumPy or may in tensorjit: a chain holding one need not be a view.
COMPUTES = ("reshape", "relu", "flatten", "diagonal", "repeat", "cast", "unsqueeze")


# ---- Chains: each op is a tuple; bounds and indices are ("const", v), ("none",), ("half",) for
# size // 2 or ("less", k) for size - k, of the axis the op works on, in the tensor it gets.

def draw_bound(rng, symbolic):
  if symbolic and rng.random() < 0.5:
    return ("half",) if rng.random() < 0.5 else ("less", rng.randint(0, 3))
  return ("none",) if rng.random() < 0.3 else ("const", rng.randint(-5, 5))


ALL_KINDS = ("slice", "slice", "select", "reshape", "transpose", "permute", "unsqueeze", "squeeze", "flatten",
             "diagonal", "repeat", "cast")


def draw_chain(rng, kinds=ALL_KINDS, relu=0.5):
  """(rank, ops): 1 to 4 operations drawn from kinds (a kind twice: twice as likely), then a relu
  with probability relu."""
  rank = rng.randint(1, 3)
  ops, r = [], rank
  for _ in range(rng.randint(1, 4)):
    kind = rng.choice(list(kinds))
    if kind == "slice":
      symbolic = rng.random() < 0.5
      step = rng.choice([1, 1, 2, 3]) if symbolic else rng.choice([1, 2, 3, -1, -2])
      ops.append(("slice", rng.randrange(r), draw_bound(rng, symbolic), draw_bound(rng, symbolic), step))
    elif kind == "select" and r >= 2:
      index = rng.choice([("const", 0), ("const", 1), ("const", -1), ("less", 1)])
      ops.append(("select", rng.randrange(r), index))
      r -= 1
    elif kind == "reshape":
      ops.append(("reshape", rng.choice([(-1,), (-1, 2)])))
      r = len(ops[-1][1])
    elif kind == "transpose" and r >= 2:
      ops.append(("transpose",))
    elif kind == "permute" and r >= 2:
      perm = list(range(r))
      rng.shuffle(perm)
      ops.append(("permute", tuple(perm)))
    elif kind == "unsqueeze" and r < 3:
      ops.append(("unsqueeze", rng.randint(-(r + 1), r)))
      r += 1
    elif kind == "squeeze" and r >= 2:
      ops.append(("squeeze", rng.randrange(r)))   # NumPy refuses an axis that is not 1: so must we
      r -= 1
    elif kind == "flatten" and r >= 2:
      start = rng.randrange(r - 1)
      end = rng.randint(start + 1, r - 1)
      ops.append(("flatten", start, end))
      r -= end - start
    elif kind == "diagonal" and r == 2:
      ops.append(("diagonal", rng.randint(-2, 2)))
      r = 1
    elif kind == "repeat" and r <= 3:
      ops.append(("repeat", tuple(rng.choice([0, 1, 2, 2]) if rng.random() < 0.2 else rng.choice([1, 2])
                                  for _ in range(r + (r < 3 and rng.random() < 0.3)))))
      r = len(ops[-1][1])
    elif kind == "cast":
      ops.append(("cast",))
  if rng.random() < relu:   # read through the chain by a kernel: relu of elements that are all >= 1
    ops.append(("relu",))
  return rank, ops


def chain_text(ops):
  def b(x):
    return {"none": "", "const": lambda: str(x[1]), "half": lambda: "n//2", "less": lambda: f"n-{x[1]}"}[x[0]]() \
      if x[0] != "none" else ""
  parts = []
  for op in ops:
    if op[0] == "slice":
      parts.append(f".slice(axis={op[1]}, {b(op[2])}:{b(op[3])}:{op[4]})")
    elif op[0] == "select":
      parts.append(f".select({op[1]}, {b(op[2])})")
    elif op[0] == "reshape":
      parts.append(f".reshape{op[1]}")
    elif op[0] == "transpose":
      parts.append(".transpose(-2, -1)")
    elif op[0] == "relu":
      parts.append(".relu()")
    elif op[0] in ("unsqueeze", "squeeze", "diagonal"):
      parts.append(f".{op[0]}({op[1]})")
    elif op[0] == "flatten":
      parts.append(f".flatten({op[1]}, {op[2]})")
    elif op[0] == "repeat":
      parts.append(f".repeat{op[1]}")
    elif op[0] == "cast":
      parts.append(".int().float()")
    else:
      parts.append(f".permute{op[1]}")
  return "x" + "".join(parts)


def bound_value(b, size):
  return {"none": None, "const": lambda: b[1], "half": lambda: size // 2, "less": lambda: size - b[1]}[b[0]]() \
    if b[0] != "none" else None


def numpy_chain(x, ops):
  """NumPy's answer: an array (a view where NumPy makes one), or the exception it raises."""
  for op in ops:
    if op[0] == "slice":
      _, axis, start, stop, step = op
      index = [slice(None)] * x.ndim
      index[axis] = slice(bound_value(start, x.shape[axis]), bound_value(stop, x.shape[axis]), step)
      x = x[tuple(index)]
    elif op[0] == "select":
      _, axis, i = op
      index = [slice(None)] * x.ndim
      index[axis] = bound_value(i, x.shape[axis])
      x = x[tuple(index)]
    elif op[0] == "reshape":
      x = x.reshape(op[1])
    elif op[0] == "transpose":
      x = np.swapaxes(x, -2, -1)
    elif op[0] == "relu":
      x = np.maximum(x, 0)
    elif op[0] == "unsqueeze":
      x = np.expand_dims(x, op[1])
    elif op[0] == "squeeze":
      x = np.squeeze(x, op[1])
    elif op[0] == "flatten":
      _, start, end = op
      x = x.reshape(x.shape[:start] + (int(np.prod(x.shape[start:end + 1])),) + x.shape[end + 1:])
    elif op[0] == "diagonal":
      x = np.diagonal(x, op[1])
    elif op[0] == "repeat":
      x = np.tile(x, op[1])
    elif op[0] == "cast":
      x = x.astype(np.int32).astype(np.float32)
    else:
      x = np.transpose(x, op[1])
  return x


EXPECTED_CODE = {IndexError: "UOPC_E_BOUNDS", ValueError: "UOPC_E_INVALID"}


def one_call(tj, f, ops, x, counts, case):
  """Calls f on x and compares with NumPy; returns 1 when it failed."""
  report = counts.report
  counts.calls += 1
  rt, lib = tj.rt, tj.lib
  try:
    want, refused = numpy_chain(x, ops), None
  except (IndexError, ValueError) as e:
    want, refused = None, e
  out, err = ffi.UopcTensor(), ffi.Error()
  with rt.wrap(x) as tx:
    args = (TjArg * 1)(TjArg(TJ_TENSOR, tx, 0, 0.0))
    status = lib.tj_call(f, args, 1, ctypes.byref(out), ctypes.byref(err))
    try:
      if refused is not None:
        name = rt.error_name(status) if status else "success"
        if name != EXPECTED_CODE[type(refused)]:
          report.fail(case, f"NumPy refuses it ({type(refused).__name__}: {refused}); expected "
                            f"{EXPECTED_CODE[type(refused)]}, got {name}" + (f": {err.message.decode()}" if status else ""))
          return 1
        counts.refused += 1
        return 0
      if status:
        report.fail(case, f"expected NumPy's {want.shape} result, got {rt.error_name(status)}: {err.message.decode()}")
        return 1
      got = to_numpy(out)
      if got.shape != want.shape or not np.array_equal(got, want):
        report.fail(case, f"expected shape {want.shape} {want.ravel()[:12].tolist()}",
                    f"got shape {got.shape} {got.ravel()[:12].tolist()}")
        return 1
      shared = storage_of(tx) == ctypes.cast(out.storage, ctypes.c_void_p).value
      counts.views += shared
      if shared and (any(op[0] in ("relu", "cast", "repeat") for op in ops) or (want.size and not np.shares_memory(want, x))):
        report.fail(case, "the output shares the input's storage where NumPy's result is a copy")
        return 1
      if shared and want.size:   # NumPy's view of the same memory: its offset and strides, in elements
        offset = (want.ctypes.data - x.ctypes.data) // 4
        strides = [s // 4 if n > 1 else None for s, n in zip(want.strides, want.shape)]
        ours = [s if n > 1 else None for s, n in zip(out.strides[:out.rank], want.shape)]
        if out.offset != offset or ours != strides:
          report.fail(case, f"a view at offset {out.offset} with strides {ours}; NumPy's is at offset {offset} "
                            f"with strides {strides} (None: an axis of 1 element, any stride)")
          return 1
      if not shared and want.size and not any(op[0] in COMPUTES for op in ops):
        report.fail(case, "NumPy's result is a view of the input; tensorjit's output is a copy")
        return 1
      return 0
    finally:
      rt.lib.uopc_tensor_release(ctypes.byref(out))


def one_chain(tj, rng, k, counts):
  report = counts.report
  rank, ops = draw_chain(rng)
  text = chain_text(ops)
  failures = []
  model = traced_model(tj.lib, ops, failures, SITE_FILE)
  opts = TjOptions(specialize_01=-1 if rng.random() < 0.5 else 0)   # TJ_OFF half the time
  f, err = ctypes.c_void_p(), ffi.Error()
  tj.rt.check(tj.lib.tj_compile(ctypes.byref(f), model, None, ctypes.byref(opts), ctypes.byref(err)), err)
  bad = 0
  try:
    shapes = [tuple(rng.randint(0, MAX_SIZE) if rng.random() < 0.25 else rng.randint(2, MAX_SIZE) for _ in range(rank))
              for _ in range(CALLS)]
    transposed = rank >= 2 and rng.random() < 0.3
    for j, shape in enumerate(shapes + shapes[:1]):
      base = np.arange(1, 1 + int(np.prod(shape)), dtype=np.float32)
      x = base.reshape(shape[::-1]).T if transposed else base.reshape(shape)
      case = f"chain {k}: {text} on {shape}{' transposed' if transposed else ''} (call {j + 1})"
      progress(case)
      before = tj.lib.tj_stats(f).artifacts_built
      bad += one_call(tj, f, ops, x, counts, case)
      if failures:
        report.fail(case, "the model raised in Python:", *failures[-1].splitlines())
        return 1
      if j == CALLS and tj.lib.tj_stats(f).artifacts_built != before:
        report.fail(case, "the first shape again built another artifact; one was already built for it")
        bad += 1
    return 1 if bad else 0
  finally:
    counts.artifacts += tj.lib.tj_stats(f).artifacts_built
    tj.lib.tj_free(f)


def check_chains(tj, args, seed, counts):
  rng = random.Random(seed)
  for k in range(args.chains):
    chain_rng = random.Random(rng.randrange(2 ** 31))
    if args.only is not None and k != args.only:
      continue
    failed = one_chain(tj, chain_rng, k, counts)
    counts.passed += 1 - failed
    counts.failed += failed
  return (f"{counts.passed} chains, {counts.calls} calls ({counts.refused} refused as NumPy refuses them, "
          f"{counts.views} views of the input), {counts.artifacts} artifacts, "
          f"{tj.rt.counter('compiler invocations')} compiler invocations")


class Counts:
  def __init__(self, report):
    self.report, self.passed, self.failed = report, 0, 0
    self.calls = self.refused = self.views = self.artifacts = 0


def main(argv=None):
  ap = argparse.ArgumentParser(description="Checks tensorjit's indexing against NumPy on random chains.")
  ap.add_argument("--build", default="build/solutions", help="the build directory (default build/solutions)")
  ap.add_argument("--seed", type=int, help="the random seed (default: a fresh one, printed)")
  ap.add_argument("--chains", type=int, default=DEFAULTS["chains"], help="random chains to draw")
  ap.add_argument("--only", type=int, help="run chain K of this seed only")
  args = ap.parse_args(argv)
  seed, replay = start_check(LAB, "check_tensorjit", args, DEFAULTS)
  report = Report(LAB, replay)
  counts = Counts(report)
  try:
    tj = Tj(args.build)
  except (ffi.HarnessError, ffi.UopcError) as e:
    print(f"FAIL lab {LAB} setup: {e}")
    print("0 passed, 1 failed")
    return 2
  report.run("random chains", check_chains, tj, args, seed, counts)
  status = report.finish()
  print(f"{counts.passed} passed, {counts.failed + (1 if report.failed and not counts.failed else 0)} failed")
  return status


if __name__ == "__main__":
  raise SystemExit(main())
