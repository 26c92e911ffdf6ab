/* reuse.c: a let writes into an input's buffer only with two proofs
 * (lab 23.3). Alias: nothing else can reach the buffer (not the caller's
 * tensor, no view that escapes, no other view read by this statement).
 * Liveness: no later statement needs the old value. Either missing, the
 * let gets a buffer of its own, and the log says which proof failed.
 * Chapter 23.3, "Buffer reuse needs two proofs". */
#include <stdio.h>
#include "reuse.h"

static int same_shape(const ir_node *value, const mv_storage *s) {
  if (value->rank != s->rank || value->dtype != s->dtype) return 0;
  for (int k = 0; k < s->rank; k++)
    if (sym_expr_compare(value->shape[k], s->shape[k]) != 0) return 0;
  return 1;
}

int reuse_candidate(const mv_program *p, int k, int s) {
  const mv_stmt *st = mv_program_stmt(p, k);
  const mv_storage *stor = mv_program_storage(p, s);
  if (!st || !stor || st->kind != MV_LET || s == st->storage || !same_shape(st->value, stor)) return 0;
  for (int j = 0; j < st->n_loads; j++)
    if (st->loads[j].view.storage == s) return 1;
  return 0;
}

int reuse_reads_in_place(const mv_program *p, int k, int j) {
  const mv_stmt *st = mv_program_stmt(p, k);
  return st && j >= 0 && j < st->n_loads && st->loads[j].view.n_steps == 0 && mv_stmt_reads_at_output_index(st, j);
}

int reuse_decide(const mv_program *p, int k, int s, reuse_decision *out, uopc_error *err) {
  /* Lab 23.3: write reuse_decide here. See README.md in this folder. */
  (void)p; (void)k; (void)s; (void)out;
  return UOPC_FAIL(err, UOPC_E_NOT_IMPLEMENTED, "lab 23.3: reuse_decide is not implemented yet");
}
