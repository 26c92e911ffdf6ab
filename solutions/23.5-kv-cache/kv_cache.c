/* kv_cache.c: appending, advancing, resetting and reading the populated
 * prefix (lab 23.5, student file). Every refusal leaves the cache as it
 * was: a full row, a bad layer or row, a key of the wrong shape. Chapter
 * 23.5, "The cache's shape and ownership". */
#include <string.h>
#include "kv.h"

// STUDENT 23.5 helpers
static int check_row(const kv_cache *c, int l, int b, uopc_error *err) {
  if (!c || !c->k) return UOPC_FAIL(err, UOPC_E_INVALID, "kv: NULL or freed cache");
  if (l < 0 || l >= c->layers) return UOPC_FAIL(err, UOPC_E_INVALID, "kv: layer %d outside [0, %d)", l, c->layers);
  if (b < 0 || b >= c->batch) return UOPC_FAIL(err, UOPC_E_INVALID, "kv: row %d outside [0, %d)", b, c->batch);
  return UOPC_OK;
}

static int check_token(const kv_cache *c, const uopc_tensor *t, const char *what, uopc_error *err) {
  if (!t || !t->storage) return UOPC_FAIL(err, UOPC_E_INVALID, "kv_append: the %s is NULL or released", what);
  if (t->dtype != UOPC_F32) return UOPC_FAIL(err, UOPC_E_DTYPE, "kv_append: the %s is %s, not f32", what,
                                             uopc_dtype_name(t->dtype));
  if (t->rank != 2 || t->shape[0] != c->heads || t->shape[1] != c->head_dim || !uopc_tensor_is_contiguous(t))
    return UOPC_FAIL(err, UOPC_E_BOUNDS, "kv_append: the %s must be contiguous (%d, %d), heads by head_dim", what,
                     c->heads, c->head_dim);
  return UOPC_OK;
}

/* Element offset of (b, h, slot, 0) in a layer's (batch, heads, capacity, head_dim). */
static int64_t at(const kv_cache *c, int b, int h, int64_t slot) {
  return (((int64_t)b * c->heads + h) * c->capacity + slot) * c->head_dim;
}
// END STUDENT

int kv_append(kv_cache *c, int l, int b, const uopc_tensor *k, const uopc_tensor *v, uopc_error *err) {
  // STUDENT 23.5 kv_append
  int rc = check_row(c, l, b, err);
  if (!rc) rc = check_token(c, k, "key", err);
  if (!rc) rc = check_token(c, v, "value", err);
  if (rc) return rc;
  int64_t p = c->length[b];
  if (p >= c->capacity)
    return UOPC_FAIL(err, UOPC_E_LIMIT, "kv_append: row %d holds %lld tokens, the capacity: reset it first", b,
                     (long long)p);
#ifdef KV_APPEND_SLOT_PLUS_ONE   /* a test-only build writes the slot after: tests/broken/23.5.mk */
  p += 1;
#endif
  float *kd = uopc_tensor_data(&c->k[l]), *vd = uopc_tensor_data(&c->v[l]);
  const float *ks = uopc_tensor_data(k), *vs = uopc_tensor_data(v);
  size_t row = (size_t)c->head_dim * sizeof(float);
  for (int h = 0; h < c->heads; h++) {
    memcpy(kd + at(c, b, h, p), ks + (int64_t)h * c->head_dim, row);
    memcpy(vd + at(c, b, h, p), vs + (int64_t)h * c->head_dim, row);
  }
  uopc_tensor_bump_version(&c->k[l]);
  uopc_tensor_bump_version(&c->v[l]);
  return UOPC_OK;
  // END STUDENT
}

int kv_advance(kv_cache *c, int b, uopc_error *err) {
  // STUDENT 23.5 kv_advance
  int rc = check_row(c, 0, b, err);
  if (rc) return rc;
  if (c->length[b] >= c->capacity)
    return UOPC_FAIL(err, UOPC_E_LIMIT, "kv_advance: row %d is full (%d slots)", b, c->capacity);
  c->length[b]++;
  return UOPC_OK;
  // END STUDENT
}

int kv_reset_rows(kv_cache *c, int b, uopc_error *err) {
  // STUDENT 23.5 kv_reset_rows
  if (!c || !c->k) return UOPC_FAIL(err, UOPC_E_INVALID, "kv_reset: NULL or freed cache");
  if (b < -1 || b >= c->batch) return UOPC_FAIL(err, UOPC_E_INVALID, "kv_reset: row %d outside [-1, %d)", b, c->batch);
  int lo = b < 0 ? 0 : b, hi = b < 0 ? c->batch : b + 1;
  size_t row = (size_t)c->heads * (size_t)c->capacity * (size_t)c->head_dim * sizeof(float);
  for (int l = 0; l < c->layers; l++) {
    for (int r = lo; r < hi; r++) {      /* a new sequence can never read an old one's keys */
      memset((float *)uopc_tensor_data(&c->k[l]) + at(c, r, 0, 0), 0, row);
      memset((float *)uopc_tensor_data(&c->v[l]) + at(c, r, 0, 0), 0, row);
    }
    uopc_tensor_bump_version(&c->k[l]);
    uopc_tensor_bump_version(&c->v[l]);
  }
  for (int r = lo; r < hi; r++) c->length[r] = 0;
  return UOPC_OK;
  // END STUDENT
}

int kv_row_prefix(const kv_cache *c, int l, int b, int extra, uopc_tensor *k_out, uopc_tensor *v_out,
                  uopc_error *err) {
  // STUDENT 23.5 kv_row_prefix
  int rc = check_row(c, l, b, err);
  if (rc) return rc;
  int64_t n = c->length[b] + extra;
  if (extra < 0 || n < 0 || n > c->capacity)
    return UOPC_FAIL(err, UOPC_E_BOUNDS, "kv_row_prefix: %lld slots of row %d (capacity %d)", (long long)n, b,
                     c->capacity);
#ifdef KV_PREFIX_WHOLE_CAPACITY   /* a test-only build attends over every slot, unmasked: tests/broken/23.5.mk */
  n = c->capacity;
#endif
  uopc_tensor kr = {0}, vr = {0};
  rc = uopc_tensor_select(&kr, &c->k[l], 0, b, err);
  if (!rc) rc = uopc_tensor_select(&vr, &c->v[l], 0, b, err);
  if (!rc) rc = uopc_tensor_slice(k_out, &kr, 1, 0, n, 1, err);
  if (!rc) rc = uopc_tensor_slice(v_out, &vr, 1, 0, n, 1, err);
  if (rc) uopc_tensor_release(k_out);
  uopc_tensor_release(&kr), uopc_tensor_release(&vr);
  return rc;
  // END STUDENT
}
