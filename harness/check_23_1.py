"""check_23_1.py: lab 23.1 (bounded symbolic dims, one plan for every length) against NumPy.

    .venv/bin/python -m harness.check_23_1 --build build/labs [--seed N]

Builds two plans through the C API, as a foreign caller would: an elementwise chain over a dim
n in [1, 4096] that uses every operation of kernel.h, and a row sum of a (B, N) tensor with
b in [1, 8] and n in [1, 4096]. One plan serves lengths 1, 7, 31, 64, 4096 and random ones:
inputs are allocated for the upper bound and poisoned past the logical size, outputs carry a
poisoned tail that must survive, and the plans' contracts (dims, index width, output shape)
come before the values. Then the rejections (a binding out of bounds, a dim unbound, a buffer
below its logical size) and the process counters: no length may build a second plan.
"""
import argparse
import ctypes

import numpy as np

from harness import ffi
from harness.common import (NOT_IMPLEMENTED, LabReport, NotImplementedYet, compare, compile_count, connect,
                            died, error_data, failure, progress, start_check, worker_options)
from harness.remote import RemoteError, WorkerDied

LAB = "23.1"
N_HI, B_HI = 4096, 8
TAIL = 16                        # poisoned float32 elements after every output's capacity
OUT_POISON = 0x7FC0DEAD          # quiet NaNs with a payload: an output element never written
IN_POISON = 0x7FC0BEEF           # an input element past the logical size: reading it gives NaN
U32 = 2.0 ** -24                 # unit roundoff of float32
U64 = 2.0 ** -53
# The chain is add, sub, mul, div, neg and maximum in NumPy's order (each correctly rounded in
# C as in NumPy: uopc compiles with -ffp-contract=off, no fast-math), so the results differ only
# through exp: 1e-6 would do for the rest, every output element depends on exp, hence 2e-6.
RTOL_CHAIN = 2e-6
CHAIN_TEXT = "out = maximum(((a + b)*c - a) / exp(a*0.1), -exp(a*0.1))"
CHAIN, ROWSUM = "chain_f32_n", "rowsum_f32_bn"
def f32(bits, n):
  return np.full(n, bits, dtype=np.uint32).view(np.float32)


class Lab:
  """The worker's half: every call into the lab library, with plain data in and out. The checks
  below reach it through harness/remote.py, so they never share a process with student code.
  Dims and plans stay here, named by the ids and names the checks give them."""

  def __init__(self, build):
    self.rt = ffi.Runtime(build)
    self.lib = self.rt.lab(LAB)
    self.arena, self.plans, self.dims = ctypes.c_void_p(), {}, []
    self.call(self.lib.sym_arena_new, ctypes.byref(self.arena))
    self.check_layouts()

  def close(self):
    for handle in self.plans.values():
      self.lib.plan_free(handle)
    self.lib.sym_arena_free(self.arena)

  # ---- calls --------------------------------------------------------------

  def status(self, fn, *args):
    """(status, error) of fn(*args, &err); a stub's answer stops the check."""
    err = ffi.Error()
    status = fn(*args, ctypes.byref(err))
    if status != 0 and self.rt.error_name(err.code) == NOT_IMPLEMENTED:
      raise NotImplementedYet(err.where.decode(errors="replace"), err.message.decode(errors="replace"))
    return status, err

  def call(self, fn, *args):
    """fn(*args, &err), raising UopcError when it fails."""
    status, err = self.status(fn, *args)
    self.rt.check(status, err)

  def error(self, status, err):
    return error_data(self.rt, status, err)

  # ---- the structs ----------------------------------------------------------

  def check_layouts(self):
    """The mirrors in ffi.py against the library: each init writes its struct up to its last
    byte and not past it, and fields the library fills or reads are where ffi.py has them."""
    self.written(ffi.KernelGraph, lambda p: self.lib.kernel_graph_init(p, self.arena), "kernel_graph")
    self.written(ffi.SymBinding, self.lib.sym_binding_init, "sym_binding")
    self.written(ffi.SymDim, lambda p: self.call(self.lib.sym_dim_init, p, b"n", 1, N_HI, 1), "sym_dim")
    d = self.new_dim("q", 3, 9)
    b = ffi.SymBinding()
    b.count, b.dims[5], b.values[5] = 6, d, 7
    got = ctypes.c_int64()
    self.call(self.lib.sym_binding_get, ctypes.byref(b), ctypes.byref(d), ctypes.byref(got))
    g = self.graph()
    first, second = self.node(self.lib.kernel_scalar, g, 2.5), self.node(self.lib.kernel_scalar, g, 0.5)
    nodes = (ctypes.addressof(first.contents), ctypes.addressof(second.contents)) == \
            (ctypes.addressof(g.nodes[0]), ctypes.addressof(g.nodes[1])) and \
            (g.count, second.contents.id, second.contents.scalar, second.contents.op) == \
            (2, 1, 0.5, ffi.KERNEL_OPS["scalar"])
    if (d.name, d.lo, d.hi, d.multiple_of) != (b"q", 3, 9, 1) or got.value != 7 or not nodes:
      raise ffi.HarnessError("sym_dim, sym_binding or kernel_node in harness/ffi.py no longer "
                             "matches sym_dim.h / kernel.h")

  @staticmethod
  def written(struct, init, name):
    """Runs init on a marked buffer padded well past sizeof(struct) (a grown header must not
    write past it): a C struct of another size leaves the mirror's last 8 bytes marked
    (smaller) or writes into the padding (larger)."""
    size, mark = ctypes.sizeof(struct), 0xA5
    pad = size + 256
    raw = (ctypes.c_ubyte * (size + pad))(*([mark] * (size + pad)))
    init(ctypes.cast(raw, ctypes.POINTER(struct)))
    if bytes(raw[size - 8:size]) == bytes([mark] * 8) or bytes(raw[size:]) != bytes([mark] * pad):
      raise ffi.HarnessError(f"struct {name} in harness/ffi.py ({size} bytes) no longer matches "
                             f"the header: its init wrote a different size")

  # ---- building -------------------------------------------------------------

  def new_dim(self, name, lo, hi, multiple_of=1):
    d = ffi.SymDim()
    self.call(self.lib.sym_dim_init, ctypes.byref(d), name.encode(), lo, hi, multiple_of)
    return d

  def dim(self, name, lo, hi, multiple_of=1):
    """A new dim; returns its id for the calls below."""
    self.dims.append(self.new_dim(name, lo, hi, multiple_of))
    return len(self.dims) - 1

  def graph(self):
    g = ffi.KernelGraph()
    self.lib.kernel_graph_init(ctypes.byref(g), self.arena)
    return g

  def node(self, builder, g, *args):
    out = ffi.NODE()
    self.call(builder, ctypes.byref(g), *args, ctypes.byref(out))
    return out

  def input(self, g, name, dims):
    shape = (ctypes.c_void_p * len(dims))(*[self.lib.sym_expr_dim(self.arena, ctypes.byref(d)) for d in dims])
    node = self.node(self.lib.kernel_input, g, name.encode(), ffi.DTYPES[np.dtype(np.float32)], len(dims), shape)
    if node.contents.name != name.encode() or node.contents.rank != len(dims):
      raise ffi.HarnessError("struct kernel_node in harness/ffi.py no longer matches kernel.h")
    return node

  def binary(self, g, op, x, y):
    return self.node(self.lib.kernel_binary, g, ffi.KERNEL_OPS[op], x, y)

  def unary(self, g, op, x):
    return self.node(self.lib.kernel_unary, g, ffi.KERNEL_OPS[op], x)

  def plan(self, g, out, name):
    handle = ctypes.c_void_p()
    self.call(self.lib.plan_new, ctypes.byref(handle), ctypes.byref(g), out, name.encode(), None)
    self.plans[name] = handle
    return self.contract(name, out)

  def shape_text(self, node):
    texts = []
    for k in range(node.contents.rank):
      buf = ctypes.create_string_buffer(256)
      self.call(self.lib.sym_expr_format, node.contents.shape[k], buf, ctypes.sizeof(buf))
      texts.append(buf.value.decode())
    return "(" + ", ".join(texts) + ")"

  def contract(self, name, out_node):
    """What a plan says about itself: its dims, its index, its output node."""
    handle = self.plans[name]
    dims = [self.lib.plan_dim(handle, k).contents for k in range(self.lib.plan_dim_count(handle))]
    index = self.lib.plan_index(handle).contents
    return {"dims": [[d.name.decode(errors="replace"), d.lo, d.hi, d.multiple_of] for d in dims],
            "index": [index.bits, index.max_elements],
            "dtype": out_node.contents.dtype, "shape": self.shape_text(out_node)}

  def build_chain(self, n):
    """CHAIN_TEXT over the dim n: add, mul, sub, a scalar operand, exp, div, neg and maximum."""
    g = self.graph()
    a, b, c = (self.input(g, name, [self.dims[n]]) for name in "abc")
    s = self.binary(g, "sub", self.binary(g, "mul", self.binary(g, "add", a, b), c), a)
    e = self.unary(g, "exp", self.binary(g, "mul", a, self.node(self.lib.kernel_scalar, g, 0.1)))
    out = self.binary(g, "maximum", self.binary(g, "div", s, e), self.unary(g, "neg", e))
    return self.plan(g, out, CHAIN)

  def build_rowsum(self, bd, nd):
    g = self.graph()
    x = self.input(g, "x", [self.dims[bd], self.dims[nd]])
    return self.plan(g, self.node(self.lib.kernel_sum, g, x), ROWSUM)

  # ---- launching ------------------------------------------------------------

  def binding(self, pairs):
    """(status, error, binding) after binding each (dim id, value) in turn."""
    b = ffi.SymBinding()
    self.lib.sym_binding_init(ctypes.byref(b))
    for d, value in pairs:
      status, err = self.status(self.lib.sym_dim_bind, ctypes.byref(b), ctypes.byref(self.dims[d]), value)
      if status:
        return status, err, b
    return 0, ffi.Error(), b

  def bind(self, pairs):
    """[status, error, the binding's count afterwards]."""
    status, err, b = self.binding(pairs)
    return [status, self.error(status, err), b.count]

  def launch(self, name, pairs, out, out_cap, inputs, n_inputs=None):
    """[stage, status, error]: stage "bind" when the binding failed, else "launch" with
    plan_launch's answer. out is an array; inputs are [array or None, capacity] pairs."""
    status, err, b = self.binding(pairs)
    if status:
      return ["bind", status, self.error(status, err)]
    buffers = [ffi.PlanBuffer(arr.ctypes.data if arr is not None else None, cap) for arr, cap in inputs]
    array = (ffi.PlanBuffer * max(len(buffers), 1))(*buffers)
    status, err = self.status(self.lib.plan_launch, self.plans[name], ctypes.byref(b),
                              ffi.PlanBuffer(out.ctypes.data, out_cap), array,
                              len(buffers) if n_inputs is None else n_inputs)
    return ["launch", status, self.error(status, err)]

  def resolve(self, name, pairs):
    """[status, error, values] of plan_resolve_dims after binding pairs (which must bind)."""
    _, _, b = self.binding(pairs)
    values = (ctypes.c_int64 * 2)(-1, -1)
    status, err = self.status(self.lib.plan_resolve_dims, self.plans[name], ctypes.byref(b), values)
    return [status, self.error(status, err), list(values)]

  def counters(self, names):
    return {name: self.rt.counter(name) for name in names}


# ---- the checks (the parent's half) -------------------------------------------------------------

class State:
  """What the checks know of the worker's lab: the plans built, the launches that succeeded."""

  def __init__(self, lab):
    self.lab, self.plans, self.launches = lab, [], {}

  def plan(self, name, contract):
    self.plans.append(name)
    self.launches[name] = 0
    return contract

  def launch(self, name, pairs, out, out_cap, inputs, n_inputs=None):
    """(stage, status, error) of a launch, counting the ones that succeeded."""
    stage, status, err = self.lab.launch(name, pairs, out, out_cap, inputs, n_inputs)
    self.launches[name] += stage == "launch" and status == 0
    return stage, status, err


def chain_numpy(a, b, c):
  """The chain in float32, in the kernel's order. exp is taken in float64 and rounded: glibc's
  expf is within an ulp of that, NumPy's own float32 exp may be a few ulps off it."""
  e = np.exp((a * np.float32(0.1)).astype(np.float64)).astype(np.float32)
  return np.maximum(((a + b) * c - a) / e, -e)


def contract(got, dims, bits, max_elements, shape):
  """Lines naming what differs from a plan's expected contract, [] when none. dims: (name, lo,
  hi, multiple_of) in parameter order."""
  wrong = []
  want = [list(d) for d in dims]
  if got["dims"] != want:
    wrong.append(f"dims (name, lo, hi, multiple_of) in parameter order: expected {[tuple(d) for d in want]}, "
                 f"got {[tuple(d) for d in got['dims']]}")
  if got["index"] != [bits, max_elements]:
    wrong.append(f"index: expected {bits}-bit, at most {max_elements} elements; got {got['index'][0]}-bit, "
                 f"at most {got['index'][1]}")
  if got["dtype"] != ffi.DTYPES[np.dtype(np.float32)] or got["shape"] != shape:
    wrong.append(f"output node: expected f32 of shape {shape}, got dtype {got['dtype']} shape {got['shape']}")
  return wrong


def allocated(values, capacity):
  """A float32 buffer for capacity elements (and TAIL more, never declared): values first,
  IN_POISON after, so that reading past the logical size gives NaN."""
  buf = f32(IN_POISON, capacity + TAIL)
  buf[:values.size] = values
  return buf


def poison_left(buf, logical):
  """None, or which of buf's elements from logical on are no longer OUT_POISON."""
  changed = np.flatnonzero(buf[logical:].view(np.uint32) != OUT_POISON)
  if changed.size == 0:
    return None
  i = logical + int(changed[0])
  return f"element {i} is now {buf[i].item()!r} ({changed.size} of {buf.size - logical} poisoned elements changed)"


# ---- the checks ----------------------------------------------------------------

def check_elementwise(st, rng, seed, report, count):
  n = st.lab.dim("n", 1, N_HI)
  before = st.lab.counters(["plans built"])["plans built"]
  got = st.plan(CHAIN, st.lab.build_chain(n))
  if (wrong := contract(got, [("n", 1, N_HI, 1)], 32, N_HI, "(n)")):
    return report.fail(f"the plan of {CHAIN_TEXT}", *wrong)
  lengths = [1, 7, 31, 64, N_HI] + [int(v) for v in rng.integers(1, N_HI + 1, size=count)]
  for k, length in enumerate(lengths):
    one_chain(st, rng, n, length, ("allocated", "exact", "guarded")[k % 3], seed, report)
  built = st.lab.counters(["plans built"])["plans built"] - before
  if built != 1:
    report.fail(f"after {len(lengths)} lengths", f"process counter 'plans built': expected +1, got +{built}")
  return f"{len(lengths)} lengths in [1, {N_HI}], one plan: {CHAIN_TEXT}"


def one_chain(st, rng, n, length, layout, seed, report):
  """One launch of the chain. layout: "allocated" (buffers for N_HI, capacity N_HI), "exact"
  (the same buffers, capacity = length) or "guarded" (buffers of exactly length elements, each
  followed by an unmapped page: a read or write one past the end faults)."""
  values = [(rng.standard_normal(length) * 4).astype(np.float32) for _ in range(3)]
  if layout == "guarded":
    ins, out = [v.copy() for v in values], f32(OUT_POISON, length)
    cap = out_cap = length
    sizes = f"inputs and out of exactly {length} elements, each followed by an unmapped page"
  else:
    ins, out = [allocated(v, N_HI) for v in values], f32(OUT_POISON, N_HI + TAIL)
    cap, out_cap = (length, length) if layout == "exact" else (N_HI, out.size)
    sizes = f"inputs allocated for {N_HI}, capacity {cap}; out allocated for {out.size}, capacity {out_cap}"
  before = [x.copy() for x in ins]
  case = f"n={length} ({sizes}) seed={seed}"
  progress(f"lab {LAB} elementwise: {case}")
  stage, status, err = st.launch(CHAIN, [(n, length)], out, out_cap, [(x, cap) for x in ins])
  if status != 0:
    return report.fail(case, "failed: " + failure(err))
  if (mismatch := compare(out[:length], chain_numpy(*values), RTOL_CHAIN)):
    return report.fail(case, f"{CHAIN_TEXT}, f32, rtol {RTOL_CHAIN:g}", *mismatch)
  if (overwritten := poison_left(out, length)):
    return report.fail(case, f"wrote past the logical size {length}: {overwritten}")
  for name, x, old in zip("abc", ins, before):
    if x.tobytes() != old.tobytes():
      return report.fail(case, f"the launch changed its input '{name}'")


def check_rowsums(st, rng, seed, report, count):
  bd, nd = st.lab.dim("b", 1, B_HI), st.lab.dim("n", 1, N_HI)
  got = st.plan(ROWSUM, st.lab.build_rowsum(bd, nd))
  if (wrong := contract(got, [("b", 1, B_HI, 1), ("n", 1, N_HI, 1)], 32, B_HI * N_HI, "(b)")):
    return report.fail("the plan of out[b] = sum over j of x[b, j]", *wrong)
  shapes = [(1, 1), (B_HI, 1), (int(rng.integers(1, B_HI + 1)), 1), (3, 1000), (B_HI, N_HI)] + \
           [(int(rng.integers(1, B_HI + 1)), int(rng.integers(1, N_HI + 1))) for _ in range(count)]
  for rows, cols in shapes:
    for data in ("quarters", "normal"):
      one_rowsum(st, rng, (bd, nd), rows, cols, data, seed, report)
  return f"{len(shapes)} shapes (B, N), B in [1, {B_HI}], N in [1, {N_HI}], exact and normal data"


def row_data(rng, rows, cols, data):
  """quarters: multiples of 1/4 in [-8, 8]; every partial sum of at most 4096 of them is a
  multiple of 1/4 below 2^15 in magnitude, exact in float32, so the sum is exact in any order.
  normal: standard normal values, summed with rounding."""
  if data == "quarters":
    return (rng.integers(-32, 33, size=(rows, cols)) / 4).astype(np.float32)
  return rng.standard_normal((rows, cols)).astype(np.float32)


def sum_bound(x):
  """Per row, how far a float32 sum of the row may be from its exact value. NumPy's float32 sum
  is pairwise and the kernel's adds into lanes combined pairwise (its banner states the order),
  so they need not agree bit for bit: the reference is np.sum in float64 and the bound is
  recursive summation's, which holds for any order of the additions, gamma(N-1) * sum|x| with
  gamma(k) = k*u / (1 - k*u), u = 2^-24 (Higham, Accuracy and Stability, section 4.2), plus the
  float64 reference's own error. It is 0 for N = 1: one element is its own sum."""
  k = x.shape[1] - 1
  gamma = k * U32 / (1 - k * U32)
  return (gamma + x.shape[1] * U64) * np.abs(x.astype(np.float64)).sum(axis=1)


def one_rowsum(st, rng, dims, rows, cols, data, seed, report):
  x = row_data(rng, rows, cols, data)
  buf = allocated(x.ravel(), B_HI * N_HI)
  before = buf.copy()
  out = f32(OUT_POISON, B_HI + TAIL)
  case = f"(B, N) = ({rows}, {cols}), {data} data, x of capacity {B_HI * N_HI}, out of {B_HI + TAIL} seed={seed}"
  progress(f"lab {LAB} row sums: {case}")
  stage, status, err = st.launch(ROWSUM, list(zip(dims, (rows, cols))), out, out.size, [(buf, B_HI * N_HI)])
  if status != 0:
    return report.fail(case, "failed: " + failure(err))
  if (mismatch := compare_sums(out[:rows], x, data)):
    return report.fail(case, *mismatch)
  if (overwritten := poison_left(out, rows)):
    return report.fail(case, f"wrote past the logical size {rows}: {overwritten}")
  if buf.tobytes() != before.tobytes():
    report.fail(case, "the launch changed its input 'x'")


def compare_sums(got, x, data):
  """None when every row sum is within its bound, else the first bad row and the worst."""
  want = np.sum(x, axis=1, dtype=np.float64)
  bound = np.zeros(x.shape[0]) if data == "quarters" else sum_bound(x)
  with np.errstate(invalid="ignore"):
    error = np.abs(got.astype(np.float64) - want)
  error = np.where(np.isnan(error), np.inf, error)
  bad = np.flatnonzero(~(error <= bound))
  if bad.size == 0:
    return None
  i, worst = int(bad[0]), int(np.argmax(error - bound))
  rule = "exact" if data == "quarters" else "gamma(N-1) * sum|x|"
  return [f"row {i}: expected {float(want[i])!r} got {float(got[i])!r} ({bad.size} of {got.size} rows off; "
          f"bound {bound[i]:.3g}, {rule})",
          f"largest error {error[worst]:.3g} at row {worst} (bound {bound[worst]:.3g}): "
          f"expected {float(want[worst])!r} got {float(got[worst])!r}"]


def expect_error(status, err, want, case, report, message=None, mentions=()):
  """Checks that a call failed with the error named want; message: its exact text; mentions:
  values it must name (house style: the input, the value and the limit). True when it failed
  with that code."""
  got, text = err["name"], err["message"]
  if status == 0 or got != want:
    report.fail(case, f"expected {want}, got status {status} ({got}): {text}")
    return False
  if message is not None and text != message:
    report.fail(case, f"expected the message {message!r}, got {text!r}")
  missing = [str(v) for v in mentions if str(v) not in text]
  if missing:
    report.fail(case, f"the {want} message should name {', '.join(missing)}: {text!r}")
  return True


def check_rejections(st, rng, seed, report):
  if CHAIN not in st.plans or ROWSUM not in st.plans:
    raise ffi.HarnessError("the rejections need both plans, which the earlier checks did not build")
  lab = st.lab
  n, bd, wide = lab.dim("n", 1, N_HI), lab.dim("b", 1, B_HI), lab.dim("n", 1, 10000)
  calls = lab.counters([f"calls {CHAIN}", f"calls {ROWSUM}"])
  out = f32(OUT_POISON, N_HI + TAIL)
  for value in (N_HI + 1, 0):
    case = f"sym_dim_bind(n in [1, {N_HI}], {value})"
    progress(f"lab {LAB} rejections: {case}")
    status, err, count = lab.bind([(n, value)])
    rejected = expect_error(status, err, "UOPC_E_BOUNDS", case, report, f"dim 'n' = {value} outside [1, {N_HI}]")
    if rejected and count != 0:
      report.fail(case, f"a rejected binding changed the binding: count {count}")
  ins = [(allocated(np.ones(100, np.float32), N_HI), N_HI) for _ in range(3)]
  x = (allocated(np.ones(300, np.float32), B_HI * N_HI), B_HI * N_HI)
  launches = [  # (what, plan, bindings, out capacity, inputs, input count, code, message, mentions)
    ("chain launched with an empty binding", CHAIN, [], N_HI, ins, None,
     "UOPC_E_UNBOUND", None, (f"'{CHAIN}'", "'n'", "unbound")),
    ("row sum launched with b = 3 and n unbound", ROWSUM, [(bd, 3)], B_HI, [x], None,
     "UOPC_E_UNBOUND", None, (f"'{ROWSUM}'", "'n'", "unbound")),
    ("row sum launched with n = 100 and b unbound", ROWSUM, [(n, 100)], B_HI, [x], None,
     "UOPC_E_UNBOUND", None, (f"'{ROWSUM}'", "'b'", "unbound")),
    (f"chain launched with n = 5000 bound through a dim n in [1, 10000] (the plan's is [1, {N_HI}])",
     CHAIN, [(wide, 5000)], N_HI, ins, None, "UOPC_E_BOUNDS", f"dim 'n' = 5000 outside [1, {N_HI}]", ()),
    ("chain at n = 100 with input 'b' of capacity 99", CHAIN, [(n, 100)], N_HI,
     [ins[0], (ins[1][0], 99), ins[2]], None, "UOPC_E_BOUNDS", None, ("'b'", 99, 100)),
    ("chain at n = 100 with out of capacity 99", CHAIN, [(n, 100)], 99, ins, None,
     "UOPC_E_BOUNDS", None, ("'out'", 99, 100)),
    ("row sum at (B, N) = (3, 100) with x of capacity 299", ROWSUM, [(bd, 3), (n, 100)], B_HI,
     [(x[0], 299)], None, "UOPC_E_BOUNDS", None, ("'x'", 299, 300)),
    ("row sum at (B, N) = (3, 100) with out of capacity 2", ROWSUM, [(bd, 3), (n, 100)], 2, [x], None,
     "UOPC_E_BOUNDS", None, ("'out'", 2, 3)),
    ("chain at n = 100 with input 'c' NULL", CHAIN, [(n, 100)], N_HI, [ins[0], ins[1], (None, N_HI)], None,
     "UOPC_E_INVALID", None, ("'c'",)),
    ("chain at n = 100 given 2 inputs of its 3", CHAIN, [(n, 100)], N_HI, ins, 2,
     "UOPC_E_INVALID", None, ()),
  ]
  for what, name, pairs, out_cap, inputs, n_inputs, code, message, mentions in launches:
    case = f"{what} seed={seed}"
    progress(f"lab {LAB} rejections: {case}")
    stage, status, err = st.launch(name, pairs, out, out_cap, inputs, n_inputs)
    if stage == "bind":
      report.fail(case, "the binding failed: " + failure(err))
      continue
    expect_error(status, err, code, case, report, message, mentions)
    if (overwritten := poison_left(out, 0)):
      report.fail(case, f"the launch wrote into out: {overwritten}")
      out = f32(OUT_POISON, N_HI + TAIL)
  ran = {k: v for k, v in lab.counters(list(calls)).items() if v != calls[k]}
  if ran:
    report.fail("after the rejected launches", f"a kernel ran: {ran} (before: {calls})")
  check_resolve(lab, n, bd, wide, seed, report)
  return f"n = {N_HI + 1} and 0 unbindable; unbound dims, the plan's own bounds, short buffers, NULL, " \
         f"input count"


def check_resolve(lab, n, bd, wide, seed, report):
  """plan_resolve_dims on its own: plan_launch re-checks each value as it rebinds, so only a
  direct call shows whether the student's function checks against the plan's bounds."""
  case = f"plan_resolve_dims({CHAIN}) with n = 5000 bound through a dim n in [1, 10000] seed={seed}"
  progress(f"lab {LAB} rejections: {case}")
  status, err, _ = lab.resolve(CHAIN, [(wide, 5000)])
  expect_error(status, err, "UOPC_E_BOUNDS", case, report, f"dim 'n' = 5000 outside [1, {N_HI}]")
  case = f"plan_resolve_dims({ROWSUM}) with n = 100 bound before b = 3 seed={seed}"
  progress(f"lab {LAB} rejections: {case}")
  status, err, values = lab.resolve(ROWSUM, [(n, 100), (bd, 3)])
  if status != 0:
    report.fail(case, "failed: " + failure(err))
  elif list(values) != [3, 100]:
    report.fail(case, f"values in the plan's dim order (b, n): expected [3, 100], got {list(values)}")


def check_counters(st, start, cache, report):
  """One plan per operation, however many lengths: the plans this process built, each from the
  compiler or the disk cache, and one counted call per launch that succeeded. With cache (a
  function giving the compiles since the checks began, harness.common.compile_count), the
  compiles are also counted where the worker cannot forge them: by the grader's compile witness."""
  names = ("plans built", "programs constructed", "compiler invocations", "disk cache hits")
  delta = {name: value - start[name] for name, value in st.lab.counters(list(names)).items()}
  built = len(st.plans)
  case = f"after the checks above ({', '.join(st.plans) or 'no plans'} built)"
  if built == 0:    # nothing built: the counts would agree vacuously
    report.fail(case, "no plan was built, so no count can be checked")
  for name in ("plans built", "programs constructed"):
    if delta[name] != built:
      report.fail(case, f"process counter '{name}': expected +{built}, got +{delta[name]}")
  from_compiler_or_cache = delta["compiler invocations"] + delta["disk cache hits"]
  if from_compiler_or_cache != built:
    report.fail(case, f"'compiler invocations' + 'disk cache hits': expected +{built}, got "
                      f"+{delta['compiler invocations']} + {delta['disk cache hits']}")
  if cache is not None and (seen := cache()) != delta["compiler invocations"]:
    report.fail(case, f"'compiler invocations' says +{delta['compiler invocations']}, but the grader "
                      f"counted {seen} compiles")
  got = st.lab.counters([f"calls {name}" for name in st.launches])
  for name, launched in st.launches.items():
    if (calls := got[f"calls {name}"] - start.get(f"calls {name}", 0)) != launched:
      report.fail(case, f"process counter 'calls {name}': expected +{launched} (the launches that "
                        f"succeeded), got +{calls}")
  return f"plans built={built}, " + ", ".join(f"calls {k}={v}" for k, v in st.launches.items())


def main(argv=None):
  ap = argparse.ArgumentParser(description="Checks lab 23.1 against NumPy.")
  ap.add_argument("--build", default="build/labs", help="the build directory (default build/labs)")
  ap.add_argument("--seed", type=int, help="the random seed (default: a fresh one, printed)")
  ap.add_argument("--lengths", type=int, default=20, help="random lengths and shapes to draw (default 20)")
  worker_options(ap)
  args = ap.parse_args(argv)
  seed, replay = start_check(LAB, "check_23_1", args, {"lengths": 20})
  report = LabReport(LAB, replay)
  try:
    lab = connect("harness.check_23_1", args)
  except (ffi.HarnessError, ffi.UopcError, NotImplementedYet, WorkerDied, RemoteError) as e:
    print(f"FAIL lab {LAB} setup: {e}")
    return 2
  st = State(lab)
  names = ["plans built", "programs constructed", "compiler invocations", "disk cache hits",
           f"calls {CHAIN}", f"calls {ROWSUM}"]
  rng = np.random.default_rng(seed)
  try:
    start = lab.counters(names)
    cache = compile_count(args)
    report.run("elementwise", check_elementwise, st, rng, seed, report, args.lengths)
    report.run("row sums", check_rowsums, st, rng, seed, report, args.lengths)
    report.run("rejections", check_rejections, st, rng, seed, report)
    report.run("counters", check_counters, st, start, cache, report)
  except WorkerDied as e:
    return died(LAB, e)
  finally:
    lab.close()
  return report.finish()


if __name__ == "__main__":
  raise SystemExit(main())
