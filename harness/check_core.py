"""check_core.py: the compiler core's lowering (labs/core: ir.h, lower.h, exec.h)
against NumPy on random graphs.

    .venv/bin/python -m harness.check_core --build build/solutions [--seed N] [--graphs N] [--only K]

Each random graph (core_graphs.py) is built through ctypes calls of the ir_* builders, compiled
once by exec_new and run at several bindings of its dims: sizes 0, 1, the bounds and values
between, inputs contiguous or strided views (negative steps, every other element, transposed
storage, stride 0 from np.broadcast_to) whose strides and offset are dims bound per call.
core_reference.py computes NumPy's answer from the description alone, with a bound per element;
outputs sit between poisoned margins that must survive, inputs must be left as they were, and
the process counters must show one program per graph, however many calls. Each graph is also
compiled a second way, through the passes (decompose, fold, CSE, DCE: ir_passes_run) and with fusion and planned
temporaries on and the vectorisable exp (exec_new_flags with LOWER_FUSE | LOWER_VEC_EXP), and every
call runs both: each against NumPy, and the two results equal bit for bit (FUSED_ULPS) wherever no
f32 exp and no float matmul reaches the output (the fused matmul sums in order of k, the default
in lanes), since neither way reassociates any other reduction. The generated C and
CUDA source must hold no dim's upper bound as a number, and the CUDA source must compile (NVRTC
or nvcc, compile only) when a compiler exists. Where a GPU is present too, every call also runs
the CUDA program (exec_cuda.h) on the same inputs and checks it against NumPy the same way. Then fixed graphs that once failed, exec_run's
rejections and the builders' errors, with their exact codes. The last line is
`N passed, N failed`, counting cases (a graph's build, source checks and each call are cases).
"""
import argparse
import ctypes
import re
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from harness import ffi
from harness.common import NOT_IMPLEMENTED, Report, progress, start_check, strides_of
from harness.core_graphs import F32, F64, FLOATS, INF, BuildError, Builder, Generator
from harness.core_reference import PAD, POISON, evaluate, poisoned

LAB = "23.1 core"
DEFAULTS = {"graphs": 60, "bindings": 8}
# The reference's bounds (core_reference.py) are first-order: twice each bound, plus a relative
# floor of 1e-5 (f32) or 1e-12 (f64) on inexact elements only, absorbs second-order terms and
# libm's worst cases. Exact elements (bound 0) must match bit for bit, NaN for NaN.
SLACK = 2.0
RTOL = {F32: 1e-5, F64: 1e-12}
SMALL_VALUE = 7            # size dims take values up to this, but the one drawn at its bound
MAX_ELEMENTS = 200_000     # per node: a binding that makes more is drawn again smaller
COUNTERS = ("graph programs built", "programs constructed", "compiler invocations", "disk cache hits")
# The fused program against the default one, in units in the last place: 0, bit for bit (NaN for
# NaN). LOWER_FUSE changes where a value lives (a register or a temporary of the same dtype), not
# how it is computed: generated C is compiled with -ffp-contract=off (no FMA across a store), a
# reduction's loop order is decided by the reduction alone (lower_reduces_serially), and folding
# computes a constant as the generated C would. A change that reassociated a reduction would have
# to state its bound here. An output that an f32 exp reaches is checked against NumPy alone: exp_f32
# is within 3 ulps of expf (lower.h's LOWER_EXP_F32_ULPS), and what follows the exp may magnify that.
# So is one a float matmul reaches: the fused matmul in rows adds its products in order of k, the
# default one in lane partial sums, and the two roundings differ (both within NumPy's bound).
FUSED_ULPS = 0
NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d*)?(?:[eE][+-]?\d+)?")


class Cases:
  """Counts cases for the summary line; a case fails when it reported at least one failure."""

  def __init__(self, report):
    self.report, self.passed, self.failed, self.bad = report, 0, 0, False

  def fail(self, case, *lines):
    self.bad = True
    self.report.fail(case, *lines)

  def run(self, case, fn, *args):
    """Runs one case; an exception is its failure, never a traceback."""
    self.bad = False
    try:
      fn(*args)
    except Exception as e:   # one FAIL line, never a traceback (as Report.run)
      self.fail(case, f"stopped by {type(e).__name__}: {e}")
    if self.bad:
      self.failed += 1
    else:
      self.passed += 1


class Core:
  """The libraries, a private cache directory and the calls the checks share."""

  def __init__(self, build):
    self.rt = ffi.Runtime(build)
    self.lib = self.rt.core()
    self.fuse_rule, self.no_rule = self.rt.fuse_rule(), None
    self.stubs()
    self.cache = tempfile.mkdtemp(prefix="uopc-core-")
    self.opts = ffi.ProgramOptions(None, None, 0, self.cache.encode())
    self.cuda_opts = ffi.CudaOptions(None, self.cache.encode(), 0)
    err = ffi.Error()
    self.cuda = self.rt.lib.uopc_cuda_compiler_available(ctypes.byref(err)) == 0
    self.no_cuda = err.message.decode(errors="replace")
    err = ffi.Error()
    self.gpu = self.rt.lib.uopc_cuda_available(ctypes.byref(err)) == 0
    self.no_gpu = err.message.decode(errors="replace")

  def stubs(self):
    """The core stands on lab 23.1's symbolic dims: a build whose lab functions are stubs cannot
    run it (its builders would refuse every shape with a misleading code)."""
    arena, err, iv = ctypes.c_void_p(), ffi.Error(), ffi.SymInterval()
    self.rt.check(self.lib.sym_arena_new(ctypes.byref(arena), ctypes.byref(err)), err)
    try:
      d = ffi.SymDim()
      status = self.lib.sym_dim_init(ctypes.byref(d), b"n", 0, 9, 1, ctypes.byref(err)) or \
          self.lib.sym_expr_interval(self.lib.sym_expr_dim(arena, ctypes.byref(d)), ctypes.byref(iv),
                                     ctypes.byref(err))
    finally:
      self.lib.sym_arena_free(arena)
    if status and self.rt.error_name(err.code) == NOT_IMPLEMENTED:
      raise ffi.HarnessError(f"{self.rt.build}: lab 23.1 is not implemented there ({self.failure(err)}); "
                             f"the compiler core needs it: use build/solutions")

  def counters(self, names=COUNTERS):
    return {name: self.rt.counter(name) for name in names}

  def failure(self, err):
    return f"{self.rt.error_name(err.code)} in {err.where.decode(errors='replace')}: " \
           f"{err.message.decode(errors='replace')}"

  def exec_new(self, builder, entry):
    """(exec handle or None, error)."""
    handle, err = ctypes.c_void_p(), ffi.Error()
    outs = builder.outputs_array()
    status = self.lib.exec_new(ctypes.byref(handle), builder.g, outs, len(outs), entry.encode(),
                               ctypes.byref(self.opts), ctypes.byref(err))
    return (handle if status == 0 else None), err

  def exec_fused(self, builder, entry):
    """(exec handle or None, the passes' graph or None, error): the graph through ir_passes_run
    (decompose, fold, CSE, DCE), lowered with LOWER_FUSE, tensorjit's fusion rule and LOWER_VEC_EXP. The
    caller frees both (exec first)."""
    graph, handle, err = ctypes.c_void_p(), ctypes.c_void_p(), ffi.Error()
    outs = builder.outputs_array()
    moved = (ffi.NODE_P * len(outs))()
    if self.lib.ir_passes_run(ctypes.byref(graph), moved, builder.g, outs, len(outs), ffi.IR_PASS_ALL, None,
                              ctypes.byref(err)):
      return None, None, err
    status = self.lib.exec_new_rule(ctypes.byref(handle), graph, moved, len(moved), entry.encode(),
                                    ffi.LOWER_FUSE | ffi.LOWER_VEC_EXP, self.fuse_rule, ctypes.byref(self.opts),
                                    ctypes.byref(err))
    if status and self.fuse_rule and self.rt.error_name(err.code) == NOT_IMPLEMENTED:
      # a build whose lab 23.7 is still a stub: the mechanism is checked without tensorjit's rule
      self.fuse_rule, self.no_rule = None, err.message.decode(errors="replace")
      self.lib.ir_graph_free(graph)
      return self.exec_fused(builder, entry)
    if status:
      self.lib.ir_graph_free(graph)
      return None, None, err
    return handle, graph, err

  def exec_cuda_new(self, builder, entry):
    """(exec_cuda handle or None, error)."""
    handle, err = ctypes.c_void_p(), ffi.Error()
    outs = builder.outputs_array()
    status = self.lib.exec_cuda_new(ctypes.byref(handle), builder.g, outs, len(outs), entry.encode(),
                                    ctypes.byref(self.cuda_opts), ctypes.byref(err))
    return (handle if status == 0 else None), err

  def run(self, handle, outputs, inputs, n_inputs=None, runner="exec_run"):
    """(status, error) of exec_run (or exec_cuda_run) with arrays lent for the call."""
    lent = []
    try:
      lent.extend(self.rt.wrap_new(a) for a in outputs + inputs)
      outs = (ctypes.c_void_p * max(len(outputs), 1))(*lent[:len(outputs)])
      ins = (ctypes.c_void_p * max(len(inputs), 1))(*lent[len(outputs):])
      err = ffi.Error()
      status = getattr(self.lib, runner)(handle, outs, len(outputs), ins,
                                         len(inputs) if n_inputs is None else n_inputs, ctypes.byref(err))
      return status, err
    finally:
      for t in lent:
        self.rt.lib.uopc_tensor_free(t)

  def source_path(self, handle):
    return str(Path(self.rt.lib.uopc_program_dir(self.lib.exec_program(handle)).decode()) / "kernel.c")

  def close(self, keep):
    if keep:
      print(f"generated sources kept under {self.cache}")
    else:
      shutil.rmtree(self.cache, ignore_errors=True)


# ---- the mirrors -------------------------------------------------------------------

def check_layouts(core):
  """ir_node, sym_expr and lower_program in ffi.py against the library: fields read back with the
  values the builders were given."""
  b = Builder(core.rt, core.lib)
  try:
    b.dim("n", 2, 53, 1, "size")
    c = b.const(2.5, F64)
    x = b.input("x", F32, [("dim", "n"), ("const", 3)])
    node, xs = b.c[c.id].contents, b.c[x.id].contents
    n_expr = ctypes.cast(xs.shape[0], ctypes.POINTER(ffi.SymExpr)).contents
    three = ctypes.cast(xs.shape[1], ctypes.POINTER(ffi.SymExpr)).contents
    ok = (node.op, node.dtype, node.rank, node.value, node.id) == (ffi.IR_OP["const"], 1, 0, 2.5, 0) and \
         (xs.op, xs.rank, xs.name, xs.input, xs.contiguous, xs.id) == (0, 2, b"x", 0, 1, 1) and \
         (n_expr.kind, n_expr.dim.name, n_expr.dim.lo, n_expr.dim.hi) == (1, b"n", 2, 53) and \
         (three.kind, three.value) == (0, 3)
    b.desc.outputs = [x.id]
    lp, err = ctypes.POINTER(ffi.LowerProgram)(), ffi.Error()
    outs = b.outputs_array()
    core.rt.check(core.lib.lower_program_new(ctypes.byref(lp), b.g, outs, 1, b"layout", ffi.LOWER_CUDA,
                                             ctypes.byref(err)), err)
    p = lp.contents
    ok = ok and (p.entry, p.backend, p.flags, p.n_outputs, p.n_inputs, p.n_kernels, p.n_dims, p.dims[0].name) == \
        (b"layout", ffi.LOWER_CUDA, 0, 1, 1, 1, 1, b"n") and p.source.len == len(p.source.data)
    core.lib.lower_program_free(lp)
  finally:
    b.close()
  if not ok:
    raise ffi.HarnessError("ir_node, sym_expr or lower_program in harness/ffi.py no longer matches "
                           "ir.h / sym_expr.h / lower.h")


# ---- one graph ---------------------------------------------------------------------------

class GraphRun:
  """One graph: its description, builder, program and what the cases report. make(builder, rng)
  draws or builds the graph and returns its description."""

  def __init__(self, ctx, label, rng, make, only=None):
    self.ctx, self.label, self.rng, self.make, self.only = ctx, label, rng, make, only
    self.entry = "core_" + re.sub(r"\W", "_", label)
    self.builder = Builder(ctx.core.rt, ctx.core.lib)
    self.desc, self.handle, self.path, self.calls, self.cuda_source = None, None, "(not compiled)", 0, None
    self.gpu, self.fused, self.fused_graph = None, None, None

  def close(self):
    if self.handle:
      self.ctx.core.lib.exec_free(self.handle)
    if self.fused:
      self.ctx.core.lib.exec_free(self.fused)
    if self.fused_graph:
      self.ctx.core.lib.ir_graph_free(self.fused_graph)
    if self.gpu:
      self.ctx.core.lib.exec_cuda_free(self.gpu)
    self.builder.close()

  def name(self):
    return f"{self.label} seed={self.ctx.seed}"

  def details(self):
    replay = [f"replay this graph alone: {self.ctx.replay} --only {self.only}"] if self.only is not None else []
    return ["graph:", *("  " + line for line in (self.desc.text if self.desc else "(not built)").splitlines()),
            f"source: {self.path}", *replay]

  def fail(self, what, *lines):
    self.ctx.cases.fail(f"{self.name()}: {what}", *lines, *self.details())

  def case(self, what, fn, *args):
    """Runs one case of this graph; an exception fails it with the graph's details."""
    def guarded():
      try:
        fn(*args)
      except Exception as e:   # one FAIL line with the graph, never a traceback
        self.fail(what, f"stopped by {type(e).__name__}: {e}")
    self.ctx.cases.run(f"{self.name()}: {what}", guarded)

  # ---- build, compile, properties ----

  def build(self):
    try:
      self.desc = self.make(self.builder, self.rng)
    except BuildError as e:
      self.desc = None
      return self.fail("a builder refused a valid call", str(e))
    core = self.ctx.core
    before = core.counters()
    self.handle, err = core.exec_new(self.builder, self.entry)
    if not self.handle:
      return self.fail("exec_new failed", core.failure(err))
    self.path = core.source_path(self.handle)
    delta = {k: v - before[k] for k, v in core.counters().items()}
    if delta["graph programs built"] != 1 or delta["programs constructed"] != 1 or \
       delta["compiler invocations"] + delta["disk cache hits"] != 1:
      self.fail("exec_new's counters", f"expected +1 program, from the compiler or the cache; got {delta}")

  def fused_build(self):
    core = self.ctx.core
    self.fused, self.fused_graph, err = core.exec_fused(self.builder, self.entry + "_fused")
    if not self.fused:
      return self.fail("the passes and exec_new_flags(LOWER_FUSE) failed", core.failure(err))
    plain, fused = core.lib.exec_lowered(self.handle).contents, core.lib.exec_lowered(self.fused).contents
    self.ctx.fused_other += (plain.n_kernels, plain.n_temps) != (fused.n_kernels, fused.n_temps)

  def literals(self):
    """No dim's upper bound as a number in the C or CUDA source (comments aside), unless the graph
    itself holds that number."""
    core = self.ctx.core
    sources = {"C": core.lib.exec_source(self.handle).decode()}
    lp, err = ctypes.POINTER(ffi.LowerProgram)(), ffi.Error()
    outs = self.builder.outputs_array()
    if core.lib.lower_program_new(ctypes.byref(lp), self.builder.g, outs, len(outs), self.entry.encode(),
                                  ffi.LOWER_CUDA, ctypes.byref(err)):
      return self.fail("lower_program_new(LOWER_CUDA) failed", core.failure(err))
    try:
      sources["CUDA"] = lp.contents.source.data.decode()
      kernels = lp.contents.n_kernels
    finally:
      core.lib.lower_program_free(lp)
    held = self.desc.constants | {float(v) for v in NUMBER.findall(re.sub(r"%\d+", "", self.desc.text))}
    for backend, text in sources.items():
      numbers = {float(v) for v in NUMBER.findall(strip_comments(text))}
      leaked = [f"{d.name} in [{d.lo}, {d.hi}]" for d in self.desc.dims.values()
                if d.hi not in held and float(d.hi) in numbers]
      if leaked:
        self.fail(f"the {backend} source holds an upper bound as a number", f"dims: {', '.join(leaked)}")
    self.cuda_source = (sources["CUDA"], kernels)

  def cuda(self):
    core = self.ctx.core
    source, kernels = self.cuda_source
    ptx, err = ctypes.create_string_buffer(4096), ffi.Error()
    progress(f"lab {LAB}: {self.name()}: CUDA compile")
    if core.rt.lib.uopc_cuda_compile(source.encode(), f"{self.entry}_k0".encode(), ctypes.byref(core.cuda_opts),
                                     ptx, len(ptx), ctypes.byref(err)):
      return self.fail("the CUDA source does not compile", core.failure(err))
    declared = set(re.findall(r"\.entry\s+(\w+)", Path(ptx.value.decode()).read_text()))
    missing = [f"{self.entry}_k{k}" for k in range(kernels) if f"{self.entry}_k{k}" not in declared]
    if missing:
      self.fail("the PTX lacks kernels", f"missing {missing}, declared {sorted(declared)}")

  def gpu_build(self):
    core = self.ctx.core
    self.gpu, err = core.exec_cuda_new(self.builder, self.entry + "_gpu")
    if not self.gpu:
      self.fail("exec_cuda_new failed", core.failure(err))

  # ---- calls ----

  def binding(self, j):
    """Values of the size dims for call j: lo, 0 and 1 often, values up to SMALL_VALUE, and in the
    last two calls one dim at its upper bound; smaller when a node would pass MAX_ELEMENTS."""
    dims = [d for d in self.desc.dims.values() if d.role == "size"]
    at_hi = dims[int(self.rng.integers(0, len(dims)))] if j >= self.ctx.bindings - 2 and dims else None
    for cap in (SMALL_VALUE, 3, 1):
      values = {d.name: self.size(d, cap, d is at_hi) for d in dims}
      if self.builder.largest(values) <= MAX_ELEMENTS:
        return values
      at_hi = None
    return {d.name: d.lo + (-d.lo) % d.multiple_of for d in dims}

  def size(self, d, cap, at_hi):
    if at_hi:
      return d.hi - d.hi % d.multiple_of
    allowed = [v for v in range(d.lo, max(min(d.hi, cap), d.lo) + 1) if v % d.multiple_of == 0] or \
        [d.lo + (-d.lo) % d.multiple_of]
    if self.rng.random() < 0.3:
      return allowed[0]
    if self.rng.random() < 0.2 and 1 in allowed:
      return 1
    return allowed[int(self.rng.integers(0, len(allowed)))]

  def call(self, j):
    dims = self.binding(j)
    call = evaluate(self.desc, dims, self.rng)
    wanted = [call.values[i] for i in self.desc.outputs]
    buffers = [poisoned(v.size, v.dtype) for v, _ in wanted]
    outs = [buf[PAD:PAD + v.size].reshape(v.shape) for buf, (v, _) in zip(buffers, wanted)]
    kept = [buf.copy() for buf in call.buffers]
    what = f"call {j}: {describe_call(dims, input_names(self.desc), call.inputs)}"
    progress(f"lab {LAB}: {self.name()}: {what}")
    status, err = self.ctx.core.run(self.handle, outs, call.inputs)
    for name, buf, old in zip(input_names(self.desc), call.buffers, kept):
      if buf.tobytes() != old.tobytes():
        self.fail(what, f"the call changed input '{name}' or the poison around it")
    if call.refused:
      if status == 0 or self.ctx.core.rt.error_name(err.code) != "UOPC_E_BOUNDS":
        self.fail(what, f"max %{call.refused[0]} reduces an empty axis (NumPy refuses it): expected "
                        f"UOPC_E_BOUNDS, got {self.ctx.core.failure(err) if status else 'success'}")
      written(self, what, buffers, outs, whole=True)
      if self.fused:
        status, err = self.ctx.core.run(self.fused, outs, call.inputs)
        if status == 0 or self.ctx.core.rt.error_name(err.code) != "UOPC_E_BOUNDS":
          self.fail(f"{what} fused", f"expected UOPC_E_BOUNDS, got "
                                     f"{self.ctx.core.failure(err) if status else 'success'}")
        written(self, f"{what} fused", buffers, outs, whole=True)
      if self.gpu:
        status, err = self.ctx.core.run(self.gpu, outs, call.inputs, runner="exec_cuda_run")
        if status == 0 or self.ctx.core.rt.error_name(err.code) != "UOPC_E_BOUNDS":
          self.fail(f"{what} on the GPU", f"expected UOPC_E_BOUNDS, got "
                                          f"{self.ctx.core.failure(err) if status else 'success'}")
      return
    if status:
      return self.fail(what, "exec_run failed: " + self.ctx.core.failure(err))
    self.calls += 1
    for k, (out, (v, e)) in enumerate(zip(outs, wanted)):
      if (lines := mismatch(out, v, e)):
        self.fail(f"{what}: out{k} = %{self.desc.outputs[k]}, {v.dtype} {v.shape}", *lines)
    written(self, what, buffers, outs)
    if self.fused:
      self.call_fused(what, call, wanted, kept, outs)
    if self.gpu:
      self.call_gpu(what, call, wanted, kept)

  def through_exp(self, node_id):
    """1 when an f32 exp or a float matmul is node_id or reaches it: the fused program's exp_f32
    is not expf, and its matmul in rows sums each element in order of k where the default one
    sums in lanes (lower_matmul.c), a reassociation."""
    seen, todo = set(), [node_id]
    while todo:
      n = self.desc.nodes[todo.pop()]
      if (n.op == "exp" and n.dtype == F32) or (n.op == "matmul" and n.dtype in FLOATS):
        return True
      todo.extend(s for s in n.src if s not in seen)
      seen.update(n.src)
    return False

  def call_fused(self, what, call, wanted, kept, unfused):
    """The same call through the fused program: against NumPy, and equal to the default program's
    results within FUSED_ULPS."""
    what = f"{what} fused"
    buffers = [poisoned(v.size, v.dtype) for v, _ in wanted]
    outs = [buf[PAD:PAD + v.size].reshape(v.shape) for buf, (v, _) in zip(buffers, wanted)]
    status, err = self.ctx.core.run(self.fused, outs, call.inputs)
    for name, buf, old in zip(input_names(self.desc), call.buffers, kept):
      if buf.tobytes() != old.tobytes():
        self.fail(what, f"the call changed input '{name}' or the poison around it")
    if status:
      return self.fail(what, "exec_run of the LOWER_FUSE program failed: " + self.ctx.core.failure(err))
    self.ctx.fused_calls += 1
    for k, (out, (v, e), plain) in enumerate(zip(outs, wanted, unfused)):
      if (lines := mismatch(out, v, e)):
        self.fail(f"{what}: out{k} = %{self.desc.outputs[k]}, {v.dtype} {v.shape}", *lines)
      if self.through_exp(self.desc.outputs[k]):
        self.ctx.fused_exp += 1
      elif (lines := ulps_apart(out, plain, FUSED_ULPS)):
        self.fail(f"{what}: out{k} = %{self.desc.outputs[k]} against the default lowering", *lines)
      else:
        self.ctx.fused_equal += 1
    written(self, what, buffers, outs)

  def call_gpu(self, what, call, wanted, kept):
    """The same call through the CUDA program, against the same NumPy answer."""
    what = f"{what} on the GPU"
    buffers = [poisoned(v.size, v.dtype) for v, _ in wanted]
    outs = [buf[PAD:PAD + v.size].reshape(v.shape) for buf, (v, _) in zip(buffers, wanted)]
    status, err = self.ctx.core.run(self.gpu, outs, call.inputs, runner="exec_cuda_run")
    for name, buf, old in zip(input_names(self.desc), call.buffers, kept):
      if buf.tobytes() != old.tobytes():
        self.fail(what, f"the call changed input '{name}' or the poison around it")
    if status:
      return self.fail(what, "exec_cuda_run failed: " + self.ctx.core.failure(err))
    self.ctx.gpu_calls += 1
    for k, (out, (v, e)) in enumerate(zip(outs, wanted)):
      if (lines := mismatch(out, v, e)):
        self.fail(f"{what}: out{k} = %{self.desc.outputs[k]}, {v.dtype} {v.shape}", *lines)
    written(self, what, buffers, outs)

  def counted(self, before):
    """No calls built anything; each call that succeeded counted once."""
    core = self.ctx.core
    delta = {k: v - before[k] for k, v in core.counters((*COUNTERS, f"calls {self.entry}")).items()}
    grown = {k: v for k, v in delta.items() if v and k != f"calls {self.entry}"}
    if grown:
      self.fail(f"after {self.ctx.bindings} calls", f"the calls built programs: {grown} (one compile per graph)")
    if delta[f"calls {self.entry}"] != self.calls:
      self.fail(f"after {self.ctx.bindings} calls", f"'calls {self.entry}': expected +{self.calls}, "
                                                     f"got +{delta[f'calls {self.entry}']}")


def input_names(desc):
  return [desc.nodes[i].args["name"] for i in desc.inputs]


def describe_call(dims, names, inputs):
  sizes = ", ".join(f"{k}={v}" for k, v in dims.items())
  layouts = "; ".join(f"{name} {a.shape} strides {strides_of(a)}" for name, a in zip(names, inputs))
  return f"{sizes or 'no dims'} ({layouts or 'no inputs'})"


def strip_comments(text):
  return re.sub(r"//[^\n]*", " ", re.sub(r"/\*.*?\*/", " ", text, flags=re.S))


def ulps_apart(got, want, ulps):
  """None when each element of got is within ulps units in the last place of want's (NaN for NaN;
  integers exactly), else a line naming the first one further and how many are."""
  if got.dtype in FLOATS:
    bits = {4: np.int32, 8: np.int64}[got.dtype.itemsize]
    def ordered(a):   # the float's bits as an integer that counts ulps through zero
      i = a.view(bits).astype(np.int64)
      return np.where(i < 0, np.int64(np.iinfo(bits).min) - i, i)
    with np.errstate(over="ignore"):
      far = np.abs(ordered(got) - ordered(want)) > ulps
    bad = np.flatnonzero((far & ~(np.isnan(got) & np.isnan(want))).ravel())
  else:
    bad = np.flatnonzero((got != want).ravel())
  if bad.size == 0:
    return None
  i = int(bad[0])
  index = tuple(int(v) for v in np.unravel_index(i, got.shape)) if got.ndim else ()
  return [f"index {index}: fused {got.flat[i].item()!r}, default {want.flat[i].item()!r} (at most {ulps} ulps "
          f"apart; {bad.size} of {got.size} elements further)"]


def mismatch(got, want, bound):
  """None when every element of got is within its bound of want, else lines naming the first
  element outside it and how many are."""
  if got.dtype in FLOATS:
    g, w = got.astype(np.float64), want.astype(np.float64)
    with np.errstate(invalid="ignore"):
      tol = SLACK * bound + np.where(bound > 0, RTOL[got.dtype] * np.abs(w), 0.0)
      ok = (g == w) | (np.isnan(g) & np.isnan(w)) | (np.abs(g - w) <= tol) | np.isinf(bound)
  else:
    ok = (got == want) | np.isinf(bound)
  bad = np.flatnonzero(~ok)
  if bad.size == 0:
    return None
  i = int(bad[0])
  index = tuple(int(v) for v in np.unravel_index(i, got.shape)) if got.ndim else ()
  rule = "exact" if bound.flat[i] == 0 else f"bound {SLACK * bound.flat[i]:.3g} + rtol"
  return [f"index {index}: expected {want.flat[i].item()!r} got {got.flat[i].item()!r} ({rule}; "
          f"{bad.size} of {got.size} elements off)"]


def written(run, what, buffers, outs, whole=False):
  """The poison before and after each output (or all of it, for a rejected call) survived."""
  for k, (buf, out) in enumerate(zip(buffers, outs)):
    uint, bits = POISON[buf.dtype]
    raw = buf.view(uint)
    mask = np.ones(raw.size, bool)
    if not whole:
      mask[PAD:PAD + out.size] = False
    changed = np.flatnonzero(mask & (raw != bits))
    if changed.size:
      i = int(changed[0])
      run.fail(what, f"out{k}'s buffer element {i} (the output is elements {PAD}..{PAD + out.size - 1}) is now "
                     f"{buf[i].item()!r}: {'a rejected call wrote' if whole else 'written outside the output'}")


def check_graphs(ctx):
  only = [ctx.only] if ctx.only is not None else range(ctx.graphs)
  start, cases = time.monotonic(), ctx.cases.passed + ctx.cases.failed
  for k in only:
    one_graph(ctx, GraphRun(ctx, f"graph {k}", np.random.default_rng([ctx.seed, k]),
                            lambda b, rng: Generator(b, rng).graph(), only=k))
  count = ctx.cases.passed + ctx.cases.failed - cases
  cuda = "CUDA compiled" if ctx.core.cuda else f"CUDA compile skipped ({ctx.core.no_cuda})"
  fused = f", {ctx.fused_calls} calls fused too ({ctx.fused_other} programs with other loop nests; " \
          f"{ctx.fused_equal} outputs equal bit for bit, {ctx.fused_exp} after an f32 exp or a float matmul against NumPy only)"
  rule = (" with tensorjit's fusion rule" if ctx.core.fuse_rule else
          f" without a fusion rule ({ctx.core.no_rule or 'no libtensorjit.so in this build'})")
  cuda += fused + rule if ctx.fused else ", fused programs skipped (--no-fused)"
  cuda += f", {ctx.gpu_calls} calls run on the GPU" if ctx.core.gpu else f", GPU runs skipped ({ctx.core.no_gpu})"
  return f"{len(only)} graphs, {count} cases ({ctx.bindings} calls per graph), {cuda}, " \
         f"{time.monotonic() - start:.1f}s"


def one_graph(ctx, run):
  """Builds and compiles run's graph, checks its source, and calls it ctx.bindings times."""
  try:
    progress(f"lab {LAB}: {run.name()}: build")
    run.case("build", run.build)
    if not run.handle:
      return
    run.case("bounds in the source", run.literals)
    if ctx.core.cuda and run.cuda_source:
      run.case("CUDA compile", run.cuda)
    if ctx.fused:
      run.case("passes and LOWER_FUSE build", run.fused_build)
    if ctx.core.gpu:
      run.case("CUDA build", run.gpu_build)
    before = ctx.core.counters((*COUNTERS, f"calls {run.entry}"))
    for j in range(ctx.bindings):
      run.case(f"call {j}", run.call, j)
    run.case("counters", run.counted, before)
  finally:
    run.close()


# ---- regressions: graphs that once failed -------------------------------------------------

def scalar_reductions(b, rng):
  """sum, max and mean over every axis: three loop nests without loops in one C function, each
  with its own acc0 and r0."""
  b.dim("n", 1, 53, 1, "size")
  b.dim("m", 1, 59, 1, "size")
  x = b.input("x", F32, [("dim", "n"), ("dim", "m")], iv=(-4, 4))
  y = b.cast(x, F64, x.iv, False)
  return b.finish([b.reduce("sum", x, [0, 1], False, (-1e4, 1e4), False),
                   b.reduce("max", x, [0, 1], False, x.iv, False),
                   b.reduce("mean", y, [0, 1], False, y.iv, False)])


def inner_merges(b, rng):
  """(b, n, k, m) to (b, n*k, m) and (b, n, k*m): element counts whose products group unlike the
  input's, b*n*k*m built as ((b*n)*k)*m."""
  for name, hi in (("b", 53), ("n", 59), ("k", 61), ("m", 67)):
    b.dim(name, 0, hi, 1, "size")
  dims = [("dim", d) for d in "bnkm"]
  x = b.input("x", F64, dims, iv=(-4, 4))
  inner = b.reshape(x, [dims[0], ("mul", dims[1], dims[2]), dims[3]])
  last = b.reshape(x, [dims[0], dims[1], ("mul", dims[2], dims[3])])
  return b.finish([inner, b.unary("neg", last, x.iv)])


REGRESSIONS = {"two scalar reductions": scalar_reductions, "reshapes merging inner axes": inner_merges}
# Names the generated code declares or calls, as an input's name (x + 1 over n, or, for tmp0,
# x + sum(y), whose sum is the temporary tmp0) and as a dim's: each must be refused when the
# graph is lowered (UOPC_E_INVALID), never fail to compile or compile to something else.
TAKEN_NAMES = {"input": ("out0", "tmp0", "i0", "t3", "r1", "acc0", "scratch", "LANES", "g", "total", "rest",
                         "floordiv_i64", "expf", "sqrt", "exp_f32"),
               "dim": ("LANES", "acc0", "scratch", "g", "total", "rest", "max_i64", "tanhf")}


def check_regressions(ctx):
  for k, (label, make) in enumerate(REGRESSIONS.items()):
    one_graph(ctx, GraphRun(ctx, label, np.random.default_rng([ctx.seed, 1000 + k]), make))
  for role, names in TAKEN_NAMES.items():
    for name in names:
      ctx.cases.run(f"{role} named {name}", taken_name, ctx, role, name)
  return f"{', '.join(REGRESSIONS)}; {sum(map(len, TAKEN_NAMES.values()))} names the generated code uses"


def taken_name(ctx, role, name):
  core, case = ctx.core, f"{role} named '{name}' seed={ctx.seed}"
  b = Builder(core.rt, core.lib)
  try:
    dim = name if role == "dim" else "n"
    b.dim(dim, 1, 53, 1, "size")
    x = b.input(name if role == "input" else "x", F32, [("dim", dim)], iv=(-4, 4))
    if name == "tmp0":
      total = b.reduce("sum", b.input("y", F32, [("dim", dim)]), [0], False, (-INF, INF), False)
      out = b.binary("add", x, total, (-INF, INF))
    else:
      out = b.binary("add", x, b.const(1.0, F32), (-3, 5))
    b.finish([out])
    for backend in (ffi.LOWER_C, ffi.LOWER_CUDA):
      lp, err = ctypes.POINTER(ffi.LowerProgram)(), ffi.Error()
      status = core.lib.lower_program_new(ctypes.byref(lp), b.g, b.outputs_array(), 1, b"names", backend,
                                          ctypes.byref(err))
      if status == 0:
        core.lib.lower_program_free(lp)
      if core.rt.error_name(err.code) != "UOPC_E_INVALID" or f"'{name}'" not in err.message.decode():
        ctx.cases.fail(case, f"lower_program_new({'LOWER_CUDA' if backend else 'LOWER_C'}): expected "
                             f"UOPC_E_INVALID naming '{name}', got {core.failure(err) if status else 'success'}",
                       "graph:", *("  " + line for line in b.desc.text.splitlines()))
  finally:
    b.close()


# ---- rejections ----------------------------------------------------------------------

def small_graph(core, max_reduce=False):
  """out = x + y over n in [1, 53] (or, with max_reduce, out = max(x) over n in [0, 53])."""
  b = Builder(core.rt, core.lib)
  b.dim("n", 0 if max_reduce else 1, 53, 1, "size")
  x = b.input("x", F32, [("dim", "n")])
  if max_reduce:
    out = b.reduce("max", x, [0], False, x.iv, False)
  else:
    out = b.binary("add", x, b.input("y", F32, [("dim", "n")]), x.iv)
  b.finish([out])
  handle, err = core.exec_new(b, "core_max" if max_reduce else "core_add")
  if not handle:
    b.close()
    raise ffi.HarnessError(f"exec_new of {b.desc.text!r} failed: {core.failure(err)}")
  return b, handle


def f32(values):
  return np.asarray(values, np.float32)


def check_rejections(ctx):
  core = ctx.core
  b, add = small_graph(core)
  bm, mx = small_graph(core, max_reduce=True)
  try:
    x = f32(np.arange(8))
    calls = [  # (what, handle, outputs, inputs, input count, code)
      ("n = 54 above its bound 53", add, [f32(np.zeros(54))], [f32(np.ones(54)), f32(np.ones(54))], None,
       "UOPC_E_BOUNDS"),
      ("x of 3 and y of 4, both n", add, [f32(np.zeros(3))], [f32(np.ones(3)), f32(np.ones(4))], None,
       "UOPC_E_BOUNDS"),
      ("x f64 for an f32 input", add, [f32(np.zeros(3))], [np.ones(3), f32(np.ones(3))], None, "UOPC_E_DTYPE"),
      ("out f64 for an f32 output", add, [np.zeros(3)], [f32(np.ones(3)), f32(np.ones(3))], None, "UOPC_E_DTYPE"),
      ("x = a[::2], not contiguous, for a contiguous input", add, [f32(np.zeros(4))], [x[::2], f32(np.ones(4))],
       None, "UOPC_E_LAYOUT"),
      ("x[::-1], not contiguous, for a contiguous input", add, [f32(np.zeros(8))], [x[::-1], f32(np.ones(8))],
       None, "UOPC_E_LAYOUT"),
      ("out of 4 elements for n = 3", add, [f32(np.zeros(4))], [f32(np.ones(3)), f32(np.ones(3))], None,
       "UOPC_E_BOUNDS"),
      ("given 1 input of 2", add, [f32(np.zeros(3))], [f32(np.ones(3)), f32(np.ones(3))], 1, "UOPC_E_INVALID"),
      ("max over an empty axis (n = 0)", mx, [np.zeros((), np.float32)], [f32(np.ones(0))], None, "UOPC_E_BOUNDS"),
    ]
    for what, handle, outs, ins, count, code in calls:
      ctx.cases.run(f"exec_run with {what}", rejected, ctx, what, handle, outs, ins, count, code)
    ctx.cases.run("exec_run with out overlapping x", aliased, ctx, add)
  finally:
    for builder, handle in ((b, add), (bm, mx)):
      core.lib.exec_free(handle)
      builder.close()
  return "bounds, equal dims, dtypes, layouts, shapes, input count, empty max, aliasing"


def rejected(ctx, what, handle, outs, ins, count, code):
  """exec_run must fail with code and leave its outputs alone."""
  progress(f"lab {LAB} rejections: {what}")
  kept = [o.copy() for o in outs]
  status, err = ctx.core.run(handle, outs, ins, count)
  got = ctx.core.rt.error_name(err.code) if status else "UOPC_OK"
  if got != code:
    ctx.cases.fail(f"exec_run with {what} seed={ctx.seed}", f"expected {code}, got {got}: "
                                                            f"{err.message.decode(errors='replace')}")
  if any(o.tobytes() != k.tobytes() for o, k in zip(outs, kept)):
    ctx.cases.fail(f"exec_run with {what} seed={ctx.seed}", "a rejected call wrote its output")


def aliased(ctx, handle):
  buf = f32(np.arange(12))
  x, y, out = buf[0:4], f32(np.ones(4)), buf[2:6]
  rejected(ctx, "out = buf[2:6] over x = buf[0:4]", handle, [out], [x, y], None, "UOPC_E_ALIAS")


def check_builder_errors(ctx):
  i32 = np.dtype(np.int32)
  cases = [  # (what, the builder calls on inputs x (n), y (m), z (n, 3), the code ir_graph_error holds)
    ("add of (n) and (m)", lambda b, x, y, z: b.binary("add", x, y, x.iv), "UOPC_E_INVALID"),
    ("add of (3) and (4)", lambda b, x, y, z: b.binary("add", b.input("c", F32, [("const", 3)]),
                                                       b.input("d", F32, [("const", 4)]), x.iv), "UOPC_E_INVALID"),
    ("reshape (n, 3) to (n, 4)", lambda b, x, y, z: b.reshape(z, [("dim", "n"), ("const", 4)]), "UOPC_E_INVALID"),
    ("reshape (n, 3) to (m, 3)", lambda b, x, y, z: b.reshape(z, [("dim", "m"), ("const", 3)]), "UOPC_E_INVALID"),
    ("add of f32 and f64", lambda b, x, y, z: b.binary("add", x, b.cast(x, F64, x.iv, False), x.iv),
     "UOPC_E_DTYPE"),
    ("log of i32", lambda b, x, y, z: b.unary("log", b.cast(x, i32, x.iv, False), x.iv), "UOPC_E_DTYPE"),
    ("matmul of (n) and (n, 3)", lambda b, x, y, z: b.matmul(x, z, x.iv, False), "UOPC_E_INVALID"),
    ("select index 1 of an axis n in [1, 53]", lambda b, x, y, z: b.select(x, 0, 1), "UOPC_E_BOUNDS"),
    ("slice step 0", lambda b, x, y, z: b.slice(x, 0, None, None, 0), "UOPC_E_INVALID"),
    ("where with an f32 condition", lambda b, x, y, z: b.where(x, x, x), "UOPC_E_DTYPE"),
  ]
  for what, calls, code in cases:
    ctx.cases.run(f"builder: {what}", builder_error, ctx, what, calls, code)
  return f"{len(cases)} refusals, each kept as the graph's first error"


def builder_error(ctx, what, calls, code):
  core, case = ctx.core, f"builder: {what} seed={ctx.seed}"
  b = Builder(core.rt, core.lib)
  try:
    b.dim("n", 1, 53, 1, "size")
    b.dim("m", 1, 53, 1, "size")
    x = b.input("x", F32, [("dim", "n")])
    y = b.input("y", F32, [("dim", "m")])
    z = b.input("z", F32, [("dim", "n"), ("const", 3)])
    try:
      calls(b, x, y, z)
      return ctx.cases.fail(case, f"expected {code}, but the builders accepted it")
    except BuildError:
      pass
    err = core.lib.ir_graph_error(b.g).contents
    first = (err.code, err.message.decode(errors="replace"))
    if core.rt.error_name(err.code) != code:
      return ctx.cases.fail(case, f"ir_graph_error: expected {code}, got {core.failure(err)}")
    if core.lib.ir_unary(b.g, ffi.IR_OP["neg"], b.c[x.id]):
      ctx.cases.fail(case, "a builder after the error returned a node")
    err = core.lib.ir_graph_error(b.g).contents
    if (err.code, err.message.decode(errors="replace")) != first:
      ctx.cases.fail(case, f"the first error was replaced: {first} became {core.failure(err)}")
  finally:
    b.close()


# ---- main ----------------------------------------------------------------------------

class Context:
  def __init__(self, args, seed, replay, core, cases):
    self.seed, self.replay, self.core, self.cases = seed, replay, core, cases
    self.graphs, self.bindings, self.only = args.graphs, args.bindings, args.only
    self.gpu_calls, self.fused_calls, self.fused_other, self.fused = 0, 0, 0, not args.no_fused
    self.fused_equal, self.fused_exp = 0, 0


def main(argv=None):
  ap = argparse.ArgumentParser(description="Checks the compiler core's lowering against NumPy on random graphs.")
  ap.add_argument("--build", default="build/solutions", help="the build directory (default build/solutions)")
  ap.add_argument("--seed", type=int, help="the random seed (default: a fresh one, printed)")
  ap.add_argument("--graphs", type=int, default=DEFAULTS["graphs"], help="random graphs to draw")
  ap.add_argument("--bindings", type=int, default=DEFAULTS["bindings"], help="calls per graph")
  ap.add_argument("--only", type=int, help="run graph K of this seed only")
  ap.add_argument("--no-fused", action="store_true",
                  help="skip the second program per graph (the passes, then LOWER_FUSE)")
  args = ap.parse_args(argv)
  seed, replay = start_check(LAB, "check_core", args, DEFAULTS)
  report = Report(LAB, replay)
  cases = Cases(report)
  try:
    core = Core(args.build)
  except (ffi.HarnessError, ffi.UopcError) as e:
    print(f"FAIL lab {LAB} setup: {e}")
    print("0 passed, 1 failed")
    return 2
  ctx = Context(args, seed, replay, core, cases)
  try:
    report.run("layouts", check_layouts, core)
    if not report.failed:
      report.run("random graphs", check_graphs, ctx)
      if args.only is None:
        report.run("regressions", check_regressions, ctx)
        report.run("rejections", check_rejections, ctx)
        report.run("builder errors", check_builder_errors, ctx)
  finally:
    core.close(keep=bool(report.failed))
  status = report.finish()
  failed = cases.failed + (1 if report.failed and not cases.failed else 0)
  print(f"{cases.passed} passed, {failed} failed")
  return status


if __name__ == "__main__":
  raise SystemExit(main())
