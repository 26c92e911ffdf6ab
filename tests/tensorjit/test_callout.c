/* test_callout.c: tensorjit's call-outs (section 23.7, "Call-outs"): an
 * opaque C function in a traced model, declared with its output metadata.
 * The graph is split around it: the regions before and after are compiled,
 * the function runs between them on the real tensors. Concrete metadata
 * specialises on the call-out's input sizes (one artifact each); a shape
 * function keeps one artifact across sizes (0 and 1 apart, the 0/1 rule).
 * A call-out that returns other metadata than declared is caught after it
 * runs, naming it; an undeclared call is refused. Every value is checked
 * against C loops over the call's own arguments, written apart from the
 * models; every count exactly. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>
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

/* ---- The opaque functions (plain C over uopc tensors). */

static int runs;   /* call-out runs, all functions together: a test reads it right after its calls */

/* out = the running sum of x. */
static int cumsum_fn(const uopc_tensor *const *ins, int n_in, uopc_tensor *outs, int n_out, void *user,
                     uopc_error *err) {
  (void)n_in, (void)n_out, (void)user;
  int rc = uopc_tensor_empty(&outs[0], ins[0]->dtype, ins[0]->rank, ins[0]->shape, err);
  double s = 0;
  for (int64_t i = 0; !rc && i < uopc_tensor_numel(ins[0]); i++) uopc_tensor_set(&outs[0], i, s += uopc_tensor_get(ins[0], i));
  runs++;
  return rc;
}

/* out = x sorted ascending. */
static int sort_fn(const uopc_tensor *const *ins, int n_in, uopc_tensor *outs, int n_out, void *user, uopc_error *err) {
  (void)n_in, (void)n_out, (void)user;
  int64_t n = uopc_tensor_numel(ins[0]);
  int rc = uopc_tensor_empty(&outs[0], ins[0]->dtype, ins[0]->rank, ins[0]->shape, err);
  for (int64_t i = 0; !rc && i < n; i++) {   /* insertion sort */
    double v = uopc_tensor_get(ins[0], i);
    int64_t j = i;
    for (; j > 0 && uopc_tensor_get(&outs[0], j - 1) > v; j--) uopc_tensor_set(&outs[0], j, uopc_tensor_get(&outs[0], j - 1));
    uopc_tensor_set(&outs[0], j, v);
  }
  runs++;
  return rc;
}

/* out[i] = p[i] + q[n - 1 - i]. */
static int rev_add_fn(const uopc_tensor *const *ins, int n_in, uopc_tensor *outs, int n_out, void *user,
                      uopc_error *err) {
  (void)n_in, (void)n_out, (void)user;
  int64_t n = uopc_tensor_numel(ins[0]);
  int rc = uopc_tensor_empty(&outs[0], ins[0]->dtype, ins[0]->rank, ins[0]->shape, err);
  for (int64_t i = 0; !rc && i < n; i++)
    uopc_tensor_set(&outs[0], i, uopc_tensor_get(ins[0], i) + uopc_tensor_get(ins[1], n - 1 - i));
  runs++;
  return rc;
}

/* Declared "same shape as x, f32": from length 5 on it returns one element
 * fewer (*user 0) or an f64 tensor (*user 1); or it fails (*user 2). */
static int liar_fn(const uopc_tensor *const *ins, int n_in, uopc_tensor *outs, int n_out, void *user,
                   uopc_error *err) {
  (void)n_in, (void)n_out;
  int how = *(const int *)user;
  int64_t n = ins[0]->shape[0], lie = n >= 5;
  if (lie && how == 2) return UOPC_FAIL(err, UOPC_E_INVALID, "liar: no answer for %lld elements", (long long)n);
  int64_t m = lie && how == 0 ? n - 1 : n;
  int rc = uopc_tensor_empty(&outs[0], lie && how == 1 ? UOPC_F64 : UOPC_F32, 1, &m, err);
  for (int64_t i = 0; !rc && i < m; i++) uopc_tensor_set(&outs[0], i, uopc_tensor_get(ins[0], i));
  return rc;
}

/* Output k has input k's sizes. */
static int same_shape(tp_ctx *c, const tp_shape *in, int n_in, tp_shape *out, void *user) {
  (void)n_in, (void)user;
  out[0] = in[0];
  return tp_status(c);
}

static const tp_callout cumsum_decl = {.name = "cumsum", .fn = cumsum_fn, .n_in = 1, .n_out = 1, .dtype = {UOPC_F32},
                                       .rank = {1}, .shape_fn = same_shape};
static const tp_callout sort_fn_decl = {.name = "sort", .fn = sort_fn, .n_in = 1, .n_out = 1, .dtype = {UOPC_F32},
                                        .rank = {1}, .shape_fn = same_shape};
static const tp_callout rev_add_decl = {.name = "rev_add", .fn = rev_add_fn, .n_in = 2, .n_out = 1,
                                        .dtype = {UOPC_F32}, .rank = {1}, .shape_fn = same_shape};

/* ---- The models, each with its reference (C loops over the arguments). */

/* out = 3 * cumsum(tanh(2x)) + x: a compiled region before and one after. */
static tp_tensor *split(tp_ctx *c, tp_tensor *x) {
  tp_tensor *y = tp_tanh(c, tp_mul(c, x, tp_scalar(c, 2))), *s[1] = {NULL};
  tp_callout(c, &cumsum_decl, &y, 1, s);
  return tp_add(c, tp_mul(c, s[0], tp_scalar(c, 3)), x);
}
static int split_tj(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {
  (void)user;
  out[0] = split(c, in[0].t);
  return tp_status(c);
}
static int split_tp(tp_ctx *c, tp_tensor *const *in, tp_tensor **out, void *user) {
  (void)user;
  out[0] = split(c, in[0]);
  return tp_status(c);
}
static void split_ref(const uopc_tensor *x, double *want) {
  double s = 0;
  for (int64_t i = 0; i < x->shape[0]; i++) {
    s += tanh(2 * uopc_tensor_get(x, i));
    want[i] = 3 * s + uopc_tensor_get(x, i);
  }
}

/* out = sum(sort(x) * x): the call-out's output feeds a reduction. user:
 * the declaration's kind (1: concrete, the sizes read from x; 0: the shape
 * function). */
static int sorted_dot(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {
  tp_callout d = sort_fn_decl;
  if (*(const int *)user) d.shape_fn = NULL, d.shape[0][0] = tp_size(c, in[0].t, 0).value;
  tp_tensor *s[1] = {NULL};
  tp_callout(c, &d, &in[0].t, 1, s);
  out[0] = tp_sum(c, tp_mul(c, s[0], in[0].t), 0u, 0);
  return tp_status(c);
}
/* out = sort(x)[0] + sum(x): the call-out's output never meets x in one
 * operation, so only the guards of its concrete metadata keep the
 * artifact traced for one length from serving another. */
static int sorted_first(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {
  tp_callout d = sort_fn_decl;
  if (*(const int *)user) d.shape_fn = NULL, d.shape[0][0] = tp_size(c, in[0].t, 0).value;
  tp_tensor *s[1] = {NULL};
  tp_callout(c, &d, &in[0].t, 1, s);
  out[0] = tp_add(c, tp_select(c, s[0], 0, tp_int_const(c, 0)), tp_sum(c, in[0].t, 0u, 0));
  return tp_status(c);
}
static double sorted_first_ref(const uopc_tensor *x) {
  double lo = uopc_tensor_get(x, 0), s = 0;
  for (int64_t i = 0; i < x->shape[0]; i++) lo = fmin(lo, uopc_tensor_get(x, i)), s += uopc_tensor_get(x, i);
  return lo + s;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}
static double sorted_dot_ref(const uopc_tensor *x) {
  int64_t n = x->shape[0];
  double *v = malloc((size_t)(n + 1) * sizeof *v), s = 0;
  assert_non_null(v);
  for (int64_t i = 0; i < n; i++) v[i] = uopc_tensor_get(x, i);
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  for (int64_t i = 0; i < n; i++) s += v[i] * uopc_tensor_get(x, i);
  free(v);
  return s;
}

/* Two call-outs: c1 = cumsum(x * x); c2 = rev_add(c1 + 1, x), x read by the
 * call-out itself (no region computes it); out = c2 - x. */
static int two_callouts(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {
  (void)user;
  tp_tensor *x = in[0].t, *sq = tp_mul(c, x, x), *c1[1] = {NULL}, *c2[1] = {NULL};
  tp_callout(c, &cumsum_decl, &sq, 1, c1);
  tp_tensor *ins[2] = {tp_add(c, c1[0], tp_scalar(c, 1)), x};
  tp_callout(c, &rev_add_decl, ins, 2, c2);
  out[0] = tp_sub(c, c2[0], x);
  return tp_status(c);
}
static void two_callouts_ref(const uopc_tensor *x, double *want) {
  int64_t n = x->shape[0];
  double s = 0, *c1 = malloc((size_t)(n + 1) * sizeof *c1);
  assert_non_null(c1);
  for (int64_t i = 0; i < n; i++) c1[i] = s += uopc_tensor_get(x, i) * uopc_tensor_get(x, i);
  for (int64_t i = 0; i < n; i++) want[i] = c1[i] + 1 + uopc_tensor_get(x, n - 1 - i) - uopc_tensor_get(x, i);
  free(c1);
}

/* out = cumsum(x): the output is the call-out's, returned as it is. */
static int only_callout(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {
  (void)user;
  tp_callout(c, &cumsum_decl, &in[0].t, 1, out);
  return tp_status(c);
}

static int liar_model(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {
  tp_callout d = {.name = "liar", .fn = liar_fn, .user = user, .n_in = 1, .n_out = 1, .dtype = {UOPC_F32},
                  .rank = {1}, .shape_fn = same_shape};
  tp_tensor *s[1] = {NULL};
  tp_callout(c, &d, &in[0].t, 1, s);
  out[0] = tp_mul(c, s[0], tp_scalar(c, 2));
  return tp_status(c);
}

static void not_pure(void *user) { ++*(int *)user; }
static int undeclared(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {
  tp_callback_at(c, not_pure, user, 0, TP_HERE);
  out[0] = tp_neg(c, in[0].t);
  return tp_status(c);
}
static int prints(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {
  (void)user;
  tp_print(c, in[0].t);
  out[0] = tp_neg(c, in[0].t);
  return tp_status(c);
}

/* ---- Helpers. */

static uopc_tensor vec(int64_t n) {   /* element i = (i * 7 % 11) / 8 - 0.5: not sorted */
  uopc_tensor x;
  uopc_error err = {0};
  assert_uopc_ok(uopc_tensor_empty(&x, UOPC_F32, 1, &n, &err), err);
  for (int64_t i = 0; i < n; i++) uopc_tensor_set(&x, i, (double)(i * 7 % 11) / 8 - 0.5);
  return x;
}

static tj_function *compile(tj_model m, void *user, const char *name) {
  tj_function *f = NULL;
  uopc_error err = {0};
  static const char *const x_only[] = {"x"};
  const tj_options o = {.name = name, .arg_names = x_only};
  assert_uopc_ok(tj_compile(&f, m, user, &o, &err), err);
  return f;
}

static void expect_vector(const uopc_tensor *got, const double *want, int64_t n, const char *what) {
  expect_int(got->rank, 1, "%s: rank", what);
  expect_int(got->shape[0], n, "%s: length", what);
  for (int64_t i = 0; i < n; i++)
    expect_close(uopc_tensor_get(got, i), want[i], 1e-4 * fmax(1, fabs(want[i])), "%s: element %lld", what, (long long)i);
}

/* f on x; the result against ref (vector) or scalar_ref (a scalar). */
static void call_checked(tj_function *f, const uopc_tensor *x, void (*ref)(const uopc_tensor *, double *),
                         double (*scalar_ref)(const uopc_tensor *), const char *what) {
  uopc_tensor out[1] = {{0}};
  tj_arg args[1] = {tj_tensor(x)};
  uopc_error err = {0};
  int rc = tj_call(f, args, 1, out, &err);
  if (rc) fail_msg("%s: %s: %s", what, uopc_error_name(rc), err.message);
  if (ref) {
    double *want = malloc((size_t)(x->shape[0] + 1) * sizeof *want);
    assert_non_null(want);
    ref(x, want);
    expect_vector(&out[0], want, x->shape[0], what);
    free(want);
  } else {
    double want = scalar_ref(x);
    expect_int(out[0].rank, 0, "%s: rank", what);
    expect_close(uopc_tensor_get(&out[0], 0), want, 1e-4 * fmax(1, fabs(want)), "%s: the value", what);
  }
  uopc_tensor_release(&out[0]);
}

static void call_n(tj_function *f, int64_t n, void (*ref)(const uopc_tensor *, double *),
                   double (*scalar_ref)(const uopc_tensor *)) {
  uopc_tensor x = vec(n);
  char what[64];
  snprintf(what, sizeof what, "x of length %lld", (long long)n);
  call_checked(f, &x, ref, scalar_ref, what);
  uopc_tensor_release(&x);
}

static void expect_counts(const tj_function *f, int64_t built, int64_t hits, const char *what) {
  tj_counts s = tj_stats(f);
  expect_int(s.artifacts_built, built, "%s: artifacts built", what);
  expect_int(s.artifacts, built, "%s: artifacts kept", what);
  expect_int(s.artifact_hits, hits, "%s: artifact hits", what);
}

static void show(const char *title, const char *text) {
  if (getenv("TJ_PRINT")) print_message("---- %s\n%s", title, text);
}

/* A call that must fail with code, its message holding needle. */
static void call_fails(tj_function *f, int64_t n, int code, const char *needle) {
  uopc_tensor x = vec(n), out[1] = {{0}};
  tj_arg args[1] = {tj_tensor(&x)};
  uopc_error err = {0};
  assert_uopc_code(tj_call(f, args, 1, out, &err), code, err);
  show("the error", err.message);
  assert_contains(err.message, needle);
  expect_null(out[0].storage, "no output on an error");
  uopc_tensor_release(&x);
}

/* ---- Cases. */

/* The shape function keeps one artifact across lengths 2.., its regions
 * compiled once; 1 and 0 are constants (the 0/1 rule): one artifact each.
 * The call-out runs once a call. */
static void test_tj_callout_with_a_shape_function_shares_one_artifact_across_sizes(void **state) {
  (void)state;
  tj_function *f = compile(split_tj, NULL, "split");
  const int64_t ns[] = {2, 3, 5, 9, 17, 64};
  runs = 0;
  for (int k = 0; k < 6; k++) call_n(f, ns[k], split_ref, NULL);
  expect_counts(f, 1, 5, "lengths 2, 3, 5, 9, 17, 64");
  expect_int(runs, 6, "call-out runs");
  call_n(f, 1, split_ref, NULL);
  call_n(f, 0, split_ref, NULL);
  call_n(f, 1, split_ref, NULL);
  call_n(f, 33, split_ref, NULL);
  expect_counts(f, 3, 7, "then 1, 0, 1, 33");
  expect_int(uopc_counter_get("graph programs built"), 6, "programs: a region before and one after, per artifact");
  char text[8192];
  uopc_error err = {0};
  assert_uopc_ok(tj_explain(f, NULL, text, sizeof text, &err), err);
  show("split", text);
  assert_contains(text, "  call-out 'cumsum' (tests/tensorjit/test_callout.c:");
  assert_contains(text, "), after a region: takes f32 (x_0); gives co0_0 f32 (x_0); sizes from its shape"
                        " function, checked after each run\n");
  assert_contains(text, "gives co0_0 f32 (0); sizes from its shape function");
  tj_free(f);
}

/* Concrete metadata: the call-out's input sizes are guarded, so each length
 * is an artifact of its own, and an old length a hit; the same model with a
 * shape function shares one. Its output feeds a reduction. */
static void test_tj_callout_with_concrete_metadata_specialises_per_size(void **state) {
  (void)state;
  const int concrete = 1, by_function = 0;
  tj_function *f = compile(sorted_dot, (void *)&concrete, "sorted_dot");
  const int64_t ns[] = {4, 5, 4, 6, 5, 4};
  const int64_t built[] = {1, 2, 2, 3, 3, 3};
  for (int k = 0; k < 6; k++) {
    call_n(f, ns[k], NULL, sorted_dot_ref);
    expect_int(tj_stats(f).artifacts_built, built[k], "concrete: artifacts after length %lld", (long long)ns[k]);
  }
  expect_counts(f, 3, 3, "concrete over 4, 5, 4, 6, 5, 4");
  char text[8192];
  uopc_error err = {0};
  assert_uopc_ok(tj_explain(f, NULL, text, sizeof text, &err), err);
  show("sorted_dot, concrete", text);
  assert_contains(text, "  x.shape[0] == 4\n");
  assert_contains(text, "  x.shape[0] == 6\n");
  assert_contains(text, "after no region: takes f32 (5); gives co0_0 f32 (5); concrete sizes, its inputs' sizes guarded, checked after each run\n");
  uopc_tensor x7 = vec(7);
  tj_arg args[1] = {tj_tensor(&x7)};
  assert_uopc_ok(tj_explain(f, args, text, sizeof text, &err), err);
  show("explain: x (7)", text);
  assert_contains(text, "rejected: guard 'x.shape[0] == 4' failed:");
  assert_contains(text, "  no artifact serves it: a new one would be traced and built (3 of 8 kept)\n");
  uopc_tensor_release(&x7);
  tj_free(f);
  f = compile(sorted_dot, (void *)&by_function, "sorted_dot_fn");
  for (int k = 0; k < 6; k++) call_n(f, ns[k], NULL, sorted_dot_ref);
  expect_counts(f, 1, 5, "shape function over 4, 5, 4, 6, 5, 4");
  tj_free(f);
  /* the guards alone keep the lengths apart here: no operation meets sort(x) with x */
  const int *kinds[2] = {&concrete, &by_function};
  const int64_t want[2] = {3, 1};
  for (int m = 0; m < 2; m++) {
    f = compile(sorted_first, (void *)kinds[m], "sorted_first");
    for (int k = 0; k < 6; k++) call_n(f, ns[k], NULL, sorted_first_ref);
    expect_counts(f, want[m], 6 - want[m], m ? "sorted_first, shape function" : "sorted_first, concrete");
    tj_free(f);
  }
}

/* Past the limit a call-out still runs between its regions: in an artifact
 * run and not kept (TJ_LIMIT_UNKEPT), or eagerly (TJ_LIMIT_EAGER). */
static void test_tj_callout_past_the_limit_unkept_and_eager(void **state) {
  (void)state;
  static const char *const x_only[] = {"x"};
  const int concrete = 1;
  const tj_on_limit modes[] = {TJ_LIMIT_UNKEPT, TJ_LIMIT_EAGER};
  for (int m = 0; m < 2; m++) {
    tj_function *f = NULL;
    uopc_error err = {0};
    const tj_options o = {.name = "limited", .arg_names = x_only, .max_variants = 1, .on_limit = modes[m]};
    assert_uopc_ok(tj_compile(&f, sorted_dot, (void *)&concrete, &o, &err), err);
    runs = 0;
    const int64_t ns[] = {4, 5, 6, 4};
    for (int k = 0; k < 4; k++) call_n(f, ns[k], NULL, sorted_dot_ref);
    tj_counts c = tj_stats(f);
    expect_int(c.artifacts, 1, "mode %d: kept", m);
    expect_int(c.artifact_hits, 1, "mode %d: hits (4 again)", m);
    expect_int(c.limit_hits, 2, "mode %d: limit hits (5, 6)", m);
    expect_int(m == 0 ? c.unkept_runs : c.eager_fallbacks, 2, "mode %d: runs past the limit", m);
    expect_int(runs, 4, "mode %d: call-out runs", m);
    tj_free(f);
  }
}

/* Two call-outs, the second reading the first's output through a region and
 * the argument itself (no region before it); strided x included. */
static void test_tj_two_callouts_in_one_model(void **state) {
  (void)state;
  tj_function *f = compile(two_callouts, NULL, "two");
  runs = 0;
  const int64_t ns[] = {3, 8, 21};
  for (int k = 0; k < 3; k++) call_n(f, ns[k], two_callouts_ref, NULL);
  expect_counts(f, 1, 2, "lengths 3, 8, 21");
  expect_int(runs, 6, "call-out runs: two a call");
  uopc_tensor wide = vec(14), x = {0};
  uopc_tensor_retain(&x, &wide);
  x.shape[0] = 7, x.strides[0] = 2;   /* every other element */
  call_checked(f, &x, two_callouts_ref, NULL, "strided x of length 7");
  expect_counts(f, 2, 2, "a strided x: another layout class");
  char text[8192];
  uopc_error err = {0};
  assert_uopc_ok(tj_explain(f, NULL, text, sizeof text, &err), err);
  show("two", text);
  assert_contains(text, "  call-out 'cumsum' (");
  assert_contains(text, "), after a region: takes f32 (x_0); gives co0_0 f32 (x_0)");
  assert_contains(text, "  call-out 'rev_add' (");
  assert_contains(text, "), after a region: takes f32 (x_0), f32 (x_0); gives co1_0 f32 (x_0)");
  uopc_tensor_release(&x), uopc_tensor_release(&wide);
  tj_free(f);
}

/* The model's output is the call-out's: returned as it is, no kernel runs. */
static void test_tj_callout_output_returned_directly(void **state) {
  (void)state;
  tj_function *f = compile(only_callout, NULL, "only");
  double want[9];
  for (int64_t n = 2; n <= 9; n++) {
    uopc_tensor x = vec(n), out[1] = {{0}};
    tj_arg args[1] = {tj_tensor(&x)};
    uopc_error err = {0};
    assert_uopc_ok(tj_call(f, args, 1, out, &err), err);
    double s = 0;
    for (int64_t i = 0; i < n; i++) want[i] = s += uopc_tensor_get(&x, i);
    expect_vector(&out[0], want, n, "cumsum(x)");
    uopc_tensor_release(&out[0]), uopc_tensor_release(&x);
  }
  expect_counts(f, 1, 7, "lengths 2..9");
  expect_int(uopc_counter_get("graph programs built"), 0, "programs: none (no region computes anything)");
  char text[4096];
  uopc_error err = {0};
  assert_uopc_ok(tj_explain(f, NULL, text, sizeof text, &err), err);
  show("only", text);
  assert_contains(text, "views only, no kernel");
  assert_contains(text, "), after no region: takes f32 (x_0); gives co0_0 f32 (x_0)");
  tj_free(f);
}

/* A call-out that returns another shape or dtype than declared: caught after
 * it runs, naming it, the output and both; nothing returned; the artifact
 * still serves the calls it is truthful on. Its own error too. */
static void twice_ref(const uopc_tensor *x, double *want) {
  for (int64_t i = 0; i < x->shape[0]; i++) want[i] = 2 * uopc_tensor_get(x, i);
}

static void test_tj_lying_callout_is_caught_after_it_runs(void **state) {
  (void)state;
  const int shorter = 0, wider = 1, failing = 2;
  tj_function *f = compile(liar_model, (void *)&shorter, "lie");
  call_n(f, 3, twice_ref, NULL);
  call_fails(f, 6, UOPC_E_BOUNDS, "tensorjit 'lie': call-out 'liar' (tests/tensorjit/test_callout.c:");
  call_fails(f, 6, UOPC_E_BOUNDS, ") returned output 0 as f32 (5), declared f32 (6)");
  call_n(f, 4, twice_ref, NULL);
  expect_counts(f, 1, 3, "truthful 3, lying 6 twice, truthful 4");
  tj_free(f);
  f = compile(liar_model, (void *)&wider, "lie_dtype");
  call_fails(f, 5, UOPC_E_DTYPE, ") returned output 0 as f64 (5), declared f32 (5)");
  tj_free(f);
  f = compile(liar_model, (void *)&failing, "lie_fails");
  call_fails(f, 7, UOPC_E_INVALID, ") failed: liar: no answer for 7 elements");
  tj_free(f);
}

/* Eager mode (23.4's tp_run_eager) calls it directly: the same values, the
 * same check. */
static int liar_tp(tp_ctx *c, tp_tensor *const *in, tp_tensor **out, void *user) {
  tj_in x = {.t = in[0], .kind = TJ_TENSOR};
  return liar_model(c, &x, out, user);
}

static void test_tp_callout_runs_eagerly_and_is_checked(void **state) {
  (void)state;
  uopc_tensor x = vec(9), out[1] = {{0}};
  const uopc_tensor *in[1] = {&x};
  uopc_error err = {0};
  double want[9];
  runs = 0;
  assert_uopc_ok(tp_run_eager(split_tp, NULL, in, 1, 1, 0, out, NULL, &err), err);
  split_ref(&x, want);
  expect_vector(&out[0], want, 9, "eager split");
  expect_int(runs, 1, "call-out runs");
  uopc_tensor_release(&out[0]);
  const int shorter = 0;
  assert_uopc_code(tp_run_eager(liar_tp, (void *)&shorter, in, 1, 1, 0, out, NULL, &err), UOPC_E_BOUNDS, err);
  assert_contains(err.message, "call-out 'liar' (tests/tensorjit/test_callout.c:");
  assert_contains(err.message, ") returned output 0 as f32 (8), declared f32 (9)");
  uopc_tensor_release(&x);
}

/* A call-out has no backward rule: a gradient through it is refused, naming
 * its line, never a silent zero for the path through it. */
static int cumsum_loss_tp(tp_ctx *c, tp_tensor *const *in, tp_tensor **out, void *user) {
  (void)user;
  tp_tensor *s[1] = {NULL};
  tp_callout(c, &cumsum_decl, in, 1, s);
  out[0] = tp_sum(c, tp_add(c, s[0], in[0]), 0u, 0);
  return tp_status(c);
}

static void test_tp_backward_through_a_callout_is_refused(void **state) {
  (void)state;
  uopc_tensor x = vec(6), out[1] = {{0}}, grads[1] = {{0}};
  const uopc_tensor *in[1] = {&x};
  uopc_error err = {0};
  assert_uopc_code(tp_run_eager(cumsum_loss_tp, NULL, in, 1, 1, 1u, out, grads, &err), UOPC_E_UNSUPPORTED, err);
  assert_contains(err.message, "tp_backward: the loss depends on the output of a call-out (at tests/tensorjit/test_callout.c:");
  expect_null(grads[0].storage, "no gradient");
  uopc_tensor_release(&x);
}

/* Under 23.4's own tracer (tp_call) a call-out is a graph break: the region
 * before runs, then the function, then the rest; strict mode refuses it. */
static void test_tp_call_breaks_the_graph_at_a_callout(void **state) {
  (void)state;
  sym_arena *ar = NULL;
  uopc_error err = {0};
  sym_dim n;
  assert_uopc_ok(sym_arena_new(&ar, &err), err);
  assert_uopc_ok(sym_dim_init(&n, "n", 1, 1024, 1, &err), err);
  tp_arg a = {"x", UOPC_F32, 1, {sym_expr_dim(ar, &n)}};
  tp_compiled *f = NULL;
  assert_uopc_ok(tp_compiled_new(&f, split_tp, NULL, &a, 1, 1, NULL, &err), err);
  for (int64_t len = 4; len <= 6; len++) {
    uopc_tensor x = vec(len), out[1] = {{0}};
    const uopc_tensor *in[1] = {&x};
    double want[6];
    assert_uopc_ok(tp_call(f, in, out, NULL, &err), err);
    split_ref(&x, want);
    expect_vector(&out[0], want, len, "tp_call split");
    uopc_tensor_release(&out[0]), uopc_tensor_release(&x);
  }
  expect_int(uopc_counter_get("graph breaks"), 3, "one break a call");
  expect_int(tp_compiled_variant_count(f), 0, "a trace that broke is no variant");
  tp_compiled_free(f);
  tp_options strict = {.strict = 1};
  assert_uopc_ok(tp_compiled_new(&f, split_tp, NULL, &a, 1, 1, &strict, &err), err);
  uopc_tensor x = vec(4), out[1] = {{0}};
  const uopc_tensor *in[1] = {&x};
  assert_uopc_code(tp_call(f, in, out, NULL, &err), UOPC_E_UNSUPPORTED, err);
  assert_contains(err.message, "call-out 'cumsum' splits the trace, a graph break, and strict mode forbids one");
  uopc_tensor_release(&x);
  tp_compiled_free(f);
  sym_arena_free(ar);
}

/* What the tracer was not told about stays refused: a callback not
 * declared pure, a print. Nothing is built, the callback never runs. */
static void test_tj_undeclared_calls_are_refused(void **state) {
  (void)state;
  int called = 0;
  tj_function *f = compile(undeclared, &called, "undeclared");
  call_fails(f, 5, UOPC_E_UNSUPPORTED, "tp_callback of a callback not declared pure would run once");
  expect_int(called, 0, "the callback's runs");
  expect_counts(f, 0, 0, "an undeclared call");
  tj_free(f);
  f = compile(prints, NULL, "prints");
  call_fails(f, 5, UOPC_E_UNSUPPORTED, "tp_print under the tracer would print once");
  tj_free(f);
}

/* Declarations out of range, and more call-outs than a trace holds. */
static int bad_decl(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {
  tp_callout d = cumsum_decl;
  int which = *(const int *)user;
  if (which == 0) d.n_out = 0;
  if (which == 1) d.rank[0] = UOPC_MAX_RANK + 1;
  tp_tensor *s[1] = {NULL}, *x = in[0].t;
  for (int k = 0; k < (which == 2 ? TP_CALLOUTS_MAX + 1 : 1); k++) tp_callout(c, &d, &x, 1, s), x = s[0];
  out[0] = s[0];
  return tp_status(c);
}

static void test_tj_bad_callout_declarations_are_refused(void **state) {
  (void)state;
  const int no_outputs = 0, rank = 1, too_many = 2;
  tj_function *f = compile(bad_decl, (void *)&no_outputs, "bad0");
  call_fails(f, 5, UOPC_E_INVALID, "call-out 'cumsum': n_in = 1 and n_out = 0 must be in [1, 4]");
  tj_free(f);
  f = compile(bad_decl, (void *)&rank, "bad1");
  call_fails(f, 5, UOPC_E_INVALID, "call-out 'cumsum': output 0's dtype 0 or rank 9 (at most 8)");
  tj_free(f);
  f = compile(bad_decl, (void *)&too_many, "bad2");
  call_fails(f, 5, UOPC_E_LIMIT, "call-out 'cumsum': a trace holds at most 4 call-outs (TP_CALLOUTS_MAX)");
  tj_free(f);
}

/* Capture only: tj_make_graph prints the graph, the call-out's outputs its
 * inputs, and where it is split; nothing runs. */
static void test_tj_make_graph_shows_the_callout(void **state) {
  (void)state;
  uopc_tensor x = vec(5);
  tj_arg args[1] = {tj_tensor(&x)};
  tj_graph *g = NULL;
  uopc_error err = {0};
  runs = 0;
  assert_uopc_ok(tj_make_graph(&g, split_tj, NULL, args, 1, TJ_SYMBOLIC, &err), err);
  show("tj_make_graph(split)", tj_graph_text(g));
  assert_contains(tj_graph_text(g), "co0_0");
  assert_contains(tj_graph_text(g), "  call-out 'cumsum' (tests/tensorjit/test_callout.c:");
  assert_contains(tj_graph_text(g), "), after a region: takes f32 (a0_0); gives co0_0 f32 (a0_0); sizes from its shape"
                                    " function, checked after each run\n");
  expect_int(runs, 0, "call-out runs");
  tj_graph_free(g);
  uopc_tensor_release(&x);
}

/* ---- Out of memory. */

#ifndef __SANITIZE_ADDRESS__   /* AddressSanitizer's allocator is not the one that fails when asked */
/* The k-th malloc (or calloc) of a first call of the two-call-out model
 * failing, for every k until the call needs fewer: each fails with an
 * error and writes no output, and the function serves the next call. */
static void sweep(int *next) {
  for (int k = 1; k < 4000; k++) {
    tj_function *f = compile(two_callouts, NULL, "two");
    uopc_tensor x = vec(6), out[1] = {{0}};
    uopc_error err = {0};
    tj_arg args[1] = {tj_tensor(&x)};
    *next = k;
    int rc = tj_call(f, args, 1, out, &err);
    int ran_out = *next == 0;   /* the k-th allocation was asked for */
    *next = 0;
    if (rc && !ran_out) fail_msg("k = %d: %s with no allocation failing: %s", k, uopc_error_name(rc), err.message);
    if (rc) expect_null(out[0].storage, "k = %d: no output on an error", k);
    uopc_tensor_release(&out[0]);
    call_checked(f, &x, two_callouts_ref, NULL, "the call after");
    uopc_tensor_release(&x);
    tj_free(f);
    if (!rc && !ran_out) return;   /* past the last allocation */
  }
  fail_msg("a first call makes more than 4000 allocations");
}
#endif

static void test_tj_callout_out_of_memory_fails_cleanly_at_every_allocation(void **state) {
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
      cmocka_unit_test_setup(test_tj_callout_with_a_shape_function_shares_one_artifact_across_sizes, reset),
      cmocka_unit_test_setup(test_tj_callout_with_concrete_metadata_specialises_per_size, reset),
      cmocka_unit_test_setup(test_tj_callout_past_the_limit_unkept_and_eager, reset),
      cmocka_unit_test_setup(test_tj_two_callouts_in_one_model, reset),
      cmocka_unit_test_setup(test_tj_callout_output_returned_directly, reset),
      cmocka_unit_test_setup(test_tj_lying_callout_is_caught_after_it_runs, reset),
      cmocka_unit_test_setup(test_tp_callout_runs_eagerly_and_is_checked, reset),
      cmocka_unit_test_setup(test_tp_call_breaks_the_graph_at_a_callout, reset),
      cmocka_unit_test_setup(test_tp_backward_through_a_callout_is_refused, reset),
      cmocka_unit_test_setup(test_tj_undeclared_calls_are_refused, reset),
      cmocka_unit_test_setup(test_tj_bad_callout_declarations_are_refused, reset),
      cmocka_unit_test_setup(test_tj_make_graph_shows_the_callout, reset),
      cmocka_unit_test_setup(test_tj_callout_out_of_memory_fails_cleanly_at_every_allocation, reset),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
