/* lower_print.c: a program's fusion groups and plan of temporaries as text
 * (the compiler core; issue 27). It reads a finished program and changes
 * nothing: which nodes are one loop nest, why each nest's root is stored
 * (the rule that drew the boundary), what each nest reads, and where each
 * temporary lives in the scratch block. Chapter 23.7, "Fusion with a cost
 * rule". This file uses no pass; lower.c's callers call it. */
#include <stdlib.h>
#include "lower_internal.h"

/* The buffer a nest loads n from (an input node: the input's, even when it
 * is an output too), or -1 when n is fused. */
static int buffer_of(const lower_program *p, const ir_node *n) {
  for (int b = 0; b < p->n_buffers; b++)
    if (p->buffers[b].node == n && (n->op != IR_INPUT || p->buffers[b].role == LOWER_INPUT)) return b;
  return -1;
}

static int reason(codegen_text *t, const lower_buffer *b, uopc_error *err) {
  switch (b->reason) {
  case LOWER_WHY_OUTPUT: return codegen_printf(t, err, "an output");
  case LOWER_WHY_REDUCE: return codegen_printf(t, err, "a %s: always stored",
                                               b->node->op == IR_MATMUL ? "matmul" : "reduction");
  case LOWER_WHY_MATMUL_OPERAND: return codegen_printf(t, err, "computed, read by a matmul many times");
  case LOWER_WHY_COST:
    return codegen_printf(t, err, "cost rule: %lld ops x (%lld reads - 1) > %d", (long long)b->ops,
                          (long long)b->reads, LOWER_STORE_COST);
  case LOWER_WHY_CHAIN:
    return codegen_printf(t, err, "chain cut: %lld levels > %d", (long long)b->ops, LOWER_CHAIN_CUT);
  case LOWER_WHY_PACKED: return codegen_printf(t, err, "a matmul's right operand, packed contiguous once");
  default: return codegen_printf(t, err, "an input");
  }
}

/* Marks in nest[] the nodes kernel k computes (its root and every node
 * reached through fused ones) and in reads[] the buffers it loads. */
static void walk(const lower_program *p, int k, unsigned char *nest, unsigned char *reads, int *stack) {
  const ir_node *root = p->buffers[p->kernel_buffer[k]].node;
  int top = 0;
  stack[top++] = root->id;
  nest[root->id] = 1;
  if (root->op == IR_INPUT) reads[buffer_of(p, root)] = 1;   /* an output that is an input: a copy */
  while (top > 0) {                       /* no recursion: a fused body may be deep */
    const ir_node *n = ir_graph_node(p->graph, stack[--top]);
    for (int i = 0; i < ir_op_info_of(n->op)->arity; i++) {
      const ir_node *s = n->src[i];
      int b = buffer_of(p, s);
      if (b >= 0) reads[b] = 1;
      else if (!nest[s->id]) { nest[s->id] = 1; stack[top++] = s->id; }
    }
  }
}

/* What the printer keeps: the nodes and buffers of the nest at hand, and
 * the last nest that read each buffer so far. */
typedef struct groups {
  unsigned char *nest, *reads;
  int *stack, *last;
} groups;

static int one_nest(codegen_text *t, const lower_program *p, int k, groups *w, uopc_error *err) {
  unsigned char *nest = w->nest, *reads = w->reads;
  int count = ir_graph_node_count(p->graph);
  const lower_buffer *b = &p->buffers[p->kernel_buffer[k]];
  for (int id = 0; id < count; id++) nest[id] = 0;
  for (int q = 0; q < p->n_buffers; q++) reads[q] = 0;
  walk(p, k, nest, reads, w->stack);
  int rc = codegen_printf(t, err, "nest %d: %s = %%%d (", k, b->name, b->node->id);
  if (!rc) rc = reason(t, b, err);
  if (!rc) rc = codegen_printf(t, err, "), reads");
  int none = 1;
  for (int q = 0; q < p->n_buffers && !rc; q++)
    if (reads[q]) {
      rc = codegen_printf(t, err, "%s %s", none ? "" : ",", p->buffers[q].name);
      none = 0;
      w->last[q] = k;
    }
  if (!rc) rc = codegen_printf(t, err, "%s\n", none ? " nothing" : "");
  for (int id = 0; id < count && !rc; id++)
    if (nest[id]) rc = ir_print_node(t, ir_graph_node(p->graph, id), "  ", err);
  return rc;
}

static int plan(codegen_text *t, const lower_program *p, const int *last, uopc_error *err) {
  char text[LOWER_EXPR_MAX];
  int rc = UOPC_OK;
  for (int k = 0; k < p->n_kernels && !rc; k++) {
    const lower_buffer *b = &p->buffers[p->kernel_buffer[k]];
    if (b->role != LOWER_TEMP) continue;
    rc = sym_expr_format(b->scratch_offset, text, sizeof text, err);
    if (!rc) rc = codegen_printf(t, err, "scratch: %s at %s, live from nest %d to nest %d\n", b->name, text, k,
                                 last[p->kernel_buffer[k]] > k ? last[p->kernel_buffer[k]] : k);
  }
  if (!rc && p->scratch_bytes) rc = sym_expr_format(p->scratch_bytes, text, sizeof text, err);
  return rc ? rc : codegen_printf(t, err, "scratch bytes: %s\n", p->scratch_bytes ? text : "0 (no temporaries)");
}

int lower_program_print_groups(codegen_text *t, const lower_program *p, uopc_error *err) {
  int count = ir_graph_node_count(p->graph);
  groups w = {malloc((size_t)count + 1), malloc((size_t)p->n_buffers + 1),
              malloc(sizeof *w.stack * ((size_t)count + 1)), calloc((size_t)p->n_buffers + 1, sizeof *w.last)};
  int rc = w.nest && w.reads && w.stack && w.last ? UOPC_OK
                                                  : UOPC_FAIL(err, UOPC_E_NOMEM, "lower: out of memory printing groups");
  if (!rc) rc = codegen_printf(t, err, "%s: %d loop nest%s, %d temporar%s%s\n", p->entry, p->n_kernels,
                               p->n_kernels == 1 ? "" : "s", p->n_temps, p->n_temps == 1 ? "y" : "ies",
                               p->flags & LOWER_FUSE ? " (LOWER_FUSE)" : "");
  for (int k = 0; k < p->n_kernels && !rc; k++) rc = one_nest(t, p, k, &w, err);
  if (!rc) rc = plan(t, p, w.last, err);
  free(w.nest), free(w.reads), free(w.stack), free(w.last);
  return rc;
}
