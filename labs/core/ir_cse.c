/* ir_cse.c: common-subexpression elimination by hash-consing (the compiler
 * core; issue 27). Nodes are visited in id order; each is looked up in a
 * table of the nodes kept so far by its op, dtype, shape, parameters and its
 * operands' images. A node equal to one kept takes that one's image, so its
 * consumers become equal in turn. Expressions are hash-consed in their arena,
 * so shapes and bounds compare as pointers. Chapter 23.1, "Passes over the
 * graph". */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ir_pass.h"

static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}

static uint64_t key_hash(const ir_pass_map *m, const ir_node *x) {
  uint64_t h = mix((uint64_t)x->op, (uint64_t)x->dtype), bits;
  h = mix(h, (uint64_t)x->rank);
  for (int k = 0; k < x->rank; k++) h = mix(h, (uint64_t)(uintptr_t)x->shape[k]);
  for (int i = 0; i < ir_op_info_of(x->op)->arity; i++) h = mix(h, (uint64_t)(uintptr_t)m->map[x->src[i]->id]);
  memcpy(&bits, &x->value, sizeof bits);       /* constants by their bits: -0.0 is not 0.0 */
  h = mix(h, bits);
  h = mix(h, (uint64_t)(uintptr_t)x->start ^ (uint64_t)(uintptr_t)x->step << 1 ^ (uint64_t)(uintptr_t)x->index << 2);
  h = mix(h, (uint64_t)x->axis ^ (uint64_t)x->axes << 8 ^ (uint64_t)x->keepdims << 40);
  for (int k = 0; k < x->rank; k++) h = mix(h, (uint64_t)x->perm[k]);
  return h;
}

static int same(const ir_pass_map *m, const ir_node *x, const ir_node *y) {
  if (x->op != y->op || x->dtype != y->dtype || x->rank != y->rank || memcmp(&x->value, &y->value, sizeof x->value) ||
      x->start != y->start || x->step != y->step || x->index != y->index || x->axis != y->axis ||
      x->axes != y->axes || x->keepdims != y->keepdims || memcmp(x->perm, y->perm, sizeof x->perm))
    return 0;
  for (int k = 0; k < x->rank; k++)
    if (x->shape[k] != y->shape[k]) return 0;
  for (int i = 0; i < ir_op_info_of(x->op)->arity; i++)
    if (m->map[x->src[i]->id] != m->map[y->src[i]->id]) return 0;
  return 1;
}

int ir_pass_cse(ir_graph **out, const ir_node **new_outputs, const ir_graph *g, const ir_node *const *outputs,
                int n, uopc_error *err) {
  ir_pass_map m;
  int rc = ir_pass_begin(&m, g, outputs, n, err);
  if (rc) return rc;
  int count = ir_graph_node_count(g), cap = 16;
  while (cap < 2 * count) cap *= 2;             /* load at most 1/2: expected O(1) probes */
  const ir_node **table = calloc((size_t)cap, sizeof *table);
  if (!table) { ir_graph_free(m.to); free(m.map); return UOPC_FAIL(err, UOPC_E_NOMEM, "pass cse: out of memory"); }
  for (int id = 0; id < count; id++) {
    const ir_node *x = ir_graph_node(g, id);
    if (x->op == IR_INPUT) continue;
    size_t at = (size_t)key_hash(&m, x) & (size_t)(cap - 1);
    while (table[at] && !same(&m, table[at], x)) at = (at + 1) & (size_t)(cap - 1);
    if (table[at]) { m.map[id] = m.map[table[at]->id]; continue; }
    if (!ir_pass_copy(&m, x)) break;
    table[at] = x;
  }
  free(table);
  return ir_pass_end(&m, outputs, n, new_outputs, out, "cse", err);
}
