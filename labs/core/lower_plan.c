/* lower_plan.c: the lowering's first pass (given code; the compiler core).
 * Planning decides, before any text is written, which nodes are materialised
 * (the outputs, every reduction and matmul, a matmul's computed operands) and
 * so the buffers, the dims the parameters carry, the scratch layout of the
 * temporaries, the index width and the extents a max needs non-empty; its
 * last step, the signature, waits for the text (which may widen the index).
 * Later passes read the plan from the program; this file uses none of them.
 * Chapter 23.1, "One lowering, two back ends". */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lower_internal.h"

/* ---- Planning: buffers, dims, the index width. */

static int buffer_of(const lower_program *p, const ir_node *n) {
  for (int b = 0; b < p->n_buffers; b++)
    if (p->buffers[b].node == n && p->buffers[b].role != LOWER_INPUT) return b;
  return -1;
}

/* 1 when n computes something (an op that is not movement) on the way to
 * its leaves: fused into a matmul, it would be computed again for every
 * element of the other operand's far axis. */
static int computes(const ir_node *n) {
  while (ir_op_info_of(n->op)->kind == IR_KIND_MOVE) n = n->src[0];
  ir_kind k = ir_op_info_of(n->op)->kind;
  return k != IR_KIND_LEAF && k != IR_KIND_REDUCE && k != IR_KIND_MATMUL;
}

static int materialised(const ir_node *n) {
  ir_kind k = ir_op_info_of(n->op)->kind;
  return k == IR_KIND_REDUCE || k == IR_KIND_MATMUL;
}

/* A matmul's operand that computes is materialised once (chapter 23.1,
 * "What is fused"): the softmax weights of 23.5's attention, the hidden
 * layer of 23.4's model. Movement over leaves stays fused: it is index
 * arithmetic. */
static int operand_of_matmul(const lower_program *p, const unsigned char *used, const ir_node *n) {
  const ir_graph *g = p->graph;
  if (!computes(n) || ir_op_info_of(n->op)->kind == IR_KIND_MOVE) return 0;
  for (int id = n->id + 1; id < ir_graph_node_count(g); id++) {
    const ir_node *m = ir_graph_node(g, id);
    if (!used[id] || m->op != IR_MATMUL) continue;
    for (int i = 0; i < 2; i++) {
      const ir_node *s = m->src[i];
      while (ir_op_info_of(s->op)->kind == IR_KIND_MOVE && s != n) s = s->src[0];
      if (s == n) return 1;
    }
  }
  return 0;
}

int lower_plan_matmul_rows(const lower_program *p, const ir_node *n) {
  return n->op == IR_MATMUL && p->backend == LOWER_C && (p->flags & LOWER_FUSE);
}

/* 1 when reading n at (k, j) walks memory with unit stride along j: a node
 * that is stored (a row-major buffer) or an input whose last stride is the
 * constant 1. Movement (a transpose, an expand) and a constant are not. */
static int unit_stride_rows(const ir_node *n, const lower_stored *store) {
  if (n->op == IR_INPUT) {   /* a matmul's operand: rank >= 2 */
    const sym_expr *s = n->strides[n->rank - 1];
    return s->kind == SYM_CONST && s->value == 1;
  }
  return store[n->id].why || materialised(n) || (computes(n) && ir_op_info_of(n->op)->kind != IR_KIND_MOVE);
}

/* Matmul m in rows is one row per batch (a matrix-vector product: decode
 * attention's scores) whose right operand is a transpose of a row-major
 * matrix, b[k, j] = B[j, k]: b is then read in place, each output column a
 * dot product of a row of B in order of k (lower_matmul.c's columns form).
 * Packing would copy all K*N elements of b for the one row that reads
 * them; with more rows a packed copy pays for itself. */
static int columns_form(const lower_program *p, const lower_stored *store, const ir_node *m) {
  if (!store || !lower_plan_matmul_rows(p, m)) return 0;
  const sym_expr *rows = m->shape[m->rank - 2];
  const ir_node *b = m->src[1];
  int r = b->rank;
  if (rows->kind != SYM_CONST || rows->value != 1 || b->op != IR_PERMUTE) return 0;
  for (int k = 0; k < r - 2; k++)
    if (b->perm[k] != k) return 0;
  return b->perm[r - 2] == r - 1 && b->perm[r - 1] == r - 2 && unit_stride_rows(b->src[0], store);
}

/* The right operand of a matmul in rows that is not read with unit stride:
 * stored contiguous once (K*N elements) rather than read strided M times. */
static int packed_operand(const lower_program *p, const unsigned char *used, const lower_stored *store,
                          const ir_node *n) {
  if (!store) return 0;
  for (int id = n->id + 1; id < ir_graph_node_count(p->graph); id++) {
    const ir_node *m = ir_graph_node(p->graph, id);
    if (used[id] && lower_plan_matmul_rows(p, m) && m->src[1] == n)
      return !unit_stride_rows(n, store) && !columns_form(p, store, m);
  }
  return 0;
}

static lower_buffer *add_buffer(lower_program *p, lower_role role, const ir_node *n, const char *name) {
  lower_buffer *b = &p->buffers[p->n_buffers++];
  b->role = role;
  b->node = n;
  b->reason = role == LOWER_OUTPUT ? LOWER_WHY_OUTPUT : LOWER_WHY_INPUT;
  snprintf(b->name, sizeof b->name, "%s", name);
  return b;
}

/* Why a used node that is no output is a temporary (LOWER_WHY_INPUT: it is
 * not one), with the fusion pass's numbers. */
static lower_stored stored_why(const lower_program *p, const unsigned char *used, const lower_stored *store,
                               const ir_node *n) {
  if (materialised(n)) return (lower_stored){LOWER_WHY_REDUCE, 0, 0};
  if (operand_of_matmul(p, used, n)) return (lower_stored){LOWER_WHY_MATMUL_OPERAND, 0, 0};
  if (store && store[n->id].why) return store[n->id];
  if (packed_operand(p, used, store, n)) return (lower_stored){LOWER_WHY_PACKED, 0, 0};
  return (lower_stored){LOWER_WHY_INPUT, 0, 0};
}

static int plan_buffers(lower_program *p, const ir_node *const *outputs, const unsigned char *used,
                        const lower_stored *store, uopc_error *err) {
  const ir_graph *g = p->graph;
  int nodes = ir_graph_node_count(g), inputs = ir_graph_input_count(g);
  p->buffers = calloc((size_t)(p->n_outputs + inputs + nodes), sizeof *p->buffers);
  p->kernel_buffer = calloc((size_t)(p->n_outputs + nodes), sizeof *p->kernel_buffer);
  if (!p->buffers || !p->kernel_buffer) return UOPC_FAIL(err, UOPC_E_NOMEM, "lower: out of memory");
  char name[SYM_NAME_MAX];
  for (int k = 0; k < p->n_outputs; k++) {
    if (p->n_outputs == 1) snprintf(name, sizeof name, "out");   /* one output reads as in lab 23.1 */
    else snprintf(name, sizeof name, "out%d", k);
    add_buffer(p, LOWER_OUTPUT, outputs[k], name);
  }
  for (int k = 0; k < inputs; k++) add_buffer(p, LOWER_INPUT, ir_graph_input(g, k), ir_graph_input(g, k)->name);
  for (int id = 0; id < nodes; id++) {       /* ids are a topological order */
    const ir_node *n = ir_graph_node(g, id);
    if (!used[id] || buffer_of(p, n) >= 0) continue;
    lower_stored why = stored_why(p, used, store, n);
    if (why.why == LOWER_WHY_INPUT) continue;
    snprintf(name, sizeof name, "tmp%d", p->n_temps++);
    lower_buffer *b = add_buffer(p, LOWER_TEMP, n, name);
    b->reason = why.why;
    b->ops = why.ops;
    b->reads = why.reads;
  }
  p->n_inputs = inputs;
  for (int b = 0; b < p->n_buffers; b++)
    p->buffers[b].columns = p->buffers[b].role != LOWER_INPUT && columns_form(p, store, p->buffers[b].node);
  /* Kernels: every temporary and output, by node id, so each reads only what
   * an earlier kernel wrote. */
  for (int id = 0; id < nodes; id++)
    for (int b = 0; b < p->n_buffers; b++)
      if (p->buffers[b].role != LOWER_INPUT && p->buffers[b].node->id == id)
        p->kernel_buffer[p->n_kernels++] = b;
  return UOPC_OK;
}

typedef struct dim_set {
  lower_program *p;
  int cap, overflow;
} dim_set;

/* A graph's expressions live in its arena, where a name is one dim with one
 * declaration (sym_expr_dim refuses another), so one parameter per name
 * carries one dim and the binder checks it against the bounds the proofs
 * used. */
static void add_dim(const sym_dim *d, void *ctx) {
  dim_set *s = ctx;
  for (int k = 0; k < s->p->n_dims; k++)
    if (sym_dim_same(&s->p->dims[k], d)) return;
  if (s->p->n_dims == s->cap) { s->overflow = 1; return; }
  s->p->dims[s->p->n_dims++] = *d;
}

static void node_dims(const ir_node *n, dim_set *s) {
  for (int k = 0; k < n->rank; k++) sym_expr_each_dim(n->shape[k], add_dim, s);
  if (n->op == IR_INPUT) {
    for (int k = 0; k < n->rank; k++) sym_expr_each_dim(n->strides[k], add_dim, s);
    sym_expr_each_dim(n->offset, add_dim, s);
  }
  if (n->start) sym_expr_each_dim(n->start, add_dim, s);
  if (n->step) sym_expr_each_dim(n->step, add_dim, s);
  if (n->index) sym_expr_each_dim(n->index, add_dim, s);
}

/* Names the generated text declares or uses itself (chapter 23.1, "Reading
 * the generated code"): a parameter named so would not compile, or would
 * shadow one of them (a dim 'g' read inside CUDA's loop over g). */
static const char *const GENERATED[] = {
  "scratch", "acc", "acc0", "LANES", "exp_f32", "tanh_f32", "total", "g", "rest", "floordiv_i64", "mod_i64",
  "min_i64", "max_i64",
  "int32_t", "int64_t", "uint8_t", "uint32_t", "uint64_t", "INT32_MIN", "INT64_MIN", "INT64_C",
  "blockIdx", "blockDim", "gridDim", "threadIdx",
  /* C11 keywords, then C++ keywords that can appear in CUDA C++ */
  "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum",
  "extern", "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return",
  "short", "signed", "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void",
  "volatile", "while", "and", "bool", "catch", "class", "delete", "explicit", "false", "friend",
  "mutable", "namespace", "new", "not", "nullptr", "operator", "or", "private", "protected", "public",
  "template", "this", "throw", "true", "try", "typename", "using", "virtual", "xor",
};

/* 1 when name is "<prefix><digits>". */
static int numbered(const char *name, const char *prefix) {
  size_t len = strlen(prefix);
  if (strncmp(name, prefix, len) != 0 || !name[len]) return 0;
  for (const char *p = name + len; *p; p++)
    if (*p < '0' || *p > '9') return 0;
  return 1;
}

static int generated_name(const char *name) {
  static const char *const numbered_prefixes[] = {"out", "tmp", "t", "i", "r", "row"};
  for (size_t k = 0; k < sizeof numbered_prefixes / sizeof *numbered_prefixes; k++)
    if (numbered(name, numbered_prefixes[k])) return 1;
  for (size_t k = 0; k < sizeof GENERATED / sizeof *GENERATED; k++)
    if (strcmp(name, GENERATED[k]) == 0) return 1;
  for (int op = 0; op < IR_OP_COUNT; op++) {      /* expf, exp, fabs, ... */
    const char *fn = ir_op_info_of((ir_op)op)->c;
    size_t len = fn && fn[0] >= 'a' && fn[0] <= 'z' ? strlen(fn) : 0;
    if (len && strncmp(name, fn, len) == 0 && (!name[len] || (name[len] == 'f' && !name[len + 1]))) return 1;
  }
  return name[0] == '_' && (name[1] == '_' || (name[1] >= 'A' && name[1] <= 'Z'));   /* reserved in C */
}

static int check_name(const char *what, const char *name, uopc_error *err) {
  if (!generated_name(name)) return UOPC_OK;
  return UOPC_FAIL(err, UOPC_E_INVALID, "lower: %s '%s' has a name the generated code uses; rename it", what, name);
}

/* Dims in order of first appearance: outputs, inputs, then the rest by id. */
static int plan_dims(lower_program *p, const unsigned char *used, uopc_error *err) {
  int nodes = ir_graph_node_count(p->graph);
  dim_set s = {.p = p, .cap = UOPC_SIGNATURE_MAX};
  if (!(p->dims = calloc((size_t)s.cap, sizeof *p->dims)))
    return UOPC_FAIL(err, UOPC_E_NOMEM, "lower: out of memory");
  for (int b = 0; b < p->n_buffers; b++)
    if (p->buffers[b].role != LOWER_TEMP) node_dims(p->buffers[b].node, &s);
  for (int id = 0; id < nodes; id++)
    if (used[id]) node_dims(ir_graph_node(p->graph, id), &s);
  if (s.overflow)
    return UOPC_FAIL(err, UOPC_E_LIMIT, "lower: '%s' uses more than %d dims", p->entry, s.cap);
  for (int b = p->n_outputs; b < p->n_outputs + p->n_inputs; b++)
    if (check_name("input", p->buffers[b].name, err)) return err->code;
  for (int k = 0; k < p->n_dims; k++)
    if (check_name("dim", p->dims[k].name, err)) return err->code;
  for (int k = 0; k < p->n_dims; k++)
    for (int b = 0; b < p->n_buffers; b++)
      if (strcmp(p->dims[k].name, p->buffers[b].name) == 0)
        return UOPC_FAIL(err, UOPC_E_INVALID, "lower: dim '%s' has the name of a buffer", p->dims[k].name);
  return UOPC_OK;
}

static const sym_expr *numel(sym_arena *a, const ir_node *n) {
  const sym_expr *e = sym_expr_const(a, 1);
  for (int k = 0; k < n->rank; k++) e = sym_expr_mul(a, e, n->shape[k]);
  return e;
}

/* Temporaries are packed in one scratch block, each at a 64-byte boundary. */
static int plan_scratch(lower_program *p, uopc_error *err) {
  sym_arena *a = ir_graph_arena((ir_graph *)p->graph);
  const sym_expr *at = sym_expr_const(a, 0), *align = sym_expr_const(a, 64);
  for (int b = 0; b < p->n_buffers; b++) {
    lower_buffer *buf = &p->buffers[b];
    if (buf->role != LOWER_TEMP) continue;
    buf->scratch_offset = at;
    const sym_expr *bytes = sym_expr_mul(a, numel(a, buf->node),
                                         sym_expr_const(a, (int64_t)uopc_dtype_size(buf->node->dtype)));
    const sym_expr *end = sym_expr_add(a, at, bytes);
    at = sym_expr_mul(a, sym_expr_floordiv(a, sym_expr_add(a, end, sym_expr_const(a, 63)), align), align);
    int rc = sym_expr_simplify(a, at, &at, err);
    if (!rc) rc = sym_expr_simplify(a, buf->scratch_offset, &buf->scratch_offset, err);
    if (rc) return rc;
  }
  p->scratch_bytes = p->n_temps ? at : NULL;
  return UOPC_OK;
}

/* Every buffer's element count decides the width first (sym_index_width);
 * the addresses of strided views widen it further as they are written. */
static int plan_index(lower_program *p, uopc_error *err) {
  sym_index_init(&p->index);
  for (int b = 0; b < p->n_buffers; b++) {
    const ir_node *n = p->buffers[b].node;
    int rc = sym_index_width(&p->index, p->buffers[b].name, n->shape, n->rank, err);
    if (rc) return rc;
  }
  return UOPC_OK;
}

int lower_plan_signature(lower_program *p, uopc_error *err) {
  int n = p->n_buffers + (p->n_temps ? 1 - p->n_temps : 0) + p->n_dims;
  if (n >= UOPC_SIGNATURE_MAX)
    return UOPC_FAIL(err, UOPC_E_LIMIT, "lower: '%s' needs %d parameters, at most %d", p->entry, n,
                     UOPC_SIGNATURE_MAX - 1);
  int at = 0;
  for (int b = 0; b < p->n_outputs + p->n_inputs; b++) p->signature[at++] = 'p';
  if (p->n_temps) p->signature[at++] = 'p';
  for (int d = 0; d < p->n_dims; d++) p->signature[at++] = p->index.bits == 32 ? 'i' : 'l';
  p->signature[at] = '\0';
  return UOPC_OK;
}

int lower_plan_check_outputs(const ir_graph *g, const ir_node *const *outputs, int n, const char *entry,
                         uopc_error *err) {
  if (!g || !outputs || n < 1) return UOPC_FAIL(err, UOPC_E_INVALID, "lower: no outputs");
  if (ir_graph_error(g)->code != UOPC_OK)
    return UOPC_FAIL(err, ir_graph_error(g)->code, "lower: the graph has an error: %s",
                     ir_graph_error(g)->message);
  for (int k = 0; k < n; k++)
    if (!outputs[k] || ir_graph_node(g, outputs[k]->id) != outputs[k])
      return UOPC_FAIL(err, UOPC_E_INVALID, "lower: output %d is not a node of the graph", k);
  size_t len = entry ? strlen(entry) : 0;
  int ok = len > 0 && len <= LOWER_ENTRY_MAX && (entry[0] == '_' || (entry[0] | 32) >= 'a');
  for (size_t i = 0; ok && i < len; i++)
    ok = entry[i] == '_' || (entry[i] >= '0' && entry[i] <= '9') || ((entry[i] | 32) >= 'a' && (entry[i] | 32) <= 'z');
  if (!ok) return UOPC_FAIL(err, UOPC_E_INVALID, "lower: entry '%s' is not a C identifier of at most %d"
                            " characters", entry ? entry : "(null)", LOWER_ENTRY_MAX);
  return UOPC_OK;
}

static int plan_nonempty(lower_program *p, const unsigned char *used, uopc_error *err) {
  int nodes = ir_graph_node_count(p->graph);
  if (!(p->nonempty = calloc((size_t)nodes * UOPC_MAX_RANK + 1, sizeof *p->nonempty)))
    return UOPC_FAIL(err, UOPC_E_NOMEM, "lower: out of memory");
  for (int id = 0; id < nodes; id++) {
    const ir_node *n = ir_graph_node(p->graph, id);
    if (!used[id] || n->op != IR_MAX) continue;
    for (int k = 0; k < n->src[0]->rank; k++)
      if (n->axes >> k & 1u) p->nonempty[p->n_nonempty++] = (lower_nonempty){n->src[0]->shape[k], n};
  }
  return UOPC_OK;
}

/* ---- The pass. */

int lower_plan(lower_program *p, const ir_node *const *outputs, uopc_error *err) {
  unsigned char *used = calloc((size_t)ir_graph_node_count(p->graph) + 1, 1);
  if (!used) return UOPC_FAIL(err, UOPC_E_NOMEM, "lower: out of memory");
  /* LOWER_FUSE: the rule's and the chain cut's extra temporaries. */
  lower_stored *store = p->flags & LOWER_FUSE ? calloc((size_t)ir_graph_node_count(p->graph) + 1, sizeof *store)
                                              : NULL;
  int rc = (p->flags & LOWER_FUSE) && !store ? UOPC_FAIL(err, UOPC_E_NOMEM, "lower: out of memory") : UOPC_OK;
  if (!rc) lower_fuse_marks(p->graph, outputs, p->n_outputs, used, store);
  if (!rc && store) rc = lower_fuse_decide(p, used, store, err);
  if (!rc) rc = plan_buffers(p, outputs, used, store, err);
  if (!rc) rc = plan_dims(p, used, err);
  if (!rc) rc = p->flags & LOWER_FUSE ? lower_share_scratch(p, err) : plan_scratch(p, err);
  if (!rc) rc = plan_index(p, err);
  if (!rc) rc = plan_nonempty(p, used, err);
  free(store);
  free(used);
  return rc;
}
