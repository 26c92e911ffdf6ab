/* alias.h: can two views of one storage reach a common element? (lab 23.3)
 * At compile time the answer is decided for every binding within the dims'
 * bounds from the views' affine forms (mprog.h's mv_layout); where it depends
 * on the binding, it is UNKNOWN and the executor checks the call's views at
 * run time instead of assuming. Chapter 23.3, "Alias analysis over symbolic
 * views". */
#ifndef ALIAS_H
#define ALIAS_H

#include "mprog.h"

#define ALIAS_REASON_MAX 200

typedef enum alias_answer { ALIAS_DISJOINT, ALIAS_OVERLAP, ALIAS_UNKNOWN } alias_answer;

typedef struct alias_result {
  alias_answer answer;
  char reason[ALIAS_REASON_MAX];   /* which rule decided, for the log and explain */
} alias_result;

/* "disjoint", "overlap", "unknown". */
const char *alias_answer_name(alias_answer a);

/* Decides a and b (two views of one storage) for every binding within the
 * dims' bounds. arena is where the differences are built. The rules, in
 * order (the first that decides wins; reason names it):
 *   1. empty: a view with an extent whose interval is [0, 0] -> DISJOINT
 *      ("empty").
 *   2. hull: each view's elements lie in [lo, hi] with lo = offset +
 *      sum_k min(0, strides[k] * (max(shape[k], 1) - 1)) and hi likewise with
 *      max; when hi_a < lo_b or hi_b < lo_a is proved (the difference's
 *      interval) -> DISJOINT ("ranges").
 *   3. rank 1 with constant strides (after dropping axes of constant extent
 *      1): with g = gcd(|s_a|, |s_b|) >= 1, when (offset_b - offset_a)
 *      simplifies to a constant c with c % g != 0 -> DISJOINT ("residues
 *      mod g"), as a[0::2] and a[1::2].
 *   4. rank 1 with constant strides: when both views are nonempty for every
 *      binding (extent intervals with lo >= 1) and the first element of one
 *      is provably an element of the other (c = offset_b - offset_a a
 *      constant, c % s_a == 0, 0 <= c / s_a <= extent_a - 1 proved; or the
 *      same with a and b exchanged) -> OVERLAP ("shared element").
 *   5. otherwise, identical layouts (the same simplified shape, strides and
 *      offset) that are nonempty for every binding -> OVERLAP ("same view");
 *      anything else -> UNKNOWN ("depends on the binding").
 * The answer is never wrong: DISJOINT and OVERLAP hold for every binding.
 * Errors: UOPC_E_INVALID (NULL, ranks outside [0, UOPC_MAX_RANK]), those
 * of sym_expr. */
int alias_decide(const mv_layout *a, const mv_layout *b, sym_arena *arena, alias_result *out,
                 uopc_error *err);

/* The run-time disjointness guard: *disjoint = 1 when the two uopc views
 * (of one storage, for one call) share no element. Exact when each view,
 * after dropping its axes of extent 1, has rank at most 1 (arithmetic
 * progressions: gcd of the strides, then the first common element inside
 * both ranges, in 128-bit arithmetic); conservative beyond (disjoint only
 * when the byte ranges are). An empty view is disjoint from everything.
 * Errors: UOPC_E_INVALID (NULL, released, a rank outside [0, UOPC_MAX_RANK] or
 * a negative extent, different storages or dtypes); the message names the
 * view (a or b) and, for a rank, the rank and UOPC_MAX_RANK. */
int alias_guard_disjoint(const uopc_tensor *a, const uopc_tensor *b, int *disjoint, uopc_error *err);

#endif
