/* test_sym_expr_edges.c: lab 23.1, instructor-only (tests/hidden/, not in the handout):
 * sym_expr_eval at the edges of int64. Each of +, - and * must report UOPC_E_OVERFLOW
 * the moment its exact result leaves int64, wherever it sits in the expression, and
 * must give the exact value when the result is the last one that fits. The dims are
 * bound to the values, so no constructor can fold them away. Graded after the due date. */
#include <inttypes.h>
#include "sym_expr.h"
#include "testutil.h"

typedef struct fixture {
  sym_arena *arena;
  sym_dim x, y;
  const sym_expr *ex, *ey;
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  uopc_error err = {0};
  if (!f || sym_arena_new(&f->arena, &err)) return -1;
  if (sym_dim_init(&f->x, "x", INT64_MIN, INT64_MAX, 1, &err) ||
      sym_dim_init(&f->y, "y", INT64_MIN, INT64_MAX, 1, &err)) return -1;
  f->ex = sym_expr_dim(f->arena, &f->x);
  f->ey = sym_expr_dim(f->arena, &f->y);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  sym_arena_free(f->arena);
  free(f);
  return 0;
}

/* e evaluated with x and y bound: want_rc UOPC_OK with value want, or the error code. */
static void expect(const fixture *f, const char *what, const sym_expr *e, int64_t x, int64_t y, int want_rc,
                   int64_t want) {
  sym_binding b;
  uopc_error err = {0};
  int64_t got = 0;
  if (!e) fail_msg("%s: the expression could not be built", what);
  sym_binding_init(&b);
  assert_uopc_ok(sym_dim_bind(&b, &f->x, x, &err), err);
  assert_uopc_ok(sym_dim_bind(&b, &f->y, y, &err), err);
  int rc = sym_expr_eval(e, &b, &got, &err);
  if (rc != want_rc)
    fail_msg("%s with x = %" PRId64 ", y = %" PRId64 ": expected %s, got %s (value %" PRId64 ") %s", what, x, y,
             uopc_error_name(want_rc), uopc_error_name(rc), got, err.message);
  if (want_rc == UOPC_OK && got != want)
    fail_msg("%s with x = %" PRId64 ", y = %" PRId64 ": expected %" PRId64 ", got %" PRId64, what, x, y, want, got);
}

static void expect_message(const fixture *f, const sym_expr *e, int64_t x, int64_t y, const char *want) {
  sym_binding b;
  uopc_error err = {0};
  int64_t got = 0;
  sym_binding_init(&b);
  assert_uopc_ok(sym_dim_bind(&b, &f->x, x, &err), err);
  assert_uopc_ok(sym_dim_bind(&b, &f->y, y, &err), err);
  assert_uopc_code(sym_expr_eval(e, &b, &got, &err), UOPC_E_OVERFLOW, err);
  assert_contains(err.message, want);
}

static void test_sym_expr_eval_reports_overflow(void **state) {
  fixture *f = *state;
  sym_arena *a = f->arena;
  const sym_expr *sum = sym_expr_add(a, f->ex, f->ey), *diff = sym_expr_sub(a, f->ex, f->ey);
  const sym_expr *prod = sym_expr_mul(a, f->ex, f->ey);
  expect(f, "x + y", sum, INT64_MAX, 1, UOPC_E_OVERFLOW, 0);
  expect(f, "x + y", sum, INT64_MIN, -1, UOPC_E_OVERFLOW, 0);
  expect(f, "x - y", diff, INT64_MIN, 1, UOPC_E_OVERFLOW, 0);
  expect(f, "x - y", diff, 0, INT64_MIN, UOPC_E_OVERFLOW, 0);
  expect(f, "x * y", prod, INT64_C(1) << 32, INT64_C(1) << 32, UOPC_E_OVERFLOW, 0);
  expect(f, "x * y", prod, INT64_MIN, -1, UOPC_E_OVERFLOW, 0);
  expect(f, "x * y", prod, -3, INT64_C(3074457345618258603), UOPC_E_OVERFLOW, 0);
  /* deep inside: (x * y) // 7 + 1 and max(x, x * y) overflow in the product */
  const sym_expr *inner = sym_expr_add(a, sym_expr_floordiv(a, prod, sym_expr_const(a, 7)), sym_expr_const(a, 1));
  expect(f, "(x * y) // 7 + 1", inner, INT64_C(1) << 40, INT64_C(1) << 40, UOPC_E_OVERFLOW, 0);
  expect(f, "max(x, x * y)", sym_expr_max(a, f->ex, prod), INT64_MAX, 2, UOPC_E_OVERFLOW, 0);
  /* the message names the operands and the operator that overflowed */
  expect_message(f, sum, INT64_MAX, 1, "9223372036854775807 + 1 overflows int64");
  expect_message(f, diff, INT64_MIN, 1, "-9223372036854775808 - 1 overflows int64");
  expect_message(f, prod, INT64_C(1) << 32, INT64_C(1) << 32, "4294967296 * 4294967296 overflows int64");
}

static void test_sym_expr_eval_is_exact_at_the_edges(void **state) {
  fixture *f = *state;
  sym_arena *a = f->arena;
  const sym_expr *sum = sym_expr_add(a, f->ex, f->ey), *diff = sym_expr_sub(a, f->ex, f->ey);
  const sym_expr *prod = sym_expr_mul(a, f->ex, f->ey);
  expect(f, "x + y", sum, INT64_MAX - 1, 1, UOPC_OK, INT64_MAX);
  expect(f, "x + y", sum, INT64_MIN, INT64_MAX, UOPC_OK, -1);
  expect(f, "x - y", diff, INT64_MIN + 1, 1, UOPC_OK, INT64_MIN);
  expect(f, "x * y", prod, -(INT64_C(1) << 62), 2, UOPC_OK, INT64_MIN);
  expect(f, "x * y", prod, 3, INT64_C(3074457345618258602), UOPC_OK, INT64_C(9223372036854775806));
  expect(f, "x // 3", sym_expr_floordiv(a, f->ex, sym_expr_const(a, 3)), INT64_MIN, 0, UOPC_OK,
         INT64_C(-3074457345618258603));
  expect(f, "x % 3", sym_expr_mod(a, f->ex, sym_expr_const(a, 3)), INT64_MIN, 0, UOPC_OK, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_sym_expr_eval_reports_overflow),
    cmocka_unit_test(test_sym_expr_eval_is_exact_at_the_edges),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
