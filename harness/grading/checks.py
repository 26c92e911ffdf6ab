"""checks.py: the NumPy checks of a lab (harness/check_23_N.py), one process per lab.

The check module runs once, through checkwrap, on the scratch build with the grade's seed and
number of random lengths (both printed, so a run can be replayed). Its report lines give one
Result per sub-check ("PASS lab 23.1 elementwise: ..." or "FAIL lab 23.1 elementwise: case"
followed by indented details and a replay line). A sub-check that never reported: CRASH or
TIMEOUT when the process died (with the case the harness noted as running), else NOT RUN
(the check stopped earlier, for example at a stub).
"""
import re
import secrets
import sys
from pathlib import Path

from harness.grading import sandbox
from harness.grading.verdict import CRASH, FAIL, NOT_RUN, PASS, TIMEOUT, Result

PROGRESS_ENV = "UOPC_HARNESS_PROGRESS"   # harness.common's note of the case about to run
DETAIL_LINES = 20


def module_for(lab):
  return f"harness.check_{lab.replace('.', '_')}"


def has_check(root, lab):
  return (Path(root) / "harness" / f"check_{lab.replace('.', '_')}.py").is_file()


def run_checks(lab, build_root, rundir, timeout, seed, lengths, replay_base, user=None):
  """{sub-check name: Result} for the lab's check module, run on build_root/build/labs."""
  nonce = secrets.token_hex(16)
  progress = Path(rundir.path) / "progress"
  build = f"{build_root}/build/labs"
  argv = [sys.executable, "-m", "harness.grading.checkwrap", module_for(lab), "--build", build,
          "--seed", str(seed), "--lengths", str(lengths)]
  env = rundir.env(PYTHONPATH=str(build_root), **{PROGRESS_ENV: str(progress)})
  out = sandbox.run(argv, rundir, env, timeout, stdin_text=nonce + "\n", user=user)
  replay = f"{replay_base} --seed {seed} --lengths {lengths}"
  results, status = parse(out.stdout, nonce, lab, build, replay)
  running = progress.read_text().strip() if progress.exists() else ""
  return results, _stopped(out, status, running, timeout), replay


def parse(stdout, nonce, lab, build, replay):
  """({name: Result}, the module's exit status or None) from the tagged lines."""
  results, current, status = {}, None, None
  for raw in stdout.splitlines():
    if not raw.startswith(f"@{nonce} "):
      continue
    line = raw[len(nonce) + 2:].replace(build, "build/labs")
    m = re.match(rf"^(PASS|FAIL) lab {re.escape(lab)} ([^:]+?)(?:: (.*))?$", line)
    if m:
      current = _record(results, m.group(2), m.group(1), m.group(3) or "")
    elif line.startswith("@exit "):
      status = line.split()[1]
    elif current and line.startswith("  "):
      _detail(current, line.strip(), replay)
  return results, status


def _record(results, name, word, text):
  r = results.get(name)
  if r is None:
    r = results[name] = Result(PASS if word == "PASS" else FAIL, text if word == "FAIL" else "")
    if word == "PASS" and text:
      r.detail = text
  elif word == "FAIL":
    r.verdict = FAIL
  if word == "FAIL" and len(r.lines) < DETAIL_LINES:
    r.lines.append(text)
  return r


def _detail(result, text, replay):
  if text.startswith("replay: "):
    result.replay = f"{replay}   (or: {text[len('replay: '):]})"
  elif len(result.lines) < DETAIL_LINES:
    result.lines.append("  " + text)


def _stopped(out, status, running, timeout):
  """The Result for sub-checks that never reported, or None when the module simply finished."""
  where = f" while running: {running}" if running else ""
  if out.timed_out:
    return Result(TIMEOUT, f"the check ran past {timeout * sandbox.timeout_scale():g}s{where}")
  if out.signal:
    return Result(CRASH, f"killed by {sandbox.signal_name(out.signal)}{where}", _tail(out.stderr))
  if status is None:
    return Result(CRASH, f"the check process ended (exit status {out.returncode}) without a report{where}",
                  _tail(out.stderr))
  return Result(NOT_RUN, "the check stopped before this sub-check (see the failure above)")


def _tail(text, n=10):
  return [l for l in text.splitlines() if l.strip()][-n:]
