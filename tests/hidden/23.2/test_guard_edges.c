/* test_guard_edges.c: lab 23.2, instructor-only (tests/hidden/, not in the handout):
 * guard_check's answer must not depend on whether a reason was asked for. On random
 * sets of every guard kind over three arguments of rank up to 2, and random calls
 * (shared bytes, other dtypes, transposed and strided views), each guard is checked
 * with why == NULL and with a reason buffer; the answers must agree, a failure must
 * come with a reason, and guard_set_check must find the same first failure both
 * ways. A reason prints a dim's name as text, '%' included. Graded with visibility
 * after_due_date. */
#include "dispatch.h"
#include "testutil.h"

static void random_guard(guard_set *s, sym_arena *a, const sym_dim *dims) {
  uopc_error err = {0};
  int arg = rand() % 3, other = (arg + 1 + rand() % 2) % 3, axis = rand() % 2;
  guard_site at = {arg, rand() % 4 ? GUARD_SHAPE : GUARD_STRIDE, axis}, to = {other, GUARD_SHAPE, rand() % 2};
  int64_t lo = rand() % 8;
  switch (rand() % 9) {
  case 0: guard_set_add_dtype(s, arg, rand() % 2 ? UOPC_F32 : UOPC_F64, &err); break;
  case 1: guard_set_add_rank(s, arg, 1 + rand() % 2, &err); break;
  case 2: guard_set_add_contiguous(s, arg, &err); break;
  case 3: guard_set_add_aligned(s, arg, 1 << (rand() % 7), &err); break;
  case 4: guard_set_add_disjoint(s, arg, other, &err); break;
  case 5: guard_set_add_range(s, rand() % 2 ? "n" : NULL, at, lo, rand() % 3 ? lo + rand() % 40 : lo, &err); break;
  case 6: guard_set_add_divisible(s, rand() % 2 ? "n" : NULL, at, 1 + rand() % 8, &err); break;
  case 7: guard_set_add_equal(s, at, to, &err); break;
  default: guard_set_add_expr(s, at, sym_expr_add(a, sym_expr_dim(a, &dims[0]), sym_expr_const(a, rand() % 3 - 1)), &err);
  }
}

static void random_tensor(uopc_tensor *t, const uopc_tensor *base) {
  uopc_error err = {0};
  int64_t rows = 1 + rand() % 4, cols = rand() % 9;
  uopc_tensor m = {0};
  if (base && rand() % 4 == 0) { uopc_tensor_retain(t, base); return; }   /* shares bytes with another argument */
  assert_uopc_ok(uopc_tensor_empty(&m, rand() % 5 ? UOPC_F32 : UOPC_F64, 2, (int64_t[]){rows, cols + 1}, &err), err);
  int shape = rand() % 4;
  if (shape == 0) assert_uopc_ok(uopc_tensor_select(t, &m, 0, 0, &err), err);
  else if (shape == 1) assert_uopc_ok(uopc_tensor_slice(t, &m, 1, rand() % 2, UOPC_SLICE_NONE, 1 + rand() % 2, &err), err);
  else if (shape == 2) assert_uopc_ok(uopc_tensor_transpose(t, &m, 0, 1, &err), err);
  else uopc_tensor_retain(t, &m);
  uopc_tensor_release(&m);
}

/* Guard k of s on c, asked both ways. */
static void expect_same_answer(const guard_set *s, int k, const guard_call *c, int round) {
  uopc_error err = {0};
  guard_reason why;
  int quiet = -7, told = -7;
  assert_uopc_ok(guard_check(s, k, c, &quiet, NULL, &err), err);
  memset(&why, 0, sizeof why);
  assert_uopc_ok(guard_check(s, k, c, &told, &why, &err), err);
  if (quiet != told)
    fail_msg("set %d, guard %d '%s' (%s): holds = %d with why == NULL, %d with a reason buffer (reason: '%s')", round,
             k, s->guards[k].what, guard_kind_name(s->guards[k].kind), quiet, told, why.text);
  if (quiet != 0 && quiet != 1) fail_msg("guard '%s': holds = %d, not 0 or 1", s->guards[k].what, quiet);
  if (!told && !why.text[0]) fail_msg("set %d, guard '%s' failed with an empty reason", round, s->guards[k].what);
}

static void test_guard_check_answer_does_not_depend_on_why(void **state) {
  (void)state;
  static const char *const names[] = {"out0", "x", "y"};
  uopc_error err = {0};
  sym_arena *a;
  sym_dim dims[1];
  assert_uopc_ok(sym_arena_new(&a, &err), err);
  assert_uopc_ok(sym_dim_init(&dims[0], "n", 0, 100, 1, &err), err);
  srand(23207);
  for (int round = 0; round < 400; round++) {
    guard_set s;
    assert_uopc_ok(guard_set_init(&s, 3, names, &err), err);
    assert_uopc_ok(guard_set_add_bounds(&s, &dims[0], (guard_site){1, GUARD_SHAPE, 0}, &err), err);
    for (int g = 1 + rand() % 10; g > 0; g--) random_guard(&s, a, dims);
    for (int call_no = 0; call_no < 8; call_no++) {
      uopc_tensor t[3] = {{0}};
      guard_call call;
      guard_reason why;
      for (int i = 0; i < 3; i++) random_tensor(&t[i], i ? &t[rand() % i] : NULL);
      const uopc_tensor *args[] = {&t[0], &t[1], &t[2]};
      assert_uopc_ok(guard_call_init(&call, 3, args, &err), err);
      for (int k = 0; k < s.count; k++) expect_same_answer(&s, k, &call, round);
      int quiet = -7, told = -7;
      assert_uopc_ok(guard_set_check(&s, &call, &quiet, NULL, &err), err);
      assert_uopc_ok(guard_set_check(&s, &call, &told, &why, &err), err);
      if (quiet != told) fail_msg("set %d: guard_set_check's first failure is %d with why == NULL, %d with a reason",
                                  round, quiet, told);
      for (int i = 0; i < 3; i++) uopc_tensor_release(&t[i]);
    }
    guard_set_fini(&s);
  }
  sym_arena_free(a);
}

/* A reason holds a dim's name as text, never as a format: a name is the caller's string, and
 * guard_set_add_range takes any name (the '%' of "n%%" must come out as two '%'). */
static void test_guard_reason_prints_a_dim_name_as_text(void **state) {
  (void)state;
  static const char *const names[] = {"out", "x"};
  uopc_error err = {0};
  uopc_tensor x = {0};
  int64_t n33 = 33;
  guard_set s;
  guard_call call;
  guard_reason why = {{0}};
  int holds = -7;
  assert_uopc_ok(uopc_tensor_empty(&x, UOPC_F32, 1, &n33, &err), err);
  const uopc_tensor *args[] = {&x, &x};
  assert_uopc_ok(guard_call_init(&call, 2, args, &err), err);
  assert_uopc_ok(guard_set_init(&s, 2, names, &err), err);
  assert_uopc_ok(guard_set_add_range(&s, "n%%", (guard_site){1, GUARD_SHAPE, 0}, 1, 16, &err), err);
  assert_uopc_ok(guard_check(&s, 0, &call, &holds, &why, &err), err);
  assert_int_equal(holds, 0);
  assert_string_equal(why.text, "dim 'n%%' = 33 outside [1, 16]");
  guard_set_fini(&s);
  uopc_tensor_release(&x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_guard_check_answer_does_not_depend_on_why),
    cmocka_unit_test(test_guard_reason_prints_a_dim_name_as_text),
  };
  return cmocka_run_group_tests(tests, testutil_fresh_cache, testutil_remove_cache);
}
