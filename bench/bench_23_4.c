/* bench_23_4.c: the figures of lab 23.4 (function tracing).
 *   the two-layer model's forward + backward, captured (tp_call on a warm
 *   variant: guards checked, then the forward and backward programs) vs
 *   eager (tp_run_eager: every op interpreted by ir_eval), at batch sizes
 *   1, 16 and 64;
 *   tp_variant_holds alone on a variant of 1 and of 8 guards (ns a call);
 *   a whole tp_call hit of a one-guard model at length 16 (the guard check
 *   plus one small kernel), for the dispatch's share.
 * Prints `bench 23.4 <case> n=<n> ns=<ns per call>` and `ratio 23.4 ...`
 * lines; every time is the median of REPS timings (CLOCK_MONOTONIC). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "bench.h"
#include "tp_compile.h"

enum { REPS = 9, D_IN = 8, D_HID = 16, D_OUT = 4 };

static int two_layer(tp_ctx *c, tp_tensor *const *in, tp_tensor **out, void *user) {
  (void)user;
  tp_tensor *d = tp_sub(c, tp_matmul(c, tp_tanh(c, tp_matmul(c, in[0], in[1])), in[2]), in[3]);
  out[0] = tp_mean(c, tp_mul(c, d, d));
  return tp_status(c);
}

static int branchy(tp_ctx *c, tp_tensor *const *in, tp_tensor **out, void *user) {
  (void)user;
  tp_tensor *x = in[0];
  out[0] = tp_gt(c, tp_size(c, x, 0), tp_int_const(c, 100)) ? tp_neg(c, x) : tp_add(c, x, x);
  return tp_status(c);
}

static void fill(uopc_tensor *t) {
  for (int64_t i = 0; i < uopc_tensor_numel(t); i++) uopc_tensor_set(t, i, (double)(i % 13) / 13.0 - 0.5);
}

static void release(uopc_tensor *t, int n) {
  for (int k = 0; k < n; k++) uopc_tensor_release(&t[k]);
}

/* ns per call of captured and of eager forward + backward at batch b. */
static int model_times(tp_compiled *f, int64_t b, double *captured, double *eager, uopc_error *err) {
  int64_t shapes[4][2] = {{b, D_IN}, {D_IN, D_HID}, {D_HID, D_OUT}, {b, D_OUT}};
  uopc_tensor t[4] = {0};
  int rc = UOPC_OK;
  for (int k = 0; k < 4 && !rc; k++) {
    rc = uopc_tensor_empty(&t[k], UOPC_F32, 2, shapes[k], err);
    if (!rc) fill(&t[k]);
  }
  const uopc_tensor *in[4] = {&t[0], &t[1], &t[2], &t[3]};
  double tc[REPS], te[REPS];
  for (int r = -1; r < REPS && !rc; r++) {    /* r = -1: the warm-up (and the trace) */
    uopc_tensor out[1] = {0}, grads[2] = {0};
    double t0 = bench_now_ns();
    rc = tp_call(f, in, out, grads, err);
    double t1 = bench_now_ns();
    release(out, 1), release(grads, 2);
    if (!rc) rc = tp_run_eager(two_layer, NULL, in, 4, 1, 0x6, out, grads, err);
    double t2 = bench_now_ns();
    release(out, 1), release(grads, 2);
    if (r >= 0) tc[r] = t1 - t0, te[r] = t2 - t1;
  }
  release(t, 4);
  if (!rc) *captured = bench_median(tc, REPS), *eager = bench_median(te, REPS);
  return rc;
}

static int bench_model(uopc_error *err) {
  sym_arena *ar;
  int rc = sym_arena_new(&ar, err);
  if (rc) return rc;
  sym_dim B;
  rc = sym_dim_init(&B, "B", 1, 1024, 1, err);
  const sym_expr *b = sym_expr_dim(ar, &B);
  tp_arg args[4] = {
      {"x", UOPC_F32, 2, {b, sym_expr_const(ar, D_IN)}},
      {"w1", UOPC_F32, 2, {sym_expr_const(ar, D_IN), sym_expr_const(ar, D_HID)}},
      {"w2", UOPC_F32, 2, {sym_expr_const(ar, D_HID), sym_expr_const(ar, D_OUT)}},
      {"y", UOPC_F32, 2, {b, sym_expr_const(ar, D_OUT)}},
  };
  tp_options o = {.grad_inputs = 0x6};
  tp_compiled *f = NULL;
  if (!rc) rc = tp_compiled_new(&f, two_layer, NULL, args, 4, 1, &o, err);
  static const int64_t batches[] = {1, 16, 64};
  for (int k = 0; k < 3 && !rc; k++) {
    double cap = 0, eag = 0;
    rc = model_times(f, batches[k], &cap, &eag, err);
    if (rc) break;
    printf("bench 23.4 two-layer-captured n=%lld ns=%.0f\n", (long long)batches[k], cap);
    printf("bench 23.4 two-layer-eager n=%lld ns=%.0f\n", (long long)batches[k], eag);
    printf("ratio 23.4 two-layer n=%lld eager/captured=%.1f\n", (long long)batches[k], eag / cap);
  }
  if (!rc) printf("ratio 23.4 two-layer variants=%d (one forward and one backward artifact for every batch)\n",
                  tp_compiled_variant_count(f));
  tp_compiled_free(f);
  sym_arena_free(ar);
  return rc;
}

/* tp_variant_holds on hand-made variants of 1 and 8 guards (n - 16 > 0, ...). */
static int bench_guards(uopc_error *err) {
  sym_arena *ar;
  int rc = sym_arena_new(&ar, err);
  if (rc) return rc;
  sym_dim n;
  rc = sym_dim_init(&n, "n", 1, 1 << 20, 1, err);
  tp_guard g[8];
  for (int k = 0; k < 8 && !rc; k++)
    g[k] = (tp_guard){sym_expr_sub(ar, sym_expr_dim(ar, &n), sym_expr_const(ar, 16 + k)), TP_GT, 1, {"bench", 0}};
  sym_binding b;
  sym_binding_init(&b);
  if (!rc) rc = sym_dim_bind(&b, &n, 1000, err);
  for (int guards = 1; guards <= 8 && !rc; guards += 7) {
    tp_variant v = {.guards = g, .n_guards = guards};
    enum { CALLS = 200000 };
    double t[REPS];
    int holds = 0;
    for (int r = 0; r < REPS && !rc; r++) {
      double t0 = bench_now_ns();
      for (int i = 0; i < CALLS && !rc; i++) rc = tp_variant_holds(&v, &b, &holds, err);
      t[r] = (bench_now_ns() - t0) / CALLS;
    }
    if (!rc) printf("bench 23.4 variant-holds-%d-guards n=1 ns=%.1f\n", guards, bench_median(t, REPS));
  }
  sym_arena_free(ar);
  return rc;
}

/* A whole tp_call hit of a one-guard model at length 16. */
static int bench_call(uopc_error *err) {
  sym_arena *ar;
  int rc = sym_arena_new(&ar, err);
  if (rc) return rc;
  sym_dim n;
  rc = sym_dim_init(&n, "n", 1, 1 << 20, 1, err);
  tp_arg a = {"x", UOPC_F32, 1, {sym_expr_dim(ar, &n)}};
  tp_compiled *f = NULL;
  if (!rc) rc = tp_compiled_new(&f, branchy, NULL, &a, 1, 1, NULL, err);
  int64_t len = 16;
  uopc_tensor x = {0};
  if (!rc) rc = uopc_tensor_empty(&x, UOPC_F32, 1, &len, err);
  if (!rc) fill(&x);
  const uopc_tensor *in[1] = {&x};
  enum { CALLS = 20000 };
  double t[REPS];
  for (int r = -1; r < REPS && !rc; r++) {
    double t0 = bench_now_ns();
    for (int i = 0; i < (r < 0 ? 1 : CALLS) && !rc; i++) {
      uopc_tensor out[1] = {0};
      rc = tp_call(f, in, out, NULL, err);
      uopc_tensor_release(&out[0]);
    }
    if (r >= 0) t[r] = (bench_now_ns() - t0) / CALLS;
  }
  if (!rc) printf("bench 23.4 call-hit-one-guard n=16 ns=%.0f\n", bench_median(t, REPS));
  uopc_tensor_release(&x);
  tp_compiled_free(f);
  sym_arena_free(ar);
  return rc;
}

int main(void) {
  uopc_error err = {0};
  int rc = bench_model(&err);
  if (!rc) rc = bench_guards(&err);
  if (!rc) rc = bench_call(&err);
  if (rc) {
    fprintf(stderr, "bench_23_4: %s\n", err.message);
    return 2;
  }
  return 0;
}
