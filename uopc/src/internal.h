/* internal.h: the runtime's internal modules (not for labs).
 * sha256 (hashing through OpenSSL's libcrypto), spawn (run a program from an
 * argument vector and capture its output), cache (the disk cache's directory,
 * entries and atomic publication), compiler (a compiler's identity), and the
 * helpers that tensor.c shares with tensor_view.c and tensor_copy.c. */
#ifndef UOPC_INTERNAL_H
#define UOPC_INTERNAL_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include "uopc/error.h"
#include "uopc/fault.h"
#include "uopc/tensor.h"

/* ---- sha256.c ---- */
typedef struct uopc_hash uopc_hash;   /* an incremental SHA-256 */
int uopc_hash_new(uopc_hash **out, uopc_error *err);
/* Adds a labelled field: the label, its length and the bytes, so that two
 * fields can never run together ("ab"+"c" differs from "a"+"bc"). */
void uopc_hash_field(uopc_hash *h, const char *label, const void *data, size_t n);
void uopc_hash_str(uopc_hash *h, const char *label, const char *s);
/* Writes 64 hex digits and a NUL into hex[65] and frees h. */
void uopc_hash_finish(uopc_hash *h, char hex[65]);
/* SHA-256 of a whole file as hex. Errors: UOPC_E_IO. */
int uopc_hash_file(const char *path, char hex[65], uopc_error *err);

/* ---- spawn.c ---- */
#define UOPC_SPAWN_OUTPUT_MAX 16384
typedef struct uopc_spawn_result {
  int exit_status;       /* the exit code, or 128 + signal */
  char output[UOPC_SPAWN_OUTPUT_MAX];  /* stdout and stderr, truncated */
  size_t output_len;
  int truncated;
} uopc_spawn_result;
/* Runs argv[0] (an absolute path) with argv, no shell, in directory cwd (NULL:
 * this one), with LC_ALL=C, stdin from /dev/null, stdout and stderr captured.
 * Errors: UOPC_E_IO when it cannot be started. */
int uopc_spawn(char *const argv[], const char *cwd, uopc_spawn_result *res, uopc_error *err);
/* Resolves a program name through PATH (or checks a path) to an absolute
 * path with symlinks resolved. Errors: UOPC_E_INVALID when not found. */
int uopc_find_program(const char *name, char resolved[PATH_MAX], uopc_error *err);

/* ---- cache.c ---- */
typedef struct uopc_cache {
  char dir[PATH_MAX];
} uopc_cache;

/* Resolves dir (NULL: $UOPC_CACHE_DIR, $XDG_CACHE_HOME/uopc, ~/.cache/uopc),
 * creates it with mode 0700 and refuses one that others could write or that
 * another user owns. Errors: UOPC_E_UNSAFE_CACHE (names the path and the fix),
 * UOPC_E_IO. */
int uopc_cache_open(uopc_cache *c, const char *dir, uopc_error *err);

/* The entry's directory: <cache>/<entry>-<key>. */
int uopc_cache_entry_dir(const uopc_cache *c, const char *entry, const char *key,
                         char out[PATH_MAX], uopc_error *err);

/* Looks an entry up. Returns 1 (hit: artifact_path is the verified artifact),
 * 0 (miss), or -1 (error, err filled). An entry whose manifest or artifact is
 * missing, truncated or altered is removed, counted as "corrupted entries
 * rebuilt", and reported as a miss. Counts disk cache hits and misses. */
int uopc_cache_lookup(const uopc_cache *c, const char *entry, const char *key,
                      const char *artifact, char artifact_path[PATH_MAX],
                      uopc_error *err);

/* Makes a private staging directory under <cache>/tmp for building an entry,
 * first removing staging or trash directories there older than a day (left
 * by a process that died mid-build). Errors: UOPC_E_IO. */
int uopc_cache_stage(const uopc_cache *c, char staging[PATH_MAX], uopc_error *err);

/* Writes the manifest (key, entry, the artifact's size and SHA-256, and the
 * description lines given) into staging and renames staging to the entry's
 * directory. When another process published the same key first, staging is
 * removed and theirs is used. artifact_path receives the final artifact path.
 * staging is gone afterwards, published or removed. Errors: UOPC_E_IO. */
int uopc_cache_publish(const uopc_cache *c, const char *staging, const char *entry,
                       const char *key, const char *artifact, const char *description,
                       char artifact_path[PATH_MAX], uopc_error *err);

/* Removes a directory tree (staging dirs, corrupted entries). */
void uopc_remove_tree(const char *path);

/* Keeps a failed build for reading: moves staging to <cache>/failed/<entry>-<key>
 * and writes its path into kept. */
void uopc_cache_keep_failed(const uopc_cache *c, const char *staging, const char *entry,
                            const char *key, char kept[PATH_MAX]);

/* Writes a whole file (creating or replacing). Errors: UOPC_E_IO. */
int uopc_write_file(const char *path, const void *data, size_t n, uopc_error *err);
/* Reads a whole file (at most 64 MiB) into a NUL-terminated malloc'd buffer
 * that the caller frees. Errors: UOPC_E_IO, UOPC_E_NOMEM. */
int uopc_read_file(const char *path, char **data, size_t *n, uopc_error *err);

/* ---- compiler.c ---- */
typedef struct uopc_compiler {
  char path[PATH_MAX];   /* resolved absolute path */
  char version[1024];    /* `<compiler> --version`, its lines joined by "; " */
} uopc_compiler;
/* Finds name (PATH search) and its version. The version output is memoised in
 * the cache directory under the binary's path, size, mtime and inode, so a warm
 * process spawns nothing. Errors: UOPC_E_INVALID (not found), UOPC_E_IO. */
int uopc_compiler_identify(const uopc_cache *c, const char *name, uopc_compiler *out,
                           uopc_error *err);

/* ---- cuda.c (for nvrtc.c) ---- */
/* Writes the first GPU's PTX target ("compute_90") into arch and returns 1;
 * returns 0 when no driver or device is usable. */
int uopc_cuda_device_arch(char *arch, size_t size);

/* ---- tensor.c (for tensor_view.c and tensor_copy.c) ---- */
/* A shape as Python prints a tuple, for messages: "(2, 3)", "(6,)", "()". */
typedef struct uopc_dims_text { char s[8 + UOPC_MAX_RANK * 24]; } uopc_dims_text;
uopc_dims_text uopc_tensor_dims_text(int rank, const int64_t *d);
/* The checks of a new shape, reported under the public function's name fn.
 * Errors: UOPC_E_INVALID (rank, NULL shape, negative dim), UOPC_E_OVERFLOW. */
int uopc_tensor_check_rank(const char *fn, int rank, const int64_t *shape, uopc_error *err);
int uopc_tensor_checked_numel(const char *fn, int rank, const int64_t *shape, size_t itemsize,
                              int64_t *numel, uopc_error *err);
/* Sets rank, shape and strides, zeroing the unused slots. */
void uopc_tensor_set_layout(uopc_tensor *t, int rank, const int64_t *shape, const int64_t *strides);
/* One more reference to x's storage (a new view of it). */
void uopc_tensor_share_storage(const uopc_tensor *x);

#endif
