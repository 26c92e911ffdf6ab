/* ir_dce.c: dead-code elimination (the compiler core; issue 27). A node no
 * output reaches is not copied; inputs always are (they are parameters).
 * The lowering never emitted dead nodes, but a graph a pass rewrote (folding,
 * CSE) is full of them, and each costs a printed line and a hashed node.
 * Chapter 23.1, "Passes over the graph". */
#include <stdlib.h>
#include "ir_pass.h"

int ir_pass_dce(ir_graph **out, const ir_node **new_outputs, const ir_graph *g, const ir_node *const *outputs,
                int n, uopc_error *err) {
  ir_pass_map m;
  int rc = ir_pass_begin(&m, g, outputs, n, err);
  if (rc) return rc;
  int count = ir_graph_node_count(g);
  unsigned char *live = calloc((size_t)count + 1, 1);
  if (!live) { ir_graph_free(m.to); free(m.map); return UOPC_FAIL(err, UOPC_E_NOMEM, "pass dce: out of memory"); }
  for (int k = 0; k < n; k++) live[outputs[k]->id] = 1;
  /* Ids are a topological order: a node's operands have smaller ids, so one
   * sweep down marks everything an output reaches (no recursion: a chain of
   * 5000 ops is 5000 frames). */
  for (int id = count - 1; id >= 0; id--) {
    const ir_node *x = ir_graph_node(g, id);
    if (!live[id]) continue;
    for (int i = 0; i < ir_op_info_of(x->op)->arity; i++) live[x->src[i]->id] = 1;
  }
  for (int id = 0; id < count; id++) {
    const ir_node *x = ir_graph_node(g, id);
    if (live[id] && x->op != IR_INPUT) ir_pass_copy(&m, x);
  }
  free(live);
  return ir_pass_end(&m, outputs, n, new_outputs, out, "dce", err);
}
