"""test_examples.py: the READMEs' quoted runs (harness/grading/examples.py), the cheap part.

    .venv/bin/python -m unittest discover -s tests/grader

How a marked block is found, that every marker names a lab and student files that exist, and
that each quoted expected.log is the file's text. The tables themselves need the grader's run
(about 20 s): `make test` runs `python -m harness.grading.examples --check` for them.
"""
import unittest

from harness.grading import examples, manifest

README = """Some prose:

<!-- example: make lab-23.1 with sym_dim.c, plan.c -->

    Lab 23.1: a table
      (1 of 2 tests passed)

    lab 23.1: ok

More prose.
<!-- example: expected.log -->
    a=1
"""


class ExamplesTest(unittest.TestCase):
  def test_a_block_is_the_indented_text_after_its_marker(self):
    lines = README.split("\n")
    found = [(m.group("lab"), m.group("files"), lines[start:end]) for m, start, end in examples.blocks(README)]
    self.assertEqual(found, [("23.1", "sym_dim.c, plan.c",
                              ["    Lab 23.1: a table", "      (1 of 2 tests passed)", "", "    lab 23.1: ok"]),
                             (None, None, ["    a=1"])])

  def test_every_marker_names_a_lab_and_its_files(self):
    labs = manifest.available()
    for readme in examples.readmes():
      for m, start, _ in examples.blocks(readme.read_text()):
        where = f"{readme.name}:{start}"
        if m.group("lab"):
          self.assertIn(m.group("lab"), labs, where)
          student = manifest.load(m.group("lab")).student_files + [examples.EXPERIMENT]
          self.assertEqual([f for f in examples.files_of(m) if f not in student], [], where)

  def test_each_quoted_expected_log_is_the_files(self):
    quoted = 0
    for readme in examples.readmes():
      text = readme.read_text()
      lines = text.split("\n")
      for m, start, end in examples.blocks(text):
        if m.group(1) == "expected.log":
          quoted += 1
          got = [line[len(examples.INDENT):] for line in lines[start:end]]
          self.assertEqual(got, examples.expected_log(readme), f"{readme.relative_to(manifest.ROOT)}:{start + 1}")
    self.assertGreater(quoted, 0)


if __name__ == "__main__":
  unittest.main()
