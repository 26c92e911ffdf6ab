/* cache_evict.c: the disk cache's size limit (section 23.6, "The cache on
 * disk"). Each publish adds the new entry to a running total kept in the
 * stats file, so checking the limit costs one small read and write, never a
 * walk of the cache. Only past the limit is the cache read whole: each
 * entry's size and last use (its directory's mtime, which a hit renews at
 * most once a minute), and the least recently used are moved into a trash
 * directory until the total is down to 90 % of the limit, so that the next
 * publishes need no eviction. Moving first, as discarding does, means that a
 * reader finds an entry whole or not at all; a process that loses an entry
 * between its lookup and dlopen builds it again (program.c, cuda.c).
 * A layer above cache_stats.c (the total it reads and writes) and
 * cache_scan.c (the listing it evicts from), and below cache.c, which calls it
 * after each publish and discard: it never calls up into either. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "uopc/counters.h"
#include "internal.h"

/* Least recently used first; the name breaks ties, so the order is the same
 * in every process. */
static int older_first(const void *a, const void *b) {
  const uopc_cache_entry_use *x = a, *y = b;
  if (x->used.tv_sec != y->used.tv_sec) return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
  if (x->used.tv_nsec != y->used.tv_nsec) return x->used.tv_nsec < y->used.tv_nsec ? -1 : 1;
  return strcmp(x->name, y->name);
}

/* Moves entries, oldest first and never keep, into trash until r's total is
 * at most low. An entry that will not move stays, and stays counted. */
static int64_t move_oldest(const char *dir, const uopc_cache_listing *l, const char *keep, int64_t low,
                           const char *trash, uopc_cache_record *r) {
  char from[PATH_MAX], to[PATH_MAX];
  int64_t moved = 0;
  for (size_t i = 0; i < l->n && r->bytes > low; i++) {
    const uopc_cache_entry_use *u = &l->v[i];
    if ((keep && strcmp(u->name, keep) == 0) || snprintf(from, sizeof from, "%s/%s", dir, u->name) >= PATH_MAX ||
        snprintf(to, sizeof to, "%s/%s", trash, u->name) >= PATH_MAX)
      continue;
    if (uopc_fault_hit(UOPC_FAULT_RENAME) || rename(from, to) != 0) continue;
    r->entries--;
    r->bytes -= u->bytes;
    moved++;
  }
  return moved;
}

/* Reads the cache whole (the total is corrected on the way: a hand-removed
 * entry, a process that died between its rename and its count) and evicts
 * down to 90 % of the limit. */
static int evict(const uopc_cache *c, uopc_cache_record *r, const char *keep, char trash[PATH_MAX],
                 uopc_error *err) {
  uopc_cache_listing l = {0};
  int rc = uopc_cache_list_entries(c->dir, &l, r, err);
  if (rc == UOPC_OK && r->bytes > c->max_size) {
    if (snprintf(trash, PATH_MAX, "%s/tmp/trash-XXXXXX", c->dir) >= PATH_MAX || !mkdtemp(trash)) {
      rc = UOPC_FAIL(err, UOPC_E_IO, "cannot make a trash directory in '%s/tmp' to evict into: %m", c->dir);
      trash[0] = '\0';
    }
  }
  if (rc == UOPC_OK && *trash) {
    qsort(l.v, l.n, sizeof *l.v, older_first);
    const char *keep_name = keep && strrchr(keep, '/') ? strrchr(keep, '/') + 1 : keep;
    int64_t n = move_oldest(c->dir, &l, keep_name, c->max_size - c->max_size / 10, trash, r);
    r->events[UOPC_CACHE_EVICTIONS] += n;
    if (n) uopc_counter_add(UOPC_C_CACHE_EVICTIONS, n);   /* not uopc_cache_count: it may take the lock */
  }
  free(l.v);
  return rc;
}

int uopc_cache_account(const uopc_cache *c, int64_t entries, int64_t bytes, const char *keep,
                       char trash[PATH_MAX], uopc_error *err) {
  uopc_cache_record r;
  int rc = UOPC_OK;
  trash[0] = '\0';
  uopc_cache_record_read(c->dir, &r);
  r.entries += entries;
  r.bytes += bytes;
  /* No total yet (a new cache, or one older than the limit), or one that
   * went negative (entries removed by hand): count afresh, this change included. */
  if (!r.known || r.entries < 0 || r.bytes < 0) rc = uopc_cache_scan(c->dir, &r, err);
  if (rc == UOPC_OK && c->max_size > 0 && r.bytes > c->max_size) rc = evict(c, &r, keep, trash, err);
  if (!r.known) return rc;
  int written = uopc_cache_record_write(c->dir, &r, rc == UOPC_OK ? err : NULL);
  return rc == UOPC_OK ? written : rc;
}

void uopc_cache_touch(const char *entry_dir, const struct stat *st) {
  if (time(NULL) - st->st_mtime < UOPC_CACHE_TOUCH_SECONDS) return;
  utimensat(AT_FDCWD, entry_dir, NULL, 0);   /* evicted meanwhile: nothing left to mark */
}
