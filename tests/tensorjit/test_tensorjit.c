/* test_tensorjit.c: tensorjit's contract, one case per rule, each checking
 * every call's values against the same model run in 23.4's eager mode (the
 * core's interpreter) and the exact number of artifacts built. Models are
 * written here, so a guard's line is this file's. Chapter 23.7. */
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>
#include "tensorjit.h"
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

static int fan_out(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* t = exp(x): t*2, t+1, t.sum() */
  (void)user;
  tp_tensor *t = tp_exp(c, in[0].t);
  out[0] = tp_mul(c, t, tp_scalar(c, 2));
  out[1] = tp_add(c, t, tp_scalar(c, 1));
  out[2] = tp_sum(c, t, 0u, 0);
  return tp_status(c);
}

static int affine(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* 2x + 1 */
  (void)user;
  out[0] = tp_add(c, tp_mul(c, tp_scalar(c, 2), in[0].t), tp_scalar(c, 1));
  return tp_status(c);
}

static int sum_last(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* x.sum(-1) of a matrix */
  (void)user;
  out[0] = tp_sum(c, in[0].t, 1u << 1, 0);
  return tp_status(c);
}

static int mean_first(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* x.mean(0) */
  (void)user;
  out[0] = tp_reduce_at(c, IR_MEAN, in[0].t, 1u << 0, 0, TP_HERE);
  return tp_status(c);
}

static int sum_and_mean(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* x.sum(1) + x.mean(1) */
  (void)user;
  out[0] = tp_add(c, tp_reduce_at(c, IR_SUM, in[0].t, 1u << 1, 0, TP_HERE),
                  tp_reduce_at(c, IR_MEAN, in[0].t, 1u << 1, 0, TP_HERE));
  return tp_status(c);
}

static int max_keep(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* x.max(-1, keepdims) */
  (void)user;
  out[0] = tp_reduce_at(c, IR_MAX, in[0].t, 1u << 1, 1, TP_HERE);
  return tp_status(c);
}

static int flatten(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* x.reshape(a*b) * 2 */
  (void)user;
  tp_int n = tp_int_mul(c, tp_size(c, in[0].t, 0), tp_size(c, in[0].t, 1));
  out[0] = tp_mul(c, tp_reshape_at(c, in[0].t, 1, &n, TP_HERE), tp_scalar(c, 2));
  return tp_status(c);
}

static int numel(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* an int: x.numel() */
  (void)user;
  tp_int n = tp_int_mul(c, tp_size(c, in[0].t, 0), tp_size(c, in[0].t, 1));
  out[0] = tp_from_int_at(c, n, UOPC_I64, TP_HERE);
  return tp_status(c);
}

static int expand_add(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* expand(v, y.shape) + y */
  (void)user;
  tp_int to[2] = {tp_size(c, in[1].t, 0), tp_size(c, in[0].t, 0)};
  out[0] = tp_add(c, tp_expand_at(c, in[0].t, 2, to, TP_HERE), in[1].t);
  return tp_status(c);
}

static int matmul(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* a @ b */
  (void)user;
  out[0] = tp_matmul(c, in[0].t, in[1].t);
  return tp_status(c);
}

static int two_outputs(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* x + 1, x.sum() */
  (void)user;
  out[0] = tp_add(c, in[0].t, tp_scalar(c, 1));
  out[1] = tp_sum(c, in[0].t, 0u, 0);
  return tp_status(c);
}

static int repeat_scaled(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* x * k (k an int) */
  (void)user;
  tp_tensor *y = in[0].t;
  for (int64_t k = 1; k < in[1].i; k++) y = tp_add(c, y, in[0].t);   /* the int shapes the graph */
  out[0] = y;
  return tp_status(c);
}

static int expand_to(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* expand(v, y.shape) */
  (void)user;
  tp_int to[2] = {tp_size(c, in[1].t, 0), tp_size(c, in[1].t, 1)};
  out[0] = tp_expand_at(c, in[0].t, 2, to, TP_HERE);
  return tp_status(c);
}

static int add_rows(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* (a, b) + (b,) */
  (void)user;
  out[0] = tp_add(c, in[0].t, in[1].t);
  return tp_status(c);
}

static int branchy(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* x+1 if len(x) > 4 else 2x */
  (void)user;
  if (tp_gt(c, tp_size(c, in[0].t, 0), tp_int_const(c, 4))) out[0] = tp_add(c, in[0].t, tp_scalar(c, 1));
  else out[0] = tp_mul(c, in[0].t, tp_scalar(c, 2));
  return tp_status(c);
}

static int scaled(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* x * scale, a host double */
  (void)user;
  out[0] = tp_mul(c, in[0].t, tp_scalar(c, in[1].d));
  return tp_status(c);
}

/* ---- Helpers. */

/* A new f32 tensor of shape, element i = (i + 1) / 8 - 1. */
static uopc_tensor ramp(int rank, const int64_t *shape) {
  uopc_tensor x;
  uopc_error err = {0};
  assert_uopc_ok(uopc_tensor_empty(&x, UOPC_F32, rank, shape, &err), err);
  for (int64_t i = 0; i < uopc_tensor_numel(&x); i++) uopc_tensor_set(&x, i, (double)(i + 1) / 8 - 1);
  return x;
}

static uopc_tensor vec(int64_t n) { return ramp(1, &n); }
static uopc_tensor mat(int64_t a, int64_t b) { return ramp(2, (int64_t[]){a, b}); }

/* The model run in 23.4's eager mode on args (contiguous tensors). */
static uopc_tensor eager(tj_model m, const tj_arg *args, int n) {
  tp_ctx *c = NULL;
  tj_in in[TJ_MAX_ARGS] = {{0}};
  tp_tensor *out[1] = {0};
  uopc_error err = {0};
  uopc_tensor r = {0};
  assert_uopc_ok(tp_ctx_new_eager(&c, &err), err);
  for (int k = 0; k < n; k++) {
    in[k].i = args[k].i, in[k].d = args[k].d;
    if (args[k].kind == TJ_TENSOR) in[k].t = tp_wrap(c, args[k].tensor);
  }
  m(c, in, out, NULL);
  if (tp_status(c)) fail_msg("eager: %s", tp_error(c)->message);
  uopc_tensor_retain(&r, tp_value(out[0]));
  tp_ctx_free(c);
  return r;
}

/* f on args equals the model run eagerly on ref (args' values, contiguous). */
static void call_ok(tj_function *f, tj_model m, const tj_arg *args, const tj_arg *ref, int n, const char *what) {
  uopc_tensor out[1] = {{0}};
  uopc_error err = {0};
  int rc = tj_call(f, args, n, out, &err);
  if (rc) fail_msg("%s: %s: %s", what, uopc_error_name(rc), err.message);
  uopc_tensor want = eager(m, ref ? ref : args, n);
  assert_tensors_close(&out[0], &want, 1e-5, what);
  uopc_tensor_release(&out[0]);
  uopc_tensor_release(&want);
}

/* One tensor argument of shape (a) or (a, b) (b = 0: a vector). */
static void call_shape(tj_function *f, tj_model m, int64_t a, int64_t b) {
  uopc_tensor x = b ? mat(a, b) : vec(a);
  tj_arg args[1] = {tj_tensor(&x)};
  char what[64];
  snprintf(what, sizeof what, "shape (%lld, %lld)", (long long)a, (long long)b);
  call_ok(f, m, args, NULL, 1, what);
  uopc_tensor_release(&x);
}

/* A vector of length n, after checking that the artifact the call would run
 * (if any) is one built for n's class (an entry "_fd0_", "_fk1_", "_fk0_"):
 * a build with a guard removed fails here, before a kernel reads past x. */
static void call_vector_checked(tj_function *f, tj_model m, int64_t n) {
  uopc_tensor x = vec(n);
  tj_arg args[1] = {tj_tensor(&x)};
  char text[4096], what[64];
  uopc_error err = {0};
  const char *cls = n == 0 ? "_fk0_" : n == 1 ? "_fk1_" : "_fd0_";
  const char *run = tj_stats(f).artifacts && !tj_explain(f, args, text, sizeof text, &err) ? strstr(text, "would run ")
                                                                                          : NULL;
  if (run && !strstr(run, cls)) fail_msg("n = %lld would run an artifact of another class than %s:\n%s", (long long)n, cls, text);
  snprintf(what, sizeof what, "n = %lld", (long long)n);
  call_ok(f, m, args, NULL, 1, what);
  uopc_tensor_release(&x);
}

static tj_function *compile(tj_model m, const tj_options *o) {
  tj_function *f = NULL;
  uopc_error err = {0};
  assert_uopc_ok(tj_compile(&f, m, NULL, o, &err), err);
  return f;
}

static void assert_counts(const tj_function *f, int64_t built, int64_t hits, const char *what) {
  tj_counts s = tj_stats(f);
  if (s.artifacts_built != built || s.artifact_hits != hits || s.artifacts != built)
    fail_msg("%s: %lld artifacts built (%d kept) and %lld hits, expected %lld and %lld", what,
             (long long)s.artifacts_built, s.artifacts, (long long)s.artifact_hits, (long long)built, (long long)hits);
}

static void explain(const tj_function *f, const tj_arg *args, char *buf, size_t size) {
  uopc_error err = {0};
  assert_uopc_ok(tj_explain(f, args, buf, size, &err), err);
}

/* ---- Fusion with a cost rule (the core's LOWER_FUSE, which tensorjit asks for). */

/* The calls' artifacts as their generated C files in this suite's cache: the number of times
 * needle stands in the kernel.c of the entries whose names begin with prefix. */
typedef struct needle_count { const char *needle; int count; } needle_count;
static void count_needle(const char *text, void *ctx) {
  needle_count *n = ctx;
  n->count += testutil_count_serial(text, n->needle);
}

static int count_in_sources(const char *prefix, const char *needle, int *entries) {
  needle_count n = {needle, 0};
  *entries = testutil_each_entry(prefix, "kernel.c", count_needle, &n);
  return n.count;
}

/* exp(x) read by three consumers in three loop nests (t*2, t+1, t.sum()): stored once, in a
 * temporary, and read by each, not computed in each (the core without LOWER_FUSE writes expf in
 * every nest, and twice in the sum's blocked and tail loops: 4 calls). */
static void test_tj_fuses_with_a_cost_rule_computing_a_shared_producer_once(void **state) {
  (void)state;
  tj_function *f = compile(fan_out, &(tj_options){.name = "fan_out", .n_outputs = 3});
  const int64_t sizes[] = {5, 9, 33};
  for (int k = 0; k < 3; k++) {
    uopc_tensor x = vec(sizes[k]), out[3] = {{0}};
    tj_arg args[1] = {tj_tensor(&x)};
    uopc_error err = {0};
    assert_uopc_ok(tj_call(f, args, 1, out, &err), err);
    double sum = 0;
    for (int64_t i = 0; i < sizes[k]; i++) {
      double t = exp((float)uopc_tensor_get(&x, i));
      sum += t;
      expect_close(uopc_tensor_get(&out[0], i), 2 * t, 1e-5 * (2 * t), "n = %lld: (t*2)[%lld]", (long long)sizes[k], (long long)i);
      expect_close(uopc_tensor_get(&out[1], i), t + 1, 1e-5 * (t + 1), "n = %lld: (t+1)[%lld]", (long long)sizes[k], (long long)i);
    }
    expect_close(uopc_tensor_get(&out[2], 0), sum, 1e-5 * sum, "n = %lld: t.sum()", (long long)sizes[k]);
    for (int o = 0; o < 3; o++) uopc_tensor_release(&out[o]);
    uopc_tensor_release(&x);
  }
  assert_counts(f, 1, 2, "exp(x): t*2, t+1, t.sum() over n = 5, 9, 33");
  int entries = 0, calls = count_in_sources("tj_fan_out", "exp_f32(t", &entries);   /* the prelude's exp_f32(float */
  if (entries != 1 || calls != 1)
    fail_msg("the fan-out's artifact: expected 1 entry with 1 exp_f32( call, got %d entries with %d", entries, calls);
  tj_free(f);
}

/* ---- One artifact across sizes. */

static void test_tj_pointwise_one_artifact_across_sizes(void **state) {
  (void)state;
  tj_function *f = compile(affine, NULL);
  call_shape(f, affine, 3, 7), call_shape(f, affine, 5, 11), call_shape(f, affine, 2, 4);
  assert_counts(f, 1, 2, "2x+1 over (3,7), (5,11), (2,4)");
  assert_int_equal(uopc_counter_get(TJ_C_BUILT), 1);
  assert_int_equal(uopc_counter_get("variants built"), 0);   /* 23.2's counter stays 23.2's */
  tj_free(f);
}

static void test_tj_sum_last_axis_one_artifact_across_sizes(void **state) {
  (void)state;
  tj_function *f = compile(sum_last, NULL);
  call_shape(f, sum_last, 3, 7), call_shape(f, sum_last, 5, 11), call_shape(f, sum_last, 2, 4);
  assert_counts(f, 1, 2, "x.sum(-1) over (3,7), (5,11), (2,4)");
  tj_free(f);
}

/* The passes decompose the mean into the sum and a count, and CSE merges the
 * two sums: one reduction nest, the sum read twice. */
static void test_tj_sum_and_mean_of_one_operand_are_one_reduction(void **state) {
  (void)state;
  tj_function *f = compile(sum_and_mean, NULL);
  call_shape(f, sum_and_mean, 3, 7), call_shape(f, sum_and_mean, 5, 11), call_shape(f, sum_and_mean, 2, 1);
  assert_counts(f, 2, 1, "x.sum(1) + x.mean(1) over (3,7), (5,11), (2,1)");
  const char *source = tj_artifact_source(f, 0);
  assert_non_null(source);
  if (testutil_count_serial(source, "(sum, order: ") != 1 || strstr(source, "(mean") || !strstr(source, "= size("))
    fail_msg("expected one sum nest, no mean, and the count as a size:\n%s", source);
  tj_free(f);
}

static void test_tj_mean_first_axis_one_artifact_across_sizes(void **state) {
  (void)state;
  tj_function *f = compile(mean_first, NULL);
  call_shape(f, mean_first, 3, 7), call_shape(f, mean_first, 5, 11), call_shape(f, mean_first, 2, 4);
  assert_counts(f, 1, 2, "x.mean(0) over (3,7), (5,11), (2,4)");
  tj_free(f);
}

static void test_tj_max_keepdims_reshape_and_numel_one_artifact_across_sizes(void **state) {
  (void)state;
  tj_model models[] = {max_keep, numel, flatten};
  const char *names[] = {"x.max(-1, keepdims)", "x.numel()", "x.reshape(a*b) * 2"};
  for (int m = 0; m < 3; m++) {
    tj_function *f = compile(models[m], NULL);
    call_shape(f, models[m], 3, 7), call_shape(f, models[m], 5, 11), call_shape(f, models[m], 2, 4);
    assert_counts(f, 1, 2, names[m]);
    /* the flattened index a_1*(i0 // a_1) + i0 % a_1 is past what the lowering proves fits int64 for
     * extents up to 2^24, a limit of the lowering: interpreted, counted (and refused by strict_native) */
    assert_int_equal(tj_stats(f).eager_fallbacks, models[m] == flatten ? 3 : 0);
    tj_free(f);
  }
  tj_function *strict = compile(flatten, &(tj_options){.strict_native = 1});
  uopc_tensor x = mat(3, 7), out[1] = {{0}};
  uopc_error err = {0};
  assert_uopc_code(tj_call(strict, (tj_arg[]){tj_tensor(&x)}, 1, out, &err), UOPC_E_OVERFLOW, err);
  assert_contains(err.message, "could not be generated (strict_native)");
  assert_contains(err.message, "may pass int64");
  uopc_tensor_release(&x);
  tj_free(strict);
}

static void test_tj_expand_one_artifact_across_sizes(void **state) {
  (void)state;
  tj_function *f = compile(expand_add, &(tj_options){.arg_names = (const char *const[]){"v", "y"}});
  const int64_t ab[][2] = {{3, 7}, {5, 11}, {2, 4}};
  for (int k = 0; k < 3; k++) {   /* v (b) to (a, b), plus y (a, b): b's equality is a guard */
    uopc_tensor v = vec(ab[k][1]), y = mat(ab[k][0], ab[k][1]);
    call_ok(f, expand_add, (tj_arg[]){tj_tensor(&v), tj_tensor(&y)}, NULL, 2, "expand(v, (a, b)) + y");
    uopc_tensor_release(&v), uopc_tensor_release(&y);
  }
  assert_counts(f, 1, 2, "expand(v, (a, b)) + y over (3,7), (5,11), (2,4)");
  tj_free(f);
  f = compile(expand_to, &(tj_options){.arg_names = (const char *const[]){"v", "y"}});
  for (int k = 0; k < 3; k++) {   /* the expand alone needs v's size equal to y's last */
    uopc_tensor v = vec(ab[k][1]), y = mat(ab[k][0], ab[k][1]);
    call_ok(f, expand_to, (tj_arg[]){tj_tensor(&v), tj_tensor(&y)}, NULL, 2, "expand(v, y.shape)");
    uopc_tensor_release(&v), uopc_tensor_release(&y);
  }
  assert_counts(f, 1, 2, "expand(v, y.shape) over (3,7), (5,11), (2,4)");
  char text[4096];
  explain(f, NULL, text, sizeof text);
  assert_contains(text, "  y.shape[1] == v.shape[0]\n");
  tj_free(f);
}

/* ---- Sizes 0 and 1. */

static void test_tj_sizes_0_and_1_are_specialised(void **state) {
  (void)state;
  tj_function *f = compile(affine, NULL);
  const int64_t n[] = {3, 1, 0, 7, 1, 0, 11};
  for (int k = 0; k < 7; k++) call_vector_checked(f, affine, n[k]);
  assert_counts(f, 3, 4, "2x+1 over n = 3, 1, 0, 7, 1, 0, 11");
  char text[4096];
  explain(f, NULL, text, sizeof text);
  assert_contains(text, "a0_0 = a0.shape[0] in [2, 16777216]");   /* the >= 2 of the first is a guard */
  assert_contains(text, "a0.shape[0] == 1");
  assert_contains(text, "a0.shape[0] == 0");
  tj_free(f);
}

static void test_tj_specialize_01_off_keeps_1_symbolic_until_a_broadcast_needs_it(void **state) {
  (void)state;
  const tj_options o = {.specialize_01 = TJ_OFF, .arg_names = (const char *const[]){"x", "y"}};
  tj_function *f = compile(affine, &o);
  const int64_t n[] = {3, 1, 0, 7};
  for (int k = 0; k < 4; k++) call_shape(f, affine, n[k], 0);
  assert_counts(f, 1, 3, "2x+1 over n = 3, 1, 0, 7 without specialize_01");
  tj_free(f);
  f = compile(add_rows, &o);
  const int64_t xs[][2] = {{3, 3}, {7, 1}, {3, 1}, {5, 1}}, ys[] = {3, 1, 3, 4};
  for (int k = 0; k < 4; k++) {   /* (3,1) + (3,): the broadcast reads x_1 as 1, which becomes a constant */
    uopc_tensor x = mat(xs[k][0], xs[k][1]), y = vec(ys[k]);
    call_ok(f, add_rows, (tj_arg[]){tj_tensor(&x), tj_tensor(&y)}, NULL, 2, "(a, b) + (c,)");
    uopc_tensor_release(&x), uopc_tensor_release(&y);
  }
  assert_counts(f, 2, 2, "(a,b) + (c,) over (3,3)+(3), (7,1)+(1), (3,1)+(3), (5,1)+(4) without specialize_01");
  char text[4096];
  explain(f, NULL, text, sizeof text);
  assert_contains(text, "x_1 = x.shape[1] in [0, 16777216]");
  assert_contains(text, "x.shape[1] == 1");
  tj_free(f);
}

/* ---- Equal sizes. */

static void test_tj_equal_sizes_are_never_assumed_equal(void **state) {
  (void)state;
  tj_function *f = compile(affine, NULL);
  call_shape(f, affine, 3, 3), call_shape(f, affine, 3, 5);   /* (3, 3) does not make (3, 5) rebuild */
  assert_counts(f, 1, 1, "2x+1 over (3,3), (3,5)");
  tj_free(f);
}

static void test_tj_needed_equality_is_a_guard(void **state) {
  (void)state;
  tj_function *f = compile(add_rows, &(tj_options){.arg_names = (const char *const[]){"x", "y"}});
  const int64_t ab[][2] = {{3, 3}, {5, 5}, {7, 1}, {11, 11}, {13, 1}};
  for (int k = 0; k < 5; k++) {
    uopc_tensor x = mat(ab[k][0], ab[k][1]), y = vec(ab[k][1]);
    tj_arg args[2] = {tj_tensor(&x), tj_tensor(&y)};
    call_ok(f, add_rows, args, NULL, 2, "(a, b) + (b,)");
    uopc_tensor_release(&x), uopc_tensor_release(&y);
  }
  assert_counts(f, 2, 3, "(a,b) + (b,) over (3,3), (5,5), (7,1), (11,11), (13,1)");
  char text[4096];
  explain(f, NULL, text, sizeof text);
  assert_contains(text, "y.shape[0] == x.shape[1]");
  /* a call that breaks the equality is refused by the guard, then by the trace (a real mismatch) */
  uopc_tensor x = mat(4, 3), y = vec(5), out[1] = {{0}};
  tj_arg args[2] = {tj_tensor(&x), tj_tensor(&y)};
  explain(f, args, text, sizeof text);
  assert_contains(text, "guard 'y.shape[0] == x.shape[1]' failed");
  uopc_error err = {0};
  assert_int_not_equal(tj_call(f, args, 2, out, &err), UOPC_OK);
  assert_contains(err.message, "cannot broadcast");
  assert_null(out[0].storage);
  uopc_tensor_release(&x), uopc_tensor_release(&y);
  tj_free(f);
}

static void test_tj_matmul_contraction_is_a_guard(void **state) {
  (void)state;
  tj_function *f = compile(matmul, &(tj_options){.arg_names = (const char *const[]){"a", "b"}});
  const int64_t mkn[][3] = {{3, 4, 5}, {2, 6, 3}, {4, 4, 4}};
  for (int k = 0; k < 3; k++) {
    uopc_tensor a = mat(mkn[k][0], mkn[k][1]), b = mat(mkn[k][1], mkn[k][2]);
    call_ok(f, matmul, (tj_arg[]){tj_tensor(&a), tj_tensor(&b)}, NULL, 2, "a @ b");
    uopc_tensor_release(&a), uopc_tensor_release(&b);
  }
  assert_counts(f, 1, 2, "(m,k) @ (k,n) over (3,4,5), (2,6,3), (4,4,4)");
  char text[4096];
  explain(f, NULL, text, sizeof text);
  assert_contains(text, "  b.shape[0] == a.shape[1]\n");
  assert_contains(text, "  b_1 = b.shape[1] in [2, 16777216]\n");   /* n stays its own dim, even at 4 = k */
  tj_free(f);
}

static int sum_of_six(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* x0 + ... + x5 */
  (void)user;
  tp_tensor *s = in[0].t;
  for (int k = 1; k < 6; k++) s = tp_add(c, s, in[k].t);
  out[0] = s;
  return tp_status(c);
}

/* Six (a, b) inputs, one transposed: the artifact's name from its key
 * ("tj_six_static_fk5k7_fk5k7_..._v0") passes the lowering's 47 characters
 * and is replaced by the key's hash, dynamic or static; found by
 * check_core_tj.py's random graphs. */
static void test_tj_many_inputs_get_an_entry_the_lowering_takes(void **state) {
  (void)state;
  for (int dynamic = 0; dynamic < 2; dynamic++) {
    tj_function *f = compile(sum_of_six, &(tj_options){.name = "six_inputs", .dynamic = dynamic ? TJ_ON : TJ_OFF});
    uopc_tensor x[6], t = mat(7, 5), packed[6];
    tj_arg args[6], ref[6];
    uopc_error err = {0};
    for (int k = 0; k < 5; k++) x[k] = mat(5, 7);
    assert_uopc_ok(uopc_tensor_transpose(&x[5], &t, 0, 1, &err), err);   /* (5, 7), strides (1, 5) */
    for (int k = 0; k < 6; k++) {
      args[k] = tj_tensor(&x[k]);
      assert_uopc_ok(uopc_tensor_empty(&packed[k], UOPC_F32, 2, x[k].shape, &err), err);
      assert_uopc_ok(uopc_tensor_copy(&packed[k], &x[k], &err), err);
      ref[k] = tj_tensor(&packed[k]);
    }
    call_ok(f, sum_of_six, args, ref, 6, dynamic ? "six inputs, dynamic" : "six inputs, static");
    assert_counts(f, 1, 0, "six inputs");
    for (int k = 0; k < 6; k++) uopc_tensor_release(&x[k]), uopc_tensor_release(&packed[k]);
    uopc_tensor_release(&t);
    tj_free(f);
  }
}

enum { SIXTEEN = 16 };   /* written out: the test is of this number, whatever the header says */

static int sum_of_sums(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* x0.sum() + ... + x15.sum() */
  (void)user;
  tp_tensor *s = tp_sum(c, in[0].t, 0u, 0);
  for (int k = 1; k < SIXTEEN; k++) s = tp_add(c, s, tp_sum(c, in[k].t, 0u, 0));
  out[0] = s;
  return tp_status(c);
}

/* 16 matrices, each with two dims of its own: one kernel
 * of 1 + 16 buffers and 32 dims, past the runtime's old 31 parameters and the
 * binding's old 32 dims, and one artifact for two calls of other sizes. */
static void test_tj_sixteen_tensors_and_their_32_dims_fit_one_artifact(void **state) {
  (void)state;
  tj_function *f = compile(sum_of_sums, &(tj_options){.name = "sixteen"});
  for (int call = 0; call < 2; call++) {
    uopc_tensor x[SIXTEEN];
    tj_arg args[SIXTEEN];
    double want = 0;
    for (int k = 0; k < SIXTEEN; k++) {
      x[k] = call ? mat(3 + 2 * k, 2 + k % 5) : mat(2 + k, 3 + k % 3);
      args[k] = tj_tensor(&x[k]);
      for (int64_t i = 0; i < uopc_tensor_numel(&x[k]); i++) want += uopc_tensor_get(&x[k], i);
    }
    uopc_tensor out[1] = {{0}};
    uopc_error err = {0};
    assert_uopc_ok(tj_call(f, args, SIXTEEN, out, &err), err);
    assert_int_equal(out[0].rank, 0);
    assert_float_equal(uopc_tensor_get(&out[0], 0), want, 1e-4 * (1 + fabs(want)));   /* f32 sums */
    uopc_tensor_release(&out[0]);
    for (int k = 0; k < SIXTEEN; k++) uopc_tensor_release(&x[k]);
  }
  assert_counts(f, 1, 1, "sixteen matrices of two sizes each");
  const char *source = tj_artifact_source(f, 0);
  assert_non_null(source);
  assert_contains(source, "a15_1");   /* the 32nd dim, a parameter of the kernel */
  tj_free(f);
}

/* A function keeps its last output's storage and takes it back only when the
 * caller has released it: an output the caller still holds is never written
 * by a later call, whatever the sizes. */
static void test_tj_outputs_reuse_storage_only_once_released(void **state) {
  (void)state;
  tj_function *f = compile(affine, NULL);
  uopc_tensor x = vec(6), y = vec(6), held[1] = {{0}}, out[1] = {{0}};
  uopc_error err = {0};
  for (int64_t i = 0; i < 6; i++) uopc_tensor_set(&y, i, 100.0 + (double)i);
  assert_uopc_ok(tj_call(f, (tj_arg[]){tj_tensor(&x)}, 1, held, &err), err);
  const void *first = uopc_tensor_data(&held[0]);
  assert_uopc_ok(tj_call(f, (tj_arg[]){tj_tensor(&y)}, 1, out, &err), err);
  assert_ptr_not_equal(uopc_tensor_data(&out[0]), first);   /* held[0] is still the caller's */
  for (int64_t i = 0; i < 6; i++) {
    assert_float_equal(uopc_tensor_get(&held[0], i), 2 * ((double)(i + 1) / 8 - 1) + 1, 1e-6);
    assert_float_equal(uopc_tensor_get(&out[0], i), 2 * (100.0 + (double)i) + 1, 1e-4);
  }
  const void *second = uopc_tensor_data(&out[0]);
  uopc_tensor_release(&held[0]), uopc_tensor_release(&out[0]);
  assert_uopc_ok(tj_call(f, (tj_arg[]){tj_tensor(&x)}, 1, out, &err), err);
  assert_ptr_equal(uopc_tensor_data(&out[0]), second);      /* released: taken back, not allocated */
  assert_int_equal(uopc_tensor_storage_refs(&out[0]), 2);    /* the caller's and the function's */
  assert_float_equal(uopc_tensor_get(&out[0], 5), 2 * (6.0 / 8 - 1) + 1, 1e-6);
  uopc_tensor_release(&out[0]);
  uopc_tensor z = vec(9);                                    /* another size: new storage, kept instead */
  assert_uopc_ok(tj_call(f, (tj_arg[]){tj_tensor(&z)}, 1, out, &err), err);
  assert_ptr_not_equal(uopc_tensor_data(&out[0]), second);
  assert_int_equal(out[0].shape[0], 9);
  uopc_tensor_release(&out[0]), uopc_tensor_release(&x), uopc_tensor_release(&y), uopc_tensor_release(&z);
  tj_free(f);
}

static int flat_plus(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* x.reshape(a*b) + y */
  (void)user;
  tp_int n = tp_int_mul(c, tp_size(c, in[0].t, 0), tp_size(c, in[0].t, 1));
  out[0] = tp_add(c, tp_reshape_at(c, in[0].t, 1, &n, TP_HERE), in[1].t);
  return tp_status(c);
}

static int tail_plus(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* x[2:] + x */
  (void)user;
  out[0] = tp_add(c, tp_slice_at(c, in[0].t, 0, tp_int_const(c, 2), TP_NONE, 1, TP_HERE), in[0].t);
  return tp_status(c);
}

/* A dim the operation needs equal to an expression (y's length against a*b)
 * is read as that expression: y is declared with extent a0_0*a0_1, and a
 * trace guard a1_0 - a0_0*a0_1 == 0 decides each call. One artifact serves
 * (3, 4) + (12,) and (2, 6) + (12,) and (5, 2) + (10,); (3, 4) + (11,) fails
 * the guard, is traced again and gets the IR's broadcast error, never a
 * kernel that reads y's 11 elements as 12. */
static void test_tj_dim_equal_to_an_expression_is_read_as_it_and_guarded(void **state) {
  (void)state;
  tj_function *f = compile(flat_plus, NULL);
  static const int64_t calls[][3] = {{3, 4, 12}, {2, 6, 12}, {5, 2, 10}};
  for (int k = 0; k < 3; k++) {
    uopc_tensor x = mat(calls[k][0], calls[k][1]), y = vec(calls[k][2]);
    tj_arg args[2] = {tj_tensor(&x), tj_tensor(&y)};
    char what[64];
    snprintf(what, sizeof what, "(%lld, %lld) + (%lld,)", (long long)calls[k][0], (long long)calls[k][1],
             (long long)calls[k][2]);
    call_ok(f, flat_plus, args, NULL, 2, what);
    uopc_tensor_release(&x), uopc_tensor_release(&y);
  }
  assert_counts(f, 1, 2, "(3, 4), (2, 6) and (5, 2) with y of a*b");
  char text[4096];
  explain(f, NULL, text, sizeof text);   /* the artifact's guards: this one is no branch */
  assert_contains(text, "  a1_0 - a0_0*a0_1 == 0 is true (an extent read as an expression at tests/tensorjit/"
                        "test_tensorjit.c:");
  uopc_tensor x = mat(3, 4), z = vec(11), out[1] = {{0}};
  uopc_error err = {0};
  tj_arg bad[2] = {tj_tensor(&x), tj_tensor(&z)};
  explain(f, bad, text, sizeof text);
  assert_contains(text, "rejected: guard 'a1_0 - a0_0*a0_1 == 0 is true' (tests/tensorjit/test_tensorjit.c:");
  assert_int_equal(tj_call(f, bad, 2, out, &err), UOPC_E_INVALID);
  assert_contains(err.message, "cannot broadcast");
  assert_null(out[0].storage);
  assert_counts(f, 1, 2, "after the mismatch");
  uopc_tensor_release(&x), uopc_tensor_release(&z);
  tj_free(f);

  /* x[2:] + x: at n = 3 the slice's n - 2 is 1 and would stretch, a decision
   * on an expression's value the capture cannot pin; at n = 5 it is 3 against
   * 5, the IR's broadcast error as NumPy's. (check_core_tj found the first.) */
  f = compile(tail_plus, NULL);
  for (int64_t n = 3; n <= 5; n += 2) {
    uopc_tensor v = vec(n);
    err = (uopc_error){0};
    assert_int_equal(tj_call(f, (tj_arg[]){tj_tensor(&v)}, 1, out, &err), n == 3 ? UOPC_E_UNSUPPORTED : UOPC_E_INVALID);
    assert_contains(err.message, n == 3 ? "sizes a0_0 - 2 and a0_0 are 1 and 3 in this call and the operation"
                                          " broadcasts the 1" : "cannot broadcast");
    if (n == 3) assert_contains(err.message, "not with an expression");
    assert_null(out[0].storage);
    uopc_tensor_release(&v);
  }
  assert_counts(f, 0, 0, "refused captures of x[2:] + x");
  tj_free(f);
}

static void test_tj_two_outputs(void **state) {
  (void)state;
  tj_function *f = compile(two_outputs, &(tj_options){.n_outputs = 2});
  for (int64_t n = 3; n <= 9; n += 6) {
    uopc_tensor x = vec(n), out[2] = {{0}};
    uopc_error err = {0};
    assert_uopc_ok(tj_call(f, (tj_arg[]){tj_tensor(&x)}, 1, out, &err), err);
    double sum = 0;   /* both outputs checked by hand: eager() returns one */
    for (int64_t i = 0; i < n; i++) {
      sum += uopc_tensor_get(&x, i);
      assert_true(fabs(uopc_tensor_get(&out[0], i) - (uopc_tensor_get(&x, i) + 1)) < 1e-6);
    }
    assert_int_equal(out[1].rank, 0);
    assert_true(fabs(uopc_tensor_get(&out[1], 0) - sum) < 1e-5);
    uopc_tensor_release(&x), uopc_tensor_release(&out[0]), uopc_tensor_release(&out[1]);
  }
  assert_counts(f, 1, 1, "x + 1, x.sum() over n = 3, 9");
  tj_free(f);
}

/* ---- Layout. */

static void test_tj_transposed_input_is_another_artifact(void **state) {
  (void)state;
  tj_function *f = compile(affine, &(tj_options){.arg_names = (const char *const[]){"x"}});
  call_shape(f, affine, 3, 5);
  const int64_t sizes[][2] = {{5, 3}, {7, 2}};
  for (int k = 0; k < 2; k++) {   /* x^T: strided, read through its strides */
    uopc_tensor base = mat(sizes[k][0], sizes[k][1]), t, packed;
    uopc_error err = {0};
    assert_uopc_ok(uopc_tensor_transpose(&t, &base, 0, 1, &err), err);
    assert_uopc_ok(uopc_tensor_empty(&packed, UOPC_F32, 2, t.shape, &err), err);
    assert_uopc_ok(uopc_tensor_copy(&packed, &t, &err), err);
    tj_arg args[1] = {tj_tensor(&t)}, ref[1] = {tj_tensor(&packed)};
    call_ok(f, affine, args, ref, 1, "2x+1 of a transposed x");
    uopc_tensor_release(&base), uopc_tensor_release(&t), uopc_tensor_release(&packed);
  }
  assert_counts(f, 2, 1, "2x+1 over x (3,5), x^T (3,5), x^T (2,7)");
  char text[4096];
  explain(f, NULL, text, sizeof text);
  assert_contains(text, "x is contiguous");
  assert_contains(text, "x_s0 = x.strides[0]");
  tj_free(f);
}

/* ---- Branches on sizes. */

static void test_tj_branch_on_size_guards_both_outcomes(void **state) {
  (void)state;
  tj_function *f = compile(branchy, NULL);
  const int64_t n[] = {3, 7, 2, 9, 4, 11};
  for (int k = 0; k < 6; k++) call_shape(f, branchy, n[k], 0);
  assert_counts(f, 2, 4, "x+1 if len(x) > 4 else 2x over n = 3, 7, 2, 9, 4, 11");
  char text[4096];
  explain(f, NULL, text, sizeof text);
  /* each outcome narrowed its dim's bounds and was captured again: a range guard of the cache */
  assert_contains(text, "  a0_0 = a0.shape[0] in [2, 4]\n");
  assert_contains(text, "  a0_0 = a0.shape[0] in [5, 16777216]\n");
  assert_true(strstr(text, "(a branch at") == NULL);
  tj_free(f);
}

static int two_dim_line;
static int two_dims(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* 2x if len(x) > len(y) else 3x */
  (void)user;
  two_dim_line = __LINE__ + 1;
  int longer = tp_gt(c, tp_size(c, in[0].t, 0), tp_size(c, in[1].t, 0));
  out[0] = tp_mul(c, in[0].t, tp_scalar(c, longer ? 2 : 3));
  return tp_status(c);
}

static void test_tj_branch_on_two_sizes_is_a_trace_guard(void **state) {
  (void)state;
  tj_function *f = compile(two_dims, &(tj_options){.arg_names = (const char *const[]){"x", "y"}});
  const int64_t xy[][2] = {{3, 2}, {5, 4}, {2, 3}, {4, 9}, {9, 4}};
  for (int k = 0; k < 5; k++) {
    uopc_tensor x = vec(xy[k][0]), y = vec(xy[k][1]);
    call_ok(f, two_dims, (tj_arg[]){tj_tensor(&x), tj_tensor(&y)}, NULL, 2, "2x if len(x) > len(y) else 3x");
    uopc_tensor_release(&x), uopc_tensor_release(&y);
  }
  assert_counts(f, 2, 3, "2x if len(x) > len(y) else 3x over (3,2), (5,4), (2,3), (4,9), (9,4)");
  char text[4096], line[64];
  explain(f, NULL, text, sizeof text);
  snprintf(line, sizeof line, "test_tensorjit.c:%d)", two_dim_line);
  assert_contains(text, "  x_0 - y_0 > 0 is true (a branch at ");
  assert_contains(text, "  x_0 - y_0 > 0 is false (a branch at ");
  assert_contains(text, line);
  uopc_tensor x = vec(6), y = vec(8);
  explain(f, (tj_arg[]){tj_tensor(&x), tj_tensor(&y)}, text, sizeof text);
  assert_contains(text, "rejected: guard 'x_0 - y_0 > 0 is true'");
  assert_contains(text, "failed: the difference is -2 on this call");
  uopc_tensor_release(&x), uopc_tensor_release(&y);
  tj_free(f);
}

/* ---- Scalars. */

static void test_tj_scalar_is_specialised_by_value(void **state) {
  (void)state;
  tj_function *f = compile(scaled, &(tj_options){.arg_names = (const char *const[]){"x", "scale"}});
  const double s[] = {2, 3, 2};
  for (int k = 0; k < 3; k++) {
    uopc_tensor x = vec(6);
    tj_arg args[2] = {tj_tensor(&x), tj_double(s[k])};
    call_ok(f, scaled, args, NULL, 2, "x * scale");
    uopc_tensor_release(&x);
  }
  assert_counts(f, 2, 1, "x * scale with scale = 2, 3, 2");
  tj_function *g = compile(repeat_scaled, &(tj_options){.arg_names = (const char *const[]){"x", "k"}});
  const int64_t ks[] = {2, 3, 2, 3};
  for (int k = 0; k < 4; k++) {
    uopc_tensor y = vec(5 + k);
    call_ok(g, repeat_scaled, (tj_arg[]){tj_tensor(&y), tj_int(ks[k])}, NULL, 2, "x added k times");
    uopc_tensor_release(&y);
  }
  assert_counts(g, 2, 2, "x added k times, k = 2, 3, 2, 3");
  char ktext[4096];
  explain(g, NULL, ktext, sizeof ktext);
  assert_contains(ktext, "  k == 3 (a scalar argument)\n");
  tj_free(g);
  uopc_tensor x = vec(6);
  tj_arg args[2] = {tj_tensor(&x), tj_double(5)};
  char text[4096];
  explain(f, args, text, sizeof text);
  assert_contains(text, "guard 'scale == 2' failed: this call has scale == 5");
  assert_contains(text, "a new one would be traced and built (2 of 8 kept)");
  uopc_tensor_release(&x);
  tj_free(f);
}

/* ---- The variant limit. */

/* x (3, 5) then x^T under max_variants = 1: the second call's rc and message. */
static int limit_second_call(tj_function *f, uopc_tensor *out, uopc_error *err) {
  uopc_tensor x = mat(3, 5), base = mat(5, 3), t;
  assert_uopc_ok(uopc_tensor_transpose(&t, &base, 0, 1, err), *err);
  tj_arg a1[1] = {tj_tensor(&x)}, a2[1] = {tj_tensor(&t)};
  call_ok(f, affine, a1, NULL, 1, "x (3, 5)");
  int rc = tj_call(f, a2, 1, out, err);
  if (!rc) {   /* the eager policy: the values of x^T */
    uopc_tensor packed;
    assert_uopc_ok(uopc_tensor_empty(&packed, UOPC_F32, 2, t.shape, err), *err);
    assert_uopc_ok(uopc_tensor_copy(&packed, &t, err), *err);
    uopc_tensor want = eager(affine, (tj_arg[]){tj_tensor(&packed)}, 1);
    assert_tensors_close(&out[0], &want, 1e-5, "x^T run eagerly");
    uopc_tensor_release(&want), uopc_tensor_release(&packed);
  }
  uopc_tensor_release(&x), uopc_tensor_release(&base), uopc_tensor_release(&t);
  return rc;
}

static void test_tj_limit_is_an_error_naming_the_guard(void **state) {
  (void)state;
  tj_function *f = compile(affine, &(tj_options){.max_variants = 1, .arg_names = (const char *const[]){"x"}});
  uopc_tensor out[1] = {{0}};
  uopc_error err = {0};
  assert_uopc_code(limit_second_call(f, out, &err), UOPC_E_LIMIT, err);
  assert_contains(err.message, "specialization limit");
  assert_contains(err.message, "guard 'x is contiguous' failed");
  assert_null(out[0].storage);
  assert_counts(f, 1, 0, "max_variants = 1, x then x^T");
  assert_int_equal(tj_stats(f).limit_hits, 1);
  assert_int_equal(tj_stats(f).eager_fallbacks, 0);
  tj_free(f);
}

static void test_tj_limit_runs_eagerly_counted(void **state) {
  (void)state;
  tj_function *f = compile(affine, &(tj_options){.max_variants = 1, .on_limit = TJ_LIMIT_EAGER});
  uopc_tensor out[1] = {{0}};
  uopc_error err = {0};
  assert_uopc_ok(limit_second_call(f, out, &err), err);
  uopc_tensor_release(&out[0]);
  assert_counts(f, 1, 0, "max_variants = 1 (eager), x then x^T");
  assert_int_equal(tj_stats(f).limit_hits, 1);
  assert_int_equal(tj_stats(f).eager_fallbacks, 1);
  assert_int_equal(uopc_counter_get(TJ_C_EAGER), 1);
  assert_int_equal(uopc_counter_get(TJ_C_LIMIT), 1);
  tj_free(f);
}

static void test_tj_limit_runs_an_unkept_artifact_counted(void **state) {
  (void)state;
  tj_function *f = compile(affine, &(tj_options){.max_variants = 1, .on_limit = TJ_LIMIT_UNKEPT});
  uopc_tensor out[1] = {{0}};
  uopc_error err = {0};
  assert_uopc_ok(limit_second_call(f, out, &err), err);   /* the values of x^T, compiled and not kept */
  uopc_tensor_release(&out[0]);
  assert_counts(f, 1, 0, "max_variants = 1 (unkept), x then x^T");
  tj_counts s = tj_stats(f);
  assert_int_equal(s.limit_hits, 1);
  assert_int_equal(s.unkept_runs, 1);
  assert_int_equal(s.eager_fallbacks, 0);
  assert_int_equal(uopc_counter_get(TJ_C_UNKEPT), 1);
  tj_free(f);
}

/* ---- Bad input. */

/* The call fails with code, its message naming needle; nothing ran, nothing written. */
static void refused(tj_function *f, const tj_arg *args, int n, int code, const char *needle) {
  uopc_tensor out[1];
  memset(out, 0, sizeof out);
  out[0].storage = (uopc_storage *)(uintptr_t)1;   /* a sentinel no call may overwrite */
  uopc_error err = {0};
  tj_counts before = tj_stats(f);
  assert_uopc_code(tj_call(f, args, n, out, &err), code, err);
  assert_contains(err.message, needle);
  assert_ptr_equal(out[0].storage, (void *)(uintptr_t)1);
  tj_counts after = tj_stats(f);
  assert_int_equal(after.calls, before.calls);
  assert_int_equal(after.artifacts_built, before.artifacts_built);
}

static void test_tj_bad_input_is_refused_naming_the_argument(void **state) {
  (void)state;
  tj_function *f = compile(scaled, &(tj_options){.arg_names = (const char *const[]){"x", "scale"}});
  uopc_tensor x = vec(4), m = mat(2, 2), d;
  uopc_error err = {0};
  assert_uopc_ok(uopc_tensor_empty(&d, UOPC_F64, 1, (int64_t[]){4}, &err), err);
  refused(f, (tj_arg[]){tj_tensor(NULL), tj_double(2)}, 2, UOPC_E_INVALID, "argument 0 ('x') is a NULL");
  refused(f, (tj_arg[]){tj_tensor(&x), {.kind = 7}}, 2, UOPC_E_INVALID, "argument 1 has kind 7, not a tj_kind");
  call_ok(f, scaled, (tj_arg[]){tj_tensor(&x), tj_double(2)}, NULL, 2, "the first call");
  /* a second call keeps the signature's nodes, so the checks below are the warm path's, whose
   * mismatches go down the full path for their messages */
  call_ok(f, scaled, (tj_arg[]){tj_tensor(&x), tj_double(2)}, NULL, 2, "the second call");
  refused(f, (tj_arg[]){tj_tensor(&x)}, 1, UOPC_E_INVALID, "1 arguments; the function takes 2");
  refused(f, (tj_arg[]){tj_tensor(&x), tj_double(2), tj_int(1)}, 3, UOPC_E_INVALID, "the function takes 2");
  refused(f, (tj_arg[]){tj_tensor(&d), tj_double(2)}, 2, UOPC_E_DTYPE, "argument 0 ('x') is f64 of rank 1");
  refused(f, (tj_arg[]){tj_tensor(&m), tj_double(2)}, 2, UOPC_E_INVALID, "traced for f32 of rank 1");
  refused(f, (tj_arg[]){tj_tensor(&x), tj_int(2)}, 2, UOPC_E_INVALID, "argument 1 ('scale') is an int");
  refused(f, (tj_arg[]){tj_tensor(NULL), tj_double(2)}, 2, UOPC_E_INVALID, "argument 0 ('x') is a NULL");
  call_ok(f, scaled, (tj_arg[]){tj_tensor(&x), tj_double(2)}, NULL, 2, "a good call after the refused ones");
  assert_counts(f, 1, 2, "three good calls among refused ones");
  uopc_tensor_release(&x), uopc_tensor_release(&m), uopc_tensor_release(&d);
  tj_free(f);
}

static int item_line;
static int reads_data(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* x * x[0]: data */
  (void)user;
  item_line = __LINE__ + 1;
  double v = tp_item(c, tp_reduce_at(c, IR_MAX, in[0].t, 0u, 0, TP_HERE));
  out[0] = tp_mul(c, in[0].t, tp_scalar(c, v));
  return tp_status(c);
}

static int input_line;
static int reads_input(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* an input's element */
  (void)user;
  input_line = __LINE__ + 1;
  double v = tp_item(c, in[0].t);
  out[0] = tp_mul(c, in[0].t, tp_scalar(c, v));
  return tp_status(c);
}

static int data_branch(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* 3x if x.sum() > 0 else 2x */
  (void)user;
  int up = tp_item(c, tp_sum(c, in[0].t, 0u, 0)) > 0;
  out[0] = tp_mul(c, in[0].t, tp_scalar(c, up ? 3 : 2));
  return tp_status(c);
}

static int gated_line;
static int gated_item(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* x * x.max() past 8, else 2x */
  (void)user;
  double v = 2;
  gated_line = __LINE__ + 1;
  if (tp_gt(c, tp_size(c, in[0].t, 0), tp_int_const(c, 8))) v = tp_item(c, tp_reduce_at(c, IR_MAX, in[0].t, 0u, 0, TP_HERE));
  out[0] = tp_sum(c, tp_mul(c, in[0].t, tp_scalar(c, v)), 0u, 0);
  return tp_status(c);
}

/* strict_native refuses a data read by its line, writing nothing; gradients
 * refuse one in any mode (a forward that breaks saves nothing): here a call
 * of a size whose branch reads data, after one whose branch does not. */
static void test_tj_data_reads_are_refused_by_line_in_strict_mode(void **state) {
  (void)state;
  tj_model models[] = {reads_data, reads_input};
  for (int m = 0; m < 3; m++) {
    tj_options o = {.strict_native = m < 2, .grad_args = m < 2 ? 0 : 0x1};
    tj_function *f = compile(m < 2 ? models[m] : gated_item, &o);
    uopc_tensor x = vec(m == 1 ? 1 : m == 2 ? 16 : 4), out[1] = {{0}};
    uopc_error err = {0};
    tj_saved *saved = NULL;
    char line[64];
    if (m == 2) {   /* n = 4 takes the branch without the read */
      uopc_tensor y = vec(4);
      assert_uopc_ok(tj_call_saving(f, (tj_arg[]){tj_tensor(&y)}, 1, out, &saved, &err), err);
      uopc_tensor_release(&out[0]), tj_saved_free(saved), uopc_tensor_release(&y);
      saved = NULL;
    }
    int rc = m < 2 ? tj_call(f, (tj_arg[]){tj_tensor(&x)}, 1, out, &err)
                   : tj_call_saving(f, (tj_arg[]){tj_tensor(&x)}, 1, out, &saved, &err);
    assert_uopc_code(rc, UOPC_E_UNSUPPORTED, err);
    assert_contains(err.message, "tp_item");
    if (m == 2) assert_contains(err.message, "a function with gradients takes no graph break");
    snprintf(line, sizeof line, "test_tensorjit.c:%d", m == 0 ? item_line : m == 1 ? input_line : gated_line);
    assert_contains(err.message, line);
    assert_null(out[0].storage);
    assert_null(saved);
    if (m < 2) assert_counts(f, 0, 0, "a model that reads data");
    assert_int_equal(tj_stats(f).break_runs, 0);
    tj_graph *g = NULL;   /* capture only: refused the same way, whatever the options */
    assert_uopc_code(tj_make_graph(&g, models[m % 2], NULL, (tj_arg[]){tj_tensor(&x)}, 1, TJ_SYMBOLIC, &err),
                     UOPC_E_UNSUPPORTED, err);
    assert_contains(err.message, "tp_item");
    assert_null(g);
    uopc_tensor_release(&x);
    tj_free(f);
  }
}

/* Without strict_native a capture that breaks runs region by region (23.4's
 * way): right values for both outcomes of a data branch, no artifact kept,
 * each region compiled once (the later calls of other sizes construct no
 * program), and an input's value never baked into a region. */
static void test_tj_graph_breaks_run_region_by_region(void **state) {
  (void)state;
  tj_function *f = compile(data_branch, NULL);
  int64_t breaks = uopc_counter_get("graph breaks"), built = 0;
  const int64_t n[] = {4, 16, 6, 20};   /* x.sum() < 0, > 0, < 0, > 0 */
  for (int k = 0; k < 4; k++) {
    if (k == 2) built = uopc_counter_get(UOPC_C_PROGRAMS_CONSTRUCTED);
    uopc_tensor x = vec(n[k]);
    char what[64];
    snprintf(what, sizeof what, "3x if x.sum() > 0 else 2x at n = %lld", (long long)n[k]);
    call_ok(f, data_branch, (tj_arg[]){tj_tensor(&x)}, NULL, 1, what);
    uopc_tensor_release(&x);
  }
  expect_int(uopc_counter_get(UOPC_C_PROGRAMS_CONSTRUCTED), built,
             "both outcomes again at n = 6, 20: the counter 'programs constructed'");
  expect_int(uopc_counter_get("graph breaks") - breaks, 4, "four calls of one break each: the counter 'graph breaks'");
  expect_int(uopc_counter_get(TJ_C_BREAK_RUNS), 4, "the counter '" TJ_C_BREAK_RUNS "'");
  tj_counts s = tj_stats(f);
  expect_int(s.break_runs, 4, "tj_stats' break_runs");
  expect_int(s.calls, 4, "tj_stats' calls");
  assert_counts(f, 0, 0, "a data branch");
  tj_free(f);

  f = compile(reads_input, NULL);   /* x * x.item(): the item read per call */
  for (int k = 0; k < 2; k++) {
    uopc_tensor x = vec(1), out[1] = {{0}};
    uopc_error err = {0};
    uopc_tensor_set(&x, 0, k ? 3 : -0.5);
    assert_uopc_ok(tj_call(f, (tj_arg[]){tj_tensor(&x)}, 1, out, &err), err);
    expect_close(uopc_tensor_get(&out[0], 0), k ? 9 : 0.25, 0, "x * x.item() at x = [%g]", k ? 3 : -0.5);
    uopc_tensor_release(&out[0]), uopc_tensor_release(&x);
  }
  assert_counts(f, 0, 0, "x * x.item()");
  tj_free(f);

  /* Each new item is a new constant in the region after the break, so a new
   * program: a group keeps max_variants of them, and a call that needs one
   * more runs eagerly, counted, compiling nothing; a call whose regions are
   * kept still runs them. */
  tj_options o = {.max_variants = 2};
  f = compile(reads_input, &o);
  int64_t programs = uopc_counter_get(UOPC_C_PROGRAMS_CONSTRUCTED), eager0 = uopc_counter_get(TJ_C_EAGER);
  const double items[] = {1, 2, 3, 4, 1};
  const int64_t want_programs[] = {1, 2, 2, 2, 2}, want_eager[] = {0, 0, 1, 2, 2}, want_runs[] = {1, 2, 2, 2, 3};
  for (int k = 0; k < 5; k++) {
    uopc_tensor x = vec(1), out[1] = {{0}};
    uopc_error err = {0};
    uopc_tensor_set(&x, 0, items[k]);
    assert_uopc_ok(tj_call(f, (tj_arg[]){tj_tensor(&x)}, 1, out, &err), err);
    expect_close(uopc_tensor_get(&out[0], 0), items[k] * items[k], 0, "x * x.item() at x = [%g]", items[k]);
    expect_int(uopc_counter_get(UOPC_C_PROGRAMS_CONSTRUCTED) - programs, want_programs[k],
               "call %d, x = [%g], max_variants 2: programs constructed", k, items[k]);
    expect_int(uopc_counter_get(TJ_C_EAGER) - eager0, want_eager[k], "call %d, x = [%g]: eager fallbacks", k, items[k]);
    expect_int(tj_stats(f).break_runs, want_runs[k], "call %d, x = [%g]: break runs", k, items[k]);
    uopc_tensor_release(&out[0]), uopc_tensor_release(&x);
  }
  tj_free(f);
}

/* ---- Out of memory. */

#ifndef __SANITIZE_ADDRESS__   /* AddressSanitizer's allocator is not the one that fails when asked */
/* The k-th malloc (or calloc) of a first call failing, for every k until the
 * call needs fewer: each fails with an error and writes no output, and the
 * function still serves the next call. */
static void sweep(int *next) {
  for (int k = 1; k < 2000; k++) {
    tj_function *f = compile(add_rows, NULL);
    uopc_tensor x = mat(3, 4), y = vec(4), out[1];
    memset(out, 0, sizeof out);
    uopc_error err = {0};
    tj_arg args[2] = {tj_tensor(&x), tj_tensor(&y)};
    *next = k;
    int rc = tj_call(f, args, 2, out, &err);
    int ran_out = *next == 0;   /* the k-th allocation was asked for */
    *next = 0;
    if (rc) {
      if (!ran_out) fail_msg("k = %d: %s with no allocation failing: %s", k, uopc_error_name(rc), err.message);
      assert_null(out[0].storage);
      call_ok(f, add_rows, args, NULL, 2, "the call after a failed one");
    } else uopc_tensor_release(&out[0]);
    uopc_tensor_release(&x), uopc_tensor_release(&y);
    tj_free(f);
    if (!rc && !ran_out) return;   /* past the last allocation */
  }
  fail_msg("a first call makes more than 2000 allocations");
}
#endif

static void test_tj_out_of_memory_fails_cleanly_at_every_allocation(void **state) {
  (void)state;
#ifdef __SANITIZE_ADDRESS__
  testutil_skip_under_asan("an allocator that fails when asked");
#else
  testutil_skip_unless_allocation_fails();
  sweep(&fail_next_malloc);
  sweep(&fail_next_calloc);
#endif
}

/* ---- Options. */

static void test_tj_static_mode_builds_one_artifact_per_shape(void **state) {
  (void)state;
  tj_function *f = compile(affine, &(tj_options){.dynamic = TJ_OFF});
  call_shape(f, affine, 3, 7), call_shape(f, affine, 5, 11), call_shape(f, affine, 3, 7);
  assert_counts(f, 2, 1, "static: (3,7), (5,11), (3,7)");
  tj_free(f);
}

static void test_tj_strict_native_fails_and_default_interprets(void **state) {
  (void)state;
  const uopc_program_options bad = {.opt_flags = "-O2 -fno-such-flag-tensorjit"};   /* gcc refuses it */
  tj_function *strict = compile(affine, &(tj_options){.strict_native = 1, .program = &bad});
  uopc_tensor x = vec(5), out[1] = {{0}};
  tj_arg args[1] = {tj_tensor(&x)};
  uopc_error err = {0};
  assert_uopc_code(tj_call(strict, args, 1, out, &err), UOPC_E_COMPILE, err);
  assert_contains(err.message, "could not be generated (strict_native)");
  assert_null(out[0].storage);
  assert_counts(strict, 0, 0, "strict_native, generation failing");
  tj_free(strict);
  tj_function *f = compile(affine, &(tj_options){.program = &bad});
  call_ok(f, affine, args, NULL, 1, "interpreted, n = 5");
  call_shape(f, affine, 9, 0);
  assert_counts(f, 1, 1, "interpreted: n = 5, 9");
  assert_int_equal(tj_stats(f).eager_fallbacks, 2);
  uopc_tensor_release(&x);
  tj_free(f);
}

/* ---- Capture only. */

/* TJ_PRINT=1 prints what chapter 23.7 quotes. */
static void show(const char *title, const char *text) {
  if (getenv("TJ_PRINT")) print_message("---- %s\n%s", title, text);
}


static void test_tj_make_graph_prints_the_trace_and_its_guards(void **state) {
  (void)state;
  uopc_tensor x = mat(3, 3), y = vec(3), v = vec(7);
  tj_arg args[2] = {tj_tensor(&x), tj_tensor(&y)};
  tj_graph *g = NULL;
  uopc_error err = {0};
  assert_uopc_ok(tj_make_graph(&g, add_rows, NULL, args, 2, TJ_SYMBOLIC, &err), err);
  show("tj_make_graph(add_rows, (3, 3), (3,), TJ_SYMBOLIC)", tj_graph_text(g));
  assert_contains(tj_graph_text(g), "f32[a0_0, a0_1]");
  assert_contains(tj_graph_text(g), "  a1.shape[0] == a0.shape[1]\n");
  const ir_node *const *outs = NULL;
  int n = 0;
  assert_non_null(tj_graph_ir(g, &outs, &n));
  assert_int_equal(n, 1);
  assert_int_equal(outs[0]->rank, 2);
  tj_graph_free(g);
  assert_uopc_ok(tj_make_graph(&g, add_rows, NULL, args, 2, TJ_CONCRETE, &err), err);
  show("tj_make_graph(add_rows, (3, 3), (3,), TJ_CONCRETE)", tj_graph_text(g));
  assert_contains(tj_graph_text(g), "f32[3, 3]");
  assert_contains(tj_graph_text(g), "  a0.shape[1] == 3\n");
  tj_graph_free(g);
  assert_uopc_ok(tj_make_graph(&g, branchy, NULL, (tj_arg[]){tj_tensor(&v)}, 1, TJ_SYMBOLIC, &err), err);
  show("tj_make_graph(branchy, (7,), TJ_SYMBOLIC)", tj_graph_text(g));
  assert_contains(tj_graph_text(g), "  a0_0 = a0.shape[0] in [5, 16777216]\n");
  tj_graph_free(g);
  uopc_tensor fake = {0};
  fake.rank = 1, fake.shape[0] = 4;   /* a shape without storage */
  assert_uopc_code(tj_make_graph(&g, affine, NULL, (tj_arg[]){tj_tensor(&fake)}, 1, TJ_SYMBOLIC, &err),
                   UOPC_E_UNSUPPORTED, err);
  assert_contains(err.message, "storage-free");
  assert_uopc_code(tj_make_graph(&g, reads_data, NULL, (tj_arg[]){tj_tensor(&v)}, 1, TJ_SYMBOLIC, &err),
                   UOPC_E_UNSUPPORTED, err);
  uopc_tensor_release(&x), uopc_tensor_release(&y), uopc_tensor_release(&v);
}

/* ---- Symbolic ints: an int that is a dim (tj_sym_int). */

static int64_t head_read_i;   /* what head_scaled's model saw as its int's value */
static int head_scaled(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* x[:n] * 2 */
  (void)user;
  head_read_i = in[1].i;
  out[0] = tp_mul(c, tp_slice(c, in[0].t, 0, tp_int_const(c, 0), in[1].size, 1), tp_scalar(c, 2));
  return tp_status(c);
}

static int sym_branchy(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* x+1 if n > 4 else 2x */
  (void)user;
  if (tp_gt(c, in[1].size, tp_int_const(c, 4))) out[0] = tp_add(c, in[0].t, tp_scalar(c, 1));
  else out[0] = tp_mul(c, in[0].t, tp_scalar(c, 2));
  return tp_status(c);
}

static int tiled(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* x.repeat(n) + 1 */
  (void)user;
  out[0] = tp_add(c, tp_repeat_sizes_at(c, in[0].t, 1, &in[1].size, TP_HERE), tp_scalar(c, 1));
  return tp_status(c);
}

static int head_by_data(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* x[:n] * x[:n].max(): data */
  (void)user;
  tp_tensor *h = tp_slice(c, in[0].t, 0, tp_int_const(c, 0), in[1].size, 1);
  out[0] = tp_mul(c, h, tp_scalar(c, tp_item(c, tp_reduce_at(c, IR_MAX, h, 0u, 0, TP_HERE))));
  return tp_status(c);
}

static int head_of_pair(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* p[0][:p[1]] * 2 */
  (void)user;
  const tj_in *p = in[0].items;
  out[0] = tp_mul(c, tp_slice(c, p[0].t, 0, tp_int_const(c, 0), p[1].size, 1), tp_scalar(c, 2));
  return tp_status(c);
}

/* x[:n] * 2 against a loop over x's elements: min(n, len(x)) of them, doubled. */
static void head_ok(tj_function *f, const uopc_tensor *x, tj_arg n) {
  uopc_tensor out[1] = {{0}};
  uopc_error err = {0};
  assert_uopc_ok(tj_call(f, (tj_arg[]){tj_tensor(x), n}, 2, out, &err), err);
  int64_t want = n.i < x->shape[0] ? n.i : x->shape[0];
  assert_int_equal(out[0].rank, 1);
  assert_int_equal(out[0].shape[0], want);
  for (int64_t i = 0; i < want; i++)
    if (uopc_tensor_get(&out[0], i) != 2 * uopc_tensor_get(x, i))
      fail_msg("n = %lld: element %lld is %g, expected %g", (long long)n.i, (long long)i, uopc_tensor_get(&out[0], i),
               2 * uopc_tensor_get(x, i));
  uopc_tensor_release(&out[0]);
}

/* The same model over n = 3, 7, 5, 12, 20 (past the end: the slice clamps), 1, 0, 9: as a
 * symbolic int, 3 artifacts (n >= 2, 1, 0, the seed's 0/1 rule), the first guarding n's bounds;
 * as an int, one artifact per value. */
static void test_tj_symbolic_int_is_a_dim_one_artifact_across_values(void **state) {
  (void)state;
  const char *const names[] = {"x", "n"};
  tj_function *f = compile(head_scaled, &(tj_options){.arg_names = names});
  tj_function *g = compile(head_scaled, &(tj_options){.arg_names = names});
  uopc_tensor x = vec(12);
  const int64_t n[] = {3, 7, 5, 12, 20, 1, 0, 9};
  for (int k = 0; k < 8; k++) head_ok(f, &x, tj_sym_int(n[k]));
  assert_int_equal(head_read_i, TJ_NOT_A_VALUE);   /* its value is not the model's to bake in */
  assert_counts(f, 3, 5, "x[:n] * 2, n symbolic = 3, 7, 5, 12, 20, 1, 0, 9");
  for (int k = 0; k < 3; k++) head_ok(g, &x, tj_int(n[k]));
  assert_int_equal(head_read_i, 5);
  assert_counts(g, 3, 0, "x[:n] * 2, n an int = 3, 7, 5");
  char text[4096];
  explain(f, (tj_arg[]){tj_tensor(&x), tj_sym_int(6)}, text, sizeof text);
  show("tj_explain(x[:n] * 2, x (12,), n = 6 symbolic)", text);
  assert_contains(text, "call (x: f32 (12); n = 6 (symbolic)):\n");
  assert_contains(text, "would run tj_f_fd0_bd1_");   /* n is the dim of its own class */
  explain(f, NULL, text, sizeof text);
  assert_contains(text, "  n = n_carrier.shape[0] in [2, 16777216]\n");
  assert_true(strstr(text, "(a scalar argument)") == NULL);   /* no value guard */
  tj_graph *graph = NULL;
  uopc_error err = {0};
  assert_uopc_ok(tj_make_graph(&graph, head_scaled, NULL, (tj_arg[]){tj_tensor(&x), tj_sym_int(6)}, 2, TJ_SYMBOLIC,
                               &err), err);
  show("tj_make_graph(x[:n] * 2, x (12,), n = 6 symbolic, TJ_SYMBOLIC)", tj_graph_text(graph));
  assert_contains(tj_graph_text(graph), "slice(%0, axis=0, start=0, step=1) : f32[min(a0_0, a1)]\n");
  assert_contains(tj_graph_text(graph), "  a1 = a1_carrier.shape[0] in [2, 16777216]\n");
  tj_graph_free(graph);
  tj_free(f), tj_free(g);
  uopc_tensor_release(&x);
}

/* A branch on a symbolic int guards both outcomes (2 artifacts over n = 3, 7, 2, 9, 4, 11), and a
 * size computed from it shapes the output: x.repeat(n) + 1 is one artifact for n = 2, 3, 5 and
 * lengths of x 4, 6, 3 (NumPy's np.tile: element i of the output is x[i % len(x)] + 1). */
static void test_tj_symbolic_int_branches_and_shapes_with_one_artifact_each(void **state) {
  (void)state;
  const char *const names[] = {"x", "n"};
  tj_function *f = compile(sym_branchy, &(tj_options){.arg_names = names});
  uopc_tensor x = vec(6);
  const int64_t n[] = {3, 7, 2, 9, 4, 11};
  for (int k = 0; k < 6; k++) {
    uopc_tensor out[1] = {{0}};
    uopc_error err = {0};
    assert_uopc_ok(tj_call(f, (tj_arg[]){tj_tensor(&x), tj_sym_int(n[k])}, 2, out, &err), err);
    for (int64_t i = 0; i < 6; i++) {
      double xi = uopc_tensor_get(&x, i), want = n[k] > 4 ? xi + 1 : 2 * xi;
      if (uopc_tensor_get(&out[0], i) != want)
        fail_msg("n = %lld: element %lld is %g, expected %g", (long long)n[k], (long long)i,
                 uopc_tensor_get(&out[0], i), want);
    }
    uopc_tensor_release(&out[0]);
  }
  assert_counts(f, 2, 4, "x+1 if n > 4 else 2x over n = 3, 7, 2, 9, 4, 11");
  char text[4096];
  explain(f, NULL, text, sizeof text);
  assert_contains(text, "  n = n_carrier.shape[0] in [2, 4]\n");
  assert_contains(text, "  n = n_carrier.shape[0] in [5, 16777216]\n");
  tj_free(f);
  uopc_tensor_release(&x);
  tj_function *t = compile(tiled, &(tj_options){.arg_names = names});
  const int64_t reps[] = {2, 3, 5}, lens[] = {4, 6, 3};
  for (int k = 0; k < 3; k++) {
    uopc_tensor y = vec(lens[k]), out[1] = {{0}};
    uopc_error err = {0};
    assert_uopc_ok(tj_call(t, (tj_arg[]){tj_tensor(&y), tj_sym_int(reps[k])}, 2, out, &err), err);
    assert_int_equal(out[0].shape[0], reps[k] * lens[k]);
    for (int64_t i = 0; i < reps[k] * lens[k]; i++)
      assert_true(uopc_tensor_get(&out[0], i) == uopc_tensor_get(&y, i % lens[k]) + 1);
    uopc_tensor_release(&out[0]), uopc_tensor_release(&y);
  }
  assert_counts(t, 1, 2, "x.repeat(n) + 1 over n = 2, 3, 5");
  tj_free(t);
}

/* Where an extent is specialised on its value, so is a symbolic int: without dynamic shapes
 * (x[:n] * 2 over n = 3, 7, 3: 2 artifacts, the n = 3 one reused) and inside a container (a list
 * of x and n: 2 artifacts for n = 3, 5, 3, whose guards pin the carrier's extent). */
static void test_tj_symbolic_int_is_specialised_where_extents_are(void **state) {
  (void)state;
  tj_function *f = compile(head_scaled, &(tj_options){.arg_names = (const char *const[]){"x", "n"},
                                                      .dynamic = TJ_OFF});
  uopc_tensor x = vec(12);
  const int64_t n[] = {3, 7, 3};
  for (int k = 0; k < 3; k++) head_ok(f, &x, tj_sym_int(n[k]));
  assert_counts(f, 2, 1, "x[:n] * 2 without dynamic shapes, n = 3, 7, 3");
  tj_free(f);
  tj_function *g = compile(head_of_pair, &(tj_options){.arg_names = (const char *const[]){"p"}});
  const int64_t m[] = {3, 5, 3};
  for (int k = 0; k < 3; k++) {
    tj_arg items[2] = {tj_tensor(&x), tj_sym_int(m[k])};
    tj_arg args[1] = {tj_list(items, 2)};
    uopc_tensor out[1] = {{0}};
    uopc_error err = {0};
    assert_uopc_ok(tj_call(g, args, 1, out, &err), err);
    assert_int_equal(out[0].shape[0], m[k]);
    for (int64_t i = 0; i < m[k]; i++) assert_true(uopc_tensor_get(&out[0], i) == 2 * uopc_tensor_get(&x, i));
    uopc_tensor_release(&out[0]);
  }
  assert_counts(g, 2, 1, "p = [x, n] with n = 3, 5, 3");
  char text[4096];
  explain(g, NULL, text, sizeof text);
  assert_contains(text, "p_1_carrier.shape[0] == 3\n");
  tj_free(g);
  uopc_tensor_release(&x);
}

/* A symbolic int is a size: a negative one or one past the largest extent is refused naming it,
 * an int where the signature has a symbolic one is another kind, a call that saves refuses it,
 * past the variant limit the eager fallback gets its value, and a graph break runs with it. */
static void test_tj_symbolic_int_bad_values_and_fallbacks(void **state) {
  (void)state;
  const char *const names[] = {"x", "n"};
  tj_function *f = compile(head_scaled, &(tj_options){.arg_names = names, .max_variants = 1,
                                                      .on_limit = TJ_LIMIT_EAGER});
  uopc_tensor x = vec(12);
  refused(f, (tj_arg[]){tj_tensor(&x), tj_sym_int(-1)}, 2, UOPC_E_BOUNDS,
          "'n' is the symbolic int -1; a symbolic int is a size, in [0, 16777216]");
  head_ok(f, &x, tj_sym_int(5));
  head_ok(f, &x, tj_sym_int(8));   /* warm: the checks below are the warm path's, then the full one's */
  refused(f, (tj_arg[]){tj_tensor(&x), tj_sym_int(INT64_C(1) << 25)}, 2, UOPC_E_BOUNDS,
          "'n' is the symbolic int 33554432");
  refused(f, (tj_arg[]){tj_tensor(&x), tj_int(5)}, 2, UOPC_E_INVALID,
          "argument 1 ('n') is an int; the function takes a symbolic int");
  head_ok(f, &x, tj_sym_int(1));   /* n = 1 is another artifact, past max_variants = 1: eager */
  head_ok(f, &x, tj_sym_int(0));
  tj_counts s = tj_stats(f);
  assert_int_equal(s.artifacts_built, 1);
  assert_int_equal(s.eager_fallbacks, 2);
  assert_int_equal(s.limit_hits, 2);
  tj_free(f);
  f = compile(head_by_data, &(tj_options){.arg_names = names});   /* a graph break: region by region */
  for (int64_t n = 3; n <= 5; n++) {
    uopc_tensor out[1] = {{0}};
    uopc_error err = {0};
    assert_uopc_ok(tj_call(f, (tj_arg[]){tj_tensor(&x), tj_sym_int(n)}, 2, out, &err), err);
    assert_int_equal(out[0].shape[0], n);
    double top = uopc_tensor_get(&x, n - 1);   /* x ascends */
    for (int64_t i = 0; i < n; i++) assert_true(uopc_tensor_get(&out[0], i) == (double)(float)(uopc_tensor_get(&x, i) * top));
    uopc_tensor_release(&out[0]);
  }
  assert_int_equal(tj_stats(f).break_runs, 3);
  tj_free(f);
  tj_function *t = compile(head_scaled, &(tj_options){.arg_names = names, .grad_args = 1u});
  uopc_tensor out[1] = {{0}};
  tj_saved *saved = NULL;
  uopc_error err = {0};
  assert_uopc_code(tj_call_saving(t, (tj_arg[]){tj_tensor(&x), tj_sym_int(3)}, 2, out, &saved, &err),
                   UOPC_E_UNSUPPORTED, err);
  assert_contains(err.message, "argument 1 is a symbolic int; a call that saves takes ints by value");
  assert_null(out[0].storage);
  tj_free(t);
  uopc_tensor_release(&x);
}

/* ---- The chapter's tables (TJ_PRINT=1 prints them; chapter 23.7 quotes them). */

static void test_tj_explain_prints_artifacts_guards_and_rejections(void **state) {
  (void)state;
  tj_function *f = compile(branchy, &(tj_options){.name = "branchy", .arg_names = (const char *const[]){"x"}});
  const int64_t n[] = {3, 7, 2, 9, 4, 11, 1, 0};
  for (int k = 0; k < 8; k++) call_vector_checked(f, branchy, n[k]);
  assert_counts(f, 4, 4, "x+1 if len(x) > 4 else 2x over n = 3, 7, 2, 9, 4, 11, 1, 0");
  char text[8192];
  explain(f, NULL, text, sizeof text);
  show("branchy over n = 3, 7, 2, 9, 4, 11, 1, 0", text);
  assert_contains(text, "artifact 1: tj_branchy_fd0_v0 (built by call 1, compiled), 3 calls\n"
                        "  x is f32\n  x has rank 1\n  x_0 = x.shape[0] in [2, 4]\n  x is contiguous\n");
  uopc_tensor x = vec(6);
  explain(f, (tj_arg[]){tj_tensor(&x)}, text, sizeof text);
  show("branchy: explain a call with n = 6", text);
  assert_contains(text, "tj_branchy_fd0_v0 rejected: guard 'x_0 = x.shape[0] in [2, 4]' failed: dim 'x_0' = 6"
                        " outside [2, 4]");
  assert_contains(text, "would run tj_branchy_fd0_v1 (artifact 2 of 4)");
  uopc_tensor_release(&x);
  tj_free(f);
  f = compile(add_rows, &(tj_options){.name = "add_rows", .arg_names = (const char *const[]){"x", "y"}});
  const int64_t ab[][2] = {{3, 3}, {5, 5}, {7, 1}, {11, 11}, {13, 1}};
  for (int k = 0; k < 5; k++) {
    uopc_tensor a = mat(ab[k][0], ab[k][1]), b = vec(ab[k][1]);
    call_ok(f, add_rows, (tj_arg[]){tj_tensor(&a), tj_tensor(&b)}, NULL, 2, "(a, b) + (b,)");
    uopc_tensor_release(&a), uopc_tensor_release(&b);
  }
  explain(f, NULL, text, sizeof text);
  show("add_rows over (3,3), (5,5), (7,1), (11,11), (13,1)", text);
  assert_contains(text, "  y.shape[0] == x.shape[1]\n");
  assert_contains(text, "  x.shape[1] == 1\n");
  tj_free(f);
  f = compile(affine, &(tj_options){.name = "affine", .max_variants = 1, .arg_names = (const char *const[]){"x"}});
  uopc_tensor out[1] = {{0}};
  uopc_error err = {0};
  assert_uopc_code(limit_second_call(f, out, &err), UOPC_E_LIMIT, err);
  snprintf(text, sizeof text, "%s\n", err.message);
  show("affine, max_variants = 1: x (3, 5), then x^T", text);
  tj_free(f);
  f = compile(affine, &(tj_options){.name = "affine", .arg_names = (const char *const[]){"x"}});
  assert_uopc_ok(limit_second_call(f, out, &err), err);
  uopc_tensor_release(&out[0]);
  explain(f, NULL, text, sizeof text);
  show("affine: x (3, 5), then x^T", text);
  assert_contains(text, "  x_s1 = x.strides[1] in [-1073741824, 1073741824]\n");
  tj_free(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_tj_pointwise_one_artifact_across_sizes, reset),
      cmocka_unit_test_setup(test_tj_fuses_with_a_cost_rule_computing_a_shared_producer_once, reset),
      cmocka_unit_test_setup(test_tj_sum_last_axis_one_artifact_across_sizes, reset),
      cmocka_unit_test_setup(test_tj_mean_first_axis_one_artifact_across_sizes, reset),
      cmocka_unit_test_setup(test_tj_sum_and_mean_of_one_operand_are_one_reduction, reset),
      cmocka_unit_test_setup(test_tj_max_keepdims_reshape_and_numel_one_artifact_across_sizes, reset),
      cmocka_unit_test_setup(test_tj_expand_one_artifact_across_sizes, reset),
      cmocka_unit_test_setup(test_tj_sizes_0_and_1_are_specialised, reset),
      cmocka_unit_test_setup(test_tj_specialize_01_off_keeps_1_symbolic_until_a_broadcast_needs_it, reset),
      cmocka_unit_test_setup(test_tj_equal_sizes_are_never_assumed_equal, reset),
      cmocka_unit_test_setup(test_tj_needed_equality_is_a_guard, reset),
      cmocka_unit_test_setup(test_tj_matmul_contraction_is_a_guard, reset),
      cmocka_unit_test_setup(test_tj_two_outputs, reset),
      cmocka_unit_test_setup(test_tj_transposed_input_is_another_artifact, reset),
      cmocka_unit_test_setup(test_tj_branch_on_size_guards_both_outcomes, reset),
      cmocka_unit_test_setup(test_tj_branch_on_two_sizes_is_a_trace_guard, reset),
      cmocka_unit_test_setup(test_tj_scalar_is_specialised_by_value, reset),
      cmocka_unit_test_setup(test_tj_limit_is_an_error_naming_the_guard, reset),
      cmocka_unit_test_setup(test_tj_limit_runs_eagerly_counted, reset),
      cmocka_unit_test_setup(test_tj_limit_runs_an_unkept_artifact_counted, reset),
      cmocka_unit_test_setup(test_tj_bad_input_is_refused_naming_the_argument, reset),
      cmocka_unit_test_setup(test_tj_data_reads_are_refused_by_line_in_strict_mode, reset),
      cmocka_unit_test_setup(test_tj_graph_breaks_run_region_by_region, reset),
      cmocka_unit_test_setup(test_tj_out_of_memory_fails_cleanly_at_every_allocation, reset),
      cmocka_unit_test_setup(test_tj_static_mode_builds_one_artifact_per_shape, reset),
      cmocka_unit_test_setup(test_tj_strict_native_fails_and_default_interprets, reset),
      cmocka_unit_test_setup(test_tj_many_inputs_get_an_entry_the_lowering_takes, reset),
      cmocka_unit_test_setup(test_tj_sixteen_tensors_and_their_32_dims_fit_one_artifact, reset),
      cmocka_unit_test_setup(test_tj_outputs_reuse_storage_only_once_released, reset),
      cmocka_unit_test_setup(test_tj_dim_equal_to_an_expression_is_read_as_it_and_guarded, reset),
      cmocka_unit_test_setup(test_tj_symbolic_int_is_a_dim_one_artifact_across_values, reset),
      cmocka_unit_test_setup(test_tj_symbolic_int_branches_and_shapes_with_one_artifact_each, reset),
      cmocka_unit_test_setup(test_tj_symbolic_int_is_specialised_where_extents_are, reset),
      cmocka_unit_test_setup(test_tj_symbolic_int_bad_values_and_fallbacks, reset),
      cmocka_unit_test_setup(test_tj_make_graph_prints_the_trace_and_its_guards, reset),
      cmocka_unit_test_setup(test_tj_explain_prints_artifacts_guards_and_rejections, reset),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
