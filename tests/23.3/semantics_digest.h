/* semantics_digest.h: lab 23.3, a fingerprint of each semantics case's values, so that the
 * visible suite (test_semantics.c) can say which program's answer is wrong without holding
 * or printing the answer: deciding the values is the exercise (chapter 23.3, "Semantics
 * first"). The held-out suite (tests/hidden/23.3/test_semantics_edges.c) compares the values
 * with an eager reference and checks these fingerprints against that reference, so they
 * cannot drift from it. */
#ifndef SEMANTICS_DIGEST_H
#define SEMANTICS_DIGEST_H

#include <stdint.h>
#include <string.h>
#include "semantics.h"

/* FNV-1a, 64 bits, over the count and each value's bits: one wrong value changes it. */
static inline uint64_t semantics_digest(const double *values, int count) {
  uint64_t h = 14695981039346656037ull;
  uint64_t words[1 + 8];
  int n = count < 0 ? 0 : count > 8 ? 8 : count;
  words[0] = (uint64_t)n;
  for (int i = 0; i < n; i++) {
    double v = values[i] == 0 ? 0.0 : values[i];   /* -0 and 0 are the same answer */
    memcpy(&words[1 + i], &v, sizeof v);
  }
  const unsigned char *bytes = (const unsigned char *)words;
  for (size_t k = 0; k < (size_t)(1 + n) * sizeof words[0]; k++) h = (h ^ bytes[k]) * 1099511628211ull;
  return h;
}

/* The fingerprint of each case's values under the workbook's semantics, in semantics_case order. */
static const uint64_t SEMANTICS_DIGESTS[SEM_COUNT] = {
    0xa5ff2986f2c1bb10ull, 0xf6f3b8b984bcc1d7ull, 0x5b2984837c6a4d9aull, 0x61e321548f51be4dull,
    0x8a8f66e5eabae44dull, 0x9ebd1bb55e66e661ull, 0x5be1f615fea8c28bull,
};

/* What each case's program is, for a failure message. */
static const char *const SEMANTICS_PROGRAMS[SEM_COUNT] = {
    "a[:4] += a[4:]", "a[1:] = a[:-1] + 1", "a[:-1] = a[1:] + 1", "a[::-1] += a",
    "a[0::2] = a[1::2] * 2", "y = x[::2]; x[...] = v; y", "f(w); w -= 0.5 * g; f(w)",
};

#endif
