/* vcache.h: one guarded variant cache (lab 23.2, given code). Lab 23.2's
 * dispatcher is an instance of it; tensorjit grows it into the cache of
 * traced graphs. It is built on this lab's guards (guard.h: guard_check and
 * guard_set_check are the exercise) and keys (spec_key.h), so it lives in
 * this lab's library, above the compiler core. An op is a builder: given a
 * call's specialisation (per input its dtype, rank, each extent a dim or a
 * constant, contiguous or strided, alignment), it builds the ir graph (the
 * compiler core's, labs/core) computing the outputs
 * from the inputs the cache declared. A call checks the specialised
 * variants in order and runs the first whose guards hold (an index finds the
 * only candidate when each pins one site to a value of its own); on a miss
 * it derives the call's specialisation under the policy, has the builder
 * make the graph, derives the variant's guards from the specialisation and
 * the graph, keys it (spec_key.h), compiles it through exec and runs it.
 * Equal extents share a dim only because this call had them equal, and that
 * equality is a guard. Past the variant limit the policy runs a general
 * variant (kept after the specialised ones) or refuses. An op with kernels
 * and decisions of its own (lab 23.2's square_plus_one) replaces steps by
 * hooks. Chapter 23.2, "One variant cache for every graph". */
#ifndef VCACHE_H
#define VCACHE_H

#include "exec.h"
#include "spec_key.h"
#include "guard_plan.h"

/* The process counters, under lab 23.2's names so that logs compare; calls
 * of each variant are the runtime's "calls <entry>". */
#define VCACHE_C_VARIANTS_BUILT "variants built"
#define VCACHE_C_GUARD_CHECKS "guard checks"
#define VCACHE_C_GUARD_FAILURES "guard failures"
enum { VCACHE_SLOT_BUILT, VCACHE_SLOT_CHECKS, VCACHE_SLOT_FAILURES };   /* vcache.slots */

#define VCACHE_MAX_VARIANTS 32
#define VCACHE_DEFAULT_MAX_VARIANTS 8
#define VCACHE_DEFAULT_MAX_EXTENT (INT64_C(1) << 24)
#define VCACHE_DEFAULT_MAX_STRIDE (INT64_C(1) << 30)
#define VCACHE_EXPLAIN_MAX 4096

/* ---- The specialisation of a call. */

/* One extent: dims[dim] of the spec, or the constant value when dim < 0. */
typedef struct vcache_extent {
  int dim;
  int64_t value;
} vcache_extent;

typedef struct vcache_arg {
  uopc_dtype dtype;                     /* inputs; an output's comes from the graph */
  int rank;
  vcache_extent shape[UOPC_MAX_RANK];   /* inputs only */
  int strided;                          /* inputs: 1 when strides[k] are dims */
  int strides[UOPC_MAX_RANK];
  int64_t align;                        /* bytes element 0 is aligned to; 0: nothing assumed */
} vcache_arg;

typedef struct vcache_spec {
  int n_outputs, n_inputs;
  vcache_arg args[GUARD_MAX_ARGS];            /* outputs, then inputs, as in a call */
  int n_dims;
  sym_dim dims[SYM_BINDING_MAX];
  guard_site dim_sites[SYM_BINDING_MAX];      /* each dim's first site: where it is read */
  int general;                                 /* only what the graph's meaning needs */
} vcache_spec;

/* ---- The op and the policy. */

/* Builds the op's graph in g for spec: inputs[k] are the inputs the cache
 * declared (the spec's dtypes, extents and, for strided inputs, dim
 * strides); fills outputs[0..n_outputs). It may read spec (a constant
 * extent of 1, an exact size) but keeps nothing. Errors: any (an equality
 * the graph needs and this call lacks is the IR's broadcast error). */
typedef int (*vcache_build_fn)(void *ctx, ir_graph *g, const ir_node *const *inputs, const vcache_spec *spec,
                               const ir_node **outputs, uopc_error *err);

/* What the cache does when a call needs a new variant past the limit. */
typedef enum vcache_on_limit {
  VCACHE_LIMIT_GENERAL,   /* run the call's general variant (the default), building it in the place kept */
  VCACHE_LIMIT_FAIL       /* return UOPC_E_LIMIT and run nothing */
} vcache_on_limit;

/* Which properties of a call a variant specialises on; zero is the least. */
typedef struct vcache_policy {
  int pin_01;              /* extents 0 and 1 become constants; other extents' dims are >= 2 */
  int exact_sizes;         /* every extent becomes a constant */
  int64_t multiple;        /* > 1: an extent that is a multiple of it gets a dim with that multiple_of */
  int strided_only;        /* 1: every input is strided; 0: contiguous inputs get contiguous variants */
  int64_t align;           /* > 1 (a power of two): arguments aligned to it get an alignment guard */
  int64_t max_extent;      /* every extent in [0, max_extent]; 0: VCACHE_DEFAULT_MAX_EXTENT */
  int64_t max_stride;      /* every stride in [-max_stride, max_stride]; 0: the default */
  int max_variants;        /* every variant, general ones included; 0: the default */
  vcache_on_limit on_limit;
} vcache_policy;

typedef struct vcache vcache;
typedef struct vcache_variant vcache_variant;

/* The steps an op may replace (NULL keeps the cache's own); ctx is the
 * options' ctx. contract, compile and run go together: an op with its own
 * kernels gives all three and no builder. */
typedef struct vcache_hooks {
  /* *index = the first specialised variant whose guards hold for call, or
   * -1, with the checks counted (vcache_count_checks). Own: vcache_select.
   * Not asked while the index serves the call (same answer, same counts). */
  int (*select)(void *ctx, vcache *c, const guard_call *call, int *index, uopc_error *err);
  /* No specialised variant held: *out = the variant to run, built
   * (vcache_build) or general (vcache_general); the cache checks its guards
   * once more. Own: vcache_on_miss. */
  int (*on_miss)(void *ctx, vcache *c, const guard_call *call, vcache_variant **out, uopc_error *err);
  /* A new variant's guards (v->guards, initialised here) and key, from
   * v->general and v->param. Own: the builder's graph, its guards and key. */
  int (*contract)(void *ctx, const vcache *c, vcache_variant *v, uopc_error *err);
  /* Its program (v->program) and entry, once its guards held on the call
   * it is built for. Own: exec_new on the graph. */
  int (*compile)(void *ctx, const vcache *c, vcache_variant *v, uopc_error *err);
  /* Runs v on call, whose guards held. Own: the program with the dims read
   * at their sites (exec_run_checked). */
  int (*run)(void *ctx, vcache_variant *v, const guard_call *call, uopc_error *err);
  /* The text UOPC_DEBUG=3 prints for each call. Own: vcache_explain. */
  int (*explain)(void *ctx, const vcache *c, char *buf, size_t size, uopc_error *err);
} vcache_hooks;

typedef struct vcache_options {
  const char *op;                        /* a C identifier: the entries' prefix and the key's op */
  int n_inputs, n_outputs;               /* together at most GUARD_MAX_ARGS */
  const char *inputs[GUARD_MAX_ARGS];    /* input names (C identifiers) */
  const char *outputs[GUARD_MAX_ARGS];   /* optional output names; NULL: out0, out1, ... */
  const char *axes[GUARD_MAX_ARGS];      /* optional dim names of input k's axes, "m n"; NULL: x_0 ... */
  vcache_build_fn build;                 /* NULL when hooks.contract builds */
  void *ctx;                             /* passed to build and the hooks */
  vcache_hooks hooks;
  vcache_policy policy;
  uopc_program_options program;          /* compiler, flags (part of the key), cache directory */
  /* For later stages (zero keeps lab 23.2's behaviour). counters: the names
   * of the process counters, in VCACHE_C_ order (NULL: lab 23.2's; "": not
   * counted), so that a process using two kinds of cache does not add them
   * up. scan_only: no index, every call asks select (an op whose variants
   * hold more than their guard sets, as tensorjit's scalars do). An op whose
   * hooks make and run its kernels may have no outputs in its calls. */
  const char *counters[3];
  int scan_only;
} vcache_options;

/* ---- Variants and the cache. */

struct vcache_variant {
  int general;              /* 1: a general variant, checked after the specialised ones */
  int64_t param;            /* the op's own (lab 23.2: the exact length, 0 for none) */
  void *own;                /* the op's record beside it, or NULL (tensorjit's artifact); not the cache's */
  vcache_spec spec;         /* graph ops: what it was built for */
  guard_set guards;         /* its contract */
  guard_plan plan;          /* guards compiled: what a call checks */
  spec_key key;
  ir_graph *graph;          /* owned (graph ops) */
  const ir_node *outputs[GUARD_MAX_ARGS];
  exec *exec;               /* owned (graph ops) */
  int n_dims;               /* graph ops: each program dim's offset in a call */
  uint32_t dim_at[UOPC_SIGNATURE_MAX];
  uopc_program *program;    /* owned (ops with their own kernels) */
  char entry[64];
  int64_t calls;
};

typedef struct vcache_stats {   /* this cache's share of the counters */
  int64_t variants_built, guard_checks, guard_failures, calls;
  int64_t limit_hits;           /* calls that wanted a new variant past the limit */
} vcache_stats;

/* What vcache_explain reads. The first specialised variant whose guards
 * hold wins, so the rejected ones are always the first n_rejected; explain
 * finds each one's failing guard again on the copy of the call. */
typedef struct vcache_record {
  int64_t number;          /* 1 for the cache's first call */
  int have_call;           /* 0: the call was refused before call was read */
  guard_call call;
  int chosen;              /* variant index; -1: none ran */
  int n_rejected;
  int built, limit_hit;
  uopc_error error;        /* when no variant ran */
  int n_outputs;           /* the call's outputs, whose storage versions a run */
  uopc_tensor *outputs[GUARD_MAX_ARGS];   /* bumps (23.3): the caller's, not held */
} vcache_record;

/* Specialised variants by the value each pins one site to (a range guard
 * [p, p], the first in its set): usable while every specialised variant
 * pins the same site, to a value of its own. Chapter 23.2, "Making guards
 * cheap". */
#define VCACHE_INDEX_SLOTS 64   /* a power of two, twice VCACHE_MAX_VARIANTS */
typedef struct vcache_index {
  int usable, entries;
  guard_site site;
  uint32_t at;                               /* the site's offset in a call */
  int64_t value[VCACHE_INDEX_SLOTS];
  uint8_t variant[VCACHE_INDEX_SLOTS];       /* variant index + 1; 0: empty */
} vcache_index;

struct vcache {
  vcache_options opts;
  char names[GUARD_MAX_ARGS][SYM_NAME_MAX];                       /* the outputs, then the inputs */
  char axis_names[GUARD_MAX_ARGS][UOPC_MAX_RANK][SYM_NAME_MAX];   /* preferred dim names, by input */
  spec_key_parts base;     /* the key parts no call changes */
  int count, n_general;    /* the specialised variants come first, then n_general general ones */
  vcache_variant *variants[VCACHE_MAX_VARIANTS];
  vcache_index index;      /* of the specialised variants */
  vcache_stats stats;
  vcache_record last;
  uopc_counter_id slots[3];  /* the process counters, in VCACHE_C_ order */
  int trace;               /* UOPC_DEBUG >= 3: each decision explained on stderr */
};

/* ---- Lifecycle. */

/* Checks opts (names, counts, policy) and fills the key's fixed parts;
 * builds nothing. Errors: UOPC_E_INVALID, naming the option and its limit. */
int vcache_init(vcache *c, const vcache_options *opts, uopc_error *err);
void vcache_fini(vcache *c);

/* ---- Calls. outputs are the caller's, contiguous, disjoint from the
 * inputs and of the graph's dtypes and shapes. */

/* Chooses (building on a miss) and runs. Errors: UOPC_E_INVALID (counts, a
 * NULL tensor), UOPC_E_BOUNDS (an extent or stride past the policy's
 * limits, an output of the wrong shape), UOPC_E_DTYPE, UOPC_E_LAYOUT,
 * UOPC_E_ALIAS (an output overlapping an argument), UOPC_E_LIMIT, the
 * builder's and the compiler's errors, UOPC_E_GUARD (a bug: a variant's
 * guards failed on the call it was built for; never run), and those of the
 * hooks. Each message names the op, the argument, the value and the limit. */
int vcache_call(vcache *c, uopc_tensor *const *outputs, int n_outputs, const uopc_tensor *const *inputs,
                int n_inputs, uopc_error *err);
/* The first half: records the call and *out = the variant it runs; nothing
 * runs. */
int vcache_choose(vcache *c, uopc_tensor *const *outputs, int n_outputs, const uopc_tensor *const *inputs,
                  int n_inputs, vcache_variant **out, uopc_error *err);
/* The second half: v, the variant vcache_choose just gave, on the call it
 * recorded (whose tensors must still be alive). Errors: UOPC_E_INVALID (v
 * is not that variant), those of exec_run_checked or the run hook. */
int vcache_run(vcache *c, vcache_variant *v, uopc_error *err);

/* Why the last call took its variant: the call's shapes, the variant run,
 * each variant rejected with the guard that failed and the actual values,
 * whether the call built a variant or hit the limit, or the error. Truncates
 * to size. Errors: UOPC_E_INVALID (no call yet). */
int vcache_explain(const vcache *c, char *buf, size_t size, uopc_error *err);

/* ---- The steps of a call, for hooks and tests. */

/* The specialised variants: variants[0 .. count - n_general). */
static inline int vcache_n_specialised(const vcache *c) { return c->count - c->n_general; }

/* Specialised variants that may still be built: the limit counts every
 * variant and keeps one place for a general one (0 or less: none). */
static inline int vcache_room(const vcache *c) {
  return c->opts.policy.max_variants - 1 - vcache_n_specialised(c);
}

/* 1 when every guard of v holds for call (v's plan; guard_set_check's answer). */
static inline __attribute__((always_inline)) int vcache_variant_holds(const vcache_variant *v,
                                                                      const guard_call *call) {
  return guard_plan_holds(&v->plan, call);
}

/* Counts guard sets checked and of those failed, in c and the process. */
static inline __attribute__((always_inline)) void vcache_count_checks(vcache *c, int64_t checks, int64_t failures) {
  c->stats.guard_checks += checks;
  c->stats.guard_failures += failures;
  uopc_counter_bump(c->slots[VCACHE_SLOT_CHECKS], checks);
  if (failures) uopc_counter_bump(c->slots[VCACHE_SLOT_FAILURES], failures);
}

/* The cache's own selection: the specialised variants in order. */
int vcache_select(vcache *c, const guard_call *call, int *index, uopc_error *err);

/* vcache_select's answer and counts, through c->index: only the variant
 * that pins the call's value can hold, so at most one set is checked.
 * Errors: UOPC_E_UNSUPPORTED (the index is not usable). */
int vcache_index_select(vcache *c, const guard_call *call, int *index, uopc_error *err);

/* The cache's own miss: a new specialised variant for the call while
 * vcache_room allows; past it a limit hit, then UOPC_E_LIMIT
 * (VCACHE_LIMIT_FAIL) or vcache_general. */
int vcache_on_miss(vcache *c, const guard_call *call, vcache_variant **out, uopc_error *err);

/* Records that the call wanted a new variant past the limit. */
void vcache_limit_hit(vcache *c);

/* Builds a variant for call (general or specialised, with the op's param),
 * places it (a specialised one before the general ones), and counts it.
 * Its guards must hold on call. Errors: UOPC_E_LIMIT (max_variants in all),
 * UOPC_E_GUARD (a new variant's key equals an old one's), those of the
 * steps: the builder's, a guard that fails on call (an output the graph
 * cannot write: UOPC_E_BOUNDS, UOPC_E_DTYPE, UOPC_E_LAYOUT, UOPC_E_ALIAS),
 * the compiler's, the hooks'. */
int vcache_build(vcache *c, const guard_call *call, int general, int64_t param, vcache_variant **out,
                 uopc_error *err);

/* A graph op's program planned for calls: each dim the lowered program
 * takes read at its first site in v->spec (v->dim_at), every input's element
 * 0 the pointer passed. For hooks that compile v->graph themselves.
 * Errors: UOPC_E_INVALID (an input with an offset), UOPC_E_UNBOUND (a dim no
 * site binds). */
int vcache_plan_run(const vcache *c, vcache_variant *v, uopc_error *err);

/* A general variant for call: the first whose guards hold (each that fails
 * counted; the one found is checked and counted by the caller), else a new
 * one. Errors: UOPC_E_LIMIT (no place left), those of vcache_build. */
int vcache_general(vcache *c, const guard_call *call, vcache_variant **out, uopc_error *err);

/* ---- The graph pipeline (vcache_spec.c), for the cache and its tests. */

/* *spec = the specialisation of call under c's policy; general keeps only
 * what a graph's meaning may need (dtypes, ranks, equal extents, the 0/1
 * constants when pin_01) and drops what only makes code faster. Errors:
 * UOPC_E_BOUNDS (an extent or stride past the limits), UOPC_E_LIMIT (more
 * than SYM_BINDING_MAX dims). */
int vcache_spec_of(const vcache *c, const guard_call *call, int general, vcache_spec *spec, uopc_error *err);

/* The guards of a variant for spec whose graph computes outputs: dtypes and
 * ranks; each input extent's bounds, multiple, constant or equality with
 * its dim's first site; stride bounds; contiguity; each output extent equal
 * to the graph's expression for it; alignment; every output disjoint from
 * every other argument. s is initialised here; the caller frees it
 * (guard_set_fini), also on error. Errors: those of the adders. */
int vcache_spec_guards(const vcache *c, const vcache_spec *spec, const ir_node *const *outputs, guard_set *s,
                       uopc_error *err);

/* The key: op, the graph's hash, target, dtypes, layout, numerics, compiler
 * and the spec's constraints. Errors: those of spec_key_compose. */
int vcache_spec_key(const vcache *c, const vcache_spec *spec, const ir_graph *g, const ir_node *const *outputs,
                    spec_key *key, uopc_error *err);

/* "<op>_fd0_fk1": the op, then per input its dtype's letter and each
 * extent (d<dim>, m<multiple>, k<constant>), s when strided, a<bytes> when
 * aligned, then _o<k>a<bytes> for an aligned output; "<op>_h<hash>" when
 * that is longer than size - 1 or than the lowering takes (LOWER_ENTRY_MAX). */
void vcache_spec_entry(const vcache *c, const vcache_spec *spec, const spec_key *key, char *entry, size_t size);

/* ---- Writing keys, for ops that write their own (tensorjit's artifacts). */

/* Appends printf-style text to buf (of size), never past its end. */
void vcache_text_add(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A key part: the text, or, when it does not fit SPEC_KEY_PART_MAX, its head
 * and the hash of all of it, so two different texts still make different parts. */
void vcache_key_part(char *part, const char *text);

#endif
