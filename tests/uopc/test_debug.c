/* test_debug.c: the environment variables read once a process (UOPC_DEBUG, UOPC_COUNTERS_JSON)
 * at the values test_env.c leaves out: a level past long's range, and an empty counters path.
 * Each runs in a new process, since the level is read once and the counters are written at exit. */
#include <sys/stat.h>
#include <sys/wait.h>
#include "uopc/uopc.h"
#include "testutil.h"

/* Runs child() in a new process, in testutil_cache_dir, with name=value set (UOPC_DEBUG and
 * UOPC_COUNTERS_JSON unset otherwise); captures its stderr into err_text; returns its exit status. */
static int run_with(const char *name, const char *value, void (*child)(void), char *err_text, size_t size) {
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 2);
    close(fds[0]);
    if (chdir(testutil_cache_dir) != 0) _exit(99);
    unsetenv("UOPC_DEBUG");
    unsetenv("UOPC_COUNTERS_JSON");
    setenv(name, value, 1);
    child();
    exit(0);   /* atexit handlers run: the counters are written here */
  }
  close(fds[1]);
  size_t len = 0;
  ssize_t got;
  while (len + 1 < size && (got = read(fds[0], err_text + len, size - 1 - len)) > 0) len += (size_t)got;
  err_text[len] = '\0';
  close(fds[0]);
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void exit_with_the_level(void) { exit(uopc_debug_level()); }

/* A level past long's range (strtol says ERANGE and gives LONG_MAX) is no level: warned about,
 * and debug output stays off. */
static void test_debug_level_past_the_range_of_long_is_warned_about(void **state) {
  (void)state;
  char err[4096];
  assert_int_equal(run_with("UOPC_DEBUG", "99999999999999999999", exit_with_the_level, err, sizeof err), 0);
  assert_string_equal(err, "uopc: warning: UOPC_DEBUG='99999999999999999999' is not a level (0 to 4); "
                           "debug output stays off\n");
}

static void count_one(void) { uopc_counter_add("debug test calls", 1); }

/* UOPC_COUNTERS_JSON set but empty is unset: no file written (not even a temporary one in the
 * working directory), nothing said. */
static void test_counters_json_empty_path_writes_nothing(void **state) {
  (void)state;
  char err[4096];
  assert_int_equal(run_with("UOPC_COUNTERS_JSON", "", count_one, err, sizeof err), 0);
  assert_string_equal(err, "");
  DIR *d = opendir(testutil_cache_dir);
  assert_non_null(d);
  int entries = 0;
  for (struct dirent *e; (e = readdir(d));) entries += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
  closedir(d);
  assert_int_equal(entries, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_debug_level_past_the_range_of_long_is_warned_about, testutil_fresh_cache,
                                    testutil_remove_cache),
    cmocka_unit_test_setup_teardown(test_counters_json_empty_path_writes_nothing, testutil_fresh_cache,
                                    testutil_remove_cache),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
