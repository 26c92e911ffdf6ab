/* test_train.c: tensorjit's training entry points (tj_call_saving,
 * tj_backward): gradients against a reference written here in C (double)
 * and f64 finite differences of the compiled forward, any incoming
 * gradient's layout, the exact forward and backward artifact counts over
 * size sequences, records used in any order, and 23.4's two-layer model
 * trained for 20 SGD steps equal to the eager loop. Chapter 23.7, "Training". */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include "tensorjit.h"
#include "tp_compile.h"
#define TESTUTIL_FAILING_MALLOC   /* out-of-memory paths on demand: fail_next_malloc, fail_next_calloc */
#include "testutil.h"

static int setup(void **state) { return testutil_fresh_cache(state); }
static int teardown(void **state) { return testutil_remove_cache(state); }
static int reset(void **state) {
  (void)state;
  uopc_counters_reset();
  return 0;
}

/* ---- Models. */

/* out0 = tanh(x) * w (w (c,) broadcast over x (r, c)); out1 = mean(x * x, axis 0). */
static int tanh_scale(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {
  (void)user;
  tp_tensor *x = in[0].t;
  out[0] = tp_mul(c, tp_tanh(c, x), in[1].t);
  out[1] = tp_reduce_at(c, IR_MEAN, tp_mul(c, x, x), 1u << 0, 0, TP_HERE);
  return tp_status(c);
}

/* sum(x / rows), rows = x.size(0) as a runtime tensor. */
static int sum_over_rows(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {
  (void)user;
  tp_tensor *rows = tp_from_int_at(c, tp_size(c, in[0].t, 0), UOPC_F32, TP_HERE);
  out[0] = tp_sum(c, tp_div(c, in[0].t, rows), 0u, 0);
  return tp_status(c);
}

/* 23.4's two-layer model (labs/23.4-function-tracing/tp_ffi.c):
 * loss = mean((tanh(x @ w1) @ w2 - y)^2); x, w1, w2, y. */
static int two_layer(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {
  (void)user;
  tp_tensor *h = tp_tanh(c, tp_matmul(c, in[0].t, in[1].t));
  tp_tensor *d = tp_sub(c, tp_matmul(c, h, in[2].t), in[3].t);
  out[0] = tp_mean(c, tp_mul(c, d, d));
  return tp_status(c);
}

/* mean(tanh(tanh(... tanh(x)))), *user tanh's deep (f64). */
static int tanh_chain(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {
  tp_tensor *t = in[0].t;
  for (int k = 0; k < *(const int *)user; k++) t = tp_tanh(c, t);
  out[0] = tp_mean(c, t);
  return tp_status(c);
}

/* The same, with 23.4's signature (tp_run_eager's). */
static int two_layer_tp(tp_ctx *c, tp_tensor *const *in, tp_tensor **out, void *user) {
  (void)user;
  tp_tensor *h = tp_tanh(c, tp_matmul(c, in[0], in[1]));
  tp_tensor *d = tp_sub(c, tp_matmul(c, h, in[2]), in[3]);
  out[0] = tp_mean(c, tp_mul(c, d, d));
  return tp_status(c);
}

/* An opaque C function (a copy) the compiler cannot differentiate: every
 * tp_ op has a derivative rule, a call-out has none. */
static int copy_fn(const uopc_tensor *const *ins, int n_in, uopc_tensor *outs, int n_out, void *user, uopc_error *err) {
  (void)n_in, (void)n_out, (void)user;
  int rc = uopc_tensor_empty(&outs[0], ins[0]->dtype, ins[0]->rank, ins[0]->shape, err);
  return rc ? rc : uopc_tensor_copy(&outs[0], ins[0], err);
}

static int same_shape(tp_ctx *c, const tp_shape *in, int n_in, tp_shape *out, void *user) {
  (void)n_in, (void)user;
  out[0] = in[0];
  return tp_status(c);
}

static int no_rule(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* sum(copy(x)) */
  (void)user;
  static const tp_callout copy = {.name = "copy", .fn = copy_fn, .n_in = 1, .n_out = 1, .dtype = {UOPC_F64},
                                  .rank = {2}, .shape_fn = same_shape};
  tp_tensor *y = NULL;
  tp_callout(c, &copy, &in[0].t, 1, &y);
  out[0] = tp_sum(c, y, 0u, 0);
  return tp_status(c);
}

static int half_cols_out(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* (x*x)[:, cols//2:] */
  (void)user;
  tp_int half = tp_int_floordiv(c, tp_size(c, in[0].t, 1), tp_int_const(c, 2));
  out[0] = tp_slice(c, tp_mul(c, in[0].t, in[0].t), 1, half, TP_NONE, 1);
  return tp_status(c);
}

/* ---- Helpers. */

static uint64_t rng = 88172645463325252ull;
static double uniform(void) {   /* xorshift64: deterministic across machines */
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (double)(rng >> 11) / 9007199254740992.0 * 2 - 1;
}

static uopc_tensor random_tensor(uopc_dtype dt, int rank, const int64_t *shape) {
  uopc_tensor x;
  uopc_error err = {0};
  assert_uopc_ok(uopc_tensor_empty(&x, dt, rank, shape, &err), err);
  for (int64_t i = 0; i < uopc_tensor_numel(&x); i++) uopc_tensor_set(&x, i, uniform());
  return x;
}

static double at2(const uopc_tensor *t, int64_t i, int64_t j) { return uopc_tensor_get(t, i * t->shape[1] + j); }

/* tanh_scale's vector-Jacobian product, in double: dx, dw for seeds g0 (r, c), g1 (c,). */
static void tanh_scale_vjp(const uopc_tensor *x, const uopc_tensor *w, const uopc_tensor *g0, const uopc_tensor *g1,
                           double *dx, double *dw) {
  int64_t r = x->shape[0], cols = x->shape[1];
  for (int64_t j = 0; j < cols; j++) dw[j] = 0;
  for (int64_t i = 0; i < r; i++)
    for (int64_t j = 0; j < cols; j++) {
      double t = tanh(at2(x, i, j)), g = at2(g0, i, j);
      dx[i * cols + j] = g * uopc_tensor_get(w, j) * (1 - t * t) +
                         uopc_tensor_get(g1, j) * 2 * at2(x, i, j) / (double)r;
      dw[j] += g * t;
    }
}

static void expect_values(const uopc_tensor *got, const double *want, double tol, const char *what) {
  for (int64_t i = 0; i < uopc_tensor_numel(got); i++) {
    double g = uopc_tensor_get(got, i);
    if (!(fabs(g - want[i]) <= tol * fmax(1, fabs(want[i]))))
      fail_msg("%s: element %lld is %.17g, expected %.17g", what, (long long)i, g, want[i]);
  }
}

static void release_all(uopc_tensor *t, int n) {
  for (int k = 0; k < n; k++) uopc_tensor_release(&t[k]);
}

static tj_function *compile_train(tj_model m, int n_outputs, unsigned grad_args, tj_switch spec01) {
  tj_function *f = NULL;
  uopc_error err = {0};
  tj_options o = {.n_outputs = n_outputs, .grad_args = grad_args, .specialize_01 = spec01};
  assert_uopc_ok(tj_compile(&f, m, NULL, &o, &err), err);
  return f;
}

/* ---- Gradients and incoming gradients of any layout. */

typedef enum seed_layout { SEED_RANDOM, SEED_STRIDE0, SEED_TRANSPOSED } seed_layout;

/* g0 (r, c) in the given layout (values read back by uopc_tensor_get, as the reference reads them). */
static uopc_tensor seed_of(seed_layout how, int64_t r, int64_t c, uopc_tensor *keep) {
  uopc_tensor g = {0};
  uopc_error err = {0};
  if (how == SEED_RANDOM) return random_tensor(UOPC_F64, 2, (int64_t[]){r, c});
  if (how == SEED_STRIDE0) {   /* one row, expanded over r with stride 0 */
    *keep = random_tensor(UOPC_F64, 1, (int64_t[]){c});
    int64_t shape[2] = {r, c}, strides[2] = {0, 1};
    assert_uopc_ok(uopc_tensor_wrap(&g, uopc_tensor_data(keep), UOPC_F64, 2, shape, strides, &err), err);
    return g;
  }
  *keep = random_tensor(UOPC_F64, 2, (int64_t[]){c, r});
  assert_uopc_ok(uopc_tensor_transpose(&g, keep, 0, 1, &err), err);
  return g;
}

static void check_tanh_scale(tj_function *f, seed_layout how, int transposed_x, int64_t r, int64_t c) {
  uopc_error err = {0};
  uopc_tensor xt = {0}, x, w = random_tensor(UOPC_F64, 1, &c), outs[2], grads[2], keep = {0};
  if (transposed_x) {
    xt = random_tensor(UOPC_F64, 2, (int64_t[]){c, r});
    assert_uopc_ok(uopc_tensor_transpose(&x, &xt, 0, 1, &err), err);
  } else x = random_tensor(UOPC_F64, 2, (int64_t[]){r, c});
  tj_arg args[2] = {tj_tensor(&x), tj_tensor(&w)};
  tj_saved *s = NULL;
  assert_uopc_ok(tj_call_saving(f, args, 2, outs, &s, &err), err);
  uopc_tensor g0 = seed_of(how, r, c, &keep), g1 = random_tensor(UOPC_F64, 1, &c);
  const uopc_tensor *seeds[2] = {&g0, &g1};
  assert_uopc_ok(tj_backward(f, s, seeds, grads, &err), err);
  double *dx = calloc((size_t)(r * c + 1), sizeof *dx), *dw = calloc((size_t)c + 1, sizeof *dw);
  tanh_scale_vjp(&x, &w, &g0, &g1, dx, dw);
  expect_int(grads[0].rank, 2, "dx's rank");
  expect_int(grads[0].shape[0] * 1000 + grads[0].shape[1], r * 1000 + c, "dx's shape (r*1000 + c)");
  expect_values(&grads[0], dx, 1e-12, "dx against the C reference");
  expect_values(&grads[1], dw, 1e-12, "dw against the C reference");
  free(dx), free(dw);
  tj_saved_free(s);
  release_all(outs, 2), release_all(grads, 2);
  uopc_tensor_release(&g0), uopc_tensor_release(&g1), uopc_tensor_release(&keep);
  uopc_tensor_release(&x), uopc_tensor_release(&xt), uopc_tensor_release(&w);
}

static void test_tj_backward_matches_reference_for_any_seed_layout(void **state) {
  (void)state;
  tj_function *f = compile_train(tanh_scale, 2, 0x3, TJ_DEFAULT);
  static const int64_t sizes[][2] = {{3, 4}, {5, 7}, {3, 4}, {6, 2}};
  for (int k = 0; k < 4; k++) check_tanh_scale(f, SEED_RANDOM, 0, sizes[k][0], sizes[k][1]);
  expect_int(tj_forward_stats(f).artifacts_built, 1, "forward artifacts over 4 contiguous calls");
  expect_int(tj_backward_stats(f).artifacts_built, 1, "backward artifacts over 4 random contiguous seeds");
  for (int k = 0; k < 4; k++) check_tanh_scale(f, SEED_STRIDE0, 0, sizes[k][0], sizes[k][1]);
  expect_int(tj_backward_stats(f).artifacts_built, 2, "backward artifacts after stride-0 seeds (a layout class)");
  /* a strided seed's strides are dims of their own: stride 0 and a transpose are one class */
  for (int k = 0; k < 4; k++) check_tanh_scale(f, SEED_TRANSPOSED, 0, sizes[k][0], sizes[k][1]);
  expect_int(tj_backward_stats(f).artifacts_built, 2, "backward artifacts after transposed seeds");
  /* a transposed x: another forward artifact; its record is a packed copy, so the backward's are reused */
  for (int k = 0; k < 4; k++) check_tanh_scale(f, SEED_RANDOM, 1, sizes[k][0], sizes[k][1]);
  expect_int(tj_forward_stats(f).artifacts_built, 2, "forward artifacts after transposed inputs (strided class)");
  expect_int(tj_backward_stats(f).artifacts_built, 2, "backward artifacts after transposed inputs");
  tj_free(f);
}

/* L(x) = sum(g0 * out0) + sum(g1 * out1): central differences of the compiled forward, in f64. */
static double seeded_loss(tj_function *f, uopc_tensor *x, uopc_tensor *w, const uopc_tensor *g0,
                          const uopc_tensor *g1) {
  uopc_error err = {0};
  uopc_tensor outs[2];
  tj_arg args[2] = {tj_tensor(x), tj_tensor(w)};
  assert_uopc_ok(tj_call(f, args, 2, outs, &err), err);
  double l = 0;
  for (int64_t i = 0; i < uopc_tensor_numel(&outs[0]); i++) l += uopc_tensor_get(g0, i) * uopc_tensor_get(&outs[0], i);
  for (int64_t i = 0; i < uopc_tensor_numel(&outs[1]); i++) l += uopc_tensor_get(g1, i) * uopc_tensor_get(&outs[1], i);
  release_all(outs, 2);
  return l;
}

static void test_tj_backward_matches_f64_finite_differences(void **state) {
  (void)state;
  tj_function *f = compile_train(tanh_scale, 2, 0x3, TJ_DEFAULT);
  int64_t r = 4, c = 3;
  uopc_error err = {0};
  uopc_tensor x = random_tensor(UOPC_F64, 2, (int64_t[]){r, c}), w = random_tensor(UOPC_F64, 1, &c);
  uopc_tensor g0 = random_tensor(UOPC_F64, 2, (int64_t[]){r, c}), g1 = random_tensor(UOPC_F64, 1, &c);
  uopc_tensor outs[2], grads[2];
  tj_arg args[2] = {tj_tensor(&x), tj_tensor(&w)};
  tj_saved *s = NULL;
  assert_uopc_ok(tj_call_saving(f, args, 2, outs, &s, &err), err);
  const uopc_tensor *seeds[2] = {&g0, &g1};
  assert_uopc_ok(tj_backward(f, s, seeds, grads, &err), err);
  uopc_tensor *wrt[2] = {&x, &w};
  const double h = 1e-6;   /* central differences: error ~ h^2 = 1e-12, rounding ~ 1e-16 / h = 1e-10 */
  for (int a = 0; a < 2; a++)
    for (int64_t i = 0; i < uopc_tensor_numel(wrt[a]); i++) {
      double v = uopc_tensor_get(wrt[a], i);
      uopc_tensor_set(wrt[a], i, v + h);
      double up = seeded_loss(f, &x, &w, &g0, &g1);
      uopc_tensor_set(wrt[a], i, v - h);
      double down = seeded_loss(f, &x, &w, &g0, &g1);
      uopc_tensor_set(wrt[a], i, v);
      double fd = (up - down) / (2 * h), got = uopc_tensor_get(&grads[a], i);
      if (!(fabs(fd - got) <= 1e-8)) fail_msg("d/d %s[%lld]: backward %.12g, finite difference %.12g", a ? "w" : "x",
                                              (long long)i, got, fd);
    }
  tj_saved_free(s);
  release_all(outs, 2), release_all(grads, 2);
  uopc_tensor_release(&x), uopc_tensor_release(&w), uopc_tensor_release(&g0), uopc_tensor_release(&g1);
  tj_free(f);
}

/* ---- Artifact counts: sizes 0, 1 and repeated; forward and backward apart. */

static void run_sum_over_rows(tj_function *f, int64_t r, int64_t c) {
  uopc_error err = {0};
  uopc_tensor x = random_tensor(UOPC_F32, 2, (int64_t[]){r, c}), out, grad, one;
  assert_uopc_ok(uopc_tensor_empty(&one, UOPC_F32, 0, NULL, &err), err);
  uopc_tensor_set(&one, 0, 1.5);
  tj_arg args[1] = {tj_tensor(&x)};
  tj_saved *s = NULL;
  assert_uopc_ok(tj_call_saving(f, args, 1, &out, &s, &err), err);
  const uopc_tensor *seeds[1] = {&one};
  assert_uopc_ok(tj_backward(f, s, seeds, &grad, &err), err);
  for (int64_t i = 0; i < r * c; i++)   /* d sum(x / r) / dx = 1 / r, times the seed */
    if (fabs(uopc_tensor_get(&grad, i) - 1.5 / (double)r) > 1e-7)
      fail_msg("(%lld, %lld): gradient %lld is %.9g, expected %.9g", (long long)r, (long long)c, (long long)i,
               uopc_tensor_get(&grad, i), 1.5 / (double)r);
  expect_int(grad.shape[0] * 1000 + grad.shape[1], r * 1000 + c, "the gradient's shape (r*1000 + c)");
  tj_saved_free(s);
  uopc_tensor_release(&x), uopc_tensor_release(&out), uopc_tensor_release(&grad), uopc_tensor_release(&one);
}

/* Beyond TensorPlay (issue 28): sum(x / rows) over a sweep of 20 sizes: the
 * rows count is a runtime scalar in both artifacts, so 1 forward + 1 backward. */
static void test_sum_over_rows_builds_two_artifacts_over_twenty_sizes(void **state) {
  (void)state;
  tj_function *f = compile_train(sum_over_rows, 1, 0x1, TJ_DEFAULT);
  for (int k = 0; k < 20; k++) run_sum_over_rows(f, 2 + (k * 7) % 23, 2 + (k * 5) % 11);
  expect_int(tj_forward_stats(f).artifacts_built, 1, "forward artifacts over 20 sizes");
  expect_int(tj_backward_stats(f).artifacts_built, 1, "backward artifacts over 20 sizes");
  expect_int(uopc_counter_get(TJ_C_BUILT), 2, "the process's artifacts built (forward + backward)");
  tj_free(f);
}

/* Issue 28's other beyond-TensorPlay cases, with 23.4's rules of slice,
 * select, repeat and var (tp_grad_more.c, tp_stats.c): where TensorPlay
 * burns a size-derived operand into its backward, each model here is reduced
 * to a loss by a sum and builds 1 forward + 1 backward artifact over the
 * same 20 sizes (none 0 or 1). The values are tests/tensorjit/test_grad_rules.c's. */
static int half_cols(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* sum((x*x)[:, cols//2:]) */
  (void)user;
  tp_int half = tp_int_floordiv(c, tp_size(c, in[0].t, 1), tp_int_const(c, 2));
  out[0] = tp_sum(c, tp_slice(c, tp_mul(c, in[0].t, in[0].t), 1, half, TP_NONE, 1), 0u, 0);
  return tp_status(c);
}
static int last_row(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* sum((x*x)[rows-1]) */
  (void)user;
  tp_int last = tp_int_sub(c, tp_size(c, in[0].t, 0), tp_int_const(c, 1));
  out[0] = tp_sum(c, tp_select(c, tp_mul(c, in[0].t, in[0].t), 0, last), 0u, 0);
  return tp_status(c);
}
static int repeat_rows(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* sum((x*x).repeat(rows, 1)) */
  (void)user;
  tp_int reps[2] = {tp_size(c, in[0].t, 0), tp_int_const(c, 1)};
  out[0] = tp_sum(c, tp_repeat_sizes_at(c, tp_mul(c, in[0].t, in[0].t), 2, reps, TP_HERE), 0u, 0);
  return tp_status(c);
}
static int var_5(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* var(x, correction=5) */
  (void)user;
  out[0] = tp_var(c, in[0].t, 0u, 0, 5);
  return tp_status(c);
}
static void test_more_rules_build_two_artifacts_over_twenty_sizes(void **state) {
  (void)state;
  tj_model models[] = {half_cols, last_row, repeat_rows, var_5};
  for (size_t m = 0; m < sizeof models / sizeof *models; m++) {
    uopc_counters_reset();
    tj_function *f = compile_train(models[m], 1, 0x1, TJ_DEFAULT);
    for (int k = 0; k < 20; k++) {
      uopc_error err = {0};
      uopc_tensor x = random_tensor(UOPC_F32, 2, (int64_t[]){2 + k % 9, 2 + k % 5}), out, grad, one;
      assert_uopc_ok(uopc_tensor_empty(&one, UOPC_F32, 0, NULL, &err), err);
      uopc_tensor_set(&one, 0, 1);
      tj_arg args[1] = {tj_tensor(&x)};
      tj_saved *s = NULL;
      assert_uopc_ok(tj_call_saving(f, args, 1, &out, &s, &err), err);
      const uopc_tensor *seeds[1] = {&one};
      assert_uopc_ok(tj_backward(f, s, seeds, &grad, &err), err);
      tj_saved_free(s);
      uopc_tensor_release(&x), uopc_tensor_release(&out), uopc_tensor_release(&grad), uopc_tensor_release(&one);
    }
    expect_int(tj_forward_stats(f).artifacts_built, 1, "model %zu: forward artifacts", m);
    expect_int(tj_backward_stats(f).artifacts_built, 1, "model %zu: backward artifacts", m);
    tj_free(f);
  }
}

static void test_sizes_zero_and_one_are_their_own_artifacts_forward_and_backward(void **state) {
  (void)state;
  tj_function *f = compile_train(tanh_scale, 2, 0x3, TJ_DEFAULT);
  static const int64_t rows[] = {3, 1, 0, 5, 1, 0, 7, 3};
  for (int k = 0; k < 8; k++) check_tanh_scale(f, SEED_RANDOM, 0, rows[k], 4);
  expect_int(tj_forward_stats(f).artifacts_built, 3, "forward artifacts over rows 3, 1, 0, 5, 1, 0, 7, 3 (>= 2, 1, 0)");
  expect_int(tj_backward_stats(f).artifacts_built, 3, "backward artifacts over the same rows");
  expect_int(tj_backward_stats(f).artifact_hits, 5, "backward hits");
  tj_free(f);
}

/* ---- What a forward saves. */

typedef struct text_count { const char *needle; int with; } text_count;
static void count_text(const char *text, void *ctx) {
  text_count *c = ctx;
  c->with += strstr(text, c->needle) != NULL;
}

/* A forward saves its math functions' values too, when they fit the backward's arguments: a
 * chain of 4 tanh saves them and the mean (5 values), and its backward computes no tanh; a
 * chain of 8 would need 9 (past TJ_MAX_OUTPUTS with the output), so it saves the mean alone and
 * its backward recomputes the tanh. The gradient, (1/n) prod_k (1 - t_k^2), is the reference's
 * either way. */
static void test_math_values_are_saved_when_they_fit_else_recomputed(void **state) {
  (void)state;
  static const int depths[2] = {4, 8}, want_saved[2] = {5, 1};
  const char *names[2] = {"chain4", "chain8"}, *bwd[2] = {"tj_chain4_bwd", "tj_chain8_bwd"};
  for (int m = 0; m < 2; m++) {
    tj_function *f = NULL;
    uopc_error err = {0};
    tj_options o = {.name = names[m], .grad_args = 0x1};
    assert_uopc_ok(tj_compile(&f, tanh_chain, (void *)&depths[m], &o, &err), err);
    static const int64_t sizes[][2] = {{3, 4}, {5, 2}};
    for (int z = 0; z < 2; z++) {
      uopc_tensor x = random_tensor(UOPC_F64, 2, sizes[z]), loss, grad, one;
      int64_t n = sizes[z][0] * sizes[z][1];
      tj_arg args[1] = {tj_tensor(&x)};
      tj_saved *s = NULL;
      assert_uopc_ok(uopc_tensor_empty(&one, UOPC_F64, 0, NULL, &err), err);
      uopc_tensor_set(&one, 0, 1);
      const uopc_tensor *seeds[1] = {&one};
      assert_uopc_ok(tj_call_saving(f, args, 1, &loss, &s, &err), err);
      assert_uopc_ok(tj_backward(f, s, seeds, &grad, &err), err);
      double *want = calloc((size_t)n, sizeof *want);
      for (int64_t i = 0; i < n; i++) {
        double t = uopc_tensor_get(&x, i), d = 1.0 / (double)n;
        for (int k = 0; k < depths[m]; k++) t = tanh(t), d *= 1 - t * t;
        want[i] = d;
      }
      expect_values(&grad, want, 1e-12, names[m]);
      free(want);
      tj_saved_free(s);
      uopc_tensor_release(&loss), uopc_tensor_release(&grad), uopc_tensor_release(&one), uopc_tensor_release(&x);
    }
    expect_int(tj_saved_values(f), want_saved[m], names[m]);
    text_count tanh_calls = {"tanh(t", 0};
    int entries = testutil_each_entry(bwd[m], "kernel.c", count_text, &tanh_calls);
    expect_int(entries, 1, "backward artifacts over (3, 4) and (5, 2)");
    expect_int(tanh_calls.with, m == 0 ? 0 : 1, "backward artifacts that compute a tanh");
    tj_free(f);
  }
}

/* ---- Records in any order: each holds its own sizes. */

static void test_backwards_run_in_reverse_order_of_their_forwards(void **state) {
  (void)state;
  tj_function *f = compile_train(tanh_scale, 2, 0x3, TJ_DEFAULT);
  enum { N = 4 };
  static const int64_t sizes[N][2] = {{3, 3}, {3, 5}, {6, 2}, {3, 3}};
  uopc_tensor x[N], w[N], outs[N][2], g0[N], g1[N], grads[2];
  tj_saved *s[N];
  uopc_error err = {0};
  for (int k = 0; k < N; k++) {
    x[k] = random_tensor(UOPC_F64, 2, sizes[k]), w[k] = random_tensor(UOPC_F64, 1, &sizes[k][1]);
    tj_arg args[2] = {tj_tensor(&x[k]), tj_tensor(&w[k])};
    assert_uopc_ok(tj_call_saving(f, args, 2, outs[k], &s[k], &err), err);
  }
  int64_t live, peak;
  live = tj_saved_bytes(f, &peak);
  /* each record: x and w (copies), tanh(x) (a saved math function) and the mean over axis 0 (a saved
   * reduction), in f64 */
  expect_int(live, 8 * ((9 + 3 + 9 + 3) + (15 + 5 + 15 + 5) + (12 + 2 + 12 + 2) + (9 + 3 + 9 + 3)),
             "live saved bytes of 4 records");
  expect_int(peak, live, "the peak with every record live");
  for (int k = 0; k < N; k++) uopc_tensor_set(&x[k], 0, 100);   /* the caller's tensors change; the records do not */
  for (int k = N - 1; k >= 0; k--) {
    g0[k] = random_tensor(UOPC_F64, 2, sizes[k]), g1[k] = random_tensor(UOPC_F64, 1, &sizes[k][1]);
    const uopc_tensor *seeds[2] = {&g0[k], &g1[k]};
    assert_uopc_ok(tj_backward(f, s[k], seeds, grads, &err), err);
    release_all(grads, 2);
    tj_saved_free(s[k]);
  }
  expect_int(tj_saved_bytes(f, &peak), 0, "live saved bytes after every record is freed");
  expect_int(peak, 8 * 116, "the peak stays");
  expect_int(uopc_counter_get(TJ_C_SAVED_PEAK), 8 * 116, "the process counter 'saved bytes peak'");
  expect_int(tj_forward_stats(f).artifacts_built, 1, "forward artifacts: (3,3), (3,5), (6,2), (3,3)");
  expect_int(tj_backward_stats(f).artifacts_built, 1, "backward artifacts, run (3,3), (6,2), (3,5), (3,3)");
  for (int k = 0; k < N; k++) {
    release_all(outs[k], 2);
    uopc_tensor_release(&x[k]), uopc_tensor_release(&w[k]), uopc_tensor_release(&g0[k]), uopc_tensor_release(&g1[k]);
  }
  tj_free(f);
}

/* The values of the reverse-order test: each gradient against the reference
 * of its own record's sizes and values (the caller's x changed after the forward). */
static void test_each_record_keeps_its_values_and_sizes(void **state) {
  (void)state;
  tj_function *f = compile_train(tanh_scale, 2, 0x3, TJ_DEFAULT);
  static const int64_t sizes[3][2] = {{3, 3}, {3, 5}, {2, 3}};
  uopc_tensor x[3], xs[3], w[3], outs[3][2], grads[2];
  tj_saved *s[3];
  uopc_error err = {0};
  for (int k = 0; k < 3; k++) {
    x[k] = random_tensor(UOPC_F64, 2, sizes[k]), w[k] = random_tensor(UOPC_F64, 1, &sizes[k][1]);
    assert_uopc_ok(uopc_tensor_empty(&xs[k], UOPC_F64, 2, sizes[k], &err), err);
    assert_uopc_ok(uopc_tensor_copy(&xs[k], &x[k], &err), err);
    tj_arg args[2] = {tj_tensor(&x[k]), tj_tensor(&w[k])};
    assert_uopc_ok(tj_call_saving(f, args, 2, outs[k], &s[k], &err), err);
    uopc_tensor_set(&x[k], 1, -7);   /* an in-place update after the forward */
  }
  for (int k = 2; k >= 0; k--) {
    double dx[16], dw[8];
    uopc_tensor g0 = random_tensor(UOPC_F64, 2, sizes[k]), g1 = random_tensor(UOPC_F64, 1, &sizes[k][1]);
    const uopc_tensor *seeds[2] = {&g0, &g1};
    assert_uopc_ok(tj_backward(f, s[k], seeds, grads, &err), err);
    tanh_scale_vjp(&xs[k], &w[k], &g0, &g1, dx, dw);
    expect_values(&grads[0], dx, 1e-12, "dx of a record, in reverse order");
    expect_values(&grads[1], dw, 1e-12, "dw of a record, in reverse order");
    release_all(grads, 2);
    uopc_tensor_release(&g0), uopc_tensor_release(&g1);
  }
  expect_int(tj_backward_stats(f).artifacts_built, 1, "backward artifacts over (2,3), (3,5), (3,3)");
  for (int k = 0; k < 3; k++) {
    tj_saved_free(s[k]);
    release_all(outs[k], 2);
    uopc_tensor_release(&x[k]), uopc_tensor_release(&xs[k]), uopc_tensor_release(&w[k]);
  }
  tj_free(f);
}

/* ---- 23.4's two-layer model trained through tensorjit, step by step against the eager loop. */

enum { D_IN = 5, D_HID = 6, D_OUT = 3, STEPS = 20 };

/* One SGD step of each loop on batch b; the largest difference after it of
 * the losses (in ulps of the eager loss) and of each weight matrix (in ulps of
 * its largest eager weight). Seen: at most 4 in 20 steps; bound 16. */
static double train_step(tj_function *f, uopc_tensor *w1c, uopc_tensor *w2c, uopc_tensor *w1e, uopc_tensor *w2e,
                         int64_t b) {
  uopc_error err = {0};
  uopc_tensor x = random_tensor(UOPC_F32, 2, (int64_t[]){b, D_IN});
  uopc_tensor y = random_tensor(UOPC_F32, 2, (int64_t[]){b, D_OUT});
  uopc_tensor loss_c, loss_e, grads_c[2], grads_e[2], one;
  assert_uopc_ok(uopc_tensor_empty(&one, UOPC_F32, 0, NULL, &err), err);
  uopc_tensor_set(&one, 0, 1);
  tj_arg args[4] = {tj_tensor(&x), tj_tensor(w1c), tj_tensor(w2c), tj_tensor(&y)};
  tj_saved *s = NULL;
  assert_uopc_ok(tj_call_saving(f, args, 4, &loss_c, &s, &err), err);
  const uopc_tensor *seeds[1] = {&one};
  assert_uopc_ok(tj_backward(f, s, seeds, grads_c, &err), err);
  const uopc_tensor *in[4] = {&x, w1e, w2e, &y};
  assert_uopc_ok(tp_run_eager(two_layer_tp, NULL, in, 4, 1, 0x6, &loss_e, grads_e, &err), err);
  float le = fabsf((float)uopc_tensor_get(&loss_e, 0));
  double worst = fabs(uopc_tensor_get(&loss_c, 0) - uopc_tensor_get(&loss_e, 0)) / (nextafterf(le, INFINITY) - le);
  uopc_tensor *wc[2] = {w1c, w2c}, *we[2] = {w1e, w2e};
  for (int k = 0; k < 2; k++) {
    float big = 0;   /* ulps of the matrix's largest weight: an element near 0 has ulps far below its error */
    for (int64_t i = 0; i < uopc_tensor_numel(wc[k]); i++) {   /* w -= 0.1 * grad, in each loop */
      float c = (float)(uopc_tensor_get(wc[k], i) - 0.1f * (float)uopc_tensor_get(&grads_c[k], i));
      float e = (float)(uopc_tensor_get(we[k], i) - 0.1f * (float)uopc_tensor_get(&grads_e[k], i));
      uopc_tensor_set(wc[k], i, c), uopc_tensor_set(we[k], i, e);
      big = fabsf(e) > big ? fabsf(e) : big;
    }
    double ulp = nextafterf(big, INFINITY) - big;
    for (int64_t i = 0; i < uopc_tensor_numel(wc[k]); i++) {
      double d = fabs(uopc_tensor_get(wc[k], i) - uopc_tensor_get(we[k], i)) / ulp;
      worst = d > worst ? d : worst;
    }
  }
  tj_saved_free(s);
  release_all(grads_c, 2), release_all(grads_e, 2);
  uopc_tensor_release(&loss_c), uopc_tensor_release(&loss_e), uopc_tensor_release(&one);
  uopc_tensor_release(&x), uopc_tensor_release(&y);
  return worst;
}

static void train(tj_switch spec01, int want_forward, int want_backward) {
  tj_function *f = compile_train(two_layer, 1, 0x6, spec01);   /* gradients of w1 and w2 */
  rng = 88172645463325252ull;   /* the same data whichever test ran before */
  uopc_error err = {0};
  uopc_tensor w1c = random_tensor(UOPC_F32, 2, (int64_t[]){D_IN, D_HID});
  uopc_tensor w2c = random_tensor(UOPC_F32, 2, (int64_t[]){D_HID, D_OUT});
  uopc_tensor w1e, w2e;
  assert_uopc_ok(uopc_tensor_empty(&w1e, UOPC_F32, 2, w1c.shape, &err), err);
  assert_uopc_ok(uopc_tensor_empty(&w2e, UOPC_F32, 2, w2c.shape, &err), err);
  assert_uopc_ok(uopc_tensor_copy(&w1e, &w1c, &err), err);
  assert_uopc_ok(uopc_tensor_copy(&w2e, &w2c, &err), err);
  static const int64_t batches[] = {1, 7, 64, 7};
  for (int step = 0; step < STEPS; step++) {
    double ulps = train_step(f, &w1c, &w2c, &w1e, &w2e, batches[step % 4]);
    /* the generated loops and the interpreter sum in different orders: a few ulps a step, not growing */
    if (!(ulps <= 16)) fail_msg("step %d (batch %lld): compiled and eager differ by %.1f ulps (at most 16)", step,
                                (long long)batches[step % 4], ulps);
  }
  expect_int(tj_forward_stats(f).artifacts_built, want_forward, "forward artifacts over batches 1, 7, 64, 7 (x5)");
  expect_int(tj_backward_stats(f).artifacts_built, want_backward, "backward artifacts over the same batches");
  expect_int(tj_forward_stats(f).calls, STEPS, "saving forward calls");
  expect_int(tj_backward_stats(f).calls, STEPS, "backward calls");
  char text[2048];
  tj_train_text(f, text, sizeof text);
  expect_int(tj_saved_values(f), 4, "saved values: x @ w1, h = its tanh, h @ w2 and the loss's mean");
  assert_contains(text, "a record holds copies of a0 a1 a2 a3 and 4 saved values");
  /* the first artifact's shapes: a batch of 1 is a constant under the 0/1 rule */
  assert_contains(text, spec01 == TJ_OFF ? "saved0 = matmul (a0_0, a1_1)" : "saved0 = matmul (1, a1_1)");
  assert_contains(text, spec01 == TJ_OFF ? "saved1 = tanh (a0_0, a1_1)" : "saved1 = tanh (1, a1_1)");
  assert_contains(text, "saved3 = mean ()");
  /* each backward computes d w2 = h^T @ g, d h = g @ w2^T, d w1 = x^T @ d z, and neither forward matmul */
  int plans = 0;
  for (const char *p = text; (p = strstr(p, ": 3 matmuls, 0 reductions computed")); p++) plans++;
  expect_int(plans, want_backward, "backward artifacts computing 3 matmuls (none of the forward's)");
  uopc_tensor_release(&w1c), uopc_tensor_release(&w2c), uopc_tensor_release(&w1e), uopc_tensor_release(&w2e);
  tj_free(f);
}

/* With the default 0/1 rule a batch of 1 is its own artifact (forward and backward): 2 + 2. */
static void test_two_layer_sgd_equals_eager_with_the_01_rule(void **state) {
  (void)state;
  train(TJ_DEFAULT, 2, 2);
}

/* With specialize_01 off no decision depends on the batch being 1: 1 + 1 (issue 28's 2 artifacts). */
static void test_two_layer_sgd_equals_eager_in_two_artifacts(void **state) {
  (void)state;
  train(TJ_OFF, 1, 1);
}

/* How many of the cache entries whose names begin with prefix were compiled with flag (their
 * manifest's flags line holds it), and how many there are. */
typedef struct flag_count { const char *flag; int with; } flag_count;
static void count_flag(const char *manifest, void *ctx) {
  flag_count *c = ctx;
  char line[1024];
  c->with += testutil_text_line(manifest, "flags=", line, sizeof line) && strstr(line, c->flag);
}

static int entries_with_flag(const char *prefix, const char *flag, int *entries) {
  flag_count c = {flag, 0};
  *entries = testutil_each_entry(prefix, "manifest", count_flag, &c);
  return c.with;
}

/* tensorjit builds for this CPU by default (-march=native, the CPU in each entry's key), and
 * a zeroed uopc_program_options builds for plain x86-64; the two-layer step's loss and
 * gradients are the same bits either way, at batches 1, 7 and 64 (no multiply-add is fused,
 * -ffp-contract=off, and no sum is reordered). */
static void test_artifacts_for_this_cpu_equal_portable_ones_bit_for_bit(void **state) {
  (void)state;
  const uopc_program_options plain = {0};
  tj_function *host = NULL, *portable = NULL;
  uopc_error err = {0};
  assert_uopc_ok(tj_compile(&host, two_layer, NULL, &(tj_options){.name = "host", .grad_args = 0x6}, &err), err);
  assert_uopc_ok(tj_compile(&portable, two_layer, NULL,
                            &(tj_options){.name = "portable", .grad_args = 0x6, .program = &plain}, &err), err);
  rng = 88172645463325252ull;
  uopc_tensor w1 = random_tensor(UOPC_F32, 2, (int64_t[]){D_IN, D_HID});
  uopc_tensor w2 = random_tensor(UOPC_F32, 2, (int64_t[]){D_HID, D_OUT}), one;
  assert_uopc_ok(uopc_tensor_empty(&one, UOPC_F32, 0, NULL, &err), err);
  uopc_tensor_set(&one, 0, 1);
  const uopc_tensor *seeds[1] = {&one};
  static const int64_t batches[] = {1, 7, 64};
  for (int k = 0; k < 3; k++) {
    uopc_tensor x = random_tensor(UOPC_F32, 2, (int64_t[]){batches[k], D_IN});
    uopc_tensor y = random_tensor(UOPC_F32, 2, (int64_t[]){batches[k], D_OUT});
    tj_arg args[4] = {tj_tensor(&x), tj_tensor(&w1), tj_tensor(&w2), tj_tensor(&y)};
    uopc_tensor loss[2], grads[2][2];
    for (int v = 0; v < 2; v++) {
      tj_saved *saved = NULL;
      assert_uopc_ok(tj_call_saving(v ? portable : host, args, 4, &loss[v], &saved, &err), err);
      assert_uopc_ok(tj_backward(v ? portable : host, saved, seeds, grads[v], &err), err);
      tj_saved_free(saved);
    }
    const uopc_tensor *got[3][2] = {{&loss[0], &loss[1]}, {&grads[0][0], &grads[1][0]}, {&grads[0][1], &grads[1][1]}};
    static const char *what[3] = {"the loss", "d w1", "d w2"};
    for (int o = 0; o < 3; o++)
      for (int64_t i = 0; i < uopc_tensor_numel(got[o][0]); i++) {
        double a = uopc_tensor_get(got[o][0], i), b = uopc_tensor_get(got[o][1], i);
        if (memcmp(&a, &b, sizeof a) != 0)
          fail_msg("batch %lld: %s[%lld]: expected the portable build's %a, got %a for this CPU",
                   (long long)batches[k], what[o], (long long)i, b, a);
      }
    release_all(loss, 2), release_all(grads[0], 2), release_all(grads[1], 2);
    uopc_tensor_release(&x), uopc_tensor_release(&y);
  }
  int entries = 0;
  /* a forward and a backward for batch 1 (the 0/1 rule) and for batches of 2 or more; under
   * valgrind, which has no AVX-512, the runtime builds them for plain x86-64 */
  expect_int(entries_with_flag("tj_host_", "-march=native", &entries), uopc_under_valgrind() ? 0 : 4,
             "host entries built -march=native");
  expect_int(entries, 4, "host entries");
  expect_int(entries_with_flag("tj_portable_", "-march=native", &entries), 0, "portable entries built -march=native");
  expect_int(entries, 4, "portable entries");
  uopc_tensor_release(&w1), uopc_tensor_release(&w2), uopc_tensor_release(&one);
  tj_free(host);
  tj_free(portable);
}

/* ---- Bad input: errors that name what was wrong, nothing written. */

static void test_bad_training_calls_are_refused_by_name(void **state) {
  (void)state;
  uopc_error err = {0};
  int64_t r = 3, c = 4;
  uopc_tensor x = random_tensor(UOPC_F64, 2, (int64_t[]){r, c}), w = random_tensor(UOPC_F64, 1, &c), outs[2] = {{0}};
  tj_arg args[2] = {tj_tensor(&x), tj_tensor(&w)};
  tj_saved *s = NULL;
  tj_function *none = compile_train(tanh_scale, 2, 0, TJ_DEFAULT);
  assert_uopc_code(tj_call_saving(none, args, 2, outs, &s, &err), UOPC_E_INVALID, err);
  assert_contains(err.message, "grad_args");
  expect_null(s, "no record after a refused call");
  expect_null(outs[0].storage, "no output after a refused call");
  tj_function *f = compile_train(tanh_scale, 2, 0x3, TJ_DEFAULT);
  assert_uopc_ok(tj_call_saving(f, args, 2, outs, &s, &err), err);
  uopc_tensor bad = random_tensor(UOPC_F64, 2, (int64_t[]){r, c + 1}), g1 = random_tensor(UOPC_F64, 1, &c);
  uopc_tensor grads[2] = {{0}};
  const uopc_tensor *seeds[2] = {&bad, &g1};
  assert_uopc_code(tj_backward(f, s, seeds, grads, &err), UOPC_E_INVALID, err);
  assert_contains(err.message, "grad_outputs[0] is f64 (3, 5); output 0 of the saved call is f64 (3, 4)");
  expect_null(grads[0].storage, "no gradient after a refused backward");
  seeds[0] = NULL;
  assert_uopc_code(tj_backward(f, s, seeds, grads, &err), UOPC_E_INVALID, err);
  assert_contains(err.message, "grad_outputs[0] is NULL");
  assert_uopc_code(tj_backward(none, s, seeds, grads, &err), UOPC_E_INVALID, err);
  assert_contains(err.message, "another function saved");
  tj_function *max = compile_train(no_rule, 1, 0x1, TJ_DEFAULT);
  tj_saved *sm = NULL;
  uopc_tensor out;
  assert_uopc_ok(tj_call_saving(max, args, 1, &out, &sm, &err), err);
  uopc_tensor one;
  assert_uopc_ok(uopc_tensor_empty(&one, UOPC_F64, 0, NULL, &err), err);
  const uopc_tensor *seed1[1] = {&one};
  assert_uopc_code(tj_backward(max, sm, seed1, grads, &err), UOPC_E_UNSUPPORTED, err);
  assert_contains(err.message, "test_train.c");   /* the model's line of the call-out */
  tj_saved_free(sm), tj_saved_free(s);
  release_all(outs, 2);
  uopc_tensor_release(&out), uopc_tensor_release(&one), uopc_tensor_release(&bad), uopc_tensor_release(&g1);
  uopc_tensor_release(&x), uopc_tensor_release(&w);
  tj_free(none), tj_free(f), tj_free(max);
}

/* An output whose extent is computed from sizes, (x*x)[:, cols//2:] of
 * extent cols - cols//2: its incoming gradient's dim is read as that
 * expression, guarded per call, so one backward artifact serves every
 * size; the gradient is 2 x g on the kept columns and 0 on the others.
 * Sizes in any order, incoming gradients random and transposed. */
static void check_half_cols(tj_function *f, int64_t r, int64_t c, seed_layout how) {
  uopc_error err = {0};
  int64_t h = c - c / 2;
  uopc_tensor x = random_tensor(UOPC_F64, 2, (int64_t[]){r, c}), y, grad, keep = {0};
  uopc_tensor g = seed_of(how, r, h, &keep);
  tj_arg args[1] = {tj_tensor(&x)};
  tj_saved *s = NULL;
  assert_uopc_ok(tj_call_saving(f, args, 1, &y, &s, &err), err);
  expect_int(y.shape[1], h, "(%lld, %lld): the output's columns, cols - cols // 2", (long long)r, (long long)c);
  const uopc_tensor *seeds[1] = {&g};
  assert_uopc_ok(tj_backward(f, s, seeds, &grad, &err), err);
  for (int64_t i = 0; i < r; i++)
    for (int64_t j = 0; j < c; j++) {
      double want = j < c / 2 ? 0 : 2 * at2(&x, i, j) * at2(&g, i, j - c / 2);
      if (fabs(at2(&grad, i, j) - want) > 1e-12)
        fail_msg("(%lld, %lld), %s seed: d/dx[%lld][%lld] is %.17g, expected %.17g", (long long)r, (long long)c,
                 how == SEED_TRANSPOSED ? "transposed" : "random", (long long)i, (long long)j, at2(&grad, i, j), want);
    }
  tj_saved_free(s);
  uopc_tensor_release(&x), uopc_tensor_release(&y), uopc_tensor_release(&grad), uopc_tensor_release(&g);
  uopc_tensor_release(&keep);
}

static void test_an_output_whose_extent_is_computed_from_sizes_has_one_backward(void **state) {
  (void)state;
  tj_function *f = compile_train(half_cols_out, 1, 0x1, TJ_DEFAULT);
  static const int64_t sizes[][2] = {{3, 5}, {4, 7}, {6, 4}, {3, 5}, {2, 9}, {5, 6}};
  for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) check_half_cols(f, sizes[k][0], sizes[k][1], SEED_RANDOM);
  expect_int(tj_forward_stats(f).artifacts_built, 1, "forward artifacts over 6 sizes (every extent 2 or more)");
  expect_int(tj_backward_stats(f).artifacts_built, 1, "backward artifacts over 6 sizes, random seeds");
  check_half_cols(f, 4, 7, SEED_TRANSPOSED);   /* another layout class of the seed */
  check_half_cols(f, 3, 6, SEED_TRANSPOSED);
  expect_int(tj_backward_stats(f).artifacts_built, 2, "backward artifacts with the transposed seeds");
  /* a seed whose extent is not the output's is refused before any artifact is asked */
  uopc_error err = {0};
  uopc_tensor x = random_tensor(UOPC_F64, 2, (int64_t[]){3, 5}), y, grad = {0};
  uopc_tensor bad = random_tensor(UOPC_F64, 2, (int64_t[]){3, 2});
  tj_arg args[1] = {tj_tensor(&x)};
  tj_saved *s = NULL;
  assert_uopc_ok(tj_call_saving(f, args, 1, &y, &s, &err), err);
  const uopc_tensor *seeds[1] = {&bad};
  assert_uopc_code(tj_backward(f, s, seeds, &grad, &err), UOPC_E_INVALID, err);
  assert_contains(err.message, "grad_outputs[0] is f64 (3, 2); output 0 of the saved call is f64 (3, 3)");
  expect_null(grad.storage, "no gradient after a refused backward");
  tj_saved_free(s);
  uopc_tensor_release(&x), uopc_tensor_release(&y), uopc_tensor_release(&bad);
  tj_free(f);
}

/* ---- 23.4's seeded reverse mode in eager mode (what a backward run past the limit uses). */

static void test_seeded_backward_in_eager_mode_is_a_vector_jacobian_product(void **state) {
  (void)state;
  uopc_error err = {0};
  tp_ctx *c = NULL;
  uopc_tensor x = random_tensor(UOPC_F64, 2, (int64_t[]){2, 3}), s0 = random_tensor(UOPC_F64, 2, (int64_t[]){2, 3});
  uopc_tensor s1 = random_tensor(UOPC_F64, 0, NULL);
  assert_uopc_ok(tp_ctx_new_eager(&c, &err), err);
  tp_tensor *xt = tp_wrap(c, &x), *y0 = tp_mul(c, xt, xt), *y1 = tp_sum(c, y0, 0u, 0), *g[1] = {NULL};
  tp_tensor *outs[2] = {y0, y1}, *seeds[2] = {tp_wrap(c, &s0), tp_wrap(c, &s1)};
  assert_uopc_ok(tp_backward_seeded_at(c, outs, seeds, 2, &xt, 1, g, TP_HERE), *tp_error(c));
  double want[6];   /* d/dx of sum(s0 * x^2) + s1 * sum(x^2) = 2x (s0 + s1) */
  for (int i = 0; i < 6; i++)
    want[i] = 2 * uopc_tensor_get(&x, i) * (uopc_tensor_get(&s0, i) + uopc_tensor_get(&s1, 0));
  expect_values(tp_value(g[0]), want, 1e-15, "the seeded gradient, eager");
  tp_tensor *bad[2] = {tp_wrap(c, &s1), seeds[1]};   /* a rank-0 seed for a (2, 3) output */
  assert_uopc_code(tp_backward_seeded_at(c, outs, bad, 2, &xt, 1, g, TP_HERE), UOPC_E_DTYPE, *tp_error(c));
  assert_contains(tp_error(c)->message, "output 0 is f64 of rank 2, its seed f64 of rank 0");
  tp_ctx_free(c);
  uopc_tensor_release(&x), uopc_tensor_release(&s0), uopc_tensor_release(&s1);
}

/* ---- Out of memory. */

#ifndef __SANITIZE_ADDRESS__   /* AddressSanitizer's allocator is not the one that fails when asked */
/* A saving call and its backward of sum(x / rows), the k-th malloc (or
 * calloc) failing, for every k until they need fewer: each fails with an
 * error, writes nothing, and the function still trains on the next call. */
static int save_and_back(tj_function *f, uopc_tensor *x, uopc_tensor *grad, uopc_error *err) {
  uopc_tensor out = {0}, one = {0};
  tj_saved *s = NULL;
  int rc = uopc_tensor_empty(&one, UOPC_F32, 0, NULL, err);
  if (!rc) rc = tj_call_saving(f, (tj_arg[]){tj_tensor(x)}, 1, &out, &s, err);
  if (!rc) rc = tj_backward(f, s, (const uopc_tensor *[]){&one}, grad, err);
  tj_saved_free(s);
  uopc_tensor_release(&out), uopc_tensor_release(&one);
  return rc;
}

static void sweep(int *next) {
  for (int k = 1; k < 4000; k++) {
    tj_function *f = compile_train(sum_over_rows, 1, 0x1, TJ_DEFAULT);
    uopc_tensor x = random_tensor(UOPC_F32, 2, (int64_t[]){3, 4}), grad = {0};
    uopc_error err = {0};
    *next = k;
    int rc = save_and_back(f, &x, &grad, &err), ran_out = *next == 0;
    *next = 0;
    if (rc) {
      if (!ran_out) fail_msg("k = %d: %s with no allocation failing: %s", k, uopc_error_name(rc), err.message);
      expect_null(grad.storage, "k = %d: a gradient after a failed step", k);
      assert_uopc_ok(save_and_back(f, &x, &grad, &err), err);
    }
    uopc_tensor_release(&grad), uopc_tensor_release(&x);
    tj_free(f);
    if (!rc && !ran_out) return;   /* past the last allocation */
  }
  fail_msg("a first training step makes more than 4000 allocations");
}
#endif

static void test_training_out_of_memory_fails_cleanly_at_every_allocation(void **state) {
  (void)state;
#ifdef __SANITIZE_ADDRESS__
  testutil_skip_under_asan("an allocator that fails when asked");
#else
  testutil_skip_unless_allocation_fails();
  sweep(&fail_next_malloc);
  sweep(&fail_next_calloc);
#endif
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_tj_backward_matches_reference_for_any_seed_layout, reset),
      cmocka_unit_test_setup(test_tj_backward_matches_f64_finite_differences, reset),
      cmocka_unit_test_setup(test_sum_over_rows_builds_two_artifacts_over_twenty_sizes, reset),
      cmocka_unit_test_setup(test_more_rules_build_two_artifacts_over_twenty_sizes, reset),
      cmocka_unit_test_setup(test_sizes_zero_and_one_are_their_own_artifacts_forward_and_backward, reset),
      cmocka_unit_test_setup(test_backwards_run_in_reverse_order_of_their_forwards, reset),
      cmocka_unit_test_setup(test_each_record_keeps_its_values_and_sizes, reset),
      cmocka_unit_test_setup(test_math_values_are_saved_when_they_fit_else_recomputed, reset),
      cmocka_unit_test_setup(test_two_layer_sgd_equals_eager_with_the_01_rule, reset),
      cmocka_unit_test_setup(test_two_layer_sgd_equals_eager_in_two_artifacts, reset),
      cmocka_unit_test_setup(test_artifacts_for_this_cpu_equal_portable_ones_bit_for_bit, reset),
      cmocka_unit_test_setup(test_an_output_whose_extent_is_computed_from_sizes_has_one_backward, reset),
      cmocka_unit_test_setup(test_bad_training_calls_are_refused_by_name, reset),
      cmocka_unit_test_setup(test_seeded_backward_in_eager_mode_is_a_vector_jacobian_product, reset),
      cmocka_unit_test_setup(test_training_out_of_memory_fails_cleanly_at_every_allocation, reset),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
