/* file.c: whole files and directory trees on disk (section 23.6, "The cache
 * on disk"): a file written or read in one call, a tree removed. The disk
 * cache is built on these, and so are build.c (the source and the compile
 * log), compiler.c (an artifact's version) and nvrtc.c (the PTX). They know
 * nothing of entries, totals or locks, so they are the bottom layer: the
 * cache's files call them, and they call none of those back. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include "internal.h"

#define READ_FILE_MAX (64 << 20)

int uopc_write_file(const char *path, const void *data, size_t n, uopc_error *err) {
  int fd = uopc_fault_hit(UOPC_FAULT_CACHE_WRITE) ? (errno = ENOSPC, -1)
                                                 : open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return UOPC_FAIL(err, UOPC_E_IO, "cannot create '%s': %m", path);
  const char *p = data;
  while (n > 0) {
    ssize_t put = write(fd, p, n);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) { close(fd); return UOPC_FAIL(err, UOPC_E_IO, "cannot write '%s': %m", path); }
    p += put;
    n -= (size_t)put;
  }
  if (close(fd) != 0) return UOPC_FAIL(err, UOPC_E_IO, "cannot write '%s': %m", path);
  return UOPC_OK;
}

int uopc_read_file(const char *path, char **data, size_t *n, uopc_error *err) {
  FILE *f = fopen(path, "rb");
  if (!f) return UOPC_FAIL(err, UOPC_E_IO, "cannot open '%s': %m", path);
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || st.st_size > READ_FILE_MAX) {
    fclose(f);
    return UOPC_FAIL(err, UOPC_E_IO, "'%s' is larger than %d bytes, or cannot be read", path, READ_FILE_MAX);
  }
  char *buf = malloc((size_t)st.st_size + 1);
  size_t got = buf ? fread(buf, 1, (size_t)st.st_size, f) : 0;
  int bad = ferror(f) || getc(f) != EOF;   /* it must not have grown meanwhile */
  fclose(f);
  if (!buf) return UOPC_FAIL(err, UOPC_E_NOMEM, "no memory to read '%s'", path);
  if (bad || got != (size_t)st.st_size) { free(buf); return UOPC_FAIL(err, UOPC_E_IO, "cannot read '%s' whole", path); }
  buf[got] = '\0';
  *data = buf;
  *n = got;
  return UOPC_OK;
}

static int unlink_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st; (void)flag; (void)ftw;
  remove(path);
  return 0;
}

void uopc_remove_tree(const char *path) {
  nftw(path, unlink_one, 16, FTW_DEPTH | FTW_PHYS);
}
