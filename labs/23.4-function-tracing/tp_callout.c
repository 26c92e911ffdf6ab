/* tp_callout.c: declared call-outs, an opaque C function inside a model
 * (given code, lab 23.4; used by tensorjit, section 23.7). The tracer cannot
 * see into the function, so it is told what comes out: each output's dtype,
 * rank and sizes, concrete or as a function of the inputs' sizes. Eager
 * mode calls it at once. A capture (tensorjit's) records it: its inputs'
 * nodes are what the region before it must compute, and its outputs become
 * new inputs of the graph, of the declared shapes, that the region after it
 * reads; with concrete sizes the capture also guards every size of its
 * inputs, since nothing says the outputs would keep those sizes on another
 * input. Under 23.4's own tracer it is a graph break. Whichever way it
 * runs, what the function returns is checked against the declaration
 * before anything reads it. Chapter 23.7, "Call-outs". */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tp_internal.h"

/* ---- The declaration. */

static int check_decl(tp_ctx *c, const tp_callout *d, tp_tensor *const *ins, int n_in, tp_tensor **outs,
                      tp_site at) {
  if (!d || !d->fn || !d->name) return tp_fail(c, at, UOPC_E_INVALID, "tp_callout: a declaration with a name and a function");
  if (d->n_in < 1 || d->n_in > TP_CALLOUT_MAX || d->n_out < 1 || d->n_out > TP_CALLOUT_MAX)
    return tp_fail(c, at, UOPC_E_INVALID, "call-out '%s': n_in = %d and n_out = %d must be in [1, %d]", d->name,
                   d->n_in, d->n_out, TP_CALLOUT_MAX);
  if (n_in != d->n_in || !ins || !outs)
    return tp_fail(c, at, UOPC_E_INVALID, "call-out '%s' takes %d inputs, called with %d%s", d->name, d->n_in, n_in,
                   outs ? "" : " and no outputs");
  for (int k = 0; k < d->n_out; k++) {
    if ((unsigned)d->dtype[k] > UOPC_BOOL || d->rank[k] < 0 || d->rank[k] > UOPC_MAX_RANK)
      return tp_fail(c, at, UOPC_E_INVALID, "call-out '%s': output %d's dtype %d or rank %d (at most %d)", d->name, k,
                     (int)d->dtype[k], d->rank[k], UOPC_MAX_RANK);
    for (int a = 0; !d->shape_fn && a < d->rank[k]; a++)
      if (d->shape[k][a] < 0)
        return tp_fail(c, at, UOPC_E_INVALID, "call-out '%s': output %d's size %d is %" PRId64 " (negative)", d->name,
                       k, a, d->shape[k][a]);
  }
  for (int k = 0; k < n_in; k++)
    if (!tp_operand(c, ins[k], at)) return tp_status(c);
  return UOPC_OK;
}

/* The outputs' sizes: the declared constants, or the shape function's. With
 * concrete sizes a capture guards each of the inputs' sizes at its value. */
static int out_shapes(tp_ctx *c, const tp_callout *d, tp_tensor *const *ins, tp_shape *out, tp_site at) {
  tp_shape in[TP_CALLOUT_MAX];
  int guard = !d->shape_fn && c->capture;
#ifdef TP_CALLOUT_NO_INPUT_GUARD   /* a test-only build: tests/broken/tensorjit.mk */
  guard = 0;
#endif
  for (int k = 0; k < d->n_in; k++) {
    in[k].rank = ins[k]->ref->rank;
    for (int a = 0; a < in[k].rank; a++) {
      in[k].size[a] = tp_size_at(c, ins[k], a, at);
      if (guard && in[k].size[a].expr && in[k].size[a].expr->kind != SYM_CONST)
        tp_compare_at(c, in[k].size[a], TP_EQ, tp_int_const(c, in[k].size[a].value), at);
    }
  }
  for (int k = 0; k < d->n_out; k++) {
    out[k].rank = d->rank[k];
    for (int a = 0; a < d->rank[k]; a++) out[k].size[a] = tp_int_const(c, d->shape[k][a]);
  }
  if (d->shape_fn && !c->error.code) d->shape_fn(c, in, d->n_in, out, d->user);
  for (int k = 0; k < d->n_out && !c->error.code; k++) {
    if (out[k].rank != d->rank[k])
      return tp_fail(c, at, UOPC_E_INVALID, "call-out '%s': the shape function made output %d of rank %d, declared %d",
                     d->name, k, out[k].rank, d->rank[k]);
    for (int a = 0; a < d->rank[k]; a++)
      if (out[k].size[a].value < 0)
        return tp_fail(c, at, UOPC_E_INVALID, "call-out '%s': the shape function made output %d's size %d %" PRId64
                       " (negative)", d->name, k, a, out[k].size[a].value);
  }
  return tp_status(c);
}

/* ---- Running it: the check after the function returns. */

static void shape_text(const int64_t *shape, int rank, char *buf, size_t size) {
  int n = snprintf(buf, size, "(");
  for (int a = 0; a < rank && n > 0 && (size_t)n < size; a++)
    n += snprintf(buf + n, size - (size_t)n, "%s%" PRId64, a ? ", " : "", shape[a]);
  if (n > 0 && (size_t)n < size) snprintf(buf + n, size - (size_t)n, ")");
}

static int check_output(const tp_callout *d, int k, const uopc_tensor *got, const int64_t *want, tp_site at,
                        uopc_error *err) {
  const char *file = at.file ? at.file : "?";
  if (!got->storage)
    return UOPC_FAIL(err, UOPC_E_INVALID, "call-out '%s' (%s:%d) left output %d unset", d->name, file, at.line, k);
  int same = got->dtype == d->dtype[k] && got->rank == d->rank[k];
  for (int a = 0; same && a < got->rank; a++) same = got->shape[a] == want[a];
  if (same) return UOPC_OK;
  char g[128], w[128];
  shape_text(got->shape, got->rank, g, sizeof g);
  shape_text(want, d->rank[k], w, sizeof w);
  return UOPC_FAIL(err, got->dtype != d->dtype[k] ? UOPC_E_DTYPE : UOPC_E_BOUNDS, "call-out '%s' (%s:%d) returned"
                   " output %d as %s %s, declared %s %s", d->name, file, at.line, k, uopc_dtype_name(got->dtype), g,
                   uopc_dtype_name(d->dtype[k]), w);
}

int tp_callout_invoke(const tp_callout *d, const uopc_tensor *const *ins, const int64_t (*want)[UOPC_MAX_RANK],
                      uopc_tensor *outs, tp_site at, uopc_error *err) {
  uopc_error inner = {0};
  memset(outs, 0, (size_t)d->n_out * sizeof *outs);
  int rc = d->fn(ins, d->n_in, outs, d->n_out, d->user, &inner);
  if (rc) rc = UOPC_FAIL(err, rc, "call-out '%s' (%s:%d) failed: %s", d->name, at.file ? at.file : "?", at.line,
                         inner.code ? inner.message : "no message");
  for (int k = 0; k < d->n_out && !rc; k++) rc = check_output(d, k, &outs[k], want[k], at, err);
  for (int k = 0; k < d->n_out && !rc; k++) {   /* what reads it takes packed rows */
    uopc_tensor packed;
    if (uopc_tensor_is_contiguous(&outs[k])) continue;
    rc = tp_contiguous(&packed, &outs[k], err);
    uopc_tensor_release(&outs[k]);
    if (!rc) outs[k] = packed;
  }
  for (int k = 0; rc && k < d->n_out; k++) uopc_tensor_release(&outs[k]);   /* an unset one: a no-op */
  return rc;
}

/* The function on ins' values, its outputs checked against shapes; new handles
 * for them come from make (eager: wrapped; a break: the new region's inputs). */
static int call_now(tp_ctx *c, const tp_callout *d, tp_tensor *const *ins, const tp_shape *shapes,
                    uopc_tensor *got, tp_site at) {
  const uopc_tensor *vals[TP_CALLOUT_MAX];
  int64_t want[TP_CALLOUT_MAX][UOPC_MAX_RANK];
  for (int k = 0; k < d->n_in; k++) vals[k] = &ins[k]->value;   /* contiguous: eager values and regions' are */
  for (int k = 0; k < d->n_out; k++)
    for (int a = 0; a < d->rank[k]; a++) want[k][a] = shapes[k].size[a].value;
  uopc_error err = {0};
  int rc = tp_callout_invoke(d, vals, (const int64_t(*)[UOPC_MAX_RANK])want, got, at, &err);
  return rc ? tp_fail_with(c, at, &err) : UOPC_OK;
}

static int run_eager(tp_ctx *c, const tp_callout *d, tp_tensor *const *ins, const tp_shape *shapes, tp_tensor **outs,
                     tp_site at) {
  uopc_tensor got[TP_CALLOUT_MAX];
  if (call_now(c, d, ins, shapes, got, at)) return tp_status(c);
  for (int k = 0; k < d->n_out; k++) {
    outs[k] = tp_wrap(c, &got[k]);
    if (outs[k]) outs[k]->is_input = 3, outs[k]->at = at;   /* tp_backward refuses to go through it */
    uopc_tensor_release(&got[k]);
  }
  return tp_status(c);
}

/* ---- Under a tracer. */

/* An input of the current graph for output k of a call-out, of shape shapes[k]. */
static const ir_node *output_input(tp_ctx *c, const tp_callout *d, int k, const tp_shape *shapes, const char *name,
                                   tp_site at) {
  const sym_expr *shape[UOPC_MAX_RANK];
  for (int a = 0; a < d->rank[k]; a++) shape[a] = tp_int_expr(c, shapes[k].size[a]);
  const ir_node *n = ir_input(c->g, name, d->dtype[k], d->rank[k], shape);
  if (!n) tp_fail_with(c, at, ir_graph_error(c->g));
  return n;
}

/* A capture: recorded, its outputs new inputs of the graph with no value. */
static int record(tp_ctx *c, const tp_callout *d, tp_tensor *const *ins, const tp_shape *shapes, tp_tensor **outs,
                  tp_site at) {
  if (c->n_callouts == TP_CALLOUTS_MAX)
    return tp_fail(c, at, UOPC_E_LIMIT, "call-out '%s': a trace holds at most %d call-outs (TP_CALLOUTS_MAX)", d->name,
                   TP_CALLOUTS_MAX);
  tp_callout_rec *q = realloc(c->callouts, (size_t)(c->n_callouts + 1) * sizeof *q);
  if (!q) return tp_fail(c, at, UOPC_E_NOMEM, "out of memory");
  c->callouts = q;
  tp_callout_rec *r = &q[c->n_callouts];
  memset(r, 0, sizeof *r);
  r->decl = *d, r->at = at;
  for (int k = 0; k < d->n_in; k++) r->ins[k] = ins[k]->ref;
  for (int k = 0; k < d->n_out; k++) {
    char name[SYM_NAME_MAX];
    snprintf(name, sizeof name, "co%d_%d", c->n_callouts, k);
    const ir_node *n = output_input(c, d, k, shapes, name, at);
    if (!n || !(outs[k] = tp_input_handle(c, n, NULL, at))) return tp_status(c);
    outs[k]->is_input = 3;
    r->outs[k] = n;
  }
  c->n_callouts++;
  return UOPC_OK;
}

/* 23.4's tracer: a graph break. The region so far runs, the function runs on
 * its values, and capture resumes in a region that reads every value. */
static int run_break(tp_ctx *c, const tp_callout *d, tp_tensor *const *ins, const tp_shape *shapes, tp_tensor **outs,
                     tp_site at) {
  if (c->strict)
    return tp_fail(c, at, UOPC_E_UNSUPPORTED, "call-out '%s' splits the trace, a graph break, and strict mode forbids"
                   " one (tensorjit compiles the regions around a call-out)", d->name);
  uopc_error err = {0};
  uopc_tensor got[TP_CALLOUT_MAX];
  if (tp_student(c, at, tp_region_close(c, at, &err), &err) || call_now(c, d, ins, shapes, got, at)) return tp_status(c);
  if (!c->breaks++) c->break_at = at;
  uopc_counter_add(TP_C_BREAKS, 1);
  int n = c->n_tensors;   /* the handles before the outputs: each read by the new region */
  int rc = tp_region_open(c, at);
  for (int k = 0; !rc && k < n; k++) rc = tp_region_read(c, c->tensors[k], at);
  for (int k = 0; !rc && k < d->n_out; k++) {
    char name[SYM_NAME_MAX];
    snprintf(name, sizeof name, "callout_%d", k);
    const ir_node *node = output_input(c, d, k, shapes, name, at);
    if (!node || !(outs[k] = tp_input_handle(c, node, &got[k], at))) rc = tp_status(c);
    else outs[k]->is_input = 3;
  }
  for (int k = 0; k < d->n_out; k++) uopc_tensor_release(&got[k]);   /* the handles hold theirs */
  return rc;
}

int tp_callout_at(tp_ctx *c, const tp_callout *decl, tp_tensor *const *ins, int n_in, tp_tensor **outs, tp_site at) {
  if (!c || c->error.code) return tp_status(c);
  tp_shape shapes[TP_CALLOUT_MAX];
  if (check_decl(c, decl, ins, n_in, outs, at) || out_shapes(c, decl, ins, shapes, at)) return tp_status(c);
  if (c->mode == TP_EAGER) return run_eager(c, decl, ins, shapes, outs, at);
  return c->capture ? record(c, decl, ins, shapes, outs, at) : run_break(c, decl, ins, shapes, outs, at);
}
