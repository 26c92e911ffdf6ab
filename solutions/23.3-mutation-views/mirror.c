/* mirror.c: a host copy and a device copy that cannot silently diverge
 * (lab 23.3). The host's storage version says when the host changed; the
 * device changes only through declared writes. A stale side is refreshed
 * before it is read, and two unsynced writes are an error, never a lost
 * update. Chapter 23.3, "Host and device copies". */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "mirror.h"

/* ---- The host-memory test device. Its copy counts are process-wide, as
 * uopc's counters are: the device is one static stand-in for a GPU, and a
 * test reads the counts before and after (mirror_test_device_copies). */

typedef struct test_copies { int64_t uploads, downloads; } test_copies;
static test_copies test_device_copies;

static int test_alloc(void *ctx, size_t bytes, uint64_t *addr, uopc_error *err) {
  (void)ctx;
  void *p = malloc(bytes ? bytes : 1);   /* malloc(0) may return NULL, which is no address */
  if (!p) return UOPC_FAIL(err, UOPC_E_NOMEM, "no memory for a %zu-byte device copy", bytes);
  *addr = (uint64_t)(uintptr_t)p;
  return UOPC_OK;
}

static void test_release(void *ctx, uint64_t addr) {
  (void)ctx;
  free((void *)(uintptr_t)addr);
}

static int test_upload(void *ctx, uint64_t dst, const void *src, size_t bytes, uopc_error *err) {
  (void)err;
  if (bytes) memcpy((void *)(uintptr_t)dst, src, bytes);
  __atomic_add_fetch(&((test_copies *)ctx)->uploads, 1, __ATOMIC_RELAXED);
  return UOPC_OK;
}

static int test_download(void *ctx, void *dst, uint64_t src, size_t bytes, uopc_error *err) {
  (void)err;
  if (bytes) memcpy(dst, (const void *)(uintptr_t)src, bytes);
  __atomic_add_fetch(&((test_copies *)ctx)->downloads, 1, __ATOMIC_RELAXED);
  return UOPC_OK;
}

static const mirror_device TEST_DEVICE = {"host-memory test device", test_alloc, test_release, test_upload,
                                          test_download, &test_device_copies};

const mirror_device *mirror_test_device(void) { return &TEST_DEVICE; }

void mirror_test_device_copies(int64_t *uploads, int64_t *downloads) {
  if (uploads) *uploads = __atomic_load_n(&test_device_copies.uploads, __ATOMIC_RELAXED);
  if (downloads) *downloads = __atomic_load_n(&test_device_copies.downloads, __ATOMIC_RELAXED);
}

/* ---- The CUDA device, through uopc's driver calls. */

static int cuda_alloc(void *ctx, size_t bytes, uint64_t *addr, uopc_error *err) {
  (void)ctx;
  unsigned long long p = 0;
  int rc = uopc_cuda_alloc(&p, bytes ? bytes : 1, err);   /* the driver refuses 0 bytes */
  *addr = p;
  return rc;
}

static void cuda_release(void *ctx, uint64_t addr) {
  (void)ctx;
  uopc_cuda_free(addr, NULL);   /* nothing to do about a failed free at teardown */
}

static int cuda_upload(void *ctx, uint64_t dst, const void *src, size_t bytes, uopc_error *err) {
  (void)ctx;
  return uopc_cuda_copy_to_device(dst, src, bytes, err);
}

static int cuda_download(void *ctx, void *dst, uint64_t src, size_t bytes, uopc_error *err) {
  (void)ctx;
  return uopc_cuda_copy_to_host(dst, src, bytes, err);
}

int mirror_cuda_device(mirror_device *out, uopc_error *err) {
  if (!out) return UOPC_FAIL(err, UOPC_E_INVALID, "out is NULL");
  uopc_error why = {0};
  if (uopc_cuda_available(&why) != UOPC_OK)
    return UOPC_FAIL(err, UOPC_E_NO_CUDA, "no CUDA device for a mirror: %s", why.message);
  *out = (mirror_device){"cuda", cuda_alloc, cuda_release, cuda_upload, cuda_download, NULL};
  return UOPC_OK;
}

/* ---- Lifecycle. */

static int check_new(const char *name, const uopc_tensor *host, const mirror_device *dev, uopc_error *err) {
  if (!name || !*name || strlen(name) >= sizeof ((mirror *)0)->name)
    return UOPC_FAIL(err, UOPC_E_INVALID, "a mirror's name has 1 to %zu characters; got %s%s%s",
                     sizeof ((mirror *)0)->name - 1, name ? "'" : "NULL", name ? name : "", name ? "'" : "");
  if (!host || !host->storage) return UOPC_FAIL(err, UOPC_E_INVALID, "mirror '%s': the host tensor is NULL or released", name);
  if (!dev || !dev->alloc || !dev->release || !dev->upload || !dev->download)
    return UOPC_FAIL(err, UOPC_E_INVALID, "mirror '%s': the device is NULL or lacks an operation", name);
  if (!uopc_tensor_is_contiguous(host))
    return UOPC_FAIL(err, UOPC_E_LAYOUT, "mirror '%s': the host tensor is not contiguous; mirror a copy of it", name);
  return UOPC_OK;
}

int mirror_new(mirror *m, const char *name, const uopc_tensor *host, const mirror_device *dev,
               uopc_error *err) {
  if (!m) return UOPC_FAIL(err, UOPC_E_INVALID, "m is NULL");
  memset(m, 0, sizeof *m);
  int rc = check_new(name, host, dev, err);
  if (rc) return rc;
  memcpy(m->name, name, strlen(name) + 1);   /* fits: check_new measured it */
  m->bytes = (size_t)uopc_tensor_numel(host) * uopc_dtype_size(host->dtype);
  rc = dev->alloc(dev->ctx, m->bytes, &m->device, err);
  if (rc) return rc;
  m->dev = dev;
  uopc_tensor_retain(&m->host, host);
  m->host_synced = uopc_tensor_version(host);   /* the version the upload below copies */
  rc = dev->upload(dev->ctx, m->device, uopc_tensor_data(host), m->bytes, err);
  if (rc) mirror_free(m);
  return rc;
}

void mirror_free(mirror *m) {
  if (!m) return;
  if (m->dev) m->dev->release(m->dev->ctx, m->device);
  uopc_tensor_release(&m->host);
  memset(m, 0, sizeof *m);
}

// STUDENT 23.3 helpers
static int check_mirror(const mirror *m, mirror_side s, uopc_error *err) {
  if (!m || !m->dev || !m->host.storage) return UOPC_FAIL(err, UOPC_E_INVALID, "the mirror is NULL or freed");
  if (s != MIRROR_HOST && s != MIRROR_DEVICE)
    return UOPC_FAIL(err, UOPC_E_INVALID, "mirror '%s': side %d is neither the host nor the device", m->name, (int)s);
  return UOPC_OK;
}

/* Any write through any view of the host moved its storage's version. */
static int host_changed(const mirror *m) { return uopc_tensor_version(&m->host) != m->host_synced; }

/* Copies the newer side onto side `onto`; then both are in sync. */
static int refresh(mirror *m, mirror_side onto, uopc_error *err) {
  const mirror_device *d = m->dev;
  int rc;
  if (onto == MIRROR_DEVICE) {
    rc = d->upload(d->ctx, m->device, uopc_tensor_data(&m->host), m->bytes, err);
  } else {
    rc = d->download(d->ctx, uopc_tensor_data(&m->host), m->device, m->bytes, err);
    if (!rc) uopc_tensor_bump_version(&m->host);   /* the host's bytes changed under every view of it */
  }
  if (rc) return rc;
  m->host_synced = uopc_tensor_version(&m->host);   /* after the bump: the download is part of the sync */
  m->device_written = 0;
  uopc_counter_add(MIRROR_C_REFRESHED, 1);
  return UOPC_OK;
}
// END STUDENT

int mirror_read(mirror *m, mirror_side s, uopc_error *err) {
// STUDENT 23.3 mirror_read
  int rc = check_mirror(m, s, err);
  if (rc) return rc;
  int host_new = host_changed(m);
  if (host_new && m->device_written)
    return UOPC_FAIL(err, UOPC_E_ALIAS,
                     "mirror '%s': written on the host (version %" PRIu64 ", synced at %" PRIu64
                     ") and on the device since the last sync",
                     m->name, uopc_tensor_version(&m->host), m->host_synced);
  if (s == MIRROR_HOST && m->device_written) return refresh(m, MIRROR_HOST, err);
  if (s == MIRROR_DEVICE && host_new) return refresh(m, MIRROR_DEVICE, err);
  return UOPC_OK;   /* current: the other side has no write this one lacks */
// END STUDENT
}

int mirror_write(mirror *m, mirror_side s, uopc_error *err) {
// STUDENT 23.3 mirror_write
  int rc = check_mirror(m, s, err);
  if (rc) return rc;
  if (s == MIRROR_DEVICE && host_changed(m))
    return UOPC_FAIL(err, UOPC_E_ALIAS,
                     "mirror '%s': a device write while the host holds newer data (version %" PRIu64
                     ", synced at %" PRIu64 "); read the device first",
                     m->name, uopc_tensor_version(&m->host), m->host_synced);
  if (s == MIRROR_HOST && m->device_written)
    return UOPC_FAIL(err, UOPC_E_ALIAS,
                     "mirror '%s': a host write while the device holds newer data (written since the sync at "
                     "version %" PRIu64 "); read the host first",
                     m->name, m->host_synced);
  if (s == MIRROR_DEVICE) m->device_written = 1;
  return UOPC_OK;
// END STUDENT
}

int mirror_sync(mirror *m, uopc_error *err) {
// STUDENT 23.3 mirror_sync
  int rc = check_mirror(m, MIRROR_HOST, err);
  if (rc) return rc;
  /* Reading the older side copies the newer onto it (or reports two
   * writes); with neither changed, reading the host copies nothing. */
  return mirror_read(m, host_changed(m) ? MIRROR_DEVICE : MIRROR_HOST, err);
// END STUDENT
}
