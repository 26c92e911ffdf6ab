"""tj_ffi.py: ctypes bindings to tensorjit (libtensorjit.so, section 23.7) and a model made of data.

    tj = Tj("build/solutions")
    model = traced_model(tj.lib, [("slice", 0, ("const", 1), ("less", 1), 1), ("relu",)], failures)

A model is a list of operations (tuples of plain data) that a Python function, called back by
23.4's tracer through ctypes, applies with the tp_ operations; its tensor is argument 0, and an
operation may read the size of another argument (`pick`) or branch on a size (`branch`). The
checks that drive tensorjit share these pieces: check_tensorjit.py and check_core_tj.py in one
process, and check_23_7.py in its worker (harness/remote.py), which is why this module holds no
NumPy answer: those are the checks' own.
"""
import ctypes
import traceback

import numpy as np

from harness import ffi

INT64_MIN = -(2 ** 63)
SUB, FLOORDIV = 0, 1                     # tp_int_op, tp.h's order
CMPS = ("<", "<=", ">", ">=", "==", "!=")   # tp_cmp, tp.h's order
UOPC_F32, UOPC_I32 = 0, 2                # uopc_dtype, tensor.h's order
TJ_TENSOR = 1                            # tj_kind


class TpInt(ctypes.Structure):
  _fields_ = [("value", ctypes.c_int64), ("expr", ctypes.c_void_p)]


class TpSite(ctypes.Structure):
  _fields_ = [("file", ctypes.c_char_p), ("line", ctypes.c_int)]


class TjIn(ctypes.Structure):   # a container's members, the kind and the size last: unused here
  _fields_ = [("t", ctypes.c_void_p), ("i", ctypes.c_int64), ("d", ctypes.c_double), ("items", ctypes.c_void_p),
              ("n", ctypes.c_int), ("names", ctypes.c_void_p), ("kind", ctypes.c_int), ("size", TpInt)]


class TjArg(ctypes.Structure):
  _fields_ = [("kind", ctypes.c_int), ("tensor", ctypes.c_void_p), ("i", ctypes.c_int64), ("d", ctypes.c_double),
              ("items", ctypes.c_void_p), ("n", ctypes.c_int), ("names", ctypes.c_void_p)]


class TjOptions(ctypes.Structure):   # tensorjit.h's tj_options, field for field: C reads all of it
  _fields_ = [("name", ctypes.c_char_p), ("n_outputs", ctypes.c_int), ("arg_names", ctypes.c_void_p),
              ("dynamic", ctypes.c_int), ("specialize_01", ctypes.c_int), ("strict_native", ctypes.c_int),
              ("max_variants", ctypes.c_int), ("on_limit", ctypes.c_int), ("program", ctypes.c_void_p),
              ("grad_args", ctypes.c_uint), ("backend", ctypes.c_int)]


COUNT_NAMES = ("calls", "artifacts_built", "artifact_hits", "guard_failures", "eager_fallbacks", "limit_hits",
               "unkept_runs", "break_runs")


class TjCounts(ctypes.Structure):
  _fields_ = [(name, ctypes.c_int64) for name in COUNT_NAMES] + [("artifacts", ctypes.c_int)]


MODEL = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(TjIn), ctypes.POINTER(ctypes.c_void_p),
                         ctypes.c_void_p)
P, I, I64, D, ERR = ctypes.c_void_p, ctypes.c_int, ctypes.c_int64, ctypes.c_double, ctypes.POINTER(ffi.Error)
API = {
  "tj_compile": (I, [ctypes.POINTER(P), MODEL, P, ctypes.POINTER(TjOptions), ERR]),
  "tj_call": (I, [P, ctypes.POINTER(TjArg), I, ctypes.POINTER(ffi.UopcTensor), ERR]),
  "tj_stats": (TjCounts, [P]),
  "tj_explain": (I, [P, P, ctypes.c_char_p, ctypes.c_size_t, ERR]),
  "tj_free": (None, [P]),
  "tp_status": (I, [P]),
  "tp_size_at": (TpInt, [P, P, I, TpSite]),
  "tp_int_const": (TpInt, [P, I64]),
  "tp_int_add": (TpInt, [P, TpInt, TpInt]),
  "tp_int_mul": (TpInt, [P, TpInt, TpInt]),
  "tp_int_op_at": (TpInt, [P, I, TpInt, TpInt, TpSite]),
  "tp_compare_at": (I, [P, TpInt, I, TpInt, TpSite]),
  "tp_binary_at": (P, [P, I, P, P, TpSite]),
  "tp_scalar_at": (P, [P, D, I, TpSite]),
  "tp_slice_at": (P, [P, P, I, TpInt, TpInt, I64, TpSite]),
  "tp_select_at": (P, [P, P, I, TpInt, TpSite]),
  "tp_reshape_at": (P, [P, P, I, ctypes.POINTER(TpInt), TpSite]),
  "tp_transpose_at": (P, [P, P, TpSite]),
  "tp_permute_at": (P, [P, P, I, ctypes.POINTER(I), TpSite]),
  "tp_relu_at": (P, [P, P, TpSite]),
  "tp_unsqueeze_at": (P, [P, P, I, TpSite]),
  "tp_squeeze_at": (P, [P, P, I, TpSite]),
  "tp_flatten_at": (P, [P, P, I, I, TpSite]),
  "tp_diagonal_at": (P, [P, P, I64, TpSite]),
  "tp_repeat_at": (P, [P, P, I, ctypes.POINTER(I64), TpSite]),
  "tp_cast_at": (P, [P, P, I, TpSite]),
}
# The runtime's own views, which make an input that is itself a view (a storage offset) as C does.
TENSOR = ctypes.POINTER(ffi.UopcTensor)
VIEW_API = {
  "uopc_tensor_slice": (I, [TENSOR, P, I, I64, I64, I64, ERR]),
  "uopc_tensor_reshape": (I, [TENSOR, TENSOR, I, ctypes.POINTER(I64), ERR]),
  "uopc_tensor_permute": (I, [TENSOR, TENSOR, ctypes.POINTER(I), ERR]),
}


class Tj:
  """libtensorjit.so (and the runtime) of one build."""

  def __init__(self, build):
    self.rt = ffi.Runtime(build)
    self.lib = ffi._load(self.rt.build / "lib" / "libtensorjit.so", API)
    self.views = ffi._load(self.rt.build / "lib" / "libuopc.so", VIEW_API)

  def counts(self, f):
    """tj_stats(f) as a dict."""
    c = self.lib.tj_stats(f)
    return {name: getattr(c, name) for name, _ in TjCounts._fields_}


def traced_model(lib, ops, failures, site_file=b"tj_ffi.py"):
  """ops as a tj_model: tp_ calls through ctypes. A Python error is recorded in failures
  and returned as UOPC_E_INVALID, never raised through C."""
  def site():
    return TpSite(site_file, len(failures) + 1)

  def bound(c, x, axis, b):
    """("none",), ("const", v), ("half",): size // 2, ("less", k): size - k, of x's axis."""
    if b[0] == "none":
      return TpInt(INT64_MIN, None)
    if b[0] == "const":
      return lib.tp_int_const(c, b[1])
    size = lib.tp_size_at(c, x, axis, site())
    if b[0] == "half":
      return lib.tp_int_op_at(c, FLOORDIV, size, lib.tp_int_const(c, 2), site())
    return lib.tp_int_op_at(c, SUB, size, lib.tp_int_const(c, b[1]), site())

  def scalar(c, v):
    return lib.tp_scalar_at(c, float(v), UOPC_F32, site())

  def apply(c, ins, x, op):
    kind = op[0]
    if kind == "slice":
      _, axis, start, stop, step = op
      return lib.tp_slice_at(c, x, axis, bound(c, x, axis, start), bound(c, x, axis, stop), step, site())
    if kind == "select":
      return lib.tp_select_at(c, x, op[1], bound(c, x, op[1], op[2]), site())
    if kind == "pick":   # ("pick", axis, k): x[..., len(argument k), ...]
      return lib.tp_select_at(c, x, op[1], lib.tp_size_at(c, ins[op[2]].t, 0, site()), site())
    if kind == "affine":   # ("affine", a, b): a*x + b
      return lib.tp_binary_at(c, ffi.IR_OP["add"], lib.tp_binary_at(c, ffi.IR_OP["mul"], scalar(c, op[1]), x, site()),
                              scalar(c, op[2]), site())
    if kind == "branch":   # ("branch", axis, coef, k, cmp, then_ops, else_ops): on coef*size + k cmp 0
      _, axis, coef, k, cmp, then_ops, else_ops = op
      lhs = lib.tp_int_add(c, lib.tp_int_mul(c, lib.tp_int_const(c, coef), lib.tp_size_at(c, x, axis, site())),
                           lib.tp_int_const(c, k))
      taken = lib.tp_compare_at(c, lhs, CMPS.index(cmp), lib.tp_int_const(c, 0), site())
      return run(c, ins, x, then_ops if taken else else_ops)
    if kind == "reshape":
      shape = (TpInt * len(op[1]))(*[lib.tp_int_const(c, v) for v in op[1]])
      return lib.tp_reshape_at(c, x, len(op[1]), shape, site())
    if kind == "transpose":
      return lib.tp_transpose_at(c, x, site())
    if kind == "relu":
      return lib.tp_relu_at(c, x, site())
    if kind == "unsqueeze":
      return lib.tp_unsqueeze_at(c, x, op[1], site())
    if kind == "squeeze":
      return lib.tp_squeeze_at(c, x, op[1], site())
    if kind == "flatten":
      return lib.tp_flatten_at(c, x, op[1], op[2], site())
    if kind == "diagonal":
      return lib.tp_diagonal_at(c, x, op[1], site())
    if kind == "repeat":
      reps = (ctypes.c_int64 * len(op[1]))(*op[1])
      return lib.tp_repeat_at(c, x, len(op[1]), reps, site())
    if kind == "cast":
      return lib.tp_cast_at(c, lib.tp_cast_at(c, x, UOPC_I32, site()), UOPC_F32, site())
    if kind == "permute":
      perm = (ctypes.c_int * len(op[1]))(*op[1])
      return lib.tp_permute_at(c, x, len(op[1]), perm, site())
    raise ValueError(f"no operation {kind!r}")

  def run(c, ins, x, chain):
    for op in chain:
      if not x:   # the tracer recorded an error: tp_status says which
        break
      x = apply(c, ins, x, op)
    return x

  def model(c, ins, outs, user):
    try:
      outs[0] = run(c, ins, ins[0].t, ops)
      return lib.tp_status(c)
    except Exception:   # noqa: BLE001 (reported as the model's failure)
      failures.append(traceback.format_exc(limit=2))
      return 1
  return MODEL(model)


NP_DTYPE = {v: k for k, v in ffi.DTYPES.items()}


def to_numpy(t):
  """A uopc_tensor's elements as a new array of its dtype."""
  dtype = NP_DTYPE[t.dtype]
  shape, strides = tuple(t.shape[:t.rank]), tuple(t.strides[:t.rank])
  if 0 in shape:
    return np.zeros(shape, dtype)
  lo = t.offset + sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
  hi = t.offset + sum(max(0, (n - 1) * s) for n, s in zip(shape, strides))
  base = ctypes.cast(t.storage, ctypes.POINTER(ctypes.c_void_p)).contents.value
  raw = (ctypes.c_char * ((hi - lo + 1) * dtype.itemsize)).from_address(base + dtype.itemsize * lo)
  flat = np.frombuffer(raw, dtype)
  return np.lib.stride_tricks.as_strided(flat[t.offset - lo:], shape, [dtype.itemsize * s for s in strides]).copy()


def storage_of(handle):
  return ctypes.cast(ctypes.cast(handle, ctypes.POINTER(ffi.UopcTensor)).contents.storage, ctypes.c_void_p).value
