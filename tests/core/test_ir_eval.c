/* test_ir_eval.c: the IR interpreter held to the compiled program (given
 * code, lab 23.1). Seeded random graphs over every op run both ways, through
 * exec_run and ir_eval under the binding exec_bind makes, and must agree:
 * exactly where the values make every sum exact (small integers), within a
 * tolerance where a sum adds other values (the compiled lanes add in another
 * order). Then the cases a random graph rarely reaches, each against NumPy's
 * answer written here, and the error codes of ir_eval.h. */
#include <limits.h>
#include "coreutil.h"
#include "ir_eval.h"

#define NONE UOPC_SLICE_NONE
enum { MAX_OUT = 4, POOL = 64 };

static void *fresh_core(void) {
  void *s = NULL;
  assert_int_equal(core_setup(&s), 0);
  return s;
}

static void drop_core(core *c) {
  void *s = c;
  core_teardown(&s);
}

/* ---- Comparing two tensors. */

/* Element i of a contiguous tensor, its bytes widened: integers exactly. */
static int64_t int_at(const uopc_tensor *t, int64_t i) {
  const unsigned char *p = (const unsigned char *)uopc_tensor_data(t) + i * (int64_t)uopc_dtype_size(t->dtype);
  int32_t i32;
  int64_t i64;
  if (t->dtype == UOPC_I32) { memcpy(&i32, p, 4); return i32; }
  if (t->dtype == UOPC_I64) { memcpy(&i64, p, 8); return i64; }
  return *p;
}

/* Equal as numbers: NaN equals NaN; -0 equals 0 (which of the two a max
 * keeps depends on the order it meets them, and the compiled lanes differ). */
static int close_enough(double want, double got, double tol) {
  if (isnan(want) || isnan(got)) return isnan(want) && isnan(got);
  if (isinf(want) || isinf(got) || tol == 0) return want == got;
  return fabs(want - got) <= tol;
}

/* got (from ir_eval) against want (compiled): dtype, shape, then each
 * element, within tol (0: exactly). */
static void expect_same_tensor(const uopc_tensor *want, const uopc_tensor *got, double tol, const char *what) {
  if (got->dtype != want->dtype || got->rank != want->rank)
    fail_msg("%s: expected %s of rank %d, got %s of rank %d", what, uopc_dtype_name(want->dtype), want->rank,
             uopc_dtype_name(got->dtype), got->rank);
  for (int k = 0; k < want->rank; k++)
    if (got->shape[k] != want->shape[k])
      fail_msg("%s: axis %d: expected extent %lld, got %lld", what, k, (long long)want->shape[k],
               (long long)got->shape[k]);
  assert_true(uopc_tensor_is_contiguous(got));
  for (int64_t i = 0; i < uopc_tensor_numel(want); i++) {
    if (!uopc_dtype_is_float(want->dtype)) {
      if (int_at(want, i) != int_at(got, i))
        fail_msg("%s: element %lld: compiled %lld, ir_eval %lld", what, (long long)i, (long long)int_at(want, i),
                 (long long)int_at(got, i));
    } else if (!close_enough(uopc_tensor_get(want, i), uopc_tensor_get(got, i), tol)) {
      fail_msg("%s: element %lld: compiled %.17g, ir_eval %.17g (tolerance %g)", what, (long long)i,
               uopc_tensor_get(want, i), uopc_tensor_get(got, i), tol);
    }
  }
}

/* ---- Running both ways. */

static exec *compiled(core *c, const ir_node *const *outs, int n, const char *what) {
  exec *e = NULL;
  uopc_error err = {0};
  int rc = exec_new(&e, c->g, outs, n, "ir_eval_ref", NULL, &err);
  if (rc) fail_msg("%s: exec_new: expected UOPC_OK, got %s: %s", what, uopc_error_name(rc), err.message);
  return e;
}

static void release_all(uopc_tensor *t, int n) {
  for (int k = 0; k < n; k++) uopc_tensor_release(&t[k]);
}

/* Runs e on ins and ir_eval on the same call; the outputs must agree
 * (within tol[k], or exactly when tol is NULL), and so must a refusal's
 * code. Returns the code. */
static int compare_call(core *c, exec *e, const ir_node *const *outs, int n_out, const uopc_tensor *const *ins,
                        int n_in, const double *tol, const char *what) {
  sym_binding b;
  uopc_error err = {0}, eerr = {0};
  uopc_tensor want[MAX_OUT] = {{0}}, got[MAX_OUT];
  int rc = exec_bind(e, ins, n_in, &b, &err);
  if (rc == UOPC_OK) {
    for (int k = 0; k < n_out && !rc; k++) {
      int64_t shape[UOPC_MAX_RANK];
      int rank;
      assert_uopc_ok(exec_output_shape(e, k, &b, shape, &rank, &err), err);
      assert_uopc_ok(uopc_tensor_empty(&want[k], outs[k]->dtype, rank, shape, &err), err);
    }
    uopc_tensor *w[MAX_OUT] = {&want[0], &want[1], &want[2], &want[3]};
    rc = exec_run(e, w, n_out, ins, n_in, &err);
  }
  int erc = ir_eval(c->g, outs, n_out, ins, n_in, &b, got, &eerr);
  if (erc != rc)
    fail_msg("%s: compiled gave %s (%s), ir_eval %s (%s)", what, uopc_error_name(rc), err.message,
             uopc_error_name(erc), eerr.message);
  for (int k = 0; k < n_out && !rc; k++) {
    char w[256];
    snprintf(w, sizeof w, "%s, output %d (%%%d %s)", what, k, outs[k]->id, ir_op_info_of(outs[k]->op)->name);
    expect_same_tensor(&want[k], &got[k], tol ? tol[k] : 0, w);
  }
  for (int k = 0; k < n_out; k++)
    if (rc) assert_null(got[k].storage);   /* an error leaves no output allocated */
  release_all(want, n_out);
  release_all(got, rc ? 0 : n_out);
  return rc;
}

/* compare_call for one call, compiling first; expects both to succeed. */
static void expect_agree(core *c, const ir_node *const *outs, int n_out, const uopc_tensor *const *ins, int n_in,
                         const char *what) {
  exec *e = compiled(c, outs, n_out, what);
  int rc = compare_call(c, e, outs, n_out, ins, n_in, NULL, what);
  if (rc) fail_msg("%s: expected UOPC_OK from both, got %s", what, uopc_error_name(rc));
  exec_free(e);
}

/* ir_eval alone: one output, expected to succeed. */
static void eval_one(core *c, const ir_node *out, const uopc_tensor *const *ins, int n_in, const sym_binding *b,
                     uopc_tensor *res) {
  uopc_error err = {0};
  assert_uopc_ok(ir_eval(c->g, &out, 1, ins, n_in, b, res, &err), err);
}

/* A contiguous tensor holding values[0 .. numel). */
static void tensor_of(uopc_tensor *t, uopc_dtype dt, int rank, const int64_t *shape, const double *values) {
  uopc_error err = {0};
  assert_uopc_ok(uopc_tensor_empty(t, dt, rank, shape, &err), err);
  for (int64_t i = 0; i < uopc_tensor_numel(t); i++) uopc_tensor_set(t, i, values[i]);
}

static void expect_values(const uopc_tensor *t, const double *want, int64_t n, const char *what) {
  assert_int_equal(uopc_tensor_numel(t), n);
  for (int64_t i = 0; i < n; i++)
    if (!close_enough(want[i], uopc_tensor_get(t, i), 0))
      fail_msg("%s: element %lld: expected %.17g, got %.17g", what, (long long)i, want[i], uopc_tensor_get(t, i));
}

/* ---- Random graphs.
 * Every graph takes the same four inputs over dims n in [0, 6] and m in
 * [1, 6]: x (n, m), contiguous, given as rows 1.. of a bigger buffer (so its
 * element 0 is not the storage's); y (m); a scalar k; and z (n, m), a view
 * with strides (s, -1) and offset o, given as base[1::2, ::-1]. Values are
 * integers in [-3, 3]. Each node carries a bound on its magnitude, whether
 * its values are integers, and whether a sum of non-integers made it depend
 * on the order of additions (tol): such a node is never compared, cast or
 * used as a condition, so only tolerances, never branches, absorb that. */

typedef struct gnode { const ir_node *n; double mag; int integral, tol; } gnode;

typedef struct gen {
  core *c;
  uint64_t state;
  uopc_dtype dt;
  const sym_expr *n, *m;
  gnode pool[POOL];
  int count, inputs;
} gen;

static uint32_t rnd(gen *g, uint32_t below) {
  g->state = g->state * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(g->state >> 33) % below;
}

static int is_one(const sym_expr *e) { return e->kind == SYM_CONST && e->value == 1; }

static int can_broadcast(const ir_node *a, const ir_node *b) {
  for (int k = 1; k <= a->rank && k <= b->rank; k++) {
    const sym_expr *x = a->shape[a->rank - k], *y = b->shape[b->rank - k];
    if (x != y && !is_one(x) && !is_one(y)) return 0;
  }
  return 1;
}

static int64_t upper(const sym_expr *e) {
  sym_interval iv;
  uopc_error err = {0};
  assert_uopc_ok(sym_expr_interval(e, &iv, &err), err);
  return iv.hi;
}

static int64_t lower(const sym_expr *e) {
  sym_interval iv;
  uopc_error err = {0};
  assert_uopc_ok(sym_expr_interval(e, &iv, &err), err);
  return iv.lo;
}

static const gnode *add(gen *g, const ir_node *n, double mag, int integral, int tol) {
  if (!n) fail_msg("seed graph: builder failed: %s", ir_graph_error(g->c->g)->message);
  if (g->count == POOL) return NULL;
  g->pool[g->count] = (gnode){n, mag, integral, tol};
  return &g->pool[g->count++];
}

/* A random pool node that passes ok (NULL after a few misses), one of the
 * newest three half the time, so that graphs grow deep rather than wide. */
static const gnode *pick(gen *g, int (*ok)(const gnode *, const gnode *), const gnode *with) {
  for (int tries = 0; tries < 12; tries++) {
    int recent = g->count > g->inputs && rnd(g, 2);
    const gnode *p = &g->pool[recent ? g->count - 1 - (int)rnd(g, (uint32_t)(g->count < 7 ? g->count - 4 : 3))
                                     : (int)rnd(g, (uint32_t)g->count)];
    if (ok(p, with)) return p;
  }
  return NULL;
}

static int numeric(const gnode *p, const gnode *w) { (void)w; return p->n->dtype != UOPC_BOOL; }
static int plain(const gnode *p, const gnode *w) { return numeric(p, w) && !p->tol; }
static int small_float(const gnode *p, const gnode *w) {
  (void)w;
  return uopc_dtype_is_float(p->n->dtype) && p->integral && !p->tol && p->mag <= 4;
}
static int partner(const gnode *p, const gnode *w) {
  return p->n->dtype == w->n->dtype && can_broadcast(p->n, w->n);
}
static int any_node(const gnode *p, const gnode *w) { (void)p; (void)w; return 1; }
static int any_rank(const gnode *p, const gnode *w) { (void)w; return p->n->rank >= 1; }
static int cond_for(const gnode *p, const gnode *w) { return p->n->dtype == UOPC_BOOL && can_broadcast(p->n, w->n); }

static const ir_op UNARY[] = {IR_NEG, IR_ABS};
static const ir_op MATH[] = {IR_EXP, IR_LOG, IR_SQRT, IR_TANH};
static const ir_op ARITH[] = {IR_ADD, IR_SUB, IR_MUL, IR_MAXIMUM, IR_MINIMUM};
static const ir_op COMPARES[] = {IR_LT, IR_LE, IR_GT, IR_GE, IR_EQ, IR_NE};
static const uopc_dtype DTYPES[] = {UOPC_F32, UOPC_F64, UOPC_I32, UOPC_I64, UOPC_BOOL};

static void step_unary(gen *g) {
  const gnode *x = pick(g, numeric, NULL);
  if (x) add(g, ir_unary(g->c->g, UNARY[rnd(g, 2)], x->n), x->mag, x->integral, x->tol);
}

static void step_math(gen *g) {
  const gnode *x = pick(g, small_float, NULL), *y = x ? pick(g, partner, x) : NULL;
  if (!x) return;
  if (rnd(g, 3) == 0 && y && small_float(y, NULL))
    add(g, ir_binary(g->c->g, rnd(g, 2) ? IR_DIV : IR_POW, x->n, y->n), 256, 0, 0);
  else add(g, ir_unary(g->c->g, MATH[rnd(g, 4)], x->n), 256, 0, 0);
}

static void step_binary(gen *g) {
  const gnode *x = pick(g, numeric, NULL), *y = x ? pick(g, partner, x) : NULL;
  if (!y) return;
  ir_op op = ARITH[rnd(g, 5)];
  double mag = op == IR_MUL ? x->mag * y->mag : op == IR_ADD || op == IR_SUB ? x->mag + y->mag
             : fmax(x->mag, y->mag);
  if (mag > 1 << 16) return;
  add(g, ir_binary(g->c->g, op, x->n, y->n), mag, x->integral && y->integral, x->tol || y->tol);
}

static void step_compare(gen *g) {
  const gnode *x = pick(g, plain, NULL), *y = x ? pick(g, partner, x) : NULL;
  if (y && !y->tol) add(g, ir_binary(g->c->g, COMPARES[rnd(g, 6)], x->n, y->n), 1, 1, 0);
}

static void step_where(gen *g) {
  const gnode *a = pick(g, numeric, NULL), *b = a ? pick(g, partner, a) : NULL, *w = NULL;
  if (!b) return;
  gnode ab = {.n = a->n};
  if (!can_broadcast(a->n, b->n)) return;
  w = pick(g, cond_for, &ab);
  if (w && can_broadcast(w->n, b->n))
    add(g, ir_where(g->c->g, w->n, a->n, b->n), fmax(a->mag, b->mag), a->integral && b->integral, a->tol || b->tol);
}

static void step_cast(gen *g) {
  const gnode *x = pick(g, any_node, NULL);
  if (!x) return;
  uopc_dtype to = DTYPES[rnd(g, 5)];
  if (x->tol || ((to == UOPC_I32 || to == UOPC_I64) && !x->integral)) return;
  add(g, ir_cast(g->c->g, x->n, to), to == UOPC_BOOL ? 1 : x->mag, x->integral || to == UOPC_BOOL, 0);
}

static void step_permute(gen *g, const gnode *x) {
  int perm[UOPC_MAX_RANK];
  for (int k = 0; k < x->n->rank; k++) perm[k] = k;
  for (int k = x->n->rank - 1; k > 0; k--) {
    int j = (int)rnd(g, (uint32_t)k + 1), t = perm[k];
    perm[k] = perm[j];
    perm[j] = t;
  }
  add(g, ir_permute(g->c->g, x->n, perm), x->mag, x->integral, x->tol);
}

/* x broadcast to (n, its shape with extents 1 made m), when that is rank 3 or less. */
static void step_expand(gen *g, const gnode *x) {
  const sym_expr *to[UOPC_MAX_RANK];
  if (x->n->rank > 2) return;
  to[0] = g->n;
  for (int k = 0; k < x->n->rank; k++) to[k + 1] = is_one(x->n->shape[k]) ? g->m : x->n->shape[k];
  add(g, ir_expand(g->c->g, x->n, x->n->rank + 1, to), x->mag, x->integral, x->tol);
}

/* Flattened, an extent 1 inserted, or the extents reversed (a true reshape). */
static void step_reshape(gen *g, const gnode *x) {
  const sym_expr *to[UOPC_MAX_RANK], *count = cst(g->c, 1);
  int r = x->n->rank, kind = (int)rnd(g, 3), rank = r;
  if (kind == 0) {
    for (int k = 0; k < r; k++) count = sym_expr_mul(g->c->a, count, x->n->shape[k]);
    to[0] = count;
    rank = 1;
  } else if (kind == 1 && r < 3) {
    int at = (int)rnd(g, (uint32_t)r + 1);
    for (int k = 0, j = 0; k <= r; k++) to[k] = k == at ? cst(g->c, 1) : x->n->shape[j++];
    rank = r + 1;
  } else {
    for (int k = 0; k < r; k++) to[k] = x->n->shape[r - 1 - k];
  }
  add(g, ir_reshape(g->c->g, x->n, rank, to), x->mag, x->integral, x->tol);
}

/* Slices that keep several elements at most sizes: reversed, strided, shifted. */
static const ir_node *random_slice(gen *g, const ir_node *x) {
  static const int64_t slices[][3] = {{NONE, NONE, -1}, {NONE, NONE, 2}, {1, NONE, 1},    {NONE, NONE, -2},
                                      {-2, NONE, -1},   {1, -1, 1},     {NONE, 0, -1},   {-1, NONE, -3},
                                      {0, 5, 3},        {-3, NONE, 1}};
  const int64_t *sl = slices[rnd(g, COUNT(slices))];
  return ir_slice(g->c->g, x, (int)rnd(g, (uint32_t)x->rank), sl[0], sl[1], sl[2]);
}

/* A select of x's first axis that is provably not empty, or NULL. */
static const ir_node *random_select(gen *g, const ir_node *x) {
  for (int k = 0; k < x->rank; k++)
    if (lower(x->shape[k]) >= 1) return ir_select(g->c->g, x, k, cst(g->c, rnd(g, 2) ? 0 : -1));
  return NULL;
}

static void step_move(gen *g) {
  const gnode *x = pick(g, any_rank, NULL);
  if (!x) return;
  switch (rnd(g, 5)) {
  case 0: step_permute(g, x); break;
  case 1: step_expand(g, x); break;
  case 2: step_reshape(g, x); break;
  case 3: add(g, random_slice(g, x->n), x->mag, x->integral, x->tol); break;
  default: {
    const ir_node *s = random_select(g, x->n);
    if (s) add(g, s, x->mag, x->integral, x->tol);
  }
  }
}

/* base[view] = -base[view], or = a constant broadcast to the view, or =
 * the view's first extent (a SIZE: a dim read at run time). */
static void step_set(gen *g) {
  const gnode *x = pick(g, any_rank, NULL);
  if (!x || x->n->dtype == UOPC_BOOL) return;
  const ir_node *view = rnd(g, 2) ? random_slice(g, x->n) : random_select(g, x->n);
  if (!view) return;
  const ir_node *y = ir_unary(g->c->g, IR_NEG, view);
  double mag = 2;
  if (rnd(g, 2)) {
    const ir_node *v = ir_const(g->c->g, 2, view->dtype);
    if (view->rank && rnd(g, 2)) {
      v = ir_size(g->c->g, view->shape[0], view->dtype);
      mag = (double)upper(view->shape[0]);
    }
    y = ir_expand(g->c->g, v, view->rank, view->shape);
  }
  add(g, ir_view_set(g->c->g, view, y), fmax(x->mag, mag), x->integral, x->tol);
}

static void step_reduce(gen *g) {
  static const ir_op ops[] = {IR_SUM, IR_MAX, IR_MEAN};
  const gnode *x = pick(g, any_rank, NULL);
  if (!x) return;
  ir_op op = ops[rnd(g, 3)];
  unsigned axes = 1u + rnd(g, (1u << x->n->rank) - 1);
  double count = 1;
  for (int k = 0; k < x->n->rank; k++)
    if (axes >> k & 1u) count *= (double)upper(x->n->shape[k]);
  if ((op == IR_MEAN && !uopc_dtype_is_float(x->n->dtype)) || (op == IR_MAX && x->n->dtype == UOPC_BOOL)) op = IR_SUM;
  double mag = op == IR_MAX ? x->mag : x->mag * count;
  if (mag > 1 << 16) return;
  add(g, ir_reduce(g->c->g, op, x->n, axes, (int)rnd(g, 2)), op == IR_MEAN ? x->mag : mag,
      op != IR_MEAN && x->integral, x->tol || (op != IR_MAX && !x->integral));
}

/* x @ x^T (rank 2) or x @ x^T batched (rank 3, the last two axes swapped). */
static void step_matmul(gen *g) {
  const gnode *x = pick(g, numeric, NULL);
  if (!x || x->n->rank < 2 || x->n->rank > 3) return;
  int perm[3] = {0, 2, 1};
  const ir_node *t = x->n->rank == 2 ? ir_transpose(g->c->g, x->n, 0, 1) : ir_permute(g->c->g, x->n, perm);
  double mag = x->mag * x->mag * (double)upper(x->n->shape[x->n->rank - 1]);
  if (mag <= 1 << 16)
    add(g, ir_matmul(g->c->g, x->n, t), mag, x->integral, x->tol || !x->integral);
}

static void build_inputs(gen *g) {
  const sym_expr *s = dim(g->c, "s", -1000, 1000), *o = dim(g->c, "o", 0, 10000);
  add(g, input(g->c, "x", g->dt, 2, SHAPE(g->n, g->m)), 3, 1, 0);
  add(g, input(g->c, "y", g->dt, 1, SHAPE(g->m)), 3, 1, 0);
  add(g, input(g->c, "k", g->dt, 0, NULL), 3, 1, 0);
  add(g, ok_node(g->c, ir_input_view(g->c->g, "z", g->dt, 2, SHAPE(g->n, g->m), SHAPE(s, cst(g->c, -1)), o), "z"),
      3, 1, 0);
  g->inputs = g->count;
}

/* A graph of about `steps` random nodes; outs: the last node and two others. */
static int build_graph(gen *g, uint32_t seed, uopc_dtype dt, int steps, const ir_node **outs, double *tol) {
  *g = (gen){.c = g->c, .state = seed * 2654435761u + 1, .dt = dt};
  g->n = dim(g->c, "n", 0, 6);
  g->m = dim(g->c, "m", 1, 6);
  build_inputs(g);
  void (*const kinds[])(gen *) = {step_unary, step_math, step_binary, step_compare, step_where, step_cast,
                                  step_move, step_move, step_set, step_reduce, step_reduce, step_matmul};
  for (int s = 0; s < steps && g->count < POOL; s++) kinds[rnd(g, COUNT(kinds))](g);
  if (g->count == g->inputs) add(g, ir_unary(g->c->g, IR_NEG, g->pool[0].n), 3, 1, 0);
  int n_out = 0;
  for (int k = 0; k < 3; k++) {
    const gnode *p = &g->pool[k == 0 ? g->count - 1 : g->inputs + (int)rnd(g, (uint32_t)(g->count - g->inputs))];
    int repeat = 0;
    for (int j = 0; j < n_out; j++) repeat |= outs[j] == p->n;
    if (repeat) continue;
    outs[n_out] = p->n;
    double eps = p->n->dtype == UOPC_F32 ? 1e-4 : 1e-12;
    tol[n_out++] = p->tol ? eps * fmax(1, p->mag) : 0;
  }
  return n_out;
}

/* The inputs at one binding: x from rows 1.. of an (n + 1, m) buffer, z as
 * base[1::2, ::-1] of a (2n + 1, m) buffer. held[] keeps what to release. */
static void make_inputs(gen *g, int64_t n, int64_t m, uopc_tensor *held, uopc_tensor *ins) {
  uopc_error err = {0};
  int64_t xs[2] = {n + 1, m}, zs[2] = {2 * n + 1, m};
  assert_uopc_ok(uopc_tensor_empty(&held[0], g->dt, 2, xs, &err), err);
  assert_uopc_ok(uopc_tensor_empty(&held[1], g->dt, 2, zs, &err), err);
  assert_uopc_ok(uopc_tensor_empty(&ins[1], g->dt, 1, &m, &err), err);
  assert_uopc_ok(uopc_tensor_empty(&ins[2], g->dt, 0, NULL, &err), err);
  uopc_tensor *fill[] = {&held[0], &held[1], &ins[1], &ins[2]};
  for (int f = 0; f < 4; f++)
    for (int64_t i = 0; i < uopc_tensor_numel(fill[f]); i++) uopc_tensor_set(fill[f], i, (double)rnd(g, 7) - 3);
  assert_uopc_ok(uopc_tensor_slice(&ins[0], &held[0], 0, 1, NONE, 1, &err), err);
  uopc_tensor rows;
  assert_uopc_ok(uopc_tensor_slice(&rows, &held[1], 0, 1, NONE, 2, &err), err);
  assert_uopc_ok(uopc_tensor_slice(&ins[3], &rows, 1, NONE, NONE, -1, &err), err);
  uopc_tensor_release(&rows);
}

/* Marks the ops of every node the outputs reach. */
static void mark_ops(const ir_graph *g, const ir_node *const *outs, int n_out, int *seen) {
  int count = ir_graph_node_count(g);
  unsigned char *need = calloc((size_t)count, 1);
  assert_non_null(need);
  for (int k = 0; k < n_out; k++) need[outs[k]->id] = 1;
  for (int id = count - 1; id >= 0; id--) {
    const ir_node *n = ir_graph_node(g, id);
    if (!need[id]) continue;
    seen[n->op]++;
    for (int s = 0; s < ir_op_info_of(n->op)->arity; s++) need[n->src[s]->id] = 1;
  }
  free(need);
}

enum { SEEDS = 24, STEPS = 16 };

static void random_case(uopc_dtype dt, uint32_t first_seed) {
  for (uint32_t seed = first_seed; seed < first_seed + SEEDS; seed++) {
    gen g = {.c = fresh_core()};
    const ir_node *outs[3];
    double tol[3];
    int n_out = build_graph(&g, seed, dt, STEPS, outs, tol);
    char what[160];
    snprintf(what, sizeof what, "random graph %s seed %u", uopc_dtype_name(dt), seed);
    exec *e = compiled(g.c, outs, n_out, what);
    const int64_t sizes[][2] = {{1 + rnd(&g, 5), 1 + rnd(&g, 5)}, {rnd(&g, 2) ? 0 : 6, 1 + rnd(&g, 2)}};
    for (int s = 0; s < 2; s++) {
      uopc_tensor held[2], ins[4];
      make_inputs(&g, sizes[s][0], sizes[s][1], held, ins);
      const uopc_tensor *in[4] = {&ins[0], &ins[1], &ins[2], &ins[3]};
      char w[200];
      snprintf(w, sizeof w, "%s at n=%lld m=%lld", what, (long long)sizes[s][0], (long long)sizes[s][1]);
      int rc = compare_call(g.c, e, outs, n_out, in, 4, tol, w);
      if (rc && rc != UOPC_E_BOUNDS) fail_msg("%s: %s (only a max over an empty axis may refuse)", w, uopc_error_name(rc));
      release_all(held, 2);
      release_all(ins, 4);
    }
    exec_free(e);
    drop_core(g.c);
  }
}

static void test_ir_eval_matches_compiled_random_graphs_f32(void **state) {
  (void)state;
  random_case(UOPC_F32, 1000);
}

static void test_ir_eval_matches_compiled_random_graphs_f64(void **state) {
  (void)state;
  random_case(UOPC_F64, 2000);
}

/* The graphs of the two tests above, rebuilt: every op of the table is
 * reached from some graph's outputs. */
static void test_ir_eval_random_graphs_cover_every_op(void **state) {
  (void)state;
  int seen[IR_OP_COUNT] = {0};
  for (int d = 0; d < 2; d++)
    for (uint32_t seed = 1000u * (d + 1); seed < 1000u * (d + 1) + SEEDS; seed++) {
      gen g = {.c = fresh_core()};
      const ir_node *outs[3];
      double tol[3];
      int n_out = build_graph(&g, seed, d ? UOPC_F64 : UOPC_F32, STEPS, outs, tol);
      mark_ops(g.c->g, outs, n_out, seen);
      drop_core(g.c);
    }
  for (int op = 0; op < IR_OP_COUNT; op++) fprintf(stderr, "%s:%d ", ir_op_info_of((ir_op)op)->name, seen[op]);
  for (int op = 0; op < IR_OP_COUNT; op++)
    if (!seen[op]) fail_msg("no generated graph uses %s", ir_op_info_of((ir_op)op)->name);
}

/* ---- Integers and bool: wrapping, comparisons, where, casts. */

static void int_case(uopc_dtype dt) {
  core *c = fresh_core();
  const sym_expr *n = dim(c, "n", 0, 16);
  const ir_node *x = input(c, "x", dt, 1, SHAPE(n)), *y = input(c, "y", dt, 1, SHAPE(n));
  const ir_node *lt = ir_binary(c->g, IR_LT, x, y);
  const ir_node *mixed = ir_binary(c->g, IR_MUL, ir_binary(c->g, IR_ADD, ir_unary(c->g, IR_NEG, x), y),
                                   ir_binary(c->g, IR_SUB, ir_unary(c->g, IR_ABS, y), x));
  const ir_node *wide = ir_cast(c->g, mixed, UOPC_I64);
  const ir_node *outs[4] = {
    ir_where(c->g, lt, ir_binary(c->g, IR_MAXIMUM, mixed, x), ir_binary(c->g, IR_MINIMUM, y, mixed)),
    ir_cast(c->g, ir_binary(c->g, IR_NE, ir_cast(c->g, x, UOPC_BOOL), ir_binary(c->g, IR_GE, x, y)), UOPC_F32),
    ir_binary(c->g, IR_ADD, ir_reduce(c->g, IR_SUM, wide, 1u, 0), ir_reduce(c->g, IR_SUM, lt, 1u, 0)),
    ir_reduce(c->g, IR_MAX, mixed, 1u, 1),
  };
  for (int k = 0; k < 4; k++) ok_node(c, outs[k], "int graph");
  const double lo = dt == UOPC_I32 ? INT32_MIN : -9223372036854775808.0, hi = dt == UOPC_I32 ? INT32_MAX : 0x1p62;
  const double xv[] = {lo, hi, -1, 0, 7, lo, 3, 100000};
  const double yv[] = {-1, 1, lo, hi, -7, lo, 3, 65536};
  uopc_tensor ins[2];
  tensor_of(&ins[0], dt, 1, (const int64_t[]){8}, xv);
  tensor_of(&ins[1], dt, 1, (const int64_t[]){8}, yv);
  const uopc_tensor *in[2] = {&ins[0], &ins[1]};
  expect_agree(c, outs, 4, in, 2, uopc_dtype_name(dt));
  /* NumPy's answer at element 0: -min wraps to min, and min + -1 to max. */
  uopc_tensor res;
  sym_binding b;
  sym_binding_init(&b);
  uopc_error err = {0};
  assert_uopc_ok(sym_dim_bind(&b, &n->dim, 8, &err), err);
  eval_one(c, ir_binary(c->g, IR_ADD, ir_unary(c->g, IR_NEG, x), y), in, 2, &b, &res);
  assert_int_equal(int_at(&res, 0), dt == UOPC_I32 ? INT32_MAX : INT64_MAX);
  uopc_tensor_release(&res);
  release_all(ins, 2);
  drop_core(c);
}

static void test_ir_eval_int32_ops_wrap_like_compiled(void **state) {
  (void)state;
  int_case(UOPC_I32);
}

static void test_ir_eval_int64_ops_wrap_like_compiled(void **state) {
  (void)state;
  int_case(UOPC_I64);
}

/* f64 -> f32 -> f64, f64 -> i32 -> bool -> f32, f64 -> bool -> i32 and
 * f64 -> i64 -> f32 -> f64; NaN and infinities only where C defines them. */
static void test_ir_eval_casts_between_every_dtype_like_compiled(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 0, 16);
  const ir_node *x = input(c, "x", UOPC_F64, 1, SHAPE(n)), *xn = input(c, "xn", UOPC_F64, 1, SHAPE(n));
  const ir_node *outs[4] = {
    ir_cast(c->g, ir_cast(c->g, xn, UOPC_F32), UOPC_F64),
    ir_cast(c->g, ir_cast(c->g, ir_cast(c->g, x, UOPC_I32), UOPC_BOOL), UOPC_F32),
    ir_cast(c->g, ir_cast(c->g, xn, UOPC_BOOL), UOPC_I32),
    ir_cast(c->g, ir_cast(c->g, ir_cast(c->g, x, UOPC_I64), UOPC_F32), UOPC_F64),
  };
  for (int k = 0; k < 4; k++) ok_node(c, outs[k], "casts");
  const double v[] = {-2.75, -1, -0.0, 0.5, 1.5, 16777217, 1e9, 0.1};
  const double vn[] = {-2.75, NAN, -0.0, 0.1, INFINITY, 16777217, -INFINITY, 1e300};
  uopc_tensor ins[2];
  tensor_of(&ins[0], UOPC_F64, 1, (const int64_t[]){8}, v);
  tensor_of(&ins[1], UOPC_F64, 1, (const int64_t[]){8}, vn);
  const uopc_tensor *in[2] = {&ins[0], &ins[1]};
  expect_agree(c, outs, 4, in, 2, "casts");
  release_all(ins, 2);
}

/* ---- Views. */

/* x (n, m) with strides (s, t) and offset o, all dims; and w (n, m) with
 * constant strides (-3, 1) and offset 0, read from the tensor's element 0. */
static void test_ir_eval_reads_strided_views_with_negative_strides_and_offsets(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 0, 8), *m = dim(c, "m", 0, 8), *s = dim(c, "s", -100, 100),
                 *t = dim(c, "t", -100, 100), *o = dim(c, "o", 0, 1000);
  const ir_node *x = ok_node(c, ir_input_view(c->g, "x", UOPC_F32, 2, SHAPE(n, m), SHAPE(s, t), o), "x");
  const ir_node *w = ok_node(c, ir_input_view(c->g, "w", UOPC_F32, 2, SHAPE(n, m), SHAPE(cst(c, -3), cst(c, 1)),
                                              NULL), "w");
  const ir_node *outs[3] = {ir_binary(c->g, IR_SUB, x, w), x, w};
  double v[36];
  for (int i = 0; i < 36; i++) v[i] = i;
  uopc_tensor base, rows, xv, wv;
  uopc_error err = {0};
  tensor_of(&base, UOPC_F32, 2, (const int64_t[]){6, 6}, v);
  assert_uopc_ok(uopc_tensor_slice(&rows, &base, 0, NONE, NONE, -2, &err), err);   /* rows 5, 3, 1 */
  assert_uopc_ok(uopc_tensor_slice(&xv, &rows, 1, 4, 0, -1, &err), err);           /* columns 4 .. 1 */
  /* w: element 0 at base element 30, rows 3 elements apart going down; the
   * wrap's storage starts at element 24, so the tensor's offset is 6. */
  int64_t wshape[2] = {3, 4}, wstrides[2] = {-3, 1};
  assert_uopc_ok(uopc_tensor_wrap(&wv, (float *)uopc_tensor_data(&base) + 30, UOPC_F32, 2, wshape, wstrides, &err),
                 err);
  assert_int_equal(wv.offset, 6);
  const uopc_tensor *ins[2] = {&xv, &wv};
  expect_agree(c, outs, 3, ins, 2, "x (strides s, t; offset o) - w (strides -3, 1)");
  sym_binding b;
  sym_binding_init(&b);
  const sym_expr *dims[] = {n, m, s, t, o};
  const int64_t vals[] = {3, 4, -12, -1, 34};
  for (int k = 0; k < 5; k++) assert_uopc_ok(sym_dim_bind(&b, &dims[k]->dim, vals[k], &err), err);
  uopc_tensor res;
  eval_one(c, x, ins, 2, &b, &res);
  expect_values(&res, (const double[]){34, 33, 32, 31, 22, 21, 20, 19, 10, 9, 8, 7}, 12, "base[::-2, 4:0:-1]");
  uopc_tensor_release(&res);
  eval_one(c, w, ins, 2, &b, &res);
  expect_values(&res, (const double[]){30, 31, 32, 33, 27, 28, 29, 30, 24, 25, 26, 27}, 12, "w");
  uopc_tensor_release(&res);
  uopc_tensor_release(&wv);
  uopc_tensor_release(&xv);
  uopc_tensor_release(&rows);
  uopc_tensor_release(&base);
}

/* A cyclic permute is not its own inverse (a transpose is): out[i, j, k] = x[k, i, j]. */
static void test_ir_eval_cyclic_permute_of_rank3_matches_numpy(void **state) {
  core *c = *state;
  const ir_node *x = input(c, "x", UOPC_I64, 3, SHAPE(cst(c, 2), cst(c, 3), cst(c, 4)));
  const ir_node *out = ok_node(c, ir_permute(c->g, x, (const int[]){1, 2, 0}), "x.transpose(1, 2, 0)");
  double v[24], want[24];
  for (int i = 0; i < 24; i++) v[i] = i;
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 4; j++)
      for (int k = 0; k < 2; k++) want[(i * 4 + j) * 2 + k] = v[(k * 3 + i) * 4 + j];
  uopc_tensor in, res;
  tensor_of(&in, UOPC_I64, 3, (const int64_t[]){2, 3, 4}, v);
  const uopc_tensor *ins[1] = {&in};
  sym_binding b;
  sym_binding_init(&b);
  eval_one(c, out, ins, 1, &b, &res);
  expect_values(&res, want, 24, "x.transpose(1, 2, 0)");
  uopc_tensor_release(&res);
  expect_agree(c, &out, 1, ins, 1, "x.transpose(1, 2, 0)");
  uopc_tensor_release(&in);
}

/* ---- Functional stores. */

static void test_ir_eval_slice_set_and_select_set_replace_the_view(void **state) {
  core *c = *state;
  const ir_node *x = input(c, "x", UOPC_F64, 2, SHAPE(cst(c, 4), cst(c, 5)));
  const ir_node *cols = ok_node(c, ir_slice(c->g, x, 1, -1, 0, -2), "x[:, -1:0:-2]");   /* columns 4, 2 */
  const ir_node *row = ok_node(c, ir_select(c->g, x, 0, cst(c, -3)), "x[-3]");           /* row 1 */
  const ir_node *outs[2] = {
    ok_node(c, ir_view_set(c->g, cols, ir_unary(c->g, IR_NEG, cols)), "slice_set"),
    ok_node(c, ir_view_set(c->g, row, ir_expand(c->g, ir_const(c->g, 9, UOPC_F64), 1, SHAPE(cst(c, 5)))), "select_set"),
  };
  double v[20];
  for (int i = 0; i < 20; i++) v[i] = i;
  uopc_tensor in, res[2];
  tensor_of(&in, UOPC_F64, 2, (const int64_t[]){4, 5}, v);
  const uopc_tensor *ins[1] = {&in};
  sym_binding b;
  sym_binding_init(&b);
  uopc_error err = {0};
  assert_uopc_ok(ir_eval(c->g, outs, 2, ins, 1, &b, res, &err), err);
  expect_values(&res[0], (const double[]){0, 1, -2, 3, -4, 5, 6, -7, 8, -9, 10, 11, -12, 13, -14, 15, 16, -17, 18, -19},
                20, "x[:, -1:0:-2] = -x[:, -1:0:-2]");
  expect_values(&res[1], (const double[]){0, 1, 2, 3, 4, 9, 9, 9, 9, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19}, 20,
                "x[-3] = 9");
  release_all(res, 2);
  expect_agree(c, outs, 2, ins, 1, "slice_set and select_set");
  uopc_tensor_release(&in);
}

/* A diagonal's slice has the symbolic step m + 1 (proved >= 1): its store, the scatter a diagonal's
 * gradient is, writes flat elements 1, 6 and 11 of a (3, 4) x for offset 1, and agrees with the
 * compiled store over (3, 4), (4, 3), (0, 3) and (1, 1). */
static void test_ir_eval_slice_set_with_a_symbolic_step_writes_the_diagonal(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 0, 6), *m = dim(c, "m", 0, 6);
  const ir_node *x = input(c, "x", UOPC_F64, 2, SHAPE(n, m));
  const ir_node *diag = ok_node(c, ir_diagonal(c->g, x, 1), "x.diagonal(1)");
  const ir_node *out = ok_node(c, ir_view_set(c->g, diag, ir_unary(c->g, IR_NEG, diag)), "diagonal store");
  double v[36];
  for (int i = 0; i < 36; i++) v[i] = i;
  const int64_t shapes[4][2] = {{3, 4}, {4, 3}, {0, 3}, {1, 1}};
  for (int k = 0; k < 4; k++) {
    uopc_tensor in, res;
    tensor_of(&in, UOPC_F64, 2, shapes[k], v);
    const uopc_tensor *ins[1] = {&in};
    if (k == 0) {
      sym_binding b;
      sym_binding_init(&b);
      uopc_error err = {0};
      assert_uopc_ok(sym_dim_bind(&b, &n->dim, 3, &err), err);
      assert_uopc_ok(sym_dim_bind(&b, &m->dim, 4, &err), err);
      eval_one(c, out, ins, 1, &b, &res);
      expect_values(&res, (const double[]){0, -1, 2, 3, 4, 5, -6, 7, 8, 9, 10, -11}, 12, "x.diagonal(1) = -x.diagonal(1)");
      uopc_tensor_release(&res);
    }
    expect_agree(c, &out, 1, ins, 1, "diagonal store");
    uopc_tensor_release(&in);
  }
}

/* ---- Reductions and matmul. */

static void test_ir_eval_keepdims_and_batched_matmul_match_compiled(void **state) {
  core *c = *state;
  const sym_expr *b = dim(c, "b", 1, 4), *n = dim(c, "n", 1, 5), *k = dim(c, "k", 0, 5);
  const ir_node *x = input(c, "x", UOPC_F32, 3, SHAPE(b, n, k)), *y = input(c, "y", UOPC_F32, 3, SHAPE(b, k, n));
  const ir_node *p = ok_node(c, ir_matmul(c->g, x, y), "x @ y");
  const ir_node *outs[4] = {
    p,
    ok_node(c, ir_reduce(c->g, IR_SUM, p, 5u, 1), "sum keepdims"),
    ok_node(c, ir_reduce(c->g, IR_MAX, x, 3u, 1), "max keepdims"),
    ok_node(c, ir_reduce(c->g, IR_MEAN, ir_binary(c->g, IR_SUB, p, ir_reduce(c->g, IR_MEAN, p, 2u, 1)), 6u, 0), "mean"),
  };
  double v[100];
  for (int i = 0; i < 100; i++) v[i] = (double)((i * 7) % 9) - 4;
  uopc_tensor ins[2];
  tensor_of(&ins[0], UOPC_F32, 3, (const int64_t[]){3, 4, 5}, v);
  tensor_of(&ins[1], UOPC_F32, 3, (const int64_t[]){3, 5, 4}, v + 7);
  const uopc_tensor *in[2] = {&ins[0], &ins[1]};
  expect_agree(c, outs, 4, in, 2, "batched matmul, keepdims");
  release_all(ins, 2);
}

static void test_ir_eval_matmul_2d_matches_numpy(void **state) {
  core *c = *state;
  const ir_node *x = input(c, "x", UOPC_I32, 2, SHAPE(cst(c, 2), cst(c, 3)));
  const ir_node *mm = ok_node(c, ir_matmul(c->g, x, ir_transpose(c->g, x, 0, 1)), "x @ x.T");
  uopc_tensor in, res;
  tensor_of(&in, UOPC_I32, 2, (const int64_t[]){2, 3}, (const double[]){1, 2, 3, 4, 5, 6});
  const uopc_tensor *ins[1] = {&in};
  sym_binding b;
  sym_binding_init(&b);
  eval_one(c, mm, ins, 1, &b, &res);
  expect_values(&res, (const double[]){14, 32, 32, 77}, 4, "x @ x.T");
  uopc_tensor_release(&res);
  expect_agree(c, &mm, 1, ins, 1, "x @ x.T in i32");
  uopc_tensor_release(&in);
}

/* A column sum runs serially in the compiled code too: the same order, so
 * the same bits even for values no sum adds exactly. */
static void test_ir_eval_column_sum_matches_compiled_bit_for_bit(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 0, 64), *m = dim(c, "m", 1, 8);
  const ir_node *x = input(c, "x", UOPC_F32, 2, SHAPE(n, m));
  const ir_node *out = ok_node(c, ir_reduce(c->g, IR_SUM, x, 1u, 0), "sum(axis=0)");
  double v[7 * 37];
  for (int i = 0; i < 7 * 37; i++) v[i] = 0.1 * i + 1.0 / (i + 3);
  uopc_tensor in;
  tensor_of(&in, UOPC_F32, 2, (const int64_t[]){37, 7}, v);
  const uopc_tensor *ins[1] = {&in};
  expect_agree(c, &out, 1, ins, 1, "column sum of f32 tenths");
  uopc_tensor_release(&in);
}

static void test_ir_eval_empty_axis_max_is_bounds_sum_is_zero(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 0, 8);
  const ir_node *x = input(c, "x", UOPC_F64, 2, SHAPE(cst(c, 3), n));
  const ir_node *sum = ok_node(c, ir_reduce(c->g, IR_SUM, x, 2u, 0), "sum");
  const ir_node *mean = ok_node(c, ir_reduce(c->g, IR_MEAN, x, 2u, 0), "mean");
  const ir_node *max = ok_node(c, ir_reduce(c->g, IR_MAX, x, 2u, 0), "max");
  uopc_tensor in, res[2] = {{0}};
  tensor_of(&in, UOPC_F64, 2, (const int64_t[]){3, 0}, NULL);
  const uopc_tensor *ins[1] = {&in};
  sym_binding b;
  sym_binding_init(&b);
  uopc_error err = {0};
  assert_uopc_ok(sym_dim_bind(&b, &n->dim, 0, &err), err);
  const ir_node *two[2] = {sum, mean};
  assert_uopc_ok(ir_eval(c->g, two, 2, ins, 1, &b, res, &err), err);
  expect_values(&res[0], (const double[]){0, 0, 0}, 3, "sum over an empty axis");
  expect_values(&res[1], (const double[]){NAN, NAN, NAN}, 3, "mean over an empty axis");
  release_all(res, 2);
  const ir_node *both[2] = {sum, max};
  assert_uopc_code(ir_eval(c->g, both, 2, ins, 1, &b, res, &err), UOPC_E_BOUNDS, err);
  assert_contains(err.message, "empty axis");
  assert_null(res[0].storage);
  assert_null(res[1].storage);
  exec *e = compiled(c, both, 2, "empty axis");
  assert_int_equal(compare_call(c, e, both, 2, ins, 1, NULL, "max over an empty axis"), UOPC_E_BOUNDS);
  exec_free(e);
  uopc_tensor_release(&in);
}

/* ---- Rank 0 and outputs. */

static void test_ir_eval_rank0_inputs_constants_and_outputs(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 0, 8);
  const ir_node *k = input(c, "k", UOPC_F32, 0, NULL), *y = input(c, "y", UOPC_F32, 1, SHAPE(n));
  const ir_node *kk = ir_binary(c->g, IR_MUL, k, k);
  const ir_node *outs[4] = {
    ok_node(c, kk, "k * k"),
    ok_node(c, ir_binary(c->g, IR_SUB, y, ir_const(c->g, 0.1, UOPC_F32)), "y - 0.1"),
    ok_node(c, ir_reduce(c->g, IR_SUM, ir_binary(c->g, IR_ADD, y, k), 1u, 0), "sum(y + k)"),
    kk,
  };
  uopc_tensor ins[2], res[4];
  tensor_of(&ins[0], UOPC_F32, 0, NULL, (const double[]){2.5});
  tensor_of(&ins[1], UOPC_F32, 1, (const int64_t[]){3}, (const double[]){1, 2, 3});
  const uopc_tensor *in[2] = {&ins[0], &ins[1]};
  expect_agree(c, outs, 4, in, 2, "rank 0");
  sym_binding b;
  sym_binding_init(&b);
  uopc_error err = {0};
  assert_uopc_ok(sym_dim_bind(&b, &n->dim, 3, &err), err);
  assert_uopc_ok(ir_eval(c->g, outs, 4, in, 2, &b, res, &err), err);
  assert_int_equal(res[0].rank, 0);
  expect_values(&res[0], (const double[]){6.25}, 1, "k * k");
  expect_values(&res[1], (const double[]){1 - 0.1f, 2 - 0.1f, 3 - 0.1f}, 3, "y - 0.1 in f32");
  expect_values(&res[2], (const double[]){13.5}, 1, "sum(y + k)");
  assert_ptr_not_equal(res[0].storage, res[3].storage);   /* a repeated output is a tensor of its own */
  expect_values(&res[3], (const double[]){6.25}, 1, "k * k again");
  release_all(res, 4);
  release_all(ins, 2);
}

/* f32 arithmetic rounds in f32: 1 + 1e-8 is 1 there, not in f64. */
static void test_ir_eval_f32_rounds_in_float(void **state) {
  core *c = *state;
  const ir_node *x = input(c, "x", UOPC_F32, 1, SHAPE(cst(c, 2)));
  const ir_node *out = ok_node(c, ir_binary(c->g, IR_SUB, ir_binary(c->g, IR_ADD, x, ir_const(c->g, 1e-8, UOPC_F32)), x),
                               "(x + 1e-8) - x");
  uopc_tensor in, res;
  tensor_of(&in, UOPC_F32, 1, (const int64_t[]){2}, (const double[]){1, 0});
  const uopc_tensor *ins[1] = {&in};
  sym_binding b;
  sym_binding_init(&b);
  eval_one(c, out, ins, 1, &b, &res);
  expect_values(&res, (const double[]){0, (double)1e-8f}, 2, "(x + 1e-8) - x in f32");
  uopc_tensor_release(&res);
  expect_agree(c, &out, 1, ins, 1, "(x + 1e-8) - x");
  uopc_tensor_release(&in);
}

/* ---- Errors. */

static void expect_eval_error(core *c, const ir_node *const *outs, int n_out, const uopc_tensor *const *ins,
                              int n_in, const sym_binding *b, int code, const char *needle) {
  uopc_tensor res[2];
  uopc_error err = {0};
  memset(res, 0x5a, sizeof res);
  assert_uopc_code(ir_eval(c ? c->g : NULL, outs, n_out, ins, n_in, b, res, &err), code, err);
  if (needle) assert_contains(err.message, needle);
  for (int k = 0; k < n_out && k < 2; k++) assert_null(res[k].storage);
}

static void test_ir_eval_rejects_bad_arguments_as_invalid(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 0, 8);
  const ir_node *x = input(c, "x", UOPC_F32, 1, SHAPE(n)), *out = ir_unary(c->g, IR_NEG, x);
  uopc_tensor in, in2;
  tensor_of(&in, UOPC_F32, 1, (const int64_t[]){3}, (const double[]){1, 2, 3});
  tensor_of(&in2, UOPC_F32, 2, (const int64_t[]){1, 3}, (const double[]){1, 2, 3});
  const uopc_tensor *ins[1] = {&in}, *none[1] = {NULL}, *rank2[1] = {&in2};
  sym_binding b;
  sym_binding_init(&b);
  uopc_error err = {0};
  assert_uopc_ok(sym_dim_bind(&b, &n->dim, 3, &err), err);
  expect_eval_error(NULL, &out, 1, ins, 1, &b, UOPC_E_INVALID, "graph");
  expect_eval_error(c, NULL, 1, ins, 1, &b, UOPC_E_INVALID, NULL);
  expect_eval_error(c, &out, 0, ins, 1, &b, UOPC_E_INVALID, "output");
  expect_eval_error(c, &out, 1, ins, 0, &b, UOPC_E_INVALID, "takes 1 inputs, not 0");
  expect_eval_error(c, &out, 1, none, 1, &b, UOPC_E_INVALID, "'x' is NULL");
  expect_eval_error(c, &out, 1, rank2, 1, &b, UOPC_E_INVALID, "rank 2");
  expect_eval_error(c, &out, 1, ins, 1, NULL, UOPC_E_INVALID, "binding");
  core *other = fresh_core();
  const ir_node *foreign = ir_const(other->g, 1, UOPC_F32);
  expect_eval_error(c, &foreign, 1, ins, 1, &b, UOPC_E_INVALID, "another graph");
  const ir_node *null_out = NULL;
  expect_eval_error(c, &null_out, 1, ins, 1, &b, UOPC_E_INVALID, "NULL");
  assert_int_equal(ir_eval(c->g, &out, 1, ins, 1, &b, NULL, &err), UOPC_E_INVALID);
  drop_core(other);
  uopc_tensor_release(&in);
  uopc_tensor_release(&in2);
}

static void test_ir_eval_rejects_unbound_dims_dtypes_and_mismatched_views(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 0, 8), *s = dim(c, "s", -8, 8), *o = dim(c, "o", 0, 64);
  const ir_node *x = input(c, "x", UOPC_F32, 1, SHAPE(n));
  const ir_node *v = ok_node(c, ir_input_view(c->g, "v", UOPC_F32, 1, SHAPE(n), SHAPE(s), o), "v");
  const ir_node *out = ir_binary(c->g, IR_ADD, x, v);
  double vals[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  uopc_tensor in, base, view, f64, strided;
  uopc_error err = {0};
  tensor_of(&in, UOPC_F32, 1, (const int64_t[]){3}, vals);
  tensor_of(&f64, UOPC_F64, 1, (const int64_t[]){3}, vals);
  tensor_of(&base, UOPC_F32, 1, (const int64_t[]){8}, vals);
  assert_uopc_ok(uopc_tensor_slice(&view, &base, 0, 6, 0, -2, &err), err);   /* 6, 4, 2: stride -2, offset 6 */
  assert_uopc_ok(uopc_tensor_slice(&strided, &base, 0, 0, 6, 2, &err), err);   /* 0, 2, 4: not contiguous */
  const uopc_tensor *ok[2] = {&in, &view}, *wrong_dt[2] = {&f64, &view}, *not_packed[2] = {&strided, &view};
  sym_binding b;
  sym_binding_init(&b);
  expect_eval_error(c, &out, 1, ok, 2, &b, UOPC_E_UNBOUND, "'n'");
  const sym_expr *dims[] = {n, s, o};
  int64_t good[] = {3, -2, 6};
  for (int k = 0; k < 3; k++) assert_uopc_ok(sym_dim_bind(&b, &dims[k]->dim, good[k], &err), err);
  uopc_tensor res;
  eval_one(c, out, ok, 2, &b, &res);
  expect_values(&res, (const double[]){6, 5, 4}, 3, "x + base[6::-2]");
  uopc_tensor_release(&res);
  expect_eval_error(c, &out, 1, wrong_dt, 2, &b, UOPC_E_DTYPE, "is f64");
  expect_eval_error(c, &out, 1, not_packed, 2, &b, UOPC_E_BOUNDS, "'x' stride 0 is 2, the graph needs 1");
  b.values[0] = 4;
  expect_eval_error(c, &out, 1, ok, 2, &b, UOPC_E_BOUNDS, "'x' axis 0 is 3, the graph needs 4");
  b.values[0] = 3;
  b.values[1] = 2;
  expect_eval_error(c, &out, 1, ok, 2, &b, UOPC_E_BOUNDS, "'v' stride 0 is -2, the graph needs 2");
  b.values[1] = -2;
  b.values[2] = 5;
  expect_eval_error(c, &out, 1, ok, 2, &b, UOPC_E_BOUNDS, "'v' offset 0 is 6, the graph needs 5");
  uopc_tensor_release(&strided);
  uopc_tensor_release(&view);
  uopc_tensor_release(&base);
  uopc_tensor_release(&f64);
  uopc_tensor_release(&in);
}

/* A binding outside the dims' bounds (made by hand; sym_dim_bind refuses it)
 * can send a select past its axis: UOPC_E_BOUNDS, never a wild read. */
static void test_ir_eval_index_outside_an_axis_is_bounds(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 5, 8);
  const ir_node *x = input(c, "x", UOPC_F32, 1, SHAPE(n));
  const ir_node *out = ok_node(c, ir_select(c->g, x, 0, cst(c, 4)), "x[4]");
  uopc_tensor in;
  tensor_of(&in, UOPC_F32, 1, (const int64_t[]){2}, (const double[]){1, 2});
  const uopc_tensor *ins[1] = {&in};
  sym_binding b;
  sym_binding_init(&b);
  b.dims[0] = n->dim;
  b.values[0] = 2;
  b.count = 1;
  expect_eval_error(c, &out, 1, ins, 1, &b, UOPC_E_BOUNDS, "index 4 outside [0, 2)");
  uopc_tensor_release(&in);
}

int main(void) {
#define T(name) cmocka_unit_test_setup_teardown(name, core_setup, core_teardown)
  const struct CMUnitTest tests[] = {
    T(test_ir_eval_matches_compiled_random_graphs_f32),
    T(test_ir_eval_matches_compiled_random_graphs_f64),
    T(test_ir_eval_random_graphs_cover_every_op),
    T(test_ir_eval_int32_ops_wrap_like_compiled),
    T(test_ir_eval_int64_ops_wrap_like_compiled),
    T(test_ir_eval_casts_between_every_dtype_like_compiled),
    T(test_ir_eval_reads_strided_views_with_negative_strides_and_offsets),
    T(test_ir_eval_cyclic_permute_of_rank3_matches_numpy),
    T(test_ir_eval_slice_set_and_select_set_replace_the_view),
    T(test_ir_eval_slice_set_with_a_symbolic_step_writes_the_diagonal),
    T(test_ir_eval_keepdims_and_batched_matmul_match_compiled),
    T(test_ir_eval_matmul_2d_matches_numpy),
    T(test_ir_eval_column_sum_matches_compiled_bit_for_bit),
    T(test_ir_eval_empty_axis_max_is_bounds_sum_is_zero),
    T(test_ir_eval_rank0_inputs_constants_and_outputs),
    T(test_ir_eval_f32_rounds_in_float),
    T(test_ir_eval_rejects_bad_arguments_as_invalid),
    T(test_ir_eval_rejects_unbound_dims_dtypes_and_mismatched_views),
    T(test_ir_eval_index_outside_an_axis_is_bounds),
  };
#undef T
  return cmocka_run_group_tests(tests, testutil_fresh_cache, testutil_remove_cache);
}
