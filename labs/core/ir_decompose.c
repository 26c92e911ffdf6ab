/* ir_decompose.c: decomposition into the core's primitives (the compiler
 * core; issue 27). The IR has one composite op, MEAN: mean(x, axes) becomes
 * sum(x, axes) / n, n the product of the reduced extents as a size read at
 * run time (IR_SIZE, in the mean's dtype). It is the value the mean's own
 * nest computes (lower_kernel.c divides its sum by the same count, in the
 * same dtype), so the bits do not change; what changes is that a sum and a
 * mean of one operand are now one reduction for CSE to merge (a layer norm
 * sums x for its mean, a loss reads both), and that a mean's division joins
 * the nests that read it. The other composites of a model are decomposed
 * where they are defined, in the tracer: tp_stats.c's var and std, tp_nn.c's
 * softmax, log-softmax and layer norm, tp_relu, tp_repeat, each recorded as
 * the primitives it is made of (so its derivative is theirs). Chapter 23.1,
 * "Passes over the graph". */
#include "ir_pass.h"

/* sum(x, axes) / n for the mean m (operand x already rebuilt in m->to). */
static const ir_node *decompose_mean(ir_pass_map *m, const ir_node *mean) {
  const ir_node *x = mean->src[0], *image = m->map[x->id];
  sym_arena *a = ir_graph_arena(m->to);
  const sym_expr *n = sym_expr_const(a, 1);
  for (int k = 0; k < x->rank; k++)
    if (mean->axes >> k & 1u) n = sym_expr_mul(a, n, x->shape[k]);
  const ir_node *sum = ir_reduce(m->to, IR_SUM, image, mean->axes, mean->keepdims);
  return ir_binary(m->to, IR_DIV, sum, ir_size(m->to, n, mean->dtype));
}

int ir_pass_decompose(ir_graph **out, const ir_node **new_outputs, const ir_graph *g, const ir_node *const *outputs,
                      int n, uopc_error *err) {
  ir_pass_map m;
  int rc = ir_pass_begin(&m, g, outputs, n, err);
  if (rc) return rc;
  for (int id = 0; id < ir_graph_node_count(g); id++) {
    const ir_node *x = ir_graph_node(g, id);
    if (x->op == IR_INPUT) continue;
    const ir_node *image = x->op == IR_MEAN ? decompose_mean(&m, x) : ir_pass_copy(&m, x);
    if (!(m.map[id] = image)) break;
  }
  return ir_pass_end(&m, outputs, n, new_outputs, out, "decompose", err);
}
