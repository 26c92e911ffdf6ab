/* test_grad.c: lab 23.4's backward rules, tp_unbroadcast and tp_accumulate.
 * Each gradient is computed eagerly and by a compiled function (one
 * forward and one backward artifact for every batch size), and both are
 * compared with a closed form worked out here in double, from the same f32
 * inputs; the two-layer model with a forward and backward pass written out
 * by hand. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include "tp_compile.h"
#include "testutil.h"

enum { MAX_IN = 4 };

static sym_arena *arena;
static sym_dim batch_dim;   /* B in [1, 64] */

static int setup(void **state) {
  uopc_error err = {0};
  if (testutil_fresh_cache(state) || sym_arena_new(&arena, &err)) return -1;
  return sym_dim_init(&batch_dim, "B", 1, 64, 1, &err);
}

static int teardown(void **state) {
  sym_arena_free(arena);
  return testutil_remove_cache(state);
}

/* ---- Shapes and values. */

#define B_ (-1)   /* an extent that is the batch dim B */

/* An argument of shape dims (B_ for the batch), rank entries. */
static tp_arg arg(const char *name, int rank, int64_t d0, int64_t d1) {
  tp_arg a = {name, UOPC_F32, rank, {NULL}};
  int64_t d[2] = {d0, d1};
  for (int k = 0; k < rank; k++) a.shape[k] = d[k] == B_ ? sym_expr_dim(arena, &batch_dim) : sym_expr_const(arena, d[k]);
  return a;
}

/* A value in [-1, 1) that is never 0, and never equal for two seeds < 29 apart. */
static double value(int64_t i, int seed) { return (double)((i * 37 + seed * 11) % 29) / 14.5 - 1.0; }

static uopc_tensor make_input(const tp_arg *a, int64_t batch, int seed) {
  int64_t shape[UOPC_MAX_RANK];
  uopc_tensor t;
  uopc_error err = {0};
  for (int k = 0; k < a->rank; k++) shape[k] = a->shape[k]->kind == SYM_DIM ? batch : a->shape[k]->value;
  assert_uopc_ok(uopc_tensor_empty(&t, UOPC_F32, a->rank, shape, &err), err);
  for (int64_t i = 0; i < uopc_tensor_numel(&t); i++) uopc_tensor_set(&t, i, value(i, seed));
  return t;
}

static double at(const uopc_tensor *t, int64_t i) { return uopc_tensor_get(t, i); }

/* ---- One gradient check, eager and compiled, against a closed form. */

typedef struct gcase gcase;
struct gcase {
  const char *name;
  tp_model model;
  const void *spec;                /* the model's user pointer */
  int n_in;
  tp_arg args[MAX_IN];
  unsigned mask;                   /* the inputs whose gradients are checked */
  /* Changes the inputs after they are filled (NULL: keep them). */
  void (*adjust)(uopc_tensor *in, const void *spec);
  /* want[k] (numel of in[k]) = d loss / d in[k] for each k in mask; *loss its value. */
  void (*want)(const uopc_tensor *in, double **want, double *loss, const void *spec);
  int check_loss;
};

static void compare(const char *name, const char *mode, int64_t batch, int k, const uopc_tensor *got,
                    const uopc_tensor *like, const double *want) {
  if (got->rank != like->rank) fail_msg("%s (%s, B = %lld): d/d in[%d] has rank %d, expected %d", name, mode,
                                        (long long)batch, k, got->rank, like->rank);
  for (int a = 0; a < got->rank; a++)
    if (got->shape[a] != like->shape[a])
      fail_msg("%s (%s, B = %lld): d/d in[%d] axis %d is %lld, expected %lld", name, mode, (long long)batch, k, a,
               (long long)got->shape[a], (long long)like->shape[a]);
  for (int64_t i = 0; i < uopc_tensor_numel(got); i++) {
    double g = at(got, i), w = want[i];
    if (!(fabs(g - w) <= 1e-4 * fmax(1, fabs(w))))
      fail_msg("%s (%s, B = %lld): d/d in[%d] element %lld is %.9g, expected %.9g", name, mode, (long long)batch, k,
               (long long)i, g, w);
  }
}

static void check_loss(const char *name, const char *mode, int64_t batch, const uopc_tensor *out, double loss) {
  double got = at(out, 0);
  if (!(fabs(got - loss) <= 1e-4 * fmax(1, fabs(loss))))
    fail_msg("%s (%s, B = %lld): the loss is %.9g, expected %.9g", name, mode, (long long)batch, got, loss);
}

/* The case for each batch size: eagerly, then by one compiled function,
 * which must build a single variant for all of them. */
static void run_case(const gcase *g, const int64_t *batches, int n_batches) {
  uopc_error err = {0};
  tp_options o = {.grad_inputs = g->mask};
  tp_compiled *f = NULL;
  assert_uopc_ok(tp_compiled_new(&f, g->model, (void *)g->spec, g->args, g->n_in, 1, &o, &err), err);
  int n_grads = __builtin_popcount(g->mask);
  int64_t built = uopc_counter_get("variants built");
  for (int b = 0; b < n_batches; b++) {
    uopc_tensor in[MAX_IN] = {{0}}, out[2][1] = {{{0}}}, grads[2][MAX_IN] = {{{0}}};
    const uopc_tensor *ptrs[MAX_IN];
    double *want[MAX_IN] = {NULL}, loss = 0;
    for (int k = 0; k < g->n_in; k++) in[k] = make_input(&g->args[k], batches[b], k + 1), ptrs[k] = &in[k];
    if (g->adjust) g->adjust(in, g->spec);
    for (int k = 0; k < g->n_in; k++)
      if (g->mask >> k & 1u) want[k] = calloc((size_t)uopc_tensor_numel(&in[k]), sizeof *want[k]);
    g->want(in, want, &loss, g->spec);
    assert_uopc_ok(tp_run_eager(g->model, (void *)g->spec, ptrs, g->n_in, 1, g->mask, out[0], grads[0], &err), err);
    assert_uopc_ok(tp_call(f, ptrs, out[1], grads[1], &err), err);
    for (int m = 0; m < 2; m++) {
      const char *mode = m ? "compiled" : "eager";
      if (g->check_loss) check_loss(g->name, mode, batches[b], &out[m][0], loss);
      for (int k = 0, j = 0; k < g->n_in; k++)
        if (g->mask >> k & 1u) compare(g->name, mode, batches[b], k, &grads[m][j++], &in[k], want[k]);
    }
    for (int k = 0; k < g->n_in; k++) uopc_tensor_release(&in[k]), free(want[k]);
    for (int m = 0; m < 2; m++) {
      uopc_tensor_release(&out[m][0]);
      for (int j = 0; j < n_grads; j++) uopc_tensor_release(&grads[m][j]);
    }
  }
  if (tp_compiled_variant_count(f) != 1 || uopc_counter_get("variants built") - built != 1)
    fail_msg("%s: %d variants for %d batch sizes, expected 1 (sizes a rule needs are read at run time)", g->name,
             tp_compiled_variant_count(f), n_batches);
  const tp_variant *v = tp_compiled_variant(f, 0);
  expect_non_null(v->backward, "%s: the variant's backward artifact", g->name);
  tp_compiled_free(f);
}

static const int64_t batches[] = {3, 1, 7};

/* ---- mul, with and without broadcasting: loss = sum(a * b * r). */

static int mul_loss(tp_ctx *c, tp_tensor *const *in, tp_tensor **out, void *user) {
  (void)user;
  out[0] = tp_sum(c, tp_mul(c, tp_mul(c, in[0], in[1]), in[2]), 0u, 0);
  return tp_status(c);
}

/* a (B, 4), r (B, 4); b (B, 4), (4), (1, 4) or () read at [i, j] */
static void mul_want(const uopc_tensor *in, double **want, double *loss, const void *spec) {
  (void)loss, (void)spec;
  int64_t rows = in[0].shape[0], nb = uopc_tensor_numel(&in[1]);
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < 4; j++) {
      int64_t e = i * 4 + j, bi = nb == 1 ? 0 : nb == 4 ? j : e;
      want[0][e] = at(&in[1], bi) * at(&in[2], e);
      want[1][bi] += at(&in[0], e) * at(&in[2], e);   /* summed over what b was broadcast along */
    }
}

static gcase mul_case(const char *name, tp_arg b) {
  return (gcase){name, mul_loss, NULL, 3, {arg("a", 2, B_, 4), b, arg("r", 2, B_, 4)}, 0x3, NULL, mul_want, 0};
}

static void test_grad_mul_same_shape(void **state) {
  (void)state;
  gcase g = mul_case("a (B, 4) * b (B, 4)", arg("b", 2, B_, 4));
  run_case(&g, batches, 3);
}

static void test_grad_mul_broadcast_row(void **state) {
  (void)state;
  gcase g = mul_case("a (B, 4) * b (4)", arg("b", 1, 4, 0));
  run_case(&g, batches, 3);
}

static void test_grad_mul_broadcast_stretched_row(void **state) {
  (void)state;
  gcase g = mul_case("a (B, 4) * b (1, 4)", arg("b", 2, 1, 4));
  run_case(&g, batches, 3);
}

static void test_grad_mul_broadcast_scalar(void **state) {
  (void)state;
  gcase g = mul_case("a (B, 4) * b ()", arg("b", 0, 0, 0));
  run_case(&g, batches, 3);
}

/* ---- maximum and relu: loss = sum(maximum(a, b) * r), sum(relu(x) * r). */

static int maximum_loss(tp_ctx *c, tp_tensor *const *in, tp_tensor **out, void *user) {
  (void)user;
  out[0] = tp_sum(c, tp_mul(c, tp_maximum(c, in[0], in[1]), in[2]), 0u, 0);
  return tp_status(c);
}

static void maximum_want(const uopc_tensor *in, double **want, double *loss, const void *spec) {
  (void)loss, (void)spec;
  for (int64_t e = 0; e < uopc_tensor_numel(&in[0]); e++) {
    if (at(&in[0], e) == at(&in[1], e))     /* no ties: the larger one is plain */
      fail_msg("maximum(a, b): the inputs tie at element %lld (%g); the case needs distinct values", (long long)e, at(&in[0], e));
    want[0][e] = at(&in[0], e) > at(&in[1], e) ? at(&in[2], e) : 0;
    want[1][e] = at(&in[1], e) > at(&in[0], e) ? at(&in[2], e) : 0;
  }
}

static void test_grad_maximum_goes_to_the_larger_operand(void **state) {
  (void)state;
  gcase g = {"maximum(a, b)", maximum_loss, NULL, 3, {arg("a", 2, B_, 4), arg("b", 2, B_, 4), arg("r", 2, B_, 4)},
             0x3, NULL, maximum_want, 0};
  run_case(&g, batches, 3);
}

static int relu_loss(tp_ctx *c, tp_tensor *const *in, tp_tensor **out, void *user) {
  (void)user;
  out[0] = tp_sum(c, tp_mul(c, tp_relu(c, in[0]), in[1]), 0u, 0);
  return tp_status(c);
}

/* x: negative, exactly 0, positive, in turn. */
static void relu_adjust(uopc_tensor *in, const void *spec) {
  (void)spec;
  for (int64_t e = 0; e < uopc_tensor_numel(&in[0]); e++) uopc_tensor_set(&in[0], e, (double)(e % 3 - 1) * (0.25 + 0.125 * (double)e));
}

static void relu_want(const uopc_tensor *in, double **want, double *loss, const void *spec) {
  (void)loss, (void)spec;
  for (int64_t e = 0; e < uopc_tensor_numel(&in[0]); e++) want[0][e] = at(&in[0], e) > 0 ? at(&in[1], e) : 0;   /* relu'(0) = 0 */
}

static void test_grad_relu_is_zero_at_zero(void **state) {
  (void)state;
  gcase g = {"relu(x)", relu_loss, NULL, 2, {arg("x", 2, B_, 4), arg("r", 2, B_, 4)}, 0x1, relu_adjust, relu_want, 0};
  run_case(&g, batches, 3);
}

/* ---- matmul: loss = sum((a @ b) * r), a (B, 3), b (3, 2). */

static int matmul_loss(tp_ctx *c, tp_tensor *const *in, tp_tensor **out, void *user) {
  (void)user;
  out[0] = tp_sum(c, tp_mul(c, tp_matmul(c, in[0], in[1]), in[2]), 0u, 0);
  return tp_status(c);
}

static void matmul_want(const uopc_tensor *in, double **want, double *loss, const void *spec) {
  (void)loss, (void)spec;
  int64_t rows = in[0].shape[0];
  for (int64_t i = 0; i < rows; i++)
    for (int64_t k = 0; k < 3; k++)
      for (int64_t j = 0; j < 2; j++) {
        want[0][i * 3 + k] += at(&in[2], i * 2 + j) * at(&in[1], k * 2 + j);   /* r @ b^T */
        want[1][k * 2 + j] += at(&in[0], i * 3 + k) * at(&in[2], i * 2 + j);   /* a^T @ r */
      }
}

static void test_grad_matmul_2d(void **state) {
  (void)state;
  gcase g = {"a (B, 3) @ b (3, 2)", matmul_loss, NULL, 3, {arg("a", 2, B_, 3), arg("b", 2, 3, 2), arg("r", 2, B_, 2)},
             0x3, NULL, matmul_want, 0};
  run_case(&g, batches, 3);
}

/* ---- sum over axes, keepdims or not: loss = sum(sum(x, axes) * r), x (B, 4). */

typedef struct reduce_spec { unsigned axes; int keep; } reduce_spec;

static int sum_loss(tp_ctx *c, tp_tensor *const *in, tp_tensor **out, void *user) {
  const reduce_spec *s = user;
  out[0] = tp_sum(c, tp_mul(c, tp_sum(c, in[0], s->axes, s->keep), in[1]), 0u, 0);
  return tp_status(c);
}

static void sum_want(const uopc_tensor *in, double **want, double *loss, const void *spec) {
  const reduce_spec *s = spec;
  (void)loss;
  int64_t rows = in[0].shape[0];
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < 4; j++)
      want[0][i * 4 + j] = at(&in[1], s->axes == 1 ? j : s->axes == 2 ? i : 0);
}

static void test_grad_sum_over_each_axis_with_and_without_keepdims(void **state) {
  (void)state;
  static const reduce_spec specs[6] = {{1, 0}, {1, 1}, {2, 0}, {2, 1}, {0, 0}, {0, 1}};
  const tp_arg r[6] = {arg("r", 1, 4, 0), arg("r", 2, 1, 4), arg("r", 1, B_, 0), arg("r", 2, B_, 1),
                       arg("r", 0, 0, 0), arg("r", 2, 1, 1)};
  static const char *const names[6] = {"sum axis 0", "sum axis 0, keepdims", "sum axis 1", "sum axis 1, keepdims",
                                       "sum of all", "sum of all, keepdims"};
  for (int k = 0; k < 6; k++) {
    gcase g = {names[k], sum_loss, &specs[k], 2, {arg("x", 2, B_, 4), r[k]}, 0x1, NULL, sum_want, 0};
    run_case(&g, batches, 3);
  }
}

/* ---- mean: the count is a size, read at run time. */

static int mean_loss(tp_ctx *c, tp_tensor *const *in, tp_tensor **out, void *user) {
  (void)user;
  out[0] = tp_mean(c, tp_mul(c, in[0], in[1]));
  return tp_status(c);
}

static void mean_want(const uopc_tensor *in, double **want, double *loss, const void *spec) {
  (void)spec;
  int64_t n = uopc_tensor_numel(&in[0]);
  *loss = 0;
  for (int64_t e = 0; e < n; e++) *loss += at(&in[0], e) * at(&in[1], e) / (double)n;
  for (int64_t e = 0; e < n; e++) want[0][e] = at(&in[1], e) / (double)n;
}

/* Without the division by the count, every gradient is B * 4 times too big
 * (tests/broken/23.4.mk). */
static void test_grad_mean_reads_its_count_at_run_time(void **state) {
  (void)state;
  static const int64_t sizes[] = {1, 3, 7, 64};
  gcase g = {"mean(x * r)", mean_loss, NULL, 2, {arg("x", 2, B_, 4), arg("r", 2, B_, 4)}, 0x1, NULL, mean_want, 1};
  int64_t built = uopc_counter_get("programs constructed");
  run_case(&g, sizes, 4);
  expect_int(uopc_counter_get("programs constructed") - built, 2,   /* one forward, one backward */
             "mean(x * r) at B = 1, 3, 7, 64: the counter 'programs constructed' moved by");
}

static int mean_axis_loss(tp_ctx *c, tp_tensor *const *in, tp_tensor **out, void *user) {
  const reduce_spec *s = user;
  out[0] = tp_sum(c, tp_mul(c, tp_reduce_at(c, IR_MEAN, in[0], s->axes, s->keep, TP_HERE), in[1]), 0u, 0);
  return tp_status(c);
}

static void mean_axis_want(const uopc_tensor *in, double **want, double *loss, const void *spec) {
  const reduce_spec *s = spec;
  (void)loss;
  int64_t rows = in[0].shape[0];
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < 4; j++)
      want[0][i * 4 + j] = s->axes == 1 ? at(&in[1], j) / (double)rows : at(&in[1], i) / 4.0;
}

static void test_grad_mean_over_one_axis(void **state) {
  (void)state;
  static const reduce_spec over_rows = {1, 0}, over_cols = {2, 1};
  gcase g = {"mean axis 0 (count B)", mean_axis_loss, &over_rows, 2, {arg("x", 2, B_, 4), arg("r", 1, 4, 0)}, 0x1,
             NULL, mean_axis_want, 0};
  run_case(&g, batches, 3);
  gcase h = {"mean axis 1, keepdims (count 4)", mean_axis_loss, &over_cols, 2, {arg("x", 2, B_, 4), arg("r", 2, B_, 1)},
             0x1, NULL, mean_axis_want, 0};
  run_case(&h, batches, 3);
}

/* ---- The two-layer model: loss = mean((relu(x @ w1) @ w2 - y)^2). */

enum { D_IN = 5, D_HID = 6, D_OUT = 3 };

static int two_layer(tp_ctx *c, tp_tensor *const *in, tp_tensor **out, void *user) {
  (void)user;
  tp_tensor *h = tp_relu(c, tp_matmul(c, in[0], in[1]));
  tp_tensor *d = tp_sub(c, tp_matmul(c, h, in[2]), in[3]);
  out[0] = tp_mean(c, tp_mul(c, d, d));
  return tp_status(c);
}

/* The forward and backward passes written out, in double. */
static void two_layer_want(const uopc_tensor *in, double **want, double *loss, const void *spec) {
  (void)spec;
  int64_t B = in[0].shape[0];
  double *pre = calloc((size_t)(B * D_HID), sizeof *pre), *dp = calloc((size_t)(B * D_OUT), sizeof *dp);
  double *dh = calloc((size_t)(B * D_HID), sizeof *dh);
  if (!pre || !dp || !dh) fail_msg("two-layer reference, B = %lld: out of memory", (long long)B);
  for (int64_t i = 0; i < B; i++)
    for (int j = 0; j < D_HID; j++)
      for (int k = 0; k < D_IN; k++) pre[i * D_HID + j] += at(&in[0], i * D_IN + k) * at(&in[1], k * D_HID + j);
  *loss = 0;
  for (int64_t i = 0; i < B; i++)
    for (int o = 0; o < D_OUT; o++) {
      double p = 0;
      for (int j = 0; j < D_HID; j++) p += fmax(pre[i * D_HID + j], 0) * at(&in[2], j * D_OUT + o);
      double d = p - at(&in[3], i * D_OUT + o);
      *loss += d * d / (double)(B * D_OUT);
      dp[i * D_OUT + o] = 2 * d / (double)(B * D_OUT);
    }
  for (int64_t i = 0; i < B; i++)
    for (int j = 0; j < D_HID; j++) {
      double a = fmax(pre[i * D_HID + j], 0), da = 0;
      for (int o = 0; o < D_OUT; o++) {
        want[2][j * D_OUT + o] += a * dp[i * D_OUT + o];            /* dw2 = relu(h)^T dp */
        da += dp[i * D_OUT + o] * at(&in[2], j * D_OUT + o);        /* da = dp w2^T */
      }
      dh[i * D_HID + j] = pre[i * D_HID + j] > 0 ? da : 0;
    }
  for (int64_t i = 0; i < B; i++)
    for (int k = 0; k < D_IN; k++)
      for (int j = 0; j < D_HID; j++) {
        want[1][k * D_HID + j] += at(&in[0], i * D_IN + k) * dh[i * D_HID + j];   /* dw1 = x^T dh */
        want[0][i * D_IN + k] += dh[i * D_HID + j] * at(&in[1], k * D_HID + j);   /* dx = dh w1^T */
      }
  free(pre), free(dp), free(dh);
}

static void test_grad_two_layer_model_matches_a_hand_written_reference(void **state) {
  (void)state;
  static const int64_t sizes[] = {2, 5, 16};
  gcase g = {"two-layer model", two_layer, NULL, 4,
             {arg("x", 2, B_, D_IN), arg("w1", 2, D_IN, D_HID), arg("w2", 2, D_HID, D_OUT), arg("y", 2, B_, D_OUT)},
             0x7, NULL, two_layer_want, 1};
  run_case(&g, sizes, 3);
}

/* ---- An op without a rule: max is outside tp_vjp_rule's list (tp_backward finds its rule in the
 * given tp_grad_more.c first), so the student's function, asked directly, must refuse it. */

static void test_grad_of_an_op_without_a_rule_is_unsupported(void **state) {
  (void)state;
  tp_arg a = arg("x", 2, B_, 4);
  uopc_tensor x = make_input(&a, 3, 1);
  tp_ctx *c = NULL;
  uopc_error err = {0};
  assert_uopc_ok(tp_ctx_new_eager(&c, &err), err);
  tp_tensor *y = tp_reduce_at(c, IR_MAX, tp_wrap(c, &x), 0u, 0, TP_HERE), *gx[3] = {NULL, NULL, NULL};
  assert_non_null(y);
  assert_uopc_code(tp_vjp_rule(c, y, tp_scalar(c, 1), gx, TP_HERE, &err), UOPC_E_UNSUPPORTED, err);
  assert_contains(err.message, "max");
  assert_null(gx[0]);
  tp_ctx_free(c);
  uopc_tensor_release(&x);
}

/* ---- tp_unbroadcast, called directly in an eager context. */

/* g of shape gs (values value(i, 1)) summed back to like's shape ls,
 * against a sum over g's elements written here. */
static void unbroadcast_case(int grank, const int64_t *gs, int lrank, const int64_t *ls) {
  tp_ctx *c;
  uopc_error err = {0};
  uopc_tensor gv, lv;
  assert_uopc_ok(tp_ctx_new_eager(&c, &err), err);
  assert_uopc_ok(uopc_tensor_empty(&gv, UOPC_F32, grank, gs, &err), err);
  assert_uopc_ok(uopc_tensor_empty(&lv, UOPC_F32, lrank, ls, &err), err);
  for (int64_t i = 0; i < uopc_tensor_numel(&gv); i++) uopc_tensor_set(&gv, i, value(i, 1));
  double want[64] = {0};
  int lead = grank - lrank;
  for (int64_t i = 0; i < uopc_tensor_numel(&gv); i++) {
    int64_t rest = i, idx[UOPC_MAX_RANK], li = 0;
    for (int a = grank - 1; a >= 0; a--) idx[a] = rest % gs[a], rest /= gs[a];
    for (int a = 0; a < lrank; a++) li = li * ls[a] + (ls[a] == 1 ? 0 : idx[a + lead]);
    want[li] += value(i, 1);
  }
  tp_tensor *g = tp_wrap(c, &gv), *like = tp_wrap(c, &lv), *out = NULL;
  char name[96];
  snprintf(name, sizeof name, "unbroadcast of rank %d to rank %d", grank, lrank);
  expect_non_null(g, "%s: the gradient's handle", name);
  expect_non_null(like, "%s: like's handle", name);
  assert_uopc_ok(tp_unbroadcast(c, g, like, TP_HERE, &out, &err), err);
  expect_int(tp_status(c), UOPC_OK, "%s: the context's status after it (%s)", name, tp_error(c)->message);
  expect_non_null(out, "%s: the result", name);
  int same = grank == lrank;
  for (int a = 0; a < grank && same; a++) same = gs[a] == ls[a];
  if (same && out != g)   /* nothing was broadcast: no reduction, not even over extents of 1 */
    fail_msg("unbroadcast of a gradient already of like's shape (rank %d) summed it instead of returning it", grank);
  const uopc_tensor *ov = tp_value(out);
  expect_non_null(ov, "%s: the result's value", name);
  compare(name, "eager", 0, 0, ov, &lv, want);
  uopc_tensor_release(&gv), uopc_tensor_release(&lv);
  tp_ctx_free(c);
}

static void test_unbroadcast_sums_leading_axes(void **state) {
  (void)state;
  unbroadcast_case(3, (int64_t[]){2, 3, 4}, 2, (int64_t[]){3, 4});
  unbroadcast_case(3, (int64_t[]){2, 3, 4}, 1, (int64_t[]){4});
  unbroadcast_case(2, (int64_t[]){5, 4}, 1, (int64_t[]){4});
  unbroadcast_case(2, (int64_t[]){3, 4}, 0, NULL);
}

static void test_unbroadcast_sums_stretched_axes_keeping_them(void **state) {
  (void)state;
  unbroadcast_case(2, (int64_t[]){3, 4}, 2, (int64_t[]){1, 4});
  unbroadcast_case(2, (int64_t[]){3, 4}, 2, (int64_t[]){3, 1});
  unbroadcast_case(2, (int64_t[]){3, 4}, 2, (int64_t[]){1, 1});
  unbroadcast_case(2, (int64_t[]){0, 4}, 2, (int64_t[]){1, 4});   /* stretched to 0 rows: a row of zeros */
}

static void test_unbroadcast_sums_leading_and_stretched_axes(void **state) {
  (void)state;
  unbroadcast_case(3, (int64_t[]){2, 3, 4}, 2, (int64_t[]){1, 4});
  unbroadcast_case(3, (int64_t[]){2, 3, 4}, 2, (int64_t[]){3, 1});
  unbroadcast_case(3, (int64_t[]){2, 3, 4}, 1, (int64_t[]){1});
}

static void test_unbroadcast_of_a_gradient_of_the_same_shape_keeps_it(void **state) {
  (void)state;
  unbroadcast_case(2, (int64_t[]){3, 4}, 2, (int64_t[]){3, 4});
  unbroadcast_case(2, (int64_t[]){1, 4}, 2, (int64_t[]){1, 4});   /* extent 1 in both: nothing was stretched */
  unbroadcast_case(0, NULL, 0, NULL);
}

/* A gradient of lower rank than like's cannot have been broadcast from it. */
static void test_unbroadcast_refuses_a_gradient_of_lower_rank(void **state) {
  (void)state;
  tp_ctx *c;
  uopc_error err = {0};
  uopc_tensor gv, lv;
  int64_t gs[1] = {4}, ls[2] = {3, 4};
  assert_uopc_ok(tp_ctx_new_eager(&c, &err), err);
  assert_uopc_ok(uopc_tensor_empty(&gv, UOPC_F32, 1, gs, &err), err);
  assert_uopc_ok(uopc_tensor_empty(&lv, UOPC_F32, 2, ls, &err), err);
  tp_tensor *g = tp_wrap(c, &gv), *like = tp_wrap(c, &lv), *out = NULL;
  assert_uopc_code(tp_unbroadcast(c, g, like, TP_HERE, &out, &err), UOPC_E_INVALID, err);
  assert_names_int(err.message, 1, "the gradient's rank");   /* tp_internal.h: it names both ranks */
  assert_names_int(err.message, 2, "like's rank");
  expect_null(out, "unbroadcast of a rank-1 gradient (4) to like of rank 2 (3, 4), refused: the result");
  uopc_tensor_release(&gv), uopc_tensor_release(&lv);
  tp_ctx_free(c);
}

/* ---- tp_accumulate: a tensor that reaches the loss by several paths. */

static int square_loss(tp_ctx *c, tp_tensor *const *in, tp_tensor **out, void *user) {
  (void)user;
  out[0] = tp_sum(c, tp_mul(c, in[0], in[0]), 0u, 0);
  return tp_status(c);
}

static void square_want(const uopc_tensor *in, double **want, double *loss, const void *spec) {
  (void)spec;
  *loss = 0;
  for (int64_t e = 0; e < uopc_tensor_numel(&in[0]); e++) {
    want[0][e] = 2 * at(&in[0], e);
    *loss += at(&in[0], e) * at(&in[0], e);
  }
}

/* Overwriting instead of adding gives x, not 2 x (tests/broken/23.4.mk). */
static void test_accumulate_x_times_x_gives_2x(void **state) {
  (void)state;
  gcase g = {"sum(x * x)", square_loss, NULL, 1, {arg("x", 2, B_, 4)}, 0x1, NULL, square_want, 1};
  run_case(&g, batches, 3);
}

/* loss = sum(x * x * x + x * w): 3 x^2 + w for x, x for w. */
static int three_paths_loss(tp_ctx *c, tp_tensor *const *in, tp_tensor **out, void *user) {
  (void)user;
  tp_tensor *cube = tp_mul(c, tp_mul(c, in[0], in[0]), in[0]);
  out[0] = tp_sum(c, tp_add(c, cube, tp_mul(c, in[0], in[1])), 0u, 0);
  return tp_status(c);
}

static void three_paths_want(const uopc_tensor *in, double **want, double *loss, const void *spec) {
  (void)loss, (void)spec;
  for (int64_t e = 0; e < uopc_tensor_numel(&in[0]); e++) {
    double x = at(&in[0], e);
    want[0][e] = 3 * x * x + at(&in[1], e);
    want[1][e] = x;
  }
}

static void test_accumulate_adds_every_path(void **state) {
  (void)state;
  gcase g = {"sum(x * x * x + x * w)", three_paths_loss, NULL, 2, {arg("x", 2, B_, 4), arg("w", 2, B_, 4)}, 0x3,
             NULL, three_paths_want, 0};
  run_case(&g, batches, 3);
}

static void test_accumulate_fills_an_empty_slot_then_adds(void **state) {
  (void)state;
  tp_ctx *c;
  uopc_error err = {0};
  uopc_tensor av, bv;
  int64_t n = 4;
  assert_uopc_ok(tp_ctx_new_eager(&c, &err), err);
  assert_uopc_ok(uopc_tensor_empty(&av, UOPC_F32, 1, &n, &err), err);
  assert_uopc_ok(uopc_tensor_empty(&bv, UOPC_F32, 1, &n, &err), err);
  for (int64_t i = 0; i < n; i++) uopc_tensor_set(&av, i, (double)i + 1), uopc_tensor_set(&bv, i, 10.0 * (double)(i + 1));
  tp_tensor *a = tp_wrap(c, &av), *b = tp_wrap(c, &bv), *slot = NULL;
  assert_uopc_ok(tp_accumulate(c, &slot, a, TP_HERE, &err), err);
  expect_ptr(slot, a, "accumulate of a into an empty slot: the slot (a itself, expected)");
  assert_uopc_ok(tp_accumulate(c, &slot, b, TP_HERE, &err), err);
  assert_uopc_ok(tp_accumulate(c, &slot, a, TP_HERE, &err), err);
  expect_non_null(slot, "accumulate of a, b, a with a = (1, 2, 3, 4), b = 10 a: the slot");
  for (int64_t i = 0; i < n; i++) {
    expect_close(at(tp_value(slot), i), 12.0 * (double)(i + 1), 1e-5,
                 "accumulate of a, b, a with a = (1, 2, 3, 4), b = 10 a: slot[%lld] (a + b + a)", (long long)i);
    expect_close(at(tp_value(a), i), (double)(i + 1), 1e-6,
                 "accumulate of a, b, a: a[%lld] afterwards (a itself must not change)", (long long)i);
  }
  /* no slot to add into, or nothing to add: refused, nothing touched (tp_internal.h) */
  tp_tensor *before = slot;
  assert_uopc_code(tp_accumulate(c, NULL, a, TP_HERE, &err), UOPC_E_INVALID, err);
  assert_uopc_code(tp_accumulate(c, &slot, NULL, TP_HERE, &err), UOPC_E_INVALID, err);
  expect_ptr(slot, before, "accumulate of a NULL contribution, refused: the slot (untouched, expected)");
  for (int64_t i = 0; i < n; i++)
    expect_close(at(tp_value(slot), i), 12.0 * (double)(i + 1), 1e-5, "after the refused calls: slot[%lld]", (long long)i);
  uopc_tensor_release(&av), uopc_tensor_release(&bv);
  tp_ctx_free(c);
}

/* ---- Given code. */

static int vector_loss(tp_ctx *c, tp_tensor *const *in, tp_tensor **out, void *user) {
  (void)user;
  out[0] = tp_mul(c, in[0], in[0]);
  return tp_status(c);
}

static void test_backward_of_a_loss_that_is_not_a_scalar_is_invalid(void **state) {
  (void)state;
  tp_arg a = arg("x", 2, B_, 4);
  uopc_tensor x = make_input(&a, 3, 1), out[1] = {{0}}, grads[1] = {{0}};
  const uopc_tensor *in[1] = {&x};
  uopc_error err = {0};
  assert_uopc_code(tp_run_eager(vector_loss, NULL, in, 1, 1, 0x1, out, grads, &err), UOPC_E_INVALID, err);
  assert_contains(err.message, "rank 2");
  uopc_tensor_release(&x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_grad_mul_same_shape),
      cmocka_unit_test(test_grad_mul_broadcast_row),
      cmocka_unit_test(test_grad_mul_broadcast_stretched_row),
      cmocka_unit_test(test_grad_mul_broadcast_scalar),
      cmocka_unit_test(test_grad_maximum_goes_to_the_larger_operand),
      cmocka_unit_test(test_grad_relu_is_zero_at_zero),
      cmocka_unit_test(test_grad_matmul_2d),
      cmocka_unit_test(test_grad_sum_over_each_axis_with_and_without_keepdims),
      cmocka_unit_test(test_grad_mean_reads_its_count_at_run_time),
      cmocka_unit_test(test_grad_mean_over_one_axis),
      cmocka_unit_test(test_grad_two_layer_model_matches_a_hand_written_reference),
      cmocka_unit_test(test_grad_of_an_op_without_a_rule_is_unsupported),
      cmocka_unit_test(test_unbroadcast_sums_leading_axes),
      cmocka_unit_test(test_unbroadcast_sums_stretched_axes_keeping_them),
      cmocka_unit_test(test_unbroadcast_sums_leading_and_stretched_axes),
      cmocka_unit_test(test_unbroadcast_of_a_gradient_of_the_same_shape_keeps_it),
    cmocka_unit_test(test_unbroadcast_refuses_a_gradient_of_lower_rank),
      cmocka_unit_test(test_accumulate_x_times_x_gives_2x),
      cmocka_unit_test(test_accumulate_adds_every_path),
      cmocka_unit_test(test_accumulate_fills_an_empty_slot_then_adds),
      cmocka_unit_test(test_backward_of_a_loss_that_is_not_a_scalar_is_invalid),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
