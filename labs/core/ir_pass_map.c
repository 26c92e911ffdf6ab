/* ir_pass_map.c: rebuilding a graph node by node, what every pass shares
 * (the compiler core; issue 27). A pass walks the old graph in id order
 * (a topological order), decides each node's image and records it here;
 * ir_clone does the copying and its checks. Chapter 23.1, "Passes over the
 * graph". */
#include <stdlib.h>
#include "ir_pass.h"

int ir_pass_begin(ir_pass_map *m, const ir_graph *g, const ir_node *const *outputs, int n, uopc_error *err) {
  *m = (ir_pass_map){.from = g};
  if (!g || !outputs || n < 1) return UOPC_FAIL(err, UOPC_E_INVALID, "pass: no outputs");
  if (ir_graph_error(g)->code != UOPC_OK)
    return UOPC_FAIL(err, ir_graph_error(g)->code, "pass: the graph has an error: %s", ir_graph_error(g)->message);
  for (int k = 0; k < n; k++)
    if (!outputs[k] || ir_graph_node(g, outputs[k]->id) != outputs[k])
      return UOPC_FAIL(err, UOPC_E_INVALID, "pass: output %d is not a node of the graph", k);
  if (!(m->map = calloc((size_t)ir_graph_node_count(g) + 1, sizeof *m->map)))
    return UOPC_FAIL(err, UOPC_E_NOMEM, "pass: out of memory");
  int rc = ir_graph_new(&m->to, err);
  if (rc) { free(m->map); m->map = NULL; return rc; }
  /* Inputs first and in order: their positions are the call's. */
  for (int k = 0; k < ir_graph_input_count(g); k++) {
    const ir_node *in = ir_graph_input(g, k);
    m->map[in->id] = in->contiguous ? ir_input(m->to, in->name, in->dtype, in->rank, in->shape)
                                    : ir_input_view(m->to, in->name, in->dtype, in->rank, in->shape, in->strides,
                                                    in->offset);
  }
  return UOPC_OK;
}

const ir_node *ir_pass_copy(ir_pass_map *m, const ir_node *n) {
  const ir_node *src[3] = {NULL, NULL, NULL};
  for (int i = 0; i < ir_op_info_of(n->op)->arity; i++) src[i] = m->map[n->src[i]->id];
  return m->map[n->id] = ir_clone(m->to, n, src);
}

int ir_pass_end(ir_pass_map *m, const ir_node *const *outputs, int n, const ir_node **new_outputs,
                ir_graph **out, const char *pass, uopc_error *err) {
  int rc = UOPC_OK;
  const uopc_error *ge = m->to ? ir_graph_error(m->to) : NULL;
  if (ge && ge->code != UOPC_OK) rc = UOPC_FAIL(err, ge->code, "pass %s: %s", pass, ge->message);
  for (int k = 0; k < n && !rc; k++)
    if (!(new_outputs[k] = m->map[outputs[k]->id]))
      rc = UOPC_FAIL(err, UOPC_E_INVALID, "pass %s: output %d (%%%d) has no image", pass, k, outputs[k]->id);
  free(m->map);
  if (rc) ir_graph_free(m->to);
  else *out = m->to;
  *m = (ir_pass_map){0};
  return rc;
}
