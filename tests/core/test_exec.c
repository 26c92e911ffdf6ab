/* test_exec.c: graphs compiled by the compiler core and run on tensors
 * (given code, lab 23.1). Each result is compared with a plain C loop
 * written here (bit for bit: the data make every sum exact, and the same
 * libm functions run on both sides); every output sits in a buffer with a
 * poisoned tail. Then the shape binder: dims bound from extents, strides and
 * offsets, and each way a call can be refused, by code and message. */
#include <limits.h>
#include "coreutil.h"

#define NONE UOPC_SLICE_NONE
enum { MAX_IO = 24 };

/* ---- Building and running. */

static exec *built_with(core *c, const ir_node *const *outs, int n, const char *entry,
                        const uopc_program_options *opts) {
  exec *e = NULL;
  uopc_error err = {0};
  int rc = exec_new(&e, c->g, outs, n, entry, opts, &err);
  if (rc) fail_msg("exec_new '%s': expected UOPC_OK, got %s: %s", entry, uopc_error_name(rc), err.message);
  return e;
}

static exec *built(core *c, const ir_node *const *outs, int n, const char *entry) {
  return built_with(c, outs, n, entry, NULL);
}

static int run(exec *e, buf *outs, int n_out, buf *ins, int n_in, uopc_error *err) {
  uopc_tensor *o[MAX_IO];
  const uopc_tensor *i[MAX_IO];
  for (int k = 0; k < n_out; k++) o[k] = &outs[k].t;
  for (int k = 0; k < n_in; k++) i[k] = &ins[k].t;
  return exec_run(e, o, n_out, i, n_in, err);
}

/* Allocates each output at the shape this call gives it (poisoned), runs,
 * and checks that no tail was written. */
static void run_ok(exec *e, buf *outs, int n_out, buf *ins, int n_in, const char *what) {
  const uopc_tensor *i[MAX_IO];
  for (int k = 0; k < n_in; k++) i[k] = &ins[k].t;
  sym_binding b;
  uopc_error err = {0};
  int rc = exec_bind(e, i, n_in, &b, &err);
  if (rc) fail_msg("%s: exec_bind: expected UOPC_OK, got %s: %s", what, uopc_error_name(rc), err.message);
  for (int k = 0; k < n_out; k++) {
    int64_t shape[UOPC_MAX_RANK];
    int rank;
    assert_uopc_ok(exec_output_shape(e, k, &b, shape, &rank, &err), err);
    buf_new(&outs[k], exec_lowered(e)->buffers[k].node->dtype, rank, shape);
  }
  rc = run(e, outs, n_out, ins, n_in, &err);
  if (rc) fail_msg("%s: exec_run: expected UOPC_OK, got %s: %s", what, uopc_error_name(rc), err.message);
  for (int k = 0; k < n_out; k++) {
    char w[160];
    snprintf(w, sizeof w, "%s, output %d", what, k);
    expect_tail_untouched(&outs[k], w);
  }
}

static void free_bufs(buf *b, int n) {
  for (int k = 0; k < n; k++) buf_free(&b[k]);
}

static void in_new(buf *b, uopc_dtype dt, int rank, const int64_t *shape) { buf_new(b, dt, rank, shape); }

/* Quarters in [-2.75, 2.75]: every sum of a few thousand is exact in f32. */
static void fill_quarters(buf *b, int seed) {
  int64_t n = uopc_tensor_numel(&b->t);
  for (int64_t i = 0; i < n; i++) uopc_tensor_set(&b->t, i, (double)((i * 7 + seed * 5 + 3) % 23 - 11) * 0.25);
}

/* The index itself: a value says where it came from. */
static void fill_index(buf *b) {
  int64_t n = uopc_tensor_numel(&b->t);
  for (int64_t i = 0; i < n; i++) uopc_tensor_set(&b->t, i, (double)i);
}

static int same_value(double want, double got) {
  return (isnan(want) && isnan(got)) || (want == got && signbit(want) == signbit(got));
}

static void expect_number(const char *what, int64_t i, double want, double got) {
  if (!same_value(want, got)) fail_msg("%s: element %lld: expected %.17g, got %.17g", what, (long long)i, want, got);
}

static const ir_node *op2(core *c, ir_op op, const ir_node *x, const ir_node *y) {
  return ok_node(c, ir_binary(c->g, op, x, y), ir_op_info_of(op)->name);
}

static const ir_node *op1(core *c, ir_op op, const ir_node *x) {
  return ok_node(c, ir_unary(c->g, op, x), ir_op_info_of(op)->name);
}

static const ir_node *konst(core *c, double v, uopc_dtype dt) { return ok_node(c, ir_const(c->g, v, dt), "const"); }

static void *fresh_core(void) {
  void *s = NULL;
  assert_int_equal(core_setup(&s), 0);
  return s;
}

/* ---- Elementwise chains. */

/* NumPy's maximum: a NaN operand wins; on a tie, the second operand. */
static double np_maximum(double p, double q) { return isnan(p) || isnan(q) ? NAN : p > q ? p : q; }
static double np_minimum(double p, double q) { return isnan(p) || isnan(q) ? NAN : p < q ? p : q; }

static void chain_values(uopc_dtype dt, double a, double b, double *o) {
  if (dt == UOPC_F32) {
    float x = (float)a, y = (float)b;
    float p = ((x + y) * x - y) / y;
    o[0] = np_maximum(p, -fabsf(x));
    o[1] = tanhf(logf(fabsf(x) + 1.0f) * sqrtf(fabsf(y))) - expf(-x);
    o[2] = powf(y, x);
  } else {
    double p = ((a + b) * a - b) / b;
    o[0] = np_maximum(p, -fabs(a));
    o[1] = tanh(log(fabs(a) + 1.0) * sqrt(fabs(b))) - exp(-a);
    o[2] = pow(b, a);
  }
}

static void chain_case(uopc_dtype dt) {
  core *c = fresh_core();
  const sym_expr *n = dim(c, "n", 0, 128);
  const ir_node *x = input(c, "x", dt, 1, SHAPE(n)), *y = input(c, "y", dt, 1, SHAPE(n));
  const ir_node *p = op2(c, IR_DIV, op2(c, IR_SUB, op2(c, IR_MUL, op2(c, IR_ADD, x, y), x), y), y);
  const ir_node *outs[3];
  outs[0] = op2(c, IR_MAXIMUM, p, op1(c, IR_NEG, op1(c, IR_ABS, x)));
  const ir_node *l = op1(c, IR_LOG, op2(c, IR_ADD, op1(c, IR_ABS, x), konst(c, 1.0, dt)));
  outs[1] = op2(c, IR_SUB, op1(c, IR_TANH, op2(c, IR_MUL, l, op1(c, IR_SQRT, op1(c, IR_ABS, y)))),
                op1(c, IR_EXP, op1(c, IR_NEG, x)));
  outs[2] = op2(c, IR_POW, y, x);
  exec *e = built(c, outs, 3, dt == UOPC_F32 ? "chain_f32_n" : "chain_f64_n");
  const int64_t sizes[] = {0, 1, 7, 33, 100};
  for (int s = 0; s < COUNT(sizes); s++) {
    buf ins[2], out[3];
    in_new(&ins[0], dt, 1, &sizes[s]);
    in_new(&ins[1], dt, 1, &sizes[s]);
    for (int64_t i = 0; i < sizes[s]; i++) {
      uopc_tensor_set(&ins[0].t, i, (double)(i % 13 - 6) * 0.375 + 0.1);
      uopc_tensor_set(&ins[1].t, i, (double)((i * 5) % 11 - 5) * 0.5 + 0.25);
    }
    if (sizes[s] > 5) {
      uopc_tensor_set(&ins[0].t, 3, NAN);
      uopc_tensor_set(&ins[1].t, 5, INFINITY);
    }
    char what[64];
    snprintf(what, sizeof what, "chain %s n=%lld", ir_dtype_name(dt), (long long)sizes[s]);
    run_ok(e, out, 3, ins, 2, what);
    for (int64_t i = 0; i < sizes[s]; i++) {
      double want[3];
      chain_values(dt, uopc_tensor_get(&ins[0].t, i), uopc_tensor_get(&ins[1].t, i), want);
      for (int k = 0; k < 3; k++) {
        char w[192];
        snprintf(w, sizeof w, "%s, out%d at x=%g y=%g", what, k, uopc_tensor_get(&ins[0].t, i),
                 uopc_tensor_get(&ins[1].t, i));
        expect_number(w, i, want[k], uopc_tensor_get(&out[k].t, i));
      }
    }
    free_bufs(ins, 2);
    free_bufs(out, 3);
  }
  exec_free(e);
  void *s = c;
  core_teardown(&s);
}

static void test_exec_elementwise_chain_f32(void **state) {
  (void)state;
  chain_case(UOPC_F32);
}

static void test_exec_elementwise_chain_f64(void **state) {
  (void)state;
  chain_case(UOPC_F64);
}

/* ---- Reductions over each axis of a 3-D input. */

static const unsigned AXES[] = {1u, 2u, 4u, 3u, 5u, 6u, 7u};

/* op over axes of x (shape sh), as a plain loop: output elements in
 * row-major order of the shape with reduced extents set to 1. */
static void reference_reduce(ir_op op, uopc_dtype dt, const buf *x, const int64_t *sh, unsigned axes,
                             double *out) {
  int64_t ext[3], red[3], at = 0;
  for (int k = 0; k < 3; k++) {
    ext[k] = axes >> k & 1u ? 1 : sh[k];
    red[k] = axes >> k & 1u ? sh[k] : 1;
  }
  for (int64_t o0 = 0; o0 < ext[0]; o0++)
    for (int64_t o1 = 0; o1 < ext[1]; o1++)
      for (int64_t o2 = 0; o2 < ext[2]; o2++) {
        double sum = 0, max = -INFINITY;
        int64_t count = 0;
        for (int64_t r0 = 0; r0 < red[0]; r0++)
          for (int64_t r1 = 0; r1 < red[1]; r1++)
            for (int64_t r2 = 0; r2 < red[2]; r2++) {
              double v = uopc_tensor_get(&x->t, ((o0 + r0) * sh[1] + o1 + r1) * sh[2] + o2 + r2);
              sum += v;
              max = np_maximum(max, v);
              count++;
            }
        if (op == IR_MAX) out[at++] = max;
        else if (op == IR_SUM) out[at++] = dt == UOPC_F32 ? (double)(float)sum : sum;
        else out[at++] = dt == UOPC_F32 ? (double)((float)sum / (float)count) : sum / (double)count;
      }
}

static void reduce_case(uopc_dtype dt, int keepdims, int max_only) {
  core *c = fresh_core();
  const sym_expr *a = dim(c, "a", 0, 80), *b = dim(c, "b", 0, 80), *d = dim(c, "c", 0, 80);
  const ir_node *x = input(c, "x", dt, 3, SHAPE(a, b, d));
  const ir_node *outs[14];
  ir_op ops[14];
  int n = 0;
  for (int k = 0; k < COUNT(AXES); k++)
    for (int m = 0; m < (max_only ? 1 : 2); m++) {
      ops[n] = max_only ? IR_MAX : m ? IR_MEAN : IR_SUM;
      outs[n] = ok_node(c, ir_reduce(c->g, ops[n], x, AXES[k], keepdims), "reduce");
      n++;
    }
  char entry[64];
  snprintf(entry, sizeof entry, "%s_%s%s", max_only ? "max" : "sum_mean", ir_dtype_name(dt), keepdims ? "_keep" : "");
  exec *e = built(c, outs, n, entry);
  const int64_t shapes[][3] = {{2, 3, 4}, {1, 1, 1}, {3, 2, 70}, {2, 33, 3}, {1, 65, 1}, {4, 5, 6},
                               {0, 3, 5}, {3, 0, 2}, {4, 5, 0}};
  static double want[80 * 80];
  for (int s = 0; s < COUNT(shapes); s++) {
    const int64_t *sh = shapes[s];
    if (max_only && sh[0] * sh[1] * sh[2] == 0) continue;   /* refused: see the test below */
    buf in, out[14];
    in_new(&in, dt, 3, sh);
    fill_quarters(&in, s);
    char what[96];
    snprintf(what, sizeof what, "%s over (%lld, %lld, %lld)", entry, (long long)sh[0], (long long)sh[1],
             (long long)sh[2]);
    run_ok(e, out, n, &in, 1, what);
    for (int k = 0; k < n; k++) {
      unsigned axes = AXES[max_only ? k : k / 2];
      const ir_node *node = outs[k];
      reference_reduce(ops[k], dt, &in, sh, axes, want);
      int64_t count = uopc_tensor_numel(&out[k].t), expect = 1;
      for (int j = 0; j < 3; j++) expect *= axes >> j & 1u ? 1 : sh[j];
      assert_int_equal(count, expect);
      assert_int_equal(out[k].t.rank, node->rank);
      char w[160];
      snprintf(w, sizeof w, "%s: %s over axes 0x%x", what, ir_op_info_of(ops[k])->name, axes);
      for (int64_t i = 0; i < count; i++) expect_number(w, i, want[i], uopc_tensor_get(&out[k].t, i));
    }
    buf_free(&in);
    free_bufs(out, n);
  }
  exec_free(e);
  void *st = c;
  core_teardown(&st);
}

static void test_exec_sum_and_mean_over_each_axis_f32(void **state) {
  (void)state;
  reduce_case(UOPC_F32, 0, 0);
  reduce_case(UOPC_F32, 1, 0);
}

static void test_exec_sum_and_mean_over_each_axis_f64(void **state) {
  (void)state;
  reduce_case(UOPC_F64, 0, 0);
  reduce_case(UOPC_F64, 1, 0);
}

static void test_exec_max_over_each_axis_f32_and_f64(void **state) {
  (void)state;
  for (int keep = 0; keep < 2; keep++) {
    reduce_case(UOPC_F32, keep, 1);
    reduce_case(UOPC_F64, keep, 1);
  }
}

static void test_exec_max_over_an_empty_axis_is_refused(void **state) {
  core *c = *state;
  const sym_expr *a = dim(c, "a", 0, 8), *b = dim(c, "b", 0, 8), *d = dim(c, "c", 0, 8);
  const ir_node *x = input(c, "x", UOPC_F32, 3, SHAPE(a, b, d));
  const ir_node *out = ok_node(c, ir_reduce(c->g, IR_MAX, x, 2u, 0), "max");
  exec *e = built(c, &out, 1, "max_f32_axis1");
  buf in, res;
  in_new(&in, UOPC_F32, 3, (const int64_t[]){2, 0, 3});
  buf_new(&res, UOPC_F32, 2, (const int64_t[]){2, 3});
  uopc_error err = {0};
  assert_uopc_code(run(e, &res, 1, &in, 1, &err), UOPC_E_BOUNDS, err);
  assert_string_equal(err.message, "max %1 over an empty axis (extent 0): NumPy refuses it too");
  expect_tail_untouched(&res, "refused max");
  for (size_t i = 0; i < res.bytes; i++)
    if (res.mem[i] != POISON_BYTE) fail_msg("refused max: output byte %zu was written", i);
  buf_free(&in);
  buf_free(&res);
  /* Empty elsewhere is fine: max over axis 1 of (0, 4, 3) is an empty (0, 3). */
  in_new(&in, UOPC_F32, 3, (const int64_t[]){0, 4, 3});
  run_ok(e, &res, 1, &in, 1, "max over axis 1 of (0, 4, 3)");
  assert_int_equal(uopc_tensor_numel(&res.t), 0);
  buf_free(&in);
  buf_free(&res);
  exec_free(e);
}

/* Values whose sum depends on the order: magnitudes from 2^-8 to 2^8, both signs. */
static void fill_rough(buf *b, int seed) {
  uint32_t s = 2654435761u * (uint32_t)(seed + 1);
  int64_t n = uopc_tensor_numel(&b->t);
  for (int64_t i = 0; i < n; i++) {
    s = s * 1664525u + 1013904223u;
    ((float *)b->mem)[i] = ldexpf((float)(s >> 8) / 16777216.0f - 0.5f, (int)(s % 17) - 8);
  }
}

/* The banner's order, written here from its words. When the last axis (2)
 * is reduced ('lanes'): its element j goes into lane j % 32, each lane from
 * 0, then lane k += lane k + w for w = 16, 8, ..., 1, the row's result in
 * lane 0; the rows of other reduced axes add their results one at a time in
 * row-major order. When the last axis is kept ('serial'): the reduced
 * elements are added one at a time in row-major order. x is (sh[0], sh[1],
 * sh[2]), f32; at is the output element's position on the kept axes. */
static float banner_order_sum(const float *x, const int64_t *sh, unsigned axes, const int64_t *at) {
  int64_t ext[3];
  for (int k = 0; k < 3; k++) ext[k] = axes >> k & 1u ? sh[k] : 1;
  int lanes = axes & 4u, rows = 0;
  float acc = 0.0f, row = 0.0f;
  for (int64_t o0 = 0; o0 < ext[0]; o0++)
    for (int64_t o1 = 0; o1 < ext[1]; o1++) {
      int64_t i0 = axes & 1u ? o0 : at[0], i1 = axes & 2u ? o1 : at[1];
      if (!lanes) {
        for (int64_t o2 = 0; o2 < ext[2]; o2++) acc += x[(i0 * sh[1] + i1) * sh[2] + at[2]];
        continue;
      }
      float lane[32] = {0};
      for (int64_t j = 0; j < sh[2]; j++) lane[j % 32] += x[(i0 * sh[1] + i1) * sh[2] + j];
      for (int w = 16; w > 0; w /= 2)
        for (int k = 0; k < w; k++) lane[k] += lane[k + w];
      row = lane[0];
      acc += row;
      rows++;
    }
  return lanes && rows == 1 ? row : acc;
}

static void test_exec_sum_follows_the_banner_order(void **state) {
  core *c = *state;
  const sym_expr *a = dim(c, "a", 1, 128), *b = dim(c, "b", 1, 128), *d = dim(c, "c", 1, 128);
  const ir_node *x = input(c, "x", UOPC_F32, 3, SHAPE(a, b, d));
  const unsigned axes[] = {1u, 2u, 4u, 3u, 5u, 6u, 7u};
  const ir_node *outs[COUNT(axes)];
  for (int k = 0; k < COUNT(axes); k++) outs[k] = ok_node(c, ir_reduce(c->g, IR_SUM, x, axes[k], 1), "sum");
  exec *e = built(c, outs, COUNT(axes), "sum_f32_order");
  const int64_t shapes[][3] = {{3, 70, 2}, {40, 3, 65}, {2, 33, 31}, {1, 1, 100}};
  for (int s = 0; s < COUNT(shapes); s++) {
    const int64_t *sh = shapes[s];
    buf in, out[COUNT(axes)];
    in_new(&in, UOPC_F32, 3, sh);
    fill_rough(&in, s);
    char what[64];
    snprintf(what, sizeof what, "sum of rough (%lld, %lld, %lld)", (long long)sh[0], (long long)sh[1],
             (long long)sh[2]);
    run_ok(e, out, COUNT(axes), &in, 1, what);
    for (int k = 0; k < COUNT(axes); k++) {
      const float *got = (const float *)out[k].mem;
      int64_t i = 0, at[3];
      for (at[0] = 0; at[0] < (axes[k] & 1u ? 1 : sh[0]); at[0]++)
        for (at[1] = 0; at[1] < (axes[k] & 2u ? 1 : sh[1]); at[1]++)
          for (at[2] = 0; at[2] < (axes[k] & 4u ? 1 : sh[2]); at[2]++, i++) {
            float want = banner_order_sum((const float *)in.mem, sh, axes[k], at);
            if (memcmp(&want, &got[i], sizeof want) != 0)
              fail_msg("%s over axes 0x%x, element %lld: expected %.9g (the banner's order), got %.9g", what, axes[k],
                       (long long)i, want, got[i]);
          }
    }
    buf_free(&in);
    free_bufs(out, COUNT(axes));
  }
  exec_free(e);
}

static void test_exec_sum_of_bool_counts_into_i64(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 0, 64), *m = dim(c, "m", 0, 64);
  const ir_node *x = input(c, "x", UOPC_BOOL, 2, SHAPE(n, m));
  const ir_node *outs[] = {ok_node(c, ir_reduce(c->g, IR_SUM, x, 2u, 0), "row counts"),
                           ok_node(c, ir_reduce(c->g, IR_SUM, x, 3u, 0), "count")};
  exec *e = built(c, outs, 2, "count_bool_nm");
  const int64_t shapes[][2] = {{3, 40}, {0, 5}, {5, 0}, {1, 1}};
  for (int s = 0; s < COUNT(shapes); s++) {
    buf in, out[2];
    in_new(&in, UOPC_BOOL, 2, shapes[s]);
    int64_t N = shapes[s][0], M = shapes[s][1], total = 0;
    for (int64_t i = 0; i < N * M; i++) in.mem[i] = (uint8_t)((i * 7) % 3 == 0);
    run_ok(e, out, 2, &in, 1, "count");
    assert_int_equal(out[0].t.dtype, UOPC_I64);
    for (int64_t i = 0; i < N; i++) {
      int64_t want = 0;
      for (int64_t j = 0; j < M; j++) want += in.mem[i * M + j];
      total += want;
      int64_t got = ((const int64_t *)out[0].mem)[i];
      if (got != want) fail_msg("count of row %lld of (%lld, %lld): expected %lld, got %lld", (long long)i,
                                (long long)N, (long long)M, (long long)want, (long long)got);
    }
    int64_t got = *(const int64_t *)out[1].mem;
    if (got != total) fail_msg("count of (%lld, %lld): expected %lld, got %lld", (long long)N, (long long)M,
                               (long long)total, (long long)got);
    buf_free(&in);
    free_bufs(out, 2);
  }
  exec_free(e);
}

/* Reductions whose operand is a transpose, a reversed slice, a flattening
 * and a broadcast: the reduction reads through each movement. */
static void test_exec_reductions_of_moved_operands(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, 40), *m = dim(c, "m", 1, 40);
  const ir_node *x = input(c, "x", UOPC_F64, 2, SHAPE(n, m));
  const ir_node *first = ok_node(c, ir_reshape(c->g, ok_node(c, ir_select(c->g, x, 1, cst(c, 0)), "x[:, 0]"), 2,
                                               SHAPE(n, cst(c, 1))), "(n, 1)");
  const ir_node *outs[] = {
    ok_node(c, ir_reduce(c->g, IR_SUM, ok_node(c, ir_transpose(c->g, x, 0, 1), "x.T"), 2u, 0), "sum(x.T, 1)"),
    ok_node(c, ir_reduce(c->g, IR_MAX, ok_node(c, ir_slice(c->g, x, 1, NONE, NONE, -2), "x[:, ::-2]"), 2u, 1), "max"),
    ok_node(c, ir_reduce(c->g, IR_MEAN, ok_node(c, ir_reshape(c->g, x, 1, SHAPE(sym_expr_mul(c->a, m, n))), "flat"), 1u,
                         0), "mean"),
    ok_node(c, ir_reduce(c->g, IR_SUM, ok_node(c, ir_expand(c->g, first, 2, SHAPE(n, m)), "expand"), 2u, 0), "sum"),
  };
  exec *e = built(c, outs, 4, "moved_reductions_f64");
  const int64_t shapes[][2] = {{1, 1}, {3, 40}, {40, 3}, {7, 33}};
  for (int s = 0; s < COUNT(shapes); s++) {
    int64_t N = shapes[s][0], M = shapes[s][1];
    buf in, out[4];
    in_new(&in, UOPC_F64, 2, shapes[s]);
    fill_quarters(&in, s);
    const double *xv = (const double *)in.mem;
    char what[48];
    snprintf(what, sizeof what, "moved reductions (%lld, %lld)", (long long)N, (long long)M);
    run_ok(e, out, 4, &in, 1, what);
    double all = 0;
    for (int64_t j = 0; j < M; j++) {
      double col = 0;
      for (int64_t i = 0; i < N; i++) col += xv[i * M + j];
      expect_number("sum(x.T, axis 1)", j, col, uopc_tensor_get(&out[0].t, j));
      all += col;
    }
    for (int64_t i = 0; i < N; i++) {
      double mx = -INFINITY;
      for (int64_t j = M - 1; j >= 0; j -= 2) mx = np_maximum(mx, xv[i * M + j]);
      expect_number("max(x[:, ::-2], axis 1, keepdims)", i, mx, uopc_tensor_get(&out[1].t, i));
      expect_number("sum(expand(x[:, :1]), axis 1)", i, xv[i * M] * (double)M, uopc_tensor_get(&out[3].t, i));
    }
    expect_number("mean(x.reshape(-1))", 0, all / (double)(N * M), uopc_tensor_get(&out[2].t, 0));
    buf_free(&in);
    free_bufs(out, 4);
  }
  exec_free(e);
}

static void test_exec_outputs_read_earlier_outputs(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, 64);
  const ir_node *x = input(c, "x", UOPC_F32, 2, SHAPE(n, cst(c, 3)));
  const ir_node *s = ok_node(c, ir_reduce(c->g, IR_SUM, x, 1u, 0), "sum");
  const ir_node *outs[] = {s, op2(c, IR_MUL, s, konst(c, 2.0, UOPC_F32)), s};
  exec *e = built(c, outs, 3, "sum_twice_f32");
  assert_int_equal(exec_lowered(e)->n_temps, 0);                     /* out0 holds the sum */
  buf in, out[3];
  in_new(&in, UOPC_F32, 2, (const int64_t[]){5, 3});
  fill_index(&in);
  run_ok(e, out, 3, &in, 1, "outputs reading outputs");
  for (int j = 0; j < 3; j++) {
    double want = 30.0 + 5.0 * j;
    expect_number("sum", j, want, uopc_tensor_get(&out[0].t, j));
    expect_number("sum * 2", j, 2 * want, uopc_tensor_get(&out[1].t, j));
    expect_number("the same sum again", j, want, uopc_tensor_get(&out[2].t, j));
  }
  buf_free(&in);
  free_bufs(out, 3);
  exec_free(e);
}

/* ---- Matmul. */

static void matmul_case(uopc_dtype dt, int batched) {
  core *c = fresh_core();
  const sym_expr *bd = dim(c, "b", 1, 4), *n = dim(c, "n", 1, 16), *k = dim(c, "k", 0, 80), *m = dim(c, "m", 1, 16);
  const ir_node *x, *y;
  if (batched) {
    x = input(c, "x", dt, 3, SHAPE(bd, n, k));
    y = input(c, "y", dt, 3, SHAPE(bd, k, m));
  } else {
    x = input(c, "x", dt, 2, SHAPE(n, k));
    y = input(c, "y", dt, 2, SHAPE(k, m));
  }
  const ir_node *out = ok_node(c, ir_matmul(c->g, x, y), "matmul");
  char entry[48];
  snprintf(entry, sizeof entry, "matmul_%s%s", ir_dtype_name(dt), batched ? "_batched" : "");
  exec *e = built(c, &out, 1, entry);
  const int64_t sizes[][4] = {{1, 1, 1, 1}, {2, 3, 0, 2}, {1, 4, 33, 5}, {3, 7, 70, 3}, {2, 2, 5, 1}, {4, 16, 31, 16}};
  for (int s = 0; s < COUNT(sizes); s++) {
    int64_t B = batched ? sizes[s][0] : 1, N = sizes[s][1], K = sizes[s][2], M = sizes[s][3];
    buf ins[2], res;
    int r = batched ? 3 : 2;
    int64_t xs[3] = {B, N, K}, ys[3] = {B, K, M};
    in_new(&ins[0], dt, r, batched ? xs : xs + 1);
    in_new(&ins[1], dt, r, batched ? ys : ys + 1);
    int64_t nx = uopc_tensor_numel(&ins[0].t), ny = uopc_tensor_numel(&ins[1].t);
    for (int64_t i = 0; i < nx; i++) uopc_tensor_set(&ins[0].t, i, (double)(i % 7 - 3));
    for (int64_t i = 0; i < ny; i++) uopc_tensor_set(&ins[1].t, i, (double)((i * 3) % 5 - 2));
    char what[96];
    snprintf(what, sizeof what, "%s (b=%lld, n=%lld, k=%lld, m=%lld)", entry, (long long)B, (long long)N, (long long)K,
             (long long)M);
    run_ok(e, &res, 1, ins, 2, what);
    for (int64_t bb = 0; bb < B; bb++)
      for (int64_t i = 0; i < N; i++)
        for (int64_t j = 0; j < M; j++) {
          double acc = 0;
          for (int64_t q = 0; q < K; q++)
            acc += uopc_tensor_get(&ins[0].t, (bb * N + i) * K + q) * uopc_tensor_get(&ins[1].t, (bb * K + q) * M + j);
          int64_t at = (bb * N + i) * M + j;
          expect_number(what, at, acc, uopc_tensor_get(&res.t, at));
        }
    free_bufs(ins, 2);
    buf_free(&res);
  }
  exec_free(e);
  void *st = c;
  core_teardown(&st);
}

static void test_exec_matmul_2d_matches_a_reference(void **state) {
  (void)state;
  matmul_case(UOPC_F32, 0);
  matmul_case(UOPC_I64, 0);
}

static void test_exec_matmul_of_a_transpose_and_a_product(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, 16), *k = dim(c, "k", 0, 40), *m = dim(c, "m", 1, 16);
  const ir_node *x = input(c, "x", UOPC_F32, 2, SHAPE(k, n)), *y = input(c, "y", UOPC_F32, 2, SHAPE(k, m));
  const ir_node *out = ok_node(c, ir_matmul(c->g, ok_node(c, ir_transpose(c->g, x, 0, 1), "x.T"),
                                            op2(c, IR_MUL, y, konst(c, 2.0, UOPC_F32))), "x.T @ (y*2)");
  exec *e = built(c, &out, 1, "matmul_t_f32");
  const int64_t sizes[][3] = {{3, 5, 4}, {1, 0, 1}, {16, 40, 16}, {2, 33, 1}};
  for (int s = 0; s < COUNT(sizes); s++) {
    int64_t N = sizes[s][0], K = sizes[s][1], M = sizes[s][2];
    buf ins[2], res;
    in_new(&ins[0], UOPC_F32, 2, (const int64_t[]){K, N});
    in_new(&ins[1], UOPC_F32, 2, (const int64_t[]){K, M});
    fill_quarters(&ins[0], 1);
    fill_quarters(&ins[1], 2);
    run_ok(e, &res, 1, ins, 2, "x.T @ (y*2)");
    for (int64_t i = 0; i < N; i++)
      for (int64_t j = 0; j < M; j++) {
        double acc = 0;
        for (int64_t q = 0; q < K; q++)
          acc += uopc_tensor_get(&ins[0].t, q * N + i) * 2 * uopc_tensor_get(&ins[1].t, q * M + j);
        expect_number("x.T @ (y*2)", i * M + j, acc, uopc_tensor_get(&res.t, i * M + j));
      }
    free_bufs(ins, 2);
    buf_free(&res);
  }
  exec_free(e);
}

static void test_exec_matmul_batched_matches_a_reference(void **state) {
  (void)state;
  matmul_case(UOPC_F64, 1);
  matmul_case(UOPC_I32, 1);
}

/* ---- Movement: slices, reshapes of permutations, select. */

/* Python's slice(start, stop, step).indices(n): the first index and the length. */
static int64_t py_slice(int64_t n, int64_t start, int64_t stop, int64_t step, int64_t *first) {
  int64_t lower = step > 0 ? 0 : -1, upper = step > 0 ? n : n - 1;
  int64_t b[2] = {start, stop};
  for (int k = 0; k < 2; k++) {
    if (b[k] == NONE) b[k] = (k == 0) == (step < 0) ? upper : lower;
    else if (b[k] < 0) b[k] = b[k] + n < lower ? lower : b[k] + n;
    else if (b[k] > upper) b[k] = upper;
  }
  *first = b[0];
  if (step > 0) return b[1] > b[0] ? (b[1] - b[0] - 1) / step + 1 : 0;
  return b[0] > b[1] ? (b[0] - b[1] - 1) / -step + 1 : 0;
}

typedef struct slice2 { int64_t s0[3], s1[3]; } slice2;   /* (start, stop, step) per axis */

static void test_exec_slices_with_negative_steps(void **state) {
  core *c = *state;
  const sym_expr *a = dim(c, "a", 1, 8), *b = dim(c, "b", 0, 48);
  const ir_node *x = input(c, "x", UOPC_F32, 2, SHAPE(a, b));
  const slice2 cases[] = {
    {{NONE, NONE, 1}, {NONE, NONE, -1}}, {{NONE, NONE, 1}, {5, 1, -2}},     {{NONE, NONE, 1}, {-1, NONE, -3}},
    {{NONE, NONE, -2}, {1, NONE, 2}},    {{NONE, NONE, 1}, {-100, 100, -1}}, {{NONE, NONE, 1}, {100, -100, -7}},
    {{-1, -100, -1}, {-2, 0, -1}},       {{1, NONE, 1}, {3, -3, 1}},
  };
  const ir_node *outs[COUNT(cases)];
  for (int k = 0; k < COUNT(cases); k++) {
    const slice2 *s = &cases[k];
    outs[k] = ok_node(c, ir_slice(c->g, ok_node(c, ir_slice(c->g, x, 0, s->s0[0], s->s0[1], s->s0[2]), "rows"), 1,
                                  s->s1[0], s->s1[1], s->s1[2]), "cols");
  }
  exec *e = built(c, outs, COUNT(cases), "slices_f32_ab");
  const int64_t as[] = {1, 3, 8}, bs[] = {0, 1, 2, 5, 6, 7, 40};
  for (int i = 0; i < COUNT(as); i++)
    for (int j = 0; j < COUNT(bs); j++) {
      buf in, out[COUNT(cases)];
      in_new(&in, UOPC_F32, 2, (const int64_t[]){as[i], bs[j]});
      fill_index(&in);
      char what[64];
      snprintf(what, sizeof what, "slices of (%lld, %lld)", (long long)as[i], (long long)bs[j]);
      run_ok(e, out, COUNT(cases), &in, 1, what);
      for (int k = 0; k < COUNT(cases); k++) {
        const slice2 *s = &cases[k];
        int64_t r0, c0;
        int64_t rows = py_slice(as[i], s->s0[0], s->s0[1], s->s0[2], &r0);
        int64_t cols = py_slice(bs[j], s->s1[0], s->s1[1], s->s1[2], &c0);
        if (out[k].t.shape[0] != rows || out[k].t.shape[1] != cols)
          fail_msg("%s, case %d: expected shape (%lld, %lld) (Python), got (%lld, %lld)", what, k, (long long)rows,
                   (long long)cols, (long long)out[k].t.shape[0], (long long)out[k].t.shape[1]);
        for (int64_t r = 0; r < rows; r++)
          for (int64_t q = 0; q < cols; q++) {
            double want = (double)((r0 + r * s->s0[2]) * bs[j] + c0 + q * s->s1[2]);
            char w[192];
            snprintf(w, sizeof w, "%s, case %d [%lld, %lld]", what, k, (long long)r, (long long)q);
            expect_number(w, r * cols + q, want, uopc_tensor_get(&out[k].t, r * cols + q));
          }
      }
      buf_free(&in);
      free_bufs(out, COUNT(cases));
    }
  exec_free(e);
}

static void test_exec_reshape_of_a_permuted_input_unravels(void **state) {
  core *c = *state;
  const sym_expr *a = dim(c, "a", 0, 16), *b = dim(c, "b", 0, 16), *d = dim(c, "c", 0, 16);
  const ir_node *x = input(c, "x", UOPC_I32, 3, SHAPE(a, b, d));
  const ir_node *p = ok_node(c, ir_permute(c->g, x, (const int[]){2, 0, 1}), "permute");   /* (c, a, b) */
  const ir_node *outs[2] = {
    ok_node(c, ir_reshape(c->g, p, 2, SHAPE(b, sym_expr_mul(c->a, d, a))), "reshape (b, c*a)"),
    ok_node(c, ir_reshape(c->g, x, 3, SHAPE(d, b, a)), "reshape (c, b, a)"),
  };
  exec *e = built(c, outs, 2, "reshape_i32_abc");
  const int64_t shapes[][3] = {{2, 3, 4}, {1, 5, 1}, {3, 1, 7}, {4, 4, 4}, {5, 3, 2}, {0, 2, 3}};
  for (int s = 0; s < COUNT(shapes); s++) {
    const int64_t A = shapes[s][0], B = shapes[s][1], C = shapes[s][2];
    buf in, out[2];
    in_new(&in, UOPC_I32, 3, shapes[s]);
    fill_index(&in);
    char what[64];
    snprintf(what, sizeof what, "reshape of (%lld, %lld, %lld)", (long long)A, (long long)B, (long long)C);
    run_ok(e, out, 2, &in, 1, what);
    const int32_t *o0 = (const int32_t *)out[0].mem, *o1 = (const int32_t *)out[1].mem;
    int64_t f = 0;
    for (int64_t ci = 0; ci < C; ci++)        /* the permuted tensor in row-major order */
      for (int64_t ai = 0; ai < A; ai++)
        for (int64_t bi = 0; bi < B; bi++, f++)
          if (o0[f] != (ai * B + bi) * C + ci)
            fail_msg("%s: permuted, flat %lld = x[%lld, %lld, %lld]: expected %lld, got %d", what, (long long)f,
                     (long long)ai, (long long)bi, (long long)ci, (long long)((ai * B + bi) * C + ci), o0[f]);
    for (int64_t i = 0; i < A * B * C; i++)
      if (o1[i] != i)
        fail_msg("%s: (c, b, a) flat %lld: expected %lld, got %d", what, (long long)i, (long long)i, o1[i]);
    buf_free(&in);
    free_bufs(out, 2);
  }
  exec_free(e);
}

static void test_exec_select_with_negative_and_zero_indices(void **state) {
  core *c = *state;
  const sym_expr *a = dim(c, "a", 1, 16), *b = dim(c, "b", 2, 16);
  const ir_node *x = input(c, "x", UOPC_F64, 2, SHAPE(a, b));
  const ir_node *last_row = ok_node(c, ir_select(c->g, x, 0, cst(c, -1)), "x[-1]");
  const ir_node *outs[3] = {
    ok_node(c, ir_select(c->g, x, 1, cst(c, -1)), "x[:, -1]"),
    ok_node(c, ir_select(c->g, x, 0, cst(c, 0)), "x[0]"),
    ok_node(c, ir_select(c->g, last_row, 0, cst(c, 1)), "x[-1, 1]"),
  };
  exec *e = built(c, outs, 3, "select_f64_ab");
  const int64_t shapes[][2] = {{1, 2}, {3, 5}, {16, 16}, {7, 2}};
  for (int s = 0; s < COUNT(shapes); s++) {
    int64_t A = shapes[s][0], B = shapes[s][1];
    buf in, out[3];
    in_new(&in, UOPC_F64, 2, shapes[s]);
    fill_index(&in);
    char what[48];
    snprintf(what, sizeof what, "select of (%lld, %lld)", (long long)A, (long long)B);
    run_ok(e, out, 3, &in, 1, what);
    assert_int_equal(out[2].t.rank, 0);
    for (int64_t i = 0; i < A; i++) expect_number(what, i, (double)(i * B + B - 1), uopc_tensor_get(&out[0].t, i));
    for (int64_t j = 0; j < B; j++) expect_number(what, j, (double)j, uopc_tensor_get(&out[1].t, j));
    expect_number(what, 0, (double)((A - 1) * B + 1), uopc_tensor_get(&out[2].t, 0));
    buf_free(&in);
    free_bufs(out, 3);
  }
  exec_free(e);
}

/* ---- Comparisons, where, casts. */

static void test_exec_comparisons_and_where(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 0, 64);
  const ir_node *x = input(c, "x", UOPC_F32, 1, SHAPE(n)), *y = input(c, "y", UOPC_F32, 1, SHAPE(n));
  const ir_op cmp[] = {IR_LT, IR_LE, IR_GT, IR_GE, IR_EQ, IR_NE};
  const ir_node *outs[8];
  for (int k = 0; k < 6; k++) outs[k] = op2(c, cmp[k], x, y);
  outs[6] = ok_node(c, ir_where(c->g, outs[0], x, op2(c, IR_MUL, y, konst(c, 2.0, UOPC_F32))), "where");
  outs[7] = ok_node(c, ir_where(c->g, op2(c, IR_GT, x, konst(c, 0.0, UOPC_F32)), x, konst(c, -1.5, UOPC_F32)), "where");
  exec *e = built(c, outs, 8, "compare_f32_n");
  const float xs[] = {1.0f, 2.0f, -3.0f, NAN, 5.0f, 0.0f, -0.0f, INFINITY, 7.0f, -1.0f};
  const float ys[] = {2.0f, 2.0f, -4.0f, 1.0f, NAN, -0.0f, 0.0f, INFINITY, NAN, -1.0f};
  const int64_t n10 = COUNT(xs);
  buf ins[2], out[8];
  in_new(&ins[0], UOPC_F32, 1, &n10);
  in_new(&ins[1], UOPC_F32, 1, &n10);
  memcpy(ins[0].mem, xs, sizeof xs);
  memcpy(ins[1].mem, ys, sizeof ys);
  run_ok(e, out, 8, ins, 2, "comparisons");
  for (int i = 0; i < n10; i++) {
    float a = xs[i], b = ys[i];
    const int want[6] = {a < b, a <= b, a > b, a >= b, a == b, a != b};
    for (int k = 0; k < 6; k++) {
      uint8_t got = out[k].mem[i];
      if (got != want[k])
        fail_msg("%s(%g, %g): expected %d, got %d", ir_op_info_of(cmp[k])->name, a, b, want[k], got);
    }
    char w[64];
    snprintf(w, sizeof w, "where(x < y, x, y*2) at x=%g y=%g", a, b);
    expect_number(w, i, a < b ? a : (double)(b * 2.0f), uopc_tensor_get(&out[6].t, i));
    snprintf(w, sizeof w, "where(x > 0, x, -1.5) at x=%g", a);
    expect_number(w, i, a > 0.0f ? a : -1.5, uopc_tensor_get(&out[7].t, i));
  }
  free_bufs(ins, 2);
  free_bufs(out, 8);
  exec_free(e);
}

static void test_exec_casts_to_and_from_bool_and_between_widths(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 0, 64);
  const ir_node *x = input(c, "x", UOPC_F32, 1, SHAPE(n));
  const ir_node *z = input(c, "z", UOPC_I64, 1, SHAPE(n));
  const ir_node *b = input(c, "b", UOPC_BOOL, 1, SHAPE(n));
  const ir_node *xb = ok_node(c, ir_cast(c->g, x, UOPC_BOOL), "x to bool");
  const ir_node *zi = ok_node(c, ir_cast(c->g, z, UOPC_I32), "z to i32");
  const ir_node *outs[] = {
    ok_node(c, ir_cast(c->g, x, UOPC_I32), "x to i32"),      /* 0: toward zero */
    xb,                                                       /* 1 */
    ok_node(c, ir_cast(c->g, xb, UOPC_F32), "bool to f32"),   /* 2 */
    ok_node(c, ir_cast(c->g, x, UOPC_F64), "x to f64"),       /* 3 */
    zi,                                                       /* 4: wraps */
    ok_node(c, ir_cast(c->g, zi, UOPC_BOOL), "i32 to bool"),  /* 5 */
    ok_node(c, ir_cast(c->g, b, UOPC_I32), "bool to i32"),    /* 6 */
    ok_node(c, ir_cast(c->g, b, UOPC_F64), "bool to f64"),    /* 7 */
    ok_node(c, ir_cast(c->g, zi, UOPC_I64), "i32 to i64"),    /* 8 */
  };
  exec *e = built(c, outs, COUNT(outs), "casts_n");
  const float xs[] = {3.7f, -3.7f, -0.0f, NAN, 0.5f, 0.0f, 1e9f, -2.0f};
  const int64_t zs[] = {(INT64_C(1) << 32) + 5, INT64_C(1) << 31, -(INT64_C(1) << 31) - 1, 0, -1, 42, INT64_MIN, 256};
  const uint8_t bs[] = {1, 0, 1, 1, 0, 0, 1, 0};
  const int64_t n8 = COUNT(xs);
  buf ins[3], out[COUNT(outs)];
  in_new(&ins[0], UOPC_F32, 1, &n8);
  in_new(&ins[1], UOPC_I64, 1, &n8);
  in_new(&ins[2], UOPC_BOOL, 1, &n8);
  memcpy(ins[0].mem, xs, sizeof xs);
  memcpy(ins[1].mem, zs, sizeof zs);
  memcpy(ins[2].mem, bs, sizeof bs);
  run_ok(e, out, COUNT(outs), ins, 3, "casts");
  /* From NumPy: x.astype(int32) (NaN excluded: undefined), x.astype(bool), z.astype(int32). */
  const int32_t x_i32[] = {3, -3, 0, 0, 0, 0, 1000000000, -2};
  const uint8_t x_bool[] = {1, 1, 0, 1, 1, 0, 1, 1};
  const int32_t z_i32[] = {5, INT32_MIN, INT32_MAX, 0, -1, 42, 0, 256};
  for (int i = 0; i < n8; i++) {
    const int32_t *o0 = (const int32_t *)out[0].mem, *o4 = (const int32_t *)out[4].mem;
    const int32_t *o6 = (const int32_t *)out[6].mem;
    const int64_t *o8 = (const int64_t *)out[8].mem;
    if (i != 3 && o0[i] != x_i32[i]) fail_msg("cast(%g, i32): expected %d, got %d", xs[i], x_i32[i], o0[i]);
    if (out[1].mem[i] != x_bool[i]) fail_msg("cast(%g, bool): expected %d, got %d", xs[i], x_bool[i], out[1].mem[i]);
    expect_number("cast(cast(x, bool), f32)", i, x_bool[i], uopc_tensor_get(&out[2].t, i));
    expect_number("cast(x, f64)", i, xs[i], uopc_tensor_get(&out[3].t, i));
    if (o4[i] != z_i32[i])
      fail_msg("cast(%lld, i32): expected %d (NumPy wraps), got %d", (long long)zs[i], z_i32[i], o4[i]);
    if (out[5].mem[i] != (z_i32[i] != 0))
      fail_msg("cast(%d, bool): expected %d, got %d", z_i32[i], z_i32[i] != 0, out[5].mem[i]);
    if (o6[i] != bs[i]) fail_msg("cast(bool %d, i32): got %d", bs[i], o6[i]);
    expect_number("cast(bool, f64)", i, bs[i], uopc_tensor_get(&out[7].t, i));
    if (o8[i] != z_i32[i]) fail_msg("cast(i32 %d, i64): got %lld", z_i32[i], (long long)o8[i]);
  }
  free_bufs(ins, 3);
  free_bufs(out, COUNT(outs));
  exec_free(e);
}

/* ---- Integers wrap as NumPy's do: the kernel is compiled with UBSan, so
 * signed overflow in the generated code would abort the test. */

static const uopc_program_options UBSAN = {.opt_flags = "-O2 -fsanitize=undefined -fno-sanitize-recover=all"};

static int32_t wrap32(uint32_t v) { return (int32_t)v; }
static int64_t wrap64(uint64_t v) { return (int64_t)v; }

static void test_exec_int32_ops_wrap_as_numpy(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 0, 64);
  const ir_node *x = input(c, "x", UOPC_I32, 1, SHAPE(n)), *y = input(c, "y", UOPC_I32, 1, SHAPE(n));
  const ir_node *outs[] = {
    op2(c, IR_ADD, x, y), op2(c, IR_SUB, x, y), op2(c, IR_MUL, x, y), op1(c, IR_NEG, x), op1(c, IR_ABS, x),
    op2(c, IR_MAXIMUM, x, y), op2(c, IR_MINIMUM, x, y), op2(c, IR_ADD, x, konst(c, 1, UOPC_I32)),
    ok_node(c, ir_reduce(c->g, IR_SUM, x, 1u, 0), "sum"),
  };
  exec *e = built_with(c, outs, COUNT(outs), "int32_ops_n", &UBSAN);
  const int32_t xs[] = {INT32_MAX, INT32_MIN, -1, 0, 1, 65536, 123456789, -7, INT32_MAX, INT32_MIN};
  const int32_t ys[] = {1, -1, INT32_MIN, INT32_MAX, 65536, 65536, 100, 3, INT32_MAX, INT32_MIN};
  const int64_t n10 = COUNT(xs);
  buf ins[2], out[COUNT(outs)];
  in_new(&ins[0], UOPC_I32, 1, &n10);
  in_new(&ins[1], UOPC_I32, 1, &n10);
  memcpy(ins[0].mem, xs, sizeof xs);
  memcpy(ins[1].mem, ys, sizeof ys);
  run_ok(e, out, COUNT(outs), ins, 2, "int32 ops");
  int64_t sum = 0;
  for (int i = 0; i < n10; i++) {
    uint32_t a = (uint32_t)xs[i], b = (uint32_t)ys[i];
    const int32_t want[] = {wrap32(a + b), wrap32(a - b), wrap32(a * b), wrap32(0u - a),
                            xs[i] < 0 ? wrap32(0u - a) : xs[i], xs[i] > ys[i] ? xs[i] : ys[i],
                            xs[i] < ys[i] ? xs[i] : ys[i], wrap32(a + 1u)};
    const char *names[] = {"x + y", "x - y", "x * y", "-x", "abs(x)", "maximum", "minimum", "x + 1"};
    for (int k = 0; k < 8; k++) {
      int32_t got = ((const int32_t *)out[k].mem)[i];
      if (got != want[k]) fail_msg("%s at x=%d y=%d: expected %d, got %d", names[k], xs[i], ys[i], want[k], got);
    }
    sum += xs[i];
  }
  assert_int_equal(((const int32_t *)out[7].mem)[0], INT32_MIN);    /* INT32_MAX + 1 */
  assert_int_equal(((const int32_t *)out[3].mem)[1], INT32_MIN);    /* -INT32_MIN */
  assert_int_equal(((const int32_t *)out[4].mem)[1], INT32_MIN);    /* abs(INT32_MIN) */
  assert_int_equal(out[8].t.dtype, UOPC_I64);
  int64_t got = *(const int64_t *)out[8].mem;
  if (got != sum)
    fail_msg("sum of int32 into int64: expected %lld (no wrap), got %lld", (long long)sum, (long long)got);
  free_bufs(ins, 2);
  free_bufs(out, COUNT(outs));
  exec_free(e);
}

static void test_exec_int64_ops_wrap_as_numpy(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 0, 64);
  const ir_node *x = input(c, "x", UOPC_I64, 1, SHAPE(n)), *y = input(c, "y", UOPC_I64, 1, SHAPE(n));
  const ir_node *outs[] = {op2(c, IR_ADD, x, y), op2(c, IR_MUL, x, y), op1(c, IR_NEG, x),
                           ok_node(c, ir_reduce(c->g, IR_SUM, x, 1u, 0), "sum"),
                           ok_node(c, ir_reduce(c->g, IR_MAX, x, 1u, 0), "max")};
  exec *e = built_with(c, outs, COUNT(outs), "int64_ops_n", &UBSAN);
  const int64_t xs[] = {INT64_MAX, INT64_MIN, -1, INT64_C(1) << 40, 3, INT64_MAX};
  const int64_t ys[] = {1, -1, INT64_MIN, INT64_C(1) << 30, -5, INT64_MAX};
  const int64_t n6 = COUNT(xs);
  buf ins[2], out[COUNT(outs)];
  in_new(&ins[0], UOPC_I64, 1, &n6);
  in_new(&ins[1], UOPC_I64, 1, &n6);
  memcpy(ins[0].mem, xs, sizeof xs);
  memcpy(ins[1].mem, ys, sizeof ys);
  run_ok(e, out, COUNT(outs), ins, 2, "int64 ops");
  uint64_t sum = 0;
  for (int i = 0; i < n6; i++) {
    uint64_t a = (uint64_t)xs[i], b = (uint64_t)ys[i];
    const int64_t want[] = {wrap64(a + b), wrap64(a * b), wrap64(0u - a)};
    for (int k = 0; k < 3; k++) {
      int64_t got = ((const int64_t *)out[k].mem)[i];
      if (got != want[k])
        fail_msg("int64 op %d at x=%lld y=%lld: expected %lld, got %lld", k, (long long)xs[i], (long long)ys[i],
                 (long long)want[k], (long long)got);
    }
    sum += a;
  }
  assert_true(((const int64_t *)out[0].mem)[0] == INT64_MIN);       /* INT64_MAX + 1 */
  int64_t got = *(const int64_t *)out[3].mem;
  if (got != wrap64(sum))
    fail_msg("sum of int64: expected %lld (wrapped), got %lld", (long long)wrap64(sum), (long long)got);
  assert_true(*(const int64_t *)out[4].mem == INT64_MAX);
  free_bufs(ins, 2);
  free_bufs(out, COUNT(outs));
  exec_free(e);
}

/* ---- NaN. */

static void nan_case(uopc_dtype dt) {
  core *c = fresh_core();
  const sym_expr *n = dim(c, "n", 1, 128);
  const ir_node *x = input(c, "x", dt, 1, SHAPE(n)), *y = input(c, "y", dt, 1, SHAPE(n));
  const ir_node *outs[] = {op2(c, IR_MAXIMUM, x, y), op2(c, IR_MINIMUM, x, y),
                           ok_node(c, ir_reduce(c->g, IR_MAX, x, 1u, 0), "max"),
                           ok_node(c, ir_reduce(c->g, IR_MAX, y, 1u, 1), "max keepdims")};
  exec *e = built(c, outs, 4, dt == UOPC_F32 ? "nan_f32_n" : "nan_f64_n");
  /* NaN first, in the lanes' middle, in the tail, nowhere; -inf and signed zeros. */
  const struct { int64_t n, nan_x, nan_y; } cases[] = {{1, 0, -1}, {5, -1, 0}, {41, 40, 31}, {70, 33, 69},
                                                       {64, -1, -1}, {3, -1, -1}, {100, 0, 99}};
  for (int s = 0; s < COUNT(cases); s++) {
    buf ins[2], out[4];
    in_new(&ins[0], dt, 1, &cases[s].n);
    in_new(&ins[1], dt, 1, &cases[s].n);
    for (int64_t i = 0; i < cases[s].n; i++) {
      uopc_tensor_set(&ins[0].t, i, i % 3 == 0 ? -INFINITY : (double)((i * 11) % 17) - 8.0);
      uopc_tensor_set(&ins[1].t, i, i % 2 ? -0.0 : (double)((i * 5) % 9) - 4.0);
    }
    if (cases[s].n > 2) uopc_tensor_set(&ins[0].t, 2, 0.0);     /* maximum(0, -0) is -0, as NumPy */
    if (cases[s].nan_x >= 0) uopc_tensor_set(&ins[0].t, cases[s].nan_x, NAN);
    if (cases[s].nan_y >= 0) uopc_tensor_set(&ins[1].t, cases[s].nan_y, NAN);
    char what[64];
    snprintf(what, sizeof what, "%s n=%lld", ir_dtype_name(dt), (long long)cases[s].n);
    run_ok(e, out, 4, ins, 2, what);
    double mx = -INFINITY, my = -INFINITY;
    for (int64_t i = 0; i < cases[s].n; i++) {
      double a = uopc_tensor_get(&ins[0].t, i), b = uopc_tensor_get(&ins[1].t, i);
      char w[192];
      snprintf(w, sizeof w, "%s: maximum(%g, %g)", what, a, b);
      expect_number(w, i, np_maximum(a, b), uopc_tensor_get(&out[0].t, i));
      snprintf(w, sizeof w, "%s: minimum(%g, %g)", what, a, b);
      expect_number(w, i, np_minimum(a, b), uopc_tensor_get(&out[1].t, i));
      mx = isnan(mx) || isnan(a) ? NAN : a > mx ? a : mx;
      my = isnan(my) || isnan(b) ? NAN : b > my ? b : my;
    }
    char w[192];
    snprintf(w, sizeof w, "%s: max(x) with NaN at %lld", what, (long long)cases[s].nan_x);
    expect_number(w, 0, mx, uopc_tensor_get(&out[2].t, 0));
    snprintf(w, sizeof w, "%s: max(y, keepdims) with NaN at %lld", what, (long long)cases[s].nan_y);
    if (!(isnan(my) ? isnan(uopc_tensor_get(&out[3].t, 0)) : uopc_tensor_get(&out[3].t, 0) == my))
      fail_msg("%s: expected %g, got %g", w, my, uopc_tensor_get(&out[3].t, 0));
    free_bufs(ins, 2);
    free_bufs(out, 4);
  }
  exec_free(e);
  void *st = c;
  core_teardown(&st);
}

static void test_exec_nan_propagates_through_maximum_minimum_and_max(void **state) {
  (void)state;
  nan_case(UOPC_F32);
  nan_case(UOPC_F64);
}

/* ---- Temporaries, index widths, deep chains. */

static void test_exec_temporaries_in_scratch(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 0, 100);
  const ir_node *x = input(c, "x", UOPC_F32, 2, SHAPE(n, cst(c, 4)));
  const ir_node *rows = ok_node(c, ir_reduce(c->g, IR_SUM, x, 2u, 0), "row sums");         /* (n) */
  const ir_node *cols = ok_node(c, ir_reduce(c->g, IR_MAX, x, 1u, 0), "column maxima");    /* (4) */
  const ir_node *col = ok_node(c, ir_reshape(c->g, rows, 2, SHAPE(n, cst(c, 1))), "(n, 1)");
  const ir_node *out = op2(c, IR_SUB, x, op2(c, IR_MUL, col, cols));
  exec *e = built(c, &out, 1, "temps_f32_n");
  assert_int_equal(exec_lowered(e)->n_temps, 2);
  assert_string_equal(exec_source(e), exec_lowered(e)->source.data);
  const int64_t sizes[] = {1, 2, 17, 100};
  for (int s = 0; s < COUNT(sizes); s++) {
    int64_t N = sizes[s];
    buf in, res;
    in_new(&in, UOPC_F32, 2, (const int64_t[]){N, 4});
    fill_quarters(&in, s);
    char what[32];
    snprintf(what, sizeof what, "temporaries n=%lld", (long long)N);
    run_ok(e, &res, 1, &in, 1, what);
    const float *xv = (const float *)in.mem, *got = (const float *)res.mem;
    for (int64_t i = 0; i < N; i++)
      for (int j = 0; j < 4; j++) {
        float rs = 0, cm = -INFINITY;
        for (int q = 0; q < 4; q++) rs += xv[i * 4 + q];
        for (int64_t r = 0; r < N; r++) cm = xv[r * 4 + j] > cm ? xv[r * 4 + j] : cm;
        float want = xv[i * 4 + j] - rs * cm;
        expect_number(what, i * 4 + j, want, got[i * 4 + j]);
      }
    buf_free(&in);
    buf_free(&res);
  }
  exec_free(e);
}

static void test_exec_runs_a_64_bit_index_program(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, INT64_C(1) << 40);
  const ir_node *x = input(c, "x", UOPC_F32, 2, SHAPE(n, cst(c, 3)));
  const ir_node *outs[] = {op1(c, IR_NEG, x), ok_node(c, ir_reduce(c->g, IR_SUM, x, 1u, 0), "sum")};
  exec *e = built(c, outs, 2, "neg_sum_f32_n64");
  assert_int_equal(exec_lowered(e)->index.bits, 64);
  assert_string_equal(exec_lowered(e)->signature, "pppl");
  buf in, out[2];
  in_new(&in, UOPC_F32, 2, (const int64_t[]){5, 3});
  fill_index(&in);
  run_ok(e, out, 2, &in, 1, "64-bit index n=5");
  for (int64_t i = 0; i < 15; i++) expect_number("neg", i, -(double)i, uopc_tensor_get(&out[0].t, i));
  for (int j = 0; j < 3; j++)      /* column j: 3i + j for i < 5 */
    expect_number("sum over n", j, (double)(30 + 5 * j), uopc_tensor_get(&out[1].t, j));
  buf_free(&in);
  free_bufs(out, 2);
  exec_free(e);
}

static void test_exec_chain_at_the_nesting_limit_runs(void **state) {
  core *c = *state;
  const ir_node *x = input(c, "x", UOPC_F32, 1, SHAPE(dim(c, "n", 0, 64)));
  const ir_node *one = konst(c, 1.0, UOPC_F32);
  const ir_node *y = x;
  for (int k = 0; k < 4096; k++) y = op2(c, IR_ADD, y, one);
  const uopc_program_options quick = {.opt_flags = "-O0"};
  exec *e = built_with(c, &y, 1, "chain_4096_adds", &quick);
  buf in, res;
  in_new(&in, UOPC_F32, 1, (const int64_t[]){9});
  fill_quarters(&in, 1);
  run_ok(e, &res, 1, &in, 1, "4096 adds");
  for (int64_t i = 0; i < 9; i++)
    expect_number("x + 1 + ... + 1", i, uopc_tensor_get(&in.t, i) + 4096.0, uopc_tensor_get(&res.t, i));
  buf_free(&in);
  buf_free(&res);
  exec_free(e);
}

static void test_exec_view_with_a_constant_stride(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 0, 32);
  const ir_node *x = ok_node(c, ir_input_view(c->g, "x", UOPC_F32, 1, SHAPE(n), SHAPE(cst(c, 2)), NULL), "x[::2]");
  const ir_node *out = op1(c, IR_NEG, x);
  exec *e = built(c, &out, 1, "neg_stride2_f32");
  buf base, res;
  in_new(&base, UOPC_F32, 1, (const int64_t[]){12});
  fill_index(&base);
  uopc_tensor two, three;
  uopc_error err = {0};
  assert_uopc_ok(uopc_tensor_slice(&two, &base.t, 0, 1, NONE, 2, &err), err);      /* 1, 3, ..., 11 */
  assert_uopc_ok(uopc_tensor_slice(&three, &base.t, 0, NONE, NONE, 3, &err), err);
  buf_new(&res, UOPC_F32, 1, (const int64_t[]){6});
  uopc_tensor *outs[1] = {&res.t};
  const uopc_tensor *ins[1] = {&two};
  assert_uopc_ok(exec_run(e, outs, 1, ins, 1, &err), err);
  expect_tail_untouched(&res, "neg(x[1::2])");
  for (int i = 0; i < 6; i++) expect_number("neg(x[1::2])", i, -(2.0 * i + 1), uopc_tensor_get(&res.t, i));
  ins[0] = &three;
  buf_free(&res);
  buf_new(&res, UOPC_F32, 1, (const int64_t[]){4});
  outs[0] = &res.t;
  assert_uopc_code(exec_run(e, outs, 1, ins, 1, &err), UOPC_E_BOUNDS, err);
  assert_string_equal(err.message, "input 'x' stride 0 is 3, the graph needs 2");
  uopc_tensor_release(&two);
  uopc_tensor_release(&three);
  buf_free(&res);
  buf_free(&base);
  exec_free(e);
}

static void test_exec_scalar_input_broadcasts(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 0, 32);
  const ir_node *k = input(c, "k", UOPC_F64, 0, NULL), *y = input(c, "y", UOPC_F64, 1, SHAPE(n));
  const ir_node *outs[] = {op2(c, IR_SUB, y, k), op2(c, IR_MUL, k, k)};
  exec *e = built(c, outs, 2, "scalar_f64");
  buf ins[2], out[2];
  in_new(&ins[0], UOPC_F64, 0, NULL);
  in_new(&ins[1], UOPC_F64, 1, (const int64_t[]){5});
  uopc_tensor_set(&ins[0].t, 0, 2.5);
  fill_index(&ins[1]);
  run_ok(e, out, 2, ins, 2, "y - k, k * k");
  for (int i = 0; i < 5; i++) expect_number("y - k", i, i - 2.5, uopc_tensor_get(&out[0].t, i));
  assert_int_equal(out[1].t.rank, 0);
  expect_number("k * k", 0, 6.25, uopc_tensor_get(&out[1].t, 0));
  free_bufs(ins, 2);
  free_bufs(out, 2);
  exec_free(e);
}

/* ---- The shape binder. */

/* out = x + y: x a view (n, m) with strides (s, 1) and offset o, y contiguous (m). */
static exec *view_program(core *c) {
  const sym_expr *n = dim(c, "n", 0, 32), *m = dim(c, "m", 1, 32), *s = dim(c, "s", -1000, 1000),
                 *o = dim(c, "o", 0, 10000);
  const ir_node *x = ok_node(c, ir_input_view(c->g, "x", UOPC_F32, 2, SHAPE(n, m), SHAPE(s, cst(c, 1)), o), "view");
  const ir_node *y = input(c, "y", UOPC_F32, 1, SHAPE(m));
  const ir_node *out = op2(c, IR_ADD, x, y);
  return built(c, &out, 1, "add_view_f32");
}

static int64_t bound(const sym_binding *b, const char *name) {
  int at = sym_binding_find(b, name);
  if (at < 0) fail_msg("dim '%s' is not bound", name);
  return b->values[at];
}

static void test_exec_bind_reads_dims_from_extents_strides_and_offset(void **state) {
  core *c = *state;
  exec *e = view_program(c);
  buf base, ym, res;
  in_new(&base, UOPC_F32, 2, (const int64_t[]){10, 12});
  fill_index(&base);
  uopc_tensor rows, view, flipped;
  uopc_error err = {0};
  assert_uopc_ok(uopc_tensor_slice(&rows, &base.t, 0, 2, 8, 2, &err), err);     /* rows 2, 4, 6 */
  assert_uopc_ok(uopc_tensor_slice(&view, &rows, 1, 1, 6, 1, &err), err);       /* columns 1..5 */
  assert_uopc_ok(uopc_tensor_slice(&flipped, &view, 0, NONE, NONE, -1, &err), err);   /* rows 6, 4, 2 */
  in_new(&ym, UOPC_F32, 1, (const int64_t[]){5});
  for (int j = 0; j < 5; j++) uopc_tensor_set(&ym.t, j, 1000.0 * (j + 1));
  const struct { const uopc_tensor *t; int64_t s, o, first_row, row_step; } cases[] = {
    {&view, 24, 25, 2, 2}, {&flipped, -24, 73, 6, -2}};
  for (int k = 0; k < 2; k++) {
    const uopc_tensor *ins[2] = {cases[k].t, &ym.t};
    sym_binding b;
    assert_uopc_ok(exec_bind(e, ins, 2, &b, &err), err);
    assert_int_equal(bound(&b, "n"), 3);
    assert_int_equal(bound(&b, "m"), 5);
    assert_int_equal(bound(&b, "s"), cases[k].s);
    assert_int_equal(bound(&b, "o"), cases[k].o);
    buf_new(&res, UOPC_F32, 2, (const int64_t[]){3, 5});
    uopc_tensor *outs[1] = {&res.t};
    assert_uopc_ok(exec_run(e, outs, 1, ins, 2, &err), err);
    expect_tail_untouched(&res, "view + y");
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 5; j++) {
        double want = (double)((cases[k].first_row + cases[k].row_step * i) * 12 + 1 + j) + 1000.0 * (j + 1);
        expect_number(k ? "flipped view + y" : "view + y", i * 5 + j, want, uopc_tensor_get(&res.t, i * 5 + j));
      }
    buf_free(&res);
  }
  uopc_tensor_release(&flipped);
  uopc_tensor_release(&view);
  uopc_tensor_release(&rows);
  buf_free(&ym);
  buf_free(&base);
  exec_free(e);
}

/* out = x + y over (n); x, y of the given lengths. */
static exec *add_program(core *c, int64_t hi) {
  const sym_expr *n = dim(c, "n", 1, hi);
  const ir_node *x = input(c, "x", UOPC_F32, 1, SHAPE(n)), *y = input(c, "y", UOPC_F32, 1, SHAPE(n));
  const ir_node *out = op2(c, IR_ADD, x, y);
  return built(c, &out, 1, "add_f32_n");
}

static int bind_lengths(exec *e, int64_t nx, int64_t ny, uopc_error *err) {
  buf ins[2];
  in_new(&ins[0], UOPC_F32, 1, &nx);
  in_new(&ins[1], UOPC_F32, 1, &ny);
  sym_binding b;
  const uopc_tensor *t[2] = {&ins[0].t, &ins[1].t};
  int rc = exec_bind(e, t, 2, &b, err);
  free_bufs(ins, 2);
  return rc;
}

static void test_exec_bind_rejects_one_dim_bound_to_two_values(void **state) {
  core *c = *state;
  exec *e = add_program(c, 64);
  uopc_error err = {0};
  assert_uopc_code(bind_lengths(e, 4, 5, &err), UOPC_E_BOUNDS, err);
  assert_string_equal(err.message, "input 'y' axis 0 is 5, but dim 'n' is 4 from input 'x' axis 0");
  exec_free(e);
}

static void test_exec_bind_rejects_a_dim_outside_its_bounds(void **state) {
  core *c = *state;
  exec *e = add_program(c, 64);
  uopc_error err = {0};
  assert_uopc_code(bind_lengths(e, 65, 65, &err), UOPC_E_BOUNDS, err);
  assert_string_equal(err.message, "input 'x' axis 0: dim 'n' = 65 outside [1, 64]");
  assert_uopc_ok(bind_lengths(e, 64, 64, &err), err);
  exec_free(e);
}

static void test_exec_bind_rejects_a_dtype_mismatch(void **state) {
  core *c = *state;
  exec *e = add_program(c, 64);
  buf ins[2];
  int64_t n = 4;
  in_new(&ins[0], UOPC_F32, 1, &n);
  in_new(&ins[1], UOPC_F64, 1, &n);
  const uopc_tensor *t[2] = {&ins[0].t, &ins[1].t};
  sym_binding b;
  uopc_error err = {0};
  assert_uopc_code(exec_bind(e, t, 2, &b, &err), UOPC_E_DTYPE, err);
  assert_string_equal(err.message, "input 'y' is f64, the graph takes f32");
  free_bufs(ins, 2);
  exec_free(e);
}

static void test_exec_bind_rejects_a_strided_view_for_a_contiguous_input(void **state) {
  core *c = *state;
  exec *e = add_program(c, 64);
  buf ins[2];
  int64_t n8 = 8, n4 = 4;
  in_new(&ins[0], UOPC_F32, 1, &n8);
  in_new(&ins[1], UOPC_F32, 1, &n4);
  uopc_tensor every_other;
  uopc_error err = {0};
  assert_uopc_ok(uopc_tensor_slice(&every_other, &ins[0].t, 0, NONE, NONE, 2, &err), err);
  const uopc_tensor *t[2] = {&every_other, &ins[1].t};
  sym_binding b;
  assert_uopc_code(exec_bind(e, t, 2, &b, &err), UOPC_E_LAYOUT, err);
  assert_contains(err.message, "input 'x' is not contiguous");
  uopc_tensor_release(&every_other);
  free_bufs(ins, 2);
  exec_free(e);
}

static void test_exec_bind_rejects_a_wrong_rank_and_count(void **state) {
  core *c = *state;
  exec *e = add_program(c, 64);
  buf ins[2];
  in_new(&ins[0], UOPC_F32, 1, (const int64_t[]){4});
  in_new(&ins[1], UOPC_F32, 2, (const int64_t[]){2, 2});
  const uopc_tensor *t[2] = {&ins[0].t, &ins[1].t};
  sym_binding b;
  uopc_error err = {0};
  assert_uopc_code(exec_bind(e, t, 2, &b, &err), UOPC_E_INVALID, err);
  assert_string_equal(err.message, "input 'y' has rank 2, the graph takes rank 1");
  assert_uopc_code(exec_bind(e, t, 1, &b, &err), UOPC_E_INVALID, err);
  assert_string_equal(err.message, "'add_f32_n' takes 2 inputs, not 1");
  free_bufs(ins, 2);
  exec_free(e);
}

static void test_exec_bind_checks_a_derived_extent(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, 64);
  const ir_node *x = input(c, "x", UOPC_F32, 1, SHAPE(n));
  const ir_node *y = input(c, "y", UOPC_F32, 1, SHAPE(sym_expr_mul(c->a, n, cst(c, 2))));
  const ir_node *outs[] = {op1(c, IR_NEG, x), op1(c, IR_NEG, y)};
  exec *e = built(c, outs, 2, "neg2_f32_n");
  uopc_error err = {0};
  assert_uopc_code(bind_lengths(e, 4, 9, &err), UOPC_E_BOUNDS, err);
  assert_string_equal(err.message, "input 'y' axis 0 is 9, the graph needs n*2 = 8");
  assert_uopc_ok(bind_lengths(e, 4, 8, &err), err);
  exec_free(e);
}

static void test_exec_bind_rejects_a_dim_no_input_determines(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, 64), *m = dim(c, "m", 1, 8);
  const ir_node *x = input(c, "x", UOPC_F32, 1, SHAPE(n));
  const ir_node *out = ok_node(c, ir_expand(c->g, x, 2, SHAPE(m, n)), "expand");
  exec *e = built(c, &out, 1, "expand_f32_mn");
  buf in, res;
  in_new(&in, UOPC_F32, 1, (const int64_t[]){4});
  buf_new(&res, UOPC_F32, 2, (const int64_t[]){2, 4});
  uopc_error err = {0};
  assert_uopc_code(run(e, &res, 1, &in, 1, &err), UOPC_E_UNBOUND, err);
  assert_contains(err.message, "dim 'm'");
  expect_tail_untouched(&res, "unbound");
  buf_free(&in);
  buf_free(&res);
  exec_free(e);
}

/* Runs add_f32_n on x, y of length 4 into out; the refusal's code and message. */
static void expect_run_refused(exec *e, uopc_tensor *const *outs, int n_out, const uopc_tensor *x,
                               const uopc_tensor *y, int code, const char *message) {
  const uopc_tensor *ins[2] = {x, y};
  uopc_error err = {0};
  int64_t calls = uopc_counter_get("calls add_f32_n");
  assert_uopc_code(exec_run(e, outs, n_out, ins, 2, &err), code, err);
  assert_string_equal(err.message, message);
  assert_int_equal(uopc_counter_get("calls add_f32_n"), calls);     /* the kernel never ran */
}

static void test_exec_run_rejects_an_output_of_the_wrong_shape(void **state) {
  core *c = *state;
  exec *e = add_program(c, 64);
  buf x, y, res;
  in_new(&x, UOPC_F32, 1, (const int64_t[]){4});
  in_new(&y, UOPC_F32, 1, (const int64_t[]){4});
  buf_new(&res, UOPC_F32, 1, (const int64_t[]){5});
  uopc_tensor *outs[1] = {&res.t};
  expect_run_refused(e, outs, 1, &x.t, &y.t, UOPC_E_BOUNDS, "output 0 has shape (5), this call makes (4)");
  buf_free(&res);
  buf_new(&res, UOPC_F32, 2, (const int64_t[]){2, 2});
  expect_run_refused(e, outs, 1, &x.t, &y.t, UOPC_E_BOUNDS, "output 0 has shape (2, 2), this call makes (4)");
  buf_free(&res);
  buf_new(&res, UOPC_I32, 1, (const int64_t[]){4});
  expect_run_refused(e, outs, 1, &x.t, &y.t, UOPC_E_DTYPE, "output 0 is i32, the graph makes f32");
  expect_tail_untouched(&res, "refused");
  buf_free(&res);
  buf_free(&x);
  buf_free(&y);
  exec_free(e);
}

static void test_exec_run_rejects_a_non_contiguous_output(void **state) {
  core *c = *state;
  exec *e = add_program(c, 64);
  buf x, y, big;
  in_new(&x, UOPC_F32, 1, (const int64_t[]){4});
  in_new(&y, UOPC_F32, 1, (const int64_t[]){4});
  buf_new(&big, UOPC_F32, 1, (const int64_t[]){8});
  uopc_tensor strided;
  uopc_error err = {0};
  assert_uopc_ok(uopc_tensor_slice(&strided, &big.t, 0, NONE, NONE, 2, &err), err);
  uopc_tensor *outs[1] = {&strided};
  expect_run_refused(e, outs, 1, &x.t, &y.t, UOPC_E_LAYOUT,
                     "output 0 is not contiguous; the program writes packed rows");
  for (size_t i = 0; i < big.bytes; i++)
    if (big.mem[i] != POISON_BYTE) fail_msg("refused output: byte %zu was written", i);
  uopc_tensor_release(&strided);
  buf_free(&big);
  buf_free(&x);
  buf_free(&y);
  exec_free(e);
}

static void test_exec_run_rejects_an_output_overlapping_an_input(void **state) {
  core *c = *state;
  exec *e = add_program(c, 64);
  buf x, y;
  in_new(&x, UOPC_F32, 1, (const int64_t[]){4});
  in_new(&y, UOPC_F32, 1, (const int64_t[]){4});
  uopc_tensor *outs[1] = {&y.t};                          /* y = x + y in place */
  expect_run_refused(e, outs, 1, &x.t, &y.t, UOPC_E_ALIAS,
                     "output 0 shares memory with input 'y': the kernel's restrict buffers forbid it");
  buf_free(&x);
  buf_free(&y);
  exec_free(e);
}

static void test_exec_run_rejects_outputs_sharing_memory(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, 64);
  const ir_node *x = input(c, "x", UOPC_F32, 1, SHAPE(n));
  const ir_node *outs_n[] = {op1(c, IR_NEG, x), op1(c, IR_ABS, x)};
  exec *e = built(c, outs_n, 2, "neg_abs_f32_n");
  buf in, big;
  in_new(&in, UOPC_F32, 1, (const int64_t[]){4});
  buf_new(&big, UOPC_F32, 1, (const int64_t[]){6});
  uopc_tensor a, b;
  uopc_error err = {0};
  assert_uopc_ok(uopc_tensor_slice(&a, &big.t, 0, 0, 4, 1, &err), err);
  assert_uopc_ok(uopc_tensor_slice(&b, &big.t, 0, 2, 6, 1, &err), err);
  uopc_tensor *outs[2] = {&a, &b};
  const uopc_tensor *ins[1] = {&in.t};
  assert_uopc_code(exec_run(e, outs, 2, ins, 1, &err), UOPC_E_ALIAS, err);
  assert_string_equal(err.message, "outputs 0 and 1 share memory");
  uopc_tensor_release(&a);
  uopc_tensor_release(&b);
  buf_free(&big);
  buf_free(&in);
  exec_free(e);
}

static void test_exec_counts_programs_built(void **state) {
  core *c = *state;
  int64_t before = uopc_counter_get(EXEC_C_BUILT);
  exec *e = add_program(c, 64);
  assert_int_equal(uopc_counter_get(EXEC_C_BUILT) - before, 1);
  assert_non_null(exec_program(e));
  exec_free(e);
}

/* A run writes its outputs: their storage versions move (23.3 relies on it),
 * the inputs' stay. */
static void test_exec_run_bumps_output_versions(void **state) {
  core *c = *state;
  exec *e = add_program(c, 64);
  int64_t n = 5;
  buf ins[2], out;
  in_new(&ins[0], UOPC_F32, 1, &n);
  in_new(&ins[1], UOPC_F32, 1, &n);
  buf_new(&out, UOPC_F32, 1, &n);
  uint64_t x0 = uopc_tensor_version(&ins[0].t), o0 = uopc_tensor_version(&out.t);
  uopc_error err = {0};
  assert_uopc_ok(run(e, &out, 1, ins, 2, &err), err);
  assert_uopc_ok(run(e, &out, 1, ins, 2, &err), err);
  if (uopc_tensor_version(&out.t) != o0 + 2)
    fail_msg("two runs: expected out's version %llu, got %llu", (unsigned long long)(o0 + 2),
             (unsigned long long)uopc_tensor_version(&out.t));
  assert_int_equal(uopc_tensor_version(&ins[0].t), x0);
  free_bufs(ins, 2);
  buf_free(&out);
  exec_free(e);
}

int main(void) {
#define T(name) cmocka_unit_test_setup_teardown(name, core_setup, core_teardown)
  const struct CMUnitTest tests[] = {
    T(test_exec_elementwise_chain_f32),
    T(test_exec_elementwise_chain_f64),
    T(test_exec_sum_and_mean_over_each_axis_f32),
    T(test_exec_sum_and_mean_over_each_axis_f64),
    T(test_exec_max_over_each_axis_f32_and_f64),
    T(test_exec_max_over_an_empty_axis_is_refused),
    T(test_exec_sum_follows_the_banner_order),
    T(test_exec_sum_of_bool_counts_into_i64),
    T(test_exec_reductions_of_moved_operands),
    T(test_exec_outputs_read_earlier_outputs),
    T(test_exec_matmul_2d_matches_a_reference),
    T(test_exec_matmul_of_a_transpose_and_a_product),
    T(test_exec_matmul_batched_matches_a_reference),
    T(test_exec_slices_with_negative_steps),
    T(test_exec_reshape_of_a_permuted_input_unravels),
    T(test_exec_select_with_negative_and_zero_indices),
    T(test_exec_comparisons_and_where),
    T(test_exec_casts_to_and_from_bool_and_between_widths),
    T(test_exec_int32_ops_wrap_as_numpy),
    T(test_exec_int64_ops_wrap_as_numpy),
    T(test_exec_nan_propagates_through_maximum_minimum_and_max),
    T(test_exec_temporaries_in_scratch),
    T(test_exec_runs_a_64_bit_index_program),
    T(test_exec_chain_at_the_nesting_limit_runs),
    T(test_exec_view_with_a_constant_stride),
    T(test_exec_scalar_input_broadcasts),
    T(test_exec_bind_reads_dims_from_extents_strides_and_offset),
    T(test_exec_bind_rejects_one_dim_bound_to_two_values),
    T(test_exec_bind_rejects_a_dim_outside_its_bounds),
    T(test_exec_bind_rejects_a_dtype_mismatch),
    T(test_exec_bind_rejects_a_strided_view_for_a_contiguous_input),
    T(test_exec_bind_rejects_a_wrong_rank_and_count),
    T(test_exec_bind_checks_a_derived_extent),
    T(test_exec_bind_rejects_a_dim_no_input_determines),
    T(test_exec_run_rejects_an_output_of_the_wrong_shape),
    T(test_exec_run_rejects_a_non_contiguous_output),
    T(test_exec_run_rejects_an_output_overlapping_an_input),
    T(test_exec_run_rejects_outputs_sharing_memory),
    T(test_exec_counts_programs_built),
    T(test_exec_run_bumps_output_versions),
  };
#undef T
  return cmocka_run_group_tests(tests, testutil_fresh_cache, testutil_remove_cache);
}
