/* bench_23_3.c: the figures of lab 23.3 (mutation and views).
 *   in-place updates of 16M f32 through a versioned runner: a[:h] += a[h:]
 *   (n = 2h, proved disjoint: DIRECT, the kernel writes into a[:h]) and
 *   a[1:] = a[:-1] + 1 (OVERLAP: STAGED, a temporary, then a copy), each
 *   against memcpy of n elements, the machine's copy bandwidth;
 *   the disjointness guard alone (alias_guard_disjoint on two 1-D views), and
 *   a whole mv_run of a GUARDED store against a DIRECT one, at length 1;
 *   the halves run functionalized vs versioned, at 16M and at 4096.
 * Prints `bench 23.3 <case> n=<n> ns=<ns per call>` and `ratio 23.3 ...`
 * lines; every time is the median of REPS timings (CLOCK_MONOTONIC).
 * bench/report.py times NumPy's same statements in the same run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "bench.h"
#include "run.h"

enum { REPS = 15 };
#define BIG ((int64_t)1 << 24)

/* One program over one f32 storage `a`: n in [lo, BIG], or n = 2h with h in
 * [1, BIG / 2] when halves is set. */
typedef struct prog {
  mv_program *p;
  sym_dim n, h;
  const sym_expr *h_e;
  mv_view whole;
} prog;

static int prog_new(prog *g, int64_t lo, int halves, uopc_error *err) {
  memset(g, 0, sizeof *g);
  int a, rc = mv_program_new(&g->p, err);
  if (!rc) rc = sym_dim_init(&g->n, "n", lo, BIG, 1, err);
  if (!rc) rc = sym_dim_init(&g->h, "h", 1, BIG / 2, 1, err);
  if (rc) return rc;
  sym_arena *ar = mv_program_arena(g->p);
  g->h_e = sym_expr_dim(ar, &g->h);
  const sym_expr *n_e = halves ? sym_expr_mul(ar, sym_expr_const(ar, 2), g->h_e) : sym_expr_dim(ar, &g->n);
  rc = mv_storage_new(g->p, "a", UOPC_F32, 1, &n_e, &a, err);
  mv_view_whole(g->p, a, &g->whole);
  return rc;
}

/* a[:h] += a[h:] */
static int build_halves(prog *g, uopc_error *err) {
  mv_view dst, src;
  int rc = mv_slice_sym(g->p, &g->whole, 0, NULL, g->h_e, 1, &dst, err);
  if (!rc) rc = mv_slice_sym(g->p, &g->whole, 0, g->h_e, NULL, 1, &src, err);
  if (!rc && !mv_begin(g->p, err)) rc = err->code;
  return rc ? rc : mv_add_(g->p, &dst, mv_load(g->p, &src), err);
}

/* a[d0:d1] = a[s0:s1] + 1 */
static int build_shift(prog *g, int64_t d0, int64_t d1, int64_t s0, int64_t s1, uopc_error *err) {
  mv_view dst, src;
  int rc = mv_slice(g->p, &g->whole, 0, d0, d1, 1, &dst, err);
  if (!rc) rc = mv_slice(g->p, &g->whole, 0, s0, s1, 1, &src, err);
  ir_graph *ir = rc ? NULL : mv_begin(g->p, err);
  if (!ir) return rc ? rc : err->code;
  return mv_store(g->p, &dst, ir_binary(ir, IR_ADD, mv_load(g->p, &src), ir_const(ir, 1, UOPC_F32)), err);
}

/* Times m jobs, each a runner run on a (NULL: memcpy of a into copy), in
 * rounds: one to warm up (pages, caches), then REPS in which each job runs
 * `calls` times in turn, so that the other agents' load hits every job
 * alike. ns[j]: job j's median time per call. */
static int time_jobs(mv_runner *const *jobs, int m, uopc_tensor *a, float *copy, int64_t calls, double *ns,
                     uopc_error *err) {
  double t[4][REPS];
  uopc_tensor *args[1] = {a};
  size_t bytes = (size_t)uopc_tensor_numel(a) * sizeof *copy;
  for (int k = -1; k < REPS; k++)
    for (int j = 0; j < m; j++) {
      double t0 = bench_now_ns();
      for (int64_t c = 0; c < calls; c++) {
        if (!jobs[j]) memcpy(copy, uopc_tensor_data(a), bytes);
        else if (mv_run(jobs[j], args, 1, NULL, err)) return err->code;
      }
      if (k >= 0) t[j][k] = (bench_now_ns() - t0) / (double)calls;
    }
  for (int j = 0; j < m; j++) ns[j] = bench_median(t[j], REPS);
  return UOPC_OK;
}

static int tensor_of(uopc_tensor *a, int64_t n, uopc_error *err) {
  int rc = uopc_tensor_empty(a, UOPC_F32, 1, &n, err);
  float *x = rc ? NULL : uopc_tensor_data(a);
  for (int64_t i = 0; x && i < n; i++) x[i] = (float)((i * 7) % 23) * 0.25f - 2.0f;
  return rc;
}

static const char *plan_name(mv_store_plan p) {
  return p == MV_STORE_DIRECT ? "direct" : p == MV_STORE_GUARDED ? "guarded" : "staged";
}

static void print_case(const char *name, int64_t n, double ns, double bytes, double memcpy_gbs) {
  double gbs = bytes / ns;
  printf("bench 23.3 %s n=%lld ns=%.0f (%.1f GB/s)\n", name, (long long)n, ns, gbs);
  printf("ratio 23.3 %s n=%lld bandwidth/memcpy=%.2f time/memcpy=%.2f\n", name, (long long)n, gbs / memcpy_gbs,
         ns / (8.0 * (double)n / memcpy_gbs));
}

/* Bytes counted (read + written, as the other benches count them): the
 * halves read 2h and write h elements, 6 bytes an element of n; a staged
 * store and a functional run each write a temporary of the value (n) and
 * copy it into a: 16 bytes an element; memcpy of n elements, 8. */
static int bench_big(uopc_error *err) {
  prog halves = {0}, shift = {0};
  mv_runner *direct = NULL, *staged = NULL, *functional = NULL;
  uopc_tensor a = {0};
  int rc = prog_new(&halves, 1, 1, err);
  if (!rc) rc = build_halves(&halves, err);
  if (!rc) rc = prog_new(&shift, 3, 0, err);   /* n >= 3: a[1:] and a[:-1] always overlap */
  if (!rc) rc = build_shift(&shift, 1, UOPC_SLICE_NONE, 0, -1, err);
  if (!rc) rc = mv_runner_new(&direct, halves.p, MV_VERSIONED, NULL, err);
  if (!rc) rc = mv_runner_new(&functional, halves.p, MV_FUNCTIONAL, NULL, err);
  if (!rc) rc = mv_runner_new(&staged, shift.p, MV_VERSIONED, NULL, err);
  if (!rc) rc = tensor_of(&a, BIG, err);
  float *copy = rc ? NULL : aligned_alloc(64, (size_t)BIG * sizeof(float));
  if (!rc && !copy) rc = UOPC_FAIL(err, UOPC_E_NOMEM, "bench: no memory for the memcpy target");
  mv_runner *jobs[4] = {NULL, direct, staged, functional};
  double m[4];
  if (!rc) rc = time_jobs(jobs, 4, &a, copy, 1, m, err);
  double mc = m[0], d = m[1], s = m[2], f = m[3];
  if (!rc) {
    double mc_gbs = 8.0 * BIG / mc;
    printf("bench 23.3 memcpy n=%lld ns=%.0f (%.1f GB/s)\n", (long long)BIG, mc, mc_gbs);
    printf("note: 23.3 plans: a[:h] += a[h:] %s, a[1:] = a[:-1] + 1 %s\n", plan_name(mv_runner_store_plan(direct, 0)),
           plan_name(mv_runner_store_plan(staged, 0)));
    print_case("halves-direct", BIG, d, 6.0 * BIG, mc_gbs);
    print_case("shift-staged", BIG, s, 16.0 * BIG, mc_gbs);
    print_case("halves-functional", BIG, f, 16.0 * BIG, mc_gbs);
    printf("ratio 23.3 halves n=%lld functional/versioned=%.2f\n", (long long)BIG, f / d);
  }
  free(copy);
  uopc_tensor_release(&a);
  mv_runner_free(direct), mv_runner_free(staged), mv_runner_free(functional);
  mv_program_free(halves.p), mv_program_free(shift.p);
  return rc;
}

/* The halves at 4096, where the calls' fixed costs show. */
static int bench_small_halves(uopc_error *err) {
  enum { N = 4096, CALLS = 2000 };
  prog g;
  mv_runner *r[2] = {NULL, NULL};
  uopc_tensor a = {0};
  double t[2] = {-1, -1};
  int rc = prog_new(&g, 1, 1, err);
  if (!rc) rc = build_halves(&g, err);
  for (int m = 0; m < 2 && !rc; m++) rc = mv_runner_new(&r[m], g.p, (mv_mode)m, NULL, err);
  if (!rc) rc = tensor_of(&a, N, err);
  if (!rc) rc = time_jobs(r, 2, &a, NULL, CALLS, t, err);
  if (!rc) {
    printf("bench 23.3 halves-direct n=%d ns=%.0f\n", N, t[0]);
    printf("bench 23.3 halves-functional n=%d ns=%.0f\n", N, t[1]);
    printf("ratio 23.3 halves n=%d functional/versioned=%.2f\n", N, t[1] / t[0]);
  }
  uopc_tensor_release(&a);
  mv_runner_free(r[0]), mv_runner_free(r[1]);
  mv_program_free(g.p);
  return rc;
}

/* alias_guard_disjoint on a[0:8] and a[8:16] (and on a[1:16], a[0:15]). */
static int bench_guard_alone(uopc_error *err) {
  enum { CALLS = 200000 };
  int64_t n = 16;
  uopc_tensor a = {0}, v[4] = {{0}};
  int rc = uopc_tensor_empty(&a, UOPC_F32, 1, &n, err);
  static const int64_t bounds[4][2] = {{0, 8}, {8, 16}, {1, 16}, {0, 15}};
  for (int k = 0; k < 4 && !rc; k++) rc = uopc_tensor_slice(&v[k], &a, 0, bounds[k][0], bounds[k][1], 1, err);
  double t[2][REPS];
  int disjoint[2] = {0, 0};
  for (int k = -1; k < REPS && !rc; k++)
    for (int pair = 0; pair < 2 && !rc; pair++) {
      double t0 = bench_now_ns();
      for (int c = 0; c < CALLS && !rc; c++)
        rc = alias_guard_disjoint(&v[2 * pair], &v[2 * pair + 1], &disjoint[pair], err);
      if (k >= 0) t[pair][k] = (bench_now_ns() - t0) / CALLS;
    }
  if (!rc && (!disjoint[0] || disjoint[1]))
    rc = UOPC_FAIL(err, UOPC_E_INVALID, "bench: the guard's answers are not disjoint, overlap");
  if (!rc) {
    printf("bench 23.3 guard-disjoint n=1 ns=%.1f\n", bench_median(t[0], REPS));
    printf("bench 23.3 guard-overlap n=1 ns=%.1f\n", bench_median(t[1], REPS));
  }
  for (int k = 0; k < 4; k++) uopc_tensor_release(&v[k]);
  uopc_tensor_release(&a);
  return rc;
}

/* A whole mv_run at n = 2, writing one element: a[1:] = a[:-1] + 1 over
 * n >= 2 (UNKNOWN: GUARDED; the guard finds a[1:2], a[0:1] disjoint and the
 * store is direct) against a[1:2] = a[0:1] + 1 (proved disjoint: DIRECT). */
static int bench_guarded_run(uopc_error *err) {
  enum { CALLS = 20000 };
  prog g[2] = {{0}, {0}};
  mv_runner *r[2] = {NULL, NULL};
  uopc_tensor a = {0};
  double t[2] = {-1, -1};
  int rc = prog_new(&g[0], 2, 0, err);
  if (!rc) rc = build_shift(&g[0], 1, UOPC_SLICE_NONE, 0, -1, err);
  if (!rc) rc = prog_new(&g[1], 2, 0, err);
  if (!rc) rc = build_shift(&g[1], 1, 2, 0, 1, err);
  for (int k = 0; k < 2 && !rc; k++) rc = mv_runner_new(&r[k], g[k].p, MV_VERSIONED, NULL, err);
  if (!rc) rc = tensor_of(&a, 2, err);
  int64_t guards = uopc_counter_get(MV_C_GUARDS), overlap = uopc_counter_get(MV_C_GUARD_OVERLAP);
  if (!rc) rc = time_jobs(r, 2, &a, NULL, CALLS, t, err);
  if (!rc && (uopc_counter_get(MV_C_GUARDS) == guards || uopc_counter_get(MV_C_GUARD_OVERLAP) != overlap))
    rc = UOPC_FAIL(err, UOPC_E_INVALID, "bench: the guarded store did not run its guard, or found overlap");
  if (!rc) {
    printf("note: 23.3 plans at n=2: %s vs %s\n", plan_name(mv_runner_store_plan(r[0], 0)),
           plan_name(mv_runner_store_plan(r[1], 0)));
    printf("bench 23.3 run-guarded n=2 ns=%.1f\n", t[0]);
    printf("bench 23.3 run-direct n=2 ns=%.1f\n", t[1]);
    printf("ratio 23.3 guarded store overhead=%.1f ns per call (guarded/direct=%.2f)\n", t[0] - t[1], t[0] / t[1]);
  }
  uopc_tensor_release(&a);
  for (int k = 0; k < 2; k++) {
    mv_runner_free(r[k]);
    mv_program_free(g[k].p);
  }
  return rc;
}

int main(void) {
  uopc_error err = {0};
  int rc = bench_big(&err);
  if (!rc) rc = bench_small_halves(&err);
  if (!rc) rc = bench_guard_alone(&err);
  if (!rc) rc = bench_guarded_run(&err);
  if (rc) fprintf(stderr, "bench 23.3: %s: %s\n", uopc_error_name(rc), err.message);
  return rc ? 1 : 0;
}
