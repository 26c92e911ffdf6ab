/* tp_guard.c: branches on sizes become guards (lab 23.4, student file).
 * Under the tracer a comparison of sizes answers for this call and records
 * what the answer assumed, so a call whose sizes would flip the branch
 * fails the guard and is traced again. A comparison that the dims' bounds
 * decide for every call needs no guard. Chapter 23.4, "Symbolic integers and
 * guards". */
#include "tp_compile.h"

int tp_compare_record(tp_ctx *c, tp_int a, tp_cmp op, tp_int b, tp_site at, int *truth, uopc_error *err) {
  /* Lab 23.4: write tp_compare_record here. See README.md in this folder. */
  (void)c; (void)a; (void)op; (void)b; (void)at; (void)truth;
  return UOPC_FAIL(err, UOPC_E_NOT_IMPLEMENTED, "lab 23.4: tp_compare_record is not implemented yet");
}

int tp_variant_holds(const tp_variant *v, const sym_binding *b, int *holds, uopc_error *err) {
  /* Lab 23.4: write tp_variant_holds here. See README.md in this folder. */
  (void)v; (void)b; (void)holds;
  return UOPC_FAIL(err, UOPC_E_NOT_IMPLEMENTED, "lab 23.4: tp_variant_holds is not implemented yet");
}
