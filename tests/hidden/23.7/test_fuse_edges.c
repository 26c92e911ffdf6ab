/* test_fuse_edges.c: lab 23.7's held-out cases of tj_fuse.c: nodes the
 * outputs do not reach are neither stored nor counted as readers, and reads
 * multiplied through many broadcasts saturate at 2^40 instead of
 * overflowing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>
#include "core/coreutil.h"
#include "23.7/tj_fixture.h"

/* exp(x) read by the output t * 3 and by three nodes nothing reaches: one
 * read, so it stays fused (a rule that counts the unreached readers stores
 * it), and no unreached node is stored (the lowering refuses that). */
static void test_tj_fuse_rule_ignores_nodes_the_outputs_do_not_reach(void **state) {
  core *c = *state;
  const ir_node *x = input(c, "x", UOPC_F32, 1, SHAPE(dim(c, "n", 1, 4096)));
  const ir_node *t = ir_unary(c->g, IR_EXP, x);
  const ir_node *out = ok_node(c, ir_binary(c->g, IR_MUL, t, ir_const(c->g, 3, UOPC_F32)), "t*3");
  const ir_node *unreached[3] = {ir_unary(c->g, IR_EXP, t), ir_binary(c->g, IR_ADD, t, t),
                                 ir_reduce(c->g, IR_SUM, ir_unary(c->g, IR_LOG, t), 1u, 0)};
  int count = ir_graph_node_count(c->g);
  lower_stored *store = calloc((size_t)count, sizeof *store);
  unsigned char *used = calloc((size_t)count, 1);
  assert_true(store && used);
  lower_fuse_marks(c->g, &out, 1, used, store);   /* x, t, the 3 and t*3 */
  uopc_error err = {0};
  tjf_expect_code(tj_fuse_rule(c->g, used, store, &err), UOPC_OK, err, "tj_fuse_rule");
  if (store[t->id].why)
    fail_msg("exp(x), read once by the output (and by 3 nodes the outputs do not reach): expected fused, got stored "
             "(%lld ops x %lld reads)", (long long)store[t->id].ops, (long long)store[t->id].reads);
  for (int id = 0; id < count; id++)
    if (!used[id] && store[id].why) fail_msg("node %%%d, which the outputs do not reach, was stored", id);
  (void)unreached;
  free(store), free(used);
}

/* exp(y) broadcast twelve times over (reshape to (1, k), expand to (2, k),
 * flatten): each expand reads its operand 16 times per element of its own,
 * so exp(y) is read 16^12 = 2^48 times; the count stops at 2^40 (and a
 * longer chain would overflow int64 without the stop). */
static void test_tj_fuse_rule_reads_saturate_at_2_to_the_40(void **state) {
  core *c = *state;
  const ir_node *y = input(c, "y", UOPC_F32, 1, SHAPE(cst(c, 2)));
  const ir_node *e = ir_unary(c->g, IR_EXP, y), *v = e;
  int64_t k = 2;
  for (int level = 0; level < 12; level++, k *= 2) {
    v = ir_expand(c->g, ir_reshape(c->g, v, 2, SHAPE(cst(c, 1), cst(c, k))), 2, SHAPE(cst(c, 2), cst(c, k)));
    v = ok_node(c, ir_reshape(c->g, v, 1, SHAPE(cst(c, 2 * k))), "a broadcast level");
  }
  int count = ir_graph_node_count(c->g);
  lower_stored *store = calloc((size_t)count, sizeof *store);
  unsigned char *used = calloc((size_t)count, 1);
  assert_true(store && used);
  lower_fuse_marks(c->g, &v, 1, used, store);
  uopc_error err = {0};
  tjf_expect_code(tj_fuse_rule(c->g, used, store, &err), UOPC_OK, err, "tj_fuse_rule");
  if (store[e->id].why != LOWER_WHY_COST || store[e->id].ops != 8 || store[e->id].reads != INT64_C(1) << 40)
    fail_msg("exp(y) broadcast 12 times: expected stored by the cost rule with 8 ops x 2^40 reads (saturated), got "
             "reason %d, %lld ops x %lld reads", (int)store[e->id].why, (long long)store[e->id].ops,
             (long long)store[e->id].reads);
  free(store), free(used);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_tj_fuse_rule_ignores_nodes_the_outputs_do_not_reach, core_setup, core_teardown),
    cmocka_unit_test_setup_teardown(test_tj_fuse_rule_reads_saturate_at_2_to_the_40, core_setup, core_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
