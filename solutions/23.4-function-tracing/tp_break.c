/* tp_break.c: what a trace does when the model reads tensor data
 * (lab 23.4, student file). The value does not exist until the graph so far
 * runs, so the trace breaks there: the region is closed, compiled and run,
 * its values read, and capture goes on in a new region whose inputs stand
 * for them. Strict mode makes the break an error instead, naming what was
 * read and where, for a model that must compile whole. Chapter 23.4,
 * "Graph breaks and strict mode". */
#include <stdlib.h>
#include "tp_compile.h"

int tp_region_close(tp_ctx *c, tp_site at, uopc_error *err) {
  // STUDENT 23.4 tp_region_close
  size_t cap = (size_t)c->n_tensors + 1;
  const ir_node **outs = malloc(cap * sizeof *outs);
  tp_tensor **owners = malloc(cap * sizeof *owners);
  uopc_tensor *vals = calloc(cap, sizeof *vals);
  int rc = outs && owners && vals ? UOPC_OK : UOPC_FAIL(err, UOPC_E_NOMEM, "tp: out of memory");
  int n = 0;
  for (int k = 0; !rc && k < c->n_tensors; k++) {
    tp_tensor *t = c->tensors[k];
    if (t->value.storage) continue;   /* an argument, or a value an earlier region computed */
    outs[n] = t->ref;
    owners[n++] = t;
  }
  if (!rc && n) rc = tp_region_run(c, outs, n, vals, at);
  for (int k = 0; !rc && k < n; k++) owners[k]->value = vals[k];   /* the handle owns it now */
  free(outs), free(owners), free(vals);
  return rc;
  // END STUDENT
}

int tp_on_break(tp_ctx *c, const char *what, tp_site at, uopc_error *err) {
  // STUDENT 23.4 tp_on_break
  int strict = c->strict;
#ifdef TP_BREAK_IGNORES_STRICT   /* a test-only build always resumes: tests/broken/23.4.mk */
  strict = 0;
#endif
  if (strict)
    return UOPC_FAIL(err, UOPC_E_UNSUPPORTED, "%s reads a tensor's value, a graph break, and strict mode forbids"
                   " one (compute the branch with tp_where, or run without strict)", what);
  if (!c->breaks++) c->break_at = at;   /* tp_item_at moves the counter 'graph breaks' by what this adds */
  int rc = tp_region_close(c, at, err);
  if (!rc) rc = tp_region_open(c, at);
  /* Every handle has a value now: each is read through the new region, not
   * only this region's, since the model still holds its arguments and the
   * earlier regions' values. */
  for (int k = 0; !rc && k < c->n_tensors; k++) rc = tp_region_read(c, c->tensors[k], at);
  return rc;
  // END STUDENT
}
