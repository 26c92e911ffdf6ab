"""test_quoted.py: the counters the texts quote against the goldens (harness/grading/quoted.py).

    .venv/bin/python -m unittest tests.grader.test_quoted

Each case writes a small tree (goldens/23.9.json and one chapter) and checks what quoted.check
says about it: a current quote passes, one wrong number fails naming file:line, the quoted value
and the current one, and the texts of this tree pass as they are.
"""
import json
import tempfile
import unittest
from pathlib import Path

from harness.grading import quoted

GOLDEN = {"lab": "23.9", "scenarios": {"driver": {"steps": 106, "resets": 3, "plans built": 5},
                                       "driver.warm": {"disk cache hits": 5}}}

BLOCK = """# A chapter

The driver's log:

<!-- quoted: 23.9 driver -->
```text
plans built=1
steps=106
plans built=5
```
"""

CLAIMS = """Prose.

<!-- quoted: 23.9 driver: steps=106; resets=3 -->
<!-- quoted: 23.9 driver.warm: disk cache hits=5 -->
The driver takes 106 steps and three resets; warm, five programs come from the disk.
"""


class QuotedTest(unittest.TestCase):
  def check(self, text):
    """(passed, failed, lines printed) of quoted.check over a tree holding one chapter."""
    with tempfile.TemporaryDirectory() as tmp:
      root = Path(tmp)
      (root / "goldens").mkdir()
      (root / "goldens" / "23.9.json").write_text(json.dumps(GOLDEN))
      (root / "chapters").mkdir()
      (root / "chapters" / "23.9-x.md").write_text(text)
      out = []
      passed, failed = quoted.check(root, out.append)
      return passed, failed, out

  def test_a_current_block_and_current_claims_pass(self):
    self.assertEqual(self.check(BLOCK)[:2], (1, 0))    # plans built: its last line, 5
    self.assertEqual(self.check(CLAIMS)[:2], (2, 0))   # 'three' and 'five' count as 3 and 5

  def test_a_wrong_number_in_a_block_names_the_line_and_both_values(self):
    passed, failed, out = self.check(BLOCK.replace("steps=106", "steps=107"))
    self.assertEqual((passed, failed), (0, 1))
    self.assertIn("FAIL chapters/23.9-x.md:5: 23.9 driver 'steps': the text quotes 107, the code prints 106", out[0])

  def test_a_wrong_claim_fails_with_both_values(self):
    passed, failed, out = self.check(CLAIMS.replace("resets=3", "resets=4").replace("three", "four"))
    self.assertEqual((passed, failed), (1, 1))
    self.assertIn("chapters/23.9-x.md:3: 23.9 driver 'resets': the text quotes 4, the code prints 3", out[0])

  def test_a_claim_the_paragraph_does_not_show_fails(self):
    passed, failed, out = self.check(CLAIMS.replace("106 steps", "1060 steps"))
    self.assertEqual((passed, failed), (1, 1))
    self.assertIn("'steps': the marker claims 106, but the paragraph after it does not show it", out[0])

  def test_an_unknown_counter_or_scenario_fails(self):
    self.assertEqual(self.check(BLOCK.replace("steps=106", "stpes=106"))[1], 1)
    _, failed, out = self.check(CLAIMS.replace("23.9 driver.warm", "23.9 driver.cold"))
    self.assertEqual(failed, 1)
    self.assertIn("no scenario 'driver.cold'", out[1])

  def test_an_unmarked_log_fails_and_a_not_quoted_one_passes(self):
    log = "```text\na=1\nb=2\nc=3\n```\n"
    passed, failed, out = self.check("Text.\n\n" + log)
    self.assertEqual((passed, failed), (0, 1))
    self.assertIn("chapters/23.9-x.md:4: a block of name=value lines", out[0])
    self.assertEqual(self.check("<!-- not quoted: an illustration -->\n" + log)[:2], (0, 0))

  def test_this_trees_texts_quote_current_counters(self):
    out = []
    passed, failed = quoted.check(out=out.append)
    self.assertEqual(failed, 0, "\n".join(line for line in out if line.startswith("FAIL")))
    self.assertGreater(passed, 0)


if __name__ == "__main__":
  unittest.main()
