/* tensor.c: strided tensors over refcounted storage (section 23.6).
 * A tensor is (shape, strides, offset) in elements over a shared storage.
 * This file creates tensors, counts references to their storage and answers
 * queries about them; views are in tensor_view.c, copies and element access
 * in tensor_copy.c. Views and aliasing are the subject of 23.3. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef UOPC_GUARD_PAGES
#include <sys/mman.h>
#include <unistd.h>
#endif
#include "uopc/tensor.h"
#include "internal.h"

/* Owned storage is aligned for the widest vector loads the generated kernels
 * use (section 23.6, "Alignment"). */
#define ALIGNMENT 64

/* A storage: the public head (its base, see tensor.h) and the private rest. */
typedef struct storage {
  uopc_storage head;    /* first, so a uopc_storage * is a storage * */
  int refs;             /* atomic: views may be released on any thread */
  int owned;            /* 1: head.base is ours to free; 0: borrowed (wrap) */
  uint64_t version;     /* atomic: writes through any view, 0 when created (23.3) */
  size_t bytes;         /* owned: the bytes of its elements (the grader's runtime checks past them) */
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

uopc_dims_text uopc_tensor_dims_text(int rank, const int64_t *d) {
  uopc_dims_text t;
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

int uopc_tensor_check_rank(const char *fn, int rank, const int64_t *shape, uopc_error *err) {
  if (rank < 0 || rank > UOPC_MAX_RANK)
    return uopc_fail(err, UOPC_E_INVALID, fn, "rank %d outside [0, %d]", rank, UOPC_MAX_RANK);
  if (rank > 0 && !shape)
    return uopc_fail(err, UOPC_E_INVALID, fn, "shape is NULL for rank %d", rank);
  return UOPC_OK;
}

/* The element count, checked as NumPy checks it: the product of the nonzero
 * dims times the item size must fit in int64 even when a zero dim makes the
 * tensor empty, so that its packed strides fit too. */
int uopc_tensor_checked_numel(const char *fn, int rank, const int64_t *shape, size_t itemsize,
                         int64_t *numel, uopc_error *err) {
  int64_t bytes = (int64_t)itemsize;
  int empty = 0;
  for (int i = 0; i < rank; i++) {
    if (shape[i] < 0)
      return uopc_fail(err, UOPC_E_INVALID, fn, "dim %d = %lld is negative in shape %s",
                       i, (long long)shape[i], uopc_tensor_dims_text(rank, shape).s);
    if (shape[i] == 0) empty = 1;
    else if (__builtin_mul_overflow(bytes, shape[i], &bytes))
      return uopc_fail(err, UOPC_E_OVERFLOW, fn,
                       "shape %s of %zu-byte items needs more than %lld bytes",
                       uopc_tensor_dims_text(rank, shape).s, itemsize, (long long)INT64_MAX);
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
  if (!rc) rc = uopc_tensor_check_rank(fn, rank, shape, err);
  if (!rc) rc = uopc_tensor_checked_numel(fn, rank, shape, uopc_dtype_size((uopc_dtype)dt), numel, err);
  return rc;
}

/* ---- storage and creation -------------------------------------------------- */

/* Sets rank, shape and strides, clearing the unused slots so that two equal
 * views are equal byte for byte. */
void uopc_tensor_set_layout(uopc_tensor *t, int rank, const int64_t *shape, const int64_t *strides) {
  t->rank = rank;
  memset(t->shape, 0, sizeof t->shape);
  memset(t->strides, 0, sizeof t->strides);
  if (rank == 0) return;
  memcpy(t->shape, shape, (size_t)rank * sizeof *shape);
  memcpy(t->strides, strides, (size_t)rank * sizeof *strides);
}

static int storage_new(const char *fn, uopc_storage **out, void *base, int owned, uopc_error *err) {
  storage *s = malloc(sizeof *s);
  if (!s) return uopc_fail(err, UOPC_E_NOMEM, fn, "out of memory for a storage header");
  *s = (storage){.head = {.base = base}, .refs = 1, .owned = owned};
  *out = &s->head;
  return UOPC_OK;
}

/* aligned_alloc wants a size that is a multiple of the alignment, and its
 * answer for 0 bytes may be NULL, which would read as out of memory. */
static size_t rounded_of(size_t nbytes) {
  return nbytes == 0 ? ALIGNMENT : (nbytes + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT;
}

#ifndef UOPC_GUARD_PAGES
static void *alloc_zeroed(size_t nbytes) {
  size_t rounded = rounded_of(nbytes);
  void *p = aligned_alloc(ALIGNMENT, rounded);
  if (p) memset(p, 0, rounded);
  return p;
}

static void free_owned(void *base, size_t nbytes) {
  (void)nbytes;
  free(base);
}
#else
/* The grader's runtime (the Makefile's GUARDED builds it; issue 32): each owned storage ends
 * where a PROT_NONE page starts, so a write one element past a tensor faults at once instead of
 * landing in a neighbour that no value test looks at; the bytes between the last element and the
 * ALIGNMENT boundary (kept: vector kernels rely on it) hold GUARD_BYTE, checked when the storage
 * is freed. Alignment and every answer are the ordinary runtime's. */
#define GUARD_BYTE 0xA5

/* The mapping of a storage of rounded bytes: whole pages for them, then the guard page. */
typedef struct guarded { size_t page, body; } guarded;

static guarded guarded_of(size_t rounded) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  return (guarded){page, (rounded + page - 1) / page * page};
}

static void *alloc_zeroed(size_t nbytes) {
  size_t rounded = rounded_of(nbytes);
  guarded m = guarded_of(rounded);
  if (m.body > SIZE_MAX - m.page) return NULL;
  unsigned char *map = mmap(NULL, m.body + m.page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED) return NULL;
  if (mprotect(map + m.body, m.page, PROT_NONE) != 0) {
    munmap(map, m.body + m.page);
    return NULL;
  }
  unsigned char *base = map + m.body - rounded;   /* zeroed by mmap */
  memset(base + nbytes, GUARD_BYTE, rounded - nbytes);
  return base;
}

static void free_owned(void *mem, size_t nbytes) {
  size_t rounded = rounded_of(nbytes);
  guarded m = guarded_of(rounded);
  unsigned char *base = mem;
  for (size_t i = nbytes; i < rounded; i++)
    if (base[i] != GUARD_BYTE) {
      fprintf(stderr, "uopc: a write past the end of a tensor's storage of %zu bytes: byte %zu after it changed "
              "(the grader's runtime checks the bytes up to the next %d-byte boundary when it frees one)\n", nbytes,
              i - nbytes, ALIGNMENT);
      abort();
    }
  munmap(base - (m.body - rounded), m.body + m.page);
}
#endif

int uopc_tensor_empty(uopc_tensor *out, uopc_dtype dt, int rank, const int64_t *shape,
                      uopc_error *err) {
  int64_t numel, strides[UOPC_MAX_RANK];
  int rc = check_new(__func__, out, (int)dt, rank, shape, &numel, err);
  if (rc) return rc;
  uint64_t nbytes = (uint64_t)numel * uopc_dtype_size(dt);
  if (nbytes > SIZE_MAX - ALIGNMENT)
    return UOPC_FAIL(err, UOPC_E_OVERFLOW, "shape %s needs %llu bytes, more than size_t holds",
                     uopc_tensor_dims_text(rank, shape).s, (unsigned long long)nbytes);
  void *base = alloc_zeroed((size_t)nbytes);
  if (!base)
    return UOPC_FAIL(err, UOPC_E_NOMEM, "out of memory for %llu bytes of shape %s",
                     (unsigned long long)nbytes, uopc_tensor_dims_text(rank, shape).s);
  uopc_storage *s = NULL;
  if ((rc = storage_new(__func__, &s, base, 1, err))) {
    free_owned(base, (size_t)nbytes);
    return rc;
  }
  private_of(s)->bytes = (size_t)nbytes;
  uopc_layout_packed_strides(rank, shape, strides);
  out->storage = s;
  out->dtype = dt;
  uopc_tensor_set_layout(out, rank, shape, strides);
  return UOPC_OK;
}

/* For wrap, of a non-empty view: how far below elem0 the lowest addressable
 * byte lies (first <= 0), once every byte the view spans is shown to have an
 * address (every product checked). */
static int byte_extent(const char *fn, const uopc_tensor *x, void *elem0, int64_t *first, uopc_error *err) {
  int64_t lo, hi, count, nbytes, size = (int64_t)uopc_dtype_size(x->dtype);
  if (uopc_layout_span(x->rank, x->shape, x->strides, &lo, &hi) < 0)
    return uopc_fail(err, UOPC_E_OVERFLOW, fn, "shape %s with strides %s reaches elements past int64",
                     uopc_tensor_dims_text(x->rank, x->shape).s, uopc_tensor_dims_text(x->rank, x->strides).s);
  uintptr_t addr;
  if (__builtin_sub_overflow(hi, lo, &count) || __builtin_add_overflow(count, 1, &count) ||
      __builtin_mul_overflow(count, size, &nbytes) ||
      __builtin_sub_overflow((uintptr_t)elem0, (uintptr_t)(-lo * size), &addr) ||
      __builtin_add_overflow(addr, (uintptr_t)nbytes, &addr))
    return uopc_fail(err, UOPC_E_OVERFLOW, fn,
                     "shape %s with strides %s spans elements [%lld, %lld] around elem0: "
                     "the byte range overflows", uopc_tensor_dims_text(x->rank, x->shape).s,
                     uopc_tensor_dims_text(x->rank, x->strides).s, (long long)lo, (long long)hi);
  *first = lo * size;  /* |lo| < count, so this product fits */
  return UOPC_OK;
}

int uopc_tensor_wrap(uopc_tensor *out, void *elem0, uopc_dtype dt, int rank,
                     const int64_t *shape, const int64_t *strides, uopc_error *err) {
  int64_t numel, first = 0;
  int rc = check_new(__func__, out, (int)dt, rank, shape, &numel, err);
  if (rc) return rc;
  if (!elem0) return UOPC_FAIL(err, UOPC_E_INVALID, "elem0 is NULL");
  if (rank > 0 && !strides) return UOPC_FAIL(err, UOPC_E_INVALID, "strides is NULL for rank %d", rank);
  uopc_tensor t = {.dtype = dt};
  uopc_tensor_set_layout(&t, rank, shape, strides);
  /* An empty view addresses nothing: its storage starts at elem0. */
  if (numel > 0 && (rc = byte_extent(__func__, &t, elem0, &first, err))) return rc;
  if ((rc = storage_new(__func__, &t.storage, (unsigned char *)elem0 + first, 0, err)))
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

void uopc_tensor_share_storage(const uopc_tensor *x) {
  __atomic_add_fetch(&private_of(x->storage)->refs, 1, __ATOMIC_RELAXED);
}

void uopc_tensor_release(uopc_tensor *t) {
  if (!t) return;
  storage *s = private_of(t->storage);
  memset(t, 0, sizeof *t);
  /* acq_rel: the thread that frees must see every other view's last writes. */
  if (!s || __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
  if (s->owned) free_owned(s->head.base, s->bytes);
  free(s);
}

/* ---- queries ---------------------------------------------------------------- */

int64_t uopc_tensor_numel(const uopc_tensor *x) {
  int64_t n = 1;
  for (int i = 0; i < x->rank; i++) n *= x->shape[i];
  return n;
}

/* The queries below are layout.h's predicates applied to a tensor. */

int uopc_tensor_is_contiguous(const uopc_tensor *x) {
  return uopc_layout_is_contiguous(x->rank, x->shape, x->strides);
}

int uopc_tensor_is_aligned(const uopc_tensor *x, size_t bytes) {
  void *p = uopc_tensor_data(x);
  return p && uopc_layout_is_aligned(p, bytes);
}

uopc_layout_bytes uopc_tensor_byte_range(const uopc_tensor *x) {
  if (!x || !x->storage) return (uopc_layout_bytes){0, 0};
  return uopc_layout_byte_range(x->rank, x->shape, x->strides, uopc_dtype_size(x->dtype),
                                uopc_tensor_data(x));
}

/* Addresses, not storage pointers: two wraps of one NumPy buffer are separate
 * storages over the same bytes. */
int uopc_tensor_may_overlap(const uopc_tensor *a, const uopc_tensor *b) {
  return uopc_layout_overlap(uopc_tensor_byte_range(a), uopc_tensor_byte_range(b));
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

/* Release and acquire: a reader that sees a new version also sees the bytes
 * written before it was bumped, on any thread. */
uint64_t uopc_tensor_version(const uopc_tensor *x) {
  if (!x || !x->storage) return 0;
  return __atomic_load_n(&private_of(x->storage)->version, __ATOMIC_ACQUIRE);
}

void uopc_tensor_bump_version(const uopc_tensor *written) {
  if (written && written->storage)
    __atomic_add_fetch(&private_of(written->storage)->version, 1, __ATOMIC_RELEASE);
}

int uopc_tensor_storage_refs(const uopc_tensor *x) {
  if (!x || !x->storage) return 0;
  return __atomic_load_n(&private_of(x->storage)->refs, __ATOMIC_RELAXED);
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
