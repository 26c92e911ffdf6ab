/* tp_grad_given.c: the backward rules the lab gives (lab 23.4). Each is
 * written with the tensor API, so it computes in eager mode and records in
 * a trace; a gradient reaching a broadcast operand is summed back to the
 * operand's shape (tp_unbroadcast, the student's). Chapter 23.4,
 * "Gradients with symbolic saved dims". */
#include "tp_internal.h"

/* The student's tp_unbroadcast as an expression (NULL after an error in c). */
static tp_tensor *unb(tp_ctx *c, tp_tensor *g, const tp_tensor *like, tp_site at) {
  tp_tensor *out = NULL;
  uopc_error err = {0};
  if (!g || tp_status(c)) return NULL;
  return tp_student(c, at, tp_unbroadcast(c, g, like, at, &out, &err), &err) ? NULL : out;
}

static tp_tensor *zeros(tp_ctx *c, tp_tensor *like, tp_site at) {
  return tp_scalar_at(c, 0, like->ref->dtype, at);
}

int tp_vjp_given(tp_ctx *c, tp_tensor *y, tp_tensor *gy, tp_tensor **gx, tp_site at, int *done) {
  const ir_node *n = y->node;
  tp_tensor *a = y->src[0], *b = y->src[1];
  *done = 1;
  switch (n->op) {
  case IR_ADD:
    gx[0] = unb(c, gy, a, at);
    gx[1] = unb(c, gy, b, at);
    break;
  case IR_SUB:
    gx[0] = unb(c, gy, a, at);
    gx[1] = unb(c, tp_unary_at(c, IR_NEG, gy, at), b, at);
    break;
  case IR_NEG: gx[0] = tp_unary_at(c, IR_NEG, gy, at); break;
  case IR_DIV:   /* d(a/b) = da / b - a db / b^2 = (da - y db) / b */
    gx[0] = unb(c, tp_binary_at(c, IR_DIV, gy, b, at), a, at);
    gx[1] = unb(c, tp_unary_at(c, IR_NEG, tp_binary_at(c, IR_DIV, tp_binary_at(c, IR_MUL, gy, y, at), b, at), at),
                           b, at);
    break;
  case IR_EXP: gx[0] = tp_binary_at(c, IR_MUL, gy, y, at); break;
  case IR_TANH: {  /* 1 - tanh^2 */
    tp_tensor *one = tp_scalar_at(c, 1, n->dtype, at);
    gx[0] = tp_binary_at(c, IR_MUL, gy, tp_binary_at(c, IR_SUB, one, tp_binary_at(c, IR_MUL, y, y, at), at), at);
    break;
  }
  case IR_WHERE: {  /* src[2] is the condition */
    tp_tensor *z = zeros(c, y, at);
    gx[0] = unb(c, tp_where_at(c, y->src[2], gy, z, at), a, at);
    gx[1] = unb(c, tp_where_at(c, y->src[2], z, gy, at), b, at);
    break;
  }
  case IR_PERMUTE: {  /* the inverse permutation (a transpose is its own) */
    int inverse[UOPC_MAX_RANK];
    for (int k = 0; k < n->rank; k++) inverse[n->perm[k]] = k;
    gx[0] = tp_permute_at(c, gy, n->rank, inverse, at);
    break;
  }
  case IR_EXPAND: gx[0] = unb(c, gy, a, at); break;
  case IR_RESHAPE: {
    tp_int shape[UOPC_MAX_RANK];
    for (int k = 0; k < a->ref->rank; k++) shape[k] = tp_size_at(c, a, k, at);
    gx[0] = tp_reshape_at(c, gy, a->ref->rank, shape, at);
    break;
  }
  default:
    *done = 0;
  }
  return tp_status(c);
}

int tp_vjp(tp_ctx *c, tp_tensor *y, tp_tensor *gy, tp_tensor **gx, tp_site at) {
  int done = 0, rc = tp_vjp_given(c, y, gy, gx, at, &done);
  if (!rc && !done) rc = tp_vjp_more(c, y, gy, gx, at, &done);
  if (rc || done) return rc;
  uopc_error err = {0};
  return tp_student(c, at, tp_vjp_rule(c, y, gy, gx, at, &err), &err);
}
