"""sandbox.py: runs one test command in its own process group, with limits.

Each run gets a fresh working directory, a fresh JIT cache (mode 0700), a scrubbed environment
(a short allow-list plus what the test needs), resource limits (address space, CPU time, file
size, no core files) and a wall-clock timeout, after which the whole process group is killed.
Output goes to files in the run directory, so a test that prints without end meets the file
size limit instead of filling memory. With run_as (root only), the command runs as that user.
"""
import os
import pwd
import resource
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass

TIMEOUT_SCALE_ENV = "UOPC_GRADE_TIMEOUT_SCALE"
PASS_THROUGH = ("CUDA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH", "LD_LIBRARY_PATH",
                "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES")
AS_LIMIT = 8 << 30          # bytes of address space (not applied to GPU tests: the driver maps more)
FSIZE_LIMIT = 256 << 20     # bytes any one file may grow to, output files included
NPROC_LIMIT = 256          # processes of the run_as user (only with run_as)
OUTPUT_KEEP = 64 << 10      # bytes of output kept for the report, from the head and the tail


@dataclass
class Outcome:
  """What one run did: exit status or signal, whether it timed out, its output."""
  returncode: int
  timed_out: bool
  elapsed: float
  stdout: str
  stderr: str

  @property
  def signal(self):
    return -self.returncode if self.returncode < 0 else 0


def timeout_scale():
  try:
    return max(float(os.environ.get(TIMEOUT_SCALE_ENV, "1")), 0.1)
  except ValueError:
    return 1.0


def base_env(home, cache):
  """The scrubbed environment every test starts from."""
  env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "TMPDIR": home, "LANG": "C.UTF-8",
         "UOPC_CACHE_DIR": cache, "PYTHONDONTWRITEBYTECODE": "1"}
  if os.path.isdir("/usr/local/cuda/bin"):
    env["PATH"] += ":/usr/local/cuda/bin"
  env.update({k: os.environ[k] for k in PASS_THROUGH if k in os.environ})
  return env


def _limits(cpu_seconds, address_space, user):
  def apply():
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 5))
    resource.setrlimit(resource.RLIMIT_FSIZE, (FSIZE_LIMIT, FSIZE_LIMIT))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if address_space:
      resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
    if user:   # a dedicated user: its process count is the test's own, so a fork bomb stops here
      resource.setrlimit(resource.RLIMIT_NPROC, (NPROC_LIMIT, NPROC_LIMIT))
      os.setgroups([])
      os.setgid(user.pw_gid)
      os.setuid(user.pw_uid)
  return apply


class RunDir:
  """A fresh working directory with a fresh cache inside; removed by close()."""

  def __init__(self, user=None):
    self.path = tempfile.mkdtemp(prefix="uopc-grade-run-")
    self.home = os.path.join(self.path, "home")
    self.cache = os.path.join(self.path, "cache")
    os.mkdir(self.home, 0o700)
    os.mkdir(self.cache, 0o700)
    if user:
      for p in (self.path, self.home, self.cache):
        os.chown(p, user.pw_uid, user.pw_gid)

  def env(self, **extra):
    return dict(base_env(self.home, self.cache), **extra)

  def close(self):
    shutil.rmtree(self.path, ignore_errors=True)


def lookup_user(name):
  """The passwd entry for run_as; None for no switch. Raises KeyError with a readable message."""
  if not name:
    return None
  if os.geteuid() != 0:
    raise KeyError(f"--run-as {name} needs root")
  try:
    return pwd.getpwnam(name)
  except KeyError:
    raise KeyError(f"there is no user {name!r} (autograder/setup.sh creates uopc-student)") from None


def run(argv, rundir, env, timeout, stdin_text="", gpu=False, user=None, merge=False):
  """Runs argv in rundir.path; returns an Outcome (with merge, stderr shares stdout's file, in
  the order written). Never raises for what the test does."""
  timeout *= timeout_scale()
  out_path, err_path = os.path.join(rundir.path, "stdout"), os.path.join(rundir.path, "stderr")
  start = time.monotonic()
  with open(out_path, "wb") as out, open(err_path, "wb") as err:
    try:
      proc = subprocess.Popen(argv, cwd=rundir.path, env=env, stdin=subprocess.PIPE, stdout=out,
                              stderr=out if merge else err, start_new_session=True,
                              preexec_fn=_limits(int(timeout) + 5, None if gpu else AS_LIMIT, user))
    except OSError as e:
      return Outcome(127, False, 0.0, "", f"cannot start {argv[0]}: {e}")
    timed_out = False
    try:
      proc.communicate(stdin_text.encode(), timeout=timeout)
    except subprocess.TimeoutExpired:
      timed_out = True
    except BrokenPipeError:
      pass
    _kill_group(proc.pid)
    proc.wait()
  return Outcome(proc.returncode, timed_out, time.monotonic() - start, _read(out_path), _read(err_path))


def _kill_group(pgid):
  try:
    os.killpg(pgid, signal.SIGKILL)
  except (ProcessLookupError, PermissionError):
    pass


def _read(path):
  """The file's text, its middle cut when it is long."""
  with open(path, "rb") as f:
    data = f.read(OUTPUT_KEEP)
    rest = f.read()
  if rest:
    tail = rest[-OUTPUT_KEEP:]
    data += f"\n... [{len(rest) - len(tail)} bytes cut] ...\n".encode() + tail
  return data.decode(errors="replace")


def signal_name(number):
  try:
    return signal.Signals(number).name
  except ValueError:
    return f"signal {number}"
