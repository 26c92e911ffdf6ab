/* test_guard_pages.c: the grader's runtime (uopc/src/tensor.c built with
 * -DUOPC_GUARD_PAGES; harness/grading/grade.mk loads it in every graded run).
 * Storage is aligned and zeroed as the ordinary runtime's; a write at the
 * next 64-byte boundary after a tensor's last element faults at once, one
 * inside that boundary aborts when the storage is freed, naming the size and
 * the byte; a tensor written only inside its elements is freed quietly. Each
 * write past the end runs in a child process, whose end is what is checked. */
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>
#include "uopc/uopc.h"
#include "testutil.h"

static uopc_tensor vec(int64_t n) {
  uopc_tensor t;
  uopc_error err = {0};
  assert_uopc_ok(uopc_tensor_empty(&t, UOPC_F32, 1, &n, &err), err);
  return t;
}

/* In a child: a tensor of n floats, element k written, the tensor freed. The
 * child's status, and what it wrote to stderr (up to size bytes) into text. */
static int child_writes(int64_t n, int64_t k, char *text, size_t size) {
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    signal(SIGSEGV, SIG_DFL);   /* cmocka's handler, inherited, would report and exit instead */
    signal(SIGABRT, SIG_DFL);
    dup2(fds[1], 2);
    uopc_tensor t = vec(n);
    ((volatile float *)t.storage->base)[k] = 1.0f;
    uopc_tensor_release(&t);
    _exit(0);
  }
  close(fds[1]);
  size_t got = 0;
  for (ssize_t r; got + 1 < size && (r = read(fds[0], text + got, size - 1 - got)) > 0;) got += (size_t)r;
  text[got] = 0;
  close(fds[0]);
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  return status;
}

static void test_storage_is_aligned_and_zeroed(void **state) {
  (void)state;
  for (int64_t n = 0; n < 40; n += 7) {
    uopc_tensor t = vec(n);
    assert_non_null(t.storage->base);
    assert_int_equal((uintptr_t)t.storage->base % 64, 0);
    for (int64_t i = 0; i < n; i++) assert_true(((float *)t.storage->base)[i] == 0.0f);
    uopc_tensor_release(&t);
  }
}

/* 16 floats fill 64 bytes: element 16 is the first byte of the guard page. */
static void test_a_write_at_the_boundary_faults(void **state) {
  (void)state;
  char text[512];
  int status = child_writes(16, 16, text, sizeof text);
  if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGSEGV)
    fail_msg("a write at byte 64 of a 64-byte tensor: expected SIGSEGV, got status 0x%x: %s", status, text);
}

/* 5 floats are 20 bytes, rounded to 64: element 5 lies in the rounding. */
static void test_a_write_inside_the_rounding_aborts_when_freed(void **state) {
  (void)state;
  char text[512];
  int status = child_writes(5, 5, text, sizeof text);
  if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGABRT)
    fail_msg("a write at byte 20 of a 20-byte tensor: expected SIGABRT when freed, got status 0x%x: %s", status, text);
  if (!strstr(text, "uopc: a write past the end of a tensor's storage of 20 bytes: byte 0 after it changed"))
    fail_msg("a write at byte 20 of a 20-byte tensor: expected the runtime's message, got: %s", text);
}

static void test_a_write_inside_the_elements_is_quiet(void **state) {
  (void)state;
  char text[512];
  int status = child_writes(5, 4, text, sizeof text);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || text[0])
    fail_msg("a write at the last element: expected a quiet exit 0, got status 0x%x: %s", status, text);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_storage_is_aligned_and_zeroed),
    cmocka_unit_test(test_a_write_at_the_boundary_faults),
    cmocka_unit_test(test_a_write_inside_the_rounding_aborts_when_freed),
    cmocka_unit_test(test_a_write_inside_the_elements_is_quiet),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
