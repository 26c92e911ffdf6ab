/* lower_share.c: temporaries that share scratch space (the compiler core;
 * issue 27), with LOWER_FUSE. Without it every temporary has its own place
 * in the scratch block. Here each temporary lives from the loop nest that
 * writes it to the last nest that reads it (nests run in kernel order, one
 * after another), and takes the place of an earlier temporary whose last
 * reader ran before its writer, when its size is provably no larger (sizes
 * are expressions of the dims: the proof is the interval of the difference,
 * over the dims' bounds). The block's size is then the peak of what is live
 * at once, at every binding. Chapter 23.1, "Fusion and its cost rule". This
 * file is called by planning (lower_plan.c) and uses no other pass. */
#include <stdlib.h>
#include "lower_internal.h"

typedef struct place {
  const sym_expr *offset, *bytes;   /* bytes rounded up to 64 */
  int last;                         /* the last kernel reading what is there now */
} place;

static int temp_of(const lower_program *p, const ir_node *n) {
  for (int b = p->n_outputs + p->n_inputs; b < p->n_buffers; b++)
    if (p->buffers[b].node == n) return b;
  return -1;
}

static int buffer_of(const lower_program *p, const ir_node *n) {
  for (int b = 0; b < p->n_buffers; b++)
    if (p->buffers[b].node == n && p->buffers[b].role != LOWER_INPUT) return b;
  return -1;
}

/* last[b] = the highest kernel whose nest reads temporary b: the nest of
 * kernel k reads each buffer its root reaches through fused nodes. */
static int last_readers(const lower_program *p, int *last, uopc_error *err) {
  int count = ir_graph_node_count(p->graph);
  int *seen = malloc(sizeof *seen * ((size_t)count + 1)), *stack = malloc(sizeof *stack * ((size_t)count + 1));
  if (!seen || !stack) { free(seen), free(stack); return UOPC_FAIL(err, UOPC_E_NOMEM, "lower: out of memory"); }
  for (int id = 0; id < count; id++) seen[id] = -1;
  for (int k = 0; k < p->n_kernels; k++) {
    const ir_node *root = p->buffers[p->kernel_buffer[k]].node;
    int top = 0;
    stack[top++] = root->id;
    seen[root->id] = k;
    while (top > 0) {                     /* no recursion: a fused body may be deep */
      const ir_node *n = ir_graph_node(p->graph, stack[--top]);
      for (int i = 0; i < ir_op_info_of(n->op)->arity; i++) {
        const ir_node *s = n->src[i];
        if (seen[s->id] == k) continue;
        seen[s->id] = k;
        int t = temp_of(p, s);
        if (t >= 0) last[t] = k;
        if (buffer_of(p, s) < 0) stack[top++] = s->id;   /* a buffer is a load: not entered */
      }
    }
  }
  free(seen), free(stack);
  return UOPC_OK;
}

/* 1 when a >= b at every binding of the dims. */
static int at_least(sym_arena *a, const sym_expr *x, const sym_expr *y, uopc_error *err) {
  const sym_expr *d;
  sym_interval iv;
  if (sym_expr_simplify(a, sym_expr_sub(a, x, y), &d, err) || sym_expr_interval(d, &iv, err)) return -1;
  return iv.lo >= 0;
}

int lower_share_scratch(lower_program *p, uopc_error *err) {
  sym_arena *a = ir_graph_arena((ir_graph *)p->graph);
  int *last = calloc((size_t)p->n_buffers + 1, sizeof *last);
  place *places = calloc((size_t)p->n_temps + 1, sizeof *places);
  int n_places = 0, rc = last && places ? last_readers(p, last, err)
                                         : UOPC_FAIL(err, UOPC_E_NOMEM, "lower: out of memory");
  const sym_expr *end = sym_expr_const(a, 0), *align = sym_expr_const(a, 64);
  for (int k = 0; k < p->n_kernels && !rc; k++) {      /* temporaries in the order they are written */
    int b = p->kernel_buffer[k];
    lower_buffer *buf = &p->buffers[b];
    if (buf->role != LOWER_TEMP) continue;
    const sym_expr *bytes = sym_expr_const(a, (int64_t)uopc_dtype_size(buf->node->dtype));
    for (int j = 0; j < buf->node->rank; j++) bytes = sym_expr_mul(a, bytes, buf->node->shape[j]);
    bytes = sym_expr_mul(a, sym_expr_floordiv(a, sym_expr_add(a, bytes, sym_expr_const(a, 63)), align), align);
    if ((rc = sym_expr_simplify(a, bytes, &bytes, err))) break;
    int chosen = -1;
    for (int q = 0; q < n_places && chosen < 0 && !rc; q++) {
      if (places[q].last >= k) continue;               /* still read at or after this writer */
      int big = at_least(a, places[q].bytes, bytes, err);
      if (big < 0) rc = err->code;
      else if (big) chosen = q;
    }
    if (rc) break;
    if (chosen < 0) {
      chosen = n_places++;
      places[chosen].offset = end;
      places[chosen].bytes = bytes;
      rc = sym_expr_simplify(a, sym_expr_add(a, end, bytes), &end, err);
    }
    places[chosen].last = last[b] > k ? last[b] : k;
    buf->scratch_offset = places[chosen].offset;
  }
  p->scratch_bytes = !rc && p->n_temps ? end : NULL;
  free(last), free(places);
  return rc;
}
