/* test_containers.c: tensorjit's containers (section 23.7, "Containers"):
 * lists and records of arguments, their tensors specialised on concrete
 * shapes, their structure a guard whose failure names the member's path,
 * and the limits. Each case counts the artifacts built over a sequence of
 * calls exactly and checks every value against a loop over the call's own
 * arguments (reference_of), written apart from the model. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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

/* ---- The model: x * S + K, S the sum of every tensor in the other
 * arguments (each summed whole), K the sum of their ints and doubles; it
 * walks whatever structure it is given, so every structure traces. */

static tp_tensor *walk(tp_ctx *c, const tj_in *in, tp_tensor *s, double *k) {
  if (in->kind == TJ_TENSOR) return tp_add(c, s, tp_sum(c, in->t, 0u, 0));
  if (in->kind == TJ_INT) *k += (double)in->i;
  if (in->kind == TJ_DOUBLE) *k += in->d;
  for (int j = 0; (in->kind == TJ_LIST || in->kind == TJ_RECORD) && j < in->n; j++) s = walk(c, &in->items[j], s, k);
  return s;
}

static int sum_all(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {
  int n_args = *(const int *)user;
  double k = 0;
  tp_tensor *s = tp_scalar(c, 0);
  for (int a = 1; a < n_args; a++) s = walk(c, &in[a], s, &k);
  out[0] = tp_add(c, tp_mul(c, in[0].t, s), tp_scalar(c, k));
  return tp_status(c);
}

/* A record read by name: x * params.w.sum() + params.bias.sum(). */
static int by_name(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {
  (void)user;
  tp_tensor *w = tp_sum(c, tj_member(&in[1], "w")->t, 0u, 0), *b = tp_sum(c, tj_member(&in[1], "bias")->t, 0u, 0);
  out[0] = tp_add(c, tp_mul(c, in[0].t, w), b);
  return tp_status(c);
}

/* ---- Helpers. */

static uopc_tensor vec(int64_t n) {   /* element i = (i + 1) / 8 - 1 */
  uopc_tensor x;
  uopc_error err = {0};
  assert_uopc_ok(uopc_tensor_empty(&x, UOPC_F32, 1, &n, &err), err);
  for (int64_t i = 0; i < n; i++) uopc_tensor_set(&x, i, (double)(i + 1) / 8 - 1);
  return x;
}

static void reference_walk(const tj_arg *a, double *s, double *k) {
  if (a->kind == TJ_TENSOR)
    for (int64_t i = 0; i < uopc_tensor_numel(a->tensor); i++) *s += uopc_tensor_get(a->tensor, i);
  if (a->kind == TJ_INT) *k += (double)a->i;
  if (a->kind == TJ_DOUBLE) *k += a->d;
  for (int j = 0; (a->kind == TJ_LIST || a->kind == TJ_RECORD) && j < a->n; j++) reference_walk(&a->items[j], s, k);
}

/* sum_all's value on args, in double. */
static void check_sum_all(const uopc_tensor *got, const tj_arg *args, int n, const char *what) {
  double s = 0, k = 0;
  for (int a = 1; a < n; a++) reference_walk(&args[a], &s, &k);
  const uopc_tensor *x = args[0].tensor;
  expect_int(got->shape[0], x->shape[0], "%s: the output's length", what);
  for (int64_t i = 0; i < x->shape[0]; i++)
    expect_close(uopc_tensor_get(got, i), uopc_tensor_get(x, i) * s + k, 1e-4 * fmax(1, fabs(uopc_tensor_get(x, i) * s + k)),
                 "%s: element %lld", what, (long long)i);
}

static const int two = 2;
static const char *const x_params[] = {"x", "params"};

static tj_function *compile_sum_all(int max_variants, tj_on_limit on_limit) {
  tj_function *f = NULL;
  uopc_error err = {0};
  const tj_options o = {.name = "sum_all", .arg_names = x_params, .max_variants = max_variants, .on_limit = on_limit};
  assert_uopc_ok(tj_compile(&f, sum_all, (void *)&two, &o, &err), err);
  return f;
}

/* sum_all on (x of length n, params), checked. */
static void call_checked(tj_function *f, int64_t n, tj_arg params, const char *what) {
  uopc_tensor x = vec(n), out[1] = {{0}};
  tj_arg args[2] = {tj_tensor(&x), params};
  uopc_error err = {0};
  int rc = tj_call(f, args, 2, out, &err);
  if (rc) fail_msg("%s: %s: %s", what, uopc_error_name(rc), err.message);
  check_sum_all(&out[0], args, 2, what);
  uopc_tensor_release(&out[0]);
  uopc_tensor_release(&x);
}

static void explain_call(const tj_function *f, int64_t n, tj_arg params, char *text, size_t size) {
  uopc_tensor x = vec(n);
  tj_arg args[2] = {tj_tensor(&x), params};
  uopc_error err = {0};
  assert_uopc_ok(tj_explain(f, args, text, size, &err), err);
  uopc_tensor_release(&x);
}

static void expect_counts(const tj_function *f, int64_t built, int64_t hits, int64_t failures, const char *what) {
  tj_counts s = tj_stats(f);
  expect_int(s.artifacts_built, built, "%s: artifacts built", what);
  expect_int(s.artifacts, built, "%s: artifacts kept", what);
  expect_int(s.artifact_hits, hits, "%s: artifact hits", what);
  expect_int(s.guard_failures, failures, "%s: guard failures", what);
}

static void show(const char *title, const char *text) {
  if (getenv("TJ_PRINT")) print_message("---- %s\n%s", title, text);
}

/* ---- Cases. */

/* params = [w, b]: x's length shares an artifact (a top-level tensor keeps
 * its dim), each new length of w is a new one (a member's shape is its
 * value), and an old one is a hit again. */
static void test_tj_list_members_are_specialised_on_their_shapes_and_x_stays_dynamic(void **state) {
  (void)state;
  tj_function *f = compile_sum_all(0, TJ_LIMIT_ERROR);
  uopc_tensor w3 = vec(3), w6 = vec(6), b = vec(4);
  tj_arg p3[2] = {tj_tensor(&w3), tj_tensor(&b)}, p6[2] = {tj_tensor(&w6), tj_tensor(&b)};
  const int64_t xs[] = {5, 9, 33};
  for (int k = 0; k < 3; k++) call_checked(f, xs[k], tj_list(p3, 2), "w (3), b (4)");
  expect_counts(f, 1, 2, 0, "x of lengths 5, 9, 33 with w (3)");
  call_checked(f, 7, tj_list(p6, 2), "w (6)");
  expect_counts(f, 2, 2, 1, "then w (6)");
  call_checked(f, 17, tj_list(p3, 2), "w (3) again");
  call_checked(f, 2, tj_list(p6, 2), "w (6) again");
  expect_counts(f, 2, 4, 2, "then w (3) and w (6) again");
  char text[8192];
  uopc_error err = {0};
  assert_uopc_ok(tj_explain(f, NULL, text, sizeof text, &err), err);
  show("sum_all, params = [w, b]: w (3), then w (6)", text);
  assert_contains(text, "structure 1: x is a tensor of f32, rank 1; params is a list of 2; params[0] is a tensor of"
                        " f32, rank 1; params[1] is a tensor of f32, rank 1\n");
  assert_contains(text, "  params_0.shape[0] == 3\n");
  assert_contains(text, "  params_0.shape[0] == 6\n");
  assert_contains(text, "  x_0 = x.shape[0] in [2, 16777216]\n");
  explain_call(f, 4, tj_list(p6, 2), text, sizeof text);
  show("explain: x (4), w (6)", text);
  assert_contains(text, "  structure 1 of 1: its own\n");
  assert_contains(text, "rejected: guard 'params_0.shape[0] == 3' failed:");
  assert_contains(text, "  would run ");
  uopc_tensor_release(&w3), uopc_tensor_release(&w6), uopc_tensor_release(&b);
  tj_free(f);
}

/* {u, v} of one shape, then of two: no member's size is taken for
 * another's, so every pair of shapes is its artifact, and the values hold. */
static void test_tj_record_members_of_equal_shapes_do_not_merge(void **state) {
  (void)state;
  tj_function *f = compile_sum_all(0, TJ_LIMIT_ERROR);
  const char *const uv[] = {"u", "v"};
  const int64_t shapes[][2] = {{4, 4}, {4, 6}, {6, 6}, {6, 4}, {4, 4}, {6, 6}};
  const int64_t built[] = {1, 2, 3, 4, 4, 4};
  for (int k = 0; k < 6; k++) {
    uopc_tensor u = vec(shapes[k][0]), v = vec(shapes[k][1]);
    tj_arg members[2] = {tj_tensor(&u), tj_tensor(&v)};
    char what[64];
    snprintf(what, sizeof what, "u (%lld), v (%lld)", (long long)shapes[k][0], (long long)shapes[k][1]);
    call_checked(f, 5, tj_record(uv, members, 2), what);
    expect_int(tj_stats(f).artifacts_built, built[k], "artifacts built after %s", what);
    uopc_tensor_release(&u), uopc_tensor_release(&v);
  }
  expect_int(tj_stats(f).artifact_hits, 2, "hits over the six calls");
  tj_free(f);
}

/* Every change of structure: a guard failure naming the member's path, in
 * tj_explain before the call, then a new artifact; the first structure a hit
 * again at the end. */
static void test_tj_structure_change_is_a_guard_failure_naming_the_path(void **state) {
  (void)state;
  tj_function *f = compile_sum_all(0, TJ_LIMIT_ERROR);
  uopc_tensor w = vec(3), b = vec(4), m = vec(2), mm = vec(6);
  const char *const wbias[] = {"w", "bias"}, *const wb[] = {"w", "b"};
  uopc_tensor grid;
  uopc_error err = {0};
  assert_uopc_ok(uopc_tensor_empty(&grid, UOPC_F32, 2, (int64_t[]){2, 3}, &err), err);
  for (int64_t i = 0; i < 6; i++) uopc_tensor_set(&grid, i, (double)i / 4);
  tj_arg inner[2] = {tj_tensor(&m), tj_tensor(&b)}, inner_b[2] = {tj_tensor(&m), tj_tensor(&b)};
  tj_arg base[3] = {tj_tensor(&w), tj_tensor(&b), tj_record(wbias, inner, 2)};
  tj_arg renamed[3] = {tj_tensor(&w), tj_tensor(&b), tj_record(wb, inner_b, 2)};
  tj_arg shorter[2] = {tj_tensor(&w), tj_tensor(&b)};
  tj_arg an_int[3] = {tj_tensor(&w), tj_int(5), tj_record(wbias, inner, 2)};
  tj_arg nested[3] = {tj_tensor(&w), tj_tensor(&b), tj_list(inner, 2)};
  tj_arg ranked[3] = {tj_tensor(&grid), tj_tensor(&b), tj_record(wbias, inner, 2)};
  tj_arg extra[4] = {tj_tensor(&w), tj_tensor(&b), tj_record(wbias, inner, 2), tj_tensor(&mm)};
  const struct { tj_arg params; const char *reason; } changes[] = {
      {tj_list(renamed, 3), "structure guard 'params[2].bias is present' failed: this call's params[2] has no member"
                            " 'bias'"},
      {tj_list(shorter, 2), "structure guard 'params is a list of 3' failed: this call's params has 2 members"
                            " (params[2] is missing)"},
      {tj_list(an_int, 3), "structure guard 'params[1] is a tensor of f32, rank 1' failed: this call's params[1] is"
                           " an int"},
      {tj_list(nested, 3), "structure guard 'params[2] is a record of 2' failed: this call's params[2] is a list of 2"},
      {tj_list(ranked, 3), "structure guard 'params[0] is a tensor of f32, rank 1' failed: this call's params[0] is"
                           " a tensor of f32, rank 2"},
      {tj_list(extra, 4), "structure guard 'params is a list of 3' failed: this call's params has 4 members"
                          " (params[3] is extra)"},
  };
  char text[8192];
  call_checked(f, 5, tj_list(base, 3), "the first structure");
  for (int k = 0; k < 6; k++) {
    explain_call(f, 5, changes[k].params, text, sizeof text);
    show(changes[k].reason, text);
    char line[512];
    snprintf(line, sizeof line, "  structure 1 rejected: %s\n", changes[k].reason);
    assert_contains(text, line);
    call_checked(f, 5, changes[k].params, changes[k].reason);
    expect_counts(f, k + 2, 0, k + 1, changes[k].reason);
  }
  call_checked(f, 9, tj_list(base, 3), "the first structure again");
  expect_counts(f, 7, 1, 6, "the first structure again");
  explain_call(f, 5, tj_list(base, 3), text, sizeof text);
  assert_contains(text, "  structure 1 of 7: its own\n");
  uopc_tensor_release(&w), uopc_tensor_release(&b), uopc_tensor_release(&m), uopc_tensor_release(&mm);
  uopc_tensor_release(&grid);
  tj_free(f);
}

/* A record read by name: a renamed member is a new structure, traced again;
 * the model's tj_member finds nothing and its next operation fails, naming
 * its line, with nothing built. */
static void test_tj_record_read_by_name(void **state) {
  (void)state;
  tj_function *f = NULL;
  uopc_error err = {0};
  assert_uopc_ok(tj_compile(&f, by_name, NULL, &(tj_options){.name = "by_name", .arg_names = x_params}, &err), err);
  uopc_tensor x = vec(5), w = vec(3), b = vec(4), out[1] = {{0}};
  const char *const wbias[] = {"w", "bias"}, *const wb[] = {"w", "b"};
  tj_arg members[2] = {tj_tensor(&w), tj_tensor(&b)};
  tj_arg args[2] = {tj_tensor(&x), tj_record(wbias, members, 2)};
  assert_uopc_ok(tj_call(f, args, 2, out, &err), err);
  for (int64_t i = 0; i < 5; i++)   /* w sums to -2.25, bias to -2.75 */
    expect_close(uopc_tensor_get(&out[0], i), uopc_tensor_get(&x, i) * -2.25 - 2.75, 1e-5, "element %lld", (long long)i);
  uopc_tensor_release(&out[0]);
  args[1] = tj_record(wb, members, 2);
  assert_uopc_code(tj_call(f, args, 2, out, &err), UOPC_E_INVALID, err);
  assert_contains(err.message, "an operand is NULL");
  assert_contains(err.message, "test_containers.c");
  expect_counts(f, 1, 0, 1, "bias renamed b");
  uopc_tensor_release(&x), uopc_tensor_release(&w), uopc_tensor_release(&b);
  tj_free(f);
}

/* A member's int and double are guarded by value, as a top-level scalar is. */
static void test_tj_container_scalars_are_specialised_by_value(void **state) {
  (void)state;
  tj_function *f = compile_sum_all(0, TJ_LIMIT_ERROR);
  uopc_tensor w = vec(3);
  const char *const names[] = {"w", "steps", "scale"};
  tj_arg p1[3] = {tj_tensor(&w), tj_int(2), tj_double(0.5)}, p2[3] = {tj_tensor(&w), tj_int(3), tj_double(0.5)};
  call_checked(f, 5, tj_record(names, p1, 3), "steps = 2");
  call_checked(f, 9, tj_record(names, p1, 3), "steps = 2 again");
  char text[8192];
  explain_call(f, 5, tj_record(names, p2, 3), text, sizeof text);
  show("steps = 3", text);
  assert_contains(text, "rejected: guard 'params.steps == 2' failed: this call has params.steps == 3\n");
  call_checked(f, 5, tj_record(names, p2, 3), "steps = 3");
  expect_counts(f, 2, 1, 1, "steps 2, 2, 3");
  uopc_error err = {0};
  assert_uopc_ok(tj_explain(f, NULL, text, sizeof text, &err), err);
  assert_contains(text, "  params.steps == 3 (a scalar member)\n");
  assert_contains(text, "  params.scale == 0.5 (a scalar member)\n");
  uopc_tensor_release(&w);
  tj_free(f);
}

/* params = [k ints], k = 1 .. 8: eight structures; a ninth is the
 * structure limit, naming how each kept one differs, or runs eagerly. */
static void test_tj_structure_limit_names_the_member_and_can_run_eagerly(void **state) {
  (void)state;
  tj_arg ints[TJ_MAX_STRUCTURES + 1];
  for (int k = 0; k <= TJ_MAX_STRUCTURES; k++) ints[k] = tj_int(k + 1);
  for (int eager = 0; eager < 2; eager++) {
    tj_function *f = compile_sum_all(0, eager ? TJ_LIMIT_EAGER : TJ_LIMIT_ERROR);
    for (int n = 1; n <= TJ_MAX_STRUCTURES; n++) call_checked(f, 5, tj_list(ints, n), "a list of ints");
    expect_counts(f, TJ_MAX_STRUCTURES, 0, TJ_MAX_STRUCTURES - 1, "eight structures");
    uopc_tensor x = vec(5), out[1] = {{0}};
    tj_arg args[2] = {tj_tensor(&x), tj_list(ints, TJ_MAX_STRUCTURES + 1)};
    uopc_error err = {0};
    int rc = tj_call(f, args, 2, out, &err);
    if (eager) {
      assert_uopc_ok(rc, err);
      check_sum_all(&out[0], args, 2, "nine ints, eagerly");
      expect_int(tj_stats(f).eager_fallbacks, 1, "eager runs");
      uopc_tensor_release(&out[0]);
    } else {
      assert_uopc_code(rc, UOPC_E_LIMIT, err);
      show("the ninth structure", err.message);
      assert_contains(err.message, "structure limit reached (TJ_MAX_STRUCTURES = 8)");
      assert_contains(err.message, "; structure 8: structure guard 'params is a list of 8' failed: this call's params"
                                   " has 9 members (params[8] is extra)");
      assert_contains(err.message, "; structure 1: structure guard 'params is a list of 1' failed");
    }
    expect_int(tj_stats(f).limit_hits, 1, "limit hits");
    expect_counts(f, TJ_MAX_STRUCTURES, 0, TJ_MAX_STRUCTURES, "the ninth");
    uopc_tensor_release(&x);
    tj_free(f);
  }
}

/* x and a list of sixteen tensors: seventeen tensors, one past the variant
 * cache's inputs; the error names the seventeenth by its path and the limit,
 * and fixes nothing (a call with sixteen then works). */
static void test_tj_more_than_sixteen_tensors_is_the_limit_naming_the_seventeenth(void **state) {
  (void)state;
  tj_function *f = compile_sum_all(0, TJ_LIMIT_ERROR);
  uopc_tensor w = vec(3), x = vec(5), out[1] = {{0}};
  tj_arg many[TJ_MAX_TENSORS];
  for (int k = 0; k < TJ_MAX_TENSORS; k++) many[k] = tj_tensor(&w);
  tj_arg args[2] = {tj_tensor(&x), tj_list(many, TJ_MAX_TENSORS)};
  uopc_error err = {0};
  assert_uopc_code(tj_call(f, args, 2, out, &err), UOPC_E_LIMIT, err);
  assert_contains(err.message, "'params[15]' is tensor 17 of the call; the limit is 16 tensors");
  expect_int(tj_stats(f).artifacts_built, 0, "artifacts after the refused call");
  call_checked(f, 5, tj_list(many, TJ_MAX_TENSORS - 1), "x and fifteen");
  expect_counts(f, 1, 0, 0, "x and fifteen");
  uopc_tensor_release(&w), uopc_tensor_release(&x);
  tj_free(f);
}

/* A member that is not one: each refused before anything runs, naming its path. */
static void test_tj_bad_members_are_refused_naming_the_path(void **state) {
  (void)state;
  tj_function *f = compile_sum_all(0, TJ_LIMIT_ERROR);
  uopc_tensor w = vec(3), x = vec(5), released = vec(2), out[1] = {{0}};
  uopc_tensor_release(&released);
  const char *const bad_name[] = {"w", "2nd"}, *const twice[] = {"w", "w"};
  tj_arg pair[2] = {tj_tensor(&w), tj_tensor(&released)};
  tj_arg d1[1] = {tj_tensor(&w)}, d2[1] = {tj_list(d1, 1)}, d3[1] = {tj_list(d2, 1)}, d4[1] = {tj_list(d3, 1)};
  tj_arg d5[1] = {tj_list(d4, 1)};   /* params and four lists in it: five containers deep */
  const struct { tj_arg params; const char *message; } cases[] = {
      {tj_list(pair, 2), "'params[1]' is a NULL or released tensor"},
      {tj_record(bad_name, pair, 2), "member 1 of record 'params' needs a name, a C identifier of 1 to 24 characters"},
      {tj_record(twice, pair, 2), "record 'params' names two members 'w'"},
      {tj_list(NULL, 2), "'params' has 2 members and no items"},
      {tj_list(d5, 1), "'params[0][0][0][0]' nests containers 5 deep; the limit is 4 (TJ_MAX_DEPTH)"},
  };
  for (int k = 0; k < 5; k++) {
    tj_arg args[2] = {tj_tensor(&x), cases[k].params};
    uopc_error err = {0};
    assert_uopc_code(tj_call(f, args, 2, out, &err), UOPC_E_INVALID, err);
    assert_contains(err.message, cases[k].message);
  }
  expect_int(tj_stats(f).artifacts_built, 0, "artifacts after five refused calls");
  call_checked(f, 5, tj_list(d4, 1), "four containers deep");
  uopc_tensor_release(&w), uopc_tensor_release(&x);
  tj_free(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_tj_list_members_are_specialised_on_their_shapes_and_x_stays_dynamic, reset),
      cmocka_unit_test_setup(test_tj_record_members_of_equal_shapes_do_not_merge, reset),
      cmocka_unit_test_setup(test_tj_structure_change_is_a_guard_failure_naming_the_path, reset),
      cmocka_unit_test_setup(test_tj_record_read_by_name, reset),
      cmocka_unit_test_setup(test_tj_container_scalars_are_specialised_by_value, reset),
      cmocka_unit_test_setup(test_tj_structure_limit_names_the_member_and_can_run_eagerly, reset),
      cmocka_unit_test_setup(test_tj_more_than_sixteen_tensors_is_the_limit_naming_the_seventeenth, reset),
      cmocka_unit_test_setup(test_tj_bad_members_are_refused_naming_the_path, reset),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
