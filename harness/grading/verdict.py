"""verdict.py: the result of one test, as every kind reports it.

PASS and FAIL are the test's own answer; CRASH (with the signal), TIMEOUT and EXITED EARLY are
what the process did instead of answering; SKIPPED says why it could not run here (no GPU, no
CUDA compiler) and never costs points; NOT RUN says which prerequisite failed.
"""
from dataclasses import dataclass, field

PASS, FAIL, CRASH, TIMEOUT, EXITED, SKIPPED, NOT_RUN = (
  "PASS", "FAIL", "CRASH", "TIMEOUT", "EXITED EARLY", "SKIPPED", "NOT RUN")


@dataclass
class Result:
  verdict: str
  detail: str = ""                              # one line for the table
  lines: list = field(default_factory=list)     # the failure's input, expected vs got, output
  replay: str = ""
  table: list = field(default_factory=list)     # counters: (key, yours, reference, GOOD/BAD)
  data: dict = field(default_factory=dict)      # what dependent tests use (a driver's counters)

  @property
  def passed(self):
    return self.verdict == PASS
