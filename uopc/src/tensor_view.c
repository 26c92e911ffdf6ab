/* tensor_view.c: views of a tensor, which share its storage and never copy
 * (section 23.6; views and aliasing are the subject of 23.3): slice, select,
 * permute, transpose and reshape. Slicing and reshaping mirror CPython's
 * slice.indices and NumPy's reshape. */
#include <string.h>
#include "uopc/tensor.h"
#include "internal.h"

static int check_axis(const char *fn, const char *what, int axis, int rank, uopc_error *err) {
  if (axis < 0 || axis >= rank)
    return uopc_fail(err, UOPC_E_INVALID, fn, "%s %d outside [0, %d) for a rank-%d tensor",
                     what, axis, rank, rank);
  return UOPC_OK;
}

/* Every view starts from a copy v of a live x. *out is cleared unless it is x
 * itself, so that a failed call leaves a releasable tensor without losing x. */
static int begin_view(const char *fn, uopc_tensor *out, const uopc_tensor *x, uopc_tensor *v,
                      uopc_error *err) {
  if (!out || !x) return uopc_fail(err, UOPC_E_INVALID, fn, "%s is NULL", out ? "x" : "out");
  *v = *x;
  if (out != x) memset(out, 0, sizeof *out);
  if (!v->storage) return uopc_fail(err, UOPC_E_INVALID, fn, "x is a released tensor");
  if (v->rank < 0 || v->rank > UOPC_MAX_RANK)
    return uopc_fail(err, UOPC_E_INVALID, fn, "x has rank %d outside [0, %d]", v->rank, UOPC_MAX_RANK);
  return UOPC_OK;
}

static int finish_view(uopc_tensor *out, const uopc_tensor *v) {
  uopc_tensor_share_storage(v);
  *out = *v;
  return UOPC_OK;
}

/* Moves element 0 to index along axis. Cannot overflow for a tensor this
 * module made (the index stays inside its span), but x may be hand-built. */
static int move_offset(const char *fn, uopc_tensor *v, int axis, int64_t index, uopc_error *err) {
  int64_t step, moved;  /* not into v->offset: an overflowing add stores the wrapped sum */
  if (__builtin_mul_overflow(index, v->strides[axis], &step) ||
      __builtin_add_overflow(v->offset, step, &moved))
    return uopc_fail(err, UOPC_E_OVERFLOW, fn, "offset %lld + index %lld * stride %lld overflows",
                     (long long)v->offset, (long long)index, (long long)v->strides[axis]);
  v->offset = moved;
  return UOPC_OK;
}

/* CPython's slice.indices (Objects/sliceobject.c): a bound counts from the
 * end when negative, then clamps into [lower, upper]; a negative step lowers
 * both by one so that a reverse slice can run down through index 0. */
static int64_t clamp_bound(int64_t b, int64_t omitted, int64_t n, int64_t lower, int64_t upper) {
  if (b == UOPC_SLICE_NONE) return omitted;
  if (b < 0) b += n;  /* b > INT64_MIN here, so this cannot overflow */
  return b < lower ? lower : b > upper ? upper : b;
}

static int64_t slice_length(int64_t start, int64_t stop, int64_t step) {
  if (step > 0) return start < stop ? (stop - start - 1) / step + 1 : 0;
  return stop < start ? (start - stop - 1) / -step + 1 : 0;
}

int uopc_tensor_slice(uopc_tensor *out, const uopc_tensor *x, int axis, int64_t start,
                      int64_t stop, int64_t step, uopc_error *err) {
  uopc_tensor v;
  int rc = begin_view(__func__, out, x, &v, err);
  if (rc || (rc = check_axis(__func__, "slice axis", axis, v.rank, err))) return rc;
  if (step == UOPC_SLICE_NONE) step = 1;  /* x[a:b] and x[a:b:None] mean step 1 */
  int64_t n = v.shape[axis], stride;
  if (step == 0)
    return UOPC_FAIL(err, UOPC_E_INVALID, "slice step 0 along axis %d (length %lld): step must be nonzero",
                     axis, (long long)n);
  int64_t lower = step < 0 ? -1 : 0, upper = step < 0 ? n - 1 : n;
  start = clamp_bound(start, step < 0 ? upper : lower, n, lower, upper);
  stop = clamp_bound(stop, step < 0 ? lower : upper, n, lower, upper);
  int64_t len = slice_length(start, stop, step);
  /* An empty result keeps its offset: start may be one past the end. */
  if (len > 0 && (rc = move_offset(__func__, &v, axis, start, err))) return rc;
  /* The product only overflows when |step| >= n, which leaves at most one
   * element, whose stride is never used: keep the old one then. */
  if (__builtin_mul_overflow(v.strides[axis], step, &stride)) {
    if (len > 1)
      return UOPC_FAIL(err, UOPC_E_OVERFLOW, "stride %lld * step %lld along axis %d overflows int64",
                       (long long)v.strides[axis], (long long)step, axis);
    stride = v.strides[axis];
  }
  v.shape[axis] = len;
  v.strides[axis] = stride;
  return finish_view(out, &v);
}

int uopc_tensor_select(uopc_tensor *out, const uopc_tensor *x, int axis, int64_t index,
                       uopc_error *err) {
  uopc_tensor v;
  int rc = begin_view(__func__, out, x, &v, err);
  if (rc || (rc = check_axis(__func__, "select axis", axis, v.rank, err))) return rc;
  int64_t n = v.shape[axis];
  if (index < -n || index >= n)
    return UOPC_FAIL(err, UOPC_E_BOUNDS, "index %lld outside [%lld, %lld) along axis %d of shape %s",
                     (long long)index, (long long)-n, (long long)n, axis,
                     uopc_tensor_dims_text(v.rank, v.shape).s);
  if ((rc = move_offset(__func__, &v, axis, index < 0 ? index + n : index, err))) return rc;
  for (int i = axis; i + 1 < v.rank; i++) {
    v.shape[i] = v.shape[i + 1];
    v.strides[i] = v.strides[i + 1];
  }
  v.rank--;
  v.shape[v.rank] = v.strides[v.rank] = 0;
  return finish_view(out, &v);
}

static int check_perm(const char *fn, int rank, const int *perm, uopc_error *err) {
  if (rank > 0 && !perm)
    return uopc_fail(err, UOPC_E_INVALID, fn, "perm is NULL for a rank-%d tensor", rank);
  unsigned seen = 0;
  for (int i = 0; i < rank; i++) {
    if (perm[i] < 0 || perm[i] >= rank)
      return uopc_fail(err, UOPC_E_INVALID, fn, "perm[%d] = %d outside [0, %d)", i, perm[i], rank);
    if (seen & (1u << perm[i]))
      return uopc_fail(err, UOPC_E_INVALID, fn, "perm[%d] = %d repeats an axis", i, perm[i]);
    seen |= 1u << perm[i];
  }
  return UOPC_OK;
}

int uopc_tensor_permute(uopc_tensor *out, const uopc_tensor *x, const int *perm,
                        uopc_error *err) {
  uopc_tensor v;
  int rc = begin_view(__func__, out, x, &v, err);
  if (rc || (rc = check_perm(__func__, v.rank, perm, err))) return rc;
  uopc_tensor src = v;
  for (int i = 0; i < v.rank; i++) {
    v.shape[i] = src.shape[perm[i]];
    v.strides[i] = src.strides[perm[i]];
  }
  return finish_view(out, &v);
}

int uopc_tensor_transpose(uopc_tensor *out, const uopc_tensor *x, int a, int b,
                          uopc_error *err) {
  uopc_tensor v;
  int rc = begin_view(__func__, out, x, &v, err);
  if (rc || (rc = check_axis(__func__, "transpose axis", a, v.rank, err)) ||
      (rc = check_axis(__func__, "transpose axis", b, v.rank, err)))
    return rc;
  int64_t shape = v.shape[a], stride = v.strides[a];
  v.shape[a] = v.shape[b];
  v.strides[a] = v.strides[b];
  v.shape[b] = shape;
  v.strides[b] = stride;
  return finish_view(out, &v);
}

/* The new dims with a -1 inferred; the element count must not change. */
static int resolve_shape(const char *fn, const uopc_tensor *x, int rank, const int64_t *shape,
                         int64_t *dims, uopc_error *err) {
  int infer = -1;
  for (int i = 0; i < rank; i++) {
    dims[i] = shape[i];
    if (shape[i] != -1) continue;
    if (infer >= 0)
      return uopc_fail(err, UOPC_E_INVALID, fn, "shape %s has -1 at dims %d and %d; at most one is inferred",
                       uopc_tensor_dims_text(rank, shape).s, infer, i);
    infer = i;
    dims[i] = 1;
  }
  int64_t known, numel = uopc_tensor_numel(x);
  int rc = uopc_tensor_checked_numel(fn, rank, dims, uopc_dtype_size(x->dtype), &known, err);
  if (rc) return rc;
  if (infer >= 0 && known == 0)
    return uopc_fail(err, UOPC_E_INVALID, fn,
                     "the -1 in shape %s is ambiguous: the other dims hold 0 elements",
                     uopc_tensor_dims_text(rank, shape).s);
  if (infer >= 0 && numel % known == 0) dims[infer] = numel / known, known = numel;
  if (known != numel)
    return uopc_fail(err, UOPC_E_INVALID, fn, "cannot reshape %lld elements of shape %s into shape %s",
                     (long long)numel, uopc_tensor_dims_text(x->rank, x->shape).s,
                     uopc_tensor_dims_text(rank, shape).s);
  return UOPC_OK;
}

/* NumPy's _attempt_nocopy_reshape (numpy/_core/src/multiarray/shape.c). With
 * the old size-1 dims dropped, old and new dims split into runs of equal
 * product; each run of old dims must be packed among itself, and its new
 * dims take packed strides ending at the run's last stride. 0: no view.
 * x must not be empty: a zero dim would stop the runs from ever matching. */
static int nocopy_strides(const uopc_tensor *x, int rank, const int64_t *dims, int64_t *strides) {
  int64_t od[UOPC_MAX_RANK], os[UOPC_MAX_RANK], next;
  int on = 0, oi = 0, oj = 1, ni = 0, nj = 1;
  for (int i = 0; i < x->rank; i++)
    if (x->shape[i] != 1) od[on] = x->shape[i], os[on++] = x->strides[i];
  while (ni < rank && oi < on) {
    int64_t np = dims[ni], op = od[oi];  /* products stay <= numel */
    while (np != op) {
      if (np < op) np *= dims[nj++];
      else op *= od[oj++];
    }
    for (int k = oi; k < oj - 1; k++)
      if (__builtin_mul_overflow(od[k + 1], os[k + 1], &next) || os[k] != next) return 0;
    strides[nj - 1] = os[oj - 1];
    for (int k = nj - 1; k > ni; k--) strides[k - 1] = strides[k] * dims[k];
    ni = nj++;
    oi = oj++;
  }
  for (int k = ni; k < rank; k++) strides[k] = ni > 0 ? strides[ni - 1] : 1;  /* trailing 1s */
  return 1;
}

int uopc_tensor_reshape(uopc_tensor *out, const uopc_tensor *x, int rank, const int64_t *shape,
                        uopc_error *err) {
  uopc_tensor v;
  int64_t dims[UOPC_MAX_RANK], strides[UOPC_MAX_RANK];
  int rc = begin_view(__func__, out, x, &v, err);
  if (rc || (rc = uopc_tensor_check_rank(__func__, rank, shape, err)) ||
      (rc = resolve_shape(__func__, &v, rank, shape, dims, err)))
    return rc;
  /* Packed input (empty included) keeps packed strides, as NumPy's does. */
  if (uopc_tensor_is_contiguous(&v)) uopc_layout_packed_strides(rank, dims, strides);
  else if (!nocopy_strides(&v, rank, dims, strides))
    return UOPC_FAIL(err, UOPC_E_LAYOUT,
                     "shape %s with strides %s cannot be viewed as shape %s: "
                     "its elements are not evenly strided there, so a copy is needed",
                     uopc_tensor_dims_text(v.rank, v.shape).s, uopc_tensor_dims_text(v.rank, v.strides).s,
                     uopc_tensor_dims_text(rank, dims).s);
  uopc_tensor_set_layout(&v, rank, dims, strides);
  return finish_view(out, &v);
}
