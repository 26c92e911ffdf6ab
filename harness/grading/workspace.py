"""workspace.py: builds one lab of a submission in a scratch copy of the instructor's tree.

The copy holds the instructor's runtime (uopc/), headers, drivers, tests, harness and Makefile;
only the student files of the lab under grade (the manifest's student_files) come from the
submission, so student edits to anything else are ignored. The earlier stages it links come
from solutions/ (or, with own_stages or in a tree without solutions/, from the submission), so
one broken stage cannot zero the next. The build runs the project Makefile with IMPL=labs, so
the flags are those of `make test`; grade_hook.h is appended to the copy's tests/testutil.h to
run one case per process. Instructor-only suites (tests/hidden/23.N/x.c) become tests/23.N/hidden_x.c.
"""
import os
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from harness.grading import sandbox
from harness.grading.manifest import ROOT

HOOK = Path(__file__).with_name("grade_hook.h")
BUILD = "build/labs"
MAKE_TIMEOUT = 300
DIAGNOSTIC_LINES = 40


@dataclass
class Build:
  """A built scratch copy: which targets exist, and the compiler's diagnostics."""
  root: Path
  ok: bool                      # the lab's library was built
  log: str
  missing: list = field(default_factory=list)   # targets that did not build
  notes: list = field(default_factory=list)     # where each stage's student files came from

  def built(self, rel):
    return (self.root / rel).exists()


def find_student_file(submission, lab_dir, name):
  """The submission's copy of a student file: tree layout (labs/<lab>/x.c), a lab folder
  (<lab>/x.c) or a flat upload (x.c). None when it has none."""
  for rel in (Path("labs") / lab_dir / name, Path(lab_dir) / name, Path(name)):
    if (submission / rel).is_file():
      return submission / rel
  return None


def suite_name(suite):
  """A suite's binary name: test_x, or hidden_test_x for tests/hidden/."""
  return ("hidden_" if "/hidden/" in suite else "") + Path(suite).stem


def suite_target(suite, lab):
  return f"{BUILD}/tests/{lab}/{suite_name(suite)}"


def driver_target(lab):
  return f"{BUILD}/bin/lab-{lab}"


class Workspace:
  """The scratch copy for one lab; remove() deletes it."""

  def __init__(self, manifest, manifests, submission, impl, own_stages, user=None):
    self.m, self.manifests = manifest, manifests
    self.submission = Path(submission) if submission else None
    self.impl, self.own_stages, self.user = impl, own_stages, user
    self.root = Path(tempfile.mkdtemp(prefix=f"uopc-grade-{manifest.lab}-"))
    self.notes = []

  def remove(self):
    shutil.rmtree(self.root, ignore_errors=True)

  def prepare(self):
    """Copies the tree; returns the problems found (a student file missing)."""
    for rel in ("uopc", "harness", "Makefile"):
      _copy(ROOT / rel, self.root / rel)
    (self.root / "tests" / self.m.lab).mkdir(parents=True)
    shutil.copy2(ROOT / "tests" / "testutil.h", self.root / "tests" / "testutil.h")
    shutil.copy2(HOOK, self.root / "tests" / HOOK.name)
    with open(self.root / "tests" / "testutil.h", "a") as f:
      f.write('\n#include "grade_hook.h"   /* added by the grader */\n')
    for suite in {t.spec["suite"] for t in self.m.tests if t.kind == "cmocka"}:
      if (ROOT / suite).is_file():
        shutil.copy2(ROOT / suite, self.root / "tests" / self.m.lab / (suite_name(suite) + ".c"))
    problems = []
    for lab in self.m.deps + [self.m.lab]:
      problems += self._lab_files(self.manifests[lab], lab == self.m.lab)
    if self.user:
      subprocess.run(["chown", "-R", f"{self.user.pw_uid}:{self.user.pw_gid}", str(self.root)], check=False)
    return problems

  def _lab_files(self, m, graded):
    """The lab's folder from the instructor, its student files from their source."""
    _copy(ROOT / m.lab_dir, self.root / m.lab_dir)
    where, find = self._source(m, graded)
    self.notes.append(f"lab {m.lab}: student files from {where}")
    problems = []
    for name in m.student_files:
      src = find(name)
      if src is None:
        problems.append(f"{m.lab_dir}/{name} is missing from {where}")
        (self.root / m.lab_dir / name).unlink(missing_ok=True)
      else:
        shutil.copyfile(src, self.root / m.lab_dir / name)
    return problems

  def _source(self, m, graded):
    """(where, name -> path or None) for a lab's student files."""
    lab_name = Path(m.lab_dir).name
    solutions = ROOT / "solutions" / lab_name
    if self.impl == "solutions" or (not graded and not self.own_stages and solutions.is_dir()):
      return "solutions/", lambda name: _file(solutions / name)
    if self.submission is None:
      return "labs/ (this tree)", lambda name: _file(ROOT / m.lab_dir / name)
    return str(self.submission), lambda name: find_student_file(self.submission, lab_name, name)

  def build(self, targets):
    """Runs make for the lab's library and the targets (-k: a failed target costs only the
    tests that need it). Returns a Build."""
    lib = f"{BUILD}/lib/liblab{self.m.lab.replace('.', '_')}.so"
    argv = ["make", "-k", "-s", f"-j{os.cpu_count() or 2}", "IMPL=labs", lib] + targets
    rundir = sandbox.RunDir(self.user)
    try:
      script = f"cd {shlex.quote(str(self.root))} && exec {shlex.join(argv)} 2>&1"
      out = sandbox.run(["bash", "-c", script], rundir, rundir.env(), MAKE_TIMEOUT, user=self.user)
    finally:
      rundir.close()
    log = out.stdout + out.stderr
    if out.timed_out:
      log += f"\n(the build took longer than {MAKE_TIMEOUT}s and was stopped)"
    missing = [t for t in [lib] + targets if not (self.root / t).exists()]
    return Build(self.root, lib not in missing, _diagnostics(log, self.root), missing, self.notes)


def _file(path):
  return path if path.is_file() else None


def _copy(src, dst):
  if src.is_dir():
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", "build"))
  else:
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, dst)


def _diagnostics(log, root):
  """gcc's diagnostics with the scratch path removed, at most DIAGNOSTIC_LINES lines."""
  lines = [l.replace(str(root) + "/", "") for l in log.splitlines()
           if not l.startswith(("make: ***", "make[", "make: Target")) and "Waiting for unfinished jobs" not in l]
  if len(lines) > DIAGNOSTIC_LINES:
    lines = lines[:DIAGNOSTIC_LINES] + [f"... {len(lines) - DIAGNOSTIC_LINES} more lines"]
  return "\n".join(lines)
