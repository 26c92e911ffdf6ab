/* test_layout.c: the layout predicates of uopc/layout.h, on raw descriptions
 * and on tensors, against answers worked out by hand from NumPy (flags
 * ['C_CONTIGUOUS'], the byte bounds of np.byte_bounds, np.shares_memory's
 * conservative cousin np.may_share_memory). */
#include "uopc/uopc.h"
#include "testutil.h"

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})

/* Fails with the layout and both answers when the predicate disagrees. */
#define CHECK_CONTIGUOUS(rank, shape, strides, want)                                       \
  do {                                                                                     \
    int got_ = uopc_layout_is_contiguous(rank, shape, strides);                            \
    if (got_ != (want))                                                                    \
      fail_msg("is_contiguous(shape %s, strides %s) = %d, expected %d", #shape, #strides,  \
               got_, (want));                                                              \
  } while (0)

#define CHECK_BYTES(what, got, want_lo, want_hi)                                           \
  do {                                                                                     \
    uopc_layout_bytes got_ = (got);                                                        \
    if (got_.lo != (uintptr_t)(want_lo) || got_.hi != (uintptr_t)(want_hi))               \
      fail_msg("%s: bytes [%#lx, %#lx), expected [%#lx, %#lx)", what, (unsigned long)got_.lo, \
               (unsigned long)got_.hi, (unsigned long)(want_lo), (unsigned long)(want_hi));  \
  } while (0)

static void test_layout_contiguous_packed_and_permuted(void **state) {
  (void)state;
  CHECK_CONTIGUOUS(2, DIMS(2, 3), DIMS(3, 1), 1);
  CHECK_CONTIGUOUS(2, DIMS(2, 3), DIMS(1, 2), 0);      /* the transpose of a (3, 2) */
  CHECK_CONTIGUOUS(1, DIMS(5), DIMS(2), 0);            /* x[::2] */
  CHECK_CONTIGUOUS(1, DIMS(5), DIMS(-1), 0);           /* x[::-1] */
  CHECK_CONTIGUOUS(1, DIMS(5), DIMS(0), 0);            /* a broadcast */
  CHECK_CONTIGUOUS(0, NULL, NULL, 1);                  /* a scalar */
}

static void test_layout_contiguous_ignores_size_one_dims(void **state) {
  (void)state;
  CHECK_CONTIGUOUS(3, DIMS(2, 1, 3), DIMS(3, 99, 1), 1);
  CHECK_CONTIGUOUS(2, DIMS(1, 1), DIMS(-7, 5), 1);
}

/* NumPy calls every empty array contiguous, whatever its strides, and the
 * zero dim may come after a dim whose stride is wrong. */
static void test_layout_contiguous_empty_view_is_contiguous(void **state) {
  (void)state;
  CHECK_CONTIGUOUS(2, DIMS(0, 3), DIMS(1, 5), 1);
  CHECK_CONTIGUOUS(2, DIMS(3, 0), DIMS(5, 1), 1);
}

/* The packed product past the outermost dim is never compared, so its
 * overflow must not matter; a product that overflows below a dim does. */
static void test_layout_contiguous_huge_dims_without_overflow_errors(void **state) {
  (void)state;
  CHECK_CONTIGUOUS(2, DIMS(INT64_C(1) << 62, 4), DIMS(4, 1), 1);
  CHECK_CONTIGUOUS(3, DIMS(2, INT64_C(1) << 62, 4), DIMS(0, 4, 1), 0);
}

static void test_layout_packed_strides_count_a_zero_dim_as_one(void **state) {
  (void)state;
  int64_t strides[3];
  uopc_layout_packed_strides(3, DIMS(2, 0, 3), strides);   /* np.empty((2, 0, 3), 'f').strides / 4 */
  assert_int_equal(strides[0], 3);
  assert_int_equal(strides[1], 3);
  assert_int_equal(strides[2], 1);
}

/* Only a positive dim enters the product: a negative one (no valid shape's) counts as 1, as 0 does. */
static void test_layout_packed_strides_count_a_negative_dim_as_one(void **state) {
  (void)state;
  int64_t strides[3];
  uopc_layout_packed_strides(3, DIMS(2, -3, 4), strides);
  assert_int_equal(strides[0], 4);
  assert_int_equal(strides[1], 4);
  assert_int_equal(strides[2], 1);
}

static void test_layout_span_reaches_both_ends(void **state) {
  (void)state;
  int64_t lo, hi;
  assert_int_equal(uopc_layout_span(2, DIMS(2, 3), DIMS(3, 1), &lo, &hi), 1);
  assert_int_equal(lo, 0);
  assert_int_equal(hi, 5);
  assert_int_equal(uopc_layout_span(2, DIMS(3, 2), DIMS(-2, 1), &lo, &hi), 1);   /* x.reshape(3, 2)[::-1] */
  assert_int_equal(lo, -4);
  assert_int_equal(hi, 1);
  assert_int_equal(uopc_layout_span(2, DIMS(4, 0), DIMS(1, 1), &lo, &hi), 0);
  assert_int_equal(lo, 0);
  assert_int_equal(hi, 0);
}

static void test_layout_span_reports_offsets_past_int64(void **state) {
  (void)state;
  int64_t lo, hi;
  assert_int_equal(uopc_layout_span(1, DIMS(3), DIMS(INT64_MAX), &lo, &hi), -1);
  assert_int_equal(uopc_layout_span(2, DIMS(2, 2), DIMS(INT64_MAX, INT64_MAX), &lo, &hi), -1);
}

static void test_layout_byte_range_covers_first_to_last_byte(void **state) {
  (void)state;
  static float buf[16];
  uintptr_t p = (uintptr_t)&buf[8];
  CHECK_BYTES("f32 (2, 3) packed", uopc_layout_byte_range(2, DIMS(2, 3), DIMS(3, 1), 4, &buf[8]), p, p + 24);
  CHECK_BYTES("f32 (3,) stride -2", uopc_layout_byte_range(1, DIMS(3), DIMS(-2), 4, &buf[8]), p - 16, p + 4);
  CHECK_BYTES("f32 (4,) broadcast", uopc_layout_byte_range(1, DIMS(4), DIMS(0), 4, &buf[8]), p, p + 4);
  CHECK_BYTES("f32 (0, 3) empty", uopc_layout_byte_range(2, DIMS(0, 3), DIMS(3, 1), 4, &buf[8]), p, p);
  CHECK_BYTES("f64 () scalar", uopc_layout_byte_range(0, NULL, NULL, 8, &buf[8]), p, p + 8);
}

static void test_layout_byte_range_past_int64_reaches_everything(void **state) {
  (void)state;
  static double buf[4];
  CHECK_BYTES("stride INT64_MAX", uopc_layout_byte_range(1, DIMS(3), DIMS(INT64_MAX), 8, buf), 0, UINTPTR_MAX);
  CHECK_BYTES("2**61 + 1 elements of 8 bytes",
              uopc_layout_byte_range(1, DIMS(2), DIMS(INT64_C(1) << 61), 8, buf), 0, UINTPTR_MAX);
}

static void test_layout_is_aligned_needs_a_power_of_two(void **state) {
  (void)state;
  _Alignas(64) static unsigned char buf[128];
  assert_true(uopc_layout_is_aligned(buf, 64));
  assert_true(uopc_layout_is_aligned(buf + 4, 4));
  assert_false(uopc_layout_is_aligned(buf + 4, 8));
  assert_false(uopc_layout_is_aligned(buf, 0));
  assert_false(uopc_layout_is_aligned(buf, 12));
  assert_true(uopc_layout_is_aligned(buf + 1, 1));
}

static void test_layout_overlap_of_byte_ranges(void **state) {
  (void)state;
  assert_false(uopc_layout_overlap((uopc_layout_bytes){0, 8}, (uopc_layout_bytes){8, 16}));
  assert_true(uopc_layout_overlap((uopc_layout_bytes){0, 9}, (uopc_layout_bytes){8, 16}));
  assert_true(uopc_layout_overlap((uopc_layout_bytes){0, 100}, (uopc_layout_bytes){8, 16}));
  /* an empty range touches nothing, even inside another */
  assert_false(uopc_layout_overlap((uopc_layout_bytes){10, 10}, (uopc_layout_bytes){8, 16}));
  assert_false(uopc_layout_overlap((uopc_layout_bytes){8, 16}, (uopc_layout_bytes){10, 10}));
}

/* The tensor forms: x = np.arange(6, dtype='f4'). */
static void test_layout_tensor_forms_agree_with_raw_ones(void **state) {
  (void)state;
  uopc_error err = {0};
  uopc_tensor x, evens, odds, head, tail, rev;
  assert_uopc_ok(uopc_tensor_empty(&x, UOPC_F32, 1, DIMS(6), &err), err);
  uintptr_t p = (uintptr_t)uopc_tensor_data(&x);
  assert_uopc_ok(uopc_tensor_slice(&evens, &x, 0, 0, UOPC_SLICE_NONE, 2, &err), err);
  assert_uopc_ok(uopc_tensor_slice(&odds, &x, 0, 1, UOPC_SLICE_NONE, 2, &err), err);
  assert_uopc_ok(uopc_tensor_slice(&head, &x, 0, 0, 3, 1, &err), err);
  assert_uopc_ok(uopc_tensor_slice(&tail, &x, 0, 3, UOPC_SLICE_NONE, 1, &err), err);
  assert_uopc_ok(uopc_tensor_slice(&rev, &x, 0, UOPC_SLICE_NONE, UOPC_SLICE_NONE, -1, &err), err);
  CHECK_BYTES("x[::2]", uopc_tensor_byte_range(&evens), p, p + 20);
  CHECK_BYTES("x[::-1]", uopc_tensor_byte_range(&rev), p, p + 24);
  assert_true(uopc_tensor_is_contiguous(&head));
  assert_false(uopc_tensor_is_contiguous(&evens));
  assert_false(uopc_tensor_may_overlap(&head, &tail));
  assert_true(uopc_tensor_may_overlap(&x, &rev));
  assert_true(uopc_tensor_may_overlap(&evens, &odds));   /* conservative: the ranges interleave */
  assert_true(uopc_tensor_is_aligned(&x, 64));
  assert_false(uopc_tensor_is_aligned(&odds, 8));
  uopc_tensor_release(&rev);
  CHECK_BYTES("a released tensor", uopc_tensor_byte_range(&rev), 0, 0);
  assert_false(uopc_tensor_may_overlap(&rev, &x));
  uopc_tensor *views[] = {&x, &evens, &odds, &head, &tail};
  for (size_t i = 0; i < sizeof views / sizeof *views; i++) uopc_tensor_release(views[i]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_layout_contiguous_packed_and_permuted),
    cmocka_unit_test(test_layout_contiguous_ignores_size_one_dims),
    cmocka_unit_test(test_layout_contiguous_empty_view_is_contiguous),
    cmocka_unit_test(test_layout_contiguous_huge_dims_without_overflow_errors),
    cmocka_unit_test(test_layout_packed_strides_count_a_zero_dim_as_one),
    cmocka_unit_test(test_layout_packed_strides_count_a_negative_dim_as_one),
    cmocka_unit_test(test_layout_span_reaches_both_ends),
    cmocka_unit_test(test_layout_span_reports_offsets_past_int64),
    cmocka_unit_test(test_layout_byte_range_covers_first_to_last_byte),
    cmocka_unit_test(test_layout_byte_range_past_int64_reaches_everything),
    cmocka_unit_test(test_layout_is_aligned_needs_a_power_of_two),
    cmocka_unit_test(test_layout_overlap_of_byte_ranges),
    cmocka_unit_test(test_layout_tensor_forms_agree_with_raw_ones),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
