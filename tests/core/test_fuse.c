/* test_fuse.c: fusion groups with LOWER_FUSE, the mechanism (labs/core/
 * lower_fuse.c): without a rule only the outputs, reductions and matmuls are
 * stored; a rule's decisions are honoured (a node it stores is computed
 * once: the generated source is inspected) and checked (a rule that marks a
 * leaf, an unreached node or an output is refused); a chain of 5000 ops
 * compiles and runs; temporaries share space; every result is checked
 * against the interpreter (ir_eval.h). Without the flag the given rule's
 * text is unchanged: the same graphs recompute and refuse as before. Then
 * the groups' printed text (lower_program_print_groups), and LOWER_VEC_EXP's
 * exp_f32 against expf. tensorjit's cost rule is lab 23.7's
 * (tests/23.7/test_fuse.c). */
#include <float.h>
#include "coreutil.h"

static exec *built(core *c, const ir_node *const *outs, int n, const char *entry, unsigned flags) {
  exec *e = NULL;
  uopc_error err = {0};
  int rc = exec_new_flags(&e, c->g, outs, n, entry, flags, NULL, &err);
  if (rc) fail_msg("exec_new_flags '%s': expected UOPC_OK, got %s: %s", entry, uopc_error_name(rc), err.message);
  return e;
}

static void fill(buf *b, double scale) {
  for (int64_t i = 0; i < uopc_tensor_numel(&b->t); i++) uopc_tensor_set(&b->t, i, scale * (double)(i % 17 - 8) / 8.0);
}

/* Rules of this suite's own, to test the mechanism: every exp stored
 * (the core's LOWER_RULE_STORE_EXPS), or one wrong decision each. */
static int store_op(const ir_graph *g, lower_stored *store, ir_op op, lower_reason why) {
  for (int id = 0; id < ir_graph_node_count(g); id++)
    if (ir_graph_node(g, id)->op == op) store[id] = (lower_stored){why, 1, 1};
  return UOPC_OK;
}
static int store_input(const ir_graph *g, const unsigned char *used, lower_stored *store, uopc_error *err) {
  (void)err;
  (void)used;
  return store_op(g, store, IR_INPUT, LOWER_WHY_COST);
}
static int store_unreached(const ir_graph *g, const unsigned char *used, lower_stored *store, uopc_error *err) {
  (void)err;
  for (int id = 0; id < ir_graph_node_count(g); id++)
    if (!used[id]) store[id] = (lower_stored){LOWER_WHY_COST, 1, 1};
  return UOPC_OK;
}
static int unmark_output(const ir_graph *g, const unsigned char *used, lower_stored *store, uopc_error *err) {
  (void)err;
  (void)used;
  return store_op(g, store, IR_MUL, 0);
}
static int other_reason(const ir_graph *g, const unsigned char *used, lower_stored *store, uopc_error *err) {
  (void)err;
  (void)used;
  return store_op(g, store, IR_EXP, LOWER_WHY_PACKED);
}
static int refuses(const ir_graph *g, const unsigned char *used, lower_stored *store, uopc_error *err) {
  (void)g, (void)used, (void)store;
  return UOPC_FAIL(err, UOPC_E_LIMIT, "this suite's rule refuses");
}

/* t = exp(x) read by t*2, t+1 and sum(t), an unreached t - 1 beside them. */
static void fanout(core *c, const ir_node **outs) {
  const sym_expr *n = dim(c, "n", 1, 4096), *m = dim(c, "m", 1, 4096);
  const ir_node *x = input(c, "x", UOPC_F32, 2, SHAPE(n, m));
  const ir_node *t = ir_unary(c->g, IR_EXP, x);
  outs[0] = ok_node(c, ir_binary(c->g, IR_MUL, t, ir_const(c->g, 2, UOPC_F32)), "t*2");
  outs[1] = ok_node(c, ir_binary(c->g, IR_ADD, t, ir_const(c->g, 1, UOPC_F32)), "t+1");
  outs[2] = ok_node(c, ir_reduce(c->g, IR_SUM, t, 2u, 0), "sum");
  ok_node(c, ir_binary(c->g, IR_SUB, t, ir_const(c->g, 1, UOPC_F32)), "unreached");
}

/* Without a rule: the given rule's nests (exp in each, 4 expf), the banner
 * saying so; with one, what it stores is computed once, and named. */
static void test_a_rule_decides_what_is_stored_and_is_named(void **state) {
  core *c = *state;
  const ir_node *outs[3];
  fanout(c, outs);
  exec *given = built(c, outs, 3, "fanout_given", 0), *none = built(c, outs, 3, "fanout_none", LOWER_FUSE), *ruled = NULL;
  uopc_error err = {0};
  assert_uopc_ok(exec_new_rule(&ruled, c->g, outs, 3, "fanout_ruled", LOWER_FUSE, core_store_exps_rule(), NULL, &err), err);
  /* The given rule: one per elementwise nest, two in the sum's (lane blocks and tail). */
  assert_int_equal(count_of(body_of(given), "expf("), 4);
  assert_int_equal(count_of(body_of(none), "expf("), 4);
  assert_int_equal(count_of(body_of(ruled), "expf("), 1);
  assert_int_equal(exec_lowered(none)->n_temps, 0);
  assert_int_equal(exec_lowered(ruled)->n_temps, 1);
  assert_int_equal(exec_lowered(ruled)->n_kernels, 4);
  assert_null(strstr(exec_source(given), "fusion:"));
  assert_non_null(strstr(exec_source(none), " * fusion: no rule: the outputs, reductions and matmuls are stored;\n"
                                            " *   and a chain is cut every 256 levels"));
  assert_non_null(strstr(exec_source(ruled), " * fusion: every exp is stored (LOWER_RULE_STORE_EXPS);\n"));
  buf in;
  buf_new(&in, UOPC_F32, 2, (const int64_t[]){37, 45});
  fill(&in, 2);
  check_against_eval(c, ruled, outs, 3, &in, 1, 1e-5, "fanout, exp stored");
  check_against_eval(c, none, outs, 3, &in, 1, 1e-5, "fanout, no rule");
  buf_free(&in);
  exec_free(given);
  exec_free(none);
  exec_free(ruled);
}

/* Each wrong decision is refused with UOPC_E_INVALID, naming the rule, the
 * node and what was wrong; a rule's own error comes back as it is. */
static void test_a_rules_wrong_decisions_are_refused(void **state) {
  core *c = *state;
  const ir_node *outs[3];
  fanout(c, outs);
  static const struct { lower_fuse_rule rule; const char *says; } cases[] = {
      {{"stores an input", store_input}, "stored a leaf or a move: node %0 (input)"},
      {{"stores the unreached", store_unreached}, "stored a node the outputs do not reach: node %"},
      {{"unmarks an output", unmark_output}, "changed the mark of node %3 (mul)"},
      {{"another reason", other_reason}, "gave a reason other than LOWER_WHY_COST to node %1 (exp)"},
  };
  for (int k = 0; k < COUNT(cases); k++) {
    lower_program *p = NULL;
    uopc_error err = {0};
    int rc = lower_program_new_rule(&p, c->g, outs, 3, "wrong", LOWER_C, LOWER_FUSE, &cases[k].rule, &err);
    if (rc != UOPC_E_INVALID || !strstr(err.message, cases[k].says) || !strstr(err.message, cases[k].rule.name))
      fail_msg("rule '%s': expected UOPC_E_INVALID saying \"%s\", got %s: %s", cases[k].rule.name, cases[k].says,
               uopc_error_name(rc), err.message);
    assert_null(p);
  }
  lower_program *p = NULL;
  uopc_error err = {0};
  const lower_fuse_rule refusing = {"refuses", refuses};
  assert_int_equal(lower_program_new_rule(&p, c->g, outs, 3, "refused", LOWER_C, LOWER_FUSE, &refusing, &err), UOPC_E_LIMIT);
  assert_string_equal(err.message, "this suite's rule refuses");
  /* without LOWER_FUSE the rule is not asked */
  assert_uopc_ok(lower_program_new_rule(&p, c->g, outs, 3, "unasked", LOWER_C, 0, &refusing, &err), err);
  lower_program_free(p);
}

/* 5000 elementwise ops in one chain: refused by the given rule (past 4096
 * levels), cut into temporaries with LOWER_FUSE, and equal to the
 * interpreter bit for bit (each op in f32 on both sides). */
static void test_chain_of_5000_ops_compiles_and_runs(void **state) {
  core *c = *state;
  enum { OPS = 5000 };
  const sym_expr *n = dim(c, "n", 1, 1 << 20);
  const ir_node *x = input(c, "x", UOPC_F32, 1, SHAPE(n)), *v = x;
  const ir_node *half = ir_const(c->g, 0.5, UOPC_F32), *quarter = ir_const(c->g, 0.25, UOPC_F32);
  for (int k = 0; k < OPS; k++) v = k % 2 ? ir_binary(c->g, IR_MUL, v, half) : ir_binary(c->g, IR_ADD, v, quarter);
  ok_node(c, v, "chain");
  exec *e = NULL;
  uopc_error err = {0};
  assert_int_equal(exec_new_flags(&e, c->g, &v, 1, "chain_given", 0, NULL, &err), UOPC_E_LIMIT);
  assert_non_null(strstr(err.message, "more than 4096 deep"));
  e = built(c, &v, 1, "chain_fused", LOWER_FUSE);
  const lower_program *p = exec_lowered(e);
  /* A temporary every LOWER_CHAIN_CUT (256) levels: 5000 / 257 cuts. */
  assert_int_equal(p->n_temps, OPS / 257);
  assert_int_equal(p->n_kernels, OPS / 257 + 1);
  buf in;
  buf_new(&in, UOPC_F32, 1, (const int64_t[]){1000});
  fill(&in, 4);
  check_against_eval(c, e, &v, 1, &in, 1, 0, "chain");
  buf_free(&in);
  exec_free(e);
}

/* Three row sums, each read only by the next one's nest: the third takes the
 * first's place (its last reader ran before its writer), so the block holds
 * two, and the peak counter says so. */
static void test_temporaries_share_space_when_lifetimes_do_not_overlap(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, 4096), *m = dim(c, "m", 1, 4096);
  const ir_node *x = input(c, "x", UOPC_F32, 2, SHAPE(n, m));
  const ir_node *a = ir_reduce(c->g, IR_SUM, x, 2u, 1);
  const ir_node *b = ir_reduce(c->g, IR_SUM, ir_binary(c->g, IR_SUB, x, a), 2u, 1);
  const ir_node *s = ir_reduce(c->g, IR_SUM, ir_binary(c->g, IR_SUB, x, b), 2u, 1);
  const ir_node *out = ok_node(c, ir_binary(c->g, IR_SUB, x, s), "out");
  exec *given = built(c, &out, 1, "share_given", 0), *fused = built(c, &out, 1, "share_fused", LOWER_FUSE);
  const lower_program *pg = exec_lowered(given), *pf = exec_lowered(fused);
  assert_int_equal(pg->n_temps, 3);
  assert_int_equal(pf->n_temps, 3);
  assert_string_equal(expr_text(pg->scratch_bytes), "(n*4 + 63)//64*192");
  assert_string_equal(expr_text(pf->scratch_bytes), "(n*4 + 63)//64*128");
  assert_ptr_equal(pf->buffers[pf->n_buffers - 1].scratch_offset, pf->buffers[pf->n_buffers - 3].scratch_offset);
  assert_non_null(strstr(exec_source(fused), " * temporary tmp2 holds %5 at scratch + 0 bytes"));
  buf in;
  buf_new(&in, UOPC_F32, 2, (const int64_t[]){100, 8});
  fill(&in, 1);
  uopc_counters_reset();
  check_against_eval(c, fused, &out, 1, &in, 1, 1e-5, "share");
  /* 100 rows of 4 bytes, each place rounded to 448 bytes: two places, not three. */
  assert_int_equal(uopc_counter_get(EXEC_C_PEAK_TEMP), 896);
  buf_free(&in);
  exec_free(given);
  exec_free(fused);
}

/* lower_program_print_groups' text of outs lowered with flags (C back end). */
static char *groups_of(core *c, const ir_node *const *outs, int n, const char *entry, unsigned flags) {
  lower_program *p = NULL;
  codegen_text t = {0};
  uopc_error err = {0};
  assert_uopc_ok(lower_program_new_flags(&p, c->g, outs, n, entry, LOWER_C, flags, &err), err);
  assert_uopc_ok(lower_program_print_groups(&t, p, &err), err);
  lower_program_free(p);
  return t.data;                                /* the caller frees it */
}

/* 300 adds: the chain is cut once, at the 257th level. */
static void test_groups_print_a_chain_cut(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, 4096);
  const ir_node *v = input(c, "x", UOPC_F32, 1, SHAPE(n)), *one = ir_const(c->g, 1, UOPC_F32);
  for (int k = 0; k < 300; k++) v = ir_binary(c->g, IR_ADD, v, one);
  ok_node(c, v, "chain");
  char *text = groups_of(c, &v, 1, "chain", LOWER_FUSE);
  const char *want[] = {"chain: 2 loop nests, 1 temporary (LOWER_FUSE)\n",
                        "nest 0: tmp0 = %258 (chain cut: 257 levels > 256), reads x\n",
                        "nest 1: out = %301 (an output), reads tmp0\n  %1 = const(1) : f32[]\n  %259 = add(%258, %1) : f32[n]\n"};
  for (int k = 0; k < COUNT(want); k++)
    if (!strstr(text, want[k])) fail_msg("expected the line\n%sin\n%s", want[k], text);
  free(text);
}

/* A float's bits as an integer that counts ulps through zero. */
static int64_t ordered(float f) {
  int32_t i;
  memcpy(&i, &f, sizeof i);
  return i < 0 ? (int64_t)INT32_MIN - i : i;
}

/* The op named by ref lowered with flag (its own function called once, the
 * libm call gone) on every 4099th f32 bit pattern (all signs and exponents,
 * subnormals, NaNs) and the edges: within bound ulps of ref where the
 * result is finite and nonzero and, for tanh (exact_one), not +-1; equal,
 * sign included, where either is 0 or inf or ref gives +-1 (overflow and
 * underflow where libm has them); NaN for NaN. bench/exp_sweep.c runs every
 * pattern. */
typedef struct vec_case {
  ir_op op;
  unsigned flag;
  const char *entry, *own, *call, *libm;   /* "exp_f32", "exp_f32(t", "expf" */
  float (*ref)(float);
  int bound, exact_one;
  const float *edges;
  int n_edges;
} vec_case;

static void check_vec_op(core *c, const vec_case *v) {
  enum { STRIDE = 4099 };
  const int64_t count = ((INT64_C(1) << 32) + STRIDE - 1) / STRIDE + v->n_edges;
  const ir_node *x = input(c, "x", UOPC_F32, 1, SHAPE(dim(c, "n", 1, INT64_C(1) << 21)));
  const ir_node *y = ok_node(c, ir_unary(c->g, v->op, x), v->entry);
  exec *e = built(c, &y, 1, v->entry, LOWER_FUSE | v->flag);
  char libm_call[16];
  snprintf(libm_call, sizeof libm_call, "%s(", v->libm);
  assert_null(strstr(body_of(e), libm_call));
  assert_int_equal(count_of(body_of(e), v->call), 1);
  buf in, out;
  buf_new(&in, UOPC_F32, 1, (const int64_t[]){count});
  buf_new(&out, UOPC_F32, 1, (const int64_t[]){count});
  float *xs = (float *)in.mem, *ys = (float *)out.mem;
  for (int64_t i = 0; i < count - v->n_edges; i++) {
    uint32_t u = (uint32_t)(i * STRIDE);
    memcpy(&xs[i], &u, sizeof u);
  }
  memcpy(&xs[count - v->n_edges], v->edges, (size_t)v->n_edges * sizeof *v->edges);
  const uopc_tensor *ins[1] = {&in.t};
  uopc_tensor *outs[1] = {&out.t};
  uopc_error err = {0};
  assert_uopc_ok(exec_run(e, outs, 1, ins, 1, &err), err);
  for (int64_t i = 0; i < count; i++) {
    float want = v->ref(xs[i]), got = ys[i];
    int nan = isnan(want) || isnan(got);
    int exact = want == 0 || got == 0 || isinf(want) || isinf(got) || (v->exact_one && fabsf(want) == 1);
    if (nan ? !(isnan(want) && isnan(got))
            : exact ? got != want || signbit(got) != signbit(want)
                    : llabs(ordered(got) - ordered(want)) > v->bound)
      fail_msg("%s(%a) = %a, %s(%a) = %a: more than %d ulps apart", v->own, xs[i], got, v->libm, xs[i], want,
               v->bound);
  }
  buf_free(&in);
  buf_free(&out);
  exec_free(e);
}

/* LOWER_VEC_EXP: exp_f32 against libm's expf. */
static void test_vec_exp_is_within_its_bound_of_expf(void **state) {
  static const float edges[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, FLT_MAX, -FLT_MAX, 88.7228317f, 88.7228394f,
                                -87.3365479f, -103.972076f, -103.972084f};
  check_vec_op(*state, &(vec_case){IR_EXP, LOWER_VEC_EXP, "vec_exp", "exp_f32", "exp_f32(t", "expf", expf,
                                   LOWER_EXP_F32_ULPS, 0, edges, (int)(sizeof edges / sizeof *edges)});
}

/* LOWER_VEC_TANH: tanh_f32 against libm's tanhf; the edges are those of
 * exp's and the two sides of |x| = 0.625, where the polynomial gives way to
 * the exp form, a subnormal, and the first x whose tanhf is 1. */
static void test_vec_tanh_is_within_its_bound_of_tanhf(void **state) {
  static const float edges[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, FLT_MAX, -FLT_MAX, 0.625f, 0.62499994f,
                                -0.625f, 0x1p-140f, 9.01091290f};
  check_vec_op(*state, &(vec_case){IR_TANH, LOWER_VEC_TANH, "vec_tanh", "tanh_f32", "tanh_f32(t", "tanhf", tanhf,
                                   LOWER_TANH_F32_ULPS, 1, edges, (int)(sizeof edges / sizeof *edges)});
}

/* The manifest's flags line of e's cache entry (what gcc was given). */
static void expect_flags(const exec *e, const char *needle, int present, const char *what) {
  char text[1 << 16], line[1024] = "";
  if (!testutil_entry_text(uopc_program_dir(exec_program(e)), "manifest", text, sizeof text))
    fail_msg("%s: no manifest in %s", what, uopc_program_dir(exec_program(e)));
  int found = testutil_text_line(text, "flags=", line, sizeof line) ? strstr(line, needle) != NULL : -1;
  if (found != present) fail_msg("%s: expected the flags %s %s, got: %s", what, present ? "to hold" : "without", needle,
                                 found < 0 ? "no flags line" : line);
}

/* LOWER_PARALLEL: a pointwise nest, a row reduction (lanes) and a matmul in
 * rows, each of which may or may not reach LOWER_PARALLEL_WORK, are each
 * written twice, the threaded copy under `if`, compiled with -fopenmp; a
 * column reduction stays serial (its outermost loop is the reduced axis, which
 * is never split); past the threshold and below it, every output equals
 * the serial program's bit for bit (each element's operations are the same,
 * in the same order) and the interpreter's within the lanes' rounding. */
static void test_threaded_nests_equal_the_serial_program_bit_for_bit(void **state) {
  core *c = *state;
  const sym_expr *r = dim(c, "r", 1, 4096), *k = dim(c, "k", 1, 1 << 17);
  const ir_node *x = input(c, "x", UOPC_F32, 2, SHAPE(r, k)), *y = input(c, "y", UOPC_F32, 1, SHAPE(k));
  const ir_node *w = input(c, "w", UOPC_F32, 2, SHAPE(k, cst(c, 16)));
  const ir_node *half = ir_const(c->g, 0.5, UOPC_F32);
  const ir_node *outs[4] = {
      ok_node(c, ir_binary(c->g, IR_MUL, ir_binary(c->g, IR_ADD, ir_binary(c->g, IR_MUL, x, y), x), half), "chain"),
      ok_node(c, ir_reduce(c->g, IR_SUM, ir_unary(c->g, IR_EXP, x), 2u, 0), "row sums"),
      ok_node(c, ir_reduce(c->g, IR_SUM, x, 1u, 0), "column sums"),
      ok_node(c, ir_matmul(c->g, x, w), "matmul")};
  exec *serial = built(c, outs, 4, "nests_serial", LOWER_FUSE | LOWER_VEC_EXP);
  exec *threaded = built(c, outs, 4, "nests_threaded", LOWER_FUSE | LOWER_VEC_EXP | LOWER_PARALLEL);
  const char *body = body_of(threaded);
  assert_int_equal(count_of(body_of(serial), "#pragma omp"), 0);
  assert_int_equal(count_of(body, "#pragma omp parallel for schedule(static)"), 3);
  assert_int_equal(count_of(body, "/* enough work for OpenMP's threads */"), 3);
  char pointwise[64], matmul[64];
  snprintf(pointwise, sizeof pointwise, "if ((double)r * k >= %d) {", LOWER_PARALLEL_WORK);  /* its elements */
  snprintf(matmul, sizeof matmul, "if ((double)r * 16 * k >= %d) {", LOWER_PARALLEL_WORK);   /* m * n * k */
  assert_non_null(strstr(body, pointwise));
  assert_non_null(strstr(body, matmul));
  assert_non_null(strstr(exec_source(threaded), " * threads: a loop under `omp parallel for`"));
  assert_int_equal(count_of(body_of(serial), "exp_f32(t"), 2);               /* the lanes' blocks and tail */
  assert_int_equal(testutil_count_serial(body, "exp_f32(t"), 2);             /* the copies left out */
  expect_flags(serial, "-fopenmp", 0, "the serial program");
  expect_flags(threaded, "-fopenmp", 1, "the threaded program");
  const int64_t shapes[][2] = {{300, 500}, {3, 5}, {1, 70000}};   /* past, below, one row past */
  for (int s = 0; s < COUNT(shapes); s++) {
    buf in[3], got[2][4];
    buf_new(&in[0], UOPC_F32, 2, shapes[s]);
    buf_new(&in[1], UOPC_F32, 1, &shapes[s][1]);
    buf_new(&in[2], UOPC_F32, 2, (const int64_t[]){shapes[s][1], 16});
    for (int i = 0; i < 3; i++) fill(&in[i], 1.0 + i);
    const uopc_tensor *ins[3] = {&in[0].t, &in[1].t, &in[2].t};
    const int64_t out_shapes[4][2] = {{shapes[s][0], shapes[s][1]}, {shapes[s][0]}, {shapes[s][1]}, {shapes[s][0], 16}};
    const int ranks[4] = {2, 1, 1, 2};
    for (int v = 0; v < 2; v++) {
      uopc_tensor *o[4];
      uopc_error err = {0};
      for (int j = 0; j < 4; j++) {
        buf_new(&got[v][j], UOPC_F32, ranks[j], out_shapes[j]);
        o[j] = &got[v][j].t;
      }
      assert_uopc_ok(exec_run(v ? threaded : serial, o, 4, ins, 3, &err), err);
    }
    for (int j = 0; j < 4; j++) {
      if (memcmp(got[0][j].mem, got[1][j].mem, got[0][j].bytes) != 0)
        fail_msg("(%lld, %lld): output %d differs between the threaded and the serial program", (long long)shapes[s][0],
                 (long long)shapes[s][1], j);
      expect_tail_untouched(&got[1][j], "the threaded program");
      buf_free(&got[0][j]);
      buf_free(&got[1][j]);
    }
    /* 70000 f32 terms in one row: the interpreter's one-at-a-time sum and the lanes' round apart
     * by up to about 70000 * 2^-24 of the result */
    check_against_eval(c, threaded, outs, 4, in, 3, 1e-5 * (double)shapes[s][1] / 500 + 1e-5, "the threaded program");
    for (int i = 0; i < 3; i++) buf_free(&in[i]);
  }
  exec_free(serial);
  exec_free(threaded);
}

int main(void) {
#define T(name) cmocka_unit_test_setup_teardown(name, core_setup, core_teardown)
  const struct CMUnitTest tests[] = {
    T(test_a_rule_decides_what_is_stored_and_is_named),
    T(test_a_rules_wrong_decisions_are_refused),
    T(test_chain_of_5000_ops_compiles_and_runs),
    T(test_temporaries_share_space_when_lifetimes_do_not_overlap),
    T(test_groups_print_a_chain_cut),
    T(test_vec_exp_is_within_its_bound_of_expf),
    T(test_vec_tanh_is_within_its_bound_of_tanhf),
    T(test_threaded_nests_equal_the_serial_program_bit_for_bit),
  };
#undef T
  return cmocka_run_group_tests(tests, NULL, NULL);
}
