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
  // STUDENT 23.4 tp_effect_check
  if (tp_ctx_mode(c) != TP_TRACE) return UOPC_OK;
  switch (effect) {
  case TP_EFFECT_PRINT:
    return UOPC_FAIL(err, UOPC_E_UNSUPPORTED, "tp_print under the tracer would print once, when the model is"
                   " traced, not at every call: print the results after tp_call");
  case TP_EFFECT_GLOBAL:
    return UOPC_FAIL(err, UOPC_E_UNSUPPORTED, "tp_global: a tensor the model did not receive as an argument would"
                   " be read once, at trace time: pass it in");
  case TP_EFFECT_IMPURE_CALLBACK:
#ifdef TP_EFFECT_ALLOWS_CALLBACKS   /* a test-only build lets any callback run: tests/broken/23.4.mk */
    pure = 1;
#endif
    if (pure) return UOPC_OK;
    return UOPC_FAIL(err, UOPC_E_UNSUPPORTED, "tp_callback of a callback not declared pure would run once, at"
                   " trace time, not at every call");
  case TP_EFFECT_RANDOM:
    return UOPC_FAIL(err, UOPC_E_UNSUPPORTED, "tp_rand_like without a seed draws from a hidden generator that a"
                   " trace cannot capture: pass the generator's seed explicitly");
  }
  return UOPC_FAIL(err, UOPC_E_INVALID, "unknown effect %d", (int)effect);
  // END STUDENT
}
