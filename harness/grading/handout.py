"""handout.py: prepares the manifests and goldens of a student handout (tools/handout.sh).

    python -m harness.grading.handout TREE

In TREE (a copy of the instructor's tree without solutions/ and tests/hidden/), each manifest
loses its tests that are not visible (their points per function move to held_out_points, so the
point tables still add up), gets the student file list of solutions/ written in (a handout has
no solutions/ to read it from), and the goldens of hidden scenarios are removed. Then every
manifest is loaded from TREE as the handout's grader will load it, and no file may still hold a
STUDENT marker region (a solution body).
"""
import json
import re
import shutil
import sys
from pathlib import Path

from harness.grading import manifest as manifests_mod
from harness.grading.manifest import ROOT

MARKER = re.compile(r"^\s*// STUDENT \d+\.\d+ \w+\s*$", re.M)


def strip_manifest(src, dst):
  data = json.loads(src.read_text())
  held = dict(data.get("held_out_points", {}))
  keep = []
  for t in data["tests"]:
    if t.get("visibility", "visible") == "visible":
      keep.append(t)
    else:
      held[t["function"]] = held.get(t["function"], 0) + t["points"]
  data["tests"] = keep
  data["held_out_points"] = held
  solutions = ROOT / "solutions" / Path(data["dir"]).name
  if solutions.is_dir():
    data["student_files"] = sorted(p.name for p in solutions.glob("*.c"))
  dst.write_text(json.dumps(data, indent=1) + "\n")
  return len(data["tests"]), sum(held.values())


def main(argv=None):
  tree = Path((argv or sys.argv[1:])[0]).resolve()
  for path in sorted((ROOT / "harness" / "manifests").glob("*.json")):
    kept, held = strip_manifest(path, tree / "harness" / "manifests" / path.name)
    print(f"handout: {path.name}: {kept} tests, {held:g} points held out")
  shutil.rmtree(tree / "goldens" / "hidden", ignore_errors=True)
  for lab in manifests_mod.available(tree):
    manifests_mod.load(lab, tree)
  leaks = [str(p.relative_to(tree)) for p in tree.rglob("*.[ch]") if MARKER.search(p.read_text(errors="replace"))]
  if leaks:
    print(f"handout: these files still hold STUDENT regions (solution code): {', '.join(leaks)}")
    return 1
  return 0


if __name__ == "__main__":
  sys.exit(main())
