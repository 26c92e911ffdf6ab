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

// STUDENT 23.1 helpers
/* The C text of e, simplified first, into buf. */
static int expr_c(sym_arena *a, const sym_expr *e, char *buf, size_t size, uopc_error *err) {
  const sym_expr *s;
  int rc = sym_expr_simplify(a, e, &s, err);
  return rc ? rc : sym_expr_to_c(s, buf, size, err);
}

/* The row-major index of the element at vars over extents, Horner's way:
 * ((v0*e1 + v1)*e2 + v2)...; extent 0 never appears (it only bounds v0). */
static const sym_expr *row_major(sym_arena *a, const sym_expr *const *vars,
                                 const sym_expr *const *extents, int rank) {
  if (rank == 0) return sym_expr_const(a, 0);
  const sym_expr *acc = vars[0];
  for (int k = 1; k < rank; k++) acc = sym_expr_add(a, sym_expr_mul(a, acc, extents[k]), vars[k]);
  return acc;
}

/* Opens `for (ix name = 0; name < bound; name++) {` as a scope inside parent. */
static int open_loop(codegen_text *t, sym_arena *a, sym_scope *scope, const sym_scope *parent,
                     const char *name, const sym_expr *bound, const char *ix, int depth,
                     const sym_expr **var, uopc_error *err) {
  char text[EXPR_TEXT_MAX];
  int rc = sym_scope_open_loop(scope, parent, a, name, bound, var, err);
  if (!rc) rc = sym_expr_to_c(bound, text, sizeof text, err);
  if (!rc) rc = codegen_printf(t, err, "%*sfor (%s %s = 0; %s < %s; %s++) {\n", 2 * depth, "",
                               ix, name, name, text, name);
  return rc;
}

/* Fails unless lhs < rhs is proved in s: the generated code relies on it. */
static int require_lt(const sym_scope *s, const sym_expr *lhs, const sym_expr *rhs,
                      uopc_error *err) {
  char lt[EXPR_TEXT_MAX], rt[EXPR_TEXT_MAX];
  int proved = 0, rc = sym_scope_prove_lt(s, lhs, rhs, &proved, err);
  if (rc || proved) return rc;
  rc = expr_c(s->arena, lhs, lt, sizeof lt, err);
  if (!rc) rc = expr_c(s->arena, rhs, rt, sizeof rt, err);
  return rc ? rc : UOPC_FAIL(err, UOPC_E_INVALID, "codegen: cannot prove %s < %s", lt, rt);
}

/* A sum's loops: the element j of the reduced axis is r0 + r1, added into lane
 * r1 = j % LANES (chapter 23.1, "The order of a sum"). */
typedef struct sum_loops {
  sym_arena *a;
  const kernel_node *body;
  const sym_expr **vars;       /* the outer loops' variables; vars[outer] is r0 + r1 */
  int outer;
  const sym_expr *n, *lanes;   /* the reduced extent; LANES, a dim fixed at SUM_LANES */
  const char *ix;
} sum_loops;

/* The element at vars added into lane r1, inside scope s. */
static int add_element(codegen_text *t, const sum_loops *l, const sym_scope *s, const sym_expr *r0,
                       const sym_expr *r1, int depth, uopc_error *err) {
  sym_arena *a = l->a;
  const sym_expr *j = sym_expr_add(a, r0, r1);
  int rc = require_lt(s, j, l->n, err);                 /* the index stays in its row */
  if (!rc) rc = require_lt(s, r1, l->lanes, err);       /* and the lane in acc0 */
  char addr[EXPR_TEXT_MAX], indent[2 * KERNEL_MAX_RANK + 16];
  l->vars[l->outer] = j;
  const sym_expr *index = row_major(a, l->vars, l->body->shape, l->body->rank);
  if (!rc) rc = expr_c(a, index, addr, sizeof addr, err);
  snprintf(indent, sizeof indent, "%*s", 2 * depth, "");
  codegen_values v;
  codegen_values_init(&v, addr, indent);
  int tmp = 0;
  if (!rc) rc = codegen_emit_value(t, &v, l->body, &tmp, err);
  return rc ? rc : codegen_printf(t, err, "%sacc0[r1] += t%d;\n", indent, tmp);
}

/* Whole blocks: `for (; r0 <= n - LANES; r0 += LANES)`, so r0 + LANES - 1 < n
 * holds inside, and with r1 < LANES that proves r0 + r1 < n. The bound cannot
 * overflow: n - LANES >= 1 - LANES. (It is n's text followed by "- LANES":
 * the canonical form of 4096 - LANES would print as LANES*(-1) + 4096.) */
static int emit_blocks(codegen_text *t, const sum_loops *l, const sym_scope *parent, int depth,
                       uopc_error *err) {
  sym_arena *a = l->a;
  sym_scope blocks, lane;
  const sym_expr *r0, *r1;
  char n_text[EXPR_TEXT_MAX];
  int rc = expr_c(a, l->n, n_text, sizeof n_text, err);
  if (!rc) rc = codegen_printf(t, err, "%*sfor (; r0 <= %s - LANES; r0 += LANES) {\n", 2 * depth, "",
                               n_text);
  if (!rc) rc = sym_scope_open_loop(&blocks, parent, a, "r0", l->n, &r0, err);
  if (!rc) rc = sym_scope_assume_lt(&blocks, sym_expr_sub(a, sym_expr_add(a, r0, l->lanes),
                                                          sym_expr_const(a, 1)), l->n, err);
  if (!rc) rc = open_loop(t, a, &lane, &blocks, "r1", l->lanes, l->ix, depth + 1, &r1, err);
  if (!rc) rc = add_element(t, l, &lane, r0, r1, depth + 2, err);
  if (!rc) rc = codegen_printf(t, err, "%*s}\n%*s}\n", 2 * depth + 2, "", 2 * depth, "");
  return rc;
}

/* The tail: `for (r1 = 0; r0 + r1 < n; r1++)`, fewer than LANES elements.
 * After the blocks n < r0 + LANES; with the loop's r0 + r1 < n that gives
 * r1 < LANES, two facts the one-fact prover cannot chain, so the tail's scope
 * records r1 < LANES itself (opened as the loop r1 < LANES), and the loop
 * condition r0 + r1 < n as its fact. */
static int emit_tail(codegen_text *t, const sum_loops *l, const sym_scope *parent, int depth,
                     uopc_error *err) {
  sym_arena *a = l->a;
  sym_scope rest, lane;
  const sym_expr *r0, *r1;
  char n_text[EXPR_TEXT_MAX];
  /* After the blocks r0 is in [0, n]: a variable below n + 1, with n < r0 + LANES. */
  int rc = sym_scope_open_loop(&rest, parent, a, "r0", sym_expr_add(a, l->n, sym_expr_const(a, 1)),
                               &r0, err);
  if (!rc) rc = sym_scope_assume_lt(&rest, l->n, sym_expr_add(a, r0, l->lanes), err);
  if (!rc) rc = sym_scope_open_loop(&lane, &rest, a, "r1", l->lanes, &r1, err);
  if (!rc) rc = sym_scope_assume_lt(&lane, sym_expr_add(a, r0, r1), l->n, err);
  if (!rc) rc = expr_c(a, l->n, n_text, sizeof n_text, err);
  if (!rc) rc = codegen_printf(t, err, "%*sfor (%s r1 = 0; r0 + r1 < %s; r1++) {\n", 2 * depth, "",
                               l->ix, n_text);
  if (!rc) rc = add_element(t, l, &lane, r0, r1, depth + 1, err);
  return rc ? rc : codegen_printf(t, err, "%*s}\n", 2 * depth, "");
}

/* The lanes, pairwise: lane k += lane k + LANES/2, then k + LANES/4, ... 1. */
static int emit_combine(codegen_text *t, const char *ix, const char *out_addr, int depth,
                        uopc_error *err) {
  int d = 2 * depth;
  return codegen_printf(t, err,
                        "%*sfor (%s r1 = LANES / 2; r1 > 0; r1 /= 2) {\n"
                        "%*sfor (%s r2 = 0; r2 < r1; r2++) {\n"
                        "%*sacc0[r2] += acc0[r2 + r1];\n"
                        "%*s}\n%*s}\n"
                        "%*sout[%s] = acc0[0];\n",
                        d, "", ix, d + 2, "", ix, d + 4, "", d + 2, "", d, "", d, "", out_addr);
}

/* A sum of the last axis into out[out_addr], inside the outer loops' scope. */
static int emit_sum(codegen_text *t, sum_loops *l, const sym_scope *parent, const char *out_addr,
                    int depth, uopc_error *err) {
  sym_dim lanes_dim;
  int rc = sym_dim_init(&lanes_dim, "LANES", SUM_LANES, SUM_LANES, 1, err);
  if (!rc && !(l->lanes = sym_expr_dim(l->a, &lanes_dim)))
    rc = UOPC_FAIL(err, UOPC_E_NOMEM, "codegen: the lane count: out of memory");
  if (!rc) rc = codegen_printf(t, err, "%*sfloat acc0[LANES] = {0.0f};\n%*s%s r0 = 0;\n",
                               2 * depth, "", 2 * depth, "", l->ix);
  if (!rc) rc = emit_blocks(t, l, parent, depth, err);
  if (!rc) rc = emit_tail(t, l, parent, depth, err);
  return rc ? rc : emit_combine(t, l->ix, out_addr, depth, err);
}

/* out[addr] = the element at vars, in the innermost loop. */
static int emit_store(codegen_text *t, sym_arena *a, const kernel_node *out,
                      const sym_expr *const *vars, const char *out_addr, int depth, uopc_error *err) {
  char addr[EXPR_TEXT_MAX], indent[2 * KERNEL_MAX_RANK + 8];
  int rc = expr_c(a, row_major(a, vars, out->shape, out->rank), addr, sizeof addr, err);
  snprintf(indent, sizeof indent, "%*s", 2 * depth, "");
  codegen_values v;
  codegen_values_init(&v, addr, indent);
  int tmp = 0;
  if (!rc) rc = codegen_emit_value(t, &v, out, &tmp, err);
  return rc ? rc : codegen_printf(t, err, "%sout[%s] = t%d;\n", indent, out_addr, tmp);
}
// END STUDENT

int codegen_emit_loops(codegen_text *t, const kernel_graph *g, const kernel_node *out,
                       const char *ix, uopc_error *err) {
// STUDENT 23.1 codegen_emit_loops
  sym_arena *a = g->arena;
  int reduce = out->op == KERNEL_SUM;
  const kernel_node *body = reduce ? out->src[0] : out;
  int outer = reduce ? body->rank - 1 : body->rank, depth = 1, rc = UOPC_OK;
  sym_scope root, scopes[KERNEL_MAX_RANK];
  const sym_expr *vars[KERNEL_MAX_RANK];
  const sym_scope *parent = &root;
  sym_scope_init(&root, NULL, a);
  for (int k = 0; k < outer && !rc; k++, depth++) {
    char name[16];
    snprintf(name, sizeof name, "i%d", k);
    rc = open_loop(t, a, &scopes[k], parent, name, body->shape[k], ix, depth, &vars[k], err);
    parent = &scopes[k];
  }
  char out_addr[EXPR_TEXT_MAX];
  if (!rc) rc = expr_c(a, row_major(a, vars, out->shape, outer), out_addr, sizeof out_addr, err);
  sum_loops l = {a, body, vars, outer, reduce ? body->shape[outer] : NULL, NULL, ix};
  if (!rc) rc = reduce ? emit_sum(t, &l, parent, out_addr, depth, err)
                       : emit_store(t, a, out, vars, out_addr, depth, err);
  while (!rc && --depth > 0) rc = codegen_printf(t, err, "%*s}\n", 2 * depth, "");
  return rc;
// END STUDENT
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
