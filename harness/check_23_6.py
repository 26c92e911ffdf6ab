"""check_23_6.py: lab 23.6 (one C kernel for many lengths) against NumPy, through ctypes.

    .venv/bin/python -m harness.check_23_6 --build build/labs [--seed N]

Random lengths in [1, maximum] (always 1, 7, 31, 64 and maximum), f32 and f64, contiguous and
strided inputs, contiguous and strided outputs: out must equal x*x + 1, every byte of the output
buffer outside the view must keep its poison, x must not change, and the call must take the
compiled path exactly for contiguous f32 vectors. Then in-place calls and a partial overlap,
the rejections, and the counters of the chapter's example.
"""
import argparse
import ctypes
from contextlib import contextmanager

import numpy as np

from harness import ffi
from harness.common import (Report, compare, connect, describe, died, dtype_name, error_data, failure, progress,
                            start_check, strides_of, worker_options)
from harness.remote import RemoteError, WorkerDied

LAB = "23.6"
RTOL = {np.dtype(np.float32): 1e-6, np.dtype(np.float64): 1e-12}
POISON_BITS = {np.dtype(np.float32): (np.uint32, 0x7FC0DEAD),   # quiet NaNs with a payload
               np.dtype(np.float64): (np.uint64, 0x7FF8DEADDEADBEEF),
               np.dtype(np.int32): (np.uint32, 0x7FC0DEAD)}
POISON_TAIL = 16
INT32_MAX = 2**31 - 1
X_LAYOUTS = {  # name -> (base length for n, view of the base)
  "contiguous": (lambda n: n + 5, lambda b, n: b[:n]),
  "x[::2]": (lambda n: 2 * n + 1, lambda b, n: b[::2][:n]),
  "x[::-1]": (lambda n: n + 5, lambda b, n: b[::-1][:n]),
  "x[::3]": (lambda n: 3 * n, lambda b, n: b[::3][:n]),
}
OUT_STEPS = (1, 2)   # out is buf[:n] or buf[:2n:2] of a poisoned buffer


class Lab:
  """The worker's half: the calls into the lab library, with plain data in and out (see
  harness/remote.py). Jits stay here, named by ids."""

  def __init__(self, build):
    self.rt = ffi.Runtime(build)
    self.lib = self.rt.lab(LAB)
    self.jits = {}

  def error(self, status, err):
    return error_data(self.rt, status, err)

  def new(self, maximum):
    """[jit id or None, error]."""
    err = ffi.Error()
    jit = self.lib.guarded_jit_new(maximum, ctypes.byref(err))
    if not jit:
      return [None, self.error(1, err)]
    if jit.contents.maximum != maximum:
      raise ffi.HarnessError("struct guarded_jit in harness/ffi.py no longer matches guarded_jit.h")
    self.jits[len(self.jits)] = jit
    return [len(self.jits) - 1, self.error(0, err)]

  def free(self, jit):
    self.lib.guarded_jit_free(self.jits.pop(jit))

  def fields(self, jit):
    c = self.jits[jit].contents
    return {"variants built": c.variants_built, "compiled calls": c.compiled_calls,
            "layout fallbacks": c.layout_fallbacks}

  def call(self, jit, x, out):
    """[status, error, the jit's counts afterwards] of guarded_jit_call on two arrays lent for
    the call."""
    err = ffi.Error()
    with self.rt.wrap(x) as tx, self.rt.wrap(out) as tout:
      status = self.lib.guarded_jit_call(self.jits[jit], tx, tout, ctypes.byref(err))
    return [status, self.error(status, err), self.fields(jit)]

  def counters(self, names):
    return {name: self.rt.counter(name) for name in names}


@contextmanager
def new_jit(lab, maximum):
  """A jit id for the with block; raises UopcError when guarded_jit_new fails."""
  jit, err = lab.new(maximum)
  if jit is None:
    raise ffi.UopcError(0, err["name"], err["where"], err["message"])
  try:
    yield jit
  finally:
    lab.free(jit)


def poisoned(n, dtype, step=1):
  """(buffer, out view): the view covers n elements every step-th; all else is poison."""
  uint, bits = POISON_BITS[np.dtype(dtype)]
  buf = np.full(step * n + POISON_TAIL, bits, dtype=uint).view(dtype)
  return buf, buf[:step * n:step]


def poison_intact(buf, out):
  """None, or what the call overwrote in buf outside the out view (a view of buf)."""
  uint, bits = POISON_BITS[buf.dtype]
  mask = np.ones(buf.size, bool)
  step = out.strides[0] // buf.itemsize if out.ndim == 1 and out.size else 1
  mask[:out.size * step:step] = False
  changed = np.flatnonzero(mask & (buf.view(uint) != bits))
  if changed.size == 0:
    return None
  i = int(changed[0])
  return f"output buffer element {i} is now {buf[i].item()!r} ({changed.size} poisoned elements changed)"


def check_values(lab, rng, maximum, seed, report, count):
  lengths = [n for n in (1, 7, 31, 64) if n < maximum] + [maximum] + \
            [int(v) for v in rng.integers(1, maximum + 1, size=count)]
  cases = 0
  with new_jit(lab, maximum) as jit:
    for n in lengths:
      for dtype in (np.float32, np.float64):
        for layout, (base_len, view) in X_LAYOUTS.items():
          for step in OUT_STEPS:
            base = (rng.standard_normal(base_len(n)) * 8).astype(dtype)
            one_case(lab, jit, base, view(base, n), step, layout, seed, report)
            cases += 1
  return f"{cases} cases, lengths 1..{maximum}, f32/f64, {len(X_LAYOUTS)} input and {len(OUT_STEPS)} output layouts"


def one_case(lab, jit, base, x, step, layout, seed, report):
  """out = x*x + 1 for x a view of base; out is every step-th element of a poisoned buffer."""
  buf, out = poisoned(x.size, x.dtype, step)
  case = f"length={x.size} dtype={dtype_name(x)} x={layout} (stride {strides_of(x)[0]}) " \
         f"out stride {step} seed={seed}"
  before, counts = base.copy(), lab.fields(jit)
  want_compiled = x.dtype == np.float32 and x.flags.c_contiguous and out.flags.c_contiguous
  progress(f"lab {LAB} values: {case}")
  status, err, after = lab.call(jit, x, out)
  if status != 0:
    return report.fail(case, "guarded_jit_call failed: " + failure(err))
  if (mismatch := compare(out, x * x + 1, RTOL[x.dtype])):
    return report.fail(case, *mismatch)
  if (overwritten := poison_intact(buf, out)):
    return report.fail(case, "wrote outside the output view: " + overwritten)
  if base.tobytes() != before.tobytes():
    return report.fail(case, "the call changed its input x")
  if (path := wrong_path(counts, after, want_compiled)):
    report.fail(case, path)


def wrong_path(before, after, want_compiled):
  got = tuple(after[k] - before[k] for k in ("compiled calls", "layout fallbacks"))
  want = (1, 0) if want_compiled else (0, 1)
  if got != want:
    path = "the compiled kernel" if want_compiled else "the eager fallback"
    return (f"expected {path}: compiled calls +{want[0]}, layout fallbacks +{want[1]}; "
            f"got +{got[0]}, +{got[1]}")
  return None


def check_aliasing(lab, rng, maximum, seed, report):
  n = min(37, maximum)
  with new_jit(lab, maximum) as jit:
    for dtype, layout in ((np.float32, "contiguous"), (np.float64, "contiguous"), (np.float32, "x[::2]")):
      base_len, view = X_LAYOUTS[layout]
      base = (rng.standard_normal(base_len(n)) * 8).astype(dtype)
      x = view(base, n)
      want = x * x + 1
      case = f"in place (out is x): length={n} {describe(x)} seed={seed}"
      progress(f"lab {LAB} aliasing: {case}")
      status, err, _ = lab.call(jit, x, x)
      if status != 0:
        report.fail(case, "guarded_jit_call failed: " + failure(err))
      elif (mismatch := compare(x, want, RTOL[np.dtype(dtype)])):
        report.fail(case, *mismatch)
    buf = np.arange(n + 1, dtype=np.float32)
    before = buf.copy()
    case = f"out = buf[1:{n + 1}] partly overlaps x = buf[:{n}], f32, seed={seed}"
    progress(f"lab {LAB} aliasing: {case}")
    expect_rejection(lab, jit, buf[:n], buf[1:], "UOPC_E_ALIAS", case, report)
    if buf.tobytes() != before.tobytes():
      report.fail(case, "the rejected call wrote into the buffer")
  return "in place f32, f64 and strided; partial overlap rejected"


def expect_rejection(lab, jit, x, out, want, case, report, mentions=()):
  """Checks that the call fails with the error code named want and leaves jit's counts alone;
  the message must mention every value in mentions (house style: the value and the limit)."""
  state = lab.fields(jit)
  status, err, after = lab.call(jit, x, out)
  got = err["name"]
  if status == 0 or got != want:
    return report.fail(case, f"expected {want}, got status {status} ({got}): {err['message']}")
  missing = [str(v) for v in mentions if str(v) not in err["message"]]
  if missing:
    report.fail(case, f"the {want} message should name {', '.join(missing)}: {err['message']!r}")
  if after != state:
    report.fail(case, "a rejected call was counted as a compiled call or a fallback")


def check_rejections(lab, rng, maximum, seed, report):
  f32 = np.float32
  inputs = [  # (what, x, output dtype, output shape, code, values the message names)
    ("length 0", np.ones(8, f32)[:0], f32, (0,), "UOPC_E_BOUNDS", (0, maximum)),
    (f"length maximum+1 = {maximum + 1}", np.ones(maximum + 1, f32), f32, (maximum + 1,),
     "UOPC_E_BOUNDS", (maximum + 1, maximum)),
    ("an i32 vector", np.arange(16, dtype=np.int32), np.int32, (16,), "UOPC_E_DTYPE", ("i32",)),
    ("a 2-D f32 array", np.ones((3, 4), f32), f32, (3, 4), "UOPC_E_INVALID", ()),
  ]
  with new_jit(lab, maximum) as jit:
    for what, x, out_dtype, out_shape, code, mentions in inputs:
      buf, flat = poisoned(int(np.prod(out_shape)), out_dtype)
      out = flat.reshape(out_shape)
      case = f"{what} with maximum={maximum} ({describe(x)}) seed={seed}"
      progress(f"lab {LAB} rejections: {case}")
      expect_rejection(lab, jit, x, out, code, case, report, mentions)
      if (overwritten := poison_intact(buf, buf[:0])):
        report.fail(case, "the rejected call wrote into out: " + overwritten)
  for bad in (0, INT32_MAX + 1):
    progress(f"lab {LAB} rejections: guarded_jit_new({bad})")
    jit, err = lab.new(bad)
    if jit is not None:
      lab.free(jit)
      report.fail(f"guarded_jit_new({bad})", "expected NULL with UOPC_E_INVALID, got a jit")
    elif err["name"] != "UOPC_E_INVALID":
      report.fail(f"guarded_jit_new({bad})", f"expected UOPC_E_INVALID, got {err['name']}: {err['message']}")
  return "lengths 0 and maximum+1, i32, 2-D, maximum 0 and 2^31"


def check_counters(lab, rng, maximum, seed, report):
  """The chapter's example: lengths 1, 7, 31, 64, 7 then arange(20)[::2], all f32."""
  names = ("variants built", "compiled calls", "layout fallbacks")
  want = dict(zip(names, (1, 5, 1)))
  before = lab.counters(list(names))
  inputs = [np.arange(n, dtype=np.float32) for n in (1, 7, 31, 64, 7)] + [np.arange(20, dtype=np.float32)[::2]]
  with new_jit(lab, 64) as jit:
    for x in inputs:
      out = np.empty_like(x)
      progress(f"lab {LAB} counters: {describe(x)}")
      status, err, fields = lab.call(jit, x, out)
      if status != 0:
        return report.fail(f"the example's call on {describe(x)}", failure(err))
      if (mismatch := compare(out, x * x + 1, RTOL[x.dtype])):
        report.fail(f"the example's call on {describe(x)}", *mismatch)
  delta = {name: value - before[name] for name, value in lab.counters(list(names)).items()}
  case = "after lengths 1, 7, 31, 64, 7 (f32 contiguous) and arange(20)[::2] (f32)"
  for name in names:
    if delta[name] != want[name]:
      report.fail(case, f"process counter '{name}': expected +{want[name]}, got +{delta[name]}")
    if fields[name] != want[name]:
      report.fail(case, f"the jit's own count of '{name}': expected {want[name]}, got {fields[name]}")
  return ", ".join(f"{name}={want[name]}" for name in names)


def main(argv=None):
  ap = argparse.ArgumentParser(description="Checks lab 23.6 against NumPy.")
  ap.add_argument("--build", default="build/labs", help="the build directory (default build/labs)")
  ap.add_argument("--seed", type=int, help="the random seed (default: a fresh one, printed)")
  ap.add_argument("--maximum", type=int, default=4096, help="the declared bound (default 4096)")
  ap.add_argument("--lengths", type=int, default=20, help="random lengths to draw (default 20)")
  worker_options(ap)
  args = ap.parse_args(argv)
  if args.maximum < 2:
    ap.error("--maximum must be at least 2 (a partial overlap needs two elements)")
  seed, replay = start_check(LAB, "check_23_6", args, {"maximum": 4096})
  report = Report(LAB, replay)
  try:
    lab = connect("harness.check_23_6", args)
  except (ffi.HarnessError, WorkerDied, RemoteError) as e:
    print(f"FAIL lab {LAB} setup: {e}")
    return 2
  rng = np.random.default_rng(seed)
  common = (lab, rng, args.maximum, seed, report)
  try:
    report.run("values", check_values, *common, args.lengths)
    report.run("in place and overlap", check_aliasing, *common)
    report.run("rejections", check_rejections, *common)
    report.run("counters", check_counters, *common)
  except WorkerDied as e:
    return died(LAB, e)
  finally:
    lab.close()
  return report.finish()


if __name__ == "__main__":
  raise SystemExit(main())
