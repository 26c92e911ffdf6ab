/* test_vguard.c: the variant cache's guards (lab 23.2, given code). The
 * compiled form of a set (vguard_set_holds) must give the reference's answer
 * (vguard_set_first_failure) on every call: random sets of every kind,
 * contradictory ones included, against random views (rank 1 and 2, f32 and
 * f64, sliced, transposed, empty, sharing bytes). */
#include "vguard.h"
#include "testutil.h"

/* A random guard over 3 arguments of rank up to 2. */
static void random_guard(vguard_set *s, sym_arena *a, const sym_dim *dims) {
  uopc_error err = {0};
  int arg = rand() % 3, other = (arg + 1 + rand() % 2) % 3, axis = rand() % 2;
  vguard_site at = {arg, rand() % 4 ? VGUARD_SHAPE : VGUARD_STRIDE, axis}, to = {other, VGUARD_SHAPE, rand() % 2};
  switch (rand() % 9) {
  case 0: vguard_add_dtype(s, arg, rand() % 2 ? UOPC_F32 : UOPC_F64, &err); break;
  case 1: vguard_add_rank(s, arg, 1 + rand() % 2, &err); break;
  case 2: vguard_add_contiguous(s, arg, &err); break;
  case 3: vguard_add_aligned(s, arg, 1 << (rand() % 7), &err); break;
  case 4: vguard_add_disjoint(s, arg, other, &err); break;
  case 5: vguard_add_range(s, "n", at, rand() % 8, 8 + rand() % 40, &err); break;
  case 6: vguard_add_divisible(s, "n", at, 1 + rand() % 8, &err); break;
  case 7: vguard_add_equal(s, at, to, &err); break;
  default: vguard_add_expr(s, at, sym_expr_add(a, sym_expr_dim(a, &dims[0]), sym_expr_const(a, rand() % 3 - 1)), &err);
  }
}

static void random_tensor(uopc_tensor *t, const uopc_tensor *base) {
  uopc_error err = {0};
  int64_t rows = 1 + rand() % 4, cols = rand() % 9;
  uopc_tensor m = {0};
  if (base && rand() % 4 == 0) { uopc_tensor_retain(t, base); return; }   /* shares bytes with another argument */
  assert_uopc_ok(uopc_tensor_empty(&m, rand() % 5 ? UOPC_F32 : UOPC_F64, 2, (int64_t[]){rows, cols + 1}, &err), err);
  int shape = rand() % 3;
  if (shape == 0) assert_uopc_ok(uopc_tensor_select(t, &m, 0, 0, &err), err);
  else if (shape == 1) assert_uopc_ok(uopc_tensor_slice(t, &m, 1, rand() % 2, UOPC_SLICE_NONE, 1 + rand() % 2, &err), err);
  else assert_uopc_ok(uopc_tensor_transpose(t, &m, 0, 1, &err), err);
  uopc_tensor_release(&m);
}

static void test_vguard_compiled_sets_agree_with_the_reference(void **state) {
  (void)state;
  static const char *const names[] = {"out0", "x", "y"};
  uopc_error err = {0};
  sym_arena *a;
  sym_dim dims[1];
  assert_uopc_ok(sym_arena_new(&a, &err), err);
  assert_uopc_ok(sym_dim_init(&dims[0], "n", 0, 100, 1, &err), err);
  srand(2302);
  for (int round = 0; round < 300; round++) {
    vguard_set s;
    assert_uopc_ok(vguard_set_init(&s, 3, names, &err), err);
    assert_uopc_ok(vguard_add_dim(&s, &dims[0], (vguard_site){1, VGUARD_SHAPE, 0}, &err), err);
    for (int g = 1 + rand() % 8; g > 0; g--) random_guard(&s, a, dims);
    assert_uopc_ok(vguard_set_compile(&s, &err), err);
    for (int k = 0; k < 10; k++) {
      uopc_tensor t[3] = {{0}};
      vguard_call call;
      int failed;
      for (int i = 0; i < 3; i++) random_tensor(&t[i], i ? &t[i - 1] : NULL);
      const uopc_tensor *args[] = {&t[0], &t[1], &t[2]};
      assert_uopc_ok(vguard_call_init(&call, 3, args, &err), err);
      assert_uopc_ok(vguard_set_first_failure(&s, &call, &failed, NULL, &err), err);
      if (vguard_set_holds(&s, &call) != (failed < 0))
        fail_msg("round %d: compiled says %d, the reference's first failure is %d ('%s')", round,
                 vguard_set_holds(&s, &call), failed, failed >= 0 ? s.guards[failed].what : "");
      for (int i = 0; i < 3; i++) uopc_tensor_release(&t[i]);
    }
    vguard_set_fini(&s);
  }
  sym_arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_vguard_compiled_sets_agree_with_the_reference),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
