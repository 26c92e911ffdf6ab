/* lower_kernel.c: the lowering's second pass, one materialised node's loop
 * nest (given code; the compiler core). It reads the plan (lower_plan.c) from
 * the program and uses no later pass. The loops run over the node's shape;
 * the C back end opens one `for` per axis, the CUDA back end one grid-stride
 * loop over the element count with the axes unravelled from it. Inside, the
 * node's value at the loop variables is stored, or, for a reduction or
 * matmul, accumulated into LANES partial sums in the order the banner states.
 * Chapter 23.1, "One lowering, two back ends". */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lower_internal.h"

/* ---- Expressions in the text. */

/* *width = 64 when a part of e may leave int32, 65 when one may leave int64.
 * The C text computes every part in the index type, so every part must fit,
 * not only the whole (and an interval that saturated and then shrank, as
 * i0*s - o, still says that a part passed int64). */
static int part_width(const sym_expr *e, int *width, uopc_error *err) {
  sym_interval iv;
  int rc = sym_expr_interval(e, &iv, err);
  if (rc) return rc;
  if (iv.lo == INT64_MIN || iv.hi == INT64_MAX) *width = 65;
  else if (iv.lo < INT32_MIN || iv.hi > INT32_MAX) *width = *width > 64 ? *width : 64;
  if (e->kind == SYM_CONST || e->kind == SYM_DIM || *width > 64) return UOPC_OK;
  rc = part_width(e->a, width, err);
  return rc ? rc : part_width(e->b, width, err);
}

int lower_ctx_expr(lower_ctx *c, const sym_expr *e, char *buf, size_t size, const char *what) {
  const sym_expr *s;
  int width = 32;
  int rc = sym_expr_simplify(c->n.arena, e, &s, c->n.err);
  if (!rc) rc = part_width(s, &width, c->n.err);
  if (rc) return rc;
  if (width > 64) {
    char text[256] = "?";
    sym_expr_format(s, text, sizeof text, NULL);
    return UOPC_FAIL(c->n.err, UOPC_E_OVERFLOW, "lower: %s %s may pass int64 within the dims' bounds",
                     what, text);
  }
  if (width == 64) c->needs64 = 1;
  return sym_expr_to_c(s, buf, size, c->n.err);
}

static const sym_expr *simp(lower_ctx *c, const sym_expr *e) {
  const sym_expr *s = NULL;
  if (!e) {
    if (c->n.err->code == UOPC_OK) UOPC_FAIL(c->n.err, UOPC_E_NOMEM, "lower: out of memory");
    return NULL;
  }
  return sym_expr_simplify(c->n.arena, e, &s, c->n.err) ? NULL : s;
}

/* The variable of `for name in [0, extent)`: a dim bounded by the extent's
 * upper bound, so intervals of the addresses built from it stay sound. */
static const sym_expr *loop_var(lower_ctx *c, const char *name, const sym_expr *extent) {
  sym_interval iv;
  if (sym_expr_interval(extent, &iv, c->n.err)) return NULL;
  sym_dim d;
  memset(&d, 0, sizeof d);
  snprintf(d.name, sizeof d.name, "%s", name);
  d.hi = iv.hi > 1 ? iv.hi - 1 : 0;
  d.multiple_of = 1;
  d.loop = 1;
  return sym_expr_dim(c->n.arena, &d);
}

static const sym_expr *row_major(lower_ctx *c, const sym_expr *const *idx, const ir_node *n) {
  const sym_expr *acc = sym_expr_const(c->n.arena, 0);
  for (int k = 0; k < n->rank; k++) acc = sym_expr_add(c->n.arena, sym_expr_mul(c->n.arena, acc, n->shape[k]), idx[k]);
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
  case IR_KIND_MATH:
    if (n->op == IR_EXP && dt == UOPC_F32 && (c->p->flags & LOWER_VEC_EXP) && c->p->backend == LOWER_C)
      snprintf(buf, size, "exp_f32(t%d)", a);      /* emit.c's prelude defines it */
    else if (n->op == IR_TANH && dt == UOPC_F32 && (c->p->flags & LOWER_VEC_TANH) && c->p->backend == LOWER_C)
      snprintf(buf, size, "tanh_f32(t%d)", a);     /* as exp_f32 */
    else snprintf(buf, size, "%s%s(t%d)", info->c, f, a);
    return UOPC_OK;
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
    return UOPC_FAIL(c->n.err, UOPC_E_UNSUPPORTED, "lower: %s is not elementwise", info->name);
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
    out[j] = e->kind == SYM_CONST && e->value == 1 ? sym_expr_const(c->n.arena, 0) : idx[j + n->rank - src->rank];
  }
}

/* Row-major unravel of reshape's linear index into src's axes. Each divisor
 * is max(extent, 1): an extent 0 means no element is ever read. */
static int reshape_idx(lower_ctx *c, const ir_node *n, const sym_expr *const *idx, const sym_expr **out) {
  const ir_node *src = n->src[0];
  const sym_expr *lin = row_major(c, idx, n), *one = sym_expr_const(c->n.arena, 1);
  for (int j = src->rank - 1; j > 0 && lin; j--) {
    const sym_expr *d = simp(c, sym_expr_max(c->n.arena, src->shape[j], one));
    if (!d) return c->n.err->code;
    out[j] = sym_expr_mod(c->n.arena, lin, d);
    lin = sym_expr_floordiv(c->n.arena, lin, d);
  }
  if (src->rank > 0) out[0] = lin;
  if (sym_arena_error(c->n.arena)->code) return uopc_fail(c->n.err, sym_arena_error(c->n.arena)->code, "lower",
                                                        "%s", sym_arena_error(c->n.arena)->message);
  return lin ? UOPC_OK : c->n.err->code;
}

static int moved_idx(lower_ctx *c, const ir_node *n, const sym_expr *const *idx, const sym_expr **out) {
  const ir_node *src = n->src[0];
  sym_arena *a = c->n.arena;
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
    return UOPC_FAIL(c->n.err, UOPC_E_UNSUPPORTED, "lower: %s moves nothing", ir_op_info_of(n->op)->name);
  }
}

/* The memo's hash of (node, idx): expressions are hash-consed, so their
 * pointers are their identity. Expected O(1) per lookup; the linear scan it
 * replaces made a body's lowering quadratic in its size. */
static unsigned memo_hash(const ir_node *n, const sym_expr *const *idx) {
  uint64_t h = (uint64_t)(uintptr_t)n * 0x9e3779b97f4a7c15ull;
  for (int k = 0; k < n->rank; k++) h = (h ^ (uint64_t)(uintptr_t)idx[k]) * 0xff51afd7ed558ccdull;
  return (unsigned)(h ^ h >> 29);
}

static int memo_find(const lower_ctx *c, const ir_node *n, const sym_expr *const *idx) {
  if (!c->cap_memo) return -1;
  for (int m = c->memo_head[memo_hash(n, idx) & (unsigned)(c->cap_memo - 1)]; m >= 0; m = c->memo[m].next)
    if (c->memo[m].node == n && memcmp(c->memo[m].idx, idx, (size_t)n->rank * sizeof *idx) == 0)
      return c->memo[m].tmp;
  return -1;
}

/* Pops entries down to mark, newest first: each is its chain's head then. */
static void memo_truncate(lower_ctx *c, int mark) {
  while (c->n_memo > mark) {
    const lower_memo *m = &c->memo[--c->n_memo];
    c->memo_head[memo_hash(m->node, m->idx) & (unsigned)(c->cap_memo - 1)] = m->next;
  }
}

static int memo_add(lower_ctx *c, const ir_node *n, const sym_expr *const *idx, int tmp) {
  if (c->n_memo == c->cap_memo) {
    int cap = c->cap_memo ? 2 * c->cap_memo : 32;
    lower_memo *m = realloc(c->memo, (size_t)cap * sizeof *m);
    if (m) c->memo = m;
    int *head = m ? realloc(c->memo_head, (size_t)cap * sizeof *head) : NULL;
    if (!head) return UOPC_FAIL(c->n.err, UOPC_E_NOMEM, "lower: out of memory");
    c->memo_head = head;
    c->cap_memo = cap;
    for (int h = 0; h < cap; h++) head[h] = -1;        /* rechained oldest first: newest stays each head */
    for (int e = 0; e < c->n_memo; e++) {
      unsigned h = memo_hash(m[e].node, m[e].idx) & (unsigned)(cap - 1);
      m[e].next = head[h];
      head[h] = e;
    }
  }
  lower_memo *m = &c->memo[c->n_memo];
  m->node = n;
  memcpy(m->idx, idx, (size_t)n->rank * sizeof *idx);
  m->tmp = tmp;
  unsigned h = memo_hash(n, idx) & (unsigned)(c->cap_memo - 1);
  m->next = c->memo_head[h];
  c->memo_head[h] = c->n_memo++;
  return UOPC_OK;
}

/* `const T t<k> = buffer[address];` for an input view or a materialised node. */
static int load(lower_ctx *c, const ir_node *n, const char *name, const sym_expr *addr, int k) {
  char text[LOWER_EXPR_MAX], what[64];
  snprintf(what, sizeof what, "%s '%s': the address", n->op == IR_INPUT ? "input" : "buffer", name);
  int rc = lower_ctx_expr(c, addr, text, sizeof text, what);
  if (rc) return rc;
  return codegen_line(&c->n, "const %s t%d = %s[%s];", ir_dtype_ctype(n->dtype), k, name, text);
}

static const sym_expr *input_address(lower_ctx *c, const ir_node *n, const sym_expr *const *idx) {
  const sym_expr *addr = n->offset;
  for (int k = 0; k < n->rank; k++)
    addr = sym_expr_add(c->n.arena, addr, sym_expr_mul(c->n.arena, n->strides[k], idx[k]));
  return addr;
}

/* `const T t<k> = <op>;` over the operands' temporaries t. Kept out of
 * compute so that its line buffer is not on the stack of every level of a
 * nested expression. */
__attribute__((noinline)) static int emit_op(lower_ctx *c, const ir_node *n, const int *t, int *tmp) {
  char text[LOWER_EXPR_MAX];
  int k = c->next_tmp++, rc;
  *tmp = k;
  if (n->op == IR_WHERE) rc = op_text(c, n, t[1], t[2], t[0], text, sizeof text);
  else rc = op_text(c, n, t[0], t[1], -1, text, sizeof text);
  return rc ? rc : codegen_line(&c->n, "const %s t%d = %s;", ir_dtype_ctype(n->dtype), k, text);
}

/* A SLICE_SET or SELECT_SET at idx: the base's value, replaced by y's when
 * idx falls inside the view. y is computed inside the `if`, so none of its
 * loads leaves the view, and what it computes there is forgotten after it. */
/* Opens `if (c0 >= 0 && c1 >= 0 ...) {`, each part printed as the core
 * prints addresses. Not inlined: its line buffers stay off the stack of
 * every level of a nested expression (as emit_op's). */
__attribute__((noinline)) static int open_branch(lower_ctx *c, const ir_node *n, const sym_expr *const *cond,
                                                 int n_cond) {
  char line[LOWER_EXPR_MAX * 3 + 64], part[LOWER_EXPR_MAX];
  size_t used = (size_t)snprintf(line, sizeof line, "if (");
  for (int k = 0; k < n_cond; k++) {
    if (!cond[k]) return c->n.err->code ? c->n.err->code : UOPC_E_NOMEM;
    int rc = lower_ctx_expr(c, cond[k], part, sizeof part, "the view's bound in");
    if (rc) return rc;
    used += (size_t)snprintf(line + used, sizeof line - used, "%s(%s) >= 0", k ? " && " : "", part);
    if (used + 4 >= sizeof line) return UOPC_FAIL(c->n.err, UOPC_E_LIMIT, "lower: %%%d's condition is too long", n->id);
  }
  snprintf(line + used, sizeof line - used, ") {");
  return codegen_open(&c->n, line);
}

__attribute__((noinline)) static int set_value(lower_ctx *c, const ir_node *n, const sym_expr *const *idx, int *tmp) {
  sym_arena *a = c->n.arena;
  const ir_node *y = n->src[1];
  const sym_expr *yidx[UOPC_MAX_RANK], *cond[3];
  int n_cond = 0, base_tmp, y_tmp, rc = value(c, n->src[0], idx, &base_tmp);
  if (rc) return rc;
  const sym_expr *zero = sym_expr_const(a, 0), *one = sym_expr_const(a, 1);
  if (n->op == IR_SELECT_SET) {            /* inside when idx[axis] == index: d >= 0 and -d >= 0 */
    const sym_expr *d = simp(c, sym_expr_sub(a, idx[n->axis], n->index));
    cond[n_cond++] = d;
    cond[n_cond++] = simp(c, sym_expr_sub(a, zero, d));
    for (int k = 0, j = 0; k < n->rank; k++)
      if (k != n->axis) yidx[j++] = idx[k];
  } else {                                 /* d = (i - start) * sign(step) >= 0, d % |step| == 0, d / |step| < len */
    /* a symbolic step is >= 1 (ir_view_set proved it), so it divides as a positive constant does */
    int sym_step = n->step->kind != SYM_CONST;
    int64_t step = sym_step ? 1 : n->step->value, mag = step < 0 ? -step : step;
    const sym_expr *m = sym_step ? n->step : sym_expr_const(a, mag);
    const sym_expr *d = step > 0 ? sym_expr_sub(a, idx[n->axis], n->start) : sym_expr_sub(a, n->start, idx[n->axis]);
    const sym_expr *q = sym_expr_floordiv(a, sym_expr_max(a, d, zero), m);
    cond[n_cond++] = simp(c, d);
    cond[n_cond++] = simp(c, sym_expr_sub(a, sym_expr_sub(a, y->shape[n->axis], q), one));
    if (sym_step || mag > 1) cond[n_cond++] = simp(c, sym_expr_sub(a, zero, sym_expr_mod(a, d, m)));
    memcpy(yidx, idx, (size_t)n->rank * sizeof *idx);
    yidx[n->axis] = simp(c, q);
  }
  for (int k = 0; k < y->rank; k++)
    if (!yidx[k] && !rc) rc = c->n.err->code ? c->n.err->code : UOPC_E_NOMEM;
  if (rc) return rc;
  int k = c->next_tmp++, mark = c->n_memo;
  rc = codegen_line(&c->n, "%s t%d = t%d;", ir_dtype_ctype(n->dtype), k, base_tmp);
  if (!rc) rc = open_branch(c, n, cond, n_cond);
  if (!rc) rc = value(c, y, yidx, &y_tmp);
  if (!rc) rc = codegen_line(&c->n, "t%d = t%d;", k, y_tmp);
  memo_truncate(c, mark);                  /* values of the branch are not defined after it */
  if (!rc) rc = codegen_close(&c->n);
  *tmp = k;
  return rc;
}

static int compute(lower_ctx *c, const ir_node *n, const sym_expr *const *idx, int *tmp) {
  const ir_op_info *info = ir_op_info_of(n->op);
  int t[3] = {-1, -1, -1}, rc = UOPC_OK;
  if (++c->nesting > LOWER_NESTING_MAX) {
    c->nesting--;
    return UOPC_FAIL(c->n.err, UOPC_E_LIMIT, "lower: %%%d nests elementwise ops more than %d deep",
                     c->root->id, LOWER_NESTING_MAX);
  }
  if (info->kind == IR_KIND_SET) {
    rc = set_value(c, n, idx, tmp);
    c->nesting--;
    return rc;
  }
  if (info->kind == IR_KIND_MOVE) {
    const sym_expr *sidx[UOPC_MAX_RANK];
    rc = moved_idx(c, n, idx, sidx);
    for (int j = 0; j < n->src[0]->rank && !rc; j++)
      if (!(sidx[j] = simp(c, sidx[j]))) rc = c->n.err->code;
    if (!rc) rc = value(c, n->src[0], sidx, tmp);   /* a move is its source's value */
    c->nesting--;
    return rc;
  }
  for (int i = 0; i < info->arity && !rc; i++) {
    const sym_expr *sidx[UOPC_MAX_RANK];
    broadcast_idx(c, n, n->src[i], idx, sidx);
    rc = value(c, n->src[i], sidx, &t[i]);
  }
  c->nesting--;
  return rc ? rc : emit_op(c, n, t, tmp);
}

/* `const T t<k> = (T)(<expr>);`: a size read from the dims at run time,
 * never pasted. Not inlined, as emit_op: its buffer stays off value's stack. */
__attribute__((noinline)) static int emit_size(lower_ctx *c, const ir_node *n, int *tmp) {
  char text[LOWER_EXPR_MAX];
  *tmp = c->next_tmp++;
  int rc = lower_ctx_expr(c, n->index, text, sizeof text, "the size");
  return rc ? rc : codegen_line(&c->n, "const %s t%d = (%s)(%s);", ir_dtype_ctype(n->dtype), *tmp,
                                ir_dtype_ctype(n->dtype), text);
}

static int value(lower_ctx *c, const ir_node *n, const sym_expr *const *idx, int *tmp) {
  int found = memo_find(c, n, idx);
  if (found >= 0) { *tmp = found; return UOPC_OK; }
  int b = n == c->root ? -1 : buffer_index(c->p, n), rc;
  if (n->op != IR_INPUT && n->op != IR_CONST && n->op != IR_SIZE && b < 0 && n != c->root &&
      ir_op_info_of(n->op)->kind >= IR_KIND_REDUCE)
    return UOPC_FAIL(c->n.err, UOPC_E_INVALID, "lower: %s %%%d has no buffer", ir_op_info_of(n->op)->name, n->id);
  if (n->op == IR_CONST) {     /* a temporary of its own keeps the text uniform */
    char lit[64];
    literal(c, n->value, n->dtype, lit, sizeof lit);
    *tmp = c->next_tmp++;
    rc = codegen_line(&c->n, "const %s t%d = %s;", ir_dtype_ctype(n->dtype), *tmp, lit);
  } else if (n->op == IR_SIZE) {
    rc = emit_size(c, n, tmp);
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

/* An extent whose upper bound is below 1: its loop never runs. */
static int always_empty(lower_ctx *c, const sym_expr *extent, int *empty) {
  sym_interval iv;
  int rc = sym_expr_interval(extent, &iv, c->n.err);
  *empty = !rc && iv.hi < 1;
  return rc;
}

/* The factors of a nest's work: its output's extents, and the extents each
 * output element reduces (a matmul's k). */
static int work_factors(const ir_node *n, const sym_expr **f) {
  int nf = 0;
  const ir_node *src = ir_op_info_of(n->op)->kind >= IR_KIND_REDUCE ? n->src[0] : NULL;
  for (int k = 0; k < n->rank; k++) f[nf++] = n->shape[k];
  if (src && n->op == IR_MATMUL) f[nf++] = src->shape[src->rank - 1];
  else if (src)
    for (int k = 0; k < src->rank; k++)
      if (n->axes >> k & 1u) f[nf++] = src->shape[k];
  return nf;
}

/* Whether a printed size expression is one name or number, so that it needs no parentheses as
 * an operand of * or %: an extent such as b*n is one operand, not two. */
static int is_atom(const char *ext) {
  return strspn(ext, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789") == strlen(ext);
}

/* The work is multiplied out in double: a product of extents may pass int64
 * where no buffer does (a matmul's m*n*k), and the test needs no exactness. */
int lower_ctx_parallel(lower_ctx *c, const ir_node *n, char *cond, size_t size, lower_split *split) {
  *split = LOWER_SPLIT_NEVER;
  cond[0] = 0;
  if (!(c->p->flags & LOWER_PARALLEL) || !(c->p->flags & LOWER_FUSE) || c->p->backend != LOWER_C) return UOPC_OK;
  int outer = lower_plan_matmul_rows(c->p, n) || lower_reduces_serially(n) ? n->rank - 1 : n->rank;
  if (outer < 1) return UOPC_OK;                           /* no loop over outputs to split */
  const sym_expr *f[2 * UOPC_MAX_RANK + 1];
  char ext[LOWER_EXPR_MAX];
  int nf = work_factors(n, f), rc = UOPC_OK;
  double lo = 1, hi = 1;
  for (int k = 0; k < nf && !rc; k++) {
    sym_interval iv;
    rc = sym_expr_interval(f[k], &iv, c->n.err);
    lo *= (double)iv.lo;
    hi *= (double)iv.hi;
  }
  if (rc || hi < LOWER_PARALLEL_WORK) return rc;              /* never enough work to share */
  if (lo >= LOWER_PARALLEL_WORK) { *split = LOWER_SPLIT_ALWAYS; return UOPC_OK; }
  size_t used = 0;
  for (int k = 0; k < nf && !rc; k++) {
    rc = lower_ctx_expr(c, f[k], ext, sizeof ext, "the work of");
    int atom = is_atom(ext);
    used += (size_t)snprintf(cond + used, size - used, "%s%s%s%s", k ? " * " : "(double)", atom ? "" : "(", ext,
                             atom ? "" : ")");
    if (used + 32 >= size) return UOPC_FAIL(c->n.err, UOPC_E_LIMIT, "lower: %%%d's work is too long", n->id);
  }
  snprintf(cond + used, size - used, " >= %d", LOWER_PARALLEL_WORK);
  *split = rc ? LOWER_SPLIT_NEVER : LOWER_SPLIT_IF;
  return rc;
}

/* Before a nest's outermost loop: the pragma, when the nest is being
 * written for OpenMP's threads. */
int lower_ctx_open_parallel(lower_ctx *c) {
  if (!c->parallel_next) return UOPC_OK;
  c->parallel_next = 0;
  c->uses_openmp = 1;
  return codegen_line(&c->n, "#pragma omp parallel for schedule(static)");
}

/* The output loops over n's shape into vars: one codegen_open_loop per axis
 * (C), or one grid-stride loop with the axes unravelled from its counter
 * (CUDA). *opened counts the braces to close; *empty says no loop runs. */
static int open_outer(lower_ctx *c, const ir_node *n, const sym_expr **vars, int *opened, int *empty) {
  char name[16], ext[LOWER_EXPR_MAX];
  int rc = UOPC_OK;
  *opened = 0;
  *empty = 0;
  for (int k = 0; k < n->rank && !rc && !*empty; k++) rc = always_empty(c, n->shape[k], empty);
  if (rc || *empty) return rc ? rc : codegen_line(&c->n, "/* no element: an extent is 0 for every binding */");
  if (c->p->backend == LOWER_C) {
    if (n->rank) rc = lower_ctx_open_parallel(c);
    for (int k = 0; k < n->rank && !rc; k++, ++*opened) {
      snprintf(name, sizeof name, "i%d", k);
      rc = codegen_open_loop(&c->n, name, n->shape[k], &vars[k], c->n.err);
    }
    if (n->rank == 0) {       /* a block of its own: two scalar reductions both declare acc0 */
      *opened = 1;
      return codegen_open(&c->n, "{");
    }
    return rc;
  }
  const sym_expr *total = sym_expr_const(c->n.arena, 1);
  for (int k = 0; k < n->rank && !rc; k++) {
    snprintf(name, sizeof name, "i%d", k);
    if (!(vars[k] = loop_var(c, name, n->shape[k]))) return c->n.err->code;
    total = sym_expr_mul(c->n.arena, total, n->shape[k]);
  }
  rc = lower_ctx_expr(c, total, ext, sizeof ext, "the element count");
  if (!rc) rc = codegen_line(&c->n, "const int64_t total = %s;", ext);
  if (!rc) rc = codegen_open(&c->n, "for (int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; g < total;"
                             " g += (int64_t)gridDim.x * blockDim.x) {");
  *opened = 1;
  if (!rc && n->rank) rc = codegen_line(&c->n, "int64_t rest = g;");
  for (int k = n->rank - 1; k >= 0 && !rc; k--) {
    rc = lower_ctx_expr(c, n->shape[k], ext, sizeof ext, "the extent");
    int atom = is_atom(ext);
    const char *open = atom ? "" : "(", *close = atom ? "" : ")";
    if (!rc && k) rc = codegen_line(&c->n, "const %s i%d = (%s)(rest %% %s%s%s);", c->n.ix, k, c->n.ix, open, ext,
                                    close);
    if (!rc && k) rc = codegen_line(&c->n, "rest /= %s%s%s;", open, ext, close);
    else if (!rc) rc = codegen_line(&c->n, "const %s i0 = (%s)rest;", c->n.ix, c->n.ix);
  }
  if (!rc && n->rank == 0) rc = codegen_line(&c->n, "(void)g;");
  return rc;
}

/* A reduction: what it adds (or maxes) and how. */
typedef struct reduction {
  lower_ctx *c;
  const ir_node *n;
  uopc_dtype acc;                   /* the accumulator's dtype (n's) */
  int is_max;
  const sym_expr *const *outer;     /* the output loops' variables */
  const sym_expr *idx[UOPC_MAX_RANK];   /* the source's index; the lane axis filled per element */
  int inner;                        /* the reduced axis that goes into the lanes */
  const sym_expr *inner_extent;
  int tmp_base;                     /* each element block numbers its temporaries from here */
} reduction;

/* acc = combine(acc, v), acc the text of an lvalue. */
static int accumulate(lower_ctx *c, const reduction *r, const char *acc, const char *v) {
  const char *T = ir_dtype_ctype(r->acc), *U = unsigned_of(r->acc);
  int fl = uopc_dtype_is_float(r->acc);
  if (r->is_max && fl)   /* NumPy's max: a NaN wins */
    return codegen_line(&c->n, "%s = (%s > %s || %s != %s) ? %s : %s;", acc, v, acc, v, v, v, acc);
  if (r->is_max) return codegen_line(&c->n, "%s = %s > %s ? %s : %s;", acc, v, acc, v, acc);
  if (fl) return codegen_line(&c->n, "%s += %s;", acc, v);
  return codegen_line(&c->n, "%s = (%s)((%s)%s + (%s)%s);", acc, T, U, acc, U, v);
}

static int combine_cb(void *ctx, codegen_nest *n, const char *acc, const char *value) {
  reduction *r = ctx;
  (void)n;
  return accumulate(r->c, r, acc, value);
}

/* The value text of temporary t as the accumulator's type. */
static void as_acc(const reduction *r, uopc_dtype from, int t, char *value, size_t size) {
  if (r->acc != from) snprintf(value, size, "(%s)t%d", ir_dtype_ctype(r->acc), t);
  else snprintf(value, size, "t%d", t);
}

/* The element at position j of the lane axis: codegen_emit_lanes calls it
 * once for the blocks and once for the tail, each a scope of its own. */
static int element_cb(void *ctx, codegen_nest *n, const sym_expr *j, char *text, size_t size) {
  reduction *r = ctx;
  lower_ctx *c = r->c;
  (void)n;
  memo_truncate(c, 0);
  c->next_tmp = r->tmp_base;
  int t = -1, rc;
  if (r->n->op == IR_MATMUL) {
    const ir_node *a = r->n->src[0], *b = r->n->src[1];
    int rank = r->n->rank, ta = -1, tb = -1;
    const sym_expr *ia[UOPC_MAX_RANK], *ib[UOPC_MAX_RANK];
    for (int k = 0; k < rank - 2; k++) ia[k] = ib[k] = r->outer[k];
    ia[rank - 2] = r->outer[rank - 2];
    ib[rank - 1] = r->outer[rank - 1];
    if (!(ia[rank - 1] = ib[rank - 2] = simp(c, j))) return c->n.err->code;
    rc = value(c, a, ia, &ta);
    if (!rc) rc = value(c, b, ib, &tb);
    if (rc) return rc;
    t = c->next_tmp++;
    char expr[LOWER_EXPR_MAX];
    ir_node mul = {.op = IR_MUL, .dtype = a->dtype, .src = {a, b}};
    rc = op_text(c, &mul, ta, tb, -1, expr, sizeof expr);
    if (!rc) rc = codegen_line(&c->n, "const %s t%d = %s;", ir_dtype_ctype(a->dtype), t, expr);
    as_acc(r, a->dtype, t, text, size);
    return rc;
  }
  r->idx[r->inner] = j;
  const sym_expr *sidx[UOPC_MAX_RANK];
  for (int k = 0; k < r->n->src[0]->rank; k++)
    if (!(sidx[k] = simp(c, r->idx[k]))) return c->n.err->code;
  rc = value(c, r->n->src[0], sidx, &t);
  as_acc(r, r->n->src[0]->dtype, t, text, size);
  return rc;
}

static const char *init_text(lower_ctx *c, const reduction *r, char *buf, size_t size) {
  if (!r->is_max) literal(c, 0, r->acc, buf, size);
  else if (r->acc == UOPC_I32) snprintf(buf, size, "INT32_MIN");
  else if (r->acc == UOPC_I64) snprintf(buf, size, "INT64_MIN");
  else literal(c, -INFINITY, r->acc, buf, size);
  return buf;
}

/* Opens a loop over every reduced axis of n but the lane axis (skip: -1 for
 * none) as r3, r4, ... and fills the source index: reduced axes from those
 * loops, the others from outer. *empty: some reduced axis has no element. */
static int open_reduced(lower_ctx *c, const ir_node *n, const sym_expr *const *outer, int skip,
                        const sym_expr **idx, int *opened, int *empty) {
  const ir_node *src = n->src[0];
  char name[16];
  int rc = UOPC_OK;
  *empty = 0;
  for (int k = 0; k < src->rank && !rc; k++)
    if (n->axes >> k & 1u) {
      int e = 0;
      rc = always_empty(c, src->shape[k], &e);
      *empty |= e;
    }
  for (int k = 0, pos = 0; k < src->rank && !rc; k++) {
    if (!(n->axes >> k & 1u)) { idx[k] = outer[n->keepdims ? k : pos++]; continue; }
    if (k == skip || *empty) continue;
    snprintf(name, sizeof name, "r%d", 3 + *opened);
    rc = codegen_open_loop(&c->n, name, src->shape[k], &idx[k], c->n.err);
    if (!rc) ++*opened;
  }
  return rc;
}

static int reduced_count(lower_ctx *c, const ir_node *n, char *buf, size_t size) {
  const sym_expr *count = sym_expr_const(c->n.arena, 1);
  for (int k = 0; k < n->src[0]->rank; k++)
    if (n->axes >> k & 1u) count = sym_expr_mul(c->n.arena, count, n->src[0]->shape[k]);
  return lower_ctx_expr(c, count, buf, size, "the element count of");
}

static int store_result(lower_ctx *c, const reduction *r, const char *store, const char *acc) {
  char count[LOWER_EXPR_MAX];
  if (r->n->op != IR_MEAN) return codegen_line(&c->n, "%s = %s;", store, acc);
  int rc = reduced_count(c, r->n, count, sizeof count);
  return rc ? rc : codegen_line(&c->n, "%s = %s / (%s)(%s);", store, acc, ir_dtype_ctype(r->acc), count);
}

/* 1 in *empty when a reduced axis of n (or matmul's inner one) never has an element. */
static int reduced_empty(lower_ctx *c, const ir_node *n, int *empty) {
  const ir_node *src = n->src[0];
  int rc = UOPC_OK, e = 0;
  *empty = 0;
  for (int k = 0; k < src->rank && !rc; k++)
    if (n->op == IR_MATMUL ? k == src->rank - 1 : (int)(n->axes >> k & 1u)) {
      rc = always_empty(c, src->shape[k], &e);
      *empty |= e;
    }
  return rc;
}

/* The lane form (chapter 23.1, "The order of a sum"): the last reduced axis
 * through codegen_emit_lanes. Other reduced axes loop around it, each of
 * their positions (row-major) giving one lane result, added one at a time. */
static int lanes_body(lower_ctx *c, const ir_node *n, const sym_expr *const *outer, const char *store) {
  reduction r = {.c = c, .n = n, .acc = n->dtype, .is_max = n->op == IR_MAX, .outer = outer};
  const ir_node *src = n->src[0];
  const char *T = ir_dtype_ctype(n->dtype);
  int opened = 0, empty = 0, others = 0, rc;
  char init[64];
  init_text(c, &r, init, sizeof init);
  if (n->op == IR_MATMUL) r.inner_extent = src->shape[src->rank - 1];
  for (int k = 0; k < src->rank && n->op != IR_MATMUL; k++)
    if (n->axes >> k & 1u) { others += r.inner_extent != NULL; r.inner = k; r.inner_extent = src->shape[k]; }
  rc = reduced_empty(c, n, &empty);
  if (!rc && empty) {          /* nothing to add: the identity (a mean: 0/0, NaN as NumPy's) */
    rc = codegen_line(&c->n, "const %s acc = %s;", T, init);
    return rc ? rc : store_result(c, &r, store, "acc");
  }
  if (!rc && others) rc = codegen_line(&c->n, "%s acc = %s;", T, init);
  if (!rc && n->op != IR_MATMUL) rc = open_reduced(c, n, outer, r.inner, r.idx, &opened, &empty);
  r.tmp_base = c->next_tmp;
  codegen_reducer red = {T, init, element_cb, combine_cb, &r};
  if (!rc) rc = codegen_emit_lanes(&c->n, r.inner_extent, &red, c->n.err);
  if (!rc && others) rc = accumulate(c, &r, "acc", "acc0[0]");
  while (opened-- > 0 && !rc) rc = codegen_close(&c->n);
  return rc ? rc : store_result(c, &r, store, others ? "acc" : "acc0[0]");
}

/* ---- Reductions that keep the source's last axis: each output element adds
 * its elements one at a time, in row-major order of the reduced axes. */

int lower_reduces_serially(const ir_node *n) {
  if (ir_op_info_of(n->op)->kind != IR_KIND_REDUCE) return 0;
  return !(n->axes >> (n->src[0]->rank - 1) & 1u);
}

/* acc = combine(acc, the source at idx), in a body of its own. */
static int add_source(lower_ctx *c, const reduction *r, const sym_expr **idx, const char *acc) {
  const sym_expr *sidx[UOPC_MAX_RANK];
  int t = -1, rc = UOPC_OK;
  char v[64];
  memo_truncate(c, 0);
  for (int k = 0; k < r->n->src[0]->rank && !rc; k++)
    if (!(sidx[k] = simp(c, idx[k]))) rc = c->n.err->code;
  if (!rc) rc = value(c, r->n->src[0], sidx, &t);
  if (rc) return rc;
  as_acc(r, r->n->src[0]->dtype, t, v, sizeof v);
  return accumulate(c, r, acc, v);
}

/* CUDA: one thread per output element, its own accumulator. */
static int serial_body(lower_ctx *c, const ir_node *n, const sym_expr *const *outer, const char *store) {
  reduction r = {.c = c, .n = n, .acc = n->dtype, .is_max = n->op == IR_MAX, .outer = outer};
  const sym_expr *idx[UOPC_MAX_RANK];
  char init[64];
  int opened = 0, empty = 0;
  int rc = codegen_line(&c->n, "%s acc = %s;", ir_dtype_ctype(r.acc), init_text(c, &r, init, sizeof init));
  if (!rc) rc = open_reduced(c, n, outer, -1, idx, &opened, &empty);
  if (!rc && !empty) rc = add_source(c, &r, idx, "acc");
  while (opened-- > 0 && !rc) rc = codegen_close(&c->n);
  return rc ? rc : store_result(c, &r, store, "acc");
}

/* C: the loops interchanged so the kept last axis is innermost (contiguous
 * and vectorised) and the output itself is the accumulator; the same order
 * of additions per element as serial_body. */
static int serial_kernel_c(lower_ctx *c, const lower_buffer *buf) {
  const ir_node *n = buf->node;
  reduction r = {.c = c, .n = n, .acc = n->dtype, .is_max = n->op == IR_MAX};
  const sym_expr *vars[UOPC_MAX_RANK], *idx[UOPC_MAX_RANK];
  char addr[LOWER_EXPR_MAX], at[LOWER_EXPR_MAX + 64], init[64], name[16], count[LOWER_EXPR_MAX];
  int last = n->rank - 1, outer = 0, opened = 0, empty = 0, rc = UOPC_OK;
  for (int k = 0; k <= last && !rc && !empty; k++) rc = always_empty(c, n->shape[k], &empty);
  if (rc || empty) return rc ? rc : codegen_line(&c->n, "/* no element: an extent is 0 for every binding */");
  if (last > 0) rc = lower_ctx_open_parallel(c);
  for (int k = 0; k < last && !rc; k++, outer++) {
    snprintf(name, sizeof name, "i%d", k);
    rc = codegen_open_loop(&c->n, name, n->shape[k], &vars[k], c->n.err);
  }
  r.outer = vars;
  snprintf(name, sizeof name, "i%d", last);
  init_text(c, &r, init, sizeof init);
  /* The kept axis is opened three times (set, add, divide), each its own scope. */
  for (int pass = 0; pass < 3 && !rc; pass++) {
    if (pass == 1) rc = open_reduced(c, n, vars, -1, idx, &opened, &empty);
    if (rc || (pass == 1 && empty) || (pass == 2 && n->op != IR_MEAN)) continue;
    rc = codegen_open_loop(&c->n, name, n->shape[last], &vars[last], c->n.err);
    if (!rc) rc = lower_ctx_expr(c, row_major(c, vars, n), addr, sizeof addr, "the address in");
    snprintf(at, sizeof at, "%s[%s]", buf->name, addr);
    if (!rc && pass == 0) rc = codegen_line(&c->n, "%s = %s;", at, init);
    if (!rc && pass == 1) rc = add_source(c, &r, idx, at);
    if (!rc && pass == 2) rc = reduced_count(c, n, count, sizeof count);
    if (!rc && pass == 2) rc = codegen_line(&c->n, "%s /= (%s)(%s);", at, ir_dtype_ctype(r.acc), count);
    if (!rc) rc = codegen_close(&c->n);
    while (pass == 1 && opened-- > 0 && !rc) rc = codegen_close(&c->n);
  }
  while (outer-- > 0 && !rc) rc = codegen_close(&c->n);
  return rc;
}

int lower_emit_kernel(lower_ctx *c, int k) {
  const lower_buffer *buf = &c->p->buffers[c->p->kernel_buffer[k]];
  const ir_node *n = buf->node;
  const sym_expr *vars[UOPC_MAX_RANK];
  int opened = 0, empty = 0, rc;
  char addr[LOWER_EXPR_MAX], store[LOWER_EXPR_MAX + 64], what[64];
  c->root = n;
  memo_truncate(c, 0);
  c->next_tmp = 0;
  snprintf(what, sizeof what, "buffer '%s': the address", buf->name);
  if (lower_reduces_serially(n) && c->p->backend == LOWER_C) return serial_kernel_c(c, buf);
  rc = open_outer(c, n, vars, &opened, &empty);
  if (rc || empty) return rc;
  rc = lower_ctx_expr(c, row_major(c, vars, n), addr, sizeof addr, what);
  snprintf(store, sizeof store, "%s[%s]", buf->name, addr);
  if (!rc && lower_reduces_serially(n)) rc = serial_body(c, n, vars, store);
  else if (!rc && ir_op_info_of(n->op)->kind >= IR_KIND_REDUCE) rc = lanes_body(c, n, vars, store);
  else if (!rc) {
    int t = -1;
    rc = value(c, n, vars, &t);
    if (!rc) rc = codegen_line(&c->n, "%s = t%d;", store, t);
  }
  while (opened-- > 0 && !rc) rc = codegen_close(&c->n);
  return rc;
}

int lower_emit_value(codegen_nest *n, lower_backend backend, const ir_node *node, const sym_expr *const *idx,
                     int *tmp) {
  lower_program none = {.backend = backend};   /* no buffers: only inputs and fused values */
  lower_ctx c = {.n = *n, .p = &none};
  int rc = value(&c, node, idx, tmp);
  n->t = c.n.t;
  free(c.memo);
  free(c.memo_head);
  return rc;
}

/* ---- For lower_matmul.c, which writes its own loops around these. */

int lower_ctx_value(lower_ctx *c, const ir_node *n, const sym_expr *const *idx, int *tmp) {
  return value(c, n, idx, tmp);
}

void lower_ctx_forget(lower_ctx *c, int mark) { memo_truncate(c, mark); }

const sym_expr *lower_ctx_simp(lower_ctx *c, const sym_expr *e) { return simp(c, e); }

int lower_ctx_loads_rows(const lower_ctx *c, const ir_node *n) {
  if (n->op == IR_INPUT) {
    const sym_expr *s = n->strides[n->rank - 1];
    return s->kind == SYM_CONST && s->value == 1;
  }
  return n != c->root && buffer_index(c->p, n) >= 0;
}

int lower_ctx_address(lower_ctx *c, const ir_node *n, const sym_expr *const *idx, char *at, size_t size) {
  const char *name = n->op == IR_INPUT ? n->name : c->p->buffers[buffer_index(c->p, n)].name;
  const sym_expr *addr = n->op == IR_INPUT ? input_address(c, n, idx) : row_major(c, idx, n);
  char text[LOWER_EXPR_MAX], what[64];
  snprintf(what, sizeof what, "%s '%s': the address", n->op == IR_INPUT ? "input" : "buffer", name);
  int rc = lower_ctx_expr(c, addr, text, sizeof text, what);
  if (!rc) snprintf(at, size, "%s[%s]", name, text);
  return rc;
}

const sym_expr *lower_ctx_row_major(lower_ctx *c, const sym_expr *const *idx, const ir_node *n) {
  return row_major(c, idx, n);
}

void lower_ctx_literal(const lower_ctx *c, double v, uopc_dtype dt, char *buf, size_t size) {
  literal(c, v, dt, buf, size);
}
