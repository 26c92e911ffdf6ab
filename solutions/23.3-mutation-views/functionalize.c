/* functionalize.c: a mutating program as one pure graph (lab 23.3).
 * The pass keeps each storage's current value as a node. A load is its view
 * replayed on that node, so a view made before a store and read after it
 * sees the store (views are regenerated, never cached); a store replaces
 * the node by a functional update (the student's functionalize_store); a
 * let's value becomes its storage's node. What comes out has no effects:
 * the core fuses and lowers it like any other graph. Chapter 23.3,
 * "Functionalization". */
#include <stdlib.h>
#include <string.h>
#include "functionalize.h"

static int graph_error(ir_graph *g, uopc_error *err) {
  const uopc_error *e = ir_graph_error(g);
  if (e->code == UOPC_OK) return UOPC_FAIL(err, UOPC_E_NOMEM, "functionalize: out of memory");
  *err = *e;
  return e->code;
}

int functionalize_store(ir_graph *g, const mv_view *view, const ir_node *base, const ir_node *value,
                        const ir_node **new_base, uopc_error *err) {
  // STUDENT 23.3 functionalize_store
  int broadcast = 0;
  int rc = mv_view_has_broadcast(view, base, &broadcast, err);
  if (rc) return rc;
  if (broadcast)
    return UOPC_FAIL(err, UOPC_E_ALIAS, "functionalize: a store through a broadcast view, whose elements"
                     " would collide");
  /* nodes[k] is the value of the view's first k steps; nodes[0] the base. */
  const ir_node *nodes[MV_VIEW_STEPS_MAX + 1];
  nodes[0] = base;
  for (int k = 0; k < view->n_steps; k++) {
    mv_view one = {.storage = view->storage, .n_steps = 1};
    one.steps[0] = view->steps[k];
    if (!(nodes[k + 1] = mv_view_apply(g, &one, nodes[k]))) return graph_error(g, err);
  }
  /* From the innermost step out: the step's source with its elements replaced. An expand that
   * is no broadcast only adds or keeps axes of extent 1: its elements are its source's, one for
   * one, so the source becomes the value reshaped to it. */
  const ir_node *u = value;
  for (int k = view->n_steps - 1; k >= 0; k--) {
    u = view->steps[k].kind == MV_EXPAND ? ir_reshape(g, u, nodes[k]->rank, nodes[k]->shape)
                                         : ir_view_set(g, nodes[k + 1], u);
    if (!u) return graph_error(g, err);
  }
  *new_base = u;
  return UOPC_OK;
  // END STUDENT
}

/* Statement k's nodes rebuilt in g; loads read the storages' current values. */
static int rewrite(ir_graph *g, const mv_stmt *st, const ir_node **cur, const ir_node **value, uopc_error *err) {
  int count = ir_graph_node_count(st->graph);
  const ir_node **map = calloc((size_t)count, sizeof *map);
  if (!map) return UOPC_FAIL(err, UOPC_E_NOMEM, "functionalize: out of memory");
  int rc = UOPC_OK;
  for (int id = 0; id < count && !rc; id++) {
    const ir_node *n = ir_graph_node(st->graph, id);
    if (n->op == IR_INPUT) {
      for (int j = 0; j < st->n_loads; j++)
        if (st->loads[j].node == n) map[id] = mv_view_apply(g, &st->loads[j].view, cur[st->loads[j].view.storage]);
    } else {
      const ir_node *src[3] = {0};
      for (int i = 0; i < 3 && n->src[i]; i++) src[i] = map[n->src[i]->id];
      map[id] = ir_clone(g, n, src);
    }
    if (!map[id]) rc = graph_error(g, err);
  }
  if (!rc) *value = map[st->value->id];
  free(map);
  return rc;
}

int functionalize(const mv_program *p, ir_graph **out, const ir_node ***outputs, uopc_error *err) {
  int ns = mv_program_storage_count(p), rc = ir_graph_new(out, err);
  if (rc) return rc;
  ir_graph *g = *out;
  const ir_node **cur = calloc((size_t)ns + 1, sizeof *cur);
  unsigned char *written = calloc((size_t)ns + 1, 1);
  if (!cur || !written) rc = UOPC_FAIL(err, UOPC_E_NOMEM, "functionalize: out of memory");
  for (int s = 0; s < ns && !rc; s++) {
    const mv_storage *st = mv_program_storage(p, s);
    if (!st->external) continue;
    const sym_expr *shape[UOPC_MAX_RANK];
    for (int k = 0; k < st->rank; k++) shape[k] = sym_expr_copy(ir_graph_arena(g), st->shape[k]);
    if (!(cur[s] = ir_input(g, st->name, st->dtype, st->rank, shape))) rc = graph_error(g, err);
  }
  for (int k = 0; k < mv_program_stmt_count(p) && !rc; k++) {
    const mv_stmt *st = mv_program_stmt(p, k);
    const ir_node *value = NULL;
    rc = rewrite(g, st, cur, &value, err);
    if (!rc && st->kind == MV_STORE)
      rc = functionalize_store(g, &st->target, cur[st->storage], value, &cur[st->storage], err);
    else if (!rc)
      cur[st->storage] = value;
    written[st->storage] = 1;
  }
  for (int s = 0; s < ns && !rc; s++)
    if (!written[s]) cur[s] = NULL;
  free(written);
  if (rc) {
    free(cur);
    ir_graph_free(g);
    *out = NULL;
    return rc;
  }
  *outputs = cur;
  return UOPC_OK;
}
