/* program.h: a C program compiled at run time and called through dlopen.
 * Construction generates nothing: it takes C source text and an entry name,
 * finds the shared object in the disk cache or compiles it with gcc (spawned
 * with an argument vector, never a shell), and loads it. Introduced in 23.6. */
#ifndef UOPC_PROGRAM_H
#define UOPC_PROGRAM_H

#include <stdint.h>
#include "uopc/error.h"

typedef struct uopc_program uopc_program;

typedef struct uopc_program_options {
  const char *compiler;    /* NULL: $UOPC_CC, else "gcc" on PATH */
  const char *opt_flags;   /* NULL: "-O3"; space-separated, part of the key */
  int march_native;        /* 1 adds -march=native (and the host CPU to the key), except under
                            * valgrind (uopc_under_valgrind), which decodes no AVX-512 */
  const char *cache_dir;   /* NULL: $UOPC_CACHE_DIR, $XDG_CACHE_HOME/uopc, ~/.cache/uopc */
  int openmp;              /* 1 adds -fopenmp: the source's `omp` loops run on libgomp's threads */
} uopc_program_options;

/* The kernel's parameters, one letter each, for uopc_program_call:
 *   'p' a pointer, 'i' int32_t, 'l' int64_t, 'f' float, 'd' double.
 * "ppp" is `void f(float *x, float *out, int *length)`. */
#define UOPC_SIGNATURE_MAX 64   /* a 16-tensor graph with its dims and scratch fits */

/* Compiles (or finds in the cache) source and loads entry, whose parameters
 * are described by signature. opts may be NULL. The caller owns *out and frees
 * it with uopc_program_free. Errors: UOPC_E_INVALID (names, signature,
 * flags of more than 32 words with the runtime's own, which are refused rather
 * than cut),
 * UOPC_E_UNSAFE_CACHE, UOPC_E_IO, UOPC_E_COMPILE (with gcc's diagnostics and
 * the generated file's path), UOPC_E_LOAD. uopc_program_free(NULL), like
 * free(NULL), does nothing. */
int uopc_program_new(uopc_program **out, const char *source, const char *entry,
                     const char *signature, const uopc_program_options *opts,
                     uopc_error *err);
void uopc_program_free(uopc_program *p);

/* 1 when this process runs under valgrind, which names itself in its
 * client's LD_PRELOAD (its vgpreload libraries). Valgrind 3.19 decodes no
 * AVX-512, so an object built -march=native stops under it with SIGILL: a
 * build asking for march_native is then built for plain x86-64, and its key
 * says so (no CPU in its target). */
int uopc_under_valgrind(void);

/* UOPC_OK when uopc_program_new could build with opts here: the cache
 * directory is usable (made with mode 0700 when missing, as a build makes
 * it) and the compiler it would spawn exists (opts->compiler, else $UOPC_CC,
 * else gcc on PATH), checked in that order. Nothing is compiled. opts may be NULL. Errors:
 * UOPC_E_INVALID ("no C compiler: ...", naming it and the PATH searched),
 * UOPC_E_UNSAFE_CACHE (the path and the fix), UOPC_E_IO. */
int uopc_program_check(const uopc_program_options *opts, uopc_error *err);

/* Calls the entry: args[i] points to the i-th argument's value, as in CUDA's
 * cuLaunchKernel (for a pointer parameter, args[i] is the address of the
 * pointer). Counts "calls <entry>". */
void uopc_program_call(uopc_program *p, void *const *args);

/* The loaded entry itself, for callers that know its C type (benchmarks
 * compare it with uopc_program_call); calls through it are not counted. */
void (*uopc_program_entry(const uopc_program *p))(void);

/* Where the program lives on disk: the cache entry's directory, holding
 * kernel.c (the source as compiled), kernel.so and manifest. */
const char *uopc_program_dir(const uopc_program *p);

/* The SHA-256 cache key as 64 hex digits. */
const char *uopc_program_key(const uopc_program *p);

/* 1 when construction found the entry in the disk cache. */
int uopc_program_was_cached(const uopc_program *p);

#endif
