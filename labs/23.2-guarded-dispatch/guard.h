/* guard.h: guards as data (lab 23.2).
 * A guard is an executable check of one assumption that compiled code makes.
 * It reads a call, a list of tensors (outputs, then inputs): their dtypes,
 * ranks and addresses, and their sites, one extent or stride of one argument
 * ("x.shape[0]", "x.strides[1]"), never the elements, so a call can be
 * checked (and explained later) without touching its memory. The predicates
 * are those a specialisation rests on: a dtype, a rank, contiguity,
 * alignment, disjointness, a site within bounds or equal to a value, a
 * multiple, two sites equal (one dim read at two places: equal sizes are
 * never assumed equal), and a site equal to an expression of the set's dims
 * (an output extent a graph computes). Each guard carries a description,
 * and a failed check says why, with the actual values. A guard set is the
 * contract of one compiled variant; guard_plan.h compiles it for the hot
 * path, and the compiled form must agree with guard_set_check. Chapter 23.2,
 * "A guard is an executable check". */
#ifndef GUARD_H
#define GUARD_H

#include <stdint.h>
#include "sym_expr.h"

#define GUARD_MAX_ARGS 16     /* a call's tensors: a small model's backward (inputs, saved values, gradients) */
#define GUARD_FACT_WORDS (GUARD_MAX_ARGS / 8)                                 /* 8 bits per argument */
#define GUARD_PAIR_WORDS ((GUARD_MAX_ARGS * (GUARD_MAX_ARGS - 1) / 2 + 63) / 64)   /* a bit per pair */
#define GUARD_TEXT_MAX 160     /* a description, NUL included */
#define GUARD_REASON_MAX 256   /* a failure's reason, NUL included */

typedef enum guard_field { GUARD_SHAPE, GUARD_STRIDE } guard_field;

/* args[arg].shape[axis] or args[arg].strides[axis]. */
typedef struct guard_site {
  int arg;
  guard_field field;
  int axis;
} guard_site;

typedef enum guard_kind {
  GUARD_DTYPE,       /* args[arg] has dtype value */
  GUARD_RANK,        /* args[arg] has rank value */
  GUARD_CONTIGUOUS,  /* args[arg] is row-major contiguous (size-1 axes ignored) */
  GUARD_ALIGNED,     /* element 0 of args[arg] is at a multiple of value bytes */
  GUARD_DISJOINT,    /* args[arg] and args[arg2] reach no common byte */
  GUARD_RANGE,       /* lo <= site <= hi; lo == hi pins a value */
  GUARD_DIVISIBLE,   /* site is a multiple of value */
  GUARD_EQUAL,       /* site == site2 */
  GUARD_EXPR         /* site == expr, each dim of expr read at its own site */
} guard_kind;

typedef struct guard {
  guard_kind kind;
  int arg, arg2;                 /* DISJOINT's pair; site.arg and site2.arg for the others */
  guard_site site, site2;
  int64_t value, lo, hi;         /* dtype, rank, bytes or multiple; RANGE's bounds */
  sym_dim dim;                   /* RANGE, DIVISIBLE: the dim read at site ("" when unnamed);
                                    a named RANGE's dim has bounds [lo, hi] */
  const sym_expr *expr;          /* EXPR: borrowed, outlives the set */
  char what[GUARD_TEXT_MAX];     /* "out.shape[0] == x.shape[0]" */
} guard;

/* One argument as the guards see it: what a view means, copied. */
typedef struct guard_view {
  uopc_dtype dtype;
  int rank;
  int64_t shape[UOPC_MAX_RANK];
  int64_t strides[UOPC_MAX_RANK];
} guard_view;

/* One call, read once (guard_call_init, guard_plan.h): the views, element
 * 0's addresses, and the facts every compiled set tests. A copy stays
 * checkable after the tensors are released (explain rechecks it). */
typedef struct guard_call {
  int count;
  guard_view args[GUARD_MAX_ARGS];
  uintptr_t data[GUARD_MAX_ARGS];
  uint64_t facts[GUARD_FACT_WORDS];   /* 8 bits per argument (a's in word a / 8): dtype (3), rank (4), contiguous (1) */
  uint64_t apart[GUARD_PAIR_WORDS];   /* one bit per pair of arguments that reach no common byte */
} guard_call;

typedef struct guard_set {
  int n_args;
  char names[GUARD_MAX_ARGS][SYM_NAME_MAX];   /* "out", "x", ... for the texts */
  int count, cap;
  guard *guards;                              /* owned; checked in this order */
  int n_dims;                                 /* the dims EXPR guards read ... */
  sym_dim dims[SYM_BINDING_MAX];
  guard_site dim_sites[SYM_BINDING_MAX];      /* ... and where */
} guard_set;

typedef struct guard_reason {
  char text[GUARD_REASON_MAX];   /* "n = 33 is not a multiple of 16" */
} guard_reason;

/* ---- Sites of a call. */

/* 1 when c's argument s.arg has the axis s.axis. */
int guard_site_exists(const guard_call *c, guard_site s);
/* The value at site s of c; the axis must exist. */
int64_t guard_site_value(const guard_call *c, guard_site s);
/* "x.shape[0]", from the set's argument names. */
void guard_site_format(const guard_set *s, guard_site at, char *buf, size_t size);
/* *v = expression e of s's dims, each read at its site of c; 0 when a site
 * is missing or e cannot be evaluated (an EXPR guard then fails). */
int guard_expr_value(const guard_set *s, const sym_expr *e, const guard_call *c, int64_t *v);

/* ---- Building a set. Each adder appends one guard with its description.
 * Common errors: UOPC_E_INVALID (an argument or axis outside the set, a bad
 * value, naming it), UOPC_E_NOMEM. */

/* An empty set over n_args arguments named names[0..n_args). The caller
 * frees it with guard_set_fini, also when an adder failed. */
int guard_set_init(guard_set *s, int n_args, const char *const *names, uopc_error *err);
void guard_set_fini(guard_set *s);

int guard_set_add_dtype(guard_set *s, int arg, uopc_dtype dt, uopc_error *err);
int guard_set_add_rank(guard_set *s, int arg, int rank, uopc_error *err);
int guard_set_add_contiguous(guard_set *s, int arg, uopc_error *err);
/* bytes: a power of two (64 is sixteen f32 lanes). */
int guard_set_add_aligned(guard_set *s, int arg, int64_t bytes, uopc_error *err);
int guard_set_add_disjoint(guard_set *s, int arg, int arg2, uopc_error *err);
/* lo <= at <= hi. name (NULL: none) is the dim read there: "n = x.shape[0]
 * in [1, 4096]", whose failure is sym_dim_check's text; unnamed, lo == hi
 * reads "x.shape[1] == 1". */
int guard_set_add_range(guard_set *s, const char *name, guard_site at, int64_t lo, int64_t hi,
                        uopc_error *err);
/* "n = x.shape[0] is a multiple of 16" (name NULL: "x.shape[0] is ..."). */
int guard_set_add_divisible(guard_set *s, const char *name, guard_site at, int64_t multiple,
                            uopc_error *err);
/* "out.shape[0] == x.shape[0]". */
int guard_set_add_equal(guard_set *s, guard_site at, guard_site to, uopc_error *err);
/* Dim d read at site at: its bounds (a named range) and, when d has one,
 * its multiple; EXPR guards may then use d. Errors: UOPC_E_LIMIT
 * (SYM_BINDING_MAX dims). */
int guard_set_add_bounds(guard_set *s, const sym_dim *d, guard_site at, uopc_error *err);
/* "out0.shape[0] == n - 1": e over dims added by guard_set_add_bounds. */
int guard_set_add_expr(guard_set *s, guard_site at, const sym_expr *e, uopc_error *err);

/* ---- Checking, guard by guard: the reference the compiled form follows. */

/* The student's part: *holds = 1 when guard k of s holds for call, else 0
 * and, when why is not NULL, why->text says what was found; with why NULL
 * nothing is formatted. The reasons, as the tests compare them (values are
 * this call's, names the set's sites):
 *   a missing axis  "x has no axis for '<the guard's text>' (rank 1)"
 *   dtype           "x has dtype f64, not f32"
 *   rank            "x has rank 1, not 2"
 *   contiguous      "x is not contiguous (strides (2) for shape (10))"
 *   aligned         "x is not aligned to 64 bytes (element 0 is 4 bytes past a
 *                   64-byte boundary)"
 *   disjoint        "x and out overlap (they share bytes of one buffer)"
 *   a value         "x.strides[0] = 2, not 1" (a range of one value)
 *   a range         "out.shape[0] = 20 is outside [1, 8]"; on a dim's site, the
 *                   dim's own message: "dim 'n' = 33 outside [1, 16]"
 *   divisible       "n = 33 is not a multiple of 16" (the dim's name when it has
 *                   one, else the site: "x.shape[0] = 33 is not a multiple of 5")
 *   equal           "out.shape[0] = 20 differs from x.shape[0] = 10"
 *   an expression   "out.shape[0] = 9, but n - 1 = 7 on this call", or "..., and
 *                   n - 1 cannot be evaluated on this call"
 * (a guard's own text, guard.what, reads "x.strides[0] == 1",
 * "n = x.shape[0] in [1, 16]", ...). A guard on an axis the argument lacks
 * fails; it is no error.
 * Errors (a malformed guard or call, not a failed guard): UOPC_E_INVALID
 * (k outside the set: "guard 7 of a set of 2"; an argument outside the call). */
int guard_check(const guard_set *s, int k, const guard_call *call, int *holds, guard_reason *why,
                uopc_error *err);

/* The student's part: checks s's guards in order and stops at the first
 * that fails: *failed = its index, or -1 when every guard held; why as in
 * guard_check. Errors: UOPC_E_INVALID (call has fewer arguments than s),
 * those of guard_check. */
int guard_set_check(const guard_set *s, const guard_call *call, int *failed, guard_reason *why,
                    uopc_error *err);

/* "x is f32; x has rank 1; ..." joined with sep, truncated to size. */
void guard_set_describe(const guard_set *s, const char *sep, char *buf, size_t size);

/* "dtype", "contiguous", ... */
const char *guard_kind_name(guard_kind k);

#endif
