/* dispatch_ffi.c: the dispatcher for foreign callers (lab 23.2, given).
 * Heap lifecycle and read-only accessors, so that ctypes never mirrors the
 * dispatcher struct. Only in labs/: IMPL=labs and IMPL=solutions both build
 * it into liblab23_2.so. */
#include <stdlib.h>
#include <string.h>
#include "dispatch_ffi.h"

dispatcher *dispatch_new(int64_t max_length, int max_variants, int on_limit, int specialize_length,
                         uopc_error *err) {
  dispatch_options opts = {.max_length = max_length, .max_variants = max_variants,
                           .on_limit = (dispatch_on_limit)on_limit, .specialize_length = specialize_length};
  dispatcher *d = malloc(sizeof *d);
  if (!d) { UOPC_FAIL(err, UOPC_E_NOMEM, "no memory for a dispatcher (%zu bytes)", sizeof *d); return NULL; }
  if (dispatch_init(d, &opts, err) != UOPC_OK) { free(d); return NULL; }
  return d;
}

void dispatch_free(dispatcher *d) {
  if (!d) return;
  dispatch_fini(d);
  free(d);
}

int64_t dispatch_stat(const dispatcher *d, const char *name) {
  const vcache_stats *s = &d->cache.stats;
  if (!strcmp(name, DISPATCH_C_VARIANTS_BUILT)) return s->variants_built;
  if (!strcmp(name, DISPATCH_C_GUARD_CHECKS)) return s->guard_checks;
  if (!strcmp(name, DISPATCH_C_GUARD_FAILURES)) return s->guard_failures;
  if (!strcmp(name, DISPATCH_C_FAST_CALLS)) return d->stats.fast_calls;
  if (!strcmp(name, DISPATCH_C_GENERIC_CALLS)) return d->stats.generic_calls;
  if (!strcmp(name, DISPATCH_STAT_LIMIT_HITS)) return s->limit_hits;
  return -1;
}
