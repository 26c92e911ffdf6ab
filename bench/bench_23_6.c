/* bench_23_6.c: the figures of lab 23.6 and of the runtime under it.
 *   a cold compile through uopc vs bare gcc running the same command;
 *   cold compile vs a warm disk-cache hit, each in a new process;
 *   the disk cache's size check after a publish, on a small and a large cache;
 *   the guarded JIT's dispatch overhead vs a direct call, at length 1;
 *   the compiled path vs a C triad (the machine's streaming bandwidth) at 16M;
 *   a strided view x[::2]: the fallback on the view vs copying it into a
 *   contiguous buffer and running the compiled kernel (chapter 23.6, "Do not
 *   copy without measuring"), at a few lengths.
 * Prints `bench 23.6 <case> n=<n> ns=<ns per call>` and `ratio ...` lines
 * (`bench_23_6 --strided`: the strided figures only);
 * bench/report.py adds NumPy's time for the same work in the same run. */
#include <fcntl.h>
#include <ftw.h>
#include <glob.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "bench.h"
#include "guarded_jit.h"
#include "../uopc/src/internal.h"   /* the size check, measured alone */

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
    double t0 = bench_now_ns();
    int rc = uopc_program_new(&p, source, "square_plus_one", "ppp", &opts, &err);
    double t = rc == UOPC_OK ? bench_now_ns() - t0 : -1;
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

/* ---- a cold compile: uopc vs bare gcc --------------------------------------
 * Each run is a new process. On uopc's side it is this binary again
 * (--cold-compile DIR), which calls uopc_program_new once on the empty cache
 * DIR and exits: library loading, hashing, cache I/O, gcc and dlopen. On
 * gcc's side it is gcc itself, run with the command that uopc ran, as the
 * manifest records it, on the same kernel.c, in the same environment. CPU time
 * is the process's and every process it waited for (wait4); the figures are
 * medians, and the runs alternate so that drift hits both alike. */
#define COLD_RUNS 15
#define COLD_ARGS 40

extern char **environ;

static const char COLD_SOURCE[] =
    "void square_plus_one(const float *x, float *out, const int *n) {\n"
    "  for (int i0 = 0; i0 < n[0]; i0++) out[i0] = x[i0] * x[i0] + 1.0f;\n"
    "}\n";

/* The child's side of --cold-compile. */
static int cold_compile(const char *dir) {
  uopc_program_options opts = {.cache_dir = dir};
  uopc_program *p;
  uopc_error err = {0};
  if (uopc_program_new(&p, COLD_SOURCE, "square_plus_one", "ppp", &opts, &err)) {
    fprintf(stderr, "bench 23.6: cold compile: %s\n", err.message);
    return 1;
  }
  uopc_program_free(p);
  return 0;
}

typedef struct cost { double wall, cpu; } cost;   /* ns */

/* Runs argv in cwd with LC_ALL=C (as uopc runs gcc) and measures it; 0 on success. */
static int run_measured(char *const argv[], const char *cwd, cost *c) {
  static char *env[] = {"LC_ALL=C", "PATH=/usr/local/bin:/usr/bin:/bin", NULL};
  posix_spawn_file_actions_t fa;
  pid_t pid;
  int status;
  struct rusage ru;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addchdir_np(&fa, cwd);
  double t0 = bench_now_ns();
  int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, env);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0 || wait4(pid, &status, 0, &ru) != pid) return -1;
  c->wall = bench_now_ns() - t0;
  c->cpu = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e9 + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e3;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* "name=value" from a manifest's text, into out. */
static int manifest_value(const char *text, const char *name, char *out, size_t size) {
  char key[64];
  snprintf(key, sizeof key, "\n%s=", name);
  const char *v = strstr(text, key);
  if (!v) return -1;
  v += strlen(key);
  snprintf(out, size, "%.*s", (int)strcspn(v, "\n"), v);
  return 0;
}

static char *read_whole(const char *path) {
  FILE *f = fopen(path, "r");
  char *text = NULL;
  size_t cap = 0;
  if (f && getdelim(&text, &cap, '\0', f) < 0) { free(text); text = NULL; }
  if (f) fclose(f);
  return text;
}

/* gcc's argv as uopc's gcc back end builds it: compiler, flags, -o kernel.so
 * kernel.c, libs (build.c, make_argv), from the manifest of entry dir. */
static int gcc_command(const char *entry_dir, char *buf, size_t size, char **argv) {
  char path[PATH_MAX + 16];
  snprintf(path, sizeof path, "%s/manifest", entry_dir);
  char *text = read_whole(path), compiler[PATH_MAX], flags[512], libs[64];
  int rc = !text || manifest_value(text, "compiler", compiler, sizeof compiler) ||
           manifest_value(text, "flags", flags, sizeof flags) || manifest_value(text, "libs", libs, sizeof libs);
  free(text);
  if (rc) return -1;
  compiler[strcspn(compiler, " ")] = '\0';   /* "<path> (<size> bytes, mtime ...)" */
  if ((size_t)snprintf(buf, size, "%s %s -o kernel.so kernel.c %s", compiler, flags, libs) >= size) return -1;
  int argc = 0;
  for (char *tok = strtok(buf, " "); tok && argc < COLD_ARGS - 1; tok = strtok(NULL, " ")) argv[argc++] = tok;
  argv[argc] = NULL;
  return 0;
}

/* The one entry directory under a cache dir (the first run's). */
static int entry_dir_of(const char *cache, char out[PATH_MAX]) {
  char cmd[PATH_MAX + 64];
  snprintf(cmd, sizeof cmd, "%s/square_plus_one-*", cache);
  glob_t g;
  int rc = glob(cmd, 0, NULL, &g) == 0 && g.gl_pathc == 1 ? 0 : -1;
  if (rc == 0) snprintf(out, PATH_MAX, "%s", g.gl_pathv[0]);
  globfree(&g);
  return rc;
}

/* One uopc run on a fresh cache under root, and one gcc run in a fresh
 * directory holding kernel.c; each directory is removed after its run. */
static int cold_pair(const char *root, int r, char **gcc_argv, const char *kernel, cost *u, cost *g) {
  char cache[PATH_MAX], work[PATH_MAX], src[PATH_MAX + 16];
  char *self[] = {"/proc/self/exe", "--cold-compile", cache, NULL};
  snprintf(cache, sizeof cache, "%s/uopc-%d", root, r);
  snprintf(work, sizeof work, "%s/gcc-%d", root, r);
  snprintf(src, sizeof src, "%s/kernel.c", work);
  FILE *f = mkdir(work, 0700) == 0 ? fopen(src, "w") : NULL;
  if (!f || fputs(kernel, f) < 0 || fclose(f) != 0) return -1;
  int rc = run_measured(self, root, u) || run_measured(gcc_argv, work, g);
  remove_tree(cache);
  remove_tree(work);
  return rc;
}

static void bench_cold_uopc_vs_gcc(void) {
  char root[] = "/tmp/uopc-bench-XXXXXX", cache[PATH_MAX], entry[PATH_MAX], src[PATH_MAX + 16], buf[2048];
  char *gcc_argv[COLD_ARGS], *self[] = {"/proc/self/exe", "--cold-compile", cache, NULL}, *kernel = NULL;
  cost u, g;
  double uw[COLD_RUNS], uc[COLD_RUNS], gw[COLD_RUNS], gc[COLD_RUNS];
  if (!mkdtemp(root)) return;
  /* The first run, not counted, warms the page cache and tells the command. */
  snprintf(cache, sizeof cache, "%s/first", root);
  int ok = run_measured(self, root, &u) == 0 && entry_dir_of(cache, entry) == 0 &&
           gcc_command(entry, buf, sizeof buf, gcc_argv) == 0;
  snprintf(src, sizeof src, "%s/kernel.c", entry);
  if (ok) ok = (kernel = read_whole(src)) != NULL;
  for (int r = 0; ok && r < COLD_RUNS; r++) {
    ok = cold_pair(root, r, gcc_argv, kernel, &u, &g) == 0;
    uw[r] = u.wall, uc[r] = u.cpu, gw[r] = g.wall, gc[r] = g.cpu;
  }
  free(kernel);
  remove_tree(root);
  if (!ok) {
    printf("note: bench 23.6 cold_uopc_vs_gcc could not run a compile; skipped\n");
    return;
  }
  double uwall = bench_median(uw, COLD_RUNS), ucpu = bench_median(uc, COLD_RUNS), gwall = bench_median(gw, COLD_RUNS),
         gcpu = bench_median(gc, COLD_RUNS);
  printf("bench 23.6 cold_uopc n=1 ns=%.0f (cpu %.1f ms)\n", uwall, ucpu / 1e6);
  printf("bench 23.6 cold_gcc n=1 ns=%.0f (cpu %.1f ms)\n", gwall, gcpu / 1e6);
  printf("ratio 23.6 cold_compile uopc/gcc cpu=%.3f wall=%.3f (goal: <= 1.0; medians of %d new processes)\n",
         ucpu / gcpu, uwall / gwall, COLD_RUNS);
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

/* ---- the size check after a publish -----------------------------------------
 * What a publish adds for the limit (uopc/src/cache.c, rename_counted): take
 * the lock, read the running total, add the entry, compare with the limit,
 * rewrite the stats file. On caches of 100 and 5000 entries (made by hand:
 * a directory with one small file each) it must cost the same; the count of
 * the whole cache, which only an eviction makes, is measured for contrast. */
#define CHECK_RUNS 300

static int fake_entries(const char *dir, int from, int to) {
  char path[PATH_MAX];
  for (int i = from; i < to; i++) {
    if (snprintf(path, sizeof path, "%s/bench-%064x", dir, i) >= (int)sizeof path || mkdir(path, 0700) != 0 ||
        snprintf(path + strlen(path), sizeof path - strlen(path), "/kernel.so") >= (int)sizeof path ||
        uopc_write_file(path, COLD_SOURCE, sizeof COLD_SOURCE, NULL) != UOPC_OK)
      return -1;
  }
  return 0;
}

/* The median of CHECK_RUNS size checks, as a publish under the limit makes them. */
static double size_check(const uopc_cache *c) {
  static double t[CHECK_RUNS];
  char trash[PATH_MAX];
  for (int i = 0; i < CHECK_RUNS; i++) {
    int fd;
    double t0 = bench_now_ns();
    if (uopc_cache_lock(c->dir, &fd, NULL) != UOPC_OK || uopc_cache_account(c, 1, 4096, NULL, trash, NULL) != UOPC_OK)
      return -1;
    uopc_cache_unlock(fd);
    t[i] = bench_now_ns() - t0;
  }
  return bench_median(t, CHECK_RUNS);
}

static double scan_time(const char *dir) {
  double t[5];
  uopc_cache_record r;
  for (int i = 0; i < 5; i++) {
    double t0 = bench_now_ns();
    if (uopc_cache_scan(dir, &r, NULL) != UOPC_OK) return -1;
    t[i] = bench_now_ns() - t0;
  }
  return bench_median(t, 5);
}

static void bench_size_check(void) {
  uopc_cache c = {.max_size = (int64_t)1 << 50};   /* never reached: the check, not an eviction */
  snprintf(c.dir, sizeof c.dir, "/tmp/uopc-bench-XXXXXX");
  if (!mkdtemp(c.dir)) return;
  double small = -1, large = -1, scan = -1;
  if (fake_entries(c.dir, 0, 100) == 0) small = size_check(&c);
  if (small > 0 && fake_entries(c.dir, 100, 5000) == 0) large = size_check(&c);
  if (large > 0) scan = scan_time(c.dir);
  remove_tree(c.dir);
  if (scan < 0) {
    fprintf(stderr, "bench 23.6: the size check could not be measured in /tmp\n");
    return;
  }
  printf("bench 23.6 cache_size_check n=100 ns=%.0f\n", small);
  printf("bench 23.6 cache_size_check n=5000 ns=%.0f\n", large);
  printf("bench 23.6 cache_scan n=5000 ns=%.0f\n", scan);
  printf("ratio 23.6 cache_size_check n=5000/n=100=%.2f (goal: about 1, no walk of the cache; "
         "a walk of 5000 entries costs %.0f checks)\n", large / small, scan / large);
}

typedef void (*kernel_fn)(const float *, float *, const int *);

static double per_call(guarded_jit *jit, uopc_tensor *x, uopc_tensor *out, kernel_fn direct, int iters) {
  uopc_error err;
  float *xp = uopc_tensor_data(x), *op = uopc_tensor_data(out);
  int n = (int)x->shape[0];
  double t0 = bench_now_ns();
  for (int i = 0; i < iters; i++) {
    if (direct) direct(xp, op, &n);
    else guarded_jit_call(jit, x, out, &err);
  }
  return (bench_now_ns() - t0) / iters;
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
    double t0 = bench_now_ns();
    fn(uopc_tensor_data(&out), uopc_tensor_data(&x), uopc_tensor_data(&c), n);
    double t = bench_now_ns() - t0;
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

/* ---- copy or fallback for a strided view ---------------------------------
 * x = base[::2], n elements: what the lab does (the fallback, on the view)
 * against what an unconditional copy would do: gather x into a contiguous
 * buffer (allocated once, as a caller would keep it) with the tightest loop C
 * has, then run the compiled kernel on it. The gather and the kernel are timed
 * alone too, and so is the runtime's general uopc_tensor_copy (any layout, any
 * dtype), which a copy written without measuring would likely call. */
enum { FALLBACK, GATHER_THEN_KERNEL, GATHER, KERNEL, TENSOR_COPY, N_WAYS };

static void gather2(float *restrict dst, const float *restrict src, int64_t n) {
  for (int64_t i0 = 0; i0 < n; i0++) dst[i0] = src[2 * i0];
}

static double strided_way(guarded_jit *jit, uopc_tensor *x, uopc_tensor *tmp, uopc_tensor *out, int way, int iters) {
  uopc_error err;
  float *dst = uopc_tensor_data(tmp);
  const float *src = uopc_tensor_data(x);
  double t0 = bench_now_ns();
  for (int i = 0; i < iters; i++) {
    if (way == GATHER_THEN_KERNEL || way == GATHER) gather2(dst, src, x->shape[0]);
    if (way == TENSOR_COPY) uopc_tensor_copy(tmp, x, &err);
    if (way == FALLBACK) guarded_jit_call(jit, x, out, &err);
    if (way == GATHER_THEN_KERNEL || way == KERNEL) guarded_jit_call(jit, tmp, out, &err);
  }
  return (bench_now_ns() - t0) / iters;
}

static void bench_copy_vs_strided(guarded_jit *jit) {
  static const int64_t lengths[] = {4096, 65536, 1 << 20, 1 << 24};
  for (size_t k = 0; k < sizeof lengths / sizeof *lengths; k++) {
    int64_t n = lengths[k], total = 2 * n;
    int iters = (int)((1 << 24) / n), reps = n < (1 << 24) ? 5 : 3;
    uopc_tensor base = {0}, x = {0}, tmp = {0}, out = {0};
    uopc_error err = {0};
    if (uopc_tensor_empty(&base, UOPC_F32, 1, &total, &err) ||
        uopc_tensor_slice(&x, &base, 0, 0, UOPC_SLICE_NONE, 2, &err) ||
        uopc_tensor_empty(&tmp, UOPC_F32, 1, &n, &err) || uopc_tensor_empty(&out, UOPC_F32, 1, &n, &err)) {
      fprintf(stderr, "bench 23.6 copy vs strided: %s\n", err.message);
      return;
    }
    double best[N_WAYS];
    for (int way = 0; way < N_WAYS; way++) best[way] = 1e30;
    for (int r = 0; r < reps; r++)   /* the ways alternate, so that drift hits them alike */
      for (int way = 0; way < N_WAYS; way++) {
        double t = strided_way(jit, &x, &tmp, &out, way, way == TENSOR_COPY ? (iters + 7) / 8 : iters);
        if (t < best[way]) best[way] = t;
      }
    printf("bench 23.6 strided_fallback n=%lld ns=%.0f\n", (long long)n, best[FALLBACK]);
    printf("bench 23.6 copy_then_kernel n=%lld ns=%.0f (gather %.0f + kernel %.0f; uopc_tensor_copy alone: %.0f)\n",
           (long long)n, best[GATHER_THEN_KERNEL], best[GATHER], best[KERNEL], best[TENSOR_COPY]);
    double ratio = best[GATHER_THEN_KERNEL] / best[FALLBACK];
    printf("ratio 23.6 strided n=%lld copy_then_kernel/fallback=%.2f (%s)\n", (long long)n, ratio,
           ratio < 1 ? "below 1: the copy pays for itself" : "not below 1: the copy does not pay for itself");
    uopc_tensor_release(&out);
    uopc_tensor_release(&tmp);
    uopc_tensor_release(&x);
    uopc_tensor_release(&base);
  }
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--cold-compile") == 0) return cold_compile(argv[2]);
  int strided_only = argc == 2 && strcmp(argv[1], "--strided") == 0;   /* only the copy-or-fallback figures */
  uopc_error err = {0};
  guarded_jit jit;
  uopc_tensor x = {0}, out = {0};
  int64_t one = 1;
  if (guarded_jit_init(&jit, 1 << 24, NULL, &err) || uopc_tensor_empty(&x, UOPC_F32, 1, &one, &err) ||
      uopc_tensor_empty(&out, UOPC_F32, 1, &one, &err) || guarded_jit_call(&jit, &x, &out, &err)) {
    fprintf(stderr, "bench 23.6: %s: %s\n", uopc_error_name(err.code), err.message);
    return 1;
  }
  if (strided_only) {
    bench_copy_vs_strided(&jit);
    uopc_tensor_release(&x);
    uopc_tensor_release(&out);
    guarded_jit_fini(&jit);
    return 0;
  }
  bench_cold_vs_warm();
  bench_cold_uopc_vs_gcc();
  bench_size_check();
  kernel_fn direct = (kernel_fn)uopc_program_entry(jit.program);
  double guarded = best_of(5, &jit, &x, &out, NULL, 1000000);
  double plain = best_of(5, &jit, &x, &out, direct, 1000000);
  printf("bench 23.6 guarded_call n=1 ns=%.1f\n", guarded);
  printf("bench 23.6 direct_call n=1 ns=%.1f\n", plain);
  printf("ratio 23.6 dispatch overhead=%.1f ns (goal: <= 25 ns)\n", guarded - plain);
  bench_bandwidth(&jit, 1 << 24);
  bench_copy_vs_strided(&jit);
  uopc_tensor_release(&x);
  uopc_tensor_release(&out);
  guarded_jit_fini(&jit);
  return 0;
}
