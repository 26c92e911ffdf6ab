/* guard_plan.c: a call read once, and guard sets compiled for the hot path
 * (lab 23.2, given code). The facts of a call are computed in the pass that
 * copies its views; a set compiled once becomes a mask compare, an address
 * test per argument and a few integer tests. Each condition is stated as
 * guard_check states it. Chapter 23.2, "Making guards cheap". */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "guard_plan.h"

_Static_assert(GUARD_MAX_ARGS % 8 == 0, "the facts fill whole words");
_Static_assert((int)UOPC_BOOL <= (int)GUARD_FACT_DTYPE && (UOPC_MAX_RANK << 3) <= (int)GUARD_FACT_RANK, "dtype and rank fit");

/* ---- The call. */

/* Row-major contiguity, axes of size 1 ignored (as uopc_tensor_is_contiguous). */
static int contiguous(const guard_view *x) {
  int64_t expected = 1;
  for (int i = x->rank - 1; i >= 0; i--) {
    if (x->shape[i] == 0) return 1;
    if (x->shape[i] == 1) continue;
    if (x->strides[i] != expected) return 0;
    expected *= x->shape[i];
  }
  return 1;
}

/* [*lo, *hi) are the bytes x reaches from element 0 at p; 0 when it reaches none. */
static int byte_range(const guard_view *x, uintptr_t p, uintptr_t *lo, uintptr_t *hi) {
  int64_t first = 0, last = 0;
  for (int i = 0; i < x->rank; i++) {
    if (x->shape[i] == 0) return 0;
    int64_t reach = (x->shape[i] - 1) * x->strides[i];
    if (reach < 0) first += reach;
    else last += reach;
  }
  int64_t size = (int64_t)uopc_dtype_size(x->dtype);
  *lo = p + (uintptr_t)(first * size);
  *hi = p + (uintptr_t)((last + 1) * size);
  return 1;
}

static void apart_pairs(guard_call *c) {
  memset(c->apart, 0, sizeof c->apart);
  if (c->count < 2) return;   /* no pair: a one-tensor call (tensorjit's warm path) skips the ranges */
  int reaches[GUARD_MAX_ARGS];
  uintptr_t lo[GUARD_MAX_ARGS] = {0}, hi[GUARD_MAX_ARGS] = {0};
  for (int a = 0; a < c->count; a++) reaches[a] = byte_range(&c->args[a], c->data[a], &lo[a], &hi[a]);
  for (int a = 0; a < c->count; a++)
    for (int b = a + 1; b < c->count; b++)
      if (!reaches[a] || !reaches[b] || hi[a] <= lo[b] || hi[b] <= lo[a]) guard_pair_set(c->apart, a, b);
}

int guard_call_init(guard_call *c, int count, const uopc_tensor *const *args, uopc_error *err) {
  if (count < 1 || count > GUARD_MAX_ARGS)
    return UOPC_FAIL(err, UOPC_E_INVALID, "a call has 1 to %d arguments, not %d", GUARD_MAX_ARGS, count);
  c->count = count;
  memset(c->facts, 0, sizeof c->facts);
  for (int a = 0; a < count; a++) {
    const uopc_tensor *t = args[a];
    if (!t || !t->storage) return UOPC_FAIL(err, UOPC_E_INVALID, "argument %d is NULL or released", a);
    if ((unsigned)t->dtype > UOPC_BOOL || t->rank < 0 || t->rank > UOPC_MAX_RANK)
      return UOPC_FAIL(err, UOPC_E_INVALID, "argument %d has dtype %d and rank %d", a, (int)t->dtype, t->rank);
    guard_view *v = &c->args[a];
    v->dtype = t->dtype;
    v->rank = t->rank;
    for (int i = 0; i < t->rank; i++)   /* a few numbers: no memcpy call */
      v->shape[i] = t->shape[i], v->strides[i] = t->strides[i];
    c->data[a] = (uintptr_t)uopc_tensor_data(t);
    c->facts[a / 8] |= guard_fact(a, ((uint64_t)t->dtype & GUARD_FACT_DTYPE) |
                                         ((uint64_t)t->rank << 3 & GUARD_FACT_RANK) |
                                         (contiguous(v) ? GUARD_FACT_CONTIGUOUS : 0));
  }
  apart_pairs(c);
  return UOPC_OK;
}

/* ---- Compiling. */

static void need_site(guard_plan *p, guard_site at) {
  if (p->rank_min[at.arg] < at.axis + 1) p->rank_min[at.arg] = at.axis + 1;
}

/* The test of an integer guard (RANGE, DIVISIBLE, EQUAL). */
static guard_test test_of(guard_plan *p, const guard *g) {
  guard_test t = {.value_at = guard_site_offset(g->site), .other_at = guard_site_offset(g->site), .lo = INT64_MIN, .hi = INT64_MAX};
  need_site(p, g->site);
  if (g->kind == GUARD_RANGE) {
    t.lo = g->lo;
    t.hi = g->hi;
  } else if (g->kind == GUARD_DIVISIBLE) {
    int pow2 = (g->value & (g->value - 1)) == 0;   /* a mask, not a division */
    t.mask = pow2 ? (uint64_t)(g->value - 1) : 0;
    t.modulus = pow2 ? 0 : g->value;
  } else {   /* EQUAL: the difference is 0 */
    need_site(p, g->site2);
    t.other_at = guard_site_offset(g->site2);
    t.other_mask = ~(uint64_t)0;
    t.lo = t.hi = 0;
  }
  return t;
}

/* Adds t, merged into an earlier test of the same value when neither has a
 * modulus: [lo, hi] intersect, and v & a == 0 and v & b == 0 exactly when
 * v & (a | b) == 0. A plan says only whether all hold, so a merged test
 * needs to say no more (n's bounds and "a multiple of 16" become one test). */
static void add_test(guard_plan *p, guard_test t) {
  for (int k = 0; k < p->n_tests; k++) {
    guard_test *m = &p->tests[k];
    if (m->value_at != t.value_at || m->other_at != t.other_at || m->other_mask != t.other_mask || m->modulus ||
        t.modulus)
      continue;
    m->lo = m->lo > t.lo ? m->lo : t.lo;
    m->hi = m->hi < t.hi ? m->hi : t.hi;
    m->mask |= t.mask;
    return;
  }
  p->tests[p->n_tests++] = t;
}

/* The facts of arg under field must equal want; a second guard that wants
 * another value of the same field makes the set one that never holds. */
static void want_fact(guard_plan *p, int arg, uint64_t field, uint64_t want) {
  uint64_t mask = guard_fact(arg, field), bits = guard_fact(arg, want & field);
  int w = arg / 8;
  if ((p->facts_mask[w] & mask) && (p->facts_want[w] & mask) != bits) p->never = 1;
  p->facts_mask[w] |= mask;
  p->facts_want[w] |= bits;
}

/* Adds g to the plan: a fact, a pair, an address mask or a test. */
static void compile_guard(guard_plan *p, const guard *g) {
  switch (g->kind) {
  case GUARD_DTYPE: want_fact(p, g->arg, GUARD_FACT_DTYPE, (uint64_t)g->value); break;
  case GUARD_RANK: want_fact(p, g->arg, GUARD_FACT_RANK, (uint64_t)g->value << 3); break;
  case GUARD_CONTIGUOUS: want_fact(p, g->arg, GUARD_FACT_CONTIGUOUS, GUARD_FACT_CONTIGUOUS); break;
  case GUARD_ALIGNED: p->align[g->arg] |= (uintptr_t)(g->value - 1); break;
  case GUARD_DISJOINT: guard_pair_set(p->apart, g->arg, g->arg2); break;
  case GUARD_EXPR: p->n_exprs++; break;
  default: add_test(p, test_of(p, g)); break;
  }
}

int guard_plan_compile(guard_plan *p, const guard_set *s, uopc_error *err) {
  memset(p, 0, sizeof *p);
  p->tests = malloc(((size_t)s->count + 1) * sizeof *p->tests);
  if (!p->tests) return UOPC_FAIL(err, UOPC_E_NOMEM, "no memory to compile %d guards", s->count);
  p->set = s;
  p->n_args = s->n_args;
  for (int k = 0; k < s->count; k++) compile_guard(p, &s->guards[k]);
  return UOPC_OK;
}

void guard_plan_fini(guard_plan *p) {
  free(p->tests);
  p->tests = NULL;
  p->n_tests = 0;
}

int guard_plan_exprs_hold(const guard_plan *p, const guard_call *c) {
  const guard_set *s = p->set;
  for (int k = 0; k < s->count; k++) {
    const guard *g = &s->guards[k];
    int64_t want;
    if (g->kind != GUARD_EXPR) continue;
    if (!guard_site_exists(c, g->site) || !guard_expr_value(s, g->expr, c, &want) ||
        guard_site_value(c, g->site) != want)
      return 0;
  }
  return 1;
}
