"""quoted.py: the counters the chapters and READMEs quote as the code's output, checked against
what the code prints now (part of `make test` and `make check-examples`).

    .venv/bin/python -m harness.grading.quoted      exit 1 when a quoted counter is not current

"What the code prints" is the goldens (goldens/23.N.json, `make goldens`): each driver's counter
log on a fresh cache (scenario `driver`) and on the same cache again (`driver.warm`), which
`make check-goldens` keeps equal to a run. Reading them costs no run. A text marks what it quotes
with an HTML comment, which Markdown does not show:

    <!-- quoted: 23.5 driver -->
    ```text                               a copy of the log: each `name=value` line of the
    steps=106                             block (fenced or indented) after the marker must be
    ```                                   the golden's value of that counter (its last line, when
                                          a driver prints one as it goes)

    <!-- quoted: 23.5 driver: steps=106; resets=3 -->
    A sentence that says 106 steps ...    claims: each must be the golden's value, and the
                                          paragraph after the marker (markers may stack) must show
                                          each claimed number, in digits or as a word up to twelve

A block of three or more `name=value` lines without a marker is reported too: it looks like a
driver's log that nothing checks. `<!-- not quoted: why -->` before a block says it is not the
goldens' (an illustration, a run by hand); README blocks after `<!-- example: ... -->` are
examples.py's. Timings are not counters and are not checked (they vary).
Prints one line per marker and last `N passed, N failed`.
"""
import json
import re
import sys
from pathlib import Path

from harness.grading.manifest import ROOT

MARKER = re.compile(r"^<!-- quoted: (?P<lab>[\d.]+) (?P<scenario>[\w.]+)(?:: (?P<claims>.+?))? -->$")
# A block that is checked elsewhere (examples.py's expected.log) or is not the drivers' (an
# illustration, a run by hand): the reason is the marker's text.
COVERED = re.compile(r"^<!-- (example: .+|not quoted: .+) -->$")
COUNTER_LINE = re.compile(r"^\s*(?P<name>[a-z][\w ()-]*?)=(?P<value>-?\d+)\s*$")
WORDS = "zero one two three four five six seven eight nine ten eleven twelve".split()
UNMARKED_LOG = 3   # this many name=value lines in a row without a marker look like a quoted log


def texts(root=ROOT):
  """The files that may quote a run: the chapters, the lab READMEs and the top README."""
  found = sorted(root.glob("chapters/*.md")) + sorted(root.glob("labs/*/README.md")) + [root / "README.md"]
  return [p for p in found if p.is_file()]


def goldens(root=ROOT):
  """{lab: {scenario: {counter: value}}} from goldens/*.json."""
  return {json.loads(p.read_text())["lab"]: json.loads(p.read_text())["scenarios"]
          for p in sorted(root.glob("goldens/*.json"))}


def parse_claims(text):
  """[(name, value)] of `a=1; b c=2`, or raises ValueError."""
  claims = []
  for part in text.split(";"):
    m = COUNTER_LINE.match(part.strip())
    if not m:
      raise ValueError(f"'{part.strip()}' is not name=value")
    claims.append((m.group("name").strip(), int(m.group("value"))))
  return claims


def block_after(lines, k):
  """(first, end) of the fenced or indented block after line k (blank lines skipped), or None."""
  start = k + 1
  while start < len(lines) and not lines[start].strip():
    start += 1
  if start < len(lines) and lines[start].startswith("```"):
    end = start + 1
    while end < len(lines) and not lines[end].startswith("```"):
      end += 1
    return start + 1, end
  end = start
  while end < len(lines) and lines[end].startswith("    "):
    end += 1
  return (start, end) if end > start else None


def paragraph_after(lines, k):
  """The text of the paragraph after line k, past any further markers."""
  start = k + 1
  while start < len(lines) and MARKER.match(lines[start]):
    start += 1
  end = start
  while end < len(lines) and lines[end].strip():
    end += 1
  return " ".join(lines[start:end])


def shows(paragraph, value):
  """Whether the paragraph writes value as a number of its own (not a digit of 1060, 10.6 or 6e-7)."""
  if re.search(rf"(?<![\d.\w-]){value}(?![\d\w]|\.\d)", paragraph):
    return True
  return 0 <= value < len(WORDS) and re.search(rf"\b{WORDS[value]}\b", paragraph, re.IGNORECASE) is not None


def current(known, lab, scenario, name):
  """The golden value, or raises KeyError with what is missing."""
  if lab not in known:
    raise KeyError(f"no goldens/{lab}.json")
  if scenario not in known[lab]:
    raise KeyError(f"goldens/{lab}.json has no scenario '{scenario}' (it has {', '.join(sorted(known[lab]))})")
  if name not in known[lab][scenario]:
    raise KeyError(f"goldens/{lab}.json's {scenario} has no counter '{name}'")
  return known[lab][scenario][name]


def check_marker(lines, k, m, known):
  """The problems of the marker at line k ([] when it is current)."""
  lab, scenario = m.group("lab"), m.group("scenario")
  if m.group("claims"):
    try:
      claims = parse_claims(m.group("claims"))
    except ValueError as e:
      return [f"the marker's claims: {e}"]
    text = paragraph_after(lines, k)
    where = "the paragraph after it"
  else:
    span = block_after(lines, k)
    if span is None:
      return ["no block after the marker (a fenced or indented copy of the log)"]
    # a counter's last line: a driver may print one as it goes, and the log's last is the golden's
    last = {c.group("name").strip(): int(c.group("value"))
            for c in map(COUNTER_LINE.match, lines[span[0]:span[1]]) if c}
    claims = list(last.items())
    if not claims:
      return ["the block after the marker holds no name=value line"]
    text, where = None, None
  problems = []
  for name, value in claims:
    try:
      now = current(known, lab, scenario, name)
    except KeyError as e:
      problems.append(f"'{name}': {e.args[0]}")
      continue
    if now != value:
      problems.append(f"{lab} {scenario} '{name}': the text quotes {value}, the code prints {now}")
    elif text is not None and not shows(text, value):
      problems.append(f"{lab} {scenario} '{name}': the marker claims {value}, but {where} does not show it")
  return problems


def unmarked_logs(lines):
  """Line indices where a run of name=value lines starts that no marker covers."""
  covered, found = set(), []
  for k, line in enumerate(lines):
    m = MARKER.match(line)
    if (m and not m.group("claims")) or COVERED.match(line):
      span = block_after(lines, k)
      if span:
        covered.update(range(*span))
  run = []
  for k, line in enumerate(lines + [""]):
    if COUNTER_LINE.match(line) and k not in covered:
      run.append(k)
      continue
    if len(run) >= UNMARKED_LOG:
      found.append(run[0])
    run = []
  return found


def check(root=ROOT, out=print):
  """(passed, failed) over every text under root; prints one line per marker."""
  known, passed, failed = goldens(root), 0, 0
  for path in texts(root):
    lines = path.read_text().split("\n")
    rel = path.relative_to(root)
    for k, line in enumerate(lines):
      m = MARKER.match(line)
      if not m:
        continue
      problems = check_marker(lines, k, m, known)
      for p in problems:
        out(f"FAIL {rel}:{k + 1}: {p} (goldens/{m.group('lab')}.json is `make goldens`'s run of the driver)")
      if not problems:
        out(f"ok   {rel}:{k + 1}: {m.group('lab')} {m.group('scenario')}")
      passed, failed = passed + (not problems), failed + bool(problems)
    for k in unmarked_logs(lines):
      out(f"FAIL {rel}:{k + 1}: a block of name=value lines that no '<!-- quoted: LAB SCENARIO -->' "
          "marker covers: mark it, so that a stale counter fails here")
      failed += 1
  return passed, failed


def main(argv=None):
  if argv:
    print("usage: python -m harness.grading.quoted (no arguments)", file=sys.stderr)
    return 2
  passed, failed = check()
  print(f"{passed} passed, {failed} failed")
  return 1 if failed else 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
