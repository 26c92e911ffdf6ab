/* test_tensor.c: the strided tensor of section 23.6 (views: 23.3) against
 * results worked out by hand from NumPy. Each check names the NumPy
 * expression it mirrors; a failure prints that expression, the field, the
 * expected value and the one it got. Run under ASan/UBSan and valgrind:
 * the refcount tests rely on them to catch a leak or an early free (one counts the last
 * release's frees itself, for a build without them). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#define TESTUTIL_FAILING_MALLOC   /* NOMEM paths on demand: fail_next_malloc */
#include "testutil.h"
#include "uopc/tensor.h"

#define NONE UOPC_SLICE_NONE
#define DIMS(...) ((const int64_t[]){__VA_ARGS__})

#ifndef __SANITIZE_ADDRESS__
/* free, watched: this executable's free comes before glibc's for libuopc too, and counts the
 * calls that free watched[0] or watched[1]. AddressSanitizer brings its own allocator: not there. */
extern void __libc_free(void *p);
static const void *watched[2];
static int watched_frees[2];
static void *last_aligned;      /* aligned_alloc's last block (below) */
static int last_aligned_frees;  /* and the calls that freed it */
void free(void *p) {
  for (int i = 0; i < 2; i++)
    if (p && p == watched[i]) watched_frees[i]++;
  if (p && p == last_aligned) last_aligned_frees++;
  __libc_free(p);
}

/* 0 where free is not this one after all: valgrind replaces it, in the executable too. */
static int free_is_watched(void) {
  void (*volatile release)(void *) = free;  /* a call gcc cannot fold as the builtin free */
  void *p = malloc(1);
  watched[0] = p;
  watched_frees[0] = 0;
  release(p);
  watched[0] = NULL;
  return watched_frees[0] == 1;
}

/* aligned_alloc as C11 lets a C library answer: NULL for 0 bytes (glibc's gives a block), so that
 * a runtime asking for 0 bytes would read as out of memory. */
extern void *__libc_memalign(size_t alignment, size_t n);
void *aligned_alloc(size_t alignment, size_t n) {
  last_aligned = n ? __libc_memalign(alignment, n) : NULL;
  last_aligned_frees = 0;
  return last_aligned;
}
#endif

/* ---- checks that print their context ---------------------------------------- */

#define CHECK_OK(expr, rc, err) check_code(__FILE__, __LINE__, expr, rc, UOPC_OK, err)
#define CHECK_CODE(expr, rc, want, err) check_code(__FILE__, __LINE__, expr, rc, want, err)
#define CHECK_I64(expr, field, got, want) check_i64(__FILE__, __LINE__, expr, field, got, want)
#define CHECK_VIEW(expr, t, rank, shape, strides, offset) \
  check_view(__FILE__, __LINE__, expr, t, rank, shape, strides, offset)
#define CHECK_VALUES(expr, t, ...) \
  check_values(__FILE__, __LINE__, expr, t, (const double[]){__VA_ARGS__}, \
               (int64_t)(sizeof((const double[]){__VA_ARGS__}) / sizeof(double)))
#define CHECK_MESSAGE(expr, err, text) check_message(__FILE__, __LINE__, expr, err, text)

static void check_code(const char *file, int line, const char *expr, int rc, int want,
                       const uopc_error *err) {
  if (rc == want) return;
  print_error("%s: returned %s (%s: %s), expected %s\n", expr, uopc_error_name(rc), err->where,
              rc ? err->message : "", uopc_error_name(want));
  _fail(file, line);
}

static void check_i64(const char *file, int line, const char *expr, const char *field, int64_t got,
                      int64_t want) {
  if (got == want) return;
  print_error("%s: %s = %lld, expected %lld\n", expr, field, (long long)got, (long long)want);
  _fail(file, line);
}

static void check_view(const char *file, int line, const char *expr, const uopc_tensor *t, int rank,
                       const int64_t *shape, const int64_t *strides, int64_t offset) {
  char field[32];
  check_i64(file, line, expr, "rank", t->rank, rank);
  for (int i = 0; i < rank; i++) {
    snprintf(field, sizeof field, "shape[%d]", i);
    check_i64(file, line, expr, field, t->shape[i], shape[i]);
    snprintf(field, sizeof field, "strides[%d]", i);
    check_i64(file, line, expr, field, t->strides[i], strides[i]);
  }
  check_i64(file, line, expr, "offset", t->offset, offset);
}

static void check_values(const char *file, int line, const char *expr, const uopc_tensor *t,
                         const double *want, int64_t n) {
  check_i64(file, line, expr, "numel", uopc_tensor_numel(t), n);
  for (int64_t i = 0; i < n; i++) {
    double got = uopc_tensor_get(t, i);
    if (got == want[i]) continue;
    print_error("%s: element %lld (row-major) = %g, expected %g\n", expr, (long long)i, got, want[i]);
    _fail(file, line);
  }
}

static void check_message(const char *file, int line, const char *expr, const uopc_error *err,
                          const char *text) {
  if (strstr(err->message, text)) return;
  print_error("%s: message \"%s\" does not contain \"%s\"\n", expr, err->message, text);
  _fail(file, line);
}

/* np.arange(numel, dtype=dt).reshape(shape) */
static void arange(uopc_tensor *t, uopc_dtype dt, int rank, const int64_t *shape) {
  uopc_error err;
  CHECK_OK("np.arange(...).reshape(shape)", uopc_tensor_empty(t, dt, rank, shape, &err), &err);
  for (int64_t i = 0; i < uopc_tensor_numel(t); i++) uopc_tensor_set(t, i, (double)i);
}

/* ---- dtypes and creation ----------------------------------------------------- */

static void test_tensor_dtype_sizes_names_and_kinds(void **state) {
  (void)state;
  CHECK_I64("np.dtype('float32').itemsize", "size", (int64_t)uopc_dtype_size(UOPC_F32), 4);
  CHECK_I64("np.dtype('float64').itemsize", "size", (int64_t)uopc_dtype_size(UOPC_F64), 8);
  CHECK_I64("np.dtype('int32').itemsize", "size", (int64_t)uopc_dtype_size(UOPC_I32), 4);
  CHECK_I64("np.dtype('int64').itemsize", "size", (int64_t)uopc_dtype_size(UOPC_I64), 8);
  assert_string_equal(uopc_dtype_name(UOPC_F32), "f32");
  assert_string_equal(uopc_dtype_name(UOPC_I64), "i64");
  assert_string_equal(uopc_dtype_name(UOPC_F64), "f64");
  assert_string_equal(uopc_dtype_name(UOPC_I32), "i32");
  assert_string_equal(uopc_dtype_name(UOPC_BOOL), "bool");
  assert_string_equal(uopc_dtype_name((uopc_dtype)99), "?");  /* outside the enum: no name */
  assert_true(uopc_dtype_is_float(UOPC_F64));
  assert_false(uopc_dtype_is_float(UOPC_I32));
}

static void test_tensor_empty_is_zeroed_packed_and_aligned(void **state) {
  (void)state;
  uopc_tensor t;
  uopc_error err;
  /* np.zeros((2, 3), np.float32): strides (12, 4) bytes = (3, 1) elements */
  CHECK_OK("np.zeros((2, 3))", uopc_tensor_empty(&t, UOPC_F32, 2, DIMS(2, 3), &err), &err);
  CHECK_VIEW("np.zeros((2, 3))", &t, 2, DIMS(2, 3), DIMS(3, 1), 0);
  CHECK_VALUES("np.zeros((2, 3))", &t, 0, 0, 0, 0, 0, 0);
  assert_true(uopc_tensor_is_contiguous(&t));
  assert_true(uopc_tensor_is_aligned(&t, 64));
  CHECK_I64("np.zeros((2, 3))", "storage refs", uopc_tensor_storage_refs(&t), 1);
  uopc_tensor_release(&t);
  assert_null(t.storage);
  /* np.zeros(()) has one element */
  CHECK_OK("np.zeros(())", uopc_tensor_empty(&t, UOPC_F64, 0, NULL, &err), &err);
  CHECK_VALUES("np.zeros(())", &t, 0);
  uopc_tensor_release(&t);
}

static void test_tensor_empty_with_zero_dim_is_empty_and_contiguous(void **state) {
  (void)state;
  uopc_tensor t;
  uopc_error err;
  /* np.zeros((0, 3)): no elements; packed strides (3, 1) count the 0 as 1. 0 bytes, yet not out of
   * memory where aligned_alloc answers NULL for 0 (this file's, without ASan) */
  CHECK_OK("np.zeros((0, 3))", uopc_tensor_empty(&t, UOPC_F64, 2, DIMS(0, 3), &err), &err);
  CHECK_VIEW("np.zeros((0, 3))", &t, 2, DIMS(0, 3), DIMS(3, 1), 0);
  CHECK_I64("np.zeros((0, 3)).size", "numel", uopc_tensor_numel(&t), 0);
  assert_true(uopc_tensor_is_contiguous(&t));
  assert_non_null(uopc_tensor_data(&t));
  uopc_tensor_release(&t);
}

static void test_tensor_empty_rejects_bad_arguments(void **state) {
  (void)state;
  uopc_tensor t;
  uopc_error err;
  int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  CHECK_CODE("rank 9", uopc_tensor_empty(&t, UOPC_F32, 9, nine, &err), UOPC_E_INVALID, &err);
  CHECK_MESSAGE("rank 9", &err, "rank 9 outside [0, 8]");
  CHECK_CODE("rank -1", uopc_tensor_empty(&t, UOPC_F32, -1, nine, &err), UOPC_E_INVALID, &err);
  CHECK_CODE("shape NULL", uopc_tensor_empty(&t, UOPC_F32, 2, NULL, &err), UOPC_E_INVALID, &err);
  CHECK_CODE("np.zeros((2, -1))", uopc_tensor_empty(&t, UOPC_F32, 2, DIMS(2, -1), &err),
             UOPC_E_INVALID, &err);
  CHECK_MESSAGE("np.zeros((2, -1))", &err, "dim 1 = -1 is negative in shape (2, -1)");
  CHECK_CODE("dtype 9", uopc_tensor_empty(&t, (uopc_dtype)9, 1, DIMS(2), &err), UOPC_E_INVALID, &err);
  CHECK_MESSAGE("dtype 9", &err, "dtype 9");
  CHECK_CODE("out NULL", uopc_tensor_empty(NULL, UOPC_F32, 1, DIMS(2), &err), UOPC_E_INVALID, &err);
  assert_string_equal(err.message, "out is NULL");
  assert_string_equal(err.where, "uopc_tensor_empty");
  assert_null(t.storage);  /* a failed call leaves a released tensor */
  uopc_tensor_release(&t);
}

static void test_tensor_empty_rejects_overflowing_shapes(void **state) {
  (void)state;
  uopc_tensor t;
  uopc_error err;
  const int64_t big = INT64_C(1) << 62;
  /* 2^62 * 4 elements overflow int64 before the item size is counted */
  CHECK_CODE("np.zeros((2**62, 4))", uopc_tensor_empty(&t, UOPC_I32, 2, DIMS(big, 4), &err),
             UOPC_E_OVERFLOW, &err);
  CHECK_MESSAGE("np.zeros((2**62, 4))", &err, "(4611686018427387904, 4)");
  /* 2^60 elements fit, 2^63 bytes of f64 do not */
  CHECK_CODE("np.zeros(2**60)", uopc_tensor_empty(&t, UOPC_F64, 1, DIMS(big / 4), &err),
             UOPC_E_OVERFLOW, &err);
  CHECK_CODE("np.zeros((INT64_MAX, 2))", uopc_tensor_empty(&t, UOPC_F32, 2, DIMS(INT64_MAX, 2), &err),
             UOPC_E_OVERFLOW, &err);
  /* NumPy refuses np.zeros((0, 2**62, 4), np.float32) too ("array is too big") */
  CHECK_CODE("np.zeros((0, 2**62, 4))", uopc_tensor_empty(&t, UOPC_F32, 3, DIMS(0, big, 4), &err),
             UOPC_E_OVERFLOW, &err);
  assert_null(t.storage);
}

/* Bytes the allocator will not give (2^62 of them: the shape fits int64, the memory does not)
 * are UOPC_E_NOMEM saying how many, for which shape; out stays released. */
static void test_tensor_empty_beyond_memory_is_nomem(void **state) {
  (void)state;
#ifdef __SANITIZE_ADDRESS__
  testutil_skip_under_asan("an allocator that answers NULL for 2^62 bytes");
#else
  uopc_tensor t;
  uopc_error err = {0};
  CHECK_CODE("np.zeros(2**60, np.float32)", uopc_tensor_empty(&t, UOPC_F32, 1, DIMS(INT64_C(1) << 60), &err),
             UOPC_E_NOMEM, &err);
  assert_string_equal(err.message, "out of memory for 4611686018427387904 bytes of shape (1152921504606846976,)");
  assert_null(t.storage);
#endif
}

/* No memory for the storage header: UOPC_E_NOMEM, out released, and the bytes already allocated
 * for the elements freed (once). */
static void test_tensor_empty_without_memory_for_the_header_frees_the_bytes(void **state) {
  (void)state;
#ifdef __SANITIZE_ADDRESS__
  testutil_skip_under_asan("glibc's malloc, made to fail");
#else
  testutil_skip_unless_allocation_fails();
  uopc_tensor t;
  uopc_error err = {0};
  fail_next_malloc = 1;
  int rc = uopc_tensor_empty(&t, UOPC_F32, 2, DIMS(2, 3), &err);
  fail_next_malloc = 0;
  CHECK_CODE("np.zeros((2, 3)) without memory", rc, UOPC_E_NOMEM, &err);
  assert_string_equal(err.message, "out of memory for a storage header");
  assert_null(t.storage);
  assert_non_null(last_aligned);
  CHECK_I64("np.zeros((2, 3)) without memory", "frees of the elements' bytes", last_aligned_frees, 1);
  last_aligned = NULL;
#endif
}

/* ---- slice --------------------------------------------------------------------- */

static void test_tensor_slice_full_reverse_matches_numpy(void **state) {
  (void)state;
  uopc_tensor x, v;
  uopc_error err;
  arange(&x, UOPC_F64, 1, DIMS(10));
  /* np.arange(10)[::-1]: strides (-8,) bytes, data at element 9 */
  CHECK_OK("x[::-1]", uopc_tensor_slice(&v, &x, 0, NONE, NONE, -1, &err), &err);
  CHECK_VIEW("x[::-1]", &v, 1, DIMS(10), DIMS(-1), 9);
  CHECK_VALUES("x[::-1]", &v, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  assert_false(uopc_tensor_is_contiguous(&v));
  uopc_tensor_release(&v);
  uopc_tensor_release(&x);
}

static void test_tensor_slice_negative_step_matches_numpy(void **state) {
  (void)state;
  uopc_tensor x, v;
  uopc_error err;
  arange(&x, UOPC_F64, 1, DIMS(10));
  /* np.arange(10)[5:1:-2] == [5, 3] */
  CHECK_OK("x[5:1:-2]", uopc_tensor_slice(&v, &x, 0, 5, 1, -2, &err), &err);
  CHECK_VIEW("x[5:1:-2]", &v, 1, DIMS(2), DIMS(-2), 5);
  CHECK_VALUES("x[5:1:-2]", &v, 5, 3);
  uopc_tensor_release(&v);
  uopc_tensor_release(&x);
}

static void test_tensor_slice_negative_start_counts_from_end(void **state) {
  (void)state;
  uopc_tensor x, v;
  uopc_error err;
  arange(&x, UOPC_F64, 1, DIMS(10));
  /* np.arange(10)[-3:] == [7, 8, 9] */
  CHECK_OK("x[-3:]", uopc_tensor_slice(&v, &x, 0, -3, NONE, NONE, &err), &err);
  CHECK_VIEW("x[-3:]", &v, 1, DIMS(3), DIMS(1), 7);
  CHECK_VALUES("x[-3:]", &v, 7, 8, 9);
  uopc_tensor_release(&v);
  uopc_tensor_release(&x);
}

static void test_tensor_slice_past_end_is_empty_and_keeps_offset(void **state) {
  (void)state;
  uopc_tensor y, v;
  uopc_error err;
  arange(&y, UOPC_F64, 1, DIMS(5));
  /* np.arange(5)[10:20]: slice(10, 20).indices(5) == (5, 5, 1), empty; NumPy
   * leaves the data pointer at element 0 too */
  CHECK_OK("y[10:20]", uopc_tensor_slice(&v, &y, 0, 10, 20, 1, &err), &err);
  CHECK_VIEW("y[10:20]", &v, 1, DIMS(0), DIMS(1), 0);
  CHECK_I64("y[10:20].size", "numel", uopc_tensor_numel(&v), 0);
  assert_true(uopc_tensor_is_contiguous(&v));
  uopc_tensor_release(&v);
  /* np.arange(5)[4:1]: start 4 but empty, so the offset stays 0 */
  CHECK_OK("y[4:1]", uopc_tensor_slice(&v, &y, 0, 4, 1, NONE, &err), &err);
  CHECK_VIEW("y[4:1]", &v, 1, DIMS(0), DIMS(1), 0);
  uopc_tensor_release(&v);
  uopc_tensor_release(&y);
}

static void test_tensor_slice_clamps_out_of_range_bounds_like_python(void **state) {
  (void)state;
  uopc_tensor y, v;
  uopc_error err;
  arange(&y, UOPC_F64, 1, DIMS(5));
  /* slice(-100, 100).indices(5) == (0, 5, 1) */
  CHECK_OK("y[-100:100]", uopc_tensor_slice(&v, &y, 0, -100, 100, 1, &err), &err);
  CHECK_VIEW("y[-100:100]", &v, 1, DIMS(5), DIMS(1), 0);
  uopc_tensor_release(&v);
  /* slice(100, -100, -1).indices(5) == (4, -1, -1): all five, reversed */
  CHECK_OK("y[100:-100:-1]", uopc_tensor_slice(&v, &y, 0, 100, -100, -1, &err), &err);
  CHECK_VIEW("y[100:-100:-1]", &v, 1, DIMS(5), DIMS(-1), 4);
  CHECK_VALUES("y[100:-100:-1]", &v, 4, 3, 2, 1, 0);
  uopc_tensor_release(&v);
  /* slice(-100, None, -1).indices(5) == (-1, -1, -1): empty */
  CHECK_OK("y[-100::-1]", uopc_tensor_slice(&v, &y, 0, -100, NONE, -1, &err), &err);
  CHECK_VIEW("y[-100::-1]", &v, 1, DIMS(0), DIMS(-1), 0);
  uopc_tensor_release(&v);
  uopc_tensor_release(&y);
}

static void test_tensor_slice_step_along_axis_1_of_2d(void **state) {
  (void)state;
  uopc_tensor a, v;
  uopc_error err;
  arange(&a, UOPC_F64, 2, DIMS(3, 4));
  /* np.arange(12).reshape(3, 4)[:, ::3]: columns 0 and 3 */
  CHECK_OK("a[:, ::3]", uopc_tensor_slice(&v, &a, 1, NONE, NONE, 3, &err), &err);
  CHECK_VIEW("a[:, ::3]", &v, 2, DIMS(3, 2), DIMS(4, 3), 0);
  CHECK_VALUES("a[:, ::3]", &v, 0, 3, 4, 7, 8, 11);
  uopc_tensor_release(&v);
  uopc_tensor_release(&a);
}

static void test_tensor_slice_of_slice_composes(void **state) {
  (void)state;
  uopc_tensor x, s, v;
  uopc_error err;
  arange(&x, UOPC_F64, 1, DIMS(10));
  /* np.arange(10)[2:9][::-2] == [8, 6, 4, 2] */
  CHECK_OK("x[2:9]", uopc_tensor_slice(&s, &x, 0, 2, 9, NONE, &err), &err);
  CHECK_OK("x[2:9][::-2]", uopc_tensor_slice(&v, &s, 0, NONE, NONE, -2, &err), &err);
  CHECK_VIEW("x[2:9][::-2]", &v, 1, DIMS(4), DIMS(-2), 8);
  CHECK_VALUES("x[2:9][::-2]", &v, 8, 6, 4, 2);
  uopc_tensor_release(&v);
  uopc_tensor_release(&s);
  uopc_tensor_release(&x);
}

static void test_tensor_slice_huge_step_keeps_one_element(void **state) {
  (void)state;
  uopc_tensor a, v;
  uopc_error err;
  arange(&a, UOPC_F64, 2, DIMS(3, 4));
  /* a[::2**63-1] is a[0:1]; stride 4 * step overflows, and a one-element dim
   * never uses its stride, so the call succeeds */
  CHECK_OK("a[::2**63-1]", uopc_tensor_slice(&v, &a, 0, NONE, NONE, INT64_MAX, &err), &err);
  CHECK_I64("a[::2**63-1]", "shape[0]", v.shape[0], 1);
  CHECK_I64("a[::2**63-1]", "offset", v.offset, 0);
  CHECK_VALUES("a[::2**63-1]", &v, 0, 1, 2, 3);
  uopc_tensor_release(&v);
  /* a[::-(2**63-1)] is a[2:3] */
  CHECK_OK("a[::-(2**63-1)]", uopc_tensor_slice(&v, &a, 0, NONE, NONE, -INT64_MAX, &err), &err);
  CHECK_I64("a[::-(2**63-1)]", "offset", v.offset, 8);
  CHECK_VALUES("a[::-(2**63-1)]", &v, 8, 9, 10, 11);
  uopc_tensor_release(&v);
  uopc_tensor_release(&a);
}

static void test_tensor_slice_rejects_step_zero_and_bad_axis(void **state) {
  (void)state;
  uopc_tensor a, v;
  uopc_error err;
  arange(&a, UOPC_F64, 2, DIMS(3, 4));
  /* a[::0] raises ValueError: slice step cannot be zero */
  CHECK_CODE("a[::0]", uopc_tensor_slice(&v, &a, 0, NONE, NONE, 0, &err), UOPC_E_INVALID, &err);
  CHECK_MESSAGE("a[::0]", &err, "step 0");
  assert_null(v.storage);
  CHECK_CODE("slice axis 2 of rank 2", uopc_tensor_slice(&v, &a, 2, 0, 1, 1, &err),
             UOPC_E_INVALID, &err);
  CHECK_MESSAGE("slice axis 2 of rank 2", &err, "slice axis 2 outside [0, 2) for a rank-2 tensor");
  CHECK_CODE("slice axis -1", uopc_tensor_slice(&v, &a, -1, 0, 1, 1, &err), UOPC_E_INVALID, &err);
  CHECK_I64("failed slices", "storage refs", uopc_tensor_storage_refs(&a), 1);
  uopc_tensor_release(&a);
}

/* out is cleared whichever side of x it lies on in memory: here below it. */
static void test_tensor_failed_view_clears_an_out_at_a_lower_address_than_x(void **state) {
  (void)state;
  uopc_tensor pair[2], zero;
  uopc_error err;
  arange(&pair[1], UOPC_F64, 1, DIMS(4));
  memset(&pair[0], 0xab, sizeof pair[0]);  /* an uninitialised out */
  memset(&zero, 0, sizeof zero);
  CHECK_CODE("a[::0]", uopc_tensor_slice(&pair[0], &pair[1], 0, NONE, NONE, 0, &err), UOPC_E_INVALID, &err);
  assert_memory_equal(&pair[0], &zero, sizeof zero);
  CHECK_I64("a failed slice", "storage refs", uopc_tensor_storage_refs(&pair[1]), 1);
  uopc_tensor_release(&pair[1]);
}

static void test_tensor_failed_view_leaves_out_released(void **state) {
  (void)state;
  uopc_tensor a, v;
  uopc_error err;
  arange(&a, UOPC_F64, 1, DIMS(4));
  memset(&v, 0xab, sizeof v);  /* an uninitialised out */
  CHECK_CODE("a[::0]", uopc_tensor_slice(&v, &a, 0, NONE, NONE, 0, &err), UOPC_E_INVALID, &err);
  assert_null(v.storage);
  uopc_tensor_release(&v);  /* safe: nothing to drop */
  uopc_tensor_release(&v);
  CHECK_CODE("released x", uopc_tensor_slice(&v, &v, 0, 0, 1, 1, &err), UOPC_E_INVALID, &err);
  assert_string_equal(err.message, "x is a released tensor");
  assert_string_equal(err.where, "uopc_tensor_slice");
  uopc_tensor_release(&a);
}

/* ---- select, transpose, permute ---------------------------------------------------- */

/* A hand-built x (the struct is public; ctypes builds one too) whose rank is out of range, or whose
 * offset arithmetic would overflow int64, is refused with the numbers, and out is left released. */
static void test_tensor_views_of_a_hand_built_tensor_refuse_bad_rank_and_overflow(void **state) {
  (void)state;
  uopc_tensor a, x, v;
  uopc_error err;
  arange(&a, UOPC_F32, 1, DIMS(4));
  x = a;   /* a copy without a reference of its own: never released */
  x.rank = UOPC_MAX_RANK + 1;
  CHECK_CODE("rank 9", uopc_tensor_slice(&v, &x, 0, 0, 2, 1, &err), UOPC_E_INVALID, &err);
  assert_string_equal(err.message, "x has rank 9 outside [0, 8]");
  x.rank = -1;
  CHECK_CODE("rank -1", uopc_tensor_transpose(&v, &x, 0, 0, &err), UOPC_E_INVALID, &err);
  assert_string_equal(err.message, "x has rank -1 outside [0, 8]");
  assert_null(v.storage);
  x.rank = 1;
  x.strides[0] = INT64_C(1) << 62;
  /* index 2 * stride 2^62 is 2^63 */
  CHECK_CODE("x[2], stride 2**62", uopc_tensor_select(&v, &x, 0, 2, &err), UOPC_E_OVERFLOW, &err);
  assert_string_equal(err.message, "offset 0 + index 2 * stride 4611686018427387904 overflows");
  /* the step fits, the offset plus it does not */
  x.strides[0] = 1;
  x.offset = INT64_MAX;
  CHECK_CODE("x[1], offset INT64_MAX", uopc_tensor_select(&v, &x, 0, 1, &err), UOPC_E_OVERFLOW, &err);
  assert_string_equal(err.message, "offset 9223372036854775807 + index 1 * stride 1 overflows");
  CHECK_CODE("x[1:3], offset INT64_MAX", uopc_tensor_slice(&v, &x, 0, 1, 3, 1, &err), UOPC_E_OVERFLOW, &err);
  assert_string_equal(err.message, "offset 9223372036854775807 + index 1 * stride 1 overflows");
  /* x[0:4:2] with stride 2^62: two elements 2^63 apart */
  x.offset = 0;
  x.strides[0] = INT64_C(1) << 62;
  CHECK_CODE("x[::2], stride 2**62", uopc_tensor_slice(&v, &x, 0, 0, 4, 2, &err), UOPC_E_OVERFLOW, &err);
  assert_string_equal(err.message, "stride 4611686018427387904 * step 2 along axis 0 overflows int64");
  assert_null(v.storage);
  CHECK_I64("refused views", "refs of a", uopc_tensor_storage_refs(&a), 1);
  uopc_tensor_release(&a);
}

static void test_tensor_select_negative_index_counts_from_end(void **state) {
  (void)state;
  uopc_tensor a, v;
  uopc_error err;
  arange(&a, UOPC_F64, 2, DIMS(3, 4));
  /* np.arange(12).reshape(3, 4)[-1] == [8, 9, 10, 11] */
  CHECK_OK("a[-1]", uopc_tensor_select(&v, &a, 0, -1, &err), &err);
  CHECK_VIEW("a[-1]", &v, 1, DIMS(4), DIMS(1), 8);
  CHECK_VALUES("a[-1]", &v, 8, 9, 10, 11);
  uopc_tensor_release(&v);
  /* a[:, -2] == [2, 6, 10] */
  CHECK_OK("a[:, -2]", uopc_tensor_select(&v, &a, 1, -2, &err), &err);
  CHECK_VIEW("a[:, -2]", &v, 1, DIMS(3), DIMS(4), 2);
  CHECK_VALUES("a[:, -2]", &v, 2, 6, 10);
  uopc_tensor_release(&v);
  uopc_tensor_release(&a);
}

/* a[1][2] == 6, a 0-d view. The axes each select drops read 0, as in a tensor made with that
 * rank: shape and strides past the rank are 0 in every tensor this library makes (tensor.h). */
static void test_tensor_select_twice_gives_rank_0(void **state) {
  (void)state;
  uopc_tensor a, r, v;
  uopc_error err;
  arange(&a, UOPC_F64, 2, DIMS(3, 4));
  CHECK_OK("a[1]", uopc_tensor_select(&r, &a, 0, 1, &err), &err);
  CHECK_VIEW("a[1]", &r, 1, DIMS(4), DIMS(1), 4);
  CHECK_I64("a[1]", "shape[1]", r.shape[1], 0);
  CHECK_I64("a[1]", "strides[1]", r.strides[1], 0);
  CHECK_OK("a[1][2]", uopc_tensor_select(&v, &r, 0, 2, &err), &err);
  CHECK_I64("a[1][2]", "shape[0]", v.shape[0], 0);
  CHECK_I64("a[1][2]", "strides[0]", v.strides[0], 0);
  CHECK_VIEW("a[1][2]", &v, 0, NULL, NULL, 6);
  CHECK_VALUES("a[1][2]", &v, 6);
  assert_true(uopc_tensor_is_contiguous(&v));
  uopc_tensor_release(&v);
  uopc_tensor_release(&r);
  uopc_tensor_release(&a);
}

static void test_tensor_select_out_of_range_is_bounds_error(void **state) {
  (void)state;
  uopc_tensor a, v;
  uopc_error err;
  arange(&a, UOPC_F64, 2, DIMS(3, 4));
  /* a[3] and a[-4] raise IndexError for axis 0 of size 3 */
  CHECK_CODE("a[3]", uopc_tensor_select(&v, &a, 0, 3, &err), UOPC_E_BOUNDS, &err);
  CHECK_MESSAGE("a[3]", &err, "index 3 outside [-3, 3)");
  CHECK_CODE("a[-4]", uopc_tensor_select(&v, &a, 0, -4, &err), UOPC_E_BOUNDS, &err);
  CHECK_MESSAGE("a[-4]", &err, "index -4 outside [-3, 3)");
  CHECK_CODE("a[:, 4]", uopc_tensor_select(&v, &a, 1, 4, &err), UOPC_E_BOUNDS, &err);
  CHECK_CODE("select axis 2", uopc_tensor_select(&v, &a, 2, 0, &err), UOPC_E_INVALID, &err);
  uopc_tensor_release(&a);
}

static void test_tensor_transpose_swaps_shape_and_strides(void **state) {
  (void)state;
  uopc_tensor b, v;
  uopc_error err;
  arange(&b, UOPC_F64, 3, DIMS(2, 3, 4));
  /* np.arange(24).reshape(2, 3, 4).swapaxes(0, 2): strides (1, 4, 12) */
  CHECK_OK("b.swapaxes(0, 2)", uopc_tensor_transpose(&v, &b, 0, 2, &err), &err);
  CHECK_VIEW("b.swapaxes(0, 2)", &v, 3, DIMS(4, 3, 2), DIMS(1, 4, 12), 0);
  CHECK_VALUES("b.swapaxes(0, 2)", &v, 0, 12, 4, 16, 8, 20, 1, 13, 5, 17, 9, 21,
               2, 14, 6, 18, 10, 22, 3, 15, 7, 19, 11, 23);
  uopc_tensor_release(&v);
  uopc_tensor_release(&b);
}

static void test_tensor_permute_reorders_axes(void **state) {
  (void)state;
  uopc_tensor b, v;
  uopc_error err;
  arange(&b, UOPC_F64, 3, DIMS(2, 3, 4));
  /* b.transpose(1, 2, 0): out[i, j, k] = b[k, i, j] = 12k + 4i + j */
  CHECK_OK("b.transpose(1, 2, 0)", uopc_tensor_permute(&v, &b, (const int[]){1, 2, 0}, &err), &err);
  CHECK_VIEW("b.transpose(1, 2, 0)", &v, 3, DIMS(3, 4, 2), DIMS(4, 1, 12), 0);
  CHECK_VALUES("b.transpose(1, 2, 0)", &v, 0, 12, 1, 13, 2, 14, 3, 15, 4, 16, 5, 17,
               6, 18, 7, 19, 8, 20, 9, 21, 10, 22, 11, 23);
  uopc_tensor_release(&v);
  uopc_tensor_release(&b);
}

static void test_tensor_permute_rejects_bad_perm(void **state) {
  (void)state;
  uopc_tensor b, v;
  uopc_error err;
  arange(&b, UOPC_F64, 3, DIMS(2, 3, 4));
  /* b.transpose(0, 0, 1): "repeated axis in transpose" */
  CHECK_CODE("b.transpose(0, 0, 1)", uopc_tensor_permute(&v, &b, (const int[]){0, 0, 1}, &err),
             UOPC_E_INVALID, &err);
  CHECK_MESSAGE("b.transpose(0, 0, 1)", &err, "perm[1] = 0 repeats an axis");
  CHECK_CODE("b.transpose(0, 1, 3)", uopc_tensor_permute(&v, &b, (const int[]){0, 1, 3}, &err),
             UOPC_E_INVALID, &err);
  CHECK_MESSAGE("b.transpose(0, 1, 3)", &err, "perm[2] = 3 outside [0, 3)");
  CHECK_CODE("b.swapaxes(0, 3)", uopc_tensor_transpose(&v, &b, 0, 3, &err), UOPC_E_INVALID, &err);
  CHECK_CODE("b.transpose(NULL)", uopc_tensor_permute(&v, &b, NULL, &err), UOPC_E_INVALID, &err);
  CHECK_MESSAGE("b.transpose(NULL)", &err, "perm is NULL for a rank-3 tensor");
  CHECK_I64("failed permutes", "storage refs", uopc_tensor_storage_refs(&b), 1);
  uopc_tensor_release(&b);
  /* a scalar has no axis to name: NULL is its (empty) permutation */
  uopc_tensor s;
  arange(&s, UOPC_F64, 0, NULL);
  CHECK_OK("s.transpose()", uopc_tensor_permute(&v, &s, NULL, &err), &err);
  CHECK_I64("s.transpose()", "rank", v.rank, 0);
  uopc_tensor_release(&v);
  uopc_tensor_release(&s);
}

/* ---- reshape ------------------------------------------------------------------------ */

static void test_tensor_reshape_contiguous_is_view(void **state) {
  (void)state;
  uopc_tensor x, v;
  uopc_error err;
  arange(&x, UOPC_F64, 1, DIMS(12));
  /* np.arange(12).reshape(3, 4) shares x's memory */
  CHECK_OK("x.reshape(3, 4)", uopc_tensor_reshape(&v, &x, 2, DIMS(3, 4), &err), &err);
  CHECK_VIEW("x.reshape(3, 4)", &v, 2, DIMS(3, 4), DIMS(4, 1), 0);
  assert_ptr_equal(uopc_tensor_data(&v), uopc_tensor_data(&x));
  CHECK_I64("x.reshape(3, 4)", "storage refs", uopc_tensor_storage_refs(&x), 2);
  uopc_tensor_release(&v);
  uopc_tensor_release(&x);
}

static void test_tensor_reshape_infers_minus_one(void **state) {
  (void)state;
  uopc_tensor x, e, v;
  uopc_error err;
  arange(&x, UOPC_F64, 1, DIMS(12));
  /* x.reshape(2, -1, 3).shape == (2, 2, 3) */
  CHECK_OK("x.reshape(2, -1, 3)", uopc_tensor_reshape(&v, &x, 3, DIMS(2, -1, 3), &err), &err);
  CHECK_VIEW("x.reshape(2, -1, 3)", &v, 3, DIMS(2, 2, 3), DIMS(6, 3, 1), 0);
  uopc_tensor_release(&v);
  CHECK_CODE("x.reshape(-1, -1)", uopc_tensor_reshape(&v, &x, 2, DIMS(-1, -1), &err),
             UOPC_E_INVALID, &err);
  CHECK_CODE("x.reshape(5, -1)", uopc_tensor_reshape(&v, &x, 2, DIMS(5, -1), &err),
             UOPC_E_INVALID, &err);
  CHECK_MESSAGE("x.reshape(5, -1)", &err, "cannot reshape 12 elements of shape (12,) into shape (5, -1)");
  CHECK_CODE("x.reshape(5, 3)", uopc_tensor_reshape(&v, &x, 2, DIMS(5, 3), &err), UOPC_E_INVALID, &err);
  CHECK_CODE("x.reshape(-2, 6)", uopc_tensor_reshape(&v, &x, 2, DIMS(-2, 6), &err), UOPC_E_INVALID, &err);
  /* np.zeros((0, 3)).reshape(-1, 3) works; .reshape(0, -1) is ambiguous */
  CHECK_OK("np.zeros((0, 3))", uopc_tensor_empty(&e, UOPC_F64, 2, DIMS(0, 3), &err), &err);
  CHECK_OK("z.reshape(-1, 3)", uopc_tensor_reshape(&v, &e, 2, DIMS(-1, 3), &err), &err);
  CHECK_VIEW("z.reshape(-1, 3)", &v, 2, DIMS(0, 3), DIMS(3, 1), 0);
  uopc_tensor_release(&v);
  CHECK_CODE("z.reshape(0, -1)", uopc_tensor_reshape(&v, &e, 2, DIMS(0, -1), &err), UOPC_E_INVALID, &err);
  uopc_tensor_release(&e);
  uopc_tensor_release(&x);
}

static void test_tensor_reshape_of_transpose_needs_copy(void **state) {
  (void)state;
  uopc_tensor a, t, v;
  uopc_error err;
  arange(&a, UOPC_F64, 2, DIMS(3, 4));
  /* a.T.reshape(12) is a copy in NumPy (np.shares_memory is False) */
  CHECK_OK("a.T", uopc_tensor_transpose(&t, &a, 0, 1, &err), &err);
  CHECK_CODE("a.T.reshape(12)", uopc_tensor_reshape(&v, &t, 1, DIMS(12), &err), UOPC_E_LAYOUT, &err);
  CHECK_MESSAGE("a.T.reshape(12)", &err, "a copy is needed");
  assert_null(v.storage);
  uopc_tensor_release(&t);
  uopc_tensor_release(&a);
}

static void test_tensor_reshape_of_strided_slice_splits_as_view(void **state) {
  (void)state;
  uopc_tensor c, d, v;
  uopc_error err;
  arange(&c, UOPC_F64, 2, DIMS(4, 5));
  /* d = np.arange(20).reshape(4, 5)[:, ::2]: strides (5, 2) */
  CHECK_OK("d = c[:, ::2]", uopc_tensor_slice(&d, &c, 1, NONE, NONE, 2, &err), &err);
  /* d.reshape(2, 2, 3) splits only axis 0: NumPy strides (80, 40, 16) bytes */
  CHECK_OK("d.reshape(2, 2, 3)", uopc_tensor_reshape(&v, &d, 3, DIMS(2, 2, 3), &err), &err);
  CHECK_VIEW("d.reshape(2, 2, 3)", &v, 3, DIMS(2, 2, 3), DIMS(10, 5, 2), 0);
  CHECK_VALUES("d.reshape(2, 2, 3)", &v, 0, 2, 4, 5, 7, 9, 10, 12, 14, 15, 17, 19);
  uopc_tensor_release(&v);
  /* d.reshape(4, 3, 1): a trailing 1 takes the last stride, (5, 2, 2) */
  CHECK_OK("d.reshape(4, 3, 1)", uopc_tensor_reshape(&v, &d, 3, DIMS(4, 3, 1), &err), &err);
  CHECK_VIEW("d.reshape(4, 3, 1)", &v, 3, DIMS(4, 3, 1), DIMS(5, 2, 2), 0);
  uopc_tensor_release(&v);
  /* d.reshape(1, 4, 3): a leading 1 is packed above axis 0, (20, 5, 2) */
  CHECK_OK("d.reshape(1, 4, 3)", uopc_tensor_reshape(&v, &d, 3, DIMS(1, 4, 3), &err), &err);
  CHECK_VIEW("d.reshape(1, 4, 3)", &v, 3, DIMS(1, 4, 3), DIMS(20, 5, 2), 0);
  uopc_tensor_release(&v);
  /* d.reshape(12) would merge rows 5 apart with columns 2 apart: a copy */
  CHECK_CODE("d.reshape(12)", uopc_tensor_reshape(&v, &d, 1, DIMS(12), &err), UOPC_E_LAYOUT, &err);
  uopc_tensor_release(&d);
  uopc_tensor_release(&c);
}

/* Rows padded, each row packed: d = np.arange(40).reshape(2, 5, 4)[:, :3] has strides (20, 4, 1).
 * d.reshape(2, 12) merges the packed dims of each row as a view, strides (20, 1); merging across
 * the padding, d.reshape(6, 4), needs a copy. */
static void test_tensor_reshape_of_row_padded_slice_merges_each_rows_packed_dims(void **state) {
  (void)state;
  uopc_tensor c, d, v;
  uopc_error err;
  arange(&c, UOPC_F64, 3, DIMS(2, 5, 4));
  CHECK_OK("d = c[:, :3]", uopc_tensor_slice(&d, &c, 1, NONE, 3, NONE, &err), &err);
  CHECK_VIEW("d = c[:, :3]", &d, 3, DIMS(2, 3, 4), DIMS(20, 4, 1), 0);
  CHECK_OK("d.reshape(2, 12)", uopc_tensor_reshape(&v, &d, 2, DIMS(2, 12), &err), &err);
  CHECK_VIEW("d.reshape(2, 12)", &v, 2, DIMS(2, 12), DIMS(20, 1), 0);
  CHECK_VALUES("d.reshape(2, 12)", &v, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,
               20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31);
  uopc_tensor_release(&v);
  CHECK_CODE("d.reshape(6, 4)", uopc_tensor_reshape(&v, &d, 2, DIMS(6, 4), &err), UOPC_E_LAYOUT, &err);
  uopc_tensor_release(&d);
  uopc_tensor_release(&c);
}

static void test_tensor_reshape_of_offset_slice_keeps_offset(void **state) {
  (void)state;
  uopc_tensor c, d, v;
  uopc_error err;
  arange(&c, UOPC_F64, 2, DIMS(4, 5));
  /* d = c[1:, 1::2]: shape (3, 2), strides (5, 2), element 0 is c[1, 1] = 6 */
  CHECK_OK("c[1:]", uopc_tensor_slice(&v, &c, 0, 1, NONE, NONE, &err), &err);
  CHECK_OK("c[1:, 1::2]", uopc_tensor_slice(&d, &v, 1, 1, NONE, 2, &err), &err);
  uopc_tensor_release(&v);
  CHECK_VIEW("c[1:, 1::2]", &d, 2, DIMS(3, 2), DIMS(5, 2), 6);
  /* d.reshape(3, 1, 2): NumPy strides (40, 32, 16) bytes */
  CHECK_OK("d.reshape(3, 1, 2)", uopc_tensor_reshape(&v, &d, 3, DIMS(3, 1, 2), &err), &err);
  CHECK_VIEW("d.reshape(3, 1, 2)", &v, 3, DIMS(3, 1, 2), DIMS(5, 4, 2), 6);
  CHECK_VALUES("d.reshape(3, 1, 2)", &v, 6, 8, 11, 13, 16, 18);
  uopc_tensor_release(&v);
  uopc_tensor_release(&d);
  uopc_tensor_release(&c);
}

/* Size-1 dims are dropped before the runs are matched, whatever their stride (NumPy's too). */
static void test_tensor_reshape_ignores_a_unit_dims_stride(void **state) {
  (void)state;
  uopc_tensor a, t, s, v;
  uopc_error err;
  arange(&a, UOPC_F64, 2, DIMS(3, 2));
  /* s = np.arange(6).reshape(3, 2).T[0:1]: shape (1, 3), strides (1, 2), not contiguous */
  CHECK_OK("a.T", uopc_tensor_transpose(&t, &a, 0, 1, &err), &err);
  CHECK_OK("s = a.T[0:1]", uopc_tensor_slice(&s, &t, 0, 0, 1, 1, &err), &err);
  CHECK_VIEW("s = a.T[0:1]", &s, 2, DIMS(1, 3), DIMS(1, 2), 0);
  /* s.reshape(3) is a view, NumPy strides (16,) bytes: the 1's stride 1 is not 3 * 2, and no matter */
  CHECK_OK("s.reshape(3)", uopc_tensor_reshape(&v, &s, 1, DIMS(3), &err), &err);
  CHECK_VIEW("s.reshape(3)", &v, 1, DIMS(3), DIMS(2), 0);
  CHECK_VALUES("s.reshape(3)", &v, 0, 2, 4);
  uopc_tensor_release(&v);
  uopc_tensor_release(&s);
  uopc_tensor_release(&t);
  uopc_tensor_release(&a);
}

static void test_tensor_reshape_to_and_from_rank_0(void **state) {
  (void)state;
  uopc_tensor x, s, v, w;
  uopc_error err;
  arange(&x, UOPC_F64, 1, DIMS(5));
  /* x[3:4].reshape(()) is a 0-d view of element 3; .reshape(1, 1) again */
  CHECK_OK("x[3:4]", uopc_tensor_slice(&s, &x, 0, 3, 4, 1, &err), &err);
  CHECK_OK("x[3:4].reshape(())", uopc_tensor_reshape(&v, &s, 0, NULL, &err), &err);
  CHECK_VIEW("x[3:4].reshape(())", &v, 0, NULL, NULL, 3);
  CHECK_VALUES("x[3:4].reshape(())", &v, 3);
  CHECK_OK("x[3:4].reshape(()).reshape(1, 1)", uopc_tensor_reshape(&w, &v, 2, DIMS(1, 1), &err), &err);
  CHECK_VIEW("x[3:4].reshape(()).reshape(1, 1)", &w, 2, DIMS(1, 1), DIMS(1, 1), 3);
  uopc_tensor_release(&w);
  uopc_tensor_release(&v);
  uopc_tensor_release(&s);
  uopc_tensor_release(&x);
}

static void test_tensor_reshape_of_empty_keeps_packed_strides(void **state) {
  (void)state;
  uopc_tensor e, v;
  uopc_error err;
  /* np.zeros((0, 3)).reshape(3, 0).strides == (8, 8): (1, 1) elements */
  CHECK_OK("np.zeros((0, 3))", uopc_tensor_empty(&e, UOPC_F64, 2, DIMS(0, 3), &err), &err);
  CHECK_OK("z.reshape(3, 0)", uopc_tensor_reshape(&v, &e, 2, DIMS(3, 0), &err), &err);
  CHECK_VIEW("z.reshape(3, 0)", &v, 2, DIMS(3, 0), DIMS(1, 1), 0);
  uopc_tensor_release(&v);
  uopc_tensor_release(&e);
}

/* ---- sharing and release ----------------------------------------------------------- */

static void test_tensor_views_share_storage_until_the_last_release(void **state) {
  (void)state;
  uopc_tensor x, s, t, r, copy;
  uopc_error err;
  arange(&x, UOPC_F64, 2, DIMS(3, 4));
  CHECK_OK("x[1:]", uopc_tensor_slice(&s, &x, 0, 1, NONE, NONE, &err), &err);
  CHECK_OK("x.T", uopc_tensor_transpose(&t, &x, 0, 1, &err), &err);
  CHECK_OK("x.reshape(12)", uopc_tensor_reshape(&r, &x, 1, DIMS(12), &err), &err);
  uopc_tensor_retain(&copy, &s);
  CHECK_I64("x with four views", "storage refs", uopc_tensor_storage_refs(&x), 5);
  uopc_tensor_release(&x);
  CHECK_I64("views after x released", "storage refs", uopc_tensor_storage_refs(&s), 4);
  /* the storage outlives x: ASan would report a read after free here */
  CHECK_VALUES("x[1:] after x released", &s, 4, 5, 6, 7, 8, 9, 10, 11);
  uopc_tensor_release(&s);
  uopc_tensor_release(&t);
  uopc_tensor_release(&r);
  CHECK_I64("last view", "storage refs", uopc_tensor_storage_refs(&copy), 1);
  CHECK_VALUES("last view", &copy, 4, 5, 6, 7, 8, 9, 10, 11);
  uopc_tensor_release(&copy);  /* frees; LeakSanitizer checks that it did */
  assert_null(copy.storage);
  uopc_tensor_release(&copy);  /* a second release is harmless */
}

/* Without a sanitizer to see a leak: the release that drops the last reference frees the
 * storage's bytes and its header, each once, and none before it does; a wrapped buffer is
 * borrowed, so its release frees the header alone. */
static void test_tensor_last_release_frees_the_storage_once(void **state) {
  (void)state;
#ifdef __SANITIZE_ADDRESS__
  testutil_skip_under_asan("an interposed free");
#else
  if (!free_is_watched()) {
    print_message("  skipped: needs an interposed free, which valgrind replaces\n");
    skip();
  }
  uopc_tensor x, v, w;
  uopc_error err;
  double buf[4] = {0};
  arange(&x, UOPC_F64, 1, DIMS(4));
  CHECK_OK("x[1:]", uopc_tensor_slice(&v, &x, 0, 1, NONE, NONE, &err), &err);
  watched[0] = x.storage->base;
  watched[1] = x.storage;
  watched_frees[0] = watched_frees[1] = 0;
  uopc_tensor_release(&x);
  CHECK_I64("x released, x[1:] alive", "frees of the bytes", watched_frees[0], 0);
  CHECK_I64("x released, x[1:] alive", "frees of the header", watched_frees[1], 0);
  uopc_tensor_release(&v);
  CHECK_I64("last view released", "frees of the bytes", watched_frees[0], 1);
  CHECK_I64("last view released", "frees of the header", watched_frees[1], 1);
  CHECK_OK("wrap (4,)", uopc_tensor_wrap(&w, buf, UOPC_F64, 1, DIMS(4), DIMS(1), &err), &err);
  watched[0] = buf;
  watched[1] = w.storage;
  watched_frees[0] = watched_frees[1] = 0;
  uopc_tensor_release(&w);
  CHECK_I64("wrap released", "frees of the borrowed bytes", watched_frees[0], 0);
  CHECK_I64("wrap released", "frees of the header", watched_frees[1], 1);
  watched[0] = watched[1] = NULL;
#endif
}

/* No memory for a heap handle: NULL, with the error, rather than a write through NULL. */
static void test_tensor_wrap_new_without_memory_is_nomem(void **state) {
  (void)state;
#ifdef __SANITIZE_ADDRESS__
  testutil_skip_under_asan("glibc's malloc, made to fail");
#else
  testutil_skip_unless_allocation_fails();
  int32_t buf[6] = {0};
  uopc_error err = {0};
  fail_next_malloc = 1;
  uopc_tensor *t = uopc_tensor_wrap_new(buf, UOPC_I32, 1, DIMS(6), DIMS(1), &err);
  fail_next_malloc = 0;
  assert_null(t);
  assert_int_equal(err.code, UOPC_E_NOMEM);
  assert_string_equal(err.message, "out of memory for a tensor handle");
#endif
}

/* No memory for a wrap's storage header: UOPC_E_NOMEM from uopc_tensor_wrap, out released and the
 * caller's bytes untouched; through uopc_tensor_wrap_new (whose handle is the first malloc, the
 * header the second) NULL, the handle freed. */
static void test_tensor_wrap_without_memory_for_the_header_is_nomem(void **state) {
  (void)state;
#ifdef __SANITIZE_ADDRESS__
  testutil_skip_under_asan("glibc's malloc, made to fail");
#else
  testutil_skip_unless_allocation_fails();
  int32_t buf[6] = {1, 2, 3, 4, 5, 6};
  uopc_tensor t;
  uopc_error err = {0};
  fail_next_malloc = 1;
  int rc = uopc_tensor_wrap(&t, buf, UOPC_I32, 2, DIMS(2, 3), DIMS(3, 1), &err);
  fail_next_malloc = 0;
  CHECK_CODE("wrap (2, 3) without memory", rc, UOPC_E_NOMEM, &err);
  assert_string_equal(err.message, "out of memory for a storage header");
  assert_string_equal(err.where, "uopc_tensor_wrap");
  assert_null(t.storage);
  assert_int_equal(t.rank, 0);
  assert_int_equal(buf[0], 1);
  assert_int_equal(buf[5], 6);
  err = (uopc_error){0};
  fail_next_malloc = 2;
  uopc_tensor *h = uopc_tensor_wrap_new(buf, UOPC_I32, 2, DIMS(2, 3), DIMS(3, 1), &err);
  fail_next_malloc = 0;
  assert_null(h);
  assert_int_equal(err.code, UOPC_E_NOMEM);
  assert_string_equal(err.message, "out of memory for a storage header");
#endif
}

/* Retaining no tensor gives a released one (all zero bytes), whatever out held. */
static void test_tensor_retain_of_null_gives_a_released_tensor(void **state) {
  (void)state;
  uopc_tensor t, zero;
  memset(&t, 0xff, sizeof t);
  memset(&zero, 0, sizeof zero);
  uopc_tensor_retain(&t, NULL);
  assert_memory_equal(&t, &zero, sizeof t);
  uopc_tensor_release(&t);
}

static void test_tensor_release_of_zeroed_tensor_is_safe(void **state) {
  (void)state;
  uopc_tensor z = {0}, r;
  uopc_tensor_release(&z);
  uopc_tensor_release(NULL);
  uopc_tensor_retain(&r, &z);
  assert_null(r.storage);
  CHECK_I64("a zeroed tensor", "storage refs", uopc_tensor_storage_refs(&z), 0);
  assert_null(uopc_tensor_data(&z));
}

/* ---- wrap ------------------------------------------------------------------------- */

static void fill_iota(double *buf, int n) {
  for (int i = 0; i < n; i++) buf[i] = i;
}

/* The storage base is element 0's address less the offset. */
static const void *storage_base(const uopc_tensor *t) {
  return (const char *)uopc_tensor_data(t) - t->offset * (int64_t)uopc_dtype_size(t->dtype);
}

static void test_tensor_wrap_stack_buffer_with_negative_strides(void **state) {
  (void)state;
  double buf[12];
  uopc_tensor t;
  uopc_error err;
  fill_iota(buf, 12);
  /* a = buf.reshape(3, 4); a[::-1, ::-1]: element 0 is buf[11], the lowest
   * address buf[0], so the offset is 11 */
  CHECK_OK("a[::-1, ::-1]", uopc_tensor_wrap(&t, &buf[11], UOPC_F64, 2, DIMS(3, 4), DIMS(-4, -1), &err), &err);
  CHECK_VIEW("a[::-1, ::-1]", &t, 2, DIMS(3, 4), DIMS(-4, -1), 11);
  assert_ptr_equal(uopc_tensor_data(&t), &buf[11]);
  assert_ptr_equal(storage_base(&t), buf);
  CHECK_VALUES("a[::-1, ::-1]", &t, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  uopc_tensor_release(&t);  /* borrowed: not freed (ASan would catch a free of the stack) */
  /* a[::-1]: element 0 is buf[8] */
  CHECK_OK("a[::-1]", uopc_tensor_wrap(&t, &buf[8], UOPC_F64, 2, DIMS(3, 4), DIMS(-4, 1), &err), &err);
  CHECK_VIEW("a[::-1]", &t, 2, DIMS(3, 4), DIMS(-4, 1), 8);
  assert_ptr_equal(storage_base(&t), buf);
  CHECK_VALUES("a[::-1]", &t, 8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3);
  uopc_tensor_release(&t);
  /* a[:, ::-1]: element 0 is buf[3]; the rows reach up to buf[11] */
  CHECK_OK("a[:, ::-1]", uopc_tensor_wrap(&t, &buf[3], UOPC_F64, 2, DIMS(3, 4), DIMS(4, -1), &err), &err);
  CHECK_VIEW("a[:, ::-1]", &t, 2, DIMS(3, 4), DIMS(4, -1), 3);
  assert_ptr_equal(storage_base(&t), buf);
  CHECK_VALUES("a[:, ::-1]", &t, 3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8);
  uopc_tensor_release(&t);
}

static void test_tensor_wrap_allows_empty(void **state) {
  (void)state;
  double buf[4] = {0};
  uopc_tensor e, full;
  uopc_error err;
  /* np.empty((0, 4)) wrapped at buf: no bytes, element 0 stays at buf */
  CHECK_OK("wrap (0, 4)", uopc_tensor_wrap(&e, buf, UOPC_F64, 2, DIMS(0, 4), DIMS(4, 1), &err), &err);
  CHECK_VIEW("wrap (0, 4)", &e, 2, DIMS(0, 4), DIMS(4, 1), 0);
  CHECK_I64("wrap (0, 4)", "numel", uopc_tensor_numel(&e), 0);
  assert_ptr_equal(uopc_tensor_data(&e), buf);
  CHECK_OK("wrap (4,)", uopc_tensor_wrap(&full, buf, UOPC_F64, 1, DIMS(4), DIMS(1), &err), &err);
  assert_false(uopc_tensor_may_overlap(&e, &full));  /* an empty view reaches no byte */
  uopc_tensor_release(&full);
  uopc_tensor_release(&e);
  /* no byte to check either: an empty view may start where one f64 would run past the address space */
  void *top = (void *)(UINTPTR_MAX - 7);
  CHECK_OK("wrap (0,) at the top", uopc_tensor_wrap(&e, top, UOPC_F64, 1, DIMS(0), DIMS(1), &err), &err);
  CHECK_VIEW("wrap (0,) at the top", &e, 1, DIMS(0), DIMS(1), 0);
  assert_ptr_equal(uopc_tensor_data(&e), top);
  uopc_tensor_release(&e);
  CHECK_CODE("wrap (1,) at the top", uopc_tensor_wrap(&e, top, UOPC_F64, 1, DIMS(1), DIMS(1), &err),
             UOPC_E_OVERFLOW, &err);
}

static void test_tensor_wrap_rejects_overflowing_span(void **state) {
  (void)state;
  double buf[4] = {0};
  uopc_tensor t;
  uopc_error err;
  /* stride INT64_MAX over 3 elements reaches 2 * INT64_MAX */
  CHECK_CODE("strides (INT64_MAX,)", uopc_tensor_wrap(&t, buf, UOPC_F64, 1, DIMS(3), DIMS(INT64_MAX), &err),
             UOPC_E_OVERFLOW, &err);
  CHECK_CODE("strides (-INT64_MAX,)", uopc_tensor_wrap(&t, &buf[3], UOPC_F64, 1, DIMS(3), DIMS(-INT64_MAX), &err),
             UOPC_E_OVERFLOW, &err);
  /* 2^61 + 1 elements of 8 bytes between the ends: more than INT64_MAX bytes */
  CHECK_CODE("strides (2**61,)", uopc_tensor_wrap(&t, buf, UOPC_F64, 1, DIMS(2), DIMS(INT64_C(1) << 61), &err),
             UOPC_E_OVERFLOW, &err);
  /* each stride alone fits; the two ends together do not */
  CHECK_CODE("strides (2**62, -2**62)",
             uopc_tensor_wrap(&t, buf, UOPC_I32, 2, DIMS(2, 2), DIMS(INT64_C(1) << 62, -(INT64_C(1) << 62)), &err),
             UOPC_E_OVERFLOW, &err);
  CHECK_CODE("shape (2**62, 4)", uopc_tensor_wrap(&t, buf, UOPC_F64, 2, DIMS(INT64_C(1) << 62, 4), DIMS(4, 1), &err),
             UOPC_E_OVERFLOW, &err);
  assert_null(t.storage);
}

static void test_tensor_wrap_rejects_bad_arguments(void **state) {
  (void)state;
  double buf[4] = {0};
  uopc_tensor t;
  uopc_error err;
  CHECK_CODE("elem0 NULL", uopc_tensor_wrap(&t, NULL, UOPC_F64, 1, DIMS(4), DIMS(1), &err), UOPC_E_INVALID, &err);
  CHECK_CODE("strides NULL", uopc_tensor_wrap(&t, buf, UOPC_F64, 1, DIMS(4), NULL, &err), UOPC_E_INVALID, &err);
  CHECK_MESSAGE("strides NULL", &err, "strides is NULL for rank 1");
  CHECK_CODE("out NULL", uopc_tensor_wrap(NULL, buf, UOPC_F64, 1, DIMS(4), DIMS(1), &err), UOPC_E_INVALID, &err);
  assert_string_equal(err.message, "out is NULL");
  assert_string_equal(err.where, "uopc_tensor_wrap");
  CHECK_CODE("shape (-1,)", uopc_tensor_wrap(&t, buf, UOPC_F64, 1, DIMS(-1), DIMS(1), &err), UOPC_E_INVALID, &err);
  CHECK_CODE("dtype 5", uopc_tensor_wrap(&t, buf, (uopc_dtype)5, 1, DIMS(4), DIMS(1), &err), UOPC_E_INVALID, &err);
  assert_null(t.storage);
}

/* A scalar has no strides to give: rank 0 takes strides NULL (and shape NULL). */
static void test_tensor_wrap_of_a_scalar_needs_no_strides(void **state) {
  (void)state;
  double scalar = 2.5;
  uopc_tensor t;
  uopc_error err;
  CHECK_OK("wrap np.float64(2.5)", uopc_tensor_wrap(&t, &scalar, UOPC_F64, 0, NULL, NULL, &err), &err);
  CHECK_VIEW("wrap np.float64(2.5)", &t, 0, NULL, NULL, 0);
  assert_ptr_equal(uopc_tensor_data(&t), &scalar);
  CHECK_VALUES("wrap np.float64(2.5)", &t, 2.5);
  uopc_tensor_release(&t);
}

static void test_tensor_wrap_new_round_trips_through_a_heap_handle(void **state) {
  (void)state;
  int32_t buf[6] = {0, 1, 2, 3, 4, 5};
  uopc_error err;
  /* np.frombuffer(buf, np.int32).reshape(2, 3)[:, ::-1] */
  uopc_tensor *t = uopc_tensor_wrap_new(&buf[2], UOPC_I32, 2, DIMS(2, 3), DIMS(3, -1), &err);
  assert_non_null(t);
  CHECK_VIEW("wrap_new a[:, ::-1]", t, 2, DIMS(2, 3), DIMS(3, -1), 2);
  CHECK_VALUES("wrap_new a[:, ::-1]", t, 2, 1, 0, 5, 4, 3);
  uopc_tensor_free(t);
  uopc_tensor_free(NULL);
  /* a dtype from ctypes outside the enum */
  assert_null(uopc_tensor_wrap_new(buf, 7, 1, DIMS(6), DIMS(1), &err));
  CHECK_CODE("wrap_new dtype 7", err.code, UOPC_E_INVALID, &err);
  CHECK_MESSAGE("wrap_new dtype 7", &err, "dtype 7 outside [0, 4]");
  assert_null(uopc_tensor_wrap_new(buf, -1, 1, DIMS(6), DIMS(1), &err));
  assert_null(uopc_tensor_wrap_new(NULL, UOPC_I32, 1, DIMS(6), DIMS(1), &err));
  CHECK_CODE("wrap_new elem0 NULL", err.code, UOPC_E_INVALID, &err);
}

/* ---- overlap and copies -------------------------------------------------------------- */

static void test_tensor_may_overlap_disjoint_halves_vs_overlapping_slices(void **state) {
  (void)state;
  uopc_tensor x, y, lo, hi, lo6, even, odd, none, rev;
  uopc_error err;
  arange(&x, UOPC_F64, 1, DIMS(10));
  arange(&y, UOPC_F64, 1, DIMS(10));
  CHECK_OK("x[:5]", uopc_tensor_slice(&lo, &x, 0, NONE, 5, NONE, &err), &err);
  CHECK_OK("x[5:]", uopc_tensor_slice(&hi, &x, 0, 5, NONE, NONE, &err), &err);
  CHECK_OK("x[:6]", uopc_tensor_slice(&lo6, &x, 0, NONE, 6, NONE, &err), &err);
  CHECK_OK("x[::2]", uopc_tensor_slice(&even, &x, 0, NONE, NONE, 2, &err), &err);
  CHECK_OK("x[1::2]", uopc_tensor_slice(&odd, &x, 0, 1, NONE, 2, &err), &err);
  CHECK_OK("x[3:3]", uopc_tensor_slice(&none, &x, 0, 3, 3, NONE, &err), &err);
  CHECK_OK("x[4::-1]", uopc_tensor_slice(&rev, &x, 0, 4, NONE, -1, &err), &err);
  /* np.may_share_memory: the byte-range test NumPy also uses */
  assert_false(uopc_tensor_may_overlap(&lo, &hi));   /* x[:5], x[5:] */
  assert_true(uopc_tensor_may_overlap(&lo6, &hi));   /* x[:6], x[5:] share x[5] */
  assert_true(uopc_tensor_may_overlap(&even, &odd)); /* interleaved: conservative */
  assert_false(uopc_tensor_may_overlap(&rev, &hi));  /* x[4::-1] is x[0..4] */
  assert_true(uopc_tensor_may_overlap(&rev, &lo));
  assert_false(uopc_tensor_may_overlap(&none, &x));  /* empty */
  assert_false(uopc_tensor_may_overlap(&x, &y));     /* separate allocations */
  uopc_tensor *views[] = {&lo, &hi, &lo6, &even, &odd, &none, &rev, &x, &y};
  for (size_t i = 0; i < sizeof views / sizeof *views; i++) uopc_tensor_release(views[i]);
}

static void test_tensor_may_overlap_compares_addresses_across_wraps(void **state) {
  (void)state;
  double buf[10];
  uopc_tensor a, b, c;
  uopc_error err;
  fill_iota(buf, 10);
  /* two wraps of one NumPy buffer: separate storages, same memory */
  CHECK_OK("wrap buf[0:5]", uopc_tensor_wrap(&a, &buf[0], UOPC_F64, 1, DIMS(5), DIMS(1), &err), &err);
  CHECK_OK("wrap buf[5:10]", uopc_tensor_wrap(&b, &buf[5], UOPC_F64, 1, DIMS(5), DIMS(1), &err), &err);
  CHECK_OK("wrap buf[4:9]", uopc_tensor_wrap(&c, &buf[4], UOPC_F64, 1, DIMS(5), DIMS(1), &err), &err);
  assert_false(uopc_tensor_may_overlap(&a, &b));
  assert_true(uopc_tensor_may_overlap(&a, &c));
  assert_true(uopc_tensor_may_overlap(&c, &b));
  uopc_tensor_release(&a);
  uopc_tensor_release(&b);
  uopc_tensor_release(&c);
}

static void test_tensor_copy_overlapping_shift_is_out_of_place(void **state) {
  (void)state;
  uopc_tensor x, src, dst;
  uopc_error err;
  /* x = np.arange(6.); x[1:5] = x[0:4] gives [0, 0, 1, 2, 3, 5] */
  arange(&x, UOPC_F32, 1, DIMS(6));
  CHECK_OK("x[0:4]", uopc_tensor_slice(&src, &x, 0, 0, 4, 1, &err), &err);
  CHECK_OK("x[1:5]", uopc_tensor_slice(&dst, &x, 0, 1, 5, 1, &err), &err);
  CHECK_OK("x[1:5] = x[0:4]", uopc_tensor_copy(&dst, &src, &err), &err);
  CHECK_VALUES("x[1:5] = x[0:4]", &x, 0, 0, 1, 2, 3, 5);
  uopc_tensor_release(&src);
  uopc_tensor_release(&dst);
  uopc_tensor_release(&x);
  /* x = np.arange(6.); x[0:4] = x[1:5] gives [1, 2, 3, 4, 4, 5] */
  arange(&x, UOPC_F32, 1, DIMS(6));
  CHECK_OK("x[1:5]", uopc_tensor_slice(&src, &x, 0, 1, 5, 1, &err), &err);
  CHECK_OK("x[0:4]", uopc_tensor_slice(&dst, &x, 0, 0, 4, 1, &err), &err);
  CHECK_OK("x[0:4] = x[1:5]", uopc_tensor_copy(&dst, &src, &err), &err);
  CHECK_VALUES("x[0:4] = x[1:5]", &x, 1, 2, 3, 4, 4, 5);
  uopc_tensor_release(&src);
  uopc_tensor_release(&dst);
  uopc_tensor_release(&x);
}

/* Only an overlapping copy stages x in a temporary: with no memory for one it is UOPC_E_NOMEM and
 * out is unchanged (and not counted as written); a copy between separate tensors allocates nothing. */
static void test_tensor_copy_allocates_only_for_overlap(void **state) {
  (void)state;
#ifdef __SANITIZE_ADDRESS__
  testutil_skip_under_asan("glibc's malloc, made to fail");
#else
  testutil_skip_unless_allocation_fails();
  uopc_tensor x, src, dst, y;
  uopc_error err = {0};
  arange(&x, UOPC_F32, 1, DIMS(6));
  CHECK_OK("x[0:4]", uopc_tensor_slice(&src, &x, 0, 0, 4, 1, &err), &err);
  CHECK_OK("x[1:5]", uopc_tensor_slice(&dst, &x, 0, 1, 5, 1, &err), &err);
  uint64_t version = uopc_tensor_version(&x);
  fail_next_malloc = 1;
  int rc = uopc_tensor_copy(&dst, &src, &err);
  fail_next_malloc = 0;
  CHECK_CODE("x[1:5] = x[0:4] without memory", rc, UOPC_E_NOMEM, &err);
  assert_string_equal(err.message, "out of memory for a storage header");
  CHECK_VALUES("x[1:5] = x[0:4] without memory", &x, 0, 1, 2, 3, 4, 5);
  CHECK_I64("x[1:5] = x[0:4] without memory", "version", (int64_t)(uopc_tensor_version(&x) - version), 0);
  /* y = np.zeros(4); y[...] = x[0:4], no allocation allowed */
  CHECK_OK("np.zeros(4)", uopc_tensor_empty(&y, UOPC_F32, 1, DIMS(4), &err), &err);
  fail_next_malloc = 1;
  rc = uopc_tensor_copy(&y, &src, &err);
  fail_next_malloc = 0;
  CHECK_CODE("y[...] = x[0:4] without memory", rc, UOPC_OK, &err);
  CHECK_VALUES("y[...] = x[0:4] without memory", &y, 0, 1, 2, 3);
  uopc_tensor_release(&y);
  uopc_tensor_release(&src);
  uopc_tensor_release(&dst);
  uopc_tensor_release(&x);
#endif
}

static void test_tensor_copy_reversed_onto_itself_is_out_of_place(void **state) {
  (void)state;
  uopc_tensor x, rev;
  uopc_error err;
  /* x = np.arange(6.); x[:] = x[::-1] gives [5, 4, 3, 2, 1, 0] */
  arange(&x, UOPC_F64, 1, DIMS(6));
  CHECK_OK("x[::-1]", uopc_tensor_slice(&rev, &x, 0, NONE, NONE, -1, &err), &err);
  CHECK_OK("x[:] = x[::-1]", uopc_tensor_copy(&x, &rev, &err), &err);
  CHECK_VALUES("x[:] = x[::-1]", &x, 5, 4, 3, 2, 1, 0);
  uopc_tensor_release(&rev);
  uopc_tensor_release(&x);
}

static void test_tensor_copy_between_wraps_of_one_buffer_is_out_of_place(void **state) {
  (void)state;
  double buf[6];
  uopc_tensor a, b, whole;
  uopc_error err;
  fill_iota(buf, 6);
  /* np views of one array made separately: buf[1:5] = buf[0:4] */
  CHECK_OK("wrap buf[0:4]", uopc_tensor_wrap(&a, &buf[0], UOPC_F64, 1, DIMS(4), DIMS(1), &err), &err);
  CHECK_OK("wrap buf[1:5]", uopc_tensor_wrap(&b, &buf[1], UOPC_F64, 1, DIMS(4), DIMS(1), &err), &err);
  CHECK_OK("buf[1:5] = buf[0:4]", uopc_tensor_copy(&b, &a, &err), &err);
  CHECK_OK("wrap buf", uopc_tensor_wrap(&whole, buf, UOPC_F64, 1, DIMS(6), DIMS(1), &err), &err);
  CHECK_VALUES("buf[1:5] = buf[0:4]", &whole, 0, 0, 1, 2, 3, 5);
  uopc_tensor_release(&whole);
  uopc_tensor_release(&a);
  uopc_tensor_release(&b);
}

static void test_tensor_copy_strided_into_packed(void **state) {
  (void)state;
  uopc_tensor a, t, out;
  uopc_error err;
  arange(&a, UOPC_I64, 2, DIMS(3, 4));
  /* out = np.empty((4, 3)); out[...] = a.T */
  CHECK_OK("a.T", uopc_tensor_transpose(&t, &a, 0, 1, &err), &err);
  CHECK_OK("np.empty((4, 3))", uopc_tensor_empty(&out, UOPC_I64, 2, DIMS(4, 3), &err), &err);
  CHECK_OK("out[...] = a.T", uopc_tensor_copy(&out, &t, &err), &err);
  CHECK_VALUES("out[...] = a.T", &out, 0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11);
  uopc_tensor_release(&out);
  uopc_tensor_release(&t);
  uopc_tensor_release(&a);
}

static void test_tensor_copy_onto_the_same_view_changes_nothing(void **state) {
  (void)state;
  uopc_tensor x, same;
  uopc_error err;
  arange(&x, UOPC_F64, 1, DIMS(4));
  uopc_tensor_retain(&same, &x);
  assert_true(uopc_tensor_same_view(&x, &same));
  CHECK_OK("x[...] = x", uopc_tensor_copy(&x, &same, &err), &err);
  CHECK_VALUES("x[...] = x", &x, 0, 1, 2, 3);
  uopc_tensor_release(&same);
  uopc_tensor_release(&x);
}

static void test_tensor_copy_rejects_a_null_or_released_tensor(void **state) {
  (void)state;
  uopc_tensor x, y, released = {0};
  uopc_error err;
  arange(&x, UOPC_F32, 1, DIMS(2));
  arange(&y, UOPC_F32, 1, DIMS(2));
  CHECK_CODE("out[...] = released", uopc_tensor_copy(&x, &released, &err), UOPC_E_INVALID, &err);
  assert_string_equal(err.message, "x is NULL or released");
  CHECK_CODE("released[...] = x", uopc_tensor_copy(&released, &y, &err), UOPC_E_INVALID, &err);
  assert_string_equal(err.message, "out is NULL or released");
  CHECK_CODE("out[...] = NULL", uopc_tensor_copy(&x, NULL, &err), UOPC_E_INVALID, &err);
  assert_string_equal(err.message, "x is NULL or released");
  CHECK_CODE("NULL[...] = x", uopc_tensor_copy(NULL, &y, &err), UOPC_E_INVALID, &err);
  assert_string_equal(err.message, "out is NULL or released");
  CHECK_I64("refused copies", "version of x", (int64_t)uopc_tensor_version(&x), 2);  /* arange's 2 sets */
  uopc_tensor_release(&x);
  uopc_tensor_release(&y);
}

static void test_tensor_copy_rejects_dtype_and_shape_mismatch(void **state) {
  (void)state;
  uopc_tensor f, d, g;
  uopc_error err;
  CHECK_OK("np.zeros(4, f32)", uopc_tensor_empty(&f, UOPC_F32, 1, DIMS(4), &err), &err);
  CHECK_OK("np.zeros(4, f64)", uopc_tensor_empty(&d, UOPC_F64, 1, DIMS(4), &err), &err);
  CHECK_OK("np.zeros((2, 2), f32)", uopc_tensor_empty(&g, UOPC_F32, 2, DIMS(2, 2), &err), &err);
  CHECK_CODE("f32[...] = f64", uopc_tensor_copy(&f, &d, &err), UOPC_E_DTYPE, &err);
  CHECK_MESSAGE("f32[...] = f64", &err, "out is f32 but x is f64");
  CHECK_CODE("(4,)[...] = (2, 2)", uopc_tensor_copy(&f, &g, &err), UOPC_E_INVALID, &err);
  CHECK_MESSAGE("(4,)[...] = (2, 2)", &err, "out has shape (4,) but x has shape (2, 2)");
  /* the same rank and element count, another shape: (2, 2)[...] = (2, 2).reshape(1, 4) */
  uopc_tensor r;
  CHECK_OK("np.zeros((2, 2)).reshape(1, 4)", uopc_tensor_reshape(&r, &g, 2, DIMS(1, 4), &err), &err);
  CHECK_CODE("(2, 2)[...] = (1, 4)", uopc_tensor_copy(&g, &r, &err), UOPC_E_INVALID, &err);
  assert_string_equal(err.message, "out has shape (2, 2) but x has shape (1, 4)");
  uopc_tensor_release(&r);
  uopc_tensor_release(&f);
  uopc_tensor_release(&d);
  uopc_tensor_release(&g);
}

/* ---- queries and element access ------------------------------------------------------ */

static void test_tensor_is_contiguous_ignores_unit_dims(void **state) {
  (void)state;
  double buf[12] = {0};
  uopc_tensor w, a, v;
  uopc_error err;
  /* NumPy's relaxed strides: a size-1 dim's stride does not matter */
  CHECK_OK("wrap (3, 1, 4) strides (4, 99, 1)",
           uopc_tensor_wrap(&w, buf, UOPC_F64, 3, DIMS(3, 1, 4), DIMS(4, 99, 1), &err), &err);
  assert_true(uopc_tensor_is_contiguous(&w));
  uopc_tensor_release(&w);
  arange(&a, UOPC_F64, 2, DIMS(3, 4));
  CHECK_OK("a[1:2]", uopc_tensor_slice(&v, &a, 0, 1, 2, 1, &err), &err);
  assert_true(uopc_tensor_is_contiguous(&v));  /* shape (1, 4) at offset 4 */
  uopc_tensor_release(&v);
  CHECK_OK("a.T", uopc_tensor_transpose(&v, &a, 0, 1, &err), &err);
  assert_false(uopc_tensor_is_contiguous(&v));
  uopc_tensor_release(&v);
  CHECK_OK("a[:, ::2]", uopc_tensor_slice(&v, &a, 1, NONE, NONE, 2, &err), &err);
  assert_false(uopc_tensor_is_contiguous(&v));
  uopc_tensor_release(&v);
  uopc_tensor_release(&a);
}

static void test_tensor_is_aligned_checks_element_0(void **state) {
  (void)state;
  uopc_tensor x, v;
  uopc_error err;
  arange(&x, UOPC_F32, 1, DIMS(32));
  assert_true(uopc_tensor_is_aligned(&x, 64));
  CHECK_OK("x[1:]", uopc_tensor_slice(&v, &x, 0, 1, NONE, NONE, &err), &err);
  assert_true(uopc_tensor_is_aligned(&v, 4));
  assert_false(uopc_tensor_is_aligned(&v, 64));
  assert_false(uopc_tensor_is_aligned(&v, 3));  /* not a power of two */
  assert_false(uopc_tensor_is_aligned(&v, 0));
  uopc_tensor_release(&v);
  /* x[16:] starts 64 bytes in */
  CHECK_OK("x[16:]", uopc_tensor_slice(&v, &x, 0, 16, NONE, NONE, &err), &err);
  assert_true(uopc_tensor_is_aligned(&v, 64));
  uopc_tensor_release(&v);
  uopc_tensor_release(&x);
}

static void test_tensor_same_view_compares_layout_and_address(void **state) {
  (void)state;
  double buf[8] = {0};
  uopc_tensor x, all, head, p, q;
  uopc_error err;
  arange(&x, UOPC_F64, 1, DIMS(8));
  CHECK_OK("x[0:8]", uopc_tensor_slice(&all, &x, 0, 0, 8, 1, &err), &err);
  CHECK_OK("x[0:4]", uopc_tensor_slice(&head, &x, 0, 0, 4, 1, &err), &err);
  assert_true(uopc_tensor_same_view(&x, &all));
  assert_false(uopc_tensor_same_view(&x, &head));
  CHECK_OK("wrap buf", uopc_tensor_wrap(&p, buf, UOPC_F64, 1, DIMS(8), DIMS(1), &err), &err);
  CHECK_OK("wrap buf again", uopc_tensor_wrap(&q, buf, UOPC_F64, 1, DIMS(8), DIMS(1), &err), &err);
  assert_true(uopc_tensor_same_view(&p, &q));  /* two storages, one memory */
  assert_false(uopc_tensor_same_view(&p, &x));
  uopc_tensor *all_views[] = {&x, &all, &head, &p, &q};
  for (size_t i = 0; i < sizeof all_views / sizeof *all_views; i++) uopc_tensor_release(all_views[i]);
}

/* No view is the same as anything: a NULL or released tensor (two zeroed ones included). */
static void test_tensor_same_view_of_a_null_or_released_tensor_is_0(void **state) {
  (void)state;
  uopc_tensor x, released = {0}, also_released = {0};
  arange(&x, UOPC_F32, 0, NULL);
  assert_int_equal(uopc_tensor_same_view(&released, &also_released), 0);
  assert_int_equal(uopc_tensor_same_view(&released, &released), 0);
  assert_int_equal(uopc_tensor_same_view(&x, &released), 0);
  assert_int_equal(uopc_tensor_same_view(&released, &x), 0);
  assert_int_equal(uopc_tensor_same_view(NULL, &x), 0);
  assert_int_equal(uopc_tensor_same_view(&x, NULL), 0);
  assert_int_equal(uopc_tensor_same_view(NULL, NULL), 0);
  assert_int_equal(uopc_tensor_same_view(&x, &x), 1);
  uopc_tensor_release(&x);
}

static void test_tensor_get_set_convert_through_double(void **state) {
  (void)state;
  uopc_tensor i, f, l;
  uopc_error err;
  CHECK_OK("np.zeros(5, np.int32)", uopc_tensor_empty(&i, UOPC_I32, 1, DIMS(5), &err), &err);
  /* np.array([3.7, -3.7]).astype(np.int32) truncates to [3, -3] */
  uopc_tensor_set(&i, 0, 3.7);
  uopc_tensor_set(&i, 1, -3.7);
  uopc_tensor_set(&i, 2, 1e20);   /* out of range: saturates (NumPy leaves it undefined) */
  uopc_tensor_set(&i, 3, NAN);    /* NaN stores 0 */
  uopc_tensor_set(&i, 4, -1e20);
  uopc_tensor_set(&i, 5, 9);      /* past the end: ignored */
  uopc_tensor_set(&i, -1, 9);
  CHECK_VALUES("int32 stores", &i, 3, -3, INT32_MAX, 0, INT32_MIN);
  assert_true(isnan(uopc_tensor_get(&i, 5)));
  assert_true(isnan(uopc_tensor_get(&i, -1)));
  CHECK_OK("np.zeros(1, np.float32)", uopc_tensor_empty(&f, UOPC_F32, 1, DIMS(1), &err), &err);
  uopc_tensor_set(&f, 0, 0.1);    /* np.float32(0.1) != 0.1 */
  CHECK_VALUES("np.float32(0.1)", &f, (double)0.1f);
  CHECK_OK("np.zeros(2, np.int64)", uopc_tensor_empty(&l, UOPC_I64, 1, DIMS(2), &err), &err);
  uopc_tensor_set(&l, 0, 1e30);
  uopc_tensor_set(&l, 1, -(double)(INT64_C(1) << 53));
  CHECK_I64("int64 saturates", "element 0", (int64_t)((int64_t *)uopc_tensor_data(&l))[0], INT64_MAX);
  CHECK_VALUES("int64 stores", &l, (double)INT64_MAX, -(double)(INT64_C(1) << 53));
  /* np.array([2.5, 0, -0.0, nan]).astype(bool) is [True, False, False, True]: read back as 1 and 0 */
  uopc_tensor b;
  CHECK_OK("np.zeros(4, np.bool_)", uopc_tensor_empty(&b, UOPC_BOOL, 1, DIMS(4), &err), &err);
  uopc_tensor_set(&b, 0, 2.5);
  uopc_tensor_set(&b, 1, 0);
  uopc_tensor_set(&b, 2, -0.0);
  uopc_tensor_set(&b, 3, NAN);
  CHECK_VALUES("bool stores", &b, 1, 0, 0, 1);
  uopc_tensor_release(&i);
  uopc_tensor_release(&f);
  uopc_tensor_release(&l);
  uopc_tensor_release(&b);
}

/* ---- branches each check above leaves untaken -------------------------------------- */

static void test_tensor_dtype_is_float_for_f32_and_f64_only(void **state) {
  (void)state;
  assert_int_equal(uopc_dtype_is_float(UOPC_F32), 1);
  assert_int_equal(uopc_dtype_is_float(UOPC_F64), 1);
  assert_int_equal(uopc_dtype_is_float(UOPC_I64), 0);
  assert_int_equal(uopc_dtype_is_float(UOPC_BOOL), 0);
}

/* Two bools INT64_MAX apart: hi - lo fits, the element count hi - lo + 1 does not (with 1-byte
 * items no later product would catch a wrapped count). */
static void test_tensor_wrap_rejects_an_element_count_past_int64(void **state) {
  (void)state;
  unsigned char buf[2] = {0};
  uopc_tensor t;
  uopc_error err;
  CHECK_CODE("bool strides (INT64_MAX,)", uopc_tensor_wrap(&t, buf, UOPC_BOOL, 1, DIMS(2), DIMS(INT64_MAX), &err),
             UOPC_E_OVERFLOW, &err);
  assert_string_equal(err.message, "shape (2,) with strides (9223372036854775807,) spans elements "
                                   "[0, 9223372036854775807] around elem0: the byte range overflows");
  assert_null(t.storage);
}

/* A negative stride reaching 2^61 bytes below elem0, a stack address far under 2^61: the lowest
 * byte would lie below address 0. */
static void test_tensor_wrap_rejects_a_span_below_address_0(void **state) {
  (void)state;
  unsigned char buf[2] = {0};
  uopc_tensor t;
  uopc_error err;
  assert_true((uintptr_t)buf < (UINTMAX_C(1) << 61));
  CHECK_CODE("bool strides (-2**61,)",
             uopc_tensor_wrap(&t, buf, UOPC_BOOL, 1, DIMS(2), DIMS(-(INT64_C(1) << 61)), &err),
             UOPC_E_OVERFLOW, &err);
  assert_string_equal(err.message, "shape (2,) with strides (-2305843009213693952,) spans elements "
                                   "[-2305843009213693952, 0] around elem0: the byte range overflows");
  assert_null(t.storage);
}

/* Retaining into no tensor takes no reference; the queries of no tensor, or a released one, answer
 * 0 (no bytes, not aligned, no references). */
static void test_tensor_retain_into_null_and_queries_of_null_answer_nothing(void **state) {
  (void)state;
  uopc_tensor x, released = {0};
  arange(&x, UOPC_F32, 1, DIMS(4));
  uopc_tensor_retain(NULL, &x);
  CHECK_I64("retain(NULL, x)", "storage refs", uopc_tensor_storage_refs(&x), 1);
  CHECK_I64("storage_refs(NULL)", "refs", uopc_tensor_storage_refs(NULL), 0);
  uopc_layout_bytes none = uopc_tensor_byte_range(NULL);
  assert_true(none.lo == 0 && none.hi == 0);
  none = uopc_tensor_byte_range(&released);
  assert_true(none.lo == 0 && none.hi == 0);
  assert_int_equal(uopc_tensor_is_aligned(&released, 1), 0);
  uopc_tensor_release(&x);
}

/* Same address, shape and strides are not the same view in another dtype or rank; a unit dim's
 * stride is never used, so it may differ; any other dim's may not. */
static void test_tensor_same_view_compares_dtype_rank_and_used_strides(void **state) {
  (void)state;
  int32_t buf[4] = {0};
  uopc_tensor i32, f32, r2, unit_a, unit_b, two_a, two_b;
  uopc_error err;
  CHECK_OK("wrap i32", uopc_tensor_wrap(&i32, buf, UOPC_I32, 1, DIMS(2), DIMS(1), &err), &err);
  CHECK_OK("wrap f32", uopc_tensor_wrap(&f32, buf, UOPC_F32, 1, DIMS(2), DIMS(1), &err), &err);
  CHECK_OK("wrap (1, 2)", uopc_tensor_wrap(&r2, buf, UOPC_I32, 2, DIMS(1, 2), DIMS(2, 1), &err), &err);
  CHECK_OK("wrap (1, 2) s1", uopc_tensor_wrap(&unit_a, buf, UOPC_I32, 2, DIMS(1, 2), DIMS(7, 1), &err), &err);
  CHECK_OK("wrap (2,) s2", uopc_tensor_wrap(&two_a, buf, UOPC_I32, 1, DIMS(2), DIMS(2), &err), &err);
  CHECK_OK("wrap (1,) s1", uopc_tensor_wrap(&unit_b, buf, UOPC_I32, 1, DIMS(1), DIMS(1), &err), &err);
  CHECK_OK("wrap (1,) s3", uopc_tensor_wrap(&two_b, buf, UOPC_I32, 1, DIMS(1), DIMS(3), &err), &err);
  assert_int_equal(uopc_tensor_same_view(&i32, &f32), 0);
  assert_int_equal(uopc_tensor_same_view(&i32, &r2), 0);
  assert_int_equal(uopc_tensor_same_view(&r2, &unit_a), 1);   /* only dim 0 (size 1) differs */
  assert_int_equal(uopc_tensor_same_view(&i32, &two_a), 0);   /* size 2, strides 1 and 2 */
  assert_int_equal(uopc_tensor_same_view(&unit_b, &two_b), 1);
  uopc_tensor *all[] = {&i32, &f32, &r2, &unit_a, &unit_b, &two_a, &two_b};
  for (size_t k = 0; k < sizeof all / sizeof *all; k++) uopc_tensor_release(all[k]);
}

/* Every view refuses a NULL out or x, and a released x, under its own name, before reading its
 * other arguments. */
static void test_tensor_views_refuse_null_and_released_tensors(void **state) {
  (void)state;
  uopc_tensor x, v, released = {0};
  uopc_error err;
  arange(&x, UOPC_F32, 2, DIMS(2, 3));
  CHECK_CODE("select(NULL, x)", uopc_tensor_select(NULL, &x, 0, 0, &err), UOPC_E_INVALID, &err);
  assert_string_equal(err.message, "out is NULL");
  assert_string_equal(err.where, "uopc_tensor_select");
  CHECK_CODE("select(v, NULL)", uopc_tensor_select(&v, NULL, 0, 0, &err), UOPC_E_INVALID, &err);
  assert_string_equal(err.message, "x is NULL");
  CHECK_CODE("select(released)", uopc_tensor_select(&v, &released, 0, 0, &err), UOPC_E_INVALID, &err);
  assert_string_equal(err.message, "x is a released tensor");
  assert_string_equal(err.where, "uopc_tensor_select");
  CHECK_CODE("permute(released)", uopc_tensor_permute(&v, &released, NULL, &err), UOPC_E_INVALID, &err);
  assert_string_equal(err.message, "x is a released tensor");
  assert_string_equal(err.where, "uopc_tensor_permute");
  CHECK_CODE("transpose(released)", uopc_tensor_transpose(&v, &released, 0, 0, &err), UOPC_E_INVALID, &err);
  assert_string_equal(err.message, "x is a released tensor");
  assert_string_equal(err.where, "uopc_tensor_transpose");
  CHECK_CODE("reshape(released)", uopc_tensor_reshape(&v, &released, 1, DIMS(6), &err), UOPC_E_INVALID, &err);
  assert_string_equal(err.message, "x is a released tensor");
  assert_string_equal(err.where, "uopc_tensor_reshape");
  assert_null(v.storage);
  CHECK_I64("refused views", "storage refs", uopc_tensor_storage_refs(&x), 1);
  uopc_tensor_release(&x);
}

/* Bad first or second transpose axis, negative perm entry, rank outside [0, 8] for reshape. */
static void test_tensor_views_refuse_a_bad_axis_perm_or_rank(void **state) {
  (void)state;
  uopc_tensor x, v;
  uopc_error err;
  arange(&x, UOPC_F32, 2, DIMS(2, 3));
  CHECK_CODE("x.swapaxes(0, 2)", uopc_tensor_transpose(&v, &x, 0, 2, &err), UOPC_E_INVALID, &err);
  assert_string_equal(err.message, "transpose axis 2 outside [0, 2) for a rank-2 tensor");
  CHECK_CODE("x.swapaxes(-1, 0)", uopc_tensor_transpose(&v, &x, -1, 0, &err), UOPC_E_INVALID, &err);
  assert_string_equal(err.message, "transpose axis -1 outside [0, 2) for a rank-2 tensor");
  CHECK_CODE("x.transpose(-1, 0)", uopc_tensor_permute(&v, &x, (const int[]){-1, 0}, &err), UOPC_E_INVALID, &err);
  assert_string_equal(err.message, "perm[0] = -1 outside [0, 2)");
  CHECK_CODE("x.reshape(rank 9)", uopc_tensor_reshape(&v, &x, 9, DIMS(1, 1, 1, 1, 1, 1, 1, 1, 6), &err),
             UOPC_E_INVALID, &err);
  assert_string_equal(err.message, "rank 9 outside [0, 8]");
  assert_string_equal(err.where, "uopc_tensor_reshape");
  assert_null(v.storage);
  CHECK_I64("refused views", "storage refs", uopc_tensor_storage_refs(&x), 1);
  uopc_tensor_release(&x);
}

/* Bools with strides (1, 2^62): merging the two dims would need stride 2 * 2^62, past int64;
 * that is no even striding, not a wrapped product compared. */
static void test_tensor_reshape_refuses_a_merged_stride_past_int64(void **state) {
  (void)state;
  unsigned char buf[2] = {0};
  uopc_tensor x, v;
  uopc_error err;
  CHECK_OK("wrap (2, 2) strides (1, 2**62)",
           uopc_tensor_wrap(&x, buf, UOPC_BOOL, 2, DIMS(2, 2), DIMS(1, INT64_C(1) << 62), &err), &err);
  CHECK_CODE("x.reshape(4)", uopc_tensor_reshape(&v, &x, 1, DIMS(4), &err), UOPC_E_LAYOUT, &err);
  assert_string_equal(err.message, "shape (2, 2) with strides (1, 4611686018427387904) cannot be viewed as "
                                   "shape (4,): its elements are not evenly strided there, so a copy is needed");
  assert_null(v.storage);
  uopc_tensor_release(&x);
}

/* out[...] = a with out a transposed view: element by element through out's strides. */
static void test_tensor_copy_packed_into_strided(void **state) {
  (void)state;
  uopc_tensor a, o, ot;
  uopc_error err;
  arange(&a, UOPC_I64, 2, DIMS(4, 3));
  CHECK_OK("o = np.empty((3, 4))", uopc_tensor_empty(&o, UOPC_I64, 2, DIMS(3, 4), &err), &err);
  CHECK_OK("o.T", uopc_tensor_transpose(&ot, &o, 0, 1, &err), &err);
  CHECK_OK("o.T[...] = a", uopc_tensor_copy(&ot, &a, &err), &err);
  CHECK_VALUES("o after o.T[...] = a", &o, 0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11);
  uopc_tensor_release(&ot);
  uopc_tensor_release(&o);
  uopc_tensor_release(&a);
}

/* get and set of no tensor, a released one, or a hand-built one of a dtype outside the enum:
 * NaN and nothing written, never a crash. */
static void test_tensor_get_set_of_null_released_or_unknown_dtype_do_nothing(void **state) {
  (void)state;
  uopc_tensor x, bad, released = {0};
  arange(&x, UOPC_I32, 1, DIMS(2));
  assert_true(isnan(uopc_tensor_get(NULL, 0)));
  assert_true(isnan(uopc_tensor_get(&released, 0)));
  uopc_tensor_set(NULL, 0, 5);
  uopc_tensor_set(&released, 0, 5);
  bad = x;   /* no reference of its own: never released */
  bad.dtype = (uopc_dtype)99;
  assert_true(isnan(uopc_tensor_get(&bad, 1)));
  uopc_tensor_set(&bad, 1, 5);
  CHECK_VALUES("x after set through a bad dtype", &x, 0, 1);
  uopc_tensor_release(&x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_tensor_dtype_sizes_names_and_kinds),
    cmocka_unit_test(test_tensor_empty_is_zeroed_packed_and_aligned),
    cmocka_unit_test(test_tensor_empty_with_zero_dim_is_empty_and_contiguous),
    cmocka_unit_test(test_tensor_empty_rejects_bad_arguments),
    cmocka_unit_test(test_tensor_empty_rejects_overflowing_shapes),
    cmocka_unit_test(test_tensor_empty_beyond_memory_is_nomem),
    cmocka_unit_test(test_tensor_empty_without_memory_for_the_header_frees_the_bytes),
    cmocka_unit_test(test_tensor_slice_full_reverse_matches_numpy),
    cmocka_unit_test(test_tensor_slice_negative_step_matches_numpy),
    cmocka_unit_test(test_tensor_slice_negative_start_counts_from_end),
    cmocka_unit_test(test_tensor_slice_past_end_is_empty_and_keeps_offset),
    cmocka_unit_test(test_tensor_slice_clamps_out_of_range_bounds_like_python),
    cmocka_unit_test(test_tensor_slice_step_along_axis_1_of_2d),
    cmocka_unit_test(test_tensor_slice_of_slice_composes),
    cmocka_unit_test(test_tensor_slice_huge_step_keeps_one_element),
    cmocka_unit_test(test_tensor_slice_rejects_step_zero_and_bad_axis),
    cmocka_unit_test(test_tensor_failed_view_leaves_out_released),
    cmocka_unit_test(test_tensor_failed_view_clears_an_out_at_a_lower_address_than_x),
    cmocka_unit_test(test_tensor_views_of_a_hand_built_tensor_refuse_bad_rank_and_overflow),
    cmocka_unit_test(test_tensor_select_negative_index_counts_from_end),
    cmocka_unit_test(test_tensor_select_twice_gives_rank_0),
    cmocka_unit_test(test_tensor_select_out_of_range_is_bounds_error),
    cmocka_unit_test(test_tensor_transpose_swaps_shape_and_strides),
    cmocka_unit_test(test_tensor_permute_reorders_axes),
    cmocka_unit_test(test_tensor_permute_rejects_bad_perm),
    cmocka_unit_test(test_tensor_reshape_contiguous_is_view),
    cmocka_unit_test(test_tensor_reshape_infers_minus_one),
    cmocka_unit_test(test_tensor_reshape_of_transpose_needs_copy),
    cmocka_unit_test(test_tensor_reshape_of_strided_slice_splits_as_view),
    cmocka_unit_test(test_tensor_reshape_of_row_padded_slice_merges_each_rows_packed_dims),
    cmocka_unit_test(test_tensor_reshape_of_offset_slice_keeps_offset),
    cmocka_unit_test(test_tensor_reshape_ignores_a_unit_dims_stride),
    cmocka_unit_test(test_tensor_reshape_to_and_from_rank_0),
    cmocka_unit_test(test_tensor_reshape_of_empty_keeps_packed_strides),
    cmocka_unit_test(test_tensor_views_share_storage_until_the_last_release),
    cmocka_unit_test(test_tensor_last_release_frees_the_storage_once),
    cmocka_unit_test(test_tensor_retain_of_null_gives_a_released_tensor),
    cmocka_unit_test(test_tensor_release_of_zeroed_tensor_is_safe),
    cmocka_unit_test(test_tensor_wrap_stack_buffer_with_negative_strides),
    cmocka_unit_test(test_tensor_wrap_allows_empty),
    cmocka_unit_test(test_tensor_wrap_rejects_overflowing_span),
    cmocka_unit_test(test_tensor_wrap_rejects_bad_arguments),
    cmocka_unit_test(test_tensor_wrap_of_a_scalar_needs_no_strides),
    cmocka_unit_test(test_tensor_wrap_new_round_trips_through_a_heap_handle),
    cmocka_unit_test(test_tensor_wrap_new_without_memory_is_nomem),
    cmocka_unit_test(test_tensor_wrap_without_memory_for_the_header_is_nomem),
    cmocka_unit_test(test_tensor_may_overlap_disjoint_halves_vs_overlapping_slices),
    cmocka_unit_test(test_tensor_may_overlap_compares_addresses_across_wraps),
    cmocka_unit_test(test_tensor_copy_overlapping_shift_is_out_of_place),
    cmocka_unit_test(test_tensor_copy_allocates_only_for_overlap),
    cmocka_unit_test(test_tensor_copy_reversed_onto_itself_is_out_of_place),
    cmocka_unit_test(test_tensor_copy_between_wraps_of_one_buffer_is_out_of_place),
    cmocka_unit_test(test_tensor_copy_strided_into_packed),
    cmocka_unit_test(test_tensor_copy_onto_the_same_view_changes_nothing),
    cmocka_unit_test(test_tensor_copy_rejects_a_null_or_released_tensor),
    cmocka_unit_test(test_tensor_copy_rejects_dtype_and_shape_mismatch),
    cmocka_unit_test(test_tensor_is_contiguous_ignores_unit_dims),
    cmocka_unit_test(test_tensor_is_aligned_checks_element_0),
    cmocka_unit_test(test_tensor_same_view_compares_layout_and_address),
    cmocka_unit_test(test_tensor_same_view_of_a_null_or_released_tensor_is_0),
    cmocka_unit_test(test_tensor_get_set_convert_through_double),
    cmocka_unit_test(test_tensor_dtype_is_float_for_f32_and_f64_only),
    cmocka_unit_test(test_tensor_wrap_rejects_an_element_count_past_int64),
    cmocka_unit_test(test_tensor_wrap_rejects_a_span_below_address_0),
    cmocka_unit_test(test_tensor_retain_into_null_and_queries_of_null_answer_nothing),
    cmocka_unit_test(test_tensor_same_view_compares_dtype_rank_and_used_strides),
    cmocka_unit_test(test_tensor_views_refuse_null_and_released_tensors),
    cmocka_unit_test(test_tensor_views_refuse_a_bad_axis_perm_or_rank),
    cmocka_unit_test(test_tensor_reshape_refuses_a_merged_stride_past_int64),
    cmocka_unit_test(test_tensor_copy_packed_into_strided),
    cmocka_unit_test(test_tensor_get_set_of_null_released_or_unknown_dtype_do_nothing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
