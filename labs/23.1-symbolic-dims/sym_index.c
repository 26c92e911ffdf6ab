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
  /* Lab 23.1: write sym_index_width here. See README.md in this folder. */
  (void)ix; (void)buffer; (void)shape; (void)rank;
  return UOPC_FAIL(err, UOPC_E_NOT_IMPLEMENTED, "lab 23.1: sym_index_width is not implemented yet");
}
