/* test_my_guard.c: your experiment for lab 23.6 (README, "Break it yourself").
 * Write a test that catches the wrong dispatch of a strided view: it must
 * pass on the lab as it is, and fail when the contiguity check is removed:
 *
 *   make break LAB=23.6 GUARD=contiguity       this file against both builds
 *
 * The grader does the same, and its points go to a file that passes on the
 * first build and fails on the second. Compare every element of out with
 * x*x + 1 computed here (tests/23.6/test_guarded_jit.c shows how). Replace
 * the test below with yours. */
#include "guarded_jit.h"
#include "testutil.h"

static void test_my_guard(void **state) {
  (void)state;
  fail_msg("test_my_guard is not implemented yet: writing this test is the exercise "
           "(labs/23.6-one-kernel-many-lengths/README.md, 'Break it yourself')");
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_my_guard),
  };
  return cmocka_run_group_tests(tests, testutil_fresh_cache, testutil_remove_cache);
}
