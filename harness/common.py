"""common.py: what every lab check shares: its report, progress notes and array descriptions.

A check module runs named sub-checks; each failure prints the lab, the sub-check, the input,
expected against got, and a command that replays the run with the same seed. Nothing prints a
raw traceback: an unexpected exception becomes one FAIL line naming it.
"""
import argparse
import importlib
import os
import random
import re
import signal
import socket
from pathlib import Path

import numpy as np

from harness import remote

DTYPE_NAMES = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64",
               np.dtype(np.int32): "i32", np.dtype(np.int64): "i64"}
MAX_FAILURES_PER_CHECK = 5
PROGRESS_ENV = "UOPC_HARNESS_PROGRESS"


def quiet_pipe():
  """A reader that stops early (| head) ends the check quietly, without a traceback."""
  signal.signal(signal.SIGPIPE, signal.SIG_DFL)


def pick_seed(seed):
  return seed if seed is not None else random.SystemRandom().randrange(2**31)


def start_check(lab, module, args, defaults):
  """What every check's main does first: quiet pipes, the seed, the replay command (naming the
  options in `defaults` that differ from their default) and the header line. Returns
  (seed, replay)."""
  quiet_pipe()
  seed = pick_seed(args.seed)
  changed = "".join(f" --{name} {getattr(args, name)}" for name, default in defaults.items()
                    if getattr(args, name) != default)
  replay = f".venv/bin/python -m harness.{module} --build {args.build} --seed {seed}{changed}"
  shown = "".join(f" {name}={getattr(args, name)}" for name in defaults if name != "lengths")
  print(f"lab {lab} check: seed={seed}{shown} build={args.build}", flush=True)
  return seed, replay


def progress(note):
  """Records what is about to run, so that selfcheck can name the case when C code crashes."""
  path = os.environ.get(PROGRESS_ENV)
  if path:
    with open(path, "w") as f:
      f.write(note)


def dtype_name(arr):
  return DTYPE_NAMES.get(arr.dtype, str(arr.dtype))


def strides_of(arr):
  """Strides in elements, as the runtime counts them."""
  return tuple(s // arr.itemsize for s in arr.strides)


def describe(arr, name="x"):
  return f"{name}: shape={arr.shape} dtype={dtype_name(arr)} strides={strides_of(arr)}"


class Report:
  """Collects one lab check's results and prints them as they come."""

  def __init__(self, lab, replay):
    self.lab, self.replay = lab, replay
    self.failed, self.passed, self.current, self.count = [], [], None, 0

  def run(self, name, fn, *args):
    """Runs one sub-check; fn returns a short note for its PASS line. A worker that died is not
    this sub-check's failure to report: it ends the check (see connect)."""
    self.current, self.count = name, 0
    try:
      note = fn(*args)
    except remote.WorkerDied:
      raise
    except Exception as e:   # the whole point: one line, never a traceback
      self.fail(f"stopped by {type(e).__name__}: {e}")
    if self.count == 0:
      self.passed.append(name)
      print(f"PASS lab {self.lab} {name}" + (f": {note}" if note else ""), flush=True)
    elif self.count > MAX_FAILURES_PER_CHECK:
      print(f"  ... {self.count - MAX_FAILURES_PER_CHECK} more failures in this check", flush=True)

  def fail(self, case, *details):
    """One failing case of the current sub-check: the input, then expected vs got."""
    self.count += 1
    if self.count == 1:
      self.failed.append(self.current)
    if self.count > MAX_FAILURES_PER_CHECK:
      return
    print(f"FAIL lab {self.lab} {self.current}: {case}", flush=True)
    for line in details:
      print(f"  {line}", flush=True)
    print(f"  replay: {self.replay}", flush=True)

  def finish(self):
    total = len(self.passed) + len(self.failed)
    if self.failed:
      print(f"lab {self.lab}: {len(self.failed)} of {total} checks failed ({', '.join(self.failed)})")
      return 1
    print(f"lab {self.lab}: all {total} checks passed")
    return 0


def compare(got, expected, rtol):
  """None when got matches expected within rtol (relative), else lines naming the first bad
  index, expected vs got there, and the largest error."""
  got64, exp64 = got.astype(np.float64), expected.astype(np.float64)
  with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
    rel = np.abs(got64 - exp64) / np.maximum(np.abs(exp64), np.finfo(np.float64).tiny)
  rel = np.where(np.isnan(rel), np.inf, rel)
  bad = np.flatnonzero(~(rel <= rtol))
  if bad.size == 0:
    return None
  i, worst = int(bad[0]), int(np.argmax(rel))
  return [f"index {i}: expected {float(exp64.flat[i])!r} got {float(got64.flat[i])!r} ({bad.size} of {got.size} "
          f"elements off)",
          f"largest relative error {rel.flat[worst]:.3g} at index {worst} (rtol {rtol:g}): "
          f"expected {float(exp64.flat[worst])!r} got {float(got64.flat[worst])!r}"]


NOT_IMPLEMENTED = "UOPC_E_NOT_IMPLEMENTED"



class NotImplementedYet(Exception):
  """A student function still returns UOPC_E_NOT_IMPLEMENTED; where names it."""

  def __init__(self, where, message):
    super().__init__(f"{where} is not implemented yet ({NOT_IMPLEMENTED}: {message})")
    self.where = where


class LabReport(Report):
  """A Report that stops at the first stub: every later check would only repeat it."""

  def __init__(self, lab, replay):
    super().__init__(lab, replay)
    self.stub, self.skipped = None, []

  def run(self, name, fn, *args):
    if self.stub:
      self.skipped.append(name)
      return
    super().run(name, self.stopping_at_stub(fn), *args)

  def stopping_at_stub(self, fn):
    def run(*args):
      try:
        return fn(*args)
      except NotImplementedYet as e:
        self.stub = e.where
        self.count += 1
        self.failed.append(self.current)
        print(f"FAIL lab {self.lab} {self.current}: {self.stub} is not implemented yet ({NOT_IMPLEMENTED})",
              flush=True)
    return run

  def finish(self):
    if not self.stub:
      return super().finish()
    print(f"lab {self.lab}: stopped at a stub ({self.stub}); "
          f"{len(self.skipped)} later checks not run")
    return 1


# ---- the worker -------------------------------------------------------------------------------

def error_data(rt, status, err):
  """A C call's error as data for the parent: its code's name ("UOPC_OK" when status is 0), where
  and its message."""
  return {"name": rt.error_name(err.code) if status else "UOPC_OK",
          "where": err.where.decode(errors="replace"), "message": err.message.decode(errors="replace")}


def failure(err):
  """error_data as one line: "UOPC_E_BOUNDS in sym_dim_check: dim 'n' = 65 outside [1, 64]"."""
  return f"{err['name']} in {err['where']}: {err['message']}"


ENTRY = re.compile(r"^[A-Za-z0-9_.]+-[0-9a-f]{64}$")


def cache_entries(cache):
  """The names of the whole entries (<entry>-<sha256>/ with a manifest) in a cache directory."""
  try:
    return {p.name for p in Path(cache).iterdir() if ENTRY.match(p.name) and p.is_dir() and not p.is_symlink()
            and (p / "manifest").is_file()}
  except OSError:
    return set()


def compile_count(args):
  """What a check counts the worker's compiles by, where the worker cannot forge them: a function
  giving the compiles since it was made. The grader's compile witness when the grader handed it
  over (--witness-fd, harness/grading/witness.py), else the entries that appear in the worker's
  cache directory (--cache-dir; a directory the worker can write); None with neither."""
  if args.witness_fd is not None:
    from harness.grading import witness   # the trusted half only: the sandboxed worker has no grading/
    seen = witness.Handed(args.witness_fd, os.environ.get(witness.SECRET_ENV, ""))
    seen.take()   # the worker's start-up is not the checks'
    counted = [0]

    def since():
      counted[0] += seen.take()
      return counted[0]
    return since
  if args.cache_dir:
    before = cache_entries(args.cache_dir)
    return lambda: len(cache_entries(args.cache_dir) - before)
  return None


def worker_options(ap):
  """The options of a check's main that say where its Lab runs (harness/remote.py)."""
  ap.add_argument("--worker-fd", type=int, help=argparse.SUPPRESS)
  ap.add_argument("--cache-dir", help=argparse.SUPPRESS)
  ap.add_argument("--witness-fd", type=int, help=argparse.SUPPRESS)   # the grader's compile witness
  ap.add_argument("--local", action="store_true", help="load the library in this process (debugging)")


def connect(module, args, keep_alignment=False):
  """The check's Lab: a worker the grader started (--worker-fd, sandboxed), a worker started here,
  or (--local) the library in this process. keep_alignment: the worker's buffers keep the
  parent's addresses modulo 64 (the code under test chooses paths by alignment). Raises what the
  Lab's constructor raised."""
  from harness import ffi
  known = (ffi.HarnessError, ffi.UopcError, NotImplementedYet)
  if args.worker_fd is not None:
    return remote.Remote(socket.socket(fileno=args.worker_fd), known, keep_alignment=keep_alignment)
  if args.local:
    return remote.Local(importlib.import_module(module).Lab(args.build))
  if args.cache_dir is None:
    args.cache_dir = os.environ.get("UOPC_CACHE_DIR")
  return remote.start(module, args.build, known, keep_alignment=keep_alignment)


def died(lab, error):
  """The line a check prints when its worker is gone; the grader reads the rest from the worker."""
  print(f"lab {lab}: the worker stopped: {error}", flush=True)
  return 3
