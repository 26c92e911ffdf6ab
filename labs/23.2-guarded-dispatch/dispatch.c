/* dispatch.c: the dispatcher's own steps (lab 23.2).
 * The dispatcher is an instance of the variant cache (dispatch_op.c gives
 * the cache these steps as hooks): the fast kernel's contract, the
 * selection among the fast variants, what a call that none serves gets,
 * and why the last call took its path. Chapter 23.2, "The dispatcher". */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include "dispatch.h"

int dispatch_fast16_guards(const dispatcher *d, int64_t exact_n, guard_set *s, uopc_error *err) {
  /* Lab 23.2: write dispatch_fast16_guards here. See README.md in this folder. */
  (void)d; (void)exact_n; (void)s;
  return UOPC_FAIL(err, UOPC_E_NOT_IMPLEMENTED, "lab 23.2: dispatch_fast16_guards is not implemented yet");
}

int dispatch_select(dispatcher *d, const guard_call *call, int *index, uopc_error *err) {
  /* Lab 23.2: write dispatch_select here. See README.md in this folder. */
  (void)d; (void)call; (void)index;
  return UOPC_FAIL(err, UOPC_E_NOT_IMPLEMENTED, "lab 23.2: dispatch_select is not implemented yet");
}

int dispatch_on_miss(dispatcher *d, const guard_call *call, dispatch_variant **out, uopc_error *err) {
  /* Lab 23.2: write dispatch_on_miss here. See README.md in this folder. */
  (void)d; (void)call; (void)out;
  return UOPC_FAIL(err, UOPC_E_NOT_IMPLEMENTED, "lab 23.2: dispatch_on_miss is not implemented yet");
}

/* Lab 23.2: helper functions for your code go here. */

int dispatch_explain(const dispatcher *d, char *buf, size_t size, uopc_error *err) {
  /* Lab 23.2: write dispatch_explain here. See README.md in this folder. */
  (void)d; (void)buf; (void)size;
  return UOPC_FAIL(err, UOPC_E_NOT_IMPLEMENTED, "lab 23.2: dispatch_explain is not implemented yet");
}
