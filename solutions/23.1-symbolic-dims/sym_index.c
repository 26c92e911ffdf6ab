/* sym_index.c: the index-width decision (lab 23.1). */
#include <inttypes.h>
#include <stdio.h>
#include "sym_index.h"

void sym_index_init(sym_index_plan *ix) {
  ix->bits = 32;
  ix->max_elements = 0;
}

const char *sym_index_ctype(const sym_index_plan *ix) {
  return ix->bits == 32 ? "int32_t" : "int64_t";
}

int sym_index_width(sym_index_plan *ix, const char *buffer, const sym_expr *const *shape,
                    int rank, uopc_error *err) {
// STUDENT 23.1 sym_index_width
  int64_t elements = 1;
  char text[256] = "";
  int used = 0;
  for (int k = 0; k < rank; k++) {
    sym_interval r;
    int rc = sym_expr_interval(shape[k], &r, err);
    if (rc) return rc;
    if (r.lo < 0)
      return UOPC_FAIL(err, UOPC_E_INVALID, "buffer '%s': extent %d may be %" PRId64,
                       buffer, k, r.lo);
    used += snprintf(text + used, sizeof text - (size_t)used, "%s%" PRId64, k ? " * " : "",
                     r.hi);
    if (used >= (int)sizeof text) used = (int)sizeof text - 1;
    int64_t next;
    if (__builtin_mul_overflow(elements, r.hi, &next)) {
      for (int j = k + 1; j < rank && used < (int)sizeof text - 1; j++) {
        sym_interval rj;
        if (sym_expr_interval(shape[j], &rj, NULL) == UOPC_OK)
          used += snprintf(text + used, sizeof text - (size_t)used, " * %" PRId64, rj.hi);
      }
      return UOPC_FAIL(err, UOPC_E_OVERFLOW, "buffer '%s' may hold %s elements, past int64",
                       buffer, text);
    }
    elements = next;
  }
  if (elements > ix->max_elements) ix->max_elements = elements;
  if (ix->max_elements > INT32_MAX) ix->bits = 64;
  return UOPC_OK;
// END STUDENT
}
