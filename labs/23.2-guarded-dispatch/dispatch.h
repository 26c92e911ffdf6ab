/* dispatch.h: a guarded dispatcher for one operation (lab 23.2).
 * The operation is out = x*x + 1 over f32 vectors, built as a lab 23.1
 * graph, with two hand-written kernels: fast (16-lane blocks of aligned,
 * packed, disjoint memory, no tail) and generic (any strides, in place
 * too). The dispatcher is an instance of the variant cache (vcache.h): its
 * fast variants are the cache's specialised ones, its one generic variant
 * the cache's general one, and the cache holds the variants, the call's
 * record, the index and the counts. A call checks the fast variants' guards
 * in order and runs the first whose guards all hold; when none holds and the
 * call qualifies for a fast kernel, it builds one, up to the variant limit;
 * otherwise, or past the limit, it runs the generic variant (or refuses, by
 * option). No kernel ever runs unless its own guards held for that call.
 * The steps that make it this dispatcher are yours. Chapter 23.2, "The
 * dispatcher". */
#ifndef DISPATCH_H
#define DISPATCH_H

#include "variant_codegen.h"
#include "vcache.h"

/* The process counters: the cache's three under the lab's names, and two of
 * the dispatcher's own (uopc/counters.h). */
#define DISPATCH_C_VARIANTS_BUILT VCACHE_C_VARIANTS_BUILT   /* "variants built": constructed, not gcc runs */
#define DISPATCH_C_GUARD_CHECKS VCACHE_C_GUARD_CHECKS       /* "guard checks": variant guard sets checked */
#define DISPATCH_C_GUARD_FAILURES VCACHE_C_GUARD_FAILURES   /* "guard failures": of those, sets that failed */
#define DISPATCH_C_FAST_CALLS "fast path calls"
#define DISPATCH_C_GENERIC_CALLS "generic calls"

#define DISPATCH_MAX_VARIANTS VCACHE_MAX_VARIANTS   /* the largest limit one may set */
#define DISPATCH_DEFAULT_MAX_VARIANTS 8
#define DISPATCH_DEFAULT_MAX_LENGTH (1 << 24)
#define DISPATCH_EXPLAIN_MAX 2048

/* Arguments of the operation, in a call's order (outputs, then inputs). */
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

/* A variant is the cache's: general (the generic variant) or not (a fast
 * one), param its exact length (0: any), guards, plan, key, program, entry. */
typedef vcache_variant dispatch_variant;

typedef struct dispatch_stats {  /* the dispatcher's own counts; the rest are d->cache.stats */
  int64_t fast_calls, generic_calls;
} dispatch_stats;

typedef struct dispatcher {
  dispatch_options opts;
  vcache cache;                   /* variants, record (cache.last), index, counts */
  sym_arena *arena;               /* owned: the graph's shapes */
  kernel_graph graph;             /* out = x*x + 1 over (n) */
  const kernel_node *op;
  sym_dim n;                      /* n in [1, max_length] */
  char op_name[32];
  dispatch_stats stats;
  uopc_counter_id slots[2];       /* fast path calls, generic calls */
} dispatcher;

/* The decision for one call: which variant runs, on which call. */
typedef struct dispatch_choice {
  dispatch_variant *variant;
  dispatch_path path;
  const guard_call *call;         /* the cache's record (d->cache.last.call) */
} dispatch_choice;

/* ---- Lifecycle. */

/* Builds the operation's graph and the cache; compiles nothing. opts may be
 * NULL. Errors: UOPC_E_INVALID (max_length outside [1, INT32_MAX],
 * max_variants outside [1, DISPATCH_MAX_VARIANTS]), those of lab 23.1's
 * graph builders and vcache_init. */
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

/* The first half of dispatch_call: records the call, selects (or builds)
 * the variant and counts, but runs nothing. Tests use it to see a decision
 * before any kernel touches memory. Errors: as dispatch_call. */
int dispatch_choose(dispatcher *d, const uopc_tensor *x, uopc_tensor *out, dispatch_choice *c,
                    uopc_error *err);
/* The second half: runs c's variant on c's call and counts its path.
 * Errors: UOPC_E_INVALID (c is not the last call's choice). */
int dispatch_run(dispatcher *d, const dispatch_choice *c, uopc_error *err);

/* ---- The steps, each a student's part. */

/* The guards a fast kernel needs for the call's arguments: dtypes, ranks,
 * equal lengths, n's bounds (exactly exact_n when it is not 0), n % 16 == 0,
 * contiguity, 64-byte alignment of both buffers, and out disjoint from x
 * (the kernel's restrict). A shape guard stands in for none of the others.
 * s is initialised here; the caller frees it (guard_set_fini), also on
 * error. Errors: those of the guard_set adders. */
int dispatch_fast16_guards(const dispatcher *d, int64_t exact_n, guard_set *s, uopc_error *err);

/* The cache's selection: checks the fast variants (the cache's specialised
 * variants, d->cache.variants[0 .. vcache_n_specialised)) in order with
 * dispatch_variant_holds: *index = the first whose guards hold, or -1.
 * Counts one guard check per variant checked and one failure per set that
 * failed (vcache_count_checks); records nothing (the rejected variants are
 * those before *index, or all). Not asked while the cache's index answers.
 * Errors: none (err is for a selection that can fail). */
int dispatch_select(dispatcher *d, const guard_call *call, int *index, uopc_error *err);

/* The cache's miss: no fast variant held for call, whose arguments are
 * valid (two f32 vectors of one length within bounds, x itself or disjoint
 * from out). A call that qualifies for a fast kernel gets a new one
 * (vcache_build, param the exact length or 0) while vcache_room allows;
 * past the limit it is a limit hit (vcache_limit_hit) and the policy
 * decides: the generic variant, or UOPC_E_LIMIT naming n and the limit.
 * Other calls get the generic variant (vcache_general: built on first use).
 * *out = the variant to run. Errors: UOPC_E_LIMIT, those of building. */
int dispatch_on_miss(dispatcher *d, const guard_call *call, dispatch_variant **out, uopc_error *err);

/* Why the last call took its path: its number and length, the variant run,
 * each fast variant rejected (the first d->cache.last.n_rejected) with the
 * guard that failed, found by checking the recorded call again (its
 * description and the actual values), whether it built a variant or hit the
 * limit, or why no fast variant could serve it. Truncates to size. Errors:
 * UOPC_E_INVALID (no call yet), UOPC_E_NOMEM (no memory for the guards
 * checked again), those of guard_set_check. */
int dispatch_explain(const dispatcher *d, char *buf, size_t size, uopc_error *err);

/* ---- Plumbing, for the steps and the tests. */

/* 1 when every guard of v holds for call: guard_set_check's answer (no
 * failing guard), through v's compiled plan. Inline: dispatch_select runs it
 * for every variant of every call. */
static inline __attribute__((always_inline)) int dispatch_variant_holds(const dispatch_variant *v,
                                                                        const guard_call *call) {
  return vcache_variant_holds(v, call);
}

/* The path a variant serves, and its name ("fast path", "generic"). */
static inline dispatch_path dispatch_variant_path(const dispatch_variant *v) {
  return v->general ? DISPATCH_PATH_GENERIC : DISPATCH_PATH_FAST;
}
const char *dispatch_path_name(dispatch_path p);

/* The path of the last call: DISPATCH_PATH_NONE before the first call and
 * after a call that chose no variant. */
dispatch_path dispatch_last_path(const dispatcher *d);

/* The fast variants (the cache's specialised ones) and the generic one (NULL
 * until a call needs it). */
int dispatch_fast_count(const dispatcher *d);
dispatch_variant *dispatch_generic(const dispatcher *d);

/* The key of a variant for this dispatcher: path, exact_n (fast only).
 * Errors: those of spec_key_compose. */
int dispatch_variant_key(const dispatcher *d, dispatch_path path, int64_t exact_n, spec_key *key,
                         uopc_error *err);

/* The generic variant's guards: dtypes, ranks, equal lengths, n's bounds.
 * s is initialised here; the caller frees it, also on error. */
int dispatch_generic_guards(const dispatcher *d, guard_set *s, uopc_error *err);

#endif
