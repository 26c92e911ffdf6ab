/* test_trace.c: lab 23.4's guards, the variant cache, graph breaks, rejected
 * effects and bad input, each compiled result against the same model run
 * eagerly. Models are written here, so a message's line is this file's. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>
#include "tp_compile.h"
#include "testutil.h"

/* The dims and shapes of the functions' arguments: an arena per test, since
 * an arena holds one declaration of a dim name and the tests bound n
 * differently. */
static sym_arena *arena;

static int setup(void **state) { return testutil_fresh_cache(state); }

static int arena_setup(void **state) {
  uopc_error err = {0};
  (void)state;
  return sym_arena_new(&arena, &err);
}

static int arena_teardown(void **state) {
  (void)state;
  sym_arena_free(arena);
  arena = NULL;
  return 0;
}

static int teardown(void **state) { return testutil_remove_cache(state); }

/* ---- Helpers. */

/* A compiled function of one f32 vector x of length n in [1, hi]. */
static tp_compiled *vector_fn(tp_model m, void *user, int64_t hi, int strict) {
  uopc_error err = {0};
  sym_dim n;
  assert_uopc_ok(sym_dim_init(&n, "n", 1, hi, 1, &err), err);
  tp_arg a = {"x", UOPC_F32, 1, {sym_expr_dim(arena, &n)}};
  tp_options o = {.strict = strict};
  tp_compiled *f = NULL;
  assert_uopc_ok(tp_compiled_new(&f, m, user, &a, 1, 1, &o, &err), err);
  return f;
}

/* x = sign * (1, 2, ..., n) / n */
static uopc_tensor ramp(int64_t n, int sign) {
  uopc_tensor x;
  uopc_error err = {0};
  assert_uopc_ok(uopc_tensor_empty(&x, UOPC_F32, 1, &n, &err), err);
  for (int64_t i = 0; i < n; i++) uopc_tensor_set(&x, i, sign * (double)(i + 1) / (double)n);
  return x;
}

/* f on x = sign * ramp(n): the same value as the model run eagerly. */
static void call_matches_eager(tp_compiled *f, tp_model m, void *user, int64_t n, int sign) {
  uopc_tensor x = ramp(n, sign), out[1] = {{0}}, eout[1] = {{0}};
  const uopc_tensor *in[1] = {&x};
  uopc_error err = {0};
  char what[64];
  snprintf(what, sizeof what, "n = %lld, sign %+d: compiled vs eager", (long long)n, sign);
  assert_uopc_ok(tp_call(f, in, out, NULL, &err), err);
  assert_uopc_ok(tp_run_eager(m, user, in, 1, 1, 0, eout, NULL, &err), err);
  assert_tensors_close(&out[0], &eout[0], 1e-5, what);
  uopc_tensor_release(&x), uopc_tensor_release(&out[0]), uopc_tensor_release(&eout[0]);
}

/* The code and message of one call of f on ramp(n). */
static int call_error(tp_compiled *f, int64_t n, uopc_error *err) {
  uopc_tensor x = ramp(n, 1), out[1] = {{0}};
  const uopc_tensor *in[1] = {&x};
  int rc = tp_call(f, in, out, NULL, err);
  uopc_tensor_release(&x), uopc_tensor_release(&out[0]);
  return rc;
}

/* "test_trace.c:LINE", what a message must contain. */
static const char *site(int line) {
  static char text[64];
  snprintf(text, sizeof text, "test_trace.c:%d", line);
  return text;
}

/* A context (tracing or eager) with one input x of length value, n in [lo, hi]. */
typedef struct tctx {
  tp_ctx c;
  sym_dim n;
  tp_tensor *x;
  uopc_tensor xv;
  uopc_error err;
} tctx;

static void tctx_init(tctx *t, tp_mode mode, int64_t lo, int64_t hi, int64_t value) {
  memset(t, 0, sizeof *t);
  assert_uopc_ok(tp_ctx_init(&t->c, mode, &t->err), t->err);
  assert_uopc_ok(sym_dim_init(&t->n, "n", lo, hi, 1, &t->err), t->err);
  assert_uopc_ok(uopc_tensor_empty(&t->xv, UOPC_F32, 1, &value, &t->err), t->err);
  if (mode == TP_TRACE) {
    assert_uopc_ok(sym_dim_bind(&t->c.binding, &t->n, value, &t->err), t->err);
    const sym_expr *shape[1] = {sym_expr_dim(ir_graph_arena(t->c.g), &t->n)};
    const ir_node *in = ir_input(t->c.g, "x", UOPC_F32, 1, shape);
    expect_non_null(in, "ir_input x of length n in [%lld, %lld]", (long long)lo, (long long)hi);
    t->x = tp_input_handle(&t->c, in, &t->xv, TP_HERE);
  } else {
    t->x = tp_wrap(&t->c, &t->xv);
  }
  expect_non_null(t->x, "the handle of x (n = %lld) in %s mode", (long long)value, mode == TP_TRACE ? "trace" : "eager");
}

static void tctx_fini(tctx *t) {
  tp_ctx_fini(&t->c);
  uopc_tensor_release(&t->xv);
}

static void assert_ctx_ok(const tctx *t) {
  if (tp_status(&t->c)) fail_msg("the context failed: %s", tp_error(&t->c)->message);
}

/* The guard's diff with dim n bound to v. */
static int64_t diff_at(const tp_guard *g, const sym_dim *n, int64_t v) {
  sym_binding b;
  uopc_error err = {0};
  int64_t d = 0;
  sym_binding_init(&b);
  assert_uopc_ok(sym_dim_bind(&b, n, v, &err), err);
  assert_uopc_ok(sym_expr_eval(g->diff, &b, &d, &err), err);
  return d;
}

/* ---- Models. */

/* Both outcomes of a size branch: 2 x summed when n > 16, x + 1 summed otherwise. */
static int shape_branch(tp_ctx *c, tp_tensor *const *in, tp_tensor **out, void *user) {
  (void)user;
  if (tp_gt(c, tp_size(c, in[0], 0), tp_int_const(c, 16)))
    out[0] = tp_sum(c, tp_mul(c, in[0], tp_scalar(c, 2)), 0u, 0);
  else
    out[0] = tp_sum(c, tp_add(c, in[0], tp_scalar(c, 1)), 0u, 0);
  return tp_status(c);
}

/* k * x for the first k in 1..39 equal to n: a new guarded outcome for every n. */
static int staircase(tp_ctx *c, tp_tensor *const *in, tp_tensor **out, void *user) {
  (void)user;
  tp_int n = tp_size(c, in[0], 0);
  int64_t k = 1;
  while (k < 40 && !tp_eq(c, n, tp_int_const(c, k))) k++;
  out[0] = tp_mul(c, in[0], tp_scalar(c, (double)k));
  return tp_status(c);
}

static int item_line, print_line, global_line, callback_line, matmul_line;

/* A branch on data: 2 x when sum(x) > 0, -x otherwise. */
static int data_branch(tp_ctx *c, tp_tensor *const *in, tp_tensor **out, void *user) {
  (void)user;
  tp_tensor *s = tp_sum(c, in[0], 0u, 0);
  item_line = __LINE__; double v = tp_item(c, s);
  out[0] = v > 0 ? tp_mul(c, in[0], tp_scalar(c, 2)) : tp_neg(c, in[0]);
  return tp_status(c);
}

/* A data branch that changes which values the next region reads: for a positive x an extra
 * x * 3 is made (and used by nothing), then a second break, then x + 5. The last region's graph
 * computes the same thing both ways, but reads 3 or 4 inputs (every value made so far). */
static int branch_changes_inputs(tp_ctx *c, tp_tensor *const *in, tp_tensor **out, void *user) {
  (void)user;
  if (tp_item(c, tp_sum(c, in[0], 0u, 0)) > 0) (void)tp_mul(c, in[0], tp_scalar(c, 3));
  (void)tp_item(c, tp_sum(c, in[0], 0u, 0));
  out[0] = tp_add(c, in[0], tp_scalar(c, 5));
  return tp_status(c);
}

/* x * sum(x), the sum read as a number in the middle. */
static int item_scaled(tp_ctx *c, tp_tensor *const *in, tp_tensor **out, void *user) {
  (void)user;
  double v = tp_item(c, tp_sum(c, in[0], 0u, 0));
  out[0] = tp_mul(c, in[0], tp_scalar(c, v));
  return tp_status(c);
}

static int printing(tp_ctx *c, tp_tensor *const *in, tp_tensor **out, void *user) {
  (void)user;
  print_line = __LINE__; tp_print(c, in[0]);
  out[0] = tp_add(c, in[0], in[0]);
  return tp_status(c);
}

/* x + g, g a tensor the model was not given (user). */
static int reads_global(tp_ctx *c, tp_tensor *const *in, tp_tensor **out, void *user) {
  global_line = __LINE__; tp_tensor *g = tp_global(c, (const uopc_tensor *)user);
  out[0] = tp_add(c, in[0], g);
  return tp_status(c);
}

typedef struct callback_user { int pure, calls; } callback_user;

static void count_call(void *user) { ((callback_user *)user)->calls++; }

static int calls_back(tp_ctx *c, tp_tensor *const *in, tp_tensor **out, void *user) {
  callback_user *u = user;
  callback_line = __LINE__; tp_callback_at(c, count_call, u, u->pure, TP_HERE);
  out[0] = tp_mul(c, in[0], in[0]);
  return tp_status(c);
}

static int doubles(tp_ctx *c, tp_tensor *const *in, tp_tensor **out, void *user) {
  (void)user;
  out[0] = tp_add(c, in[0], in[0]);
  return tp_status(c);
}

/* ---- tp_compare_record */

static void test_compare_records_one_guard_for_a_size_comparison(void **state) {
  (void)state;
  tctx t;
  tctx_init(&t, TP_TRACE, 1, 64, 4);
  int64_t recorded = uopc_counter_get(TP_C_GUARDS);
  tp_int n = tp_size(&t.c, t.x, 0);
  expect_int(n.value, 4, "tp_size of x (n = 4): its value");
  expect_non_null(n.expr, "tp_size of x (n = 4) under the tracer: its symbolic expression");
  int line = __LINE__; int truth = tp_gt(&t.c, n, tp_int_const(&t.c, 16));
  assert_ctx_ok(&t);
  expect_truth(truth, 0, "4 > 16 traced with n in [1, 64], n = 4: the answer");
  expect_int(t.c.n_guards, 1, "4 > 16 traced with n in [1, 64], n = 4: guards recorded");
  const tp_guard *g = &t.c.guards[0];
  expect_int(g->op, TP_GT, "4 > 16 traced with n in [1, 64], n = 4: the guard's operator (TP_GT is %d)", TP_GT);
  expect_int(g->truth, 0, "4 > 16 traced with n in [1, 64], n = 4: the guard's recorded truth");
  expect_int(diff_at(g, &t.n, 20), 4, "4 > 16 traced with n in [1, 64], n = 4: the guard's diff (n - 16) at n = 20");
  expect_int(diff_at(g, &t.n, 16), 0, "4 > 16 traced with n in [1, 64], n = 4: the guard's diff (n - 16) at n = 16");
  expect_int(diff_at(g, &t.n, 1), -15, "4 > 16 traced with n in [1, 64], n = 4: the guard's diff (n - 16) at n = 1");
  expect_int(g->at.line, line, "4 > 16 traced with n in [1, 64], n = 4: the guard's line in test_trace.c");
  assert_contains(g->at.file, "test_trace.c");
  expect_int(uopc_counter_get(TP_C_GUARDS) - recorded, 1, "4 > 16 traced with n in [1, 64], n = 4: the counter '%s' moved by", TP_C_GUARDS);
  /* Arithmetic on sizes stays symbolic: n + 3 >= 7 holds (7 >= 7), diff n - 4. */
  truth = tp_compare_at(&t.c, tp_int_add(&t.c, n, tp_int_const(&t.c, 3)), TP_GE, tp_int_const(&t.c, 7), TP_HERE);
  assert_ctx_ok(&t);
  expect_truth(truth, 1, "n + 3 >= 7 at n = 4: the answer");
  expect_int(t.c.n_guards, 2, "n + 3 >= 7 after 4 > 16: guards recorded");
  expect_int(t.c.guards[1].op, TP_GE, "n + 3 >= 7: the guard's operator (TP_GE is %d)", TP_GE);
  expect_int(t.c.guards[1].truth, 1, "n + 3 >= 7 at n = 4: the guard's recorded truth");
  expect_int(diff_at(&t.c.guards[1], &t.n, 10), 6, "n + 3 >= 7: the guard's diff (n - 4) at n = 10");
  tctx_fini(&t);
}

static void test_compare_each_operator_at_the_boundary_records_its_truth(void **state) {
  (void)state;
  static const tp_cmp ops[] = {TP_LT, TP_LE, TP_GT, TP_GE, TP_EQ, TP_NE};
  static const int truths[] = {0, 1, 0, 1, 1, 0};   /* 16 op 16 */
  tctx t;
  tctx_init(&t, TP_TRACE, 1, 64, 16);
  tp_int n = tp_size(&t.c, t.x, 0);
  for (int k = 0; k < 6; k++) {
    int truth = tp_compare_at(&t.c, n, ops[k], tp_int_const(&t.c, 16), TP_HERE);
    assert_ctx_ok(&t);
    const char *op = tp_cmp_text(ops[k]);
    expect_truth(truth, truths[k], "n %s 16 at n = 16: the answer", op);
    expect_int(t.c.n_guards, k + 1, "n %s 16 at n = 16, comparison %d of this trace: guards recorded", op, k + 1);
    expect_int(t.c.guards[k].op, ops[k], "n %s 16 at n = 16: the guard's operator (%s is %d)", op, op, (int)ops[k]);
    expect_int(t.c.guards[k].truth, truths[k], "n %s 16 at n = 16: the guard's recorded truth", op);
    expect_int(diff_at(&t.c.guards[k], &t.n, 17), 1, "n %s 16: the guard's diff (n - 16) at n = 17", op);
  }
  /* The constant on the left: 16 < n is n - 16 reversed, 16 - n. */
  int truth = tp_lt(&t.c, tp_int_const(&t.c, 16), n);
  assert_ctx_ok(&t);
  expect_truth(truth, 0, "16 < n at n = 16: the answer");
  expect_int(t.c.n_guards, 7, "16 < n after six comparisons: guards recorded");
  expect_int(diff_at(&t.c.guards[6], &t.n, 17), -1, "16 < n: the guard's diff (16 - n) at n = 17");
  tctx_fini(&t);
}

static void test_compare_decided_by_the_bounds_records_no_guard(void **state) {
  (void)state;
  tctx t;
  tctx_init(&t, TP_TRACE, 1, 64, 4);
  int64_t recorded = uopc_counter_get(TP_C_GUARDS);
  tp_int n = tp_size(&t.c, t.x, 0), two_n = tp_int_mul(&t.c, n, tp_int_const(&t.c, 2));
  expect_truth(tp_gt(&t.c, n, tp_int_const(&t.c, 0)), 1, "n > 0, n in [1, 64], n = 4: the answer");
  expect_truth(tp_lt(&t.c, n, tp_int_const(&t.c, 65)), 1, "n < 65, n in [1, 64], n = 4: the answer");
  expect_truth(tp_compare_at(&t.c, n, TP_LE, tp_int_const(&t.c, 64), TP_HERE), 1, "n <= 64, n in [1, 64], n = 4: the answer");
  expect_truth(tp_compare_at(&t.c, n, TP_GE, tp_int_const(&t.c, 1), TP_HERE), 1, "n >= 1, n in [1, 64], n = 4: the answer");
  expect_truth(tp_eq(&t.c, n, tp_int_const(&t.c, 0)), 0, "n == 0, n in [1, 64], n = 4: the answer");
  expect_truth(tp_compare_at(&t.c, n, TP_NE, tp_int_const(&t.c, 100), TP_HERE), 1, "n != 100, n in [1, 64], n = 4: the answer");
  expect_truth(tp_gt(&t.c, two_n, tp_int_const(&t.c, 1)), 1, "2n > 1 (2n in [2, 128]), n in [1, 64], n = 4: the answer");
  expect_truth(tp_eq(&t.c, n, tp_int_const(&t.c, 70)), 0, "n == 70 (n - 70 in [-69, -6]), n in [1, 64], n = 4: the answer");
  expect_truth(tp_compare_at(&t.c, n, TP_NE, tp_int_const(&t.c, 65), TP_HERE), 1, "n != 65 (n - 65 in [-64, -1]), n in [1, 64], n = 4: the answer");
  expect_truth(tp_lt(&t.c, tp_int_const(&t.c, 3), tp_int_const(&t.c, 5)), 1, "3 < 5 (nothing symbolic), n in [1, 64], n = 4: the answer");
  assert_ctx_ok(&t);
  expect_int(t.c.n_guards, 0, "ten comparisons the bounds decide, n in [1, 64], n = 4: guards recorded");
  expect_int(uopc_counter_get(TP_C_GUARDS), recorded, "ten comparisons the bounds decide: the counter '%s'", TP_C_GUARDS);
  /* ... while one the bounds leave open still records its guard. */
  expect_truth(tp_eq(&t.c, n, tp_int_const(&t.c, 5)), 0, "n == 5, n in [1, 64], n = 4: the answer");
  assert_ctx_ok(&t);
  expect_int(t.c.n_guards, 1, "n == 5 after the decided ones, n in [1, 64], n = 4: guards recorded");
  tctx_fini(&t);
}

/* A comparison whose difference cannot be simplified (n * 2^62 * 4: the
 * folded coefficient overflows) is an error, not a guess from bounds that
 * were never computed. */
static void test_compare_that_cannot_be_simplified_is_an_error(void **state) {
  (void)state;
  tctx t;
  tctx_init(&t, TP_TRACE, 1, 64, 4);
  const sym_expr *n = sym_expr_dim(arena, &t.n);
  const sym_expr *big = sym_expr_mul(arena, sym_expr_mul(arena, n, sym_expr_const(arena, INT64_C(1) << 62)),
                                     sym_expr_const(arena, 4));
  tp_int a = {1, big};
  expect_non_null(big, "n * 2^62 * 4 built in the arena");
  expect_truth(tp_gt(&t.c, a, tp_int_const(&t.c, 1)), 0, "n * 2^62 * 4 > 1 (its simplification overflows): the answer");
  if (tp_status(&t.c) != UOPC_E_OVERFLOW)
    fail_msg("expected UOPC_E_OVERFLOW from the simplification, got %s", uopc_error_name(tp_status(&t.c)));
  expect_int(t.c.n_guards, 0, "n * 2^62 * 4 > 1 (its simplification overflows): guards recorded");
  tctx_fini(&t);
}

static void test_compare_in_eager_mode_records_no_guard(void **state) {
  (void)state;
  tctx t;
  tctx_init(&t, TP_EAGER, 1, 64, 20);
  int64_t recorded = uopc_counter_get(TP_C_GUARDS);
  tp_int n = tp_size(&t.c, t.x, 0);
  expect_int(n.value, 20, "tp_size of x in eager mode (n = 20): its value");
  expect_truth(tp_gt(&t.c, n, tp_int_const(&t.c, 16)), 1, "n > 16 in eager mode, n = 20: the answer");
  expect_truth(tp_compare_at(&t.c, n, TP_LE, tp_int_const(&t.c, 16), TP_HERE), 0, "n <= 16 in eager mode, n = 20: the answer");
  expect_truth(tp_eq(&t.c, n, tp_int_const(&t.c, 20)), 1, "n == 20 in eager mode, n = 20: the answer");
  assert_ctx_ok(&t);
  expect_int(t.c.n_guards, 0, "three comparisons in eager mode: guards recorded");
  expect_int(uopc_counter_get(TP_C_GUARDS), recorded, "three comparisons in eager mode: the counter '%s'", TP_C_GUARDS);
  tctx_fini(&t);
}

/* Without the guard, the variant traced for n = 4 (x + 1) would be reused
 * for n = 20, whose answer is 2 x (tests/broken/23.4.mk). */
static void test_shape_branch_both_outcomes_match_eager(void **state) {
  (void)state;
  static const int64_t lengths[] = {4, 20, 16, 17, 1, 1024};
  tp_compiled *f = vector_fn(shape_branch, NULL, 1024, 0);
  int64_t recompiled = uopc_counter_get(TP_C_RECOMPILATIONS);
  for (int k = 0; k < 6; k++) call_matches_eager(f, shape_branch, NULL, lengths[k], 1);
  expect_int(tp_compiled_variant_count(f), 2, "the shape branch n > 16 called at n = 4, 20, 16, 17, 1, 1024: variants");
  for (int k = 0; k < 2; k++) {
    const tp_variant *v = tp_compiled_variant(f, k);
    expect_int(v->n_guards, 1, "the shape branch's variant %d (traced at n = %d): its guards", k, k ? 20 : 4);
    expect_int(v->guards[0].truth, k, "the shape branch's variant %d (traced at n = %d): the truth of n > 16", k, k ? 20 : 4);
  }
  expect_int(uopc_counter_get(TP_C_RECOMPILATIONS) - recompiled, 1,
             "the shape branch called at n = 4, 20, 16, 17, 1, 1024: the counter '%s' moved by", TP_C_RECOMPILATIONS);
  tp_compiled_free(f);
}

/* ---- tp_variant_holds */

static int holds_at(const tp_variant *v, const sym_dim *n, int64_t value) {
  sym_binding b;
  uopc_error err = {0};
  int holds = -1;
  sym_binding_init(&b);
  assert_uopc_ok(sym_dim_bind(&b, n, value, &err), err);
  assert_uopc_ok(tp_variant_holds(v, &b, &holds, &err), err);
  if (holds != 0 && holds != 1) fail_msg("holds is %d, not 0 or 1", holds);
  return holds;
}

static void test_variant_holds_true_false_and_at_the_boundary(void **state) {
  (void)state;
  uopc_error err = {0};
  sym_dim n;
  assert_uopc_ok(sym_dim_init(&n, "n", 1, 1024, 1, &err), err);
  const sym_expr *diff = sym_expr_sub(arena, sym_expr_dim(arena, &n), sym_expr_const(arena, 16));
  tp_guard g = {diff, TP_GT, 0, TP_HERE};            /* traced with n <= 16 */
  tp_variant v = {.guards = &g, .n_guards = 1};
  expect_truth(holds_at(&v, &n, 1), 1, "a variant whose guard is n > 16 false: holds at n = 1");
  expect_truth(holds_at(&v, &n, 15), 1, "a variant whose guard is n > 16 false: holds at n = 15");
  expect_truth(holds_at(&v, &n, 16), 1, "a variant whose guard is n > 16 false: holds at n = 16");
  expect_truth(holds_at(&v, &n, 17), 0, "a variant whose guard is n > 16 false: holds at n = 17");
  expect_truth(holds_at(&v, &n, 1024), 0, "a variant whose guard is n > 16 false: holds at n = 1024");
  g.truth = 1;                                      /* traced with n > 16 */
  expect_truth(holds_at(&v, &n, 16), 0, "a variant whose guard is n > 16 true: holds at n = 16");
  expect_truth(holds_at(&v, &n, 17), 1, "a variant whose guard is n > 16 true: holds at n = 17");
  g.op = TP_EQ;                                     /* traced with n == 16 */
  expect_truth(holds_at(&v, &n, 16), 1, "a variant whose guard is n == 16 true: holds at n = 16");
  expect_truth(holds_at(&v, &n, 15), 0, "a variant whose guard is n == 16 true: holds at n = 15");
  expect_truth(holds_at(&v, &n, 17), 0, "a variant whose guard is n == 16 true: holds at n = 17");
  g.op = TP_LE, g.truth = 0;                        /* traced with !(n <= 16) */
  expect_truth(holds_at(&v, &n, 16), 0, "a variant whose guard is n <= 16 false: holds at n = 16");
  expect_truth(holds_at(&v, &n, 17), 1, "a variant whose guard is n <= 16 false: holds at n = 17");
}

static void test_variant_holds_needs_every_guard(void **state) {
  (void)state;
  uopc_error err = {0};
  sym_dim n, m;
  assert_uopc_ok(sym_dim_init(&n, "n", 1, 1024, 1, &err), err);
  assert_uopc_ok(sym_dim_init(&m, "m", 1, 1024, 1, &err), err);
  const sym_expr *ne = sym_expr_dim(arena, &n);
  tp_guard g[2] = {{sym_expr_sub(arena, ne, sym_expr_const(arena, 4)), TP_GT, 1, TP_HERE},     /* n > 4 */
                   {sym_expr_sub(arena, ne, sym_expr_const(arena, 16)), TP_GT, 0, TP_HERE}};  /* !(n > 16) */
  tp_variant v = {.guards = g, .n_guards = 2};
  expect_truth(holds_at(&v, &n, 4), 0, "a variant with guards n > 4 true and n > 16 false: holds at n = 4");
  expect_truth(holds_at(&v, &n, 5), 1, "a variant with guards n > 4 true and n > 16 false: holds at n = 5");
  expect_truth(holds_at(&v, &n, 16), 1, "a variant with guards n > 4 true and n > 16 false: holds at n = 16");
  expect_truth(holds_at(&v, &n, 17), 0, "a variant with guards n > 4 true and n > 16 false: holds at n = 17");
  tp_variant none = {0};                            /* a trace without branches holds for every call */
  expect_truth(holds_at(&none, &n, 99), 1, "a variant with no guards: holds at n = 99");
  /* A guard over a dim this call did not bind: its error, not an answer. */
  tp_guard on_m = {sym_expr_sub(arena, sym_expr_dim(arena, &m), sym_expr_const(arena, 2)), TP_GT, 1, TP_HERE};
  tp_variant vm = {.guards = &on_m, .n_guards = 1};
  sym_binding b;
  sym_binding_init(&b);
  assert_uopc_ok(sym_dim_bind(&b, &n, 3, &err), err);
  int holds = 0;
  assert_uopc_code(tp_variant_holds(&vm, &b, &holds, &err), UOPC_E_UNBOUND, err);
}

static void test_variant_hit_does_not_trace_again(void **state) {
  (void)state;
  tp_compiled *f = vector_fn(shape_branch, NULL, 1024, 0);
  call_matches_eager(f, shape_branch, NULL, 4, 1);
  call_matches_eager(f, shape_branch, NULL, 20, 1);
  expect_int(tp_compiled_variant_count(f), 2, "the shape branch n > 16 called at n = 4, 20: variants");
  int64_t traces = uopc_counter_get(TP_C_TRACES), failures = uopc_counter_get(TP_C_GUARD_FAILURES);
  int64_t built = uopc_counter_get("programs constructed");
  static const int64_t lengths[] = {5, 30, 16, 17, 1};
  for (int k = 0; k < 5; k++) call_matches_eager(f, shape_branch, NULL, lengths[k], -1);
  #define HITS "the shape branch, traced at n = 4 and 20, then called at n = 5, 30, 16, 17, 1"
  expect_int(uopc_counter_get(TP_C_TRACES), traces, HITS ": the counter '%s'", TP_C_TRACES);
  expect_int(uopc_counter_get("programs constructed"), built, HITS ": the counter 'programs constructed'");
  expect_int(tp_compiled_variant_count(f), 2, HITS ": variants");
  expect_int(uopc_counter_get(TP_C_GUARD_FAILURES) - failures, 2,   /* 30 and 17 fail n <= 16 */
             HITS ": the counter '%s' moved by", TP_C_GUARD_FAILURES);
#undef HITS
  tp_compiled_free(f);
}

static void test_more_shape_outcomes_than_variants_is_a_limit_error(void **state) {
  (void)state;
  tp_compiled *f = vector_fn(staircase, NULL, 1024, 0);
  for (int64_t n = 1; n <= TP_VARIANTS_MAX; n++) call_matches_eager(f, staircase, NULL, n, 1);
  expect_int(tp_compiled_variant_count(f), TP_VARIANTS_MAX, "a staircase of shape branches called at n = 1 .. %d: variants", TP_VARIANTS_MAX);
  uopc_error err = {0};
  assert_uopc_code(call_error(f, TP_VARIANTS_MAX + 1, &err), UOPC_E_LIMIT, err);
  expect_int(tp_compiled_variant_count(f), TP_VARIANTS_MAX, "the staircase after a refused call at n = %d: variants", TP_VARIANTS_MAX + 1);
  call_matches_eager(f, staircase, NULL, 3, 1);    /* the variants still serve their own calls */
  tp_compiled_free(f);
}

/* ---- tp_on_break */

static void test_item_under_tracer_breaks_and_matches_eager(void **state) {
  (void)state;
  tp_compiled *f = vector_fn(data_branch, NULL, 1024, 0);
  int64_t breaks = uopc_counter_get(TP_C_BREAKS), traces = uopc_counter_get(TP_C_TRACES);
  call_matches_eager(f, data_branch, NULL, 10, 1);
  call_matches_eager(f, data_branch, NULL, 11, -1);
  expect_int(uopc_counter_get(TP_C_BREAKS) - breaks, 2, "a data branch on tp_item called at n = 10, 11: the counter '%s' moved by", TP_C_BREAKS);
  expect_int(uopc_counter_get(TP_C_TRACES) - traces, 2,   /* a broken trace is traced at every call */
             "a data branch on tp_item called at n = 10, 11: the counter '%s' moved by", TP_C_TRACES);
  expect_int(tp_compiled_variant_count(f), 0, "a data branch on tp_item called at n = 10, 11: variants");
  tp_compiled_free(f);
  /* The value read is this call's: x * sum(x). */
  tp_compiled *g = vector_fn(item_scaled, NULL, 1024, 0);
  call_matches_eager(g, item_scaled, NULL, 5, 1);
  call_matches_eager(g, item_scaled, NULL, 7, -1);
  expect_int(uopc_counter_get(TP_C_BREAKS) - breaks, 4, "then x * sum(x).item() called at n = 5, 7: the counter '%s' moved by", TP_C_BREAKS);
  tp_compiled_free(g);
}

static void test_item_regions_are_compiled_once(void **state) {
  (void)state;
  tp_compiled *f = vector_fn(data_branch, NULL, 1024, 0);
  int64_t breaks = uopc_counter_get(TP_C_BREAKS), built = 0;
  for (int k = 0; k < 4; k++) {    /* signs +, -, +, -: both branches, then both again */
    if (k == 2) built = uopc_counter_get("programs constructed");
    call_matches_eager(f, data_branch, NULL, 10 + k, k % 2 ? -1 : 1);
  }
  expect_int(uopc_counter_get(TP_C_BREAKS) - breaks, 4, "a data branch called at n = 10 .. 13, signs + - + -: the counter '%s' moved by", TP_C_BREAKS);
  expect_int(uopc_counter_get("programs constructed"), built,
             "a data branch, both outcomes again at n = 12, 13: the counter 'programs constructed'");
  tp_compiled_free(f);
}

/* The regions of a data branch are cached by what their program's signature depends on too (its
 * inputs), not only by what their outputs compute: signs +, -, + run both paths, each correct. */
static void test_item_regions_with_other_inputs_are_other_programs(void **state) {
  (void)state;
  tp_compiled *f = vector_fn(branch_changes_inputs, NULL, 1024, 0);
  for (int k = 0; k < 3; k++) call_matches_eager(f, branch_changes_inputs, NULL, 6 + k, k % 2 ? -1 : 1);
  tp_compiled_free(f);
}

static void test_item_in_strict_mode_names_tp_item_and_the_line(void **state) {
  (void)state;
  tp_compiled *f = vector_fn(data_branch, NULL, 1024, 1);
  int64_t breaks = uopc_counter_get(TP_C_BREAKS);
  uopc_error err = {0};
  assert_uopc_code(call_error(f, 8, &err), UOPC_E_UNSUPPORTED, err);
  assert_contains(err.message, "tp_item");
  assert_contains(err.message, site(item_line));
  assert_contains(err.message, "tp_where");          /* the way out, as tp_internal.h asks */
  assert_contains(err.message, "without strict");
  expect_int(uopc_counter_get(TP_C_BREAKS), breaks, "tp_item in strict mode at n = 8 (refused, not broken): the counter '%s'", TP_C_BREAKS);
  expect_int(tp_compiled_variant_count(f), 0, "tp_item in strict mode at n = 8: variants");
  tp_compiled_free(f);
}

/* ---- tp_region_close and tp_on_break, on a tracing context of the test's
 * own (no region cache: each region's program is built, run and freed). */

/* x (4) = (1, 2, 3, 4) / 4 traced with two, a = 2 x and s = sum(a) pending. */
typedef struct pending { tctx t; tp_tensor *two, *a, *s; } pending;

static void pending_init(pending *p) {
  tctx_init(&p->t, TP_TRACE, 1, 64, 4);
  for (int64_t i = 0; i < 4; i++) uopc_tensor_set(&p->t.xv, i, (double)(i + 1) / 4);
  p->two = tp_scalar(&p->t.c, 2);
  p->a = tp_mul(&p->t.c, p->t.x, p->two);
  p->s = tp_sum(&p->t.c, p->a, 0u, 0);
  assert_ctx_ok(&p->t);
}

/* Each of a's four elements, 2 x, and s = sum(2 x) = 5: the values a region computed. */
static void expect_pending_values(pending *p, const char *when) {
  const uopc_tensor *a = tp_value(p->a), *s = tp_value(p->s), *two = tp_value(p->two);
  expect_non_null(a, "%s: a = 2 x's value", when);
  expect_non_null(s, "%s: s = sum(a)'s value", when);
  expect_non_null(two, "%s: the constant 2's value (a pending handle too)", when);
  expect_int(uopc_tensor_numel(a), 4, "%s: a = 2 x's elements", when);
  for (int64_t i = 0; i < 4; i++) expect_close(uopc_tensor_get(a, i), (double)(i + 1) / 2, 1e-6, "%s: a[%lld]", when, (long long)i);
  expect_close(uopc_tensor_get(s, 0), 5.0, 1e-6, "%s: s = sum(2 x) for x = (1, 2, 3, 4) / 4", when);
  expect_close(uopc_tensor_get(two, 0), 2.0, 0, "%s: the constant 2", when);
}

static void test_region_close_gives_each_pending_handle_its_value(void **state) {
  (void)state;
  pending p;
  pending_init(&p);
  uopc_error err = {0};
  int64_t built = uopc_counter_get("programs constructed"), breaks = uopc_counter_get(TP_C_BREAKS);
  assert_uopc_ok(tp_region_close(&p.t.c, TP_HERE, &err), err);
  #define WHEN "tp_region_close after two = 2, a = x * two, s = sum(a)"
  expect_int(uopc_counter_get("programs constructed") - built, 1, WHEN ": the counter 'programs constructed' moved by (one program, every output)");
  expect_pending_values(&p, WHEN);
  expect_ptr(tp_value(p.t.x)->storage, p.t.xv.storage, WHEN ": x's storage (an argument already has its value: not an output)");
  expect_int(p.t.c.breaks, 0, WHEN ": c->breaks (closing is not a break: tp_on_break counts)");
  expect_int(uopc_counter_get(TP_C_BREAKS) - breaks, 0, WHEN ": the counter '%s' moved by", TP_C_BREAKS);
  expect_int(p.t.c.region, 0, WHEN ": c->region (closing opens no new region)");
  #undef WHEN
  tctx_fini(&p.t);
  /* The first handle of a context pending too: a constant made before any input. */
  tp_ctx c;
  assert_uopc_ok(tp_ctx_init(&c, TP_TRACE, &err), err);
  tp_tensor *three = tp_scalar(&c, 3);
  expect_int(three ? three->id : -1, 0, "the constant 3 made first in a tracing context: its handle's id");
  assert_uopc_ok(tp_region_close(&c, TP_HERE, &err), err);
  expect_non_null(tp_value(three), "tp_region_close of a context holding only the constant 3 (handle 0): its value");
  expect_close(uopc_tensor_get(tp_value(three), 0), 3.0, 0, "tp_region_close of a context holding only the constant 3: its value");
  tp_ctx_fini(&c);
}

static void test_region_close_with_nothing_pending_builds_nothing(void **state) {
  (void)state;
  tctx t;
  tctx_init(&t, TP_TRACE, 1, 64, 4);
  uopc_error err = {0};
  int64_t built = uopc_counter_get("programs constructed");
  assert_uopc_ok(tp_region_close(&t.c, TP_HERE, &err), err);
  expect_int(uopc_counter_get("programs constructed") - built, 0,
             "tp_region_close of a region holding only the argument x: the counter 'programs constructed' moved by");
  expect_ptr(tp_value(t.x)->storage, t.xv.storage, "tp_region_close of a region holding only x: x's storage");
  tctx_fini(&t);
  /* Closed twice: the second close finds every handle with its value. */
  pending p;
  pending_init(&p);
  assert_uopc_ok(tp_region_close(&p.t.c, TP_HERE, &err), err);
  const uopc_tensor *a = tp_value(p.a);
  built = uopc_counter_get("programs constructed");
  assert_uopc_ok(tp_region_close(&p.t.c, TP_HERE, &err), err);
  expect_int(uopc_counter_get("programs constructed") - built, 0,
             "a second tp_region_close after a = 2 x, s = sum(a) had their values: the counter 'programs constructed' moved by");
  expect_ptr(tp_value(p.a)->storage, a->storage, "a second tp_region_close: a's storage (the first close's value is kept)");
  expect_pending_values(&p, "after a second tp_region_close");
  tctx_fini(&p.t);
}

/* Every handle with a value read through an input of the current region, in
 * the order of the handles. */
static void expect_inputs(const tctx *t, tp_tensor *const *h, int n, const char *when) {
  expect_int(t->c.n_inputs, n, "%s: the new region's inputs (one per handle with a value)", when);
  for (int k = 0; k < n && k < t->c.n_inputs; k++) {
    expect_int(h[k]->ref->op, IR_INPUT, "%s: handle %d's node's op (IR_INPUT is %d)", when, h[k]->id, IR_INPUT);
    expect_ptr(t->c.inputs[k].node, h[k]->ref, "%s: input %d's node (handle %d reads through it)", when, k, h[k]->id);
    expect_ptr(t->c.inputs[k].value, &h[k]->value, "%s: input %d's value (handle %d's)", when, k, h[k]->id);
  }
}

static void test_break_counts_and_resumes_in_a_new_region(void **state) {
  (void)state;
  pending p;
  pending_init(&p);
  uopc_error err = {0};
  int line = __LINE__; tp_site at = TP_HERE;
  assert_uopc_ok(tp_on_break(&p.t.c, "tp_item", at, &err), err);
  #define WHEN "the first tp_on_break after two = 2, a = x * two, s = sum(a)"
  expect_int(p.t.c.breaks, 1, WHEN ": c->breaks");
  expect_int(p.t.c.break_at.line, line, WHEN ": c->break_at's line in test_trace.c");
  expect_int(p.t.c.region, 1, WHEN ": c->region");
  expect_pending_values(&p, WHEN);
  expect_inputs(&p.t, (tp_tensor *[]){p.t.x, p.two, p.a, p.s}, 4, WHEN);
  #undef WHEN
  /* The new region reads the old values: b = a + x is 3 x, and a second break keeps the first's site. */
  tp_tensor *b = tp_add(&p.t.c, p.a, p.t.x);
  assert_ctx_ok(&p.t);
  assert_uopc_ok(tp_on_break(&p.t.c, "tp_item", TP_HERE, &err), err);
  #define WHEN "a second tp_on_break after b = a + x"
  expect_int(p.t.c.breaks, 2, WHEN ": c->breaks");
  expect_int(p.t.c.break_at.line, line, WHEN ": c->break_at's line (the first break's)");
  expect_int(p.t.c.region, 2, WHEN ": c->region");
  expect_non_null(tp_value(b), WHEN ": b's value");
  for (int64_t i = 0; i < 4; i++)
    expect_close(uopc_tensor_get(tp_value(b), i), 3.0 * (double)(i + 1) / 4, 1e-6, WHEN ": b[%lld] = 3 x", (long long)i);
  expect_inputs(&p.t, (tp_tensor *[]){p.t.x, p.two, p.a, p.s, b}, 5, WHEN);
  #undef WHEN
  tctx_fini(&p.t);
}

/* x + sum(x) * x after two reads: the argument, read after both breaks, still the call's. */
static int reads_after_breaks(tp_ctx *c, tp_tensor *const *in, tp_tensor **out, void *user) {
  (void)user;
  tp_tensor *s = tp_sum(c, in[0], 0u, 0);
  double v = tp_item(c, s);
  tp_tensor *y = tp_mul(c, in[0], s);
  double w = tp_item(c, tp_sum(c, y, 0u, 0));
  out[0] = tp_add(c, tp_add(c, in[0], y), tp_scalar(c, (v > 0) - (w < 0)));
  return tp_status(c);
}

static void test_break_keeps_every_earlier_value_readable(void **state) {
  (void)state;
  tp_compiled *f = vector_fn(reads_after_breaks, NULL, 1024, 0);
  int64_t breaks = uopc_counter_get(TP_C_BREAKS);
  call_matches_eager(f, reads_after_breaks, NULL, 6, 1);
  call_matches_eager(f, reads_after_breaks, NULL, 9, -1);
  expect_int(uopc_counter_get(TP_C_BREAKS) - breaks, 4, "two tp_item reads a call, called at n = 6, 9: the counter '%s' moved by", TP_C_BREAKS);
  tp_compiled_free(f);
}

/* ---- tp_effect_check */

static void test_print_under_tracer_is_rejected_naming_the_line(void **state) {
  (void)state;
  tp_compiled *f = vector_fn(printing, NULL, 1024, 0);
  uopc_error err = {0};
  assert_uopc_code(call_error(f, 4, &err), UOPC_E_UNSUPPORTED, err);
  assert_contains(err.message, "tp_print");
  assert_contains(err.message, site(print_line));
  expect_int(tp_compiled_variant_count(f), 0, "tp_print under the tracer at n = 4: variants");
  tp_compiled_free(f);
}

static void test_global_under_tracer_is_rejected_naming_the_line(void **state) {
  (void)state;
  uopc_tensor g = ramp(4, 1);
  tp_compiled *f = vector_fn(reads_global, &g, 1024, 0);
  uopc_error err = {0};
  assert_uopc_code(call_error(f, 4, &err), UOPC_E_UNSUPPORTED, err);
  assert_contains(err.message, "tp_global");
  assert_contains(err.message, site(global_line));
  expect_int(tp_compiled_variant_count(f), 0, "tp_global under the tracer at n = 4: variants");
  tp_compiled_free(f);
  uopc_tensor_release(&g);
}

static void test_impure_callback_is_rejected_and_pure_runs_at_trace_time(void **state) {
  (void)state;
  callback_user impure = {0, 0}, pure = {1, 0};
  tp_compiled *f = vector_fn(calls_back, &impure, 1024, 0);
  uopc_error err = {0};
  assert_uopc_code(call_error(f, 4, &err), UOPC_E_UNSUPPORTED, err);
  assert_contains(err.message, "tp_callback");
  assert_contains(err.message, site(callback_line));
  expect_int(impure.calls, 0, "an impure tp_callback under the tracer at n = 4 (rejected before it runs): its calls");
  tp_compiled_free(f);
  /* A pure callback is allowed: it runs when the model is traced, not at a variant's call. */
  tp_compiled *g = vector_fn(calls_back, &pure, 1024, 0);
  assert_uopc_ok(call_error(g, 4, &err), err);
  assert_uopc_ok(call_error(g, 9, &err), err);
  expect_int(pure.calls, 1, "a pure tp_callback called at n = 4, 9 (it runs at trace time only): its calls");
  expect_int(tp_compiled_variant_count(g), 1, "a pure tp_callback called at n = 4, 9: variants");
  call_matches_eager(g, calls_back, &pure, 6, -1);
  tp_compiled_free(g);
}

static void test_effect_check_rejects_each_effect_under_tracer(void **state) {
  (void)state;
  static const tp_effect effects[] = {TP_EFFECT_PRINT, TP_EFFECT_GLOBAL, TP_EFFECT_IMPURE_CALLBACK, TP_EFFECT_RANDOM};
  static const char *const names[] = {"tp_print", "tp_global", "tp_callback", "tp_rand_like"};
  tctx t;
  tctx_init(&t, TP_TRACE, 1, 64, 4);
  for (int k = 0; k < 4; k++) {
    uopc_error err = {0};
    int rc = tp_effect_check(&t.c, effects[k], 0, TP_HERE, &err);
    if (rc != UOPC_E_UNSUPPORTED)
      fail_msg("effect %d under the tracer: expected UOPC_E_UNSUPPORTED, got %s: %s", (int)effects[k],
               uopc_error_name(rc), err.message);
    if (!strstr(err.message, names[k]))   /* the error names the operation it refuses */
      fail_msg("effect %d under the tracer: the message \"%s\" does not name %s", (int)effects[k], err.message,
               names[k]);
  }
  uopc_error err = {0};
  assert_uopc_ok(tp_effect_check(&t.c, TP_EFFECT_IMPURE_CALLBACK, 1, TP_HERE, &err), err);   /* declared pure */
  tctx_fini(&t);
}

static void test_effects_are_allowed_eagerly(void **state) {
  (void)state;
  static const tp_effect effects[] = {TP_EFFECT_PRINT, TP_EFFECT_GLOBAL, TP_EFFECT_IMPURE_CALLBACK, TP_EFFECT_RANDOM};
  tctx t;
  tctx_init(&t, TP_EAGER, 1, 64, 4);
  for (int k = 0; k < 4; k++)
    for (int pure = 0; pure < 2; pure++) {
      uopc_error err = {0};
      assert_uopc_ok(tp_effect_check(&t.c, effects[k], pure, TP_HERE, &err), err);
    }
  expect_non_null(tp_rand_like_at(&t.c, t.x, 0, 0, TP_HERE), "tp_rand_like in eager mode, n = 4");
  assert_ctx_ok(&t);
  tctx_fini(&t);
  /* The models the tracer refuses run eagerly, effects and all. */
  uopc_tensor x = ramp(4, 1), g = ramp(4, -1), out[1] = {{0}};
  const uopc_tensor *in[1] = {&x};
  uopc_error err = {0};
  assert_uopc_ok(tp_run_eager(printing, NULL, in, 1, 1, 0, out, NULL, &err), err);
  expect_close(uopc_tensor_get(&out[0], 3), 2.0, 1e-6, "x + x with tp_print, run eagerly on x = (1, 2, 3, 4) / 4: out[3]");
  uopc_tensor_release(&out[0]);
  assert_uopc_ok(tp_run_eager(reads_global, &g, in, 1, 1, 0, out, NULL, &err), err);
  expect_close(uopc_tensor_get(&out[0], 3), 0.0, 1e-6, "x + g run eagerly with the global g = -x, n = 4: out[3]");
  uopc_tensor_release(&out[0]);
  callback_user impure = {0, 0};
  assert_uopc_ok(tp_run_eager(calls_back, &impure, in, 1, 1, 0, out, NULL, &err), err);
  expect_int(impure.calls, 1, "an impure tp_callback run eagerly: its calls");
  uopc_tensor_release(&out[0]);
  uopc_tensor_release(&x), uopc_tensor_release(&g);
}

/* ---- Bad input (given code) */

static int mismatched_matmul(tp_ctx *c, tp_tensor *const *in, tp_tensor **out, void *user) {
  (void)user;
  matmul_line = __LINE__; tp_tensor *p = tp_matmul(c, in[0], in[1]);
  out[0] = tp_sum(c, p, 0u, 0);
  return tp_status(c);
}

static void test_matmul_shape_mismatch_names_the_model_line(void **state) {
  (void)state;
  uopc_error err = {0};
  sym_dim b;
  assert_uopc_ok(sym_dim_init(&b, "B", 1, 64, 1, &err), err);
  tp_arg args[2] = {{"x", UOPC_F32, 2, {sym_expr_dim(arena, &b), sym_expr_const(arena, 3)}},
                    {"w", UOPC_F32, 2, {sym_expr_const(arena, 4), sym_expr_const(arena, 2)}}};
  tp_compiled *f = NULL;
  assert_uopc_ok(tp_compiled_new(&f, mismatched_matmul, NULL, args, 2, 1, NULL, &err), err);
  uopc_tensor x, w, out[1] = {{0}};
  int64_t xs[2] = {5, 3}, ws[2] = {4, 2};
  assert_uopc_ok(uopc_tensor_empty(&x, UOPC_F32, 2, xs, &err), err);
  assert_uopc_ok(uopc_tensor_empty(&w, UOPC_F32, 2, ws, &err), err);
  const uopc_tensor *in[2] = {&x, &w};
  assert_uopc_code(tp_call(f, in, out, NULL, &err), UOPC_E_INVALID, err);
  assert_contains(err.message, "matmul");
  assert_contains(err.message, site(matmul_line));
  memset(&err, 0, sizeof err);
  assert_uopc_code(tp_run_eager(mismatched_matmul, NULL, in, 2, 1, 0, out, NULL, &err), UOPC_E_INVALID, err);
  assert_contains(err.message, site(matmul_line));
  tp_compiled_free(f);
  uopc_tensor_release(&x), uopc_tensor_release(&w);
}

static int sums_w(tp_ctx *c, tp_tensor *const *in, tp_tensor **out, void *user) {
  (void)user;
  out[0] = tp_sum(c, in[1], 0u, 0);
  return tp_status(c);
}

static void test_gradient_of_an_i32_input_is_a_dtype_error(void **state) {
  (void)state;
  uopc_error err = {0};
  sym_dim n;
  assert_uopc_ok(sym_dim_init(&n, "n", 1, 64, 1, &err), err);
  const sym_expr *ne = sym_expr_dim(arena, &n);
  tp_arg args[2] = {{"k", UOPC_I32, 1, {ne}}, {"w", UOPC_F32, 1, {ne}}};
  tp_options o = {.grad_inputs = 0x1};
  tp_compiled *f = NULL;
  assert_uopc_ok(tp_compiled_new(&f, sums_w, NULL, args, 2, 1, &o, &err), err);
  uopc_tensor k, w, out[1] = {{0}}, grads[1] = {{0}};
  int64_t len = 6;
  assert_uopc_ok(uopc_tensor_empty(&k, UOPC_I32, 1, &len, &err), err);
  assert_uopc_ok(uopc_tensor_empty(&w, UOPC_F32, 1, &len, &err), err);
  const uopc_tensor *in[2] = {&k, &w};
  assert_uopc_code(tp_call(f, in, out, grads, &err), UOPC_E_DTYPE, err);
  assert_contains(err.message, "i32");
  assert_uopc_code(tp_run_eager(sums_w, NULL, in, 2, 1, 0x1, out, grads, &err), UOPC_E_DTYPE, err);
  tp_compiled_free(f);
  uopc_tensor_release(&k), uopc_tensor_release(&w);
}

static void test_argument_outside_its_dim_bounds_is_rejected(void **state) {
  (void)state;
  tp_compiled *f = vector_fn(doubles, NULL, 64, 0);
  int64_t traces = uopc_counter_get(TP_C_TRACES);
  uopc_error err = {0};
  assert_uopc_code(call_error(f, 65, &err), UOPC_E_BOUNDS, err);
  assert_contains(err.message, "65");
  assert_contains(err.message, "64");
  expect_int(uopc_counter_get(TP_C_TRACES), traces,   /* refused before tracing */
             "a call at n = 65 for n in [1, 64]: the counter '%s'", TP_C_TRACES);
  call_matches_eager(f, doubles, NULL, 64, 1);
  tp_compiled_free(f);
}

static int leaves_output_unset(tp_ctx *c, tp_tensor *const *in, tp_tensor **out, void *user) {
  (void)user, (void)out;
  tp_add(c, in[0], in[0]);
  return tp_status(c);
}

static void test_model_that_leaves_its_output_unset_is_invalid(void **state) {
  (void)state;
  tp_compiled *f = vector_fn(leaves_output_unset, NULL, 64, 0);
  uopc_error err = {0};
  assert_uopc_code(call_error(f, 4, &err), UOPC_E_INVALID, err);
  assert_contains(err.message, "output 0");
  uopc_tensor x = ramp(4, 1), out[1] = {{0}};
  const uopc_tensor *in[1] = {&x};
  assert_uopc_code(tp_run_eager(leaves_output_unset, NULL, in, 1, 1, 0, out, NULL, &err), UOPC_E_INVALID, err);
  uopc_tensor_release(&x);
  tp_compiled_free(f);
}

/* ---- Errors a model causes name its line; arguments of any layout (given code) */

static int no_rule_line, loss_line, break_line;

/* sum(x * sum(x)), the inner sum read as a number. */
static int item_loss(tp_ctx *c, tp_tensor *const *in, tp_tensor **out, void *user) {
  (void)user;
  tp_tensor *s = tp_sum(c, in[0], 0u, 0);
  break_line = __LINE__; double v = tp_item(c, s);
  out[0] = tp_sum(c, tp_mul(c, in[0], tp_scalar(c, v)), 0u, 0);
  return tp_status(c);
}

/* x * x, a vector where a loss must be a scalar. */
static int vector_loss(tp_ctx *c, tp_tensor *const *in, tp_tensor **out, void *user) {
  (void)user;
  loss_line = __LINE__; out[0] = tp_mul(c, in[0], in[0]);
  return tp_status(c);
}

/* A compiled function of x (n in [1, 1024]) with d out[0] / d x. */
static tp_compiled *grad_fn(tp_model m) {
  uopc_error err = {0};
  sym_dim n;
  assert_uopc_ok(sym_dim_init(&n, "n", 1, 1024, 1, &err), err);
  tp_arg a = {"x", UOPC_F32, 1, {sym_expr_dim(arena, &n)}};
  tp_options o = {.grad_inputs = 0x1};
  tp_compiled *f = NULL;
  assert_uopc_ok(tp_compiled_new(&f, m, NULL, &a, 1, 1, &o, &err), err);
  return f;
}

/* The gradient of m on ramp(n), compiled and eager: code want, a message
 * naming line and neither runner. */
static void grad_error_names(tp_model m, int64_t n, int want, const int *line) {
  tp_compiled *f = grad_fn(m);
  uopc_tensor x = ramp(n, 1), out[1] = {{0}}, grads[1] = {{0}};
  const uopc_tensor *in[1] = {&x};
  for (int eager = 0; eager < 2; eager++) {
    uopc_error err = {0};
    int rc = eager ? tp_run_eager(m, NULL, in, 1, 1, 0x1, out, grads, &err) : tp_call(f, in, out, grads, &err);
    assert_uopc_code(rc, want, err);
    if (!strstr(err.message, site(*line)) || strstr(err.message, ":0:"))   /* *line: set when the model ran */
      fail_msg("%s: \"%s\" should name %s, where the model made the tensor, and no runner's site (\":0:\")",
               eager ? "tp_run_eager" : "tp_call", err.message, site(*line));
  }
  tp_compiled_free(f);
  uopc_tensor_release(&x);
}

static void test_backward_without_a_rule_names_the_model_line(void **state) {
  (void)state;
  /* every op of the tensor API has a rule now (max's is given: tp_grad_more.c), so the student's
   * tp_vjp_rule is asked for max's directly, its error recorded as tp_vjp records it */
  uopc_tensor x = ramp(5, 1);
  tp_ctx *c = NULL;
  uopc_error err = {0};
  assert_uopc_ok(tp_ctx_new_eager(&c, &err), err);
  no_rule_line = __LINE__; tp_tensor *m = tp_reduce_at(c, IR_MAX, tp_wrap(c, &x), 0u, 0, TP_HERE);
  tp_tensor *gx[3] = {NULL, NULL, NULL};
  assert_non_null(m);
  tp_student(c, m->at, tp_vjp_rule(c, m, tp_scalar(c, 1), gx, m->at, &err), &err);
  assert_int_equal(tp_status(c), UOPC_E_UNSUPPORTED);
  const char *msg = tp_error(c)->message;
  if (!strstr(msg, site(no_rule_line)) || strstr(msg, ":0:"))
    fail_msg("\"%s\" should name %s, where the model made the tensor", msg, site(no_rule_line));
  tp_ctx_free(c);
  uopc_tensor_release(&x);
}

static void test_backward_of_a_vector_loss_names_the_loss_line(void **state) {
  (void)state;
  grad_error_names(vector_loss, 5, UOPC_E_INVALID, &loss_line);
}

static void test_backward_across_a_break_names_the_break_line(void **state) {
  (void)state;
  tp_compiled *f = grad_fn(item_loss);
  uopc_error err = {0};
  uopc_tensor x = ramp(6, 1), out[1] = {{0}}, grads[1] = {{0}};
  const uopc_tensor *in[1] = {&x};
  assert_uopc_code(tp_call(f, in, out, grads, &err), UOPC_E_UNSUPPORTED, err);
  assert_contains(err.message, "1 graph break");
  assert_contains(err.message, site(break_line));
  tp_compiled_free(f);
  uopc_tensor_release(&x);
}

/* x = x0[::2] of x0 = ramp(10): a view with stride 2, read in both modes as
 * its packed copy (x + x, exactly 2 x0[2 i]), the caller's view untouched. */
static void test_strided_argument_is_read_like_its_copy(void **state) {
  (void)state;
  tp_compiled *f = vector_fn(doubles, NULL, 1024, 0);
  uopc_error err = {0};
  uopc_tensor x0 = ramp(10, 1), x;
  assert_uopc_ok(uopc_tensor_slice(&x, &x0, 0, 0, UOPC_SLICE_NONE, 2, &err), err);
  expect_int(x.strides[0], 2, "x0[::2]'s stride");
  const uopc_tensor *in[1] = {&x};
  uint64_t version = uopc_tensor_version(&x0);
  for (int eager = 0; eager < 2; eager++) {
    uopc_tensor out[1] = {{0}};
    const char *mode = eager ? "tp_run_eager" : "tp_call";
    int rc = eager ? tp_run_eager(doubles, NULL, in, 1, 1, 0, out, NULL, &err) : tp_call(f, in, out, NULL, &err);
    assert_uopc_ok(rc, err);
    expect_int(uopc_tensor_numel(&out[0]), 5, "%s of x + x, x = ramp(10)[::2]: elements", mode);
    for (int64_t i = 0; i < 5; i++)
      expect_close(uopc_tensor_get(&out[0], i), 2.0 * (double)(float)((double)(2 * i + 1) / 10), 0,   /* f32 doubled: exact */
                    "%s of x + x, x = ramp(10)[::2]: out[%lld]", mode, (long long)i);
    uopc_tensor_release(&out[0]);
  }
  expect_int(x.strides[0], 2, "the caller's view's stride after both calls");
  expect_int(uopc_tensor_version(&x0), version, "x0's storage version after both calls (the copy is read, x0 never written)");
  uopc_tensor_release(&x), uopc_tensor_release(&x0);
  tp_compiled_free(f);
}

#define T(f) cmocka_unit_test_setup_teardown(f, arena_setup, arena_teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_compare_records_one_guard_for_a_size_comparison),
      T(test_compare_each_operator_at_the_boundary_records_its_truth),
      T(test_compare_decided_by_the_bounds_records_no_guard),
      T(test_compare_that_cannot_be_simplified_is_an_error),
      T(test_compare_in_eager_mode_records_no_guard),
      T(test_shape_branch_both_outcomes_match_eager),
      T(test_variant_holds_true_false_and_at_the_boundary),
      T(test_variant_holds_needs_every_guard),
      T(test_variant_hit_does_not_trace_again),
      T(test_more_shape_outcomes_than_variants_is_a_limit_error),
      T(test_item_under_tracer_breaks_and_matches_eager),
      T(test_item_regions_are_compiled_once),
      T(test_item_regions_with_other_inputs_are_other_programs),
      T(test_item_in_strict_mode_names_tp_item_and_the_line),
      T(test_region_close_gives_each_pending_handle_its_value),
      T(test_region_close_with_nothing_pending_builds_nothing),
      T(test_break_counts_and_resumes_in_a_new_region),
      T(test_break_keeps_every_earlier_value_readable),
      T(test_print_under_tracer_is_rejected_naming_the_line),
      T(test_global_under_tracer_is_rejected_naming_the_line),
      T(test_impure_callback_is_rejected_and_pure_runs_at_trace_time),
      T(test_effect_check_rejects_each_effect_under_tracer),
      T(test_effects_are_allowed_eagerly),
      T(test_matmul_shape_mismatch_names_the_model_line),
      T(test_gradient_of_an_i32_input_is_a_dtype_error),
      T(test_argument_outside_its_dim_bounds_is_rejected),
      T(test_model_that_leaves_its_output_unset_is_invalid),
      T(test_backward_without_a_rule_names_the_model_line),
      T(test_backward_of_a_vector_loss_names_the_loss_line),
      T(test_backward_across_a_break_names_the_break_line),
      T(test_strided_argument_is_read_like_its_copy),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
