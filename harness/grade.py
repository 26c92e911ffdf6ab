"""grade.py: the grader. Students run exactly what instructors run.

    .venv/bin/python -m harness.grade [LAB ...]                 the student code in labs/
    .venv/bin/python -m harness.grade --impl solutions          the reference
    .venv/bin/python -m harness.grade --submission DIR          another tree (or a lab folder)
    .venv/bin/python -m harness.grade --submissions DIR --jobs N --output OUTDIR
                                                                every subfolder, N at a time
    .venv/bin/python -m harness.grade 23.1 --check              a row per function (make lab-23.1)

Each lab is built in a scratch copy from the student's files (regular files of the manifest's
names, screened) and the instructor's everything else; every build and test runs in its own
bubblewrap sandbox (or says why not), and its verdict comes from outside it; the score comes from
the lab's manifest (harness/manifests/). Prints the sandbox in use, progress, a table per lab,
`Lab 23.k score: a/b`, the total, and last `N passed, N failed`; with --check (make lab-23.k), the
visible tests only and, in place of the scores, a row per function and the next one to write
(grading/feedback.py). Writes Gradescope's results.json after every test (--output, default
build/results.json; its path is printed before the first lab). Options:
--seed and --lengths fix the NumPy checks' random draws (printed when drawn), --own-stages links the submission's own earlier stages instead of
solutions/, --only ID runs one test (and what it needs), --run-as USER runs student code as that
user (root only; else nobody when root, inside the sandbox). UOPC_GRADE_SANDBOX=off forces the
fallback. Exit status: 0 when every test passed, 1 when one did not, 2 when the grade could not
start (a missing submission included); with --check, 3 when the tests that did not pass only
reached stubs (or waited for one), which make lab-23.N reports without failing.
"""
import argparse
import os
import random
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from harness.grading import feedback, hook, intake, manifest as manifests_mod, sandbox, tables
from harness.grading.results import ResultsFile
from harness.grading.runner import LabGrader, Options

ROOT = manifests_mod.ROOT
DEFAULT_RESULTS = ROOT / "build" / "results.json"   # with build/'s other products, not in the tree's root


def results_path(args):
  """Where a single grade writes Gradescope's results.json: --output, else build/results.json
  (make lab-23.N's --check writes none)."""
  if args.output or args.check:
    return args.output
  return DEFAULT_RESULTS


def shown(path):
  """The path as the user can type it: relative to where they are when it is below there."""
  try:
    return str(path.resolve().relative_to(Path.cwd().resolve()))
  except ValueError:
    return str(path)


def parse_args(argv):
  ap = argparse.ArgumentParser(prog="python -m harness.grade", description="Grades the labs.")
  ap.add_argument("labs", nargs="*", help="labs to grade (default: every lab with a manifest)")
  src = ap.add_mutually_exclusive_group()
  src.add_argument("--submission", type=Path, help="grade this tree (default: labs/ of this one)")
  src.add_argument("--impl", choices=("labs", "solutions"), default=os.environ.get("IMPL") or "labs",
                   help="with no --submission: labs/ (the default) or solutions/")
  src.add_argument("--submissions", type=Path, help="a folder of submissions, one per subfolder")
  ap.add_argument("--jobs", type=int, default=1, help="submissions graded at once (with --submissions)")
  ap.add_argument("--output", type=Path, help=f"results.json (default {DEFAULT_RESULTS.relative_to(ROOT)}; "
                  "none with --check; a folder with --submissions)")
  ap.add_argument("--seed", type=int, help="seed of the NumPy checks (default: drawn now, printed)")
  ap.add_argument("--lengths", type=int, help="random lengths per NumPy check (default: drawn in [16, 32])")
  ap.add_argument("--own-stages", action="store_true", help="link the submission's own earlier stages")
  ap.add_argument("--only", action="append", default=[], help="run only this test id (repeatable)")
  ap.add_argument("--run-as", help="run the student's code as this user (needs root)")
  ap.add_argument("--check", action="store_true",
                  help="visible tests only, a row per function and the next to write (make lab-23.k)")
  ap.add_argument("--keep", action="store_true", help="keep the scratch copies")
  return ap.parse_args(argv)


def load_manifests(labs):
  """{lab: Manifest} for the labs asked for and the stages they link."""
  known = manifests_mod.available()
  unknown = [l for l in labs if l not in known]
  if unknown:
    raise manifests_mod.ManifestError(f"no lab {', '.join(unknown)} here (labs: {', '.join(known)})")
  return {lab: manifests_mod.load(lab) for lab in known}, labs or known


def grade(args):
  """Grades one submission; returns the exit status."""
  try:
    manifests, labs = load_manifests(args.labs)
    user = sandbox.lookup_user(args.run_as)
    if args.submission:
      intake.check_submission(args.submission)
  except (manifests_mod.ManifestError, KeyError, intake.IntakeError) as e:
    print(f"grade: cannot start: {e.args[0] if e.args else e}")
    return 2
  seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
  lengths = args.lengths if args.lengths is not None else random.SystemRandom().randint(16, 32)
  opts = Options(args.submission.resolve() if args.submission else None, args.impl, args.own_stages,
                 seed, lengths, set(args.only), user, args.check, args.keep)
  what = str(args.submission) if args.submission else f"{args.impl}/ of this tree"
  print(f"grading {what}: labs {', '.join(labs)}; held-out draws: seed={seed} lengths={lengths}"
        f" (replay with --seed {seed} --lengths {lengths}); {sandbox.timeout_scale_text()}", flush=True)
  contained = sandbox.describe(user)
  print("\n".join(contained[:1] if args.check else contained), flush=True)
  output = results_path(args)
  if output:
    print(f"results: {shown(output)} (Gradescope's results.json, rewritten after every test)", flush=True)
  results = ResultsFile(output)
  results.notes += [f"seed={seed} lengths={lengths}"] + contained
  scores = []
  for k, lab in enumerate(labs):
    grader = LabGrader(manifests[lab], manifests, opts, results, 0)
    if args.check:
      n = len(grader.tests())
      print(f"lab {lab}: running its {n} visible tests (make grade runs every test and scores them)", flush=True)
    else:
      print(f"\n== lab {lab}: {manifests[lab].title} ==", flush=True)
    scores.append(grader.grade())
    if args.check:
      print(flush=True)
  return summarize(scores, manifests, results, args.check)


def summarize(scores, manifests, results, check_mode):
  lines, statuses = [], []
  for s in scores:
    if check_mode:   # make lab-23.k: a row per function, then the next one to write
      print()
      text, status = feedback.report_and_status(s, manifests[s.lab])
      print("\n".join(text))
      statuses.append(status)
      continue
    tables.lab_table(s.lab, manifests[s.lab].title, s.rows, check_mode)
    if s.failures:
      print()
      print("\n".join(s.failures))
    if not check_mode:
      held = f" ({s.held:g} points not counted: they need what this machine lacks)" if s.held else ""
      if manifests[s.lab].held_out:
        held += f" (+{sum(manifests[s.lab].held_out.values()):g} points of held-out tests, graded by the instructor)"
      line = f"Lab {s.lab} score: {s.earned:g}/{s.possible:g}{held}"
      print(line)
      lines.append(line)
  passed, failed = sum(s.passed for s in scores), sum(s.failed for s in scores)
  skipped = sum(s.skipped for s in scores)
  if check_mode:   # each table ends with its next step, which stays the last line
    for w in hook.UNPROTECTED:
      print(f"warning: {w}")
    return 1 if 1 in statuses else 3 if failed else 0   # 3: only stubs (and what waits for them)
  lines += [f"warning: {w}" for w in hook.UNPROTECTED]
  print()
  for w in hook.UNPROTECTED:
    print(f"warning: {w}")
  if not check_mode:
    total = f"Total: {sum(s.earned for s in scores):g}/{sum(s.possible for s in scores):g}"
    print(total)
    lines.append(total)
  if skipped:
    print(f"{skipped} skipped (not counted)")
  last = f"{passed} passed, {failed} failed"
  print(last, flush=True)
  results.write("\n".join(lines + [last]))
  return 1 if failed else 0


def grade_many(args):
  """Each subfolder of --submissions, --jobs at a time, each in its own grader process."""
  if not args.submissions.is_dir():
    print(f"grade: cannot start: the folder of submissions {args.submissions} does not exist")
    return 2
  subs = sorted(p for p in args.submissions.iterdir() if p.is_dir() and not p.is_symlink())
  out_dir = args.output or Path("grades")
  out_dir.mkdir(parents=True, exist_ok=True)
  seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
  jobs = min(max(1, args.jobs), sandbox.grades_that_fit())
  fit = f" (at most {jobs} fit: each grade may hold {sandbox.GRADE_MEMORY >> 30} GiB)" if jobs < args.jobs else ""
  print(f"grading {len(subs)} submissions, {jobs} at a time{fit}; seed={seed}", flush=True)

  def one(sub):
    argv = [sys.executable, "-m", "harness.grade", *args.labs, "--submission", str(sub), "--seed", str(seed),
            "--output", str(out_dir / f"{sub.name}.json")] + (["--own-stages"] if args.own_stages else []) + \
           (["--lengths", str(args.lengths)] if args.lengths else []) + \
           (["--run-as", args.run_as] if args.run_as else [])
    with open(out_dir / f"{sub.name}.log", "w") as log:
      status = subprocess.run(argv, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT).returncode
    last = (out_dir / f"{sub.name}.log").read_text().strip().splitlines()[-1:] or ["(no output)"]
    total = [l for l in (out_dir / f"{sub.name}.log").read_text().splitlines() if l.startswith("Total: ")]
    print(f"  {sub.name:<30} {(total or ['Total: ?'])[0]:<20} {last[0]}  (log: {out_dir / (sub.name + '.log')})", flush=True)
    return status

  with ThreadPoolExecutor(jobs) as pool:
    statuses = list(pool.map(one, subs))
  print(f"{statuses.count(0)} passed, {len(statuses) - statuses.count(0)} failed")
  return 0 if all(s == 0 for s in statuses) else 1


def main(argv=None):
  args = parse_args(argv)
  start = time.monotonic()
  try:
    status = grade_many(args) if args.submissions else grade(args)
  except KeyboardInterrupt:
    print("\ngrade: interrupted (results.json holds every test finished so far)")
    return 130
  finally:
    sandbox.GRADE_LIMITS.remove()
  if os.environ.get("UOPC_GRADE_TIMING"):
    print(f"(graded in {time.monotonic() - start:.1f}s)")
  return status


if __name__ == "__main__":
  sys.exit(main())
