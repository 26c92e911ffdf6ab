"""hook.py: runs a suite or driver built with the grade hook, and reads the hook's record.

The record comes over a socket the grader made and the binary got as descriptor 1000, which only
the hook's own code may write to (grade_hook.c): "main returned <status>", and for a driver the
process counters. A binary that never returned from main sent nothing. The record is parsed with
limits: at most MAX_COUNTERS counters, names of the runtime's form, 64-bit integer values.
"""
import re
import socket
from dataclasses import dataclass, field

from harness.grading import sandbox

RECORD_MAX = 65536
MAX_COUNTERS = 256
COUNTER_LINE = re.compile(r"^([A-Za-z0-9_. ()-]{1,95})=(-?\d{1,19})$")   # "reuse refused (alias)", "write-backs" (23.3)
HEADER = re.compile(r"^grade-hook 1 (protected|unprotected)$")
RETURNED = re.compile(r"^main returned (-?\d{1,10})$")


@dataclass
class Record:
  """What the hook said: None fields when it said nothing (main never returned)."""
  returned: int = None
  protected: bool = False
  counters: dict = field(default_factory=dict)
  problem: str = ""          # a record that is not the hook's form


UNPROTECTED = []      # set when a record said the hook could not install its filter


def run(argv, rundir, env, timeout, **kwargs):
  """(Outcome, Record) of a hooked binary run in the sandbox."""
  ours, theirs = socket.socketpair()
  try:
    out = sandbox.run(argv, rundir, dict(env, UOPC_GRADE_CHANNEL="1"), timeout, channel=theirs, **kwargs)
    theirs.close()
    record = parse(_drain(ours))
    if record.returned is not None and not record.protected and not UNPROTECTED:
      UNPROTECTED.append("the grade hook could not install its seccomp filter on this machine: "
                         "student code could have written to the verdict channel")
    return out, record
  finally:
    theirs.close()
    ours.close()


def _drain(sock):
  sock.setblocking(False)
  data = b""
  try:
    while len(data) < RECORD_MAX and (chunk := sock.recv(RECORD_MAX - len(data))):
      data += chunk
  except BlockingIOError:
    pass
  return data.decode("ascii", errors="replace")


def parse(text):
  r = Record()
  lines = text.splitlines()
  if not lines:
    return r
  head = HEADER.match(lines[0])
  if not head:
    r.problem = "the record does not start with the hook's header"
    return r
  r.protected = head.group(1) == "protected"
  for line in lines[1:]:
    if (m := RETURNED.match(line)) and r.returned is None:
      r.returned = int(m.group(1))
    elif (m := COUNTER_LINE.match(line)) and r.returned is None and len(r.counters) < MAX_COUNTERS:
      r.counters[m.group(1)] = int(m.group(2))
    else:
      r.problem = f"an unexpected line in the record: {line[:80]!r}"
      r.returned = None
      return r
  return r
