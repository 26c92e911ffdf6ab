/* counters.c: the process-wide counter registry (section 23.6, "Counters").
 * Counters are global by contract: they describe the whole process, and the
 * grader reads them at exit. Slots are never moved or freed (they stay
 * reachable until the process ends, so leak checkers do not report them), so a
 * program can keep a pointer to its "calls <entry>" slot and count with one
 * atomic add on its hot path. */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include "uopc/counters.h"
#include "uopc/debug.h"
#include "internal.h"

typedef struct counter {
  struct counter *next;
  int64_t value;
  char name[UOPC_COUNTER_NAME_MAX];
} counter;

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static counter *first, *last;
static int initialised;

/* A path the counters cannot be written to is warned about (once: this runs
 * once), never fatal: the program's own work is done. */
static void write_at_exit(void) {
  const char *path = getenv("UOPC_COUNTERS_JSON");
  uopc_error err;
  uopc_error_clear(&err);
  if (path && *path && uopc_counters_write_json(path, &err))
    uopc_warn("UOPC_COUNTERS_JSON='%s': %s; the counters were not written", path, err.message);
  if (uopc_debug_level() >= 1) uopc_counters_print(stderr);
}

static counter *find(const char *name) {
  for (counter *c = first; c; c = c->next)
    if (strcmp(c->name, name) == 0) return c;
  return NULL;
}

static counter *add_locked(const char *name) {
  counter *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  strcpy(c->name, name);
  if (last) last->next = c; else first = c;
  last = c;
  return c;
}

/* The runtime's counters exist from the start, at zero and in this order, so
 * that every log shows "disk cache hits=0" rather than leaving it out. Not
 * "cache evictions": graders and students compare these logs line by line,
 * and one that no lab's run can move would only add a line to every log. */
static void add_runtime_counters_locked(void) {
  static const char *const names[] = {UOPC_C_PROGRAMS_CONSTRUCTED, UOPC_C_COMPILER_INVOCATIONS,
                                      UOPC_C_DISK_CACHE_HITS, UOPC_C_DISK_CACHE_MISSES, UOPC_C_CORRUPTED_REBUILT};
  if (initialised) return;
  initialised = 1;
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) add_locked(names[i]);
  atexit(write_at_exit);
}

int64_t *uopc_counter_slot(const char *name) {
  if (!name || strlen(name) >= UOPC_COUNTER_NAME_MAX) return NULL;
  pthread_mutex_lock(&registry_lock);
  add_runtime_counters_locked();
  counter *c = find(name);
  if (!c) c = add_locked(name);
  pthread_mutex_unlock(&registry_lock);
  return c ? &c->value : NULL;
}

void uopc_counter_add(const char *name, int64_t delta) {
  int64_t *slot = uopc_counter_slot(name);
  if (slot) __atomic_add_fetch(slot, delta, __ATOMIC_RELAXED);
}

int64_t uopc_counter_get(const char *name) {
  pthread_mutex_lock(&registry_lock);
  counter *c = name ? find(name) : NULL;
  int64_t v = c ? __atomic_load_n(&c->value, __ATOMIC_RELAXED) : 0;
  pthread_mutex_unlock(&registry_lock);
  return v;
}

void uopc_counters_print(FILE *out) {
  pthread_mutex_lock(&registry_lock);
  add_runtime_counters_locked();
  for (counter *c = first; c; c = c->next)
    fprintf(out, "%s=%lld\n", c->name, (long long)__atomic_load_n(&c->value, __ATOMIC_RELAXED));
  pthread_mutex_unlock(&registry_lock);
}

/* Counter names are ours (letters, digits, spaces, '_', '.'), but escape
 * anyway so that the file is JSON whatever a lab registers. */
static void put_json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') fprintf(f, "\\%c", *s);
    else if ((unsigned char)*s < 0x20) fprintf(f, "\\u%04x", *s);
    else fputc(*s, f);
  }
  fputc('"', f);
}

int uopc_counters_write_json(const char *path, uopc_error *err) {
  char tmp[PATH_MAX];
  if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp)
    return UOPC_FAIL(err, UOPC_E_INVALID, "counters path '%s' is longer than %d bytes", path, PATH_MAX - 16);
  FILE *f = fopen(tmp, "w");
  if (!f) return UOPC_FAIL(err, UOPC_E_IO, "cannot write counters to '%s': %m", tmp);
  pthread_mutex_lock(&registry_lock);
  add_runtime_counters_locked();
  fputs("{", f);
  for (counter *c = first; c; c = c->next) {
    fputs(c == first ? "\n  " : ",\n  ", f);
    put_json_string(f, c->name);
    fprintf(f, ": %lld", (long long)__atomic_load_n(&c->value, __ATOMIC_RELAXED));
  }
  fputs("\n}\n", f);
  pthread_mutex_unlock(&registry_lock);
  if (fclose(f) != 0 || rename(tmp, path) != 0) {
    remove(tmp);
    return UOPC_FAIL(err, UOPC_E_IO, "cannot write counters to '%s': %m", path);
  }
  return UOPC_OK;
}

void uopc_counters_reset(void) {
  pthread_mutex_lock(&registry_lock);
  for (counter *c = first; c; c = c->next) __atomic_store_n(&c->value, 0, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&registry_lock);
}
