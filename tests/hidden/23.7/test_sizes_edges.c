/* test_sizes_edges.c: lab 23.7's held-out cases of tj_sizes.c: sizes 0 and 1
 * with specialize_01 off, classes joined twice and class with class, and
 * narrowing with coefficients 2 and -3 (tests/23.7/tj_fixture.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>
#include "23.7/tj_fixture.h"

static int setup(void **state) { return testutil_fresh_cache(state); }
static int teardown(void **state) { return testutil_remove_cache(state); }

static const char *const XY[] = {"x", "y"};

static int affine(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* 2x + 1 */
  (void)user;
  out[0] = tp_add(c, tp_mul(c, tp_scalar(c, 2), in[0].t), tp_scalar(c, 1));
  return tp_status(c);
}

/* Without specialize_01 every size is a dim from 0, so n = 3, 1, 0 share one artifact. */
static void test_tj_extent_of_without_specialize_01_makes_0_and_1_dims_from_0(void **state) {
  (void)state;
  const tj_options o = {.specialize_01 = TJ_OFF, .arg_names = XY};
  uopc_tensor x = tjf_tensor(3, (int64_t[]){1, 0, 7});
  tjf t;
  tjf_init(&t, &o, (tj_arg[]){tj_tensor(&x)}, 1);
  tjf_expect_dim(&t, tjf_extent(&t, 0, 0), 0, "x_0", 0, TJF_MAX_EXTENT, "specialize_01 off: x (1, 0, 7), axis 0");
  tjf_expect_dim(&t, tjf_extent(&t, 0, 1), 1, "x_1", 0, TJF_MAX_EXTENT, "specialize_01 off: x (1, 0, 7), axis 1");
  tjf_expect_dim(&t, tjf_extent(&t, 0, 2), 2, "x_2", 0, TJF_MAX_EXTENT, "specialize_01 off: x (1, 0, 7), axis 2");
  tjf_fini(&t);
  uopc_tensor_release(&x);
  tj_function *f = tjf_compile(affine, &o);
  const int64_t n[] = {3, 1, 0, 5};
  for (int k = 0; k < 4; k++) {
    uopc_tensor v = tjf_vec(n[k]), out = {0};
    uopc_error err = {0};
    float want[5];
    char what[128];
    for (int64_t i = 0; i < n[k]; i++) want[i] = 2 * (float)uopc_tensor_get(&v, i) + 1;
    snprintf(what, sizeof what, "2x+1 with specialize_01 off, n = %lld", (long long)n[k]);
    int rc = tj_call(f, (tj_arg[]){tj_tensor(&v)}, 1, &out, &err);
    if (rc) fail_msg("%s: tj_call: expected UOPC_OK, got %s: %s", what, uopc_error_name(rc), err.message);
    tjf_expect_values(&out, want, n[k], what);
    uopc_tensor_release(&out), uopc_tensor_release(&v);
  }
  tjf_expect_counts(f, 1, 3, "2x+1 with specialize_01 off over n = 3, 1, 0, 5");
  tj_free(f);
}

static void test_tj_sizes_unify_joins_classes_of_several_sites_once(void **state) {
  (void)state;
  tj_sizes s;
  uopc_error err = {0};
  tjf_sizes_fresh(&s);
  s.lo[1] = 2, s.hi[1] = 90, s.lo[2] = 4, s.hi[2] = 60, s.lo[3] = 0, s.hi[3] = 30, s.lo[4] = 3, s.hi[4] = 70;
  assert_uopc_ok(tj_sizes_unify(&s, 1, 2, &err), err);   /* {1, 2} [4, 60] */
  assert_uopc_ok(tj_sizes_unify(&s, 4, 3, &err), err);   /* {3, 4} [3, 30] */
  assert_uopc_ok(tj_sizes_unify(&s, 2, 4, &err), err);   /* one class [4, 30], through two non-roots */
  int r = tj_sizes_root(&s, 1);
  for (int x = 2; x <= 4; x++) expect_int(tj_sizes_root(&s, x), r, "after joining {1, 2} with {3, 4}: site %d's root", x);
  expect_int(s.lo[r], 4, "{1, 2} [4, 60] joined with {3, 4} [3, 30]: the lower bound");
  expect_int(s.hi[r], 30, "{1, 2} [4, 60] joined with {3, 4} [3, 30]: the upper bound");
  tj_sizes before = s;
  assert_uopc_ok(tj_sizes_unify(&s, 3, 1, &err), err);   /* already one class */
  assert_uopc_ok(tj_sizes_unify(&s, 2, 2, &err), err);
  expect_int(tj_sizes_root(&s, 3), tj_sizes_root(&before, 3), "unify(3, 1) of one class: site 3's root");
  expect_int(s.lo[tj_sizes_root(&s, 1)], 4, "unify(3, 1) of one class: the lower bound");
  expect_int(s.hi[tj_sizes_root(&s, 1)], 30, "unify(3, 1) of one class: the upper bound");
  expect_truth(s.pinned[tj_sizes_root(&s, 1)], 0, "unify(3, 1) of one class: pinned");
}

/* c*d + k op 0 found truth, on site 5 whose class starts [0, 2^24]. */
static void narrow_case(int64_t c, int64_t k, tp_cmp op, int truth, int64_t want_lo, int64_t want_hi) {
  tj_sizes s;
  uopc_error err = {0};
  int changed = 0;
  tjf_sizes_fresh(&s);
  s.lo[5] = 0, s.hi[5] = TJF_MAX_EXTENT;
  assert_uopc_ok(tj_sizes_narrow(&s, 5, c, k, op, truth, &changed, &err), err);
  const char *t = truth ? "true" : "false";
  expect_int(s.lo[5], want_lo, "%lld*d + %lld %s 0 is %s, d in [0, 2^24]: d's lower bound", (long long)c, (long long)k,
             tp_cmp_text(op), t);
  expect_int(s.hi[5], want_hi, "%lld*d + %lld %s 0 is %s, d in [0, 2^24]: d's upper bound", (long long)c, (long long)k,
             tp_cmp_text(op), t);
  expect_int(changed, want_lo != 0 || want_hi != TJF_MAX_EXTENT, "%lld*d + %lld %s 0 is %s: *changed", (long long)c,
             (long long)k, tp_cmp_text(op), t);
}

static void test_tj_sizes_narrow_with_coefficients_2_and_minus_3(void **state) {
  (void)state;
  const int64_t M = TJF_MAX_EXTENT;
  narrow_case(2, -9, TP_GT, 1, 5, M);     /* 2d > 9: d >= 5 */
  narrow_case(2, -9, TP_GT, 0, 0, 4);     /* 2d <= 9 */
  narrow_case(2, -9, TP_LT, 1, 0, 4);
  narrow_case(2, -9, TP_LE, 0, 5, M);
  narrow_case(2, -10, TP_EQ, 1, 5, 5);
  narrow_case(2, -9, TP_NE, 1, 0, M);
  narrow_case(-3, 20, TP_GE, 1, 0, 6);    /* 20 >= 3d: d <= 6 */
  narrow_case(-3, 20, TP_GE, 0, 7, M);    /* 20 < 3d: d >= 7 */
  narrow_case(-3, 20, TP_GT, 0, 7, M);    /* 20 <= 3d */
  narrow_case(-3, 20, TP_LT, 1, 7, M);
  narrow_case(-3, 21, TP_LE, 1, 7, M);    /* 21 <= 3d: d >= 7, exactly */
  narrow_case(-3, 21, TP_EQ, 1, 7, 7);
  narrow_case(-3, 21, TP_NE, 0, 7, 7);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_tj_extent_of_without_specialize_01_makes_0_and_1_dims_from_0),
    cmocka_unit_test(test_tj_sizes_unify_joins_classes_of_several_sites_once),
    cmocka_unit_test(test_tj_sizes_narrow_with_coefficients_2_and_minus_3),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
