/* attn.c: decode attention in the graph IR (lab 23.5, student file).
 * scores = q k^T / sqrt(head_dim) per head, over the L populated slots;
 * weights = exp(scores - max) / sum, the maximum subtracted first so that
 * no score overflows exp; out = weights v. L is a dim: the compiled loops
 * run to the row's length, whatever the capacity. Chapter 23.5, "One plan
 * over a symbolic length". */
#include <math.h>
#include "attn.h"

int attn_dims_init(attn_dims *d, int heads, int head_dim, int capacity_max, uopc_error *err) {
  if (!d || heads < 1 || head_dim < 1 || capacity_max < 1)
    return UOPC_FAIL(err, UOPC_E_INVALID, "attn_dims_init: heads, head_dim and capacity_max must be >= 1");
  d->heads = heads;
  d->head_dim = head_dim;
  int rc = sym_dim_init(&d->length, "L", 1, capacity_max, 1, err);
  /* A row's heads are capacity * head_dim elements apart, a multiple of head_dim. */
  if (!rc) rc = sym_dim_init(&d->head_stride, "head_stride", head_dim, (int64_t)capacity_max * head_dim, head_dim, err);
  return rc;
}

/* Lab 23.5: helper functions for your code go here. */

int attn_build(ir_graph *g, const attn_dims *d, const ir_node **out, uopc_error *err) {
  /* Lab 23.5: write attn_build here. See README.md in this folder. */
  (void)g; (void)d; (void)out;
  return UOPC_FAIL(err, UOPC_E_NOT_IMPLEMENTED, "lab 23.5: attn_build is not implemented yet");
}

int attn_build_masked(ir_graph *g, const attn_dims *d, const sym_dim *capacity, const ir_node **out,
                      uopc_error *err) {
  /* Lab 23.5: write attn_build_masked here. See README.md in this folder. */
  (void)g; (void)d; (void)capacity; (void)out;
  return UOPC_FAIL(err, UOPC_E_NOT_IMPLEMENTED, "lab 23.5: attn_build_masked is not implemented yet");
}
