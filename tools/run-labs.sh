#!/usr/bin/env bash
# Runs lab drivers: tools/run-labs.sh BUILD_DIR LAB_ID...
# A driver exits 0 (checks passed), 1 (a check failed), 2 (the runtime refused)
# or 3 (the student code is still a stub). Each line of the lab's expected.log
# must appear in its output; then the grader's checks of that lab run too
# (harness/grade.py --check: the tests, NumPy checks and counters, without
# scores). Stubs are reported and skipped; the exit status is non-zero only
# when an implemented lab fails. SEED replays the grader's random draws.
set -u
build=$1; shift
failed=0
for id in "$@"; do
  dir=$(ls -d labs/"$id"-*/ 2>/dev/null | head -n 1)
  echo "== lab $id (${IMPL:-labs}) =="
  out=$("$build/bin/lab-$id" 2>&1)
  status=$?
  printf '%s\n' "$out"
  case $status in
    0)
      while IFS= read -r line; do
        [ -z "$line" ] && continue
        if ! grep -qxF -- "$line" <<<"$out"; then
          echo "lab $id: expected the line '$line' (from ${dir}expected.log); it is missing"
          status=1
        fi
      done < "${dir}expected.log"
      if [ $status = 0 ] && [ -z "${RUN_LABS_DRIVERS_ONLY:-}" ]; then
        .venv/bin/python -m harness.grade "$id" --check --impl "${IMPL:-labs}" ${SEED:+--seed "$SEED"} || status=1
      fi
      [ $status = 0 ] && echo "lab $id: ok" || failed=1 ;;
    3) echo "lab $id: not implemented yet (see ${dir}README.md)" ;;
    *) echo "lab $id: FAILED (exit $status)"; failed=1 ;;
  esac
  echo
done
exit $failed
