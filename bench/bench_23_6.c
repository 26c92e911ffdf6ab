/* bench_23_6.c: the figures of lab 23.6 and of the runtime under it.
 *   cold compile vs a warm disk-cache hit, each in a new process;
 *   the guarded JIT's dispatch overhead vs a direct call, at length 1;
 *   the compiled path vs a C triad (the machine's streaming bandwidth) at 16M.
 * Prints `bench 23.6 <case> n=<n> ns=<ns per call>` and `ratio ...` lines;
 * bench/report.py adds NumPy's time for the same work in the same run. */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "guarded_jit.h"

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

static int unlink_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st; (void)flag; (void)ftw;
  return remove(path);
}

static void remove_tree(const char *dir) { nftw(dir, unlink_one, 16, FTW_DEPTH | FTW_PHYS); }

/* Constructs a program in a fresh child process and returns the time it took. */
static double construct_in_child(const char *source, const char *cache_dir) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    uopc_program_options opts = {.cache_dir = cache_dir};
    uopc_program *p;
    uopc_error err = {0};
    double t0 = now_ns();
    int rc = uopc_program_new(&p, source, "square_plus_one", "ppp", &opts, &err);
    double t = rc == UOPC_OK ? now_ns() - t0 : -1;
    if (write(fds[1], &t, sizeof t) != sizeof t) _exit(1);
    _exit(0);
  }
  double t = -1;
  close(fds[1]);
  if (read(fds[0], &t, sizeof t) != sizeof t) t = -1;
  close(fds[0]);
  waitpid(pid, NULL, 0);
  return t;
}

static void bench_cold_vs_warm(void) {
  char dir[] = "/tmp/uopc-bench-XXXXXX", source[256];
  if (!mkdtemp(dir)) return;
  double cold = 1e30, warm = 1e30;
  for (int i = 0; i < 3; i++) {   /* a new source each time: every cold run really compiles */
    snprintf(source, sizeof source, "/* cold %d */ void square_plus_one(const float *x, float *out, const int *n)"
             " { for (int i0 = 0; i0 < n[0]; i0++) out[i0] = x[i0] * x[i0] + 1.0f; }\n", i);
    double t = construct_in_child(source, dir);
    if (t > 0 && t < cold) cold = t;
  }
  for (int i = 0; i < 20; i++) {
    double t = construct_in_child(source, dir);
    if (t > 0 && t < warm) warm = t;
  }
  printf("bench 23.6 cold_compile n=1 ns=%.0f\n", cold);
  printf("bench 23.6 warm_hit n=1 ns=%.0f\n", warm);
  printf("ratio 23.6 cache cold/warm=%.1f (goal: >= 100, and the hit under 1 ms)\n", cold / warm);
  remove_tree(dir);
}

typedef void (*kernel_fn)(const float *, float *, const int *);

static double per_call(guarded_jit *jit, uopc_tensor *x, uopc_tensor *out, kernel_fn direct, int iters) {
  uopc_error err;
  float *xp = uopc_tensor_data(x), *op = uopc_tensor_data(out);
  int n = (int)x->shape[0];
  double t0 = now_ns();
  for (int i = 0; i < iters; i++) {
    if (direct) direct(xp, op, &n);
    else guarded_jit_call(jit, x, out, &err);
  }
  return (now_ns() - t0) / iters;
}

static double best_of(int reps, guarded_jit *jit, uopc_tensor *x, uopc_tensor *out, kernel_fn direct, int iters) {
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    double t = per_call(jit, x, out, direct, iters);
    if (t < best) best = t;
  }
  return best;
}

static const char TRIAD[] =
    "void triad(float *restrict a, const float *restrict b, const float *restrict c, long long n) {\n"
    "  for (long long i0 = 0; i0 < n; i0++) a[i0] = b[i0] + 3.0f * c[i0];\n"
    "}\n";

/* The triad moves 12 bytes an element, square_plus_one 8: compare bandwidths. */
static void bench_bandwidth(guarded_jit *jit, int64_t n) {
  uopc_tensor x = {0}, out = {0}, c = {0};
  uopc_error err = {0};
  uopc_program *triad;
  if (uopc_tensor_empty(&x, UOPC_F32, 1, &n, &err) || uopc_tensor_empty(&out, UOPC_F32, 1, &n, &err) ||
      uopc_tensor_empty(&c, UOPC_F32, 1, &n, &err) || uopc_program_new(&triad, TRIAD, "triad", "pppl", NULL, &err)) {
    fprintf(stderr, "bench 23.6: %s\n", err.message);
    return;
  }
  double kernel = best_of(5, jit, &x, &out, NULL, 1);
  void (*fn)(float *, const float *, const float *, long long) =
      (void (*)(float *, const float *, const float *, long long))uopc_program_entry(triad);
  double best = 1e30;
  for (int r = 0; r < 5; r++) {
    double t0 = now_ns();
    fn(uopc_tensor_data(&out), uopc_tensor_data(&x), uopc_tensor_data(&c), n);
    double t = now_ns() - t0;
    if (t < best) best = t;
  }
  double kernel_gbs = 8.0 * n / kernel, triad_gbs = 12.0 * n / best;
  printf("bench 23.6 square_plus_one n=%lld ns=%.0f (%.1f GB/s)\n", (long long)n, kernel, kernel_gbs);
  printf("bench 23.6 triad n=%lld ns=%.0f (%.1f GB/s)\n", (long long)n, best, triad_gbs);
  printf("ratio 23.6 square_plus_one n=%lld bandwidth/triad=%.2f (goal: >= 0.85)\n", (long long)n, kernel_gbs / triad_gbs);
  uopc_program_free(triad);
  uopc_tensor_release(&x);
  uopc_tensor_release(&out);
  uopc_tensor_release(&c);
}

int main(void) {
  uopc_error err = {0};
  guarded_jit jit;
  uopc_tensor x = {0}, out = {0};
  int64_t one = 1;
  if (guarded_jit_init(&jit, 1 << 24, NULL, &err) || uopc_tensor_empty(&x, UOPC_F32, 1, &one, &err) ||
      uopc_tensor_empty(&out, UOPC_F32, 1, &one, &err) || guarded_jit_call(&jit, &x, &out, &err)) {
    fprintf(stderr, "bench 23.6: %s: %s\n", uopc_error_name(err.code), err.message);
    return 1;
  }
  bench_cold_vs_warm();
  kernel_fn direct = (kernel_fn)uopc_program_entry(jit.program);
  double guarded = best_of(5, &jit, &x, &out, NULL, 1000000);
  double plain = best_of(5, &jit, &x, &out, direct, 1000000);
  printf("bench 23.6 guarded_call n=1 ns=%.1f\n", guarded);
  printf("bench 23.6 direct_call n=1 ns=%.1f\n", plain);
  printf("ratio 23.6 dispatch overhead=%.1f ns (goal: <= 25 ns)\n", guarded - plain);
  bench_bandwidth(&jit, 1 << 24);
  uopc_tensor_release(&x);
  uopc_tensor_release(&out);
  guarded_jit_fini(&jit);
  return 0;
}
