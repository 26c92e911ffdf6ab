/* semantics.c: what each of the lab's programs must give, worked out by hand
 * before any code (lab 23.3). The values are NumPy's: a write through a view
 * is seen through every view of its storage, and `x[s] = e` evaluates e
 * completely before it stores. Chapter 23.3, "Semantics first". */
#include <string.h>
#include "semantics.h"

int semantics_count(semantics_case c) {
  if ((int)c < 0 || (int)c >= SEM_COUNT) return 0;   /* unknown: no values */
  return c == SEM_VIEW_SURVIVES ? 4 : c == SEM_PARAM_UPDATE ? 2 : 8;
}

int semantics_expect(semantics_case c, double *out, int n, uopc_error *err) {
  /* Lab 23.3: write semantics_expect here. See README.md in this folder. */
  (void)c; (void)out; (void)n;
  return UOPC_FAIL(err, UOPC_E_NOT_IMPLEMENTED, "lab 23.3: semantics_expect is not implemented yet");
}
