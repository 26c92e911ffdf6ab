#!/usr/bin/env bash
# CI's mutation check (issue #15). For the labs with student files: the first mutant of each
# solution file in the order `make mutants PER_FILE=1` draws them with the default seed (given
# code in a student file, which the grader's screen refuses, is passed over), so every file is
# represented however its lines are split between given and student code. For the runtime: the
# first few of the default sample. Not 23.6: a worked lab, all of it given code, so the grader's
# screen refuses every mutant of it (they could only print as "did not build"). Every target has
# been triaged, so each must kill every mutant it draws (a weakened test shows as a survivor),
# and an equivalents entry that matches no mutant any more fails too.
#   tools/mutants-ci.sh     MUTANTS_CI_PER_FILE=N (default 1), MUTANTS_CI_SAMPLE=N (default 8)
set -uo pipefail
cd "$(dirname "$0")/.."
per_file=${MUTANTS_CI_PER_FILE:-1}
n=${MUTANTS_CI_SAMPLE:-8}
status=0
for t in 23.1 23.2 23.3 23.4 23.5; do
  echo "== mutants of $t ($per_file per solution file, --min 100) =="
  .venv/bin/python tools/mutants.py "$t" --per-file "$per_file" --min 100 || status=1
done
for t in uopc; do
  echo "== mutants of $t (the first $n of the sample, --min 100) =="
  .venv/bin/python tools/mutants.py "$t" --sample "$n" --min 100 || status=1
done
exit $status
