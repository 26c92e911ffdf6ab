/* tj_serve.c: whether a kept artifact serves a call past its guard set, and
 * an output that is a view of an input, made for a call (lab 23.7, student
 * file). Selection (tj_artifact.c, holds_all) asks tj_trace_holds on every
 * call after the cache's own guards held; tj_explain asks it again to name
 * the guard that failed. tj_view_make runs after the compiled program, for
 * each output that tj_view_plan found to be a view. Chapter 23.7, "Branches
 * on sizes guard both outcomes" and "Views". */
#include <string.h>
#include "tj_internal.h"

int tj_trace_holds(const tj_artifact *a, const guard_call *call, int *failed, int64_t *value, uopc_error *err) {
  // STUDENT 23.7 tj_trace_holds
  sym_binding b;
  *failed = -1;
#ifdef TJ_TRACE_UNCHECKED   /* a test-only build: the trace's comparisons are never checked (tests/broken/23.7.mk) */
  return UOPC_OK;
#endif
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
  // END STUDENT
}

int tj_view_make(const tj_artifact *a, int k, const uopc_tensor *base, const sym_binding *b, uopc_tensor *out,
                 uopc_error *err) {
  // STUDENT 23.7 tj_view_make
  const ir_layout *l = &a->view[k];
  int64_t shape[UOPC_MAX_RANK], strides[UOPC_MAX_RANK], offset = 0;
  int rc = sym_expr_eval(l->offset, b, &offset, err);
  for (int d = 0; d < l->rank && !rc; d++) {
    rc = sym_expr_eval(l->shape[d], b, &shape[d], err);
    if (!rc) rc = sym_expr_eval(l->strides[d], b, &strides[d], err);
  }
  if (rc) return rc;   /* nothing retained yet: out untouched */
#ifdef TJ_VIEW_NO_OFFSET   /* a test-only build: the view starts where its input starts */
  offset = 0;
#endif
  uopc_tensor_retain(out, base);   /* the storage's reference; the view's own geometry below */
  out->rank = l->rank;
  for (int d = 0; d < UOPC_MAX_RANK; d++)   /* past the rank 0, as tensor.h has it: not the input's */
    out->shape[d] = d < l->rank ? shape[d] : 0, out->strides[d] = d < l->rank ? strides[d] : 0;
  out->offset = base->offset + offset;
  return UOPC_OK;
  // END STUDENT
}
