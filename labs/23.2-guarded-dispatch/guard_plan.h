/* guard_plan.h: guard sets compiled for the hot path (lab 23.2).
 * guard_set_check interprets a set: a switch per guard, and the contiguity
 * and overlap loops run again for every variant a call is checked against. A
 * plan is the same set compiled once, when its variant is built. The call's
 * boolean facts (dtypes, ranks, contiguity, disjointness) are computed once
 * per call, by guard_call_init, into one word, so each such guard becomes a
 * bit of a mask; alignment guards become one address mask per argument; the
 * rest (bounds, multiples, equal dims, strides) become integer tests, kept in
 * set order. A plan gives exactly guard_set_check's answer (tests/23.2 holds
 * it to that on random calls), and is derived from the set alone: a guard
 * removed from the set is gone from the plan. Nothing here is student work.
 * Chapter 23.2, "Making guards cheap". */
#ifndef GUARD_PLAN_H
#define GUARD_PLAN_H

#include "guard.h"

/* One integer test: the value at byte value_at of the call (a shape or a
 * stride of one argument, minus a second argument's dim for DIMS_EQUAL) lies
 * in [lo, hi], has the bits of mask clear and is a multiple of modulus (0:
 * any). Offsets instead of (argument, axis, field) spare the hot path the
 * index arithmetic; the axes are still checked against the ranks, since a
 * missing axis fails the test, as it fails the guard. */
typedef enum guard_test_kind { GUARD_TEST_SHAPE, GUARD_TEST_STRIDE, GUARD_TEST_DIMS_EQUAL } guard_test_kind;

typedef struct guard_test {
  int64_t lo, hi;
  uint64_t mask;            /* m - 1 for a multiple m that is a power of two */
  int64_t modulus;          /* any other multiple */
  uint16_t value_at, rank_at;       /* offsets in guard_call */
  uint16_t other_at, other_rank_at; /* DIMS_EQUAL's second dim; other_at 0: none */
  uint8_t kind, axis, axis2;
  uint8_t guard;            /* its index in the set */
  uint8_t after_facts;      /* 1: a fact or alignment guard comes before it */
} guard_test;

/* How one guard is checked when the summary fails and the first failing
 * guard must be found: a fact bit, an address mask, or a test. */
typedef struct guard_op {
  uint64_t bits;          /* FACT: the fact's bit; ALIGN: the address mask */
  uint8_t kind, arg, test;
} guard_op;

typedef struct guard_plan {
  int n_args;
  int n_tests;
  uint64_t need;                       /* facts every fact guard needs */
  uintptr_t align[GUARD_MAX_ARGS];     /* data[a] & align[a] must be 0 */
  guard_test tests[GUARD_SET_MAX];     /* in set order */
  int count;
  guard_op ops[GUARD_SET_MAX];         /* one per guard, in set order */
} guard_plan;

/* Compiles s into *p. Every kind the adders make compiles; a guard they
 * could not have made (an unknown kind, an argument outside the set, a
 * multiple below 1) is UOPC_E_UNSUPPORTED, and its set is checked by
 * guard_set_check alone. */
int guard_plan_compile(const guard_set *s, guard_plan *p, uopc_error *err);

/* The facts word of a call whose views and addresses are filled in
 * (guard_call_init calls it). */
uint64_t guard_facts_compute(const guard_call *c);

/* The first guard of p that fails for call, -1 when all hold; the slow half
 * of guard_plan_check. */
int guard_plan_first_failure(const guard_plan *p, const guard_call *call);

/* The error of a call with fewer arguments than the plan's set. */
int guard_plan_count_error(const guard_plan *p, const guard_call *call, uopc_error *err);

#define GUARD_PLAN_AT(c, type, at) (*(const type *)((const char *)(c) + (at)))

static inline __attribute__((always_inline)) int guard_test_holds(const guard_test *t, const guard_call *c) {
  if (t->axis >= GUARD_PLAN_AT(c, int, t->rank_at)) return 0;
  int64_t v = GUARD_PLAN_AT(c, int64_t, t->value_at);
  if (t->other_at) {   /* unsigned: any two int64 values subtract */
    if (t->axis2 >= GUARD_PLAN_AT(c, int, t->other_rank_at)) return 0;
    v = (int64_t)((uint64_t)v - (uint64_t)GUARD_PLAN_AT(c, int64_t, t->other_at));
  }
  return v >= t->lo && v <= t->hi && ((uint64_t)v & t->mask) == 0 && (t->modulus == 0 || v % t->modulus == 0);
}

/* guard_set_check(s, call, failed, NULL, err) for the set p was compiled
 * from, and the same errors; call comes from guard_call_init. Inline: it runs
 * for every variant of every call. The tests go first, since they tell
 * variants apart: a failing test is the first failing guard unless a fact or
 * alignment guard comes before it; when the tests hold, the facts and
 * addresses decide. The slow half finds the first failure otherwise. */
static inline __attribute__((always_inline)) int guard_plan_check(const guard_plan *p, const guard_call *call,
                                                                  int *failed, uopc_error *err) {
  if (call->count < p->n_args) return guard_plan_count_error(p, call, err);
  for (int t = 0; t < p->n_tests; t++)
    if (!guard_test_holds(&p->tests[t], call)) {
      *failed = p->tests[t].after_facts ? guard_plan_first_failure(p, call) : p->tests[t].guard;
      return UOPC_OK;
    }
  uintptr_t misaligned = 0;
  for (int a = 0; a < p->n_args; a++) misaligned |= call->data[a] & p->align[a];
  *failed = (call->facts & p->need) != p->need || misaligned ? guard_plan_first_failure(p, call) : -1;
  return UOPC_OK;
}

#endif
