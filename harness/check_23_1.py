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
from harness.common import NOT_IMPLEMENTED, LabReport, NotImplementedYet, compare, progress, start_check

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
  """The lab library, one arena for every shape, and the plans built so far (freed by close)."""

  def __init__(self, build):
    self.rt = ffi.Runtime(build)
    self.lib = self.rt.lab(LAB)
    self.arena, self.plans, self.launches = ctypes.c_void_p(), {}, {}
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

  def failure(self, err):
    return f"{self.rt.error_name(err.code)} in {err.where.decode()}: {err.message.decode()}"

  # ---- the structs ----------------------------------------------------------

  def check_layouts(self):
    """The mirrors in ffi.py against the library: each init writes its struct up to its last
    byte and not past it, and fields the library fills or reads are where ffi.py has them."""
    self.written(ffi.KernelGraph, lambda p: self.lib.kernel_graph_init(p, self.arena), "kernel_graph")
    self.written(ffi.SymBinding, self.lib.sym_binding_init, "sym_binding")
    self.written(ffi.SymDim, lambda p: self.call(self.lib.sym_dim_init, p, b"n", 1, N_HI, 1), "sym_dim")
    d = self.dim("q", 3, 9)
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

  def dim(self, name, lo, hi, multiple_of=1):
    d = ffi.SymDim()
    self.call(self.lib.sym_dim_init, ctypes.byref(d), name.encode(), lo, hi, multiple_of)
    return d

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
    self.plans[name], self.launches[name] = handle, 0
    return handle

  def shape_text(self, node):
    texts = []
    for k in range(node.contents.rank):
      buf = ctypes.create_string_buffer(256)
      self.call(self.lib.sym_expr_format, node.contents.shape[k], buf, ctypes.sizeof(buf))
      texts.append(buf.value.decode())
    return "(" + ", ".join(texts) + ")"

  # ---- launching ------------------------------------------------------------

  def binding(self, pairs):
    """(status, error, binding) after binding each (dim, value) in turn."""
    b = ffi.SymBinding()
    self.lib.sym_binding_init(ctypes.byref(b))
    for d, value in pairs:
      status, err = self.status(self.lib.sym_dim_bind, ctypes.byref(b), ctypes.byref(d), value)
      if status:
        return status, err, b
    return 0, ffi.Error(), b

  def launch(self, name, b, out, inputs, n_inputs=None):
    """(status, error) of plan_launch; out and inputs are (array or None, capacity) pairs."""
    buffers = [ffi.PlanBuffer(arr.ctypes.data if arr is not None else None, cap) for arr, cap in inputs]
    array = (ffi.PlanBuffer * max(len(buffers), 1))(*buffers)
    arr, cap = out
    status, err = self.status(self.lib.plan_launch, self.plans[name], ctypes.byref(b),
                              ffi.PlanBuffer(arr.ctypes.data, cap), array,
                              len(buffers) if n_inputs is None else n_inputs)
    self.launches[name] += status == 0
    return status, err


# ---- the plans ---------------------------------------------------------------

def build_chain(lab, n):
  """CHAIN_TEXT over the dim n: add, mul, sub, a scalar operand, exp, div, neg and maximum."""
  g = lab.graph()
  a, b, c = (lab.input(g, name, [n]) for name in "abc")
  s = lab.binary(g, "sub", lab.binary(g, "mul", lab.binary(g, "add", a, b), c), a)
  e = lab.unary(g, "exp", lab.binary(g, "mul", a, lab.node(lab.lib.kernel_scalar, g, 0.1)))
  out = lab.binary(g, "maximum", lab.binary(g, "div", s, e), lab.unary(g, "neg", e))
  return lab.plan(g, out, CHAIN), out


def chain_numpy(a, b, c):
  """The chain in float32, in the kernel's order. exp is taken in float64 and rounded: glibc's
  expf is within an ulp of that, NumPy's own float32 exp may be a few ulps off it."""
  e = np.exp((a * np.float32(0.1)).astype(np.float64)).astype(np.float32)
  return np.maximum(((a + b) * c - a) / e, -e)


def build_rowsum(lab, bd, nd):
  g = lab.graph()
  x = lab.input(g, "x", [bd, nd])
  out = lab.node(lab.lib.kernel_sum, g, x)
  return lab.plan(g, out, ROWSUM), out


def contract(lab, name, out_node, dims, bits, max_elements, shape):
  """Lines naming what differs from the plan's expected contract, [] when none."""
  handle, wrong = lab.plans[name], []
  got_dims = [lab.lib.plan_dim(handle, k).contents for k in range(lab.lib.plan_dim_count(handle))]
  got = [(d.name.decode(), d.lo, d.hi, d.multiple_of) for d in got_dims]
  want = [(d.name.decode(), d.lo, d.hi, d.multiple_of) for d in dims]
  if got != want:
    wrong.append(f"dims (name, lo, hi, multiple_of) in parameter order: expected {want}, got {got}")
  index = lab.lib.plan_index(handle).contents
  if (index.bits, index.max_elements) != (bits, max_elements):
    wrong.append(f"index: expected {bits}-bit, at most {max_elements} elements; got {index.bits}-bit, "
                 f"at most {index.max_elements}")
  node = out_node.contents
  if node.dtype != ffi.DTYPES[np.dtype(np.float32)] or lab.shape_text(out_node) != shape:
    wrong.append(f"output node: expected f32 of shape {shape}, got dtype {node.dtype} "
                 f"shape {lab.shape_text(out_node)}")
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


def counters(lab, names):
  return {name: lab.rt.counter(name) for name in names}


# ---- the checks ----------------------------------------------------------------

def check_elementwise(lab, rng, seed, report, count):
  n = lab.dim("n", 1, N_HI)
  before = lab.rt.counter("plans built")
  _, out_node = build_chain(lab, n)
  if (wrong := contract(lab, CHAIN, out_node, [n], 32, N_HI, "(n)")):
    return report.fail(f"the plan of {CHAIN_TEXT}", *wrong)
  lengths = [1, 7, 31, 64, N_HI] + [int(v) for v in rng.integers(1, N_HI + 1, size=count)]
  for k, length in enumerate(lengths):
    exact_capacity = k % 2 == 1     # every other case declares capacity = the logical size
    one_chain(lab, rng, n, length, exact_capacity, seed, report)
  built = lab.rt.counter("plans built") - before
  if built != 1:
    report.fail(f"after {len(lengths)} lengths", f"process counter 'plans built': expected +1, got +{built}")
  return f"{len(lengths)} lengths in [1, {N_HI}], one plan: {CHAIN_TEXT}"


def one_chain(lab, rng, n, length, exact_capacity, seed, report):
  values = [(rng.standard_normal(length) * 4).astype(np.float32) for _ in range(3)]
  ins = [allocated(v, N_HI) for v in values]
  before = [x.copy() for x in ins]
  out = f32(OUT_POISON, N_HI + TAIL)
  cap, out_cap = (length, length) if exact_capacity else (N_HI, out.size)
  case = f"n={length} (inputs allocated for {N_HI}, capacity {cap}; out allocated for {out.size}, " \
         f"capacity {out_cap}) seed={seed}"
  progress(f"lab {LAB} elementwise: {case}")
  status, err, b = lab.binding([(n, length)])
  if status == 0:
    status, err = lab.launch(CHAIN, b, (out, out_cap), [(x, cap) for x in ins])
  if status != 0:
    return report.fail(case, "failed: " + lab.failure(err))
  if (mismatch := compare(out[:length], chain_numpy(*values), RTOL_CHAIN)):
    return report.fail(case, f"{CHAIN_TEXT}, f32, rtol {RTOL_CHAIN:g}", *mismatch)
  if (overwritten := poison_left(out, length)):
    return report.fail(case, f"wrote past the logical size {length}: {overwritten}")
  for name, x, old in zip("abc", ins, before):
    if x.tobytes() != old.tobytes():
      return report.fail(case, f"the launch changed its input '{name}'")


def check_rowsums(lab, rng, seed, report, count):
  bd, nd = lab.dim("b", 1, B_HI), lab.dim("n", 1, N_HI)
  _, out_node = build_rowsum(lab, bd, nd)
  if (wrong := contract(lab, ROWSUM, out_node, [bd, nd], 32, B_HI * N_HI, "(b)")):
    return report.fail("the plan of out[b] = sum over j of x[b, j]", *wrong)
  shapes = [(1, 1), (B_HI, 1), (int(rng.integers(1, B_HI + 1)), 1), (3, 1000), (B_HI, N_HI)] + \
           [(int(rng.integers(1, B_HI + 1)), int(rng.integers(1, N_HI + 1))) for _ in range(count)]
  for rows, cols in shapes:
    for data in ("quarters", "normal"):
      one_rowsum(lab, rng, (bd, nd), rows, cols, data, seed, report)
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


def one_rowsum(lab, rng, dims, rows, cols, data, seed, report):
  x = row_data(rng, rows, cols, data)
  buf = allocated(x.ravel(), B_HI * N_HI)
  before = buf.copy()
  out = f32(OUT_POISON, B_HI + TAIL)
  case = f"(B, N) = ({rows}, {cols}), {data} data, x of capacity {B_HI * N_HI}, out of {B_HI + TAIL} seed={seed}"
  progress(f"lab {LAB} row sums: {case}")
  status, err, b = lab.binding(list(zip(dims, (rows, cols))))
  if status == 0:
    status, err = lab.launch(ROWSUM, b, (out, out.size), [(buf, B_HI * N_HI)])
  if status != 0:
    return report.fail(case, "failed: " + lab.failure(err))
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


def expect_error(lab, status, err, want, case, report, message=None, mentions=()):
  """Checks that a call failed with the error named want; message: its exact text; mentions:
  values it must name (house style: the input, the value and the limit). True when it failed
  with that code."""
  got = lab.rt.error_name(err.code) if status else "UOPC_OK"
  text = err.message.decode(errors="replace")
  if status == 0 or got != want:
    report.fail(case, f"expected {want}, got status {status} ({got}): {text}")
    return False
  if message is not None and text != message:
    report.fail(case, f"expected the message {message!r}, got {text!r}")
  missing = [str(v) for v in mentions if str(v) not in text]
  if missing:
    report.fail(case, f"the {want} message should name {', '.join(missing)}: {text!r}")
  return True


def check_rejections(lab, rng, seed, report):
  if CHAIN not in lab.plans or ROWSUM not in lab.plans:
    raise ffi.HarnessError("the rejections need both plans, which the earlier checks did not build")
  n, bd, wide = lab.dim("n", 1, N_HI), lab.dim("b", 1, B_HI), lab.dim("n", 1, 10000)
  calls = counters(lab, (f"calls {CHAIN}", f"calls {ROWSUM}"))
  out = f32(OUT_POISON, N_HI + TAIL)
  for value in (N_HI + 1, 0):
    case = f"sym_dim_bind(n in [1, {N_HI}], {value})"
    progress(f"lab {LAB} rejections: {case}")
    status, err, b = lab.binding([(n, value)])
    rejected = expect_error(lab, status, err, "UOPC_E_BOUNDS", case, report,
                            f"dim 'n' = {value} outside [1, {N_HI}]")
    if rejected and b.count != 0:
      report.fail(case, f"a rejected binding changed the binding: count {b.count}")
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
    status, err, b = lab.binding(pairs)
    if status != 0:
      report.fail(case, "the binding failed: " + lab.failure(err))
      continue
    status, err = lab.launch(name, b, (out, out_cap), inputs, n_inputs)
    expect_error(lab, status, err, code, case, report, message, mentions)
    if (overwritten := poison_left(out, 0)):
      report.fail(case, f"the launch wrote into out: {overwritten}")
      out = f32(OUT_POISON, N_HI + TAIL)
  ran = {k: v for k, v in counters(lab, calls).items() if v != calls[k]}
  if ran:
    report.fail("after the rejected launches", f"a kernel ran: {ran} (before: {calls})")
  check_resolve(lab, n, bd, wide, seed, report)
  return f"n = {N_HI + 1} and 0 unbindable; unbound dims, the plan's own bounds, short buffers, NULL, " \
         f"input count"


def check_resolve(lab, n, bd, wide, seed, report):
  """plan_resolve_dims on its own: plan_launch re-checks each value as it rebinds, so only a
  direct call shows whether the student's function checks against the plan's bounds."""
  values = (ctypes.c_int64 * 2)(-1, -1)
  case = f"plan_resolve_dims({CHAIN}) with n = 5000 bound through a dim n in [1, 10000] seed={seed}"
  progress(f"lab {LAB} rejections: {case}")
  _, _, b = lab.binding([(wide, 5000)])
  status, err = lab.status(lab.lib.plan_resolve_dims, lab.plans[CHAIN], ctypes.byref(b), values)
  expect_error(lab, status, err, "UOPC_E_BOUNDS", case, report, f"dim 'n' = 5000 outside [1, {N_HI}]")
  case = f"plan_resolve_dims({ROWSUM}) with n = 100 bound before b = 3 seed={seed}"
  progress(f"lab {LAB} rejections: {case}")
  _, _, b = lab.binding([(n, 100), (bd, 3)])
  status, err = lab.status(lab.lib.plan_resolve_dims, lab.plans[ROWSUM], ctypes.byref(b), values)
  if status != 0:
    report.fail(case, "failed: " + lab.failure(err))
  elif list(values) != [3, 100]:
    report.fail(case, f"values in the plan's dim order (b, n): expected [3, 100], got {list(values)}")


def check_counters(lab, start, report):
  """One plan per operation, however many lengths: the plans this process built, each from the
  compiler or the disk cache, and one counted call per launch that succeeded."""
  names = ("plans built", "programs constructed", "compiler invocations", "disk cache hits")
  delta = {name: value - start[name] for name, value in counters(lab, names).items()}
  built = len(lab.plans)
  case = f"after the checks above ({', '.join(lab.plans) or 'no plans'} built)"
  if built == 0:    # nothing built: the counts would agree vacuously
    report.fail(case, "no plan was built, so no count can be checked")
  for name in ("plans built", "programs constructed"):
    if delta[name] != built:
      report.fail(case, f"process counter '{name}': expected +{built}, got +{delta[name]}")
  from_compiler_or_cache = delta["compiler invocations"] + delta["disk cache hits"]
  if from_compiler_or_cache != built:
    report.fail(case, f"'compiler invocations' + 'disk cache hits': expected +{built}, got "
                      f"+{delta['compiler invocations']} + {delta['disk cache hits']}")
  for name, launched in lab.launches.items():
    if (got := lab.rt.counter(f"calls {name}") - start.get(f"calls {name}", 0)) != launched:
      report.fail(case, f"process counter 'calls {name}': expected +{launched} (the launches that "
                        f"succeeded), got +{got}")
  return f"plans built={built}, " + ", ".join(f"calls {k}={v}" for k, v in lab.launches.items())


def main(argv=None):
  ap = argparse.ArgumentParser(description="Checks lab 23.1 against NumPy.")
  ap.add_argument("--build", default="build/labs", help="the build directory (default build/labs)")
  ap.add_argument("--seed", type=int, help="the random seed (default: a fresh one, printed)")
  ap.add_argument("--lengths", type=int, default=20, help="random lengths and shapes to draw (default 20)")
  args = ap.parse_args(argv)
  seed, replay = start_check(LAB, "check_23_1", args, {"lengths": 20})
  report = LabReport(LAB, replay)
  try:
    lab = Lab(args.build)
  except (ffi.HarnessError, ffi.UopcError, NotImplementedYet) as e:
    print(f"FAIL lab {LAB} setup: {e}")
    return 2
  names = ("plans built", "programs constructed", "compiler invocations", "disk cache hits",
           f"calls {CHAIN}", f"calls {ROWSUM}")
  start = counters(lab, names)
  rng = np.random.default_rng(seed)
  try:
    report.run("elementwise", check_elementwise, lab, rng, seed, report, args.lengths)
    report.run("row sums", check_rowsums, lab, rng, seed, report, args.lengths)
    report.run("rejections", check_rejections, lab, rng, seed, report)
    report.run("counters", check_counters, lab, start, report)
  finally:
    lab.close()
  return report.finish()


if __name__ == "__main__":
  raise SystemExit(main())
