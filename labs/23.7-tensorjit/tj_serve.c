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
  /* Lab 23.7: write tj_trace_holds here. See README.md in this folder. */
  (void)a; (void)call; (void)failed; (void)value;
  return UOPC_FAIL(err, UOPC_E_NOT_IMPLEMENTED, "lab 23.7: tj_trace_holds is not implemented yet");
}

int tj_view_make(const tj_artifact *a, int k, const uopc_tensor *base, const sym_binding *b, uopc_tensor *out,
                 uopc_error *err) {
  /* Lab 23.7: write tj_view_make here. See README.md in this folder. */
  (void)a; (void)k; (void)base; (void)b; (void)out;
  return UOPC_FAIL(err, UOPC_E_NOT_IMPLEMENTED, "lab 23.7: tj_view_make is not implemented yet");
}
