/* ir.c: building the graph IR (given code; the compiler core).
 * Each builder checks its operands, computes the node's shape by its op's
 * rule and appends the node. Nodes live in chunks that never move, so a node
 * pointer stays valid while the graph grows. Chapter 23.1, "The graph IR". */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ir.h"

#define CHUNK_NODES 64

typedef struct chunk { struct chunk *next; int used; ir_node nodes[CHUNK_NODES]; } chunk;

struct ir_graph {
  sym_arena *arena;
  chunk *chunks;                 /* newest first */
  ir_node **nodes;               /* by id */
  int count, cap;
  const ir_node **inputs;
  int n_inputs, inputs_cap;
  uopc_error error;
};

static const ir_op_info OPS[IR_OP_COUNT] = {
#define IR_ROW(op, name, arity, kind, c) [IR_##op] = {name, arity, kind, c},
  IR_OPS(IR_ROW)
#undef IR_ROW
};

const ir_op_info *ir_op_info_of(ir_op op) { return &OPS[op]; }

/* ---- The graph. */

int ir_graph_new(ir_graph **out, uopc_error *err) {
  ir_graph *g = calloc(1, sizeof *g);
  if (!g) return UOPC_FAIL(err, UOPC_E_NOMEM, "graph: out of memory");
  int rc = sym_arena_new(&g->arena, err);
  if (rc) { free(g); return rc; }
  uopc_error_clear(&g->error);
  *out = g;
  return UOPC_OK;
}

void ir_graph_free(ir_graph *g) {
  if (!g) return;
  for (chunk *c = g->chunks, *next; c; c = next) { next = c->next; free(c); }
  free(g->nodes);
  free(g->inputs);
  sym_arena_free(g->arena);
  free(g);
}

sym_arena *ir_graph_arena(ir_graph *g) { return g->arena; }
const uopc_error *ir_graph_error(const ir_graph *g) {
  if (g->error.code == UOPC_OK && sym_arena_error(g->arena)->code != UOPC_OK)
    return sym_arena_error(g->arena);
  return &g->error;
}
int ir_graph_node_count(const ir_graph *g) { return g->count; }
const ir_node *ir_graph_node(const ir_graph *g, int id) {
  return id >= 0 && id < g->count ? g->nodes[id] : NULL;
}
int ir_graph_input_count(const ir_graph *g) { return g->n_inputs; }
const ir_node *ir_graph_input(const ir_graph *g, int k) {
  return k >= 0 && k < g->n_inputs ? g->inputs[k] : NULL;
}

/* Records the graph's first error; always returns NULL for the builder. */
__attribute__((format(printf, 3, 4)))
static const ir_node *fail(ir_graph *g, int code, const char *fmt, ...) {
  if (g->error.code != UOPC_OK) return NULL;
  va_list ap;
  va_start(ap, fmt);
  char msg[UOPC_ERROR_MESSAGE_MAX];
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  uopc_fail(&g->error, code, "ir", "%s", msg);
  return NULL;
}

static int grow(void **items, int *cap, int need, size_t size) {
  if (need <= *cap) return 1;
  int n = *cap ? 2 * *cap : 16;
  void *p = realloc(*items, (size_t)n * size);
  if (!p) return 0;
  *items = p;
  *cap = n;
  return 1;
}

static ir_node *append(ir_graph *g, ir_op op, uopc_dtype dt, int rank) {
  if (g->error.code != UOPC_OK || sym_arena_error(g->arena)->code != UOPC_OK) return NULL;
  if (!g->chunks || g->chunks->used == CHUNK_NODES) {
    chunk *c = calloc(1, sizeof *c);
    if (!c) return fail(g, UOPC_E_NOMEM, "graph: out of memory at node %d", g->count), NULL;
    c->next = g->chunks;
    g->chunks = c;
  }
  if (!grow((void **)&g->nodes, &g->cap, g->count + 1, sizeof *g->nodes))
    return fail(g, UOPC_E_NOMEM, "graph: out of memory at node %d", g->count), NULL;
  ir_node *n = &g->chunks->nodes[g->chunks->used++];
  n->op = op;
  n->dtype = dt;
  n->rank = rank;
  n->id = g->count;
  g->nodes[g->count++] = n;
  return n;
}

/* ---- Shapes. */

const char *ir_dtype_name(uopc_dtype dt) { return uopc_dtype_name(dt); }

const char *ir_dtype_ctype(uopc_dtype dt) {
  switch (dt) {
  case UOPC_F32: return "float";
  case UOPC_F64: return "double";
  case UOPC_I32: return "int32_t";
  case UOPC_I64: return "int64_t";
  case UOPC_BOOL: return "uint8_t";
  }
  return "?";
}

static void shape_text(int rank, const sym_expr *const *shape, char *buf, size_t size) {
  size_t used = (size_t)snprintf(buf, size, "(");
  for (int k = 0; k < rank && used < size; k++) {
    if (k) used += (size_t)snprintf(buf + used, size - used, ", ");
    if (used < size && sym_expr_format(shape[k], buf + used, size - used, NULL) == UOPC_OK)
      used = strlen(buf);
  }
  if (used < size) snprintf(buf + used, size - used, ")");
}

void ir_shape_format(const ir_node *n, char *buf, size_t size) {
  shape_text(n->rank, n->shape, buf, size);
}

/* e copied into g's arena (a no-op for its own nodes), where a dim name has
 * one declaration: another with other bounds is refused here, so the lowering
 * never sees one parameter with two bounds. Then simplified. */
static const sym_expr *simplified(ir_graph *g, const sym_expr *e) {
  const sym_expr *s = NULL;
  uopc_error err;
  if (!e) return NULL;
  if (!(e = sym_expr_copy(g->arena, e))) return NULL;   /* the arena keeps the error */
  if (sym_expr_simplify(g->arena, e, &s, &err) != UOPC_OK) {
    fail(g, err.code, "%s", err.message);
    return NULL;
  }
  return s;
}

static int is_const(const sym_expr *e, int64_t v) { return e->kind == SYM_CONST && e->value == v; }

/* 1 when e >= lo holds for every binding within the bounds; 0 when not
 * proved, or after recording the interval's own error (a lab 23.1 stub says
 * it is not implemented, and that is what the caller must hear). */
static int proved_at_least(ir_graph *g, const sym_expr *e, int64_t lo) {
  sym_interval iv;
  uopc_error err;
  if (sym_expr_interval(e, &iv, &err) == UOPC_OK) return iv.lo >= lo;
  fail(g, err.code, "%s", err.message);
  return 0;
}

static int valid_name(const char *s) {
  if (!s || !(isalpha((unsigned char)*s) || *s == '_') || strlen(s) >= SYM_NAME_MAX) return 0;
  for (; *s; s++)
    if (!isalnum((unsigned char)*s) && *s != '_') return 0;
  return 1;
}

static int valid_dtype(uopc_dtype dt) { return (unsigned)dt <= UOPC_BOOL; }

/* ---- Leaves. */

static const ir_node *input_common(ir_graph *g, const char *name, uopc_dtype dt, int rank,
                                   const sym_expr *const *shape) {
  if (!valid_name(name))
    return fail(g, UOPC_E_INVALID, "input name '%s' is not a C identifier of at most %d characters",
                name ? name : "(null)", SYM_NAME_MAX - 1);
  for (int i = 0; i < g->n_inputs; i++)
    if (strcmp(g->inputs[i]->name, name) == 0)
      return fail(g, UOPC_E_INVALID, "input '%s' is declared twice", name);
  if (!valid_dtype(dt)) return fail(g, UOPC_E_DTYPE, "input '%s': dtype %d is not a uopc dtype", name, dt);
  if (rank < 0 || rank > UOPC_MAX_RANK)
    return fail(g, UOPC_E_INVALID, "input '%s': rank %d outside [0, %d]", name, rank, UOPC_MAX_RANK);
  if (!grow((void **)&g->inputs, &g->inputs_cap, g->n_inputs + 1, sizeof *g->inputs))
    return fail(g, UOPC_E_NOMEM, "graph: out of memory at input '%s'", name);
  ir_node *n = append(g, IR_INPUT, dt, rank);
  if (!n) return NULL;
  snprintf(n->name, sizeof n->name, "%s", name);
  for (int k = 0; k < rank; k++) {
    if (!(n->shape[k] = simplified(g, shape ? shape[k] : NULL)))
      return shape ? NULL : fail(g, UOPC_E_INVALID, "input '%s': no shape", name);
    if (!proved_at_least(g, n->shape[k], 0))
      return fail(g, UOPC_E_BOUNDS, "input '%s': extent %d may be negative", name, k);
  }
  n->input = g->n_inputs;
  g->inputs[g->n_inputs++] = n;
  return n;
}

const ir_node *ir_input(ir_graph *g, const char *name, uopc_dtype dt, int rank,
                        const sym_expr *const *shape) {
  ir_node *n = (ir_node *)input_common(g, name, dt, rank, shape);
  if (!n) return NULL;
  const sym_expr *stride = sym_expr_const(g->arena, 1);
  for (int k = rank - 1; k >= 0; k--) {   /* packed row-major */
    n->strides[k] = simplified(g, stride);
    stride = sym_expr_mul(g->arena, stride, n->shape[k]);
  }
  n->offset = sym_expr_const(g->arena, 0);
  n->contiguous = 1;
  return ir_graph_error(g)->code ? NULL : n;
}

const ir_node *ir_input_view(ir_graph *g, const char *name, uopc_dtype dt, int rank,
                             const sym_expr *const *shape, const sym_expr *const *strides,
                             const sym_expr *offset) {
  if (rank > 0 && !strides) return fail(g, UOPC_E_INVALID, "input '%s': no strides", name ? name : "?");
  ir_node *n = (ir_node *)input_common(g, name, dt, rank, shape);
  if (!n) return NULL;
  for (int k = 0; k < rank; k++)
    if (!(n->strides[k] = simplified(g, strides[k]))) return NULL;
  n->offset = offset ? simplified(g, offset) : sym_expr_const(g->arena, 0);
  return ir_graph_error(g)->code ? NULL : n;
}

const ir_node *ir_const(ir_graph *g, double value, uopc_dtype dt) {
  if (!valid_dtype(dt)) return fail(g, UOPC_E_DTYPE, "const: dtype %d is not a uopc dtype", dt);
  /* The lowering converts an integer constant with a C cast, undefined for
   * NaN and out-of-range values (NumPy's np.int32(1e10) raises too). */
  if ((dt == UOPC_I32 && !(value > -2147483649.0 && value < 2147483648.0)) ||
      (dt == UOPC_I64 && !(value >= -9223372036854775808.0 && value < 9223372036854775808.0)))
    return fail(g, UOPC_E_BOUNDS, "const: %.17g does not fit %s", value, ir_dtype_name(dt));
  ir_node *n = append(g, IR_CONST, dt, 0);
  if (n) n->value = value;
  return n;
}

const ir_node *ir_size(ir_graph *g, const sym_expr *e, uopc_dtype dt) {
  if (!valid_dtype(dt) || dt == UOPC_BOOL) return fail(g, UOPC_E_DTYPE, "size: dtype %d is not a number dtype", dt);
  if (!e) return fail(g, UOPC_E_INVALID, "size: NULL expression");
  const sym_expr *v = simplified(g, e);
  ir_node *n = v ? append(g, IR_SIZE, dt, 0) : NULL;
  if (n) n->index = v;
  return n;
}

/* ---- Elementwise. */

/* out = the NumPy broadcast of x's and y's shapes, or an error naming both. */
static int broadcast(ir_graph *g, const char *op, const ir_node *x, const ir_node *y, int *rank,
                     const sym_expr **out) {
  int r = x->rank > y->rank ? x->rank : y->rank;
  for (int k = 0; k < r; k++) {
    int kx = k - (r - x->rank), ky = k - (r - y->rank);
    const sym_expr *a = kx >= 0 ? x->shape[kx] : NULL, *b = ky >= 0 ? y->shape[ky] : NULL;
    if (!a || (b && is_const(a, 1))) out[k] = b;
    else if (!b || is_const(b, 1) || a == b) out[k] = a;
    else {
      char xs[256], ys[256];
      ir_shape_format(x, xs, sizeof xs);
      ir_shape_format(y, ys, sizeof ys);
      fail(g, UOPC_E_INVALID, "%s: shapes %s and %s cannot broadcast (axis %d: equal sizes are"
           " never assumed equal; cast to one dim or guard)", op, xs, ys, k);
      return 0;
    }
  }
  *rank = r;
  return 1;
}

static const ir_node *elementwise(ir_graph *g, ir_op op, uopc_dtype dt, const ir_node *const *src,
                                  int arity) {
  int rank = 0;
  const sym_expr *shape[UOPC_MAX_RANK] = {0};
  if (arity == 1) {
    rank = src[0]->rank;
    memcpy(shape, src[0]->shape, sizeof shape);
  } else {    /* broadcast all operands pairwise into one shape */
    ir_node run = {.rank = src[0]->rank};
    memcpy(run.shape, src[0]->shape, sizeof run.shape);
    for (int i = 1; i < arity; i++) {
      if (!broadcast(g, OPS[op].name, &run, src[i], &rank, shape)) return NULL;
      run.rank = rank;
      memcpy(run.shape, shape, sizeof shape);
    }
  }
  ir_node *n = append(g, op, dt, rank);
  if (!n) return NULL;
  memcpy(n->shape, shape, sizeof shape);
  for (int i = 0; i < arity; i++) n->src[i] = src[i];
  return n;
}

static int check_arity(ir_graph *g, ir_op op, int arity) {
  if (op >= IR_OP_COUNT || OPS[op].arity != arity ||
      (OPS[op].kind == IR_KIND_MOVE || OPS[op].kind == IR_KIND_REDUCE ||
       OPS[op].kind == IR_KIND_MATMUL || OPS[op].kind == IR_KIND_CAST || OPS[op].kind == IR_KIND_WHERE)) {
    fail(g, UOPC_E_INVALID, "op %d is not an elementwise op of arity %d", op, arity);
    return 0;
  }
  return 1;
}

const ir_node *ir_unary(ir_graph *g, ir_op op, const ir_node *x) {
  if (!x || !check_arity(g, op, 1)) return NULL;
  if (OPS[op].kind == IR_KIND_MATH && !uopc_dtype_is_float(x->dtype))
    return fail(g, UOPC_E_DTYPE, "%s of %s: needs f32 or f64 (cast first)", OPS[op].name,
                ir_dtype_name(x->dtype));
  if (x->dtype == UOPC_BOOL)
    return fail(g, UOPC_E_DTYPE, "%s of bool: cast to a number first", OPS[op].name);
  return elementwise(g, op, x->dtype, &x, 1);
}

const ir_node *ir_binary(ir_graph *g, ir_op op, const ir_node *x, const ir_node *y) {
  if (!x || !y || !check_arity(g, op, 2)) return NULL;
  if (x->dtype != y->dtype)
    return fail(g, UOPC_E_DTYPE, "%s of %s and %s: dtypes differ (cast one first)", OPS[op].name,
                ir_dtype_name(x->dtype), ir_dtype_name(y->dtype));
  int float_only = op == IR_DIV || op == IR_POW;
  if ((float_only && !uopc_dtype_is_float(x->dtype)) ||
      (x->dtype == UOPC_BOOL && OPS[op].kind != IR_KIND_COMPARE))
    return fail(g, UOPC_E_DTYPE, "%s of %s: needs %s", OPS[op].name, ir_dtype_name(x->dtype),
                float_only ? "f32 or f64 (cast first)" : "a number (cast bool first)");
  const ir_node *src[2] = {x, y};
  return elementwise(g, op, OPS[op].kind == IR_KIND_COMPARE ? UOPC_BOOL : x->dtype, src, 2);
}

const ir_node *ir_where(ir_graph *g, const ir_node *cond, const ir_node *a, const ir_node *b) {
  if (!cond || !a || !b) return NULL;
  if (cond->dtype != UOPC_BOOL)
    return fail(g, UOPC_E_DTYPE, "where: the condition is %s, not bool", ir_dtype_name(cond->dtype));
  if (a->dtype != b->dtype)
    return fail(g, UOPC_E_DTYPE, "where: branches are %s and %s (cast one first)",
                ir_dtype_name(a->dtype), ir_dtype_name(b->dtype));
  const ir_node *src[3] = {cond, a, b};
  return elementwise(g, IR_WHERE, a->dtype, src, 3);
}

const ir_node *ir_cast(ir_graph *g, const ir_node *x, uopc_dtype to) {
  if (!x) return NULL;
  if (!valid_dtype(to)) return fail(g, UOPC_E_DTYPE, "cast: dtype %d is not a uopc dtype", to);
  return elementwise(g, IR_CAST, to, &x, 1);
}

/* ---- Movement. */

static const ir_node *moved(ir_graph *g, ir_op op, const ir_node *x, int rank,
                            const sym_expr *const *shape) {
  ir_node *n = append(g, op, x->dtype, rank);
  if (!n) return NULL;
  for (int k = 0; k < rank; k++)
    if (!(n->shape[k] = simplified(g, shape[k]))) return NULL;
  n->src[0] = x;
  return n;
}

const ir_node *ir_expand(ir_graph *g, const ir_node *x, int rank, const sym_expr *const *shape) {
  if (!x) return NULL;
  if (rank < x->rank || rank > UOPC_MAX_RANK)
    return fail(g, UOPC_E_INVALID, "expand: rank %d to rank %d (at most %d, not fewer axes)", x->rank,
                rank, UOPC_MAX_RANK);
  const sym_expr *to[UOPC_MAX_RANK];
  for (int k = 0; k < rank; k++)
    if (!(to[k] = simplified(g, shape[k]))) return NULL;
  for (int k = 0; k < x->rank; k++) {
    const sym_expr *from = x->shape[k], *want = to[k + rank - x->rank];
    if (from != want && !is_const(from, 1)) {
      char xs[256], ts[256];
      ir_shape_format(x, xs, sizeof xs);
      shape_text(rank, to, ts, sizeof ts);
      return fail(g, UOPC_E_INVALID, "expand: %s cannot broadcast to %s (axis %d)", xs, ts, k);
    }
  }
  return moved(g, IR_EXPAND, x, rank, to);
}

/* Flattens the product e: constant factors multiply into *k, the others are
 * appended to f. 0 when they are more than cap or *k overflows. */
static int factors(const sym_expr *e, int64_t *k, const sym_expr **f, int *n, int cap) {
  if (e->kind == SYM_MUL) return factors(e->a, k, f, n, cap) && factors(e->b, k, f, n, cap);
  if (e->kind == SYM_CONST) return !__builtin_mul_overflow(*k, e->value, k);
  if (*n == cap) return 0;
  f[(*n)++] = e;
  return 1;
}

/* The element count in one form for every order of the same factors: the
 * simplifier keeps a product of non-constants as written, so (n*4)*m and
 * (m*n)*4 would differ. The factors are sorted and multiplied in that order,
 * the constant last; an unusual shape falls back to the plain product. */
static const sym_expr *numel(ir_graph *g, int rank, const sym_expr *const *shape) {
  const sym_expr *f[4 * UOPC_MAX_RANK], *p = sym_expr_const(g->arena, 1);
  int64_t k = 1;
  int n = 0, ok = 1;
  for (int a = 0; a < rank; a++) {
    const sym_expr *e = simplified(g, shape[a]);
    if (!e) return NULL;
    ok = ok && factors(e, &k, f, &n, 4 * UOPC_MAX_RANK);
  }
  if (!ok) {
    for (int a = 0; a < rank; a++) p = sym_expr_mul(g->arena, p, shape[a]);
    return simplified(g, p);
  }
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && sym_expr_compare(f[j - 1], f[j]) > 0; j--) {
      const sym_expr *t = f[j]; f[j] = f[j - 1]; f[j - 1] = t;
    }
  p = n ? f[0] : p;
  for (int i = 1; i < n; i++) p = sym_expr_mul(g->arena, p, f[i]);
  return simplified(g, sym_expr_mul(g->arena, p, sym_expr_const(g->arena, k)));
}

const ir_node *ir_reshape(ir_graph *g, const ir_node *x, int rank, const sym_expr *const *shape) {
  if (!x) return NULL;
  if (rank < 0 || rank > UOPC_MAX_RANK)
    return fail(g, UOPC_E_INVALID, "reshape: rank %d outside [0, %d]", rank, UOPC_MAX_RANK);
  const sym_expr *a = numel(g, x->rank, x->shape), *b = numel(g, rank, shape);
  const sym_expr *diff = a && b ? simplified(g, sym_expr_sub(g->arena, a, b)) : NULL;
  if (!diff) return NULL;
  if (!is_const(diff, 0)) {
    char xs[256], ts[256], at[128] = "?", bt[128] = "?";
    ir_shape_format(x, xs, sizeof xs);
    shape_text(rank, shape, ts, sizeof ts);
    sym_expr_format(a, at, sizeof at, NULL);
    sym_expr_format(b, bt, sizeof bt, NULL);
    return fail(g, UOPC_E_INVALID, "reshape: %s to %s: element counts %s and %s are not provably"
                " equal", xs, ts, at, bt);
  }
  return moved(g, IR_RESHAPE, x, rank, shape);
}

const ir_node *ir_merge_axes(ir_graph *g, const ir_node *x, int n, const int *sizes) {
  if (!x) return NULL;
  int total = 0;
  for (int k = 0; k < n && sizes; k++) total += sizes[k] >= 1 ? sizes[k] : x->rank + 1;
  if (n < 0 || n > UOPC_MAX_RANK || (n && !sizes) || total != x->rank)
    return fail(g, UOPC_E_INVALID, "merge_axes: %d groups of a rank-%d node (each of 1 or more axes, %d in all)", n,
                x->rank, x->rank);
  const sym_expr *shape[UOPC_MAX_RANK];
  for (int k = 0, axis = 0; k < n; k++) {
    shape[k] = sym_expr_const(g->arena, 1);
    for (int j = 0; j < sizes[k]; j++) shape[k] = sym_expr_mul(g->arena, shape[k], x->shape[axis++]);
  }
  /* each extent the product of its group's: the counts are equal by construction, which the
   * simplifier need not see (it keeps 2*(n - 2) linear and (n - 2)*4 a product) */
  return moved(g, IR_RESHAPE, x, n, shape);
}

const ir_node *ir_reshape_inferred(ir_graph *g, const ir_node *x, int rank, const sym_expr *const *shape,
                                   int axis) {
  if (!x) return NULL;
  if (rank < 1 || rank > UOPC_MAX_RANK || axis < 0 || axis >= rank)
    return fail(g, UOPC_E_INVALID, "reshape: rank %d with the inferred axis %d (rank in [1, %d])", rank, axis,
                UOPC_MAX_RANK);
  const sym_expr *to[UOPC_MAX_RANK], *known = sym_expr_const(g->arena, 1);
  for (int k = 0; k < rank; k++)
    if (k != axis) known = sym_expr_mul(g->arena, known, to[k] = shape[k]);
  if (!(known = simplified(g, known))) return NULL;
  if (!proved_at_least(g, known, 1)) {
    char kt[128] = "?";
    sym_expr_format(known, kt, sizeof kt, NULL);
    return fail(g, UOPC_E_INVALID, "reshape: the other extents' product %s may be 0, so -1 cannot be inferred", kt);
  }
  /* known * (numel // known) <= numel: every element the result reads is one of x's */
  to[axis] = sym_expr_floordiv(g->arena, numel(g, x->rank, x->shape), known);
  return moved(g, IR_RESHAPE, x, rank, to);
}

const ir_node *ir_permute(ir_graph *g, const ir_node *x, const int *perm) {
  if (!x) return NULL;
  unsigned seen = 0;
  const sym_expr *shape[UOPC_MAX_RANK];
  for (int k = 0; k < x->rank; k++) {
    if (perm[k] < 0 || perm[k] >= x->rank || (seen >> perm[k] & 1u))
      return fail(g, UOPC_E_INVALID, "permute: perm[%d] = %d is not a fresh axis of a rank-%d node", k,
                  perm[k], x->rank);
    seen |= 1u << perm[k];
    shape[k] = x->shape[perm[k]];
  }
  ir_node *n = (ir_node *)moved(g, IR_PERMUTE, x, x->rank, shape);
  if (n) memcpy(n->perm, perm, (size_t)x->rank * sizeof *perm);
  return n;
}

const ir_node *ir_transpose(ir_graph *g, const ir_node *x, int a, int b) {
  if (!x) return NULL;
  if (a < 0 || b < 0 || a >= x->rank || b >= x->rank)
    return fail(g, UOPC_E_INVALID, "transpose: axes %d and %d of a rank-%d node", a, b, x->rank);
  int perm[UOPC_MAX_RANK];
  for (int k = 0; k < x->rank; k++) perm[k] = k;
  perm[a] = b;
  perm[b] = a;
  return ir_permute(g, x, perm);
}

static int check_axis(ir_graph *g, const char *op, const ir_node *x, int axis) {
  if (axis >= 0 && axis < x->rank) return 1;
  fail(g, UOPC_E_INVALID, "%s: axis %d outside [0, %d) of a rank-%d node", op, axis, x->rank, x->rank);
  return 0;
}

static const ir_node *slice_node(ir_graph *g, const ir_node *x, int axis, const sym_expr *start,
                                 const sym_expr *step, const sym_expr *length) {
  const sym_expr *shape[UOPC_MAX_RANK];
  memcpy(shape, x->shape, sizeof shape);
  shape[axis] = length;
  ir_node *n = (ir_node *)moved(g, IR_SLICE, x, x->rank, shape);
  if (!n) return NULL;
  n->axis = axis;
  n->start = simplified(g, start);
  n->step = simplified(g, step);
  return n->start && n->step ? n : NULL;
}

/* Python's slice.indices for one bound (chapter 23.1, "Slices of symbolic extents"). */
static const sym_expr *py_bound(sym_arena *a, int64_t v, const sym_expr *n, int64_t step, int is_start) {
  const sym_expr *lowest = sym_expr_const(a, step > 0 ? 0 : -1);
  const sym_expr *highest = step > 0 ? n : sym_expr_sub(a, n, sym_expr_const(a, 1));
  if (v == UOPC_SLICE_NONE) {
    if (step > 0) return is_start ? sym_expr_const(a, 0) : n;
    return is_start ? highest : lowest;
  }
  if (v >= 0) return sym_expr_min(a, sym_expr_const(a, v), highest);
  return sym_expr_max(a, lowest, sym_expr_add(a, n, sym_expr_const(a, v)));
}

const ir_node *ir_slice(ir_graph *g, const ir_node *x, int axis, int64_t start, int64_t stop,
                        int64_t step) {
  if (!x || !check_axis(g, "slice", x, axis)) return NULL;
  if (step == 0 || step == INT64_MIN)
    return fail(g, UOPC_E_INVALID, "slice: step %lld (must be nonzero)", (long long)step);
  sym_arena *a = g->arena;
  const sym_expr *n = x->shape[axis];
  const sym_expr *lo = py_bound(a, start, n, step, 1), *hi = py_bound(a, stop, n, step, 0);
  int64_t s = step > 0 ? step : -step;
  const sym_expr *span = step > 0 ? sym_expr_sub(a, hi, lo) : sym_expr_sub(a, lo, hi);
  const sym_expr *length = sym_expr_max(a, sym_expr_const(a, 0),
      sym_expr_floordiv(a, sym_expr_add(a, span, sym_expr_const(a, s - 1)), sym_expr_const(a, s)));
  return slice_node(g, x, axis, lo, sym_expr_const(a, step), simplified(g, length));
}

/* Fails unless lo <= e (and e <= hi when hi is not NULL) is proved. */
static int require_within(ir_graph *g, const char *what, const sym_expr *e, const sym_expr *hi_expr,
                          int64_t hi_slack, const ir_node *x, int axis) {
  const sym_expr *room = hi_expr ? simplified(g, sym_expr_sub(g->arena, hi_expr, e)) : NULL;
  if (proved_at_least(g, e, 0) && (!hi_expr || (room && proved_at_least(g, room, hi_slack)))) return 1;
  char et[128] = "?", nt[128] = "?";
  sym_expr_format(e, et, sizeof et, NULL);
  sym_expr_format(hi_expr ? hi_expr : x->shape[axis], nt, sizeof nt, NULL);
  fail(g, UOPC_E_BOUNDS, "%s %s may fall outside [0, %s%s] of axis %d (not proved from the dims'"
       " bounds)", what, et, nt, hi_slack ? " - 1" : "", axis);
  return 0;
}

const ir_node *ir_slice_sym(ir_graph *g, const ir_node *x, int axis, const sym_expr *start,
                            const sym_expr *stop, int64_t step) {
  if (!x || !check_axis(g, "slice", x, axis)) return NULL;
  if (step < 1) return fail(g, UOPC_E_INVALID, "slice: symbolic bounds need a step >= 1, not %lld",
                            (long long)step);
  sym_arena *a = g->arena;
  start = simplified(g, start ? start : sym_expr_const(a, 0));
  stop = simplified(g, stop ? stop : x->shape[axis]);
  if (!start || !stop) return NULL;
  if (!require_within(g, "slice start", start, stop, 0, x, axis) ||
      !require_within(g, "slice stop", stop, x->shape[axis], 0, x, axis)) return NULL;
  const sym_expr *length = sym_expr_floordiv(a, sym_expr_add(a, sym_expr_sub(a, stop, start),
                                             sym_expr_const(a, step - 1)), sym_expr_const(a, step));
  return slice_node(g, x, axis, start, sym_expr_const(a, step), simplified(g, length));
}

/* Clamps e into [0, n]: a position a slice may start or stop at. */
static const sym_expr *clamp_position(sym_arena *a, const sym_expr *e, const sym_expr *n) {
  return sym_expr_max(a, sym_expr_const(a, 0), sym_expr_min(a, e, n));
}

const ir_node *ir_slice_clamped(ir_graph *g, const ir_node *x, int axis, const sym_expr *start,
                                const sym_expr *stop, int64_t step) {
  if (!x || !check_axis(g, "slice", x, axis)) return NULL;
  if (step < 1) return fail(g, UOPC_E_INVALID, "slice: symbolic bounds need a step >= 1, not %lld",
                            (long long)step);
  sym_arena *a = g->arena;
  const sym_expr *n = x->shape[axis];
  if ((start && !(start = simplified(g, start))) || (stop && !(stop = simplified(g, stop)))) return NULL;
  const sym_expr *lo = start ? clamp_position(a, start, n) : sym_expr_const(a, 0);
  const sym_expr *hi = stop ? clamp_position(a, stop, n) : n;
  const sym_expr *length = sym_expr_max(a, sym_expr_const(a, 0),
      sym_expr_floordiv(a, sym_expr_add(a, sym_expr_sub(a, hi, lo), sym_expr_const(a, step - 1)),
                        sym_expr_const(a, step)));
  return slice_node(g, x, axis, lo, sym_expr_const(a, step), simplified(g, length));
}

static const ir_node *select_node(ir_graph *g, const ir_node *x, int axis, const sym_expr *index) {
  const sym_expr *shape[UOPC_MAX_RANK];
  for (int k = 0, j = 0; k < x->rank; k++)
    if (k != axis) shape[j++] = x->shape[k];
  ir_node *n = (ir_node *)moved(g, IR_SELECT, x, x->rank - 1, shape);
  if (n) { n->axis = axis; n->index = index; }
  return n;
}

const ir_node *ir_select(ir_graph *g, const ir_node *x, int axis, const sym_expr *index) {
  if (!x || !check_axis(g, "select", x, axis)) return NULL;
  index = simplified(g, index);
  if (!index) return NULL;
  if (index->kind == SYM_CONST && index->value < 0)
    index = simplified(g, sym_expr_add(g->arena, x->shape[axis], index));
  if (!index || !require_within(g, "select index", index, x->shape[axis], 1, x, axis)) return NULL;
  return select_node(g, x, axis, index);
}

const ir_node *ir_select_clamped(ir_graph *g, const ir_node *x, int axis, const sym_expr *index) {
  if (!x || !check_axis(g, "select", x, axis)) return NULL;
  sym_arena *a = g->arena;
  const sym_expr *last = sym_expr_sub(a, x->shape[axis], sym_expr_const(a, 1));
  if (!(index = simplified(g, index))) return NULL;
  /* inside [0, n - 1] by construction (for n >= 1), which interval arithmetic cannot see through the
   * min and max, so the node is made here rather than by ir_select's proof */
  index = simplified(g, sym_expr_max(a, sym_expr_const(a, 0), sym_expr_min(a, index, last)));
  return index ? select_node(g, x, axis, index) : NULL;
}

const ir_node *ir_diagonal(ir_graph *g, const ir_node *x, int64_t offset) {
  if (!x) return NULL;
  if (x->rank != 2) return fail(g, UOPC_E_INVALID, "diagonal of a rank-%d node (a matrix only)", x->rank);
  if (offset <= -(INT64_C(1) << 40) || offset >= INT64_C(1) << 40)
    return fail(g, UOPC_E_INVALID, "diagonal: offset %lld is past every extent", (long long)offset);
  sym_arena *a = g->arena;
  const sym_expr *n = x->shape[0], *m = x->shape[1], *k = sym_expr_const(a, offset < 0 ? -offset : offset);
  const sym_expr *flat = sym_expr_mul(a, n, m);
  const ir_node *row = ir_reshape(g, x, 1, &flat);
  if (!row) return NULL;
  /* element i is x[i, i + offset] (or x[i - offset, i]), flat index start + i * (m + 1); with L the
   * length below, the last is at most n*m - 1, so the slice reads only x's elements */
  const sym_expr *start = offset >= 0 ? k : sym_expr_mul(a, k, m);
  const sym_expr *length = offset >= 0 ? sym_expr_min(a, n, sym_expr_sub(a, m, k)) : sym_expr_min(a, sym_expr_sub(a, n, k), m);
  length = simplified(g, sym_expr_max(a, sym_expr_const(a, 0), length));
  return length ? slice_node(g, row, 0, start, sym_expr_add(a, m, sym_expr_const(a, 1)), length) : NULL;
}

/* ---- Functional stores (lab 23.3). */

const ir_node *ir_view_set(ir_graph *g, const ir_node *view, const ir_node *y) {
  if (!view || !y) return NULL;
  if (view->op != IR_SLICE && view->op != IR_SELECT && view->op != IR_PERMUTE)
    return fail(g, UOPC_E_INVALID, "view_set: %%%d is a %s, not a slice, select or permute of its base",
                view->id, OPS[view->op].name);
  if (y->dtype != view->dtype)
    return fail(g, UOPC_E_DTYPE, "view_set: the value is %s, the view %s (cast first)",
                ir_dtype_name(y->dtype), ir_dtype_name(view->dtype));
  int same = y->rank == view->rank;
  for (int k = 0; k < view->rank && same; k++) same = y->shape[k] == view->shape[k];
  if (!same) {
    char a[128], b[128];
    ir_shape_format(y, a, sizeof a);
    ir_shape_format(view, b, sizeof b);
    return fail(g, UOPC_E_INVALID, "view_set: the value's shape %s is not the view's %s (broadcast first)", a, b);
  }
  const ir_node *base = view->src[0];
  if (view->op == IR_PERMUTE) {            /* every element is written: y, moved back */
    int inverse[UOPC_MAX_RANK];
    for (int k = 0; k < view->rank; k++) inverse[view->perm[k]] = k;
    return ir_permute(g, y, inverse);
  }
  /* a symbolic step (a diagonal's m + 1) must be >= 1 for every size: the store's test divides by it */
  if (view->op == IR_SLICE && view->step->kind != SYM_CONST && !proved_at_least(g, view->step, 1))
    return fail(g, UOPC_E_INVALID, "view_set: slice %%%d has a symbolic step that may be below 1", view->id);
  ir_node *n = append(g, view->op == IR_SLICE ? IR_SLICE_SET : IR_SELECT_SET, base->dtype, base->rank);
  if (!n) return NULL;
  memcpy(n->shape, base->shape, sizeof n->shape);
  n->src[0] = base;
  n->src[1] = y;
  n->axis = view->axis;
  n->start = view->start;
  n->step = view->step;
  n->index = view->index;
  return n;
}

/* ---- Moving a node into another graph. */

static const sym_expr *moved_expr(ir_graph *g, const sym_expr *e) {
  return e ? simplified(g, e) : NULL;
}

const ir_node *ir_clone(ir_graph *g, const ir_node *n, const ir_node *const *src) {
  if (!n) return NULL;
  if (n->op == IR_INPUT) return fail(g, UOPC_E_INVALID, "clone: %%%d is an input: map it to a node of this graph", n->id);
  int arity = OPS[n->op].arity;
  for (int i = 0; i < arity; i++) {
    if (!src || !src[i]) return NULL;
    const ir_node *want = n->src[i];
    int same = src[i]->rank == want->rank;
    for (int k = 0; k < want->rank && same; k++) same = src[i]->shape[k] == moved_expr(g, want->shape[k]);
    if (src[i]->dtype != want->dtype)
      return fail(g, UOPC_E_DTYPE, "clone: operand %d of %s %%%d is %s, not %s", i, OPS[n->op].name, n->id,
                  ir_dtype_name(src[i]->dtype), ir_dtype_name(want->dtype));
    if (!same) {
      char a[128], b[128];
      ir_shape_format(src[i], a, sizeof a);
      ir_shape_format(want, b, sizeof b);
      return fail(g, UOPC_E_INVALID, "clone: operand %d of %s %%%d has shape %s, not %s", i, OPS[n->op].name,
                  n->id, a, b);
    }
  }
  ir_node *m = append(g, n->op, n->dtype, n->rank);
  if (!m) return NULL;
  for (int k = 0; k < n->rank; k++)
    if (!(m->shape[k] = moved_expr(g, n->shape[k]))) return NULL;
  for (int i = 0; i < arity; i++) m->src[i] = src[i];
  m->value = n->value;
  m->axis = n->axis;
  memcpy(m->perm, n->perm, sizeof m->perm);
  m->axes = n->axes;
  m->keepdims = n->keepdims;
  if ((n->start && !(m->start = moved_expr(g, n->start))) || (n->step && !(m->step = moved_expr(g, n->step))) ||
      (n->index && !(m->index = moved_expr(g, n->index))))
    return NULL;
  return m;
}

/* ---- Reductions and matmul. */

const ir_node *ir_reduce(ir_graph *g, ir_op op, const ir_node *x, unsigned axes, int keepdims) {
  if (!x) return NULL;
  if (op >= IR_OP_COUNT || OPS[op].kind != IR_KIND_REDUCE)
    return fail(g, UOPC_E_INVALID, "op %d is not a reduction", op);
  if (x->rank == 0 || (axes >> x->rank) != 0 || axes == 0)
    return fail(g, UOPC_E_INVALID, "%s: axes 0x%x of a rank-%d node", OPS[op].name, axes, x->rank);
  uopc_dtype dt = x->dtype;
  if (op == IR_SUM && (dt == UOPC_I32 || dt == UOPC_BOOL)) dt = UOPC_I64;   /* NumPy's sum */
  if ((op == IR_MEAN && !uopc_dtype_is_float(x->dtype)) || (op == IR_MAX && dt == UOPC_BOOL))
    return fail(g, UOPC_E_DTYPE, "%s of %s: needs %s", OPS[op].name, ir_dtype_name(x->dtype),
                op == IR_MEAN ? "f32 or f64" : "a number");
  const sym_expr *shape[UOPC_MAX_RANK];
  const sym_expr *one = sym_expr_const(g->arena, 1);
  int rank = 0;
  for (int k = 0; k < x->rank; k++) {
    if (!(axes >> k & 1u)) shape[rank++] = x->shape[k];
    else if (keepdims) shape[rank++] = one;
  }
  ir_node *n = append(g, op, dt, rank);
  if (!n) return NULL;
  memcpy(n->shape, shape, (size_t)rank * sizeof *shape);
  n->src[0] = x;
  n->axes = axes;
  n->keepdims = keepdims;
  return n;
}

const ir_node *ir_matmul(ir_graph *g, const ir_node *a, const ir_node *b) {
  if (!a || !b) return NULL;
  char as[256], bs[256];
  ir_shape_format(a, as, sizeof as);
  ir_shape_format(b, bs, sizeof bs);
  if (a->dtype != b->dtype || a->dtype == UOPC_BOOL)
    return fail(g, UOPC_E_DTYPE, "matmul of %s and %s: needs one numeric dtype",
                ir_dtype_name(a->dtype), ir_dtype_name(b->dtype));
  int r = a->rank;
  if (r < 2 || b->rank != r)
    return fail(g, UOPC_E_INVALID, "matmul: %s @ %s needs equal ranks of at least 2", as, bs);
  for (int k = 0; k < r - 2; k++)
    if (a->shape[k] != b->shape[k])
      return fail(g, UOPC_E_INVALID, "matmul: %s @ %s: batch axis %d differs", as, bs, k);
  if (a->shape[r - 1] != b->shape[r - 2])
    return fail(g, UOPC_E_INVALID, "matmul: %s @ %s: inner extents differ", as, bs);
  ir_node *n = append(g, IR_MATMUL, a->dtype, r);
  if (!n) return NULL;
  memcpy(n->shape, a->shape, (size_t)(r - 1) * sizeof *n->shape);
  n->shape[r - 1] = b->shape[r - 1];
  n->src[0] = a;
  n->src[1] = b;
  return n;
}
