#!/usr/bin/env bash
# Runs every test of `make test` and ends with one line `N passed, N failed`.
#   tools/run-tests.sh BUILD_DIR [--harness] [--student-drivers DIR LAB...] -- TEST_BINARY... [-- BROKEN:TESTNAME...]
# Each cmocka binary runs with a fresh UOPC_CACHE_DIR; its cases are counted
# from cmocka's summary, and the ones it skipped (CUDA without a GPU) are
# listed with their reason (the suite's "  skipped: why" line) before the
# last line. A broken variant (a build with one guard removed) must
# fail its named test, run alone: that proves the suite can catch the defect. With
# --student-drivers, the student tree's drivers must each pass or report
# their stub as not implemented yet (one test).
set -u
build=$1; shift
harness=0
student_build=""; student_labs=()
[ "${1:-}" = --harness ] && { harness=1; shift; }
if [ "${1:-}" = --student-drivers ]; then
  student_build=$2; shift 2
  while [ $# -gt 0 ] && [ "$1" != -- ]; do student_labs+=("$1"); shift; done
fi
[ "${1:-}" = -- ] && shift
passed=0; failed=0
scratch=$(mktemp -d); trap 'rm -rf "$scratch"' EXIT
export TMPDIR=$scratch   # what a suite leaves there (testutil.h) goes with the scratch
# The last summary: a suite may run a group of its own in a child process
# (test_cuda's fake driver), whose summary lands earlier in the log.
count() { sed -n "s/^\[  $1  \] \([0-9]*\) test.*/\1/p" "$2" | tail -n 1; }
# "name: reason" for each case a cmocka log skipped, once each (cmocka lists
# them again under its summary), in the order they ran.
skips() {
  awk '/^\[ RUN      \] / { reason = "" }
       /^  skipped: / { reason = substr($0, 12) }
       /^\[  SKIPPED \] / && !/ test\(s\)/ && !(substr($0, 14) in seen) {
         seen[substr($0, 14)]
         print substr($0, 14) ": " (reason == "" ? "(the suite gave no reason)" : reason) }' "$1"
}
skipped=0; : >"$scratch/skips"
# Seconds each step took ("seconds name" lines), so that a slow CI run says where its time went.
: >"$scratch/times"
timed() { local t0=$SECONDS; "$@"; local rc=$?; echo "$((SECONDS - t0)) $TIMED_NAME" >>"$scratch/times"; return $rc; }

while [ $# -gt 0 ] && [ "$1" != -- ]; do
  bin=$1; shift
  cache=$(mktemp -d "$scratch/cache.XXXXXX")
  TIMED_NAME=$bin timed env UOPC_CACHE_DIR="$cache" "$bin" >"$scratch/log" 2>&1
  status=$?
  p=$(count PASSED "$scratch/log"); f=$(count FAILED "$scratch/log")
  p=${p:-0}; f=${f:-0}
  if [ $status -ne 0 ] && [ "$f" = 0 ]; then f=1; fi   # crashed or exited early
  passed=$((passed + p)); failed=$((failed + f))
  s=$(skips "$scratch/log" | tee -a "$scratch/skips" | wc -l); skipped=$((skipped + s))
  [ "$s" != 0 ] && s=", $s skipped" || s=""
  if [ "$f" != 0 ]; then echo "FAIL $bin (exit $status)"; cat "$scratch/log"; else echo "ok   $bin ($p tests$s)"; fi
done
[ "${1:-}" = -- ] && shift
for spec in "$@"; do
  bin=${spec%%:*}; name=${spec#*:}
  cache=$(mktemp -d "$scratch/cache.XXXXXX")
  # only the named case (tests/case_filter.h): the rest of a broken build's suite proves nothing
  UOPC_TEST_CASE=$name UOPC_CACHE_DIR=$cache "$bin" >"$scratch/log" 2>&1
  if grep -q "^\[  FAILED  \] $name\$" "$scratch/log"; then
    echo "ok   $bin: the broken build fails $name, as it must"; passed=$((passed + 1))
  else
    echo "FAIL $bin: the broken build should fail $name, but it did not:"; cat "$scratch/log"; failed=$((failed + 1))
  fi
done
if [ -n "$student_build" ]; then
  if IMPL=labs TIMED_NAME="the student tree's drivers" timed tools/run-labs.sh "$student_build" "${student_labs[@]}" >"$scratch/labs" 2>&1; then
    echo "ok   the student tree's drivers pass or report their stubs"; passed=$((passed + 1))
  else
    echo "FAIL the student tree's drivers:"; cat "$scratch/labs"; failed=$((failed + 1))
  fi
fi
# Runs a Python suite that ends with `N passed, N failed` and adds its counts.
python_suite() {
  local name=$1; shift
  TIMED_NAME=$name timed "$@" 2>&1 | tee "$scratch/suite"
  local line hp hf
  line=$(tail -n 1 "$scratch/suite")
  hp=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p' <<<"$line")
  hf=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p' <<<"$line")
  [ -z "$hp" ] && { echo "FAIL $name: no summary line"; hf=1; hp=0; }
  passed=$((passed + hp)); failed=$((failed + hf))
}
if [ $harness = 1 ]; then
  python_suite harness .venv/bin/python -m harness.selfcheck --build "$build"
  # The compiler core against NumPy: 60 random graphs, 8 calls each (about 15 s, mostly gcc and NVRTC).
  python_suite core .venv/bin/python -m harness.check_core --build "$build" --graphs 60 --bindings 8
  # tensorjit's indexing against NumPy: 60 random chains of slices, selects and reshapes (a few seconds).
  python_suite tensorjit .venv/bin/python -m harness.check_tensorjit --build "$build" --chains 60
  # The core's random graphs replayed through tj_compile, dynamic and static (about 20 s, mostly gcc).
  python_suite core-tj .venv/bin/python -m harness.check_core_tj --build "$build" --graphs 24
  if TIMED_NAME="grader's own tests" timed .venv/bin/python -m unittest discover -s tests/grader >"$scratch/unit" 2>&1; then
    echo "ok   the grader's own tests ($(grep -o 'Ran [0-9]* tests' "$scratch/unit"))"; passed=$((passed + 1))
  else
    echo "FAIL the grader's own tests:"; cat "$scratch/unit"; failed=$((failed + 1))
  fi
  python_suite grader .venv/bin/python -m harness.grading.selfcheck
  # The runs the lab READMEs quote, made again (about 20 s: three labs' visible tests).
  python_suite examples .venv/bin/python -m harness.grading.examples --check
  # The counters the chapters and READMEs quote, against the goldens (no run: well under a second).
  python_suite quoted .venv/bin/python -m harness.grading.quoted
  python_suite figures .venv/bin/python tools/figures.py --check
  python_suite integrity .venv/bin/python -m harness.grading.integrity
fi
echo
echo "the slowest steps (seconds):"
sort -rn "$scratch/times" | head -n 8 | sed 's/^/  /'
if [ $skipped != 0 ]; then
  echo "$skipped skipped (neither passed nor failed; the suite's reason after each):"
  sed 's/^/  /' "$scratch/skips"
fi
echo "$passed passed, $failed failed"
[ $failed = 0 ]
