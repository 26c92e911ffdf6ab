/* tensor.h: one small strided tensor used by every lab.
 * A tensor is a value (shape, strides, offset) over refcounted storage; views
 * share the storage and never copy. Strides and offsets count elements, not
 * bytes. Slicing follows NumPy exactly, negative steps included.
 * Introduced in section 23.6; views and aliasing are the subject of 23.3. */
#ifndef UOPC_TENSOR_H
#define UOPC_TENSOR_H

#include <stddef.h>
#include <stdint.h>
#include "uopc/error.h"
#include "uopc/layout.h"

/* UOPC_BOOL is one byte holding 0 or 1, as NumPy's bool_ (comparisons, masks). */
typedef enum uopc_dtype { UOPC_F32, UOPC_F64, UOPC_I32, UOPC_I64, UOPC_BOOL } uopc_dtype;

#define UOPC_MAX_RANK 8
/* Stands for an omitted slice bound, as `None` does in x[:5] or x[::-1]. */
#define UOPC_SLICE_NONE INT64_MIN

/* Refcounted bytes, owned or borrowed. Only the base is public (read it,
 * never write it): uopc_tensor_data, which every kernel call needs, is
 * inline through it. Size, refcount and ownership are private to tensor.c. */
typedef struct uopc_storage {
  unsigned char *base;   /* the lowest byte any view of this storage may address */
} uopc_storage;

typedef struct uopc_tensor {
  uopc_storage *storage;            /* NULL only for a released tensor */
  uopc_dtype dtype;
  int rank;                         /* 0..UOPC_MAX_RANK; shape and strides past it are 0 */
  int64_t shape[UOPC_MAX_RANK];
  int64_t strides[UOPC_MAX_RANK];   /* in elements; may be negative or zero */
  int64_t offset;                   /* element 0's distance from the storage base */
} uopc_tensor;

/* 1, 4 or 8 bytes. */
static inline size_t uopc_dtype_size(uopc_dtype dt) {
  return dt == UOPC_BOOL ? 1 : dt == UOPC_F64 || dt == UOPC_I64 ? 8 : 4;
}
const char *uopc_dtype_name(uopc_dtype dt);   /* "f32", "f64", "i32", "i64", "bool" */
int uopc_dtype_is_float(uopc_dtype dt);

/* --- Creation: each fills *out with a tensor holding one storage reference,
 * which the caller gives back with uopc_tensor_release. */

/* A new contiguous tensor, zero-filled, in storage aligned to 64 bytes.
 * Errors: UOPC_E_INVALID (rank, negative dim), UOPC_E_OVERFLOW, UOPC_E_NOMEM. */
int uopc_tensor_empty(uopc_tensor *out, uopc_dtype dt, int rank,
                      const int64_t *shape, uopc_error *err);

/* Borrows a caller's buffer without copying: element 0 is at elem0, strides are
 * in elements. The storage covers exactly the bytes the view can address; the
 * caller keeps the buffer alive while any view of it lives.
 * Errors: UOPC_E_INVALID, UOPC_E_OVERFLOW, UOPC_E_NOMEM. */
int uopc_tensor_wrap(uopc_tensor *out, void *elem0, uopc_dtype dt, int rank,
                     const int64_t *shape, const int64_t *strides, uopc_error *err);

/* A new reference to the same view (refcount + 1). */
void uopc_tensor_retain(uopc_tensor *out, const uopc_tensor *x);

/* Drops the storage reference; the storage is freed with its last view.
 * Safe on a released or zeroed tensor. */
void uopc_tensor_release(uopc_tensor *t);

/* --- Views: each fills *out with a new view of x's storage (refcount + 1). */

/* x[start:stop:step] along axis, normalised as Python's slice.indices():
 * negative bounds count from the end, out-of-range bounds clamp, step != 0.
 * Errors: UOPC_E_INVALID (axis, step 0). */
int uopc_tensor_slice(uopc_tensor *out, const uopc_tensor *x, int axis,
                      int64_t start, int64_t stop, int64_t step, uopc_error *err);

/* x[..., index, ...] along axis, dropping that axis; negative index counts
 * from the end. Errors: UOPC_E_BOUNDS (index outside [-n, n)), UOPC_E_INVALID. */
int uopc_tensor_select(uopc_tensor *out, const uopc_tensor *x, int axis,
                       int64_t index, uopc_error *err);

/* Axes reordered: out axis i is x axis perm[i]. Errors: UOPC_E_INVALID. */
int uopc_tensor_permute(uopc_tensor *out, const uopc_tensor *x, const int *perm,
                        uopc_error *err);

/* Swaps two axes. Errors: UOPC_E_INVALID. */
int uopc_tensor_transpose(uopc_tensor *out, const uopc_tensor *x, int a, int b,
                          uopc_error *err);

/* A view with a new shape and the same elements in row-major order; one dim may
 * be -1 (inferred). Works without copying whenever NumPy's reshape would
 * return a view; otherwise UOPC_E_LAYOUT (a copy is the caller's decision).
 * Errors: UOPC_E_INVALID (sizes differ, two -1), UOPC_E_LAYOUT. */
int uopc_tensor_reshape(uopc_tensor *out, const uopc_tensor *x, int rank,
                        const int64_t *shape, uopc_error *err);

/* --- Queries. */

int64_t uopc_tensor_numel(const uopc_tensor *x);
/* Element 0's address (storage base + offset); NULL for a released tensor. */
static inline void *uopc_tensor_data(const uopc_tensor *x) {
  if (!x || !x->storage) return NULL;
  return x->storage->base + x->offset * (int64_t)uopc_dtype_size(x->dtype);
}
/* The layout predicates of layout.h, applied to a tensor. */
/* Row-major contiguous: strides equal the packed strides (dims of size 1
 * ignored); an empty tensor is contiguous. */
int uopc_tensor_is_contiguous(const uopc_tensor *x);
/* Element 0's address is a multiple of bytes (a power of two); 0 for a
 * released tensor. */
int uopc_tensor_is_aligned(const uopc_tensor *x, size_t bytes);
/* The bytes [lo, hi) the view reaches: none (lo == hi) when it is empty or
 * released. */
uopc_layout_bytes uopc_tensor_byte_range(const uopc_tensor *x);
/* 1 when the two views can reach a common byte (conservative: compares the
 * byte ranges they span); 0 when they certainly cannot. */
int uopc_tensor_may_overlap(const uopc_tensor *a, const uopc_tensor *b);
/* 1 when a and b are the same view of the same memory: element 0 at one
 * address, same dtype, shape and strides (wraps of one buffer included). */
int uopc_tensor_same_view(const uopc_tensor *a, const uopc_tensor *b);
/* The storage's reference count (tests check sharing with it). */
int uopc_tensor_storage_refs(const uopc_tensor *x);

/* --- Versions (23.3): a storage counts the writes made through its views. */

/* x's storage version: 0 when created, one more for each write through any
 * view of it (uopc_tensor_set, uopc_tensor_copy into it, bump_version below).
 * Views share it; reads and making views leave it alone. Two wraps of one
 * buffer are two storages, with a counter each. 0 for a released tensor. */
uint64_t uopc_tensor_version(const uopc_tensor *x);
/* Records a write through written (a released tensor is ignored). Code that
 * writes a tensor's bytes itself, such as a caller that ran a compiled
 * kernel into an output, calls it once the write is done. Thread-safe. */
void uopc_tensor_bump_version(const uopc_tensor *written);

/* --- Copies. */

/* out[...] = x[...] for equal shapes and dtypes, any layouts; handles overlap
 * as NumPy does (as if through a temporary). Counts as one write of out's
 * storage (its version), even when no byte changes.
 * Errors: UOPC_E_INVALID, UOPC_E_DTYPE, UOPC_E_NOMEM (the temporary). */
int uopc_tensor_copy(uopc_tensor *out, const uopc_tensor *x, uopc_error *err);

/* Element i in row-major logical order, converted to double (tests, fallbacks). */
double uopc_tensor_get(const uopc_tensor *x, int64_t i);
/* Stores v converted to x's dtype at logical row-major position i: one write
 * of x's storage (its version); outside [0, numel) nothing happens. */
void uopc_tensor_set(uopc_tensor *x, int64_t i, double v);

/* --- For foreign callers (the Python harness through ctypes): heap handles. */

/* A heap tensor wrapping a caller's buffer (as uopc_tensor_wrap); NULL on
 * error. Free it with uopc_tensor_free. */
uopc_tensor *uopc_tensor_wrap_new(void *elem0, int dtype, int rank,
                                  const int64_t *shape, const int64_t *strides,
                                  uopc_error *err);
void uopc_tensor_free(uopc_tensor *t);

#endif
