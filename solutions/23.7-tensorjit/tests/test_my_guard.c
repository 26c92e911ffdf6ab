/* test_my_guard.c: the reference experiment of lab 23.7 (the student's copy,
 * tests/student/23.7/test_my_guard.c, is a stub that fails). Through
 * tensorjit's public entry points only, one case per guard of
 * tests/student/guards.txt: each passes on the lab as it is and fails on
 * `make break LAB=23.7 GUARD=<name>` for its guard. */
#include "tensorjit.h"
#include "testutil.h"

static int affine(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* 2x + 1 */
  (void)user;
  out[0] = tp_add(c, tp_mul(c, tp_scalar(c, 2), in[0].t), tp_scalar(c, 1));
  return tp_status(c);
}

static int pick(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* x[len(y)] * 3 */
  (void)user;
  out[0] = tp_mul(c, tp_select(c, in[0].t, 0, tp_size(c, in[1].t, 0)), tp_scalar(c, 3));
  return tp_status(c);
}

static int inner(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* x[1:len(x)-1] */
  (void)user;
  tp_int stop = tp_int_add(c, tp_size(c, in[0].t, 0), tp_int_const(c, -1));
  out[0] = tp_slice(c, in[0].t, 0, tp_int_const(c, 1), stop, 1);
  return tp_status(c);
}

static int softmax_rows(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {
  (void)user;
  tp_tensor *x = in[0].t;
  tp_tensor *e = tp_exp(c, tp_sub(c, x, tp_reduce_at(c, IR_MAX, x, 1u << 1, 1, TP_HERE)));
  out[0] = tp_div(c, e, tp_sum(c, e, 1u << 1, 1));
  return tp_status(c);
}

/* A new f32 tensor, element i = i % 5 - 2. */
static uopc_tensor ramp(int rank, const int64_t *shape) {
  uopc_tensor t;
  uopc_error err = {0};
  assert_uopc_ok(uopc_tensor_empty(&t, UOPC_F32, rank, shape, &err), err);
  for (int64_t i = 0; i < uopc_tensor_numel(&t); i++) uopc_tensor_set(&t, i, (double)(i % 5) - 2);
  return t;
}

static tj_function *compile(tj_model m) {
  tj_function *f = NULL;
  uopc_error err = {0};
  assert_uopc_ok(tj_compile(&f, m, NULL, NULL, &err), err);
  return f;
}

/* 2x+1 of x, every element checked. */
static void call_affine(tj_function *f, int rank, const int64_t *shape) {
  uopc_tensor x = ramp(rank, shape), out = {0};
  uopc_error err = {0};
  assert_uopc_ok(tj_call(f, (tj_arg[]){tj_tensor(&x)}, 1, &out, &err), err);
  for (int64_t i = 0; i < uopc_tensor_numel(&x); i++)
    expect_close(uopc_tensor_get(&out, i), 2 * uopc_tensor_get(&x, i) + 1, 0, "2x+1: element %lld", (long long)i);
  uopc_tensor_release(&out), uopc_tensor_release(&x);
}

/* pin-01: n = 1 is a constant of its own, so it cannot reuse n = 3's artifact. */
static void test_my_guard_size_1_builds_its_own_artifact(void **state) {
  (void)state;
  tj_function *f = compile(affine);
  call_affine(f, 1, (int64_t[]){3});
  call_affine(f, 1, (int64_t[]){1});
  expect_int(tj_stats(f).artifacts_built, 2, "2x+1 on n = 3, then n = 1: artifacts built");
  tj_free(f);
}

/* dims-apart: (3, 3)'s artifact has a dim per axis, so it serves (3, 5). */
static void test_my_guard_square_matrix_serves_a_rectangle(void **state) {
  (void)state;
  tj_function *f = compile(affine);
  call_affine(f, 2, (int64_t[]){3, 3});
  call_affine(f, 2, (int64_t[]){3, 5});
  expect_int(tj_stats(f).artifacts_built, 1, "2x+1 on (3, 3), then (3, 5): artifacts built");
  tj_free(f);
}

/* trace-checked: x[len(y)] with len(y) = 4 past len(x) = 3 is refused. x lies
 * inside a longer storage, so the broken build reads a wrong element, not
 * past memory. */
static void test_my_guard_index_past_the_end_is_refused(void **state) {
  (void)state;
  tj_function *f = compile(pick);
  uopc_tensor whole = ramp(1, (int64_t[]){16}), x, y = ramp(1, (int64_t[]){2}), out = {0};
  uopc_error err = {0};
  assert_uopc_ok(uopc_tensor_slice(&x, &whole, 0, 0, 5, 1, &err), err);
  assert_uopc_ok(tj_call(f, (tj_arg[]){tj_tensor(&x), tj_tensor(&y)}, 2, &out, &err), err);   /* traced on (5, 2) */
  expect_close(uopc_tensor_get(&out, 0), 3 * uopc_tensor_get(&x, 2), 0, "x[len(y)] * 3 on (5, 2)");
  uopc_tensor_release(&out), uopc_tensor_release(&x), uopc_tensor_release(&y);
  assert_uopc_ok(uopc_tensor_slice(&x, &whole, 0, 0, 3, 1, &err), err);
  y = ramp(1, (int64_t[]){4});
  expect_int(tj_call(f, (tj_arg[]){tj_tensor(&x), tj_tensor(&y)}, 2, &out, &err), UOPC_E_BOUNDS,
             "x[len(y)] * 3 on (3, 4): the status (UOPC_E_BOUNDS expected)");
  uopc_tensor_release(&out), uopc_tensor_release(&x), uopc_tensor_release(&y), uopc_tensor_release(&whole);
  tj_free(f);
}

/* view-offset: x[1:len(x)-1] starts one element into x. */
static void test_my_guard_slice_view_starts_at_element_1(void **state) {
  (void)state;
  tj_function *f = compile(inner);
  uopc_tensor x = ramp(1, (int64_t[]){7}), out = {0};
  uopc_error err = {0};
  assert_uopc_ok(tj_call(f, (tj_arg[]){tj_tensor(&x)}, 1, &out, &err), err);
  expect_int(out.offset, x.offset + 1, "x[1:len(x)-1] of x (7,): the view's offset");
  for (int64_t i = 0; i < 5; i++)
    expect_close(uopc_tensor_get(&out, i), uopc_tensor_get(&x, i + 1), 0, "x[1:len(x)-1]: element %lld", (long long)i);
  uopc_tensor_release(&out), uopc_tensor_release(&x);
  tj_free(f);
}

/* reduction-reads: softmax's exp(x - max), read by the sum and the divide,
 * is stored once: the generated body calls exp_f32 once. */
static void test_my_guard_softmax_computes_exp_once(void **state) {
  (void)state;
  tj_function *f = compile(softmax_rows);
  uopc_tensor x = ramp(2, (int64_t[]){3, 8}), out = {0};
  uopc_error err = {0};
  assert_uopc_ok(tj_call(f, (tj_arg[]){tj_tensor(&x)}, 1, &out, &err), err);
  const char *src = tj_artifact_source(f, 0), *body = src ? strstr(src, "*/") : NULL;
  int calls = 0;
  for (const char *p = body ? strstr(body, "exp_f32(t") : NULL; p; p = strstr(p + 1, "exp_f32(t")) calls++;
  expect_int(calls, 1, "softmax over rows: exp_f32 calls in the generated body");
  uopc_tensor_release(&out), uopc_tensor_release(&x);
  tj_free(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_my_guard_size_1_builds_its_own_artifact),
    cmocka_unit_test(test_my_guard_square_matrix_serves_a_rectangle),
    cmocka_unit_test(test_my_guard_index_past_the_end_is_refused),
    cmocka_unit_test(test_my_guard_slice_view_starts_at_element_1),
    cmocka_unit_test(test_my_guard_softmax_computes_exp_once),
  };
  return cmocka_run_group_tests(tests, testutil_fresh_cache, testutil_remove_cache);
}
