/* test_mirror_edges.c: lab 23.3, instructor-only (tests/hidden/, not in the handout):
 * the order of a mirror's copies over a longer life. A sync copies the newer side onto the
 * older one, never the other way (a device write is downloaded, not overwritten by an
 * upload); the version a download makes is the new sync point, so the host writes after it
 * are uploaded by the next sync; reads between syncs copy only what is stale; declared host
 * writes copy nothing. Graded with visibility after_due_date. */
#include "mirror.h"
#include "testutil.h"

enum { N = 8 };

typedef struct copies { int64_t up, down; } copies;

static copies copies_now(void) {
  copies c;
  mirror_test_device_copies(&c.up, &c.down);
  return c;
}

static void expect_copies(copies *c0, int64_t up, int64_t down, const char *when) {
  copies c = copies_now();
  if (c.up - c0->up != up || c.down - c0->down != down)
    fail_msg("%s: expected %lld upload(s) and %lld download(s), got %lld and %lld", when, (long long)up,
             (long long)down, (long long)(c.up - c0->up), (long long)(c.down - c0->down));
  *c0 = c;
}

static float *device_floats(const mirror *m) { return (float *)(uintptr_t)mirror_device_addr(m); }

static void expect_in_sync(const mirror *m, const uopc_tensor *host, const char *when) {
  if (m->host_synced != uopc_tensor_version(host) || m->device_written)
    fail_msg("%s: expected both sides in sync (host version %llu), got synced at %llu, device written %d", when,
             (unsigned long long)uopc_tensor_version(host), (unsigned long long)m->host_synced, m->device_written);
  for (int i = 0; i < N; i++)
    if (device_floats(m)[i] != (float)uopc_tensor_get(host, i))
      fail_msg("%s: element %d is %g on the host and %g on the device", when, i, uopc_tensor_get(host, i),
               (double)device_floats(m)[i]);
}

static void test_mirror_sync_ordering_over_a_long_life(void **state) {
  (void)state;
  uopc_tensor host = {0};
  mirror m;
  uopc_error err = {0};
  int64_t n = N;
  uopc_counters_reset();
  assert_uopc_ok(uopc_tensor_empty(&host, UOPC_F32, 1, &n, &err), err);
  for (int64_t i = 0; i < N; i++) uopc_tensor_set(&host, i, (double)i);
  assert_uopc_ok(mirror_new(&m, "w", &host, mirror_test_device(), &err), err);
  copies c = copies_now();
  /* 1. A device write, then a sync: downloaded, never uploaded over. */
  assert_uopc_ok(mirror_write(&m, MIRROR_DEVICE, &err), err);
  device_floats(&m)[1] = 10.0f;
  uint64_t v = uopc_tensor_version(&host);
  assert_uopc_ok(mirror_sync(&m, &err), err);
  expect_copies(&c, 0, 1, "sync after a device write");
  assert_true(uopc_tensor_get(&host, 1) == 10.0);
  assert_int_equal(uopc_tensor_version(&host), v + 1);
  expect_in_sync(&m, &host, "after the download");
  /* 2. Two host writes after the download: one upload, at the next sync. */
  uopc_tensor_set(&host, 2, 20.0);
  assert_uopc_ok(mirror_write(&m, MIRROR_HOST, &err), err);   /* declared: checked, nothing copied */
  uopc_tensor_set(&host, 3, 30.0);
  expect_copies(&c, 0, 0, "host writes");
  assert_uopc_ok(mirror_read(&m, MIRROR_HOST, &err), err);     /* the host is current */
  expect_copies(&c, 0, 0, "a host read after host writes");
  assert_uopc_ok(mirror_sync(&m, &err), err);
  expect_copies(&c, 1, 0, "sync after host writes");
  expect_in_sync(&m, &host, "after the upload");
  /* 3. Nothing changed: a sync and reads of both sides copy nothing. */
  assert_uopc_ok(mirror_sync(&m, &err), err);
  assert_uopc_ok(mirror_read(&m, MIRROR_DEVICE, &err), err);
  assert_uopc_ok(mirror_read(&m, MIRROR_HOST, &err), err);
  expect_copies(&c, 0, 0, "nothing changed");
  /* 4. Device writes twice, read on the device (current), then on the host: one download. */
  assert_uopc_ok(mirror_write(&m, MIRROR_DEVICE, &err), err);
  device_floats(&m)[4] = 40.0f;
  assert_uopc_ok(mirror_write(&m, MIRROR_DEVICE, &err), err);
  device_floats(&m)[5] = 50.0f;
  assert_uopc_ok(mirror_read(&m, MIRROR_DEVICE, &err), err);
  expect_copies(&c, 0, 0, "a device read after device writes");
  assert_uopc_ok(mirror_read(&m, MIRROR_HOST, &err), err);
  expect_copies(&c, 0, 1, "a host read after device writes");
  assert_uopc_ok(mirror_sync(&m, &err), err);
  expect_copies(&c, 0, 0, "sync after that read");
  expect_in_sync(&m, &host, "after the second download");
  /* 5. A host write, then a device read: one upload; then a device write is allowed. */
  uopc_tensor_set(&host, 6, 60.0);
  assert_uopc_ok(mirror_read(&m, MIRROR_DEVICE, &err), err);
  expect_copies(&c, 1, 0, "a device read after a host write");
  assert_uopc_ok(mirror_write(&m, MIRROR_DEVICE, &err), err);
  device_floats(&m)[7] = 70.0f;
  assert_uopc_ok(mirror_sync(&m, &err), err);
  expect_copies(&c, 0, 1, "sync after the device write");
  expect_in_sync(&m, &host, "at the end");
  static const float final[N] = {0, 10, 20, 30, 40, 50, 60, 70};
  for (int i = 0; i < N; i++) assert_true(uopc_tensor_get(&host, i) == final[i]);
  assert_int_equal(uopc_counter_get(MIRROR_C_REFRESHED), 5);
  mirror_free(&m);
  uopc_tensor_release(&host);
}

/* A host write and a device write since the last sync: sync refuses in either order of the
 * two writes, and a later sync still refuses (the error changed nothing). */
static void test_mirror_sync_refuses_two_writes_in_either_order(void **state) {
  (void)state;
  for (int device_first = 0; device_first < 2; device_first++) {
    uopc_tensor host = {0};
    mirror m;
    uopc_error err = {0};
    int64_t n = N;
    assert_uopc_ok(uopc_tensor_empty(&host, UOPC_F32, 1, &n, &err), err);
    assert_uopc_ok(mirror_new(&m, "w", &host, mirror_test_device(), &err), err);
    uint64_t v0 = uopc_tensor_version(&host);
    if (device_first) {
      assert_uopc_ok(mirror_write(&m, MIRROR_DEVICE, &err), err);
      uopc_tensor_set(&host, 0, 1.0);   /* undeclared: the version shows it */
    } else {
      uopc_tensor_set(&host, 0, 1.0);
      m.device_written = 1;             /* as a device write that slipped past mirror_write would */
    }
    copies c = copies_now();
    for (int k = 0; k < 2; k++) {
      assert_uopc_code(mirror_sync(&m, &err), UOPC_E_ALIAS, err);
      assert_contains(err.message, "mirror 'w': written on the host");
    }
    expect_copies(&c, 0, 0, "refused syncs");
    assert_int_equal(m.host_synced, v0);
    assert_int_equal(m.device_written, 1);
    mirror_free(&m);
    uopc_tensor_release(&host);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mirror_sync_ordering_over_a_long_life),
      cmocka_unit_test(test_mirror_sync_refuses_two_writes_in_either_order),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
