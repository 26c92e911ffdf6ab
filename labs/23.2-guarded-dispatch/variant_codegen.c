/* variant_codegen.c: the C source of one dispatch variant (lab 23.2).
 * Deterministic text: the same spec always gives the same bytes, so the
 * disk cache finds a variant again in the next process. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "variant_codegen.h"

void variant_source_fini(variant_source *src) {
  codegen_text_fini(&src->text);
}

/* A pointwise function of the single input x, the only form these loops serve. */
static int check_graph(const variant_spec *spec, uopc_error *err) {
  const kernel_graph *g = spec->graph;
  if (!g || !spec->out || !spec->n || !spec->guards || !spec->key || !spec->op_name)
    return UOPC_FAIL(err, UOPC_E_INVALID, "variant spec has a NULL part");
  if (g->n_inputs != 1 || strcmp(g->inputs[0]->name, "x") != 0 || spec->out->op == KERNEL_SUM ||
      spec->out->rank != 1)
    return UOPC_FAIL(err, UOPC_E_UNSUPPORTED, "variant '%s': only a pointwise vector function of one "
                     "input 'x' is supported (%d inputs, output %s of rank %d)", spec->op_name,
                     g->n_inputs, kernel_op_name(spec->out->op), spec->out->rank);
  return UOPC_OK;
}

static int start(variant_source *src, const variant_spec *spec, const char *entry,
                 const char *signature, uopc_error *err) {
  memset(src, 0, sizeof *src);
  int rc = check_graph(spec, err);
  if (rc) return rc;
  if (strlen(entry) >= sizeof src->entry) return UOPC_FAIL(err, UOPC_E_INVALID, "entry '%s' too long", entry);
  strcpy(src->entry, entry);
  strcpy(src->signature, signature);
  return variant_codegen_banner(&src->text, spec, entry, err);
}

/* "add(mul(x, x), 1.0f)": what node computes, for the banner. */
static size_t describe(const kernel_node *n, char *buf, size_t size) {
  int used = n->op == KERNEL_INPUT    ? snprintf(buf, size, "%s", n->name)
             : n->op == KERNEL_SCALAR ? snprintf(buf, size, "%.9g", (double)n->scalar)
                                      : snprintf(buf, size, "%s(", kernel_op_name(n->op));
  size_t at = used > 0 ? (size_t)used : 0;
  if (n->op == KERNEL_INPUT || n->op == KERNEL_SCALAR) return at;
  for (int k = 0; k < 2 && n->src[k] && at + 1 < size; k++) {
    if (k) at += (size_t)snprintf(buf + at, size - at, ", ");
    if (at + 1 < size) at += describe(n->src[k], buf + at, size - at);
  }
  if (at + 1 < size) at += (size_t)snprintf(buf + at, size - at, ")");
  return at;
}

int variant_codegen_banner(codegen_text *t, const variant_spec *spec, const char *entry,
                           uopc_error *err) {
  const sym_dim *n = spec->n;
  char guards[2048], what[512];
  guard_set_describe(spec->guards, ";\n *   ", guards, sizeof guards);
  describe(spec->out, what, sizeof what);
  int rc = codegen_printf(t, err, "/* %s: out = %s elementwise over f32 vectors (lab 23.2's loops; the\n"
                          " *   body by the compiler core's value emitter, lower_emit_value).\n",
                          entry, what);
  if (!rc) rc = codegen_printf(t, err, " * dims: %s in [%" PRId64 ", %" PRId64 "]", n->name, n->lo, n->hi);
  if (!rc && spec->exact_n) rc = codegen_printf(t, err, ", specialised to %s = %" PRId64, n->name, spec->exact_n);
  if (!rc) rc = codegen_printf(t, err, "\n * index: int64_t (strides may be any int64, negative included)\n");
  if (!rc) rc = codegen_printf(t, err, " * guards, all checked by the dispatcher before every call:\n *   %s\n",
                               guards);
  if (!rc) rc = codegen_printf(t, err, " * cache key: %s\n * key hash: %016" PRIx64 " */\n#include <stdint.h>\n\n",
                               spec->key->text, spec->key->hash);
  return rc;
}

/* A loop variable below extent (bounds for the intervals of addresses). */
static const sym_expr *loop_var(sym_arena *a, const char *name, int64_t hi) {
  sym_dim d;
  memset(&d, 0, sizeof d);
  snprintf(d.name, sizeof d.name, "%s", name);
  d.hi = hi > 0 ? hi - 1 : 0;
  d.multiple_of = 1;
  d.loop = 1;
  return sym_expr_dim(a, &d);
}

/* out[out_addr] = the operation at one element of x, written by the compiler
 * core's one value emitter (lower_emit_value) on the graph in the core's IR:
 * fast = 1 reads contiguous x at i0 * 16 + i1, fast = 0 reads x at i0
 * through its runtime stride x_s0. */
static int emit_body(codegen_text *t, const variant_spec *spec, int fast, const char *out_addr, int depth,
                     uopc_error *err) {
  ir_graph *g = NULL;
  const ir_node *out = NULL;
  int rc = ir_graph_new(&g, err), tmp = 0;
  if (!rc) rc = kernel_graph_to_ir(spec->graph, spec->out, g, !fast, &out, err);
  if (!rc) {
    sym_arena *a = ir_graph_arena(g);
    const sym_expr *i0 = loop_var(a, "i0", fast ? spec->n->hi / VARIANT_LANES : spec->n->hi), *idx;
    idx = fast ? sym_expr_add(a, sym_expr_mul(a, i0, sym_expr_const(a, VARIANT_LANES)),
                              loop_var(a, "i1", VARIANT_LANES)) : i0;
    codegen_nest n;
    codegen_nest_init(&n, t, a, "int64_t", depth, err);
    rc = sym_expr_simplify(a, idx, &idx, err);
    if (!rc) rc = lower_emit_value(&n, LOWER_C, out, &idx, &tmp);
    if (!rc) rc = codegen_line(&n, "out[%s] = t%d;", out_addr, tmp);
  }
  ir_graph_free(g);
  return rc;
}

int variant_codegen_generic(variant_source *src, const variant_spec *spec, uopc_error *err) {
  char entry[64];
  snprintf(entry, sizeof entry, "%s_generic", spec->op_name ? spec->op_name : "?");
  int rc = start(src, spec, entry, "pplll", err);
  codegen_text *t = &src->text;
  if (!rc) rc = codegen_printf(t, err, "void %s(float *out, const float *x, int64_t %s, int64_t out_s0, "
                               "int64_t x_s0) {\n", entry, spec->n->name);
  if (!rc) rc = codegen_printf(t, err, "  for (int64_t i0 = 0; i0 < %s; i0++) {\n", spec->n->name);
  if (!rc) rc = emit_body(t, spec, 0, "i0 * out_s0", 2, err);
  if (!rc) rc = codegen_printf(t, err, "  }\n}\n");
  if (rc) variant_source_fini(src);
  return rc;
}

int variant_codegen_fast16(variant_source *src, const variant_spec *spec, uopc_error *err) {
  /* Lab 23.2: write variant_codegen_fast16 here. See README.md in this folder. */
  (void)src; (void)spec;
  return UOPC_FAIL(err, UOPC_E_NOT_IMPLEMENTED, "lab 23.2: variant_codegen_fast16 is not implemented yet");
}
