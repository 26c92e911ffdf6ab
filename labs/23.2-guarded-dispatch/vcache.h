/* vcache.h: one guarded variant cache for graphs (lab 23.2, given code; the
 * cache that 23.3, 23.4, 23.5 and tensorjit build on).
 * An op is a builder: given a call's specialisation (per input its dtype,
 * rank, each extent a dim or a constant, contiguous or strided, alignment),
 * it builds the ir graph (lab 23.1's core) computing the outputs from the
 * inputs the cache declared. A call checks the variants in order and runs
 * the first whose guards hold; on a miss it derives the call's
 * specialisation under the policy, has the builder make the graph, derives
 * the variant's guards from the specialisation and the graph, keys it
 * (spec_key.h), compiles it through exec and runs it. Equal extents share a
 * dim only because this call had them equal, and that equality is a guard.
 * Past the variant limit the policy runs a general variant or refuses.
 * Chapter 23.2, "One variant cache for every graph". */
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

typedef struct vcache_options {
  const char *op;                        /* a C identifier: the entries' prefix and the key's op */
  int n_inputs, n_outputs;               /* together at most GUARD_MAX_ARGS; outputs are out0, ... */
  const char *inputs[GUARD_MAX_ARGS];   /* input names (C identifiers) */
  const char *axes[GUARD_MAX_ARGS];     /* optional dim names of input k's axes, "m n"; NULL: x_0 ... */
  vcache_build_fn build;
  void *ctx;                             /* passed to build */
  vcache_policy policy;
  uopc_program_options program;          /* compiler, flags (part of the key), cache directory */
} vcache_options;

/* ---- Variants and the cache. */

typedef struct vcache_variant {
  vcache_spec spec;
  guard_set guards;        /* derived from spec and the graph */
  guard_plan plan;         /* guards compiled: what a call checks */
  spec_key key;
  ir_graph *graph;          /* owned */
  exec *exec;               /* owned */
  char entry[64];
  int64_t calls;
} vcache_variant;

typedef struct vcache_stats {   /* this cache's share of the counters */
  int64_t variants_built, guard_checks, guard_failures, calls, limit_hits;
} vcache_stats;

/* What vcache_explain reads. The first variant whose guards hold wins, so
 * the rejected ones are always the first n_rejected; explain finds each
 * one's failing guard again on the copy of the call. */
typedef struct vcache_record {
  int64_t number;          /* 1 for the cache's first call */
  int have_call;           /* 0: the call was refused before call was read */
  guard_call call;
  int chosen;              /* variant index; -1: none ran */
  int n_rejected;
  int built, limit_hit;
  uopc_error error;        /* when no variant ran */
} vcache_record;

typedef struct vcache {
  vcache_options opts;
  char names[GUARD_MAX_ARGS][SYM_NAME_MAX];                   /* out0, ..., then the inputs */
  char axis_names[GUARD_MAX_ARGS][UOPC_MAX_RANK][SYM_NAME_MAX];   /* preferred dim names, by input */
  spec_key_parts base;     /* the key parts no call changes */
  int count, n_general;
  vcache_variant *variants[VCACHE_MAX_VARIANTS];   /* checked in this order */
  vcache_stats stats;
  vcache_record last;
  int64_t *slots[3];       /* the process counters, in VCACHE_C_ order */
  int trace;               /* UOPC_DEBUG >= 3: each decision explained on stderr */
} vcache;

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
 * guards failed on the call it was built for; never run). Each message
 * names the op, the argument, the value and the limit. */
int vcache_call(vcache *c, uopc_tensor *const *outputs, int n_outputs, const uopc_tensor *const *inputs,
                int n_inputs, uopc_error *err);
/* The first half: *out = the variant the call runs; nothing runs. */
int vcache_choose(vcache *c, uopc_tensor *const *outputs, int n_outputs, const uopc_tensor *const *inputs,
                  int n_inputs, vcache_variant **out, uopc_error *err);
/* The second half: v on the call just chosen. Errors: those of exec_run. */
int vcache_run(vcache *c, vcache_variant *v, uopc_tensor *const *outputs, const uopc_tensor *const *inputs,
               uopc_error *err);

/* Why the last call took its variant: the call's shapes, the variant run,
 * each variant rejected with the guard that failed and the actual values,
 * whether the call built a variant or hit the limit, or the error. Truncates
 * to size. Errors: UOPC_E_INVALID (no call yet). */
int vcache_explain(const vcache *c, char *buf, size_t size, uopc_error *err);

/* ---- The steps (vcache_spec.c), for the cache and its tests. */

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
 * every other argument. s is initialised here (guard_set_fini frees it).
 * Errors: those of the adders. */
int vcache_spec_guards(const vcache *c, const vcache_spec *spec, const ir_node *const *outputs, guard_set *s,
                       uopc_error *err);

/* The key: op, the graph's hash, target, dtypes, layout, numerics, compiler
 * and the spec's constraints. Errors: those of spec_key_compose. */
int vcache_spec_key(const vcache *c, const vcache_spec *spec, const ir_graph *g, const ir_node *const *outputs,
                    spec_key *key, uopc_error *err);

/* "<op>_fd0_fk1": the op, then per input its dtype's letter and each
 * extent (d<dim>, m<multiple>, k<constant>), s when strided, a<bytes> when
 * aligned, then _o<k>a<bytes> for an aligned output; "<op>_h<hash>" when
 * that is longer than size - 1. */
void vcache_spec_entry(const vcache *c, const vcache_spec *spec, const spec_key *key, char *entry, size_t size);

#endif
