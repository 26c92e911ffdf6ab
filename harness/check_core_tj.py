"""check_core_tj.py: the core's random graphs through tensorjit (section 23.7) against NumPy.

    .venv/bin/python -m harness.check_core_tj --build build/solutions [--seed N] [--graphs N] [--only K]

check_core.py builds each random graph with the ir_* builders over dims it declares, and compiles
it with exec_new. Here the same graph (the same seed draws the same graph k) is replayed as a
tensorjit model instead: a Python function that 23.4's tracer calls back through ctypes, making
one tp_ operation per node that reaches an output, with every size read from the tensors of the
call (tp_size_at) rather than declared. The model is compiled twice, dynamic (extents are dims,
0 and 1 specialised) and static (one artifact per concrete shape, as a static compiler does), and
both are called at the same bindings of check_core.py's kind: sizes 0 and 1 often, a dim at its
upper bound, inputs contiguous or strided views. Each output must equal core_reference.py's NumPy
answer within its bound (exact elements bit for bit), a max over an empty axis must be refused
with UOPC_E_BOUNDS as NumPy refuses it, no input may change, and calling the first binding again
must build nothing. A graph with more tensors or outputs than a tensorjit call takes, or a size
no input's extent names (tensorjit reads sizes from tensors only), is counted as skipped; one
whose operation needs a dim equal to an expression (a flattened n*m against a length), which the
capture refuses with UOPC_E_UNSUPPORTED by its stated limit, is counted as refused; both are
listed. The last line is `N passed, N failed`, counting graphs (the skipped and refused pass).
"""
import argparse
import ctypes
import re
import traceback

import numpy as np

from harness import ffi
from harness.check_core import Core, GraphRun, describe_call, input_names, mismatch
from harness.common import Report, progress, start_check
from harness.core_graphs import BuildError, Generator
from harness.core_reference import evaluate, used_nodes
from harness.tj_ffi import API, MODEL, TjArg, TjOptions, TpInt, TpSite, to_numpy

LAB = "23.7 tensorjit"
DEFAULTS = {"graphs": 16, "bindings": 6}
MAX_TENSORS, MAX_OUTPUTS = 8, 8          # TJ_MAX_TENSORS, TJ_MAX_OUTPUTS
TJ_ON, TJ_OFF = 1, -1
SITE_FILE = b"check_core_tj.py"
SLICE_NONE = -(2 ** 63)
P, I, I64 = ctypes.c_void_p, ctypes.c_int, ctypes.c_int64
MORE_API = {
  "tp_unary_at": (P, [P, I, P, TpSite]),
  "tp_binary_at": (P, [P, I, P, P, TpSite]),
  "tp_scalar_at": (P, [P, ctypes.c_double, I, TpSite]),
  "tp_where_at": (P, [P, P, P, P, TpSite]),
  "tp_expand_at": (P, [P, P, I, ctypes.POINTER(TpInt), TpSite]),
  "tp_reduce_at": (P, [P, I, P, ctypes.c_uint, I, TpSite]),
  "tp_matmul_at": (P, [P, P, P, TpSite]),
  "tp_int_mul": (TpInt, [P, TpInt, TpInt]),
}


class Skip(Exception):
  """A graph a tensorjit call cannot express: counted, not failed."""


class Limited(Exception):
  """A call tensorjit refuses by its stated limits (EXPRESSION_LIMITS): counted, not failed."""


# tp.c's refusals of two sizes that are equal in a call where neither is a dim (n - 2 against
# n*m, or a constant against one), or of an expression a broadcast would stretch: a capture reads
# a dim as a dim, a constant or an expression, never one expression as another. The chapter states it.
EXPRESSION_LIMITS = ("never one expression with another", "not with an expression")


class Tj:
  """libtensorjit.so of one build, with the tp_ operations a replay needs."""

  def __init__(self, rt):
    self.rt = rt
    self.lib = ffi._load(rt.build / "lib" / "libtensorjit.so", {**API, **MORE_API})


def check_expressible(desc):
  """Raises Skip when a tensorjit call cannot take the graph."""
  if len(desc.inputs) > MAX_TENSORS or len(desc.outputs) > MAX_OUTPUTS:
    raise Skip(f"{len(desc.inputs)} inputs and {len(desc.outputs)} outputs; a call takes {MAX_TENSORS} and "
               f"{MAX_OUTPUTS}")
  if not desc.inputs:
    raise Skip("no inputs: nothing to bind a size from")
  named = {spec[1] for i in desc.inputs for spec in desc.nodes[i].args["shape"] if spec[0] == "dim"}

  def walk(spec):
    if spec[0] == "dim" and spec[1] not in named:
      raise Skip(f"size {spec[1]} is no input's extent")
    if spec[0] == "mul":
      walk(spec[1]), walk(spec[2])
  for node in desc.nodes.values():
    for spec in node.args.get("shape", []):
      walk(spec)


def replay_model(lib, desc, failures):
  """desc as a tj_model: one tp_ call per live node. A Python error is recorded in failures and
  returned as a failure, never raised through C."""
  live = sorted(used_nodes(desc))   # the ids that reach an output, in creation order
  where_dim = {}
  for k, i in enumerate(desc.inputs):
    for axis, spec in enumerate(desc.nodes[i].args["shape"]):
      if spec[0] == "dim":
        where_dim.setdefault(spec[1], (k, axis))

  def model(c, ins, outs, user):
    try:
      h = {i: ins[k].t for k, i in enumerate(desc.inputs)}

      def site(i):
        return TpSite(SITE_FILE, i)

      def size(spec, i):
        if spec[0] == "const":
          return lib.tp_int_const(c, spec[1])
        if spec[0] == "dim":
          k, axis = where_dim[spec[1]]
          return lib.tp_size_at(c, h[desc.inputs[k]], axis, site(i))
        if spec[0] == "axis":
          return lib.tp_size_at(c, h[spec[1]], spec[2], site(i))
        return lib.tp_int_mul(c, size(spec[1], i), size(spec[2], i))

      def shape(specs, i):
        return (TpInt * max(len(specs), 1))(*[size(s, i) for s in specs])

      for i in live:
        node = desc.nodes[i]
        if node.op == "input":
          continue
        src = [h[s] for s in node.src]
        if any(not s for s in src):
          return lib.tp_status(c)
        op, a = node.op, node.args
        if op == "const":
          h[i] = lib.tp_scalar_at(c, a["value"], ffi.DTYPES[node.dtype], site(i))
        elif op == "cast":
          h[i] = lib.tp_cast_at(c, src[0], ffi.DTYPES[node.dtype], site(i))
        elif op == "where":
          h[i] = lib.tp_where_at(c, *src, site(i))
        elif op == "expand":
          h[i] = lib.tp_expand_at(c, src[0], len(a["shape"]), shape(a["shape"], i), site(i))
        elif op == "reshape":
          h[i] = lib.tp_reshape_at(c, src[0], len(a["shape"]), shape(a["shape"], i), site(i))
        elif op == "permute":
          perm = (ctypes.c_int * max(len(a["perm"]), 1))(*a["perm"])
          h[i] = lib.tp_permute_at(c, src[0], len(a["perm"]), perm, site(i))
        elif op == "slice":
          bound = [TpInt(SLICE_NONE, None) if v is None else lib.tp_int_const(c, v) for v in (a["start"], a["stop"])]
          h[i] = lib.tp_slice_at(c, src[0], a["axis"], bound[0], bound[1], a["step"], site(i))
        elif op == "select":
          h[i] = lib.tp_select_at(c, src[0], a["axis"], lib.tp_int_const(c, a["index"]), site(i))
        elif op in ("sum", "max", "mean"):
          bits = sum(1 << x for x in a["axes"])
          h[i] = lib.tp_reduce_at(c, ffi.IR_OP[op], src[0], bits, int(a["keepdims"]), site(i))
        elif op == "matmul":
          h[i] = lib.tp_matmul_at(c, *src, site(i))
        elif len(src) == 1:
          h[i] = lib.tp_unary_at(c, ffi.IR_OP[op], src[0], site(i))
        elif len(src) == 2:
          h[i] = lib.tp_binary_at(c, ffi.IR_OP[op], *src, site(i))
        else:
          raise ValueError(f"no replay for op {op}")
      for k, i in enumerate(desc.outputs):
        outs[k] = h.get(i)
      return lib.tp_status(c)
    except Exception:   # noqa: BLE001 (reported as the graph's failure)
      failures.append(traceback.format_exc(limit=3))
      return 1
  return MODEL(model)


class Replay:
  """One graph's two tensorjit functions and its calls."""

  def __init__(self, ctx, k):
    self.ctx, self.k = ctx, k
    self.run = GraphRun(ctx, f"graph {k}", np.random.default_rng([ctx.seed, k]),
                        lambda b, rng: Generator(b, rng).graph(), only=k)
    self.failures, self.funcs, self.models = [], {}, {}

  def name(self):
    return f"graph {self.k} seed={self.ctx.seed}"

  def close(self):
    for f in self.funcs.values():
      self.ctx.tj.lib.tj_free(f)
    self.run.close()

  def fail(self, what, *lines):
    desc = self.run.desc
    text = desc.text.splitlines() if desc else ["(not built)"]
    self.ctx.report.fail(f"{self.name()}: {what}", *lines, "graph:", *("  " + t for t in text),
                         f"replay this graph alone: {self.ctx.replay} --only {self.k}")
    return 1

  def build(self):
    self.run.desc = self.run.make(self.run.builder, self.run.rng)
    check_expressible(self.run.desc)
    lib = self.ctx.tj.lib
    for mode, dynamic in (("dynamic", TJ_ON), ("static", TJ_OFF)):
      self.models[mode] = replay_model(lib, self.run.desc, self.failures)
      opts = TjOptions(name=f"g{self.k}_{mode}".encode(), n_outputs=len(self.run.desc.outputs), dynamic=dynamic)
      f, err = ctypes.c_void_p(), ffi.Error()
      self.ctx.rt.check(lib.tj_compile(ctypes.byref(f), self.models[mode], None, ctypes.byref(opts),
                                       ctypes.byref(err)), err)
      self.funcs[mode] = f

  def call(self, mode, call, wanted, what):
    """1 when tensorjit's call in mode disagrees with the reference."""
    rt, lib, desc = self.ctx.rt, self.ctx.tj.lib, self.run.desc
    kept = [buf.copy() for buf in call.buffers]
    lent = [rt.wrap_new(a) for a in call.inputs]
    outs = (ffi.UopcTensor * len(desc.outputs))()
    err = ffi.Error()
    try:
      args = (TjArg * len(lent))(*[TjArg(1, t, 0, 0.0) for t in lent])
      status = lib.tj_call(self.funcs[mode], args, len(lent), outs, ctypes.byref(err))
      if self.failures:
        return self.fail(f"{what} ({mode})", "the replay raised in Python:", *self.failures[-1].splitlines())
      for name, buf, old in zip(input_names(desc), call.buffers, kept):
        if buf.tobytes() != old.tobytes():
          return self.fail(f"{what} ({mode})", f"the call changed input '{name}' or the memory around it")
      limited = any(m in err.message.decode() for m in EXPRESSION_LIMITS)
      if status and rt.error_name(status) == "UOPC_E_UNSUPPORTED" and limited:
        raise Limited(err.message.decode())   # the capture stops there, before any kernel could refuse
      if call.refused:
        if status == 0 or rt.error_name(status) != "UOPC_E_BOUNDS":
          return self.fail(f"{what} ({mode})", f"max %{call.refused[0]} reduces an empty axis (NumPy refuses it): "
                                               f"expected UOPC_E_BOUNDS, got "
                                               f"{rt.error_name(status) if status else 'success'}")
        return 0
      if status:
        return self.fail(f"{what} ({mode})", f"tj_call failed: {rt.error_name(status)}: {err.message.decode()}")
      try:
        for j, (v, e) in enumerate(wanted):
          got = to_numpy(outs[j])
          if got.shape != v.shape or got.dtype != v.dtype:
            return self.fail(f"{what} ({mode}): out{j}", f"expected {v.dtype} {v.shape}, got {got.dtype} {got.shape}")
          if (lines := mismatch(got, v, e)):
            return self.fail(f"{what} ({mode}): out{j} = %{desc.outputs[j]}, {v.dtype} {v.shape}", *lines)
      finally:
        for j in range(len(desc.outputs)):
          rt.lib.uopc_tensor_release(ctypes.byref(outs[j]))
      return 0
    finally:
      for t in lent:
        rt.lib.uopc_tensor_free(t)

  def calls(self):
    desc, lib = self.run.desc, self.ctx.tj.lib
    bad, first = 0, None
    for j in range(self.ctx.bindings + 1):
      dims = first if j == self.ctx.bindings else self.run.binding(j)
      first = first or dims
      # the last call repeats the first: the same sizes and the same layouts
      call = evaluate(desc, dims, np.random.default_rng([self.ctx.seed, self.k, j % self.ctx.bindings]))
      wanted = [call.values[i] for i in desc.outputs]
      what = f"call {j}: {describe_call(dims, input_names(desc), call.inputs)}"
      progress(f"lab {LAB}: {self.name()}: {what}")
      for mode in self.funcs:
        before = lib.tj_stats(self.funcs[mode]).artifacts_built
        bad += self.call(mode, call, wanted, what)
        if j == self.ctx.bindings and lib.tj_stats(self.funcs[mode]).artifacts_built != before:
          bad += self.fail(f"{what} ({mode})", "the first binding again built another artifact")
      if bad:
        return 1
    return 0


def one_graph(ctx, k):
  """'passed', 'failed' or 'skipped'."""
  replay = Replay(ctx, k)
  try:
    progress(f"lab {LAB}: {replay.name()}: build")
    try:
      replay.build()
    except BuildError as e:
      return "failed" if replay.fail("a builder refused a valid call", str(e)) else "failed"
    except Skip as e:
      ctx.skips.append(f"graph {k}: {e}")
      return "skipped"
    except Exception as e:   # noqa: BLE001 (one FAIL line, never a traceback)
      replay.fail("build", f"stopped by {type(e).__name__}: {e}")
      return "failed"
    try:
      failed = replay.calls()
    except Limited as e:
      pair = re.search(r"sizes (.*) are both", str(e))
      ctx.limited.append(f"graph {k} ({pair.group(1) if pair else e})")
      return "limited"
    except Exception as e:   # noqa: BLE001
      failed = replay.fail("calls", f"stopped by {type(e).__name__}: {e}")
    for mode, f in replay.funcs.items():
      ctx.artifacts[mode] += ctx.tj.lib.tj_stats(f).artifacts_built
    return "failed" if failed else "passed"
  finally:
    replay.close()


class Context:
  def __init__(self, core, tj, report, args, seed, replay):
    self.core, self.tj, self.report, self.rt = core, tj, report, core.rt
    self.seed, self.replay, self.bindings, self.only = seed, replay, args.bindings, args.only
    self.counts = {"passed": 0, "failed": 0, "skipped": 0, "limited": 0}
    self.limited = []
    self.artifacts = {"dynamic": 0, "static": 0}
    self.skips = []


def check_graphs(ctx, graphs):
  for k in ([ctx.only] if ctx.only is not None else range(graphs)):
    ctx.counts[one_graph(ctx, k)] += 1
  skipped = f"; skipped: {'; '.join(ctx.skips)}" if ctx.skips else ""
  limited = f" ({', '.join(ctx.limited)})" if ctx.limited else ""
  return (f"{ctx.counts['passed']} graphs agree ({ctx.bindings + 1} calls each, dynamic and static), "
          f"{ctx.counts['skipped']} skipped, {ctx.counts['limited']} refused by the expression limit{limited}; "
          f"artifacts: {ctx.artifacts['dynamic']} dynamic, {ctx.artifacts['static']} static{skipped}")


def main(argv=None):
  ap = argparse.ArgumentParser(description="Checks the core's random graphs through tensorjit against NumPy.")
  ap.add_argument("--build", default="build/solutions", help="the build directory (default build/solutions)")
  ap.add_argument("--seed", type=int, help="the random seed (default: a fresh one, printed)")
  ap.add_argument("--graphs", type=int, default=DEFAULTS["graphs"], help="random graphs to draw")
  ap.add_argument("--bindings", type=int, default=DEFAULTS["bindings"], help="calls per graph")
  ap.add_argument("--only", type=int, help="run graph K of this seed only")
  args = ap.parse_args(argv)
  seed, replay = start_check(LAB, "check_core_tj", args, DEFAULTS)
  report = Report(LAB, replay)
  try:
    core = Core(args.build)
    tj = Tj(core.rt)
  except (ffi.HarnessError, ffi.UopcError) as e:
    print(f"FAIL lab {LAB} setup: {e}")
    print("0 passed, 1 failed")
    return 2
  ctx = Context(core, tj, report, args, seed, replay)
  try:
    report.run("the core's random graphs through tj_compile", check_graphs, ctx, args.graphs)
  finally:
    core.close(keep=False)
  status = report.finish()
  failed = ctx.counts["failed"] + (1 if report.failed and not ctx.counts["failed"] else 0)
  print(f"{ctx.counts['passed'] + ctx.counts['skipped'] + ctx.counts['limited']} passed, {failed} failed")
  return status


if __name__ == "__main__":
  raise SystemExit(main())
