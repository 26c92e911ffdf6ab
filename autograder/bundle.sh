#!/usr/bin/env bash
# Makes the Gradescope bundle: autograder/bundle.sh [ZIP]   (default build/autograder.zip)
# setup.sh and run_autograder at the top, the whole instructor tree beside them (solutions/,
# tests/hidden/ and goldens/ included: the grade needs them), without build/ and .venv/.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-build/autograder.zip}")
stage=$(mktemp -d); trap 'rm -rf "$stage"' EXIT
git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t "$stage"
cp autograder/setup.sh autograder/run_autograder "$stage/"
chmod +x "$stage/setup.sh" "$stage/run_autograder"
mkdir -p "$(dirname "$out")"
rm -f "$out"
(cd "$stage" && zip -qr "$out" .)
echo "autograder: $out ($(unzip -l "$out" | tail -n 1 | awk '{print $2}') files)"
