/* test_program_edges.c: lab 23.3, instructor-only (tests/hidden/, not in the handout):
 * mv_store of a 0-d value into 2-D views (whole, transposed, a row broadcast, a shape that
 * does not broadcast, a broadcast target whose extent may be 1), versions kept per storage;
 * reuse_decide on a let that reads its candidate twice (in place twice, in place and
 * reversed), and on liveness past the next statement (read by a later one, written by a
 * later one, read by an earlier one). Graded with visibility after_due_date. */
#include "reuse.h"
#include "testutil.h"

typedef struct fx {
  mv_program *p;
  sym_dim m, n;
  const sym_expr *m_e, *n_e;
  int a;
  mv_view whole;
  uopc_error err;
} fx;

/* a: (m, n) f32 with m in [1, 8], n in [2, 8] (rank 2), or (n) with n in [lo, hi] (rank 1). */
static void fx_init(fx *f, int rank, int64_t lo, int64_t hi) {
  memset(f, 0, sizeof *f);
  assert_uopc_ok(mv_program_new(&f->p, &f->err), f->err);
  sym_arena *ar = mv_program_arena(f->p);
  assert_uopc_ok(sym_dim_init(&f->m, "m", 1, 8, 1, &f->err), f->err);
  assert_uopc_ok(sym_dim_init(&f->n, "n", rank == 2 ? 2 : lo, rank == 2 ? 8 : hi, 1, &f->err), f->err);
  f->m_e = sym_expr_dim(ar, &f->m), f->n_e = sym_expr_dim(ar, &f->n);
  const sym_expr *shape[2] = {rank == 2 ? f->m_e : f->n_e, f->n_e};
  assert_uopc_ok(mv_storage_new(f->p, "a", UOPC_F32, rank, shape, &f->a, &f->err), f->err);
  mv_view_whole(f->p, f->a, &f->whole);
}

static void expect_shape(const ir_node *v, int rank, const sym_expr *s0, const sym_expr *s1, const char *what) {
  const sym_expr *want[2] = {s0, s1};
  if (v->rank != rank) fail_msg("%s: the stored value has rank %d, expected %d", what, v->rank, rank);
  for (int k = 0; k < rank; k++)
    if (sym_expr_compare(v->shape[k], want[k]) != 0) fail_msg("%s: axis %d of the stored value differs", what, k);
}

/* ---- mv_store */

static void test_mv_store_of_a_0d_value_into_2d_views(void **state) {
  (void)state;
  fx f;
  fx_init(&f, 2, 0, 0);
  ir_graph *g = mv_begin(f.p, &f.err);
  assert_uopc_ok(mv_store(f.p, &f.whole, ir_const(g, 3, UOPC_F32), &f.err), f.err);   /* a[...] = 3 */
  expect_shape(mv_program_stmt(f.p, 0)->value, 2, f.m_e, f.n_e, "a[...] = 3");
  /* a.T[1:] = 4: a 0-d value into a transposed slice of shape (n - 1, m). */
  mv_view t, t1;
  const int perm[2] = {1, 0};
  assert_uopc_ok(mv_permute(f.p, &f.whole, perm, &t, &f.err), f.err);
  assert_uopc_ok(mv_slice(f.p, &t, 0, 1, UOPC_SLICE_NONE, 1, &t1, &f.err), f.err);
  g = mv_begin(f.p, &f.err);
  assert_uopc_ok(mv_store(f.p, &t1, ir_const(g, 4, UOPC_F32), &f.err), f.err);
  const mv_stmt *s = mv_program_stmt(f.p, 1);
  assert_int_equal(s->value->rank, 2);
  assert_int_equal(s->version_in, 1);
  assert_int_equal(s->version_out, 2);
  /* a[...] = a[0]: a row (n) broadcasts over the rows; it reads M2. */
  mv_view row;
  assert_uopc_ok(mv_select(f.p, &f.whole, 0, sym_expr_const(mv_program_arena(f.p), 0), &row, &f.err), f.err);
  g = mv_begin(f.p, &f.err);
  assert_uopc_ok(mv_store(f.p, &f.whole, mv_load(f.p, &row), &f.err), f.err);
  s = mv_program_stmt(f.p, 2);
  expect_shape(s->value, 2, f.m_e, f.n_e, "a[...] = a[0]");
  assert_int_equal(s->loads[0].version, 2);
  assert_int_equal(mv_program_storage(f.p, f.a)->version, 3);
  /* a[0, 1] = a.T[0, 0] + 1: a 0-d value into a 0-d view. */
  mv_view e01, e00, tmp;
  sym_arena *ar = mv_program_arena(f.p);
  assert_uopc_ok(mv_select(f.p, &row, 0, sym_expr_const(ar, 1), &e01, &f.err), f.err);
  assert_uopc_ok(mv_select(f.p, &t, 0, sym_expr_const(ar, 0), &tmp, &f.err), f.err);
  assert_uopc_ok(mv_select(f.p, &tmp, 0, sym_expr_const(ar, 0), &e00, &f.err), f.err);
  g = mv_begin(f.p, &f.err);
  assert_uopc_ok(mv_store(f.p, &e01, ir_binary(g, IR_ADD, mv_load(f.p, &e00), ir_const(g, 1, UOPC_F32)), &f.err),
                 f.err);
  assert_int_equal(mv_program_stmt(f.p, 3)->value->rank, 0);
  assert_int_equal(mv_program_stmt(f.p, 3)->version_out, 4);
  mv_program_free(f.p);
}

static void test_mv_store_refusals_in_2d_leave_the_version(void **state) {
  (void)state;
  fx f;
  fx_init(&f, 2, 0, 0);
  sym_arena *ar = mv_program_arena(f.p);
  /* a column (m) does not broadcast to (m, n): broadcasting aligns the last axes. */
  mv_view col;
  assert_uopc_ok(mv_select(f.p, &f.whole, 1, sym_expr_const(ar, 0), &col, &f.err), f.err);
  ir_graph *g = mv_begin(f.p, &f.err);
  assert_uopc_code(mv_store(f.p, &f.whole, mv_load(f.p, &col), &f.err), UOPC_E_INVALID, f.err);
  assert_contains(f.err.message, "(m)");
  assert_contains(f.err.message, "(m, n)");
  assert_int_equal(mv_program_stmt_count(f.p), 0);
  /* a row broadcast to (m, n): m may be 1, but it may be 8, and then its rows collide. */
  mv_view row, bcast;
  const sym_expr *to[2] = {f.m_e, f.n_e};
  assert_uopc_ok(mv_select(f.p, &f.whole, 0, sym_expr_const(ar, 0), &row, &f.err), f.err);
  assert_uopc_ok(mv_expand(f.p, &row, 2, to, &bcast, &f.err), f.err);
  g = mv_begin(f.p, &f.err);
  assert_uopc_code(mv_store(f.p, &bcast, ir_const(g, 0, UOPC_F32), &f.err), UOPC_E_ALIAS, f.err);
  assert_int_equal(mv_program_stmt_count(f.p), 0);
  assert_null(mv_open_graph(f.p));
  /* a 0-d value of the wrong dtype. */
  g = mv_begin(f.p, &f.err);
  assert_uopc_code(mv_store(f.p, &row, ir_const(g, 0, UOPC_I32), &f.err), UOPC_E_DTYPE, f.err);
  assert_int_equal(mv_program_storage(f.p, f.a)->version, 0);
  /* A second storage: its stores move its own version only. */
  int b;
  const sym_expr *bs[1] = {f.n_e};
  assert_uopc_ok(mv_storage_new(f.p, "b", UOPC_F32, 1, bs, &b, &f.err), f.err);
  mv_view bw;
  mv_view_whole(f.p, b, &bw);
  g = mv_begin(f.p, &f.err);
  assert_uopc_ok(mv_store(f.p, &bw, ir_const(g, 1, UOPC_F32), &f.err), f.err);
  g = mv_begin(f.p, &f.err);
  assert_uopc_ok(mv_store(f.p, &row, mv_load(f.p, &bw), &f.err), f.err);   /* a[0] = b */
  const mv_stmt *s = mv_program_stmt(f.p, 1);
  assert_int_equal(s->version_in, 0);
  assert_int_equal(s->version_out, 1);
  assert_int_equal(s->loads[0].version, 1);
  assert_int_equal(mv_program_storage(f.p, b)->version, 1);
  assert_int_equal(mv_program_storage(f.p, f.a)->version, 1);
  mv_program_free(f.p);
}

/* ---- reuse_decide */

static int let(fx *f, const char *name, const ir_node *value) {
  int id;
  assert_uopc_ok(mv_let(f->p, name, value, &id, &f->err), f->err);
  return id;
}

static const ir_node *load_whole(fx *f, int storage) {
  mv_view v;
  mv_view_whole(f->p, storage, &v);
  return mv_load(f->p, &v);
}

static const ir_node *load_reversed(fx *f, int storage) {
  mv_view v, r;
  mv_view_whole(f->p, storage, &v);
  assert_uopc_ok(mv_slice(f->p, &v, 0, UOPC_SLICE_NONE, UOPC_SLICE_NONE, -1, &r, &f->err), f->err);
  return mv_load(f->p, &r);
}

static reuse_decision decide(fx *f, int k, int s) {
  reuse_decision d;
  assert_uopc_ok(reuse_decide(f->p, k, s, &d, &f->err), f->err);
  return d;
}

static void expect_verdict(reuse_decision d, reuse_verdict want, const char *in_reason, const char *what) {
  if (d.verdict != want || !strstr(d.reason, in_reason))
    fail_msg("%s: expected verdict %d with \"%s\" in the reason, got %d (\"%s\")", what, (int)want, in_reason,
             (int)d.verdict, d.reason);
}

static void test_reuse_decide_with_a_let_that_reads_its_candidate_twice(void **state) {
  (void)state;
  fx f;
  fx_init(&f, 1, 1, 64);
  /* 0: t1 = a * 2;  1: t2 = t1 + t1;  2: t3 = t2[::-1] + t2;  3: t4 = t3 * t3 */
  ir_graph *g = mv_begin(f.p, &f.err);
  int t1 = let(&f, "t1", ir_binary(g, IR_MUL, load_whole(&f, f.a), ir_const(g, 2, UOPC_F32)));
  g = mv_begin(f.p, &f.err);
  int t2 = let(&f, "t2", ir_binary(g, IR_ADD, load_whole(&f, t1), load_whole(&f, t1)));
  g = mv_begin(f.p, &f.err);
  int t3 = let(&f, "t3", ir_binary(g, IR_ADD, load_reversed(&f, t2), load_whole(&f, t2)));
  g = mv_begin(f.p, &f.err);
  let(&f, "t4", ir_binary(g, IR_MUL, load_whole(&f, t3), load_whole(&f, t3)));
  assert_int_equal(mv_program_stmt(f.p, 1)->n_loads, 2);
  assert_int_equal(reuse_candidate(f.p, 1, t1), 1);
  expect_verdict(decide(&f, 1, t1), REUSE_OK, "'t1'", "t2 = t1 + t1: both reads in place");
  /* The reversed read comes first; the in-place one after it does not make it safe. */
  expect_verdict(decide(&f, 2, t2), REUSE_REFUSED_ALIAS, "t2[::-1]", "t3 = t2[::-1] + t2");
  expect_verdict(decide(&f, 2, t2), REUSE_REFUSED_ALIAS, "statement 2", "t3 = t2[::-1] + t2");
  expect_verdict(decide(&f, 3, t3), REUSE_OK, "'t3'", "t4 = t3 * t3, the last statement");
  mv_program_free(f.p);
}

static void test_reuse_decide_liveness_looks_at_every_later_statement(void **state) {
  (void)state;
  fx f;
  fx_init(&f, 1, 1, 64);
  /* 0: t1 = a * 2;  1: u = t1 * 3;  2: t2 = t1 + 1;  3: v = a + 1;  4: w = t1 * v;
   * 5: t3 = v + 1;  6: v[...] = 0 */
  ir_graph *g = mv_begin(f.p, &f.err);
  int t1 = let(&f, "t1", ir_binary(g, IR_MUL, load_whole(&f, f.a), ir_const(g, 2, UOPC_F32)));
  g = mv_begin(f.p, &f.err);
  let(&f, "u", ir_binary(g, IR_MUL, load_whole(&f, t1), ir_const(g, 3, UOPC_F32)));
  g = mv_begin(f.p, &f.err);
  let(&f, "t2", ir_binary(g, IR_ADD, load_whole(&f, t1), ir_const(g, 1, UOPC_F32)));
  g = mv_begin(f.p, &f.err);
  int v = let(&f, "v", ir_binary(g, IR_ADD, load_whole(&f, f.a), ir_const(g, 1, UOPC_F32)));
  g = mv_begin(f.p, &f.err);
  let(&f, "w", ir_binary(g, IR_MUL, load_whole(&f, t1), load_whole(&f, v)));
  g = mv_begin(f.p, &f.err);
  let(&f, "t3", ir_binary(g, IR_ADD, load_whole(&f, v), ir_const(g, 1, UOPC_F32)));
  mv_view vw;
  mv_view_whole(f.p, v, &vw);
  g = mv_begin(f.p, &f.err);
  assert_uopc_ok(mv_store(f.p, &vw, ir_const(g, 0, UOPC_F32), &f.err), f.err);
  /* t1 is read by statements 1, 2 and 4: reuse at 1 or 2 must see statement 4, two lets later. */
  expect_verdict(decide(&f, 1, t1), REUSE_REFUSED_LIVE, "'t1' is read again by statement 2", "u = t1 * 3");
  expect_verdict(decide(&f, 2, t1), REUSE_REFUSED_LIVE, "'t1' is read again by statement 4", "t2 = t1 + 1");
  /* w is t1's last reader; an earlier reader (statement 1) does not matter. */
  assert_int_equal(reuse_candidate(f.p, 4, t1), 1);
  expect_verdict(decide(&f, 4, t1), REUSE_OK, "'t1'", "w = t1 * v");
  /* v is not read after t3 = v + 1, but written: t3's values would be overwritten. */
  expect_verdict(decide(&f, 5, v), REUSE_REFUSED_LIVE, "'v' is written again by statement 6", "t3 = v + 1");
  mv_program_free(f.p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mv_store_of_a_0d_value_into_2d_views),
      cmocka_unit_test(test_mv_store_refusals_in_2d_leave_the_version),
      cmocka_unit_test(test_reuse_decide_with_a_let_that_reads_its_candidate_twice),
      cmocka_unit_test(test_reuse_decide_liveness_looks_at_every_later_statement),
  };
  return cmocka_run_group_tests(tests, testutil_fresh_cache, testutil_remove_cache);
}
