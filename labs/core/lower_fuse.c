/* lower_fuse.c: the fusion rule, in one place (the compiler core; issue 27).
 * Without LOWER_FUSE the lowering inlines every pointwise and movement node
 * into each loop nest that reads it, however many read it (the given rule of
 * labs 23.1-23.5, whose text is quoted and cached). With LOWER_FUSE, before
 * planning the buffers, this pass picks the extra nodes to materialise:
 *
 *   cost rule: a node that computes (not a leaf, not pure movement) is
 *   stored in a temporary when  ops(n) * (reads(n) - 1) > LOWER_STORE_COST,
 *   ops(n) the op units of its fused body (LOWER_CALL_COST for a libm call
 *   or pow, 1 for any other op, with every operand fused), reads(n) how many
 *   times the loop nests compute it per element of its own: each consumer
 *   edge counts its consumer's reads (1 for a materialised consumer: a
 *   reduction reads each element once), times LOWER_BROADCAST_READS when
 *   the consumer broadcasts n (an unknown number of times, assumed many).
 *   Recomputing costs ops(n) for each read past the first; storing costs a
 *   store and a load per element, counted as LOWER_STORE_COST.
 *
 *   chain cut: a node more than LOWER_CHAIN_CUT elementwise levels above
 *   its nest's leaves or temporaries is stored, so a chain of any length
 *   compiles (the recursion stays under LOWER_NESTING_MAX).
 *
 * Reads are decided consumers first (highest id first), so a consumer
 * stored makes its operands read once. Chapter 23.1, "Fusion and its cost
 * rule". This file uses no other pass. */
#include <stdint.h>
#include <stdlib.h>
#include "lower_internal.h"

#define SATURATE (INT64_C(1) << 40)

static int64_t sat(int64_t v) { return v > SATURATE ? SATURATE : v; }

/* Materialised whatever the rule says: reductions and matmuls. */
static int always(const ir_node *n) {
  ir_kind k = ir_op_info_of(n->op)->kind;
  return k == IR_KIND_REDUCE || k == IR_KIND_MATMUL;
}

static int computes(const ir_node *n) {
  ir_kind k = ir_op_info_of(n->op)->kind;
  return k != IR_KIND_LEAF && k != IR_KIND_MOVE && !always(n);
}

static int64_t op_units(const ir_node *n) {
  ir_kind k = ir_op_info_of(n->op)->kind;
  if (k == IR_KIND_MATH || n->op == IR_POW) return LOWER_CALL_COST;
  return computes(n) ? 1 : 0;
}

/* 1 when consumer m reads operand s at fewer distinct elements than it has:
 * s is broadcast (an EXPAND, or NumPy's implicit broadcast of an operand). */
static int broadcasts(const ir_node *m, const ir_node *s) {
  ir_kind k = ir_op_info_of(m->op)->kind;
  if (k == IR_KIND_MOVE && m->op != IR_EXPAND) return 0;
  if (k == IR_KIND_REDUCE || k == IR_KIND_MATMUL || k == IR_KIND_SET) return 0;
  if (s->rank < m->rank) return 1;
  for (int j = 0; j < s->rank; j++) {
    const sym_expr *e = s->shape[j], *o = m->shape[j + m->rank - s->rank];
    if (e->kind == SYM_CONST && e->value == 1 && !(o->kind == SYM_CONST && o->value == 1)) return 1;
  }
  return 0;
}

int lower_fuse_decide(const lower_program *p, const ir_node *const *outputs, const unsigned char *used,
                      lower_stored *store, uopc_error *err) {
  const ir_graph *g = p->graph;
  int count = ir_graph_node_count(g);
  int64_t *ops = calloc((size_t)count + 1, sizeof *ops), *reads = calloc((size_t)count + 1, sizeof *reads);
  int *depth = calloc((size_t)count + 1, sizeof *depth);
  if (!ops || !reads || !depth) {
    free(ops), free(reads), free(depth);
    return UOPC_FAIL(err, UOPC_E_NOMEM, "lower '%s': out of memory deciding fusion", p->entry);
  }
  for (int k = 0; k < p->n_outputs; k++) store[outputs[k]->id].why = LOWER_WHY_OUTPUT;
  for (int id = 0; id < count; id++) {           /* ops: every operand fused but the base plan's */
    const ir_node *n = ir_graph_node(g, id);
    if (!used[id]) continue;
    if (always(n) && !store[id].why) store[id].why = LOWER_WHY_REDUCE;
    ops[id] = op_units(n);
    for (int i = 0; i < ir_op_info_of(n->op)->arity && !always(n); i++)
      if (!store[n->src[i]->id].why) ops[id] = sat(ops[id] + ops[n->src[i]->id]);
  }
  for (int id = count - 1; id >= 0; id--) {      /* reads, consumers first; then the rule */
    const ir_node *n = ir_graph_node(g, id);
    if (!used[id]) continue;
    int64_t r = store[id].why ? 1 : reads[id];
    if (!store[id].why && computes(n) && ops[id] * (reads[id] - 1) > LOWER_STORE_COST) {
      store[id] = (lower_stored){LOWER_WHY_COST, ops[id], reads[id]};
      r = 1;
    }
    for (int i = 0; i < ir_op_info_of(n->op)->arity; i++) {
      const ir_node *s = n->src[i];
      reads[s->id] = sat(reads[s->id] + (broadcasts(n, s) ? sat(r * LOWER_BROADCAST_READS) : r));
    }
  }
  for (int id = 0; id < count; id++) {           /* the chain cut */
    const ir_node *n = ir_graph_node(g, id);
    if (!used[id] || ir_op_info_of(n->op)->kind == IR_KIND_LEAF) continue;
    int d = 0;
    for (int i = 0; i < ir_op_info_of(n->op)->arity; i++)
      if (!store[n->src[i]->id].why && depth[n->src[i]->id] > d) d = depth[n->src[i]->id];
    depth[id] = d + 1;
    if (depth[id] > LOWER_CHAIN_CUT && !store[id].why) store[id] = (lower_stored){LOWER_WHY_CHAIN, depth[id], 0};
  }
  free(ops), free(reads), free(depth);
  return UOPC_OK;
}
