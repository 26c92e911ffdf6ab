/* vguard.h: guards as predicates over the expressions of a call (lab 23.2,
 * given code; the variant cache's guards, vcache.h).
 * A call is a list of tensors (outputs, then inputs). A guard reads its
 * dtypes, ranks, addresses, and its sites: one extent or stride of one
 * argument ("x.shape[0]", "x.strides[1]"). The predicates are those a
 * specialisation rests on: a dtype, a rank, contiguity, alignment,
 * disjointness, a site within bounds or equal to a value (the 0/1
 * specialisations, an exact size), a multiple, two sites equal (one dim read
 * at two places: equal sizes are never assumed equal), and a site equal to
 * an expression over the set's dims (an output extent the graph computes).
 * A set keeps its guards as data, for texts and reasons, and compiles them
 * once for the hot path: the call's dtypes, ranks and contiguity are one
 * word of facts, its disjoint pairs another, and each integer guard a test
 * at a precomputed offset of the call. Chapter 23.2, "One variant cache for
 * every graph". */
#ifndef VGUARD_H
#define VGUARD_H

#include <stdint.h>
#include "sym_expr.h"

#define VGUARD_MAX_ARGS 8
#define VGUARD_TEXT_MAX 160     /* a description, NUL included */
#define VGUARD_REASON_MAX 256   /* a failure's reason, NUL included */

typedef enum vguard_field { VGUARD_SHAPE, VGUARD_STRIDE } vguard_field;

/* args[arg].shape[axis] or args[arg].strides[axis]. */
typedef struct vguard_site {
  int arg;
  vguard_field field;
  int axis;
} vguard_site;

typedef enum vguard_kind {
  VGUARD_DTYPE,       /* args[arg] has dtype value */
  VGUARD_RANK,        /* args[arg] has rank value */
  VGUARD_CONTIGUOUS,  /* args[arg] is row-major contiguous (size-1 axes ignored) */
  VGUARD_ALIGNED,     /* element 0 of args[arg] is at a multiple of value bytes */
  VGUARD_DISJOINT,    /* args[arg] and args[arg2] reach no common byte */
  VGUARD_RANGE,       /* lo <= site <= hi; lo == hi pins a value */
  VGUARD_DIVISIBLE,   /* site is a multiple of value */
  VGUARD_EQUAL,       /* site == site2 */
  VGUARD_EXPR         /* site == expr, each dim of expr read at its own site */
} vguard_kind;

typedef struct vguard {
  vguard_kind kind;
  int arg, arg2;                 /* DISJOINT's pair; arg is site.arg for the others */
  vguard_site site, site2;
  int64_t value, lo, hi;
  const sym_expr *expr;          /* EXPR: borrowed, outlives the set */
  char what[VGUARD_TEXT_MAX];    /* "y.shape[0] == x.shape[0]" */
} vguard;

/* One argument as the guards see it: what a view means, copied. */
typedef struct vguard_view {
  uopc_dtype dtype;
  int rank;
  int64_t shape[UOPC_MAX_RANK];
  int64_t strides[UOPC_MAX_RANK];
} vguard_view;

/* One call, read once (vguard_call_init): the views, element 0's
 * addresses, and the facts every compiled set tests. A copy stays
 * checkable after the tensors are released (explain rechecks it). */
typedef struct vguard_call {
  int count;
  vguard_view args[VGUARD_MAX_ARGS];
  uintptr_t data[VGUARD_MAX_ARGS];
  uint64_t facts;     /* 8 bits per argument: dtype (3), rank (4), contiguous (1) */
  uint32_t apart;     /* one bit per pair of arguments that reach no common byte */
} vguard_call;

/* One integer guard compiled: the value at byte value_at of the call, minus
 * the one at other_at when other_mask is ~0 (EQUAL), lies in [lo, hi] and
 * has the bits of mask clear and is a multiple of modulus (0: any). */
typedef struct vguard_test {
  uint32_t value_at, other_at;
  uint64_t other_mask, mask;
  int64_t lo, hi, modulus;
} vguard_test;

typedef struct vguard_set {
  int n_args;
  char names[VGUARD_MAX_ARGS][SYM_NAME_MAX];   /* "out0", "x", ... for the texts */
  int count, cap;
  vguard *guards;                              /* owned; checked in this order */
  int n_dims;                                  /* what EXPR guards read */
  sym_dim dims[SYM_BINDING_MAX];
  vguard_site dim_sites[SYM_BINDING_MAX];
  /* The compiled form, made by vguard_set_compile. */
  int compiled;
  int never;                                   /* two guards want different values of one fact */
  uint64_t facts_mask, facts_want;
  uint32_t apart;
  uintptr_t align[VGUARD_MAX_ARGS];            /* data[a] & align[a] must be 0 */
  int rank_min[VGUARD_MAX_ARGS];               /* every site a test reads exists */
  int n_tests;
  vguard_test *tests;                          /* owned */
  int n_exprs;                                 /* EXPR guards: interpreted */
} vguard_set;

typedef struct vguard_reason {
  char text[VGUARD_REASON_MAX];   /* "y.shape[0] = 7 differs from x.shape[0] = 5" */
} vguard_reason;

/* ---- Calls. */

/* Fills *c from count tensors (views copied; nothing retained) and computes
 * its facts. Errors: UOPC_E_INVALID (count outside [1, VGUARD_MAX_ARGS], a
 * NULL or released tensor, naming its position). */
int vguard_call_init(vguard_call *c, int count, const uopc_tensor *const *args, uopc_error *err);

/* 1 when args[arg] of c is row-major contiguous (a fact of the call). */
int vguard_call_contiguous(const vguard_call *c, int arg);

/* The value at site s of c; the axis must exist. */
int64_t vguard_site_value(const vguard_call *c, vguard_site s);

/* "x.shape[0]", from the set's argument names. */
void vguard_site_format(const vguard_set *s, vguard_site at, char *buf, size_t size);

/* ---- Building a set. Each adder appends one guard with its description.
 * Common errors: UOPC_E_INVALID (an argument or axis outside the set, a bad
 * value, naming it), UOPC_E_NOMEM. */

/* An empty set over n_args arguments named names[0..n_args). The caller
 * frees it with vguard_set_fini. */
int vguard_set_init(vguard_set *s, int n_args, const char *const *names, uopc_error *err);
void vguard_set_fini(vguard_set *s);

int vguard_add_dtype(vguard_set *s, int arg, uopc_dtype dt, uopc_error *err);
int vguard_add_rank(vguard_set *s, int arg, int rank, uopc_error *err);
int vguard_add_contiguous(vguard_set *s, int arg, uopc_error *err);
/* bytes: a power of two. */
int vguard_add_aligned(vguard_set *s, int arg, int64_t bytes, uopc_error *err);
int vguard_add_disjoint(vguard_set *s, int arg, int arg2, uopc_error *err);
/* lo <= at <= hi. name (may be NULL) is the dim read there, for the text:
 * "n = x.shape[0] in [2, 4096]"; lo == hi reads "x.shape[1] == 1". */
int vguard_add_range(vguard_set *s, const char *name, vguard_site at, int64_t lo, int64_t hi,
                     uopc_error *err);
/* "n = x.shape[0] is a multiple of 16". */
int vguard_add_divisible(vguard_set *s, const char *name, vguard_site at, int64_t multiple,
                         uopc_error *err);
/* "y.shape[0] == x.shape[0]". */
int vguard_add_equal(vguard_set *s, vguard_site at, vguard_site to, uopc_error *err);
/* Declares that dim d is read at site at, for EXPR guards.
 * Errors: UOPC_E_LIMIT (SYM_BINDING_MAX dims). */
int vguard_add_dim(vguard_set *s, const sym_dim *d, vguard_site at, uopc_error *err);
/* "out0.shape[0] == n - 1": e over dims declared by vguard_add_dim. */
int vguard_add_expr(vguard_set *s, vguard_site at, const sym_expr *e, uopc_error *err);

/* Compiles the set for vguard_set_holds (again after more guards).
 * Errors: UOPC_E_NOMEM. */
int vguard_set_compile(vguard_set *s, uopc_error *err);

/* ---- Checking. */

/* The EXPR guards of s hold for c (interpreted: vguard_set_holds' slow part). */
int vguard_set_exprs_hold(const vguard_set *s, const vguard_call *c);

#define VGUARD_AT(c, at) (*(const int64_t *)((const char *)(c) + (at)))

/* The hot path: 1 when every guard of compiled set s holds for c, else 0.
 * Formats nothing; a call with fewer arguments than the set fails. Inline:
 * a call checks it for every variant before the one that runs. */
static inline int vguard_set_holds(const vguard_set *s, const vguard_call *c) {
  if (c->count < s->n_args || s->never || (c->facts & s->facts_mask) != s->facts_want ||
      (c->apart & s->apart) != s->apart)
    return 0;
  for (int a = 0; a < s->n_args; a++)
    if ((c->data[a] & s->align[a]) || c->args[a].rank < s->rank_min[a]) return 0;
  for (int k = 0; k < s->n_tests; k++) {
    const vguard_test *t = &s->tests[k];
    int64_t v = (int64_t)((uint64_t)VGUARD_AT(c, t->value_at) - ((uint64_t)VGUARD_AT(c, t->other_at) & t->other_mask));
    if (v < t->lo || v > t->hi || ((uint64_t)v & t->mask) || (t->modulus && v % t->modulus)) return 0;
  }
  return !s->n_exprs || vguard_set_exprs_hold(s, c);
}

/* The reference, guard by guard in order: *failed = the first that fails,
 * or -1; why (when not NULL) says what it found, with the actual values.
 * vguard_set_holds gives (*failed < 0) on every call (tests/23.2 checks).
 * Errors: UOPC_E_INVALID (a call with fewer arguments than the set). */
int vguard_set_first_failure(const vguard_set *s, const vguard_call *c, int *failed, vguard_reason *why,
                             uopc_error *err);

/* "x is f32; x has rank 1; ..." joined with sep, truncated to size. */
void vguard_set_describe(const vguard_set *s, const char *sep, char *buf, size_t size);

#endif
