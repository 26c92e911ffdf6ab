/* tj_sizes.c: which extents of a call become dims, which stay constants, and
 * how the trace's needs narrow them (lab 23.7, student file). The given
 * capture loop (tj_artifact.c, capture) calls these three functions: it asks
 * tj_extent_of for each axis of each input, traces the model on the result,
 * and when the trace needs two sizes equal (tj_sizes_unify) or compares a
 * size with a constant (tj_sizes_narrow), it changes the classes and traces
 * again. Chapter 23.7, "The contract, rule by rule". */
#include <inttypes.h>
#include <stdio.h>
#include "tj_internal.h"

int tj_extent_of(const tj_group *g, const tj_sizes *s, const guard_call *call, guard_site at, int *dim_of_root,
                 vcache_spec *spec, vcache_extent *e, uopc_error *err) {
  /* Lab 23.7: write tj_extent_of here. See README.md in this folder. */
  (void)g; (void)s; (void)call; (void)at; (void)dim_of_root; (void)spec; (void)e;
  return UOPC_FAIL(err, UOPC_E_NOT_IMPLEMENTED, "lab 23.7: tj_extent_of is not implemented yet");
}

int tj_sizes_unify(tj_sizes *s, int a, int b, uopc_error *err) {
  /* Lab 23.7: write tj_sizes_unify here. See README.md in this folder. */
  (void)s; (void)a; (void)b;
  return UOPC_FAIL(err, UOPC_E_NOT_IMPLEMENTED, "lab 23.7: tj_sizes_unify is not implemented yet");
}

/* Lab 23.7: helper functions for your code go here. */

int tj_sizes_narrow(tj_sizes *s, int site, int64_t c, int64_t k, tp_cmp op, int truth, int *changed,
                    uopc_error *err) {
  /* Lab 23.7: write tj_sizes_narrow here. See README.md in this folder. */
  (void)s; (void)site; (void)c; (void)k; (void)op; (void)truth; (void)changed;
  return UOPC_FAIL(err, UOPC_E_NOT_IMPLEMENTED, "lab 23.7: tj_sizes_narrow is not implemented yet");
}
