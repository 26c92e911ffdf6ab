/* sha256.c: SHA-256 for cache keys and artifact checks, through OpenSSL's
 * libcrypto (a well-kept library in every distribution; see README). */
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "internal.h"

struct uopc_hash { EVP_MD_CTX *ctx; };

int uopc_hash_new(uopc_hash **out, uopc_error *err) {
  uopc_hash *h = malloc(sizeof *h);
  if (!h || !(h->ctx = EVP_MD_CTX_new()) || !EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL)) {
    if (h && h->ctx) EVP_MD_CTX_free(h->ctx);
    free(h);
    return UOPC_FAIL(err, UOPC_E_NOMEM, "cannot start a SHA-256 context");
  }
  *out = h;
  return UOPC_OK;
}

void uopc_hash_field(uopc_hash *h, const char *label, const void *data, size_t n) {
  unsigned long long len = n;
  EVP_DigestUpdate(h->ctx, label, strlen(label) + 1);
  EVP_DigestUpdate(h->ctx, &len, sizeof len);
  EVP_DigestUpdate(h->ctx, data, n);
}

void uopc_hash_str(uopc_hash *h, const char *label, const char *s) {
  uopc_hash_field(h, label, s ? s : "", s ? strlen(s) : 0);
}

static void to_hex(const unsigned char *digest, unsigned n, char *hex) {
  static const char digits[] = "0123456789abcdef";
  for (unsigned i = 0; i < n; i++) {
    hex[2 * i] = digits[digest[i] >> 4];
    hex[2 * i + 1] = digits[digest[i] & 15];
  }
  hex[2 * n] = '\0';
}

void uopc_hash_finish(uopc_hash *h, char hex[65]) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned n = 0;
  EVP_DigestFinal_ex(h->ctx, digest, &n);
  to_hex(digest, n, hex);
  EVP_MD_CTX_free(h->ctx);
  free(h);
}

int uopc_hash_file(const char *path, char hex[65], uopc_error *err) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return UOPC_FAIL(err, UOPC_E_IO, "cannot open '%s': %m", path);
  EVP_MD_CTX *ctx = EVP_MD_CTX_new();
  if (!ctx) { close(fd); return UOPC_FAIL(err, UOPC_E_NOMEM, "cannot start a SHA-256 context"); }
  EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
  unsigned char buf[65536];
  ssize_t got;
  while ((got = read(fd, buf, sizeof buf)) > 0) EVP_DigestUpdate(ctx, buf, (size_t)got);
  close(fd);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned n = 0;
  EVP_DigestFinal_ex(ctx, digest, &n);
  EVP_MD_CTX_free(ctx);
  if (got < 0) return UOPC_FAIL(err, UOPC_E_IO, "cannot read '%s': %m", path);
  to_hex(digest, n, hex);
  return UOPC_OK;
}
