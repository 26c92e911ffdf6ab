#!/usr/bin/env bash
# The checks that need a GPU, in one run (instructors with one; CI has none):
#   tools/gpu-check.sh [BUILD]        (default build/solutions; `make gpu-check` builds it first)
# uopc's CUDA suite (compile, load, launch, memory), the compiler core's CUDA runner suite
# (each graph on the GPU against the same graph on the CPU), lab 23.3's host/device mirror
# (its device round trip), then check_core with every call of
# every random graph also run on the GPU against NumPy. GRAPHS and SEED choose the draw; PYTHON
# the interpreter with NumPy. Exits 1 when any part failed; a part that skips says why.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/solutions}
py=${PYTHON:-.venv/bin/python}
[ -x "$py" ] || py=python3
command -v nvidia-smi >/dev/null && nvidia-smi -L
status=0
for t in tests/uopc/test_cuda tests/core/test_exec_cuda tests/23.3/test_mirror; do
  echo "== $t"
  "$build/$t" || status=1
done
echo "== check_core on the GPU"
"$py" -m harness.check_core --build "$build" --graphs "${GRAPHS:-60}" --seed "${SEED:-1}" || status=1
exit $status
