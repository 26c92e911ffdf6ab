/* test_lower.c: the compiler core's lowering (given code, lab 23.1): the
 * text is deterministic; the banner states the dims with their bounds, the
 * index type and the reduction order; the index is 32-bit only when every
 * element count and address fits; what cannot be addressed in int64 is
 * refused by name; the CUDA text of a handful of graphs compiles where a
 * CUDA compiler is installed; and the C and CUDA texts of one graph share
 * their per-element lines (one lowering, two loop forms). */
#include <limits.h>
#include "coreutil.h"

/* ---- Graphs. */

/* out0 = x + y over (n, 4); out1 = exp(sum(out0, axis 0)), through a temporary. */
static void sum_graph(core *c, const ir_node **outs) {
  const sym_expr *n = dim(c, "n", 1, 64);
  const ir_node *x = input(c, "x", UOPC_F32, 2, SHAPE(n, cst(c, 4)));
  const ir_node *y = input(c, "y", UOPC_F32, 2, SHAPE(n, cst(c, 4)));
  outs[0] = ok_node(c, ir_binary(c->g, IR_ADD, x, y), "add");
  const ir_node *r = ok_node(c, ir_reduce(c->g, IR_SUM, outs[0], 1u, 0), "sum");
  outs[1] = ok_node(c, ir_unary(c->g, IR_EXP, r), "exp");
}

/* maximum(x*2 - y, 0) over (n, m), m a multiple of 2. */
static const ir_node *elementwise_graph(core *c) {
  const sym_expr *n = dim(c, "n", 1, 64), *m = dim_m(c, "m", 2, 32, 2);
  const ir_node *x = input(c, "x", UOPC_F32, 2, SHAPE(n, m));
  const ir_node *y = input(c, "y", UOPC_F32, 1, SHAPE(m));
  const ir_node *two = ok_node(c, ir_const(c->g, 2.0, UOPC_F32), "2");
  const ir_node *zero = ok_node(c, ir_const(c->g, 0.0, UOPC_F32), "0");
  const ir_node *d = ok_node(c, ir_binary(c->g, IR_SUB, ok_node(c, ir_binary(c->g, IR_MUL, x, two), "mul"), y), "sub");
  return ok_node(c, ir_binary(c->g, IR_MAXIMUM, d, zero), "maximum");
}

/* (b, n, k) @ (b, k, m) in f64. */
static const ir_node *matmul_graph(core *c) {
  const sym_expr *b = dim(c, "b", 1, 8), *n = dim(c, "n", 1, 64), *k = dim(c, "k", 0, 64), *m = dim(c, "m", 1, 64);
  const ir_node *x = input(c, "x", UOPC_F64, 3, SHAPE(b, n, k));
  const ir_node *y = input(c, "y", UOPC_F64, 3, SHAPE(b, k, m));
  return ok_node(c, ir_matmul(c->g, x, y), "matmul");
}

/* x (a, b, c) permuted to (c, a, b) and read as (b, c*a): an unravel by dims. */
static const ir_node *reshape_graph(core *c) {
  const sym_expr *a = dim(c, "a", 1, 16), *b = dim(c, "b", 1, 16), *cc = dim(c, "c", 1, 16);
  const ir_node *x = input(c, "x", UOPC_I32, 3, SHAPE(a, b, cc));
  const ir_node *p = ok_node(c, ir_permute(c->g, x, (const int[]){2, 0, 1}), "permute");
  return ok_node(c, ir_reshape(c->g, p, 2, SHAPE(b, sym_expr_mul(c->a, cc, a))), "reshape");
}

/* where(x[::-2, -1] < 0, cast(x, f64)..., max over axis 0 with keepdims): every kind at once. */
static void mixed_graph(core *c, const ir_node **outs) {
  const sym_expr *n = dim(c, "n", 1, 64), *m = dim(c, "m", 1, 64);
  const ir_node *x = input(c, "x", UOPC_F32, 2, SHAPE(n, m));
  const ir_node *col = ok_node(c, ir_select(c->g, ok_node(c, ir_slice(c->g, x, 0, UOPC_SLICE_NONE, UOPC_SLICE_NONE, -2),
                                                          "slice"), 1, cst(c, -1)), "select");
  const ir_node *zero = ok_node(c, ir_const(c->g, 0.0, UOPC_F32), "0");
  const ir_node *neg = ok_node(c, ir_binary(c->g, IR_LT, col, zero), "lt");
  const ir_node *d = ok_node(c, ir_cast(c->g, col, UOPC_F64), "cast");
  const ir_node *sq = ok_node(c, ir_unary(c->g, IR_SQRT, ok_node(c, ir_unary(c->g, IR_ABS, d), "abs")), "sqrt");
  outs[0] = ok_node(c, ir_where(c->g, neg, sq, d), "where");
  outs[1] = ok_node(c, ir_reduce(c->g, IR_MAX, x, 1u, 1), "max");
  outs[2] = ok_node(c, ir_reduce(c->g, IR_MEAN, ok_node(c, ir_transpose(c->g, x, 0, 1), "t"), 2u, 0), "mean");
}

static lower_program *lowered(core *c, const ir_node *const *outs, int n, const char *entry, lower_backend be) {
  lower_program *p = NULL;
  uopc_error err = {0};
  int rc = lower_program_new(&p, c->g, outs, n, entry, be, &err);
  if (rc) fail_msg("lowering '%s' for %s: expected UOPC_OK, got %s: %s", entry, be == LOWER_C ? "C" : "CUDA",
                   uopc_error_name(rc), err.message);
  return p;
}

static void expect_lower_error(core *c, const ir_node *const *outs, int n, int code, const char *needle) {
  lower_program *p = NULL;
  uopc_error err = {0};
  assert_uopc_code(lower_program_new(&p, c->g, outs, n, "entry", LOWER_C, &err), code, err);
  assert_null(p);
  assert_contains(err.message, needle);
}

/* ---- Determinism and the banner. */

static void test_lower_text_is_deterministic(void **state) {
  core *c = *state;
  void *s2 = NULL;
  assert_int_equal(core_setup(&s2), 0);
  const ir_node *outs[2], *outs2[2];
  sum_graph(c, outs);
  sum_graph(s2, outs2);                                    /* the same graph, built again */
  for (int be = LOWER_C; be <= LOWER_CUDA; be++) {
    lower_program *a = lowered(c, outs, 2, "sum_exp", be), *b = lowered(c, outs, 2, "sum_exp", be);
    lower_program *d = lowered(s2, outs2, 2, "sum_exp", be);
    if (strcmp(a->source.data, b->source.data) != 0 || strcmp(a->source.data, d->source.data) != 0)
      fail_msg("%s text differs between two lowerings:\n%s\n---\n%s\n---\n%s", be ? "CUDA" : "C", a->source.data,
               b->source.data, d->source.data);
    lower_program_free(a);
    lower_program_free(b);
    lower_program_free(d);
  }
  core_teardown(&s2);
}

static void test_lower_banner_lists_dims_with_bounds_and_the_index(void **state) {
  core *c = *state;
  const ir_node *out = elementwise_graph(c);
  lower_program *p = lowered(c, &out, 1, "relu_f32_nm", LOWER_C);
  const char *src = p->source.data;
  assert_contains(src, "/* relu_f32_nm: lowered by the compiler core (lower.c) for the C back end.\n * graph:\n"
                       " *   %0 = input(x) : f32[n, m]\n");
  assert_contains(src, " *   out = %6\n * dims: n in [1, 64], m in [2, 32] multiple of 2\n"
                       " * index: int32_t (every buffer holds at most 2048 elements; every address fits)\n"
                       " * guards:");
  if (strstr(src, "reduction order") || strstr(src, "LANES"))
    fail_msg("an elementwise program states a reduction order:\n%s", src);
  assert_contains(src, "void relu_f32_nm(float *restrict out, const float *restrict x, const float *restrict y,\n"
                       "    int32_t n, int32_t m) {\n");
  assert_string_equal(p->signature, "pppii");
  assert_int_equal(p->n_dims, 2);
  assert_string_equal(p->dims[1].name, "m");
  lower_program_free(p);
}

static void test_lower_banner_states_the_reduction_order_and_temporaries(void **state) {
  core *c = *state;
  const ir_node *outs[2];
  sum_graph(c, outs);
  lower_program *p = lowered(c, outs, 2, "sum_exp", LOWER_C);
  const char *src = p->source.data;
  assert_contains(src, " * reduction order: element j of a row is added into lane j % LANES (LANES = 32),\n"
                       " *   each lane left to right from its identity; then the lanes pairwise, lane k\n");
  assert_contains(src, " * temporary tmp0 holds %3 at scratch + 0 bytes\n");
  assert_contains(src, "enum { LANES = 32 };");
  assert_contains(src, "void sum_exp(float *restrict out0, float *restrict out1, const float *restrict x,\n"
                       "    const float *restrict y, void *restrict scratch, int32_t n) {\n"
                       "  float *tmp0 = (float *)((unsigned char *)scratch + 0);\n");
  assert_contains(src, "/* loop nest 1: tmp0 = %3 (sum, order: serial) */");   /* axis 0 of (n, 4): the last kept */
  assert_contains(src, "tmp0[i0] += t");
  assert_string_equal(p->signature, "pppppi");
  assert_int_equal(p->n_kernels, 3);
  assert_int_equal(p->n_temps, 1);
  assert_string_equal(expr_text(p->scratch_bytes), "64");
  lower_program_free(p);
}

/* ---- The index width. */

static lower_program *neg_of(core *c, int64_t n_hi, int64_t m_hi, const char *entry) {
  const ir_node *x = input(c, "x", UOPC_F32, 2, SHAPE(dim(c, "n", 1, n_hi), dim(c, "m", 1, m_hi)));
  const ir_node *y = ok_node(c, ir_unary(c->g, IR_NEG, x), "neg");
  return lowered(c, &y, 1, entry, LOWER_C);
}

static void test_lower_index_is_32_bit_when_every_bound_fits(void **state) {
  core *c = *state;
  lower_program *p = neg_of(c, INT64_C(1) << 19, (INT64_C(1) << 12) - 1, "neg_fits");   /* 2^31 - 2^19 */
  assert_int_equal(p->index.bits, 32);
  assert_string_equal(p->signature, "ppii");
  assert_contains(p->source.data, " * index: int32_t");
  assert_contains(p->source.data, "for (int32_t i1 = 0; i1 < m; i1++) {");
  lower_program_free(p);
}

static void test_lower_index_is_64_bit_when_an_element_count_passes_int32(void **state) {
  core *c = *state;
  lower_program *p = neg_of(c, INT64_C(1) << 20, INT64_C(1) << 12, "neg_wide");           /* 2^32 */
  assert_int_equal(p->index.bits, 64);
  assert_string_equal(p->signature, "ppll");
  assert_contains(p->source.data, " * index: int64_t");
  assert_contains(p->source.data, "for (int64_t i0 = 0; i0 < n; i0++) {");
  assert_contains(p->source.data, "int64_t n, int64_t m) {");
  lower_program_free(p);
}

static void test_lower_index_is_64_bit_when_the_output_passes_int32(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, INT64_C(1) << 20), *m = dim(c, "m", 1, INT64_C(1) << 12);
  const ir_node *col = input(c, "col", UOPC_F32, 2, SHAPE(n, cst(c, 1)));
  const ir_node *row = input(c, "row", UOPC_F32, 2, SHAPE(cst(c, 1), m));
  const ir_node *out = ok_node(c, ir_binary(c->g, IR_MUL, col, row), "outer");
  lower_program *p = lowered(c, &out, 1, "outer", LOWER_C);
  assert_int_equal(p->index.bits, 64);                     /* each input fits; the product does not */
  lower_program_free(p);
}

static void test_lower_index_is_64_bit_when_a_strided_address_passes_int32(void **state) {
  core *c = *state;
  const sym_expr *s = dim(c, "s", 1, INT64_C(1) << 22);
  const ir_node *x = ok_node(c, ir_input_view(c->g, "x", UOPC_F32, 1, SHAPE(cst(c, 1024)), SHAPE(s), NULL), "view");
  const ir_node *y = ok_node(c, ir_unary(c->g, IR_NEG, x), "neg");
  lower_program *p = lowered(c, &y, 1, "neg_strided", LOWER_C);
  assert_int_equal(p->index.bits, 64);                     /* 1024 elements, addresses up to 1023*2^22 */
  assert_string_equal(p->signature, "ppl");
  assert_contains(p->source.data, "const float t0 = x[i0*s];");
  lower_program_free(p);
}

static void test_lower_index_stays_32_bit_for_a_small_strided_view(void **state) {
  core *c = *state;
  const sym_expr *s = dim(c, "s", -4096, 4096), *o = dim(c, "o", 0, 1 << 20);
  const ir_node *x = ok_node(c, ir_input_view(c->g, "x", UOPC_F32, 1, SHAPE(cst(c, 1024)), SHAPE(s), o), "view");
  const ir_node *y = ok_node(c, ir_unary(c->g, IR_NEG, x), "neg");
  lower_program *p = lowered(c, &y, 1, "neg_small", LOWER_C);
  assert_int_equal(p->index.bits, 32);
  assert_contains(p->source.data, "const float t0 = x[i0*s + o];");
  lower_program_free(p);
}

static void test_lower_refuses_an_element_count_past_int64(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, INT64_C(1) << 40), *m = dim(c, "m", 1, INT64_C(1) << 40);
  const ir_node *x = input(c, "x", UOPC_F32, 2, SHAPE(n, m));
  const ir_node *y = ok_node(c, ir_unary(c->g, IR_NEG, x), "neg");
  expect_lower_error(c, &y, 1, UOPC_E_OVERFLOW, "buffer 'out' may hold 1099511627776 * 1099511627776 elements,"
                                                " past int64");
}

static void test_lower_refuses_an_address_past_int64_naming_the_input(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, INT64_C(1) << 40), *s = dim(c, "s", 1, INT64_C(1) << 40);
  const ir_node *x = ok_node(c, ir_input_view(c->g, "x", UOPC_F32, 1, SHAPE(n), SHAPE(s), NULL), "view");
  const ir_node *y = ok_node(c, ir_unary(c->g, IR_NEG, x), "neg");
  expect_lower_error(c, &y, 1, UOPC_E_OVERFLOW, "input 'x': the address i0*s may pass int64");
}

/* i0*s can pass int64 although the whole address, less a positive offset,
 * has an interval that ends just below INT64_MAX: every part is computed. */
static void test_lower_refuses_an_address_whose_part_passes_int64(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, INT64_C(1) << 40), *s = dim(c, "s", 1, INT64_C(1) << 40);
  const sym_expr *o = dim(c, "o", 1, 10);
  const sym_expr *minus_o = sym_expr_sub(c->a, cst(c, 0), o);
  const ir_node *x = ok_node(c, ir_input_view(c->g, "x", UOPC_F32, 1, SHAPE(n), SHAPE(s), minus_o), "view");
  const ir_node *y = ok_node(c, ir_unary(c->g, IR_NEG, x), "neg");
  expect_lower_error(c, &y, 1, UOPC_E_OVERFLOW, "input 'x': the address i0*s - o may pass int64");
}

/* ---- What lowering refuses. */

static void test_lower_refuses_no_outputs(void **state) {
  core *c = *state;
  expect_lower_error(c, NULL, 0, UOPC_E_INVALID, "lower: no outputs");
}

static void test_lower_refuses_a_node_of_another_graph(void **state) {
  core *c = *state;
  void *s2 = NULL;
  assert_int_equal(core_setup(&s2), 0);
  input(c, "x", UOPC_F32, 0, NULL);
  const ir_node *foreign = input(s2, "y", UOPC_F32, 0, NULL);
  expect_lower_error(c, &foreign, 1, UOPC_E_INVALID, "lower: output 0 is not a node of the graph");
  core_teardown(&s2);
}

static void test_lower_refuses_an_entry_that_is_not_an_identifier(void **state) {
  core *c = *state;
  const ir_node *x = input(c, "x", UOPC_F32, 0, NULL);
  lower_program *p = NULL;
  uopc_error err = {0};
  assert_uopc_code(lower_program_new(&p, c->g, &x, 1, "9lives", LOWER_C, &err), UOPC_E_INVALID, err);
  assert_contains(err.message, "lower: entry '9lives' is not a C identifier");
  assert_uopc_code(lower_program_new(&p, c->g, &x, 1, "a-b", LOWER_C, &err), UOPC_E_INVALID, err);
  assert_null(p);
}

static void test_lower_refuses_a_graph_with_an_error(void **state) {
  core *c = *state;
  const ir_node *x = input(c, "x", UOPC_I32, 1, SHAPE(cst(c, 3)));
  assert_null(ir_unary(c->g, IR_EXP, x));
  expect_lower_error(c, &x, 1, UOPC_E_DTYPE, "lower: the graph has an error: exp of i32");
}

/* A graph's dims live in its arena, where a name is one dim: a second
 * declaration of n with other bounds, even one made in another arena, is
 * refused when the graph takes it, so the lowering never sees one parameter
 * with two bounds (a proof from one would not hold for the other). */
static void test_lower_graph_holds_one_declaration_of_a_dim_name(void **state) {
  core *c = *state;
  const ir_node *x = input(c, "x", UOPC_F32, 1, SHAPE(dim(c, "n", 1, 128)));
  sym_arena *elsewhere;
  sym_dim other;
  uopc_error err = {0};
  assert_uopc_ok(sym_arena_new(&elsewhere, &err), err);
  assert_uopc_ok(sym_dim_init(&other, "n", 64, 128, 1, &err), err);
  const ir_node *y = ir_input(c->g, "y", UOPC_F32, 1, SHAPE(sym_expr_dim(elsewhere, &other)));
  expect_graph_error(c, y, UOPC_E_INVALID, "y over another declaration of n",
                     "dim 'n' is declared as [1, 128] multiple of 1 and as [64, 128] multiple of 1 in one arena",
                     NULL);
  sym_arena_free(elsewhere);
  assert_non_null(x);
}

/* Names that the generated text declares or uses itself: a parameter named
 * so would not compile, or worse, would shadow a loop variable. */
static void expect_name_refused(const char *input_name, const char *dim_name) {
  void *s = NULL;
  assert_int_equal(core_setup(&s), 0);
  core *c = s;
  const ir_node *x = input(c, input_name, UOPC_F32, 2, SHAPE(dim(c, dim_name, 1, 64), cst(c, 3)));
  const ir_node *y = ok_node(c, ir_reduce(c->g, IR_SUM, x, 2u, 0), "sum");
  for (int be = LOWER_C; be <= LOWER_CUDA; be++) {
    lower_program *p = NULL;
    uopc_error err = {0};
    int rc = lower_program_new(&p, c->g, &y, 1, "entry", be, &err);
    if (rc != UOPC_E_INVALID)
      fail_msg("input '%s', dim '%s': expected UOPC_E_INVALID, got %s: %s\n%s", input_name, dim_name,
               uopc_error_name(rc), err.message, p ? p->source.data : "");
    const char *name = strcmp(input_name, "x") ? input_name : dim_name;
    char want[96];
    snprintf(want, sizeof want, "'%s'", name);
    assert_contains(err.message, want);
    assert_contains(err.message, "the generated code uses");
  }
  core_teardown(&s);
}

static void test_lower_refuses_names_the_generated_code_uses(void **state) {
  (void)state;
  const char *inputs[] = {"out0", "out1", "tmp0", "t0", "t12", "acc0", "scratch", "LANES", "total", "g", "rest",
                          "floordiv_i64", "int32_t", "float", "for", "expf", "blockIdx"};
  for (int k = 0; k < COUNT(inputs); k++) expect_name_refused(inputs[k], "n");
  const char *dims[] = {"acc0", "scratch", "LANES", "total", "g", "rest", "out0", "tmp3", "INT64_C", "_Bool"};
  for (int k = 0; k < COUNT(dims); k++) expect_name_refused("x", dims[k]);
}

/* x + 1 + 1 ... with adds ops; the last add is %(adds + 1). */
static const ir_node *chain_of_adds(core *c, int adds) {
  const ir_node *x = input(c, "x", UOPC_F32, 1, SHAPE(dim(c, "n", 1, 64)));
  const ir_node *one = ok_node(c, ir_const(c->g, 1.0, UOPC_F32), "1");
  const ir_node *y = x;
  for (int k = 0; k < adds; k++) y = ok_node(c, ir_binary(c->g, IR_ADD, y, one), "add");
  return y;
}

static void test_lower_nests_elementwise_ops_up_to_its_limit(void **state) {
  core *c = *state;
  const ir_node *y = chain_of_adds(c, 4096);
  for (int be = LOWER_C; be <= LOWER_CUDA; be++) {
    lower_program *p = lowered(c, &y, 1, "adds", be);
    assert_contains(p->source.data, "const float t4096 = t4095 + t1;\n");
    lower_program_free(p);
  }
}

static void test_lower_refuses_nesting_past_its_limit(void **state) {
  core *c = *state;
  const ir_node *y = chain_of_adds(c, 4097);
  expect_lower_error(c, &y, 1, UOPC_E_LIMIT, "lower: %4098 nests elementwise ops more than 4096 deep");
}

static void test_lower_refuses_a_chain_of_10000_ops_without_crashing(void **state) {
  core *c = *state;
  const ir_node *y = chain_of_adds(c, 9998);
  assert_int_equal(ir_graph_node_count(c->g), 10000);
  expect_lower_error(c, &y, 1, UOPC_E_LIMIT, "lower: %9999 nests elementwise ops more than 4096 deep");
}

/* ---- The CUDA back end. */

static void test_lower_kernel_threads_is_the_element_count(void **state) {
  core *c = *state;
  const ir_node *outs[2];
  sum_graph(c, outs);
  lower_program *p = lowered(c, outs, 2, "sum_exp", LOWER_CUDA);
  assert_int_equal(p->n_kernels, 3);
  sym_binding b;
  uopc_error err = {0};
  sym_binding_init(&b);
  assert_uopc_ok(sym_dim_bind(&b, &p->dims[0], 10, &err), err);
  const int64_t want[] = {40, 4, 4};
  for (int k = 0; k < 3; k++) {
    int64_t threads = -1;
    assert_uopc_ok(lower_kernel_threads(p, k, &b, &threads, &err), err);
    if (threads != want[k]) fail_msg("kernel %d with n=10: expected %lld threads, got %lld", k, (long long)want[k],
                                     (long long)threads);
  }
  char name[32];
  for (int k = 0; k < 3; k++) {
    snprintf(name, sizeof name, "void sum_exp_k%d(", k);
    assert_contains(p->source.data, name);
  }
  lower_program_free(p);
}

/* A thread's element index g is split axis by axis; an extent that is a
 * product is one operand of % (rest % b*n would be (rest % b) * n: wrong
 * indices on every GPU, and writes past the output). */
static void test_lower_cuda_splits_the_thread_index_by_whole_extents(void **state) {
  core *c = *state;
  const sym_expr *b = dim(c, "b", 1, 8), *n = dim(c, "n", 1, 8), *m = dim(c, "m", 1, 8);
  const ir_node *x = input(c, "x", UOPC_F32, 3, SHAPE(b, n, m));
  const ir_node *r = ok_node(c, ir_reshape(c->g, x, 2, SHAPE(sym_expr_mul(c->a, b, n), m)), "(b*n, m)");
  const ir_node *out = ok_node(c, ir_permute(c->g, r, (const int[]){1, 0}), "(m, b*n)");
  lower_program *p = lowered(c, &out, 1, "split", LOWER_CUDA);
  assert_contains(p->source.data, "    const int32_t i1 = (int32_t)(rest % (b*n));\n    rest /= (b*n);\n");
  lower_program_free(p);
}

static void require_cuda_compiler(void) {
  uopc_error err = {0};
  if (uopc_cuda_compiler_available(&err) == UOPC_OK) return;
  print_message("  skipped: %s\n", err.message);
  skip();
}

static char *read_all(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) fail_msg("cannot open %s", path);
  char *text = NULL;
  size_t cap = 0;
  if (getdelim(&text, &cap, '\0', f) < 0) fail_msg("cannot read %s", path);
  fclose(f);
  return text;
}

/* The CUDA text of outs compiles, and its PTX defines every kernel. */
static void expect_cuda_compiles(core *c, const ir_node *const *outs, int n, const char *entry) {
  require_cuda_compiler();
  lower_program *p = lowered(c, outs, n, entry, LOWER_CUDA);
  char first[96], ptx[PATH_MAX];
  snprintf(first, sizeof first, "%s_k0", entry);
  uopc_error err = {0};
  int rc = uopc_cuda_compile(p->source.data, first, NULL, ptx, sizeof ptx, &err);
  if (rc == UOPC_E_NO_CUDA) {
    print_message("  skipped: %s\n", err.message);
    lower_program_free(p);
    skip();
  }
  if (rc) fail_msg("'%s': expected its CUDA text to compile, got %s: %s\n%s", entry, uopc_error_name(rc), err.message,
                   p->source.data);
  char *text = read_all(ptx);
  for (int k = 0; k < p->n_kernels; k++) {
    char want[128];
    snprintf(want, sizeof want, ".entry %s_k%d(", entry, k);
    assert_contains(text, want);
  }
  free(text);
  lower_program_free(p);
}

static void test_lower_cuda_elementwise_compiles(void **state) {
  core *c = *state;
  const ir_node *out = elementwise_graph(c);
  expect_cuda_compiles(c, &out, 1, "relu_f32_nm");
}

static void test_lower_cuda_reduction_compiles(void **state) {
  core *c = *state;
  const ir_node *outs[2];
  sum_graph(c, outs);
  expect_cuda_compiles(c, outs, 2, "sum_exp_f32_n");
}

static void test_lower_cuda_matmul_compiles(void **state) {
  core *c = *state;
  const ir_node *out = matmul_graph(c);
  expect_cuda_compiles(c, &out, 1, "matmul_f64_bnkm");
}

static void test_lower_cuda_reshape_compiles(void **state) {
  core *c = *state;
  const ir_node *out = reshape_graph(c);
  expect_cuda_compiles(c, &out, 1, "reshape_i32_abc");
}

static void test_lower_cuda_of_every_kind_compiles(void **state) {
  core *c = *state;
  const ir_node *outs[3];
  mixed_graph(c, outs);
  expect_cuda_compiles(c, outs, 3, "mixed_nm");
}

static void test_lower_cuda_of_a_64_bit_index_compiles(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, INT64_C(1) << 20), *m = dim(c, "m", 1, INT64_C(1) << 12);
  const ir_node *x = input(c, "x", UOPC_I64, 2, SHAPE(n, m));
  const ir_node *outs[] = {ok_node(c, ir_reduce(c->g, IR_MAX, x, 2u, 0), "max")};
  expect_cuda_compiles(c, outs, 1, "max_i64_wide");
}

/* ---- One lowering, two loop forms. */

/* The lines of src that compute a temporary, trimmed: "const float t3 = t1 +
 * t2;". (Stores differ by design where a reduction keeps its last axis: the
 * C loops are interchanged and accumulate into the output, a CUDA thread
 * keeps its own accumulator; the values added, and their order, are the
 * same.) */
static int body_lines(const char *src, char lines[][256], int cap) {
  int n = 0;
  for (const char *p = src; *p;) {
    const char *end = strchr(p, '\n');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    const char *s = p;
    while (*s == ' ') s++;
    size_t slen = len - (size_t)(s - p);
    const char *type_end = strncmp(s, "const ", 6) == 0 ? strchr(s + 6, ' ') : NULL;
    int temp = type_end && type_end[1] == 't' && type_end[2] >= '0' && type_end[2] <= '9';
    if (temp && slen < 256) {
      if (n == cap) fail_msg("more than %d body lines", cap);
      memcpy(lines[n], s, slen);
      lines[n++][slen] = '\0';
    }
    p += len + (end ? 1 : 0);
  }
  return n;
}

static void expect_same_body_lines(core *c, const ir_node *const *outs, int n, const char *entry, int at_least) {
  static char lc[512][256], lg[512][256];
  lower_program *pc = lowered(c, outs, n, entry, LOWER_C), *pg = lowered(c, outs, n, entry, LOWER_CUDA);
  int nc = body_lines(pc->source.data, lc, 512), ng = body_lines(pg->source.data, lg, 512);
  if (nc < at_least) fail_msg("'%s': expected at least %d body lines in the C text, got %d:\n%s", entry, at_least, nc,
                              pc->source.data);
  if (nc != ng) fail_msg("'%s': %d body lines in C, %d in CUDA:\n%s\n---\n%s", entry, nc, ng, pc->source.data,
                         pg->source.data);
  for (int k = 0; k < nc; k++)
    if (strcmp(lc[k], lg[k]) != 0)
      fail_msg("'%s': body line %d: C has \"%s\", CUDA has \"%s\"", entry, k, lc[k], lg[k]);
  lower_program_free(pc);
  lower_program_free(pg);
}

static void test_lower_c_and_cuda_share_elementwise_body_lines(void **state) {
  core *c = *state;
  const ir_node *out = elementwise_graph(c);
  expect_same_body_lines(c, &out, 1, "relu", 7);
  lower_program *p = lowered(c, &out, 1, "relu", LOWER_CUDA);
  assert_contains(p->source.data, "    const float t2 = t0 * t1;\n");
  assert_contains(p->source.data, "    out[i0*m + i1] = t6;\n");
  lower_program_free(p);
}

static void test_lower_c_and_cuda_share_reduction_body_lines(void **state) {
  core *c = *state;
  const ir_node *outs[2];
  sum_graph(c, outs);
  expect_same_body_lines(c, outs, 2, "sum_exp", 6);
}

static void test_lower_c_and_cuda_share_matmul_and_reshape_body_lines(void **state) {
  core *c = *state;
  const ir_node *out = matmul_graph(c);
  expect_same_body_lines(c, &out, 1, "matmul", 5);
  void *s2 = NULL;
  assert_int_equal(core_setup(&s2), 0);
  out = reshape_graph(s2);
  expect_same_body_lines(s2, &out, 1, "reshape", 1);
  core_teardown(&s2);
}

static void test_lower_c_and_cuda_share_mixed_body_lines(void **state) {
  core *c = *state;
  const ir_node *outs[3];
  mixed_graph(c, outs);
  expect_same_body_lines(c, outs, 3, "mixed", 10);
}

int main(void) {
#define T(name) cmocka_unit_test_setup_teardown(name, core_setup, core_teardown)
  const struct CMUnitTest tests[] = {
    T(test_lower_text_is_deterministic),
    T(test_lower_banner_lists_dims_with_bounds_and_the_index),
    T(test_lower_banner_states_the_reduction_order_and_temporaries),
    T(test_lower_index_is_32_bit_when_every_bound_fits),
    T(test_lower_index_is_64_bit_when_an_element_count_passes_int32),
    T(test_lower_index_is_64_bit_when_the_output_passes_int32),
    T(test_lower_index_is_64_bit_when_a_strided_address_passes_int32),
    T(test_lower_index_stays_32_bit_for_a_small_strided_view),
    T(test_lower_refuses_an_element_count_past_int64),
    T(test_lower_refuses_an_address_past_int64_naming_the_input),
    T(test_lower_refuses_an_address_whose_part_passes_int64),
    T(test_lower_refuses_no_outputs),
    T(test_lower_refuses_a_node_of_another_graph),
    T(test_lower_refuses_an_entry_that_is_not_an_identifier),
    T(test_lower_refuses_a_graph_with_an_error),
    T(test_lower_graph_holds_one_declaration_of_a_dim_name),
    T(test_lower_refuses_names_the_generated_code_uses),
    T(test_lower_nests_elementwise_ops_up_to_its_limit),
    T(test_lower_refuses_nesting_past_its_limit),
    T(test_lower_refuses_a_chain_of_10000_ops_without_crashing),
    T(test_lower_kernel_threads_is_the_element_count),
    T(test_lower_cuda_splits_the_thread_index_by_whole_extents),
    T(test_lower_cuda_elementwise_compiles),
    T(test_lower_cuda_reduction_compiles),
    T(test_lower_cuda_matmul_compiles),
    T(test_lower_cuda_reshape_compiles),
    T(test_lower_cuda_of_every_kind_compiles),
    T(test_lower_cuda_of_a_64_bit_index_compiles),
    T(test_lower_c_and_cuda_share_elementwise_body_lines),
    T(test_lower_c_and_cuda_share_reduction_body_lines),
    T(test_lower_c_and_cuda_share_matmul_and_reshape_body_lines),
    T(test_lower_c_and_cuda_share_mixed_body_lines),
  };
#undef T
  return cmocka_run_group_tests(tests, testutil_fresh_cache, testutil_remove_cache);
}
