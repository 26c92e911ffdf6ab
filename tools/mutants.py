#!/usr/bin/env python3
"""mutants.py: mutation testing of the reference (issue #15), with universalmutator's C rules.

    tools/mutants.py 23.N [--sample N] [--seed S] [--jobs J] [--min PCT]    a lab's solution files
    tools/mutants.py uopc [...]                                              the runtime, uopc/src/*.c
    tools/mutants.py 23.N --per-file N [--seed S] [--bar PCT]                N mutants of each file

A mutant is one rule of universalmutator (pinned in tools/requirements.txt) applied once to one
line: an operator swapped, a condition negated, a constant moved, a line commented out or
followed by `break;`. One that changes only a comment is no mutant, and two rules that give the
same code count once. The rest are drawn in an order set by a hash of the seed and each
mutant's text (the same on every machine; an edit moves only the mutants of the lines it
touches), and the first SAMPLE that compile (the build's flags, -Werror included) to an object
other than the reference's are run; those that fail to compile or compile to the same bytes are
counted apart, never run.

A lab's mutant is graded by the grader itself (python -m harness.grade LAB --submission DIR,
with fixed NumPy draws), in a scratch tree with a fresh cache per test. It is killed as soon as
one of the lab's graded tests does not pass, and survives when every one passes. A runtime
mutant runs tests/uopc and tests/faults in a scratch tree per job, each binary on a fresh cache.

A survivor is run once more through the suites built with AddressSanitizer and UBSan (`make
SAN=1`, as CI runs them; --no-sanitizer skips it): a read one past a heap block or into a global
array's padding changes no value the plain build's tests see. The runtime's mutant it catches is
killed (those suites are the runtime's own tests); a lab's stays a survivor, marked as caught only
by the sanitizer, since the grader does not run it.

Each survivor prints as `file:line: in function: before -> after` (`at file scope:` outside
every function). Survivors listed with a reason in tests/mutants/<LAB>.equivalents (the same line,
then an indented reason; matched by file, function and change, not line number) are equivalent: they
count in neither side of the ratio `killed / (run - equivalent)`. An entry that matches no mutant
any more is stale and fails the run. Exit status: 1 when the ratio is below --min or an entry is
stale, 2 when the run could not start.

The ratio is also given per file, and each file below --bar (default 90 %, issue #15's bar for
every solution file) is named. With --per-file N the draw is stratified: the first N of each
file's mutants in the seed's order that the grader can run (a mutant of given code in a student
file, which the grader's screen refuses, counts as not built and is passed over unrun, so each
file gets N graded mutants).
"""
import argparse
import concurrent.futures
import contextlib
import hashlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RULES = ["universal.rules", "c.rules", "c_like.rules"]   # what `mutate FILE c` applies
CFLAGS = ["-std=c11", "-D_GNU_SOURCE", "-O2", "-g0", "-Wall", "-Wextra", "-Werror", "-fPIC", "-D_FORTIFY_SOURCE=3",
          "-Iuopc/include"]   # the Makefile's CFLAGS (FORTIFY included) but -g
LAB_BOUNDS = ["-fsanitize=bounds", "-fsanitize-undefined-trap-on-error"]   # the Makefile's, for lab code
GRADE_SEED, GRADE_LENGTHS = 1, 16     # fixed NumPy draws: a mutant's verdict does not depend on luck
EQUIVALENTS = ROOT / "tests" / "mutants"
VERDICT = re.compile(r"^  \d+\.\d+ (\S+)\s+(PASS|FAIL|CRASH|TIMEOUT|EXITED EARLY|SKIPPED|NOT RUN)\b")
UOPC_TEST_TIMEOUT = 120
BEGIN = re.compile(r"^// STUDENT \d+\.\d+ (\w+)")


@dataclass
class Mutant:
  file: str            # relative to ROOT
  line: int
  before: str
  after: str
  text: str            # the whole mutated file
  region: str = ""     # the student function whose body holds the line, or "" (given code)
  function: str = ""   # the C function whose definition holds the line, or "" (file scope)

  @property
  def scope(self):
    return f"in {self.function}" if self.function else "at file scope"

  @property
  def label(self):
    return f"{self.file}:{self.line}: {self.scope}: {self.before} -> {self.after}"

  @property
  def key(self):
    """What an equivalents entry names: the file, the function and the change. Not the line
    number, which an edit above it moves; not the text alone, which may stand in other functions
    where the same change is not equivalent."""
    return (self.file, self.function, f"{self.before} -> {self.after}")


@dataclass
class Target:
  """What is mutated and how its mutants are run."""
  name: str            # "23.1" or "uopc"
  files: list          # paths relative to ROOT
  includes: list       # -I flags the files compile with
  variants: list       # extra flags of each build the tests use (the runtime's fault build)
  equivalents: Path
  handouts: dict = field(default_factory=dict)   # solution file -> the student file of labs/ it is graded against
  mutated: list = None # the files mutants are drawn from (FILES=); all of them build each mutant's lab

  def __post_init__(self):
    if self.mutated is None:
      self.mutated = list(self.files)


# ---- the mutants -----------------------------------------------------------------------------

def target(name):
  if name == "uopc":
    files = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "uopc" / "src").glob("*.c"))
    return Target("uopc", files, [], [[], ["-DUOPC_FAULT_INJECTION"]], EQUIVALENTS / "uopc.equivalents")
  manifest = ROOT / "harness" / "manifests" / f"{name}.json"
  if not manifest.is_file():
    raise SystemExit(f"mutants: no lab {name} (no {manifest.relative_to(ROOT)})")
  data = json.loads(manifest.read_text())
  solutions = ROOT / "solutions" / Path(data["dir"]).name
  if not solutions.is_dir():
    raise SystemExit(f"mutants: no {solutions.relative_to(ROOT)}: mutation testing checks the reference")
  dirs = {d: json.loads((ROOT / "harness" / "manifests" / f"{d}.json").read_text())["dir"] for d in data["deps"]}
  includes = [f"-I{data['dir']}"] + [f"-I{dirs[d]}" for d in data["deps"]]
  if name == "23.1" or "23.1" in data["deps"]:   # the compiler core stands on 23.1 (labs/core)
    includes.append("-Ilabs/core")
  if name == "23.7":   # lab 23.7's files are tensorjit's: its internal header is in labs/tensorjit
    includes.append("-Ilabs/tensorjit")
  files = sorted(str(p.relative_to(ROOT)) for p in solutions.glob("*.c"))
  handouts = {f: f"{data['dir']}/{Path(f).name}" for f in files if Path(f).name in data.get("student_files", [])}
  return Target(name, files, includes, [LAB_BOUNDS], EQUIVALENTS / f"{name}.equivalents", handouts)


def refused_by_screen(t, m):
  """Whether the grader's screen refuses the mutated file (it changes given code of a student
  file): such a mutant never builds in the grader, so a stratified draw need not run it."""
  handout = ROOT / t.handouts.get(m.file, "-")
  if not handout.is_file():
    return False
  if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
  from harness.grading import screen
  return bool(screen.check_file(t.handouts[m.file], m.text, handout.read_text(encoding="latin-1")))


def strip_comments(text):
  """The C text without comments, each run of white space one blank (strings kept)."""
  out, i, n = [], 0, len(text)
  while i < n:
    c = text[i]
    if c in "\"'":
      j = i + 1
      while j < n and text[j] != c:
        j += 2 if text[j] == "\\" else 1
      out.append(text[i:j + 1])
      i = j + 1
    elif text.startswith("//", i):
      i = text.find("\n", i) if "\n" in text[i:] else n
    elif text.startswith("/*", i):
      end = text.find("*/", i + 2)
      i = n if end < 0 else end + 2
      out.append(" ")
    else:
      out.append(c)
      i += 1
  return " ".join("".join(out).split())


def regions(lines):
  """{line number: student function} for the lines inside `// STUDENT` markers."""
  found, name = {}, ""
  for k, line in enumerate(lines, 1):
    m = BEGIN.match(line)
    if m:
      name = m.group(1)
    elif line.startswith("// END STUDENT"):
      name = ""
    elif name:
      found[k] = name
  return found


DEFINITION = re.compile(r"^[A-Za-z_][^=;#]*")           # a line in column 0 that may begin one
FUNCTION_NAME = re.compile(r"\b(\w+)\s*\((?!\s*\*)")   # the first `name(`, not `(*` of a pointer


def functions(lines):
  """{line number: the function whose definition holds it}. A definition starts at a line in column 0
  with `name(` that is not a declaration (no `;` at its end) and ends at the next line that is `}`
  alone, the layout of every source here; one on a single line has balanced braces."""
  found, name, start = {}, "", 0
  for k, line in enumerate(lines, 1):
    text = line.rstrip()
    if not name:
      m = FUNCTION_NAME.search(text) if DEFINITION.match(text) and not text.endswith(";") else None
      if m and "{" in text and text.count("{") == text.count("}"):
        found[k] = m.group(1)
      elif m:
        name, start = m.group(1), k
    elif text == "}":
      found.update((j, name) for j in range(start, k + 1))
      name = ""
  return found


def generate(path):
  """The mutants of one file, in line order, comment-only and duplicate ones left out. The rules
  skip every line that holds or continues a block comment, so a line's own text, without its
  `//` comment, tells whether a mutant changes code."""
  from universalmutator import mutator
  source = (ROOT / path).read_text().splitlines(keepends=True)
  with contextlib.redirect_stdout(io.StringIO()):
    raw = mutator.mutants_regexp(source, ruleFiles=RULES, ignorePatterns=[], ignoreStringOnly=True)
  seen, out, where, within = set(), [], regions(source), functions(source)
  for line, new, *_ in raw:
    code = strip_comments(new)
    if code == strip_comments(source[line - 1]) or (line, code) in seen:
      continue
    seen.add((line, code))
    text = "".join(source[:line - 1]) + new + "".join(source[line:])
    after = " ".join(l.strip() for l in new.splitlines())
    out.append(Mutant(path, line, source[line - 1].strip(), after, text, where.get(line, ""), within.get(line, "")))
  return out


def universe(t):
  return [m for f in t.mutated for m in generate(f)]


def draw_order(mutants, seed):
  """The mutants in the order a sample takes them: by a hash of the seed and each mutant's text,
  so an edit elsewhere in the file (or in another file) leaves the others' order as it was, and
  a sample stays the sample it was triaged as. Mutants with equal text keep their line order."""
  seen = {}

  def rank(m):   # by the text, not the function, so that draws taken before functions were named stay as drawn
    text = (m.file, m.before, m.after)
    k = seen[text] = seen.get(text, -1) + 1
    return hashlib.sha256(f"{seed}\0{m.file}\0{m.before}\0{m.after}\0{k}".encode()).hexdigest()

  return sorted(mutants, key=rank)


# ---- equivalents -----------------------------------------------------------------------------

ENTRY = re.compile(r"^(\S+?):(\d+): (?:in (\w+)|at file scope): (.*)$")


def load_equivalents(path):
  """{(file, function, 'before -> after'): reason}; an entry is the survivor's line, its reason
  indented below."""
  if not path.is_file():
    return {}
  found, key, lines = {}, None, path.read_text().splitlines()
  for k, line in enumerate(lines, 1):
    if not line.strip() or line.startswith("#"):
      continue
    if line[0].isspace():
      if key is None or found[key]:
        raise SystemExit(f"{path.relative_to(ROOT)}:{k}: a reason must follow its entry, one line")
      found[key] = line.strip()
      continue
    m = ENTRY.match(line)
    if not m:
      raise SystemExit(f"{path.relative_to(ROOT)}:{k}: expected `file:line: in function: before -> after`"
                       " (or `at file scope:`), as a survivor prints")
    key = (m.group(1), m.group(3) or "", m.group(4).strip())
    found[key] = ""
  missing = [f"{f}: {rest}" for (f, _, rest), why in found.items() if not why]
  if missing:
    raise SystemExit(f"{path.relative_to(ROOT)}: no reason for: {missing[0]}")
  return found


# ---- compiling: does the mutant build, and is it other code? ---------------------------------

def compile_object(t, path, text, scratch, variant):
  """The object code of text compiled as path (the build's warnings are errors), or None."""
  src = Path(scratch) / Path(path).name
  src.write_text(text)
  obj = src.with_suffix(".o")
  argv = ["gcc", *CFLAGS, *t.includes, *variant, f"-iquote{ROOT / Path(path).parent}", "-c", str(src), "-o", str(obj)]
  done = subprocess.run(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
  return obj.read_bytes() if done.returncode == 0 else None


class Objects:
  """The reference's object code per file and build variant, compiled once."""

  def __init__(self, t):
    self.t, self.cache, self.lock = t, {}, threading.Lock()

  def reference(self, path, variant, scratch):
    key = (path, tuple(variant))
    with self.lock:
      if key not in self.cache:
        self.cache[key] = compile_object(self.t, path, (ROOT / path).read_text(), scratch, variant)
    return self.cache[key]

  def classify(self, m):
    """'run', 'stillborn' (does not compile) or 'same code' (every build's object is the reference's)."""
    with tempfile.TemporaryDirectory(prefix="uopc-mutant-cc-") as scratch:
      same = True
      for variant in self.t.variants:
        ref = self.reference(m.file, variant, scratch)
        obj = compile_object(self.t, m.file, m.text, scratch, variant)
        if obj is None:
          return "stillborn"
        same = same and obj == ref
    return "same code" if same else "run"


# ---- running a lab mutant: the grader ----------------------------------------------------------

def kill_strays(scratch):
  """Ends the test processes the grader started under scratch (they run in sessions of their own)."""
  for proc in Path("/proc").glob("[0-9]*"):
    try:
      if os.readlink(proc / "cwd").startswith(scratch):
        os.killpg(int(proc.name), signal.SIGKILL)
    except (OSError, ValueError):
      pass


def run_lab_mutant(t, m, slot):
  """('killed', test and verdict) or ('survived', '') or ('stillborn', why), graded by the grader."""
  scratch = tempfile.mkdtemp(prefix=f"uopc-mutant-{t.name}-")
  try:
    sub = Path(scratch) / "submission"
    sub.mkdir()
    for f in t.files:
      (sub / Path(f).name).write_text(m.text if f == m.file else (ROOT / f).read_text())
    experiment = ROOT / Path(t.files[0]).parent / "tests" / "test_my_guard.c"
    if experiment.is_file():   # the reference's experiment test: a mutant is graded, not the test
      (sub / experiment.name).write_text(experiment.read_text())
    argv = [sys.executable, "-m", "harness.grade", t.name, "--submission", str(sub), "--seed", str(GRADE_SEED),
            "--lengths", str(GRADE_LENGTHS), "--output", str(Path(scratch) / "results.json")]
    env = dict(os.environ, TMPDIR=scratch)
    return _watch_grade(argv, env, scratch)
  finally:
    shutil.rmtree(scratch, ignore_errors=True)


def _watch_grade(argv, env, scratch):
  proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          start_new_session=True)
  outcome = None
  for line in proc.stdout:
    if line.startswith("--- BUILD FAILED"):
      outcome = ("stillborn", "the lab did not build")
    m = VERDICT.match(line)
    if m and m.group(2) not in ("PASS", "SKIPPED"):
      outcome = outcome or ("killed", f"{m.group(1)} {m.group(2)}")
    if outcome:
      break
  if outcome:
    os.killpg(proc.pid, signal.SIGKILL)
    kill_strays(scratch)
  status = proc.wait()
  proc.stdout.close()
  if outcome:
    return outcome
  if status == 0:
    return ("survived", "")
  return ("killed", "the grade failed") if status == 1 else ("error", f"the grader exited with {status}")


# ---- running a runtime mutant: its own suites ----------------------------------------------------

class UopcTree:
  """A scratch copy of the runtime and its suites, built once; a mutant is swapped in and out.
  With san, built as `make SAN=1` builds them (AddressSanitizer and UBSan), as CI runs them."""
  PARTS = ("uopc", "tests/uopc", "tests/faults", "Makefile")

  def __init__(self, san=False):
    self.san, self.build = san, "build/labs-san" if san else "build/labs"
    self.root = Path(tempfile.mkdtemp(prefix="uopc-mutant-tree-"))
    # The suites' shared headers (tests/*.h) by pattern, so a new one cannot leave the copy unbuildable.
    headers = [p.relative_to(ROOT).as_posix() for p in sorted((ROOT / "tests").glob("*.h"))]
    for part in (*self.PARTS, *headers):
      src, dst = ROOT / part, self.root / part
      dst.parent.mkdir(parents=True, exist_ok=True)
      shutil.copytree(src, dst) if src.is_dir() else shutil.copy2(src, dst)
    self.built = self.make()

  def make(self):
    done = subprocess.run(["make", "-s", "IMPL=labs", *(["SAN=1"] if self.san else []), "test-build"], cwd=self.root,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return done.returncode == 0

  def binaries(self):
    """Fast suites first, so most mutants die in the first second."""
    found = [p for d in (f"{self.build}/tests/uopc", f"{self.build}/fault")
             for p in sorted((self.root / d).glob("test_*")) if not p.suffix and os.access(p, os.X_OK)]
    slow = {"test_cuda": 2, "test_program": 1, "test_faults": 1}
    return sorted(found, key=lambda p: slow.get(p.name, 0))

  def run(self, m):
    path = self.root / m.file
    path.write_text(m.text)
    try:
      if not self.make():
        return ("stillborn", "the runtime did not build")
      for binary in self.binaries():
        failed = self.run_suite(binary)
        if failed:
          return ("killed", f"{binary.name} {failed}")
      return ("survived", "")
    finally:
      shutil.copy2(ROOT / m.file, path)
      path.touch()

  def run_suite(self, binary):
    """'' when the suite passes, else how it failed."""
    with tempfile.TemporaryDirectory(prefix="uopc-mutant-run-") as run:
      env = dict(os.environ, UOPC_CACHE_DIR=f"{run}/cache", HOME=run, TMPDIR=run)
      try:
        done = subprocess.run([str(binary)], cwd=run, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, errors="replace", timeout=UOPC_TEST_TIMEOUT, start_new_session=True)
      except subprocess.TimeoutExpired:
        kill_strays(run)
        return "TIMEOUT"
    if done.returncode == 0:
      return ""
    failed = re.findall(r"^\[  FAILED  \] (test_\w+)$", done.stdout, re.M)
    if failed:
      return failed[0]
    san = re.search(r"ERROR: (AddressSanitizer: [\w-]+)|(runtime error): ", done.stdout)
    if san:   # the sanitizer ends the suite inside a case: name the case it was running
      running = re.findall(r"^\[ RUN      \] (test_\w+)$", done.stdout[:san.start()], re.M)
      return f"{running[-1] if running else 'a suite'} ({san.group(1) or san.group(2)})"
    return f"exit status {done.returncode}"

  def remove(self):
    shutil.rmtree(self.root, ignore_errors=True)


class LabSanTree(UopcTree):
  """The second opinion on a lab's survivor: the lab's own cmocka suites built from the reference
  with `make SAN=1` (AddressSanitizer and UBSan), as `make SAN=1 test-c` runs them in CI. The
  grader does not run them; a survivor they catch is reported apart, and still counts as one.
  A mutant is swapped in and out as in the runtime's tree; only the copy and the build differ."""

  def __init__(self, t):   # not UopcTree.__init__: the whole tree is copied, and only the lab is built
    self.root = Path(tempfile.mkdtemp(prefix=f"uopc-mutant-san-{t.name}-"))
    tracked = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                             stdout=subprocess.PIPE, check=True).stdout.decode().split("\0")
    for rel in filter(None, tracked):
      src, dst = ROOT / rel, self.root / rel
      if src.is_file():
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)
    suites = sorted((ROOT / "tests" / t.name).glob("test_*.c"))
    self.targets = [f"build/solutions-san/tests/{t.name}/{p.stem}" for p in suites]
    self.built = self.make()

  def make(self):
    done = subprocess.run(["make", "-s", "IMPL=solutions", "SAN=1", *self.targets], cwd=self.root,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return done.returncode == 0

  def binaries(self):
    return [self.root / b for b in self.targets]


def second_opinion(t, tally):
  """Each survivor run again through the suites built with AddressSanitizer: a read one past a
  heap block, or a global array's padding, changes no value the plain build's tests see. For
  the runtime those suites are its own tests (CI runs them): a survivor they catch is killed. For
  a lab they are not the grader: it stays a survivor, marked as what only the sanitizer sees."""
  if not tally.survived:
    return
  print(f"  the {len(tally.survived)} survivor(s) again, built with AddressSanitizer (make SAN=1):", flush=True)
  tree = UopcTree(san=True) if t.name == "uopc" else LabSanTree(t)
  try:
    if not tree.built:
      tally.errors.append("the AddressSanitizer build of the reference failed; survivors not rechecked")
      return
    for m in list(tally.survived):
      what, why = tree.run(m)
      if what != "killed":
        continue
      tally.sanitizer.append((m, why))
      if t.name == "uopc":
        tally.survived.remove(m)
        tally.killed.append(m)
      print(f"        caught under AddressSanitizer: {m.file}:{m.line} by {why}", flush=True)
  finally:
    tree.remove()


# ---- the run -------------------------------------------------------------------------------

@dataclass
class Tally:
  killed: list = field(default_factory=list)
  survived: list = field(default_factory=list)
  equivalent: list = field(default_factory=list)     # (mutant, reason): listed in the equivalents file
  same_code: int = 0
  stillborn: int = 0
  screened: int = 0    # of stillborn: refused by the grader's screen (given code), never run
  errors: list = field(default_factory=list)
  sanitizer: list = field(default_factory=list)   # (mutant, suite and case): caught only by the SAN=1 suites

  @property
  def counted(self):
    return len(self.killed) + len(self.survived)


def pick(t, mutants, sample, jobs, objects, equivalents, tally, screened=False):
  """The first `sample` mutants of the shuffled list that compile to other code and are not listed
  as equivalent (all of them when sample is 0); with screened, also that the grader's screen takes
  (the others count as not built, unrun)."""
  chosen, k = [], 0
  with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
    while k < len(mutants) and (not sample or len(chosen) < sample):
      batch = mutants[k:k + max(jobs * 4, sample - len(chosen)) if sample else len(mutants)]
      k += len(batch)
      classify = (lambda m: "screened" if refused_by_screen(t, m) else objects.classify(m)) if screened \
        else objects.classify
      for m, kind in zip(batch, pool.map(classify, batch)):
        if sample and len(chosen) == sample:
          break
        if kind in ("stillborn", "screened"):
          tally.stillborn += 1
          tally.screened += kind == "screened"
        elif kind == "same code":
          tally.same_code += 1
        elif m.key in equivalents:
          tally.equivalent.append((m, equivalents[m.key]))
        else:
          chosen.append(m)
  return chosen


def run_all(t, chosen, jobs, tally):
  slots = [UopcTree() for _ in range(jobs)] if t.name == "uopc" else [None] * jobs
  if any(s is not None and not s.built for s in slots):
    raise SystemExit("mutants: the runtime's scratch copy did not build unchanged")
  free, lock, done = list(slots), threading.Lock(), [0]

  def one(m):
    with lock:
      slot = free.pop()
    try:
      return m, (slot.run(m) if slot else run_lab_mutant(t, m, slot))
    finally:
      with lock:
        free.append(slot)

  try:
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
      for m, (what, why) in pool.map(one, chosen):
        done[0] += 1
        record(tally, m, what, why, done[0], len(chosen))
  finally:
    for s in slots:
      if s is not None:
        s.remove()


def record(tally, m, what, why, k, n):
  where = f" [{m.region}]" if m.region else ""
  if what == "killed":
    tally.killed.append(m)
    print(f"  [{k:>3}/{n}] killed   {m.file}:{m.line} by {why}", flush=True)
  elif what == "survived":
    tally.survived.append(m)
    print(f"  [{k:>3}/{n}] SURVIVED {m.label}{where}", flush=True)
  elif what == "stillborn":
    tally.stillborn += 1
    print(f"  [{k:>3}/{n}] did not build: {m.label} ({why})", flush=True)
  else:
    tally.errors.append(f"{m.label}: {why}")
    print(f"  [{k:>3}/{n}] ERROR    {m.label}: {why}", flush=True)


def stale_entries(equivalents, mutants):
  keys = {m.key for m in mutants}
  return [f"{f}: {'in ' + fn if fn else 'at file scope'}: {rest}" for (f, fn, rest) in equivalents
          if (f, fn, rest) not in keys]


def file_counts(t, tally):
  """[(file, killed, counted, listed equivalent)] for every file the run drew a mutant of."""
  out = []
  for f in t.files:
    k = sum(m.file == f for m in tally.killed)
    s = sum(m.file == f for m in tally.survived)
    e = sum(m.file == f for m, _ in tally.equivalent)
    if k + s + e:
      out.append((f, k, k + s, e))
  return out


def per_file(t, tally):
  rows = []
  for f, k, n, _ in file_counts(t, tally):
    if n:
      rows.append(f"    {f:<58} {k:>4} of {n:<4} killed ({100 * k / n:.0f} %)")
  return rows


def under_bar(t, tally, bar):
  """A line per file whose ratio killed / (counted: drawn, not listed equivalent) is below bar %
  (issue #15's bar holds for every solution file); a file with none counted is named too."""
  lines = []
  for f, k, n, e in file_counts(t, tally):
    if not n:
      lines.append(f"  no mutant of {f} counted ({e} drawn, all listed equivalent)")
    elif 100 * k / n < bar:
      lines.append(f"  UNDER THE BAR ({bar:g} % per file): {f}: {k} of {n} killed ({100 * k / n:.1f} %),"
                   f" {e} listed equivalent")
  return lines


def report(t, tally, stale, args, total):
  ratio = 100 * len(tally.killed) / tally.counted if tally.counted else 100.0
  print()
  print("\n".join(per_file(t, tally)))
  if tally.equivalent:
    print(f"  listed as equivalent in {t.equivalents.relative_to(ROOT)}:")
    print("\n".join(f"    {m.label}\n        {why}" for m, why in tally.equivalent))
  seen = {m.key: why for m, why in tally.sanitizer}
  if tally.sanitizer and t.name == "uopc":
    print("  killed only by the suites built with AddressSanitizer (make SAN=1 test-c, which CI runs):")
    print("\n".join(f"    {m.label}\n        by {why}" for m, why in tally.sanitizer))
  if tally.survived:
    print("  survivors:")
    print("\n".join(f"    {m.label}" + (f"   [{m.region}]" if m.region else "")
                    + (f"\n        caught only by AddressSanitizer ({seen[m.key]}): the grader does not run it"
                       if m.key in seen else "") for m in tally.survived))
  for line in under_bar(t, tally, args.bar):
    print(line)
  for line in stale:
    print(f"  STALE entry of {t.equivalents.relative_to(ROOT)} (it matches no mutant now): {line}")
  for line in tally.errors:
    print(f"  ERROR {line}")
  print(f"mutants {t.name}: {len(tally.killed)} of {tally.counted} killed ({ratio:.1f} %); sample {sample_text(args)}"
        f" of {total} mutants, seed {args.seed}; {len(tally.equivalent)} listed equivalent, {tally.same_code} compiled"
        f" to the reference's code, {tally.stillborn} did not build"
        + (f" ({tally.screened} of them change given code, which the grader's screen refuses: not run)"
           if tally.screened else "")
        + (f"; {len(tally.sanitizer)} {'killed' if t.name == 'uopc' else 'of the survivors caught'} only under"
           " AddressSanitizer" if tally.sanitizer else ""))
  return 1 if (args.min is not None and ratio < args.min) or stale or tally.errors else 0


def sample_text(args):
  return f"{args.per_file} per file" if args.per_file else f"{args.sample or 'all'}"


def parse_args(argv):
  ap = argparse.ArgumentParser(prog="tools/mutants.py", description="Mutation testing of the reference.")
  ap.add_argument("target", help="a lab (23.1) or uopc")
  ap.add_argument("--sample", type=int, default=40, help="mutants to run (0: every one; default 40)")
  ap.add_argument("--per-file", type=int, metavar="N", help="a stratified draw: the first N mutants of each file"
                  " in the seed's order (instead of --sample), so every file's ratio is measured")
  ap.add_argument("--bar", type=float, default=90, help="name each file whose ratio is below this percent"
                  " (default 90, issue #15's bar; reported only, --min sets the exit status)")
  ap.add_argument("--files", metavar="A.c,B.c", help="mutate only these files of the target (names, comma-separated):"
                  " a deeper draw of the files a stratified one left below the bar")
  ap.add_argument("--no-sanitizer", action="store_true", help="do not run the survivors again through the suites"
                  " built with AddressSanitizer (SAN=1)")
  ap.add_argument("--seed", type=int, default=15, help="the shuffle's seed (default 15)")
  ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="mutants run at once (default: the cores)")
  ap.add_argument("--min", type=float, help="exit 1 when fewer than this percent are killed")
  ap.add_argument("--recheck", type=Path, help="run only the mutants listed in this file, one `file:line: before"
                  " -> after` a line as this tool prints survivors (after a test was strengthened)")
  args = ap.parse_args(argv)
  if args.per_file is not None and args.per_file < 1:
    ap.error("--per-file takes a count of 1 or more")
  return args


def only(t, names):
  """The target restricted to the named files (by file name, as a survivor line shows them)."""
  wanted = [n.strip() for n in names.split(",") if n.strip()]
  unknown = [n for n in wanted if n not in {Path(f).name for f in t.files}]
  if unknown:
    raise SystemExit(f"mutants: {t.name} has no file {', '.join(unknown)}"
                     f" (its files: {', '.join(Path(f).name for f in t.files)})")
  t.mutated = [f for f in t.files if Path(f).name in wanted]
  return t


def recheck(path, mutants):
  """The mutants a file lists (survivor lines as printed; a trailing [region] is ignored)."""
  by_key = {}
  for m in mutants:
    by_key.setdefault(m.key, []).append(m)
  chosen = []
  for line in path.read_text().splitlines():
    m = ENTRY.match(re.sub(r"\s+\[\w+\]$", "", line.strip()))
    if not m:
      continue
    same = by_key.get((m.group(1), m.group(3) or "", m.group(4).strip()))
    if not same:
      raise SystemExit(f"mutants: {path}: no such mutant now: {line.strip()}")
    chosen.append(min(same, key=lambda x: abs(x.line - int(m.group(2)))))   # the nearest of equal lines
  return chosen


def main(argv=None):
  args = parse_args(argv)
  t = target(args.target)
  if args.files:
    t = only(t, args.files)
  try:
    import universalmutator  # noqa: F401
  except ImportError:
    print("mutants: universalmutator is missing: .venv/bin/pip install -r tools/requirements.txt (make mutants does: tools/setup.sh --mutants)")
    return 2
  equivalents = load_equivalents(t.equivalents)
  everything = universe(t)
  mutants, total = list(everything), len(everything)
  if args.recheck:
    mutants = recheck(args.recheck, mutants)
    args.sample, args.per_file = len(mutants), None
  print(f"mutants {t.name}: {total} mutants of {len(t.mutated)} files; sample {sample_text(args)},"
        f" seed {args.seed}, {args.jobs} at a time", flush=True)
  mutants = draw_order(mutants, args.seed)
  tally, objects = Tally(), Objects(t)
  if args.per_file:   # the same order restricted to each file: a file's draw does not depend on the others
    chosen = [m for f in t.mutated
              for m in pick(t, [m for m in mutants if m.file == f], args.per_file, args.jobs, objects, equivalents, tally,
                                screened=True)]
  else:
    chosen = pick(t, mutants, args.sample, args.jobs, objects, equivalents, tally)
  run_all(t, chosen, args.jobs, tally)
  if not args.no_sanitizer:
    second_opinion(t, tally)
  mine = [e for e in equivalents if e[0] in t.mutated]   # with --files, the other files' entries are not judged
  return report(t, tally, stale_entries(mine, everything), args, total)


if __name__ == "__main__":
  sys.exit(main())
