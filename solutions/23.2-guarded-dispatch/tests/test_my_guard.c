/* test_my_guard.c: the reference experiment of lab 23.2 (the student's copy,
 * tests/student/23.2/test_my_guard.c, is a stub that fails). One test per
 * guard of the fast variant; each passes on the lab as it is and fails when
 * `make break LAB=23.2 GUARD=<name>` removes its guard. A decision that could
 * fault if it ran (aligned loads, packed stores) is checked before it runs. */
#include "dispatch.h"
#include "testutil.h"

static const float POISON = -12345.0f;

/* A fresh (64-byte aligned) f32 buffer of n elements: arange(n) - 3, or POISON. */
static void buffer(uopc_tensor *t, int64_t n, int poison) {
  uopc_error err = {0};
  assert_uopc_ok(uopc_tensor_empty(t, UOPC_F32, 1, &n, &err), err);
  for (int64_t i = 0; i < n; i++) uopc_tensor_set(t, i, poison ? POISON : (double)i - 3.0);
}

/* out[i] == x[i]*x[i] + 1 in f32 for every i of x. */
static void check_values(const uopc_tensor *x, const uopc_tensor *out) {
  for (int64_t i = 0; i < x->shape[0]; i++) {
    float a = (float)uopc_tensor_get(x, i), want = a * a + 1.0f;
    if (uopc_tensor_get(out, i) != (double)want)
      fail_msg("n = %lld: out[%lld] expected %.9g, got %.9g", (long long)x->shape[0], (long long)i, (double)want,
               uopc_tensor_get(out, i));
  }
}

/* A dispatcher whose first call, n = 32 (packed, aligned, disjoint), built its fast variant. */
static dispatcher *warm_dispatcher(void) {
  static dispatcher d;
  uopc_error err = {0};
  uopc_tensor x, out;
  assert_uopc_ok(dispatch_init(&d, NULL, &err), err);
  buffer(&x, 32, 0), buffer(&out, 32, 1);
  assert_uopc_ok(dispatch_call(&d, &x, &out, &err), err);
  assert_int_equal(dispatch_last_path(&d), DISPATCH_PATH_FAST);
  check_values(&x, &out);
  uopc_tensor_release(&x), uopc_tensor_release(&out);
  return &d;
}

/* Chooses for (x, out), fails when the fast kernel was chosen, runs the choice. */
static void expect_generic(dispatcher *d, const uopc_tensor *x, uopc_tensor *out, const char *what) {
  uopc_error err = {0};
  dispatch_choice c;
  assert_uopc_ok(dispatch_choose(d, x, out, &c, &err), err);
  if (c.path != DISPATCH_PATH_GENERIC)
    fail_msg("%s was sent to %s (%s)", what, c.variant->entry, dispatch_path_name(c.path));
  assert_uopc_ok(dispatch_run(d, &c, &err), err);
}

/* GUARD=divisibility: n = 33 would reach a kernel without a tail loop, and out[32] keep its poison. */
static void test_my_guard_length_33_is_computed_in_full(void **state) {
  (void)state;
  dispatcher *d = warm_dispatcher();
  uopc_tensor x, out;
  buffer(&x, 33, 0), buffer(&out, 33, 1);
  expect_generic(d, &x, &out, "n = 33 (not a multiple of 16)");
  check_values(&x, &out);
  uopc_tensor_release(&x), uopc_tensor_release(&out);
  dispatch_fini(d);
}

/* GUARD=alignment: x starting 4 bytes past a 64-byte boundary must not reach aligned loads. */
static void test_my_guard_misaligned_x_takes_the_generic_kernel(void **state) {
  (void)state;
  dispatcher *d = warm_dispatcher();
  uopc_error err = {0};
  uopc_tensor base, x, out;
  buffer(&base, 33, 0), buffer(&out, 32, 1);
  assert_uopc_ok(uopc_tensor_slice(&x, &base, 0, 1, UOPC_SLICE_NONE, 1, &err), err);
  assert_false(uopc_tensor_is_aligned(&x, 64));
  expect_generic(d, &x, &out, "x 4 bytes past a 64-byte boundary");
  check_values(&x, &out);
  uopc_tensor_release(&x), uopc_tensor_release(&base), uopc_tensor_release(&out);
  dispatch_fini(d);
}

/* GUARD=out-contiguity: an out of stride 2 must not get packed stores (they would fill its gaps). */
static void test_my_guard_strided_out_takes_the_generic_kernel(void **state) {
  (void)state;
  dispatcher *d = warm_dispatcher();
  uopc_error err = {0};
  uopc_tensor x, buf, out;
  buffer(&x, 32, 0), buffer(&buf, 64, 1);
  assert_uopc_ok(uopc_tensor_slice(&out, &buf, 0, 0, 64, 2, &err), err);
  expect_generic(d, &x, &out, "an out of stride 2");
  check_values(&x, &out);
  for (int64_t i = 1; i < 64; i += 2)
    if (uopc_tensor_get(&buf, i) != POISON) fail_msg("buffer index %lld, between out's elements, was written", (long long)i);
  uopc_tensor_release(&out), uopc_tensor_release(&buf), uopc_tensor_release(&x);
  dispatch_fini(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_my_guard_length_33_is_computed_in_full),
    cmocka_unit_test(test_my_guard_misaligned_x_takes_the_generic_kernel),
    cmocka_unit_test(test_my_guard_strided_out_takes_the_generic_kernel),
  };
  return cmocka_run_group_tests(tests, testutil_fresh_cache, testutil_remove_cache);
}
