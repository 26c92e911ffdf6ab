/* sym_expr.h: integer expressions over dims (lab 23.1).
 * Immutable nodes live in an arena freed as a whole. Nodes are hash-consed:
 * within one arena, structurally equal expressions are the same pointer, so
 * after sym_expr_simplify (which produces a canonical form) equal expressions
 * compare equal with ==. A dim node is its name (sym_dim_same): one arena
 * holds one declaration of each name, and a scope narrows its bounds
 * without a new node (sym_scope_narrow). Division and modulo are Python's: the quotient is
 * rounded toward minus infinity and a % b has the sign of b, so -7 // 2 == -4
 * and -7 % 2 == 1. The generated C matches (SYM_C_HELPERS). Chapter 23.1. */
#ifndef SYM_EXPR_H
#define SYM_EXPR_H

#include <stddef.h>
#include <stdint.h>
#include "sym_dim.h"

typedef enum sym_kind {
  SYM_CONST, SYM_DIM,                        /* leaves */
  SYM_ADD, SYM_SUB, SYM_MUL,                 /* a + b, a - b, a * b */
  SYM_FLOORDIV, SYM_MOD,                     /* a // b, a % b; b is provably >= 1 */
  SYM_MIN, SYM_MAX
} sym_kind;

typedef struct sym_expr {
  sym_kind kind;
  int64_t value;                 /* SYM_CONST */
  sym_dim dim;                   /* SYM_DIM */
  const struct sym_expr *a, *b;  /* operands of the binary kinds */
  uint64_t hash;                 /* structural, for hash-consing */
  int depth;                     /* 0 for leaves */
} sym_expr;

typedef struct sym_interval { int64_t lo, hi; } sym_interval;  /* inclusive */

typedef struct sym_arena sym_arena;

/* A canonical linear form: constant + sum of coef[k] * atom[k]. Atoms are
 * simplified non-sum expressions (dims, products, //, %, min, max), in
 * canonical order, each at most once, with nonzero coefficients. */
#define SYM_LINEAR_MAX 16
typedef struct sym_linear {
  int count;
  const sym_expr *atom[SYM_LINEAR_MAX];
  int64_t coef[SYM_LINEAR_MAX];
  int64_t constant;
} sym_linear;

/* ---- The arena. */

/* The caller owns *out and frees it (with every node in it) by sym_arena_free.
 * Errors: UOPC_E_NOMEM. */
int sym_arena_new(sym_arena **out, uopc_error *err);
void sym_arena_free(sym_arena *a);

/* The arena's first construction error (code UOPC_OK when none). */
const uopc_error *sym_arena_error(const sym_arena *a);

/* ---- Construction, exactly as written (no simplification).
 * Each returns a node owned by the arena, or NULL after recording an error
 * in the arena (UOPC_E_NOMEM; UOPC_E_INVALID for a divisor not provably >= 1:
 * a constant >= 1, a dim with lo >= 1, or an expression whose interval does;
 * UOPC_E_INVALID for a dim already declared in the arena with other bounds). A NULL operand gives NULL, so a chain of calls can be
 * checked once at the end with sym_arena_error. */
const sym_expr *sym_expr_const(sym_arena *a, int64_t value);
const sym_expr *sym_expr_dim(sym_arena *a, const sym_dim *d);
const sym_expr *sym_expr_add(sym_arena *a, const sym_expr *x, const sym_expr *y);
const sym_expr *sym_expr_sub(sym_arena *a, const sym_expr *x, const sym_expr *y);
const sym_expr *sym_expr_mul(sym_arena *a, const sym_expr *x, const sym_expr *y);
const sym_expr *sym_expr_floordiv(sym_arena *a, const sym_expr *x, const sym_expr *y);
const sym_expr *sym_expr_mod(sym_arena *a, const sym_expr *x, const sym_expr *y);
const sym_expr *sym_expr_min(sym_arena *a, const sym_expr *x, const sym_expr *y);
const sym_expr *sym_expr_max(sym_arena *a, const sym_expr *x, const sym_expr *y);
/* The same node rebuilt in another arena (plans keep their own); NULL when
 * a dim of e is declared there with other bounds (the arena keeps the error). */
const sym_expr *sym_expr_copy(sym_arena *to, const sym_expr *e);
/* e rebuilt in to with each dim replaced by leaf's expression for it, each
 * operation made again by its constructor above (a divisor checked again);
 * NULL when leaf gives NULL or the arena fails (its error says why). Given
 * code, in sym_bounds.c: a scope's bounds and tensorjit's extents read as
 * expressions rewrite dims this way. */
typedef const sym_expr *(*sym_leaf_fn)(sym_arena *to, const sym_dim *d, void *ctx);
const sym_expr *sym_expr_rebuild(sym_arena *to, const sym_expr *e, sym_leaf_fn leaf, void *ctx);

/* ---- Questions. */

/* A total order on structure (kind, then leaf value or name, then operands):
 * the canonical order of terms. 0 only for structurally equal expressions. */
int sym_expr_compare(const sym_expr *x, const sym_expr *y);

/* *out = e's value under b, with floor // and %. Errors: UOPC_E_UNBOUND
 * (names the dim), UOPC_E_OVERFLOW, UOPC_E_INVALID (a divisor below 1). */
int sym_expr_eval(const sym_expr *e, const sym_binding *b, int64_t *out,
                  uopc_error *err);

/* Bounds that hold for every binding within the dims' declared bounds (a
 * scope's narrowed ones: sym_scope_interval in sym_fact.h). Arithmetic
 * that would overflow saturates at INT64_MIN / INT64_MAX (still sound).
 * Errors: UOPC_E_INVALID (a divisor whose interval reaches below 1). */
int sym_expr_interval(const sym_expr *e, sym_interval *out, uopc_error *err);

/* Calls fn for each distinct dim in e, leftmost first. */
void sym_expr_each_dim(const sym_expr *e, void (*fn)(const sym_dim *, void *), void *ctx);

/* ---- Simplification (sym_simplify.c). */

/* *out = e in canonical form: constants folded, like terms combined, x*1,
 * x+0, (a*c)//c, (a*c)%c and range-decided //, %, min, max removed.
 * Equal under every binding within the bounds. Errors: UOPC_E_OVERFLOW (a
 * folded constant), UOPC_E_LIMIT (more than SYM_LINEAR_MAX terms),
 * UOPC_E_NOMEM. */
int sym_expr_simplify(sym_arena *a, const sym_expr *e, const sym_expr **out,
                      uopc_error *err);

/* *out = e's linear form (e simplified; atoms are its non-sum parts).
 * Errors: UOPC_E_OVERFLOW, UOPC_E_LIMIT. */
int sym_linear_of(const sym_expr *e, sym_linear *out, uopc_error *err);
/* *out = the canonical expression of l: positive terms first, then negative
 * ones, each group in sym_expr_compare order, the constant last. */
int sym_linear_build(sym_arena *a, const sym_linear *l, const sym_expr **out,
                     uopc_error *err);

/* The rules, exposed for their tests. acc += scale * x, combining like terms
 * and dropping zero coefficients. Errors: UOPC_E_OVERFLOW, UOPC_E_LIMIT. */
int sym_linear_add(sym_linear *acc, const sym_linear *x, int64_t scale, uopc_error *err);
/* x // y or x % y (kind) for simplified operands, with the division rules
 * applied; *out is simplified. Errors: as sym_expr_simplify. */
int sym_simplify_divmod(sym_arena *a, sym_kind kind, const sym_expr *x,
                        const sym_expr *y, const sym_expr **out, uopc_error *err);

/* ---- Text. */

/* Python-like text, "b*n + j", "(n + 15)//16". Errors: UOPC_E_LIMIT (size). */
int sym_expr_format(const sym_expr *e, char *buf, size_t size, uopc_error *err);
/* A C expression of type int64_t using SYM_C_HELPERS for //, %, min and max;
 * dims appear by name. Errors: UOPC_E_LIMIT (size). */
int sym_expr_to_c(const sym_expr *e, char *buf, size_t size, uopc_error *err);
/* 1 when e needs SYM_C_HELPERS. */
int sym_expr_needs_helpers(const sym_expr *e);

/* C definitions of floordiv_i64, mod_i64, min_i64 and max_i64, with Python's
 * semantics for // and %, for generated sources. */
extern const char SYM_C_HELPERS[];

#endif
