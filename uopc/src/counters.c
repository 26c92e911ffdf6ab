/* counters.c: the process-wide counter registry (chapter 23, "Counters").
 * Counters are global by contract: they describe the whole process, and the
 * grader reads them at exit. Each thread counts into a table of its own
 * (counters.h says why), kept in a list under the registry lock; a read sums
 * the live tables and what exited threads left behind. Counters and tables
 * are never moved (blocks are added, not grown), so an id and a cell stay
 * valid; what is never freed stays reachable, so leak checkers stay quiet. */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include "uopc/counters.h"
#include "uopc/debug.h"
#include "internal.h"

typedef struct counter {
  int64_t retired;          /* counted by threads that have exited */
  char name[UOPC_COUNTER_NAME_MAX];
} counter;

/* One thread's cells. */
typedef struct table {
  struct table *next;
  int64_t *blocks[UOPC_COUNTER_CHUNKS];
} table;

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static counter **by_id;      /* by_id[id] */
static int n_counters, cap_counters;
static table *tables;        /* the live threads' */
static int initialised;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t table_key;

__thread int64_t **uopc_counter_cells_ __attribute__((tls_model("initial-exec")));

/* A thread's value of id; under the lock. */
static int64_t cell_of(const table *t, int id) {
  const int64_t *block = __atomic_load_n(&t->blocks[id / UOPC_COUNTER_CHUNK], __ATOMIC_ACQUIRE);
  return block ? __atomic_load_n(&block[id % UOPC_COUNTER_CHUNK], __ATOMIC_RELAXED) : 0;
}

static int64_t value_locked(int id) {
  int64_t v = by_id[id]->retired;
  for (const table *t = tables; t; t = t->next) v += cell_of(t, id);
  return v;
}

/* A thread's exit: its counts move to the counters' retired totals. */
static void retire(void *arg) {
  table *t = arg;
  pthread_mutex_lock(&registry_lock);
  for (int id = 0; id < n_counters; id++) by_id[id]->retired += cell_of(t, id);
  table **link = &tables;
  while (*link && *link != t) link = &(*link)->next;
  if (*link) *link = t->next;
  pthread_mutex_unlock(&registry_lock);
  uopc_counter_cells_ = NULL;
  for (int b = 0; b < UOPC_COUNTER_CHUNKS; b++) free(t->blocks[b]);
  free(t);
}

static void make_key(void) { pthread_key_create(&table_key, retire); }

void uopc_counter_bump_slow(uopc_counter_id id, int64_t delta) {
  if (id < 0 || id >= UOPC_COUNTER_CHUNK * UOPC_COUNTER_CHUNKS) return;
  pthread_once(&key_once, make_key);
  table *t = pthread_getspecific(table_key);
  if (!uopc_counter_cells_) {
    if (!(t = calloc(1, sizeof *t))) return;   /* never fatal: this count is lost */
    pthread_mutex_lock(&registry_lock);
    t->next = tables;
    tables = t;
    pthread_mutex_unlock(&registry_lock);
    pthread_setspecific(table_key, t);
    uopc_counter_cells_ = t->blocks;
  }
  int b = id / UOPC_COUNTER_CHUNK;
  if (!t->blocks[b]) {
    int64_t *block = calloc(UOPC_COUNTER_CHUNK, sizeof *block);
    if (!block) return;
    __atomic_store_n(&t->blocks[b], block, __ATOMIC_RELEASE);   /* readers take the lock, not this thread's */
  }
  uopc_counter_bump(id, delta);
}

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

static int find(const char *name) {
  for (int id = 0; id < n_counters; id++)
    if (strcmp(by_id[id]->name, name) == 0) return id;
  return -1;
}

static counter *add_locked(const char *name) {
  if (n_counters == UOPC_COUNTER_CHUNK * UOPC_COUNTER_CHUNKS) return NULL;
  if (n_counters == cap_counters) {
    int cap = cap_counters ? 2 * cap_counters : 64;
    counter **grown = realloc(by_id, (size_t)cap * sizeof *grown);
    if (!grown) return NULL;
    by_id = grown;
    cap_counters = cap;
  }
  counter *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  strcpy(c->name, name);
  by_id[n_counters++] = c;
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

uopc_counter_id uopc_counter_slot(const char *name) {
  if (!name || strlen(name) >= UOPC_COUNTER_NAME_MAX) return UOPC_COUNTER_NONE;
  pthread_mutex_lock(&registry_lock);
  add_runtime_counters_locked();
  int id = find(name);
  if (id < 0 && add_locked(name)) id = n_counters - 1;
  pthread_mutex_unlock(&registry_lock);
  return id;
}

void uopc_counter_add(const char *name, int64_t delta) {
  uopc_counter_bump(uopc_counter_slot(name), delta);
}

int64_t uopc_counter_get(const char *name) {
  pthread_mutex_lock(&registry_lock);
  int id = name ? find(name) : -1;
  int64_t v = id >= 0 ? value_locked(id) : 0;
  pthread_mutex_unlock(&registry_lock);
  return v;
}

void uopc_counters_print(FILE *out) {
  pthread_mutex_lock(&registry_lock);
  add_runtime_counters_locked();
  for (int id = 0; id < n_counters; id++) fprintf(out, "%s=%lld\n", by_id[id]->name, (long long)value_locked(id));
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
    return UOPC_FAIL(err, UOPC_E_INVALID, "counters path is longer than %d bytes: '%s'", PATH_MAX - 16, path);
  FILE *f = fopen(tmp, "w");
  if (!f) return UOPC_FAIL(err, UOPC_E_IO, "cannot write counters to '%s': %m", tmp);
  pthread_mutex_lock(&registry_lock);
  add_runtime_counters_locked();
  fputs("{", f);
  for (int id = 0; id < n_counters; id++) {
    fputs(id == 0 ? "\n  " : ",\n  ", f);
    put_json_string(f, by_id[id]->name);
    fprintf(f, ": %lld", (long long)value_locked(id));
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
  for (int id = 0; id < n_counters; id++) {
    by_id[id]->retired = 0;
    for (table *t = tables; t; t = t->next) {
      int64_t *block = t->blocks[id / UOPC_COUNTER_CHUNK];
      if (block) __atomic_store_n(&block[id % UOPC_COUNTER_CHUNK], 0, __ATOMIC_RELAXED);
    }
  }
  pthread_mutex_unlock(&registry_lock);
}
