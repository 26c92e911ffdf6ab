/* test_program.c: lab 23.3's store rule, functionalization step, reuse
 * decision and both runners, against eager loops written here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>
#include "functionalize.h"
#include "run.h"
#include "testutil.h"

typedef struct fx {
  mv_program *p;
  sym_dim n;
  const sym_expr *n_e;
  int a;
  mv_view whole;
  uopc_error err;
} fx;

static void fx_init(fx *f, int64_t lo, int64_t hi) {
  memset(f, 0, sizeof *f);
  assert_uopc_ok(mv_program_new(&f->p, &f->err), f->err);
  assert_uopc_ok(sym_dim_init(&f->n, "n", lo, hi, 1, &f->err), f->err);
  f->n_e = sym_expr_dim(mv_program_arena(f->p), &f->n);
  assert_uopc_ok(mv_storage_new(f->p, "a", UOPC_F32, 1, &f->n_e, &f->a, &f->err), f->err);
  mv_view_whole(f->p, f->a, &f->whole);
}

static mv_view slice(fx *f, int64_t start, int64_t stop, int64_t step) {
  mv_view v;
  assert_uopc_ok(mv_slice(f->p, &f->whole, 0, start, stop, step, &v, &f->err), f->err);
  return v;
}

/* A reuse verdict, with its reason, against the one expected. */
static const char *verdict_name(reuse_verdict v) {
  static const char *const names[] = {"REUSE_OK", "REUSE_REFUSED_ALIAS", "REUSE_REFUSED_LIVE"};
  return (unsigned)v < 3 ? names[v] : "?";
}

static void expect_verdict(const reuse_decision *d, reuse_verdict want, const char *what) {
  if (d->verdict != want)
    fail_msg("%s: got %s (\"%s\"), expected %s", what, verdict_name(d->verdict), d->reason, verdict_name(want));
}

/* a[dst] = a[src] + 1 as one statement. */
static void shift_program(fx *f, mv_view dst, mv_view src) {
  ir_graph *g = mv_begin(f->p, &f->err);
  expect_non_null(g, "mv_begin for a[dst] = a[src] + 1 (%s)", f->err.message);
  assert_uopc_ok(mv_store(f->p, &dst, ir_binary(g, IR_ADD, mv_load(f->p, &src), ir_const(g, 1, UOPC_F32)), &f->err),
                 f->err);
}

/* ---- mv_store */

static void test_mv_store_consumes_and_produces_versions(void **state) {
  (void)state;
  fx f;
  fx_init(&f, 2, 64);
  shift_program(&f, slice(&f, 1, UOPC_SLICE_NONE, 1), slice(&f, 0, -1, 1));
  shift_program(&f, slice(&f, 0, -1, 1), slice(&f, 1, UOPC_SLICE_NONE, 1));
  const mv_stmt *s0 = mv_program_stmt(f.p, 0), *s1 = mv_program_stmt(f.p, 1);
#define STORES "a[1:] = a[:-1] + 1, then a[:-1] = a[1:] + 1"
  expect_int(s0->version_in, 0, STORES ": statement 0's version in");
  expect_int(s0->version_out, 1, STORES ": statement 0's version out");
  expect_int(s0->loads[0].version, 0, STORES ": the version statement 0 loads");
  expect_int(s1->version_in, 1, STORES ": statement 1's version in");
  expect_int(s1->version_out, 2, STORES ": statement 1's version out");
  expect_int(s1->loads[0].version, 1, STORES ": the version statement 1 loads (M1, what statement 0 wrote)");
  expect_int(mv_program_storage(f.p, f.a)->version, 2, STORES ": a's version afterwards");
#undef STORES
  codegen_text t = {0};
  assert_uopc_ok(mv_program_print(&t, f.p, &f.err), f.err);
  assert_contains(t.data, "load a[0:-1] @M0");
  assert_contains(t.data, "M1 = store a[1:] <- ");
  assert_contains(t.data, "(M0 -> M1)");
  assert_contains(t.data, "load a[1:] @M1");
  assert_contains(t.data, "(M1 -> M2)");
  codegen_text_fini(&t);
  mv_program_free(f.p);
}

static void test_mv_store_broadcasts_a_scalar(void **state) {
  (void)state;
  fx f;
  fx_init(&f, 1, 64);
  ir_graph *g = mv_begin(f.p, &f.err);
  assert_uopc_ok(mv_store(f.p, &f.whole, ir_const(g, 3, UOPC_F32), &f.err), f.err);
  const mv_stmt *s = mv_program_stmt(f.p, 0);
  expect_int(s->value->rank, 1, "a = 3 for a of shape (n): the stored value's rank (the scalar broadcast)");
  expect_int(s->value->shape[0]->kind, SYM_DIM, "a = 3 for a of shape (n): the kind of the value's extent (SYM_DIM is %d)", SYM_DIM);
  /* a new axis of extent 1 has stride 0 but one element: nothing collides, so the store goes in */
  const sym_expr *shape[2] = {sym_expr_const(mv_program_arena(f.p), 1), f.n_e};
  mv_view row;
  mv_layout l;
  assert_uopc_ok(mv_expand(f.p, &f.whole, 2, shape, &row, &f.err), f.err);
  assert_uopc_ok(mv_view_layout(f.p, &row, &l, &f.err), f.err);
  expect_int(l.rank, 2, "a.expand(1, n): its layout's rank");
  expect_int(l.strides[0]->kind, SYM_CONST, "a.expand(1, n): the kind of axis 0's stride (SYM_CONST is %d)", SYM_CONST);
  expect_int(l.strides[0]->value, 0, "a.expand(1, n): axis 0's stride");
  g = mv_begin(f.p, &f.err);
  assert_uopc_ok(mv_store(f.p, &row, ir_const(g, 5, UOPC_F32), &f.err), f.err);
  expect_int(mv_program_stmt_count(f.p), 2, "a = 3, then a.expand(1, n) = 5: statements");
  expect_int(mv_program_stmt(f.p, 1)->version_in, 1, "a = 3, then a.expand(1, n) = 5: statement 1's version in");
  expect_int(mv_program_stmt(f.p, 1)->version_out, 2, "a = 3, then a.expand(1, n) = 5: statement 1's version out");
  expect_int(mv_program_storage(f.p, f.a)->version, 2, "a = 3, then a.expand(1, n) = 5: a's version afterwards");
  mv_program_free(f.p);
}

static void test_mv_store_rejects_and_leaves_the_program_unchanged(void **state) {
  (void)state;
  fx f;
  fx_init(&f, 2, 64);
  /* a shape that does not broadcast */
  ir_graph *g = mv_begin(f.p, &f.err);
  mv_view head = slice(&f, 1, UOPC_SLICE_NONE, 1);
  assert_uopc_code(mv_store(f.p, &head, mv_load(f.p, &f.whole), &f.err), UOPC_E_INVALID, f.err);
  assert_string_equal(f.err.message, "store into a[1:]: a value of shape (n) does not broadcast to the view's shape "
                                     "(n - 1)");
  expect_int(mv_program_stmt_count(f.p), 0, "a refused store a[1:] <- a (shapes n - 1 and n): statements");
  expect_null(mv_open_graph(f.p), "a refused store a[1:] <- a: the open statement (dropped, expected)");
  expect_int(mv_program_storage(f.p, f.a)->version, 0, "a refused store a[1:] <- a: a's version");
  /* shapes whose text is long: the message still closes each one */
  sym_dim wide[3];
  const sym_expr *wide_shape[3];
  for (int k = 0; k < 3; k++) {
    char name[32];
    snprintf(name, sizeof name, "a_rather_long_name_of_dim_%c", 'x' + k);
    assert_uopc_ok(sym_dim_init(&wide[k], name, 1, 8, 1, &f.err), f.err);
    wide_shape[k] = sym_expr_dim(mv_program_arena(f.p), &wide[k]);
  }
  g = mv_begin(f.p, &f.err);
  assert_uopc_code(mv_store(f.p, &head, ir_input(g, "v", UOPC_F32, 3, wide_shape), &f.err), UOPC_E_INVALID, f.err);
  assert_contains(f.err.message, "(a_rather_long_name_of_dim_x, a_rather_long_name_of_dim_y, "
                                 "a_rather_long_name_of_dim_z)");
  /* shapes whose text reaches the cut: each is given whole up to 127 characters (mprog.h) */
  sym_dim tall[8];
  const sym_expr *view_shape[4], *value_shape[4];
  for (int k = 0; k < 8; k++) {   /* names of 30 characters: "(" + 4 names + 3 ", " is 127 */
    char name[32];
    snprintf(name, sizeof name, "%s_name_of_a_dimension_pad%02d", k < 4 ? "into" : "from", k);
    assert_uopc_ok(sym_dim_init(&tall[k], name, 1, 8, 1, &f.err), f.err);
    (k < 4 ? view_shape : value_shape)[k % 4] = sym_expr_dim(mv_program_arena(f.p), &tall[k]);
  }
  int w;
  mv_view tall_whole;
  assert_uopc_ok(mv_storage_new(f.p, "w", UOPC_F32, 4, view_shape, &w, &f.err), f.err);
  mv_view_whole(f.p, w, &tall_whole);
  g = mv_begin(f.p, &f.err);
  assert_uopc_code(mv_store(f.p, &tall_whole, ir_input(g, "v", UOPC_F32, 4, value_shape), &f.err), UOPC_E_INVALID,
                   f.err);
  assert_string_equal(f.err.message,
                      "store into w: a value of shape (from_name_of_a_dimension_pad04, from_name_of_a_dimension_pad05,"
                      " from_name_of_a_dimension_pad06, from_name_of_a_dimension_pad07 does not broadcast to the"
                      " view's shape (into_name_of_a_dimension_pad00, into_name_of_a_dimension_pad01,"
                      " into_name_of_a_dimension_pad02, into_name_of_a_dimension_pad03");
  /* a value's shape longer than the cut (131 characters before its ")"): its first 127 */
  sym_dim longer[4];
  const sym_expr *longer_shape[4];
  for (int k = 0; k < 4; k++) {
    char name[32];
    snprintf(name, sizeof name, "value_dimension_of_31_chars_%03d", k);
    assert_uopc_ok(sym_dim_init(&longer[k], name, 1, 8, 1, &f.err), f.err);
    longer_shape[k] = sym_expr_dim(mv_program_arena(f.p), &longer[k]);
  }
  g = mv_begin(f.p, &f.err);
  assert_uopc_code(mv_store(f.p, &head, ir_input(g, "v", UOPC_F32, 4, longer_shape), &f.err), UOPC_E_INVALID, f.err);
  assert_string_equal(f.err.message,
                      "store into a[1:]: a value of shape (value_dimension_of_31_chars_000, value_dimension_of_31_chars_001,"
                      " value_dimension_of_31_chars_002, value_dimension_of_31_chars does not broadcast to the"
                      " view's shape (n - 1)");
  /* a dtype that differs (each message below is mprog.h's) */
  g = mv_begin(f.p, &f.err);
  assert_uopc_code(mv_store(f.p, &f.whole, ir_const(g, 1, UOPC_F64), &f.err), UOPC_E_DTYPE, f.err);
  assert_string_equal(f.err.message, "store into a (f32) of a f64 value (cast it first)");
  /* a broadcast view: its elements collide */
  const sym_expr *shape[2] = {sym_expr_const(mv_program_arena(f.p), 4), f.n_e};
  mv_view b;
  assert_uopc_ok(mv_expand(f.p, &f.whole, 2, shape, &b, &f.err), f.err);
  g = mv_begin(f.p, &f.err);
  assert_uopc_code(mv_store(f.p, &b, ir_const(g, 1, UOPC_F32), &f.err), UOPC_E_ALIAS, f.err);
  assert_contains(f.err.message, "stride 0");
  char bt[MV_VIEW_TEXT_MAX], want[MV_VIEW_TEXT_MAX + 160];
  mv_view_format(f.p, &b, bt, sizeof bt);
  snprintf(want, sizeof want, "store into %s: axis 0 has stride 0 and up to 4 elements, which would all be written"
           " to one element (a broadcast view is read-only)", bt);
  assert_string_equal(f.err.message, want);
  /* no open statement */
  assert_uopc_code(mv_store(f.p, &f.whole, NULL, &f.err), UOPC_E_INVALID, f.err);
  expect_int(mv_program_stmt_count(f.p), 0, "after six refused stores: statements");
  expect_int(mv_program_storage(f.p, f.a)->version, 0, "after six refused stores: a's version");
  mv_program_free(f.p);
}

/* A target whose storage the program does not hold, or no target: refused
 * with mprog.h's message, and the statement is dropped. */
static void test_mv_store_refuses_a_target_without_storage(void **state) {
  (void)state;
  fx f;
  fx_init(&f, 1, 64);
  mv_view bad = f.whole;
  bad.storage = 7;
  ir_graph *g = mv_begin(f.p, &f.err);
  assert_uopc_code(mv_store(f.p, &bad, ir_const(g, 3, UOPC_F32), &f.err), UOPC_E_INVALID, f.err);
  assert_string_equal(f.err.message, "store: the target's storage does not exist");
  expect_int(mv_program_stmt_count(f.p), 0, "a store into storage 7 (the program holds 1): statements");
  expect_null(mv_open_graph(f.p), "a store into storage 7: the open statement (dropped, expected)");
  g = mv_begin(f.p, &f.err);
  f.err = (uopc_error){0};
  assert_uopc_code(mv_store(f.p, NULL, ir_const(g, 3, UOPC_F32), &f.err), UOPC_E_INVALID, f.err);
  assert_string_equal(f.err.message, "store: the target's storage does not exist");
  expect_int(mv_program_stmt_count(f.p), 0, "a store into a NULL target: statements");
  expect_null(mv_open_graph(f.p), "a store into a NULL target: the open statement (dropped, expected)");
  expect_int(mv_program_storage(f.p, f.a)->version, 0, "two refused stores: a's version");
  mv_program_free(f.p);
}

/* ---- functionalize_store */

static void test_functionalize_store_replaces_only_the_view(void **state) {
  (void)state;
  fx f;
  fx_init(&f, 1, 64);
  ir_graph *g;
  assert_uopc_ok(ir_graph_new(&g, &f.err), f.err);
  const sym_expr *shape[1] = {sym_expr_copy(ir_graph_arena(g), f.n_e)};
  const ir_node *base = ir_input(g, "a", UOPC_F32, 1, shape);
  mv_view rev, odd;     /* a[::-1][1::2]: a chain of two slices */
  assert_uopc_ok(mv_slice(f.p, &f.whole, 0, UOPC_SLICE_NONE, UOPC_SLICE_NONE, -1, &rev, &f.err), f.err);
  assert_uopc_ok(mv_slice(f.p, &rev, 0, 1, UOPC_SLICE_NONE, 2, &odd, &f.err), f.err);
  const ir_node *view = mv_view_apply(g, &odd, base), *nb = NULL;
  const ir_node *value = ir_binary(g, IR_MUL, view, ir_const(g, 10, UOPC_F32));
  assert_uopc_ok(functionalize_store(g, &odd, base, value, &nb, &f.err), f.err);
  expect_int(nb->rank, 1, "a[::-1][1::2] = 10 * a[::-1][1::2], functionalized: the new base's rank");
  exec *e;
  assert_uopc_ok(exec_new(&e, g, &nb, 1, "fstore", NULL, &f.err), f.err);
  for (int64_t n = 1; n <= 9; n++) {
    float in[9], want[9];
    for (int i = 0; i < n; i++) in[i] = want[i] = (float)i + 1;
    for (int64_t j = 1; j < n; j += 2) want[n - 1 - j] = in[n - 1 - j] * 10;   /* a[::-1][1::2] */
    uopc_tensor x, out;
    assert_uopc_ok(uopc_tensor_empty(&x, UOPC_F32, 1, &n, &f.err), f.err);
    assert_uopc_ok(uopc_tensor_empty(&out, UOPC_F32, 1, &n, &f.err), f.err);
    memcpy(uopc_tensor_data(&x), in, (size_t)n * sizeof *in);
    const uopc_tensor *ins[1] = {&x};
    uopc_tensor *outs[1] = {&out};
    assert_uopc_ok(exec_run(e, outs, 1, ins, 1, &f.err), f.err);
    const float *got = uopc_tensor_data(&out);
    for (int64_t i = 0; i < n; i++)
      expect_close(got[i], want[i], 0.0, "a[::-1][1::2] = 10 * a[::-1][1::2] functionalized, n = %lld, a = 1 .. n: a[%lld]",
                   (long long)n, (long long)i);
    uopc_tensor_release(&x);
    uopc_tensor_release(&out);
  }
  exec_free(e);
  ir_graph_free(g);
  mv_program_free(f.p);
}

static void test_functionalize_store_refuses_a_broadcast_view(void **state) {
  (void)state;
  fx f;
  fx_init(&f, 1, 64);
  ir_graph *g;
  assert_uopc_ok(ir_graph_new(&g, &f.err), f.err);
  const sym_expr *shape[1] = {sym_expr_copy(ir_graph_arena(g), f.n_e)};
  const ir_node *base = ir_input(g, "a", UOPC_F32, 1, shape), *nb = NULL;
  const sym_expr *to[2] = {sym_expr_const(mv_program_arena(f.p), 2), f.n_e};
  mv_view b;
  assert_uopc_ok(mv_expand(f.p, &f.whole, 2, to, &b, &f.err), f.err);
  assert_uopc_code(functionalize_store(g, &b, base, mv_view_apply(g, &b, base), &nb, &f.err), UOPC_E_ALIAS, f.err);
  /* a.expand(1, n) = 5: a new axis of extent 1 has stride 0 but one element (mprog.h): no broadcast */
  const sym_expr *one_n[2] = {sym_expr_const(mv_program_arena(f.p), 1), f.n_e};
  mv_view row;
  assert_uopc_ok(mv_expand(f.p, &f.whole, 2, one_n, &row, &f.err), f.err);
  const ir_node *five = ir_binary(g, IR_MUL, mv_view_apply(g, &row, base), ir_const(g, 0, UOPC_F32));
  five = ir_binary(g, IR_ADD, five, ir_const(g, 5, UOPC_F32));
  assert_uopc_ok(functionalize_store(g, &row, base, five, &nb, &f.err), f.err);
  expect_int(nb->rank, 1, "a.expand(1, n) = 5, functionalized: the new base's rank");
  exec *e;
  assert_uopc_ok(exec_new(&e, g, &nb, 1, "fstore_row", NULL, &f.err), f.err);
  int64_t n = 3;
  uopc_tensor x, out;
  assert_uopc_ok(uopc_tensor_empty(&x, UOPC_F32, 1, &n, &f.err), f.err);
  assert_uopc_ok(uopc_tensor_empty(&out, UOPC_F32, 1, &n, &f.err), f.err);
  for (int64_t i = 0; i < n; i++) uopc_tensor_set(&x, i, (double)i + 1);
  const uopc_tensor *ins[1] = {&x};
  uopc_tensor *outs[1] = {&out};
  assert_uopc_ok(exec_run(e, outs, 1, ins, 1, &f.err), f.err);
  for (int64_t i = 0; i < n; i++)
    expect_close(uopc_tensor_get(&out, i), 5.0, 0.0, "a.expand(1, n) = 5 functionalized, n = 3, a = 1 .. 3: a[%lld]",
                 (long long)i);
  uopc_tensor_release(&x), uopc_tensor_release(&out);
  exec_free(e);
  ir_graph_free(g);
  mv_program_free(f.p);
}

/* The given test mv_view_has_broadcast (mprog.h): a stride 0 over an extent that can exceed 1 is a
 * broadcast; an axis of extent 1, however it was made, is not; no expand, no broadcast. */
static void test_mv_view_has_broadcast_only_for_a_zero_stride_over_more_than_one_element(void **state) {
  (void)state;
  fx f;
  fx_init(&f, 1, 64);
  sym_arena *pa = mv_program_arena(f.p);
  sym_dim m;
  assert_uopc_ok(sym_dim_init(&m, "m", 1, 1, 1, &f.err), f.err);   /* a dim that can only be 1 */
  ir_graph *g;
  assert_uopc_ok(ir_graph_new(&g, &f.err), f.err);
  const sym_expr *shape[1] = {sym_expr_copy(ir_graph_arena(g), f.n_e)};
  const ir_node *base = ir_input(g, "a", UOPC_F32, 1, shape);
  struct { const char *what; int rank; const sym_expr *to[2]; int want; } cases[] = {
      {"a.expand(1, n)", 2, {sym_expr_const(pa, 1), f.n_e}, 0},
      {"a.expand(m, n), m in [1, 1]", 2, {sym_expr_dim(pa, &m), f.n_e}, 0},
      {"a.expand(2, n)", 2, {sym_expr_const(pa, 2), f.n_e}, 1},
      {"a.expand(n, n)", 2, {f.n_e, f.n_e}, 1},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    mv_view v;
    int broadcast = -1;
    assert_uopc_ok(mv_expand(f.p, &f.whole, cases[k].rank, cases[k].to, &v, &f.err), f.err);
    assert_uopc_ok(mv_view_has_broadcast(&v, base, &broadcast, &f.err), f.err);
    expect_int(broadcast, cases[k].want, "%s, n in [1, 64]: mv_view_has_broadcast", cases[k].what);
  }
  int broadcast = -1;
  mv_view rev;
  assert_uopc_ok(mv_slice(f.p, &f.whole, 0, UOPC_SLICE_NONE, UOPC_SLICE_NONE, -1, &rev, &f.err), f.err);
  assert_uopc_ok(mv_view_has_broadcast(&rev, base, &broadcast, &f.err), f.err);
  expect_int(broadcast, 0, "a[::-1]: mv_view_has_broadcast");
  assert_uopc_code(mv_view_has_broadcast(&rev, NULL, &broadcast, &f.err), UOPC_E_INVALID, f.err);
  ir_graph_free(g);
  mv_program_free(f.p);
}

/* Python's slice of the index list in[0..n) into out; returns its length. */
static int py_slice(const int *in, int n, int64_t start, int64_t stop, int64_t step, int *out) {
  int64_t lo = step > 0 ? 0 : -1, hi = step > 0 ? n : n - 1;
  int64_t s = start == UOPC_SLICE_NONE ? (step > 0 ? 0 : n - 1) : start < 0 ? start + n : start;
  int64_t e = stop == UOPC_SLICE_NONE ? (step > 0 ? n : -1) : stop < 0 ? stop + n : stop;
  s = s < lo ? lo : s > hi ? hi : s;
  e = e < lo ? lo : e > hi ? hi : e;
  int len = 0;
  for (int64_t i = s; step > 0 ? i < e : i > e; i += step) out[len++] = in[i];
  return len;
}

/* A view of MV_VIEW_STEPS_MAX steps has that many intermediate values besides the base: the
 * sanitizer build (make test-c SAN=1) catches a store one past a table of MV_VIEW_STEPS_MAX. */
static void test_functionalize_store_through_a_view_of_the_most_steps(void **state) {
  (void)state;
  static const int64_t steps[MV_VIEW_STEPS_MAX][3] = {
      {1, UOPC_SLICE_NONE, 1}, {UOPC_SLICE_NONE, UOPC_SLICE_NONE, -1}, {1, UOPC_SLICE_NONE, 1},
      {UOPC_SLICE_NONE, UOPC_SLICE_NONE, -1}, {UOPC_SLICE_NONE, UOPC_SLICE_NONE, 1}, {0, -1, 1},
      {UOPC_SLICE_NONE, UOPC_SLICE_NONE, -1}, {UOPC_SLICE_NONE, UOPC_SLICE_NONE, 2}};
  fx f;
  fx_init(&f, 3, 12);
  mv_view v = f.whole, next;
  for (int k = 0; k < MV_VIEW_STEPS_MAX; k++) {
    assert_uopc_ok(mv_slice(f.p, &v, 0, steps[k][0], steps[k][1], steps[k][2], &next, &f.err), f.err);
    v = next;
  }
  expect_int(v.n_steps, MV_VIEW_STEPS_MAX, "a view sliced %d times: its steps", MV_VIEW_STEPS_MAX);
  ir_graph *g;
  assert_uopc_ok(ir_graph_new(&g, &f.err), f.err);
  const sym_expr *shape[1] = {sym_expr_copy(ir_graph_arena(g), f.n_e)};
  const ir_node *base = ir_input(g, "a", UOPC_F32, 1, shape), *nb = NULL;
  const ir_node *value = ir_binary(g, IR_MUL, mv_view_apply(g, &v, base), ir_const(g, 10, UOPC_F32));
  assert_uopc_ok(functionalize_store(g, &v, base, value, &nb, &f.err), f.err);
  exec *e;
  assert_uopc_ok(exec_new(&e, g, &nb, 1, "fstore8", NULL, &f.err), f.err);
  for (int64_t n = 3; n <= 12; n++) {
    int idx[12], tmp[12], len = (int)n;
    for (int i = 0; i < n; i++) idx[i] = i;
    for (int k = 0; k < MV_VIEW_STEPS_MAX; k++) {
      len = py_slice(idx, len, steps[k][0], steps[k][1], steps[k][2], tmp);
      memcpy(idx, tmp, sizeof tmp);
    }
    float in[12], want[12];
    for (int i = 0; i < n; i++) in[i] = want[i] = (float)i + 1;
    for (int i = 0; i < len; i++) want[idx[i]] = in[idx[i]] * 10;
    uopc_tensor x, out;
    assert_uopc_ok(uopc_tensor_empty(&x, UOPC_F32, 1, &n, &f.err), f.err);
    assert_uopc_ok(uopc_tensor_empty(&out, UOPC_F32, 1, &n, &f.err), f.err);
    memcpy(uopc_tensor_data(&x), in, (size_t)n * sizeof *in);
    const uopc_tensor *ins[1] = {&x};
    uopc_tensor *outs[1] = {&out};
    assert_uopc_ok(exec_run(e, outs, 1, ins, 1, &f.err), f.err);
    if (memcmp(uopc_tensor_data(&out), want, (size_t)n * sizeof *want) != 0)
      fail_msg("n = %lld: a view of %d steps, stored through: wrong result", (long long)n, MV_VIEW_STEPS_MAX);
    uopc_tensor_release(&x);
    uopc_tensor_release(&out);
  }
  exec_free(e);
  ir_graph_free(g);
  mv_program_free(f.p);
}

/* ---- reuse_decide */

/* t1 = a * 2; t2 = t1 + 1 [; t3 = t1 * t2]. */
static void reuse_program(fx *f, int escape_t1, int read_t1_later, int shifted, int *t1, int *t2) {
  ir_graph *g = mv_begin(f->p, &f->err);
  assert_uopc_ok(mv_let(f->p, "t1", ir_binary(g, IR_MUL, mv_load(f->p, &f->whole), ir_const(g, 2, UOPC_F32)), t1,
                        &f->err), f->err);
  mv_view v1, v2;
  mv_view_whole(f->p, *t1, &v1);
  if (escape_t1) assert_uopc_ok(mv_escape(f->p, &v1, &f->err), f->err);
  g = mv_begin(f->p, &f->err);
  const ir_node *x = mv_load(f->p, &v1);
  if (shifted) {                                  /* t2 = t1 + t1[::-1]: not in place */
    mv_view r;
    assert_uopc_ok(mv_slice(f->p, &v1, 0, UOPC_SLICE_NONE, UOPC_SLICE_NONE, -1, &r, &f->err), f->err);
    x = ir_binary(g, IR_ADD, x, mv_load(f->p, &r));
  }
  assert_uopc_ok(mv_let(f->p, "t2", ir_binary(g, IR_ADD, x, ir_const(g, 1, UOPC_F32)), t2, &f->err), f->err);
  if (read_t1_later) {
    int t3;
    mv_view_whole(f->p, *t2, &v2);
    g = mv_begin(f->p, &f->err);
    assert_uopc_ok(mv_let(f->p, "t3", ir_binary(g, IR_MUL, mv_load(f->p, &v1), mv_load(f->p, &v2)), &t3, &f->err),
                   f->err);
  }
}

static void test_reuse_decide_allows_a_dead_private_buffer(void **state) {
  (void)state;
  fx f;
  int t1, t2;
  fx_init(&f, 1, 64);
  reuse_program(&f, 0, 0, 0, &t1, &t2);
  reuse_decision d;
  expect_truth(reuse_candidate(f.p, 1, t1), 1, "t1 = a * 2; t2 = t1 + 1: t1 a candidate for statement 1");
  assert_uopc_ok(reuse_decide(f.p, 1, t1, &d, &f.err), f.err);
  expect_verdict(&d, REUSE_OK, "t1 = a * 2; t2 = t1 + 1: t2 takes t1's buffer");
  mv_program_free(f.p);
  /* t1 = a * 2; u = a + 3; t3 = t1 + u[::-1]: another buffer read through any view is no alias of t1 */
  int u, t3;
  fx_init(&f, 1, 64);
  ir_graph *g = mv_begin(f.p, &f.err);
  assert_uopc_ok(mv_let(f.p, "t1", ir_binary(g, IR_MUL, mv_load(f.p, &f.whole), ir_const(g, 2, UOPC_F32)), &t1,
                        &f.err), f.err);
  g = mv_begin(f.p, &f.err);
  assert_uopc_ok(mv_let(f.p, "u", ir_binary(g, IR_ADD, mv_load(f.p, &f.whole), ir_const(g, 3, UOPC_F32)), &u,
                        &f.err), f.err);
  if (u <= t1) fail_msg("t1 = a * 2; u = a + 3: u is storage %d, t1 %d: expected u after t1", u, t1);
  mv_view vt, vu, ru;
  mv_view_whole(f.p, t1, &vt);
  mv_view_whole(f.p, u, &vu);
  assert_uopc_ok(mv_slice(f.p, &vu, 0, UOPC_SLICE_NONE, UOPC_SLICE_NONE, -1, &ru, &f.err), f.err);
  g = mv_begin(f.p, &f.err);
  assert_uopc_ok(mv_let(f.p, "t3", ir_binary(g, IR_ADD, mv_load(f.p, &vt), mv_load(f.p, &ru)), &t3, &f.err), f.err);
  assert_uopc_ok(reuse_decide(f.p, 2, t1, &d, &f.err), f.err);
  if (d.verdict != REUSE_OK) fail_msg("t3 = t1 + u[::-1]: t1 should be reusable, got \"%s\"", d.reason);
  mv_program_free(f.p);
}

static void test_reuse_decide_refuses_an_escaped_or_external_buffer(void **state) {
  (void)state;
  fx f;
  int t1, t2;
  fx_init(&f, 1, 64);
  reuse_program(&f, 1, 0, 0, &t1, &t2);
  reuse_decision d;
  assert_uopc_ok(reuse_decide(f.p, 1, t1, &d, &f.err), f.err);
  expect_verdict(&d, REUSE_REFUSED_ALIAS, "t1 escaped; t2 = t1 + 1: t2 takes t1's buffer");
  assert_contains(d.reason, "'t1'");
  mv_program_free(f.p);
  /* escaped and read later: the alias proof fails first, and its reason is the one given */
  fx_init(&f, 1, 64);
  reuse_program(&f, 1, 1, 0, &t1, &t2);
  assert_uopc_ok(reuse_decide(f.p, 1, t1, &d, &f.err), f.err);
  expect_verdict(&d, REUSE_REFUSED_ALIAS, "t1 escaped and read by statement 2: t2 takes t1's buffer");
  assert_string_equal(d.reason, "a view of 't1' outlives the program");
  assert_uopc_ok(reuse_decide(f.p, 0, f.a, &d, &f.err), f.err);   /* the caller's tensor */
  expect_verdict(&d, REUSE_REFUSED_ALIAS, "statement 0 takes a's buffer (the caller's tensor)");
  assert_contains(d.reason, "'a'");
  mv_program_free(f.p);
}

static void test_reuse_decide_refuses_a_view_not_read_in_place(void **state) {
  (void)state;
  fx f;
  int t1, t2;
  fx_init(&f, 1, 64);
  reuse_program(&f, 0, 0, 1, &t1, &t2);
  reuse_decision d;
  assert_uopc_ok(reuse_decide(f.p, 1, t1, &d, &f.err), f.err);
  expect_verdict(&d, REUSE_REFUSED_ALIAS, "t2 = t1 + t1[::-1] + 1: t2 takes t1's buffer");
  assert_contains(d.reason, "t1[::-1]");
  mv_program_free(f.p);
}

static void test_reuse_decide_refuses_a_buffer_read_later(void **state) {
  (void)state;
  fx f;
  int t1, t2;
  fx_init(&f, 1, 64);
  reuse_program(&f, 0, 1, 0, &t1, &t2);
  reuse_decision d;
  assert_uopc_ok(reuse_decide(f.p, 1, t1, &d, &f.err), f.err);
  expect_verdict(&d, REUSE_REFUSED_LIVE, "t2 = t1 + 1; t3 = t1 * t2: t2 takes t1's buffer");
  assert_contains(d.reason, "statement 2");
  assert_uopc_ok(reuse_decide(f.p, 2, t2, &d, &f.err), f.err);   /* t3 may take t2's: its last use */
  expect_verdict(&d, REUSE_OK, "t2 = t1 + 1; t3 = t1 * t2: t3 takes t2's buffer (its last use)");
  assert_uopc_code(reuse_decide(f.p, 1, 99, &d, &f.err), UOPC_E_INVALID, f.err);
  /* Only a let makes a buffer that could take another's memory: a store is refused. */
  ir_graph *g = mv_begin(f.p, &f.err);
  assert_uopc_ok(mv_store(f.p, &f.whole, ir_const(g, 3, UOPC_F32), &f.err), f.err);
  assert_uopc_code(reuse_decide(f.p, 3, t1, &d, &f.err), UOPC_E_INVALID, f.err);
  assert_contains(f.err.message, "statement 3 is not a let");
  mv_program_free(f.p);
}

/* t2 = t1[::-1] + t1: the first load is the one not read in place. */
static void test_reuse_decide_refuses_when_the_first_load_is_not_in_place(void **state) {
  (void)state;
  fx f;
  int t1, t2;
  fx_init(&f, 1, 64);
  ir_graph *g = mv_begin(f.p, &f.err);
  assert_uopc_ok(mv_let(f.p, "t1", ir_binary(g, IR_MUL, mv_load(f.p, &f.whole), ir_const(g, 2, UOPC_F32)), &t1,
                        &f.err), f.err);
  mv_view v1, r;
  mv_view_whole(f.p, t1, &v1);
  assert_uopc_ok(mv_slice(f.p, &v1, 0, UOPC_SLICE_NONE, UOPC_SLICE_NONE, -1, &r, &f.err), f.err);
  g = mv_begin(f.p, &f.err);
  const ir_node *rev = mv_load(f.p, &r);          /* load 0: t1[::-1] */
  const ir_node *x = mv_load(f.p, &v1);           /* load 1: t1, in place */
  assert_uopc_ok(mv_let(f.p, "t2", ir_binary(g, IR_ADD, rev, x), &t2, &f.err), f.err);
  const mv_stmt *st = mv_program_stmt(f.p, 1);
  expect_int(st->n_loads, 2, "t2 = t1[::-1] + t1: statement 1's loads");
  expect_int(st->loads[0].view.n_steps, 1, "t2 = t1[::-1] + t1: the steps of load 0's view");
  expect_truth(reuse_reads_in_place(f.p, 1, 0), 0, "t2 = t1[::-1] + t1: load 0 reads in place");
  reuse_decision d;
  assert_uopc_ok(reuse_decide(f.p, 1, t1, &d, &f.err), f.err);
  expect_verdict(&d, REUSE_REFUSED_ALIAS, "t2 = t1[::-1] + t1: t2 takes t1's buffer");
  assert_contains(d.reason, "t1[::-1]");
  mv_program_free(f.p);
}

/* Liveness counts later loads of s and later stores into s (reuse.h): the
 * later let that makes s does neither, so it does not keep s live. */
static void test_reuse_decide_liveness_ignores_the_let_that_makes_the_storage(void **state) {
  (void)state;
  fx f;
  int t1, t2;
  fx_init(&f, 1, 64);
  reuse_program(&f, 0, 0, 0, &t1, &t2);           /* t1 = a * 2; t2 = t1 + 1 */
  expect_int(mv_program_stmt(f.p, 1)->kind, MV_LET, "t1 = a * 2; t2 = t1 + 1: statement 1's kind (MV_LET is %d)", MV_LET);
  expect_int(mv_program_stmt(f.p, 1)->storage, t2, "t1 = a * 2; t2 = t1 + 1: statement 1's storage (t2)");
  reuse_decision d;
  assert_uopc_ok(reuse_decide(f.p, 0, t2, &d, &f.err), f.err);
  if (d.verdict != REUSE_OK) fail_msg("statement 1 only makes t2: expected REUSE_OK, got \"%s\"", d.reason);
  /* a later store into t2 does keep it live, and is named a write */
  mv_view v2;
  mv_view_whole(f.p, t2, &v2);
  ir_graph *g = mv_begin(f.p, &f.err);
  assert_uopc_ok(mv_store(f.p, &v2, ir_const(g, 0, UOPC_F32), &f.err), f.err);
  assert_uopc_ok(reuse_decide(f.p, 0, t2, &d, &f.err), f.err);
  expect_verdict(&d, REUSE_REFUSED_LIVE, "t2 = t1 + 1; t2 = 0 (a store): statement 0 takes t2's buffer");
  assert_string_equal(d.reason, "'t2' is written again by statement 2");
  mv_program_free(f.p);
}

/* ---- The runners, against an eager loop: a[dst] = a[src] + 1 for every
 * slice pair of a length-7 storage with steps +-1, +-2 and equal lengths. */

static void eager(float *a, int64_t n, int64_t d0, int64_t ds, int64_t s0, int64_t ss, int64_t len) {
  float rhs[64];
  for (int64_t i = 0; i < len; i++) rhs[i] = a[s0 + i * ss] + 1;
  for (int64_t i = 0; i < len; i++) a[d0 + i * ds] = rhs[i];
  (void)n;
}

static int64_t py_len(int64_t n, int64_t *start, int64_t step) {
  if (step > 0) return *start >= n ? 0 : (n - *start + step - 1) / step;
  return *start < 0 ? 0 : (*start + (-step)) / (-step);
}

static void test_runners_match_eager_on_every_slice_pair(void **state) {
  (void)state;
  const int64_t n = 7, steps[] = {1, 2, -1, -2};
  int64_t runs = 0;
  for (int64_t d0 = 0; d0 < n; d0++)
    for (int64_t s0 = 0; s0 < n; s0++)
      for (int ds = 0; ds < 4; ds++)
        for (int ss = 0; ss < 4; ss++) {
          int64_t dl = py_len(n, &d0, steps[ds]), sl = py_len(n, &s0, steps[ss]);
          int64_t len = dl < sl ? dl : sl;
          if (len < 1) continue;
          fx f;
          fx_init(&f, 7, 7);
          /* Both views of length len: a[d0 : d0 + len*step : step] */
          int64_t dstop = d0 + len * steps[ds], sstop = s0 + len * steps[ss];
          mv_view dst = slice(&f, d0, dstop < 0 ? UOPC_SLICE_NONE : dstop, steps[ds]);
          mv_view src = slice(&f, s0, sstop < 0 ? UOPC_SLICE_NONE : sstop, steps[ss]);
          shift_program(&f, dst, src);
          for (int mode = 0; mode < 2; mode++) {
            mv_runner *r;
            assert_uopc_ok(mv_runner_new(&r, f.p, (mv_mode)mode, NULL, &f.err), f.err);
            float want[7];
            uopc_tensor a;
            assert_uopc_ok(uopc_tensor_empty(&a, UOPC_F32, 1, &n, &f.err), f.err);
            float *ad = uopc_tensor_data(&a);
            for (int i = 0; i < n; i++) ad[i] = want[i] = (float)(i * 10);
            eager(want, n, d0, steps[ds], s0, steps[ss], len);
            uopc_tensor *args[1] = {&a};
            uint64_t v0 = uopc_tensor_version(&a);
            assert_uopc_ok(mv_run(r, args, 1, NULL, &f.err), f.err);
            if (memcmp(ad, want, sizeof want) != 0)
              fail_msg("a[%lld::%lld] = a[%lld::%lld] + 1 (len %lld, %s): wrong result", (long long)d0,
                       (long long)steps[ds], (long long)s0, (long long)steps[ss], (long long)len,
                       mode ? "functional" : "versioned");
            if (uopc_tensor_version(&a) <= v0)    /* the write is visible to every view */
              fail_msg("a[%lld::%lld] = a[%lld::%lld] + 1 (%s): a's version %llu did not move", (long long)d0,
                       (long long)steps[ds], (long long)s0, (long long)steps[ss], mode ? "functional" : "versioned",
                       (unsigned long long)v0);
            uopc_tensor_release(&a);
            mv_runner_free(r);
            runs++;
          }
          mv_program_free(f.p);
        }
  if (runs <= 500) fail_msg("every slice pair of a length-7 storage: %lld runs, expected more than 500", (long long)runs);
}

static void test_versioned_runner_plans_direct_guarded_and_staged(void **state) {
  (void)state;
  fx f;
  fx_init(&f, 2, 64);
  shift_program(&f, slice(&f, 0, 1, 1), slice(&f, 1, 2, 1));                       /* disjoint */
  shift_program(&f, slice(&f, 1, UOPC_SLICE_NONE, 1), slice(&f, 0, -1, 1));          /* unknown: n may be 2 */
  shift_program(&f, slice(&f, 0, 2, 1), slice(&f, 1, UOPC_SLICE_NONE, -1));          /* a[1::-1]: overlap */
  mv_runner *r;
  assert_uopc_ok(mv_runner_new(&r, f.p, MV_VERSIONED, NULL, &f.err), f.err);
  expect_int(mv_runner_store_plan(r, 0), MV_STORE_DIRECT, "a[0:1] = a[1:2] + 1 (disjoint): its plan (MV_STORE_DIRECT is %d)", MV_STORE_DIRECT);
  expect_int(mv_runner_store_plan(r, 1), MV_STORE_GUARDED, "a[1:] = a[:-1] + 1 (n in [2, 64]): its plan (MV_STORE_GUARDED is %d)",
             MV_STORE_GUARDED);
  expect_int(mv_runner_store_plan(r, 2), MV_STORE_STAGED, "a[0:2] = a[1::-1] + 1 (overlap): its plan (MV_STORE_STAGED is %d)", MV_STORE_STAGED);
  int64_t guards = uopc_counter_get(MV_C_GUARDS), overlap = uopc_counter_get(MV_C_GUARD_OVERLAP);
  int64_t sizes[2] = {2, 5};
  for (int k = 0; k < 2; k++) {
    uopc_tensor a;
    assert_uopc_ok(uopc_tensor_empty(&a, UOPC_F32, 1, &sizes[k], &f.err), f.err);
    memset(uopc_tensor_data(&a), 0, (size_t)sizes[k] * sizeof(float));
    uopc_tensor *args[1] = {&a};
    assert_uopc_ok(mv_run(r, args, 1, NULL, &f.err), f.err);
    uopc_tensor_release(&a);
  }
  expect_int(uopc_counter_get(MV_C_GUARDS) - guards, 2, "the three stores run at n = 2, 5: the counter '%s' moved by", MV_C_GUARDS);
  expect_int(uopc_counter_get(MV_C_GUARD_OVERLAP) - overlap, 1,   /* n = 2: a[1:] and a[:-1] are disjoint */
             "the three stores run at n = 2, 5: the counter '%s' moved by", MV_C_GUARD_OVERLAP);
  mv_runner_free(r);
  mv_program_free(f.p);
}

static void test_mv_run_rejects_bad_storages_before_writing(void **state) {
  (void)state;
  fx f;
  fx_init(&f, 2, 8);
  shift_program(&f, slice(&f, 1, UOPC_SLICE_NONE, 1), slice(&f, 0, -1, 1));
  mv_runner *r;
  assert_uopc_ok(mv_runner_new(&r, f.p, MV_VERSIONED, NULL, &f.err), f.err);
  int64_t big = 9, two = 2, four = 4;
  uopc_tensor a, d, released = {0}, strided;
  assert_uopc_ok(uopc_tensor_empty(&a, UOPC_F32, 1, &big, &f.err), f.err);
  uopc_tensor *args[1] = {&a};
  assert_uopc_code(mv_run(r, args, 1, NULL, &f.err), UOPC_E_BOUNDS, f.err);     /* 9 > 8 */
  uopc_tensor_release(&a);
  assert_uopc_ok(uopc_tensor_empty(&d, UOPC_F64, 1, &two, &f.err), f.err);
  args[0] = &d;
  assert_uopc_code(mv_run(r, args, 1, NULL, &f.err), UOPC_E_DTYPE, f.err);
  uopc_tensor_release(&d);
  args[0] = &released;
  assert_uopc_code(mv_run(r, args, 1, NULL, &f.err), UOPC_E_INVALID, f.err);
  assert_uopc_ok(uopc_tensor_empty(&a, UOPC_F32, 1, &four, &f.err), f.err);
  assert_uopc_ok(uopc_tensor_slice(&strided, &a, 0, 0, 4, 2, &f.err), f.err);
  uint64_t v = uopc_tensor_version(&a);
  args[0] = &strided;
  assert_uopc_code(mv_run(r, args, 1, NULL, &f.err), UOPC_E_LAYOUT, f.err);
  expect_int(uopc_tensor_version(&a), v, "a run refused for a strided a[0:4:2]: a's version (nothing written)");
  assert_uopc_code(mv_run(r, args, 2, NULL, &f.err), UOPC_E_INVALID, f.err);
  uopc_tensor_release(&strided);
  uopc_tensor_release(&a);
  mv_runner_free(r);
  mv_program_free(f.p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mv_store_consumes_and_produces_versions),
      cmocka_unit_test(test_mv_store_broadcasts_a_scalar),
      cmocka_unit_test(test_mv_store_rejects_and_leaves_the_program_unchanged),
      cmocka_unit_test(test_mv_store_refuses_a_target_without_storage),
      cmocka_unit_test(test_functionalize_store_replaces_only_the_view),
      cmocka_unit_test(test_functionalize_store_refuses_a_broadcast_view),
      cmocka_unit_test(test_mv_view_has_broadcast_only_for_a_zero_stride_over_more_than_one_element),
      cmocka_unit_test(test_functionalize_store_through_a_view_of_the_most_steps),
      cmocka_unit_test(test_reuse_decide_allows_a_dead_private_buffer),
      cmocka_unit_test(test_reuse_decide_refuses_an_escaped_or_external_buffer),
      cmocka_unit_test(test_reuse_decide_refuses_a_view_not_read_in_place),
      cmocka_unit_test(test_reuse_decide_refuses_a_buffer_read_later),
      cmocka_unit_test(test_reuse_decide_refuses_when_the_first_load_is_not_in_place),
      cmocka_unit_test(test_reuse_decide_liveness_ignores_the_let_that_makes_the_storage),
      cmocka_unit_test(test_runners_match_eager_on_every_slice_pair),
      cmocka_unit_test(test_versioned_runner_plans_direct_guarded_and_staged),
      cmocka_unit_test(test_mv_run_rejects_bad_storages_before_writing),
  };
  return cmocka_run_group_tests(tests, testutil_fresh_cache, testutil_remove_cache);
}
