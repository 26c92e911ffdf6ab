/* ir_print.c: the graph IR as text (given code; the compiler core).
 * One node a line, operands by number, parameters after them, then the
 * node's dtype and symbolic shape: students, tests and the banners of
 * generated files read it. Chapter 23.1, "The graph IR". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ir.h"

static void expr_text(const sym_expr *e, char *buf, size_t size) {
  if (!e || sym_expr_format(e, buf, size, NULL) != UOPC_OK) snprintf(buf, size, "?");
}

static int shape_list(codegen_text *t, int rank, const sym_expr *const *shape, uopc_error *err) {
  char text[256];
  int rc = UOPC_OK;
  for (int k = 0; k < rank && !rc; k++) {
    expr_text(shape[k], text, sizeof text);
    rc = codegen_printf(t, err, "%s%s", k ? ", " : "", text);
  }
  return rc;
}

/* The parameters of n after its operands: "axis=0, start=1, step=2". */
static int params(codegen_text *t, const ir_node *n, uopc_error *err) {
  char a[256], b[256];
  switch (n->op) {
  case IR_INPUT:
    if (n->contiguous) return codegen_printf(t, err, "%s", n->name);
    expr_text(n->offset, a, sizeof a);
    if (codegen_printf(t, err, "%s, strides=[", n->name) || shape_list(t, n->rank, n->strides, err)) return err->code;
    return codegen_printf(t, err, "], offset=%s", a);
  case IR_CONST: return codegen_printf(t, err, "%.17g", n->value);
  case IR_SIZE:
    expr_text(n->index, a, sizeof a);
    return codegen_printf(t, err, "%s", a);
  case IR_CAST: return codegen_printf(t, err, ", to=%s", ir_dtype_name(n->dtype));
  case IR_SLICE: case IR_SLICE_SET:
    expr_text(n->start, a, sizeof a);
    expr_text(n->step, b, sizeof b);
    return codegen_printf(t, err, ", axis=%d, start=%s, step=%s", n->axis, a, b);
  case IR_SELECT: case IR_SELECT_SET:
    expr_text(n->index, a, sizeof a);
    return codegen_printf(t, err, ", axis=%d, index=%s", n->axis, a);
  case IR_PERMUTE: {
    int rc = codegen_printf(t, err, ", perm=[");
    for (int k = 0; k < n->rank && !rc; k++) rc = codegen_printf(t, err, "%s%d", k ? ", " : "", n->perm[k]);
    return rc ? rc : codegen_printf(t, err, "]");
  }
  case IR_SUM: case IR_MAX: case IR_MEAN: {
    int rc = codegen_printf(t, err, ", axes=[");
    for (int k = 0, first = 1; k < n->src[0]->rank && !rc; k++)
      if (n->axes >> k & 1u) { rc = codegen_printf(t, err, "%s%d", first ? "" : ", ", k); first = 0; }
    return rc ? rc : codegen_printf(t, err, "]%s", n->keepdims ? ", keepdims" : "");
  }
  default: return UOPC_OK;
  }
}

int ir_print_node(codegen_text *t, const ir_node *n, const char *prefix, uopc_error *err) {
  int rc = codegen_printf(t, err, "%s%%%d = %s(", prefix, n->id, ir_op_info_of(n->op)->name);
  for (int i = 0; i < 3 && n->src[i] && !rc; i++) rc = codegen_printf(t, err, "%s%%%d", i ? ", " : "", n->src[i]->id);
  if (!rc) rc = params(t, n, err);
  if (!rc) rc = codegen_printf(t, err, ") : %s[", ir_dtype_name(n->dtype));
  if (!rc) rc = shape_list(t, n->rank, n->shape, err);
  return rc ? rc : codegen_printf(t, err, "]\n");
}

static void mark(const ir_node *n, unsigned char *used) {
  if (!n || used[n->id]) return;
  used[n->id] = 1;
  for (int i = 0; i < 3; i++) mark(n->src[i], used);
}

int ir_print_prefixed(codegen_text *t, const ir_graph *g, const ir_node *const *outputs, int n_outputs,
                      const char *const *names, const char *prefix, uopc_error *err) {
  int count = ir_graph_node_count(g), rc = UOPC_OK;
  unsigned char *used = calloc((size_t)count + 1, 1);
  if (!used) return UOPC_FAIL(err, UOPC_E_NOMEM, "ir_print: out of memory");
  for (int k = 0; k < n_outputs; k++) mark(outputs[k], used);
  for (int id = 0; id < count && !rc; id++)
    if (used[id]) rc = ir_print_node(t, ir_graph_node(g, id), prefix, err);
  for (int k = 0; k < n_outputs && !rc; k++)
    rc = names ? codegen_printf(t, err, "%s%s = %%%d\n", prefix, names[k], outputs[k]->id)
               : codegen_printf(t, err, "%sout%d = %%%d\n", prefix, k, outputs[k]->id);
  free(used);
  return rc;
}

int ir_print(codegen_text *t, const ir_graph *g, const ir_node *const *outputs, int n_outputs,
             uopc_error *err) {
  return ir_print_prefixed(t, g, outputs, n_outputs, NULL, "", err);
}
