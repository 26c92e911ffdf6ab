/* test_cuda.c: CUDA programs: PTX, the disk cache and launches (section 23.6).
 * The compile tests run wherever NVRTC or nvcc is installed, once with each
 * (the test names end in _by_nvrtc and _by_nvcc); the launch tests need a GPU
 * and skip without one, printing why. */
#include "uopc/uopc.h"
#include "../testutil.h"
#include "../../uopc/src/internal.h"
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/wait.h>

static const char SQUARE_PLUS_ONE[] =
    "extern \"C\" __global__ void square_plus_one(const float *x, float *out, const int *length) {\n"
    "  int i0 = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i0 < *length) out[i0] = x[i0] * x[i0] + 1.0f;\n"
    "}\n";

/* A test's initial state says which compiler it asks for. */
static int by_nvrtc = 0, by_nvcc = 1;

static int64_t delta(const char *name, int64_t before) { return uopc_counter_get(name) - before; }

/* SQUARE_PLUS_ONE after a comment, so that each tag has a key of its own. */
static const char *tagged(const char *tag) {
  static char source[1024];
  snprintf(source, sizeof source, "/* %s */\n%s", tag, SQUARE_PLUS_ONE);
  return source;
}

/* The whole file as a NUL-terminated string (NULL when it cannot be read). */
static char *read_text(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return NULL;
  char *text = NULL;
  size_t cap = 0;
  if (getdelim(&text, &cap, '\0', f) < 0) {
    free(text);
    text = NULL;
  }
  fclose(f);
  return text;
}

static int file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

/* 1 when the test's state asks for nvcc. */
static int forced(void **state) { return *state ? *(int *)*state : 0; }

/* Compiles (by nvcc when force_nvcc); skips the test when there is no compiler. */
static int compile(int force_nvcc, const char *source, const char *entry, const char *arch,
                   char ptx[PATH_MAX], uopc_error *err) {
  uopc_cuda_options opts = {.arch = arch, .force_nvcc = force_nvcc};
  int rc = uopc_cuda_compile(source, entry, &opts, ptx, PATH_MAX, err);
  if (rc == UOPC_E_NO_CUDA) {
    print_message("  skipped: %s\n", err->message);
    skip();
  }
  return rc;
}

static void require_gpu(void) {
  uopc_error err = {0};
  if (uopc_cuda_available(&err) == UOPC_OK) return;
  print_message("  skipped: %s\n", err.message);
  skip();
}

static void require_no_gpu(void) {
  if (uopc_cuda_available(NULL) != UOPC_OK) return;
  print_message("  skipped: this machine has a GPU\n");
  skip();
}

/* ---- availability ------------------------------------------------------- */

static void test_cuda_available_is_ok_or_says_why(void **state) {
  (void)state;
  uopc_error first = {0}, again = {0};
  int rc = uopc_cuda_available(&first);
  assert_int_equal(uopc_cuda_available(&again), rc);
  if (rc == UOPC_OK) return;
  assert_uopc_code(rc, UOPC_E_NO_CUDA, first);
  assert_contains(first.message, "no CUDA");
  assert_string_equal(again.message, first.message);
  print_message("  uopc_cuda_available: %s\n", first.message);
}

static void test_cuda_compiler_available_is_ok_or_says_why(void **state) {
  (void)state;
  uopc_error err = {0};
  int rc = uopc_cuda_compiler_available(&err);
  if (rc == UOPC_OK) return;
  assert_uopc_code(rc, UOPC_E_NO_CUDA, err);
  assert_contains(err.message, "no CUDA compiler");
}

/* Where no NVRTC loads, the reason lists every place tried; where one does, there is no reason. */
static void test_cuda_nvrtc_why_not_lists_the_places_tried_or_is_empty(void **state) {
  (void)state;
  if (uopc_nvrtc_ready()) {
    assert_string_equal(uopc_nvrtc_why_not(), "");
    return;
  }
  assert_string_equal(uopc_nvrtc_why_not(), "libnvrtc not found (tried libnvrtc.so, .so.13 and .so.12 in "
                      "$CUDA_HOME/lib64, on the loader's path and in /usr/local/cuda/lib64)");
  assert_string_equal(uopc_nvrtc_identity(), "");
}

/* ---- compiling ------------------------------------------------------------ */

static void test_cuda_compile_only_produces_ptx_with_entry(void **state) {
  uopc_error err = {0};
  char ptx[PATH_MAX], source[PATH_MAX];
  assert_uopc_ok(compile(forced(state), tagged("compile only"), "square_plus_one", NULL, ptx, &err), err);
  assert_contains(ptx, testutil_cache_dir);
  assert_contains(ptx, "/kernel.ptx");
  char *text = read_text(ptx);
  assert_non_null(text);
  assert_contains(text, ".entry square_plus_one(");
  assert_contains(text, ".target sm_");
  free(text);
  /* The entry keeps the source as compiled beside its PTX. */
  snprintf(source, sizeof source, "%.*s/kernel.cu", (int)(strrchr(ptx, '/') - ptx), ptx);
  text = read_text(source);
  assert_non_null(text);
  assert_string_equal(text, tagged("compile only"));
  free(text);
}

static void test_cuda_compile_twice_is_a_disk_cache_hit(void **state) {
  uopc_error err = {0};
  char first[PATH_MAX], second[PATH_MAX];
  const char *tag = forced(state) ? "twice by nvcc" : "twice by nvrtc";
  int64_t inv = uopc_counter_get(UOPC_C_COMPILER_INVOCATIONS);
  int64_t misses = uopc_counter_get(UOPC_C_DISK_CACHE_MISSES);
  assert_uopc_ok(compile(forced(state), tagged(tag), "square_plus_one", NULL, first, &err), err);
  assert_int_equal(delta(UOPC_C_COMPILER_INVOCATIONS, inv), 1);
  assert_int_equal(delta(UOPC_C_DISK_CACHE_MISSES, misses), 1);
  inv = uopc_counter_get(UOPC_C_COMPILER_INVOCATIONS);
  int64_t hits = uopc_counter_get(UOPC_C_DISK_CACHE_HITS);
  assert_uopc_ok(compile(forced(state), tagged(tag), "square_plus_one", NULL, second, &err), err);
  assert_int_equal(delta(UOPC_C_DISK_CACHE_HITS, hits), 1);
  assert_int_equal(delta(UOPC_C_COMPILER_INVOCATIONS, inv), 0);
  assert_string_equal(first, second);
}

/* The kept source's path, out of "... failed on <dir>/kernel.cu (entry ...". */
static void kept_source(const char *message, char path[PATH_MAX]) {
  const char *start = strstr(message, testutil_cache_dir);
  const char *end = start ? strstr(start, "/kernel.cu") : NULL;
  if (!end) fail_msg("no kept source path in:\n%s", message);
  snprintf(path, PATH_MAX, "%.*s/kernel.cu", (int)(end - start), start);
}

static void test_cuda_compile_syntax_error_gives_diagnostics_and_source_path(void **state) {
  static const char broken[] = "extern \"C\" __global__ void broken(float *x) { x[0] = 1.0f }\n";
  uopc_error err = {0};
  char ptx[PATH_MAX], kept[PATH_MAX];
  int64_t inv = uopc_counter_get(UOPC_C_COMPILER_INVOCATIONS);
  assert_uopc_code(compile(forced(state), broken, "broken", NULL, ptx, &err), UOPC_E_COMPILE, err);
  assert_contains(err.message, "kernel.cu(1): error");
  assert_contains(err.message, "expected a \";\"");
  assert_contains(err.message, "/failed/broken-");
  kept_source(err.message, kept);
  char *text = read_text(kept);
  if (!text) fail_msg("the kept source '%s' cannot be read; message:\n%s", kept, err.message);
  assert_string_equal(text, broken);
  free(text);
  strcpy(strrchr(kept, '/'), "/compile.log");
  if (!file_exists(kept)) fail_msg("no full log at '%s'", kept);
  /* A failure is not cached: the next try runs the compiler again. */
  assert_uopc_code(compile(forced(state), broken, "broken", NULL, ptx, &err), UOPC_E_COMPILE, err);
  assert_int_equal(delta(UOPC_C_COMPILER_INVOCATIONS, inv), 2);
}

static void test_cuda_compile_rejects_kernel_that_is_not_extern_c(void **state) {
  static const char mangled[] = "__global__ void mangled(float *x) { x[0] = 1.0f; }\n";
  uopc_error err = {0};
  char ptx[PATH_MAX];
  assert_uopc_code(compile(forced(state), mangled, "mangled", NULL, ptx, &err), UOPC_E_COMPILE, err);
  assert_contains(err.message, "no kernel 'mangled'");
  assert_contains(err.message, "extern \"C\"");
}

/* Both PTX back ends' check finds ".entry <name>" followed by "(", " " or the end of the line (a
 * kernel's parameters can start on the next line), and nothing that only begins with the name. */
static void test_cuda_ptx_check_finds_the_entry_before_a_parenthesis_space_or_line_end(void **state) {
  (void)state;
  static const struct { const char *line; int code; } cases[] = {
    {".visible .entry scale(\n", UOPC_OK},
    {".visible .entry scale (\n", UOPC_OK},
    {".visible .entry scale\n(\n", UOPC_OK},
    {".visible .entry scale2(\n", UOPC_E_COMPILE},
    {".visible .func scale(\n", UOPC_E_COMPILE},
  };
  static uopc_build b = {.entry = "scale"};
  const uopc_backend *backends[] = {&uopc_backend_nvrtc, &uopc_backend_nvcc};
  char path[PATH_MAX + 16], log[256];
  snprintf(path, sizeof path, "%s/check.ptx", testutil_cache_dir);
  for (size_t k = 0; k < 2; k++)
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
      uopc_error err = {0};
      assert_uopc_ok(uopc_write_file(path, cases[i].line, strlen(cases[i].line), &err), err);
      *log = '\0';
      int rc = backends[k]->verify(&b, path, log, sizeof log, &err);
      if (rc != cases[i].code) fail_msg("%s on '%s': expected %d, got %d", backends[k]->name, cases[i].line,
                                        cases[i].code, rc);
      assert_string_equal(log, rc ? "the PTX has no kernel 'scale': declare it extern \"C\" __global__, "
                                    "so that its name is not mangled" : "");
    }
}

/* PTX is always for a virtual arch: sm_80 is compiled as compute_80, and
 * the two share one cache entry. */
static void test_cuda_compile_turns_an_sm_arch_into_its_ptx_target(void **state) {
  static const struct { const char *arch, *target; } cases[] = {
    {"sm_80", ".target sm_80"}, {"compute_75", ".target sm_75"}, {"sm_90a", ".target sm_90a"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    uopc_error err = {0};
    char ptx[PATH_MAX];
    assert_uopc_ok(compile(forced(state), SQUARE_PLUS_ONE, "square_plus_one", cases[i].arch, ptx, &err), err);
    char *text = read_text(ptx);
    assert_non_null(text);
    if (!strstr(text, cases[i].target))
      fail_msg("arch %s: expected \"%s\" in %s", cases[i].arch, cases[i].target, ptx);
    free(text);
  }
  uopc_error err = {0};
  char sm[PATH_MAX], compute[PATH_MAX];
  int64_t hits = uopc_counter_get(UOPC_C_DISK_CACHE_HITS);
  assert_uopc_ok(compile(forced(state), SQUARE_PLUS_ONE, "square_plus_one", "sm_80", sm, &err), err);
  assert_uopc_ok(compile(forced(state), SQUARE_PLUS_ONE, "square_plus_one", "compute_80", compute, &err), err);
  assert_int_equal(delta(UOPC_C_DISK_CACHE_HITS, hits), 2);
  assert_string_equal(sm, compute);
}

/* Any letter may follow the digits (sm_90a, sm_100f, ...): the compiler, not
 * the runtime, knows which exist, and says so of one that does not. */
static void test_cuda_compile_leaves_an_arch_suffix_to_the_compiler(void **state) {
  uopc_error err = {0};
  char ptx[PATH_MAX];
  int rc = compile(forced(state), SQUARE_PLUS_ONE, "square_plus_one", "sm_90z", ptx, &err);
  assert_uopc_code(rc, UOPC_E_COMPILE, err);
  assert_contains(err.message, "compute_90z");
  assert_null(strstr(err.message, "is not sm_NN"));
}

static void test_cuda_compile_without_gpu_targets_compute_90(void **state) {
  require_no_gpu();
  uopc_error err = {0};
  char ptx[PATH_MAX];
  assert_uopc_ok(compile(forced(state), SQUARE_PLUS_ONE, "square_plus_one", NULL, ptx, &err), err);
  char *text = read_text(ptx);
  assert_non_null(text);
  assert_contains(text, ".target sm_90\n");
  free(text);
}

/* The compiler is part of the key: NVRTC's PTX is never taken for nvcc's. */
static void test_cuda_compile_nvrtc_and_nvcc_use_different_entries(void **state) {
  (void)state;
  uopc_error err = {0};
  char by_default[PATH_MAX], by_nvcc_path[PATH_MAX], manifest[PATH_MAX];
  assert_uopc_ok(compile(0, tagged("both"), "square_plus_one", NULL, by_default, &err), err);
  snprintf(manifest, sizeof manifest, "%.*s/manifest",
           (int)(strrchr(by_default, '/') - by_default), by_default);
  char *text = read_text(manifest);
  assert_non_null(text);
  int nvrtc_loaded = strstr(text, "compiler=nvrtc ") != NULL;
  free(text);
  if (!nvrtc_loaded) {
    print_message("  skipped: NVRTC did not load; both compiles would use nvcc\n");
    skip();
  }
  int64_t inv = uopc_counter_get(UOPC_C_COMPILER_INVOCATIONS);
  assert_uopc_ok(compile(1, tagged("both"), "square_plus_one", NULL, by_nvcc_path, &err), err);
  assert_int_equal(delta(UOPC_C_COMPILER_INVOCATIONS, inv), 1);
  assert_string_not_equal(by_default, by_nvcc_path);
}

typedef struct racer {
  const char *source;
  int force_nvcc, rc;
  char ptx[PATH_MAX];
  uopc_error err;
} racer;

static void *race(void *arg) {
  racer *r = arg;
  uopc_cuda_options opts = {.force_nvcc = r->force_nvcc};
  r->rc = uopc_cuda_compile(r->source, "square_plus_one", &opts, r->ptx, PATH_MAX, &r->err);
  return NULL;
}

/* Eight threads compile one new key at once, as the first use of a shared
 * runtime may: the compilers' one-time setup runs once, and all of them end
 * up with the one published entry. */
static void test_cuda_compile_from_eight_threads_agrees_on_one_entry(void **state) {
  uopc_error err = {0};
  char ptx[PATH_MAX];
  /* Skips without a compiler; warms nothing the race needs (its key is new). */
  assert_uopc_ok(compile(forced(state), SQUARE_PLUS_ONE, "square_plus_one", NULL, ptx, &err), err);
  static racer racers[8];
  pthread_t threads[8];
  const char *source = forced(state) ? "/* race by nvcc */ extern \"C\" __global__ void square_plus_one() {}"
                                     : "/* race by nvrtc */ extern \"C\" __global__ void square_plus_one() {}";
  for (int i = 0; i < 8; i++) {
    racers[i] = (racer){.source = source, .force_nvcc = forced(state)};
    assert_int_equal(pthread_create(&threads[i], NULL, race, &racers[i]), 0);
  }
  for (int i = 0; i < 8; i++) pthread_join(threads[i], NULL);
  for (int i = 0; i < 8; i++) {
    assert_uopc_ok(racers[i].rc, racers[i].err);
    assert_string_equal(racers[i].ptx, racers[0].ptx);
  }
}

static void test_cuda_compile_rejects_bad_arguments(void **state) {
  (void)state;
  static const struct { const char *source, *entry, *arch, *says; } cases[] = {
    {NULL, "square_plus_one", NULL, "source is NULL"},
    {SQUARE_PLUS_ONE, NULL, NULL, "entry is NULL"},
    {SQUARE_PLUS_ONE, "2fast", NULL, "entry '2fast' is not a C identifier"},
    {SQUARE_PLUS_ONE, "square plus", NULL, "entry 'square plus' is not a C identifier"},
    {SQUARE_PLUS_ONE, "", NULL, "entry '' is not a C identifier"},
    {SQUARE_PLUS_ONE, "a0123456789012345678901234567890123456789012345678901234567890123", NULL,
     "of at most 64 characters"},
    {SQUARE_PLUS_ONE, "square_plus_one", "sm_9", "arch 'sm_9' is not sm_NN or compute_NN"},
    {SQUARE_PLUS_ONE, "square_plus_one", "gfx90a", "arch 'gfx90a'"},
    {SQUARE_PLUS_ONE, "square_plus_one", "sm_90 -G", "arch 'sm_90 -G'"},
    /* at most 3 digits, then at most one lower-case letter: each bound by a real input */
    {SQUARE_PLUS_ONE, "square_plus_one", "sm_1000", "arch 'sm_1000' is not sm_NN or compute_NN"},
    {SQUARE_PLUS_ONE, "square_plus_one", "sm_90{", "arch 'sm_90{' is not sm_NN or compute_NN"},
    {SQUARE_PLUS_ONE, "square_plus_one", "sm_90ab", "arch 'sm_90ab' is not sm_NN or compute_NN"},
    {SQUARE_PLUS_ONE, "square_plus_one", "compute_9", "arch 'compute_9' is not sm_NN or compute_NN"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    uopc_error err = {0};
    char ptx[PATH_MAX];
    uopc_cuda_options opts = {.arch = cases[i].arch};
    int rc = uopc_cuda_compile(cases[i].source, cases[i].entry, &opts, ptx, sizeof ptx, &err);
    if (rc != UOPC_E_INVALID || !strstr(err.message, cases[i].says))
      fail_msg("case %zu: expected UOPC_E_INVALID saying \"%s\", got %s: %s", i, cases[i].says,
               uopc_error_name(rc), err.message);
  }
}

/* A program has 1 to UOPC_CUDA_KERNELS_MAX kernels, named in an array: any other count, or no
 * array, is refused before a driver or compiler is asked, GPU or not, and *out is NULL. */
static void test_cuda_program_new_kernels_rejects_a_count_outside_1_to_max(void **state) {
  (void)state;
  static const char *const entries[] = {"square_plus_one"};
  static const struct { const char *const *entries; int n; const char *says; } cases[] = {
    {entries, 0, "0 kernels named; a program has 1 to 1024"},
    {entries, -1, "-1 kernels named; a program has 1 to 1024"},
    {entries, UOPC_CUDA_KERNELS_MAX + 1, "1025 kernels named; a program has 1 to 1024"},
    {NULL, 1, "0 kernels named; a program has 1 to 1024"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    uopc_error err = {0};
    static char dummy;
    uopc_cuda_program *p = (uopc_cuda_program *)&dummy;  /* must come back NULL */
    int rc = uopc_cuda_program_new_kernels(&p, SQUARE_PLUS_ONE, cases[i].entries, cases[i].n, NULL, &err);
    if (rc != UOPC_E_INVALID || strcmp(err.message, cases[i].says) != 0)
      fail_msg("case %zu: expected UOPC_E_INVALID saying \"%s\", got %s: %s", i, cases[i].says,
               uopc_error_name(rc), err.message);
    assert_null(p);
  }
}

static void test_cuda_compile_reports_a_too_small_ptx_path_buffer(void **state) {
  uopc_error err = {0};
  char ptx[PATH_MAX];
  assert_uopc_ok(compile(forced(state), SQUARE_PLUS_ONE, "square_plus_one", NULL, ptx, &err), err);
  char small[16];
  uopc_cuda_options opts = {.force_nvcc = forced(state)};
  int rc = uopc_cuda_compile(SQUARE_PLUS_ONE, "square_plus_one", &opts, small, sizeof small, &err);
  assert_uopc_code(rc, UOPC_E_INVALID, err);
  assert_contains(err.message, "ptx_path_size 16 is too small");
}

/* A size of 0 has no room even for the NUL: refused in so many words before anything is looked
 * up or compiled, compiler or not, and the buffer is left alone. */
static void test_cuda_compile_ptx_path_size_0_is_refused_before_any_compile(void **state) {
  (void)state;
  uopc_error err = {0};
  char ptx[8] = "unset";
  int64_t inv = uopc_counter_get(UOPC_C_COMPILER_INVOCATIONS);
  int64_t misses = uopc_counter_get(UOPC_C_DISK_CACHE_MISSES), hits = uopc_counter_get(UOPC_C_DISK_CACHE_HITS);
  int rc = uopc_cuda_compile(SQUARE_PLUS_ONE, "square_plus_one", NULL, ptx, 0, &err);
  assert_uopc_code(rc, UOPC_E_INVALID, err);
  assert_string_equal(err.message, "ptx_path_size is 0");
  assert_string_equal(err.where, "uopc_cuda_compile");
  assert_string_equal(ptx, "unset");
  assert_int_equal(delta(UOPC_C_COMPILER_INVOCATIONS, inv), 0);
  assert_int_equal(delta(UOPC_C_DISK_CACHE_MISSES, misses), 0);
  assert_int_equal(delta(UOPC_C_DISK_CACHE_HITS, hits), 0);
}

/* A size of 1 is not 0: the PTX is built (here found in the cache), and then its path does not
 * fit, which the message says with the path's own size; the buffer holds the empty string. */
static void test_cuda_compile_ptx_path_size_1_builds_then_says_the_path_does_not_fit(void **state) {
  uopc_error err = {0};
  char ptx[PATH_MAX], want[2 * PATH_MAX], one[1] = {'x'};
  assert_uopc_ok(compile(forced(state), SQUARE_PLUS_ONE, "square_plus_one", NULL, ptx, &err), err);
  uopc_cuda_options opts = {.force_nvcc = forced(state)};
  int64_t hits = uopc_counter_get(UOPC_C_DISK_CACHE_HITS);
  int rc = uopc_cuda_compile(SQUARE_PLUS_ONE, "square_plus_one", &opts, one, sizeof one, &err);
  assert_uopc_code(rc, UOPC_E_INVALID, err);
  snprintf(want, sizeof want, "ptx_path_size 1 is too small for '%s' (%zu bytes)", ptx, strlen(ptx) + 1);
  assert_string_equal(err.message, want);
  assert_int_equal(one[0], '\0');
  assert_int_equal(delta(UOPC_C_DISK_CACHE_HITS, hits), 1);
}

/* The PTX's path is handed back as it is, also from a cache directory whose name holds '%':
 * the path is copied, never read as a format ("100%%" stays "100%%", not "100%"). */
static void test_cuda_compile_hands_back_a_path_with_percent_signs_as_it_is(void **state) {
  uopc_error err = {0};
  char dir[PATH_MAX], ptx[PATH_MAX], prefix[PATH_MAX + 2];
  assert_true((size_t)snprintf(dir, sizeof dir, "%s/100%%%%s%%%%d", testutil_cache_dir) < sizeof dir);
  assert_true(mkdir(dir, 0700) == 0 || errno == EEXIST);   /* made by the other compiler's run */
  uopc_cuda_options opts = {.force_nvcc = forced(state), .cache_dir = dir};
  int rc = uopc_cuda_compile(tagged("percent"), "square_plus_one", &opts, ptx, sizeof ptx, &err);
  if (rc == UOPC_E_NO_CUDA) {
    print_message("  skipped: %s\n", err.message);
    skip();
  }
  assert_uopc_ok(rc, err);
  snprintf(prefix, sizeof prefix, "%s/", dir);
  assert_memory_equal(ptx, prefix, strlen(prefix));
  assert_string_equal(ptx + strlen(ptx) - strlen("/kernel.ptx"), "/kernel.ptx");
  assert_true(file_exists(ptx));
}

/* The manifest says how the PTX was made: the target, then C++17, the one language option,
 * which both compilers are given. */
static void test_cuda_compile_manifest_records_the_target_and_cxx17(void **state) {
  uopc_error err = {0};
  char ptx[PATH_MAX], manifest[PATH_MAX];
  assert_uopc_ok(compile(forced(state), tagged("manifest flags"), "square_plus_one", "sm_80", ptx, &err), err);
  snprintf(manifest, sizeof manifest, "%.*s/manifest", (int)(strrchr(ptx, '/') - ptx), ptx);
  char *text = read_text(manifest);
  assert_non_null(text);
  assert_contains(text, "\nflags=-arch=compute_80 -std=c++17\n");
  free(text);
}

/* ---- without a GPU ---------------------------------------------------------- */

static void test_cuda_program_new_without_gpu_returns_no_cuda(void **state) {
  (void)state;
  require_no_gpu();
  uopc_error err = {0};
  static char dummy;
  uopc_cuda_program *p = (uopc_cuda_program *)&dummy;  /* must come back NULL */
  int rc = uopc_cuda_program_new(&p, SQUARE_PLUS_ONE, "square_plus_one", NULL, &err);
  assert_uopc_code(rc, UOPC_E_NO_CUDA, err);
  assert_null(p);
  assert_contains(err.message, "no CUDA device");
  unsigned long long dptr = 1;
  assert_uopc_code(uopc_cuda_alloc(&dptr, 64, &err), UOPC_E_NO_CUDA, err);
  assert_true(dptr == 0);
  uopc_cuda_program_free(NULL);   /* as free(NULL): nothing, GPU or not */
}

static void test_cuda_alloc_rejects_zero_bytes_and_null(void **state) {
  (void)state;
  uopc_error err = {0};
  unsigned long long dptr;
  assert_uopc_code(uopc_cuda_alloc(&dptr, 0, &err), UOPC_E_INVALID, err);
  assert_contains(err.message, "bytes = 0");
  assert_uopc_code(uopc_cuda_alloc(NULL, 64, &err), UOPC_E_INVALID, err);
  assert_uopc_code(uopc_cuda_launch(NULL, NULL, NULL, 0, NULL, &err), UOPC_E_INVALID, err);
  assert_uopc_ok(uopc_cuda_free(0, &err), err);  /* like free(NULL) */
}

/* Copying nothing is nothing, like memcpy of 0 bytes: no pointer is looked at
 * and no driver asked, GPU or not. One byte needs both pointers: either one NULL
 * is refused before any driver is asked. */
static void test_cuda_copy_of_zero_bytes_is_nothing(void **state) {
  (void)state;
  uopc_error err = {0};
  unsigned char byte = 7;
  assert_uopc_ok(uopc_cuda_copy_to_device(0, NULL, 0, &err), err);
  assert_uopc_ok(uopc_cuda_copy_to_device(0, &byte, 0, &err), err);
  assert_uopc_ok(uopc_cuda_copy_to_host(NULL, 0, 0, &err), err);
  assert_uopc_ok(uopc_cuda_copy_to_host(&byte, 0, 0, &err), err);
  assert_int_equal(byte, 7);
  assert_uopc_code(uopc_cuda_copy_to_device(0, &byte, 1, &err), UOPC_E_INVALID, err);
  assert_string_equal(err.message, "dst or src is NULL for 1 bytes");
  assert_uopc_code(uopc_cuda_copy_to_host(&byte, 0, 1, &err), UOPC_E_INVALID, err);
  assert_string_equal(err.message, "dst or src is NULL for 1 bytes");
  assert_uopc_code(uopc_cuda_copy_to_device(0x1000, NULL, 1, &err), UOPC_E_INVALID, err);
  assert_string_equal(err.message, "dst or src is NULL for 1 bytes");
  assert_uopc_code(uopc_cuda_copy_to_host(NULL, 0x1000, 1, &err), UOPC_E_INVALID, err);
  assert_string_equal(err.message, "dst or src is NULL for 1 bytes");
}

/* ---- on a GPU ---------------------------------------------------------------- */

enum { TAIL = 64, BLOCK = 256 };
static const uint32_t POISON = 0x7fbadbadu;  /* a NaN no kernel computes here */

typedef struct device_buffers {
  unsigned long long x, out, length;
} device_buffers;

static void upload(device_buffers *d, const float *x, const float *out, int n) {
  uopc_error err = {0};
  assert_uopc_ok(uopc_cuda_alloc(&d->x, (size_t)n * sizeof *x, &err), err);
  assert_uopc_ok(uopc_cuda_alloc(&d->out, (size_t)(n + TAIL) * sizeof *out, &err), err);
  assert_uopc_ok(uopc_cuda_alloc(&d->length, sizeof n, &err), err);
  assert_uopc_ok(uopc_cuda_copy_to_device(d->x, x, (size_t)n * sizeof *x, &err), err);
  assert_uopc_ok(uopc_cuda_copy_to_device(d->out, out, (size_t)(n + TAIL) * sizeof *out, &err), err);
  assert_uopc_ok(uopc_cuda_copy_to_device(d->length, &n, sizeof n, &err), err);
}

static void release(device_buffers *d) {
  uopc_error err = {0};
  assert_uopc_ok(uopc_cuda_free(d->x, &err), err);
  assert_uopc_ok(uopc_cuda_free(d->out, &err), err);
  assert_uopc_ok(uopc_cuda_free(d->length, &err), err);
}

/* x = k / 4 with |k| <= 400: x * x + 1 is exact in float, fused or not, so
 * the device must match the host bit for bit. */
static void check_outputs(int n, const float *x, const float *out) {
  for (int i = 0; i < n; i++)
    if (out[i] != x[i] * x[i] + 1.0f)
      fail_msg("length %d: out[%d] = %g, expected %g (x = %g)", n, i, out[i], x[i] * x[i] + 1.0f, x[i]);
  for (int i = n; i < n + TAIL; i++)
    if (memcmp(&out[i], &POISON, sizeof POISON) != 0)
      fail_msg("length %d: out[%d] = %g was written past the end", n, i, out[i]);
}

static void launch_square_plus_one(uopc_cuda_program *p, int n) {
  float *x = malloc((size_t)n * sizeof *x), *out = malloc((size_t)(n + TAIL) * sizeof *out);
  assert_true(x && out);
  for (int i = 0; i < n; i++) x[i] = (float)(i % 801 - 400) * 0.25f;
  for (int i = 0; i < n + TAIL; i++) memcpy(&out[i], &POISON, sizeof POISON);
  device_buffers d;
  upload(&d, x, out, n);
  uopc_error err = {0};
  unsigned grid[3] = {(unsigned)(n + BLOCK - 1) / BLOCK, 1, 1}, block[3] = {BLOCK, 1, 1};
  void *args[] = {&d.x, &d.out, &d.length};
  assert_uopc_ok(uopc_cuda_launch(p, grid, block, 0, args, &err), err);
  assert_uopc_ok(uopc_cuda_copy_to_host(out, d.out, (size_t)(n + TAIL) * sizeof *out, &err), err);
  release(&d);
  check_outputs(n, x, out);
  free(x);
  free(out);
}

static void test_cuda_launch_square_plus_one_matches_host_and_stays_in_bounds(void **state) {
  require_gpu();
  static const int lengths[] = {1, 7, 31, 64, 100000};
  uopc_error err = {0};
  uopc_cuda_program *p;
  uopc_cuda_options opts = {.force_nvcc = forced(state)};
  int64_t built = uopc_counter_get(UOPC_C_PROGRAMS_CONSTRUCTED);
  int64_t calls = uopc_counter_get("calls square_plus_one");
  assert_uopc_ok(uopc_cuda_program_new(&p, SQUARE_PLUS_ONE, "square_plus_one", &opts, &err), err);
  for (size_t i = 0; i < sizeof lengths / sizeof *lengths; i++) launch_square_plus_one(p, lengths[i]);
  uopc_cuda_program_free(p);
  assert_int_equal(delta(UOPC_C_PROGRAMS_CONSTRUCTED, built), 1);
  assert_int_equal(delta("calls square_plus_one", calls), 5);
}

static void test_cuda_launch_rejects_an_oversized_block_with_the_driver_message(void **state) {
  (void)state;
  require_gpu();
  uopc_error err = {0};
  uopc_cuda_program *p;
  assert_uopc_ok(uopc_cuda_program_new(&p, SQUARE_PLUS_ONE, "square_plus_one", NULL, &err), err);
  unsigned grid[3] = {1, 1, 1}, block[3] = {4096, 1, 1};
  unsigned long long none = 0;
  void *args[] = {&none, &none, &none};
  int rc = uopc_cuda_launch(p, grid, block, 0, args, &err);
  uopc_cuda_program_free(p);
  assert_uopc_code(rc, UOPC_E_CUDA, err);
  assert_contains(err.message, "cuLaunchKernel(square_plus_one) failed: CUDA_ERROR_INVALID_VALUE");
  assert_contains(err.message, "block 4096x1x1");
}

static void test_cuda_memory_round_trips_bytes(void **state) {
  (void)state;
  require_gpu();
  uopc_error err = {0};
  unsigned char in[1000], out[1000] = {0};
  for (size_t i = 0; i < sizeof in; i++) in[i] = (unsigned char)(i * 7 + 3);
  unsigned long long d;
  assert_uopc_ok(uopc_cuda_alloc(&d, sizeof in, &err), err);
  assert_uopc_ok(uopc_cuda_copy_to_device(d, in, sizeof in, &err), err);
  assert_uopc_ok(uopc_cuda_copy_to_host(out, d, sizeof out, &err), err);
  assert_uopc_ok(uopc_cuda_free(d, &err), err);
  assert_memory_equal(in, out, sizeof in);
}

/* ---- a fake driver ---------------------------------------------------------
 * The driver's paths on a machine without a GPU: a libcuda.so.1 of our own,
 * of CUDA 12.8, whose device has compute capability 8.0, whose modules are
 * counted and whose "device memory" is 64 bytes of its own. It is
 * opened by path in a fresh process (the driver is opened once per process)
 * before the runtime asks for "libcuda.so.1", which the loader then answers
 * with the library of that soname already loaded. */
#define FAKE_DRIVER_ENV "UOPC_TEST_FAKE_DRIVER"

static const char FAKE_DRIVER[] =
    "#include <stdlib.h>\n"
    "#include <string.h>\n"
    "#include <unistd.h>\n"
    "typedef int CUresult;\n"
    "int fake_loads, fake_unloads;\n"
    "char fake_evict[4096];  /* a path cuModuleGetFunction removes (then fails), once */\n"
    "unsigned char fake_memory[64];  /* what cuMemcpyHtoD wrote, for cuMemcpyDtoH */\n"
    "unsigned long long fake_htod_dst;  /* the last cuMemcpyHtoD's device address */\n"
    "char fake_function[64];  /* the last name cuModuleGetFunction was asked for */\n"
    "unsigned fake_launch[7];  /* the last launch's grid, block and shared bytes */\n"
    "CUresult fake_sync_result;  /* what cuCtxSynchronize answers (a fault in the kernel) */\n"
    "static int ctx, mod, fn;\n"
    "#define FAILS(step) { const char *f_ = getenv(\"UOPC_TEST_FAKE_FAILS\"); if (f_ && !strcmp(f_, step)) return 35; }\n"
    "CUresult cuInit(unsigned f) { FAILS(\"cuInit\"); return f ? 1 : 0; }  /* flags must be 0: CUDA_ERROR_INVALID_VALUE */\n"
    "CUresult cuDriverGetVersion(int *v) { *v = 12080; return 0; }\n"
    "CUresult cuDeviceGetCount(int *n) {\n"
    "  FAILS(\"cuDeviceGetCount\"); if (getenv(\"UOPC_TEST_FAKE_COUNT_UNWRITTEN\")) return 0;  /* success, and no count written */\n"
    "  *n = getenv(\"UOPC_TEST_FAKE_NO_DEVICE\") ? 0 : 1; return 0;\n"
    "}\n"
    "CUresult cuDeviceGet(int *d, int i) { FAILS(\"cuDeviceGet\"); *d = i; return 0; }\n"
    "CUresult cuDeviceGetAttribute(int *v, int a, int d) {\n"
    "  (void)d; if (getenv(\"UOPC_TEST_FAKE_ATTRIBUTE_FAILS\")) return 34;  /* CUDA_ERROR_STUB_LIBRARY */\n"
    "  if (a == 76) FAILS(\"cuDeviceGetAttribute(minor)\"); *v = a == 75 ? 8 : 0; return 0;\n"
    "}\n"
    "CUresult cuDevicePrimaryCtxRetain(void **c, int d) { (void)d; FAILS(\"cuDevicePrimaryCtxRetain\"); *c = &ctx; return 0; }\n"
    "CUresult cuCtxSetCurrent(void *c) { FAILS(\"cuCtxSetCurrent\"); return c == &ctx ? 0 : 201; }\n"
    "CUresult cuCtxSynchronize(void) { return fake_sync_result; }\n"
    "CUresult cuModuleLoadDataEx(void **m, const void *i, unsigned n, int *o, void **v) {\n"
    "  (void)n; (void)o;\n"
    "  if (strstr(i, \"too_new\")) return 222;  /* CUDA_ERROR_UNSUPPORTED_PTX_VERSION */\n"
    "  if (strstr(i, \"long_log\")) {  /* a log longer than its buffer, cut there as a driver does */\n"
    "    size_t size = (size_t)v[1]; memset(v[0], 'L', size - 1); ((char *)v[0])[size - 1] = 0;\n"
    "    return 218;  /* CUDA_ERROR_INVALID_PTX */\n"
    "  }\n"
    "  fake_loads++; *m = &mod; return 0;\n"
    "}\n"
    "CUresult cuModuleUnload(void *m) { if (m == &mod) fake_unloads++; return 0; }\n"
    "CUresult cuModuleGetFunction(void **f, void *m, const char *s) {\n"
    "  (void)m; strncpy(fake_function, s, sizeof fake_function - 1);\n"
    "  if (*fake_evict) { unlink(fake_evict); *fake_evict = 0; return 1; }\n"
    "  if (!strcmp(s, \"not_found\")) return 500;  /* CUDA_ERROR_NOT_FOUND */\n"
    "  *f = &fn; return 0;\n"
    "}\n"
    "CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,\n"
    "                        unsigned bz, unsigned shared, void *stream, void **args, void **extra) {\n"
    "  (void)stream; (void)args; (void)extra;\n"
    "  if (f != &fn) return 400;  /* CUDA_ERROR_INVALID_HANDLE: not a function this driver gave */\n"
    "  if (!gx) return 1;  /* CUDA_ERROR_INVALID_VALUE: an empty grid */\n"
    "  unsigned got[7] = {gx, gy, gz, bx, by, bz, shared};\n"
    "  for (int i = 0; i < 7; i++) fake_launch[i] = got[i];\n"
    "  return 0;\n"
    "}\n"
    "CUresult cuMemAlloc_v2(unsigned long long *d, size_t n) {  /* 96 bytes at 0xd000, else */\n"
    "  if (n != 96) return 2;  /* CUDA_ERROR_OUT_OF_MEMORY */\n"
    "  *d = 0xd000; return 0;\n"
    "}\n"
    "CUresult cuMemFree_v2(unsigned long long d) { return d == 0x999 ? 999 : 0; }  /* 999: no such code */\n"
    "CUresult cuMemcpyHtoD_v2(unsigned long long d, const void *s, size_t n) {\n"
    "  if (n > sizeof fake_memory) return 1;\n"
    "  fake_htod_dst = d; memcpy(fake_memory, s, n); return 0;\n"
    "}\n"
    "CUresult cuMemcpyDtoH_v2(void *d, unsigned long long s, size_t n) {\n"
    "  (void)s; if (n > sizeof fake_memory) return 1;\n"
    "  memcpy(d, fake_memory, n); return 0;\n"
    "}\n"
    /* as a driver does for a code it does not know (and the stub for its own): CUDA_ERROR_INVALID_VALUE,
     * *s untouched */
    "static int unknown(CUresult r) { return r == 34 || r == 999; }\n"
    "CUresult cuGetErrorName(CUresult r, const char **s) { if (unknown(r)) return 1; *s = \"FAKE\"; return 0; }\n"
    "CUresult cuGetErrorString(CUresult r, const char **s) { if (unknown(r) || r == 35) return 1; *s = \"fake\"; return 0; }\n"
    /* NVRTC opens libcuda.so.1 too, and asks it for this table: none here */
    "CUresult cuGetExportTable(const void **t, const void *id) { (void)id; *t = 0; return 500; }\n";

static void *fake_driver;

/* With a device to ask, a compile without an arch targets the device's. */
static void test_fake_driver_compile_targets_the_devices_arch(void **state) {
  (void)state;
  uopc_error err = {0};
  char ptx[PATH_MAX];
  assert_uopc_ok(uopc_cuda_available(&err), err);
  assert_uopc_ok(uopc_cuda_compile(tagged("fake driver"), "square_plus_one", NULL, ptx, sizeof ptx, &err), err);
  char *text = read_text(ptx);
  assert_non_null(text);
  if (!strstr(text, ".target sm_80\n")) fail_msg("a device of compute capability 8.0: expected \".target sm_80\" in %s", ptx);
  free(text);
}

/* A program loads its module once, and freeing it unloads the module. */
static void test_fake_driver_program_free_unloads_its_module(void **state) {
  (void)state;
  uopc_error err = {0};
  uopc_cuda_program *p = NULL;
  int *loads = dlsym(fake_driver, "fake_loads"), *unloads = dlsym(fake_driver, "fake_unloads");
  assert_non_null(loads);
  assert_non_null(unloads);
  char *function = dlsym(fake_driver, "fake_function");
  assert_non_null(function);
  assert_uopc_ok(uopc_cuda_program_new(&p, SQUARE_PLUS_ONE, "square_plus_one", NULL, &err), err);
  assert_string_equal(function, "square_plus_one");  /* the kernel was looked up at load */
  assert_int_equal(*loads, 1);
  assert_int_equal(*unloads, 0);
  uopc_cuda_program_free(p);
  assert_int_equal(*unloads, 1);
}

/* A launch hands the driver the grid, block and shared bytes as given, in order, and runs kernel 0;
 * a kernel index past the program's kernels, or a NULL program, grid or block, is refused before
 * the driver is asked. */
static void test_fake_driver_launch_passes_the_shape_through(void **state) {
  (void)state;
  uopc_error err = {0};
  uopc_cuda_program *p = NULL;
  unsigned *launch = dlsym(fake_driver, "fake_launch");
  assert_non_null(launch);
  assert_uopc_ok(uopc_cuda_program_new(&p, SQUARE_PLUS_ONE, "square_plus_one", NULL, &err), err);
  int64_t calls = uopc_counter_get("calls square_plus_one");
  unsigned grid[3] = {2, 3, 5}, block[3] = {7, 11, 13};
  unsigned long long none = 0;
  void *args[] = {&none, &none, &none};
  assert_uopc_ok(uopc_cuda_launch(p, grid, block, 17, args, &err), err);
  static const unsigned want[7] = {2, 3, 5, 7, 11, 13, 17};
  for (int i = 0; i < 7; i++)
    if (launch[i] != want[i]) fail_msg("launch argument %d: %u, expected %u", i, launch[i], want[i]);
  assert_int_equal(delta("calls square_plus_one", calls), 1);
  memset(launch, 0, 7 * sizeof *launch);
  assert_uopc_code(uopc_cuda_launch_kernel(p, 1, grid, block, 17, args, &err), UOPC_E_INVALID, err);
  assert_string_equal(err.message, "kernel 1 of a program of 1");
  assert_uopc_code(uopc_cuda_launch_kernel(p, -1, grid, block, 17, args, &err), UOPC_E_INVALID, err);
  assert_string_equal(err.message, "kernel -1 of a program of 1");
  /* a NULL program, grid or block, each alone, is refused before anything is read through it */
  assert_uopc_code(uopc_cuda_launch(NULL, grid, block, 17, args, &err), UOPC_E_INVALID, err);
  assert_string_equal(err.message, "program, grid or block is NULL");
  assert_uopc_code(uopc_cuda_launch(p, NULL, block, 17, args, &err), UOPC_E_INVALID, err);
  assert_string_equal(err.message, "program, grid or block is NULL");
  assert_uopc_code(uopc_cuda_launch(p, grid, NULL, 17, args, &err), UOPC_E_INVALID, err);
  assert_string_equal(err.message, "program, grid or block is NULL");
  assert_int_equal(launch[0], 0);  /* the driver was not asked */
  assert_int_equal(delta("calls square_plus_one", calls), 1);
  uopc_cuda_program_free(p);
}

/* Entry evicted between the build and the load: the module loaded before the
 * kernel lookup failed is unloaded before the one built again is loaded. */
static void test_fake_driver_reload_after_an_eviction_unloads_the_first_module(void **state) {
  (void)state;
  uopc_error err = {0};
  uopc_cuda_program *p = NULL;
  char ptx[PATH_MAX];
  int *loads = dlsym(fake_driver, "fake_loads"), *unloads = dlsym(fake_driver, "fake_unloads");
  char *evict = dlsym(fake_driver, "fake_evict");
  assert_true(loads && unloads && evict);
  /* the entry the program will load: the same source, entry and (device) arch */
  assert_uopc_ok(uopc_cuda_compile(tagged("evicted"), "square_plus_one", NULL, ptx, sizeof ptx, &err), err);
  snprintf(evict, 4096, "%s", ptx);
  int loads0 = *loads, unloads0 = *unloads;
  assert_uopc_ok(uopc_cuda_program_new(&p, tagged("evicted"), "square_plus_one", NULL, &err), err);
  assert_string_equal(evict, "");  /* the fake did evict it */
  assert_true(file_exists(ptx));   /* built again */
  assert_int_equal(*loads - loads0, 2);
  assert_int_equal(*unloads - unloads0, 1);
  uopc_cuda_program_free(p);
  assert_int_equal(*unloads - unloads0, 2);
}

/* A kernel named entry, which the fake driver refuses to load (UOPC_E_CUDA, no program); *err says why. */
static void fake_load_fails(const char *entry, uopc_error *err) {
  char source[128];
  snprintf(source, sizeof source, "extern \"C\" __global__ void %s() {}\n", entry);
  uopc_cuda_program *p = NULL;
  assert_uopc_code(uopc_cuda_program_new(&p, source, entry, NULL, err), UOPC_E_CUDA, *err);
  assert_null(p);
}

/* PTX the driver is too old for: the message names the driver's CUDA version (12080 is 12.8). */
static void test_fake_driver_ptx_newer_than_the_driver_says_to_update_it(void **state) {
  (void)state;
  uopc_error err = {0};
  fake_load_fails("too_new", &err);
  assert_contains(err.message, "failed: FAKE (fake): the driver (CUDA 12.8) is older than the compiler "
                               "that wrote it; update the driver");
}

/* A failed load's message ends with the driver's error log, which the runtime gives 1 KiB: a longer
 * log is cut to its first 1023 bytes. */
static void test_fake_driver_load_failure_gives_the_drivers_log_cut_at_1023_bytes(void **state) {
  (void)state;
  uopc_error err = {0};
  fake_load_fails("long_log", &err);
  const char *log = strstr(err.message, ") failed: FAKE (fake): ");
  if (!log) fail_msg("no driver error in '%s'", err.message);
  log += strlen(") failed: FAKE (fake): ");
  assert_int_equal(strspn(log, "L"), 1023);
  assert_int_equal(strlen(log), 1023);
}

/* Copies reach the driver: bytes to the device address given, and back. */
static void test_fake_driver_copies_hand_the_bytes_to_the_driver(void **state) {
  (void)state;
  uopc_error err = {0};
  unsigned char *memory = dlsym(fake_driver, "fake_memory");
  unsigned long long *dst = dlsym(fake_driver, "fake_htod_dst");
  assert_true(memory && dst);
  const unsigned char in[8] = {1, 2, 3, 5, 8, 13, 21, 34};
  unsigned char out[8] = {0};
  assert_uopc_ok(uopc_cuda_copy_to_device(0x1000, in, sizeof in, &err), err);
  assert_true(*dst == 0x1000);
  assert_memory_equal(memory, in, sizeof in);
  assert_uopc_ok(uopc_cuda_copy_to_host(out, 0x1000, sizeof out, &err), err);
  assert_memory_equal(out, in, sizeof in);
  /* past the fake's 64 bytes, each copy fails with the driver's code, named */
  unsigned char big[65] = {0};
  assert_uopc_code(uopc_cuda_copy_to_device(0x1000, big, sizeof big, &err), UOPC_E_CUDA, err);
  assert_string_equal(err.message, "cuMemcpyHtoD(0x1000, 65 bytes) failed: FAKE (fake)");
  assert_uopc_code(uopc_cuda_copy_to_host(big, 0x2000, sizeof big, &err), UOPC_E_CUDA, err);
  assert_string_equal(err.message, "cuMemcpyDtoH(0x2000, 65 bytes) failed: FAKE (fake)");
}

/* A kernel the module does not have (CUDA_ERROR_NOT_FOUND) says how to declare one it would
 * find; the module loaded for the lookup is unloaded with the program that failed. */
static void test_fake_driver_kernel_not_in_the_module_says_to_declare_it_extern_c(void **state) {
  (void)state;
  uopc_error err = {0};
  int *loads = dlsym(fake_driver, "fake_loads"), *unloads = dlsym(fake_driver, "fake_unloads");
  assert_true(loads && unloads);
  int loads0 = *loads, unloads0 = *unloads;
  fake_load_fails("not_found", &err);
  assert_string_equal(err.message, "cuModuleGetFunction(not_found) failed: FAKE (fake); declare it "
                                   "extern \"C\" __global__");
  assert_int_equal(*loads - loads0, 1);
  assert_int_equal(*unloads - unloads0, 1);
}

/* A launch the driver refuses names the kernel, the driver's words and the shape, and counts no call;
 * a fault in the kernel surfaces at the synchronize, after the launch (counted) went through. */
static void test_fake_driver_launch_and_synchronize_failures_say_which(void **state) {
  (void)state;
  uopc_error err = {0};
  uopc_cuda_program *p = NULL;
  int *sync = dlsym(fake_driver, "fake_sync_result");
  assert_non_null(sync);
  assert_uopc_ok(uopc_cuda_program_new(&p, SQUARE_PLUS_ONE, "square_plus_one", NULL, &err), err);
  int64_t calls = uopc_counter_get("calls square_plus_one");
  unsigned empty[3] = {0, 1, 1}, grid[3] = {2, 3, 5}, block[3] = {7, 11, 13};
  unsigned long long none = 0;
  void *args[] = {&none, &none, &none};
  assert_uopc_code(uopc_cuda_launch(p, empty, block, 17, args, &err), UOPC_E_CUDA, err);
  assert_string_equal(err.message, "cuLaunchKernel(square_plus_one) failed: FAKE (fake) (grid 0x1x1, "
                                   "block 7x11x13, 17 shared bytes)");
  assert_int_equal(delta("calls square_plus_one", calls), 0);
  *sync = 700;  /* CUDA_ERROR_ILLEGAL_ADDRESS */
  int rc = uopc_cuda_launch(p, grid, block, 17, args, &err);
  *sync = 0;
  assert_uopc_code(rc, UOPC_E_CUDA, err);
  assert_string_equal(err.message, "square_plus_one failed on the device: cuCtxSynchronize: FAKE (fake)");
  assert_int_equal(delta("calls square_plus_one", calls), 1);
  assert_uopc_ok(uopc_cuda_launch(p, grid, block, 17, args, &err), err);
  assert_int_equal(delta("calls square_plus_one", calls), 2);
  uopc_cuda_program_free(p);
}

/* Device memory the driver refuses: the request and the driver's words; a code the driver cannot
 * name (999) is given as a number. An allocation that failed leaves *dptr 0. */
static void test_fake_driver_alloc_and_free_failures_give_the_drivers_code(void **state) {
  (void)state;
  uopc_error err = {0};
  unsigned long long dptr = 1;
  assert_uopc_code(uopc_cuda_alloc(&dptr, 64, &err), UOPC_E_CUDA, err);
  assert_string_equal(err.message, "cuMemAlloc(64 bytes) failed: FAKE (fake)");
  assert_true(dptr == 0);
  assert_uopc_ok(uopc_cuda_free(0x1000, &err), err);
  assert_uopc_code(uopc_cuda_free(0x999, &err), UOPC_E_CUDA, err);
  assert_string_equal(err.message, "cuMemFree(0x999) failed: CUresult 999");
}

/* Device memory the driver gives: OK, and *dptr is the driver's address. */
static void test_fake_driver_alloc_gives_the_drivers_address(void **state) {
  (void)state;
  uopc_error err = {0};
  unsigned long long dptr = 1;
  assert_uopc_ok(uopc_cuda_alloc(&dptr, 96, &err), err);
  assert_true(dptr == 0xd000);
  assert_uopc_ok(uopc_cuda_free(dptr, &err), err);
}

/* A whole cache entry whose PTX is empty (its manifest says 0 bytes, with the hash of none) is no
 * PTX to load: UOPC_E_IO naming the file, and the driver is not asked. The manifest's first value
 * of a name is the one read, so two lines put first stand for the entry's real size and hash. */
static void test_fake_driver_empty_ptx_in_the_cache_is_refused_before_the_driver(void **state) {
  (void)state;
  uopc_error err = {0};
  char ptx[PATH_MAX], manifest[PATH_MAX + 16], want[PATH_MAX + 64];
  int *loads = dlsym(fake_driver, "fake_loads");
  assert_non_null(loads);
  assert_uopc_ok(uopc_cuda_compile(tagged("emptied"), "square_plus_one", NULL, ptx, sizeof ptx, &err), err);
  snprintf(manifest, sizeof manifest, "%.*s/manifest", (int)(strrchr(ptx, '/') - ptx), ptx);
  char *text = read_text(manifest);
  assert_non_null(text);
  chmod(manifest, 0600);
  chmod(ptx, 0600);
  FILE *f = fopen(manifest, "w");
  assert_non_null(f);
  fprintf(f, "artifact_size=0\nartifact_sha256=%s\n%s",
          "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", text);
  assert_int_equal(fclose(f), 0);
  free(text);
  assert_int_equal(truncate(ptx, 0), 0);
  int loads0 = *loads;
  uopc_cuda_program *p = NULL;
  assert_uopc_code(uopc_cuda_program_new(&p, tagged("emptied"), "square_plus_one", NULL, &err), UOPC_E_IO, err);
  assert_null(p);
  snprintf(want, sizeof want, "cannot read '%s' (empty or unreadable)", ptx);
  assert_string_equal(err.message, want);
  assert_int_equal(*loads, loads0);
}

/* A driver that loads but sees no device: unavailable, saying so, and no program. A count the
 * driver did not write (UOPC_TEST_FAKE_COUNT_UNWRITTEN) is none too. */
static void test_fake_driver_without_a_device_is_no_cuda(void **state) {
  (void)state;
  uopc_error err = {0};
  uopc_cuda_program *p = NULL;
  assert_uopc_code(uopc_cuda_available(&err), UOPC_E_NO_CUDA, err);
  assert_string_equal(err.message, "no CUDA device: the driver sees none");
  assert_uopc_code(uopc_cuda_program_new(&p, SQUARE_PLUS_ONE, "square_plus_one", NULL, &err), UOPC_E_NO_CUDA, err);
  assert_null(p);
  /* every call that needs the driver says the same, and touches nothing */
  unsigned char bytes[4] = {0};
  assert_uopc_code(uopc_cuda_free(0x1000, &err), UOPC_E_NO_CUDA, err);
  assert_string_equal(err.message, "no CUDA device: the driver sees none");
  assert_uopc_code(uopc_cuda_copy_to_device(0x1000, bytes, sizeof bytes, &err), UOPC_E_NO_CUDA, err);
  assert_string_equal(err.message, "no CUDA device: the driver sees none");
  assert_uopc_code(uopc_cuda_copy_to_host(bytes, 0x1000, sizeof bytes, &err), UOPC_E_NO_CUDA, err);
  assert_string_equal(err.message, "no CUDA device: the driver sees none");
}

/* A driver whose step $UOPC_TEST_FAKE_FAILS fails (code 35, which the fake names FAKE but cannot
 * describe): no device, the message naming the step; a failing cuCtxSetCurrent comes later, on use. */
static void test_fake_driver_failing_step_is_named(void **state) {
  (void)state;
  static const struct { const char *fails, *step; } steps[] = {
    {"cuInit", "cuInit"}, {"cuDeviceGetCount", "cuDeviceGetCount"}, {"cuDeviceGet", "cuDeviceGet(0)"},
    {"cuDeviceGetAttribute(minor)", "cuDeviceGetAttribute(compute capability)"},
    {"cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRetain"},
  };
  const char *fails = getenv("UOPC_TEST_FAKE_FAILS");
  uopc_error err = {0};
  unsigned long long dptr = 1;
  if (!strcmp(fails, "cuCtxSetCurrent")) {
    assert_uopc_code(uopc_cuda_alloc(&dptr, 96, &err), UOPC_E_CUDA, err);
    assert_string_equal(err.message, "cuCtxSetCurrent failed: FAKE (no description)");
    assert_true(dptr == 0);
    return;
  }
  for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
    if (strcmp(fails, steps[i].fails)) continue;
    char want[256];
    snprintf(want, sizeof want, "no CUDA device: %s failed: FAKE (no description)", steps[i].step);
    assert_uopc_code(uopc_cuda_alloc(&dptr, 96, &err), UOPC_E_NO_CUDA, err);
    assert_string_equal(err.message, want);
    return;
  }
  fail_msg("no step '%s' in the test's table", fails);
}

/* A driver without one of the functions the runtime calls (here cuGetErrorString) is too old. */
static void test_fake_driver_lacking_a_function_is_no_cuda_naming_it(void **state) {
  (void)state;
  uopc_error err = {0};
  assert_uopc_code(uopc_cuda_available(&err), UOPC_E_NO_CUDA, err);
  assert_string_equal(err.message,
                      "no CUDA device: libcuda.so.1 lacks cuGetErrorString (the NVIDIA driver is too old)");
}

/* A driver whose device cannot tell its compute capability is no device: the message names the
 * step, and the code the driver cannot name (the link stub's, 34) is explained. */
static void test_fake_driver_failing_to_give_the_compute_capability_is_no_cuda(void **state) {
  (void)state;
  uopc_error err = {0};
  assert_uopc_code(uopc_cuda_available(&err), UOPC_E_NO_CUDA, err);
  assert_string_equal(err.message, "no CUDA device: cuDeviceGetAttribute(compute capability) failed: "
                                   "CUDA_ERROR_STUB_LIBRARY (libcuda.so.1 is the toolkit's link stub, not a "
                                   "driver: take lib64/stubs off LD_LIBRARY_PATH)");
  unsigned long long dptr = 1;
  assert_uopc_code(uopc_cuda_alloc(&dptr, 64, &err), UOPC_E_NO_CUDA, err);
  assert_true(dptr == 0);
}

/* The fresh process's part: the fake driver is loaded first. */
static int run_on_fake_driver(const char *path) {
  fake_driver = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!fake_driver) {
    fprintf(stderr, "cannot open the fake driver '%s': %s\n", path, dlerror());
    return 1;
  }
  if (getenv("UOPC_TEST_FAKE_FAILS")) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_fake_driver_failing_step_is_named)};
    return cmocka_run_group_tests_name("on a fake driver with a failing step", tests, NULL, NULL);
  }
  if (getenv("UOPC_TEST_FAKE_LACKS_A_FUNCTION")) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_fake_driver_lacking_a_function_is_no_cuda_naming_it)};
    return cmocka_run_group_tests_name("on a fake driver lacking a function", tests, NULL, NULL);
  }
  if (getenv("UOPC_TEST_FAKE_ATTRIBUTE_FAILS")) {
    const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fake_driver_failing_to_give_the_compute_capability_is_no_cuda)};
    return cmocka_run_group_tests_name("on a fake driver without a compute capability", tests, NULL, NULL);
  }
  if (getenv("UOPC_TEST_FAKE_NO_DEVICE") || getenv("UOPC_TEST_FAKE_COUNT_UNWRITTEN")) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_fake_driver_without_a_device_is_no_cuda)};
    return cmocka_run_group_tests_name("on a fake driver without a device", tests, NULL, NULL);
  }
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_fake_driver_compile_targets_the_devices_arch),
    cmocka_unit_test(test_fake_driver_program_free_unloads_its_module),
    cmocka_unit_test(test_fake_driver_launch_passes_the_shape_through),
    cmocka_unit_test(test_fake_driver_reload_after_an_eviction_unloads_the_first_module),
    cmocka_unit_test(test_fake_driver_ptx_newer_than_the_driver_says_to_update_it),
    cmocka_unit_test(test_fake_driver_load_failure_gives_the_drivers_log_cut_at_1023_bytes),
    cmocka_unit_test(test_fake_driver_copies_hand_the_bytes_to_the_driver),
    cmocka_unit_test(test_fake_driver_kernel_not_in_the_module_says_to_declare_it_extern_c),
    cmocka_unit_test(test_fake_driver_launch_and_synchronize_failures_say_which),
    cmocka_unit_test(test_fake_driver_alloc_and_free_failures_give_the_drivers_code),
    cmocka_unit_test(test_fake_driver_alloc_gives_the_drivers_address),
    cmocka_unit_test(test_fake_driver_empty_ptx_in_the_cache_is_refused_before_the_driver),
  };
  return cmocka_run_group_tests_name("on a fake driver", tests, NULL, NULL);
}

static void run_on_a_fake(const char *source_text, const char *soname, const char *env, const char *also);
static void build_library(const char *dir, const char *file, const char *soname, const char *source_text);

/* Runs this binary again with name1=value1 (and name2=value2 unless NULL) in its environment. */
static void rerun_with(const char *what, const char *name1, const char *value1, const char *name2,
                       const char *value2) {
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    setenv(name1, value1, 1);
    if (name2) setenv(name2, value2, 1);
    execl("/proc/self/exe", "test_cuda", (char *)NULL);
    _exit(127);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    fail_msg("the run with %s failed (status %d; its output is above)", what, status);
}

/* Builds the fake driver, then runs this binary again with it. */
static void test_cuda_driver_paths_on_a_fake_driver(void **state) {
  (void)state;
  uopc_error err = {0};
  if (uopc_cuda_compiler_available(&err) != UOPC_OK) {
    print_message("  skipped: %s\n", err.message);
    skip();
  }
  run_on_a_fake(FAKE_DRIVER, "libcuda.so.1", FAKE_DRIVER_ENV, NULL);
}

static void test_cuda_driver_without_a_device_on_a_fake_driver(void **state) {
  (void)state;
  run_on_a_fake(FAKE_DRIVER, "libcuda.so.1", FAKE_DRIVER_ENV, "UOPC_TEST_FAKE_NO_DEVICE");
}

static void test_cuda_driver_that_writes_no_device_count_on_a_fake_driver_sees_none(void **state) {
  (void)state;
  run_on_a_fake(FAKE_DRIVER, "libcuda.so.1", FAKE_DRIVER_ENV, "UOPC_TEST_FAKE_COUNT_UNWRITTEN");
}

static void test_cuda_driver_without_a_compute_capability_on_a_fake_driver_is_refused(void **state) {
  (void)state;
  run_on_a_fake(FAKE_DRIVER, "libcuda.so.1", FAKE_DRIVER_ENV, "UOPC_TEST_FAKE_ATTRIBUTE_FAILS");
}

/* The fake driver, built once, with each step of opening it failing in turn, each in a process of its own. */
static void test_cuda_driver_steps_failing_on_a_fake_driver_are_named(void **state) {
  (void)state;
  static const char *const fails[] = {"cuInit", "cuDeviceGetCount", "cuDeviceGet", "cuDeviceGetAttribute(minor)",
                                      "cuDevicePrimaryCtxRetain", "cuCtxSetCurrent"};
  char dir[PATH_MAX + 16], lib[PATH_MAX + 64];
  snprintf(dir, sizeof dir, "%s/lib64", testutil_cache_dir);
  snprintf(lib, sizeof lib, "%s/libcuda.so.1", dir);
  build_library(dir, "libcuda.so.1", "libcuda.so.1", FAKE_DRIVER);
  for (size_t i = 0; i < sizeof fails / sizeof *fails; i++)
    rerun_with(fails[i], FAKE_DRIVER_ENV, lib, "UOPC_TEST_FAKE_FAILS", fails[i]);
}

/* A libcuda.so.1 that is found but is no library (here: a text file first on LD_LIBRARY_PATH) is no
 * device, and the loader's reason is given, not "not found". */
#define BROKEN_DRIVER_ENV "UOPC_TEST_BROKEN_DRIVER"

static void test_broken_driver_says_the_loaders_reason(void **state) {
  (void)state;
  uopc_error err = {0};
  char want[PATH_MAX + 128];
  snprintf(want, sizeof want, "no CUDA device: libcuda.so.1 cannot be loaded: %s/libcuda.so.1: ",
           getenv(BROKEN_DRIVER_ENV));
  assert_uopc_code(uopc_cuda_available(&err), UOPC_E_NO_CUDA, err);
  if (strncmp(err.message, want, strlen(want)) != 0) fail_msg("expected \"%s...\", got \"%s\"", want, err.message);
}

static int run_on_broken_driver(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_broken_driver_says_the_loaders_reason)};
  return cmocka_run_group_tests_name("on a libcuda.so.1 that is no library", tests, NULL, NULL);
}

static void test_cuda_driver_that_is_no_library_gives_the_loaders_reason(void **state) {
  (void)state;
  char dir[PATH_MAX + 16], lib[PATH_MAX + 64];
  snprintf(dir, sizeof dir, "%s/broken", testutil_cache_dir);
  if (mkdir(dir, 0700) != 0) assert_int_equal(errno, EEXIST);
  snprintf(lib, sizeof lib, "%s/libcuda.so.1", dir);
  FILE *f = fopen(lib, "w");
  assert_non_null(f);
  fputs("not a shared object\n", f);
  assert_int_equal(fclose(f), 0);
  rerun_with("a libcuda.so.1 that is no library", BROKEN_DRIVER_ENV, dir, "LD_LIBRARY_PATH", dir);
}

/* A program of two kernels whose second name is no identifier is refused before any driver; a NULL
 * out is refused first of all. */
static void test_cuda_program_new_kernels_checks_every_entry_and_out(void **state) {
  (void)state;
  uopc_error err = {0};
  uopc_cuda_program *p = (uopc_cuda_program *)&p;
  const char *const entries[] = {"square_plus_one", "2nd"};
  assert_uopc_code(uopc_cuda_program_new_kernels(&p, SQUARE_PLUS_ONE, entries, 2, NULL, &err), UOPC_E_INVALID, err);
  assert_string_equal(err.message, "entry '2nd' is not a C identifier of at most 64 characters");
  assert_null(p);
  assert_uopc_code(uopc_cuda_program_new_kernels(NULL, SQUARE_PLUS_ONE, entries, 1, NULL, &err), UOPC_E_INVALID, err);
  assert_string_equal(err.message, "out is NULL");
}

/* The fake driver with cuGetErrorString renamed, so that the library lacks it. */
static void test_cuda_driver_lacking_a_function_on_a_fake_driver_is_refused(void **state) {
  (void)state;
  static char source[sizeof FAKE_DRIVER];
  memcpy(source, FAKE_DRIVER, sizeof FAKE_DRIVER);
  char *name = strstr(source, "cuGetErrorString");
  assert_non_null(name);
  name[strlen("cuGetErrorString") - 1] = 'X';
  run_on_a_fake(source, "libcuda.so.1", FAKE_DRIVER_ENV, "UOPC_TEST_FAKE_LACKS_A_FUNCTION");
}

/* ---- a fake NVRTC ------------------------------------------------------------
 * NVRTC's failures after a compile that succeeded, which a real NVRTC does not
 * give on demand: a libnvrtc.so of our own, in a fresh process whose CUDA_HOME
 * names its directory, whose nvrtcGetPTXSize fails. */
#define FAKE_NVRTC_ENV "UOPC_TEST_FAKE_NVRTC"

static const char FAKE_NVRTC[] =
    "#include <stddef.h>\n"
    "#include <stdlib.h>\n"
    "#include <string.h>\n"
    "typedef int nvrtcResult;\n"
    "static int prog, failed, short_log, empty_log, ptx_fails, log_size_fails, log_fails;\n"
    "int fake_log_calls;  /* nvrtcGetProgramLog's */\n"
    "char fake_options[256];  /* the last compile's options, each followed by a space */\n"
    "static const char long_log[] = \"0123456789abcdefghijklmnopqrstuvwxyzABCD\";  /* 40 bytes */\n"
    "const char *nvrtcGetErrorString(nvrtcResult r) {\n"
    "  return r == 3 ? \"FAKE_COMPILE_ERROR\" : r == 5 ? \"FAKE_CREATE_ERROR\" : r == 7 ? \"FAKE_PTX_ERROR\"\n"
    "       : r ? \"FAKE_PTX_SIZE_ERROR\" : \"NVRTC_SUCCESS\";\n"
    "}\n"
    "nvrtcResult nvrtcVersion(int *major, int *minor) {\n"
    "  if (getenv(\"UOPC_TEST_FAKE_NVRTC_NO_VERSION\")) return 1;  /* NVRTC_ERROR_OUT_OF_MEMORY */\n"
    "  *major = 12; *minor = 0; return 0;\n"
    "}\n"
    "nvrtcResult nvrtcCreateProgram(void **p, const char *s, const char *n, int k, const char *const *h,\n"
    "                               const char *const *i) {\n"
    "  (void)n; (void)k; (void)h; (void)i;\n"
    "  if (strstr(s, \"fake-create-fails\")) return 5;  /* NVRTC_ERROR_PROGRAM_CREATION_FAILURE */\n"
    "  *p = &prog; return 0;\n"
    "}\n"
    "nvrtcResult nvrtcCompileProgram(void *p, int n, const char *const *o) {\n"
    "  *fake_options = 0;\n"
    "  for (int i = 0; i < n && strlen(fake_options) + strlen(o[i]) + 2 <= sizeof fake_options; i++)\n"
    "    strcat(strcat(fake_options, o[i]), \" \");\n"
    "  (void)p; short_log = n == 1 && !strcmp(o[0], \"--fake-fail-short-log\");  /* a log: \"!\" */\n"
    "  empty_log = n == 1 && !strcmp(o[0], \"--fake-fail-empty-log\");  /* a log size of 0 */\n"
    "  ptx_fails = n == 1 && !strcmp(o[0], \"--fake-ptx-fails\");  /* sized, then not given */\n"
    "  log_size_fails = n == 1 && !strcmp(o[0], \"--fake-fail-log-size-fails\");  /* sized 2, and failed */\n"
    "  log_fails = n == 1 && !strcmp(o[0], \"--fake-fail-log-fails\");  /* \"!\" written, and failed */\n"
    "  failed = short_log || empty_log || log_size_fails || log_fails || (n == 1 && !strcmp(o[0], \"--fake-fail\"));\n"
    "  return failed ? 3 : 0;\n"
    "}\n"
    "nvrtcResult nvrtcGetProgramLogSize(void *p, size_t *n) {\n"
    "  (void)p; *n = empty_log ? 0 : short_log || log_size_fails || log_fails ? 2 : failed ? sizeof long_log : 1;\n"
    "  return log_size_fails;\n"
    "}\n"
    "nvrtcResult nvrtcGetProgramLog(void *p, char *log) {\n"
    "  (void)p; fake_log_calls++; if (empty_log) return 0;  /* no byte to write */\n"
    "  if (short_log || log_size_fails || log_fails) memcpy(log, \"!\", 2);\n"
    "  else if (failed) memcpy(log, long_log, sizeof long_log); else log[0] = 0; return log_fails;\n"
    "}\n"
    "nvrtcResult nvrtcGetPTXSize(void *p, size_t *n) {\n"
    "  (void)p; if (getenv(\"UOPC_TEST_FAKE_NVRTC_SIZE_UNWRITTEN\")) return 0;  /* success, no size */\n"
    "  if (ptx_fails) { *n = 5; return 0; }\n"
    "  *n = 0; return 6;\n"
    "}\n"
    "nvrtcResult nvrtcGetPTX(void *p, char *ptx) { (void)p; (void)ptx; return ptx_fails ? 7 : 6; }\n"
    "nvrtcResult nvrtcDestroyProgram(void **p) { *p = 0; return 0; }\n";

static void *fake_nvrtc;  /* the fake's handle, for its counter */

/* A PTX that NVRTC cannot size is a failed compile that says so, with NVRTC's own words. */
static void test_fake_nvrtc_ptx_size_failure_is_a_compile_error(void **state) {
  (void)state;
  uopc_error err = {0};
  char ptx[PATH_MAX];
  uopc_cuda_options opts = {.arch = "sm_80"};
  assert_uopc_code(uopc_cuda_compile(tagged("fake nvrtc"), "square_plus_one", &opts, ptx, sizeof ptx, &err),
                   UOPC_E_COMPILE, err);
  assert_contains(err.message, "nvrtcGetPTXSize failed: FAKE_PTX_SIZE_ERROR");
  /* The one language option reaches NVRTC, after the target, and is named in the message. */
  const char *options = dlsym(fake_nvrtc, "fake_options");
  assert_non_null(options);
  assert_string_equal(options, "-arch=compute_80 -std=c++17 ");
  assert_contains(err.message, "(entry 'square_plus_one', flags -arch=compute_80 -std=c++17); full log in ");
}

/* A PTX size that NVRTC reports success for but does not write is none: a failed compile
 * that says so, not a size taken from whatever the variable held. The fake reads the switch
 * at each call, so this process sets it for this compile only. */
static void test_fake_nvrtc_ptx_size_left_unwritten_is_a_compile_error(void **state) {
  (void)state;
  uopc_error err = {0};
  char log[64], ptx[sizeof testutil_cache_dir + 32];
  snprintf(ptx, sizeof ptx, "%s/never-written.ptx", testutil_cache_dir);
  assert_int_equal(setenv("UOPC_TEST_FAKE_NVRTC_SIZE_UNWRITTEN", "1", 1), 0);
  int rc = uopc_nvrtc_compile("", "fake.cu", 0, NULL, ptx, log, sizeof log, &err);
  unsetenv("UOPC_TEST_FAKE_NVRTC_SIZE_UNWRITTEN");
  assert_int_equal(rc, UOPC_E_COMPILE);
  assert_string_equal(log, "nvrtcGetPTXSize failed: NVRTC_SUCCESS");
  assert_int_equal(access(ptx, F_OK), -1);
}

/* A failed compile's log holds NVRTC's verdict, then as much of the program's log as fits: cut at the
 * caller's size, and not a byte past it. */
static void test_fake_nvrtc_long_log_is_cut_at_the_callers_size(void **state) {
  (void)state;
  uopc_error err = {0};
  struct { char log[40], guard[64]; } out;   /* guard: what lies past the caller's buffer */
  char ptx[sizeof testutil_cache_dir + 32];
  memset(out.guard, 'G', sizeof out.guard);
  snprintf(ptx, sizeof ptx, "%s/never-written.ptx", testutil_cache_dir);
  const char *const options[] = {"--fake-fail"};
  assert_int_equal(uopc_nvrtc_compile("", "fake.cu", 1, options, ptx, out.log, sizeof out.log, &err),
                   UOPC_E_COMPILE);
  /* "FAKE_COMPILE_ERROR\n" is 19 bytes: 20 of the log's 40 fit before the NUL */
  assert_string_equal(out.log, "FAKE_COMPILE_ERROR\n0123456789abcdefghij");
  for (size_t i = 0; i < sizeof out.guard; i++)
    if (out.guard[i] != 'G') fail_msg("byte %zu past the log's 40 was written", i);
}

/* A program log of one character (a size of 2, with its NUL) is a log, and follows the verdict. */
static void test_fake_nvrtc_one_character_log_is_kept(void **state) {
  (void)state;
  uopc_error err = {0};
  char log[64], ptx[sizeof testutil_cache_dir + 32];
  snprintf(ptx, sizeof ptx, "%s/never-written.ptx", testutil_cache_dir);
  const char *const options[] = {"--fake-fail-short-log"};
  assert_int_equal(uopc_nvrtc_compile("", "fake.cu", 1, options, ptx, log, sizeof log, &err),
                   UOPC_E_COMPILE);
  assert_string_equal(log, "FAKE_COMPILE_ERROR\n!");
}

/* A log size of 0 (NVRTC's count includes the NUL, so there is no log, not even an empty one) asks
 * NVRTC for no log: there is no byte to write it into. The verdict alone is the log. */
static void test_fake_nvrtc_log_size_0_asks_for_no_log(void **state) {
  (void)state;
  uopc_error err = {0};
  char log[64], ptx[sizeof testutil_cache_dir + 32];
  int *log_calls = dlsym(fake_nvrtc, "fake_log_calls");
  assert_non_null(log_calls);
  snprintf(ptx, sizeof ptx, "%s/never-written.ptx", testutil_cache_dir);
  const char *const options[] = {"--fake-fail-empty-log"};
  int calls = *log_calls;
  assert_int_equal(uopc_nvrtc_compile("", "fake.cu", 1, options, ptx, log, sizeof log, &err), UOPC_E_COMPILE);
  assert_string_equal(log, "FAKE_COMPILE_ERROR\n");
  assert_int_equal(*log_calls - calls, 0);
}

/* A program NVRTC cannot create is a failed compile, in NVRTC's words; nothing is written. */
static void test_fake_nvrtc_create_failure_is_a_compile_error(void **state) {
  (void)state;
  uopc_error err = {0};
  char log[64], ptx[sizeof testutil_cache_dir + 32];
  snprintf(ptx, sizeof ptx, "%s/never-written.ptx", testutil_cache_dir);
  assert_int_equal(uopc_nvrtc_compile("/* fake-create-fails */", "fake.cu", 0, NULL, ptx, log, sizeof log, &err),
                   UOPC_E_COMPILE);
  assert_string_equal(log, "nvrtcCreateProgram failed: FAKE_CREATE_ERROR\n");
  assert_int_equal(access(ptx, F_OK), -1);
}

/* PTX that NVRTC sizes but then does not give is a failed compile, in NVRTC's words; no file is
 * written. */
static void test_fake_nvrtc_ptx_failure_after_its_size_is_a_compile_error(void **state) {
  (void)state;
  uopc_error err = {0};
  char log[64], ptx[sizeof testutil_cache_dir + 32];
  snprintf(ptx, sizeof ptx, "%s/never-written.ptx", testutil_cache_dir);
  const char *const options[] = {"--fake-ptx-fails"};
  assert_int_equal(uopc_nvrtc_compile("", "fake.cu", 1, options, ptx, log, sizeof log, &err), UOPC_E_COMPILE);
  assert_string_equal(log, "nvrtcGetPTX failed: FAKE_PTX_ERROR");
  assert_int_equal(access(ptx, F_OK), -1);
}

/* NVRTC's identity names its version, then the file it was loaded from: "nvrtc 12.0 <dir>/<file> (". */
static void assert_nvrtc_identity(const char *version, const char *dir, const char *file) {
  char want[2 * PATH_MAX];
  snprintf(want, sizeof want, "nvrtc %s %s%s%s (", version, dir, *file ? "/" : "", file);
  const char *identity = uopc_nvrtc_identity();
  if (strncmp(identity, want, strlen(want)) != 0)
    fail_msg("identity '%s', expected it to begin '%s'", identity, want);
}

/* An NVRTC that cannot tell its version (UOPC_TEST_FAKE_NVRTC_NO_VERSION) is named 0.0, then by its file. */
static void test_fake_nvrtc_without_a_version_is_named_0_0(void **state) {
  (void)state;
  char real[PATH_MAX];
  assert_non_null(realpath(getenv(FAKE_NVRTC_ENV), real));
  assert_nvrtc_identity("0.0", real, "");
}

/* A log whose size or text NVRTC fails to give (though it wrote one) is left out: the log is the
 * verdict alone. */
static void test_fake_nvrtc_log_it_fails_to_give_is_left_out(void **state) {
  (void)state;
  static const char *const fails[] = {"--fake-fail-log-size-fails", "--fake-fail-log-fails"};
  char ptx[sizeof testutil_cache_dir + 32];
  snprintf(ptx, sizeof ptx, "%s/never-written.ptx", testutil_cache_dir);
  for (size_t i = 0; i < 2; i++) {
    uopc_error err = {0};
    char log[64];
    assert_int_equal(uopc_nvrtc_compile("", "fake.cu", 1, &fails[i], ptx, log, sizeof log, &err), UOPC_E_COMPILE);
    assert_string_equal(log, "FAKE_COMPILE_ERROR\n");
  }
}

/* A compile that is not asked for the PTX's path (NULL, size 0) builds all the same: the same
 * request then hits the cache. */
static void test_cuda_compile_without_a_ptx_path_builds(void **state) {
  (void)state;
  uopc_error err = {0};
  if (uopc_cuda_compiler_available(&err) != UOPC_OK) {
    print_message("  skipped: %s\n", err.message);
    skip();
  }
  const char *source = tagged("no ptx path");
  int64_t hits = uopc_counter_get(UOPC_C_DISK_CACHE_HITS);
  assert_uopc_ok(uopc_cuda_compile(source, "square_plus_one", NULL, NULL, 0, &err), err);
  assert_int_equal(delta(UOPC_C_DISK_CACHE_HITS, hits), 0);
  char ptx[PATH_MAX];
  assert_uopc_ok(uopc_cuda_compile(source, "square_plus_one", NULL, ptx, sizeof ptx, &err), err);
  assert_int_equal(delta(UOPC_C_DISK_CACHE_HITS, hits), 1);
  assert_true(file_exists(ptx));
}

static int run_on_fake_nvrtc(const char *path) {
  char home[PATH_MAX];   /* the fake's toolkit: path is <home>/lib64/libnvrtc.so, which CUDA_HOME puts first */
  snprintf(home, sizeof home, "%s", path);
  *strrchr(home, '/') = '\0';
  *strrchr(home, '/') = '\0';
  setenv("CUDA_HOME", home, 1);
  if (!(fake_nvrtc = dlopen(path, RTLD_NOW | RTLD_LOCAL))) {
    fprintf(stderr, "cannot open the fake NVRTC '%s': %s\n", path, dlerror());
    return 1;
  }
  if (getenv("UOPC_TEST_FAKE_NVRTC_NO_VERSION")) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_fake_nvrtc_without_a_version_is_named_0_0)};
    return cmocka_run_group_tests_name("on a fake NVRTC without a version", tests, NULL, NULL);
  }
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_fake_nvrtc_ptx_size_failure_is_a_compile_error),
    cmocka_unit_test(test_fake_nvrtc_ptx_size_left_unwritten_is_a_compile_error),
    cmocka_unit_test(test_fake_nvrtc_long_log_is_cut_at_the_callers_size),
    cmocka_unit_test(test_fake_nvrtc_one_character_log_is_kept),
    cmocka_unit_test(test_fake_nvrtc_log_size_0_asks_for_no_log),
    cmocka_unit_test(test_fake_nvrtc_create_failure_is_a_compile_error),
    cmocka_unit_test(test_fake_nvrtc_ptx_failure_after_its_size_is_a_compile_error),
    cmocka_unit_test(test_fake_nvrtc_log_it_fails_to_give_is_left_out),
  };
  /* A cache directory of its own: the tests' paths (never-written.ptx, ...) lie in it, not in "/". */
  return cmocka_run_group_tests_name("on a fake NVRTC", tests, testutil_fresh_cache, testutil_remove_cache);
}

/* dir/file, a shared library of source_text (named soname unless NULL), built by gcc spawned
 * without a shell; dir is made when missing, its parent must exist. */
static void build_library(const char *dir, const char *file, const char *soname, const char *source_text) {
  char gcc[PATH_MAX], source[PATH_MAX + 64], lib[PATH_MAX + 64], name[128];
  uopc_error err = {0};
  if (mkdir(dir, 0700) != 0) assert_int_equal(errno, EEXIST);
  snprintf(source, sizeof source, "%s/%s.c", dir, file);
  snprintf(lib, sizeof lib, "%s/%s", dir, file);
  FILE *f = fopen(source, "w");
  assert_non_null(f);
  fputs(source_text, f);
  assert_int_equal(fclose(f), 0);
  assert_uopc_ok(uopc_find_program("gcc", gcc, &err), err);
  snprintf(name, sizeof name, "-Wl,-soname,%s", soname ? soname : "");
  char *argv[] = {gcc, "-shared", "-fPIC", "-o", lib, source, soname ? name : NULL, NULL};
  uopc_spawn_result *res = calloc(1, sizeof *res);
  assert_non_null(res);
  assert_uopc_ok(uopc_spawn(argv, NULL, res, &err), err);
  if (res->exit_status != 0) fail_msg("gcc failed on %s: %.*s", source, (int)res->output_len, res->output);
  free(res);
}

/* Builds the fake library from source as soname, in lib64/ (a toolkit's layout, for CUDA_HOME),
 * then runs this binary again with env naming it (and the variable also set, when not NULL). */
static void run_on_a_fake(const char *source_text, const char *soname, const char *env, const char *also) {
  char dir[PATH_MAX + 16], lib[PATH_MAX + 64];
  snprintf(dir, sizeof dir, "%s/lib64", testutil_cache_dir);
  snprintf(lib, sizeof lib, "%s/%s", dir, soname);
  build_library(dir, soname, soname, source_text);
  rerun_with(soname, env, lib, also, also ? "1" : NULL);
}

static void test_cuda_nvrtc_paths_on_a_fake_nvrtc(void **state) {
  (void)state;
  run_on_a_fake(FAKE_NVRTC, "libnvrtc.so", FAKE_NVRTC_ENV, NULL);
}

static void test_cuda_nvrtc_without_a_version_on_a_fake_nvrtc_is_named_0_0(void **state) {
  (void)state;
  run_on_a_fake(FAKE_NVRTC, "libnvrtc.so", FAKE_NVRTC_ENV, "UOPC_TEST_FAKE_NVRTC_NO_VERSION");
}

/* ---- where NVRTC is looked for ---------------------------------------------
 * $CUDA_HOME/lib64 first, when set: a toolkit it names that has no libnvrtc
 * is passed over for the loader's, in a fresh process (NVRTC is opened once). */
#define CUDA_HOME_CHILD_ENV "UOPC_TEST_CUDA_HOME_CHILD"

static void test_nvrtc_past_a_cuda_home_without_it_compiles(void **state) {
  (void)state;
  uopc_error err = {0};
  char ptx[PATH_MAX];
  uopc_cuda_options opts = {.arch = "sm_80"};
  int rc = uopc_cuda_compile(tagged("past CUDA_HOME"), "square_plus_one", &opts, ptx, sizeof ptx, &err);
  if (rc == UOPC_E_NO_CUDA) {
    print_message("  skipped: %s\n", err.message);
    skip();
  }
  assert_uopc_ok(rc, err);
}

static int run_past_a_cuda_home(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_nvrtc_past_a_cuda_home_without_it_compiles),
  };
  return cmocka_run_group_tests_name("with CUDA_HOME naming no toolkit", tests, NULL, NULL);
}

/* Reruns this suite (what: its group's name) with CUDA_HOME naming a toolkit made of one library,
 * <toolkit>/lib64/<file> built from source (soname as build_library takes it), and child_env=1. */
static void rerun_on_a_toolkit(const char *toolkit, const char *file, const char *soname, const char *source,
                               const char *what, const char *child_env) {
  char home[PATH_MAX + 32], lib[PATH_MAX + 64];
  snprintf(home, sizeof home, "%s/%s", testutil_cache_dir, toolkit);
  snprintf(lib, sizeof lib, "%s/lib64", home);
  assert_int_equal(mkdir(home, 0700), 0);
  build_library(lib, file, soname, source);
  rerun_with(what, "CUDA_HOME", home, child_env, "1");
}

/* The toolkit named is no toolkit: its lib64/libnvrtc.so is a library without NVRTC's functions,
 * and it has no libnvrtc.so.13 or .so.12. Both are passed over. */
static void test_cuda_nvrtc_is_found_past_a_cuda_home_without_it(void **state) {
  (void)state;
  rerun_on_a_toolkit("not-a-toolkit", "libnvrtc.so", NULL, "int not_nvrtc = 1;\n", "CUDA_HOME without NVRTC",
                     CUDA_HOME_CHILD_ENV);
}

/* ---- NVRTC on the loader's path, through a symbolic link ---------------------
 * With CUDA_HOME naming no toolkit, the loader's NVRTC (LD_LIBRARY_PATH) comes
 * before /usr/local/cuda's; the identity names the file that the link
 * libnvrtc.so resolves to, whose name carries the version. */
#define LOADER_NVRTC_ENV "UOPC_TEST_LOADER_NVRTC"

static void test_nvrtc_on_the_loader_path_is_named_by_its_real_file(void **state) {
  (void)state;
  assert_nvrtc_identity("12.0", getenv(LOADER_NVRTC_ENV), "libnvrtc.so.12.0.7");
}

static int run_on_loader_nvrtc(const char *dir) {
  char home[PATH_MAX + 32];
  snprintf(home, sizeof home, "%s/no-toolkit-here", dir);
  setenv("CUDA_HOME", home, 1);
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_nvrtc_on_the_loader_path_is_named_by_its_real_file),
  };
  return cmocka_run_group_tests_name("with the fake NVRTC on the loader's path", tests, NULL, NULL);
}

static void test_cuda_nvrtc_on_the_loader_path_comes_before_usr_local_cuda(void **state) {
  (void)state;
  char dir[PATH_MAX], path[PATH_MAX + 32];
  snprintf(path, sizeof path, "%s/loader", testutil_cache_dir);
  if (mkdir(path, 0700) != 0) assert_int_equal(errno, EEXIST);
  assert_non_null(realpath(path, dir));   /* as realpath gives the library's name back */
  build_library(dir, "libnvrtc.so.12.0.7", "libnvrtc.so.12", FAKE_NVRTC);
  snprintf(path, sizeof path, "%s/libnvrtc.so", dir);
  if (unlink(path) != 0) assert_int_equal(errno, ENOENT);
  assert_int_equal(symlink("libnvrtc.so.12.0.7", path), 0);
  rerun_with("the fake NVRTC on LD_LIBRARY_PATH", LOADER_NVRTC_ENV, dir, "LD_LIBRARY_PATH", dir);
}

/* ---- libnvrtc.so.12 alone in CUDA_HOME -------------------------------------
 * A CUDA 12 toolkit may ship only the versioned name: every name is tried in
 * $CUDA_HOME/lib64, the last (.so.12) too, before the loader's own search. */
#define CUDA_HOME_NVRTC12_ENV "UOPC_TEST_CUDA_HOME_NVRTC12"

static void test_nvrtc_so_12_in_cuda_home_is_the_one_loaded(void **state) {
  (void)state;
  char home[PATH_MAX];
  assert_non_null(realpath(getenv("CUDA_HOME"), home));
  assert_nvrtc_identity("12.0", home, "lib64/libnvrtc.so.12");
}

/* internal.h's contract: 1 (not merely true) once NVRTC loaded. */
static void test_nvrtc_ready_is_1_once_loaded(void **state) {
  (void)state;
  assert_int_equal(uopc_nvrtc_ready(), 1);
  assert_string_equal(uopc_nvrtc_why_not(), "");
}

static int run_on_cuda_home_nvrtc12(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_nvrtc_so_12_in_cuda_home_is_the_one_loaded),
    cmocka_unit_test(test_nvrtc_ready_is_1_once_loaded),
  };
  return cmocka_run_group_tests_name("with only libnvrtc.so.12 in CUDA_HOME", tests, NULL, NULL);
}

static void test_cuda_nvrtc_so_12_alone_in_cuda_home_is_found(void **state) {
  (void)state;
  rerun_on_a_toolkit("toolkit-12", "libnvrtc.so.12", "libnvrtc.so.12", FAKE_NVRTC, "only libnvrtc.so.12 in CUDA_HOME",
                     CUDA_HOME_NVRTC12_ENV);
}

#define BY_BOTH(f) {#f "_by_nvrtc", f, NULL, NULL, &by_nvrtc}, {#f "_by_nvcc", f, NULL, NULL, &by_nvcc}

int main(void) {
  const char *fake = getenv(FAKE_DRIVER_ENV);
  if (fake) return run_on_fake_driver(fake);
  if ((fake = getenv(FAKE_NVRTC_ENV))) return run_on_fake_nvrtc(fake);
  if (getenv(CUDA_HOME_CHILD_ENV)) return run_past_a_cuda_home();
  if ((fake = getenv(LOADER_NVRTC_ENV))) return run_on_loader_nvrtc(fake);
  if (getenv(CUDA_HOME_NVRTC12_ENV)) return run_on_cuda_home_nvrtc12();
  if (getenv(BROKEN_DRIVER_ENV)) return run_on_broken_driver();
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_cuda_available_is_ok_or_says_why),
    cmocka_unit_test(test_cuda_compiler_available_is_ok_or_says_why),
    cmocka_unit_test(test_cuda_nvrtc_why_not_lists_the_places_tried_or_is_empty),
    BY_BOTH(test_cuda_compile_only_produces_ptx_with_entry),
    BY_BOTH(test_cuda_compile_twice_is_a_disk_cache_hit),
    BY_BOTH(test_cuda_compile_syntax_error_gives_diagnostics_and_source_path),
    BY_BOTH(test_cuda_compile_rejects_kernel_that_is_not_extern_c),
    BY_BOTH(test_cuda_compile_turns_an_sm_arch_into_its_ptx_target),
    BY_BOTH(test_cuda_compile_leaves_an_arch_suffix_to_the_compiler),
    BY_BOTH(test_cuda_compile_without_gpu_targets_compute_90),
    BY_BOTH(test_cuda_compile_reports_a_too_small_ptx_path_buffer),
    cmocka_unit_test(test_cuda_compile_ptx_path_size_0_is_refused_before_any_compile),
    BY_BOTH(test_cuda_compile_ptx_path_size_1_builds_then_says_the_path_does_not_fit),
    BY_BOTH(test_cuda_compile_hands_back_a_path_with_percent_signs_as_it_is),
    BY_BOTH(test_cuda_compile_manifest_records_the_target_and_cxx17),
    BY_BOTH(test_cuda_compile_from_eight_threads_agrees_on_one_entry),
    cmocka_unit_test(test_cuda_compile_nvrtc_and_nvcc_use_different_entries),
    cmocka_unit_test(test_cuda_compile_rejects_bad_arguments),
    cmocka_unit_test(test_cuda_program_new_kernels_rejects_a_count_outside_1_to_max),
    cmocka_unit_test(test_cuda_ptx_check_finds_the_entry_before_a_parenthesis_space_or_line_end),
    cmocka_unit_test(test_cuda_program_new_without_gpu_returns_no_cuda),
    cmocka_unit_test(test_cuda_alloc_rejects_zero_bytes_and_null),
    cmocka_unit_test(test_cuda_copy_of_zero_bytes_is_nothing),
    cmocka_unit_test(test_cuda_driver_paths_on_a_fake_driver),
    cmocka_unit_test(test_cuda_driver_without_a_device_on_a_fake_driver),
    cmocka_unit_test(test_cuda_driver_that_writes_no_device_count_on_a_fake_driver_sees_none),
    cmocka_unit_test(test_cuda_driver_lacking_a_function_on_a_fake_driver_is_refused),
    cmocka_unit_test(test_cuda_driver_without_a_compute_capability_on_a_fake_driver_is_refused),
    cmocka_unit_test(test_cuda_driver_steps_failing_on_a_fake_driver_are_named),
    cmocka_unit_test(test_cuda_driver_that_is_no_library_gives_the_loaders_reason),
    cmocka_unit_test(test_cuda_program_new_kernels_checks_every_entry_and_out),
    cmocka_unit_test(test_cuda_compile_without_a_ptx_path_builds),
    cmocka_unit_test(test_cuda_nvrtc_paths_on_a_fake_nvrtc),
    cmocka_unit_test(test_cuda_nvrtc_without_a_version_on_a_fake_nvrtc_is_named_0_0),
    cmocka_unit_test(test_cuda_nvrtc_is_found_past_a_cuda_home_without_it),
    cmocka_unit_test(test_cuda_nvrtc_on_the_loader_path_comes_before_usr_local_cuda),
    cmocka_unit_test(test_cuda_nvrtc_so_12_alone_in_cuda_home_is_found),
    BY_BOTH(test_cuda_launch_square_plus_one_matches_host_and_stays_in_bounds),
    cmocka_unit_test(test_cuda_launch_rejects_an_oversized_block_with_the_driver_message),
    cmocka_unit_test(test_cuda_memory_round_trips_bytes),
  };
  return cmocka_run_group_tests(tests, testutil_fresh_cache, testutil_remove_cache);
}
