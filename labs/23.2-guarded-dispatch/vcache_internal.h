/* vcache_internal.h: what the variant cache's files share (lab 23.2, given
 * code); later stages include vcache.h only. */
#ifndef VCACHE_INTERNAL_H
#define VCACHE_INTERNAL_H

#include "vcache.h"

enum { VCACHE_INDEX_MASK = VCACHE_INDEX_SLOTS - 1 };

/* The index's first slot for value: Fibonacci hashing, the top six bits. */
static inline unsigned vcache_index_slot(int64_t value) {
  return (unsigned)(((uint64_t)value * UINT64_C(0x9E3779B97F4A7C15)) >> 58) & VCACHE_INDEX_MASK;
}

/* "x: f32 (7, 3); y: f32 (7)": the inputs of call, for messages. */
void vcache_call_text(const vcache *c, const guard_call *call, char *buf, size_t size);

/* Frees v and all it owns (NULL is fine). */
void vcache_variant_free(vcache_variant *v);

#endif
