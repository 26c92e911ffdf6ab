/* internal.h: the runtime's internal modules (not for labs).
 * sha256 (hashing through OpenSSL's libcrypto), spawn (run a program from an
 * argument vector and capture its output), the disk cache in five layers
 * (file: whole files and trees; cache_scan: reading a cache's entries;
 * cache_stats: its statistics file and lock; cache_evict: its size limit and
 * LRU eviction; cache: its directory, entries and atomic publication),
 * compiler (a compiler's identity), nvrtc, build (the one build pipeline),
 * and the helpers that tensor.c shares with tensor_view.c and tensor_copy.c. */
#ifndef UOPC_INTERNAL_H
#define UOPC_INTERNAL_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
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

/* ---- the disk cache, in layers ----
 * Five files, listed bottom up: each calls only those listed before it, never
 * one after, so no call runs back up into a caller:
 *   file.c         whole files and directory trees (build.c, compiler.c and
 *                  nvrtc.c use it too)
 *   cache_scan.c   reading a cache directory's entries: sizes, names, totals
 *   cache_stats.c  the statistics file, its lock, and events not yet written
 *   cache_evict.c  the size limit: the running total, LRU eviction, touch
 *   cache.c        the cache's directory and its entries: lookup, staging,
 *                  publication, discarding
 * Their sections below come in the same order, after the types they share. */

/* An open cache (uopc_cache_open, cache.c). */
typedef struct uopc_cache {
  char dir[PATH_MAX];
  int64_t max_size;   /* bytes, from UOPC_CACHE_MAX_SIZE; 0: no limit */
} uopc_cache;

#define UOPC_CACHE_DEFAULT_MAX_SIZE ((int64_t)1 << 30)   /* 1 GiB */
#define UOPC_CACHE_SIZE_MAX ((int64_t)1 << 60)
#define UOPC_CACHE_TOUCH_SECONDS 60   /* "used" is recorded at most this often */
#define UOPC_ENTRY_MAX 64        /* the longest entry name (build.c); "calls <entry>" then fits a counter name */
#define UOPC_CACHE_KEY_HEX 64    /* a key: SHA-256 in hex */
#define UOPC_CACHE_NAME_MAX (UOPC_ENTRY_MAX + 1 + UOPC_CACHE_KEY_HEX)   /* <entry>-<key> */

typedef enum uopc_cache_event {
  UOPC_CACHE_HITS, UOPC_CACHE_MISSES, UOPC_CACHE_EVICTIONS, UOPC_CACHE_CORRUPTED, UOPC_CACHE_EVENTS
} uopc_cache_event;

typedef struct uopc_cache_record {
  int known;                            /* 0: no stats file, or no total in it */
  int64_t entries, bytes;               /* the running total of the entries */
  int64_t events[UOPC_CACHE_EVENTS];    /* every process's events, as written */
} uopc_cache_record;

/* ---- file.c: whole files and trees ---- */
/* Writes a whole file (creating or replacing). Errors: UOPC_E_IO. */
int uopc_write_file(const char *path, const void *data, size_t n, uopc_error *err);
/* Reads a whole file (at most 64 MiB) into a NUL-terminated malloc'd buffer
 * that the caller frees. Errors: UOPC_E_IO, UOPC_E_NOMEM. */
int uopc_read_file(const char *path, char **data, size_t *n, uopc_error *err);
/* Removes a directory tree (staging dirs, corrupted entries). */
void uopc_remove_tree(const char *path);

/* ---- cache_scan.c: a cache directory's entries, read ----
 * An entry's size is its files' disk usage (st_blocks, as du counts). */
int64_t uopc_cache_tree_size(const char *entry_dir);
/* 1 when name has the form <entry>-<64 hex digits> of an entry's directory. */
int uopc_cache_is_entry_name(const char *name);

/* One entry as the listing holds it. */
typedef struct uopc_cache_entry_use {
  struct timespec used;    /* its directory's mtime: its publish, or a hit's touch */
  int64_t bytes;
  char name[UOPC_CACHE_NAME_MAX + 1];
} uopc_cache_entry_use;

typedef struct uopc_cache_listing {
  uopc_cache_entry_use *v;   /* malloc'd: the caller frees it */
  size_t n, cap;
} uopc_cache_listing;

/* Totals the entries of dir into r (r->known 1 on success) and, when l is not
 * NULL, adds each to l, which starts {0}. tmp/, failed/ and the stats files
 * are not entries. Errors: UOPC_E_IO, UOPC_E_NOMEM (l could not grow). */
int uopc_cache_list_entries(const char *dir, uopc_cache_listing *l, uopc_cache_record *r, uopc_error *err);
/* Counts the entries and their bytes by reading the whole cache (only where
 * no running total exists yet; eviction lists them instead). Errors: UOPC_E_IO. */
int uopc_cache_scan(const char *dir, uopc_cache_record *r, uopc_error *err);

/* ---- cache_stats.c: the statistics file, its lock, and events not yet written ----
 * <cache>/stats holds the running total (entries, bytes) that the size limit
 * is checked against, and the events counted across processes. It is
 * rewritten whole, in place, while <cache>/lock is held. */

/* Parses a size as UOPC_CACHE_MAX_SIZE takes it: digits, then optionally K,
 * M, G or T (powers of 1024); "0" is no limit. name is for the message.
 * Errors: UOPC_E_INVALID naming name, the text and the form or the limit. */
int uopc_cache_parse_size(const char *name, const char *text, int64_t *bytes, uopc_error *err);
/* UOPC_CACHE_MAX_SIZE, or the default when unset or empty. Errors: as above. */
int uopc_cache_max_size(int64_t *bytes, uopc_error *err);

/* Counts an event of the cache at dir: the runtime's counter of that name
 * now, the stats file later (at the next publish or discard there, a minute
 * after the first unwritten one, or at exit): a hit writes nothing. */
void uopc_cache_count(const char *dir, uopc_cache_event ev, int64_t n);
/* Writes every cache's unwritten events now (exit does it too). */
void uopc_cache_stats_flush(void);

/* Takes <dir>/lock (flock, exclusive; waits). Returns the descriptor to pass
 * to uopc_cache_unlock. Errors: UOPC_E_IO. */
int uopc_cache_lock(const char *dir, int *fd, uopc_error *err);
void uopc_cache_unlock(int fd);
/* Reads <dir>/stats into r (the caller holds the lock); a missing or garbled
 * file leaves r->known 0 and the counts it could not read at 0. */
void uopc_cache_record_read(const char *dir, uopc_cache_record *r);
/* With the lock held: adds this process's unwritten events of dir to r and
 * writes r whole. On failure they stay unwritten. Errors: UOPC_E_IO. */
int uopc_cache_record_write(const char *dir, uopc_cache_record *r, uopc_error *err);

/* Prints the statistics as `ccache -s` does, one "label  value" line each,
 * every line after prefix (the debug knob passes "uopc: "). A cache that does
 * not exist yet prints zeros; one without a stats file is scanned. shared: dir
 * is the default directory chosen without UOPC_CACHE_DIR, which every tree and
 * run of this user shares (the first line says so). */
void uopc_cache_stats_print(FILE *out, const char *prefix, const char *dir, int64_t max_size, int shared);

/* ---- cache_evict.c: the size limit, least recently used first ---- */
/* With the lock held, after an entry was published (+1, its bytes) or moved
 * aside (-1, minus its bytes): updates the running total (a scan when there
 * is none yet), evicts past the limit down to 90 % of it, least recently
 * used first and never the entry keep, and writes the stats file. Evicted
 * entries are moved into trash (a new directory under <cache>/tmp, its path
 * written there; "" when none), which the caller removes after unlocking.
 * Errors: UOPC_E_IO (the stats file or the trash could not be written). */
int uopc_cache_account(const uopc_cache *c, int64_t entries, int64_t bytes, const char *keep,
                       char trash[PATH_MAX], uopc_error *err);
/* Marks an entry used now, unless it was marked less than
 * UOPC_CACHE_TOUCH_SECONDS ago (st: its directory's, from the lookup). */
void uopc_cache_touch(const char *entry_dir, const struct stat *st);

/* ---- cache.c: the cache's directory and its entries ---- */
/* Resolves dir (NULL: $UOPC_CACHE_DIR, $XDG_CACHE_HOME/uopc, ~/.cache/uopc),
 * creates it with mode 0700 and refuses one that others could write or that
 * another user owns; reads the size limit. Errors: UOPC_E_UNSAFE_CACHE (names
 * the path and the fix), UOPC_E_IO, UOPC_E_INVALID (a bad UOPC_CACHE_MAX_SIZE). */
int uopc_cache_open(uopc_cache *c, const char *dir, uopc_error *err);

/* The directory uopc_cache_open would use, neither created nor checked.
 * Errors: UOPC_E_INVALID (too long), UOPC_E_IO (no HOME). */
int uopc_cache_resolve(const char *dir, char out[PATH_MAX], uopc_error *err);

/* The entry's directory: <cache>/<entry>-<key>. */
int uopc_cache_entry_dir(const uopc_cache *c, const char *entry, const char *key,
                         char out[PATH_MAX], uopc_error *err);

/* Looks an entry up. Returns 1 (hit: artifact_path is the verified artifact),
 * 0 (miss), or -1 (error, err filled). An entry whose manifest or artifact is
 * missing, truncated or altered is removed, counted as "corrupted entries
 * rebuilt", and reported as a miss. Counts disk cache hits and misses. A hit
 * marks the entry used (its directory's mtime), at most once a minute. */
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
 * staging is gone afterwards, published or removed. Then adds the entry to
 * the running total and, past the limit, evicts (cache_evict.c); neither can
 * fail the publish. Errors: UOPC_E_IO. */
int uopc_cache_publish(const uopc_cache *c, const char *staging, const char *entry,
                       const char *key, const char *artifact, const char *description,
                       char artifact_path[PATH_MAX], uopc_error *err);

/* Moves the entry <entry>-<key> aside, then removes it, so that no reader
 * ever sees it half removed, and takes it off the running total. Returns 1
 * when it moved the entry, 0 when the entry was gone already. */
int uopc_cache_discard(const uopc_cache *c, const char *entry, const char *key);
/* The same for an entry's directory. */
int uopc_cache_discard_dir(const uopc_cache *c, const char *entry_dir);

/* Keeps a failed build for reading: moves staging to <cache>/failed/<entry>-<key>
 * and writes its path into kept. */
void uopc_cache_keep_failed(const uopc_cache *c, const char *staging, const char *entry,
                            const char *key, char kept[PATH_MAX]);

/* ---- compiler.c ---- */
typedef struct uopc_compiler {
  char path[PATH_MAX];             /* resolved absolute path */
  char identity[PATH_MAX + 64];    /* "<path> (<size> bytes, mtime <s>.<ns>)", keyed */
} uopc_compiler;
/* Finds name (PATH search) and describes the binary found: no process is
 * spawned. Errors: UOPC_E_INVALID (not found), UOPC_E_IO. */
int uopc_compiler_identify(const char *name, uopc_compiler *out, uopc_error *err);
/* "<path> (<size> bytes, mtime <s>.<ns>)" for any compiler file (a library too).
 * Errors: UOPC_E_IO (no such file), UOPC_E_INVALID (too long). */
int uopc_compiler_describe_file(const char *path, char *out, size_t size, uopc_error *err);
/* The version the compiler wrote into its artifact: the first string of a
 * shared object's .comment, or PTX's "Cuda compilation tools" line; "" when
 * there is none. For the manifest: it is read after the build, never keyed. */
void uopc_compiler_version_in(const char *artifact_path, char *out, size_t size);

/* ---- nvrtc.c: NVRTC, the in-process CUDA compiler, opened with dlopen ---- */
/* 1 when libnvrtc loaded (tried once per process, thread-safe); 0 otherwise. */
int uopc_nvrtc_ready(void);
/* What the key holds of the loaded NVRTC: "nvrtc 13.0 <path> (<size> bytes,
 * mtime <t>)"; or, when it did not load, why not. */
const char *uopc_nvrtc_identity(void);
const char *uopc_nvrtc_why_not(void);
/* Compiles source (named name in diagnostics) with the options into PTX at
 * ptx_path. UOPC_E_COMPILE: rejected, with NVRTC's log in log (err untouched);
 * on success log holds any warnings. Other errors (memory, I/O) in err. */
int uopc_nvrtc_compile(const char *source, const char *name, int n_options,
                       const char *const *options, const char *ptx_path, char *log,
                       size_t size, uopc_error *err);

/* ---- build.c: the one build pipeline ----
 * source -> key -> cache lookup -> on a miss: stage, compile, verify, publish.
 * What differs between compilers is a back end: gcc (C to a shared object),
 * NVRTC and nvcc (CUDA C to PTX). program.c and cuda.c only load what a build
 * produced. */
#define UOPC_BUILD_FIELDS 4

typedef struct uopc_build uopc_build;

/* A back end: how one kind of source becomes one artifact. */
typedef struct uopc_backend {
  const char *name;          /* "gcc", "NVRTC", "nvcc": for debug lines */
  const char *kind;          /* keyed: "c" or "cuda ptx" */
  const char *source_name;   /* "kernel.c", "kernel.cu" */
  const char *artifact;      /* "kernel.so", "kernel.ptx" */
  const char *mode;          /* keyed; a spawned compiler's arguments before the flags */
  const char *libs;          /* keyed; a spawned compiler's arguments after the source */
  /* Finds the compiler (b->compiler_name, or the back end's own default) and
   * fills b->compiler and b->identity. Errors: UOPC_E_INVALID, UOPC_E_NO_CUDA. */
  int (*find)(uopc_build *b, uopc_error *err);
  /* Compiles staging/source_name into staging/artifact. UOPC_E_COMPILE means
   * rejected, with the diagnostics in log (err untouched: the message needs
   * where the source is kept); on success log holds any warnings. Other errors
   * (memory, I/O, spawning) in err. */
  int (*compile)(const uopc_build *b, const char *staging, char *log, size_t size,
                 uopc_error *err);
  /* NULL, or checks a fresh artifact; reports as compile does. */
  int (*verify)(const uopc_build *b, const char *artifact_path, char *log, size_t size,
                uopc_error *err);
} uopc_backend;

extern const uopc_backend uopc_backend_gcc;     /* C to kernel.so, gcc spawned */
extern const uopc_backend uopc_backend_nvrtc;   /* CUDA C to kernel.ptx, in process */
extern const uopc_backend uopc_backend_nvcc;    /* CUDA C to kernel.ptx, nvcc spawned */

struct uopc_build {
  /* The request, from the caller. */
  const uopc_backend *backend;
  const char *source;            /* the text exactly as compiled */
  const char *entry;             /* checked by uopc_build_check_names */
  const char *compiler_name;     /* NULL: the back end's default */
  const char *cache_dir;         /* NULL: the default (uopc_cache_open) */
  char flags[512];               /* the compiler's options, space-separated; keyed */
  int n_fields;                  /* more keyed settings, also lines of the manifest */
  struct { const char *label, *value; } fields[UOPC_BUILD_FIELDS];
  /* The result, from the pipeline. */
  uopc_cache cache;
  char compiler[PATH_MAX];       /* the compiler run, or "NVRTC" */
  char identity[PATH_MAX + 128]; /* what the key holds of the compiler */
  char version[256];             /* the version in the artifact, for the manifest; "" unknown */
  char key[65];
  char dir[PATH_MAX];            /* the entry: <cache>/<entry>-<key> */
  char artifact_path[PATH_MAX];  /* <dir>/<artifact> */
  int cached;                    /* 1: found on disk, not compiled */
};

/* The checks every build request passes first: source not NULL, entry a C
 * identifier of at most UOPC_ENTRY_MAX characters. Errors: UOPC_E_INVALID. */
int uopc_build_check_names(const char *source, const char *entry, uopc_error *err);
/* Adds a keyed setting (label=value in the manifest); label and value must
 * outlive the build. Errors: UOPC_E_LIMIT past UOPC_BUILD_FIELDS. */
int uopc_build_field(uopc_build *b, const char *label, const char *value, uopc_error *err);
/* The pipeline: opens the cache, finds the compiler, computes the key, looks
 * it up, and on a miss builds and publishes the entry. Fills the result part
 * of b. Errors: UOPC_E_UNSAFE_CACHE, UOPC_E_IO, UOPC_E_NOMEM, UOPC_E_INVALID
 * or UOPC_E_NO_CUDA (no compiler), UOPC_E_COMPILE (the diagnostics, and where
 * the failed source is kept). */
int uopc_build_run(uopc_build *b, uopc_error *err);
/* For a found artifact that verified but will not load: discards the entry,
 * counts a corrupted entry rebuilt, and builds it again. Errors: as above. */
int uopc_build_again(uopc_build *b, uopc_error *err);
/* 1 when the artifact is gone from disk: another process evicted the entry
 * between its lookup (or publish) and the load. The loader then runs the
 * pipeline again, at most UOPC_BUILD_TRIES times in all: a new lookup, a miss
 * as counted, and a compile. */
#define UOPC_BUILD_TRIES 3
int uopc_build_lost(const uopc_build *b);
/* The error after UOPC_BUILD_TRIES losses: UOPC_E_LOAD, naming the limit. */
int uopc_build_fail_lost(const uopc_build *b, uopc_error *err);
/* The PTX back end: NVRTC when it loads and force_nvcc is 0, else nvcc when
 * found. Errors: UOPC_E_NO_CUDA, naming why neither. */
int uopc_build_ptx_backend(int force_nvcc, const uopc_backend **out, uopc_error *err);

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
