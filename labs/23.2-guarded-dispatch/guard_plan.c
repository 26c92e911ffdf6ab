/* guard_plan.c: guard sets compiled for the hot path (lab 23.2).
 * The runtime's optimisation, not student work: the facts of a call are
 * computed once per call, and each variant's set, compiled once, becomes a
 * mask test, an address test and a few integer tests. Every helper here
 * states the same condition as guard_check does. guard_call_init (guard.h)
 * lives here, so that a call's facts are computed in the same pass that
 * copies its views. Chapter 23.2, "Making guards cheap". */
#include <stddef.h>
#include <string.h>
#include "guard_plan.h"

/* The facts word's layout is in guard_plan.h (GUARD_FACT_*). */
enum {
  FACT_DTYPES = GUARD_FACT_DTYPES,
  FACT_RANK = GUARD_FACT_RANK,
  FACT_CONTIGUOUS = GUARD_FACT_CONTIGUOUS,
  FACT_ARG_BITS = GUARD_FACT_ARG_BITS,
  FACT_PAIRS = GUARD_FACT_PAIRS,
  FACT_NEVER = GUARD_FACT_NEVER
};
_Static_assert(sizeof(guard_call) <= UINT16_MAX, "offsets in a call fit 16 bits");
_Static_assert(FACT_PAIRS + GUARD_MAX_ARGS * (GUARD_MAX_ARGS - 1) / 2 <= FACT_NEVER, "the facts fit one word");

enum { OP_FACT, OP_ALIGN, OP_TEST };

static uint64_t bit(int k) { return (uint64_t)1 << k; }
static uint64_t arg_fact(int arg, int k) { return guard_fact_arg(arg, k); }
static uint64_t pair_fact(int a, int b) { return guard_fact_disjoint(a, b); }

/* ---- Facts: the conditions of guard_check's contiguity and disjointness. */

static inline int contiguous(const uopc_tensor *x) {
  int64_t expected = 1;
  for (int i = x->rank - 1; i >= 0; i--) {
    if (x->shape[i] == 0) return 1;
    if (x->shape[i] == 1) continue;
    if (x->strides[i] != expected) return 0;
    expected *= x->shape[i];
  }
  return 1;
}

/* [*lo, *hi) are the bytes x reaches from element 0 at address p; empty: 0. */
static inline int byte_range(const uopc_tensor *x, uintptr_t p, uintptr_t *lo, uintptr_t *hi) {
  int64_t first = 0, last = 0;
  *lo = *hi = p;
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

/* The facts of view x, argument a with element 0 at p, and its byte range
 * (*reaches = 0: none). A vector, the common case, is guard_vector_facts. */
static inline __attribute__((always_inline)) uint64_t arg_facts(const uopc_tensor *x, int a, uintptr_t p,
                                                                 int *reaches, uintptr_t *lo, uintptr_t *hi) {
  if (x->rank != 1) {
    uint64_t facts = (unsigned)x->dtype < FACT_DTYPES ? arg_fact(a, (int)x->dtype) : 0;
    if ((unsigned)x->rank <= UOPC_MAX_RANK) facts |= arg_fact(a, FACT_RANK + x->rank);
    if (contiguous(x)) facts |= arg_fact(a, FACT_CONTIGUOUS);
    *reaches = byte_range(x, p, lo, hi);
    return facts;
  }
  return guard_vector_facts(x, a, p, reaches, lo, hi);
}

/* The disjointness bits of every pair of arguments. */
static inline __attribute__((always_inline)) uint64_t pair_facts(int count, const int *reaches, const uintptr_t *lo, const uintptr_t *hi) {
  uint64_t facts = 0;
  for (int a = 0; a < count; a++)
    for (int b = a + 1; b < count; b++) {
      int apart = !reaches[a] || !reaches[b] || hi[a] <= lo[b] || hi[b] <= lo[a];
      facts |= apart ? pair_fact(a, b) : 0;
    }
  return facts;
}

uint64_t guard_facts_compute(const guard_call *c) {
  int reaches[GUARD_MAX_ARGS];
  uintptr_t lo[GUARD_MAX_ARGS], hi[GUARD_MAX_ARGS];
  uint64_t facts = 0;
  for (int a = 0; a < c->count; a++) facts |= arg_facts(&c->args[a], a, c->data[a], &reaches[a], &lo[a], &hi[a]);
  return facts | pair_facts(c->count, reaches, lo, hi);
}

/* ---- The call: the views, their addresses and the facts in one pass. */

/* The fields of x that make the view; a call's record is written on every
 * call, and the axes past its rank (most of the struct) mean nothing. */
static inline __attribute__((always_inline)) void copy_view(uopc_tensor *to, const uopc_tensor *x) {
  to->storage = x->storage;
  to->dtype = x->dtype;
  to->rank = x->rank;
  to->offset = x->offset;
  to->shape[0] = x->shape[0];
  to->strides[0] = x->strides[0];
  for (int i = 1; i < x->rank && i < UOPC_MAX_RANK; i++) {
    to->shape[i] = x->shape[i];
    to->strides[i] = x->strides[i];
  }
}

/* Argument i of the call: its view, address and facts, read from the tensor
 * itself rather than back from the copy. */
static inline __attribute__((always_inline)) uint64_t take_arg(guard_call *c, int i, const uopc_tensor *x,
                                                                int *reaches, uintptr_t *lo, uintptr_t *hi) {
  uintptr_t p = (uintptr_t)uopc_tensor_data(x);
  copy_view(&c->args[i], x);
  c->data[i] = p;
  return arg_facts(x, i, p, reaches, lo, hi);
}

int guard_call_init(guard_call *c, int count, const uopc_tensor *const *args, uopc_error *err) {
  if (count < 1 || count > GUARD_MAX_ARGS)
    return UOPC_FAIL(err, UOPC_E_INVALID, "a call has 1 to %d arguments, not %d", GUARD_MAX_ARGS, count);
  for (int i = 0; i < count; i++)
    if (!args[i] || !args[i]->storage) return UOPC_FAIL(err, UOPC_E_INVALID, "argument %d is NULL or released", i);
  int reaches[GUARD_MAX_ARGS];
  uintptr_t lo[GUARD_MAX_ARGS], hi[GUARD_MAX_ARGS];
  uint64_t facts;
  c->count = count;
  if (count == 2) {   /* out and x: unrolled */
    facts = take_arg(c, 0, args[0], &reaches[0], &lo[0], &hi[0]) | take_arg(c, 1, args[1], &reaches[1], &lo[1], &hi[1]);
    c->facts = facts | pair_facts(2, reaches, lo, hi);
    return UOPC_OK;
  }
  facts = 0;
  for (int i = 0; i < count; i++) facts |= take_arg(c, i, args[i], &reaches[i], &lo[i], &hi[i]);
  c->facts = facts | pair_facts(count, reaches, lo, hi);
  return UOPC_OK;
}

/* ---- Compiling. */

static int unsupported(const guard *g, int k, uopc_error *err) {
  return UOPC_FAIL(err, UOPC_E_UNSUPPORTED, "guard %d ('%s', kind %d) has no compiled form; the set is interpreted",
                   k, g->what, (int)g->kind);
}

/* The fact a dtype or rank guard needs; FACT_NEVER for a value no call has. */
static uint64_t value_fact(const guard *g) {
  if (g->kind == GUARD_RANK)
    return g->value >= 0 && g->value <= UOPC_MAX_RANK ? arg_fact(g->arg, FACT_RANK + (int)g->value) : bit(FACT_NEVER);
  for (int dt = 0; dt < FACT_DTYPES; dt++)   /* the comparison guard_check makes */
    if ((uopc_dtype)g->value == (uopc_dtype)dt) return arg_fact(g->arg, dt);
  return bit(FACT_NEVER);
}

/* Where args[arg].shape[axis] (or .strides[axis]) and args[arg].rank are in a call. */
static uint16_t value_at(int arg, int axis, int stride) {
  size_t field = stride ? offsetof(uopc_tensor, strides) : offsetof(uopc_tensor, shape);
  return (uint16_t)(offsetof(guard_call, args) + (size_t)arg * sizeof(uopc_tensor) + field +
                    (size_t)axis * sizeof(int64_t));
}

static uint16_t rank_at(int arg) {
  return (uint16_t)(offsetof(guard_call, args) + (size_t)arg * sizeof(uopc_tensor) + offsetof(uopc_tensor, rank));
}

/* A test that args[g->arg]'s value on g->axis is in [lo, hi] and a multiple of m (m >= 1). */
static guard_test range_test(guard_test_kind kind, const guard *g, int64_t lo, int64_t hi, int64_t m) {
  int pow2 = (m & (m - 1)) == 0;
  return (guard_test){.lo = lo, .hi = hi, .mask = pow2 ? (uint64_t)(m - 1) : 0, .modulus = pow2 ? 0 : m,
                      .value_at = value_at(g->arg, g->axis, kind == GUARD_TEST_STRIDE), .rank_at = rank_at(g->arg),
                      .other_at = value_at(g->arg, g->axis, kind == GUARD_TEST_STRIDE), .other_mask = 0,
                      .kind = (uint8_t)kind, .axis = (uint8_t)g->axis};
}

static int axis_ok(int axis) { return axis >= 0 && axis < UOPC_MAX_RANK; }

/* The test of an integer guard; 0 when the guard has no compiled form. */
static int integer_test(const guard *g, guard_test *t) {
  switch (g->kind) {
  case GUARD_DIVISIBLE:
    if (!axis_ok(g->axis) || g->value < 1) return 0;
    *t = range_test(GUARD_TEST_SHAPE, g, INT64_MIN, INT64_MAX, g->value);
    return 1;
  case GUARD_DIM_BOUNDS:
    if (!axis_ok(g->axis) || g->dim.multiple_of < 1) return 0;
    *t = range_test(GUARD_TEST_SHAPE, g, g->dim.lo, g->dim.hi, g->dim.multiple_of);
    return 1;
  case GUARD_STRIDE:
    if (!axis_ok(g->axis)) return 0;
    *t = range_test(GUARD_TEST_STRIDE, g, g->value, g->value, 1);
    return 1;
  case GUARD_DIMS_EQUAL:   /* the difference is 0 */
    if (!axis_ok(g->axis) || !axis_ok(g->axis2)) return 0;
    *t = range_test(GUARD_TEST_DIMS_EQUAL, g, 0, 0, 1);
    t->axis2 = (uint8_t)g->axis2;
    t->other_at = value_at(g->arg2, g->axis2, 0);
    t->other_rank_at = rank_at(g->arg2);
    t->other_mask = ~(uint64_t)0;
    return 1;
  default:
    return 0;
  }
}

/* Every axis g's test reads must exist before the fast tests read it. */
static void need_axes(guard_plan *p, const guard *g) {
  if (p->rank_min[g->arg] < g->axis + 1) p->rank_min[g->arg] = g->axis + 1;
  if (g->kind == GUARD_DIMS_EQUAL && p->rank_min[g->arg2] < g->axis2 + 1) p->rank_min[g->arg2] = g->axis2 + 1;
}

/* Adds t to the fast tests, merged into an earlier test of the same value
 * (bounds and a power-of-two multiple of n become one range and one mask).
 * All tests hold exactly when all merged ones do; a merged test that fails
 * does not say which of its guards failed, so it is not exact, and the slow
 * half finds the guard. Tests keep the set order of their first guard, so an
 * exact test still fails first only when every guard before it held. */
static void merge_fast(guard_plan *p, const guard_test *t) {
  for (int f = 0; f < p->n_fast; f++) {
    guard_test *m = &p->fast[f];
    if (m->value_at != t->value_at || m->other_at != t->other_at || m->other_mask != t->other_mask || m->modulus ||
        t->modulus)
      continue;
    m->lo = m->lo > t->lo ? m->lo : t->lo;
    m->hi = m->hi < t->hi ? m->hi : t->hi;
    m->mask |= t->mask;   /* v & a == 0 and v & b == 0 iff v & (a | b) == 0 */
    m->exact = 0;
    return;
  }
  p->fast[p->n_fast++] = *t;
}

/* Compiles guard k of s into p's op k (and p's summary). */
static int compile_guard(const guard_set *s, int k, guard_plan *p, uopc_error *err) {
  const guard *g = &s->guards[k];
  guard_op *op = &p->ops[k];
  if (g->arg < 0 || g->arg >= s->n_args || g->arg2 < 0 || g->arg2 >= s->n_args) return unsupported(g, k, err);
  op->arg = (uint8_t)g->arg;
  switch (g->kind) {
  case GUARD_DTYPE: case GUARD_RANK:
    op->kind = OP_FACT;
    op->bits = value_fact(g);
    break;
  case GUARD_CONTIGUOUS:
    op->kind = OP_FACT;
    op->bits = arg_fact(g->arg, FACT_CONTIGUOUS);
    break;
  case GUARD_DISJOINT:
    if (g->arg == g->arg2) return unsupported(g, k, err);
    op->kind = OP_FACT;
    op->bits = pair_fact(g->arg, g->arg2);
    break;
  case GUARD_ALIGNED:
    if (g->value < 1) return unsupported(g, k, err);
    op->kind = OP_ALIGN;
    op->bits = (uintptr_t)(g->value - 1);   /* guard_check's mask */
    p->align[g->arg] |= (uintptr_t)op->bits;
    return UOPC_OK;
  default: {
    guard_test *t = &p->tests[p->n_tests];
    if (!integer_test(g, t)) return unsupported(g, k, err);
    t->guard = (uint8_t)k;
    t->exact = k == p->n_tests;   /* the guards before it are all tests */
    need_axes(p, g);
    merge_fast(p, t);
    op->kind = OP_TEST;
    op->test = (uint8_t)p->n_tests++;
    return UOPC_OK;
  }
  }
  p->need |= op->bits;
  return UOPC_OK;
}

int guard_plan_compile(const guard_set *s, guard_plan *p, uopc_error *err) {
  memset(p, 0, sizeof *p);
  if (s->n_args < 1 || s->n_args > GUARD_MAX_ARGS || s->count < 0 || s->count > GUARD_SET_MAX)
    return UOPC_FAIL(err, UOPC_E_UNSUPPORTED, "a set over %d arguments with %d guards has no compiled form",
                     s->n_args, s->count);
  p->n_args = s->n_args;
  p->count = s->count;
  for (int k = 0; k < s->count; k++) {
    int rc = compile_guard(s, k, p, err);
    if (rc) return rc;
  }
  return UOPC_OK;
}

/* ---- Checking: the summary failed, so one guard at least fails. */

int guard_plan_first_failure(const guard_plan *p, const guard_call *call) {
  for (int k = 0; k < p->count; k++) {
    const guard_op *op = &p->ops[k];
    int holds = op->kind == OP_FACT ? (call->facts & op->bits) == op->bits
              : op->kind == OP_ALIGN ? (call->data[op->arg] & (uintptr_t)op->bits) == 0
              : guard_test_holds(&p->tests[op->test], call);
    if (!holds) return k;
  }
  return -1;
}

int guard_plan_count_error(const guard_plan *p, const guard_call *call, uopc_error *err) {
  return UOPC_FAIL(err, UOPC_E_INVALID, "a call with %d arguments checked against a set over %d", call->count,
                   p->n_args);
}
