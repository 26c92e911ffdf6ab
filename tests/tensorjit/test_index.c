/* test_index.c: tensorjit's indexing (section 23.7, "Indexing"): slices whose
 * bounds are constants, negative or size expressions, selects whose index
 * validity is a guard of every call, and the tracer's size arithmetic. Each
 * call's values are checked against the runtime's own views
 * (uopc_tensor_slice and uopc_tensor_select, Python's rules written
 * independently of the IR), over size sweeps that reach 1 and 0, with the
 * exact number of artifacts built; outputs that only move an input's
 * elements are views of its storage. Under SAN=1 AddressSanitizer also checks
 * that no size of a sweep reads outside a tensor. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>
#include "tensorjit.h"
#include "testutil.h"

static int setup(void **state) { return testutil_fresh_cache(state); }
static int teardown(void **state) { return testutil_remove_cache(state); }
static int reset(void **state) {
  (void)state;
  uopc_counters_reset();
  return 0;
}

/* ---- Slices: one model, the slice along the last axis given by the case. */

typedef enum bound_kind { NONE, CONST, HALF, MINUS } bound_kind;   /* HALF: cols // 2; MINUS: cols - v */

typedef struct slice_case {
  const char *text;   /* as Python writes it */
  bound_kind start_kind, stop_kind;
  int64_t start, stop, step;
  int artifacts;      /* over the sweep below, specialize_01 off */
} slice_case;

static const slice_case slices[] = {
    {"x[:, 1::2]", CONST, NONE, 1, 0, 2, 1},
    {"x[:, -2:]", CONST, NONE, -2, 0, 1, 1},
    {"x[:, -6:-2:2]", CONST, CONST, -6, -2, 2, 1},
    {"x[:, 2:6]", CONST, CONST, 2, 6, 1, 1},
    {"x[:, ::-1]", NONE, NONE, 0, 0, -1, 1},
    {"x[:, cols//2:]", HALF, NONE, 0, 0, 1, 1},
    {"x[:, 1:cols+3:3]", CONST, MINUS, 1, -3, 3, 1},
    /* cols - 1 is -1 at cols 0: Python counts it from the end, another expression (a guard) */
    {"x[:, :cols-1]", NONE, MINUS, 0, 1, 1, 2},
};

static tp_int bound(tp_ctx *c, bound_kind kind, int64_t v, tp_int cols) {
  switch (kind) {
  case NONE: return TP_NONE;
  case CONST: return tp_int_const(c, v);
  case HALF: return tp_int_floordiv(c, cols, tp_int_const(c, 2));
  case MINUS: return tp_int_sub(c, cols, tp_int_const(c, v));
  }
  return TP_NONE;
}

static int64_t bound_value(bound_kind kind, int64_t v, int64_t cols) {
  return kind == NONE ? UOPC_SLICE_NONE : kind == CONST ? v : kind == HALF ? cols / 2 : cols - v;
}

static int slice_model(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {
  const slice_case *s = user;
  tp_int cols = tp_size(c, in[0].t, 1);
  out[0] = tp_slice(c, in[0].t, -1, bound(c, s->start_kind, s->start, cols), bound(c, s->stop_kind, s->stop, cols),
                    s->step);
  return tp_status(c);
}

/* ---- Helpers. */

/* A new f32 tensor of shape, element i = i + 1 (so a wrong element shows by its value). */
static uopc_tensor counting(int rank, const int64_t *shape) {
  uopc_tensor x;
  uopc_error err = {0};
  assert_uopc_ok(uopc_tensor_empty(&x, UOPC_F32, rank, shape, &err), err);
  for (int64_t i = 0; i < uopc_tensor_numel(&x); i++) uopc_tensor_set(&x, i, (double)(i + 1));
  return x;
}

/* (rows, cols), contiguous or (transposed) a transpose of a contiguous (cols, rows). */
static uopc_tensor matrix(int64_t rows, int64_t cols, int transposed) {
  if (!transposed) return counting(2, (int64_t[]){rows, cols});
  uopc_tensor base = counting(2, (int64_t[]){cols, rows}), t;
  uopc_error err = {0};
  assert_uopc_ok(uopc_tensor_transpose(&t, &base, 0, 1, &err), err);
  uopc_tensor_release(&base);
  return t;
}

/* got equals want element for element, with shapes equal. */
static void expect_same(const uopc_tensor *got, const uopc_tensor *want, const char *what) {
  if (got->rank != want->rank) fail_msg("%s: rank %d, expected %d", what, got->rank, want->rank);
  for (int k = 0; k < got->rank; k++)
    if (got->shape[k] != want->shape[k])
      fail_msg("%s: axis %d is %lld long, expected %lld", what, k, (long long)got->shape[k], (long long)want->shape[k]);
  for (int64_t i = 0; i < uopc_tensor_numel(want); i++)
    if (uopc_tensor_get(got, i) != uopc_tensor_get(want, i))
      fail_msg("%s: element %lld is %g, expected %g", what, (long long)i, uopc_tensor_get(got, i), uopc_tensor_get(want, i));
}

static tj_function *compile(tj_model m, void *user, const tj_options *o) {
  tj_function *f = NULL;
  uopc_error err = {0};
  assert_uopc_ok(tj_compile(&f, m, user, o, &err), err);
  return f;
}

static void expect_built(const tj_function *f, int64_t built, const char *what) {
  tj_counts s = tj_stats(f);
  if (s.artifacts_built != built) fail_msg("%s: %lld artifacts built, expected %lld", what, (long long)s.artifacts_built, (long long)built);
}

/* f on x gives out[0]; fails the test with the error otherwise. */
static uopc_tensor call(tj_function *f, const uopc_tensor *x, const char *what) {
  uopc_tensor out[1] = {{0}};
  uopc_error err = {0};
  int rc = tj_call(f, (tj_arg[]){tj_tensor(x)}, 1, out, &err);
  if (rc) fail_msg("%s: %s: %s", what, uopc_error_name(rc), err.message);
  return out[0];
}

static const int64_t sweep[][2] = {{3, 9}, {5, 4}, {2, 3}, {4, 2}, {3, 1}, {2, 0}};   /* (rows, cols) */
#define SWEEP ((int)(sizeof sweep / sizeof sweep[0]))

/* Every case over the sweep, one compiled function each. */
static void sweep_slices(const tj_options *o, int transposed) {
  for (size_t s = 0; s < sizeof slices / sizeof slices[0]; s++) {
    const slice_case *sc = &slices[s];
    tj_function *f = compile(slice_model, (void *)sc, o);
    for (int k = 0; k < SWEEP; k++) {
      int64_t rows = sweep[k][0], cols = sweep[k][1];
      uopc_tensor x = matrix(rows, cols, transposed), want;
      uopc_error err = {0};
      char what[96];
      snprintf(what, sizeof what, "%s on (%lld, %lld)%s", sc->text, (long long)rows, (long long)cols,
               transposed ? " transposed" : "");
      assert_uopc_ok(uopc_tensor_slice(&want, &x, 1, bound_value(sc->start_kind, sc->start, cols),
                                       bound_value(sc->stop_kind, sc->stop, cols), sc->step, &err), err);
      uopc_tensor got = call(f, &x, what);
      expect_same(&got, &want, what);
      uopc_tensor_release(&got), uopc_tensor_release(&want), uopc_tensor_release(&x);
    }
    expect_built(f, o && o->specialize_01 == TJ_OFF ? sc->artifacts : 3, sc->text);   /* by default: cols >= 2, 1, 0 */
    tj_free(f);
  }
}

/* ---- Slices. */

/* Constant, negative and size-expression bounds, clamped by the index expression: one artifact
 * serves 9 columns, 4 (where 2:6 is clamped at the end), and 3, 2, 1 and 0 (empty results). */
static void test_tj_slices_clamp_in_the_index_expression_one_artifact_down_to_empty(void **state) {
  (void)state;
  sweep_slices(&(tj_options){.specialize_01 = TJ_OFF}, 0);
}

/* By default sizes 0 and 1 are specialised: two artifacts more, and the same values. */
static void test_tj_slices_with_sizes_0_and_1_specialised(void **state) {
  (void)state;
  sweep_slices(NULL, 0);
}

/* A transposed input is read through its strides: the same values, one artifact per case. */
static void test_tj_slices_of_a_transposed_input(void **state) {
  (void)state;
  sweep_slices(&(tj_options){.specialize_01 = TJ_OFF}, 1);
}

static const slice_case zero_step = {"x[:, ::0]", NONE, NONE, 0, 0, 0, 0};
static const slice_case symbolic_negative_step = {"x[:, cols//2::-1]", HALF, NONE, 0, 0, -1, 0};

static void test_tj_slice_step_0_and_a_negative_step_with_a_symbolic_bound_are_refused(void **state) {
  (void)state;
  const slice_case *cases[] = {&zero_step, &symbolic_negative_step};
  const char *words[] = {"slice step cannot be zero", "needs a step >= 1"};
  for (int k = 0; k < 2; k++) {
    tj_function *f = compile(slice_model, (void *)cases[k], NULL);
    uopc_tensor x = matrix(3, 8, 0), out[1] = {{0}};
    uopc_error err = {0};
    assert_uopc_code(tj_call(f, (tj_arg[]){tj_tensor(&x)}, 1, out, &err), UOPC_E_INVALID, err);
    assert_contains(err.message, words[k]);
    assert_contains(err.message, "test_index.c:");   /* the model's line */
    expect_built(f, 0, cases[k]->text);
    uopc_tensor_release(&x);
    tj_free(f);
  }
}

/* ---- Selects. */

typedef enum index_kind { FIXED, LAST_BY_SIZE } index_kind;   /* LAST_BY_SIZE: x[rows - 1] */

typedef struct select_case {
  const char *text;
  int axis;
  index_kind kind;
  int64_t index;
} select_case;

static int select_model(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {
  const select_case *s = user;
  tp_int i = s->kind == FIXED ? tp_int_const(c, s->index) : tp_int_sub(c, tp_size(c, in[0].t, s->axis), tp_int_const(c, 1));
  out[0] = tp_select(c, in[0].t, s->axis, i);
  return tp_status(c);
}

/* f on x against uopc_tensor_select(x, axis, index). */
static void select_ok(tj_function *f, const select_case *s, int64_t rows, int64_t cols, int transposed) {
  uopc_tensor x = matrix(rows, cols, transposed), want;
  uopc_error err = {0};
  char what[96];
  int axis = s->axis < 0 ? s->axis + 2 : s->axis;
  int64_t index = s->kind == FIXED ? s->index : (axis ? cols : rows) - 1;
  snprintf(what, sizeof what, "%s on (%lld, %lld)%s", s->text, (long long)rows, (long long)cols, transposed ? " transposed" : "");
  assert_uopc_ok(uopc_tensor_select(&want, &x, axis, index, &err), err);
  uopc_tensor got = call(f, &x, what);
  expect_same(&got, &want, what);
  uopc_tensor_release(&got), uopc_tensor_release(&want), uopc_tensor_release(&x);
}

static const select_case row3 = {"x[3]", 0, FIXED, 3};

/* x[3] on 5 and 7 rows: one artifact, its dim narrowed to rows >= 4; on 3 rows the guard fails,
 * the trace runs again and stops at the index, naming it, the axis and its size; 6 rows hit. */
static void test_tj_select_index_validity_is_a_guard_then_an_error(void **state) {
  (void)state;
  tj_function *f = compile(select_model, (void *)&row3, NULL);
  select_ok(f, &row3, 5, 4, 0), select_ok(f, &row3, 7, 4, 0);
  expect_built(f, 1, "x[3] on 5 and 7 rows");
  uopc_tensor x = matrix(3, 4, 0), out[1] = {{0}};
  uopc_error err = {0};
  assert_uopc_code(tj_call(f, (tj_arg[]){tj_tensor(&x)}, 1, out, &err), UOPC_E_BOUNDS, err);
  assert_contains(err.message, "index 3 is out of bounds for axis 0 with size 3");
  assert_contains(err.message, "test_index.c:");
  select_ok(f, &row3, 6, 2, 0);
  expect_built(f, 1, "x[3] on 5, 7, (3: an error) and 6 rows");
  assert_int_equal(tj_stats(f).artifact_hits, 2);
  char text[4096];
  assert_uopc_ok(tj_explain(f, NULL, text, sizeof text, &err), err);
  assert_contains(text, "a0_0 = a0.shape[0] in [4, 16777216]\n");   /* the guard became the dim's bounds */
  uopc_tensor_release(&x);
  tj_free(f);
}

static const select_case last_row = {"x[-1]", 0, FIXED, -1};
static const select_case last_row_by_size = {"x[rows - 1]", 0, LAST_BY_SIZE, 0};
static const select_case last_col = {"x.select(-1, -1)", -1, FIXED, -1};

/* x[-1], x[rows - 1] and x.select(-1, -1): the index is inside every axis of 2 or more elements
 * (the dims' bounds decide it), so no guard and one artifact; a transposed input is another. */
static void test_tj_select_from_the_end_needs_no_guard(void **state) {
  (void)state;
  const select_case *cases[] = {&last_row, &last_row_by_size, &last_col};
  for (int k = 0; k < 3; k++) {
    tj_function *f = compile(select_model, (void *)cases[k], NULL);
    select_ok(f, cases[k], 5, 3, 0), select_ok(f, cases[k], 7, 6, 0), select_ok(f, cases[k], 2, 2, 0);
    expect_built(f, 1, cases[k]->text);
    select_ok(f, cases[k], 4, 5, 1), select_ok(f, cases[k], 3, 9, 1);
    expect_built(f, 2, cases[k]->text);
    tj_free(f);
  }
}

/* With specialize_01 off an axis may be empty: x[-1] of 0 rows is an index error, before
 * anything reads, and x[-1] of 1 row is row 0. */
static void test_tj_select_of_an_empty_axis_is_an_error(void **state) {
  (void)state;
  tj_function *f = compile(select_model, (void *)&last_row, &(tj_options){.specialize_01 = TJ_OFF});
  select_ok(f, &last_row, 4, 3, 0), select_ok(f, &last_row, 1, 3, 0);
  uopc_tensor x = matrix(0, 3, 0), out[1] = {{0}};
  uopc_error err = {0};
  assert_uopc_code(tj_call(f, (tj_arg[]){tj_tensor(&x)}, 1, out, &err), UOPC_E_BOUNDS, err);
  assert_contains(err.message, "index -1 is out of bounds for axis 0 with size 0");
  uopc_tensor_release(&x);
  tj_free(f);
}

/* ---- Size arithmetic: Python's // and % (floor, the remainder with the divisor's sign), min,
 * max and negation, as an i64 output, one artifact across sizes. */

static int size_arith(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {
  (void)user;
  tp_int r = tp_size(c, in[0].t, 0), k = tp_size(c, in[0].t, 1), three = tp_int_const(c, 3);
  tp_int a = tp_int_floordiv(c, tp_int_sub(c, r, tp_int_const(c, 7)), three);   /* (rows - 7) // 3 */
  tp_int b = tp_int_mod(c, tp_int_sub(c, k, tp_int_const(c, 5)), three);        /* (cols - 5) % 3 */
  tp_int m = tp_int_sub(c, tp_int_max(c, r, k), tp_int_min(c, r, k));
  tp_int q = tp_int_floordiv(c, r, k);                                           /* a traced divisor >= 2 */
  tp_int v = tp_int_add(c, tp_int_add(c, tp_int_mul(c, a, tp_int_const(c, 1000)), tp_int_mul(c, b, tp_int_const(c, 100))),
                        tp_int_add(c, tp_int_mul(c, m, tp_int_const(c, 10)), tp_int_neg(c, q)));
  out[0] = tp_from_int_at(c, v, UOPC_I64, TP_HERE);
  return tp_status(c);
}

static int64_t py_floordiv(int64_t a, int64_t b) { int64_t q = a / b; return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q; }
static int64_t py_mod(int64_t a, int64_t b) { return a - b * py_floordiv(a, b); }

static void test_tj_size_arithmetic_floors_like_python_one_artifact(void **state) {
  (void)state;
  tj_function *f = compile(size_arith, NULL, NULL);
  const int64_t shapes[][2] = {{3, 2}, {10, 4}, {2, 9}, {17, 3}};
  for (int k = 0; k < 4; k++) {
    int64_t r = shapes[k][0], c = shapes[k][1];
    int64_t want = py_floordiv(r - 7, 3) * 1000 + py_mod(c - 5, 3) * 100 + ((r > c ? r : c) - (r < c ? r : c)) * 10
                   - py_floordiv(r, c);
    uopc_tensor x = matrix(r, c, 0);
    char what[64];
    snprintf(what, sizeof what, "sizes of (%lld, %lld)", (long long)r, (long long)c);
    uopc_tensor got = call(f, &x, what);
    if ((int64_t)uopc_tensor_get(&got, 0) != want)
      fail_msg("%s: %lld, expected %lld", what, (long long)uopc_tensor_get(&got, 0), (long long)want);
    uopc_tensor_release(&got), uopc_tensor_release(&x);
  }
  expect_built(f, 1, "size arithmetic over 4 shapes");
  tj_free(f);
}

static int divide_by_rows(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* cols // rows */
  (void)user;
  tp_int q = tp_int_floordiv(c, tp_size(c, in[0].t, 1), tp_size(c, in[0].t, 0));
  out[0] = tp_from_int_at(c, q, UOPC_I64, TP_HERE);
  return tp_status(c);
}

/* With specialize_01 off, rows may be 0 for other sizes: a traced divisor must be >= 1 for all. */
static void test_tj_size_division_by_a_dim_that_may_be_0_is_refused(void **state) {
  (void)state;
  tj_function *f = compile(divide_by_rows, NULL, &(tj_options){.specialize_01 = TJ_OFF});
  uopc_tensor x = matrix(3, 8, 0), out[1] = {{0}};
  uopc_error err = {0};
  assert_uopc_code(tj_call(f, (tj_arg[]){tj_tensor(&x)}, 1, out, &err), UOPC_E_INVALID, err);
  assert_contains(err.message, "a traced divisor must be >= 1");
  uopc_tensor_release(&x);
  tj_free(f);
  f = compile(divide_by_rows, NULL, NULL);   /* by default rows >= 2 in the symbolic artifact */
  x = matrix(3, 8, 0);
  uopc_tensor got = call(f, &x, "8 // 3");
  assert_int_equal((int64_t)uopc_tensor_get(&got, 0), 2);
  uopc_tensor_release(&got), uopc_tensor_release(&x);
  tj_free(f);
}

/* ---- Views: an output that only moves an input's elements shares its storage. */

/* x[:, 1::2] and x[-1] of x, and (x^T)[:, 1:]: three views, no kernel. */
static int three_views(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {
  (void)user;
  out[0] = tp_slice(c, in[0].t, 1, tp_int_const(c, 1), TP_NONE, 2);
  out[1] = tp_select(c, in[0].t, 0, tp_int_const(c, -1));
  out[2] = tp_slice(c, tp_transpose(c, in[0].t), 1, tp_int_const(c, 1), TP_NONE, 1);
  return tp_status(c);
}

/* got is a view of x's storage with want's shape, strides and offset (want: the runtime's view). */
static void expect_view(const uopc_tensor *got, const uopc_tensor *want, const char *what) {
  expect_same(got, want, what);
  if (got->storage != want->storage) fail_msg("%s: a copy, not a view of the input's storage", what);
  if (got->offset != want->offset) fail_msg("%s: offset %lld, expected %lld", what, (long long)got->offset, (long long)want->offset);
  for (int k = 0; k < want->rank; k++)
    if (want->shape[k] > 1 && got->strides[k] != want->strides[k])
      fail_msg("%s: stride %d is %lld, expected %lld", what, k, (long long)got->strides[k], (long long)want->strides[k]);
}

/* Over (3, 9), (5, 4), (2, 3) and a transposed (4, 6): each output has the runtime view's
 * storage, offset and strides; a write through one is seen in the input and bumps its version;
 * one artifact per layout class, and the compiler never runs. */
static void test_tj_view_outputs_share_the_input_storage(void **state) {
  (void)state;
  tj_function *f = compile(three_views, NULL, &(tj_options){.n_outputs = 3});
  const int64_t shapes[][3] = {{3, 9, 0}, {5, 4, 0}, {2, 3, 0}, {4, 6, 1}};
  for (int k = 0; k < 4; k++) {
    uopc_tensor x = matrix(shapes[k][0], shapes[k][1], (int)shapes[k][2]), out[3] = {{0}}, want[3], xt;
    uopc_error err = {0};
    char what[3][64];
    const char *text[] = {"x[:, 1::2]", "x[-1]", "x.T[:, 1:]"};
    assert_uopc_ok(tj_call(f, (tj_arg[]){tj_tensor(&x)}, 1, out, &err), err);
    assert_uopc_ok(uopc_tensor_slice(&want[0], &x, 1, 1, UOPC_SLICE_NONE, 2, &err), err);
    assert_uopc_ok(uopc_tensor_select(&want[1], &x, 0, -1, &err), err);
    assert_uopc_ok(uopc_tensor_transpose(&xt, &x, 0, 1, &err), err);
    assert_uopc_ok(uopc_tensor_slice(&want[2], &xt, 1, 1, UOPC_SLICE_NONE, 1, &err), err);
    for (int o = 0; o < 3; o++) {
      snprintf(what[o], sizeof what[o], "%s of (%lld, %lld)%s", text[o], (long long)shapes[k][0],
               (long long)shapes[k][1], shapes[k][2] ? " transposed" : "");
      expect_view(&out[o], &want[o], what[o]);
    }
    uint64_t before = uopc_tensor_version(&x);
    uopc_tensor_set(&out[1], 0, -5);   /* x[-1][0] = -5 */
    uopc_tensor probe;
    assert_uopc_ok(uopc_tensor_select(&probe, &x, 0, -1, &err), err);
    if (uopc_tensor_get(&probe, 0) != -5) fail_msg("%s: a write through the view is not seen in x", what[1]);
    assert_int_equal(uopc_tensor_version(&x), before + 1);
    uopc_tensor_release(&probe), uopc_tensor_release(&xt);
    for (int o = 0; o < 3; o++) uopc_tensor_release(&out[o]), uopc_tensor_release(&want[o]);
    uopc_tensor_release(&x);
  }
  expect_built(f, 2, "three views over 3 contiguous shapes and a transposed one");
  assert_int_equal(uopc_counter_get(UOPC_C_COMPILER_INVOCATIONS), 0);
  char text[4096];
  uopc_error err = {0};
  assert_uopc_ok(tj_explain(f, NULL, text, sizeof text, &err), err);
  assert_contains(text, "(built by call 1, views only, no kernel), 3 calls\n");
  tj_free(f);
}

/* A view and a computed output side by side: the kernel computes only x[:, :2] * 2, and the view
 * outlives the function and the caller's input handle (it holds the storage). */
static int view_and_product(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {
  (void)user;
  tp_tensor *head = tp_slice(c, in[0].t, 1, TP_NONE, tp_int_const(c, 2), 1);
  out[0] = tp_mul(c, head, tp_scalar(c, 2));
  out[1] = head;
  return tp_status(c);
}

static void test_tj_view_beside_a_computed_output(void **state) {
  (void)state;
  tj_function *f = compile(view_and_product, NULL, &(tj_options){.n_outputs = 2});
  uopc_tensor x = matrix(3, 5, 0), out[2] = {{0}}, want;
  uopc_error err = {0};
  assert_uopc_ok(tj_call(f, (tj_arg[]){tj_tensor(&x)}, 1, out, &err), err);
  assert_uopc_ok(uopc_tensor_slice(&want, &x, 1, UOPC_SLICE_NONE, 2, 1, &err), err);
  expect_view(&out[1], &want, "x[:, :2]");
  if (out[0].storage == x.storage) fail_msg("x[:, :2] * 2 shares x's storage; it must be a new tensor");
  assert_true(uopc_tensor_is_contiguous(&out[0]));
  for (int64_t i = 0; i < 6; i++)
    if (uopc_tensor_get(&out[0], i) != 2 * uopc_tensor_get(&want, i))
      fail_msg("x[:, :2] * 2: element %lld is %g, expected %g", (long long)i, uopc_tensor_get(&out[0], i),
               2 * uopc_tensor_get(&want, i));
  assert_int_equal(uopc_counter_get(UOPC_C_COMPILER_INVOCATIONS), 1);
  tj_free(f);
  uopc_tensor_release(&x);   /* the view still holds the storage */
  assert_true(uopc_tensor_get(&out[1], 3) == uopc_tensor_get(&want, 3));
  uopc_tensor_release(&want), uopc_tensor_release(&out[0]), uopc_tensor_release(&out[1]);
}

/* ---- Shape ops. */

static int permute_201(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* x.permute(2, 0, 1) */
  (void)user;
  out[0] = tp_permute(c, in[0].t, 2, 0, -2);
  return tp_status(c);
}

static int squeeze_1(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* x.squeeze(1) */
  (void)user;
  out[0] = tp_squeeze(c, in[0].t, 1);
  return tp_status(c);
}

/* x of (a, b, c): x.flatten(0, 1).unflatten(0, (a, b)).unsqueeze(-1) * 0.7, cast to i32, and
 * x.flatten(0, 1) itself. */
static int reshapes(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {
  (void)user;
  tp_tensor *flat = tp_flatten(c, in[0].t, 0, 1);
  tp_int ab[2] = {tp_size(c, in[0].t, 0), tp_size(c, in[0].t, 1)};
  tp_tensor *back = tp_unflatten_at(c, flat, 0, 2, ab, TP_HERE);
  out[0] = tp_cast(c, tp_mul(c, tp_unsqueeze(c, back, -1), tp_scalar(c, 0.7)), UOPC_I32);
  out[1] = flat;
  return tp_status(c);
}

/* permute and squeeze move elements only: views of the input, against the runtime's own views,
 * one artifact over three shapes; a squeeze of an axis that is not 1 is an error. */
static void test_tj_permute_and_squeeze_are_views(void **state) {
  (void)state;
  tj_function *p = compile(permute_201, NULL, NULL), *q = compile(squeeze_1, NULL, NULL);
  const int64_t shapes[][2] = {{3, 4}, {5, 2}, {2, 7}};
  for (int k = 0; k < 3; k++) {
    int64_t a = shapes[k][0], b = shapes[k][1];
    uopc_tensor x = counting(3, (int64_t[]){a, b, a + b}), y = counting(3, (int64_t[]){a, 1, b}), want;
    uopc_error err = {0};
    char what[64];
    snprintf(what, sizeof what, "x.permute(2, 0, 1) of (%lld, %lld, %lld)", (long long)a, (long long)b, (long long)(a + b));
    uopc_tensor got = call(p, &x, what);
    assert_uopc_ok(uopc_tensor_permute(&want, &x, (const int[]){2, 0, 1}, &err), err);
    expect_view(&got, &want, what);
    uopc_tensor_release(&got), uopc_tensor_release(&want);
    snprintf(what, sizeof what, "y.squeeze(1) of (%lld, 1, %lld)", (long long)a, (long long)b);
    got = call(q, &y, what);
    assert_uopc_ok(uopc_tensor_select(&want, &y, 1, 0, &err), err);
    expect_view(&got, &want, what);
    uopc_tensor_release(&got), uopc_tensor_release(&want), uopc_tensor_release(&x), uopc_tensor_release(&y);
  }
  expect_built(p, 1, "x.permute(2, 0, 1) over 3 shapes");
  expect_built(q, 1, "y.squeeze(1) over 3 shapes");
  uopc_tensor z = counting(3, (int64_t[]){2, 3, 4}), out[1] = {{0}};
  uopc_error err = {0};
  assert_uopc_code(tj_call(q, (tj_arg[]){tj_tensor(&z)}, 1, out, &err), UOPC_E_INVALID, err);
  assert_contains(err.message, "squeeze of axis 1 of size 3 (it must be 1)");
  uopc_tensor_release(&z);
  tj_free(p), tj_free(q);
}

/* flatten, unflatten, unsqueeze and cast compute: the values in row-major order, (i + 1) * 0.7
 * truncated toward zero as C's cast does, one artifact over three shapes. */
static void test_tj_flatten_unflatten_unsqueeze_and_cast(void **state) {
  (void)state;
  tj_function *f = compile(reshapes, NULL, &(tj_options){.n_outputs = 2});
  const int64_t shapes[][3] = {{3, 4, 2}, {5, 2, 3}, {2, 7, 5}};
  for (int k = 0; k < 3; k++) {
    int64_t a = shapes[k][0], b = shapes[k][1], c = shapes[k][2];
    uopc_tensor x = counting(3, (int64_t[]){a, b, c}), out[2] = {{0}};
    uopc_error err = {0};
    assert_uopc_ok(tj_call(f, (tj_arg[]){tj_tensor(&x)}, 1, out, &err), err);
    const int64_t want0[] = {a, b, c, 1}, want1[] = {a * b, c};
    assert_int_equal(out[0].rank, 4), assert_int_equal(out[1].rank, 2);
    assert_int_equal(out[0].dtype, UOPC_I32);
    for (int d = 0; d < 4; d++) assert_int_equal(out[0].shape[d], want0[d]);
    for (int d = 0; d < 2; d++) assert_int_equal(out[1].shape[d], want1[d]);
    for (int64_t i = 0; i < a * b * c; i++) {
      double cast = (double)(int32_t)((float)(i + 1) * 0.7f);
      if (uopc_tensor_get(&out[0], i) != cast)
        fail_msg("(%lld, %lld, %lld): cast element %lld is %g, expected %g", (long long)a, (long long)b, (long long)c,
                 (long long)i, uopc_tensor_get(&out[0], i), cast);
      if (uopc_tensor_get(&out[1], i) != (double)(i + 1))
        fail_msg("(%lld, %lld, %lld): flatten element %lld is %g, expected %lld", (long long)a, (long long)b,
                 (long long)c, (long long)i, uopc_tensor_get(&out[1], i), (long long)(i + 1));
    }
    uopc_tensor_release(&out[0]), uopc_tensor_release(&out[1]), uopc_tensor_release(&x);
  }
  expect_built(f, 1, "flatten, unflatten, unsqueeze and cast over 3 shapes");
  tj_free(f);
}

static int reshape_pairs(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* x.reshape(-1, 2) */
  (void)user;
  out[0] = tp_reshape_at(c, in[0].t, 2, (tp_int[]){tp_int_const(c, -1), tp_int_const(c, 2)}, TP_HERE);
  return tp_status(c);
}

/* x.reshape(-1, 2) over (3, 8), (5, 10) and (2, 4): one artifact, guarded on the element count
 * being even; then (3, 7): the guard fails, and the trace refuses 21 elements. */
static void test_tj_reshape_minus_one_guards_divisibility(void **state) {
  (void)state;
  tj_function *f = compile(reshape_pairs, NULL, NULL);
  const int64_t shapes[][2] = {{3, 8}, {5, 10}, {2, 4}};
  for (int k = 0; k < 3; k++) {
    int64_t r = shapes[k][0], c = shapes[k][1];
    uopc_tensor x = counting(2, (int64_t[]){r, c});
    char what[64];
    snprintf(what, sizeof what, "x.reshape(-1, 2) of (%lld, %lld)", (long long)r, (long long)c);
    uopc_tensor got = call(f, &x, what);
    if (got.rank != 2 || got.shape[0] != r * c / 2 || got.shape[1] != 2)
      fail_msg("%s: shape (%lld, %lld), expected (%lld, 2)", what, (long long)got.shape[0], (long long)got.shape[1],
               (long long)(r * c / 2));
    for (int64_t i = 0; i < r * c; i++)
      if (uopc_tensor_get(&got, i) != (double)(i + 1))
        fail_msg("%s: element %lld is %g, expected %lld", what, (long long)i, uopc_tensor_get(&got, i), (long long)(i + 1));
    uopc_tensor_release(&got), uopc_tensor_release(&x);
  }
  expect_built(f, 1, "x.reshape(-1, 2) over (3, 8), (5, 10), (2, 4)");
  uopc_tensor x = counting(2, (int64_t[]){3, 7}), out[1] = {{0}};
  uopc_error err = {0};
  assert_uopc_code(tj_call(f, (tj_arg[]){tj_tensor(&x)}, 1, out, &err), UOPC_E_INVALID, err);
  assert_contains(err.message, "cannot reshape 21 elements into shape (-1, 2)");
  assert_int_equal(tj_stats(f).guard_failures, 1);
  expect_built(f, 1, "then (3, 7)");
  uopc_tensor_release(&x);
  tj_free(f);
}

static int diagonal_model(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* x.diagonal(offset) */
  out[0] = tp_diagonal(c, in[0].t, *(const int64_t *)user);
  return tp_status(c);
}

/* x.diagonal(k) for k = -2, 0, 1, 3 over (3, 5), (5, 3), (4, 4), (2, 6): element i is
 * x[i + max(0, -k), i + max(0, k)], the length max(0, min(n, m - k)) or min(n + k, m); one
 * artifact per offset. */
static void test_tj_diagonal_with_offsets(void **state) {
  (void)state;
  static const int64_t offsets[] = {-2, 0, 1, 3};
  const int64_t shapes[][2] = {{3, 5}, {5, 3}, {4, 4}, {2, 6}};
  for (int o = 0; o < 4; o++) {
    int64_t k = offsets[o];
    tj_function *f = compile(diagonal_model, (void *)&offsets[o], NULL);
    for (int s = 0; s < 4; s++) {
      int64_t n = shapes[s][0], m = shapes[s][1], r0 = k < 0 ? -k : 0, c0 = k > 0 ? k : 0;
      int64_t len = n - r0 < m - c0 ? n - r0 : m - c0;
      if (len < 0) len = 0;
      uopc_tensor x = counting(2, (int64_t[]){n, m});
      char what[64];
      snprintf(what, sizeof what, "x.diagonal(%lld) of (%lld, %lld)", (long long)k, (long long)n, (long long)m);
      uopc_tensor got = call(f, &x, what);
      if (got.rank != 1 || got.shape[0] != len)
        fail_msg("%s: %d axes, the first %lld long; expected 1 axis of %lld", what, got.rank, (long long)got.shape[0], (long long)len);
      for (int64_t i = 0; i < len; i++) {
        double want = (double)((i + r0) * m + (i + c0) + 1);
        if (uopc_tensor_get(&got, i) != want) fail_msg("%s: element %lld is %g, expected %g", what, (long long)i, uopc_tensor_get(&got, i), want);
      }
      uopc_tensor_release(&got), uopc_tensor_release(&x);
    }
    expect_built(f, 1, "x.diagonal(k) over 4 shapes");
    tj_free(f);
  }
}

typedef struct repeat_case { const char *text; int n; int64_t reps[3]; } repeat_case;

static int repeat_model(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {
  const repeat_case *r = user;
  out[0] = tp_repeat_at(c, in[0].t, r->n, r->reps, TP_HERE);
  return tp_status(c);
}

/* x.repeat(2, 3), x.repeat(2, 1, 3) (a new leading axis) and x.repeat(0, 2) (an empty axis) over
 * (2, 3), (3, 5), (4, 2): out[.., i, j] = x[i % a, j % b], one artifact each. */
static void test_tj_repeat_tiles_with_new_axes_and_0(void **state) {
  (void)state;
  static const repeat_case cases[] = {{"x.repeat(2, 3)", 2, {2, 3}}, {"x.repeat(2, 1, 3)", 3, {2, 1, 3}},
                                      {"x.repeat(0, 2)", 2, {0, 2}}};
  const int64_t shapes[][2] = {{2, 3}, {3, 5}, {4, 2}};
  for (int r = 0; r < 3; r++) {
    const repeat_case *rc = &cases[r];
    tj_function *f = compile(repeat_model, (void *)rc, NULL);
    for (int s = 0; s < 3; s++) {
      int64_t a = shapes[s][0], b = shapes[s][1];
      int64_t rows = rc->reps[rc->n - 2] * a, cols = rc->reps[rc->n - 1] * b, lead = rc->n == 3 ? rc->reps[0] : 1;
      uopc_tensor x = counting(2, (int64_t[]){a, b});
      char what[64];
      snprintf(what, sizeof what, "%s of (%lld, %lld)", rc->text, (long long)a, (long long)b);
      uopc_tensor got = call(f, &x, what);
      if (got.rank != rc->n || got.shape[rc->n - 2] != rows || got.shape[rc->n - 1] != cols || (rc->n == 3 && got.shape[0] != lead))
        fail_msg("%s: rank %d, last extents (%lld, %lld); expected rank %d, (%lld, %lld)", what, got.rank,
                 (long long)got.shape[got.rank - 2], (long long)got.shape[got.rank - 1], rc->n, (long long)rows, (long long)cols);
      for (int64_t l = 0, e = 0; l < lead; l++)
        for (int64_t i = 0; i < rows; i++)
          for (int64_t j = 0; j < cols; j++, e++) {
            double want = (double)((i % a) * b + (j % b) + 1);
            if (uopc_tensor_get(&got, e) != want)
              fail_msg("%s: element %lld is %g, expected %g", what, (long long)e, uopc_tensor_get(&got, e), want);
          }
      uopc_tensor_release(&got), uopc_tensor_release(&x);
    }
    expect_built(f, 1, rc->text);
    tj_free(f);
  }
}

/* x[1:].reshape(-1), x[:, 1:].reshape(-1), x.diagonal(1), and x.reshape(-1, 2) and x.T.flatten(0, 1) */
static int reshape_views(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {
  (void)user;
  tp_int all[1] = {tp_int_const(c, -1)};
  out[0] = tp_reshape_at(c, tp_slice(c, in[0].t, 0, tp_int_const(c, 1), TP_NONE, 1), 1, all, TP_HERE);
  out[1] = tp_reshape_at(c, tp_slice(c, in[0].t, 1, tp_int_const(c, 1), TP_NONE, 1), 1, all, TP_HERE);
  out[2] = tp_diagonal(c, in[0].t, 1);
  out[3] = tp_reshape_at(c, in[0].t, 2, (tp_int[]){tp_int_const(c, -1), tp_int_const(c, 2)}, TP_HERE);
  out[4] = tp_flatten(c, tp_transpose(c, in[0].t), 0, 1);
  return tp_status(c);
}

/* A reshape is a view where NumPy's would be (the layout below it packed: rows sliced off the
 * front keep it so, columns do not, a transpose does not), with the offset and strides that view
 * has; the others are new tensors with the same values. Over (3, 4), (5, 6), (4, 2). */
static void test_tj_reshape_is_a_view_only_without_a_copy(void **state) {
  (void)state;
  tj_function *f = compile(reshape_views, NULL, &(tj_options){.n_outputs = 5});
  const int64_t shapes[][2] = {{3, 4}, {5, 6}, {4, 2}};
  const char *text[] = {"x[1:].reshape(-1)", "x[:, 1:].reshape(-1)", "x.diagonal(1)", "x.reshape(-1, 2)", "x.T.flatten(0, 1)"};
  const int is_view[] = {1, 0, 1, 1, 0};
  for (int k = 0; k < 3; k++) {
    int64_t r = shapes[k][0], c = shapes[k][1];
    uopc_tensor x = counting(2, (int64_t[]){r, c}), out[5] = {{0}};
    uopc_error err = {0};
    assert_uopc_ok(tj_call(f, (tj_arg[]){tj_tensor(&x)}, 1, out, &err), err);
    for (int o = 0; o < 5; o++) {
      int shared = out[o].storage == x.storage;
      if (shared != is_view[o])
        fail_msg("%s of (%lld, %lld): %s, expected %s", text[o], (long long)r, (long long)c, shared ? "a view" : "a copy",
                 is_view[o] ? "a view" : "a copy");
    }
    if (out[0].offset != c || out[0].strides[0] != 1) fail_msg("x[1:].reshape(-1): offset %lld, stride %lld; expected %lld, 1",
                                                                 (long long)out[0].offset, (long long)out[0].strides[0], (long long)c);
    if (out[2].offset != 1 || out[2].strides[0] != c + 1) fail_msg("x.diagonal(1): offset %lld, stride %lld; expected 1, %lld",
                                                                   (long long)out[2].offset, (long long)out[2].strides[0], (long long)(c + 1));
    for (int64_t i = 0; i < (r - 1) * c; i++)
      if (uopc_tensor_get(&out[0], i) != (double)(c + i + 1)) fail_msg("x[1:].reshape(-1): element %lld", (long long)i);
    for (int64_t i = 0; i < r * (c - 1); i++)
      if (uopc_tensor_get(&out[1], i) != (double)((i / (c - 1)) * c + i % (c - 1) + 2)) fail_msg("x[:, 1:].reshape(-1): element %lld", (long long)i);
    for (int64_t i = 0; i < r * c; i++)
      if (uopc_tensor_get(&out[4], i) != (double)((i % r) * c + i / r + 1)) fail_msg("x.T.flatten(0, 1): element %lld", (long long)i);
    for (int o = 0; o < 5; o++) uopc_tensor_release(&out[o]);
    uopc_tensor_release(&x);
  }
  expect_built(f, 1, "five reshapes over three shapes");
  tj_free(f);
}

static int view_flat(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* x.view(-1), or x.T.view(-1) */
  tp_tensor *x = user ? tp_transpose(c, in[0].t) : in[0].t;
  out[0] = tp_view_at(c, x, 1, (tp_int[]){tp_int_const(c, -1)}, TP_HERE);
  return tp_status(c);
}

/* x.view(-1) of a contiguous x is a view; of a transposed argument, or x.T.view(-1), it would
 * need a copy and is UOPC_E_LAYOUT, never a silent copy. */
static void test_tj_view_that_needs_a_copy_is_a_layout_error(void **state) {
  (void)state;
  tj_function *f = compile(view_flat, NULL, NULL), *g = compile(view_flat, (void *)1, NULL);
  uopc_tensor x = matrix(3, 4, 0), t = matrix(3, 4, 1), out[1] = {{0}};
  uopc_error err = {0};
  uopc_tensor got = call(f, &x, "x.view(-1)");
  if (got.storage != x.storage || got.rank != 1 || got.shape[0] != 12) fail_msg("x.view(-1): not a 12-element view of x");
  uopc_tensor_release(&got);
  assert_uopc_code(tj_call(f, (tj_arg[]){tj_tensor(&t)}, 1, out, &err), UOPC_E_LAYOUT, err);
  assert_contains(err.message, "view: this reshape needs a copy");
  assert_uopc_code(tj_call(g, (tj_arg[]){tj_tensor(&x)}, 1, out, &err), UOPC_E_LAYOUT, err);
  assert_contains(err.message, "test_index.c:");
  uopc_tensor_release(&x), uopc_tensor_release(&t);
  tj_free(f), tj_free(g);
}

/* ---- Eager mode (23.4's tp_ API without a trace): the same rules, the same messages. */

static void test_tp_slice_and_select_in_eager_mode(void **state) {
  (void)state;
  tp_ctx *c = NULL;
  uopc_error err = {0};
  assert_uopc_ok(tp_ctx_new_eager(&c, &err), err);
  uopc_tensor x = matrix(4, 7, 0), want;
  tp_tensor *h = tp_wrap(c, &x);
  tp_tensor *s = tp_slice(c, h, 1, tp_int_const(c, -6), tp_int_const(c, -2), 2);
  assert_uopc_ok(uopc_tensor_slice(&want, &x, 1, -6, -2, 2, &err), err);
  expect_same(tp_value(s), &want, "eager x[:, -6:-2:2]");
  uopc_tensor_release(&want);
  tp_tensor *r = tp_select(c, h, 0, tp_int_const(c, -1));
  assert_uopc_ok(uopc_tensor_select(&want, &x, 0, -1, &err), err);
  expect_same(tp_value(r), &want, "eager x[-1]");
  uopc_tensor_release(&want);
  assert_null(tp_select(c, h, 0, tp_int_const(c, 4)));
  assert_int_equal(tp_status(c), UOPC_E_BOUNDS);
  assert_contains(tp_error(c)->message, "index 4 is out of bounds for axis 0 with size 4");
  tp_ctx_free(c);
  uopc_tensor_release(&x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_tj_slices_clamp_in_the_index_expression_one_artifact_down_to_empty, reset),
      cmocka_unit_test_setup(test_tj_slices_with_sizes_0_and_1_specialised, reset),
      cmocka_unit_test_setup(test_tj_slices_of_a_transposed_input, reset),
      cmocka_unit_test_setup(test_tj_slice_step_0_and_a_negative_step_with_a_symbolic_bound_are_refused, reset),
      cmocka_unit_test_setup(test_tj_select_index_validity_is_a_guard_then_an_error, reset),
      cmocka_unit_test_setup(test_tj_select_from_the_end_needs_no_guard, reset),
      cmocka_unit_test_setup(test_tj_select_of_an_empty_axis_is_an_error, reset),
      cmocka_unit_test_setup(test_tj_size_arithmetic_floors_like_python_one_artifact, reset),
      cmocka_unit_test_setup(test_tj_size_division_by_a_dim_that_may_be_0_is_refused, reset),
      cmocka_unit_test_setup(test_tj_view_outputs_share_the_input_storage, reset),
      cmocka_unit_test_setup(test_tj_view_beside_a_computed_output, reset),
      cmocka_unit_test_setup(test_tj_permute_and_squeeze_are_views, reset),
      cmocka_unit_test_setup(test_tj_flatten_unflatten_unsqueeze_and_cast, reset),
      cmocka_unit_test_setup(test_tj_reshape_minus_one_guards_divisibility, reset),
      cmocka_unit_test_setup(test_tj_diagonal_with_offsets, reset),
      cmocka_unit_test_setup(test_tj_repeat_tiles_with_new_axes_and_0, reset),
      cmocka_unit_test_setup(test_tj_reshape_is_a_view_only_without_a_copy, reset),
      cmocka_unit_test_setup(test_tj_view_that_needs_a_copy_is_a_layout_error, reset),
      cmocka_unit_test_setup(test_tp_slice_and_select_in_eager_mode, reset),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
