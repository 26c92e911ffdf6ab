/* nvrtc.c: CUDA C source to PTX, through the disk cache.
 * NVRTC (libnvrtc, opened with dlopen) when it loads, for it compiles in
 * tens of milliseconds; nvcc, spawned with an argument vector, otherwise. The
 * PTX is cached under a key of everything that shapes it, as program.c caches
 * C programs. Introduced in 23.6 ("Running on the GPU"). */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "uopc/uopc.h"
#include "internal.h"

/* In cuda.c: the GPU's virtual architecture, "compute_90"; 0 without a GPU.
 * (Declared here until internal.h gains a cuda.c section.) */

#define SOURCE_NAME "kernel.cu"
#define PTX_NAME "kernel.ptx"
/* The one language option, the same for both compilers and part of the key. */
#define CXX_STD "-std=c++17"
/* Without a GPU to ask, as cuda.h promises: Hopper's, so that a compile-only
 * check builds (and keys) exactly what an H100 or H200 would load. */
#define DEFAULT_ARCH "compute_90"
/* As program.c's: "calls <entry>" then fits a counter name. */
#define ENTRY_MAX 64

/* ---- NVRTC, declared by hand ------------------------------------------- */
typedef int nvrtcResult;
typedef struct _nvrtcProgram *nvrtcProgram;

typedef struct nvrtc_api {
  const char *(*error_string)(nvrtcResult r);
  nvrtcResult (*version)(int *major, int *minor);
  nvrtcResult (*create)(nvrtcProgram *prog, const char *source, const char *name,
                        int n_headers, const char *const *headers,
                        const char *const *include_names);
  nvrtcResult (*compile)(nvrtcProgram prog, int n_options, const char *const *options);
  nvrtcResult (*log_size)(nvrtcProgram prog, size_t *size);
  nvrtcResult (*log)(nvrtcProgram prog, char *log);
  nvrtcResult (*ptx_size)(nvrtcProgram prog, size_t *size);
  nvrtcResult (*ptx)(nvrtcProgram prog, char *ptx);
  nvrtcResult (*destroy)(nvrtcProgram *prog);
} nvrtc_api;

static const struct { const char *name; size_t offset; } nvrtc_symbols[] = {
  {"nvrtcGetErrorString", offsetof(nvrtc_api, error_string)},
  {"nvrtcVersion", offsetof(nvrtc_api, version)},
  {"nvrtcCreateProgram", offsetof(nvrtc_api, create)},
  {"nvrtcCompileProgram", offsetof(nvrtc_api, compile)},
  {"nvrtcGetProgramLogSize", offsetof(nvrtc_api, log_size)},
  {"nvrtcGetProgramLog", offsetof(nvrtc_api, log)},
  {"nvrtcGetPTXSize", offsetof(nvrtc_api, ptx_size)},
  {"nvrtcGetPTX", offsetof(nvrtc_api, ptx)},
  {"nvrtcDestroyProgram", offsetof(nvrtc_api, destroy)},
};

/* libnvrtc is opened once per process, under pthread_once: a library handle
 * is process-wide anyway, and NVRTC programs from any thread can share it.
 * It stays open until exit, as PTX compiles may run on other threads. */
static pthread_once_t nvrtc_once = PTHREAD_ONCE_INIT;
static struct {
  nvrtc_api api;
  int loaded;
  char identity[PATH_MAX + 96];  /* "nvrtc 13.0 <real path> (<size> bytes, mtime <t>)" */
  char reason[256];              /* why not, when not loaded */
} nvrtc;

/* One compile, as decided before the cache is asked. */
typedef struct job {
  const char *source, *entry;
  int use_nvrtc;
  char arch[32];                 /* always virtual, "compute_90": we want PTX */
  char nvcc[PATH_MAX];
  char identity[2 * PATH_MAX + 1200];
  uopc_cache cache;
  char key[65];
} job;

/* ---- finding a compiler ---------------------------------------------------- */

/* nvrtcVersion has no patch level, and the library's file name may not have
 * one either (libnvrtc.so.13): its size and time stand in for it, as they do
 * in compiler.c's memo. Hashing the bytes would cost more (over 100 MB). */
static void describe_nvrtc(const char *path) {
  int major = 0, minor = 0;
  nvrtc.api.version(&major, &minor);
  Dl_info info;
  char real[PATH_MAX];
  const char *where = dladdr((void *)nvrtc.api.version, &info) && info.dli_fname ? info.dli_fname : path;
  if (realpath(where, real)) where = real;
  struct stat st = {0};
  stat(where, &st);
  snprintf(nvrtc.identity, sizeof nvrtc.identity, "nvrtc %d.%d %s (%lld bytes, mtime %lld)", major,
           minor, where, (long long)st.st_size, (long long)st.st_mtim.tv_sec);
}

static int try_nvrtc(const char *path) {
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) return 0;
  for (size_t i = 0; i < sizeof nvrtc_symbols / sizeof *nvrtc_symbols; i++) {
    void *sym = dlsym(lib, nvrtc_symbols[i].name);
    if (!sym) {
      dlclose(lib);
      return 0;
    }
    memcpy((char *)&nvrtc.api + nvrtc_symbols[i].offset, &sym, sizeof sym);
  }
  describe_nvrtc(path);
  return 1;
}

/* The loader's own search first (LD_LIBRARY_PATH, ld.so.cache), then the
 * toolkit that $CUDA_HOME names, then the default install. */
static void open_nvrtc(void) {
  static const char *const names[] = {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"};
  const char *home = getenv("CUDA_HOME");
  const char *dirs[] = {"", home && *home ? home : NULL, "/usr/local/cuda"};
  char path[PATH_MAX];
  for (size_t d = 0; d < 3; d++)
    for (size_t n = 0; dirs[d] && n < 3; n++) {
      snprintf(path, sizeof path, "%s%s%s", dirs[d], *dirs[d] ? "/lib64/" : "", names[n]);
      if ((nvrtc.loaded = try_nvrtc(path))) return;
    }
  snprintf(nvrtc.reason, sizeof nvrtc.reason, "libnvrtc not found (tried libnvrtc.so, "
           ".so.13 and .so.12 on the loader's path, in $CUDA_HOME/lib64 and /usr/local/cuda/lib64)");
}

static int nvrtc_ready(void) {
  pthread_once(&nvrtc_once, open_nvrtc);
  return nvrtc.loaded;
}

/* nvcc on PATH, else in $CUDA_HOME/bin, else in the default install. */
static int find_nvcc(char path[PATH_MAX]) {
  uopc_error ignored;
  char candidate[PATH_MAX];
  const char *home = getenv("CUDA_HOME");
  if (uopc_find_program("nvcc", path, &ignored) == UOPC_OK) return UOPC_OK;
  if (home && *home && snprintf(candidate, sizeof candidate, "%s/bin/nvcc", home) < PATH_MAX &&
      uopc_find_program(candidate, path, &ignored) == UOPC_OK)
    return UOPC_OK;
  return uopc_find_program("/usr/local/cuda/bin/nvcc", path, &ignored);
}

#define NVCC_NOT_FOUND "nvcc not found on PATH, in $CUDA_HOME/bin or in /usr/local/cuda/bin"

int uopc_cuda_compiler_available(uopc_error *err) {
  char path[PATH_MAX];
  if (nvrtc_ready() || find_nvcc(path) == UOPC_OK) return UOPC_OK;
  return UOPC_FAIL(err, UOPC_E_NO_CUDA, "no CUDA compiler: %s, and " NVCC_NOT_FOUND, nvrtc.reason);
}

static int choose_compiler(job *j, int force_nvcc, uopc_error *err) {
  if (!force_nvcc && nvrtc_ready()) {
    j->use_nvrtc = 1;
    snprintf(j->identity, sizeof j->identity, "%s", nvrtc.identity);
    return UOPC_OK;
  }
  if (find_nvcc(j->nvcc) != UOPC_OK)
    return UOPC_FAIL(err, UOPC_E_NO_CUDA, "no CUDA compiler: %s%s" NVCC_NOT_FOUND,
                     force_nvcc ? "" : nvrtc.reason, force_nvcc ? "force_nvcc is set and " : ", and ");
  uopc_compiler nvcc;
  int rc = uopc_compiler_identify(&j->cache, j->nvcc, &nvcc, err);
  if (!rc) snprintf(j->identity, sizeof j->identity, "nvcc %s %s", nvcc.path, nvcc.version);
  return rc;
}

/* ---- the request and its key ------------------------------------------------ */

static int is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static int is_digit(char c) { return c >= '0' && c <= '9'; }

static int check_request(const char *source, const char *entry, uopc_error *err) {
  if (!source) return UOPC_FAIL(err, UOPC_E_INVALID, "source is NULL");
  if (!entry) return UOPC_FAIL(err, UOPC_E_INVALID, "entry is NULL");
  size_t n = strlen(entry);
  int ok = n > 0 && is_letter(entry[0]);
  for (size_t i = 1; ok && i < n; i++) ok = is_letter(entry[i]) || is_digit(entry[i]);
  if (!ok || n > ENTRY_MAX)
    return UOPC_FAIL(err, UOPC_E_INVALID, "entry '%s' is not a C identifier of at most %d characters",
                     entry, ENTRY_MAX);
  return UOPC_OK;
}

/* opts->arch as given ("sm_90", "compute_80", "sm_90a"), or the GPU's, or
 * the default; a real arch is turned into its virtual one, since we make PTX. */
static int choose_arch(job *j, const char *arch, uopc_error *err) {
  if (!arch) {
    if (!uopc_cuda_device_arch(j->arch, sizeof j->arch)) strcpy(j->arch, DEFAULT_ARCH);
    return UOPC_OK;
  }
  const char *v = strncmp(arch, "sm_", 3) == 0 ? arch + 3
                : strncmp(arch, "compute_", 8) == 0 ? arch + 8 : NULL;
  size_t digits = v ? strspn(v, "0123456789") : 0;
  int ok = digits >= 2 && digits <= 3 && (v[digits] == '\0' ||
           (v[digits] >= 'a' && v[digits] <= 'z' && v[digits + 1] == '\0'));
  if (!ok)
    return UOPC_FAIL(err, UOPC_E_INVALID, "arch '%s' is not sm_NN or compute_NN "
                     "(e.g. sm_90, compute_80, sm_90a)", arch);
  snprintf(j->arch, sizeof j->arch, "compute_%s", v);
  return UOPC_OK;
}

static int make_key(job *j, uopc_error *err) {
  uopc_hash *h;
  int rc = uopc_hash_new(&h, err);
  if (rc) return rc;
  char abi[16];
  snprintf(abi, sizeof abi, "%d", UOPC_ABI_VERSION);
  uopc_hash_str(h, "abi", abi);
  uopc_hash_str(h, "kind", "cuda ptx");
  uopc_hash_str(h, "compiler", j->identity);
  uopc_hash_str(h, "options", CXX_STD);
  uopc_hash_str(h, "arch", j->arch);
  uopc_hash_str(h, "entry", j->entry);
  uopc_hash_str(h, "source", j->source);
  uopc_hash_finish(h, j->key);
  return UOPC_OK;
}

/* ---- compiling ------------------------------------------------------------
 * The compile steps return UOPC_E_COMPILE with the diagnostics in log (err
 * untouched, as the message needs the kept path), any other error in err. */

static int write_ptx(nvrtcProgram prog, const char *path, uopc_error *err) {
  size_t n = 0;
  nvrtcResult r = nvrtc.api.ptx_size(prog, &n);
  if (r || n == 0)
    return UOPC_FAIL(err, UOPC_E_COMPILE, "nvrtcGetPTXSize failed: %s", nvrtc.api.error_string(r));
  char *ptx = malloc(n);
  if (!ptx) return UOPC_FAIL(err, UOPC_E_NOMEM, "no memory for %zu bytes of PTX", n);
  int rc = UOPC_OK;
  if ((r = nvrtc.api.ptx(prog, ptx)))
    rc = UOPC_FAIL(err, UOPC_E_COMPILE, "nvrtcGetPTX failed: %s", nvrtc.api.error_string(r));
  else
    rc = uopc_write_file(path, ptx, n - 1, err);  /* n counts the NUL */
  free(ptx);
  return rc;
}

static int nvrtc_failed(nvrtcProgram prog, nvrtcResult r, char *log, size_t size) {
  int off = snprintf(log, size, "%s\n", nvrtc.api.error_string(r));
  size_t n = 0;
  char *text = prog && !nvrtc.api.log_size(prog, &n) && n > 1 ? malloc(n) : NULL;
  if (text && !nvrtc.api.log(prog, text)) snprintf(log + off, size - off, "%s", text);
  free(text);
  return UOPC_E_COMPILE;
}

static int nvrtc_compile(const job *j, const char *ptx_path, char *log, size_t size,
                         uopc_error *err) {
  nvrtcProgram prog = NULL;
  nvrtcResult r = nvrtc.api.create(&prog, j->source, SOURCE_NAME, 0, NULL, NULL);
  if (r) return nvrtc_failed(NULL, r, log, size);
  char arch[64];
  snprintf(arch, sizeof arch, "--gpu-architecture=%s", j->arch);
  const char *options[] = {arch, CXX_STD};
  r = nvrtc.api.compile(prog, 2, options);
  int rc = r ? nvrtc_failed(prog, r, log, size) : write_ptx(prog, ptx_path, err);
  nvrtc.api.destroy(&prog);
  return rc;
}

/* Relative names, run inside the staging directory: diagnostics then say
 * "kernel.cu(3): error", as NVRTC's do, which stays true after it moves. */
static int nvcc_compile(const job *j, const char *staging, char *log, size_t size,
                        uopc_error *err) {
  char arch[64];
  snprintf(arch, sizeof arch, "-arch=%s", j->arch);
  char *argv[] = {(char *)j->nvcc, "-ptx", arch, CXX_STD, "-o", PTX_NAME, SOURCE_NAME, NULL};
  uopc_spawn_result *res = malloc(sizeof *res);
  if (!res) return UOPC_FAIL(err, UOPC_E_NOMEM, "no memory to run nvcc");
  int rc = uopc_spawn(argv, staging, res, err);
  if (!rc && res->exit_status != 0) {
    snprintf(log, size, "nvcc exited with status %d\n%.*s", res->exit_status,
             (int)res->output_len, res->output);
    rc = UOPC_E_COMPILE;
  }
  free(res);
  return rc;
}

/* 1 when a line of the PTX declares ".entry <entry>(" (".visible .entry f(").
 * Read line by line: PTX can be larger than uopc_read_file's limit. */
static int ptx_declares(FILE *f, const char *entry) {
  char *line = NULL, *p;
  size_t cap = 0, len = strlen(entry);
  int found = 0;
  while (!found && getline(&line, &cap, f) > 0)
    found = (p = strstr(line, ".entry ")) && strncmp(p + 7, entry, len) == 0 &&
            (p[7 + len] == '(' || p[7 + len] == ' ' || p[7 + len] == '\n');
  free(line);
  return found;
}

/* A kernel that is not extern "C" has a mangled name the caller cannot know;
 * saying so here makes the compile-only check catch it too. */
static int check_entry(const job *j, const char *ptx_path, char *log, size_t size,
                       uopc_error *err) {
  FILE *f = fopen(ptx_path, "r");
  if (!f) return UOPC_FAIL(err, UOPC_E_IO, "cannot open '%s' after the compile: %m", ptx_path);
  int found = ptx_declares(f, j->entry);
  fclose(f);
  if (found) return UOPC_OK;
  snprintf(log, size, "the PTX has no kernel '%s': declare it extern \"C\" __global__, "
           "so that its name is not mangled", j->entry);
  return UOPC_E_COMPILE;
}

/* Keeps the failed build and its whole log for reading, as program.c does,
 * and puts the paths before the diagnostics so that cutting a long log to fit
 * the message never loses them. */
static int fail_compile(const job *j, const char *staging, const char *log, uopc_error *err) {
  char kept[PATH_MAX], log_path[PATH_MAX];
  uopc_cache_keep_failed(&j->cache, staging, j->entry, j->key, kept);
  if (snprintf(log_path, sizeof log_path, "%s/compile.log", kept) < (int)sizeof log_path)
    uopc_write_file(log_path, log, strlen(log), NULL);
  UOPC_FAIL(err, UOPC_E_COMPILE, "%s failed on %s/" SOURCE_NAME " (entry '%s', %s); full log in "
            "%s:\n%s", j->use_nvrtc ? "NVRTC" : j->nvcc, kept, j->entry, j->arch, log_path, log);
  size_t n = strlen(err->message);
  if (n == sizeof err->message - 1) memcpy(err->message + n - 4, "\n...", 4);
  return UOPC_E_COMPILE;
}

static int join(char out[PATH_MAX], const char *dir, const char *name, uopc_error *err) {
  if (snprintf(out, PATH_MAX, "%s/%s", dir, name) < PATH_MAX) return UOPC_OK;
  return UOPC_FAIL(err, UOPC_E_IO, "path '%s/%s' is longer than %d bytes", dir, name, PATH_MAX - 1);
}

static int publish(const job *j, const char *staging, char ptx[PATH_MAX], uopc_error *err) {
  char description[sizeof j->identity + 100];
  snprintf(description, sizeof description, "compiler=%s\narch=%s\noptions=%s\n",
           j->identity, j->arch, CXX_STD);
  int rc = uopc_cache_publish(&j->cache, staging, j->entry, j->key, PTX_NAME, description, ptx, err);
  if (rc) uopc_remove_tree(staging);  /* a failed publish leaves it behind */
  return rc;
}

static int build_entry(job *j, char ptx[PATH_MAX], uopc_error *err) {
  char staging[PATH_MAX], src[PATH_MAX], out[PATH_MAX], log[UOPC_SPAWN_OUTPUT_MAX] = "";
  int rc = uopc_cache_stage(&j->cache, staging, err);
  if (rc) return rc;
  if (!(rc = join(src, staging, SOURCE_NAME, err)) && !(rc = join(out, staging, PTX_NAME, err)))
    rc = uopc_write_file(src, j->source, strlen(j->source), err);
  if (!rc) {
    uopc_counter_add(UOPC_C_COMPILER_INVOCATIONS, 1);
    rc = j->use_nvrtc ? nvrtc_compile(j, out, log, sizeof log, err)
                      : nvcc_compile(j, staging, log, sizeof log, err);
  }
  if (!rc) rc = check_entry(j, out, log, sizeof log, err);
  if (rc == UOPC_E_COMPILE && *log) return fail_compile(j, staging, log, err);
  if (rc) {
    uopc_remove_tree(staging);
    return rc;
  }
  return publish(j, staging, ptx, err);
}

int uopc_cuda_compile(const char *source, const char *entry,
                      const uopc_cuda_options *opts, char *ptx_path,
                      size_t ptx_path_size, uopc_error *err) {
  static const uopc_cuda_options defaults;
  uopc_error local;
  if (!err) err = &local;  /* the steps below read err->code and err->message */
  if (!opts) opts = &defaults;
  if (ptx_path && ptx_path_size == 0) return UOPC_FAIL(err, UOPC_E_INVALID, "ptx_path_size is 0");
  job j = {.source = source, .entry = entry};
  char ptx[PATH_MAX];
  int rc = check_request(source, entry, err);
  if (!rc) rc = uopc_cache_open(&j.cache, opts->cache_dir, err);
  if (!rc) rc = choose_arch(&j, opts->arch, err);
  if (!rc) rc = choose_compiler(&j, opts->force_nvcc, err);
  if (!rc) rc = make_key(&j, err);
  if (rc) return rc;
  int hit = uopc_cache_lookup(&j.cache, entry, j.key, PTX_NAME, ptx, err);
  if (hit < 0) return err->code;
  if (!hit && (rc = build_entry(&j, ptx, err))) return rc;
  if (ptx_path && (size_t)snprintf(ptx_path, ptx_path_size, "%s", ptx) >= ptx_path_size)
    return UOPC_FAIL(err, UOPC_E_INVALID, "ptx_path_size %zu is too small for '%s' (%zu bytes)",
                     ptx_path_size, ptx, strlen(ptx) + 1);
  return UOPC_OK;
}
