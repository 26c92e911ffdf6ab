#!/usr/bin/env bash
# CI's mutation check (issue #15). For the labs with student files: the first mutant of each
# solution file in the order `make mutants PER_FILE=1` draws them with the default seed (given
# code in a student file, which the grader's screen refuses, is passed over), so every file is
# represented however its lines are split between given and student code. The runtime's files
# alike, through its own suites. Not 23.6: a worked lab, all of it given code, so the grader's
# screen refuses every mutant of it (they could only print as "did not build"). Every target has
# been triaged, so each must kill every mutant it draws (a weakened test shows as a survivor),
# and an equivalents entry that matches no mutant any more fails too.
#   tools/mutants-ci.sh     MUTANTS_CI_PER_FILE=N (default 1)
set -uo pipefail
cd "$(dirname "$0")/.."
per_file=${MUTANTS_CI_PER_FILE:-1}
status=0
for t in 23.1 23.2 23.3 23.4 23.5; do
  echo "== mutants of $t ($per_file per solution file, --min 100) =="
  .venv/bin/python tools/mutants.py "$t" --per-file "$per_file" --min 100 || status=1
done
echo "== mutants of uopc ($per_file per source file, --min 100) =="
.venv/bin/python tools/mutants.py uopc --per-file "$per_file" --min 100 || status=1
exit $status
