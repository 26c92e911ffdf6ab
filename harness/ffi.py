"""ffi.py: ctypes bindings to the runtime (libuopc.so) and the lab libraries.

The harness calls the C code exactly as a foreign caller would: NumPy arrays are lent
to C as heap tensors (uopc_tensor_wrap_new, no copy), failures come back as uopc_error
values and are raised here as UopcError, and the process counters are read by name.

    rt = Runtime("build/labs")
    lab = rt.lab("23.6")                  # build/labs/lib/liblab23_6.so
    err = Error()
    with rt.wrap(x) as tx, rt.wrap(out) as tout:
        rt.check(lab.guarded_jit_call(jit, tx, tout, ctypes.byref(err)), err)
"""
import ctypes
from contextlib import contextmanager
from pathlib import Path

import numpy as np

DTYPES = {np.dtype(np.float32): 0, np.dtype(np.float64): 1,    # uopc_dtype, in tensor.h's order
          np.dtype(np.int32): 2, np.dtype(np.int64): 3, np.dtype(np.bool_): 4}
UOPC_MAX_RANK = 8


class HarnessError(Exception):
  """The harness cannot run a check (a library is missing, an array cannot be lent)."""


class UopcError(Exception):
  """A C function failed: code name ("UOPC_E_BOUNDS"), the function and its message."""

  def __init__(self, code, name, where, message):
    super().__init__(f"{name} in {where or '?'}: {message}")
    self.code, self.name, self.where, self.message = code, name, where, message


class Error(ctypes.Structure):
  """uopc_error from uopc/error.h."""
  _fields_ = [("code", ctypes.c_int), ("where", ctypes.c_char * 64), ("message", ctypes.c_char * 2048)]


class ProgramOptions(ctypes.Structure):
  """uopc_program_options from uopc/program.h."""
  _fields_ = [("compiler", ctypes.c_char_p), ("opt_flags", ctypes.c_char_p),
              ("march_native", ctypes.c_int), ("cache_dir", ctypes.c_char_p),
              ("openmp", ctypes.c_int)]


class GuardedJit(ctypes.Structure):
  """guarded_jit from labs/23.6-one-kernel-many-lengths/guarded_jit.h (read-only here)."""
  _fields_ = [("maximum", ctypes.c_int64), ("options", ProgramOptions), ("program", ctypes.c_void_p),
              ("variants_built", ctypes.c_int64), ("compiled_calls", ctypes.c_int64),
              ("layout_fallbacks", ctypes.c_int64), ("last_path", ctypes.c_int)]


class UopcTensor(ctypes.Structure):
  """uopc_tensor from uopc/tensor.h (read-only here): a storage whose first field is its base,
  then dtype, rank, shape, strides (in elements) and offset."""
  _fields_ = [("storage", ctypes.POINTER(ctypes.c_void_p)), ("dtype", ctypes.c_int), ("rank", ctypes.c_int),
              ("shape", ctypes.c_int64 * UOPC_MAX_RANK), ("strides", ctypes.c_int64 * UOPC_MAX_RANK),
              ("offset", ctypes.c_int64)]


class KvCache(ctypes.Structure):
  """kv_cache from labs/23.5-kv-cache/kv.h (read-only here)."""
  _fields_ = [("layers", ctypes.c_int), ("batch", ctypes.c_int), ("heads", ctypes.c_int),
              ("capacity", ctypes.c_int), ("head_dim", ctypes.c_int), ("k", ctypes.POINTER(UopcTensor)),
              ("v", ctypes.POINTER(UopcTensor)), ("length", ctypes.POINTER(ctypes.c_int64))]


class KvModelConfig(ctypes.Structure):
  """kv_model_config from labs/23.5-kv-cache/model.h."""
  _fields_ = [("layers", ctypes.c_int), ("d_model", ctypes.c_int), ("heads", ctypes.c_int),
              ("vocab", ctypes.c_int), ("d_ff", ctypes.c_int), ("capacity_max", ctypes.c_int),
              ("seed", ctypes.c_uint64)]


GUARDED_JIT_PATHS = {0: "none", 1: "compiled", 2: "fallback"}
DISPATCH_PATHS = {0: "none", 1: "fast", 2: "generic"}              # dispatch_path, dispatch.h's order
DISPATCH_ON_LIMIT = {"run generic": 0, "fail": 1}                  # dispatch_on_limit
MV_FFI_OPS = {"+": 0, "-": 1, "*": 2, "+=": 3}                      # mv_ffi_op, mv_ffi.h's order
MV_MODES = {"versioned": 0, "functional": 1}                       # mv_mode, run.h's order
MV_STORE_PLANS = {-1: None, 0: "direct", 1: "guarded", 2: "staged"}  # mv_store_plan; -1: functional
UOPC_SLICE_NONE = -2**63                                           # tensor.h: an omitted slice bound

# Lab 23.1 (labs/23.1-symbolic-dims) and the kernel graph of the core (labs/core/kernel.h): the
# structs a caller fills or reads. check_23_1.py
# verifies each layout against the library before it uses one (sym_dim_init, sym_binding_init
# and kernel_graph_init clear exactly sizeof of their struct).
SYM_NAME_MAX, SYM_BINDING_MAX = 32, 64
KERNEL_MAX_RANK, KERNEL_MAX_NODES, KERNEL_MAX_INPUTS = 2, 64, 8
KERNEL_OPS = {name: k for k, name in enumerate(   # kernel_op, in kernel.h's order
  ("input", "scalar", "add", "sub", "mul", "div", "maximum", "neg", "exp", "sum"))}


class SymDim(ctypes.Structure):
  """sym_dim from sym_dim.h."""
  _fields_ = [("name", ctypes.c_char * SYM_NAME_MAX), ("lo", ctypes.c_int64), ("hi", ctypes.c_int64),
              ("multiple_of", ctypes.c_int64), ("loop", ctypes.c_int)]


class SymBinding(ctypes.Structure):
  """sym_binding from sym_dim.h."""
  _fields_ = [("count", ctypes.c_int), ("dims", SymDim * SYM_BINDING_MAX),
              ("values", ctypes.c_int64 * SYM_BINDING_MAX)]


class KernelNode(ctypes.Structure):
  """kernel_node from kernel.h (read-only here); shape holds const sym_expr pointers."""


KernelNode._fields_ = [("op", ctypes.c_int), ("dtype", ctypes.c_int), ("rank", ctypes.c_int),
                       ("shape", ctypes.c_void_p * KERNEL_MAX_RANK),
                       ("src", ctypes.POINTER(KernelNode) * 2), ("scalar", ctypes.c_float),
                       ("name", ctypes.c_char * SYM_NAME_MAX), ("id", ctypes.c_int)]


class KernelGraph(ctypes.Structure):
  """kernel_graph from kernel.h: about 5.6 KB, filled by kernel_graph_init and the builders."""
  _fields_ = [("arena", ctypes.c_void_p), ("count", ctypes.c_int),
              ("nodes", KernelNode * KERNEL_MAX_NODES), ("n_inputs", ctypes.c_int),
              ("inputs", ctypes.POINTER(KernelNode) * KERNEL_MAX_INPUTS)]


class SymIndexPlan(ctypes.Structure):
  """sym_index_plan from sym_index.h."""
  _fields_ = [("bits", ctypes.c_int), ("max_elements", ctypes.c_int64)]


class PlanBuffer(ctypes.Structure):
  """plan_buffer from plan.h, passed by value: data and its capacity in elements."""
  _fields_ = [("data", ctypes.c_void_p), ("capacity", ctypes.c_int64)]


# The compiler core (labs/core: ir.h, lower.h, exec.h), libcore.so.
# check_core.py verifies these mirrors against the library before it reads one.
IR_OPS = ("input", "const", "neg", "abs", "exp", "log", "sqrt", "tanh", "cast", "add", "sub", "mul",
          "div", "maximum", "minimum", "pow", "less", "less_equal", "greater", "greater_equal", "equal",
          "not_equal", "where", "expand", "reshape", "permute", "slice", "select", "sum", "max", "mean",
          "matmul", "slice_set", "select_set", "size")
IR_OP = {name: k for k, name in enumerate(IR_OPS)}           # ir_op, in ir_ops.h's order
SYM_KINDS = ("const", "dim", "add", "sub", "mul", "floordiv", "mod", "min", "max")   # sym_kind
LOWER_C, LOWER_CUDA = 0, 1                                      # lower_backend
LOWER_FUSE, LOWER_VEC_EXP = 2, 4                                 # lower_program_new_flags' flags
IR_PASS_ALL = 23                                                 # ir_passes_run: decompose, fold, CSE, DCE (ir_pass.h)


class SymExpr(ctypes.Structure):
  """sym_expr from sym_expr.h (read-only here)."""


SymExpr._fields_ = [("kind", ctypes.c_int), ("value", ctypes.c_int64), ("dim", SymDim),
                    ("a", ctypes.POINTER(SymExpr)), ("b", ctypes.POINTER(SymExpr)),
                    ("hash", ctypes.c_uint64), ("depth", ctypes.c_int)]


class SymInterval(ctypes.Structure):
  """sym_interval from sym_expr.h."""
  _fields_ = [("lo", ctypes.c_int64), ("hi", ctypes.c_int64)]


class IrNode(ctypes.Structure):
  """ir_node from ir.h (read-only here)."""


EXPRS = ctypes.c_void_p * UOPC_MAX_RANK
IrNode._fields_ = [("op", ctypes.c_int), ("dtype", ctypes.c_int), ("rank", ctypes.c_int),
                   ("shape", EXPRS), ("src", ctypes.POINTER(IrNode) * 3), ("id", ctypes.c_int),
                   ("value", ctypes.c_double), ("name", ctypes.c_char * SYM_NAME_MAX), ("input", ctypes.c_int),
                   ("strides", EXPRS), ("offset", ctypes.c_void_p), ("contiguous", ctypes.c_int),
                   ("axis", ctypes.c_int), ("start", ctypes.c_void_p), ("step", ctypes.c_void_p),
                   ("index", ctypes.c_void_p), ("perm", ctypes.c_int * UOPC_MAX_RANK), ("axes", ctypes.c_uint),
                   ("keepdims", ctypes.c_int)]


class CodegenText(ctypes.Structure):
  """codegen_text from codegen.h: a growing string, freed by codegen_text_fini."""
  _fields_ = [("data", ctypes.c_char_p), ("len", ctypes.c_size_t), ("cap", ctypes.c_size_t)]


class LowerProgram(ctypes.Structure):
  """lower_program from lower.h (read-only here)."""
  _fields_ = [("entry", ctypes.c_char * 64), ("backend", ctypes.c_int), ("flags", ctypes.c_uint),
              ("fuse_rule", ctypes.c_void_p), ("graph", ctypes.c_void_p),
              ("n_buffers", ctypes.c_int), ("buffers", ctypes.c_void_p), ("n_outputs", ctypes.c_int),
              ("n_inputs", ctypes.c_int), ("n_temps", ctypes.c_int), ("n_kernels", ctypes.c_int),
              ("kernel_buffer", ctypes.c_void_p), ("n_dims", ctypes.c_int), ("dims", ctypes.POINTER(SymDim)),
              ("index", SymIndexPlan), ("scratch_bytes", ctypes.c_void_p), ("n_nonempty", ctypes.c_int),
              ("nonempty", ctypes.c_void_p), ("signature", ctypes.c_char * 64), ("uses_libm", ctypes.c_int),
              ("source", CodegenText)]


class CudaOptions(ctypes.Structure):
  """uopc_cuda_options from uopc/cuda.h."""
  _fields_ = [("arch", ctypes.c_char_p), ("cache_dir", ctypes.c_char_p), ("force_nvcc", ctypes.c_int)]


# Each lab's C API: name -> (restype, argtypes). Pointers to C objects stay opaque c_void_p.
ERR = ctypes.POINTER(Error)
NODE = ctypes.POINTER(KernelNode)
NODE_OUT = ctypes.POINTER(NODE)
GRAPH = ctypes.POINTER(KernelGraph)
DIM = ctypes.POINTER(SymDim)
BINDING = ctypes.POINTER(SymBinding)
LAB_API = {
  "23.1": {
    "sym_arena_new": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p), ERR]),
    "sym_arena_free": (None, [ctypes.c_void_p]),
    "sym_dim_init": (ctypes.c_int, [DIM, ctypes.c_char_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ERR]),
    "sym_binding_init": (None, [BINDING]),
    "sym_dim_bind": (ctypes.c_int, [BINDING, DIM, ctypes.c_int64, ERR]),
    "sym_binding_get": (ctypes.c_int, [BINDING, DIM, ctypes.POINTER(ctypes.c_int64), ERR]),
    "sym_expr_dim": (ctypes.c_void_p, [ctypes.c_void_p, DIM]),
    "sym_expr_format": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ERR]),
    "kernel_graph_init": (None, [GRAPH, ctypes.c_void_p]),
    "kernel_input": (ctypes.c_int, [GRAPH, ctypes.c_char_p, ctypes.c_int, ctypes.c_int,
                                    ctypes.POINTER(ctypes.c_void_p), NODE_OUT, ERR]),
    "kernel_scalar": (ctypes.c_int, [GRAPH, ctypes.c_float, NODE_OUT, ERR]),
    "kernel_binary": (ctypes.c_int, [GRAPH, ctypes.c_int, NODE, NODE, NODE_OUT, ERR]),
    "kernel_unary": (ctypes.c_int, [GRAPH, ctypes.c_int, NODE, NODE_OUT, ERR]),
    "kernel_sum": (ctypes.c_int, [GRAPH, NODE, NODE_OUT, ERR]),
    "plan_new": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p), GRAPH, NODE, ctypes.c_char_p,
                                ctypes.c_void_p, ERR]),
    "plan_free": (None, [ctypes.c_void_p]),
    "plan_launch": (ctypes.c_int, [ctypes.c_void_p, BINDING, PlanBuffer, ctypes.POINTER(PlanBuffer),
                                   ctypes.c_int, ERR]),
    "plan_resolve_dims": (ctypes.c_int, [ctypes.c_void_p, BINDING, ctypes.POINTER(ctypes.c_int64), ERR]),
    "plan_name": (ctypes.c_char_p, [ctypes.c_void_p]),
    "plan_dim_count": (ctypes.c_int, [ctypes.c_void_p]),
    "plan_dim": (DIM, [ctypes.c_void_p, ctypes.c_int]),
    "plan_index": (ctypes.POINTER(SymIndexPlan), [ctypes.c_void_p]),
  },
  "23.2": {   # a dispatcher stays opaque: dispatch_ffi.h allocates it and reads it for us
    "dispatch_new": (ctypes.c_void_p, [ctypes.c_int64, ctypes.c_int, ctypes.c_int, ctypes.c_int, ERR]),
    "dispatch_free": (None, [ctypes.c_void_p]),
    "dispatch_call": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ERR]),
    "dispatch_explain": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ERR]),
    "dispatch_last_path": (ctypes.c_int, [ctypes.c_void_p]),
    "dispatch_stat": (ctypes.c_int64, [ctypes.c_void_p, ctypes.c_char_p]),
    "dispatch_fast_count": (ctypes.c_int, [ctypes.c_void_p]),
  },
  "23.4": {   # the tracer stays opaque: tp_ffi.h builds the driver's model and reads it for us
    "tp_ffi_two_layer_new": (ctypes.c_void_p, [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                                               ctypes.c_int64, ctypes.c_int64, ERR]),
    "tp_ffi_branch_new": (ctypes.c_void_p, [ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                                            ctypes.c_int64, ctypes.c_int64, ERR]),
    "tp_ffi_free": (None, [ctypes.c_void_p]),
    "tp_ffi_call": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_int64] + [ctypes.c_void_p] * 7 + [ERR]),
    "tp_ffi_variant_count": (ctypes.c_int, [ctypes.c_void_p]),
    "tp_ffi_guards": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]),
    "tp_ffi_stat": (ctypes.c_int64, [ctypes.c_void_p, ctypes.c_char_p]),
  },
  "23.5": {   # a model stays opaque; a cache is read through KvCache
    "kv_model_default": (KvModelConfig, [ctypes.c_int]),
    "kv_model_new": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(KvModelConfig), ERR]),
    "kv_model_free": (None, [ctypes.c_void_p]),
    "kv_cache_init": (ctypes.c_int, [ctypes.POINTER(KvCache), ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                     ctypes.c_int, ctypes.c_int, ERR]),
    "kv_cache_free": (None, [ctypes.POINTER(KvCache)]),
    "kv_decode_step": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(KvCache), ctypes.POINTER(ctypes.c_int),
                                      ctypes.POINTER(ctypes.c_float), ctypes.c_int, ERR]),
    "kv_reset": (ctypes.c_int, [ctypes.POINTER(KvCache), ctypes.c_int, ERR]),
    "kv_reference_logits": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int), ctypes.c_int,
                                           ctypes.POINTER(ctypes.c_float), ERR]),
  },
  "23.3": {   # a program and its runner stay opaque: mv_ffi.h holds them behind a handle
    "mv_ffi_new": (ctypes.c_void_p, [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.POINTER(ctypes.c_int64),
                                     ctypes.POINTER(ctypes.c_int64), ctypes.c_int, ctypes.c_double, ctypes.c_int, ERR]),
    "mv_ffi_free": (None, [ctypes.c_void_p]),
    "mv_ffi_run": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ERR]),
    "mv_ffi_store_plan": (ctypes.c_int, [ctypes.c_void_p]),
    "mv_ffi_stat": (ctypes.c_int64, [ctypes.c_void_p, ctypes.c_char_p]),
  },
  "23.6": {
    "guarded_jit_new": (ctypes.POINTER(GuardedJit), [ctypes.c_int64, ERR]),
    "guarded_jit_call": (ctypes.c_int, [ctypes.POINTER(GuardedJit), ctypes.c_void_p, ctypes.c_void_p, ERR]),
    "guarded_jit_free": (None, [ctypes.POINTER(GuardedJit)]),
  },
}
NODE_P = ctypes.POINTER(IrNode)
CORE_API = {   # the compiler core's builders return NULL after recording an error in the graph
  "sym_expr_const": (ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_int64]),
  "sym_expr_mul": (ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]),
  "sym_expr_interval": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(SymInterval), ERR]),
  "sym_expr_eval": (ctypes.c_int, [ctypes.c_void_p, BINDING, ctypes.POINTER(ctypes.c_int64), ERR]),
  "ir_graph_new": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p), ERR]),
  "ir_graph_free": (None, [ctypes.c_void_p]),
  "ir_graph_arena": (ctypes.c_void_p, [ctypes.c_void_p]),
  "ir_graph_error": (ERR, [ctypes.c_void_p]),
  "ir_graph_input_count": (ctypes.c_int, [ctypes.c_void_p]),
  "ir_input": (NODE_P, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p]),
  "ir_input_view": (NODE_P, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p,
                             ctypes.c_void_p, ctypes.c_void_p]),
  "ir_const": (NODE_P, [ctypes.c_void_p, ctypes.c_double, ctypes.c_int]),
  "ir_unary": (NODE_P, [ctypes.c_void_p, ctypes.c_int, NODE_P]),
  "ir_binary": (NODE_P, [ctypes.c_void_p, ctypes.c_int, NODE_P, NODE_P]),
  "ir_where": (NODE_P, [ctypes.c_void_p, NODE_P, NODE_P, NODE_P]),
  "ir_cast": (NODE_P, [ctypes.c_void_p, NODE_P, ctypes.c_int]),
  "ir_expand": (NODE_P, [ctypes.c_void_p, NODE_P, ctypes.c_int, ctypes.c_void_p]),
  "ir_reshape": (NODE_P, [ctypes.c_void_p, NODE_P, ctypes.c_int, ctypes.c_void_p]),
  "ir_permute": (NODE_P, [ctypes.c_void_p, NODE_P, ctypes.POINTER(ctypes.c_int)]),
  "ir_transpose": (NODE_P, [ctypes.c_void_p, NODE_P, ctypes.c_int, ctypes.c_int]),
  "ir_slice": (NODE_P, [ctypes.c_void_p, NODE_P, ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64]),
  "ir_select": (NODE_P, [ctypes.c_void_p, NODE_P, ctypes.c_int, ctypes.c_void_p]),
  "ir_reduce": (NODE_P, [ctypes.c_void_p, ctypes.c_int, NODE_P, ctypes.c_uint, ctypes.c_int]),
  "ir_matmul": (NODE_P, [ctypes.c_void_p, NODE_P, NODE_P]),
  "ir_print": (ctypes.c_int, [ctypes.POINTER(CodegenText), ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ERR]),
  "codegen_text_fini": (None, [ctypes.POINTER(CodegenText)]),
  "lower_program_new": (ctypes.c_int, [ctypes.POINTER(ctypes.POINTER(LowerProgram)), ctypes.c_void_p,
                                       ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ERR]),
  "lower_program_free": (None, [ctypes.POINTER(LowerProgram)]),
  "exec_new": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int,
                              ctypes.c_char_p, ctypes.c_void_p, ERR]),
  "exec_new_flags": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int,
                                    ctypes.c_char_p, ctypes.c_uint, ctypes.c_void_p, ERR]),
  "exec_new_rule": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int,
                                   ctypes.c_char_p, ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p, ERR]),
  "exec_free": (None, [ctypes.c_void_p]),
  "ir_passes_run": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                   ctypes.c_int, ctypes.c_uint, ctypes.c_void_p, ERR]),
  "exec_run": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ERR]),
  "exec_source": (ctypes.c_char_p, [ctypes.c_void_p]),
  "exec_program": (ctypes.c_void_p, [ctypes.c_void_p]),
  "exec_lowered": (ctypes.POINTER(LowerProgram), [ctypes.c_void_p]),
  "exec_cuda_new": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, ctypes.c_void_p,
                                   ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(CudaOptions), ERR]),
  "exec_cuda_free": (None, [ctypes.c_void_p]),
  "exec_cuda_run": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p,
                                   ctypes.c_int, ERR]),
}
RUNTIME_API = {
  "uopc_tensor_wrap_new": (ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
                                             ctypes.POINTER(ctypes.c_int64),
                                             ctypes.POINTER(ctypes.c_int64), ERR]),
  "uopc_tensor_free": (None, [ctypes.c_void_p]),
  "uopc_tensor_release": (None, [ctypes.c_void_p]),
  "uopc_counter_get": (ctypes.c_int64, [ctypes.c_char_p]),
  "uopc_error_name": (ctypes.c_char_p, [ctypes.c_int]),
  "uopc_program_dir": (ctypes.c_char_p, [ctypes.c_void_p]),
  "uopc_cuda_compiler_available": (ctypes.c_int, [ERR]),
  "uopc_cuda_available": (ctypes.c_int, [ERR]),
  "uopc_cuda_compile": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(CudaOptions),
                                       ctypes.c_char_p, ctypes.c_size_t, ERR]),
}


def _load(path, api):
  if not path.is_file():
    raise HarnessError(f"{path} does not exist: build it first (make all)")
  try:
    lib = ctypes.CDLL(str(path))
    for name, (restype, argtypes) in api.items():
      fn = getattr(lib, name)
      fn.restype, fn.argtypes = restype, argtypes
  except (OSError, AttributeError) as e:
    raise HarnessError(f"cannot load {path}: {e}") from None
  return lib


class Runtime:
  """libuopc.so of one build directory (build/labs, build/solutions, ...)."""

  def __init__(self, build):
    self.build = Path(build)
    self.lib = _load(self.build / "lib" / "libuopc.so", RUNTIME_API)

  def lab(self, lab_id):
    """The lab's library, with its API's signatures set (the runtime is shared, not reloaded)."""
    return _load(self.build / "lib" / f"liblab{lab_id.replace('.', '_')}.so", LAB_API.get(lab_id, {}))

  def core(self):
    """The compiler core (labs/core: ir.h, lower.h, exec.h, kernel.h), with the symbols of lab
    23.1 it stands on (found through the core's own dependency; lab 23.1's plans are above it)."""
    below = {k: v for k, v in LAB_API["23.1"].items() if not k.startswith("plan_")}
    return _load(self.build / "lib" / "libcore.so", {**below, **CORE_API})

  def fuse_rule(self):
    """The address of tensorjit's fusion rule (TJ_FUSE_RULE, a lower_fuse_rule of
    libtensorjit.so: lab 23.7's tj_fuse_rule), for exec_new_rule; None where this build has
    no tensorjit (LOWER_FUSE then stores what must be stored)."""
    path = self.build / "lib" / "libtensorjit.so"
    if not path.is_file():
      return None
    self.tensorjit = _load(path, {})   # kept: the address lives while the library does
    return ctypes.addressof(ctypes.c_char.in_dll(self.tensorjit, "TJ_FUSE_RULE"))

  def error_name(self, code):
    return self.lib.uopc_error_name(code).decode()

  def raise_error(self, err):
    """Raises the UopcError that err (an Error) holds."""
    raise UopcError(err.code, self.error_name(err.code), err.where.decode(errors="replace"),
                    err.message.decode(errors="replace"))

  def check(self, status, err):
    """Raises when a status-returning call failed."""
    if status != 0:
      self.raise_error(err)

  def counter(self, name):
    return self.lib.uopc_counter_get(name.encode())

  @contextmanager
  def wrap(self, arr):
    """Lends arr to C as a heap tensor for the with block; arr must outlive it (it does:
    the block holds a reference)."""
    handle = self.wrap_new(arr)
    try:
      yield handle
    finally:
      self.lib.uopc_tensor_free(handle)

  def wrap_new(self, arr):
    """A uopc_tensor* borrowing arr's memory; free it with uopc_tensor_free."""
    dtype = DTYPES.get(arr.dtype)
    if dtype is None:
      raise HarnessError(f"dtype {arr.dtype} has no uopc_dtype (f32, f64, i32, i64, bool)")
    if arr.ndim > UOPC_MAX_RANK:
      raise HarnessError(f"rank {arr.ndim} above UOPC_MAX_RANK = {UOPC_MAX_RANK}")
    if any(s % arr.itemsize for s in arr.strides):
      raise HarnessError(f"byte strides {arr.strides} are not multiples of the item size {arr.itemsize}")
    shape = (ctypes.c_int64 * max(arr.ndim, 1))(*arr.shape)
    strides = (ctypes.c_int64 * max(arr.ndim, 1))(*(s // arr.itemsize for s in arr.strides))
    err = Error()
    handle = self.lib.uopc_tensor_wrap_new(arr.ctypes.data, dtype, arr.ndim, shape, strides,
                                           ctypes.byref(err))
    if not handle:
      self.raise_error(err)
    return handle
