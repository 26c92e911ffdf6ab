"""sandbox.py: runs one command of the grade (a build, a test, a check's worker) contained.

With bubblewrap (Debian's `bubblewrap`; tools/setup.sh installs it) every run gets its own mount,
PID, network, IPC and UTS namespaces: only /usr, a few files of /etc, the Python the worker needs
and the paths the run names are visible, all read-only except its fresh run directory; /tmp and
/dev/shm are private and small; no network; when the command ends, the namespace's init dies and
takes every process it left behind (a setsid daemon included). The command runs as an
unprivileged user: --run-as's, or `nobody` when the grader is root, or the grader's own user in a
user namespace when it is not. Where bwrap cannot run (a container that forbids namespaces), or
with UOPC_GRADE_SANDBOX=off, the fallback is a process group with the same resource limits, and
the grade says so (describe()).

Every run also has resource limits (CPU time, file size, address space, process count, no core
files), a scrubbed environment, a wall-clock timeout and its output in files. For the whole grade,
a cgroup caps memory and processes where this machine lets the grader make one.
"""
import atexit
import contextlib
import os
import pwd
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

TIMEOUT_SCALE_ENV = "UOPC_GRADE_TIMEOUT_SCALE"
SANDBOX_ENV = "UOPC_GRADE_SANDBOX"          # "off": use the fallback even where bwrap works
PASS_THROUGH = ("CUDA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH", "LD_LIBRARY_PATH",
                "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES")
AS_LIMIT = 8 << 30          # bytes of address space (not applied to GPU tests: the driver maps more)
FSIZE_LIMIT = 256 << 20     # bytes any one file may grow to, output files included
NPROC_LIMIT = 256           # processes of the sandbox user
TMP_SIZE = 512 << 20        # bytes of the private /tmp and /dev/shm
GRADE_MEMORY = 8 << 30      # bytes for every process of one grade together (cgroup)
GRADE_PIDS = 512            # processes of one grade together (cgroup)
OUTPUT_KEEP = 64 << 10      # bytes of output kept for the report, from the head and the tail
CHANNEL_FD = 1000           # where a run's channel socket lands (grade_hook.c's GRADE_HOOK_FD)
ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives",
             "/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/localtime")


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


@dataclass
class Mounts:
  """What a bwrap run sees besides the system: read-only and writable paths (bound at the same
  place), paths hidden under an empty directory, paths shown again inside those, paths
  inside the writable ones made read-only (lock), and (source, path) pairs: a file bound
  read-only over another, so that it is seen at that path (over; an experiment's broken
  library in place of the lab's)."""
  ro: list = field(default_factory=list)
  rw: list = field(default_factory=list)
  hide: list = field(default_factory=list)
  show: list = field(default_factory=list)
  lock: list = field(default_factory=list)
  over: list = field(default_factory=list)


# Every time limit of a grade is its manifest's, times a scale measured once, at the start: the
# median of five compiles of a small kernel (what the slow tests spend their time on) against
# the same compile on the development machine, idle. So a grade on a busy or slow machine gets
# the time it needs, never less than the manifest's, and a verdict does not depend on the
# machine's speed. UOPC_GRADE_TIMEOUT_SCALE=x sets the scale instead (at least 0.1).
CALIBRATION_SOURCE = ("#include <stdint.h>\nvoid kernel(float *restrict out, const float *restrict x, int64_t n) {\n"
                      "  for (int64_t i = 0; i < n; i++) out[i] = x[i] * x[i] + 1.0f;\n}\n")
CALIBRATION_BASELINE_S = 0.030   # gcc 12 -O2 -shared of it: 2 cores of an AMD EPYC, idle
CALIBRATION_MAX = 8.0
_scale = None


def _measured_scale():
  """(scale, seconds of the median compile), or (1, None) when gcc cannot be run."""
  with tempfile.TemporaryDirectory(prefix="uopc-calibrate-") as d:
    src = os.path.join(d, "k.c")
    with open(src, "w") as f:
      f.write(CALIBRATION_SOURCE)
    times = []
    for k in range(5):
      start = time.monotonic()
      done = subprocess.run(["gcc", "-O2", "-fPIC", "-shared", "-o", os.path.join(d, f"k{k}.so"), src],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
      if done.returncode != 0:
        return 1.0, None
      times.append(time.monotonic() - start)
  median = sorted(times)[2]
  return min(max(median / CALIBRATION_BASELINE_S, 1.0), CALIBRATION_MAX), median


def _knob():
  """UOPC_GRADE_TIMEOUT_SCALE as a number (at least 0.1), or None when unset or not a number."""
  try:
    return max(float(os.environ[TIMEOUT_SCALE_ENV]), 0.1)
  except (KeyError, ValueError):
    return None


def timeout_scale():
  """The factor every time limit of this grade is multiplied by: the knob when it is set, else
  the measurement (taken once per process)."""
  global _scale
  if _knob() is not None:
    return _knob()
  if _scale is None:
    _scale = _measured_scale()
  return _scale[0]


def timeout_scale_text():
  """How the scale was chosen, for the grade's first line."""
  scale = timeout_scale()
  if _knob() is not None:
    return f"timeout scale {scale:g} ({TIMEOUT_SCALE_ENV})"
  if _scale[1] is None:
    return f"timeout scale {scale:g} (gcc could not be timed)"
  return (f"timeout scale {scale:.2g} (a kernel compiles in {_scale[1] * 1000:.0f} ms here, "
          f"{CALIBRATION_BASELINE_S * 1000:.0f} ms on the reference machine; {TIMEOUT_SCALE_ENV}=x sets it)")


def limit_text(seconds):
  """A time limit as a timeout message states it: the limit in force, and the knob that moves it
  (every limit of a grade, and of the harness checks, is its own times the scale)."""
  scale = timeout_scale()
  how = f"{TIMEOUT_SCALE_ENV}={scale:g}" if _knob() is not None else f"the scale {scale:.2g} measured at the start"
  return (f"{seconds * scale:.3g}s (its limit, {seconds:g}s, times {how}; {TIMEOUT_SCALE_ENV}=x sets the scale: "
          f"a machine busier than when the grade started may need more)")


def base_env(home, cache):
  """The scrubbed environment every test starts from."""
  env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "TMPDIR": "/tmp", "LANG": "C.UTF-8",
         "UOPC_CACHE_DIR": cache, "PYTHONDONTWRITEBYTECODE": "1"}
  if os.path.isdir("/usr/local/cuda/bin"):
    env["PATH"] += ":/usr/local/cuda/bin"
  env.update({k: os.environ[k] for k in PASS_THROUGH if k in os.environ})
  return env


# ---- who runs student code ------------------------------------------------------------------

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


def sandbox_user(user):
  """Who student code runs as: user (--run-as), else nobody when the grader is root (inside
  bwrap only: outside it nobody could not reach the grader's Python), else the grader itself."""
  if user or os.geteuid() != 0 or not jail().bwrap:
    return user
  try:
    return pwd.getpwnam("nobody")
  except KeyError:
    return None


# ---- bubblewrap -------------------------------------------------------------------------------

class Jail:
  """bwrap when it works here, else the fallback; probed once per process (jail())."""

  def __init__(self):
    self.bwrap = shutil.which("bwrap")
    self.reason = ""
    if os.environ.get(SANDBOX_ENV) == "off":
      self.bwrap, self.reason = None, f"{SANDBOX_ENV}=off"
    elif not self.bwrap:
      self.reason = "bwrap is not installed (apt-get install bubblewrap; tools/setup.sh does)"
    else:
      try:
        probe = subprocess.run(self.argv(Mounts(), None, False) + ["/bin/true"], capture_output=True,
                               text=True, timeout=30)
        if probe.returncode != 0:
          self.bwrap, self.reason = None, f"bwrap cannot run here: {probe.stderr.strip()[:200]}"
      except (OSError, subprocess.TimeoutExpired) as e:
        self.bwrap, self.reason = None, f"bwrap cannot run here: {e}"

  def argv(self, mounts, user, gpu):
    """bwrap's command line up to (not including) the command."""
    root = os.geteuid() == 0
    # As root, bwrap needs no user namespace, and setpriv drops to the sandbox user after the
    # mounts; as a user, bwrap makes a user namespace and the command keeps that user's id.
    args = [self.bwrap, "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
            "--unshare-cgroup-try", "--die-with-parent", "--new-session"]
    if not root:
      args.append("--unshare-user")
    args += ["--ro-bind", "/usr", "/usr"]
    for link in ("bin", "lib", "lib64", "sbin"):
      target = os.readlink(f"/{link}") if os.path.islink(f"/{link}") else None
      if target:
        args += ["--symlink", target, f"/{link}"]
      elif os.path.isdir(f"/{link}"):
        args += ["--ro-bind", f"/{link}", f"/{link}"]
    for path in ETC_FILES:
      if os.path.exists(path):
        args += ["--ro-bind", path, path]
    args += ["--dev", "/dev", "--proc", "/proc"]
    args += ["--perms", "1777", "--size", str(TMP_SIZE), "--tmpfs", "/tmp",
             "--perms", "1777", "--size", str(TMP_SIZE), "--tmpfs", "/dev/shm"]
    if gpu:
      for dev in sorted(os.listdir("/dev")):
        if dev.startswith("nvidia"):
          args += ["--dev-bind", f"/dev/{dev}", f"/dev/{dev}"]
    made, bound = {"/", "/tmp", "/dev", "/proc", "/etc"}, {"/usr"}
    for how, paths in (("--ro-bind", python_paths() + mounts.ro), ("--bind", mounts.rw)):
      for path in paths:
        args += _parents(path, made, bound) + [how, path, path]
        bound.add(path)
    for path in mounts.hide:
      args += ["--tmpfs", path]
    for path in mounts.show:   # its directories inside the hidden one are new: make them 0755
      under = [h for h in mounts.hide if path.startswith(h + "/")]
      for d in _ancestors(os.path.dirname(path)):
        if under and d.startswith(under[0] + "/"):
          args += ["--perms", "0755", "--dir", d]
      args += ["--ro-bind", path, path]
    for path in mounts.lock:
      args += ["--ro-bind", path, path]
    for src, path in mounts.over:
      args += ["--ro-bind", src, path]
    if root and user:
      args += ["--", "/usr/bin/setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}",
               "--clear-groups", "--no-new-privs", "--inh-caps=-all", "--bounding-set=-all"]
    elif root:   # no user to become (no `nobody` here): root, but without a capability
      args += ["--cap-drop", "ALL"]
    return args + ["--"]


def _parents(path, made, bound):
  """--dir for each ancestor of path that bwrap would make itself (as 0700): not one already made
  or bound, nor one inside a bound directory."""
  out = []
  for d in _ancestors(os.path.dirname(path)):
    if d not in made and d not in bound and not any(d.startswith(b + "/") for b in bound):
      made.add(d)
      out += ["--perms", "0755", "--dir", d]
  return out


def _ancestors(path):
  parts = [p for p in path.strip("/").split("/") if p]
  return ["/" + "/".join(parts[:k]) for k in range(1, len(parts) + 1)]


def python():
  """This Python (its venv included) by a path a sandbox can see: the venv's real place, not a
  link inside the grader's tree."""
  return os.path.join(os.path.realpath(sys.prefix), "bin", "python3")


def python_paths():
  """What a sandboxed Python needs: the venv and the installation it points to."""
  paths = {os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix)}
  return sorted(p for p in paths if not p.startswith("/usr/") and p != "/usr")


_JAIL = None


def jail():
  global _JAIL
  if _JAIL is None:
    _JAIL = Jail()
  return _JAIL


def describe(user=None):
  """The lines a grade prints about its containment."""
  j, who = jail(), sandbox_user(user)
  name = f"as {who.pw_name}" if who else "as the grader's own user"
  if j.bwrap:
    line = (f"sandbox: bubblewrap for every build and test ({name}): private /tmp and /dev/shm, "
            f"PID namespace, no network, the grader's files read-only or absent")
  else:
    GRADE_LIMITS.ensure()
    left = "what a test leaves running is killed through the grade's cgroup" if GRADE_LIMITS.dirs else \
           "what a test leaves running is killed as --run-as's processes" if who else \
           "a process that leaves its group can outlive its test"
    line = (f"sandbox: NONE ({j.reason}); falling back to a process group and resource limits ({name}): "
            f"{left}" + ("" if who else ", and student code can read and write what the grader can"))
  return [line, f"limits: {GRADE_LIMITS.describe()}"]


# ---- the whole grade's cgroup -------------------------------------------------------------------

class GradeLimits:
  """A cgroup (v2, else v1's memory and pids hierarchies) holding every sandboxed process of this
  grade, capped at GRADE_MEMORY and GRADE_PIDS; nothing where the grader cannot make one."""

  def __init__(self):
    self.dirs, self.made, self.note = [], False, ""

  def ensure(self):
    if self.made:
      return
    self.made = True
    atexit.register(self.remove)
    name = f"uopc-{os.getpid()}"   # /proc/self/cgroup shows it where bwrap cannot unshare the cgroup
    v2 = "/sys/fs/cgroup/cgroup.controllers"
    try:
      if os.path.exists(v2) and {"memory", "pids"} <= set(open(v2).read().split()):
        self.dirs = [_mkcg(f"/sys/fs/cgroup/{name}", {"memory.max": GRADE_MEMORY, "pids.max": GRADE_PIDS})]
      else:
        self.dirs = [_mkcg(f"/sys/fs/cgroup/memory/{name}", {"memory.limit_in_bytes": GRADE_MEMORY}),
                     _mkcg(f"/sys/fs/cgroup/pids/{name}", {"pids.max": GRADE_PIDS})]
    except OSError as e:
      self.remove()
      self.note = f"no whole-grade cap ({e.strerror or e}): per-process limits only"

  def enter(self):
    """In the child, before exec: joins the grade's cgroups (errors ignored)."""
    for d in self.dirs:
      try:
        with open(os.path.join(d, "cgroup.procs"), "w") as f:
          f.write(str(os.getpid()))
      except OSError:
        pass

  def kill_all(self):
    """The fallback's last word after a run: kills what is left in the grade's cgroup (runs are
    sequential, so all of it is that run's). False when there is no cgroup."""
    for d in self.dirs:
      try:
        for pid in open(os.path.join(d, "cgroup.procs")).read().split():
          os.kill(int(pid), signal.SIGKILL)
      except OSError:
        pass
    return bool(self.dirs)

  def remove(self):
    """Removes the cgroups once their last process has gone (a killed one may take a moment)."""
    for d in self.dirs:
      for _ in range(50):
        try:
          os.rmdir(d)
          break
        except OSError:
          time.sleep(0.02)
    self.dirs = []

  def describe(self):
    self.ensure()
    per = f"per process {AS_LIMIT >> 30} GiB address space, {NPROC_LIMIT} processes of the sandbox user"
    if self.dirs:
      return f"{per}; the whole grade {GRADE_MEMORY >> 30} GiB and {GRADE_PIDS} processes (cgroup)"
    return f"{per}; {self.note}"


def _mkcg(path, limits):
  os.mkdir(path)
  for key, value in limits.items():
    with open(os.path.join(path, key), "w") as f:
      f.write(str(value))
  return path


GRADE_LIMITS = GradeLimits()


def grades_that_fit():
  """How many grades of GRADE_MEMORY this machine's memory holds at once (--jobs' ceiling)."""
  try:
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
  except (ValueError, OSError):
    return 1
  return max(1, total // GRADE_MEMORY)


# ---- one run ----------------------------------------------------------------------------------

def _limits(cpu_seconds, address_space, user, switch_user):
  def apply():
    GRADE_LIMITS.enter()
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 5))
    resource.setrlimit(resource.RLIMIT_FSIZE, (FSIZE_LIMIT, FSIZE_LIMIT))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if address_space:
      resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
    if user:   # the user root becomes (a user's own count includes their whole session)
      resource.setrlimit(resource.RLIMIT_NPROC, (NPROC_LIMIT, NPROC_LIMIT))
    if switch_user:
      os.setgroups([])
      os.setgid(user.pw_gid)
      os.setuid(user.pw_uid)
  return apply


class RunDir:
  """A fresh working directory with a fresh cache inside; removed by close()."""

  def __init__(self, user=None, parent=None):
    # No "grade" in a path student code sees (its cwd, HOME, UOPC_CACHE_DIR: issue #32, class 4).
    self.path = tempfile.mkdtemp(prefix="run-" if parent else "uopc-run-", dir=parent)
    self.home = os.path.join(self.path, "home")
    self.cache = os.path.join(self.path, "cache")
    os.chmod(self.path, 0o755)
    os.mkdir(self.home, 0o700)
    os.mkdir(self.cache, 0o700)
    self.user = sandbox_user(user)
    if self.user:
      for p in (self.path, self.home, self.cache):
        os.chown(p, self.user.pw_uid, self.user.pw_gid)

  def env(self, **extra):
    return dict(base_env(self.home, self.cache), **extra)

  def output(self, name):
    """Where the run's stdout or stderr (or a NumPy check's report) goes: beside the run
    directory, not in it, so that the sandbox does not show it by a path. The process still holds it open (descriptors 1 and 2);
    see _private for why it cannot read it back."""
    return f"{self.path}.{name}"

  def close(self):
    shutil.rmtree(self.path, ignore_errors=True)
    for name in ("stdout", "stderr", "progress", "report"):
      with contextlib.suppress(OSError):
        os.unlink(self.output(name))


def run(argv, rundir, env, timeout, stdin_text="", gpu=False, user=None, merge=False, mounts=None,
        channel=None):
  """Runs argv in rundir.path, contained; returns an Outcome (with merge, stderr shares stdout's
  file, in the order written). channel: a socket that the command gets as CHANNEL_FD. Never
  raises for what the command does."""
  timeout *= timeout_scale()
  who = sandbox_user(user)
  mounts = mounts or Mounts()
  j = jail()
  GRADE_LIMITS.ensure()
  if j.bwrap:
    mounts = Mounts(mounts.ro, [rundir.path] + mounts.rw, mounts.hide, mounts.show, mounts.lock, mounts.over)
    argv = j.argv(mounts, who, gpu) + list(argv)
  out_path, err_path = rundir.output("stdout"), rundir.output("stderr")
  start = time.monotonic()
  with _private(out_path) as out, _private(err_path) as err:
    proc = _start(argv, rundir, env, timeout, out, err if not merge else out, gpu, who, not j.bwrap, channel)
    if isinstance(proc, Outcome):
      return proc
    timed_out = False
    try:
      proc.communicate(stdin_text.encode(), timeout=timeout)
    except subprocess.TimeoutExpired:
      timed_out = True
    except BrokenPipeError:
      pass
    _kill_group(proc.pid)
    proc.wait()
  status = proc.returncode
  if j.bwrap and 128 < status <= 128 + 64:   # bwrap passes on a death by signal as 128 + the signal
    status = 128 - status
  if not j.bwrap:
    GRADE_LIMITS.kill_all() or (who and sweep_user(who.pw_uid))
  return Outcome(status, timed_out, time.monotonic() - start, _read(out_path), _read(err_path))


def _private(path):
  """path opened for writing, mode 0600: a sandbox user other than the grader's (nobody, or
  --run-as's) cannot open it again through /proc/self/fd/1 and read what the run printed so far,
  such as cmocka's '[ RUN      ] <case>' line, the name of the case it is in (issue #32, class 4).
  Run as the grader's own user (a student grading their own tree), it could."""
  return os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb")


def _start(argv, rundir, env, timeout, out, err, gpu, who, switch_user, channel):
  """The Popen of a run, or an Outcome saying why it could not start."""
  fds = ()
  if channel is not None:
    os.dup2(channel.fileno(), CHANNEL_FD, inheritable=False)
    fds = (CHANNEL_FD,)
  try:
    return subprocess.Popen(argv, cwd=rundir.path, env=env, stdin=subprocess.PIPE, stdout=out, stderr=err,
                            start_new_session=True, pass_fds=fds,
                            preexec_fn=_limits(int(timeout) + 5, None if gpu else AS_LIMIT, who,
                                               switch_user and who is not None))
  except OSError as e:
    return Outcome(127, False, 0.0, "", f"cannot start {argv[0]}: {e}")
  finally:
    if fds:
      os.close(CHANNEL_FD)


def _kill_group(pgid):
  try:
    os.killpg(pgid, signal.SIGKILL)
  except (ProcessLookupError, PermissionError):
    pass


def sweep_user(uid):
  """Without a cgroup, the fallback kills every process of the --run-as user after a run (a
  dedicated user's processes are all the test's; with --jobs, all the grades' at once)."""
  if uid == os.geteuid():
    return
  for pid in os.listdir("/proc"):
    try:
      if pid.isdigit() and os.stat(f"/proc/{pid}").st_uid == uid:
        os.kill(int(pid), signal.SIGKILL)
    except OSError:
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


# Lab code is built with -fsanitize=bounds in trap mode (the Makefile's LAB_BOUNDS): an index
# outside an array of known size ends in an illegal instruction, which a student should read as such.
BOUNDS_TRAP = ("an index outside an array of known size, most likely: lab code is built with "
               "-fsanitize=bounds, which stops there; `make SAN=1 test-c` names the line")


def signal_name(number):
  try:
    name = signal.Signals(number).name
  except ValueError:
    return f"signal {number}"
  return f"{name} ({BOUNDS_TRAP})" if number == signal.SIGILL else name
