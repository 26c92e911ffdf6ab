/* tj_fuse.c: tensorjit's fusion rule, which computed nodes of a region are
 * stored once in a temporary rather than recomputed in every loop nest that
 * reads them (lab 23.7, student file). The core's lowering (LOWER_FUSE,
 * labs/core/lower_fuse.c) calls it through TJ_FUSE_RULE for each region it
 * lowers, after marking the outputs, reductions and matmuls, and before its
 * chain cut; it checks what the rule decided. Chapter 23.7, "Fusion with a
 * cost rule". */
#include <stdlib.h>
#include "tj_internal.h"

// STUDENT 23.7 helpers
/* Counts saturate: a broadcast of a broadcast of ... must not overflow. */
#define TJ_SATURATE (INT64_C(1) << 40)
static int64_t tj_sat(int64_t v) { return v > TJ_SATURATE ? TJ_SATURATE : v; }
// END STUDENT

int tj_fuse_rule(const ir_graph *g, const unsigned char *used, lower_stored *store, uopc_error *err) {
  // STUDENT 23.7 tj_fuse_rule
  int count = ir_graph_node_count(g);
  int64_t *ops = calloc((size_t)count, sizeof *ops), *reads = calloc((size_t)count, sizeof *reads);   /* count >= 1 */
  if (!ops || !reads) {
    free(ops), free(reads);
    return UOPC_FAIL(err, UOPC_E_NOMEM, "tj_fuse_rule: out of memory (%d nodes)", count);
  }
  for (int id = 0; id < count; id++) {           /* ops: the node's own, and each fused operand's */
    const ir_node *n = ir_graph_node(g, id);
    if (!used[id]) continue;
    ops[id] = lower_op_units(n);
    for (int i = 0; i < ir_op_info_of(n->op)->arity && !store[id].why; i++)
      if (!store[n->src[i]->id].why) ops[id] = tj_sat(ops[id] + ops[n->src[i]->id]);
  }
  for (int id = count - 1; id >= 0; id--) {      /* reads, consumers first (a consumer has a higher id) */
    const ir_node *n = ir_graph_node(g, id);
    if (!used[id]) continue;
    if (!store[id].why && lower_computes(n) && ops[id] * (reads[id] - 1) > LOWER_STORE_COST)
      store[id] = (lower_stored){LOWER_WHY_COST, ops[id], reads[id]};
    int64_t r = store[id].why ? 1 : reads[id];   /* a stored node computes its operands once an element */
#ifdef TJ_FUSE_PAST_REDUCTION   /* a test-only build: a reduction's reads are not counted (tests/broken/23.7.mk) */
    if (ir_op_info_of(n->op)->kind == IR_KIND_REDUCE) continue;
#endif
    for (int i = 0; i < ir_op_info_of(n->op)->arity; i++) {
      const ir_node *s = n->src[i];
      reads[s->id] = tj_sat(reads[s->id] + (lower_broadcasts(n, s) ? tj_sat(r * LOWER_BROADCAST_READS) : r));
    }
  }
  free(ops), free(reads);
  return UOPC_OK;
  // END STUDENT
}
