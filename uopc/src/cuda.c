/* cuda.c: CUDA C programs, loaded and launched through the driver API.
 * libcuda is opened with dlopen, never linked, so the runtime builds and its
 * CPU paths run on machines without CUDA; the few driver types used are
 * declared here instead of including cuda.h. The PTX comes from the build
 * pipeline (build.c), with the NVRTC or nvcc back end; this file picks the
 * target, then loads and launches. Introduced in 23.6 ("Running on the GPU"). */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "uopc/uopc.h"
#include "internal.h"

/* The one language option, the same for both compilers (part of the key). */
#define CXX_STD "-std=c++17"
/* Without a GPU to ask, as cuda.h promises: Hopper's, so that a compile-only
 * check builds (and keys) exactly what an H100 or H200 would load. */
#define DEFAULT_ARCH "compute_90"

/* ---- the driver API, declared by hand ---------------------------------- */
typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef unsigned long long CUdeviceptr;

enum {
  CUDA_ERROR_STUB_LIBRARY = 34,
  CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222,
  CUDA_ERROR_NOT_FOUND = 500,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  CU_JIT_ERROR_LOG_BUFFER = 5,
  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
};

typedef struct driver_api {
  CUresult (*init)(unsigned flags);
  CUresult (*driver_version)(int *version);
  CUresult (*device_count)(int *count);
  CUresult (*device_get)(CUdevice *dev, int ordinal);
  CUresult (*device_attribute)(int *value, int attribute, CUdevice dev);
  CUresult (*primary_ctx_retain)(CUcontext *ctx, CUdevice dev);
  CUresult (*ctx_set_current)(CUcontext ctx);
  CUresult (*ctx_synchronize)(void);
  CUresult (*module_load)(CUmodule *mod, const void *image, unsigned n,
                          int *options, void **values);
  CUresult (*module_unload)(CUmodule mod);
  CUresult (*module_function)(CUfunction *fn, CUmodule mod, const char *name);
  CUresult (*launch)(CUfunction fn, unsigned gx, unsigned gy, unsigned gz,
                     unsigned bx, unsigned by, unsigned bz, unsigned shared,
                     CUstream stream, void **args, void **extra);
  CUresult (*mem_alloc)(CUdeviceptr *dptr, size_t bytes);
  CUresult (*mem_free)(CUdeviceptr dptr);
  CUresult (*copy_htod)(CUdeviceptr dst, const void *src, size_t bytes);
  CUresult (*copy_dtoh)(void *dst, CUdeviceptr src, size_t bytes);
  CUresult (*error_name)(CUresult r, const char **name);
  CUresult (*error_string)(CUresult r, const char **text);
} driver_api;

/* The _v2 names are the 64-bit-size entry points that cuda.h maps the plain
 * names to; the plain ones are kept for old binaries with 32-bit sizes. */
static const struct { const char *name; size_t offset; } driver_symbols[] = {
  {"cuInit", offsetof(driver_api, init)},
  {"cuDriverGetVersion", offsetof(driver_api, driver_version)},
  {"cuDeviceGetCount", offsetof(driver_api, device_count)},
  {"cuDeviceGet", offsetof(driver_api, device_get)},
  {"cuDeviceGetAttribute", offsetof(driver_api, device_attribute)},
  {"cuDevicePrimaryCtxRetain", offsetof(driver_api, primary_ctx_retain)},
  {"cuCtxSetCurrent", offsetof(driver_api, ctx_set_current)},
  {"cuCtxSynchronize", offsetof(driver_api, ctx_synchronize)},
  {"cuModuleLoadDataEx", offsetof(driver_api, module_load)},
  {"cuModuleUnload", offsetof(driver_api, module_unload)},
  {"cuModuleGetFunction", offsetof(driver_api, module_function)},
  {"cuLaunchKernel", offsetof(driver_api, launch)},
  {"cuMemAlloc_v2", offsetof(driver_api, mem_alloc)},
  {"cuMemFree_v2", offsetof(driver_api, mem_free)},
  {"cuMemcpyHtoD_v2", offsetof(driver_api, copy_htod)},
  {"cuMemcpyDtoH_v2", offsetof(driver_api, copy_dtoh)},
  {"cuGetErrorName", offsetof(driver_api, error_name)},
  {"cuGetErrorString", offsetof(driver_api, error_string)},
};

/* One driver per process: libcuda, its initialisation and the device's
 * primary context (which the driver itself shares with every other user in
 * the process, the CUDA runtime included) belong to the whole process. They
 * are set up once, under pthread_once, and kept until exit: closing or
 * releasing them while another thread launches would pull the device away. */
static pthread_once_t driver_once = PTHREAD_ONCE_INIT;
static struct {
  driver_api api;
  CUcontext ctx;
  int major, minor;      /* the device's compute capability */
  int version;           /* the driver's CUDA version, e.g. 13000 */
  int status;            /* UOPC_OK or UOPC_E_NO_CUDA */
  char reason[512];      /* why not, when status says so */
} driver;

/* One __global__ function of a module. */
typedef struct cuda_kernel {
  CUfunction function;
  uopc_counter_id calls;  /* the "calls <entry>" counter */
  char entry[UOPC_COUNTER_NAME_MAX];  /* the compile checks that it fits */
} cuda_kernel;

struct uopc_cuda_program {
  CUmodule module;
  char ptx_path[PATH_MAX];
  int n_kernels;
  cuda_kernel kernels[];  /* in the order the caller named them */
};

/* Fills api from lib; returns the first symbol missing, or NULL. A void * is
 * copied into a function pointer with memcpy, as POSIX's dlsym expects. */
static const char *resolve(void *lib, driver_api *api) {
  for (size_t i = 0; i < sizeof driver_symbols / sizeof *driver_symbols; i++) {
    void *sym = dlsym(lib, driver_symbols[i].name);
    if (!sym) return driver_symbols[i].name;
    memcpy((char *)api + driver_symbols[i].offset, &sym, sizeof sym);
  }
  return NULL;
}

/* "CUDA_ERROR_INVALID_VALUE (invalid argument)" into buf. */
static const char *describe(CUresult r, char buf[160]) {
  const char *name = NULL, *text = NULL;
  if (driver.api.error_name) driver.api.error_name(r, &name);
  if (driver.api.error_string) driver.api.error_string(r, &text);
  if (name) snprintf(buf, 160, "%s (%s)", name, text ? text : "no description");
  else if (r == CUDA_ERROR_STUB_LIBRARY)  /* the stub cannot name its own error */
    snprintf(buf, 160, "CUDA_ERROR_STUB_LIBRARY (libcuda.so.1 is the toolkit's link stub, not a "
             "driver: take lib64/stubs off LD_LIBRARY_PATH)");
  else snprintf(buf, 160, "CUresult %d", r);
  return buf;
}

/* Records why the driver cannot be used; always returns 0 so that the steps
 * of open_driver read as one chain. */
static int no_driver(const char *step, CUresult r) {
  char buf[160];
  snprintf(driver.reason, sizeof driver.reason, "no CUDA device: %s failed: %s",
           step, describe(r, buf));
  return 0;
}

static int open_device(void) {
  driver_api *a = &driver.api;
  CUresult r;
  int count = 0;
  CUdevice dev;
  if ((r = a->init(0))) return no_driver("cuInit", r);
  a->driver_version(&driver.version);
  if ((r = a->device_count(&count))) return no_driver("cuDeviceGetCount", r);
  if (count == 0) {
    snprintf(driver.reason, sizeof driver.reason, "no CUDA device: the driver sees none");
    return 0;
  }
  if ((r = a->device_get(&dev, 0))) return no_driver("cuDeviceGet(0)", r);
  if ((r = a->device_attribute(&driver.major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)) ||
      (r = a->device_attribute(&driver.minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)))
    return no_driver("cuDeviceGetAttribute(compute capability)", r);
  if ((r = a->primary_ctx_retain(&driver.ctx, dev))) return no_driver("cuDevicePrimaryCtxRetain", r);
  return 1;
}

static void open_driver(void) {
  driver.status = UOPC_E_NO_CUDA;
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *why = dlerror();
    if (why && strstr(why, "No such file")) why = NULL;  /* the usual case says it all */
    snprintf(driver.reason, sizeof driver.reason, "no CUDA device: libcuda.so.1 %s%s",
             why ? "cannot be loaded: " : "not found (the NVIDIA driver is not installed)",
             why ? why : "");
    return;
  }
  const char *missing = resolve(lib, &driver.api);
  if (missing) {
    snprintf(driver.reason, sizeof driver.reason,
             "no CUDA device: libcuda.so.1 lacks %s (the NVIDIA driver is too old)", missing);
    memset(&driver.api, 0, sizeof driver.api);
    return;
  }
  if (open_device()) driver.status = UOPC_OK;
}

/* Opens the driver once and makes the primary context current on the calling
 * thread (a context is current per thread, and the caller may be a new one). */
static int use_driver(uopc_error *err) {
  pthread_once(&driver_once, open_driver);
  if (driver.status != UOPC_OK) return UOPC_FAIL(err, driver.status, "%s", driver.reason);
  CUresult r = driver.api.ctx_set_current(driver.ctx);
  char buf[160];
  if (r) return UOPC_FAIL(err, UOPC_E_CUDA, "cuCtxSetCurrent failed: %s", describe(r, buf));
  return UOPC_OK;
}

int uopc_cuda_available(uopc_error *err) {
  pthread_once(&driver_once, open_driver);
  if (driver.status != UOPC_OK) return UOPC_FAIL(err, driver.status, "%s", driver.reason);
  return uopc_cuda_compiler_available(err);
}

int uopc_cuda_compiler_available(uopc_error *err) {
  const uopc_backend *backend;
  return uopc_build_ptx_backend(0, &backend, err);
}

/* ---- compiling ------------------------------------------------------------- */

/* opts->arch as given ("sm_90", "compute_80", "sm_90a"), or the GPU's, or
 * the default; a real arch is turned into its virtual one, since we make PTX. */
static int choose_arch(const char *arch, char out[32], uopc_error *err) {
  if (!arch) {
    pthread_once(&driver_once, open_driver);
    if (driver.status == UOPC_OK) snprintf(out, 32, "compute_%d%d", driver.major, driver.minor);
    else snprintf(out, 32, "%s", DEFAULT_ARCH);
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
  snprintf(out, 32, "compute_%s", v);
  return UOPC_OK;
}

/* The build request for source: names checked, target and compiler chosen. */
static int prepare(uopc_build *b, const char *source, const char *entry, const uopc_cuda_options *opts,
                   uopc_error *err) {
  static const uopc_cuda_options defaults;
  if (!opts) opts = &defaults;
  *b = (uopc_build){.source = source, .entry = entry, .cache_dir = opts->cache_dir};
  char arch[32];
  int rc = uopc_build_check_names(source, entry, err);
  if (!rc) rc = choose_arch(opts->arch, arch, err);
  if (!rc) rc = uopc_build_ptx_backend(opts->force_nvcc, &b->backend, err);
  if (!rc) snprintf(b->flags, sizeof b->flags, "-arch=%s " CXX_STD, arch);
  return rc;
}

int uopc_cuda_compile(const char *source, const char *entry,
                      const uopc_cuda_options *opts, char *ptx_path,
                      size_t ptx_path_size, uopc_error *err) {
  if (ptx_path && ptx_path_size == 0) return UOPC_FAIL(err, UOPC_E_INVALID, "ptx_path_size is 0");
  uopc_build b;
  int rc = prepare(&b, source, entry, opts, err);
  if (!rc) rc = uopc_build_run(&b, err);
  if (rc) return rc;
  if (ptx_path && (size_t)snprintf(ptx_path, ptx_path_size, "%s", b.artifact_path) >= ptx_path_size)
    return UOPC_FAIL(err, UOPC_E_INVALID, "ptx_path_size %zu is too small for '%s' (%zu bytes)",
                     ptx_path_size, b.artifact_path, strlen(b.artifact_path) + 1);
  return UOPC_OK;
}

/* ---- programs ------------------------------------------------------------ */

/* The JIT's own log says what it disliked; a PTX version the driver does not
 * know means the toolkit is newer than the driver. */
static int fail_load(uopc_cuda_program *p, CUresult r, const char *log, uopc_error *err) {
  char buf[160];
  if (r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION)
    return UOPC_FAIL(err, UOPC_E_CUDA,
                     "cuModuleLoadDataEx(%s) failed: %s: the driver (CUDA %d.%d) is older "
                     "than the compiler that wrote it; update the driver", p->ptx_path,
                     describe(r, buf), driver.version / 1000, driver.version % 1000 / 10);
  return UOPC_FAIL(err, UOPC_E_CUDA, "cuModuleLoadDataEx(%s) failed: %s%s%s", p->ptx_path,
                   describe(r, buf), *log ? ": " : "", log);
}

/* The whole PTX, NUL-terminated as cuModuleLoadDataEx wants it. Not
 * uopc_read_file: it stops at 64 KiB, and generated kernels can be larger.
 * getdelim up to a NUL reads the whole file, as PTX text holds none. */
static int read_ptx(const char *path, char **ptx, uopc_error *err) {
  FILE *f = fopen(path, "r");
  if (!f) return UOPC_FAIL(err, UOPC_E_IO, "cannot open '%s': %m", path);
  size_t cap = 0;
  *ptx = NULL;
  ssize_t n = getdelim(ptx, &cap, '\0', f);
  int bad = n <= 0 || ferror(f);
  fclose(f);
  if (!bad) return UOPC_OK;
  free(*ptx);
  return UOPC_FAIL(err, UOPC_E_IO, "cannot read '%s' (empty or unreadable)", path);
}

static int load_module(uopc_cuda_program *p, uopc_error *err) {
  char *ptx, log[1024] = "", buf[160];
  int rc = read_ptx(p->ptx_path, &ptx, err);
  if (rc) return rc;
  int options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {log, (void *)(uintptr_t)sizeof log};
  CUresult r = driver.api.module_load(&p->module, ptx, 2, options, values);
  free(ptx);
  if (r) return fail_load(p, r, log, err);
  for (int k = 0; k < p->n_kernels; k++) {
    cuda_kernel *kn = &p->kernels[k];
    r = driver.api.module_function(&kn->function, p->module, kn->entry);
    if (r == CUDA_ERROR_NOT_FOUND)
      return UOPC_FAIL(err, UOPC_E_CUDA, "cuModuleGetFunction(%s) failed: %s; declare it "
                       "extern \"C\" __global__", kn->entry, describe(r, buf));
    if (r) return UOPC_FAIL(err, UOPC_E_CUDA, "cuModuleGetFunction(%s) failed: %s", kn->entry,
                            describe(r, buf));
  }
  return UOPC_OK;
}

/* Another process may evict the entry between the lookup (or the publish)
 * and reading the PTX: then the pipeline runs again, misses and compiles. */
static int build_and_load(uopc_cuda_program *p, uopc_build *b, uopc_error *err) {
  int rc = UOPC_OK, lost = 0;
  for (int tries = 0; tries < UOPC_BUILD_TRIES; tries++) {
    if ((rc = uopc_build_run(b, err))) return rc;
    snprintf(p->ptx_path, sizeof p->ptx_path, "%s", b->artifact_path);
    if (p->module) driver.api.module_unload(p->module);
    p->module = NULL;
    rc = load_module(p, err);
    if (!(lost = rc != UOPC_OK && uopc_build_lost(b))) break;
  }
  return lost ? uopc_build_fail_lost(b, err) : rc;
}

int uopc_cuda_program_new(uopc_cuda_program **out, const char *source,
                          const char *entry, const uopc_cuda_options *opts,
                          uopc_error *err) {
  return uopc_cuda_program_new_kernels(out, source, &entry, 1, opts, err);
}

/* Every entry is checked against the source like the first (the build's). */
static int check_entries(const char *source, const char *const *entries, int n, uopc_error *err) {
  if (!entries || n < 1 || n > UOPC_CUDA_KERNELS_MAX)
    return UOPC_FAIL(err, UOPC_E_INVALID, "%d kernels named; a program has 1 to %d", entries ? n : 0,
                     UOPC_CUDA_KERNELS_MAX);
  int rc = UOPC_OK;
  for (int k = 1; k < n && !rc; k++) rc = uopc_build_check_names(source, entries[k], err);
  return rc;
}

int uopc_cuda_program_new_kernels(uopc_cuda_program **out, const char *source,
                                  const char *const *entries, int n_kernels,
                                  const uopc_cuda_options *opts, uopc_error *err) {
  if (!out) return UOPC_FAIL(err, UOPC_E_INVALID, "out is NULL");
  *out = NULL;
  int rc = check_entries(source, entries, n_kernels, err);
  if (rc) return rc;
  uopc_cuda_program *p = calloc(1, sizeof *p + (size_t)n_kernels * sizeof p->kernels[0]);
  uopc_build *b = calloc(1, sizeof *b);   /* two PATH_MAX paths and more: not on the stack */
  rc = p && b ? use_driver(err) : UOPC_FAIL(err, UOPC_E_NOMEM, "no memory for a CUDA program");
  if (!rc) rc = prepare(b, source, entries[0], opts, err);
  if (!rc) {
    p->n_kernels = n_kernels;
    for (int k = 0; k < n_kernels; k++)
      snprintf(p->kernels[k].entry, sizeof p->kernels[k].entry, "%s", entries[k]);
    rc = build_and_load(p, b, err);
  }
  free(b);
  if (rc) {
    uopc_cuda_program_free(p);
    return rc;
  }
  for (int k = 0; k < n_kernels; k++) {
    char name[UOPC_COUNTER_NAME_MAX];
    snprintf(name, sizeof name, "%s%s", UOPC_C_CALLS_PREFIX, entries[k]);
    p->kernels[k].calls = uopc_counter_slot(name);
  }
  uopc_counter_add(UOPC_C_PROGRAMS_CONSTRUCTED, 1);
  *out = p;
  return UOPC_OK;
}

void uopc_cuda_program_free(uopc_cuda_program *p) {
  if (!p) return;
  if (p->module && use_driver(NULL) == UOPC_OK) driver.api.module_unload(p->module);
  free(p);
}

int uopc_cuda_launch(uopc_cuda_program *p, const unsigned grid[3],
                     const unsigned block[3], unsigned shared_bytes,
                     void **args, uopc_error *err) {
  return uopc_cuda_launch_kernel(p, 0, grid, block, shared_bytes, args, err);
}

int uopc_cuda_launch_kernel(uopc_cuda_program *p, int k, const unsigned grid[3],
                            const unsigned block[3], unsigned shared_bytes,
                            void **args, uopc_error *err) {
  if (!p || !grid || !block) return UOPC_FAIL(err, UOPC_E_INVALID, "program, grid or block is NULL");
  if (k < 0 || k >= p->n_kernels)
    return UOPC_FAIL(err, UOPC_E_INVALID, "kernel %d of a program of %d", k, p->n_kernels);
  int rc = use_driver(err);
  if (rc) return rc;
  cuda_kernel *kn = &p->kernels[k];
  char buf[160];
  CUresult r = driver.api.launch(kn->function, grid[0], grid[1], grid[2], block[0], block[1],
                                 block[2], shared_bytes, NULL, args, NULL);
  if (r)
    return UOPC_FAIL(err, UOPC_E_CUDA, "cuLaunchKernel(%s) failed: %s (grid %ux%ux%u, block "
                     "%ux%ux%u, %u shared bytes)", kn->entry, describe(r, buf), grid[0], grid[1],
                     grid[2], block[0], block[1], block[2], shared_bytes);
  uopc_counter_bump(kn->calls, 1);
  /* An error inside the kernel (an illegal address, say) surfaces here, and
   * it is sticky: the driver refuses every later call in this process. */
  if ((r = driver.api.ctx_synchronize()))
    return UOPC_FAIL(err, UOPC_E_CUDA, "%s failed on the device: cuCtxSynchronize: %s",
                     kn->entry, describe(r, buf));
  return UOPC_OK;
}

/* ---- device memory --------------------------------------------------------- */

int uopc_cuda_alloc(unsigned long long *dptr, size_t bytes, uopc_error *err) {
  if (!dptr) return UOPC_FAIL(err, UOPC_E_INVALID, "dptr is NULL");
  *dptr = 0;
  if (bytes == 0) return UOPC_FAIL(err, UOPC_E_INVALID, "bytes = 0; allocate at least 1");
  int rc = use_driver(err);
  if (rc) return rc;
  char buf[160];
  CUresult r = driver.api.mem_alloc(dptr, bytes);
  if (r) return UOPC_FAIL(err, UOPC_E_CUDA, "cuMemAlloc(%zu bytes) failed: %s", bytes, describe(r, buf));
  return UOPC_OK;
}

int uopc_cuda_free(unsigned long long dptr, uopc_error *err) {
  if (dptr == 0) return UOPC_OK;  /* like free(NULL) */
  int rc = use_driver(err);
  if (rc) return rc;
  char buf[160];
  CUresult r = driver.api.mem_free(dptr);
  if (r) return UOPC_FAIL(err, UOPC_E_CUDA, "cuMemFree(0x%llx) failed: %s", dptr, describe(r, buf));
  return UOPC_OK;
}

int uopc_cuda_copy_to_device(unsigned long long dst, const void *src, size_t bytes,
                             uopc_error *err) {
  if (bytes == 0) return UOPC_OK;
  if (!dst || !src) return UOPC_FAIL(err, UOPC_E_INVALID, "dst or src is NULL for %zu bytes", bytes);
  int rc = use_driver(err);
  if (rc) return rc;
  char buf[160];
  CUresult r = driver.api.copy_htod(dst, src, bytes);
  if (r) return UOPC_FAIL(err, UOPC_E_CUDA, "cuMemcpyHtoD(0x%llx, %zu bytes) failed: %s", dst,
                          bytes, describe(r, buf));
  return UOPC_OK;
}

int uopc_cuda_copy_to_host(void *dst, unsigned long long src, size_t bytes,
                           uopc_error *err) {
  if (bytes == 0) return UOPC_OK;
  if (!dst || !src) return UOPC_FAIL(err, UOPC_E_INVALID, "dst or src is NULL for %zu bytes", bytes);
  int rc = use_driver(err);
  if (rc) return rc;
  char buf[160];
  CUresult r = driver.api.copy_dtoh(dst, src, bytes);
  if (r) return UOPC_FAIL(err, UOPC_E_CUDA, "cuMemcpyDtoH(0x%llx, %zu bytes) failed: %s", src,
                          bytes, describe(r, buf));
  return UOPC_OK;
}
