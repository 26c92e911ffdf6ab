/* counters.h: process-wide counters with stable names.
 * The grader and the instructors' logs compare these, so names never change:
 * they are listed in chapters/23-symbolic-shapes.md, "Counters".
 * Printed as `name=value` lines; written as JSON at exit when the environment
 * variable UOPC_COUNTERS_JSON names a file (one that cannot be written is
 * warned about on stderr, never fatal). Introduced in section 23.6. */
#ifndef UOPC_COUNTERS_H
#define UOPC_COUNTERS_H

#include <stdint.h>
#include <stdio.h>
#include "uopc/error.h"

/* The runtime's own counter names. Labs add theirs ("variants built", ...). */
#define UOPC_C_PROGRAMS_CONSTRUCTED "programs constructed"
#define UOPC_C_COMPILER_INVOCATIONS "compiler invocations"
#define UOPC_C_DISK_CACHE_HITS "disk cache hits"
#define UOPC_C_DISK_CACHE_MISSES "disk cache misses"
#define UOPC_C_CORRUPTED_REBUILT "corrupted entries rebuilt"
/* Not among the five created at start: it appears once this process has
 * evicted an entry, so that logs of runs that never evict stay as they were. */
#define UOPC_C_CACHE_EVICTIONS "cache evictions"
/* Calls of one program are counted under "calls <entry>". */
#define UOPC_C_CALLS_PREFIX "calls "

#define UOPC_COUNTER_NAME_MAX 96

/* A stable slot for name, created at zero on first use; the pointer stays valid
 * until exit, so hot paths can count with one relaxed atomic add.
 * Returns NULL only when the name is longer than UOPC_COUNTER_NAME_MAX - 1 or
 * memory runs out (counting is then skipped, never fatal). */
int64_t *uopc_counter_slot(const char *name);

/* Adds delta to a slot from uopc_counter_slot: the hot-path form, one relaxed
 * atomic add with no name lookup. A NULL slot is ignored. */
static inline void uopc_counter_bump(int64_t *slot, int64_t delta) {
  if (slot) __atomic_add_fetch(slot, delta, __ATOMIC_RELAXED);
}

/* Adds delta to the named counter (thread-safe; looks the name up each time). */
void uopc_counter_add(const char *name, int64_t delta);

/* The counter's value; 0 for a name never counted. */
int64_t uopc_counter_get(const char *name);

/* Prints every counter as `name=value`, one per line, in first-use order. */
void uopc_counters_print(FILE *out);

/* Writes {"name": value, ...} to path (atomically: temporary file + rename).
 * Called at exit for UOPC_COUNTERS_JSON; callable any time. */
int uopc_counters_write_json(const char *path, uopc_error *err);

/* Sets every counter back to zero (tests use this between cases). */
void uopc_counters_reset(void);

#endif
