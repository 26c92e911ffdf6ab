/* tp_index.c: size arithmetic, slices and selects (given code, lab 23.4;
 * tensorjit's indexing, section 23.7).
 * A slice never needs a guard for its length: the bounds are clamped inside
 * the index expression (min and max that the simplifier removes where the
 * dims' bounds decide them), so one trace serves a 9-column and a 0-column
 * input alike. Two things are guards: which end a symbolic bound counts
 * from (Python reads a negative one from the end, and that changes the
 * expression, not only its value), and whether a select's index is inside
 * its axis (an index outside is an error, not a clamp: x[3] of 3 rows must
 * fail, where x[3:] of 3 rows is empty). Chapter 23.7, "Indexing". */
#include <stdio.h>
#include "tp_internal.h"

/* ---- Size arithmetic. */

static int64_t floordiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

static const char *const op_name[] = {"-", "//", "%", "min", "max"};

/* The op's value in this call; 0 after an error in c. */
static int64_t value_of(tp_ctx *c, tp_int_op op, int64_t a, int64_t b, tp_site at) {
  int64_t r = 0;
  switch (op) {
  case TP_INT_SUB:
    if (__builtin_sub_overflow(a, b, &r)) tp_fail(c, at, UOPC_E_INVALID, "size arithmetic overflows: %lld - %lld", (long long)a, (long long)b);
    return r;
  case TP_INT_FLOORDIV:
  case TP_INT_MOD:
    if (b == 0) return tp_fail(c, at, UOPC_E_INVALID, "integer %s by zero", op == TP_INT_MOD ? "modulo" : "division"), 0;
    if (b == -1 && a == INT64_MIN) return tp_fail(c, at, UOPC_E_INVALID, "size arithmetic overflows: %lld // -1", (long long)a), 0;
    return op == TP_INT_FLOORDIV ? floordiv(a, b) : a - b * floordiv(a, b);
  case TP_INT_MIN: return a < b ? a : b;
  case TP_INT_MAX: return a > b ? a : b;
  }
  return 0;
}

tp_int tp_int_op_at(tp_ctx *c, tp_int_op op, tp_int a, tp_int b, tp_site at) {
  tp_int r = {0, NULL};
  if (!c || c->error.code) return r;
  if ((unsigned)op > TP_INT_MAX) return tp_fail(c, at, UOPC_E_INVALID, "size operation %d", (int)op), r;
  r.value = value_of(c, op, a.value, b.value, at);
  if (c->error.code || c->mode != TP_TRACE || (!a.expr && !b.expr)) return r;
  sym_arena *ar = ir_graph_arena(c->g);
  const sym_expr *x = tp_int_expr(c, a), *y = tp_int_expr(c, b), *e = NULL;
  uopc_error err = {0};
  if (op == TP_INT_FLOORDIV || op == TP_INT_MOD) {   /* the expression's rules hold for a positive divisor */
    sym_interval iv;
    if (sym_expr_interval(y, &iv, &err)) return tp_fail_with(c, at, &err), r;
    if (iv.lo < 1) {
      char yt[128] = "?";
      sym_expr_format(y, yt, sizeof yt, NULL);
      return tp_fail(c, at, UOPC_E_INVALID, "size %s by %s, which may be %lld: a traced divisor must be >= 1 for"
                     " every size its dims allow", op_name[op], yt, (long long)iv.lo), r;
    }
  }
  const sym_expr *raw = op == TP_INT_SUB ? sym_expr_sub(ar, x, y) : op == TP_INT_FLOORDIV ? sym_expr_floordiv(ar, x, y)
                        : op == TP_INT_MOD ? sym_expr_mod(ar, x, y) : op == TP_INT_MIN ? sym_expr_min(ar, x, y)
                        : sym_expr_max(ar, x, y);
  if (sym_expr_simplify(ar, raw, &e, &err)) return tp_fail_with(c, at, &err), r;
  r.expr = e;
  return r;
}

/* ---- Indexing. */

/* axis counted from the end when negative; -1 (an error in c) outside x. */
static int axis_of(tp_ctx *c, const ir_node *x, int axis, const char *what, tp_site at) {
  int k = axis < 0 ? axis + x->rank : axis;
  if (k >= 0 && k < x->rank) return k;
  tp_fail(c, at, UOPC_E_INVALID, "%s of axis %d of a rank-%d tensor", what, axis, x->rank);
  return -1;
}

/* Where bound v of an axis of size n is, before the clamp: v, or n + v for a
 * negative v (whose sign is a guard when the dims' bounds leave it open);
 * NULL for TP_NONE or after an error in c. */
static const sym_expr *position(tp_ctx *c, tp_int v, tp_int n, tp_site at) {
  if (!v.expr && v.value == UOPC_SLICE_NONE) return NULL;
  int from_start = tp_compare_at(c, v, TP_GE, tp_int_const(c, 0), at);
  if (c->error.code) return NULL;
  return tp_int_expr(c, from_start ? v : tp_int_add(c, n, v));
}

tp_tensor *tp_slice_at(tp_ctx *c, tp_tensor *x, int axis, tp_int start, tp_int stop, int64_t step, tp_site at) {
  if (!c || c->error.code) return NULL;
  const ir_node *a = tp_operand(c, x, at);
  int k = a ? axis_of(c, a, axis, "slice", at) : -1;
  if (k < 0) return NULL;
  if (step == 0) return tp_fail(c, at, UOPC_E_INVALID, "slice step cannot be zero"), NULL;
  if (!start.expr && !stop.expr) return tp_made(c, ir_slice(c->g, a, k, start.value, stop.value, step), x, at);
  if (step < 1)
    return tp_fail(c, at, UOPC_E_INVALID, "slice step %lld with a symbolic bound: such a slice needs a step >= 1"
                   " (a negative step needs constant bounds)", (long long)step), NULL;
  tp_int n = tp_size_at(c, x, k, at);
  const sym_expr *lo = position(c, start, n, at), *hi = position(c, stop, n, at);
  return c->error.code ? NULL : tp_made(c, ir_slice_clamped(c->g, a, k, lo, hi, step), x, at);
}

tp_tensor *tp_select_at(tp_ctx *c, tp_tensor *x, int axis, tp_int index, tp_site at) {
  if (!c || c->error.code) return NULL;
  const ir_node *a = tp_operand(c, x, at);
  int k = a ? axis_of(c, a, axis, "select", at) : -1;
  if (k < 0) return NULL;
  tp_int n = tp_size_at(c, x, k, at), zero = tp_int_const(c, 0), i = index;
  if (!tp_compare_at(c, i, TP_GE, zero, at)) i = tp_int_add(c, n, i);   /* counts from the end */
  int inside = tp_compare_at(c, i, TP_GE, zero, at) && tp_compare_at(c, i, TP_LT, n, at);
  if (c->error.code) return NULL;
  if (!inside)
    return tp_fail(c, at, UOPC_E_BOUNDS, "index %lld is out of bounds for axis %d with size %lld",
                   (long long)index.value, k, (long long)n.value), NULL;
  const sym_expr *e = tp_int_expr(c, i);
  return tp_made(c, c->mode == TP_TRACE ? ir_select_clamped(c->g, a, k, e) : ir_select(c->g, a, k, e), x, at);
}

/* ---- Shape ops. */

tp_tensor *tp_permute_at(tp_ctx *c, tp_tensor *x, int n, const int *perm, tp_site at) {
  if (!c || c->error.code) return NULL;
  const ir_node *a = tp_operand(c, x, at);
  if (!a) return NULL;
  if (n != a->rank || (n && !perm))
    return tp_fail(c, at, UOPC_E_INVALID, "permute of a rank-%d tensor with %d axes", a->rank, n), NULL;
  int p[UOPC_MAX_RANK];
  for (int k = 0; k < a->rank; k++) p[k] = perm[k] < 0 ? perm[k] + a->rank : perm[k];
  return tp_made(c, ir_permute(c->g, a, p), x, at);
}

tp_tensor *tp_cast_at(tp_ctx *c, tp_tensor *x, uopc_dtype to, tp_site at) {
  if (!c || c->error.code) return NULL;
  const ir_node *a = tp_operand(c, x, at);
  return a ? tp_made(c, ir_cast(c->g, a, to), x, at) : NULL;
}

/* x under shape (rank extents, each a size), through the IR's reshape: its element counts must
 * be equal for every size the dims allow. */
static tp_tensor *reshaped(tp_ctx *c, tp_tensor *x, const ir_node *a, int rank, const sym_expr *const *shape,
                           tp_site at) {
  if (rank > UOPC_MAX_RANK) return tp_fail(c, at, UOPC_E_INVALID, "a rank-%d result (at most %d)", rank, UOPC_MAX_RANK), NULL;
  return tp_made(c, ir_reshape(c->g, a, rank, shape), x, at);
}

tp_tensor *tp_unsqueeze_at(tp_ctx *c, tp_tensor *x, int axis, tp_site at) {
  if (!c || c->error.code) return NULL;
  const ir_node *a = tp_operand(c, x, at);
  if (!a) return NULL;
  int k = axis < 0 ? axis + a->rank + 1 : axis;
  if (k < 0 || k > a->rank) return tp_fail(c, at, UOPC_E_INVALID, "unsqueeze at %d of a rank-%d tensor", axis, a->rank), NULL;
  const sym_expr *shape[UOPC_MAX_RANK + 1];
  for (int d = 0, j = 0; d <= a->rank; d++) shape[d] = d == k ? sym_expr_const(ir_graph_arena(c->g), 1) : a->shape[j++];
  return reshaped(c, x, a, a->rank + 1, shape, at);
}

tp_tensor *tp_squeeze_at(tp_ctx *c, tp_tensor *x, int axis, tp_site at) {
  if (!c || c->error.code) return NULL;
  const ir_node *a = tp_operand(c, x, at);
  int k = a ? axis_of(c, a, axis, "squeeze", at) : -1;
  if (k < 0) return NULL;
  tp_int n = tp_size_at(c, x, k, at);
  int one = tp_compare_at(c, n, TP_EQ, tp_int_const(c, 1), at);   /* a guard unless 1 is the extent's constant */
  if (c->error.code) return NULL;
  if (!one)
    return tp_fail(c, at, UOPC_E_INVALID, "squeeze of axis %d of size %lld (it must be 1)", k, (long long)n.value), NULL;
  /* a select of element 0, a view; traced, the guard (not the dims' bounds) says the axis is 1 */
  const sym_expr *zero = sym_expr_const(ir_graph_arena(c->g), 0);
  return tp_made(c, c->mode == TP_TRACE ? ir_select_clamped(c->g, a, k, zero) : ir_select(c->g, a, k, zero), x, at);
}

tp_tensor *tp_flatten_at(tp_ctx *c, tp_tensor *x, int start, int end, tp_site at) {
  if (!c || c->error.code) return NULL;
  const ir_node *a = tp_operand(c, x, at);
  if (!a) return NULL;
  if (a->rank == 0) return tp_reshape_at(c, x, 1, (tp_int[]){tp_int_const(c, 1)}, at);
  int s = axis_of(c, a, start, "flatten", at), e = s >= 0 ? axis_of(c, a, end, "flatten", at) : -1;
  if (e < 0) return NULL;
  if (e < s) return tp_fail(c, at, UOPC_E_INVALID, "flatten from axis %d to axis %d (the end is before the start)", s, e), NULL;
  int sizes[UOPC_MAX_RANK], r = 0;
  for (int d = 0; d < a->rank; d++)
    if (d < s || d > e) sizes[r++] = 1;
    else if (d == e) sizes[r++] = e - s + 1;
  return tp_made(c, ir_merge_axes(c->g, a, r, sizes), x, at);
}

tp_tensor *tp_unflatten_at(tp_ctx *c, tp_tensor *x, int axis, int n, const tp_int *sizes, tp_site at) {
  if (!c || c->error.code) return NULL;
  const ir_node *a = tp_operand(c, x, at);
  int k = a ? axis_of(c, a, axis, "unflatten", at) : -1;
  if (k < 0) return NULL;
  if (n < 1 || !sizes || a->rank - 1 + n > UOPC_MAX_RANK)
    return tp_fail(c, at, UOPC_E_INVALID, "unflatten into %d sizes of a rank-%d tensor (at most rank %d)", n, a->rank,
                   UOPC_MAX_RANK), NULL;
  int64_t count = 1;
  for (int j = 0; j < n; j++)
    if (sizes[j].value < 0 || __builtin_mul_overflow(count, sizes[j].value, &count))
      return tp_fail(c, at, UOPC_E_INVALID, "unflatten size %d is %lld (sizes are >= 0; -1 is not inferred)", j,
                     (long long)sizes[j].value), NULL;
  tp_int here = tp_size_at(c, x, k, at);
  if (!c->error.code && count != here.value)
    return tp_fail(c, at, UOPC_E_INVALID, "unflatten of axis %d of size %lld into sizes whose product is %lld", k,
                   (long long)here.value, (long long)count), NULL;
  const sym_expr *shape[UOPC_MAX_RANK];
  int r = 0;
  for (int d = 0; d < a->rank; d++)
    if (d != k) shape[r++] = a->shape[d];
    else for (int j = 0; j < n; j++) shape[r++] = tp_int_expr(c, sizes[j]);
  return c->error.code ? NULL : reshaped(c, x, a, r, shape, at);
}

/* reshape with one -1: the extent is x's element count // the others' product, and that the
 * division is exact is a guard of every call (NumPy refuses 21 elements as (-1, 2)). */
static tp_tensor *reshape_infer(tp_ctx *c, tp_tensor *x, int rank, const tp_int *shape, int axis, tp_site at) {
  const ir_node *a = tp_operand(c, x, at);
  if (!a) return NULL;
  tp_int count = tp_int_const(c, 1), known = tp_int_const(c, 1);
  for (int k = 0; k < a->rank; k++) count = tp_int_mul(c, count, tp_size_at(c, x, k, at));
  for (int k = 0; k < rank; k++) {
    if (k == axis) continue;
    if (!shape[k].expr && shape[k].value == -1)
      return tp_fail(c, at, UOPC_E_INVALID, "reshape with more than one -1 (axes %d and %d)", axis, k), NULL;
    if (shape[k].value < 0)
      return tp_fail(c, at, UOPC_E_INVALID, "reshape extent %d is %lld (extents are >= 0, or one -1)", k,
                     (long long)shape[k].value), NULL;
    known = tp_int_mul(c, known, shape[k]);
  }
  char text[256] = "";
  for (int k = 0, used = 0; k < rank && used < (int)sizeof text - 24; k++)
    used += snprintf(text + used, sizeof text - (size_t)used, "%s%lld", k ? ", " : "", (long long)shape[k].value);
  int exact = known.value != 0 && !c->error.code &&
              tp_compare_at(c, tp_int_mod(c, count, known), TP_EQ, tp_int_const(c, 0), at);
  if (c->error.code) return NULL;
  if (!exact)
    return tp_fail(c, at, UOPC_E_INVALID, "cannot reshape %lld elements into shape (%s)", (long long)count.value,
                   text), NULL;
  const sym_expr *to[UOPC_MAX_RANK];
  for (int k = 0; k < rank; k++) to[k] = k == axis ? NULL : tp_int_expr(c, shape[k]);
  return tp_made(c, ir_reshape_inferred(c->g, a, rank, to, axis), x, at);
}

/* The same elements under a new shape; one extent may be -1. */
tp_tensor *tp_reshape_at(tp_ctx *c, tp_tensor *x, int rank, const tp_int *shape, tp_site at) {
  if (!c || c->error.code) return NULL;
  const ir_node *a = tp_operand(c, x, at);
  if (!a) return NULL;
  if (rank < 0 || rank > UOPC_MAX_RANK || (rank && !shape)) {
    return tp_fail(c, at, UOPC_E_INVALID, "reshape to rank %d (at most %d)", rank, UOPC_MAX_RANK), NULL;
  }
  for (int k = 0; k < rank; k++)
    if (!shape[k].expr && shape[k].value == -1) return reshape_infer(c, x, rank, shape, k, at);
  const sym_expr *to[UOPC_MAX_RANK];
  for (int k = 0; k < rank; k++) to[k] = tp_int_expr(c, shape[k]);
  return tp_made(c, ir_reshape(c->g, a, rank, to), x, at);
}

tp_tensor *tp_diagonal_at(tp_ctx *c, tp_tensor *x, int64_t offset, tp_site at) {
  if (!c || c->error.code) return NULL;
  const ir_node *a = tp_operand(c, x, at);
  return a ? tp_made(c, ir_diagonal(c->g, a, offset), x, at) : NULL;
}

/* x tiled reps[k] times along axis k (PyTorch's repeat, NumPy's tile): x padded with leading 1s
 * to n axes, then (1, s0, 1, s1, ...) expanded to (r0, s0, r1, s1, ...) and merged pairwise. A
 * count may be a size (x.repeat(rows, 1)): the expand's extent is its expression, and that it is
 * not negative is a guard unless the dims' bounds decide it. */
tp_tensor *tp_repeat_sizes_at(tp_ctx *c, tp_tensor *x, int n, const tp_int *reps, tp_site at) {
  if (!c || c->error.code) return NULL;
  const ir_node *a = tp_operand(c, x, at);
  if (!a) return NULL;
  if (n < a->rank || 2 * n > UOPC_MAX_RANK || (n && !reps))
    return tp_fail(c, at, UOPC_E_INVALID, "repeat of a rank-%d tensor with %d counts (at least its rank, at most %d)",
                   a->rank, n, UOPC_MAX_RANK / 2), NULL;
  sym_arena *ar = ir_graph_arena(c->g);
  const sym_expr *pairs[UOPC_MAX_RANK], *wide[UOPC_MAX_RANK];
  for (int k = 0; k < n; k++) {
    int64_t v = reps[k].value, most = INT64_C(1) << 24;
    int inside = !reps[k].expr ? v >= 0 && v <= most   /* a constant needs no comparison recorded */
                               : tp_compare_at(c, reps[k], TP_GE, tp_int_const(c, 0), at) &&
                                 tp_compare_at(c, reps[k], TP_LE, tp_int_const(c, most), at);
    if (c->error.code) return NULL;
    if (!inside)
      return tp_fail(c, at, UOPC_E_INVALID, "repeat count %d is %lld (in [0, 2^24])", k, (long long)reps[k].value), NULL;
    const sym_expr *s = k < n - a->rank ? sym_expr_const(ar, 1) : a->shape[k - (n - a->rank)];
    pairs[2 * k] = sym_expr_const(ar, 1), pairs[2 * k + 1] = s;
    wide[2 * k] = tp_int_expr(c, reps[k]), wide[2 * k + 1] = s;
  }
  int two[UOPC_MAX_RANK];
  for (int k = 0; k < n; k++) two[k] = 2;
  const ir_node *p = ir_reshape(c->g, a, 2 * n, pairs);
  const ir_node *e = p ? ir_expand(c->g, p, 2 * n, wide) : NULL;
  const ir_node *m = e ? ir_merge_axes(c->g, e, n, two) : NULL;
  /* a new tensor, as PyTorch's repeat and NumPy's tile give, even where every count is 1 and the
   * moves alone would be a view: the cast to its own dtype is the copy */
  return tp_made(c, m ? ir_cast(c->g, m, m->dtype) : NULL, x, at);
}

tp_tensor *tp_repeat_at(tp_ctx *c, tp_tensor *x, int n, const int64_t *reps, tp_site at) {
  tp_int sizes[UOPC_MAX_RANK];
  if (n < 0 || n > UOPC_MAX_RANK / 2 || (n && !reps)) return tp_repeat_sizes_at(c, x, n, NULL, at);
  for (int k = 0; k < n; k++) sizes[k] = tp_int_const(c, reps[k]);
  return tp_repeat_sizes_at(c, x, n, sizes, at);
}

/* A reshape that must not copy (PyTorch's view): over an input, the layout below it must be packed
 * (ir_view_layout_reshaped); a value the graph computes is packed already. */
tp_tensor *tp_view_at(tp_ctx *c, tp_tensor *x, int rank, const tp_int *shape, tp_site at) {
  tp_tensor *r = tp_reshape_at(c, x, rank, shape, at);
  if (!r) return NULL;
  const ir_node *base = ir_view_base(r->node);
  ir_layout l;
  uopc_error why = {0};
  int strided_value = c->mode == TP_EAGER && x->value.storage && !uopc_tensor_is_contiguous(&x->value);
  if (strided_value || (base->op == IR_INPUT && ir_view_layout_reshaped(ir_graph_arena(c->g), r->node, &l, &why))) {
    if (why.code && why.code != UOPC_E_INVALID) return tp_fail_with(c, at, &why), NULL;
    return tp_fail(c, at, UOPC_E_LAYOUT, "view: this reshape needs a copy (the strides below it are not row-major"
                   " packed, as a transpose's or a column slice's are not); tp_reshape_at copies"), NULL;
  }
  return r;
}
