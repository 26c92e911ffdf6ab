/* tp_effect.c: effects a trace cannot capture are rejected, never dropped
 * (lab 23.4, student file). A trace runs the model once; what it records
 * runs at every call. A print would happen once, at trace time; a global
 * tensor would be read once and its later values missed; an impure callback
 * would run once; a hidden random generator would give every call the same
 * numbers. Each is an error naming it and the line. Chapter 23.4, "Why
 * effects are rejected". */
#include "tp_compile.h"

int tp_effect_check(tp_ctx *c, tp_effect effect, int pure, tp_site at, uopc_error *err) {
  (void)at;
  /* Lab 23.4: write tp_effect_check here. See README.md in this folder. */
  (void)c; (void)effect; (void)pure; (void)at;
  return UOPC_FAIL(err, UOPC_E_NOT_IMPLEMENTED, "lab 23.4: tp_effect_check is not implemented yet");
}
