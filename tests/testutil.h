/* testutil.h: small helpers shared by the cmocka suites.
 * Each suite runs with its own fresh cache directory so that cold and warm
 * cache behaviour is exact and suites never see each other's entries. */
#ifndef TESTUTIL_H
#define TESTUTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <ftw.h>
#include <unistd.h>

static char testutil_cache_dir[4096];

static int testutil_unlink(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st; (void)flag; (void)ftw;
  return remove(path);
}

static inline void testutil_remove_tree(const char *path) {
  nftw(path, testutil_unlink, 16, FTW_DEPTH | FTW_PHYS);
}

/* A new private cache directory, exported as UOPC_CACHE_DIR. */
static inline int testutil_fresh_cache(void **state) {
  (void)state;
  snprintf(testutil_cache_dir, sizeof testutil_cache_dir, "/tmp/uopc-test-XXXXXX");
  if (!mkdtemp(testutil_cache_dir)) return -1;
  return setenv("UOPC_CACHE_DIR", testutil_cache_dir, 1);
}

static inline int testutil_remove_cache(void **state) {
  (void)state;
  testutil_remove_tree(testutil_cache_dir);
  return 0;
}

/* Fails the test with the error's code and message when rc is not UOPC_OK. */
#define assert_uopc_ok(rc, err)                                                              \
  do {                                                                                       \
    int rc_ = (rc);                                                                          \
    if (rc_ != 0) fail_msg("expected UOPC_OK, got %s: %s", uopc_error_name(rc_), (err).message); \
  } while (0)

/* Fails unless rc is the expected code; prints both names and the message. */
#define assert_uopc_code(rc, code, err)                                                     \
  do {                                                                                      \
    int rc_ = (rc);                                                                         \
    if (rc_ != (code))                                                                      \
      fail_msg("expected %s, got %s: %s", uopc_error_name(code), uopc_error_name(rc_), (err).message); \
  } while (0)

/* Fails unless haystack contains needle, printing both. */
#define assert_contains(haystack, needle)                                                   \
  do {                                                                                      \
    if (!strstr((haystack), (needle)))                                                      \
      fail_msg("expected the text to contain \"%s\"; it was:\n%s", (needle), (haystack));   \
  } while (0)

#endif
