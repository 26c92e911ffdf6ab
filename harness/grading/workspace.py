"""workspace.py: builds one lab of a submission in a scratch copy of the instructor's tree.

Two builds, two kinds of trust:

  TrustedBuild  in the grader's own tree, of what no student wrote: the runtime (libuopc.so), the
                grade hook (libgradehook.so), the given objects of every lab and of the compiler
                core (labs/core, linked in the scratch tree on that tree's lab 23.1), the reference
                libraries of solutions/ (in a handout, which has no solutions/: those it ships
                built, in reference/lib) and the held-out suites as objects. The project Makefile
                does it (make -f Makefile -f harness/grading/grade.mk), once per grade.
  Workspace     a scratch tree per lab: the instructor's headers, drivers, public suites and
                Makefile, the lab's student files from the submission (intake.py: regular files
                of the manifest's names only), and the trusted build's products copied in. The
                earlier stages a lab links are the reference's libraries (or, with own_stages or
                in a tree with neither solutions/ nor reference/lib, built from the submission),
                so one broken stage cannot zero the next. Held-out suites and the reference enter
                only as objects.

The scratch build runs in the sandbox as the sandbox user: the tree read-only, only build/
writable; make's -o keeps the trusted products as they are. Tests then see the tree read-only,
each suite seeing only its own binary of build/labs/tests/ (so a visible test cannot read a
held-out suite's binary), by a name drawn for the grade (run_name: nothing says held out).
"""
import fcntl
import os
import re
import secrets
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from harness.grading import intake, sandbox, screen
from harness.grading.manifest import ROOT

BUILD = "build/labs"
GRADE_MK = "harness/grading/grade.mk"
HOOK = f"{BUILD}/grade/libgradehook.so"
GUARDED_RUNTIME = f"{BUILD}/guarded/libuopc.so"   # each storage before a PROT_NONE page (the Makefile's GUARDED)
MAKE_TIMEOUT = 300
DIAGNOSTIC_LINES = 40
# What a check's worker imports (lab 23.7's: tensorjit's bindings, harness/tj_ffi.py).
WORKER_FILES = ("harness/__init__.py", "harness/ffi.py", "harness/common.py", "harness/remote.py", "harness/tj_ffi.py")


@dataclass
class Build:
  """A built scratch copy: which targets exist, and the compiler's diagnostics."""
  root: Path
  ok: bool                      # the lab's library was built
  log: str
  missing: list = field(default_factory=list)   # targets that did not build
  notes: list = field(default_factory=list)     # where each stage's student files came from

  def built(self, rel):
    return (self.root / rel).exists()


def suite_name(suite):
  """A suite's binary name: test_x, or hidden_test_x for tests/hidden/."""
  return ("hidden_" if "/hidden/" in suite else "") + Path(suite).stem


def suite_target(suite, lab):
  return f"{BUILD}/tests/{lab}/{suite_name(suite)}"


def driver_target(lab):
  return f"{BUILD}/bin/lab-{lab}"


EXPERIMENT_NAME = "test_my_guard.c"    # a lab's experiment test (manifest kind "experiment")
GUARDS = "tests/student/guards.txt"   # the guards make break can remove (the Makefile reads it)


def experiment_target(lab):
  """The student's experiment test, linked with the lab as built."""
  return f"{BUILD}/tests/student/{lab}/{Path(EXPERIMENT_NAME).stem}"


def break_lib(lab, guard):
  """The lab's library without one guard (the Makefile's break rules)."""
  return f"{BUILD}/break/{lab}-{guard}/{lib_name(lab)}"


def experiment_tests(m):
  return [t for t in m.tests if t.kind == "experiment"]


# Lab 23.7's student files are part of a stage with a folder of given code of its own:
# tensorjit (labs/tensorjit, the Makefile's stage tj), whose library its driver and suites link.
STAGE_LIBS = {"23.7": "libtensorjit.so"}
GIVEN_DIRS = {"23.7": "labs/tensorjit"}


def lib_name(lab):
  return STAGE_LIBS.get(lab, f"liblab{lab.replace('.', '_')}.so")


def lab_lib(lab, build=BUILD):
  """The library a lab's driver and suites link first."""
  return f"{build}/lib/{lib_name(lab)}"


# The compiler core (labs/core: given code, no student file) stands on lab 23.1's symbols and
# loops, its own library below the core (the Makefile's stages sym, core, then 23.1's plans).
CORE_DIR = "labs/core"
CORE_LAB = "23.1"


def lab_libs(lab, build=BUILD):
  """Every library built from a lab's files: lab 23.1 has two, its symbols below the core and
  its plans above it."""
  below = [f"{build}/lib/liblab23_1_sym.so"] if lab == CORE_LAB else []
  return below + [lab_lib(lab, build)]


def links_core(m):
  """Whether the lab links the compiler core: every lab on lab 23.1 does."""
  return m.lab == CORE_LAB or CORE_LAB in m.deps


def core_files():
  return sorted(p.name for p in (ROOT / CORE_DIR).glob("*.c"))


def core_objects():
  return [f"{BUILD}/obj/{CORE_DIR}/{name[:-2]}.o" for name in core_files()]


def given_files(m):
  """The .c files of the lab's stage that are neither student files nor its driver, as paths
  from the tree's root: its folder's, and those of its stage's given folder (GIVEN_DIRS)."""
  own = sorted(f"{m.lab_dir}/{p.name}" for p in (ROOT / m.lab_dir).glob("*.c")
               if p.name != "main.c" and p.name not in m.student_files)
  given = GIVEN_DIRS.get(m.lab)
  return own + (sorted(f"{given}/{p.name}" for p in (ROOT / given).glob("*.c")) if given else [])


def given_object(path):
  return f"{BUILD}/obj/{path[:-2]}.o"


def unit_target(path):
  """The preprocessed translation unit of a .c file (grade.mk; screen.check_unit reads it)."""
  return f"{BUILD}/tu/{path[:-2]}.i"


def has_solutions(m):
  return (ROOT / "solutions" / Path(m.lab_dir).name).is_dir()


# A handout's reference: the libraries of the stages a later lab links, built (tools/handout.sh).
SHIPPED = "reference/lib"


def reference_libs(m):
  """[(a library of the lab in a scratch build, the reference's copy of it)]: build/solutions'
  (made by the trusted build) where solutions/ has the lab, else those a handout ships."""
  if has_solutions(m):
    return [(lib, ROOT / ref) for lib, ref in zip(lab_libs(m.lab), lab_libs(m.lab, "build/solutions"))]
  return [(lib, ROOT / SHIPPED / Path(lib).name) for lib in lab_libs(m.lab) if (ROOT / SHIPPED / Path(lib).name).is_file()]


# ---- the grader's own build ---------------------------------------------------------------------

class TrustedBuild:
  """The products of the grader's tree a scratch copy needs; made once per grader process."""
  _made = {}

  @classmethod
  def ensure(cls, manifests):
    """{relative path in a scratch build: absolute path} of every trusted product, or raises
    RuntimeError with make's output."""
    key = tuple(sorted(manifests))
    if key not in cls._made:
      cls._made[key] = cls._build(manifests)
    return cls._made[key]

  @classmethod
  def _build(cls, manifests):
    # (the runtime a graded run loads is the guard-page build: the Makefile's GUARDED)
    labs = [f"{BUILD}/lib/libuopc.so", GUARDED_RUNTIME, HOOK]
    refs, products = [], {f"{BUILD}/lib/libuopc.so": ROOT / GUARDED_RUNTIME,
                          f"{BUILD}/lib/libgradehook.so": ROOT / HOOK}
    if any(links_core(m) for m in manifests.values()):
      for obj in core_objects():
        labs.append(obj)
        products[obj] = ROOT / obj
    for lab, m in manifests.items():
      for name in given_files(m):
        obj = given_object(name)
        labs.append(obj)
        products[obj] = ROOT / obj
      for name in m.student_files:   # the handout's files: what their given code may hold (screen.py)
        if (ROOT / m.lab_dir / name).is_file():
          labs.append(unit_target(f"{m.lab_dir}/{name}"))
          products[f"handout/{labs[-1]}"] = ROOT / labs[-1]
      for t in m.tests:
        suite = t.spec.get("suite", "")
        if t.kind == "cmocka" and "/hidden/" in suite and (ROOT / suite).is_file():
          obj = f"{BUILD}/grade/hidden/{lab}/{Path(suite).stem}.o"
          labs.append(obj)
          products[f"hidden/{lab}/{Path(suite).stem}.o"] = ROOT / obj
      for lib, ref in reference_libs(m):
        if has_solutions(m):
          refs.append(str(ref.relative_to(ROOT)))
        products[f"reference/{lib}"] = ref
    ROOT.joinpath("build").mkdir(exist_ok=True)
    with open(ROOT / "build" / ".grade-lock", "w") as lock:
      fcntl.flock(lock, fcntl.LOCK_EX)     # grades run side by side (--jobs) build this once
      for impl, targets in (("labs", sorted(set(labs))), ("solutions", refs)):
        if targets:
          done = subprocess.run(["make", "-s", "-f", "Makefile", "-f", GRADE_MK, f"-j{os.cpu_count() or 2}",
                                 f"IMPL={impl}"] + targets, cwd=ROOT, capture_output=True, text=True)
          if done.returncode != 0:
            raise RuntimeError(f"the grader's own build (IMPL={impl}) failed:\n{done.stdout}{done.stderr}")
    return products


# ---- one lab's scratch copy ---------------------------------------------------------------------

class Workspace:
  """The scratch copy for one lab; remove() deletes it."""

  def __init__(self, manifest, manifests, submission, impl, own_stages, user=None, screen="all"):
    self.m, self.manifests, self.screen = manifest, manifests, screen
    self.submission = Path(submission) if submission else None
    self.impl, self.own_stages, self.user = impl, own_stages, user
    # 0700: ours alone. A neutral name: student code that reads its paths (its binary, its working
    # directory, HOME, UOPC_CACHE_DIR) finds nothing saying it is graded (issue #32, class 4).
    self.top = Path(tempfile.mkdtemp(prefix="uopc-"))
    self.root = self.top / "tree"
    self.hidden = self.top / "hidden"
    self.notes, self.kept = [], []      # kept: trusted products make must not remake
    self.screened = []                  # the labs built here from student files
    self.units = []                     # (path, text, handout's text, handout's unit) of each one placed
    self.experiment = ""                # why the experiment test is not in the tree ("": it is)
    self.run_names = {}                 # a suite's binary: the name its tests run it by (run_name)
    if not sandbox.jail().bwrap and sandbox.sandbox_user(user):
      os.chmod(self.top, 0o711)         # the fallback's --run-as user must reach the tree

  def remove(self):
    shutil.rmtree(self.top, ignore_errors=True)

  def rundir(self):
    """A fresh run directory beside the tree (not inside it: the tree is read-only to tests)."""
    return sandbox.RunDir(self.user, parent=str(self.top))

  def prepare(self):
    """Makes the tree; returns the problems found (a student file missing or refused)."""
    products = TrustedBuild.ensure(self.manifests)
    self.root.mkdir(mode=0o755)
    self.hidden.mkdir(mode=0o755)
    for rel in ("Makefile", GRADE_MK) + WORKER_FILES:
      _copy(ROOT / rel, self.root / rel)
    _copy(ROOT / "harness" / f"check_{self.m.lab.replace('.', '_')}.py",
          self.root / "harness" / f"check_{self.m.lab.replace('.', '_')}.py", missing_ok=True)
    shutil.copytree(ROOT / "uopc" / "include", self.root / "uopc" / "include")
    (self.root / "tests" / self.m.lab).mkdir(parents=True, exist_ok=True)
    for suite in sorted({t.spec["suite"] for t in self.m.tests if t.kind == "cmocka"}):
      if "/hidden/" not in suite and (ROOT / suite).is_file():
        _copy(ROOT / suite, self.root / "tests" / self.m.lab / Path(suite).name)
    suites = [ROOT / t.spec["suite"] for t in self.m.tests if t.spec.get("suite")]
    for header in test_headers(p for p in suites if p.is_file()):   # testutil.h, semantics_digest.h, ...
      _copy(header, self.root / header.relative_to(ROOT))
    self._place(products, f"{BUILD}/lib/libuopc.so")
    self._place(products, f"{BUILD}/lib/libgradehook.so")
    for rel, src in products.items():
      if rel.startswith(f"hidden/{self.m.lab}/"):
        _copy(src, self.top / rel)
    if links_core(self.m):
      self._core(products)
    problems = []
    for lab in self.m.deps + [self.m.lab]:
      problems += self._stage(self.manifests[lab], lab == self.m.lab, products)
    if experiment_tests(self.m):
      self.experiment = self._experiment_test()
    self._hand_build_to_sandbox()
    return problems

  def _experiment_test(self):
    """Places the student's experiment test at tests/student/<lab>/ of the tree; returns why it
    could not ("" when it did). A missing test costs the experiment's points, never the lab's."""
    _copy(ROOT / GUARDS, self.root / GUARDS)
    lab_name = Path(self.m.lab_dir).name
    if self.impl == "solutions":
      got, where = intake.read_files(ROOT / "solutions", lab_name, [EXPERIMENT_NAME],
                                     where=("{lab_dir}/tests/{name}",)), "solutions/"
    elif self.submission is None:
      got, where = intake.read_files(ROOT, lab_name, [EXPERIMENT_NAME],
                                     where=("tests/student/{lab}/{name}",)), "this tree"
    else:
      got, where = intake.read_files(self.submission, lab_name, [EXPERIMENT_NAME], self.user,
                                     intake.TEST_WHERE), str(self.submission)
    if EXPERIMENT_NAME not in got.files:
      return "; ".join(got.refused) or f"tests/student/{self.m.lab}/{EXPERIMENT_NAME} is missing from {where}"
    dst = self.root / "tests" / "student" / self.m.lab / EXPERIMENT_NAME
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_bytes(got.files[EXPERIMENT_NAME])
    return ""

  def _core(self, products):
    """The compiler core: its folder (headers and given source) and its objects from the trusted
    build; the scratch build links libcore.so from them against the tree's lab 23.1."""
    shutil.copytree(ROOT / CORE_DIR, self.root / CORE_DIR, dirs_exist_ok=True)
    for obj in core_objects():
      self._place(products, obj)

  def _place(self, products, rel, src_key=None):
    _copy(products[src_key or rel], self.root / rel)
    self.kept.append(rel)

  def _stage(self, m, graded, products):
    """One stage of the tree: the reference's library and the lab's headers, or the lab's folder
    with its student files from their source and its given objects from the trusted build."""
    references = [lib for lib in lab_libs(m.lab) if f"reference/{lib}" in products]
    if not graded and not self.own_stages and references:
      where = "solutions/, as built by the grader" if has_solutions(m) else f"{SHIPPED}, shipped with the handout"
      self.notes.append(f"lab {m.lab}: the reference's library ({where})")
      for folder in [m.lab_dir] + ([GIVEN_DIRS[m.lab]] if m.lab in GIVEN_DIRS else []):
        for h in (ROOT / folder).glob("*.h"):
          _copy(h, self.root / folder / h.name)
      for lib in references:
        self._place(products, lib, f"reference/{lib}")
      return []
    shutil.copytree(ROOT / m.lab_dir, self.root / m.lab_dir, dirs_exist_ok=True)
    if m.lab in GIVEN_DIRS:
      shutil.copytree(ROOT / GIVEN_DIRS[m.lab], self.root / GIVEN_DIRS[m.lab], dirs_exist_ok=True)
    for name in given_files(m):
      self._place(products, given_object(name))
    got, where = self._read(m, graded)
    self.notes.append(f"lab {m.lab}: student files from {where}")
    self.screened.append(m.lab)
    problems = list(got.refused)
    for name in m.student_files:
      dst = self.root / m.lab_dir / name
      handout = ROOT / m.lab_dir / name
      refused = screen.check_file(f"{m.lab_dir}/{name}", got.files[name].decode("latin-1"),
                                  handout.read_text(encoding="latin-1")) \
        if name in got.files and handout.is_file() and self.screen == "all" else []
      problems += [f"refused {r}" for r in refused]
      if refused and self.impl == "solutions":   # the reference is screened against labs/'s copy
        problems.append(f"  (IMPL=solutions screens solutions/{Path(m.lab_dir).name}/{name} against "
                        f"{m.lab_dir}/{name}, which you changed outside its function bodies: `make check-sync` "
                        f"shows where; undo that part there (your bodies can stay), then run IMPL=solutions again)")
      if name in got.files and not refused:
        dst.write_bytes(got.files[name])
        handout_unit = products.get(f"handout/{unit_target(f'{m.lab_dir}/{name}')}")
        if self.screen == "all" and handout_unit:
          self.units.append((f"{m.lab_dir}/{name}", got.files[name].decode("latin-1"),
                             handout.read_text(encoding="latin-1"), handout_unit))
      else:
        dst.unlink(missing_ok=True)
        if name not in got.files and not any(name in r for r in got.refused):
          problems.append(f"{m.lab_dir}/{name} is missing from {where}")
    return problems

  def _read(self, m, graded):
    """(Intake, where) of a stage's student files."""
    lab_name = Path(m.lab_dir).name
    if self.impl == "solutions" or (not graded and not self.own_stages and has_solutions(m)):
      return intake.read_files(ROOT / "solutions", lab_name, m.student_files), "solutions/"
    if self.submission is None:
      return intake.read_files(ROOT / "labs", lab_name, m.student_files), "labs/ (this tree)"
    return intake.read_files(self.submission, lab_name, m.student_files, self.user), str(self.submission)

  def _hand_build_to_sandbox(self):
    """build/ belongs to the sandbox user, so that the sandboxed make can write there; the rest
    of the tree stays the grader's (and read-only to every sandbox)."""
    who = sandbox.sandbox_user(self.user)
    self.root.joinpath(BUILD).mkdir(parents=True, exist_ok=True)
    if who:
      for path in [self.root / "build"] + list((self.root / "build").rglob("*")):
        if path.is_dir():
          os.chown(path, who.pw_uid, who.pw_gid)

  def run_name(self, binary):
    """The path (relative to the tree) a suite's tests run binary by: a hard link beside it, named
    test_<12 hex digits> drawn for this grade, one pattern for a visible suite and a held-out one,
    so that neither argv[0], /proc/self/exe nor a mount point tells student code which suite runs
    or that it is held out (issue #32, class 4). The built name stays hidden (mounts())."""
    if binary not in self.run_names:
      src = self.root / binary
      dst = src.with_name(f"test_{secrets.token_hex(6)}")
      try:
        os.link(src, dst)
      except OSError:   # a tree where links are refused: a copy is as good
        shutil.copy2(src, dst)
      self.run_names[binary] = str(Path(binary).with_name(dst.name))
    return self.run_names[binary]

  def mounts(self, binary=None, broken=None):
    """What a test sees: the tree read-only, and of the suites only its own binary. broken (an
    experiment's library without one guard) is seen in place of the lab's own library, at the
    same path, and the other broken builds not at all: the test cannot tell the two runs apart
    by a path, only by what the library does."""
    tests, breaks = str(self.root / BUILD / "tests"), str(self.root / BUILD / "break")
    os.makedirs(tests, exist_ok=True)
    os.makedirs(breaks, exist_ok=True)
    over = [(str(self.root / broken), str(self.root / lab_lib(self.m.lab)))] if broken else []
    return sandbox.Mounts(ro=[str(self.root)], hide=[tests, breaks],
                          show=[str(self.root / binary)] if binary and "/tests/" in binary else [], over=over)

  def build(self, targets):
    """Runs make for the lab's library and the targets in the sandbox (-k: a failed target costs
    only the tests that need it). Returns a Build."""
    lib = lab_lib(self.m.lab)
    argv = ["make", "-k", "-s", "-f", "Makefile", "-f", GRADE_MK, f"-j{os.cpu_count() or 2}", "IMPL=labs",
            "GRADE_SCRATCH=1", f"GRADE_HIDDEN={self.hidden}"] + [f"-o{k}" for k in self.kept] \
           + [unit_target(path) for path, *_ in self.units] + [lib] + targets
    rundir = self.rundir()
    try:
      script = f"cd {shlex.quote(str(self.root))} && exec {shlex.join(argv)} 2>&1"
      mounts = sandbox.Mounts(ro=[str(self.root), str(self.hidden)], rw=[str(self.root / "build")])
      out = sandbox.run(["bash", "-c", script], rundir, rundir.env(), MAKE_TIMEOUT, user=self.user, mounts=mounts)
    finally:
      rundir.close()
    log = out.stdout + out.stderr
    if out.timed_out:
      log += f"\n(the build ran past {sandbox.limit_text(MAKE_TIMEOUT)} and was stopped)"
    missing = [t for t in [lib] + targets if not (self.root / t).exists()]
    return Build(self.root, lib not in missing, _diagnostics(log, self.root), missing, self.notes)


  def screen_units(self):
    """Refusals for the student files' translation units, preprocessed by the build in the
    sandbox (screen.check_unit). A unit that is not there is refused: unscreened, its object must
    not count (a file that does not preprocess does not compile either: the diagnostics say why)."""
    refusals = []
    for path, text, handout, handout_unit in self.units:
      unit = self.root / unit_target(path)
      try:
        fd = os.open(unit, os.O_RDONLY | os.O_NOFOLLOW)
      except OSError as e:
        refusals.append(f"refused {path}: the build did not preprocess it ({e.strerror}), so the screen "
                        f"could not read what the compiler sees")
        continue
      with os.fdopen(fd, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size > screen.UNIT_MAX_BYTES:
          refusals.append(f"refused {path}: preprocessed, it is {size} bytes, over the screen's limit of "
                          f"{screen.UNIT_MAX_BYTES} (a macro that expands without end?)")
          continue
        got = f.read().decode("latin-1")
      refusals += [f"refused {r}" for r in screen.check_unit(path, path, got, Path(handout_unit).read_text(
        encoding="latin-1"), screen.student_lines(text, handout))]
    return refusals

  def screen_libraries(self, build):
    """Refusals for the libraries built here from student files (screen.check_library)."""
    def tool(argv):
      rundir = self.rundir()
      try:
        return sandbox.run(argv, rundir, rundir.env(), 60, user=self.user, mounts=self.mounts()).stdout
      finally:
        rundir.close()
    trusted = [ROOT / GUARDED_RUNTIME, ROOT / HOOK] + \
              [ref for d in self.m.deps if d not in self.screened
               for _, ref in reference_libs(self.manifests[d]) if ref.is_file()] + \
              ([ROOT / obj for obj in core_objects()] if links_core(self.m) else [])
    refusals = []
    for lab in self.screened:
      m = self.manifests[lab]
      references = dict(reference_libs(m))
      for rel in lab_libs(lab):
        lib, reference = self.root / rel, references.get(rel)
        if not lib.is_file():
          continue
        allowed = screen.symbols(reference, "undefined") if reference and reference.is_file() else set()
        for name in given_files(m):
          allowed |= screen.symbols(ROOT / given_object(name), "undefined")
        refusals += [f"refused {rel}: {r}" for r in screen.check_library(lib, trusted, allowed, tool)]
    return refusals


INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def test_headers(sources):
  """The headers under tests/ (never tests/hidden/) that sources include, directly or through
  another (a suite compiles with -Itests, and a quoted include also looks beside its file),
  sorted: what a scratch copy needs of them."""
  found, todo = set(), list(sources)
  while todo:
    src = todo.pop()
    for name in INCLUDE.findall(src.read_text()):
      for where in (src.parent / name, ROOT / "tests" / name):
        where = where.resolve()
        if where.is_file() and where.is_relative_to(ROOT / "tests") and where not in found \
           and not where.is_relative_to(ROOT / "tests" / "hidden"):   # never a held-out file
          found.add(where)
          todo.append(where)
          break
  return sorted(found)


def _copy(src, dst, missing_ok=False):
  if missing_ok and not src.exists():
    return
  dst.parent.mkdir(parents=True, exist_ok=True)
  shutil.copy2(src, dst)


def _diagnostics(log, root):
  """gcc's diagnostics with the scratch path removed, at most DIAGNOSTIC_LINES lines."""
  lines = [l.replace(str(root) + "/", "") for l in log.splitlines()
           if not l.startswith(("make: ***", "make[", "make: Target")) and "Waiting for unfinished jobs" not in l]
  if len(lines) > DIAGNOSTIC_LINES:
    lines = lines[:DIAGNOSTIC_LINES] + [f"... {len(lines) - DIAGNOSTIC_LINES} more lines"]
  return "\n".join(lines)
