/* spawnutil.h: uopc_spawn of a program that does not exist, with the k-th malloc from now
 * failing, for the suites that make glibc's malloc fail on demand (test_spawn, test_faults:
 * each defines TESTUTIL_FAILING_MALLOC and includes testutil.h and uopc/src/internal.h first).
 * AddressSanitizer's allocator replaces the one made to fail: not there. */
#ifndef TESTS_SPAWNUTIL_H
#define TESTS_SPAWNUTIL_H
#ifndef __SANITIZE_ADDRESS__
static int spawn_with_malloc_k_failing(int k, const char *cwd, uopc_error *err) {
  char *const argv[] = {"/nonexistent/uopc-probe", NULL};
  uopc_spawn_result *res = calloc(1, sizeof *res);
  assert_non_null(res);
  fail_next_malloc = k;
  int rc = uopc_spawn(argv, cwd, res, err);
  fail_next_malloc = 0;
  free(res);
  return rc;
}
#endif
#endif
