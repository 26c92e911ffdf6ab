/* build.c: the one build pipeline (section 23.6, "Cold and warm"; CUDA in
 * "Running on the GPU"). Every artifact, a C shared object or CUDA PTX, goes
 * source -> key -> cache lookup -> on a miss: stage, compile, verify, publish.
 * What differs between compilers is a back end (internal.h): gcc and nvcc are
 * spawned with an argument vector, NVRTC runs in process (nvrtc.c). program.c
 * and cuda.c only load what a build produced. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "uopc/uopc.h"
#include "internal.h"

#define MAX_FLAGS 32   /* words of compiler flags */
#define NVCC_NOT_FOUND "nvcc not found on PATH, in $CUDA_HOME/bin or in /usr/local/cuda/bin"

/* ---- requests ---------------------------------------------------------------- */

static int is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static int is_digit(char c) { return c >= '0' && c <= '9'; }

int uopc_build_check_names(const char *source, const char *entry, uopc_error *err) {
  if (!source) return UOPC_FAIL(err, UOPC_E_INVALID, "source is NULL");
  if (!entry) return UOPC_FAIL(err, UOPC_E_INVALID, "entry is NULL");
  size_t n = strlen(entry);
  int ok = n > 0 && n <= UOPC_ENTRY_MAX && is_letter(entry[0]);
  for (size_t i = 1; ok && i < n; i++) ok = is_letter(entry[i]) || is_digit(entry[i]);
  if (!ok)
    return UOPC_FAIL(err, UOPC_E_INVALID, "entry '%s' is not a C identifier of at most %d characters",
                     entry, UOPC_ENTRY_MAX);
  return UOPC_OK;
}

/* Refused rather than dropped: a setting missing from the key would let two
 * different artifacts share one entry. */
int uopc_build_field(uopc_build *b, const char *label, const char *value, uopc_error *err) {
  if (b->n_fields >= UOPC_BUILD_FIELDS)
    return UOPC_FAIL(err, UOPC_E_LIMIT, "build of '%s': field '%s' is past the %d keyed fields a build holds",
                     b->entry, label, UOPC_BUILD_FIELDS);
  b->fields[b->n_fields].label = label;
  b->fields[b->n_fields++].value = value;
  return UOPC_OK;
}

/* Everything that shapes the artifact's bytes, each field labelled. */
static int make_key(uopc_build *b, uopc_error *err) {
  uopc_hash *h;
  int rc = uopc_hash_new(&h, err);
  if (rc) return rc;
  char abi[16];
  snprintf(abi, sizeof abi, "%d", UOPC_ABI_VERSION);
  uopc_hash_str(h, "abi", abi);
  uopc_hash_str(h, "kind", b->backend->kind);
  uopc_hash_str(h, "compiler", b->identity);
  uopc_hash_str(h, "mode", b->backend->mode);
  uopc_hash_str(h, "flags", b->flags);
  uopc_hash_str(h, "libs", b->backend->libs);
  for (int i = 0; i < b->n_fields; i++) uopc_hash_str(h, b->fields[i].label, b->fields[i].value);
  uopc_hash_str(h, "entry", b->entry);
  uopc_hash_str(h, "source", b->source);
  uopc_hash_finish(h, b->key);
  return UOPC_OK;
}

/* ---- building an entry -------------------------------------------------------- */

static int join(char out[PATH_MAX], const char *dir, const char *name, uopc_error *err) {
  if (snprintf(out, PATH_MAX, "%s/%s", dir, name) < PATH_MAX) return UOPC_OK;
  return UOPC_FAIL(err, UOPC_E_IO, "path '%s/%s' is longer than %d bytes", dir, name, PATH_MAX - 1);
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* Runs the back end's compiler and its check; counts and reports the run. */
static int compile(const uopc_build *b, const char *staging, char *log, size_t size, uopc_error *err) {
  const uopc_backend *be = b->backend;
  char artifact[PATH_MAX];
  int rc = join(artifact, staging, be->artifact, err);
  if (rc) return rc;
  uopc_counter_add(UOPC_C_COMPILER_INVOCATIONS, 1);
  uopc_debug(2, "compiling %s with %s %s", b->entry, b->compiler, b->flags);
  uopc_debug(4, "source of %s:\n%s", b->entry, b->source);
  double start = now_ms();
  rc = be->compile(b, staging, log, size, err);
  uopc_debug(2, "%s %s %s in %.1f ms", be->name, rc ? "failed on" : "compiled", b->entry, now_ms() - start);
  if (rc == UOPC_OK && be->verify) rc = be->verify(b, artifact, log, size, err);
  return rc;
}

/* Keeps the failed build, and its whole log, for reading: the paths come
 * before the diagnostics so that cutting a long log to fit never loses them. */
static int fail_compile(const uopc_build *b, const char *staging, const char *log, uopc_error *err) {
  char kept[PATH_MAX], log_path[PATH_MAX];
  uopc_cache_keep_failed(&b->cache, staging, b->entry, b->key, kept);
  if (snprintf(log_path, sizeof log_path, "%s/compile.log", kept) < (int)sizeof log_path)
    uopc_write_file(log_path, log, strlen(log), NULL);
  UOPC_FAIL(err, UOPC_E_COMPILE, "%s failed on %s/%s (entry '%s', flags %s); full log in %s:\n%s",
            b->compiler, kept, b->backend->source_name, b->entry, b->flags, log_path, log);
  size_t n = err ? strlen(err->message) : 0;
  if (n == UOPC_ERROR_MESSAGE_MAX - 1) memcpy(err->message + n - 4, "\n...", 4);
  return UOPC_E_COMPILE;
}

/* The manifest's description: how the artifact was made, every keyed setting
 * included, so that the command can be repeated by hand. */
static void describe(const uopc_build *b, char *out, size_t size) {
  const uopc_backend *be = b->backend;
  int n = snprintf(out, size, "compiler=%s\n", b->identity);
  if (*b->version && n < (int)size) n += snprintf(out + n, size - n, "compiler_version=%s\n", b->version);
  if (be->mode && n < (int)size) n += snprintf(out + n, size - n, "mode=%s\n", be->mode);
  if (n < (int)size) n += snprintf(out + n, size - n, "flags=%s\n", b->flags);
  if (be->libs && n < (int)size) n += snprintf(out + n, size - n, "libs=%s\n", be->libs);
  for (int i = 0; i < b->n_fields && n < (int)size; i++)
    n += snprintf(out + n, size - n, "%s=%s\n", b->fields[i].label, b->fields[i].value);
}

/* The compiler's warnings stay with the entry; the description goes into the
 * manifest, which publication writes last. */
static int publish(uopc_build *b, const char *staging, const char *log, uopc_error *err) {
  char path[PATH_MAX], *description = malloc(8192);
  if (!description) {
    uopc_remove_tree(staging);
    return UOPC_FAIL(err, UOPC_E_NOMEM, "no memory for the manifest of '%s'", b->entry);
  }
  if (*log && join(path, staging, "compile.log", NULL) == UOPC_OK) uopc_write_file(path, log, strlen(log), NULL);
  if (join(path, staging, b->backend->artifact, NULL) == UOPC_OK)
    uopc_compiler_version_in(path, b->version, sizeof b->version);
  describe(b, description, 8192);
  int rc = uopc_cache_publish(&b->cache, staging, b->entry, b->key, b->backend->artifact, description,
                              b->artifact_path, err);
  free(description);
  return rc;
}

static int build(uopc_build *b, uopc_error *err) {
  char staging[PATH_MAX], source[PATH_MAX];
  char *log = calloc(1, UOPC_SPAWN_OUTPUT_MAX);
  if (!log) return UOPC_FAIL(err, UOPC_E_NOMEM, "no memory for the compiler's log of '%s'", b->entry);
  int rc = uopc_cache_stage(&b->cache, staging, err);
  if (rc) { free(log); return rc; }
  rc = join(source, staging, b->backend->source_name, err);
  if (!rc) rc = uopc_write_file(source, b->source, strlen(b->source), err);
  if (!rc) rc = compile(b, staging, log, UOPC_SPAWN_OUTPUT_MAX, err);
  if (rc == UOPC_E_COMPILE) rc = fail_compile(b, staging, log, err);
  else if (rc) uopc_remove_tree(staging);
  else rc = publish(b, staging, log, err);
  free(log);
  return rc;
}

int uopc_build_run(uopc_build *b, uopc_error *err) {
  int rc = uopc_cache_open(&b->cache, b->cache_dir, err);
  if (!rc) rc = b->backend->find(b, err);
  if (!rc) rc = make_key(b, err);
  if (!rc) rc = uopc_cache_entry_dir(&b->cache, b->entry, b->key, b->dir, err);
  if (rc) return rc;
  int hit = uopc_cache_lookup(&b->cache, b->entry, b->key, b->backend->artifact, b->artifact_path, err);
  if (hit < 0) return err ? err->code : UOPC_E_IO;
  b->cached = hit;
  uopc_debug(2, "%s %s: disk cache %s", b->entry, b->key, hit ? "hit" : "miss");
  return hit ? UOPC_OK : build(b, err);
}

int uopc_build_again(uopc_build *b, uopc_error *err) {
  uopc_cache_discard(&b->cache, b->entry, b->key);
  uopc_cache_count(b->cache.dir, UOPC_CACHE_CORRUPTED, 1);
  uopc_debug(2, "%s %s: found but would not load; building it again", b->entry, b->key);
  b->cached = 0;
  return build(b, err);
}

int uopc_build_lost(const uopc_build *b) {
  struct stat st;
  if (stat(b->artifact_path, &st) == 0 || errno != ENOENT) return 0;
  uopc_debug(2, "%s %s: evicted before it was loaded; looking it up again", b->entry, b->key);
  return 1;
}

int uopc_build_fail_lost(const uopc_build *b, uopc_error *err) {
  return UOPC_FAIL(err, UOPC_E_LOAD, "'%s' was evicted before it could be loaded, %d times in a row: the "
                   "cache's limit (UOPC_CACHE_MAX_SIZE, %lld bytes) is too small for the processes sharing it",
                   b->artifact_path, UOPC_BUILD_TRIES, (long long)b->cache.max_size);
}

/* ---- back ends: spawned compilers (gcc, nvcc) ----------------------------------- */

/* The words of b->flags, split in a copy (flags, of sizeof b->flags), into
 * words[0 .. *n). More than MAX_FLAGS is an error, not a cut: a dropped flag
 * would build another program than the one its key names. strtok_r: builds
 * run in several threads at once. */
static int split_flags(const uopc_build *b, char *flags, char **words, int *n, uopc_error *err) {
  char *rest = NULL;
  *n = 0;
  snprintf(flags, sizeof b->flags, "%s", b->flags);
  for (char *tok = strtok_r(flags, " ", &rest); tok; tok = strtok_r(NULL, " ", &rest)) {
    if (*n == MAX_FLAGS)
      return UOPC_FAIL(err, UOPC_E_INVALID, "compiler flags '%.200s' have more than %d words", b->flags, MAX_FLAGS);
    words[(*n)++] = tok;
  }
  return UOPC_OK;
}

/* argv: the compiler, its mode, the flags, "-o artifact source", its libs.
 * Relative names, run inside the staging directory: diagnostics then say
 * "kernel.c:3:5" or "kernel.cu(3)", which stays true after the entry moves. */
static void make_argv(const uopc_build *b, char *const *words, int n, char **argv) {
  const uopc_backend *be = b->backend;
  int argc = 0;
  argv[argc++] = (char *)b->compiler;
  if (be->mode) argv[argc++] = (char *)be->mode;
  for (int k = 0; k < n; k++) argv[argc++] = words[k];
  argv[argc++] = "-o";
  argv[argc++] = (char *)be->artifact;
  argv[argc++] = (char *)be->source_name;
  if (be->libs) argv[argc++] = (char *)be->libs;
  argv[argc] = NULL;
}

static int spawn_compile(const uopc_build *b, const char *staging, char *log, size_t size, uopc_error *err) {
  char flags[sizeof b->flags], *words[MAX_FLAGS], *argv[MAX_FLAGS + 8];
  int n, rc = split_flags(b, flags, words, &n, err);
  if (rc) return rc;
  make_argv(b, words, n, argv);
  uopc_spawn_result *res = malloc(sizeof *res);
  if (!res) return UOPC_FAIL(err, UOPC_E_NOMEM, "no memory to run '%s'", b->compiler);
  rc = uopc_spawn(argv, staging, res, err);
  if (rc == UOPC_OK && res->exit_status != 0) {
    snprintf(log, size, "exit status %d\n%s", res->exit_status, res->output);
    rc = UOPC_E_COMPILE;
  } else if (rc == UOPC_OK) {
    snprintf(log, size, "%s", res->output);
  }
  free(res);
  return rc;
}

/* gcc: $UOPC_CC's choice or program.c's, else gcc on PATH. */
static int find_c_compiler(uopc_build *b, uopc_error *err) {
  uopc_compiler cc;
  int rc = uopc_compiler_identify(b->compiler_name ? b->compiler_name : "gcc", &cc, err);
  if (rc) return rc;
  snprintf(b->compiler, sizeof b->compiler, "%s", cc.path);
  snprintf(b->identity, sizeof b->identity, "%s", cc.identity);
  return UOPC_OK;
}

/* nvcc on PATH, else in $CUDA_HOME/bin, else in the default install. */
static int find_nvcc_path(char path[PATH_MAX]) {
  char candidate[PATH_MAX];
  const char *home = getenv("CUDA_HOME");
  if (uopc_find_program("nvcc", path, NULL) == UOPC_OK) return UOPC_OK;
  if (home && *home && snprintf(candidate, sizeof candidate, "%s/bin/nvcc", home) < PATH_MAX &&
      uopc_find_program(candidate, path, NULL) == UOPC_OK)
    return UOPC_OK;
  return uopc_find_program("/usr/local/cuda/bin/nvcc", path, NULL);
}

static int find_nvcc(uopc_build *b, uopc_error *err) {
  char path[PATH_MAX];
  uopc_compiler nvcc;
  if (find_nvcc_path(path) != UOPC_OK) return UOPC_FAIL(err, UOPC_E_NO_CUDA, "no CUDA compiler: " NVCC_NOT_FOUND);
  int rc = uopc_compiler_identify(path, &nvcc, err);
  if (rc) return rc;
  snprintf(b->compiler, sizeof b->compiler, "%s", nvcc.path);
  snprintf(b->identity, sizeof b->identity, "%s", nvcc.identity);
  return UOPC_OK;
}

/* ---- back ends: NVRTC, in process ----------------------------------------------- */

static int find_nvrtc(uopc_build *b, uopc_error *err) {
  if (!uopc_nvrtc_ready()) return UOPC_FAIL(err, UOPC_E_NO_CUDA, "no CUDA compiler: %s", uopc_nvrtc_why_not());
  snprintf(b->compiler, sizeof b->compiler, "NVRTC");
  snprintf(b->identity, sizeof b->identity, "%s", uopc_nvrtc_identity());
  return UOPC_OK;
}

static int nvrtc_compile(const uopc_build *b, const char *staging, char *log, size_t size, uopc_error *err) {
  char flags[sizeof b->flags], ptx[PATH_MAX], *options[MAX_FLAGS];
  int n = 0, rc = join(ptx, staging, b->backend->artifact, err);
  if (!rc) rc = split_flags(b, flags, options, &n, err);
  if (rc) return rc;
  return uopc_nvrtc_compile(b->source, b->backend->source_name, n, (const char *const *)options, ptx, log, size,
                            err);
}

/* ---- PTX: both compilers' check ------------------------------------------------- */

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
static int ptx_verify(const uopc_build *b, const char *ptx_path, char *log, size_t size, uopc_error *err) {
  FILE *f = fopen(ptx_path, "r");
  if (!f) return UOPC_FAIL(err, UOPC_E_IO, "cannot open '%s' after the compile: %m", ptx_path);
  int found = ptx_declares(f, b->entry);
  fclose(f);
  if (found) return UOPC_OK;
  snprintf(log, size, "the PTX has no kernel '%s': declare it extern \"C\" __global__, "
           "so that its name is not mangled", b->entry);
  return UOPC_E_COMPILE;
}

/* ---- the back ends ---------------------------------------------------------------- */

const uopc_backend uopc_backend_gcc = {
  .name = "gcc", .kind = "c", .source_name = "kernel.c", .artifact = "kernel.so",
  /* Kernels may call exp, sqrt, ...: libm is always linked, after the source. */
  .libs = "-lm",
  .find = find_c_compiler, .compile = spawn_compile,
};

const uopc_backend uopc_backend_nvcc = {
  .name = "nvcc", .kind = "cuda ptx", .source_name = "kernel.cu", .artifact = "kernel.ptx",
  .mode = "-ptx",
  .find = find_nvcc, .compile = spawn_compile, .verify = ptx_verify,
};

const uopc_backend uopc_backend_nvrtc = {
  .name = "NVRTC", .kind = "cuda ptx", .source_name = "kernel.cu", .artifact = "kernel.ptx",
  .find = find_nvrtc, .compile = nvrtc_compile, .verify = ptx_verify,
};

/* NVRTC compiles in tens of milliseconds, nvcc in hundreds: NVRTC first. */
int uopc_build_ptx_backend(int force_nvcc, const uopc_backend **out, uopc_error *err) {
  char path[PATH_MAX];
  if (!force_nvcc && uopc_nvrtc_ready()) *out = &uopc_backend_nvrtc;
  else if (find_nvcc_path(path) == UOPC_OK) *out = &uopc_backend_nvcc;
  else return UOPC_FAIL(err, UOPC_E_NO_CUDA, "no CUDA compiler: %s%s" NVCC_NOT_FOUND,
                        force_nvcc ? "" : uopc_nvrtc_why_not(),
                        force_nvcc ? "force_nvcc is set and " : ", and ");
  return UOPC_OK;
}
