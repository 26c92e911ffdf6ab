/* tensorjit.h: a dynamic-shape compiler over 23.4's traced models (section
 * 23.7, given code). A model is plain C calling 23.4's tp_ operations; a
 * compiled function traces it with symbolic sizes on a call, compiles the
 * trace with the compiler core, and keeps the result as an artifact of lab
 * 23.2's variant cache, guarded by everything the trace assumed: dtypes and
 * ranks, each size a dim (sizes 0 and 1 constants), the equalities the graph
 * needs, the layout class, the branches it took on sizes, and the value of
 * every scalar argument. A later call runs the first artifact whose guards
 * hold, or traces again. Nothing about sizes is declared by the caller.
 * Chapter 23.7, "The contract". */
#ifndef TENSORJIT_H
#define TENSORJIT_H

#include "tp.h"

#define TJ_MAX_ARGS 16        /* tagged arguments of a call */
#define TJ_MAX_TENSORS 16     /* tensors of a call, containers' included (the variant cache's GUARD_MAX_ARGS) */
#define TJ_MAX_NODES 64       /* arguments and container members of a call, all together */
#define TJ_MAX_DEPTH 4        /* containers one inside another (a call's argument the first) */
#define TJ_MAX_STRUCTURES 8   /* container structures a function keeps, each with its own artifacts */
#define TJ_MAX_OUTPUTS 8
#define TJ_MAX_VARIANTS 32    /* max_variants at most (VCACHE_MAX_VARIANTS) */
#define TJ_DEFAULT_MAX_VARIANTS 8

/* The process counters, named apart from 23.2's ("variants built"). */
#define TJ_C_BUILT "artifacts built"
#define TJ_C_HITS "artifact hits"
#define TJ_C_GUARD_FAILURES "guard failures"
#define TJ_C_EAGER "eager fallbacks"
#define TJ_C_LIMIT "limit hits"
#define TJ_C_UNKEPT "unkept artifact runs"
#define TJ_C_BREAK_RUNS "graph-break runs"   /* registered by the first: other logs keep their lines */

/* ---- Arguments. */

typedef enum tj_kind { TJ_TENSOR = 1, TJ_INT, TJ_DOUBLE, TJ_LIST, TJ_RECORD, TJ_SYM_INT } tj_kind;

/* One argument of a call: a tensor (any layout; borrowed for the call), an
 * int or a double (each specialised by value: an artifact is guarded on it),
 * a symbolic int (a size in [0, 2^24]: a dim of the trace, as an extent is,
 * so one artifact serves every value but 0 and 1; chapter 23.7, "Symbolic
 * ints"), or a container of n arguments (borrowed): a list, or a record whose
 * members are named by C identifiers of at most 24 characters. A container's
 * structure (its kinds, counts, names, and its tensors' dtypes and ranks)
 * selects a set of artifacts of its own, and its tensors are specialised on
 * their concrete shapes; top-level tensors keep their dims. Chapter 23.7,
 * "Containers". */
typedef struct tj_arg {
  tj_kind kind;
  const uopc_tensor *tensor;
  int64_t i;
  double d;
  const struct tj_arg *items;    /* a container's members */
  int n;
  const char *const *names;      /* a record's member names, one per item */
} tj_arg;

static inline tj_arg tj_tensor(const uopc_tensor *t) { return (tj_arg){TJ_TENSOR, t, 0, 0, NULL, 0, NULL}; }
static inline tj_arg tj_int(int64_t v) { return (tj_arg){TJ_INT, NULL, v, 0, NULL, 0, NULL}; }
static inline tj_arg tj_double(double v) { return (tj_arg){TJ_DOUBLE, NULL, 0, v, NULL, 0, NULL}; }
static inline tj_arg tj_sym_int(int64_t v) { return (tj_arg){TJ_SYM_INT, NULL, v, 0, NULL, 0, NULL}; }
static inline tj_arg tj_list(const tj_arg *items, int n) { return (tj_arg){TJ_LIST, NULL, 0, 0, items, n, NULL}; }
static inline tj_arg tj_record(const char *const *names, const tj_arg *items, int n) {
  return (tj_arg){TJ_RECORD, NULL, 0, 0, items, n, names};
}

/* What the model gets for argument k: a tensor's handle, a scalar's value,
 * or a container's members (in[0].items[2].t; a record's also by name), and
 * the kind, for a model that walks a container. An int is also a size, for
 * tp_'s size arithmetic, slices and shapes: a constant for tj_int, a dim
 * for tj_sym_int, whose .i is TJ_NOT_A_VALUE (a model that computed with
 * its value would bake one call's value into an artifact others reuse). */
#define TJ_NOT_A_VALUE INT64_MIN
typedef struct tj_in {
  tp_tensor *t;
  int64_t i;
  double d;
  const struct tj_in *items;
  int n;
  const char *const *names;
  tj_kind kind;
  tp_int size;
} tj_in;

/* Record member name of in; when in has none, a member with no tensor (the
 * model's next operation on it fails, naming the model's line). */
const tj_in *tj_member(const tj_in *in, const char *name);

/* out[0 .. n_outputs) = ... from in[0 .. n_args); returns tp_status(c). */
typedef int (*tj_model)(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user);

/* ---- Options: zero means the default. */

typedef enum tj_switch { TJ_DEFAULT = 0, TJ_ON = 1, TJ_OFF = -1 } tj_switch;

typedef enum tj_on_limit {
  TJ_LIMIT_ERROR,   /* UOPC_E_LIMIT, "specialization limit", naming the guard that failed */
  TJ_LIMIT_EAGER,   /* run the model eagerly (23.4's eager mode), counted */
  TJ_LIMIT_UNKEPT   /* trace and compile a new artifact, run it, keep nothing, counted */
} tj_on_limit;

/* Where artifacts run: generated C compiled by the runtime (0 means this),
 * or CUDA (tj_compile refuses it until tensorjit has that back end, saying
 * what the machine has: tj_is_available). */
typedef enum tj_backend { TJ_BACKEND_C = 1, TJ_BACKEND_CUDA } tj_backend;

typedef struct tj_options {
  const char *name;              /* a C identifier of at most 24 characters; NULL: "f" */
  int n_outputs;                 /* 0: 1 */
  const char *const *arg_names;  /* C identifiers, one per argument; NULL: a0, a1, ... */
  tj_switch dynamic;             /* on: extents are dims; off: one artifact per concrete shape */
  tj_switch specialize_01;       /* on: extents 0 and 1 are constants, other dims >= 2 */
  int strict_native;             /* a trace the compiler cannot build fails, and so does a graph
                                  * break; else the one is interpreted, the other run in regions */
  int max_variants;              /* kept artifacts, and region programs of a structure's graph
                                  * breaks; 0: TJ_DEFAULT_MAX_VARIANTS */
  tj_on_limit on_limit;
  const uopc_program_options *program;   /* copied; NULL: the runtime's defaults with march_native
                                          * (built for this CPU; the runtime drops it under
                                          * valgrind, which has no AVX-512); a zeroed struct:
                                          * portable x86-64 */
  unsigned grad_args;            /* bit k: top-level tensor argument k gets a gradient (tj_call_saving) */
  tj_backend backend;            /* 0: TJ_BACKEND_C */
} tj_options;

typedef struct tj_counts {       /* this function's share of the counters */
  int64_t calls, artifacts_built, artifact_hits, guard_failures, eager_fallbacks, limit_hits, unkept_runs;
  int64_t break_runs;            /* calls run region by region after a graph break */
  int artifacts;                 /* kept now */
} tj_counts;

typedef struct tj_function tj_function;

/* ---- Lifecycle. */

/* A compiled function of model; nothing is traced until the first call,
 * which also fixes the signature (count, kinds, each top-level tensor's
 * dtype and rank; a container's insides are its structure, not the
 * signature). One thread calls it at a time. The caller owns *out (tj_free).
 * Errors: UOPC_E_INVALID (an option outside its range, naming it and the
 * limit), UOPC_E_UNSUPPORTED (backend TJ_BACKEND_CUDA, with tj_is_available's
 * reason), UOPC_E_NOMEM. */
int tj_compile(tj_function **out, tj_model model, void *user, const tj_options *opts, uopc_error *err);
void tj_free(tj_function *f);

/* ---- Calls. */

/* Runs f on args: outs[0 .. n_outputs) receive tensors the caller releases,
 * written only on success. An output that only moves an input's elements
 * (slices, selects, permutes and expands of it) is a view sharing that
 * input's storage, its strides and offset computed for this call (a write
 * through it is a write of the input); every other output is a new
 * contiguous tensor, as is every output of a run past the limit in eager
 * mode (TJ_LIMIT_EAGER: 23.4's eager mode computes). Errors, with nothing run
 * and no output written: UOPC_E_INVALID (count, kind, a NULL tensor, rank, a
 * container's members), UOPC_E_DTYPE, UOPC_E_BOUNDS (an extent past 2^24,
 * a symbolic int outside [0, 2^24]), each naming the argument or member; UOPC_E_LIMIT (more than TJ_MAX_TENSORS
 * tensors or TJ_MAX_NODES nodes in a call; TJ_MAX_STRUCTURES structures kept,
 * none this call's, naming the member that differs; max_variants artifacts of
 * the call's structure, none of whose guards hold, and TJ_LIMIT_ERROR); the model's, naming its line (a shape mismatch is the
 * IR's error; UOPC_E_UNSUPPORTED: a read of data, tp_item, with
 * strict_native or gradients; without them such a call runs region by
 * region, each output a new tensor, counted in break_runs: chapter 23.7,
 * "Data is never read at trace time: graph breaks"); a call-out's
 * (tp_callout_at: its function's error, or UOPC_E_DTYPE, UOPC_E_BOUNDS for
 * an output other than declared, naming it, checked after it runs); the code
 * generator's with strict_native; UOPC_E_NOMEM. */
int tj_call(tj_function *f, const tj_arg *args, int n_args, uopc_tensor *outs, uopc_error *err);

/* For args (as many as the signature has), which artifact would run, or why
 * each kept one is rejected (the guard and this call's values), without
 * running or counting anything; args NULL: every artifact with its guards.
 * Truncates to size. Errors: those of tj_call's argument checks. */
int tj_explain(const tj_function *f, const tj_arg *args, char *buf, size_t size, uopc_error *err);

/* f's counts so far (artifacts: kept, over every structure). */
tj_counts tj_stats(const tj_function *f);

/* The generated C source of f's kept artifact k (0 the first built, over
 * every structure in the order they were made), as it lies on disk beside
 * its cache entry; borrowed, valid until f's next call or tj_free. NULL when
 * there is no artifact k, or it is interpreted or split around call-outs. */
const char *tj_artifact_source(const tj_function *f, int k);

/* ---- Availability. */

/* 1 when compiled execution on backend can run in this process, else 0 with
 * why in reason (truncated to size; reason may be NULL): no C compiler (the
 * runtime's choice: $UOPC_CC, else gcc on PATH), the cache directory refused
 * (its path and the fix), or, for TJ_BACKEND_CUDA, that tensorjit has no CUDA
 * back end yet, with what the machine has (driver, GPU, NVRTC or nvcc).
 * Asked once per back end and process (the environment as the first call
 * finds it; thread-safe), answered from memory after. On 0, tj_call still
 * runs: artifacts the compiler cannot build fail with its error. */
int tj_is_available(tj_backend backend, char *reason, size_t size);

/* ---- Capture only. */

#define TJ_SYMBOLIC 1u   /* extents as dims, 0 and 1 constants: what tj_call would build */
#define TJ_CONCRETE 2u   /* every extent its value */

typedef struct tj_graph tj_graph;

/* The graph model's trace on args would be (one output; arguments named a0,
 * a1, ...), with its guards, compiled and run never. The caller owns *out
 * (tj_graph_free). Errors: those of tj_call's checks and the model's,
 * UOPC_E_INVALID (mode), UOPC_E_UNSUPPORTED (a tensor without storage:
 * storage-free "fake" tracing is not done, nor faked; a read of data). */
int tj_make_graph(tj_graph **out, tj_model model, void *user, const tj_arg *args, int n_args, unsigned mode,
                  uopc_error *err);
/* The graph as text (ir_print's form), then its guards, one a line. Borrowed. */
const char *tj_graph_text(const tj_graph *g);
/* The trace: *outputs its n_outputs outputs. Borrowed. */
const ir_graph *tj_graph_ir(const tj_graph *g, const ir_node *const **outputs, int *n_outputs);
void tj_graph_free(tj_graph *g);

/* ---- Training (tj_train.c). Chapter 23.7, "Training".
 * A forward that saves is a compiled function of its own (f's model, whose
 * outputs are followed by the values of its matmuls, reductions and math
 * functions: exp, log, sqrt, tanh) and
 * returns, with the outputs, a record of the call: packed copies of its
 * tensor arguments (an in-place update of a weight after the forward cannot
 * change its gradient), its scalars, those saved values, and its outputs'
 * dtypes and shapes. tj_backward runs f's backward, a third compiled
 * function: f's model with each saved value standing in for the node that
 * made it, then 23.4's reverse mode seeded by the incoming gradients
 * (tp_backward_seeded_at). The other pointwise nodes and the movement
 * nodes are recomputed inside its fused loops; matmuls, reductions and math
 * functions are read (math functions only when all of them fit the
 * backward's arguments, below). Its artifacts
 * take the record's tensors and the incoming gradients as arguments, each
 * with dims of its own, so one backward artifact serves every compatible
 * size and each record holds its own sizes (backwards may run in any order,
 * any number of times). When the saved values would not fit the backward's
 * arguments (TJ_MAX_TENSORS, TJ_MAX_OUTPUTS), the math functions' are
 * recomputed; when the matmuls' and reductions' alone would not fit either,
 * none are saved and the backward recomputes them (tj_saved_values says 0). */

#define TJ_C_SAVED_PEAK "saved bytes peak"   /* summed over functions: each one's peak of live saved bytes */

typedef struct tj_saved tj_saved;

/* tj_call on args, and *saved = its record (the caller owns it:
 * tj_saved_free, before tj_free(f)). f's options name the gradient
 * arguments (grad_args). Errors: tj_call's; UOPC_E_INVALID (no grad_args,
 * or a bit naming no float tensor argument); UOPC_E_UNSUPPORTED (a
 * container argument, a symbolic int: the backward takes ints by value); UOPC_E_LIMIT (the backward's arguments: the call's
 * and one incoming gradient per output, past TJ_MAX_ARGS or TJ_MAX_TENSORS);
 * nothing is written on error. */
int tj_call_saving(tj_function *f, const tj_arg *args, int n_args, uopc_tensor *outs, tj_saved **saved,
                   uopc_error *err);
/* grads[j] (new tensors the caller releases; one per bit of grad_args, in
 * argument order) = the sum over outputs k of grad_outputs[k] . d out[k] /
 * d argument, for the call saved. grad_outputs[k] has output k's dtype and
 * shape, any layout (a layout class of its own, as every argument's).
 * Errors: UOPC_E_INVALID (saved not f's, a NULL or mis-shaped gradient,
 * naming it and the shape it needs), UOPC_E_DTYPE, and tj_call's for the
 * backward function (an op without a derivative rule names the model's
 * line); nothing is written on error. */
int tj_backward(tj_function *f, const tj_saved *saved, const uopc_tensor *const *grad_outputs, uopc_tensor *grads,
                uopc_error *err);
void tj_saved_free(tj_saved *saved);

/* The saving forward's and the backward's counts (zero before the first
 * tj_call_saving); tj_stats(f) counts tj_call's alone. */
tj_counts tj_forward_stats(const tj_function *f);
tj_counts tj_backward_stats(const tj_function *f);
/* How many values f's forward saves (fixed by the first saving call). */
int tj_saved_values(const tj_function *f);
/* What f's training keeps and computes, as text (truncated to size): the
 * tensors a record copies, each saved value (its op and symbolic shape in
 * the first forward artifact), then each forward and backward artifact with
 * the matmuls and reductions it computes. Chapter 23.7, "Training". */
void tj_train_text(const tj_function *f, char *buf, size_t size);
/* Bytes that f's live saved records hold now, and their peak so far. */
int64_t tj_saved_bytes(const tj_function *f, int64_t *peak);

#endif
