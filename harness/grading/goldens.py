"""goldens.py: the golden counter logs, made by running the drivers of solutions/.

    .venv/bin/python -m harness.grading.goldens --write     make goldens
    .venv/bin/python -m harness.grading.goldens --check     make check-goldens (CI): exit 1 on drift

For each lab, solutions/ is built in a scratch copy exactly as a submission is, and each driver
test of the manifest runs on a fresh cache (twice for a warm one); the counters JSON the runtime
writes is kept per scenario in goldens/23.N.json. Scenarios of instructor-only driver tests go
to goldens/hidden/23.N.json, which the handout leaves out.
"""
import argparse
import json
import sys

from harness.grading import counters, manifest as manifests_mod, workspace
from harness.grading.manifest import ROOT


def scenarios(m, manifests):
  """({scenario: counters} public, the same for hidden), or raises RuntimeError."""
  ws = workspace.Workspace(m, manifests, None, "solutions", False)
  try:
    problems = ws.prepare()
    build = ws.build([workspace.driver_target(m.lab)])
    if problems or not build.ok or not build.built(workspace.driver_target(m.lab)):
      raise RuntimeError(f"lab {m.lab}: solutions/ did not build:\n" + "\n".join(problems + [build.log]))
    public, hidden = {}, {}
    expected = (ROOT / m.lab_dir / "expected.log").read_text().splitlines()
    for t in (t for t in m.tests if t.kind == "driver"):
      rd = ws.rundir()
      try:
        r = counters.run_driver(build.root / workspace.driver_target(m.lab), expected, rd, t.timeout,
                                bool(t.spec.get("warm")), mounts=ws.mounts(workspace.driver_target(m.lab)))
      finally:
        rd.close()
      if not r.passed:
        raise RuntimeError(f"lab {m.lab}: the reference driver ({t.id}) gave {r.verdict}: {r.detail}")
      (hidden if t.hidden else public)[t.id] = r.data["counters"]
    return public, hidden
  finally:
    ws.remove()


def text(lab, found):
  return json.dumps({"lab": lab, "made_by": "make goldens (the drivers of solutions/ on a fresh cache)",
                     "scenarios": found}, indent=2, sort_keys=True) + "\n"


def main(argv=None):
  ap = argparse.ArgumentParser(description="Makes or checks the golden counter logs.")
  mode = ap.add_mutually_exclusive_group(required=True)
  mode.add_argument("--write", action="store_true")
  mode.add_argument("--check", action="store_true")
  args = ap.parse_args(argv)
  if not (ROOT / "solutions").is_dir():
    print("goldens: there is no solutions/ here (a handout cannot make goldens)")
    return 2
  manifests = {lab: manifests_mod.load(lab) for lab in manifests_mod.available()}
  drift = 0
  for lab, m in manifests.items():
    try:
      public, hidden = scenarios(m, manifests)
    except RuntimeError as e:
      print(f"goldens: {e}")
      return 2
    for path, found in ((ROOT / "goldens" / f"{lab}.json", public), (ROOT / "goldens" / "hidden" / f"{lab}.json", hidden)):
      if not found:
        continue
      new = text(lab, found)
      old = path.read_text() if path.exists() else None
      if args.write and new != old:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(new)
        print(f"wrote {path.relative_to(ROOT)}")
      elif args.check and new != old:
        drift += 1
        print(f"{path.relative_to(ROOT)} is not what solutions/ gives now: run make goldens")
      else:
        print(f"ok   {path.relative_to(ROOT)}")
  return 1 if drift else 0


if __name__ == "__main__":
  sys.exit(main())
