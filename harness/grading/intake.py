"""intake.py: reads a submission's student files, and nothing else, safely.

The grader reads only the names a lab's manifest lists (student_files), at three places a
submission may hold them: labs/<lab>/x.c (a tree), <lab>/x.c (a lab folder) or x.c (a flat
upload). Each must be a regular file reached without following a link: every directory on the
way and the file are opened with O_NOFOLLOW, so a symbolic link (to solutions/ or anywhere) is
refused, as are hard links (a file with more than one name), devices, FIFOs and files over
MAX_BYTES. With --run-as, the reading is done by a forked copy of the grader running as that
user, so a submission cannot make root read what its user could not. Anything refused is named
in the feedback ("refused labs/23.1-symbolic-dims/sym_dim.c: a symbolic link") and graded as
missing.
"""
import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

MAX_BYTES = 256 << 10          # a student file above this is refused (the largest reference is ~20 KB)
WHERE = ("labs/{lab_dir}/{name}", "{lab_dir}/{name}", "{name}")
# A student's experiment test (kind "experiment"): in a tree, in a lab folder, or flat.
TEST_WHERE = ("tests/student/{lab}/{name}", "{lab_dir}/tests/{name}", "{lab}/{name}", "{name}")


class IntakeError(Exception):
  """The submission as a whole cannot be read (missing, not a directory)."""


@dataclass
class Intake:
  """What was read: {name: bytes} of the files found, and refusals as readable lines."""
  files: dict = field(default_factory=dict)
  refused: list = field(default_factory=list)


def check_submission(path):
  """Raises IntakeError when the submission directory itself cannot be graded."""
  p = Path(path)
  if not p.exists():
    raise IntakeError(f"the submission {path} does not exist")
  if not p.is_dir():
    raise IntakeError(f"the submission {path} is not a directory (give the folder that holds the .c files)")


def read_files(submission, lab_dir, names, user=None, where=WHERE):
  """An Intake of names (a lab's student files) from submission; as user when given (root only).
  where: the places tried in order ({lab_dir}, {lab} ("23.2") and {name} filled in)."""
  if user is None or os.geteuid() != 0:
    return _read_all(str(submission), lab_dir, names, where)
  r, w = os.pipe()
  pid = os.fork()
  if pid == 0:   # the child: drop to the user, read, send everything back, exit
    try:
      os.close(r)
      os.setgroups([])
      os.setgid(user.pw_gid)
      os.setuid(user.pw_uid)
      got = _read_all(str(submission), lab_dir, names, where)
      payload = json.dumps({"files": {k: v.decode("latin-1") for k, v in got.files.items()},
                            "refused": got.refused}).encode()
      with os.fdopen(w, "wb") as f:
        f.write(payload)
    finally:
      os._exit(0)
  os.close(w)
  with os.fdopen(r, "rb") as f:
    data = f.read(len(names) * (MAX_BYTES * 2 + 4096) + 65536)
  os.waitpid(pid, 0)
  try:
    got = json.loads(data)
    return Intake({k: v.encode("latin-1") for k, v in got["files"].items()}, list(got["refused"]))
  except (ValueError, KeyError, AttributeError):
    return Intake({}, [f"the submission could not be read as user {user.pw_name}"])


def _read_all(submission, lab_dir, names, where=WHERE):
  intake = Intake()
  lab = Path(lab_dir).name.split("-")[0]
  for name in names:
    for pattern in where:
      rel = pattern.format(lab_dir=Path(lab_dir).name, lab=lab, name=name)
      data, why = _read_one(submission, rel)
      if why:
        intake.refused.append(f"refused {rel}: {why}")
        break
      if data is not None:
        intake.files[name] = data
        break
  return intake


def _read_one(root, rel):
  """(bytes, None) for a readable regular file; (None, reason) when refused; (None, None) when
  there is nothing at rel. Never follows a link, at any step."""
  parts = rel.split("/")
  try:
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
  except OSError as e:
    return None, f"cannot open the submission: {e.strerror}"
  try:
    for k, part in enumerate(parts):
      last = k == len(parts) - 1
      flags = os.O_NOFOLLOW | os.O_CLOEXEC | (os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY if last else
                                              os.O_RDONLY | os.O_DIRECTORY)
      try:
        st = os.stat(part, dir_fd=fd, follow_symlinks=False)
      except (FileNotFoundError, NotADirectoryError):
        return None, None
      except OSError as e:
        return None, f"cannot read it: {e.strerror}"
      if stat.S_ISLNK(st.st_mode):
        return None, "a symbolic link" + ("" if last else f" ({'/'.join(parts[:k + 1])})") + \
                     ": the grader reads only regular files"
      if not last and not stat.S_ISDIR(st.st_mode):
        return None, None
      if last and not stat.S_ISREG(st.st_mode):   # refused before it is opened: a device may act on open
        return None, ("a directory" if stat.S_ISDIR(st.st_mode) else "a device, FIFO or socket") + \
                     ", not a regular file"
      try:
        nxt = os.open(part, flags, dir_fd=fd)
      except OSError as e:
        return None, f"cannot read it: {e.strerror}"
      os.close(fd)
      fd = nxt
    return _read_regular(fd)
  finally:
    os.close(fd)


def _read_regular(fd):
  st = os.fstat(fd)
  if not stat.S_ISREG(st.st_mode):
    kind = "a directory" if stat.S_ISDIR(st.st_mode) else "a device, FIFO or socket"
    return None, f"{kind}, not a regular file"
  if st.st_nlink > 1:
    return None, f"a hard link ({st.st_nlink} names for one file): the grader reads only files of one name"
  if st.st_size > MAX_BYTES:
    return None, f"{st.st_size} bytes, above the limit of {MAX_BYTES}"
  data = b""
  while len(data) <= MAX_BYTES and (chunk := os.read(fd, MAX_BYTES + 1 - len(data))):
    data += chunk
  if len(data) > MAX_BYTES:
    return None, f"more than {MAX_BYTES} bytes"
  return data, None
