#!/usr/bin/env bash
# Makes the student handout: tools/handout.sh [ARCHIVE]   (default build/handout/uopc-labs.tar.gz)
# Every file git tracks or would track, except what is the instructor's alone: solutions/,
# tests/hidden/ (held-out suites), tests/broken/ (they build solutions/), goldens/hidden/,
# the equivalent mutants of the reference (tests/mutants/: they quote solutions/), the answers
# to the chapters' questions (instructor/), autograder/ and .ci/; manifests lose their held-out
# tests (harness/grading/handout.py), and the student's README (tools/handout-README.md)
# replaces the instructor's. The reference ships only as built libraries (reference/lib/, no
# source, no debug information), of the stages a later lab links (make handout-ref-libs: lab
# 23.1's symbols, 23.2 and 23.4), so that each lab can be worked on while the earlier ones are
# still stubs, as the grader grades it. Extracted anywhere, the archive runs `make lab-23`,
# `make test` and `make grade` on the student's own code (OWN_STAGES=1: all of it).
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
# --strip-unneeded: only the dynamic symbols that linking needs stay (no line tables, no names
# of static helpers).
make=${MAKE:-make}
libs=$($make -s --no-print-directory handout-ref-libs)
$make -s --no-print-directory IMPL=solutions $(printf 'build/solutions/lib/%s ' $libs)
mkdir -p "$stage/$name/reference/lib"
for lib in $libs; do
  objcopy --strip-unneeded "build/solutions/lib/$lib" "$stage/$name/reference/lib/$lib"
done
commit=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- solutions labs uopc || echo " with changes not committed")
sed -e "s/@COMMIT@/$commit/" -e "s/@LIBS@/$(echo $libs | sed 's/ /, /g')/" tools/handout-reference.md \
  > "$stage/$name/reference/README.md"
.venv/bin/python -m harness.grading.handout "$stage/$name"
tar -C "$stage" -czf "$out" "$name"
echo "handout: $out ($(tar -tzf "$out" | grep -vc '/$') files)"
