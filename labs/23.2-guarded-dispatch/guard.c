/* guard.c: checking guards, one by one (lab 23.2).
 * The reference check: each guard's condition read from the call's views
 * and addresses, and, when asked, the reason it failed with the values it
 * found. The compiled form (guard_plan.h) must agree with it on every call;
 * explain and a variant's first call use it. Building sets is given
 * (guard_set.c). Chapter 23.2, "A guard is an executable check". */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "guard.h"

/* Lab 23.2: helper functions for your code go here. */

int guard_check(const guard_set *s, int k, const guard_call *call, int *holds, guard_reason *why,
                uopc_error *err) {
  /* Lab 23.2: write guard_check here. See README.md in this folder. */
  (void)s; (void)k; (void)call; (void)holds; (void)why;
  return UOPC_FAIL(err, UOPC_E_NOT_IMPLEMENTED, "lab 23.2: guard_check is not implemented yet");
}

int guard_set_check(const guard_set *s, const guard_call *call, int *failed, guard_reason *why,
                    uopc_error *err) {
  /* Lab 23.2: write guard_set_check here. See README.md in this folder. */
  (void)s; (void)call; (void)failed; (void)why;
  return UOPC_FAIL(err, UOPC_E_NOT_IMPLEMENTED, "lab 23.2: guard_set_check is not implemented yet");
}
