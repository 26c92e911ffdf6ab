/* tp_stats.c: variance and standard deviation (given code, lab 23.4;
 * tensorjit's training, section 23.7). Each is a composition of the tensor
 * API's ops, so its derivative comes from theirs and one trace serves every
 * size: the count n is the product of the reduced extents read at run time
 * (tp_from_int), and the degrees of freedom max(0, n - correction) are
 * computed in the graph, so a correction above n is a value (the variance
 * is then inf, or NaN for 0 / 0, as PyTorch's and NumPy's are), never a
 * guard. Chapter 23.4, "Variance and standard deviation". */
#include "tp_internal.h"

#define SUB(x, y) tp_binary_at(c, IR_SUB, (x), (y), at)
#define MUL(x, y) tp_binary_at(c, IR_MUL, (x), (y), at)
#define DIV(x, y) tp_binary_at(c, IR_DIV, (x), (y), at)

/* The correction as a rank-0 tensor of dtype dt: the caller's (cast when
 * its dtype differs) or the constant. NULL after an error in c. */
static tp_tensor *correction_of(tp_ctx *c, double value, tp_tensor *given, uopc_dtype dt, tp_site at) {
  if (!given) return tp_scalar_at(c, value, dt, at);
  const ir_node *n = tp_operand(c, given, at);
  if (!n) return NULL;
  if (n->rank != 0)
    return tp_fail(c, at, UOPC_E_INVALID, "var: the correction has rank %d (a scalar, rank 0)", n->rank), NULL;
  return n->dtype == dt ? given : tp_cast_at(c, given, dt, at);
}

/* m, a keepdims mean, without the reduced axes. */
static tp_tensor *drop_axes(tp_ctx *c, tp_tensor *m, tp_tensor *x, unsigned axes, tp_site at) {
  tp_int shape[UOPC_MAX_RANK];
  int r = 0;
  for (int k = 0; k < x->ref->rank; k++)
    if (!(axes >> k & 1u)) shape[r++] = tp_size_at(c, x, k, at);
  return tp_reshape_at(c, m, r, shape, at);
}

/* sqrt(v) whose gradient is 0 where v == 0: the square root reads 1 there,
 * so its derivative 1 / (2 sqrt) is finite, and the outer where gives that
 * branch no gradient (PyTorch's std masks its backward alike). */
static tp_tensor *masked_sqrt(tp_ctx *c, tp_tensor *v, tp_site at) {
  const ir_node *n = tp_operand(c, v, at);
  if (!n) return NULL;
  tp_tensor *zero = tp_scalar_at(c, 0, n->dtype, at), *one = tp_scalar_at(c, 1, n->dtype, at);
  tp_tensor *flat = tp_binary_at(c, IR_EQ, v, zero, at);
  return tp_where_at(c, flat, zero, tp_unary_at(c, IR_SQRT, tp_where_at(c, flat, one, v, at), at), at);
}

tp_tensor *tp_moments_at(tp_ctx *c, tp_tensor *x, unsigned axes, int keepdims, double correction,
                         tp_tensor *correction_t, int root, tp_tensor **mean, tp_site at) {
  if (mean) *mean = NULL;
  if (!c || c->error.code) return NULL;
  const ir_node *a = tp_operand(c, x, at);
  if (!a) return NULL;
  const char *what = root ? "std" : "var";
  if (!uopc_dtype_is_float(a->dtype))
    return tp_fail(c, at, UOPC_E_DTYPE, "%s of a %s tensor (f32 or f64 only)", what, ir_dtype_name(a->dtype)), NULL;
  unsigned all = a->rank ? (1u << a->rank) - 1u : 0u;
  if (axes & ~all)
    return tp_fail(c, at, UOPC_E_INVALID, "%s over axes 0x%x of a rank-%d tensor", what, axes, a->rank), NULL;
  if (!axes) axes = all;
  tp_int n = tp_int_const(c, 1);
  for (int k = 0; k < a->rank; k++)
    if (axes >> k & 1u) n = tp_int_mul(c, n, tp_size_at(c, x, k, at));
  tp_tensor *count = tp_from_int_at(c, n, a->dtype, at), *zero = tp_scalar_at(c, 0, a->dtype, at);
  tp_tensor *corr = correction_of(c, correction, correction_t, a->dtype, at);
  tp_tensor *m = DIV(tp_reduce_at(c, IR_SUM, x, axes, 1, at), count);   /* keepdims: broadcasts against x */
  tp_tensor *d = SUB(x, m);
  tp_tensor *dof = tp_binary_at(c, IR_MAXIMUM, SUB(count, corr), zero, at);
  tp_tensor *v = DIV(tp_reduce_at(c, IR_SUM, MUL(d, d), axes, keepdims, at), dof);
  if (root) v = masked_sqrt(c, v, at);
  if (mean && !c->error.code) *mean = keepdims || !a->rank ? m : drop_axes(c, m, x, axes, at);
  return c->error.code ? NULL : v;
}
