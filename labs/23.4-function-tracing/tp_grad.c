/* tp_grad.c: backward rules and how gradients meet (lab 23.4, student
 * file). A rule turns d loss / d y into d loss / d of each operand, using
 * the tensor API; sizes it needs (a mean's count) come from tp_size and
 * tp_from_int, so a traced backward reads them at run time and one
 * artifact serves every batch size. Chapter 23.4, "Gradients with symbolic saved dims". */
#include "tp_internal.h"

/* Lab 23.4: helper functions for your code go here. */

int tp_unbroadcast(tp_ctx *c, tp_tensor *g, const tp_tensor *like, tp_site at, tp_tensor **out, uopc_error *err) {
  /* Lab 23.4: write tp_unbroadcast here. See README.md in this folder. */
  (void)c; (void)g; (void)like; (void)at; (void)out;
  return UOPC_FAIL(err, UOPC_E_NOT_IMPLEMENTED, "lab 23.4: tp_unbroadcast is not implemented yet");
}

int tp_accumulate(tp_ctx *c, tp_tensor **slot, tp_tensor *contribution, tp_site at, uopc_error *err) {
  /* Lab 23.4: write tp_accumulate here. See README.md in this folder. */
  (void)c; (void)slot; (void)contribution; (void)at;
  return UOPC_FAIL(err, UOPC_E_NOT_IMPLEMENTED, "lab 23.4: tp_accumulate is not implemented yet");
}

int tp_vjp_rule(tp_ctx *c, tp_tensor *y, tp_tensor *gy, tp_tensor **gx, tp_site at, uopc_error *err) {
  /* Lab 23.4: write tp_vjp_rule here. See README.md in this folder. */
  (void)c; (void)y; (void)gy; (void)gx; (void)at;
  return UOPC_FAIL(err, UOPC_E_NOT_IMPLEMENTED, "lab 23.4: tp_vjp_rule is not implemented yet");
}
