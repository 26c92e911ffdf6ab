/* test_fuse.c: the lowering's fusion rule with LOWER_FUSE (labs/core/
 * lower_fuse.c): a costly producer read by several nests is computed once
 * (the generated source is inspected), a cheap one stays fused, a broadcast
 * one is stored, and a chain of 5000 ops compiles and runs; every result is
 * checked against the interpreter (ir_eval.h). Without the flag the given
 * rule's text is unchanged: the same graphs recompute and refuse as before.
 * Then the groups' printed text (lower_program_print_groups), and
 * LOWER_VEC_EXP's exp_f32 against expf. */
#include <float.h>
#include "coreutil.h"
#include "ir_eval.h"

enum { MAX_IO = 8 };

static int count_of(const char *text, const char *needle) {
  int k = 0;
  for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle)) k++;
  return k;
}

/* The function's body: the text after the banner (which prints the graph). */
static const char *body_of(const exec *e) {
  const char *s = exec_source(e), *end = strstr(s, "*/");
  return end ? end : s;
}

static exec *built(core *c, const ir_node *const *outs, int n, const char *entry, unsigned flags) {
  exec *e = NULL;
  uopc_error err = {0};
  int rc = exec_new_flags(&e, c->g, outs, n, entry, flags, NULL, &err);
  if (rc) fail_msg("exec_new_flags '%s': expected UOPC_OK, got %s: %s", entry, uopc_error_name(rc), err.message);
  return e;
}

/* Runs e on inputs and compares each output with the interpreter's (within
 * rel, relative, for sums whose lane order rounds differently). */
static void check_against_eval(core *c, exec *e, const ir_node *const *outs, int n_out, buf *ins, int n_in,
                               double rel, const char *what) {
  const uopc_tensor *in[MAX_IO];
  uopc_tensor *o[MAX_IO], want[MAX_IO];
  buf got[MAX_IO];
  sym_binding b;
  uopc_error err = {0};
  for (int k = 0; k < n_in; k++) in[k] = &ins[k].t;
  assert_uopc_ok(exec_bind(e, in, n_in, &b, &err), err);
  for (int k = 0; k < n_out; k++) {
    int64_t shape[UOPC_MAX_RANK];
    int rank;
    assert_uopc_ok(exec_output_shape(e, k, &b, shape, &rank, &err), err);
    buf_new(&got[k], outs[k]->dtype, rank, shape);
    o[k] = &got[k].t;
  }
  assert_uopc_ok(exec_run(e, o, n_out, in, n_in, &err), err);
  assert_uopc_ok(ir_eval(c->g, outs, n_out, in, n_in, &b, want, &err), err);
  for (int k = 0; k < n_out; k++) {
    for (int64_t i = 0; i < uopc_tensor_numel(&want[k]); i++) {
      double g = uopc_tensor_get(&got[k].t, i), w = uopc_tensor_get(&want[k], i);
      if (!(fabs(g - w) <= rel * fabs(w)) && !(g != g && w != w))
        fail_msg("%s: output %d element %lld: compiled %.9g, interpreter %.9g", what, k, (long long)i, g, w);
    }
    expect_tail_untouched(&got[k], what);
    uopc_tensor_release(&want[k]);
    buf_free(&got[k]);
  }
}

static void fill(buf *b, double scale) {
  for (int64_t i = 0; i < uopc_tensor_numel(&b->t); i++) uopc_tensor_set(&b->t, i, scale * (double)(i % 17 - 8) / 8.0);
}

/* t = exp(x) read by t*2, t+1 and sum(t): with the rule, one expf. */
static void test_fanout_producer_is_computed_once(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, 4096), *m = dim(c, "m", 1, 4096);
  const ir_node *x = input(c, "x", UOPC_F32, 2, SHAPE(n, m));
  const ir_node *t = ir_unary(c->g, IR_EXP, x);
  const ir_node *outs[3] = {ir_binary(c->g, IR_MUL, t, ir_const(c->g, 2, UOPC_F32)),
                            ir_binary(c->g, IR_ADD, t, ir_const(c->g, 1, UOPC_F32)), ir_reduce(c->g, IR_SUM, t, 2u, 0)};
  for (int k = 0; k < 3; k++) ok_node(c, outs[k], "out");
  exec *given = built(c, outs, 3, "fanout_given", 0), *fused = built(c, outs, 3, "fanout_fused", LOWER_FUSE);
  int before = count_of(body_of(given), "expf("), after = count_of(body_of(fused), "expf(");
  /* The given rule: one per elementwise nest, two in the sum's (lane blocks and tail). */
  if (before != 4) fail_msg("given rule: expected 4 expf, got %d:\n%s", before, exec_source(given));
  if (after != 1) fail_msg("LOWER_FUSE: expected 1 expf, got %d:\n%s", after, exec_source(fused));
  assert_int_equal(exec_lowered(fused)->n_temps, 1);
  assert_int_equal(exec_lowered(fused)->n_kernels, 4);
  assert_non_null(strstr(exec_source(fused), " * fusion: the cost rule"));
  assert_null(strstr(exec_source(given), "fusion:"));
  buf in;
  buf_new(&in, UOPC_F32, 2, (const int64_t[]){37, 45});
  fill(&in, 2);
  check_against_eval(c, fused, outs, 3, &in, 1, 1e-5, "fanout");
  buf_free(&in);
  exec_free(given);
  exec_free(fused);
}

/* (x + 1) read twice: recomputing one add costs less than storing it. */
static void test_cheap_producer_stays_fused(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, 4096);
  const ir_node *x = input(c, "x", UOPC_F32, 1, SHAPE(n));
  const ir_node *t = ir_binary(c->g, IR_ADD, x, ir_const(c->g, 1, UOPC_F32));
  const ir_node *outs[2] = {ok_node(c, ir_binary(c->g, IR_MUL, t, t), "sq"), ok_node(c, ir_unary(c->g, IR_NEG, t), "neg")};
  exec *e = built(c, outs, 2, "cheap_fused", LOWER_FUSE);
  assert_int_equal(exec_lowered(e)->n_temps, 0);
  exec_free(e);
}

/* exp(y) of shape (m) added to x of (n, m): broadcast, so stored once
 * rather than computed n times per element. */
static void test_broadcast_producer_is_stored(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, 4096), *m = dim(c, "m", 1, 4096);
  const ir_node *x = input(c, "x", UOPC_F32, 2, SHAPE(n, m)), *y = input(c, "y", UOPC_F32, 1, SHAPE(m));
  const ir_node *out = ok_node(c, ir_binary(c->g, IR_ADD, x, ir_unary(c->g, IR_EXP, y)), "out");
  exec *given = built(c, &out, 1, "bcast_given", 0), *fused = built(c, &out, 1, "bcast_fused", LOWER_FUSE);
  assert_int_equal(exec_lowered(given)->n_temps, 0);
  assert_int_equal(exec_lowered(fused)->n_temps, 1);
  buf in[2];
  buf_new(&in[0], UOPC_F32, 2, (const int64_t[]){5, 7});
  buf_new(&in[1], UOPC_F32, 1, (const int64_t[]){7});
  fill(&in[0], 1);
  fill(&in[1], 3);
  check_against_eval(c, fused, &out, 1, in, 2, 0, "broadcast");
  buf_free(&in[0]);
  buf_free(&in[1]);
  exec_free(given);
  exec_free(fused);
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

static void expect_text(char *got, const char *want, const char *what) {
  if (strcmp(got, want) != 0) fail_msg("%s: expected\n%s\ngot\n%s", what, want, got);
  free(got);
}

/* The fan-out graph's groups, both ways: the given rule computes exp(x) in
 * every nest (its line under each), the cost rule in one nest of its own. */
static void test_groups_print_fanout_with_and_without_the_rule(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, 4096), *m = dim(c, "m", 1, 4096);
  const ir_node *x = input(c, "x", UOPC_F32, 2, SHAPE(n, m));
  const ir_node *t = ir_unary(c->g, IR_EXP, x);
  const ir_node *outs[3] = {ir_binary(c->g, IR_MUL, t, ir_const(c->g, 2, UOPC_F32)),
                            ir_binary(c->g, IR_ADD, t, ir_const(c->g, 1, UOPC_F32)), ir_reduce(c->g, IR_SUM, t, 2u, 0)};
  for (int k = 0; k < 3; k++) ok_node(c, outs[k], "out");
  expect_text(groups_of(c, outs, 3, "fanout", 0), 
              "fanout: 3 loop nests, 0 temporaries\n"
              "nest 0: out0 = %3 (an output), reads x\n"
              "  %1 = exp(%0) : f32[n, m]\n"
              "  %2 = const(2) : f32[]\n"
              "  %3 = mul(%1, %2) : f32[n, m]\n"
              "nest 1: out1 = %5 (an output), reads x\n"
              "  %1 = exp(%0) : f32[n, m]\n"
              "  %4 = const(1) : f32[]\n"
              "  %5 = add(%1, %4) : f32[n, m]\n"
              "nest 2: out2 = %6 (an output), reads x\n"
              "  %1 = exp(%0) : f32[n, m]\n"
              "  %6 = sum(%1, axes=[1]) : f32[n]\n"
              "scratch bytes: 0 (no temporaries)\n", "given rule");
  expect_text(groups_of(c, outs, 3, "fanout", LOWER_FUSE), 
              "fanout: 4 loop nests, 1 temporary (LOWER_FUSE)\n"
              "nest 0: tmp0 = %1 (cost rule: 8 ops x (3 reads - 1) > 4), reads x\n"
              "  %1 = exp(%0) : f32[n, m]\n"
              "nest 1: out0 = %3 (an output), reads tmp0\n"
              "  %2 = const(2) : f32[]\n"
              "  %3 = mul(%1, %2) : f32[n, m]\n"
              "nest 2: out1 = %5 (an output), reads tmp0\n"
              "  %4 = const(1) : f32[]\n"
              "  %5 = add(%1, %4) : f32[n, m]\n"
              "nest 3: out2 = %6 (an output), reads tmp0\n"
              "  %6 = sum(%1, axes=[1]) : f32[n]\n"
              "scratch: tmp0 at 0, live from nest 0 to nest 3\n"
              "scratch bytes: (m*(n*4) + 63)//64*64\n", "LOWER_FUSE");
}

/* A row softmax: exp(x - max) is read by the sum's nest and the output's
 * (stored by the cost rule); the sum takes the max's place, whose last
 * reader, the exp nest, ran before it. */
static void test_groups_print_softmax_plan(void **state) {
  core *c = *state;
  const sym_expr *n = dim(c, "n", 1, 4096), *m = dim(c, "m", 1, 4096);
  const ir_node *x = input(c, "x", UOPC_F32, 2, SHAPE(n, m));
  const ir_node *t = ir_unary(c->g, IR_EXP, ir_binary(c->g, IR_SUB, x, ir_reduce(c->g, IR_MAX, x, 2u, 1)));
  const ir_node *y = ok_node(c, ir_binary(c->g, IR_DIV, t, ir_reduce(c->g, IR_SUM, t, 2u, 1)), "softmax");
  expect_text(groups_of(c, &y, 1, "softmax", LOWER_FUSE), 
              "softmax: 4 loop nests, 3 temporaries (LOWER_FUSE)\n"
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
              "scratch bytes: (m*(n*4) + 63)//64*64 + (n*4 + 63)//64*64\n", "softmax");
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

/* LOWER_VEC_EXP: exp_f32 against libm's expf on every 4099th f32 bit
 * pattern (all signs and exponents, subnormals, NaNs) and the edges: within
 * LOWER_EXP_F32_ULPS where both are finite and nonzero, equal where either
 * is 0 or inf (overflow and underflow where expf has them), NaN for NaN.
 * bench/exp_sweep.c runs every pattern. */
static void test_vec_exp_is_within_its_bound_of_expf(void **state) {
  core *c = *state;
  enum { STRIDE = 4099, EDGES = 12 };
  const int64_t count = ((INT64_C(1) << 32) + STRIDE - 1) / STRIDE + EDGES;
  const ir_node *x = input(c, "x", UOPC_F32, 1, SHAPE(dim(c, "n", 1, INT64_C(1) << 21)));
  const ir_node *y = ok_node(c, ir_unary(c->g, IR_EXP, x), "exp");
  exec *e = built(c, &y, 1, "vec_exp", LOWER_FUSE | LOWER_VEC_EXP);
  assert_null(strstr(body_of(e), "expf("));
  assert_int_equal(count_of(body_of(e), "exp_f32(t"), 1);
  buf in, out;
  buf_new(&in, UOPC_F32, 1, (const int64_t[]){count});
  buf_new(&out, UOPC_F32, 1, (const int64_t[]){count});
  float *xs = (float *)in.mem, *ys = (float *)out.mem;
  const float edges[EDGES] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, FLT_MAX, -FLT_MAX, 88.7228317f, 88.7228394f,
                              -87.3365479f, -103.972076f, -103.972084f};
  for (int64_t i = 0; i < count - EDGES; i++) {
    uint32_t u = (uint32_t)(i * STRIDE);
    memcpy(&xs[i], &u, sizeof u);
  }
  memcpy(&xs[count - EDGES], edges, sizeof edges);
  const uopc_tensor *ins[1] = {&in.t};
  uopc_tensor *outs[1] = {&out.t};
  uopc_error err = {0};
  assert_uopc_ok(exec_run(e, outs, 1, ins, 1, &err), err);
  for (int64_t i = 0; i < count; i++) {
    float want = expf(xs[i]), got = ys[i];
    int nan = isnan(want) || isnan(got), exact = want == 0 || got == 0 || isinf(want) || isinf(got);
    if (nan ? !(isnan(want) && isnan(got))
            : exact ? got != want : llabs(ordered(got) - ordered(want)) > LOWER_EXP_F32_ULPS)
      fail_msg("exp_f32(%a) = %a, expf %a: more than %d ulps apart", xs[i], got, want, LOWER_EXP_F32_ULPS);
  }
  buf_free(&in);
  buf_free(&out);
  exec_free(e);
}

int main(void) {
#define T(name) cmocka_unit_test_setup_teardown(name, core_setup, core_teardown)
  const struct CMUnitTest tests[] = {
    T(test_fanout_producer_is_computed_once),
    T(test_cheap_producer_stays_fused),
    T(test_broadcast_producer_is_stored),
    T(test_chain_of_5000_ops_compiles_and_runs),
    T(test_temporaries_share_space_when_lifetimes_do_not_overlap),
    T(test_groups_print_fanout_with_and_without_the_rule),
    T(test_groups_print_softmax_plan),
    T(test_groups_print_a_chain_cut),
    T(test_vec_exp_is_within_its_bound_of_expf),
  };
#undef T
  return cmocka_run_group_tests(tests, NULL, NULL);
}
