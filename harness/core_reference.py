"""core_reference.py: NumPy's answer for a graph description (core_graphs.py) at one call, and how
far a correct kernel may be from it.

The reference reads the description only (ops, operands, parameters, input shape specs), never
the C nodes or the generated code. Every node gets its value v, computed with NumPy's own rules
(broadcasting, slicing, reshape order, integer wrapping, NaN in maximum), and a bound e >= 0 on
|kernel - v| per element:
  * e = 0 where the kernel must agree bit for bit: integers and bools, moves, neg, abs, where,
    max, casts, comparisons, and float add, sub, mul, div, sqrt, maximum and minimum, which IEEE
    754 rounds correctly in C as in NumPy (uopc compiles with -ffp-contract=off, no fast-math),
    as long as their operands agree bit for bit;
  * libm's exp, log, tanh and pow are within an ulp or two, not correctly rounded, so their
    results carry 8u|v| (u = 2^-24 for f32, 2^-53 for f64) against a reference computed in long
    double and rounded once;
  * sums, means and matmul add in another order than NumPy (lanes combined pairwise, the
    kernel's banner says): recursive summation of N terms is within (N - 1)u sum|x| in any order
    (Higham, Accuracy and Stability, section 4.2), so they carry (N + 8)u sum|x|: an absolute
    floor scaled by the reduction length;
  * an operand's bound propagates to first order, with exact worst cases where they are cheap
    (exp, log, sqrt, div); e = inf marks an element no bound covers (a comparison or a
    truncation whose operands are within their bounds of a tie), which the check skips.
"""
import math
from dataclasses import dataclass, field

import numpy as np

from harness.core_graphs import BOOL, COMPARES, F32, F64, FLOATS, I32, I64, INTS

LD = np.longdouble
UNIT = {F32: 2.0**-24, F64: 2.0**-53}
MATH_ULPS = 8           # libm's exp, log, tanh, pow against the long double reference, in units u
SUM_SLACK = 8           # (N + SUM_SLACK)u sum|x|: the lanes' pairwise levels and the final rounding
PAD = 3                 # poisoned elements before and after every input's elements
POISON = {F32: (np.uint32, 0x7FC0BEEF), F64: (np.uint64, 0x7FF8BEEFBEEFBEEF),   # quiet NaNs with a
          I32: (np.uint32, 0x5A5A5A5A), I64: (np.uint64, 0x5A5A5A5A5A5A5A5A),      # payload, large
          BOOL: (np.uint8, 0xA5)}                                                  # integers, not 0 or 1
LAYOUTS = ("plain", "reversed", "step", "reversed step", "broadcast")


@dataclass
class Call:
  """One call: the input arrays in ir_graph_input order (with the buffers that hold them, to check
  that the kernel left them alone), each node's (v, e), and the used MAX nodes NumPy refuses."""
  dims: dict
  inputs: list = field(default_factory=list)
  buffers: list = field(default_factory=list)
  values: dict = field(default_factory=dict)
  refused: list = field(default_factory=list)


def used_nodes(graph):
  used, todo = set(), list(graph.outputs)
  while todo:
    i = todo.pop()
    if i not in used:
      used.add(i)
      todo.extend(graph.nodes[i].src)
  return used


def evaluate(graph, dims, rng):
  """The reference for one call with the size dims' values dims; rng draws the inputs' values and
  layouts."""
  call = Call(dims)
  used = used_nodes(graph)
  with np.errstate(all="ignore"):
    for i in sorted(graph.nodes):
      node = graph.nodes[i]
      v, e = (rule_compare if node.op in COMPARES else NODE_RULES[node.op])(node, call, rng)
      v = np.asarray(v)
      e = np.broadcast_to(np.asarray(e, np.float64), v.shape)
      call.values[i] = (v, np.where(np.isnan(e), np.inf, e))
      if node.op == "max" and 0 in [call.values[node.src[0]][0].shape[a] for a in node.args["axes"]] and i in used:
        call.refused.append(i)
  return call


# ---- inputs ---------------------------------------------------------------------

def extent(spec, call):
  kind = spec[0]
  if kind == "const":
    return spec[1]
  if kind == "dim":
    return call.dims[spec[1]]
  if kind == "axis":
    return call.values[spec[1]][0].shape[spec[2]]
  return extent(spec[1], call) * extent(spec[2], call)


def draw(shape, dtype, rng):
  """Inputs' values: multiples of 1/4 or uniform in [-4, 4] for floats (the generator assumes that
  interval), integers in [-5, 5], bools half true."""
  if dtype == BOOL:
    return rng.random(shape) < 0.5
  if dtype in INTS:
    return rng.integers(-5, 6, size=shape).astype(dtype)
  if rng.random() < 0.5:
    return (rng.integers(-16, 17, size=shape) / 4).astype(dtype)
  return rng.uniform(-4, 4, size=shape).astype(dtype)


def poisoned(size, dtype, pad=PAD):
  """size elements and pad more on each side, all poison."""
  uint, bits = POISON[dtype]
  return np.full(size + 2 * pad, bits, uint).view(dtype)


def contiguous(shape, dtype, rng):
  """(array, buffer): a C-contiguous array inside a buffer poisoned before and after it."""
  size = math.prod(shape)
  buf = poisoned(size, dtype)
  arr = buf[PAD:PAD + size].reshape(shape)
  arr[...] = draw(shape, dtype, rng)
  return arr, buf


def strided(shape, dtype, rng):
  """(array, buffer): a view with a random layout per axis (LAYOUTS: negative steps, every other
  element, stride 0 from np.broadcast_to) over storage in a random axis order (a transpose), the
  gaps and margins poisoned."""
  r = len(shape)
  kinds = [LAYOUTS[int(k)] for k in rng.choice(len(LAYOUTS), size=r, p=(0.35, 0.2, 0.15, 0.1, 0.2))]
  stored = [1 if k == "broadcast" else n * (2 if "step" in k else 1) for n, k in zip(shape, kinds)]
  order = [int(a) for a in rng.permutation(r)]
  size = math.prod(stored)
  buf = poisoned(size, dtype)
  base = buf[PAD:PAD + size].reshape([stored[a] for a in order]).transpose(np.argsort(order))
  steps = {"plain": 1, "reversed": -1, "step": 2, "reversed step": -2, "broadcast": 1}
  view = base[tuple(slice(None, None, steps[k]) for k in kinds) + (Ellipsis,)]   # a view, even of rank 0
  view[...] = draw(view.shape, dtype, rng)
  return np.broadcast_to(view, shape), buf


def rule_input(node, call, rng):
  shape = tuple(extent(s, call) for s in node.args["shape"])
  arr, buf = (strided if node.args["view"] else contiguous)(shape, node.dtype, rng)
  call.inputs.append(arr)
  call.buffers.append(buf)
  return arr, 0.0


def rule_const(node, call, rng):
  return np.array(node.args["value"], node.dtype), 0.0


# ---- elementwise ----------------------------------------------------------------------

def operands(node, call):
  return [call.values[i] for i in node.src]


def rounding(v, e, dtype, ulps=2):
  """ulps*u|v| where the operands were inexact (e > 0): the kernel rounds other inputs than the
  reference does."""
  u = UNIT.get(dtype, 0.0)
  return np.where(e > 0, ulps * u * np.abs(v.astype(np.float64)), 0.0)


def times(a, b):
  """a*b with 0*inf = 0 (a bound of 0 is exact, whatever it multiplies)."""
  return np.where((a == 0) | (b == 0), 0.0, a * b)


def rule_unary(node, call, rng):
  (x, ex), = operands(node, call)
  dt, u = node.dtype, UNIT.get(node.dtype, 0.0)
  if node.op == "neg":
    return np.negative(x), ex
  if node.op == "abs":
    return np.abs(x), ex
  x64, xl = np.abs(x.astype(np.float64)), x.astype(LD)
  if node.op == "sqrt":   # correctly rounded; |sqrt(a) - sqrt(b)| <= min(|a-b|/sqrt(a), sqrt(|a-b|))
    v = np.sqrt(x)
    return v, np.minimum(ex / np.sqrt(x64), np.sqrt(ex)) + rounding(v, ex, dt)
  v = {"exp": np.exp, "log": np.log, "tanh": np.tanh}[node.op](xl).astype(dt)
  libm = MATH_ULPS * u * np.abs(v.astype(np.float64))
  if node.op == "exp":    # exp(x + d) = exp(x) exp(d)
    return v, times(np.abs(v.astype(np.float64)), np.expm1(ex)) + libm
  if node.op == "log":    # log(x - d) = log(x) + log(1 - d/x), x > 0
    return v, np.where(ex < x64, -np.log1p(-ex / x64), np.inf) + libm
  return v, ex + libm     # tanh' <= 1


def rule_binary(node, call, rng):
  (a, ea), (b, eb) = operands(node, call)
  dt, op = node.dtype, node.op
  if op in ("add", "sub", "mul"):
    v = {"add": np.add, "sub": np.subtract, "mul": np.multiply}[op](a, b)
    if op == "mul":
      e = times(np.abs(a.astype(np.float64)), eb) + times(np.abs(b.astype(np.float64)), ea) + ea * eb
    else:
      e = ea + eb
    return v, e + rounding(v, e, dt)
  if op in ("maximum", "minimum"):
    return (np.maximum if op == "maximum" else np.minimum)(a, b), np.maximum(ea, eb)
  if op == "div":
    v = np.divide(a, b)
    b64 = np.abs(b.astype(np.float64))
    e = np.where(eb < b64, (ea + times(np.abs(v.astype(np.float64)), eb)) / (b64 - eb), np.inf)
    e = np.where((ea == 0) & (eb == 0), 0.0, e)
    return v, e + rounding(v, e, dt)
  # pow, base > 0: a^b = exp(b log a); log a moves by at most d = -log(1 - ea/a)
  v = np.power(a.astype(LD), b.astype(LD)).astype(dt)
  a64, b64 = a.astype(np.float64), b.astype(np.float64)
  d = np.where(ea < a64, -np.log1p(-ea / a64), np.inf)
  moved = times(np.abs(b64), d) + times(np.abs(np.log(a64)) + d, eb)
  mag = np.abs(v.astype(np.float64))
  return v, times(mag, np.expm1(moved)) + MATH_ULPS * UNIT[dt] * mag


def rule_compare(node, call, rng):
  (a, ea), (b, eb) = operands(node, call)
  fn = {"less": np.less, "less_equal": np.less_equal, "greater": np.greater, "greater_equal": np.greater_equal,
        "equal": np.equal, "not_equal": np.not_equal}[node.op]
  v = fn(a, b)
  e = ea + eb
  gap = np.abs(a.astype(np.float64) - b.astype(np.float64))
  return v, np.where((e > 0) & ~(gap > e), np.inf, 0.0)


def rule_where(node, call, rng):
  (c, ec), (a, ea), (b, eb) = operands(node, call)
  return np.where(c, a, b), np.where(ec > 0, np.inf, np.where(c, ea, eb))


def rule_cast(node, call, rng):
  (x, ex), = operands(node, call)
  to = node.dtype
  v = x.astype(to)
  if x.dtype not in FLOATS:
    return v, np.where(ex > 0, np.inf, 0.0)      # integers and bools cast exactly or not at all
  if to == BOOL:                                   # x != 0, NaN is true
    return v, np.where((ex > 0) & ~(np.abs(x.astype(np.float64)) > ex), np.inf, 0.0)
  if to in INTS:                                   # truncation toward zero
    x64 = x.astype(np.float64)
    return v, np.where((ex > 0) & (np.trunc(x64 - ex) != np.trunc(x64 + ex)), np.inf, 0.0)
  return v, ex + rounding(v, ex, to)


# ---- moves -------------------------------------------------------------------------

def moved(node, call, fn):
  (x, ex), = operands(node, call)
  return fn(x), fn(np.broadcast_to(ex, x.shape))


def rule_expand(node, call, rng):
  shape = tuple(extent(s, call) for s in node.args["shape"])
  return moved(node, call, lambda a: np.broadcast_to(a, shape))


def rule_reshape(node, call, rng):
  shape = tuple(extent(s, call) for s in node.args["shape"])
  return moved(node, call, lambda a: np.reshape(a, shape))


def rule_permute(node, call, rng):
  return moved(node, call, lambda a: np.transpose(a, node.args["perm"]))


def rule_slice(node, call, rng):
  k, args = node.args["axis"], node.args
  index = (slice(None),) * k + (slice(args["start"], args["stop"], args["step"]),)
  return moved(node, call, lambda a: a[index])


def rule_select(node, call, rng):
  return moved(node, call, lambda a: np.take(a, node.args["index"], axis=node.args["axis"]))


# ---- reductions and matmul ----------------------------------------------------------

def rule_reduce(node, call, rng):
  (x, ex), = operands(node, call)
  axes, keep, dt = tuple(node.args["axes"]), node.args["keepdims"], node.dtype
  count = math.prod(x.shape[a] for a in axes)
  if node.op == "max":
    if count == 0:       # NumPy refuses it (evaluate records it); the shape is all that is used
      shape = np.sum(np.zeros(x.shape), axis=axes, keepdims=keep).shape
      return np.zeros(shape, x.dtype), np.zeros(shape)
    return np.max(x, axis=axes, keepdims=keep), np.max(np.broadcast_to(ex, x.shape), axis=axes, keepdims=keep)
  if dt not in FLOATS:   # NumPy's sum: bool and i32 give i64, integers wrap as in C
    v = np.sum(x, axis=axes, keepdims=keep)
    return v, np.where(np.max(np.broadcast_to(ex, x.shape), axis=axes, keepdims=keep, initial=0) > 0, np.inf, 0.0)
  total = np.sum(x.astype(LD), axis=axes, keepdims=keep)
  mag = np.sum(np.abs(x.astype(np.float64)), axis=axes, keepdims=keep)
  e = np.sum(np.broadcast_to(ex, x.shape), axis=axes, keepdims=keep) + (count + SUM_SLACK) * UNIT[dt] * mag
  if node.op == "sum":
    v = total.astype(dt)
    return v, e + UNIT[dt] * np.abs(v.astype(np.float64))
  if count == 0:         # 0/0 in both
    return np.full(total.shape, np.nan, dt), np.zeros(total.shape)
  v = (total / count).astype(dt)
  return v, e / count + 2 * UNIT[dt] * np.abs(v.astype(np.float64))


def rule_matmul(node, call, rng):
  (a, ea), (b, eb) = operands(node, call)
  dt = node.dtype
  if dt not in FLOATS:   # exact, unless an operand element is unknown
    unknown = np.matmul((np.broadcast_to(ea, a.shape) > 0) * 1.0, np.ones(b.shape)) + \
        np.matmul(np.ones(a.shape), (np.broadcast_to(eb, b.shape) > 0) * 1.0)
    return np.matmul(a, b), np.where(unknown > 0, np.inf, 0.0)
  a64, b64 = np.abs(a.astype(np.float64)), np.abs(b.astype(np.float64))
  ea, eb = np.broadcast_to(ea, a.shape), np.broadcast_to(eb, b.shape)
  v = np.matmul(a.astype(LD), b.astype(LD)).astype(dt)
  inner = a.shape[-1]
  e = np.matmul(a64, eb) + np.matmul(ea, b64) + np.matmul(ea, eb) + \
      (inner + SUM_SLACK) * UNIT[dt] * np.matmul(a64, b64)
  return v, e + UNIT[dt] * np.abs(v.astype(np.float64))


NODE_RULES = {"input": rule_input, "const": rule_const, "neg": rule_unary, "abs": rule_unary, "exp": rule_unary,
              "log": rule_unary, "sqrt": rule_unary, "tanh": rule_unary, "add": rule_binary, "sub": rule_binary,
              "mul": rule_binary, "div": rule_binary, "maximum": rule_binary, "minimum": rule_binary,
              "pow": rule_binary, "where": rule_where, "cast": rule_cast,
              "expand": rule_expand, "reshape": rule_reshape, "permute": rule_permute, "slice": rule_slice,
              "select": rule_select, "sum": rule_reduce, "max": rule_reduce, "mean": rule_reduce,
              "matmul": rule_matmul}
