"""checks.py: the NumPy checks of a lab (harness/check_23_N.py): judged here, run in a sandbox.

A check module has two halves (harness/remote.py). Its Lab, the only code that loads the
student's library, runs in a worker process in the sandbox, on the scratch build. Its checks
(the inputs, NumPy's answers, the comparisons) run in a trusted process started from the
grader's own tree, outside the sandbox, which talks to the worker over a socket and prints the
report: "PASS lab 23.1 elementwise: ..." or "FAIL lab 23.1 elementwise: case" followed by
indented details and a replay line. No line the student's code prints can reach that report.

A sub-check that never reported: CRASH or TIMEOUT when the worker died (with the case the check
noted as running), else NOT RUN (the check stopped earlier, for example at a stub).
"""
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

from harness.grading import sandbox, scrub, witness
from harness.grading.manifest import ROOT
from harness.grading.verdict import CRASH, FAIL, NOT_RUN, PASS, TIMEOUT, Result

PROGRESS_ENV = "UOPC_HARNESS_PROGRESS"   # harness.common's note of the case about to run
DETAIL_LINES = 20
PARENT_GRACE = 30                         # seconds the trusted half may outlive its worker


def module_for(lab):
  return f"harness.check_{lab.replace('.', '_')}"


def has_check(lab):
  return (ROOT / "harness" / f"check_{lab.replace('.', '_')}.py").is_file()


def run_checks(lab, ws, timeout, seed, lengths, replay_base, user=None):
  """({sub-check name: Result}, the Result for sub-checks that never reported, replay)."""
  rundir = ws.rundir()
  try:
    return _run(lab, ws, rundir, timeout, seed, lengths, replay_base, user)
  finally:
    rundir.close()


def _run(lab, ws, rundir, timeout, seed, lengths, replay_base, user):
  ours, theirs = socket.socketpair()
  # Beside the run directory, not in it: the worker's sandbox has that directory writable (and as
  # nobody owns it), so a file there could be replaced under the trusted half's feet.
  progress = Path(rundir.output("progress"))
  report_path = Path(rundir.output("report"))
  argv = [sys.executable, "-m", module_for(lab), "--build", "build/labs", "--seed", str(seed),
          "--lengths", str(lengths), "--worker-fd", str(ours.fileno()), "--cache-dir", rundir.cache]
  fds, env = (ours.fileno(),), dict(os.environ, **{PROGRESS_ENV: str(progress)})
  seen, mounts = witness.available(), ws.mounts()
  if seen:   # the trusted half counts the worker's compiles from the witness, not the cache
    seen.take()
    fd, secret = seen.handoff()
    argv += ["--witness-fd", str(fd)]
    fds, mounts = fds + (fd,), seen.mounts(mounts)
    env.update(secret)
  with open(report_path, "wb") as report:
    parent = subprocess.Popen(argv, cwd=ROOT, stdout=report, stderr=subprocess.STDOUT, pass_fds=fds, env=env)
  ours.close()
  worker = [sandbox.python(), "-m", "harness.remote", module_for(lab), "--build", f"{ws.root}/build/labs"]
  env = rundir.env(PYTHONPATH=str(ws.root))
  out = sandbox.run(worker, rundir, env, timeout, user=user, mounts=mounts, channel=theirs)
  theirs.close()
  try:
    parent.wait(PARENT_GRACE)
  except subprocess.TimeoutExpired:
    parent.kill()
    parent.wait()
  replay = f"{replay_base} --seed {seed} --lengths {lengths}"
  results = parse(report_path.read_text(errors="replace"), lab, replay)
  running = progress.read_text().strip() if progress.exists() else ""
  stopped = _stopped(out, parent.returncode, running, timeout)
  setup = results.pop("setup", None)
  if setup and stopped.verdict == NOT_RUN:   # the Lab could not start: its reason for every sub-check
    stopped = Result(FAIL, f"the check could not start: {setup.detail}", setup.lines[1:] + _tail(out.stderr))
  return results, stopped, replay


def parse(text, lab, replay):
  """{name: Result} from the trusted half's report."""
  results, current = {}, None
  for line in text.splitlines():
    m = re.match(rf"^(PASS|FAIL) lab {re.escape(lab)} ([^:]+?)(?:: (.*))?$", line)
    if m:
      current = _record(results, m.group(2), m.group(1), scrub.line(m.group(3) or ""))
    elif current and line.startswith("  "):
      _detail(current, scrub.line(line.strip()), replay)
  return results


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


def _stopped(out, parent_status, running, timeout):
  """The Result for sub-checks that never reported."""
  where = f" while running: {scrub.line(running)}" if running else ""
  if out.timed_out:
    return Result(TIMEOUT, f"the check ran past {sandbox.limit_text(timeout)}{where}")
  if out.signal:
    return Result(CRASH, f"killed by {sandbox.signal_name(out.signal)}{where}", _tail(out.stderr))
  if parent_status in (2, 3) and out.returncode:
    return Result(CRASH, f"the check's worker ended (exit status {out.returncode}){where}", _tail(out.stderr))
  return Result(NOT_RUN, "the check stopped before this sub-check (see the failure above)")


def _tail(text, n=10):
  return scrub.lines([l for l in text.splitlines() if l.strip()][-n:], n)
