/* tp_backward.c: reverse mode over the tape (given code, lab 23.4).
 * Handles are numbered in creation order, which is a topological order, so
 * walking them backwards visits a tensor only after everything that read
 * it. Each op's rule (tp_vjp, the student's) is written with the same API,
 * so in eager mode the gradients are computed and under the tracer they are
 * recorded: the backward graph is the forward graph extended, and the sizes
 * a rule needs (a mean's count, the axes a broadcast stretched) stay the
 * graph's symbolic expressions. Chapter 23.4, "Gradients with symbolic saved dims";
 * the seeded form is tensorjit's (chapter 23.7, "Training"). */
#include <stdio.h>
#include <stdlib.h>
#include "tp_internal.h"

/* zeros of like's shape: a gradient no path reached. */
static tp_tensor *zeros_like(tp_ctx *c, tp_tensor *like, tp_site at) {
  const ir_node *n = like->ref;
  tp_int shape[UOPC_MAX_RANK];
  for (int k = 0; k < n->rank; k++) shape[k] = tp_size_at(c, like, k, at);
  return tp_expand_at(c, tp_scalar_at(c, 0, n->dtype, at), n->rank, shape, at);
}

static int is_handle(const tp_ctx *c, const tp_tensor *t) {
  return t && t->id < c->n_tensors && c->tensors[t->id] == t;
}

/* What every reverse sweep needs: no break before it, float inputs of c. */
static int check_wrt(tp_ctx *c, tp_tensor *const *wrt, int n, tp_tensor **grads, tp_site at) {
  if (n < 0 || (n && (!wrt || !grads)))
    return tp_fail(c, at, UOPC_E_INVALID, "tp_backward: %d inputs and no room for their gradients", n);
  if (c->breaks)
    return tp_fail(c, at, UOPC_E_UNSUPPORTED, "tp_backward: the trace has %d graph break%s, the first at %s:%d;"
                   " gradients across a break are not captured (run eagerly, or remove the data read)", c->breaks,
                   c->breaks == 1 ? "" : "s", c->break_at.file ? c->break_at.file : "?", c->break_at.line);
  for (int k = 0; k < n; k++) {
    if (!is_handle(c, wrt[k]) || !wrt[k]->is_input)
      return tp_fail(c, at, UOPC_E_INVALID, "tp_backward: wrt[%d] is not an input of this context", k);
    if (!uopc_dtype_is_float(wrt[k]->ref->dtype))
      return tp_fail(c, at, UOPC_E_DTYPE, "tp_backward: wrt[%d] is %s; only f32 and f64 tensors have gradients", k,
                     ir_dtype_name(wrt[k]->ref->dtype));
  }
  return UOPC_OK;
}

/* The sweep from handle last down, each rule run on the gradient its
 * consumers accumulated; then grads[k] = d / d wrt[k] (zeros where no path
 * reached it). */
static int sweep(tp_ctx *c, int last, tp_tensor *const *wrt, int n, tp_tensor **grads, tp_site at) {
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

int tp_backward_at(tp_ctx *c, tp_tensor *loss, tp_tensor *const *wrt, int n, tp_tensor **grads, tp_site at) {
  if (!c || c->error.code) return tp_status(c);
  if (!is_handle(c, loss) || n < 0 || (n && (!wrt || !grads)))
    return tp_fail(c, at, UOPC_E_INVALID, "tp_backward: a loss and %d inputs of this context", n);
  if (loss->ref->rank != 0)
    return tp_fail(c, at, UOPC_E_INVALID, "tp_backward: the loss has rank %d; reduce it to a scalar first",
                   loss->ref->rank);
  if (check_wrt(c, wrt, n, grads, at)) return tp_status(c);
  if (!uopc_dtype_is_float(loss->ref->dtype))
    return tp_fail(c, at, UOPC_E_DTYPE, "tp_backward: the loss is %s, not a float", ir_dtype_name(loss->ref->dtype));
  for (int k = 0; k <= loss->id; k++) c->tensors[k]->grad = NULL;
  loss->grad = tp_scalar_at(c, 1, loss->ref->dtype, at);
  return sweep(c, loss->id, wrt, n, grads, at);
}

/* 1 when a seed's extent s is pinned to 0 and y's e is an expression that is
 * 0 in this call (a diagonal past the last column): y is empty whenever a
 * guard e == 0 holds, and so is its seed, whose values then do not matter. */
static int zero_against_expression(const tp_ctx *c, const sym_expr *s, const sym_expr *e) {
  int64_t v = -1;
  uopc_error ignore;
  return s->kind == SYM_CONST && s->value == 0 && e->kind != SYM_DIM && e->kind != SYM_CONST &&
         !sym_expr_eval(e, &c->binding, &v, &ignore) && v == 0;
}

/* seed, checked against y and read with y's shape: under tensorjit's
 * capture the expand makes each of the seed's own dims one with y's, or
 * reads it as y's extent where that is an expression of other sizes
 * ((x*x)[:, cols//2:]'s cols - cols//2), a guard per call either way, so
 * the rules' reshapes and reductions see one size; a seed of extent 0 against
 * such an expression is zeros of y's shape. */
static tp_tensor *seed_of(tp_ctx *c, tp_tensor *y, tp_tensor *seed, int k, tp_site at) {
  if (!is_handle(c, y) || !is_handle(c, seed)) {
    tp_fail(c, at, UOPC_E_INVALID, "tp_backward_seeded: output %d or its seed is not a tensor of this context", k);
    return NULL;
  }
  const ir_node *yn = y->ref, *sn = seed->ref;
  if (!uopc_dtype_is_float(yn->dtype) || sn->dtype != yn->dtype || sn->rank != yn->rank) {
    tp_fail(c, at, UOPC_E_DTYPE, "tp_backward_seeded: output %d is %s of rank %d, its seed %s of rank %d (a float"
            " output and a seed of its dtype and rank)", k, ir_dtype_name(yn->dtype), yn->rank,
            ir_dtype_name(sn->dtype), sn->rank);
    return NULL;
  }
  tp_int shape[UOPC_MAX_RANK];
  int empty = 0;
  for (int d = 0; d < yn->rank; d++) {
    shape[d] = tp_size_at(c, y, d, at);
    if (!empty && c->mode == TP_TRACE && zero_against_expression(c, sn->shape[d], yn->shape[d])) {
      if (tp_guard_add(c, yn->shape[d], TP_EQ, 1, at)) return NULL;
      empty = 1;
    }
  }
  if (empty) seed = tp_scalar_at(c, 0, yn->dtype, at);
  return tp_expand_at(c, seed, yn->rank, shape, at);
}

int tp_backward_seeded_at(tp_ctx *c, tp_tensor *const *outs, tp_tensor *const *seeds, int n_outs,
                          tp_tensor *const *wrt, int n, tp_tensor **grads, tp_site at) {
  if (!c || c->error.code) return tp_status(c);
  if (n_outs < 1 || !outs || !seeds)
    return tp_fail(c, at, UOPC_E_INVALID, "tp_backward_seeded: %d outputs (needs 1 or more, each with a seed)", n_outs);
  if (check_wrt(c, wrt, n, grads, at)) return tp_status(c);
  int last = 0;
  for (int k = 0; k < n_outs; k++) {
    if (!is_handle(c, outs[k]))
      return tp_fail(c, at, UOPC_E_INVALID, "tp_backward_seeded: output %d is not a tensor of this context", k);
    last = outs[k]->id > last ? outs[k]->id : last;
  }
  for (int k = 0; k <= last; k++) c->tensors[k]->grad = NULL;
  for (int k = 0; k < n_outs && !c->error.code; k++) {   /* one output twice: its seeds add up */
    tp_tensor *s = seed_of(c, outs[k], seeds[k], k, at);
    uopc_error err = {0};
    if (s) tp_student(c, at, tp_accumulate(c, &outs[k]->grad, s, at, &err), &err);
  }
  return c->error.code ? tp_status(c) : sweep(c, last, wrt, n, grads, at);
}
