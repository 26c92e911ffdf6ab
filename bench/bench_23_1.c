/* bench_23_1.c: the price of dynamism (lab 23.1).
 * For an elementwise chain out = (a + b)*c - a and for the row sum of a
 * (8, N) tensor: the plan's kernel (length a runtime argument), the same
 * graph lowered for one fixed length (a constant bound), and a hand-written
 * C loop. The hand row sum keeps one accumulator, left to right, which gcc
 * may not vectorise: it shows what the kernels' lane order (chapter 23.1,
 * "The order of a sum") saves. Prints `bench 23.1 <case> n=<n> ns=<time per call>` and
 * `ratio 23.1 <case> n=<n> dynamic/fixed=<x>`; the best of several
 * repetitions (CLOCK_MONOTONIC). Kernels compile with the runtime's default
 * flags (-O3); the hand loops ask for -O3 too, so all three are compared at
 * the same optimisation level. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "bench.h"
#include "plan.h"

enum { ROWS = 8, REPS = 7 };
static const int64_t LENGTHS[] = {4096, 65536, 1 << 20};

__attribute__((optimize("O3"), noinline))
static void hand_chain(float *restrict out, const float *restrict a, const float *restrict b,
                       const float *restrict c, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = (a[i] + b[i]) * c[i] - a[i];
}

__attribute__((optimize("O3"), noinline))
static void hand_rowsum(float *restrict out, const float *restrict x, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; r++) {
    float acc = 0.0f;
    for (int64_t j = 0; j < n; j++) acc += x[r * n + j];
    out[r] = acc;
  }
}

typedef struct job {
  plan *p;                      /* NULL: the hand loop */
  int rowsum;
  sym_binding bind;
  float *out, *in[3];
  int64_t n, cap;
} job;

static int run_once(job *j, uopc_error *err) {
  if (!j->p) {
    if (j->rowsum) hand_rowsum(j->out, j->in[0], ROWS, j->n);
    else hand_chain(j->out, j->in[0], j->in[1], j->in[2], j->n);
    return UOPC_OK;
  }
  plan_buffer in[3] = {{j->in[0], j->cap}, {j->in[1], j->cap}, {j->in[2], j->cap}};
  return plan_launch(j->p, &j->bind, (plan_buffer){j->out, j->cap}, in, j->rowsum ? 1 : 3, err);
}

/* The best time per call over REPS repetitions of enough calls for ~20 ms. */
static double time_job(job *j, uopc_error *err) {
  int64_t calls = 1;
  double best = 1e300;
  for (double t = 0; t < 2e7; calls *= 2) {
    double t0 = bench_now_ns();
    for (int64_t k = 0; k < calls; k++) if (run_once(j, err)) return -1;
    t = bench_now_ns() - t0;
  }
  for (int r = 0; r < REPS; r++) {
    double t0 = bench_now_ns();
    for (int64_t k = 0; k < calls; k++) run_once(j, err);
    double per = (bench_now_ns() - t0) / (double)calls;
    if (per < best) best = per;
  }
  return best;
}

/* The chain or the row sum over shape extents (dims or constants). */
static int build(sym_arena *arena, int rowsum, const sym_expr *rows, const sym_expr *n,
                 const char *name, plan **out, uopc_error *err) {
  kernel_graph g;
  kernel_graph_init(&g, arena);
  const kernel_node *a, *b, *c, *s, *m, *r;
  if (rowsum) {
    const sym_expr *shape[2] = {rows, n};
    int rc = kernel_input(&g, "x", UOPC_F32, 2, shape, &a, err);
    if (!rc) rc = kernel_sum(&g, a, &r, err);
    return rc ? rc : plan_new(out, &g, r, name, NULL, err);
  }
  const sym_expr *shape[1] = {n};
  int rc = kernel_input(&g, "a", UOPC_F32, 1, shape, &a, err);
  if (!rc) rc = kernel_input(&g, "b", UOPC_F32, 1, shape, &b, err);
  if (!rc) rc = kernel_input(&g, "c", UOPC_F32, 1, shape, &c, err);
  if (!rc) rc = kernel_binary(&g, KERNEL_ADD, a, b, &s, err);
  if (!rc) rc = kernel_binary(&g, KERNEL_MUL, s, c, &m, err);
  if (!rc) rc = kernel_binary(&g, KERNEL_SUB, m, a, &r, err);
  return rc ? rc : plan_new(out, &g, r, name, NULL, err);
}

static int bench_case(sym_arena *arena, int rowsum, plan *dynamic, const sym_dim *nd,
                      const sym_dim *bd, int64_t n, float **bufs, uopc_error *err) {
  const char *what = rowsum ? "rowsum" : "chain";
  char name[64];
  snprintf(name, sizeof name, "%s_f32_%s%lld", what, rowsum ? "8x" : "n", (long long)n);
  plan *fixed = NULL;
  int rc = build(arena, rowsum, sym_expr_const(arena, ROWS), sym_expr_const(arena, n), name, &fixed, err);
  if (rc) return rc;
  job j = {.rowsum = rowsum, .out = bufs[3], .in = {bufs[0], bufs[1], bufs[2]}, .n = n,
           .cap = ROWS * LENGTHS[2]};
  sym_binding_init(&j.bind);
  rc = sym_dim_bind(&j.bind, nd, n, err);
  if (!rc && rowsum) rc = sym_dim_bind(&j.bind, bd, ROWS, err);
  double t[3] = {0};
  plan *plans[3] = {dynamic, fixed, NULL};
  const char *labels[3] = {"dynamic", "fixed", "hand"};
  for (int k = 0; k < 3 && !rc; k++) {
    j.p = plans[k];
    if ((t[k] = time_job(&j, err)) < 0) rc = err->code;
    else printf("bench 23.1 %s-%s n=%lld ns=%.0f\n", what, labels[k], (long long)n, t[k]);
  }
  if (!rc) printf("ratio 23.1 %s n=%lld dynamic/fixed=%.3f\n", what, (long long)n, t[0] / t[1]);
  plan_free(fixed);
  return rc;
}

static int run(sym_arena *arena, float **bufs, uopc_error *err) {
  sym_dim n, b;
  plan *chain = NULL, *rowsum = NULL;
  int rc = sym_dim_init(&n, "n", 1, LENGTHS[2], 1, err);
  if (!rc) rc = sym_dim_init(&b, "b", 1, ROWS, 1, err);
  const sym_expr *en = sym_expr_dim(arena, &n), *eb = sym_expr_dim(arena, &b);
  if (!rc) rc = build(arena, 0, eb, en, "chain_f32_n", &chain, err);
  if (!rc) rc = build(arena, 1, eb, en, "rowsum_f32_bn", &rowsum, err);
  for (int k = 0; k < 3 && !rc; k++) rc = bench_case(arena, 0, chain, &n, &b, LENGTHS[k], bufs, err);
  for (int k = 0; k < 3 && !rc; k++) rc = bench_case(arena, 1, rowsum, &n, &b, LENGTHS[k], bufs, err);
  plan_free(chain);
  plan_free(rowsum);
  return rc;
}

int main(void) {
  uopc_error err = {0};
  sym_arena *arena = NULL;
  size_t cap = (size_t)ROWS * (size_t)LENGTHS[2];
  float *bufs[4];
  for (int k = 0; k < 4; k++) {
    if (!(bufs[k] = aligned_alloc(64, cap * sizeof(float)))) return 2;
    for (size_t i = 0; i < cap; i++) bufs[k][i] = (float)((i * 7 + (size_t)k) % 23) * 0.25f - 2.0f;
  }
  int rc = sym_arena_new(&arena, &err);
  if (!rc) rc = run(arena, bufs, &err);
  sym_arena_free(arena);
  for (int k = 0; k < 4; k++) free(bufs[k]);
  if (rc) fprintf(stderr, "bench 23.1: %s\n", err.message);
  return rc ? 1 : 0;
}
