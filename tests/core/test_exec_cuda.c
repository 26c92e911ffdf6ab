/* test_exec_cuda.c: the compiler core's CUDA back end run on a GPU (given
 * code, lab 23.1). Each graph is built once for the CPU (exec.h) and once
 * for the GPU (exec_cuda.h) and called on the same tensors: data made of
 * quarters keep sums and products exact, so those outputs must agree bit for
 * bit; transcendental functions (CUDA's libdevice against glibc) within a
 * few units in the last place. Without a GPU the suite checks that the
 * runner says why, and skips the rest with that reason. */
#include "coreutil.h"
#include "exec_cuda.h"

enum { MAX_IO = 4 };

/* Returns when a GPU is here; otherwise prints why and skips the test. */
static void need_gpu(void) {
  uopc_error err = {0};
  if (uopc_cuda_available(&err) == UOPC_OK) return;
  print_message("  skipped: %s\n", err.message);
  skip();
}

static const ir_node *op1(core *c, ir_op op, const ir_node *x) {
  return ok_node(c, ir_unary(c->g, op, x), ir_op_info_of(op)->name);
}

static const ir_node *op2(core *c, ir_op op, const ir_node *x, const ir_node *y) {
  return ok_node(c, ir_binary(c->g, op, x, y), ir_op_info_of(op)->name);
}

/* Both runners of one graph. */
typedef struct twin {
  exec *cpu;
  exec_cuda *gpu;
} twin;

static twin twin_new(core *c, const ir_node *const *outs, int n, const char *entry) {
  twin t = {0};
  uopc_error err = {0};
  assert_uopc_ok(exec_new(&t.cpu, c->g, outs, n, entry, NULL, &err), err);
  char cuda_entry[64];
  snprintf(cuda_entry, sizeof cuda_entry, "%s_cuda", entry);
  int64_t before = uopc_counter_get(EXEC_CUDA_C_BUILT);
  assert_uopc_ok(exec_cuda_new(&t.gpu, c->g, outs, n, cuda_entry, NULL, &err), err);
  assert_int_equal(uopc_counter_get(EXEC_CUDA_C_BUILT) - before, 1);
  return t;
}

static void twin_free(twin *t) {
  exec_free(t->cpu);
  exec_cuda_free(t->gpu);
}

/* Quarters in [-2.75, 2.75], shifted by seed. */
static void fill_quarters(uopc_tensor *t, int seed) {
  int64_t n = uopc_tensor_numel(t);
  for (int64_t i = 0; i < n; i++) uopc_tensor_set(t, i, (double)((i * 7 + seed * 5 + 3) % 23 - 11) * 0.25);
}

/* ulps: 0 for bit for bit; else the largest distance allowed, in units of
 * the dtype's epsilon times the value (at least 1: tanh(a) - exp(-x) may
 * cancel to a small result whose terms each carried an error near 1). */
static void expect_within_ulps(const char *what, const buf *want, const buf *got, double ulps) {
  int64_t n = uopc_tensor_numel(&want->t);
  double eps = want->t.dtype == UOPC_F32 ? 0x1p-23 : 0x1p-52;
  for (int64_t i = 0; i < n; i++) {
    double w = uopc_tensor_get(&want->t, i), g = uopc_tensor_get(&got->t, i);
    int same = (isnan(w) && isnan(g)) || w == g;
    if (!same && ulps > 0 && !isnan(w) && !isnan(g)) same = fabs(w - g) <= ulps * eps * fmax(fabs(w), 1.0);
    if (!same) fail_msg("%s: element %lld: the CPU made %.17g, the GPU %.17g", what, (long long)i, w, g);
  }
}

/* Runs both on ins (outputs shaped from the CPU's binding) and compares. */
static void twin_call(twin *t, buf *ins, int n_in, double ulps, const char *what) {
  const lower_program *p = exec_lowered(t->cpu);
  const uopc_tensor *in[MAX_IO];
  for (int k = 0; k < n_in; k++) in[k] = &ins[k].t;
  sym_binding b;
  uopc_error err = {0};
  assert_uopc_ok(exec_bind(t->cpu, in, n_in, &b, &err), err);
  buf cpu[MAX_IO], gpu[MAX_IO];
  uopc_tensor *oc[MAX_IO], *og[MAX_IO];
  for (int k = 0; k < p->n_outputs; k++) {
    int64_t shape[UOPC_MAX_RANK];
    int rank;
    assert_uopc_ok(exec_output_shape(t->cpu, k, &b, shape, &rank, &err), err);
    buf_new(&cpu[k], p->buffers[k].node->dtype, rank, shape);
    buf_new(&gpu[k], p->buffers[k].node->dtype, rank, shape);
    oc[k] = &cpu[k].t;
    og[k] = &gpu[k].t;
  }
  assert_uopc_ok(exec_run(t->cpu, oc, p->n_outputs, in, n_in, &err), err);
  int rc = exec_cuda_run(t->gpu, og, p->n_outputs, in, n_in, &err);
  if (rc) fail_msg("%s: exec_cuda_run: %s: %s", what, uopc_error_name(rc), err.message);
  for (int k = 0; k < p->n_outputs; k++) {
    char w[160];
    snprintf(w, sizeof w, "%s, output %d", what, k);
    expect_tail_untouched(&gpu[k], w);
    expect_within_ulps(w, &cpu[k], &gpu[k], ulps);
    buf_free(&cpu[k]);
    buf_free(&gpu[k]);
  }
}

/* ---- Without a GPU. */

static void test_exec_cuda_without_a_gpu_says_why(void **state) {
  core *c = *state;
  uopc_error why = {0}, err = {0};
  if (uopc_cuda_available(&why) == UOPC_OK) {
    print_message("  skipped: this machine has a GPU\n");
    skip();
  }
  const ir_node *x = input(c, "x", UOPC_F32, 1, SHAPE(dim(c, "n", 0, 64)));
  const ir_node *y = op1(c, IR_NEG, x);
  exec_cuda *e = NULL;
  assert_uopc_code(exec_cuda_new(&e, c->g, &y, 1, "neg_cuda", NULL, &err), why.code, err);
  assert_null(e);
  assert_string_equal(err.message, why.message);
}

/* ---- On a GPU. */

static void chain_case(uopc_dtype dt) {
  void *state = NULL;
  assert_int_equal(core_setup(&state), 0);
  core *c = state;
  const sym_expr *n = dim(c, "n", 0, 1 << 22);
  const ir_node *x = input(c, "x", dt, 1, SHAPE(n)), *y = input(c, "y", dt, 1, SHAPE(n));
  const ir_node *one = ok_node(c, ir_const(c->g, 1.0, dt), "1");
  const ir_node *outs[2] = {
    op2(c, IR_ADD, op2(c, IR_MUL, x, y), one),     /* exact on quarters: no FMA can round it */
    op2(c, IR_SUB, op1(c, IR_TANH, op2(c, IR_MUL, x, y)), op1(c, IR_EXP, op1(c, IR_NEG, x))),
  };
  twin t = twin_new(c, outs, 2, dt == UOPC_F32 ? "cuda_chain_f32" : "cuda_chain_f64");
  /* 0 and 1 at the edges; 70,000 and 4M elements need many blocks and, at
   * 4M, the grid-stride loop (more elements than 65,535 blocks of 256). */
  const int64_t sizes[] = {0, 1, 7, 257, 70000, 1 << 22};
  for (int s = 0; s < COUNT(sizes); s++) {
    buf ins[2];
    buf_new(&ins[0], dt, 1, &sizes[s]);
    buf_new(&ins[1], dt, 1, &sizes[s]);
    fill_quarters(&ins[0].t, 1);
    fill_quarters(&ins[1].t, 2);
    char what[64];
    snprintf(what, sizeof what, "chain %s n=%lld", ir_dtype_name(dt), (long long)sizes[s]);
    twin_call(&t, ins, 2, 8, what);
    buf_free(&ins[0]);
    buf_free(&ins[1]);
  }
  twin_free(&t);
  core_teardown(&state);
}

static void test_exec_cuda_elementwise_chain_matches_the_cpu(void **state) {
  (void)state;
  need_gpu();
  chain_case(UOPC_F32);
  chain_case(UOPC_F64);
}

static void test_exec_cuda_reductions_and_temporaries_match_the_cpu_bit_for_bit(void **state) {
  core *c = *state;
  need_gpu();
  const sym_expr *n = dim(c, "n", 1, 5000);
  const ir_node *x = input(c, "x", UOPC_F32, 2, SHAPE(n, cst(c, 37)));
  const ir_node *rows = ok_node(c, ir_reduce(c->g, IR_SUM, x, 2u, 0), "row sums");        /* (n) */
  const ir_node *cols = ok_node(c, ir_reduce(c->g, IR_MAX, x, 1u, 0), "column maxima");   /* (37) */
  const ir_node *col = ok_node(c, ir_reshape(c->g, rows, 2, SHAPE(n, cst(c, 1))), "(n, 1)");
  const ir_node *outs[2] = {op2(c, IR_SUB, x, op2(c, IR_MUL, col, cols)),
                            ok_node(c, ir_reduce(c->g, IR_SUM, x, 3u, 0), "total")};
  twin t = twin_new(c, outs, 2, "cuda_temps");
  assert_int_equal(exec_cuda_lowered(t.gpu)->n_temps, 2);
  const int64_t sizes[] = {1, 2, 33, 5000};
  for (int s = 0; s < COUNT(sizes); s++) {
    buf in;
    buf_new(&in, UOPC_F32, 2, (const int64_t[]){sizes[s], 37});
    fill_quarters(&in.t, s);
    char what[48];
    snprintf(what, sizeof what, "temporaries n=%lld", (long long)sizes[s]);
    twin_call(&t, &in, 1, 0, what);
    buf_free(&in);
  }
  twin_free(&t);
}

static void test_exec_cuda_batched_matmul_matches_the_cpu_bit_for_bit(void **state) {
  core *c = *state;
  need_gpu();
  const sym_expr *b = dim(c, "b", 1, 8), *n = dim(c, "n", 1, 64), *k = dim(c, "k", 0, 96), *m = dim(c, "m", 1, 64);
  const ir_node *x = input(c, "x", UOPC_F64, 3, SHAPE(b, n, k)), *y = input(c, "y", UOPC_F64, 3, SHAPE(b, k, m));
  const ir_node *out = ok_node(c, ir_matmul(c->g, x, op1(c, IR_NEG, y)), "x @ -y");
  twin t = twin_new(c, &out, 1, "cuda_bmm");
  const int64_t sizes[][4] = {{1, 1, 0, 1}, {2, 3, 5, 4}, {8, 64, 96, 64}};
  for (int s = 0; s < COUNT(sizes); s++) {
    buf ins[2];
    buf_new(&ins[0], UOPC_F64, 3, (const int64_t[]){sizes[s][0], sizes[s][1], sizes[s][2]});
    buf_new(&ins[1], UOPC_F64, 3, (const int64_t[]){sizes[s][0], sizes[s][2], sizes[s][3]});
    fill_quarters(&ins[0].t, 3);
    fill_quarters(&ins[1].t, 4);
    twin_call(&t, ins, 2, 0, "x @ -y");
    buf_free(&ins[0]);
    buf_free(&ins[1]);
  }
  twin_free(&t);
}

/* x[o::s], both from dims: the kernel takes the storage base and adds the
 * offset itself, so the device copy must start at the base. */
static void test_exec_cuda_strided_view_with_a_symbolic_offset(void **state) {
  core *c = *state;
  need_gpu();
  const sym_expr *n = dim(c, "n", 0, 100), *s = dim(c, "s", 1, 4), *o = dim(c, "o", 0, 50);
  const ir_node *x = ok_node(c, ir_input_view(c->g, "x", UOPC_I32, 1, SHAPE(n), SHAPE(s), o), "x[o::s]");
  const ir_node *out = op2(c, IR_MUL, x, ok_node(c, ir_const(c->g, 3, UOPC_I32), "3"));
  twin t = twin_new(c, &out, 1, "cuda_view_i32");
  buf base;
  buf_new(&base, UOPC_I32, 1, (const int64_t[]){120});
  for (int64_t i = 0; i < 120; i++) uopc_tensor_set(&base.t, i, (double)(i * 11 % 97));
  const int64_t views[][3] = {{0, 1, 120}, {7, 3, 30}, {50, 2, 35}, {45, 1, 1}};   /* offset, step, length */
  for (int v = 0; v < COUNT(views); v++) {
    buf in = {0};
    uopc_error err = {0};
    assert_uopc_ok(uopc_tensor_slice(&in.t, &base.t, 0, views[v][0], views[v][0] + views[v][1] * views[v][2],
                                     views[v][1], &err), err);
    if (in.t.shape[0] > 100) {   /* n <= 100: a shorter prefix of the same view */
      uopc_tensor_release(&in.t);
      assert_uopc_ok(uopc_tensor_slice(&in.t, &base.t, 0, views[v][0], views[v][0] + 100, views[v][1], &err), err);
    }
    twin_call(&t, &in, 1, 0, "3 * x[o::s]");
    uopc_tensor_release(&in.t);
  }
  buf_free(&base);
  twin_free(&t);
}

static void test_exec_cuda_refuses_a_wrong_output_before_any_launch(void **state) {
  core *c = *state;
  need_gpu();
  const ir_node *x = input(c, "x", UOPC_F32, 1, SHAPE(dim(c, "n", 0, 64)));
  const ir_node *y = op1(c, IR_NEG, x);
  exec_cuda *e = NULL;
  uopc_error err = {0};
  assert_uopc_ok(exec_cuda_new(&e, c->g, &y, 1, "cuda_neg", NULL, &err), err);
  buf in, out;
  buf_new(&in, UOPC_F32, 1, (const int64_t[]){5});
  buf_new(&out, UOPC_F32, 1, (const int64_t[]){4});
  fill_quarters(&in.t, 0);
  uopc_tensor *outs[1] = {&out.t};
  const uopc_tensor *ins[1] = {&in.t};
  int64_t calls = uopc_counter_get("calls cuda_neg_k0");
  assert_uopc_code(exec_cuda_run(e, outs, 1, ins, 1, &err), UOPC_E_BOUNDS, err);
  assert_string_equal(err.message, "output 0 has shape (4), this call makes (5)");
  assert_int_equal(uopc_counter_get("calls cuda_neg_k0"), calls);
  buf_free(&out);
  buf_new(&out, UOPC_F32, 1, (const int64_t[]){5});
  outs[0] = &out.t;
  assert_uopc_ok(exec_cuda_run(e, outs, 1, ins, 1, &err), err);
  assert_int_equal(uopc_counter_get("calls cuda_neg_k0"), calls + 1);
  assert_int_equal(uopc_tensor_version(&out.t), 1);
  for (int i = 0; i < 5; i++) assert_true(uopc_tensor_get(&out.t, i) == -uopc_tensor_get(&in.t, i));
  buf_free(&in);
  buf_free(&out);
  exec_cuda_free(e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_exec_cuda_without_a_gpu_says_why, core_setup, core_teardown),
    cmocka_unit_test(test_exec_cuda_elementwise_chain_matches_the_cpu),
    cmocka_unit_test_setup_teardown(test_exec_cuda_reductions_and_temporaries_match_the_cpu_bit_for_bit,
                                    core_setup, core_teardown),
    cmocka_unit_test_setup_teardown(test_exec_cuda_batched_matmul_matches_the_cpu_bit_for_bit, core_setup,
                                    core_teardown),
    cmocka_unit_test_setup_teardown(test_exec_cuda_strided_view_with_a_symbolic_offset, core_setup, core_teardown),
    cmocka_unit_test_setup_teardown(test_exec_cuda_refuses_a_wrong_output_before_any_launch, core_setup,
                                    core_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
