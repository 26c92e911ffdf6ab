/* sym_fact.h: facts that hold inside a scope (lab 23.1).
 * Inside `for j in [0, N)` the fact j < N holds; outside that loop it does
 * not. A scope holds its facts and points to its parent; a query sees the
 * scope's facts and its ancestors', never a child's, so a loop's fact cannot
 * leak out of the loop. Chapter 23.1, "Why intervals cannot prove j < N". */
#ifndef SYM_FACT_H
#define SYM_FACT_H

#include "sym_expr.h"

#define SYM_SCOPE_FACTS_MAX 8

typedef struct sym_fact { const sym_expr *lhs, *rhs; } sym_fact;  /* lhs < rhs */

typedef struct sym_scope {
  const struct sym_scope *parent;   /* NULL for the outermost scope */
  sym_arena *arena;                 /* where queries build their differences */
  int count;
  sym_fact facts[SYM_SCOPE_FACTS_MAX];
  sym_dim var;                      /* a loop scope's variable */
  const sym_expr *var_expr;         /* NULL outside a loop scope */
} sym_scope;

/* An empty scope inside parent (NULL: outermost). The scope borrows arena and
 * parent; both outlive it. */
void sym_scope_init(sym_scope *s, const sym_scope *parent, sym_arena *arena);

/* Records lhs < rhs as a fact of s. Both are simplified first.
 * Errors: UOPC_E_LIMIT (SYM_SCOPE_FACTS_MAX), those of sym_expr_simplify. */
int sym_scope_assume_lt(sym_scope *s, const sym_expr *lhs, const sym_expr *rhs,
                        uopc_error *err);

/* Opens the scope of `for name in [0, bound)` inside parent: the loop
 * variable is a dim with bounds [0, hi(bound) - 1], and the scope holds the
 * fact name < bound. *var is the variable's expression (arena-owned).
 * Errors: UOPC_E_INVALID (bad name, bound's interval below 1), those of
 * sym_scope_assume_lt. */
int sym_scope_open_loop(sym_scope *inner, const sym_scope *parent, sym_arena *arena,
                        const char *name, const sym_expr *bound,
                        const sym_expr **var, uopc_error *err);

/* *proved = 1 when lhs < rhs holds for every binding within the bounds in
 * scope s: either by intervals alone or from a fact x < y of s or an
 * ancestor with lhs <= x and y <= rhs (each shown by an interval). 0 means
 * "not proved", not "false". Errors: those of simplification. */
int sym_scope_prove_lt(const sym_scope *s, const sym_expr *lhs, const sym_expr *rhs,
                       int *proved, uopc_error *err);

#endif
