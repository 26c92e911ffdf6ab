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

/* A counter's identity for the hot path: an index into every thread's cells.
 * Negative for none (counting is then skipped, never fatal). */
typedef int32_t uopc_counter_id;
#define UOPC_COUNTER_NONE (-1)

/* The counter named name, created at zero on first use; the id stays valid
 * until exit. UOPC_COUNTER_NONE only when the name is longer than
 * UOPC_COUNTER_NAME_MAX - 1 or memory runs out. */
uopc_counter_id uopc_counter_slot(const char *name);

/* Each thread counts into cells of its own, and a counter's value is the sum
 * over threads (those that have exited included), taken when it is read. A
 * cell has one writer, so a bump is a plain load and store (relaxed atomics,
 * no locked instruction): on the dispatchers' hot paths a locked add cost
 * about 5 ns a counter, a third of 23.2's whole overhead (chapter 23.A). */
#define UOPC_COUNTER_CHUNK 256      /* cells in one block of a thread's table */
#define UOPC_COUNTER_CHUNKS 4096    /* blocks: at most 1M counters a process */
/* This thread's table of blocks (NULL until it first counts). Initial-exec:
 * one %fs-relative load; libuopc holds one pointer of static TLS. */
extern __thread int64_t **uopc_counter_cells_ __attribute__((tls_model("initial-exec")));
/* The cold path: makes this thread's table or block, then counts. */
void uopc_counter_bump_slow(uopc_counter_id id, int64_t delta);

/* Adds delta to counter id: the hot-path form, no name lookup. */
static inline void uopc_counter_bump(uopc_counter_id id, int64_t delta) {
  int64_t **table = uopc_counter_cells_, *block;
  if (id < 0) return;
  if (!table || !(block = table[id / UOPC_COUNTER_CHUNK])) {
    uopc_counter_bump_slow(id, delta);
    return;
  }
  int64_t *cell = &block[id % UOPC_COUNTER_CHUNK];
  __atomic_store_n(cell, __atomic_load_n(cell, __ATOMIC_RELAXED) + delta, __ATOMIC_RELAXED);
}

/* Adds delta to the named counter (thread-safe; looks the name up each time). */
void uopc_counter_add(const char *name, int64_t delta);

/* The counter's value; 0 for a name never counted. */
int64_t uopc_counter_get(const char *name);

/* Prints every counter as `name=value`, one per line, in first-use order. */
void uopc_counters_print(FILE *out);

/* Writes {"name": value, ...} to path (atomically: temporary file + rename).
 * Called at exit for UOPC_COUNTERS_JSON; callable any time. Errors:
 * UOPC_E_INVALID when path.tmp.<pid> does not fit PATH_MAX (a path of at most
 * PATH_MAX - 16 bytes always does; the message says this limit before the
 * path, since a path that long fills the message), UOPC_E_IO. */
int uopc_counters_write_json(const char *path, uopc_error *err);

/* Sets every counter back to zero (tests use this between cases, when no
 * other thread is counting: a bump racing a reset may survive it). */
void uopc_counters_reset(void);

#endif
