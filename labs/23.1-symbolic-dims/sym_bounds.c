/* sym_bounds.c: bounds narrowed in a scope (lab 23.1, given code).
 * A scope narrows a dim without making a new dim: the node keeps its declared
 * bounds, and a query in the scope reads the narrowed ones (sym_scope_dim).
 * A scoped interval rewrites a copy of the expression in a scratch arena that
 * it frees, so nothing simplified under narrowed bounds leaks into the
 * caller's arena (sym_fact.h, "Soundness"). Chapter 23.1, "A dim is a
 * constrained value". */
#include <inttypes.h>
#include <string.h>
#include "sym_fact.h"

const sym_dim *sym_scope_dim(const sym_scope *s, const sym_dim *d) {
  for (; s; s = s->parent)
    for (int k = 0; k < s->n_narrowed; k++)
      if (sym_dim_same(&s->narrowed[k].dim, d)) return &s->narrowed[k].within;
  return d;
}

/* 1 when some multiple of m (m >= 1) lies in [lo, hi]. */
static int has_multiple(int64_t lo, int64_t hi, int64_t m) {
  int64_t r = lo % m, span;
  if (r < 0) r += m;
  if (lo > hi) return 0;
  return r == 0 || __builtin_sub_overflow(hi, lo, &span) || span >= m - r;
}

int sym_scope_narrow(sym_scope *s, const sym_expr *dim, int64_t lo, int64_t hi,
                     int64_t multiple_of, uopc_error *err) {
  if (!s || !dim) return UOPC_FAIL(err, UOPC_E_INVALID, "narrow: NULL scope or dim");
  if (dim->kind != SYM_DIM) {
    char text[64];
    sym_expr_format(dim, text, sizeof text, NULL);
    return UOPC_FAIL(err, UOPC_E_INVALID, "narrow: '%s' is not a dim", text);
  }
  const sym_dim *d = &dim->dim, *now = sym_scope_dim(s, d);
  if (multiple_of < 1 || !has_multiple(lo, hi, multiple_of))
    return UOPC_FAIL(err, UOPC_E_INVALID, "narrow dim '%s' to [%" PRId64 ", %" PRId64 "] multiple of %"
                     PRId64 ": no value is left", d->name, lo, hi, multiple_of);
  if (lo < now->lo || hi > now->hi || multiple_of % now->multiple_of != 0)
    return UOPC_FAIL(err, UOPC_E_INVALID, "narrow dim '%s' to [%" PRId64 ", %" PRId64 "] multiple of %"
                     PRId64 ": wider than its [%" PRId64 ", %" PRId64 "] multiple of %" PRId64 " here",
                     d->name, lo, hi, multiple_of, now->lo, now->hi, now->multiple_of);
  int k = 0;
  while (k < s->n_narrowed && !sym_dim_same(&s->narrowed[k].dim, d)) k++;
  if (k == SYM_SCOPE_NARROW_MAX)
    return UOPC_FAIL(err, UOPC_E_LIMIT, "narrow dim '%s': a scope narrows at most %d dims", d->name,
                     SYM_SCOPE_NARROW_MAX);
  sym_narrowing *n = &s->narrowed[k];
  n->dim = n->within = *d;
  n->within.lo = lo;
  n->within.hi = hi;
  n->within.multiple_of = multiple_of;
  if (k == s->n_narrowed) s->n_narrowed++;
  return UOPC_OK;
}

/* 1 when s or an ancestor narrows a dim. */
static int narrows(const sym_scope *s) {
  for (; s; s = s->parent)
    if (s->n_narrowed) return 1;
  return 0;
}

/* 1 when e holds a dim that s or an ancestor narrowed. */
static int narrowed_in(const sym_scope *s, const sym_expr *e) {
  if (e->kind == SYM_CONST) return 0;
  if (e->kind == SYM_DIM) return sym_scope_dim(s, &e->dim) != &e->dim;
  return narrowed_in(s, e->a) || narrowed_in(s, e->b);
}

static int64_t floor_div(int64_t a, int64_t m) { return a / m - (a % m < 0); }
static int64_t ceil_div(int64_t a, int64_t m) { return a / m + (a % m > 0); }

/* A dim with its bounds in s; one that must be a multiple of m > 1 becomes
 * m*k with k over [ceil(lo/m), floor(hi/m)]: the same values, and the
 * simplifier then sees (m*k) % m == 0. */
static const sym_expr *dim_in(sym_arena *to, const sym_scope *s, const sym_dim *declared) {
  const sym_dim *d = sym_scope_dim(s, declared);
  sym_dim k = *d;
  if (d->multiple_of == 1) return sym_expr_dim(to, &k);
  k.lo = ceil_div(d->lo, d->multiple_of);
  k.hi = floor_div(d->hi, d->multiple_of);
  k.multiple_of = 1;
  return sym_expr_mul(to, sym_expr_dim(to, &k), sym_expr_const(to, d->multiple_of));
}

const sym_expr *sym_expr_rebuild(sym_arena *to, const sym_expr *e, sym_leaf_fn leaf, void *ctx) {
  if (e->kind == SYM_CONST) return sym_expr_const(to, e->value);
  if (e->kind == SYM_DIM) return leaf(to, &e->dim, ctx);
  const sym_expr *x = sym_expr_rebuild(to, e->a, leaf, ctx), *y = x ? sym_expr_rebuild(to, e->b, leaf, ctx) : NULL;
  if (!y) return NULL;
  switch (e->kind) {
  case SYM_ADD: return sym_expr_add(to, x, y);
  case SYM_SUB: return sym_expr_sub(to, x, y);
  case SYM_MUL: return sym_expr_mul(to, x, y);
  case SYM_FLOORDIV: return sym_expr_floordiv(to, x, y);
  case SYM_MOD: return sym_expr_mod(to, x, y);
  case SYM_MIN: return sym_expr_min(to, x, y);
  default: return sym_expr_max(to, x, y);
  }
}

static const sym_expr *dim_in_scope(sym_arena *to, const sym_dim *d, void *scope) { return dim_in(to, scope, d); }

int sym_scope_interval(const sym_scope *s, const sym_expr *e, sym_interval *out,
                       uopc_error *err) {
  if (!e) return UOPC_FAIL(err, UOPC_E_INVALID, "interval: NULL expression");
  if (!narrows(s) || !narrowed_in(s, e)) return sym_expr_interval(e, out, err);
  sym_arena *scratch;
  int rc = sym_arena_new(&scratch, err);
  if (rc) return rc;
  const sym_expr *r = sym_expr_rebuild(scratch, e, dim_in_scope, (void *)s);
  if (!r) {
    const uopc_error *e2 = sym_arena_error(scratch);
    rc = UOPC_FAIL(err, e2->code ? e2->code : UOPC_E_NOMEM, "interval in a scope: %s", e2->message);
  }
  if (!rc) rc = sym_expr_simplify(scratch, r, &r, err);
  if (!rc) rc = sym_expr_interval(r, out, err);
  sym_arena_free(scratch);
  return rc;
}
