"""manifest.py: one JSON manifest per lab (harness/manifests/23.N.json), loaded and checked.

A manifest names the lab, its student files (where solutions/ exists, its .c files are the
list, so a file added there is graded at once; the manifest's list serves a handout) and its tests. Each test has an id, a title, the
README function it earns points for, its points, a kind and what that kind needs:

    cmocka    suite (tests/23.N/test_x.c or tests/hidden/23.N/test_x.c) and case
    driver    the lab's driver run on a fresh cache (warm: run twice, the second one counts)
    counters  scenario (a driver test's id) and keys, compared with goldens/23.N.json
    numpy     check: a sub-check name of harness/check_23_N.py
    experiment  suite (tests/student/23.N/test_my_guard.c, the student's own test) and guard
              (a name of tests/student/guards.txt): the test must pass on the lab as built and
              fail on the lab built without that guard (make break LAB=23.N GUARD=name)

and optionally timeout (seconds), visibility (visible, after_due_date, hidden), depends (ids),
needs ("cuda-compiler", "gpu"). The points of each function must add up to the README's point
table (a handout, which drops the instructor-only tests, keeps their points per function in
"held_out_points"); a worked lab (no table) says "worked": true. Errors raise ManifestError.
"""
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "harness" / "manifests"
KINDS = {"cmocka": ("suite", "case"), "driver": (), "counters": ("scenario", "keys"), "numpy": ("check",),
         "experiment": ("suite", "guard")}
VISIBILITY = {"visible", "after_due_date", "hidden", "after_published"}
NEEDS = {"cuda-compiler", "gpu"}
TABLE_ROW = re.compile(r"^\|\s*(\d+)\s*\|\s*`(\w+)`", re.M)          # | 10 | `sym_dim_check` | ...
LIST_ITEM = re.compile(r"\*\*`(\w+)`\s*\((\d+)\)\.?\*\*")             # **`guard_check` (20).**


class ManifestError(Exception):
  """A manifest that cannot be graded with: the message names the file and the test."""


@dataclass
class Test:
  id: str
  title: str
  function: str
  points: float
  kind: str
  spec: dict
  timeout: float = 30.0
  visibility: str = "visible"
  depends: list = field(default_factory=list)
  needs: list = field(default_factory=list)

  @property
  def hidden(self):
    return self.visibility != "visible"


@dataclass
class Manifest:
  lab: str
  title: str
  lab_dir: str
  student_files: list
  worked: bool
  deps: list
  tests: list
  path: Path
  held_out: dict = field(default_factory=dict)   # {function: points} of tests a handout leaves out

  def test(self, test_id):
    return next((t for t in self.tests if t.id == test_id), None)

  @property
  def max_points(self):
    return sum(t.points for t in self.tests)


def load(lab, root=ROOT):
  """The manifest of lab ("23.1"), validated against the tree at root."""
  path = root / "harness" / "manifests" / f"{lab}.json"
  try:
    data = json.loads(path.read_text())
  except (OSError, ValueError) as e:
    raise ManifestError(f"{path}: {e}") from None
  tests = [_test(path, t) for t in data.get("tests", [])]
  m = Manifest(data["lab"], data.get("title", ""), data["dir"], data.get("student_files", []),
               bool(data.get("worked")), data.get("deps", []), tests, path, data.get("held_out_points", {}))
  solutions = root / "solutions" / Path(m.lab_dir).name
  if solutions.is_dir():   # the source of truth where it exists: every .c file of solutions/<lab>/
    m.student_files = sorted(p.name for p in solutions.glob("*.c"))
  _check_ids(m)
  _check_points(m, root)
  return m


def available(root=ROOT):
  """The labs that have a manifest and a folder in this tree, in order."""
  labs = [p.stem for p in (root / "harness" / "manifests").glob("23.*.json")]
  return sorted((l for l in labs if any((root / "labs").glob(f"{l}-*/"))), key=_lab_key)


def _lab_key(lab):
  return tuple(int(x) for x in lab.split("."))


def _test(path, t):
  where = f"{path.name}: test {t.get('id', '?')!r}"
  for key in ("id", "title", "function", "points", "kind"):
    if key not in t:
      raise ManifestError(f"{where}: missing '{key}'")
  if t["kind"] not in KINDS:
    raise ManifestError(f"{where}: unknown kind {t['kind']!r} (one of {', '.join(KINDS)})")
  for key in KINDS[t["kind"]]:
    if key not in t:
      raise ManifestError(f"{where}: a {t['kind']} test needs '{key}'")
  if t.get("visibility", "visible") not in VISIBILITY:
    raise ManifestError(f"{where}: visibility {t['visibility']!r} is not one of {sorted(VISIBILITY)}")
  if t["kind"] == "experiment" and not re.fullmatch(r"tests/student/\d+\.\d+/\w+\.c", t["suite"]):
    raise ManifestError(f"{where}: an experiment's suite is tests/student/23.N/<name>.c, not {t['suite']!r}")
  if not set(t.get("needs", [])) <= NEEDS:
    raise ManifestError(f"{where}: needs {t['needs']} (known: {sorted(NEEDS)})")
  common = {"id", "title", "function", "points", "kind", "timeout", "visibility", "depends", "needs"}
  return Test(t["id"], t["title"], t["function"], t["points"], t["kind"],
              {k: v for k, v in t.items() if k not in common}, float(t.get("timeout", 30)),
              t.get("visibility", "visible"), list(t.get("depends", [])), list(t.get("needs", [])))


def _check_ids(m):
  seen = set()
  for t in m.tests:
    if t.id in seen:
      raise ManifestError(f"{m.path.name}: test id {t.id!r} appears twice")
    for d in t.depends:
      if d not in seen:
        raise ManifestError(f"{m.path.name}: test {t.id!r} depends on {d!r}, which is not an earlier test")
    if t.kind == "counters" and t.spec["scenario"] not in seen:
      raise ManifestError(f"{m.path.name}: test {t.id!r} compares scenario {t.spec['scenario']!r}, "
                          "which is not an earlier driver test")
    seen.add(t.id)


def readme_points(readme):
  """{function: points} from a lab statement's point table (a table or a numbered list)."""
  text = readme.read_text()
  table = {name: int(p) for p, name in TABLE_ROW.findall(text)}
  table.update({name: int(p) for name, p in LIST_ITEM.findall(text)})
  return table


def _check_points(m, root):
  """Points per function must equal the README's table (hidden tests included)."""
  dirs = list((root / "labs").glob(f"{m.lab}-*/"))
  if not dirs:
    return
  table = readme_points(dirs[0] / "README.md")
  if m.worked:
    if table:
      raise ManifestError(f"{m.path.name}: marked worked, but {dirs[0].name}/README.md has a point table")
    return
  got = dict(m.held_out)
  for t in m.tests:
    got[t.function] = got.get(t.function, 0) + t.points
  wrong = [f"{f}: manifest {got.get(f, 0)}, README {p}" for f, p in table.items() if got.get(f, 0) != p]
  extra = [f"{f}: {p} points, not in the README's table" for f, p in got.items() if f not in table and p]
  if wrong or extra:
    raise ManifestError(f"{m.path.name}: points do not match {dirs[0].name}/README.md: " + "; ".join(wrong + extra))
