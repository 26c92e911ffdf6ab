"""test_layers.py: the given files of the runtime, the core and every lab call one way only.

    .venv/bin/python -m unittest discover -s tests/grader -p test_layers.py

tools/layers.py reads which file calls which; here it is shown to find a circle where there is
one (and not where a name only stands in a comment, a string or a static function), then run on
every folder of this tree.
"""
import importlib.util
import tempfile
import unittest
from pathlib import Path

from harness.grading.manifest import ROOT

spec = importlib.util.spec_from_file_location("layers", ROOT / "tools" / "layers.py")
layers = importlib.util.module_from_spec(spec)
spec.loader.exec_module(layers)


def folder(files):
  d = Path(tempfile.mkdtemp(prefix="uopc-layers-"))
  for name, text in files.items():
    (d / name).write_text(text)
  return d


class LayersToolTest(unittest.TestCase):
  def test_a_circle_through_three_files_is_found(self):
    d = folder({"a.c": "int a(void) {\n  return b();\n}\n", "b.c": "int b(void) {\n  return c();\n}\n",
                "c.c": "int c(void) {\n  return a();\n}\n", "d.c": "int d(void) {\n  return a();\n}\n"})
    self.assertEqual(layers.check(d), [["a.c", "b.c", "c.c"]])

  def test_calls_one_way_are_layers(self):
    d = folder({"low.c": "int low(int x) {\n  return x;\n}\n",
                "high.c": "int high(void) {\n  return low(1);\n}\n"})
    self.assertEqual(layers.uses(sorted(d.glob("*.c"))), {"high.c": {"low.c"}, "low.c": set()})
    self.assertEqual(layers.check(d), [])

  def test_comments_strings_statics_and_the_driver_are_no_calls(self):
    d = folder({"low.c": "/* high() is above */\nint low(void) {\n  puts(\"high()\");\n  return 0; // high()\n}\n"
                         "static int high(void) {\n  return 1;\n}\n",
                "high.c": "int high(void) {\n  return low();\n}\n",
                "main.c": "int main(void) {\n  return high() + low();\n}\n"})
    self.assertEqual(layers.check(d), [])


class StudentFilesTest(unittest.TestCase):
  @unittest.skipUnless((ROOT / "solutions").is_dir(), "needs solutions/ (a student's tree holds their own store.c)")
  def test_a_labs_student_files_are_not_layers_of_its_given_code(self):
    # The reference's store.c calls stmt.c's mv_commit, and stmt.c's let calls mv_store: by design.
    # In a tree holding it (a student's), the given files alone still have no circle.
    lab = ROOT / "labs" / "23.3-mutation-views"
    d = folder({p.name: p.read_text() for p in lab.glob("*.c")})
    (d / "store.c").write_text((ROOT / "solutions" / lab.name / "store.c").read_text())
    students = layers.student_files(lab)
    self.assertIn("store.c", students)
    self.assertEqual(layers.check(d, students=set()), [["stmt.c", "store.c"]])
    self.assertEqual(layers.check(d, students=students), [])


class TreeLayersTest(unittest.TestCase):
  def test_no_folder_of_this_tree_has_a_circle(self):
    for d in layers.folders():
      with self.subTest(folder=str(d.relative_to(ROOT))):
        self.assertEqual(layers.check(d), [], f"{d.relative_to(ROOT)}: files that call each other in a circle")


if __name__ == "__main__":
  unittest.main()
