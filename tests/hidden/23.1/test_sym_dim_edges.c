/* test_sym_dim_edges.c: lab 23.1, instructor-only (tests/hidden/, not in the handout):
 * sym_dim_check at both edges of many bounds, multiples at the edges (of 16, and of others:
 * a check that knows only 16 fails), and values near INT64_MIN and INT64_MAX. Graded with
 * visibility after_due_date. */
#include "sym_dim.h"
#include "testutil.h"

static sym_dim dim(const char *name, int64_t lo, int64_t hi, int64_t multiple) {
  sym_dim d;
  uopc_error err = {0};
  assert_uopc_ok(sym_dim_init(&d, name, lo, hi, multiple, &err), err);
  return d;
}

/* value must be accepted (want 1) or rejected with UOPC_E_BOUNDS (want 0). */
static void expect(const sym_dim *d, int64_t value, int want) {
  uopc_error err = {0};
  int rc = sym_dim_check(d, value, &err);
  if (want && rc != UOPC_OK)
    fail_msg("dim '%s' in [%lld, %lld] multiple of %lld: value %lld should be accepted, got %s: %s", d->name,
             (long long)d->lo, (long long)d->hi, (long long)d->multiple_of, (long long)value,
             uopc_error_name(rc), err.message);
  if (!want && rc != UOPC_E_BOUNDS)
    fail_msg("dim '%s' in [%lld, %lld] multiple of %lld: value %lld should be UOPC_E_BOUNDS, got %s", d->name,
             (long long)d->lo, (long long)d->hi, (long long)d->multiple_of, (long long)value, uopc_error_name(rc));
}

static void test_sym_dim_check_accepts_and_rejects_at_every_edge(void **state) {
  (void)state;
  static const int64_t bounds[][2] = {{1, 1}, {1, 2}, {0, 7}, {3, 31}, {1, 64}, {1, 4096}, {-5, 5}};
  for (size_t k = 0; k < sizeof bounds / sizeof *bounds; k++) {
    sym_dim d = dim("n", bounds[k][0], bounds[k][1], 1);
    expect(&d, d.lo - 1, 0);
    expect(&d, d.lo, 1);
    expect(&d, d.hi, 1);
    expect(&d, d.hi + 1, 0);
  }
}

static void test_sym_dim_check_multiples_at_the_edges(void **state) {
  (void)state;
  sym_dim d = dim("n", 16, 4096, 16);
  expect(&d, 16, 1);
  expect(&d, 4096, 1);
  expect(&d, 4080, 1);
  expect(&d, 4095, 0);
  expect(&d, 17, 0);
  expect(&d, 0, 0);
  static const int64_t multiples[] = {2, 3, 7, 8, 64, 1000};
  for (size_t k = 0; k < sizeof multiples / sizeof *multiples; k++) {
    int64_t m = multiples[k];
    sym_dim e = dim("n", m, 50 * m, m);
    expect(&e, m, 1);
    expect(&e, 50 * m, 1);
    expect(&e, 7 * m, 1);
    expect(&e, 7 * m + 1, 0);
    expect(&e, 50 * m - 1, 0);
    expect(&e, m + m / 2, 0);
  }
  sym_dim neg = dim("k", -12, 12, 3);   /* negative multiples count too */
  expect(&neg, -12, 1);
  expect(&neg, -9, 1);
  expect(&neg, -10, 0);
  expect(&neg, 0, 1);
  expect(&neg, 13, 0);
}

static void test_sym_dim_check_extreme_values(void **state) {
  (void)state;
  sym_dim d = dim("n", 1, INT64_MAX, 1);
  expect(&d, INT64_MAX, 1);
  expect(&d, INT64_MIN, 0);
  expect(&d, 0, 0);
  sym_dim t = dim("n", 3, INT64_MAX, 3);   /* INT64_MAX = 3 * 3074457345618258602 + 1 */
  expect(&t, INT64_MAX, 0);
  expect(&t, INT64_MAX - 1, 1);
  expect(&t, INT64_MIN, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_sym_dim_check_accepts_and_rejects_at_every_edge),
    cmocka_unit_test(test_sym_dim_check_multiples_at_the_edges),
    cmocka_unit_test(test_sym_dim_check_extreme_values),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
