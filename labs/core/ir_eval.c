/* ir_eval.c: the graph IR evaluated element by element (given code; the
 * compiler core). Each node an output needs is computed, in id
 * order (ids are topological), into a contiguous temporary: every element's
 * row-major index is unravelled and each operand read at the index the
 * lowering would read it at (lower_kernel.c: broadcast_idx, moved_idx,
 * set_value), with the generated code's arithmetic (op_text). Chapter 23.1,
 * "An interpreter for the IR". */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ir_eval.h"

/* One element of any dtype; a member is read only under its dtype. */
typedef union scalar { float f32; double f64; int32_t i32; int64_t i64; uint8_t u8; } scalar;

typedef struct eval {
  const ir_graph *g;
  const sym_binding *b;
  const uopc_tensor *const *inputs;
  uopc_tensor *val;          /* by node id: the node's value, contiguous (zeroed when not needed) */
  unsigned char *needed;     /* by node id: an output reads it */
  uopc_error *err;
} eval;

/* ---- Elements and indices. */

static scalar get(const uopc_tensor *t, int64_t i) {
  scalar s = {0};
  size_t size = uopc_dtype_size(t->dtype);
  memcpy(&s, (const unsigned char *)uopc_tensor_data(t) + i * (int64_t)size, size);
  return s;
}

static void put(uopc_tensor *t, int64_t i, scalar s) {
  size_t size = uopc_dtype_size(t->dtype);
  memcpy((unsigned char *)uopc_tensor_data(t) + i * (int64_t)size, &s, size);
}

/* idx = the row-major index of element i of shape. As the lowering
 * unravels (reshape_idx, the CUDA loop), each divisor is max(extent, 1) and
 * the first axis takes what is left. */
static void unravel(int64_t i, int rank, const int64_t *shape, int64_t *idx) {
  for (int k = rank - 1; k > 0; k--) {
    int64_t d = shape[k] > 1 ? shape[k] : 1;
    idx[k] = i % d;
    i /= d;
  }
  if (rank > 0) idx[0] = i;
}

/* The value of node src (already computed) at idx; an index outside its
 * shape is UOPC_E_BOUNDS (a binding outside the dims' bounds can ask for one). */
static int read(eval *e, const ir_node *src, const int64_t *idx, scalar *out) {
  const uopc_tensor *t = &e->val[src->id];
  int64_t at = 0;
  for (int k = 0; k < t->rank; k++) {
    if (idx[k] < 0 || idx[k] >= t->shape[k])
      return UOPC_FAIL(e->err, UOPC_E_BOUNDS, "ir_eval: index %lld outside [0, %lld) of axis %d of %%%d",
                       (long long)idx[k], (long long)t->shape[k], k, src->id);
    at = at * t->shape[k] + idx[k];
  }
  *out = get(t, at);
  return UOPC_OK;
}

/* src's index when n reads it at idx, NumPy's broadcasting: trailing axes
 * align, an extent 1 reads element 0. */
static void broadcast_idx(const eval *e, const ir_node *n, const ir_node *src, const int64_t *idx,
                          int64_t *out) {
  const uopc_tensor *t = &e->val[src->id];
  for (int j = 0; j < src->rank; j++) out[j] = t->shape[j] == 1 ? 0 : idx[j + n->rank - src->rank];
}

static int value_of(eval *e, const sym_expr *x, int64_t *v) { return sym_expr_eval(x, e->b, v, e->err); }

/* ---- Arithmetic, as op_text writes it. */

/* The float ops of one precision (T, libm suffix S): computed in T, so f32
 * rounds as the generated float code does. */
#define FLOAT_OPS(name, T, S)                                              \
  static T name(ir_op op, T a, T b) {                                      \
    switch (op) {                                                          \
    case IR_NEG: return -a;                                                \
    case IR_ABS: return fabs##S(a);                                        \
    case IR_EXP: return exp##S(a);                                         \
    case IR_LOG: return log##S(a);                                         \
    case IR_SQRT: return sqrt##S(a);                                       \
    case IR_TANH: return tanh##S(a);                                       \
    case IR_ADD: return a + b;                                             \
    case IR_SUB: return a - b;                                             \
    case IR_MUL: return a * b;                                             \
    case IR_DIV: return a / b;                                             \
    case IR_POW: return pow##S(a, b);                                      \
    case IR_MAXIMUM: return (a > b || a != a) ? a : b;  /* a NaN wins */   \
    case IR_MINIMUM: return (a < b || a != a) ? a : b;                     \
    default: return a;                                                     \
    }                                                                      \
  }
FLOAT_OPS(float_op, float, f)
FLOAT_OPS(double_op, double, )

/* Integer ops wrap, through unsigned arithmetic as NumPy's do; the result
 * is truncated to the dtype by the caller. */
static int64_t int_op(ir_op op, int64_t a, int64_t b) {
  uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
  switch (op) {
  case IR_NEG: return (int64_t)(0u - ua);
  case IR_ABS: return a < 0 ? (int64_t)(0u - ua) : a;
  case IR_ADD: return (int64_t)(ua + ub);
  case IR_SUB: return (int64_t)(ua - ub);
  case IR_MUL: return (int64_t)(ua * ub);
  case IR_MAXIMUM: return a > b ? a : b;
  case IR_MINIMUM: return a < b ? a : b;
  default: return a;
  }
}

/* op (unary, math or binary) on a and b of dtype dt (b unused by unary ops). */
static scalar arith(ir_op op, uopc_dtype dt, scalar a, scalar b) {
  scalar r = {0};
  switch (dt) {
  case UOPC_F32: r.f32 = float_op(op, a.f32, b.f32); break;
  case UOPC_F64: r.f64 = double_op(op, a.f64, b.f64); break;
  case UOPC_I32: r.i32 = (int32_t)int_op(op, a.i32, b.i32); break;
  case UOPC_I64: r.i64 = int_op(op, a.i64, b.i64); break;
  case UOPC_BOOL: break;   /* the builders refuse arithmetic on bool */
  }
  return r;
}

/* v of dtype from as a T, as C converts it. */
#define CONVERTED(T, v, from)                                                                 \
  ((from) == UOPC_F32 ? (T)(v).f32 : (from) == UOPC_F64 ? (T)(v).f64 : (from) == UOPC_I32 ? (T)(v).i32 \
   : (from) == UOPC_I64 ? (T)(v).i64 : (T)(v).u8)

static scalar cast(scalar v, uopc_dtype from, uopc_dtype to) {
  scalar r = {0};
  switch (to) {
  case UOPC_F32: r.f32 = CONVERTED(float, v, from); break;
  case UOPC_F64: r.f64 = CONVERTED(double, v, from); break;
  case UOPC_I32: r.i32 = CONVERTED(int32_t, v, from); break;
  case UOPC_I64: r.i64 = CONVERTED(int64_t, v, from); break;
  case UOPC_BOOL:     /* != 0 in the source's own type: a NaN is true */
    r.u8 = from == UOPC_F32 ? v.f32 != 0 : from == UOPC_F64 ? v.f64 != 0 : from == UOPC_I32 ? v.i32 != 0
         : from == UOPC_I64 ? v.i64 != 0 : v.u8 != 0;
    break;
  }
  return r;
}

#define COMPARED(op, a, b)                                                                    \
  ((op) == IR_LT ? (a) < (b) : (op) == IR_LE ? (a) <= (b) : (op) == IR_GT ? (a) > (b)         \
   : (op) == IR_GE ? (a) >= (b) : (op) == IR_EQ ? (a) == (b) : (a) != (b))

/* Floats compare as doubles and integers as int64: both exact. */
static scalar compare(ir_op op, uopc_dtype dt, scalar x, scalar y) {
  scalar r = {0};
  if (uopc_dtype_is_float(dt)) {
    double a = cast(x, dt, UOPC_F64).f64, b = cast(y, dt, UOPC_F64).f64;
    r.u8 = (uint8_t)COMPARED(op, a, b);
  } else {
    int64_t a = cast(x, dt, UOPC_I64).i64, b = cast(y, dt, UOPC_I64).i64;
    r.u8 = (uint8_t)COMPARED(op, a, b);
  }
  return r;
}

/* ---- One function per op kind; each fills e->val[n->id], already allocated. */

static int eval_const(eval *e, const ir_node *n) {
  if (n->op == IR_SIZE) {      /* a size read from the binding, as the compiled code reads its dims */
    scalar s;
    int rc = value_of(e, n->index, &s.i64);
    if (!rc) put(&e->val[n->id], 0, cast(s, UOPC_I64, n->dtype));
    return rc;
  }
  scalar v = {.f64 = n->value};
  put(&e->val[n->id], 0, cast(v, UOPC_F64, n->dtype));   /* integers truncate, as the literal does */
  return UOPC_OK;
}

static int eval_elementwise(eval *e, const ir_node *n) {
  uopc_tensor *t = &e->val[n->id];
  int arity = ir_op_info_of(n->op)->arity, rc = UOPC_OK;
  ir_kind kind = ir_op_info_of(n->op)->kind;
  uopc_dtype dt = n->src[0]->dtype;
  for (int64_t i = 0; i < uopc_tensor_numel(t) && !rc; i++) {
    int64_t idx[UOPC_MAX_RANK], sidx[UOPC_MAX_RANK];
    scalar v[3] = {{0}};
    unravel(i, n->rank, t->shape, idx);
    for (int s = 0; s < arity && !rc; s++) {
      broadcast_idx(e, n, n->src[s], idx, sidx);
      rc = read(e, n->src[s], sidx, &v[s]);
    }
    if (kind == IR_KIND_CAST) v[0] = cast(v[0], dt, n->dtype);
    else if (kind == IR_KIND_COMPARE) v[0] = compare(n->op, dt, v[0], v[1]);
    else if (kind == IR_KIND_WHERE) v[0] = v[0].u8 ? v[1] : v[2];
    else v[0] = arith(n->op, dt, v[0], v[1]);
    put(t, i, v[0]);
  }
  return rc;
}

/* A movement op's parameters under the binding. */
typedef struct move { int64_t start, step, index; } move;

static int move_params(eval *e, const ir_node *n, move *m) {
  int rc = UOPC_OK;
  *m = (move){0, 0, 0};
  if (n->start) rc = value_of(e, n->start, &m->start);
  if (!rc && n->step) rc = value_of(e, n->step, &m->step);
  if (!rc && n->index) rc = value_of(e, n->index, &m->index);
  return rc;
}

/* src's index for n's element idx, as moved_idx rewrites it. */
static void moved_idx(const eval *e, const ir_node *n, const move *m, const int64_t *idx, int64_t *out) {
  const ir_node *src = n->src[0];
  switch (n->op) {
  case IR_EXPAND: broadcast_idx(e, n, src, idx, out); return;
  case IR_RESHAPE: {
    int64_t lin = 0;
    for (int k = 0; k < n->rank; k++) lin = lin * e->val[n->id].shape[k] + idx[k];
    unravel(lin, src->rank, e->val[src->id].shape, out);
    return;
  }
  case IR_PERMUTE:
    for (int k = 0; k < n->rank; k++) out[n->perm[k]] = idx[k];
    return;
  case IR_SLICE:
    memcpy(out, idx, (size_t)n->rank * sizeof *idx);
    out[n->axis] = m->start + m->step * idx[n->axis];
    return;
  default:   /* IR_SELECT */
    for (int k = 0, j = 0; k < src->rank; k++) out[k] = k == n->axis ? m->index : idx[j++];
    return;
  }
}

static int eval_move(eval *e, const ir_node *n) {
  uopc_tensor *t = &e->val[n->id];
  move m;
  int rc = move_params(e, n, &m);
  for (int64_t i = 0; i < uopc_tensor_numel(t) && !rc; i++) {
    int64_t idx[UOPC_MAX_RANK], sidx[UOPC_MAX_RANK];
    scalar v;
    unravel(i, n->rank, t->shape, idx);
    moved_idx(e, n, &m, idx, sidx);
    if (!(rc = read(e, n->src[0], sidx, &v))) put(t, i, v);
  }
  return rc;
}

/* 1 when n's element idx is inside the view that SLICE_SET or SELECT_SET
 * replaces, with y's index in yidx (set_value's condition). */
static int in_view(const ir_node *n, const move *m, const int64_t *idx, int64_t y_extent, int64_t *yidx) {
  if (n->op == IR_SELECT_SET) {
    for (int k = 0, j = 0; k < n->rank; k++)
      if (k != n->axis) yidx[j++] = idx[k];
    return idx[n->axis] == m->index;
  }
  int64_t mag = m->step < 0 ? -m->step : m->step;
  int64_t d = m->step > 0 ? idx[n->axis] - m->start : m->start - idx[n->axis];
  memcpy(yidx, idx, (size_t)n->rank * sizeof *idx);
  yidx[n->axis] = d / mag;
  return d >= 0 && d % mag == 0 && d / mag < y_extent;
}

static int eval_set(eval *e, const ir_node *n) {
  uopc_tensor *t = &e->val[n->id];
  const ir_node *y = n->src[1];
  int64_t y_extent = n->op == IR_SLICE_SET ? e->val[y->id].shape[n->axis] : 0;
  move m;
  int rc = move_params(e, n, &m);
  for (int64_t i = 0; i < uopc_tensor_numel(t) && !rc; i++) {
    int64_t idx[UOPC_MAX_RANK], yidx[UOPC_MAX_RANK];
    scalar v;
    unravel(i, n->rank, t->shape, idx);
    rc = in_view(n, &m, idx, y_extent, yidx) ? read(e, y, yidx, &v) : read(e, n->src[0], idx, &v);
    if (!rc) put(t, i, v);
  }
  return rc;
}

/* The reduction's start: 0, or the lowest value for a max. */
static scalar identity(const ir_node *n) {
  scalar r = {0};
  if (n->op != IR_MAX) return r;
  if (n->dtype == UOPC_F32) r.f32 = -INFINITY;
  else if (n->dtype == UOPC_F64) r.f64 = -INFINITY;
  else if (n->dtype == UOPC_I32) r.i32 = INT32_MIN;
  else r.i64 = INT64_MIN;
  return r;
}

/* acc combined with element r (row-major over the reduced axes) of the
 * reduction that writes n's element idx. */
static int reduce_one(eval *e, const ir_node *n, const int64_t *idx, int64_t r, scalar *acc) {
  const ir_node *src = n->src[0];
  const int64_t *shape = e->val[src->id].shape;
  int64_t sidx[UOPC_MAX_RANK];
  scalar v;
  for (int k = src->rank - 1; k >= 0; k--)
    if (n->axes >> k & 1u) { sidx[k] = r % shape[k]; r /= shape[k]; }
  for (int k = 0, pos = 0; k < src->rank; k++)
    if (!(n->axes >> k & 1u)) sidx[k] = idx[n->keepdims ? k : pos++];
  int rc = read(e, src, sidx, &v);
  if (rc) return rc;
  v = cast(v, src->dtype, n->dtype);   /* SUM of i32 or bool adds in i64 */
  *acc = n->op == IR_MAX ? arith(IR_MAXIMUM, n->dtype, v, *acc) : arith(IR_ADD, n->dtype, *acc, v);
  return UOPC_OK;
}

static int eval_reduce(eval *e, const ir_node *n) {
  uopc_tensor *t = &e->val[n->id];
  const uopc_tensor *s = &e->val[n->src[0]->id];
  int64_t count = 1;
  for (int k = 0; k < s->rank; k++)
    if (n->axes >> k & 1u) {
      if (n->op == IR_MAX && s->shape[k] < 1)
        return UOPC_FAIL(e->err, UOPC_E_BOUNDS, "ir_eval: max %%%d over an empty axis (axis %d of extent %lld):"
                         " NumPy refuses it too", n->id, k, (long long)s->shape[k]);
      count *= s->shape[k];
    }
  int rc = UOPC_OK;
  for (int64_t i = 0; i < uopc_tensor_numel(t) && !rc; i++) {
    int64_t idx[UOPC_MAX_RANK];
    scalar acc = identity(n);
    unravel(i, n->rank, t->shape, idx);
    for (int64_t r = 0; r < count && !rc; r++) rc = reduce_one(e, n, idx, r, &acc);
    if (n->op == IR_MEAN)   /* a float dtype: the count converted to it */
      acc = arith(IR_DIV, n->dtype, acc, cast((scalar){.i64 = count}, UOPC_I64, n->dtype));
    put(t, i, acc);
  }
  return rc;
}

static int eval_matmul(eval *e, const ir_node *n) {
  uopc_tensor *t = &e->val[n->id];
  const ir_node *a = n->src[0], *b = n->src[1];
  int r = n->rank, rc = UOPC_OK;
  int64_t inner = e->val[a->id].shape[r - 1];
  for (int64_t i = 0; i < uopc_tensor_numel(t) && !rc; i++) {
    int64_t ia[UOPC_MAX_RANK], ib[UOPC_MAX_RANK];
    scalar acc = {0}, x, y;
    unravel(i, r, t->shape, ia);
    memcpy(ib, ia, sizeof ib);
    for (int64_t k = 0; k < inner && !rc; k++) {
      ia[r - 1] = ib[r - 2] = k;
      rc = read(e, a, ia, &x);
      if (!rc) rc = read(e, b, ib, &y);
      if (!rc) acc = arith(IR_ADD, n->dtype, acc, arith(IR_MUL, n->dtype, x, y));
    }
    put(t, i, acc);
  }
  return rc;
}

/* ---- Inputs. */

static int bounds_fail(eval *e, const ir_node *n, const char *what, int axis, int64_t got, int64_t want) {
  return UOPC_FAIL(e->err, UOPC_E_BOUNDS, "ir_eval: input '%s' %s %d is %lld, the graph needs %lld", n->name, what,
                   axis, (long long)got, (long long)want);
}

/* The tensor's extents (checked when n's shape was evaluated), strides and
 * offset against n's expressions, as exec_bind checks them: a contiguous
 * input's strides only on axes that have more than one element. */
static int check_view(eval *e, const ir_node *n, const uopc_tensor *t, int64_t *strides, int64_t *offset) {
  int rc = value_of(e, n->offset, offset);
  int at_base = !(n->offset->kind == SYM_CONST && n->offset->value == 0);
  if (!rc && at_base && t->offset != *offset) return bounds_fail(e, n, "offset", 0, t->offset, *offset);
  for (int k = 0; k < n->rank && !rc; k++) {
    rc = value_of(e, n->strides[k], &strides[k]);
    int checked = !n->contiguous || (t->shape[k] > 1 && uopc_tensor_numel(t) > 0);
    if (!rc && checked && t->strides[k] != strides[k]) return bounds_fail(e, n, "stride", k, t->strides[k], strides[k]);
  }
  return rc;
}

/* Element i of input n: at offset + sum(strides * idx) from the pointer
 * exec_run passes (the storage base when the offset is an expression, else
 * element 0), and inside the bytes the tensor reaches. */
static int input_element(eval *e, const ir_node *n, const int64_t *strides, int64_t offset, int64_t i,
                         scalar *out) {
  const uopc_tensor *t = e->inputs[n->input];
  int at_base = !(n->offset->kind == SYM_CONST && n->offset->value == 0);
  size_t size = uopc_dtype_size(n->dtype);
  uopc_layout_bytes range = uopc_tensor_byte_range(t);
  int64_t idx[UOPC_MAX_RANK], elem = at_base ? offset : 0, step, bytes;
  int ok = 1;
  unravel(i, n->rank, t->shape, idx);
  for (int k = 0; k < n->rank; k++)
    ok = ok && !__builtin_mul_overflow(strides[k], idx[k], &step) && !__builtin_add_overflow(elem, step, &elem);
  uintptr_t p = (uintptr_t)(at_base ? (void *)t->storage->base : uopc_tensor_data(t));
  ok = ok && !__builtin_mul_overflow(elem, (int64_t)size, &bytes);
  uintptr_t addr = p + (uintptr_t)bytes;   /* wraps as intended for a negative distance */
  if (!ok || addr < range.lo || addr > range.hi || range.hi - addr < size)
    return UOPC_FAIL(e->err, UOPC_E_BOUNDS, "ir_eval: input '%s' element %lld is read at element %lld from %s,"
                     " outside the bytes the tensor reaches", n->name, (long long)i, (long long)elem,
                     at_base ? "the storage base" : "element 0");
  memset(out, 0, sizeof *out);
  memcpy(out, (const void *)addr, size);
  return UOPC_OK;
}

static int eval_input(eval *e, const ir_node *n) {
  uopc_tensor *t = &e->val[n->id];
  const uopc_tensor *in = e->inputs[n->input];
  int64_t strides[UOPC_MAX_RANK], offset = 0;
  for (int k = 0; k < n->rank; k++)
    if (in->shape[k] != t->shape[k]) return bounds_fail(e, n, "axis", k, in->shape[k], t->shape[k]);
  int rc = check_view(e, n, in, strides, &offset);
  for (int64_t i = 0; i < uopc_tensor_numel(t) && !rc; i++) {
    scalar v;
    if (!(rc = input_element(e, n, strides, offset, i, &v))) put(t, i, v);
  }
  return rc;
}

/* ---- The graph. */

static int eval_node(eval *e, const ir_node *n) {
  int64_t shape[UOPC_MAX_RANK];
  for (int k = 0; k < n->rank; k++) {
    int rc = value_of(e, n->shape[k], &shape[k]);
    if (rc) return rc;
    if (shape[k] < 0)
      return UOPC_FAIL(e->err, UOPC_E_BOUNDS, "ir_eval: %%%d (%s) axis %d has extent %lld under this binding",
                       n->id, ir_op_info_of(n->op)->name, k, (long long)shape[k]);
  }
  int rc = uopc_tensor_empty(&e->val[n->id], n->dtype, n->rank, shape, e->err);
  if (rc) return rc;
  switch (ir_op_info_of(n->op)->kind) {
  case IR_KIND_LEAF: return n->op == IR_INPUT ? eval_input(e, n) : eval_const(e, n);
  case IR_KIND_MOVE: return eval_move(e, n);
  case IR_KIND_SET: return eval_set(e, n);
  case IR_KIND_REDUCE: return eval_reduce(e, n);
  case IR_KIND_MATMUL: return eval_matmul(e, n);
  default: return eval_elementwise(e, n);
  }
}

/* The arguments, and the tensors' dtypes and ranks (all of them, needed or not). */
static int check_call(const ir_graph *g, const ir_node *const *outputs, int n_outputs,
                      const uopc_tensor *const *inputs, int n_inputs, const sym_binding *b, uopc_error *err) {
  if (!g || !outputs || n_outputs < 1 || !b)
    return UOPC_FAIL(err, UOPC_E_INVALID, "ir_eval: needs a graph, a binding and at least one output");
  if (n_inputs != ir_graph_input_count(g) || (n_inputs && !inputs))
    return UOPC_FAIL(err, UOPC_E_INVALID, "ir_eval: the graph takes %d inputs, not %d", ir_graph_input_count(g),
                     n_inputs);
  for (int k = 0; k < n_outputs; k++)
    if (!outputs[k] || ir_graph_node(g, outputs[k]->id) != outputs[k])
      return UOPC_FAIL(err, UOPC_E_INVALID, "ir_eval: output %d is %s", k, outputs[k] ? "a node of another graph" : "NULL");
  for (int i = 0; i < n_inputs; i++) {
    const ir_node *n = ir_graph_input(g, i);
    const uopc_tensor *t = inputs[i];
    if (!t || !t->storage) return UOPC_FAIL(err, UOPC_E_INVALID, "ir_eval: input '%s' is NULL or released", n->name);
    if (t->dtype != n->dtype)
      return UOPC_FAIL(err, UOPC_E_DTYPE, "ir_eval: input '%s' is %s, the graph takes %s", n->name,
                       uopc_dtype_name(t->dtype), uopc_dtype_name(n->dtype));
    if (t->rank != n->rank)
      return UOPC_FAIL(err, UOPC_E_INVALID, "ir_eval: input '%s' has rank %d, the graph takes rank %d", n->name,
                       t->rank, n->rank);
  }
  return UOPC_OK;
}

/* out[k]: the first output of a node takes its value, a repeat a copy of it. */
static int give_outputs(eval *e, const ir_node *const *outputs, int n_outputs, uopc_tensor *out) {
  int rc = UOPC_OK;
  for (int k = 0; k < n_outputs && !rc; k++) {
    const uopc_tensor *v = &e->val[outputs[k]->id];
    int repeat = 0;
    for (int j = 0; j < k; j++) repeat |= outputs[j] == outputs[k];
    if (!repeat) { uopc_tensor_retain(&out[k], v); continue; }
    rc = uopc_tensor_empty(&out[k], v->dtype, v->rank, v->shape, e->err);
    if (!rc) rc = uopc_tensor_copy(&out[k], v, e->err);
  }
  return rc;
}

int ir_eval(const ir_graph *g, const ir_node *const *outputs, int n_outputs, const uopc_tensor *const *inputs,
            int n_inputs, const sym_binding *b, uopc_tensor *out, uopc_error *err) {
  if (!out) return UOPC_FAIL(err, UOPC_E_INVALID, "ir_eval: no tensors for the outputs");
  for (int k = 0; k < n_outputs; k++) memset(&out[k], 0, sizeof out[k]);
  int rc = check_call(g, outputs, n_outputs, inputs, n_inputs, b, err);
  if (rc) return rc;
  int count = ir_graph_node_count(g);
  eval e = {g, b, inputs, calloc((size_t)count, sizeof *e.val), calloc((size_t)count, 1), err};
  if (!e.val || !e.needed) rc = UOPC_FAIL(err, UOPC_E_NOMEM, "ir_eval: out of memory for %d nodes", count);
  for (int k = 0; k < n_outputs && !rc; k++) e.needed[outputs[k]->id] = 1;
  for (int id = count - 1; id >= 0 && !rc; id--) {     /* operands have smaller ids */
    const ir_node *n = ir_graph_node(g, id);
    for (int s = 0; s < ir_op_info_of(n->op)->arity && e.needed[id]; s++) e.needed[n->src[s]->id] = 1;
  }
  for (int id = 0; id < count && !rc; id++)
    if (e.needed[id]) rc = eval_node(&e, ir_graph_node(g, id));
  if (!rc) rc = give_outputs(&e, outputs, n_outputs, out);
  for (int id = 0; id < count && e.val; id++) uopc_tensor_release(&e.val[id]);
  for (int k = 0; k < n_outputs && rc; k++) uopc_tensor_release(&out[k]);
  free(e.val);
  free(e.needed);
  return rc;
}
