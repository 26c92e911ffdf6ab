"""test_adversarial.py: submissions that try to key on the grade, fool its compile count or read the
held-out tests, hide what the source screen refuses in a system header's macro, graded end to end
on lab 23.1 (issue #32, classes 1 and 3 to 5); and shortcuts that a test used to pass (class 6),
on labs 23.1 and 23.5.

    .venv/bin/python -m unittest tests.grader.test_adversarial

Each submission is the reference's lab 23.1 (the attacks need code that works) or labs/' stubs, with
C code added to sym_dim.c, graded with the source screen off (it refuses constructors outright), so
that what it meets is the layer under test (class 1's, with every screen on: the screen is its
layer). The points asserted are exact, and each test fails when its defence is taken away:

  macros   (class 1) static helpers whose text the text screen passes, each a system header's macro:
           glibc's __REDIRECT (an asm label: a call to shell() reaches system()), glibc's __CONCAT
           (a call to uopc_counter_add, which the text never spells and the reference's library
           imports too), <cpuid.h>'s __cpuid (inline assembly) and libgpg-error's
           _GPG_ERR_CONSTRUCTOR (a constructor; where that header is installed). Graded with
           every screen on, each is refused by name and line from the preprocessed file, and
           the lab does not build (0 points); so is a file the build could not preprocess
           (unscreened); the reference, with helpers that use harmless system macros (assert,
           __glibc_unlikely, __STRING), builds and earns its points.

  keyed    (class 4) runs honestly only when its command line, binary, working directory,
           environment, mounts or cgroup say "grade", "hidden" or "edge", and otherwise exits: it
           scores what the stubs score (0 of 9), where the same code keyed on "uopc" (which every
           path has) scores 9 of 9. With the held-out binaries named hidden_* or the scratch
           paths uopc-grade-*, it would score 9.
  extra    (class 5) compiles one program more than the reference, deletes its cache entry and
           takes it back out of the counters: the grader saw three compiles, so driver.counters
           earns 0 (counting the cache's entries it earned 1); made during the NumPy checks, the
           same costs numpy.counters its point (1 by the cache).
  deleted  (class 5) the reference, which deletes its cache entries at exit: driver.counters
           earns its 1 point (the cache's count, 0, would cost it).
  faked    (class 5) the reference, which adds fake entries at exit (a directory with a manifest,
           one whose manifest is a FIFO, a copy of a real entry): driver.counters earns 1 (the
           cache's count, 4, would cost it).
  output   (class 4) reads what its process printed so far (cmocka's "[ RUN      ] <case>",
           through /proc/self/fd/1 or ./stdout) and is honest only in a case named "edge":
           0 of 2 (the output files are outside the run directory, mode 0600, so nobody or
           --run-as's user cannot reopen them; before, the held-out case earned its point).
  report   the NumPy worker replaces the trusted half's report file (./report, in the run
           directory it may write) with PASS lines: 0 of 6, the stubs' score (the report is
           written outside the run directory now).
  leak     (class 3) crashes in two student functions after printing every string of its own
           binary: none of the held-out suites' strings reaches results.json (a visible test's
           entry shows what its own binary holds).
  sixteen  (class 6) the reference's sym_dim_check with the multiple taken as 16 whenever the dim
           has one (multiple_of > 1): sym_dim_bind_rejects_value_off_multiple, which used to bind
           only multiples of 16, earns 0 of its 1 point (and the held-out edges test fails).
  capacity (class 6) the reference's attn_build plus a pass over every slot of the capacity
           (head_stride / head_dim of them) that adds 0: exact values, and a loop whose text
           names no "capacity", 4096 or 64, which the old check of the generated source passed;
           test_attn_build_loops_to_the_length_never_the_capacity now counts the loop nests'
           iterations under each call's binding, and the attack earns 0 of its 4 points.
  dispatcher (class 6) the reference's dispatch_fast16_guards without the guards that the
           dispatcher's own argument checks stand in for (ranks, dtypes, equal lengths, the
           bounds of n): every test through the dispatcher passes, and the test of the set
           itself, dispatch_fast16_guards_cover_every_assumption, now worth 3 of the function's
           9 points (it was 1), earns 0.
"""
import contextlib
import io
import json
import os
import re
import shutil
import tempfile
import unittest
from pathlib import Path

from harness.grading import manifest, sandbox, screen, witness
from harness.grading.results import ResultsFile
from harness.grading.runner import LabGrader, Options

ROOT = manifest.ROOT
LAB, LAB_DIR, TARGET = "23.1", "23.1-symbolic-dims", "sym_dim.c"
LAB_DIR_PATH = f"labs/{LAB_DIR}/{TARGET}"
PRELUDE = """#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "uopc/counters.h"
#include "uopc/program.h"

__attribute__((unused)) static size_t slurp(const char *path, char *buf, size_t cap) {
  FILE *f = fopen(path, "rb");
  size_t n = f ? fread(buf, 1, cap, f) : 0;
  if (f) fclose(f);
  return n;
}

__attribute__((unused)) static int is_driver(void) {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return 0;
  exe[n] = '\\0';
  const char *base = strrchr(exe, '/');
  return base && strcmp(base, "/lab-23.1") == 0;
}

__attribute__((unused)) static void remove_tree(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  char path[4200];
  while (d && (e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      if (unlink(path) != 0) remove_tree(path);
    }
  if (d) closedir(d);
  rmdir(dir);
}

/* The first whole cache entry (<name>-<64 hex digits>) in the run's cache, or 0. */
__attribute__((unused)) static int first_entry(char *out, size_t size) {
  const char *cache = getenv("UOPC_CACHE_DIR");
  DIR *d = cache ? opendir(cache) : NULL;
  struct dirent *e;
  int found = 0;
  while (d && !found && (e = readdir(d))) {
    const char *dash = strrchr(e->d_name, '-');
    found = dash && strlen(dash + 1) == 64 && strncmp(e->d_name, "fake", 4) != 0;
    if (found) snprintf(out, size, "%s/%s", cache, e->d_name);
  }
  if (d) closedir(d);
  return found;
}
"""

KEYED = """
static int has_key(const char *buf, size_t n) {
  static const char *const keys[] = {%s};
  for (size_t k = 0; k < sizeof keys / sizeof *keys; k++)
    for (size_t len = strlen(keys[k]), i = 0; i + len <= n; i++)
      if (memcmp(buf + i, keys[k], len) == 0) return 1;
  return 0;
}

/* Honest only where something says this run is graded or held out; else it leaves. */
__attribute__((constructor)) static void keyed(void) {
  static char buf[1 << 17];
  static const char *const files[] = {"/proc/self/cmdline", "/proc/self/environ", "/proc/self/mountinfo",
                                      "/proc/self/cgroup"};
  for (size_t k = 0; k < sizeof files / sizeof *files; k++)
    if (has_key(buf, slurp(files[k], buf, sizeof buf))) return;
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf);
  if (n > 0 && has_key(buf, (size_t)n)) return;
  if (getcwd(buf, sizeof buf) && has_key(buf, strlen(buf))) return;
  _exit(3);
}
"""

EXTRA = """
static const char *const KEYS[] = {%s};
#define NKEYS (sizeof KEYS / sizeof *KEYS)

/* One compile more than the reference, its entry deleted and its counts taken back. */
__attribute__((constructor)) static void extra(void) {
  if (!is_driver()) return;
  int64_t before[NKEYS];
  for (size_t k = 0; k < NKEYS; k++) before[k] = uopc_counter_get(KEYS[k]);
  uopc_program *p = NULL;
  uopc_error err = {0};
  if (uopc_program_new(&p, "void extra_kernel(void) {}\\n", "extra_kernel", "", NULL, &err) == UOPC_OK) {
    remove_tree(uopc_program_dir(p));
    uopc_program_free(p);
  }
  for (size_t k = 0; k < NKEYS; k++) uopc_counter_add(KEYS[k], before[k] - uopc_counter_get(KEYS[k]));
}
"""

# The same, made by the first call of a student function (leak() placed in its body): in the NumPy
# worker that is during the checks, whose count starts after the library has loaded.
EXTRA_LATER = EXTRA.replace("__attribute__((constructor)) static void extra(void) {\n  if (!is_driver()) return;",
                            "void leak(void);\nvoid leak(void) {\n  static int once;\n  if (once++) return;")

DELETED = """
/* At exit (after main returned): every entry the run made, gone. */
static void delete_entries(void) {
  char entry[4200];
  while (first_entry(entry, sizeof entry)) remove_tree(entry);
}
__attribute__((constructor)) static void deleted(void) {
  if (is_driver()) atexit(delete_entries);
}
"""

FAKED = """
static void fake_dir(char *out, size_t size, const char *tag) {
  const char *cache = getenv("UOPC_CACHE_DIR");
  snprintf(out, size, "%s/fake%s-%064d", cache ? cache : ".", tag, 0);
  mkdir(out, 0700);
}

static void copy_file(const char *from, const char *to) {
  static char buf[1 << 20];
  size_t n = slurp(from, buf, sizeof buf);
  FILE *f = fopen(to, "wb");
  if (f) { fwrite(buf, 1, n, f); fclose(f); }
}

/* At exit: an entry made by mkdir with a manifest, one whose manifest is a FIFO, a copy of a real one. */
static void fake_entries(void) {
  char dir[4200], path[4300], real[4200];
  fake_dir(dir, sizeof dir, "a");
  snprintf(path, sizeof path, "%s/manifest", dir);
  copy_file("/proc/self/cmdline", path);
  fake_dir(dir, sizeof dir, "b");
  snprintf(path, sizeof path, "%s/manifest", dir);
  mkfifo(path, 0600);
  if (!first_entry(real, sizeof real)) return;
  fake_dir(dir, sizeof dir, "c");
  static const char *const files[] = {"kernel.c", "kernel.so", "manifest"};
  for (size_t k = 0; k < 3; k++) {
    char from[4300];
    snprintf(from, sizeof from, "%s/%s", real, files[k]);
    snprintf(path, sizeof path, "%s/%s", dir, files[k]);
    copy_file(from, path);
  }
}
__attribute__((constructor)) static void faked(void) {
  if (is_driver()) atexit(fake_entries);
}
"""

LEAK = """
/* Every string of this process's own binary with a space in it, a few to a line, then a crash. */
void leak(void);
void leak(void) {
  static char buf[1 << 21];
  size_t n = slurp("/proc/self/exe", buf, sizeof buf), start = 0, line = 0;
  printf("LEAK ");
  for (size_t i = 0; i < n; i++) {
    if (buf[i] >= 32 && buf[i] < 127) continue;
    size_t len = i - start;
    if (len >= 16 && memchr(buf + start, ' ', len)) {
      line += (size_t)printf("%.*s | ", (int)len, buf + start);
      if (line > 200) { printf("\\n"); line = 0; }
    }
    start = i + 1;
  }
  printf("\\n");
  fflush(stdout);
  abort();
}
"""

# Reads what the process printed so far (cmocka's "[ RUN      ] <case>") when a student function runs.
KEYED_LATER = KEYED.replace("__attribute__((constructor)) static void keyed(void) {", "void leak(void);\nvoid leak(void) {") \
  .replace('{"/proc/self/cmdline", "/proc/self/environ", "/proc/self/mountinfo",\n                                      "/proc/self/cgroup"}',
           '{"/proc/self/fd/1", "/proc/self/fd/2", "stdout", "stderr"}')

FORGED_REPORT = """
/* In the NumPy worker: the trusted half's report, where the grader would read it, replaced. */
__attribute__((constructor)) static void forge(void) {
  static const char *const names[] = {"report", "../report", "progress"};
  for (size_t k = 0; k < 3; k++) {
    unlink(names[k]);
    FILE *f = fopen(names[k], "w");
    if (!f) continue;
    fputs("PASS lab 23.1 elementwise: forged\\nPASS lab 23.1 row sums: forged\\n"
          "PASS lab 23.1 rejections: forged\\nPASS lab 23.1 counters: forged\\n", f);
    fclose(f);
  }
}
"""

KEYED_TESTS = {"sym_dim_bind_rejects_value_above_hi": 1, "sym_expr_eval_floors_negative_operands": 3,
               "sym_dim_check_accepts_and_rejects_at_every_edge": 1, "sym_expr_eval_reports_overflow": 2,
               "driver.counters": 1, "numpy.elementwise": 1}
LEAK_TESTS = {"sym_dim_bind_rejects_value_above_hi", "sym_expr_eval_floors_negative_operands",
              "sym_dim_check_accepts_and_rejects_at_every_edge", "sym_expr_eval_reports_overflow",
              "sym_expr_eval_is_exact_at_the_edges"}


GPG_ERROR_H = Path("/usr/include/x86_64-linux-gnu/gpg-error.h")
# Class 1: {the macro: (what the compiler sees, a helper whose text passes screen.check_file)}.
MACROS = {
  "__REDIRECT": ("__asm__", """
static int run(const char *cmd) {
  extern int __REDIRECT(shell, (const char *), system);
  return shell(cmd);
}
"""),
  "__CONCAT": ("uopc_counter_add", """
static void forge(void) { __CONCAT(uopc_counter, _add)("programs constructed", -1); }
"""),
  "__cpuid": ("__asm__", """
static unsigned vendor(void) {
  unsigned a, b, c, d;
  __cpuid(0, a, b, c, d);
  return a ^ b ^ c ^ d;
}
"""),
  "_GPG_ERR_CONSTRUCTOR": ("__attribute__((__constructor__))", """
static void _GPG_ERR_CONSTRUCTOR first(void) { (void)run("true"); forge(); (void)vendor(); }
""")}
MACRO_INCLUDES = '#include <cpuid.h>\n#include <stdlib.h>\n#include "uopc/counters.h"\n'
HONEST_MACROS = """#include <assert.h>
#include <string.h>
__attribute__((unused)) static int checked(int v) {
  assert(v >= 0);
  if (__glibc_unlikely(v > 1000)) return (int)strlen(__STRING(v));
  return v;
}
"""


def c_list(words):
  return ", ".join(json.dumps(w) for w in words)


def edited(lab_dir, edits):
  """A scratch submission: a lab's student files from solutions/, each (old, new) of edits[file]
  replacing its one occurrence of old."""
  sub = Path(tempfile.mkdtemp(prefix="uopc-adversary-"))
  os.chmod(sub, 0o755)
  dst = sub / "labs" / lab_dir
  shutil.copytree(ROOT / "solutions" / lab_dir, dst, ignore=shutil.ignore_patterns("tests", "*.md"))
  for name, pairs in edits.items():
    text = (dst / name).read_text()
    for old, new in pairs:
      assert text.count(old) == 1, f"{name}: {old!r} is not there once"
      text = text.replace(old, new)
    (dst / name).write_text(text)
  return sub


def submission(base, code, markers=(), prelude=PRELUDE):
  """A scratch submission: lab 23.1's student files from base (solutions/ or labs/), code added to
  TARGET, and `leak();` placed first in the body of each function named in markers."""
  sub = Path(tempfile.mkdtemp(prefix="uopc-adversary-"))
  os.chmod(sub, 0o755)
  dst = sub / "labs" / LAB_DIR
  shutil.copytree(ROOT / base / LAB_DIR, dst, ignore=shutil.ignore_patterns("tests", "*.md"))
  text = (dst / TARGET).read_text()
  (dst / TARGET).write_text(prelude + code + text)
  for path in dst.glob("*.c"):
    text = path.read_text()
    for fn in markers:
      text = text.replace(f"// STUDENT {LAB} {fn}\n", f"// STUDENT {LAB} {fn}\n  leak();\n")
    if path.name != TARGET and markers:
      text = "void leak(void);\n" + text
    path.write_text(text)
  return sub


def grade(sub, tests, results=None, screen="none", lab=LAB):
  """{test id: (verdict, points earned)} of lab (23.1) of sub on tests (and what they need)."""
  manifests = {lab: manifest.load(lab) for lab in manifest.available()}
  opts = Options(submission=sub, seed=1, lengths=16, only=set(tests), screen=screen)
  with contextlib.redirect_stdout(io.StringIO()):
    score = LabGrader(manifests[lab], manifests, opts, results or ResultsFile(None), 0).grade()
  return {t.id: (r.verdict, earned) for t, r, earned, _ in score.rows if t.id in tests}, score


@unittest.skipUnless((ROOT / "solutions").is_dir(), "needs solutions/ (the attacks need working code)")
class AdversaryTest(unittest.TestCase):
  def grade(self, base, code, tests, markers=(), results=None):
    sub = submission(base, code, markers)
    try:
      return grade(sub, tests, results)
    finally:
      shutil.rmtree(sub, ignore_errors=True)

  def points(self, got):
    return sum(earned for _, earned in got.values())


@unittest.skipUnless(sandbox.jail().bwrap, "needs bubblewrap: the fallback's paths are the grader's own")
class KeyedTest(AdversaryTest):
  """Class 4: nothing in a test process says it is graded, or which test runs."""

  def test_code_that_is_honest_only_when_graded_scores_what_the_stubs_score(self):
    got, _ = self.grade("solutions", KEYED % c_list(["grade", "hidden", "edge"]), set(KEYED_TESTS))
    self.assertEqual(self.points(got), 0, got)
    stubs, _ = self.grade("labs", "", set(KEYED_TESTS))
    self.assertEqual(self.points(stubs), 0, stubs)

  @unittest.skipUnless(sandbox.sandbox_user(None), "the grade runs student code as the grader's own user, "
                       "who may read the files it prints to (grade as root: it runs as nobody)")
  def test_code_that_reads_its_own_output_for_the_case_name_scores_nothing(self):
    got, _ = self.grade("solutions", KEYED_LATER % c_list(["edge", "hidden"]),
                        {"sym_dim_check_accepts_and_rejects_at_every_edge", "sym_dim_bind_rejects_value_above_hi"},
                        ("sym_dim_check",))
    self.assertEqual(self.points(got), 0, got)

  def test_the_same_code_keyed_on_what_every_path_has_scores_full_marks(self):
    got, _ = self.grade("solutions", KEYED % c_list(["uopc"]), set(KEYED_TESTS))
    self.assertEqual(self.points(got), sum(KEYED_TESTS.values()), got)


@unittest.skipUnless(witness.available(), f"no compile witness here ({witness.why_not()})")
class CompileCountTest(AdversaryTest):
  """Class 5: the compile count comes from the grader's witness, not from the cache directory."""
  KEYS = ["programs constructed", "compiler invocations", "disk cache hits", "disk cache misses",
          "corrupted entries rebuilt"]

  def test_a_compile_whose_entry_and_counts_were_removed_is_still_counted(self):
    got, score = self.grade("solutions", EXTRA % c_list(self.KEYS), {"driver.counters"})
    self.assertEqual(got["driver.counters"], ("FAIL", 0))
    detail = next(r.detail for t, r, _, _ in score.rows if t.id == "driver.counters")
    self.assertIn("'compiler invocations' says 2, but the grader saw the compiler start 3 times", detail)

  def test_the_numpy_checks_count_a_compile_whose_entry_and_counts_were_removed(self):
    got, score = self.grade("solutions", EXTRA_LATER % c_list(self.KEYS), {"numpy.counters", "numpy.elementwise"},
                            ("sym_dim_check",))
    self.assertEqual(got, {"numpy.elementwise": ("PASS", 1), "numpy.counters": ("FAIL", 0)})
    lines = next(r.lines for t, r, _, _ in score.rows if t.id == "numpy.counters")
    self.assertIn("'compiler invocations' says +2, but the grader counted 3 compiles", "\n".join(lines))

  def test_deleting_the_entries_made_does_not_change_the_count(self):
    got, score = self.grade("solutions", DELETED, {"driver.counters"})
    self.assertEqual(got["driver.counters"], ("PASS", 1))
    driver = next(r for t, r, _, _ in score.rows if t.id == "driver")
    self.assertEqual(driver.data["observed"], {"compiles": 2, "by": "witness"})

  def test_fake_entries_do_not_change_the_count(self):
    got, score = self.grade("solutions", FAKED, {"driver.counters"})
    self.assertEqual(got["driver.counters"], ("PASS", 1))
    driver = next(r for t, r, _, _ in score.rows if t.id == "driver")
    self.assertEqual(driver.data["observed"], {"compiles": 2, "by": "witness"})


class MacroTest(unittest.TestCase):
  """Class 1: the source screen reads the preprocessed file, so a system header's macro hides nothing."""
  TESTS = {"sym_dim_bind_rejects_value_above_hi": 1, "sym_expr_eval_floors_negative_operands": 3}

  @classmethod
  def setUpClass(cls):
    cls.attacks = {m: v for m, v in MACROS.items() if m != "_GPG_ERR_CONSTRUCTOR" or GPG_ERROR_H.is_file()}
    cls.code = MACRO_INCLUDES + ("#include <gpg-error.h>\n" if GPG_ERROR_H.is_file() else "") + \
      "".join(code for _, code in cls.attacks.values())
    cls.got, cls.said = cls.grade(cls.code)

  @classmethod
  def grade(cls, code):
    sub = submission("solutions", code, prelude="")
    try:
      got, score = grade(sub, set(cls.TESTS), screen="all")
    finally:
      shutil.rmtree(sub, ignore_errors=True)
    return got, "\n".join(score.failures)

  def test_the_text_screen_alone_passes_every_attack(self):
    text = self.code + (ROOT / "solutions" / LAB_DIR / TARGET).read_text()
    handout = (ROOT / "labs" / LAB_DIR / TARGET).read_text()
    self.assertEqual(screen.check_file(TARGET, text, handout), [])

  def test_each_macro_is_refused_at_its_line_and_the_lab_scores_nothing(self):
    self.assertEqual(sum(p for _, p in self.got.values()), 0, self.got)
    self.assertIn("BUILD FAILED", self.said)
    seen = {}   # (what the compiler sees, the line) of each refusal
    for m in re.finditer(rf"refused {LAB_DIR_PATH}: lines? ([\d, ]+): the compiler sees (\S+) there", self.said):
      seen.update({(m.group(2), int(n)): m.group(0) for n in m.group(1).split(", ")})
    for macro, (what, _) in self.attacks.items():
      line = next(k for k, l in enumerate(self.code.splitlines(), 1) if macro in l)
      self.assertIn((what, line), seen, f"{macro} at line {line}: no refusal in\n{self.said}")

  def test_a_file_the_build_cannot_preprocess_is_refused_unscreened(self):
    got, said = self.grade("#include <uopc_no_such_header.h>\n")
    self.assertEqual(sum(p for _, p in got.values()), 0, got)
    self.assertIn(f"refused {LAB_DIR_PATH}: the build did not preprocess it (No such file or directory)", said)

  def test_the_reference_with_harmless_system_macros_builds_and_scores(self):
    got, said = self.grade(HONEST_MACROS)
    self.assertEqual(got, {t: ("PASS", p) for t, p in self.TESTS.items()}, said)


class ForgedReportTest(AdversaryTest):
  """The NumPy checks' report is written where the worker's sandbox cannot replace it."""

  def test_a_worker_that_replaces_the_report_scores_what_the_stubs_score(self):
    tests = {"numpy.elementwise", "numpy.row_sums", "numpy.rejections", "numpy.counters"}
    got, _ = self.grade("labs", FORGED_REPORT, tests)
    self.assertEqual(self.points(got), 0, got)


def held_out_strings():
  """Pieces (16 characters or more, split at format directives) of the string literals of lab
  23.1's held-out suites that no visible suite or shared header has."""
  visible = "".join(p.read_text() for p in sorted((ROOT / "tests" / LAB).glob("*")) + [ROOT / "tests/testutil.h"])
  found = set()
  for path in sorted((ROOT / "tests" / "hidden" / LAB).glob("*.c")):
    for literal in re.findall(r'"((?:[^"\\]|\\.)*)"', path.read_text()):
      for piece in re.split(r"%[-#0-9.]*[a-zA-Z]+|\\.", literal):
        if len(piece.strip()) >= 16 and piece not in visible:
          found.add(piece)
  return found


class LeakTest(AdversaryTest):
  """Class 3: what a held-out binary holds stays in the instructor's log."""

  @unittest.skipUnless((ROOT / "tests" / "hidden" / LAB).is_dir(), "no held-out suites in this tree")
  def test_a_held_out_binarys_strings_do_not_reach_results_json(self):
    secrets = held_out_strings()
    self.assertGreater(len(secrets), 3)
    out = Path(tempfile.mkdtemp(prefix="uopc-leak-"))
    try:
      got, _ = self.grade("solutions", LEAK, LEAK_TESTS, ("sym_dim_check", "sym_expr_eval"),
                          ResultsFile(out / "results.json"))
      text = (out / "results.json").read_text()
    finally:
      shutil.rmtree(out, ignore_errors=True)
    self.assertEqual(self.points(got), 0, got)
    entries = json.loads(text)["tests"]
    visible = [e for e in entries if "LEAK " in e["output"]]
    self.assertTrue(visible, "the attack printed into no visible test's entry: it did not run")
    self.assertEqual(sorted(s for s in secrets if s in text), [])


# Class 6: {lab: (its folder, {student file: [(the reference's text, the shortcut's)]}, {test: points})}.
SHORTCUTS = {
  "sixteen": ("23.1", LAB_DIR, {"sym_dim.c": [
    ("  if (value % d->multiple_of != 0)", "  int64_t m = d->multiple_of > 1 ? 16 : 1;   /* every multiple is 16 */\n"
     "  if (value % m != 0)"),
    ("d->name, value, d->multiple_of);", "d->name, value, m);")]},
    {"sym_dim_bind_rejects_value_off_multiple": 1, "sym_dim_bind_rejects_value_above_hi": 1,
     "sym_dim_bind_rejects_value_below_lo": 1, "sym_dim_check_accepts_and_rejects_at_every_edge": 1,
     "sym_dim_check_multiples_at_the_edges": 1}),
  "capacity": ("23.5", "23.5-kv-cache", {"attn.c": [
    ("  return done(g, as_heads(g, d, softmax_weighted(g, scores_of(g, d, q, k), v)), out, err);\n"
     "  // END STUDENT\n}\n\nint attn_build_masked",
     "  /* A pass over every slot of the capacity, adding 0 (q's sums are finite). */\n"
     "  const sym_expr *wide[2] = {sym_expr_const(a, d->heads),\n"
     "                             sym_expr_floordiv(a, sym_expr_dim(a, &d->head_stride), sym_expr_const(a, d->head_dim))};\n"
     "  const ir_node *sums = ir_reduce(g, IR_SUM, q, 1u << 1, 1);\n"
     "  const ir_node *slots = ir_reduce(g, IR_SUM, ir_expand(g, sums, 2, wide), 1u << 1, 1);\n"
     "  const ir_node *zero = ir_binary(g, IR_MUL, slots, ir_const(g, 0.0, UOPC_F32));\n"
     "  const ir_node *o = as_heads(g, d, softmax_weighted(g, scores_of(g, d, q, k), v));\n"
     "  return done(g, ir_binary(g, IR_ADD, o, zero), out, err);\n"
     "  // END STUDENT\n}\n\nint attn_build_masked")]},
    {"attn_build_matches_a_double_reference_for_every_length_and_capacity": 10,
     "attn_build_subtracts_the_maximum_before_exp": 6, "attn_build_loops_to_the_length_never_the_capacity": 4}),
  "dispatcher": ("23.2", "23.2-guarded-dispatch", {"dispatch.c": [
    (", out_n = {OUT, GUARD_SHAPE, 0};", ";"),
    (": guard_set_add_bounds(s, &d->n, n, err);", ": ((void)d, UOPC_OK);   /* the dispatcher checks n's bounds */"),
    ("  if (!rc) rc = guard_set_add_rank(s, X, 1, err);\n  if (!rc) rc = guard_set_add_rank(s, OUT, 1, err);\n"
     "  if (!rc) rc = guard_set_add_equal(s, out_n, n, err);\n  if (!rc) rc = guard_set_add_dtype(s, X, UOPC_F32, err);\n"
     "  if (!rc) rc = guard_set_add_dtype(s, OUT, UOPC_F32, err);\n", "")]},
    {"dispatch_fast16_guards_cover_every_assumption": 3, "dispatch_length_33_matches_eager": 1,
     "dispatch_misaligned_view_takes_generic_path": 1, "dispatch_strided_view_takes_generic_path": 1,
     "dispatch_strided_out_takes_generic_path": 1, "dispatch_random_views_match_eager": 1,
     "dispatch_rejects_bad_inputs": 0, "numpy.values": 1}),
  "past-the-end": ("23.7", "23.7-tensorjit", {"tj_serve.c": [
    ("  if (rc) return rc;   /* nothing retained yet: out untouched */",
     "  if (rc) return rc;   /* nothing retained yet: out untouched */\n"
     "  if (base->rank == 1 && base->strides[0] == 1 && base->dtype == UOPC_F32)   /* one element past the input */\n"
     "    ((float *)base->storage->base)[base->offset + base->shape[0]] = 0;")]},
    {"tj_call_slice_of_an_input_is_a_view_of_its_storage": 3, "tj_view_make_evaluates_the_layout_under_the_binding": 3,
     "tj_view_make_adds_the_view_offset_to_the_inputs_own": 2}),
}
# What the shortcut loses: {test: the verdict} (the rest pass).
LOST = {"sixteen": {"sym_dim_bind_rejects_value_off_multiple": "FAIL", "sym_dim_check_multiples_at_the_edges": "FAIL"},
        "capacity": {"attn_build_loops_to_the_length_never_the_capacity": "FAIL"},
        "dispatcher": {"dispatch_fast16_guards_cover_every_assumption": "FAIL"},
        "past-the-end": {"tj_call_slice_of_an_input_is_a_view_of_its_storage": "CRASH",
                         "tj_view_make_adds_the_view_offset_to_the_inputs_own": "CRASH"}}


@unittest.skipUnless((ROOT / "solutions").is_dir(), "needs solutions/ (the shortcuts are the reference's, changed)")
class ShortcutTest(unittest.TestCase):
  """Class 6: a shortcut that passed a test no longer does, and the reference still earns its points."""

  def grade(self, name, shortcut=True):
    lab, lab_dir, edits, tests = SHORTCUTS[name]
    sub = edited(lab_dir, edits if shortcut else {})
    try:
      got, score = grade(sub, set(tests), screen="all", lab=lab)
    finally:
      shutil.rmtree(sub, ignore_errors=True)
    want = {t: (LOST[name].get(t, "PASS") if shortcut else "PASS", p) for t, p in tests.items()}
    want = {t: (v, p if v == "PASS" else 0) for t, (v, p) in want.items()}
    self.assertEqual(got, want, "\n".join(score.failures))
    return score

  def test_a_check_that_knows_only_the_multiple_16_loses_its_point(self):
    score = self.grade("sixteen")
    self.assertIn("bind n = 9 (multiple_of 3): expected UOPC_OK, got UOPC_E_BOUNDS: dim 'n' = 9 is not a multiple of 16",
                  "\n".join(score.failures))

  def test_the_reference_earns_the_multiples_point(self):
    self.grade("sixteen", shortcut=False)

  def test_attention_with_a_loop_over_the_capacity_loses_the_work_points(self):
    score = self.grade("capacity")
    self.assertRegex("\n".join(score.failures), r"attn, L 1: the loop nests run \d+ iterations at capacity 64 "
                     r"and \d+ at capacity 4096: the work must follow the populated slots, never the capacity")

  def test_the_reference_attention_earns_the_work_points(self):
    self.grade("capacity", shortcut=False)

  def test_a_fast_set_that_leans_on_the_dispatchers_own_checks_loses_the_contract_points(self):
    score = self.grade("dispatcher")
    self.assertIn("exact_n 0: the fast set holds for a call that breaks only \"x's dtype f32\"", "\n".join(score.failures))

  def test_the_reference_fast_set_earns_the_contract_points(self):
    self.grade("dispatcher", shortcut=False)

  def test_a_write_one_element_past_an_input_faults_in_a_graded_run(self):
    # The graded runtime ends each storage at a PROT_NONE page, and checks the bytes up to the
    # next 64-byte boundary when it frees it: without either, these values are all right.
    score = self.grade("past-the-end")
    self.assertIn("a write past the end of a tensor's storage of 20 bytes: byte 0 after it changed",
                  "\n".join(score.failures))

  def test_the_reference_view_earns_its_points_in_a_graded_run(self):
    self.grade("past-the-end", shortcut=False)


if __name__ == "__main__":
  unittest.main()
