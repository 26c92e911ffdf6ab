/* bench_core.c: the price of dynamism through the compiler core's general
 * lowering (issue #8). Three graphs over an (8, N) f32 tensor: a strided
 * elementwise graph out = x*y + 1 where x is a view of an (8, 2N) buffer:
 * its first N columns (row stride a dim, unit inner stride: the variant a
 * stride guard would pick) or every other column (both strides dims), and a
 * sum over each axis. Each is
 * compiled once with symbolic extents and strides (one program for every N)
 * and once per N with every size a constant; both run through exec_run, so
 * the ratio is what dynamism costs, binder included. Prints
 * `bench core <case>-<dynamic|fixed> n=<N> ns=<time per call>` and
 * `ratio core <case> n=<N> dynamic/fixed=<x>` (best of REPS repetitions). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "bench.h"
#include "exec.h"

enum { ROWS = 8, REPS = 7 };
static const int64_t LENGTHS[] = {4096, 65536, 1 << 20};
enum { STRIDED_ROWS, STRIDED, SUM_ROWS, SUM_COLS, N_CASES };
static const char *const CASE_NAMES[N_CASES] = {"rows-mul-add", "cols-mul-add", "sum-axis1", "sum-axis0"};
static const char *const ENTRY_NAMES[N_CASES] = {"rows", "cols", "sum1", "sum0"};

/* Extents and strides of one build: dims (dynamic) or constants (fixed). */
typedef struct sizes { const sym_dim *rows, *n, *s0, *s1; int64_t n_value; } sizes;

static const sym_expr *size_expr(sym_arena *a, const sym_dim *d, int64_t value) {
  return d ? sym_expr_dim(a, d) : sym_expr_const(a, value);
}

/* The graph of one case, in its own arena; *g and *e are the caller's. */
static int build(int which, const sizes *z, const char *entry, ir_graph **g, exec **e, uopc_error *err) {
  int rc = ir_graph_new(g, err);
  if (rc) return rc;
  sym_arena *a = ir_graph_arena(*g);
  const sym_expr *shape[2] = {size_expr(a, z->rows, ROWS), size_expr(a, z->n, z->n_value)};
  const sym_expr *strides[2] = {size_expr(a, z->s0, 2 * z->n_value),
                                which == STRIDED ? size_expr(a, z->s1, 2) : sym_expr_const(a, 1)};
  const ir_node *out;
  if (which == STRIDED || which == STRIDED_ROWS) {
    const ir_node *x = ir_input_view(*g, "x", UOPC_F32, 2, shape, strides, NULL);
    const ir_node *y = ir_input(*g, "y", UOPC_F32, 2, shape);
    out = ir_binary(*g, IR_ADD, ir_binary(*g, IR_MUL, x, y), ir_const(*g, 1.0, UOPC_F32));
  } else {
    const ir_node *x = ir_input(*g, "x", UOPC_F32, 2, shape);
    out = ir_reduce(*g, IR_SUM, x, which == SUM_ROWS ? 2u : 1u, 0);
  }
  if (ir_graph_error(*g)->code) { *err = *ir_graph_error(*g); return err->code; }
  return exec_new(e, *g, &out, 1, entry, NULL, err);
}

typedef struct call { exec *e; uopc_tensor *out; const uopc_tensor *in[2]; int n_in; } call;

static double time_call(call *c, uopc_error *err) {
  int64_t calls = 1;
  double best = 1e300;
  for (double t = 0; t < 2e7; calls *= 2) {
    double t0 = bench_now_ns();
    for (int64_t k = 0; k < calls; k++)
      if (exec_run(c->e, &c->out, 1, c->in, c->n_in, err)) return -1;
    t = bench_now_ns() - t0;
  }
  for (int r = 0; r < REPS; r++) {
    double t0 = bench_now_ns();
    for (int64_t k = 0; k < calls; k++) exec_run(c->e, &c->out, 1, c->in, c->n_in, err);
    double per = (bench_now_ns() - t0) / (double)calls;
    if (per < best) best = per;
  }
  return best;
}

/* The tensors of one case at length n, over the shared buffers. */
static int tensors(int which, int64_t n, float **bufs, uopc_tensor *t, uopc_error *err) {
  int64_t shape[2] = {ROWS, n}, out_shape[1] = {which == SUM_COLS ? n : ROWS};
  int rc = uopc_tensor_wrap(&t[0], bufs[0], UOPC_F32, 2, shape, (int64_t[]){2 * n, which == STRIDED ? 2 : 1}, err);
  if (!rc && which >= SUM_ROWS) rc = uopc_tensor_wrap(&t[0], bufs[0], UOPC_F32, 2, shape, (int64_t[]){n, 1}, err);
  if (!rc) rc = uopc_tensor_wrap(&t[1], bufs[1], UOPC_F32, 2, shape, (int64_t[]){n, 1}, err);
  if (!rc && which < SUM_ROWS) rc = uopc_tensor_wrap(&t[2], bufs[2], UOPC_F32, 2, shape, (int64_t[]){n, 1}, err);
  else if (!rc) rc = uopc_tensor_wrap(&t[2], bufs[2], UOPC_F32, 1, out_shape, (int64_t[]){1}, err);
  return rc;
}

static int bench_case(int which, exec *dynamic, int64_t n, float **bufs, uopc_error *err) {
  char entry[64];
  snprintf(entry, sizeof entry, "bench_%s_fixed_%lld", ENTRY_NAMES[which], (long long)n);
  ir_graph *g = NULL;
  exec *fixed = NULL;
  uopc_tensor t[3] = {0};
  sizes z = {.n_value = n};
  int rc = build(which, &z, entry, &g, &fixed, err);
  if (!rc) rc = tensors(which, n, bufs, t, err);
  double ns[2] = {0};
  exec *runs[2] = {dynamic, fixed};
  for (int k = 0; k < 2 && !rc; k++) {
    call c = {runs[k], &t[2], {&t[0], &t[1]}, which < SUM_ROWS ? 2 : 1};
    if ((ns[k] = time_call(&c, err)) < 0) rc = err->code;
    else printf("bench core %s-%s n=%lld ns=%.0f\n", CASE_NAMES[which], k ? "fixed" : "dynamic", (long long)n,
                ns[k]);
  }
  if (!rc) printf("ratio core %s n=%lld dynamic/fixed=%.3f\n", CASE_NAMES[which], (long long)n, ns[0] / ns[1]);
  for (int k = 0; k < 3; k++) uopc_tensor_release(&t[k]);
  exec_free(fixed);
  ir_graph_free(g);
  return rc;
}

static int run(float **bufs, uopc_error *err) {
  sym_dim rows, n, s0, s1;
  int rc = sym_dim_init(&rows, "rows", 1, ROWS, 1, err);
  if (!rc) rc = sym_dim_init(&n, "n", 1, LENGTHS[2], 1, err);
  if (!rc) rc = sym_dim_init(&s0, "sx0", 0, 2 * LENGTHS[2], 1, err);
  if (!rc) rc = sym_dim_init(&s1, "sx1", -4, 4, 1, err);
  sizes z = {&rows, &n, &s0, &s1, 0};
  for (int which = 0; which < N_CASES && !rc; which++) {
    ir_graph *g = NULL;
    exec *dynamic = NULL;
    char entry[64];
    snprintf(entry, sizeof entry, "bench_%s_dynamic", ENTRY_NAMES[which]);
    rc = build(which, &z, entry, &g, &dynamic, err);
    for (int k = 0; k < 3 && !rc; k++) rc = bench_case(which, dynamic, LENGTHS[k], bufs, err);
    exec_free(dynamic);
    ir_graph_free(g);
  }
  return rc;
}
int main(void) {
  uopc_error err = {0};
  size_t cap = (size_t)2 * ROWS * (size_t)LENGTHS[2];
  float *bufs[3];
  for (int k = 0; k < 3; k++) {
    if (!(bufs[k] = aligned_alloc(64, cap * sizeof(float)))) return 2;
    for (size_t i = 0; i < cap; i++) bufs[k][i] = (float)((i * 7 + (size_t)k) % 23) * 0.25f - 2.0f;
  }
  int rc = run(bufs, &err);
  for (int k = 0; k < 3; k++) free(bufs[k]);
  if (rc) fprintf(stderr, "bench core: %s\n", err.message);
  return rc ? 1 : 0;
}
