/* kernel.h: a small operation graph over f32 tensors with symbolic shapes
 * (given code; the compiler core's smallest front end). Nodes carry a dtype
 * and a shape of simplified expressions; kernel_graph_to_ir rebuilds a graph
 * in the core's IR (ir.h), which lab 23.1's plans (plan.h) and lab 23.2's
 * variants lower. */
#ifndef KERNEL_H
#define KERNEL_H

#include "ir.h"

#define KERNEL_MAX_RANK 2
#define KERNEL_MAX_NODES 64
#define KERNEL_MAX_INPUTS 8

typedef enum kernel_op {
  KERNEL_INPUT,    /* a contiguous buffer parameter */
  KERNEL_SCALAR,   /* a constant operand, broadcast to any shape */
  KERNEL_ADD, KERNEL_SUB, KERNEL_MUL, KERNEL_DIV, KERNEL_MAXIMUM,   /* binary */
  KERNEL_NEG, KERNEL_EXP,                                           /* unary */
  KERNEL_SUM       /* sum over the last axis; only as a graph's output */
} kernel_op;

typedef struct kernel_node {
  kernel_op op;
  uopc_dtype dtype;                          /* UOPC_F32 in this lab */
  int rank;                                  /* 0 for scalars */
  const sym_expr *shape[KERNEL_MAX_RANK];    /* simplified, graph arena */
  const struct kernel_node *src[2];
  float scalar;                              /* KERNEL_SCALAR */
  char name[SYM_NAME_MAX];                   /* KERNEL_INPUT: parameter name */
  int id;                                    /* index in the graph */
} kernel_node;

typedef struct kernel_graph {
  sym_arena *arena;                          /* borrowed */
  int count;
  kernel_node nodes[KERNEL_MAX_NODES];
  int n_inputs;
  const kernel_node *inputs[KERNEL_MAX_INPUTS];   /* in parameter order */
} kernel_graph;

/* An empty graph whose shapes live in arena (borrowed, outlives g). */
void kernel_graph_init(kernel_graph *g, sym_arena *arena);

/* Each builder appends a node and points *out at it (graph-owned).
 * Common errors: UOPC_E_LIMIT (KERNEL_MAX_NODES or KERNEL_MAX_INPUTS),
 * UOPC_E_INVALID (a NULL or foreign node). */

/* An input buffer: name is its C parameter name. Errors: UOPC_E_DTYPE (not
 * f32), UOPC_E_INVALID (name, rank outside 1..KERNEL_MAX_RANK). */
int kernel_input(kernel_graph *g, const char *name, uopc_dtype dt, int rank,
                 const sym_expr *const *shape, const kernel_node **out, uopc_error *err);
int kernel_scalar(kernel_graph *g, float value, const kernel_node **out, uopc_error *err);
/* op in ADD, SUB, MUL, DIV, MAXIMUM. Shapes must be equal after
 * simplification, or one operand a scalar. Errors: UOPC_E_INVALID ("shapes
 * (n) and (m) differ"). */
int kernel_binary(kernel_graph *g, kernel_op op, const kernel_node *x,
                  const kernel_node *y, const kernel_node **out, uopc_error *err);
/* op in NEG, EXP. */
int kernel_unary(kernel_graph *g, kernel_op op, const kernel_node *x,
                 const kernel_node **out, uopc_error *err);
/* Sum over the last axis of a rank-1 or rank-2 node: (n) -> (1), (b, n) -> (b). */
int kernel_sum(kernel_graph *g, const kernel_node *x, const kernel_node **out,
               uopc_error *err);

/* "add", "exp", ... */
const char *kernel_op_name(kernel_op op);

/* The graph computing out, rebuilt in the compiler core's IR ig (inputs
 * first, in parameter order): what plans and lab 23.2's variants lower.
 * strided = 1 declares each input as a view whose strides are dims named
 * "<input>_s<k>"; 0 as a contiguous input. Errors: those of ir.h. */
int kernel_graph_to_ir(const kernel_graph *g, const kernel_node *out, ir_graph *ig, int strided,
                       const ir_node **result, uopc_error *err);

#endif
