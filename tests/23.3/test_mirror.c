/* test_mirror.c: lab 23.3, host and device copies that cannot silently
 * diverge. The host-memory test device stands in for a GPU: its copy's
 * address is host memory, which a test reads and writes directly (as a
 * kernel would write the device copy), and it counts its copies each way.
 * The CUDA test runs the same steps on a GPU, and skips without one. */
#include "mirror.h"
#include "testutil.h"

enum { N = 8 };

typedef struct copies { int64_t up, down; } copies;

static copies copies_now(void) {
  copies c;
  mirror_test_device_copies(&c.up, &c.down);
  return c;
}

/* Fails unless the test device copied exactly up and down times since c0. */
static void expect_copies(copies c0, int64_t up, int64_t down, const char *when) {
  copies c = copies_now();
  if (c.up - c0.up != up || c.down - c0.down != down)
    fail_msg("%s: expected %lld upload(s) and %lld download(s), got %lld and %lld", when, (long long)up,
             (long long)down, (long long)(c.up - c0.up), (long long)(c.down - c0.down));
}

static void expect_refreshed(int64_t want, const char *when) {
  int64_t got = uopc_counter_get(MIRROR_C_REFRESHED);
  if (got != want)
    fail_msg("%s: expected \"%s\" = %lld, got %lld", when, MIRROR_C_REFRESHED, (long long)want, (long long)got);
}

static int reset_counters(void **state) {
  (void)state;
  uopc_counters_reset();
  return 0;
}

/* host = 0, 1, ..., 7 (f32). */
static void arange_host(uopc_tensor *host) {
  uopc_error err = {0};
  int64_t n = N;
  assert_uopc_ok(uopc_tensor_empty(host, UOPC_F32, 1, &n, &err), err);
  for (int64_t i = 0; i < N; i++) uopc_tensor_set(host, i, (double)i);
}

/* The test device's copy, as memory the test can read and write. */
static float *device_floats(const mirror *m) { return (float *)(uintptr_t)mirror_device_addr(m); }

static void new_test_mirror(mirror *m, uopc_tensor *host) {
  uopc_error err = {0};
  arange_host(host);
  assert_uopc_ok(mirror_new(m, "w", host, mirror_test_device(), &err), err);
}

static void test_mirror_new_uploads_the_host_and_starts_in_sync(void **state) {
  (void)state;
  uopc_tensor host = {0};
  mirror m;
  copies c0 = copies_now();
  new_test_mirror(&m, &host);
  expect_copies(c0, 1, 0, "mirror_new");
  assert_string_equal(m.name, "w");
  expect_int(m.bytes, N * sizeof(float), "mirror_new of w = 0 .. %d (f32): bytes", N - 1);
  expect_int(m.host_synced, uopc_tensor_version(&host), "mirror_new of w = 0 .. %d: host_synced (the host's version)", N - 1);
  expect_int(m.device_written, 0, "mirror_new of w = 0 .. %d: device_written", N - 1);
  expect_int(uopc_tensor_storage_refs(&host), 2, "mirror_new of w = 0 .. %d: the host storage's references (the mirror holds one)", N - 1);
  for (int i = 0; i < N; i++) expect_close(device_floats(&m)[i], (float)i, 0.0, "mirror_new of w = 0 .. %d: device[%d]", N - 1, i);
  expect_refreshed(0, "mirror_new is no refresh");
  mirror_free(&m);
  expect_int(uopc_tensor_storage_refs(&host), 1, "after mirror_free: the host storage's references");
  uopc_tensor_release(&host);
}

static void test_mirror_read_of_current_sides_copies_nothing(void **state) {
  (void)state;
  uopc_tensor host = {0};
  mirror m;
  uopc_error err = {0};
  new_test_mirror(&m, &host);
  uint64_t v0 = uopc_tensor_version(&host);
  copies c0 = copies_now();
  assert_uopc_ok(mirror_read(&m, MIRROR_HOST, &err), err);
  assert_uopc_ok(mirror_read(&m, MIRROR_DEVICE, &err), err);
  assert_uopc_ok(mirror_sync(&m, &err), err);
  expect_copies(c0, 0, 0, "reads of sides in sync");
  expect_refreshed(0, "reads of sides in sync");
  expect_int(uopc_tensor_version(&host), v0, "reads and a sync of sides in sync: the host's version");
  mirror_free(&m);
  uopc_tensor_release(&host);
}

static void test_mirror_read_of_stale_device_after_host_write_through_view_uploads_once(void **state) {
  (void)state;
  uopc_tensor host = {0}, view = {0};
  mirror m;
  uopc_error err = {0};
  new_test_mirror(&m, &host);
  assert_uopc_ok(uopc_tensor_slice(&view, &host, 0, 2, 5, 1, &err), err);   /* host[2:5] */
  uopc_tensor_set(&view, 0, 42.0);   /* host[2] = 42, a write through another view */
  copies c0 = copies_now();
  assert_uopc_ok(mirror_read(&m, MIRROR_HOST, &err), err);   /* the host is current */
  expect_copies(c0, 0, 0, "host read after a host write");
  assert_uopc_ok(mirror_read(&m, MIRROR_DEVICE, &err), err);
  expect_copies(c0, 1, 0, "device read after a host write");
  expect_refreshed(1, "device read after a host write");
  expect_close(device_floats(&m)[2], 42.0, 0.0, "device read after host[2:5][0] = 42: device[2]");
  expect_close(device_floats(&m)[3], 3.0, 0.0, "device read after host[2:5][0] = 42: device[3] (unchanged)");
  expect_int(m.host_synced, uopc_tensor_version(&host), "device read after a host write: host_synced (the host's version)");
  assert_uopc_ok(mirror_read(&m, MIRROR_DEVICE, &err), err);
  expect_copies(c0, 1, 0, "a second device read");
  expect_refreshed(1, "a second device read");
  mirror_free(&m);
  uopc_tensor_release(&view);
  uopc_tensor_release(&host);
}

static void test_mirror_device_write_then_host_read_downloads_and_bumps_host_version(void **state) {
  (void)state;
  uopc_tensor host = {0};
  mirror m;
  uopc_error err = {0};
  new_test_mirror(&m, &host);
  uint64_t v0 = uopc_tensor_version(&host);
  assert_uopc_ok(mirror_write(&m, MIRROR_DEVICE, &err), err);
  expect_int(m.device_written, 1, "mirror_write of the device: device_written");
  device_floats(&m)[5] = 99.0f;   /* the "kernel" writes the device copy */
  copies c0 = copies_now();
  assert_uopc_ok(mirror_read(&m, MIRROR_DEVICE, &err), err);   /* the device is current */
  expect_copies(c0, 0, 0, "device read after a device write");
  assert_uopc_ok(mirror_read(&m, MIRROR_HOST, &err), err);
  expect_copies(c0, 0, 1, "host read after a device write");
  expect_refreshed(1, "host read after a device write");
  expect_close(uopc_tensor_get(&host, 5), 99.0, 0.0, "host read after device[5] = 99: host[5]");
  expect_int(uopc_tensor_version(&host), v0 + 1,   /* the download is a write of the host */
             "host read after a device write (host at version %llu before): the host's version", (unsigned long long)v0);
  expect_int(m.host_synced, v0 + 1, "host read after a device write: host_synced");
  expect_int(m.device_written, 0, "host read after a device write: device_written");
  assert_uopc_ok(mirror_read(&m, MIRROR_DEVICE, &err), err);   /* the bump is not a host change */
  assert_uopc_ok(mirror_read(&m, MIRROR_HOST, &err), err);
  expect_copies(c0, 0, 1, "reads after the download");
  expect_refreshed(1, "reads after the download");
  mirror_free(&m);
  uopc_tensor_release(&host);
}

static void test_mirror_writes_on_both_sides_fail_with_alias_and_change_nothing(void **state) {
  (void)state;
  uopc_tensor host = {0};
  mirror m;
  uopc_error err = {0};
  new_test_mirror(&m, &host);
  uint64_t v0 = uopc_tensor_version(&host);
  assert_uopc_ok(mirror_write(&m, MIRROR_DEVICE, &err), err);
  device_floats(&m)[0] = -1.0f;
  uopc_tensor_set(&host, 0, -2.0);   /* an undeclared host write: the version shows it */
  char want[160];
  snprintf(want, sizeof want,
           "mirror 'w': written on the host (version %llu, synced at %llu) and on the device since the last sync",
           (unsigned long long)(v0 + 1), (unsigned long long)v0);
  copies c0 = copies_now();
  assert_uopc_code(mirror_read(&m, MIRROR_HOST, &err), UOPC_E_ALIAS, err);
  assert_contains(err.message, want);
  assert_uopc_code(mirror_read(&m, MIRROR_DEVICE, &err), UOPC_E_ALIAS, err);
  assert_contains(err.message, want);
  assert_uopc_code(mirror_sync(&m, &err), UOPC_E_ALIAS, err);
  assert_contains(err.message, want);
  expect_copies(c0, 0, 0, "conflicting reads");
  expect_refreshed(0, "conflicting reads");
#define BOTH "writes on both sides (host[0] = -2, device[0] = -1), then refused reads and sync"
  expect_close(uopc_tensor_get(&host, 0), -2.0, 0.0, BOTH ": host[0]");
  expect_close(device_floats(&m)[0], -1.0, 0.0, BOTH ": device[0]");
  expect_int(uopc_tensor_version(&host), v0 + 1, BOTH ": the host's version");
  expect_int(m.host_synced, v0, BOTH ": host_synced");
  expect_int(m.device_written, 1, BOTH ": device_written");
#undef BOTH
  mirror_free(&m);
  uopc_tensor_release(&host);
}

static void test_mirror_write_on_device_while_host_is_newer_is_alias(void **state) {
  (void)state;
  uopc_tensor host = {0};
  mirror m;
  uopc_error err = {0};
  new_test_mirror(&m, &host);
  uint64_t v0 = uopc_tensor_version(&host);
  uopc_tensor_set(&host, 1, 7.0);
  char want[160];
  snprintf(want, sizeof want,
           "mirror 'w': a device write while the host holds newer data (version %llu, synced at %llu); read the "
           "device first",
           (unsigned long long)(v0 + 1), (unsigned long long)v0);
  assert_uopc_code(mirror_write(&m, MIRROR_DEVICE, &err), UOPC_E_ALIAS, err);
  assert_contains(err.message, want);
  expect_int(m.device_written, 0, "a refused device write while the host is newer: device_written");
  assert_uopc_ok(mirror_write(&m, MIRROR_HOST, &err), err);   /* the host may write again */
  assert_uopc_ok(mirror_read(&m, MIRROR_DEVICE, &err), err);   /* as the message says */
  assert_uopc_ok(mirror_write(&m, MIRROR_DEVICE, &err), err);
  expect_int(m.device_written, 1, "a device write after reading the device: device_written");
  expect_refreshed(1, "one upload");
  mirror_free(&m);
  uopc_tensor_release(&host);
}

static void test_mirror_write_on_host_while_device_is_newer_is_alias(void **state) {
  (void)state;
  uopc_tensor host = {0};
  mirror m;
  uopc_error err = {0};
  new_test_mirror(&m, &host);
  uint64_t v0 = uopc_tensor_version(&host);
  assert_uopc_ok(mirror_write(&m, MIRROR_DEVICE, &err), err);
  assert_uopc_ok(mirror_write(&m, MIRROR_DEVICE, &err), err);   /* a second device write is fine */
  assert_uopc_code(mirror_write(&m, MIRROR_HOST, &err), UOPC_E_ALIAS, err);
  assert_contains(err.message, "mirror 'w': a host write while the device holds newer data");
  expect_int(uopc_tensor_version(&host), v0, "a refused host write while the device is newer: the host's version");
  assert_uopc_ok(mirror_read(&m, MIRROR_HOST, &err), err);
  assert_uopc_ok(mirror_write(&m, MIRROR_HOST, &err), err);
  mirror_free(&m);
  uopc_tensor_release(&host);
}

static void test_mirror_sync_copies_the_newer_side_once(void **state) {
  (void)state;
  uopc_tensor host = {0};
  mirror m;
  uopc_error err = {0};
  new_test_mirror(&m, &host);
  copies c0 = copies_now();
  uopc_tensor_set(&host, 4, 40.0);
  assert_uopc_ok(mirror_sync(&m, &err), err);
  expect_copies(c0, 1, 0, "sync after a host write");
  expect_close(device_floats(&m)[4], 40.0, 0.0, "sync after host[4] = 40: device[4]");
  assert_uopc_ok(mirror_write(&m, MIRROR_DEVICE, &err), err);
  device_floats(&m)[6] = 60.0f;
  assert_uopc_ok(mirror_sync(&m, &err), err);
  expect_copies(c0, 1, 1, "sync after a device write");
  expect_close(uopc_tensor_get(&host, 6), 60.0, 0.0, "sync after device[6] = 60: host[6]");
  assert_uopc_ok(mirror_sync(&m, &err), err);
  expect_copies(c0, 1, 1, "sync with nothing changed");
  expect_refreshed(2, "two syncs that copied");
  mirror_free(&m);
  uopc_tensor_release(&host);
}

static void test_mirror_new_rejects_bad_arguments(void **state) {
  (void)state;
  uopc_tensor host = {0}, strided = {0}, released = {0};
  mirror m;
  uopc_error err = {0};
  arange_host(&host);
  const mirror_device *dev = mirror_test_device();
  assert_uopc_code(mirror_new(NULL, "w", &host, dev, &err), UOPC_E_INVALID, err);
  assert_uopc_code(mirror_new(&m, NULL, &host, dev, &err), UOPC_E_INVALID, err);
  assert_uopc_code(mirror_new(&m, "", &host, dev, &err), UOPC_E_INVALID, err);
  assert_uopc_code(mirror_new(&m, "a_name_of_thirty_two_characters_", &host, dev, &err), UOPC_E_INVALID, err);
  assert_uopc_code(mirror_new(&m, "w", NULL, dev, &err), UOPC_E_INVALID, err);
  assert_uopc_code(mirror_new(&m, "w", &released, dev, &err), UOPC_E_INVALID, err);
  assert_uopc_code(mirror_new(&m, "w", &host, NULL, &err), UOPC_E_INVALID, err);
  assert_uopc_ok(uopc_tensor_slice(&strided, &host, 0, 0, UOPC_SLICE_NONE, 2, &err), err);
  assert_uopc_code(mirror_new(&m, "w", &strided, dev, &err), UOPC_E_LAYOUT, err);
  assert_contains(err.message, "mirror 'w'");
  expect_int(uopc_tensor_storage_refs(&host), 2,   /* host and strided: the failures kept none */
             "after eight refused mirror_new calls: the host storage's references");
  mirror_free(&m);   /* a failed mirror_new leaves a mirror that frees safely */
  assert_uopc_ok(mirror_new(&m, "a_name_of_thirty_one_characters", &host, dev, &err), err);
  mirror_free(&m);
  uopc_tensor_release(&strided);
  uopc_tensor_release(&host);
}

static void test_mirror_read_and_write_reject_unknown_side_and_freed_mirror(void **state) {
  (void)state;
  uopc_tensor host = {0};
  mirror m;
  uopc_error err = {0};
  new_test_mirror(&m, &host);
  /* mirror.h: the message names the mirror and the side's value */
  static const int sides[3] = {2, -1, 7};
  for (int k = 0; k < 3; k++) {
    int rc = k == 1 ? mirror_write(&m, (mirror_side)sides[k], &err) : mirror_read(&m, (mirror_side)sides[k], &err);
    assert_uopc_code(rc, UOPC_E_INVALID, err);
    assert_names(err.message, "w", "the mirror's name");
    assert_names_int(err.message, sides[k], "the side's value");
  }
  mirror_free(&m);
  assert_uopc_code(mirror_read(&m, MIRROR_HOST, &err), UOPC_E_INVALID, err);
  assert_uopc_code(mirror_write(&m, MIRROR_DEVICE, &err), UOPC_E_INVALID, err);
  assert_uopc_code(mirror_sync(&m, &err), UOPC_E_INVALID, err);
  assert_uopc_code(mirror_sync(NULL, &err), UOPC_E_INVALID, err);
  uopc_tensor_release(&host);
}

/* The device-write test's steps on a GPU: a host write reaches the device,
 * a device write reaches the host, with one refresh each. */
static void test_mirror_cuda_device_round_trip_when_a_gpu_is_present(void **state) {
  (void)state;
  mirror_device cuda;
  uopc_error err = {0};
  int rc = mirror_cuda_device(&cuda, &err);
  if (rc == UOPC_E_NO_CUDA) {
    print_message("  skipped: %s\n", err.message);
    skip();
  }
  assert_uopc_ok(rc, err);
  assert_string_equal(cuda.name, "cuda");
  uopc_tensor host = {0};
  mirror m;
  float back[N], fresh[N];
  arange_host(&host);
  assert_uopc_ok(mirror_new(&m, "w", &host, &cuda, &err), err);
  uopc_tensor_set(&host, 3, 30.0);
  assert_uopc_ok(mirror_read(&m, MIRROR_DEVICE, &err), err);
  assert_uopc_ok(uopc_cuda_copy_to_host(back, mirror_device_addr(&m), sizeof back, &err), err);
  expect_close(back[3], 30.0, 0.0, "device read on the GPU after host[3] = 30: device[3]");
  expect_close(back[7], 7.0, 0.0, "device read on the GPU after host[3] = 30: device[7] (unchanged)");
  for (int i = 0; i < N; i++) fresh[i] = 100.0f + (float)i;
  assert_uopc_ok(mirror_write(&m, MIRROR_DEVICE, &err), err);
  assert_uopc_ok(uopc_cuda_copy_to_device(mirror_device_addr(&m), fresh, sizeof fresh, &err), err);
  uint64_t v = uopc_tensor_version(&host);
  assert_uopc_ok(mirror_read(&m, MIRROR_HOST, &err), err);
  for (int i = 0; i < N; i++)
    expect_close(uopc_tensor_get(&host, i), 100.0 + i, 0.0, "host read after the GPU wrote 100 + i: host[%d]", i);
  expect_int(uopc_tensor_version(&host), v + 1, "host read after a GPU write: the host's version");
  expect_refreshed(2, "one upload and one download on the GPU");
  mirror_free(&m);
  uopc_tensor_release(&host);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_mirror_new_uploads_the_host_and_starts_in_sync, reset_counters),
      cmocka_unit_test_setup(test_mirror_read_of_current_sides_copies_nothing, reset_counters),
      cmocka_unit_test_setup(test_mirror_read_of_stale_device_after_host_write_through_view_uploads_once,
                             reset_counters),
      cmocka_unit_test_setup(test_mirror_device_write_then_host_read_downloads_and_bumps_host_version,
                             reset_counters),
      cmocka_unit_test_setup(test_mirror_writes_on_both_sides_fail_with_alias_and_change_nothing, reset_counters),
      cmocka_unit_test_setup(test_mirror_write_on_device_while_host_is_newer_is_alias, reset_counters),
      cmocka_unit_test_setup(test_mirror_write_on_host_while_device_is_newer_is_alias, reset_counters),
      cmocka_unit_test_setup(test_mirror_sync_copies_the_newer_side_once, reset_counters),
      cmocka_unit_test_setup(test_mirror_new_rejects_bad_arguments, reset_counters),
      cmocka_unit_test_setup(test_mirror_read_and_write_reject_unknown_side_and_freed_mirror, reset_counters),
      cmocka_unit_test_setup(test_mirror_cuda_device_round_trip_when_a_gpu_is_present, reset_counters),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
