/* bench_tj_latency.c: call latency against length, a dynamic compiler against
 * a static one (section 23.7, "Latency against length"; issue 31). The model
 * is the 6-op chain ((a*b + a) * 0.5 - b) ** 2 + 1 over f32 vectors of
 * length n = 1, 2, 4, ..., 4096, called through tensorjit twice:
 *   dynamic (the default): one artifact serves every n >= 2 (n = 1 is
 *     specialised, section 23.7), so a new length costs a warm call;
 *   static (dynamic = TJ_OFF): an artifact per concrete shape, so the first
 *     call at each new length traces and compiles one (counted here through
 *     the runtime's "compiler invocations") before it runs.
 * Each function compiles into a cache directory of its own, made empty here
 * and removed at the end, so a first call is a real compile, never a hit of
 * an earlier run's (or of the other function's) entry. Prints, per n:
 *   bench tj_latency chain6 n=<n> ns=<warm call, dynamic> rejected=<r>
 *   bench tj_latency chain6-static n=<n> ns=<warm call, static> rejected=<r>
 *   bench tj_latency chain6-first n=<n> ns=<first call, dynamic> compiles=<k>
 *   bench tj_latency chain6-static-first n=<n> ns=<first call, static> compiles=<k>
 * (r: the artifacts whose guards a warm call checks and fails before the one
 * that serves it, from tj_stats: the selection checks them in order), then
 * `count tj_latency ...` lines with each function's artifacts and
 * compiles. A warm call is the best of REPS batches; a first call happens
 * once per length and is one sample. bench/report.py adds NumPy's time for
 * the same expression (case chain6) and draws the figure (bench/tj_plot.py). */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include "bench.h"
#include "tensorjit.h"
#include "uopc/counters.h"

enum { REPS = 7, LENGTHS = 13, WORK = 1 << 18 };   /* n = 2^0 .. 2^12; about WORK elements a batch */

/* ((a*b + a) * 0.5 - b) ** 2 + 1, as bench_fuse.c builds it in the core. */
static int chain6(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {
  (void)user;
  tp_tensor *a = in[0].t, *b = in[1].t;
  tp_tensor *t = tp_sub(c, tp_mul(c, tp_add(c, tp_mul(c, a, b), a), tp_scalar(c, 0.5)), b);
  out[0] = tp_add(c, tp_pow(c, t, tp_scalar(c, 2)), tp_scalar(c, 1));
  return tp_status(c);
}

typedef struct series {       /* one function's numbers, by length */
  double warm[LENGTHS], first[LENGTHS];
  int64_t compiles[LENGTHS], rejected[LENGTHS];   /* rejected: artifacts whose guards failed, per warm call */
  tj_counts counts;
} series;

static int inputs(uopc_tensor *ab, int64_t n, uopc_error *err) {
  if (uopc_tensor_empty(&ab[0], UOPC_F32, 1, &n, err)) return err->code;
  if (uopc_tensor_empty(&ab[1], UOPC_F32, 1, &n, err)) return uopc_tensor_release(&ab[0]), err->code;
  float *a = uopc_tensor_data(&ab[0]), *b = uopc_tensor_data(&ab[1]);
  for (int64_t i = 0; i < n; i++) a[i] = (float)(i % 7) * 0.25f, b[i] = 1.0f - (float)(i % 5) * 0.125f;
  return UOPC_OK;
}

static int call_once(tj_function *f, tj_arg *args, uopc_error *err) {
  uopc_tensor out[1];
  int rc = tj_call(f, args, 2, out, err);
  if (!rc) uopc_tensor_release(&out[0]);
  return rc;
}

/* The first call at this length (timed once, its compiles counted), then the warm call. */
static int measure(tj_function *f, int64_t n, series *s, int k, uopc_error *err) {
  uopc_tensor ab[2];
  if (inputs(ab, n, err)) return err->code;
  tj_arg args[2] = {tj_tensor(&ab[0]), tj_tensor(&ab[1])};
  int64_t before = uopc_counter_get(UOPC_C_COMPILER_INVOCATIONS);
  double t0 = bench_now_ns();
  int rc = call_once(f, args, err);
  s->first[k] = bench_now_ns() - t0;
  s->compiles[k] = uopc_counter_get(UOPC_C_COMPILER_INVOCATIONS) - before;
  int calls = n < WORK / 100 ? (int)(WORK / n) : 100;   /* short calls batched, so the clock's step is small */
  int64_t failures = tj_stats(f).guard_failures;
  for (int r = 0; r < REPS && !rc; r++) {
    t0 = bench_now_ns();
    for (int c = 0; c < calls && !rc; c++) rc = call_once(f, args, err);
    double ns = (bench_now_ns() - t0) / calls;
    if (r == 0 || ns < s->warm[k]) s->warm[k] = ns;
  }
  s->rejected[k] = (tj_stats(f).guard_failures - failures) / ((int64_t)REPS * calls);
  uopc_tensor_release(&ab[0]);
  uopc_tensor_release(&ab[1]);
  return rc;
}

static int remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw) {
  (void)st, (void)type, (void)ftw;
  return remove(path);
}

/* Every length through one function, compiled into a new, empty cache directory. */
static int run_series(tj_switch dynamic, series *s, uopc_error *err) {
  char dir[] = "/tmp/uopc-bench-tj-latency-XXXXXX";
  if (!mkdtemp(dir)) return UOPC_FAIL(err, UOPC_E_IO, "bench tj_latency: mkdtemp of %s failed", dir);
  uopc_program_options program = {.cache_dir = dir};
  /* TJ_MAX_VARIANTS (32) >= LENGTHS: the static function keeps an artifact for every length */
  tj_options o = {.name = "chain6", .dynamic = dynamic, .max_variants = TJ_MAX_VARIANTS, .program = &program};
  tj_function *f = NULL;
  int rc = tj_compile(&f, chain6, NULL, &o, err);
  for (int k = 0; k < LENGTHS && !rc; k++) rc = measure(f, INT64_C(1) << k, s, k, err);
  if (!rc) s->counts = tj_stats(f);
  tj_free(f);
  nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);   /* the scratch cache: this run's own files */
  return rc;
}

static int64_t total(const int64_t *v) {
  int64_t sum = 0;
  for (int k = 0; k < LENGTHS; k++) sum += v[k];
  return sum;
}

static void print(const series *dyn, const series *fixed) {
  for (int k = 0; k < LENGTHS; k++) {
    long long n = 1LL << k;
    printf("bench tj_latency chain6 n=%lld ns=%.0f rejected=%lld\n", n, dyn->warm[k], (long long)dyn->rejected[k]);
    printf("bench tj_latency chain6-static n=%lld ns=%.0f rejected=%lld\n", n, fixed->warm[k],
           (long long)fixed->rejected[k]);
    printf("bench tj_latency chain6-first n=%lld ns=%.0f compiles=%lld\n", n, dyn->first[k],
           (long long)dyn->compiles[k]);
    printf("bench tj_latency chain6-static-first n=%lld ns=%.0f compiles=%lld\n", n, fixed->first[k],
           (long long)fixed->compiles[k]);
  }
  printf("count tj_latency lengths=1..%d dynamic: artifacts=%d compiles=%lld\n", 1 << (LENGTHS - 1),
         dyn->counts.artifacts, (long long)total(dyn->compiles));
  printf("count tj_latency lengths=1..%d static: artifacts=%d compiles=%lld\n", 1 << (LENGTHS - 1),
         fixed->counts.artifacts, (long long)total(fixed->compiles));
}

int main(void) {
  uopc_error err = {0};
  series dyn = {0}, fixed = {0};
  if (run_series(TJ_ON, &dyn, &err) || run_series(TJ_OFF, &fixed, &err)) {
    fprintf(stderr, "bench tj_latency: %s\n", err.message);
    return 1;
  }
  print(&dyn, &fixed);
  return 0;
}
