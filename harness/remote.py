"""remote.py: a lab check's C calls run in a worker process; its judgement stays in the parent.

A check module (harness/check_23_N.py) has two halves. Its `Lab` class makes every call into the
student's library and returns plain data: numbers, strings, lists, dicts, and NumPy arrays. The
checks themselves (the inputs, NumPy's answers, the comparisons, the report) run in a parent
process that never loads the student's code, and reach the Lab only through this module:

    lab = remote.start("harness.check_23_1", build)        # or Local(Lab(build)) in-process
    status, err = lab.launch(name, pairs, out, inputs)     # a call, as if local

Arrays travel by value. An argument that is a NumPy array (or a view of one) is sent with its
whole base buffer; the worker rebuilds the buffer right before a PROT_NONE guard page (so reading
or writing one element past a buffer faults, whatever the value), or, for a check whose code
cares about alignment (keep_alignment), with the same address modulo 64 as the parent's and the
guard as close after it as that allows; it lends the view to the call and sends every buffer
back afterwards; the parent copies them into its own arrays. So the parent sees what the C code did to the memory
it was given, and the student's code can change nothing else the parent holds.

Messages are a 4-byte length, a JSON header and raw buffers; the parent decodes the worker's
answers with limits (MESSAGE_MAX, buffers only of the sizes it sent, errors only of known
classes), never with pickle. A worker that dies or hangs raises WorkerDied in the parent.

    python -m harness.remote MODULE --build DIR        (the worker; its socket is descriptor 1000)
"""
import ctypes
import importlib
import json
import mmap
import os
import socket
import struct
import subprocess
import sys

import numpy as np

CHANNEL_FD = 1000
MESSAGE_MAX = 1 << 30        # a buffer (the parent accepts only the sizes it sent)
HEADER_MAX = 16 << 20        # a message's JSON
PAGE = mmap.PAGESIZE
ALIGN = 64


class WorkerDied(Exception):
  """The worker ended or stopped answering: a crash in C, an exit, a timeout."""


class RemoteError(Exception):
  """An exception the worker raised, of a class the parent does not know."""


# ---- the wire -----------------------------------------------------------------------------------

def _send(sock, header, buffers=()):
  head = json.dumps(header).encode()
  parts = [struct.pack(">II", len(head), len(buffers)), head]
  for buf in buffers:
    parts += [struct.pack(">Q", len(buf)), buf]
  sock.sendall(b"".join(parts))


def _recv_exact(sock, n):
  data = bytearray()
  while len(data) < n:
    chunk = sock.recv(min(n - len(data), 1 << 20))
    if not chunk:
      raise WorkerDied("the worker closed its end")
    data += chunk
  return bytes(data)


def _recv(sock, expect_sizes=None):
  """(header, [buffers]); expect_sizes: the exact sizes the buffers must have (parent side)."""
  size, count = struct.unpack(">II", _recv_exact(sock, 8))
  if size > HEADER_MAX or (expect_sizes is not None and count != len(expect_sizes)):
    raise WorkerDied(f"a malformed message from the worker ({size} bytes, {count} buffers)")
  header = json.loads(_recv_exact(sock, size))
  buffers = []
  for k in range(count):
    (n,) = struct.unpack(">Q", _recv_exact(sock, 8))
    if n > MESSAGE_MAX or (expect_sizes is not None and n != expect_sizes[k]):
      raise WorkerDied("a buffer from the worker of a size the grader did not send")
    buffers.append(_recv_exact(sock, n))
  return header, buffers


def _root(arr):
  base = arr
  while isinstance(base.base, np.ndarray):
    base = base.base
  return base


def _encode(value, roots):
  """value as JSON, arrays as references to their base buffer (added to roots)."""
  if isinstance(value, np.ndarray):
    root = _root(value)
    key = next((k for k, r in enumerate(roots) if r is root), None)
    if key is None:
      roots.append(root)
      key = len(roots) - 1
    offset = value.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    return {"$view": key, "offset": offset, "shape": list(value.shape), "strides": list(value.strides),
            "dtype": value.dtype.str}
  if isinstance(value, np.generic):
    return value.item()
  if isinstance(value, (list, tuple)):
    return [_encode(v, roots) for v in value]
  if isinstance(value, dict):
    return {"$dict": [[_encode(k, roots), _encode(v, roots)] for k, v in value.items()]}
  if isinstance(value, bytes):
    return {"$bytes": value.hex()}
  return value


def _decode(value, views):
  if isinstance(value, list):
    return [_decode(v, views) for v in value]
  if isinstance(value, dict):
    if "$view" in value:
      return views(value)
    if "$bytes" in value:
      return bytes.fromhex(value["$bytes"])
    if "$dict" in value:
      return {_key(_decode(k, views)): _decode(v, views) for k, v in value["$dict"]}
    raise ValueError("an object the protocol does not know")
  return value


def _key(k):
  return tuple(k) if isinstance(k, list) else k


# ---- the worker ---------------------------------------------------------------------------------

class Guarded:
  """A buffer of n bytes that ends right before a PROT_NONE page; with mod, its start has that
  address modulo ALIGN instead, and its end lies as close before the page as that allows."""
  _libc = None

  def __init__(self, data, mod):
    n = len(data)
    pages = (n + ALIGN + PAGE - 1) // PAGE + 1
    self.map = mmap.mmap(-1, pages * PAGE)
    base = ctypes.addressof(ctypes.c_char.from_buffer(self.map))
    guard = base + (pages - 1) * PAGE
    start = guard - n
    if mod is not None:
      start -= (start - mod) % ALIGN
    Guarded._libc = Guarded._libc or ctypes.CDLL(None, use_errno=True)
    Guarded._libc.mprotect(ctypes.c_void_p(guard), ctypes.c_size_t(PAGE), 0)
    self.array = np.frombuffer(self.map, dtype=np.uint8, count=n, offset=start - base)
    self.array[:] = np.frombuffer(data, dtype=np.uint8)


def serve(obj, sock):
  """Answers calls on obj until the parent closes the socket."""
  while True:
    try:
      header, buffers = _recv(sock)
    except WorkerDied:
      return
    roots = [Guarded(b, m) for b, m in zip(buffers, header["mods"])]

    def view(spec):
      return np.ndarray(spec["shape"], np.dtype(spec["dtype"]), buffer=roots[spec["$view"]].array,
                        offset=spec["offset"], strides=spec["strides"])
    _send(sock, _answer(obj, header, view), [bytes(r.array) for r in roots])


def _answer(obj, header, view):
  """The reply to one call: {"ok": result} or {"error": class name, "args": [...]}."""
  try:
    name = header["call"]
    if name.startswith("_"):
      raise AttributeError(f"{name} is not a call of the lab")
    result, arrays = getattr(obj, name)(*_decode(header["args"], view)), []
    reply = {"ok": _encode(result, arrays)}
    if arrays:
      return {"error": "HarnessError", "text": f"{header['call']} returned an array (not allowed)"}
    return reply
  except Exception as e:   # sent to the parent as data, never raised here
    return _error(e)


def _error(e):
  """An exception as data: its class name, its text and its plain attributes."""
  attrs = {k: v for k, v in vars(e).items() if isinstance(v, (str, int, float, bool)) and not k.startswith("_")}
  return {"error": type(e).__name__, "text": str(e), "attrs": attrs}


def worker_main(argv=None):
  import argparse
  ap = argparse.ArgumentParser(description="Serves a lab check's C calls (see harness/remote.py).")
  ap.add_argument("module")
  ap.add_argument("--build", required=True)
  args = ap.parse_args(argv)
  sock = socket.socket(fileno=CHANNEL_FD)
  mod = importlib.import_module(args.module)
  try:
    obj = mod.Lab(args.build)
  except Exception as e:
    _send(sock, _error(e))
    return 0
  _send(sock, {"ok": "ready"})
  serve(obj, sock)
  return 0


# ---- the parent ---------------------------------------------------------------------------------

class Remote:
  """Calls a worker's Lab as if it were local; raises the errors it raised (by class name, from
  `known`), WorkerDied when it is gone."""

  def __init__(self, sock, known, proc=None, timeout=None, keep_alignment=False, limit=""):
    self.sock, self.known, self.proc = sock, {c.__name__: c for c in known}, proc
    self.keep_alignment, self.limit = keep_alignment, limit   # limit: the timeout as a message says it
    self.sock.settimeout(timeout)
    header, _ = self._recv([])
    self._answer(header)

  def __getattr__(self, name):
    if name.startswith("_"):
      raise AttributeError(name)
    return lambda *args: self._call(name, args)

  def _call(self, name, args):
    roots = []
    encoded = _encode(list(args), roots)
    for r in roots:
      if not r.flags.c_contiguous:
        raise ValueError("an array lent to the worker must be a view of a contiguous buffer")
    mods = [r.__array_interface__["data"][0] % ALIGN if self.keep_alignment else None for r in roots]
    try:
      _send(self.sock, {"call": name, "args": encoded, "mods": mods}, [r.tobytes() for r in roots])
    except OSError as e:
      raise WorkerDied(f"the worker is gone ({e.strerror or e})") from None
    header, buffers = self._recv([r.nbytes for r in roots])
    for r, b in zip(roots, buffers):
      r.view(np.uint8).reshape(-1)[:] = np.frombuffer(b, dtype=np.uint8)
    return self._answer(header)

  def _recv(self, sizes):
    try:
      return _recv(self.sock, sizes)
    except socket.timeout:
      raise WorkerDied("the worker stopped answering" + (f": no answer within {self.limit}" if self.limit else "")) \
        from None
    except (OSError, ValueError, struct.error) as e:
      raise WorkerDied(f"the worker's answer is unreadable ({e})") from None

  def _answer(self, header):
    if not isinstance(header, dict):
      raise WorkerDied("a malformed answer from the worker")
    if "ok" in header:
      return _decode(header["ok"], _no_view)
    cls = self.known.get(header.get("error"), RemoteError)
    error = cls.__new__(cls)
    Exception.__init__(error, str(header.get("text", ""))[:4096])
    attrs = header.get("attrs") if isinstance(header.get("attrs"), dict) else {}
    for key, value in list(attrs.items())[:8]:
      if isinstance(key, str) and key.isidentifier() and isinstance(value, (str, int, float, bool)):
        setattr(error, key, value[:4096] if isinstance(value, str) else value)
    raise error

  def close(self):
    try:
      self.sock.close()
    finally:
      if self.proc:
        self.proc.kill()
        self.proc.wait()


def _no_view(spec):
  raise WorkerDied("an array in the worker's answer")


class Local:
  """The same interface on a Lab in this process (the reference's own tests, `make test`)."""

  def __init__(self, lab):
    self.lab = lab

  def __getattr__(self, name):
    return getattr(self.lab, name)

  def close(self):
    pass


def start(module, build, known, timeout=120, keep_alignment=False):
  """A Remote on a worker started here, not sandboxed (a check run by hand or by `make test`;
  the grader starts its workers in the sandbox, harness/grading/checks.py)."""
  ours, theirs = socket.socketpair()
  os.dup2(theirs.fileno(), CHANNEL_FD, inheritable=False)
  try:
    proc = subprocess.Popen([sys.executable, "-m", "harness.remote", module, "--build", str(build)],
                            pass_fds=(CHANNEL_FD,))
  finally:
    os.close(CHANNEL_FD)
    theirs.close()
  from harness.grading import sandbox   # the grader's one timeout scale moves this limit too
  return Remote(ours, known, proc, timeout * sandbox.timeout_scale(), keep_alignment, sandbox.limit_text(timeout))


if __name__ == "__main__":
  sys.exit(worker_main())
