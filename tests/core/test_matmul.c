/* test_matmul.c: the matmul in rows (labs/core/lower_matmul.c, LOWER_FUSE,
 * C back end). One compiled function per graph runs over sizes with 0, 1 and
 * odd extents; each output is compared with a reference written here (three
 * loops adding the products in order of k, in the dtype: so floats are equal
 * bit for bit, integers wrap as NumPy's), and with the interpreter's (which
 * adds in the same order). Operands: contiguous, transposed,
 * stride-0 views, and batch axes. The text is inspected: rows ('serial') in
 * tiles of 8 (f32 in vectors, built at each of SSE's, AVX2's and AVX-512's
 * widths the CPU runs; a single row per batch alone), a transposed right operand
 * packed into a temporary, or read in place in columns when the product has
 * one row per batch, and without the flag the given lane form unchanged. */
#include "coreutil.h"
#include "ir_eval.h"

enum { MAX_SIZES = 11 };

typedef struct mm_case {
  const char *entry;
  uopc_dtype dt;
  int batch;                 /* 1: a leading batch axis b */
  int ta, tb;                /* the operand is the transpose of its input */
  int a_bcast, b_bcast;      /* the input is a stride-0 view along its first matrix axis */
  int one_row;               /* m is the constant 1: a matrix-vector product per batch */
} mm_case;

typedef struct mm_size { int64_t b, m, k, n; } mm_size;

static const mm_size SIZES[MAX_SIZES] = {
  {1, 0, 3, 4}, {2, 3, 0, 4}, {1, 3, 4, 0}, {1, 1, 1, 1}, {2, 1, 64, 33},
  {3, 5, 7, 3}, {1, 17, 33, 9}, {2, 4, 1, 31}, {1, 9, 16, 128}, {1, 2, 2, 2}, {2, 33, 9, 17},
};

/* An input of logical shape (b,) r x c, contiguous or a stride-0 view along r. */
static const ir_node *mm_input(core *c, const char *name, const mm_case *mc, const sym_expr *r, const sym_expr *col,
                               int bcast) {
  const sym_expr *bd = dim(c, "b", 1, 8);
  int rank = mc->batch ? 3 : 2;
  const sym_expr *shape[3], *strides[3];
  int o = mc->batch;
  if (mc->batch) shape[0] = bd;
  shape[o] = r, shape[o + 1] = col;
  if (!bcast) return input(c, name, mc->dt, rank, shape);
  strides[o] = cst(c, 0), strides[o + 1] = cst(c, 1);
  if (mc->batch) strides[0] = col;
  return ok_node(c, ir_input_view(c->g, name, mc->dt, rank, shape, strides, NULL), name);
}

/* x @ y with the case's transposes; the inputs' shapes follow. */
static const ir_node *mm_graph(core *c, const mm_case *mc) {
  const sym_expr *m = mc->one_row ? cst(c, 1) : dim(c, "m", 0, 200), *k = dim(c, "k", 0, 200), *n = dim(c, "n", 0, 200);
  const ir_node *x = mc->ta ? mm_input(c, "x", mc, k, m, mc->a_bcast) : mm_input(c, "x", mc, m, k, mc->a_bcast);
  const ir_node *y = mc->tb ? mm_input(c, "y", mc, n, k, mc->b_bcast) : mm_input(c, "y", mc, k, n, mc->b_bcast);
  int o = mc->batch;
  if (mc->ta) x = ok_node(c, ir_transpose(c->g, x, o, o + 1), "x.T");
  if (mc->tb) y = ok_node(c, ir_transpose(c->g, y, o, o + 1), "y.T");
  return ok_node(c, ir_matmul(c->g, x, y), "matmul");
}

/* Element i of the memory (not of a view): integers spread so that products wrap. */
static void set_mem(buf *bf, uopc_dtype dt, int64_t i, int seed) {
  double v = (double)((i * 37 + seed) % 23 - 11) / 8.0;
  if (dt == UOPC_I32) ((int32_t *)bf->mem)[i] = (int32_t)(uint32_t)((uint64_t)i * 2654435761u + (uint64_t)seed);
  else if (dt == UOPC_F64) ((double *)bf->mem)[i] = v;
  else ((float *)bf->mem)[i] = (float)v;
}

/* Memory and a view of logical shape (b,) r x c: r*c elements, or c for a
 * stride-0 view along r (every row the same memory). */
static void mm_tensor(buf *bf, const mm_case *mc, int64_t b, int64_t r, int64_t col, int bcast, int seed) {
  int64_t shape[3] = {b, r, col}, mem_shape[2] = {b, col}, strides[3] = {col, 0, 1}, *s = mc->batch ? shape : shape + 1;
  int rank = mc->batch ? 3 : 2;
  if (!bcast) buf_new(bf, mc->dt, rank, s);
  else buf_new(bf, mc->dt, rank - 1, mc->batch ? mem_shape : mem_shape + 1);
  int64_t elems = bf->bytes / uopc_dtype_size(mc->dt);
  for (int64_t i = 0; i < elems; i++) set_mem(bf, mc->dt, i, seed);
  if (!bcast) return;
  uopc_error err = {0};
  uopc_tensor_release(&bf->t);
  assert_uopc_ok(uopc_tensor_wrap(&bf->t, bf->mem, mc->dt, rank, s, mc->batch ? strides : strides + 1, &err), err);
}

/* Element (bi, i, j) of the operand: the input at (bi, i, j), or (bi, j, i) when transposed. */
static int64_t at(const mm_case *mc, int t, int64_t bi, int64_t i, int64_t j, int64_t rows, int64_t cols) {
  int64_t r = t ? j : i, col = t ? i : j, stored_cols = t ? rows : cols, stored_rows = t ? cols : rows;
  return (mc->batch ? bi * stored_rows * stored_cols : 0) + r * stored_cols + col;
}

static void expect_product(const mm_case *mc, const mm_size *s, const buf *x, const buf *y, const buf *out) {
  for (int64_t bi = 0; bi < (mc->batch ? s->b : 1); bi++)
    for (int64_t i = 0; i < s->m; i++)
      for (int64_t j = 0; j < s->n; j++) {
        float facc = 0;
        double dacc = 0;
        uint32_t iacc = 0;
        for (int64_t k = 0; k < s->k; k++) {
          double a = uopc_tensor_get(&x->t, at(mc, mc->ta, bi, i, k, s->m, s->k));
          double b = uopc_tensor_get(&y->t, at(mc, mc->tb, bi, k, j, s->k, s->n));
          facc += (float)a * (float)b;
          dacc += a * b;
          iacc += (uint32_t)(int32_t)a * (uint32_t)(int32_t)b;
        }
        double want = mc->dt == UOPC_F32 ? (double)facc : mc->dt == UOPC_F64 ? dacc : (double)(int32_t)iacc;
        int64_t o = (bi * s->m + i) * s->n + j;
        double got = uopc_tensor_get(&out->t, o);
        if (got != want)
          fail_msg("%s b=%lld m=%lld k=%lld n=%lld: element (%lld, %lld, %lld): got %.17g, expected %.17g", mc->entry,
                   (long long)s->b, (long long)s->m, (long long)s->k, (long long)s->n, (long long)bi, (long long)i,
                   (long long)j, got, want);
      }
}

/* The interpreter adds in order of k too: its result is the same, bit for bit. */
static void expect_interpreter(core *c, exec *e, const ir_node *out, const uopc_tensor *const *in, const buf *got,
                               const char *what) {
  sym_binding b;
  uopc_tensor want;
  uopc_error err = {0};
  assert_uopc_ok(exec_bind(e, in, 2, &b, &err), err);
  assert_uopc_ok(ir_eval(c->g, &out, 1, in, 2, &b, &want, &err), err);
  for (int64_t i = 0; i < uopc_tensor_numel(&want); i++)
    if (uopc_tensor_get(&got->t, i) != uopc_tensor_get(&want, i))
      fail_msg("%s: element %lld: compiled %.17g, interpreter %.17g", what, (long long)i,
               uopc_tensor_get(&got->t, i), uopc_tensor_get(&want, i));
  uopc_tensor_release(&want);
}

/* opts: NULL for the default build, or flags that pick the vectors' width. */
static void run_case_with(core *c, const mm_case *mc, const uopc_program_options *opts) {
  const ir_node *out = mm_graph(c, mc);
  exec *e = NULL;
  uopc_error err = {0};
  assert_uopc_ok(exec_new_flags(&e, c->g, &out, 1, mc->entry, LOWER_FUSE, opts, &err), err);
  if (!strstr(exec_source(e), "(matmul, order: serial)"))
    fail_msg("%s: expected the matmul in rows ('order: serial'):\n%s", mc->entry, exec_source(e));
  int columns = mc->one_row && mc->tb;   /* lower_plan.c's columns form: y's last stride is 1 */
  if ((strstr(exec_source(e), "acc0[16];") != NULL) != columns || (columns && strstr(exec_source(e), "(permute)")))
    fail_msg("%s: expected %s:\n%s", mc->entry, columns ? "the columns form, b read in place" : "rows", exec_source(e));
  /* many rows: tiles of 8 rows, f32 in vectors (b's rows read in place or
   * packed), other dtypes 8 values of k a pass; one row: the row alone, 4 a pass */
  int tiles = !mc->one_row, vectors = tiles && mc->dt == UOPC_F32, rows = mc->one_row && !mc->tb;
  const char *s = exec_source(e);
  if ((strstr(s, "row0 += 8) {") != NULL) != tiles || (strstr(s, "r0 += 8) {") != NULL) != (tiles && !vectors) ||
      (strstr(s, "f32v acc7 = {0};") != NULL) != vectors || (strstr(s, "r0 += 4) {") != NULL) != rows)
    fail_msg("%s: expected %s:\n%s", mc->entry,
             vectors ? "rows in tiles of vectors" : tiles ? "rows in tiles" : rows ? "one row, four k a pass" : "columns",
             s);
  for (int z = 0; z < MAX_SIZES; z++) {
    mm_size one = SIZES[z];
    if (mc->one_row) one.m = 1;
    const mm_size *s = &one;
    buf x, y, o;
    mm_tensor(&x, mc, s->b, mc->ta ? s->k : s->m, mc->ta ? s->m : s->k, mc->a_bcast, 1);
    mm_tensor(&y, mc, s->b, mc->tb ? s->n : s->k, mc->tb ? s->k : s->n, mc->b_bcast, 5);
    int64_t shape[3] = {s->b, s->m, s->n};
    buf_new(&o, mc->dt, mc->batch ? 3 : 2, mc->batch ? shape : shape + 1);
    const uopc_tensor *in[2] = {&x.t, &y.t};
    uopc_tensor *outs[1] = {&o.t};
    assert_uopc_ok(exec_run(e, outs, 1, in, 2, &err), err);
    expect_product(mc, s, &x, &y, &o);
    expect_interpreter(c, e, out, in, &o, mc->entry);
    expect_tail_untouched(&o, mc->entry);
    buf_free(&x), buf_free(&y), buf_free(&o);
  }
  exec_free(e);
}

static void run_case(core *c, const mm_case *mc) { run_case_with(c, mc, NULL); }

/* The vectors' text is one for every width (F32_LANES, the prelude's): built
 * for SSE (x86-64's base, 4 lanes), AVX2 (8) and AVX-512 (16) where this CPU
 * runs them (valgrind decodes no AVX-512), each f32 case of many rows gives
 * the loops' bits and the interpreter's. The sizes' 0 to 128 columns leave
 * every remainder of 4, 8 and 16. */
static void test_matmul_vectors_every_width(void **state) {
  (void)state;
  static const struct { const char *flags, *cpu; } WIDTHS[] = {
    {"-O3 -mno-avx", NULL}, {"-O3 -mavx2", "avx2"}, {"-O3 -mavx512f", "avx512f"},
  };
  static const mm_case CASES[] = {
    {.entry = "mmv_f32", .dt = UOPC_F32},
    {.entry = "mmv_tt", .dt = UOPC_F32, .ta = 1, .tb = 1},
    {.entry = "mmv_bcast", .dt = UOPC_F32, .a_bcast = 1, .b_bcast = 1},
    {.entry = "mmv_batch", .dt = UOPC_F32, .batch = 1, .tb = 1},
  };
  int ran = 0;
  for (size_t w = 0; w < sizeof WIDTHS / sizeof WIDTHS[0]; w++) {
    /* __builtin_cpu_supports wants a literal: one test per name */
    int here = !WIDTHS[w].cpu || (!strcmp(WIDTHS[w].cpu, "avx2") ? __builtin_cpu_supports("avx2")
                                                                  : __builtin_cpu_supports("avx512f") &&
                                                                        !uopc_under_valgrind());
    if (!here) continue;
    uopc_program_options opts = {.opt_flags = WIDTHS[w].flags};
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
      void *fresh = NULL;   /* a graph per case: each makes its own inputs x and y */
      assert_int_equal(core_setup(&fresh), 0);
      run_case_with(fresh, &CASES[i], &opts);
      core_teardown(&fresh);
    }
    ran++;
  }
  assert_true(ran >= 1);
}

/* k the constant 0 (check_core's seed 1109971216): no loop over k to
 * open; the output is zeros, as the interpreter's. */
static void test_matmul_vectors_with_no_k(void **state) {
  core *c = *state;
  const sym_expr *m = dim(c, "m", 0, 64);
  const ir_node *x = input(c, "x", UOPC_F32, 2, SHAPE(cst(c, 2), cst(c, 0)));
  const ir_node *y = input(c, "y", UOPC_F32, 2, SHAPE(cst(c, 0), m));
  const ir_node *out = ok_node(c, ir_matmul(c->g, x, y), "x @ y");
  exec *e = NULL;
  uopc_error err = {0};
  assert_uopc_ok(exec_new_flags(&e, c->g, &out, 1, "mm_no_k", LOWER_FUSE, NULL, &err), err);
  for (int64_t n = 0; n <= 33; n += 11) {
    buf bx, by, o;
    buf_new(&bx, UOPC_F32, 2, (int64_t[]){2, 0});
    buf_new(&by, UOPC_F32, 2, (int64_t[]){0, n});
    buf_new(&o, UOPC_F32, 2, (int64_t[]){2, n});
    for (int64_t i = 0; i < 2 * n; i++) uopc_tensor_set(&o.t, i, 7.0);
    const uopc_tensor *in[2] = {&bx.t, &by.t};
    uopc_tensor *outs[1] = {&o.t};
    assert_uopc_ok(exec_run(e, outs, 1, in, 2, &err), err);
    for (int64_t i = 0; i < 2 * n; i++) assert_true(uopc_tensor_get(&o.t, i) == 0.0);
    expect_interpreter(c, e, out, in, &o, "mm_no_k");
    buf_free(&bx), buf_free(&by), buf_free(&o);
  }
  exec_free(e);
}

static void test_matmul_rows_contiguous_f32(void **state) {
  run_case(*state, &(mm_case){.entry = "mm_f32", .dt = UOPC_F32});
}

static void test_matmul_rows_f64(void **state) { run_case(*state, &(mm_case){.entry = "mm_f64", .dt = UOPC_F64}); }

/* One row per batch (a vector times a matrix): no tile to share b's rows with. */
static void test_matmul_rows_one_row_per_batch(void **state) {
  run_case(*state, &(mm_case){.entry = "mm_row1", .dt = UOPC_F32, .one_row = 1, .batch = 1, .b_bcast = 1});
}

static void test_matmul_rows_i32_wraps(void **state) {
  run_case(*state, &(mm_case){.entry = "mm_i32", .dt = UOPC_I32});
}

static void test_matmul_rows_transposed_operands(void **state) {
  run_case(*state, &(mm_case){.entry = "mm_tt", .dt = UOPC_F32, .ta = 1, .tb = 1});
}

static void test_matmul_rows_stride0_operands(void **state) {
  run_case(*state, &(mm_case){.entry = "mm_bcast", .dt = UOPC_F32, .a_bcast = 1, .b_bcast = 1});
}

static void test_matmul_rows_batched_transposed(void **state) {
  run_case(*state, &(mm_case){.entry = "mm_batch", .dt = UOPC_F32, .batch = 1, .tb = 1});
}

static void test_matmul_rows_batched_i32_transposed_and_stride0(void **state) {
  run_case(*state, &(mm_case){.entry = "mm_batch_i32", .dt = UOPC_I32, .batch = 1, .ta = 1, .b_bcast = 1});
}

/* One row per batch times a transpose: each of the sizes' columns (0 to 128, in blocks of 16 and
 * the rest one at a time) a dot product in order of k, equal to the loops and the interpreter
 * bit for bit; integers wrap. */
static void test_matmul_columns_one_row_times_a_transpose(void **state) {
  run_case(*state, &(mm_case){.entry = "mm_cols", .dt = UOPC_F32, .one_row = 1, .tb = 1});
}

static void test_matmul_columns_batched_i32_wraps(void **state) {
  run_case(*state, &(mm_case){.entry = "mm_cols_i32", .dt = UOPC_I32, .one_row = 1, .batch = 1, .tb = 1});
}

/* One row times the transpose of a stride-0 view (every row of y the same memory): its last
 * stride is 1, so it is read in place too, through its strides. */
static void test_matmul_columns_read_a_stride0_view_in_place(void **state) {
  run_case(*state, &(mm_case){.entry = "mm_cols_bcast", .dt = UOPC_F32, .one_row = 1, .tb = 1, .b_bcast = 1});
}

/* x @ y.T packs y.T once (a permute nest); x @ y reads y in place; without
 * LOWER_FUSE the given lane form and no pack. */
static void test_matmul_rows_pack_only_a_strided_right_operand(void **state) {
  core *c = *state;
  const sym_expr *m = dim(c, "m", 1, 64), *k = dim(c, "k", 1, 64), *n = dim(c, "n", 1, 64);
  const ir_node *x = input(c, "x", UOPC_F32, 2, SHAPE(m, k)), *y = input(c, "y", UOPC_F32, 2, SHAPE(k, n));
  const ir_node *yt = input(c, "yt", UOPC_F32, 2, SHAPE(n, k));
  const ir_node *plain = ok_node(c, ir_matmul(c->g, x, y), "x @ y");
  const ir_node *packed = ok_node(c, ir_matmul(c->g, x, ok_node(c, ir_transpose(c->g, yt, 0, 1), "yt.T")), "x @ yt.T");
  exec *e[3] = {NULL, NULL, NULL};
  uopc_error err = {0};
  assert_uopc_ok(exec_new_flags(&e[0], c->g, &plain, 1, "mm_plain", LOWER_FUSE, NULL, &err), err);
  assert_uopc_ok(exec_new_flags(&e[1], c->g, &packed, 1, "mm_packed", LOWER_FUSE, NULL, &err), err);
  assert_uopc_ok(exec_new_flags(&e[2], c->g, &packed, 1, "mm_given", 0, NULL, &err), err);
  int want_permute[3] = {0, 1, 0}, want_serial[3] = {1, 1, 0}, want_lanes[3] = {0, 0, 1};
  for (int i = 0; i < 3; i++) {
    const char *s = exec_source(e[i]);
    int p = count_of(s, "(permute) */"), se = count_of(s, "(matmul, order: serial)");
    int la = count_of(s, "(matmul, order: lanes)");
    if (p != want_permute[i] || se != want_serial[i] || la != want_lanes[i])
      fail_msg("program %d: expected %d permute nests, %d serial and %d lane matmuls, got %d, %d, %d:\n%s", i,
               want_permute[i], want_serial[i], want_lanes[i], p, se, la, s);
  }
  for (int i = 0; i < 3; i++) exec_free(e[i]);
}

int main(void) {
#define T(name) cmocka_unit_test_setup_teardown(name, core_setup, core_teardown)
  const struct CMUnitTest tests[] = {
    T(test_matmul_rows_contiguous_f32),
    T(test_matmul_rows_f64),
    T(test_matmul_rows_one_row_per_batch),
    T(test_matmul_rows_i32_wraps),
    T(test_matmul_rows_transposed_operands),
    T(test_matmul_rows_stride0_operands),
    T(test_matmul_rows_batched_transposed),
    T(test_matmul_rows_batched_i32_transposed_and_stride0),
    T(test_matmul_rows_pack_only_a_strided_right_operand),
    T(test_matmul_columns_one_row_times_a_transpose),
    T(test_matmul_columns_batched_i32_wraps),
    T(test_matmul_columns_read_a_stride0_view_in_place),
    T(test_matmul_vectors_every_width),
    T(test_matmul_vectors_with_no_k),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
