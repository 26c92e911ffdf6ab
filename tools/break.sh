#!/usr/bin/env bash
# The two halves of `make break` (see "break it yourself" in the Makefile):
#   tools/break.sh list LAB GUARD           names the guards of LAB (tests/student/guards.txt);
#                                           exit 1 when LAB or GUARD is not one of them
#   tools/break.sh run LAB GUARD CORRECT BROKEN SOURCE
#                                           runs the experiment test built against the correct
#                                           lab and against the broken one, and says whether
#                                           it caught the missing guard (exit 0 when it did)
# The grader's experiment tests ask the same of your test (harness/grading/runner.py).
set -u
table=tests/student/guards.txt
guards() { awk -v lab="$1" 'NF && $1 !~ /^#/ && $1 == lab' "$table"; }
labs() { awk 'NF && $1 !~ /^#/ {print $1}' "$table" | sort -u | tr '\n' ' '; }

case $1 in
list)
  lab=$2 guard=$3
  if [ -z "$lab" ] || [ -z "$(guards "$lab")" ]; then
    echo "make break: say which lab: LAB is one of: $(labs)(e.g. make break LAB=23.2)"
    exit 1
  fi
  if [ -n "$guard" ] && guards "$lab" | awk -v g="$guard" '$2 == g {found=1} END {exit !found}'; then
    exit 0
  fi
  [ -n "$guard" ] && echo "make break: lab $lab has no guard named '$guard'"
  echo "The guards of lab $lab that make break LAB=$lab GUARD=<name> can remove:"
  guards "$lab" | awk '{printf "  %-15s -D%s in %s:\n  %-15s ", $2, $3, $4, ""; for (i = 5; i <= NF; i++) printf "%s%s", $i, (i < NF ? " " : "\n")}'
  echo "Your experiment test is tests/student/$lab/test_my_guard.c: it must pass on your lab as it is"
  echo "and fail with the guard removed (see the lab's README, 'Break it yourself')."
  [ -z "$guard" ]
  ;;
run)
  lab=$2 guard=$3 correct=$4 broken=$5 source=$6
  result() {   # one run; prints cmocka's summary and returns its status
    local out status
    out=$("$1" 2>&1); status=$?
    printf '%s\n' "$out" | sed 's/^/    /'
    return $status
  }
  echo "== $source against lab $lab as it is (it must pass) =="
  result "$correct"; ok=$?
  echo "== $source against lab $lab without its $guard guard (it must fail) =="
  result "$broken"; bad=$?
  echo
  if [ $ok = 0 ] && [ $bad != 0 ]; then
    echo "experiment $lab/$guard: caught: your test passes on the correct build and fails without the $guard guard"
    exit 0
  fi
  [ $ok != 0 ] && echo "experiment $lab/$guard: NOT YET: your test fails on the correct build too (status $ok): it must pass there"
  [ $bad = 0 ] && echo "experiment $lab/$guard: NOT YET: your test passes without the $guard guard: it does not catch the wrong dispatch"
  exit 1
  ;;
esac
