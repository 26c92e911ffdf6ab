"""check_23_3.py: lab 23.3 (mutation and views) against NumPy's own slice assignment, through ctypes.

    .venv/bin/python -m harness.check_23_3 --build build/labs [--seed N]

Each program is one statement over an f32 or f64 vector a whose length is a dim n in [lo, hi]:
`a[dst] = a[src] + c` (or - c, * c) or `a[dst] += a[src]`, dst and src Python slice triples with
negative bounds and steps, some past either end (NumPy clamps them). mv_ffi.h builds the program
and its runner once per handle; the handle then runs on arrays of several lengths within the
bounds, each inside poisoned margins that must survive, and must leave exactly what NumPy leaves
(`b = a.copy(); b[dst] = b[src] + c`), bit for bit: one add, subtract or multiply by a constant
is correctly rounded in C as in NumPy. A pair NumPy refuses at some length within the bounds
(shapes that neither match nor broadcast) must be refused by the C side with UOPC_E_INVALID,
leaving a as it was. "overlap" checks each versioned store's plan and each call's decision
against a brute-force intersection of the two index sets; "rejections" the codes of bad calls;
"counters" one plan per handle, however many lengths, and a memory version per versioned run.
"""
import argparse
import ctypes

import numpy as np

from harness import ffi
from harness.common import (NOT_IMPLEMENTED, LabReport, NotImplementedYet, connect, died, error_data, failure,
                            progress, start_check, worker_options)
from harness.remote import RemoteError, WorkerDied

LAB = "23.3"
N_MAX = 4096
PAD = 8                           # poisoned elements before and after every a
POISON = {np.dtype(np.float32): (np.uint32, 0x7FC0DEAD),   # quiet NaNs with a payload
          np.dtype(np.float64): (np.uint64, 0x7FF8DEADDEADBEEF)}
DTYPES = {"f32": np.float32, "f64": np.float64}
CONSTS = (1.0, -0.5, 2.25, 3.0, -7.0, 0.125)               # exact in f32: c itself is never rounded
STEPS = (None, 1, 1, -1, 2, -2, 3, -3, 5, -7)
STATS = ("plans built", "memory versions", "direct stores", "staged stores", "alias guards run",
         "alias guards found overlap", "functional write-backs", "runs")
COUNTERS = STATS[:-1] + ("programs constructed",)
MUST_BUILD = ("same", "reverse", "shift", "one", "within")   # pairs whose lengths agree as expressions


class Lab:
  """The worker's half: every call into the lab library, with plain data in and out (see
  harness/remote.py). Handles stay here, named by ids."""

  def __init__(self, build):
    self.rt = ffi.Runtime(build)
    self.lib = self.rt.lab(LAB)
    self.handles, self.next = {}, 0

  def close(self):
    for h in self.handles.values():
      self.lib.mv_ffi_free(h)
    self.handles.clear()

  def error(self, status, err):
    return error_data(self.rt, status, err)

  def stub_check(self, err):
    if self.rt.error_name(err.code) == NOT_IMPLEMENTED:
      raise NotImplementedYet(err.where.decode(errors="replace"), err.message.decode(errors="replace"))

  @staticmethod
  def triple(t):
    return (ctypes.c_int64 * 3)(*(ffi.UOPC_SLICE_NONE if v is None else v for v in t))

  def new(self, spec):
    """[handle id or None, error] of mv_ffi_new for spec = [dtype, lo, hi, dst, src, op, c, mode]
    (names as in ffi.py: "f32", "+", "versioned"; a number passes as it is, for odd values)."""
    dtype, lo, hi, dst, src, op, c, mode = spec
    dt = dtype if isinstance(dtype, int) else ffi.DTYPES[np.dtype(DTYPES[dtype])]
    op = op if isinstance(op, int) else ffi.MV_FFI_OPS[op]
    mode = mode if isinstance(mode, int) else ffi.MV_MODES[mode]
    err = ffi.Error()
    h = self.lib.mv_ffi_new(dt, lo, hi, self.triple(dst), self.triple(src), op, c, mode, ctypes.byref(err))
    if not h:
      self.stub_check(err)
      return [None, self.error(1, err)]
    self.handles[self.next], self.next = h, self.next + 1
    return [self.next - 1, self.error(0, err)]

  def free(self, h):
    self.lib.mv_ffi_free(self.handles.pop(h))

  def run(self, h, a, how="array"):
    """[status, error, the handle's stats] of mv_ffi_run on a lent for the call; how: "array",
    "released" (a's tensor released first) or "null" (no tensor)."""
    err = ffi.Error()
    if how == "null":
      status = self.lib.mv_ffi_run(self.handles[h], None, ctypes.byref(err))
    else:
      with self.rt.wrap(a) as t:
        if how == "released":
          self.rt.lib.uopc_tensor_release(t)
        status = self.lib.mv_ffi_run(self.handles[h], t, ctypes.byref(err))
    if status != 0:
      self.stub_check(err)
    return [status, self.error(status, err), self.stats(h)]

  def once(self, spec, a):
    """[stage, status, error]: build spec, run it on a, free it; stage "new" when the build failed."""
    h, err = self.new(spec)
    if h is None:
      return ["new", 1, err]
    try:
      status, err, _ = self.run(h, a)
    finally:
      self.free(h)
    return ["run", status, err]

  def plan(self, h):
    return ffi.MV_STORE_PLANS.get(self.lib.mv_ffi_store_plan(self.handles[h]), "?")

  def stats(self, h):
    return {name: self.lib.mv_ffi_stat(self.handles[h], name.encode()) for name in STATS}

  def counters(self, names):
    return {name: self.rt.counter(name) for name in names}


# ---- slices, lengths and NumPy's answers -------------------------------------------------------

def text(t):
  """(1, None, -2) -> "1::-2"."""
  start, stop, step = ("" if v is None else str(v) for v in t)
  return f"{start}:{stop}" + (f":{step}" if step else "")


def statement(dst, src, op, c):
  rhs = f"a[{text(src)}]" if op == "+=" else f"a[{text(src)}] {op} {c:g}"
  return f"a[{text(dst)}] {'+=' if op == '+=' else '='} {rhs}"


def length(t, n):
  return len(range(n)[slice(*t)])


def legal_at(dst, src, n):
  """NumPy's rule for a[dst] = value of a[src]'s shape: equal lengths, or a source of one."""
  ld, ls = length(dst, n), length(src, n)
  return ld == ls or ls == 1


def illegal_lengths(dst, src, lo, hi):
  """The lengths within [lo, hi] at which NumPy refuses the assignment."""
  return [n for n in range(lo, hi + 1) if not legal_at(dst, src, n)]


def numpy_result(a, dst, src, op, c):
  """NumPy's own result of the statement on a copy of a; None when NumPy raises."""
  b = a.copy()
  d, s = slice(*dst), slice(*src)
  k = b.dtype.type(c)
  try:
    if op == "+=":
      b[d] += b[s]
    else:
      b[d] = b[s] + k if op == "+" else b[s] - k if op == "-" else b[s] * k
  except ValueError:
    return None
  return b


def poisoned(n, dtype):
  """(buffer, a): a is n random elements in the middle of a buffer poisoned PAD either side."""
  uint, bits = POISON[np.dtype(dtype)]
  buf = np.full(n + 2 * PAD, bits, dtype=uint).view(dtype)
  return buf, buf[PAD:PAD + n]


def fill(rng, a):
  a[:] = (rng.standard_normal(a.size) * 8).astype(a.dtype)


def poison_left(buf, n):
  """None, or what the call wrote into the margins around a (n elements at PAD)."""
  uint, bits = POISON[buf.dtype]
  raw = buf.view(uint)
  changed = [i for i in list(range(PAD)) + list(range(PAD + n, buf.size)) if raw[i] != bits]
  if not changed:
    return None
  i = changed[0]
  where = f"{PAD - i} before a" if i < PAD else f"{i - PAD - n} past a's end"
  return f"the poisoned margin's element {where} is now {buf[i].item()!r} ({len(changed)} changed)"


def differs(got, want):
  """None when got equals want bit for bit, else lines naming the first bad index."""
  uint = POISON[got.dtype][0]
  bad = np.flatnonzero(got.view(uint) != want.view(uint))
  if bad.size == 0:
    return None
  i = int(bad[0])
  return [f"index {i}: expected {want[i].item()!r} got {got[i].item()!r} ({bad.size} of {got.size} elements "
          f"differ, compared bit for bit)"]


def index_sets(dst, src, n):
  """(dst's indices, src's indices) into a of length n, in order."""
  r = np.arange(n)
  return r[slice(*dst)], r[slice(*src)]


def overlap_at(dst, src, n):
  """(the two index sets share an element, they are the same sequence: read in place)."""
  di, si = index_sets(dst, src, n)
  mask = np.zeros(n, bool)
  mask[di] = True
  return bool(mask[si].any()), di.size == si.size and bool((di == si).all())


# ---- drawing programs --------------------------------------------------------------------------

def draw_bounds(rng):
  lo = int(rng.integers(1, 25))
  return lo, min(N_MAX, lo + int(rng.choice([0, 7, 40, 300, N_MAX])))


def draw_bound(rng, hi):
  if rng.random() < 0.2:
    return None
  reach = int(rng.choice([4, 12, hi + 3]))   # past hi: clamped at every length
  return int(rng.integers(-reach, reach + 1))


def draw_triple(rng, hi):
  return (draw_bound(rng, hi), draw_bound(rng, hi), STEPS[int(rng.integers(len(STEPS)))])


def draw_pair(rng, lo, hi, kind):
  """(dst, src) of one kind. The kinds of MUST_BUILD have lengths that agree as expressions over
  n (the same slice, a whole reversal, a shift by k <= lo, one element, constant lengths inside
  the first lo elements), so the symbolic check must accept them; "random" pairs may agree only
  at every length of the bounds, which the C side need not prove."""
  if kind == "same":
    t = draw_triple(rng, hi)
    return t, t
  if kind == "reverse":
    s = int(rng.integers(1, 4))
    pair = [(None, None, s), (None, None, -s)]
    return tuple(pair[::int(rng.choice([1, -1]))])
  if kind == "shift":
    k = int(rng.integers(1, lo + 1))
    pair = [(k, None, None), (None, -k, None)]
    return tuple(pair[::int(rng.choice([1, -1]))])
  if kind == "one":
    k = int(rng.integers(-lo, lo))
    return draw_triple(rng, hi), (k, k + 1 if k != -1 else None, None)
  if kind == "within":
    step = int(rng.choice([1, 2, -1]))
    count = int(rng.integers(0, lo // abs(step) + 1))
    starts = [int(rng.integers(0, lo - abs(step) * count + 1)) for _ in range(2)]
    if step > 0 or count == 0:
      return tuple((s, s + step * count, step) for s in starts)
    return tuple((s + count - 1, s - 1 if s else None, -1) for s in starts)
  return draw_triple(rng, hi), draw_triple(rng, hi)


def draw_legal(rng, lo, hi, kind):
  """A pair of kind that NumPy accepts at every length in [lo, hi] (drawn again until it does)."""
  for _ in range(200):
    dst, src = draw_pair(rng, lo, hi, kind)
    if not illegal_lengths(dst, src, lo, hi):
      return dst, src
  return draw_pair(rng, lo, hi, "same")


def draw_lengths(rng, lo, hi, count=3):
  return sorted({lo, hi, *(int(v) for v in rng.integers(lo, hi + 1, size=count))})


# ---- running one handle ------------------------------------------------------------------------

def run_case(lab, h, rng, spec, n, case, report):
  """One run of handle h on a fresh a of length n: NumPy's result, the margins kept. Returns
  (the handle's stats before, after) or None after a failure it reported."""
  dtype, _, _, dst, src, op, c, _ = spec
  buf, a = poisoned(n, DTYPES[dtype])
  fill(rng, a)
  want = numpy_result(a, dst, src, op, c)
  if want is None:
    raise ffi.HarnessError(f"NumPy refused {statement(dst, src, op, c)} at n = {n}, which the check's "
                           f"rule said it accepts")
  before = lab.stats(h)
  progress(f"lab {LAB} {report.current}: {case}")
  status, err, after = lab.run(h, a)
  if status != 0:
    return report.fail(case, "mv_ffi_run failed: " + failure(err))
  if (wrong := differs(a, want)):
    return report.fail(case, *wrong)
  if (overwritten := poison_left(buf, n)):
    return report.fail(case, overwritten)
  return before, after


def describe(spec):
  dtype, lo, hi, dst, src, op, c, mode = spec
  return f"{statement(dst, src, op, c)} ({dtype}, n in [{lo}, {hi}], {mode})"


# ---- the checks --------------------------------------------------------------------------------

def check_slices(lab, rng, seed, report, count):
  """Random pairs, both modes, several lengths per handle, one plan per handle."""
  kinds = MUST_BUILD + ("random",) * 3
  built = refused = runs = 0
  for k in range(count):
    lo, hi = draw_bounds(rng)
    kind = kinds[k % len(kinds)]
    dst, src = draw_legal(rng, lo, hi, kind)
    op, c = str(rng.choice(list(ffi.MV_FFI_OPS))), float(rng.choice(CONSTS))
    dtype = str(rng.choice(list(DTYPES)))
    lengths = draw_lengths(rng, lo, hi)
    for mode in ffi.MV_MODES:
      spec = [dtype, lo, hi, dst, src, op, c, mode]
      case = f"{describe(spec)}, a {kind} pair, seed={seed}"
      progress(f"lab {LAB} slices: build {case}")
      h, err = lab.new(spec)
      if h is None:
        if kind in MUST_BUILD or err["name"] != "UOPC_E_INVALID":
          report.fail(case, "NumPy accepts this statement at every length of the bounds, but mv_ffi_new "
                            "refused it: " + failure(err))
        refused += kind not in MUST_BUILD
        continue
      built += 1
      try:
        for n in lengths:
          got = run_case(lab, h, rng, spec, n, f"{case}, n = {n}", report)
          if got is None:
            break
          runs += 1
        if (plans := lab.stats(h)["plans built"]) != 1:
          report.fail(case, f"after lengths {lengths}: the handle built {plans} plans, expected 1")
      finally:
        lab.free(h)
  return (f"{built} handles, {runs} runs bit for bit; {refused} random pairs refused (the lengths agree at "
          f"every bound only by clamping or rounding)")


# The driver's shifts and reversal, and disjoint pairs, run versioned at lengths from both ends.
OVERLAP_CASES = [  # (dst, src, op, lo, hi, the plan the chapter gives, or None)
  ((1, None, None), (None, -1, None), "+", 2, N_MAX, "guarded"),    # a[1:] = a[:-1] + 1
  ((None, -1, None), (1, None, None), "+", 2, N_MAX, "guarded"),    # a[:-1] = a[1:] + 1
  ((1, None, None), (None, -1, None), "+", 3, N_MAX, "staged"),     # n >= 3: always overlapping
  ((None, None, -1), (None, None, None), "+=", 1, N_MAX, None),     # a[::-1] += a
  ((None, 4, None), (4, 8, None), "+=", 8, N_MAX, "direct"),        # disjoint halves of a[:8]
  ((None, -1, 2), (1, None, 2), "*", 2, N_MAX, "direct"),           # residues mod 2
  ((None, None, None), (None, None, None), "+=", 1, N_MAX, "direct"),   # in place
  ((-3, None, None), (None, 3, None), "-", 3, 12, None),            # disjoint from n = 6 on
]


def check_overlap(lab, rng, seed, report, count):
  cases = [(dst, src, op, lo, hi, plan, draw_lengths(rng, lo, hi, 2) + [2, 8, 30, 64])
           for dst, src, op, lo, hi, plan in OVERLAP_CASES]
  for k in range(count):
    lo, hi = draw_bounds(rng)
    dst, src = draw_legal(rng, lo, hi, MUST_BUILD[k % len(MUST_BUILD)])
    cases.append((dst, src, str(rng.choice(list(ffi.MV_FFI_OPS))), lo, hi, None, draw_lengths(rng, lo, hi)))
  calls = staged = 0
  for dst, src, op, lo, hi, want_plan, lengths in cases:
    spec = ["f32", lo, hi, dst, src, op, 1.0, "versioned"]
    case = f"{describe(spec)} seed={seed}"
    progress(f"lab {LAB} overlap: build {case}")
    h, err = lab.new(spec)
    if h is None:
      report.fail(case, "mv_ffi_new failed: " + failure(err))
      continue
    try:
      plan = lab.plan(h)
      if want_plan and plan != want_plan:
        report.fail(case, f"the store's plan: expected {want_plan} (chapter 23.3), got {plan}")
      elif (wrong := plan_unsound(dst, src, lo, hi, plan)):
        report.fail(case, wrong)
      for n in sorted(v for v in set(lengths) if lo <= v <= hi):
        got = run_case(lab, h, rng, spec, n, f"{case}, n = {n}", report)
        if got is None:
          break
        calls += 1
        staged += decision_wrong(dst, src, n, plan, *got, f"{case}, n = {n}", report)
    finally:
      lab.free(h)
  return f"{len(cases)} versioned stores, {calls} calls ({staged} staged), each against the brute-force overlap"


def plan_unsound(dst, src, lo, hi, plan):
  """None, or why the build-time plan is wrong at some length of the bounds: staged claims an
  overlap at every length, direct a disjoint or in-place pair at every length."""
  for n in range(lo, min(hi, lo + N_MAX) + 1):
    shared, in_place = overlap_at(dst, src, n)
    if plan == "staged" and not shared:
      return f"the plan is staged (the analysis said OVERLAP), but at n = {n} the index sets are disjoint"
    if plan == "direct" and shared and not in_place:
      return (f"the plan is direct, but at n = {n} the index sets share an element and are not the same "
              f"sequence (not in place)")
  return None


def decision_wrong(dst, src, n, plan, before, after, case, report):
  """Checks one call's store and guard counts against the brute-force overlap; returns 1 when the
  call was staged."""
  d = {k: after[k] - before[k] for k in STATS}
  shared, in_place = overlap_at(dst, src, n)
  di = index_sets(dst, src, n)[0]
  contiguous = di.size <= 1 or int(di[1] - di[0]) == 1
  guards = int(plan == "guarded" and contiguous)
  facts = f"(brute force: {'overlapping' if shared else 'disjoint'}{', in place' if in_place else ''}, " \
          f"target {'contiguous' if contiguous else 'strided'}; plan {plan})"
  if (d["direct stores"], d["staged stores"], d["memory versions"]) not in ((1, 0, 1), (0, 1, 1)):
    report.fail(case, f"one store: direct +{d['direct stores']}, staged +{d['staged stores']}, memory versions "
                      f"+{d['memory versions']}; expected one of direct or staged, and one version")
  elif shared and not in_place and d["staged stores"] != 1:
    report.fail(case, f"the views overlap in this call, but the store was written directly {facts}")
  elif not shared and d["direct stores"] != int(contiguous):
    report.fail(case, f"the views are disjoint in this call: expected a {'direct' if contiguous else 'staged'} "
                      f"store, got {'direct' if d['direct stores'] else 'staged'} {facts}")
  elif d["alias guards run"] != guards:
    report.fail(case, f"alias guards run +{d['alias guards run']}, expected +{guards} {facts}")
  elif guards and d["alias guards found overlap"] != int(shared):
    report.fail(case, f"the guard said {'overlap' if d['alias guards found overlap'] else 'disjoint'} {facts}")
  return d["staged stores"]


def expect_refusal(lab, h, a, buf, want, case, report, how="array", mentions=()):
  """A run of handle h that must fail with the code named want and leave a and its margins."""
  before, stats = buf.copy(), lab.stats(h)
  progress(f"lab {LAB} rejections: {case}")
  status, err, after = lab.run(h, a, how)
  if status == 0 or err["name"] != want:
    return report.fail(case, f"expected {want}, got status {status} ({err['name']}): {err['message']}")
  if (missing := [str(v) for v in mentions if str(v) not in err["message"]]):
    report.fail(case, f"the {want} message should name {', '.join(missing)}: {err['message']!r}")
  if buf.tobytes() != before.tobytes():
    report.fail(case, "the refused run changed a or its margins")
  if after != stats:
    report.fail(case, f"the refused run was counted: {stats} became {after}")


SHAPE_MISMATCHES = [  # (dst, src, op, lo, hi, n): NumPy refuses at n (and the program at some n)
  ((1, None, None), (None, None, None), "+", 2, 64, 9),        # a[1:] = a + c: n - 1 against n
  ((None, 3, None), (None, 4, None), "+=", 4, 64, 10),         # 3 against 4
  ((None, None, 2), (1, None, 2), "+", 1, 64, 7),              # n = 7: 4 against 3 (equal when n is even)
  ((-2, None, None), (None, None, -1), "*", 3, 30, 5),         # 2 against n
  ((None, None, None), (None, 0, None), "+", 1, 64, 5),        # an empty source into a[:]
]


def check_rejections(lab, rng, seed, report):
  shape = 0
  cases = [(*c, "named") for c in SHAPE_MISMATCHES]
  while len(cases) < len(SHAPE_MISMATCHES) + 6:
    lo, hi = draw_bounds(rng)
    dst, src = draw_pair(rng, lo, hi, "random")
    if (bad := illegal_lengths(dst, src, lo, hi)):
      cases.append((dst, src, "+", lo, hi, int(rng.choice(bad)), "random"))
  for dst, src, op, lo, hi, n, kind in cases:
    for mode in ffi.MV_MODES:
      spec = ["f32", lo, hi, dst, src, op, 1.0, mode]
      buf, a = poisoned(n, np.float32)
      fill(rng, a)
      before = buf.copy()
      if numpy_result(a, dst, src, op, 1.0) is not None:
        raise ffi.HarnessError(f"NumPy accepts {statement(dst, src, op, 1.0)} at n = {n}")
      case = f"{describe(spec)} on n = {n}, where NumPy raises ({kind}) seed={seed}"
      progress(f"lab {LAB} rejections: {case}")
      stage, status, err = lab.once(spec, a)
      if status == 0 or err["name"] != "UOPC_E_INVALID":
        report.fail(case, f"expected UOPC_E_INVALID, got status {status} ({err['name']}) at {stage}: "
                          f"{err['message']}")
      elif buf.tobytes() != before.tobytes():
        report.fail(case, "the refused statement changed a or its margins")
      shape += 1
  bad_runs(lab, rng, seed, report)
  bad_handles(lab, seed, report)
  return f"{shape} shape mismatches in both modes; lengths outside the bounds, released, NULL, f64, 2-D, " \
         f"strided; bad handles"


def bad_runs(lab, rng, seed, report):
  for mode in ffi.MV_MODES:
    lo, hi = 4, 64
    spec = ["f32", lo, hi, (1, None, None), (None, -1, None), "+", 1.0, mode]
    h, err = lab.new(spec)
    if h is None:
      return report.fail(f"{describe(spec)} seed={seed}", "mv_ffi_new failed: " + failure(err))
    try:
      for n in (hi + 1, lo - 1):
        buf, a = poisoned(n, np.float32)
        fill(rng, a)
        expect_refusal(lab, h, a, buf, "UOPC_E_BOUNDS", f"{describe(spec)} on n = {n} seed={seed}", report,
                       mentions=(n, lo if n < lo else hi))
      buf, a = poisoned(16, np.float32)
      fill(rng, a)
      for how in ("released", "null"):
        expect_refusal(lab, h, a, buf, "UOPC_E_INVALID", f"{describe(spec)} on a {how} tensor seed={seed}", report,
                       how)
      odd = [("an f64 a", poisoned(16, np.float64), lambda a: a, "UOPC_E_DTYPE"),
             ("a 2-D a of shape (4, 4)", poisoned(16, np.float32), lambda a: a.reshape(4, 4), "UOPC_E_INVALID"),
             ("a strided a (every other element)", poisoned(32, np.float32), lambda a: a[::2], "UOPC_E_LAYOUT")]
      for what, (buf, a), view, code in odd:
        fill(rng, a)
        expect_refusal(lab, h, view(a), buf, code, f"{describe(spec)} on {what} seed={seed}", report)
      if (runs := lab.stats(h)["runs"]) != 0:
        report.fail(f"{describe(spec)} seed={seed}", f"after refused runs only, the handle counts {runs} runs")
    finally:
      lab.free(h)


def bad_handles(lab, seed, report):
  shift = ((1, None, None), (None, -1, None))
  cases = [  # (what, spec, code)
    ("an i32 storage", [ffi.DTYPES[np.dtype(np.int32)], 2, 64, *shift, "+", 1.0, "versioned"], "UOPC_E_DTYPE"),
    ("op 4 (no such mv_ffi_op)", ["f32", 2, 64, *shift, 4, 1.0, "versioned"], "UOPC_E_INVALID"),
    ("mode 2 (no such mv_mode)", ["f32", 2, 64, *shift, "+", 1.0, 2], "UOPC_E_INVALID"),
    ("bounds [64, 2]", ["f32", 64, 2, *shift, "+", 1.0, "versioned"], "UOPC_E_INVALID"),
    ("a step of 0 (NumPy raises)", ["f32", 2, 64, (None, None, 0), (None, None, None), "+", 1.0, "versioned"],
     "UOPC_E_INVALID"),
  ]
  for what, spec, code in cases:
    case = f"mv_ffi_new with {what} seed={seed}"
    progress(f"lab {LAB} rejections: {case}")
    h, err = lab.new(spec)
    if h is not None:
      lab.free(h)
      report.fail(case, f"expected NULL with {code}, got a handle")
    elif err["name"] != code:
      report.fail(case, f"expected {code}, got {err['name']}: {err['message']}")


def check_counters(lab, rng, seed, report):
  """One plan per handle, however many lengths; per versioned run one memory version and one
  store, per functional run one write-back and no version: the handle's counts and the process
  counters agree."""
  dst, src = (1, None, None), (None, -1, None)
  lengths = [2, 8, 30, 64, N_MAX] + [int(v) for v in rng.integers(2, N_MAX + 1, size=5)]
  start = lab.counters(list(COUNTERS))
  totals = dict.fromkeys(STATS, 0)
  for mode in ffi.MV_MODES:
    spec = ["f32", 2, N_MAX, dst, src, "+", 1.0, mode]
    case = f"{describe(spec)} at lengths {lengths} seed={seed}"
    progress(f"lab {LAB} counters: build {case}")
    h, err = lab.new(spec)
    if h is None:
      return report.fail(case, "mv_ffi_new failed: " + failure(err))
    try:
      for n in lengths:
        if run_case(lab, h, rng, spec, n, f"{describe(spec)}, n = {n} seed={seed}", report) is None:
          return None
      got = lab.stats(h)
    finally:
      lab.free(h)
    runs = len(lengths)
    versioned = mode == "versioned"
    want = {"plans built": 1, "runs": runs, "memory versions": runs if versioned else 0,
            "functional write-backs": 0 if versioned else runs}
    for name, value in want.items():
      if got[name] != value:
        report.fail(case, f"the handle's '{name}': expected {value}, got {got[name]}")
    if got["direct stores"] + got["staged stores"] != (runs if versioned else 0):
      report.fail(case, f"direct stores {got['direct stores']} + staged stores {got['staged stores']}: expected "
                        f"{runs if versioned else 0}")
    for name in STATS:
      totals[name] += got[name]
  delta = {name: value - start[name] for name, value in lab.counters(list(COUNTERS)).items()}
  case = f"the process counters across both handles seed={seed}"
  for name in COUNTERS:
    want = totals["plans built"] if name == "programs constructed" else totals[name]
    if delta[name] != want:
      report.fail(case, f"process counter '{name}': expected +{want} (the handles' own counts), got +{delta[name]}")
  return f"plans built=1 per handle over {len(lengths)} lengths; memory versions={totals['memory versions']}, " \
         f"functional write-backs={totals['functional write-backs']}"


def main(argv=None):
  ap = argparse.ArgumentParser(description="Checks lab 23.3 against NumPy.")
  ap.add_argument("--build", default="build/labs", help="the build directory (default build/labs)")
  ap.add_argument("--seed", type=int, help="the random seed (default: a fresh one, printed)")
  ap.add_argument("--lengths", type=int, default=20, help="random slice pairs to draw (default 20)")
  worker_options(ap)
  args = ap.parse_args(argv)
  seed, replay = start_check(LAB, "check_23_3", args, {"lengths": 20})
  report = LabReport(LAB, replay)
  try:
    lab = connect("harness.check_23_3", args)
  except (ffi.HarnessError, NotImplementedYet, WorkerDied, RemoteError) as e:
    print(f"FAIL lab {LAB} setup: {e}")
    return 2
  rng = np.random.default_rng(seed)
  try:
    report.run("slices", check_slices, lab, rng, seed, report, args.lengths)
    report.run("overlap", check_overlap, lab, rng, seed, report, max(1, args.lengths // 4))
    report.run("rejections", check_rejections, lab, rng, seed, report)
    report.run("counters", check_counters, lab, rng, seed, report)
  except WorkerDied as e:
    return died(LAB, e)
  finally:
    lab.close()
  return report.finish()


if __name__ == "__main__":
  raise SystemExit(main())
