/* testutil.h: small helpers shared by the cmocka suites.
 * Each suite runs with its own fresh cache directory so that cold and warm
 * cache behaviour is exact and suites never see each other's entries. The
 * directory goes under $TMPDIR (else /tmp): tools/run-tests.sh and the
 * grader point it at a directory they remove, so a test that dies leaves
 * nothing behind. */
#ifndef TESTUTIL_H
#define TESTUTIL_H

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "uopc/uopc.h"
#include "case_filter.h"
#include <dirent.h>
#include <ftw.h>
#include <unistd.h>

static char testutil_cache_dir[4096];

static int testutil_unlink(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st; (void)flag; (void)ftw;
  return remove(path);
}

static inline void testutil_remove_tree(const char *path) {
  nftw(path, testutil_unlink, 16, FTW_DEPTH | FTW_PHYS);
}

/* A new private cache directory, exported as UOPC_CACHE_DIR. */
#if defined(TESTUTIL_FAILING_MALLOC) && !defined(__SANITIZE_ADDRESS__)
/* A suite that defines TESTUTIL_FAILING_MALLOC before this header gets a malloc and a calloc that
 * fail when asked: fail_next_malloc = k (fail_next_calloc = k) makes the k-th call from now fail
 * with ENOMEM; glibc's allocator answers every other call. This executable's come before glibc's
 * for libuopc too. Not under AddressSanitizer, whose allocator they would bypass (skip there). */
#include <errno.h>
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
static int fail_next_malloc, fail_next_calloc;

static inline int testutil_fails_now(int *next) {
  if (!*next || --*next != 0) return 0;
  errno = ENOMEM;
  return 1;
}

void *malloc(size_t n) { return testutil_fails_now(&fail_next_malloc) ? NULL : __libc_malloc(n); }
void *calloc(size_t n, size_t size) {
  return testutil_fails_now(&fail_next_calloc) ? NULL : __libc_calloc(n, size);
}

/* Skips the test where these are not the allocator after all: valgrind replaces it, in the
 * executable too. The probe calls through a pointer gcc cannot fold as the builtin. */
static inline int testutil_allocator_fails_when_asked(void) {
  void *(*volatile allocate)(size_t) = malloc;
  fail_next_malloc = 1;
  void *p = allocate(1);
  fail_next_malloc = 0;
  free(p);
  return p == NULL;
}
#define testutil_skip_unless_allocation_fails()                                             \
  do {                                                                                     \
    if (!testutil_allocator_fails_when_asked()) {                                          \
      print_message("  skipped: needs the interposed allocator, which valgrind replaces\n"); \
      skip();                                                                              \
    }                                                                                      \
  } while (0)
#endif

/* The descriptors this process has open (a test compares counts before and after). */
static inline int testutil_open_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));) n += e->d_name[0] != '.';
  if (d) closedir(d);
  return n;
}

static inline int testutil_fresh_cache(void **state) {
  (void)state;
  const char *tmp = getenv("TMPDIR");
  if (snprintf(testutil_cache_dir, sizeof testutil_cache_dir, "%s/uopc-test-XXXXXX", tmp && *tmp ? tmp : "/tmp") >=
      (int)sizeof testutil_cache_dir)
    return -1;
  if (!mkdtemp(testutil_cache_dir)) return -1;
  return setenv("UOPC_CACHE_DIR", testutil_cache_dir, 1);
}

static inline int testutil_remove_cache(void **state) {
  (void)state;
  testutil_remove_tree(testutil_cache_dir);
  return 0;
}

/* The text of file (kernel.c, manifest) in entry, a cache entry's folder, into buf of size
 * (cut to fit, NUL-terminated); 0 when it cannot be read. */
static inline int testutil_entry_text(const char *entry, const char *file, char *buf, size_t size) {
  char path[8192];
  snprintf(path, sizeof path, "%s/%s", entry, file);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  size_t n = fread(buf, 1, size - 1, f);
  fclose(f);
  buf[n] = '\0';
  return 1;
}

/* The line of text that begins with key ("flags="), up to its newline, into line; 0 when none. */
static inline int testutil_text_line(const char *text, const char *key, char *line, size_t size) {
  size_t n = strlen(key);
  for (const char *at = text; at && *at; at = strchr(at, '\n') ? strchr(at, '\n') + 1 : NULL)
    if (!strncmp(at, key, n)) {
      size_t len = strcspn(at, "\n");
      snprintf(line, size, "%.*s", (int)len, at);
      return 1;
    }
  return 0;
}

/* For each entry of this suite's cache whose folder begins with prefix and holds file, its
 * text passed to visit (with ctx); returns how many there were. The artifacts' own evidence:
 * their generated source, their manifests' flags. */
static inline int testutil_each_entry(const char *prefix, const char *file, void (*visit)(const char *text, void *ctx),
                                      void *ctx) {
  DIR *d = opendir(testutil_cache_dir);
  int entries = 0;
  for (struct dirent *e; d && (e = readdir(d));) {
    char entry[sizeof testutil_cache_dir + 264], text[1 << 16];
    if (strncmp(e->d_name, prefix, strlen(prefix)) != 0) continue;
    snprintf(entry, sizeof entry, "%s/%s", testutil_cache_dir, e->d_name);
    if (!testutil_entry_text(entry, file, text, sizeof text)) continue;
    entries++;
    visit(text, ctx);
  }
  if (d) closedir(d);
  return entries;
}

/* Occurrences of needle in generated text, each loop nest counted once: a nest
 * that LOWER_PARALLEL writes twice has its threaded copy, from the line
 * the `if` line that says "enough work for OpenMP's threads" to its closing
 * brace, left out. */
static inline int testutil_count_serial(const char *text, const char *needle) {
  int k = 0;
  size_t skip = (size_t)-1, n = strlen(needle);   /* skip: the threaded copy's indentation */
  for (const char *line = text; line && *line;) {
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line), indent = strspn(line, " ");
    if (skip != (size_t)-1) {
      if (indent == skip && len == indent + 1 && line[indent] == '}') skip = (size_t)-1;
    } else if (strstr(line, "/* enough work for OpenMP's threads */") &&
               strstr(line, "/* enough work for OpenMP's threads */") < line + len) {
      skip = indent;
    } else {
      for (const char *at = strstr(line, needle); at && at + n <= line + len; at = strstr(at + n, needle)) k++;
    }
    line = end ? end + 1 : NULL;
  }
  return k;
}

/* A test that makes glibc's allocator fail, or reads its totals, cannot run under
 * AddressSanitizer, which brings its own allocator: it skips, saying which part it needed. */
#define testutil_skip_under_asan(what)                                                         \
  do {                                                                                         \
    print_message("  skipped: needs %s, which AddressSanitizer's allocator does not give\n", what); \
    skip();                                                                                    \
  } while (0)

/* Fails the test with the error's code and message when rc is not UOPC_OK. */
/* got has want's shape and each element within tol of want's, relative to max(1, |want|);
 * what names the case in the failure. */
static inline void assert_tensors_close(const uopc_tensor *got, const uopc_tensor *want, double tol,
                                        const char *what) {
  if (got->rank != want->rank) fail_msg("%s: rank %d, expected %d", what, got->rank, want->rank);
  for (int k = 0; k < got->rank; k++)
    if (got->shape[k] != want->shape[k])
      fail_msg("%s: axis %d is %lld, expected %lld", what, k, (long long)got->shape[k], (long long)want->shape[k]);
  for (int64_t i = 0; i < uopc_tensor_numel(got); i++) {
    double g = uopc_tensor_get(got, i), w = uopc_tensor_get(want, i);
    if (!(fabs(g - w) <= tol * fmax(1, fabs(w)))) fail_msg("%s: element %lld is %.9g, expected %.9g", what, (long long)i, g, w);
  }
}

#define assert_uopc_ok(rc, err)                                                              \
  do {                                                                                       \
    int rc_ = (rc);                                                                          \
    if (rc_ != 0) fail_msg("expected UOPC_OK, got %s: %s", uopc_error_name(rc_), (err).message); \
  } while (0)

/* Fails unless rc is the expected code; prints both names and the message. */
#define assert_uopc_code(rc, code, err)                                                     \
  do {                                                                                      \
    int rc_ = (rc);                                                                         \
    if (rc_ != (code))                                                                      \
      fail_msg("expected %s, got %s: %s", uopc_error_name(code), uopc_error_name(rc_), (err).message); \
  } while (0)

/* Fails unless haystack contains needle, printing both. */
#define assert_contains(haystack, needle)                                                   \
  do {                                                                                      \
    if (!strstr((haystack), (needle)))                                                      \
      fail_msg("expected the text to contain \"%s\"; it was:\n%s", (needle), (haystack));   \
  } while (0)

/* The checks of a graded case (STYLE.md 19): a failure says what was checked and for which
 * input, what came back and what was expected. The trailing arguments are a printf format and
 * its values naming the quantity and the input:
 *   expect_int(t.c.n_guards, k + 1, "guards recorded after 16 %s 16", tp_cmp_text(op));
 * fails with "guards recorded after 16 <= 16: got 1, expected 2". */
#define testutil_fail_what(fmt_got, got, want, ...)                                         \
  do {                                                                                      \
    char what_[1024];           /* a longer text is cut, not an error (the return is read) */ \
    if (snprintf(what_, sizeof what_, __VA_ARGS__) < 0) what_[0] = 0;                       \
    fail_msg("%s: got " fmt_got ", expected " fmt_got, what_, got, want);                   \
  } while (0)

/* Integers (counts, codes, sizes, enums). */
#define expect_int(got, want, ...)                                                          \
  do {                                                                                      \
    long long got_ = (long long)(got), want_ = (long long)(want);                           \
    if (got_ != want_) testutil_fail_what("%lld", got_, want_, __VA_ARGS__);                \
  } while (0)

/* A yes-or-no answer (a comparison, a predicate): printed as true or false. */
#define expect_truth(got, want, ...)                                                        \
  do {                                                                                      \
    int got_ = !!(got), want_ = !!(want);                                                   \
    if (got_ != want_) testutil_fail_what("%s", got_ ? "true" : "false", want_ ? "true" : "false", __VA_ARGS__); \
  } while (0)

/* A number within tol of want (an absolute tolerance). */
#define expect_close(got, want, tol, ...)                                                   \
  do {                                                                                      \
    double got_ = (double)(got), want_ = (double)(want);                                    \
    if (!(fabs(got_ - want_) <= (tol)))                                                     \
      testutil_fail_what("%.9g", got_, want_, __VA_ARGS__);                                 \
  } while (0)

/* A pointer that must be set, or must be exactly want. */
#define expect_non_null(got, ...)                                                           \
  do {                                                                                      \
    if (!(got)) testutil_fail_what("%s", "NULL", "a pointer", __VA_ARGS__);                 \
  } while (0)
#define expect_null(got, ...)                                                               \
  do {                                                                                      \
    const void *got_ = (const void *)(got);                                                 \
    if (got_) testutil_fail_what("%p", got_, (const void *)NULL, __VA_ARGS__);              \
  } while (0)
#define expect_ptr(got, want, ...)                                                          \
  do {                                                                                      \
    const void *got_ = (const void *)(got), *want_ = (const void *)(want);                  \
    if (got_ != want_) testutil_fail_what("%p", got_, want_, __VA_ARGS__);                  \
  } while (0)

/* A message a header does not spell out is checked for the facts it must name (the input, the
 * value, the limit), not for its words (STYLE.md 19): token occurs in text as a whole word or
 * number, not inside a longer name or number ("9" is not in "19", "b" is not in "bytes"). */
static inline int testutil_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static inline int testutil_names(const char *text, const char *token) {
  size_t n = strlen(token);
  for (const char *at = strstr(text, token); n && at; at = strstr(at + 1, token)) {
    char before = at == text ? ' ' : at[-1], after = at[n];
    if (!testutil_word_char(before) && before != '-' && before != '.' && !testutil_word_char(after) &&
        !(after == '.' && at[n + 1] >= '0' && at[n + 1] <= '9'))
      return 1;
  }
  return 0;
}

#define assert_names(text, token, what)                                                     \
  do {                                                                                      \
    if (!testutil_names((text), (token)))                                                   \
      fail_msg("the message \"%s\" does not name %s (\"%s\")", (text), (what), (token));     \
  } while (0)
#define assert_names_int(text, value, what)                                                 \
  do {                                                                                      \
    char token_[32];                                                                        \
    snprintf(token_, sizeof token_, "%lld", (long long)(value));                            \
    assert_names((text), token_, (what));                                                   \
  } while (0)

#endif
