/* test_fuse.c: lab 23.7's tj_fuse.c. tj_fuse_rule is asked about graphs
 * built here, with the outputs, reductions and matmuls marked as the core's
 * lowering marks them, and each decision is compared with the rule's own
 * numbers (ops, reads); then the same graphs lowered through the core with
 * TJ_FUSE_RULE, with the loop nests counted, the exps in the generated text
 * counted, every element against the core's interpreter, and a softmax
 * through tj_call. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>
#define TESTUTIL_FAILING_MALLOC   /* the rule's out-of-memory path on demand: fail_next_calloc */
#include "core/coreutil.h"
#include "tj_fixture.h"

/* ---- tj_fuse_rule, directly. */

typedef struct decided {
  int count;
  lower_stored *store;
  unsigned char *used;
} decided;

/* The state the lowering hands a rule (the core's lower_fuse_marks: the
 * nodes outs reach, the outputs, reductions and matmuls marked), then the
 * rule's decisions. */
static decided decide(core *c, const ir_node *const *outs, int n) {
  decided d = {ir_graph_node_count(c->g), NULL, NULL};
  d.store = calloc((size_t)d.count, sizeof *d.store);
  d.used = calloc((size_t)d.count, 1);
  assert_true(d.store && d.used);
  lower_fuse_marks(c->g, outs, n, d.used, d.store);
  uopc_error err = {0};
  tjf_expect_code(tj_fuse_rule(c->g, d.used, d.store, &err), UOPC_OK, err, "tj_fuse_rule");
  return d;
}

static void decided_free(decided *d) { free(d->store), free(d->used); }

static const char *why_text(lower_reason why) {
  switch (why) {
  case LOWER_WHY_OUTPUT: return "an output";
  case LOWER_WHY_REDUCE: return "a reduction or matmul";
  case LOWER_WHY_COST: return "the cost rule";
  case 0: return "fused (not stored)";
  default: return "another reason";
  }
}

/* Node n's decision is why, with the rule's numbers when it is the cost rule. */
static void expect_stored(const decided *d, const ir_node *n, lower_reason why, int64_t ops, int64_t reads,
                          const char *what) {
  const lower_stored *s = &d->store[n->id];
  if (s->why != why)
    fail_msg("%s: node %%%d (%s): expected %s, got %s (ops %lld, reads %lld)", what, n->id,
             ir_op_info_of(n->op)->name, why_text(why), why_text(s->why), (long long)s->ops, (long long)s->reads);
  if (why == LOWER_WHY_COST && (s->ops != ops || s->reads != reads))
    fail_msg("%s: node %%%d (%s): expected the cost rule's numbers %lld ops x %lld reads, got %lld x %lld", what,
             n->id, ir_op_info_of(n->op)->name, (long long)ops, (long long)reads, (long long)s->ops,
             (long long)s->reads);
}

/* Only the nodes listed (and the outputs, reductions and matmuls) are stored. */
static void expect_no_other(const decided *d, const ir_node *const *stored, int n, const char *what) {
  for (int id = 0; id < d->count; id++) {
    int listed = 0;
    for (int k = 0; k < n; k++) listed |= stored[k]->id == id;
    if (d->store[id].why == LOWER_WHY_COST && !listed)
      fail_msg("%s: node %%%d was stored by the cost rule (%lld ops x %lld reads); expected it fused", what, id,
               (long long)d->store[id].ops, (long long)d->store[id].reads);
  }
}

/* t = exp(x) read by t*2, t+1 and sum(t, axis 1). */
typedef struct fanout { const ir_node *x, *t, *outs[3]; } fanout;

static fanout fanout_graph(core *c) {
  fanout f;
  const sym_expr *n = dim(c, "n", 1, 4096), *m = dim(c, "m", 1, 4096);
  f.x = input(c, "x", UOPC_F32, 2, SHAPE(n, m));
  f.t = ir_unary(c->g, IR_EXP, f.x);
  f.outs[0] = ok_node(c, ir_binary(c->g, IR_MUL, f.t, ir_const(c->g, 2, UOPC_F32)), "t*2");
  f.outs[1] = ok_node(c, ir_binary(c->g, IR_ADD, f.t, ir_const(c->g, 1, UOPC_F32)), "t+1");
  f.outs[2] = ok_node(c, ir_reduce(c->g, IR_SUM, f.t, 2u, 0), "sum(t)");
  return f;
}

/* An exp (8 units: a libm call) read by three nests: 8 x (3 - 1) > 4. */
static void test_tj_fuse_rule_stores_a_costly_producer_read_three_times(void **state) {
  core *c = *state;
  fanout f = fanout_graph(c);
  decided d = decide(c, f.outs, 3);
  expect_stored(&d, f.t, LOWER_WHY_COST, 8, 3, "exp(x) read by t*2, t+1 and sum(t)");
  for (int k = 0; k < 3; k++) expect_stored(&d, f.outs[k], LOWER_WHY_OUTPUT, 0, 0, "an output stays an output");
  expect_no_other(&d, &f.t, 1, "exp(x) read by t*2, t+1 and sum(t)");
  decided_free(&d);
}

/* (x + 1) read twice by its square and once by its negation: 1 x (3 - 1) is
 * not more than 4, so each nest adds again. */
static void test_tj_fuse_rule_keeps_a_cheap_producer_fused(void **state) {
  core *c = *state;
  const ir_node *x = input(c, "x", UOPC_F32, 1, SHAPE(dim(c, "n", 1, 4096)));
  const ir_node *t = ir_binary(c->g, IR_ADD, x, ir_const(c->g, 1, UOPC_F32));
  const ir_node *outs[2] = {ok_node(c, ir_binary(c->g, IR_MUL, t, t), "sq"), ok_node(c, ir_unary(c->g, IR_NEG, t), "neg")};
  decided d = decide(c, outs, 2);
  expect_stored(&d, t, 0, 0, 0, "x + 1 read three times");
  expect_no_other(&d, NULL, 0, "x + 1 read three times");
  decided_free(&d);
}

/* exp(y) of shape (m) added to x of (n, m): broadcast, so each element is
 * read "many" times (LOWER_BROADCAST_READS = 16) by one nest. */
static void test_tj_fuse_rule_stores_a_broadcast_producer(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, 4096), *m = dim(c, "m", 1, 4096);
  const ir_node *x = input(c, "x", UOPC_F32, 2, SHAPE(n, m)), *y = input(c, "y", UOPC_F32, 1, SHAPE(m));
  const ir_node *e = ir_unary(c->g, IR_EXP, y);
  const ir_node *out = ok_node(c, ir_binary(c->g, IR_ADD, x, e), "x + exp(y)");
  decided d = decide(c, &out, 1);
  expect_stored(&d, e, LOWER_WHY_COST, 8, LOWER_BROADCAST_READS, "exp(y) broadcast over n rows");
  expect_no_other(&d, &e, 1, "exp(y) broadcast over n rows");
  decided_free(&d);
}

/* A row softmax: exp(x - max) is read by the sum's nest (a reduction reads
 * each element once) and by the divide's: 9 ops (the sub and the exp; the
 * max is a load) x (2 - 1) > 4. A rule that does not count what a reduction
 * reads fuses the exp into both nests, and every element's exp is computed
 * twice. */
static void test_tj_fuse_rule_counts_what_a_reduction_reads(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, 4096), *m = dim(c, "m", 1, 4096);
  const ir_node *x = input(c, "x", UOPC_F32, 2, SHAPE(n, m));
  const ir_node *mx = ir_reduce(c->g, IR_MAX, x, 2u, 1);
  const ir_node *t = ir_unary(c->g, IR_EXP, ir_binary(c->g, IR_SUB, x, mx));
  const ir_node *s = ir_reduce(c->g, IR_SUM, t, 2u, 1);
  const ir_node *y = ok_node(c, ir_binary(c->g, IR_DIV, t, s), "softmax");
  decided d = decide(c, &y, 1);
  expect_stored(&d, t, LOWER_WHY_COST, 9, 2, "exp(x - max) read by the sum and the divide");
  expect_stored(&d, mx, LOWER_WHY_REDUCE, 0, 0, "the max stays a reduction");
  expect_no_other(&d, &t, 1, "softmax");
  decided_free(&d);
}

/* Decided consumers first: v = exp(exp(x)) + 1, read by five outputs, is
 * stored (17 ops: the add and both exps, fused, x (5 - 1) > 4); then
 * u = exp(exp(x)) is read by three outputs and once by v's nest (a stored
 * node reads its operands once an element): 16 x (4 - 1) > 4; then exp(x)
 * is read once, by u's nest, and stays fused. */
static void test_tj_fuse_rule_decides_consumers_first(void **state) {
  core *c = *state;
  const ir_node *x = input(c, "x", UOPC_F32, 1, SHAPE(dim(c, "n", 1, 4096)));
  const ir_node *t = ir_unary(c->g, IR_EXP, x), *u = ir_unary(c->g, IR_EXP, t);
  const ir_node *v = ir_binary(c->g, IR_ADD, u, ir_const(c->g, 1, UOPC_F32));
  const ir_node *outs[8];
  for (int k = 0; k < 3; k++) outs[k] = ok_node(c, ir_binary(c->g, IR_MUL, u, ir_const(c->g, k + 2, UOPC_F32)), "u*k");
  for (int k = 3; k < 8; k++) outs[k] = ok_node(c, ir_binary(c->g, IR_SUB, v, ir_const(c->g, k, UOPC_F32)), "v-k");
  decided d = decide(c, outs, 8);
  expect_stored(&d, v, LOWER_WHY_COST, 17, 5, "exp(exp(x)) + 1 read by five outputs");
  expect_stored(&d, u, LOWER_WHY_COST, 16, 4, "exp(exp(x)) read by three outputs and the stored v");
  expect_stored(&d, t, 0, 0, 0, "exp(x), read only by the stored exp(exp(x))");
  expect_no_other(&d, (const ir_node *[]){u, v}, 2, "exp(exp(x)) and its readers");
  decided_free(&d);
}

/* Either of the rule's own allocations failing is UOPC_E_NOMEM, with nothing
 * decided and nothing leaked (its two arrays: the first calloc, then the
 * second). */
static void test_tj_fuse_rule_out_of_memory_is_an_error(void **state) {
#ifdef __SANITIZE_ADDRESS__
  (void)state;
  testutil_skip_under_asan("an allocator that fails when asked");
#else
  core *c = *state;
  testutil_skip_unless_allocation_fails();
  fanout f = fanout_graph(c);
  lower_stored store[16] = {{0}};
  unsigned char used[16] = {0};
  assert_true(ir_graph_node_count(c->g) <= 16);
  lower_fuse_marks(c->g, f.outs, 3, used, store);
  for (int which = 1; which <= 2; which++) {
    uopc_error err = {0};
    fail_next_calloc = which;
    int rc = tj_fuse_rule(c->g, used, store, &err);
    fail_next_calloc = 0;
    tjf_expect_code(rc, UOPC_E_NOMEM, err, "tj_fuse_rule with calloc %d failing", which);
    if (store[f.t->id].why) fail_msg("tj_fuse_rule with calloc %d failing: exp(x) was stored all the same", which);
  }
#endif
}

/* ---- Through the core's lowering (LOWER_FUSE with TJ_FUSE_RULE). */

static exec *lowered(core *c, const ir_node *const *outs, int n, const char *entry) {
  exec *e = NULL;
  uopc_error err = {0};
  tjf_expect_code(exec_new_rule(&e, c->g, outs, n, entry, LOWER_FUSE, &TJ_FUSE_RULE, NULL, &err), UOPC_OK, err,
                  "exec_new_rule '%s'", entry);
  return e;
}

/* The fan-out graph lowered: exp(x) in a nest of its own (one expf in the
 * text, where fusing it everywhere writes four), 4 nests, 1 temporary, the
 * rule named in the banner, and the values the interpreter gives. */
static void test_tj_fuse_rule_lowered_computes_a_shared_exp_once(void **state) {
  core *c = *state;
  fanout f = fanout_graph(c);
  exec *e = lowered(c, f.outs, 3, "fanout_tj");
  const lower_program *p = exec_lowered(e);
  if (count_of(body_of(e), "expf(") != 1)
    fail_msg("expected 1 expf in the generated body, got %d:\n%s", count_of(body_of(e), "expf("), exec_source(e));
  assert_int_equal(p->n_kernels, 4);
  assert_int_equal(p->n_temps, 1);
  assert_non_null(strstr(exec_source(e), " * fusion: tensorjit's cost rule (lab 23.7)"));
  buf in;
  buf_new(&in, UOPC_F32, 2, (const int64_t[]){37, 45});
  for (int64_t i = 0; i < 37 * 45; i++) uopc_tensor_set(&in.t, i, (double)(i % 17 - 8) / 4.0);
  check_against_eval(c, e, f.outs, 3, &in, 1, 1e-5, "fanout");
  buf_free(&in);
  exec_free(e);
}

/* The softmax's groups as lower_program_print_groups writes them: the exp
 * stored by the rule with its numbers, the sum taking the max's place. */
static void test_tj_fuse_rule_lowered_softmax_groups(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, 4096), *m = dim(c, "m", 1, 4096);
  const ir_node *x = input(c, "x", UOPC_F32, 2, SHAPE(n, m));
  const ir_node *t = ir_unary(c->g, IR_EXP, ir_binary(c->g, IR_SUB, x, ir_reduce(c->g, IR_MAX, x, 2u, 1)));
  const ir_node *y = ok_node(c, ir_binary(c->g, IR_DIV, t, ir_reduce(c->g, IR_SUM, t, 2u, 1)), "softmax");
  lower_program *p = NULL;
  codegen_text text = {0};
  uopc_error err = {0};
  tjf_expect_code(lower_program_new_rule(&p, c->g, &y, 1, "softmax", LOWER_C, LOWER_FUSE, &TJ_FUSE_RULE, &err),
                  UOPC_OK, err, "lower_program_new_rule");
  assert_uopc_ok(lower_program_print_groups(&text, p, &err), err);
  const char *want = "softmax: 4 loop nests, 3 temporaries (LOWER_FUSE)\n"
                     "nest 0: tmp0 = %1 (a reduction: always stored), reads x\n"
                     "  %1 = max(%0, axes=[1], keepdims) : f32[n, 1]\n"
                     "nest 1: tmp1 = %3 (cost rule: 9 ops x (2 reads - 1) > 4), reads x, tmp0\n"
                     "  %2 = sub(%0, %1) : f32[n, m]\n"
                     "  %3 = exp(%2) : f32[n, m]\n"
                     "nest 2: tmp2 = %4 (a reduction: always stored), reads tmp1\n"
                     "  %4 = sum(%3, axes=[1], keepdims) : f32[n, 1]\n"
                     "nest 3: out = %5 (an output), reads tmp1, tmp2\n"
                     "  %5 = div(%3, %4) : f32[n, m]\n"
                     "scratch: tmp0 at 0, live from nest 0 to nest 1\n"
                     "scratch: tmp1 at (n*4 + 63)//64*64, live from nest 1 to nest 3\n"
                     "scratch: tmp2 at 0, live from nest 2 to nest 3\n"
                     "scratch bytes: (m*n*4 + 63)//64*64 + (n*4 + 63)//64*64\n";
  if (strcmp(text.data, want) != 0) fail_msg("expected the groups\n%s\ngot\n%s", want, text.data);
  codegen_text_fini(&text);
  lower_program_free(p);
}

/* ---- Through tj_call. */

static int softmax_rows(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {
  (void)user;
  tp_tensor *x = in[0].t;
  tp_tensor *e = tp_exp(c, tp_sub(c, x, tp_reduce_at(c, IR_MAX, x, 1u << 1, 1, TP_HERE)));
  out[0] = tp_div(c, e, tp_sum(c, e, 1u << 1, 1));
  return tp_status(c);
}

/* One artifact over (4, 6) and (3, 100) whose generated text computes exp
 * once an element (tensorjit's exp is exp_f32), with every element within
 * 1e-5 of a softmax in double. */
static void test_tj_call_softmax_computes_exp_once_an_element(void **state) {
  (void)state;
  static const int64_t shapes[][2] = {{4, 6}, {3, 100}};
  tj_function *f = tjf_compile(softmax_rows, &(tj_options){0});
  for (int k = 0; k < 2; k++) {
    uopc_tensor x = tjf_mat(shapes[k][0], shapes[k][1]), out = {0};
    uopc_error err = {0};
    tjf_expect_code(tj_call(f, &(tj_arg){TJ_TENSOR, .tensor = &x}, 1, &out, &err), UOPC_OK, err, "softmax on (%lld, %lld)",
                    (long long)shapes[k][0], (long long)shapes[k][1]);
    for (int64_t r = 0; r < shapes[k][0]; r++) {
      int64_t n = shapes[k][1];
      double m = -INFINITY, s = 0;
      for (int64_t i = 0; i < n; i++) m = fmax(m, uopc_tensor_get(&x, r * n + i));
      for (int64_t i = 0; i < n; i++) s += exp(uopc_tensor_get(&x, r * n + i) - m);
      for (int64_t i = 0; i < n; i++) {
        double want = exp(uopc_tensor_get(&x, r * n + i) - m) / s, got = uopc_tensor_get(&out, r * n + i);
        if (!(fabs(got - want) <= 1e-5 * want))
          fail_msg("softmax on (%lld, %lld): element (%lld, %lld): expected %.8g, got %.8g", (long long)shapes[k][0],
                   (long long)n, (long long)r, (long long)i, want, got);
      }
    }
    uopc_tensor_release(&out);
    uopc_tensor_release(&x);
  }
  tjf_expect_counts(f, 1, 1, "softmax on (4, 6) then (3, 100)");
  const char *src = tj_artifact_source(f, 0), *body = src ? strstr(src, "*/") : NULL;
  if (!body) fail_msg("softmax: expected the artifact's generated source, got none");
  if (testutil_count_serial(body, "exp_f32(t") != 1)
    fail_msg("softmax: expected one exp_f32 call in the generated body (the exp stored once), got %d:\n%s",
             testutil_count_serial(body, "exp_f32(t"), src);
  tj_free(f);
}

static int fresh(void **state) { return testutil_fresh_cache(state); }
static int removed(void **state) { return testutil_remove_cache(state); }

int main(void) {
#define T(name) cmocka_unit_test_setup_teardown(name, core_setup, core_teardown)
  const struct CMUnitTest tests[] = {
    T(test_tj_fuse_rule_stores_a_costly_producer_read_three_times),
    T(test_tj_fuse_rule_keeps_a_cheap_producer_fused),
    T(test_tj_fuse_rule_stores_a_broadcast_producer),
    T(test_tj_fuse_rule_counts_what_a_reduction_reads),
    T(test_tj_fuse_rule_decides_consumers_first),
    T(test_tj_fuse_rule_out_of_memory_is_an_error),
    T(test_tj_fuse_rule_lowered_computes_a_shared_exp_once),
    T(test_tj_fuse_rule_lowered_softmax_groups),
    cmocka_unit_test_setup_teardown(test_tj_call_softmax_computes_exp_once_an_element, fresh, removed),
  };
#undef T
  return cmocka_run_group_tests(tests, NULL, NULL);
}
