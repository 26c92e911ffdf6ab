"""cmocka.py: runs one cmocka case in its own process and reads its verdict.

The suite binary was built with grade_hook.h, so UOPC_GRADE_CASE selects the case and the
nonce line proves the group returned. The verdict comes from the process first (a signal is
a CRASH, a timeout a TIMEOUT, exit 0 without the nonce line EXITED EARLY), then from cmocka's
lines for the case: [       OK ], [  FAILED  ] (with the messages before it; an exception
that cmocka caught, such as a segmentation fault, is a CRASH) or [  SKIPPED ].
"""
import re
import secrets

from harness.grading import sandbox
from harness.grading.verdict import CRASH, EXITED, FAIL, PASS, SKIPPED, TIMEOUT, Result

EXCEPTION = re.compile(r"Test failed with exception: (.*)")
RUN_COUNT = re.compile(r"^\[==========\] (\d+) test\(s\) run\.", re.M)
MESSAGE_LINES = 25


def run_case(binary, case, rundir, env, timeout, user=None, gpu=False):
  """The Result of one case of the suite at binary."""
  nonce = secrets.token_hex(16)
  out = sandbox.run([str(binary)], rundir, dict(env, UOPC_GRADE_CASE=case), timeout,
                    stdin_text=nonce + "\n", user=user, gpu=gpu, merge=True)
  return interpret(out, case, nonce, timeout * sandbox.timeout_scale())


def interpret(out, case, nonce, timeout):
  text = out.stdout + "\n" + out.stderr
  messages = case_messages(text, case)
  if out.timed_out:
    return Result(TIMEOUT, f"no answer after {timeout:g}s", messages)
  if out.signal:
    return Result(CRASH, f"killed by {sandbox.signal_name(out.signal)}", messages)
  caught = EXCEPTION.search(text)
  if caught:
    return Result(CRASH, f"{caught.group(1).strip()} (caught by cmocka)", messages)
  summary = re.search(rf"^@grade {nonce} failed=(\d+)$", text, re.M)
  if summary is None:
    word = f"exit status {out.returncode}" if out.returncode else "exit status 0"
    return Result(EXITED, f"the suite ended ({word}) before cmocka finished: exit() or _exit() in a test?",
                  messages)
  ran = RUN_COUNT.search(text)
  if ran and ran.group(1) == "0":
    return Result(FAIL, f"the suite has no case named {case} (grader manifest out of date)")
  if re.search(rf"^\[  SKIPPED \] {re.escape(case)}$", text, re.M):
    return Result(SKIPPED, first_line(messages) or "skipped by the test", messages)
  if summary.group(1) == "0" and re.search(rf"^\[       OK \] {re.escape(case)}$", text, re.M):
    return Result(PASS)
  return Result(FAIL, first_line(messages) or f"failed (exit status {out.returncode})", messages)


def case_messages(text, case):
  """The lines the case printed between its RUN line and its verdict (cmocka's own bracketed
  lines left out), at most MESSAGE_LINES."""
  lines, inside = [], False
  for line in text.splitlines():
    if line.startswith(f"[ RUN      ] {case}"):
      inside = True
      continue
    if inside and re.match(r"^\[ *(OK|FAILED|SKIPPED|PASSED|==========) *\]", line):
      break
    if inside and line.strip() and not line.startswith("@grade "):
      lines.append(line.replace("[  ERROR   ] --- ", "").replace("[   LINE   ] --- ", ""))
  return lines[:MESSAGE_LINES] + ([f"... {len(lines) - MESSAGE_LINES} more lines"] if len(lines) > MESSAGE_LINES else [])


def first_line(lines):
  return next((l.strip() for l in lines if l.strip()), "")
