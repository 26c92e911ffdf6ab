"""tables.py: what the grader prints: progress, a table per lab, failures, scores.

Every failure block names the lab, the test, what it printed (the input, expected against got,
as the suites and checks word it) and the command that replays it.
"""
from harness.grading.verdict import NOT_RUN, PASS, SKIPPED

WIDTH = 58


def progress(lab, test, result, earned, counted, check_mode):
  """A line per test; in check mode a character (feedback.py's table follows)."""
  if check_mode:
    print("." if result.passed else "s" if result.verdict == SKIPPED else "x", end="", flush=True)
    return
  points = f"{_num(earned)}/{_num(test.points)}" if counted else "-"
  print(f"  {lab} {test.id:<{WIDTH}} {result.verdict:<12} {points}", flush=True)


def lab_table(lab, title, rows, check_mode):
  """rows: (test, result, earned, counted)."""
  print(f"\nLab {lab}: {title}")
  head = f"  {'test':<{WIDTH}} {'points':>7}  {'verdict':<12} detail"
  print(head if not check_mode else head.replace(" points ", "").replace("points", ""))
  print("  " + "-" * (len(head) + 10))
  for test, result, earned, counted in rows:
    pts = f"{_num(earned)}/{_num(test.points)}" if counted else f"-/{_num(test.points)}"
    cells = f"  {test.id:<{WIDTH}} " + ("" if check_mode else f"{pts:>7}  ") + f"{result.verdict:<12} "
    print(cells + _clip(result.detail, 100))


def failure(lab, test, result):
  """The block printed under a lab's table for a test that did not pass."""
  if result.verdict in (PASS, SKIPPED, NOT_RUN):   # NOT RUN: its prerequisite's block says why
    return []
  out = [f"--- {result.verdict}: lab {lab}, test {test.id} ({test.title})"]
  if result.detail:
    out.append(f"    {result.detail}")
  lines = result.lines[1:] if result.lines and result.lines[0].strip() == result.detail.strip() else result.lines
  out += [f"    {line}" for line in lines]
  if result.table:
    out += counter_table(result.table)
  if result.replay:
    out.append(f"    replay: {result.replay}")
  return out


def counter_table(rows):
  w = max([len(r[0]) for r in rows] + [7])
  out = [f"    {'counter':<{w}}  {'yours':>10} | {'reference':>10} |"]
  out += [f"    {k:<{w}}  {y:>10} | {r:>10} | {g}" for k, y, r, g in rows]
  return out


def _num(x):
  return str(int(x)) if float(x).is_integer() else f"{x:g}"


def _clip(text, n):
  text = text.replace("\n", " ")
  return text if len(text) <= n else text[:n - 3] + "..."
