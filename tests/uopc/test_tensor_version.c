/* test_tensor_version.c: storage versions (section 23.3, "Mutation and
 * views"): every write through any view bumps the one counter its storage
 * holds; reads and making views never do. */
#include <pthread.h>
#include "uopc/uopc.h"
#include "testutil.h"

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})

/* Fails with what was done, the version expected and the one read. */
#define CHECK_VERSION(what, t, want)                                                       \
  do {                                                                                     \
    uint64_t got_ = uopc_tensor_version(t);                                                \
    if (got_ != (uint64_t)(want))                                                          \
      fail_msg("%s: version %llu, expected %llu", what, (unsigned long long)got_,          \
               (unsigned long long)(want));                                                \
  } while (0)

/* x = np.zeros((2, 3), 'f4') */
static uopc_tensor new_2x3(void) {
  uopc_tensor x;
  uopc_error err = {0};
  assert_uopc_ok(uopc_tensor_empty(&x, UOPC_F32, 2, DIMS(2, 3), &err), err);
  return x;
}

static void test_tensor_version_starts_at_zero_and_views_leave_it(void **state) {
  (void)state;
  uopc_error err = {0};
  uopc_tensor x = new_2x3(), row, col, t, flat, same;
  CHECK_VERSION("np.zeros((2, 3))", &x, 0);
  assert_uopc_ok(uopc_tensor_select(&row, &x, 0, 1, &err), err);
  assert_uopc_ok(uopc_tensor_slice(&col, &x, 1, 0, 3, 2, &err), err);
  assert_uopc_ok(uopc_tensor_transpose(&t, &x, 0, 1, &err), err);
  assert_uopc_ok(uopc_tensor_reshape(&flat, &x, 1, DIMS(6), &err), err);
  uopc_tensor_retain(&same, &x);
  CHECK_VERSION("x after five views", &x, 0);
  CHECK_VERSION("x.T", &t, 0);
  uopc_tensor *all[] = {&x, &row, &col, &t, &flat, &same};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) uopc_tensor_release(all[i]);
}

/* One write through any view is seen through every other. */
static void test_tensor_version_is_shared_by_views(void **state) {
  (void)state;
  uopc_error err = {0};
  uopc_tensor x = new_2x3(), row, t;
  assert_uopc_ok(uopc_tensor_select(&row, &x, 0, 1, &err), err);
  assert_uopc_ok(uopc_tensor_transpose(&t, &x, 0, 1, &err), err);
  uopc_tensor_set(&row, 2, 7.0);   /* x[1, 2] = 7 */
  CHECK_VERSION("x[1][2] = 7, read through x", &x, 1);
  CHECK_VERSION("x[1][2] = 7, read through x.T", &t, 1);
  uopc_tensor_set(&t, 0, 1.0);
  CHECK_VERSION("x.T[0, 0] = 1, read through x[1]", &row, 2);
  assert_true(uopc_tensor_get(&x, 5) == 7.0);
  uopc_tensor_release(&x);
  uopc_tensor_release(&t);
  CHECK_VERSION("x[1] after x and x.T are released", &row, 2);
  uopc_tensor_release(&row);
}

static void test_tensor_version_set_bumps_only_when_it_writes(void **state) {
  (void)state;
  uopc_tensor x = new_2x3();
  uopc_tensor_set(&x, 0, 1.0);
  uopc_tensor_set(&x, 0, 1.0);   /* the same value is still a write */
  CHECK_VERSION("two sets", &x, 2);
  uopc_tensor_set(&x, 6, 1.0);   /* outside [0, 6): nothing is written */
  uopc_tensor_set(&x, -1, 1.0);
  CHECK_VERSION("two sets outside [0, numel)", &x, 2);
  uopc_tensor_release(&x);
}

static void test_tensor_version_reads_leave_it(void **state) {
  (void)state;
  uopc_tensor x = new_2x3(), y = new_2x3();
  double sum = 0;
  for (int64_t i = 0; i < 6; i++) sum += uopc_tensor_get(&x, i);
  (void)uopc_tensor_data(&x);
  (void)uopc_tensor_is_contiguous(&x);
  (void)uopc_tensor_may_overlap(&x, &y);
  (void)uopc_tensor_byte_range(&x);
  CHECK_VERSION("x after reads", &x, 0);
  assert_true(sum == 0);
  uopc_tensor_release(&x);
  uopc_tensor_release(&y);
}

/* out[...] = x[...] writes out's storage once; x is only read. */
static void test_tensor_version_copy_bumps_the_destination_once(void **state) {
  (void)state;
  uopc_error err = {0};
  uopc_tensor x = new_2x3(), out = new_2x3(), rev, i32;
  assert_uopc_ok(uopc_tensor_copy(&out, &x, &err), err);
  CHECK_VERSION("out after out[...] = x", &out, 1);
  CHECK_VERSION("x after out[...] = x", &x, 0);
  assert_uopc_ok(uopc_tensor_copy(&x, &x, &err), err);   /* the same view: no byte moves */
  CHECK_VERSION("x after x[...] = x", &x, 1);
  assert_uopc_ok(uopc_tensor_slice(&rev, &x, 1, UOPC_SLICE_NONE, UOPC_SLICE_NONE, -1, &err), err);
  assert_uopc_ok(uopc_tensor_copy(&x, &rev, &err), err);   /* overlapping: through a temporary */
  CHECK_VERSION("x after x[...] = x[:, ::-1]", &rev, 2);
  assert_uopc_ok(uopc_tensor_empty(&i32, UOPC_I32, 2, DIMS(2, 3), &err), err);
  assert_uopc_code(uopc_tensor_copy(&i32, &x, &err), UOPC_E_DTYPE, err);
  CHECK_VERSION("an i32 out after a refused copy", &i32, 0);
  uopc_tensor *all[] = {&x, &out, &rev, &i32};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) uopc_tensor_release(all[i]);
}

static void test_tensor_version_bump_records_a_kernel_write(void **state) {
  (void)state;
  uopc_tensor x = new_2x3(), other = new_2x3();
  float *p = uopc_tensor_data(&x);
  p[0] = 3.0f;   /* as a compiled kernel would write it */
  uopc_tensor_bump_version(&x);
  CHECK_VERSION("x after a kernel wrote it", &x, 1);
  CHECK_VERSION("another storage", &other, 0);
  uopc_tensor_release(&x);
  uopc_tensor_release(&other);
}

/* Two wraps of one buffer are two storages: each counts its own writes. */
static void test_tensor_version_wraps_of_one_buffer_count_apart(void **state) {
  (void)state;
  uopc_error err = {0};
  float buf[4] = {0};
  uopc_tensor a, b;
  assert_uopc_ok(uopc_tensor_wrap(&a, buf, UOPC_F32, 1, DIMS(4), DIMS(1), &err), err);
  assert_uopc_ok(uopc_tensor_wrap(&b, buf, UOPC_F32, 1, DIMS(4), DIMS(1), &err), err);
  uopc_tensor_set(&a, 1, 2.0);
  CHECK_VERSION("the wrap written", &a, 1);
  CHECK_VERSION("the other wrap", &b, 0);
  uopc_tensor_release(&a);
  uopc_tensor_release(&b);
}

static void test_tensor_version_of_a_released_tensor_is_zero(void **state) {
  (void)state;
  uopc_tensor x = new_2x3();
  uopc_tensor_bump_version(&x);
  uopc_tensor_release(&x);
  CHECK_VERSION("a released tensor", &x, 0);
  uopc_tensor_bump_version(&x);   /* ignored, not a crash */
  uopc_tensor_bump_version(NULL);
  CHECK_VERSION("NULL", NULL, 0);
}

#define BUMPS 20000

static void *bump_many(void *arg) {
  for (int i = 0; i < BUMPS; i++) uopc_tensor_bump_version(arg);
  return NULL;
}

/* Views released and bumped from four threads: no bump is lost. */
static void test_tensor_version_bumps_from_threads_all_count(void **state) {
  (void)state;
  uopc_error err = {0};
  uopc_tensor x = new_2x3(), rows[4];
  pthread_t threads[4];
  for (int i = 0; i < 4; i++) {
    assert_uopc_ok(uopc_tensor_select(&rows[i], &x, 0, i % 2, &err), err);
    assert_int_equal(pthread_create(&threads[i], NULL, bump_many, &rows[i]), 0);
  }
  for (int i = 0; i < 4; i++) pthread_join(threads[i], NULL);
  CHECK_VERSION("x after 4 threads bumped 20000 times each", &x, 4 * BUMPS);
  for (int i = 0; i < 4; i++) uopc_tensor_release(&rows[i]);
  uopc_tensor_release(&x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_tensor_version_starts_at_zero_and_views_leave_it),
    cmocka_unit_test(test_tensor_version_is_shared_by_views),
    cmocka_unit_test(test_tensor_version_set_bumps_only_when_it_writes),
    cmocka_unit_test(test_tensor_version_reads_leave_it),
    cmocka_unit_test(test_tensor_version_copy_bumps_the_destination_once),
    cmocka_unit_test(test_tensor_version_bump_records_a_kernel_write),
    cmocka_unit_test(test_tensor_version_wraps_of_one_buffer_count_apart),
    cmocka_unit_test(test_tensor_version_of_a_released_tensor_is_zero),
    cmocka_unit_test(test_tensor_version_bumps_from_threads_all_count),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
