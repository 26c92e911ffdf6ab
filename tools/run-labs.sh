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
# A driver that stops at a stub names the stub it met first, in its own order; the table's
# "next:" names the first function of the README's order to write. So that the first screen
# points one way, the driver's stop line is held back until after the table (with the checks
# on): the driver's banner and lines come first, then one line that defers to the table.
# SEED replays the grader's random draws; RUN_LABS_DRIVERS_ONLY=1 skips its checks.
# OWN_STAGES=1 (make lab-23.N OWN_STAGES=1) grades on your own earlier stages (--own-stages).
set -u
build=$1; shift
failed=0
for id in "$@"; do
  dir=$(ls -d labs/"$id"-*/ 2>/dev/null | head -n 1)
  echo "== lab $id (${IMPL:-labs}) =="
  # A handout's binaries of lab $id find there the reference's earlier stages (the Makefile's
  # "reference's earlier stages"); OWN_STAGES=1 leaves the folder empty.
  refs=$(ls "$build/ref/$id" 2>/dev/null | sed -n 's/^liblab\(23_[0-9]*\)\(_sym\)\{0,1\}\.so$/lab \1/p' | tr _ . | sort -u | paste -sd, - | sed 's/,/, /g')
  [ -n "$refs" ] && echo "lab $id: linked with the reference's $refs (reference/lib; OWN_STAGES=1 links yours)"
  out=$("$build/bin/lab-$id" 2>&1)
  status=$?
  stopped=""   # "23.K function" of the stub the driver stopped at
  if [ $status = 3 ] && [ -z "${RUN_LABS_DRIVERS_ONLY:-}" ]; then
    stopped=$(tail -n 1 <<<"$out" | sed -n 's/^lab \(23\.[0-9]*\): \([A-Za-z0-9_]*\) is not implemented yet$/\1 \2/p')
  fi
  if [ -n "$stopped" ]; then
    sed '$d' <<<"$out"
    echo "lab $id: the driver stops at a function not implemented yet; the table below names the one to write next"
    stub_lab=${stopped%% *} stub_fn=${stopped#* }
    [ "$stub_lab" = "$id" ] && stop_at=$stub_fn || stop_at="lab $stub_lab's $stub_fn (this build links your lab $stub_lab)"
  else
    printf '%s\n' "$out"
  fi
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
    .venv/bin/python -m harness.grade "$id" --check --impl "${IMPL:-labs}" ${SEED:+--seed "$SEED"} ${OWN_STAGES:+--own-stages}
    checked=$?   # 3: the checks found only stubs (an experiment test not written yet, in a worked lab)
    [ $status = 0 ] && [ $checked != 0 ] && status=$([ $checked = 3 ] && echo 3 || echo 1)
  fi
  case $status in
    0) echo "lab $id: ok" ;;
    3) if [ -n "$stopped" ]; then
         echo "lab $id: not implemented yet; the driver stops at $stop_at and runs further as the table's rows pass (see ${dir}README.md)"
       else
         echo "lab $id: not implemented yet (see ${dir}README.md)"
       fi ;;
    *) echo "lab $id: FAILED (exit $status)"; failed=1 ;;
  esac
  echo
done
exit $failed
