/* sym_fact.h: facts that hold inside a scope (lab 23.1).
 * Inside `for j in [0, N)` the fact j < N holds; outside that loop it does
 * not. A scope holds its facts and points to its parent; a query sees the
 * scope's facts and its ancestors', never a child's, so a loop's fact cannot
 * leak out of the loop. A scope may also narrow a dim's bounds (n in [16, 64],
 * a multiple of 16): the dim stays the same node, and only queries made in
 * that scope or a descendant see the narrower bounds.
 *
 * Soundness: simplification (sym_expr_simplify) reads only the declared
 * bounds, so what it rewrites holds for every binding those bounds allow, and
 * narrowing only removes bindings: a rewrite made outside stays valid inside
 * every narrowed scope. The reverse is not true, so a query in a scope
 * simplifies a copy with the narrowed bounds in a scratch arena it frees, and
 * nothing simplified under narrowed bounds reaches the caller's arena.
 * Chapter 23.1, "Why intervals cannot prove j < N" and "A dim is a
 * constrained value". */
#ifndef SYM_FACT_H
#define SYM_FACT_H

#include "sym_expr.h"

#define SYM_SCOPE_FACTS_MAX 8
#define SYM_SCOPE_NARROW_MAX 8

typedef struct sym_fact { const sym_expr *lhs, *rhs; } sym_fact;  /* lhs < rhs */

/* In this scope, dim (its declaration) has the bounds of within. */
typedef struct sym_narrowing { sym_dim dim, within; } sym_narrowing;

typedef struct sym_scope {
  const struct sym_scope *parent;   /* NULL for the outermost scope */
  sym_arena *arena;                 /* where queries build their differences */
  int count;
  sym_fact facts[SYM_SCOPE_FACTS_MAX];
  sym_dim var;                      /* a loop scope's variable */
  const sym_expr *var_expr;         /* NULL outside a loop scope */
  int n_narrowed;
  sym_narrowing narrowed[SYM_SCOPE_NARROW_MAX];
} sym_scope;

/* An empty scope inside parent (NULL: outermost). The scope borrows arena and
 * parent; both outlive it. */
void sym_scope_init(sym_scope *s, const sym_scope *parent, sym_arena *arena);

/* Records lhs < rhs as a fact of s. Both are simplified first.
 * Errors: UOPC_E_LIMIT (SYM_SCOPE_FACTS_MAX), those of sym_expr_simplify. */
int sym_scope_assume_lt(sym_scope *s, const sym_expr *lhs, const sym_expr *rhs,
                        uopc_error *err);

/* Opens the scope of `for name in [0, bound)` inside parent: the loop
 * variable is a dim (loop = 1) with bounds [0, hi - 1], hi the bound's upper
 * bound in parent (sym_scope_interval), and the scope holds the fact
 * name < bound. *var is the variable's expression (arena-owned).
 * Errors: UOPC_E_INVALID (bad name, bound's interval below 1), those of
 * sym_scope_assume_lt. */
int sym_scope_open_loop(sym_scope *inner, const sym_scope *parent, sym_arena *arena,
                        const char *name, const sym_expr *bound,
                        const sym_expr **var, uopc_error *err);

/* *proved = 1 when lhs < rhs holds for every binding within the bounds in
 * scope s: either by intervals alone or from a fact x < y of s or an
 * ancestor with lhs <= x and y <= rhs (each shown by an interval). Every
 * interval is sym_scope_interval's in s, so bounds narrowed in s or an
 * ancestor count. 0 means "not proved", not "false". Errors: those of
 * simplification. */
int sym_scope_prove_lt(const sym_scope *s, const sym_expr *lhs, const sym_expr *rhs,
                       int *proved, uopc_error *err);

/* ---- Bounds narrowed in a scope (sym_bounds.c, given). */

/* Narrows dim (a SYM_DIM node) to [lo, hi], a multiple of multiple_of, in s
 * and its descendants; the node is unchanged. Narrowing the same dim again in
 * s replaces the entry. Errors: UOPC_E_INVALID ("narrow: 'x + 1' is not a
 * dim"; "narrow dim 'n' to [40, 47] multiple of 16: no value is left";
 * "narrow dim 'n' to [0, 64] multiple of 1: wider than its [16, 128]
 * multiple of 16 here"), UOPC_E_LIMIT (SYM_SCOPE_NARROW_MAX). */
int sym_scope_narrow(sym_scope *s, const sym_expr *dim, int64_t lo, int64_t hi,
                     int64_t multiple_of, uopc_error *err);

/* d's bounds in s: the innermost narrowing of d in s or an ancestor, else d
 * itself (s may be NULL). The result is d or points into a scope. */
const sym_dim *sym_scope_dim(const sym_scope *s, const sym_dim *d);

/* *out = bounds of e that hold for every binding within the bounds in s.
 * When no dim of e is narrowed in s (or s is NULL) this is sym_expr_interval.
 * Else e is rebuilt in a scratch arena with each dim's bounds in s, a dim
 * that must be a multiple of m > 1 written m*k, and simplified there first:
 * where n is in [16, 64], a multiple of 16, n % 16 is [0, 0] and n - 16 is
 * [0, 48]. Errors: those of sym_expr_simplify and sym_expr_interval,
 * UOPC_E_NOMEM. */
int sym_scope_interval(const sym_scope *s, const sym_expr *e, sym_interval *out,
                       uopc_error *err);

#endif
