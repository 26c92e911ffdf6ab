/* mirror.c: a host copy and a device copy that cannot silently diverge
 * (lab 23.3). The host's storage version says when the host changed; the
 * device changes only through declared writes. A stale side is refreshed
 * before it is read, and two unsynced writes are an error, never a lost
 * update. Chapter 23.3, "Host and device copies". */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "mirror.h"

/* Lab 23.3: helper functions for your code go here. */

int mirror_read(mirror *m, mirror_side s, uopc_error *err) {
  /* Lab 23.3: write mirror_read here. See README.md in this folder. */
  (void)m; (void)s;
  return UOPC_FAIL(err, UOPC_E_NOT_IMPLEMENTED, "lab 23.3: mirror_read is not implemented yet");
}

int mirror_write(mirror *m, mirror_side s, uopc_error *err) {
  /* Lab 23.3: write mirror_write here. See README.md in this folder. */
  (void)m; (void)s;
  return UOPC_FAIL(err, UOPC_E_NOT_IMPLEMENTED, "lab 23.3: mirror_write is not implemented yet");
}

int mirror_sync(mirror *m, uopc_error *err) {
  /* Lab 23.3: write mirror_sync here. See README.md in this folder. */
  (void)m;
  return UOPC_FAIL(err, UOPC_E_NOT_IMPLEMENTED, "lab 23.3: mirror_sync is not implemented yet");
}
