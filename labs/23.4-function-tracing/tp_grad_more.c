/* tp_grad_more.c: the backward rules of the ops beyond the lab's fifteen
 * (given code, lab 23.4; tensorjit's training, section 23.7): abs, log,
 * sqrt, pow, minimum, the max reduction, and the indexing ops of tp_index.c
 * (slice, select, squeeze, diagonal, repeat, cast). Written with the tensor
 * API and the IR's builders, as tp_grad_given.c's are, so they compute in
 * eager mode and record under the tracer with symbolic sizes. Where a
 * derivative is not unique the rule does what PyTorch does (chapter 23.4,
 * "Where the derivative is not unique"). */
#include "tp_internal.h"

/* ---- Small steps: a handle for a node built here, constants, an operand
 * summed back over the axes broadcasting stretched (the student's). */

static tp_tensor *made(tp_ctx *c, const ir_node *n, tp_tensor *from, tp_site at) {
  return c->error.code ? NULL : tp_made(c, n, from, at);
}

static tp_tensor *num(tp_ctx *c, double v, const tp_tensor *like, tp_site at) {
  return tp_scalar_at(c, v, like->ref->dtype, at);
}

static tp_tensor *unb(tp_ctx *c, tp_tensor *g, const tp_tensor *like, tp_site at) {
  tp_tensor *out = NULL;
  uopc_error err = {0};
  if (!g || tp_status(c)) return NULL;
  return tp_student(c, at, tp_unbroadcast(c, g, like, at, &out, &err), &err) ? NULL : out;
}

#define MUL(x, y) tp_binary_at(c, IR_MUL, (x), (y), at)
#define DIV(x, y) tp_binary_at(c, IR_DIV, (x), (y), at)
#define CMP(op, x, y) tp_binary_at(c, (op), (x), (y), at)
#define WHERE(w, x, y) tp_where_at(c, (w), (x), (y), at)

/* ---- Elementwise rules. */

/* sign(x): 1, -1, 0 at 0 (PyTorch's abs'(0)), NaN at NaN (x * 0 there). */
static tp_tensor *sign(tp_ctx *c, tp_tensor *x, tp_site at) {
  tp_tensor *zero = num(c, 0, x, at);
  return WHERE(CMP(IR_GT, x, zero), num(c, 1, x, at), WHERE(CMP(IR_LT, x, zero), num(c, -1, x, at), MUL(x, zero)));
}

/* y = a^b. d/da = b a^(b-1), 0 where b == 0 (a^0 is 1 even at a = 0);
 * d/db = y log a, 0 where a == 0 and b >= 0 (PyTorch's limit), NaN for
 * a < 0 (log of a negative, as PyTorch's real pow gives). */
static void pow_rule(tp_ctx *c, tp_tensor *y, tp_tensor *gy, tp_tensor **gx, tp_site at) {
  tp_tensor *a = y->src[0], *b = y->src[1], *zero = num(c, 0, y, at);
  tp_tensor *da = MUL(b, tp_binary_at(c, IR_POW, a, tp_binary_at(c, IR_SUB, b, num(c, 1, y, at), at), at));
  da = WHERE(CMP(IR_EQ, b, zero), zero, da);
  tp_tensor *ylog = MUL(y, tp_unary_at(c, IR_LOG, a, at));
  tp_tensor *db = WHERE(CMP(IR_EQ, a, zero), WHERE(CMP(IR_GE, b, zero), zero, ylog), ylog);
  gx[0] = unb(c, MUL(gy, da), a, at);
  gx[1] = unb(c, MUL(gy, db), b, at);
}

/* minimum (maximum's mirror): the smaller operand takes the gradient, a
 * tie splits it evenly, and a NaN operand (neither smaller nor larger)
 * passes it to both, as PyTorch's where(a == b, g / 2, g) masked does. */
static void minimum_rule(tp_ctx *c, tp_tensor *y, tp_tensor *gy, tp_tensor **gx, tp_site at) {
  tp_tensor *a = y->src[0], *b = y->src[1], *zero = num(c, 0, y, at);
  tp_tensor *tie = CMP(IR_EQ, a, b), *half = DIV(gy, num(c, 2, y, at));
  gx[0] = unb(c, WHERE(tie, half, WHERE(CMP(IR_GT, a, b), zero, gy)), a, at);
  gx[1] = unb(c, WHERE(tie, half, WHERE(CMP(IR_LT, a, b), zero, gy)), b, at);
}

/* ---- The max reduction: the gradient split evenly over the elements equal
 * to the max (PyTorch's amax), or over the NaNs when one won. */

/* t brought to x's shape from the reduction's keepdims shape (axes 1). */
static tp_tensor *spread(tp_ctx *c, tp_tensor *t, tp_tensor *x, unsigned axes, tp_site at) {
  tp_int kept[UOPC_MAX_RANK], full[UOPC_MAX_RANK];
  int rank = x->ref->rank;
  for (int k = 0; k < rank; k++) {
    full[k] = tp_size_at(c, x, k, at);
    kept[k] = axes >> k & 1u ? tp_int_const(c, 1) : full[k];
  }
  return tp_expand_at(c, tp_reshape_at(c, t, rank, kept, at), rank, full, at);
}

static void max_rule(tp_ctx *c, tp_tensor *y, tp_tensor *gy, tp_tensor **gx, tp_site at) {
  tp_tensor *x = y->src[0];
  unsigned axes = y->node->axes;
  tp_tensor *nan = CMP(IR_NE, x, x);
  tp_tensor *hit = WHERE(nan, nan, CMP(IR_EQ, x, spread(c, y, x, axes, at)));   /* x NaN: the max is NaN */
  tp_tensor *count = tp_reduce_at(c, IR_SUM, tp_cast_at(c, hit, y->ref->dtype, at), axes, 1, at);
  tp_tensor *per = DIV(spread(c, gy, x, axes, at), spread(c, count, x, axes, at));
  gx[0] = WHERE(hit, per, num(c, 0, y, at));
}

/* ---- Moves: the chain of IR nodes an indexing op recorded (a repeat is a
 * reshape, an expand, a merge and a cast; a diagonal a merge and a slice),
 * walked from the op's node down to its operand, each node's adjoint applied
 * to the gradient in turn. */

/* zeros of n's shape and dtype. */
static const ir_node *zeros_of(tp_ctx *c, const ir_node *n) {
  const ir_node *z = ir_const(c->g, 0, n->dtype);
  return n->rank ? ir_expand(c->g, z, n->rank, n->shape) : z;
}

/* The sum of g over the axes an expand of src added or stretched, under
 * src's shape. */
static const ir_node *unexpand(tp_ctx *c, const ir_node *n, const ir_node *g) {
  const ir_node *src = n->src[0];
  int lead = n->rank - src->rank;
  unsigned axes = lead ? (1u << lead) - 1u : 0u;
  for (int k = 0; k < src->rank; k++)
    if (src->shape[k] != n->shape[k + lead]) axes |= 1u << (k + lead);   /* extent 1 stretched */
  if (!axes) return g;
  const ir_node *s = ir_reduce(c->g, IR_SUM, g, axes, 0);
  return src->rank ? ir_reshape(c->g, s, src->rank, src->shape) : s;
}

/* The gradient g of node n (a handle) as the gradient of n's operand; NULL
 * with no error when none flows (a cast to an integer). */
static tp_tensor *move_adjoint(tp_ctx *c, const ir_node *n, tp_tensor *g, tp_site at) {
  const ir_node *src = n->src[0], *gn = tp_operand(c, g, at), *r = NULL;
  if (!gn) return NULL;
  switch (n->op) {
  case IR_RESHAPE: r = ir_reshape(c->g, gn, src->rank, src->shape); break;
  case IR_EXPAND: r = unexpand(c, n, gn); break;
  case IR_PERMUTE: {
    int inverse[UOPC_MAX_RANK];
    for (int k = 0; k < n->rank; k++) inverse[n->perm[k]] = k;
    r = ir_permute(c->g, gn, inverse);
    break;
  }
  case IR_CAST:
    if (!uopc_dtype_is_float(src->dtype) || !uopc_dtype_is_float(n->dtype)) return NULL;
    r = src->dtype == n->dtype ? gn : ir_cast(c->g, gn, src->dtype);
    break;
  case IR_SLICE:
  case IR_SELECT: {   /* g scattered into zeros of the operand's runtime shape */
    const ir_node *z = zeros_of(c, src), *view = z ? ir_clone(c->g, n, &z) : NULL;
    r = view ? ir_view_set(c->g, view, gn) : NULL;
    break;
  }
  default:
    tp_fail(c, at, UOPC_E_UNSUPPORTED, "no backward rule for a %s inside an indexing op", ir_op_info_of(n->op)->name);
    return NULL;
  }
  return r == gn ? g : made(c, r, g, at);
}

static int is_one(const sym_expr *e) { return e->kind == SYM_CONST && e->value == 1; }

enum { TILE_COPIES_MAX = 16 };

/* The number of copies (saturated at TILE_COPIES_MAX + 1) when n, a reshape
 * of the expand e, merges e's axes pairwise (r_k, s_k) -> r_k * s_k with
 * r_k a constant count, as tp_repeat_at records a tile; -1 otherwise. */
static int64_t tile_copies(const ir_node *n, const ir_node *e) {
  const ir_node *s = e->src[0];
  if (e->rank != 2 * n->rank || s->rank != e->rank) return -1;
  int64_t copies = 1;
  for (int k = 0; k < n->rank; k++) {
    const sym_expr *r = e->shape[2 * k];
    if (r->kind != SYM_CONST || !is_one(s->shape[2 * k]) || s->shape[2 * k + 1] != e->shape[2 * k + 1]) return -1;
    if (r->value == 0) return 0;
    copies = copies > TILE_COPIES_MAX / r->value ? TILE_COPIES_MAX + 1 : copies * r->value;
  }
  return copies;
}

/* A tile's adjoint as the sum of its copies, each a slice of g (extent
 * s_k from copy * s_k along axis k): short index expressions, where the
 * reshape to (r_0, s_0, r_1, s_1, ...) nests a division per axis, and with
 * a new leading axis outgrew the code generator's expression limit. */
static const ir_node *tile_sum(tp_ctx *c, const ir_node *n, const ir_node *e, const ir_node *g, int64_t copies) {
  sym_arena *ar = ir_graph_arena(c->g);
  const ir_node *sum = NULL;
  for (int64_t q = 0; q < copies && g; q++) {
    const ir_node *t = g;
    for (int64_t k = n->rank - 1, rest = q; k >= 0 && t; k--) {
      int64_t r = e->shape[2 * k]->value, copy = rest % r;
      rest /= r;
      if (r == 1) continue;
      const sym_expr *len = e->shape[2 * k + 1];
      t = ir_slice_sym(c->g, t, (int)k, sym_expr_mul(ar, sym_expr_const(ar, copy), len),
                       sym_expr_mul(ar, sym_expr_const(ar, copy + 1), len), 1);
    }
    sum = !t ? NULL : sum ? ir_binary(c->g, IR_ADD, sum, t) : t;
  }
  return sum;
}

/* The adjoint of a reshape n of an expand e (a repeat's merge and tile),
 * as the gradient of to (e's operand, or what a reshape below it reads).
 * Up to TILE_COPIES_MAX copies: their sum. Otherwise g reshaped to e's
 * shape without its extents of 1, summed over the axes e stretched (which
 * leaves e's operand's extents, the 1s dropped), and reshaped to to's
 * shape: the two adjoints in turn, with fewer axes. */
static tp_tensor *retile_adjoint(tp_ctx *c, const ir_node *n, tp_tensor *g, const ir_node *to, tp_site at) {
  const ir_node *e = n->src[0], *s = e->src[0], *gn = tp_operand(c, g, at);
  int64_t copies = tile_copies(n, e);
  if (gn && copies == 0) return made(c, zeros_of(c, to), g, at);   /* repeat(0, ...): no copy reads x */
  if (gn && copies > 0 && copies <= TILE_COPIES_MAX) {
    const ir_node *m = tile_sum(c, n, e, gn, copies);
    return made(c, m ? ir_reshape(c->g, m, to->rank, to->shape) : NULL, g, at);
  }
  const sym_expr *shape[UOPC_MAX_RANK];
  int lead = e->rank - s->rank, r = 0;
  unsigned axes = 0;
  for (int k = 0; k < e->rank && gn; k++) {
    if (is_one(e->shape[k])) continue;
    if (k < lead || e->shape[k] != s->shape[k - lead]) axes |= 1u << r;
    shape[r++] = e->shape[k];
  }
  const ir_node *m = gn ? (r ? ir_reshape(c->g, gn, r, shape) : gn) : NULL;
  if (m && axes) m = ir_reduce(c->g, IR_SUM, m, axes, 0);
  return made(c, m ? ir_reshape(c->g, m, to->rank, to->shape) : NULL, g, at);
}

static tp_tensor *moves_adjoint(tp_ctx *c, tp_tensor *y, tp_tensor *gy, tp_site at) {
  const ir_node *n = y->node, *x = y->src[0]->ref;
  tp_tensor *g = gy;
  for (int steps = 0; g && n != x && !c->error.code; steps++) {
    if (!n || steps > 16) {
      tp_fail(c, at, UOPC_E_INVALID, "backward: the moves of this op do not lead to its operand");
      return NULL;
    }
    if (n->op == IR_RESHAPE && n->src[0]->op == IR_EXPAND) {
      const ir_node *e = n->src[0], *to = e->src[0];
      if (to != x && to->op == IR_RESHAPE) to = to->src[0];   /* the reshape below folds into this one */
      g = retile_adjoint(c, n, g, to, at);
      n = to;
    } else {
      g = move_adjoint(c, n, g, at);
      n = n->src[0];
    }
  }
  return g;
}

int tp_vjp_more(tp_ctx *c, tp_tensor *y, tp_tensor *gy, tp_tensor **gx, tp_site at, int *done) {
  tp_tensor *a = y->src[0];
  *done = 1;
  switch (y->node->op) {
  case IR_ABS: gx[0] = MUL(gy, sign(c, a, at)); break;
  case IR_LOG: gx[0] = DIV(gy, a); break;
  case IR_SQRT: gx[0] = DIV(gy, MUL(num(c, 2, y, at), y)); break;   /* inf at 0, as PyTorch's */
  case IR_POW: pow_rule(c, y, gy, gx, at); break;
  case IR_MINIMUM: minimum_rule(c, y, gy, gx, at); break;
  case IR_MAX: max_rule(c, y, gy, gx, at); break;
  case IR_SLICE:
  case IR_SELECT:
  case IR_CAST: gx[0] = moves_adjoint(c, y, gy, at); break;
  default: *done = 0;
  }
  return tp_status(c);
}
