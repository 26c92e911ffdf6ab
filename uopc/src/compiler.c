/* compiler.c: a compiler's identity for cache keys (section 23.6).
 * The key holds the compiler's resolved path and its `--version` line, so an
 * upgraded gcc never loads objects built by the old one. Spawning gcc for its
 * version costs about a millisecond, more than a whole warm cache hit, so the
 * answer is memoised in the cache directory under the binary's path, size,
 * modification time and inode: a changed binary gets a fresh memo. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "internal.h"

static int memo_path(const uopc_cache *c, const char *path, char out[PATH_MAX], uopc_error *err) {
  struct stat st;
  if (stat(path, &st) != 0) return UOPC_FAIL(err, UOPC_E_IO, "cannot stat compiler '%s': %m", path);
  uopc_hash *h;
  int rc = uopc_hash_new(&h, err);
  if (rc) return rc;
  long long facts[5] = {(long long)st.st_size, (long long)st.st_mtim.tv_sec, (long long)st.st_mtim.tv_nsec,
                        (long long)st.st_ino, (long long)st.st_dev};
  uopc_hash_str(h, "memo format", "2: whole --version output");   /* bump when the memo's content changes */
  uopc_hash_str(h, "path", path);
  uopc_hash_field(h, "stat", facts, sizeof facts);
  char hex[65];
  uopc_hash_finish(h, hex);
  if (snprintf(out, PATH_MAX, "%s/compilers/%.32s.version", c->dir, hex) >= PATH_MAX)
    return UOPC_FAIL(err, UOPC_E_INVALID, "compiler memo path is longer than PATH_MAX");
  return UOPC_OK;
}

/* The whole `--version` text on one line ("; " between lines): nvcc's first
 * line names only the driver, and its release is on a later one. */
static void one_line(const char *text, char *out, size_t size) {
  size_t n = 0;
  for (const char *p = text; *p && n + 3 < size; p++) {
    if (*p != '\n') out[n++] = *p;
    else if (p[1] && p[1] != '\n') out[n++] = ';', out[n++] = ' ';
  }
  out[n] = '\0';
}

static int ask_version(const char *path, char *version, size_t size, uopc_error *err) {
  char *argv[] = {(char *)path, "--version", NULL};
  uopc_spawn_result *res = malloc(sizeof *res);
  if (!res) return UOPC_FAIL(err, UOPC_E_NOMEM, "no memory to run '%s --version'", path);
  int rc = uopc_spawn(argv, NULL, res, err);
  if (rc == UOPC_OK && res->exit_status != 0)
    rc = UOPC_FAIL(err, UOPC_E_IO, "'%s --version' exited with status %d", path, res->exit_status);
  if (rc == UOPC_OK) one_line(res->output, version, size);
  free(res);
  return rc;
}

/* Publishes the memo with a rename so concurrent processes never read half of it. */
static void save_memo(const uopc_cache *c, const char *memo, const char *version) {
  char dir[PATH_MAX], tmp[PATH_MAX];
  if (snprintf(dir, sizeof dir, "%s/compilers", c->dir) >= PATH_MAX) return;
  mkdir(dir, 0700);
  if (snprintf(tmp, sizeof tmp, "%s.%ld.tmp", memo, (long)getpid()) >= PATH_MAX) return;
  if (uopc_write_file(tmp, version, strlen(version), NULL) == UOPC_OK && rename(tmp, memo) != 0) remove(tmp);
}

int uopc_compiler_identify(const uopc_cache *c, const char *name, uopc_compiler *out, uopc_error *err) {
  char memo[PATH_MAX];
  int rc = uopc_find_program(name, out->path, err);
  if (rc == UOPC_OK) rc = memo_path(c, out->path, memo, err);
  if (rc != UOPC_OK) return rc;
  char *text = NULL;
  size_t n;
  if (uopc_read_file(memo, &text, &n, NULL) == UOPC_OK && n > 0) {
    one_line(text, out->version, sizeof out->version);
    free(text);
    return UOPC_OK;
  }
  rc = ask_version(out->path, out->version, sizeof out->version, err);
  if (rc == UOPC_OK) save_memo(c, memo, out->version);
  return rc;
}
