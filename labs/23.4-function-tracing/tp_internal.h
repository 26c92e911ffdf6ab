/* tp_internal.h: what tp.c, tp_compile.c and the student files share
 * (lab 23.4). Not for models. */
#ifndef TP_INTERNAL_H
#define TP_INTERNAL_H

#include "exec.h"
#include "tp.h"

#define TP_C_TRACES "traces"
#define TP_C_BREAKS "graph breaks"
#define TP_C_GUARD_FAILURES "guard failures"
#define TP_C_RECOMPILATIONS "recompilations"
#define TP_C_VARIANTS "variants built"
#define TP_C_GUARDS "guards recorded"

/* One guard: (diff op 0) had the truth `truth` when traced, where diff is
 * a - b of the compared sizes, simplified. */
typedef struct tp_guard {
  const sym_expr *diff;
  tp_cmp op;
  int truth;
  tp_site at;
} tp_guard;

struct tp_tensor {
  int id;                      /* creation order in its context: the tape's order */
  const ir_node *node;         /* what made it: op, parameters, shape (its region's graph, or eager's) */
  const ir_node *ref;          /* how later operations read it: node, or an input standing for its value */
  tp_tensor *src[3];           /* the operands, for the backward pass */
  uopc_tensor value;           /* eager, or after its region ran; storage NULL otherwise */
  int is_input;                /* an argument of the model (or a global: is_input 2; a call-out's output: 3) */
  int region;                  /* the region it was recorded in (tracer) */
  tp_site at;                  /* where the model made it: its backward rule's errors name this line */
  tp_tensor *grad;             /* accumulated by tp_backward */
};

typedef struct tp_region_input {   /* a region's input and the value it reads */
  const ir_node *node;
  const uopc_tensor *value;
} tp_region_input;

/* What a capture needs before it can go on (tp_capture_run): dim a equal
 * to dim b, or, with b "", to the constant value, or, with expr, to that
 * expression of other dims (in the context's arena; tp_capture_run copies
 * it into the capture's), for the operation at. */
typedef struct tp_unify {
  char a[SYM_NAME_MAX], b[SYM_NAME_MAX];
  int64_t value;
  const sym_expr *expr;
  tp_site at;
} tp_unify;

/* A call-out as a capture recorded it (tp_callout.c): the declaration
 * (copied), the nodes of the trace's graph that compute its inputs, and the
 * graph inputs that stand for its outputs (the later operations read them). */
typedef struct tp_callout_rec {
  tp_callout decl;
  const ir_node *ins[TP_CALLOUT_MAX];
  const ir_node *outs[TP_CALLOUT_MAX];
  tp_site at;
} tp_callout_rec;

struct tp_ctx {
  tp_mode mode;
  int strict;                  /* a graph break is an error */
  ir_graph *g;                 /* eager: every value's node; tracer: the current region */
  int region;
  tp_tensor **tensors;         /* every handle, in creation order */
  int n_tensors, cap_tensors;
  tp_region_input *inputs;     /* the current graph's inputs, in order, with their values */
  int n_inputs, cap_inputs;
  tp_guard *guards;            /* tracer: what this trace's branches assumed */
  int n_guards, cap_guards;
  int breaks;                  /* graph breaks in this trace */
  tp_site break_at;            /* where the first one was */
  struct tp_region_cache *regions;   /* tracer: compiled regions by graph hash (tp_compile.c) */
  int g_cached;                /* the region cache took g with the program it built (tp_region_run) */
  ir_graph **retired;          /* earlier regions' graphs: sizes the model holds point into them */
  int n_retired, cap_retired;
  const uopc_program_options *opts;
  sym_binding binding;         /* this call's dims (tracer: the sizes the model reads) */
  uopc_error error;
  int capture;                 /* tp_capture_run's: no value is read, an input's included (a graph break) */
  int items_break;             /* tp_run_breaking's: every tp_item is a break, an input's included */
  int refused_break;           /* a tp_item that strict mode refused: the trace stopped at a graph break */
  int unify;                   /* tp_capture_run's: a broadcast of distinct sizes equal here stops the trace */
  int need_unify;              /* ... and it did, needing need */
  tp_unify need;
  tp_callout_rec *callouts;    /* tp_capture_run's: the call-outs recorded, in order (owned) */
  int n_callouts;
  tp_tensor *const *stand_ins; /* tp_stand_in_saved's: values saved by a forward, read for the nodes that made them */
  int n_stand_ins, next_stand_in;
  int save_math;               /* tp_save_math's: math functions' values are saved too */
};

/* Setting a context up and down (tp.c), for tp_compile.c's tracing ones. */
int tp_ctx_init(tp_ctx *c, tp_mode mode, uopc_error *err);
void tp_ctx_fini(tp_ctx *c);
/* Appends an input of c->g and the value it reads. Errors: UOPC_E_NOMEM. */
int tp_ctx_add_input(tp_ctx *c, const ir_node *node, const uopc_tensor *value);
/* *out = v itself (a new reference) when v is row-major contiguous, else a
 * packed copy of it: the inputs of an eager context and of a compiled
 * function's variants are contiguous (tp.h, "Arguments"). Errors: those of
 * uopc_tensor_empty and uopc_tensor_copy, *out left released. */
int tp_contiguous(uopc_tensor *out, const uopc_tensor *v, uopc_error *err);
/* A handle for a traced model's argument (tp_compile.c). */
tp_tensor *tp_input_handle(tp_ctx *c, const ir_node *node, const uopc_tensor *value, tp_site at);

/* Records the context's first error, adding "file:line: " of at; returns
 * its code. */
int tp_fail(tp_ctx *c, tp_site at, int code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Records err (a callee's) as the first error, at at. */
int tp_fail_with(tp_ctx *c, tp_site at, const uopc_error *err);

/* tp.c's steps for the operations of tp_index.c: x's node (NULL: an error
 * in c), the handle of a node just built from x, a size's expression. */
const ir_node *tp_operand(tp_ctx *c, tp_tensor *x, tp_site at);
tp_tensor *tp_made(tp_ctx *c, const ir_node *n, tp_tensor *x, tp_site at);
const sym_expr *tp_int_expr(tp_ctx *c, tp_int v);

/* Appends a guard (tp_guard.c calls it). Errors: UOPC_E_NOMEM. */
int tp_guard_add(tp_ctx *c, const sym_expr *diff, tp_cmp op, int truth, tp_site at);
/* 1 when v op 0. */
int tp_cmp_holds(int64_t v, tp_cmp op);
const char *tp_cmp_text(tp_cmp op);

/* Calls decl->fn on ins (contiguous) into outs, then checks each output
 * against want[k] (its declared shape, evaluated for this call): dtype,
 * rank, sizes; a strided output is packed. On error no output is left.
 * Errors: the function's (prefixed with the call-out's name and at),
 * UOPC_E_INVALID (an output left unset), UOPC_E_DTYPE, UOPC_E_BOUNDS. */
int tp_callout_invoke(const tp_callout *decl, const uopc_tensor *const *ins, const int64_t (*want)[UOPC_MAX_RANK],
                      uopc_tensor *outs, tp_site at, uopc_error *err);

/* ---- Saved values (tensorjit's training, chapter 23.7 "Training"). A
 * forward saves the results of its matmuls and reductions (a node costly to
 * recompute, or one whose value a rule reads), and with tp_save_math those
 * of its math functions (exp, log, sqrt, tanh: tens of operations an
 * element, against one load); a backward traced later reads them instead of
 * computing them again. */

/* 1 for a node whose value a forward traced in c saves: a matmul or a
 * reduction (or, with tp_save_math, a math function) whose extents are dims
 * or constants (one the backward's stand-in can match). */
int tp_saves_value(const tp_ctx *c, const ir_node *n);
/* Math functions' values are saved (on) or recomputed (off, the default)
 * from now on in c; a forward and its backward are traced with the same. */
void tp_save_math(tp_ctx *c, int on);
/* The handles of c made so far whose node tp_saves_value, in creation
 * order, up to max of them in out (out may be NULL); their count. */
int tp_saved_values(const tp_ctx *c, tp_tensor **out, int max);
/* From now on (under the tracer), the k-th handle made whose node
 * tp_saves_value reads saved[k] (a tensor of c, borrowed) through an expand
 * to the node's shape, so a capture that unifies makes their dims one; the
 * handle keeps its node, for its backward rule. tp_stand_ins_end stops it
 * and fails (in c) unless exactly n were read: UOPC_E_UNSUPPORTED, the
 * trace took another path than the forward's. */
void tp_stand_in_saved(tp_ctx *c, tp_tensor *const *saved, int n);
int tp_stand_ins_end(tp_ctx *c, tp_site at);

/* ---- Regions of a trace that breaks (given, tp_compile.c): the plumbing
 * around the student's tp_region_close and tp_on_break (tp_break.c). Each
 * records its failure in c (tp_status) and returns its code. */

/* The current region compiled for its n outputs outs (found in the region
 * cache by the graph's hash, or built and added, the cache then owning c->g;
 * a context without a cache, a test's, builds and frees it) and run on the
 * region's inputs: vals[k] receive new tensors, which the caller owns (none
 * on error). Errors: UOPC_E_INVALID (n < 1), those of lowering, compiling
 * and running, UOPC_E_NOMEM. */
int tp_region_run(tp_ctx *c, const ir_node *const *outs, int n, uopc_tensor *vals, tp_site at);
/* The current graph retired (kept to the end: sizes the model holds point
 * into it) and a new, empty region opened: c->region + 1, no inputs yet.
 * Errors: UOPC_E_NOMEM. */
int tp_region_open(tp_ctx *c, tp_site at);
/* t (which has a value) read in the current region through a new input
 * "v<id>" of t's symbolic shape: t->ref and t->node become it, and it is
 * appended to c->inputs with t's value. Errors: UOPC_E_INVALID (no value),
 * the IR builder's, UOPC_E_NOMEM. */
int tp_region_read(tp_ctx *c, tp_tensor *t, tp_site at);

/* The backward rules the lab gives (tp_grad_given.c): add, sub, neg, div,
 * exp, tanh, where, permute, expand, reshape. *done = 0 for any other op. */
int tp_vjp_given(tp_ctx *c, tp_tensor *y, tp_tensor *gy, tp_tensor **gx, tp_site at, int *done);

/* The rules of the ops beyond the lab's (tp_grad_more.c): abs, log, sqrt,
 * pow, minimum, max, and slice, select, squeeze, diagonal, repeat and cast
 * through the moves they record. *done = 0 for any other op. */
int tp_vjp_more(tp_ctx *c, tp_tensor *y, tp_tensor *gy, tp_tensor **gx, tp_site at, int *done);

/* Backward of one op (given, tp_grad_given.c): the given rules, then
 * tp_vjp_more's, then the student's tp_vjp_rule for the rest. */
int tp_vjp(tp_ctx *c, tp_tensor *y, tp_tensor *gy, tp_tensor **gx, tp_site at);
/* A student function's status as the context's error (at its site): rc
 * unchanged; err recorded when the context has none yet. */
int tp_student(tp_ctx *c, tp_site at, int rc, const uopc_error *err);

/* ---- The student's functions. Each returns a status; err says what went
 * wrong (without the site: the caller adds "file:line: "). An operation of
 * the tensor API that fails inside keeps its error in c (tp_status). */

/* tp_guard.c: *truth = a <op> b in this call; under the tracer, the guard
 * that truth depends on appended with tp_guard_add, unless the dims'
 * bounds decide the comparison for every call. */
int tp_compare_record(tp_ctx *c, tp_int a, tp_cmp op, tp_int b, tp_site at, int *truth, uopc_error *err);
/* tp_break.c: the region so far closed: every handle recorded in it that
 * has no value yet is an output (the model may read any handle it holds),
 * the region is run (tp_region_run) and each of those handles takes its
 * value. Nothing pending: nothing is built or run. Errors: tp_region_run's
 * (in c), UOPC_E_NOMEM. */
int tp_region_close(tp_ctx *c, tp_site at, uopc_error *err);
/* tp_break.c: what a traced model's read of data does (tp_item). Strict:
 * the error UOPC_E_UNSUPPORTED naming what and saying the way out (tests
 * look for "tp_where" and "without strict" in it), no break counted.
 * Otherwise a graph break: counted in c->breaks (tp_item_at adds what it
 * counted to the counter TP_C_BREAKS), the first one's site kept in
 * c->break_at, the region closed
 * (tp_region_close), and capture resumed in a new region (tp_region_open)
 * whose inputs stand for every value the model may still read: after the
 * close every handle has one, and each is read with tp_region_read. */
int tp_on_break(tp_ctx *c, const char *what, tp_site at, uopc_error *err);
/* tp_effect.c: UOPC_OK when effect may run in c (eager mode, or a pure
 * callback); UOPC_E_UNSUPPORTED naming the effect otherwise. */
int tp_effect_check(tp_ctx *c, tp_effect effect, int pure, tp_site at, uopc_error *err);
/* tp_grad.c: the rules of mul, maximum (relu), matmul, sum and mean:
 * gx[i] = d loss / d src[i] given gy = d loss / d y; UOPC_E_UNSUPPORTED for
 * an op without a rule. */
int tp_vjp_rule(tp_ctx *c, tp_tensor *y, tp_tensor *gy, tp_tensor **gx, tp_site at, uopc_error *err);
/* tp_grad.c: *out = g summed over the axes broadcasting added (leading) or
 * stretched (like's constant-1 extents), so it has like's shape; g itself
 * when there are none. Errors: UOPC_E_INVALID when g has fewer axes than
 * like (no broadcast makes that; the message names both ranks), *out left
 * NULL. */
int tp_unbroadcast(tp_ctx *c, tp_tensor *g, const tp_tensor *like, tp_site at, tp_tensor **out, uopc_error *err);
/* tp_grad.c: *slot += contribution (*slot NULL: the contribution itself), for
 * a tensor that reaches the loss by more than one path. Errors:
 * UOPC_E_INVALID when slot or contribution is NULL, *slot untouched. */
int tp_accumulate(tp_ctx *c, tp_tensor **slot, tp_tensor *contribution, tp_site at, uopc_error *err);

#endif
