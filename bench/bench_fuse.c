/* bench_fuse.c: what fusion and planned temporaries buy (issue #27), through
 * the compiler core with LOWER_FUSE and tensorjit's fusion rule (TJ_FUSE_RULE,
 * lab 23.7's tj_fuse_rule), every graph compiled once with symbolic
 * extents. Prints, each the best of REPS repetitions:
 *   bench fuse chain6-<dynamic|fixed> n=<N> ns=<per call>   ((a*b + a)*0.5 - b)**2 + 1, f32
 *   ratio fuse chain6 n=<N> dynamic/fixed=<x>                 the price of dynamism
 *   bench fuse triad n=<N> ns=..., ratio fuse chain6 n=<N> of-triad=<x>
 *                                                             the same bytes (2 reads, 1 write)
 *                                                             moved by a plain C loop, this run
 *   temps fuse chain6 n=<N> peak_bytes=<B>                    the program's peak temporaries
 *   bench fuse softmax-<R>x<C> n=<R*C> ns=..., bench fuse layernorm-<R>x<C> ...
 *   bench fuse softmax_vexp-<R>x<C> ..., bench fuse softmax_vexp_native-<R>x<C> ...,
 *   ratio fuse softmax-<R>x<C> vec-exp/expf=<x> native/expf=<x>
 *                                                             softmax with LOWER_VEC_EXP (and
 *                                                             -march=native), against expf
 *   threshold fuse chain6 n=<N> serial_ns=... threaded_ns=... threaded/serial=<x>
 *                                                             LOWER_PARALLEL_WORK, measured: the
 *                                                             chain's threaded copy forced on
 *   bench fuse <chain6|softmax|layernorm>_threads2[-<R>x<C>] n=... ns=...,
 *   scaling fuse <case> threads=1 ns=... threads=2 ns=... speedup=<x>
 *                                                             with LOWER_PARALLEL, one thread and two
 *   compile fuse chain50 ms=..., compile fuse 5-chains10 ms=..., ratio fuse compile
 * bench/report.py adds NumPy's time (and its peak temporaries) for the same cases. */
#include <dlfcn.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bench.h"
#include "exec.h"
#include "tj_internal.h"

enum { REPS = 7 };
static const int64_t LENGTHS[] = {4096, 65536, 1 << 20, 1 << 24};
static const int64_t SHAPES[][2] = {{64, 64}, {256, 256}, {1024, 1024}, {4096, 512}};
#define N_LENGTHS ((int)(sizeof LENGTHS / sizeof LENGTHS[0]))
#define N_SHAPES ((int)(sizeof SHAPES / sizeof SHAPES[0]))

typedef struct run { exec *e; uopc_tensor *out; const uopc_tensor *in[2]; int n_in; } run;

static double best_ns(run *r, uopc_error *err) {
  int64_t calls = 1;
  for (double t = 0; t < 2e7; calls *= 2) {   /* a batch of about 20 ms */
    double t0 = bench_now_ns();
    for (int64_t k = 0; k < calls; k++)
      if (exec_run(r->e, &r->out, 1, r->in, r->n_in, err)) return -1;
    t = bench_now_ns() - t0;
  }
  double best = 1e300;
  for (int rep = 0; rep < REPS; rep++) {
    double t0 = bench_now_ns();
    for (int64_t k = 0; k < calls; k++) exec_run(r->e, &r->out, 1, r->in, r->n_in, err);
    double per = (bench_now_ns() - t0) / (double)calls;
    if (per < best) best = per;
  }
  return best;
}

/* The same bytes as the chain, moved by the plainest loop: the machine's bandwidth in this run.
 * O3 here because gcc 12 at -O2 leaves a loop with a runtime trip count scalar. */
__attribute__((optimize("O3"), noinline)) static void triad(float *restrict out, const float *restrict a,
                                                          const float *restrict b, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = a[i] + 0.5f * b[i];
}

static double triad_ns(float *out, const float *a, const float *b, int64_t n) {
  double best = 1e300;
  triad(out, a, b, n);
  for (int rep = 0; rep < REPS; rep++) {
    double t0 = bench_now_ns();
    triad(out, a, b, n);
    double t = bench_now_ns() - t0;
    if (t < best) best = t;
  }
  return best;
}

/* ---- Graphs. */

static const sym_expr *extent(sym_arena *a, const char *name, int64_t value, int dynamic, uopc_error *err) {
  if (!dynamic) return sym_expr_const(a, value);
  sym_dim d;
  return sym_dim_init(&d, name, 1, INT64_C(1) << 26, 1, err) ? NULL : sym_expr_dim(a, &d);
}

static const ir_node *cst(ir_graph *g, double v) { return ir_const(g, v, UOPC_F32); }

/* ((a*b + a) * 0.5 - b) ** 2 + 1 */
static const ir_node *chain6(ir_graph *g, int64_t n, int dynamic, uopc_error *err) {
  const sym_expr *s = extent(ir_graph_arena(g), "n", n, dynamic, err);
  const ir_node *a = ir_input(g, "a", UOPC_F32, 1, &s), *b = ir_input(g, "b", UOPC_F32, 1, &s);
  const ir_node *t = ir_binary(g, IR_SUB, ir_binary(g, IR_MUL, ir_binary(g, IR_ADD, ir_binary(g, IR_MUL, a, b), a),
                                                    cst(g, 0.5)), b);
  return ir_binary(g, IR_ADD, ir_binary(g, IR_POW, t, cst(g, 2)), cst(g, 1));
}

/* exp(x - max(x)) / sum(exp(x - max(x))) along each row. */
static const ir_node *softmax(ir_graph *g, const ir_node *x) {
  const ir_node *e = ir_unary(g, IR_EXP, ir_binary(g, IR_SUB, x, ir_reduce(g, IR_MAX, x, 2u, 1)));
  return ir_binary(g, IR_DIV, e, ir_reduce(g, IR_SUM, e, 2u, 1));
}

/* (x - mean) / sqrt(mean((x - mean)^2) + 1e-5) along each row. */
static const ir_node *layernorm(ir_graph *g, const ir_node *x) {
  const ir_node *d = ir_binary(g, IR_SUB, x, ir_reduce(g, IR_MEAN, x, 2u, 1));
  const ir_node *var = ir_reduce(g, IR_MEAN, ir_binary(g, IR_MUL, d, d), 2u, 1);
  return ir_binary(g, IR_DIV, d, ir_unary(g, IR_SQRT, ir_binary(g, IR_ADD, var, cst(g, 1e-5))));
}

/* x plus and times constants, ops long, alternating. */
static const ir_node *long_chain(ir_graph *g, const ir_node *x, int ops) {
  for (int k = 0; k < ops; k++) x = ir_binary(g, k % 2 ? IR_MUL : IR_ADD, x, cst(g, k % 2 ? 0.999 : 0.001 * k));
  return x;
}

static int compile_flags(ir_graph *g, const ir_node *out, const char *entry, unsigned flags,
                         const uopc_program_options *o, exec **e, uopc_error *err) {
  if (ir_graph_error(g)->code) return (*err = *ir_graph_error(g), err->code);
  return exec_new_rule(e, g, &out, 1, entry, LOWER_FUSE | flags, &TJ_FUSE_RULE, o, err);
}

static int compile(ir_graph *g, const ir_node *out, const char *entry, const uopc_program_options *o, exec **e,
                   uopc_error *err) {
  return compile_flags(g, out, entry, 0, o, e, err);
}

/* ---- Cases. */

static int bench_chain6(float **bufs, uopc_error *err) {
  ir_graph *gd = NULL;
  exec *dynamic = NULL;
  int rc = ir_graph_new(&gd, err);
  const ir_node *od = rc ? NULL : chain6(gd, 0, 1, err);
  if (!rc) rc = compile(gd, od, "fuse_chain6_dynamic", NULL, &dynamic, err);
  for (int k = 0; k < N_LENGTHS && !rc; k++) {
    int64_t n = LENGTHS[k];
    char entry[64];
    ir_graph *gf = NULL;
    exec *fixed = NULL;
    uopc_tensor t[3] = {0};
    snprintf(entry, sizeof entry, "fuse_chain6_fixed_%lld", (long long)n);
    rc = ir_graph_new(&gf, err);
    if (!rc) rc = compile(gf, chain6(gf, n, 0, err), entry, NULL, &fixed, err);
    for (int j = 0; j < 3 && !rc; j++) rc = uopc_tensor_wrap(&t[j], bufs[j], UOPC_F32, 1, &n, (int64_t[]){1}, err);
    double ns[2] = {0};
    exec *runs[2] = {dynamic, fixed};
    uopc_counters_reset();
    for (int v = 0; v < 2 && !rc; v++) {
      run r = {runs[v], &t[2], {&t[0], &t[1]}, 2};
      if ((ns[v] = best_ns(&r, err)) < 0) rc = err->code;
      else printf("bench fuse chain6-%s n=%lld ns=%.0f\n", v ? "fixed" : "dynamic", (long long)n, ns[v]);
    }
    if (!rc) {
      printf("ratio fuse chain6 n=%lld dynamic/fixed=%.3f\n", (long long)n, ns[0] / ns[1]);
      printf("temps fuse chain6 n=%lld peak_bytes=%lld\n", (long long)n, (long long)uopc_counter_get(EXEC_C_PEAK_TEMP));
    }
    if (!rc && k == N_LENGTHS - 1) {
      double tr = triad_ns(bufs[2], bufs[0], bufs[1], n);
      printf("bench fuse triad n=%lld ns=%.0f GB/s=%.2f\n", (long long)n, tr, 12.0 * (double)n / tr);
      printf("ratio fuse chain6 n=%lld of-triad=%.3f GB/s=%.2f\n", (long long)n, tr / ns[0], 12.0 * (double)n / ns[0]);
    }
    for (int j = 0; j < 3; j++) uopc_tensor_release(&t[j]);
    exec_free(fixed);
    ir_graph_free(gf);
  }
  exec_free(dynamic);
  ir_graph_free(gd);
  return rc;
}

/* Softmax with libm's expf, with LOWER_VEC_EXP's exp_f32, and with exp_f32 compiled for this CPU
 * (-march=native: the vector width NumPy's exp has), timed one after the other at each shape (the
 * machine is shared: ratios of neighbours), then layer norm. */
static int bench_rows(float **bufs, uopc_error *err) {
  enum { KINDS = 4 };
  const char *names[KINDS] = {"softmax", "softmax_vexp", "softmax_vexp_native", "layernorm"};
  const uopc_program_options native = {.march_native = 1};
  ir_graph *g[KINDS] = {0};
  exec *e[KINDS] = {0};
  int rc = UOPC_OK;
  for (int which = 0; which < KINDS && !rc; which++) {
    char entry[64];
    snprintf(entry, sizeof entry, "fuse_%s_dynamic", names[which]);
    rc = ir_graph_new(&g[which], err);
    const sym_expr *shape[2] = {NULL, NULL};
    if (!rc) {
      shape[0] = extent(ir_graph_arena(g[which]), "rows", 0, 1, err);
      shape[1] = extent(ir_graph_arena(g[which]), "cols", 0, 1, err);
      const ir_node *x = ir_input(g[which], "x", UOPC_F32, 2, shape);
      rc = compile_flags(g[which], which == 3 ? layernorm(g[which], x) : softmax(g[which], x), entry,
                         which == 1 || which == 2 ? LOWER_VEC_EXP : 0, which == 2 ? &native : NULL, &e[which], err);
    }
  }
  for (int k = 0; k < N_SHAPES && !rc; k++) {
    int64_t rows = SHAPES[k][0], cols = SHAPES[k][1];
    uopc_tensor x = {0}, out = {0};
    double ns[KINDS] = {0};
    rc = uopc_tensor_wrap(&x, bufs[0], UOPC_F32, 2, SHAPES[k], (int64_t[]){cols, 1}, err);
    if (!rc) rc = uopc_tensor_wrap(&out, bufs[2], UOPC_F32, 2, SHAPES[k], (int64_t[]){cols, 1}, err);
    for (int which = 0; which < KINDS && !rc; which++) {
      run r = {e[which], &out, {&x}, 1};
      if ((ns[which] = best_ns(&r, err)) < 0) rc = err->code;
      else printf("bench fuse %s-%lldx%lld n=%lld ns=%.0f\n", names[which], (long long)rows, (long long)cols,
                  (long long)(rows * cols), ns[which]);
    }
    if (!rc)
      printf("ratio fuse softmax-%lldx%lld vec-exp/expf=%.3f native/expf=%.3f\n", (long long)rows, (long long)cols,
             ns[1] / ns[0], ns[2] / ns[0]);
    uopc_tensor_release(&x), uopc_tensor_release(&out);
  }
  for (int which = 0; which < KINDS; which++) {
    exec_free(e[which]);
    ir_graph_free(g[which]);
  }
  return rc;
}

/* ---- Two cores (LOWER_PARALLEL). */

/* The calling thread's OpenMP team size: libgomp comes with the runtime (the Makefile's
 * UOPC_LDLIBS), so its entry is found without linking it here. */
static int set_threads(int n, uopc_error *err) {
  void (*set)(int);
  *(void **)&set = dlsym(RTLD_DEFAULT, "omp_set_num_threads");
  if (!set) return UOPC_FAIL(err, UOPC_E_LOAD, "bench fuse: no omp_set_num_threads (is libgomp loaded?)");
  set(n);
  return UOPC_OK;
}

/* The threshold, measured: the threaded chain's own text with its `if` made always true, called
 * directly, against the serial program, at lengths around LOWER_PARALLEL_WORK. */
static int bench_threshold(float **bufs, exec *threaded, exec *serial, uopc_error *err) {
  char *text = strdup(exec_source(threaded)), *at, cond[32];
  snprintf(cond, sizeof cond, " >= %d)", LOWER_PARALLEL_WORK);
  if (!text || !(at = strstr(text, cond)))
    return free(text), UOPC_FAIL(err, UOPC_E_INVALID, "bench fuse: the threaded chain has no `if` on its work");
  memmove(at + 6, at + strlen(cond), strlen(at + strlen(cond)) + 1);
  memcpy(at, " >= 0)", 6);
  const lower_program *low = exec_lowered(threaded);
  uopc_program_options o = {.openmp = 1};
  uopc_program *always = NULL;
  int rc = uopc_program_new(&always, text, low->entry, low->signature, &o, err);
  free(text);
  for (int64_t n = 2048; n <= 262144 && !rc; n *= 2) {
    uopc_tensor t[3] = {0};
    for (int j = 0; j < 3 && !rc; j++) rc = uopc_tensor_wrap(&t[j], bufs[j], UOPC_F32, 1, &n, (int64_t[]){1}, err);
    run r = {serial, &t[2], {&t[0], &t[1]}, 2};
    double ns_serial = rc ? -1 : best_ns(&r, err), best = 1e300;
    int32_t n32 = (int32_t)n;
    int64_t n64 = n;
    void *args[4] = {&bufs[2], &bufs[0], &bufs[1], low->index.bits == 64 ? (void *)&n64 : (void *)&n32};
    for (int rep = 0; rep < REPS && !rc && ns_serial >= 0; rep++) {
      const int calls = 2000;
      double t0 = bench_now_ns();
      for (int k = 0; k < calls; k++) uopc_program_call(always, args);
      double per = (bench_now_ns() - t0) / calls;
      if (per < best) best = per;
    }
    if (ns_serial < 0) rc = err->code;
    else if (!rc)
      printf("threshold fuse chain6 n=%lld serial_ns=%.0f threaded_ns=%.0f threaded/serial=%.3f\n", (long long)n,
             ns_serial, best, best / ns_serial);
    for (int j = 0; j < 3; j++) uopc_tensor_release(&t[j]);
  }
  uopc_program_free(always);
  return rc;
}

/* The chain at the largest length and softmax and layer norm at each shape, compiled with
 * LOWER_PARALLEL, on one thread and on two: the scaling; the two-thread times go to report.py
 * beside NumPy's (one thread: NumPy's own). */
static int bench_threads(float **bufs, uopc_error *err) {
  enum { KINDS = 3 };
  const char *names[KINDS] = {"chain6", "softmax", "layernorm"};
  ir_graph *g[KINDS] = {0}, *gs = NULL;
  exec *e[KINDS] = {0}, *serial = NULL;
  int rc = UOPC_OK;
  for (int which = 0; which < KINDS && !rc; which++) {
    char entry[64];
    snprintf(entry, sizeof entry, "fuse_%s_threaded", names[which]);
    rc = ir_graph_new(&g[which], err);
    if (rc) break;
    const ir_node *out = NULL;
    if (which == 0) out = chain6(g[which], 0, 1, err);
    else {
      const sym_expr *shape[2] = {extent(ir_graph_arena(g[which]), "rows", 0, 1, err),
                                  extent(ir_graph_arena(g[which]), "cols", 0, 1, err)};
      const ir_node *x = ir_input(g[which], "x", UOPC_F32, 2, shape);
      out = which == 1 ? softmax(g[which], x) : layernorm(g[which], x);
    }
    rc = compile_flags(g[which], out, entry, LOWER_VEC_EXP | LOWER_PARALLEL, NULL, &e[which], err);
  }
  if (!rc) rc = ir_graph_new(&gs, err);
  if (!rc) rc = compile(gs, chain6(gs, 0, 1, err), "fuse_chain6_dynamic", NULL, &serial, err);
  if (!rc) rc = bench_threshold(bufs, e[0], serial, err);
  for (int k = -1; k < N_SHAPES && !rc; k++) {      /* k = -1: the chain */
    int64_t n = LENGTHS[N_LENGTHS - 1], rows = k < 0 ? 0 : SHAPES[k][0], cols = k < 0 ? 0 : SHAPES[k][1];
    uopc_tensor t[3] = {0};
    for (int j = 0; j < 3 && !rc; j++)
      rc = k < 0 ? uopc_tensor_wrap(&t[j], bufs[j], UOPC_F32, 1, &n, (int64_t[]){1}, err)
                 : uopc_tensor_wrap(&t[j], bufs[j], UOPC_F32, 2, SHAPES[k], (int64_t[]){cols, 1}, err);
    for (int which = k < 0 ? 0 : 1; which < (k < 0 ? 1 : KINDS) && !rc; which++) {
      char name[64];
      double ns[2] = {0};
      if (k < 0) snprintf(name, sizeof name, "%s", names[which]);
      else snprintf(name, sizeof name, "%s-%lldx%lld", names[which], (long long)rows, (long long)cols);
      for (int threads = 1; threads <= 2 && !rc; threads++) {
        run r = {e[which], &t[2], {&t[0], &t[1]}, k < 0 ? 2 : 1};
        rc = set_threads(threads, err);
        if (!rc && (ns[threads - 1] = best_ns(&r, err)) < 0) rc = err->code;
      }
      if (rc) break;
      printf("bench fuse %s_threads2%s n=%lld ns=%.0f\n", names[which], k < 0 ? "" : name + strlen(names[which]),
             (long long)(k < 0 ? n : rows * cols), ns[1]);
      printf("scaling fuse %s threads=1 ns=%.0f threads=2 ns=%.0f speedup=%.2f\n", name, ns[0], ns[1], ns[0] / ns[1]);
    }
    for (int j = 0; j < 3; j++) uopc_tensor_release(&t[j]);
  }
  if (!rc) rc = set_threads(2, err);
  for (int which = 0; which < KINDS; which++) {
    exec_free(e[which]);
    ir_graph_free(g[which]);
  }
  exec_free(serial);
  ir_graph_free(gs);
  return rc;
}

static int remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw) {
  (void)st, (void)type, (void)ftw;
  return remove(path);
}

/* A cold compile (a cache of its own, emptied of nothing: every entry is new) of a 50-op chain
 * fused into one kernel, against five 10-op chains compiled as five kernels. */
static int bench_compile(uopc_error *err) {
  char dir[] = "/tmp/uopc-bench-fuse-XXXXXX";
  if (!mkdtemp(dir)) return UOPC_FAIL(err, UOPC_E_IO, "bench fuse: mkdtemp failed");
  uopc_program_options o = {.cache_dir = dir};
  double ms[2] = {0};
  int rc = UOPC_OK;
  for (int v = 0; v < 2 && !rc; v++) {
    int parts = v ? 5 : 1, ops = v ? 10 : 50;
    double t0 = bench_now_ns();
    for (int p = 0; p < parts && !rc; p++) {
      ir_graph *g = NULL;
      exec *e = NULL;
      char entry[64];
      snprintf(entry, sizeof entry, "fuse_compile_%d_%d", v, p);
      rc = ir_graph_new(&g, err);
      if (!rc) {
        const sym_expr *s = extent(ir_graph_arena(g), "n", 0, 1, err);
        rc = compile(g, long_chain(g, ir_input(g, "x", UOPC_F32, 1, &s), ops), entry, &o, &e, err);
      }
      exec_free(e);
      ir_graph_free(g);
    }
    ms[v] = (bench_now_ns() - t0) / 1e6;
  }
  if (!rc) {
    printf("compile fuse chain50 ms=%.1f\ncompile fuse 5-chains10 ms=%.1f\n", ms[0], ms[1]);
    printf("ratio fuse compile chain50/5-chains10=%.3f\n", ms[0] / ms[1]);
  }
  nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);   /* the scratch cache: this bench's own files */
  return rc;
}

int main(void) {
  uopc_error err = {0};
  size_t cap = (size_t)LENGTHS[N_LENGTHS - 1];
  float *bufs[3];
  for (int k = 0; k < 3; k++) {
    if (!(bufs[k] = aligned_alloc(64, cap * sizeof(float)))) return 2;
    for (size_t i = 0; i < cap; i++) bufs[k][i] = (float)((i * 7 + (size_t)k) % 23) * 0.125f - 1.0f;
  }
  int rc = bench_chain6(bufs, &err);
  if (!rc) rc = bench_rows(bufs, &err);
  if (!rc) rc = bench_threads(bufs, &err);
  if (!rc) rc = bench_compile(&err);
  for (int k = 0; k < 3; k++) free(bufs[k]);
  if (rc) fprintf(stderr, "bench fuse: %s\n", err.message);
  return rc ? 1 : 0;
}
