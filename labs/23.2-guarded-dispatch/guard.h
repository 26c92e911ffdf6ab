/* guard.h: guards as data (lab 23.2).
 * A guard is an executable check of one assumption that compiled code makes:
 * a dtype, a rank, contiguity, alignment to the vector width, divisibility of
 * a dim, a dim's bounds, two dims equal, a stride, two buffers disjoint. Each
 * carries a description, and a failed check says why, with the actual
 * values. A guard set is the contract of one compiled variant. Guards read
 * only a call's shapes, strides and addresses, never the elements, so a
 * call can be checked (and explained later) without touching its memory.
 * Chapter 23.2, "A guard is an executable check". */
#ifndef GUARD_H
#define GUARD_H

#include <stdint.h>
#include "sym_dim.h"

#define GUARD_MAX_ARGS 4
#define GUARD_SET_MAX 16
#define GUARD_TEXT_MAX 128    /* a description, NUL included */
#define GUARD_REASON_MAX 256  /* a failure's reason, NUL included */

typedef enum guard_kind {
  GUARD_DTYPE,       /* args[arg] has dtype value */
  GUARD_RANK,        /* args[arg] has rank value */
  GUARD_CONTIGUOUS,  /* args[arg] is row-major contiguous */
  GUARD_ALIGNED,     /* element 0 of args[arg] is at a multiple of value bytes */
  GUARD_DIVISIBLE,   /* dim = args[arg].shape[axis] is a multiple of value */
  GUARD_DIM_BOUNDS,  /* dim = args[arg].shape[axis] satisfies the sym_dim */
  GUARD_DIMS_EQUAL,  /* args[arg].shape[axis] == args[arg2].shape[axis2] */
  GUARD_STRIDE,      /* args[arg].strides[axis] == value */
  GUARD_DISJOINT     /* args[arg] and args[arg2] reach no common byte */
} guard_kind;

typedef struct guard {
  guard_kind kind;
  int arg, arg2;                      /* argument indices in the call */
  int axis, axis2;
  int64_t value;                      /* dtype, rank, bytes, multiple or stride */
  sym_dim dim;                        /* DIVISIBLE (name only), DIM_BOUNDS */
  char names[2][SYM_NAME_MAX];        /* the arguments' names, for the texts */
  char what[GUARD_TEXT_MAX];          /* "x is contiguous" */
} guard;

/* One call's arguments as the guards see them. data[i] is element 0's
 * address, taken once, so that a copy of the call stays checkable after its
 * tensors are released (the explain function rechecks a copy). facts holds
 * the call's boolean facts, computed once for every compiled guard set
 * checked against it (guard_plan.h). */
typedef struct guard_call {
  int count;
  uopc_tensor args[GUARD_MAX_ARGS];   /* copies of the views (no reference held) */
  uintptr_t data[GUARD_MAX_ARGS];
  uint64_t facts;
} guard_call;

typedef struct guard_set {
  int n_args;
  char names[GUARD_MAX_ARGS][SYM_NAME_MAX];   /* "out", "x" */
  int count;
  guard guards[GUARD_SET_MAX];                 /* checked in this order */
} guard_set;

typedef struct guard_reason {
  char text[GUARD_REASON_MAX];   /* "n = 33 is not a multiple of 16" */
} guard_reason;

/* ---- Calls. */

/* Fills *c from count tensors (copied by value; nothing is retained) and
 * computes its facts. Only what a view means is copied: dtype, rank, offset,
 * storage and the shape and strides of its axes (axis 0 always); the unused
 * axes of args[i] are left as they were. Errors: UOPC_E_INVALID (count
 * outside [1, GUARD_MAX_ARGS], a NULL or released tensor). */
int guard_call_init(guard_call *c, int count, const uopc_tensor *const *args,
                    uopc_error *err);

/* ---- Building a set: each adder appends one guard with its description.
 * Common errors: UOPC_E_LIMIT (GUARD_SET_MAX guards), UOPC_E_INVALID (an
 * argument index outside the set, a bad value). */

/* An empty set over n_args arguments named names[0..n_args). */
int guard_set_init(guard_set *s, int n_args, const char *const *names, uopc_error *err);
int guard_set_add_dtype(guard_set *s, int arg, uopc_dtype dt, uopc_error *err);
int guard_set_add_rank(guard_set *s, int arg, int rank, uopc_error *err);
int guard_set_add_contiguous(guard_set *s, int arg, uopc_error *err);
/* bytes: a power of two (64 is sixteen f32 lanes). */
int guard_set_add_aligned(guard_set *s, int arg, int64_t bytes, uopc_error *err);
/* dim_name names args[arg].shape[axis] in the texts ("n"). */
int guard_set_add_divisible(guard_set *s, const char *dim_name, int arg, int axis,
                            int64_t multiple, uopc_error *err);
/* d's name, bounds and multiple_of; the failure text is sym_dim_check's. */
int guard_set_add_dim_bounds(guard_set *s, const sym_dim *d, int arg, int axis,
                             uopc_error *err);
int guard_set_add_dims_equal(guard_set *s, int arg, int axis, int arg2, int axis2,
                             uopc_error *err);
int guard_set_add_stride(guard_set *s, int arg, int axis, int64_t stride, uopc_error *err);
int guard_set_add_disjoint(guard_set *s, int arg, int arg2, uopc_error *err);

/* ---- Checking. */

/* The student's part: *holds = 1 when g holds for call, else 0 and, when why
 * is not NULL, why->text says what was found ("x is not contiguous (strides
 * (2) for shape (10))"). why NULL is the hot path: nothing is formatted.
 * A guard on an axis the tensor lacks fails (it does not hold); it is no
 * error. Errors (a malformed guard or call, not a failed guard):
 * UOPC_E_INVALID (an argument index outside the call), those of
 * sym_dim_check other than UOPC_E_BOUNDS. */
int guard_check(const guard *g, const guard_call *call, int *holds, guard_reason *why,
                uopc_error *err);

/* The student's part: checks s's guards in order and stops at the first
 * that fails: *failed = its index, or -1 when every guard held; why as in
 * guard_check. Errors: UOPC_E_INVALID (call has fewer arguments than s),
 * those of guard_check. */
int guard_set_check(const guard_set *s, const guard_call *call, int *failed,
                    guard_reason *why, uopc_error *err);

/* "x is f32; x has rank 1; ..." joined with sep, truncated to size. */
void guard_set_describe(const guard_set *s, const char *sep, char *buf, size_t size);

/* "dtype", "contiguous", ... */
const char *guard_kind_name(guard_kind k);

#endif
