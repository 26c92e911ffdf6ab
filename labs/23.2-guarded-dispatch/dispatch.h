/* dispatch.h: a guarded dispatcher for one operation (lab 23.2).
 * The operation is out = x*x + 1 over f32 vectors, built as a lab 23.1 graph.
 * A dispatcher holds fast variants (each a guard set, a key and a program)
 * and at most one generic variant. A call checks the fast variants' guards in
 * order and runs the first whose guards all hold; when none holds and the
 * call qualifies for a fast kernel, it builds one, up to the variant limit;
 * otherwise, or past the limit, it runs the generic variant (or refuses, by
 * option). No kernel ever runs unless its own guards held for that call.
 * Chapter 23.2, "The dispatcher". */
#ifndef DISPATCH_H
#define DISPATCH_H

#include "guard_plan.h"
#include "variant_codegen.h"

/* The process counters this lab adds (uopc/counters.h). */
#define DISPATCH_C_VARIANTS_BUILT "variants built"   /* variants constructed, not gcc runs */
#define DISPATCH_C_GUARD_CHECKS "guard checks"       /* variant guard sets checked */
#define DISPATCH_C_GUARD_FAILURES "guard failures"   /* of those, sets that failed */
#define DISPATCH_C_FAST_CALLS "fast path calls"
#define DISPATCH_C_GENERIC_CALLS "generic calls"

#define DISPATCH_MAX_VARIANTS 32          /* the largest limit one may set */
#define DISPATCH_DEFAULT_MAX_VARIANTS 8
#define DISPATCH_DEFAULT_MAX_LENGTH (1 << 24)
#define DISPATCH_EXPLAIN_MAX 2048

/* Arguments of the operation, in the kernel's parameter order. */
enum { DISPATCH_ARG_OUT, DISPATCH_ARG_X, DISPATCH_N_ARGS };

typedef enum dispatch_path { DISPATCH_PATH_NONE, DISPATCH_PATH_FAST, DISPATCH_PATH_GENERIC } dispatch_path;

/* What a call does when it needs a new fast variant and the limit is reached. */
typedef enum dispatch_on_limit {
  DISPATCH_LIMIT_RUN_GENERIC,   /* run the generic variant (the default) */
  DISPATCH_LIMIT_FAIL           /* return UOPC_E_LIMIT and run nothing */
} dispatch_on_limit;

typedef struct dispatch_options {
  int64_t max_length;           /* n in [1, max_length]; 0: DISPATCH_DEFAULT_MAX_LENGTH */
  int max_variants;             /* all variants, the generic one included; 0: default */
  dispatch_on_limit on_limit;
  int specialize_length;        /* 1: a fast variant per length (n enters the key) */
  int fast_math;                /* numerical policy: 1 compiles with -ffast-math (keyed) */
  uopc_program_options program; /* compiler, cache directory; opt_flags is set here */
} dispatch_options;

typedef struct dispatch_variant {
  dispatch_path path;
  int64_t exact_n;              /* 0, or the length a fast variant is built for */
  guard_set guards;             /* owned */
  guard_plan plan;              /* guards compiled: what a call checks */
  spec_key key;
  uopc_program *program;        /* owned */
  char entry[64];
  int64_t calls;
} dispatch_variant;

typedef struct dispatch_stats {  /* this dispatcher's share of the counters */
  int64_t variants_built, guard_checks, guard_failures, fast_calls, generic_calls;
  int64_t limit_hits;            /* calls that wanted a new variant past the limit */
} dispatch_stats;

/* The record of one call, which dispatch_explain reads. Since the first
 * variant whose guards hold wins, the rejected variants are always the first
 * n_rejected, in order; explain finds the guard that failed in each by
 * checking the recorded call again, so the hot path records no rejection. */
typedef struct dispatch_record {
  int64_t number;                 /* 1 for the dispatcher's first call */
  guard_call call;                /* a copy: explain rechecks guards on it */
  int chosen;                     /* variant index; -1 generic; -2 none ran */
  int n_rejected;                 /* fast variants 0 .. n_rejected-1 were rejected */
  int built;                      /* 1 when this call built the variant it ran */
  int limit_hit;                  /* 1 when it wanted a new variant past the limit */
  dispatch_path path;
} dispatch_record;

/* Fast variants by the value each pins one dim to (exact-length variants:
 * n). A variant pins args[arg].shape[axis] to p when its set holds a bounds
 * guard [p, p]; usable while every fast variant pins the same dim, to a value
 * of its own. Chapter 23.2, "Making guards cheap". */
#define DISPATCH_INDEX_SLOTS 64   /* a power of two, twice DISPATCH_MAX_VARIANTS */
typedef struct dispatch_index {
  int usable, entries;
  int arg, axis;
  int64_t value[DISPATCH_INDEX_SLOTS];
  uint8_t variant[DISPATCH_INDEX_SLOTS];   /* fast variant index + 1; 0: empty */
} dispatch_index;

typedef struct dispatcher {
  dispatch_options opts;
  sym_arena *arena;               /* owned: the graph's shapes */
  kernel_graph graph;             /* out = x*x + 1 over (n) */
  const kernel_node *op;
  sym_dim n;                      /* n in [1, max_length] */
  char op_name[32];
  spec_key_parts base;            /* the key parts no call changes */
  int count;                      /* fast variants */
  dispatch_variant *fast[DISPATCH_MAX_VARIANTS];
  dispatch_variant *generic;      /* NULL until a call needs it */
  dispatch_index index;           /* of the fast variants */
  dispatch_stats stats;
  dispatch_record last;
  int64_t *slots[5];              /* the process counters, in DISPATCH_C_ order */
  int trace;                      /* UOPC_DEBUG >= 3: each decision explained on stderr */
} dispatcher;

/* The decision for one call: which variant runs, on which call. */
typedef struct dispatch_choice {
  dispatch_variant *variant;
  dispatch_path path;
  const guard_call *call;         /* the dispatcher's record (d->last.call) */
} dispatch_choice;

/* ---- Lifecycle. */

/* Builds the operation's graph and the key parts; compiles nothing. opts may
 * be NULL. Errors: UOPC_E_INVALID (max_length outside [1, INT32_MAX],
 * max_variants outside [1, DISPATCH_MAX_VARIANTS]), those of lab 23.1's
 * graph builders. */
int dispatch_init(dispatcher *d, const dispatch_options *opts, uopc_error *err);
void dispatch_fini(dispatcher *d);

/* ---- Calls. */

/* out = x*x + 1. x: an f32 vector of length n in [1, max_length], any
 * strides; out: an f32 vector of the same length, any strides, x itself or
 * disjoint from it. Errors: UOPC_E_INVALID (rank, lengths differ),
 * UOPC_E_DTYPE, UOPC_E_BOUNDS, UOPC_E_ALIAS (partial overlap), UOPC_E_LIMIT
 * (DISPATCH_LIMIT_FAIL past the limit), UOPC_E_GUARD (a chosen variant's
 * guards failed: a bug, never run), and the runtime's compile errors. */
int dispatch_call(dispatcher *d, const uopc_tensor *x, uopc_tensor *out, uopc_error *err);

/* The first half of dispatch_call: checks the arguments, selects (or builds)
 * the variant and counts, but runs nothing. Tests use it to see a decision
 * before any kernel touches memory. Errors: as dispatch_call. */
int dispatch_choose(dispatcher *d, const uopc_tensor *x, uopc_tensor *out,
                    dispatch_choice *c, uopc_error *err);
/* The second half: runs c's variant on c's call and counts its path. */
void dispatch_run(dispatcher *d, const dispatch_choice *c);

/* ---- The steps, each a student's part. */

/* The guards a fast kernel needs for the call's arguments: dtypes, ranks,
 * equal lengths, n's bounds (exactly exact_n when it is not 0), n % 16 == 0,
 * contiguity, 64-byte alignment of both buffers, and out disjoint from x
 * (the kernel's restrict). A shape guard stands in for none of the others.
 * s is initialised here; the caller frees it (guard_set_fini), also on
 * error. Errors: those of the guard_set adders. */
int dispatch_fast16_guards(const dispatcher *d, int64_t exact_n, guard_set *s, uopc_error *err);

/* Checks the fast variants in order (dispatch_variant_holds): *index = the
 * first whose guards hold, or -1. Counts one guard check per variant checked
 * and one failure per set that failed; records nothing (the rejected
 * variants are those before *index, or all). Errors: none yet (err is for
 * a selection that can fail). */
int dispatch_select(dispatcher *d, const guard_call *call, int *index, uopc_error *err);

/* No fast variant held: decides what the call runs. A call that qualifies
 * for a fast kernel gets a new one while the limit allows (counted as a
 * compile); past the limit the policy decides (generic, counted in
 * limit_hits, or UOPC_E_LIMIT). Other calls get the generic variant, built
 * on first use. *out = the variant to run. Errors: UOPC_E_LIMIT, those of
 * building. */
int dispatch_on_miss(dispatcher *d, const guard_call *call, dispatch_variant **out,
                     uopc_error *err);

/* Why the last call took its path: its number and length, the variant run,
 * each variant rejected (the first d->last.n_rejected) with the guard that
 * failed, found by checking the recorded call again (its description and the
 * actual values), whether it built a variant or hit the limit. Truncates to
 * size. Errors: UOPC_E_INVALID (no call yet), those of guard_set_check. */
int dispatch_explain(const dispatcher *d, char *buf, size_t size, uopc_error *err);

/* ---- Plumbing, for the steps and the tests. */

/* 1 when every guard of v holds for call: guard_set_check's answer (no
 * failing guard), through v's compiled plan (a few nanoseconds instead of a
 * switch per guard). call comes from guard_call_init. Inline:
 * dispatch_select runs it for every variant of every call. */
static inline __attribute__((always_inline)) int dispatch_variant_holds(const dispatch_variant *v,
                                                                        const guard_call *call) {
  return guard_plan_holds(&v->plan, call);
}

/* dispatch_select's answer and counts, through d->index: only the variant
 * that pins the call's value can hold, so at most one set is checked.
 * dispatch_choose uses it whenever the index is usable. Errors:
 * UOPC_E_UNSUPPORTED (the index is not usable: scan), UOPC_E_INVALID (call
 * has fewer arguments than the sets). */
int dispatch_index_select(dispatcher *d, const guard_call *call, int *index, uopc_error *err);

/* The key of a variant for this dispatcher: path, exact_n (fast only).
 * Errors: those of spec_key_compose. */
int dispatch_variant_key(const dispatcher *d, dispatch_path path, int64_t exact_n,
                         spec_key *key, uopc_error *err);

/* Builds a variant (guards and their plan, key, source, program), appends it
 * (fast) or sets it (generic), and counts a compile. Errors: UOPC_E_LIMIT
 * (DISPATCH_MAX_VARIANTS), those of codegen and uopc_program_new. */
int dispatch_build(dispatcher *d, dispatch_path path, int64_t exact_n, dispatch_variant **out,
                   uopc_error *err);

/* The generic variant's guards: dtypes, ranks, equal lengths, n's bounds.
 * s is initialised here; the caller frees it, also on error. */
int dispatch_generic_guards(const dispatcher *d, guard_set *s, uopc_error *err);

const char *dispatch_path_name(dispatch_path p);   /* "fast path", "generic" */

#endif
