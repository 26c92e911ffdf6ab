"""selfcheck.py: checks that the grader's checks work (part of `make test`).

    .venv/bin/python -m harness.grading.selfcheck [--seed N] [--broken-in-full]

1. solutions/ scores full marks on every lab;
2. the untouched stubs (labs/) score zero on every exercise, and full marks on a worked lab
   but for its experiment (the student's own test, kind experiment), whose stub scores zero;
   make lab-23.N's table (feedback.py) of both: every function passed for solutions/, and for
   the stubs each is reported as a stub (not implemented, or waiting for one), the next one named
   the first of the README's suggested order that is not implemented (never a waiting one);
3. every broken variant under tests/broken/ (the reference built with one guard removed, read
   from the .mk files: its -D flags and the BROKEN_EXPECT test it must fail) fails that named
   test when graded as a submission (that test alone; with --broken-in-full the whole lab, and
   the claim says all the points the variant loses too: other tests may catch it). The -D flags
   become #defines at the top of the lab's student files of a scratch submission.
Prints one line per claim and last `N passed, N failed`; exit status 1 when a claim fails.
"""
import argparse
import contextlib
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
from harness.grading.verdict import CRASH, EXITED, FAIL, TIMEOUT

VAR = re.compile(r"^(\w+)\s*:=\s*\$\(BROKEN\)/(\S+)\s*$")
RULE = re.compile(r"^\$\((\w+)\)/lib(?:lab\S*|tensorjit)\.so\s*:")
EXPECT = re.compile(r"^BROKEN_EXPECT\s*\+=\s*\$\((\w+)\)/(\w+):(\w+)\s*$")


def broken_variants(root=ROOT):
  """[(lab, name, [defines], suite binary, case)] from tests/broken/*.mk."""
  found = []
  for mk in sorted((root / "tests" / "broken").glob("*.mk")):
    names, defines, rule = {}, {}, None
    for line in mk.read_text().splitlines():
      if (m := VAR.match(line)):
        names[m.group(1)] = m.group(2)
      elif (m := RULE.match(line)):
        rule = m.group(1)
      elif line.startswith("\t") and rule:
        defines.setdefault(rule, []).extend(re.findall(r"-D(\w+)", line))
      elif (m := EXPECT.match(line)):
        var = m.group(1)
        found.append((mk.stem, names.get(var, var), defines.get(var, []), m.group(2), m.group(3)))
      if not line.startswith("\t"):
        rule = rule if RULE.match(line) else None
  return found


def grade_quietly(labs, manifests, opts):
  """{lab: LabScore}, the grader's own output kept back."""
  scores = {}
  with contextlib.redirect_stdout(io.StringIO()):
    for lab in labs:
      scores[lab] = LabGrader(manifests[lab], manifests, opts, ResultsFile(None), 0).grade()
  return scores


def broken_submission(manifest, defines):
  """A scratch submission: solutions/ with the defines at the top of the lab's student files."""
  sub = Path(tempfile.mkdtemp(prefix="uopc-broken-"))
  src = ROOT / "solutions" / Path(manifest.lab_dir).name
  dst = sub / "labs" / src.name
  dst.mkdir(parents=True)
  header = "".join(f"#define {d} 1\n" for d in defines)
  for name in manifest.student_files:
    (dst / name).write_text(header + (src / name).read_text())
  return sub


class Claims:
  def __init__(self):
    self.passed = self.failed = 0

  def say(self, ok, text, details=()):
    print(f"{'ok  ' if ok else 'FAIL'} {text}", flush=True)
    for d in details:
      print(f"       {d}")
    self.passed += ok
    self.failed += not ok


def main(argv=None):
  ap = argparse.ArgumentParser(description="Checks that the grader's checks work.")
  ap.add_argument("--seed", type=int, default=1)
  ap.add_argument("--broken-in-full", action="store_true",
                  help="grade each broken variant's whole lab, to print all the points it loses (the "
                       "chapters' figures; about six times as long as its named test alone, the default)")
  args = ap.parse_args(argv)
  if not (ROOT / "solutions").is_dir():
    print("grader selfcheck: no solutions/ in this tree (a handout); nothing to check\n0 passed, 0 failed")
    return 0
  manifests = {lab: manifests_mod.load(lab) for lab in manifests_mod.available()}
  labs, claims = list(manifests), Claims()
  ref = grade_quietly(labs, manifests, Options(impl="solutions", seed=args.seed))
  for lab, s in ref.items():
    bad = [f"{t.id}: {r.verdict} {r.detail}" for t, r, _, _ in s.rows if not r.passed]
    claims.say(s.earned == s.possible == manifests[lab].max_points and not bad,
               f"solutions/ scores {s.earned:g}/{s.possible:g} on lab {lab}", bad[:5])
  stub = grade_quietly(labs, manifests, Options(impl="labs", seed=args.seed))
  for lab, s in stub.items():
    if manifests[lab].worked:
      wrong = [f"{t.id}: {r.verdict} {r.detail}" for t, r, e, _ in s.rows if (t.kind == "experiment") == r.passed]
      claims.say(not wrong, f"the untouched worked lab {lab} scores {s.earned:g}/{s.possible:g} "
                            "(all but its experiment's stub)", wrong[:5])
    else:
      earned = [f"{t.id} earned {e:g}" for t, r, e, _ in s.rows if e]
      claims.say(s.earned == 0, f"the untouched stubs score {s.earned:g}/{s.possible:g} on lab {lab}", earned)
  for lab in labs:
    claims.say(*table_claim(manifests[lab], ref[lab], stub[lab]))
  for lab, name, defines, suite, case in broken_variants():
    claims.say(*broken_claim(manifests, lab, name, defines, suite, case, args.seed, args.broken_in_full))
  print(f"{claims.passed} passed, {claims.failed} failed")
  return 1 if claims.failed else 0


def table_claim(m, ref, stub):
  """(ok, text, details): make lab-23.k's table (feedback.py) of the grades above: every row
  passed for solutions/; for the stubs, no function passed or FAILED (a stub is reported, not
  a failure) and next names the first function of the README's suggested order that is not
  implemented (one waiting on another's stub is never next)."""
  done, todo = (feedback.build(m, [r for r in s.rows if not r[0].hidden],
                               (ROOT / m.lab_dir / "README.md").read_text()) for s in (ref, stub))
  bad = [f"solutions/: {r.name} {r.status} {r.detail}" for r in done.functions + done.others if not r.passed]
  experiments = {t.function for t in m.tests if t.kind == "experiment"}
  if m.worked:
    bad += [f"stubs: {r.name} {r.status} {r.detail}" for r in todo.functions
            if r.passed == (r.name in experiments) or (r.name in experiments and r.status != feedback.NOT_IMPL)]
  else:
    bad += [f"stubs: {r.name} {r.status} {r.detail}" for r in todo.functions
            if r.status not in (feedback.NOT_IMPL, feedback.WAITING)]
    first = next((r for r in todo.functions if r.status == feedback.NOT_IMPL), None)
    if first and not feedback.next_line(todo).startswith(f"next: {first.name} "):
      bad.append(f"stubs: {feedback.next_line(todo)} (the README's first not implemented is {first.name})")
  return not bad, f"make lab-{m.lab}'s table: solutions/ all passed, stubs reported as stubs", bad[:5]


def broken_claim(manifests, lab, name, defines, suite, case, seed, full=False):
  """(ok, text, details) for one broken variant: its named test graded alone (what the claim
  needs; about a sixth of a whole grade's time), or with full the whole lab, so that the text
  says all the points the variant loses (the chapters' figures)."""
  m = manifests.get(lab)
  test = next((t for t in m.tests if t.kind == "cmocka" and t.spec["case"] == case), None) if m else None
  if test is None or not test.points:
    return False, f"broken {name}: no test with points for {case} in harness/manifests/{lab}.json", []
  sub = broken_submission(m, defines)
  try:
    s = grade_quietly([lab], manifests, Options(submission=sub, seed=seed, **({} if full else {"only": {test.id}})))[lab]
  finally:
    shutil.rmtree(sub, ignore_errors=True)
  row = next((r for t, r, _, _ in s.rows if t.id == test.id), None)
  ok = row is not None and row.verdict in (FAIL, CRASH, TIMEOUT, EXITED)   # not NOT RUN: it must build
  verdict = f"{row.verdict}: {row.detail}" if row else "not run"
  return ok, (broken_text(name, defines, test, *((s.earned, s.possible) if full else ())) if ok
              else f"broken {name} should fail {test.id}, got {verdict}"), [verdict] if ok else []


def points_text(x):
  """ "1 point", "2 points", "0.5 points". """
  return f"{x:g} point{'' if x == 1 else 's'}"


def broken_text(name, defines, test, earned=None, possible=None):
  """The claim of a broken variant that failed its named test: that test's points, and (from a
  whole grade) all the points the variant loses (other tests may catch it too), as the score
  shows them."""
  text = f"broken {name} (-D{' -D'.join(defines)}) fails {test.id} ({points_text(test.points)})"
  if earned is None:
    return text
  return f"{text} and loses {points_text(possible - earned)} in all ({earned:g}/{possible:g})"


if __name__ == "__main__":
  sys.exit(main())
