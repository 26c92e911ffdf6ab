"""counters.py: the lab drivers, and their counters compared with the golden logs.

A driver test runs bin/lab-23.N, linked with the grade hook, on a fresh cache: when its main
returns, the hook sends main's status and the process counters over the grader's channel
(grade_hook.c), so neither a line the program prints nor a file it writes can stand in for them.
A warm test runs the driver twice on one cache and keeps the second run, which sees the cache
read-only: every program must come from disk. The driver passes when its main returned 0 and
the process exited 0 (its own checks against an eager computation held) and it printed every
line of the lab's expected.log (read before any student code ran).

The compile counts are also checked against what the grader sees: the compiles the grader's
compile witness recorded during the run (witness.py: each compile the runtime spawns tells the
grader over a socket the student's process cannot reach or forge before the compiler runs), which
must equal the 'compiler invocations' the process reported. The cache directory is the student's
to write (an entry can be deleted or faked), so it is counted only where the witness cannot be
bound (the fallback without bubblewrap): the cache entries that appeared (a directory
<entry>-<sha256> with a manifest). A counters test then compares the declared
keys exactly with goldens/23.N.json, which `make goldens` makes by running solutions/ this way.
"""
import json
import re
from pathlib import Path

from harness.grading import hook, sandbox, scrub, witness
from harness.grading.manifest import ROOT
from harness.grading.verdict import CRASH, EXITED, FAIL, PASS, TIMEOUT, Result

EXIT_MEANING = {1: "a check of the driver failed", 2: "the runtime refused (compiler, cache, I/O)",
                3: "a student function is not implemented yet"}
ENTRY = re.compile(r"^[A-Za-z0-9_.]+-[0-9a-f]{64}$")
COMPILES = "compiler invocations"
TAIL_LINES = 15


def golden_path(lab, root=ROOT):
  return root / "goldens" / f"{lab}.json"


def cache_entries(cache):
  """The names of the whole entries in a cache directory."""
  path = Path(cache)
  try:
    return {p.name for p in path.iterdir() if ENTRY.match(p.name) and p.is_dir() and not p.is_symlink()
            and (p / "manifest").is_file()}
  except OSError:
    return set()


def run_driver(binary, expected_lines, rundir, timeout, warm=False, user=None, mounts=None):
  """The Result of the driver; data["counters"] holds the counters the hook sent, and
  data["observed"] the compiles of its (last) run the grader saw: {"compiles": n, "by": "witness"},
  or "cache" (the entries it added) without the witness. expected_lines: expected.log's lines."""
  runs = 2 if warm else 1
  for k in range(runs):
    last = k == runs - 1
    what = "the warm-up run" if not last else ("the warm run" if warm else "the driver")
    run_mounts = mounts or sandbox.Mounts()
    if warm and last:   # the warm run may only read the cache
      run_mounts = sandbox.Mounts(run_mounts.ro, run_mounts.rw, run_mounts.hide, run_mounts.show,
                                  lock=run_mounts.lock + [rundir.cache])
    before = cache_entries(rundir.cache)
    seen = witness.available()
    if seen:
      seen.take()   # nothing of an earlier run is this one's
      run_mounts = seen.mounts(run_mounts)
    out, record = hook.run([str(binary)], rundir, rundir.env(UOPC_GRADE_COUNTERS="1"), timeout, user=user,
                           merge=True, mounts=run_mounts)
    compiles = seen.take() if seen else None
    result = _judge(out, record, expected_lines, what, timeout)
    if not result.passed:
      return result
  result.data["counters"] = record.counters
  result.data["observed"] = {"compiles": compiles, "by": "witness"} if compiles is not None else \
    {"compiles": len(cache_entries(rundir.cache) - before), "by": "cache"}
  return result


def _judge(out, record, expected_lines, what, timeout):
  lines = scrub.lines(_tail(out.stdout), TAIL_LINES)
  if out.timed_out:
    return Result(TIMEOUT, f"{what} ran past {sandbox.limit_text(timeout)}", lines)
  if out.signal:
    return Result(CRASH, f"{what} was killed by {sandbox.signal_name(out.signal)}", lines)
  if record.problem:
    return Result(FAIL, f"{what}: the grade hook's record is not valid ({record.problem})", lines)
  if record.returned is None:
    return Result(EXITED, f"{what} ended (exit status {out.returncode}) before its main returned", lines)
  status = record.returned if record.returned else out.returncode
  if status:
    meaning = EXIT_MEANING.get(status, "unexpected status")
    return Result(FAIL, f"{what} exited with status {status}: {meaning}", lines)
  printed = set(out.stdout.splitlines())
  missing = [l for l in expected_lines if l.strip() and l not in printed]
  if missing:
    return Result(FAIL, f"{what} did not print the line '{scrub.line(missing[0])}' (from expected.log)", lines)
  if not record.counters:
    return Result(FAIL, f"{what}: the grade hook sent no counters (is libuopc.so linked?)", lines)
  return Result(PASS)


def compare(scenario_result, golden, keys):
  """The Result of a counters test: each key yours | reference | GOOD/BAD, then the compile
  count against the compiles the grader saw (the witness's records, else the new cache entries)."""
  yours = scenario_result.data.get("counters", {})
  table, bad = [], []
  for key in keys:
    got, want = yours.get(key), golden.get(key)
    good = got == want and want is not None
    table.append((key, _show(got), _show(want), "GOOD" if good else "BAD"))
    if not good:
      bad.append(f"'{key}': expected {_show(want)}, got {_show(got)}")
  observed = scenario_result.data.get("observed", {})
  seen = observed.get("compiles")
  if COMPILES in keys and seen is not None and yours.get(COMPILES) != seen:
    by_witness = observed.get("by") == "witness"
    table.append((f"{COMPILES} ({'seen by the grader' if by_witness else 'cache'})", _show(seen),
                  _show(golden.get(COMPILES)), "BAD"))
    said = f"'{COMPILES}' says {_show(yours.get(COMPILES))}"
    bad.insert(0, f"{said}, but the grader saw the compiler start {seen} time{'' if seen == 1 else 's'}"
               if by_witness else f"{said}, but {seen} entries appeared in the cache")
  if bad:
    return Result(FAIL, bad[0] + (f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""), table=table)
  return Result(PASS, f"{len(keys)} counters match", table=table)


def load_golden(lab, scenario, root=ROOT):
  """The golden counters of a scenario; raises KeyError or OSError with a readable message."""
  for path in (golden_path(lab, root), root / "goldens" / "hidden" / f"{lab}.json"):
    if path.exists():
      data = json.loads(path.read_text())
      if scenario in data.get("scenarios", {}):
        return data["scenarios"][scenario]
  raise KeyError(f"goldens/{lab}.json has no scenario '{scenario}': run make goldens")


def _show(v):
  return "(absent)" if v is None else str(v)


def _tail(text, n=TAIL_LINES):
  return [l for l in text.splitlines() if l.strip()][-n:]
