#!/usr/bin/env bash
# Makes the student handout: tools/handout.sh [ARCHIVE]   (default build/handout/uopc-labs.tar.gz)
# Every file git tracks or would track, except what is the instructor's alone: solutions/,
# tests/hidden/ (held-out suites), tests/broken/ (they build solutions/), goldens/hidden/,
# the equivalent mutants of the reference (tests/mutants/: they quote solutions/), the answers
# to the chapters' questions (instructor/), autograder/ and .ci/; manifests lose their held-out
# tests (harness/grading/handout.py), and the student's README (tools/handout-README.md)
# replaces the instructor's. Extracted anywhere, the archive runs `make lab-23`, `make test`
# and `make grade` on the student's own code.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/handout/uopc-labs.tar.gz}
name=uopc-labs
stage=$(mktemp -d); trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/$name" "$(dirname "$out")"
git ls-files -co --exclude-standard -z \
  | grep -zvE '^(solutions/|instructor/|tests/hidden/|tests/broken/|tests/mutants/|goldens/hidden/|autograder/|tools/handout|\.ci/)' \
  | xargs -0 cp --parents -t "$stage/$name"
cp tools/handout-README.md "$stage/$name/README.md"
.venv/bin/python -m harness.grading.handout "$stage/$name"
tar -C "$stage" -czf "$out" "$name"
echo "handout: $out ($(tar -tzf "$out" | grep -vc '/$') files)"
