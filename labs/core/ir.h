/* ir.h: the tensor graph IR (given code; the compiler core, introduced with
 * lab 23.1 and linked by every later stage).
 * A graph holds nodes with a dtype, a rank up to UOPC_MAX_RANK and a shape of
 * simplified symbolic expressions. Inputs are strided views whose shape,
 * strides and offset are expressions bound per call. Builders check dtypes
 * and shapes as nodes are added and return NULL after recording the first
 * error in the graph, so a chain of builders is checked once, at the end, with
 * ir_graph_error (as sym_expr's arena does). Nodes, like expressions, are
 * immutable and owned by the graph. Chapter 23.1, "The graph IR". */
#ifndef IR_H
#define IR_H

#include "codegen.h"
#include "ir_ops.h"
#include "sym_expr.h"

typedef struct ir_node {
  ir_op op;
  uopc_dtype dtype;
  int rank;
  const sym_expr *shape[UOPC_MAX_RANK];    /* simplified, in the graph's arena */
  const struct ir_node *src[3];
  int id;                                  /* creation order, from 0 */
  /* Parameters, by op. */
  double value;                            /* CONST */
  char name[SYM_NAME_MAX];                 /* INPUT: the kernel parameter's name */
  int input;                               /* INPUT: its position among the inputs */
  const sym_expr *strides[UOPC_MAX_RANK];  /* INPUT: in elements */
  const sym_expr *offset;                  /* INPUT: element 0's distance from the
                                              pointer passed, usually 0 */
  int contiguous;                          /* INPUT: strides are the packed ones */
  int axis;                                /* SLICE, SELECT, and their SETs */
  const sym_expr *start, *step;            /* SLICE: element i is start + i*step */
  const sym_expr *index;                   /* SELECT, SELECT_SET; SIZE: its value */
  int perm[UOPC_MAX_RANK];                 /* PERMUTE: out axis k is src axis perm[k] */
  unsigned axes;                           /* SUM, MAX, MEAN: bit k reduces src axis k */
  int keepdims;
} ir_node;

typedef struct ir_graph ir_graph;

/* ---- The graph. */

/* A new empty graph with its own expression arena. The caller owns *out and
 * frees it, with every node and expression, by ir_graph_free.
 * Errors: UOPC_E_NOMEM. */
int ir_graph_new(ir_graph **out, uopc_error *err);
void ir_graph_free(ir_graph *g);

/* The arena that shapes, strides and slice bounds are built in. A builder
 * copies an expression from another arena into it, where a dim name has one
 * declaration: one declared with other bounds is refused (UOPC_E_INVALID). */
sym_arena *ir_graph_arena(ir_graph *g);
/* The first builder error, or one with code UOPC_OK. */
const uopc_error *ir_graph_error(const ir_graph *g);

int ir_graph_node_count(const ir_graph *g);
const ir_node *ir_graph_node(const ir_graph *g, int id);
int ir_graph_input_count(const ir_graph *g);
const ir_node *ir_graph_input(const ir_graph *g, int k);

/* ---- Builders. Each returns a graph-owned node, or NULL after recording an
 * error in g (the first error is kept); a NULL operand gives NULL.
 * Messages name the op, the operands' shapes and the rule broken. */

/* A contiguous input: strides are the packed row-major ones of shape.
 * Errors: UOPC_E_INVALID (name not a C identifier or already used, rank
 * outside [0, UOPC_MAX_RANK]), UOPC_E_DTYPE, UOPC_E_BOUNDS (an extent whose
 * interval reaches below 0). */
const ir_node *ir_input(ir_graph *g, const char *name, uopc_dtype dt, int rank,
                        const sym_expr *const *shape);
/* A strided view: strides in elements (any sign); offset NULL means 0. */
const ir_node *ir_input_view(ir_graph *g, const char *name, uopc_dtype dt, int rank,
                             const sym_expr *const *shape, const sym_expr *const *strides,
                             const sym_expr *offset);
/* A scalar constant of dtype dt (a rank-0 node; broadcast like any other);
 * an integer dtype truncates value toward zero. Errors: UOPC_E_DTYPE,
 * UOPC_E_BOUNDS (NaN or a value outside an integer dtype's range). */
const ir_node *ir_const(ir_graph *g, double value, uopc_dtype dt);

/* A scalar whose value is the expression e of the dims (in dtype dt), read
 * at run time: how a derivative uses a size (a mean's count) without
 * pasting it into the source (lab 23.4). Errors: UOPC_E_DTYPE, those of
 * simplifying e. */
const ir_node *ir_size(ir_graph *g, const sym_expr *e, uopc_dtype dt);

/* Elementwise ops (kinds UNARY, MATH, BINARY, COMPARE). Operands broadcast
 * as NumPy's do, with one rule for symbols: two extents match only when their
 * simplified expressions are the same, or one is the constant 1 (n and m are
 * never assumed equal: that is a guard, decided outside the IR). Dtypes must
 * be equal (cast first); MATH, DIV and POW need a float dtype.
 * Errors: UOPC_E_INVALID (shapes cannot broadcast, wrong arity), UOPC_E_DTYPE. */
const ir_node *ir_unary(ir_graph *g, ir_op op, const ir_node *x);
const ir_node *ir_binary(ir_graph *g, ir_op op, const ir_node *x, const ir_node *y);
const ir_node *ir_where(ir_graph *g, const ir_node *cond, const ir_node *a, const ir_node *b);
const ir_node *ir_cast(ir_graph *g, const ir_node *x, uopc_dtype to);

/* Movement: which element is read changes, never a value. */
/* x broadcast to shape (NumPy's broadcast_to). Errors: UOPC_E_INVALID. */
const ir_node *ir_expand(ir_graph *g, const ir_node *x, int rank, const sym_expr *const *shape);
/* The same elements in row-major order under a new shape whose element count
 * simplifies to x's. A reshape is a value here: a view that would need a copy
 * is the tensor layer's concern (uopc_tensor_reshape says UOPC_E_LAYOUT).
 * Errors: UOPC_E_INVALID (counts not provably equal). */
const ir_node *ir_reshape(ir_graph *g, const ir_node *x, int rank, const sym_expr *const *shape);
/* x with consecutive axes merged: group k is the next sizes[k] (>= 1) of
 * x's axes, and its extent the product of theirs (a flatten of several
 * groups at once; a reshape whose counts are equal by construction).
 * Errors: UOPC_E_INVALID (groups that do not cover x's axes). */
const ir_node *ir_merge_axes(ir_graph *g, const ir_node *x, int n, const int *sizes);
/* The same with extent axis inferred, as NumPy's -1: x's element count
 * floor-divided by the product of the other extents, which must be proved
 * >= 1. The result never has more elements than x, so it reads only x's;
 * that the division is exact (the counts equal) is the caller's guard, as
 * the tracer records it. Errors: UOPC_E_INVALID. */
const ir_node *ir_reshape_inferred(ir_graph *g, const ir_node *x, int rank, const sym_expr *const *shape,
                                   int axis);
/* Out axis k is x's axis perm[k]. Errors: UOPC_E_INVALID (not a permutation). */
const ir_node *ir_permute(ir_graph *g, const ir_node *x, const int *perm);
const ir_node *ir_transpose(ir_graph *g, const ir_node *x, int a, int b);
/* x[start:stop:step] along axis with Python's rules (negative bounds count
 * from the end, out-of-range bounds clamp, UOPC_SLICE_NONE is omitted), on
 * symbolic extents too: the bounds become min/max expressions that the
 * simplifier removes when the dims' bounds decide them.
 * Errors: UOPC_E_INVALID (axis, step 0). */
const ir_node *ir_slice(ir_graph *g, const ir_node *x, int axis, int64_t start, int64_t stop,
                        int64_t step);
/* x[start:stop:step] with symbolic bounds, step >= 1 a constant; needs
 * 0 <= start <= stop <= extent proved from the dims' bounds.
 * Errors: UOPC_E_BOUNDS (not proved: names the bound and the extent). */
const ir_node *ir_slice_sym(ir_graph *g, const ir_node *x, int axis, const sym_expr *start,
                            const sym_expr *stop, int64_t step);
/* x[start:stop:step] with each bound (NULL: omitted) clamped into
 * [0, extent] by the index expression itself (min/max that the simplifier
 * removes where the dims' bounds decide them), step >= 1 a constant: one
 * graph serves every size, an empty result included, and no binding reads
 * outside x. A bound's sign regime (Python counts a negative one from the
 * end) is the caller's: pass extent + v for a negative v (the tracer guards
 * the sign when the bounds leave it open). Errors: UOPC_E_INVALID (axis,
 * step < 1). Chapter 23.7, "Indexing". */
const ir_node *ir_slice_clamped(ir_graph *g, const ir_node *x, int axis, const sym_expr *start,
                                const sym_expr *stop, int64_t step);
/* x[..., index, ...], dropping axis; a negative constant counts from the end.
 * Errors: UOPC_E_BOUNDS (index not provably inside [0, extent)). */
const ir_node *ir_select(ir_graph *g, const ir_node *x, int axis, const sym_expr *index);
/* x[..., index, ...] with index clamped into [0, extent - 1]: whether the
 * index is inside the axis is a guard the caller checks per call (the
 * tracer records it, and it also excludes an empty axis); the clamp keeps
 * a read inside x for every binding with a nonempty axis, so a guard the
 * caller got wrong gives a wrong element, never a read outside x. The
 * simplifier removes the clamp where the dims' bounds decide it. */
const ir_node *ir_select_clamped(ir_graph *g, const ir_node *x, int axis, const sym_expr *index);

/* The diagonal of a matrix x with offset (NumPy's x.diagonal(offset): above
 * the main one for offset > 0), of length max(0, min(n, m - offset)) (or
 * min(n + offset, m) below): a slice with step m + 1 of x's row-major
 * elements. Errors: UOPC_E_INVALID (a rank other than 2). */
const ir_node *ir_diagonal(ir_graph *g, const ir_node *x, int64_t offset);

/* The functional form of `base[view] = y` (lab 23.3): base, the view's
 * source, with the elements the view reaches replaced by y's. view is a
 * SLICE or SELECT node (giving a SLICE_SET or SELECT_SET node of the base's
 * shape, with the view's axis and bounds) or a PERMUTE node (giving y
 * permuted back). y has the view's shape (broadcast it first) and dtype; a
 * slice's step must be a constant. Errors: UOPC_E_INVALID (another op, a
 * shape that differs), UOPC_E_DTYPE. */
const ir_node *ir_view_set(ir_graph *g, const ir_node *view, const ir_node *y);

/* n (a node of any graph, not an input) rebuilt in g over the operands
 * src[0 .. arity - 1], with n's op, dtype and parameters, its expressions
 * copied into g's arena: how a pass (23.3's functionalization, 23.4's
 * tracer) moves a computation into another graph. Each operand must have
 * the dtype and shape of n's. Errors: UOPC_E_INVALID (an input, an operand
 * of another shape), UOPC_E_DTYPE. */
const ir_node *ir_clone(ir_graph *g, const ir_node *n, const ir_node *const *src);

/* Reductions (SUM, MAX, MEAN) over the axes whose bits are set in axes.
 * SUM of i32 or bool gives i64 and of bool counts, as NumPy's sum does; MEAN
 * needs a float dtype. MAX of an empty axis is refused at launch.
 * Errors: UOPC_E_INVALID (an axis outside the rank), UOPC_E_DTYPE. */
const ir_node *ir_reduce(ir_graph *g, ir_op op, const ir_node *x, unsigned axes, int keepdims);
/* a @ b: (m, k) @ (k, n), or batched (..., m, k) @ (..., k, n) with equal
 * batch extents; numeric dtypes, equal. Errors: UOPC_E_INVALID, UOPC_E_DTYPE. */
const ir_node *ir_matmul(ir_graph *g, const ir_node *a, const ir_node *b);

/* ---- Questions and text. */

/* A structural hash of what outputs compute in g: ops, dtypes, shapes,
 * parameters (constants by their bits) and operands, never node ids, so the
 * same graph built in another order hashes alike. 0 only when out of memory
 * (a node of another graph hashes as 0 in its place). Variant keys (lab
 * 23.2) carry it. */
uint64_t ir_graph_hash(const ir_graph *g, const ir_node *const *outputs, int n_outputs);

/* The affine form of a view: its element idx is element
 * offset + sum_k strides[k] * idx[k] of the memory under the input it views.
 * Every expression is simplified, in the arena given to ir_view_layout. */
typedef struct ir_layout {
  int rank;
  const sym_expr *shape[UOPC_MAX_RANK];
  const sym_expr *strides[UOPC_MAX_RANK];
  const sym_expr *offset;
} ir_layout;

/* The affine form of n, a chain of movement nodes (slice, select, permute,
 * expand) over an input: a contiguous input counts row-major, a strided one
 * from its own strides and offset. Built in a (the graph's arena, or another
 * that outlives the result: each expression is copied). Lab 23.3's alias
 * proofs and its executor read views through it. Errors: UOPC_E_INVALID (a
 * node the form cannot express: an op that computes, a reshape), those of
 * sym_expr. */
int ir_view_layout(sym_arena *a, const ir_node *n, ir_layout *out, uopc_error *err);
/* The same, and through a reshape of a row-major packed layout (a
 * contiguous input, or a chain that keeps it packed), which is the packed
 * layout of the new shape at the same offset: a reshape that needs no copy
 * (NumPy's rule). A reshape of any other layout is UOPC_E_INVALID, as is
 * every reshape for ir_view_layout, whose callers (23.3) read a reshape as
 * a value. */
int ir_view_layout_reshaped(sym_arena *a, const ir_node *n, ir_layout *out, uopc_error *err);
/* The node below n's chain of movement nodes (slices, selects, permutes,
 * expands, reshapes): an input when n only moves an input's elements. */
const ir_node *ir_view_base(const ir_node *n);

/* "(n, 3)" for messages; "()" for a scalar. */
void ir_shape_format(const ir_node *n, char *buf, size_t size);
/* dtype name for the printer and messages: "f32", ..., "bool". */
const char *ir_dtype_name(uopc_dtype dt);
/* The C type of dt's elements: float, double, int32_t, int64_t, uint8_t. */
const char *ir_dtype_ctype(uopc_dtype dt);

/* Appends the graph computing outputs, one node a line, each with its id,
 * dtype, symbolic shape and operands: "%3 = add(%1, %2) : f32[n, 4]".
 * Errors: UOPC_E_NOMEM. */
int ir_print(codegen_text *t, const ir_graph *g, const ir_node *const *outputs, int n_outputs,
             uopc_error *err);
/* The same with prefix before each line (" *   " inside a banner comment)
 * and the outputs called names[k] (NULL: out0, out1, ...). */
int ir_print_prefixed(codegen_text *t, const ir_graph *g, const ir_node *const *outputs, int n_outputs,
                      const char *const *names, const char *prefix, uopc_error *err);
/* One node's line, as ir_print writes it, after prefix. */
int ir_print_node(codegen_text *t, const ir_node *n, const char *prefix, uopc_error *err);

#endif
