/* tensor.c: strided tensors over refcounted storage (section 23.6).
 * A tensor is (shape, strides, offset) in elements over a shared storage;
 * slice, select, permute and reshape make views and never copy. Views and
 * aliasing (why may_overlap and copy are careful) are the subject of 23.3.
 * Slicing and reshaping mirror CPython's slice.indices and NumPy's reshape. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "uopc/tensor.h"

/* Owned storage is aligned for the widest vector loads the generated kernels
 * use (section 23.6, "Alignment"). */
#define ALIGNMENT 64

/* A storage: the public head (its base, see tensor.h) and the private rest. */
typedef struct storage {
  uopc_storage head;    /* first, so a uopc_storage * is a storage * */
  size_t nbytes;        /* bytes covered from head.base */
  int refs;             /* atomic: views may be released on any thread */
  int owned;            /* 1: head.base is ours to free; 0: borrowed (wrap) */
} storage;

static storage *private_of(const uopc_storage *s) { return (storage *)s; }

/* ---- dtypes ---------------------------------------------------------------- */


const char *uopc_dtype_name(uopc_dtype dt) {
  switch (dt) {
  case UOPC_F32: return "f32";
  case UOPC_F64: return "f64";
  case UOPC_I32: return "i32";
  case UOPC_I64: return "i64";
  case UOPC_BOOL: return "bool";
  }
  return "?";
}

int uopc_dtype_is_float(uopc_dtype dt) { return dt == UOPC_F32 || dt == UOPC_F64; }

/* ---- validation -------------------------------------------------------------
 * Shapes and strides arrive from callers (ctypes included), so each check
 * reports under the public function's name (fn) and every size is checked. */

/* A shape as Python prints a tuple, for messages: "(2, 3)", "(6,)", "()". */
typedef struct dims_text { char s[8 + UOPC_MAX_RANK * 24]; } dims_text;

static dims_text dims_str(int rank, const int64_t *d) {
  dims_text t;
  size_t n = (size_t)snprintf(t.s, sizeof t.s, "(");
  for (int i = 0; i < rank && n < sizeof t.s; i++)
    n += (size_t)snprintf(t.s + n, sizeof t.s - n, "%s%lld", i ? ", " : "", (long long)d[i]);
  if (n < sizeof t.s) snprintf(t.s + n, sizeof t.s - n, rank == 1 ? ",)" : ")");
  return t;
}

static int check_dtype(const char *fn, int dt, uopc_error *err) {
  if (dt < UOPC_F32 || dt > UOPC_BOOL)
    return uopc_fail(err, UOPC_E_INVALID, fn, "dtype %d outside [%d, %d] (f32, f64, i32, i64, bool)",
                     dt, UOPC_F32, UOPC_BOOL);
  return UOPC_OK;
}

static int check_rank(const char *fn, int rank, const int64_t *shape, uopc_error *err) {
  if (rank < 0 || rank > UOPC_MAX_RANK)
    return uopc_fail(err, UOPC_E_INVALID, fn, "rank %d outside [0, %d]", rank, UOPC_MAX_RANK);
  if (rank > 0 && !shape)
    return uopc_fail(err, UOPC_E_INVALID, fn, "shape is NULL for rank %d", rank);
  return UOPC_OK;
}

/* The element count, checked as NumPy checks it: the product of the nonzero
 * dims times the item size must fit in int64 even when a zero dim makes the
 * tensor empty, so that its packed strides fit too. */
static int checked_numel(const char *fn, int rank, const int64_t *shape, size_t itemsize,
                         int64_t *numel, uopc_error *err) {
  int64_t bytes = (int64_t)itemsize;
  int empty = 0;
  for (int i = 0; i < rank; i++) {
    if (shape[i] < 0)
      return uopc_fail(err, UOPC_E_INVALID, fn, "dim %d = %lld is negative in shape %s",
                       i, (long long)shape[i], dims_str(rank, shape).s);
    if (shape[i] == 0) empty = 1;
    else if (__builtin_mul_overflow(bytes, shape[i], &bytes))
      return uopc_fail(err, UOPC_E_OVERFLOW, fn,
                       "shape %s of %zu-byte items needs more than %lld bytes",
                       dims_str(rank, shape).s, itemsize, (long long)INT64_MAX);
  }
  *numel = empty ? 0 : bytes / (int64_t)itemsize;
  return UOPC_OK;
}

/* What both constructors check; *out is cleared first so that a caller's
 * cleanup path can release it whatever happened. */
static int check_new(const char *fn, uopc_tensor *out, int dt, int rank, const int64_t *shape,
                     int64_t *numel, uopc_error *err) {
  if (!out) return uopc_fail(err, UOPC_E_INVALID, fn, "out is NULL");
  memset(out, 0, sizeof *out);
  int rc = check_dtype(fn, dt, err);
  if (!rc) rc = check_rank(fn, rank, shape, err);
  if (!rc) rc = checked_numel(fn, rank, shape, uopc_dtype_size((uopc_dtype)dt), numel, err);
  return rc;
}

static int check_axis(const char *fn, const char *what, int axis, int rank, uopc_error *err) {
  if (axis < 0 || axis >= rank)
    return uopc_fail(err, UOPC_E_INVALID, fn, "%s %d outside [0, %d) for a rank-%d tensor",
                     what, axis, rank, rank);
  return UOPC_OK;
}

/* ---- storage and creation -------------------------------------------------- */

/* Row-major packed strides. A zero dim counts as 1 in the running product (as
 * NumPy did for years) so an empty tensor's strides stay within checked_numel. */
static void packed_strides(int rank, const int64_t *shape, int64_t *strides) {
  int64_t s = 1;
  for (int i = rank - 1; i >= 0; i--) {
    strides[i] = s;
    if (shape[i] > 0) s *= shape[i];
  }
}

/* Sets rank, shape and strides, clearing the unused slots so that two equal
 * views are equal byte for byte. */
static void set_layout(uopc_tensor *t, int rank, const int64_t *shape, const int64_t *strides) {
  t->rank = rank;
  memset(t->shape, 0, sizeof t->shape);
  memset(t->strides, 0, sizeof t->strides);
  if (rank == 0) return;
  memcpy(t->shape, shape, (size_t)rank * sizeof *shape);
  memcpy(t->strides, strides, (size_t)rank * sizeof *strides);
}

static int storage_new(const char *fn, uopc_storage **out, void *base, size_t nbytes, int owned,
                       uopc_error *err) {
  storage *s = malloc(sizeof *s);
  if (!s) return uopc_fail(err, UOPC_E_NOMEM, fn, "out of memory for a storage header");
  *s = (storage){.head = {.base = base}, .nbytes = nbytes, .refs = 1, .owned = owned};
  *out = &s->head;
  return UOPC_OK;
}

/* aligned_alloc wants a size that is a multiple of the alignment, and its
 * answer for 0 bytes may be NULL, which would read as out of memory. */
static void *alloc_zeroed(size_t nbytes) {
  size_t rounded = nbytes == 0 ? ALIGNMENT : (nbytes + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT;
  void *p = aligned_alloc(ALIGNMENT, rounded);
  if (p) memset(p, 0, rounded);
  return p;
}

int uopc_tensor_empty(uopc_tensor *out, uopc_dtype dt, int rank, const int64_t *shape,
                      uopc_error *err) {
  int64_t numel, strides[UOPC_MAX_RANK];
  int rc = check_new(__func__, out, (int)dt, rank, shape, &numel, err);
  if (rc) return rc;
  uint64_t nbytes = (uint64_t)numel * uopc_dtype_size(dt);
  if (nbytes > SIZE_MAX - ALIGNMENT)
    return UOPC_FAIL(err, UOPC_E_OVERFLOW, "shape %s needs %llu bytes, more than size_t holds",
                     dims_str(rank, shape).s, (unsigned long long)nbytes);
  void *base = alloc_zeroed((size_t)nbytes);
  if (!base)
    return UOPC_FAIL(err, UOPC_E_NOMEM, "out of memory for %llu bytes of shape %s",
                     (unsigned long long)nbytes, dims_str(rank, shape).s);
  uopc_storage *s = NULL;
  if ((rc = storage_new(__func__, &s, base, (size_t)nbytes, 1, err))) {
    free(base);
    return rc;
  }
  packed_strides(rank, shape, strides);
  out->storage = s;
  out->dtype = dt;
  set_layout(out, rank, shape, strides);
  return UOPC_OK;
}

/* The lowest and highest element offsets, from element 0, that a non-empty
 * view reaches: each dim adds stride * (n - 1) to one end or the other. */
static int span(const char *fn, const uopc_tensor *x, int64_t *lo, int64_t *hi, uopc_error *err) {
  *lo = *hi = 0;
  for (int i = 0; i < x->rank; i++) {
    int64_t reach;
    int overflow = __builtin_mul_overflow(x->strides[i], x->shape[i] - 1, &reach);
    int64_t *end = reach < 0 ? lo : hi;
    if (overflow || __builtin_add_overflow(*end, reach, end))
      return uopc_fail(err, UOPC_E_OVERFLOW, fn,
                       "dim %d: stride %lld over %lld elements reaches past int64",
                       i, (long long)x->strides[i], (long long)x->shape[i]);
  }
  return UOPC_OK;
}

/* For wrap: how far below elem0 the lowest addressable byte lies (first <= 0)
 * and how many bytes the view spans, with every product checked. */
static int byte_extent(const char *fn, const uopc_tensor *x, void *elem0, int64_t *first,
                       int64_t *nbytes, uopc_error *err) {
  int64_t lo, hi, count, size = (int64_t)uopc_dtype_size(x->dtype);
  int rc = span(fn, x, &lo, &hi, err);
  if (rc) return rc;
  uintptr_t addr;
  if (__builtin_sub_overflow(hi, lo, &count) || __builtin_add_overflow(count, 1, &count) ||
      __builtin_mul_overflow(count, size, nbytes) ||
      __builtin_sub_overflow((uintptr_t)elem0, (uintptr_t)(-lo * size), &addr) ||
      __builtin_add_overflow(addr, (uintptr_t)*nbytes, &addr))
    return uopc_fail(err, UOPC_E_OVERFLOW, fn,
                     "shape %s with strides %s spans elements [%lld, %lld] around elem0: "
                     "the byte range overflows", dims_str(x->rank, x->shape).s,
                     dims_str(x->rank, x->strides).s, (long long)lo, (long long)hi);
  *first = lo * size;  /* |lo| < count, so this product fits */
  return UOPC_OK;
}

int uopc_tensor_wrap(uopc_tensor *out, void *elem0, uopc_dtype dt, int rank,
                     const int64_t *shape, const int64_t *strides, uopc_error *err) {
  int64_t numel, first = 0, nbytes = 0;
  int rc = check_new(__func__, out, (int)dt, rank, shape, &numel, err);
  if (rc) return rc;
  if (!elem0) return UOPC_FAIL(err, UOPC_E_INVALID, "elem0 is NULL");
  if (rank > 0 && !strides) return UOPC_FAIL(err, UOPC_E_INVALID, "strides is NULL for rank %d", rank);
  uopc_tensor t = {.dtype = dt};
  set_layout(&t, rank, shape, strides);
  /* An empty view addresses nothing: its storage is zero bytes at elem0. */
  if (numel > 0 && (rc = byte_extent(__func__, &t, elem0, &first, &nbytes, err))) return rc;
  if ((rc = storage_new(__func__, &t.storage, (unsigned char *)elem0 + first, (size_t)nbytes, 0,
                        err)))
    return rc;
  t.offset = -first / (int64_t)uopc_dtype_size(dt);
  *out = t;
  return UOPC_OK;
}

void uopc_tensor_retain(uopc_tensor *out, const uopc_tensor *x) {
  if (!out) return;
  if (!x) {
    memset(out, 0, sizeof *out);
    return;
  }
  if (x->storage) __atomic_add_fetch(&private_of(x->storage)->refs, 1, __ATOMIC_RELAXED);
  *out = *x;
}

void uopc_tensor_release(uopc_tensor *t) {
  if (!t) return;
  storage *s = private_of(t->storage);
  memset(t, 0, sizeof *t);
  /* acq_rel: the thread that frees must see every other view's last writes. */
  if (!s || __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
  if (s->owned) free(s->head.base);
  free(s);
}

/* ---- views ----------------------------------------------------------------- */

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
  __atomic_add_fetch(&private_of(v->storage)->refs, 1, __ATOMIC_RELAXED);
  *out = *v;
  return UOPC_OK;
}

/* Moves element 0 to index along axis. Cannot overflow for a tensor this
 * module made (the index stays inside its span), but x may be hand-built. */
static int move_offset(const char *fn, uopc_tensor *v, int axis, int64_t index, uopc_error *err) {
  int64_t step;
  if (__builtin_mul_overflow(index, v->strides[axis], &step) ||
      __builtin_add_overflow(v->offset, step, &v->offset))
    return uopc_fail(err, UOPC_E_OVERFLOW, fn, "offset %lld + index %lld * stride %lld overflows",
                     (long long)v->offset, (long long)index, (long long)v->strides[axis]);
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
                     dims_str(v.rank, v.shape).s);
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
                       dims_str(rank, shape).s, infer, i);
    infer = i;
    dims[i] = 1;
  }
  int64_t known, numel = uopc_tensor_numel(x);
  int rc = checked_numel(fn, rank, dims, uopc_dtype_size(x->dtype), &known, err);
  if (rc) return rc;
  if (infer >= 0 && known == 0)
    return uopc_fail(err, UOPC_E_INVALID, fn, "the -1 in shape %s is ambiguous: the other dims hold 0 elements",
                     dims_str(rank, shape).s);
  if (infer >= 0 && numel % known == 0) dims[infer] = numel / known, known = numel;
  if (known != numel)
    return uopc_fail(err, UOPC_E_INVALID, fn, "cannot reshape %lld elements of shape %s into shape %s",
                     (long long)numel, dims_str(x->rank, x->shape).s, dims_str(rank, shape).s);
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
  if (rc || (rc = check_rank(__func__, rank, shape, err)) ||
      (rc = resolve_shape(__func__, &v, rank, shape, dims, err)))
    return rc;
  /* Packed input (empty included) keeps packed strides, as NumPy's does. */
  if (uopc_tensor_is_contiguous(&v)) packed_strides(rank, dims, strides);
  else if (!nocopy_strides(&v, rank, dims, strides))
    return UOPC_FAIL(err, UOPC_E_LAYOUT,
                     "shape %s with strides %s cannot be viewed as shape %s: "
                     "its elements are not evenly strided there, so a copy is needed",
                     dims_str(v.rank, v.shape).s, dims_str(v.rank, v.strides).s,
                     dims_str(rank, dims).s);
  set_layout(&v, rank, dims, strides);
  return finish_view(out, &v);
}

/* ---- queries ---------------------------------------------------------------- */

int64_t uopc_tensor_numel(const uopc_tensor *x) {
  int64_t n = 1;
  for (int i = 0; i < x->rank; i++) n *= x->shape[i];
  return n;
}


int uopc_tensor_is_contiguous(const uopc_tensor *x) {
  if (uopc_tensor_numel(x) == 0) return 1;
  int64_t expected = 1;
  for (int i = x->rank - 1; i >= 0; i--) {
    if (x->shape[i] == 1) continue;
    if (x->strides[i] != expected) return 0;
    expected *= x->shape[i];
  }
  return 1;
}

int uopc_tensor_is_aligned(const uopc_tensor *x, size_t bytes) {
  void *p = uopc_tensor_data(x);
  if (!p || bytes == 0 || (bytes & (bytes - 1))) return 0;
  return (uintptr_t)p % bytes == 0;
}

/* [*first, *end) are the bytes a live, non-empty view reaches; 0 otherwise. A
 * hand-built view whose span overflows is taken to reach everything. */
static int byte_range(const uopc_tensor *x, uintptr_t *first, uintptr_t *end) {
  if (!x || !x->storage || uopc_tensor_numel(x) == 0) return 0;
  int64_t lo, hi, size = (int64_t)uopc_dtype_size(x->dtype);
  if (span(__func__, x, &lo, &hi, NULL)) {
    *first = 0, *end = UINTPTR_MAX;
    return 1;
  }
  uintptr_t p = (uintptr_t)uopc_tensor_data(x);
  *first = p + (uintptr_t)lo * (uintptr_t)size;  /* unsigned: wraps as intended */
  *end = p + (uintptr_t)(hi + 1) * (uintptr_t)size;
  return 1;
}

/* Addresses, not storage pointers: two wraps of one NumPy buffer are separate
 * storages over the same bytes. */
int uopc_tensor_may_overlap(const uopc_tensor *a, const uopc_tensor *b) {
  uintptr_t a0, a1, b0, b1;
  if (!byte_range(a, &a0, &a1) || !byte_range(b, &b0, &b1)) return 0;
  return a0 < b1 && b0 < a1;
}

int uopc_tensor_same_view(const uopc_tensor *a, const uopc_tensor *b) {
  if (!a || !b || !a->storage || !b->storage) return 0;
  if (uopc_tensor_data(a) != uopc_tensor_data(b) || a->dtype != b->dtype || a->rank != b->rank)
    return 0;
  for (int i = 0; i < a->rank; i++)
    if (a->shape[i] != b->shape[i] || (a->shape[i] > 1 && a->strides[i] != b->strides[i]))
      return 0;
  return 1;
}

int uopc_tensor_storage_refs(const uopc_tensor *x) {
  if (!x || !x->storage) return 0;
  return __atomic_load_n(&private_of(x->storage)->refs, __ATOMIC_RELAXED);
}

/* ---- copies and element access --------------------------------------------- */

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
                     dims_str(out->rank, out->shape).s, dims_str(x->rank, x->shape).s);
  return UOPC_OK;
}

int uopc_tensor_copy(uopc_tensor *out, const uopc_tensor *x, uopc_error *err) {
  int rc = check_copy(__func__, out, x, err);
  if (rc || uopc_tensor_same_view(out, x)) return rc;
  if (!uopc_tensor_may_overlap(out, x)) {
    copy_elems(out, x);
    return UOPC_OK;
  }
  /* NumPy's result is as if x were read in full before out is written:
   * stage x in a temporary rather than reason about copy order. */
  uopc_tensor tmp;
  if ((rc = uopc_tensor_empty(&tmp, x->dtype, x->rank, x->shape, err))) return rc;
  copy_elems(&tmp, x);
  copy_elems(out, &tmp);
  uopc_tensor_release(&tmp);
  return UOPC_OK;
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
}

/* ---- heap handles for foreign callers --------------------------------------- */

uopc_tensor *uopc_tensor_wrap_new(void *elem0, int dtype, int rank, const int64_t *shape,
                                  const int64_t *strides, uopc_error *err) {
  /* Checked before the cast: ctypes passes any int. */
  if (check_dtype(__func__, dtype, err)) return NULL;
  uopc_tensor *t = malloc(sizeof *t);
  if (!t) {
    UOPC_FAIL(err, UOPC_E_NOMEM, "out of memory for a tensor handle");
    return NULL;
  }
  if (uopc_tensor_wrap(t, elem0, (uopc_dtype)dtype, rank, shape, strides, err)) {
    free(t);
    return NULL;
  }
  return t;
}

void uopc_tensor_free(uopc_tensor *t) {
  if (!t) return;
  uopc_tensor_release(t);
  free(t);
}
