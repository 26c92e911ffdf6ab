/* test_program.c: the C program module and its disk cache (section 23.6). */
#include "uopc/uopc.h"
#define TESTUTIL_FAILING_MALLOC   /* NOMEM paths on demand: fail_next_calloc */
#include "testutil.h"
#include "../../uopc/src/internal.h"
#include <elf.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <malloc.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <dirent.h>
#include <time.h>
#include <math.h>
#include <errno.h>

static const char SQUARE[] =
    "void square(const float *x, float *out, const int *n) {\n"
    "  for (int i0 = 0; i0 < n[0]; i0++) out[i0] = x[i0] * x[i0];\n"
    "}\n";

/* Builds SQUARE (optionally with a unique comment so the key is new) and runs it on 5 floats. */
static int build_and_run(const char *tag, uopc_program **out, uopc_error *err) {
  char source[512];
  snprintf(source, sizeof source, "/* %s */\n%s", tag, SQUARE);
  int rc = uopc_program_new(out, source, "square", "ppp", NULL, err);
  if (rc) return rc;
  float x[5] = {1, -2, 3, 0.5f, 10}, y[5] = {0};
  int n = 5;
  void *xp = x, *yp = y, *np = &n;
  void *args[] = {&xp, &yp, &np};
  uopc_program_call(*out, args);
  for (int i = 0; i < 5; i++)
    if (y[i] != x[i] * x[i]) return -1;
  return 0;
}

static int64_t delta(const char *name, int64_t before) { return uopc_counter_get(name) - before; }


static void test_program_compiles_calls_and_counts(void **state) {
  (void)state;
  uopc_error err = {0};
  uopc_program *p;
  int64_t inv = uopc_counter_get(UOPC_C_COMPILER_INVOCATIONS), hits = uopc_counter_get(UOPC_C_DISK_CACHE_HITS);
  assert_uopc_ok(build_and_run("first", &p, &err), err);
  assert_int_equal(delta(UOPC_C_COMPILER_INVOCATIONS, inv), 1);
  assert_int_equal(delta(UOPC_C_DISK_CACHE_HITS, hits), 0);
  assert_int_equal(uopc_program_was_cached(p), 0);
  assert_int_equal(uopc_counter_get("calls square") >= 1, 1);
  uopc_program_free(p);
}

static void test_program_second_construction_is_a_disk_hit(void **state) {
  (void)state;
  uopc_error err = {0};
  uopc_program *a, *b;
  assert_uopc_ok(build_and_run("twice", &a, &err), err);
  int64_t inv = uopc_counter_get(UOPC_C_COMPILER_INVOCATIONS), hits = uopc_counter_get(UOPC_C_DISK_CACHE_HITS);
  assert_uopc_ok(build_and_run("twice", &b, &err), err);
  assert_int_equal(delta(UOPC_C_COMPILER_INVOCATIONS, inv), 0);
  assert_int_equal(delta(UOPC_C_DISK_CACHE_HITS, hits), 1);
  assert_string_equal(uopc_program_key(a), uopc_program_key(b));
  uopc_program_free(a);
  uopc_program_free(b);
}

/* A child process builds the entry; this process then finds it on disk. */
static void test_program_cache_hit_across_processes(void **state) {
  (void)state;
  pid_t pid = fork();
  if (pid == 0) {
    uopc_error err = {0};
    uopc_program *p;
    int64_t inv = uopc_counter_get(UOPC_C_COMPILER_INVOCATIONS);
    int ok = build_and_run("across", &p, &err) == 0 && delta(UOPC_C_COMPILER_INVOCATIONS, inv) == 1;
    _exit(ok ? 0 : 1);
  }
  int status;
  waitpid(pid, &status, 0);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  uopc_error err = {0};
  uopc_program *p;
  int64_t inv = uopc_counter_get(UOPC_C_COMPILER_INVOCATIONS), hits = uopc_counter_get(UOPC_C_DISK_CACHE_HITS);
  assert_uopc_ok(build_and_run("across", &p, &err), err);
  assert_int_equal(delta(UOPC_C_COMPILER_INVOCATIONS, inv), 0);
  assert_int_equal(delta(UOPC_C_DISK_CACHE_HITS, hits), 1);
  assert_int_equal(uopc_program_was_cached(p), 1);
  uopc_program_free(p);
}

static int count_entries(const char *dir, const char *prefix) {
  char cmd_dir[4200];
  snprintf(cmd_dir, sizeof cmd_dir, "%s", dir);
  int n = 0;
  DIR *d = opendir(cmd_dir);
  for (struct dirent *e; d && (e = readdir(d));)
    if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) n++;
  if (d) closedir(d);
  return n;
}

/* Four processes race to build one new key: all succeed, one entry remains, no staging is left. */
static void test_program_four_processes_compile_one_key(void **state) {
  (void)state;
  pid_t pids[4];
  for (int i = 0; i < 4; i++) {
    if ((pids[i] = fork()) == 0) {
      uopc_error err = {0};
      uopc_program *p;
      _exit(build_and_run("race", &p, &err) == 0 ? 0 : 1);
    }
  }
  for (int i = 0; i < 4; i++) {
    int status;
    waitpid(pids[i], &status, 0);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s/tmp", testutil_cache_dir);
  assert_int_equal(count_entries(tmp, "stage-"), 0);
  uopc_error err = {0};
  uopc_program *p;
  assert_uopc_ok(build_and_run("race", &p, &err), err);
  assert_int_equal(uopc_program_was_cached(p), 1);
  uopc_program_free(p);
}

static void test_program_truncated_entry_is_rebuilt(void **state) {
  (void)state;
  uopc_error err = {0};
  uopc_program *p;
  assert_uopc_ok(build_and_run("truncate", &p, &err), err);
  char so[4200];
  snprintf(so, sizeof so, "%s/kernel.so", uopc_program_dir(p));
  uopc_program_free(p);
  assert_int_equal(truncate(so, 100), 0);
  int64_t inv = uopc_counter_get(UOPC_C_COMPILER_INVOCATIONS), bad = uopc_counter_get(UOPC_C_CORRUPTED_REBUILT);
  assert_uopc_ok(build_and_run("truncate", &p, &err), err);
  assert_int_equal(delta(UOPC_C_CORRUPTED_REBUILT, bad), 1);
  assert_int_equal(delta(UOPC_C_COMPILER_INVOCATIONS, inv), 1);
  uopc_program_free(p);
}

/* A staging directory a day old was left by a dead build: the next build removes it. */
static void test_program_build_sweeps_stale_staging_dirs(void **state) {
  (void)state;
  char old[4200], fresh[4200];
  snprintf(old, sizeof old, "%s/tmp/stage-dead01", testutil_cache_dir);
  snprintf(fresh, sizeof fresh, "%s/tmp/stage-live01", testutil_cache_dir);
  assert_int_equal(mkdir(old, 0700), 0);
  assert_int_equal(mkdir(fresh, 0700), 0);
  struct timespec two_days_ago[2] = {{.tv_sec = time(NULL) - 2 * 86400}, {.tv_sec = time(NULL) - 2 * 86400}};
  assert_int_equal(utimensat(AT_FDCWD, old, two_days_ago, 0), 0);
  uopc_error err = {0};
  uopc_program *p;
  assert_uopc_ok(build_and_run("sweep", &p, &err), err);
  assert_int_equal(access(old, F_OK), -1);
  assert_int_equal(access(fresh, F_OK), 0);
  rmdir(fresh);
  uopc_program_free(p);
}

static void test_program_compile_error_returns_diagnostics(void **state) {
  (void)state;
  uopc_error err = {0};
  uopc_program *p;
  int rc = uopc_program_new(&p, "void broken(float *x) { x[0] = undeclared_name; }\n", "broken", "p", NULL, &err);
  assert_uopc_code(rc, UOPC_E_COMPILE, err);
  assert_null(p);
  assert_contains(err.message, "undeclared_name");
  assert_contains(err.message, "error:");
  assert_contains(err.message, "/failed/broken-");
  assert_contains(err.message, "kernel.c");
}

/* The smallest kernel: no argument and a body of 20 characters. The call adapter is written after
 * the source into room counted from their lengths; it must still close. */
static void test_program_tiny_kernel_without_arguments(void **state) {
  (void)state;
  static const char tiny[] = "void f(void) {    }\n";
  uopc_error err = {0};
  uopc_program *p = NULL;
  assert_int_equal(strlen(tiny), 20);
  assert_uopc_ok(uopc_program_new(&p, tiny, "f", "", NULL, &err), err);
  uopc_program_call(p, NULL);
  uopc_program_free(p);
}

static void test_program_unsafe_cache_dir_is_refused(void **state) {
  (void)state;
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/shared", testutil_cache_dir);
  assert_int_equal(mkdir(dir, 0700), 0);
  assert_int_equal(chmod(dir, 0777), 0);
  uopc_program_options opts = {.cache_dir = dir};
  uopc_error err = {0};
  uopc_program *p;
  assert_uopc_code(uopc_program_new(&p, SQUARE, "square", "ppp", &opts, &err), UOPC_E_UNSAFE_CACHE, err);
  assert_contains(err.message, dir);
  assert_contains(err.message, "mode 0777");
  assert_contains(err.message, "chmod 700");
}

/* A shared sticky directory (as /tmp) is not the user's to chmod: the fix
 * is a private directory inside it, whoever runs the test. */
static void test_program_shared_cache_dir_advises_a_private_subdirectory(void **state) {
  (void)state;
  char dir[4200], advice[4400];
  snprintf(dir, sizeof dir, "%s/sticky", testutil_cache_dir);
  assert_int_equal(mkdir(dir, 0700), 0);
  assert_int_equal(chmod(dir, 01777), 0);
  const char *const dirs[] = {dir, "/tmp"};
  for (int i = 0; i < 2; i++) {
    uopc_program_options opts = {.cache_dir = dirs[i]};
    uopc_error err = {0};
    uopc_program *p;
    assert_uopc_code(uopc_program_new(&p, SQUARE, "square", "ppp", &opts, &err), UOPC_E_UNSAFE_CACHE, err);
    snprintf(advice, sizeof advice, "mkdir -m 700 '%s/uopc-", dirs[i]);
    assert_contains(err.message, advice);
    assert_contains(err.message, "UOPC_CACHE_DIR=");
    if (strstr(err.message, "chmod")) fail_msg("'%s' is shared: the advice must not be chmod: %s", dirs[i], err.message);
  }
}

/* Paths are arguments, never shell text: nothing in them runs. */
static void test_program_cache_path_with_spaces_and_metacharacters(void **state) {
  (void)state;
  char dir[4200], marker[4200];
  snprintf(dir, sizeof dir, "%s/a b;touch pwned;$(touch pwned2)'\"&|", testutil_cache_dir);
  snprintf(marker, sizeof marker, "%s/pwned", testutil_cache_dir);
  uopc_program_options opts = {.cache_dir = dir};
  uopc_error err = {0};
  uopc_program *p;
  assert_uopc_ok(uopc_program_new(&p, SQUARE, "square", "ppp", &opts, &err), err);
  assert_contains(uopc_program_dir(p), "a b;touch");
  assert_int_equal(access("pwned", F_OK), -1);
  assert_int_equal(access("pwned2", F_OK), -1);
  assert_int_equal(access(marker, F_OK), -1);
  uopc_program_free(p);
}

static void test_program_rejects_bad_entry_and_signature(void **state) {
  (void)state;
  uopc_error err = {0};
  uopc_program *p;
  assert_uopc_code(uopc_program_new(&p, SQUARE, "sq uare", "ppp", NULL, &err), UOPC_E_INVALID, err);
  assert_contains(err.message, "not a C identifier");
  assert_uopc_code(uopc_program_new(&p, SQUARE, "square", "ppx", NULL, &err), UOPC_E_INVALID, err);
  assert_contains(err.message, "'ppx'");
  /* The call adapter names the entry, so a misspelt entry fails to compile. */
  assert_uopc_code(uopc_program_new(&p, SQUARE, "missing", "ppp", NULL, &err), UOPC_E_COMPILE, err);
  assert_contains(err.message, "implicit declaration of function 'missing'");
}

/* Flags that do not fit beside the fixed ones are refused, named, with the room they have: the
 * flags' size less 64 bytes. Nothing is built. */
static void test_program_flags_longer_than_fit_are_refused_by_name(void **state) {
  (void)state;
  char flags[600], want[1024];
  memset(flags, 'x', sizeof flags - 1);
  flags[0] = '-', flags[1] = 'D', flags[sizeof flags - 1] = '\0';
  uopc_program_options opts = {.opt_flags = flags};
  uopc_error err = {0};
  uopc_program *p = (uopc_program *)&p;
  assert_uopc_code(uopc_program_new(&p, SQUARE, "square", "ppp", &opts, &err), UOPC_E_INVALID, err);
  snprintf(want, sizeof want, "compiler flags '%s' are longer than %zu bytes", flags,
           sizeof ((uopc_build *)0)->flags - 64);
  assert_string_equal(err.message, want);
  assert_null(p);
}

/* Flags of more words than a compiler is given (32, the runtime's own included) are refused, not
 * cut: a dropped flag would build another program than its key names. 20 words fit, the last of
 * them reaching the compiler; 40 do not. */
static void test_program_flags_of_too_many_words_are_refused_not_cut(void **state) {
  (void)state;
  static const char source[] = "#ifndef W19\n#error W19 was dropped\n#endif\nvoid f(void) {}\n";
  char flags[600] = "";
  for (int k = 0; k < 20; k++) snprintf(flags + strlen(flags), sizeof flags - strlen(flags), " -DW%d", k);
  uopc_program_options opts = {.opt_flags = flags};
  uopc_error err = {0};
  uopc_program *p = NULL;
  assert_uopc_ok(uopc_program_new(&p, source, "f", "", &opts, &err), err);
  uopc_program_free(p);
  for (int k = 20; k < 40; k++) snprintf(flags + strlen(flags), sizeof flags - strlen(flags), " -DW%d", k);
  p = (uopc_program *)&p;
  assert_uopc_code(uopc_program_new(&p, source, "f", "", &opts, &err), UOPC_E_INVALID, err);
  assert_contains(err.message, "' have more than 32 words");
  assert_null(p);
}

/* No memory for the program or for its request (the first and the second calloc): out of memory,
 * naming the entry, and no program; whichever one was allocated is freed. */
static void test_program_without_memory_for_either_allocation_is_nomem(void **state) {
  (void)state;
#ifdef __SANITIZE_ADDRESS__
  testutil_skip_under_asan("glibc's calloc, made to fail");
#else
  testutil_skip_unless_allocation_fails();
  for (int k = 1; k <= 2; k++) {
    uopc_error err = {0};
    uopc_program *p = (uopc_program *)&p;
    fail_next_calloc = k;
    int rc = uopc_program_new(&p, SQUARE, "square", "ppp", NULL, &err);
    fail_next_calloc = 0;
    assert_uopc_code(rc, UOPC_E_NOMEM, err);
    assert_string_equal(err.message, "no memory for program 'square'");
    assert_null(p);
  }
#endif
}

/* The key holds the flags: -O1 and -O3 builds are different entries. */
static void test_program_flags_change_the_key(void **state) {
  (void)state;
  uopc_error err = {0};
  uopc_program *a, *b;
  uopc_program_options o1 = {.opt_flags = "-O1"};
  assert_uopc_ok(uopc_program_new(&a, SQUARE, "square", "ppp", &o1, &err), err);
  assert_uopc_ok(uopc_program_new(&b, SQUARE, "square", "ppp", NULL, &err), err);
  assert_string_not_equal(uopc_program_key(a), uopc_program_key(b));
  uopc_program_free(a);
  uopc_program_free(b);
}

static void test_program_scalar_arguments_reach_the_kernel(void **state) {
  (void)state;
  static const char AXPY[] =
      "void axpy(float *restrict y, const float *restrict x, float a, long long n, double unused, int k) {\n"
      "  (void)unused;\n"
      "  for (long long i0 = 0; i0 < n; i0++) y[i0] += a * x[i0] + (float)k;\n"
      "}\n";
  uopc_error err = {0};
  uopc_program *p;
  assert_uopc_ok(uopc_program_new(&p, AXPY, "axpy", "ppfldi", NULL, &err), err);
  float y[3] = {1, 1, 1}, x[3] = {1, 2, 3}, a = 2;
  long long n = 3;
  double u = 0;
  int k = 10;
  void *yp = y, *xp = x;
  void *args[] = {&yp, &xp, &a, &n, &u, &k};
  uopc_program_call(p, args);
  assert_true(y[0] == 13 && y[1] == 15 && y[2] == 17);
  uopc_program_free(p);
}

/* The whole of <dir>/<name> as a NUL-terminated string, or fails the test. */
static char *read_entry_file(const char *dir, const char *name) {
  char path[4200], *text = NULL;
  size_t cap = 0;
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "r");
  if (!f) fail_msg("cannot open '%s'", path);
  if (getdelim(&text, &cap, '\0', f) < 0) fail_msg("'%s' is empty", path);
  fclose(f);
  return text;
}

/* The manifest says how the object was made: the compiler as one stat saw it
 * (no process is spawned to ask), the version gcc wrote into kernel.so, and
 * every keyed setting. */
static void test_program_manifest_names_compiler_version_and_settings(void **state) {
  (void)state;
  uopc_error err = {0};
  uopc_program *p;
  assert_uopc_ok(build_and_run("manifest", &p, &err), err);
  char *text = read_entry_file(uopc_program_dir(p), "manifest");
  assert_contains(text, "\ncompiler=/");
  assert_contains(text, " bytes, mtime ");
  assert_contains(text, "\ncompiler_version=");
  assert_true(strstr(text, "\ncompiler_version=\n") == NULL);
  assert_contains(text, "\nflags=-std=c11 -ffp-contract=off");
  assert_contains(text, "\ntarget=");
  assert_contains(text, "\nsignature=ppp\n");
  assert_contains(text, uopc_program_key(p));
  free(text);
  uopc_program_free(p);
}

/* The value of "name=" on its own line of a manifest's text (a copy to free), or fails the test. */
static char *manifest_value(const char *text, const char *name) {
  char at[64];
  snprintf(at, sizeof at, "\n%s=", name);
  const char *p = strstr(text, at);
  if (!p) fail_msg("the manifest has no %s=", name);
  p += strlen(at);
  return strndup(p, strcspn(p, "\n"));
}

/* The key is the ABI version, then every keyed field in order, labelled: a build made by a runtime
 * of another ABI (generated code called another way) never shares an entry with this one. The
 * fields are recomputed from the entry's manifest and kernel.c; "abi" is UOPC_ABI_VERSION. */
static void test_program_key_is_the_abi_version_then_every_keyed_field(void **state) {
  (void)state;
  uopc_error err = {0};
  uopc_program *p;
  assert_uopc_ok(uopc_program_new(&p, SQUARE, "square", "ppp", NULL, &err), err);
  char *manifest = read_entry_file(uopc_program_dir(p), "manifest");
  char *source = read_entry_file(uopc_program_dir(p), "kernel.c");
  char *compiler = manifest_value(manifest, "compiler"), *flags = manifest_value(manifest, "flags");
  char *target = manifest_value(manifest, "target"), abi[16], hex[65];
  snprintf(abi, sizeof abi, "%d", UOPC_ABI_VERSION);
  uopc_hash *h;
  assert_uopc_ok(uopc_hash_new(&h, &err), err);
  uopc_hash_str(h, "abi", abi);
  uopc_hash_str(h, "kind", "c");
  uopc_hash_str(h, "compiler", compiler);
  uopc_hash_str(h, "mode", NULL);
  uopc_hash_str(h, "flags", flags);
  uopc_hash_str(h, "libs", "-lm");
  uopc_hash_str(h, "target", target);
  uopc_hash_str(h, "signature", "ppp");
  uopc_hash_str(h, "entry", "square");
  uopc_hash_str(h, "source", source);
  uopc_hash_finish(h, hex);
  assert_string_equal(uopc_program_key(p), hex);
  free(manifest);
  free(source);
  free(compiler);
  free(flags);
  free(target);
  uopc_program_free(p);
}

/* 1 when the shared object at path names lib among its DT_NEEDED libraries. */
static int elf_needs(const char *path, const char *lib) {
  FILE *f = fopen(path, "rb");
  if (!f) fail_msg("cannot open '%s'", path);
  Elf64_Ehdr eh;
  int found = 0;
  if (fread(&eh, sizeof eh, 1, f) == 1 && eh.e_shentsize == sizeof(Elf64_Shdr)) {
    Elf64_Shdr *sh = calloc(eh.e_shnum, sizeof *sh);
    assert_non_null(sh);
    assert_int_equal(fseek(f, (long)eh.e_shoff, SEEK_SET), 0);
    assert_int_equal(fread(sh, sizeof *sh, eh.e_shnum, f), eh.e_shnum);
    for (int i = 0; i < eh.e_shnum && !found; i++) {
      if (sh[i].sh_type != SHT_DYNAMIC) continue;
      const Elf64_Shdr *strtab = &sh[sh[i].sh_link];
      char *strs = malloc(strtab->sh_size + 1);
      Elf64_Dyn *dyn = malloc(sh[i].sh_size);
      assert_true(strs && dyn);
      assert_int_equal(fseek(f, (long)strtab->sh_offset, SEEK_SET), 0);
      assert_int_equal(fread(strs, 1, strtab->sh_size, f), strtab->sh_size);
      strs[strtab->sh_size] = '\0';
      assert_int_equal(fseek(f, (long)sh[i].sh_offset, SEEK_SET), 0);
      assert_int_equal(fread(dyn, 1, sh[i].sh_size, f), sh[i].sh_size);
      for (size_t k = 0; k < sh[i].sh_size / sizeof *dyn && dyn[k].d_tag != DT_NULL; k++)
        if (dyn[k].d_tag == DT_NEEDED && dyn[k].d_un.d_val < strtab->sh_size &&
            strcmp(strs + dyn[k].d_un.d_val, lib) == 0)
          found = 1;
      free(strs);
      free(dyn);
    }
    free(sh);
  }
  fclose(f);
  return found;
}

/* A kernel may call libm (lgammaf: no builtin gcc expands inline): the back end links -lm after
 * the source, so kernel.so needs libm.so.6 itself and loads in a process that lacks it (this
 * suite is not linked with -lm). */
static void test_program_kernel_calling_libm_links_it_and_runs(void **state) {
  (void)state;
  static const char LGAMMA[] =
      "#include <math.h>\n"
      "void lgam(const float *x, float *out) { out[0] = lgammaf(x[0]); }\n";
  uopc_error err = {0};
  uopc_program *p;
  assert_uopc_ok(uopc_program_new(&p, LGAMMA, "lgam", "pp", NULL, &err), err);
  float x = 5.0f, y = 0;
  void *xp = &x, *yp = &y;
  void *args[] = {&xp, &yp};
  uopc_program_call(p, args);
  assert_true(fabsf(y - 3.17805383f) < 1e-6f);   /* ln(4!) */
  char so[PATH_MAX + 16];
  snprintf(so, sizeof so, "%s/kernel.so", uopc_program_dir(p));
  assert_true(elf_needs(so, "libm.so.6"));
  uopc_program_free(p);
}

/* What the compiler said about a source it accepted stays with the entry. */
static void test_program_warnings_are_kept_in_compile_log(void **state) {
  (void)state;
  char source[512];
  snprintf(source, sizeof source, "#warning \"a kept warning\"\n%s", SQUARE);
  uopc_error err = {0};
  uopc_program *p;
  assert_uopc_ok(uopc_program_new(&p, source, "square", "ppp", NULL, &err), err);
  char *text = read_entry_file(uopc_program_dir(p), "compile.log");
  assert_contains(text, "a kept warning");
  free(text);
  uopc_program_free(p);
}

/* A log longer than a message is cut to fit, and the cut is marked: the
 * message's last line is "..." and the kept compile.log holds every error. */
static void test_program_long_compile_log_is_cut_with_a_mark(void **state) {
  (void)state;
  char source[4096] = "void broken(float *x) {\n";
  for (int i = 0; i < 60; i++)
    snprintf(source + strlen(source), sizeof source - strlen(source), "  x[%d] = undeclared_%d;\n", i, i);
  strcat(source, "}\n");
  uopc_error err = {0};
  uopc_program *p;
  assert_uopc_code(uopc_program_new(&p, source, "broken", "p", NULL, &err), UOPC_E_COMPILE, err);
  assert_int_equal(strlen(err.message), UOPC_ERROR_MESSAGE_MAX - 1);
  assert_string_equal(err.message + UOPC_ERROR_MESSAGE_MAX - 5, "\n...");
  assert_null(strstr(err.message, "undeclared_59"));
  const char *at = strstr(err.message, "full log in "), *end = at ? strstr(at, ":\n") : NULL;
  assert_non_null(end);
  char log_path[PATH_MAX];
  snprintf(log_path, sizeof log_path, "%.*s", (int)(end - at - 12), at + 12);
  char *dir = strrchr(log_path, '/');
  assert_non_null(dir);
  assert_string_equal(dir, "/compile.log");
  *dir = '\0';
  char *text = read_entry_file(log_path, "compile.log");
  assert_contains(text, "undeclared_59");
  free(text);
}

/* A settings line that does not fit a short buffer: a compiler at a long path
 * and long flags still give a manifest with every line whole. */
static void test_program_manifest_holds_long_settings_whole(void **state) {
  (void)state;
  char dir[PATH_MAX], cc[PATH_MAX + 8], flags[400] = "-O2";
  int n = snprintf(dir, sizeof dir, "%s/%0220d", testutil_cache_dir, 0);
  assert_int_equal(mkdir(dir, 0700), 0);
  snprintf(dir + n, sizeof dir - (size_t)n, "/%0220d", 1);
  assert_int_equal(mkdir(dir, 0700), 0);
  snprintf(cc, sizeof cc, "%s/gcc", dir);
  FILE *f = fopen(cc, "w");
  assert_non_null(f);
  fputs("#!/bin/sh\nexec gcc \"$@\"\n", f);
  assert_int_equal(fclose(f), 0);
  assert_int_equal(chmod(cc, 0700), 0);
  for (int i = 0; i < 18; i++) snprintf(flags + strlen(flags), sizeof flags - strlen(flags), " -DUOPC_FLAG_%02d", i);
  uopc_program_options opts = {.compiler = cc, .opt_flags = flags};
  uopc_error err = {0};
  uopc_program *p;
  assert_uopc_ok(uopc_program_new(&p, SQUARE, "square", "ppp", &opts, &err), err);
  char *text = read_entry_file(uopc_program_dir(p), "manifest");
  char want[PATH_MAX + 64];
  snprintf(want, sizeof want, "\ncompiler=%s (", cc);
  assert_contains(text, want);
  snprintf(want, sizeof want, " %s\nlibs=-lm\ntarget=", flags);
  assert_contains(text, want);
  assert_contains(text, "\nsignature=ppp\n");
  free(text);
  uopc_program_free(p);
}

/* -march=native keys the CPU by its model and feature lines of /proc/cpuinfo
 * (the first three of "model name", "flags", "Features", "CPU part"), hashed:
 * no other line, so that a clock speed or a processor number cannot split it. */
static void test_program_native_target_hashes_the_cpu_model_and_features(void **state) {
  (void)state;
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) {
    print_message("  skipped: no /proc/cpuinfo\n");
    skip();
  }
  uopc_hash *h;
  uopc_error err = {0};
  char line[8192], hex[65], want[256];
  assert_uopc_ok(uopc_hash_new(&h, &err), err);
  for (int seen = 0; seen < 3 && fgets(line, sizeof line, f);)
    if (!strncmp(line, "model name", 10) || !strncmp(line, "flags", 5) || !strncmp(line, "Features", 8) ||
        !strncmp(line, "CPU part", 8)) {
      uopc_hash_str(h, "cpuinfo", line);
      seen++;
    }
  fclose(f);
  uopc_hash_finish(h, hex);
  struct utsname u;
  assert_int_equal(uname(&u), 0);
  snprintf(want, sizeof want, "\ntarget=%s native cpu %.16s\n", u.machine, hex);
  uopc_program_options opts = {.march_native = 1};
  uopc_program *p;
  assert_uopc_ok(uopc_program_new(&p, SQUARE, "square", "ppp", &opts, &err), err);
  char *text = read_entry_file(uopc_program_dir(p), "manifest");
  assert_contains(text, want);
  free(text);
  uopc_program_free(p);
}

/* In a child that looks as valgrind's client does (a vgpreload library in LD_PRELOAD; here a
 * name only, which ld.so ignores in the compiler it spawns), a build asking for march_native is
 * built for plain x86-64 and its target names no CPU: valgrind decodes no AVX-512. */
static int native_build_under_valgrind(const char *want) {
  if (setenv("LD_PRELOAD", "/nonexistent/vgpreload_core-amd64-linux.so", 1) || !uopc_under_valgrind()) return 2;
  uopc_program_options opts = {.march_native = 1};
  uopc_program *p;
  uopc_error err = {0};
  if (uopc_program_new(&p, SQUARE, "square", "ppp", &opts, &err)) return 3;
  char *text = read_entry_file(uopc_program_dir(p), "manifest");
  int ok = text && strstr(text, want) && !strstr(text, "-march=native");
  free(text);
  uopc_program_free(p);
  return ok ? 0 : 4;
}

static void test_program_native_under_valgrind_builds_for_plain_x86_64(void **state) {
  (void)state;
  struct utsname u;
  char want[256];
  assert_int_equal(uname(&u), 0);
  snprintf(want, sizeof want, "\ntarget=%s\n", u.machine);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) _exit(native_build_under_valgrind(want));
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
}

/* Writes text into path; 0 when it could not. */
static int write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f) return 0;
  int ok = fputs(text, f) >= 0;
  return fclose(f) == 0 && ok;
}

/* The child's part of the test below; its exit status is 0, 77 (no namespaces here) or 1. */
static int native_key_under_a_fake_cpuinfo(const char *fake, const char *want) {
  char map[64];
  uid_t uid = getuid();
  gid_t gid = getgid();
  if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) return 77;
  snprintf(map, sizeof map, "%d %d 1\n", (int)uid, (int)uid);
  if (!write_text("/proc/self/setgroups", "deny") || !write_text("/proc/self/uid_map", map)) return 77;
  snprintf(map, sizeof map, "%d %d 1\n", (int)gid, (int)gid);
  if (!write_text("/proc/self/gid_map", map)) return 77;
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
      mount(fake, "/proc/cpuinfo", NULL, MS_BIND, NULL) != 0)
    return 77;
  uopc_program_options opts = {.march_native = 1};
  uopc_program *p;
  uopc_error err = {0};
  if (uopc_program_new(&p, SQUARE, "square", "ppp", &opts, &err) != UOPC_OK) {
    fprintf(stderr, "uopc_program_new: %s\n", err.message);
    return 1;
  }
  char *text = read_entry_file(uopc_program_dir(p), "manifest");
  int ok = text && strstr(text, want);
  if (!ok) fprintf(stderr, "expected \"%s\" in the manifest:\n%s\n", want, text ? text : "(none)");
  free(text);
  uopc_program_free(p);
  return ok ? 0 : 1;
}

/* Runs the child above, fake bound over /proc/cpuinfo; skips where there are no namespaces. */
static void run_native_key_under_a_fake_cpuinfo(const char *fake, const char *want) {
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) _exit(native_key_under_a_fake_cpuinfo(fake, want));
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77) {
    print_message("  skipped: no user and mount namespaces here to give the test its own /proc/cpuinfo\n");
    skip();
  }
  assert_int_equal(WEXITSTATUS(status), 0);
}

/* An Arm CPU, which has no "model name" or "flags": its "Features" and "CPU part" lines are the ones
 * hashed. The test's own /proc/cpuinfo (a bind mount in a user namespace) says so on any machine. */
static void test_program_native_target_hashes_arm_features_and_part(void **state) {
  (void)state;
  static const char cpuinfo[] =
      "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32\n"
      "CPU implementer\t: 0x41\nCPU architecture: 8\nCPU part\t: 0xd0c\nCPU revision\t: 1\n\n";
  char fake[4200], hex[65], want[256];
  snprintf(fake, sizeof fake, "%s/cpuinfo", testutil_cache_dir);
  assert_true(write_text(fake, cpuinfo));
  uopc_hash *h;
  uopc_error err = {0};
  assert_uopc_ok(uopc_hash_new(&h, &err), err);
  uopc_hash_str(h, "cpuinfo", "Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32\n");
  uopc_hash_str(h, "cpuinfo", "CPU part\t: 0xd0c\n");
  uopc_hash_finish(h, hex);
  struct utsname u;
  assert_int_equal(uname(&u), 0);
  snprintf(want, sizeof want, "\ntarget=%s native cpu %.16s\n", u.machine, hex);
  run_native_key_under_a_fake_cpuinfo(fake, want);
}

/* A /proc/cpuinfo that cannot be opened (here a socket, bound over it: open says ENXIO) leaves the
 * CPU unknown, and the target says so: it must differ from the target of a build without -march=native. */
static void test_program_native_target_without_cpuinfo_says_cpu_unknown(void **state) {
  (void)state;
  char fake[4200], want[256];
  snprintf(fake, sizeof fake, "%s/cpuinfo.sock", testutil_cache_dir);
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  assert_true(strlen(fake) < sizeof addr.sun_path);
  strcpy(addr.sun_path, fake);
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  assert_true(fd >= 0);
  assert_int_equal(bind(fd, (struct sockaddr *)&addr, sizeof addr), 0);
  close(fd);   /* the socket's file stays */
  struct utsname u;
  assert_int_equal(uname(&u), 0);
  snprintf(want, sizeof want, "\ntarget=%s native (CPU unknown)\n", u.machine);
  run_native_key_under_a_fake_cpuinfo(fake, want);
}

/* A shared object of the given class whose .comment, in the 64-bit layout,
 * says "GCC: real"; a second section named by an offset past the end of the
 * section-name table (20 bytes) holds "GCC: past the table". */
static void write_fake_elf(const char *path, unsigned char elf_class) {
  unsigned char elf[400] = {0};
  Elf64_Ehdr eh = {.e_type = ET_DYN, .e_machine = EM_X86_64, .e_version = EV_CURRENT, .e_shoff = 144,
                   .e_ehsize = sizeof eh, .e_shentsize = sizeof(Elf64_Shdr), .e_shnum = 4, .e_shstrndx = 1};
  memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = elf_class;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  memcpy(elf, &eh, sizeof eh);
  memcpy(elf + 64, "\0.shstrtab\0.comment\0\0\0\0\0.comment", 33);   /* the table's 20 bytes, then more */
  memcpy(elf + 112, "GCC: past the table", 20);
  memcpy(elf + 132, "GCC: real", 10);
  Elf64_Shdr sh[4] = {{0},
                      {.sh_name = 1, .sh_type = SHT_STRTAB, .sh_offset = 64, .sh_size = 20},
                      {.sh_name = 24, .sh_type = SHT_PROGBITS, .sh_offset = 112, .sh_size = 20},
                      {.sh_name = 11, .sh_type = SHT_PROGBITS, .sh_offset = 132, .sh_size = 10}};
  memcpy(elf + 144, sh, sizeof sh);
  uopc_error err = {0};
  assert_uopc_ok(uopc_write_file(path, elf, sizeof elf, &err), err);
}

/* An ELF's .comment is found by its name in the section-name table; a name
 * offset past that table's end names nothing, whatever bytes follow it. */
static void test_compiler_version_in_reads_names_inside_the_name_table_only(void **state) {
  (void)state;
  char path[PATH_MAX + 16], version[64] = "?";
  snprintf(path, sizeof path, "%s/fake.so", testutil_cache_dir);
  write_fake_elf(path, ELFCLASS64);
  uopc_compiler_version_in(path, version, sizeof version);
  assert_string_equal(version, "GCC: real");
}

/* A 32-bit ELF's headers have another layout: the same bytes marked 32-bit
 * are not read as 64-bit headers, and name no version. */
static void test_compiler_version_in_reads_no_32_bit_elf(void **state) {
  (void)state;
  char path[PATH_MAX + 16], version[64] = "?";
  snprintf(path, sizeof path, "%s/fake32.so", testutil_cache_dir);
  write_fake_elf(path, ELFCLASS32);
  uopc_compiler_version_in(path, version, sizeof version);
  assert_string_equal(version, "");
}

/* A 64-bit ELF of three sections (none, the name table, .comment) with its section headers at shoff;
 * the caller places the names, the comment and the headers' bytes. */
static void fake_elf_header(unsigned char *elf, Elf64_Off shoff) {
  Elf64_Ehdr eh = {.e_type = ET_DYN, .e_machine = EM_X86_64, .e_version = EV_CURRENT, .e_shoff = shoff,
                   .e_ehsize = sizeof eh, .e_shentsize = sizeof(Elf64_Shdr), .e_shnum = 3, .e_shstrndx = 1};
  memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  memcpy(elf, &eh, sizeof eh);
}

static void version_of(const char *name, const unsigned char *elf, size_t n, char *version, size_t size) {
  char path[PATH_MAX + 16];
  uopc_error err = {0};
  snprintf(path, sizeof path, "%s/%s", testutil_cache_dir, name);
  assert_uopc_ok(uopc_write_file(path, elf, n, &err), err);
  uopc_compiler_version_in(path, version, size);
}

/* An ELF of COMMENT_ELF_BYTES: header, 3 section headers at 64, names at 256, and a .comment of
 * 10 bytes (comment: 9 characters and its NUL) at 276, which ends the file. */
enum { COMMENT_ELF_BYTES = 286 };

static void comment_elf(unsigned char *elf, const char comment[10]) {
  memset(elf, 0, COMMENT_ELF_BYTES);
  fake_elf_header(elf, 64);
  Elf64_Shdr sh[3] = {{0},
                      {.sh_name = 1, .sh_type = SHT_STRTAB, .sh_offset = 256, .sh_size = 20},
                      {.sh_name = 11, .sh_type = SHT_PROGBITS, .sh_offset = 276, .sh_size = 10}};
  memcpy(elf + 64, sh, sizeof sh);
  memcpy(elf + 256, "\0.shstrtab\0.comment\0", 20);
  memcpy(elf + 276, comment, 10);
}

/* comment_elf with size bytes at offset at replaced by value, written as name: its version
 * reads as none (the field so set makes the .comment unreadable). */
static void assert_no_version_with(const char *name, size_t at, const void *value, size_t size) {
  unsigned char elf[COMMENT_ELF_BYTES];
  comment_elf(elf, "GCC: none");
  memcpy(elf + at, value, size);
  char version[64] = "?";
  version_of(name, elf, sizeof elf, version, sizeof version);
  assert_string_equal(version, "");
}

/* A .comment whose bytes end at the file's last byte lies wholly inside the file, and is read. */
static void test_compiler_version_in_reads_a_comment_that_ends_the_file(void **state) {
  (void)state;
  unsigned char elf[COMMENT_ELF_BYTES];
  comment_elf(elf, "GCC: last");
  char version[64] = "?";
  version_of("last.so", elf, sizeof elf, version, sizeof version);
  assert_string_equal(version, "GCC: last");
  /* one byte longer, the same .comment runs past the file: not read, though its string is inside */
  Elf64_Xword past = 11;
  size_t comment_size = 64 + 2 * sizeof(Elf64_Shdr) + offsetof(Elf64_Shdr, sh_size);   /* the third header's */
  assert_no_version_with("past.so", comment_size, &past, sizeof past);
}

/* A section header cut short by the end of the file is not read, even when the fields that place
 * its bytes (name, offset, size: its first 40 bytes) are inside the file. */
static void test_compiler_version_in_skips_a_section_header_cut_short(void **state) {
  (void)state;
  unsigned char elf[264] = {0};   /* names at 64, comment at 84, headers at 96: the third has 40 bytes */
  fake_elf_header(elf, 96);
  memcpy(elf + 64, "\0.shstrtab\0.comment\0", 20);
  memcpy(elf + 84, "GCC: cut", 9);
  Elf64_Shdr sh[3] = {{0},
                      {.sh_name = 1, .sh_type = SHT_STRTAB, .sh_offset = 64, .sh_size = 20},
                      {.sh_name = 11, .sh_type = SHT_PROGBITS, .sh_offset = 84, .sh_size = 9}};
  memcpy(elf + 96, sh, 2 * sizeof *sh + 40);
  char version[64] = "?";
  version_of("cut.so", elf, sizeof elf, version, sizeof version);
  assert_string_equal(version, "");
}

/* Section headers of another size than Elf64_Shdr's 64 bytes are not read as 64-bit ones: a
 * file whose header says 40 names no version, though 64-byte headers at e_shoff hold a .comment. */
static void test_compiler_version_in_reads_no_section_headers_of_another_size(void **state) {
  (void)state;
  Elf64_Half shentsize = 40;
  assert_no_version_with("shentsize.so", offsetof(Elf64_Ehdr, e_shentsize), &shentsize, sizeof shentsize);
}

/* Reading the version frees the artifact's bytes it read: after a first call has filled malloc's
 * caches, a second one leaves the heap's bytes in use exactly as they were. */
static void test_compiler_version_in_keeps_no_memory(void **state) {
  (void)state;
#ifdef __SANITIZE_ADDRESS__
  testutil_skip_under_asan("glibc's mallinfo2 totals");   /* its leak check at exit sees a leak instead */
#endif
  char path[PATH_MAX + 16], version[64];
  snprintf(path, sizeof path, "%s/fake.so", testutil_cache_dir);
  write_fake_elf(path, ELFCLASS64);
  uopc_compiler_version_in(path, version, sizeof version);
  size_t before = mallinfo2().uordblks;
  uopc_compiler_version_in(path, version, sizeof version);
  assert_int_equal(mallinfo2().uordblks, before);
  assert_string_equal(version, "GCC: real");
}

/* An ELF class past ELFCLASS64 (ELFCLASSNUM, 3) is no layout the reader knows: not read as 64-bit. */
static void test_compiler_version_in_reads_no_elf_of_an_unknown_class(void **state) {
  (void)state;
  unsigned char class = ELFCLASSNUM;
  assert_no_version_with("class3.so", EI_CLASS, &class, 1);
}

/* e_shnum counts the section headers: a .comment header just past the last one counted is not
 * read, though its bytes are in the file. */
static void test_compiler_version_in_reads_only_the_section_headers_counted(void **state) {
  (void)state;
  Elf64_Half shnum = 2;
  assert_no_version_with("shnum.so", offsetof(Elf64_Ehdr, e_shnum), &shnum, sizeof shnum);
}

/* PTX names its compiler in the header comment; the first "Cuda compilation tools" line is the one. */
static void test_compiler_version_in_reads_the_first_ptx_header_line(void **state) {
  (void)state;
  static const char ptx[] = "//\n// Generated by NVIDIA NVVM Compiler\n//\n"
                            "// Cuda compilation tools, release 13.0, V13.0.88\n"
                            "// Cuda compilation tools, release 12.4, V12.4.131\n//\n\n.version 9.0\n";
  char path[PATH_MAX + 16], version[64] = "?";
  snprintf(path, sizeof path, "%s/kernel.ptx", testutil_cache_dir);
  uopc_error err = {0};
  assert_uopc_ok(uopc_write_file(path, ptx, sizeof ptx - 1, &err), err);
  int fds = testutil_open_fds();
  uopc_compiler_version_in(path, version, sizeof version);
  assert_string_equal(version, "Cuda compilation tools, release 13.0, V13.0.88");
  assert_int_equal(testutil_open_fds(), fds);   /* the PTX file is closed again */
}

/* Files shorter than the ELF magic, even its first bytes, name no version: none is an ELF, and
 * none has a PTX header. */
static void test_compiler_version_in_reads_files_shorter_than_the_elf_magic(void **state) {
  (void)state;
  static const char *const names[] = {"empty.so", "one.so", "two.so", "three.so"};
  for (size_t n = 0; n < SELFMAG; n++) {
    char version[64] = "?";
    version_of(names[n], (const unsigned char *)ELFMAG, n, version, sizeof version);
    assert_string_equal(version, "");
  }
}

#ifndef __SANITIZE_ADDRESS__
/* The mallocs uopc_compiler_version_in makes for n bytes of elf, written as name. */
static int mallocs_for_version_of(const char *name, const unsigned char *elf, size_t n) {
  char path[PATH_MAX + 16], version[64] = "?";
  uopc_error err = {0};
  snprintf(path, sizeof path, "%s/%s", testutil_cache_dir, name);
  assert_uopc_ok(uopc_write_file(path, elf, n, &err), err);
  fail_next_malloc = 1 << 30;   /* counts down once a call: far from failing */
  uopc_compiler_version_in(path, version, sizeof version);
  int made = (1 << 30) - fail_next_malloc;
  fail_next_malloc = 0;
  assert_string_equal(version, "");
  return made;
}
#endif

/* A file of the 4 bytes of the ELF magic alone is read as an ELF (too short for its header: no
 * version), not opened again as PTX: it takes the mallocs of a 5-byte ELF, no more. */
static void test_compiler_version_in_reads_the_bare_elf_magic_as_an_elf(void **state) {
  (void)state;
#ifdef __SANITIZE_ADDRESS__
  testutil_skip_under_asan("glibc's malloc, counted");
#else
  testutil_skip_unless_allocation_fails();
  static const unsigned char elf[] = {ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64};
  int bare = mallocs_for_version_of("magic4.so", elf, SELFMAG);
  int longer = mallocs_for_version_of("magic5.so", elf, sizeof elf);
  assert_true(longer > 0);
  assert_int_equal(bare, longer);
#endif
}

/* A manifest that names another artifact than the back end's describes some other build: the
 * entry is corrupted, counted so, and built again. */
static void test_program_entry_whose_manifest_names_another_artifact_is_rebuilt(void **state) {
  (void)state;
  uopc_error err = {0};
  uopc_program *p;
  assert_uopc_ok(build_and_run("other artifact", &p, &err), err);
  char path[4200];
  snprintf(path, sizeof path, "%s/manifest", uopc_program_dir(p));
  char *text = read_entry_file(uopc_program_dir(p), "manifest");
  uopc_program_free(p);
  char *line = strstr(text, "\nartifact=kernel.so\n");
  assert_non_null(line);
  memcpy(line + 1, "artifact=kernel.sx", 18);   /* the same length: the size and hash lines still hold */
  assert_uopc_ok(uopc_write_file(path, text, strlen(text), &err), err);
  free(text);
  int64_t inv = uopc_counter_get(UOPC_C_COMPILER_INVOCATIONS), bad = uopc_counter_get(UOPC_C_CORRUPTED_REBUILT);
  assert_uopc_ok(build_and_run("other artifact", &p, &err), err);
  assert_int_equal(uopc_program_was_cached(p), 0);
  assert_int_equal(delta(UOPC_C_CORRUPTED_REBUILT, bad), 1);
  assert_int_equal(delta(UOPC_C_COMPILER_INVOCATIONS, inv), 1);
  uopc_program_free(p);
}

/* A manifest without one of the lines a lookup checks (key, artifact, its size, its hash: each
 * renamed in turn, so the rest stays whole) cannot vouch for the entry: corrupted, counted so,
 * and built again, once per field. */
static void test_program_entry_whose_manifest_lacks_a_checked_line_is_rebuilt(void **state) {
  (void)state;
  static const char *const fields[] = {"key=", "artifact=", "artifact_size=", "artifact_sha256="};
  for (size_t k = 0; k < sizeof fields / sizeof fields[0]; k++) {
    uopc_error err = {0};
    uopc_program *p;
    char tag[64], path[4200];
    snprintf(tag, sizeof tag, "lacks %s", fields[k]);
    assert_uopc_ok(build_and_run(tag, &p, &err), err);
    snprintf(path, sizeof path, "%s/manifest", uopc_program_dir(p));
    char *text = read_entry_file(uopc_program_dir(p), "manifest");
    uopc_program_free(p);
    char *line = text;   /* the field's line: the first, or one after a newline */
    while (line && strncmp(line, fields[k], strlen(fields[k])) != 0)
      if ((line = strchr(line, '\n'))) line++;
    assert_non_null(line);
    line[0] = 'X';   /* "Xey=", "Xrtifact=", ...: no longer the field asked for */
    assert_uopc_ok(uopc_write_file(path, text, strlen(text), &err), err);
    free(text);
    int64_t inv = uopc_counter_get(UOPC_C_COMPILER_INVOCATIONS), bad = uopc_counter_get(UOPC_C_CORRUPTED_REBUILT);
    assert_uopc_ok(build_and_run(tag, &p, &err), err);
    assert_int_equal(uopc_program_was_cached(p), 0);
    assert_int_equal(delta(UOPC_C_CORRUPTED_REBUILT, bad), 1);
    assert_int_equal(delta(UOPC_C_COMPILER_INVOCATIONS, inv), 1);
    uopc_program_free(p);
  }
}

/* Freeing no program does nothing, as free(NULL) does: error paths free what they may not have. */
static void test_program_free_of_null_does_nothing(void **state) {
  (void)state;
  uopc_program_free(NULL);
}

/* Entry names are C identifiers: digits after the first character, any of 0-9. */
static void test_build_check_names_takes_every_digit_after_the_first_character(void **state) {
  (void)state;
  uopc_error err = {0};
  assert_uopc_ok(uopc_build_check_names(SQUARE, "k0123456789", &err), err);
  assert_uopc_code(uopc_build_check_names(SQUARE, "0k", &err), UOPC_E_INVALID, err);
  char want[128];
  snprintf(want, sizeof want, "entry '0k' is not a C identifier of at most %d characters", UOPC_ENTRY_MAX);
  assert_string_equal(err.message, want);
}

/* Letters are a-z, A-Z and _, the ends of each range included: "A", "Z", "a" and "z" are names,
 * first or later; the characters just outside the ranges ('@', '[', '`', '{') are refused. */
static void test_build_check_names_takes_letters_up_to_both_ends_of_each_range(void **state) {
  (void)state;
  uopc_error err = {0};
  static const char *const names[] = {"A", "Z", "a", "z", "_", "Axpy", "Zeta", "kAZaz_"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    if (uopc_build_check_names(SQUARE, names[i], &err) != UOPC_OK)
      fail_msg("entry '%s' refused: %s", names[i], err.message);
  }
  static const char *const refused[] = {"@", "[", "`", "{", "k@", "k[", "k`", "k{"};
  char want[128];
  for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
    assert_uopc_code(uopc_build_check_names(SQUARE, refused[i], &err), UOPC_E_INVALID, err);
    snprintf(want, sizeof want, "entry '%s' is not a C identifier of at most %d characters", refused[i],
             UOPC_ENTRY_MAX);
    assert_string_equal(err.message, want);
  }
}

/* A description that does not fit says how long a path fits: the size less
 * 64 bytes, room enough for " (<size> bytes, mtime <s>.<ns>)". */
static void test_compiler_describe_file_refuses_a_path_longer_than_fits(void **state) {
  (void)state;
  char path[PATH_MAX + 32], out[PATH_MAX + 128], want[2 * PATH_MAX];
  snprintf(path, sizeof path, "%s/a-compiler-with-a-long-name", testutil_cache_dir);
  uopc_error err = {0};
  assert_uopc_ok(uopc_write_file(path, "", 0, &err), err);
  size_t fits = strlen(path) + 64;
  assert_uopc_ok(uopc_compiler_describe_file(path, out, fits, &err), err);
  if (strncmp(out + strlen(path), " (0 bytes, mtime ", 17) != 0) fail_msg("unexpected description '%s'", out);
  size_t short_size = strlen(path) + 20;
  assert_uopc_code(uopc_compiler_describe_file(path, out, short_size, &err), UOPC_E_INVALID, err);
  snprintf(want, sizeof want, "compiler path '%s' is longer than %zu bytes", path, short_size - 64);
  assert_string_equal(err.message, want);
}

/* A compiler path that does not exist: the error names it and says why. */
static void test_compiler_describe_file_names_a_missing_compiler(void **state) {
  (void)state;
  char out[256] = "unchanged";
  uopc_error err = {0};
  assert_uopc_code(uopc_compiler_describe_file("/nonexistent/uopc-cc", out, sizeof out, &err), UOPC_E_IO, err);
  assert_string_equal(err.message, "cannot stat compiler '/nonexistent/uopc-cc': No such file or directory");
  assert_string_equal(out, "unchanged");
}

static void test_counters_json_is_written_at_exit(void **state) {
  (void)state;
  char path[4200];
  snprintf(path, sizeof path, "%s/counters.json", testutil_cache_dir);
  pid_t pid = fork();
  if (pid == 0) {
    setenv("UOPC_COUNTERS_JSON", path, 1);
    uopc_counters_reset();
    uopc_counter_add("variants built", 2);
    exit(0);   /* exit, not _exit: the runtime writes the file from atexit */
  }
  int status;
  waitpid(pid, &status, 0);
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  char text[8192] = {0};
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  assert_true(n > 0);
  assert_contains(text, "\"variants built\": 2");
  assert_contains(text, "\"compiler invocations\": 0");
}

/* No memory for hashing /proc/cpuinfo (the third calloc: after the program and its request): a
 * -march=native build still works, its target says the CPU is unknown, and the key holds that. */
static void test_program_native_without_memory_for_the_cpu_hash_says_cpu_unknown(void **state) {
  (void)state;
#ifdef __SANITIZE_ADDRESS__
  testutil_skip_under_asan("glibc's calloc, made to fail");
#else
  testutil_skip_unless_allocation_fails();
  struct utsname u;
  assert_int_equal(uname(&u), 0);
  char want[128];
  snprintf(want, sizeof want, "\ntarget=%s native (CPU unknown)\n", u.machine);
  uopc_program_options opts = {.march_native = 1};
  uopc_program *p;
  uopc_error err = {0};
  fail_next_calloc = 3;
  int rc = uopc_program_new(&p, SQUARE, "square", "ppp", &opts, &err);
  fail_next_calloc = 0;
  assert_uopc_ok(rc, err);
  char *text = read_entry_file(uopc_program_dir(p), "manifest");
  assert_contains(text, want);
  free(text);
  uopc_program_free(p);
#endif
}

/* A static entry compiles (the adapter in the same file calls it) but has no symbol to load: a
 * load error naming the library and the function, and no program. */
static void test_program_static_entry_is_a_load_error_naming_it(void **state) {
  (void)state;
  static const char source[] =
      "static void hidden(const float *x, float *out, const int *n) {\n"
      "  for (int i0 = 0; i0 < n[0]; i0++) out[i0] = x[i0];\n"
      "}\n";
  uopc_program *p = (uopc_program *)&p;
  uopc_error err = {0};
  assert_uopc_code(uopc_program_new(&p, source, "hidden", "ppp", NULL, &err), UOPC_E_LOAD, err);
  assert_null(p);
  const char *tail = "/kernel.so' has no function 'hidden' (is it static, or misspelt?)";
  size_t n = strlen(err.message), len = strlen(tail);
  assert_true(err.message[0] == '\'' && n > len);
  assert_string_equal(err.message + n - len, tail);
}

/* The entry itself, called with its own arguments, computes what the adapter does. */
static void test_program_entry_is_the_compiled_function(void **state) {
  (void)state;
  uopc_program *p;
  uopc_error err = {0};
  assert_uopc_ok(uopc_program_new(&p, SQUARE, "square", "ppp", NULL, &err), err);
  void (*square)(const float *, float *, const int *) =
      (void (*)(const float *, float *, const int *))uopc_program_entry(p);
  assert_non_null(square);
  float x[3] = {1.5f, -2, 4}, y[3] = {0};
  int n = 3;
  square(x, y, &n);
  assert_true(y[0] == 2.25f && y[1] == 4 && y[2] == 16);
  uopc_program_free(p);
}

/* A build holds UOPC_BUILD_FIELDS keyed fields: one more is refused, naming the build and the
 * field, and the fields it holds stay as they were (a dropped one would let two artifacts share
 * a key). */
static void test_build_field_past_the_limit_is_refused_and_named(void **state) {
  (void)state;
  static uopc_build b;
  b.entry = "square";
  uopc_error err = {0};
  for (int i = 0; i < UOPC_BUILD_FIELDS; i++) assert_uopc_ok(uopc_build_field(&b, "label", "value", &err), err);
  assert_uopc_code(uopc_build_field(&b, "extra", "x", &err), UOPC_E_LIMIT, err);
  char want[128];
  snprintf(want, sizeof want, "build of 'square': field 'extra' is past the %d keyed fields a build holds",
           UOPC_BUILD_FIELDS);
  assert_string_equal(err.message, want);
  assert_int_equal(b.n_fields, UOPC_BUILD_FIELDS);
  assert_string_equal(b.fields[UOPC_BUILD_FIELDS - 1].label, "label");
}

/* What a build says when its entry was evicted before every load it tried: the artifact, the
 * tries and the limit. (Losing it three times in a row takes another process's evictions; the
 * fault site loses it once, which the rebuild then survives: tests/faults.) */
static void test_build_fail_lost_names_the_artifact_the_tries_and_the_limit(void **state) {
  (void)state;
  static uopc_build b;
  snprintf(b.artifact_path, sizeof b.artifact_path, "/cache/square-00ff/kernel.so");
  b.cache.max_size = 4096;
  uopc_error err = {0};
  assert_uopc_code(uopc_build_fail_lost(&b, &err), UOPC_E_LOAD, err);
  assert_string_equal(err.message, "'/cache/square-00ff/kernel.so' was evicted before it could be loaded, 3 times in "
                                   "a row: the cache's limit (UOPC_CACHE_MAX_SIZE, 4096 bytes) is too small for the "
                                   "processes sharing it");
}

/* No memory for the manifest's description, after the compile: out of memory, naming the entry,
 * and the staging directory is removed, not left in tmp/. The malloc that fails is found by
 * failing the 1st, 2nd, ... from the call on, each on a source of its own (a miss each time). */
static void test_program_without_memory_for_the_manifest_removes_the_staging(void **state) {
  (void)state;
#ifdef __SANITIZE_ADDRESS__
  testutil_skip_under_asan("glibc's malloc, made to fail");
#else
  testutil_skip_unless_allocation_fails();
  char source[512], tmp[PATH_MAX + 8];
  int found = 0;
  for (int k = 1; k <= 1000 && !found; k++) {
    snprintf(source, sizeof source, "/* manifest %d */\n%s", k, SQUARE);
    uopc_program *p = NULL;
    uopc_error err = {0};
    fail_next_malloc = k;
    int rc = uopc_program_new(&p, source, "square", "ppp", NULL, &err);
    int unused = fail_next_malloc != 0;   /* the call made fewer than k mallocs */
    fail_next_malloc = 0;
    uopc_program_free(p);
    if (unused) fail_msg("no malloc of the %d the call made failed the manifest", k - 1);
    found = rc == UOPC_E_NOMEM && strcmp(err.message, "no memory for the manifest of 'square'") == 0;
  }
  assert_true(found);
  snprintf(tmp, sizeof tmp, "%s/tmp", testutil_cache_dir);
  DIR *d = opendir(tmp);
  assert_non_null(d);
  for (struct dirent *e; (e = readdir(d));)
    if (strncmp(e->d_name, "stage-", 6) == 0) fail_msg("staging directory '%s' is left in tmp/", e->d_name);
  closedir(d);
#endif
}

/* A header whose e_shoff lies past the file's end places no section header in it: no version, and
 * nothing read past the end. */
static void test_compiler_version_in_reads_no_section_headers_past_the_end(void **state) {
  (void)state;
  Elf64_Off shoff = COMMENT_ELF_BYTES + 1;
  assert_no_version_with("shoff.so", offsetof(Elf64_Ehdr, e_shoff), &shoff, sizeof shoff);
}

/* A .comment whose offset lies past the file's end is not read, whatever its size (1 here: the
 * size alone, past-the-end offset unchecked, would wrap to fit). */
static void test_compiler_version_in_skips_a_section_past_the_end(void **state) {
  (void)state;
  unsigned char elf[COMMENT_ELF_BYTES];
  comment_elf(elf, "GCC: none");
  Elf64_Shdr *comment = (Elf64_Shdr *)(elf + 64) + 2;
  Elf64_Off offset = COMMENT_ELF_BYTES + 1;
  Elf64_Xword size = 1;
  memcpy((unsigned char *)comment + offsetof(Elf64_Shdr, sh_offset), &offset, sizeof offset);
  memcpy((unsigned char *)comment + offsetof(Elf64_Shdr, sh_size), &size, sizeof size);
  char version[64] = "?";
  version_of("offset.so", elf, sizeof elf, version, sizeof version);
  assert_string_equal(version, "");
}

/* An ELF cut inside its 64-byte file header (63 bytes: magic, class 64 and all) names no version. */
static void test_compiler_version_in_reads_no_elf_header_cut_short(void **state) {
  (void)state;
  unsigned char elf[COMMENT_ELF_BYTES];
  comment_elf(elf, "GCC: none");
  char version[64] = "?";
  version_of("header.so", elf, sizeof(Elf64_Ehdr) - 1, version, sizeof version);
  assert_string_equal(version, "");
}

/* An artifact that cannot be read (here: none at the path) names no version. */
static void test_compiler_version_in_of_a_missing_file_is_empty(void **state) {
  (void)state;
  char path[PATH_MAX + 16], version[64] = "?";
  snprintf(path, sizeof path, "%s/missing.so", testutil_cache_dir);
  uopc_compiler_version_in(path, version, sizeof version);
  assert_string_equal(version, "");
}

/* A NULL signature, or one letter past UOPC_SIGNATURE_MAX, is refused by name before any build. */
static void test_program_rejects_a_null_or_too_long_signature(void **state) {
  (void)state;
  uopc_error err = {0};
  uopc_program *p = (uopc_program *)&p;
  char sig[UOPC_SIGNATURE_MAX + 2], want[256];
  assert_uopc_code(uopc_program_new(&p, SQUARE, "square", NULL, NULL, &err), UOPC_E_INVALID, err);
  snprintf(want, sizeof want, "signature '(null)' for 'square' must be at most %d letters from 'pilfd'",
           UOPC_SIGNATURE_MAX);
  assert_string_equal(err.message, want);
  assert_null(p);
  memset(sig, 'p', sizeof sig - 1);
  sig[sizeof sig - 1] = '\0';
  p = (uopc_program *)&p;
  assert_uopc_code(uopc_program_new(&p, SQUARE, "square", sig, NULL, &err), UOPC_E_INVALID, err);
  snprintf(want, sizeof want, "signature '%s' for 'square' must be at most %d letters from 'pilfd'", sig,
           UOPC_SIGNATURE_MAX);
  assert_string_equal(err.message, want);
  assert_null(p);
  sig[UOPC_SIGNATURE_MAX] = '\0';   /* exactly the most: the check passes (the compile then fails) */
  assert_uopc_code(uopc_program_new(&p, SQUARE, "square", sig, NULL, &err), UOPC_E_COMPILE, err);
}

/* $UOPC_CC naming no program fails the build with the finder's message; an empty $UOPC_CC is
 * unset, and gcc builds. The variable is restored afterwards. */
/* uopc_program_check: what a build would refuse, found without building (no compiler spawned). */
static void test_program_check_names_a_missing_compiler_and_an_unsafe_cache(void **state) {
  (void)state;
  char open_dir[PATH_MAX + 8], want[2 * PATH_MAX];
  uopc_error err = {0};
  int64_t before = uopc_counter_get(UOPC_C_COMPILER_INVOCATIONS);
  assert_uopc_ok(uopc_program_check(NULL, &err), err);
  uopc_program_options o = {.compiler = "/nonexistent/uopc-cc"};
  assert_uopc_code(uopc_program_check(&o, &err), UOPC_E_INVALID, err);
  assert_string_equal(err.message, "no C compiler: program '/nonexistent/uopc-cc' is not an executable file; install"
                                   " gcc, or name one in UOPC_CC");
  snprintf(open_dir, sizeof open_dir, "%s/open", testutil_cache_dir);
  assert_int_equal(mkdir(open_dir, 0700), 0);
  assert_int_equal(chmod(open_dir, 0777), 0);
  o = (uopc_program_options){.cache_dir = open_dir};
  assert_uopc_code(uopc_program_check(&o, &err), UOPC_E_UNSAFE_CACHE, err);
  snprintf(want, sizeof want, "cache directory '%s' is writable by group or others (mode 0777", open_dir);
  assert_contains(err.message, want);
  expect_int(uopc_counter_get(UOPC_C_COMPILER_INVOCATIONS), before, "compiler invocations by three checks");
}

static void test_program_uopc_cc_missing_fails_and_empty_means_gcc(void **state) {
  (void)state;
  const char *old = getenv("UOPC_CC");
  char *saved = old ? strdup(old) : NULL;
  uopc_error err = {0};
  uopc_program *p = (uopc_program *)&p;
  assert_int_equal(setenv("UOPC_CC", "/nonexistent/uopc-cc", 1), 0);
  int rc = uopc_program_new(&p, SQUARE, "square", "ppp", NULL, &err);
  assert_int_equal(setenv("UOPC_CC", "", 1), 0);
  uopc_program *q = NULL;
  uopc_error err2 = {0};
  int rc2 = uopc_program_new(&q, SQUARE, "square", "ppp", NULL, &err2);
  if (saved) setenv("UOPC_CC", saved, 1);
  else unsetenv("UOPC_CC");
  free(saved);
  assert_uopc_code(rc, UOPC_E_INVALID, err);
  assert_string_equal(err.message, "program '/nonexistent/uopc-cc' is not an executable file");
  assert_null(p);
  assert_uopc_ok(rc2, err2);
  char *text = read_entry_file(uopc_program_dir(q), "manifest");
  char gcc[PATH_MAX], want[PATH_MAX + 32];
  assert_uopc_ok(uopc_find_program("gcc", gcc, &err), err);
  snprintf(want, sizeof want, "compiler=%s (", gcc);
  assert_contains(text, want);
  free(text);
  uopc_program_free(q);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_program_compiles_calls_and_counts),
    cmocka_unit_test(test_program_second_construction_is_a_disk_hit),
    cmocka_unit_test(test_program_cache_hit_across_processes),
    cmocka_unit_test(test_program_four_processes_compile_one_key),
    cmocka_unit_test(test_program_truncated_entry_is_rebuilt),
    cmocka_unit_test(test_program_build_sweeps_stale_staging_dirs),
    cmocka_unit_test(test_program_compile_error_returns_diagnostics),
    cmocka_unit_test(test_program_tiny_kernel_without_arguments),
    cmocka_unit_test(test_program_unsafe_cache_dir_is_refused),
    cmocka_unit_test(test_program_shared_cache_dir_advises_a_private_subdirectory),
    cmocka_unit_test(test_program_cache_path_with_spaces_and_metacharacters),
    cmocka_unit_test(test_program_rejects_bad_entry_and_signature),
    cmocka_unit_test(test_program_flags_change_the_key),
    cmocka_unit_test(test_program_key_is_the_abi_version_then_every_keyed_field),
    cmocka_unit_test(test_program_kernel_calling_libm_links_it_and_runs),
    cmocka_unit_test(test_program_flags_longer_than_fit_are_refused_by_name),
    cmocka_unit_test(test_program_flags_of_too_many_words_are_refused_not_cut),
    cmocka_unit_test(test_program_without_memory_for_either_allocation_is_nomem),
    cmocka_unit_test(test_program_scalar_arguments_reach_the_kernel),
    cmocka_unit_test(test_program_manifest_names_compiler_version_and_settings),
    cmocka_unit_test(test_program_warnings_are_kept_in_compile_log),
    cmocka_unit_test(test_program_long_compile_log_is_cut_with_a_mark),
    cmocka_unit_test(test_program_manifest_holds_long_settings_whole),
    cmocka_unit_test(test_program_entry_whose_manifest_names_another_artifact_is_rebuilt),
    cmocka_unit_test(test_program_entry_whose_manifest_lacks_a_checked_line_is_rebuilt),
    cmocka_unit_test(test_compiler_version_in_reads_the_first_ptx_header_line),
    cmocka_unit_test(test_compiler_version_in_reads_files_shorter_than_the_elf_magic),
    cmocka_unit_test(test_compiler_version_in_reads_the_bare_elf_magic_as_an_elf),
    cmocka_unit_test(test_program_native_target_hashes_the_cpu_model_and_features),
    cmocka_unit_test(test_program_native_under_valgrind_builds_for_plain_x86_64),
    cmocka_unit_test(test_program_native_target_hashes_arm_features_and_part),
    cmocka_unit_test(test_program_native_target_without_cpuinfo_says_cpu_unknown),
    cmocka_unit_test(test_compiler_version_in_reads_names_inside_the_name_table_only),
    cmocka_unit_test(test_compiler_version_in_reads_no_32_bit_elf),
    cmocka_unit_test(test_compiler_version_in_reads_no_elf_of_an_unknown_class),
    cmocka_unit_test(test_compiler_version_in_reads_only_the_section_headers_counted),
    cmocka_unit_test(test_compiler_describe_file_refuses_a_path_longer_than_fits),
    cmocka_unit_test(test_compiler_describe_file_names_a_missing_compiler),
    cmocka_unit_test(test_compiler_version_in_reads_a_comment_that_ends_the_file),
    cmocka_unit_test(test_compiler_version_in_skips_a_section_header_cut_short),
    cmocka_unit_test(test_compiler_version_in_keeps_no_memory),
    cmocka_unit_test(test_compiler_version_in_reads_no_section_headers_of_another_size),
    cmocka_unit_test(test_program_free_of_null_does_nothing),
    cmocka_unit_test(test_build_check_names_takes_every_digit_after_the_first_character),
    cmocka_unit_test(test_build_check_names_takes_letters_up_to_both_ends_of_each_range),
    cmocka_unit_test(test_counters_json_is_written_at_exit),
    cmocka_unit_test(test_program_native_without_memory_for_the_cpu_hash_says_cpu_unknown),
    cmocka_unit_test(test_program_static_entry_is_a_load_error_naming_it),
    cmocka_unit_test(test_program_entry_is_the_compiled_function),
    cmocka_unit_test(test_build_field_past_the_limit_is_refused_and_named),
    cmocka_unit_test(test_build_fail_lost_names_the_artifact_the_tries_and_the_limit),
    cmocka_unit_test(test_program_without_memory_for_the_manifest_removes_the_staging),
    cmocka_unit_test(test_compiler_version_in_reads_no_section_headers_past_the_end),
    cmocka_unit_test(test_compiler_version_in_skips_a_section_past_the_end),
    cmocka_unit_test(test_compiler_version_in_reads_no_elf_header_cut_short),
    cmocka_unit_test(test_compiler_version_in_of_a_missing_file_is_empty),
    cmocka_unit_test(test_program_rejects_a_null_or_too_long_signature),
    cmocka_unit_test(test_program_uopc_cc_missing_fails_and_empty_means_gcc),
    cmocka_unit_test(test_program_check_names_a_missing_compiler_and_an_unsafe_cache),
  };
  return cmocka_run_group_tests(tests, testutil_fresh_cache, testutil_remove_cache);
}
