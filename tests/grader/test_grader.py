"""test_grader.py: tests of the grader itself.

    .venv/bin/python -m unittest discover -s tests/grader

Intake's refusals (a link, a hard link, a file too large), the screen's rules on a small handout,
the worker protocol (a view round trip, a guard page that faults), the verdict parser on crafted
cmocka output and hook records (a forged pass, an early exit, a caught signal, a record that is
not the hook's),
the manifest's point check against a README, the broken-variant reader, and one end-to-end
grade of an adversarial submission: a function that aborts (CRASH), one that loops (TIMEOUT),
one that prints cmocka's pass lines and exits (EXITED EARLY) and one that writes one element past
a local array (CRASH, by the build's -fsanitize=bounds, saying so), next to a test that passes;
and the experiment kind: a student's test earns its points only when it passes on the lab and
fails on the lab without the guard (one that passes on both, or fails on both, earns nothing).
In a handout (no solutions/) the tests that need the reference skip, saying so, and the rest run on
what the handout has, so a correct student tree passes them.
"""
import contextlib
import io
import json
import os
import shutil
import tempfile
import unittest
from pathlib import Path

import socket
import subprocess
import sys
import threading

import numpy as np

from harness import remote
from harness.grading import cmocka, hook, intake, manifest, sandbox, screen, selfcheck
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

  def test_a_timeout_says_its_limit_and_the_knob_that_moves_it(self):
    os.environ[sandbox.TIMEOUT_SCALE_ENV] = "1.5"
    try:
      r = cmocka.interpret(outcome("[ RUN      ] t\n", timed_out=True), hook.parse(""), "t", 10)
    finally:
      os.environ.pop(sandbox.TIMEOUT_SCALE_ENV, None)
    self.assertEqual(r.detail, "no answer after 15s (its limit, 10s, times UOPC_GRADE_TIMEOUT_SCALE=1.5; "
                               "UOPC_GRADE_TIMEOUT_SCALE=x sets the scale: a machine busier than when the grade "
                               "started may need more)")

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
      with self.assertRaisesRegex(manifest.ManifestError, "sym_dim_check: manifest 6, README 5"):
        manifest.load("23.1", tree)
    finally:
      shutil.rmtree(tree)

  @unittest.skipUnless((ROOT / "tests" / "broken").is_dir(), "tests/broken/ is the instructor's")
  def test_broken_variants_are_read_from_the_mk_files(self):
    names = {(lab, case) for lab, _, _, _, case in selfcheck.broken_variants()}
    self.assertIn(("23.6", "test_guarded_jit_strided_view_matches_eager"), names)


class IntakeTest(unittest.TestCase):
  def test_only_regular_files_of_one_name_are_read(self):
    sub = Path(tempfile.mkdtemp())
    try:
      lab = sub / "labs" / "23.9-x"
      lab.mkdir(parents=True)
      (lab / "a.c").write_text("int a;\n")
      (lab / "b.c").symlink_to(ROOT / "Makefile")
      os.link(lab / "a.c", sub / "c.c")
      (lab / "d.c").write_bytes(b"x" * (intake.MAX_BYTES + 1))
      got = intake.read_files(sub, "labs/23.9-x", ["a.c", "b.c", "c.c", "d.c", "e.c"])
      self.assertEqual(list(got.files), [])
      self.assertEqual(len(got.refused), 4, got.refused)
      (sub / "c.c").unlink()
      got = intake.read_files(sub, "labs/23.9-x", ["a.c"])
      self.assertEqual(got.files, {"a.c": b"int a;\n"})
    finally:
      shutil.rmtree(sub)

  def test_a_missing_submission_is_named(self):
    with self.assertRaisesRegex(intake.IntakeError, "does not exist"):
      intake.check_submission("/nonexistent/submission")


class ScreenTest(unittest.TestCase):
  HANDOUT = ('#include "x.h"\nstatic int given(int v) { return v + 1; }\n'
             'int f(int v) {\n  /* Lab 23.9: write f here. See README.md in this folder. */\n  return -1;\n}\n'
             'int g(void) { return given(2); }\n')

  def refusals(self, text):
    return screen.check_file("x.c", text, self.HANDOUT)

  def test_a_body_and_static_helpers_are_the_students(self):
    mine = self.HANDOUT.replace("return -1;", "return helper(v) * 2;").replace(
      "int f(int v)", "#include <stdint.h>\n#define TWO 2\nstatic int helper(int v) { return v; }\nint f(int v)")
    self.assertEqual(self.refusals(mine), [])

  def test_given_code_and_signatures_stay(self):
    self.assertIn("given code", self.refusals(self.HANDOUT.replace("v + 1", "v + 2"))[0])
    self.assertIn("signature", self.refusals(self.HANDOUT.replace("int f(int v)", "int f(long v)"))[0])

  def test_what_could_run_or_rename_code_is_refused(self):
    for added, word in (("int helper(void) { return 0; }", "not static"),
                        ("static void __attribute__((constructor)) c(void) {}", "constructor"),
                        ("#pragma weak g", "directive"), ("#define given(v) 0", "redefines"),
                        ("#define static", "redefines"), ('#include "../secret.h"', "by name only")):
      self.assertIn(word, " ".join(self.refusals(self.HANDOUT + added + "\n")), added)
    self.assertIn("asm", self.refusals(self.HANDOUT.replace("return -1;", "__asm__(\"nop\"); return -1;"))[0])

  def test_a_macro_cannot_spell_what_the_code_may_not(self):
    # Each pair: a macro, and its use in an added item or in f's body, which alone would pass.
    for macro, use, word in (
        ("#define RUN_FIRST __attribute__((constructor))", "static RUN_FIRST void c(void) {}", "constructor"),
        ("#define ATTR __attribute__", "static void ATTR((constructor)) c(void) {}", "__attribute__"),
        ("#define FIRST constructor", "static void __attribute__((FIRST)) c(void) {}", "constructor"),
        ("#define NOP __asm__(\"nop\")", "static void c(void) { NOP; }", "asm"),
        ("#define COUNT(n) uopc_counter_add(\"plans built\", n)", "static void c(void) { COUNT(1); }",
         "uopc_counter_add"),
        ("#define CTOR(f) static void __attribute__((constructor)) f(void)", "CTOR(c) {}", "constructor")):
      got = " ".join(self.refusals(self.HANDOUT + macro + "\n" + use + "\n"))
      self.assertIn(word, got, macro)
      self.assertIn("macro", got, macro)
    inside = self.HANDOUT.replace("return -1;", "#define RUN __asm__(\"nop\")\n  RUN; return -1;")
    self.assertIn("in a macro: uses __asm__", " ".join(self.refusals(inside)))
    pragma = self.HANDOUT.replace("return -1;", "#pragma GCC optimize(\"O0\")\n  return -1;")
    self.assertIn("not allowed inside a function", " ".join(self.refusals(pragma)))   # indented, too
    plain = self.HANDOUT.replace("int f(int v)", "#define SQUARE(x) ((x) * (x))\nint f(int v)")
    self.assertEqual(self.refusals(plain.replace("return -1;", "return SQUARE(v);")), [])


class UnitScreenTest(unittest.TestCase):
  """screen.check_unit on gcc -E's text: only what comes from the student's file counts, a system
  header's macro expanded there included; the handout's unit says what the given code may hold."""
  UNIT = ('# 0 "x.c"\n# 1 "x.c"\n# 1 "/usr/include/h.h" 1 3 4\n'
          'extern int puts (const char *) __asm__ ("" "puts") __attribute__ ((__constructor__));\n'
          '# 2 "x.c" 2\n\nint f(void) {\n  extern int shell (const char *)\n# 4 "x.c" 3 4\n'
          '  __asm__ (\n# 4 "x.c"\n  "" "system"\n# 4 "x.c" 3 4\n  )\n# 4 "x.c"\n  ;\n'
          '#pragma weak f\n  return 0 __attribute__((format(printf, 1, 2)));\n}\n')

  def test_only_the_files_own_tokens_count_at_the_lines_they_are_used(self):
    found = screen.unit_findings(screen.unit_tokens(self.UNIT, "x.c"))
    self.assertEqual(found, [(4, "asm", "__asm__"), (5, "pragma", "#pragma weak f")])
    self.assertEqual(screen.unit_findings(screen.unit_tokens(self.UNIT, "/usr/include/h.h")),
                     [(1, "asm", "__asm__"), (1, "attribute", "__attribute__((__constructor__))")])

  def test_an_attributes_arguments_are_not_its_names(self):
    toks = screen.unit_tokens('# 1 "x.c"\nint g __attribute__((cleanup(weak), __weak__, section("s")));\n', "x.c")
    self.assertEqual([w for _, _, w in screen.unit_findings(toks)],
                     ["__attribute__((__weak__))", "__attribute__((section))"])

  def test_what_the_given_code_holds_passes_and_a_macros_addition_is_blamed_on_its_line(self):
    handout = ('#include <sys/cdefs.h>\n#include "uopc/counters.h"\nstatic void given(void) { uopc_counter_add("a", 1); }\n'
               'int f(void) {\n  /* Lab 23.9: write f here. */\n  return -1;\n}\n')
    mine = handout.replace("  return -1;", "  given();\n  __CONCAT(uopc_counter, _add)(\"a\", -1);\n  return 0;")
    self.assertEqual(screen.check_file("x.c", mine, handout), [])   # the text alone passes
    self.assertEqual(screen.student_lines(mine, handout), {4, 6, 7, 8, 9})
    units = {}
    with tempfile.TemporaryDirectory() as tmp:
      for name, text in (("handout", handout), ("mine", mine)):
        Path(tmp, "x.c").write_text(text)
        units[name] = subprocess.run(["gcc", "-std=c11", "-E", "-Iuopc/include", f"{tmp}/x.c"], cwd=ROOT,
                                     capture_output=True, text=True, check=True).stdout
      path = f"{tmp}/x.c"
      self.assertEqual(screen.check_unit("x.c", path, units["handout"], units["handout"], set()), [])
      got = screen.check_unit("x.c", path, units["mine"], units["handout"], screen.student_lines(mine, handout))
    self.assertEqual(len(got), 1, got)
    self.assertTrue(got[0].startswith("x.c: line 7: the compiler sees uopc_counter_add there"), got)


class TimeoutScaleTest(unittest.TestCase):
  """Time limits scale with the machine: measured when a grade starts, or set by the knob."""

  def setUp(self):
    self.saved = (sandbox._scale, os.environ.pop(sandbox.TIMEOUT_SCALE_ENV, None), sandbox.CALIBRATION_BASELINE_S)
    sandbox._scale = None

  def tearDown(self):
    sandbox._scale, knob, sandbox.CALIBRATION_BASELINE_S = self.saved
    os.environ.pop(sandbox.TIMEOUT_SCALE_ENV, None)
    if knob is not None:
      os.environ[sandbox.TIMEOUT_SCALE_ENV] = knob

  def test_the_knob_sets_the_scale(self):
    os.environ[sandbox.TIMEOUT_SCALE_ENV] = "2.5"
    self.assertEqual(sandbox.timeout_scale(), 2.5)
    self.assertIn(sandbox.TIMEOUT_SCALE_ENV, sandbox.timeout_scale_text())

  def test_a_slow_machine_gets_more_time_up_to_eight_times_and_a_fast_one_never_less(self):
    sandbox.CALIBRATION_BASELINE_S = 1e-6          # every compile here is "slow"
    self.assertEqual(sandbox.timeout_scale(), sandbox.CALIBRATION_MAX)
    self.assertIn("ms here", sandbox.timeout_scale_text())
    sandbox._scale, sandbox.CALIBRATION_BASELINE_S = None, 1e6   # every compile here is "fast"
    self.assertEqual(sandbox.timeout_scale(), 1.0)


class RemoteTest(unittest.TestCase):
  def test_a_view_round_trips_and_aliases_stay_one_buffer(self):
    class Lab:
      def double(self, x, out):
        out[:] = x * 2
        return [int(x.size), "ok"]
    base = np.arange(10, dtype=np.float32)
    ours, theirs = socket.socketpair()
    worker = threading.Thread(target=remote.serve, args=(Lab(), theirs))
    worker.start()
    remote._send(theirs, {"ok": "ready"})
    far = remote.Remote(ours, ())
    self.assertEqual(far.double(base[::2], base[1::2]), [5, "ok"])
    self.assertEqual(base.tolist(), [0, 0, 2, 4, 4, 8, 6, 12, 8, 16])
    far.close()
    worker.join()
    theirs.close()
    self.assertEqual(remote.Local(Lab()).double(np.ones(2), np.zeros(2)), [2, "ok"])

  def test_a_write_past_a_buffer_faults(self):
    code = ("import ctypes; from harness import remote; g = remote.Guarded(bytes(12), None); "
            "ctypes.memmove(g.array.ctypes.data + 12, b'x', 1)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True)
    self.assertEqual(done.returncode, -11)


EVIL = {  # function -> a line put first in its body
  "sym_expr_eval": "abort();",
  "sym_scope_prove_lt": "for (volatile int spin = 1; spin;) {}",
  "sym_dim_check": 'if (value == 65) { printf("[       OK ] test_sym_dim_bind_rejects_value_above_hi\\n'
                   '[  PASSED  ] 1 test(s).\\n"); fflush(stdout); _exit(0); }',
  # one element past a local array: without the build's -fsanitize=bounds it would pass unseen
  "sym_index_width": "{ volatile int at = 4; int box[4] = {0}; box[at] = 1; (void)box; }",
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
              "sym_index_width_is_32_when_bounds_allow": "CRASH",
              "sym_dim_bind_accepts_both_bounds": "PASS"}
      manifests = {lab: manifest.load(lab) for lab in manifest.available()}
      with contextlib.redirect_stdout(io.StringIO()):
        score = LabGrader(manifests["23.1"], manifests, Options(submission=sub, only=set(want)),
                          ResultsFile(None), 0).grade()
      got = {t.id: r.verdict for t, r, _, _ in score.rows}
      self.assertEqual(got, want)
      bounds = next(r.detail for t, r, _, _ in score.rows if t.id == "sym_index_width_is_32_when_bounds_allow")
      self.assertIn("fsanitize=bounds", bounds)   # the crash says what most likely caused it
    finally:
      os.environ.pop(sandbox.TIMEOUT_SCALE_ENV, None)
      shutil.rmtree(sub, ignore_errors=True)


EXPERIMENT_PASSES = """#include "guarded_jit.h"
#include "testutil.h"
static void test_always_passes(void **state) { (void)state; assert_true(1); }
int main(void) {
  const struct CMUnitTest tests[] = { cmocka_unit_test(test_always_passes) };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
"""
EXPERIMENT_FAILS = EXPERIMENT_PASSES.replace("assert_true(1)", "fail_msg(\"always\")")


LAB_23_6 = "23.6-one-kernel-many-lengths"
# Lab 23.6 is worked: labs/ holds guarded_jit.c as solutions/ does, so a handout grades its own copy.
GUARDED_JIT = ROOT / ("solutions" if (ROOT / "solutions").is_dir() else "labs") / LAB_23_6 / "guarded_jit.c"
REFERENCE_EXPERIMENT = ROOT / "solutions" / LAB_23_6 / "tests" / "test_my_guard.c"
STUDENT_EXPERIMENT = ROOT / "tests" / "student" / "23.6" / "test_my_guard.c"
STUB_SAYS = "test_my_guard is not implemented yet"


class ExperimentTest(unittest.TestCase):
  """Lab 23.6's experiment graded on a tree holding guarded_jit.c (the reference's, or in a handout the
  worked lab's own) and a test."""

  def grade(self, test_source):
    sub = Path(tempfile.mkdtemp(prefix="uopc-experiment-"))
    try:
      lab = sub / "labs" / "23.6-one-kernel-many-lengths"
      lab.mkdir(parents=True)
      shutil.copy(GUARDED_JIT, lab)
      if test_source is not None:
        (sub / "tests" / "student" / "23.6").mkdir(parents=True)
        (sub / "tests" / "student" / "23.6" / "test_my_guard.c").write_text(test_source)
      manifests = {l: manifest.load(l) for l in manifest.available()}
      with contextlib.redirect_stdout(io.StringIO()):
        score = LabGrader(manifests["23.6"], manifests, Options(submission=sub, only={"experiment.contiguity"}),
                          ResultsFile(None), 0).grade()
      (test, r, earned, _), = score.rows
      return r, earned
    finally:
      shutil.rmtree(sub, ignore_errors=True)

  def test_the_manifest_names_a_guard_the_makefile_knows(self):
    guards = {tuple(line.split()[:2]) for line in (ROOT / "tests/student/guards.txt").read_text().splitlines()
              if line.strip() and not line.startswith("#")}
    for lab in manifest.available():
      for t in manifest.load(lab).tests:
        if t.kind == "experiment":
          self.assertIn((lab, t.spec["guard"]), guards, t.id)

  @unittest.skipUnless(REFERENCE_EXPERIMENT.is_file(), "the reference's experiment is in solutions/, "
                       "which a handout leaves out (writing it is the exercise)")
  def test_a_test_that_catches_the_missing_guard_earns_its_points(self):
    source = REFERENCE_EXPERIMENT.read_text()
    r, earned = self.grade(source)
    self.assertEqual((r.verdict, earned), ("PASS", 2), r.detail)

  def test_a_test_that_passes_on_both_builds_earns_nothing(self):
    r, earned = self.grade(EXPERIMENT_PASSES)
    self.assertEqual((r.verdict, earned), ("FAIL", 0))
    self.assertIn("without the contiguity guard your test passes there too", r.detail)

  def test_a_test_that_fails_on_both_builds_earns_nothing(self):
    r, earned = self.grade(EXPERIMENT_FAILS)
    self.assertEqual((r.verdict, earned), ("FAIL", 0))
    self.assertIn("fails on the lab as it is", r.detail)

  def test_a_missing_test_earns_nothing_and_says_so(self):
    r, earned = self.grade(None)
    self.assertEqual((r.verdict, earned), ("FAIL", 0))
    self.assertIn("test_my_guard.c is missing", r.detail)

  def test_the_handouts_stub_reads_as_not_implemented(self):
    from harness.grading import feedback
    stub = STUDENT_EXPERIMENT.read_text()
    if STUB_SAYS not in stub:
      self.skipTest(f"{STUDENT_EXPERIMENT.relative_to(ROOT)} is no longer the stub: it holds your experiment")
    r, earned = self.grade(stub)
    self.assertEqual((r.verdict, earned), ("FAIL", 0))
    self.assertEqual(set(feedback.stub_of(r)), {"test_my_guard"})


if __name__ == "__main__":
  unittest.main()
