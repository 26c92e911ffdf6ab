/* kernel.c: building the operation graph (given code; the compiler core).
 * Builders check dtypes and shapes as nodes are added, so the code generator
 * can assume a well-formed graph. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include "kernel.h"

void kernel_graph_init(kernel_graph *g, sym_arena *arena) {
  memset(g, 0, sizeof *g);
  g->arena = arena;
}

const char *kernel_op_name(kernel_op op) {
  static const char *const names[] = {
    [KERNEL_INPUT] = "input", [KERNEL_SCALAR] = "scalar", [KERNEL_ADD] = "add",
    [KERNEL_SUB] = "sub", [KERNEL_MUL] = "mul", [KERNEL_DIV] = "div",
    [KERNEL_MAXIMUM] = "maximum", [KERNEL_NEG] = "neg", [KERNEL_EXP] = "exp",
    [KERNEL_SUM] = "sum",
  };
  return op <= KERNEL_SUM ? names[op] : "?";
}

static int owned(const kernel_graph *g, const kernel_node *n) {
  return n && n >= g->nodes && n < g->nodes + g->count;
}

static int append(kernel_graph *g, kernel_node **out, uopc_error *err) {
  if (g->count == KERNEL_MAX_NODES)
    return UOPC_FAIL(err, UOPC_E_LIMIT, "a kernel graph holds at most %d nodes", KERNEL_MAX_NODES);
  kernel_node *n = &g->nodes[g->count];
  memset(n, 0, sizeof *n);
  n->id = g->count++;
  n->dtype = UOPC_F32;
  *out = n;
  return UOPC_OK;
}

static int valid_name(const char *s) {
  if (!s || !(isalpha((unsigned char)*s) || *s == '_') || strlen(s) >= SYM_NAME_MAX) return 0;
  for (; *s; s++)
    if (!isalnum((unsigned char)*s) && *s != '_') return 0;
  return 1;
}

int kernel_input(kernel_graph *g, const char *name, uopc_dtype dt, int rank,
                 const sym_expr *const *shape, const kernel_node **out, uopc_error *err) {
  if (dt != UOPC_F32)
    return UOPC_FAIL(err, UOPC_E_DTYPE, "input '%s' is %s; this lab lowers f32 only",
                     name ? name : "?", uopc_dtype_name(dt));
  if (!valid_name(name) || strcmp(name, "out") == 0 || rank < 1 || rank > KERNEL_MAX_RANK)
    return UOPC_FAIL(err, UOPC_E_INVALID, "input '%s' of rank %d", name ? name : "(null)", rank);
  if (g->n_inputs == KERNEL_MAX_INPUTS)
    return UOPC_FAIL(err, UOPC_E_LIMIT, "a kernel takes at most %d inputs", KERNEL_MAX_INPUTS);
  kernel_node *n = NULL;
  int rc = append(g, &n, err);
  for (int k = 0; k < rank && !rc; k++) rc = sym_expr_simplify(g->arena, shape[k], &n->shape[k], err);
  if (rc) {
    if (n) g->count--;              /* the node was the last one appended */
    return rc;
  }
  n->op = KERNEL_INPUT;
  n->rank = rank;
  strcpy(n->name, name);
  g->inputs[g->n_inputs++] = n;
  *out = n;
  return UOPC_OK;
}

int kernel_scalar(kernel_graph *g, float value, const kernel_node **out, uopc_error *err) {
  kernel_node *n = NULL;
  int rc = append(g, &n, err);
  if (rc) return rc;
  n->op = KERNEL_SCALAR;
  n->scalar = value;
  *out = n;
  return UOPC_OK;
}

static void shape_text(const kernel_node *n, char *buf, size_t size) {
  size_t used = (size_t)snprintf(buf, size, "(");
  for (int k = 0; k < n->rank && used < size; k++) {
    if (k) used += (size_t)snprintf(buf + used, size - used, ", ");
    if (used < size && sym_expr_format(n->shape[k], buf + used, size - used, NULL) == UOPC_OK)
      used += strlen(buf + used);
  }
  if (used < size) snprintf(buf + used, size - used, ")");
}

int kernel_binary(kernel_graph *g, kernel_op op, const kernel_node *x,
                  const kernel_node *y, const kernel_node **out, uopc_error *err) {
  if (op < KERNEL_ADD || op > KERNEL_MAXIMUM || !owned(g, x) || !owned(g, y))
    return UOPC_FAIL(err, UOPC_E_INVALID, "binary %s: bad operation or operand", kernel_op_name(op));
  int same = x->rank == y->rank;          /* shapes are simplified: == is equality */
  for (int k = 0; same && k < x->rank; k++) same = x->shape[k] == y->shape[k];
  if (!same && x->rank && y->rank) {
    char xs[128], ys[128];
    shape_text(x, xs, sizeof xs);
    shape_text(y, ys, sizeof ys);
    return UOPC_FAIL(err, UOPC_E_INVALID, "%s: shapes %s and %s differ", kernel_op_name(op), xs, ys);
  }
  kernel_node *n = NULL;
  int rc = append(g, &n, err);
  if (rc) return rc;
  const kernel_node *shaped = x->rank ? x : y;
  n->op = op;
  n->rank = shaped->rank;
  memcpy(n->shape, shaped->shape, sizeof n->shape);
  n->src[0] = x;
  n->src[1] = y;
  *out = n;
  return UOPC_OK;
}

int kernel_unary(kernel_graph *g, kernel_op op, const kernel_node *x,
                 const kernel_node **out, uopc_error *err) {
  if ((op != KERNEL_NEG && op != KERNEL_EXP) || !owned(g, x))
    return UOPC_FAIL(err, UOPC_E_INVALID, "unary %s: bad operation or operand", kernel_op_name(op));
  kernel_node *n = NULL;
  int rc = append(g, &n, err);
  if (rc) return rc;
  n->op = op;
  n->rank = x->rank;
  memcpy(n->shape, x->shape, sizeof n->shape);
  n->src[0] = x;
  *out = n;
  return UOPC_OK;
}

int kernel_sum(kernel_graph *g, const kernel_node *x, const kernel_node **out,
               uopc_error *err) {
  if (!owned(g, x) || x->rank < 1)
    return UOPC_FAIL(err, UOPC_E_INVALID, "sum: the operand must be a tensor of rank 1 or 2");
  kernel_node *n = NULL;
  int rc = append(g, &n, err);
  if (rc) return rc;
  n->op = KERNEL_SUM;
  n->rank = x->rank == 1 ? 1 : x->rank - 1;
  n->shape[0] = x->rank == 1 ? sym_expr_const(g->arena, 1) : x->shape[0];
  if (!n->shape[0]) { g->count--; return UOPC_FAIL(err, UOPC_E_NOMEM, "sum: out of memory"); }
  n->src[0] = x;
  *out = n;
  return UOPC_OK;
}

/* ---- Into the compiler core's IR. */

static const ir_node *to_ir(ir_graph *g, const kernel_node *n, const ir_node **map) {
  static const ir_op binary[] = {[KERNEL_ADD] = IR_ADD, [KERNEL_SUB] = IR_SUB, [KERNEL_MUL] = IR_MUL,
                                 [KERNEL_DIV] = IR_DIV, [KERNEL_MAXIMUM] = IR_MAXIMUM};
  if (map[n->id]) return map[n->id];
  const ir_node *a = n->src[0] ? to_ir(g, n->src[0], map) : NULL;
  const ir_node *b = n->src[1] ? to_ir(g, n->src[1], map) : NULL;
  switch (n->op) {
  case KERNEL_SCALAR: map[n->id] = ir_const(g, n->scalar, UOPC_F32); break;
  case KERNEL_NEG: map[n->id] = ir_unary(g, IR_NEG, a); break;
  case KERNEL_EXP: map[n->id] = ir_unary(g, IR_EXP, a); break;
  case KERNEL_SUM: map[n->id] = a ? ir_reduce(g, IR_SUM, a, 1u << (a->rank - 1), 0) : NULL; break;
  case KERNEL_INPUT: break;            /* declared first, in parameter order */
  default: map[n->id] = ir_binary(g, binary[n->op], a, b); break;
  }
  return map[n->id];
}

/* A stride dim "<input>_s<k>" in [-2^31, 2^31]: the bounds only feed the
 * proofs that addresses fit int64 (with extents below 2^31). */
static const sym_expr *stride_dim(sym_arena *a, const char *input, int k) {
  sym_dim d;
  memset(&d, 0, sizeof d);
  snprintf(d.name, sizeof d.name, "%.24s_s%c", input, (char)('0' + k % 10));   /* k < KERNEL_MAX_RANK */
  d.lo = -((int64_t)1 << 31);
  d.hi = (int64_t)1 << 31;
  d.multiple_of = 1;
  return sym_expr_dim(a, &d);
}

int kernel_graph_to_ir(const kernel_graph *g, const kernel_node *out, ir_graph *ig, int strided,
                       const ir_node **result, uopc_error *err) {
  const ir_node *map[KERNEL_MAX_NODES] = {0};
  sym_arena *a = ir_graph_arena(ig);
  for (int i = 0; i < g->n_inputs; i++) {
    const kernel_node *in = g->inputs[i];
    const sym_expr *shape[KERNEL_MAX_RANK], *strides[KERNEL_MAX_RANK];
    for (int k = 0; k < in->rank; k++) {
      shape[k] = sym_expr_copy(a, in->shape[k]);
      strides[k] = stride_dim(a, in->name, k);
    }
    map[in->id] = strided ? ir_input_view(ig, in->name, in->dtype, in->rank, shape, strides, NULL)
                          : ir_input(ig, in->name, in->dtype, in->rank, shape);
  }
  *result = to_ir(ig, out, map);
  const uopc_error *e = ir_graph_error(ig);
  if (e->code) return UOPC_FAIL(err, e->code, "kernel graph to IR: %s", e->message);
  return UOPC_OK;
}
