/* test_sizes.c: lab 23.7's tj_sizes.c. tj_extent_of is called on a real
 * group and call record (tj_fixture.h), tj_sizes_unify and tj_sizes_narrow
 * on size classes made here, each result compared field by field; then each
 * function's rule through tj_call, with the exact artifacts built and every
 * output element against the model computed here in plain C. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>
#include "tj_fixture.h"

static int setup(void **state) { return testutil_fresh_cache(state); }
static int teardown(void **state) { return testutil_remove_cache(state); }

static const char *const XY[] = {"x", "y"};

/* ---- tj_extent_of, directly. */

static void test_tj_extent_of_gives_each_axis_a_dim_bounded_2_to_max_extent(void **state) {
  (void)state;
  uopc_tensor x = tjf_mat(3, 5);
  tjf t;
  tjf_init(&t, &(tj_options){.arg_names = XY}, (tj_arg[]){tj_tensor(&x)}, 1);
  vcache_extent e0 = tjf_extent(&t, 0, 0), e1 = tjf_extent(&t, 0, 1);
  tjf_expect_dim(&t, e0, 0, "x_0", 2, TJF_MAX_EXTENT, "x of shape (3, 5), axis 0");
  tjf_expect_dim(&t, e1, 1, "x_1", 2, TJF_MAX_EXTENT, "x of shape (3, 5), axis 1");
  expect_int(t.spec.n_dims, 2, "x of shape (3, 5): dims made");
  expect_int(t.dim_of_root[tj_site(tjf_at(0, 0))], 0, "x of shape (3, 5): dim_of_root of axis 0's class");
  expect_int(t.dim_of_root[tj_site(tjf_at(0, 1))], 1, "x of shape (3, 5): dim_of_root of axis 1's class");
  tjf_fini(&t);
  uopc_tensor_release(&x);
}

static void test_tj_extent_of_makes_sizes_0_and_1_constants_under_specialize_01(void **state) {
  (void)state;
  uopc_tensor x = tjf_tensor(3, (int64_t[]){1, 0, 7});
  tjf t;
  tjf_init(&t, &(tj_options){.arg_names = XY}, (tj_arg[]){tj_tensor(&x)}, 1);
  tjf_expect_constant(tjf_extent(&t, 0, 0), 1, "x of shape (1, 0, 7), axis 0 (size 1)");
  tjf_expect_constant(tjf_extent(&t, 0, 1), 0, "x of shape (1, 0, 7), axis 1 (size 0)");
  tjf_expect_dim(&t, tjf_extent(&t, 0, 2), 0, "x_2", 2, TJF_MAX_EXTENT, "x of shape (1, 0, 7), axis 2 (size 7)");
  expect_int(t.spec.n_dims, 1, "x of shape (1, 0, 7): dims made");
  tjf_fini(&t);
  uopc_tensor_release(&x);
}

/* Duck sizing would give x's two axes of size 3 one dim, and y's 3 the same. */
static void test_tj_extent_of_never_shares_a_dim_because_sizes_are_equal(void **state) {
  (void)state;
  uopc_tensor x = tjf_mat(3, 3), y = tjf_vec(3);
  tjf t;
  tjf_init(&t, &(tj_options){.arg_names = XY}, (tj_arg[]){tj_tensor(&x), tj_tensor(&y)}, 2);
  tjf_expect_dim(&t, tjf_extent(&t, 0, 0), 0, "x_0", 2, TJF_MAX_EXTENT, "x (3, 3) and y (3,): x's axis 0");
  tjf_expect_dim(&t, tjf_extent(&t, 0, 1), 1, "x_1", 2, TJF_MAX_EXTENT, "x (3, 3) and y (3,): x's axis 1");
  tjf_expect_dim(&t, tjf_extent(&t, 1, 0), 2, "y_0", 2, TJF_MAX_EXTENT, "x (3, 3) and y (3,): y's axis 0");
  expect_int(t.spec.n_dims, 3, "x (3, 3) and y (3,), no class joined: dims made");
  tjf_fini(&t);
  uopc_tensor_release(&x), uopc_tensor_release(&y);
}

/* x's axis 1 and y's axis 0 one class (the trace needed them equal), bounded
 * [3, 100]; x's axis 0 a class whose bounds are wider than [2, max_extent]. */
static void test_tj_extent_of_gives_a_joined_class_one_dim_within_its_bounds(void **state) {
  (void)state;
  uopc_tensor x = tjf_mat(4, 6), y = tjf_vec(6);
  tjf t;
  tjf_init(&t, &(tj_options){.arg_names = XY}, (tj_arg[]){tj_tensor(&x), tj_tensor(&y)}, 2);
  int x0 = tj_site(tjf_at(0, 0)), x1 = tj_site(tjf_at(0, 1)), y0 = tj_site(tjf_at(1, 0));
  t.s.parent[y0] = x1, t.s.lo[x1] = 3, t.s.hi[x1] = 100;
  t.s.lo[x0] = -5, t.s.hi[x0] = INT64_C(1) << 30;
  tjf_expect_dim(&t, tjf_extent(&t, 0, 0), 0, "x_0", 2, TJF_MAX_EXTENT, "x's axis 0, its class [-5, 2^30]");
  tjf_expect_dim(&t, tjf_extent(&t, 0, 1), 1, "x_1", 3, 100, "x's axis 1, its class [3, 100] with y's axis 0");
  tjf_expect_dim(&t, tjf_extent(&t, 1, 0), 1, "x_1", 3, 100, "y's axis 0, in x's axis 1's class");
  expect_int(t.spec.n_dims, 2, "x (4, 6) and y (6,), y's axis 0 joined to x's axis 1: dims made");
  tjf_fini(&t);
  uopc_tensor_release(&x), uopc_tensor_release(&y);
}

static void test_tj_extent_of_keeps_a_constant_when_static_pinned_or_a_member(void **state) {
  (void)state;
  uopc_tensor x = tjf_mat(3, 5);
  tjf t;
  tjf_init(&t, &(tj_options){.dynamic = TJ_OFF}, (tj_arg[]){tj_tensor(&x)}, 1);
  tjf_expect_constant(tjf_extent(&t, 0, 0), 3, "dynamic off: x (3, 5), axis 0");
  tjf_expect_constant(tjf_extent(&t, 0, 1), 5, "dynamic off: x (3, 5), axis 1");
  tjf_fini(&t);
  tjf_init(&t, NULL, (tj_arg[]){tj_tensor(&x)}, 1);
  t.s.parent[tj_site(tjf_at(0, 0))] = tj_site(tjf_at(0, 1));   /* axis 0 in axis 1's class, which is pinned */
  t.s.pinned[tj_site(tjf_at(0, 1))] = 1;
  tjf_expect_constant(tjf_extent(&t, 0, 0), 3, "x (3, 5), axis 0's class pinned (at its root, axis 1)");
  tjf_expect_constant(tjf_extent(&t, 0, 1), 5, "x (3, 5), axis 1's class pinned");
  tjf_fini(&t);
  tj_arg member[1] = {tj_tensor(&x)};
  tjf_init(&t, NULL, (tj_arg[]){tj_list(member, 1)}, 1);
  tjf_expect_constant(tjf_extent(&t, 0, 0), 3, "x (3, 5) a list's member, axis 0");
  tjf_expect_constant(tjf_extent(&t, 0, 1), 5, "x (3, 5) a list's member, axis 1");
  expect_int(t.spec.n_dims, 0, "a list's member: dims made");
  tjf_fini(&t);
  uopc_tensor_release(&x);
}

/* The policy's max_extent lowered to 8 on this group: 8 is allowed, 9 is not. */
static void test_tj_extent_of_refuses_a_size_past_max_extent_naming_the_axis(void **state) {
  (void)state;
  uopc_tensor x = tjf_mat(8, 9);
  tjf t;
  tjf_init(&t, &(tj_options){.arg_names = XY}, (tj_arg[]){tj_tensor(&x)}, 1);
  t.g->cache.opts.policy.max_extent = 8;
  tjf_expect_dim(&t, tjf_extent(&t, 0, 0), 0, "x_0", 2, 8, "max_extent 8: x (8, 9), axis 0");
  vcache_extent e = {-2, -2};
  int rc = tj_extent_of(t.g, &t.s, &t.call, tjf_at(0, 1), t.dim_of_root, &t.spec, &e, &t.err);
  tjf_expect_code(rc, UOPC_E_BOUNDS, t.err, "max_extent 8: x (8, 9), axis 1");
  assert_names(t.err.message, "x", "the argument");
  assert_names(t.err.message, "1", "the axis");
  assert_names(t.err.message, "9", "the size");
  assert_names(t.err.message, "8", "the limit");
  expect_int(t.spec.n_dims, 1, "max_extent 8: dims made after x's axis 1 was refused");
  tjf_fini(&t);
  uopc_tensor_release(&x);
}

/* ---- tj_extent_of through tj_call. */

static int affine(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* 2x + 1 */
  (void)user;
  out[0] = tp_add(c, tp_mul(c, tp_scalar(c, 2), in[0].t), tp_scalar(c, 1));
  return tp_status(c);
}

/* f on x equals 2x + 1, computed here. */
static void call_affine(tj_function *f, const uopc_tensor *x, const char *what) {
  uopc_tensor out = {0};
  uopc_error err = {0};
  float want[64];
  int64_t n = uopc_tensor_numel(x);
  assert_true(n <= 64);
  for (int64_t i = 0; i < n; i++) want[i] = 2 * (float)uopc_tensor_get(x, i) + 1;
  int rc = tj_call(f, (tj_arg[]){tj_tensor(x)}, 1, &out, &err);
  if (rc) fail_msg("%s: tj_call: expected UOPC_OK, got %s: %s", what, uopc_error_name(rc), err.message);
  tjf_expect_values(&out, want, n, what);
  uopc_tensor_release(&out);
}

static void test_tj_call_affine_over_sizes_0_and_1_builds_three_artifacts(void **state) {
  (void)state;
  tj_function *f = tjf_compile(affine, &(tj_options){.arg_names = XY});
  const int64_t n[] = {3, 1, 0, 7, 1, 0, 11};
  for (int k = 0; k < 7; k++) {
    uopc_tensor x = tjf_vec(n[k]);
    char what[128];
    snprintf(what, sizeof what, "2x+1 on n = %lld (call %d)", (long long)n[k], k + 1);
    call_affine(f, &x, what);
    uopc_tensor_release(&x);
  }
  tjf_expect_counts(f, 3, 4, "2x+1 over n = 3, 1, 0, 7, 1, 0, 11");
  char text[4096];
  tjf_explain(f, NULL, text, sizeof text);
  assert_contains(text, "x_0 = x.shape[0] in [2, 16777216]");
  assert_contains(text, "x.shape[0] == 1");
  assert_contains(text, "x.shape[0] == 0");
  tj_free(f);
}

static void test_tj_call_square_matrix_artifact_serves_a_rectangle(void **state) {
  (void)state;
  tj_function *f = tjf_compile(affine, NULL);
  uopc_tensor a = tjf_mat(3, 3), b = tjf_mat(3, 5);
  call_affine(f, &a, "2x+1 on (3, 3)");
  call_affine(f, &b, "2x+1 on (3, 5) after (3, 3)");
  tjf_expect_counts(f, 1, 1, "2x+1 over (3, 3), (3, 5)");
  uopc_tensor_release(&a), uopc_tensor_release(&b);
  tj_free(f);
}

/* ---- tj_sizes_unify, directly. */

static void test_tj_sizes_unify_joins_two_classes_within_both_bounds(void **state) {
  (void)state;
  tj_sizes s;
  uopc_error err = {0};
  tjf_sizes_fresh(&s);
  s.lo[2] = 3, s.hi[2] = 50, s.lo[9] = 5, s.hi[9] = 100, s.lo[17] = 0, s.hi[17] = 40;
  assert_uopc_ok(tj_sizes_unify(&s, 2, 9, &err), err);
  int r = tj_sizes_root(&s, 2);
  expect_int(tj_sizes_root(&s, 9), r, "after unify(2, 9): site 9's root (site 2's is %d)", r);
  expect_int(s.lo[r], 5, "after unify(2, 9) of [3, 50] and [5, 100]: the class's lower bound");
  expect_int(s.hi[r], 50, "after unify(2, 9) of [3, 50] and [5, 100]: the class's upper bound");
  assert_uopc_ok(tj_sizes_unify(&s, 9, 17, &err), err);   /* through a site that is no root now */
  r = tj_sizes_root(&s, 2);
  expect_int(tj_sizes_root(&s, 17), r, "after unify(9, 17): site 17's root (site 2's is %d)", r);
  expect_int(tj_sizes_root(&s, 9), r, "after unify(9, 17): site 9's root (site 2's is %d)", r);
  expect_int(s.lo[r], 5, "after unify(9, 17) of [5, 50] and [0, 40]: the class's lower bound");
  expect_int(s.hi[r], 40, "after unify(9, 17) of [5, 50] and [0, 40]: the class's upper bound");
  expect_truth(s.pinned[r], 0, "after joining three unpinned sites: the class pinned");
  expect_truth(tj_sizes_root(&s, 3) == r, 0, "after unify(2, 9), unify(9, 17): site 3 in their class");
  assert_uopc_ok(tj_sizes_unify(&s, 6, 0, &err), err);   /* site 0 (the first input's axis 0) is a site, not "none" */
  expect_int(tj_sizes_root(&s, 6), tj_sizes_root(&s, 0), "after unify(6, 0): site 6's root (site 0's is %d)",
             tj_sizes_root(&s, 0));
  expect_truth(s.pinned[tj_sizes_root(&s, 6)], 0, "after unify(6, 0): the class of sites 6 and 0 pinned");
}

static void test_tj_sizes_unify_keeps_a_pinned_class_pinned_when_joined(void **state) {
  (void)state;
  for (int which = 0; which < 2; which++) {   /* the pinned one first, then second */
    tj_sizes s;
    uopc_error err = {0};
    tjf_sizes_fresh(&s);
    s.pinned[which ? 9 : 2] = 1;
    assert_uopc_ok(tj_sizes_unify(&s, 2, 9, &err), err);
    expect_truth(s.pinned[tj_sizes_root(&s, 2)], 1, "unify(2, 9) with site %d pinned: the joined class pinned",
                 which ? 9 : 2);
    expect_int(tj_sizes_root(&s, 9), tj_sizes_root(&s, 2), "unify(2, 9) with site %d pinned: site 9's root",
               which ? 9 : 2);
  }
}

static void test_tj_sizes_unify_with_no_second_site_pins_the_first_class(void **state) {
  (void)state;
  tj_sizes s;
  uopc_error err = {0};
  tjf_sizes_fresh(&s);
  assert_uopc_ok(tj_sizes_unify(&s, 4, 12, &err), err);
  assert_uopc_ok(tj_sizes_unify(&s, 12, -1, &err), err);
  expect_truth(s.pinned[tj_sizes_root(&s, 4)], 1, "unify(4, 12) then unify(12, -1): the class of 4 and 12 pinned");
  expect_truth(s.pinned[tj_sizes_root(&s, 5)], 0, "unify(4, 12) then unify(12, -1): site 5's class pinned");
  expect_int(tj_sizes_root(&s, 12), tj_sizes_root(&s, 4), "unify(12, -1) keeps the class: site 12's root");
}

static void test_tj_sizes_unify_rejects_a_site_outside_the_table(void **state) {
  (void)state;
  const int bad[][2] = {{-1, 3}, {TJ_SITES, 3}, {3, TJ_SITES}};
  for (int k = 0; k < 3; k++) {
    tj_sizes s, before;
    uopc_error err = {0};
    tjf_sizes_fresh(&s);
    before = s;
    tjf_expect_code(tj_sizes_unify(&s, bad[k][0], bad[k][1], &err), UOPC_E_INVALID, err, "unify(%d, %d) with TJ_SITES = %d",
                    bad[k][0], bad[k][1], TJ_SITES);
    expect_int(memcmp(&s, &before, sizeof s) != 0, 0, "unify(%d, %d) refused: the classes changed", bad[k][0], bad[k][1]);
  }
}

/* ---- tj_sizes_unify through tj_call. */

static int add_rows(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* (a, b) + (b,) */
  (void)user;
  out[0] = tp_add(c, in[0].t, in[1].t);
  return tp_status(c);
}

static void test_tj_call_needed_equality_is_one_class_and_a_guard(void **state) {
  (void)state;
  tj_function *f = tjf_compile(add_rows, &(tj_options){.arg_names = XY});
  const int64_t ab[][2] = {{3, 3}, {5, 5}, {7, 1}, {11, 11}, {13, 1}};
  for (int k = 0; k < 5; k++) {
    uopc_tensor x = tjf_mat(ab[k][0], ab[k][1]), y = tjf_vec(ab[k][1]), out = {0};
    uopc_error err = {0};
    char what[128];
    float want[121];
    for (int64_t i = 0; i < ab[k][0] * ab[k][1]; i++)
      want[i] = (float)uopc_tensor_get(&x, i) + (float)uopc_tensor_get(&y, i % ab[k][1]);
    snprintf(what, sizeof what, "(a, b) + (b,) on (%lld, %lld)", (long long)ab[k][0], (long long)ab[k][1]);
    int rc = tj_call(f, (tj_arg[]){tj_tensor(&x), tj_tensor(&y)}, 2, &out, &err);
    if (rc) fail_msg("%s: tj_call: expected UOPC_OK, got %s: %s", what, uopc_error_name(rc), err.message);
    tjf_expect_values(&out, want, ab[k][0] * ab[k][1], what);
    uopc_tensor_release(&out), uopc_tensor_release(&x), uopc_tensor_release(&y);
  }
  tjf_expect_counts(f, 2, 3, "(a, b) + (b,) over (3,3) (5,5) (7,1) (11,11) (13,1)");
  char text[4096];
  tjf_explain(f, NULL, text, sizeof text);
  assert_contains(text, "y.shape[0] == x.shape[1]");
  tj_free(f);
}

/* ---- tj_sizes_narrow, directly. */

/* c*d + k op 0 found truth, on site 3 whose class starts [lo, hi]: the class
 * ends [want_lo, want_hi], and *changed (0 before) is want_changed. */
static void narrow_case(int64_t c, int64_t k, tp_cmp op, int truth, int64_t lo, int64_t hi, int64_t want_lo,
                        int64_t want_hi, int want_changed) {
  tj_sizes s;
  uopc_error err = {0};
  int changed = 0;
  tjf_sizes_fresh(&s);
  s.lo[3] = lo, s.hi[3] = hi;
  int rc = tj_sizes_narrow(&s, 3, c, k, op, truth, &changed, &err);
  if (rc) fail_msg("%lld*d + %lld %s 0 is %s: expected UOPC_OK, got %s: %s", (long long)c, (long long)k,
                   tp_cmp_text(op), truth ? "true" : "false", uopc_error_name(rc), err.message);
  const char *t = truth ? "true" : "false";
  expect_int(s.lo[3], want_lo, "%lld*d + %lld %s 0 is %s, d in [%lld, %lld]: d's lower bound", (long long)c,
             (long long)k, tp_cmp_text(op), t, (long long)lo, (long long)hi);
  expect_int(s.hi[3], want_hi, "%lld*d + %lld %s 0 is %s, d in [%lld, %lld]: d's upper bound", (long long)c,
             (long long)k, tp_cmp_text(op), t, (long long)lo, (long long)hi);
  expect_int(changed, want_changed, "%lld*d + %lld %s 0 is %s, d in [%lld, %lld]: *changed", (long long)c,
             (long long)k, tp_cmp_text(op), t, (long long)lo, (long long)hi);
}

#define M TJF_MAX_EXTENT

static void test_tj_sizes_narrow_bounds_each_true_comparison(void **state) {
  (void)state;
  narrow_case(1, -4, TP_GT, 1, 0, M, 5, M, 1);   /* d > 4: d >= 5 */
  narrow_case(1, -4, TP_GE, 1, 0, M, 4, M, 1);
  narrow_case(1, -4, TP_LT, 1, 0, M, 0, 3, 1);
  narrow_case(1, -4, TP_LE, 1, 0, M, 0, 4, 1);
  narrow_case(1, -4, TP_EQ, 1, 0, M, 4, 4, 1);
  narrow_case(1, -4, TP_NE, 1, 0, M, 0, M, 0);   /* a hole is no bound */
}

static void test_tj_sizes_narrow_bounds_the_negation_of_a_false_comparison(void **state) {
  (void)state;
  narrow_case(1, -4, TP_GT, 0, 0, M, 0, 4, 1);   /* not d > 4: d <= 4 */
  narrow_case(1, -4, TP_GE, 0, 0, M, 0, 3, 1);
  narrow_case(1, -4, TP_LT, 0, 0, M, 4, M, 1);
  narrow_case(1, -4, TP_LE, 0, 0, M, 5, M, 1);
  narrow_case(1, -4, TP_EQ, 0, 0, M, 0, M, 0);   /* d != 4 */
  narrow_case(1, -4, TP_NE, 0, 0, M, 4, 4, 1);   /* d == 4 */
}

static void test_tj_sizes_narrow_rounds_inward_for_either_sign_of_c(void **state) {
  (void)state;
  narrow_case(2, -7, TP_GE, 1, 0, M, 4, M, 1);    /* 2d >= 7: d >= 4, not 3 */
  narrow_case(2, -7, TP_LE, 1, 0, M, 0, 3, 1);    /* 2d <= 7: d <= 3 */
  narrow_case(2, -7, TP_GT, 1, 0, M, 4, M, 1);    /* 2d > 7 */
  narrow_case(2, -8, TP_GT, 1, 0, M, 5, M, 1);    /* 2d > 8 */
  narrow_case(-1, 5, TP_GT, 1, 0, M, 0, 4, 1);    /* 5 - d > 0: d <= 4 */
  narrow_case(-3, 10, TP_GE, 1, 0, M, 0, 3, 1);   /* 10 >= 3d: d <= 3 */
  narrow_case(-3, 10, TP_LT, 1, 0, M, 4, M, 1);   /* 10 < 3d: d >= 4 */
  narrow_case(-3, -10, TP_LT, 1, -M, M, -3, M, 1);   /* -3d < 10: d >= -3 (a negative quotient) */
}

static void test_tj_sizes_narrow_says_changed_only_when_a_bound_moves(void **state) {
  (void)state;
  narrow_case(1, -4, TP_GT, 1, 5, 10, 5, 10, 0);    /* d >= 5 already */
  narrow_case(1, -12, TP_LT, 1, 5, 10, 5, 10, 0);   /* d <= 11: wider than 10 */
  narrow_case(1, -8, TP_LE, 1, 5, 10, 5, 8, 1);
  narrow_case(1, -2, TP_GE, 1, 5, 10, 5, 10, 0);
  /* a site joined to another narrows the class, at its root */
  tj_sizes s;
  uopc_error err = {0};
  int changed = 0;
  tjf_sizes_fresh(&s);
  s.parent[3] = 11, s.lo[11] = 0, s.hi[11] = M;
  assert_uopc_ok(tj_sizes_narrow(&s, 3, 1, -4, TP_GT, 1, &changed, &err), err);
  expect_int(s.lo[11], 5, "d > 4 on site 3 of site 11's class: the class's (site 11's) lower bound");
  expect_int(changed, 1, "d > 4 on site 3 of site 11's class: *changed");
}

static void test_tj_sizes_narrow_rejects_a_bad_site_or_coefficient_0(void **state) {
  (void)state;
  const int sites[] = {-1, TJ_SITES, 3};
  const int64_t coef[] = {1, 1, 0};
  for (int k = 0; k < 3; k++) {
    tj_sizes s, before;
    uopc_error err = {0};
    int changed = 0;
    tjf_sizes_fresh(&s);
    before = s;
    tjf_expect_code(tj_sizes_narrow(&s, sites[k], coef[k], -4, TP_GT, 1, &changed, &err), UOPC_E_INVALID, err,
                    "narrow(site %d, c = %lld) with TJ_SITES = %d", sites[k], (long long)coef[k], TJ_SITES);
    expect_int(memcmp(&s, &before, sizeof s) != 0 || changed, 0, "narrow(site %d, c = %lld) refused: anything changed",
               sites[k], (long long)coef[k]);
  }
}

/* ---- tj_sizes_narrow through tj_call. */

static int branchy(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* x+1 if len(x) > 4 else 2x */
  (void)user;
  if (tp_gt(c, tp_size(c, in[0].t, 0), tp_int_const(c, 4))) out[0] = tp_add(c, in[0].t, tp_scalar(c, 1));
  else out[0] = tp_mul(c, in[0].t, tp_scalar(c, 2));
  return tp_status(c);
}

static void test_tj_call_branch_on_a_size_is_two_bounded_artifacts(void **state) {
  (void)state;
  tj_function *f = tjf_compile(branchy, &(tj_options){.arg_names = XY});
  const int64_t n[] = {3, 7, 2, 9, 4, 11, 5};
  for (int k = 0; k < 7; k++) {
    uopc_tensor x = tjf_vec(n[k]), out = {0};
    uopc_error err = {0};
    float want[11];
    char what[128];
    for (int64_t i = 0; i < n[k]; i++) want[i] = n[k] > 4 ? (float)uopc_tensor_get(&x, i) + 1 : 2 * (float)uopc_tensor_get(&x, i);
    snprintf(what, sizeof what, "x+1 if len(x) > 4 else 2x, n = %lld", (long long)n[k]);
    int rc = tj_call(f, (tj_arg[]){tj_tensor(&x)}, 1, &out, &err);
    if (rc) fail_msg("%s: tj_call: expected UOPC_OK, got %s: %s", what, uopc_error_name(rc), err.message);
    tjf_expect_values(&out, want, n[k], what);
    uopc_tensor_release(&out), uopc_tensor_release(&x);
  }
  tjf_expect_counts(f, 2, 5, "x+1 if len(x) > 4 else 2x over n = 3, 7, 2, 9, 4, 11, 5");
  char text[4096];
  tjf_explain(f, NULL, text, sizeof text);
  assert_contains(text, "x_0 = x.shape[0] in [2, 4]");
  assert_contains(text, "x_0 = x.shape[0] in [5, 16777216]");
  tj_free(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_tj_extent_of_gives_each_axis_a_dim_bounded_2_to_max_extent),
    cmocka_unit_test(test_tj_extent_of_makes_sizes_0_and_1_constants_under_specialize_01),
    cmocka_unit_test(test_tj_extent_of_never_shares_a_dim_because_sizes_are_equal),
    cmocka_unit_test(test_tj_extent_of_gives_a_joined_class_one_dim_within_its_bounds),
    cmocka_unit_test(test_tj_extent_of_keeps_a_constant_when_static_pinned_or_a_member),
    cmocka_unit_test(test_tj_extent_of_refuses_a_size_past_max_extent_naming_the_axis),
    cmocka_unit_test(test_tj_call_affine_over_sizes_0_and_1_builds_three_artifacts),
    cmocka_unit_test(test_tj_call_square_matrix_artifact_serves_a_rectangle),
    cmocka_unit_test(test_tj_sizes_unify_joins_two_classes_within_both_bounds),
    cmocka_unit_test(test_tj_sizes_unify_keeps_a_pinned_class_pinned_when_joined),
    cmocka_unit_test(test_tj_sizes_unify_with_no_second_site_pins_the_first_class),
    cmocka_unit_test(test_tj_sizes_unify_rejects_a_site_outside_the_table),
    cmocka_unit_test(test_tj_call_needed_equality_is_one_class_and_a_guard),
    cmocka_unit_test(test_tj_sizes_narrow_bounds_each_true_comparison),
    cmocka_unit_test(test_tj_sizes_narrow_bounds_the_negation_of_a_false_comparison),
    cmocka_unit_test(test_tj_sizes_narrow_rounds_inward_for_either_sign_of_c),
    cmocka_unit_test(test_tj_sizes_narrow_says_changed_only_when_a_bound_moves),
    cmocka_unit_test(test_tj_sizes_narrow_rejects_a_bad_site_or_coefficient_0),
    cmocka_unit_test(test_tj_call_branch_on_a_size_is_two_bounded_artifacts),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
