"""check_23_7.py: lab 23.7 (tensorjit's contract) against NumPy, through ctypes.

    .venv/bin/python -m harness.check_23_7 --build build/labs [--seed N] [--lengths K]

The models are data (harness/tj_ffi.py) that a Python function, called back by 23.4's tracer,
applies with the tp_ operations; the worker compiles and calls them (tj_compile, tj_call) and
returns what came back: the output's bytes, shape, strides and offset, whether it shares an
input's storage, the error, tj_stats. Here, outside the student's process, NumPy computes each
answer and the contract's artifact counts, and judges. Four sub-checks, each leaning on one of
the lab's functions (the seed draws everything; --lengths sets the calls each makes, at least 4):

  view chains     tj_view_make: x[1:len(x)-1], then random chains of slices, selects, permutes
                  and squeezes (NumPy's views) over inputs of rank 1 to 3, contiguous, transposed
                  or themselves a view at a nonzero offset (every chain's second call): each
                  output equals NumPy's, shares the input's storage exactly where NumPy's does, at
                  NumPy's offset and strides (elements), and what NumPy refuses is refused.
  artifact reuse  tj_extent_of: a*x+b over random shapes of rank 2 or 3, sizes >= 2, the first
                  two (n, n, ...) then (n, m, ...): one artifact; then sizes 0 and 1: one artifact
                  more for each new pattern of the classes {0, 1, >= 2} per axis, no other; with
                  specialize_01 off one artifact for every shape, static one per shape.
  index bounds    tj_trace_holds: x[len(y)] * 3 on random (rows, len(y)): in bounds NumPy's row;
                  out of bounds UOPC_E_BOUNDS, also after an in-bounds artifact exists (x is lent
                  inside a larger buffer, so an artifact that served such a call returns a wrong
                  row, which is reported, rather than crash the worker).
  size branches   tj_sizes_narrow: x + a if c*n + k OP 0 else b*x, one model per OP, random c, k
                  (the boundary near 2..12), on random lengths and those around the boundary: each
                  output NumPy's branch; after each call the artifacts built equal the distinct
                  outcomes seen (n = 0 and n = 1 each their own); and each artifact's dim bounded
                  by its outcome's range, leaving no comparison to the trace that a bound holds
                  (tj_explain's printed guards: a bound one too wide is safe, but it is not the
                  contract).

A stub reports the function it waits on in each sub-check that reaches it; the others still run.
"""
import argparse
import ctypes
import random
import re

import numpy as np

from harness import ffi
from harness.common import (NOT_IMPLEMENTED, LabReport, NotImplementedYet, Report, connect, died, error_data,
                            failure, progress, start_check, worker_options)
from harness.remote import RemoteError, WorkerDied
from harness.tj_ffi import TJ_TENSOR, Tj, TjArg, TjOptions, to_numpy, traced_model

LAB = "23.7"
DEFAULTS = {"lengths": 20}
MIN_LENGTHS = 4
TJ_OFF = -1                  # tj_switch
MAX_VARIANTS = 32            # TJ_MAX_VARIANTS: room for every pattern of a rank-3 shape (27)
MAX_SIZE = 6                 # a tensor's extents in the view and reuse checks
MAX_LENGTH = 16              # the branch checks' lengths
PAD_ROWS = 4                 # rows after x in its buffer: as many as len(y) may pass x's end
SITE_FILE = b"check_23_7.py"
EXPLAIN_SIZE = 1 << 16
MAX_EXTENT = 1 << 24         # tensorjit's extents, VCACHE_DEFAULT_MAX_EXTENT
# tj_explain's printed forms (chapter 23.7, "Reading the guards"): a dim's bounds, a comparison of the trace.
DIM_LINE = re.compile(r"^  \w+ = a0\.shape\[0\] in \[(-?\d+), (-?\d+)\]$")
TRACE_LINE = re.compile(r" 0 is (true|false) \(")
STUB = re.compile(r"lab 23\.7: (\w+) is not implemented yet")
VIEW_KINDS = ("slice", "slice", "select", "transpose", "permute", "squeeze")   # NumPy's views, all of them
BOUNDS = "UOPC_E_BOUNDS"


# ---- the worker ---------------------------------------------------------------------------------

class Lab:
  """The worker's half: compiles models given as data and calls them on the arrays the parent
  lends, returning what tensorjit returned (harness/remote.py). Functions stay here, named by ids."""

  def __init__(self, build):
    self.tj = Tj(build)
    self.rt, self.lib = self.tj.rt, self.tj.lib
    self.fns, self.made = {}, 0   # id -> [tj_function*, the ctypes model (kept alive), its Python failures]

  def result(self, status, err):
    """The call's error as data; a stub's answer stops the sub-check."""
    if status and self.rt.error_name(err.code) == NOT_IMPLEMENTED:
      message = err.message.decode(errors="replace")
      m = STUB.search(message)
      raise NotImplementedYet(m.group(1) if m else err.where.decode(errors="replace"), message)
    return error_data(self.rt, status, err)

  def compile(self, ops, options):
    """[function id or None, error] of tj_compile on the model ops with options (a dict of
    tj_options' int fields)."""
    failures = []
    model = traced_model(self.lib, ops, failures, SITE_FILE)
    opts = TjOptions(**options)
    f, err = ctypes.c_void_p(), ffi.Error()
    status = self.lib.tj_compile(ctypes.byref(f), model, None, ctypes.byref(opts), ctypes.byref(err))
    info = self.result(status, err)
    if status:
      return [None, info]
    self.fns[self.made] = [f, model, failures]
    self.made += 1
    return [self.made - 1, info]

  def free(self, fid):
    self.lib.tj_free(self.fns.pop(fid)[0])

  def counts(self, fid):
    return self.tj.counts(self.fns[fid][0])

  def explain(self, fid):
    """[error, text] of tj_explain(f, NULL): every artifact with its guards, in the order built."""
    buf, err = ctypes.create_string_buffer(EXPLAIN_SIZE), ffi.Error()
    status = self.lib.tj_explain(self.fns[fid][0], None, buf, EXPLAIN_SIZE, ctypes.byref(err))
    return [self.result(status, err), buf.value.decode(errors="replace")]

  def view_of(self, root, geo, owned):
    """The tensor root[offset : offset + numel] reshaped to shape (reversed and permuted back when
    transposed), made with the runtime's own views, so its offset is the runtime's."""
    handle = self.rt.wrap_new(root)
    owned.append(handle)
    shape = list(geo["shape"])
    dims = shape[::-1] if geo["transposed"] else shape
    err, v = ffi.Error(), self.tj.views
    flat = ffi.UopcTensor()
    numel = int(np.prod(shape, dtype=np.int64))
    self.rt.check(v.uopc_tensor_slice(ctypes.byref(flat), handle, 0, geo["offset"], geo["offset"] + numel, 1,
                                      ctypes.byref(err)), err)
    owned.append(flat)
    shaped = ffi.UopcTensor()
    self.rt.check(v.uopc_tensor_reshape(ctypes.byref(shaped), ctypes.byref(flat), len(dims),
                                        (ctypes.c_int64 * len(dims))(*dims), ctypes.byref(err)), err)
    owned.append(shaped)
    if not geo["transposed"]:
      return shaped
    turned = ffi.UopcTensor()
    perm = list(range(len(dims)))[::-1]
    self.rt.check(v.uopc_tensor_permute(ctypes.byref(turned), ctypes.byref(shaped), (ctypes.c_int * len(perm))(*perm),
                                        ctypes.byref(err)), err)
    owned.append(turned)
    return turned

  def call(self, fid, inputs):
    """tj_call of function fid on inputs ([root, geometry] each, see view_of): {"error", "counts",
    and on success "shape", "strides", "offset", "dtype", "data" (bytes, row-major), "shares" (per
    input: the output holds its storage)}; "model" names a Python error of the model."""
    f, _, failures = self.fns[fid]
    owned = []
    try:
      tensors = [self.view_of(root, geo, owned) for root, geo in inputs]
      args = (TjArg * len(tensors))(*[TjArg(TJ_TENSOR, ctypes.addressof(t)) for t in tensors])
      out, err = ffi.UopcTensor(), ffi.Error()
      status = self.lib.tj_call(f, args, len(tensors), ctypes.byref(out), ctypes.byref(err))
      if failures:
        return {"model": failures.pop()}
      answer = {"error": self.result(status, err), "counts": self.tj.counts(f)}
      if not status:
        try:
          answer.update(self.output(out, tensors, [root for root, _ in inputs]))
        finally:
          self.rt.lib.uopc_tensor_release(ctypes.byref(out))
      return answer
    finally:
      for t in reversed(owned):
        if isinstance(t, ffi.UopcTensor):
          self.rt.lib.uopc_tensor_release(ctypes.byref(t))
        else:
          self.rt.lib.uopc_tensor_free(t)

  @staticmethod
  def output(out, tensors, roots):
    """The output as data. A view of an input that reaches outside that input's buffer is not
    read (it would fault here): "reach" says which elements it spans instead."""
    storage = ctypes.cast(out.storage, ctypes.c_void_p).value
    shares = [ctypes.cast(t.storage, ctypes.c_void_p).value == storage for t in tensors]
    shape, strides = list(out.shape[:out.rank]), list(out.strides[:out.rank])
    answer = {"shape": shape, "strides": strides, "offset": out.offset, "shares": shares, "dtype": "<f4", "data": b""}
    if 0 not in shape:
      lo = out.offset + sum(min(0, (n - 1) * st) for n, st in zip(shape, strides))
      hi = out.offset + sum(max(0, (n - 1) * st) for n, st in zip(shape, strides))
      size = next((root.size for root, shared in zip(roots, shares) if shared), None)
      if size is not None and (lo < 0 or hi >= size):
        return dict(answer, data=None, reach=[lo, hi], storage=size)
    values = to_numpy(out)
    return dict(answer, dtype=values.dtype.str, data=values.tobytes())


# ---- the judge ----------------------------------------------------------------------------------

class EveryCheckReport(LabReport):
  """A LabReport that runs every sub-check past a stub: each leans on another function, and one
  still a stub must not hide what the others show. Each names the stub it met."""

  def run(self, name, fn, *args):
    Report.run(self, name, self.stopping_at_stub(fn), *args)

  def finish(self):
    return Report.finish(self)


class Context:
  def __init__(self, lab, seed, lengths, report):
    self.lab, self.seed, self.lengths, self.report = lab, seed, lengths, report

  def rng(self, name):
    """The sub-check's own stream: each draws the same whatever the others did."""
    return random.Random(f"{self.seed}/{name}")

  def compile(self, ops, options, what):
    fid, err = self.lab.compile(ops, options)
    if fid is None:
      raise ffi.UopcError(0, err["name"], err["where"], f"tj_compile of {what}: {err['message']}")
    return fid


class Input:
  """An f32 array the parent lends: root holds 1, 2, ... (each element its own value) where x
  lies and -1000 - i after; x is root[offset : offset + numel] shaped, or transposed."""

  def __init__(self, shape, offset=0, transposed=False, pad=0):
    numel = int(np.prod(shape, dtype=np.int64))
    self.root = np.concatenate([np.arange(1, offset + numel + 1, dtype=np.float32),
                                -1000 - np.arange(pad, dtype=np.float32)])
    dims = tuple(shape[::-1]) if transposed else tuple(shape)
    x = self.root[offset:offset + numel].reshape(dims)
    self.x = x.T if transposed else x
    self.geo = {"offset": offset, "shape": list(shape), "transposed": transposed}
    self.text = f"{tuple(shape)}" + (" transposed" if transposed else "") + (f" at offset {offset}" if offset else "")

  def lent(self):
    return [self.root, self.geo]


def got_array(answer):
  return np.frombuffer(answer["data"], np.dtype(answer["dtype"])).reshape(answer["shape"])


def call(ctx, fid, inputs, case):
  """The worker's answer, or None after a failure it reports (the model raised in Python)."""
  progress(f"lab {LAB} {case}")
  answer = ctx.lab.call(fid, [i.lent() for i in inputs])
  if "model" in answer:
    ctx.report.fail(case, "the check's model raised in Python (the harness's fault):", *answer["model"].splitlines())
    return None
  return answer


def expect_values(ctx, answer, want, case):
  """1 when the call succeeded with want's shape and elements; else reports and returns 0."""
  if answer["error"]["name"] != "UOPC_OK":
    ctx.report.fail(case, f"expected NumPy's {want.shape} result {want.ravel()[:8].tolist()}",
                    "got " + failure(answer["error"]))
    return 0
  if answer["data"] is None:
    lo, hi = answer["reach"]
    ctx.report.fail(case, f"expected NumPy's {want.shape} result; got a view of shape {tuple(answer['shape'])}, "
                          f"strides {answer['strides']}, offset {answer['offset']}, which reaches elements {lo} to {hi} "
                          f"of its input's storage of {answer['storage']}")
    return 0
  got = got_array(answer)
  if got.shape != want.shape or not np.array_equal(got, want):
    ctx.report.fail(case, f"expected shape {want.shape} {want.ravel()[:12].tolist()}",
                    f"got shape {got.shape} {got.ravel()[:12].tolist()}")
    return 0
  return 1


def expect_refusal(ctx, answer, code, why, case):
  if answer["error"]["name"] != code:
    got = failure(answer["error"]) if answer["error"]["name"] != "UOPC_OK" else \
      f"success, shape {tuple(answer['shape'])} " + \
      (f"{got_array(answer).ravel()[:8].tolist()}" if answer["data"] is not None else "(a view past its input)")
    ctx.report.fail(case, f"NumPy refuses it ({why}); expected {code}", f"got {got}")
    return 0
  return 1


# ---- view chains (tj_view_make) -----------------------------------------------------------------

def view_layout(call_no, rng):
  """(offset, transposed) of a chain's input: the second call always at a nonzero offset."""
  offset = rng.randint(1, 7) if call_no == 1 or rng.random() < 0.4 else 0
  return offset, rng.random() < 0.3


def judge_view(ctx, inp, ops, answer, case, counts):
  """Compares one call of a view chain with NumPy's; 1 when it passed."""
  from harness.check_tensorjit import EXPECTED_CODE, numpy_chain   # the judge's side only
  try:
    want = numpy_chain(inp.x, ops)
  except (IndexError, ValueError) as e:
    counts["refused"] += 1
    return expect_refusal(ctx, answer, EXPECTED_CODE[type(e)], f"{type(e).__name__}: {e}", case)
  if not expect_values(ctx, answer, want, case):
    return 0
  if want.size == 0:   # an empty result has no element whose place could be wrong
    return 1
  if not answer["shares"][0]:
    ctx.report.fail(case, "NumPy's result is a view of the input; tensorjit's output is a copy")
    return 0
  offset = (want.__array_interface__["data"][0] - inp.root.__array_interface__["data"][0]) // 4
  strides = [s // 4 if n > 1 else None for s, n in zip(want.strides, want.shape)]
  ours = [s if n > 1 else None for s, n in zip(answer["strides"], want.shape)]
  if answer["offset"] != offset or ours != strides:
    ctx.report.fail(case, f"a view at offset {answer['offset']} with strides {ours}; NumPy's is at offset {offset} "
                          f"with strides {strides} (elements from the input's storage base; None: an axis of 1)",
                    f"the input itself starts at offset {inp.geo['offset']}")
    return 0
  counts["views"] += 1
  counts["offset views"] += inp.geo["offset"] > 0
  return 1


def check_views(ctx):
  from harness.check_tensorjit import chain_text, draw_chain   # the judge's side only
  rng = ctx.rng("view chains")
  counts = {"calls": 0, "refused": 0, "views": 0, "offset views": 0, "artifacts": 0}
  chains = ctx.lengths
  for k in range(chains):
    rank, ops = draw_chain(rng, VIEW_KINDS, relu=0)
    if k == 0:   # x[1:len(x)-1] on axes of 3 or more first: views that start past their input's start
      ops = [("slice", 0, ("const", 1), ("less", 1), 1)]
    text = chain_text(ops)
    fid = ctx.compile(ops, {}, text)
    try:
      for j in range(4):
        shape = tuple(rng.randint(0, MAX_SIZE) if rng.random() < 0.2 and k else rng.randint(2 + (k == 0), MAX_SIZE)
                      for _ in range(rank))
        offset, transposed = view_layout(j, rng)
        inp = Input(shape, offset, transposed and rank >= 2, pad=rng.randint(0, 3))
        case = f"chain {k}: {text} on {inp.text} (call {j + 1})"
        answer = call(ctx, fid, [inp], case)
        counts["calls"] += 1
        if answer is None or not judge_view(ctx, inp, ops, answer, case, counts):
          break
    finally:
      counts["artifacts"] += ctx.lab.counts(fid)["artifacts_built"]
      ctx.lab.free(fid)
  return (f"{chains} chains, {counts['calls']} calls ({counts['refused']} refused as NumPy refuses them); "
          f"{counts['views']} views at NumPy's offset and strides, {counts['offset views']} of them over an input "
          f"at a nonzero offset; {counts['artifacts']} artifacts")


# ---- artifact reuse (tj_extent_of) --------------------------------------------------------------

def size_class(n):
  return n if n <= 1 else "d"


def reuse_shapes(rng, rank, count):
  """count shapes of sizes >= 2: (n, n, ...) first, then one with no two sizes equal, then random ones."""
  n = rng.randint(2, MAX_SIZE)
  shapes = [(n,) * rank, tuple([n] + rng.sample([v for v in range(2, MAX_SIZE + 1) if v != n], rank - 1))]
  while len(shapes) < count:
    shapes.append(tuple(rng.randint(2, MAX_SIZE) for _ in range(rank)))
  return shapes


def affine_calls(ctx, fid, shapes, expected_after, what, a, b):
  """Calls 2x+1 on each shape; after each, the artifacts built must be expected_after(k). Returns
  the artifacts built, or None after a failure."""
  built = 0
  for k, shape in enumerate(shapes):
    inp = Input(shape)
    case = f"{what}: {a}x+{b} on {inp.text} (call {k + 1} of {[tuple(s) for s in shapes[:k + 1]]})"
    answer = call(ctx, fid, [inp], case)
    if answer is None or not expect_values(ctx, answer, (a * inp.x + b).astype(np.float32), case):
      return None
    built, want = answer["counts"]["artifacts_built"], expected_after(k)
    if built != want:
      return ctx.report.fail(case, f"expected {want} artifacts built after this call (the contract), got {built}")
  return built


def check_reuse(ctx):
  rng = ctx.rng("artifact reuse")
  rank, a, b = rng.randint(2, 3), rng.randint(2, 5), rng.randint(1, 5)   # rank 2 at least: two axes to merge
  ops = [("affine", a, b)]
  dims = reuse_shapes(rng, rank, max(2, ctx.lengths // 2))
  small = [tuple(rng.choice((0, 1)) if rng.random() < 0.4 else rng.randint(2, MAX_SIZE) for _ in range(rank))
           for _ in range(ctx.lengths - len(dims))]
  small[0] = tuple(rng.choice((0, 1)) for _ in range(rank))   # at least one 0/1 pattern
  shapes = dims + small
  patterns = [tuple(size_class(n) for n in s) for s in shapes]
  notes = []
  fid = ctx.compile(ops, {"max_variants": MAX_VARIANTS}, "2x+1")
  try:
    built = affine_calls(ctx, fid, shapes, lambda k: len(set(patterns[:k + 1])), "specialize_01 on", a, b)
    if built is None:
      return None
    notes.append(f"rank {rank}: {len(dims)} shapes of sizes >= 2 (the first {dims[0]}, then {dims[1]}), one artifact; "
                 f"{len(small)} more with sizes 0 and 1, {built} artifacts in all, one per pattern of 0, 1, >= 2")
  finally:
    ctx.lab.free(fid)
  fid = ctx.compile(ops, {"max_variants": MAX_VARIANTS, "specialize_01": TJ_OFF}, "2x+1")
  try:
    if affine_calls(ctx, fid, shapes, lambda k: 1, "specialize_01 off", a, b) is None:
      return None
    notes.append("specialize_01 off: one artifact for all of them")
  finally:
    ctx.lab.free(fid)
  static = shapes[:3] + shapes[:1]
  fid = ctx.compile(ops, {"max_variants": MAX_VARIANTS, "dynamic": TJ_OFF}, "2x+1")
  try:
    if affine_calls(ctx, fid, static, lambda k: len(set(static[:k + 1])), "dynamic off", a, b) is None:
      return None
    notes.append(f"static: {len(set(static))} artifacts for {len(static)} calls, one per shape")
  finally:
    ctx.lab.free(fid)
  return "; ".join(notes)


# ---- index bounds (tj_trace_holds) --------------------------------------------------------------

def index_calls(rng, count):
  """(rows, len(y)) pairs: first one in bounds, then out of bounds once (the artifact exists),
  then random ones, about a third past the end."""
  n = rng.randint(3, 8)
  pairs = [(n, rng.randint(2, n - 1))]
  n = rng.randint(2, 8)
  pairs.append((n, rng.randint(n, n + PAD_ROWS - 1)))
  while len(pairs) < count:
    n = rng.randint(2, 8)
    pairs.append((n, rng.randint(n, n + PAD_ROWS - 1) if rng.random() < 0.35 else rng.randint(0, n - 1)))
  return pairs


def check_index(ctx):
  rng = ctx.rng("index bounds")
  cols = rng.randint(2, 5)
  ops = [("pick", 0, 1), ("affine", 3, 0)]
  fid = ctx.compile(ops, {}, "x[len(y)] * 3")
  served = refused = 0
  try:
    for k, (n, m) in enumerate(index_calls(rng, ctx.lengths)):
      x, y = Input((n, cols), pad=PAD_ROWS * cols), Input((m,))
      case = f"x[len(y)] * 3 on x {x.text}, len(y) = {m} (call {k + 1})"
      answer = call(ctx, fid, [x, y], case)
      if answer is None:
        return None
      if m < n:
        served += expect_values(ctx, answer, (x.x[m] * 3).astype(np.float32), case)
      else:
        why = f"IndexError: index {m} is out of bounds for axis 0 with size {n}"
        refused += expect_refusal(ctx, answer, BOUNDS, why, case)
    built = ctx.lab.counts(fid)["artifacts_built"]
  finally:
    ctx.lab.free(fid)
  return (f"x with {cols} columns: {served} calls in bounds equal NumPy's, {refused} past the end refused "
          f"UOPC_E_BOUNDS (the first after an artifact for an index in bounds was built); {built} artifacts")


# ---- size branches (tj_sizes_narrow) ------------------------------------------------------------

def outcome(coef, k, cmp, n):
  v = coef * n + k
  return {"<": v < 0, "<=": v <= 0, ">": v > 0, ">=": v >= 0, "==": v == 0, "!=": v != 0}[cmp]


def branch_model(rng, cmp):
  """(coef, k, a, b): a boundary -k/coef near 2..12, and the two branches' constants."""
  coef = rng.choice([-3, -2, -1, 1, 2, 3])
  t = rng.randint(2, 12)
  k = -coef * t + rng.randint(-(abs(coef) - 1), abs(coef) - 1)   # 2n - 7 >= 0: n >= 4, a rounded bound
  if cmp == "<" or (cmp in ("==", "!=") and rng.random() < 0.7):
    k = -coef * t   # a boundary a length can equal: n < t and n <= t - 1 differ there
  return coef, k, rng.randint(1, 5), rng.randint(2, 5)


def branch_lengths(rng, coef, k, count):
  """Lengths around the boundary (each twice: before and after both outcomes have artifacts),
  0 and 1, and random ones."""
  edge = -k / coef
  near = sorted({n for n in range(int(edge) - 1, int(edge) + 3) if 0 <= n <= MAX_LENGTH})
  first = [rng.randint(0, MAX_LENGTH) for _ in range(max(0, count - 2 * len(near) - 2))] + near + [0, 1]
  rng.shuffle(first)
  return first + rng.sample(near, len(near))


def class_bounds(coef, k, cmp, taken):
  """What the contract makes of one outcome over n >= 2: ((lo, hi) of the dim, comparisons left to
  the trace). A range of n is a bound (0 left); a range with a hole (!=) bounds nothing (1 left)."""
  if (cmp, taken) in (("!=", True), ("==", False)):
    return (2, MAX_EXTENT), 1
  inside = [n for n in range(2, 64) if outcome(coef, k, cmp, n) == taken]   # the boundary lies below 16
  return (inside[0], MAX_EXTENT if inside[-1] == 63 else inside[-1]), 0


def artifact_blocks(text):
  """tj_explain's text as one list of guard lines per artifact, in the order they were built."""
  blocks = []
  for line in text.splitlines():
    if line.startswith("artifact "):
      blocks.append([])
    elif blocks:
      blocks[-1].append(line)
  return blocks


def judge_bounds(ctx, fid, coef, k, cmp, classes, text):
  """Each artifact's guards: the dim bounded by its outcome's range, no comparison left that a
  bound could absorb; n = 0 and n = 1 constants. 1 when they are."""
  err, explained = ctx.lab.explain(fid)
  if err["name"] != "UOPC_OK":
    return ctx.report.fail(f"{text}: tj_explain", failure(err)) or 0
  blocks = artifact_blocks(explained)
  for j, (cls, block) in enumerate(zip(classes, blocks)):
    dims = [tuple(int(v) for v in m.groups()) for m in map(DIM_LINE.match, block) if m]
    traces = sum(1 for line in block if TRACE_LINE.search(line))
    if cls in (0, 1):
      want, want_traces = [], 0
    else:
      bounds, want_traces = class_bounds(coef, k, cmp, cls == "first")
      want = [bounds]
    if dims != want or traces != want_traces:
      what = f"n = {cls}" if cls in (0, 1) else f"the {cls} branch (n >= 2)"
      return ctx.report.fail(f"{text}: artifact {j + 1}, built for {what}",
                             f"expected the dim's bounds {want or 'none (a constant)'} and {want_traces} comparison(s) "
                             f"of the trace; got {dims or 'none'} and {traces}", "tj_explain says:",
                             *block) or 0
  return 1


def check_branches(ctx):
  rng = ctx.rng("size branches")
  notes, total = [], 0
  for cmp in ("<", "<=", ">", ">=", "==", "!="):
    coef, k, a, b = branch_model(rng, cmp)
    text = f"x + {a} if {coef}*n {'+' if k >= 0 else '-'} {abs(k)} {cmp} 0 else {b}x"
    ops = [("branch", 0, coef, k, cmp, [("affine", 1, a)], [("affine", b, 0)])]
    fid = ctx.compile(ops, {}, text)
    classes = []   # in the order their artifacts are built: 0, 1, "first", "second" (branch, n >= 2)
    try:
      lengths = branch_lengths(rng, coef, k, ctx.lengths)
      for j, n in enumerate(lengths):
        inp = Input((n,))
        taken = outcome(coef, k, cmp, n)
        cls = n if n <= 1 else ("first" if taken else "second")   # 0 and 1 are constants: one trace each
        if cls not in classes:
          classes.append(cls)
        case = f"{text} on n = {n} (the {'first' if taken else 'second'} branch; call {j + 1} of {lengths})"
        answer = call(ctx, fid, [inp], case)
        want = (inp.x + a if taken else b * inp.x).astype(np.float32)
        if answer is None or not expect_values(ctx, answer, want, case):
          return None
        built = answer["counts"]["artifacts_built"]
        if built != len(classes):
          return ctx.report.fail(case, f"expected {len(classes)} artifacts built after this call, one for each "
                                       f"outcome seen (n = 0 and n = 1 each their own): {classes}; got {built}")
      if not judge_bounds(ctx, fid, coef, k, cmp, classes, text):
        return None
      ranges = [class_bounds(coef, k, cmp, c == "first") for c in classes if c not in (0, 1)]
      notes.append(f"{coef}n{k:+d} {cmp} 0: " + ", ".join(f"[{lo}, {'max' if hi == MAX_EXTENT else hi}]"
                                                          + (" and a guard" if left else "")
                                                          for (lo, hi), left in ranges))
      total += len(lengths)
    finally:
      ctx.lab.free(fid)
  return (f"6 models, {total} calls, each NumPy's branch, one artifact per outcome (and for n = 0, 1), its dim "
          f"bounded by the outcome's range ({'; '.join(notes)})")


def main(argv=None):
  ap = argparse.ArgumentParser(description="Checks lab 23.7 against NumPy.")
  ap.add_argument("--build", default="build/labs", help="the build directory (default build/labs)")
  ap.add_argument("--seed", type=int, help="the random seed (default: a fresh one, printed)")
  ap.add_argument("--lengths", type=int, default=DEFAULTS["lengths"],
                  help=f"calls (chains, for view chains) each sub-check draws, at least {MIN_LENGTHS} "
                       f"(default {DEFAULTS['lengths']}; the grader passes its own)")
  worker_options(ap)
  args = ap.parse_args(argv)
  if args.lengths < MIN_LENGTHS:
    ap.error(f"--lengths {args.lengths}: at least {MIN_LENGTHS}")
  seed, replay = start_check(LAB, "check_23_7", args, DEFAULTS)
  report = EveryCheckReport(LAB, replay)
  try:
    lab = connect("harness.check_23_7", args)
  except (ffi.HarnessError, ffi.UopcError, NotImplementedYet, WorkerDied, RemoteError) as e:
    print(f"FAIL lab {LAB} setup: {e}")
    return 2
  ctx = Context(lab, seed, args.lengths, report)
  try:
    report.run("view chains", check_views, ctx)
    report.run("artifact reuse", check_reuse, ctx)
    report.run("index bounds", check_index, ctx)
    report.run("size branches", check_branches, ctx)
  except WorkerDied as e:
    return died(LAB, e)
  finally:
    lab.close()
  return report.finish()


if __name__ == "__main__":
  raise SystemExit(main())
