/* test_sym_dim.c: lab 23.1, dims and bindings: bounds, multiples, lookup. */
#include "sym_dim.h"
#include "testutil.h"

static sym_dim dim(const char *name, int64_t lo, int64_t hi, int64_t multiple) {
  sym_dim d;
  uopc_error err = {0};
  assert_uopc_ok(sym_dim_init(&d, name, lo, hi, multiple, &err), err);
  return d;
}

static void expect_message(const uopc_error *err, const char *want) {
  if (strcmp(err->message, want) != 0)
    fail_msg("expected the message \"%s\", got \"%s\"", want, err->message);
}

static void test_sym_dim_bind_accepts_both_bounds(void **state) {
  (void)state;
  sym_dim n = dim("n", 1, 64, 1);
  sym_binding b;
  uopc_error err = {0};
  sym_binding_init(&b);
  assert_uopc_ok(sym_dim_bind(&b, &n, 1, &err), err);
  assert_uopc_ok(sym_dim_bind(&b, &n, 64, &err), err);
  int64_t v = 0;
  assert_uopc_ok(sym_binding_get(&b, &n, &v, &err), err);
  if (v != 64) fail_msg("bind n=1 then n=64: expected n = 64, got %lld", (long long)v);
  assert_int_equal(b.count, 1);
}

static void test_sym_dim_bind_rejects_value_above_hi(void **state) {
  (void)state;
  sym_dim n = dim("n", 1, 64, 1);
  sym_binding b;
  uopc_error err = {0};
  sym_binding_init(&b);
  assert_uopc_code(sym_dim_bind(&b, &n, 65, &err), UOPC_E_BOUNDS, err);
  expect_message(&err, "dim 'n' = 65 outside [1, 64]");
  assert_int_equal(b.count, 0);
}

static void test_sym_dim_bind_rejects_value_below_lo(void **state) {
  (void)state;
  sym_dim n = dim("n", 1, 64, 1);
  sym_binding b;
  uopc_error err = {0};
  sym_binding_init(&b);
  assert_uopc_code(sym_dim_bind(&b, &n, 0, &err), UOPC_E_BOUNDS, err);
  expect_message(&err, "dim 'n' = 0 outside [1, 64]");
  assert_uopc_code(sym_dim_bind(&b, &n, -3, &err), UOPC_E_BOUNDS, err);
  expect_message(&err, "dim 'n' = -3 outside [1, 64]");
}

static void test_sym_dim_bind_rejects_value_off_multiple(void **state) {
  (void)state;
  sym_dim n = dim("n", 16, 4096, 16);
  sym_binding b;
  uopc_error err = {0};
  sym_binding_init(&b);
  assert_uopc_code(sym_dim_bind(&b, &n, 20, &err), UOPC_E_BOUNDS, err);
  expect_message(&err, "dim 'n' = 20 is not a multiple of 16");
  assert_uopc_ok(sym_dim_bind(&b, &n, 4096, &err), err);
  /* The multiple is the dim's own, never 16 alone: 9 is a multiple of 3 but not of 16, 48 of 16 but
   * not of 32, so a check that knows only 16 fails here. */
  static const struct { int64_t multiple, on, off; const char *message; } cases[] = {
    {3, 9, 10, "dim 'n' = 10 is not a multiple of 3"},
    {8, 24, 20, "dim 'n' = 20 is not a multiple of 8"},
    {12, 36, 32, "dim 'n' = 32 is not a multiple of 12"},
    {32, 64, 48, "dim 'n' = 48 is not a multiple of 32"},
    {64, 192, 96, "dim 'n' = 96 is not a multiple of 64"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    sym_dim m = dim("n", cases[k].multiple, 100 * cases[k].multiple, cases[k].multiple);
    int rc = sym_dim_bind(&b, &m, cases[k].on, &err);
    if (rc != UOPC_OK)
      fail_msg("bind n = %lld (multiple_of %lld): expected UOPC_OK, got %s: %s", (long long)cases[k].on,
               (long long)cases[k].multiple, uopc_error_name(rc), err.message);
    rc = sym_dim_bind(&b, &m, cases[k].off, &err);
    if (rc != UOPC_E_BOUNDS)
      fail_msg("bind n = %lld (multiple_of %lld): expected UOPC_E_BOUNDS, got %s", (long long)cases[k].off,
               (long long)cases[k].multiple, uopc_error_name(rc));
    expect_message(&err, cases[k].message);
  }
}

static void test_sym_dim_bind_keeps_old_value_on_rejection(void **state) {
  (void)state;
  sym_dim n = dim("n", 1, 64, 1);
  sym_binding b;
  uopc_error err = {0};
  int64_t v = 0;
  sym_binding_init(&b);
  assert_uopc_ok(sym_dim_bind(&b, &n, 7, &err), err);
  assert_uopc_code(sym_dim_bind(&b, &n, 99, &err), UOPC_E_BOUNDS, err);
  assert_uopc_ok(sym_binding_get(&b, &n, &v, &err), err);
  if (v != 7) fail_msg("bind 7, then 99 (rejected): expected n = 7, got %lld", (long long)v);
}

static void test_sym_binding_get_reports_unbound_dim(void **state) {
  (void)state;
  sym_dim n = dim("n", 1, 64, 1), m = dim("m", 1, 8, 1);
  sym_binding b;
  uopc_error err = {0};
  int64_t v;
  sym_binding_init(&b);
  assert_uopc_ok(sym_dim_bind(&b, &m, 3, &err), err);
  assert_uopc_code(sym_binding_get(&b, &n, &v, &err), UOPC_E_UNBOUND, err);
  expect_message(&err, "dim 'n' is unbound");
}

static void test_sym_dim_bind_rejects_more_than_max_dims(void **state) {
  (void)state;
  sym_binding b;
  uopc_error err = {0};
  sym_binding_init(&b);
  for (int k = 0; k <= SYM_BINDING_MAX; k++) {
    char name[8];
    snprintf(name, sizeof name, "d%d", k);
    sym_dim d = dim(name, 0, 10, 1);
    int rc = sym_dim_bind(&b, &d, 5, &err);
    if (k < SYM_BINDING_MAX) assert_uopc_ok(rc, err);
    else assert_uopc_code(rc, UOPC_E_LIMIT, err);
  }
}

static void test_sym_dim_init_rejects_bad_dims(void **state) {
  (void)state;
  sym_dim d;
  uopc_error err = {0};
  assert_uopc_code(sym_dim_init(&d, "n", 5, 4, 1, &err), UOPC_E_INVALID, err);
  assert_uopc_code(sym_dim_init(&d, "2n", 1, 4, 1, &err), UOPC_E_INVALID, err);
  /* The generated code's own names: loop variables i0.., r0.. and temporaries t0.. */
  static const char *const reserved[] = {"i0", "r0", "t0", "t12", "r99"};
  for (size_t k = 0; k < sizeof reserved / sizeof reserved[0]; k++)
    if (sym_dim_init(&d, reserved[k], 1, 4, 1, &err) != UOPC_E_INVALID)
      fail_msg("dim '%s': expected UOPC_E_INVALID (a name the generated code uses), got UOPC_OK", reserved[k]);
  static const char *const usable[] = {"index", "i", "r", "t", "rows", "t0x", "x0", "_n"};
  for (size_t k = 0; k < sizeof usable / sizeof usable[0]; k++)
    assert_uopc_ok(sym_dim_init(&d, usable[k], 1, 4, 1, &err), err);
  assert_uopc_code(sym_dim_init(&d, "n", 1, 8, 0, &err), UOPC_E_INVALID, err);
  assert_uopc_code(sym_dim_init(&d, "n", 1, 15, 16, &err), UOPC_E_INVALID, err);
  expect_message(&err, "dim 'n': no multiple of 16 in [1, 15]");
  assert_uopc_code(sym_dim_init(&d, "n", -3, -1, 4, &err), UOPC_E_INVALID, err);   /* 0 and -4 are out */
  expect_message(&err, "dim 'n': no multiple of 4 in [-3, -1]");
  assert_uopc_ok(sym_dim_init(&d, "n", -7, -4, 4, &err), err);
  assert_uopc_ok(sym_dim_init(&d, "n", -3, 0, 4, &err), err);
  assert_uopc_ok(sym_dim_init(&d, "index", 0, 0, 1, &err), err);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_sym_dim_bind_accepts_both_bounds),
    cmocka_unit_test(test_sym_dim_bind_rejects_value_above_hi),
    cmocka_unit_test(test_sym_dim_bind_rejects_value_below_lo),
    cmocka_unit_test(test_sym_dim_bind_rejects_value_off_multiple),
    cmocka_unit_test(test_sym_dim_bind_keeps_old_value_on_rejection),
    cmocka_unit_test(test_sym_binding_get_reports_unbound_dim),
    cmocka_unit_test(test_sym_dim_bind_rejects_more_than_max_dims),
    cmocka_unit_test(test_sym_dim_init_rejects_bad_dims),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
