"""feedback.py: the table `make lab-23.N` prints after the driver: one row per function.

The grader's check mode (harness/grade.py --check) runs a lab's visible tests, the same way a
grade does, and hands their rows here. Each test counts for the function its manifest entry
names. A function is

    passed           every visible test of it passed
    not implemented  a test of it reached its own stub (UOPC_E_NOT_IMPLEMENTED naming it)
    FAILED           a test of it failed otherwise: the first such test and its one-line reason
    waiting          its tests reach another function's stub, or need a test that did not pass
                     (the driver, for a counters test): the row says what it waits on
    skipped          this machine lacks what its tests need (a GPU, a CUDA compiler)
    held out         it has no visible test (nothing to run before the due date)

An entry whose function carries a tag in parentheses is not the student's: "sym_dim_init
(given)" and its kin fold into one "given code" row, "driver (prerequisite)" is a row of its
own, and neither counts as a function. A worked lab's "(worked)" entries are its rows, and
its experiment ("test_my_guard", kind experiment: the student's own test) is a row after them:
the one thing a worked lab asks to write.

The last line names the next function: the first that is not implemented or FAILED in the
order of the lab README's "Suggested order" section, which is the one source of that order (the
manifest's functions in the order the section first names them in backquotes; one it never
names comes last). A waiting row is never next: its points come once what it waits on passes.
When only waiting rows are left, next names what they wait on (the driver's failure, another
lab's stub). make lab-23.N (tools/run-labs.sh) takes its first direction from this line too.
"""
import re
from dataclasses import dataclass, field

from harness.grading import tables
from harness.grading.manifest import ROOT
from harness.grading.verdict import NOT_RUN, PASS, SKIPPED

STUB = re.compile(r"(\w+) is not implemented yet")
STUB_LAB = re.compile(r"lab (23\.\d+): (\w+) is not implemented yet")   # "lab 23.1: sym_expr_eval is ..."
NOT_IMPLEMENTED = "UOPC_E_NOT_IMPLEMENTED"
TAG = re.compile(r"^(.*?)\s*\((\w+)[^)]*\)$")             # "sym_dim_init (given)" -> ("sym_dim_init", "given")
NEEDS = re.compile(r"needs ([\w.]+), which ")                  # the runner's NOT_RUN: "needs driver, which gave FAIL"
SECTION = re.compile(r"^(#+)\s+(Suggested order[^\n]*)$", re.M)
DETAIL = 96

PASSED, NOT_IMPL, FAILED, WAITING, SKIP = "passed", "not implemented", "FAILED", "waiting", "skipped"
HELD, NOT_RUN_ROW = "held out", "not run"      # no visible test of it / none ran (--only)


@dataclass
class Row:
  name: str
  earned: float = 0
  possible: float = 0
  held_out: float = 0                # points of tests this table does not run (graded later)
  status: str = PASSED
  detail: str = ""
  tests: list = field(default_factory=list)    # (test, result) of the visible tests that ran
  failure: tuple = None              # (test, result) of the first real failure
  waits_on: str = ""                 # a waiting row: what it waits on ("sym_expr_interval", "lab 23.1's x")

  @property
  def passed(self):
    return self.status in (PASSED, SKIP, HELD)

  @property
  def todo(self):
    """Work of this row's own: its stub, or a real failure (a waiting row has none yet)."""
    return self.status in (NOT_IMPL, FAILED)


@dataclass
class Table:
  lab: str
  title: str
  readme: str                        # labs/23.N-.../README.md
  section: str                       # the README's heading, "Suggested order, with hints"
  functions: list                    # rows of the student's functions (or a worked lab's), in order
  others: list                       # given code, prerequisites
  worked: bool
  built: bool = True


def split(function):
  """("sym_dim_init", "given") for a tagged manifest function, (function, "") otherwise."""
  m = TAG.match(function)
  return (m.group(1), m.group(2)) if m else (function, "")


def suggested_order(readme_text, functions):
  """(the functions in the README's suggested order, the section's heading or "")."""
  m = SECTION.search(readme_text)
  if not m:
    return list(functions), ""
  level = len(m.group(1))
  end = re.compile(rf"^#{{1,{level}}}\s", re.M).search(readme_text, m.end())
  body = readme_text[m.end():end.start() if end else len(readme_text)]
  named = [n for n in dict.fromkeys(re.findall(r"`(\w+)`", body)) if n in functions]
  return named + [f for f in functions if f not in named], m.group(2).strip()


def stub_labs(result):
  """{function: lab} of the stubs a failed test's text names with their lab."""
  text = "\n".join([result.detail] + list(result.lines))
  return {fn: lab for lab, fn in STUB_LAB.findall(text)}


def stub_of(result):
  """The function whose stub a failed test reached ("" when the text names none), or None."""
  text = "\n".join([result.detail] + list(result.lines))
  if NOT_IMPLEMENTED not in text and "not implemented yet" not in text:
    return None
  names = STUB.findall(text)
  return names or [""]


def report(score, manifest, root=ROOT):
  """What check mode prints for one lab's LabScore: the table, how many tests passed, the
  failure block of each FAILED row's first failure, and last the next step. Held-out tests
  are left out of it (check mode does not run them; a full grade's score may hold them)."""
  return report_and_status(score, manifest, root)[0]


def report_and_status(score, manifest, root=ROOT):
  """(report's lines, status): 0 when every row passed, 1 when a row FAILED, 3 when the rows
  that did not pass are stubs or wait for one (make lab-23.N reports those, it does not fail)."""
  readme = root / manifest.lab_dir / "README.md"
  hidden = {}
  for t in manifest.tests:
    if t.hidden:
      hidden[t.function] = hidden.get(t.function, 0) + t.points
  rows = [row for row in score.rows if not row[0].hidden]
  table = build(manifest, rows, readme.read_text() if readme.is_file() else "", hidden)
  out = lines(table)
  passed = sum(r.passed for _, r, _, _ in rows)
  skipped = sum(r.verdict == SKIPPED for _, r, _, _ in rows)
  why = f", {skipped} skipped: this machine lacks what they need" if skipped else ""
  out.append(f"  ({passed} of {len(rows) - skipped} tests passed{why})")
  blocks = [line for test, r in failures(table) for line in tables.failure(score.lab, test, r)]
  rows_all = table.functions + table.others
  status = 1 if any(r.status == FAILED for r in rows_all) else 3 if not all(r.passed for r in rows_all) else 0
  return out + ([""] + blocks if blocks else []) + [next_line(table)], status


def build(manifest, rows, readme_text, hidden_points=None):
  """The Table of one lab from the grader's rows [(test, result, earned, counted)].
  hidden_points: {function: points} of the tests left out (held out until the due date)."""
  held = dict(manifest.held_out)
  for f, p in (hidden_points or {}).items():
    held[f] = held.get(f, 0) + p
  order = list(dict.fromkeys(t.function for t in manifest.tests))
  mine = [f for f in order if not split(f)[1]]
  worked = [f for f in order if split(f)[1] == "worked"]
  experiments = {t.function for t in manifest.tests if t.kind == "experiment"}
  is_worked = bool(worked) and set(mine) <= experiments
  ordered, section = suggested_order(readme_text, mine)
  if is_worked:   # the worked code's rows first, then the experiment
    worked, ordered = worked + ordered, []
  by_name = {f: Row(f, held_out=held.get(f, 0)) for f in ordered + worked}
  others = {}
  for test, result, earned, counted in rows:
    row = by_name.get(test.function)
    if row is None:
      tag = split(test.function)[1]
      key = "given code" if tag.startswith("given") else test.function
      row = others.setdefault(key, Row(key))
    row.earned += earned
    row.possible += test.points if counted else 0
    row.tests.append((test, result))
  functions = [by_name[f] for f in ordered + worked]
  row_of = {t.id: _row_name(t.function) for t in manifest.tests}
  for row in functions:
    _judge(row, set(mine + worked), manifest.lab, row_of)
  nothing_to_write = not any(r.todo for r in functions)
  for row in others.values():
    _judge_other(row, nothing_to_write)
  built = not rows or any(not r.detail.startswith("the lab did not build") for _, r, _, _ in rows)
  return Table(manifest.lab, manifest.title, f"{manifest.lab_dir}/README.md", section or "Suggested order",
               functions, list(others.values()), is_worked, built)


def _row_name(function):
  """The table row a manifest function's tests count for."""
  return "given code" if split(function)[1].startswith("given") else function


def _judge(row, functions, lab="", row_of=None):
  """A function's status from its tests: its own stub, then a real failure, then waiting (and
  what it waits on: another function's stub, or the row of a test it needs)."""
  own = failed = waiting = None
  counted = [(t, r) for t, r in row.tests if r.verdict != SKIPPED]
  for test, r in counted:
    if r.verdict == PASS:
      continue
    if r.verdict == NOT_RUN:
      m = NEEDS.match(r.detail)
      on = (row_of or {}).get(m.group(1), m.group(1)) if m else ""
      waiting = waiting or ((on, f"waits on {on}: {test.id} {r.detail}") if on else ("", f"{test.id}: {r.detail}"))
      continue
    stubs = stub_of(r)
    if stubs is None:
      failed = failed or (test, r)
    elif any(s == split(row.name)[0] for s in stubs):
      own = own or test
    else:
      waiting = waiting or _waits_on_stub(test, r, stubs, functions, lab)
  row.failure = failed
  if own:
    row.status, row.detail = NOT_IMPL, ""
  elif failed:
    row.status, row.detail = FAILED, f"{failed[0].id}: {failed[1].detail}"
  elif waiting:
    row.status, (row.waits_on, row.detail) = WAITING, waiting
  elif row.tests and not counted:
    row.status, row.detail = SKIP, "its tests need what this machine lacks"
  elif not row.tests:
    row.status, row.detail = (HELD, "every test of it is held out") if row.held_out else (NOT_RUN_ROW, "")
  else:
    row.status = PASSED


def _waits_on_stub(test, r, stubs, functions, lab):
  """(what, detail) of a test that reached another function's stub: this lab's function, or
  another lab's (named with its lab), else the test and its text."""
  other = next((s for s in stubs if s in functions), "")
  if other:
    return other, f"waits on {other}, not implemented yet"
  labs = stub_labs(r)
  name = next((s for s in stubs if s and labs.get(s, lab) != lab), "")
  if name:
    on = f"lab {labs[name]}'s {name}"
    return on, f"waits on {on}, not implemented yet"
  return "", f"{test.id} reaches a stub: {r.detail}"


def _judge_other(row, nothing_to_write):
  """Given code and prerequisites: they call the student's functions, so a failure is the
  student's to look at only once no function is left to write or fix (every one passed, or
  waits only on something else: often this very row, as a counters test waits on the driver)."""
  bad = [(t, r) for t, r in row.tests if r.verdict not in (PASS, SKIPPED)]
  n = sum(r.verdict != SKIPPED for _, r in row.tests)
  if not bad:
    row.status, row.detail = PASSED, f"{n} test{'s' if n != 1 else ''}"
    return
  test, r = bad[0]
  if nothing_to_write and r.verdict != NOT_RUN and stub_of(r) is None:
    row.status, row.failure = FAILED, (test, r)
  else:
    row.status = WAITING
  row.detail = f"{n - len(bad)}/{n} pass; {test.id}: {r.detail}"


def lines(table):
  """The table as printed (next_line names the next function)."""
  rows = table.functions + table.others
  w = max([len(r.name) for r in rows] + [len("function")])
  head = "the worked code's tests" if table.worked else "your functions, in the README's suggested order"
  out = [f"Lab {table.lab}: {table.title}: {head}"]
  out.append(f"  {'function':<{w}}  {'points':>7}  {'status':<15}  first failing test: why")
  for r in table.functions:
    out.append(_row(r, w, f"{_num(r.earned)}/{_num(r.possible)}"))
  for r in table.others:
    out.append(_row(r, w, "-"))
  earned = sum(r.earned for r in table.functions)
  possible = sum(r.possible for r in table.functions)
  held = sum(r.held_out for r in table.functions)
  later = f"; held-out tests add {_num(held)} points after the due date" if held else ""
  out.append(f"  {'total':<{w}}  {_num(earned) + '/' + _num(possible):>7}  (visible tests only{later})")
  return out


def _row(r, w, points):
  detail = r.detail.replace("\n", " ")
  detail = detail if len(detail) <= DETAIL else detail[:DETAIL - 3] + "..."
  return f"  {r.name:<{w}}  {points:>7}  {r.status:<15}  {detail}".rstrip()


def next_line(table):
  where = f"see {table.readme}, '{table.section.split(',')[0]}'"
  if not table.built:
    return f"next: make the lab build (the compiler's messages are above; {where})"
  if table.worked:
    todo = next((r for r in table.functions if not r.passed), None)
    if todo is None or split(todo.name)[1] == "worked":
      return f"next: nothing to write: read the code ({where})"
    return f"next: {todo.name}, the experiment (see {table.readme}, 'Break it yourself')"
  todo = next((r for r in table.functions if r.todo), None)
  if todo:
    return f"next: {todo.name} ({where})"
  waiting = [r for r in table.functions if r.status == WAITING]
  others = next((r for r in table.others if r.status == FAILED), None)
  if others:
    names = ", ".join(r.name for r in waiting)
    after = f"; {names} wait{'s' if len(waiting) == 1 else ''} on it" if waiting else ""
    return f"next: {others.name}: it fails (see its failure above){after}"
  if waiting:
    on = waiting[0].waits_on
    return (f"next: {on}: {waiting[0].name} waits on it" if on else
            f"next: {waiting[0].name}: {waiting[0].detail}")
  others = next((r for r in table.others if not r.passed), None)
  if others:
    return f"next: every function passes; {others.name} does not (see its failure above)"
  return "next: nothing: every function passes its visible tests (make grade scores them)"


def failures(table):
  """The rows whose first real failure deserves its whole block (the grader's failure text)."""
  return [r.failure for r in table.functions + table.others if r.status == FAILED and r.failure]


def _num(x):
  return str(int(x)) if float(x).is_integer() else f"{x:g}"
