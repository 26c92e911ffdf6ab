/* test_available.c: tj_is_available (section 23.7, "Checking
 * availability"). Its answer is asked once per process, so each case asks in
 * a child of this process (fork) that set the environment first: PATH with
 * no compiler, UOPC_CC naming none, a cache directory others can write, CUDA
 * on this machine. The child sends back what it was told, through a pipe,
 * and the parent checks the text against what the header states. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include "tensorjit.h"
#include "uopc/cuda.h"
#include "testutil.h"

static int setup(void **state) { return testutil_fresh_cache(state); }
static int teardown(void **state) { return testutil_remove_cache(state); }

typedef void (*child_body)(FILE *out, const void *arg);

/* body(out, arg) in a child process; *text what it wrote (NUL-terminated). */
static void in_child(child_body body, const void *arg, char *text, size_t size) {
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {   /* the child: no cmocka from here on, only the pipe */
    close(fds[0]);
    FILE *out = fdopen(fds[1], "w");
    body(out, arg);
    fclose(out);
    _exit(0);
  }
  close(fds[1]);
  size_t used = 0;
  for (ssize_t n; used + 1 < size && (n = read(fds[0], text + used, size - 1 - used)) != 0;)
    if (n > 0) used += (size_t)n;
    else if (errno != EINTR) break;
  text[used] = '\0';
  close(fds[0]);
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  if (!WIFEXITED(status) || WEXITSTATUS(status)) fail_msg("the child died (status %d); it wrote:\n%s", status, text);
}

static void ask(FILE *out, tj_backend b) {
  char reason[4096];
  int ok = tj_is_available(b, reason, sizeof reason);
  fprintf(out, "%d %s\n", ok, reason);
}

/* ---- Children. */

typedef struct env { const char *path, *cc, *cache; } env;

static void set_env(const env *e) {
  if (e->path) setenv("PATH", e->path, 1);
  if (e->cc) setenv("UOPC_CC", e->cc, 1);
  else unsetenv("UOPC_CC");
  if (e->cache) setenv("UOPC_CACHE_DIR", e->cache, 1);
}

static int affine(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* 2x + 1 */
  (void)user;
  out[0] = tp_add(c, tp_mul(c, tp_scalar(c, 2), in[0].t), tp_scalar(c, 1));
  return tp_status(c);
}

/* The C back end's answer, then what a call that must compile gets. */
static void c_then_call(FILE *out, const void *arg) {
  set_env(arg);
  ask(out, TJ_BACKEND_C);
  tj_function *f = NULL;
  uopc_error err = {0};
  uopc_tensor x, y[1] = {{0}};
  int64_t n = 5;
  int rc = tj_compile(&f, affine, NULL, &(tj_options){.name = "affine"}, &err);
  if (!rc) rc = uopc_tensor_empty(&x, UOPC_F32, 1, &n, &err);
  if (!rc) rc = tj_call(f, (tj_arg[]){tj_tensor(&x)}, 1, y, &err);
  fprintf(out, "call: %s %s\n", uopc_error_name(rc), err.message);
  uopc_tensor_release(&y[0]);
  uopc_tensor_release(&x);
  tj_free(f);
}

static void cuda(FILE *out, const void *arg) {
  (void)arg;
  ask(out, TJ_BACKEND_CUDA);
}

/* Asked with the environment as it is, then again after PATH lost the compiler. */
static void twice(FILE *out, const void *arg) {
  (void)arg;
  ask(out, TJ_BACKEND_C);
  setenv("PATH", "/nonexistent-tj", 1);
  unsetenv("UOPC_CC");
  ask(out, TJ_BACKEND_C);
}

static void *ask_thread(void *out) {
  char reason[4096];
  int ok = tj_is_available(TJ_BACKEND_C, reason, sizeof reason);
  flockfile(out);
  fprintf(out, "%d %s\n", ok, reason);
  funlockfile(out);
  return NULL;
}

/* Four threads asking first, at once. */
static void threads(FILE *out, const void *arg) {
  set_env(arg);
  pthread_t t[4];
  for (int k = 0; k < 4; k++) pthread_create(&t[k], NULL, ask_thread, out);
  for (int k = 0; k < 4; k++) pthread_join(t[k], NULL);
}

/* ---- Cases. */

static void test_tj_available_without_a_compiler_on_path_says_so(void **state) {
  (void)state;
  char text[8192];
  in_child(c_then_call, &(env){.path = "/nonexistent-tj"}, text, sizeof text);
  assert_contains(text, "0 no C compiler: program 'gcc' not found on PATH (/nonexistent-tj); install gcc, or name one"
                        " in UOPC_CC\n");
  assert_contains(text, "call: UOPC_E_INVALID ");   /* the same runtime refuses the compile */
  assert_contains(text, "program 'gcc' not found on PATH (/nonexistent-tj)");
}

static void test_tj_available_with_uopc_cc_naming_no_compiler_says_so(void **state) {
  (void)state;
  char text[8192];
  in_child(c_then_call, &(env){.cc = "/nonexistent-tj/cc"}, text, sizeof text);
  assert_contains(text, "0 no C compiler: program '/nonexistent-tj/cc' is not an executable file; install gcc, or"
                        " name one in UOPC_CC\n");
}

static void test_tj_available_refuses_a_cache_directory_others_can_write(void **state) {
  (void)state;
  char dir[4200], want[8192], text[8192];
  snprintf(dir, sizeof dir, "%s/open", testutil_cache_dir);
  assert_int_equal(mkdir(dir, 0700), 0);
  assert_int_equal(chmod(dir, 0777), 0);   /* past the umask */
  in_child(c_then_call, &(env){.cache = dir}, text, sizeof text);
  snprintf(want, sizeof want, "0 the cache directory is refused: cache directory '%s' is writable by group or others"
           " (mode 0777, at most 0755 allowed)", dir);
  assert_contains(text, want);
  snprintf(want, sizeof want, "Fix: chmod 700 '%s'", dir);
  assert_contains(text, want);
  assert_contains(text, "call: UOPC_E_UNSAFE_CACHE ");
}

static void test_tj_available_with_a_compiler_and_a_private_cache(void **state) {
  (void)state;
  char text[8192];
  in_child(c_then_call, &(env){0}, text, sizeof text);
  assert_contains(text, "1 available: the C compiler is found and the cache directory is usable\ncall: UOPC_OK \n");
}

/* CUDA is never available (tensorjit generates C only); the reason says what the machine has. */
static void test_tj_available_cuda_says_the_back_end_is_not_built(void **state) {
  (void)state;
  char text[8192], want[4096];
  uopc_error driver = {0};
  in_child(cuda, NULL, text, sizeof text);
  assert_contains(text, "0 the CUDA back end is not built into tensorjit yet; this machine: ");
  if (uopc_cuda_available(&driver)) snprintf(want, sizeof want, "this machine: %s; ", driver.message);
  else snprintf(want, sizeof want, "this machine: a CUDA driver and GPU are usable; ");
  assert_contains(text, want);
}

static void test_tj_available_asks_once_and_answers_from_memory(void **state) {
  (void)state;
  char text[8192];
  in_child(twice, NULL, text, sizeof text);
  const char *ok = "1 available: the C compiler is found and the cache directory is usable\n";
  char want[512];
  snprintf(want, sizeof want, "%s%s", ok, ok);   /* PATH changed, the answer did not */
  assert_string_equal(text, want);
  in_child(threads, &(env){.path = "/nonexistent-tj"}, text, sizeof text);
  const char *no = "0 no C compiler: program 'gcc' not found on PATH (/nonexistent-tj); install gcc, or name one in"
                   " UOPC_CC\n";
  snprintf(want, sizeof want, "%s%s%s%s", no, no, no, no);
  assert_string_equal(text, want);
}

static void test_tj_available_refuses_a_backend_that_is_not_one(void **state) {
  (void)state;
  char reason[128];
  expect_int(tj_is_available((tj_backend)7, reason, sizeof reason), 0, "tj_is_available(7)");
  assert_string_equal(reason, "backend 7 is not a tj_backend");
  expect_int(tj_is_available((tj_backend)7, NULL, 0), 0, "tj_is_available(7) without a reason");
}

static int doubled(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* 2x */
  (void)user;
  out[0] = tp_mul(c, in[0].t, tp_scalar(c, 2));
  return tp_status(c);
}

/* The backend option: TJ_BACKEND_C (and 0) compile and run; TJ_BACKEND_CUDA
 * is refused by tj_compile with tj_is_available's reason, never run on the C
 * back end instead; a value that is no tj_backend is refused by name. */
static void test_tj_compile_takes_the_c_backend_and_refuses_cuda_with_the_reason(void **state) {
  (void)state;
  tj_function *f = NULL;
  uopc_error err = {0};
  assert_uopc_ok(tj_compile(&f, doubled, NULL, &(tj_options){.backend = TJ_BACKEND_C}, &err), err);
  int64_t three = 3;
  uopc_tensor x, out[1] = {{0}};
  assert_uopc_ok(uopc_tensor_empty(&x, UOPC_F32, 1, &three, &err), err);
  for (int64_t i = 0; i < 3; i++) uopc_tensor_set(&x, i, (double)i + 0.5);
  assert_uopc_ok(tj_call(f, (tj_arg[]){tj_tensor(&x)}, 1, out, &err), err);
  for (int64_t i = 0; i < 3; i++) assert_float_equal(uopc_tensor_get(&out[0], i), 2 * ((double)i + 0.5), 0);
  expect_int(tj_stats(f).artifacts_built, 1, "artifacts of the C backend");
  uopc_tensor_release(&out[0]), uopc_tensor_release(&x);
  tj_free(f);

  char reason[4096], want[4200];
  expect_int(tj_is_available(TJ_BACKEND_CUDA, reason, sizeof reason), 0, "tj_is_available(TJ_BACKEND_CUDA)");
  snprintf(want, sizeof want, "tj_compile: backend TJ_BACKEND_CUDA: %s", reason);
  f = (tj_function *)&err;   /* must stay untouched */
  assert_uopc_code(tj_compile(&f, doubled, NULL, &(tj_options){.backend = TJ_BACKEND_CUDA}, &err), UOPC_E_UNSUPPORTED,
                   err);
  assert_string_equal(err.message, want);
  assert_ptr_equal(f, (tj_function *)&err);
  assert_uopc_code(tj_compile(&f, doubled, NULL, &(tj_options){.backend = (tj_backend)7}, &err), UOPC_E_INVALID, err);
  assert_string_equal(err.message, "tj_compile: backend = 7 is not a tj_backend");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tj_available_without_a_compiler_on_path_says_so),
      cmocka_unit_test(test_tj_available_with_uopc_cc_naming_no_compiler_says_so),
      cmocka_unit_test(test_tj_available_refuses_a_cache_directory_others_can_write),
      cmocka_unit_test(test_tj_available_with_a_compiler_and_a_private_cache),
      cmocka_unit_test(test_tj_available_cuda_says_the_back_end_is_not_built),
      cmocka_unit_test(test_tj_available_asks_once_and_answers_from_memory),
      cmocka_unit_test(test_tj_available_refuses_a_backend_that_is_not_one),
      cmocka_unit_test(test_tj_compile_takes_the_c_backend_and_refuses_cuda_with_the_reason),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
