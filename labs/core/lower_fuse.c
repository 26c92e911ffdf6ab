/* lower_fuse.c: fusion groups, the mechanism (the compiler core; issue 27).
 * Without LOWER_FUSE the lowering inlines every pointwise and movement node
 * into each loop nest that reads it, however many read it (the given rule of
 * labs 23.1-23.4, whose text is quoted and cached). With LOWER_FUSE (lab
 * 23.5's programs, tensorjit's, the passes' tests), before
 * planning the buffers, this pass picks the extra nodes to materialise:
 *
 *   the rule's: the program's fusion rule (lower.h's lower_fuse_rule; a
 *   compiler's policy, tensorjit's is lab 23.7's tj_fuse_rule) stores the
 *   computed nodes it judges dearer to recompute than to store, counted in
 *   the units below (lower_op_units, lower_broadcasts). This file checks that
 *   the rule decided only about computed nodes the outputs reach.
 *
 *   chain cut: a node more than LOWER_CHAIN_CUT elementwise levels above
 *   its nest's leaves or temporaries is stored, so a chain of any length
 *   compiles (the recursion stays under LOWER_NESTING_MAX).
 *
 * Chapter 23.1, "Fusion and its cost rule". This file uses no other pass. */
#include <stdint.h>
#include <stdlib.h>
#include "lower_internal.h"

/* Materialised whatever the rule says: reductions and matmuls. */
static int always(const ir_node *n) {
  ir_kind k = ir_op_info_of(n->op)->kind;
  return k == IR_KIND_REDUCE || k == IR_KIND_MATMUL;
}

int lower_computes(const ir_node *n) {
  ir_kind k = ir_op_info_of(n->op)->kind;
  return k != IR_KIND_LEAF && k != IR_KIND_MOVE && !always(n);
}

int64_t lower_op_units(const ir_node *n) {
  ir_kind k = ir_op_info_of(n->op)->kind;
  if (k == IR_KIND_MATH || n->op == IR_POW) return LOWER_CALL_COST;
  return lower_computes(n) ? 1 : 0;
}

static int store_exps(const ir_graph *g, const unsigned char *used, lower_stored *store, uopc_error *err) {
  (void)err;
  for (int id = 0; id < ir_graph_node_count(g); id++) {
    const ir_node *n = ir_graph_node(g, id);
    if (used[id] && !store[id].why && n->op == IR_EXP) store[id] = (lower_stored){LOWER_WHY_COST, lower_op_units(n), 0};
  }
  return UOPC_OK;
}

const lower_fuse_rule LOWER_RULE_STORE_EXPS = {"every exp is stored (LOWER_RULE_STORE_EXPS)", store_exps};

int lower_broadcasts(const ir_node *m, const ir_node *s) {
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

static void mark(const ir_node *n, unsigned char *used) {
  if (!n || used[n->id]) return;
  used[n->id] = 1;
  for (int i = 0; i < 3; i++) mark(n->src[i], used);
}

void lower_fuse_marks(const ir_graph *g, const ir_node *const *outputs, int n, unsigned char *used,
                      lower_stored *store) {
  for (int k = 0; k < n; k++) mark(outputs[k], used);
  for (int k = 0; store && k < n; k++) store[outputs[k]->id].why = LOWER_WHY_OUTPUT;
  for (int id = 0; store && id < ir_graph_node_count(g); id++)
    if (used[id] && always(ir_graph_node(g, id)) && !store[id].why) store[id].why = LOWER_WHY_REDUCE;
}

/* The rule decided only about computed nodes the outputs reach, and left the
 * outputs', reductions' and matmuls' marks as they were. */
static int check_rule(const lower_program *p, const unsigned char *used, const lower_stored *store,
                      const lower_reason *base, uopc_error *err) {
  for (int id = 0; id < ir_graph_node_count(p->graph); id++) {
    const ir_node *n = ir_graph_node(p->graph, id);
    lower_reason why = store[id].why;
    const char *wrong = base[id] ? (why == base[id] ? NULL : "changed the mark of")
                        : !why ? NULL
                        : !used[id] ? "stored a node the outputs do not reach:"
                        : !lower_computes(n) ? "stored a leaf or a move:"
                        : why != LOWER_WHY_COST ? "gave a reason other than LOWER_WHY_COST to" : NULL;
    if (wrong)
      return UOPC_FAIL(err, UOPC_E_INVALID, "lower '%s': the fusion rule (%s) %s node %%%d (%s); a rule stores only "
                       "computed nodes the outputs reach, as LOWER_WHY_COST, and leaves the outputs, reductions "
                       "and matmuls as marked", p->entry, p->fuse_rule->name, wrong, id, ir_op_info_of(n->op)->name);
  }
  return UOPC_OK;
}

int lower_fuse_decide(const lower_program *p, const unsigned char *used, lower_stored *store, uopc_error *err) {
  const ir_graph *g = p->graph;
  int count = ir_graph_node_count(g);
  int *depth = calloc((size_t)count + 1, sizeof *depth);
  lower_reason *base = calloc((size_t)count + 1, sizeof *base);   /* the marks before the rule */
  int rc = depth && base ? UOPC_OK : UOPC_FAIL(err, UOPC_E_NOMEM, "lower '%s': out of memory deciding fusion", p->entry);
  for (int id = 0; !rc && id < count; id++) base[id] = store[id].why;
  if (!rc && p->fuse_rule) rc = p->fuse_rule->decide(g, used, store, err);
  if (!rc && p->fuse_rule) rc = check_rule(p, used, store, base, err);
  for (int id = 0; !rc && id < count; id++) {    /* the chain cut */
    const ir_node *n = ir_graph_node(g, id);
    if (!used[id] || ir_op_info_of(n->op)->kind == IR_KIND_LEAF) continue;
    int d = 0;
    for (int i = 0; i < ir_op_info_of(n->op)->arity; i++)
      if (!store[n->src[i]->id].why && depth[n->src[i]->id] > d) d = depth[n->src[i]->id];
    depth[id] = d + 1;
    if (depth[id] > LOWER_CHAIN_CUT && !store[id].why) store[id] = (lower_stored){LOWER_WHY_CHAIN, depth[id], 0};
  }
  free(depth), free(base);
  return rc;
}
