"""core_graphs.py: random graphs for the compiler core (labs/core/ir.h), built through
ctypes and written down as a description that the NumPy reference (core_reference.py) reads.

A graph has size dims (bounded, some with a multiple), inputs (contiguous, or strided views whose
strides and offset are dims bound per call) and a chain of random ops over a pool of values. The
builder reads the C nodes' shape expressions for one thing only: which extents the IR may
broadcast together (the same expression, or the constant 1) and which selects it can prove. The
description holds what the reference needs and nothing C computed: ops, operands, dtypes and
parameters, and input shapes as specs evaluated per call:
    ("const", c)          the extent c
    ("dim", name)         the dim's value in this call
    ("axis", id, k)       the extent of node id's axis k, as the reference computed it
    ("mul", spec, spec)   a product (reshape's merged axes)
"""
import ctypes
import math
from dataclasses import dataclass, field

import numpy as np

from harness import ffi

F32, F64, I32, I64, BOOL = (np.dtype(t) for t in (np.float32, np.float64, np.int32, np.int64, np.bool_))
FLOATS, INTS = (F32, F64), (I32, I64)
MAX_RANK = 4
# Size dims' upper bounds: primes above the constants a graph draws (extents up to 5, slice bounds
# up to 20, steps up to 3), so that one of them as a number in the generated code is the bound
# leaking into the text (a slice of a slice could compose 20 + 2*20 + ... into one, in principle:
# the failure shows the graph).
SIZE_HI = (53, 59, 61, 67)
SIZE_NAMES = ("n", "m", "k", "b")
STRIDE_HI = (1000003, 3000000019)   # the second needs int64 addresses: both index widths run
# Above the farthest element 0 can be from a strided input's storage start: a call draws at most
# 200,000 elements a node (check_core.MAX_ELEMENTS), and each of 4 axes may take every other
# element of its storage (2**4 = 16 times as many), reversed. (1000033 was too small: 57**3
# elements stored with two axes stepped put element 0 at 1455664, which the binder refused.)
OFFSET_HI = 3200003
COMPARES = ("less", "less_equal", "greater", "greater_equal", "equal", "not_equal")
INF = math.inf
MAX_OUTPUTS = 4
PARAMETERS_MAX = 31   # parameters a generated kernel takes at most: below UOPC_SIGNATURE_MAX - 1 (63), and
                      # where it was when that was 31, so each seed draws the graphs it drew then


class BuildError(Exception):
  """A builder refused a call that the generator meant to be valid: a core bug or a harness bug."""


class NoRoom(Exception):
  """One more input would pass the kernel's parameter limit: the generator tries another op."""


@dataclass
class Dim:
  name: str
  lo: int
  hi: int
  multiple_of: int
  role: str            # "size", "stride" or "offset"


@dataclass
class Node:
  """One value of the description; id is the C node's id (creation order)."""
  id: int
  op: str
  dtype: np.dtype
  src: tuple = ()
  args: dict = field(default_factory=dict)
  # The generator's own knowledge, never read by the reference: a static interval of the values
  # (over every call) and whether a NaN can appear, for choosing ops whose results stay defined.
  iv: tuple = (-INF, INF)
  nan: bool = False


@dataclass
class Graph:
  dims: dict = field(default_factory=dict)      # name -> Dim
  nodes: dict = field(default_factory=dict)     # id -> Node
  inputs: list = field(default_factory=list)    # ids, in ir_graph_input order
  outputs: list = field(default_factory=list)   # ids
  constants: set = field(default_factory=set)   # every number the description holds
  text: str = ""                                # ir_print of the outputs


class Builder:
  """One ir_graph and its description; each method makes one C node and its Node."""

  def __init__(self, rt, core):
    self.rt, self.lib = rt, core
    self.g = ctypes.c_void_p()
    err = ffi.Error()
    rt.check(core.ir_graph_new(ctypes.byref(self.g), ctypes.byref(err)), err)
    self.arena = core.ir_graph_arena(self.g)
    self.desc = Graph()
    self.c = {}            # id -> ir_node pointer
    self.sym_dims = {}     # name -> SymDim (kept alive: expressions copy it, the arena owns them)

  def close(self):
    self.lib.ir_graph_free(self.g)

  # ---- expressions ----------------------------------------------------------------

  def dim(self, name, lo, hi, multiple_of, role):
    d, err = ffi.SymDim(), ffi.Error()
    self.rt.check(self.lib.sym_dim_init(ctypes.byref(d), name.encode(), lo, hi, multiple_of, ctypes.byref(err)),
                  err)
    self.sym_dims[name] = d
    self.desc.dims[name] = Dim(name, lo, hi, multiple_of, role)
    return d

  def expr(self, spec):
    kind = spec[0]
    if kind == "const":
      self.desc.constants.add(spec[1])
      return self.lib.sym_expr_const(self.arena, spec[1])
    if kind == "dim":
      return self.lib.sym_expr_dim(self.arena, ctypes.byref(self.sym_dims[spec[1]]))
    if kind == "axis":
      return self.c[spec[1]].contents.shape[spec[2]]
    return self.lib.sym_expr_mul(self.arena, self.expr(spec[1]), self.expr(spec[2]))

  def exprs(self, specs):
    return (ctypes.c_void_p * max(len(specs), 1))(*[self.expr(s) for s in specs])

  def extent(self, node, k):
    """(sym_kind name, constant value or None) of node's axis k, from its C shape expression."""
    e = ctypes.cast(self.c[node.id].contents.shape[k], ctypes.POINTER(ffi.SymExpr)).contents
    kind = ffi.SYM_KINDS[e.kind]
    return kind, (e.value if kind == "const" else None)

  def is_one(self, node, k):
    return self.extent(node, k) == ("const", 1)

  def same_extent(self, a, ka, b, kb):
    return self.c[a.id].contents.shape[ka] == self.c[b.id].contents.shape[kb]

  def interval(self, node, k):
    iv, err = ffi.SymInterval(), ffi.Error()
    self.rt.check(self.lib.sym_expr_interval(self.c[node.id].contents.shape[k], ctypes.byref(iv),
                                             ctypes.byref(err)), err)
    return iv.lo, iv.hi

  def largest(self, values):
    """The most elements any node holds when the size dims take values (a name -> value dict),
    from the C shapes: a guard on the harness's memory, not part of any check."""
    b, err, out = ffi.SymBinding(), ffi.Error(), ctypes.c_int64()
    self.lib.sym_binding_init(ctypes.byref(b))
    for name, value in values.items():
      self.rt.check(self.lib.sym_dim_bind(ctypes.byref(b), ctypes.byref(self.sym_dims[name]), value,
                                          ctypes.byref(err)), err)
    most = 0
    for ptr in self.c.values():
      count = 1
      for k in range(ptr.contents.rank):
        self.rt.check(self.lib.sym_expr_eval(ptr.contents.shape[k], ctypes.byref(b), ctypes.byref(out),
                                             ctypes.byref(err)), err)
        count *= max(out.value, 0)
      most = max(most, count)
    return most

  def rank(self, node):
    return self.c[node.id].contents.rank

  # ---- nodes -----------------------------------------------------------------------

  def made(self, ptr, op, dtype, src=(), iv=(-INF, INF), nan=False, **args):
    err = self.lib.ir_graph_error(self.g).contents
    if not ptr or err.code != 0:
      raise BuildError(f"{op}: the builder refused it: {self.rt.error_name(err.code)}: "
                       f"{err.message.decode(errors='replace')}")
    node_id = ptr.contents.id
    self.c[node_id] = ptr
    node = Node(node_id, op, np.dtype(dtype), tuple(s.id for s in src), args, clamp(iv, dtype), nan)
    self.desc.nodes[node_id] = node
    return node

  def input(self, name, dtype, specs, strides=None, offset=None, iv=(-INF, INF)):
    """A contiguous input (strides None) or a strided view whose strides (and offset, when
    given) are dim names."""
    shape = self.exprs(specs)
    if strides is None:
      ptr = self.lib.ir_input(self.g, name.encode(), ffi.DTYPES[dtype], len(specs), shape)
    else:
      ptr = self.lib.ir_input_view(self.g, name.encode(), ffi.DTYPES[dtype], len(specs), shape,
                                   self.exprs([("dim", s) for s in strides]),
                                   self.expr(("dim", offset)) if offset else None)
    node = self.made(ptr, "input", dtype, iv=iv, name=name, shape=list(specs), view=strides is not None)
    self.desc.inputs.append(node.id)
    return node

  def const(self, value, dtype):
    self.desc.constants.add(value)
    return self.made(self.lib.ir_const(self.g, value, ffi.DTYPES[dtype]), "const", dtype, iv=(value, value),
                     value=value)

  def unary(self, op, x, iv, nan=False):
    return self.made(self.lib.ir_unary(self.g, ffi.IR_OP[op], self.c[x.id]), op, x.dtype, (x,), iv, nan)

  def binary(self, op, x, y, iv, nan=False):
    dtype = BOOL if op in COMPARES else x.dtype
    return self.made(self.lib.ir_binary(self.g, ffi.IR_OP[op], self.c[x.id], self.c[y.id]), op, dtype, (x, y),
                     iv, nan)

  def where(self, cond, a, b):
    return self.made(self.lib.ir_where(self.g, self.c[cond.id], self.c[a.id], self.c[b.id]), "where", a.dtype,
                     (cond, a, b), (min(a.iv[0], b.iv[0]), max(a.iv[1], b.iv[1])), a.nan or b.nan)

  def cast(self, x, dtype, iv, nan):
    return self.made(self.lib.ir_cast(self.g, self.c[x.id], ffi.DTYPES[dtype]), "cast", dtype, (x,), iv, nan)

  def expand(self, x, specs):
    return self.made(self.lib.ir_expand(self.g, self.c[x.id], len(specs), self.exprs(specs)), "expand",
                     x.dtype, (x,), x.iv, x.nan, shape=list(specs))

  def reshape(self, x, specs):
    return self.made(self.lib.ir_reshape(self.g, self.c[x.id], len(specs), self.exprs(specs)), "reshape",
                     x.dtype, (x,), x.iv, x.nan, shape=list(specs))

  def permute(self, x, perm):
    arr = (ctypes.c_int * max(len(perm), 1))(*perm)
    return self.made(self.lib.ir_permute(self.g, self.c[x.id], arr), "permute", x.dtype, (x,), x.iv, x.nan,
                     perm=list(perm))

  def transpose(self, x, a, b):
    perm = list(range(self.rank(x)))
    perm[a], perm[b] = perm[b], perm[a]
    return self.made(self.lib.ir_transpose(self.g, self.c[x.id], a, b), "permute", x.dtype, (x,), x.iv, x.nan,
                     perm=perm)

  def slice(self, x, axis, start, stop, step):
    none = lambda v: -2**63 if v is None else v       # UOPC_SLICE_NONE
    self.desc.constants.update(v for v in (start, stop, step) if v is not None)
    ptr = self.lib.ir_slice(self.g, self.c[x.id], axis, none(start), none(stop), step)
    return self.made(ptr, "slice", x.dtype, (x,), x.iv, x.nan, axis=axis, start=start, stop=stop, step=step)

  def select(self, x, axis, index):
    self.desc.constants.add(index)
    ptr = self.lib.ir_select(self.g, self.c[x.id], axis, self.lib.sym_expr_const(self.arena, index))
    return self.made(ptr, "select", x.dtype, (x,), x.iv, x.nan, axis=axis, index=index)

  def reduce(self, op, x, axes, keepdims, iv, nan):
    bits = sum(1 << a for a in axes)
    dtype = I64 if op == "sum" and x.dtype in (I32, BOOL) else x.dtype
    ptr = self.lib.ir_reduce(self.g, ffi.IR_OP[op], self.c[x.id], bits, int(keepdims))
    return self.made(ptr, op, dtype, (x,), iv, nan, axes=sorted(axes), keepdims=keepdims)

  def matmul(self, a, b, iv, nan):
    return self.made(self.lib.ir_matmul(self.g, self.c[a.id], self.c[b.id]), "matmul", a.dtype, (a, b), iv, nan)

  def finish(self, outputs):
    """Records the outputs and the graph's text (ir_print)."""
    self.desc.outputs = [n.id for n in outputs]
    self.desc.text = self.print_text(outputs)
    return self.desc

  def print_text(self, outputs):
    arr = (ffi.NODE_P * len(outputs))(*[self.c[n.id] for n in outputs])
    text, err = ffi.CodegenText(), ffi.Error()
    try:
      self.rt.check(self.lib.ir_print(ctypes.byref(text), self.g, arr, len(outputs), ctypes.byref(err)), err)
      return text.data.decode()
    finally:
      self.lib.codegen_text_fini(ctypes.byref(text))

  def outputs_array(self):
    return (ffi.NODE_P * len(self.desc.outputs))(*[self.c[i] for i in self.desc.outputs])


def clamp(iv, dtype):
  """The interval a dtype can hold: a float bound past 3e38 (f32) may be infinite, integers past
  2^30 may have wrapped (the generator then assumes nothing)."""
  lo, hi = iv
  dtype = np.dtype(dtype)
  if dtype == BOOL:
    return (0, 1)
  if dtype in INTS:
    return (lo, hi) if -2.0**30 < lo <= hi < 2.0**30 else (-INF, INF)
  limit = 3e38 if dtype == F32 else 1e300
  return (lo if lo > -limit else -INF, hi if hi < limit else INF)


def iv_mul(a, b):
  if any(math.isinf(v) for v in a + b):
    return (-INF, INF)
  p = [x * y for x in a for y in b]
  return (min(p), max(p))


def iv_exp(v):
  return math.exp(v) if v < 700 else INF


class Generator:
  """Draws one random graph through a Builder; rng is a numpy Generator."""

  def __init__(self, builder, rng):
    self.b, self.rng = builder, rng
    self.pool = []               # values an op may take
    self.bound_dims = []         # size dims some input binds directly
    self.n_inputs = 0

  # ---- random choices ----------------------------------------------------------------

  def chance(self, p):
    return self.rng.random() < p

  def pick(self, items, weights=None):
    if weights is not None:
      weights = np.asarray(weights, float) / sum(weights)
    return items[int(self.rng.choice(len(items), p=weights))]

  def unused(self):
    """Pool values no node reads yet."""
    read = {i for n in self.b.desc.nodes.values() for i in n.src}
    return [n for n in self.pool if n.id not in read]

  def operand(self):
    """A pool value: the recent ones more likely, and those nothing reads yet (so that most of
    what is built reaches an output)."""
    unused = {n.id for n in self.unused()}
    weights = np.arange(1, len(self.pool) + 1, dtype=float) ** 2 * [4 if n.id in unused else 1 for n in self.pool]
    return self.pick(self.pool, weights)

  # ---- dims and inputs ---------------------------------------------------------------

  def make_dims(self):
    for name in SIZE_NAMES[:int(self.rng.integers(1, len(SIZE_NAMES) + 1))]:
      lo = self.pick((0, 0, 1, 1, 2))
      multiple = self.pick((1, 1, 1, 1, 2, 3))
      self.b.dim(name, lo, self.pick(SIZE_HI), multiple, "size")

  def new_extent(self):
    """A spec for a fresh axis: a bound dim most often, else a constant (0 rarely)."""
    if self.bound_dims and self.chance(0.7):
      return ("dim", self.pick(self.bound_dims))
    return ("const", self.pick((1, 1, 2, 3, 5, 0), (3, 3, 2, 2, 1, 0.3)))

  def primary_shape(self):
    rank = self.pick(range(MAX_RANK + 1), (1, 2.5, 3, 2, 1.5))
    names = list(self.b.desc.dims)
    specs = []
    for _ in range(rank):
      sizes = [n for n in names if self.b.desc.dims[n].role == "size"]
      if self.chance(0.7):
        specs.append(("dim", self.pick(sizes)))
      else:
        specs.append(("const", self.pick((1, 2, 3, 5, 0), (4, 2, 2, 1, 0.5))))
    return specs

  def value_range(self, dtype):
    """The interval inputs of dtype are drawn from (core_reference.draw draws them)."""
    if dtype == BOOL:
      return (0, 1)
    return (-5, 5) if dtype in INTS else (-4, 4)

  def new_input(self, dtype, specs):
    if self.parameters() + 1 > PARAMETERS_MAX:
      raise NoRoom()
    name = f"x{self.n_inputs}"
    self.n_inputs += 1
    for s in specs:
      if s[0] == "dim" and s[1] not in self.bound_dims:
        self.bound_dims.append(s[1])
    if self.chance(0.6) or self.parameters() + len(specs) + 2 > PARAMETERS_MAX:
      node = self.b.input(name, dtype, specs, iv=self.value_range(dtype))
    else:
      strides = [f"{name}_s{k}" for k in range(len(specs))]
      hi = self.pick(STRIDE_HI)
      for s in strides:
        self.b.dim(s, -hi, hi, 1, "stride")
      offset = f"{name}_o" if self.chance(0.5) else None
      if offset:
        self.b.dim(offset, 0, OFFSET_HI, 1, "offset")
      node = self.b.input(name, dtype, specs, strides, offset, iv=self.value_range(dtype))
    return node

  def parameters(self):
    """The kernel's parameters so far, with room for the outputs and the scratch pointer."""
    return len(self.b.desc.dims) + len(self.b.desc.inputs) + MAX_OUTPUTS + 1

  def like(self, x, dtype=None, drop=True):
    """A new input that broadcasts against x: a suffix of x's axes, some of them 1."""
    r = self.b.rank(x)
    keep = int(self.rng.integers(0, r + 1)) if drop and self.chance(0.4) else r
    specs = [("const", 1) if self.chance(0.2) else ("axis", x.id, k) for k in range(r - keep, r)]
    return self.new_input(dtype or x.dtype, specs)

  # ---- operands of one dtype -------------------------------------------------------

  def as_dtype(self, x, dtype):
    if x.dtype == dtype:
      return x
    if dtype in INTS and x.dtype in FLOATS:   # C leaves NaN and out-of-range casts undefined
      if x.nan:
        x = self.b.where(self.b.binary("equal", x, x, (0, 1)), x, self.b.const(0.0, x.dtype))
      if not -2.0**30 < x.iv[0] <= x.iv[1] < 2.0**30:
        x = self.b.unary("tanh", x, (-1, 1))
    return self.cast_to(x, dtype)

  def cast_to(self, x, dtype):
    lo, hi = x.iv
    if dtype == BOOL:
      iv = (0, 1)
    elif dtype in INTS and x.dtype in FLOATS:
      iv = (math.trunc(lo), math.trunc(hi)) if not math.isinf(lo) and not math.isinf(hi) else (-INF, INF)
    else:
      iv = (lo, hi)
    return self.b.cast(x, dtype, iv, x.nan and dtype in FLOATS)

  def broadcasts(self, x, y):
    """Whether the IR broadcasts x and y together (the same extent, or the constant 1)."""
    rx, ry = self.b.rank(x), self.b.rank(y)
    return max(rx, ry) <= MAX_RANK and all(
        self.b.same_extent(x, rx - 1 - j, y, ry - 1 - j) or self.b.is_one(x, rx - 1 - j) or
        self.b.is_one(y, ry - 1 - j) for j in range(min(rx, ry)))

  def partner(self, x, dtype, also=()):
    """A second operand for x (and the values in also, which broadcast with x) of dtype: a
    constant, a new input shaped like x, or a pool value that broadcasts with them all."""
    roll = self.rng.random()
    if roll < 0.25:
      if dtype == BOOL:
        return self.b.const(float(self.chance(0.5)), BOOL)
      value = float(self.pick((-3, -2, -1, 0, 1, 2, 3, 4))) if dtype in INTS else \
          float(self.pick((-2.5, -1.5, -0.75, 0.0, 0.5, 1.0, 1.25, 2.0, 3.0)))
      return self.b.const(value, dtype)
    if roll < 0.65:
      return self.like(x, dtype)
    pool = [y for y in self.pool if all(self.broadcasts(y, z) for z in (x, *also))]
    y = self.pick(pool) if pool else self.like(x)
    return self.as_dtype(y, dtype)

  def positive(self, x):
    """x made positive (for log, sqrt and pow's base), as float."""
    if x.dtype not in FLOATS:
      x = self.cast_to(x, self.pick(FLOATS))
    if x.iv[0] > 0:
      return x
    if not x.nan and x.iv[1] < 1e6 and x.iv[0] > -1e6:
      a = self.b.unary("abs", x, (0, max(abs(x.iv[0]), abs(x.iv[1]))))
      return self.b.binary("add", a, self.b.const(0.5, x.dtype), (0.5, a.iv[1] + 0.5))
    t = self.b.unary("tanh", x, (-1, 1), x.nan)
    return self.b.unary("exp", t, (math.exp(-1) * 0.99, math.exp(1) * 1.01), x.nan)

  # ---- ops ---------------------------------------------------------------------------

  def op_unary(self, x):
    op = self.pick(("neg", "abs", "exp", "log", "sqrt", "tanh"), (2, 2, 2, 2, 2, 2))
    if x.dtype == BOOL or (op not in ("neg", "abs") and x.dtype not in FLOATS):
      x = self.cast_to(x, self.pick(FLOATS + INTS) if op in ("neg", "abs") else self.pick(FLOATS))
    lo, hi = x.iv
    if op == "neg":
      return self.b.unary("neg", x, (-hi, -lo), x.nan)
    if op == "abs":
      m = max(abs(lo), abs(hi))
      return self.b.unary("abs", x, (0 if lo <= 0 <= hi else min(abs(lo), abs(hi)), m), x.nan)
    if op == "exp":
      if hi > 30:
        x = self.b.unary("tanh", x, (-1, 1), x.nan)
        lo, hi = x.iv
      return self.b.unary("exp", x, (iv_exp(lo), iv_exp(hi)), x.nan)
    if op == "tanh":
      return self.b.unary("tanh", x, (math.tanh(lo) if lo > -INF else -1, math.tanh(hi) if hi < INF else 1), x.nan)
    if op == "sqrt":
      if lo < 0:
        x = self.b.unary("abs", x, (0, max(abs(lo), abs(hi))), x.nan)
      return self.b.unary("sqrt", x, (math.sqrt(x.iv[0]), math.sqrt(x.iv[1]) if x.iv[1] < INF else INF), x.nan)
    x = self.positive(x)
    return self.b.unary("log", x, (math.log(x.iv[0]), math.log(x.iv[1]) if x.iv[1] < INF else INF), x.nan)

  def op_binary(self, x):
    op = self.pick(("add", "sub", "mul", "div", "maximum", "minimum", "pow"), (3, 3, 3, 2, 2, 2, 1.5))
    if x.dtype == BOOL or (op in ("div", "pow") and x.dtype not in FLOATS):
      x = self.cast_to(x, self.pick(FLOATS + INTS) if op not in ("div", "pow") else self.pick(FLOATS))
    if op == "pow":
      return self.op_pow(x)
    y = self.partner(x, x.dtype)
    if self.chance(0.3):
      x, y = y, x
    (a0, a1), (b0, b1), nan = x.iv, y.iv, x.nan or y.nan
    if op == "add":
      iv = (a0 + b0, a1 + b1)
    elif op == "sub":
      iv = (a0 - b1, a1 - b0)
    elif op == "mul":
      iv = iv_mul(x.iv, y.iv)
    elif op == "div":
      iv = iv_mul(x.iv, (1 / b1, 1 / b0)) if b0 > 0 or b1 < 0 else (-INF, INF)
      nan = nan or (b0 <= 0 <= b1 and a0 <= 0 <= a1)
    else:
      iv = (min(a0, b0), min(a1, b1)) if op == "minimum" else (max(a0, b0), max(a1, b1))
    if any(math.isinf(v) for v in iv) and op in ("add", "sub"):
      nan = nan or any(math.isinf(v) for v in x.iv + y.iv)
    return self.b.binary(op, x, y, iv, nan)

  def op_pow(self, x):
    base = self.positive(x)
    e = self.partner(base, base.dtype)
    if e.nan or not (-4 <= e.iv[0] and e.iv[1] <= 4):
      e = self.b.unary("tanh", e, (-1, 1), e.nan)
    if base.iv[1] > 1e4:
      base = self.positive(self.b.unary("tanh", base, (-1, 1), base.nan))
    lo, hi = base.iv
    corners = [b ** p for b in (lo, hi) for p in e.iv]
    return self.b.binary("pow", base, e, (min(corners), max(corners)), base.nan or e.nan)

  def op_where(self, x):
    dtype = x.dtype
    y = self.partner(x, dtype)
    op = self.pick(COMPARES)
    if (x.dtype == BOOL or y.dtype == BOOL) and op not in ("equal", "not_equal") and self.chance(0.5):
      op = "equal"
    cond = self.b.binary(op, x, y, (0, 1))
    if self.chance(0.25):
      return cond                              # a bool value
    if dtype == BOOL:
      dtype = self.pick(FLOATS + INTS)
    a = self.as_dtype(x, dtype) if self.chance(0.6) else self.partner(cond, dtype)
    other = self.partner(cond, dtype, also=(a,))
    a, other = (a, other) if self.chance(0.5) else (other, a)
    return self.b.where(cond, a, other)

  def op_cast(self, x):
    choices = [d for d in FLOATS + INTS + (BOOL,) if d != x.dtype]
    return self.as_dtype(x, self.pick(choices))

  def op_expand(self, x):
    r = self.b.rank(x)
    if r >= MAX_RANK:
      return None
    new = int(self.rng.integers(0, MAX_RANK - r + 1))
    specs = [self.new_extent() for _ in range(new)]
    for k in range(r):
      specs.append(self.new_extent() if self.b.is_one(x, k) and self.chance(0.7) else ("axis", x.id, k))
    if new == 0 and all(s == ("axis", x.id, k) for k, s in enumerate(specs)):
      return None
    return self.b.expand(x, specs)

  def through_reshape(self, x):
    """Whether x is read through a reshape with no reduction or matmul (a temporary) between.
    The lowering unravels a reshape's index with // and % by max(extent, 1), which the simplifier
    cannot cancel, so each reshape of a reshape multiplies the index text: three pass the core's
    1024-character limit (UOPC_E_LIMIT). The generator draws one reshape per path."""
    if x.op in ("reshape", "input", "const", "sum", "max", "mean", "matmul"):
      return x.op == "reshape"
    return any(self.through_reshape(self.b.desc.nodes[i]) for i in x.src)

  def op_reshape(self, x):
    if self.through_reshape(x):
      return None
    r = self.b.rank(x)
    specs = [("axis", x.id, k) for k in range(r)]
    move = self.pick(("merge", "flatten", "insert", "drop"), (3, 1, 2, 2))
    if move == "merge" and r >= 2:
      k = int(self.rng.integers(0, r - 1))
      specs[k:k + 2] = [("mul", specs[k], specs[k + 1])]
    elif move == "flatten" and r >= 1:
      spec = specs[0]
      for s in specs[1:]:
        spec = ("mul", spec, s)
      specs = [spec]
    elif move == "drop" and any(self.b.is_one(x, k) for k in range(r)):
      ones = [k for k in range(r) if self.b.is_one(x, k)]
      del specs[self.pick(ones)]
    elif r < MAX_RANK:
      specs.insert(int(self.rng.integers(0, r + 1)), ("const", 1))
    else:
      return None
    return self.b.reshape(x, specs)

  def op_permute(self, x):
    r = self.b.rank(x)
    if r < 2:
      return None
    if self.chance(0.4):
      a, b = (int(v) for v in self.rng.choice(r, size=2, replace=False))
      return self.b.transpose(x, a, b)
    perm = [int(v) for v in self.rng.permutation(r)]
    if perm == list(range(r)):
      perm[0], perm[1] = perm[1], perm[0]
    return self.b.permute(x, perm)

  def op_slice(self, x):
    r = self.b.rank(x)
    if r == 0:
      return None
    bound = lambda: None if self.chance(0.3) else self.pick((int(self.rng.integers(-6, 7)), -20, 20), (8, 1, 1))
    step = self.pick((1, 2, 3, -1, -2, -3), (4, 2, 1, 3, 1, 1))
    return self.b.slice(x, int(self.rng.integers(0, r)), bound(), bound(), step)

  def op_select(self, x):
    r = self.b.rank(x)
    axes = [k for k in range(r) if self.b.interval(x, k)[0] >= 1]
    if not axes:
      return None
    axis = self.pick(axes)
    lo = min(self.b.interval(x, axis)[0], 8)
    index = int(self.rng.integers(0, lo)) if self.chance(0.5) else -int(self.rng.integers(1, lo + 1))
    return self.b.select(x, axis, index)

  def op_reduce(self, x):
    r = self.b.rank(x)
    if r == 0:
      return None
    ops = ["sum"] + (["max"] if x.dtype != BOOL else []) + (["mean"] if x.dtype in FLOATS else [])
    op = self.pick(ops)
    everything = self.chance(0.35)
    axes = list(range(r)) if everything else \
        [k for k in range(r) if self.chance(0.5)] or [int(self.rng.integers(0, r))]
    count = 1
    for k in axes:
      count *= max(self.b.interval(x, k)[1], 0)
    lo, hi = x.iv
    if op == "sum":
      iv = (min(0, lo * count), max(0, hi * count)) if count < INF and not math.isinf(lo + hi) else (-INF, INF)
      nan = x.nan or math.isinf(lo) or math.isinf(hi)
    else:
      iv = x.iv
      nan = x.nan or (op == "mean" and any(self.b.interval(x, k)[0] == 0 for k in axes))
    return self.b.reduce(op, x, axes, not everything and self.chance(0.5), iv, nan)

  def op_matmul(self, x):
    r = self.b.rank(x)
    if r < 2:
      return None
    if x.dtype == BOOL:
      x = self.cast_to(x, self.pick(FLOATS + INTS))
    batch = [("axis", x.id, k) for k in range(r - 2)]
    if self.chance(0.7):      # x @ y
      y = self.new_input(x.dtype, batch + [("axis", x.id, r - 1), self.new_extent()])
      a, b, inner = x, y, self.b.interval(x, r - 1)[1]
    else:                     # y @ x
      y = self.new_input(x.dtype, batch + [self.new_extent(), ("axis", x.id, r - 2)])
      a, b, inner = y, x, self.b.interval(x, r - 2)[1]
    m = max(abs(v) for v in a.iv) * max(abs(v) for v in b.iv) * inner if inner < INF else INF
    iv = (-m, m) if m < INF else (-INF, INF)
    return self.b.matmul(a, b, iv, a.nan or b.nan or m == INF)

  OPS = (("unary", op_unary, 14), ("binary", op_binary, 20), ("where", op_where, 8), ("cast", op_cast, 5),
         ("expand", op_expand, 6), ("reshape", op_reshape, 8), ("permute", op_permute, 6),
         ("slice", op_slice, 10), ("select", op_select, 5), ("reduce", op_reduce, 14),
         ("matmul", op_matmul, 7))

  # ---- the graph ---------------------------------------------------------------------

  def graph(self):
    """Draws dims, 1 to 3 inputs, 3 to 9 ops and 1 to 4 outputs; returns the description."""
    self.make_dims()
    for _ in range(int(self.rng.integers(1, 4))):
      dtype = self.pick((F32, F64, I32, I64, BOOL), (4, 3, 1, 1, 1))
      self.pool.append(self.new_input(dtype, self.primary_shape()))
    ops = int(self.rng.integers(3, 10))
    made = []
    while len(made) < ops:
      _, fn, _ = self.pick(self.OPS, [w for _, _, w in self.OPS])
      try:
        node = fn(self, self.operand())
      except NoRoom:
        continue
      if node is not None:
        self.pool.append(node)
        made.append(node)
    outputs = [n for n in self.unused() if n.op not in ("input", "const")][-MAX_OUTPUTS + 1:] or [made[-1]]
    if self.chance(0.3):       # a value that is also read by another, an input or a constant
      outputs.append(self.pick(self.pool))
    elif self.chance(0.05):
      outputs.append(self.b.const(float(self.pick((0.5, -2.0, 3.0))), self.pick(FLOATS)))
    return self.b.finish(outputs)
