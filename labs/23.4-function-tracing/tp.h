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
#define tp_amax(c, x, axes, keep) tp_reduce_at((c), IR_MAX, (x), (axes), (keep), TP_HERE)
#define tp_minimum(c, x, y) tp_binary_at((c), IR_MINIMUM, (x), (y), TP_HERE)
#define tp_pow(c, x, y) tp_binary_at((c), IR_POW, (x), (y), TP_HERE)
#define tp_abs(c, x) tp_unary_at((c), IR_ABS, (x), TP_HERE)
#define tp_log(c, x) tp_unary_at((c), IR_LOG, (x), TP_HERE)
#define tp_sqrt(c, x) tp_unary_at((c), IR_SQRT, (x), TP_HERE)
#define tp_transpose(c, x) tp_transpose_at((c), (x), TP_HERE)
#define tp_where(c, w, a, b) tp_where_at((c), (w), (a), (b), TP_HERE)
/* maximum(x, 0) */
tp_tensor *tp_relu_at(tp_ctx *c, tp_tensor *x, tp_site at);

/* ---- Statistics (tp_stats.c). Chapter 23.4, "Variance and standard deviation". */

/* The variance of x over axes (0: every axis; keepdims as tp_sum's):
 * sum((x - mean)^2) / max(0, n - correction), n the product of the reduced
 * extents read at run time, as PyTorch's var (NumPy's ddof). The correction
 * is correction_t, a rank-0 tensor (a model's input: every correction shares
 * one artifact), or with correction_t NULL the constant correction (one
 * artifact per value). Degrees of freedom <= 0 give inf, 0 / 0 NaN (an
 * empty x, one element with correction 1), as PyTorch and NumPy give. root:
 * the standard deviation, whose gradient is 0 where it is 0. *mean (when
 * mean is not NULL) receives the mean, kept or not as the result.
 * Errors (in c): UOPC_E_DTYPE (x not float), UOPC_E_INVALID (an axis
 * outside x, a correction_t of rank > 0). */
tp_tensor *tp_moments_at(tp_ctx *c, tp_tensor *x, unsigned axes, int keepdims, double correction,
                         tp_tensor *correction_t, int root, tp_tensor **mean, tp_site at);
#define tp_var(c, x, axes, keep, corr) tp_moments_at((c), (x), (axes), (keep), (corr), NULL, 0, NULL, TP_HERE)
#define tp_std(c, x, axes, keep, corr) tp_moments_at((c), (x), (axes), (keep), (corr), NULL, 1, NULL, TP_HERE)
/* (var, mean): the variance returned, the mean in *mean. */
#define tp_var_mean(c, x, axes, keep, corr, mean) tp_moments_at((c), (x), (axes), (keep), (corr), NULL, 0, (mean), TP_HERE)
#define tp_std_mean(c, x, axes, keep, corr, mean) tp_moments_at((c), (x), (axes), (keep), (corr), NULL, 1, (mean), TP_HERE)

/* ---- Softmax, log-softmax and layer norm (tp_nn.c), each recorded as the
 * primitives it is made of (its derivative is theirs). Chapter 23.1,
 * "Passes over the graph". */

/* exp(x - max) / sum(exp(x - max)) over axis (negative: from the last).
 * Errors (in c): UOPC_E_DTYPE (x not float), UOPC_E_INVALID (an axis outside
 * x); an empty axis is refused at launch, as its max is (UOPC_E_BOUNDS). */
tp_tensor *tp_softmax_at(tp_ctx *c, tp_tensor *x, int axis, tp_site at);
/* (x - max) - log(sum(exp(x - max))) over axis; as tp_softmax_at. */
tp_tensor *tp_log_softmax_at(tp_ctx *c, tp_tensor *x, int axis, tp_site at);
/* (x - mean) / sqrt(var + eps) over the last axis (var with correction 0,
 * the count read at run time), times weight and plus bias when they are not
 * NULL (each broadcast against x: the last axis's extent). Errors: as
 * tp_softmax_at's, and the broadcast's. */
tp_tensor *tp_layer_norm_at(tp_ctx *c, tp_tensor *x, tp_tensor *weight, tp_tensor *bias, double eps, tp_site at);
#define tp_softmax(c, x, axis) tp_softmax_at((c), (x), (axis), TP_HERE)
#define tp_log_softmax(c, x, axis) tp_log_softmax_at((c), (x), (axis), TP_HERE)
#define tp_layer_norm(c, x, w, b, eps) tp_layer_norm_at((c), (x), (w), (b), (eps), TP_HERE)

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

/* ---- Size arithmetic and indexing (tp_index.c). Chapter 23.7, "Indexing". */

/* Python's integer operations on sizes: // and % floor (the remainder has
 * the divisor's sign), min and max. Under the tracer a symbolic divisor
 * must be proved >= 1 from the dims' bounds. Errors (in c): UOPC_E_INVALID
 * (a divisor of 0, or one that may be 0 or negative). */
typedef enum tp_int_op { TP_INT_SUB, TP_INT_FLOORDIV, TP_INT_MOD, TP_INT_MIN, TP_INT_MAX } tp_int_op;
tp_int tp_int_op_at(tp_ctx *c, tp_int_op op, tp_int a, tp_int b, tp_site at);
#define tp_int_sub(c, a, b) tp_int_op_at((c), TP_INT_SUB, (a), (b), TP_HERE)
#define tp_int_floordiv(c, a, b) tp_int_op_at((c), TP_INT_FLOORDIV, (a), (b), TP_HERE)
#define tp_int_mod(c, a, b) tp_int_op_at((c), TP_INT_MOD, (a), (b), TP_HERE)
#define tp_int_min(c, a, b) tp_int_op_at((c), TP_INT_MIN, (a), (b), TP_HERE)
#define tp_int_max(c, a, b) tp_int_op_at((c), TP_INT_MAX, (a), (b), TP_HERE)
#define tp_int_neg(c, a) tp_int_op_at((c), TP_INT_SUB, tp_int_const((c), 0), (a), TP_HERE)

/* An omitted slice bound (Python's x[a:] or x[:b]). */
#define TP_NONE ((tp_int){UOPC_SLICE_NONE, NULL})

/* x[start:stop:step] along axis (negative: from the end), with Python's
 * rules: a negative bound counts from the end, a bound past either end
 * clamps, the result may be empty. Bounds are sizes (constants or
 * expressions of sizes, such as cols // 2 or rows - 1) or TP_NONE. With
 * constant bounds any nonzero step works; with a symbolic bound the step
 * must be >= 1, the clamps are part of the index expression (one trace
 * serves every size), and a bound whose sign the dims' bounds leave open is
 * a guard (which end it counts from). The result reads x's elements; it
 * is a view of them in a compiled function's output only where tensorjit
 * says so. Errors (in c): UOPC_E_INVALID (axis, step 0, a step < 1 with a
 * symbolic bound). */
tp_tensor *tp_slice_at(tp_ctx *c, tp_tensor *x, int axis, tp_int start, tp_int stop, int64_t step, tp_site at);
#define tp_slice(c, x, axis, start, stop, step) tp_slice_at((c), (x), (axis), (start), (stop), (step), TP_HERE)

/* x[..., index, ...] along axis, dropping it (x[i] is axis 0): a negative
 * index counts from the end. Under the tracer the index's validity is a
 * guard of every call (index < size, and index >= 0), so a later call
 * with an axis too short for it traces again and fails there, never reads
 * outside x. Errors (in c): UOPC_E_INVALID (axis), UOPC_E_BOUNDS (the
 * index outside the axis: the message names the index, the axis and its
 * size). */
tp_tensor *tp_select_at(tp_ctx *c, tp_tensor *x, int axis, tp_int index, tp_site at);
#define tp_select(c, x, axis, index) tp_select_at((c), (x), (axis), (index), TP_HERE)

/* Shape ops. Out axis k of a permute is x's axis perm[k] (negative: from the
 * end). A cast converts each element as C does (NumPy's astype). unsqueeze
 * inserts an axis of size 1 at axis (of the result); squeeze removes axis,
 * which must be 1 (a guard where the size is symbolic; an error otherwise,
 * as NumPy's squeeze): its result is a select of element 0, a view.
 * flatten merges axes start..end (inclusive); unflatten splits axis into n
 * sizes whose product must be its size. permute takes one axis per axis of
 * x (the macro counts them). Reshapes compute their result
 * (a view through a reshape is not made yet). Errors (in c): UOPC_E_INVALID,
 * UOPC_E_DTYPE, and those of the IR's builders (a reshape whose element
 * counts are not provably equal). */
tp_tensor *tp_permute_at(tp_ctx *c, tp_tensor *x, int n, const int *perm, tp_site at);
tp_tensor *tp_cast_at(tp_ctx *c, tp_tensor *x, uopc_dtype to, tp_site at);
tp_tensor *tp_unsqueeze_at(tp_ctx *c, tp_tensor *x, int axis, tp_site at);
tp_tensor *tp_squeeze_at(tp_ctx *c, tp_tensor *x, int axis, tp_site at);
tp_tensor *tp_flatten_at(tp_ctx *c, tp_tensor *x, int start, int end, tp_site at);
tp_tensor *tp_unflatten_at(tp_ctx *c, tp_tensor *x, int axis, int n, const tp_int *sizes, tp_site at);
/* tp_reshape_at that must not copy (PyTorch's view): UOPC_E_LAYOUT (in c)
 * when the layout below the reshape is not row-major packed (a transpose,
 * a slice of columns, a strided argument), never a silent copy. The
 * result is a view of a compiled function's input where tensorjit returns
 * views. */
tp_tensor *tp_view_at(tp_ctx *c, tp_tensor *x, int rank, const tp_int *shape, tp_site at);

/* A matrix's diagonal (offset > 0: above the main one), and x tiled
 * reps[k] times along each axis (n >= x's rank counts, the first n - rank
 * of them new leading axes; 0 gives an empty axis). */
tp_tensor *tp_diagonal_at(tp_ctx *c, tp_tensor *x, int64_t offset, tp_site at);
tp_tensor *tp_repeat_at(tp_ctx *c, tp_tensor *x, int n, const int64_t *reps, tp_site at);
/* The same with counts that are sizes (x.repeat(rows, 1)): read at run
 * time, so one trace serves every count (a count's sign is a guard where
 * the dims' bounds leave it open). */
tp_tensor *tp_repeat_sizes_at(tp_ctx *c, tp_tensor *x, int n, const tp_int *reps, tp_site at);
#define tp_diagonal(c, x, offset) tp_diagonal_at((c), (x), (offset), TP_HERE)
#define tp_repeat(c, x, ...) \
  tp_repeat_at((c), (x), (int)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (const int64_t[]){__VA_ARGS__}, TP_HERE)
#define tp_permute(c, x, ...) \
  tp_permute_at((c), (x), (int)(sizeof((const int[]){__VA_ARGS__}) / sizeof(int)), (const int[]){__VA_ARGS__}, TP_HERE)
#define tp_cast(c, x, to) tp_cast_at((c), (x), (to), TP_HERE)
#define tp_unsqueeze(c, x, axis) tp_unsqueeze_at((c), (x), (axis), TP_HERE)
#define tp_squeeze(c, x, axis) tp_squeeze_at((c), (x), (axis), TP_HERE)
#define tp_flatten(c, x, start, end) tp_flatten_at((c), (x), (start), (end), TP_HERE)

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

/* Reverse mode seeded by tensors: grads[k] = the sum over outputs j of
 * seeds[j] . d outs[j] / d wrt[k] (a vector-Jacobian product), where
 * seeds[j] has outs[j]'s dtype, rank and sizes (under the tracer its own
 * dims, made one with the output's by a capture that unifies). The seeds
 * are tensors of c, usually inputs: a traced backward then takes the
 * incoming gradient as an argument. Errors (in c): tp_backward_at's, and
 * UOPC_E_DTYPE (a seed's dtype or rank not its output's). */
int tp_backward_seeded_at(tp_ctx *c, tp_tensor *const *outs, tp_tensor *const *seeds, int n_outs,
                          tp_tensor *const *wrt, int n, tp_tensor **grads, tp_site at);

/* ---- Call-outs (tp_callout.c). Chapter 23.7, "Call-outs". */

#define TP_CALLOUT_MAX 4      /* inputs, and outputs, of one call-out */
#define TP_CALLOUTS_MAX 4     /* call-outs in one trace */

/* A shape as sizes: under the tracer each size is an expression of dims. */
typedef struct tp_shape {
  int rank;
  tp_int size[UOPC_MAX_RANK];
} tp_shape;

/* The opaque C function: outs[0 .. n_out) receive new tensors it makes
 * (the caller releases them, also on error) from ins (contiguous, borrowed,
 * never written). Returns a status, err saying why. */
typedef int (*tp_callout_fn)(const uopc_tensor *const *ins, int n_in, uopc_tensor *outs, int n_out, void *user,
                             uopc_error *err);
/* The outputs' sizes from the inputs' (out[k].rank is the declared rank),
 * with tp_int arithmetic: symbolic under the tracer. Returns tp_status(c). */
typedef int (*tp_callout_shape_fn)(tp_ctx *c, const tp_shape *in, int n_in, tp_shape *out, void *user);

/* What the tracer is told about a call-out: its name (for messages), the
 * function, and each output's dtype, rank and sizes: concrete (shape, with
 * shape_fn NULL: a compiled function specialises on the inputs' shapes, each
 * size a guard) or a function of the inputs' sizes (shape_fn: the artifact
 * stays shared across sizes). The declaration is copied; its name and user
 * must outlive every compiled function that traced it (tensorjit runs fn
 * later, at each call). */
typedef struct tp_callout {
  const char *name;
  tp_callout_fn fn;
  void *user;                                   /* fn's and shape_fn's */
  int n_in, n_out;                              /* 1 .. TP_CALLOUT_MAX each */
  uopc_dtype dtype[TP_CALLOUT_MAX];
  int rank[TP_CALLOUT_MAX];
  int64_t shape[TP_CALLOUT_MAX][UOPC_MAX_RANK];   /* concrete metadata */
  tp_callout_shape_fn shape_fn;                   /* or the sizes as a function */
} tp_callout;

/* outs[0 .. decl->n_out) = decl->fn(ins). Eager: called now, its outputs
 * checked against the declaration. Under tensorjit's tracer: recorded, the
 * graph split around it (the regions before and after compiled, the
 * function run between them at every call, its outputs checked after it
 * runs). Under 23.4's tp_call: a graph break (strict: an error). It has no
 * backward rule: tp_backward through its outputs is UOPC_E_UNSUPPORTED. Errors (in
 * c): UOPC_E_INVALID (a declaration out of range, naming the field),
 * UOPC_E_LIMIT (TP_CALLOUTS_MAX), UOPC_E_DTYPE or UOPC_E_BOUNDS (an output
 * that is not what was declared, naming the call-out, the output and both
 * shapes), the function's own error, UOPC_E_UNSUPPORTED (strict). */
int tp_callout_at(tp_ctx *c, const tp_callout *decl, tp_tensor *const *ins, int n_in, tp_tensor **outs, tp_site at);
#define tp_callout(c, decl, ins, n_in, outs) tp_callout_at((c), (decl), (ins), (n_in), (outs), TP_HERE)

#endif
