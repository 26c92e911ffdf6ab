/* test_alias_edges.c: lab 23.3, instructor-only (tests/hidden/, not in the handout):
 * alias_decide on layouts whose strides are symbolic (the columns and rows of an (m, n)
 * array), where only the hull and "same view" rules may decide, and on rule 5's letter
 * (one offset is not one view); alias_guard_disjoint at the edges of int64 (a progression
 * that runs from 2^63 - 1 down past -2^63 + 2, steps past 2^62, a common element at the
 * very last index), on zero-stride and extent-one axes. Graded with visibility
 * after_due_date. */
#include "alias.h"
#include "testutil.h"

typedef struct fixture { sym_arena *ar; } fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  uopc_error err = {0};
  if (!f || sym_arena_new(&f->ar, &err)) return -1;
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  sym_arena_free(f->ar);
  free(f);
  return 0;
}

static const sym_expr *k(fixture *f, int64_t v) { return sym_expr_const(f->ar, v); }

static const sym_expr *dim(fixture *f, const char *name, int64_t lo, int64_t hi) {
  sym_dim d;
  uopc_error err = {0};
  assert_uopc_ok(sym_dim_init(&d, name, lo, hi, 1, &err), err);
  return sym_expr_dim(f->ar, &d);
}

static const sym_expr *add(fixture *f, const sym_expr *x, const sym_expr *y) { return sym_expr_add(f->ar, x, y); }
static const sym_expr *sub(fixture *f, const sym_expr *x, const sym_expr *y) { return sym_expr_sub(f->ar, x, y); }
static const sym_expr *mul(fixture *f, const sym_expr *x, const sym_expr *y) { return sym_expr_mul(f->ar, x, y); }

static mv_layout line(const sym_expr *extent, const sym_expr *stride, const sym_expr *offset) {
  mv_layout l = {0};
  l.rank = 1;
  l.shape[0] = extent, l.strides[0] = stride, l.offset = offset;
  return l;
}

static mv_layout grid(const sym_expr *e0, const sym_expr *e1, const sym_expr *s0, const sym_expr *s1,
                      const sym_expr *offset) {
  mv_layout l = {0};
  l.rank = 2;
  l.shape[0] = e0, l.shape[1] = e1, l.strides[0] = s0, l.strides[1] = s1, l.offset = offset;
  return l;
}

/* Both orders give want, with reason in the result's reason. */
static void expect_answer(fixture *f, const mv_layout *a, const mv_layout *b, alias_answer want, const char *reason,
                          const char *what) {
  for (int order = 0; order < 2; order++) {
    alias_result r;
    uopc_error err = {0};
    assert_uopc_ok(order ? alias_decide(b, a, f->ar, &r, &err) : alias_decide(a, b, f->ar, &r, &err), err);
    if (r.answer != want || !strstr(r.reason, reason))
      fail_msg("%s%s: expected %s (\"%s\"), got %s (\"%s\")", what, order ? ", operands exchanged" : "",
               alias_answer_name(want), reason, alias_answer_name(r.answer), r.reason);
  }
}

/* ---- alias_decide with symbolic strides. */

static void test_alias_decide_with_symbolic_strides(void **state) {
  fixture *f = *state;
  /* An (m, n) array, m in [2, 16], n in [2, 16]: element (i, j) is i*n + j. */
  const sym_expr *m = dim(f, "m", 2, 16), *n = dim(f, "n", 2, 16), *one = k(f, 1);
  mv_layout col0 = line(m, n, k(f, 0)), col1 = line(m, n, one);        /* a[:, 0], a[:, 1] */
  mv_layout row0 = line(n, one, k(f, 0)), row1 = line(n, one, n);      /* a[0], a[1] */
  /* The columns are apart for every n >= 2, but their stride is not a constant: no residue rule. */
  expect_answer(f, &col0, &col1, ALIAS_UNKNOWN, "depends on the binding", "a[:, 0] and a[:, 1], stride n");
  /* Rows are decided by their hulls: row 0 ends at n - 1, row 1 starts at n. */
  expect_answer(f, &row0, &row1, ALIAS_DISJOINT, "ranges", "a[0] and a[1]");
  /* A column and a row share a[0, 0], but only rule 4 could see it, and the column's stride is n. */
  expect_answer(f, &col0, &row0, ALIAS_UNKNOWN, "depends on the binding", "a[:, 0] and a[0]");
  /* The same column written two ways: "same view". */
  mv_layout col0_again = line(sub(f, mul(f, k(f, 2), m), m), sub(f, add(f, n, n), n), sub(f, m, m));
  expect_answer(f, &col0, &col0_again, ALIAS_OVERLAP, "same view", "a[:, 0] written as 2m - m rows of stride 2n - n");
  /* a[:, ::-1][0] (stride -1 from n - 1) against row 1: the hull of a negative stride. */
  mv_layout rev0 = line(n, k(f, -1), sub(f, n, one));
  expect_answer(f, &rev0, &row1, ALIAS_DISJOINT, "ranges", "a[0, ::-1] and a[1]");
  /* The transpose's rows are the columns: a.T[0] and a.T[1], rows of extent 1 dropped first. */
  mv_layout t0 = grid(one, m, one, n, k(f, 0)), t1 = grid(one, m, one, n, one);
  expect_answer(f, &t0, &t1, ALIAS_UNKNOWN, "depends on the binding", "a.T[0:1] and a.T[1:2]");
  /* A symbolic stride on the dropped axis, constant strides on the other: the residue rule applies. */
  const sym_expr *h = dim(f, "h", 1, 8);
  mv_layout even = grid(one, h, n, k(f, 2), k(f, 0)), odd = grid(one, h, n, k(f, 2), one);
  expect_answer(f, &even, &odd, ALIAS_DISJOINT, "residues mod 2", "a[0:1, 0::2] and a[0:1, 1::2]");
}

/* Rule 5 is about identical layouts: a shared first element (which rule 4 sees only at rank 1
 * with constant strides) is not enough, nor are equal strides with other extents. */
static void test_alias_decide_same_offset_is_not_the_same_view(void **state) {
  fixture *f = *state;
  const sym_expr *n = dim(f, "n", 2, 16), *m = dim(f, "m", 2, 16), *one = k(f, 1), *zero = k(f, 0);
  mv_layout left = grid(n, k(f, 2), k(f, 4), one, zero);        /* a[:, :2] of an (n, 4) array */
  mv_layout even = grid(n, k(f, 2), k(f, 4), k(f, 2), zero);    /* a[:, ::2] */
  mv_layout head = grid(sub(f, n, one), k(f, 2), k(f, 4), one, zero);   /* a[:-1, :2] */
  mv_layout wide = grid(n, k(f, 3), k(f, 4), one, zero);        /* a[:, :3] */
  expect_answer(f, &left, &even, ALIAS_UNKNOWN, "depends on the binding", "a[:, :2] and a[:, ::2]: other strides");
  expect_answer(f, &left, &head, ALIAS_UNKNOWN, "depends on the binding", "a[:, :2] and a[:-1, :2]: other extents");
  expect_answer(f, &left, &wide, ALIAS_UNKNOWN, "depends on the binding", "a[:, :2] and a[:, :3]: other extents");
  mv_layout col_n = line(m, n, zero), col_m = line(m, m, zero), short_col = line(sub(f, m, one), n, zero);
  expect_answer(f, &col_n, &col_m, ALIAS_UNKNOWN, "depends on the binding", "stride n and stride m");
  expect_answer(f, &col_n, &short_col, ALIAS_UNKNOWN, "depends on the binding", "m and m - 1 elements of stride n");
  mv_layout flat = line(k(f, 8), one, zero);                    /* other ranks, one offset */
  expect_answer(f, &left, &flat, ALIAS_UNKNOWN, "depends on the binding", "rank 2 and rank 1");
  expect_answer(f, &left, &left, ALIAS_OVERLAP, "same view", "a[:, :2] and itself");
}

/* ---- alias_guard_disjoint at the edges. */

static int guard(const uopc_tensor *a, const uopc_tensor *b) {
  int disjoint = -1;
  uopc_error err = {0};
  assert_uopc_ok(alias_guard_disjoint(a, b, &disjoint, &err), err);
  return disjoint;
}

static uopc_tensor raw_view(const uopc_tensor *base, int rank, const int64_t *shape, const int64_t *strides,
                            int64_t offset) {
  uopc_tensor v = *base;
  v.rank = rank;
  for (int i = 0; i < rank; i++) v.shape[i] = shape[i], v.strides[i] = strides[i];
  v.offset = offset;
  return v;
}

typedef struct edge { int64_t na, sa, oa, nb, sb, ob; int disjoint; const char *what; } edge;

static void test_alias_guard_disjoint_at_the_edges_of_int64(void **state) {
  (void)state;
  const int64_t M = INT64_MAX, lowest = 2 - INT64_MAX;   /* M - 2*(M - 1): the last of M, M - 2, ... */
  const int64_t big = (int64_t)1 << 62;
  const edge cases[] = {
      {M, -2, M, 1, 1, 1, 0, "M, M - 2, ..., 2 - M holds 1 (odd)"},
      {M, -2, M, 1, 1, 0, 1, "and not 0"},
      {M, -2, M, 1, 1, lowest, 0, "its last element, 2 - M"},
      {M, -2, M, 1, 1, lowest - 2, 1, "one step past its last"},
      {M, -2, M, 2, 1, lowest - 1, 0, "{1 - M, 2 - M}: the last element again"},
      {M, 2, lowest, 1, 1, M, 0, "walked upwards: 2 - M, ..., M holds M"},
      {M - 1, 2, lowest, 1, 1, M, 1, "one element shorter: not M"},
      {3, big, 0, 3, big + 2, 1, 1, "even steps past 2^62, offsets 0 and 1"},
      {3, big, 0, 3, big + 2, 2 * -big + 2, 1, "even steps, even offsets, no common element in range"},
      {3, big, 0, 2, big + 2, -2, 0, "{0, 2^62, 2^63} and {-2, 2^62}"},
      {3, big, 0, 2, big + 2, -4, 1, "{0, 2^62, 2^63} and {-4, 2^62 - 2}"},
      {3, big, 0, 2, big - 2, 2, 0, "{0, 2^62, 2^63} and {2, 2^62}"},
      {3, big, 0, 2, big - 2, 4, 1, "{0, 2^62, 2^63} and {4, 2^62 + 2}"},
      {2, M, INT64_MIN, 2, M - 1, INT64_MIN + 1, 0, "{-2^63, -1} and {1 - 2^63, -1}"},
      {2, M, INT64_MIN, 2, M - 1, INT64_MIN + 2, 1, "{-2^63, -1} and {2 - 2^63, 0}"},
      {2, M, INT64_MIN, 3, 1, -3, 0, "{-2^63, -1} and {-3, -2, -1}: at the last of both"},
      {2, M, INT64_MIN, 2, 1, -3, 1, "{-2^63, -1} and {-3, -2}"},
      {2, INT64_MIN, M, 2, INT64_MIN, M - 1, 1, "{M, -1} and {M - 1, -2}"},
  };
  uopc_tensor base = {0};
  uopc_error err = {0};
  int64_t n = 4;
  assert_uopc_ok(uopc_tensor_empty(&base, UOPC_I64, 1, &n, &err), err);
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const edge *e = &cases[c];
    uopc_tensor a = raw_view(&base, 1, &e->na, &e->sa, e->oa), b = raw_view(&base, 1, &e->nb, &e->sb, e->ob);
    int ab = guard(&a, &b), ba = guard(&b, &a);
    if (ab != e->disjoint || ba != e->disjoint)
      fail_msg("%s: expected disjoint = %d, got %d (and %d exchanged)", e->what, e->disjoint, ab, ba);
  }
  uopc_tensor_release(&base);
}

/* A zero stride makes a 1-D view one element however long it is; axes of extent 1 carry any
 * stride, INT64_MIN included, and are dropped; extents of 0 make any view empty. */
static void test_alias_guard_disjoint_zero_strides_and_extent_one_axes(void **state) {
  (void)state;
  uopc_tensor base = {0};
  uopc_error err = {0};
  int64_t n = 16;
  assert_uopc_ok(uopc_tensor_empty(&base, UOPC_F32, 1, &n, &err), err);
  int64_t five = 5, zero = 0, three = 3, s2 = 2, s1 = 1;
  uopc_tensor bcast = raw_view(&base, 1, &five, &zero, 3);                  /* {3}, five times */
  uopc_tensor evens = raw_view(&base, 1, &five, &s2, 2);                    /* {2, 4, ..., 10} */
  uopc_tensor odds = raw_view(&base, 1, &five, &s2, 1);                     /* {1, 3, ..., 9} */
  assert_int_equal(guard(&bcast, &evens), 1);
  assert_int_equal(guard(&bcast, &odds), 0);
  assert_int_equal(guard(&bcast, &bcast), 0);
  /* (1, 3, 1) with strides (INT64_MIN, 1, INT64_MAX): {7, 8, 9}. */
  int64_t shape3[3] = {1, 3, 1}, strides3[3] = {INT64_MIN, 1, INT64_MAX};
  uopc_tensor mid = raw_view(&base, 3, shape3, strides3, 7);
  uopc_tensor nine = raw_view(&base, 1, &s1, &s2, 9), ten = raw_view(&base, 1, &s1, &s2, 10);
  assert_int_equal(guard(&mid, &nine), 0);
  assert_int_equal(guard(&mid, &ten), 1);
  assert_int_equal(guard(&mid, &odds), 0);                                   /* shares 7 and 9 */
  /* (3, 2) of strides (4, 1) at 0 and at 2: {0, 1, 4, 5, 8, 9} and {2, 3, 6, 7, 10, 11} interleave.
   * Beyond rank 1 only the byte ranges count: not disjoint. */
  int64_t shape2[2] = {3, 2}, strides2[2] = {4, 1};
  uopc_tensor left = raw_view(&base, 2, shape2, strides2, 0), right = raw_view(&base, 2, shape2, strides2, 2);
  assert_int_equal(guard(&left, &right), 0);
  uopc_tensor far = raw_view(&base, 1, &three, &s1, 12);                    /* {12, 13, 14}: past both */
  assert_int_equal(guard(&left, &far), 1);
  /* An extent of 0 on any axis, with a stride that would reach everything. */
  int64_t empty_shape[3] = {4, 0, 4}, empty_strides[3] = {1, INT64_MAX, 1};
  uopc_tensor none = raw_view(&base, 3, empty_shape, empty_strides, 0);
  assert_int_equal(guard(&none, &left), 1);
  assert_int_equal(guard(&bcast, &none), 1);
  uopc_tensor_release(&base);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_alias_decide_with_symbolic_strides, setup, teardown),
      cmocka_unit_test_setup_teardown(test_alias_decide_same_offset_is_not_the_same_view, setup, teardown),
      cmocka_unit_test(test_alias_guard_disjoint_at_the_edges_of_int64),
      cmocka_unit_test(test_alias_guard_disjoint_zero_strides_and_extent_one_axes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
