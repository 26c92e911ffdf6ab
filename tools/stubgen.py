#!/usr/bin/env python3
"""stubgen.py: makes the student files in labs/ from the marked sources in solutions/.

In solutions/<lab>/<file>.c a student's part is a function body between whole-line markers:

    int sym_dim_bind(sym_binding *b, const sym_dim *d, int64_t value, uopc_error *err) {
    // STUDENT 23.1 sym_dim_bind
      ... reference body ...
    // END STUDENT
    }

The generated labs/<lab>/<file>.c keeps everything else byte for byte and replaces the region
(markers included) with a stub that names the lab and the function and returns
UOPC_E_NOT_IMPLEMENTED. A top-level region `// STUDENT 23.1 helpers` holds static helpers used only
by student code; it becomes a one-line comment. A file without markers is copied as it is.

    tools/stubgen.py --write       regenerate every labs/ student file
    tools/stubgen.py --check       exit 1 with a diff when labs/ drifted from solutions/
    tools/stubgen.py --list        the student functions, one per line: lab function file:line
    tools/stubgen.py --self-test   malformed and well-formed samples

Marker errors print file:line: message and exit with status 2.
"""
import argparse
import bisect
import difflib
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HELPERS = "helpers"
# Anything that looks like a marker, well-formed or not (so that typos are errors, not comments).
MARKER_LIKE = re.compile(r"(?://|/\*)\s*(?:(?:END\s+)?STUDENT\b|(?i:(?:end\s+)?student\s+\d+\.\d+))")
BEGIN = re.compile(r"// STUDENT (\d+\.\d+) ([A-Za-z_]\w*)")
END = "// END STUDENT"
# Words that can end a parameter's type, so a parameter ending in one has no name.
TYPE_WORDS = {"void", "char", "short", "int", "long", "float", "double", "signed", "unsigned",
              "const", "volatile", "restrict", "struct", "union", "enum", "_Bool"}
STORAGE_WORDS = {"static", "inline", "extern"}


class MarkerError(Exception):
  def __init__(self, path, line, message):
    super().__init__(f"{path}:{line}: error: {message}")


# ---- scanning ---------------------------------------------------------------------------------

def split_lines(text):
  """Lines with their ends, split at '\n' only (str.splitlines also splits at form feeds)."""
  parts = text.split("\n")
  return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def scan(text):
  """One pass of a small C tokenizer: skips comments, string and char literals, and
  preprocessor lines. Returns the text with comments and directives blanked (newlines kept),
  {offset: text} of the comments, the braces as (offset, '{' or '}', depth before it), and the
  offsets where a top-level item ends (a `;` or `}` at depth 0, a directive's end)."""
  code, comments, braces, bounds = list(text), {}, [], []
  depth, i, n, at_line_start = 0, 0, len(text), True

  def blank(a, b):
    for k in range(a, b):
      if code[k] != "\n":
        code[k] = " "

  while i < n:
    c = text[i]
    if c == "\n":
      at_line_start = True
      i += 1
      continue
    if c in " \t\r\f\v":
      i += 1
      continue
    if c == "#" and at_line_start:           # a directive, with its continuation lines
      j = i
      while (j := text.find("\n", j)) > 0 and text[j - 1 - (text[j - 1] == "\r")] == "\\":
        j += 1
      j = n if j < 0 else j
      blank(i, j)
      bounds.append(j)
      i = j
      continue
    at_line_start = False
    if text.startswith("//", i):
      j = text.find("\n", i)
      j = n if j < 0 else j
      comments[i] = text[i:j]
      blank(i, j)
      i = j
    elif text.startswith("/*", i):
      j = text.find("*/", i + 2)
      j = n if j < 0 else j + 2
      comments[i] = text[i:j]
      blank(i, j)
      i = j
    elif c in "\"'":
      j = i + 1
      while j < n and text[j] != c and text[j] != "\n":
        j += 2 if text[j] == "\\" else 1
      i = j + 1
    else:
      if c == "{":
        braces.append((i, c, depth))
        depth += 1
      elif c == "}":
        braces.append((i, c, depth))
        depth = max(depth - 1, 0)
        if depth == 0:
          bounds.append(i + 1)
      elif c == ";" and depth == 0:
        bounds.append(i + 1)
      i += 1
  return "".join(code), comments, braces, bounds


def line_depths(text, braces):
  """Brace depth at the start of each line (index 0 is line 1)."""
  depths, depth, k, offset = [], 0, 0, 0
  for line in split_lines(text):
    while k < len(braces) and braces[k][0] < offset:
      depth = max(braces[k][2] + (1 if braces[k][1] == "{" else -1), 0)
      k += 1
    depths.append(depth)
    offset += len(line)
  return depths


# ---- signatures -------------------------------------------------------------------------------

def split_top(s, sep=","):
  parts, depth, cur = [], 0, []
  for ch in s:
    if ch in "([":
      depth += 1
    elif ch in ")]":
      depth -= 1
    if ch == sep and depth == 0:
      parts.append("".join(cur))
      cur = []
    else:
      cur.append(ch)
  parts.append("".join(cur))
  return [p.strip() for p in parts]


def parse_signature(sig):
  """'static int f(int a, uopc_error *err)' -> ('int', 'f', ['int a', 'uopc_error *err']),
  or None when sig is not a function definition's head."""
  sig = " ".join(sig.split())
  if not sig.endswith(")"):
    return None
  depth = 0
  for k in range(len(sig) - 1, -1, -1):   # the '(' matching the final ')'
    depth += {")": 1, "(": -1}.get(sig[k], 0)
    if depth == 0:
      break
  m = re.search(r"([A-Za-z_]\w*)\s*$", sig[:k])
  if not m:
    return None
  head = [w for w in sig[:m.start()].split() if w not in STORAGE_WORDS]
  params = [p for p in split_top(sig[k + 1:-1]) if p]
  if params == ["void"]:
    params = []
  return " ".join(head), m.group(1), params


def param_name(param):
  """The name a parameter declares: 'const int64_t *shape' -> 'shape', 'int v[8]' -> 'v',
  'int (*cb)(void *)' -> 'cb', '...' -> None. Raises ValueError for an unnamed parameter."""
  if param == "...":
    return None
  fp = re.search(r"\(\s*\*\s*(?:const\s+)?([A-Za-z_]\w*)\s*\)", param)
  if fp:
    return fp.group(1)
  bare = re.sub(r"(\s*\[[^\]]*\])+\s*$", "", param)   # array dims
  m = re.search(r"([A-Za-z_]\w*)$", bare)
  if not m or m.group(1) in TYPE_WORDS or re.fullmatch(r"[A-Za-z_]\w*", bare):
    raise ValueError(f"parameter '{param}' has no name")
  return m.group(1)


# ---- generation -------------------------------------------------------------------------------

@dataclass
class Region:
  lab: str
  name: str              # the function, or "helpers"
  begin: int             # 1-based line of the BEGIN marker
  depth: int             # brace depth there
  end: int = 0           # 1-based line of the END marker
  params: list = field(default_factory=list)   # parameters to (void), for a function region
  indent: str = ""


class Source:
  """One solutions/ file, scanned: lines, their offsets and depths, and the tokenizer's output."""

  def __init__(self, path, text):
    self.path, self.lines = path, split_lines(text)
    self.code, self.comments, self.braces, self.bounds = scan(text)
    self.depths = line_depths(text, self.braces)
    self.starts = [0]
    for line in self.lines[:-1]:
      self.starts.append(self.starts[-1] + len(line))

  def fail(self, lineno, message):
    raise MarkerError(self.path, lineno, message)

  def markers(self):
    """(line, marker text) for every comment that looks like a marker, in order."""
    found = []
    for off, comment in sorted(self.comments.items()):
      if MARKER_LIKE.match(comment):
        lineno = bisect.bisect_right(self.starts, off)
        if self.lines[lineno - 1].strip() != comment.strip():
          self.fail(lineno, "a STUDENT marker must be alone on its line")
        found.append((lineno, comment.strip()))
    return found


def lab_id(lab_dir):
  return lab_dir.split("-", 1)[0]


def find_regions(path, text, lab):
  """The regions of one file, validated. Raises MarkerError."""
  src, regions, current, seen = Source(path, text), [], None, {}
  for lineno, word in src.markers():
    if word == END:
      regions.append(close_region(src, current, lineno))
      current = None
    else:
      current = open_region(src, current, lineno, word, lab, seen)
  if current is not None:
    src.fail(current.begin, f"STUDENT region for '{current.name}' has no '// END STUDENT'")
  for r in regions:   # a stub is indented as the body it replaces; helpers as their marker
    body = [line for line in src.lines[r.begin:r.end - 1] if line.strip()]
    first = src.lines[r.begin - 1] if r.name == HELPERS else body[0] if body else "  "
    r.indent = re.match(r"[ \t]*", first).group(0)
  return regions


def open_region(src, current, lineno, word, lab, seen):
  m = BEGIN.fullmatch(word)
  if not m:
    src.fail(lineno, f"unknown marker '{word}': expected '// STUDENT <lab> <function>', "
                     f"'// STUDENT <lab> helpers' or '// END STUDENT'")
  if current is not None:
    src.fail(lineno, f"nested STUDENT region: the region for '{current.name}' opened at "
                     f"line {current.begin} is still open")
  region = Region(m.group(1), m.group(2), lineno, src.depths[lineno - 1])
  if region.lab != lab:
    src.fail(lineno, f"marker names lab {region.lab} but the file is in lab {lab}'s folder")
  if region.name == HELPERS:
    if region.depth != 0:
      src.fail(lineno, "a helpers region must be at top level, outside any function")
    return region
  if region.name in seen:
    src.fail(lineno, f"function '{region.name}' already has a STUDENT region at line {seen[region.name]}")
  seen[region.name] = lineno
  region.params = function_params(src, region)
  return region


def close_region(src, region, lineno):
  if region is None:
    src.fail(lineno, "'// END STUDENT' without a '// STUDENT' before it")
  depth = src.depths[lineno - 1]
  if depth != region.depth:
    src.fail(lineno, f"'// END STUDENT' is at brace depth {depth} but its region "
                     f"(line {region.begin}) opened at depth {region.depth}")
  lo, hi = src.starts[region.begin - 1], src.starts[lineno - 1]
  if any(lo <= off < hi and brace == "}" and before <= region.depth for off, brace, before in src.braces):
    src.fail(lineno, f"the region opened at line {region.begin} crosses the end of its block")
  region.end = lineno
  return region


def function_params(src, region):
  """The parameters to (void) for a region directly inside its function's body."""
  lineno, name = region.begin, region.name
  if region.depth != 1:
    src.fail(lineno, f"STUDENT region for '{name}' must be directly in a function body "
                     f"(brace depth {region.depth}, expected 1)")
  offset = src.starts[lineno - 1]
  opening = [off for off, brace, before in src.braces if off < offset and brace == "{" and before == 0][-1]
  start = max([b for b in src.bounds if b <= opening], default=0)
  parsed = parse_signature(src.code[start:opening])
  if parsed is None:
    src.fail(lineno, f"cannot read the signature of the function around the STUDENT region for '{name}'")
  ret, fname, params = parsed
  if fname != name:
    src.fail(lineno, f"marker names '{name}' but the enclosing function is '{fname}'")
  if ret != "int":
    src.fail(lineno, f"'{name}' returns '{ret}': a student function must return int (a status)")
  if not params or not re.fullmatch(r"uopc_error\s*\*\s*err", params[-1]):
    src.fail(lineno, f"'{name}' must take 'uopc_error *err' as its last parameter")
  try:
    names = [param_name(p) for p in params[:-1]]
  except ValueError as e:
    src.fail(lineno, f"'{name}': {e}")
  return [n for n in names if n]


def stub_lines(r, eol):
  if r.name == HELPERS:
    return [f"{r.indent}/* Lab {r.lab}: helper functions for your code go here. */{eol}"]
  out = [f"{r.indent}/* Lab {r.lab}: write {r.name} here. See README.md in this folder. */{eol}"]
  if r.params:
    out.append(r.indent + " ".join(f"(void){p};" for p in r.params) + eol)
  out.append(f'{r.indent}return UOPC_FAIL(err, UOPC_E_NOT_IMPLEMENTED, '
             f'"lab {r.lab}: {r.name} is not implemented yet");{eol}')
  return out


def generate(path, text, lab):
  """(generated text, regions) for one solutions/ file."""
  regions = find_regions(path, text, lab)
  lines = split_lines(text)
  out, k = [], 0
  for r in regions:
    out += lines[k:r.begin - 1]
    marker = lines[r.begin - 1]
    eol = marker[len(marker.rstrip("\r\n")):] or "\n"
    out += stub_lines(r, eol)
    k = r.end
  out += lines[k:]
  return "".join(out), regions


# ---- the tree ---------------------------------------------------------------------------------

def student_files(root):
  """(solutions path, labs path, lab id) for every .c file under solutions/<lab>/."""
  sol = root / "solutions"
  for lab_dir in sorted(p for p in sol.iterdir() if p.is_dir()) if sol.is_dir() else []:
    for src in sorted(lab_dir.glob("*.c")):
      yield src, root / "labs" / lab_dir.name / src.name, lab_id(lab_dir.name)


def read(path):
  with open(path, encoding="utf-8", newline="") as f:
    return f.read()


def generate_all(root):
  """[(src, dst, generated text, regions)], or raises MarkerError on the first bad file."""
  result = []
  for src, dst, lab in student_files(root):
    if not dst.parent.is_dir():
      raise MarkerError(src.relative_to(root), 1, f"there is no {dst.parent.relative_to(root)}/ "
                        "for this solutions folder (the folder names must match)")
    text, regions = generate(src.relative_to(root), read(src), lab)
    result.append((src, dst, text, regions))
  return result


def cmd_write(root):
  for src, dst, text, _ in generate_all(root):
    if not dst.exists() or read(dst) != text:
      with open(dst, "w", encoding="utf-8", newline="") as f:
        f.write(text)
      print(f"wrote {dst.relative_to(root)}")
  return 0


def cmd_check(root, max_diff_lines=40):
  drift = 0
  for src, dst, text, _ in generate_all(root):
    rel = dst.relative_to(root)
    if not dst.exists():
      print(f"{rel}: missing (generated from {src.relative_to(root)})")
      drift += 1
      continue
    have = read(dst)
    if have == text:
      continue
    drift += 1
    diff = list(difflib.unified_diff(have.splitlines(), text.splitlines(), f"{rel} (in the tree)",
                                     f"{rel} (from {src.relative_to(root)})", lineterm=""))
    print(f"{rel}: differs from what {src.relative_to(root)} generates")
    print("\n".join(diff[:max_diff_lines]))
    if len(diff) > max_diff_lines:
      print(f"... {len(diff) - max_diff_lines} more diff lines")
  if drift:
    print(f"{drift} student file(s) out of sync with solutions/: run 'make labs'")
  return 1 if drift else 0


def cmd_list(root):
  for src, _, _, regions in generate_all(root):
    for r in regions:
      if r.name != HELPERS:
        print(f"{r.lab} {r.name} {src.relative_to(root)}:{r.begin}")
  return 0


# ---- self-test --------------------------------------------------------------------------------

GOOD = """\
#include "sym_dim.h"

// STUDENT 23.1 helpers
static int clamp(int v) { return v < 0 ? 0 : v; }
// END STUDENT

/* A brace in a comment { and in strings "}" '{' must not count. */
int sym_dim_bind(sym_binding *b,
                 const sym_dim *d, int64_t value, uopc_error *err) {
// STUDENT 23.1 sym_dim_bind
  if (value < d->lo) return UOPC_FAIL(err, UOPC_E_BOUNDS, "dim '%s' = %lld", d->name, (long long)value);
  b->value = clamp((int)value);
  return UOPC_OK;
// END STUDENT
}

int sym_count(int (*visit)(void *ctx, int i), void *ctx, const int64_t shape[UOPC_MAX_RANK],
              uopc_error *err) {
  // STUDENT 23.1 sym_count
  return visit(ctx, (int)shape[0]) ? UOPC_OK : UOPC_FAIL(err, UOPC_E_INVALID, "no");
  // END STUDENT
}

int sym_reset(void) { return 0; }

int sym_none(uopc_error *err) {
// STUDENT 23.1 sym_none
  (void)err;
  return 0;
// END STUDENT
}
"""

GOOD_STUB = """\
#include "sym_dim.h"

/* Lab 23.1: helper functions for your code go here. */

/* A brace in a comment { and in strings "}" '{' must not count. */
int sym_dim_bind(sym_binding *b,
                 const sym_dim *d, int64_t value, uopc_error *err) {
  /* Lab 23.1: write sym_dim_bind here. See README.md in this folder. */
  (void)b; (void)d; (void)value;
  return UOPC_FAIL(err, UOPC_E_NOT_IMPLEMENTED, "lab 23.1: sym_dim_bind is not implemented yet");
}

int sym_count(int (*visit)(void *ctx, int i), void *ctx, const int64_t shape[UOPC_MAX_RANK],
              uopc_error *err) {
  /* Lab 23.1: write sym_count here. See README.md in this folder. */
  (void)visit; (void)ctx; (void)shape;
  return UOPC_FAIL(err, UOPC_E_NOT_IMPLEMENTED, "lab 23.1: sym_count is not implemented yet");
}

int sym_reset(void) { return 0; }

int sym_none(uopc_error *err) {
  /* Lab 23.1: write sym_none here. See README.md in this folder. */
  return UOPC_FAIL(err, UOPC_E_NOT_IMPLEMENTED, "lab 23.1: sym_none is not implemented yet");
}
"""

FN = "int f(int a, uopc_error *err) {\n"
BAD = {  # name: (source, expected line, expected message fragment)
  "nested": (FN + "// STUDENT 23.1 f\n// STUDENT 23.1 f\n// END STUDENT\n}\n", 3, "nested STUDENT region"),
  "unmatched end": (FN + "  return 0;\n// END STUDENT\n}\n", 3, "without a '// STUDENT'"),
  "unclosed begin": (FN + "// STUDENT 23.1 f\n  return 0;\n}\n", 2, "has no '// END STUDENT'"),
  "wrong function": (FN + "// STUDENT 23.1 g\n  return 0;\n// END STUDENT\n}\n", 2,
                     "marker names 'g' but the enclosing function is 'f'"),
  "wrong lab": (FN + "// STUDENT 23.2 f\n  return 0;\n// END STUDENT\n}\n", 2,
                "marker names lab 23.2 but the file is in lab 23.1's folder"),
  "unknown word": (FN + "// STUDENT 23.1 f extra\n  return 0;\n// END STUDENT\n}\n", 2, "unknown marker"),
  "lower case": (FN + "// student 23.1 f\n  return 0;\n// END STUDENT\n}\n", 2, "unknown marker"),
  "not alone": (FN + "  return 0; // STUDENT 23.1 f\n}\n", 2, "alone on its line"),
  "no err": ("int f(int a) {\n// STUDENT 23.1 f\n  return a;\n// END STUDENT\n}\n", 2,
             "'uopc_error *err' as its last parameter"),
  "not int": ("void f(uopc_error *err) {\n// STUDENT 23.1 f\n// END STUDENT\n}\n", 2, "must return int"),
  "helpers inside": (FN + "// STUDENT 23.1 helpers\n// END STUDENT\n  return 0;\n}\n", 2, "at top level"),
  "crosses brace": (FN + "// STUDENT 23.1 f\n  return 0;\n}\n// END STUDENT\n", 5, "brace depth 0"),
  "in a block": (FN + "  if (a) {\n  // STUDENT 23.1 f\n  // END STUDENT\n  }\n  return 0;\n}\n", 3,
                 "directly in a function body"),
  "top level": ("// STUDENT 23.1 f\n// END STUDENT\n", 1, "directly in a function body"),
}


def self_test():
  failures = 0

  def report(name, ok, detail=""):
    nonlocal failures
    failures += not ok
    print(f"{'PASS' if ok else 'FAIL'} stubgen {name}{'' if ok else ': ' + detail}")

  with tempfile.TemporaryDirectory() as tmp:
    root = Path(tmp)
    sol, labs = root / "solutions" / "23.1-symbolic-dims", root / "labs" / "23.1-symbolic-dims"
    sol.mkdir(parents=True)
    labs.mkdir(parents=True)

    def run(*args):
      p = subprocess.run([sys.executable, __file__, "--root", tmp, *args], capture_output=True, text=True)
      return p.returncode, p.stdout + p.stderr

    for name, (source, line, fragment) in BAD.items():
      (sol / "sym.c").write_text(source)
      rc, out = run("--write")
      want = f"solutions/23.1-symbolic-dims/sym.c:{line}: error:"
      report(f"rejects {name}", rc == 2 and want in out and fragment in out,
             f"want exit 2 and '{want} ...{fragment}...', got exit {rc}: {out.strip()}")

    (sol / "sym.c").write_text(GOOD)
    (sol / "plain.c").write_text("/* no markers */\nint g(void) { return 1; }\n")
    (labs / "sym.c").write_text("stale\n")
    rc, out = run("--check")
    report("check reports drift", rc == 1 and "labs/23.1-symbolic-dims/sym.c: differs" in out
           and "labs/23.1-symbolic-dims/plain.c: missing" in out, f"exit {rc}: {out.strip()}")
    rc, out = run("--write")
    got = (labs / "sym.c").read_text()
    report("writes the expected stub", rc == 0 and got == GOOD_STUB,
           f"exit {rc}: {out.strip()}\n" + "\n".join(difflib.unified_diff(
               GOOD_STUB.splitlines(), got.splitlines(), "expected", "got", lineterm="")))
    report("copies a file without markers", (labs / "plain.c").read_text() == (sol / "plain.c").read_text())
    rc, out = run("--check")
    report("check passes after write", rc == 0 and out == "", f"exit {rc}: {out.strip()}")
    rc, out = run("--list")
    want = ("23.1 sym_dim_bind solutions/23.1-symbolic-dims/sym.c:10\n"
            "23.1 sym_count solutions/23.1-symbolic-dims/sym.c:19\n"
            "23.1 sym_none solutions/23.1-symbolic-dims/sym.c:27\n")
    report("lists student functions", rc == 0 and out == want, f"exit {rc}: want\n{want}got\n{out}")
    crlf = GOOD.replace("\n", "\r\n")
    (sol / "sym.c").write_bytes(crlf.encode())
    run("--write")
    report("keeps CRLF line ends", (labs / "sym.c").read_bytes() == GOOD_STUB.replace("\n", "\r\n").encode())
  print(f"{failures} failed" if failures else "stubgen self-test: all passed")
  return 1 if failures else 0


def main(argv=None):
  ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  mode = ap.add_mutually_exclusive_group(required=True)
  for flag in ("--write", "--check", "--list", "--self-test"):
    mode.add_argument(flag, action="store_true")
  ap.add_argument("--root", type=Path, default=ROOT, help="the workbook's root (default: this checkout)")
  args = ap.parse_args(argv)
  if args.self_test:
    return self_test()
  root = args.root.resolve()
  try:
    if args.write:
      return cmd_write(root)
    return cmd_check(root) if args.check else cmd_list(root)
  except MarkerError as e:
    print(e, file=sys.stderr)
    return 2
  except (OSError, UnicodeDecodeError) as e:
    print(f"stubgen: {e}", file=sys.stderr)
    return 2


if __name__ == "__main__":
  sys.exit(main())
