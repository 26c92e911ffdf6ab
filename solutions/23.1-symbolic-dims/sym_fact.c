/* sym_fact.c: scoped facts and the proof of lhs < rhs (lab 23.1). */
#include <inttypes.h>
#include <string.h>
#include "sym_fact.h"

void sym_scope_init(sym_scope *s, const sym_scope *parent, sym_arena *arena) {
  memset(s, 0, sizeof *s);
  s->parent = parent;
  s->arena = arena;
}

int sym_scope_assume_lt(sym_scope *s, const sym_expr *lhs, const sym_expr *rhs,
                        uopc_error *err) {
  if (s->count == SYM_SCOPE_FACTS_MAX)
    return UOPC_FAIL(err, UOPC_E_LIMIT, "a scope holds at most %d facts", SYM_SCOPE_FACTS_MAX);
  sym_fact f;
  int rc = sym_expr_simplify(s->arena, lhs, &f.lhs, err);
  if (!rc) rc = sym_expr_simplify(s->arena, rhs, &f.rhs, err);
  if (rc) return rc;
  s->facts[s->count++] = f;
  return UOPC_OK;
}

int sym_scope_open_loop(sym_scope *inner, const sym_scope *parent, sym_arena *arena,
                        const char *name, const sym_expr *bound,
                        const sym_expr **var, uopc_error *err) {
  sym_interval bi;   /* in parent: a loop inside a narrowed scope runs at most that far */
  int rc = sym_scope_interval(parent, bound, &bi, err);
  if (rc) return rc;
  if (bi.hi < 1)
    return UOPC_FAIL(err, UOPC_E_INVALID, "loop '%s' never runs: bound at most %" PRId64,
                     name, bi.hi);
  sym_scope_init(inner, parent, arena);
  /* A loop variable is a dim whose bounds come from the loop: [0, hi - 1].
   * sym_dim_init would refuse its generated name (i0, r0), so it is filled
   * here. */
  if (!name || strlen(name) >= SYM_NAME_MAX)
    return UOPC_FAIL(err, UOPC_E_INVALID, "loop variable name '%s'", name ? name : "(null)");
  strcpy(inner->var.name, name);
  inner->var.lo = 0;
  inner->var.hi = bi.hi - 1;
  inner->var.multiple_of = 1;
  inner->var.loop = 1;
  inner->var_expr = sym_expr_dim(arena, &inner->var);
  if (!inner->var_expr) {
    const uopc_error *e = sym_arena_error(arena);
    return UOPC_FAIL(err, e->code ? e->code : UOPC_E_NOMEM, "loop '%s': %s", name, e->message);
  }
  *var = inner->var_expr;
  return sym_scope_assume_lt(inner, inner->var_expr, bound, err);
}

// STUDENT 23.1 helpers
/* *holds = 1 when x <= y over the whole box of s (its narrowed bounds): the
 * simplified y - x has a lower bound of at least 0. */
static int le_by_interval(const sym_scope *s, const sym_expr *x, const sym_expr *y, int *holds,
                          uopc_error *err) {
  const sym_expr *d;
  sym_interval di;
  int rc = sym_expr_simplify(s->arena, sym_expr_sub(s->arena, y, x), &d, err);
  if (!rc) rc = sym_scope_interval(s, d, &di, err);
  if (rc) return rc;
  *holds = di.lo >= 0;
  return UOPC_OK;
}
// END STUDENT

int sym_scope_prove_lt(const sym_scope *s, const sym_expr *lhs, const sym_expr *rhs,
                       int *proved, uopc_error *err) {
// STUDENT 23.1 sym_scope_prove_lt
  sym_arena *a = s->arena;
  *proved = 0;
  int holds = 0;                        /* intervals: lhs + 1 <= rhs */
  int rc = le_by_interval(s, sym_expr_add(a, lhs, sym_expr_const(a, 1)), rhs, &holds, err);
  if (rc || holds) { *proved = !rc && holds; return rc; }
  for (const sym_scope *sc = s; sc; sc = sc->parent)   /* never a child's facts */
    for (int k = 0; k < sc->count; k++) {
      const sym_fact *f = &sc->facts[k];   /* lhs <= f.lhs < f.rhs <= rhs */
      int below, above;
      rc = le_by_interval(s, lhs, f->lhs, &below, err);
      if (!rc) rc = le_by_interval(s, f->rhs, rhs, &above, err);
      if (rc) return rc;
      if (below && above) { *proved = 1; return UOPC_OK; }
    }
  return UOPC_OK;
// END STUDENT
}
