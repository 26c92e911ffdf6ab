"""selfcheck.py: runs every harness check that applies to this checkout, each in its own process.

    .venv/bin/python -m harness.selfcheck --build build/labs [--seed N] [--only NAME]

A check is a command; a crash in C code (a signal) or a hang costs that check only. Each gets a
fresh private UOPC_CACHE_DIR, so no check sees another's compiled programs. One line per check:
PASS, FAIL (with the first failure), CRASH (with the signal and the case that was running) or
TIMEOUT (with the limit and the knob that moves it, UOPC_GRADE_TIMEOUT_SCALE, which scales every
check's limit as it does the grader's); the last line is `N passed, N failed`. Exit status 1 when
any check did not pass.
"""
import argparse
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from harness.common import PROGRESS_ENV, pick_seed
from harness.grading.sandbox import limit_text, timeout_scale

ROOT = Path(__file__).resolve().parent.parent
DETAIL_LINES = 30


@dataclass
class Check:
  name: str
  argv: callable        # (build, seed) -> the command, run from the root
  applies: callable     # () -> bool: does this checkout have what the check is about?
  timeout: float        # seconds
  loads_c: bool = False  # loads the build's libraries (a sanitizer build needs its runtime preloaded)
  stage: str = ""        # the lab whose library it loads (its earlier stages may be the reference's)


def has_lab(lab_id):
  return lambda: any((ROOT / "labs").glob(f"{lab_id}-*/"))


def lab_check(lab_id, timeout=120):
  """The harness/check_<lab>.py module of a lab, run when the lab's folder exists."""
  module = f"harness.check_{lab_id.replace('.', '_')}"
  return Check(f"lab {lab_id}", lambda build, seed: [sys.executable, "-m", module, "--build", build,
                                                     "--seed", str(seed)],
               has_lab(lab_id), timeout, loads_c=True, stage=lab_id)


CHECKS = [
  Check("stubgen self-test", lambda build, seed: [sys.executable, "tools/stubgen.py", "--self-test"],
        lambda: True, 60),
  lab_check("23.1"),
  lab_check("23.2"),
  lab_check("23.4"),
  lab_check("23.5"),
  lab_check("23.3"),
  lab_check("23.6"),
  lab_check("23.7"),
]


def run_check(check, build, seed):
  """(PASS, FAIL, CRASH or TIMEOUT; a note; the output worth showing) for one check."""
  cache = tempfile.mkdtemp(prefix="uopc-selfcheck-")   # mode 0700, as the runtime requires
  fd, progress_path = tempfile.mkstemp(prefix="uopc-progress-")
  os.close(fd)
  extra = sanitizer_env() if check.loads_c and build.endswith("-san") else {}
  extra.update(reference_env(build, check.stage))
  env = dict(os.environ, UOPC_CACHE_DIR=cache, **{PROGRESS_ENV: progress_path}, **extra)
  argv = check.argv(build, seed)
  try:
    proc = subprocess.run(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=check.timeout * timeout_scale())
    word, note, output = ("PASS" if proc.returncode == 0 else "FAIL"), "", proc.stdout
    if proc.returncode < 0:
      word, note = "CRASH", signal_name(-proc.returncode)
  except subprocess.TimeoutExpired as e:
    word, note = "TIMEOUT", f"after {limit_text(check.timeout)}"
    output = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else e.stdout or ""
  finally:
    shutil.rmtree(cache, ignore_errors=True)
    running = Path(progress_path).read_text().strip()
    os.unlink(progress_path)
  if word == "PASS":
    return word, "", []
  lines = [line for line in output.splitlines()[1:] if not line.startswith("PASS")]   # [0]: its header
  if word == "FAIL":
    note = next((line[len(f"FAIL {check.name} "):] for line in lines if line.startswith("FAIL")),
                f"exit status {proc.returncode}")
  else:
    note += f" while running: {running or '?'}"
    lines = sanitizer_report(lines) or lines
    lines.append("replay: " + shlex.join([f"{k}={v}" for k, v in extra.items()] + [replay_python(a) for a in argv]))
  return word, note, lines[-DETAIL_LINES:]


def sanitizer_report(lines):
  """A sanitizer's verdict, its first stack frames and its summary; [] when there is none."""
  start = next((i for i, line in enumerate(lines) if "ERROR: " in line or "runtime error:" in line), None)
  if start is None:
    return []
  frames = [line for line in lines[start + 1:start + 40] if line.strip().startswith(("#0", "#1", "#2", "#3"))]
  summary = [line for line in lines[start:] if line.startswith("SUMMARY:")]
  return [lines[start]] + frames[:4] + summary[:1]


def replay_python(arg):
  """The venv's python as the Makefile spells it, for replay commands."""
  return ".venv/bin/python" if arg == sys.executable and Path(arg).parent.parent == ROOT / ".venv" else arg


def sanitizer_env():
  """Python is not built with ASan, so a `make SAN=1` library needs the sanitizer runtimes
  preloaded; Python's own allocations are not leaks worth reporting; an error aborts (CRASH)."""
  libs = [subprocess.run(["gcc", f"-print-file-name={lib}"], capture_output=True, text=True).stdout.strip()
          for lib in ("libasan.so", "libubsan.so")]
  return {"LD_PRELOAD": " ".join(libs), "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1"}


def reference_env(build, stage):
  """In a handout, LD_LIBRARY_PATH to <build>/ref/<lab>/, where the Makefile links the reference's
  earlier stages of that lab (reference/lib): the loader searches it before a library's RUNPATH, so
  the lab's library loaded here runs on them as its driver does. {} elsewhere, or with OWN_STAGES=1
  (the folder is empty)."""
  ref = ROOT / build / "ref" / stage
  return {"LD_LIBRARY_PATH": str(ref)} if stage and any(ref.glob("*.so")) else {}


def signal_name(number):
  try:
    return signal.Signals(number).name
  except ValueError:
    return f"signal {number}"


def main(argv=None):
  ap = argparse.ArgumentParser(description="Runs the harness checks that apply.")
  ap.add_argument("--build", default="build/labs", help="the build directory (default build/labs)")
  ap.add_argument("--seed", type=int, help="passed to every seeded check (default: fresh, printed)")
  ap.add_argument("--only", action="append", help="run only the check with this name (repeatable)")
  args = ap.parse_args(argv)
  seed = pick_seed(args.seed)
  build = Path(args.build).resolve()   # the checks run from the root
  build = str(build.relative_to(ROOT) if build.is_relative_to(ROOT) else build)
  checks = [c for c in CHECKS if c.applies() and (not args.only or c.name in args.only)]
  print(f"harness selfcheck: build={build} seed={seed}", flush=True)
  passed = failed = 0
  for check in checks:
    start = time.monotonic()
    word, note, output = run_check(check, build, seed)
    print(f"{word:<7} {check.name} ({time.monotonic() - start:.1f}s){': ' + note if note else ''}", flush=True)
    for line in output:
      print(f"        {line}")
    passed += word == "PASS"
    failed += word != "PASS"
  print(f"{passed} passed, {failed} failed")
  return 1 if failed else 0


if __name__ == "__main__":
  sys.exit(main())
