/* nvrtc.c: NVRTC, the CUDA compiler that runs in process (section 23.6,
 * "Running on the GPU"). libnvrtc is opened with dlopen, never linked, so the
 * runtime builds and runs without CUDA; it compiles in tens of milliseconds
 * where nvcc takes hundreds. This is the NVRTC back end's compiler only: the
 * cache, the key and the checks are build.c's, as for every back end. */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

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
  char identity[PATH_MAX + 96];  /* "nvrtc 13.0 <real path> (<size> bytes, mtime <s>.<ns>)" */
  char reason[256];              /* why not, when not loaded */
} nvrtc;

/* ---- finding a compiler ---------------------------------------------------- */

/* nvrtcVersion has no patch level, and the library's file name may not have
 * one either (libnvrtc.so.13): its size and time stand in for it, as they do
 * for spawned compilers (compiler.c). Hashing the bytes would cost more (over
 * 100 MB). */
static void describe_nvrtc(const char *path) {
  int major = 0, minor = 0;
  nvrtc.api.version(&major, &minor);
  Dl_info info;
  char real[PATH_MAX], file[PATH_MAX + 64];
  const char *where = dladdr((void *)nvrtc.api.version, &info) && info.dli_fname ? info.dli_fname : path;
  if (realpath(where, real)) where = real;
  if (uopc_compiler_describe_file(where, file, sizeof file, NULL) != UOPC_OK) snprintf(file, sizeof file, "%s", where);
  snprintf(nvrtc.identity, sizeof nvrtc.identity, "nvrtc %d.%d %s", major, minor, file);
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

/* The toolkit that $CUDA_HOME names first (a user who sets it chose that
 * one), then the loader's own search (LD_LIBRARY_PATH, ld.so.cache), then
 * the default install. */
static void open_nvrtc(void) {
  static const char *const names[] = {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"};
  const char *home = getenv("CUDA_HOME");
  const char *dirs[] = {home && *home ? home : NULL, "", "/usr/local/cuda"};
  char path[PATH_MAX];
  for (size_t d = 0; d < 3; d++)
    for (size_t n = 0; dirs[d] && n < 3; n++) {
      snprintf(path, sizeof path, "%s%s%s", dirs[d], *dirs[d] ? "/lib64/" : "", names[n]);
      if ((nvrtc.loaded = try_nvrtc(path))) return;
    }
  snprintf(nvrtc.reason, sizeof nvrtc.reason, "libnvrtc not found (tried libnvrtc.so, "
           ".so.13 and .so.12 in $CUDA_HOME/lib64, on the loader's path and in /usr/local/cuda/lib64)");
}

static int nvrtc_ready(void) {
  pthread_once(&nvrtc_once, open_nvrtc);
  return nvrtc.loaded;
}

const char *uopc_nvrtc_identity(void) { return nvrtc_ready() ? nvrtc.identity : ""; }
const char *uopc_nvrtc_why_not(void) { return nvrtc_ready() ? "" : nvrtc.reason; }
int uopc_nvrtc_ready(void) { return nvrtc_ready(); }

/* ---- compiling ------------------------------------------------------------ */

/* NVRTC's reports land in log: a failed compile (UOPC_E_COMPILE) reads them
 * there, beside the compiler's own diagnostics. */
static int write_ptx(nvrtcProgram prog, const char *path, char *log, size_t size, uopc_error *err) {
  size_t n = 0;
  nvrtcResult r = nvrtc.api.ptx_size(prog, &n);
  if (r || n == 0) {
    snprintf(log, size, "nvrtcGetPTXSize failed: %s", nvrtc.api.error_string(r));
    return UOPC_E_COMPILE;
  }
  char *ptx = malloc(n);
  if (!ptx) return UOPC_FAIL(err, UOPC_E_NOMEM, "no memory for %zu bytes of PTX", n);
  int rc = UOPC_OK;
  if ((r = nvrtc.api.ptx(prog, ptx))) {
    snprintf(log, size, "nvrtcGetPTX failed: %s", nvrtc.api.error_string(r));
    rc = UOPC_E_COMPILE;
  } else {
    rc = uopc_write_file(path, ptx, n - 1, err);  /* n counts the NUL */
  }
  free(ptx);
  return rc;
}

/* The program's log (warnings, or the errors after NVRTC's verdict). */
static void append_log(nvrtcProgram prog, char *log, size_t size) {
  size_t used = strlen(log), n = 0;
  char *text = prog && !nvrtc.api.log_size(prog, &n) && n > 1 ? malloc(n) : NULL;
  if (text && !nvrtc.api.log(prog, text) && used < size) snprintf(log + used, size - used, "%s", text);
  free(text);
}

int uopc_nvrtc_compile(const char *source, const char *name, int n_options,
                       const char *const *options, const char *ptx_path, char *log,
                       size_t size, uopc_error *err) {
  nvrtcProgram prog = NULL;
  *log = '\0';
  if (!nvrtc_ready()) return UOPC_FAIL(err, UOPC_E_NO_CUDA, "no CUDA compiler: %s", nvrtc.reason);
  nvrtcResult r = nvrtc.api.create(&prog, source, name, 0, NULL, NULL);
  if (r) {
    snprintf(log, size, "nvrtcCreateProgram failed: %s\n", nvrtc.api.error_string(r));
    return UOPC_E_COMPILE;
  }
  r = nvrtc.api.compile(prog, n_options, options);
  if (r) snprintf(log, size, "%s\n", nvrtc.api.error_string(r));
  append_log(prog, log, size);
  int rc = r ? UOPC_E_COMPILE : write_ptx(prog, ptx_path, log, size, err);
  nvrtc.api.destroy(&prog);
  return rc;
}
