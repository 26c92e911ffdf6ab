/* test_grad_rules.c: the backward rules beyond lab 23.4's fifteen
 * (tp_grad_more.c), the variance ops (tp_stats.c) and the composites that
 * are recorded as primitives (tp_nn.c: softmax, log-softmax, layer norm),
 * section 23.7's training. Every op runs over a sequence of sizes that reaches 0, 1 and a
 * repeated size, on contiguous and transposed inputs, eagerly and through
 * one tp_compiled (grad_inputs: the traced rules), whose exact variant
 * count is checked. The loss is sum(y^2 / 2 + y), so the incoming gradient
 * y + 1 differs per element. Each gradient is compared with an analytic
 * reference written here in f64 (moves from index formulas, Python's slice
 * rules, PyTorch's conventions at ties), and with a central finite
 * difference of the eager loss. Through tensorjit too (tj_call_saving, then
 * tj_backward later) with y + 1 as the incoming gradient, passed in y's
 * layout and, for a transposed input, transposed: the vector-Jacobian
 * product must equal the same reference. The conventions where a derivative is not
 * unique, the NaN and inf corners of var and std, and the refusals with
 * their exact codes have cases of their own. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include "tensorjit.h"
#include "tp_compile.h"
#include "testutil.h"

enum { MAX_IN = 3, MAX_Y = 2, MAX_EL = 1024, MAX_SIZES = 8 };

static sym_arena *arena;
static sym_dim rows_dim, cols_dim;   /* R and C, each in [0, 16] */

static int setup(void **state) {
  uopc_error err = {0};
  if (testutil_fresh_cache(state) || sym_arena_new(&arena, &err)) return -1;
  if (sym_dim_init(&rows_dim, "R", 0, 16, 1, &err)) return -1;
  return sym_dim_init(&cols_dim, "C", 0, 16, 1, &err);
}

static int teardown(void **state) {
  sym_arena_free(arena);
  return testutil_remove_cache(state);
}

/* ---- A case: the op (a body over tp handles), its inputs' shapes and
 * values, the reference, and the sizes it runs over. */

#define R_ (-1)   /* an extent that is dim R */
#define C_ (-2)   /* ... dim C */

typedef struct rcase rcase;

/* What the reference sees and fills: inputs (row-major f64), outputs,
 * and d loss / d input for loss = sum(y^2 / 2 + y). */
typedef struct ref_io {
  const double *x[MAX_IN];
  int64_t r, cols;                   /* R and C of this call */
  double *y[MAX_Y];
  int y_rank[MAX_Y];
  int64_t y_shape[MAX_Y][UOPC_MAX_RANK];
  double *gx[MAX_IN];                /* zeroed; numel of the inputs */
} ref_io;

struct rcase {
  const char *name;
  void (*body)(tp_ctx *c, tp_tensor *const *in, tp_tensor **y, const rcase *k);
  void (*ref)(ref_io *io, const rcase *k);
  int n_in, n_y;
  int rank[MAX_IN];
  int64_t shape[MAX_IN][2];          /* R_, C_ or a constant */
  unsigned mask;                     /* the inputs differentiated */
  double lo[MAX_IN], hi[MAX_IN];     /* the inputs' value range */
  int64_t p[4];                      /* the op's parameters */
  double corr;                       /* var and std */
  int sizes[MAX_SIZES][2];           /* (R, C) per call; -1 ends */
  int artifacts;                     /* variants over the sequence, both layouts */
  double fd_h, fd_tol;               /* 0: the defaults */
  int no_fd;                         /* the op is piecewise constant (a cast to an integer) */
};

static double gy_of(double y) { return y + 1; }

/* ---- Inputs. */

static int64_t extent(int64_t spec, int64_t r, int64_t cols) { return spec == R_ ? r : spec == C_ ? cols : spec; }

static int64_t numel_of(const rcase *k, int i, int64_t r, int64_t cols) {
  int64_t n = 1;
  for (int d = 0; d < k->rank[i]; d++) n *= extent(k->shape[i][d], r, cols);
  return n;
}

/* Distinct values in [lo, hi] for the 29 positions below one period (no ties, never the middle). */
static double value_at(const rcase *k, int i, int64_t e) {
  double f = (double)((e * 37 + (i + 1) * 11) % 29) + 0.25;
  return k->lo[i] + (k->hi[i] - k->lo[i]) * f / 29.0;
}

/* Input i as a tensor of its logical values vals: contiguous, or (rank 2,
 * transposed) a transposed view of a (C, R) buffer. */
/* A tensor of rank (0 to 2) and shape holding vals row-major, stored
 * transposed (a view of column-major storage) when transposed and rank 2. */
static uopc_tensor tensor_of(int rank, const int64_t *shape, const double *vals, int transposed) {
  uopc_tensor t, v;
  uopc_error err = {0};
  if (!transposed || rank != 2) {
    assert_uopc_ok(uopc_tensor_empty(&t, UOPC_F64, rank, shape, &err), err);
    for (int64_t e = 0; e < uopc_tensor_numel(&t); e++) uopc_tensor_set(&t, e, vals[e]);
    return t;
  }
  int64_t flip[2] = {shape[1], shape[0]};
  assert_uopc_ok(uopc_tensor_empty(&t, UOPC_F64, 2, flip, &err), err);
  for (int64_t a = 0; a < shape[0]; a++)
    for (int64_t b = 0; b < shape[1]; b++) uopc_tensor_set(&t, b * shape[0] + a, vals[a * shape[1] + b]);
  assert_uopc_ok(uopc_tensor_transpose(&v, &t, 0, 1, &err), err);
  uopc_tensor_release(&t);
  return v;
}

static uopc_tensor make_input(const rcase *k, int i, int64_t r, int64_t cols, const double *vals, int transposed) {
  int64_t shape[2];
  for (int d = 0; d < k->rank[i]; d++) shape[d] = extent(k->shape[i][d], r, cols);
  return tensor_of(k->rank[i], shape, vals, transposed);
}

/* ---- The model: the case's body, then the loss over its outputs. */

static tp_tensor *loss_of(tp_ctx *c, tp_tensor *y) {
  tp_tensor *h = tp_scalar_at(c, 0.5, UOPC_F64, TP_HERE);
  return tp_sum(c, tp_add(c, tp_mul(c, tp_mul(c, y, y), h), y), 0u, 0);
}

static int model(tp_ctx *c, tp_tensor *const *in, tp_tensor **out, void *user) {
  const rcase *k = user;
  tp_tensor *y[MAX_Y] = {NULL};
  k->body(c, in, y, k);
  if (tp_status(c)) return tp_status(c);
  out[0] = loss_of(c, y[0]);
  for (int j = 1; j < k->n_y; j++) out[0] = tp_add(c, out[0], loss_of(c, y[j]));
  for (int j = 0; j < k->n_y; j++) out[1 + j] = y[j];
  return tp_status(c);
}

/* The case's body as a tensorjit model: its outputs are y, the loss is the
 * caller's (through the incoming gradient). */
static int tj_body(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {
  const rcase *k = user;
  tp_tensor *x[MAX_IN], *y[MAX_Y] = {NULL};
  for (int i = 0; i < k->n_in; i++) x[i] = in[i].t;
  k->body(c, x, y, k);
  for (int j = 0; j < k->n_y; j++) out[j] = y[j];
  return tp_status(c);
}

/* Backwards tensorjit refused because an output's extent is computed from
 * sizes (chapter 23.7, "Why saved dims stay symbolic"), by test. */
static int calls_tj;   /* backwards run through tensorjit */

/* ---- Comparing. */

static int same(double got, double want, double tol) {
  if (isnan(want) || isnan(got)) return isnan(want) && isnan(got);
  if (isinf(want) || isinf(got)) return got == want;
  return fabs(got - want) <= tol * fmax(1, fabs(want));
}

static void compare(const rcase *k, const char *what, int64_t r, int64_t cols, const uopc_tensor *got, int rank,
                    const int64_t *shape, const double *want, double tol) {
  if (got->rank != rank) fail_msg("%s, %s at R = %lld, C = %lld: rank %d, expected %d", k->name, what, (long long)r,
                                  (long long)cols, got->rank, rank);
  for (int d = 0; d < rank; d++)
    if (got->shape[d] != shape[d])
      fail_msg("%s, %s at R = %lld, C = %lld: axis %d is %lld, expected %lld", k->name, what, (long long)r,
               (long long)cols, d, (long long)got->shape[d], (long long)shape[d]);
  for (int64_t e = 0; e < uopc_tensor_numel(got); e++)
    if (!same(uopc_tensor_get(got, e), want[e], tol))
      fail_msg("%s, %s at R = %lld, C = %lld: element %lld is %.12g, expected %.12g", k->name, what, (long long)r,
               (long long)cols, (long long)e, uopc_tensor_get(got, e), want[e]);
}

/* The eager loss at the values vals (f64), for the finite differences. */
static double eager_loss(const rcase *k, int64_t r, int64_t cols, double *const *vals) {
  uopc_tensor in[MAX_IN], out[1 + MAX_Y] = {{0}};
  const uopc_tensor *ptrs[MAX_IN];
  uopc_error err = {0};
  for (int i = 0; i < k->n_in; i++) in[i] = make_input(k, i, r, cols, vals[i], 0), ptrs[i] = &in[i];
  assert_uopc_ok(tp_run_eager(model, (void *)k, ptrs, k->n_in, 1 + k->n_y, 0, out, NULL, &err), err);
  double l = uopc_tensor_get(&out[0], 0);
  for (int j = 0; j <= k->n_y; j++) uopc_tensor_release(&out[j]);
  for (int i = 0; i < k->n_in; i++) uopc_tensor_release(&in[i]);
  return l;
}

/* Central differences of the loss against the gradient got, element by element (where the loss is finite). */
static void check_fd(const rcase *k, int64_t r, int64_t cols, double *const *vals, int i, const uopc_tensor *got) {
  double h = k->fd_h ? k->fd_h : 1e-6, tol = k->fd_tol ? k->fd_tol : 1e-5;
  for (int64_t e = 0; e < numel_of(k, i, r, cols); e++) {
    double keep = vals[i][e];
    vals[i][e] = keep + h;
    double up = eager_loss(k, r, cols, vals);
    vals[i][e] = keep - h;
    double down = eager_loss(k, r, cols, vals);
    vals[i][e] = keep;
    if (!isfinite(up) || !isfinite(down)) continue;
    double fd = (up - down) / (2 * h), g = uopc_tensor_get(got, e);
    if (!(fabs(fd - g) <= tol * fmax(1, fabs(fd))))
      fail_msg("%s: d loss / d in[%d] element %lld at R = %lld, C = %lld is %.10g; the finite difference says %.10g",
               k->name, i, (long long)e, (long long)r, (long long)cols, g, fd);
  }
}

/* The case through tensorjit: the forward saves, the backward takes y + 1. */
static void run_tj(const rcase *k, tj_function *f, const ref_io *io, uopc_tensor *in, int64_t r, int64_t cols,
                   int transposed) {
  tj_arg args[MAX_IN];
  uopc_tensor ys[MAX_Y] = {{0}}, seeds[MAX_Y], grads[MAX_IN] = {{0}};
  const uopc_tensor *seed_ptrs[MAX_Y];
  double gy[MAX_EL];
  tj_saved *s = NULL;
  uopc_error err = {0};
  const char *mode = transposed ? "tensorjit, transposed" : "tensorjit";
  for (int i = 0; i < k->n_in; i++) args[i] = tj_tensor(&in[i]);
  if (tj_call_saving(f, args, k->n_in, ys, &s, &err))
    fail_msg("%s (%s) at R = %lld, C = %lld: %s", k->name, mode, (long long)r, (long long)cols, err.message);
  for (int j = 0; j < k->n_y; j++) {
    int64_t n = 1;
    for (int d = 0; d < io->y_rank[j]; d++) n *= io->y_shape[j][d];
    for (int64_t e = 0; e < n; e++) gy[e] = gy_of(io->y[j][e]);
    seeds[j] = tensor_of(io->y_rank[j], io->y_shape[j], gy, transposed);
    seed_ptrs[j] = &seeds[j];
  }
  int rc = tj_backward(f, s, seed_ptrs, grads, &err);
  calls_tj++;
  if (rc) fail_msg("%s (%s backward) at R = %lld, C = %lld: %s", k->name, mode, (long long)r, (long long)cols,
                        err.message);
  for (int i = 0, g = 0; !rc && i < k->n_in; i++) {
    if (!(k->mask >> i & 1u)) continue;
    int64_t shape[2];
    char what[64];
    for (int d = 0; d < k->rank[i]; d++) shape[d] = extent(k->shape[i][d], r, cols);
    snprintf(what, sizeof what, "d loss / d in[%d] (%s)", i, mode);
    compare(k, what, r, cols, &grads[g], k->rank[i], shape, io->gx[i], 1e-9);
    uopc_tensor_release(&grads[g++]);
  }
  tj_saved_free(s);
  for (int j = 0; j < k->n_y; j++) uopc_tensor_release(&ys[j]), uopc_tensor_release(&seeds[j]);
}

/* One call of the case, eager and compiled (f, and tensorjit's tf), against the reference and the finite differences. */
static void run_one(const rcase *k, tp_compiled *f, tj_function *tf, int64_t r, int64_t cols, int transposed) {
  double *vals[MAX_IN] = {NULL};
  ref_io io = {.r = r, .cols = cols};
  uopc_tensor in[MAX_IN];
  const uopc_tensor *ptrs[MAX_IN];
  for (int i = 0; i < k->n_in; i++) {
    int64_t n = numel_of(k, i, r, cols);
    vals[i] = calloc((size_t)n + 1, sizeof *vals[i]);
    io.gx[i] = calloc((size_t)n + 1, sizeof *io.gx[i]);
    for (int64_t e = 0; e < n; e++) vals[i][e] = value_at(k, i, e);
    if (i == 2) vals[i][0] = k->corr;   /* a correction passed as an input */
    io.x[i] = vals[i];
    in[i] = make_input(k, i, r, cols, vals[i], transposed);
    ptrs[i] = &in[i];
  }
  for (int j = 0; j < k->n_y; j++) io.y[j] = calloc(MAX_EL, sizeof *io.y[j]);
  k->ref(&io, k);
  const char *mode[2] = {transposed ? "eager, transposed" : "eager", transposed ? "compiled, transposed" : "compiled"};
  for (int m = 0; m < 2; m++) {
    uopc_tensor out[1 + MAX_Y] = {{0}}, grads[MAX_IN] = {{0}};
    uopc_error err = {0};
    int rc = m == 0 ? tp_run_eager(model, (void *)k, ptrs, k->n_in, 1 + k->n_y, k->mask, out, grads, &err)
                    : tp_call(f, ptrs, out, grads, &err);
    if (rc) fail_msg("%s (%s) at R = %lld, C = %lld: %s", k->name, mode[m], (long long)r, (long long)cols, err.message);
    char what[64];
    for (int j = 0; j < k->n_y; j++) {
      snprintf(what, sizeof what, "y%d (%s)", j, mode[m]);
      compare(k, what, r, cols, &out[1 + j], io.y_rank[j], io.y_shape[j], io.y[j], 1e-12);
    }
    for (int i = 0, g = 0; i < k->n_in; i++) {
      if (!(k->mask >> i & 1u)) continue;
      int64_t shape[2];
      for (int d = 0; d < k->rank[i]; d++) shape[d] = extent(k->shape[i][d], r, cols);
      snprintf(what, sizeof what, "d loss / d in[%d] (%s)", i, mode[m]);
      compare(k, what, r, cols, &grads[g], k->rank[i], shape, io.gx[i], 1e-9);
      if (m == 0 && !transposed && !k->no_fd) check_fd(k, r, cols, vals, i, &grads[g]);
      uopc_tensor_release(&grads[g++]);
    }
    for (int j = 0; j <= k->n_y; j++) uopc_tensor_release(&out[j]);
  }
  run_tj(k, tf, &io, in, r, cols, transposed);
  for (int i = 0; i < k->n_in; i++) uopc_tensor_release(&in[i]), free(vals[i]), free(io.gx[i]);
  for (int j = 0; j < k->n_y; j++) free(io.y[j]);
}

static tp_arg arg_of(const rcase *k, int i) {
  static const char *const names[MAX_IN] = {"a", "b", "corr"};
  tp_arg a = {names[i], UOPC_F64, k->rank[i], {NULL}};
  for (int d = 0; d < k->rank[i]; d++)
    a.shape[d] = k->shape[i][d] == R_   ? sym_expr_dim(arena, &rows_dim)
                 : k->shape[i][d] == C_ ? sym_expr_dim(arena, &cols_dim)
                                        : sym_expr_const(arena, k->shape[i][d]);
  return a;
}

static void run_case(const rcase *k) {
  tp_arg args[MAX_IN];
  for (int i = 0; i < k->n_in; i++) args[i] = arg_of(k, i);
  tp_options o = {.grad_inputs = k->mask};
  tp_compiled *f = NULL;
  uopc_error err = {0};
  assert_uopc_ok(tp_compiled_new(&f, model, (void *)k, args, k->n_in, 1 + k->n_y, &o, &err), err);
  tj_function *tf = NULL;
  assert_uopc_ok(tj_compile(&tf, tj_body, (void *)k, &(tj_options){.n_outputs = k->n_y, .grad_args = k->mask}, &err),
                 err);
  for (int t = 0; t < 2; t++)
    for (int s = 0; s < MAX_SIZES && k->sizes[s][0] >= 0; s++) run_one(k, f, tf, k->sizes[s][0], k->sizes[s][1], t);
  int built = tp_compiled_variant_count(f);
  tp_compiled_free(f);
  tj_free(tf);
  if (built != k->artifacts)
    fail_msg("%s: %d variants over the sizes, expected %d (sizes are read at run time)", k->name, built, k->artifacts);
}

/* ---- References. */

static void set_y(ref_io *io, int j, int rank, int64_t d0, int64_t d1, int64_t d2) {
  int64_t d[3] = {d0, d1, d2};
  io->y_rank[j] = rank;
  for (int a = 0; a < rank; a++) io->y_shape[j][a] = d[a];
}

/* Elementwise y = f(a[, b]) over (R, C): f and its partial derivatives. */
static void ref_unary(ref_io *io, const rcase *k) {
  int64_t n = io->r * io->cols;
  set_y(io, 0, 2, io->r, io->cols, 0);
  for (int64_t e = 0; e < n; e++) {
    double x = io->x[0][e], y, d;
    switch (k->p[0]) {
    case IR_ABS: y = fabs(x), d = x > 0 ? 1 : x < 0 ? -1 : 0; break;
    case IR_LOG: y = log(x), d = 1 / x; break;
    default: y = sqrt(x), d = 0.5 / sqrt(x); break;
    }
    io->y[0][e] = y;
    io->gx[0][e] = d * gy_of(y);
  }
}

/* b broadcast from (C) when its rank is 1. */
static double b_at(ref_io *io, const rcase *k, int64_t e) { return io->x[1][k->rank[1] == 1 ? e % io->cols : e]; }
static double *gb_at(ref_io *io, const rcase *k, int64_t e) { return &io->gx[1][k->rank[1] == 1 ? e % io->cols : e]; }

static void ref_binary(ref_io *io, const rcase *k) {
  set_y(io, 0, 2, io->r, io->cols, 0);
  for (int64_t e = 0; e < io->r * io->cols; e++) {
    double a = io->x[0][e], b = b_at(io, k, e), y, da, db;
    if (k->p[0] == IR_POW) y = pow(a, b), da = b * pow(a, b - 1), db = y * log(a);
    else y = fmin(a, b), da = a < b ? 1 : a > b ? 0 : 0.5, db = 1 - da;   /* PyTorch: a tie splits evenly */
    double g = gy_of(y);
    io->y[0][e] = y;
    io->gx[0][e] += g * da;
    *gb_at(io, k, e) += g * db;
  }
}

/* Reductions of (R, C) over p[0] (bit 0: rows, bit 1: columns; 3 all), keepdims p[1]: group of each element. */
static int64_t group_of(const ref_io *io, unsigned axes, int64_t e) {
  int64_t i = e / io->cols, j = e % io->cols;
  return axes == 3u ? 0 : axes == 1u ? j : i;
}

static void reduced_shape(ref_io *io, int jy, unsigned axes, int keep) {
  if (axes == 3u) keep ? set_y(io, jy, 2, 1, 1, 0) : set_y(io, jy, 0, 0, 0, 0);
  else if (axes == 1u) keep ? set_y(io, jy, 2, 1, io->cols, 0) : set_y(io, jy, 1, io->cols, 0, 0);
  else keep ? set_y(io, jy, 2, io->r, 1, 0) : set_y(io, jy, 1, io->r, 0, 0);
}

static int64_t groups_of(const ref_io *io, unsigned axes) { return axes == 3u ? 1 : axes == 1u ? io->cols : io->r; }

static void ref_amax(ref_io *io, const rcase *k) {
  unsigned axes = (unsigned)k->p[0];
  int64_t n = io->r * io->cols, ng = groups_of(io, axes), hits[64] = {0};
  reduced_shape(io, 0, axes, (int)k->p[1]);
  for (int64_t g = 0; g < ng; g++) io->y[0][g] = -INFINITY;
  for (int64_t e = 0; e < n; e++) io->y[0][group_of(io, axes, e)] = fmax(io->y[0][group_of(io, axes, e)], io->x[0][e]);
  for (int64_t e = 0; e < n; e++) hits[group_of(io, axes, e)] += io->x[0][e] == io->y[0][group_of(io, axes, e)];
  for (int64_t e = 0; e < n; e++) {   /* PyTorch's amax: the gradient split over the ties */
    int64_t g = group_of(io, axes, e);
    if (io->x[0][e] == io->y[0][g]) io->gx[0][e] = gy_of(io->y[0][g]) / (double)hits[g];
  }
}

/* var / std (p[2]: 1 std) with the correction, and with n_y 2 the mean: PyTorch's closed forms. */
static void ref_moments(ref_io *io, const rcase *k) {
  unsigned axes = (unsigned)k->p[0];
  int root = (int)k->p[2];
  int64_t n = io->r * io->cols, ng = groups_of(io, axes), count = axes == 3u ? n : axes == 1u ? io->r : io->cols;
  double mean[64] = {0}, ss[64] = {0}, dof = fmax(0, (double)count - k->corr);
  for (int64_t e = 0; e < n; e++) mean[group_of(io, axes, e)] += io->x[0][e];
  for (int64_t g = 0; g < ng; g++) mean[g] /= (double)count;
  for (int64_t e = 0; e < n; e++) {
    double d = io->x[0][e] - mean[group_of(io, axes, e)];
    ss[group_of(io, axes, e)] += d * d;
  }
  reduced_shape(io, 0, axes, (int)k->p[1]);
  for (int64_t g = 0; g < ng; g++) io->y[0][g] = root ? sqrt(ss[g] / dof) : ss[g] / dof;
  if (k->n_y == 2) {
    reduced_shape(io, 1, axes, (int)k->p[1]);
    for (int64_t g = 0; g < ng; g++) io->y[1][g] = mean[g];
  }
  for (int64_t e = 0; e < n; e++) {
    int64_t g = group_of(io, axes, e);
    double d = io->x[0][e] - mean[g], y = io->y[0][g];
    double dv = root ? (y == 0 ? 0 : d / (dof * y)) : 2 * d / dof;   /* std: 0 where it is 0 */
    io->gx[0][e] = gy_of(y) * dv + (k->n_y == 2 ? gy_of(mean[g]) / (double)count : 0);
  }
}

/* softmax (p[0] 0) and log-softmax (1) over axis p[1], layer norm (2) over
 * the last with weight and bias: the values, and the closed forms PyTorch's
 * backward kernels compute (softmax y (g - sum(g y)); log-softmax g -
 * softmax sum(g); layer norm's inv (gxhat - mean(gxhat) - xhat
 * mean(gxhat xhat)), gw = sum(g xhat), gb = sum(g) over the rows). */
enum { C_SOFTMAX, C_LOG_SOFTMAX, C_LAYER_NORM };
#define LN_EPS 1e-5

static void ref_composite(ref_io *io, const rcase *k) {
  int64_t n = io->r * io->cols;
  unsigned axes = k->p[0] == C_LAYER_NORM ? 2u : 1u << (k->p[1] < 0 ? k->p[1] + 2 : k->p[1]);   /* a matrix */
  int64_t ng = groups_of(io, axes), count = axes == 1u ? io->r : io->cols;
  double m[64], sum[64] = {0}, gsum[64] = {0}, gdot[64] = {0};
  set_y(io, 0, 2, io->r, io->cols, 0);
  for (int64_t g = 0; g < ng; g++) m[g] = k->p[0] == C_LAYER_NORM ? 0 : -INFINITY;
  if (k->p[0] == C_LAYER_NORM) {   /* m the mean, sum the variance, then inv */
    for (int64_t e = 0; e < n; e++) m[group_of(io, axes, e)] += io->x[0][e] / (double)count;
    for (int64_t e = 0; e < n; e++) {
      double d = io->x[0][e] - m[group_of(io, axes, e)];
      sum[group_of(io, axes, e)] += d * d / (double)count;
    }
    for (int64_t g = 0; g < ng; g++) sum[g] = 1 / sqrt(sum[g] + LN_EPS);
    for (int64_t e = 0; e < n; e++) {
      int64_t g = group_of(io, axes, e), j = e % io->cols;
      double xhat = (io->x[0][e] - m[g]) * sum[g];
      io->y[0][e] = xhat * io->x[1][j] + io->x[2][j];
      double gy = gy_of(io->y[0][e]), gxhat = gy * io->x[1][j];
      io->gx[1][j] += gy * xhat, io->gx[2][j] += gy;
      gsum[g] += gxhat / (double)count, gdot[g] += gxhat * xhat / (double)count;
    }
    for (int64_t e = 0; e < n; e++) {
      int64_t g = group_of(io, axes, e), j = e % io->cols;
      double xhat = (io->x[0][e] - m[g]) * sum[g], gxhat = gy_of(io->y[0][e]) * io->x[1][j];
      io->gx[0][e] = sum[g] * (gxhat - gsum[g] - xhat * gdot[g]);
    }
    return;
  }
  for (int64_t e = 0; e < n; e++) m[group_of(io, axes, e)] = fmax(m[group_of(io, axes, e)], io->x[0][e]);
  for (int64_t e = 0; e < n; e++) sum[group_of(io, axes, e)] += exp(io->x[0][e] - m[group_of(io, axes, e)]);
  for (int64_t e = 0; e < n; e++) {
    int64_t g = group_of(io, axes, e);
    double sm = exp(io->x[0][e] - m[g]) / sum[g];
    io->y[0][e] = k->p[0] == C_SOFTMAX ? sm : io->x[0][e] - m[g] - log(sum[g]);
    gsum[g] += gy_of(io->y[0][e]), gdot[g] += gy_of(io->y[0][e]) * sm;
  }
  for (int64_t e = 0; e < n; e++) {
    int64_t g = group_of(io, axes, e);
    double sm = exp(io->x[0][e] - m[g]) / sum[g], gy = gy_of(io->y[0][e]);
    io->gx[0][e] = k->p[0] == C_SOFTMAX ? sm * (gy - gdot[g]) : gy - sm * gsum[g];
  }
}

/* Python's slice.indices: *start and the length of x[start:stop:step] over n. */
static int64_t slice_len(int64_t n, int64_t start, int64_t stop, int64_t step, int64_t *first) {
  int64_t lo = step > 0 ? 0 : -1, hi = step > 0 ? n : n - 1;
  if (start == UOPC_SLICE_NONE) start = step > 0 ? lo : hi;
  else start = start < 0 ? (start + n < lo ? lo : start + n) : (start > hi ? hi : start);
  if (stop == UOPC_SLICE_NONE) stop = step > 0 ? hi : lo;
  else stop = stop < 0 ? (stop + n < lo ? lo : stop + n) : (stop > hi ? hi : stop);
  *first = start;
  int64_t len = step > 0 ? (stop - start + step - 1) / step : (start - stop - step - 1) / -step;
  return len > 0 ? len : 0;
}

/* Moves: y[e] = x[src[e]], so d x[src[e]] += gy[e]. p[0] says which. */
enum { M_SLICE_COLS, M_SLICE_HALF, M_SLICE_ROWS_REV, M_SELECT_ROW, M_SELECT_LAST_ROW, M_SELECT_COL, M_SQUEEZE,
       M_UNSQUEEZE, M_FLATTEN, M_UNFLATTEN, M_REFLATTEN, M_DIAG, M_REPEAT, M_REPEAT3, M_PERMUTE, M_CAST32, M_CAST64I };

static void ref_move(ref_io *io, const rcase *k) {
  int64_t r = io->r, cols = io->cols, n = 0, first = 0, len;
  int64_t src[MAX_EL];
  switch (k->p[0]) {
  case M_SLICE_COLS:   /* x[:, p1:p2:p3] */
  case M_SLICE_HALF:   /* x[:, cols//2:] */
    len = k->p[0] == M_SLICE_HALF ? slice_len(cols, cols / 2, UOPC_SLICE_NONE, 1, &first)
                                  : slice_len(cols, k->p[1], k->p[2], k->p[3], &first);
    set_y(io, 0, 2, r, len, 0);
    for (int64_t i = 0; i < r; i++)
      for (int64_t j = 0; j < len; j++) src[n++] = i * cols + first + j * (k->p[0] == M_SLICE_HALF ? 1 : k->p[3]);
    break;
  case M_SLICE_ROWS_REV:   /* x[::-1] */
    set_y(io, 0, 2, r, cols, 0);
    for (int64_t i = 0; i < r; i++)
      for (int64_t j = 0; j < cols; j++) src[n++] = (r - 1 - i) * cols + j;
    break;
  case M_SELECT_ROW:        /* x[p1] */
  case M_SELECT_LAST_ROW:   /* x[rows - 1] */
    set_y(io, 0, 1, cols, 0, 0);
    for (int64_t j = 0; j < cols; j++) src[n++] = (k->p[0] == M_SELECT_ROW ? k->p[1] : r - 1) * cols + j;
    break;
  case M_SELECT_COL:   /* x[:, -1] */
    set_y(io, 0, 1, r, 0, 0);
    for (int64_t i = 0; i < r; i++) src[n++] = i * cols + cols - 1;
    break;
  case M_DIAG: {
    int64_t off = k->p[1], l = off >= 0 ? (r < cols - off ? r : cols - off) : (r + off < cols ? r + off : cols);
    l = l > 0 ? l : 0;
    set_y(io, 0, 1, l, 0, 0);
    for (int64_t i = 0; i < l; i++) src[n++] = off >= 0 ? i * cols + i + off : (i - off) * cols + i;
    break;
  }
  case M_REPEAT:    /* repeat(p1, p2) */
  case M_REPEAT3: { /* repeat(p1, p2, p3): a new leading axis */
    int three = k->p[0] == M_REPEAT3;
    int64_t lead = three ? k->p[1] : 1, r0 = three ? k->p[2] : k->p[1] < 0 ? r : k->p[1], r1 = three ? k->p[3] : k->p[2];
    three ? set_y(io, 0, 3, lead, r0 * r, r1 * cols) : set_y(io, 0, 2, r0 * r, r1 * cols, 0);
    for (int64_t l = 0; l < lead; l++)
      for (int64_t i = 0; i < r0 * r; i++)
        for (int64_t j = 0; j < r1 * cols; j++) src[n++] = (i % r) * cols + j % cols;
    break;
  }
  case M_PERMUTE:   /* permute(unsqueeze(x, 1), 2, 0, 1): (C, R, 1) */
    set_y(io, 0, 3, cols, r, 1);
    for (int64_t j = 0; j < cols; j++)
      for (int64_t i = 0; i < r; i++) src[n++] = i * cols + j;
    break;
  default:   /* the same elements in order: squeeze, unsqueeze, flatten, unflatten, casts */
    if (k->p[0] == M_SQUEEZE) set_y(io, 0, 1, cols, 0, 0);
    else if (k->p[0] == M_UNSQUEEZE) set_y(io, 0, 3, r, 1, cols);
    else if (k->p[0] == M_FLATTEN) set_y(io, 0, 1, r * cols, 0, 0);
    else if (k->p[0] == M_UNFLATTEN) set_y(io, 0, 3, r, cols, 1);
    else set_y(io, 0, 2, r, cols, 0);
    for (int64_t e = 0; e < (k->p[0] == M_SQUEEZE ? cols : r * cols); e++) src[n++] = e;
  }
  for (int64_t e = 0; e < n; e++) {
    double x = io->x[0][src[e]];
    double y = k->p[0] == M_CAST32 ? (double)(float)x : k->p[0] == M_CAST64I ? (double)(int64_t)x : x;
    io->y[0][e] = y;
    /* the gradient crosses the f32 cast as f32 (PyTorch's too); a cast to an integer passes none */
    if (k->p[0] == M_CAST32) io->gx[0][src[e]] += (double)(float)gy_of(y);
    else if (k->p[0] != M_CAST64I) io->gx[0][src[e]] += gy_of(y);
  }
}

/* ---- Bodies. */

static void b_unary(tp_ctx *c, tp_tensor *const *in, tp_tensor **y, const rcase *k) {
  y[0] = tp_unary_at(c, (ir_op)k->p[0], in[0], TP_HERE);
}

static void b_binary(tp_ctx *c, tp_tensor *const *in, tp_tensor **y, const rcase *k) {
  y[0] = tp_binary_at(c, (ir_op)k->p[0], in[0], in[1], TP_HERE);
}

static void b_amax(tp_ctx *c, tp_tensor *const *in, tp_tensor **y, const rcase *k) {
  y[0] = tp_amax(c, in[0], (unsigned)k->p[0], (int)k->p[1]);
}

static void b_moments(tp_ctx *c, tp_tensor *const *in, tp_tensor **y, const rcase *k) {
  tp_tensor **mean = k->n_y == 2 ? &y[1] : NULL;
  y[0] = tp_moments_at(c, in[0], (unsigned)k->p[0], (int)k->p[1], k->corr, k->n_in == 3 ? in[2] : NULL,
                       (int)k->p[2], mean, TP_HERE);
}

static void b_composite(tp_ctx *c, tp_tensor *const *in, tp_tensor **y, const rcase *k) {
  if (k->p[0] == C_SOFTMAX) y[0] = tp_softmax(c, in[0], (int)k->p[1]);
  else if (k->p[0] == C_LOG_SOFTMAX) y[0] = tp_log_softmax(c, in[0], (int)k->p[1]);
  else y[0] = tp_layer_norm(c, in[0], in[1], in[2], LN_EPS);
}

static void b_move(tp_ctx *c, tp_tensor *const *in, tp_tensor **y, const rcase *k) {
  tp_tensor *x = in[0];
  tp_int rows = tp_size(c, x, 0), cols = tp_size(c, x, -1);
  switch (k->p[0]) {
  case M_SLICE_COLS: y[0] = tp_slice(c, x, 1, tp_int_const(c, k->p[1]), tp_int_const(c, k->p[2]), k->p[3]); break;
  case M_SLICE_HALF: y[0] = tp_slice(c, x, 1, tp_int_floordiv(c, cols, tp_int_const(c, 2)), TP_NONE, 1); break;
  case M_SLICE_ROWS_REV: y[0] = tp_slice(c, x, 0, TP_NONE, TP_NONE, -1); break;
  case M_SELECT_ROW: y[0] = tp_select(c, x, 0, tp_int_const(c, k->p[1])); break;
  case M_SELECT_LAST_ROW: y[0] = tp_select(c, x, 0, tp_int_sub(c, rows, tp_int_const(c, 1))); break;
  case M_SELECT_COL: y[0] = tp_select(c, x, 1, tp_int_const(c, -1)); break;
  case M_SQUEEZE: y[0] = tp_squeeze(c, x, 0); break;
  case M_UNSQUEEZE: y[0] = tp_unsqueeze(c, x, 1); break;
  case M_FLATTEN: y[0] = tp_flatten(c, x, 0, 1); break;
  case M_UNFLATTEN: y[0] = tp_unflatten_at(c, x, 1, 2, (tp_int[]){cols, tp_int_const(c, 1)}, TP_HERE); break;
  case M_REFLATTEN: y[0] = tp_unflatten_at(c, tp_flatten(c, x, 0, 1), 0, 2, (tp_int[]){rows, cols}, TP_HERE); break;
  case M_DIAG: y[0] = tp_diagonal(c, x, k->p[1]); break;
  case M_REPEAT:   /* a count of -1 stands for rows, a size read at run time */
    y[0] = k->p[1] < 0 ? tp_repeat_sizes_at(c, x, 2, (tp_int[]){rows, tp_int_const(c, k->p[2])}, TP_HERE)
                       : tp_repeat(c, x, k->p[1], k->p[2]);
    break;
  case M_REPEAT3: y[0] = tp_repeat(c, x, k->p[1], k->p[2], k->p[3]); break;
  case M_PERMUTE: y[0] = tp_permute(c, tp_unsqueeze(c, x, 1), 2, 0, 1); break;
  case M_CAST32: y[0] = tp_cast(c, tp_cast(c, x, UOPC_F32), UOPC_F64); break;
  case M_CAST64I: y[0] = tp_cast(c, tp_cast(c, x, UOPC_I64), UOPC_F64); break;
  }
}

/* ---- The cases. */

#define ONE_IN(shape0, shape1) .n_in = 1, .n_y = 1, .rank = {2}, .shape = {{shape0, shape1}}, .mask = 1u
#define SIZES(...) .sizes = {__VA_ARGS__, {-1, -1}}
/* (R, C): 0 rows, 0 columns, 1 x 1, and (3, 4) again */
#define SWEEP SIZES({3, 4}, {0, 4}, {1, 1}, {3, 4}, {4, 3}, {2, 0}, {1, 5})
#define UNIT .lo = {-1}, .hi = {1}
#define POS .lo = {0.5}, .hi = {2}

static const rcase pointwise[] = {
    {"abs", b_unary, ref_unary, ONE_IN(R_, C_), UNIT, .p = {IR_ABS}, SWEEP, .artifacts = 1},
    {"log", b_unary, ref_unary, ONE_IN(R_, C_), POS, .p = {IR_LOG}, SWEEP, .artifacts = 1},
    {"sqrt", b_unary, ref_unary, ONE_IN(R_, C_), POS, .p = {IR_SQRT}, SWEEP, .artifacts = 1},
    {"pow(a, b)", b_binary, ref_binary, .n_in = 2, .n_y = 1, .rank = {2, 2}, .shape = {{R_, C_}, {R_, C_}},
     .mask = 3u, .lo = {0.5, -1.5}, .hi = {2, 1.5}, .p = {IR_POW}, SWEEP, .artifacts = 1},
    {"pow(a, b[C])", b_binary, ref_binary, .n_in = 2, .n_y = 1, .rank = {2, 1}, .shape = {{R_, C_}, {C_}},
     .mask = 3u, .lo = {0.5, -1.5}, .hi = {2, 1.5}, .p = {IR_POW}, SWEEP, .artifacts = 1},
    {"minimum(a, b)", b_binary, ref_binary, .n_in = 2, .n_y = 1, .rank = {2, 2}, .shape = {{R_, C_}, {R_, C_}},
     .mask = 3u, .lo = {-1, -0.99}, .hi = {1, 1.01}, .p = {IR_MINIMUM}, SWEEP, .artifacts = 1},
    {"minimum(a, b[C])", b_binary, ref_binary, .n_in = 2, .n_y = 1, .rank = {2, 1}, .shape = {{R_, C_}, {C_}},
     .mask = 3u, .lo = {-1, -0.99}, .hi = {1, 1.01}, .p = {IR_MINIMUM}, SWEEP, .artifacts = 1},
};

/* amax over an empty axis is refused (test_amax_of_an_empty_axis_is_refused): these sweeps avoid one */
static const rcase reductions[] = {
    {"amax(x)", b_amax, ref_amax, ONE_IN(R_, C_), UNIT, .p = {3, 0}, SIZES({3, 4}, {1, 1}, {1, 5}, {3, 4}, {5, 2}),
     .artifacts = 1},
    {"amax(x, 0)", b_amax, ref_amax, ONE_IN(R_, C_), UNIT, .p = {1, 0}, SIZES({3, 4}, {1, 0}, {1, 1}, {3, 4}, {5, 2}),
     .artifacts = 1},
    {"amax(x, 1, keepdims)", b_amax, ref_amax, ONE_IN(R_, C_), UNIT, .p = {2, 1},
     SIZES({3, 4}, {0, 4}, {1, 1}, {3, 4}, {5, 2}), .artifacts = 1},
    {"var(x)", b_moments, ref_moments, ONE_IN(R_, C_), UNIT, .p = {3, 0, 0}, .corr = 1, SWEEP, .artifacts = 1},
    {"var(x, 0, correction 0, keepdims)", b_moments, ref_moments, ONE_IN(R_, C_), UNIT, .p = {1, 1, 0}, .corr = 0,
     SWEEP, .artifacts = 1},
    {"var(x, 1, correction 2)", b_moments, ref_moments, ONE_IN(R_, C_), UNIT, .p = {2, 0, 0}, .corr = 2, SWEEP,
     .artifacts = 1},
    {"std(x)", b_moments, ref_moments, ONE_IN(R_, C_), UNIT, .p = {3, 0, 1}, .corr = 1, SWEEP, .artifacts = 1},
    {"std(x, 1, correction 0, keepdims)", b_moments, ref_moments, ONE_IN(R_, C_), UNIT, .p = {2, 1, 1}, .corr = 0,
     SWEEP, .artifacts = 1},
    {"var_mean(x, 0)", b_moments, ref_moments, .n_in = 1, .n_y = 2, .rank = {2}, .shape = {{R_, C_}}, .mask = 1u,
     UNIT, .p = {1, 0, 0}, .corr = 1, SWEEP, .artifacts = 1},
    {"std_mean(x, keepdims)", b_moments, ref_moments, .n_in = 1, .n_y = 2, .rank = {2}, .shape = {{R_, C_}},
     .mask = 1u, UNIT, .p = {3, 1, 1}, .corr = 1, SWEEP, .artifacts = 1},
    /* the correction a rank-0 input: 1 here, one artifact for every value */
    {"std(x, 1, correction input)", b_moments, ref_moments, .n_in = 3, .n_y = 1, .rank = {2, 0, 0},
     .shape = {{R_, C_}}, .mask = 1u, UNIT, .p = {2, 0, 1}, .corr = 1, SWEEP, .artifacts = 1},
};

/* softmax's max over an empty axis is refused, as amax's is: the sweeps along an axis avoid one */
#define ALONG_COLS SIZES({3, 4}, {0, 4}, {1, 1}, {3, 4}, {5, 2}, {1, 5})
#define ALONG_ROWS SIZES({3, 4}, {3, 0}, {1, 1}, {3, 4}, {2, 5}, {5, 1})
static const rcase composites[] = {
    {"softmax(x, 1)", b_composite, ref_composite, ONE_IN(R_, C_), .lo = {-3}, .hi = {3}, .p = {C_SOFTMAX, 1},
     ALONG_COLS, .artifacts = 1},
    {"softmax(x, 0)", b_composite, ref_composite, ONE_IN(R_, C_), .lo = {-3}, .hi = {3}, .p = {C_SOFTMAX, 0},
     ALONG_ROWS, .artifacts = 1},
    {"log_softmax(x, -1)", b_composite, ref_composite, ONE_IN(R_, C_), .lo = {-3}, .hi = {3},
     .p = {C_LOG_SOFTMAX, -1}, ALONG_COLS, .artifacts = 1},
    {"layer_norm(x, w, b)", b_composite, ref_composite, .n_in = 3, .n_y = 1, .rank = {2, 1, 1},
     .shape = {{R_, C_}, {C_}, {C_}}, .mask = 7u, .lo = {-2, 0.5, -1}, .hi = {2, 1.5, 1}, .p = {C_LAYER_NORM},
     SWEEP, .artifacts = 1},
};

static const rcase moves[] = {
    {"x[:, 1::2]", b_move, ref_move, ONE_IN(R_, C_), UNIT, .p = {M_SLICE_COLS, 1, UOPC_SLICE_NONE, 2}, SWEEP,
     .artifacts = 1},
    {"x[:, -6:-2:2] (clamped)", b_move, ref_move, ONE_IN(R_, C_), UNIT, .p = {M_SLICE_COLS, -6, -2, 2}, SWEEP,
     .artifacts = 1},
    {"x[:, ::-1]", b_move, ref_move, ONE_IN(R_, C_), UNIT, .p = {M_SLICE_COLS, UOPC_SLICE_NONE, UOPC_SLICE_NONE, -1},
     SWEEP, .artifacts = 1},
    {"x[:, cols//2:]", b_move, ref_move, ONE_IN(R_, C_), UNIT, .p = {M_SLICE_HALF}, SWEEP, .artifacts = 1},
    {"x[::-1]", b_move, ref_move, ONE_IN(R_, C_), UNIT, .p = {M_SLICE_ROWS_REV}, SWEEP, .artifacts = 1},
    {"x[1]", b_move, ref_move, ONE_IN(R_, C_), UNIT, .p = {M_SELECT_ROW, 1}, SIZES({3, 4}, {2, 0}, {2, 1}, {3, 4}, {5, 2}),
     .artifacts = 1},
    {"x[rows-1]", b_move, ref_move, ONE_IN(R_, C_), UNIT, .p = {M_SELECT_LAST_ROW},
     SIZES({3, 4}, {1, 0}, {1, 1}, {3, 4}, {5, 2}), .artifacts = 1},
    {"x[:, -1]", b_move, ref_move, ONE_IN(R_, C_), UNIT, .p = {M_SELECT_COL}, SIZES({3, 4}, {0, 1}, {1, 1}, {3, 4}, {2, 5}),
     .artifacts = 1},
    {"squeeze(x, 0) of (1, C)", b_move, ref_move, ONE_IN(1, C_), UNIT, .p = {M_SQUEEZE}, SWEEP, .artifacts = 1},
    {"unsqueeze(x, 1)", b_move, ref_move, ONE_IN(R_, C_), UNIT, .p = {M_UNSQUEEZE}, SWEEP, .artifacts = 1},
    {"flatten(x)", b_move, ref_move, ONE_IN(R_, C_), UNIT, .p = {M_FLATTEN}, SWEEP, .artifacts = 1},
    {"unflatten(x, 1, (C, 1))", b_move, ref_move, ONE_IN(R_, C_), UNIT, .p = {M_UNFLATTEN}, SWEEP, .artifacts = 1},
    {"unflatten(flatten(x), 0, (R, C))", b_move, ref_move, ONE_IN(R_, C_), UNIT, .p = {M_REFLATTEN}, SWEEP,
     .artifacts = 1},
    {"diagonal(x)", b_move, ref_move, ONE_IN(R_, C_), UNIT, .p = {M_DIAG, 0}, SWEEP, .artifacts = 1},
    {"diagonal(x, 2)", b_move, ref_move, ONE_IN(R_, C_), UNIT, .p = {M_DIAG, 2}, SWEEP, .artifacts = 1},
    {"diagonal(x, -1)", b_move, ref_move, ONE_IN(R_, C_), UNIT, .p = {M_DIAG, -1}, SWEEP, .artifacts = 1},
    {"diagonal(x, 9)", b_move, ref_move, ONE_IN(R_, C_), UNIT, .p = {M_DIAG, 9}, SWEEP, .artifacts = 1},
    {"repeat(x, 2, 3)", b_move, ref_move, ONE_IN(R_, C_), UNIT, .p = {M_REPEAT, 2, 3}, SWEEP, .artifacts = 1},
    /* past 16 copies: the reshape and a sum over the copy axes, not a sum of slices */
    {"repeat(x, 3, 6)", b_move, ref_move, ONE_IN(R_, C_), UNIT, .p = {M_REPEAT, 3, 6}, SWEEP, .artifacts = 1},
    /* x.repeat(rows, 1): the count a size, one trace for every count (it is never a sum of slices) */
    {"repeat(x, rows, 1)", b_move, ref_move, ONE_IN(R_, C_), UNIT, .p = {M_REPEAT, -1, 1}, SWEEP, .artifacts = 1},
    {"repeat(x, 0, 2)", b_move, ref_move, ONE_IN(R_, C_), UNIT, .p = {M_REPEAT, 0, 2}, SWEEP, .artifacts = 1},
    {"repeat(x, 2, 1, 2)", b_move, ref_move, ONE_IN(R_, C_), UNIT, .p = {M_REPEAT3, 2, 1, 2}, SWEEP, .artifacts = 1},
    {"permute(unsqueeze(x, 1), 2, 0, 1)", b_move, ref_move, ONE_IN(R_, C_), UNIT, .p = {M_PERMUTE}, SWEEP,
     .artifacts = 1},
    /* f32's rounding is in the loss: a wider step and tolerance */
    {"cast(cast(x, f32), f64)", b_move, ref_move, ONE_IN(R_, C_), UNIT, .p = {M_CAST32}, SWEEP, .artifacts = 1,
     .fd_h = 1e-3, .fd_tol = 1e-4},
    {"cast(cast(3 x, i64), f64)", b_move, ref_move, ONE_IN(R_, C_), .lo = {-3}, .hi = {3}, .p = {M_CAST64I}, SWEEP,
     .artifacts = 1, .no_fd = 1},
};

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static void test_pointwise_rules_match_the_reference_and_finite_differences(void **state) {
  (void)state;
  calls_tj = 0;
  for (size_t k = 0; k < N_OF(pointwise); k++) run_case(&pointwise[k]);
  expect_int(calls_tj, 98, "backwards of the pointwise cases run through tensorjit");
}

static void test_reduction_and_variance_rules_match_the_reference_and_finite_differences(void **state) {
  (void)state;
  calls_tj = 0;
  for (size_t k = 0; k < N_OF(reductions); k++) run_case(&reductions[k]);
  expect_int(calls_tj, 142, "backwards of the reduction cases run through tensorjit");
}

/* The composites are recorded as primitives (tp_nn.c): their derivatives are the primitives'. */
static void test_composites_match_the_reference_and_finite_differences(void **state) {
  (void)state;
  calls_tj = 0;
  for (size_t k = 0; k < N_OF(composites); k++) run_case(&composites[k]);
  expect_int(calls_tj, 50, "backwards of the composite cases run through tensorjit");
}

static void test_move_rules_scatter_into_zeros_of_the_runtime_shape(void **state) {
  (void)state;
  calls_tj = 0;
  for (size_t k = 0; k < N_OF(moves); k++) run_case(&moves[k]);
  /* every one ran, those of outputs whose extents are expressions of sizes (a slice's cols - cols // 2, a
   * diagonal's) too: each incoming gradient's dim read as its output's extent */
  expect_int(calls_tj, 338, "backwards of the movement cases run through tensorjit");
}

/* ---- Conventions, corners and refusals, on fixed inputs. */

/* A model of the conventions: p picks the op; out[0] is sum(where(y != y, y, 0)) when nan_loss (so
 * a NaN output passes the gradient 1 and the rest 0), else sum(y^2 / 2 + y); out[1] is y. */
typedef struct fixed { int op, nan_loss; int64_t p; } fixed;
enum { F_POW, F_MINIMUM, F_MAXIMUM, F_RELU, F_AMAX_ROWS, F_ABS, F_STD_ALL, F_STD1_C0, F_VAR1_C1, F_VAR_ROWS_C5, F_STD_T,
       F_AMAX_ALL, F_VAR_INT, F_VAR_AXES, F_VAR_CORR_RANK1, F_SELECT5, F_SQUEEZE0, F_SOFTMAX_INT, F_SOFTMAX_AXIS2 };

static int fixed_model(tp_ctx *c, tp_tensor *const *in, tp_tensor **out, void *user) {
  const fixed *f = user;
  tp_tensor *y = NULL, *x = in[0];
  switch (f->op) {
  case F_POW: y = tp_pow(c, x, in[1]); break;
  case F_MINIMUM: y = tp_minimum(c, x, in[1]); break;
  case F_MAXIMUM: y = tp_maximum(c, x, in[1]); break;
  case F_RELU: y = tp_relu(c, x); break;
  case F_AMAX_ROWS: y = tp_amax(c, x, 2u, 0); break;
  case F_ABS: y = tp_abs(c, x); break;
  case F_STD_ALL: y = tp_std(c, x, 0u, 0, 1.0); break;
  case F_STD1_C0: y = tp_std(c, x, 0u, 0, 0.0); break;
  case F_VAR1_C1: y = tp_var(c, x, 0u, 0, 1.0); break;
  case F_VAR_ROWS_C5: y = tp_var(c, x, 2u, 0, 5.0); break;
  case F_STD_T: y = tp_moments_at(c, x, 2u, 0, 0, in[1], 1, NULL, TP_HERE); break;
  case F_AMAX_ALL: y = tp_amax(c, x, 0u, 0); break;
  case F_VAR_INT: y = tp_var(c, tp_cast(c, x, UOPC_I64), 0u, 0, 1.0); break;
  case F_SOFTMAX_INT: y = tp_softmax(c, tp_cast(c, x, UOPC_I64), -1); break;
  case F_SOFTMAX_AXIS2: y = tp_log_softmax(c, x, 2); break;
  case F_VAR_AXES: y = tp_var(c, x, 4u, 0, 1.0); break;
  case F_VAR_CORR_RANK1: y = tp_moments_at(c, x, 0u, 0, 0, in[1], 0, NULL, TP_HERE); break;
  case F_SELECT5: y = tp_select(c, x, 0, tp_int_const(c, 5)); break;
  case F_SQUEEZE0: y = tp_squeeze(c, x, 0); break;
  }
  if (tp_status(c)) return tp_status(c);
  tp_tensor *zero = tp_scalar_at(c, 0, UOPC_F64, TP_HERE);
  out[0] = f->nan_loss ? tp_sum(c, tp_where(c, tp_binary_at(c, IR_NE, y, y, TP_HERE), y, zero), 0u, 0) : loss_of(c, y);
  out[1] = y;
  return tp_status(c);
}

static uopc_tensor fixed_tensor(int rank, const int64_t *shape, const double *vals) {
  uopc_tensor t;
  uopc_error err = {0};
  assert_uopc_ok(uopc_tensor_empty(&t, UOPC_F64, rank, shape, &err), err);
  for (int64_t e = 0; e < uopc_tensor_numel(&t); e++) uopc_tensor_set(&t, e, vals[e]);
  return t;
}

/* The model on in (eager, then compiled with dims R and C for every rank-2 extent): out[1] and the
 * gradients of the inputs in mask, each compared with want (NULL: not checked); both modes agree.
 * The return is the compiled call's status, after the eager one's was checked equal to it. */
static int fixed_run(const fixed *f, int n_in, uopc_tensor *in, unsigned mask, const double *want_y,
                     const double *const *want_g, uopc_error *err_out) {
  tp_arg args[2];
  const uopc_tensor *ptrs[2];
  for (int i = 0; i < n_in; i++) {
    args[i] = (tp_arg){i ? "b" : "a", UOPC_F64, in[i].rank, {NULL}};
    for (int d = 0; d < in[i].rank; d++)
      args[i].shape[d] = in[i].rank == 2 ? sym_expr_dim(arena, d ? &cols_dim : &rows_dim) : sym_expr_const(arena, in[i].shape[d]);
    ptrs[i] = &in[i];
  }
  tp_options o = {.grad_inputs = mask};
  tp_compiled *cf = NULL;
  uopc_error err = {0};
  assert_uopc_ok(tp_compiled_new(&cf, fixed_model, (void *)f, args, n_in, 2, &o, &err), err);
  int rcs[2];
  for (int m = 0; m < 2; m++) {
    uopc_tensor out[2] = {{0}}, grads[2] = {{0}};
    err = (uopc_error){0};
    rcs[m] = m == 0 ? tp_run_eager(fixed_model, (void *)f, ptrs, n_in, 2, mask, out, grads, &err)
                    : tp_call(cf, ptrs, out, grads, &err);
    if (err_out) *err_out = err;
    if (rcs[m]) continue;
    const char *mode = m ? "compiled" : "eager";
    for (int64_t e = 0; want_y && e < uopc_tensor_numel(&out[1]); e++)
      if (!same(uopc_tensor_get(&out[1], e), want_y[e], 1e-12))
        fail_msg("fixed op %d (%s): y element %lld is %.12g, expected %.12g", f->op, mode, (long long)e,
                 uopc_tensor_get(&out[1], e), want_y[e]);
    for (int i = 0, g = 0; i < n_in; i++) {
      if (!(mask >> i & 1u)) continue;
      for (int64_t e = 0; want_g[i] && e < uopc_tensor_numel(&grads[g]); e++) {
        double got = uopc_tensor_get(&grads[g], e), want = want_g[i][e];
        /* exact: these are the conventions, 0 must be 0 (never NaN), a split exactly half */
        if (!(got == want || (isnan(got) && isnan(want))))
          fail_msg("fixed op %d (%s): d loss / d in[%d] element %lld is %.17g, expected %.17g", f->op, mode, i,
                   (long long)e, got, want);
      }
      uopc_tensor_release(&grads[g++]);
    }
    uopc_tensor_release(&out[0]), uopc_tensor_release(&out[1]);
  }
  tp_compiled_free(cf);
  if (rcs[0] != rcs[1]) fail_msg("fixed op %d: eager status %d, compiled %d", f->op, rcs[0], rcs[1]);
  return rcs[1];
}

/* minimum's tie splits evenly (PyTorch); maximum's (the lab's rule, tp_grad.c) goes to b; relu'(0) = 0;
 * amax's ties split over the tied elements; abs'(0) = 0. The loss's gradient here is y + 1. */
static void test_ties_follow_the_stated_conventions(void **state) {
  (void)state;
  const int64_t s23[2] = {2, 3};
  const double a[6] = {1, 2, -1, 0, 0.5, 3}, b[6] = {1, 1, -1, 0, 2, -3};
  uopc_tensor in[2] = {fixed_tensor(2, s23, a), fixed_tensor(2, s23, b)};
  /* minimum: y = (1, 1, -1, 0, 0.5, -3), gy = y + 1 = (2, 2, 0, 1, 1.5, -2) */
  const double min_a[6] = {1, 0, 0, 0.5, 1.5, 0}, min_b[6] = {1, 2, 0, 0.5, 0, -2};
  fixed_run(&(fixed){F_MINIMUM, 0, 0}, 2, in, 3u, NULL, (const double *const[]){min_a, min_b}, NULL);
  /* maximum: y = (1, 2, -1, 0, 2, 3), gy = (2, 3, 0, 1, 3, 4); a tie all to b (PyTorch would split it) */
  const double max_a[6] = {0, 3, 0, 0, 0, 4}, max_b[6] = {2, 0, 0, 1, 3, 0};
  fixed_run(&(fixed){F_MAXIMUM, 0, 0}, 2, in, 3u, NULL, (const double *const[]){max_a, max_b}, NULL);
  /* relu of a: y = (1, 2, 0, 0, 0.5, 3): relu'(0) = 0, as PyTorch's */
  const double relu_a[6] = {2, 3, 0, 0, 1.5, 4};
  fixed_run(&(fixed){F_RELU, 0, 0}, 1, in, 1u, NULL, (const double *const[]){relu_a}, NULL);
  /* abs of b: abs'(0) = 0, as PyTorch's sign(0) */
  const double abs_b[6] = {2, 2, -2, 0, 3, -4};
  fixed_run(&(fixed){F_ABS, 0, 0}, 1, &in[1], 1u, NULL, (const double *const[]){abs_b}, NULL);
  uopc_tensor_release(&in[0]), uopc_tensor_release(&in[1]);
  /* amax along rows of ((1, 3, 3), (2, 2, 2)): maxes 3 and 2, gy 4 and 3, split over 2 and 3 ties */
  const double t[6] = {1, 3, 3, 2, 2, 2}, amax_g[6] = {0, 2, 2, 1, 1, 1};
  uopc_tensor x = fixed_tensor(2, s23, t);
  fixed_run(&(fixed){F_AMAX_ROWS, 0, 0}, 1, &x, 1u, (const double[]){3, 2}, (const double *const[]){amax_g}, NULL);
  uopc_tensor_release(&x);
}

/* pow at the edges (PyTorch's): d/da is 0 where b == 0 (0^0 = 1 included); d/db is 0 where a == 0
 * and b >= 0, y log a otherwise: NaN for a < 0, -inf (times inf) for 0^-1. */
static void test_pow_edges_follow_the_stated_conventions(void **state) {
  (void)state;
  const int64_t s23[2] = {2, 3};
  const double a[6] = {0, -2, 0, 2, 0, 1.5}, b[6] = {0, 2, 2, 0, -1, 2};
  uopc_tensor in[2] = {fixed_tensor(2, s23, a), fixed_tensor(2, s23, b)};
  const double y[6] = {1, 4, 0, 1, INFINITY, 2.25};   /* gy = y + 1 */
  const double da[6] = {0, -20, 0, 0, -INFINITY, 3.25 * (2 * 1.5)};
  const double db[6] = {0, NAN, 0, 2 * log(2.0), -INFINITY, 3.25 * (2.25 * log(1.5))};
  fixed_run(&(fixed){F_POW, 0, 0}, 2, in, 3u, y, (const double *const[]){da, db}, NULL);
  uopc_tensor_release(&in[0]), uopc_tensor_release(&in[1]);
}

/* NaN operands: minimum passes the gradient to both (PyTorch: neither is masked); amax gives it to
 * the NaN; relu (the lab's maximum rule) masks it to 0, where PyTorch's relu passes it. */
static void test_nan_operands_follow_the_stated_conventions(void **state) {
  (void)state;
  const int64_t s13[2] = {1, 3};
  const double a[3] = {NAN, 1, 2}, b[3] = {1, NAN, 5};
  uopc_tensor in[2] = {fixed_tensor(2, s13, a), fixed_tensor(2, s13, b)};
  const double both[3] = {1, 1, 0};
  fixed_run(&(fixed){F_MINIMUM, 1, 0}, 2, in, 3u, (const double[]){NAN, NAN, 2}, (const double *const[]){both, both},
            NULL);
  const double relu_g[3] = {0, 0, 0};
  fixed_run(&(fixed){F_RELU, 1, 0}, 1, in, 1u, (const double[]){NAN, 1, 2}, (const double *const[]){relu_g}, NULL);
  const double amax_g[3] = {1, 0, 0};
  fixed_run(&(fixed){F_AMAX_ROWS, 1, 0}, 1, in, 1u, (const double[]){NAN}, (const double *const[]){amax_g}, NULL);
  uopc_tensor_release(&in[0]), uopc_tensor_release(&in[1]);
}

/* std of all ones has an exact zero gradient (never NaN), one element with correction 0 too (std 0);
 * one element with correction 1 is 0 / 0: NaN, and so is its gradient; (1, 5) rows with correction
 * 5 have no degrees of freedom: var inf, and the gradient through the decomposition NaN (PyTorch's
 * closed form 2 (x - mean) / 0 gives +-inf there: the chapter says so). An empty x's var is NaN
 * (the sweeps check (0, 4) and (2, 0) against the reference). */
static void test_var_and_std_corners_give_the_eager_reference(void **state) {
  (void)state;
  const int64_t s34[2] = {3, 4}, s11[2] = {1, 1}, s15[2] = {1, 5};
  const double ones[12] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, zeros[12] = {0};
  uopc_tensor x = fixed_tensor(2, s34, ones);
  fixed_run(&(fixed){F_STD_ALL, 0, 0}, 1, &x, 1u, (const double[]){0}, (const double *const[]){zeros}, NULL);
  uopc_tensor_release(&x);
  x = fixed_tensor(2, s11, (const double[]){7});
  fixed_run(&(fixed){F_STD1_C0, 0, 0}, 1, &x, 1u, (const double[]){0}, (const double *const[]){zeros}, NULL);
  fixed_run(&(fixed){F_VAR1_C1, 0, 0}, 1, &x, 1u, (const double[]){NAN}, (const double *const[]){(const double[]){NAN}},
            NULL);
  uopc_tensor_release(&x);
  const double nans[5] = {NAN, NAN, NAN, NAN, NAN};
  x = fixed_tensor(2, s15, (const double[]){1, 2, 3, 4, 6});
  fixed_run(&(fixed){F_VAR_ROWS_C5, 0, 0}, 1, &x, 1u, (const double[]){INFINITY}, (const double *const[]){nans}, NULL);
  uopc_tensor_release(&x);
}

/* A correction passed as a rank-0 input: corrections 0, 1 and 5 over three sizes, one variant. */
static void test_a_correction_input_shares_one_variant(void **state) {
  (void)state;
  static const rcase k = {"std(x, 1, correction input)", b_moments, ref_moments, .n_in = 3, .n_y = 1,
                          .rank = {2, 0, 0}, .shape = {{R_, C_}}, .mask = 1u, UNIT, .p = {2, 0, 1}};
  tp_arg args[MAX_IN];
  for (int i = 0; i < 3; i++) args[i] = arg_of(&k, i);
  tp_compiled *f = NULL;
  uopc_error err = {0};
  assert_uopc_ok(tp_compiled_new(&f, model, (void *)&k, args, 3, 2, &(tp_options){.grad_inputs = 1u}, &err), err);
  tj_function *tf = NULL;   /* its model reads the correction from the input as well */
  assert_uopc_ok(tj_compile(&tf, tj_body, (void *)&k, &(tj_options){.n_outputs = 1, .grad_args = 1u}, &err), err);
  const double corrections[3] = {0, 1, 5};
  for (int q = 0; q < 3; q++) {
    rcase kq = k;
    kq.corr = corrections[q];
    /* the model reads the correction from the input; kq only tells the reference */
    tp_compiled *keep = f;
    run_one(&kq, keep, tf, 3, 4, q == 1);
    run_one(&kq, keep, tf, 2, 6, 0);
    run_one(&kq, keep, tf, 1, 1, 0);
  }
  expect_int(tp_compiled_variant_count(f), 1, "variants for corrections 0, 1 and 5 over 3 sizes");
  expect_int(tj_backward_stats(tf).artifacts_built, 2,
             "tensorjit's backwards: (>= 2, >= 2) in either layout (a record is packed), and (1, 1)");
  tp_compiled_free(f);
  tj_free(tf);
}

/* Refusals, eager and compiled alike, with their codes. */
static void test_refusals_have_exact_codes(void **state) {
  (void)state;
  const int64_t s04[2] = {0, 4}, s34[2] = {3, 4}, s2[1] = {2};
  const double v[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  uopc_error err = {0};
  uopc_tensor empty = fixed_tensor(2, s04, v), x = fixed_tensor(2, s34, v), c2 = fixed_tensor(1, s2, v);
  expect_int(fixed_run(&(fixed){F_AMAX_ALL, 0, 0}, 1, &empty, 1u, NULL, NULL, &err), UOPC_E_BOUNDS,
             "amax of an empty tensor (NumPy refuses it too): %s", err.message);
  expect_int(fixed_run(&(fixed){F_VAR_INT, 0, 0}, 1, &x, 1u, NULL, NULL, &err), UOPC_E_DTYPE, "var of i64: %s",
             err.message);
  expect_int(fixed_run(&(fixed){F_VAR_AXES, 0, 0}, 1, &x, 1u, NULL, NULL, &err), UOPC_E_INVALID,
             "var over axis 2 of a matrix: %s", err.message);
  uopc_tensor pair[2] = {x, c2};
  expect_int(fixed_run(&(fixed){F_VAR_CORR_RANK1, 0, 0}, 2, pair, 1u, NULL, NULL, &err), UOPC_E_INVALID,
             "a correction of rank 1: %s", err.message);
  expect_int(fixed_run(&(fixed){F_SELECT5, 0, 0}, 1, &x, 1u, NULL, NULL, &err), UOPC_E_BOUNDS, "x[5] of 3 rows: %s",
             err.message);
  expect_int(fixed_run(&(fixed){F_SQUEEZE0, 0, 0}, 1, &x, 1u, NULL, NULL, &err), UOPC_E_INVALID,
             "squeeze of an axis of 3: %s", err.message);
  expect_int(fixed_run(&(fixed){F_SOFTMAX_INT, 0, 0}, 1, &x, 1u, NULL, NULL, &err), UOPC_E_DTYPE,
             "softmax of i64: %s", err.message);
  expect_int(fixed_run(&(fixed){F_SOFTMAX_AXIS2, 0, 0}, 1, &x, 1u, NULL, NULL, &err), UOPC_E_INVALID,
             "log_softmax over axis 2 of a matrix: %s", err.message);
  uopc_tensor_release(&empty), uopc_tensor_release(&x), uopc_tensor_release(&c2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pointwise_rules_match_the_reference_and_finite_differences),
      cmocka_unit_test(test_reduction_and_variance_rules_match_the_reference_and_finite_differences),
      cmocka_unit_test(test_composites_match_the_reference_and_finite_differences),
      cmocka_unit_test(test_move_rules_scatter_into_zeros_of_the_runtime_shape),
      cmocka_unit_test(test_ties_follow_the_stated_conventions),
      cmocka_unit_test(test_pow_edges_follow_the_stated_conventions),
      cmocka_unit_test(test_nan_operands_follow_the_stated_conventions),
      cmocka_unit_test(test_var_and_std_corners_give_the_eager_reference),
      cmocka_unit_test(test_a_correction_input_shares_one_variant),
      cmocka_unit_test(test_refusals_have_exact_codes),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
