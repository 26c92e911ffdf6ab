"""test_handout.py: the student handout as a student gets it (make handout, extracted elsewhere).

    .venv/bin/python -m unittest tests.grader.test_handout

It ships the reference of the earlier stages as built libraries (reference/lib/, no source, no
debug information), and lab 23.4 works on them while lab 23.1 is still its stubs: untouched,
the 23.4 table names only 23.4's own functions as not implemented, and the driver stops at one
of them; with the reference's 23.4 files copied in, every function passes and the lab is ok.
Lab 23.1's own driver still runs the student's 23.1, and OWN_STAGES=1 puts the student's 23.1
back under lab 23.4 without relinking. One archive and one build serve every case (about a
minute on two cores; the instructor's tree only: a handout has no tools/handout.sh).
"""
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import unittest
from pathlib import Path

from harness.grading import manifest

ROOT = manifest.ROOT
LAB_23_4 = "23.4-function-tracing"
SHIPPED = ["liblab23_1_sym.so", "liblab23_2.so", "liblab23_4.so"]


def functions_23_4():
  """The student functions of lab 23.4: the table's rows but the given code and the driver."""
  return {t.function for t in manifest.load("23.4").tests if " " not in t.function}


@unittest.skipUnless((ROOT / "solutions").is_dir() and (ROOT / "tools" / "handout.sh").is_file(),
                     "makes the handout, which needs solutions/ (the instructor's tree)")
class HandoutTest(unittest.TestCase):
  @classmethod
  def setUpClass(cls):
    cls.top = Path(tempfile.mkdtemp(prefix="uopc-handout-"))
    archive = cls.top / "uopc-labs.tar.gz"
    done = subprocess.run(["tools/handout.sh", str(archive)], cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
      shutil.rmtree(cls.top)
      raise AssertionError(f"tools/handout.sh failed:\n{done.stdout}{done.stderr}")
    with tarfile.open(archive) as tar:
      cls.names = tar.getnames()
      tar.extractall(cls.top, filter="data")
    cls.tree = cls.top / "uopc-labs"
    (cls.tree / ".venv").symlink_to(ROOT / ".venv")
    cls.cache = tempfile.mkdtemp(prefix="uopc-handout-cache-")   # 0700, as the runtime requires

  @classmethod
  def tearDownClass(cls):
    shutil.rmtree(cls.top, ignore_errors=True)
    shutil.rmtree(cls.cache, ignore_errors=True)

  def make(self, *args, drivers_only=False):
    env = dict(os.environ, UOPC_CACHE_DIR=self.cache, SEED="1")
    # as a student types it: not under `make test`'s variables (its IMPL=solutions reaches a child
    # make through MAKEFLAGS, and a handout refuses it)
    for name in ("OWN_STAGES", "IMPL", "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES"):
      env.pop(name, None)
    if drivers_only:
      env["RUN_LABS_DRIVERS_ONLY"] = "1"
    return subprocess.run(["make", "--no-print-directory", "-j2", *args], cwd=self.tree, env=env,
                          capture_output=True, text=True)

  def copy_reference_23_4(self):
    for name in manifest.load("23.4").student_files:
      shutil.copy(ROOT / "solutions" / LAB_23_4 / name, self.tree / "labs" / LAB_23_4 / name)

  def restore_stubs_23_4(self):
    for name in manifest.load("23.4").student_files:
      shutil.copy(ROOT / "labs" / LAB_23_4 / name, self.tree / "labs" / LAB_23_4 / name)

  def rows(self, out):
    """{function: its table row} of the 23.4 table in make lab-23.4's output."""
    functions = functions_23_4()
    return {line.split()[0]: line for line in out.splitlines()
            if line.startswith("  ") and line.split() and line.split()[0] in functions}

  def assert_23_1_is_stubs(self):
    for name in manifest.load("23.1").student_files:
      self.assertEqual((self.tree / "labs" / "23.1-symbolic-dims" / name).read_text(),
                       (ROOT / "labs" / "23.1-symbolic-dims" / name).read_text(), name)

  def test_the_archive_ships_the_earlier_stages_built_without_their_source(self):
    self.assertEqual(sorted(n.split("/reference/lib/")[1] for n in self.names if "/reference/lib/" in n
                            and n.endswith(".so")), sorted(SHIPPED))
    self.assertFalse([n for n in self.names if "/solutions/" in n or n.endswith("/solutions")])
    for lib in SHIPPED:
      sections = subprocess.run(["readelf", "-SW", str(self.tree / "reference" / "lib" / lib)],
                                capture_output=True, text=True, check=True).stdout
      self.assertNotIn(".debug_", sections, lib)    # no line tables, no source names
      self.assertNotIn(".symtab", sections, lib)    # no names of static helpers
    readme = (self.tree / "reference" / "README.md").read_text()
    self.assertIn("OWN_STAGES=1", readme)
    self.assertNotIn("@COMMIT@", readme)

  def test_lab_23_4_with_its_stubs_names_only_its_own_functions(self):
    self.restore_stubs_23_4()
    done = self.make("lab-23.4")
    out = done.stdout + done.stderr
    self.assert_23_1_is_stubs()
    self.assertIn("lab 23.4: linked with the reference's lab 23.1 (reference/lib; OWN_STAGES=1 links yours)", out)
    self.assertIn("  lab 23.1: the reference's library (reference/lib, shipped with the handout)", out)
    rows = self.rows(out)
    self.assertEqual(set(rows), functions_23_4(), out)
    for fn, row in rows.items():
      self.assertEqual(row.split()[2:4], ["not", "implemented"], row)
    self.assertNotIn("lab 23.1's", out)
    self.assertIn("lab 23.4: not implemented yet; the driver stops at tp_", out)
    self.assertEqual(done.returncode, 0, out)   # stubs are reported, not failures

  def test_lab_23_4_with_the_reference_files_passes_on_23_1_stubs(self):
    self.copy_reference_23_4()
    try:
      done = self.make("lab-23.4")
    finally:
      self.restore_stubs_23_4()
    out = done.stdout + done.stderr
    self.assert_23_1_is_stubs()
    rows = self.rows(out)
    self.assertEqual(len(rows), len(functions_23_4()), out)
    for fn, row in rows.items():
      self.assertEqual(row.split()[2], "passed", row)
    total = re.search(r"^  total +(\d+)/(\d+)  \(visible tests only", out, re.M)   # every visible point
    self.assertTrue(total and total.group(1) == total.group(2), out)
    self.assertIn("lab 23.4: ok", out)
    self.assertEqual(done.returncode, 0, out)

  def lab_23_7(self, reference):
    """make lab-23.7 with the stubs of every other lab, its own files the reference's or stubs."""
    folder = "23.7-tensorjit"
    names = manifest.load("23.7").student_files
    if reference:
      for name in names:
        shutil.copy(ROOT / "solutions" / folder / name, self.tree / "labs" / folder / name)
    try:
      done = self.make("lab-23.7")
    finally:
      for name in names:
        shutil.copy(ROOT / "labs" / folder / name, self.tree / "labs" / folder / name)
    return done, done.stdout + done.stderr

  def test_lab_23_7_links_the_reference_of_23_1_23_2_and_23_4(self):
    done, out = self.lab_23_7(reference=False)
    self.assert_23_1_is_stubs()
    self.assertIn("lab 23.7: linked with the reference's lab 23.1, lab 23.2, lab 23.4 (reference/lib; "
                  "OWN_STAGES=1 links yours)", out)
    for lab in ("23.1", "23.2", "23.4"):
      self.assertIn(f"  lab {lab}: the reference's library (reference/lib, shipped with the handout)", out)
    self.assertIn("lab 23.7: not implemented yet; the driver stops at tj_extent_of", out)
    self.assertEqual(done.returncode, 0, out)

  def test_lab_23_7_with_the_reference_files_passes_on_the_other_labs_stubs(self):
    done, out = self.lab_23_7(reference=True)
    self.assert_23_1_is_stubs()
    total = re.search(r"^  total +(\d+)/(\d+)  \(visible tests only", out, re.M)
    self.assertTrue(total and total.group(1) == total.group(2), out)
    self.assertIn("one artifact across sizes          x.reshape(x.size(0), -1)*2", out)
    self.assertIn("lab 23.7: ok", out)
    self.assertEqual(done.returncode, 0, out)

  def test_own_stages_links_the_students_23_1_under_23_4(self):
    self.copy_reference_23_4()
    try:
      done = self.make("lab-23.4", "OWN_STAGES=1", drivers_only=True)
      again = self.make("lab-23.4", drivers_only=True)
    finally:
      self.restore_stubs_23_4()
    self.assertIn("lab 23.1: sym_dim_check is not implemented yet", done.stdout, done.stderr)
    self.assertNotIn("linked with the reference's", done.stdout)
    self.assertIn("lab 23.4: ok", again.stdout, again.stderr)

  def test_lab_23_1s_driver_runs_the_students_23_1(self):
    done = self.make("lab-23.1", drivers_only=True)
    self.assertNotIn("linked with the reference's", done.stdout)
    self.assertIn("lab 23.1: not implemented yet", done.stdout, done.stderr)
    self.assertEqual(done.returncode, 0, done.stdout + done.stderr)


if __name__ == "__main__":
  unittest.main()
