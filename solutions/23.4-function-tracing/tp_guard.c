/* tp_guard.c: branches on sizes become guards (lab 23.4, student file).
 * Under the tracer a comparison of sizes answers for this call and records
 * what the answer assumed, so a call whose sizes would flip the branch
 * fails the guard and is traced again. A comparison that the dims' bounds
 * decide for every call needs no guard. Chapter 23.4, "Symbolic integers and
 * guards". */
#include "tp_compile.h"

int tp_compare_record(tp_ctx *c, tp_int a, tp_cmp op, tp_int b, tp_site at, int *truth, uopc_error *err) {
  // STUDENT 23.4 tp_compare_record
  *truth = tp_cmp_holds(a.value - b.value, op);
  if (tp_ctx_mode(c) != TP_TRACE || (!a.expr && !b.expr)) return UOPC_OK;   /* nothing symbolic: nothing to guard */
  sym_arena *ar = ir_graph_arena(c->g);
  const sym_expr *x = a.expr ? sym_expr_copy(ar, a.expr) : sym_expr_const(ar, a.value);
  const sym_expr *y = b.expr ? sym_expr_copy(ar, b.expr) : sym_expr_const(ar, b.value);
  const sym_expr *diff = NULL;
  sym_interval iv;
  int rc = sym_expr_simplify(ar, sym_expr_sub(ar, x, y), &diff, err);
  if (!rc) rc = sym_expr_interval(diff, &iv, err);
  if (rc) return rc;
  /* Decided by the bounds when every value in [lo, hi] gives the same answer. */
  int lo = tp_cmp_holds(iv.lo, op), hi = tp_cmp_holds(iv.hi, op);
  int decided = lo == hi && (op == TP_EQ || op == TP_NE ? iv.lo == iv.hi || iv.lo > 0 || iv.hi < 0 : 1);
  if (decided) return UOPC_OK;
#ifdef TP_NO_GUARD   /* a test-only build records nothing: tests/broken/23.4.mk */
  return UOPC_OK;
#endif
  rc = tp_guard_add(c, diff, op, *truth, at);
  return rc ? UOPC_FAIL(err, rc, "out of memory recording a guard") : UOPC_OK;
  // END STUDENT
}

int tp_variant_holds(const tp_variant *v, const sym_binding *b, int *holds, uopc_error *err) {
  // STUDENT 23.4 tp_variant_holds
  *holds = 1;
  int n = v->n_guards;
#ifdef TP_HOLDS_FIRST_GUARD_ONLY   /* a test-only build reads one guard: tests/broken/23.4.mk */
  n = n > 1 ? 1 : n;
#endif
  for (int k = 0; k < n; k++) {
    int64_t d;
    int rc = sym_expr_eval(v->guards[k].diff, b, &d, err);
    if (rc) return rc;
    if (tp_cmp_holds(d, v->guards[k].op) != v->guards[k].truth) {
      *holds = 0;
      return UOPC_OK;
    }
  }
  return UOPC_OK;
  // END STUDENT
}
