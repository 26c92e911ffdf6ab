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
  int rc = codegen_printf(t, err, "/* %s: out = %s elementwise over f32 vectors (lab 23.2).\n",
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

/* The body at element addr of x, writing out[out_addr]: 23.1's values. */
static int emit_body(codegen_text *t, const variant_spec *spec, const char *addr,
                     const char *out_addr, const char *indent, uopc_error *err) {
  codegen_values v;
  codegen_values_init(&v, addr, indent);
  int tmp = 0, rc = codegen_emit_value(t, &v, spec->out, &tmp, err);
  return rc ? rc : codegen_printf(t, err, "%sout[%s] = t%d;\n", indent, out_addr, tmp);
}

int variant_codegen_generic(variant_source *src, const variant_spec *spec, uopc_error *err) {
  char entry[64];
  snprintf(entry, sizeof entry, "%s_generic", spec->op_name ? spec->op_name : "?");
  int rc = start(src, spec, entry, "pplll", err);
  codegen_text *t = &src->text;
  if (!rc) rc = codegen_printf(t, err, "void %s(float *out, const float *x, int64_t %s, int64_t out_s0, "
                               "int64_t x_s0) {\n", entry, spec->n->name);
  if (!rc) rc = codegen_printf(t, err, "  for (int64_t i0 = 0; i0 < %s; i0++) {\n", spec->n->name);
  if (!rc) rc = emit_body(t, spec, "i0 * x_s0", "i0 * out_s0", "    ", err);
  if (!rc) rc = codegen_printf(t, err, "  }\n}\n");
  if (rc) variant_source_fini(src);
  return rc;
}

int variant_codegen_fast16(variant_source *src, const variant_spec *spec, uopc_error *err) {
// STUDENT 23.2 variant_codegen_fast16
  char entry[64], blocks[64];
  const char *n = spec->n->name;
  if (spec->exact_n) {
    snprintf(entry, sizeof entry, "%s_fast16_n%" PRId64, spec->op_name, spec->exact_n);
    snprintf(blocks, sizeof blocks, "%" PRId64, spec->exact_n / VARIANT_LANES);
  } else {
    snprintf(entry, sizeof entry, "%s_fast16", spec->op_name);
    snprintf(blocks, sizeof blocks, "%s / %d", n, VARIANT_LANES);
  }
  int rc = start(src, spec, entry, "ppl", err);
  codegen_text *t = &src->text;
  if (!rc) rc = codegen_printf(t, err, "void %s(float *restrict out_p, const float *restrict x_p, int64_t %s) {\n",
                               entry, n);
  if (!rc && spec->exact_n) rc = codegen_printf(t, err, "  (void)%s;   /* the guards hold %s == %" PRId64 " */\n",
                                                n, n, spec->exact_n);
  if (!rc) rc = codegen_printf(t, err, "  float *restrict out = __builtin_assume_aligned(out_p, %d);\n"
                               "  const float *restrict x = __builtin_assume_aligned(x_p, %d);\n",
                               VARIANT_ALIGN, VARIANT_ALIGN);
  if (!rc) rc = codegen_printf(t, err, "  for (int64_t i0 = 0; i0 < %s; i0++) {\n"
                               "    for (int64_t i1 = 0; i1 < %d; i1++) {\n", blocks, VARIANT_LANES);
  if (!rc) rc = emit_body(t, spec, "i0 * 16 + i1", "i0 * 16 + i1", "      ", err);
  if (!rc) rc = codegen_printf(t, err, "    }\n  }\n}\n");
  if (rc) variant_source_fini(src);
  return rc;
// END STUDENT
}
