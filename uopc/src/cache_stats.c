/* cache_stats.c: the disk cache's statistics (section 23.6, "The cache on
 * disk"), as `ccache -s` shows them. <cache>/stats holds the running total
 * that the size limit is checked against and the events of every process
 * that used the cache; it is rewritten whole, in place, while <cache>/lock is
 * held, and read under the same lock, so a reader sees one version or the
 * next. A hit
 * writes nothing: a process keeps its events until it writes the file anyway
 * (a publish or a discard in that cache), until they are a minute old, or
 * until it exits. It stands on file.c (the file read whole) and cache_scan.c
 * (a cache with no total yet is counted by a scan); eviction and entries
 * call it, never the other way round. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>
#include "uopc/counters.h"
#include "uopc/debug.h"
#include "internal.h"

#define FLUSH_SECONDS 60
#define STATS_BYTES 1024
#define SIZE_FORM "digits, then optionally K, M, G or T (powers of 1024), e.g. 500M or 2G; 0 is no limit"

static const char *const event_keys[UOPC_CACHE_EVENTS] = {"hits", "misses", "evictions", "corrupted_rebuilt"};
static const char *const event_counters[UOPC_CACHE_EVENTS] = {
  UOPC_C_DISK_CACHE_HITS, UOPC_C_DISK_CACHE_MISSES, UOPC_C_CACHE_EVICTIONS, UOPC_C_CORRUPTED_REBUILT};

/* ---- the limit ------------------------------------------------------------- */

static int64_t suffix_scale(char c) {
  switch (c) {
  case '\0': return 1;
  case 'K': case 'k': return (int64_t)1 << 10;
  case 'M': case 'm': return (int64_t)1 << 20;
  case 'G': case 'g': return (int64_t)1 << 30;
  case 'T': case 't': return (int64_t)1 << 40;
  default: return 0;
  }
}

int uopc_cache_parse_size(const char *name, const char *text, int64_t *bytes, uopc_error *err) {
  size_t digits = strspn(text, "0123456789");
  int64_t scale = digits ? suffix_scale(text[digits]) : 0;
  if (!scale || (text[digits] && text[digits + 1]))
    return UOPC_FAIL(err, UOPC_E_INVALID, "%s = '%s' is not a size: " SIZE_FORM, name, text);
  uint64_t n = 0;   /* unsigned: one digit past 2^60 fits (2^60 * 10 + 9 < 2^64), it would not in int64_t */
  for (size_t i = 0; i < digits && n <= (uint64_t)UOPC_CACHE_SIZE_MAX; i++) n = n * 10 + (uint64_t)(text[i] - '0');
  if (n > (uint64_t)(UOPC_CACHE_SIZE_MAX / scale))
    return UOPC_FAIL(err, UOPC_E_INVALID, "%s = '%s' is larger than %lldT (2^60 bytes)", name, text,
                     (long long)(UOPC_CACHE_SIZE_MAX >> 40));
  *bytes = (int64_t)n * scale;
  return UOPC_OK;
}

int uopc_cache_max_size(int64_t *bytes, uopc_error *err) {
  const char *env = getenv("UOPC_CACHE_MAX_SIZE");
  if (!env || !*env) {
    *bytes = UOPC_CACHE_DEFAULT_MAX_SIZE;
    return UOPC_OK;
  }
  return uopc_cache_parse_size("UOPC_CACHE_MAX_SIZE", env, bytes, err);
}

/* ---- the lock and the file --------------------------------------------------- */

int uopc_cache_lock(const char *dir, int *fd, uopc_error *err) {
  char path[PATH_MAX];
  *fd = -1;
  if (snprintf(path, sizeof path, "%s/lock", dir) >= (int)sizeof path)
    return UOPC_FAIL(err, UOPC_E_IO, "path '%s/lock' is longer than PATH_MAX (%d)", dir, PATH_MAX);
  int f = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (f < 0) return UOPC_FAIL(err, UOPC_E_IO, "cannot open the cache's lock '%s': %m", path);
  int rc;
  while ((rc = flock(f, LOCK_EX)) != 0 && errno == EINTR) {}
  if (rc != 0) {
    close(f);
    return UOPC_FAIL(err, UOPC_E_IO, "cannot lock '%s': %m", path);
  }
  *fd = f;
  return UOPC_OK;
}

void uopc_cache_unlock(int fd) {
  if (fd >= 0) close(fd);   /* closing the last descriptor releases the flock */
}

static int read_value(const char *text, const char *key, int64_t *value) {
  size_t len = strlen(key);
  for (const char *line = text; line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
    if (strncmp(line, key, len) != 0 || line[len] != '=') continue;
    char *end;
    long long v = strtoll(line + len + 1, &end, 10);
    if (end == line + len + 1 || (*end != '\n' && *end != '\0') || v < 0) return 0;
    *value = v;
    return 1;
  }
  return 0;
}

void uopc_cache_record_read(const char *dir, uopc_cache_record *r) {
  char path[PATH_MAX], *text = NULL;
  size_t n;
  memset(r, 0, sizeof *r);
  if (snprintf(path, sizeof path, "%s/stats", dir) >= (int)sizeof path ||
      uopc_read_file(path, &text, &n, NULL) != UOPC_OK)
    return;
  r->known = read_value(text, "entries", &r->entries) && read_value(text, "bytes", &r->bytes);
  for (int i = 0; i < UOPC_CACHE_EVENTS; i++) read_value(text, event_keys[i], &r->events[i]);
  free(text);
}

/* In place, then cut to length: ext4 flushes a file's data when a rename
 * replaces it or when it is truncated to zero (its auto_da_alloc), which made
 * a rewrite-and-rename of this file cost 0.6 ms on every publish instead of
 * about 10 us (bench_23_6). Writers hold the lock, readers share it, so each sees whole records. */
static int write_record(const char *dir, const uopc_cache_record *r, uopc_error *err) {
  char path[PATH_MAX], text[STATS_BYTES];
  int n = snprintf(text, sizeof text, "# the disk cache's statistics (uopc/src/cache_stats.c); "
                   "rewritten in place while 'lock' is held\nentries=%lld\nbytes=%lld\n",
                   (long long)r->entries, (long long)r->bytes);
  for (int i = 0; i < UOPC_CACHE_EVENTS; i++)   /* 7 lines of at most 100 bytes: it fits */
    n += snprintf(text + n, sizeof text - (size_t)n, "%s=%lld\n", event_keys[i], (long long)r->events[i]);
  if (snprintf(path, sizeof path, "%s/stats", dir) >= (int)sizeof path)
    return UOPC_FAIL(err, UOPC_E_IO, "path '%s/stats' is longer than PATH_MAX (%d)", dir, PATH_MAX);
  int fd = uopc_fault_hit(UOPC_FAULT_CACHE_WRITE) ? (errno = ENOSPC, -1)
                                                 : open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return UOPC_FAIL(err, UOPC_E_IO, "cannot open '%s': %m", path);
  int whole = pwrite(fd, text, (size_t)n, 0) == n && ftruncate(fd, n) == 0;
  int cause = errno;
  if (close(fd) != 0 || !whole) return UOPC_FAIL(err, UOPC_E_IO, "cannot write '%s': %s", path, strerror(cause));
  return UOPC_OK;
}

/* What a reader outside the lock's writers sees (the shared lock; a cache
 * nobody has written to has no lock file, and nothing to read). */
static void read_shared(const char *dir, uopc_cache_record *r) {
  char path[PATH_MAX];
  int fd = snprintf(path, sizeof path, "%s/lock", dir) < (int)sizeof path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
  if (fd >= 0) while (flock(fd, LOCK_SH) != 0 && errno == EINTR) {}
  uopc_cache_record_read(dir, r);
  if (fd >= 0) close(fd);
}

/* ---- events not yet written ---------------------------------------------------
 * Process-wide, as the counters are, and for the same reason: they describe
 * the process, and exit writes them. One node per cache directory used. */
typedef struct pending {
  struct pending *next;
  int64_t n[UOPC_CACHE_EVENTS];
  time_t since;          /* when the oldest unwritten event was counted; 0: none */
  int used;              /* this process counted an event here (not its parent) */
  char dir[PATH_MAX];
} pending;

static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;
static pending *pendings;

static void at_exit(void);

/* A child inherits its parent's unwritten events; they are the parent's to
 * write, so the child starts from none. */
static void before_fork(void) { pthread_mutex_lock(&pending_lock); }
static void after_fork_parent(void) { pthread_mutex_unlock(&pending_lock); }
static void after_fork_child(void) {
  for (pending *p = pendings; p; p = p->next) {
    memset(p->n, 0, sizeof p->n);
    p->since = 0;
    p->used = 0;
  }
  pthread_mutex_unlock(&pending_lock);
}

static pending *find_locked(const char *dir) {
  pending *p = pendings;
  while (p && strcmp(p->dir, dir) != 0) p = p->next;
  if (p || !(p = calloc(1, sizeof *p))) return p;
  if (!pendings) {
    atexit(at_exit);
    pthread_atfork(before_fork, after_fork_parent, after_fork_child);
  }
  snprintf(p->dir, sizeof p->dir, "%s", dir);
  p->next = pendings;
  pendings = p;
  return p;
}

/* Moves dir's unwritten events into out (adding), or back from it (give_back). */
static void take_pending(const char *dir, int64_t out[UOPC_CACHE_EVENTS], int give_back) {
  pthread_mutex_lock(&pending_lock);
  pending *p = find_locked(dir);
  for (int i = 0; p && i < UOPC_CACHE_EVENTS; i++) {
    if (give_back) p->n[i] += out[i];
    else out[i] += p->n[i], p->n[i] = 0;
  }
  if (p) p->since = give_back ? time(NULL) : 0;
  pthread_mutex_unlock(&pending_lock);
}

int uopc_cache_record_write(const char *dir, uopc_cache_record *r, uopc_error *err) {
  int64_t mine[UOPC_CACHE_EVENTS] = {0};
  take_pending(dir, mine, 0);
  for (int i = 0; i < UOPC_CACHE_EVENTS; i++) r->events[i] += mine[i];
  int rc = write_record(dir, r, err);
  if (rc != UOPC_OK) take_pending(dir, mine, 1);
  return rc;
}

static int has_pending(const char *dir) {
  pthread_mutex_lock(&pending_lock);
  pending *p = find_locked(dir);
  int any = p && p->since != 0;
  pthread_mutex_unlock(&pending_lock);
  return any;
}

/* Writes dir's unwritten events, if any: read, add, write, under the lock. */
static void flush_dir(const char *dir) {
  uopc_cache_record r;
  uopc_error err = {0};
  struct stat st;
  if (!has_pending(dir) || stat(dir, &st) != 0) return;   /* a cache removed meanwhile keeps no statistics */
  int fd, rc = uopc_cache_lock(dir, &fd, &err);
  if (rc == UOPC_OK) {
    uopc_cache_record_read(dir, &r);
    if (!r.known) rc = uopc_cache_scan(dir, &r, &err);
    if (rc == UOPC_OK) rc = uopc_cache_record_write(dir, &r, &err);
    uopc_cache_unlock(fd);
  }
  if (rc != UOPC_OK) uopc_debug(2, "the statistics of '%s' are not written: %s", dir, err.message);
}

void uopc_cache_count(const char *dir, uopc_cache_event ev, int64_t n) {
  if (n == 0 || ev < 0 || ev >= UOPC_CACHE_EVENTS) return;
  uopc_counter_add(event_counters[ev], n);
  time_t now = time(NULL);
  pthread_mutex_lock(&pending_lock);
  pending *p = find_locked(dir);
  if (p) p->n[ev] += n, p->used = 1;
  if (p && !p->since) p->since = now;
  int due = p && now - p->since >= FLUSH_SECONDS;
  pthread_mutex_unlock(&pending_lock);
  if (due) flush_dir(dir);
}

/* The list only grows, so it can be walked outside the mutex. */
void uopc_cache_stats_flush(void) {
  pthread_mutex_lock(&pending_lock);
  pending *first = pendings;
  pthread_mutex_unlock(&pending_lock);
  for (pending *p = first; p; p = p->next) flush_dir(p->dir);
}

static void at_exit(void) {
  uopc_cache_stats_flush();
  if (uopc_debug_level() < 2) return;
  int64_t max_size;
  if (uopc_cache_max_size(&max_size, NULL) != UOPC_OK) max_size = UOPC_CACHE_DEFAULT_MAX_SIZE;
  struct stat st;
  for (pending *p = pendings; p; p = p->next)
    if (p->used && stat(p->dir, &st) == 0) uopc_cache_stats_print(stderr, "uopc: ", p->dir, max_size, 0);
}

/* ---- printing ------------------------------------------------------------------- */

static void put_size(char *out, size_t size, int64_t bytes) {
  static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = (double)bytes;
  int u = 0;
  while (v >= 1024 && u < 5) v /= 1024, u++;
  if (u == 0) snprintf(out, size, "%lld bytes", (long long)bytes);
  else snprintf(out, size, "%.1f %s", v, units[u]);
}

static void put_limit(char *out, size_t size, int64_t max_size) {
  const char *env = getenv("UOPC_CACHE_MAX_SIZE");
  char s[32];
  put_size(s, sizeof s, max_size);
  if (max_size == 0) snprintf(out, size, "none (UOPC_CACHE_MAX_SIZE=0)");
  else if (env && *env) snprintf(out, size, "%s (UOPC_CACHE_MAX_SIZE=%s; evicts down to 90 %%)", s, env);
  else snprintf(out, size, "%s (the default; UOPC_CACHE_MAX_SIZE sets it; evicts down to 90 %%)", s);
}

/* Whose counts these are: without UOPC_CACHE_DIR every tree and run of this user shares the
 * default directory, so its entries and events are not one tree's (issue 34). The caller, which
 * chose the directory, says whether it is that one (cache.c resolves it: above this file). */
static void put_where(char *out, size_t size, int shared, int exists) {
  const char *made = exists ? "" : "not created yet";
  if (shared)
    snprintf(out, size, " (the default, shared by every tree and run of this user without UOPC_CACHE_DIR: "
             "the counts below are theirs too%s%s)", exists ? "" : "; ", made);
  else snprintf(out, size, "%s%s%s", exists ? "" : " (", made, exists ? "" : ")");
}

void uopc_cache_stats_print(FILE *out, const char *prefix, const char *dir, int64_t max_size, int shared) {
  uopc_cache_record r;
  struct stat st;
  char size[32], limit[160], where[192];
  int exists = stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
  read_shared(dir, &r);
  if (exists && !r.known && uopc_cache_scan(dir, &r, NULL) != UOPC_OK) r.entries = r.bytes = 0;
  put_size(size, sizeof size, r.bytes);
  put_limit(limit, sizeof limit, max_size);
  put_where(where, sizeof where, shared, exists);
  fprintf(out, "%scache directory            %s%s\n", prefix, dir, where);
  fprintf(out, "%sentries                    %lld\n", prefix, (long long)r.entries);
  fprintf(out, "%stotal size                 %s\n", prefix, size);
  fprintf(out, "%slimit                      %s\n", prefix, limit);
  fprintf(out, "%shits                       %lld\n", prefix, (long long)r.events[UOPC_CACHE_HITS]);
  fprintf(out, "%smisses                     %lld\n", prefix, (long long)r.events[UOPC_CACHE_MISSES]);
  fprintf(out, "%sevictions                  %lld\n", prefix, (long long)r.events[UOPC_CACHE_EVICTIONS]);
  fprintf(out, "%scorrupted entries rebuilt  %lld\n", prefix, (long long)r.events[UOPC_CACHE_CORRUPTED]);
}
