/* test_cache_stats.c: the disk cache's statistics and files where only a failing allocator, a
 * clock moved ahead or the process's exit reaches them (uopc/src/cache_stats.c, cache.c). The
 * executable's malloc, calloc and time() stand in for glibc's, for libuopc too (testutil.h). */
#define TESTUTIL_FAILING_MALLOC
#include "uopc/uopc.h"
#include "testutil.h"
#include "../../uopc/src/internal.h"
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

/* Seconds added to the real clock for everything that asks time(): the runtime's flush of
 * events a minute old is reached without waiting a minute. */
static time_t clock_ahead;

time_t time(time_t *t) {
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  time_t s = now.tv_sec + clock_ahead;
  if (t) *t = s;
  return s;
}

#ifndef __SANITIZE_ADDRESS__
/* realloc as testutil.h's malloc: fail_next_realloc = k makes the k-th call from now fail. */
extern void *__libc_realloc(void *p, size_t n);
static int fail_next_realloc;
void *realloc(void *p, size_t n) { return testutil_fails_now(&fail_next_realloc) ? NULL : __libc_realloc(p, n); }
#endif

static int setup(void **state) { return testutil_fresh_cache(state); }

static int teardown(void **state) {
  clock_ahead = 0;
  unsetenv("UOPC_CACHE_MAX_SIZE");
  return testutil_remove_cache(state);
}

static uopc_cache_record record_of(const char *dir) {
  uopc_cache_record r;
  uopc_cache_record_read(dir, &r);
  return r;
}

static void subdir(char out[PATH_MAX], const char *name) {
  char path[PATH_MAX + 64];
  snprintf(path, sizeof path, "%s/%s", testutil_cache_dir, name);
  assert_true(strlen(path) < PATH_MAX);
  memcpy(out, path, strlen(path) + 1);
  assert_int_equal(mkdir(out, 0700), 0);
}

/* At exit with UOPC_DEBUG=2 the statistics of each cache this process counted in are printed,
 * with the limit as UOPC_CACHE_MAX_SIZE says even when it is not a size (the default then); a
 * cache it only wrote to is not. In a child, whose stderr goes to a file. Runs first: the debug
 * level is read once per process. */
static void test_cache_stats_at_exit_print_the_caches_counted_in(void **state) {
  (void)state;
  char counted[PATH_MAX], written[PATH_MAX], log[PATH_MAX + 16];
  subdir(counted, "counted");
  subdir(written, "written");
  snprintf(log, sizeof log, "%s/stderr", testutil_cache_dir);
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || dup2(fd, 2) < 0) _exit(2);
    setenv("UOPC_DEBUG", "2", 1);
    uopc_cache_count(counted, UOPC_CACHE_HITS, 1);
    uopc_cache_record r = {.known = 1};
    uopc_error err = {0};
    if (uopc_cache_record_write(written, &r, &err) != UOPC_OK) _exit(3);
    setenv("UOPC_CACHE_MAX_SIZE", "lots", 1);
    exit(0);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  char *text = NULL;
  size_t n;
  uopc_error err = {0};
  assert_uopc_ok(uopc_read_file(log, &text, &n, &err), err);
  char want[PATH_MAX + 128];
  snprintf(want, sizeof want, "uopc: cache directory            %s\n", counted);
  assert_contains(text, want);
  assert_contains(text, "uopc: hits                       1\n");
  assert_contains(text, "uopc: limit                      1.0 GiB (UOPC_CACHE_MAX_SIZE=lots; evicts down to 90 %)\n");
  if (strstr(text, written)) fail_msg("a cache only written to was printed:\n%s", text);
  free(text);
  assert_int_equal(record_of(counted).events[UOPC_CACHE_HITS], 1);   /* and written at exit */
}

/* Events a minute old are written by the next count, without a publish or an exit. */
static void test_cache_count_writes_events_a_minute_old(void **state) {
  (void)state;
  char dir[PATH_MAX], stats[PATH_MAX + 16];
  subdir(dir, "cache");
  snprintf(stats, sizeof stats, "%s/stats", dir);
  uopc_cache_count(dir, UOPC_CACHE_HITS, 1);
  clock_ahead = 59;
  uopc_cache_count(dir, UOPC_CACHE_HITS, 1);
  assert_int_equal(access(stats, F_OK), -1);   /* 59 s: not yet */
  clock_ahead = 60;
  uopc_cache_count(dir, UOPC_CACHE_MISSES, 1);
  uopc_cache_record r = record_of(dir);
  assert_int_equal(r.known, 1);
  assert_int_equal(r.events[UOPC_CACHE_HITS], 2);
  assert_int_equal(r.events[UOPC_CACHE_MISSES], 1);
}

/* No memory for a cache's pending events: the process's counter still counts, the cache's file
 * is written without them, and nothing fails. */
static void test_cache_count_without_memory_for_pending_events_loses_only_those(void **state) {
  (void)state;
#ifdef __SANITIZE_ADDRESS__
  testutil_skip_under_asan("glibc's calloc, made to fail");
#else
  testutil_skip_unless_allocation_fails();
  char warm[PATH_MAX], dir[PATH_MAX], other[PATH_MAX];
  subdir(warm, "warm");
  subdir(dir, "cache");
  subdir(other, "other");
  uopc_cache_count(warm, UOPC_CACHE_HITS, 1);   /* this thread's counters exist: no calloc of theirs */
  int64_t hits = uopc_counter_get(UOPC_C_DISK_CACHE_HITS);
  fail_next_calloc = 1;
  uopc_cache_count(dir, UOPC_CACHE_HITS, 1);
  fail_next_calloc = 0;
  assert_int_equal(uopc_counter_get(UOPC_C_DISK_CACHE_HITS) - hits, 1);
  uopc_cache_record r = {.known = 1};
  uopc_error err = {0};
  fail_next_calloc = 1;
  int rc = uopc_cache_record_write(other, &r, &err);
  fail_next_calloc = 0;
  assert_uopc_ok(rc, err);
  assert_int_equal(record_of(other).events[UOPC_CACHE_HITS], 0);
  r = (uopc_cache_record){.known = 1};
  assert_uopc_ok(uopc_cache_record_write(dir, &r, &err), err);
  assert_int_equal(record_of(dir).events[UOPC_CACHE_HITS], 0);   /* the lost hit */
#endif
}

/* Every allocation of a read, failing in turn: each failure is an error (the read's own buffer:
 * "no memory to read"), never a crash, and the read succeeds once none fails. */
static void test_cache_read_file_without_memory_fails_cleanly(void **state) {
  (void)state;
#ifdef __SANITIZE_ADDRESS__
  testutil_skip_under_asan("glibc's malloc, made to fail");
#else
  testutil_skip_unless_allocation_fails();
  char path[PATH_MAX + 16], want[PATH_MAX + 64];
  snprintf(path, sizeof path, "%s/file", testutil_cache_dir);
  uopc_error err = {0};
  assert_uopc_ok(uopc_write_file(path, "abc", 3, &err), err);
  snprintf(want, sizeof want, "no memory to read '%s'", path);
  int saw = 0, k;
  for (k = 1; k < 20; k++) {
    char *data = NULL;
    size_t n = 0;
    uopc_error_clear(&err);
    fail_next_malloc = k;
    int rc = uopc_read_file(path, &data, &n, &err);
    fail_next_malloc = 0;
    if (rc == UOPC_OK) {
      assert_int_equal(n, 3);
      assert_string_equal(data, "abc");
      free(data);
      break;
    }
    assert_null(data);
    if (strcmp(err.message, want) == 0) {
      assert_int_equal(rc, UOPC_E_NOMEM);
      saw = 1;
    }
  }
  assert_true(k < 20);
  assert_true(saw);
#endif
}

/* The same for a publish: among its allocations is the manifest's, whose failure says so and
 * removes the staging directory. */
static void test_cache_publish_without_memory_for_the_manifest_fails_cleanly(void **state) {
  (void)state;
#ifdef __SANITIZE_ADDRESS__
  testutil_skip_under_asan("glibc's malloc, made to fail");
#else
  testutil_skip_unless_allocation_fails();
  static const char key[] = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
  uopc_cache c;
  uopc_error err = {0};
  assert_uopc_ok(uopc_cache_open(&c, testutil_cache_dir, &err), err);
  int saw = 0, k;
  for (k = 1; k < 40; k++) {
    char staging[PATH_MAX], artifact[PATH_MAX + 16], path[PATH_MAX];
    assert_uopc_ok(uopc_cache_stage(&c, staging, &err), err);
    snprintf(artifact, sizeof artifact, "%s/a.out", staging);
    assert_uopc_ok(uopc_write_file(artifact, "abc", 3, &err), err);
    uopc_error_clear(&err);
    fail_next_malloc = k;
    int rc = uopc_cache_publish(&c, staging, "k", key, "a.out", "", path, &err);
    fail_next_malloc = 0;
    if (rc == UOPC_OK) break;
    if (strcmp(err.message, "no memory for a manifest") == 0) {
      assert_int_equal(rc, UOPC_E_NOMEM);
      assert_int_equal(access(staging, F_OK), -1);
      saw = 1;
    }
  }
  assert_true(k < 40);
  assert_true(saw);
#endif
}


static void make_fake_entry(int i) {
  char path[PATH_MAX + 128];
  snprintf(path, sizeof path, "%s/fake%04d-%064d", testutil_cache_dir, i, i);
  assert_int_equal(mkdir(path, 0700), 0);
}

/* No memory to list the entries for an eviction: the error says so, nothing is evicted and no
 * total is written (it would be a guess). */
static void test_cache_eviction_without_memory_to_list_fails_cleanly(void **state) {
  (void)state;
#ifdef __SANITIZE_ADDRESS__
  testutil_skip_under_asan("glibc's realloc, made to fail");
#else
  testutil_skip_unless_allocation_fails();
  char trash[PATH_MAX], stats[PATH_MAX + 16], entry[PATH_MAX + 128];
  make_fake_entry(1);
  make_fake_entry(2);
  uopc_cache c;
  uopc_error err = {0};
  assert_uopc_ok(uopc_cache_open(&c, testutil_cache_dir, &err), err);
  c.max_size = 1;
  fail_next_realloc = 1;
  int rc = uopc_cache_account(&c, 0, 0, NULL, trash, &err);
  fail_next_realloc = 0;
  assert_uopc_code(rc, UOPC_E_NOMEM, err);
  assert_string_equal(err.message, "no memory to list 256 cache entries");
  assert_string_equal(trash, "");
  snprintf(entry, sizeof entry, "%s/fake%04d-%064d", testutil_cache_dir, 1, 1);
  assert_int_equal(access(entry, F_OK), 0);
  snprintf(stats, sizeof stats, "%s/stats", testutil_cache_dir);
  assert_int_equal(access(stats, F_OK), -1);
#endif
}

/* The descriptor limit set so that the next open is the last one allowed (when `last`) or
 * refused; the old limit goes into old. */
static void limit_descriptors(struct rlimit *old, int last) {
  int probe = dup(0);
  assert_true(probe >= 0);
  close(probe);
  assert_int_equal(getrlimit(RLIMIT_NOFILE, old), 0);
  struct rlimit low = {.rlim_cur = (rlim_t)probe + (last ? 1 : 0), .rlim_max = old->rlim_max};
  assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
}

/* Events whose cache cannot be counted (out of descriptors after the lock: no stats file, no
 * listing) stay pending and are written once it can, at exit. In a child, for its limit. */
static void test_cache_flush_that_cannot_count_the_cache_keeps_the_events(void **state) {
  (void)state;
  char stats[PATH_MAX + 16];
  snprintf(stats, sizeof stats, "%s/stats", testutil_cache_dir);
  make_fake_entry(1);
  pid_t pid = fork();
  if (pid == 0) {
    uopc_cache_count(testutil_cache_dir, UOPC_CACHE_MISSES, 1);
    struct rlimit old;
    limit_descriptors(&old, 1);   /* the lock's open, and no more */
    uopc_cache_stats_flush();
    int written = access(stats, F_OK) == 0;
    setrlimit(RLIMIT_NOFILE, &old);
    exit(written ? 1 : 0);   /* exit, not _exit: its flush writes the events */
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  uopc_cache_record r = record_of(testutil_cache_dir);
  assert_int_equal(r.known, 1);
  assert_int_equal(r.entries, 1);
  assert_int_equal(r.events[UOPC_CACHE_MISSES], 1);
}

/* Printing a cache that has no total and cannot be listed (no descriptor left): 0 entries, 0
 * bytes, not a stale or half count. In a child, for its limit. */
static void test_cache_stats_print_of_a_cache_that_cannot_be_listed_shows_zero(void **state) {
  (void)state;
  make_fake_entry(1);
  pid_t pid = fork();
  if (pid == 0) {
    char *text = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&text, &n);
    if (!f) _exit(2);
    struct rlimit old;
    limit_descriptors(&old, 0);
    uopc_cache_stats_print(f, "", testutil_cache_dir, 1 << 20, 0);
    setrlimit(RLIMIT_NOFILE, &old);
    fclose(f);
    int ok = strstr(text, "\nentries                    0\ntotal size                 0 bytes\n") != NULL;
    if (!ok) fprintf(stderr, "%s", text);
    free(text);
    exit(ok ? 0 : 1);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_cache_stats_at_exit_print_the_caches_counted_in, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_count_writes_events_a_minute_old, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_count_without_memory_for_pending_events_loses_only_those, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_read_file_without_memory_fails_cleanly, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_publish_without_memory_for_the_manifest_fails_cleanly, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_eviction_without_memory_to_list_fails_cleanly, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_flush_that_cannot_count_the_cache_keeps_the_events, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_stats_print_of_a_cache_that_cannot_be_listed_shows_zero, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
