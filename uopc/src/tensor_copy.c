/* tensor_copy.c: copies between views and element access (section 23.6;
 * why a copy must be careful about overlap is the subject of 23.3). */
#include <math.h>
#include <string.h>
#include "uopc/tensor.h"
#include "internal.h"

/* Element k's offset from element 0, k counted in row-major order. */
static int64_t logical_offset(const uopc_tensor *x, int64_t k) {
  int64_t off = 0;
  for (int d = x->rank - 1; d >= 0; d--) {
    off += k % x->shape[d] * x->strides[d];
    k /= x->shape[d];
  }
  return off;
}

/* Plain element-by-element copy; the caller has ruled out overlap. */
static void copy_elems(const uopc_tensor *dst, const uopc_tensor *src) {
  int64_t n = uopc_tensor_numel(src), size = (int64_t)uopc_dtype_size(src->dtype);
  unsigned char *d = uopc_tensor_data(dst);
  const unsigned char *s = uopc_tensor_data(src);
  if (uopc_tensor_is_contiguous(dst) && uopc_tensor_is_contiguous(src)) {
    memcpy(d, s, (size_t)(n * size));
    return;
  }
  for (int64_t k = 0; k < n; k++)
    memcpy(d + logical_offset(dst, k) * size, s + logical_offset(src, k) * size, (size_t)size);
}

static int check_copy(const char *fn, const uopc_tensor *out, const uopc_tensor *x, uopc_error *err) {
  if (!out || !x || !out->storage || !x->storage)
    return uopc_fail(err, UOPC_E_INVALID, fn, "%s is NULL or released", !out || !out->storage ? "out" : "x");
  if (out->dtype != x->dtype)
    return uopc_fail(err, UOPC_E_DTYPE, fn, "out is %s but x is %s", uopc_dtype_name(out->dtype),
                     uopc_dtype_name(x->dtype));
  int same = out->rank == x->rank;
  for (int i = 0; same && i < x->rank; i++) same = out->shape[i] == x->shape[i];
  if (!same)
    return uopc_fail(err, UOPC_E_INVALID, fn, "out has shape %s but x has shape %s",
                     uopc_tensor_dims_text(out->rank, out->shape).s,
                     uopc_tensor_dims_text(x->rank, x->shape).s);
  return UOPC_OK;
}

/* The copy proper, out and x being different views. */
static int copy_views(uopc_tensor *out, const uopc_tensor *x, uopc_error *err) {
  if (!uopc_tensor_may_overlap(out, x)) {
    copy_elems(out, x);
    return UOPC_OK;
  }
  /* NumPy's result is as if x were read in full before out is written:
   * stage x in a temporary rather than reason about copy order. */
  uopc_tensor tmp;
  int rc = uopc_tensor_empty(&tmp, x->dtype, x->rank, x->shape, err);
  if (rc) return rc;
  copy_elems(&tmp, x);
  copy_elems(out, &tmp);
  uopc_tensor_release(&tmp);
  return UOPC_OK;
}

int uopc_tensor_copy(uopc_tensor *out, const uopc_tensor *x, uopc_error *err) {
  int rc = check_copy(__func__, out, x, err);
  if (rc == UOPC_OK && !uopc_tensor_same_view(out, x)) rc = copy_views(out, x, err);
  /* A copy is a write even when it changes no byte, as an in-place op is in
   * PyTorch: whoever recorded out's version must look again. */
  if (rc == UOPC_OK) uopc_tensor_bump_version(out);
  return rc;
}

static void *elem_ptr(const uopc_tensor *x, int64_t i) {
  if (!x || !x->storage || i < 0 || i >= uopc_tensor_numel(x)) return NULL;
  return (unsigned char *)uopc_tensor_data(x) + logical_offset(x, i) * (int64_t)uopc_dtype_size(x->dtype);
}

/* Reads and writes go through memcpy because a wrapped NumPy buffer need not
 * be aligned. Outside [0, numel) get gives NaN and set does nothing: neither
 * has an error channel, and library code never aborts. */
double uopc_tensor_get(const uopc_tensor *x, int64_t i) {
  const void *p = elem_ptr(x, i);
  float f;
  double d;
  int32_t i32;
  int64_t i64;
  if (!p) return NAN;
  switch (x->dtype) {
  case UOPC_F32: memcpy(&f, p, sizeof f); return f;
  case UOPC_F64: memcpy(&d, p, sizeof d); return d;
  case UOPC_I32: memcpy(&i32, p, sizeof i32); return i32;
  case UOPC_I64: memcpy(&i64, p, sizeof i64); return (double)i64;
  case UOPC_BOOL: return *(const unsigned char *)p != 0;
  }
  return NAN;
}

/* C leaves an out-of-range float-to-integer conversion undefined; saturating
 * (NaN to 0) keeps set defined for every double. */
static int64_t saturate(double v, int64_t lo, int64_t hi) {
  if (v != v) return 0;
  if (v <= (double)lo) return lo;
  if (v >= (double)hi) return hi;  /* (double)INT64_MAX rounds up to 2^63 */
  return (int64_t)v;
}

void uopc_tensor_set(uopc_tensor *x, int64_t i, double v) {
  void *p = elem_ptr(x, i);
  float f = (float)v;
  int32_t i32 = (int32_t)saturate(v, INT32_MIN, INT32_MAX);
  int64_t i64 = saturate(v, INT64_MIN, INT64_MAX);
  if (!p) return;
  switch (x->dtype) {
  case UOPC_F32: memcpy(p, &f, sizeof f); break;
  case UOPC_F64: memcpy(p, &v, sizeof v); break;
  case UOPC_I32: memcpy(p, &i32, sizeof i32); break;
  case UOPC_I64: memcpy(p, &i64, sizeof i64); break;
  case UOPC_BOOL: *(unsigned char *)p = v != 0; break;   /* NaN is true, as in NumPy */
  }
  uopc_tensor_bump_version(x);
}
