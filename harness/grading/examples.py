"""examples.py: the runs the lab READMEs quote, made again and compared (part of `make test`).

    .venv/bin/python -m harness.grading.examples --check     exit 1 when a quoted run differs
    .venv/bin/python -m harness.grading.examples --write     rewrite the quoted blocks from a run

A README marks each block it quotes from a run with a comment on the line before it (the rest
of the block is the indented text that follows, as Markdown shows it):

    <!-- example: make lab-23.1 -->                            the table of the untouched stubs
    <!-- example: make lab-23.1 with sym_dim.c -->             ... with those files from solutions/
    <!-- example: expected.log -->                             the lab's expected.log, line for line

A table is what `make lab-23.N` prints after the grader's header lines: the grader's visible
tests of that lab (check mode, as tools/run-labs.sh runs them, with seed 1) on a scratch
submission of the stubs in labs/ and tests/student/ (and the named files of solutions/, the
experiment's test_my_guard.c too), to its `next:` line. (tools/run-labs.sh's line after it, which
says where the driver stopped, comes from the driver's run: not quoted, so not kept twice.) It needs solutions/ and the
stubs, so a handout (whose labs/ is the student's) skips it.
Prints one line per block and last `N passed, N failed`.
"""
import argparse
import contextlib
import difflib
import io
import re
import shutil
import sys
import tempfile
from pathlib import Path

from harness.grading import feedback, manifest as manifests_mod
from harness.grading.manifest import ROOT
from harness.grading.results import ResultsFile
from harness.grading.runner import LabGrader, Options

MARKER = re.compile(r"^<!-- example: (make lab-(?P<lab>[\d.]+)(?: with (?P<files>[\w., ]+))?|expected\.log) -->$")
INDENT = "    "
SEED = 1
EXPERIMENT = "test_my_guard.c"   # a lab's experiment test (tests/student/23.N/, graded as its own kind)


def blocks(text):
  """[(marker match, first line index of the block, end index)] of one README's lines."""
  lines, found = text.split("\n"), []
  for k, line in enumerate(lines):
    m = MARKER.match(line)
    if not m:
      continue
    start = k + 1
    while start < len(lines) and not lines[start].strip():
      start += 1
    end = start
    while end < len(lines) and (lines[end].startswith(INDENT) or not lines[end].strip()):
      end += 1
    while end > start and not lines[end - 1].strip():
      end -= 1
    found.append((m, start, end))
  return found


def submission(m, files, where):
  """A scratch tree: the lab's stubs from labs/ and its experiment's from tests/student/, with
  `files` taken from solutions/."""
  lab_dir, reference = where / m.lab_dir, ROOT / "solutions" / Path(m.lab_dir).name
  lab_dir.mkdir(parents=True)
  for name in m.student_files:
    source = (reference if name in files else ROOT / m.lab_dir) / name
    if source.is_file():
      shutil.copy(source, lab_dir / name)
  experiment = (reference / "tests" if EXPERIMENT in files else ROOT / "tests" / "student" / m.lab) / EXPERIMENT
  if experiment.is_file():
    (where / "tests" / "student" / m.lab).mkdir(parents=True)
    shutil.copy(experiment, where / "tests" / "student" / m.lab / EXPERIMENT)
  return where


def table(lab, files, manifests):
  """What `make lab-<lab>` prints after the grader's header lines, as a list of lines."""
  m = manifests[lab]
  unknown = [f for f in files if f not in m.student_files + [EXPERIMENT]]
  if unknown:
    raise ValueError(f"lab {lab} has no student file {', '.join(unknown)}")
  with tempfile.TemporaryDirectory(prefix="uopc-example-") as tmp:
    opts = Options(submission=submission(m, files, Path(tmp)), seed=SEED, check_mode=True)
    with contextlib.redirect_stdout(io.StringIO()):
      score = LabGrader(m, manifests, opts, ResultsFile(None), 0).grade()
  lines, _ = feedback.report_and_status(score, m)
  return lines


def files_of(marker):
  """The files of solutions/ a table's marker names (`with a.c, b.c`)."""
  return [f.strip() for f in (marker.group("files") or "").split(",") if f.strip()]


def expected_log(readme):
  return [line for line in (readme.parent / "expected.log").read_text().splitlines() if line.strip()]


def made(m, readme, manifests):
  """The lines a marked block should hold, from a run (or the file it quotes)."""
  if m.group(1) == "expected.log":
    return expected_log(readme)
  return table(m.group("lab"), files_of(m), manifests)


def readmes():
  """The READMEs that may quote a run (a handout has no tools/handout-README.md: it is its README)."""
  return [p for p in sorted(ROOT.glob("labs/*/README.md")) + [ROOT / "tools" / "handout-README.md"] if p.is_file()]


def main(argv=None):
  ap = argparse.ArgumentParser(description="Checks or rewrites the runs the READMEs quote.")
  mode = ap.add_mutually_exclusive_group(required=True)
  mode.add_argument("--write", action="store_true")
  mode.add_argument("--check", action="store_true")
  args = ap.parse_args(argv)
  manifests = {lab: manifests_mod.load(lab) for lab in manifests_mod.available()}
  passed = failed = 0
  for readme in readmes():
    text = readme.read_text()
    lines = text.split("\n")
    for m, start, end in reversed(blocks(text)):   # from the end, so that a rewrite keeps indices
      name = f"{readme.relative_to(ROOT)}:{start + 1}: {m.group(1)}"
      if m.group("lab") and not (ROOT / "solutions").is_dir():
        print(f"skip {name}: a table of the stubs needs solutions/ (a handout's labs/ is yours)")
        continue
      want = made(m, readme, manifests)
      got = [line[len(INDENT):] for line in lines[start:end]]
      if got == want:
        print(f"ok   {name}")
        passed += 1
      elif args.write:
        lines[start:end] = [(INDENT + line).rstrip() for line in want]
        print(f"wrote {name}")
        passed += 1
      else:
        diff = difflib.unified_diff(got, want, "the README", "a run now", lineterm="", n=1)
        print(f"FAIL {name}: the README quotes another run (make examples rewrites it):")
        print("\n".join("  " + line for line in diff))
        failed += 1
    if args.write:
      readme.write_text("\n".join(lines))
  print(f"{passed} passed, {failed} failed")
  return 1 if failed else 0


if __name__ == "__main__":
  sys.exit(main())
