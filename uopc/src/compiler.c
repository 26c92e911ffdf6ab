/* compiler.c: what a build says about its compiler (section 23.6, "What the
 * key holds"). The key holds the compiler's resolved path, size and
 * modification time, read with one stat: a replaced binary changes them.
 * Asking `gcc --version` instead spawns a process, a millisecond of CPU that
 * every cold start would pay (3% of a small kernel's compile; bench_23_6).
 * For people, the manifest names the version the compiler wrote into the
 * artifact itself: a shared object's ELF .comment, the header of PTX. */
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "internal.h"

int uopc_compiler_describe_file(const char *path, char *out, size_t size, uopc_error *err) {
  struct stat st;
  if (stat(path, &st) != 0) return UOPC_FAIL(err, UOPC_E_IO, "cannot stat compiler '%s': %m", path);
  if ((size_t)snprintf(out, size, "%s (%lld bytes, mtime %lld.%09ld)", path, (long long)st.st_size,
                       (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec) >= size)
    return UOPC_FAIL(err, UOPC_E_INVALID, "compiler path '%s' is longer than %zu bytes", path, size - 64);
  return UOPC_OK;
}

int uopc_compiler_identify(const char *name, uopc_compiler *out, uopc_error *err) {
  int rc = uopc_find_program(name, out->path, err);
  if (rc == UOPC_OK) rc = uopc_compiler_describe_file(out->path, out->identity, sizeof out->identity, err);
  return rc;
}

/* The section header at index i, when the file holds all of it. */
static int section(const unsigned char *data, size_t n, const Elf64_Ehdr *eh, size_t i, Elf64_Shdr *sh) {
  if (eh->e_shentsize != sizeof *sh || eh->e_shoff > n || i >= (n - eh->e_shoff) / sizeof *sh) return 0;
  memcpy(sh, data + eh->e_shoff + i * sizeof *sh, sizeof *sh);
  return sh->sh_offset <= n && sh->sh_size <= n - sh->sh_offset;
}

/* The first string of a 64-bit ELF's .comment, where gcc and clang write
 * "GCC: (Debian 12.2.0-14) 12.2.0". Every offset is checked against n. */
static void elf_comment(const unsigned char *data, size_t n, char *out, size_t size) {
  Elf64_Ehdr eh;
  Elf64_Shdr names, sh;
  if (n < sizeof eh || memcmp(data, ELFMAG, SELFMAG) != 0 || data[EI_CLASS] != ELFCLASS64) return;
  memcpy(&eh, data, sizeof eh);
  if (!section(data, n, &eh, eh.e_shstrndx, &names)) return;
  for (size_t i = 0; i < eh.e_shnum; i++) {
    if (!section(data, n, &eh, i, &sh) || sh.sh_name >= names.sh_size ||
        strncmp((const char *)data + names.sh_offset + sh.sh_name, ".comment",
                names.sh_size - sh.sh_name) != 0)
      continue;
    snprintf(out, size, "%.*s", (int)strnlen((const char *)data + sh.sh_offset, sh.sh_size),
             (const char *)data + sh.sh_offset);
    return;
  }
}

/* PTX's header comment: "// Cuda compilation tools, release 13.0, V13.0.88". */
static void ptx_header(const char *path, char *out, size_t size) {
  FILE *f = fopen(path, "r");
  char line[512], *p;
  while (f && fgets(line, sizeof line, f) && strncmp(line, "//", 2) == 0)
    if ((p = strstr(line, "Cuda compilation tools"))) {
      snprintf(out, size, "%.*s", (int)strcspn(p, "\r\n"), p);
      break;
    }
  if (f) fclose(f);
}

void uopc_compiler_version_in(const char *artifact_path, char *out, size_t size) {
  char *data = NULL;
  size_t n = 0;
  *out = '\0';
  if (uopc_read_file(artifact_path, &data, &n, NULL) != UOPC_OK) return;
  if (n >= SELFMAG && memcmp(data, ELFMAG, SELFMAG) == 0) elf_comment((unsigned char *)data, n, out, size);
  else ptx_header(artifact_path, out, size);
  free(data);
}
