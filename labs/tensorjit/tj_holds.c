/* tj_holds.c: whether an artifact serves a call, past what its guard set says
 * (section 23.7, given code): the scalars it was traced for, compared by
 * value (a container's too), and the binding the trace's own comparisons
 * are evaluated under (lab 23.7's tj_trace_holds, labs/23.7-tensorjit/).
 * Selection (tj_artifact.c) asks on every call and tj_explain.c asks again
 * to say which guard failed, so it sits below both. */
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
