/* attn.h: decode attention as a graph of the compiler core (lab 23.5).
 * One query token per row: q (heads, head_dim) attends over the row's
 * populated prefix K, V (heads, L, head_dim), L a symbolic dim, so one plan
 * serves every position; the prefix views are strided (a row of the
 * cache), their head stride a dim too, so one plan serves every capacity.
 * Chapter 23.5, "One plan over a symbolic length". */
#ifndef ATTN_H
#define ATTN_H

#include "exec.h"

/* How lab 23.5 lowers its programs (model.c), and its tests attn_build's
 * graphs: nests fused by the core's planner (LOWER_FUSE: a matmul in rows,
 * so each weight is computed once per slot and v is read along its rows;
 * the scores read k in place), the f32 exp vectorisable (LOWER_VEC_EXP,
 * within 3 ulps of libm's), and the lab's fusion rule, KV_FUSE_RULE: the
 * core's rule that stores every exp, since the softmax's is read twice (by
 * its sum and by the weights) and costs a libm call's units
 * (LOWER_CALL_COST) each time. Measured against the lane form and without
 * the rule: chapter 23.5, "What the seed left open, measured". */
#define KV_LOWER_FLAGS (LOWER_FUSE | LOWER_VEC_EXP)
#define KV_FUSE_RULE LOWER_RULE_STORE_EXPS

/* The dims an attention graph is built over. */
typedef struct attn_dims {
  sym_dim length;       /* L: the populated slots read, in [1, capacity max] */
  sym_dim head_stride;  /* elements from one head's slot 0 to the next head's */
  int heads, head_dim;
} attn_dims;

/* attn_dims for capacities up to capacity_max. Errors: UOPC_E_INVALID. */
int attn_dims_init(attn_dims *d, int heads, int head_dim, int capacity_max, uopc_error *err);

/* The student's (attn.c): builds in g the inputs "q" (heads, head_dim),
 * contiguous, and "k", "v" (heads, L, head_dim) with strides (head_stride,
 * head_dim, 1), and *out = softmax(q k^T / sqrt(head_dim)) v per head, as
 * (heads, head_dim). The softmax subtracts each head's maximum score before
 * exp (max first: no overflow for any scores), then divides by the sum.
 * Errors: the graph's first error. */
int attn_build(ir_graph *g, const attn_dims *d, const ir_node **out, uopc_error *err);

/* The student's (attn.c): the baseline the seed warns about. Inputs "q",
 * "k", "v" over the whole capacity (heads, capacity, head_dim) with the same
 * strides, and "bias" (capacity): 0 for a populated slot, -inf beyond;
 * scores + bias, then the same softmax. Correct, and its work is
 * proportional to the capacity. The capacity is head_stride / head_dim
 * slots, but an extent cannot be a quotient of dims: the slot axis of k, v
 * and bias is the dim capacity, passed on its own. Errors: the graph's. */
int attn_build_masked(ir_graph *g, const attn_dims *d, const sym_dim *capacity, const ir_node **out,
                      uopc_error *err);

#endif
