/* kv.h: a true KV cache for decoding (lab 23.5).
 * Per layer, K and V of shape (batch, heads, capacity, head_dim), and a
 * populated length per batch row: the keys and values of the row's tokens
 * 0 .. length - 1 are in slots 0 .. length - 1. A step appends one token's
 * key and value at slot length, then attends over slots 0 .. length, and
 * only those: the attention's loop bound is the row's length, a symbolic
 * dim of one compiled plan, never the capacity. Chapter 23.5. */
#ifndef KV_H
#define KV_H

#include "exec.h"

#define KV_C_STEPS "steps"
#define KV_C_RESETS "resets"
#define KV_C_PLANS "plans built"        /* the model's programs: a fixed number, whatever the positions */

typedef struct kv_cache {
  int layers, batch, heads, capacity, head_dim;
  uopc_tensor *k, *v;            /* [layers]: (batch, heads, capacity, head_dim), f32, owned */
  int64_t *length;               /* [batch]: populated slots of each row */
} kv_cache;

/* A cache of zeros, every row empty. The caller owns it (kv_cache_free).
 * Errors: UOPC_E_INVALID (a size below 1), UOPC_E_OVERFLOW (more than
 * 2^31 elements per layer), UOPC_E_NOMEM. */
int kv_cache_init(kv_cache *c, int layers, int batch, int heads, int capacity, int head_dim, uopc_error *err);
void kv_cache_free(kv_cache *c);

/* ---- The student's part (kv_cache.c). */

/* Writes one token's key and value for row b of layer l into slot
 * length[b] (k and v: contiguous f32 (heads, head_dim)). It does not move
 * the length: kv_advance does, once every layer is written. The write is
 * recorded: layer l's K and V versions move (uopc_tensor_bump_version).
 * Errors, each leaving the cache unchanged, versions included:
 * UOPC_E_INVALID (NULL, or a layer or row out of range, the value then the
 * range: "kv: layer -1 outside [0, 2)"), UOPC_E_DTYPE,
 * UOPC_E_BOUNDS (k or v not (heads, head_dim)); for a NULL, mistyped or
 * misshapen k or v the message says which, "key" or "value". UOPC_E_LIMIT
 * (the row is full: length[b] == capacity; the message names the row, its
 * length and the capacity). */
int kv_append(kv_cache *c, int l, int b, const uopc_tensor *k, const uopc_tensor *v, uopc_error *err);

/* length[b] += 1, after a step wrote every layer. Errors: UOPC_E_INVALID,
 * UOPC_E_LIMIT (already full), cache unchanged. */
int kv_advance(kv_cache *c, int b, uopc_error *err);

/* Empties row b (b = -1: every row): its length becomes 0 and its slots
 * zero, so nothing of an old sequence can be read by a new one; every
 * layer's K and V versions move. Errors: UOPC_E_INVALID (b out of range),
 * cache unchanged, versions included. */
int kv_reset_rows(kv_cache *c, int b, uopc_error *err);

/* kv_reset_rows, counted as KV_C_RESETS (given, kv.c). */
int kv_reset(kv_cache *c, int b, uopc_error *err);

/* *k_out, *v_out = views (heads, length, head_dim) of layer l's populated
 * prefix of row b, with length = length[b] + extra (extra 1: the slot the
 * current step just wrote). The caller releases them. Errors, holding no
 * view: UOPC_E_INVALID (NULL, layer or row out of range), UOPC_E_BOUNDS
 * (length past the capacity). */
int kv_row_prefix(const kv_cache *c, int l, int b, int extra, uopc_tensor *k_out, uopc_tensor *v_out,
                  uopc_error *err);

#endif
