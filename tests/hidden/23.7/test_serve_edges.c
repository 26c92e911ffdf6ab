/* test_serve_edges.c: lab 23.7's held-out cases of tj_serve.c through
 * tj_call: an index equal to the length it indexes, and a view of an input
 * that is itself a view, contiguous at an offset or strided. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>
#include "23.7/tj_fixture.h"

static int setup(void **state) { return testutil_fresh_cache(state); }
static int teardown(void **state) { return testutil_remove_cache(state); }

static const char *const XY[] = {"x", "y"};

static int pick(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* x[len(y)] * 3 */
  (void)user;
  out[0] = tp_mul(c, tp_select(c, in[0].t, 0, tp_size(c, in[1].t, 0)), tp_scalar(c, 3));
  return tp_status(c);
}

static void test_tj_call_index_equal_to_the_length_is_refused(void **state) {
  (void)state;
  tj_function *f = tjf_compile(pick, &(tj_options){.arg_names = XY});
  const int64_t sizes[][3] = {{5, 2, UOPC_OK}, {4, 4, UOPC_E_BOUNDS}, {4, 3, UOPC_OK}, {2, 2, UOPC_E_BOUNDS}};
  for (int k = 0; k < 4; k++) {
    uopc_tensor whole = tjf_vec(sizes[k][0] + 8), x, y = tjf_vec(sizes[k][1]), out = {0};
    uopc_error err = {0};
    /* x within a longer storage: a build without the index's guard reads a wrong element, not past memory */
    assert_uopc_ok(uopc_tensor_slice(&x, &whole, 0, 0, sizes[k][0], 1, &err), err);
    uopc_tensor_release(&whole);
    int rc = tj_call(f, (tj_arg[]){tj_tensor(&x), tj_tensor(&y)}, 2, &out, &err);
    tjf_expect_code(rc, (int)sizes[k][2], err, "x[len(y)] * 3 on len(x) = %lld, len(y) = %lld", (long long)sizes[k][0],
                    (long long)sizes[k][1]);
    if (!rc) {
      float want[1] = {3 * (float)uopc_tensor_get(&x, sizes[k][1])};
      tjf_expect_values(&out, want, 1, "x[len(y)] * 3");
    }
    uopc_tensor_release(&out), uopc_tensor_release(&x), uopc_tensor_release(&y);
  }
  tjf_expect_counts(f, 1, 1, "x[len(y)] * 3 over (5,2), (4,4) refused, (4,3), (2,2) refused");
  tj_free(f);
}

static int inner(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* x[1:len(x)-1], a view */
  (void)user;
  tp_int stop = tp_int_add(c, tp_size(c, in[0].t, 0), tp_int_const(c, -1));
  out[0] = tp_slice(c, in[0].t, 0, tp_int_const(c, 1), stop, 1);
  return tp_status(c);
}

/* x = whole[start::step] of a vector of 21; out = x[1:len(x)-1] is whole's
 * storage at x's offset plus one of x's steps. */
static void view_of_view(tj_function *f, int64_t start, int64_t step) {
  uopc_tensor whole = tjf_vec(21), x, out = {0};
  uopc_error err = {0};
  char what[128];
  assert_uopc_ok(uopc_tensor_slice(&x, &whole, 0, start, 21, step, &err), err);
  snprintf(what, sizeof what, "x[1:len(x)-1] of x = whole[%lld::%lld], whole of 21", (long long)start, (long long)step);
  assert_uopc_ok(tj_call(f, (tj_arg[]){tj_tensor(&x)}, 1, &out, &err), err);
  int64_t n = x.shape[0] - 2;
  expect_ptr(out.storage, whole.storage, "%s: the output's storage (whole's expected)", what);
  expect_int(out.shape[0], n, "%s: the output's shape[0]", what);
  expect_int(out.strides[0], step, "%s: the output's stride", what);
  expect_int(out.offset, start + step, "%s: the output's offset", what);
  for (int64_t i = 0; i < n; i++)
    expect_close(uopc_tensor_get(&out, i), uopc_tensor_get(&whole, start + step * (i + 1)), 0, "%s: element %lld", what,
                 (long long)i);
  uopc_tensor_release(&out), uopc_tensor_release(&x), uopc_tensor_release(&whole);
}

static void test_tj_call_view_of_a_view_adds_the_inputs_offset(void **state) {
  (void)state;
  tj_function *f = tjf_compile(inner, &(tj_options){.arg_names = XY});
  view_of_view(f, 3, 1);   /* contiguous at offset 3 */
  view_of_view(f, 7, 1);
  view_of_view(f, 1, 2);   /* strided: a layout class of its own */
  view_of_view(f, 4, 3);
  tjf_expect_counts(f, 2, 2, "x[1:len(x)-1] over whole[3:], whole[7:], whole[1::2], whole[4::3]");
  tj_free(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_tj_call_index_equal_to_the_length_is_refused),
    cmocka_unit_test(test_tj_call_view_of_a_view_adds_the_inputs_offset),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
