"""runner.py: grades one lab: builds its scratch copy, runs its tests in manifest order, scores.

Everything the verdicts are compared with (the goldens, expected.log) is read when the grader
starts, before any student code runs. A test runs only when the lab's library built, its binary
built, and every test it depends on passed; otherwise it is NOT RUN and says which prerequisite
failed, so one mistake is not charged twice. A test that needs a GPU or a CUDA compiler this
machine lacks is SKIPPED and its points leave the maximum. Anything unexpected inside the grader
becomes that test's FAIL line.
"""
import os
import shutil
import traceback
from dataclasses import dataclass, field

from harness.grading import checks, cmocka, counters, sandbox, scrub, tables, workspace
from harness.grading.manifest import ROOT
from harness.grading.verdict import CRASH, FAIL, NOT_RUN, PASS, SKIPPED, Result


@dataclass
class Options:
  submission: object = None          # a directory, or None for this tree (impl chooses)
  impl: str = "labs"                 # labs or solutions, when submission is None
  own_stages: bool = False
  seed: int = 0
  lengths: int = 20
  only: set = field(default_factory=set)
  user: object = None                # a passwd entry: run student code as this user
  check_mode: bool = False           # make lab-23.k: verdicts without points, visible tests only
  keep: bool = False                 # keep the scratch copies (for debugging the grader)
  screen: str = "all"                # "library": skip the source screen, "none": both (integrity.py)


@dataclass
class LabScore:
  lab: str
  earned: float = 0
  possible: float = 0
  held: float = 0                    # points of tests that could not run here (SKIPPED)
  passed: int = 0
  failed: int = 0
  skipped: int = 0
  rows: list = field(default_factory=list)
  failures: list = field(default_factory=list)


def capabilities():
  """What this machine has, for tests that declare needs."""
  nvcc = shutil.which("nvcc") or os.path.exists("/usr/local/cuda/bin/nvcc")
  gpu = os.path.exists("/dev/nvidia0") or os.path.exists("/dev/nvidiactl")
  return {"cuda-compiler": bool(nvcc), "gpu": gpu}


def held_out_output(test, r):
  """What results.json says of a held-out test that did not pass: its verdict and points, never
  what it printed. A held-out binary links student code, which can read the binary's own data
  (its assertions, its inputs) and print it into the failure; that text stays in the grader's
  log (Gradescope hides stdout from students), where an instructor reads it."""
  points = f"{test.points:g} point{'' if test.points == 1 else 's'}"
  return f"{r.verdict}: a held-out test, worth {points}; what it printed stays in the instructor's log"


def in_this_tree(target, opts):
  """(the make command, the path) that build target, a path under the grader's build/labs, in
  this tree: the reference's own build folder when the run graded solutions/ (IMPL=solutions)."""
  if opts.impl == "solutions" and not opts.submission:
    mine = "build/solutions/" + target[len(workspace.BUILD) + 1:] if target.startswith(workspace.BUILD + "/") else target
    return f"make IMPL=solutions {mine}", mine
  return f"make {target}", target


def replay_base(lab, opts):
  parts = [".venv/bin/python -m harness.grade", lab]
  if opts.submission:
    parts.append(f"--submission {opts.submission}")
  elif opts.impl == "solutions":
    parts.append("--impl solutions")
  return " ".join(parts)


def references(m):
  """What a lab's verdicts are compared with, read now: expected.log's lines and the golden
  counters of each counters test (an error text in place of those that cannot be read)."""
  expected = (ROOT / m.lab_dir / "expected.log").read_text().splitlines() \
    if (ROOT / m.lab_dir / "expected.log").is_file() else []
  goldens = {}
  for t in m.tests:
    if t.kind == "counters":
      try:
        goldens[t.id] = counters.load_golden(m.lab, t.spec["scenario"])
      except (OSError, ValueError, KeyError) as e:
        goldens[t.id] = f"no golden counters to compare with: {e}"
  return expected, goldens


class LabGrader:
  def __init__(self, manifest, manifests, opts, results, number_base):
    self.m, self.manifests, self.opts, self.results = manifest, manifests, opts, results
    self.score = LabScore(manifest.lab)
    self.done, self.caps, self.number = {}, capabilities(), number_base
    self.numpy, self.ws = None, None
    self.expected, self.goldens = references(manifest)

  def tests(self):
    """The tests to run: --only's and what they need; in check mode never a held-out one."""
    return [t for t in self.m.tests if (not self.opts.check_mode or not t.hidden) and
            (not self.opts.only or t.id in self.opts.only or any(t.id in self._deps_of(o) for o in self.opts.only))]

  def _deps_of(self, test_id):
    """Every test that test_id needs, directly or not."""
    t = self.m.test(test_id)
    if t is None:
      return set()
    found = set(t.depends) | ({t.spec["scenario"]} if t.kind == "counters" else set())
    for d in list(found):
      found |= self._deps_of(d)
    return found

  def grade(self):
    ws = self.ws = workspace.Workspace(self.m, self.manifests, self.opts.submission, self.opts.impl,
                                       self.opts.own_stages, self.opts.user, self.opts.screen)
    scrub.hide_path(ws.root, "")
    scrub.hide_path(ws.top, "<scratch>")
    scrub.hide_path(ROOT, "<grader>")
    try:
      build = self._build(ws)
      for test in self.tests():
        self._record(test, self._safe_run(test, build))
    finally:
      scrub.forget_path(ws.root)
      scrub.forget_path(ws.top)
      if self.opts.keep:
        print(f"  (scratch copy kept: {ws.root})")
      else:
        ws.remove()
    return self.score

  def _build(self, ws):
    try:
      problems = ws.prepare()
    except RuntimeError as e:   # the grader's own build failed: not the student's doing
      problems = [f"the grader could not prepare this lab: {e}"]
    targets = sorted({workspace.suite_target(t.spec["suite"], self.m.lab) for t in self.tests()
                      if t.kind == "cmocka" and (ROOT / t.spec["suite"]).is_file()})
    if any(t.kind == "driver" for t in self.tests()):
      targets.append(workspace.driver_target(self.m.lab))
    experiments = [t for t in self.tests() if t.kind == "experiment"]
    if experiments and not ws.experiment:
      targets += [workspace.experiment_target(self.m.lab)] + \
                 sorted({workspace.break_lib(self.m.lab, t.spec["guard"]) for t in experiments})
    build = ws.build(targets)
    for note in build.notes:
      print(f"  {note}")
    if build.ok and not problems and self.opts.screen != "none":
      problems += ws.screen_libraries(build)
    ok = build.ok and not problems
    said = [l for l in build.log.splitlines() if not l.lstrip().startswith(("CC ", "LINK ", "TEST "))]
    text = "\n".join(problems + scrub.lines(said, workspace.DIAGNOSTIC_LINES))
    self.results.add_note(self.m.lab, f"{self.m.lab}.0", "build", ok,
                          ("the lab built\n" if ok else "the lab did not build:\n") + "\n".join(build.notes + [text]))
    if not ok:
      block = [f"--- BUILD FAILED: lab {self.m.lab}: every test of this lab is NOT RUN; the compiler said:"]
      block += [f"    {l}" for l in text.splitlines()]
      lib = workspace.lab_lib(self.m.lab)
      block.append(f"    replay: {in_this_tree(lib, self.opts)[0]}")
      print("\n".join(block))
      self.score.failures += block
      build.ok = False
    return build

  def _safe_run(self, test, build):
    try:
      return self._run(test, build)
    except Exception as e:   # a grader bug costs one test and says so; never a traceback
      where = traceback.extract_tb(e.__traceback__)[-1]
      return Result(FAIL, f"the grader could not run this test: {type(e).__name__}: {e} "
                          f"({os.path.basename(where.filename)}:{where.lineno}); please report it")

  def _run(self, test, build):
    if not build.ok:
      return Result(NOT_RUN, "the lab did not build (see its build diagnostics)")
    missing = [n for n in test.needs if not self.caps.get(n)]
    if missing:
      return Result(SKIPPED, f"this machine has no {' and no '.join(missing)}: not counted")
    for dep in test.depends + ([test.spec["scenario"]] if test.kind == "counters" else []):
      r = self.done.get(dep)
      if r is None or not r.passed:
        return Result(NOT_RUN, f"needs {dep}, which " + (f"gave {r.verdict}" if r else "did not run"))
    return getattr(self, f"_run_{test.kind}")(test, build)

  def _run_cmocka(self, test, build):
    suite = test.spec["suite"]
    if not (ROOT / suite).is_file():
      return Result(SKIPPED, f"{suite} is instructor-only and not in this tree: not counted")
    binary = workspace.suite_target(suite, self.m.lab)
    if not build.built(binary):
      return Result(NOT_RUN, f"the suite {suite} did not build (see the build diagnostics)")
    rd, run = self.ws.rundir(), self.ws.run_name(binary)
    try:
      r = cmocka.run_case(build.root / run, test.spec["case"], rd, rd.env(), test.timeout,
                          self.opts.user, "gpu" in test.needs, self.ws.mounts(run))
    finally:
      rd.close()
    if r.verdict == SKIPPED and not test.needs:
      r.verdict, r.detail = FAIL, f"skipped, but it needs nothing this machine lacks ({r.detail})"
    r.replay = f"{replay_base(self.m.lab, self.opts)} --only {test.id}"
    if not test.hidden:
      make, path = in_this_tree(binary, self.opts)
      r.replay += f"   (or: {make} && {path}   which runs the whole suite)"
    return r

  def _run_driver(self, test, build):
    binary = workspace.driver_target(self.m.lab)
    if not build.built(binary):
      return Result(NOT_RUN, f"the driver {binary} did not build (see the build diagnostics)")
    rd = self.ws.rundir()
    try:
      r = counters.run_driver(build.root / binary, self.expected, rd, test.timeout, bool(test.spec.get("warm")),
                              self.opts.user, self.ws.mounts(binary))
    finally:
      rd.close()
    impl = "IMPL=solutions " if self.opts.impl == "solutions" and not self.opts.submission else ""
    r.replay = f"{impl}make lab-{self.m.lab}" + ("   (twice with the same UOPC_CACHE_DIR)" if test.spec.get("warm") else "")
    return r

  def _run_experiment(self, test, build):
    """The student's test must pass on the lab as built and fail (or crash) on the lab built
    without test.spec["guard"]: the same binary both times, the broken library bound over the
    lab's (Workspace.mounts), so only the library's behaviour tells the runs apart."""
    lab, guard, suite = self.m.lab, test.spec["guard"], test.spec["suite"]
    replay = f"make break LAB={lab} GUARD={guard}" + (" IMPL=solutions" if self.opts.impl == "solutions" and
                                                       not self.opts.submission else "")
    if self.ws.experiment:
      return Result(FAIL, self.ws.experiment, replay=replay)
    binary, broken = workspace.experiment_target(lab), workspace.break_lib(lab, guard)
    if not build.built(binary):
      return Result(FAIL, f"{suite} did not compile (see the build diagnostics)", replay=replay)
    if not build.built(broken):
      return Result(FAIL, f"the lab without its {guard} guard did not build (see the build diagnostics)",
                    replay=replay)
    runs = {}
    for name, lib in (("correct", None), ("broken", broken)):
      rd = self.ws.rundir()
      env = rd.env()
      if lib and not sandbox.jail().bwrap:   # no bind mounts without bwrap: the loader's path instead
        env["LD_LIBRARY_PATH"] = str(build.root / os.path.dirname(lib))
      try:
        runs[name] = cmocka.run_suite(build.root / binary, rd, env, test.timeout, self.opts.user,
                                      self.ws.mounts(binary, lib))
      finally:
        rd.close()
    ok, bad = runs["correct"], runs["broken"]
    if not ok.passed:
      return Result(FAIL, f"your test fails on the lab as it is, where it must pass: {ok.verdict}: {ok.detail}",
                    ok.lines, replay=replay)
    if bad.verdict not in (FAIL, CRASH):
      why = "passes there too: it does not catch the wrong dispatch" if bad.passed else \
            f"gave {bad.verdict} ({bad.detail}): it must fail, not hang or exit"
      return Result(FAIL, f"without the {guard} guard your test {why}", bad.lines, replay=replay)
    return Result(PASS, f"passes on the lab, {bad.verdict} without the {guard} guard ({bad.detail})", replay=replay)

  def _run_counters(self, test, build):
    golden = self.goldens[test.id]
    if isinstance(golden, str):
      return Result(FAIL, golden)
    r = counters.compare(self.done[test.spec["scenario"]], golden, test.spec["keys"])
    r.replay = f"UOPC_COUNTERS_JSON=/tmp/c.json make lab-{self.m.lab} && cat /tmp/c.json   (reference: goldens/{self.m.lab}.json)"
    return r

  def _run_numpy(self, test, build):
    if self.numpy is None:
      if not checks.has_check(self.m.lab):
        return Result(SKIPPED, f"harness/check_{self.m.lab.replace('.', '_')}.py is not in this tree")
      self.numpy = checks.run_checks(self.m.lab, self.ws, test.timeout, self.opts.seed, self.opts.lengths,
                                     replay_base(self.m.lab, self.opts), self.opts.user)
    found, stopped, replay = self.numpy
    r = found.get(test.spec["check"]) or Result(stopped.verdict, stopped.detail, list(stopped.lines))
    if not r.passed:
      r.replay = r.replay or replay
    return r

  def _record(self, test, r):
    self.done[test.id] = r
    counted = r.verdict != SKIPPED
    earned = test.points if r.passed else 0
    s = self.score
    s.earned += earned
    s.possible += test.points if counted else 0
    s.held += 0 if counted else test.points
    s.passed += r.passed
    s.skipped += r.verdict == SKIPPED
    s.failed += not r.passed and r.verdict != SKIPPED
    s.rows.append((test, r, earned, counted))
    lines = tables.failure(self.m.lab, test, r)
    s.failures += lines
    tables.progress(self.m.lab, test, r, earned, counted, self.opts.check_mode)
    output = "\n".join([f"{r.verdict}" + (f": {r.detail}" if r.detail else "")] + lines[2:] if lines else
                       [f"{r.verdict}" + (f": {r.detail}" if r.detail else "")])
    if r.table and r.passed:
      output += "\n" + "\n".join(tables.counter_table(r.table))
    if test.hidden and not r.passed:
      output = held_out_output(test, r)
    self.number += 1
    self.results.add(self.m.lab, f"{self.m.lab}.{self.number}", test, r, earned, counted, scrub.test_output(output))
