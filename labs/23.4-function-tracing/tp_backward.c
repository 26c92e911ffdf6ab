/* tp_backward.c: reverse mode over the tape (given code, lab 23.4).
 * Handles are numbered in creation order, which is a topological order, so
 * walking them backwards visits a tensor only after everything that read
 * it. Each op's rule (tp_vjp, the student's) is written with the same API,
 * so in eager mode the gradients are computed and under the tracer they are
 * recorded: the backward graph is the forward graph extended, and the sizes
 * a rule needs (a mean's count, the axes a broadcast stretched) stay the
 * graph's symbolic expressions. Chapter 23.4, "Gradients with symbolic saved dims". */
#include <stdlib.h>
#include "tp_internal.h"

/* zeros of like's shape: a gradient no path reached. */
static tp_tensor *zeros_like(tp_ctx *c, tp_tensor *like, tp_site at) {
  const ir_node *n = like->ref;
  tp_int shape[UOPC_MAX_RANK];
  for (int k = 0; k < n->rank; k++) shape[k] = tp_size_at(c, like, k, at);
  return tp_expand_at(c, tp_scalar_at(c, 0, n->dtype, at), n->rank, shape, at);
}

int tp_backward_at(tp_ctx *c, tp_tensor *loss, tp_tensor *const *wrt, int n, tp_tensor **grads, tp_site at) {
  if (!c || c->error.code) return tp_status(c);
  if (!loss || loss->id >= c->n_tensors || c->tensors[loss->id] != loss || n < 0 || (n && (!wrt || !grads)))
    return tp_fail(c, at, UOPC_E_INVALID, "tp_backward: a loss and %d inputs of this context", n);
  if (loss->ref->rank != 0)
    return tp_fail(c, at, UOPC_E_INVALID, "tp_backward: the loss has rank %d; reduce it to a scalar first",
                   loss->ref->rank);
  if (c->breaks)
    return tp_fail(c, at, UOPC_E_UNSUPPORTED, "tp_backward: the trace has %d graph break%s, the first at %s:%d;"
                   " gradients across a break are not captured (run eagerly, or remove the data read)", c->breaks,
                   c->breaks == 1 ? "" : "s", c->break_at.file ? c->break_at.file : "?", c->break_at.line);
  for (int k = 0; k < n; k++) {
    if (!wrt[k] || wrt[k]->id >= c->n_tensors || c->tensors[wrt[k]->id] != wrt[k] || !wrt[k]->is_input)
      return tp_fail(c, at, UOPC_E_INVALID, "tp_backward: wrt[%d] is not an input of this context", k);
    if (!uopc_dtype_is_float(wrt[k]->ref->dtype))
      return tp_fail(c, at, UOPC_E_DTYPE, "tp_backward: wrt[%d] is %s; only f32 and f64 tensors have gradients", k,
                     ir_dtype_name(wrt[k]->ref->dtype));
  }
  if (!uopc_dtype_is_float(loss->ref->dtype))
    return tp_fail(c, at, UOPC_E_DTYPE, "tp_backward: the loss is %s, not a float", ir_dtype_name(loss->ref->dtype));
  int last = loss->id;
  for (int k = 0; k <= last; k++) c->tensors[k]->grad = NULL;
  loss->grad = tp_scalar_at(c, 1, loss->ref->dtype, at);
  for (int k = last; k >= 0 && !c->error.code; k--) {
    tp_tensor *y = c->tensors[k];
    if (y->grad && y->is_input == 3)   /* a call-out's output: its function is opaque (tp_callout.c) */
      return tp_fail(c, at, UOPC_E_UNSUPPORTED, "tp_backward: the loss depends on the output of a call-out (at %s:%d),"
                     " which has no backward rule", y->at.file ? y->at.file : "?", y->at.line);
    if (!y->grad || y->is_input || !y->src[0]) continue;
    tp_tensor *gx[3] = {NULL, NULL, NULL};
    /* y's rule runs at y's site: its errors, and the nodes it records, name the model's line that made y */
    if (tp_vjp(c, y, y->grad, gx, y->at)) break;
    for (int i = 0; i < 3 && !c->error.code; i++) {
      uopc_error err = {0};
      if (y->src[i] && gx[i]) tp_student(c, y->at, tp_accumulate(c, &y->src[i]->grad, gx[i], y->at, &err), &err);
    }
  }
  for (int k = 0; k < n && !c->error.code; k++) grads[k] = wrt[k]->grad ? wrt[k]->grad : zeros_like(c, wrt[k], at);
  return tp_status(c);
}
