/* dispatch_ffi.h: the dispatcher for foreign callers (lab 23.2, given).
 * A dispatcher is a large struct whose layout the lab may change, so a caller
 * outside C (the harness, through ctypes) never mirrors it: it holds a
 * pointer from dispatch_new, passes it to dispatch_call and dispatch_explain
 * (dispatch.h) like any C caller, and reads what it checks through these
 * accessors. Nothing here is student work. */
#ifndef DISPATCH_FFI_H
#define DISPATCH_FFI_H

#include "dispatch.h"

#define DISPATCH_STAT_LIMIT_HITS "limit hits"   /* d->cache.stats.limit_hits */

/* ---- Lifecycle. */

/* A heap dispatcher with these options (the rest as dispatch_options' zero:
 * default compiler and cache, no fast-math); 0 for max_length or
 * max_variants means the default; on_limit is a dispatch_on_limit. The
 * caller owns the result and frees it with dispatch_free. NULL on failure,
 * with err filled: UOPC_E_NOMEM, those of dispatch_init. */
dispatcher *dispatch_new(int64_t max_length, int max_variants, int on_limit, int specialize_length,
                         uopc_error *err);
/* Finishes and frees d (NULL is fine). */
void dispatch_free(dispatcher *d);

/* ---- What a caller checks. */

/* This dispatcher's own count named name: one of the DISPATCH_C_ counter
 * names ("variants built", "guard checks", "guard failures", "fast path calls",
 * "generic calls") or DISPATCH_STAT_LIMIT_HITS; -1 for any other name. */
int64_t dispatch_stat(const dispatcher *d, const char *name);

/* dispatch_last_path and dispatch_fast_count (dispatch.h) serve foreign
 * callers as they are. */

#endif
