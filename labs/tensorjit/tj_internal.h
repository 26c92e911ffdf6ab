/* tj_internal.h: what tensorjit's files share (section 23.7, given code).
 * A function keeps one group per structure of its calls' containers (one
 * group when it takes none); a group is one variant cache (23.2's vcache)
 * whose op has no outputs in
 * its calls (tensorjit makes them) and replaces the cache's steps by hooks:
 * selection also checks what a guard set cannot (scalars, the trace's
 * comparisons), the contract is a trace (23.4's tp_capture_run), the run
 * makes the outputs. Beside each vcache variant tensorjit keeps a
 * tj_artifact. */
#ifndef TJ_INTERNAL_H
#define TJ_INTERNAL_H

#include "tensorjit.h"
#include "tp_compile.h"
#include "vcache.h"

_Static_assert(TJ_MAX_TENSORS == GUARD_MAX_ARGS, "a call's tensors are the cache's arguments");
_Static_assert(TJ_MAX_VARIANTS == VCACHE_MAX_VARIANTS, "artifacts are the cache's variants");
_Static_assert(TJ_MAX_OUTPUTS <= GUARD_MAX_ARGS, "a variant holds its outputs' nodes");

#define TJ_PATH_MAX 64   /* "params[2].bias" */
#define TJ_MAX_EXTENT VCACHE_DEFAULT_MAX_EXTENT   /* the cache's policy: every extent in [0, 2^24] */

/* How tensorjit lowers every region: fusion by its cost rule (TJ_FUSE_RULE,
 * lab 23.7's tj_fuse_rule), planned temporaries, the matmul in rows, and f32
 * exp and tanh as the generated exp_f32 and tanh_f32 (within their ulps of
 * libm's, vectorised), and a nest with enough work on OpenMP's threads. */
#define TJ_LOWER_FLAGS (LOWER_FUSE | LOWER_VEC_EXP | LOWER_VEC_TANH | LOWER_PARALLEL)

/* One node of a call's arguments, in depth-first order: the top-level
 * arguments and, after each container, its members. */
typedef struct tj_node {
  tj_kind kind;
  int n;                       /* a container's members */
  int depth;                   /* 0: a top-level argument */
  uopc_dtype dtype;            /* a tensor's */
  int rank;
  char path[TJ_PATH_MAX];      /* a top-level argument's name; "params[2].bias" */
} tj_node;

/* A call's arguments flattened: the structure, and the call's own nodes. */
typedef struct tj_flat {
  int n_nodes, n_tensors;
  tj_node nodes[TJ_MAX_NODES];
  const tj_arg *at[TJ_MAX_NODES];       /* borrowed from the call */
  int tensor_node[TJ_MAX_TENSORS];      /* tensor k (depth-first) is node tensor_node[k] */
  int containers;                       /* any node a container */
  int signature_nodes;                  /* nodes[0 .. n_nodes) are a plain signature's (tj_check_args) */
  uopc_tensor carriers[TJ_MAX_TENSORS]; /* tensor k when its node is a symbolic int: its carrier */
} tj_flat;

/* Tensor k of the call: a tensor argument, or a symbolic int's carrier. A
 * symbolic int enters the variant cache as the one extent of a carrier, a
 * contiguous rank-1 bool view of the function's reserved, inaccessible
 * bytes (tj_function.carrier): its value is bound, pinned at 0 and 1 and
 * bounded as every extent is, no kernel reads it (its graph input is only
 * a parameter) and a read would fault, never return a value. Borrowed:
 * the function outlives the call. */
static inline const uopc_tensor *tj_flat_tensor(const tj_flat *fl, int k) {
  const tj_arg *a = fl->at[fl->tensor_node[k]];
  return a->kind == TJ_TENSOR ? a->tensor : &fl->carriers[k];
}

/* ---- Call-outs: an artifact's regions around them (tj_callout.c). */

#define TJ_CALLOUT_VALUES (TP_CALLOUTS_MAX * TP_CALLOUT_MAX)   /* call-out outputs of one artifact */
_Static_assert(TP_CALLOUTS_MAX <= 4, "a region's entry names its call-out by one digit (tj_callout.c)");

/* The region before call-out k: a program computing its inputs that are not
 * values already (an argument, an earlier call-out's output), read from every
 * input of the graph and its own dims (dim_at: their sites in a call). */
typedef struct tj_stage {
  exec *exec;                                /* owned; NULL when it computes nothing */
  const ir_node *computed[TP_CALLOUT_MAX];   /* its outputs, distinct */
  int n_computed;
  int n_dims;
  uint32_t dim_at[UOPC_SIGNATURE_MAX];
} tj_stage;

typedef struct tj_callouts {
  int n;
  tp_callout_rec recs[TP_CALLOUTS_MAX];      /* the capture's (nodes in the variant's graph) */
  tj_stage stages[TP_CALLOUTS_MAX];
} tj_callouts;

/* A call's call-out outputs: graph input n_tensors + q is outs[q]. */
typedef struct tj_callout_values {
  int n;
  uopc_tensor outs[TJ_CALLOUT_VALUES];       /* owned */
} tj_callout_values;

/* What an artifact holds beside its variant. */
typedef struct tj_artifact {
  vcache_variant *v;         /* the cache's (it owns the graph, guards, program) */
  tp_guard *guards;          /* owned: the trace's comparisons, then one per dim read as an expression of
                              * others (d - e == 0, tj_artifact.c); expressions in v->graph */
  int n_guards;
  int n_branches;            /* guards[0, n_branches): the comparisons */
  tj_arg scalars[TJ_MAX_NODES];  /* the call's, by node (tensors and containers unused) */
  int interpreted;           /* generation failed without strict_native: ir_eval runs it */
  int view_of[TJ_MAX_OUTPUTS];   /* output k is a view of tensor view_of[k]; -1: computed */
  ir_layout view[TJ_MAX_OUTPUTS];   /* that view's affine form (expressions in v's graph) */
  int n_computed;            /* outputs a kernel (or the interpreter) computes */
  int64_t number;            /* the call that built it */
  tj_callouts *callouts;     /* owned; NULL when the trace called none */
  ir_graph *passed;          /* owned: v's graph after the core's passes, which v->exec was lowered
                              * from (so freed after it); NULL when nothing was compiled */
} tj_artifact;

typedef struct tj_group tj_group;

/* The call in flight (the hooks read it through the cache's ctx). */
typedef struct tj_current {
  const tj_arg *args;
  tj_flat flat;                       /* its nodes; scalars are read from here */
  const uopc_tensor *tensors[TJ_MAX_TENSORS];
  uopc_tensor outs[TJ_MAX_OUTPUTS];   /* the run's, handed over on success */
  int eager, unkept;                  /* the limit was hit under TJ_LIMIT_EAGER, TJ_LIMIT_UNKEPT */
  int broke;                          /* the capture broke, and the regions ran into outs */
} tj_current;

/* The artifacts of one structure: what the first call with it fixed. */
struct tj_group {
  tj_function *f;
  int number;                         /* 1, 2, ...: for messages */
  int n_nodes, n_tensors;
  tj_node nodes[TJ_MAX_NODES];        /* the structure */
  int tensor_node[TJ_MAX_TENSORS];    /* cache input k is node tensor_node[k] */
  char inputs[TJ_MAX_TENSORS][SYM_NAME_MAX];   /* its name in the cache: "x", "params_2_bias" */
  int containers;                     /* any node a container */
  int n_scalars;                      /* int and double nodes: what tj_scalars_hold compares */
  char op[32];                        /* the cache's op: "tj_<label>", "tj_<label>_s2", ... */
  vcache cache;
  tj_artifact arts[TJ_MAX_VARIANTS];
  int n_arts;
  tj_artifact pending;                /* the one the cache is building */
  tp_region_cache *regions;           /* owned; NULL until a capture breaks (tj_artifact.c) */
};

struct tj_function {
  tj_model model;
  void *user;
  tj_options opts;                    /* resolved: no zero defaults left */
  uopc_program_options program;
  char name[32];                      /* "tj_<label>" */
  char label[32];                     /* the user's name, for messages */
  char arg_names[TJ_MAX_ARGS][SYM_NAME_MAX];
  int fixed;                          /* the signature is fixed (the first call) */
  int plain;                          /* ... and takes no container: one structure, one group */
  int n_args;
  tj_kind kinds[TJ_MAX_ARGS];         /* the top-level signature */
  uopc_dtype dtypes[TJ_MAX_ARGS];
  int ranks[TJ_MAX_ARGS];
  tj_group *groups[TJ_MAX_STRUCTURES];   /* owned; in the order they were made */
  int n_groups;
  tj_current cur;
  /* The last computed outputs' storage, one per output, kept referenced: a
   * call whose caller has released it (this the only reference) and whose
   * output has as many elements of the dtype takes it back instead of
   * allocating, as a caching allocator would; freed by tj_free. */
  uopc_tensor spare[TJ_MAX_OUTPUTS];
  /* The bytes symbolic ints' carriers view: TJ_MAX_EXTENT + 1 of address
   * space mapped without access (no memory behind them, no tensor inside
   * them), wrapped as one bool tensor. */
  void *carrier_map;
  size_t carrier_bytes;
  uopc_tensor carrier;
  tj_counts counts;
  uopc_counter_id hits, eager, limit, unkept, failures;
  int no_breaks;                      /* a graph break is refused (training's forward and backward) */
  struct tj_train *train;             /* tj_train.c's: NULL until a call saves */
  void (*train_release)(struct tj_train *);   /* frees train (set with it; tj_free calls it) */
};

/* The files form layers, each calling only those before it: tj_available.c,
 * tj_args.c, tj_structure.c, tj_holds.c, tj_view.c, tj_callout.c,
 * tj_explain.c, tj_artifact.c, tj.c, tj_graph.c, tj_train.c. */

/* ---- tj_args.c */

/* Checks args: count, kinds, tensors present and, once a call has fixed
 * the signature, each against it, naming the argument; then flattens them
 * into *flat, checking each container's members (naming the member's path)
 * and the limits. Errors: UOPC_E_INVALID, UOPC_E_DTYPE, UOPC_E_LIMIT
 * (TJ_MAX_TENSORS, TJ_MAX_NODES). */
int tj_check_args(const tj_function *f, const tj_arg *args, int n_args, tj_flat *flat, uopc_error *err);

/* The model's view of flat's arguments: in[0 .. n_args) and their members
 * in pool (TJ_MAX_NODES of them), tensor leaf k's handle leaves[k]. A
 * symbolic int's size is its carrier leaf's extent read in c (a dim under
 * the tracer), or its value where that leaf is NULL (eager runs). */
void tj_in_tree(tp_ctx *c, const tj_flat *flat, int n_args, tp_tensor *const *leaves, tj_in *in, tj_in *pool);

/* ---- tj_structure.c: which group a call's structure selects. */

/* The group of f whose structure flat has; NULL when none. */
tj_group *tj_group_of(const tj_function *f, const tj_flat *flat);
/* Why g's structure is not flat's ("guard 'params[2].bias is a tensor'
 * failed: this call's params[2].bias is missing"); "" when it is. */
void tj_structure_reject(const tj_group *g, const tj_flat *flat, char *buf, size_t size);
/* g's structure as one line: "params: list of 3; params[0]: f32 rank 2; ...". */
void tj_structure_text(const tj_group *g, char *buf, size_t size);

/* ---- tj.c */

/* Fixes f's signature from args (checked by tj_check_args), when no call
 * has. Errors: UOPC_E_INVALID. */
int tj_fix_signature(tj_function *f, const tj_arg *args, int n_args, uopc_error *err);
/* A new group of f for flat's structure, its cache set up; *out borrowed
 * (f owns it). Errors: UOPC_E_LIMIT (TJ_MAX_STRUCTURES, naming why each kept
 * one is rejected), UOPC_E_INVALID, UOPC_E_NOMEM, vcache_init's. */
int tj_group_new(tj_function *f, const tj_flat *flat, tj_group **out, uopc_error *err);

/* ---- tj_artifact.c: the cache's hooks, and its options for f. */

/* Which extents of a call are one size: a union-find over the inputs' axes
 * (site = arg * UOPC_MAX_RANK + axis), the classes pinned to their value,
 * and each class's bounds as the trace narrowed them. The capture starts
 * with every site its own class, unpinned, bounds [INT64_MIN, INT64_MAX]. */
#define TJ_SITES (TJ_MAX_TENSORS * UOPC_MAX_RANK)
typedef struct tj_sizes {
  int parent[TJ_SITES];
  int pinned[TJ_SITES];
  int64_t lo[TJ_SITES], hi[TJ_SITES];
} tj_sizes;

static inline int tj_site(guard_site at) { return at.arg * UOPC_MAX_RANK + at.axis; }
/* The representative of site x's class. */
int tj_sizes_root(const tj_sizes *s, int x);
/* A new dim of spec for the size at site at, bounds [lo, hi], named after
 * its input and axis ("x_0"); *out its index. Errors: UOPC_E_LIMIT
 * (SYM_BINDING_MAX dims), sym_dim_init's. */
int tj_new_dim(const tj_group *g, vcache_spec *spec, guard_site at, int64_t lo, int64_t hi, int *out,
               uopc_error *err);

void tj_cache_options(tj_group *g, vcache_options *o);
/* The contract of a new artifact of g for call (f->cur's arguments): v's
 * spec, graph (owned by v), guard set, key and entry; a's trace guards
 * (owned by a) and scalars. Errors: the model's, the capture's, the guards'. */
int tj_contract(tj_group *g, const guard_call *call, vcache_variant *v, tj_artifact *a, uopc_error *err);
/* Past the limit (TJ_LIMIT_UNKEPT): a new artifact of g for call, traced,
 * compiled, run into f->cur.outs and freed; nothing is kept. Errors: those
 * of the contract, compiling and running. */
int tj_run_unkept(tj_group *g, const guard_call *call, uopc_error *err);
/* g's artifact for variant v; NULL when none. A kept variant points at its
 * artifact (v->own, set when it is kept); the one being built, or run
 * unkept, is the pending one. Inline: selection asks for every variant. */
static inline tj_artifact *tj_artifact_of(const tj_group *g, const vcache_variant *v) {
  if (v->own) return v->own;
  return g->pending.v == v ? (tj_artifact *)&g->pending : NULL;
}

/* ---- tj_holds.c */

/* b = the spec's dims, each read at its site of call. */
void tj_binding_of(const vcache_spec *spec, const guard_call *call, sym_binding *b);
/* 1 when a's scalars equal the call's (flat's nodes; doubles by their bits). */
int tj_scalars_hold(const tj_group *g, const tj_artifact *a, const tj_flat *flat, int *failed);

/* ---- tj_view.c */

/* Which of v's outputs are views of an input (a chain of slices, selects,
 * permutes and expands over it), with their layouts; a->n_computed the
 * others. Errors: those of ir_view_layout. */
int tj_view_plan(tj_artifact *a, const vcache_variant *v, int n_outputs, uopc_error *err);

/* ---- tj_callout.c: the regions around a trace's call-outs. */

/* a->callouts = cap's call-outs (copied; none: NULL), each with what the
 * region before it computes. Errors: UOPC_E_NOMEM. */
int tj_callouts_take(tj_artifact *a, const tp_capture *cap, uopc_error *err);
/* The program of each region before a call-out, from v's graph, planned
 * on v's spec. Errors: the core's (a region that cannot be generated is an
 * error: only the last region may be interpreted), vcache_plan_run's. */
int tj_callouts_compile(const vcache *c, vcache_variant *v, tj_artifact *a, uopc_error *err);
/* Runs a's call-outs in order on call under b, each after the region that
 * computes its inputs: their outputs, checked against the declarations, into
 * *vals (the caller finis it, also on error). Errors: the regions', the
 * call-outs' (the function's, UOPC_E_DTYPE and UOPC_E_BOUNDS naming it). */
int tj_callouts_run(const tj_group *g, const tj_artifact *a, const guard_call *call, const sym_binding *b,
                    tj_callout_values *vals, uopc_error *err);
void tj_callout_values_fini(tj_callout_values *vals);
void tj_callouts_free(tj_callouts *co);
/* Appends each call-out's line (after indent) to buf; for the key, its
 * name, metadata kind and inputs' hash. */
void tj_callouts_text(const tj_artifact *a, const char *indent, char *buf, size_t size);
void tj_callouts_key(const tj_artifact *a, const ir_graph *graph, char *buf, size_t size);

/* ---- Lab 23.7's student files (labs/23.7-tensorjit/; README.md there). */

/* tj_sizes.c. The extent of call at site at (a shape axis) in spec, as *e:
 * a constant (e->dim = -1, e->value the size) when the function is static,
 * the tensor is a container's member, the size is 0 or 1 under
 * specialize_01, or its class is pinned; else its class's dim: the one
 * dim_of_root[root] already made, or a new one (tj_new_dim) bounded by the
 * class's bounds and [2 or 0, max_extent], recorded in dim_of_root. Never a
 * dim shared because two sizes are equal. Errors: UOPC_E_BOUNDS (the size
 * outside [0, max_extent], naming the argument and axis), tj_new_dim's. */
int tj_extent_of(const tj_group *g, const tj_sizes *s, const guard_call *call, guard_site at, int *dim_of_root,
                 vcache_spec *spec, vcache_extent *e, uopc_error *err);
/* What a trace needed made a fact: sites a and b one class (bounds the
 * intersection of both); b < 0: a's class pinned to its value. Errors:
 * UOPC_E_INVALID (a site outside [0, TJ_SITES)). */
int tj_sizes_unify(tj_sizes *s, int a, int b, uopc_error *err);
/* The trace compared c*d + k with 0 by op and found truth (d the size at
 * site): the range of d that outcome allows, intersected into its class's
 * bounds (integer division rounded toward the range's inside); *changed =
 * 1 when a bound moved, untouched otherwise. TP_NE bounds nothing. Errors:
 * UOPC_E_INVALID (a site outside [0, TJ_SITES), c == 0). */
int tj_sizes_narrow(tj_sizes *s, int site, int64_t c, int64_t k, tp_cmp op, int truth, int *changed,
                    uopc_error *err);

/* tj_serve.c. *failed = the first trace guard of a that fails on call
 * (each evaluated with 23.4's tp_variant_holds under the spec's binding
 * at call), or -1; *value its diff's value. Errors: those of the
 * evaluation. */
int tj_trace_holds(const tj_artifact *a, const guard_call *call, int *failed, int64_t *value, uopc_error *err);
/* *out = output k of a as a view of base (the tensor it views) under b: its
 * layout a->view[k] (shape, strides, offset: expressions) evaluated, base's
 * storage retained, the offset base's plus the view's, shape and strides 0
 * past the view's rank. On error out is
 * untouched. Errors: those of sym_expr_eval. */
int tj_view_make(const tj_artifact *a, int k, const uopc_tensor *base, const sym_binding *b, uopc_tensor *out,
                 uopc_error *err);

/* tj_fuse.c. Tensorjit's fusion rule (lower.h's lower_fuse_rule, called by
 * the core's LOWER_FUSE through TJ_FUSE_RULE): over the nodes of g the
 * outputs reach (used[id]), with store[id].why already set for the outputs,
 * reductions and matmuls (lower.h's lower_fuse_marks made both, as lab 23.7's
 * tests make them), set store[id] = {LOWER_WHY_COST, ops, reads} for
 * each other computed node (lower_computes) with ops * (reads - 1) >
 * LOWER_STORE_COST, where
 *   ops(n) = lower_op_units(n) plus ops of each operand not stored (a stored
 *            node's own operands are not counted: it is a load);
 *   reads(n) = the sum over its consumers m of r(m), times
 *            LOWER_BROADCAST_READS where m broadcasts n (lower_broadcasts);
 *            r(m) = 1 when m is stored (a reduction too: it reads each
 *            element once), else reads(m);
 * decided consumers first (highest id first), so that a consumer stored
 * makes its operands read once. Counts saturate at 2^40. Errors:
 * UOPC_E_NOMEM. */
int tj_fuse_rule(const ir_graph *g, const unsigned char *used, lower_stored *store, uopc_error *err);

/* How tensorjit lowers every region: the rule above, named in the banner. */
extern const lower_fuse_rule TJ_FUSE_RULE;

/* ---- tj_explain.c */

/* "x: f32 (5, 3); scale = 3": the call (its leaves), for messages. */
void tj_call_text(const tj_flat *flat, const guard_call *call, char *buf, size_t size);

/* a's guards, one a line, each after indent. */
void tj_guards_text(const tj_group *g, const tj_artifact *a, const char *indent, char *buf, size_t size,
                    size_t *used);

/* Why artifact a rejects call with flat's values ("guard 'x is contiguous'
 * failed: ..."); "" when it would serve it. Errors: those of guard_set_check. */
int tj_reject_text(const tj_group *g, const tj_artifact *a, const guard_call *call, const tj_flat *flat,
                   char *buf, size_t size, uopc_error *err);

#endif
