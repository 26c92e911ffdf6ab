/* test_ir_hash.c: the compiler core's structural graph hash (given code,
 * labs/core/ir_hash.c), which lab 23.2's variant keys carry. */
#include "ir.h"
#include "testutil.h"

/* x * 2 + 1 built in two node orders hashes alike; + 2 and another dim differ. */
static void test_ir_graph_hash_is_structural(void **state) {
  (void)state;
  uint64_t h[4];
  for (int v = 0; v < 4; v++) {
    ir_graph *g;
    uopc_error err = {0};
    sym_dim n;
    assert_uopc_ok(ir_graph_new(&g, &err), err);
    assert_uopc_ok(sym_dim_init(&n, v == 3 ? "m" : "n", 0, 100, 1, &err), err);
    const sym_expr *shape[] = {sym_expr_dim(ir_graph_arena(g), &n)};
    const ir_node *one = v == 1 ? ir_const(g, 1.0, UOPC_F32) : NULL;   /* another order */
    const ir_node *x = ir_input(g, "x", UOPC_F32, 1, shape);
    const ir_node *t = ir_binary(g, IR_MUL, x, ir_const(g, 2.0, UOPC_F32));
    const ir_node *out = ir_binary(g, IR_ADD, t, one ? one : ir_const(g, v == 2 ? 2.0 : 1.0, UOPC_F32));
    assert_int_equal(ir_graph_error(g)->code, UOPC_OK);
    h[v] = ir_graph_hash(g, &out, 1);
    ir_graph_free(g);
  }
  assert_true(h[0] == h[1]);
  assert_true(h[0] != h[2]);
  assert_true(h[0] != h[3]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_ir_graph_hash_is_structural),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
