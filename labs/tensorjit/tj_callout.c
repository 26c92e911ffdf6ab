/* tj_callout.c: an artifact's regions around its call-outs (section 23.7,
 * given code). A trace that called out (tp_callout.c) is one graph in which
 * each call-out's outputs are inputs of the graph: the region before call-out
 * k is a program of that graph whose outputs are the call-out's inputs, and
 * the last region (the artifact's own program, tj_artifact.c) reads every
 * call-out's outputs beside the call's tensors. A call runs the regions and
 * the call-outs in turn, each call-out's outputs checked against its
 * declaration before any region reads them. Chapter 23.7, "Call-outs". */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tj_internal.h"

/* Call-out k's inputs that its region computes: those that are no input of
 * the graph (an argument, an earlier call-out's output), each once. */
static void stage_outputs(const tp_callout_rec *r, tj_stage *s) {
  s->n_computed = 0;
  for (int i = 0; i < r->decl.n_in; i++) {
    int seen = r->ins[i]->op == IR_INPUT;
    for (int j = 0; !seen && j < s->n_computed; j++) seen = s->computed[j] == r->ins[i];
    if (!seen) s->computed[s->n_computed++] = r->ins[i];
  }
}

int tj_callouts_take(tj_artifact *a, const tp_capture *cap, uopc_error *err) {
  a->callouts = NULL;
  if (!cap->n_callouts) return UOPC_OK;
  tj_callouts *co = calloc(1, sizeof *co);
  if (!co) return UOPC_FAIL(err, UOPC_E_NOMEM, "tensorjit: out of memory");
  co->n = cap->n_callouts;   /* at most TP_CALLOUTS_MAX: tp_callout_at's limit */
  memcpy(co->recs, cap->callouts, (size_t)co->n * sizeof *co->recs);
  for (int k = 0; k < co->n; k++) stage_outputs(&co->recs[k], &co->stages[k]);
  a->callouts = co;
  return UOPC_OK;
}

void tj_callouts_free(tj_callouts *co) {
  for (int k = 0; co && k < co->n; k++) exec_free(co->stages[k].exec);
  free(co);
}

void tj_callout_values_fini(tj_callout_values *vals) {
  for (int q = 0; q < vals->n; q++) uopc_tensor_release(&vals->outs[q]);
  vals->n = 0;
}

/* ---- Compiling the regions before each call-out. */

int tj_callouts_compile(const vcache *c, vcache_variant *v, tj_artifact *a, uopc_error *err) {
  tj_callouts *co = a->callouts;
  for (int k = 0; k < co->n; k++) {
    tj_stage *s = &co->stages[k];
    if (!s->n_computed) continue;
    char entry[64];
    snprintf(entry, sizeof entry, "%.56s_c%d", v->entry, k & 3);   /* k < TP_CALLOUTS_MAX */
    int rc = exec_new_rule(&s->exec, v->graph, s->computed, s->n_computed, entry, TJ_LOWER_FLAGS, &TJ_FUSE_RULE,
                           &c->opts.program, err);
    if (rc) return rc;
    /* the cache's own plan (each program dim at its site), made for this program: v->exec is not built yet */
    exec *own = v->exec;
    v->exec = s->exec;
    rc = vcache_plan_run(c, v, err);
    s->n_dims = v->n_dims;
    memcpy(s->dim_at, v->dim_at, sizeof s->dim_at);
    v->exec = own, v->n_dims = 0;
    if (rc) return rc;
  }
  return UOPC_OK;
}

/* ---- Running them. */

static int shape_of(const ir_node *n, const sym_binding *b, int64_t *shape, uopc_error *err) {
  int rc = UOPC_OK;
  for (int d = 0; d < n->rank && !rc; d++) rc = sym_expr_eval(n->shape[d], b, &shape[d], err);
  return rc;
}

/* Region k on the call: s's outputs into new tensors out. Every input of the
 * graph is a parameter; a call-out's output that does not exist yet is
 * passed as NULL, which no region before that call-out reads. */
static int run_stage(const tj_group *g, const tj_stage *s, const guard_call *call, const sym_binding *b,
                     const tj_callout_values *vals, uopc_tensor *out, uopc_error *err) {
  void *buffers[TP_CALLOUT_MAX + TJ_MAX_TENSORS + TJ_CALLOUT_VALUES];
  int64_t dims[UOPC_SIGNATURE_MAX], shape[UOPC_MAX_RANK];
  int rc = UOPC_OK, n = s->n_computed;
  for (int k = 0; k < n && !rc; k++) {
    rc = shape_of(s->computed[k], b, shape, err);
    if (!rc) rc = uopc_tensor_empty(&out[k], s->computed[k]->dtype, s->computed[k]->rank, shape, err);
    if (!rc) buffers[k] = uopc_tensor_data(&out[k]);
  }
  for (int k = 0; k < g->n_tensors; k++) buffers[n + k] = (void *)call->data[k];
  for (int q = 0; q < TJ_CALLOUT_VALUES; q++) buffers[n + g->n_tensors + q] = q < vals->n ? uopc_tensor_data(&vals->outs[q]) : NULL;
  for (int d = 0; d < s->n_dims; d++) dims[d] = GUARD_AT(call, s->dim_at[d]);
  return rc ? rc : exec_run_checked(s->exec, buffers, dims, err);
}

/* Call-out k's inputs: a value the call has (packed when strided), or what
 * region k computed (computed[j] for its j-th output). */
static int callout_inputs(const tj_group *g, const tj_callouts *co, int k, const tj_callout_values *vals,
                          uopc_tensor *computed, uopc_tensor *packed, const uopc_tensor **ins, uopc_error *err) {
  const tp_callout_rec *r = &co->recs[k];
  const tj_stage *s = &co->stages[k];
  for (int i = 0; i < r->decl.n_in; i++) {
    const ir_node *n = r->ins[i];
    if (n->op != IR_INPUT) {
      int j = 0;
      while (s->computed[j] != n) j++;
      ins[i] = &computed[j];
      continue;
    }
    const uopc_tensor *t = n->input < g->n_tensors ? g->f->cur.tensors[n->input] : &vals->outs[n->input - g->n_tensors];
    int rc = tp_contiguous(&packed[i], t, err);   /* the function reads packed rows */
    if (rc) return rc;
    ins[i] = &packed[i];
  }
  return UOPC_OK;
}

static int run_one(const tj_group *g, const tj_callouts *co, int k, const guard_call *call, const sym_binding *b,
                   tj_callout_values *vals, uopc_error *err) {
  const tp_callout_rec *r = &co->recs[k];
  uopc_tensor computed[TP_CALLOUT_MAX], packed[TP_CALLOUT_MAX];
  const uopc_tensor *ins[TP_CALLOUT_MAX];
  int64_t want[TP_CALLOUT_MAX][UOPC_MAX_RANK];
  uopc_error inner = {0};
  memset(computed, 0, sizeof computed), memset(packed, 0, sizeof packed);
  int rc = co->stages[k].exec ? run_stage(g, &co->stages[k], call, b, vals, computed, &inner) : UOPC_OK;
  if (!rc) rc = callout_inputs(g, co, k, vals, computed, packed, ins, &inner);
  for (int j = 0; !rc && j < r->decl.n_out; j++) rc = shape_of(r->outs[j], b, want[j], &inner);
  if (!rc && vals->n + r->decl.n_out > TJ_CALLOUT_VALUES)   /* TP_CALLOUTS_MAX of TP_CALLOUT_MAX: never */
    rc = UOPC_FAIL(&inner, UOPC_E_LIMIT, "more than %d call-out outputs", TJ_CALLOUT_VALUES);
  if (!rc) rc = tp_callout_invoke(&r->decl, ins, (const int64_t(*)[UOPC_MAX_RANK])want, &vals->outs[vals->n], r->at, &inner);
  if (!rc) vals->n += r->decl.n_out;
  for (int i = 0; i < TP_CALLOUT_MAX; i++) uopc_tensor_release(&computed[i]), uopc_tensor_release(&packed[i]);
  return rc ? UOPC_FAIL(err, rc, "tensorjit '%s': %s", g->f->label, inner.message) : UOPC_OK;
}

int tj_callouts_run(const tj_group *g, const tj_artifact *a, const guard_call *call, const sym_binding *b,
                    tj_callout_values *vals, uopc_error *err) {
  vals->n = 0;
  int rc = UOPC_OK;
  for (int k = 0; a->callouts && k < a->callouts->n && !rc; k++) rc = run_one(g, a->callouts, k, call, b, vals, err);
  return rc;
}

/* ---- Their printed forms. */

static void shape_text(const ir_node *n, char *buf, size_t size) {
  vcache_text_add(buf, size, "(");
  for (int d = 0; d < n->rank; d++) {
    char e[128];
    uopc_error ignore;
    if (sym_expr_format(n->shape[d], e, sizeof e, &ignore)) snprintf(e, sizeof e, "?");
    vcache_text_add(buf, size, "%s%s", d ? ", " : "", e);
  }
  vcache_text_add(buf, size, ")");
}

void tj_callouts_text(const tj_artifact *a, const char *indent, char *buf, size_t size) {
  for (int k = 0; a->callouts && k < a->callouts->n; k++) {
    const tp_callout_rec *r = &a->callouts->recs[k];
    vcache_text_add(buf, size, "%scall-out '%s' (%s:%d), after %s: takes ", indent, r->decl.name,
                    r->at.file ? r->at.file : "?", r->at.line, a->callouts->stages[k].n_computed ? "a region" : "no region");
    for (int i = 0; i < r->decl.n_in; i++) {
      vcache_text_add(buf, size, "%s%s ", i ? ", " : "", uopc_dtype_name(r->ins[i]->dtype));
      shape_text(r->ins[i], buf, size);
    }
    vcache_text_add(buf, size, "; gives ");
    for (int j = 0; j < r->decl.n_out; j++) {
      vcache_text_add(buf, size, "%s%s %s ", j ? ", " : "", r->outs[j]->name, uopc_dtype_name(r->outs[j]->dtype));
      shape_text(r->outs[j], buf, size);
    }
    vcache_text_add(buf, size, "; %s, checked after each run\n", r->decl.shape_fn ? "sizes from its shape function"
                    : "concrete sizes, its inputs' sizes guarded");
  }
}

void tj_callouts_key(const tj_artifact *a, const ir_graph *graph, char *buf, size_t size) {
  for (int k = 0; a->callouts && k < a->callouts->n; k++) {
    const tp_callout_rec *r = &a->callouts->recs[k];
    vcache_text_add(buf, size, " callout:%s/%s/%016" PRIx64, r->decl.name, r->decl.shape_fn ? "fn" : "concrete",
                    ir_graph_hash(graph, r->ins, r->decl.n_in));
  }
}
