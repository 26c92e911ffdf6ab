"""check_23_2.py: lab 23.2 (a guarded dispatcher for out = x*x + 1) against NumPy, through ctypes.

    .venv/bin/python -m harness.check_23_2 --build build/labs [--seed N]

One dispatcher serves lengths 1, 7, 31, 64, 16, 32, 48, 33, the bound and random lengths (half
of them multiples of 16), for inputs contiguous and 64-byte aligned, 4 bytes past a boundary,
x[::2] and x[::-1], into outputs aligned, misaligned and strided inside poisoned buffers, and in
place. out must equal NumPy's float32 x*x + 1 bit for bit, the poison and x must survive, and
the call must take the fast path exactly when both vectors are contiguous, 64-byte aligned and
disjoint with n % 16 == 0. Then the variant limit under both policies, the rejections with their
codes, and the counters of the driver's sequence against expected.log. The dispatcher (an
instance of the lab's variant cache) stays opaque: dispatch_ffi.h allocates it and reads its
counts, dispatch.h's dispatch_last_path and dispatch_fast_count its path and fast variants.
"""
import argparse
import ctypes
import re
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from harness import ffi
from harness.common import (NOT_IMPLEMENTED, LabReport, NotImplementedYet, connect, died, dtype_name, error_data,
                            failure, progress, start_check, strides_of, worker_options)
from harness.remote import RemoteError, WorkerDied

LAB = "23.2"
ROOT = Path(__file__).resolve().parent.parent
ALIGN, LANES = 64, 16            # VARIANT_ALIGN and VARIANT_LANES: the fast kernel's assumptions
POISON = 0x7FC0DEAD              # a quiet NaN with a payload: an output element never written
POISON_TAIL = 16
INT32_MAX = 2**31 - 1
DISPATCH_MAX_VARIANTS = 32
STATS = ("variants built", "guard checks", "guard failures", "fast path calls", "generic calls")
KERNEL_CALLS = ("calls square_plus_one_fast16", "calls square_plus_one_generic")
RUNS = {"fast": "fast path calls", "generic": "generic calls"}
# Exactness: NumPy rounds x*x to float32, then x*x + 1 (float32 + a Python int stays float32).
# The kernels compute the same two correctly rounded operations: uopc compiles with
# -ffp-contract=off (no fused multiply-add) and dispatch_new never asks for -ffast-math. So the
# results are compared bit for bit; any difference is a wrong element, not rounding.


class Lab:
  """The worker's half: the calls into the lab library, with plain data in and out (see
  harness/remote.py). Dispatchers stay here, named by ids."""

  def __init__(self, build):
    self.rt = ffi.Runtime(build)
    self.lib = self.rt.lab(LAB)
    self.ds, self.next = {}, 0

  def error(self, status, err):
    return error_data(self.rt, status, err)

  def stub_check(self, err):
    if self.rt.error_name(err.code) == NOT_IMPLEMENTED:
      raise NotImplementedYet(err.where.decode(errors="replace"), err.message.decode(errors="replace"))

  def new(self, max_length, max_variants, on_limit, specialize_length):
    """[dispatcher id or None, error] of dispatch_new; on_limit is dispatch_on_limit's value."""
    err = ffi.Error()
    d = self.lib.dispatch_new(max_length, max_variants, on_limit, specialize_length, ctypes.byref(err))
    if not d:
      self.stub_check(err)
      return [None, self.error(1, err)]
    self.ds[self.next], self.next = d, self.next + 1
    return [self.next - 1, self.error(0, err)]

  def free(self, d):
    self.lib.dispatch_free(self.ds.pop(d))

  def call(self, d, x, out):
    """[status, error] of dispatch_call on two arrays lent for the call."""
    err = ffi.Error()
    with self.rt.wrap(x) as tx, self.rt.wrap(out) as tout:
      status = self.lib.dispatch_call(self.ds[d], tx, tout, ctypes.byref(err))
    if status != 0:
      self.stub_check(err)
    return [status, self.error(status, err)]

  def path(self, d):
    return ffi.DISPATCH_PATHS.get(self.lib.dispatch_last_path(self.ds[d]), "?")

  def stats(self, d):
    got = {name: self.lib.dispatch_stat(self.ds[d], name.encode()) for name in STATS + ("limit hits",)}
    got["fast variants"] = self.lib.dispatch_fast_count(self.ds[d])
    return got

  def counters(self, names):
    return {name: self.rt.counter(name) for name in names}

  def explain(self, d):
    """dispatch_explain's lines, or a line saying why there are none."""
    buf = ctypes.create_string_buffer(2048)
    err = ffi.Error()
    if self.lib.dispatch_explain(self.ds[d], buf, ctypes.sizeof(buf), ctypes.byref(err)) != 0:
      return [f"(dispatch_explain failed: {failure(self.error(1, err))})"]
    return ["dispatch_explain: " + line for line in buf.value.decode(errors="replace").splitlines()]


@contextmanager
def dispatcher(lab, max_length, max_variants=0, on_limit="run generic", specialize_length=0):
  """A dispatcher id for the with block; raises UopcError when dispatch_new fails."""
  d, err = lab.new(max_length, max_variants, ffi.DISPATCH_ON_LIMIT[on_limit], specialize_length)
  if d is None:
    raise ffi.UopcError(0, err["name"], err["where"], err["message"])
  try:
    yield d
  finally:
    lab.free(d)


# ---- arrays -------------------------------------------------------------------------------

def aligned_empty(count, dtype=np.float32):
  """count elements whose element 0 is on a 64-byte boundary: a view at an aligned offset into
  a larger np.empty buffer (the view keeps the buffer alive)."""
  itemsize = np.dtype(dtype).itemsize
  raw = np.empty(count * itemsize + ALIGN, np.uint8)
  start = (-raw.ctypes.data) % ALIGN
  return raw[start:start + count * itemsize].view(dtype)


def inputs(rng, count):
  """An aligned float32 buffer of count values, signs and magnitudes varied."""
  base = aligned_empty(count)
  base[:] = rng.standard_normal(count) * 8
  return base


def poisoned(count):
  """An aligned float32 buffer of count elements plus a tail, every element poison."""
  buf = aligned_empty(count + POISON_TAIL)
  buf.view(np.uint32)[:] = POISON
  return buf


def past(arr):
  """Bytes between element 0 and the 64-byte boundary below it."""
  return arr.ctypes.data % ALIGN


def describe(arr, name="x"):
  return (f"{name}: length={arr.size} dtype={dtype_name(arr)} strides={strides_of(arr)} "
          f"offset={past(arr)} bytes past a 64-byte boundary")


X_LAYOUTS = {  # name -> (base length for n, the view of the base)
  "contiguous aligned": (lambda n: n, lambda b, n: b[:n]),
  "contiguous 4 bytes past 64": (lambda n: n + 1, lambda b, n: b[1:n + 1]),
  "x[::2]": (lambda n: 2 * n, lambda b, n: b[::2][:n]),
  "x[::-1]": (lambda n: n, lambda b, n: b[::-1][:n]),
}
OUT_LAYOUTS = {  # name -> (poisoned length for n, the view of the buffer)
  "aligned": (lambda n: n, lambda b, n: b[:n]),
  "4 bytes past 64": (lambda n: n + 1, lambda b, n: b[1:n + 1]),
  "out[::2]": (lambda n: 2 * n, lambda b, n: b[:2 * n:2]),
}


def want_fast(x, out):
  """The fast kernel's contract: contiguous, 64-byte aligned and disjoint vectors, n % 16 == 0."""
  return (x.size % LANES == 0 and x.flags.c_contiguous and out.flags.c_contiguous
          and past(x) == 0 and past(out) == 0 and not np.shares_memory(x, out))


def exact(got, want):
  """None when got equals want bit for bit, else lines naming the first differing index,
  expected vs got there, and the largest error."""
  gb, wb = got.view(np.uint32), want.view(np.uint32)
  bad = np.flatnonzero(gb != wb)
  if bad.size == 0:
    return None
  got64, want64 = got.astype(np.float64), want.astype(np.float64)
  with np.errstate(invalid="ignore"):
    rel = np.abs(got64 - want64) / np.abs(want64)   # want >= 1 everywhere
  rel = np.where(np.isnan(rel), np.inf, rel)
  i, w = int(bad[0]), int(bad[np.argmax(rel[bad])])
  return [f"index {i}: expected {float(want[i])!r} (0x{int(wb[i]):08x}) got {float(got[i])!r} "
          f"(0x{int(gb[i]):08x}) ({bad.size} of {got.size} elements differ, compared bit for bit)",
          f"largest relative error {rel[w]:.3g} at index {w}: expected {float(want[w])!r} got {float(got[w])!r}"]


def poison_left(buf, out):
  """None, or what the call wrote in buf outside the out view (a view of buf)."""
  mask = np.ones(buf.size, bool)
  if out.size:
    first = (out.ctypes.data - buf.ctypes.data) // buf.itemsize
    mask[first + np.arange(out.size) * strides_of(out)[0]] = False
  changed = np.flatnonzero(mask & (buf.view(np.uint32) != POISON))
  if changed.size == 0:
    return None
  i = int(changed[0])
  return f"output buffer element {i} is now {float(buf[i])!r} ({changed.size} poisoned elements changed)"


# ---- the checks ---------------------------------------------------------------------------

def check_values(lab, rng, bound, seed, report, count):
  lengths = [n for n in (1, 7, 31, 64, 16, 32, 48, 33) if n < bound] + [bound] + \
            [int(v) for v in rng.integers(1, bound + 1, size=count - count // 2)] + \
            [LANES * int(v) for v in rng.integers(1, bound // LANES + 1, size=count // 2)]
  cases = fast = 0
  with dispatcher(lab, bound) as d:
    for n in lengths:
      for x_layout, (x_len, x_view) in X_LAYOUTS.items():
        for out_layout, (out_len, out_view) in OUT_LAYOUTS.items():
          base, buf = inputs(rng, x_len(n)), poisoned(out_len(n))
          x, out = x_view(base, n), out_view(buf, n)
          fast += one_case(lab, d, base, x, buf, out, f"x={x_layout} out={out_layout}", seed, report)
          cases += 1
      base = inputs(rng, n)
      fast += one_case(lab, d, base, base, base, base, "in place (out is x, contiguous aligned)", seed, report)
      cases += 1
  return (f"{cases} cases bit for bit ({fast} on the fast path), lengths 1..{bound}, {len(X_LAYOUTS)} input "
          f"and {len(OUT_LAYOUTS)} output layouts and in place")


def one_case(lab, d, base, x, buf, out, layout, seed, report):
  """out = x*x + 1 with x a view of base and out a view of buf (base itself when in place).
  Returns 1 when the case wanted the fast path."""
  in_place = out is x
  case = f"length={x.size} {layout} ({describe(x)}; {describe(out, 'out')}) seed={seed}"
  want = x * x + 1
  before, stats = base.copy(), lab.stats(d)
  fast = want_fast(x, out)
  progress(f"lab {LAB} values: {case}")
  status, err = lab.call(d, x, out)
  if status != 0:
    report.fail(case, "dispatch_call failed: " + failure(err))
    return fast
  if (mismatch := exact(out, want)):
    report.fail(case, *mismatch)
  elif not in_place and (overwritten := poison_left(buf, out)):
    report.fail(case, "wrote outside the output view: " + overwritten)
  elif not in_place and base.tobytes() != before.tobytes():
    report.fail(case, "the call changed its input x")
  elif (wrong := wrong_path(lab, d, stats, "fast" if fast else "generic")):
    report.fail(case, *wrong)
  return fast


def wrong_path(lab, d, before, want):
  """None, or lines saying which path ran instead of want (with dispatch_explain's reasons)."""
  got, stats = lab.path(d), lab.stats(d)
  runs = {path: stats[name] - before[name] for path, name in RUNS.items()}
  if got == want and runs == {p: int(p == want) for p in RUNS}:
    return None
  rule = "contiguous, 64-byte aligned, disjoint, n % 16 == 0" if want == "fast" else "the fast path's guards fail"
  return [f"expected the {want} path ({rule}); dispatch_last_path says {got}, the dispatcher's counts "
          f"moved fast path calls +{runs['fast']}, generic calls +{runs['generic']}"] + lab.explain(d)[:6]


def run_sequence(lab, d, rng, steps, seed, report, what):
  """Calls the dispatcher on aligned contiguous vectors of each length; steps: (n, wanted path).
  Returns False after the first failure."""
  for n, want in steps:
    x = inputs(rng, n)
    buf = poisoned(n)
    out = buf[:n]
    case = f"{what}: length={n} contiguous aligned seed={seed}"
    progress(f"lab {LAB} {report.current}: {case}")
    status, err = lab.call(d, x, out)
    if status != 0:
      report.fail(case, "dispatch_call failed: " + failure(err))
      return False
    if (mismatch := exact(out, x * x + 1)):
      report.fail(case, *mismatch)
      return False
    if lab.path(d) != want:
      report.fail(case, f"expected the {want} path, dispatch_last_path says {lab.path(d)}", *lab.explain(d)[:6])
      return False
  return True


def check_limit(lab, rng, bound, seed, report):
  """A fast variant per length (specialize_length): the limit counts the generic variant too."""
  what = "limit 3, run generic, a variant per length"
  with dispatcher(lab, bound, 3, "run generic", 1) as d:
    steps = [(16, "fast"), (32, "fast"), (16, "fast"), (48, "generic"), (64, "generic")]
    if run_sequence(lab, d, rng, steps, seed, report, what):
      got = lab.stats(d)
      want = {"variants built": 3, "limit hits": 2, "fast variants": 2}
      case = f"{what}: after lengths 16, 32, 16, 48, 64 seed={seed}"
      for name, value in want.items():
        if got[name] != value:
          report.fail(case, f"the dispatcher's '{name}': expected {value}, got {got[name]}")
  what = "limit 2, fail, a variant per length"
  with dispatcher(lab, bound, 2, "fail", 1) as d:
    if not run_sequence(lab, d, rng, [(16, "fast"), (17, "generic")], seed, report, what):
      return None
    x, buf = inputs(rng, 32), poisoned(32)
    case = f"{what}: length 32 after lengths 16 and 17 (both places taken) seed={seed}"
    progress(f"lab {LAB} variant limit: {case}")
    expect_rejection(lab, d, x, buf[:32], buf, "UOPC_E_LIMIT", case, report, ("32", "2"))
    if (built := lab.stats(d)["variants built"]) != 2:
      report.fail(case, f"the refused call built a variant: variants built {built}, expected 2")
    run_sequence(lab, d, rng, [(16, "fast"), (17, "generic")], seed, report, what + ", after the refusal")
  return "limit 3 runs lengths 48 and 64 generic (2 limit hits); limit 2 with 'fail' refuses 32 with UOPC_E_LIMIT"


def expect_rejection(lab, d, x, out, buf, want, case, report, mentions=()):
  """Checks that dispatch_call fails with the code named want, runs no kernel and writes
  nothing; the message must name every value in mentions (house style: the value and the limit)."""
  before, x_before = lab.counters(STATS + KERNEL_CALLS), x.copy()
  status, err = lab.call(d, x, out)
  got, text = err["name"], err["message"]
  if status == 0 or got != want:
    return report.fail(case, f"expected {want}, got status {status} ({got}): {text}")
  missing = [v for v in mentions if not re.search(rf"(?<![\w.]){re.escape(v)}(?![\w.])", text)]
  if missing:
    report.fail(case, f"the {want} message should name {', '.join(missing)}: {text!r}")
  ran = {k: v - before[k] for k, v in lab.counters(list(("fast path calls", "generic calls") + KERNEL_CALLS)).items()
         if v != before[k]}
  if ran or lab.path(d) != "none":
    report.fail(case, f"a rejected call ran a kernel: dispatch_last_path {lab.path(d)}, counters {ran}")
  if (overwritten := poison_left(buf, buf[:0])):
    report.fail(case, "the rejected call wrote into out's buffer: " + overwritten)
  if x.tobytes() != x_before.tobytes():
    report.fail(case, "the rejected call changed x")


def check_rejections(lab, rng, bound, seed, report):
  f32, f64 = np.float32, np.float64
  shared = poisoned(40)
  cases = [  # (what, x, out, out's buffer, code, values the message names)
    ("length 0", inputs(rng, 8)[:0], *view(poisoned(0), 0), "UOPC_E_BOUNDS", ("0", str(bound))),
    (f"length bound+1 = {bound + 1}", inputs(rng, bound + 1), *view(poisoned(bound + 1), bound + 1),
     "UOPC_E_BOUNDS", (str(bound + 1), str(bound))),
    ("f64 x and out", np.arange(16, dtype=f64), *view(poisoned(32), 16, f64), "UOPC_E_DTYPE", ("f64",)),
    ("f32 x into an f64 out", inputs(rng, 16), *view(poisoned(32), 16, f64), "UOPC_E_DTYPE", ("f64",)),
    ("2-D x and out (3, 4)", inputs(rng, 12).reshape(3, 4), *view(poisoned(12), (3, 4)), "UOPC_E_INVALID", ()),
    ("x of length 16, out of length 17", inputs(rng, 16), *view(poisoned(17), 17), "UOPC_E_INVALID", ("16", "17")),
    ("out = buf[1:33] partly overlaps x = buf[:32]", shared[:32], shared[1:33], shared, "UOPC_E_ALIAS", ()),
    ("out = buf[:32][::-1] reverses x = buf[:32] in the same memory", shared[:32], shared[:32][::-1], shared,
     "UOPC_E_ALIAS", ()),
  ]
  with dispatcher(lab, bound) as d:
    for what, x, out, buf, code, mentions in cases:
      case = f"{what} with bound {bound} ({describe(x)}; {describe(out, 'out')}) seed={seed}"
      progress(f"lab {LAB} rejections: {case}")
      if buf is shared:   # x lives in the poisoned buffer too: poison it again, then expect it kept
        shared.view(np.uint32)[:] = POISON
      expect_rejection(lab, d, x, out, buf, code, case, report, mentions)
  check_bad_options(lab, report)
  return "lengths 0 and bound+1, f64, 2-D, unequal lengths, partial overlaps, bad dispatcher options"


def view(buf, shape, dtype=np.float32):
  """(out, its buffer): the first elements of a poisoned buffer, as dtype and shape."""
  count = int(np.prod(shape)) * np.dtype(dtype).itemsize // 4
  return buf[:count].view(dtype).reshape(shape), buf


def check_bad_options(lab, report):
  for max_length, max_variants, on_limit in ((-1, 0, 0), (INT32_MAX + 1, 0, 0),
                                            (64, DISPATCH_MAX_VARIANTS + 1, 0), (64, -1, 0), (64, 0, 2)):
    case = f"dispatch_new(max_length={max_length}, max_variants={max_variants}, on_limit={on_limit})"
    progress(f"lab {LAB} rejections: {case}")
    d, err = lab.new(max_length, max_variants, on_limit, 0)
    if d is not None:
      lab.free(d)
      report.fail(case, "expected NULL with UOPC_E_INVALID, got a dispatcher")
    elif (got := err["name"]) != "UOPC_E_INVALID":
      report.fail(case, f"expected UOPC_E_INVALID, got {got}: {err['message']}")


def expected_log():
  """{counter: value} from the lab's expected.log, the lines the grader compares."""
  path = next(ROOT.glob(f"labs/{LAB}-*/expected.log"), None)
  if path is None:
    raise ffi.HarnessError(f"labs/{LAB}-*/expected.log does not exist")
  pairs = (line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)
  return {name.strip(): int(value) for name, value in pairs}


# The driver's sequence (main.c): x = arange(total)[start::step] - 3 in a fresh aligned buffer,
# out a fresh aligned vector; the lengths, then arange(64)[::2], then arange(33)[1:].
DRIVER = [(n, "", "contiguous") for n in (32, 48, 33, 32, 64, 17)] + \
         [(64, "[::2]", "stride 2"), (33, "[1:]", "misaligned")]
DRIVER_PATHS = ["fast", "fast", "generic", "fast", "fast", "generic", "generic", "generic"]


def check_counters(lab, rng, bound, seed, report):
  want = expected_log()
  names = [n for n in STATS + KERNEL_CALLS + ("programs constructed",) if n in want]
  if not set(STATS) <= set(names):
    raise ffi.HarnessError(f"expected.log lacks {', '.join(sorted(set(STATS) - set(names)))}")
  before = lab.counters(names)
  with dispatcher(lab, 0) as d:   # the driver's options: dispatch_init(&d, NULL, ...)
    for (total, view_, what), path in zip(DRIVER, DRIVER_PATHS):
      base = aligned_empty(total)
      base[:] = np.arange(total) - 3
      x = base[1:] if view_ == "[1:]" else base[::2] if view_ == "[::2]" else base
      out = aligned_empty(x.size)
      case = f"the driver's call on (arange({total}) - 3){view_} ({what}, {describe(x)})"
      progress(f"lab {LAB} counters: {case}")
      status, err = lab.call(d, x, out)
      if status != 0:
        return report.fail(case, "dispatch_call failed: " + failure(err))
      if (mismatch := exact(out, x * x + 1)):
        report.fail(case, *mismatch)
      if lab.path(d) != path:
        report.fail(case, f"expected the {path} path, dispatch_last_path says {lab.path(d)}", *lab.explain(d)[:6])
    own = lab.stats(d)
  delta = {name: value - before[name] for name, value in lab.counters(names).items()}
  case = "after the driver's sequence 32, 48, 33, 32, 64, 17, arange(64)[::2], arange(33)[1:] (expected.log)"
  for name in names:
    if delta[name] != want[name]:
      report.fail(case, f"process counter '{name}': expected +{want[name]}, got +{delta[name]}")
    if name in STATS and own[name] != want[name]:
      report.fail(case, f"the dispatcher's own '{name}': expected {want[name]}, got {own[name]}")
  return ", ".join(f"{name}={want[name]}" for name in names)


def main(argv=None):
  ap = argparse.ArgumentParser(description="Checks lab 23.2 against NumPy.")
  ap.add_argument("--build", default="build/labs", help="the build directory (default build/labs)")
  ap.add_argument("--seed", type=int, help="the random seed (default: a fresh one, printed)")
  ap.add_argument("--maximum", type=int, default=4096, help="the dispatcher's bound on n (default 4096)")
  ap.add_argument("--lengths", type=int, default=20, help="random lengths to draw (default 20)")
  worker_options(ap)
  args = ap.parse_args(argv)
  if not LANES * 4 <= args.maximum <= INT32_MAX - 1:
    ap.error(f"--maximum must be in [{LANES * 4}, {INT32_MAX - 1}] (lengths 16..64 and bound+1 are checked)")
  seed, replay = start_check(LAB, "check_23_2", args, {"maximum": 4096, "lengths": 20})
  report = LabReport(LAB, replay)
  try:
    lab = connect("harness.check_23_2", args, keep_alignment=True)   # the fast path wants 64-byte alignment
  except (ffi.HarnessError, NotImplementedYet, WorkerDied, RemoteError) as e:
    print(f"FAIL lab {LAB} setup: {e}")
    return 2
  rng = np.random.default_rng(seed)
  common = (lab, rng, args.maximum, seed, report)
  try:
    report.run("values", check_values, *common, args.lengths)
    report.run("variant limit", check_limit, *common)
    report.run("rejections", check_rejections, *common)
    report.run("counters", check_counters, *common)
  except WorkerDied as e:
    return died(LAB, e)
  finally:
    lab.close()
  return report.finish()


if __name__ == "__main__":
  raise SystemExit(main())
