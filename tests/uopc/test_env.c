/* test_env.c: the runtime's environment variables as a user sets them, in
 * new processes: a value the runtime cannot use (UOPC_DEBUG=banana, an
 * UOPC_COUNTERS_JSON path it cannot write) is warned about once on stderr,
 * naming the variable and the value, and never changes the exit status. */
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "uopc/uopc.h"
#include "testutil.h"

/* Runs child() in a new process with name=value set (UOPC_DEBUG and
 * UOPC_COUNTERS_JSON unset otherwise); captures its stderr; returns its exit status. */
static int run_with(const char *name, const char *value, void (*child)(void), char *err_text, size_t size) {
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 2);
    close(fds[0]);
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
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int lines_in(const char *text) {
  int n = 0;
  for (; *text; text++) n += *text == '\n';
  return n;
}

static void read_the_level_twice(void) {
  int a = uopc_debug_level(), b = uopc_debug_level();
  uopc_debug(1, "a level-1 line");
  if (a != b) exit(1);
  exit(a == 0 ? 0 : 10 + a);
}

static void test_debug_level_that_is_not_a_number_is_warned_about_once(void **state) {
  (void)state;
  char err[4096];
  assert_int_equal(run_with("UOPC_DEBUG", "banana", read_the_level_twice, err, sizeof err), 0);
  assert_string_equal(err, "uopc: warning: UOPC_DEBUG='banana' is not a level (0 to 4); debug output stays off\n");
  assert_int_equal(run_with("UOPC_DEBUG", "2x", read_the_level_twice, err, sizeof err), 0);
  assert_contains(err, "UOPC_DEBUG='2x' is not a level");
  assert_int_equal(run_with("UOPC_DEBUG", "-1", read_the_level_twice, err, sizeof err), 0);
  assert_contains(err, "UOPC_DEBUG='-1' is not a level");
  /* past INT_MAX: as an int it would be 3 */
  assert_int_equal(run_with("UOPC_DEBUG", "4294967299", read_the_level_twice, err, sizeof err), 0);
  assert_string_equal(err, "uopc: warning: UOPC_DEBUG='4294967299' is not a level (0 to 4); "
                           "debug output stays off\n");
}

static void test_debug_level_that_is_a_number_is_read_silently(void **state) {
  (void)state;
  char err[4096];
  assert_int_equal(run_with("UOPC_DEBUG", "", read_the_level_twice, err, sizeof err), 0);
  assert_string_equal(err, "");
  /* 0 is a level, the one that keeps debug output off: no warning either */
  assert_int_equal(run_with("UOPC_DEBUG", "0", read_the_level_twice, err, sizeof err), 0);
  assert_string_equal(err, "");
  /* decimal only: "010" is 10, not octal 8 */
  assert_int_equal(run_with("UOPC_DEBUG", "010", read_the_level_twice, err, sizeof err), 20);
  if (strstr(err, "warning")) fail_msg("UOPC_DEBUG=010 warned:\n%s", err);
  assert_int_equal(run_with("UOPC_DEBUG", "3", read_the_level_twice, err, sizeof err), 13);
  assert_contains(err, "uopc: a level-1 line\n");
  if (strstr(err, "warning")) fail_msg("UOPC_DEBUG=3 warned:\n%s", err);
}

static void count_one(void) { uopc_counter_add("env test calls", 1); }

/* The parent of the path is a regular file: no user, root included, can write there. */
static void test_counters_json_path_that_cannot_be_written_is_warned_about(void **state) {
  (void)state;
  char file[4200], path[4300], err[4096], want[8800];
  snprintf(file, sizeof file, "%s/not-a-dir", testutil_cache_dir);
  FILE *f = fopen(file, "w");
  assert_non_null(f);
  fclose(f);
  snprintf(path, sizeof path, "%s/counters.json", file);
  assert_int_equal(run_with("UOPC_COUNTERS_JSON", path, count_one, err, sizeof err), 0);
  snprintf(want, sizeof want, "uopc: warning: UOPC_COUNTERS_JSON='%s': cannot write counters to '%s.tmp.", path, path);
  if (strncmp(err, want, strlen(want)) != 0) fail_msg("expected a line starting\n%s\ngot\n%s", want, err);
  assert_contains(err, "Not a directory; the counters were not written\n");
  assert_int_equal(lines_in(err), 1);
}

/* The path is a directory: the temporary file is written beside it, and
 * removed when it cannot be renamed over the directory. */
static void test_counters_json_path_that_is_a_directory_leaves_no_file_behind(void **state) {
  (void)state;
  char dir[4200], path[4300], err[4096], want[8800];
  snprintf(dir, sizeof dir, "%s/counters", testutil_cache_dir);
  assert_int_equal(mkdir(dir, 0700), 0);
  snprintf(path, sizeof path, "%s/counters.json", dir);
  assert_int_equal(mkdir(path, 0700), 0);
  assert_int_equal(run_with("UOPC_COUNTERS_JSON", path, count_one, err, sizeof err), 0);
  snprintf(want, sizeof want, "uopc: warning: UOPC_COUNTERS_JSON='%s': cannot write counters to '%s': "
           "Is a directory; the counters were not written\n", path, path);
  assert_string_equal(err, want);
  DIR *d = opendir(dir);
  assert_non_null(d);
  struct dirent *e;
  int entries = 0;
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
      if (strcmp(e->d_name, "counters.json")) print_error("left behind: %s\n", e->d_name);
      entries++;
    }
  closedir(d);
  assert_int_equal(entries, 1);
}

static void test_counters_json_path_that_can_be_written_gets_the_counters(void **state) {
  (void)state;
  char path[4200], err[4096], text[4096] = {0};
  snprintf(path, sizeof path, "%s/counters.json", testutil_cache_dir);
  assert_int_equal(run_with("UOPC_COUNTERS_JSON", path, count_one, err, sizeof err), 0);
  assert_string_equal(err, "");
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = '\0';
  /* the whole file: the runtime's five counters, first one included, then the child's */
  assert_string_equal(text, "{\n  \"programs constructed\": 0,\n  \"compiler invocations\": 0,\n"
                            "  \"disk cache hits\": 0,\n  \"disk cache misses\": 0,\n"
                            "  \"corrupted entries rebuilt\": 0,\n  \"env test calls\": 1\n}\n");
}

/* Builds a program whose source is new (a comment names the level), so that the compiler runs. */
static void build_at_level(void) {
  char source[256];
  snprintf(source, sizeof source, "/* level %s */\nvoid tiny(void) {}\n", getenv("UOPC_DEBUG"));
  uopc_program *p;
  uopc_error err = {0};
  int rc = uopc_program_new(&p, source, "tiny", "", NULL, &err);
  if (rc == UOPC_OK) uopc_program_free(p);
  exit(rc);
}

/* The kernel's source is printed at level 4 only: level 3 shows the compile, not the source,
 * and level 0 prints nothing at all. */
static void test_debug_level_4_alone_prints_the_source_compiled(void **state) {
  (void)state;
  char err[16384];
  assert_int_equal(run_with("UOPC_DEBUG", "0", build_at_level, err, sizeof err), 0);
  assert_string_equal(err, "");
  assert_int_equal(run_with("UOPC_DEBUG", "3", build_at_level, err, sizeof err), 0);
  assert_contains(err, "uopc: compiling tiny with ");
  if (strstr(err, "source of")) fail_msg("UOPC_DEBUG=3 printed the source:\n%s", err);
  assert_int_equal(run_with("UOPC_DEBUG", "4", build_at_level, err, sizeof err), 0);
  assert_contains(err, "uopc: source of tiny:\n/* level 4 */\nvoid tiny(void) {}\n\n");
}

/* A fake nvcc in dir/bin running script (sh). */
static void write_fake_nvcc(const char *dir, const char *script) {
  char bin[4300], nvcc[4400];
  snprintf(bin, sizeof bin, "%s/bin", dir);
  snprintf(nvcc, sizeof nvcc, "%s/nvcc", bin);
  assert_int_equal(mkdir(dir, 0755), 0);
  assert_int_equal(mkdir(bin, 0755), 0);
  FILE *f = fopen(nvcc, "w");
  assert_non_null(f);
  fprintf(f, "#!/bin/sh\n%s", script);
  assert_int_equal(fclose(f), 0);
  assert_int_equal(chmod(nvcc, 0755), 0);
}

static char fake_cuda_home[4200];

/* Compiles by nvcc (NVRTC skipped) with CUDA_HOME naming fake_cuda_home; prints the error. */
static void compile_by_nvcc(void) {
  setenv("CUDA_HOME", fake_cuda_home, 1);
  uopc_cuda_options opts = {.arch = "sm_80", .force_nvcc = 1};
  uopc_error err = {0};
  int rc = uopc_cuda_compile("extern \"C\" __global__ void k() {}\n", "k", &opts, NULL, 0, &err);
  fputs(err.message, stderr);
  exit(rc);
}

/* nvcc is looked for on PATH first, then in $CUDA_HOME/bin: with one in each, PATH's runs. */
static void test_nvcc_on_path_runs_before_the_one_in_cuda_home(void **state) {
  (void)state;
  char on_path[4200], bin[4300], want[PATH_MAX + 16], err[16384];
  snprintf(on_path, sizeof on_path, "%s/nvcc-on-path", testutil_cache_dir);
  snprintf(fake_cuda_home, sizeof fake_cuda_home, "%s/nvcc-toolkit", testutil_cache_dir);
  write_fake_nvcc(on_path, "echo the nvcc on PATH\nexit 1\n");   /* each fails saying which it is */
  write_fake_nvcc(fake_cuda_home, "echo the nvcc of CUDA_HOME\nexit 1\n");
  snprintf(bin, sizeof bin, "%s/bin", on_path);
  assert_int_equal(run_with("PATH", bin, compile_by_nvcc, err, sizeof err), UOPC_E_COMPILE);
  assert_non_null(realpath(bin, want));
  strcat(want, "/nvcc failed on ");
  if (strncmp(err, want, strlen(want)) != 0) fail_msg("expected '%s...', got:\n%s", want, err);
  assert_contains(err, "\nthe nvcc on PATH\n");
}

/* With no nvcc on PATH, $CUDA_HOME/bin/nvcc runs (before the default install's). */
static void test_nvcc_in_cuda_home_runs_when_none_is_on_path(void **state) {
  (void)state;
  char empty[4200], bin[4300], want[PATH_MAX + 16], err[16384];
  snprintf(empty, sizeof empty, "%s/no-nvcc-here", testutil_cache_dir);
  assert_int_equal(mkdir(empty, 0700), 0);
  snprintf(fake_cuda_home, sizeof fake_cuda_home, "%s/nvcc-home-only", testutil_cache_dir);
  write_fake_nvcc(fake_cuda_home, "echo the nvcc of CUDA_HOME\nexit 1\n");
  assert_int_equal(run_with("PATH", empty, compile_by_nvcc, err, sizeof err), UOPC_E_COMPILE);
  snprintf(bin, sizeof bin, "%s/bin", fake_cuda_home);
  assert_non_null(realpath(bin, want));
  strcat(want, "/nvcc failed on ");
  if (strncmp(err, want, strlen(want)) != 0) fail_msg("expected '%s...', got:\n%s", want, err);
  assert_contains(err, "\nthe nvcc of CUDA_HOME\n");
}

/* Compiles k by nvcc twice (the first sets up what a process keeps); prints the error and how many
 * more descriptors are open after the second. */
static void compile_by_nvcc_twice_counting_descriptors(void) {
  setenv("CUDA_HOME", fake_cuda_home, 1);
  uopc_cuda_options opts = {.arch = "sm_80", .force_nvcc = 1};
  uopc_error err = {0};
  char log[4096];
  uopc_cuda_compile("extern \"C\" __global__ void k() {}\n", "k", &opts, log, sizeof log, &err);
  int before = testutil_open_fds();
  int rc = uopc_cuda_compile("extern \"C\" __global__ void k() {}\n", "k", &opts, log, sizeof log, &err);
  fprintf(stderr, "%s\n%s\n%d more descriptors\n", err.message, log, testutil_open_fds() - before);
  exit(rc);
}

/* An nvcc that succeeds but writes PTX without the kernel: the compile fails saying why, and the
 * PTX it read is closed again. */
static void test_nvcc_ptx_without_the_kernel_is_refused_and_closed(void **state) {
  (void)state;
  char err[16384];
  snprintf(fake_cuda_home, sizeof fake_cuda_home, "%s/nvcc-no-kernel", testutil_cache_dir);
  write_fake_nvcc(fake_cuda_home, "while [ $# -gt 0 ]; do\n"
                                  "  if [ \"$1\" = -o ]; then shift; echo '// no kernel here' > \"$1\"; fi\n"
                                  "  shift\n"
                                  "done\n");
  char bin[4300];
  snprintf(bin, sizeof bin, "%s/bin", fake_cuda_home);
  assert_int_equal(run_with("PATH", bin, compile_by_nvcc_twice_counting_descriptors, err, sizeof err),
                   UOPC_E_COMPILE);
  assert_contains(err, "the PTX has no kernel 'k'");
  assert_contains(err, "\n0 more descriptors\n");
}

static char stats_dir[4200];

/* Builds a program in the cache stats_dir at UOPC_DEBUG=2; with remove set, removes that cache
 * before exit, where the statistics of the caches used are printed. */
static void build_in_stats_dir(int remove) {
  setenv("UOPC_CACHE_DIR", stats_dir, 1);
  uopc_program *p;
  uopc_error err = {0};
  int rc = uopc_program_new(&p, "void stats_probe(void) {}\n", "stats_probe", "", NULL, &err);
  if (rc != UOPC_OK) {
    fprintf(stderr, "uopc_program_new: %s\n", err.message);
    exit(rc);
  }
  uopc_program_free(p);
  if (remove) testutil_remove_tree(stats_dir);
}
static void build_and_keep_the_cache(void) { build_in_stats_dir(0); }
static void build_and_remove_the_cache(void) { build_in_stats_dir(1); }

/* At UOPC_DEBUG=2 a process prints, at exit, the statistics of each cache it used that is still
 * there: this build's miss is in them; a cache removed before the exit is not printed. */
static void test_debug_level_2_prints_the_statistics_of_a_cache_still_there_at_exit(void **state) {
  (void)state;
  char err[16384], want[8600];
  snprintf(stats_dir, sizeof stats_dir, "%s/stats-kept", testutil_cache_dir);
  assert_int_equal(run_with("UOPC_DEBUG", "2", build_and_keep_the_cache, err, sizeof err), 0);
  snprintf(want, sizeof want, "uopc: cache directory            %s\nuopc: entries                    1\n", stats_dir);
  assert_contains(err, want);
  assert_contains(err, "\nuopc: misses                     1\nuopc: evictions                  0\n");
  snprintf(stats_dir, sizeof stats_dir, "%s/stats-removed", testutil_cache_dir);
  assert_int_equal(run_with("UOPC_DEBUG", "2", build_and_remove_the_cache, err, sizeof err), 0);
  if (strstr(err, "cache directory")) fail_msg("the statistics of a removed cache were printed:\n%s", err);
  assert_contains(err, "uopc: compiling stats_probe with ");   /* level 2 was on */
}

/* Writes text into path; 0 when it could not. */
static int write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f) return 0;
  int ok = fputs(text, f) >= 0;
  return fclose(f) == 0 && ok;
}

/* Hides /usr/local/cuda (nvcc and libnvrtc) from this process behind an empty directory, in a
 * mount namespace of its own; exits 77 where there are none. No such directory: nothing to hide. */
static void hide_usr_local_cuda(void) {
  char map[64], empty[4300];
  uid_t uid = getuid();
  gid_t gid = getgid();
  snprintf(empty, sizeof empty, "%s/empty-cuda", testutil_cache_dir);
  if (mkdir(empty, 0755) != 0 && errno != EEXIST) exit(1);
  if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) exit(77);
  snprintf(map, sizeof map, "%d %d 1\n", (int)uid, (int)uid);
  if (!write_text("/proc/self/setgroups", "deny") || !write_text("/proc/self/uid_map", map)) exit(77);
  snprintf(map, sizeof map, "%d %d 1\n", (int)gid, (int)gid);
  if (!write_text("/proc/self/gid_map", map)) exit(77);
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) exit(77);
  if (mount(empty, "/usr/local/cuda", NULL, MS_BIND, NULL) != 0 && errno != ENOENT) exit(77);
}

/* With no CUDA compiler at all (NVRTC first asked here, in this new process); 78: one found. */
static void look_for_a_cuda_compiler(void) {
  hide_usr_local_cuda();
  unsetenv("CUDA_HOME");
  uopc_error err = {0};
  int rc = uopc_cuda_compiler_available(&err);
  fputs(err.message, stderr);
  exit(rc == UOPC_OK ? 78 : rc);
}

static void compile_by_nvcc_without_one(void) {
  hide_usr_local_cuda();
  unsetenv("CUDA_HOME");
  uopc_cuda_options opts = {.arch = "sm_80", .force_nvcc = 1};
  uopc_error err = {0};
  int rc = uopc_cuda_compile("extern \"C\" __global__ void k() {}\n", "k", &opts, NULL, 0, &err);
  fputs(err.message, stderr);
  exit(rc);
}

/* No NVRTC and no nvcc (PATH empty, no CUDA_HOME, /usr/local/cuda hidden): the error says why
 * for each, joined by ", and "; with force_nvcc, NVRTC is not asked and the message says so. */
static void test_no_cuda_compiler_anywhere_says_why_for_nvrtc_and_nvcc(void **state) {
  (void)state;
  char empty[4200], err[16384];
  snprintf(empty, sizeof empty, "%s/no-nvcc-anywhere", testutil_cache_dir);
  assert_int_equal(mkdir(empty, 0700), 0);
  int rc = run_with("PATH", empty, look_for_a_cuda_compiler, err, sizeof err);
  if (rc == 77) {
    print_message("  skipped: no user and mount namespaces here to hide /usr/local/cuda\n");
    skip();
  }
  if (rc == 78) {
    print_message("  skipped: a CUDA compiler outside /usr/local/cuda (the loader's path?)\n");
    skip();
  }
  assert_int_equal(rc, UOPC_E_NO_CUDA);
  assert_string_equal(err, "no CUDA compiler: libnvrtc not found (tried libnvrtc.so, .so.13 and .so.12 in "
                           "$CUDA_HOME/lib64, on the loader's path and in /usr/local/cuda/lib64), and "
                           "nvcc not found on PATH, in $CUDA_HOME/bin or in /usr/local/cuda/bin");
  assert_int_equal(run_with("PATH", empty, compile_by_nvcc_without_one, err, sizeof err), UOPC_E_NO_CUDA);
  assert_string_equal(err, "no CUDA compiler: force_nvcc is set and "
                           "nvcc not found on PATH, in $CUDA_HOME/bin or in /usr/local/cuda/bin");
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

static char empty_json_cwd[PATH_MAX + 16];   /* the cache directory and the name below */
static void count_one_in_an_empty_directory(void) {
  if (chdir(empty_json_cwd) != 0) _exit(99);
  count_one();
}

/* UOPC_COUNTERS_JSON set but empty is unset: no file written (not even a temporary one in the
 * working directory), nothing said. */
static void test_counters_json_empty_path_writes_nothing(void **state) {
  (void)state;
  char err[4096];
  snprintf(empty_json_cwd, sizeof empty_json_cwd, "%s/empty-json-cwd", testutil_cache_dir);
  assert_int_equal(mkdir(empty_json_cwd, 0700), 0);
  assert_int_equal(run_with("UOPC_COUNTERS_JSON", "", count_one_in_an_empty_directory, err, sizeof err), 0);
  assert_string_equal(err, "");
  DIR *d = opendir(empty_json_cwd);
  assert_non_null(d);
  int entries = 0;
  for (struct dirent *e; (e = readdir(d));) entries += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
  closedir(d);
  assert_int_equal(entries, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_debug_level_that_is_not_a_number_is_warned_about_once),
    cmocka_unit_test(test_debug_level_that_is_a_number_is_read_silently),
    cmocka_unit_test(test_counters_json_path_that_cannot_be_written_is_warned_about),
    cmocka_unit_test(test_counters_json_path_that_is_a_directory_leaves_no_file_behind),
    cmocka_unit_test(test_counters_json_path_that_can_be_written_gets_the_counters),
    cmocka_unit_test(test_debug_level_4_alone_prints_the_source_compiled),
    cmocka_unit_test(test_nvcc_on_path_runs_before_the_one_in_cuda_home),
    cmocka_unit_test(test_nvcc_in_cuda_home_runs_when_none_is_on_path),
    cmocka_unit_test(test_nvcc_ptx_without_the_kernel_is_refused_and_closed),
    cmocka_unit_test(test_debug_level_2_prints_the_statistics_of_a_cache_still_there_at_exit),
    cmocka_unit_test(test_no_cuda_compiler_anywhere_says_why_for_nvrtc_and_nvcc),
    cmocka_unit_test(test_debug_level_past_the_range_of_long_is_warned_about),
    cmocka_unit_test(test_counters_json_empty_path_writes_nothing),
  };
  return cmocka_run_group_tests(tests, testutil_fresh_cache, testutil_remove_cache);
}
