/* alias.c: can two views of one storage share an element? (lab 23.3)
 * alias_decide answers at compile time, from the views' affine forms, for
 * every binding at once, and says UNKNOWN rather than guess; the executor
 * then asks alias_guard_disjoint about the call's actual views, which it
 * answers from their numbers. Chapter 23.3, "Alias analysis over symbolic
 * views". */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "alias.h"

const char *alias_answer_name(alias_answer a) {
  switch (a) {
  case ALIAS_DISJOINT: return "disjoint";
  case ALIAS_OVERLAP: return "overlap";
  case ALIAS_UNKNOWN: return "unknown";
  }
  return "?";
}

/* Lab 23.3: helper functions for your code go here. */

int alias_decide(const mv_layout *a, const mv_layout *b, sym_arena *arena, alias_result *out,
                 uopc_error *err) {
  /* Lab 23.3: write alias_decide here. See README.md in this folder. */
  (void)a; (void)b; (void)arena; (void)out;
  return UOPC_FAIL(err, UOPC_E_NOT_IMPLEMENTED, "lab 23.3: alias_decide is not implemented yet");
}

int alias_guard_disjoint(const uopc_tensor *a, const uopc_tensor *b, int *disjoint, uopc_error *err) {
  /* Lab 23.3: write alias_guard_disjoint here. See README.md in this folder. */
  (void)a; (void)b; (void)disjoint;
  return UOPC_FAIL(err, UOPC_E_NOT_IMPLEMENTED, "lab 23.3: alias_guard_disjoint is not implemented yet");
}
