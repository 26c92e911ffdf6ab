/* bench_train.c: training through tensorjit (section 23.7, issue 28). The
 * two-layer model of lab 23.4, loss = mean((tanh(x @ w1) @ w2 - y)^2) with
 * x (B, 64), w1 (64, 128), w2 (128, 16), y (B, 16) in f32: one step's
 * forward and backward (tj_call_saving, tj_backward of a seed of 1,
 * gradients of w1 and w2) against 23.4's eager mode (tp_run_eager, the core's
 * interpreter), at batch sizes 1, 16, 64 and 256, the artifacts built warm.
 * Then the artifacts built over a sweep of 20 batch sizes, for the model and
 * for sum(x / rows), and what a record holds (tj_train_text). Then a layer
 * norm over rows of LN_COLS, loss = mean((xhat * g + b)^2) with gradients of
 * x, g and b, the same way (its backward's counts come from runtime dims:
 * var's and mean's). Prints
 *   bench train two-layer n=<B> ns=<per step>, bench train two-layer-eager n=<B> ns=...
 *   ratio train two-layer n=<B> eager/compiled=<x>
 *   bench train layer-norm n=<B> ns=..., bench train layer-norm-eager n=<B> ns=...
 *   count train <model> sizes=20 forward=<n> backward=<n>
 * (best of REPS); bench/report.py adds NumPy's hand-written forward and
 * backward of the same model. */
#include <stdio.h>
#include <string.h>
#include "bench.h"
#include "tensorjit.h"
#include "tp_compile.h"

enum { REPS = 5, D_IN = 64, D_HID = 128, D_OUT = 16, SWEEP = 20, LN_COLS = 512 };
static const int64_t BATCHES[] = {1, 16, 64, 256};

static int two_layer(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {
  (void)user;
  tp_tensor *h = tp_tanh(c, tp_matmul(c, in[0].t, in[1].t));
  tp_tensor *d = tp_sub(c, tp_matmul(c, h, in[2].t), in[3].t);
  out[0] = tp_mean(c, tp_mul(c, d, d));
  return tp_status(c);
}

static int two_layer_tp(tp_ctx *c, tp_tensor *const *in, tp_tensor **out, void *user) {
  (void)user;
  tp_tensor *h = tp_tanh(c, tp_matmul(c, in[0], in[1]));
  tp_tensor *d = tp_sub(c, tp_matmul(c, h, in[2]), in[3]);
  out[0] = tp_mean(c, tp_mul(c, d, d));
  return tp_status(c);
}

static int sum_over_rows(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {
  (void)user;
  tp_tensor *rows = tp_from_int_at(c, tp_size(c, in[0].t, 0), UOPC_F32, TP_HERE);
  out[0] = tp_sum(c, tp_div(c, in[0].t, rows), 0u, 0);
  return tp_status(c);
}

/* A layer norm over the last axis and a loss of it: mean((xhat * g + b)^2),
 * xhat = (x - mean) / sqrt(var + 1e-5), var with correction 0 (tp_nn.c). */
static tp_tensor *layer_norm_loss(tp_ctx *c, tp_tensor *x, tp_tensor *g, tp_tensor *b) {
  tp_tensor *y = tp_layer_norm(c, x, g, b, 1e-5);
  return tp_mean(c, tp_mul(c, y, y));
}

static int layer_norm(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {
  (void)user;
  out[0] = layer_norm_loss(c, in[0].t, in[1].t, in[2].t);
  return tp_status(c);
}

static int layer_norm_tp(tp_ctx *c, tp_tensor *const *in, tp_tensor **out, void *user) {
  (void)user;
  out[0] = layer_norm_loss(c, in[0], in[1], in[2]);
  return tp_status(c);
}

typedef struct step { tj_function *f, *portable; uopc_tensor t[4], one; } step;

static int fill(uopc_tensor *t, int64_t a, int64_t b, uopc_error *err) {
  int rc = uopc_tensor_empty(t, UOPC_F32, 2, (int64_t[]){a, b}, err);
  for (int64_t i = 0; !rc && i < a * b; i++) uopc_tensor_set(t, i, (double)((i * 7919) % 101) / 101 - 0.5);
  return rc;
}

static int compiled_step(step *s, uopc_error *err) {
  uopc_tensor loss, grads[2];
  tj_arg args[4] = {tj_tensor(&s->t[0]), tj_tensor(&s->t[1]), tj_tensor(&s->t[2]), tj_tensor(&s->t[3])};
  tj_saved *saved = NULL;
  const uopc_tensor *seed[1] = {&s->one};
  int rc = tj_call_saving(s->f, args, 4, &loss, &saved, err);
  if (!rc) rc = tj_backward(s->f, saved, seed, grads, err);
  if (!rc) uopc_tensor_release(&grads[0]), uopc_tensor_release(&grads[1]);
  if (saved) uopc_tensor_release(&loss);
  tj_saved_free(saved);
  return rc;
}

static int eager_step(step *s, uopc_error *err) {
  uopc_tensor loss, grads[2];
  const uopc_tensor *in[4] = {&s->t[0], &s->t[1], &s->t[2], &s->t[3]};
  int rc = tp_run_eager(two_layer_tp, NULL, in, 4, 1, 0x6, &loss, grads, err);
  if (!rc) uopc_tensor_release(&loss), uopc_tensor_release(&grads[0]), uopc_tensor_release(&grads[1]);
  return rc;
}

static int ln_compiled_step(step *s, uopc_error *err) {
  uopc_tensor loss, grads[3];
  tj_arg args[3] = {tj_tensor(&s->t[0]), tj_tensor(&s->t[1]), tj_tensor(&s->t[2])};
  tj_saved *saved = NULL;
  const uopc_tensor *seed[1] = {&s->one};
  int rc = tj_call_saving(s->f, args, 3, &loss, &saved, err);
  if (!rc) rc = tj_backward(s->f, saved, seed, grads, err);
  for (int g = 0; !rc && g < 3; g++) uopc_tensor_release(&grads[g]);
  if (saved) uopc_tensor_release(&loss);
  tj_saved_free(saved);
  return rc;
}

static int ln_eager_step(step *s, uopc_error *err) {
  uopc_tensor loss, grads[3];
  const uopc_tensor *in[3] = {&s->t[0], &s->t[1], &s->t[2]};
  int rc = tp_run_eager(layer_norm_tp, NULL, in, 3, 1, 0x7, &loss, grads, err);
  if (!rc) {
    uopc_tensor_release(&loss);
    for (int g = 0; g < 3; g++) uopc_tensor_release(&grads[g]);
  }
  return rc;
}

/* The best time per step of REPS batches of about 20 ms each. */
static double best_ns(int (*fn)(step *, uopc_error *), step *s, uopc_error *err) {
  int64_t calls = 1;
  for (double t = 0; t < 2e7; calls *= 2) {
    double t0 = bench_now_ns();
    for (int64_t k = 0; k < calls; k++)
      if (fn(s, err)) return -1;
    t = bench_now_ns() - t0;
  }
  double best = 1e300;
  for (int r = 0; r < REPS; r++) {
    double t0 = bench_now_ns();
    for (int64_t k = 0; k < calls; k++)
      if (fn(s, err)) return -1;
    double per = (bench_now_ns() - t0) / (double)calls;
    best = per < best ? per : best;
  }
  return best;
}

static int time_batch(step *s, int64_t b, uopc_error *err) {
  int rc = fill(&s->t[0], b, D_IN, err);
  if (!rc) rc = fill(&s->t[3], b, D_OUT, err);
  step p = *s;   /* the same step through artifacts built for plain x86-64 (tensorjit's default is this CPU) */
  p.f = s->portable;
  double c = rc ? -1 : best_ns(compiled_step, s, err), q = c < 0 ? -1 : best_ns(compiled_step, &p, err);
  double e = q < 0 ? -1 : best_ns(eager_step, s, err);
  uopc_tensor_release(&s->t[0]), uopc_tensor_release(&s->t[3]);
  if (e < 0) return err->code ? err->code : UOPC_E_INVALID;
  printf("bench train two-layer n=%lld ns=%.0f\n", (long long)b, c);
  printf("bench train two-layer-portable n=%lld ns=%.0f\n", (long long)b, q);
  printf("ratio train two-layer n=%lld portable/compiled=%.2f\n", (long long)b, q / c);
  printf("bench train two-layer-eager n=%lld ns=%.0f\n", (long long)b, e);
  printf("ratio train two-layer n=%lld eager/compiled=%.2f\n", (long long)b, e / c);
  return UOPC_OK;
}

static int fill_vec(uopc_tensor *t, int64_t n, double base, uopc_error *err) {
  int rc = uopc_tensor_empty(t, UOPC_F32, 1, &n, err);
  for (int64_t i = 0; !rc && i < n; i++) uopc_tensor_set(t, i, base + (double)(i % 13) / 26);
  return rc;
}

/* The layer norm's step at each batch size, then its artifacts over SWEEP batch sizes. */
static int layer_norm_bench(uopc_error *err) {
  tj_function *f = NULL;
  tj_options o = {.grad_args = 0x7};
  step s = {NULL, NULL, {{0}}, {0}};
  int rc = tj_compile(&f, layer_norm, NULL, &o, err);
  s.f = f;
  if (!rc) rc = uopc_tensor_empty(&s.one, UOPC_F32, 0, NULL, err);
  if (!rc) uopc_tensor_set(&s.one, 0, 1);
  if (!rc) rc = fill_vec(&s.t[1], LN_COLS, 1, err);
  if (!rc) rc = fill_vec(&s.t[2], LN_COLS, 0, err);
  for (size_t k = 0; k < sizeof BATCHES / sizeof *BATCHES && !rc; k++) {
    int64_t b = BATCHES[k];
    rc = fill(&s.t[0], b, LN_COLS, err);
    double c = rc ? -1 : best_ns(ln_compiled_step, &s, err), e = c < 0 ? -1 : best_ns(ln_eager_step, &s, err);
    uopc_tensor_release(&s.t[0]);
    if (e < 0) rc = err->code ? err->code : UOPC_E_INVALID;
    if (rc) break;
    printf("bench train layer-norm n=%lld ns=%.0f\n", (long long)b, c);
    printf("bench train layer-norm-eager n=%lld ns=%.0f\n", (long long)b, e);
    printf("ratio train layer-norm n=%lld eager/compiled=%.2f\n", (long long)b, e / c);
  }
  tj_free(f);   /* a new function for the sweep: batches 2 .. (>= 2), as the two-layer's */
  f = s.f = NULL;
  if (!rc) rc = tj_compile(&f, layer_norm, NULL, &o, err);
  s.f = f;
  for (int k = 0; k < SWEEP && !rc; k++) {
    rc = fill(&s.t[0], 2 + (k * 37) % 300, LN_COLS, err);
    if (!rc) rc = ln_compiled_step(&s, err);
    uopc_tensor_release(&s.t[0]);
  }
  if (!rc)
    printf("count train layer-norm sizes=%d forward=%d backward=%d\n", SWEEP, (int)tj_forward_stats(f).artifacts_built,
           (int)tj_backward_stats(f).artifacts_built);
  for (int k = 0; k < 3; k++) uopc_tensor_release(&s.t[k]);
  uopc_tensor_release(&s.one);
  tj_free(f);
  return rc;
}

/* Artifacts over SWEEP batch sizes 2 .. (all >= 2: the 0/1 rule is another row of the chapter's table). */
static int sweep(const char *name, tj_model model, int n_args, unsigned grad_args, uopc_error *err) {
  tj_function *f = NULL;
  tj_options o = {.grad_args = grad_args};
  int rc = tj_compile(&f, model, NULL, &o, err);
  step s = {f, NULL, {{0}}, {0}};
  if (!rc) rc = uopc_tensor_empty(&s.one, UOPC_F32, 0, NULL, err);
  if (!rc) uopc_tensor_set(&s.one, 0, 1);
  if (!rc) rc = fill(&s.t[1], D_IN, D_HID, err);
  if (!rc) rc = fill(&s.t[2], D_HID, D_OUT, err);
  for (int k = 0; k < SWEEP && !rc; k++) {
    int64_t b = 2 + (k * 37) % 300;
    rc = fill(&s.t[0], b, n_args == 1 ? 3 + k % 5 : D_IN, err);
    if (!rc) rc = fill(&s.t[3], b, D_OUT, err);
    tj_arg args[4] = {tj_tensor(&s.t[0]), tj_tensor(&s.t[1]), tj_tensor(&s.t[2]), tj_tensor(&s.t[3])};
    uopc_tensor loss, grads[2];
    tj_saved *saved = NULL;
    const uopc_tensor *seed[1] = {&s.one};
    if (!rc) rc = tj_call_saving(f, args, n_args, &loss, &saved, err);
    if (!rc) rc = tj_backward(f, saved, seed, grads, err);
    if (!rc) {
      for (int g = 0; g < __builtin_popcount(grad_args); g++) uopc_tensor_release(&grads[g]);
      uopc_tensor_release(&loss);
    }
    tj_saved_free(saved);
    uopc_tensor_release(&s.t[0]), uopc_tensor_release(&s.t[3]);
  }
  if (!rc)
    printf("count train %s sizes=%d forward=%d backward=%d\n", name, SWEEP, (int)tj_forward_stats(f).artifacts_built,
           (int)tj_backward_stats(f).artifacts_built);
  if (!rc && n_args == 4) {
    char text[2048];
    tj_train_text(f, text, sizeof text);
    printf("%s", text);
  }
  for (int k = 0; k < 4; k++) uopc_tensor_release(&s.t[k]);
  uopc_tensor_release(&s.one);
  tj_free(f);
  return rc;
}

int main(void) {
  uopc_error err = {0};
  tj_function *f = NULL;
  tj_options o = {.grad_args = 0x6};
  step s = {NULL, NULL, {{0}}, {0}};
  const uopc_program_options portable = {0};
  tj_options po = {.grad_args = 0x6, .program = &portable};
  int rc = tj_compile(&f, two_layer, NULL, &o, &err);
  s.f = f;
  if (!rc) rc = tj_compile(&s.portable, two_layer, NULL, &po, &err);
  if (!rc) rc = uopc_tensor_empty(&s.one, UOPC_F32, 0, NULL, &err);
  if (!rc) uopc_tensor_set(&s.one, 0, 1);
  if (!rc) rc = fill(&s.t[1], D_IN, D_HID, &err);
  if (!rc) rc = fill(&s.t[2], D_HID, D_OUT, &err);
  for (size_t k = 0; k < sizeof BATCHES / sizeof *BATCHES && !rc; k++) rc = time_batch(&s, BATCHES[k], &err);
  uopc_tensor_release(&s.t[1]), uopc_tensor_release(&s.t[2]), uopc_tensor_release(&s.one);
  tj_free(f);
  tj_free(s.portable);
  if (!rc) rc = sweep("two-layer", two_layer, 4, 0x6, &err);
  if (!rc) rc = sweep("sum-x-over-rows", sum_over_rows, 1, 0x1, &err);
  if (!rc) rc = layer_norm_bench(&err);
  if (rc) fprintf(stderr, "bench_train: %s\n", err.message);
  return rc ? 1 : 0;
}
