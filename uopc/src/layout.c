/* layout.c: the layout predicates' out-of-line part (uopc/layout.h); the
 * tests themselves are inline in the header, as guards call them per call.
 * Introduced in 23.6. */
#include "uopc/layout.h"

void uopc_layout_packed_strides(int rank, const int64_t *shape, int64_t *strides) {
  int64_t s = 1;
  for (int i = rank - 1; i >= 0; i--) {
    strides[i] = s;
    if (shape[i] > 0) s *= shape[i];
  }
}
