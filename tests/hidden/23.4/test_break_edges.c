/* test_break_edges.c: lab 23.4, instructor-only (tests/hidden/, not in the handout): graph
 * breaks past the visible cases. A region whose pending handles are only a size read at run
 * time (an i32) and a constant still closes into one program with the right values; a model
 * that reads data three times a call runs in four regions, matches the same model run
 * eagerly, counts three breaks a call, and builds its regions once for calls of other sizes.
 * Graded with visibility after_due_date. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>
#include "tp_compile.h"
#include "testutil.h"

static int setup(void **state) { return testutil_fresh_cache(state); }
static int teardown(void **state) { return testutil_remove_cache(state); }

static uopc_tensor ramp(int64_t n, int sign) {
  uopc_tensor x;
  uopc_error err = {0};
  assert_uopc_ok(uopc_tensor_empty(&x, UOPC_F32, 1, &n, &err), err);
  for (int64_t i = 0; i < n; i++) uopc_tensor_set(&x, i, sign * (double)(i + 1) / (double)n);
  return x;
}

static void test_region_close_of_sizes_and_constants_only(void **state) {
  (void)state;
  tp_ctx c;
  sym_dim n;
  uopc_error err = {0};
  uopc_tensor xv = ramp(6, 1);
  assert_uopc_ok(tp_ctx_init(&c, TP_TRACE, &err), err);
  assert_uopc_ok(sym_dim_init(&n, "n", 1, 64, 1, &err), err);
  assert_uopc_ok(sym_dim_bind(&c.binding, &n, 6, &err), err);
  const sym_expr *shape[1] = {sym_expr_dim(ir_graph_arena(c.g), &n)};
  tp_tensor *x = tp_input_handle(&c, ir_input(c.g, "x", UOPC_F32, 1, shape), &xv, TP_HERE);
  tp_tensor *k = tp_from_int_at(&c, tp_size(&c, x, 0), UOPC_I32, TP_HERE), *one = tp_scalar(&c, 1);
  if (tp_status(&c)) fail_msg("building n as an i32 and the constant 1: %s", tp_error(&c)->message);
  int64_t built = uopc_counter_get("programs constructed");
  assert_uopc_ok(tp_region_close(&c, TP_HERE, &err), err);
  expect_int(uopc_counter_get("programs constructed") - built, 1,
             "tp_region_close of size(x, 0) as i32 and the constant 1, n = 6: the counter 'programs constructed' moved by");
  expect_non_null(tp_value(k), "tp_region_close: size(x, 0)'s value");
  expect_non_null(tp_value(one), "tp_region_close: the constant 1's value");
  expect_int(tp_value(k)->dtype, UOPC_I32, "tp_region_close: size(x, 0)'s dtype (UOPC_I32 is %d)", UOPC_I32);
  expect_int((int64_t)uopc_tensor_get(tp_value(k), 0), 6, "tp_region_close: size(x, 0) at n = 6");
  expect_close(uopc_tensor_get(tp_value(one), 0), 1.0, 0, "tp_region_close: the constant 1");
  expect_ptr(tp_value(x)->storage, xv.storage, "tp_region_close: x's storage (an argument is not an output)");
  tp_ctx_fini(&c);
  uopc_tensor_release(&xv);
}

/* y = x sign(sum x), z = y + x or y - x by the sign of sum(y), out = z (sum z > 0 ? 2 : 3) + x:
 * each read in its own region, and only branches (no value read baked in as a constant). */
static int three_reads(tp_ctx *c, tp_tensor *const *in, tp_tensor **out, void *user) {
  (void)user;
  double s = tp_item(c, tp_sum(c, in[0], 0u, 0));
  tp_tensor *y = tp_mul(c, in[0], tp_scalar(c, s > 0 ? 1 : -1));
  double t = tp_item(c, tp_sum(c, y, 0u, 0));
  tp_tensor *z = t > 0 ? tp_add(c, y, in[0]) : tp_sub(c, y, in[0]);
  double u = tp_item(c, tp_sum(c, z, 0u, 0));
  out[0] = tp_add(c, tp_mul(c, z, tp_scalar(c, u > 0 ? 2 : 3)), in[0]);
  return tp_status(c);
}

static void call_matches_eager(tp_compiled *f, int64_t n, int sign) {
  uopc_tensor x = ramp(n, sign), out[1] = {{0}}, eout[1] = {{0}};
  const uopc_tensor *in[1] = {&x};
  uopc_error err = {0};
  char what[80];
  snprintf(what, sizeof what, "three tp_item reads, n = %lld, sign %+d: compiled vs eager", (long long)n, sign);
  assert_uopc_ok(tp_call(f, in, out, NULL, &err), err);
  assert_uopc_ok(tp_run_eager(three_reads, NULL, in, 1, 1, 0, eout, NULL, &err), err);
  assert_tensors_close(&out[0], &eout[0], 1e-5, what);
  uopc_tensor_release(&x), uopc_tensor_release(&out[0]), uopc_tensor_release(&eout[0]);
}

static void test_three_breaks_a_call_match_eager_and_count_three(void **state) {
  (void)state;
  sym_arena *arena = NULL;
  uopc_error err = {0};
  sym_dim n;
  assert_uopc_ok(sym_arena_new(&arena, &err), err);
  assert_uopc_ok(sym_dim_init(&n, "n", 1, 1024, 1, &err), err);
  tp_arg a = {"x", UOPC_F32, 1, {sym_expr_dim(arena, &n)}};
  tp_compiled *f = NULL;
  assert_uopc_ok(tp_compiled_new(&f, three_reads, NULL, &a, 1, 1, NULL, &err), err);
  int64_t breaks = uopc_counter_get(TP_C_BREAKS);
  call_matches_eager(f, 3, 1);
  call_matches_eager(f, 7, -1);
  int64_t built = uopc_counter_get("programs constructed");
  call_matches_eager(f, 8, 1);
  call_matches_eager(f, 5, -1);
  expect_int(uopc_counter_get(TP_C_BREAKS) - breaks, 12, "three tp_item reads a call, 4 calls: the counter '%s' moved by", TP_C_BREAKS);
  expect_int(uopc_counter_get("programs constructed"), built,
             "the same signs again at n = 8, 5: the counter 'programs constructed' (regions are built once)");
  expect_int(tp_compiled_variant_count(f), 0, "three tp_item reads a call: variants (a broken trace is never kept)");
  tp_compiled_free(f);
  sym_arena_free(arena);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_region_close_of_sizes_and_constants_only),
      cmocka_unit_test(test_three_breaks_a_call_match_eager_and_count_three),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
