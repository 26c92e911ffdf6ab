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
  /* Lab 23.4: write tp_region_close here. See README.md in this folder. */
  (void)c; (void)at;
  return UOPC_FAIL(err, UOPC_E_NOT_IMPLEMENTED, "lab 23.4: tp_region_close is not implemented yet");
}

int tp_on_break(tp_ctx *c, const char *what, tp_site at, uopc_error *err) {
  /* Lab 23.4: write tp_on_break here. See README.md in this folder. */
  (void)c; (void)what; (void)at;
  return UOPC_FAIL(err, UOPC_E_NOT_IMPLEMENTED, "lab 23.4: tp_on_break is not implemented yet");
}
