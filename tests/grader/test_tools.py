"""test_tools.py: what the build and the runners print, as a user reads it.

    .venv/bin/python -m unittest discover -s tests/grader

The self-check's claim about a broken variant (the points of its test and all it loses, "1 point"
singular); make's one-line step messages (a note after a path stays on its line); make lab-23.N
for a lab that does not exist (it names the labs that do); tools/run-tests.sh's summary, which
lists each skipped case with the suite's reason before its last line; the broken builds' one line each,
`make bench LAB=23.6` without a figure, `make grade`'s results in build/, and tools/setup.sh installing
universalmutator only for the mutants targets; make doctor naming the default cache as shared.
"""
import os
import stat
import subprocess
import tempfile
import types
import unittest
from pathlib import Path

from harness.grading import manifest, selfcheck

ROOT = manifest.ROOT


def make(*args):
  return subprocess.run(["make", "--no-print-directory", *args], cwd=ROOT, capture_output=True, text=True)


class SelfcheckTextTest(unittest.TestCase):
  def test_points_are_singular_only_for_one(self):
    self.assertEqual(selfcheck.points_text(1), "1 point")
    self.assertEqual(selfcheck.points_text(2), "2 points")
    self.assertEqual(selfcheck.points_text(0.5), "0.5 points")
    self.assertEqual(selfcheck.points_text(0), "0 points")

  def test_a_broken_variant_says_what_its_test_costs_and_what_it_loses_in_all(self):
    test = types.SimpleNamespace(id="dispatch_rejects_odd_length", points=2)
    text = selfcheck.broken_text("23.2-no-divisibility", ["DISPATCH_NO_DIVISIBILITY_GUARD"], test, 73, 80)
    self.assertEqual(text, "broken 23.2-no-divisibility (-DDISPATCH_NO_DIVISIBILITY_GUARD) fails "
                           "dispatch_rejects_odd_length (2 points) and loses 7 points in all (73/80)")
    test.points = 1
    self.assertIn("(1 point) and loses 1 point in all (79/80)",
                  selfcheck.broken_text("b", ["X"], test, 79, 80))

  def test_a_broken_variant_graded_alone_says_only_what_its_test_costs(self):
    test = types.SimpleNamespace(id="dispatch_rejects_odd_length", points=2)
    self.assertEqual(selfcheck.broken_text("23.2-no-divisibility", ["A", "B"], test),
                     "broken 23.2-no-divisibility (-DA -DB) fails dispatch_rejects_odd_length (2 points)")


class MakeTest(unittest.TestCase):
  def test_a_step_with_a_note_prints_one_line(self):
    done = make("--eval", "say-check: ; $(call say,CC,uopc/src/x.c [faults])", "say-check")
    self.assertEqual(done.returncode, 0, done.stderr)
    self.assertEqual(done.stdout, "  CC     uopc/src/x.c [faults]\n")

  def test_a_lab_that_does_not_exist_names_the_labs_that_do(self):
    done = make("lab-23.9")
    self.assertNotEqual(done.returncode, 0)
    labs = " ".join(sorted(p.name.split("-")[0] for p in (ROOT / "labs").glob("23.*-*/")))
    self.assertIn(f"make lab-23.9: there is no lab 23.9 in this tree; the labs are {labs}", done.stderr)

  @unittest.skipUnless((ROOT / "tests" / "broken").is_dir(), "tests/broken/ is the instructor's")
  def test_each_broken_build_step_says_one_line_in_quiet_mode(self):
    for mk in sorted((ROOT / "tests" / "broken").glob("*.mk")):
      for line in mk.read_text().splitlines():
        if line.startswith("\t") and not line.startswith("\t@"):
          self.assertRegex(line, r"^\t\$\(call (say,\w+,\$@\)|broken_test_link,)", f"{mk.name}: {line.strip()[:60]}")

  def test_bench_of_one_lab_other_than_23_5_neither_draws_nor_installs_a_figure(self):
    one, kv = make("-n", "bench", "LAB=23.6"), make("-n", "bench", "LAB=23.5")
    self.assertEqual((one.returncode, kv.returncode), (0, 0), one.stderr + kv.stderr)
    self.assertNotIn("--plot", one.stdout)
    self.assertIn("tools/setup.sh --plot", kv.stdout)
    self.assertIn("--plot build/kv_latency.png", kv.stdout)

  def test_grade_leaves_its_results_to_the_graders_default(self):
    done = make("-n", "grade")
    self.assertEqual(done.returncode, 0, done.stderr)
    self.assertNotIn("--output", done.stdout)
    self.assertIn("--output out.json", make("-n", "grade", "RESULTS=out.json").stdout)


class GradeOutputTest(unittest.TestCase):
  def test_a_grade_writes_build_results_json_and_a_check_writes_none(self):
    from harness import grade
    self.assertEqual(grade.results_path(grade.parse_args([])), ROOT / "build" / "results.json")
    self.assertIsNone(grade.results_path(grade.parse_args(["23.1", "--check"])))
    self.assertEqual(grade.results_path(grade.parse_args(["--output", "x.json"])), Path("x.json"))


class DoctorTest(unittest.TestCase):
  def cache_line(self, **env):
    base = {k: v for k, v in os.environ.items() if k not in ("UOPC_CACHE_DIR", "XDG_CACHE_HOME")}
    done = subprocess.run(["tools/doctor.sh"], cwd=ROOT, capture_output=True, text=True, env={**base, **env})
    return next(l for l in done.stdout.splitlines() if l.startswith("cache directory"))

  def test_the_default_cache_is_named_as_shared_and_ones_own_is_not(self):
    with tempfile.TemporaryDirectory() as tmp:
      os.chmod(tmp, 0o700)
      shared = self.cache_line(XDG_CACHE_HOME=tmp)
      self.assertIn(f"{tmp}/uopc (not created yet; it will be made with mode 0700, the default: shared by "
                    "every tree and run of this user without UOPC_CACHE_DIR)", shared)
      own = self.cache_line(UOPC_CACHE_DIR=tmp)
      self.assertIn(f"{tmp} (mode 700, owned by you: safe; 0 entries)", own)


class SetupTest(unittest.TestCase):
  """tools/setup.sh in a scratch tree whose .venv has NumPy and nothing else, and whose pip only
  says what it was asked to install."""

  def setup_says(self, *args):
    with tempfile.TemporaryDirectory() as tmp:
      (Path(tmp) / "tools").mkdir()
      (Path(tmp) / "solutions").mkdir()
      (Path(tmp) / "tools" / "setup.sh").write_bytes((ROOT / "tools" / "setup.sh").read_bytes())
      venv = Path(tmp) / ".venv" / "bin"
      venv.mkdir(parents=True)
      (venv / "python").write_text('#!/bin/sh\ncase "$*" in *"import numpy"*) exit 0;; *import*) exit 1;; esac\n')
      (venv / "pip").write_text('#!/bin/sh\necho "pip $*"\n')
      for f in (Path(tmp) / "tools" / "setup.sh", venv / "python", venv / "pip"):
        f.chmod(f.stat().st_mode | stat.S_IXUSR)
      done = subprocess.run(["tools/setup.sh", *args], cwd=tmp, capture_output=True, text=True)
      self.assertEqual(done.returncode, 0, done.stderr)
      return done.stdout

  def test_the_mutation_tool_is_installed_only_for_the_mutants_targets(self):
    self.assertNotIn("tools/requirements.txt", self.setup_says())
    self.assertIn("pip install -q --disable-pip-version-check -r tools/requirements.txt", self.setup_says("--mutants"))

  def test_each_mutants_target_asks_for_it(self):
    for target in ("mutants LAB=23.1", "mutants-uopc", "mutants-ci"):
      done = make("-n", *target.split())
      self.assertIn("tools/setup.sh --mutants", done.stdout, target)


FAKE_SUITE = """#!/bin/sh
# cmocka's output of a suite that skips two cases, one of them without a reason.
cat <<'EOF'
[==========] Running 3 test(s).
[ RUN      ] test_runs
[       OK ] test_runs
[ RUN      ] test_needs_a_gpu
  skipped: no CUDA device: libcuda.so.1 not found
[  SKIPPED ] test_needs_a_gpu
[ RUN      ] test_quietly_skipped
[  SKIPPED ] test_quietly_skipped
[==========] 3 test(s) run.
[  PASSED  ] 1 test(s).
[  SKIPPED ] 2 test(s), listed below:
[  SKIPPED ] test_needs_a_gpu
[  SKIPPED ] test_quietly_skipped

 2 SKIPPED TEST(S)
EOF
"""


class CacheStatsTest(unittest.TestCase):
  """make cache-stats names the default directory as shared by every tree of the user, and a
  directory of one's own (UOPC_CACHE_DIR) as nothing more."""

  def first_line(self, **env):
    base = {k: v for k, v in os.environ.items() if k not in ("UOPC_CACHE_DIR", "XDG_CACHE_HOME")}
    done = subprocess.run(["make", "--no-print-directory", "-s", "cache-stats"], cwd=ROOT, capture_output=True,
                          text=True, env={**base, **env})
    self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
    return next(l for l in done.stdout.splitlines() if l.startswith("cache directory"))

  def test_the_default_is_shared_and_ones_own_is_not(self):
    with tempfile.TemporaryDirectory() as tmp:
      self.assertIn(f"{tmp}/uopc (the default, shared by every tree and run of this user without UOPC_CACHE_DIR: "
                    "the counts below are theirs too; not created yet)", self.first_line(XDG_CACHE_HOME=tmp))
      self.assertTrue(self.first_line(UOPC_CACHE_DIR=f"{tmp}/own").endswith(f"{tmp}/own (not created yet)"))


class RunTestsTest(unittest.TestCase):
  def test_the_summary_lists_each_skip_with_its_reason_before_the_last_line(self):
    with tempfile.TemporaryDirectory() as tmp:
      suite = Path(tmp) / "test_fake"
      suite.write_text(FAKE_SUITE)
      suite.chmod(suite.stat().st_mode | stat.S_IXUSR)
      done = subprocess.run(["tools/run-tests.sh", tmp, "--", str(suite)], cwd=ROOT, capture_output=True,
                            text=True, env={**os.environ, "UOPC_CACHE_DIR": tmp})
    self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
    lines = done.stdout.splitlines()
    self.assertIn(f"ok   {suite} (1 tests, 2 skipped)", lines)
    at = lines.index("2 skipped (neither passed nor failed; the suite's reason after each):")
    self.assertEqual(lines[at + 1:], ["  test_needs_a_gpu: no CUDA device: libcuda.so.1 not found",
                                      "  test_quietly_skipped: (the suite gave no reason)",
                                      "1 passed, 0 failed"])


if __name__ == "__main__":
  unittest.main()
