"""counters.py: the lab drivers, and their counters compared with the golden logs.

A driver test runs bin/lab-23.N on a fresh cache with UOPC_COUNTERS_JSON set: the runtime
writes its counters there at exit, so the grade never reads counters from what the program
prints. A warm test runs the driver twice on one cache and keeps the second run. The driver
passes when it exits 0 (its own checks against an eager computation held) and prints every
line of the lab's expected.log. A counters test compares the declared keys exactly with
goldens/23.N.json, which `make goldens` makes by running solutions/ the same way.
"""
import json
from pathlib import Path

from harness.grading import sandbox
from harness.grading.manifest import ROOT
from harness.grading.verdict import CRASH, FAIL, PASS, TIMEOUT, Result

EXIT_MEANING = {1: "a check of the driver failed", 2: "the runtime refused (compiler, cache, I/O)",
                3: "a student function is not implemented yet"}
GOLDENS = ROOT / "goldens"


def golden_path(lab, root=ROOT):
  return root / "goldens" / f"{lab}.json"


def run_driver(binary, expected_log, rundir, timeout, warm=False, user=None):
  """The Result of the driver; data["counters"] holds the JSON the runtime wrote."""
  runs = 2 if warm else 1
  for k in range(runs):
    json_path = Path(rundir.path) / f"counters-{k}.json"
    env = rundir.env(UOPC_COUNTERS_JSON=str(json_path))
    out = sandbox.run([str(binary)], rundir, env, timeout, user=user, merge=True)
    what = "the warm-up run" if k < runs - 1 else ("the warm run" if warm else "the driver")
    result = _judge(out, expected_log, what, timeout)
    if not result.passed:
      return result
  try:
    result.data["counters"] = json.loads(json_path.read_text())
  except (OSError, ValueError) as e:
    return Result(FAIL, f"the runtime wrote no counters JSON ({e.__class__.__name__})", _tail(out.stdout))
  return result


def _judge(out, expected_log, what, timeout):
  lines = _tail(out.stdout)
  if out.timed_out:
    return Result(TIMEOUT, f"{what} ran past {timeout * sandbox.timeout_scale():g}s", lines)
  if out.signal:
    return Result(CRASH, f"{what} was killed by {sandbox.signal_name(out.signal)}", lines)
  if out.returncode:
    meaning = EXIT_MEANING.get(out.returncode, "unexpected status")
    return Result(FAIL, f"{what} exited with status {out.returncode}: {meaning}", lines)
  printed = set(out.stdout.splitlines())
  missing = [l for l in Path(expected_log).read_text().splitlines() if l.strip() and l not in printed]
  if missing:
    return Result(FAIL, f"{what} did not print the line '{missing[0]}' (from expected.log)", lines)
  return Result(PASS)


def compare(scenario_result, golden, keys):
  """The Result of a counters test: each key yours | reference | GOOD/BAD."""
  yours = scenario_result.data.get("counters", {})
  table, bad = [], []
  for key in keys:
    got, want = yours.get(key), golden.get(key)
    good = got == want and want is not None
    table.append((key, _show(got), _show(want), "GOOD" if good else "BAD"))
    if not good:
      bad.append(f"'{key}': expected {_show(want)}, got {_show(got)}")
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


def _tail(text, n=15):
  return [l for l in text.splitlines() if l.strip()][-n:]
