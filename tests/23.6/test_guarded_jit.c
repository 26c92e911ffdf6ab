/* test_guarded_jit.c: lab 23.6, the guarded JIT, against an eager reference.
 * The reference here is computed independently, element by element, in the
 * input's dtype (as NumPy's x*x + 1 is). The broken build of tests/broken.mk
 * removes the contiguity guard; test_guarded_jit_strided_view_matches_eager
 * must then fail. */
#include "guarded_jit.h"
#include "testutil.h"

enum { POISON_TAIL = 16 };
static const double POISON = -12345.0;

/* arange(n) of dtype dt, sliced [start::step]; *base keeps the storage. */
static void arange_view(uopc_tensor *base, uopc_tensor *x, uopc_dtype dt, int64_t n, int64_t start, int64_t step) {
  uopc_error err = {0};
  assert_uopc_ok(uopc_tensor_empty(base, dt, 1, &n, &err), err);
  for (int64_t i = 0; i < n; i++) uopc_tensor_set(base, i, (double)i - 3.0);
  assert_uopc_ok(uopc_tensor_slice(x, base, 0, start, UOPC_SLICE_NONE, step, &err), err);
}

/* A contiguous output of length n followed by a poisoned tail; *out views the head. */
static void poisoned_output(uopc_tensor *buf, uopc_tensor *out, uopc_dtype dt, int64_t n) {
  uopc_error err = {0};
  int64_t total = n + POISON_TAIL;
  assert_uopc_ok(uopc_tensor_empty(buf, dt, 1, &total, &err), err);
  for (int64_t i = 0; i < total; i++) uopc_tensor_set(buf, i, POISON);
  assert_uopc_ok(uopc_tensor_slice(out, buf, 0, 0, n, 1, &err), err);
}

/* Compares out with x*x + 1 in x's dtype and checks the tail is untouched. */
static void check_result(const uopc_tensor *x, const uopc_tensor *out, const uopc_tensor *buf) {
  int64_t n = x->shape[0];
  for (int64_t i = 0; i < n; i++) {
    double v = uopc_tensor_get(x, i), got = uopc_tensor_get(out, i);
    double want = x->dtype == UOPC_F32 ? (double)((float)v * (float)v + 1.0f) : v * v + 1.0;
    if (got != want)
      fail_msg("length %lld dtype %s stride %lld: index %lld expected %.9g, got %.9g", (long long)n,
               uopc_dtype_name(x->dtype), (long long)x->strides[0], (long long)i, want, got);
  }
  for (int64_t i = n; buf && i < n + POISON_TAIL; i++)
    if (uopc_tensor_get(buf, i) != POISON)
      fail_msg("length %lld: the kernel wrote past the end, at index %lld", (long long)n, (long long)i);
}

/* Runs one call of x = arange(n)[start::step] and checks it; returns the path taken. */
static guarded_jit_path run_case(guarded_jit *jit, uopc_dtype dt, int64_t n, int64_t start, int64_t step) {
  uopc_tensor base = {0}, x = {0}, buf = {0}, out = {0};
  uopc_error err = {0};
  arange_view(&base, &x, dt, n, start, step);
  poisoned_output(&buf, &out, dt, x.shape[0]);
  assert_uopc_ok(guarded_jit_call(jit, &x, &out, &err), err);
  check_result(&x, &out, &buf);
  guarded_jit_path path = jit->last_path;
  uopc_tensor_release(&out);
  uopc_tensor_release(&buf);
  uopc_tensor_release(&x);
  uopc_tensor_release(&base);
  return path;
}

static void test_guarded_jit_chapter_example_counts(void **state) {
  (void)state;
  guarded_jit jit;
  uopc_error err = {0};
  assert_uopc_ok(guarded_jit_init(&jit, 64, NULL, &err), err);
  static const int64_t lengths[] = {1, 7, 31, 64, 7};
  for (int i = 0; i < 5; i++) assert_int_equal(run_case(&jit, UOPC_F32, lengths[i], 0, 1), GUARDED_JIT_COMPILED);
  assert_int_equal(run_case(&jit, UOPC_F32, 20, 0, 2), GUARDED_JIT_FALLBACK);
  assert_int_equal(jit.variants_built, 1);
  assert_int_equal(jit.compiled_calls, 5);
  assert_int_equal(jit.layout_fallbacks, 1);
  guarded_jit_fini(&jit);
}

/* Both paths write out: its storage version moves once a call (23.3 relies
 * on it), x's does not. */
static void test_guarded_jit_call_bumps_the_output_version(void **state) {
  (void)state;
  guarded_jit jit;
  uopc_error err = {0};
  assert_uopc_ok(guarded_jit_init(&jit, 64, NULL, &err), err);
  static const int64_t steps[] = {1, 2};   /* compiled, then the fallback */
  for (int k = 0; k < 2; k++) {
    uopc_tensor base = {0}, x = {0}, buf = {0}, out = {0};
    arange_view(&base, &x, UOPC_F32, 9, 0, steps[k]);
    poisoned_output(&buf, &out, UOPC_F32, x.shape[0]);
    uint64_t xv = uopc_tensor_version(&x), ov = uopc_tensor_version(&out);
    assert_uopc_ok(guarded_jit_call(&jit, &x, &out, &err), err);
    assert_int_equal(jit.last_path, k ? GUARDED_JIT_FALLBACK : GUARDED_JIT_COMPILED);
    if (uopc_tensor_version(&out) != ov + 1 || uopc_tensor_version(&x) != xv)
      fail_msg("step %lld: versions out %llu -> %llu (expected +1), x %llu -> %llu (expected unchanged)",
               (long long)steps[k], (unsigned long long)ov, (unsigned long long)uopc_tensor_version(&out),
               (unsigned long long)xv, (unsigned long long)uopc_tensor_version(&x));
    uopc_tensor_release(&out);
    uopc_tensor_release(&buf);
    uopc_tensor_release(&x);
    uopc_tensor_release(&base);
  }
  guarded_jit_fini(&jit);
}

/* x[::2]: the kernel would read x's neighbours, not every second element. */
static void test_guarded_jit_strided_view_matches_eager(void **state) {
  (void)state;
  guarded_jit jit;
  uopc_error err = {0};
  assert_uopc_ok(guarded_jit_init(&jit, 64, NULL, &err), err);
  run_case(&jit, UOPC_F32, 20, 0, 2);
  run_case(&jit, UOPC_F32, 64, 1, 3);
  guarded_jit_fini(&jit);
}

static void test_guarded_jit_reversed_view_takes_fallback(void **state) {
  (void)state;
  guarded_jit jit;
  uopc_error err = {0};
  assert_uopc_ok(guarded_jit_init(&jit, 64, NULL, &err), err);
  assert_int_equal(run_case(&jit, UOPC_F32, 31, UOPC_SLICE_NONE, -1), GUARDED_JIT_FALLBACK);
  assert_int_equal(jit.variants_built, 0);
  guarded_jit_fini(&jit);
}

/* x (then out) one byte past an f32 boundary, as a NumPy view can be: the kernel assumes
 * element alignment, so either tensor off it takes the fallback, which still computes x*x + 1. */
static void test_guarded_jit_misaligned_view_takes_fallback(void **state) {
  (void)state;
  guarded_jit jit;
  uopc_error err = {0};
  enum { N = 9 };
  static float storage[2][N + 1];
  char *bytes[2] = {(char *)storage[0] + 1, (char *)storage[1] + 1};
  float aligned[2][N];
  int64_t n = N, unit = 1;
  assert_uopc_ok(guarded_jit_init(&jit, 64, NULL, &err), err);
  for (int misaligned = 0; misaligned < 2; misaligned++) {   /* x, then out */
    uopc_tensor x = {0}, out = {0};
    for (int i = 0; i < N; i++) {
      float v = (float)i - 3.5f;
      memcpy(misaligned ? (char *)aligned[0] + 4 * i : bytes[0] + 4 * i, &v, sizeof v);
    }
    assert_uopc_ok(uopc_tensor_wrap(&x, misaligned ? (void *)aligned[0] : bytes[0], UOPC_F32, 1, &n, &unit, &err), err);
    assert_uopc_ok(uopc_tensor_wrap(&out, misaligned ? bytes[1] : (void *)aligned[1], UOPC_F32, 1, &n, &unit, &err), err);
    assert_uopc_ok(guarded_jit_call(&jit, &x, &out, &err), err);
    if (jit.last_path != GUARDED_JIT_FALLBACK)
      fail_msg("%s one byte past an f32 boundary: expected the fallback, got the compiled kernel",
               misaligned ? "out" : "x");
    check_result(&x, &out, NULL);
    uopc_tensor_release(&out);
    uopc_tensor_release(&x);
  }
  assert_int_equal(jit.variants_built, 0);
  guarded_jit_fini(&jit);
}

static void test_guarded_jit_f64_keeps_its_dtype(void **state) {
  (void)state;
  guarded_jit jit;
  uopc_error err = {0};
  assert_uopc_ok(guarded_jit_init(&jit, 64, NULL, &err), err);
  static const int64_t lengths[] = {1, 7, 31, 64};
  for (int i = 0; i < 4; i++) assert_int_equal(run_case(&jit, UOPC_F64, lengths[i], 0, 1), GUARDED_JIT_FALLBACK);
  assert_int_equal(jit.layout_fallbacks, 4);
  guarded_jit_fini(&jit);
}

static void test_guarded_jit_serves_every_length_with_one_variant(void **state) {
  (void)state;
  guarded_jit jit;
  uopc_error err = {0};
  assert_uopc_ok(guarded_jit_init(&jit, 4096, NULL, &err), err);
  srand(2311);
  for (int i = 0; i < 40; i++) run_case(&jit, UOPC_F32, 1 + rand() % 4096, 0, 1);
  run_case(&jit, UOPC_F32, 4096, 0, 1);
  assert_int_equal(jit.variants_built, 1);
  assert_int_equal(jit.compiled_calls, 41);
  guarded_jit_fini(&jit);
}

static void test_guarded_jit_in_place_call(void **state) {
  (void)state;
  guarded_jit jit;
  uopc_error err = {0};
  uopc_tensor x = {0};
  int64_t n = 9;
  assert_uopc_ok(guarded_jit_init(&jit, 64, NULL, &err), err);
  assert_uopc_ok(uopc_tensor_empty(&x, UOPC_F32, 1, &n, &err), err);
  for (int64_t i = 0; i < n; i++) uopc_tensor_set(&x, i, (double)i);
  assert_uopc_ok(guarded_jit_call(&jit, &x, &x, &err), err);
  for (int64_t i = 0; i < n; i++) assert_true(uopc_tensor_get(&x, i) == (double)(i * i + 1));
  uopc_tensor_release(&x);
  guarded_jit_fini(&jit);
}

static void expect_rejected(guarded_jit *jit, const uopc_tensor *x, uopc_tensor *out, int code,
                            const char *text) {
  uopc_error err = {0};
  assert_uopc_code(guarded_jit_call(jit, x, out, &err), code, err);
  assert_contains(err.message, text);
}

static void test_guarded_jit_rejects_lengths_outside_bounds(void **state) {
  (void)state;
  guarded_jit jit;
  uopc_error err = {0};
  uopc_tensor x = {0}, e = {0};
  int64_t n = 65, zero = 0;
  assert_uopc_ok(guarded_jit_init(&jit, 64, NULL, &err), err);
  assert_uopc_ok(uopc_tensor_empty(&x, UOPC_F32, 1, &n, &err), err);
  assert_uopc_ok(uopc_tensor_empty(&e, UOPC_F32, 1, &zero, &err), err);
  expect_rejected(&jit, &x, &x, UOPC_E_BOUNDS, "length of x = 65 outside the declared bounds [1, 64]");
  expect_rejected(&jit, &e, &e, UOPC_E_BOUNDS, "length of x = 0 outside");
  assert_int_equal(jit.compiled_calls + jit.layout_fallbacks, 0);
  uopc_tensor_release(&x);
  uopc_tensor_release(&e);
  guarded_jit_fini(&jit);
}

static void test_guarded_jit_rejects_bad_inputs(void **state) {
  (void)state;
  guarded_jit jit;
  uopc_error err = {0};
  uopc_tensor i32 = {0}, m = {0}, f = {0}, shifted = {0}, head = {0}, f64 = {0}, tall = {0}, scalar = {0};
  int64_t n = 8, shape2[2] = {2, 4}, shape82[2] = {8, 2};
  assert_uopc_code(guarded_jit_init(&jit, 0, NULL, &err), UOPC_E_INVALID, err);
  assert_contains(err.message, "maximum = 0 outside [1, ");
  assert_null(guarded_jit_new(INT64_C(1) << 31, &err));   /* past INT32_MAX */
  assert_int_equal(err.code, UOPC_E_INVALID);
  guarded_jit_free(NULL);                                  /* like free(NULL) */
  assert_uopc_ok(guarded_jit_init(&jit, 64, NULL, &err), err);
  assert_uopc_ok(uopc_tensor_empty(&i32, UOPC_I32, 1, &n, &err), err);
  assert_uopc_ok(uopc_tensor_empty(&m, UOPC_F32, 2, shape2, &err), err);
  assert_uopc_ok(uopc_tensor_empty(&f, UOPC_F32, 1, &n, &err), err);
  expect_rejected(&jit, &i32, &i32, UOPC_E_DTYPE, "dtype i32");
  expect_rejected(&jit, &m, &m, UOPC_E_INVALID, "rank 2");
  assert_uopc_ok(uopc_tensor_slice(&shifted, &f, 0, 1, 8, 1, &err), err);
  assert_uopc_ok(uopc_tensor_slice(&head, &f, 0, 0, 7, 1, &err), err);
  expect_rejected(&jit, &head, &shifted, UOPC_E_ALIAS, "partly overlaps");   /* out one element after x */
  expect_rejected(&jit, &shifted, &head, UOPC_E_ALIAS, "partly overlaps");   /* and one before */
  /* out must match x: length, rank and dtype, each named in the message. */
  expect_rejected(&jit, &f, &head, UOPC_E_INVALID, "out must be a vector of length 8 like x, got rank 1 length 7");
  expect_rejected(&jit, &f, &m, UOPC_E_INVALID, "got rank 2 length 2");
  assert_uopc_ok(uopc_tensor_empty(&tall, UOPC_F32, 2, shape82, &err), err);   /* as long as x, but 2-D */
  expect_rejected(&jit, &f, &tall, UOPC_E_INVALID, "got rank 2 length 8");
  assert_uopc_ok(uopc_tensor_empty(&scalar, UOPC_F32, 0, NULL, &err), err);
  expect_rejected(&jit, &f, &scalar, UOPC_E_INVALID, "got rank 0 length 0");
  assert_uopc_ok(uopc_tensor_empty(&f64, UOPC_F64, 1, &n, &err), err);
  expect_rejected(&jit, &f, &f64, UOPC_E_DTYPE, "out has dtype f64 but x has f32");
  assert_int_equal(jit.compiled_calls + jit.layout_fallbacks, 0);
  uopc_tensor_release(&f64);
  uopc_tensor_release(&tall);
  uopc_tensor_release(&scalar);
  uopc_tensor_release(&i32);
  uopc_tensor_release(&m);
  uopc_tensor_release(&f);
  uopc_tensor_release(&shifted);
  uopc_tensor_release(&head);
  guarded_jit_fini(&jit);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_guarded_jit_chapter_example_counts),
    cmocka_unit_test(test_guarded_jit_strided_view_matches_eager),
    cmocka_unit_test(test_guarded_jit_call_bumps_the_output_version),
    cmocka_unit_test(test_guarded_jit_reversed_view_takes_fallback),
    cmocka_unit_test(test_guarded_jit_misaligned_view_takes_fallback),
    cmocka_unit_test(test_guarded_jit_f64_keeps_its_dtype),
    cmocka_unit_test(test_guarded_jit_serves_every_length_with_one_variant),
    cmocka_unit_test(test_guarded_jit_in_place_call),
    cmocka_unit_test(test_guarded_jit_rejects_lengths_outside_bounds),
    cmocka_unit_test(test_guarded_jit_rejects_bad_inputs),
  };
  return cmocka_run_group_tests(tests, testutil_fresh_cache, testutil_remove_cache);
}
