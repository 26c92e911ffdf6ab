#!/usr/bin/env bash
# CI's mutation check (issue #15). For the labs with student files: the first mutant of each
# solution file in the order `make mutants PER_FILE=1` draws them with the default seed (given
# code in a student file, which the grader's screen refuses, is passed over), so every file is
# represented however its lines are split between given and student code. The runtime's files
# alike, through its own suites. Lab 23.7 is tensorjit's student files (graded as libtensorjit.so). Not 23.6: a worked lab, all of it given code, so the grader's
# screen refuses every mutant of it (they could only print as "did not build"). Every target has
# been triaged, so each must kill every mutant it draws (a weakened test shows as a survivor),
# and an equivalents entry that matches no mutant any more fails too.
#   tools/mutants-ci.sh     MUTANTS_CI_PER_FILE=N (default 1)  MUTANTS_CI_FILES=quarter|all (default quarter)
set -uo pipefail
cd "$(dirname "$0")/.."
per_file=${MUTANTS_CI_PER_FILE:-1}
# A quarter of each target's files a run (at least one), the quarter chosen by the commit (its short
# hash's last digit modulo 4: the files at places k of the sorted list with (k + digit) % 4 == 0), so
# that CI stays under 30 minutes on 2 cores (with half it took 29 m 54 s on 2026-12-02) and four
# successive commits of different digits cover every file. MUTANTS_CI_FILES=all runs every file.
# Reproducible: the same commit draws the same mutants.
which=${MUTANTS_CI_FILES:-quarter}
parity=$(( 16#$(git rev-parse --short=1 HEAD 2>/dev/null | tail -c 2 | grep -E '^[0-9a-f]$' || echo 0) % 4 ))
quarter() {   # $1: a glob of the target's files; prints --files with a quarter of them, or nothing (all)
  [ "$which" = all ] && return
  local names k=0 picked=() all=()
  names=$(ls $1 2>/dev/null | xargs -n 1 basename | sort)
  for n in $names; do
    all+=("$n")
    [ $(( (k + parity) % 4 )) = 0 ] && picked+=("$n")
    k=$((k + 1))
  done
  [ ${#picked[@]} -eq 0 ] && [ ${#all[@]} -gt 0 ] && picked=("${all[$(( parity % ${#all[@]} ))]}")   # a target of few files
  [ ${#picked[@]} -gt 0 ] && printf -- '--files %s' "$(IFS=,; echo "${picked[*]}")"
}
status=0
for t in 23.1 23.2 23.3 23.4 23.5 23.7; do
  files=$(quarter "solutions/$t-*/*.c")
  echo "== mutants of $t ($per_file per solution file, ${which} of its files${files:+: ${files#--files }}, --min 100) =="
  .venv/bin/python tools/mutants.py "$t" --per-file "$per_file" $files --min 100 || status=1
done
files=$(quarter "uopc/src/*.c")
echo "== mutants of uopc ($per_file per source file, ${which} of its files${files:+: ${files#--files }}, --min 100) =="
.venv/bin/python tools/mutants.py uopc --per-file "$per_file" $files --min 100 || status=1
exit $status
