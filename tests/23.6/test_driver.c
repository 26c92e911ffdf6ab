/* test_driver.c: lab 23.6's driver as a user runs it, in new processes:
 * a cold cache compiles once, a second run compiles nothing and hits the disk
 * cache, an unsafe cache directory stops the lab with the runtime's error
 * (after the banner, through a pipe), UOPC_DEBUG=3 prints each call's guard
 * decision, UOPC_DEBUG=banana is one warning, and --help prints the usage. */
#include "guarded_jit.h"
#include "uopc/driver.h"
#include "testutil.h"
#include <limits.h>
#include <sys/stat.h>
#include <sys/wait.h>

static char driver[2 * PATH_MAX];

/* Runs the driver with UOPC_CACHE_DIR=cache (and UOPC_DEBUG=debug unless NULL), its one
 * argument arg unless NULL; captures stdout and stderr through one pipe, as make and the
 * grader read it. */
static int run_driver_with(const char *cache, const char *debug, const char *arg, char *output, size_t size) {
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[0]);
    setenv("UOPC_CACHE_DIR", cache, 1);
    if (debug) setenv("UOPC_DEBUG", debug, 1);
    else unsetenv("UOPC_DEBUG");
    execl(driver, driver, arg, (char *)NULL);
    _exit(127);
  }
  close(fds[1]);
  size_t len = 0;
  ssize_t got;
  while (len + 1 < size && (got = read(fds[0], output + len, size - 1 - len)) > 0) len += (size_t)got;
  output[len] = '\0';
  char rest[4096];   /* past size: drained, so that the driver never blocks on a full pipe */
  while (read(fds[0], rest, sizeof rest) > 0) {}
  close(fds[0]);
  int status;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int run_driver_at(const char *cache, const char *debug, char *output, size_t size) {
  return run_driver_with(cache, debug, NULL, output, size);
}

static int run_driver(const char *cache, char *output, size_t size) {
  return run_driver_at(cache, NULL, output, size);
}

/* The driver sits in bin/ beside this suite's tests/23.6/ directory. */
static int find_driver(void **state) {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return -1;
  self[n] = '\0';
  *strrchr(self, '/') = '\0';
  snprintf(driver, sizeof driver, "%s/../../bin/lab-23.6", self);
  return testutil_fresh_cache(state);
}

static void test_driver_cold_then_warm_cache(void **state) {
  (void)state;
  char out[16384];
  assert_int_equal(run_driver(testutil_cache_dir, out, sizeof out), 0);
  assert_contains(out, "variants built=1, compiled calls=5, layout fallbacks=1\n");
  assert_contains(out, "\ncompiler invocations=1\n");
  assert_contains(out, "\ndisk cache hits=0\n");
  assert_int_equal(run_driver(testutil_cache_dir, out, sizeof out), 0);
  assert_contains(out, "variants built=1, compiled calls=5, layout fallbacks=1\n");
  assert_contains(out, "\ncompiler invocations=0\n");
  assert_contains(out, "\ndisk cache hits=1\n");
}

static void test_driver_refuses_unsafe_cache_dir(void **state) {
  (void)state;
  char dir[2 * PATH_MAX], out[16384];
  snprintf(dir, sizeof dir, "%s/world-writable", testutil_cache_dir);
  assert_int_equal(mkdir(dir, 0700), 0);
  assert_int_equal(chmod(dir, 0777), 0);
  assert_int_equal(run_driver(dir, out, sizeof out), 2);
  assert_contains(out, "UOPC_E_UNSAFE_CACHE");
  assert_contains(out, "chmod 700");
  /* The banner first (stdout through a pipe is buffered, stderr is not), then one line naming the lab once. */
  const char *banner = strstr(out, "lab 23.6: one C kernel for many lengths"), *why = strstr(out, "lab 23.6: UOPC_E_UNSAFE_CACHE in ");
  if (!banner || !why || why < banner) fail_msg("expected the banner, then 'lab 23.6: UOPC_E_UNSAFE_CACHE in ...':\n%s", out);
  if (strstr(why + 1, "lab 23.6")) fail_msg("the failure line names the lab twice:\n%s", why);
}

static void test_driver_help_prints_the_usage_and_exits_0(void **state) {
  (void)state;
  char out[16384];
  assert_int_equal(run_driver_with(testutil_cache_dir, NULL, "--help", out, sizeof out), 0);
  if (strncmp(out, "usage: lab-23.6 [--help]\n", 25) != 0) fail_msg("--help printed:\n%s", out);
  assert_contains(out, "3 a student function is not implemented yet");
  if (strstr(out, "  length 1 ")) fail_msg("--help ran the lab:\n%s", out);
  assert_int_equal(run_driver_with(testutil_cache_dir, NULL, "--lenght=5", out, sizeof out), UOPC_DRIVER_EXIT_USAGE);
  assert_contains(out, "lab-23.6: unknown argument '--lenght=5'\nusage: lab-23.6 [--help]\n");
}

static void test_driver_warns_once_about_a_debug_level_that_is_not_one(void **state) {
  (void)state;
  char out[16384];
  const char *warning = "uopc: warning: UOPC_DEBUG='banana' is not a level (0 to 4); debug output stays off\n";
  assert_int_equal(run_driver_at(testutil_cache_dir, "banana", out, sizeof out), 0);
  const char *at = strstr(out, warning);
  if (!at || strstr(at + strlen(warning), "UOPC_DEBUG")) fail_msg("expected the warning once:\n%s", out);
  if (strstr(out, "uopc: square_plus_one")) fail_msg("UOPC_DEBUG=banana printed debug output:\n%s", out);
}

static void test_driver_traces_each_guard_decision_at_debug_3(void **state) {
  (void)state;
  char out[32768];
  assert_int_equal(run_driver_at(testutil_cache_dir, "3", out, sizeof out), 0);
  assert_contains(out, "uopc: square_plus_one: length 31, f32, strides x 1 out 1 -> compiled kernel (every guard holds)\n");
  assert_contains(out, "uopc: square_plus_one: length 10, f32, strides x 2 out 1 -> layout fallback (a guard failed)\n");
  assert_int_equal(run_driver_at(testutil_cache_dir, "4", out, sizeof out), 0);   /* higher levels show more */
  assert_contains(out, "uopc: square_plus_one: length 7, f32, strides x 1 out 1 -> compiled kernel (every guard holds)\n");
  assert_int_equal(run_driver_at(testutil_cache_dir, "2", out, sizeof out), 0);
  if (strstr(out, "square_plus_one: length"))
    fail_msg("UOPC_DEBUG=2 printed a guard decision (level 3's):\n%s", out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_driver_cold_then_warm_cache),
    cmocka_unit_test(test_driver_refuses_unsafe_cache_dir),
    cmocka_unit_test(test_driver_traces_each_guard_decision_at_debug_3),
    cmocka_unit_test(test_driver_help_prints_the_usage_and_exits_0),
    cmocka_unit_test(test_driver_warns_once_about_a_debug_level_that_is_not_one),
  };
  return cmocka_run_group_tests(tests, find_driver, testutil_remove_cache);
}
