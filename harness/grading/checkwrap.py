"""checkwrap.py: runs one harness check module (harness/check_23_N.py) for the grader.

    python -m harness.grading.checkwrap harness.check_23_1 --build DIR --seed N  (nonce on stdin)

The check's report lines (Python's sys.stdout) go to the original stdout, each prefixed with
the nonce read from stdin; whatever the C code under test writes to file descriptor 1 or 2 goes
to stderr. So the grader believes only lines the harness wrote: a student's printf of
"PASS lab 23.1 ..." carries no nonce. An exception the check lets out becomes one FAIL line.
"""
import importlib
import os
import sys


class Tagged:
  """A text stream that prefixes every line with the nonce."""

  def __init__(self, stream, nonce):
    self.stream, self.nonce, self.pending = stream, nonce, ""

  def write(self, text):
    self.pending += text
    *lines, self.pending = self.pending.split("\n")
    for line in lines:
      self.stream.write(f"@{self.nonce} {line}\n")
    self.stream.flush()
    return len(text)

  def flush(self):
    self.stream.flush()


def main():
  nonce = sys.stdin.readline().strip()
  devnull = os.open(os.devnull, os.O_RDONLY)
  os.dup2(devnull, 0)
  private = os.dup(1)
  os.dup2(2, 1)
  sys.stdout = Tagged(os.fdopen(private, "w"), nonce)
  module, argv = sys.argv[1], sys.argv[2:]
  lab = module.rsplit("_", 2)[-2:]
  try:
    status = importlib.import_module(module).main(argv)
  except BaseException as e:   # SystemExit from argparse included: one line, never a traceback
    print(f"FAIL lab {'.'.join(lab)} setup: the check stopped with {type(e).__name__}: {e}")
    status = 2
  sys.stdout.write(f"@exit {status}\n")
  sys.stdout.flush()
  return 0


if __name__ == "__main__":
  sys.exit(main())
