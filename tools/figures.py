"""figures.py: the Graphviz sources of the figures of chapters 23.3 and 23.4, from what the code
prints, so that `make figures` draws them again and they stay true.

    .venv/bin/python tools/figures.py           write chapters/figures/23.3-versions.dot, 23.4-trace.dot
    .venv/bin/python tools/figures.py --check   exit 1 when a committed .dot is not what it would write
                                                (make test and make check-quoted run it), or when
                                                23.7's pipeline names a function its file lacks

23.3, memory versions through a store: the two listings of `mv_program_print` that chapter 23.3
quotes ("Memory versions": the two shifts, and the driver's view-survives program), parsed: each
storage's versions, each statement's loads (the view and the version read) and its store.
23.4, a trace with its guards, the graph break and the regions: the guards of the shape branch's
two variants as chapter 23.4 lists them ("Symbolic integers and guards"), and the data branch's regions with their call
counts from goldens/23.4.json (the driver's counters, `make goldens`). `make figures` renders each
.dot into the .svg committed beside it (Graphviz's dot), as for the other figures.
23.7, tensorjit's pipeline, is written by hand (chapters/figures/23.7-pipeline.dot); both modes check
that each function a label names is defined in a file the same label names.
"""
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ROOT / "chapters" / "figures"
STYLE = """  graph [rankdir=LR, fontname="Helvetica", fontsize=11, nodesep=0.3, ranksep=0.45];
  node  [shape=box, style="rounded,filled", fillcolor="#f4f4f4", fontname="Helvetica", fontsize=10];
  edge  [fontname="Helvetica", fontsize=9];
"""


def text_blocks(path):
  """The ```text blocks of a chapter, as lists of lines."""
  return [b.strip("\n").split("\n") for b in re.findall(r"```text\n(.*?)```", path.read_text(), re.S)]


# ---- 23.3 -------------------------------------------------------------------

LOAD = re.compile(r"load (?P<view>(?P<storage>\w+)\S*) @M(?P<v>\d+)")
STORE = re.compile(r"M\d+ = store (?P<view>(?P<storage>\w+)\S*) <- \S+ \(M(?P<a>\d+) -> M(?P<b>\d+)\)")
LET = re.compile(r"^\s*let (?P<name>\w+) = ")


def program(lines):
  """[(statement, [loads (view, storage, version)], store (view, storage, in, out) or None, let)]."""
  stmts = []
  for line in lines:
    if re.match(r"^statement \d+:", line):
      stmts.append([len(stmts), [], None, None])
    elif stmts and LOAD.search(line):
      m = LOAD.search(line)
      stmts[-1][1].append((m["view"], m["storage"], int(m["v"])))
    elif stmts and STORE.search(line):
      m = STORE.search(line)
      stmts[-1][2] = (m["view"], m["storage"], int(m["a"]), int(m["b"]))
    elif stmts and LET.match(line):
      stmts[-1][3] = LET.match(line)["name"]
  return stmts


def listings_23_3():
  """The chapter's two mv_program_print listings (the shifts, then the view-survives program)."""
  found = [b for b in text_blocks(ROOT / "chapters" / "23.3-mutation-views.md")
           if any(re.match(r"^statement 0:", line) for line in b) and any(STORE.search(line) for line in b)]
  if len(found) < 2:
    raise SystemExit("figures.py: chapter 23.3 no longer quotes two mv_program_print listings with a store")
  return found[:2]


def cluster_23_3(k, title, stmts):
  out = [f'  subgraph cluster_{k} {{', f'    label="{title}"; fontname="Helvetica"; fontsize=11; color="#bbbbbb";']
  versions = set()
  for s, loads, store, let in stmts:
    for _, storage, v in loads:
      versions.add((storage, v))
    if store:
      versions.update({(store[1], store[2]), (store[1], store[3])})
  for storage, v in sorted(versions):
    out.append(f'    p{k}_{storage}_{v} [label="{storage} @M{v}", shape=ellipse, fillcolor="#e8eef8"];')
  for s, loads, store, let in stmts:
    out.append(f'    p{k}_s{s} [label="statement {s}", fillcolor="#fff6d8"];')
    for view, storage, v in loads:
      out.append(f'    p{k}_{storage}_{v} -> p{k}_s{s} [label="load {view}"];')
    if store:
      out.append(f'    p{k}_s{s} -> p{k}_{store[1]}_{store[3]} [label="store {store[0]}\\n(M{store[2]} -> M{store[3]})", '
                 'color="#b03030", fontcolor="#b03030", penwidth=1.6];')
      # the store consumes the version it replaces: the order of effects is in the data
      out.append(f'    p{k}_{store[1]}_{store[2]} -> p{k}_s{s} [style=dashed, color="#b03030", label="consumes"];')
    if let:
      out.append(f'    p{k}_let_{let} [label="let {let}", fillcolor="#dff0d8"];')
      out.append(f'    p{k}_s{s} -> p{k}_let_{let};')
  out.append("  }")
  return out


def figure_23_3():
  shifts, survives = listings_23_3()
  lines = ["// Memory versions through a store, and the views that see them (chapter 23.3, 'Memory versions').",
           "// Written by tools/figures.py from the chapter's two mv_program_print listings; render: make figures.",
           "digraph versions {", STYLE]
  lines += cluster_23_3(0, "a[:-1] = a[1:] + 1, then a[1:] = a[:-1] * 2", program(shifts))
  lines += cluster_23_3(1, "the view a[::2], made before a[...] = v, read after it", program(survives))
  return "\n".join(lines + ["}"]) + "\n"


# ---- 23.4 -------------------------------------------------------------------

GUARD = re.compile(r"^\s+(?P<expr>.+) is (?P<truth>true|false)\s+\[(?P<site>[^\]]+)\]")


def shape_variants():
  """[(variant, [(guard, truth, site)])] of the chapter's first guard listing (the shape branch)."""
  for block in text_blocks(ROOT / "chapters" / "23.4-function-tracing.md"):
    if block and block[0].startswith("variant 0:") and len(block) >= 4:
      variants = []
      for line in block:
        if line.startswith("variant "):
          variants.append([int(line.split()[1].rstrip(":")), []])
        elif GUARD.match(line):
          m = GUARD.match(line)
          variants[-1][1].append((m["expr"], m["truth"], m["site"]))
      return variants
  raise SystemExit("figures.py: chapter 23.4 no longer lists the shape branch's variants")


def figure_23_4():
  counters = json.loads((ROOT / "goldens" / "23.4.json").read_text())["scenarios"]["driver"]
  calls = {name[len("calls "):]: n for name, n in counters.items() if name.startswith("calls tp_region")}
  if sorted(calls) != ["tp_region0", "tp_region1", "tp_region2"]:
    raise SystemExit(f"figures.py: goldens/23.4.json's regions are {sorted(calls)}, not the three the figure draws")
  lines = ["// A trace with its guards, a graph break and its regions (chapter 23.4, 'Guards' and 'Graph breaks').",
           "// Written by tools/figures.py from the chapter's guard listing and goldens/23.4.json; render: make figures.",
           "digraph trace {", STYLE.replace("rankdir=LR", "rankdir=TB"),
           '  subgraph cluster_shape {',
           '    label="shape branch: if (size(x, 0) > 16), n in [1, 1024]"; fontname="Helvetica"; fontsize=11; color="#bbbbbb";',
           '    s_call [label="tp_call(x), n = size(x, 0)", fillcolor="#e8eef8"];',
           '    s_trace [label="no variant holds:\\ntrace the model once more\\n(a recompilation after the first)"];']
  for k, guards in shape_variants():
    text = "\\n".join(f"{g} is {t}  [{site}]" for g, t, site in guards)
    lines.append(f'    s_v{k} [label="variant {k}\\n{text}", fillcolor="#dff0d8"];')
    lines.append(f'    s_call -> s_v{k} [label=" its guards hold"];')
    lines.append(f'    s_trace -> s_v{k} [style=dashed, label=" records"];')
  lines += ['    s_call -> s_trace [label=" none holds"];', "  }",
            '  subgraph cluster_data {',
            '    label="data branch: if (tp_item(sum(x)) > 0), resume mode: no variant, regions kept"; '
            'fontname="Helvetica"; fontsize=11; color="#bbbbbb";',
            '    d_call [label="tp_call(x): the model runs again (a trace per call)", fillcolor="#e8eef8"];',
            f'    d_r0 [label="tp_region0: s = sum(x)\\n{calls["tp_region0"]} calls", fillcolor="#dff0d8"];',
            '    d_break [label="graph break: tp_item(s)\\nthe region runs, C reads the number", '
            'shape=diamond, style="filled", fillcolor="#fff6d8"];',
            f'    d_r1 [label="tp_region1: x * 2\\n{calls["tp_region1"]} calls", fillcolor="#dff0d8"];',
            f'    d_r2 [label="tp_region2: -x\\n{calls["tp_region2"]} calls", fillcolor="#dff0d8"];',
            '    d_call -> d_r0 -> d_break;',
            '    d_break -> d_r1 [label=" > 0"];',
            '    d_break -> d_r2 [label=" <= 0"];',
            "  }",
            f'  note [shape=note, fillcolor="#ffffff", label="the driver, fresh cache: graph breaks={counters["graph breaks"]}, '
            f'guards recorded={counters["guards recorded"]},\\nguard failures={counters["guard failures"]}, '
            f'recompilations={counters["recompilations"]} (goldens/23.4.json)"];',
            "}"]
  return "\n".join(lines) + "\n"


# ---- 23.7 -------------------------------------------------------------------
# The pipeline is drawn by hand (it is the code's structure, not a printed listing); what keeps it
# true is that every name() in a label is a function defined in a file that label (or its
# cluster's) names.

PIPELINE = "23.7-pipeline.dot"
LABEL = re.compile(r'label="((?:[^"\\]|\\.)*)"')
CALLED = re.compile(r"\b(\w+)\(\)")
SOURCE = re.compile(r"\b((?:labs|uopc|solutions)/[\w./-]+\.[ch])\b")


def defines(text, name):
  """Whether C text defines function name: a declaration at column 0 whose next '{' comes before
  its next ';' (a prototype ends at the ';')."""
  for m in re.finditer(rf"^[A-Za-z_][^\n;=]*?\b{name}\(", text, re.M):
    rest = text[m.end():]
    brace, semi = rest.find("{"), rest.find(";")
    if brace >= 0 and (semi < 0 or brace < semi):
      return True
  return False


def pipeline_errors():
  """What in the 23.7 pipeline's labels the code does not have: a file, or a function in it. A
  cluster's label names the file of the hooks inside it, so its nodes' names may be in its files.
  (The .dot keeps each statement on one line, which this reading relies on.)"""
  errors, clusters = [], []   # the files each enclosing cluster's label names
  for line in (FIGURES / PIPELINE).read_text().splitlines():
    statement = line.strip()
    if statement.startswith("subgraph cluster"):
      clusters.append([])
    elif statement == "}" and clusters:
      clusters.pop()
    for label in (text.replace("\\n", " ") for text in LABEL.findall(line)):
      own = SOURCE.findall(label)
      if statement.startswith("label=") and clusters:
        clusters[-1] = own
      paths = own + [p for files in clusters for p in files if p not in own]
      missing = [p for p in paths if not (ROOT / p).is_file()]
      errors += [f"no file {p}" for p in missing if p in own]
      texts = [(ROOT / p).read_text() for p in paths if p not in missing]
      errors += [f"{n}() is defined in none of {', '.join(paths) or 'no file named'}"
                 for n in CALLED.findall(label) if not any(defines(t, n) for t in texts)]
  return errors


def main(argv):
  check = argv == ["--check"]
  if argv and not check:
    print("usage: tools/figures.py [--check]", file=sys.stderr)
    return 2
  stale = 0
  for name, make in (("23.3-versions.dot", figure_23_3), ("23.4-trace.dot", figure_23_4)):
    path, text = FIGURES / name, make()
    if check:
      same = path.is_file() and path.read_text() == text
      print(f"{'ok  ' if same else 'FAIL'} {path.relative_to(ROOT)}" + ("" if same else ": stale (make figures)"))
      stale += not same
    elif not path.is_file() or path.read_text() != text:
      path.write_text(text)
      print(f"wrote {path.relative_to(ROOT)}")
  errors = pipeline_errors()
  print(f"{'ok  ' if not errors else 'FAIL'} chapters/figures/{PIPELINE}" + "".join(f"\n     {e}" for e in errors))
  stale += bool(errors)
  if check:
    print(f"{3 - stale} passed, {stale} failed")
  return 1 if stale else 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
