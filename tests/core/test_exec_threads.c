/* test_exec_threads.c: one compiled exec called from 8 threads at once,
 * each with its own sizes, so each call needs a different amount of scratch
 * (x - mean(x) per row stores the means in a temporary). Before issue 27 an
 * exec had one grow-only scratch block, and two threads calling it raced:
 * one grew (freed) the block the other was writing. Each result is checked
 * against a plain C loop. Under ThreadSanitizer (no make mode has it yet):
 *   make SAN=1 SANFLAGS=-fsanitize=thread BUILD=build/solutions-tsan IMPL=solutions \
 *     build/solutions-tsan/tests/core/test_exec_threads
 *   setarch -R build/solutions-tsan/tests/core/test_exec_threads
 * is silent; with the single block it reported data races in exec.c, and
 * plain runs failed 2 of 3 times. */
#include <pthread.h>
#include "coreutil.h"

enum { THREADS = 8, CALLS = 40 };

typedef struct job {
  exec *e;
  int rows, cols, failures;
  char why[UOPC_ERROR_MESSAGE_MAX + 96];
} job;

static void *work(void *arg) {
  job *j = arg;
  for (int call = 0; call < CALLS && !j->failures; call++) {
    int rows = j->rows + call % 3, cols = j->cols;
    float *x = malloc(sizeof *x * (size_t)rows * cols), *y = malloc(sizeof *y * (size_t)rows * cols);
    uopc_tensor tx, ty;
    uopc_error err = {0};
    const int64_t shape[2] = {rows, cols}, strides[2] = {cols, 1};
    for (int i = 0; i < rows * cols; i++) x[i] = (float)((i * 7 + rows) % 13) * 0.25f;
    int rc = uopc_tensor_wrap(&tx, x, UOPC_F32, 2, shape, strides, &err);
    if (!rc) rc = uopc_tensor_wrap(&ty, y, UOPC_F32, 2, shape, strides, &err);
    const uopc_tensor *in[1] = {&tx};
    uopc_tensor *out[1] = {&ty};
    if (!rc) rc = exec_run(j->e, out, 1, in, 1, &err);
    if (rc) { j->failures++; snprintf(j->why, sizeof j->why, "exec_run: %s", err.message); }
    for (int r = 0; r < rows && !rc && !j->failures; r++) {
      float s = 0;                              /* quarters: every sum is exact */
      for (int k = 0; k < cols; k++) s += x[r * cols + k];
      for (int k = 0; k < cols; k++) {
        float want = x[r * cols + k] - s / (float)cols;
        if (y[r * cols + k] != want) {
          j->failures++;
          snprintf(j->why, sizeof j->why, "rows %d cols %d: y[%d][%d] = %.9g, want %.9g", rows, cols, r, k,
                   y[r * cols + k], want);
          break;
        }
      }
    }
    uopc_tensor_release(&tx);
    uopc_tensor_release(&ty);
    free(x);
    free(y);
  }
  return NULL;
}

static void test_one_exec_called_from_eight_threads(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, 4096), *m = dim(c, "m", 1, 4096);
  const ir_node *x = input(c, "x", UOPC_F32, 2, SHAPE(n, m));
  const ir_node *y = ok_node(c, ir_binary(c->g, IR_SUB, x, ir_reduce(c->g, IR_MEAN, x, 2u, 1)), "y");
  exec *e = NULL;
  uopc_error err = {0};
  assert_uopc_ok(exec_new(&e, c->g, &y, 1, "centered_rows", NULL, &err), err);
  assert_int_equal(exec_lowered(e)->n_temps, 1);
  pthread_t t[THREADS];
  job jobs[THREADS];
  for (int k = 0; k < THREADS; k++) {
    /* Rows differ per thread (so does the scratch: one mean a row); cols
     * a power of 2, so the mean of quarters is exact. */
    jobs[k] = (job){.e = e, .rows = 3 + 97 * k, .cols = 1 << (k % 5 + 2)};
    assert_int_equal(pthread_create(&t[k], NULL, work, &jobs[k]), 0);
  }
  for (int k = 0; k < THREADS; k++) assert_int_equal(pthread_join(t[k], NULL), 0);
  for (int k = 0; k < THREADS; k++)
    if (jobs[k].failures) fail_msg("thread %d: %s", k, jobs[k].why);
  exec_free(e);
}

int main(void) {
#define T(name) cmocka_unit_test_setup_teardown(name, core_setup, core_teardown)
  const struct CMUnitTest tests[] = {
    T(test_one_exec_called_from_eight_threads),
  };
#undef T
  return cmocka_run_group_tests(tests, NULL, NULL);
}
