/* test_exec_threads.c: one compiled exec called from 8 threads at once,
 * each with its own sizes, so each call needs a different amount of scratch.
 * Two programs: x - mean(x) per row (the given lowering: the means in one
 * temporary), and a row softmax with LOWER_FUSE (three temporaries, two of
 * them sharing one place of the scratch block). Before issue 27 an exec had
 * one grow-only scratch block, and two threads calling it raced: one grew
 * (freed) the block the other was writing; plain runs failed 2 of 3 times.
 * Each result is checked against a plain C loop. `make tsan` runs this
 * suite under ThreadSanitizer, with the generated kernels instrumented too
 * (their scratch reads and writes are checked, not only exec.c's). */
#include <float.h>
#include <pthread.h>
#include "coreutil.h"

enum { THREADS = 8, CALLS = 40 };

/* Under ThreadSanitizer the kernels are compiled with it as well, so a
 * kernel writing scratch another call reads is a reported race. */
#ifdef __SANITIZE_THREAD__
static const uopc_program_options OPTIONS = {.opt_flags = "-O1 -fsanitize=thread"};
#else
static const uopc_program_options OPTIONS = {0};
#endif

typedef struct job job;
/* Checks row r of one call's result y for input x; 0 when right, else fills j->why. */
typedef int row_check(job *j, const float *x, const float *y, int r, int rows);

struct job {
  exec *e;
  row_check *check;
  int rows, cols, failures;
  char why[UOPC_ERROR_MESSAGE_MAX + 96];
};

/* Quarters and a power-of-2 row: every sum and mean is exact. */
static int centered_row(job *j, const float *x, const float *y, int r, int rows) {
  int cols = j->cols;
  float s = 0;
  for (int k = 0; k < cols; k++) s += x[r * cols + k];
  for (int k = 0; k < cols; k++) {
    float want = x[r * cols + k] - s / (float)cols;
    if (y[r * cols + k] != want) {
      snprintf(j->why, sizeof j->why, "rows %d cols %d: y[%d][%d] = %.9g, want %.9g", rows, cols, r, k,
               y[r * cols + k], want);
      return 1;
    }
  }
  return 0;
}

/* Against double: the kernel's f32 row sum errs by at most (cols - 1) half
 * ulps relative, expf and the division by about 1.5 ulps more. */
static int softmax_row(job *j, const float *x, const float *y, int r, int rows) {
  int cols = j->cols;
  double top = -INFINITY, s = 0;
  for (int k = 0; k < cols; k++) top = fmax(top, x[r * cols + k]);
  for (int k = 0; k < cols; k++) s += exp(x[r * cols + k] - top);
  for (int k = 0; k < cols; k++) {
    double want = exp(x[r * cols + k] - top) / s;
    if (fabs(y[r * cols + k] - want) > (cols + 4) * FLT_EPSILON * want) {
      snprintf(j->why, sizeof j->why, "rows %d cols %d: y[%d][%d] = %.9g, want %.9g", rows, cols, r, k,
               y[r * cols + k], want);
      return 1;
    }
  }
  return 0;
}

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
    for (int r = 0; r < rows && !rc && !j->failures; r++) j->failures += j->check(j, x, y, r, rows);
    uopc_tensor_release(&tx);
    uopc_tensor_release(&ty);
    free(x);
    free(y);
  }
  return NULL;
}

/* Runs e from THREADS threads, thread k on rows 3 + 97k (+0..2 per call)
 * and 2^(k%5+2) columns, so each call binds its own sizes. */
static void run_threads(exec *e, row_check *check) {
  pthread_t t[THREADS];
  job jobs[THREADS];
  for (int k = 0; k < THREADS; k++) {
    jobs[k] = (job){.e = e, .check = check, .rows = 3 + 97 * k, .cols = 1 << (k % 5 + 2)};
    assert_int_equal(pthread_create(&t[k], NULL, work, &jobs[k]), 0);
  }
  for (int k = 0; k < THREADS; k++) assert_int_equal(pthread_join(t[k], NULL), 0);
  for (int k = 0; k < THREADS; k++)
    if (jobs[k].failures) fail_msg("thread %d: %s", k, jobs[k].why);
}

static void test_one_exec_called_from_eight_threads(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, 4096), *m = dim(c, "m", 1, 4096);
  const ir_node *x = input(c, "x", UOPC_F32, 2, SHAPE(n, m));
  const ir_node *y = ok_node(c, ir_binary(c->g, IR_SUB, x, ir_reduce(c->g, IR_MEAN, x, 2u, 1)), "y");
  exec *e = NULL;
  uopc_error err = {0};
  assert_uopc_ok(exec_new(&e, c->g, &y, 1, "centered_rows", &OPTIONS, &err), err);
  assert_int_equal(exec_lowered(e)->n_temps, 1);
  run_threads(e, centered_row);
  exec_free(e);
}

/* LOWER_FUSE: max, exp(x - max) (stored by the rule: coreutil.h's, as tensorjit's stores it) and
 * sum are temporaries; the sum takes the max's place, whose last reader
 * (the exp nest) ran before it. */
static void test_one_fused_exec_called_from_eight_threads(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, 4096), *m = dim(c, "m", 1, 4096);
  const ir_node *x = input(c, "x", UOPC_F32, 2, SHAPE(n, m));
  const ir_node *t = ir_unary(c->g, IR_EXP, ir_binary(c->g, IR_SUB, x, ir_reduce(c->g, IR_MAX, x, 2u, 1)));
  const ir_node *y = ok_node(c, ir_binary(c->g, IR_DIV, t, ir_reduce(c->g, IR_SUM, t, 2u, 1)), "softmax");
  exec *e = NULL;
  uopc_error err = {0};
  assert_uopc_ok(exec_new_rule(&e, c->g, &y, 1, "softmax_rows", LOWER_FUSE, core_store_exps_rule(), &OPTIONS, &err), err);
  const lower_program *p = exec_lowered(e);
  assert_int_equal(p->n_temps, 3);
  assert_ptr_equal(p->buffers[p->n_outputs + p->n_inputs].scratch_offset,
                   p->buffers[p->n_outputs + p->n_inputs + 2].scratch_offset);
  run_threads(e, softmax_row);
  exec_free(e);
}

int main(void) {
#define T(name) cmocka_unit_test_setup_teardown(name, core_setup, core_teardown)
  const struct CMUnitTest tests[] = {
    T(test_one_exec_called_from_eight_threads),
    T(test_one_fused_exec_called_from_eight_threads),
  };
#undef T
  return cmocka_run_group_tests(tests, NULL, NULL);
}
