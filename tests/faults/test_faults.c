/* test_faults.c: every error path of program construction, by injection.
 * Linked against the fault-injection build of the runtime (see the Makefile).
 * Each case makes one operation fail and checks the error code, that no
 * staging directory is left behind, and that the next attempt succeeds; the
 * cache's size limit and statistics must never fail a build at all. */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "uopc/uopc.h"
#include "uopc/fault.h"
#define TESTUTIL_FAILING_MALLOC   /* an earlier failure of a spawn on demand: fail_next_malloc */
#include "testutil.h"
#include "../../uopc/src/internal.h"
#include "spawnutil.h"

static const char KERNEL[] =
    "void twice(const float *x, float *out, const int *n) {\n"
    "  for (int i0 = 0; i0 < n[0]; i0++) out[i0] = 2.0f * x[i0];\n"
    "}\n";

static int staging_dirs_left(void) {
  char tmp[8192];
  snprintf(tmp, sizeof tmp, "%s/tmp", testutil_cache_dir);
  int n = 0;
  DIR *d = opendir(tmp);
  for (struct dirent *e; d && (e = readdir(d));) n += strncmp(e->d_name, "stage-", 6) == 0;
  if (d) closedir(d);
  return n;
}

/* A fresh cache each case, so every construction starts cold. */
static int fresh(void **state) {
  unsetenv("UOPC_CACHE_MAX_SIZE");
  testutil_remove_cache(state);
  return testutil_fresh_cache(state);
}

/* The k-th operation at site fails: construction reports code and text. */
static void expect_failure_then_recovery(uopc_fault_site site, int k, int code, const char *text) {
  uopc_error err = {0};
  uopc_program *p = NULL;
  uopc_fault_arm(site, k);
  assert_uopc_code(uopc_program_new(&p, KERNEL, "twice", "ppp", NULL, &err), code, err);
  assert_null(p);
  assert_contains(err.message, text);
  assert_int_equal(staging_dirs_left(), 0);
  uopc_fault_arm(site, 0);
  assert_uopc_ok(uopc_program_new(&p, KERNEL, "twice", "ppp", NULL, &err), err);
  float x[3] = {1, 2, 3}, y[3] = {0};
  int n = 3;
  void *xp = x, *yp = y, *np = &n;
  void *args[] = {&xp, &yp, &np};
  uopc_program_call(p, args);
  assert_true(y[0] == 2 && y[1] == 4 && y[2] == 6);
  uopc_program_free(p);
}

static void test_fault_compiler_spawn_fails(void **state) {
  (void)state;
  expect_failure_then_recovery(UOPC_FAULT_SPAWN, 1, UOPC_E_IO, "cannot start");
}

/* A cold build writes kernel.c, then (gcc being silent) only the manifest:
 * naming the compiler takes a stat, no file of its own. */
static void test_fault_cache_write_of_source_fails(void **state) {
  (void)state;
  expect_failure_then_recovery(UOPC_FAULT_CACHE_WRITE, 1, UOPC_E_IO, "kernel.c");
}

static void test_fault_cache_write_of_manifest_fails(void **state) {
  (void)state;
  expect_failure_then_recovery(UOPC_FAULT_CACHE_WRITE, 2, UOPC_E_IO, "manifest");
}

static void test_fault_publish_rename_fails(void **state) {
  (void)state;
  expect_failure_then_recovery(UOPC_FAULT_RENAME, 1, UOPC_E_IO, "cannot publish cache entry");
}

static void test_fault_dlopen_of_fresh_build_fails(void **state) {
  (void)state;
  expect_failure_then_recovery(UOPC_FAULT_DLOPEN, 1, UOPC_E_LOAD, "injected failure");
}

/* A cached entry that will not load is discarded and rebuilt, transparently. */
static void test_fault_dlopen_of_cached_entry_rebuilds(void **state) {
  (void)state;
  uopc_error err = {0};
  uopc_program *p;
  assert_uopc_ok(uopc_program_new(&p, KERNEL, "twice", "ppp", NULL, &err), err);
  uopc_program_free(p);
  int64_t rebuilt = uopc_counter_get(UOPC_C_CORRUPTED_REBUILT), inv = uopc_counter_get(UOPC_C_COMPILER_INVOCATIONS);
  uopc_fault_arm(UOPC_FAULT_DLOPEN, 1);
  assert_uopc_ok(uopc_program_new(&p, KERNEL, "twice", "ppp", NULL, &err), err);
  assert_int_equal(uopc_counter_get(UOPC_C_CORRUPTED_REBUILT) - rebuilt, 1);
  assert_int_equal(uopc_counter_get(UOPC_C_COMPILER_INVOCATIONS) - inv, 1);
  assert_int_equal(uopc_program_was_cached(p), 0);
  uopc_program_free(p);
}

/* The second compiler run is the one that fails: a build spawns nothing but
 * the compiler, cold or warm. */
static void test_fault_second_spawn_fails_after_a_success(void **state) {
  (void)state;
  uopc_error err = {0};
  uopc_program *p;
  assert_uopc_ok(uopc_program_new(&p, "/* a */\nvoid one(float *x) { x[0] = 1; }\n", "one", "p", NULL, &err), err);
  uopc_program_free(p);
  uopc_fault_arm(UOPC_FAULT_SPAWN, 2);
  assert_uopc_ok(uopc_program_new(&p, "/* b */\nvoid one(float *x) { x[0] = 1; }\n", "one", "p", NULL, &err), err);
  uopc_program_free(p);
  assert_uopc_code(uopc_program_new(&p, "/* c */\nvoid one(float *x) { x[0] = 1; }\n", "one", "p", NULL, &err),
                   UOPC_E_IO, err);
  assert_int_equal(staging_dirs_left(), 0);
}


/* The spawn fault stands for posix_spawn's own failure: a spawn that failed before it (no memory
 * to record the working directory: glibc's copy is the second malloc) reports that, and leaves
 * the fault armed for the next spawn, which it fails with EAGAIN. */
static void test_fault_spawn_is_not_consulted_after_an_earlier_failure(void **state) {
  (void)state;
#ifdef __SANITIZE_ADDRESS__
  testutil_skip_under_asan("glibc's malloc, made to fail");
#else
  testutil_skip_unless_allocation_fails();
  uopc_error err = {0};
  uopc_fault_arm(UOPC_FAULT_SPAWN, 1);
  int first = spawn_with_malloc_k_failing(2, "/", &err);
  char first_message[UOPC_ERROR_MESSAGE_MAX];
  snprintf(first_message, sizeof first_message, "%s", err.message);
  int second = spawn_with_malloc_k_failing(0, NULL, &err);
  uopc_fault_arm(UOPC_FAULT_SPAWN, 0);   /* disarmed before any assertion can stop the test */
  assert_int_equal(first, UOPC_E_IO);
  assert_string_equal(first_message, "cannot start '/nonexistent/uopc-probe': Cannot allocate memory");
  assert_uopc_code(second, UOPC_E_IO, err);
  assert_string_equal(err.message, "cannot start '/nonexistent/uopc-probe': Resource temporarily unavailable");
#endif
}

/* ---- the size limit and the statistics (cache_evict.c, cache_scan.c, cache_stats.c) ---- */

static uopc_program *construct(const char *tag) {
  char source[512];
  snprintf(source, sizeof source, "/* %s */\n%s", tag, KERNEL);
  uopc_error err = {0};
  uopc_program *p = NULL;
  assert_uopc_ok(uopc_program_new(&p, source, "twice", "ppp", NULL, &err), err);
  return p;
}

static int64_t counted(const char *name, int64_t before) { return uopc_counter_get(name) - before; }

/* Another process evicts the entry this one just found: it is looked up
 * again, missed, compiled and loaded, with each step counted. */
static void test_fault_entry_evicted_between_lookup_and_load_is_rebuilt(void **state) {
  (void)state;
  uopc_program_free(construct("lost"));
  int64_t hits = uopc_counter_get(UOPC_C_DISK_CACHE_HITS), misses = uopc_counter_get(UOPC_C_DISK_CACHE_MISSES),
          inv = uopc_counter_get(UOPC_C_COMPILER_INVOCATIONS);
  uopc_fault_arm(UOPC_FAULT_EVICT, 1);
  uopc_program *p = construct("lost");
  assert_int_equal(uopc_program_was_cached(p), 0);
  assert_int_equal(counted(UOPC_C_DISK_CACHE_HITS, hits), 1);
  assert_int_equal(counted(UOPC_C_DISK_CACHE_MISSES, misses), 1);
  assert_int_equal(counted(UOPC_C_COMPILER_INVOCATIONS, inv), 1);
  assert_int_equal(access(uopc_program_dir(p), F_OK), 0);
  uopc_program_free(p);
}

/* The same between a fresh publish and its dlopen: compiled twice. */
static void test_fault_entry_evicted_between_publish_and_load_is_rebuilt(void **state) {
  (void)state;
  int64_t misses = uopc_counter_get(UOPC_C_DISK_CACHE_MISSES), inv = uopc_counter_get(UOPC_C_COMPILER_INVOCATIONS);
  uopc_fault_arm(UOPC_FAULT_EVICT, 1);
  uopc_program *p = construct("lost-fresh");
  assert_int_equal(counted(UOPC_C_DISK_CACHE_MISSES, misses), 2);
  assert_int_equal(counted(UOPC_C_COMPILER_INVOCATIONS, inv), 2);
  uopc_program_free(p);
}

/* A peer that evicts every entry before this process can load it: the build
 * gives up after UOPC_BUILD_TRIES compilations, each counted, and says why,
 * instead of compiling for ever; once the peer stops, the same build loads. */
static void test_fault_entry_evicted_every_time_gives_up_after_the_tries(void **state) {
  (void)state;
  int64_t misses = uopc_counter_get(UOPC_C_DISK_CACHE_MISSES), inv = uopc_counter_get(UOPC_C_COMPILER_INVOCATIONS);
  uopc_error err = {0};
  uopc_program *p = NULL;
  uopc_fault_arm(UOPC_FAULT_EVICT, UOPC_FAULT_ALWAYS);
  int rc = uopc_program_new(&p, KERNEL, "twice", "ppp", NULL, &err);
  uopc_fault_arm(UOPC_FAULT_EVICT, 0);
  assert_uopc_code(rc, UOPC_E_LOAD, err);
  assert_null(p);
  assert_contains(err.message, "was evicted before it could be loaded, 3 times in a row: the cache's limit "
                               "(UOPC_CACHE_MAX_SIZE, ");
  assert_int_equal(counted(UOPC_C_DISK_CACHE_MISSES, misses), 3);
  assert_int_equal(counted(UOPC_C_COMPILER_INVOCATIONS, inv), 3);
  assert_int_equal(staging_dirs_left(), 0);
  uopc_program_free(construct("evicted-no-more"));
  assert_int_equal(counted(UOPC_C_COMPILER_INVOCATIONS, inv), 4);
}

/* The entry found is evicted while this process still holds it loaded: dlopen answers with the
 * object it has by that path, so the load succeeds and the program is not built again. */
static void test_fault_entry_evicted_while_loaded_here_is_not_rebuilt(void **state) {
  (void)state;
  uopc_program *held = construct("held");
  int64_t misses = uopc_counter_get(UOPC_C_DISK_CACHE_MISSES), inv = uopc_counter_get(UOPC_C_COMPILER_INVOCATIONS);
  uopc_fault_arm(UOPC_FAULT_EVICT, 1);
  uopc_program *p = construct("held");
  assert_int_equal(uopc_program_was_cached(p), 1);
  assert_int_equal(counted(UOPC_C_DISK_CACHE_MISSES, misses), 0);
  assert_int_equal(counted(UOPC_C_COMPILER_INVOCATIONS, inv), 0);
  uopc_program_free(p);
  uopc_program_free(held);
}

static void assert_total_matches_disk(void) {
  uopc_cache_record kept, disk = {0};
  uopc_error err = {0};
  uopc_cache_record_read(testutil_cache_dir, &kept);
  assert_uopc_ok(uopc_cache_scan(testutil_cache_dir, &disk, &err), err);
  assert_true(kept.known);
  assert_int_equal(kept.entries, disk.entries);
  assert_int_equal(kept.bytes, disk.bytes);
}

/* A cold build writes kernel.c, the manifest, then the stats file: when that
 * fails, the program is still built and loaded, and the next publish counts
 * the cache afresh. */
static void test_fault_stats_write_fails_and_the_build_goes_on(void **state) {
  (void)state;
  char stats[8192];
  uopc_fault_arm(UOPC_FAULT_CACHE_WRITE, 3);
  uopc_program_free(construct("stats-a"));
  snprintf(stats, sizeof stats, "%s/stats", testutil_cache_dir);
  assert_int_equal(access(stats, F_OK), -1);
  uopc_program_free(construct("stats-b"));
  assert_total_matches_disk();
}

/* The same failure, told: UOPC_DEBUG=2 names the entry the size was not
 * checked after, then why. The level is read once per process, so the build
 * runs in a fresh one (this binary again) with its stderr kept in a file. */
#define STATS_CHILD_ENV "UOPC_TEST_STATS_WRITE_FAILS"

static int stats_write_fails_once(void) {
  uopc_error err = {0};
  uopc_program *p = NULL;
  uopc_fault_arm(UOPC_FAULT_CACHE_WRITE, 3);
  int rc = uopc_program_new(&p, KERNEL, "twice", "ppp", NULL, &err);
  uopc_program_free(p);
  return rc;
}

/* Runs this binary again with UOPC_DEBUG=2 and child_env set (main then runs that child's
 * scenario), its stderr into a file of the cache directory; the child must exit 0. Returns what
 * it wrote (the caller frees it). */
static char *debug_log_of_child(const char *child_env) {
  char log[8192], *text = NULL;
  size_t n;
  snprintf(log, sizeof log, "%.8000s/debug.log", testutil_cache_dir);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || dup2(fd, 2) < 0) _exit(126);
    setenv("UOPC_DEBUG", "2", 1);
    setenv(child_env, "1", 1);
    execl("/proc/self/exe", "test_faults", (char *)NULL);
    _exit(127);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  uopc_error err = {0};
  assert_uopc_ok(uopc_read_file(log, &text, &n, &err), err);
  return text;
}

static void test_fault_stats_write_failure_is_told_at_debug_level_2(void **state) {
  (void)state;
  char want[8192 + 64], *text = debug_log_of_child(STATS_CHILD_ENV);
  snprintf(want, sizeof want, "uopc: the cache's size is not checked after '%.8000s/twice-", testutil_cache_dir);
  assert_contains(text, want);
  snprintf(want, sizeof want, "': cannot open '%.8000s/stats': No space left on device\n", testutil_cache_dir);
  assert_contains(text, want);
  free(text);
}

/* A publish whose rename fails is not told as a size left unchecked, even when the lock cannot be
 * taken either (its path is a directory, for root too): only a renamed entry is. The child fails
 * one publish, then makes one that succeeds, whose line the parent finds exactly once. */
#define RENAME_CHILD_ENV "UOPC_TEST_RENAME_FAILS_UNLOCKED"

static int rename_fails_unlocked(void) {
  uopc_error err = {0};
  uopc_program *p = NULL;
  uopc_fault_arm(UOPC_FAULT_RENAME, 1);
  int rc = uopc_program_new(&p, KERNEL, "twice", "ppp", NULL, &err);
  uopc_fault_arm(UOPC_FAULT_RENAME, 0);
  if (rc != UOPC_E_IO || p) return 3;
  rc = uopc_program_new(&p, KERNEL, "twice", "ppp", NULL, &err);
  uopc_program_free(p);
  return rc;
}

static int occurrences(const char *text, const char *what) {
  int n = 0;
  for (const char *at = text; (at = strstr(at, what)); at += strlen(what)) n++;
  return n;
}

static void test_fault_failed_publish_is_not_told_as_a_size_unchecked(void **state) {
  (void)state;
  char lock[8192], want[8192 + 64];
  snprintf(lock, sizeof lock, "%.8000s/lock", testutil_cache_dir);
  assert_int_equal(mkdir(lock, 0700), 0);
  char *text = debug_log_of_child(RENAME_CHILD_ENV);
  snprintf(want, sizeof want, "uopc: the cache's size is not checked after '%.8000s/twice-", testutil_cache_dir);
  if (occurrences(text, want) != 1) fail_msg("expected one line starting '%s' in:\n%s", want, text);
  snprintf(want, sizeof want, "': cannot open the cache's lock '%.8000s': Is a directory\n", lock);
  assert_contains(text, want);
  free(text);
}

/* The eviction's rename of its victim fails (publish is the first rename):
 * the victim stays whole and counted, and a later eviction takes it. */
static void test_fault_eviction_rename_fails_and_the_entry_stays_whole(void **state) {
  (void)state;
  uopc_program *a = construct("evict-a");
  char a_dir[8192];
  snprintf(a_dir, sizeof a_dir, "%s", uopc_program_dir(a));
  uopc_program_free(a);
  setenv("UOPC_CACHE_MAX_SIZE", "1", 1);
  int64_t evictions = uopc_counter_get(UOPC_C_CACHE_EVICTIONS);
  uopc_fault_arm(UOPC_FAULT_RENAME, 2);
  uopc_program_free(construct("evict-b"));
  assert_int_equal(counted(UOPC_C_CACHE_EVICTIONS, evictions), 0);
  assert_int_equal(access(a_dir, F_OK), 0);
  assert_total_matches_disk();
  uopc_program_free(construct("evict-c"));
  unsetenv("UOPC_CACHE_MAX_SIZE");
  assert_int_equal(counted(UOPC_C_CACHE_EVICTIONS, evictions), 2);
  assert_int_equal(access(a_dir, F_OK), -1);
  assert_int_equal(staging_dirs_left(), 0);
  assert_total_matches_disk();
}

/* A site past the table is ignored, armed or hit: arming it writes nothing (INT_MAX, far past the
 * table, would fault on a write) and leaves every real site unarmed. */
static void test_fault_arm_ignores_a_site_out_of_range(void **state) {
  (void)state;
  uopc_fault_site far = (uopc_fault_site)INT_MAX;
  uopc_fault_arm(far, 1);
  uopc_fault_arm(UOPC_FAULT_SITES, 1);
  assert_int_equal(uopc_fault_hit(far), 0);
  assert_int_equal(uopc_fault_hit(UOPC_FAULT_SITES), 0);
  for (int site = 0; site < UOPC_FAULT_SITES; site++) assert_int_equal(uopc_fault_hit((uopc_fault_site)site), 0);
}

int main(void) {
  if (getenv(STATS_CHILD_ENV)) return stats_write_fails_once();
  if (getenv(RENAME_CHILD_ENV)) return rename_fails_unlocked();
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup(test_fault_compiler_spawn_fails, fresh),
    cmocka_unit_test_setup(test_fault_cache_write_of_source_fails, fresh),
    cmocka_unit_test_setup(test_fault_cache_write_of_manifest_fails, fresh),
    cmocka_unit_test_setup(test_fault_publish_rename_fails, fresh),
    cmocka_unit_test_setup(test_fault_dlopen_of_fresh_build_fails, fresh),
    cmocka_unit_test_setup(test_fault_dlopen_of_cached_entry_rebuilds, fresh),
    cmocka_unit_test_setup(test_fault_second_spawn_fails_after_a_success, fresh),
    cmocka_unit_test_setup(test_fault_spawn_is_not_consulted_after_an_earlier_failure, fresh),
    cmocka_unit_test_setup(test_fault_entry_evicted_between_lookup_and_load_is_rebuilt, fresh),
    cmocka_unit_test_setup(test_fault_entry_evicted_between_publish_and_load_is_rebuilt, fresh),
    cmocka_unit_test_setup(test_fault_entry_evicted_every_time_gives_up_after_the_tries, fresh),
    cmocka_unit_test_setup(test_fault_entry_evicted_while_loaded_here_is_not_rebuilt, fresh),
    cmocka_unit_test_setup(test_fault_stats_write_fails_and_the_build_goes_on, fresh),
    cmocka_unit_test_setup(test_fault_stats_write_failure_is_told_at_debug_level_2, fresh),
    cmocka_unit_test_setup(test_fault_failed_publish_is_not_told_as_a_size_unchecked, fresh),
    cmocka_unit_test_setup(test_fault_eviction_rename_fails_and_the_entry_stays_whole, fresh),
    cmocka_unit_test(test_fault_arm_ignores_a_site_out_of_range),
  };
  return cmocka_run_group_tests(tests, testutil_fresh_cache, testutil_remove_cache);
}
