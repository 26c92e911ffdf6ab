"""test_grader.py: tests of the grader itself.

    .venv/bin/python -m unittest discover -s tests/grader

The verdict parser on crafted cmocka output and hook records (a forged pass, an early exit, a
caught signal, a record that is not the hook's),
the manifest's point check against a README, the broken-variant reader, and one end-to-end
grade of an adversarial submission: a function that aborts (CRASH), one that loops (TIMEOUT)
and one that prints cmocka's pass lines and exits (EXITED EARLY), next to a test that passes.
"""
import contextlib
import io
import json
import os
import shutil
import tempfile
import unittest
from pathlib import Path

from harness.grading import cmocka, hook, manifest, sandbox, selfcheck
from harness.grading.results import ResultsFile
from harness.grading.runner import LabGrader, Options

ROOT = manifest.ROOT
RETURNED_0 = "grade-hook 1 protected\nmain returned 0\n"


def outcome(text, returncode=0, timed_out=False):
  return sandbox.Outcome(returncode, timed_out, 0.1, text, "")


class InterpretTest(unittest.TestCase):
  OK = "[ RUN      ] t\n[       OK ] t\n[==========] 1 test(s) run.\n"

  def verdict(self, text, record="", rc=0, timed_out=False):
    return cmocka.interpret(outcome(text, rc, timed_out), hook.parse(record), "t", 10).verdict

  def test_pass_needs_the_hooks_record(self):
    self.assertEqual(self.verdict(self.OK, RETURNED_0), "PASS")
    self.assertEqual(self.verdict(self.OK), "EXITED EARLY")

  def test_forged_ok_then_exit_is_exited_early(self):
    self.assertEqual(self.verdict("[ RUN      ] t\n[       OK ] t\n[  PASSED  ] 1 test(s).\n"), "EXITED EARLY")

  def test_main_returning_failures_is_a_fail_whatever_was_printed(self):
    self.assertEqual(self.verdict(self.OK, RETURNED_0.replace("returned 0", "returned 1"), rc=1), "FAIL")
    self.assertEqual(self.verdict(self.OK, RETURNED_0, rc=1), "FAIL")

  def test_a_record_not_of_the_hooks_form_fails(self):
    self.assertEqual(self.verdict(self.OK, "main returned 0\n"), "FAIL")
    self.assertEqual(self.verdict(self.OK, RETURNED_0 + RETURNED_0), "FAIL")

  def test_signal_and_timeout(self):
    self.assertEqual(self.verdict("[ RUN      ] t\n", rc=-6), "CRASH")
    self.assertEqual(self.verdict("[ RUN      ] t\n", rc=-31), "CRASH")
    self.assertEqual(self.verdict("[ RUN      ] t\n", timed_out=True), "TIMEOUT")
    caught = "[ RUN      ] t\nTest failed with exception: Segmentation fault(11)\n[  FAILED  ] t\n"
    self.assertEqual(self.verdict(caught, RETURNED_0.replace("returned 0", "returned 1"), rc=1), "CRASH")

  def test_failure_keeps_the_message(self):
    text = "[ RUN      ] t\nERROR: expected 1, got 2\n[  FAILED  ] t\n"
    r = cmocka.interpret(outcome(text, 1), hook.parse(RETURNED_0.replace("returned 0", "returned 1")), "t", 10)
    self.assertEqual((r.verdict, r.detail), ("FAIL", "ERROR: expected 1, got 2"))


class ManifestTest(unittest.TestCase):
  def test_every_lab_loads_and_adds_up(self):
    for lab in manifest.available():   # a handout's manifests hold the held-out points apart
      m = manifest.load(lab)
      self.assertEqual(m.max_points + sum(m.held_out.values()), 20 if m.worked else 100, lab)

  def test_points_that_disagree_with_the_readme_are_an_error(self):
    tree = Path(tempfile.mkdtemp())
    try:
      shutil.copytree(ROOT / "labs" / "23.1-symbolic-dims", tree / "labs" / "23.1-symbolic-dims")
      (tree / "harness" / "manifests").mkdir(parents=True)
      data = json.loads((ROOT / "harness" / "manifests" / "23.1.json").read_text())
      data["tests"][0]["points"] += 1
      (tree / "harness" / "manifests" / "23.1.json").write_text(json.dumps(data))
      with self.assertRaisesRegex(manifest.ManifestError, "sym_dim_check: manifest 11, README 10"):
        manifest.load("23.1", tree)
    finally:
      shutil.rmtree(tree)

  @unittest.skipUnless((ROOT / "tests" / "broken").is_dir(), "tests/broken/ is the instructor's")
  def test_broken_variants_are_read_from_the_mk_files(self):
    names = {(lab, case) for lab, _, _, _, case in selfcheck.broken_variants()}
    self.assertIn(("23.6", "test_guarded_jit_strided_view_matches_eager"), names)


EVIL = {  # function -> a line put first in its body
  "sym_expr_eval": "abort();",
  "sym_scope_prove_lt": "for (volatile int spin = 1; spin;) {}",
  "sym_dim_check": 'if (value == 65) { printf("[       OK ] test_sym_dim_bind_rejects_value_above_hi\\n'
                   '[  PASSED  ] 1 test(s).\\n"); fflush(stdout); _exit(0); }',
}


@unittest.skipUnless((ROOT / "solutions").is_dir(), "needs solutions/")
class AdversarialSubmissionTest(unittest.TestCase):
  def test_each_trick_costs_its_own_test_only(self):
    sub = Path(tempfile.mkdtemp(prefix="uopc-evil-"))
    os.environ[sandbox.TIMEOUT_SCALE_ENV] = "0.1"
    try:
      lab_dir = sub / "labs" / "23.1-symbolic-dims"
      shutil.copytree(ROOT / "solutions" / "23.1-symbolic-dims", lab_dir)
      for path in lab_dir.glob("*.c"):
        text = "#include <stdio.h>\n#include <stdlib.h>\n#include <unistd.h>\n" + path.read_text()
        for fn, line in EVIL.items():
          text = text.replace(f"// STUDENT 23.1 {fn}\n", f"// STUDENT 23.1 {fn}\n  {line}\n")
        path.write_text(text)
      want = {"sym_expr_eval_reports_unbound_dim": "CRASH",
              "sym_scope_prove_lt_fails_outside_the_loop": "TIMEOUT",
              "sym_dim_bind_rejects_value_above_hi": "EXITED EARLY",
              "sym_dim_bind_accepts_both_bounds": "PASS"}
      manifests = {lab: manifest.load(lab) for lab in manifest.available()}
      with contextlib.redirect_stdout(io.StringIO()):
        score = LabGrader(manifests["23.1"], manifests, Options(submission=sub, only=set(want)),
                          ResultsFile(None), 0).grade()
      got = {t.id: r.verdict for t, r, _, _ in score.rows}
      self.assertEqual(got, want)
    finally:
      os.environ.pop(sandbox.TIMEOUT_SCALE_ENV, None)
      shutil.rmtree(sub, ignore_errors=True)


if __name__ == "__main__":
  unittest.main()
