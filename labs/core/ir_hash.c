/* ir_hash.c: a structural hash of what a graph computes (given code; the
 * compiler core). Each node mixes its op, dtype, shape, parameters
 * and its operands' hashes, never its id, so the same graph built in another
 * node order hashes alike. Lab 23.2's variant keys carry it as their "graph"
 * part. Chapter 23.2, "One variant cache for every graph". */
#include <stdlib.h>
#include <string.h>
#include "ir.h"

static uint64_t mix(uint64_t h, uint64_t v) {   /* FNV-1a over the 8 bytes of v */
  for (int k = 0; k < 8; k++) h = (h ^ ((v >> (8 * k)) & 0xff)) * 0x100000001b3ull;
  return h;
}

/* sym_expr's hash is structural (kind, value, dim name and bounds, operands). */
static uint64_t expr(uint64_t h, const sym_expr *e) { return mix(h, e ? e->hash : 0x5a5a5a5a); }

static uint64_t text(uint64_t h, const char *s) {
  for (; *s; s++) h = mix(h, (unsigned char)*s);
  return mix(h, 0);
}

static uint64_t params(uint64_t h, const ir_node *n) {
  uint64_t bits;
  switch (n->op) {
  case IR_CONST:
    memcpy(&bits, &n->value, sizeof bits);   /* 0.0 and -0.0 differ, as they compute */
    return mix(h, bits);
  case IR_INPUT:
    h = mix(text(h, n->name), (uint64_t)n->input);
    for (int k = 0; k < n->rank; k++) h = expr(h, n->strides[k]);
    return mix(expr(h, n->offset), (uint64_t)n->contiguous);
  case IR_SLICE: case IR_SLICE_SET: return expr(expr(mix(h, (uint64_t)n->axis), n->start), n->step);
  case IR_SIZE: return expr(h, n->index);
  case IR_SELECT: case IR_SELECT_SET: return expr(mix(h, (uint64_t)n->axis), n->index);
  case IR_PERMUTE:
    for (int k = 0; k < n->rank; k++) h = mix(h, (uint64_t)n->perm[k]);
    return h;
  case IR_SUM: case IR_MAX: case IR_MEAN: return mix(mix(h, n->axes), (uint64_t)n->keepdims);
  default: return h;
  }
}

static uint64_t node_hash(const ir_node *n, const uint64_t *done) {
  uint64_t h = mix(mix(mix(0xcbf29ce484222325ull, (uint64_t)n->op), (uint64_t)n->dtype), (uint64_t)n->rank);
  for (int k = 0; k < n->rank; k++) h = expr(h, n->shape[k]);
  h = params(h, n);
  for (int k = 0; k < 3; k++) h = mix(h, n->src[k] ? done[n->src[k]->id] : 0);
  return h;
}

uint64_t ir_graph_hash(const ir_graph *g, const ir_node *const *outputs, int n_outputs) {
  int count = ir_graph_node_count(g);
  uint64_t *done = malloc(((size_t)count + 1) * sizeof *done);
  if (!done) return 0;
  for (int id = 0; id < count; id++)   /* operands have smaller ids: one pass */
    done[id] = node_hash(ir_graph_node(g, id), done);
  uint64_t h = mix(0xcbf29ce484222325ull, (uint64_t)n_outputs);
  for (int k = 0; k < n_outputs; k++)
    h = mix(h, outputs[k] && outputs[k]->id < count && ir_graph_node(g, outputs[k]->id) == outputs[k]
                   ? done[outputs[k]->id] : 0);
  free(done);
  return h ? h : 1;
}
