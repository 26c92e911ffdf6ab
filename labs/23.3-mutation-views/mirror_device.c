/* mirror_device.c: the devices a mirror copies to, making and freeing a
 * mirror, and the one copy between its sides (given code, lab 23.3). The
 * rule of when to copy is the student's (mirror.c). Chapter 23.3, "Host
 * and device copies". */
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

/* Copies the newer side onto side `onto`; then both are in sync. */
int mirror_refresh(mirror *m, mirror_side onto, uopc_error *err) {
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
