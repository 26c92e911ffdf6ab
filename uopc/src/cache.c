/* cache.c: the disk cache (section 23.6, "Cold and warm", "The cache on disk").
 * An entry is a directory <cache>/<entry>-<key> holding the source as compiled,
 * the artifact (kernel.so or kernel.ptx) and a manifest with the artifact's
 * size and SHA-256. It is built in a private staging directory and published
 * with one rename, so readers see a whole entry or none, and when several
 * processes build the same key the first rename wins and the rest use it.
 * Entries leave the same way, by one rename into tmp/: a corrupted one here,
 * the least recently used past the size limit in cache_evict.c. The top of
 * the cache's layers (internal.h): it calls the four below it, and none of
 * them calls it. */
#include <dirent.h>
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "uopc/counters.h"
#include "uopc/debug.h"
#include "internal.h"

#define MANIFEST_MAX 65536
#define STALE_SECONDS (24 * 60 * 60)

static int join(char out[PATH_MAX], uopc_error *err, const char *fmt, const char *a, const char *b) {
  if (snprintf(out, PATH_MAX, fmt, a, b) >= PATH_MAX)
    return UOPC_FAIL(err, UOPC_E_INVALID, "path '%s/%s' is longer than PATH_MAX (%d)", a, b, PATH_MAX);
  return UOPC_OK;
}

static int default_dir(char out[PATH_MAX], uopc_error *err) {
  const char *env = getenv("UOPC_CACHE_DIR");
  if (env && *env) return join(out, err, "%s%s", env, "");
  env = getenv("XDG_CACHE_HOME");
  if (env && *env) return join(out, err, "%s/%s", env, "uopc");
  const char *home = getenv("HOME");
  struct passwd *pw = (home && *home) ? NULL : getpwuid(geteuid());
  if (pw) home = pw->pw_dir;
  if (!home || !*home) return UOPC_FAIL(err, UOPC_E_IO, "no cache directory: UOPC_CACHE_DIR, XDG_CACHE_HOME and HOME are unset");
  return join(out, err, "%s/%s", home, ".cache/uopc");
}

/* mkdir -p with mode 0700 for every directory it creates. */
static int make_dirs(const char *path, uopc_error *err) {
  char buf[PATH_MAX];
  snprintf(buf, sizeof buf, "%s", path);
  for (char *p = buf + 1; ; p++) {
    if (*p != '/' && *p != '\0') continue;
    char saved = *p;
    *p = '\0';
    if (mkdir(buf, 0700) != 0 && errno != EEXIST)
      return UOPC_FAIL(err, UOPC_E_IO, "cannot create cache directory '%s': %m", buf);
    *p = saved;
    if (saved == '\0') return UOPC_OK;
  }
}

/* The fix for a directory that is not the user's to make private (a shared
 * sticky one such as /tmp, or another user's): a private directory inside
 * it. Chmod there would fail, or take /tmp from everyone. */
static void private_subdir_advice(const char *path, char *buf, size_t size) {
  const char *user = getenv("USER");
  struct passwd *pw = user && *user ? NULL : getpwuid(geteuid());
  char uid[32];
  snprintf(uid, sizeof uid, "%u", (unsigned)geteuid());
  if (!(user && *user)) user = pw ? pw->pw_name : uid;
  snprintf(buf, size, "mkdir -m 700 '%s/uopc-%s' and set UOPC_CACHE_DIR='%s/uopc-%s'", path, user, path, user);
}

/* A directory others can write to could receive a planted shared object,
 * which the next cache hit would dlopen and run. */
static int check_private(const char *path, uopc_error *err) {
  struct stat st;
  char fix[2 * PATH_MAX + 128];
  if (stat(path, &st) != 0) return UOPC_FAIL(err, UOPC_E_IO, "cannot stat cache directory '%s': %m", path);
  if (!S_ISDIR(st.st_mode)) return UOPC_FAIL(err, UOPC_E_IO, "cache path '%s' is not a directory", path);
  private_subdir_advice(path, fix, sizeof fix);
  if (st.st_uid != geteuid())
    return UOPC_FAIL(err, UOPC_E_UNSAFE_CACHE,
                     "cache directory '%s' is owned by uid %u, not by you (uid %u): a shared object planted "
                     "there would be run. Fix: %s",
                     path, (unsigned)st.st_uid, (unsigned)geteuid(), fix);
  if ((st.st_mode & 022) && (st.st_mode & S_ISVTX))   /* shared by design: never chmod it */
    return UOPC_FAIL(err, UOPC_E_UNSAFE_CACHE,
                     "cache directory '%s' is a shared directory (mode %04o, sticky): a shared object planted "
                     "there would be run. Fix: %s",
                     path, (unsigned)(st.st_mode & 07777), fix);
  if (st.st_mode & 022)
    return UOPC_FAIL(err, UOPC_E_UNSAFE_CACHE,
                     "cache directory '%s' is writable by group or others (mode %04o, at most 0755 allowed): "
                     "a shared object planted there would be run. Fix: chmod 700 '%s', or set UOPC_CACHE_DIR "
                     "to a private directory",
                     path, (unsigned)(st.st_mode & 07777), path);
  return UOPC_OK;
}

int uopc_cache_resolve(const char *dir, char out[PATH_MAX], uopc_error *err) {
  return dir && *dir ? join(out, err, "%s%s", dir, "") : default_dir(out, err);
}

int uopc_cache_open(uopc_cache *c, const char *dir, uopc_error *err) {
  int rc = uopc_cache_max_size(&c->max_size, err);
  char sub[PATH_MAX];
  if (rc == UOPC_OK) rc = uopc_cache_resolve(dir, c->dir, err);
  if (rc == UOPC_OK && strlen(c->dir) > PATH_MAX - 256)   /* room for "<entry>-<key>/kernel.so" */
    rc = UOPC_FAIL(err, UOPC_E_INVALID, "cache directory '%s' is longer than %d bytes", c->dir, PATH_MAX - 256);
  if (rc == UOPC_OK) rc = make_dirs(c->dir, err);
  if (rc == UOPC_OK) rc = check_private(c->dir, err);
  if (rc == UOPC_OK) rc = join(sub, err, "%s/%s", c->dir, "tmp");
  if (rc == UOPC_OK && mkdir(sub, 0700) != 0 && errno != EEXIST)
    rc = UOPC_FAIL(err, UOPC_E_IO, "cannot create '%s': %m", sub);
  return rc;
}

int uopc_cache_entry_dir(const uopc_cache *c, const char *entry, const char *key,
                         char out[PATH_MAX], uopc_error *err) {
  if (snprintf(out, PATH_MAX, "%s/%s-%s", c->dir, entry, key) >= PATH_MAX)
    return UOPC_FAIL(err, UOPC_E_INVALID, "cache entry path for '%s' is longer than PATH_MAX (%d)", entry, PATH_MAX);
  return UOPC_OK;
}

/* Moves an entry aside before deleting it, so that no reader ever sees it
 * half removed; under the lock, so that the running total loses it in the
 * same step (a failure there is left for the next eviction's count to mend). */
int uopc_cache_discard_dir(const uopc_cache *c, const char *entry_dir) {
  char trash[PATH_MAX], evicted[PATH_MAX] = "";
  uopc_error err = {0};
  int fd, counted = uopc_cache_lock(c->dir, &fd, &err) == UOPC_OK;
  int64_t bytes = uopc_cache_tree_size(entry_dir);
  int moved;
  if (!join(trash, NULL, "%s/%s", c->dir, "tmp/trash-XXXXXX") && mkdtemp(trash)) {
    moved = rename(entry_dir, trash) == 0;
    if (!moved) rmdir(trash);   /* gone already: evicted, or discarded by another process */
  } else {
    moved = access(entry_dir, F_OK) == 0;   /* no room in tmp/: removed in place, readers or not */
    uopc_remove_tree(entry_dir);
    trash[0] = '\0';
  }
  if (moved && counted) counted = uopc_cache_account(c, -1, -bytes, NULL, evicted, &err) == UOPC_OK;
  uopc_cache_unlock(fd);
  if (moved && !counted) uopc_debug(2, "the cache's total is not updated for '%s': %s", entry_dir, err.message);
  if (moved && *trash) uopc_remove_tree(trash);
  if (*evicted) uopc_remove_tree(evicted);
  return moved;
}

int uopc_cache_discard(const uopc_cache *c, const char *entry, const char *key) {
  char dir[PATH_MAX];
  return uopc_cache_entry_dir(c, entry, key, dir, NULL) == UOPC_OK && uopc_cache_discard_dir(c, dir);
}

/* Finds "name=value" on its own line of a manifest; copies the value. */
static int manifest_get(const char *text, const char *name, char *value, size_t size) {
  size_t len = strlen(name);
  for (const char *line = text; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
    if (strncmp(line, name, len) != 0 || line[len] != '=') continue;
    const char *v = line + len + 1;
    size_t n = strcspn(v, "\n");
    if (n >= size) return 0;
    memcpy(value, v, n);
    value[n] = '\0';
    return 1;
  }
  return 0;
}

/* 1 when the manifest names this key and artifact and the artifact's bytes match. */
static int entry_is_whole(const char *manifest, const char *key, const char *artifact, const char *path) {
  char value[128], hex[65];
  struct stat st;
  if (!manifest_get(manifest, "key", value, sizeof value) || strcmp(value, key) != 0) return 0;
  if (!manifest_get(manifest, "artifact", value, sizeof value) || strcmp(value, artifact) != 0) return 0;
  if (!manifest_get(manifest, "artifact_size", value, sizeof value) || stat(path, &st) != 0 ||
      strtoll(value, NULL, 10) != (long long)st.st_size) return 0;
  return manifest_get(manifest, "artifact_sha256", value, sizeof value) &&
         uopc_hash_file(path, hex, NULL) == UOPC_OK && strcmp(value, hex) == 0;
}

int uopc_cache_lookup(const uopc_cache *c, const char *entry, const char *key,
                      const char *artifact, char artifact_path[PATH_MAX], uopc_error *err) {
  char dir[PATH_MAX], manifest_path[PATH_MAX];
  if (uopc_cache_entry_dir(c, entry, key, dir, err) || join(manifest_path, err, "%s/%s", dir, "manifest") ||
      join(artifact_path, err, "%s/%s", dir, artifact))
    return -1;
  struct stat st;
  if (stat(dir, &st) != 0) {
    uopc_cache_count(c->dir, UOPC_CACHE_MISSES, 1);
    return 0;
  }
  char *manifest = NULL;
  size_t n;
  int whole = uopc_read_file(manifest_path, &manifest, &n, NULL) == UOPC_OK &&
              entry_is_whole(manifest, key, artifact, artifact_path);
  free(manifest);
  if (!whole) {
    /* Not moved: another process evicted it while it was read, which is a
     * plain miss, or discarded it and counted the corruption itself. */
    if (uopc_cache_discard_dir(c, dir)) uopc_cache_count(c->dir, UOPC_CACHE_CORRUPTED, 1);
    uopc_cache_count(c->dir, UOPC_CACHE_MISSES, 1);
    return 0;
  }
  uopc_cache_touch(dir, &st);
  uopc_cache_count(c->dir, UOPC_CACHE_HITS, 1);
  return 1;
}

/* Staging and trash directories left by a process that died mid-build are
 * removed once a day old. Only a build (a miss) pays for the look: hits never
 * read tmp/. A day is far longer than any compile, so no live build is hit. */
static void sweep_stale(const uopc_cache *c) {
  char tmp[PATH_MAX], path[PATH_MAX];
  if (join(tmp, NULL, "%s/%s", c->dir, "tmp")) return;
  DIR *d = opendir(tmp);
  time_t day_ago = time(NULL) - STALE_SECONDS;
  struct stat st;
  for (struct dirent *e; d && (e = readdir(d));) {
    if (strncmp(e->d_name, "stage-", 6) != 0 && strncmp(e->d_name, "trash-", 6) != 0) continue;
    if (!join(path, NULL, "%s/%s", tmp, e->d_name) && lstat(path, &st) == 0 && st.st_mtime < day_ago)
      uopc_remove_tree(path);
  }
  if (d) closedir(d);
}

int uopc_cache_stage(const uopc_cache *c, char staging[PATH_MAX], uopc_error *err) {
  sweep_stale(c);
  if (join(staging, err, "%s/%s", c->dir, "tmp/stage-XXXXXX")) return err ? err->code : UOPC_E_INVALID;
  if (!mkdtemp(staging)) return UOPC_FAIL(err, UOPC_E_IO, "cannot create a staging directory in '%s/tmp': %m", c->dir);
  return UOPC_OK;
}

static int write_manifest(const char *staging, const char *entry, const char *key, const char *artifact,
                          const char *description, uopc_error *err) {
  char path[PATH_MAX], hex[65];
  struct stat st;
  if (join(path, err, "%s/%s", staging, artifact)) return err ? err->code : UOPC_E_INVALID;
  if (stat(path, &st) != 0) return UOPC_FAIL(err, UOPC_E_IO, "artifact '%s' is missing after the build: %m", path);
  int rc = uopc_hash_file(path, hex, err);
  if (rc) return rc;
  char *text = malloc(MANIFEST_MAX);
  if (!text) return UOPC_FAIL(err, UOPC_E_NOMEM, "no memory for a manifest");
  int len = snprintf(text, MANIFEST_MAX, "key=%s\nentry=%s\nartifact=%s\nartifact_size=%lld\nartifact_sha256=%s\n%s",
                     key, entry, artifact, (long long)st.st_size, hex, description ? description : "");
  if (len >= MANIFEST_MAX) len = MANIFEST_MAX - 1;
  rc = join(path, err, "%s/%s", staging, "manifest");
  if (rc == UOPC_OK) rc = uopc_write_file(path, text, (size_t)len, err);
  free(text);
  return rc;
}

/* The rename and the running total change together, under the lock, so that
 * the count an eviction makes under it agrees with the total. The size check
 * cannot fail the publish: the entry is whole whatever the total says. */
static int rename_counted(const uopc_cache *c, const char *staging, const char *dir) {
  char trash[PATH_MAX] = "";
  uopc_error err = {0};
  int64_t bytes = uopc_cache_tree_size(staging);
  int fd, locked = uopc_cache_lock(c->dir, &fd, &err) == UOPC_OK;
  int renamed = uopc_fault_hit(UOPC_FAULT_RENAME) ? (errno = EXDEV, -1) : rename(staging, dir);
  int cause = errno;
  if (renamed == 0 && locked && uopc_cache_account(c, 1, bytes, dir, trash, &err) != UOPC_OK) locked = 0;
  uopc_cache_unlock(fd);
  if (renamed == 0 && !locked) uopc_debug(2, "the cache's size is not checked after '%s': %s", dir, err.message);
  if (*trash) uopc_remove_tree(trash);
  errno = cause;
  return renamed;
}

int uopc_cache_publish(const uopc_cache *c, const char *staging, const char *entry,
                       const char *key, const char *artifact, const char *description,
                       char artifact_path[PATH_MAX], uopc_error *err) {
  char dir[PATH_MAX];
  int rc = write_manifest(staging, entry, key, artifact, description, err);
  if (rc == UOPC_OK) rc = uopc_cache_entry_dir(c, entry, key, dir, err);
  if (rc == UOPC_OK) rc = join(artifact_path, err, "%s/%s", dir, artifact);
  if (rc != UOPC_OK) {
    uopc_remove_tree(staging);
    return rc;
  }
  if (rename_counted(c, staging, dir) != 0) {
    int cause = errno;
    uopc_remove_tree(staging);   /* theirs, when another process published this key first */
    if (cause != ENOTEMPTY && cause != EEXIST)
      return UOPC_FAIL(err, UOPC_E_IO, "cannot publish cache entry '%s': %s", dir, strerror(cause));
  }
  return UOPC_OK;
}

void uopc_cache_keep_failed(const uopc_cache *c, const char *staging, const char *entry,
                            const char *key, char kept[PATH_MAX]) {
  char failed[PATH_MAX];
  if (join(failed, NULL, "%s/%s", c->dir, "failed") || (mkdir(failed, 0700) != 0 && errno != EEXIST) ||
      snprintf(kept, PATH_MAX, "%s/%s-%s", failed, entry, key) >= PATH_MAX) {
    snprintf(kept, PATH_MAX, "%s", staging);
    return;
  }
  uopc_remove_tree(kept);
  if (rename(staging, kept) != 0) snprintf(kept, PATH_MAX, "%s", staging);
}
