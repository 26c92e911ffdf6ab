/* guard_plan.h: a call read once, and guard sets compiled for the hot path
 * (lab 23.2, given code; nothing here is student work).
 * guard_set_check walks a set guard by guard, a switch per guard, and walks
 * the strides again for each contiguity guard and the byte ranges again for
 * each disjointness guard. A plan is the same set compiled once, when its
 * variant is built. The call's facts (per argument its dtype, rank and
 * contiguity; per pair of arguments whether they share a byte) are computed
 * once per call, by guard_call_init, so the fact guards of a set become one
 * mask compare; alignment guards become one address mask per argument; each
 * integer guard (a range, a multiple, two sites equal) becomes a test at a
 * precomputed offset of the call, tests on one value merged. A plan answers
 * only "do all hold": guard_set_check, which it must agree with
 * (tests/23.2/test_guard_plan.c, on random sets and calls), finds which
 * guard failed and why. It is derived from the set alone: a guard removed
 * from the set is gone from the plan. Chapter 23.2, "Making guards cheap". */
#ifndef GUARD_PLAN_H
#define GUARD_PLAN_H

#include <stddef.h>
#include <string.h>
#include "guard.h"

/* ---- The facts of a call: 8 bits per argument (dtype in bits 0-2, rank in
 * 3-6, contiguity in 7), and one bit per pair of arguments that reach no
 * common byte. */
enum { GUARD_FACT_DTYPE = 0x07, GUARD_FACT_RANK = 0x78, GUARD_FACT_CONTIGUOUS = 0x80 };

/* arg's bits, placed in its word of facts (facts[arg / 8]). */
static inline uint64_t guard_fact(int arg, uint64_t bits) { return bits << (8 * (arg % 8)); }

/* The pair (a, b)'s place among the pairs: bit guard_pair % 64 of word guard_pair / 64. */
static inline int guard_pair(int a, int b) {
  int lo = a < b ? a : b, hi = a < b ? b : a;
  return lo * (2 * GUARD_MAX_ARGS - lo - 1) / 2 + (hi - lo - 1);
}

static inline void guard_pair_set(uint64_t *words, int a, int b) {
  int k = guard_pair(a, b);
  words[k / 64] |= (uint64_t)1 << (k % 64);
}

/* Where site at lies in a call: a byte offset, for tests that read it
 * without the (argument, field, axis) arithmetic. */
static inline uint32_t guard_site_offset(guard_site at) {
  size_t field = at.field == GUARD_SHAPE ? offsetof(guard_view, shape) : offsetof(guard_view, strides);
  return (uint32_t)(offsetof(guard_call, args) + (size_t)at.arg * sizeof(guard_view) + field +
                    (size_t)at.axis * sizeof(int64_t));
}

/* Fills *c from count tensors (views copied; nothing retained) and computes
 * its facts. Errors: UOPC_E_INVALID (count outside [1, GUARD_MAX_ARGS], a
 * NULL or released tensor, a bad dtype or rank, naming its position). */
int guard_call_init(guard_call *c, int count, const uopc_tensor *const *args, uopc_error *err);

/* 1 when args[arg] of c is row-major contiguous (a fact of the call). */
static inline int guard_call_contiguous(const guard_call *c, int arg) {
  return (c->facts[arg / 8] & guard_fact(arg, GUARD_FACT_CONTIGUOUS)) != 0;
}

/* Argument a of c, a vector x of a valid dtype with a storage: its view,
 * address and facts, and the bytes [*lo, *hi) it reaches (*reaches = 0:
 * none); no loop, and no branch on its values. */
static inline __attribute__((always_inline)) uint64_t guard_call_vector(guard_call *c, int a, const uopc_tensor *x,
                                                                        int *reaches, uintptr_t *lo, uintptr_t *hi) {
  guard_view *v = &c->args[a];
  int64_t n = x->shape[0], stride = x->strides[0], size = (int64_t)uopc_dtype_size(x->dtype);
  int64_t reach = (n - 1) * stride * size;
  uintptr_t p = (uintptr_t)uopc_tensor_data(x);
  v->dtype = x->dtype;
  v->rank = 1;
  v->shape[0] = n;
  v->strides[0] = stride;
  c->data[a] = p;
  *reaches = n != 0;
  *lo = p + (uintptr_t)(reach < 0 ? reach : 0);
  *hi = p + (uintptr_t)(reach < 0 ? 0 : reach) + (uintptr_t)size;
  int packed = n <= 1 || stride == 1;
  return guard_fact(a, ((uint64_t)x->dtype & GUARD_FACT_DTYPE) | (1u << 3) | (packed ? GUARD_FACT_CONTIGUOUS : 0));
}

/* guard_call_init(c, 2, {a, b}, err): the same record and facts, inline for
 * two vectors (lab 23.2's out and x); any other call goes to
 * guard_call_init. tests/23.2 holds the two to the same answer. */
static inline __attribute__((always_inline)) int guard_call_init_pair(guard_call *c, const uopc_tensor *a,
                                                                      const uopc_tensor *b, uopc_error *err) {
  if (!a || !b || !a->storage || !b->storage || a->rank != 1 || b->rank != 1 || (unsigned)a->dtype > UOPC_BOOL ||
      (unsigned)b->dtype > UOPC_BOOL) {
    const uopc_tensor *const args[2] = {a, b};
    return guard_call_init(c, 2, args, err);
  }
  int ra, rb;
  uintptr_t la, ha, lb, hb;
  c->count = 2;
  memset(c->facts, 0, sizeof c->facts);
  memset(c->apart, 0, sizeof c->apart);
  c->facts[0] = guard_call_vector(c, 0, a, &ra, &la, &ha) | guard_call_vector(c, 1, b, &rb, &lb, &hb);
  if (!ra || !rb || ha <= lb || hb <= la) guard_pair_set(c->apart, 0, 1);
  return UOPC_OK;
}

/* ---- Plans. */

/* One integer guard compiled: the value at byte value_at of the call, minus
 * the one at other_at when other_mask is ~0 (EQUAL), lies in [lo, hi], has
 * the bits of mask clear and is a multiple of modulus (0: any). Offsets
 * instead of (argument, field, axis) spare the hot path the arithmetic. */
typedef struct guard_test {
  uint32_t value_at, other_at;
  uint64_t other_mask, mask;
  int64_t lo, hi, modulus;
} guard_test;

typedef struct guard_plan {
  const guard_set *set;            /* borrowed: its EXPR guards are interpreted */
  int n_args;
  int never;                       /* two guards want different values of one fact */
  uint64_t facts_mask[GUARD_FACT_WORDS], facts_want[GUARD_FACT_WORDS];
  uint64_t apart[GUARD_PAIR_WORDS];
  uintptr_t align[GUARD_MAX_ARGS]; /* data[a] & align[a] must be 0 */
  int rank_min[GUARD_MAX_ARGS];    /* every site a test reads exists */
  int n_tests;
  guard_test *tests;               /* owned */
  int n_exprs;
} guard_plan;

/* Compiles s into *p; s must outlive p (and not change). The caller frees
 * *p with guard_plan_fini, also on error. Errors: UOPC_E_NOMEM. */
int guard_plan_compile(guard_plan *p, const guard_set *s, uopc_error *err);
void guard_plan_fini(guard_plan *p);

/* The EXPR guards of p's set hold for c (interpreted: guard_plan_holds' slow part). */
int guard_plan_exprs_hold(const guard_plan *p, const guard_call *c);

#define GUARD_AT(c, at) (*(const int64_t *)((const char *)(c) + (at)))

/* The hot path: 1 when every guard of p's set holds for c (as
 * guard_set_check finds no failure), else 0; a call with fewer arguments
 * than the set fails. Formats nothing. Inline: a call checks it for every
 * variant before the one that runs. */
static inline __attribute__((always_inline)) int guard_plan_holds(const guard_plan *p, const guard_call *c) {
  if (c->count < p->n_args) return 0;
  uint64_t off = 0;   /* the words ORed: one branch, not one a word */
  for (int w = 0; w < GUARD_FACT_WORDS; w++) off |= (c->facts[w] & p->facts_mask[w]) ^ p->facts_want[w];
  for (int w = 0; w < GUARD_PAIR_WORDS; w++) off |= (c->apart[w] & p->apart[w]) ^ p->apart[w];
  if (off) return 0;
  uintptr_t misaligned = 0;
  int short_rank = p->never;
  for (int a = 0; a < p->n_args; a++) {
    misaligned |= c->data[a] & p->align[a];
    short_rank |= c->args[a].rank < p->rank_min[a];
  }
  if (misaligned || short_rank) return 0;
  for (int k = 0; k < p->n_tests; k++) {
    const guard_test *t = &p->tests[k];
    int64_t v = (int64_t)((uint64_t)GUARD_AT(c, t->value_at) - ((uint64_t)GUARD_AT(c, t->other_at) & t->other_mask));
    if (v < t->lo || v > t->hi || ((uint64_t)v & t->mask) || (t->modulus && v % t->modulus)) return 0;
  }
  return !p->n_exprs || guard_plan_exprs_hold(p, c);
}

#endif
