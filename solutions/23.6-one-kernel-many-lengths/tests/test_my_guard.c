/* test_my_guard.c: the reference experiment of lab 23.6 (the student's copy,
 * tests/student/23.6/test_my_guard.c, is a stub that fails). It passes on the
 * lab as it is and fails when `make break LAB=23.6 GUARD=contiguity` removes
 * the stride check: the kernel then reads adjacent floats where the view
 * means every second (or third) one. */
#include "guarded_jit.h"
#include "testutil.h"

/* x = (arange(total) - 3)[::step] through the guarded JIT; every element checked. */
static void check_strided(guarded_jit *jit, int64_t total, int64_t step) {
  uopc_error err = {0};
  uopc_tensor base, x, out;
  assert_uopc_ok(uopc_tensor_empty(&base, UOPC_F32, 1, &total, &err), err);
  for (int64_t i = 0; i < total; i++) uopc_tensor_set(&base, i, (double)i - 3.0);
  assert_uopc_ok(uopc_tensor_slice(&x, &base, 0, 0, UOPC_SLICE_NONE, step, &err), err);
  int64_t n = x.shape[0];
  assert_uopc_ok(uopc_tensor_empty(&out, UOPC_F32, 1, &n, &err), err);
  assert_uopc_ok(guarded_jit_call(jit, &x, &out, &err), err);
  for (int64_t i = 0; i < n; i++) {
    float a = (float)uopc_tensor_get(&x, i), want = a * a + 1.0f;
    if (uopc_tensor_get(&out, i) != (double)want)
      fail_msg("x = arange(%lld)[::%lld]: out[%lld] expected %.9g, got %.9g", (long long)total, (long long)step,
               (long long)i, (double)want, uopc_tensor_get(&out, i));
  }
  uopc_tensor_release(&out), uopc_tensor_release(&x), uopc_tensor_release(&base);
}

static void test_my_guard_strided_views_match_eager(void **state) {
  (void)state;
  guarded_jit jit;
  uopc_error err = {0};
  assert_uopc_ok(guarded_jit_init(&jit, 64, NULL, &err), err);
  check_strided(&jit, 40, 2);
  check_strided(&jit, 64, 3);
  guarded_jit_fini(&jit);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_my_guard_strided_views_match_eager),
  };
  return cmocka_run_group_tests(tests, testutil_fresh_cache, testutil_remove_cache);
}
