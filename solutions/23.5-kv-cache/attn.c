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

// STUDENT 23.5 helpers
/* softmax(scores over the last axis) @ v, the maximum first. */
static const ir_node *softmax_weighted(ir_graph *g, const ir_node *scores, const ir_node *v) {
#ifdef ATTN_SOFTMAX_NO_MAX   /* a test-only build takes exp of the raw scores: tests/broken/23.5.mk */
  const ir_node *e = ir_unary(g, IR_EXP, scores);
#else
  const ir_node *m = ir_reduce(g, IR_MAX, scores, 1u << 2, 1);
  const ir_node *e = ir_unary(g, IR_EXP, ir_binary(g, IR_SUB, scores, m));
#endif
  const ir_node *w = ir_binary(g, IR_DIV, e, ir_reduce(g, IR_SUM, e, 1u << 2, 1));
  return ir_matmul(g, w, v);                       /* (heads, 1, L) @ (heads, L, hd) */
}

/* q (heads, hd) as (heads, 1, hd), k (heads, n, hd): scores (heads, 1, n). */
static const ir_node *scores_of(ir_graph *g, const attn_dims *d, const ir_node *q, const ir_node *k) {
  sym_arena *a = ir_graph_arena(g);
  const sym_expr *q3[3] = {sym_expr_const(a, d->heads), sym_expr_const(a, 1), sym_expr_const(a, d->head_dim)};
  const ir_node *s = ir_matmul(g, ir_reshape(g, q, 3, q3), ir_transpose(g, k, 1, 2));
  return ir_binary(g, IR_MUL, s, ir_const(g, 1.0 / sqrt((double)d->head_dim), UOPC_F32));
}

static const ir_node *row_view(ir_graph *g, const attn_dims *d, const char *name, const sym_expr *slots) {
  sym_arena *a = ir_graph_arena(g);
  const sym_expr *shape[3] = {sym_expr_const(a, d->heads), slots, sym_expr_const(a, d->head_dim)};
  const sym_expr *strides[3] = {sym_expr_dim(a, &d->head_stride), sym_expr_const(a, d->head_dim), sym_expr_const(a, 1)};
  return ir_input_view(g, name, UOPC_F32, 3, shape, strides, NULL);
}

static const ir_node *as_heads(ir_graph *g, const attn_dims *d, const ir_node *o) {
  sym_arena *a = ir_graph_arena(g);
  const sym_expr *shape[2] = {sym_expr_const(a, d->heads), sym_expr_const(a, d->head_dim)};
  return ir_reshape(g, o, 2, shape);
}

static int done(ir_graph *g, const ir_node *o, const ir_node **out, uopc_error *err) {
  if (o) { *out = o; return UOPC_OK; }
  *err = *ir_graph_error(g);
  return err->code ? err->code : UOPC_E_NOMEM;
}
// END STUDENT

int attn_build(ir_graph *g, const attn_dims *d, const ir_node **out, uopc_error *err) {
  // STUDENT 23.5 attn_build
  sym_arena *a = ir_graph_arena(g);
  const sym_expr *q_shape[2] = {sym_expr_const(a, d->heads), sym_expr_const(a, d->head_dim)};
  const ir_node *q = ir_input(g, "q", UOPC_F32, 2, q_shape);
  const sym_expr *L = sym_expr_dim(a, &d->length);
  const ir_node *k = row_view(g, d, "k", L), *v = row_view(g, d, "v", L);
  return done(g, as_heads(g, d, softmax_weighted(g, scores_of(g, d, q, k), v)), out, err);
  // END STUDENT
}

int attn_build_masked(ir_graph *g, const attn_dims *d, const sym_dim *capacity, const ir_node **out,
                      uopc_error *err) {
  // STUDENT 23.5 attn_build_masked
  sym_arena *a = ir_graph_arena(g);
  const sym_expr *q_shape[2] = {sym_expr_const(a, d->heads), sym_expr_const(a, d->head_dim)};
  const ir_node *q = ir_input(g, "q", UOPC_F32, 2, q_shape);
  const sym_expr *C = sym_expr_dim(a, capacity);
  const ir_node *k = row_view(g, d, "k", C), *v = row_view(g, d, "v", C);
  const ir_node *bias = ir_input(g, "bias", UOPC_F32, 1, &C);     /* 0 or -inf: every slot is still read */
  const ir_node *s = ir_binary(g, IR_ADD, scores_of(g, d, q, k), bias);
  return done(g, as_heads(g, d, softmax_weighted(g, s, v)), out, err);
  // END STUDENT
}
