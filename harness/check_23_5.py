"""check_23_5.py: lab 23.5 (a true KV cache) against a NumPy model of the same decoder, through ctypes.

    .venv/bin/python -m harness.check_23_5 --build build/labs [--seed N]

The seed draws the model's capacity_max, each cache's batch (2 to 4 rows) and capacity, every
row's sequence lengths (--lengths of them, at least; the grader passes its own) and tokens, the steps a row sits out, and the step at which a row is reset
and given a new sequence; it is printed, and --seed replays the run. NumPy (harness/kv_reference.py)
makes the weights again from the model's seed and decodes the same tokens in float64. At every
step, for every row that took a token: the row's length is NumPy's, and its logits are NumPy's
within TOLERANCE, for the dynamic-prefix decode and for the masked baseline. Then: batch isolation
bit for bit, the step at p == capacity refused with the cache unchanged (lengths and a digest of
every K and V byte) and decoding after a reset, a reset of every row, and the plans: the model
builds its five and no decode step builds another or runs the compiler.
"""
import argparse
import ctypes
import hashlib

import numpy as np

from harness import ffi
from harness.common import (NOT_IMPLEMENTED, LabReport, NotImplementedYet, connect, died, error_data, failure,
                            progress, start_check, worker_options)
from harness.remote import RemoteError, WorkerDied

LAB = "23.5"
# |C - NumPy| / max(1, max |NumPy|) over a row's logits. The C model runs in f32 and sums in the
# kernels' lane order; NumPy runs in f64. The reference's error is about 1e-6 (the driver prints
# it); 1e-4 leaves room for any order of the sums and fails a slot off by one by orders of magnitude.
TOLERANCE = 1e-4
PLANS = "plans built"
COMPILES = "compiler invocations"
MODEL_PLANS = 5        # qkv, attention, masked attention, post-attention block, logits (model.h)


class Lab:
  """The worker's half: the calls into the lab library, with plain data in and out (see
  harness/remote.py). Models and caches stay here, named by ids; the parent lends the token and
  logits arrays and reads what C wrote into them."""

  def __init__(self, build):
    self.rt = ffi.Runtime(build)
    self.lib = self.rt.lab(LAB)
    self.models, self.caches = {}, {}

  def result(self, status, err):
    """The call's error as data; a stub's answer stops the check."""
    if status and self.rt.error_name(err.code) == NOT_IMPLEMENTED:
      raise NotImplementedYet(err.where.decode(errors="replace"), err.message.decode(errors="replace"))
    return error_data(self.rt, status, err)

  def new_model(self, capacity_max):
    """[model id or None, error, the config as a dict]."""
    cfg = self.lib.kv_model_default(capacity_max)
    handle, err = ctypes.c_void_p(), ffi.Error()
    status = self.lib.kv_model_new(ctypes.byref(handle), ctypes.byref(cfg), ctypes.byref(err))
    info = self.result(status, err)
    if status:
      return [None, info, None]
    self.models[len(self.models)] = handle
    fields = {name: getattr(cfg, name) for name, _ in ffi.KvModelConfig._fields_}
    return [len(self.models) - 1, info, fields]

  def new_cache(self, layers, batch, heads, capacity, head_dim):
    """[cache id or None, error]."""
    cache, err = ffi.KvCache(), ffi.Error()
    status = self.lib.kv_cache_init(ctypes.byref(cache), layers, batch, heads, capacity, head_dim, ctypes.byref(err))
    info = self.result(status, err)
    if status:
      return [None, info]
    self.caches[len(self.caches)] = cache
    return [len(self.caches) - 1, info]

  def free_cache(self, cache):
    self.lib.kv_cache_free(ctypes.byref(self.caches.pop(cache)))

  def lengths(self, cache):
    c = self.caches[cache]
    return [c.length[b] for b in range(c.batch)]

  def digest(self, cache):
    """SHA-256 of every layer's K then V bytes: equal digests, unchanged storage."""
    c, h = self.caches[cache], hashlib.sha256()
    size = c.batch * c.heads * c.capacity * c.head_dim * 4
    for l in range(c.layers):
      for t in (c.k[l], c.v[l]):
        h.update(ctypes.string_at(t.storage[0] + t.offset * 4, size))
    return h.hexdigest()

  def step(self, model, cache, tokens, logits, masked):
    """[error, lengths after] of kv_decode_step on tokens (int32, batch) into logits (f32,
    (batch, vocab)), both lent by the parent."""
    err = ffi.Error()
    status = self.lib.kv_decode_step(self.models[model], ctypes.byref(self.caches[cache]),
                                     tokens.ctypes.data_as(ctypes.POINTER(ctypes.c_int)),
                                     logits.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), masked, ctypes.byref(err))
    return [self.result(status, err), self.lengths(cache)]

  def reset(self, cache, row):
    err = ffi.Error()
    status = self.lib.kv_reset(ctypes.byref(self.caches[cache]), row, ctypes.byref(err))
    return [self.result(status, err), self.lengths(cache)]

  def reference(self, model, tokens, logits):
    """The error of kv_reference_logits (the uncached reference) over tokens, into logits."""
    err = ffi.Error()
    status = self.lib.kv_reference_logits(self.models[model], tokens.ctypes.data_as(ctypes.POINTER(ctypes.c_int)),
                                          tokens.size, logits.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
                                          ctypes.byref(err))
    return self.result(status, err)

  def counters(self, names):
    return {name: self.rt.counter(name) for name in names}


def logit_error(got, want):
  """The check's measure: the largest |got - want| relative to max(1, max |want|)."""
  want = np.asarray(want, np.float64)
  return float(np.max(np.abs(got.astype(np.float64) - want)) / max(1.0, float(np.max(np.abs(want)))))


class Pair:
  """One C cache and its NumPy twin, decoded in lockstep."""

  def __init__(self, ctx, batch, capacity, what):
    self.ctx, self.batch, self.capacity, self.what = ctx, batch, capacity, what
    m = ctx.model
    self.id, err = ctx.lab.new_cache(m.layers, batch, m.heads, capacity, m.head_dim)
    if self.id is None:
      raise ffi.UopcError(0, err["name"], err["where"], err["message"])
    self.np = m.cache(batch, capacity)
    self.history = [[] for _ in range(batch)]
    self.worst = 0.0

  def close(self):
    self.ctx.lab.free_cache(self.id)

  def reset(self, row, report):
    err, lengths = self.ctx.lab.reset(self.id, row)
    if err["name"] != "UOPC_OK":
      return report.fail(f"{self.what}: kv_reset(row {row})", failure(err))
    self.np.reset(row)
    for b in range(self.batch) if row < 0 else [row]:
      self.history[b] = []
    if lengths != self.np.length:
      report.fail(f"{self.what}: after kv_reset(row {row})", f"expected lengths {self.np.length}, got {lengths}")

  def step(self, tokens, masked, report, step_no):
    """One step of both; compares lengths and every active row's logits. Returns the C logits,
    or None after a failure."""
    ctx = self.ctx
    case = f"{self.what}: step {step_no}, tokens {list(tokens)}, lengths before {self.np.length}"
    progress(f"lab {LAB} {case}")
    logits = np.zeros((self.batch, ctx.model.vocab), np.float32)
    err, lengths = ctx.lab.step(ctx.model_id, self.id, np.asarray(tokens, np.int32), logits, masked)
    if err["name"] != "UOPC_OK":
      report.fail(case, "kv_decode_step failed: " + failure(err))
      return None
    for b, t in enumerate(tokens):
      if t < 0:
        continue
      want = ctx.model.step(self.np, b, int(t))
      self.history[b].append(int(t))
      e = logit_error(logits[b], want)
      self.worst = max(self.worst, e)
      if not e <= TOLERANCE:
        i = int(np.argmax(np.abs(logits[b] - want)))
        report.fail(case, f"row {b} at position {self.np.length[b] - 1}: logits differ from NumPy's by {e:.3g} "
                          f"(tolerance {TOLERANCE:g}); logit {i}: expected {float(want[i])!r} got {float(logits[b, i])!r}")
        return None
    if lengths != self.np.length:
      report.fail(case, f"expected lengths {self.np.length} after the step, got {lengths}")
      return None
    return logits


class Context:
  def __init__(self, lab, rng, seed, model_id, model):
    self.lab, self.rng, self.seed, self.model_id, self.model = lab, rng, seed, model_id, model

  def tokens(self, n):
    return [int(t) for t in self.rng.integers(0, self.model.vocab, size=n)]


def draw_scenario(ctx):
  """Rows, capacity, each row's first sequence, the sit-out steps and the reset: plain data."""
  rng = ctx.rng
  batch = int(rng.integers(2, 5))
  capacity = int(rng.integers(8, min(64, ctx.model.capacity_max) + 1))
  lengths = [int(rng.integers(1, capacity + 1)) for _ in range(batch)]
  reset_row = int(rng.integers(0, batch))
  return {"batch": batch, "capacity": capacity, "sequences": [ctx.tokens(n) for n in lengths],
          "reset_row": reset_row, "reset_after": int(rng.integers(1, lengths[reset_row] + 1)),
          "second": ctx.tokens(int(rng.integers(1, capacity + 1))),
          "pauses": [[bool(p) for p in rng.random(3 * capacity) < 0.2] for _ in range(batch)]}


def check_decode(ctx, scenarios, masked, report):
  """Each scenario in its own cache (decode_one); the note sums them up."""
  notes, worst, steps = [], 0.0, 0
  for sc in scenarios:
    result = decode_one(ctx, sc, masked, report)
    if result is None:
      return None
    n, w = result
    steps, worst = steps + n, max(worst, w)
    notes.append(f"{'/'.join(str(len(q)) for q in sc['sequences'])} in {sc['capacity']}")
  rows = sum(sc["batch"] for sc in scenarios)
  return (f"{len(scenarios)} caches, {rows} rows (tokens/capacity: {', '.join(notes)}), {steps} steps, one row of "
          f"each reset mid-way and decoding a new sequence; largest error {worst:.1e} (tolerance {TOLERANCE:g})")


def decode_one(ctx, scenario, masked, report):
  """Decodes the scenario step by step; row reset_row is reset after reset_after tokens and then
  decodes `second`. Every active row's logits are compared with NumPy at every step. Returns
  (steps, largest error), or None after a failure."""
  what = "masked" if masked else "dynamic"
  sc = scenario
  pair = Pair(ctx, sc["batch"], sc["capacity"], f"{what} decode (batch {sc['batch']}, capacity {sc['capacity']})")
  queues = [list(s) for s in sc["sequences"]]
  done_reset, taken, step_no = False, [0] * sc["batch"], 0
  try:
    while any(queues) or not done_reset:
      r = sc["reset_row"]
      if not done_reset and taken[r] == sc["reset_after"]:
        pair.reset(r, report)
        queues[r], done_reset = list(sc["second"]), True
      tokens = [-1] * sc["batch"]
      for b, q in enumerate(queues):
        if q and not sc["pauses"][b][step_no % len(sc["pauses"][b])]:
          tokens[b] = q.pop(0)
          taken[b] += 1
      if pair.step(tokens, masked, report, step_no) is None:
        return None
      step_no += 1
    check_uncached(ctx, pair, report)
  finally:
    pair.close()
  return step_no, pair.worst


def check_uncached(ctx, pair, report):
  """The given uncached reference over each row's whole history agrees with NumPy too."""
  for b, history in enumerate(pair.history):
    if not history:
      continue
    logits = np.zeros(ctx.model.vocab, np.float32)
    err = ctx.lab.reference(ctx.model_id, np.asarray(history, np.int32), logits)
    if err["name"] != "UOPC_OK":
      return report.fail(f"kv_reference_logits over row {b}'s {len(history)} tokens", failure(err))
    np_cache = ctx.model.cache(1, len(history))
    for t in history:
      want = ctx.model.step(np_cache, 0, t)
    if not (e := logit_error(logits, want)) <= TOLERANCE:
      report.fail(f"kv_reference_logits over row {b}'s {len(history)} tokens",
                  f"differs from NumPy by {e:.3g} (tolerance {TOLERANCE:g})")


def check_isolation(ctx, report):
  """Two caches; row 0 takes the same tokens in both, the other rows different ones: row 0's
  logits must be equal bit for bit at every step."""
  rng = ctx.rng
  batch, capacity = int(rng.integers(2, 5)), int(rng.integers(4, 33))
  steps = int(rng.integers(2, capacity + 1))
  a, b = Pair(ctx, batch, capacity, "isolation cache A"), Pair(ctx, batch, capacity, "isolation cache B")
  try:
    for s in range(steps):
      row0 = ctx.tokens(1)
      ta, tb = row0 + ctx.tokens(batch - 1), row0 + ctx.tokens(batch - 1)
      la, lb = a.step(ta, 0, report, s), b.step(tb, 0, report, s)
      if la is None or lb is None:
        return None
      if la[0].tobytes() != lb[0].tobytes():
        i = int(np.flatnonzero(la[0] != lb[0])[0])
        return report.fail(f"isolation: step {s}, row 0 tokens equal, rows 1..{batch - 1} {ta[1:]} vs {tb[1:]}",
                           f"row 0's logit {i} is {la[0, i]!r} in one cache and {lb[0, i]!r} in the other")
  finally:
    a.close(), b.close()
  return f"{batch} rows, capacity {capacity}, {steps} steps: row 0 bit for bit the same"


def expect_refusal(ctx, pair, tokens, want, mentions, case, report):
  """A step that must fail with `want`, leaving lengths and every K and V byte unchanged."""
  lab = ctx.lab
  before, digest = lab.lengths(pair.id), lab.digest(pair.id)
  logits = np.zeros((pair.batch, ctx.model.vocab), np.float32)
  err, after = lab.step(ctx.model_id, pair.id, np.asarray(tokens, np.int32), logits, 0)
  if err["name"] != want:
    return report.fail(case, f"expected {want}, got {err['name']}: {err['message']}")
  missing = [m for m in mentions if m not in err["message"]]
  if missing:
    report.fail(case, f"the message should name {', '.join(missing)}: {err['message']!r}")
  if after != before or lab.digest(pair.id) != digest:
    report.fail(case, f"the refused step changed the cache: lengths {before} -> {after}"
                      + ("" if lab.digest(pair.id) == digest else ", K or V bytes changed"))


def check_overflow(ctx, report):
  """Row 0 filled to the capacity: its next step is refused, bad tokens are refused, nothing
  changes; after a reset of row 0 both rows decode on and agree with NumPy."""
  rng = ctx.rng
  capacity = int(rng.integers(2, 9))
  other = int(rng.integers(1, capacity))
  pair = Pair(ctx, 2, capacity, f"overflow (capacity {capacity})")
  try:
    for s in range(capacity):
      if pair.step([ctx.tokens(1)[0], ctx.tokens(1)[0] if s < other else -1], 0, report, s) is None:
        return None
    t = ctx.tokens(2)
    expect_refusal(ctx, pair, t, "UOPC_E_LIMIT", ("row 0",),
                   f"the step at p == capacity = {capacity} on row 0 (row 1 at {other})", report)
    expect_refusal(ctx, pair, [-1, ctx.model.vocab], "UOPC_E_INVALID", (str(ctx.model.vocab),),
                   f"token {ctx.model.vocab} (outside the vocabulary) on row 1", report)
    expect_refusal(ctx, pair, [-1, -2], "UOPC_E_INVALID", ("-2",), "token -2 on row 1", report)
    pair.reset(0, report)
    for s in range(2):     # row 1 has room for one more token
      if pair.step([ctx.tokens(1)[0], ctx.tokens(1)[0] if s == 0 else -1], 0, report, capacity + s) is None:
        return None
  finally:
    pair.close()
  return (f"capacity {capacity}: the step past it and tokens {ctx.model.vocab} and -2 refused with the cache unchanged; "
          "after a reset of row 0, 2 steps agree with NumPy")


def check_reset_all(ctx, report):
  """kv_reset(-1): every length 0, every K and V byte zero, and decoding on equals a fresh cache."""
  rng = ctx.rng
  batch, capacity = int(rng.integers(2, 5)), int(rng.integers(4, 33))
  pair = Pair(ctx, batch, capacity, f"reset all (batch {batch}, capacity {capacity})")
  m = ctx.model
  zeros = hashlib.sha256(bytes(2 * m.layers * batch * m.heads * capacity * m.head_dim * 4)).hexdigest()
  try:
    for s in range(int(rng.integers(1, capacity + 1))):
      if pair.step(ctx.tokens(batch), 0, report, s) is None:
        return None
    pair.reset(-1, report)
    if ctx.lab.digest(pair.id) != zeros:
      return report.fail(f"reset all (batch {batch}, capacity {capacity})", "a K or V byte is not zero after kv_reset(-1)")
    for s in range(3):
      if pair.step(ctx.tokens(batch), 0, report, s) is None:
        return None
  finally:
    pair.close()
  return f"batch {batch}, capacity {capacity}: lengths 0, storage zero, 3 steps after agree with NumPy"


def check_plans(ctx, after_model, report):
  """Decoding at every position, capacity and batch above built no plan and ran no compiler."""
  now = ctx.lab.counters([PLANS, COMPILES])
  if after_model[PLANS] != MODEL_PLANS:
    report.fail("kv_model_new", f"expected '{PLANS}' = {MODEL_PLANS} after building the model, "
                                f"got {after_model[PLANS]}")
  for name in (PLANS, COMPILES):
    if now[name] != after_model[name]:
      report.fail("every decode step of this check", f"'{name}' went from {after_model[name]} to {now[name]}: "
                                                     "a step built a plan or ran the compiler")
  return f"{PLANS}={now[PLANS]} from the model on, {COMPILES} unchanged by decoding"


def main(argv=None):
  ap = argparse.ArgumentParser(description="Checks lab 23.5 against NumPy.")
  ap.add_argument("--build", default="build/labs", help="the build directory (default build/labs)")
  ap.add_argument("--seed", type=int, help="the random seed (default: a fresh one, printed)")
  ap.add_argument("--lengths", type=int, default=8,
                  help="random sequence lengths the decode checks draw, 2 to 4 rows a cache (default 8)")
  worker_options(ap)
  args = ap.parse_args(argv)
  seed, replay = start_check(LAB, "check_23_5", args, {"lengths": 8})
  report = LabReport(LAB, replay)
  try:
    lab = connect("harness.check_23_5", args)
  except (ffi.HarnessError, ffi.UopcError, NotImplementedYet, WorkerDied, RemoteError) as e:
    print(f"FAIL lab {LAB} setup: {e}")
    return 2
  rng = np.random.default_rng(seed)
  try:
    capacity_max = int(rng.integers(64, 513))
    progress(f"lab {LAB} kv_model_new(capacity_max {capacity_max})")
    model_id, err, cfg = lab.new_model(capacity_max)
    if model_id is None:
      if err["name"] == NOT_IMPLEMENTED:
        print(f"FAIL lab {LAB} model: {err['where']} is not implemented yet ({NOT_IMPLEMENTED})")
        return 1
      print(f"FAIL lab {LAB} model: kv_model_new(capacity_max {capacity_max}): {failure(err)}")
      return 1
    after_model = lab.counters([PLANS, COMPILES])
    from harness.kv_reference import KvModel   # the judge's side only: the worker's copy of harness/ lacks it
    model = KvModel(cfg["capacity_max"], cfg["layers"], cfg["d_model"], cfg["heads"], cfg["vocab"], cfg["d_ff"],
                    cfg["seed"])
    print(f"lab {LAB} model: capacity_max {capacity_max}, weights from seed {cfg['seed']} made again by NumPy",
          flush=True)
    ctx = Context(lab, rng, seed, model_id, model)
    scenarios = []
    while sum(sc["batch"] for sc in scenarios) < args.lengths:
      scenarios.append(draw_scenario(ctx))
    report.run("decode vs NumPy", check_decode, ctx, scenarios, 0, report)
    report.run("masked baseline vs NumPy", check_decode, ctx, scenarios, 1, report)
    report.run("batch isolation", check_isolation, ctx, report)
    report.run("step at p == capacity", check_overflow, ctx, report)
    report.run("reset every row", check_reset_all, ctx, report)
    report.run("one set of plans", check_plans, ctx, after_model, report)
  except NotImplementedYet as e:
    print(f"FAIL lab {LAB} model: {e}")
    return 1
  except WorkerDied as e:
    return died(LAB, e)
  finally:
    lab.close()
  return report.finish()


if __name__ == "__main__":
  raise SystemExit(main())
