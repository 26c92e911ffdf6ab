/* kv.c: the cache's storage (given code, lab 23.5). One zeroed f32 tensor
 * per layer for K and one for V, (batch, heads, capacity, head_dim), and a
 * length per row, all owned by the cache. Chapter 23.5, "The cache's shape
 * and ownership". */
#include <stdlib.h>
#include <string.h>
#include "kv.h"

void kv_cache_free(kv_cache *c) {
  if (!c) return;
  for (int l = 0; c->k && l < c->layers; l++) uopc_tensor_release(&c->k[l]);
  for (int l = 0; c->v && l < c->layers; l++) uopc_tensor_release(&c->v[l]);
  free(c->k), free(c->v), free(c->length);
  memset(c, 0, sizeof *c);
}

/* a * b * c * d <= INT32_MAX for sizes >= 1, each partial product checked
 * (four ints can reach 2^124: the product itself would overflow int64). */
static int fits_int32(int64_t a, int64_t b, int64_t c, int64_t d) {
  int64_t n = a * b;
  if (n > INT32_MAX) return 0;
  n *= c;
  return n <= INT32_MAX && n * d <= INT32_MAX;
}

int kv_cache_init(kv_cache *c, int layers, int batch, int heads, int capacity, int head_dim, uopc_error *err) {
  if (!c) return UOPC_FAIL(err, UOPC_E_INVALID, "kv_cache_init: NULL cache");
  memset(c, 0, sizeof *c);
  if (layers < 1 || batch < 1 || heads < 1 || capacity < 1 || head_dim < 1)
    return UOPC_FAIL(err, UOPC_E_INVALID, "kv_cache_init: layers %d, batch %d, heads %d, capacity %d, head_dim %d:"
                     " each must be at least 1", layers, batch, heads, capacity, head_dim);
  if (!fits_int32(batch, heads, capacity, head_dim))
    return UOPC_FAIL(err, UOPC_E_OVERFLOW, "kv_cache_init: %d x %d x %d x %d elements per layer (batch, heads,"
                     " capacity, head_dim; at most 2^31 - 1)", batch, heads, capacity, head_dim);
  *c = (kv_cache){.layers = layers, .batch = batch, .heads = heads, .capacity = capacity, .head_dim = head_dim};
  c->k = calloc((size_t)layers, sizeof *c->k);
  c->v = calloc((size_t)layers, sizeof *c->v);
  c->length = calloc((size_t)batch, sizeof *c->length);
  int rc = c->k && c->v && c->length ? UOPC_OK : UOPC_FAIL(err, UOPC_E_NOMEM, "kv_cache_init: out of memory");
  int64_t shape[4] = {batch, heads, capacity, head_dim};
  for (int l = 0; l < layers && !rc; l++) {
    rc = uopc_tensor_empty(&c->k[l], UOPC_F32, 4, shape, err);
    if (!rc) rc = uopc_tensor_empty(&c->v[l], UOPC_F32, 4, shape, err);
    if (!rc) {
      memset(uopc_tensor_data(&c->k[l]), 0, (size_t)uopc_tensor_numel(&c->k[l]) * sizeof(float));
      memset(uopc_tensor_data(&c->v[l]), 0, (size_t)uopc_tensor_numel(&c->v[l]) * sizeof(float));
    }
  }
  if (rc) kv_cache_free(c);
  return rc;
}

int kv_reset(kv_cache *c, int b, uopc_error *err) {
  int rc = kv_reset_rows(c, b, err);
  if (!rc) uopc_counter_add(KV_C_RESETS, 1);
  return rc;
}
