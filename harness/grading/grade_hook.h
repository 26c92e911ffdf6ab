/* grade_hook.h: appended by the grader to its scratch copy of tests/testutil.h (never to the
 * tree's own). With UOPC_GRADE_CASE set, a suite runs only that case (cmocka 1.1.5 has no
 * filter variable, but has cmocka_set_test_filter), reads a nonce from stdin before any test
 * runs, and after the group returns prints "@grade <nonce> failed=<n>" on stderr. Student code
 * cannot know the nonce, so printing cmocka's lines and exiting cannot forge a pass. */
#ifndef GRADE_HOOK_H
#define GRADE_HOOK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char grade_hook_case[256], grade_hook_nonce[80];

static inline int grade_hook_begin(void) {
  const char *name = getenv("UOPC_GRADE_CASE");
  if (!name) return 0;
  snprintf(grade_hook_case, sizeof grade_hook_case, "%s", name);
  cmocka_set_test_filter(grade_hook_case);
  if (!fgets(grade_hook_nonce, sizeof grade_hook_nonce, stdin)) grade_hook_nonce[0] = '\0';
  grade_hook_nonce[strcspn(grade_hook_nonce, "\n")] = '\0';
  if (!freopen("/dev/null", "r", stdin)) clearerr(stdin);
  unsetenv("UOPC_GRADE_CASE");
  return 0;
}

static inline int grade_hook_end(int failed) {
  if (grade_hook_case[0]) {
    fflush(stdout);
    fprintf(stderr, "\n@grade %s failed=%d\n", grade_hook_nonce, failed);
    memset(grade_hook_nonce, 0, sizeof grade_hook_nonce);
  }
  return failed;
}

#undef cmocka_run_group_tests
#define cmocka_run_group_tests(group_tests, group_setup, group_teardown)                         \
  (grade_hook_begin(), grade_hook_end(_cmocka_run_group_tests(#group_tests, group_tests,          \
      sizeof(group_tests) / sizeof((group_tests)[0]), group_setup, group_teardown)))

#endif
