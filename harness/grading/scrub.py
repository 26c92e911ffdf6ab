"""scrub.py: what the grade repeats of a test's output, capped and cleaned.

Every text that comes from a run (cmocka's messages, a driver's last lines, the compiler's
diagnostics, a worker's stderr) passes through here before it reaches the console or
results.json: control characters are dropped, the grader's own paths (its tree, the scratch copy)
become short names, each line is cut at LINE_CHARS and each block at a number of lines, and the
whole of one test's output at TEST_CHARS. A submission can print only its own output, and not much
of it.
"""
import re

LINE_CHARS = 300
TEST_CHARS = 6000
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]|\x1b\[[0-9;?]*[A-Za-z]")
_PATHS = []          # (path, replacement), longest first


def hide_path(path, name):
  """From now on, path (and what lies under it) is shown as name."""
  path = str(path).rstrip("/")
  if path and path != "/" and all(p != path for p, _ in _PATHS):
    _PATHS.append((path, name))
    _PATHS.sort(key=lambda pr: -len(pr[0]))


def forget_path(path):
  path = str(path).rstrip("/")
  _PATHS[:] = [(p, n) for p, n in _PATHS if p != path]


def line(text, width=LINE_CHARS):
  text = CONTROL.sub("", text.replace("\t", "  "))
  for path, name in _PATHS:
    text = text.replace(path + "/", name and name + "/").replace(path, name or ".")
  return text if len(text) <= width else text[:width - 3] + "..."


def lines(items, most):
  """Scrubbed lines, at most `most` of them (then one line saying how many more)."""
  out = [line(l) for l in items[:most]]
  if len(items) > most:
    out.append(f"... {len(items) - most} more lines")
  return out


def text(block, most):
  return "\n".join(lines(block.splitlines(), most))


def test_output(text_):
  """One test's whole output for results.json, cut at TEST_CHARS."""
  if len(text_) <= TEST_CHARS:
    return text_
  return text_[:TEST_CHARS] + f"\n... [{len(text_) - TEST_CHARS} characters cut]"
