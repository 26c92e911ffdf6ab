/* test_serve.c: lab 23.7's tj_serve.c. tj_trace_holds is asked about an
 * artifact made here (two dims, trace comparisons written as expressions),
 * tj_view_make about layouts written here, each on tensors whose elements are
 * known; then each rule through tj_call, with the exact artifacts built,
 * every element against plain C, and where a view shares its input's storage. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>
#include "tj_fixture.h"

static int setup(void **state) { return testutil_fresh_cache(state); }
static int teardown(void **state) { return testutil_remove_cache(state); }

static const char *const XY[] = {"x", "y"};

/* ---- tj_trace_holds, directly. */

/* An artifact of two vectors x and y, dims x_0 and y_0 (each >= 2) read at
 * their shapes, and two trace comparisons: x_0 - y_0 > 0 found true (the
 * bound of x[len(y)]) and y_0 - 3 >= 0 found false (a branch len(y) < 3). */
typedef struct traced {
  sym_arena *ar;
  vcache_variant *v;
  tj_artifact a;
  tp_guard guards[2];
  sym_dim x0, y0, z;
} traced;

static void traced_init(traced *t) {
  uopc_error err = {0};
  memset(t, 0, sizeof *t);
  assert_uopc_ok(sym_arena_new(&t->ar, &err), err);
  assert_uopc_ok(sym_dim_init(&t->x0, "x_0", 2, TJF_MAX_EXTENT, 1, &err), err);
  assert_uopc_ok(sym_dim_init(&t->y0, "y_0", 2, TJF_MAX_EXTENT, 1, &err), err);
  assert_uopc_ok(sym_dim_init(&t->z, "z", 2, TJF_MAX_EXTENT, 1, &err), err);
  t->v = calloc(1, sizeof *t->v);
  assert_non_null(t->v);
  vcache_spec *s = &t->v->spec;
  s->n_inputs = 2, s->n_dims = 2;
  s->dims[0] = t->x0, s->dims[1] = t->y0;
  s->dim_sites[0] = tjf_at(0, 0), s->dim_sites[1] = tjf_at(1, 0);
  const sym_expr *x = sym_expr_dim(t->ar, &t->x0), *y = sym_expr_dim(t->ar, &t->y0);
  t->guards[0] = (tp_guard){.diff = sym_expr_sub(t->ar, x, y), .op = TP_GT, .truth = 1};
  t->guards[1] = (tp_guard){.diff = sym_expr_sub(t->ar, y, sym_expr_const(t->ar, 3)), .op = TP_GE, .truth = 0};
  assert_uopc_ok(sym_arena_error(t->ar)->code, *sym_arena_error(t->ar));
  t->a.v = t->v, t->a.guards = t->guards, t->a.n_guards = 2;
}

static void traced_fini(traced *t) {
  free(t->v);
  sym_arena_free(t->ar);
}

/* tj_trace_holds on x of length nx and y of length ny: *failed is want, and
 * the failed guard's value want_value. */
static void holds_case(const tj_artifact *a, int64_t nx, int64_t ny, int want, int64_t want_value) {
  uopc_tensor x = tjf_vec(nx), y = tjf_vec(ny);
  const uopc_tensor *args[2] = {&x, &y};
  guard_call call;
  uopc_error err = {0};
  int failed = -2;
  int64_t value = INT64_MIN;
  assert_uopc_ok(guard_call_init(&call, 2, args, &err), err);
  int rc = tj_trace_holds(a, &call, &failed, &value, &err);
  if (rc) fail_msg("len(x) = %lld, len(y) = %lld: expected UOPC_OK, got %s: %s", (long long)nx, (long long)ny,
                   uopc_error_name(rc), err.message);
  expect_int(failed, want, "guards [x_0 - y_0 > 0 true, y_0 - 3 >= 0 false] on len(x) = %lld, len(y) = %lld: the "
             "first that fails (-1: none)", (long long)nx, (long long)ny);
  if (want >= 0)
    expect_int(value, want_value, "len(x) = %lld, len(y) = %lld: the value of guard %d's difference", (long long)nx,
               (long long)ny, want);
  uopc_tensor_release(&x), uopc_tensor_release(&y);
}

static void test_tj_trace_holds_names_the_first_guard_that_fails_and_its_value(void **state) {
  (void)state;
  traced t;
  traced_init(&t);
  holds_case(&t.a, 5, 2, -1, 0);   /* 5 - 2 > 0, and 2 - 3 >= 0 is false as traced */
  holds_case(&t.a, 3, 2, -1, 0);
  holds_case(&t.a, 3, 4, 0, -1);   /* both fail: the first is named */
  holds_case(&t.a, 4, 4, 0, 0);
  holds_case(&t.a, 5, 3, 1, 0);    /* y_0 - 3 >= 0 is true now */
  holds_case(&t.a, 9, 7, 1, 4);
  traced_fini(&t);
}

static void test_tj_trace_holds_without_guards_serves_every_call(void **state) {
  (void)state;
  traced t;
  traced_init(&t);
  t.a.n_guards = 0;
  holds_case(&t.a, 3, 4, -1, 0);
  holds_case(&t.a, 2, 9, -1, 0);
  traced_fini(&t);
}

static void test_tj_trace_holds_returns_the_evaluation_error(void **state) {
  (void)state;
  traced t;
  traced_init(&t);
  t.guards[1].diff = sym_expr_sub(t.ar, sym_expr_dim(t.ar, &t.z), sym_expr_const(t.ar, 3));   /* z: no dim of the spec */
  uopc_tensor x = tjf_vec(5), y = tjf_vec(2);
  const uopc_tensor *args[2] = {&x, &y};
  guard_call call;
  uopc_error err = {0};
  int failed = -2;
  int64_t value = 0;
  assert_uopc_ok(guard_call_init(&call, 2, args, &err), err);
  tjf_expect_code(tj_trace_holds(&t.a, &call, &failed, &value, &err), UOPC_E_UNBOUND, err,
                  "a guard reading dim z, bound nowhere");
  assert_names(err.message, "z", "the unbound dim");
  uopc_tensor_release(&x), uopc_tensor_release(&y);
  traced_fini(&t);
}

/* ---- tj_trace_holds through tj_call. */

static int pick(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* x[len(y)] * 3 */
  (void)user;
  out[0] = tp_mul(c, tp_select(c, in[0].t, 0, tp_size(c, in[1].t, 0)), tp_scalar(c, 3));
  return tp_status(c);
}

/* pick on (nx,) and (ny,): 3 x[ny], or the status it returned (out unwritten).
 * x is the first nx elements of a longer vector (contiguous, offset 0), so a
 * build that skips the index's guard reads a wrong element, never past memory. */
static int call_pick(tj_function *f, int64_t nx, int64_t ny, uopc_error *err) {
  uopc_tensor whole = tjf_vec(nx + ny + 8), x, y = tjf_vec(ny), out = {0};
  assert_uopc_ok(uopc_tensor_slice(&x, &whole, 0, 0, nx, 1, err), *err);
  uopc_tensor_release(&whole);   /* x keeps the storage */
  int rc = tj_call(f, (tj_arg[]){tj_tensor(&x), tj_tensor(&y)}, 2, &out, err);
  if (!rc && ny < nx) {   /* in bounds: the value; past x, the caller checks the status */
    float want[1] = {3 * (float)uopc_tensor_get(&x, ny)};
    char what[128];
    snprintf(what, sizeof what, "x[len(y)] * 3 on len(x) = %lld, len(y) = %lld", (long long)nx, (long long)ny);
    tjf_expect_values(&out, want, 1, what);
  } else if (rc) {
    expect_null(out.storage, "len(x) = %lld, len(y) = %lld refused: the output's storage", (long long)nx, (long long)ny);
  }
  uopc_tensor_release(&out), uopc_tensor_release(&x), uopc_tensor_release(&y);
  return rc;
}

static void test_tj_call_index_by_a_size_is_checked_on_every_call(void **state) {
  (void)state;
  tj_function *f = tjf_compile(pick, &(tj_options){.arg_names = XY});
  uopc_error err = {0};
  const int64_t sizes[][2] = {{5, 2}, {7, 3}, {9, 8}};
  for (int k = 0; k < 3; k++) assert_uopc_ok(call_pick(f, sizes[k][0], sizes[k][1], &err), err);
  tjf_expect_counts(f, 1, 2, "x[len(y)] * 3 over (5,2) (7,3) (9,8)");
  tjf_expect_code(call_pick(f, 3, 4, &err), UOPC_E_BOUNDS, err, "x[len(y)] * 3 on len(x) = 3, len(y) = 4");
  tjf_expect_counts(f, 1, 2, "x[len(y)] * 3 after (3, 4) was refused");
  tj_free(f);
}

static void test_tj_explain_names_the_trace_guard_that_fails(void **state) {
  (void)state;
  tj_function *f = tjf_compile(pick, &(tj_options){.arg_names = XY});
  uopc_error err = {0};
  assert_uopc_ok(call_pick(f, 5, 2, &err), err);
  uopc_tensor x = tjf_vec(3), y = tjf_vec(4);
  char text[4096];
  tjf_explain(f, (tj_arg[]){tj_tensor(&x), tj_tensor(&y)}, text, sizeof text);
  assert_contains(text, "rejected: guard 'y_0 - x_0 < 0 is true'");   /* the tracer's form of len(y) < len(x) */
  assert_contains(text, "failed: the difference is 1 on this call");
  uopc_tensor_release(&x), uopc_tensor_release(&y);
  tj_free(f);
}

/* ---- tj_view_make, directly. */

/* A layout of rank up to 2 in arena ar: shape, strides and offset, each an
 * expression over dim n (NULL entries are n - 2). */
typedef struct layout_fx {
  sym_arena *ar;
  sym_dim n;
  sym_binding b;
  tj_artifact a;
} layout_fx;

static void layout_init(layout_fx *l, int64_t n) {
  uopc_error err = {0};
  memset(l, 0, sizeof *l);
  assert_uopc_ok(sym_arena_new(&l->ar, &err), err);
  assert_uopc_ok(sym_dim_init(&l->n, "n", 2, TJF_MAX_EXTENT, 1, &err), err);
  sym_binding_init(&l->b);
  assert_uopc_ok(sym_dim_bind(&l->b, &l->n, n, &err), err);
  for (int k = 0; k < TJ_MAX_OUTPUTS; k++) l->a.view_of[k] = -1;
}

static const sym_expr *n_minus(layout_fx *l, int64_t k) {
  return sym_expr_sub(l->ar, sym_expr_dim(l->ar, &l->n), sym_expr_const(l->ar, k));
}

static const sym_expr *konst(layout_fx *l, int64_t v) { return sym_expr_const(l->ar, v); }

/* out is a view of base's storage with exactly this geometry. */
static void expect_view(const uopc_tensor *out, const uopc_tensor *base, int rank, const int64_t *shape,
                        const int64_t *strides, int64_t offset, const char *what) {
  expect_ptr(out->storage, base->storage, "%s: the view's storage (the input's expected)", what);
  expect_int(out->dtype, base->dtype, "%s: the view's dtype", what);
  expect_int(out->rank, rank, "%s: the view's rank", what);
  for (int d = 0; d < rank; d++) {
    expect_int(out->shape[d], shape[d], "%s: the view's shape[%d]", what, d);
    expect_int(out->strides[d], strides[d], "%s: the view's strides[%d]", what, d);
  }
  expect_int(out->offset, offset, "%s: the view's offset", what);
  for (int d = rank; d < UOPC_MAX_RANK; d++) {   /* tensor.h: 0 past the rank */
    expect_int(out->shape[d], 0, "%s: the view's shape[%d], past its rank %d", what, d, rank);
    expect_int(out->strides[d], 0, "%s: the view's strides[%d], past its rank %d", what, d, rank);
  }
}

/* base (n, 3) row-major, n = 6; output 1 its rows 1 .. n-2 transposed: shape
 * (3, n - 2), strides (1, 3), offset 3. Element (i, j) is base[j + 1][i]. */
static void test_tj_view_make_evaluates_the_layout_under_the_binding(void **state) {
  (void)state;
  layout_fx l;
  layout_init(&l, 6);
  l.a.view_of[1] = 0;
  l.a.view[1] = (ir_layout){.rank = 2, .shape = {konst(&l, 3), n_minus(&l, 2)}, .strides = {konst(&l, 1), konst(&l, 3)},
                            .offset = konst(&l, 3)};
  uopc_tensor base = tjf_mat(6, 3), out = {0};
  uopc_error err = {0};
  int refs = uopc_tensor_storage_refs(&base);
  assert_uopc_ok(tj_view_make(&l.a, 1, &base, &l.b, &out, &err), err);
  expect_view(&out, &base, 2, (int64_t[]){3, 4}, (int64_t[]){1, 3}, 3, "x[1:n-1].T of x (6, 3)");
  expect_int(uopc_tensor_storage_refs(&base), refs + 1, "x[1:n-1].T of x (6, 3): the storage's references");
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 4; j++)
      expect_close(uopc_tensor_get(&out, i * 4 + j), uopc_tensor_get(&base, (j + 1) * 3 + i), 0,
                   "x[1:n-1].T of x (6, 3): element (%d, %d)", i, j);
  /* output 2 is row n - 4 of base (a select: rank 1 of a matrix), at offset 3 (n - 4) */
  uopc_tensor row = {0};
  l.a.view[2] = (ir_layout){.rank = 1, .shape = {konst(&l, 3)}, .strides = {konst(&l, 1)},
                            .offset = sym_expr_mul(l.ar, konst(&l, 3), n_minus(&l, 4))};
  assert_uopc_ok(tj_view_make(&l.a, 2, &base, &l.b, &row, &err), err);
  expect_view(&row, &base, 1, (int64_t[]){3}, (int64_t[]){1}, 6, "x[n-4] of x (6, 3)");
  for (int i = 0; i < 3; i++)
    expect_close(uopc_tensor_get(&row, i), uopc_tensor_get(&base, 6 + i), 0, "x[n-4] of x (6, 3): element %d", i);
  uopc_tensor_release(&row);
  float want = (float)uopc_tensor_get(&base, 2 * 3 + 1);   /* out (1, 1) */
  uopc_tensor_release(&base);                               /* the view keeps the storage */
  expect_close(uopc_tensor_get(&out, 1 * 4 + 1), want, 0, "x[1:n-1].T after x is released: element (1, 1)");
  uopc_tensor_release(&out);
  /* every axis a tensor may have: (2, 1, 1, 1, 1, 1, 1, 3), the layout base's own */
  int64_t shape[UOPC_MAX_RANK], strides[UOPC_MAX_RANK];
  ir_layout whole = {.rank = UOPC_MAX_RANK, .offset = konst(&l, 0)};
  for (int d = 0; d < UOPC_MAX_RANK; d++) {
    shape[d] = d == 0 ? 2 : d == UOPC_MAX_RANK - 1 ? 3 : 1, strides[d] = d == UOPC_MAX_RANK - 1 ? 1 : 3;
    whole.shape[d] = konst(&l, shape[d]), whole.strides[d] = konst(&l, strides[d]);
  }
  l.a.view[1] = whole;
  base = tjf_tensor(UOPC_MAX_RANK, shape);
  assert_uopc_ok(tj_view_make(&l.a, 1, &base, &l.b, &out, &err), err);
  expect_view(&out, &base, UOPC_MAX_RANK, shape, strides, 0, "x itself, x of rank UOPC_MAX_RANK");
  uopc_tensor_release(&out), uopc_tensor_release(&base);
  sym_arena_free(l.ar);
}

/* base is itself a view at offset 5 (x[5:] of a vector of 20); output 0 is
 * base[1:n-1]: offset 5 + 1. */
static void test_tj_view_make_adds_the_view_offset_to_the_inputs_own(void **state) {
  (void)state;
  layout_fx l;
  layout_init(&l, 15);
  l.a.view_of[0] = 0;
  l.a.view[0] = (ir_layout){.rank = 1, .shape = {n_minus(&l, 2)}, .strides = {konst(&l, 1)}, .offset = konst(&l, 1)};
  uopc_tensor whole = tjf_vec(20), base, out = {0};
  uopc_error err = {0};
  assert_uopc_ok(uopc_tensor_slice(&base, &whole, 0, 5, 20, 1, &err), err);
  assert_uopc_ok(tj_view_make(&l.a, 0, &base, &l.b, &out, &err), err);
  expect_view(&out, &base, 1, (int64_t[]){13}, (int64_t[]){1}, 6, "y[1:n-1] of y = x[5:], x of 20");
  for (int64_t i = 0; i < 13; i++)
    expect_close(uopc_tensor_get(&out, i), uopc_tensor_get(&whole, 6 + i), 0, "y[1:n-1] of y = x[5:]: element %lld",
                 (long long)i);
  uopc_tensor_release(&out), uopc_tensor_release(&base), uopc_tensor_release(&whole);
  sym_arena_free(l.ar);
}

/* A layout reading dim z, bound nowhere, in its offset, then in a stride. */
static void test_tj_view_make_leaves_out_untouched_on_an_error(void **state) {
  (void)state;
  layout_fx l;
  sym_dim z;
  uopc_error err = {0};
  layout_init(&l, 6);
  assert_uopc_ok(sym_dim_init(&z, "z", 1, 9, 1, &err), err);
  const sym_expr *zx = sym_expr_dim(l.ar, &z);
  const ir_layout bad[2] = {
    {.rank = 1, .shape = {n_minus(&l, 2)}, .strides = {konst(&l, 1)}, .offset = zx},
    {.rank = 2, .shape = {konst(&l, 2), konst(&l, 3)}, .strides = {konst(&l, 3), zx}, .offset = konst(&l, 0)},
  };
  uopc_tensor base = tjf_mat(6, 3);
  int refs = uopc_tensor_storage_refs(&base);
  for (int k = 0; k < 2; k++) {
    uopc_tensor out, before;
    memset(&out, 0x5a, sizeof out);   /* whatever the caller had there */
    before = out;
    l.a.view_of[0] = 0, l.a.view[0] = bad[k];
    tjf_expect_code(tj_view_make(&l.a, 0, &base, &l.b, &out, &err), UOPC_E_UNBOUND, err,
                    "a layout whose %s reads dim z, bound nowhere", k ? "stride" : "offset");
    expect_int(memcmp(&out, &before, sizeof out) != 0, 0, "a layout whose %s reads z, refused: out changed",
               k ? "stride" : "offset");
    expect_int(uopc_tensor_storage_refs(&base), refs, "a layout whose %s reads z, refused: the input's references",
               k ? "stride" : "offset");
  }
  uopc_tensor_release(&base);
  sym_arena_free(l.ar);
}

/* ---- tj_view_make through tj_call. */

static int inner(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* x[1:len(x)-1], a view */
  (void)user;
  tp_int stop = tp_int_add(c, tp_size(c, in[0].t, 0), tp_int_const(c, -1));
  out[0] = tp_slice(c, in[0].t, 0, tp_int_const(c, 1), stop, 1);
  return tp_status(c);
}

static void test_tj_call_slice_of_an_input_is_a_view_of_its_storage(void **state) {
  (void)state;
  tj_function *f = tjf_compile(inner, &(tj_options){.arg_names = XY});
  const int64_t n[] = {5, 9, 12};
  for (int k = 0; k < 3; k++) {
    uopc_tensor x = tjf_vec(n[k]), out = {0};
    uopc_error err = {0};
    char what[128];
    snprintf(what, sizeof what, "x[1:len(x)-1], n = %lld", (long long)n[k]);
    assert_uopc_ok(tj_call(f, (tj_arg[]){tj_tensor(&x)}, 1, &out, &err), err);
    expect_view(&out, &x, 1, (int64_t[]){n[k] - 2}, (int64_t[]){1}, 1, what);
    for (int64_t i = 0; i < n[k] - 2; i++)
      expect_close(uopc_tensor_get(&out, i), uopc_tensor_get(&x, i + 1), 0, "%s: element %lld", what, (long long)i);
    uopc_tensor_release(&out), uopc_tensor_release(&x);
  }
  tjf_expect_counts(f, 1, 2, "x[1:len(x)-1] over n = 5, 9, 12");
  char text[4096];
  tjf_explain(f, NULL, text, sizeof text);
  assert_contains(text, "views only, no kernel");
  tj_free(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_tj_trace_holds_names_the_first_guard_that_fails_and_its_value),
    cmocka_unit_test(test_tj_trace_holds_without_guards_serves_every_call),
    cmocka_unit_test(test_tj_trace_holds_returns_the_evaluation_error),
    cmocka_unit_test(test_tj_call_index_by_a_size_is_checked_on_every_call),
    cmocka_unit_test(test_tj_explain_names_the_trace_guard_that_fails),
    cmocka_unit_test(test_tj_view_make_evaluates_the_layout_under_the_binding),
    cmocka_unit_test(test_tj_view_make_adds_the_view_offset_to_the_inputs_own),
    cmocka_unit_test(test_tj_view_make_leaves_out_untouched_on_an_error),
    cmocka_unit_test(test_tj_call_slice_of_an_input_is_a_view_of_its_storage),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
