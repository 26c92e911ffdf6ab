"""integrity.py: the grader's integrity self-test (part of `make test`).

    .venv/bin/python -m harness.grading.integrity [--seed N] [--keep]

Adversarial submissions of lab 23.1, each made from the untouched stubs of labs/ plus one attack,
are graded as a student's would be, and each must score no more than the stubs themselves (the
honest score of that code). Most attacks are graded with the grader's static screen turned off
(screen.py refuses their constructors outright), so that the layers behind it are what they meet:

  links          the student files are a symbolic link into solutions/, a link to a directory,
                 a hard link and a FIFO: intake refuses each by name
  cmocka         a constructor prints cmocka's passing lines and exits 0 in every test process
  channel        a constructor adds the golden counters (uopc_counter_add), writes the counters
                 JSON, and sends a forged hook record down every descriptor, the channel's too
  numpy          a constructor in the NumPy worker rewrites the check's Python and prints PASS
  daemon         a constructor leaves a setsid grandchild that, a second later, tries to write
                 a file in /tmp and over the grade's results.json
  tamper         a constructor tries to rewrite the goldens, the grader's code, expected.log and
                 the scratch copy's own binaries, libraries and harness
  driver         the lab driver prints every line of expected.log and exits 0 before main runs
  interposition  the library defines cmocka's group runner and memcmp (graded with the library
                 screen on: it must refuse them)
  screened       the cmocka attack with every screen on: refused before the build
  macro          the same with its constructor spelled through a #define: refused too
  env            a constructor looks for UOPC_GRADE_* in its environment and /proc/self/environ:
                 the hook has removed them before any student code runs
  leak           a constructor prints a marker and the held-out binary's own strings: they must
                 not reach a held-out test's entry in results.json (only its verdict and points)

The attacks that need working code (keying on the grade's names, fooling the compile count,
leaking a held-out binary's strings: issue #32, classes 3 to 5) are built on the reference and
live in tests/grader/test_adversarial.py, each with the exact points it must get.

Then: no process the attacks started is alive, no file they aimed at outside the sandbox exists,
results.json is as the grader wrote it, and the grader's tree (everything but build/) hashes as
before. Where bubblewrap cannot run, the daemon and tamper attacks are skipped with a line saying
so: the fallback does not stop them, and that is what the grade itself says there. Each attack grades a dozen tests of every kind (cmocka cases of three suites and the
held-out one, the NumPy checks, both driver scenarios and their counters). Prints one line per
claim and last `N passed, N failed`.
"""
import argparse
import contextlib
import hashlib
import io
import json
import os
import secrets
import shutil
import sys
import tempfile
import time
from pathlib import Path

from harness.grading import manifest as manifests_mod, sandbox
from harness.grading.manifest import ROOT
from harness.grading.results import ResultsFile
from harness.grading.runner import LabGrader, Options
from harness.grading.selfcheck import Claims

LAB = "23.1"
TESTS = {"sym_dim_bind_accepts_both_bounds", "sym_expr_eval_floors_negative_operands", "plan_sum_of_vector",
         "sym_dim_check_accepts_and_rejects_at_every_edge", "numpy.elementwise", "numpy.row_sums",
         "numpy.rejections", "numpy.counters", "driver.counters", "driver.warm.counters"}
TARGET = "sym_dim.c"          # the student file each attack is added to
PRELUDE = """#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>
#include "uopc/counters.h"
"""
CTOR = "__attribute__((constructor)) static void attack(void) {\n%s\n}\n"


def c_string(text):
  return json.dumps(text)


def attacks(token, results_path):
  """{name: (description, screen, C code added to the file or None, what else to check)}."""
  m = manifests_mod.load(LAB)
  golden = json.loads((ROOT / "goldens" / f"{LAB}.json").read_text())["scenarios"]["driver"]
  record = "grade-hook 1 protected\n" + "".join(f"{k}={v}\n" for k, v in golden.items()) + "main returned 0\n"
  expected = (ROOT / m.lab_dir / "expected.log").read_text()
  adds = "\n".join(f"  uopc_counter_add({c_string(k)}, {v});" for k, v in golden.items())
  cmocka = CTOR % """  const char *c = getenv("UOPC_GRADE_CASE");
  if (!c) return;
  printf("[ RUN      ] %s\\n[       OK ] %s\\n[==========] 1 test(s) run.\\n[  PASSED  ] 1 test(s).\\n", c, c);
  fprintf(stderr, "\\n@grade 0 failed=0\\n");
  fflush(NULL);
  _exit(0);"""
  return {
    "links": ("symbolic links, a hard link and a FIFO for the student files", "all", None, "links"),
    "cmocka": ("a constructor prints cmocka's passing lines and exits 0", "none", cmocka, None),
    "channel": ("counters added and written as JSON; a forged hook record down every descriptor", "none",
                CTOR % f"""{adds}
  const char *json = getenv("UOPC_COUNTERS_JSON");
  FILE *f = fopen(json ? json : "counters.json", "w");
  if (f) {{ fputs({c_string(json_text(golden))}, f); fclose(f); }}
  static const char rec[] = {c_string(record)};
  for (int fd = 3; fd < 1024; fd++) if (fd != 1000) (void)!write(fd, rec, sizeof rec - 1);
  (void)!write(1000, rec, sizeof rec - 1);""", None),
    "numpy": ("a constructor in the NumPy worker rewrites the check's Python and prints PASS", "none",
              CTOR % f"""  int (*run)(const char *) = (int (*)(const char *))dlsym(RTLD_DEFAULT, "PyRun_SimpleString");
  if (run) run({c_string(PY_FORGERY)});
  printf("PASS lab {LAB} elementwise: forged\\nPASS lab {LAB} row sums: forged\\n"
         "PASS lab {LAB} rejections: forged\\nPASS lab {LAB} counters: forged\\n");
  fflush(stdout);""", None),
    "daemon": ("a setsid grandchild that outlives its test and writes files a second later", "none",
               CTOR % f"""  if (fork() != 0) return;
  setsid();
  if (fork() != 0) _exit(0);
  prctl(PR_SET_NAME, "uopc{token[:7]}");
  sleep(1);
  int fd = open("/tmp/uopc-escaped-{token}", O_CREAT | O_WRONLY, 0644);
  if (fd >= 0) close(fd);
  fd = open({c_string(str(results_path))}, O_WRONLY | O_TRUNC);
  if (fd >= 0) {{ (void)!write(fd, "{{\\"score\\": 1000}}", 15); close(fd); }}
  _exit(0);""", "daemon"),
    "tamper": ("a constructor rewrites the goldens, the grader's code and the scratch copy", "none",
               CTOR % f"""  char self[4096], path[4200];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  const char *fixed[] = {{{", ".join(c_string(str(ROOT / p)) for p in TAMPERED)}}};
  for (size_t k = 0; k < sizeof fixed / sizeof *fixed; k++) {{
    int fd = open(fixed[k], O_WRONLY | O_TRUNC);
    if (fd >= 0) {{ (void)!write(fd, "tampered\\n", 9); close(fd); }}
  }}
  if (n <= 0) return;
  self[n] = '\\0';
  *strrchr(self, '/') = '\\0';
  const char *near[] = {{"../../lib/liblab23_1.so", "../../lib/libgradehook.so", "../../bin/lab-23.1",
                        "test_sym_expr", "../../../../harness/check_23_1.py", "../../../../harness/remote.py",
                        "../../../../Makefile", "../../../../labs/23.1-symbolic-dims/expected.log"}};
  for (size_t k = 0; k < sizeof near / sizeof *near; k++) {{
    snprintf(path, sizeof path, "%s/%s", self, near[k]);
    int fd = open(path, O_WRONLY | O_TRUNC);
    if (fd >= 0) {{ (void)!write(fd, "#!/bin/sh\\nexit 0\\n", 17); close(fd); }}
  }}""", None),
    "driver": ("the driver prints expected.log and exits 0 before its main runs", "none",
               CTOR % f"""  extern char *program_invocation_name;
  const char *name = strrchr(program_invocation_name, '/');
  if (!name || strcmp(name, "/lab-{LAB}") != 0) return;
  fputs({c_string(expected)}, stdout);
  exit(0);""", None),
    "interposition": ("the library defines _cmocka_run_group_tests and memcmp", "library",
                      """int _cmocka_run_group_tests(const char *n, const void *t, size_t c, void *s, void *d) {
  (void)n; (void)t; (void)c; (void)s; (void)d;
  return 0;
}
int memcmp(const void *a, const void *b, size_t n) { (void)a; (void)b; (void)n; return 0; }
""", "refused"),
    "screened": ("the cmocka attack, graded with every screen on", "all", cmocka, "refused"),
    "macro": ("the cmocka attack with its constructor spelled through a macro, every screen on", "all",
              "#define EARLY __attribute__((constructor))\n" +
              cmocka.replace("__attribute__((constructor)) static void attack", "EARLY static void attack"),
              "refused"),
    "leak": ("a constructor prints a marker and the held-out binary's own strings into every failure", "none",
             CTOR % f"""  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  printf("LEAK-{token} ");
  if (n > 0) {{
    self[n] = '\\0';
    FILE *f = fopen(self, "rb");   /* the suite's own binary: its assertions' text */
    char buf[65536];
    size_t got = f ? fread(buf, 1, sizeof buf, f) : 0;
    if (f) fclose(f);
    for (size_t i = 0; i + 8 < got; i++)
      if (memcmp(buf + i, "sym_dim_", 8) == 0) {{ fwrite(buf + i, 1, 40, stdout); break; }}
  }}
  printf("\\n");
  fflush(stdout);""", "leak"),
    "env": ("a constructor looks for the grader's variables in its environment and /proc/self/environ", "none",
            CTOR % f"""  int seen = getenv("UOPC_GRADE_CASE") || getenv("UOPC_GRADE_CHANNEL") || getenv("UOPC_GRADE_COUNTERS");
  FILE *f = fopen("/proc/self/environ", "rb");
  char buf[65536];
  size_t got = f ? fread(buf, 1, sizeof buf, f) : 0;
  if (f) fclose(f);
  for (size_t i = 0; i + 11 <= got && !seen; i++) seen = memcmp(buf + i, "UOPC_GRADE_", 11) == 0;
  printf("ENV-{token}-%s\\n", seen ? "seen" : "none");
  fflush(stdout);""", "env"),
  }


PY_FORGERY = """import harness.common as c
c.compare = lambda *a, **k: None
c.Report.fail = lambda self, *a, **k: None
"""
NEEDS_SANDBOX = ("daemon", "tamper")   # the fallback cannot stop these (and tamper would succeed)
TAMPERED = ("goldens/23.1.json", "harness/grading/runner.py", "labs/23.1-symbolic-dims/expected.log")


def json_text(counters):
  return json.dumps(counters) + "\n"


def make_submission(name, code):
  """A scratch submission: labs/'s stubs of the lab, code added to TARGET."""
  m = manifests_mod.load(LAB)
  sub = Path(tempfile.mkdtemp(prefix=f"uopc-attack-{name}-"))
  os.chmod(sub, 0o755)
  dst = sub / "labs" / Path(m.lab_dir).name
  dst.mkdir(parents=True)
  for f in m.student_files:
    shutil.copy(ROOT / m.lab_dir / f, dst / f)
  if code is not None:
    (dst / TARGET).write_text(PRELUDE + (dst / TARGET).read_text() + "\n" + code)
  return sub


def link_submission():
  """Every student file something other than a regular file of its own."""
  m = manifests_mod.load(LAB)
  sub = make_submission("links", None)
  lab = sub / "labs" / Path(m.lab_dir).name
  solutions = ROOT / "solutions" / Path(m.lab_dir).name
  files = sorted(m.student_files)
  for name in files[:3]:
    (lab / name).unlink()
    (lab / name).symlink_to(solutions / name)
  (lab / files[3]).unlink()
  os.link(lab / files[4], lab / files[3])
  (lab / files[5]).unlink()
  os.mkfifo(lab / files[5])
  (sub / "elsewhere").mkdir()
  shutil.copy(solutions / files[6], sub / "elsewhere" / files[6])
  (lab / files[6]).unlink()
  os.symlink(sub / "elsewhere" / files[6], lab / files[6])
  return sub


def tree_digest(root=ROOT):
  """{path: hash} of every file of the grader's tree but build/, .git, .venv and caches."""
  found = {}
  for dirpath, dirnames, filenames in os.walk(root):
    dirnames[:] = sorted(d for d in dirnames if d not in ("build", ".git", ".venv", "__pycache__", ".cache"))
    for f in sorted(filenames):
      p = Path(dirpath) / f
      regular = p.is_file() and not p.is_symlink()
      found[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest() if regular else "link"
  return found


def grade(manifests, sub, screen, seed, results=None):
  """The LabScore of lab 23.1 of sub (None: the untouched stubs of labs/), on TESTS only."""
  opts = Options(submission=sub, impl="labs", seed=seed, lengths=16, only=set(TESTS), screen=screen)
  with contextlib.redirect_stdout(io.StringIO()):
    return LabGrader(manifests[LAB], manifests, opts, results or ResultsFile(None), 0).grade()


def escaped(token):
  """Processes whose name carries the token (the daemon attack renames itself)."""
  found = []
  for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
      if Path(f"/proc/{pid}/comm").read_text().strip() == f"uopc{token[:7]}":
        found.append(int(pid))
    except OSError:
      pass
  return found


def main(argv=None):
  ap = argparse.ArgumentParser(description="Grades adversarial submissions; none may beat the honest score.")
  ap.add_argument("--seed", type=int, default=1)
  ap.add_argument("--only", action="append", default=[], help="run only this attack (repeatable)")
  ap.add_argument("--keep", action="store_true", help="keep the submissions")
  args = ap.parse_args(argv)
  if not (ROOT / "solutions").is_dir():
    print("grader integrity: no solutions/ in this tree (a handout); nothing to check\n0 passed, 0 failed")
    return 0
  manifests = {lab: manifests_mod.load(lab) for lab in manifests_mod.available()}
  claims, token = Claims(), secrets.token_hex(8)
  before = tree_digest()
  honest = grade(manifests, None, "all", args.seed)
  claims.say(honest.earned == 0, f"the untouched stubs score {honest.earned:g}/{honest.possible:g} on the "
                                 f"{len(honest.rows)} tests the attacks are graded on")
  out_dir = Path(tempfile.mkdtemp(prefix="uopc-integrity-"))
  for name, (what, screen, code, extra) in attacks(token, out_dir / "daemon.json").items():
    if args.only and name not in args.only:
      continue
    if name in NEEDS_SANDBOX and not sandbox.jail().bwrap:
      print(f"skip {name}: without bubblewrap ({sandbox.jail().reason}) the fallback may not stop it; not counted")
      continue
    sub = link_submission() if extra == "links" else make_submission(name, code)
    results = ResultsFile(out_dir / f"{name}.json")
    try:
      s = grade(manifests, sub, screen, args.seed, results)
    finally:
      if not args.keep:
        shutil.rmtree(sub, ignore_errors=True)
    passed = [t.id for t, r, _, _ in s.rows if r.passed]
    claims.say(s.earned <= honest.earned and not passed,
               f"{name}: {what}: {s.earned:g}/{s.possible:g}" + (f", screen {screen}" if screen != "all" else ""),
               [f"passed: {', '.join(passed)}"] if passed else _why(s, extra))
    if extra == "leak":
      claims.say(*leak_claim(manifests[LAB], out_dir / f"{name}.json", token))
    if extra == "env":
      claims.say(*env_claim(out_dir / f"{name}.json", token))
  time.sleep(1.5)   # the daemon's grandchildren would write now
  daemon = json.loads((out_dir / "daemon.json").read_text()) if (out_dir / "daemon.json").exists() else {}
  claims.say(not escaped(token) and not Path(f"/tmp/uopc-escaped-{token}").exists() and
             daemon.get("score", 0) <= honest.earned,
             "no process of the attacks outlived its test, and none wrote outside its sandbox")
  shutil.rmtree(out_dir, ignore_errors=True)
  after = tree_digest()
  changed = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
  claims.say(not changed, "the grader's tree (all but build/) is as it was before the attacks",
             [f"changed: {', '.join(changed[:8])} (an edit made while the tests ran also counts)"] if changed else [])
  print(f"{claims.passed} passed, {claims.failed} failed")
  return 1 if claims.failed else 0


def leak_claim(m, path, token):
  """(ok, text, details): the marker reached a visible test's output in results.json (so the attack
  printed) and no held-out test's."""
  hidden = {t.id for t in m.tests if t.hidden}
  entries = json.loads(path.read_text())["tests"] if path.exists() else []
  held = [e for e in entries if e["name"].split(" ")[1].rstrip(":") in hidden]
  seen = [e["name"] for e in entries if e not in held and token in e["output"]]
  leaked = [e["name"] for e in held if token in e["output"] or "sym_dim_" in e["output"]]
  ok = bool(held) and bool(seen) and not leaked
  return ok, (f"leak: {len(held)} held-out tests say only their verdict and points in results.json "
              f"(the marker reached {len(seen)} visible ones)"), \
      [f"leaked into: {', '.join(leaked)}"] if leaked else [] if ok else [f"held-out entries {len(held)}, marked {len(seen)}"]


def env_claim(path, token):
  """(ok, text, details): the attack printed what it found into some test's output, and it found
  none of the grader's variables in any."""
  outputs = [e["output"] for e in json.loads(path.read_text())["tests"]] if path.exists() else []
  none, seen = sum(f"ENV-{token}-none" in o for o in outputs), sum(f"ENV-{token}-seen" in o for o in outputs)
  return (none > 0 and seen == 0, f"env: no test process saw a UOPC_GRADE_* variable ({none} outputs say so)",
          [f"{seen} saw one, {none} did not"] if seen or not none else [])


def _why(score, extra):
  """What stopped an attack: the refusals, or one test of each verdict it got."""
  if extra in ("links", "refused") and score.failures:
    return [l.strip()[:150] for l in score.failures[1:4]]
  seen, lines = set(), []
  for t, r, _, _ in score.rows:
    if r.verdict not in seen:
      seen.add(r.verdict)
      lines.append(f"{t.id}: {r.verdict} {r.detail}"[:150])
  return lines[:4]


if __name__ == "__main__":
  sys.exit(main())
