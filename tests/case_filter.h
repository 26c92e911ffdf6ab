/* case_filter.h: UOPC_TEST_CASE=name runs one case of a suite (included by testutil.h, so by
 * every suite).
 *
 * `make test` proves that each broken build fails its named test (tests/broken/); the rest of
 * that build's suite proves nothing, and some of those runs took minutes (23.3's test_program
 * against the build without its liveness check). The
 * filter is set in a constructor, before main, with cmocka's own cmocka_set_test_filter (a
 * glob; a case's name has no wildcard). The grade hook selects its case the same way, later
 * (just before main), so in a graded run the grader's choice is the one that holds; the grader
 * never sets this variable. */
#ifndef CASE_FILTER_H
#define CASE_FILTER_H

#include <stdlib.h>

__attribute__((constructor)) static void case_filter_from_env(void) {
  const char *name = getenv("UOPC_TEST_CASE");
  if (name && *name) cmocka_set_test_filter(name);
}

#endif
