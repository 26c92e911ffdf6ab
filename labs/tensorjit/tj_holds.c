/* tj_holds.c: whether an artifact serves a call, past what its guard set says
 * (section 23.7, given code): the scalars it was traced for, compared by
 * value (a container's too), and the trace's own comparisons on sizes (23.4's guards), evaluated
 * under the call's binding. Selection (tj_artifact.c) asks it on every call
 * and tj_explain.c asks it again to say which guard failed, so it sits below
 * both. */
#include <string.h>
#include "tj_internal.h"

/* ---- What a guard set cannot say. */

int tj_scalars_hold(const tj_group *g, const tj_artifact *a, const tj_flat *flat, int *failed) {
  for (int k = 0; k < g->n_nodes; k++) {   /* arguments and containers' members alike */
    const tj_arg *s = &a->scalars[k], *x = flat->at[k];
    tj_kind kind = g->nodes[k].kind;
    if (kind != TJ_INT && kind != TJ_DOUBLE) continue;
    /* by bits: -0.0 and 0.0 may take other branches (1/x), and a NaN equals itself */
    int same = kind == TJ_INT ? s->i == x->i : !memcmp(&s->d, &x->d, sizeof s->d);
    if (!same) { *failed = k; return 0; }
  }
  *failed = -1;
  return 1;
}

/* The spec's dims read at their sites of call: filled, not bound one by one,
 * since the call's guards (or, for a new spec, the call itself) put each value
 * within its dim's bounds; on the hot path this is most of a warm call. */
void tj_binding_of(const vcache_spec *spec, const guard_call *call, sym_binding *b) {
  b->count = spec->n_dims;
  for (int d = 0; d < spec->n_dims; d++) {
    b->dims[d] = spec->dims[d];
    b->values[d] = guard_site_value(call, spec->dim_sites[d]);
  }
}

int tj_trace_holds(const tj_artifact *a, const guard_call *call, int *failed, int64_t *value, uopc_error *err) {
  sym_binding b;
  *failed = -1;
  if (!a->n_guards) return UOPC_OK;   /* the common case: no binding to build */
  tj_binding_of(&a->v->spec, call, &b);
  int rc = UOPC_OK;
  for (int k = 0; !rc && k < a->n_guards; k++) {   /* one at a time, to name the one that fails */
    const tp_variant one = {.guards = &a->guards[k], .n_guards = 1};
    int holds = 0;
    rc = tp_variant_holds(&one, &b, &holds, err);   /* 23.4's: when a trace's guards hold */
    if (!rc && !holds) {
      *failed = k;
      return sym_expr_eval(a->guards[k].diff, &b, value, err);
    }
  }
  return rc;
}
