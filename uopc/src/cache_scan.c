/* cache_scan.c: reading a cache directory's entries (section 23.6, "The
 * cache on disk"): an entry's size on disk, whether a name is an entry's,
 * and the walk that totals them (and lists them, for eviction). It reads
 * directories and writes nothing, so it sits below both files that need a
 * count: cache_stats.c scans a cache that has no running total yet, and
 * cache_evict.c lists one to evict from. With it their own layer, neither
 * of those calls the other back. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "internal.h"

int64_t uopc_cache_tree_size(const char *entry_dir) {
  DIR *d = opendir(entry_dir);
  struct stat st;
  if (!d) return 0;
  int64_t total = fstat(dirfd(d), &st) == 0 ? (int64_t)st.st_blocks * 512 : 0;
  for (struct dirent *e; (e = readdir(d));)
    if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
      total += (int64_t)st.st_blocks * 512;
  closedir(d);
  return total;
}

int uopc_cache_is_entry_name(const char *name) {
  size_t n = strlen(name);
  if (n < UOPC_CACHE_KEY_HEX + 2 || n > UOPC_CACHE_NAME_MAX || name[n - UOPC_CACHE_KEY_HEX - 1] != '-') return 0;
  return strspn(name + n - UOPC_CACHE_KEY_HEX, "0123456789abcdef") == UOPC_CACHE_KEY_HEX;
}

static int list_add(uopc_cache_listing *l, const char *name, struct timespec used, int64_t bytes, uopc_error *err) {
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 256;
    uopc_cache_entry_use *v = realloc(l->v, cap * sizeof *v);
    if (!v) return UOPC_FAIL(err, UOPC_E_NOMEM, "no memory to list %zu cache entries", cap);
    l->v = v;
    l->cap = cap;
  }
  uopc_cache_entry_use *u = &l->v[l->n++];
  u->used = used;
  u->bytes = bytes;
  memcpy(u->name, name, strlen(name) + 1);   /* an entry name: checked to fit */
  return UOPC_OK;
}

int uopc_cache_list_entries(const char *dir, uopc_cache_listing *l, uopc_cache_record *r, uopc_error *err) {
  DIR *d = opendir(dir);
  if (!d) return UOPC_FAIL(err, UOPC_E_IO, "cannot read cache directory '%s': %m", dir);
  char path[PATH_MAX];
  struct stat st;
  int rc = UOPC_OK;
  r->entries = r->bytes = 0;
  for (struct dirent *e; rc == UOPC_OK && (e = readdir(d));) {
    if (!uopc_cache_is_entry_name(e->d_name) || fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISDIR(st.st_mode) || snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path)
      continue;
    int64_t bytes = uopc_cache_tree_size(path);
    r->entries++;
    r->bytes += bytes;
    if (l) rc = list_add(l, e->d_name, st.st_mtim, bytes, err);
  }
  closedir(d);
  r->known = rc == UOPC_OK;
  return rc;
}

int uopc_cache_scan(const char *dir, uopc_cache_record *r, uopc_error *err) {
  return uopc_cache_list_entries(dir, NULL, r, err);
}
