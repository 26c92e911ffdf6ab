/* tj_internal.h: what tensorjit's files share (section 23.7, given code).
 * A function is one variant cache (23.2's vcache) whose op has no outputs in
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

/* What an artifact holds beside its variant. */
typedef struct tj_artifact {
  vcache_variant *v;         /* the cache's (it owns the graph, guards, program) */
  tp_guard *guards;          /* owned: the trace's comparisons (expressions in v->graph) */
  int n_guards;
  tj_arg scalars[TJ_MAX_ARGS];   /* the call's, by argument (tensors unused) */
  int interpreted;           /* generation failed without strict_native: ir_eval runs it */
  int view_of[TJ_MAX_OUTPUTS];   /* output k is a view of tensor view_of[k]; -1: computed */
  ir_layout view[TJ_MAX_OUTPUTS];   /* that view's affine form (expressions in v's graph) */
  int n_computed;            /* outputs a kernel (or the interpreter) computes */
  int64_t number;            /* the call that built it */
} tj_artifact;

/* The call in flight (the hooks read it through the cache's ctx). */
typedef struct tj_current {
  const tj_arg *args;
  const uopc_tensor *tensors[TJ_MAX_TENSORS];
  uopc_tensor outs[TJ_MAX_OUTPUTS];   /* the run's, handed over on success */
  int eager, unkept;                  /* the limit was hit under TJ_LIMIT_EAGER, TJ_LIMIT_UNKEPT */
} tj_current;

struct tj_function {
  tj_model model;
  void *user;
  tj_options opts;                    /* resolved: no zero defaults left */
  uopc_program_options program;
  char name[32];                      /* the cache's op: "tj_<label>" */
  char label[32];                     /* the user's name, for messages */
  char arg_names[TJ_MAX_ARGS][SYM_NAME_MAX];
  int fixed;                          /* the signature is fixed (the first call) */
  int n_args, n_tensors;
  tj_kind kinds[TJ_MAX_ARGS];
  uopc_dtype dtypes[TJ_MAX_ARGS];
  int ranks[TJ_MAX_ARGS];
  int tensor_arg[TJ_MAX_TENSORS];     /* tensor k is argument tensor_arg[k] */
  vcache cache;
  tj_artifact arts[TJ_MAX_VARIANTS];
  int n_arts;
  tj_artifact pending;                /* the one the cache is building */
  tj_current cur;
  tj_counts counts;
  uopc_counter_id hits, eager, limit, unkept;
};

/* The files form layers, each calling only those before it: tj_args.c,
 * tj_holds.c, tj_view.c, tj_explain.c, tj_artifact.c, tj.c, tj_graph.c. */

/* ---- tj_args.c */

/* Checks args: count, kinds, tensors present and, once a call has fixed
 * the signature, each against it, naming the argument. Errors:
 * UOPC_E_INVALID, UOPC_E_DTYPE. */
int tj_check_args(const tj_function *f, const tj_arg *args, int n_args, uopc_error *err);

/* ---- tj.c */

/* Fixes f's signature from args (checked by tj_check_args) and sets up its
 * cache. Errors: UOPC_E_INVALID, UOPC_E_LIMIT (tensors), vcache_init's. */
int tj_fix_signature(tj_function *f, const tj_arg *args, int n_args, uopc_error *err);

/* ---- tj_artifact.c: the cache's hooks, and its options for f. */

void tj_cache_options(tj_function *f, vcache_options *o);
/* The contract of a new artifact for call (f->cur's arguments): v's spec,
 * graph (owned by v), guard set, key and entry; a's trace guards (owned by
 * a) and scalars. Errors: the model's, the capture's, the guards'. */
int tj_contract(tj_function *f, const guard_call *call, vcache_variant *v, tj_artifact *a, uopc_error *err);
/* Past the limit (TJ_LIMIT_UNKEPT): a new artifact for call, traced,
 * compiled, run into f->cur.outs and freed; nothing is kept. Errors: those
 * of the contract, compiling and running. */
int tj_run_unkept(tj_function *f, const guard_call *call, uopc_error *err);
/* f's artifact for variant v; NULL when none. */
tj_artifact *tj_artifact_of(const tj_function *f, const vcache_variant *v);

/* ---- tj_holds.c */

/* b = the spec's dims, each read at its site of call. */
void tj_binding_of(const vcache_spec *spec, const guard_call *call, sym_binding *b);
/* 1 when a's scalars equal args' (doubles by their bits). */
int tj_scalars_hold(const tj_function *f, const tj_artifact *a, const tj_arg *args, int *failed);
/* *failed = the first trace guard of a that fails on call, or -1; *value its
 * diff's value. Errors: those of sym_expr_eval. */
int tj_trace_holds(const tj_artifact *a, const guard_call *call, int *failed, int64_t *value, uopc_error *err);

/* ---- tj_view.c */

/* Which of v's outputs are views of an input (a chain of slices, selects,
 * permutes and expands over it), with their layouts; a->n_computed the
 * others. Errors: those of ir_view_layout. */
int tj_view_plan(tj_artifact *a, const vcache_variant *v, int n_outputs, uopc_error *err);
/* *out = output k of a as a view of base (the tensor it views) under b:
 * base's storage, retained. Errors: those of sym_expr_eval. */
int tj_view_make(const tj_artifact *a, int k, const uopc_tensor *base, const sym_binding *b, uopc_tensor *out,
                 uopc_error *err);

/* ---- tj_explain.c */

/* "x: f32 (5, 3); scale = 3": the call, for messages. */
void tj_call_text(const tj_function *f, const guard_call *call, const tj_arg *args, char *buf, size_t size);

/* a's guards, one a line, each after indent. */
void tj_guards_text(const tj_function *f, const tj_artifact *a, const char *indent, char *buf, size_t size,
                    size_t *used);

/* Why artifact a rejects call with args ("guard 'x is contiguous' failed:
 * ..."); "" when it would serve it. Errors: those of guard_set_check. */
int tj_reject_text(const tj_function *f, const tj_artifact *a, const guard_call *call, const tj_arg *args,
                   char *buf, size_t size, uopc_error *err);

#endif
