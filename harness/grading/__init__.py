"""The grader's modules (harness/grade.py is the command line).

    manifest   one JSON manifest per lab: tests, points, kinds, dependencies; checked against
               the point table of the lab's README.md
    workspace  a scratch copy per lab: the student's files, the instructor's everything else,
               built with the project Makefile
    sandbox    one process per test: timeout, resource limits, scrubbed environment, fresh
               working and cache directories, its own process group
    cmocka     the hook that runs one case per process, and the parser of its output
    checks     the NumPy checks of harness/check_<lab>.py, one process per lab, per sub-check
    counters   driver runs, the counters JSON the runtime writes at exit, golden comparison
    results    Gradescope's results.json, rewritten after every test
    tables     what the console shows
    runner     grading one lab: build, run in dependency order, score
    verdict    PASS, FAIL, CRASH, TIMEOUT, EXITED EARLY, SKIPPED, NOT RUN and a test's Result
    checkwrap  the wrapper that tags a NumPy check's own report lines with a nonce
    grade_hook.h  the one-case-per-process hook appended to the scratch copy's testutil.h
    goldens    make goldens / check-goldens
    selfcheck  solutions full marks, stubs zero, every broken variant loses points
    handout    the manifests and goldens of a student handout (tools/handout.sh)
"""
