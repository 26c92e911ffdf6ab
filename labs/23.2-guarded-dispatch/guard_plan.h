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

/* The facts word (guard_facts_compute): per argument a, GUARD_FACT_ARG_BITS
 * bits from a * GUARD_FACT_ARG_BITS (one per dtype, one per rank 0..
 * UOPC_MAX_RANK, contiguity); then one bit per pair of arguments that reach no
 * common byte; the top bit is never set, for a guard that can never hold.
 * Public so that a caller can answer its own argument checks from the word. */
enum {
  GUARD_FACT_DTYPES = UOPC_I64 + 1,   /* bool has no bit: see guard_fact_dtype */
  GUARD_FACT_RANK = GUARD_FACT_DTYPES,
  GUARD_FACT_CONTIGUOUS = GUARD_FACT_RANK + UOPC_MAX_RANK + 1,
  GUARD_FACT_ARG_BITS = GUARD_FACT_CONTIGUOUS + 1,
  GUARD_FACT_PAIRS = GUARD_MAX_ARGS * GUARD_FACT_ARG_BITS,
  GUARD_FACT_NEVER = 63
};

static inline uint64_t guard_fact_arg(int arg, int k) { return (uint64_t)1 << (arg * GUARD_FACT_ARG_BITS + k); }
/* args[arg] has dtype dt (a uopc_dtype), rank r in [0, UOPC_MAX_RANK], is contiguous. */
static inline uint64_t guard_fact_dtype(int arg, uopc_dtype dt) { return guard_fact_arg(arg, (int)dt); }
static inline uint64_t guard_fact_rank(int arg, int r) { return guard_fact_arg(arg, GUARD_FACT_RANK + r); }
static inline uint64_t guard_fact_contiguous(int arg) { return guard_fact_arg(arg, GUARD_FACT_CONTIGUOUS); }
/* args[a] and args[b] (a != b) reach no common byte. */
static inline uint64_t guard_fact_disjoint(int a, int b) {
  int lo = a < b ? a : b, hi = a < b ? b : a;
  return (uint64_t)1 << (GUARD_FACT_PAIRS + lo * (2 * GUARD_MAX_ARGS - lo - 1) / 2 + (hi - lo - 1));
}

/* One integer test: the value at byte value_at of the call (a shape or a
 * stride of one argument, minus a second argument's dim for DIMS_EQUAL) lies
 * in [lo, hi], has the bits of mask clear and is a multiple of modulus (0:
 * any). Offsets instead of (argument, axis, field) spare the hot path the
 * index arithmetic. other_mask is ~0 for DIMS_EQUAL and 0 otherwise (then
 * other_at is value_at), so that one expression serves every kind. */
typedef enum guard_test_kind { GUARD_TEST_SHAPE, GUARD_TEST_STRIDE, GUARD_TEST_DIMS_EQUAL } guard_test_kind;

typedef struct guard_test {
  int64_t lo, hi;
  uint64_t mask;            /* m - 1 for a multiple m that is a power of two */
  int64_t modulus;          /* any other multiple */
  uint64_t other_mask;
  uint16_t value_at, rank_at;       /* offsets in guard_call */
  uint16_t other_at, other_rank_at; /* DIMS_EQUAL's second dim */
  uint8_t kind, axis, axis2;
  uint8_t guard;            /* its index in the set (a merged test: its first guard's) */
  uint8_t exact;            /* 1: when it fails, guard is the first failing guard */
} guard_test;

/* How one guard is checked when the summary fails and the first failing
 * guard must be found: a fact bit, an address mask, or a test. */
typedef struct guard_op {
  uint64_t bits;          /* FACT: the fact's bit; ALIGN: the address mask */
  uint8_t kind, arg, test;
} guard_op;

/* The hot path reads need, align, rank_min and the merged tests; the slow
 * half reads ops and tests, one per guard, in set order. */
typedef struct guard_plan {
  int n_args;
  int n_fast;
  uint64_t need;                       /* facts every fact guard needs */
  uintptr_t align[GUARD_MAX_ARGS];     /* data[a] & align[a] must be 0 */
  int rank_min[GUARD_MAX_ARGS];        /* every test's axis of args[a] exists */
  guard_test fast[GUARD_SET_MAX];      /* the tests, those on one value merged */
  int n_tests;
  guard_test tests[GUARD_SET_MAX];     /* one per integer guard, in set order */
  int count;
  guard_op ops[GUARD_SET_MAX];         /* one per guard, in set order */
} guard_plan;

/* Compiles s into *p. Every kind the adders make compiles; a guard they
 * could not have made (an unknown kind, an argument outside the set, a
 * multiple below 1) is UOPC_E_UNSUPPORTED, and its set is checked by
 * guard_set_check alone. */
int guard_plan_compile(const guard_set *s, guard_plan *p, uopc_error *err);

/* The facts word of a call whose views and addresses are filled in
 * (guard_call_init computes the same). */
uint64_t guard_facts_compute(const guard_call *c);

/* The first guard of p that fails for call, -1 when all hold; the slow half
 * of guard_plan_check. */
int guard_plan_first_failure(const guard_plan *p, const guard_call *call);

/* The error of a call with fewer arguments than the plan's set. */
int guard_plan_count_error(const guard_plan *p, const guard_call *call, uopc_error *err);

/* ---- The call record of the hot path: two vectors, inline. */

/* The facts of vector (rank 1) x, argument a with element 0 at p, and the
 * bytes [*lo, *hi) it reaches (*reaches = 0: none); no loop, and no branch
 * on its values. guard_call_init computes a vector's facts with it too. */
static inline __attribute__((always_inline)) uint64_t guard_vector_facts(const uopc_tensor *x, int a, uintptr_t p,
                                                                         int *reaches, uintptr_t *lo, uintptr_t *hi) {
  int64_t n = x->shape[0], stride = x->strides[0], size = (int64_t)uopc_dtype_size(x->dtype);
  int64_t reach = (n - 1) * stride * size;
  uint64_t facts = (unsigned)x->dtype < GUARD_FACT_DTYPES ? guard_fact_dtype(a, x->dtype) : 0;
  int packed = n == 0 || n == 1 || stride == 1;
  facts |= guard_fact_rank(a, 1) | (uint64_t)packed << (a * GUARD_FACT_ARG_BITS + GUARD_FACT_CONTIGUOUS);
  *reaches = n != 0;
  *lo = p + (uintptr_t)(reach < 0 ? reach : 0);
  *hi = p + (uintptr_t)(reach < 0 ? 0 : reach) + (uintptr_t)size;
  return facts;
}

/* Argument a of c, a vector x with a storage: its view (what a view means,
 * as guard_call_init copies it), its address and its facts. */
static inline __attribute__((always_inline)) uint64_t guard_call_vector(guard_call *c, int a, const uopc_tensor *x,
                                                                        int *reaches, uintptr_t *lo, uintptr_t *hi) {
  uopc_tensor *to = &c->args[a];
  uintptr_t p = (uintptr_t)uopc_tensor_data(x);
  to->storage = x->storage;
  to->dtype = x->dtype;
  to->rank = 1;
  to->offset = x->offset;
  to->shape[0] = x->shape[0];
  to->strides[0] = x->strides[0];
  c->data[a] = p;
  return guard_vector_facts(x, a, p, reaches, lo, hi);
}

/* guard_call_init(c, 2, {a, b}, err), the same record and facts, inline for
 * two vectors (a dispatcher's out and x); any other call goes to
 * guard_call_init. tests/23.2 holds the two to the same answer. */
static inline __attribute__((always_inline)) int guard_call_init_pair(guard_call *c, const uopc_tensor *a,
                                                                      const uopc_tensor *b, uopc_error *err) {
  if (!a || !b || !a->storage || !b->storage || a->rank != 1 || b->rank != 1) {
    const uopc_tensor *const args[2] = {a, b};
    return guard_call_init(c, 2, args, err);
  }
  int ra, rb;
  uintptr_t la, ha, lb, hb;
  uint64_t facts = guard_call_vector(c, 0, a, &ra, &la, &ha) | guard_call_vector(c, 1, b, &rb, &lb, &hb);
  int apart = !ra || !rb || ha <= lb || hb <= la;
  c->count = 2;
  c->facts = facts | (apart ? guard_fact_disjoint(0, 1) : 0);
  return UOPC_OK;
}

#define GUARD_PLAN_AT(c, type, at) (*(const type *)((const char *)(c) + (at)))

/* t's value on call; the axes it reads must exist (rank_min). Unsigned: any
 * two int64 values subtract. */
static inline __attribute__((always_inline)) int64_t guard_test_value(const guard_test *t, const guard_call *c) {
  uint64_t v = (uint64_t)GUARD_PLAN_AT(c, int64_t, t->value_at);
  return (int64_t)(v - ((uint64_t)GUARD_PLAN_AT(c, int64_t, t->other_at) & t->other_mask));
}

static inline __attribute__((always_inline)) int guard_test_value_holds(const guard_test *t, int64_t v) {
  return v >= t->lo && v <= t->hi && ((uint64_t)v & t->mask) == 0 && (t->modulus == 0 || v % t->modulus == 0);
}

/* The test on any call: an axis the argument lacks fails it, as it fails the guard. */
static inline int guard_test_holds(const guard_test *t, const guard_call *c) {
  if (t->axis >= GUARD_PLAN_AT(c, int, t->rank_at)) return 0;
  if (t->other_mask && t->axis2 >= GUARD_PLAN_AT(c, int, t->other_rank_at)) return 0;
  return guard_test_value_holds(t, guard_test_value(t, c));
}

/* guard_set_check(s, call, failed, NULL, err) for the set p was compiled
 * from, and the same errors; call comes from guard_call_init. Inline: it runs
 * for every variant of every call. One pass over the arguments checks their
 * addresses and that every axis a test reads exists; then the merged tests,
 * which tell variants apart, so they run first: a failing exact test is the
 * first failing guard. When the tests hold, one mask compare decides. The
 * slow half finds the first failure otherwise. */
static inline __attribute__((always_inline)) int guard_plan_check(const guard_plan *p, const guard_call *call,
                                                                  int *failed, uopc_error *err) {
  if (call->count < p->n_args) return guard_plan_count_error(p, call, err);
  uintptr_t misaligned = 0;
  int short_rank = 0;
  for (int a = 0; a < p->n_args; a++) {
    misaligned |= call->data[a] & p->align[a];
    short_rank |= call->args[a].rank < p->rank_min[a];
  }
  if (!short_rank)
    for (int t = 0; t < p->n_fast; t++) {
      const guard_test *f = &p->fast[t];
      if (!guard_test_value_holds(f, guard_test_value(f, call))) {
        *failed = f->exact ? f->guard : guard_plan_first_failure(p, call);
        return UOPC_OK;
      }
    }
  *failed = short_rank || (call->facts & p->need) != p->need || misaligned ? guard_plan_first_failure(p, call) : -1;
  return UOPC_OK;
}

#endif
