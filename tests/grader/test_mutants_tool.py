"""test_mutants_tool.py: how tools/mutants.py names where a mutant stands and reads equivalents.

    .venv/bin/python -m unittest discover -s tests/grader

An equivalents entry names its file, function and change: the same text in another function is a
different mutant (the change may matter there), and a moved line is the same one.
"""
import sys
import tempfile
import unittest
from pathlib import Path

from harness.grading import manifest

sys.path.insert(0, str(manifest.ROOT / "tools"))
import mutants  # noqa: E402

SOURCE = """#include <stdio.h>
static int table[2] = {1, 2};
static int twice(int x) { return 2 * x; }
int (*hook)(int) = 0;
static int total(const int *v,
                 int n) {
  int s = 0;
  for (int i = 0; i < n; i++) s += v[i];
  return s;
}
void (*entry_of(int k))(void) { return k ? 0 : 0; }
int count(int n) {
  int s = 0;
  for (int i = 0; i < n; i++) s += 1;
  return s;
}
"""


class FunctionsTest(unittest.TestCase):
  def test_each_line_is_named_for_the_definition_that_holds_it(self):
    found = mutants.functions(SOURCE.splitlines())
    self.assertEqual({k: found.get(k, "") for k in range(1, 17)},
                     {1: "", 2: "", 3: "twice", 4: "", 5: "total", 6: "total", 7: "total", 8: "total", 9: "total",
                      10: "total", 11: "entry_of", 12: "count", 13: "count", 14: "count", 15: "count", 16: "count"})

  def test_every_runtime_and_solution_function_closes(self):
    # each `}` alone in column 0 ends one definition, so the finder sees as many as there are
    for path in sorted(manifest.ROOT.glob("uopc/src/*.c")) + sorted(manifest.ROOT.glob("solutions/*/*.c")):
      lines = path.read_text().splitlines()
      found = mutants.functions(lines)
      closing = [k for k, line in enumerate(lines, 1) if line.rstrip() == "}"]
      self.assertTrue(all(k in found for k in closing), path)


class EquivalentsTest(unittest.TestCase):
  def load(self, text):
    (manifest.ROOT / "build").mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(dir=manifest.ROOT / "build") as d:   # the tool names files from the root
      path = Path(d) / "x.equivalents"
      path.write_text(text)
      return mutants.load_equivalents(path.resolve())

  def test_an_entry_is_keyed_by_file_function_and_change(self):
    found = self.load("# a comment\n"
                      "a.c:8: in total: for (int i = 0; i < n; i++) -> for (int i = 0; i != n; i++)\n"
                      "    i counts up from 0\n"
                      "a.c:2: at file scope: static int table[2] = {1, 2}; -> static int table[3] = {1, 2};\n"
                      "    nothing reads the third slot\n")
    self.assertEqual(found, {("a.c", "total", "for (int i = 0; i < n; i++) -> for (int i = 0; i != n; i++)"):
                             "i counts up from 0",
                             ("a.c", "", "static int table[2] = {1, 2}; -> static int table[3] = {1, 2};"):
                             "nothing reads the third slot"})

  def test_the_same_change_in_another_function_is_not_covered(self):
    entry = ("a.c", "total", "for (int i = 0; i < n; i++) -> for (int i = 0; i != n; i++)")
    mine = mutants.Mutant("a.c", 8, "for (int i = 0; i < n; i++)", "for (int i = 0; i != n; i++)", "", "", "total")
    other = mutants.Mutant("a.c", 14, "for (int i = 0; i < n; i++)", "for (int i = 0; i != n; i++)", "", "", "count")
    moved = mutants.Mutant("a.c", 30, mine.before, mine.after, "", "", "total")
    self.assertEqual((mine.key == entry, other.key == entry, moved.key == entry), (True, False, True))
    self.assertEqual(other.label, "a.c:14: in count: for (int i = 0; i < n; i++) -> for (int i = 0; i != n; i++)")

  def test_an_entry_without_its_function_is_refused_with_the_format(self):
    with self.assertRaises(SystemExit) as e:
      self.load("a.c:8: for (int i = 0; i < n; i++) -> for (int i = 0; i != n; i++)\n    why\n")
    self.assertIn("expected `file:line: in function: before -> after`", str(e.exception))


if __name__ == "__main__":
  unittest.main()
