/* test_ir.c: the compiler core's graph IR (given code, lab 23.1): every
 * builder's shape and dtype rule on symbolic shapes, its errors by code and
 * message, the first error kept, a graph without a node cap, and the
 * printer's exact text. Slices are checked against Python's
 * len(range(*slice(start, stop, step).indices(n))), computed here in C. */
#include "coreutil.h"

#define NONE UOPC_SLICE_NONE

/* ---- Broadcasting. */

static void test_ir_broadcast_keeps_equal_symbolic_dims(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, 64);
  const ir_node *x = input(c, "x", UOPC_F32, 2, SHAPE(n, cst(c, 4)));
  const ir_node *y = input(c, "y", UOPC_F32, 2, SHAPE(n, cst(c, 4)));
  const ir_node *s = ok_node(c, ir_binary(c->g, IR_ADD, x, y), "add");
  expect_shape(s, "(n, 4)", "(n, 4) + (n, 4)");
  assert_int_equal(s->dtype, UOPC_F32);
  assert_ptr_equal(s->shape[0], x->shape[0]);     /* hash-consed: one expression */
  assert_ptr_equal(s->src[0], x);
  assert_ptr_equal(s->src[1], y);
}

static void test_ir_broadcast_stretches_constant_one(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, 64), *m = dim(c, "m", 1, 64);
  const ir_node *col = input(c, "col", UOPC_F32, 2, SHAPE(n, cst(c, 1)));
  const ir_node *row = input(c, "row", UOPC_F32, 2, SHAPE(cst(c, 1), m));
  const ir_node *vec = input(c, "vec", UOPC_F32, 1, SHAPE(m));
  const ir_node *cube = input(c, "cube", UOPC_F32, 3, SHAPE(cst(c, 2), n, cst(c, 1)));
  const ir_node *two = ok_node(c, ir_const(c->g, 2.0, UOPC_F32), "const");
  expect_shape(ok_node(c, ir_binary(c->g, IR_MUL, col, row), "col*row"), "(n, m)", "(n, 1) * (1, m)");
  expect_shape(ok_node(c, ir_binary(c->g, IR_SUB, col, vec), "col-vec"), "(n, m)", "(n, 1) - (m)");
  expect_shape(ok_node(c, ir_binary(c->g, IR_SUB, vec, cube), "vec-cube"), "(2, n, m)", "(m) - (2, n, 1)");
  expect_shape(ok_node(c, ir_binary(c->g, IR_ADD, two, col), "2+col"), "(n, 1)", "() + (n, 1)");
  expect_shape(ok_node(c, ir_binary(c->g, IR_ADD, row, two), "row+2"), "(1, m)", "(1, m) + ()");
}

static void test_ir_broadcast_rejects_distinct_dims_naming_both_shapes(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, 64), *m = dim(c, "m", 1, 64);
  const ir_node *x = input(c, "x", UOPC_F32, 2, SHAPE(n, cst(c, 4)));
  const ir_node *y = input(c, "y", UOPC_F32, 2, SHAPE(m, cst(c, 4)));
  expect_graph_error(c, ir_binary(c->g, IR_ADD, x, y), UOPC_E_INVALID, "(n, 4) + (m, 4)",
                     "add: shapes (n, 4) and (m, 4) cannot broadcast (axis 0", NULL);
}

static void test_ir_broadcast_rejects_unequal_constants(void **state) {
  core *c = *state;
  const ir_node *x = input(c, "x", UOPC_F32, 1, SHAPE(cst(c, 3)));
  const ir_node *y = input(c, "y", UOPC_F32, 2, SHAPE(cst(c, 2), cst(c, 4)));
  expect_graph_error(c, ir_binary(c->g, IR_LT, x, y), UOPC_E_INVALID, "(3) < (2, 4)",
                     "less: shapes (3) and (2, 4) cannot broadcast (axis 1", NULL);
}

static void test_ir_where_broadcasts_three_operands(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, 64), *m = dim(c, "m", 1, 64);
  const ir_node *x = input(c, "x", UOPC_F32, 2, SHAPE(n, cst(c, 1)));
  const ir_node *y = input(c, "y", UOPC_F32, 1, SHAPE(m));
  const ir_node *zero = ok_node(c, ir_const(c->g, 0.0, UOPC_F32), "0");
  const ir_node *lt = ok_node(c, ir_binary(c->g, IR_LT, x, zero), "x < 0");
  assert_int_equal(lt->dtype, UOPC_BOOL);
  expect_shape(lt, "(n, 1)", "x < 0");
  const ir_node *w = ok_node(c, ir_where(c->g, lt, y, zero), "where");
  expect_shape(w, "(n, m)", "where((n, 1), (m), ())");
  assert_int_equal(w->dtype, UOPC_F32);
}

/* ---- Dtypes of elementwise ops. */

static void test_ir_elementwise_dtype_rules(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, 64);
  const ir_node *f = input(c, "f", UOPC_F32, 1, SHAPE(n));
  const ir_node *i = input(c, "i", UOPC_I32, 1, SHAPE(n));
  const ir_node *b = input(c, "b", UOPC_BOOL, 1, SHAPE(n));
  assert_int_equal(ok_node(c, ir_unary(c->g, IR_NEG, i), "neg i32")->dtype, UOPC_I32);
  assert_int_equal(ok_node(c, ir_unary(c->g, IR_ABS, i), "abs i32")->dtype, UOPC_I32);
  assert_int_equal(ok_node(c, ir_binary(c->g, IR_EQ, b, b), "b == b")->dtype, UOPC_BOOL);
  assert_int_equal(ok_node(c, ir_cast(c->g, b, UOPC_F64), "cast")->dtype, UOPC_F64);
  assert_int_equal(ok_node(c, ir_binary(c->g, IR_MAXIMUM, i, i), "maximum i32")->dtype, UOPC_I32);
  expect_graph_error(c, ir_binary(c->g, IR_ADD, f, i), UOPC_E_DTYPE, "f32 + i32",
                     "add of f32 and i32: dtypes differ", NULL);
}

static void test_ir_math_ops_need_floats(void **state) {
  core *c = *state;
  const ir_node *i = input(c, "i", UOPC_I32, 1, SHAPE(cst(c, 3)));
  expect_graph_error(c, ir_unary(c->g, IR_EXP, i), UOPC_E_DTYPE, "exp(i32)", "exp of i32: needs f32 or f64", NULL);
}

static void test_ir_div_of_integers_is_refused(void **state) {
  core *c = *state;
  const ir_node *i = input(c, "i", UOPC_I64, 1, SHAPE(cst(c, 3)));
  expect_graph_error(c, ir_binary(c->g, IR_DIV, i, i), UOPC_E_DTYPE, "i64 / i64", "div of i64: needs f32 or f64",
                     NULL);
}

static void test_ir_arithmetic_on_bool_is_refused(void **state) {
  core *c = *state;
  const ir_node *b = input(c, "b", UOPC_BOOL, 1, SHAPE(cst(c, 3)));
  expect_graph_error(c, ir_binary(c->g, IR_ADD, b, b), UOPC_E_DTYPE, "bool + bool", "add of bool", NULL);
}

static void test_ir_neg_of_bool_is_refused(void **state) {
  core *c = *state;
  const ir_node *b = input(c, "b", UOPC_BOOL, 1, SHAPE(cst(c, 3)));
  expect_graph_error(c, ir_unary(c->g, IR_NEG, b), UOPC_E_DTYPE, "-bool", "neg of bool", NULL);
}

static void test_ir_where_needs_a_bool_condition(void **state) {
  core *c = *state;
  const ir_node *f = input(c, "f", UOPC_F32, 1, SHAPE(cst(c, 3)));
  expect_graph_error(c, ir_where(c->g, f, f, f), UOPC_E_DTYPE, "where(f32, ...)",
                     "where: the condition is f32, not bool", NULL);
}

static void test_ir_where_needs_equal_branch_dtypes(void **state) {
  core *c = *state;
  const ir_node *f = input(c, "f", UOPC_F32, 1, SHAPE(cst(c, 3)));
  const ir_node *d = input(c, "d", UOPC_F64, 1, SHAPE(cst(c, 3)));
  const ir_node *cond = ok_node(c, ir_binary(c->g, IR_GT, f, f), "f > f");
  expect_graph_error(c, ir_where(c->g, cond, f, d), UOPC_E_DTYPE, "where(b, f32, f64)",
                     "where: branches are f32 and f64", NULL);
}

static void test_ir_elementwise_builders_check_arity(void **state) {
  core *c = *state;
  const ir_node *f = input(c, "f", UOPC_F32, 1, SHAPE(cst(c, 3)));
  expect_graph_error(c, ir_unary(c->g, IR_ADD, f), UOPC_E_INVALID, "ir_unary(ADD)",
                     "is not an elementwise op of arity 1", NULL);
}

static void test_ir_binary_refuses_a_reduction_op(void **state) {
  core *c = *state;
  const ir_node *f = input(c, "f", UOPC_F32, 1, SHAPE(cst(c, 3)));
  expect_graph_error(c, ir_binary(c->g, IR_MATMUL, f, f), UOPC_E_INVALID, "ir_binary(MATMUL)",
                     "is not an elementwise op of arity 2", NULL);
}

static void test_ir_const_keeps_value_and_dtype(void **state) {
  core *c = *state;
  const ir_node *k = ok_node(c, ir_const(c->g, -2147483648.0, UOPC_I32), "INT32_MIN");
  assert_int_equal(k->op, IR_CONST);
  assert_int_equal(k->rank, 0);
  assert_true(k->value == -2147483648.0);
  ok_node(c, ir_const(c->g, 2147483647.0, UOPC_I32), "INT32_MAX");
  ok_node(c, ir_const(c->g, -9223372036854775808.0, UOPC_I64), "INT64_MIN");
  ok_node(c, ir_const(c->g, NAN, UOPC_F32), "NaN f32");
  ok_node(c, ir_const(c->g, NAN, UOPC_BOOL), "NaN bool");
}

static void test_ir_const_refuses_a_value_an_integer_dtype_cannot_hold(void **state) {
  core *c = *state;
  expect_graph_error(c, ir_const(c->g, 2147483648.0, UOPC_I32), UOPC_E_BOUNDS, "2^31 as i32",
                     "const: 2147483648 does not fit i32", NULL);
}

static void test_ir_const_refuses_nan_as_an_integer(void **state) {
  core *c = *state;
  expect_graph_error(c, ir_const(c->g, NAN, UOPC_I64), UOPC_E_BOUNDS, "NaN as i64", "const: nan does not fit i64",
                     NULL);
}

static void test_ir_const_refuses_2_to_the_63_as_i64(void **state) {
  core *c = *state;
  expect_graph_error(c, ir_const(c->g, 9223372036854775808.0, UOPC_I64), UOPC_E_BOUNDS, "2^63 as i64",
                     "does not fit i64", NULL);
}

/* ---- Inputs. */

static void test_ir_input_rejects_bad_names(void **state) {
  core *c = *state;
  expect_graph_error(c, ir_input(c->g, "2x", UOPC_F32, 0, NULL), UOPC_E_INVALID, "name 2x",
                     "input name '2x' is not a C identifier", NULL);
}

static void test_ir_input_rejects_a_name_used_twice(void **state) {
  core *c = *state;
  input(c, "x", UOPC_F32, 0, NULL);
  expect_graph_error(c, ir_input(c->g, "x", UOPC_F64, 0, NULL), UOPC_E_INVALID, "x twice",
                     "input 'x' is declared twice", NULL);
}

static void test_ir_input_rejects_a_rank_past_the_maximum(void **state) {
  core *c = *state;
  expect_graph_error(c, ir_input(c->g, "x", UOPC_F32, UOPC_MAX_RANK + 1, NULL), UOPC_E_INVALID, "rank 9",
                     "input 'x': rank 9 outside [0, 8]", NULL);
}

static void test_ir_input_rejects_an_unknown_dtype(void **state) {
  core *c = *state;
  expect_graph_error(c, ir_input(c->g, "x", (uopc_dtype)7, 0, NULL), UOPC_E_DTYPE, "dtype 7",
                     "input 'x': dtype 7 is not a uopc dtype", NULL);
}

static void test_ir_input_rejects_an_extent_that_may_be_negative(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, 64);
  expect_graph_error(c, ir_input(c->g, "x", UOPC_F32, 1, SHAPE(sym_expr_sub(c->a, n, cst(c, 2)))),
                     UOPC_E_BOUNDS, "extent n - 2", "input 'x': extent 0 may be negative", NULL);
}

static void test_ir_input_view_keeps_strides_and_offset(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 0, 64), *s = dim(c, "s", -64, 64), *o = dim(c, "o", 0, 4096);
  const ir_node *x = ok_node(c, ir_input_view(c->g, "x", UOPC_F64, 2, SHAPE(n, cst(c, 3)), SHAPE(s, cst(c, 1)), o),
                             "view");
  assert_int_equal(x->contiguous, 0);
  assert_ptr_equal(x->strides[0], s);
  assert_ptr_equal(x->offset, o);
  assert_int_equal(x->input, 0);
  const ir_node *y = input(c, "y", UOPC_F64, 2, SHAPE(n, cst(c, 3)));
  assert_int_equal(y->contiguous, 1);
  assert_int_equal(y->input, 1);
  assert_string_equal(expr_text(y->strides[0]), "3");
  assert_string_equal(expr_text(y->strides[1]), "1");
  assert_int_equal(ir_graph_input_count(c->g), 2);
  assert_ptr_equal(ir_graph_input(c->g, 1), y);
  assert_null(ir_graph_input(c->g, 2));
}

/* ---- Movement. */

static void test_ir_expand_broadcasts_ones_to_new_extents(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, 64), *m = dim(c, "m", 1, 64);
  const ir_node *x = input(c, "x", UOPC_F32, 2, SHAPE(n, cst(c, 1)));
  const ir_node *e = ok_node(c, ir_expand(c->g, x, 3, SHAPE(m, n, cst(c, 5))), "expand");
  expect_shape(e, "(m, n, 5)", "expand (n, 1) to (m, n, 5)");
  assert_int_equal(e->op, IR_EXPAND);
}

static void test_ir_expand_rejects_a_different_dim(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, 64), *m = dim(c, "m", 1, 64);
  const ir_node *x = input(c, "x", UOPC_F32, 1, SHAPE(n));
  expect_graph_error(c, ir_expand(c->g, x, 2, SHAPE(n, m)), UOPC_E_INVALID, "expand (n) to (n, m)",
                     "expand: (n) cannot broadcast to (n, m) (axis 0)", NULL);
}

static void test_ir_expand_rejects_fewer_axes(void **state) {
  core *c = *state;
  const ir_node *x = input(c, "x", UOPC_F32, 2, SHAPE(cst(c, 1), cst(c, 1)));
  expect_graph_error(c, ir_expand(c->g, x, 1, SHAPE(cst(c, 3))), UOPC_E_INVALID, "expand rank 2 to 1",
                     "expand: rank 2 to rank 1", NULL);
}

static void test_ir_reshape_accepts_provably_equal_counts(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, 64), *m = dim(c, "m", 1, 64);
  const ir_node *x = input(c, "x", UOPC_F32, 3, SHAPE(n, cst(c, 4), m));
  expect_shape(ok_node(c, ir_reshape(c->g, x, 2, SHAPE(sym_expr_mul(c->a, m, n), cst(c, 4))), "reshape"),
               "(m*n, 4)", "(n, 4, m) to (m*n, 4)");
  expect_shape(ok_node(c, ir_reshape(c->g, x, 3, SHAPE(cst(c, 2), sym_expr_mul(c->a, cst(c, 2), n), m)), "reshape"),
               "(2, n*2, m)", "(n, 4, m) to (2, 2*n, m)");
  const ir_node *flat = ok_node(c, ir_reshape(c->g, x, 1, SHAPE(sym_expr_mul(c->a, cst(c, 4),
                                                                             sym_expr_mul(c->a, n, m)))), "flat");
  expect_shape(flat, "(m*n*4)", "(n, 4, m) flattened");
  const sym_expr *j = dim(c, "j", 1, 64);    /* three dims, in another order */
  const ir_node *y = input(c, "y", UOPC_F32, 3, SHAPE(n, m, j));
  const sym_expr *jn = sym_expr_mul(c->a, j, n);
  expect_shape(ok_node(c, ir_reshape(c->g, y, 2, SHAPE(m, jn)), "reshape"), "(m, j*n)", "(n, m, j) to (m, j*n)");
  const ir_node *one = input(c, "one", UOPC_F32, 2, SHAPE(cst(c, 1), cst(c, 1)));
  expect_shape(ok_node(c, ir_reshape(c->g, one, 0, NULL), "to a scalar"), "()", "(1, 1) to ()");
  expect_graph_error(c, ir_reshape(c->g, y, 2, SHAPE(jn, n)), UOPC_E_INVALID, "(n, m, j) to (j*n, n)",
                     "element counts n*(j*m) and n*(j*n) are not provably equal", NULL);
}

static void test_ir_reshape_rejects_counts_not_provably_equal(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, 64), *m = dim(c, "m", 1, 64);
  const ir_node *x = input(c, "x", UOPC_F32, 2, SHAPE(n, cst(c, 4)));
  expect_graph_error(c, ir_reshape(c->g, x, 2, SHAPE(m, cst(c, 4))), UOPC_E_INVALID, "(n, 4) to (m, 4)",
                     "reshape: (n, 4) to (m, 4): element counts n*4 and m*4 are not provably equal", NULL);
}

/* A dim's multiple_of in the simplifier: (c // 2) * 2 is c when c is a multiple of 2, and c % 2
 * is 0, so reshaping c (a multiple of 4) to (c // 2, 2) is proved; for c without the fact it is
 * not. (tensorjit infers -1 with a guard instead, ir_reshape_inferred, since its sizes carry none.) */
static void test_ir_reshape_of_a_multiple_uses_the_dims_multiple_of(void **state) {
  core *c = *state;
  const sym_expr *even = dim_m(c, "c", 4, 64, 4), *any = dim(c, "d", 1, 64);
  const ir_node *x = input(c, "x", UOPC_F32, 1, SHAPE(even)), *y = input(c, "y", UOPC_F32, 1, SHAPE(any));
  expect_shape(ok_node(c, ir_reshape(c->g, x, 2, SHAPE(sym_expr_floordiv(c->a, even, cst(c, 2)), cst(c, 2))), "reshape"),
               "(c//2, 2)", "(c) to (c // 2, 2), c a multiple of 4");
  const sym_expr *r = NULL;
  uopc_error err = {0};
  assert_uopc_ok(sym_expr_simplify(c->a, sym_expr_mod(c->a, sym_expr_add(c->a, sym_expr_mul(c->a, cst(c, 3), even),
                                                                           cst(c, 8)), cst(c, 4)), &r, &err), err);
  if (r->kind != SYM_CONST || r->value != 0) fail_msg("(3*c + 8) %% 4 with c a multiple of 4: expected 0");
  expect_graph_error(c, ir_reshape(c->g, y, 2, SHAPE(sym_expr_floordiv(c->a, any, cst(c, 2)), cst(c, 2))), UOPC_E_INVALID,
                     "(d) to (d // 2, 2)", "are not provably equal", NULL);
}

static void test_ir_permute_and_transpose_move_extents(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, 64), *m = dim(c, "m", 1, 64);
  const ir_node *x = input(c, "x", UOPC_F32, 3, SHAPE(n, m, cst(c, 3)));
  const ir_node *p = ok_node(c, ir_permute(c->g, x, (const int[]){2, 0, 1}), "permute");
  expect_shape(p, "(3, n, m)", "permute (n, m, 3) by [2, 0, 1]");
  assert_int_equal(p->perm[0], 2);
  assert_int_equal(p->perm[2], 1);
  const ir_node *t = ok_node(c, ir_transpose(c->g, x, 0, 2), "transpose");
  expect_shape(t, "(3, m, n)", "transpose 0 and 2 of (n, m, 3)");
  assert_int_equal(t->perm[0], 2);
  assert_int_equal(t->perm[1], 1);
  assert_int_equal(t->perm[2], 0);
}

static void test_ir_permute_rejects_a_repeated_axis(void **state) {
  core *c = *state;
  const ir_node *x = input(c, "x", UOPC_F32, 3, SHAPE(cst(c, 2), cst(c, 3), cst(c, 4)));
  expect_graph_error(c, ir_permute(c->g, x, (const int[]){0, 2, 0}), UOPC_E_INVALID, "perm [0, 2, 0]",
                     "permute: perm[2] = 0 is not a fresh axis of a rank-3 node", NULL);
}

static void test_ir_permute_rejects_an_axis_outside_the_rank(void **state) {
  core *c = *state;
  const ir_node *x = input(c, "x", UOPC_F32, 2, SHAPE(cst(c, 2), cst(c, 3)));
  expect_graph_error(c, ir_permute(c->g, x, (const int[]){1, 2}), UOPC_E_INVALID, "perm [1, 2]",
                     "permute: perm[1] = 2 is not a fresh axis of a rank-2 node", NULL);
}

static void test_ir_transpose_rejects_an_axis_outside_the_rank(void **state) {
  core *c = *state;
  const ir_node *x = input(c, "x", UOPC_F32, 2, SHAPE(cst(c, 2), cst(c, 3)));
  expect_graph_error(c, ir_transpose(c->g, x, -1, 1), UOPC_E_INVALID, "transpose -1, 1",
                     "transpose: axes -1 and 1 of a rank-2 node", NULL);
}

/* ---- Slices: Python's rules on a symbolic extent. */

/* Python's slice(start, stop, step).indices(n): the first index and the
 * length of the range (start, stop and step as CPython computes them). */
static int64_t py_slice(int64_t n, int64_t start, int64_t stop, int64_t step, int64_t *first) {
  int64_t lower = step > 0 ? 0 : -1, upper = step > 0 ? n : n - 1;
  int64_t b[2] = {start, stop};
  for (int k = 0; k < 2; k++) {
    if (b[k] == NONE) b[k] = (k == 0) == (step < 0) ? upper : lower;
    else if (b[k] < 0) b[k] = b[k] + n < lower ? lower : b[k] + n;
    else if (b[k] > upper) b[k] = upper;
  }
  *first = b[0];
  if (step > 0) return b[1] > b[0] ? (b[1] - b[0] - 1) / step + 1 : 0;
  return b[0] > b[1] ? (b[0] - b[1] - 1) / -step + 1 : 0;
}

static int64_t eval_n(const sym_expr *e, const sym_dim *n, int64_t value, const char *what) {
  sym_binding b;
  uopc_error err = {0};
  int64_t v = 0;
  sym_binding_init(&b);
  assert_uopc_ok(sym_dim_bind(&b, n, value, &err), err);
  int rc = sym_expr_eval(e, &b, &v, &err);
  if (rc) fail_msg("%s: evaluating %s at n=%lld: %s: %s", what, expr_text(e), (long long)value,
                   uopc_error_name(rc), err.message);
  return v;
}

static const char *bound_text(int64_t v, char *buf) {
  if (v == NONE) return "None";
  sprintf(buf, "%lld", (long long)v);
  return buf;
}

static void test_ir_slice_extent_matches_python_for_every_n(void **state) {
  core *c = *state;
  sym_dim nd;
  uopc_error err = {0};
  assert_uopc_ok(sym_dim_init(&nd, "n", 0, 24, 1, &err), err);
  const ir_node *x = input(c, "x", UOPC_F32, 2, SHAPE(cst(c, 3), sym_expr_dim(c->a, &nd)));
  const int64_t bounds[] = {NONE, 0, 1, 5, 23, 24, 100, -1, -5, -24, -100};
  const int64_t steps[] = {1, 2, 3, 7, 30, -1, -2, -3, -7, -30};
  int checked = 0;
  for (int i = 0; i < COUNT(bounds); i++)
    for (int j = 0; j < COUNT(bounds); j++)
      for (int k = 0; k < COUNT(steps); k++) {
        int64_t start = bounds[i], stop = bounds[j], step = steps[k];
        char what[96], sa[24], sb[24];
        snprintf(what, sizeof what, "x[:, %s:%s:%lld]", bound_text(start, sa), bound_text(stop, sb),
                 (long long)step);
        const ir_node *s = ok_node(c, ir_slice(c->g, x, 1, start, stop, step), what);
        assert_ptr_equal(s->shape[0], x->shape[0]);
        for (int64_t n = 0; n <= 24; n++) {
          int64_t first, want = py_slice(n, start, stop, step, &first);
          int64_t got = eval_n(s->shape[1], &nd, n, what);
          if (got != want)
            fail_msg("%s with n=%lld: expected extent %lld (Python), got %lld from %s", what, (long long)n,
                     (long long)want, (long long)got, expr_text(s->shape[1]));
          int64_t at = eval_n(s->start, &nd, n, what);
          if (want > 0 && at != first)
            fail_msg("%s with n=%lld: expected start %lld (Python), got %lld from %s", what, (long long)n,
                     (long long)first, (long long)at, expr_text(s->start));
          checked++;
        }
      }
  assert_int_equal(checked, 11 * 11 * 10 * 25);
}

static void test_ir_slice_of_a_constant_extent_simplifies(void **state) {
  core *c = *state;
  const ir_node *x = input(c, "x", UOPC_F32, 1, SHAPE(cst(c, 10)));
  const ir_node *s = ok_node(c, ir_slice(c->g, x, 0, -2, 1, -3), "x[-2:1:-3]");
  expect_shape(s, "(3)", "x[-2:1:-3] of 10");          /* 8, 5, 2 */
  assert_string_equal(expr_text(s->start), "8");
  assert_string_equal(expr_text(s->step), "-3");
  s = ok_node(c, ir_slice(c->g, x, 0, NONE, NONE, -1), "x[::-1]");
  expect_shape(s, "(10)", "x[::-1] of 10");
  assert_string_equal(expr_text(s->start), "9");
}

static void test_ir_slice_with_full_bounds_keeps_the_dim(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, 64);
  const ir_node *x = input(c, "x", UOPC_F32, 1, SHAPE(n));
  expect_shape(ok_node(c, ir_slice(c->g, x, 0, NONE, NONE, 1), "x[:]"), "(n)", "x[:]");
  expect_shape(ok_node(c, ir_slice(c->g, x, 0, NONE, NONE, -1), "x[::-1]"), "(n)", "x[::-1]");
}

static void test_ir_slice_rejects_step_zero(void **state) {
  core *c = *state;
  const ir_node *x = input(c, "x", UOPC_F32, 1, SHAPE(cst(c, 10)));
  expect_graph_error(c, ir_slice(c->g, x, 0, 0, 5, 0), UOPC_E_INVALID, "step 0", "slice: step 0 (must be nonzero)",
                     NULL);
}

static void test_ir_slice_rejects_an_axis_outside_the_rank(void **state) {
  core *c = *state;
  const ir_node *x = input(c, "x", UOPC_F32, 1, SHAPE(cst(c, 10)));
  expect_graph_error(c, ir_slice(c->g, x, 1, 0, 5, 1), UOPC_E_INVALID, "axis 1",
                     "slice: axis 1 outside [0, 1) of a rank-1 node", NULL);
}

static void test_ir_slice_sym_with_proved_bounds(void **state) {
  core *c = *state;
  sym_dim nd;
  uopc_error err = {0};
  assert_uopc_ok(sym_dim_init(&nd, "n", 2, 64, 1, &err), err);
  const sym_expr *n = sym_expr_dim(c->a, &nd);
  const ir_node *x = input(c, "x", UOPC_F32, 1, SHAPE(n));
  const ir_node *s = ok_node(c, ir_slice_sym(c->g, x, 0, cst(c, 1), sym_expr_sub(c->a, n, cst(c, 1)), 1), "x[1:n-1]");
  expect_shape(s, "(n - 2)", "x[1:n-1]");
  s = ok_node(c, ir_slice_sym(c->g, x, 0, NULL, NULL, 3), "x[::3]");
  for (int64_t v = 2; v <= 64; v++) {
    int64_t first, want = py_slice(v, NONE, NONE, 3, &first);
    if (eval_n(s->shape[0], &nd, v, "x[::3]") != want)
      fail_msg("x[::3] with n=%lld: expected extent %lld, got %s", (long long)v, (long long)want,
               expr_text(s->shape[0]));
  }
  /* k <= 2 <= n by the bounds alone. */
  const sym_expr *k = dim(c, "k", 0, 2);
  s = ok_node(c, ir_slice_sym(c->g, x, 0, k, n, 2), "x[k::2]");
  expect_shape(s, "((n - k + 1)//2)", "x[k::2]");
}

static void test_ir_slice_sym_refuses_a_stop_that_may_pass_the_extent(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, 64), *k = dim(c, "k", 0, 64);
  const ir_node *x = input(c, "x", UOPC_F32, 1, SHAPE(n));
  expect_graph_error(c, ir_slice_sym(c->g, x, 0, NULL, k, 1), UOPC_E_BOUNDS, "x[:k]",
                     "slice stop k may fall outside [0, n] of axis 0", NULL);
}

static void test_ir_slice_sym_refuses_a_start_that_may_pass_the_stop(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, 64), *k = dim(c, "k", 0, 1);
  const ir_node *x = input(c, "x", UOPC_F32, 1, SHAPE(n));
  expect_graph_error(c, ir_slice_sym(c->g, x, 0, cst(c, 2), k, 1), UOPC_E_BOUNDS, "x[2:k]",
                     "slice start 2 may fall outside [0, k] of axis 0", NULL);
}

static void test_ir_slice_sym_refuses_a_negative_start(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, 64), *j = dim(c, "j", -4, 4);
  const ir_node *x = input(c, "x", UOPC_F32, 1, SHAPE(n));
  expect_graph_error(c, ir_slice_sym(c->g, x, 0, j, n, 1), UOPC_E_BOUNDS, "x[j:]", "slice start j may fall outside",
                     NULL);
}

static void test_ir_slice_sym_refuses_step_below_one(void **state) {
  core *c = *state;
  const ir_node *x = input(c, "x", UOPC_F32, 1, SHAPE(cst(c, 8)));
  expect_graph_error(c, ir_slice_sym(c->g, x, 0, NULL, NULL, -1), UOPC_E_INVALID, "step -1",
                     "slice: symbolic bounds need a step >= 1, not -1", NULL);
}

/* ---- Select. */

static void test_ir_select_counts_a_negative_constant_from_the_end(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, 64);
  const ir_node *x = input(c, "x", UOPC_F32, 2, SHAPE(n, cst(c, 4)));
  const ir_node *s = ok_node(c, ir_select(c->g, x, 1, cst(c, -1)), "x[:, -1]");
  expect_shape(s, "(n)", "x[:, -1]");
  assert_string_equal(expr_text(s->index), "3");
  s = ok_node(c, ir_select(c->g, x, 0, cst(c, -1)), "x[-1]");
  expect_shape(s, "(4)", "x[-1]");
  assert_string_equal(expr_text(s->index), "n - 1");
  s = ok_node(c, ir_select(c->g, x, 1, cst(c, -4)), "x[:, -4]");
  assert_string_equal(expr_text(s->index), "0");
  const ir_node *v = input(c, "v", UOPC_F32, 1, SHAPE(n));
  expect_shape(ok_node(c, ir_select(c->g, v, 0, cst(c, 0)), "v[0]"), "()", "v[0]");
}

static void test_ir_select_rejects_an_index_past_the_end(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, 64);
  const ir_node *x = input(c, "x", UOPC_F32, 2, SHAPE(n, cst(c, 4)));
  expect_graph_error(c, ir_select(c->g, x, 1, cst(c, 4)), UOPC_E_BOUNDS, "x[:, 4]",
                     "select index 4 may fall outside [0, 4 - 1] of axis 1", NULL);
}

static void test_ir_select_rejects_a_negative_index_before_the_start(void **state) {
  core *c = *state;
  const ir_node *x = input(c, "x", UOPC_F32, 2, SHAPE(cst(c, 2), cst(c, 4)));
  expect_graph_error(c, ir_select(c->g, x, 1, cst(c, -5)), UOPC_E_BOUNDS, "x[:, -5]", "select index -1 may fall",
                     NULL);
}

static void test_ir_select_rejects_an_index_not_proved_inside(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, 64);
  const ir_node *x = input(c, "x", UOPC_F32, 1, SHAPE(n));
  expect_graph_error(c, ir_select(c->g, x, 0, cst(c, -2)), UOPC_E_BOUNDS, "x[-2] with n >= 1",
                     "select index n - 2 may fall outside [0, n - 1] of axis 0", NULL);
}

static void test_ir_select_rejects_an_axis_outside_the_rank(void **state) {
  core *c = *state;
  const ir_node *x = input(c, "x", UOPC_F32, 1, SHAPE(cst(c, 4)));
  expect_graph_error(c, ir_select(c->g, x, 1, cst(c, 0)), UOPC_E_INVALID, "axis 1",
                     "select: axis 1 outside [0, 1) of a rank-1 node", NULL);
}

/* ---- Reductions and matmul. */

static void test_ir_reduce_dtypes_follow_numpy(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 0, 64);
  const struct { ir_op op; uopc_dtype in, out; } cases[] = {
    {IR_SUM, UOPC_I32, UOPC_I64}, {IR_SUM, UOPC_BOOL, UOPC_I64}, {IR_SUM, UOPC_I64, UOPC_I64},
    {IR_SUM, UOPC_F32, UOPC_F32}, {IR_SUM, UOPC_F64, UOPC_F64}, {IR_MAX, UOPC_I32, UOPC_I32},
    {IR_MAX, UOPC_F32, UOPC_F32}, {IR_MEAN, UOPC_F32, UOPC_F32}, {IR_MEAN, UOPC_F64, UOPC_F64},
  };
  for (int k = 0; k < COUNT(cases); k++) {
    char name[8];
    snprintf(name, sizeof name, "x%d", k);
    const ir_node *x = input(c, name, cases[k].in, 1, SHAPE(n));
    const ir_node *r = ok_node(c, ir_reduce(c->g, cases[k].op, x, 1u, 0), name);
    if (r->dtype != cases[k].out)
      fail_msg("%s of %s: expected %s, got %s", ir_op_info_of(cases[k].op)->name, ir_dtype_name(cases[k].in),
               ir_dtype_name(cases[k].out), ir_dtype_name(r->dtype));
    expect_shape(r, "()", name);
  }
}

static void test_ir_mean_of_integers_is_refused(void **state) {
  core *c = *state;
  const ir_node *x = input(c, "x", UOPC_I32, 1, SHAPE(cst(c, 4)));
  expect_graph_error(c, ir_reduce(c->g, IR_MEAN, x, 1u, 0), UOPC_E_DTYPE, "mean of i32",
                     "mean of i32: needs f32 or f64", NULL);
}

static void test_ir_max_of_bool_is_refused(void **state) {
  core *c = *state;
  const ir_node *x = input(c, "x", UOPC_BOOL, 1, SHAPE(cst(c, 4)));
  expect_graph_error(c, ir_reduce(c->g, IR_MAX, x, 1u, 0), UOPC_E_DTYPE, "max of bool", "max of bool: needs a number",
                     NULL);
}

static void test_ir_reduce_shapes_with_and_without_keepdims(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 0, 64), *m = dim(c, "m", 0, 64);
  const ir_node *x = input(c, "x", UOPC_F32, 3, SHAPE(n, m, cst(c, 4)));
  const struct { unsigned axes; const char *keep, *drop; } cases[] = {
    {1u, "(1, m, 4)", "(m, 4)"}, {2u, "(n, 1, 4)", "(n, 4)"}, {4u, "(n, m, 1)", "(n, m)"},
    {5u, "(1, m, 1)", "(m)"},    {7u, "(1, 1, 1)", "()"},
  };
  for (int k = 0; k < COUNT(cases); k++)
    for (int keep = 0; keep < 2; keep++) {
      char what[64];
      snprintf(what, sizeof what, "sum over axes 0x%x%s", cases[k].axes, keep ? ", keepdims" : "");
      const ir_node *r = ok_node(c, ir_reduce(c->g, IR_SUM, x, cases[k].axes, keep), what);
      expect_shape(r, keep ? cases[k].keep : cases[k].drop, what);
      assert_int_equal(r->axes, cases[k].axes);
      assert_int_equal(r->keepdims, keep);
    }
}

static void test_ir_reduce_rejects_an_axis_outside_the_rank(void **state) {
  core *c = *state;
  const ir_node *x = input(c, "x", UOPC_F32, 2, SHAPE(cst(c, 2), cst(c, 3)));
  expect_graph_error(c, ir_reduce(c->g, IR_SUM, x, 4u, 0), UOPC_E_INVALID, "axes 0x4 of rank 2",
                     "sum: axes 0x4 of a rank-2 node", NULL);
}

static void test_ir_reduce_rejects_an_empty_axis_set(void **state) {
  core *c = *state;
  const ir_node *x = input(c, "x", UOPC_F32, 2, SHAPE(cst(c, 2), cst(c, 3)));
  expect_graph_error(c, ir_reduce(c->g, IR_MAX, x, 0u, 0), UOPC_E_INVALID, "no axes", "max: axes 0x0", NULL);
}

static void test_ir_reduce_rejects_a_scalar(void **state) {
  core *c = *state;
  const ir_node *scalar = ok_node(c, ir_const(c->g, 1.0, UOPC_F32), "const");
  expect_graph_error(c, ir_reduce(c->g, IR_SUM, scalar, 1u, 0), UOPC_E_INVALID, "sum of a scalar",
                     "sum: axes 0x1 of a rank-0 node", NULL);
}

static void test_ir_reduce_rejects_an_elementwise_op(void **state) {
  core *c = *state;
  const ir_node *x = input(c, "x", UOPC_F32, 1, SHAPE(cst(c, 2)));
  expect_graph_error(c, ir_reduce(c->g, IR_ADD, x, 1u, 0), UOPC_E_INVALID, "reduce ADD", "is not a reduction", NULL);
}

static void test_ir_matmul_shapes(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, 64), *k = dim(c, "k", 0, 64), *m = dim(c, "m", 1, 64), *b = dim(c, "b", 1, 8);
  const ir_node *x = input(c, "x", UOPC_F32, 2, SHAPE(n, k));
  const ir_node *y = input(c, "y", UOPC_F32, 2, SHAPE(k, m));
  const ir_node *p = ok_node(c, ir_matmul(c->g, x, y), "(n, k) @ (k, m)");
  expect_shape(p, "(n, m)", "(n, k) @ (k, m)");
  assert_int_equal(p->dtype, UOPC_F32);
  const ir_node *bx = input(c, "bx", UOPC_I32, 3, SHAPE(b, n, k));
  const ir_node *by = input(c, "by", UOPC_I32, 3, SHAPE(b, k, cst(c, 5)));
  const ir_node *bp = ok_node(c, ir_matmul(c->g, bx, by), "(b, n, k) @ (b, k, 5)");
  expect_shape(bp, "(b, n, 5)", "(b, n, k) @ (b, k, 5)");
  assert_int_equal(bp->dtype, UOPC_I32);
}

static void test_ir_matmul_rejects_different_inner_extents(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, 64), *k = dim(c, "k", 1, 64), *j = dim(c, "j", 1, 64);
  const ir_node *x = input(c, "x", UOPC_F32, 2, SHAPE(n, k));
  const ir_node *y = input(c, "y", UOPC_F32, 2, SHAPE(j, n));
  expect_graph_error(c, ir_matmul(c->g, x, y), UOPC_E_INVALID, "(n, k) @ (j, n)",
                     "matmul: (n, k) @ (j, n): inner extents differ", NULL);
}

static void test_ir_matmul_rejects_different_batch_extents(void **state) {
  core *c = *state;
  const sym_expr *a = dim(c, "a", 1, 8), *b = dim(c, "b", 1, 8);
  const ir_node *x = input(c, "x", UOPC_F32, 3, SHAPE(a, cst(c, 2), cst(c, 3)));
  const ir_node *y = input(c, "y", UOPC_F32, 3, SHAPE(b, cst(c, 3), cst(c, 2)));
  expect_graph_error(c, ir_matmul(c->g, x, y), UOPC_E_INVALID, "(a, 2, 3) @ (b, 3, 2)",
                     "matmul: (a, 2, 3) @ (b, 3, 2): batch axis 0 differs", NULL);
}

static void test_ir_matmul_rejects_rank_one_and_unequal_ranks(void **state) {
  core *c = *state;
  const ir_node *v = input(c, "v", UOPC_F32, 1, SHAPE(cst(c, 3)));
  const ir_node *x = input(c, "x", UOPC_F32, 2, SHAPE(cst(c, 3), cst(c, 3)));
  expect_graph_error(c, ir_matmul(c->g, x, v), UOPC_E_INVALID, "(3, 3) @ (3)",
                     "matmul: (3, 3) @ (3) needs equal ranks of at least 2", NULL);
}

static void test_ir_matmul_rejects_mixed_dtypes(void **state) {
  core *c = *state;
  const ir_node *f = input(c, "f", UOPC_F32, 2, SHAPE(cst(c, 3), cst(c, 3)));
  const ir_node *d = input(c, "d", UOPC_F64, 2, SHAPE(cst(c, 3), cst(c, 3)));
  expect_graph_error(c, ir_matmul(c->g, f, d), UOPC_E_DTYPE, "f32 @ f64",
                     "matmul of f32 and f64: needs one numeric dtype", NULL);
}

static void test_ir_matmul_rejects_bool(void **state) {
  core *c = *state;
  const ir_node *b = input(c, "b", UOPC_BOOL, 2, SHAPE(cst(c, 3), cst(c, 3)));
  expect_graph_error(c, ir_matmul(c->g, b, b), UOPC_E_DTYPE, "bool @ bool", "matmul of bool and bool", NULL);
}

/* ---- The graph. */

static void test_ir_graph_keeps_the_first_error(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, 64), *m = dim(c, "m", 1, 64);
  const ir_node *x = input(c, "x", UOPC_F32, 1, SHAPE(n));
  const ir_node *y = input(c, "y", UOPC_F32, 1, SHAPE(m));
  int before = ir_graph_node_count(c->g);
  assert_null(ir_binary(c->g, IR_ADD, x, y));                       /* the first error */
  assert_null(ir_unary(c->g, IR_EXP, ir_binary(c->g, IR_MUL, x, y)));   /* NULL operands */
  assert_null(ir_reduce(c->g, IR_MEAN, NULL, 1u, 0));
  assert_null(ir_unary(c->g, IR_NEG, x));                           /* valid, but the graph failed */
  assert_null(ir_const(c->g, 1.0, UOPC_F32));
  assert_null(ir_input(c->g, "z", UOPC_F32, 1, SHAPE(n)));
  expect_graph_error(c, NULL, UOPC_E_INVALID, "after later builders", "add: shapes (n) and (m) cannot broadcast", NULL);
  assert_int_equal(ir_graph_node_count(c->g), before);
}

static void test_ir_graph_has_no_node_cap(void **state) {
  core *c = *state;
  enum { NODES = 10000 };
  const ir_node *x = input(c, "x", UOPC_F32, 1, SHAPE(dim(c, "n", 1, 64)));
  const ir_node *one = ok_node(c, ir_const(c->g, 1.0, UOPC_F32), "1");
  const ir_node *y = x;
  while (ir_graph_node_count(c->g) < NODES) y = ok_node(c, ir_binary(c->g, IR_ADD, y, one), "add");
  assert_int_equal(ir_graph_node_count(c->g), NODES);
  assert_int_equal(y->id, NODES - 1);
  assert_ptr_equal(ir_graph_node(c->g, 0), x);          /* nodes never move */
  assert_ptr_equal(ir_graph_node(c->g, NODES - 1), y);
  assert_null(ir_graph_node(c->g, NODES));
  for (int id = 3; id < NODES; id++)
    if (ir_graph_node(c->g, id)->src[0] != ir_graph_node(c->g, id - 1) || ir_graph_node(c->g, id)->id != id)
      fail_msg("node %d: expected src %%%d and id %d", id, id - 1, id);
  codegen_text t = {0};
  uopc_error err = {0};
  assert_uopc_ok(ir_print(&t, c->g, &y, 1, &err), err);
  int lines = 0;
  for (const char *p = t.data; *p; p++) lines += *p == '\n';
  assert_int_equal(lines, NODES + 1);
  assert_contains(t.data, "%9999 = add(%9998, %1) : f32[n]\nout0 = %9999\n");
  codegen_text_fini(&t);
}

/* ---- The printer. */

static void expect_print(core *c, const ir_node *const *outs, int n, const char *want) {
  codegen_text t = {0};
  uopc_error err = {0};
  assert_uopc_ok(ir_print(&t, c->g, outs, n, &err), err);
  if (strcmp(t.data, want) != 0) fail_msg("ir_print: expected\n%s\ngot\n%s", want, t.data);
  codegen_text_fini(&t);
}

static void test_ir_print_small_graph_exact_text(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, 64), *s = dim(c, "s", 4, 64), *o = dim(c, "o", 0, 64);
  const ir_node *x = input(c, "x", UOPC_F32, 2, SHAPE(n, cst(c, 4)));
  const ir_node *y = ok_node(c, ir_input_view(c->g, "y", UOPC_F32, 2, SHAPE(n, cst(c, 4)), SHAPE(s, cst(c, 1)), o),
                             "y");
  ok_node(c, ir_unary(c->g, IR_NEG, x), "unused");
  const ir_node *two = ok_node(c, ir_const(c->g, 2.5, UOPC_F32), "2.5");
  const ir_node *add = ok_node(c, ir_binary(c->g, IR_ADD, x, y), "add");
  const ir_node *mul = ok_node(c, ir_binary(c->g, IR_MUL, add, two), "mul");
  const ir_node *sl = ok_node(c, ir_slice(c->g, mul, 1, 1, NONE, 2), "slice");
  const ir_node *sum = ok_node(c, ir_reduce(c->g, IR_SUM, sl, 1u, 1), "sum");
  const ir_node *outs[] = {add, sum};
  expect_print(c, outs, 2,
               "%0 = input(x) : f32[n, 4]\n"
               "%1 = input(y, strides=[s, 1], offset=o) : f32[n, 4]\n"
               "%3 = const(2.5) : f32[]\n"
               "%4 = add(%0, %1) : f32[n, 4]\n"
               "%5 = mul(%4, %3) : f32[n, 4]\n"
               "%6 = slice(%5, axis=1, start=1, step=2) : f32[n, 2]\n"
               "%7 = sum(%6, axes=[0], keepdims) : f32[1, 2]\n"
               "out0 = %4\n"
               "out1 = %7\n");
}

static void test_ir_print_movement_and_casts(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, 64), *m = dim(c, "m", 1, 64);
  const ir_node *x = input(c, "x", UOPC_I32, 2, SHAPE(n, m));
  const ir_node *t = ok_node(c, ir_transpose(c->g, x, 0, 1), "transpose");
  const ir_node *s = ok_node(c, ir_select(c->g, t, 0, cst(c, -1)), "select");
  const ir_node *f = ok_node(c, ir_cast(c->g, s, UOPC_F64), "cast");
  const ir_node *e = ok_node(c, ir_expand(c->g, f, 2, SHAPE(cst(c, 3), n)), "expand");
  const ir_node *r = ok_node(c, ir_reshape(c->g, e, 1, SHAPE(sym_expr_mul(c->a, n, cst(c, 3)))), "reshape");
  const ir_node *mx = ok_node(c, ir_reduce(c->g, IR_MAX, x, 3u, 0), "max");
  const ir_node *outs[] = {r, mx, r};
  expect_print(c, outs, 3,
               "%0 = input(x) : i32[n, m]\n"
               "%1 = permute(%0, perm=[1, 0]) : i32[m, n]\n"
               "%2 = select(%1, axis=0, index=m - 1) : i32[n]\n"
               "%3 = cast(%2, to=f64) : f64[n]\n"
               "%4 = expand(%3) : f64[3, n]\n"
               "%5 = reshape(%4) : f64[n*3]\n"
               "%6 = max(%0, axes=[0, 1]) : i32[]\n"
               "out0 = %5\n"
               "out1 = %6\n"
               "out2 = %5\n");
}

/* The affine form of a chain of views: a strided input's own strides and
 * offset, rewritten by a slice and a permute; an op that computes refused. */
static void test_ir_view_layout_of_a_strided_input(void **state) {
  core *c = *state;
  uopc_error err = {0};
  const sym_expr *n = dim(c, "n", 4, 64), *m = dim(c, "m", 1, 64);
  const sym_expr *s0 = dim(c, "s0", 1, 1024), *o = dim(c, "o", 0, 1024);
  const ir_node *x = ok_node(c, ir_input_view(c->g, "x", UOPC_F32, 2, SHAPE(n, m), SHAPE(s0, cst(c, 1)), o), "x");
  const ir_node *s = ok_node(c, ir_slice(c->g, x, 0, 1, UOPC_SLICE_NONE, 2), "x[1::2]");
  const ir_node *t = ok_node(c, ir_permute(c->g, s, (const int[]){1, 0}), "x[1::2].T");
  ir_layout l;
  assert_uopc_ok(ir_view_layout(c->a, t, &l, &err), err);
  assert_int_equal(l.rank, 2);
  assert_string_equal(expr_text(l.offset), "o + s0");   /* row 1 of the input's memory */
  assert_string_equal(expr_text(l.strides[0]), "1");
  assert_string_equal(expr_text(l.strides[1]), "s0*2");
  assert_string_equal(expr_text(l.shape[0]), "m");
  assert_string_equal(expr_text(l.shape[1]), expr_text(t->shape[1]));
  assert_int_equal(ir_view_layout(c->a, ok_node(c, ir_unary(c->g, IR_EXP, x), "exp(x)"), &l, &err), UOPC_E_INVALID);
  assert_non_null(strstr(err.message, "cannot express"));
}

int main(void) {
#define T(name) cmocka_unit_test_setup_teardown(name, core_setup, core_teardown)
  const struct CMUnitTest tests[] = {
    T(test_ir_broadcast_keeps_equal_symbolic_dims),
    T(test_ir_broadcast_stretches_constant_one),
    T(test_ir_broadcast_rejects_distinct_dims_naming_both_shapes),
    T(test_ir_broadcast_rejects_unequal_constants),
    T(test_ir_where_broadcasts_three_operands),
    T(test_ir_elementwise_dtype_rules),
    T(test_ir_math_ops_need_floats),
    T(test_ir_div_of_integers_is_refused),
    T(test_ir_arithmetic_on_bool_is_refused),
    T(test_ir_neg_of_bool_is_refused),
    T(test_ir_where_needs_a_bool_condition),
    T(test_ir_where_needs_equal_branch_dtypes),
    T(test_ir_elementwise_builders_check_arity),
    T(test_ir_binary_refuses_a_reduction_op),
    T(test_ir_const_keeps_value_and_dtype),
    T(test_ir_const_refuses_a_value_an_integer_dtype_cannot_hold),
    T(test_ir_const_refuses_nan_as_an_integer),
    T(test_ir_const_refuses_2_to_the_63_as_i64),
    T(test_ir_input_rejects_bad_names),
    T(test_ir_input_rejects_a_name_used_twice),
    T(test_ir_input_rejects_a_rank_past_the_maximum),
    T(test_ir_input_rejects_an_unknown_dtype),
    T(test_ir_input_rejects_an_extent_that_may_be_negative),
    T(test_ir_input_view_keeps_strides_and_offset),
    T(test_ir_expand_broadcasts_ones_to_new_extents),
    T(test_ir_expand_rejects_a_different_dim),
    T(test_ir_expand_rejects_fewer_axes),
    T(test_ir_reshape_accepts_provably_equal_counts),
    T(test_ir_reshape_rejects_counts_not_provably_equal),
    T(test_ir_reshape_of_a_multiple_uses_the_dims_multiple_of),
    T(test_ir_permute_and_transpose_move_extents),
    T(test_ir_permute_rejects_a_repeated_axis),
    T(test_ir_permute_rejects_an_axis_outside_the_rank),
    T(test_ir_transpose_rejects_an_axis_outside_the_rank),
    T(test_ir_slice_extent_matches_python_for_every_n),
    T(test_ir_slice_of_a_constant_extent_simplifies),
    T(test_ir_slice_with_full_bounds_keeps_the_dim),
    T(test_ir_slice_rejects_step_zero),
    T(test_ir_slice_rejects_an_axis_outside_the_rank),
    T(test_ir_slice_sym_with_proved_bounds),
    T(test_ir_slice_sym_refuses_a_stop_that_may_pass_the_extent),
    T(test_ir_slice_sym_refuses_a_start_that_may_pass_the_stop),
    T(test_ir_slice_sym_refuses_a_negative_start),
    T(test_ir_slice_sym_refuses_step_below_one),
    T(test_ir_select_counts_a_negative_constant_from_the_end),
    T(test_ir_select_rejects_an_index_past_the_end),
    T(test_ir_select_rejects_a_negative_index_before_the_start),
    T(test_ir_select_rejects_an_index_not_proved_inside),
    T(test_ir_select_rejects_an_axis_outside_the_rank),
    T(test_ir_reduce_dtypes_follow_numpy),
    T(test_ir_mean_of_integers_is_refused),
    T(test_ir_max_of_bool_is_refused),
    T(test_ir_reduce_shapes_with_and_without_keepdims),
    T(test_ir_reduce_rejects_an_axis_outside_the_rank),
    T(test_ir_reduce_rejects_an_empty_axis_set),
    T(test_ir_reduce_rejects_a_scalar),
    T(test_ir_reduce_rejects_an_elementwise_op),
    T(test_ir_matmul_shapes),
    T(test_ir_matmul_rejects_different_inner_extents),
    T(test_ir_matmul_rejects_different_batch_extents),
    T(test_ir_matmul_rejects_rank_one_and_unequal_ranks),
    T(test_ir_matmul_rejects_mixed_dtypes),
    T(test_ir_matmul_rejects_bool),
    T(test_ir_graph_keeps_the_first_error),
    T(test_ir_graph_has_no_node_cap),
    T(test_ir_print_small_graph_exact_text),
    T(test_ir_print_movement_and_casts),
    T(test_ir_view_layout_of_a_strided_input),
  };
#undef T
  return cmocka_run_group_tests(tests, NULL, NULL);
}
