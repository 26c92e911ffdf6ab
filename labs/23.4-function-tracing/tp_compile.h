/* tp_compile.h: a model compiled from its traces (lab 23.4).
 * A compiled function is a variant cache over traces. A call binds the dims
 * of its arguments' shapes and asks each variant whether its guards hold
 * (the student's tp_variant_holds); the first that does runs its forward
 * program, and its backward program when gradients are asked for, without
 * running the model at all. Otherwise the model is traced again with this
 * call's arguments: the trace's guards key a new variant (a recompilation
 * after the first), its graph is lowered and compiled by the core, and the
 * call runs it. A trace that broke (tp_item) is run region by region (the
 * student's tp_region_close and tp_on_break, tp_break.c) and is
 * never kept as a variant: its regions are compiled once each (by the hash
 * of their graphs) and every call traces again. Chapter 23.4, "A variant
 * cache over traces". */
#ifndef TP_COMPILE_H
#define TP_COMPILE_H

#include "tp_internal.h"

#define TP_VARIANTS_MAX 32   /* the variant cache's VCACHE_MAX_VARIANTS */

/* The model: out[k] = ... from in[0 .. n_in - 1]; returns tp_status(c). */
typedef int (*tp_model)(tp_ctx *c, tp_tensor *const *in, tp_tensor **out, void *user);

/* An argument: its name (a C identifier), dtype and shape, whose extents
 * are constants or dims (bounded: tp_call checks them). */
typedef struct tp_arg {
  const char *name;
  uopc_dtype dtype;
  int rank;
  const sym_expr *shape[UOPC_MAX_RANK];
} tp_arg;

typedef struct tp_options {
  int strict;                 /* a graph break is an error naming the line */
  unsigned grad_inputs;       /* bit k: also d out[0] / d in[k] */
  const uopc_program_options *program;
} tp_options;

typedef struct tp_variant {
  tp_guard *guards;
  int n_guards;
  ir_graph *graph;            /* the trace: forward, extended by the backward pass */
  exec *forward, *backward;   /* backward NULL without gradients */
} tp_variant;

typedef struct tp_compiled tp_compiled;

/* A compiled function of model; args (n_in) are copied; opts may be NULL.
 * Nothing is traced until the first call. The caller owns *out.
 * Errors: UOPC_E_INVALID (counts, names, an extent neither a constant nor a
 * dim), UOPC_E_NOMEM. */
int tp_compiled_new(tp_compiled **out, tp_model model, void *user, const tp_arg *args, int n_in, int n_out,
                    const tp_options *opts, uopc_error *err);
void tp_compiled_free(tp_compiled *f);

/* Calls the function on arguments of any layout (one not contiguous is read
 * through a packed copy: tp.h, "Arguments"): out[k] receive new contiguous
 * tensors (the caller releases them), and grads[j] the gradient of out[0] with respect to the
 * j-th input named in grad_inputs (NULL when none are asked for).
 * Errors: UOPC_E_INVALID, UOPC_E_DTYPE, UOPC_E_BOUNDS (an argument that does
 * not fit its tp_arg), UOPC_E_LIMIT (TP_VARIANTS_MAX variants, none of whose
 * guards hold), the model's error (naming its line), those of compiling. */
int tp_call(tp_compiled *f, const uopc_tensor *const *in, uopc_tensor *out, uopc_tensor *grads, uopc_error *err);

int tp_compiled_variant_count(const tp_compiled *f);
const tp_variant *tp_compiled_variant(const tp_compiled *f, int k);

/* The same model run eagerly on the same arguments (no tracing, no
 * compiling): out and grads as tp_call's. */
int tp_run_eager(tp_model model, void *user, const uopc_tensor *const *in, int n_in, int n_out,
                 unsigned grad_inputs, uopc_tensor *out, uopc_tensor *grads, uopc_error *err);

/* ---- One capture, for a later stage that keeps its own artifacts
 * (tensorjit, chapter 23.7): the model traced once, nothing compiled. */

/* An input as the caller declares it; expressions in any arena (copied).
 * strides all NULL: contiguous; otherwise a strided view. */
typedef struct tp_input_decl {
  const char *name;
  uopc_dtype dtype;
  int rank;
  const sym_expr *shape[UOPC_MAX_RANK];
  const sym_expr *strides[UOPC_MAX_RANK];
} tp_input_decl;

typedef struct tp_capture {
  ir_graph *graph;            /* owned: the trace, holding every expression below */
  const ir_node **outputs;    /* owned array of n_outputs nodes of graph */
  int n_outputs;
  tp_guard *guards;           /* owned: what the trace's branches assumed */
  int n_guards;
  int need_unify;             /* 1: the trace stopped, needing need (the error says it too) */
  tp_unify need;
  sym_arena *need_arena;      /* owned: need.expr's nodes, when it has one */
  tp_callout_rec *callouts;   /* owned: the call-outs, in order (their nodes are graph's) */
  int n_callouts;
  int broke;                  /* 1: the trace stopped at a graph break (tp_item), the error naming its line */
} tp_capture;

/* Traces model once, strictly (a graph break is an error naming the line,
 * tp_item of an input too: nothing is read from values but their sizes,
 * bound in b), on inputs declared by decl.
 * With unify, an operation on two sizes that are distinct but equal in this
 * call (or a dim that a broadcast reads as 1) stops the trace: UOPC_E_GUARD,
 * with cap->need_unify and cap->need saying what to make one size (a dim
 * equal to another, to a constant, or to an expression of other dims). The
 * caller frees *cap with tp_capture_fini, also on error. Errors: the
 * model's (naming its line), UOPC_E_INVALID (counts), UOPC_E_NOMEM. */
int tp_capture_run(tp_capture *cap, tp_model model, void *user, const tp_input_decl *decl,
                   const uopc_tensor *const *values, int n_in, int n_out, const sym_binding *b, int unify,
                   uopc_error *err);
void tp_capture_fini(tp_capture *cap);

/* ---- A call whose capture stopped at a graph break (cap->broke), run
 * region by region as tp_call runs a trace that breaks (chapter 23.7,
 * "Graph breaks"): the model traced on this call's values, each tp_item a
 * break (an input's too: no region bakes in an input's value), each region
 * compiled once by its graph's hash into regions and run, nothing kept but
 * the regions. decl, values, n_in, n_out and b as tp_capture_run's; out[k]
 * receive new tensors. Errors: the model's (naming its line), those of
 * compiling and running a region, UOPC_E_LIMIT (a new region past the
 * cache's max), UOPC_E_INVALID, UOPC_E_NOMEM. */
typedef struct tp_region_cache tp_region_cache;
int tp_region_cache_new(tp_region_cache **out, int max, uopc_error *err);   /* max programs kept */
void tp_region_cache_free(tp_region_cache *regions);
int tp_run_breaking(tp_region_cache *regions, tp_model model, void *user, const tp_input_decl *decl,
                    const uopc_tensor *const *values, int n_in, int n_out, const sym_binding *b,
                    const uopc_program_options *opts, uopc_tensor *out, uopc_error *err);

/* The student's: *holds = 1 when every guard of v holds under b (each
 * guard's diff evaluated, compared with 0 by its op, equal to its truth).
 * Errors: those of sym_expr_eval. */
int tp_variant_holds(const tp_variant *v, const sym_binding *b, int *holds, uopc_error *err);

#endif
