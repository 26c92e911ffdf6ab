/* tp.h: a small tensor API whose programs run eagerly or are traced
 * (lab 23.4). A model is an ordinary C function over tp_tensor handles:
 *
 *   static int model(tp_ctx *c, tp_tensor *const *in, tp_tensor **out, void *user) {
 *     tp_tensor *h = tp_relu(c, tp_matmul(c, in[0], in[1]));
 *     if (tp_gt(c, tp_size(c, in[0], 0), tp_int_const(c, 16))) h = tp_tanh(c, h);
 *     out[0] = tp_mean(c, h);
 *     return tp_status(c);
 *   }
 *
 * Which way it runs is the context's, not the function's: in an eager
 * context each call computes now (through the core's interpreter, ir_eval.h);
 * under the tracer each call records a node of the graph IR with symbolic
 * shapes, and tp_compiled (tp_compile.h) compiles what was recorded. Every
 * call is a macro that passes __FILE__ and __LINE__, so an error names the
 * line of the model where it happened; each handle keeps its line, so an
 * error found later (a backward rule's, in tp_backward) names the line that
 * made the tensor, and a refused gradient across a break names the break.
 * Errors are kept in the context (the first one wins) and every later call
 * returns NULL: a model checks once, at the end, with tp_status.
 *
 * Arguments: any layout. A handle's value is contiguous (row-major): an
 * argument that is not (a slice, a transpose) is read through a packed copy
 * made when it is wrapped (tp_wrap, tp_run_eager) or called (tp_call), one
 * copy per call; the caller's tensor is never written. tensorjit serves a
 * strided layout without the copy, guarded by layout (chapter 23.7).
 * Chapter 23.4, "What is captured". */
#ifndef TP_H
#define TP_H

#include "ir.h"

typedef struct tp_ctx tp_ctx;
typedef struct tp_tensor tp_tensor;      /* owned by its context: freed with it */

typedef enum tp_mode { TP_EAGER, TP_TRACE } tp_mode;

/* A size: its value in this call, and under the tracer the expression it
 * stands for (NULL in eager mode). Arithmetic on sizes stays symbolic. */
typedef struct tp_int {
  int64_t value;
  const sym_expr *expr;
} tp_int;

typedef enum tp_cmp { TP_LT, TP_LE, TP_GT, TP_GE, TP_EQ, TP_NE } tp_cmp;

/* Where a model called the API: every message names it. */
typedef struct tp_site { const char *file; int line; } tp_site;
#define TP_HERE ((tp_site){__FILE__, __LINE__})

/* ---- Contexts. */

tp_mode tp_ctx_mode(const tp_ctx *c);
/* UOPC_OK, or the context's first error (its code). */
int tp_status(const tp_ctx *c);
/* The first error, with the model's file and line in its message. */
const uopc_error *tp_error(const tp_ctx *c);

/* An eager context, for running a model directly (tp_run_eager). The caller
 * owns *out (tp_ctx_free). Errors: UOPC_E_NOMEM. */
int tp_ctx_new_eager(tp_ctx **out, uopc_error *err);
void tp_ctx_free(tp_ctx *c);
/* A handle for a caller's tensor in c (eager: the tensor, referenced, or a
 * packed copy when it is not contiguous; a tracing context makes its inputs
 * itself). NULL after an error in c. */
tp_tensor *tp_wrap(tp_ctx *c, const uopc_tensor *t);
/* The handle's value as a uopc tensor (eager, or a traced handle after its
 * region ran). NULL when it has none. Borrowed. */
const uopc_tensor *tp_value(const tp_tensor *t);

/* ---- Tensor operations (each records or computes one node). */

tp_tensor *tp_unary_at(tp_ctx *c, ir_op op, tp_tensor *x, tp_site at);
tp_tensor *tp_binary_at(tp_ctx *c, ir_op op, tp_tensor *x, tp_tensor *y, tp_site at);
tp_tensor *tp_scalar_at(tp_ctx *c, double v, uopc_dtype dt, tp_site at);
tp_tensor *tp_matmul_at(tp_ctx *c, tp_tensor *a, tp_tensor *b, tp_site at);
tp_tensor *tp_reduce_at(tp_ctx *c, ir_op op, tp_tensor *x, unsigned axes, int keepdims, tp_site at);
tp_tensor *tp_transpose_at(tp_ctx *c, tp_tensor *x, tp_site at);   /* the last two axes */
tp_tensor *tp_expand_at(tp_ctx *c, tp_tensor *x, int rank, const tp_int *shape, tp_site at);
tp_tensor *tp_where_at(tp_ctx *c, tp_tensor *cond, tp_tensor *a, tp_tensor *b, tp_site at);
/* The same elements under a new shape (row-major), and a size as a scalar
 * tensor of dtype dt (symbolic under the tracer: read at run time). */
tp_tensor *tp_reshape_at(tp_ctx *c, tp_tensor *x, int rank, const tp_int *shape, tp_site at);
tp_tensor *tp_from_int_at(tp_ctx *c, tp_int v, uopc_dtype dt, tp_site at);

#define tp_add(c, x, y) tp_binary_at((c), IR_ADD, (x), (y), TP_HERE)
#define tp_sub(c, x, y) tp_binary_at((c), IR_SUB, (x), (y), TP_HERE)
#define tp_mul(c, x, y) tp_binary_at((c), IR_MUL, (x), (y), TP_HERE)
#define tp_div(c, x, y) tp_binary_at((c), IR_DIV, (x), (y), TP_HERE)
#define tp_maximum(c, x, y) tp_binary_at((c), IR_MAXIMUM, (x), (y), TP_HERE)
#define tp_gt_t(c, x, y) tp_binary_at((c), IR_GT, (x), (y), TP_HERE)
#define tp_neg(c, x) tp_unary_at((c), IR_NEG, (x), TP_HERE)
#define tp_exp(c, x) tp_unary_at((c), IR_EXP, (x), TP_HERE)
#define tp_tanh(c, x) tp_unary_at((c), IR_TANH, (x), TP_HERE)
#define tp_relu(c, x) tp_relu_at((c), (x), TP_HERE)
#define tp_scalar(c, v) tp_scalar_at((c), (v), UOPC_F32, TP_HERE)
#define tp_matmul(c, a, b) tp_matmul_at((c), (a), (b), TP_HERE)
#define tp_sum(c, x, axes, keep) tp_reduce_at((c), IR_SUM, (x), (axes), (keep), TP_HERE)
#define tp_mean(c, x) tp_reduce_at((c), IR_MEAN, (x), 0u, 0, TP_HERE)   /* axes 0: every axis */
#define tp_transpose(c, x) tp_transpose_at((c), (x), TP_HERE)
#define tp_where(c, w, a, b) tp_where_at((c), (w), (a), (b), TP_HERE)
/* maximum(x, 0) */
tp_tensor *tp_relu_at(tp_ctx *c, tp_tensor *x, tp_site at);

/* ---- Sizes and branches on them. */

tp_int tp_size_at(tp_ctx *c, tp_tensor *x, int axis, tp_site at);
tp_int tp_int_const(tp_ctx *c, int64_t v);
tp_int tp_int_add(tp_ctx *c, tp_int a, tp_int b);
tp_int tp_int_mul(tp_ctx *c, tp_int a, tp_int b);
#define tp_size(c, x, axis) tp_size_at((c), (x), (axis), TP_HERE)

/* The truth of a <op> b in this call. Under the tracer it also records the
 * guard that the answer depends on (student, tp_guard.c). */
int tp_compare_at(tp_ctx *c, tp_int a, tp_cmp op, tp_int b, tp_site at);
#define tp_gt(c, a, b) tp_compare_at((c), (a), TP_GT, (b), TP_HERE)
#define tp_lt(c, a, b) tp_compare_at((c), (a), TP_LT, (b), TP_HERE)
#define tp_eq(c, a, b) tp_compare_at((c), (a), TP_EQ, (b), TP_HERE)

/* ---- Reading data, and effects. */

/* A tensor's single element as a double. Under the tracer this is a graph
 * break (student, tp_break.c): the region so far is closed, compiled and
 * run, the value read, and capture resumes in a new region whose inputs are
 * the values computed so far; in strict mode, an error naming the operation
 * and the line. NaN after an error. */
double tp_item_at(tp_ctx *c, tp_tensor *x, tp_site at);
#define tp_item(c, x) tp_item_at((c), (x), TP_HERE)

/* Effects a trace cannot capture; each is rejected under the tracer
 * (student, tp_effect.c) and done in eager mode. */
typedef enum tp_effect {
  TP_EFFECT_PRINT,            /* printing a tensor */
  TP_EFFECT_GLOBAL,           /* a tensor that was not passed in */
  TP_EFFECT_IMPURE_CALLBACK,  /* a user callback not declared pure */
  TP_EFFECT_RANDOM            /* random numbers without an explicit generator input */
} tp_effect;

/* Prints x (eager). */
int tp_print_at(tp_ctx *c, tp_tensor *x, tp_site at);
/* A handle for a tensor the model reads from outside its arguments. */
tp_tensor *tp_global_at(tp_ctx *c, const uopc_tensor *t, tp_site at);
/* Calls fn(user) (eager; under the tracer only when pure, and then at trace
 * time: it must not depend on tensor values). */
int tp_callback_at(tp_ctx *c, void (*fn)(void *), void *user, int pure, tp_site at);
/* Uniform [0, 1) numbers of x's shape from a generator seeded by seed: under
 * the tracer the seed must be an input (a tensor); with has_seed 0 it is an
 * implicit global generator, which a trace cannot capture. */
tp_tensor *tp_rand_like_at(tp_ctx *c, tp_tensor *x, int has_seed, uint64_t seed, tp_site at);
#define tp_print(c, x) tp_print_at((c), (x), TP_HERE)
#define tp_global(c, t) tp_global_at((c), (t), TP_HERE)

/* ---- Gradients. */

/* Reverse mode from loss (a scalar): grads[k] is d loss / d wrt[k], a
 * tensor of wrt[k]'s shape, built from each op's backward rule
 * (student, tp_grad.c) with the same API, so it computes in eager mode and
 * records in a trace. Errors (in c): UOPC_E_INVALID (loss not a scalar,
 * wrt not a float input of this context), UOPC_E_DTYPE (an integer tensor),
 * UOPC_E_UNSUPPORTED (an op without a rule, a graph break before it). */
int tp_backward_at(tp_ctx *c, tp_tensor *loss, tp_tensor *const *wrt, int n, tp_tensor **grads, tp_site at);
#define tp_backward(c, loss, wrt, n, grads) tp_backward_at((c), (loss), (wrt), (n), (grads), TP_HERE)

#endif
