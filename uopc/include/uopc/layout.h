/* layout.h: the layout predicates, defined once: contiguity, the bytes a view
 * reaches, alignment and overlap. A layout is a raw description (rank, shape,
 * strides in elements, item size in bytes, element 0's address), so a guard
 * can test views it holds only as numbers; tensor.h applies the same
 * predicates to a uopc_tensor (uopc_tensor_is_contiguous, _byte_range,
 * _is_aligned, _may_overlap). Introduced in 23.6 (the compiled path's guards);
 * 23.2's guards and 23.3's aliasing build on them. The tests are inline:
 * guards run them on every call. */
#ifndef UOPC_LAYOUT_H
#define UOPC_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

/* The bytes [lo, hi) a view reaches; lo == hi when it reaches none. */
typedef struct uopc_layout_bytes {
  uintptr_t lo;   /* the lowest byte reached */
  uintptr_t hi;   /* one past the highest byte reached */
} uopc_layout_bytes;

/* Row-major packed strides for shape, in elements. A zero dim counts as 1 in
 * the running product (as NumPy did for years), so an empty shape's strides
 * stay as small as its non-empty dims allow. A negative dim, which no valid
 * shape has, counts as 1 too: it never turns a stride negative. */
void uopc_layout_packed_strides(int rank, const int64_t *shape, int64_t *strides);

/* 1 when the strides are the packed ones for shape, dims of size 1 ignored
 * (their stride is never used). An empty view (any dim 0) is contiguous, as
 * in NumPy. */
static inline int uopc_layout_is_contiguous(int rank, const int64_t *shape, const int64_t *strides) {
  int64_t expected = 1;
  int packed = 1, past = 0;   /* past: the product left int64, so no stride can equal it */
  for (int i = rank - 1; i >= 0; i--) {
    if (shape[i] == 0) return 1;   /* looked for to the end: an empty view is contiguous */
    if (shape[i] == 1) continue;
    if (past || strides[i] != expected) packed = 0;
    past |= __builtin_mul_overflow(expected, shape[i], &expected);
  }
  return packed;
}

/* The lowest and highest element offsets, from element 0, that the view
 * reaches: each dim adds stride * (n - 1) to one end or the other. Returns 1
 * when it reaches elements, 0 when it is empty (*lo = *hi = 0), and -1 when
 * an offset is past int64 (only a hand-built view can do that). */
static inline int uopc_layout_span(int rank, const int64_t *shape, const int64_t *strides,
                                   int64_t *lo, int64_t *hi) {
  *lo = *hi = 0;
  for (int i = 0; i < rank; i++)
    if (shape[i] == 0) return 0;
  for (int i = 0; i < rank; i++) {
    int64_t reach;
    if (__builtin_mul_overflow(strides[i], shape[i] - 1, &reach)) return -1;
    int64_t *end = reach < 0 ? lo : hi;
    if (__builtin_add_overflow(*end, reach, end)) return -1;
  }
  return 1;
}

/* The bytes a view whose element 0 is at elem0 reaches: from its lowest
 * element's first byte to its highest element's last. An empty view reaches
 * none ({elem0, elem0}); one whose span is past int64 is taken to reach every
 * address, the safe answer for an overlap test. */
static inline uopc_layout_bytes uopc_layout_byte_range(int rank, const int64_t *shape,
                                                       const int64_t *strides, size_t itemsize,
                                                       const void *elem0) {
  uintptr_t p = (uintptr_t)elem0;
  int64_t lo, hi, first, last;
  int reach = uopc_layout_span(rank, shape, strides, &lo, &hi);
  if (reach == 0) return (uopc_layout_bytes){p, p};
  if (reach < 0 || __builtin_mul_overflow(lo, (int64_t)itemsize, &first) ||
      __builtin_add_overflow(hi, 1, &last) || __builtin_mul_overflow(last, (int64_t)itemsize, &last))
    return (uopc_layout_bytes){0, UINTPTR_MAX};
  /* Unsigned: first is negative or zero, and the sum wraps as intended. */
  return (uopc_layout_bytes){p + (uintptr_t)first, p + (uintptr_t)last};
}

/* 1 when p is a multiple of bytes; 0 when it is not, or bytes is not a power
 * of two (0 included). */
static inline int uopc_layout_is_aligned(const void *p, size_t bytes) {
  if (bytes == 0 || (bytes & (bytes - 1))) return 0;
  return ((uintptr_t)p & (bytes - 1)) == 0;
}

/* 1 when the two ranges share a byte. An empty range shares none, even one
 * that lies inside the other. */
static inline int uopc_layout_overlap(uopc_layout_bytes a, uopc_layout_bytes b) {
  return a.lo < a.hi && b.lo < b.hi && a.lo < b.hi && b.lo < a.hi;
}

#endif
