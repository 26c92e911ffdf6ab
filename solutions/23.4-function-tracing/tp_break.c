/* tp_break.c: what a trace does when the model reads tensor data
 * (lab 23.4, student file). The value does not exist until the graph so far
 * runs, so the trace breaks there: the region is compiled and run, the
 * value read, and capture goes on in a new region. Strict mode makes the
 * break an error instead, naming what was read and where, for a model that
 * must compile whole. Chapter 23.4, "Graph breaks and strict mode". */
#include "tp_compile.h"

int tp_on_break(tp_ctx *c, const char *what, tp_site at, uopc_error *err) {
  // STUDENT 23.4 tp_on_break
  int strict = c->strict;
#ifdef TP_BREAK_IGNORES_STRICT   /* a test-only build always resumes: tests/broken/23.4.mk */
  strict = 0;
#endif
  if (strict)
    return UOPC_FAIL(err, UOPC_E_UNSUPPORTED, "%s reads a tensor's value, a graph break, and strict mode forbids"
                   " one (compute the branch with tp_where, or run without strict)", what);
  int rc = tp_break_resume(c, at);
  if (rc) *err = *tp_error(c);
  return rc;
  // END STUDENT
}
