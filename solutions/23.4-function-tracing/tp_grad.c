/* tp_grad.c: backward rules and how gradients meet (lab 23.4, student
 * file). A rule turns d loss / d y into d loss / d of each operand, using
 * the tensor API; sizes it needs (a mean's count) come from tp_size and
 * tp_from_int, so a traced backward reads them at run time and one
 * artifact serves every batch size. Chapter 23.4, "Gradients with symbolic saved dims". */
#include "tp_internal.h"

// STUDENT 23.4 helpers
/* The keepdims shape of a reduction of x over axes: reduced extents 1. */
static void kept_shape(tp_ctx *c, tp_tensor *x, unsigned axes, tp_int *shape, tp_site at) {
  for (int k = 0; k < x->ref->rank; k++) shape[k] = axes >> k & 1u ? tp_int_const(c, 1) : tp_size_at(c, x, k, at);
}

/* gy of a reduction brought back to x's shape: reshaped to keep the reduced
 * axes (extent 1), then broadcast along them. */
static tp_tensor *spread(tp_ctx *c, tp_tensor *gy, tp_tensor *x, unsigned axes, tp_site at) {
  tp_int kept[UOPC_MAX_RANK], full[UOPC_MAX_RANK];
  int rank = x->ref->rank;
  kept_shape(c, x, axes, kept, at);
  for (int k = 0; k < rank; k++) full[k] = tp_size_at(c, x, k, at);
  return tp_expand_at(c, tp_reshape_at(c, gy, rank, kept, at), rank, full, at);
}

/* tp_unbroadcast as an expression. */
static tp_tensor *ub(tp_ctx *c, tp_tensor *g, const tp_tensor *like, tp_site at) {
  tp_tensor *out = NULL;
  uopc_error err = {0};
  if (!g || tp_status(c)) return NULL;
  return tp_student(c, at, tp_unbroadcast(c, g, like, at, &out, &err), &err) ? NULL : out;
}
// END STUDENT

int tp_unbroadcast(tp_ctx *c, tp_tensor *g, const tp_tensor *like, tp_site at, tp_tensor **out, uopc_error *err) {
  // STUDENT 23.4 tp_unbroadcast
  if (!g || !like || !out) return UOPC_FAIL(err, UOPC_E_INVALID, "unbroadcast: NULL argument");
  const ir_node *gn = g->ref, *ln = like->ref;
  int lead = gn->rank - ln->rank;
  if (lead < 0) return UOPC_FAIL(err, UOPC_E_INVALID, "unbroadcast: a gradient of rank %d for rank %d", gn->rank, ln->rank);
  unsigned stretched = 0;    /* like's axes of extent 1 that g has longer */
  for (int k = 0; k < ln->rank; k++) {
    const sym_expr *e = ln->shape[k], *f = gn->shape[k + lead];
    if (e->kind == SYM_CONST && e->value == 1 && !(f->kind == SYM_CONST && f->value == 1)) stretched |= 1u << k;
  }
  tp_tensor *r = g;
  if (lead) r = tp_reduce_at(c, IR_SUM, r, (1u << lead) - 1u, 0, at);   /* axes broadcasting added */
#ifdef TP_UNBROADCAST_NO_STRETCH   /* a test-only build sums leading axes only: tests/broken/23.4.mk */
  stretched = 0;
#endif
  if (stretched && r) r = tp_reduce_at(c, IR_SUM, r, stretched, 1, at);  /* axes it stretched, kept as 1 */
  *out = r;
  return tp_status(c);
  // END STUDENT
}

int tp_accumulate(tp_ctx *c, tp_tensor **slot, tp_tensor *contribution, tp_site at, uopc_error *err) {
  // STUDENT 23.4 tp_accumulate
  if (!slot || !contribution) return UOPC_FAIL(err, UOPC_E_INVALID, "accumulate: NULL slot or contribution");
#ifdef TP_ACCUMULATE_OVERWRITES   /* a test-only build keeps the last path only: tests/broken/23.4.mk */
  *slot = contribution;
  (void)c, (void)at;
#else
  *slot = *slot ? tp_binary_at(c, IR_ADD, *slot, contribution, at) : contribution;
#endif
  return tp_status(c);
  // END STUDENT
}

int tp_vjp_rule(tp_ctx *c, tp_tensor *y, tp_tensor *gy, tp_tensor **gx, tp_site at, uopc_error *err) {
  // STUDENT 23.4 tp_vjp_rule
  const ir_node *n = y->node;
  tp_tensor *a = y->src[0], *b = y->src[1];
  switch (n->op) {
  case IR_MUL:
    gx[0] = ub(c, tp_binary_at(c, IR_MUL, gy, b, at), a, at);
    gx[1] = ub(c, tp_binary_at(c, IR_MUL, gy, a, at), b, at);
    break;
  case IR_MAXIMUM: {   /* relu is maximum(x, 0): the gradient goes to the larger; a tie goes to b, so relu'(0) = 0 */
    tp_tensor *mask = tp_binary_at(c, IR_GT, a, b, at), *zero = tp_scalar_at(c, 0, n->dtype, at);
    gx[0] = ub(c, tp_where_at(c, mask, gy, zero, at), a, at);
    gx[1] = ub(c, tp_where_at(c, mask, zero, gy, at), b, at);
    break;
  }
  case IR_MATMUL:      /* y = a @ b: da = dy @ b^T, db = a^T @ dy */
    gx[0] = tp_matmul_at(c, gy, tp_transpose_at(c, b, at), at);
    gx[1] = tp_matmul_at(c, tp_transpose_at(c, a, at), gy, at);
    break;
  case IR_SUM:
    gx[0] = spread(c, gy, a, n->axes, at);
    break;
  case IR_MEAN: {      /* the sum's gradient over the count, a size read at run time */
    tp_int count = tp_int_const(c, 1);
    for (int k = 0; k < a->ref->rank; k++)
      if (n->axes >> k & 1u) count = tp_int_mul(c, count, tp_size_at(c, a, k, at));
#ifdef TP_MEAN_NO_COUNT   /* a test-only build forgets the count: tests/broken/23.4.mk */
    gx[0] = spread(c, gy, a, n->axes, at);
    (void)count;
#else
    gx[0] = tp_binary_at(c, IR_DIV, spread(c, gy, a, n->axes, at), tp_from_int_at(c, count, n->dtype, at), at);
#endif
    break;
  }
  default:
    return UOPC_FAIL(err, UOPC_E_UNSUPPORTED, "no backward rule for %s (the lab's rules: add, sub, mul, div, neg,"
                   " exp, tanh, maximum, where, matmul, sum, mean, transpose, expand, reshape)", ir_op_info_of(n->op)->name);
  }
  return tp_status(c);
  // END STUDENT
}
