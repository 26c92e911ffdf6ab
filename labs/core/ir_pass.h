/* ir_pass.h: passes over the graph IR (the compiler core; issue 27).
 * Nodes are immutable, so a pass does not edit a graph: it builds a new one
 * (with its own arena) and says where each old output went. Every pass has
 * one shape,
 *
 *   int pass(ir_graph **out, const ir_node **new_outputs,
 *            const ir_graph *g, const ir_node *const *outputs, int n, uopc_error *err);
 *
 * so passes chain (the outputs of one are the outputs of the next) and a
 * later pass slots into ir_passes_run's list. Every
 * pass keeps all of g's inputs, in their order: an input is a parameter of
 * the compiled function and callers bind inputs by position. The caller owns
 * *out (ir_graph_free); new_outputs[k] is a node of *out. g is not changed.
 * Chapter 23.1, "Passes over the graph". */
#ifndef IR_PASS_H
#define IR_PASS_H

#include "ir.h"

typedef int ir_pass_fn(ir_graph **out, const ir_node **new_outputs, const ir_graph *g,
                       const ir_node *const *outputs, int n, uopc_error *err);

/* ---- Rebuilding, shared by the passes (ir_pass_map.c). */

/* A graph being rebuilt: map[id] is old node id's image in to (NULL: none). */
typedef struct ir_pass_map {
  const ir_graph *from;
  ir_graph *to;
  const ir_node **map;
} ir_pass_map;

/* A new graph holding a copy of each of g's inputs, in order. Errors:
 * UOPC_E_INVALID (g has an error, an output not of g), UOPC_E_NOMEM. */
int ir_pass_begin(ir_pass_map *m, const ir_graph *g, const ir_node *const *outputs, int n, uopc_error *err);
/* n (of m->from, not an input) cloned into m->to over its operands' images,
 * recorded as its image; NULL after an error recorded in m->to. */
const ir_node *ir_pass_copy(ir_pass_map *m, const ir_node *n);
/* The outputs' images into new_outputs and the graph into *out, or the
 * first error of m->to; frees m either way (on an error, the graph too). */
int ir_pass_end(ir_pass_map *m, const ir_node *const *outputs, int n, const ir_node **new_outputs,
                ir_graph **out, const char *pass, uopc_error *err);

/* ---- The passes, one a file. */

/* Dead-code elimination (ir_dce.c): only the nodes some output reaches
 * (and every input) are copied. */
int ir_pass_dce(ir_graph **out, const ir_node **new_outputs, const ir_graph *g, const ir_node *const *outputs,
                int n, uopc_error *err);
/* Common-subexpression elimination (ir_cse.c), by hash-consing: two nodes
 * with the same op, dtype, shape, parameters and (already merged) operands
 * become one. Inputs are never merged (each is a parameter). */
int ir_pass_cse(ir_graph **out, const ir_node **new_outputs, const ir_graph *g, const ir_node *const *outputs,
                int n, uopc_error *err);
/* Constant folding (ir_fold.c): a size whose expression simplified to a
 * constant becomes a constant, and an elementwise op whose operands are all
 * constants becomes the constant it computes, computed as the generated C
 * computes it (f32 in float, integers wrapping). An op it cannot prove the
 * same (a cast of NaN to an integer, a value past 2^53 as a size) is kept. */
int ir_pass_fold(ir_graph **out, const ir_node **new_outputs, const ir_graph *g, const ir_node *const *outputs,
                 int n, uopc_error *err);

/* Decomposition (ir_decompose.c): each MEAN becomes a SUM over the same
 * axes divided by the count, a size read at run time (IR_SIZE); the same
 * value, bit for bit. */
int ir_pass_decompose(ir_graph **out, const ir_node **new_outputs, const ir_graph *g, const ir_node *const *outputs,
                      int n, uopc_error *err);

/* ---- The pipeline (ir_passes.c). */

#define IR_PASS_FOLD 1u
#define IR_PASS_CSE 2u
#define IR_PASS_DCE 4u
#define IR_PASS_DECOMPOSE 16u
#define IR_PASS_ALL (IR_PASS_DECOMPOSE | IR_PASS_FOLD | IR_PASS_CSE | IR_PASS_DCE)
/* Print the graph before the passes and after each one (to trace, or to
 * stderr when trace is NULL); UOPC_DEBUG=2 or above prints to stderr too. */
#define IR_PASS_PRINT 8u

/* The passes selected in flags, in this order: decompose (it makes sums
 * and sizes the others see), fold (it makes equal constants and dead
 * operands), CSE (it merges what folding made equal), DCE (it drops what
 * the others left unreached). The same contract as one pass;
 * with no pass selected, *out is DCE's graph (the caller owns a new graph
 * either way). trace may be NULL. */
int ir_passes_run(ir_graph **out, const ir_node **new_outputs, const ir_graph *g, const ir_node *const *outputs,
                  int n, unsigned flags, codegen_text *trace, uopc_error *err);

#endif
