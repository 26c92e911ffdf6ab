/* sym_index.h: the index-width decision (lab 23.1).
 * The address b*N + j of a contiguous (B, N) tensor is below B*N, and every
 * loop bound is at most B*N, so the largest product of the extents' upper
 * bounds decides the index type: int32_t when it is at most INT32_MAX,
 * int64_t when it fits in int64, and a rejection otherwise. The decision is
 * part of a plan's contract. Chapter 23.1, "Overflow and index width". */
#ifndef SYM_INDEX_H
#define SYM_INDEX_H

#include "sym_expr.h"

typedef struct sym_index_plan {
  int bits;               /* 32 or 64 */
  int64_t max_elements;   /* the largest product of upper bounds seen */
} sym_index_plan;

/* Starts a decision with no extents seen (bits 32, max_elements 0). */
void sym_index_init(sym_index_plan *ix);

/* Widens ix for one contiguous buffer of the given extents: computes the
 * product of their interval upper bounds with overflow checks and keeps the
 * largest. Errors: UOPC_E_INVALID (an extent may be negative), UOPC_E_OVERFLOW
 * ("buffer 'x' may hold 4611686018427387904 * 4 elements, past int64");
 * on error ix is unchanged. */
int sym_index_width(sym_index_plan *ix, const char *buffer, const sym_expr *const *shape,
                    int rank, uopc_error *err);

/* "int32_t" or "int64_t". */
const char *sym_index_ctype(const sym_index_plan *ix);

#endif
