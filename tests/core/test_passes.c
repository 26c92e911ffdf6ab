/* test_passes.c: the graph passes (labs/core/ir_pass.h): each pass on its
 * own, a graph before and after as ir_print writes it, and the pipeline's
 * order and its printout. Results are also checked by running both graphs
 * through the interpreter where a pass could change a value (folding). */
#include "coreutil.h"
#include "ir_eval.h"
#include "ir_pass.h"

static void expect_print(const ir_graph *g, const ir_node *const *outs, int n, const char *want, const char *what) {
  codegen_text t = {0};
  uopc_error err = {0};
  assert_uopc_ok(ir_print(&t, g, outs, n, &err), err);
  if (strcmp(t.data, want) != 0) fail_msg("%s: expected\n%s\ngot\n%s", what, want, t.data);
  codegen_text_fini(&t);
}

/* Runs pass over c's graph and outputs; checks the printed graph before and
 * after and the node count after; returns the new graph (the caller frees). */
static ir_graph *run_pass(core *c, ir_pass_fn *pass, const ir_node *const *outs, const ir_node **got, int n,
                          const char *before, const char *after, int nodes_after, const char *what) {
  ir_graph *h = NULL;
  uopc_error err = {0};
  if (!getenv("PASSES_SHOW")) expect_print(c->g, outs, n, before, what);
  assert_uopc_ok(pass(&h, got, c->g, outs, n, &err), err);
  if (getenv("PASSES_SHOW")) { codegen_text t = {0}; ir_print(&t, h, got, n, &err); fprintf(stderr, "AFTER %s\n%s", what, t.data); codegen_text_fini(&t); }
  expect_print(h, got, n, after, what);
  if (ir_graph_node_count(h) != nodes_after)
    fail_msg("%s: expected %d nodes after, got %d", what, nodes_after, ir_graph_node_count(h));
  return h;
}

static void test_dce_drops_what_no_output_reaches(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, 64);
  const ir_node *x = input(c, "x", UOPC_F32, 1, SHAPE(n)), *y = input(c, "y", UOPC_F32, 1, SHAPE(n));
  const ir_node *dead = ir_unary(c->g, IR_EXP, x);
  ir_binary(c->g, IR_MUL, dead, y);                    /* dead too */
  const ir_node *one = ir_const(c->g, 1, UOPC_F32);
  const ir_node *out = ok_node(c, ir_binary(c->g, IR_ADD, x, one), "out");
  const ir_node *got[1];
  ir_graph *h = run_pass(c, ir_pass_dce, &out, got, 1,
                         "%0 = input(x) : f32[n]\n"
                         "%4 = const(1) : f32[]\n"
                         "%5 = add(%0, %4) : f32[n]\n"
                         "out0 = %5\n",
                         "%0 = input(x) : f32[n]\n"
                         "%2 = const(1) : f32[]\n"
                         "%3 = add(%0, %2) : f32[n]\n"
                         "out0 = %3\n", 4, "dce");
  /* Both inputs stay, in order, though y is dead: the call binds by position. */
  assert_int_equal(ir_graph_input_count(h), 2);
  assert_string_equal(ir_graph_input(h, 1)->name, "y");
  ir_graph_free(h);
}

static void test_cse_merges_equal_nodes_and_their_consumers(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, 64);
  const ir_node *x = input(c, "x", UOPC_F32, 2, SHAPE(n, cst(c, 4)));
  const ir_node *e1 = ir_unary(c->g, IR_EXP, x), *e2 = ir_unary(c->g, IR_EXP, x);
  const ir_node *a = ir_binary(c->g, IR_MUL, e1, ir_const(c->g, 2, UOPC_F32));
  const ir_node *b = ir_binary(c->g, IR_MUL, e2, ir_const(c->g, 2, UOPC_F32));
  const ir_node *s1 = ir_reduce(c->g, IR_SUM, a, 2u, 0), *s2 = ir_reduce(c->g, IR_SUM, b, 2u, 0);
  const ir_node *s3 = ir_reduce(c->g, IR_SUM, b, 2u, 1);     /* keepdims differs: kept apart */
  const ir_node *outs[3] = {ok_node(c, s1, "s1"), ok_node(c, s2, "s2"), ok_node(c, s3, "s3")}, *got[3];
  ir_graph *h = run_pass(c, ir_pass_cse, outs, got, 3,
                         "%0 = input(x) : f32[n, 4]\n"
                         "%1 = exp(%0) : f32[n, 4]\n"
                         "%2 = exp(%0) : f32[n, 4]\n"
                         "%3 = const(2) : f32[]\n"
                         "%4 = mul(%1, %3) : f32[n, 4]\n"
                         "%5 = const(2) : f32[]\n"
                         "%6 = mul(%2, %5) : f32[n, 4]\n"
                         "%7 = sum(%4, axes=[1]) : f32[n]\n"
                         "%8 = sum(%6, axes=[1]) : f32[n]\n"
                         "%9 = sum(%6, axes=[1], keepdims) : f32[n, 1]\n"
                         "out0 = %7\nout1 = %8\nout2 = %9\n",
                         "%0 = input(x) : f32[n, 4]\n"
                         "%1 = exp(%0) : f32[n, 4]\n"
                         "%2 = const(2) : f32[]\n"
                         "%3 = mul(%1, %2) : f32[n, 4]\n"
                         "%4 = sum(%3, axes=[1]) : f32[n]\n"
                         "%5 = sum(%3, axes=[1], keepdims) : f32[n, 1]\n"
                         "out0 = %4\nout1 = %4\nout2 = %5\n", 6, "cse");
  assert_ptr_equal(got[0], got[1]);
  assert_ptr_not_equal(got[0], got[2]);
  ir_graph_free(h);
}

static void test_cse_keeps_constants_apart_by_bits_and_dtype(void **state) {
  core *c = *state;
  const ir_node *outs[4] = {ir_const(c->g, 0.0, UOPC_F32), ir_const(c->g, -0.0, UOPC_F32),
                            ir_const(c->g, 0.0, UOPC_F64), ir_const(c->g, 0.0, UOPC_F32)}, *got[4];
  ir_graph *h = NULL;
  uopc_error err = {0};
  assert_uopc_ok(ir_pass_cse(&h, got, c->g, outs, 4, &err), err);
  assert_ptr_equal(got[0], got[3]);
  assert_ptr_not_equal(got[0], got[1]);
  assert_ptr_not_equal(got[0], got[2]);
  assert_int_equal(ir_graph_node_count(h), 3);
  ir_graph_free(h);
}

static void test_fold_computes_ops_over_constants_and_sizes(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, 64);
  const ir_node *x = input(c, "x", UOPC_F32, 1, SHAPE(n));
  /* (2 + 3) * exp(0) folds to 5; size(4 * 2) folds to 8; size(n) stays a size. */
  const ir_node *two = ir_const(c->g, 2, UOPC_F32), *three = ir_const(c->g, 3, UOPC_F32);
  const ir_node *five = ir_binary(c->g, IR_ADD, two, three), *one = ir_unary(c->g, IR_EXP, ir_const(c->g, 0, UOPC_F32));
  const ir_node *k = ir_binary(c->g, IR_MUL, five, one);
  const ir_node *s = ir_size(c->g, sym_expr_mul(c->a, cst(c, 4), cst(c, 2)), UOPC_F32);
  const ir_node *count = ir_binary(c->g, IR_ADD, s, ir_size(c->g, n, UOPC_F32));
  const ir_node *y = ir_binary(c->g, IR_DIV, ir_binary(c->g, IR_MUL, x, k), count);
  const ir_node *out = ok_node(c, y, "y"), *got[1];
  ir_graph *h = run_pass(c, ir_pass_fold, &out, got, 1,
                         "%0 = input(x) : f32[n]\n"
                         "%1 = const(2) : f32[]\n"
                         "%2 = const(3) : f32[]\n"
                         "%3 = add(%1, %2) : f32[]\n"
                         "%4 = const(0) : f32[]\n"
                         "%5 = exp(%4) : f32[]\n"
                         "%6 = mul(%3, %5) : f32[]\n"
                         "%7 = size(8) : f32[]\n"
                         "%8 = size(n) : f32[]\n"
                         "%9 = add(%7, %8) : f32[]\n"
                         "%10 = mul(%0, %6) : f32[n]\n"
                         "%11 = div(%10, %9) : f32[n]\n"
                         "out0 = %11\n",
                         /* The operands folded away stay as dead nodes: DCE's work. */
                         "%0 = input(x) : f32[n]\n"
                         "%6 = const(5) : f32[]\n"
                         "%7 = const(8) : f32[]\n"
                         "%8 = size(n) : f32[]\n"
                         "%9 = add(%7, %8) : f32[]\n"
                         "%10 = mul(%0, %6) : f32[n]\n"
                         "%11 = div(%10, %9) : f32[n]\n"
                         "out0 = %11\n", 12, "fold");
  ir_graph_free(h);
}

/* A mean becomes a sum over the same axes divided by its count, a size read
 * at run time: printed before and after, and compiled both ways the same
 * bits at every size (0 elements: NaN both ways). */
static void test_decompose_means_into_a_sum_and_its_count(void **state) {
  core *c = *state;
  const sym_expr *m = dim(c, "m", 0, 64), *n = dim(c, "n", 0, 64);
  const ir_node *x = input(c, "x", UOPC_F32, 2, SHAPE(m, n)), *y = input(c, "y", UOPC_F64, 1, SHAPE(n));
  const ir_node *rows = ok_node(c, ir_reduce(c->g, IR_MEAN, x, 2u, 1), "x.mean(1, keepdims)");
  const ir_node *outs[2] = {ok_node(c, ir_binary(c->g, IR_SUB, x, rows), "x - x.mean(1)"),
                            ok_node(c, ir_reduce(c->g, IR_MEAN, y, 1u, 0), "y.mean()")}, *got[2];
  ir_graph *h = run_pass(c, ir_pass_decompose, outs, got, 2,
                         "%0 = input(x) : f32[m, n]\n"
                         "%1 = input(y) : f64[n]\n"
                         "%2 = mean(%0, axes=[1], keepdims) : f32[m, 1]\n"
                         "%3 = sub(%0, %2) : f32[m, n]\n"
                         "%4 = mean(%1, axes=[0]) : f64[]\n"
                         "out0 = %3\n"
                         "out1 = %4\n",
                         "%0 = input(x) : f32[m, n]\n"
                         "%1 = input(y) : f64[n]\n"
                         "%2 = sum(%0, axes=[1], keepdims) : f32[m, 1]\n"
                         "%3 = size(n) : f32[]\n"
                         "%4 = div(%2, %3) : f32[m, 1]\n"
                         "%5 = sub(%0, %4) : f32[m, n]\n"
                         "%6 = sum(%1, axes=[0]) : f64[]\n"
                         "%7 = size(n) : f64[]\n"
                         "%8 = div(%6, %7) : f64[]\n"
                         "out0 = %5\n"
                         "out1 = %8\n", 9, "decompose");
  exec *e[2] = {NULL, NULL};
  uopc_error err = {0};
  assert_uopc_ok(exec_new_flags(&e[0], c->g, outs, 2, "mean_node", LOWER_FUSE, NULL, &err), err);
  assert_uopc_ok(exec_new_flags(&e[1], h, got, 2, "mean_decomposed", LOWER_FUSE, NULL, &err), err);
  const int64_t sizes[][2] = {{3, 7}, {1, 1}, {2, 0}, {5, 64}, {4, 33}};
  for (int z = 0; z < COUNT(sizes); z++) {
    buf in[2], a[2], b[2];
    buf_new(&in[0], UOPC_F32, 2, sizes[z]);
    buf_new(&in[1], UOPC_F64, 1, &sizes[z][1]);
    for (int64_t i = 0; i < sizes[z][0] * sizes[z][1]; i++) uopc_tensor_set(&in[0].t, i, (double)((i * 37) % 23) / 7 - 1.5);
    for (int64_t i = 0; i < sizes[z][1]; i++) uopc_tensor_set(&in[1].t, i, (double)((i * 11) % 17) / 3 + 0.1);
    sym_binding bind;
    run_into(e[0], outs, 2, in, 2, a, &bind);
    run_into(e[1], got, 2, in, 2, b, &bind);
    for (int k = 0; k < 2; k++)
      for (int64_t i = 0; i < uopc_tensor_numel(&a[k].t); i++) {
        double u = uopc_tensor_get(&a[k].t, i), v = uopc_tensor_get(&b[k].t, i);
        if (memcmp(&u, &v, sizeof u) != 0)
          fail_msg("(%lld, %lld): output %d element %lld: the mean's nest %.17g, decomposed %.17g",
                   (long long)sizes[z][0], (long long)sizes[z][1], k, (long long)i, u, v);
      }
    if (sizes[z][1] == 0 && uopc_tensor_get(&b[1].t, 0) == uopc_tensor_get(&b[1].t, 0))
      fail_msg("the mean of no element: expected NaN, got %g", uopc_tensor_get(&b[1].t, 0));
    for (int k = 0; k < 2; k++) buf_free(&in[k]), buf_free(&a[k]), buf_free(&b[k]);
  }
  exec_free(e[0]), exec_free(e[1]);
  ir_graph_free(h);
}

/* One op over constants, folded, against the interpreter on the unfolded
 * graph: the same bits (NaN as NaN), or the node kept where C is undefined. */
static void fold_case(ir_op op, uopc_dtype dt, uopc_dtype to, double a, double b, int kept) {
  ir_graph *g = NULL, *h = NULL;
  uopc_error err = {0};
  assert_uopc_ok(ir_graph_new(&g, &err), err);
  const ir_node *x = ir_const(g, a, dt), *y = ir_const(g, b, dt), *r;
  if (op == IR_CAST) r = ir_cast(g, x, to);
  else if (op == IR_WHERE) r = ir_where(g, ir_binary(g, IR_LT, x, y), x, y);
  else r = ir_op_info_of(op)->arity == 1 ? ir_unary(g, op, x) : ir_binary(g, op, x, y);
  if (!r) fail_msg("fold %s: %s", ir_op_info_of(op)->name, ir_graph_error(g)->message);
  const ir_node *got;
  assert_uopc_ok(ir_pass_fold(&h, &got, g, &r, 1, &err), err);
  if (kept) {
    if (got->op == IR_CONST) fail_msg("fold %s(%g): expected the node kept, got const(%g)", ir_op_info_of(op)->name, a, got->value);
  } else {
    if (got->op != IR_CONST) fail_msg("fold %s(%g, %g): not folded", ir_op_info_of(op)->name, a, b);
    sym_binding bind;
    sym_binding_init(&bind);
    uopc_tensor want;
    assert_uopc_ok(ir_eval(g, &r, 1, NULL, 0, &bind, &want, &err), err);
    double w;
    const void *d = uopc_tensor_data(&want);
    switch (r->dtype) {
    case UOPC_F32: w = *(const float *)d; break;
    case UOPC_F64: w = *(const double *)d; break;
    case UOPC_I32: w = *(const int32_t *)d; break;
    case UOPC_I64: w = (double)*(const int64_t *)d; break;
    default: w = *(const uint8_t *)d; break;
    }
    uopc_tensor_release(&want);
    int same = (w != w && got->value != got->value) || (w == got->value && signbit(w) == signbit(got->value));
    if (!same) fail_msg("fold %s(%.17g, %.17g): folded %.17g, the interpreter %.17g", ir_op_info_of(op)->name, a, b,
                        got->value, w);
  }
  ir_graph_free(h);
  ir_graph_free(g);
}

static void test_fold_matches_the_interpreter(void **state) {
  (void)state;
  const double nan = NAN, inf = INFINITY;
  const ir_op float_ops[] = {IR_NEG, IR_ABS, IR_EXP, IR_LOG, IR_SQRT, IR_TANH, IR_ADD, IR_SUB, IR_MUL, IR_DIV,
                             IR_POW, IR_MAXIMUM, IR_MINIMUM, IR_LT, IR_EQ, IR_NE, IR_WHERE};
  const double vals[][2] = {{0.1, 0.7}, {-0.0, 0.0}, {nan, 1}, {1, nan}, {inf, -inf}, {1e30, 1e30}, {-3, 0.5}};
  for (size_t o = 0; o < COUNT(float_ops); o++)
    for (size_t v = 0; v < COUNT(vals); v++) {
      fold_case(float_ops[o], UOPC_F32, UOPC_F32, vals[v][0], vals[v][1], 0);
      fold_case(float_ops[o], UOPC_F64, UOPC_F64, vals[v][0], vals[v][1], 0);
    }
  /* Integers wrap as NumPy's (and the generated C's unsigned arithmetic). */
  const ir_op int_ops[] = {IR_NEG, IR_ABS, IR_ADD, IR_SUB, IR_MUL, IR_MAXIMUM, IR_MINIMUM, IR_GE};
  const double ivals[][2] = {{2147483647, 1}, {-2147483648.0, -1}, {7, -3}, {65536, 65536}};
  for (size_t o = 0; o < COUNT(int_ops); o++)
    for (size_t v = 0; v < COUNT(ivals); v++) fold_case(int_ops[o], UOPC_I32, UOPC_I32, ivals[v][0], ivals[v][1], 0);
  fold_case(IR_CAST, UOPC_F32, UOPC_I32, -2.7, 0, 0);
  fold_case(IR_CAST, UOPC_F64, UOPC_F32, 0.1, 0, 0);
  fold_case(IR_CAST, UOPC_F32, UOPC_BOOL, nan, 0, 0);
  fold_case(IR_CAST, UOPC_I32, UOPC_F32, 16777217, 0, 0);
  /* Undefined in C, so kept for the run to decide (as the lowering writes it). */
  fold_case(IR_CAST, UOPC_F32, UOPC_I32, nan, 0, 1);
  fold_case(IR_CAST, UOPC_F64, UOPC_I32, 3e9, 0, 1);
  /* 2^32 * 2^32 wraps to 0 exactly; (2^31 + 1)^2 is past 2^53, no exact double: kept. */
  fold_case(IR_MUL, UOPC_I64, UOPC_I64, 4294967296.0, 4294967296.0, 0);
  fold_case(IR_MUL, UOPC_I64, UOPC_I64, 2147483649.0, 2147483649.0, 1);
}

/* The pipeline: decompose, fold, CSE, DCE, each printed. (1 + 1) * mean(x)
 * and 2 * (sum(x) / n) become one: the mean is decomposed into the sum and
 * count the other spells out, folding makes 1 + 1 a 2, CSE merges the two
 * sums, the two divisions and the two products, and DCE drops the rest. */
static void test_pipeline_order_and_printout(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, 64);
  const ir_node *x = input(c, "x", UOPC_F32, 1, SHAPE(n));
  const ir_node *one = ir_const(c->g, 1, UOPC_F32), *two = ir_binary(c->g, IR_ADD, one, one);
  const ir_node *a = ir_binary(c->g, IR_MUL, two, ir_reduce(c->g, IR_MEAN, x, 1u, 0));
  const ir_node *mean = ir_binary(c->g, IR_DIV, ir_reduce(c->g, IR_SUM, x, 1u, 0), ir_size(c->g, n, UOPC_F32));
  const ir_node *b = ir_binary(c->g, IR_MUL, ir_const(c->g, 2, UOPC_F32), mean);
  const ir_node *out = ok_node(c, ir_binary(c->g, IR_SUB, a, b), "out"), *got[1];
  ir_graph *h = NULL;
  codegen_text t = {0};
  uopc_error err = {0};
  assert_uopc_ok(ir_passes_run(&h, got, c->g, &out, 1, IR_PASS_ALL | IR_PASS_PRINT, &t, &err), err);
  const char *want =
      "== before the passes: 11 nodes ==\n"
      "%0 = input(x) : f32[n]\n"
      "%1 = const(1) : f32[]\n"
      "%2 = add(%1, %1) : f32[]\n"
      "%3 = mean(%0, axes=[0]) : f32[]\n"
      "%4 = mul(%2, %3) : f32[]\n"
      "%5 = size(n) : f32[]\n"
      "%6 = sum(%0, axes=[0]) : f32[]\n"
      "%7 = div(%6, %5) : f32[]\n"
      "%8 = const(2) : f32[]\n"
      "%9 = mul(%8, %7) : f32[]\n"
      "%10 = sub(%4, %9) : f32[]\n"
      "out0 = %10\n"
      "== after decompose: 13 nodes ==\n"
      "%0 = input(x) : f32[n]\n"
      "%1 = const(1) : f32[]\n"
      "%2 = add(%1, %1) : f32[]\n"
      "%3 = sum(%0, axes=[0]) : f32[]\n"
      "%4 = size(n) : f32[]\n"
      "%5 = div(%3, %4) : f32[]\n"
      "%6 = mul(%2, %5) : f32[]\n"
      "%7 = size(n) : f32[]\n"
      "%8 = sum(%0, axes=[0]) : f32[]\n"
      "%9 = div(%8, %7) : f32[]\n"
      "%10 = const(2) : f32[]\n"
      "%11 = mul(%10, %9) : f32[]\n"
      "%12 = sub(%6, %11) : f32[]\n"
      "out0 = %12\n"
      "== after fold: 13 nodes ==\n"
      "%0 = input(x) : f32[n]\n"
      "%2 = const(2) : f32[]\n"
      "%3 = sum(%0, axes=[0]) : f32[]\n"
      "%4 = size(n) : f32[]\n"
      "%5 = div(%3, %4) : f32[]\n"
      "%6 = mul(%2, %5) : f32[]\n"
      "%7 = size(n) : f32[]\n"
      "%8 = sum(%0, axes=[0]) : f32[]\n"
      "%9 = div(%8, %7) : f32[]\n"
      "%10 = const(2) : f32[]\n"
      "%11 = mul(%10, %9) : f32[]\n"
      "%12 = sub(%6, %11) : f32[]\n"
      "out0 = %12\n"
      "== after cse: 8 nodes ==\n"
      "%0 = input(x) : f32[n]\n"
      "%2 = const(2) : f32[]\n"
      "%3 = sum(%0, axes=[0]) : f32[]\n"
      "%4 = size(n) : f32[]\n"
      "%5 = div(%3, %4) : f32[]\n"
      "%6 = mul(%2, %5) : f32[]\n"
      "%7 = sub(%6, %6) : f32[]\n"
      "out0 = %7\n"
      "== after dce: 7 nodes ==\n"
      "%0 = input(x) : f32[n]\n"
      "%1 = const(2) : f32[]\n"
      "%2 = sum(%0, axes=[0]) : f32[]\n"
      "%3 = size(n) : f32[]\n"
      "%4 = div(%2, %3) : f32[]\n"
      "%5 = mul(%1, %4) : f32[]\n"
      "%6 = sub(%5, %5) : f32[]\n"
      "out0 = %6\n";
  if (strcmp(t.data, want) != 0) fail_msg("pipeline: expected\n%s\ngot\n%s", want, t.data);
  codegen_text_fini(&t);
  ir_graph_free(h);
}

/* Errors are values that name what was wrong. */
static void test_passes_refuse_a_foreign_output(void **state) {
  core *c = *state;
  ir_graph *other = NULL, *h = NULL;
  uopc_error err = {0};
  assert_uopc_ok(ir_graph_new(&other, &err), err);
  const ir_node *k = ir_const(other, 1, UOPC_F32), *got[1];
  assert_int_equal(ir_passes_run(&h, got, c->g, &k, 1, IR_PASS_ALL, NULL, &err), UOPC_E_INVALID);
  assert_non_null(strstr(err.message, "output 0 is not a node of the graph"));
  assert_null(h);
  ir_graph_free(other);
}

int main(void) {
#define T(name) cmocka_unit_test_setup_teardown(name, core_setup, core_teardown)
  const struct CMUnitTest tests[] = {
    T(test_dce_drops_what_no_output_reaches),
    T(test_cse_merges_equal_nodes_and_their_consumers),
    T(test_cse_keeps_constants_apart_by_bits_and_dtype),
    T(test_fold_computes_ops_over_constants_and_sizes),
    T(test_decompose_means_into_a_sum_and_its_count),
    T(test_fold_matches_the_interpreter),
    T(test_pipeline_order_and_printout),
    T(test_passes_refuse_a_foreign_output),
  };
#undef T
  return cmocka_run_group_tests(tests, NULL, NULL);
}
