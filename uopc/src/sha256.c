/* sha256.c: SHA-256 for cache keys and artifact checks, through OpenSSL's
 * libcrypto (a well-kept library in every distribution; see README).
 * The digest runs through SHA256_Init/Update/Final, which hash in the caller
 * with none of EVP's provider machinery: EVP's first digest in a process
 * loads the default provider and reads openssl.cnf, 0.8 ms of CPU that every
 * cold compile (about 33 ms for a small kernel) and every new process's first
 * cache hit paid (measured for bench_23_6). Telling OpenSSL to skip the file
 * instead would also skip it for a host program that uses OpenSSL itself.
 * The functions are deprecated since OpenSSL 3.0 but in every 3.x; a
 * libcrypto built without them gets EVP, the same digest. */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "internal.h"

#ifndef OPENSSL_NO_DEPRECATED_3_0
struct uopc_hash { SHA256_CTX ctx; };
static int begin(uopc_hash *h) { return SHA256_Init(&h->ctx); }
static void update(uopc_hash *h, const void *data, size_t n) { SHA256_Update(&h->ctx, data, n); }
static void end(uopc_hash *h, unsigned char digest[32]) { SHA256_Final(digest, &h->ctx); }
#else
struct uopc_hash { EVP_MD_CTX *ctx; };
static int begin(uopc_hash *h) {
  return (h->ctx = EVP_MD_CTX_new()) && EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL);
}
static void update(uopc_hash *h, const void *data, size_t n) { EVP_DigestUpdate(h->ctx, data, n); }
static void end(uopc_hash *h, unsigned char digest[32]) {
  EVP_DigestFinal_ex(h->ctx, digest, NULL);
  EVP_MD_CTX_free(h->ctx);
}
#endif

int uopc_hash_new(uopc_hash **out, uopc_error *err) {
  uopc_hash *h = calloc(1, sizeof *h);
  if (!h || !begin(h)) {
    free(h);
    return UOPC_FAIL(err, UOPC_E_NOMEM, "cannot start a SHA-256 context");
  }
  *out = h;
  return UOPC_OK;
}

void uopc_hash_field(uopc_hash *h, const char *label, const void *data, size_t n) {
  unsigned long long len = n;
  update(h, label, strlen(label) + 1);
  update(h, &len, sizeof len);
  update(h, data, n);
}

void uopc_hash_str(uopc_hash *h, const char *label, const char *s) {
  uopc_hash_field(h, label, s ? s : "", s ? strlen(s) : 0);
}

static void to_hex(const unsigned char digest[32], char hex[65]) {
  static const char digits[] = "0123456789abcdef";
  for (unsigned i = 0; i < 32; i++) {
    hex[2 * i] = digits[digest[i] >> 4];
    hex[2 * i + 1] = digits[digest[i] & 15];
  }
  hex[64] = '\0';
}

void uopc_hash_finish(uopc_hash *h, char hex[65]) {
  unsigned char digest[32];
  end(h, digest);
  to_hex(digest, hex);
  free(h);
}

int uopc_hash_file(const char *path, char hex[65], uopc_error *err) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return UOPC_FAIL(err, UOPC_E_IO, "cannot open '%s': %m", path);
  uopc_hash *h;
  int rc = uopc_hash_new(&h, err);
  if (rc) { close(fd); return rc; }
  unsigned char buf[65536];
  ssize_t got;
  while ((got = read(fd, buf, sizeof buf)) > 0) update(h, buf, (size_t)got);
  close(fd);
  char digest_hex[65];
  uopc_hash_finish(h, digest_hex);
  if (got < 0) return UOPC_FAIL(err, UOPC_E_IO, "cannot read '%s': %m", path);
  memcpy(hex, digest_hex, 65);
  return UOPC_OK;
}
