"""layers.py: do the given files of a folder call each other one way only?

    .venv/bin/python tools/layers.py [FOLDER ...]     (default: the runtime, the core, every lab)

A file's layer is what it calls: file A uses file B when A calls a function that B defines (not
static). The files of a folder should form layers, each using only those below it (README, "The
stack"; labs/core/README.md): a circle (A uses B, B uses A, possibly through others) is a place
where no file can be read, tested or replaced on its own. This reads C as text, which is enough
for code written as this project's is (definitions start at column 0, one per line). It judges
the given files only: a lab's student files (its manifest's list) are left out, since a student's
function calls back into the given code that calls it by design (the student writes the middle
of a pipeline), so the check holds in a student's tree as in the instructor's.
Prints each circle and exits 1 when there is one.
"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# A definition: at column 0, not static or a typedef, a name and '(' with no ';' on the line.
DEFINITION = re.compile(r"^(?!static\b)(?!typedef\b)(?!extern\b)[A-Za-z_][\w \t*]*?\b([a-z_]\w*)\s*\([^;]*$", re.M)
STATIC = re.compile(r"^static\b[\w \t*]*?\b([a-z_]\w*)\s*\(", re.M)   # a file's own: its calls are local
CALL = re.compile(r"\b([a-z_]\w*)\s*\(")


def _code(path):
  """The file's text without comments and string literals (a name in either is not a call)."""
  text = re.sub(r"/\*.*?\*/|//[^\n]*", "", path.read_text(), flags=re.S)
  return re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)


def uses(files):
  """{file name: the names of the other files whose functions it calls}."""
  code = {f.name: _code(f) for f in files}
  defined = {}
  for name, text in code.items():
    for m in DEFINITION.finditer(text):
      defined.setdefault(m.group(1), name)
  local = {name: set(STATIC.findall(text)) for name, text in code.items()}
  return {name: {defined[c] for c in CALL.findall(text) if defined.get(c, name) != name and c not in local[name]}
          for name, text in code.items()}


def circles(graph):
  """The strongly connected sets of more than one file (Tarjan), each sorted."""
  index, low, stack, on, found = {}, {}, [], set(), []

  def visit(v):
    index[v] = low[v] = len(index)
    stack.append(v)
    on.add(v)
    for w in sorted(graph[v]):
      if w not in index:
        visit(w)
        low[v] = min(low[v], low[w])
      elif w in on:
        low[v] = min(low[v], index[w])
    if low[v] == index[v]:
      group = []
      while True:
        w = stack.pop()
        on.discard(w)
        group.append(w)
        if w == v:
          break
      if len(group) > 1:
        found.append(sorted(group))

  for v in sorted(graph):
    if v not in index:
      visit(v)
  return found


def folders():
  """The runtime, the compiler core, every lab folder and tensorjit of this tree."""
  return [ROOT / "uopc" / "src", ROOT / "labs" / "core"] + sorted((ROOT / "labs").glob("23.*-*/")) + \
    [d for d in (ROOT / "labs" / "tensorjit",) if d.is_dir()]


def student_files(folder):
  """The names of a lab folder's student files (its manifest's list): they are not layers of the
  given code. In the instructor's tree they are stubs that call nothing; in a student's tree they
  call back into the given code that calls them, by design."""
  import json
  for manifest in (ROOT / "harness" / "manifests").glob("*.json"):
    data = json.loads(manifest.read_text())
    if (ROOT / data.get("dir", "")).resolve() == Path(folder).resolve():
      return set(data.get("student_files", []))
  return set()


def check(folder, students=None):
  """The circles among folder's given .c files (a lab's driver, main.c, is no layer of it);
  students: the names to leave out (default: the lab's student files, from its manifest)."""
  skip = (student_files(folder) if students is None else set(students)) | {"main.c"}
  files = [f for f in sorted(Path(folder).glob("*.c")) if f.name not in skip]
  return circles(uses(files))


def main(argv):
  bad = 0
  for folder in [Path(a) for a in argv] or folders():
    for group in check(folder):
      print(f"{folder.relative_to(ROOT) if folder.is_relative_to(ROOT) else folder}: "
            f"{', '.join(group)} call each other in a circle")
      bad += 1
  print(f"layers: {bad} circle{'s' if bad != 1 else ''}")
  return 1 if bad else 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
