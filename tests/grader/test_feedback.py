"""test_feedback.py: tests of the table `make lab-23.N` prints (harness/grading/feedback.py).

    .venv/bin/python -m unittest discover -s tests/grader

The README's suggested order (parsed, and naming every function of each lab), the status of a
function from crafted verdicts (passed, not implemented, FAILED with the test's id, waiting for
another stub, another lab's stub or a prerequisite, each saying what it waits on), `next:` (the
first function not implemented or FAILED, never a waiting row; else what the waiting rows wait
on), given code and the driver folded apart from the functions, and
two end-to-end checks of lab 23.1 in check mode: one function written and the rest stubs, then
that function with a wrong bound.
"""
import contextlib
import io
import re
import shutil
import tempfile
import unittest
from pathlib import Path

from harness.grading import feedback, manifest
from harness.grading.results import ResultsFile
from harness.grading.runner import LabGrader, Options
from harness.grading.verdict import FAIL, NOT_RUN, PASS, Result

ROOT = manifest.ROOT


def stub(fn):
  return Result(FAIL, f"ERROR: expected UOPC_OK, got UOPC_E_NOT_IMPLEMENTED: lab 23.1: {fn} is not implemented yet")


class SuggestedOrderTest(unittest.TestCase):
  def test_order_is_the_first_mention_of_each_function_in_the_section(self):
    text = ("# Lab\n`b` and `a` are graded.\n## Suggested order, with hints\n1. `c` (`test_c`), then `a`.\n"
            "2. `c` again, and `b`.\n### A subsection\nstill `d`\n## Expected output\n`e`\n")
    self.assertEqual(feedback.suggested_order(text, ["a", "b", "c", "d", "e"]),
                     (["c", "a", "b", "d", "e"], "Suggested order, with hints"))
    self.assertEqual(feedback.suggested_order("# no section\n", ["a", "b"]), (["a", "b"], ""))

  def test_each_lab_readme_names_every_function_it_grades(self):
    for lab in manifest.available():
      m = manifest.load(lab)
      mine = list(dict.fromkeys(t.function for t in m.tests if not feedback.split(t.function)[1]))
      readme = (ROOT / m.lab_dir / "README.md").read_text()
      order, section = feedback.suggested_order(readme, mine)
      self.assertTrue(section, f"{m.lab_dir}/README.md has no 'Suggested order' section")
      body = readme[readme.index(section):]
      missing = [f for f in mine if f"`{f}`" not in body]
      self.assertEqual(missing, [], f"{m.lab_dir}/README.md's suggested order does not name these")
      self.assertEqual(sorted(order), sorted(mine))

  def test_tags_mark_what_is_not_the_students(self):
    self.assertEqual(feedback.split("sym_dim_init (given)"), ("sym_dim_init", "given"))
    self.assertEqual(feedback.split("dispatch_on_miss (given cache)"), ("dispatch_on_miss", "given"))
    self.assertEqual(feedback.split("driver (prerequisite)"), ("driver", "prerequisite"))
    self.assertEqual(feedback.split("sym_dim_check"), ("sym_dim_check", ""))


class TableTest(unittest.TestCase):
  """Lab 23.1's manifest and README with crafted verdicts: no build, no run."""

  @classmethod
  def setUpClass(cls):
    cls.m = manifest.load("23.1")
    cls.readme = (ROOT / cls.m.lab_dir / "README.md").read_text()

  def table(self, verdict):
    """The table when verdict(test) gives each visible test's Result."""
    rows = []
    for t in self.m.tests:
      if not t.hidden:
        r = verdict(t)
        rows.append((t, r, t.points if r.passed else 0, True))
    return feedback.build(self.m, rows, self.readme)

  def row(self, table, name):
    return next(r for r in table.functions + table.others if r.name == name)

  def test_one_function_written_passes_and_the_next_is_named(self):
    table = self.table(lambda t: Result(PASS) if t.function == "sym_dim_check" else stub(t.function))
    self.assertEqual([r.name for r in table.functions][:3], ["sym_dim_check", "sym_expr_eval", "sym_expr_interval"])
    first = self.row(table, "sym_dim_check")
    self.assertEqual((first.status, first.earned, first.possible), ("passed", 3, 3))
    self.assertEqual(self.row(table, "sym_expr_eval").status, "not implemented")
    self.assertEqual(feedback.next_line(table),
                     "next: sym_expr_eval (see labs/23.1-symbolic-dims/README.md, 'Suggested order')")
    self.assertEqual(feedback.failures(table), [])

  def test_a_wrong_result_is_failed_with_the_tests_id_and_reason(self):
    wrong = "sym_dim_bind_rejects_value_above_hi"
    table = self.table(lambda t: Result(FAIL, "ERROR: expected UOPC_E_BOUNDS, got UOPC_OK") if t.id == wrong
                       else Result(PASS))
    first = self.row(table, "sym_dim_check")
    self.assertEqual(first.status, "FAILED")
    self.assertEqual(first.detail, f"{wrong}: ERROR: expected UOPC_E_BOUNDS, got UOPC_OK")
    self.assertEqual([t.id for t, _ in feedback.failures(table)], [wrong])
    self.assertTrue(feedback.next_line(table).startswith("next: sym_dim_check "))
    self.assertTrue(all(r.status == "passed" for r in table.functions[1:] + table.others))

  def test_another_functions_stub_or_a_failed_prerequisite_is_waiting(self):
    def verdict(t):
      if t.function == "sym_scope_prove_lt":
        return stub("sym_expr_interval")
      if t.id == "driver.counters":
        return Result(NOT_RUN, "needs driver, which gave FAIL")
      if t.id == "driver":
        return Result(FAIL, "the driver exited with status 3: a student function is not implemented yet")
      return Result(PASS)
    table = self.table(verdict)
    prove = self.row(table, "sym_scope_prove_lt")
    self.assertEqual((prove.status, prove.detail), ("waiting", "waits on sym_expr_interval, not implemented yet"))
    loop = self.row(table, "codegen_open_loop")
    self.assertEqual((loop.status, loop.detail),
                     ("waiting", "waits on driver (prerequisite): driver.counters needs driver, which gave FAIL"))
    self.assertEqual(self.row(table, "driver (prerequisite)").status, "waiting")
    self.assertEqual(feedback.next_line(table), "next: sym_expr_interval: sym_scope_prove_lt waits on it")

  def test_next_skips_a_row_that_only_waits_and_names_the_first_stub(self):
    # sym_dim_check's points wait on sym_expr_interval, which comes later in the README's order:
    # next is the stub it waits on, not the waiting row (issue 33, item 4).
    def verdict(t):
      if t.function in ("sym_dim_check", "sym_expr_interval", "plan_resolve_dims"):
        return stub("sym_expr_interval")
      return Result(PASS) if t.function in ("sym_expr_eval",) else stub(t.function)
    table = self.table(verdict)
    first = self.row(table, "sym_dim_check")
    self.assertEqual((first.status, first.waits_on), ("waiting", "sym_expr_interval"))
    self.assertEqual(first.detail, "waits on sym_expr_interval, not implemented yet")
    self.assertEqual(self.row(table, "sym_expr_interval").status, "not implemented")
    self.assertEqual(feedback.next_line(table),
                     "next: sym_expr_interval (see labs/23.1-symbolic-dims/README.md, 'Suggested order')")

  def test_a_failed_function_after_a_waiting_row_is_next(self):
    def verdict(t):
      if t.function == "sym_dim_check":
        return stub("sym_linear_add")
      if t.function == "sym_expr_eval":
        return Result(FAIL, "ERROR: expected 7, got 6")
      return Result(PASS) if t.function != "sym_linear_add" else stub("sym_linear_add")
    table = self.table(verdict)
    self.assertEqual(self.row(table, "sym_dim_check").status, "waiting")
    self.assertTrue(feedback.next_line(table).startswith("next: sym_expr_eval (see "), feedback.next_line(table))

  def test_rows_that_wait_only_on_a_failing_driver_name_it_next(self):
    def verdict(t):
      if t.id in ("driver.counters", "driver.warm.counters"):
        return Result(NOT_RUN, f"needs {t.spec['scenario']}, which gave FAIL")
      if t.id in ("driver", "driver.warm"):
        return Result(FAIL, "lab 23.1: chain n=7: out[3] = 1.5, expected 2")
      return Result(PASS)
    table = self.table(verdict)
    self.assertEqual(self.row(table, "codegen_open_loop").waits_on, "driver (prerequisite)")
    self.assertEqual(self.row(table, "driver (prerequisite)").status, "FAILED")
    self.assertEqual(feedback.next_line(table), "next: driver (prerequisite): it fails (see its failure above); "
                     "codegen_open_loop, codegen_emit_lanes wait on it")

  def test_rows_waiting_on_another_labs_stub_name_that_lab_and_function(self):
    m = manifest.load("23.4")
    readme = (ROOT / m.lab_dir / "README.md").read_text()
    rows = [(t, stub("sym_dim_check"), 0, True) for t in m.tests if not t.hidden]
    table = feedback.build(m, rows, readme)
    first = table.functions[0]
    self.assertEqual((first.status, first.detail), ("waiting", "waits on lab 23.1's sym_dim_check, not implemented yet"))
    self.assertEqual(feedback.next_line(table), f"next: lab 23.1's sym_dim_check: {first.name} waits on it")

  def test_given_code_and_the_driver_are_rows_apart_and_earn_nothing(self):
    table = self.table(lambda t: Result(PASS))
    self.assertNotIn("sym_dim_init (given)", [r.name for r in table.functions])
    self.assertEqual([r.name for r in table.others], ["given code", "driver (prerequisite)"])
    self.assertEqual(sum(r.possible for r in table.functions), self.m.max_points -
                     sum(t.points for t in self.m.tests if t.hidden))
    text = "\n".join(feedback.lines(table))
    self.assertIn("given code", text)
    self.assertNotRegex(text, r"sym_dim_init|sym_dim_check_extreme_values")   # folded; hidden never shown
    self.assertTrue(feedback.next_line(table).startswith("next: nothing: every function passes"))

  def test_a_given_failure_is_the_students_to_read_only_once_every_function_passes(self):
    given = "sym_expr_compare_is_a_total_order"
    broken = self.table(lambda t: Result(FAIL, "0x12 != 0x8") if t.id == given else Result(PASS))
    self.assertEqual(self.row(broken, "given code").status, "FAILED")
    waiting = self.table(lambda t: Result(FAIL, "0x12 != 0x8") if t.id == given else
                         stub(t.function) if t.function == "plan_resolve_dims" else Result(PASS))
    self.assertEqual(self.row(waiting, "given code").status, "waiting")


class ReplayTest(unittest.TestCase):
  """A failure's replay line names this tree's build folder for the tree graded (issue 33 item 7)."""

  def test_a_replay_builds_in_the_folder_of_the_impl_graded(self):
    from harness.grading import runner
    target = "build/labs/tests/23.4/test_grad"
    self.assertEqual(runner.in_this_tree(target, Options()), (f"make {target}", target))
    self.assertEqual(runner.in_this_tree(target, Options(impl="solutions")),
                     ("make IMPL=solutions build/solutions/tests/23.4/test_grad", "build/solutions/tests/23.4/test_grad"))


SUB_FILES = ("codegen.c", "plan.c", "sym_dim.c", "sym_expr.c", "sym_fact.c", "sym_index.c", "sym_simplify.c")


@unittest.skipUnless((ROOT / "solutions").is_dir(), "needs solutions/")
class CheckModeTest(unittest.TestCase):
  """Lab 23.1 graded in check mode (as make lab-23.1 does), on the sym_dim and sym_expr_eval tests."""

  def check(self, sym_dim_c):
    sub = Path(tempfile.mkdtemp(prefix="uopc-feedback-"))
    try:
      for name in SUB_FILES:
        shutil.copy(ROOT / "labs" / "23.1-symbolic-dims" / name, sub / name)
      (sub / "sym_dim.c").write_text(sym_dim_c)
      manifests = {lab: manifest.load(lab) for lab in manifest.available()}
      m = manifests["23.1"]
      only = {t.id for t in m.tests if t.function in ("sym_dim_check", "sym_expr_eval")}
      with contextlib.redirect_stdout(io.StringIO()):
        score = LabGrader(m, manifests, Options(submission=sub, only=only, check_mode=True),
                          ResultsFile(None), 0).grade()
      ran = {t.id for t, _, _, _ in score.rows}
      self.assertEqual(ran, {i for i in only if not m.test(i).hidden})   # check mode runs no held-out test
      return "\n".join(feedback.report(score, m))
    finally:
      shutil.rmtree(sub, ignore_errors=True)

  def test_one_function_written_the_rest_stubs(self):
    text = self.check((ROOT / "solutions" / "23.1-symbolic-dims" / "sym_dim.c").read_text())
    self.assertRegex(text, r"\n  sym_dim_check +3/3  passed\n")
    self.assertRegex(text, r"\n  sym_expr_eval +0/6  not implemented\n")
    self.assertTrue(text.endswith("\nnext: sym_expr_eval (see labs/23.1-symbolic-dims/README.md, 'Suggested order')"),
                    text)

  def test_a_wrong_bound_fails_with_the_tests_id(self):
    right = (ROOT / "solutions" / "23.1-symbolic-dims" / "sym_dim.c").read_text()
    wrong = re.sub(r"value > d->hi\b[^)]*\)", "value > d->hi + 1)", right, count=1)
    self.assertNotEqual(wrong, right)
    text = self.check(wrong)
    self.assertRegex(text, r"\n  sym_dim_check +2/3  FAILED +sym_dim_bind_rejects_value_above_hi: ERROR: ")
    self.assertIn("--- FAIL: lab 23.1, test sym_dim_bind_rejects_value_above_hi", text)
    self.assertTrue(text.endswith("\nnext: sym_dim_check (see labs/23.1-symbolic-dims/README.md, 'Suggested order')"),
                    text)


if __name__ == "__main__":
  unittest.main()
