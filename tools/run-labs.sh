#!/usr/bin/env bash
# Runs lab drivers: tools/run-labs.sh BUILD_DIR LAB_ID...
# A driver exits 0 (checks passed), 1 (a check failed), 2 (the runtime refused)
# or 3 (the student code is still a stub). When it exits 0, each line of the
# lab's expected.log must appear in its output. Then, whatever the driver did,
# the grader's checks of that lab run (harness/grade.py --check: its visible
# tests, NumPy checks and counters, in the grader's sandbox) and print a table
# with a row per function (points, passed / FAILED / not implemented / waiting)
# and the next function of the README's suggested order. Stubs are reported,
# not failures: the exit status is non-zero only when an implemented lab (its
# driver past every stub) fails, in the driver or in the grader's checks.
# SEED replays the grader's random draws; RUN_LABS_DRIVERS_ONLY=1 skips its checks.
set -u
build=$1; shift
failed=0
for id in "$@"; do
  dir=$(ls -d labs/"$id"-*/ 2>/dev/null | head -n 1)
  echo "== lab $id (${IMPL:-labs}) =="
  out=$("$build/bin/lab-$id" 2>&1)
  status=$?
  printf '%s\n' "$out"
  if [ $status = 0 ]; then
    while IFS= read -r line; do
      [ -z "$line" ] && continue
      if ! grep -qxF -- "$line" <<<"$out"; then
        echo "lab $id: expected the line '$line' (from ${dir}expected.log); it is missing"
        status=1
      fi
    done < "${dir}expected.log"
  fi
  if [ -z "${RUN_LABS_DRIVERS_ONLY:-}" ]; then
    echo
    .venv/bin/python -m harness.grade "$id" --check --impl "${IMPL:-labs}" ${SEED:+--seed "$SEED"}
    checked=$?   # 3: the checks found only stubs (an experiment test not written yet, in a worked lab)
    [ $status = 0 ] && [ $checked != 0 ] && status=$([ $checked = 3 ] && echo 3 || echo 1)
  fi
  case $status in
    0) echo "lab $id: ok" ;;
    3) echo "lab $id: not implemented yet (see ${dir}README.md)" ;;
    *) echo "lab $id: FAILED (exit $status)"; failed=1 ;;
  esac
  echo
done
exit $failed
