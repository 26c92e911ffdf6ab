#!/usr/bin/env bash
# CI's mutation check (issue #15): the first few mutants of each lab and of the runtime in the
# order `make mutants` draws them with its default seed, so they are the start of the sample
# the README's figures come from. A lab whose survivors have been triaged must kill every one of
# them (a weakened test shows as a survivor); the others report their ratio until theirs is.
#   tools/mutants-ci.sh            MUTANTS_CI_SAMPLE=N (default 8) mutants per target
set -uo pipefail
cd "$(dirname "$0")/.."
n=${MUTANTS_CI_SAMPLE:-8}
triaged="23.1 23.6 23.2 23.3 23.4 23.5 uopc"
status=0
for t in 23.1 23.6 23.2 23.3 23.4 23.5 uopc; do
  min=()
  [[ " $triaged " == *" $t "* ]] && min=(--min 100)
  echo "== mutants of $t (${min[*]:-ratio reported only}) =="
  .venv/bin/python tools/mutants.py "$t" --sample "$n" "${min[@]}" || status=1
done
exit $status
