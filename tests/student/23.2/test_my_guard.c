/* test_my_guard.c: your experiment for lab 23.2 (README, "Break it yourself").
 * Write the tests that catch a wrong dispatch: each must pass on your lab as
 * it is, and fail when one guard of the fast variant is removed:
 *
 *   make break LAB=23.2                        the guards you can remove
 *   make break LAB=23.2 GUARD=divisibility     this file against both builds
 *
 * The grader runs this file against your lab and against three broken builds
 * of it (GUARD=divisibility, alignment, out-contiguity): the points of each
 * go to a file that passes on the first and fails on that one. Check the
 * dispatcher's decision (dispatch_choose) before a kernel runs where running
 * it could fault, and compare every element (tests/23.2/test_dispatch.c shows
 * how, with a poisoned tail). Replace the test below with yours. */
#include "dispatch.h"
#include "testutil.h"

static void test_my_guard(void **state) {
  (void)state;
  fail_msg("test_my_guard is not implemented yet: writing this test is the exercise "
           "(labs/23.2-guarded-dispatch/README.md, 'Break it yourself')");
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_my_guard),
  };
  return cmocka_run_group_tests(tests, testutil_fresh_cache, testutil_remove_cache);
}
