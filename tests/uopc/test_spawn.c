/* test_spawn.c: the runtime's process spawning (uopc/src/spawn.c, an internal
 * module): a compiler runs with LC_ALL=C whatever the user's locale, and a
 * program is found only as a regular executable file. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#define TESTUTIL_FAILING_MALLOC   /* NOMEM paths on demand: fail_next_malloc */
#include "testutil.h"
#include "../../uopc/src/internal.h"
#include "spawnutil.h"

/* The child's environment has one LC_ALL, C: the user's is replaced, not shadowed. */
static void test_spawn_replaces_the_users_lc_all(void **state) {
  (void)state;
  char env[PATH_MAX];
  uopc_error err = {0};
  assert_uopc_ok(uopc_find_program("env", env, &err), err);
  char *const argv[] = {env, NULL};
  uopc_spawn_result *res = calloc(1, sizeof *res);
  assert_non_null(res);
  assert_int_equal(setenv("LC_ALL", "xx_XX.UTF-8", 1), 0);
  int rc = uopc_spawn(argv, NULL, res, &err);
  unsetenv("LC_ALL");
  assert_uopc_ok(rc, err);
  assert_int_equal(res->exit_status, 0);
  res->output[res->output_len < UOPC_SPAWN_OUTPUT_MAX ? res->output_len : UOPC_SPAWN_OUTPUT_MAX - 1] = '\0';
  int lines = 0;
  for (const char *p = res->output; (p = strstr(p, "LC_ALL=")); p++) {
    if (p != res->output && p[-1] != '\n') continue;   /* only at the start of a line */
    lines++;
    if (strncmp(p, "LC_ALL=C\n", 9) != 0) fail_msg("the child's environment holds %.20s", p);
  }
  assert_int_equal(lines, 1);
  free(res);
}

/* Every variable but LC_ALL reaches the child as it was, those that sort before "LC_ALL=" and
 * those after; LC_ALL is C. */
static void test_spawn_passes_every_other_variable_on(void **state) {
  (void)state;
  char sh[PATH_MAX];
  uopc_error err = {0};
  assert_uopc_ok(uopc_find_program("sh", sh, &err), err);
  char *const argv[] = {sh, "-c", "echo \"$AAA_UOPC|$LC_ALL|$ZZZ_UOPC\"", NULL};
  uopc_spawn_result *res = calloc(1, sizeof *res);
  assert_non_null(res);
  assert_int_equal(setenv("AAA_UOPC", "before", 1), 0);
  assert_int_equal(setenv("LC_ALL", "xx_XX.UTF-8", 1), 0);
  assert_int_equal(setenv("ZZZ_UOPC", "after", 1), 0);
  int rc = uopc_spawn(argv, NULL, res, &err);
  unsetenv("AAA_UOPC");
  unsetenv("LC_ALL");
  unsetenv("ZZZ_UOPC");
  assert_uopc_ok(rc, err);
  assert_int_equal(res->exit_status, 0);
  assert_int_equal(res->output_len, 15);
  assert_memory_equal(res->output, "before|C|after\n", 15);
  free(res);
}

/* No memory for the child's environment: the program is named, nothing is started. */
static void test_spawn_without_memory_names_the_program(void **state) {
  (void)state;
#ifdef __SANITIZE_ADDRESS__
  testutil_skip_under_asan("glibc's malloc, made to fail");
#else
  uopc_error err = {0};
  assert_uopc_code(spawn_with_malloc_k_failing(1, NULL, &err), UOPC_E_NOMEM, err);
  assert_string_equal(err.message, "no memory to start '/nonexistent/uopc-probe'");
#endif
}

/* A program that cannot be started is named in the message, with the reason (argv[1] is an argument). */
static void test_spawn_of_a_missing_program_names_it_and_why(void **state) {
  (void)state;
  char *const argv[] = {"/nonexistent/uopc-probe", "an-argument", NULL};
  uopc_spawn_result *res = calloc(1, sizeof *res);
  assert_non_null(res);
  uopc_error err = {0};
  int rc = uopc_spawn(argv, NULL, res, &err);
  free(res);
  assert_uopc_code(rc, UOPC_E_IO, err);
  assert_string_equal(err.message, "cannot start '/nonexistent/uopc-probe': No such file or directory");
}

/* No memory to record the working directory (glibc's addchdir copies it: the second malloc, after
 * the environment's): nothing is started, rather than a compiler run in the wrong directory. */
static void test_spawn_without_memory_for_the_working_directory_starts_nothing(void **state) {
  (void)state;
#ifdef __SANITIZE_ADDRESS__
  testutil_skip_under_asan("glibc's malloc, made to fail");
#else
  uopc_error err = {0};
  assert_uopc_code(spawn_with_malloc_k_failing(2, "/", &err), UOPC_E_IO, err);
  assert_string_equal(err.message, "cannot start '/nonexistent/uopc-probe': Cannot allocate memory");
#endif
}

static volatile sig_atomic_t alarms;
static void count_alarm(int sig) { (void)sig; alarms++; }

/* uopc_spawn with SIGALRM every 20 ms, whose handler does not ask for SA_RESTART: each signal
 * interrupts whatever system call the runtime is in. Timer and handler are restored before it
 * returns, so no assertion of the caller runs with them. */
static int spawn_under_alarms(char *const argv[], uopc_spawn_result *res, uopc_error *err) {
  struct sigaction on_alarm = {.sa_handler = count_alarm}, old;
  sigemptyset(&on_alarm.sa_mask);
  assert_int_equal(sigaction(SIGALRM, &on_alarm, &old), 0);
  struct itimerval every_20ms = {{0, 20000}, {0, 20000}}, off = {{0, 0}, {0, 0}};
  alarms = 0;
  assert_int_equal(setitimer(ITIMER_REAL, &every_20ms, NULL), 0);
  int rc = uopc_spawn(argv, NULL, res, err);
  setitimer(ITIMER_REAL, &off, NULL);
  sigaction(SIGALRM, &old, NULL);
  return rc;
}

/* A signal whose handler does not ask for SA_RESTART interrupts the read of the child's output
 * (EINTR): the read is tried again and the output kept whole, not cut where the signal came. */
static void test_spawn_reads_the_output_on_through_interrupting_signals(void **state) {
  (void)state;
  char sh[PATH_MAX];
  uopc_error err = {0};
  assert_uopc_ok(uopc_find_program("sh", sh, &err), err);
  char *const argv[] = {sh, "-c", "sleep 0.3; echo done", NULL};
  uopc_spawn_result *res = calloc(1, sizeof *res);
  assert_non_null(res);
  int rc = spawn_under_alarms(argv, res, &err);
  assert_uopc_ok(rc, err);
  assert_true(alarms >= 2);
  assert_int_equal(res->exit_status, 0);
  assert_string_equal(res->output, "done\n");
  free(res);
}

/* With SIGCHLD ignored the kernel reaps the child itself, and waitpid fails with ECHILD: that is
 * an error named as such, not an exit status read from nothing. */
static void test_spawn_reports_a_child_it_cannot_wait_for(void **state) {
  (void)state;
  char sh[PATH_MAX];
  uopc_error err = {0};
  assert_uopc_ok(uopc_find_program("sh", sh, &err), err);
  char *const argv[] = {sh, "-c", "exit 3", NULL};
  uopc_spawn_result *res = calloc(1, sizeof *res);
  assert_non_null(res);
  struct sigaction ign = {.sa_handler = SIG_IGN}, old;
  sigemptyset(&ign.sa_mask);
  assert_int_equal(sigaction(SIGCHLD, &ign, &old), 0);
  int rc = uopc_spawn(argv, NULL, res, &err);
  sigaction(SIGCHLD, &old, NULL);
  free(res);
  assert_uopc_code(rc, UOPC_E_IO, err);
  char want[PATH_MAX + 64];
  snprintf(want, sizeof want, "waiting for '%s' failed: No child processes", sh);
  assert_string_equal(err.message, want);
}

/* Runs sh -c script and returns what it captured. */
static uopc_spawn_result *run_sh(const char *script) {
  char sh[PATH_MAX];
  uopc_error err = {0};
  assert_uopc_ok(uopc_find_program("sh", sh, &err), err);
  char *const argv[] = {sh, "-c", (char *)script, NULL};
  uopc_spawn_result *res = calloc(1, sizeof *res);
  assert_non_null(res);
  assert_uopc_ok(uopc_spawn(argv, NULL, res, &err), err);
  assert_int_equal(res->exit_status, 0);
  return res;
}

/* The output buffer keeps UOPC_SPAWN_OUTPUT_MAX - 1 bytes and its NUL: that many is whole,
 * one more is truncated to them. */
static void test_spawn_keeps_output_up_to_the_buffer_less_its_nul(void **state) {
  (void)state;
  uopc_spawn_result *res = run_sh("yes x | head -c 16383");
  assert_int_equal(res->output_len, UOPC_SPAWN_OUTPUT_MAX - 1);
  assert_int_equal(res->truncated, 0);
  assert_int_equal(res->output[16382], 'x');  /* "x\n" repeated: byte 16382 is an x */
  assert_int_equal(res->output[16383], '\0');
  free(res);
  res = run_sh("yes x | head -c 16385");
  assert_int_equal(res->output_len, UOPC_SPAWN_OUTPUT_MAX - 1);
  assert_int_equal(res->truncated, 1);
  assert_int_equal(res->output[16382], 'x');
  assert_int_equal(res->output[16383], '\0');
  free(res);
}

/* PATH = dir/a:dir/b, where a/probe is a directory (searchable, so access(X_OK) passes) and
 * b/probe an executable file: the search passes over the directory. */
static void test_find_program_passes_over_a_directory_of_that_name(void **state) {
  (void)state;
  char a[4200], b[4200], dir_probe[4300], file_probe[4300], path[8500], resolved[PATH_MAX], want[PATH_MAX];
  snprintf(a, sizeof a, "%s/a", testutil_cache_dir);
  snprintf(b, sizeof b, "%s/b", testutil_cache_dir);
  snprintf(dir_probe, sizeof dir_probe, "%s/uopc-probe", a);
  snprintf(file_probe, sizeof file_probe, "%s/uopc-probe", b);
  assert_int_equal(mkdir(a, 0755), 0);
  assert_int_equal(mkdir(b, 0755), 0);
  assert_int_equal(mkdir(dir_probe, 0755), 0);
  FILE *f = fopen(file_probe, "w");
  assert_non_null(f);
  fputs("#!/bin/sh\n", f);
  assert_int_equal(fclose(f), 0);
  assert_int_equal(chmod(file_probe, 0755), 0);
  const char *old = getenv("PATH");
  char *saved = old ? strdup(old) : NULL;
  snprintf(path, sizeof path, "%s:%s", a, b);
  assert_int_equal(setenv("PATH", path, 1), 0);
  uopc_error err = {0};
  int rc = uopc_find_program("uopc-probe", resolved, &err);
  if (saved) setenv("PATH", saved, 1);
  free(saved);
  assert_uopc_ok(rc, err);
  assert_non_null(realpath(file_probe, want));
  assert_string_equal(resolved, want);
  /* named by its path, the directory is refused */
  assert_uopc_code(uopc_find_program(dir_probe, resolved, &err), UOPC_E_INVALID, err);
  assert_contains(err.message, "is not an executable file");
}

/* The search stops at PATH's terminating NUL: the bytes after it (here ":/bin", in the same
 * buffer that putenv installs) are not one more entry. */
static void test_find_program_stops_at_the_end_of_path(void **state) {
  (void)state;
  static char entry[] = "PATH=/nonexistent-uopc\0:/bin";
  const char *old = getenv("PATH");
  char *saved = old ? strdup(old) : NULL, resolved[PATH_MAX];
  assert_int_equal(putenv(entry), 0);
  uopc_error err = {0};
  int rc = uopc_find_program("sh", resolved, &err);
  if (saved) setenv("PATH", saved, 1);
  else unsetenv("PATH");
  free(saved);
  assert_uopc_code(rc, UOPC_E_INVALID, err);
  assert_string_equal(err.message, "program 'sh' not found on PATH (/nonexistent-uopc)");
}

/* No descriptor left for the output's pipe (RLIMIT_NOFILE at 3, with 0, 1 and 2 open): the
 * program is named with the reason, and nothing is started. In a child, whose limit it is. */
static void test_spawn_without_descriptors_for_the_pipe_names_the_program(void **state) {
  (void)state;
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    for (int fd = 3; fd < 4096; fd++) close(fd);
    struct rlimit three = {3, 3};
    if (setrlimit(RLIMIT_NOFILE, &three) != 0) _exit(2);
    char *const argv[] = {"/nonexistent/uopc-probe", NULL};
    static uopc_spawn_result res;
    uopc_error err = {0};
    int rc = uopc_spawn(argv, NULL, &res, &err);
    const char *want = "cannot create a pipe for '/nonexistent/uopc-probe': Too many open files";
    int ok = rc == UOPC_E_IO && strcmp(err.message, want) == 0;
    if (!ok) fprintf(stderr, "%s: %s\n", uopc_error_name(rc), err.message);
    _exit(ok ? 0 : 1);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
}

/* Sets PATH to value (NULL: unset) and returns the old one, copied, for restore_path. */
static char *set_path(const char *value) {
  const char *old = getenv("PATH");
  char *saved = old ? strdup(old) : NULL;
  if (value) assert_int_equal(setenv("PATH", value, 1), 0);
  else unsetenv("PATH");
  return saved;
}

static void restore_path(char *saved) {
  if (saved) setenv("PATH", saved, 1);
  else unsetenv("PATH");
  free(saved);
}

/* Writes a file at dir/name with the given mode; the path goes to path. */
static void make_file(char *path, size_t size, const char *dir, const char *name, mode_t mode) {
  assert_true(snprintf(path, size, "%s/%s", dir, name) < (int)size);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs("#!/bin/sh\n", f);
  assert_int_equal(fclose(f), 0);
  assert_int_equal(chmod(path, mode), 0);
}

/* No name, or an empty one, is refused before any search. */
static void test_find_program_refuses_a_null_or_empty_name(void **state) {
  (void)state;
  char resolved[PATH_MAX];
  uopc_error err = {0};
  assert_uopc_code(uopc_find_program(NULL, resolved, &err), UOPC_E_INVALID, err);
  assert_string_equal(err.message, "empty program name");
  uopc_error_clear(&err);
  assert_uopc_code(uopc_find_program("", resolved, &err), UOPC_E_INVALID, err);
  assert_string_equal(err.message, "empty program name");
}

/* A regular file without execute permission is no program, named by its path or found on PATH
 * (access(X_OK) refuses a file with no x bit even to root). */
static void test_find_program_refuses_a_file_without_execute_permission(void **state) {
  (void)state;
  char file[PATH_MAX], resolved[PATH_MAX], want[PATH_MAX + 64];
  make_file(file, sizeof file, testutil_cache_dir, "uopc-plain", 0644);
  uopc_error err = {0};
  assert_uopc_code(uopc_find_program(file, resolved, &err), UOPC_E_INVALID, err);
  snprintf(want, sizeof want, "program '%s' is not an executable file", file);
  assert_string_equal(err.message, want);
  char *saved = set_path(testutil_cache_dir);
  int rc = uopc_find_program("uopc-plain", resolved, &err);
  restore_path(saved);
  assert_uopc_code(rc, UOPC_E_INVALID, err);
  snprintf(want, sizeof want, "program 'uopc-plain' not found on PATH (%s)", testutil_cache_dir);
  assert_string_equal(err.message, want);
}

/* PATH unset or empty: the search runs through /usr/local/bin, /usr/bin and /bin, as execvp's
 * does, and the message names those. */
static void test_find_program_without_path_searches_the_default_directories(void **state) {
  (void)state;
  const char *values[] = {NULL, ""};
  for (int i = 0; i < 2; i++) {
    char resolved[PATH_MAX], sh[PATH_MAX];
    uopc_error err = {0};
    char *saved = set_path(values[i]);
    int found_sh = uopc_find_program("sh", resolved, &err);
    int missing = uopc_find_program("uopc-no-such-program", sh, &err);
    restore_path(saved);
    assert_uopc_ok(found_sh, err);
    assert_true(strcmp(resolved, realpath("/bin/sh", sh) ? sh : "") == 0 ||
                strcmp(resolved, realpath("/usr/bin/sh", sh) ? sh : "") == 0);
    assert_uopc_code(missing, UOPC_E_INVALID, err);
    assert_string_equal(err.message,
                        "program 'uopc-no-such-program' not found on PATH (/usr/local/bin:/usr/bin:/bin)");
  }
}

/* Empty PATH entries (leading, doubled) are passed over, not read as "/" + name; the next entry
 * is searched. */
static void test_find_program_passes_over_empty_path_entries(void **state) {
  (void)state;
  char file[PATH_MAX], path[PATH_MAX + 8], resolved[PATH_MAX], want[PATH_MAX];
  make_file(file, sizeof file, testutil_cache_dir, "uopc-probe-x", 0755);
  snprintf(path, sizeof path, "::%s:", testutil_cache_dir);
  char *saved = set_path(path);
  uopc_error err = {0};
  int rc = uopc_find_program("uopc-probe-x", resolved, &err);
  restore_path(saved);
  assert_uopc_ok(rc, err);
  assert_non_null(realpath(file, want));
  assert_string_equal(resolved, want);
}

/* A PATH entry so long that entry/name does not fit in PATH_MAX is skipped, not truncated: here
 * the entry is ///...///<cache dir>, padded so that entry/name is exactly PATH_MAX bytes with
 * its NUL one past, and the truncated candidate (name less its last byte) is an executable. */
static void test_find_program_skips_a_path_entry_too_long_for_the_name(void **state) {
  (void)state;
  char file[PATH_MAX], resolved[PATH_MAX];
  make_file(file, sizeof file, testutil_cache_dir, "uopc-probe", 0755);
  const char *name = "uopc-probex";
  size_t dir_len = strlen(testutil_cache_dir), entry_len = PATH_MAX - 1 - strlen(name);
  char *entry = malloc(entry_len + 1);
  assert_non_null(entry);
  memset(entry, '/', entry_len - dir_len);
  memcpy(entry + entry_len - dir_len, testutil_cache_dir, dir_len + 1);
  assert_int_equal(strlen(entry) + 1 + strlen(name), PATH_MAX);
  char *saved = set_path(entry);
  uopc_error err = {0};
  int rc = uopc_find_program(name, resolved, &err);
  restore_path(saved);
  free(entry);
  assert_uopc_code(rc, UOPC_E_INVALID, err);
  assert_contains(err.message, "program 'uopc-probex' not found on PATH (////");
}

/* Output closed early, the child then runs on: the wait for it is interrupted by signals (no
 * SA_RESTART) and tried again, and the exit status is the child's. */
static void test_spawn_waits_on_through_interrupting_signals(void **state) {
  (void)state;
  char sh[PATH_MAX];
  uopc_error err = {0};
  assert_uopc_ok(uopc_find_program("sh", sh, &err), err);
  char *const argv[] = {sh, "-c", "exec >/dev/null 2>&1; sleep 0.3; exit 7", NULL};
  uopc_spawn_result *res = calloc(1, sizeof *res);
  assert_non_null(res);
  int rc = spawn_under_alarms(argv, res, &err);
  assert_uopc_ok(rc, err);
  assert_true(alarms >= 2);
  assert_int_equal(res->exit_status, 7);
  assert_int_equal(res->output_len, 0);
  free(res);
}

/* A child killed by a signal reports 128 + the signal's number, as a shell does. */
static void test_spawn_reports_a_killed_child_as_128_plus_the_signal(void **state) {
  (void)state;
  uopc_spawn_result *res = calloc(1, sizeof *res);
  assert_non_null(res);
  char sh[PATH_MAX];
  uopc_error err = {0};
  assert_uopc_ok(uopc_find_program("sh", sh, &err), err);
  char *const argv[] = {sh, "-c", "echo going; kill -KILL $$", NULL};
  assert_uopc_ok(uopc_spawn(argv, NULL, res, &err), err);
  assert_int_equal(res->exit_status, 128 + SIGKILL);
  assert_string_equal(res->output, "going\n");
  free(res);
}

/* No memory for the file actions' copy of "/dev/null" (the second malloc without a working
 * directory, after the environment's): nothing is started. */
static void test_spawn_without_memory_for_the_file_actions_starts_nothing(void **state) {
  (void)state;
#ifdef __SANITIZE_ADDRESS__
  testutil_skip_under_asan("glibc's malloc, made to fail");
#else
  uopc_error err = {0};
  assert_uopc_code(spawn_with_malloc_k_failing(2, NULL, &err), UOPC_E_IO, err);
  assert_string_equal(err.message, "cannot start '/nonexistent/uopc-probe': Cannot allocate memory");
#endif
}

/* A working directory deeper than PATH_MAX, built with *at calls: descriptors to each level go
 * to fds (DEEP_LEVELS + 1, the cache directory first), and an executable uopc-deep at the bottom. */
enum { DEEP_LEVELS = 18 };
static char deep_name[251];

static void make_deep_tree(int fds[DEEP_LEVELS + 1]) {
  memset(deep_name, 'd', sizeof deep_name - 1);
  fds[0] = open(testutil_cache_dir, O_RDONLY | O_DIRECTORY);
  assert_true(fds[0] >= 0);
  for (int i = 1; i <= DEEP_LEVELS; i++) {
    assert_int_equal(mkdirat(fds[i - 1], deep_name, 0755), 0);
    fds[i] = openat(fds[i - 1], deep_name, O_RDONLY | O_DIRECTORY);
    assert_true(fds[i] >= 0);
  }
  int f = openat(fds[DEEP_LEVELS], "uopc-deep", O_WRONLY | O_CREAT, 0755);
  assert_true(f >= 0);
  assert_int_equal(write(f, "#!/bin/sh\n", 10), 10);
  assert_int_equal(fchmod(f, 0755), 0);
  close(f);
}

static void remove_deep_tree(int fds[DEEP_LEVELS + 1]) {
  unlinkat(fds[DEEP_LEVELS], "uopc-deep", 0);
  for (int i = DEEP_LEVELS; i >= 1; i--) {
    close(fds[i]);
    unlinkat(fds[i - 1], deep_name, AT_REMOVEDIR);
  }
  close(fds[0]);
}

/* An executable whose absolute path is longer than PATH_MAX has no name realpath can give:
 * refused, named by a relative path or found through a relative PATH entry, rather than
 * handed on as a truncated or unset path. */
static void test_find_program_refuses_a_program_whose_full_path_is_too_long(void **state) {
  (void)state;
  int fds[DEEP_LEVELS + 1], here = open(".", O_RDONLY | O_DIRECTORY);
  assert_true(here >= 0);
  make_deep_tree(fds);
  assert_true(strlen(testutil_cache_dir) + DEEP_LEVELS * sizeof deep_name > PATH_MAX);
  assert_int_equal(fchdir(fds[DEEP_LEVELS]), 0);
  char resolved[PATH_MAX];
  uopc_error by_path = {0}, on_path = {0};
  int rc_by_path = uopc_find_program("./uopc-deep", resolved, &by_path);
  char *saved = set_path(".");
  int rc_on_path = uopc_find_program("uopc-deep", resolved, &on_path);
  restore_path(saved);
  int back = fchdir(here);
  close(here);
  remove_deep_tree(fds);
  assert_int_equal(back, 0);
  assert_uopc_code(rc_by_path, UOPC_E_INVALID, by_path);
  assert_string_equal(by_path.message, "program './uopc-deep' is not an executable file");
  assert_uopc_code(rc_on_path, UOPC_E_INVALID, on_path);
  assert_string_equal(on_path.message, "program 'uopc-deep' not found on PATH (.)");
}

/* The child reads /dev/null, never this process's stdin: a compiler that waits for input must
 * not eat what the user types, nor hang on a terminal. Here stdin is a pipe that holds text,
 * so that an inherited stdin would show in cat's output whatever the test runner's stdin is. */
static void test_spawn_gives_the_child_dev_null_as_stdin(void **state) {
  (void)state;
  char cat[PATH_MAX];
  uopc_error err = {0};
  assert_uopc_ok(uopc_find_program("cat", cat, &err), err);
  int fds[2], saved = dup(0);
  assert_true(saved >= 0);
  assert_int_equal(pipe(fds), 0);
  assert_int_equal(write(fds[1], "typed\n", 6), 6);
  close(fds[1]);
  assert_int_equal(dup2(fds[0], 0), 0);
  close(fds[0]);
  char *const argv[] = {cat, NULL};
  uopc_spawn_result *res = calloc(1, sizeof *res);
  assert_non_null(res);
  int rc = uopc_spawn(argv, NULL, res, &err);
  assert_int_equal(dup2(saved, 0), 0);
  close(saved);
  assert_uopc_ok(rc, err);
  assert_int_equal(res->exit_status, 0);
  assert_int_equal(res->output_len, 0);
  assert_string_equal(res->output, "");
  free(res);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_spawn_replaces_the_users_lc_all),
    cmocka_unit_test(test_spawn_passes_every_other_variable_on),
    cmocka_unit_test(test_spawn_without_memory_names_the_program),
    cmocka_unit_test(test_spawn_of_a_missing_program_names_it_and_why),
    cmocka_unit_test(test_spawn_without_memory_for_the_working_directory_starts_nothing),
    cmocka_unit_test(test_spawn_keeps_output_up_to_the_buffer_less_its_nul),
    cmocka_unit_test(test_spawn_reports_a_child_it_cannot_wait_for),
    cmocka_unit_test(test_spawn_reads_the_output_on_through_interrupting_signals),
    cmocka_unit_test(test_find_program_passes_over_a_directory_of_that_name),
    cmocka_unit_test(test_find_program_stops_at_the_end_of_path),
    cmocka_unit_test(test_spawn_without_descriptors_for_the_pipe_names_the_program),
    cmocka_unit_test(test_find_program_refuses_a_null_or_empty_name),
    cmocka_unit_test(test_find_program_refuses_a_file_without_execute_permission),
    cmocka_unit_test(test_find_program_without_path_searches_the_default_directories),
    cmocka_unit_test(test_find_program_passes_over_empty_path_entries),
    cmocka_unit_test(test_find_program_skips_a_path_entry_too_long_for_the_name),
    cmocka_unit_test(test_spawn_waits_on_through_interrupting_signals),
    cmocka_unit_test(test_spawn_reports_a_killed_child_as_128_plus_the_signal),
    cmocka_unit_test(test_spawn_without_memory_for_the_file_actions_starts_nothing),
    cmocka_unit_test(test_find_program_refuses_a_program_whose_full_path_is_too_long),
    cmocka_unit_test(test_spawn_gives_the_child_dev_null_as_stdin),
  };
  return cmocka_run_group_tests(tests, testutil_fresh_cache, testutil_remove_cache);
}
