/* program.c: C programs compiled at run time (section 23.6).
 * The build pipeline (build.c, with the gcc back end) turns the source into a
 * cached kernel.so; this file adds the call adapter to the source before the
 * build, and loads the result after it: dlopen, then the entry and its
 * adapter. The adapter is generated C appended to the source: it unpacks
 * `void *args[]` into the entry's typed parameters, so uopc_program_call
 * needs no libffi and no cast of a function pointer to the wrong type. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include "uopc/uopc.h"
#include "internal.h"

struct uopc_program {
  void *handle;
  void (*entry)(void);
  void (*adapter)(void *const *args);
  uopc_counter_id calls;
  int cached;
  char key[65];
  char entry_name[UOPC_ENTRY_MAX + 1];
  char dir[PATH_MAX];
};

/* What program.c adds to a build: the source with its adapter, and the
 * settings beyond the flags that decide the bytes of the shared object. */
typedef struct request {
  uopc_build build;
  const char *signature;
  char target[320];         /* machine, plus the CPU when -march=native */
  char *source;             /* the source as compiled: the caller's text and the adapter */
} request;

static int check_signature(const char *entry, const char *signature, uopc_error *err) {
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
static int make_source(request *r, const char *source, uopc_error *err) {
  const char *entry = r->build.entry;
  size_t n = strlen(source) + 256 + strlen(r->signature) * 48;
  if (!(r->source = malloc(n))) return UOPC_FAIL(err, UOPC_E_NOMEM, "no memory for the source of '%s'", entry);
  int len = snprintf(r->source, n, "%s\n\n/* uopc call adapter: args[i] points to argument i (uopc/program.h). */\n"
                     "void uopc_call_%s(void *const *args) {\n  %s(", source, entry, entry);
  for (size_t i = 0; r->signature[i]; i++)
    len += snprintf(r->source + len, n - (size_t)len, "%s%sargs[%zu]", i ? ",\n      " : "",
                    adapter_cast(r->signature[i]), i);
  snprintf(r->source + len, n - (size_t)len, ");\n}\n");
  return UOPC_OK;
}

/* -march=native makes the object depend on this CPU, so the CPU joins the
 * key: its model and its feature list ("flags" on x86, "Features" on Arm),
 * hashed, since two machines can share a model name but not features. */
static void describe_target(request *r, int native) {
  struct utsname u;
  snprintf(r->target, sizeof r->target, "%s", uname(&u) == 0 ? u.machine : "unknown");
  if (!native) return;
  uopc_hash *h;
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f || uopc_hash_new(&h, NULL) != UOPC_OK) {
    if (f) fclose(f);
    snprintf(r->target + strlen(r->target), sizeof r->target - strlen(r->target), " native (CPU unknown)");
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
  snprintf(r->target + strlen(r->target), sizeof r->target - strlen(r->target), " native cpu %.16s", hex);
}

/* ISO C and no contraction into fused multiply-adds: results match the eager
 * reference bit for bit wherever the operations are the same. An entry that
 * the source never declares fails at the compile (the adapter calls it), not
 * at dlopen. */
int uopc_under_valgrind(void) {
  const char *preload = getenv("LD_PRELOAD");
  return preload && strstr(preload, "vgpreload") != NULL;
}

static int prepare(request *r, const char *source, const uopc_program_options *opts, uopc_error *err) {
  uopc_program_options none = {0};
  if (!opts) opts = &none;
  int native = opts->march_native && !uopc_under_valgrind();
  const char *cc = opts->compiler ? opts->compiler : getenv("UOPC_CC");
  const char *opt = opts->opt_flags ? opts->opt_flags : "-O3";
  uopc_build *b = &r->build;
  b->backend = &uopc_backend_gcc;
  b->compiler_name = cc && *cc ? cc : NULL;
  b->cache_dir = opts->cache_dir;
  if (snprintf(b->flags, sizeof b->flags, "-std=c11 -ffp-contract=off -Werror=implicit-function-declaration "
               "-fPIC -shared %s%s%s", opt, native ? " -march=native" : "",
               opts->openmp ? " -fopenmp" : "") >= (int)sizeof b->flags)
    return UOPC_FAIL(err, UOPC_E_INVALID, "compiler flags '%s' are longer than %zu bytes", opt, sizeof b->flags - 64);
  describe_target(r, native);
  int rc = uopc_build_field(b, "target", r->target, err);
  if (!rc) rc = uopc_build_field(b, "signature", r->signature, err);
  if (!rc) rc = make_source(r, source, err);
  b->source = r->source;
  return rc;
}

/* What prepare and the build would find first, without building. */
int uopc_program_check(const uopc_program_options *opts, uopc_error *err) {
  uopc_program_options none = {0};
  if (!opts) opts = &none;
  const char *cc = opts->compiler ? opts->compiler : getenv("UOPC_CC");
  uopc_compiler found;
  uopc_cache cache;
  uopc_error why = {0};
  int rc = uopc_cache_open(&cache, opts->cache_dir, err);   /* in uopc_build_run's order */
  if (!rc && uopc_compiler_identify(cc && *cc ? cc : "gcc", &found, &why))
    rc = UOPC_FAIL(err, why.code, "no C compiler: %s; install gcc, or name one in UOPC_CC", why.message);
  return rc;
}

/* dlerror() is NULL after an injected failure, which no dlopen reported. */
static const char *dlerror_or_injected(void) {
  const char *why = dlerror();
  return why ? why : "injected failure (UOPC_FAULT_DLOPEN)";
}

static int load(uopc_program *p, const char *so_path, uopc_error *err) {
  char adapter[UOPC_ENTRY_MAX + 16];
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

/* A test build can lose the entry here, as another process's eviction would. */
static void lose_entry_if_injected(const uopc_build *b) {
  if (uopc_fault_hit(UOPC_FAULT_EVICT)) uopc_cache_discard(&b->cache, b->entry, b->key);
}

/* Another process may evict the entry between the lookup (or the publish)
 * and dlopen: then the pipeline runs again, looks it up, misses and compiles.
 * A found object that is still there, whose bytes verify, but which does not
 * load is stale: the pipeline builds it once more. */
static int build_and_load(uopc_program *p, uopc_build *b, uopc_error *err) {
  int rc = UOPC_OK, lost = 0;
  for (int tries = 0; tries < UOPC_BUILD_TRIES; tries++) {
    if ((rc = uopc_build_run(b, err))) return rc;
    lose_entry_if_injected(b);
    rc = load(p, b->artifact_path, err);
    if (!(lost = rc != UOPC_OK && uopc_build_lost(b))) break;
  }
  if (lost) return uopc_build_fail_lost(b, err);
  if (rc != UOPC_OK && b->cached && !(rc = uopc_build_again(b, err))) rc = load(p, b->artifact_path, err);
  return rc;
}

int uopc_program_new(uopc_program **out, const char *source, const char *entry,
                     const char *signature, const uopc_program_options *opts, uopc_error *err) {
  *out = NULL;
  int rc = uopc_build_check_names(source, entry, err);
  if (!rc) rc = check_signature(entry, signature, err);
  if (rc) return rc;
  uopc_program *p = calloc(1, sizeof *p);
  request *r = calloc(1, sizeof *r);
  if (!p || !r) { free(p); free(r); return UOPC_FAIL(err, UOPC_E_NOMEM, "no memory for program '%s'", entry); }
  r->build.entry = entry;
  r->signature = signature;
  snprintf(p->entry_name, sizeof p->entry_name, "%s", entry);
  rc = prepare(r, source, opts, err);
  if (rc == UOPC_OK) rc = build_and_load(p, &r->build, err);
  if (rc == UOPC_OK) {
    p->cached = r->build.cached;
    snprintf(p->key, sizeof p->key, "%s", r->build.key);
    snprintf(p->dir, sizeof p->dir, "%s", r->build.dir);
  }
  free(r->source);
  free(r);
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
