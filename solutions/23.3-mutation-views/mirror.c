/* mirror.c: a host copy and a device copy that cannot silently diverge
 * (lab 23.3). The host's storage version says when the host changed; the
 * device changes only through declared writes. A stale side is refreshed
 * before it is read, and two unsynced writes are an error, never a lost
 * update. Chapter 23.3, "Host and device copies". */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "mirror.h"

// STUDENT 23.3 helpers
static int check_mirror(const mirror *m, mirror_side s, uopc_error *err) {
  if (!m || !m->dev || !m->host.storage) return UOPC_FAIL(err, UOPC_E_INVALID, "the mirror is NULL or freed");
  if (s != MIRROR_HOST && s != MIRROR_DEVICE)
    return UOPC_FAIL(err, UOPC_E_INVALID, "mirror '%s': side %d is neither the host nor the device", m->name, (int)s);
  return UOPC_OK;
}

/* Any write through any view of the host moved its storage's version. */
static int host_changed(const mirror *m) { return uopc_tensor_version(&m->host) != m->host_synced; }

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
  if (s == MIRROR_HOST && m->device_written) return mirror_refresh(m, MIRROR_HOST, err);
  if (s == MIRROR_DEVICE && host_new) return mirror_refresh(m, MIRROR_DEVICE, err);
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
