/* program.c: C programs compiled at run time (section 23.6).
 * Construction: key the source, look the key up in the disk cache, compile on
 * a miss, dlopen, and resolve the entry and its call adapter. The adapter is
 * generated C appended to the source: it unpacks `void *args[]` into the
 * entry's typed parameters, so uopc_program_call needs no libffi and no cast
 * of a function pointer to the wrong type. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include "uopc/uopc.h"
#include "internal.h"

#define MAX_FLAGS 32
/* Kernels may call exp, sqrt, ...: libm is always linked (after the source,
 * as the linker needs), and keyed with the flags. */
#define LINK_LIBS "-lm"
#define ENTRY_MAX 64

struct uopc_program {
  void *handle;
  void (*entry)(void);
  void (*adapter)(void *const *args);
  int64_t *calls;
  int cached;
  char key[65];
  char entry_name[ENTRY_MAX + 1];
  char dir[PATH_MAX];
};

/* The settings that decide the bytes of the shared object, all of them keyed. */
typedef struct build {
  uopc_cache cache;
  uopc_compiler cc;
  char flags[512];          /* space-separated, as keyed */
  char target[320];         /* machine, plus the CPU when -march=native */
  char *source;             /* the source as compiled: the caller's text and the adapter */
  const char *entry;
  const char *signature;
} build;

static int valid_identifier(const char *s) {
  if (!s || !*s || strlen(s) > ENTRY_MAX || !(s[0] == '_' || (s[0] | 32) >= 'a') ) return 0;
  for (const char *p = s; *p; p++)
    if (!(*p == '_' || (*p >= '0' && *p <= '9') || ((*p | 32) >= 'a' && (*p | 32) <= 'z'))) return 0;
  return !(s[0] >= '0' && s[0] <= '9');
}

static int check_arguments(const char *source, const char *entry, const char *signature, uopc_error *err) {
  if (!source) return UOPC_FAIL(err, UOPC_E_INVALID, "source is NULL");
  if (!valid_identifier(entry))
    return UOPC_FAIL(err, UOPC_E_INVALID, "entry '%s' is not a C identifier of at most %d characters",
                     entry ? entry : "(null)", ENTRY_MAX);
  if (!signature || strlen(signature) > UOPC_SIGNATURE_MAX || strspn(signature, "pilfd") != strlen(signature))
    return UOPC_FAIL(err, UOPC_E_INVALID, "signature '%s' for '%s' must be at most %d letters from 'pilfd'",
                     signature ? signature : "(null)", entry, UOPC_SIGNATURE_MAX);
  return UOPC_OK;
}

static const char *adapter_cast(char kind) {
  switch (kind) {
  case 'p': return "*(void *const *)";
  case 'i': return "*(const int *)";
  case 'l': return "*(const long long *)";
  case 'f': return "*(const float *)";
  default: return "*(const double *)";
  }
}

/* Appends: void uopc_call_<entry>(void *const *args) { entry(*(T *)args[0], ...); } */
static int make_source(build *b, const char *source, uopc_error *err) {
  size_t n = strlen(source) + 256 + strlen(b->signature) * 48;
  if (!(b->source = malloc(n))) return UOPC_FAIL(err, UOPC_E_NOMEM, "no memory for the source of '%s'", b->entry);
  int len = snprintf(b->source, n, "%s\n\n/* uopc call adapter: args[i] points to argument i (uopc/program.h). */\n"
                     "void uopc_call_%s(void *const *args) {\n  %s(", source, b->entry, b->entry);
  for (size_t i = 0; b->signature[i]; i++)
    len += snprintf(b->source + len, n - (size_t)len, "%s%sargs[%zu]", i ? ",\n      " : "",
                    adapter_cast(b->signature[i]), i);
  snprintf(b->source + len, n - (size_t)len, ");\n}\n");
  return UOPC_OK;
}

/* -march=native makes the object depend on this CPU, so the CPU joins the
 * key: its model and its feature list ("flags" on x86, "Features" on Arm),
 * hashed, since two machines can share a model name but not features. */
static void describe_target(build *b, int native) {
  struct utsname u;
  snprintf(b->target, sizeof b->target, "%s", uname(&u) == 0 ? u.machine : "unknown");
  if (!native) return;
  uopc_hash *h;
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f || uopc_hash_new(&h, NULL) != UOPC_OK) {
    if (f) fclose(f);
    snprintf(b->target + strlen(b->target), sizeof b->target - strlen(b->target), " native (CPU unknown)");
    return;
  }
  char line[8192], hex[65];
  int seen = 0;
  while (seen < 3 && fgets(line, sizeof line, f))
    if (!strncmp(line, "model name", 10) || !strncmp(line, "flags", 5) || !strncmp(line, "Features", 8) ||
        !strncmp(line, "CPU part", 8)) {
      uopc_hash_str(h, "cpuinfo", line);
      seen++;
    }
  fclose(f);
  uopc_hash_finish(h, hex);
  snprintf(b->target + strlen(b->target), sizeof b->target - strlen(b->target), " native cpu %.16s", hex);
}

static int prepare(build *b, const char *source, const uopc_program_options *opts, uopc_error *err) {
  uopc_program_options none = {0};
  if (!opts) opts = &none;
  const char *cc = opts->compiler ? opts->compiler : getenv("UOPC_CC");
  const char *opt = opts->opt_flags ? opts->opt_flags : "-O3";
  /* ISO C and no contraction into fused multiply-adds: results match the
   * eager reference bit for bit wherever the operations are the same. An
   * entry that the source never declares fails here, not at dlopen. */
  if (snprintf(b->flags, sizeof b->flags, "-std=c11 -ffp-contract=off -Werror=implicit-function-declaration -fPIC -shared %s%s", opt,
               opts->march_native ? " -march=native" : "") >= (int)sizeof b->flags)
    return UOPC_FAIL(err, UOPC_E_INVALID, "compiler flags '%s' are longer than %zu bytes", opt, sizeof b->flags - 64);
  describe_target(b, opts->march_native);
  int rc = uopc_cache_open(&b->cache, opts->cache_dir, err);
  if (rc == UOPC_OK) rc = uopc_compiler_identify(&b->cache, cc && *cc ? cc : "gcc", &b->cc, err);
  if (rc == UOPC_OK) rc = make_source(b, source, err);
  return rc;
}

static int compute_key(const build *b, char key[65], uopc_error *err) {
  uopc_hash *h;
  int rc = uopc_hash_new(&h, err);
  if (rc) return rc;
  char abi[16];
  snprintf(abi, sizeof abi, "%d", UOPC_ABI_VERSION);
  uopc_hash_str(h, "kind", "c");
  uopc_hash_str(h, "abi", abi);
  uopc_hash_str(h, "source", b->source);
  uopc_hash_str(h, "entry", b->entry);
  uopc_hash_str(h, "signature", b->signature);
  uopc_hash_str(h, "compiler", b->cc.path);
  uopc_hash_str(h, "compiler version", b->cc.version);
  uopc_hash_str(h, "flags", b->flags);
  uopc_hash_str(h, "libs", LINK_LIBS);
  uopc_hash_str(h, "target", b->target);
  uopc_hash_finish(h, key);
  return UOPC_OK;
}

static void split_flags(char *flags, char **argv, int *argc) {
  for (char *tok = strtok(flags, " "); tok && *argc < MAX_FLAGS; tok = strtok(NULL, " ")) argv[(*argc)++] = tok;
}

/* Reports gcc's diagnostics, trimmed to fit, and where the failed source was kept. */
static int compile_failed(build *b, const char *staging, const char *key, const uopc_spawn_result *res,
                          uopc_error *err) {
  char kept[PATH_MAX], log[PATH_MAX];
  uopc_cache_keep_failed(&b->cache, staging, b->entry, key, kept);
  if (snprintf(log, sizeof log, "%s/compile.log", kept) < (int)sizeof log)
    uopc_write_file(log, res->output, res->output_len, NULL);
  return UOPC_FAIL(err, UOPC_E_COMPILE, "%s failed (exit %d) on %s/kernel.c; full log in %s/compile.log:\n%.1400s",
                   b->cc.path, res->exit_status, kept, kept, res->output);
}

static int compile_into(build *b, const char *key, char so_path[PATH_MAX], uopc_error *err) {
  char staging[PATH_MAX], src[PATH_MAX], flags[sizeof b->flags];
  int rc = uopc_cache_stage(&b->cache, staging, err);
  if (rc) return rc;
  snprintf(src, sizeof src, "%.4000s/kernel.c", staging);
  if ((rc = uopc_write_file(src, b->source, strlen(b->source), err))) { uopc_remove_tree(staging); return rc; }
  char *argv[MAX_FLAGS + 8];
  int argc = 0;
  argv[argc++] = b->cc.path;
  snprintf(flags, sizeof flags, "%s", b->flags);
  split_flags(flags, argv, &argc);
  /* Relative names, run inside the staging directory: diagnostics then say
   * "kernel.c:3:5", which stays true after the entry moves. */
  argv[argc++] = "-o"; argv[argc++] = "kernel.so"; argv[argc++] = "kernel.c";
  argv[argc++] = LINK_LIBS; argv[argc] = NULL;
  uopc_spawn_result *res = malloc(sizeof *res);
  if (!res) { uopc_remove_tree(staging); return UOPC_FAIL(err, UOPC_E_NOMEM, "no memory to run the compiler"); }
  uopc_counter_add(UOPC_C_COMPILER_INVOCATIONS, 1);
  uopc_debug(2, "compiling %s with %s %s", b->entry, b->cc.path, b->flags);
  uopc_debug(4, "source of %s:\n%s", b->entry, b->source);
  rc = uopc_spawn(argv, staging, res, err);
  if (rc == UOPC_OK && res->exit_status != 0) rc = compile_failed(b, staging, key, res, err);
  else if (rc == UOPC_OK) {
    char log[PATH_MAX], description[PATH_MAX + 2048];
    snprintf(log, sizeof log, "%.4000s/compile.log", staging);
    if (res->output_len) uopc_write_file(log, res->output, res->output_len, NULL);
    snprintf(description, sizeof description, "compiler=%s\ncompiler_version=%s\nflags=%s\ntarget=%s\nsignature=%s\n",
             b->cc.path, b->cc.version, b->flags, b->target, b->signature);
    rc = uopc_cache_publish(&b->cache, staging, b->entry, key, "kernel.so", description, so_path, err);
  } else uopc_remove_tree(staging);
  free(res);
  return rc;
}

/* dlerror() is NULL after an injected failure, which no dlopen reported. */
static const char *dlerror_or_injected(void) {
  const char *why = dlerror();
  return why ? why : "injected failure (UOPC_FAULT_DLOPEN)";
}

static int load(uopc_program *p, const char *so_path, uopc_error *err) {
  char adapter[ENTRY_MAX + 16];
  p->handle = uopc_fault_hit(UOPC_FAULT_DLOPEN) ? NULL : dlopen(so_path, RTLD_NOW | RTLD_LOCAL);
  if (!p->handle)
    return UOPC_FAIL(err, UOPC_E_LOAD, "dlopen('%s') failed: %s", so_path, dlerror_or_injected());
  snprintf(adapter, sizeof adapter, "uopc_call_%s", p->entry_name);
  /* POSIX guarantees that dlsym's object pointer converts to a function pointer. */
  *(void **)&p->entry = dlsym(p->handle, p->entry_name);
  *(void **)&p->adapter = dlsym(p->handle, adapter);
  if (p->entry && p->adapter) return UOPC_OK;
  dlclose(p->handle);
  p->handle = NULL;
  return UOPC_FAIL(err, UOPC_E_LOAD, "'%s' has no function '%s' (is it static, or misspelt?)", so_path, p->entry_name);
}

/* A hit whose bytes verify but does not load is stale too: rebuild it once. */
static int find_or_build(uopc_program *p, build *b, uopc_error *err) {
  char so_path[PATH_MAX];
  int hit = uopc_cache_lookup(&b->cache, b->entry, p->key, "kernel.so", so_path, err);
  if (hit < 0) return err ? err->code : UOPC_E_IO;
  p->cached = hit;
  uopc_debug(2, "%s %s: disk cache %s", b->entry, p->key, hit ? "hit" : "miss");
  if (hit && load(p, so_path, NULL) == UOPC_OK) return UOPC_OK;
  if (hit) {
    char dir[PATH_MAX];
    uopc_cache_entry_dir(&b->cache, b->entry, p->key, dir, NULL);
    uopc_remove_tree(dir);
    uopc_counter_add(UOPC_C_CORRUPTED_REBUILT, 1);
    p->cached = 0;
  }
  int rc = compile_into(b, p->key, so_path, err);
  return rc ? rc : load(p, so_path, err);
}

int uopc_program_new(uopc_program **out, const char *source, const char *entry,
                     const char *signature, const uopc_program_options *opts, uopc_error *err) {
  *out = NULL;
  int rc = check_arguments(source, entry, signature, err);
  if (rc) return rc;
  uopc_program *p = calloc(1, sizeof *p);
  build *b = calloc(1, sizeof *b);
  if (!p || !b) { free(p); free(b); return UOPC_FAIL(err, UOPC_E_NOMEM, "no memory for program '%s'", entry); }
  b->entry = entry;
  b->signature = signature;
  snprintf(p->entry_name, sizeof p->entry_name, "%s", entry);
  rc = prepare(b, source, opts, err);
  if (rc == UOPC_OK) rc = compute_key(b, p->key, err);
  if (rc == UOPC_OK) rc = find_or_build(p, b, err);
  if (rc == UOPC_OK) uopc_cache_entry_dir(&b->cache, entry, p->key, p->dir, NULL);
  free(b->source);
  free(b);
  if (rc) { free(p); return rc; }
  char name[UOPC_COUNTER_NAME_MAX];
  snprintf(name, sizeof name, "%s%s", UOPC_C_CALLS_PREFIX, entry);
  p->calls = uopc_counter_slot(name);
  uopc_counter_add(UOPC_C_PROGRAMS_CONSTRUCTED, 1);
  *out = p;
  return UOPC_OK;
}

void uopc_program_free(uopc_program *p) {
  if (!p) return;
  if (p->handle) dlclose(p->handle);
  free(p);
}

void uopc_program_call(uopc_program *p, void *const *args) {
  uopc_counter_bump(p->calls, 1);
  p->adapter(args);
}

void (*uopc_program_entry(const uopc_program *p))(void) { return p->entry; }
const char *uopc_program_dir(const uopc_program *p) { return p->dir; }
const char *uopc_program_key(const uopc_program *p) { return p->key; }
int uopc_program_was_cached(const uopc_program *p) { return p->cached; }
