/* mirror.h: a tensor with a host copy and a device copy that cannot silently
 * diverge (lab 23.3). The host copy is a uopc tensor, so every write through
 * any of its views moves its storage version (uopc_tensor_version); the
 * device copy is written only through mirror_write. The mirror remembers the
 * host version each side reflects, so a stale side is refreshed before it is
 * read, and a write on each side without a sync between is an error rather
 * than a lost update. Chapter 23.3, "Host and device copies". */
#ifndef MIRROR_H
#define MIRROR_H

#include <stdint.h>
#include "uopc/uopc.h"

#define MIRROR_C_REFRESHED "stale copies refreshed"

/* Where the device copy lives: a GPU (mirror_cuda_device), or host memory
 * standing in for one, for tests on machines without a GPU. */
typedef struct mirror_device {
  const char *name;                   /* "host-memory test device", "cuda" */
  int (*alloc)(void *ctx, size_t bytes, uint64_t *addr, uopc_error *err);
  void (*release)(void *ctx, uint64_t addr);
  int (*upload)(void *ctx, uint64_t dst, const void *src, size_t bytes, uopc_error *err);
  int (*download)(void *ctx, void *dst, uint64_t src, size_t bytes, uopc_error *err);
  void *ctx;
} mirror_device;

/* The host-memory device (always available; counts its copies). */
const mirror_device *mirror_test_device(void);
/* The test device's copies since the process started, each way (either
 * pointer may be NULL): tests count what a read moved by the difference. */
void mirror_test_device_copies(int64_t *uploads, int64_t *downloads);
/* The CUDA device through uopc (cuda.h). Errors: UOPC_E_NO_CUDA. */
int mirror_cuda_device(mirror_device *out, uopc_error *err);

typedef enum mirror_side { MIRROR_HOST, MIRROR_DEVICE } mirror_side;

typedef struct mirror {
  char name[32];                      /* for messages: the tensor's name */
  uopc_tensor host;                   /* a reference to the caller's contiguous tensor */
  const mirror_device *dev;
  uint64_t device;                    /* the device copy's address */
  size_t bytes;
  uint64_t host_synced;               /* the host version both sides held at the last sync */
  int device_written;                 /* the device was written since that sync */
} mirror;

/* A mirror of host (contiguous) with a device copy uploaded from it: both
 * sides in sync. Errors: UOPC_E_INVALID (NULL, a bad name), UOPC_E_LAYOUT
 * (not contiguous), the device's. */
int mirror_new(mirror *m, const char *name, const uopc_tensor *host, const mirror_device *dev,
               uopc_error *err);
/* Frees the device copy and drops the host reference. */
void mirror_free(mirror *m);

/* Given (mirror_device.c): copies the newer side onto side onto (host to
 * device: upload; device to host: download, then uopc_tensor_bump_version on
 * the host, since its bytes changed); then both sides are in sync
 * (host_synced = the host's version now, device_written = 0) and
 * MIRROR_C_REFRESHED is counted once. Errors: the device's. */
int mirror_refresh(mirror *m, mirror_side onto, uopc_error *err);

/* ---- The rule (student, mirror.c). "The host changed" means the host
 * storage's version differs from host_synced. Each of the three also fails
 * with UOPC_E_INVALID for a NULL or freed mirror, and mirror_read and
 * mirror_write for a side that is neither MIRROR_HOST nor MIRROR_DEVICE
 * (the message names the mirror and the side's value). */

/* Before reading side s. The side is current when the other side has no
 * write it lacks: then nothing happens. Otherwise the newer side is copied
 * onto it (host to device: upload; device to host: download, then
 * uopc_tensor_bump_version on the host, since its bytes changed), the two
 * are in sync again (host_synced = the host's version now, device_written
 * = 0) and MIRROR_C_REFRESHED is counted once. Errors: UOPC_E_ALIAS when
 * both sides were written since the last sync ("mirror 'w': written on the
 * host (version 5, synced at 3) and on the device since the last sync"),
 * leaving both unchanged; the device's. */
int mirror_read(mirror *m, mirror_side s, uopc_error *err);

/* Declares a write on side s, before the caller makes it (host writes need
 * no declaration: the version shows them; declaring one checks it early).
 * Errors: UOPC_E_ALIAS when the other side was written since the last sync
 * (writing this side now would lose that write: "mirror 'w': a device write
 * while the host holds newer data (version 5, synced at 3); read the device
 * first"). Otherwise a device write sets device_written. */
int mirror_write(mirror *m, mirror_side s, uopc_error *err);

/* Makes both sides equal: copies the newer side onto the older, if either
 * changed. Errors: as mirror_read. */
int mirror_sync(mirror *m, uopc_error *err);

/* The device copy's address after mirror_read(DEVICE) or mirror_write(DEVICE). */
static inline uint64_t mirror_device_addr(const mirror *m) { return m->device; }

#endif
