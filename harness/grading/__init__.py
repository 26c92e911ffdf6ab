"""The grader's modules (harness/grade.py is the command line).

A grader trusts nothing the student's process says (STYLE item 17): student code runs only in
sandboxed processes, and every verdict is made or checked by the grader from outside them.

    manifest   one JSON manifest per lab: tests, points, kinds, dependencies; checked against
               the point table of the lab's README.md
    intake     the submission's student files: regular files of the manifest's names only, no
               links, size-limited, read as the --run-as user; anything else a named refusal
    screen     what a student file may hold (given code unchanged, no asm, no constructors,
               no #pragma) and what the built library may do (no symbol that replaces a
               library's, no ifunc, no new calls that spawn, map memory or load code)
    workspace  the grader's own build of what no student wrote (runtime, grade hook, given
               objects, reference libraries, held-out suites as objects), and a scratch copy
               per lab built from it and the student's files
    grade.mk   the grader's additions to the project Makefile
    sandbox    one bubblewrap sandbox per build and test (private /tmp, PID namespace, no
               network, the grader's files read-only or absent, as an unprivileged user),
               resource limits, a cgroup for the whole grade; the fallback where bwrap cannot run
    grade_hook.c  linked first into every suite and driver: reports main's status and the
               counters over a channel only it can write (seccomp), selects the cmocka case
    hook       runs a hooked binary and parses its record
    cmocka     one case per process, judged from the hook's record
    counters   driver runs, the counters the hook sends, compile counts from the cache
               directory, golden comparison
    checks     the NumPy checks: the judging half in a trusted process, the C calls in a
               sandboxed worker (harness/remote.py)
    scrub      what a run's output may contribute to the report: capped, paths hidden
    results    Gradescope's results.json, rewritten after every test
    tables     what the console shows
    feedback   make lab-23.N's table (check mode): a row per function, passed, not
               implemented, FAILED or waiting, and the next one in the README's suggested order
    runner     grading one lab: references read first, build, run in dependency order, score
    verdict    PASS, FAIL, CRASH, TIMEOUT, EXITED EARLY, SKIPPED, NOT RUN and a test's Result
    goldens    make goldens / check-goldens
    examples   make examples / check-examples: the runs the lab READMEs quote, made again
    quoted     make check-quoted: the counters the chapters and READMEs quote, against goldens/
    selfcheck  solutions full marks, stubs zero, every broken variant loses points
    integrity  adversarial submissions, each graded and held to the honest score; the
               grader's tree unchanged afterwards
    handout    the manifests and goldens of a student handout (tools/handout.sh)
"""
