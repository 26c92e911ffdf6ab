/* tp_nn.c: softmax, log-softmax and layer norm (given code, lab 23.4;
 * tensorjit's passes, section 23.7). Each is recorded as the core's
 * primitives it is made of, as PyTorch's decompositions record theirs, so
 * no graph holds a composite op: the fusion rule sees its exps and sums,
 * CSE shares its reductions with the model's, one trace serves every size,
 * and its derivative is the primitives' (the max that steadies a softmax
 * gets a gradient that cancels to rounding: softmax is shift-invariant).
 * Layer norm's count is a size read at run time (tp_stats.c's moments).
 * Chapter 23.1, "Passes over the graph". */
#include "tp_internal.h"

#define SUB(x, y) tp_binary_at(c, IR_SUB, (x), (y), at)

/* The axis as a bit of x's axes, or 0 after an error naming op. */
static unsigned axis_bit(tp_ctx *c, tp_tensor *x, int axis, const char *op, tp_site at) {
  if (!c || c->error.code) return 0;
  const ir_node *a = tp_operand(c, x, at);
  if (!a) return 0;
  if (!uopc_dtype_is_float(a->dtype))
    return tp_fail(c, at, UOPC_E_DTYPE, "%s of a %s tensor (f32 or f64 only)", op, ir_dtype_name(a->dtype)), 0;
  int k = axis < 0 ? axis + a->rank : axis;
  if (a->rank == 0 || k < 0 || k >= a->rank)
    return tp_fail(c, at, UOPC_E_INVALID, "%s over axis %d of a rank-%d tensor", op, axis, a->rank), 0;
  return 1u << k;
}

/* exp(x - max(x, axis)), the max kept for log-softmax's use. */
static tp_tensor *shifted_exp(tp_ctx *c, tp_tensor *x, unsigned bit, tp_tensor **shifted, tp_site at) {
  *shifted = SUB(x, tp_reduce_at(c, IR_MAX, x, bit, 1, at));
  return tp_unary_at(c, IR_EXP, *shifted, at);
}

tp_tensor *tp_softmax_at(tp_ctx *c, tp_tensor *x, int axis, tp_site at) {
  unsigned bit = axis_bit(c, x, axis, "softmax", at);
  if (!bit) return NULL;
  tp_tensor *shifted, *e = shifted_exp(c, x, bit, &shifted, at);
  return tp_binary_at(c, IR_DIV, e, tp_reduce_at(c, IR_SUM, e, bit, 1, at), at);
}

tp_tensor *tp_log_softmax_at(tp_ctx *c, tp_tensor *x, int axis, tp_site at) {
  unsigned bit = axis_bit(c, x, axis, "log_softmax", at);
  if (!bit) return NULL;
  tp_tensor *shifted, *e = shifted_exp(c, x, bit, &shifted, at);
  return SUB(shifted, tp_unary_at(c, IR_LOG, tp_reduce_at(c, IR_SUM, e, bit, 1, at), at));
}

tp_tensor *tp_layer_norm_at(tp_ctx *c, tp_tensor *x, tp_tensor *weight, tp_tensor *bias, double eps, tp_site at) {
  unsigned bit = axis_bit(c, x, -1, "layer_norm", at);
  if (!bit) return NULL;
  tp_tensor *mean = NULL, *var = tp_moments_at(c, x, bit, 1, 0, NULL, 0, &mean, at);
  const ir_node *a = var ? tp_operand(c, x, at) : NULL;
  if (!a) return NULL;
  tp_tensor *sd = tp_unary_at(c, IR_SQRT, tp_binary_at(c, IR_ADD, var, tp_scalar_at(c, eps, a->dtype, at), at), at);
  tp_tensor *y = tp_binary_at(c, IR_DIV, SUB(x, mean), sd, at);
  if (weight) y = tp_binary_at(c, IR_MUL, y, weight, at);
  if (bias) y = tp_binary_at(c, IR_ADD, y, bias, at);
  return c->error.code ? NULL : y;
}
