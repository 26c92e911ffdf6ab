/* ir_eval.h: the graph IR evaluated element by element, without compiling
 * (given code; the compiler core). The reference the compiled code is held
 * to, and lab 23.4's eager mode: each node is computed into a contiguous
 * uopc tensor under one binding of the dims, in plain C loops that follow
 * NumPy's rules (broadcasting, Python's slices, f32 arithmetic in f32, casts
 * as C converts, integer ops wrapping as NumPy's do, NaN-propagating
 * maximum/minimum). Reductions add in row-major order, one element at a time
 * (the compiled code's lane order rounds differently: compare sums with a
 * tolerance). Slow by design: clear rather than fast. Chapter 23.1, "An
 * interpreter for the IR". */
#ifndef IR_EVAL_H
#define IR_EVAL_H

#include "ir.h"

/* Computes outputs[k] into out[k] (each filled with a new contiguous tensor
 * of the node's dtype and shape under b; the caller releases them), reading
 * inputs[i] for ir_graph_input(g, i) (any strides: an input view is read
 * through its shape, strides and offset expressions evaluated under b, as
 * exec_run reads it; its tensor must be the storage those expressions
 * address, so for a contiguous input, the tensor itself). On error no output
 * is left allocated. Errors: UOPC_E_INVALID (counts, NULL, a foreign node),
 * UOPC_E_UNBOUND (a dim b lacks), UOPC_E_BOUNDS (an extent or stride of an
 * input tensor that differs from its expression, a max over an empty axis,
 * an index out of range), UOPC_E_DTYPE, UOPC_E_NOMEM. */
int ir_eval(const ir_graph *g, const ir_node *const *outputs, int n_outputs, const uopc_tensor *const *inputs,
            int n_inputs, const sym_binding *b, uopc_tensor *out, uopc_error *err);

#endif
