"""results.py: Gradescope's results.json, rewritten (atomically) after every test.

Each test becomes {name, number, score, max_score, status, output, visibility}; a killed run
leaves the file as it was after the last finished test. The grader's console output stays
hidden from students (stdout_visibility): it prints every failure, held-out tests' included,
which a student sees only through each test's own visibility. SKIPPED tests (no GPU, no CUDA compiler,
an instructor-only suite absent from this tree) carry max_score 0: a missing GPU never costs.
"""
import json
import os
import tempfile
import time
from pathlib import Path

from harness.grading.verdict import PASS


class ResultsFile:
  def __init__(self, path):
    self.path = Path(path) if path else None
    self.tests, self.start, self.notes = [], time.monotonic(), []

  def add(self, lab, number, test, result, score, counted, output):
    self.tests.append({
      "name": f"{lab} {test.id}: {test.title}",
      "number": number,
      "score": score,
      "max_score": test.points if counted else 0,
      "status": "passed" if result.verdict == PASS else "failed",
      "output": output,
      "visibility": test.visibility,
    })
    self.write()

  def add_note(self, lab, number, name, ok, output, visibility="visible"):
    """A zero-point entry (a lab's build, its seed) so that its output reaches the student."""
    self.tests.append({"name": f"{lab} {name}", "number": number, "score": 0, "max_score": 0,
                       "status": "passed" if ok else "failed", "output": output, "visibility": visibility})
    self.write()

  def write(self, summary=""):
    if not self.path:
      return
    data = {"score": sum(t["score"] for t in self.tests),
            "execution_time": round(time.monotonic() - self.start, 1),
            "output": summary or "\n".join(self.notes), "visibility": "visible",
            "stdout_visibility": "hidden", "tests": self.tests}
    self.path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".results-")
    with os.fdopen(fd, "w") as f:
      json.dump(data, f, indent=1)
    os.chmod(tmp, 0o644)
    os.replace(tmp, self.path)
