"""witness.py: counts a driver run's compiles from outside the student's reach (issue #32, class 5).

A run's cache directory is the student's to write: its process can delete the entries it made or
make fake ones (mkdir, mknod, a copy), so the grader does not count compiles there. Instead, in a
graded driver run, witness.c sits at the C compiler driver's path inside the sandbox (bound over
gcc's real file), and each compile the runtime spawns first sends one line, carrying a per-grade
secret, to a socket this process listens on; only then does it exec the real driver. The grader
counts those lines. What the student's process could use to forge or dodge them is kept from it:

  - the witness is execute-only (mode 0111), so its secret, the socket's path and the real
    driver's path cannot be read from the file or from the running process;
  - the socket and the real driver (a copy, execute-only too) lie under random names in a
    directory the sandbox user may cross but not list; the sandbox's own network namespace keeps
    the socket out of its /proc/net/unix;
  - a compile the witness cannot record does not run.

A record is sent when a compile starts, so deleting its entry afterwards changes nothing, and a
fake entry is no record at all. Built once per grader process (the first driver run); without
bubblewrap nothing can be bound over the compiler, and the grade counts cache entries as before
(available() is then None, and the grade's sandbox line already says the fallback trusts more).

What it does not see: a compile by a compiler other than gcc's file (student code that sets
UOPC_CC to one), which then shows only in the process's own counters. What it would see too
much of: nvcc's own calls of gcc as its host compiler; no graded driver or NumPy check compiles
with nvcc (those runs have no GPU and use gcc), so none is miscounted today.
"""
import atexit
import os
import secrets
import shutil
import socket
import stat
import subprocess
import tempfile
import time
from pathlib import Path

from harness.grading import sandbox

SOURCE = Path(__file__).with_name("witness.c")
BACKLOG = 4096          # compiles one run may start before the grader reads any (runs compile dozens)
RECORD_MAX = 256


class Witness:
  """The built witness of this grade: the paths a driver run binds, and the socket's records."""

  def __init__(self):
    self.top = tempfile.mkdtemp(prefix="uopc-")
    self.secret = secrets.token_hex(16)
    self.compiler = os.path.realpath(shutil.which("gcc") or "/usr/bin/gcc")
    hidden = os.path.join(self.top, secrets.token_hex(8))
    self.real = os.path.join(hidden, "gcc")
    self.binary = os.path.join(self.top, "w")
    self.socket_path = os.path.join(self.top, "s-" + secrets.token_hex(8))
    self.listener = None
    try:
      os.mkdir(hidden)
      shutil.copyfile(self.compiler, self.real)
      self._build()
      self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
      self.listener.bind(self.socket_path)
      self.listener.listen(BACKLOG)
      self.listener.setblocking(False)
    except OSError:
      self.remove()
      raise
    os.chmod(self.socket_path, 0o777)     # --run-as's user and nobody connect to it
    for path in (self.real, self.binary, hidden, self.top):
      os.chmod(path, stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    atexit.register(self.remove)

  def _build(self):
    defines = {"WITNESS_SECRET": self.secret, "WITNESS_SOCKET": self.socket_path, "WITNESS_REAL": self.real}
    argv = [self.compiler, "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-o", self.binary, str(SOURCE)]
    argv[1:1] = [f'-D{k}="{v}"' for k, v in defines.items()]
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
      raise OSError(f"the compile witness did not build: {done.stderr.strip()[:300]}")

  def mounts(self, mounts):
    """mounts plus the witness: its directory read-only, and the witness over the compiler."""
    return sandbox.Mounts(mounts.ro + [self.top], mounts.rw, mounts.hide, mounts.show, mounts.lock,
                          mounts.over + [(self.binary, self.compiler)])

  def take(self):
    return take(self.listener, self.secret)

  def handoff(self):
    """(the listening socket's descriptor, {SECRET_ENV: the secret}) for a trusted process of the
    grader's (a NumPy check's half outside the sandbox) that counts a live worker's compiles."""
    return self.listener.fileno(), {SECRET_ENV: self.secret}

  def remove(self):
    if self.listener:
      self.listener.close()
    os.chmod(self.top, 0o700)
    for path in Path(self.top).iterdir():
      if path.is_dir():
        path.chmod(0o700)
    shutil.rmtree(self.top, ignore_errors=True)


SECRET_ENV = "UOPC_HARNESS_WITNESS"   # the secret, in the environment of the grader's own processes only
TAKE_BUDGET_S = 10.0                  # a take's longest wait on connections held open without a record


def take(listener, secret):
  """The compiles recorded on listener since the last take: the lines carrying secret of every
  connection waiting. A compile's record is sent and its connection closed before the compiler
  starts, so every compile that has finished is waiting here; a connection held open by student
  code without a record costs a short wait (at most TAKE_BUDGET_S in all) and counts nothing."""
  count, deadline = 0, time.monotonic() + TAKE_BUDGET_S
  while time.monotonic() < deadline:
    try:
      conn, _ = listener.accept()
    except (BlockingIOError, InterruptedError):
      break
    with conn:
      conn.settimeout(0.2)
      try:
        count += conn.recv(RECORD_MAX) == f"{secret} compile\n".encode()
      except OSError:
        pass
  return count


class Handed:
  """The witness as a trusted process of the grader sees it (handoff()): take() only."""

  def __init__(self, fd, secret):
    self.listener = socket.socket(fileno=fd)
    self.listener.setblocking(False)
    self.secret = secret

  def take(self):
    return take(self.listener, self.secret)


_WITNESS = None
_WHY_NOT = ""


def available():
  """This grade's Witness, built on first use; None where it cannot work (no bubblewrap, or it
  did not build: why_not() says which)."""
  global _WITNESS, _WHY_NOT
  if _WITNESS is None and not _WHY_NOT:
    if not sandbox.jail().bwrap:
      _WHY_NOT = f"no sandbox to bind it in ({sandbox.jail().reason})"
    else:
      try:
        _WITNESS = Witness()
      except OSError as e:
        _WHY_NOT = str(e)
  return _WITNESS


def why_not():
  return _WHY_NOT
