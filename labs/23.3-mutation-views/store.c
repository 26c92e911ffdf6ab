/* store.c: the store/version rule (lab 23.3, student file).
 * A store is where mutation enters the IR: it checks that `target = value`
 * means what NumPy's assignment means (dtype, broadcasting, no colliding
 * elements), then consumes the target storage's memory version M<k> and
 * produces M<k+1>, so every later load names the version it reads.
 * Chapter 23.3, "Memory versions". */
#include <stdio.h>
#include <string.h>
#include "mprog.h"

/* Lab 23.3: helper functions for your code go here. */

int mv_store(mv_program *p, const mv_view *target, const ir_node *value, uopc_error *err) {
  /* Lab 23.3: write mv_store here. See README.md in this folder. */
  (void)p; (void)target; (void)value;
  return UOPC_FAIL(err, UOPC_E_NOT_IMPLEMENTED, "lab 23.3: mv_store is not implemented yet");
}
