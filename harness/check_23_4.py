"""check_23_4.py: lab 23.4 (a function tracer with guards and gradients) against NumPy, through ctypes.

    .venv/bin/python -m harness.check_23_4 --build build/labs [--seed N] [--lengths K]

The driver's two-layer model, loss = mean((act(x @ w1) @ w2 - y)^2) with x (B, 8), w1 (8, 16),
w2 (16, 4), y (B, 4) in float32 and B a dim in [1, 64], is compiled once with gradients for w1
and w2 (labs/23.4-function-tracing/tp_ffi.h builds it; the tracer's structs stay opaque). For
tanh and for relu, batch sizes 1, 3, 33, 64 and --lengths random ones each get fresh random
inputs; the captured call and the eager run must both equal a NumPy forward and backward pass
written out below, and one variant must serve every batch size. Then a model whose activation
depends on a size branch (tanh when B > 16, relu otherwise): both sides against NumPy, exactly
two variants. Last, the counters: one trace, one variant and two programs (one forward, one
backward artifact) for every batch size; two of each, one recompilation and the guard failures
tp_call must have for the branch.
"""
import argparse
import ctypes
from contextlib import contextmanager

import numpy as np

from harness import ffi
from harness.common import (NOT_IMPLEMENTED, LabReport, NotImplementedYet, connect, died, error_data, failure,
                            progress, start_check, worker_options)
from harness.remote import RemoteError, WorkerDied

LAB = "23.4"
D_IN, D_HID, D_OUT = 8, 16, 4        # the driver's sizes (main.c)
B_LO, B_HI = 1, 64                   # B's bounds, as the driver declares them
THRESHOLD = 16                       # the branch: tanh when B > 16, relu otherwise
ACTIVATIONS = {"tanh": 0, "relu": 1}  # tp_ffi_activation
POISON = 0x7FC0DEAD                  # a quiet NaN with a payload: a result never written
STATS = ("traces", "graph breaks", "guard failures", "recompilations", "variants built", "guards recorded",
         "programs constructed")
# Tolerance. Each result is a short chain of float32 operations (two matmuls and an activation
# forward, three matmuls, a product and the mean's division backward); the longest sum has
# K = max(B, D_HID) <= 64 terms. The compiled kernels add a row in 32 lanes and then pairwise,
# the eager interpreter and NumPy's BLAS in other orders, so two correct answers differ by
# rounding only: at most about K * 2^-24 = 3.8e-6 of the terms' absolute sum per stage, and with
# random inputs that sum is a few times the largest element of the result. So an array passes
# when every element is within RTOL of the array's largest magnitude: 4 stages * 3.8e-6 * a
# factor 5 of headroom = 8e-5 < 1e-4. The reference's largest difference over 30 seeds was
# 7e-7, captured and eager alike: the bound is loose on purpose. A wrong rule is an error of
# order 1 (a factor 2, a batch size baked in as a constant: B1/B2, a missing transpose, relu's
# mask on the wrong side).
RTOL = 1e-4
# Relu has a kink at 0: an element of x @ w1 within rounding of 0 may take either side in two
# correct implementations. Inputs are drawn again until every |x @ w1| is above KINK of the
# terms' absolute sum, far above rounding (K * 2^-24 = 5e-7 for K = 8).
KINK = 1e-4


class Lab:
  """The worker's half: the calls into the lab library, with plain data in and out (see
  harness/remote.py). Compiled models stay here, named by ids."""

  def __init__(self, build):
    self.rt = ffi.Runtime(build)
    self.lib = self.rt.lab(LAB)
    self.models, self.next = {}, 0

  def close(self):
    for handle in self.models.values():
      self.lib.tp_ffi_free(handle)

  def error(self, status, err):
    return error_data(self.rt, status, err)

  def stub_check(self, err):
    if self.rt.error_name(err.code) == NOT_IMPLEMENTED:
      raise NotImplementedYet(err.where.decode(errors="replace"), err.message.decode(errors="replace"))

  def new(self, kind, arg, dims, b_lo, b_hi):
    """[model id or None, error]: kind "two layer" (arg: the activation's number) or "branch"
    (arg: the threshold)."""
    err = ffi.Error()
    make = self.lib.tp_ffi_two_layer_new if kind == "two layer" else self.lib.tp_ffi_branch_new
    handle = make(arg, *dims, b_lo, b_hi, ctypes.byref(err))
    if not handle:
      self.stub_check(err)
      return [None, self.error(1, err)]
    self.models[self.next], self.next = handle, self.next + 1
    return [self.next - 1, self.error(0, err)]

  def free(self, model):
    self.lib.tp_ffi_free(self.models.pop(model))

  def call(self, model, captured, x, w1, w2, y, loss, gw1, gw2):
    """[status, error] of tp_ffi_call on arrays lent for the call."""
    err = ffi.Error()
    arrays = (x, w1, w2, y, loss, gw1, gw2)
    if any(a.dtype != np.float32 or not a.flags.c_contiguous for a in arrays):
      raise ffi.HarnessError("tp_ffi_call takes contiguous float32 arrays")
    status = self.lib.tp_ffi_call(self.models[model], int(captured), x.shape[0],
                                  *[a.ctypes.data for a in arrays], ctypes.byref(err))
    if status != 0:
      self.stub_check(err)
    return [status, self.error(status, err)]

  def variants(self, model):
    return self.lib.tp_ffi_variant_count(self.models[model])

  def guards(self, model):
    """Each variant's guards, as tp_ffi_guards writes them."""
    texts = []
    for k in range(self.variants(model)):
      buf = ctypes.create_string_buffer(1024)
      self.lib.tp_ffi_guards(self.models[model], k, buf, ctypes.sizeof(buf))
      texts.append(buf.value.decode(errors="replace").strip().replace("\n", "; ") or "no guards")
    return texts

  def stats(self, model):
    return {name: self.lib.tp_ffi_stat(self.models[model], name.encode()) for name in STATS}


@contextmanager
def compiled(lab, kind, arg):
  """A model id for the with block; raises UopcError when it cannot be made."""
  model, err = lab.new(kind, arg, [D_IN, D_HID, D_OUT], B_LO, B_HI)
  if model is None:
    raise ffi.UopcError(0, err["name"], err["where"], err["message"])
  try:
    yield model
  finally:
    lab.free(model)


# ---- NumPy's forward and backward, in float32 ------------------------------------------------

def reference(x, w1, w2, y, activation):
  """(loss, d loss / d w1, d loss / d w2) of mean((act(x @ w1) @ w2 - y)^2), every step in
  float32 as NumPy computes it: the chain rule written out by hand, not traced."""
  f32 = np.float32
  z = x @ w1
  h = np.tanh(z) if activation == "tanh" else np.maximum(z, f32(0))
  d = h @ w2 - y
  loss = np.mean(d * d, dtype=f32)
  g = f32(2) * d / f32(d.size)          # d loss / d d: the mean's count is B * D_OUT, this call's
  gw2 = h.T @ g
  gh = g @ w2.T
  gz = gh * (f32(1) - h * h) if activation == "tanh" else np.where(z > 0, gh, f32(0))
  gw1 = x.T @ gz
  return np.array([loss], f32), gw1, gw2


def draw(rng, batch, activation):
  """Random float32 inputs for one call: x and y standard normal, weights scaled by 1/sqrt(fan in)
  so that tanh is neither saturated nor linear. For relu, drawn again until no element of x @ w1
  is near the kink (KINK)."""
  for _ in range(100):
    x = rng.standard_normal((batch, D_IN)).astype(np.float32)
    w1 = (rng.standard_normal((D_IN, D_HID)) / np.sqrt(D_IN)).astype(np.float32)
    w2 = (rng.standard_normal((D_HID, D_OUT)) / np.sqrt(D_HID)).astype(np.float32)
    y = rng.standard_normal((batch, D_OUT)).astype(np.float32)
    z, size = x.astype(np.float64) @ w1, np.abs(x.astype(np.float64)) @ np.abs(w1)
    if activation == "tanh" or np.all(np.abs(z) > KINK * size):
      return x, w1, w2, y
  raise ffi.HarnessError(f"no relu inputs away from the kink in 100 draws (batch {batch})")


def poisoned(shape):
  return np.full(shape, POISON, np.uint32).view(np.float32)


def close(got, want):
  """None when every element of got is within RTOL of want's largest magnitude, else a line
  naming the first bad index, expected against got, and the largest error."""
  scale = float(np.max(np.abs(want.astype(np.float64))))
  err = np.abs(got.astype(np.float64) - want.astype(np.float64)) / max(scale, np.finfo(np.float32).tiny)
  err = np.where(np.isnan(err), np.inf, err)
  bad = np.flatnonzero(~(err <= RTOL))
  if bad.size == 0:
    return None
  i, worst = np.unravel_index(int(bad[0]), got.shape), np.unravel_index(int(np.argmax(err)), got.shape)
  return (f"index {tuple(int(v) for v in i)}: expected {float(want[i])!r} got {float(got[i])!r} ({bad.size} of "
          f"{got.size} elements off); largest error {float(err[worst]):.3g} of max|expected| = {scale:.4g} at "
          f"{tuple(int(v) for v in worst)} (tolerance {RTOL:g})")


def one_call(lab, model, captured, inputs, want, case, report):
  """Calls the model on inputs into poisoned buffers and compares with NumPy's want. Returns
  False when the call failed."""
  x, w1, w2, y = inputs
  loss, gw1, gw2 = poisoned((1,)), poisoned((D_IN, D_HID)), poisoned((D_HID, D_OUT))
  before = [a.copy() for a in inputs]
  how = "captured (tp_call)" if captured else "eager (tp_run_eager)"
  progress(f"lab {LAB} {report.current}: {how}, {case}")
  status, err = lab.call(model, captured, x, w1, w2, y, loss, gw1, gw2)
  if status != 0:
    report.fail(f"{how}, {case}", "tp_ffi_call failed: " + failure(err))
    return False
  wrong = [f"{name}: {line}" for name, got, exp in zip(("loss", "d loss / d w1", "d loss / d w2"),
                                                       (loss, gw1, gw2), want)
           if (line := close(got, exp))]
  if any(a.tobytes() != b.tobytes() for a, b in zip(inputs, before)):
    wrong.append("the call changed one of its inputs x, w1, w2, y")
  if wrong:
    report.fail(f"{how}, {case}", *wrong)
  return True


def batches(rng, count, must):
  """The batch sizes must, then count random ones in [B_LO, B_HI]."""
  return list(must) + [int(v) for v in rng.integers(B_LO, B_HI + 1, size=count)]


# ---- the checks ----------------------------------------------------------------

def check_two_layer(lab, rng, seed, report, count):
  sizes = batches(rng, count, (B_LO, 3, 33, B_HI))
  for activation, number in ACTIVATIONS.items():
    with compiled(lab, "two layer", number) as model:
      for batch in sizes:
        inputs = draw(rng, batch, activation)
        want = reference(*inputs, activation)
        case = f"{activation}, B = {batch}, seed={seed}"
        for captured in (1, 0):
          if not one_call(lab, model, captured, inputs, want, case, report):
            return None
      if (got := lab.variants(model)) != 1:
        report.fail(f"{activation}, after batch sizes {sizes}",
                    f"expected 1 variant for every batch size, got {got}: guards {lab.guards(model)}")
  return f"tanh and relu, captured and eager = NumPy within {RTOL:g}, batch sizes {sizes}, one variant each"


def check_branch(lab, rng, seed, report, count):
  sides = (1, THRESHOLD, THRESHOLD + 1, B_HI)
  sizes = batches(rng, count, (4, 20) + sides)
  with compiled(lab, "branch", THRESHOLD) as model:
    for batch in sizes:
      activation = "tanh" if batch > THRESHOLD else "relu"
      inputs = draw(rng, batch, activation)
      want = reference(*inputs, activation)
      case = f"B = {batch} takes {activation} (B > {THRESHOLD} is {batch > THRESHOLD}), seed={seed}"
      for captured in (1, 0):
        if not one_call(lab, model, captured, inputs, want, case, report):
          return None
    if (got := lab.variants(model)) != 2:
      report.fail(f"after batch sizes {sizes}", f"expected exactly 2 variants (one per side of B > {THRESHOLD}), "
                  f"got {got}: guards {lab.guards(model)}")
  return f"if (B > {THRESHOLD}) tanh else relu: both sides = NumPy, batch sizes {sizes}, 2 variants"


def expected_failures(sides):
  """The guard failures tp_call counts for calls on these sides of the branch: each call tries
  the variants in the order they were built, and a side without one is traced after failing
  every variant there is."""
  built, failures = [], 0
  for side in sides:
    if side in built:
      failures += built.index(side)
    else:
      failures += len(built)
      built.append(side)
  return failures


def run_counted(lab, model, rng, sizes, activation_of, report, what):
  """Calls the model captured on each batch size, then eagerly on the first; returns its stats
  after the captured calls and after the eager one (None after a failed call)."""
  for batch in sizes:
    inputs = draw(rng, batch, activation_of(batch))
    if not one_call(lab, model, 1, inputs, reference(*inputs, activation_of(batch)), f"{what}, B = {batch}",
                    report):
      return None, None
  captured = lab.stats(model)
  inputs = draw(rng, sizes[0], activation_of(sizes[0]))
  if not one_call(lab, model, 0, inputs, reference(*inputs, activation_of(sizes[0])),
                  f"{what}, eager, B = {sizes[0]}", report):
    return None, None
  return captured, lab.stats(model)


def compare_stats(got, want, case, report):
  wrong = [f"'{name}': expected {value}, got {got[name]}" for name, value in want.items() if got[name] != value]
  if wrong:
    report.fail(case, *wrong)


def check_counters(lab, rng, seed, report, count):
  sizes = batches(rng, count, (B_LO, 7, B_HI))
  with compiled(lab, "two layer", ACTIVATIONS["tanh"]) as model:
    captured, after = run_counted(lab, model, rng, sizes, lambda b: "tanh", report, "two layer")
    if captured is None:
      return None
    want = {"traces": 1, "variants built": 1, "recompilations": 0, "guard failures": 0, "graph breaks": 0,
            "guards recorded": 0, "programs constructed": 2}
    compare_stats(captured, want, f"two layer (tanh), captured calls at B = {sizes}, seed={seed}", report)
    compare_stats({k: after[k] - captured[k] for k in STATS}, {k: 0 for k in STATS},
                  f"two layer (tanh), one eager run at B = {sizes[0]} (it traces and compiles nothing)", report)
  sides_sizes = batches(rng, count, (4, 20, THRESHOLD, THRESHOLD + 1))
  sides = [b > THRESHOLD for b in sides_sizes]
  with compiled(lab, "branch", THRESHOLD) as model:
    captured, _ = run_counted(lab, model, rng, sides_sizes, lambda b: "tanh" if b > THRESHOLD else "relu",
                              report, "branch")
    if captured is None:
      return None
    want = {"traces": 2, "variants built": 2, "recompilations": 1, "guard failures": expected_failures(sides),
            "graph breaks": 0, "guards recorded": 2, "programs constructed": 4}
    compare_stats(captured, want, f"branch B > {THRESHOLD}, captured calls at B = {sides_sizes}, seed={seed}",
                  report)
  return (f"two layer: 1 trace, 1 variant, 2 programs for B = {sizes}; branch: 2 traces, 2 variants, "
          f"1 recompilation, {want['guard failures']} guard failures for B = {sides_sizes}")


def main(argv=None):
  ap = argparse.ArgumentParser(description="Checks lab 23.4 against NumPy.")
  ap.add_argument("--build", default="build/labs", help="the build directory (default build/labs)")
  ap.add_argument("--seed", type=int, help="the random seed (default: a fresh one, printed)")
  ap.add_argument("--lengths", type=int, default=6,
                  help="random batch sizes to draw per check (default 6; the grader's name for the option)")
  worker_options(ap)
  args = ap.parse_args(argv)
  if args.lengths < 0:
    ap.error("--lengths must be 0 or more")
  seed, replay = start_check(LAB, "check_23_4", args, {"lengths": 6})
  report = LabReport(LAB, replay)
  try:
    lab = connect("harness.check_23_4", args)
  except (ffi.HarnessError, NotImplementedYet, WorkerDied, RemoteError) as e:
    print(f"FAIL lab {LAB} setup: {e}")
    return 2
  rng = np.random.default_rng(seed)
  common = (lab, rng, seed, report, args.lengths)
  try:
    report.run("two layer", check_two_layer, *common)
    report.run("shape branch", check_branch, *common)
    report.run("counters", check_counters, *common)
  except WorkerDied as e:
    return died(LAB, e)
  finally:
    lab.close()
  return report.finish()


if __name__ == "__main__":
  raise SystemExit(main())
