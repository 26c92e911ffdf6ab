/* cuda.h: CUDA C programs, compiled and launched at run time.
 * The same contract as program.h for CUDA source: NVRTC when libnvrtc can be
 * opened (far faster than nvcc), nvcc otherwise; PTX cached on disk under the
 * same key rules; loaded and launched through the CUDA driver API, which is
 * opened with dlopen, so everything builds and every CPU path runs on a machine
 * without CUDA. Introduced in 23.6; the tensorjit CUDA back end uses it. */
#ifndef UOPC_CUDA_H
#define UOPC_CUDA_H

#include <stddef.h>
#include "uopc/error.h"

typedef struct uopc_cuda_program uopc_cuda_program;

typedef struct uopc_cuda_options {
  const char *arch;       /* NULL: the GPU's, e.g. "sm_90"; "compute_90" without one */
  const char *cache_dir;  /* NULL: as for C programs */
  int force_nvcc;         /* 1 skips NVRTC (tests compare both) */
} uopc_cuda_options;

/* UOPC_OK when the driver, a device and a compiler are all usable; otherwise
 * UOPC_E_NO_CUDA with the reason ("libcuda.so.1 not found", "no CUDA device").
 * Cheap after the first call. */
int uopc_cuda_available(uopc_error *err);

/* UOPC_OK when a CUDA compiler (NVRTC or nvcc) can be found; the reason otherwise. */
int uopc_cuda_compiler_available(uopc_error *err);

/* Compiles source (or finds its PTX in the disk cache) without loading it:
 * the compile-only check of machines with a CUDA compiler and no GPU. The PTX
 * path is copied into ptx_path when it is not NULL.
 * Errors: UOPC_E_NO_CUDA, UOPC_E_COMPILE (with diagnostics and the source path). */
int uopc_cuda_compile(const char *source, const char *entry,
                      const uopc_cuda_options *opts, char *ptx_path,
                      size_t ptx_path_size, uopc_error *err);

/* Compiles (or finds), loads the module and looks up entry (an extern "C"
 * __global__ function). The caller owns *out. Errors: as uopc_cuda_compile,
 * UOPC_E_CUDA. */
int uopc_cuda_program_new(uopc_cuda_program **out, const char *source,
                          const char *entry, const uopc_cuda_options *opts,
                          uopc_error *err);
/* The same for a module of several kernels (the compiler core writes one
 * __global__ function per loop nest): entries[0] keys the build like entry
 * above; every entry is looked up once, counted as "calls <entry>", and
 * launched by its index. Errors: as above, UOPC_E_INVALID (n_kernels outside
 * 1..UOPC_CUDA_KERNELS_MAX, an entry the source does not name). */
#define UOPC_CUDA_KERNELS_MAX 1024
int uopc_cuda_program_new_kernels(uopc_cuda_program **out, const char *source,
                                  const char *const *entries, int n_kernels,
                                  const uopc_cuda_options *opts, uopc_error *err);
void uopc_cuda_program_free(uopc_cuda_program *p);

/* Launches with args as in cuLaunchKernel and waits for completion.
 * Counts "calls <entry>". Errors: UOPC_E_CUDA with the driver's message. */
int uopc_cuda_launch(uopc_cuda_program *p, const unsigned grid[3],
                     const unsigned block[3], unsigned shared_bytes,
                     void **args, uopc_error *err);
/* Kernel k of the program (0 is the one uopc_cuda_launch launches). */
int uopc_cuda_launch_kernel(uopc_cuda_program *p, int k, const unsigned grid[3],
                            const unsigned block[3], unsigned shared_bytes,
                            void **args, uopc_error *err);

/* Device memory, as opaque addresses. */
int uopc_cuda_alloc(unsigned long long *dptr, size_t bytes, uopc_error *err);
int uopc_cuda_free(unsigned long long dptr, uopc_error *err);
int uopc_cuda_copy_to_device(unsigned long long dst, const void *src, size_t bytes,
                             uopc_error *err);
int uopc_cuda_copy_to_host(void *dst, unsigned long long src, size_t bytes,
                           uopc_error *err);

#endif
