/* codegen.c: lowering a kernel graph to C (lab 23.1).
 * The text is built from the graph alone, so the same graph always gives the
 * same bytes (and the same cache key). Loop bounds and addresses are
 * expressions over the dims, printed by sym_expr_to_c: a size reaches the
 * kernel only as an argument. Chapter 23.1, "Reading the generated loop". */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "codegen.h"
#include "sym_fact.h"

#define EXPR_TEXT_MAX 512
/* A sum keeps this many partial sums per output element, named LANES in the
 * generated text: the count and the order they are added in fix the rounding
 * (chapter 23.1, "The order of a sum"). 32 lanes are eight SSE registers of
 * independent additions, which gcc vectorises without reassociating any. */
#define SUM_LANES 32

int codegen_printf(codegen_text *t, uopc_error *err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return UOPC_FAIL(err, UOPC_E_INVALID, "bad format '%s'", fmt);
  if (t->len + (size_t)n + 1 > t->cap) {
    size_t cap = t->cap ? t->cap : 1024;
    while (cap < t->len + (size_t)n + 1) cap *= 2;
    char *data = realloc(t->data, cap);
    if (!data) return UOPC_FAIL(err, UOPC_E_NOMEM, "generated source: out of memory");
    t->data = data;
    t->cap = cap;
  }
  va_start(ap, fmt);
  vsnprintf(t->data + t->len, t->cap - t->len, fmt, ap);
  va_end(ap);
  t->len += (size_t)n;
  return UOPC_OK;
}

void codegen_text_fini(codegen_text *t) {
  free(t->data);
  memset(t, 0, sizeof *t);
}

typedef struct dim_list { sym_dim *dims; int count, overflow; } dim_list;

static void add_dim(const sym_dim *d, void *ctx) {
  dim_list *l = ctx;
  for (int k = 0; k < l->count; k++)
    if (strcmp(l->dims[k].name, d->name) == 0) return;
  if (l->count == CODEGEN_MAX_DIMS) { l->overflow = 1; return; }
  l->dims[l->count++] = *d;
}

int codegen_collect_dims(const kernel_graph *g, const kernel_node *out,
                         sym_dim *dims, int *n_dims, uopc_error *err) {
  dim_list l = {dims, 0, 0};
  for (int k = 0; k < out->rank; k++) sym_expr_each_dim(out->shape[k], add_dim, &l);
  for (int i = 0; i < g->n_inputs; i++)
    for (int k = 0; k < g->inputs[i]->rank; k++) sym_expr_each_dim(g->inputs[i]->shape[k], add_dim, &l);
  if (l.overflow)
    return UOPC_FAIL(err, UOPC_E_LIMIT, "a kernel takes at most %d dims", CODEGEN_MAX_DIMS);
  *n_dims = l.count;
  return UOPC_OK;
}

void codegen_values_init(codegen_values *v, const char *addr, const char *indent) {
  memset(v, 0, sizeof *v);
  v->addr = addr;
  v->indent = indent;
}

/* A float literal that C reads back as the same value: "2.0f", "0.1f". */
static void float_literal(float x, char *buf, size_t size) {
  if (isnan(x)) { snprintf(buf, size, "__builtin_nanf(\"\")"); return; }
  if (isinf(x)) { snprintf(buf, size, "%s__builtin_inff()", x < 0 ? "-" : ""); return; }
  snprintf(buf, size, "%.9g", (double)x);
  if (!strpbrk(buf, ".e")) strncat(buf, ".0", size - strlen(buf) - 1);
  strncat(buf, "f", size - strlen(buf) - 1);
}

static int emit_op(codegen_text *t, const codegen_values *v, const kernel_node *n, int k,
                   int a, int b, uopc_error *err) {
  const char *in = v->indent;
  switch (n->op) {
  case KERNEL_ADD: return codegen_printf(t, err, "%sconst float t%d = t%d + t%d;\n", in, k, a, b);
  case KERNEL_SUB: return codegen_printf(t, err, "%sconst float t%d = t%d - t%d;\n", in, k, a, b);
  case KERNEL_MUL: return codegen_printf(t, err, "%sconst float t%d = t%d * t%d;\n", in, k, a, b);
  case KERNEL_DIV: return codegen_printf(t, err, "%sconst float t%d = t%d / t%d;\n", in, k, a, b);
  /* NumPy's maximum: a NaN in either operand gives NaN. */
  case KERNEL_MAXIMUM:
    return codegen_printf(t, err, "%sconst float t%d = (t%d > t%d || t%d != t%d) ? t%d : t%d;\n",
                          in, k, a, b, a, a, a, b);
  case KERNEL_NEG: return codegen_printf(t, err, "%sconst float t%d = -t%d;\n", in, k, a);
  case KERNEL_EXP: return codegen_printf(t, err, "%sconst float t%d = expf(t%d);\n", in, k, a);
  default:
    return UOPC_FAIL(err, UOPC_E_UNSUPPORTED, "%s inside an expression: only the output may be a sum",
                     kernel_op_name(n->op));
  }
}

int codegen_emit_value(codegen_text *t, codegen_values *v, const kernel_node *node,
                       int *tmp, uopc_error *err) {
  if (v->tmp_of[node->id]) { *tmp = v->tmp_of[node->id] - 1; return UOPC_OK; }
  int a = -1, b = -1, rc = UOPC_OK;
  if (node->src[0]) rc = codegen_emit_value(t, v, node->src[0], &a, err);
  if (!rc && node->src[1]) rc = codegen_emit_value(t, v, node->src[1], &b, err);
  if (rc) return rc;
  int k = v->next++;
  if (node->op == KERNEL_INPUT)
    rc = codegen_printf(t, err, "%sconst float t%d = %s[%s];\n", v->indent, k, node->name, v->addr);
  else if (node->op == KERNEL_SCALAR) {
    char lit[64];
    float_literal(node->scalar, lit, sizeof lit);
    rc = codegen_printf(t, err, "%sconst float t%d = %s;\n", v->indent, k, lit);
  } else rc = emit_op(t, v, node, k, a, b, err);
  if (rc) return rc;
  v->tmp_of[node->id] = k + 1;
  *tmp = k;
  return UOPC_OK;
}

/* Lab 23.1: helper functions for your code go here. */

int codegen_emit_loops(codegen_text *t, const kernel_graph *g, const kernel_node *out,
                       const char *ix, uopc_error *err) {
  /* Lab 23.1: write codegen_emit_loops here. See README.md in this folder. */
  (void)t; (void)g; (void)out; (void)ix;
  return UOPC_FAIL(err, UOPC_E_NOT_IMPLEMENTED, "lab 23.1: codegen_emit_loops is not implemented yet");
}

/* ---- The whole function: banner, prelude, signature, body. */

static int describe_node(const kernel_node *n, char *buf, size_t size) {
  if (n->op == KERNEL_INPUT) return snprintf(buf, size, "%s", n->name);
  if (n->op == KERNEL_SCALAR) { float_literal(n->scalar, buf, size); return (int)strlen(buf); }
  int used = snprintf(buf, size, "%s(", kernel_op_name(n->op));
  for (int k = 0; k < 2 && n->src[k] && used < (int)size; k++) {
    if (k) used += snprintf(buf + used, size - (size_t)used, ", ");
    if (used < (int)size) used += describe_node(n->src[k], buf + used, size - (size_t)used);
  }
  if (used < (int)size) used += snprintf(buf + used, size - (size_t)used, ")");
  return used;
}

static int uses(const kernel_node *n, kernel_op op) {
  if (!n) return 0;
  return n->op == op || uses(n->src[0], op) || uses(n->src[1], op);
}

static int needs_helpers(const kernel_graph *g, const kernel_node *out) {
  for (int k = 0; k < out->rank; k++)
    if (sym_expr_needs_helpers(out->shape[k])) return 1;
  for (int i = 0; i < g->n_inputs; i++)
    for (int k = 0; k < g->inputs[i]->rank; k++)
      if (sym_expr_needs_helpers(g->inputs[i]->shape[k])) return 1;
  return 0;
}

static int emit_banner(codegen_kernel *k, const kernel_node *out, uopc_error *err) {
  char what[1024];
  describe_node(out, what, sizeof what);
  codegen_text *t = &k->source;
  int rc = codegen_printf(t, err, "/* %s: out = %s over f32, lowered by lab 23.1.\n", k->entry, what);
  if (!rc) rc = codegen_printf(t, err, " * dims:%s", k->n_dims ? "" : " none (every size is fixed)");
  for (int d = 0; d < k->n_dims && !rc; d++) {
    const sym_dim *dim = &k->dims[d];
    rc = codegen_printf(t, err, "%s %s in [%lld, %lld]", d ? "," : "", dim->name,
                        (long long)dim->lo, (long long)dim->hi);
    if (!rc && dim->multiple_of > 1)
      rc = codegen_printf(t, err, " multiple of %lld", (long long)dim->multiple_of);
  }
  if (!rc) rc = codegen_printf(t, err, "\n * index: %s (every buffer holds at most %lld elements)\n",
                               sym_index_ctype(&k->index), (long long)k->index.max_elements);
  if (!rc && out->op == KERNEL_SUM)    /* the numerical policy: chapter 23.1, "The order of a sum" */
    rc = codegen_printf(t, err,
                        " * reduction order: element j of a row is added into lane j %% LANES"
                        " (LANES = %d),\n *   each lane left to right from 0.0f; then the lanes"
                        " pairwise, lane k += lane\n *   k + LANES/2, then k + LANES/4, ..., k + 1;"
                        " out is lane 0. The order fixes the\n *   rounding, so it is part of this"
                        " text and of the cache key\n", SUM_LANES);
  if (!rc) rc = codegen_printf(t, err, " * guards: none inside; plan_launch checks every dim against"
                               " its bounds and\n *   every buffer's capacity before the call\n");
  if (!rc) rc = codegen_printf(t, err, " * cache key: SHA-256 of this text, the entry, the signature"
                               " \"%s\", the compiler\n *   and its version, the flags, the target and"
                               " the ABI version */\n", k->signature);
  return rc;
}

/* Appends one parameter, starting a new line past 96 columns. */
static int parameter(codegen_text *t, size_t *line_start, const char *text, uopc_error *err) {
  if (t->len - *line_start + strlen(text) + 2 > 96) {
    *line_start = t->len + 2;
    return codegen_printf(t, err, ",\n    %s", text);
  }
  return codegen_printf(t, err, ", %s", text);
}

static int emit_signature(codegen_kernel *k, const kernel_graph *g, uopc_error *err) {
  codegen_text *t = &k->source;
  const char *ix = sym_index_ctype(&k->index);
  size_t line_start = t->len;
  char text[96];
  int rc = codegen_printf(t, err, "void %s(float *restrict out", k->entry);
  for (int i = 0; i < g->n_inputs && !rc; i++) {
    snprintf(text, sizeof text, "const float *restrict %s", g->inputs[i]->name);
    rc = parameter(t, &line_start, text, err);
  }
  for (int d = 0; d < k->n_dims && !rc; d++) {
    snprintf(text, sizeof text, "%s %s", ix, k->dims[d].name);
    rc = parameter(t, &line_start, text, err);
  }
  return rc ? rc : codegen_printf(t, err, ") {\n");
}

static int decide_index(codegen_kernel *k, const kernel_graph *g, const kernel_node *out,
                        uopc_error *err) {
  sym_index_init(&k->index);
  int rc = sym_index_width(&k->index, "out", out->shape, out->rank, err);
  for (int i = 0; i < g->n_inputs && !rc; i++)
    rc = sym_index_width(&k->index, g->inputs[i]->name, g->inputs[i]->shape, g->inputs[i]->rank, err);
  return rc;
}

static int check_graph(const kernel_graph *g, const kernel_node *out, const char *entry,
                       uopc_error *err) {
  if (!g || !out || out < g->nodes || out >= g->nodes + g->count)
    return UOPC_FAIL(err, UOPC_E_INVALID, "codegen: the output is not a node of the graph");
  if (!entry || strlen(entry) >= sizeof ((codegen_kernel *)0)->entry)
    return UOPC_FAIL(err, UOPC_E_INVALID, "codegen: entry name '%s'", entry ? entry : "(null)");
  if (out->rank == 0)
    return UOPC_FAIL(err, UOPC_E_INVALID, "codegen: the output '%s' is a scalar, not a tensor",
                     kernel_op_name(out->op));
  if (out->op == KERNEL_SUM && uses(out->src[0], KERNEL_SUM))
    return UOPC_FAIL(err, UOPC_E_UNSUPPORTED, "codegen: a sum inside a sum");
  return UOPC_OK;
}

/* A sum's text names its lane count LANES: a parameter of that name would
 * shadow it. */
static int check_names(const codegen_kernel *k, const kernel_graph *g, const kernel_node *out,
                       uopc_error *err) {
  if (out->op != KERNEL_SUM) return UOPC_OK;
  for (int d = 0; d < k->n_dims; d++)
    if (strcmp(k->dims[d].name, "LANES") == 0)
      return UOPC_FAIL(err, UOPC_E_INVALID,
                       "codegen: dim 'LANES' would shadow the lane count of the sum");
  for (int i = 0; i < g->n_inputs; i++)
    if (strcmp(g->inputs[i]->name, "LANES") == 0)
      return UOPC_FAIL(err, UOPC_E_INVALID,
                       "codegen: input 'LANES' would shadow the lane count of the sum");
  return UOPC_OK;
}

int codegen_kernel_new(codegen_kernel *k, const kernel_graph *g, const kernel_node *out,
                       const char *entry, uopc_error *err) {
  memset(k, 0, sizeof *k);
  int rc = check_graph(g, out, entry, err);
  if (rc) return rc;
  snprintf(k->entry, sizeof k->entry, "%s", entry);
  rc = codegen_collect_dims(g, out, k->dims, &k->n_dims, err);
  if (!rc) rc = check_names(k, g, out, err);
  if (!rc) rc = decide_index(k, g, out, err);
  if (rc) return rc;
  int n = 0;
  for (int i = 0; i <= g->n_inputs; i++) k->signature[n++] = 'p';
  for (int d = 0; d < k->n_dims; d++) k->signature[n++] = k->index.bits == 32 ? 'i' : 'l';
  k->uses_libm = uses(out, KERNEL_EXP);
  rc = emit_banner(k, out, err);
  if (!rc) rc = codegen_printf(&k->source, err, "#include <stdint.h>\n%s\n",
                               k->uses_libm ? "#include <math.h>\n" : "");
  if (!rc && out->op == KERNEL_SUM)
    rc = codegen_printf(&k->source, err, "enum { LANES = %d };   /* partial sums per row */\n\n",
                        SUM_LANES);
  if (!rc && needs_helpers(g, out)) rc = codegen_printf(&k->source, err, "%s\n", SYM_C_HELPERS);
  if (!rc) rc = emit_signature(k, g, err);
  if (!rc) rc = codegen_emit_loops(&k->source, g, out, sym_index_ctype(&k->index), err);
  if (!rc) rc = codegen_printf(&k->source, err, "}\n");
  if (rc) codegen_kernel_fini(k);
  return rc;
}

void codegen_kernel_fini(codegen_kernel *k) {
  codegen_text_fini(&k->source);
}
