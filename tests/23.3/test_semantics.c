/* test_semantics.c: lab 23.3, the values written by hand (semantics.c), checked without the
 * answers: deciding them before a kernel does is the exercise (chapter 23.3, "Semantics
 * first"). Each case's values are compared with a fingerprint (semantics_digest.h), so a
 * failure names the program whose values are wrong and shows none of them; the held-out
 * suite (tests/hidden/23.3/) grades the values against an eager reference. */
#include "semantics.h"
#include "testutil.h"
#include "semantics_digest.h"

enum { N = 8 };

static void expect_case(semantics_case c) {
  double got[N];
  uopc_error err = {0};
  assert_uopc_ok(semantics_expect(c, got, N, &err), err);
  if (semantics_digest(got, semantics_count(c)) != SEMANTICS_DIGESTS[c])
    fail_msg("case %d, %s: one or more of the %d values semantics_expect gives is not what the program "
             "leaves (the held-out tests say which after the due date); evaluate the whole right-hand "
             "side from the old values, then store it", (int)c, SEMANTICS_PROGRAMS[c], semantics_count(c));
}

static void test_semantics_disjoint_halves_has_the_semantics_values(void **state) {
  (void)state;
  expect_case(SEM_DISJOINT_HALVES);
}

static void test_semantics_shift_right_has_the_semantics_values(void **state) {
  (void)state;
  expect_case(SEM_SHIFT_RIGHT);
}

static void test_semantics_shift_left_has_the_semantics_values(void **state) {
  (void)state;
  expect_case(SEM_SHIFT_LEFT);
}

static void test_semantics_reversed_self_add_has_the_semantics_values(void **state) {
  (void)state;
  expect_case(SEM_REVERSED_SELF);
}

static void test_semantics_interleaved_has_the_semantics_values(void **state) {
  (void)state;
  expect_case(SEM_INTERLEAVED);
}

static void test_semantics_view_survives_has_the_semantics_values(void **state) {
  (void)state;
  expect_case(SEM_VIEW_SURVIVES);
}

static void test_semantics_param_update_has_the_semantics_values(void **state) {
  (void)state;
  expect_case(SEM_PARAM_UPDATE);
}

static void test_semantics_count_gives_each_case_its_number_of_values(void **state) {
  (void)state;
  static const int want[SEM_COUNT] = {8, 8, 8, 8, 8, 4, 2};
  for (int c = 0; c < SEM_COUNT; c++)
    if (semantics_count((semantics_case)c) != want[c])
      fail_msg("case %d: expected %d values, got %d", c, want[c], semantics_count((semantics_case)c));
  expect_int(semantics_count(SEM_COUNT), 0, "semantics_count of SEM_COUNT (no such case)");
  expect_int(semantics_count((semantics_case)-1), 0, "semantics_count of case -1 (no such case)");
}

static void test_semantics_expect_writes_only_the_case_values(void **state) {
  (void)state;
  double out[N];
  uopc_error err = {0};
  for (int i = 0; i < N; i++) out[i] = -1;
  assert_uopc_ok(semantics_expect(SEM_PARAM_UPDATE, out, N, &err), err);
  for (int i = 2; i < N; i++)
    if (out[i] != -1) fail_msg("out[%d] was written (%g) by a case with 2 values", i, out[i]);
  assert_uopc_ok(semantics_expect(SEM_VIEW_SURVIVES, out, 4, &err), err);   /* exactly its count */
}

static void test_semantics_expect_rejects_unknown_case_and_short_buffer(void **state) {
  (void)state;
  double out[N];
  uopc_error err = {0};
  assert_uopc_code(semantics_expect(SEM_COUNT, out, N, &err), UOPC_E_INVALID, err);
  assert_uopc_code(semantics_expect((semantics_case)-1, out, N, &err), UOPC_E_INVALID, err);
  assert_uopc_code(semantics_expect(SEM_SHIFT_LEFT, out, 7, &err), UOPC_E_INVALID, err);
  assert_uopc_code(semantics_expect(SEM_PARAM_UPDATE, out, 1, &err), UOPC_E_INVALID, err);
  assert_uopc_code(semantics_expect(SEM_PARAM_UPDATE, NULL, 2, &err), UOPC_E_INVALID, err);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_semantics_disjoint_halves_has_the_semantics_values),
      cmocka_unit_test(test_semantics_shift_right_has_the_semantics_values),
      cmocka_unit_test(test_semantics_shift_left_has_the_semantics_values),
      cmocka_unit_test(test_semantics_reversed_self_add_has_the_semantics_values),
      cmocka_unit_test(test_semantics_interleaved_has_the_semantics_values),
      cmocka_unit_test(test_semantics_view_survives_has_the_semantics_values),
      cmocka_unit_test(test_semantics_param_update_has_the_semantics_values),
      cmocka_unit_test(test_semantics_count_gives_each_case_its_number_of_values),
      cmocka_unit_test(test_semantics_expect_writes_only_the_case_values),
      cmocka_unit_test(test_semantics_expect_rejects_unknown_case_and_short_buffer),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
