/* lower_kernel.c: one materialised node's loop nest (given code; the compiler
 * core, lab 23.1). The loops run over the node's shape; the C back end opens
 * one `for` per axis, the CUDA back end one grid-stride loop over the element
 * count with the axes unravelled from it. Inside, the node's value at the
 * loop variables is stored, or, for a reduction or matmul, accumulated into
 * LANES partial sums in the order the banner states. Chapter 23.1, "One
 * lowering, two back ends". */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lower_internal.h"

static const sym_expr *simp(lower_ctx *c, const sym_expr *e) {
  const sym_expr *s = NULL;
  if (!e) {
    if (c->err->code == UOPC_OK) UOPC_FAIL(c->err, UOPC_E_NOMEM, "lower: out of memory");
    return NULL;
  }
  return sym_expr_simplify(c->arena, e, &s, c->err) ? NULL : s;
}

/* The variable of `for name in [0, extent)`: a dim bounded by the extent's
 * upper bound, so intervals of the addresses built from it stay sound. */
static const sym_expr *loop_var(lower_ctx *c, const char *name, const sym_expr *extent) {
  sym_interval iv;
  if (sym_expr_interval(extent, &iv, c->err)) return NULL;
  sym_dim d;
  memset(&d, 0, sizeof d);
  snprintf(d.name, sizeof d.name, "%s", name);
  d.hi = iv.hi > 1 ? iv.hi - 1 : 0;
  d.multiple_of = 1;
  return sym_expr_dim(c->arena, &d);
}

static const sym_expr *row_major(lower_ctx *c, const sym_expr *const *idx, const ir_node *n) {
  const sym_expr *acc = sym_expr_const(c->arena, 0);
  for (int k = 0; k < n->rank; k++) acc = sym_expr_add(c->arena, sym_expr_mul(c->arena, acc, n->shape[k]), idx[k]);
  return simp(c, acc);
}

static int buffer_index(const lower_program *p, const ir_node *n) {
  for (int b = 0; b < p->n_buffers; b++)
    if (p->buffers[b].node == n && p->buffers[b].role != LOWER_INPUT) return b;
  return -1;
}

/* ---- Literals and operators, per dtype. */

static void literal(const lower_ctx *c, double v, uopc_dtype dt, char *buf, size_t size) {
  int cuda = c->p->backend == LOWER_CUDA, f32 = dt == UOPC_F32;
  if (dt == UOPC_BOOL) { snprintf(buf, size, "%d", v != 0); return; }
  if (dt == UOPC_I32) { snprintf(buf, size, "%lld", (long long)v); return; }
  if (dt == UOPC_I64) { snprintf(buf, size, "INT64_C(%lld)", (long long)v); return; }
  if (isnan(v)) snprintf(buf, size, "%s", cuda ? (f32 ? "__int_as_float(0x7fc00000)" : "__longlong_as_double(0x7ff8000000000000LL)")
                                               : (f32 ? "__builtin_nanf(\"\")" : "__builtin_nan(\"\")"));
  else if (isinf(v)) snprintf(buf, size, "%s%s", v < 0 ? "-" : "",
                              cuda ? (f32 ? "__int_as_float(0x7f800000)" : "__longlong_as_double(0x7ff0000000000000LL)")
                                   : (f32 ? "__builtin_inff()" : "__builtin_inf()"));
  else {
    snprintf(buf, size, f32 ? "%.9g" : "%.17g", f32 ? (double)(float)v : v);
    if (!strpbrk(buf, ".en")) strncat(buf, ".0", size - strlen(buf) - 1);
    if (f32) strncat(buf, "f", size - strlen(buf) - 1);
  }
}

static const char *unsigned_of(uopc_dtype dt) { return dt == UOPC_I64 ? "uint64_t" : "uint32_t"; }

/* The C expression of op over temporaries a, b, w (w: where's condition). */
static int op_text(lower_ctx *c, const ir_node *n, int a, int b, int w, char *buf, size_t size) {
  const ir_op_info *info = ir_op_info_of(n->op);
  uopc_dtype dt = n->src[0] ? n->src[0]->dtype : n->dtype;
  int fl = uopc_dtype_is_float(dt);
  const char *T = ir_dtype_ctype(n->dtype), *f = dt == UOPC_F32 ? "f" : "", *U = unsigned_of(dt);
  switch (info->kind) {
  case IR_KIND_UNARY:
    if (n->op == IR_NEG) fl ? snprintf(buf, size, "-t%d", a) : snprintf(buf, size, "(%s)(0u - (%s)t%d)", T, U, a);
    else fl ? snprintf(buf, size, "fabs%s(t%d)", f, a)
            : snprintf(buf, size, "t%d < 0 ? (%s)(0u - (%s)t%d) : t%d", a, T, U, a, a);
    return UOPC_OK;
  case IR_KIND_MATH: snprintf(buf, size, "%s%s(t%d)", info->c, f, a); return UOPC_OK;
  case IR_KIND_CAST:
    if (n->dtype == UOPC_BOOL) snprintf(buf, size, "(uint8_t)(t%d != 0)", a);
    else snprintf(buf, size, "(%s)t%d", T, a);
    return UOPC_OK;
  case IR_KIND_COMPARE: snprintf(buf, size, "(uint8_t)(t%d %s t%d)", a, info->c, b); return UOPC_OK;
  case IR_KIND_WHERE: snprintf(buf, size, "t%d ? t%d : t%d", w, a, b); return UOPC_OK;
  case IR_KIND_BINARY:
    if (n->op == IR_POW) snprintf(buf, size, "pow%s(t%d, t%d)", f, a, b);
    else if (n->op == IR_MAXIMUM || n->op == IR_MINIMUM)   /* NumPy's: a NaN operand wins */
      fl ? snprintf(buf, size, "(t%d %s t%d || t%d != t%d) ? t%d : t%d", a, info->c, b, a, a, a, b)
         : snprintf(buf, size, "t%d %s t%d ? t%d : t%d", a, info->c, b, a, b);
    else if (fl || n->op == IR_DIV) snprintf(buf, size, "t%d %s t%d", a, info->c, b);
    else snprintf(buf, size, "(%s)((%s)t%d %s (%s)t%d)", T, U, a, info->c, U, b);  /* wraps, as NumPy */
    return UOPC_OK;
  default:
    return UOPC_FAIL(c->err, UOPC_E_UNSUPPORTED, "lower: %s is not elementwise", info->name);
  }
}

/* ---- Values at index vectors. */

static int value(lower_ctx *c, const ir_node *n, const sym_expr *const *idx, int *tmp);

/* The index vector of src when n (of rank r) reads it at idx with NumPy's
 * broadcasting: trailing axes align, an extent 1 reads element 0. */
static void broadcast_idx(lower_ctx *c, const ir_node *n, const ir_node *src, const sym_expr *const *idx,
                          const sym_expr **out) {
  for (int j = 0; j < src->rank; j++) {
    const sym_expr *e = src->shape[j];
    out[j] = e->kind == SYM_CONST && e->value == 1 ? sym_expr_const(c->arena, 0) : idx[j + n->rank - src->rank];
  }
}

/* Row-major unravel of reshape's linear index into src's axes. Each divisor
 * is max(extent, 1): an extent 0 means no element is ever read. */
static int reshape_idx(lower_ctx *c, const ir_node *n, const sym_expr *const *idx, const sym_expr **out) {
  const ir_node *src = n->src[0];
  const sym_expr *lin = row_major(c, idx, n), *one = sym_expr_const(c->arena, 1);
  for (int j = src->rank - 1; j > 0 && lin; j--) {
    const sym_expr *d = simp(c, sym_expr_max(c->arena, src->shape[j], one));
    if (!d) return c->err->code;
    out[j] = sym_expr_mod(c->arena, lin, d);
    lin = sym_expr_floordiv(c->arena, lin, d);
  }
  if (src->rank > 0) out[0] = lin;
  if (sym_arena_error(c->arena)->code) return uopc_fail(c->err, sym_arena_error(c->arena)->code, "lower",
                                                        "%s", sym_arena_error(c->arena)->message);
  return lin ? UOPC_OK : c->err->code;
}

static int moved_idx(lower_ctx *c, const ir_node *n, const sym_expr *const *idx, const sym_expr **out) {
  const ir_node *src = n->src[0];
  sym_arena *a = c->arena;
  switch (n->op) {
  case IR_EXPAND: broadcast_idx(c, n, src, idx, out); return UOPC_OK;
  case IR_RESHAPE: return reshape_idx(c, n, idx, out);
  case IR_PERMUTE:
    for (int k = 0; k < n->rank; k++) out[n->perm[k]] = idx[k];
    return UOPC_OK;
  case IR_SLICE:
    memcpy(out, idx, (size_t)n->rank * sizeof *idx);
    out[n->axis] = sym_expr_add(a, n->start, sym_expr_mul(a, n->step, idx[n->axis]));
    return UOPC_OK;
  case IR_SELECT:
    for (int k = 0, j = 0; k < src->rank; k++) out[k] = k == n->axis ? n->index : idx[j++];
    return UOPC_OK;
  default:
    return UOPC_FAIL(c->err, UOPC_E_UNSUPPORTED, "lower: %s moves nothing", ir_op_info_of(n->op)->name);
  }
}

static int memo_find(const lower_ctx *c, const ir_node *n, const sym_expr *const *idx) {
  for (int m = 0; m < c->n_memo; m++)
    if (c->memo[m].node == n && memcmp(c->memo[m].idx, idx, (size_t)n->rank * sizeof *idx) == 0)
      return c->memo[m].tmp;
  return -1;
}

static int memo_add(lower_ctx *c, const ir_node *n, const sym_expr *const *idx, int tmp) {
  if (c->n_memo == c->cap_memo) {
    int cap = c->cap_memo ? 2 * c->cap_memo : 32;
    lower_memo *m = realloc(c->memo, (size_t)cap * sizeof *m);
    if (!m) return UOPC_FAIL(c->err, UOPC_E_NOMEM, "lower: out of memory");
    c->memo = m;
    c->cap_memo = cap;
  }
  lower_memo *m = &c->memo[c->n_memo++];
  m->node = n;
  memcpy(m->idx, idx, (size_t)n->rank * sizeof *idx);
  m->tmp = tmp;
  return UOPC_OK;
}

/* `const T t<k> = buffer[address];` for an input view or a materialised node. */
static int load(lower_ctx *c, const ir_node *n, const char *name, const sym_expr *addr, int k) {
  char text[LOWER_EXPR_MAX];
  int rc = lower_ctx_expr(c, addr, text, sizeof text, "the address in");
  if (rc) return rc;
  return lower_ctx_printf(c, "const %s t%d = %s[%s];\n", ir_dtype_ctype(n->dtype), k, name, text);
}

static const sym_expr *input_address(lower_ctx *c, const ir_node *n, const sym_expr *const *idx) {
  const sym_expr *addr = n->offset;
  for (int k = 0; k < n->rank; k++)
    addr = sym_expr_add(c->arena, addr, sym_expr_mul(c->arena, n->strides[k], idx[k]));
  return addr;
}

static int compute(lower_ctx *c, const ir_node *n, const sym_expr *const *idx, int *tmp) {
  const ir_op_info *info = ir_op_info_of(n->op);
  int t[3] = {-1, -1, -1}, rc = UOPC_OK;
  if (info->kind == IR_KIND_MOVE) {
    const sym_expr *sidx[UOPC_MAX_RANK];
    rc = moved_idx(c, n, idx, sidx);
    for (int j = 0; j < n->src[0]->rank && !rc; j++)
      if (!(sidx[j] = simp(c, sidx[j]))) rc = c->err->code;
    if (!rc) rc = value(c, n->src[0], sidx, tmp);   /* a move is its source's value */
    return rc;
  }
  for (int i = 0; i < info->arity && !rc; i++) {
    const sym_expr *sidx[UOPC_MAX_RANK];
    broadcast_idx(c, n, n->src[i], idx, sidx);
    rc = value(c, n->src[i], sidx, &t[i]);
  }
  char text[LOWER_EXPR_MAX];
  int k = c->next_tmp++;
  *tmp = k;
  if (!rc && n->op == IR_WHERE) rc = op_text(c, n, t[1], t[2], t[0], text, sizeof text);
  else if (!rc) rc = op_text(c, n, t[0], t[1], -1, text, sizeof text);
  return rc ? rc : lower_ctx_printf(c, "const %s t%d = %s;\n", ir_dtype_ctype(n->dtype), k, text);
}

static int value(lower_ctx *c, const ir_node *n, const sym_expr *const *idx, int *tmp) {
  int found = memo_find(c, n, idx);
  if (found >= 0) { *tmp = found; return UOPC_OK; }
  int b = n == c->root ? -1 : buffer_index(c->p, n), rc;
  if (n->op != IR_INPUT && n->op != IR_CONST && b < 0 && n != c->root &&
      ir_op_info_of(n->op)->kind >= IR_KIND_REDUCE)
    return UOPC_FAIL(c->err, UOPC_E_INVALID, "lower: %s %%%d has no buffer", ir_op_info_of(n->op)->name, n->id);
  if (n->op == IR_CONST) {     /* a temporary of its own keeps the text uniform */
    char lit[64];
    literal(c, n->value, n->dtype, lit, sizeof lit);
    *tmp = c->next_tmp++;
    rc = lower_ctx_printf(c, "const %s t%d = %s;\n", ir_dtype_ctype(n->dtype), *tmp, lit);
  } else if (n->op == IR_INPUT) {
    *tmp = c->next_tmp++;
    rc = load(c, n, n->name, input_address(c, n, idx), *tmp);
  } else if (b >= 0) {
    *tmp = c->next_tmp++;
    rc = load(c, n, c->p->buffers[b].name, row_major(c, idx, n), *tmp);
  } else {
    rc = compute(c, n, idx, tmp);
  }
  return rc ? rc : memo_add(c, n, idx, *tmp);
}

/* ---- Loops. */

/* Prints line (which ends in "{\n") and indents what follows. */
static int open_brace(lower_ctx *c, const char *line) {
  int rc = lower_ctx_printf(c, "%s", line);
  c->depth++;
  return rc;
}

static int close_brace(lower_ctx *c) {
  c->depth--;
  return lower_ctx_printf(c, "}\n");
}

/* The output loops over n's shape into vars: nested `for`s (C), or one
 * grid-stride loop with the axes unravelled from its counter (CUDA). */
static int open_outer(lower_ctx *c, const ir_node *n, const sym_expr **vars, int *opened) {
  char name[16], ext[LOWER_EXPR_MAX];
  int rc = UOPC_OK;
  for (int k = 0; k < n->rank && !rc; k++) {
    snprintf(name, sizeof name, "i%d", k);
    if (!(vars[k] = loop_var(c, name, n->shape[k]))) return c->err->code;
  }
  if (c->p->backend == LOWER_C) {
    if (n->rank == 0) {   /* no loop: a block keeps a reduction's acc0 and r0 to this nest */
      *opened = 1;
      return open_brace(c, "{\n");
    }
    for (int k = 0; k < n->rank && !rc; k++) {
      rc = lower_ctx_expr(c, n->shape[k], ext, sizeof ext, "the extent");
      if (!rc) rc = lower_ctx_printf(c, "for (%s i%d = 0; i%d < %s; i%d++) {\n", c->ix, k, k, ext, k);
      c->depth++;
    }
    *opened = n->rank;
    return rc;
  }
  const sym_expr *total = sym_expr_const(c->arena, 1);
  for (int k = 0; k < n->rank; k++) total = sym_expr_mul(c->arena, total, n->shape[k]);
  rc = lower_ctx_expr(c, total, ext, sizeof ext, "the element count");
  if (!rc) rc = lower_ctx_printf(c, "const int64_t total = %s;\n", ext);
  if (!rc) rc = open_brace(c, "for (int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; g < total;"
                           " g += (int64_t)gridDim.x * blockDim.x) {\n");
  if (!rc && n->rank) rc = lower_ctx_printf(c, "int64_t rest = g;\n");
  for (int k = n->rank - 1; k >= 0 && !rc; k--) {
    rc = lower_ctx_expr(c, n->shape[k], ext, sizeof ext, "the extent");
    if (!rc && k) rc = lower_ctx_printf(c, "const %s i%d = (%s)(rest %% %s);\n%*srest /= %s;\n", c->ix, k,
                                        c->ix, ext, 2 * c->depth, "", ext);
    else if (!rc) rc = lower_ctx_printf(c, "const %s i0 = (%s)rest;\n", c->ix, c->ix);
  }
  if (!rc && n->rank == 0) rc = lower_ctx_printf(c, "(void)g;\n");
  *opened = 1;
  return rc;
}

/* A reduction's shape: what it adds (or maxes) and how. */
typedef struct reduction {
  const ir_node *n;
  uopc_dtype acc;                   /* the accumulator's dtype (n's) */
  int is_max;
  const sym_expr *const *outer;     /* the output loops' variables */
  const sym_expr *idx[UOPC_MAX_RANK];   /* the source's index, the innermost axis filled per body */
  int inner;                        /* the reduced axis that goes into the lanes */
  const sym_expr *inner_extent;
} reduction;

/* acc0[lane] = combine(acc0[lane], t<v>) in the reduction's order. */
static int accumulate(lower_ctx *c, const reduction *r, const char *lane, const char *v) {
  const char *T = ir_dtype_ctype(r->acc);
  int fl = uopc_dtype_is_float(r->acc);
  if (r->is_max && fl)
    return lower_ctx_printf(c, "acc0[%s] = (%s > acc0[%s] || %s != %s) ? %s : acc0[%s];\n", lane, v, lane,
                            v, v, v, lane);
  if (r->is_max) return lower_ctx_printf(c, "acc0[%s] = %s > acc0[%s] ? %s : acc0[%s];\n", lane, v, lane, v, lane);
  if (fl) return lower_ctx_printf(c, "acc0[%s] += %s;\n", lane, v);
  return lower_ctx_printf(c, "acc0[%s] = (%s)((%s)acc0[%s] + (%s)%s);\n", lane, T, unsigned_of(r->acc), lane,
                          unsigned_of(r->acc), v);
}

/* One element of the reduction at position j of its innermost axis. */
static int element(lower_ctx *c, reduction *r, const sym_expr *j) {
  c->n_memo = 0;                     /* a new block: earlier temporaries are out of scope */
  int t = -1, rc;
  char v[32];
  if (r->n->op == IR_MATMUL) {
    const ir_node *a = r->n->src[0], *b = r->n->src[1];
    int rank = r->n->rank, ta = -1, tb = -1;
    const sym_expr *ia[UOPC_MAX_RANK], *ib[UOPC_MAX_RANK];
    for (int k = 0; k < rank - 2; k++) ia[k] = ib[k] = r->outer[k];
    ia[rank - 2] = r->outer[rank - 2];
    ia[rank - 1] = ib[rank - 2] = j;
    ib[rank - 1] = r->outer[rank - 1];
    rc = value(c, a, ia, &ta);
    if (!rc) rc = value(c, b, ib, &tb);
    if (rc) return rc;
    t = c->next_tmp++;
    char text[LOWER_EXPR_MAX];
    ir_node mul = {.op = IR_MUL, .dtype = a->dtype, .src = {a, b}};
    rc = op_text(c, &mul, ta, tb, -1, text, sizeof text);
    if (!rc) rc = lower_ctx_printf(c, "const %s t%d = %s;\n", ir_dtype_ctype(a->dtype), t, text);
  } else {
    r->idx[r->inner] = j;
    const sym_expr *sidx[UOPC_MAX_RANK];
    for (int k = 0; k < r->n->src[0]->rank; k++)
      if (!(sidx[k] = simp(c, r->idx[k]))) return c->err->code;
    rc = value(c, r->n->src[0], sidx, &t);
  }
  if (rc) return rc;
  if (r->acc != r->n->src[0]->dtype) snprintf(v, sizeof v, "(%s)t%d", ir_dtype_ctype(r->acc), t);
  else snprintf(v, sizeof v, "t%d", t);
  return accumulate(c, r, "r1", v);
}

/* The innermost reduced axis: whole blocks of LANES, then the tail, element
 * j = r0 + r1 into lane r1 (as lab 23.1's row sum). */
static int lanes(lower_ctx *c, reduction *r) {
  char n[LOWER_EXPR_MAX];
  sym_arena *a = c->arena;
  int rc = lower_ctx_expr(c, r->inner_extent, n, sizeof n, "the reduced extent");
  const sym_expr *r0 = loop_var(c, "r0", r->inner_extent), *r1 = NULL;
  sym_dim lanes_dim = {.name = "r1", .lo = 0, .hi = LOWER_LANES - 1, .multiple_of = 1};
  if (!r0 || !(r1 = sym_expr_dim(a, &lanes_dim))) return c->err->code ? c->err->code : UOPC_E_NOMEM;
  const sym_expr *j = sym_expr_add(a, r0, r1);
  if (!rc) rc = lower_ctx_printf(c, "%s r0 = 0;\n", c->ix);
  if (!rc) rc = lower_ctx_printf(c, "for (; r0 <= %s - LANES; r0 += LANES) {\n", n);
  c->depth++;
  if (!rc) rc = lower_ctx_printf(c, "for (%s r1 = 0; r1 < LANES; r1++) {\n", c->ix);
  c->depth++;
  if (!rc) rc = element(c, r, j);
  if (!rc) rc = close_brace(c);
  if (!rc) rc = close_brace(c);
  if (!rc) rc = lower_ctx_printf(c, "for (%s r1 = 0; r0 + r1 < %s; r1++) {\n", c->ix, n);
  c->depth++;
  if (!rc) rc = element(c, r, j);
  return rc ? rc : close_brace(c);
}

static const char *init_text(lower_ctx *c, const reduction *r, char *buf, size_t size) {
  if (!r->is_max) snprintf(buf, size, "0");
  else if (r->acc == UOPC_I32) snprintf(buf, size, "INT32_MIN");
  else if (r->acc == UOPC_I64) snprintf(buf, size, "INT64_MIN");
  else literal(c, -INFINITY, r->acc, buf, size);
  return buf;
}

static int reduce_body(lower_ctx *c, const ir_node *n, const sym_expr *const *outer, const char *store) {
  reduction r = {.n = n, .acc = n->dtype, .is_max = n->op == IR_MAX, .outer = outer};
  const ir_node *src = n->src[0];
  int opened = 0, rc = UOPC_OK, pos = 0;
  char init[64], ext[LOWER_EXPR_MAX], name[16];
  if (n->op == IR_MATMUL) r.inner_extent = src->shape[src->rank - 1];
  rc = lower_ctx_printf(c, "%s acc0[LANES];\n", ir_dtype_ctype(r.acc));
  if (!rc) rc = lower_ctx_printf(c, "for (%s r1 = 0; r1 < LANES; r1++) acc0[r1] = %s;\n", c->ix,
                                 init_text(c, &r, init, sizeof init));
  for (int k = 0; k < src->rank && n->op != IR_MATMUL && !rc; k++) {
    if (!(n->axes >> k & 1u)) { r.idx[k] = outer[n->keepdims ? k : pos++]; continue; }
    if (n->keepdims) pos++;
    r.inner = k;                        /* the last reduced axis goes into the lanes */
    r.inner_extent = src->shape[k];
  }
  for (int k = 0; k < src->rank && n->op != IR_MATMUL && !rc; k++) {
    if (!(n->axes >> k & 1u) || k == r.inner) continue;
    snprintf(name, sizeof name, "r%d", 3 + opened);
    if (!(r.idx[k] = loop_var(c, name, src->shape[k]))) return c->err->code;
    rc = lower_ctx_expr(c, src->shape[k], ext, sizeof ext, "the reduced extent");
    if (!rc) rc = lower_ctx_printf(c, "for (%s %s = 0; %s < %s; %s++) {\n", c->ix, name, name, ext, name);
    c->depth++;
    opened++;
  }
  if (!rc) rc = lanes(c, &r);
  while (opened-- > 0 && !rc) rc = close_brace(c);
  if (!rc) rc = lower_ctx_printf(c, "for (%s r1 = LANES / 2; r1 > 0; r1 /= 2) {\n", c->ix);
  c->depth++;
  if (!rc) rc = lower_ctx_printf(c, "for (%s r2 = 0; r2 < r1; r2++) {\n", c->ix);
  c->depth++;
  char other[16] = "acc0[r2 + r1]";
  if (!rc) rc = accumulate(c, &r, "r2", other);
  if (!rc) rc = close_brace(c);
  if (!rc) rc = close_brace(c);
  if (rc || n->op != IR_MEAN) return rc ? rc : lower_ctx_printf(c, "%s = acc0[0];\n", store);
  const sym_expr *count = sym_expr_const(c->arena, 1);
  for (int k = 0; k < src->rank; k++)
    if (n->axes >> k & 1u) count = sym_expr_mul(c->arena, count, src->shape[k]);
  rc = lower_ctx_expr(c, count, ext, sizeof ext, "the element count of");
  return rc ? rc : lower_ctx_printf(c, "%s = acc0[0] / (%s)(%s);\n", store, ir_dtype_ctype(r.acc), ext);
}

int lower_emit_kernel(lower_ctx *c, int k) {
  const lower_buffer *buf = &c->p->buffers[c->p->kernel_buffer[k]];
  const ir_node *n = buf->node;
  const sym_expr *vars[UOPC_MAX_RANK];
  int opened = 0, rc;
  char addr[LOWER_EXPR_MAX], store[LOWER_EXPR_MAX + 64];
  c->root = n;
  c->n_memo = 0;
  rc = open_outer(c, n, vars, &opened);
  if (!rc) rc = lower_ctx_expr(c, row_major(c, vars, n), addr, sizeof addr, "the address in");
  snprintf(store, sizeof store, "%s[%s]", buf->name, addr);
  if (!rc && ir_op_info_of(n->op)->kind >= IR_KIND_REDUCE) rc = reduce_body(c, n, vars, store);
  else if (!rc) {
    int t = -1;
    rc = value(c, n, vars, &t);
    if (!rc) rc = lower_ctx_printf(c, "%s = t%d;\n", store, t);
  }
  while (opened-- > 0 && !rc) rc = close_brace(c);
  return rc;
}
