"""cmocka.py: runs one cmocka case in its own sandboxed process and judges it.

The suite binary was linked with the grade hook (grade_hook.c), which selects the case
(UOPC_GRADE_CASE, removed from the environment before student code runs, so that it cannot
key on the case) and, when the suite's main returns, reports its status (cmocka's count of
failed cases) over a channel the student's code cannot write to. So the verdict rests on that
record, not on what the process prints: a signal is a CRASH, a timeout a TIMEOUT, no record
(exit(), _exit() or a forged summary before main returned) EXITED EARLY; then main must have
returned 0, the process must have exited 0, and cmocka must have printed [ OK ] for the case.
cmocka's own lines still give the messages of a failure and say when it caught a signal.
"""
import re

from harness.grading import hook, sandbox, scrub
from harness.grading.verdict import CRASH, EXITED, FAIL, PASS, SKIPPED, TIMEOUT, Result

EXCEPTION = re.compile(r"Test failed with exception: (.*)")
RUN_COUNT = re.compile(r"^\[==========\] (\d+) test\(s\) run\.", re.M)
MESSAGE_LINES = 25


def run_case(binary, case, rundir, env, timeout, user=None, gpu=False, mounts=None):
  """The Result of one case of the suite at binary."""
  out, record = hook.run([str(binary)], rundir, dict(env, UOPC_GRADE_CASE=case), timeout, user=user, gpu=gpu,
                         merge=True, mounts=mounts)
  return interpret(out, record, case, timeout)


def ended_early(out, record, text, timeout, messages, exited_hint=""):
  """The Result of a run that did not end by main returning normally (a timeout, a signal, an
  exception cmocka caught, a bad or missing hook record), or None: one case and a whole suite
  are judged alike. timeout: the test's own limit (the run had it times the scale)."""
  if out.timed_out:
    return Result(TIMEOUT, f"no answer after {sandbox.limit_text(timeout)}", messages)
  if out.signal == 31:   # SIGSYS: the grade hook's seccomp filter
    return Result(CRASH, "killed by SIGSYS: it touched the grader's channel or a call the grade forbids "
                         "(ptrace, process_vm_*, pidfd_getfd, io_uring)", messages)
  if out.signal:
    return Result(CRASH, f"killed by {sandbox.signal_name(out.signal)}", messages)
  caught = EXCEPTION.search(text)
  if caught:
    what = scrub.line(caught.group(1).strip())
    hint = f"; {sandbox.BOUNDS_TRAP}" if what.startswith("Illegal instruction") else ""
    return Result(CRASH, f"{what} (caught by cmocka{hint})", messages)
  if record.problem:
    return Result(FAIL, f"the grade hook's record is not valid ({record.problem})", messages)
  if record.returned is None:
    return Result(EXITED, f"the suite ended (exit status {out.returncode}) before its main returned{exited_hint}",
                  messages)
  return None


def interpret(out, record, case, timeout):
  text = out.stdout + "\n" + out.stderr
  messages = case_messages(text, case)
  early = ended_early(out, record, text, timeout, messages, ": exit(), _exit() or exec in a test?")
  if early:
    return early
  ran = RUN_COUNT.search(text)
  if ran and ran.group(1) == "0":
    return Result(FAIL, f"the suite has no case named {case} (grader manifest out of date)")
  clean = record.returned == 0 and out.returncode == 0
  if clean and re.search(rf"^\[  SKIPPED \] {re.escape(case)}$", text, re.M):
    return Result(SKIPPED, first_line(messages) or "skipped by the test", messages)
  if clean and re.search(rf"^\[       OK \] {re.escape(case)}$", text, re.M):
    return Result(PASS)
  why = f"failed (main returned {record.returned}, exit status {out.returncode})"
  return Result(FAIL, first_line(messages) or why, messages)


def case_messages(text, case):
  """The lines the case printed between its RUN line and its verdict (cmocka's own bracketed
  lines left out), scrubbed and at most MESSAGE_LINES."""
  lines, inside = [], False
  for line in text.splitlines():
    if line.startswith(f"[ RUN      ] {case}"):
      inside = True
      continue
    if inside and re.match(r"^\[ *(OK|FAILED|SKIPPED|PASSED|==========) *\]", line):
      break
    if inside and line.strip():
      lines.append(line.replace("[  ERROR   ] --- ", "").replace("[   LINE   ] --- ", ""))
  return scrub.lines(lines, MESSAGE_LINES)


def first_line(lines):
  return next((l.strip() for l in lines if l.strip()), "")


PASSED_LINE = re.compile(r"^\[  PASSED  \] (\d+) test\(s\)\.", re.M)
FAILED_CASE = re.compile(r"^\[  FAILED  \] (\w+)$", re.M)


def run_suite(binary, rundir, env, timeout, user=None, mounts=None):
  """The Result of a whole suite (every case), judged as run_case judges one: PASS only when
  main returned 0 by the hook's record, the process exited 0 and cmocka passed every case."""
  out, record = hook.run([str(binary)], rundir, env, timeout, user=user, merge=True, mounts=mounts)
  return interpret_suite(out, record, timeout)


def interpret_suite(out, record, timeout):
  text = out.stdout + "\n" + out.stderr
  failed = list(dict.fromkeys(FAILED_CASE.findall(text)))
  messages = [l for case in failed for l in case_messages(text, case)][:MESSAGE_LINES]
  early = ended_early(out, record, text, timeout, messages)
  if early:
    return early
  ran = RUN_COUNT.search(text)
  if not ran or ran.group(1) == "0":
    return Result(FAIL, "the suite ran no test case")
  passed = PASSED_LINE.search(text)
  if record.returned == 0 and out.returncode == 0 and not failed and passed and passed.group(1) == ran.group(1):
    return Result(PASS, f"{ran.group(1)} test case{'s' if ran.group(1) != '1' else ''} passed")
  first = f"{failed[0]}: {first_line(messages)}" if failed else ""
  return Result(FAIL, first or f"failed (main returned {record.returned}, exit status {out.returncode})", messages)
