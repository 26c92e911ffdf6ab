/* test_vcache.c: the guarded variant cache for graphs (lab 23.2, given
 * code), against eager references computed here in f32. Counters, error
 * codes and explain texts are exact. Outputs are heads of poisoned buffers,
 * so a write past the end is caught too. tests/broken/23.2.mk builds the
 * cache without the guard of a constant extent, and
 * test_vcache_length_7_does_not_reuse_the_length_1_variant must fail. */
#include "vcache.h"
#include "testutil.h"

enum { TAIL = 8 };
static const double POISON = -12345.0;

/* ---- Tensors: a view of arange(total) * 0.5 - 3, and a poisoned output. */

typedef struct buf { uopc_tensor base, view; } buf;

static void input(buf *b, int64_t total, int64_t start, int64_t step) {
  uopc_error err = {0};
  memset(b, 0, sizeof *b);
  assert_uopc_ok(uopc_tensor_empty(&b->base, UOPC_F32, 1, &total, &err), err);
  for (int64_t i = 0; i < total; i++) uopc_tensor_set(&b->base, i, 0.5 * (double)i - 3.0);
  assert_uopc_ok(uopc_tensor_slice(&b->view, &b->base, 0, start, UOPC_SLICE_NONE, step, &err), err);
}

static void output(buf *b, int64_t n, int64_t offset) {
  uopc_error err = {0};
  int64_t size = offset + n + TAIL;
  memset(b, 0, sizeof *b);
  assert_uopc_ok(uopc_tensor_empty(&b->base, UOPC_F32, 1, &size, &err), err);
  for (int64_t i = 0; i < size; i++) uopc_tensor_set(&b->base, i, POISON);
  assert_uopc_ok(uopc_tensor_slice(&b->view, &b->base, 0, offset, offset + n, 1, &err), err);
}

static void release(buf *b) {
  uopc_tensor_release(&b->view);
  uopc_tensor_release(&b->base);
}

/* out[i] == want(i) exactly, and the poison after out untouched. */
static void check_out(const buf *out, const char *what, float (*want)(const uopc_tensor *const *, int64_t),
                      const uopc_tensor *const *in) {
  int64_t n = uopc_tensor_numel(&out->view);
  for (int64_t i = 0; i < n; i++) {
    double got = uopc_tensor_get(&out->view, i), w = (double)want(in, i);
    if (got != w) fail_msg("%s: index %lld of %lld expected %.9g, got %.9g", what, (long long)i, (long long)n, w, got);
  }
  for (int64_t i = out->view.offset + n; i < out->view.offset + n + TAIL; i++)
    if (uopc_tensor_get(&out->base, i) != POISON) fail_msg("%s: written past the end at %lld", what, (long long)i);
}

static float at(const uopc_tensor *t, int64_t i) {   /* broadcast of a length-1 input */
  return (float)uopc_tensor_get(t, t->shape[0] == 1 ? 0 : i);
}
static float want_mul_add(const uopc_tensor *const *in, int64_t i) { return at(in[0], i) * at(in[1], i) + 1.0f; }
static float want_affine(const uopc_tensor *const *in, int64_t i) { return at(in[0], i) * 2.0f + 1.0f; }
static float want_y_double(const uopc_tensor *const *in, int64_t i) { return at(in[1], i) * 2.0f; }
static float want_shift(const uopc_tensor *const *in, int64_t i) { return at(in[0], i + 1) * 2.0f; }

/* ---- The ops. Builders record errors in g; the cache reads them. */

static int build_mul_add(void *ctx, ir_graph *g, const ir_node *const *in, const vcache_spec *spec,
                         const ir_node **out, uopc_error *err) {
  (void)ctx, (void)spec, (void)err;
  out[0] = ir_binary(g, IR_ADD, ir_binary(g, IR_MUL, in[0], in[1]), ir_const(g, 1.0, UOPC_F32));
  return UOPC_OK;
}

static int build_affine(void *ctx, ir_graph *g, const ir_node *const *in, const vcache_spec *spec,
                        const ir_node **out, uopc_error *err) {
  (void)ctx, (void)spec, (void)err;
  out[0] = ir_binary(g, IR_ADD, ir_binary(g, IR_MUL, in[0], ir_const(g, 2.0, UOPC_F32)), ir_const(g, 1.0, UOPC_F32));
  return UOPC_OK;
}

/* Two outputs of two independent inputs: equal lengths are not needed. */
static int build_two(void *ctx, ir_graph *g, const ir_node *const *in, const vcache_spec *spec,
                     const ir_node **out, uopc_error *err) {
  build_affine(ctx, g, in, spec, out, err);
  out[1] = ir_binary(g, IR_MUL, in[1], ir_const(g, 2.0, UOPC_F32));
  return UOPC_OK;
}

/* out = x[1:] * 2: an output extent the graph computes (n - 1). */
static int build_shift(void *ctx, ir_graph *g, const ir_node *const *in, const vcache_spec *spec,
                       const ir_node **out, uopc_error *err) {
  (void)ctx, (void)spec, (void)err;
  out[0] = ir_binary(g, IR_MUL, ir_slice(g, in[0], 0, 1, UOPC_SLICE_NONE, 1), ir_const(g, 2.0, UOPC_F32));
  return UOPC_OK;
}

static vcache *new_cache(const char *op, vcache_build_fn build, int n_inputs, int n_outputs, const vcache_policy *p) {
  static vcache c;
  uopc_error err = {0};
  vcache_options o = {.op = op, .n_inputs = n_inputs, .n_outputs = n_outputs, .inputs = {"x", "y"},
                      .axes = {"n", "m"}, .build = build};
  if (p) o.policy = *p;
  uopc_counters_reset();
  assert_uopc_ok(vcache_init(&c, &o, &err), err);
  return &c;
}

/* One call of a one-output op on inputs ins into a fresh output of length
 * n; checks the values and returns the variant that ran. */
static const vcache_variant *call1(vcache *c, const uopc_tensor *const *ins, int64_t n,
                                   float (*want)(const uopc_tensor *const *, int64_t)) {
  buf out;
  uopc_error err = {0};
  vcache_variant *v = NULL;
  output(&out, n, 0);
  uopc_tensor *outs[] = {&out.view};
  uint64_t before = uopc_tensor_version(&out.view), in_before = uopc_tensor_version(ins[0]);
  assert_uopc_ok(vcache_choose(c, outs, 1, ins, c->opts.n_inputs, &v, &err), err);
  assert_uopc_ok(vcache_run(c, v, &err), err);
  check_out(&out, v->entry, want, ins);
  /* The run wrote out: its storage version moves once (23.3 reads versions); the input's stays. */
  assert_int_equal(uopc_tensor_version(&out.view), before + 1);
  assert_int_equal(uopc_tensor_version(ins[0]), in_before);
  release(&out);
  return v;
}

/* affine on a contiguous input of length n. */
static const vcache_variant *affine(vcache *c, int64_t n) {
  buf x;
  input(&x, n, 0, 1);
  const uopc_tensor *ins[] = {&x.view};
  const vcache_variant *v = call1(c, ins, n, want_affine);
  release(&x);
  return v;
}

static void assert_counts(const vcache *c, int64_t built, int64_t checks, int64_t failures) {
  if (c->stats.variants_built != built || c->stats.guard_checks != checks || c->stats.guard_failures != failures)
    fail_msg("expected variants built=%lld guard checks=%lld guard failures=%lld, got %lld %lld %lld",
             (long long)built, (long long)checks, (long long)failures, (long long)c->stats.variants_built,
             (long long)c->stats.guard_checks, (long long)c->stats.guard_failures);
  assert_int_equal(uopc_counter_get(VCACHE_C_VARIANTS_BUILT), built);
  assert_int_equal(uopc_counter_get(VCACHE_C_GUARD_CHECKS), checks);
  assert_int_equal(uopc_counter_get(VCACHE_C_GUARD_FAILURES), failures);
}

static void explain(const vcache *c, char *text, size_t size) {
  uopc_error err = {0};
  assert_uopc_ok(vcache_explain(c, text, size, &err), err);
}

static void guards_contain(const vcache_variant *v, const char *what) {
  char text[4096];
  guard_set_describe(&v->guards, "; ", text, sizeof text);
  assert_contains(text, what);
}

/* ---- Equal extents. */

/* x * y needs equal lengths: an equal call gets one dim and a guard saying
 * so; an unequal one is the IR's broadcast error, and nothing is built. */
static void test_vcache_equal_extents_share_one_dim_under_a_guard(void **state) {
  (void)state;
  vcache *c = new_cache("muladd", build_mul_add, 2, 1, NULL);
  buf x, y, y7, out;
  uopc_error err = {0};
  input(&x, 5, 0, 1);
  input(&y, 5, 0, 1);
  const uopc_tensor *ins[] = {&x.view, &y.view};
  const vcache_variant *v = call1(c, ins, 5, want_mul_add);
  assert_string_equal(v->entry, "muladd_fd0_fd0");
  guards_contain(v, "n = x.shape[0] in [0, 16777216]; x is contiguous; y.shape[0] == x.shape[0]");
  assert_counts(c, 1, 1, 0);
  input(&y7, 7, 0, 1);
  output(&out, 5, 0);
  uopc_tensor *outs[] = {&out.view};
  const uopc_tensor *unequal[] = {&x.view, &y7.view};
  assert_uopc_code(vcache_call(c, outs, 1, unequal, 2, &err), UOPC_E_INVALID, err);
  assert_contains(err.message, "op 'muladd': the graph for this call: mul: shapes (n) and (m) cannot broadcast");
  assert_counts(c, 1, 2, 1);
  char text[VCACHE_EXPLAIN_MAX];
  explain(c, text, sizeof text);
  assert_contains(text, "muladd_fd0_fd0 rejected: guard 'y.shape[0] == x.shape[0]' failed: y.shape[0] = 7 differs"
                        " from x.shape[0] = 5\n");
  assert_true(uopc_tensor_get(&out.view, 0) == POISON);
  release(&out), release(&y7), release(&y), release(&x);
  vcache_fini(c);
}

/* Independent outputs: unequal lengths take a second variant, and each
 * later call the variant of its own pattern. */
static void test_vcache_unequal_extents_take_another_variant(void **state) {
  (void)state;
  vcache *c = new_cache("two", build_two, 2, 2, NULL);
  static const int64_t lengths[][2] = {{5, 5}, {5, 7}, {6, 6}, {6, 8}};
  static const char *const entries[] = {"two_fd0_fd0", "two_fd0_fd1", "two_fd0_fd0", "two_fd0_fd1"};
  for (int k = 0; k < 4; k++) {
    buf x, y, o0, o1;
    uopc_error err = {0};
    vcache_variant *v;
    input(&x, lengths[k][0], 0, 1);
    input(&y, lengths[k][1], 0, 1);
    output(&o0, lengths[k][0], 0);
    output(&o1, lengths[k][1], 0);
    const uopc_tensor *ins[] = {&x.view, &y.view};
    uopc_tensor *outs[] = {&o0.view, &o1.view};
    assert_uopc_ok(vcache_choose(c, outs, 2, ins, 2, &v, &err), err);
    assert_uopc_ok(vcache_run(c, v, &err), err);
    assert_string_equal(v->entry, entries[k]);
    check_out(&o0, v->entry, want_affine, ins);
    check_out(&o1, v->entry, want_y_double, ins);
    release(&o1), release(&o0), release(&y), release(&x);
  }
  guards_contain(c->variants[1], "m = y.shape[0] in [0, 16777216]; y is contiguous; out0.shape[0] == x.shape[0]");
  assert_counts(c, 2, 6, 2);
  assert_int_equal(c->variants[0]->calls, 2);
  assert_int_equal(c->variants[1]->calls, 2);
  assert_int_equal(uopc_counter_get("calls two_fd0_fd1"), 2);
  vcache_fini(c);
}

/* ---- The 0/1 specialisations. */

static void test_vcache_pins_0_and_1_and_keeps_one_general_variant(void **state) {
  (void)state;
  vcache_policy p = {.pin_01 = 1};
  vcache *c = new_cache("affine", build_affine, 1, 1, &p);
  const vcache_variant *one = affine(c, 1);
  assert_string_equal(one->entry, "affine_fk1");
  guards_contain(one, "x.shape[0] == 1");
  assert_int_equal(exec_lowered(one->exec)->n_dims, 0);   /* the code has no n at all */
  const vcache_variant *general = affine(c, 7);
  assert_string_equal(general->entry, "affine_fd0");
  guards_contain(general, "n = x.shape[0] in [2, 16777216]");
  assert_ptr_equal(affine(c, 31), general);
  assert_string_equal(affine(c, 0)->entry, "affine_fk0");
  assert_ptr_equal(affine(c, 1), one);
  /* checks: 1; 1 failure + 1; 2 (one failure); 2 failures + 1; 1 */
  assert_counts(c, 3, 9, 4);
  vcache_fini(c);
}

/* sum(x) of a length-n input, into a rank-0 output; the variant that ran.
 * The values are halves: every order of addition gives the same sum. */
static const vcache_variant *total(vcache *c, int64_t n) {
  buf x, out;
  uopc_error err = {0};
  vcache_variant *v;
  int64_t size = 1 + TAIL;
  input(&x, n, 0, 1);
  memset(&out, 0, sizeof out);
  assert_uopc_ok(uopc_tensor_empty(&out.base, UOPC_F32, 1, &size, &err), err);
  for (int64_t i = 0; i < size; i++) uopc_tensor_set(&out.base, i, POISON);
  assert_uopc_ok(uopc_tensor_select(&out.view, &out.base, 0, 0, &err), err);
  const uopc_tensor *ins[] = {&x.view};
  uopc_tensor *outs[] = {&out.view};
  assert_uopc_ok(vcache_choose(c, outs, 1, ins, 1, &v, &err), err);
  if (n != 1 && v->spec.args[1].shape[0].dim < 0)
    fail_msg("a length-%lld call chose %s, whose code sums exactly %lld elements", (long long)n, v->entry,
             (long long)v->spec.args[1].shape[0].value);
  assert_uopc_ok(vcache_run(c, v, &err), err);
  float want = 0;
  for (int64_t i = 0; i < n; i++) want += (float)uopc_tensor_get(&x.view, i);
  if (uopc_tensor_get(&out.view, 0) != (double)want)
    fail_msg("%s: sum of %lld expected %.9g, got %.9g", v->entry, (long long)n, (double)want,
             uopc_tensor_get(&out.view, 0));
  release(&out), release(&x);
  return v;
}

static int build_total(void *ctx, ir_graph *g, const ir_node *const *in, const vcache_spec *spec,
                       const ir_node **out, uopc_error *err) {
  (void)ctx, (void)spec, (void)err;
  out[0] = ir_reduce(g, IR_SUM, in[0], 1u, 0);
  return UOPC_OK;
}

/* A length-7 call must not choose the variant whose extent is the constant
 * 1: its code sums one element, and its output, a scalar, has no extent to
 * give the call away. The broken build without the constant's guard fails
 * here, at the decision, before anything runs. */
static void test_vcache_length_7_does_not_reuse_the_length_1_variant(void **state) {
  (void)state;
  vcache_policy p = {.pin_01 = 1};
  vcache *c = new_cache("total", build_total, 1, 1, &p);
  assert_string_equal(total(c, 1)->entry, "total_fk1");
  assert_string_equal(total(c, 7)->entry, "total_fd0");
  assert_counts(c, 2, 3, 1);
  vcache_fini(c);
}

/* y of length 1 broadcasts only because its extent is the constant 1. */
static void test_vcache_length_1_input_broadcasts_through_its_pin(void **state) {
  (void)state;
  vcache_policy p = {.pin_01 = 1};
  vcache *c = new_cache("muladd", build_mul_add, 2, 1, &p);
  buf x, y;
  input(&x, 9, 0, 1);
  input(&y, 1, 0, 1);
  const uopc_tensor *ins[] = {&x.view, &y.view};
  assert_string_equal(call1(c, ins, 9, want_mul_add)->entry, "muladd_fd0_fk1");
  release(&y), release(&x);
  vcache_fini(c);
}

/* ---- Divisibility, layout, alignment. */

static void test_vcache_divisibility_is_a_guard(void **state) {
  (void)state;
  vcache_policy p = {.multiple = 16};
  vcache *c = new_cache("affine", build_affine, 1, 1, &p);
  const vcache_variant *m16 = affine(c, 32);
  assert_string_equal(m16->entry, "affine_fd0m16");
  guards_contain(m16, "n = x.shape[0] in [0, 16777216]; n = x.shape[0] is a multiple of 16");
  assert_ptr_equal(affine(c, 48), m16);
  const vcache_variant *any = affine(c, 33);
  assert_string_equal(any->entry, "affine_fd0");
  char text[VCACHE_EXPLAIN_MAX];
  explain(c, text, sizeof text);
  assert_contains(text, "guard 'n = x.shape[0] is a multiple of 16' failed: n = 33 is not a multiple of 16");
  assert_ptr_equal(affine(c, 17), any);
  assert_ptr_equal(affine(c, 64), m16);
  assert_counts(c, 2, 7, 2);
  vcache_fini(c);
}

static void test_vcache_strided_view_takes_the_strided_variant(void **state) {
  (void)state;
  vcache *c = new_cache("affine", build_affine, 1, 1, NULL);
  const vcache_variant *packed = affine(c, 32);
  buf x, r;
  input(&x, 64, 0, 2);                /* arange(64)[::2] */
  const uopc_tensor *ins[] = {&x.view};
  const vcache_variant *strided = call1(c, ins, 32, want_affine);
  assert_string_equal(strided->entry, "affine_fd0s");
  guards_contain(strided, "x_s0 = x.strides[0] in [-1073741824, 1073741824]");
  char text[VCACHE_EXPLAIN_MAX];
  explain(c, text, sizeof text);
  assert_contains(text, "guard 'x is contiguous' failed: x is not contiguous (strides (2) for shape (32))");
  input(&r, 20, UOPC_SLICE_NONE, -1);  /* reversed: a negative stride is only a value */
  const uopc_tensor *rev[] = {&r.view};
  assert_ptr_equal(call1(c, rev, 20, want_affine), strided);
  assert_ptr_equal(affine(c, 10), packed);
  assert_counts(c, 2, 6, 2);
  release(&r), release(&x);
  vcache_fini(c);
}

static void test_vcache_misaligned_view_takes_another_variant(void **state) {
  (void)state;
  vcache_policy p = {.align = 64};
  vcache *c = new_cache("affine", build_affine, 1, 1, &p);
  const vcache_variant *aligned = affine(c, 32);
  assert_string_equal(aligned->entry, "affine_fd0a64_o0a64");
  guards_contain(aligned, "out0 is aligned to 64 bytes; x is aligned to 64 bytes");
  buf x;
  input(&x, 33, 1, 1);                /* 4 bytes past a 64-byte boundary */
  const uopc_tensor *ins[] = {&x.view};
  assert_string_equal(call1(c, ins, 32, want_affine)->entry, "affine_fd0_o0a64");
  char text[VCACHE_EXPLAIN_MAX];
  explain(c, text, sizeof text);
  assert_contains(text, "guard 'x is aligned to 64 bytes' failed: x is not aligned to 64 bytes (element 0 is 4 bytes"
                        " past a 64-byte boundary)");
  assert_ptr_equal(affine(c, 48), aligned);
  release(&x);
  vcache_fini(c);
}

/* ---- Outputs: aliasing, shapes, dtypes are errors, found before compiling. */

static void test_vcache_output_overlapping_an_input_is_refused(void **state) {
  (void)state;
  vcache *c = new_cache("affine", build_affine, 1, 1, NULL);
  uopc_error err = {0};
  buf x;
  input(&x, 16, 0, 1);
  const uopc_tensor *ins[] = {&x.view};
  uopc_tensor *outs[] = {&x.view};
  assert_uopc_code(vcache_call(c, outs, 1, ins, 1, &err), UOPC_E_ALIAS, err);
  assert_contains(err.message, "output 'out0' cannot serve this call: guard 'out0 and x do not overlap' failed: out0 and"
                               " x overlap");
  assert_counts(c, 0, 0, 0);
  affine(c, 16);
  assert_uopc_code(vcache_call(c, outs, 1, ins, 1, &err), UOPC_E_ALIAS, err);
  assert_counts(c, 1, 2, 1);
  assert_true(uopc_tensor_get(&x.view, 3) == -1.5);   /* x untouched */
  release(&x);
  vcache_fini(c);
}

static void test_vcache_wrong_outputs_are_errors(void **state) {
  (void)state;
  vcache *c = new_cache("affine", build_affine, 1, 1, NULL);
  uopc_error err = {0};
  buf x, o7;
  uopc_tensor o64 = {0};
  int64_t n = 5;
  input(&x, 5, 0, 1);
  output(&o7, 7, 0);
  assert_uopc_ok(uopc_tensor_empty(&o64, UOPC_F64, 1, &n, &err), err);
  const uopc_tensor *ins[] = {&x.view};
  uopc_tensor *wrong_len[] = {&o7.view}, *wrong_dtype[] = {&o64};
  assert_uopc_code(vcache_call(c, wrong_len, 1, ins, 1, &err), UOPC_E_BOUNDS, err);
  assert_contains(err.message, "guard 'out0.shape[0] == x.shape[0]' failed: out0.shape[0] = 7 differs from"
                               " x.shape[0] = 5");
  assert_uopc_code(vcache_call(c, wrong_dtype, 1, ins, 1, &err), UOPC_E_DTYPE, err);
  assert_contains(err.message, "guard 'out0 is f32' failed: out0 has dtype f64, not f32");
  assert_counts(c, 0, 0, 0);
  uopc_tensor_release(&o64);
  release(&o7), release(&x);
  vcache_fini(c);
}

/* An output extent the graph computes is a guard over an expression. */
static void test_vcache_output_extent_is_an_expression_guard(void **state) {
  (void)state;
  vcache_policy p = {.pin_01 = 1};
  vcache *c = new_cache("shift", build_shift, 1, 1, &p);
  buf x, o;
  uopc_error err = {0};
  input(&x, 12, 0, 1);
  const uopc_tensor *ins[] = {&x.view};
  const vcache_variant *v = call1(c, ins, 11, want_shift);
  guards_contain(v, "out0.shape[0] == n - 1");
  output(&o, 12, 0);
  uopc_tensor *outs[] = {&o.view};
  assert_uopc_code(vcache_call(c, outs, 1, ins, 1, &err), UOPC_E_BOUNDS, err);
  assert_contains(err.message, "guard 'out0.shape[0] == n - 1' failed: out0.shape[0] = 12, but n - 1 = 11 on this call");
  release(&o), release(&x);
  vcache_fini(c);
}

/* ---- The limit and its policy. */

static void limit_run(vcache *c, const int64_t *lengths, int count) {
  for (int k = 0; k < count; k++) affine(c, lengths[k]);
}

static void test_vcache_limit_runs_the_general_variant(void **state) {
  (void)state;
  vcache_policy p = {.exact_sizes = 1, .max_variants = 3};
  vcache *c = new_cache("affine", build_affine, 1, 1, &p);
  static const int64_t lengths[] = {16, 32, 48, 64, 16};
  limit_run(c, lengths, 5);
  assert_string_equal(c->variants[0]->entry, "affine_fk16");
  assert_string_equal(c->variants[1]->entry, "affine_fk32");
  assert_string_equal(c->variants[2]->entry, "affine_fd0s");   /* general: any layout */
  assert_true(c->variants[2]->spec.general);
  assert_int_equal(c->stats.limit_hits, 2);   /* 48 and 64 wanted a variant of their own */
  /* checks: 1; 1 failure + 1; 2 failures + 1; 2 failures + 1; 1 */
  assert_counts(c, 3, 10, 5);
  affine(c, 48);
  char text[VCACHE_EXPLAIN_MAX];
  explain(c, text, sizeof text);
  assert_contains(text, "ran affine_fd0s, variant 3 of 3\n");
  assert_contains(text, "  a new variant was wanted past the variant limit (3): ran the general variant\n");
  vcache_fini(c);
}

static void test_vcache_limit_fails_by_option(void **state) {
  (void)state;
  vcache_policy p = {.exact_sizes = 1, .max_variants = 3, .on_limit = VCACHE_LIMIT_FAIL};
  vcache *c = new_cache("affine", build_affine, 1, 1, &p);
  static const int64_t lengths[] = {16, 32};
  limit_run(c, lengths, 2);
  buf x, out;
  uopc_error err = {0};
  input(&x, 48, 0, 1);
  output(&out, 48, 0);
  const uopc_tensor *ins[] = {&x.view};
  uopc_tensor *outs[] = {&out.view};
  assert_uopc_code(vcache_call(c, outs, 1, ins, 1, &err), UOPC_E_LIMIT, err);
  assert_contains(err.message, "op 'affine': the call (x: f32 (48)) needs a new variant, but the variant limit (3,"
                               " general ones included) is reached");
  assert_true(uopc_tensor_get(&out.view, 0) == POISON);
  char text[VCACHE_EXPLAIN_MAX];
  explain(c, text, sizeof text);
  assert_contains(text, "call 3 (x: f32 (48)): no variant ran: UOPC_E_LIMIT: ");
  assert_contains(text, "  a new variant was wanted past the variant limit (3): refused\n");
  assert_counts(c, 2, 5, 3);
  limit_run(c, lengths, 2);
  release(&out), release(&x);
  vcache_fini(c);
}

/* ---- The index and the run path. */

/* With exact sizes each variant pins x.shape[0]; the index must give the
 * scan's answer and counts on every call, as variants are added, for
 * lengths with and without a variant, and views at any offset. A strided
 * view of a length that has a variant pins the same value again: the index
 * retires, and calls scan. */
static void test_vcache_index_agrees_with_scan(void **state) {
  (void)state;
  vcache_policy p = {.exact_sizes = 1, .max_variants = 12};
  vcache *c = new_cache("affine", build_affine, 1, 1, &p);
  uopc_error err = {0};
  srand(2325);
  for (int i = 0; i < 300; i++) {
    buf x, out;
    int64_t n = 1 + rand() % 20, step = 1;
    input(&x, n + rand() % 2, rand() % 4 ? 0 : 1, step);
    n = x.view.shape[0];
    output(&out, n, 0);
    const uopc_tensor *ins[] = {&x.view}, *args[] = {&out.view, &x.view};
    uopc_tensor *outs[] = {&out.view};
    guard_call call;
    assert_uopc_ok(guard_call_init(&call, 2, args, &err), err);
    vcache_stats s0 = c->stats;
    int scan = -7, indexed = -7;
    assert_uopc_ok(vcache_select(c, &call, &scan, &err), err);
    vcache_stats s1 = c->stats;
    assert_uopc_ok(vcache_index_select(c, &call, &indexed, &err), err);
    if (scan != indexed || s1.guard_checks - s0.guard_checks != c->stats.guard_checks - s1.guard_checks ||
        s1.guard_failures - s0.guard_failures != c->stats.guard_failures - s1.guard_failures)
      fail_msg("call %d (n = %lld, stride %lld, %d variants): the scan gives %d, the index %d, or their counts"
               " differ", i, (long long)n, (long long)step, c->count, scan, indexed);
    vcache_variant *v;
    int before = vcache_n_specialised(c);
    assert_uopc_ok(vcache_choose(c, outs, 1, ins, 1, &v, &err), err);
    assert_int_equal(c->last.n_rejected, scan >= 0 ? scan : before);
    if (scan >= 0) assert_ptr_equal(v, c->variants[scan]);
    assert_uopc_ok(vcache_run(c, v, &err), err);
    check_out(&out, v->entry, want_affine, ins);
    release(&out), release(&x);
  }
  assert_true(c->index.usable);
  assert_int_equal(vcache_n_specialised(c), 11);   /* one place kept for the general variant */
  vcache_fini(c);
  c = new_cache("affine", build_affine, 1, 1, &p);
  buf x;
  input(&x, 10, 0, 2);
  const uopc_tensor *strided[] = {&x.view};
  affine(c, 5);
  call1(c, strided, 5, want_affine);
  assert_false(c->index.usable);
  release(&x);
  vcache_fini(c);
  c = new_cache("affine", build_affine, 1, 1, NULL);   /* a dim pins nothing: the index retires */
  affine(c, 5);
  int index;
  assert_uopc_code(vcache_index_select(c, &c->last.call, &index, &err), UOPC_E_UNSUPPORTED, err);
  vcache_fini(c);
}

static int build_max(void *ctx, ir_graph *g, const ir_node *const *in, const vcache_spec *spec, const ir_node **out,
                     uopc_error *err) {
  (void)ctx, (void)spec, (void)err;
  out[0] = ir_reduce(g, IR_MAX, in[0], 1u, 0);
  return UOPC_OK;
}

/* out = x - sum(x): the sum is a temporary in the program's scratch. */
static int build_centre(void *ctx, ir_graph *g, const ir_node *const *in, const vcache_spec *spec,
                        const ir_node **out, uopc_error *err) {
  (void)ctx, (void)spec, (void)err;
  out[0] = ir_binary(g, IR_SUB, in[0], ir_reduce(g, IR_SUM, in[0], 1u, 1));
  return UOPC_OK;
}

static float want_centre(const uopc_tensor *const *in, int64_t i) {
  float sum = 0;
  for (int64_t k = 0; k < in[0]->shape[0]; k++) sum += at(in[0], k);
  return at(in[0], i) - sum;
}

/* A call runs its program without exec_run's binder (the guards checked the
 * call); what no guard states is still checked: a max over an empty axis is
 * refused, and temporaries get their scratch, growing with the call. */
static void test_vcache_run_path_keeps_the_checks_no_guard_makes(void **state) {
  (void)state;
  vcache *c = new_cache("vmax", build_max, 1, 1, NULL);
  buf x, empty;
  uopc_error err = {0};
  uopc_tensor out = {0};
  assert_uopc_ok(uopc_tensor_empty(&out, UOPC_F32, 0, NULL, &err), err);
  input(&x, 6, 0, 1);
  input(&empty, 0, 0, 1);
  const uopc_tensor *ins[] = {&x.view}, *none[] = {&empty.view};
  uopc_tensor *outs[] = {&out};
  assert_uopc_ok(vcache_call(c, outs, 1, ins, 1, &err), err);
  assert_true(uopc_tensor_get(&out, 0) == 0.5 * 5 - 3.0);
  assert_uopc_code(vcache_call(c, outs, 1, none, 1, &err), UOPC_E_BOUNDS, err);
  assert_contains(err.message, "over an empty axis (extent 0)");
  assert_int_equal(c->count, 1);   /* the same variant, refused at run time */
  release(&empty), release(&x);
  uopc_tensor_release(&out);
  vcache_fini(c);
  c = new_cache("centre", build_centre, 1, 1, NULL);
  for (int64_t n = 4; n <= 4096; n *= 8) {
    input(&x, n, 0, 1);
    const uopc_tensor *in1[] = {&x.view};
    call1(c, in1, n, want_centre);
    release(&x);
  }
  assert_int_equal(c->count, 1);
  vcache_fini(c);
}

/* ---- An op with its own kernels: out = 2 * x, through hooks. */

/* Specialised variants pin an even length and take packed, disjoint
 * vectors; the general one takes any strides. */
static int twice_contract(void *ctx, const vcache *c, vcache_variant *v, uopc_error *err) {
  (void)ctx;
  static const char *const names[] = {"out", "x"};
  const guard_site n = {1, GUARD_SHAPE, 0}, out_n = {0, GUARD_SHAPE, 0};
  spec_key_parts parts = c->base;
  int rc = guard_set_init(&v->guards, 2, names, err);
  if (!rc && !v->general) rc = guard_set_add_range(&v->guards, "n", n, v->param, v->param, err);
  for (int a = 0; a < 2 && !rc; a++) rc = guard_set_add_dtype(&v->guards, a, UOPC_F32, err);
  for (int a = 0; a < 2 && !rc; a++) rc = guard_set_add_rank(&v->guards, a, 1, err);
  if (!rc) rc = guard_set_add_equal(&v->guards, out_n, n, err);
  for (int a = 0; a < 2 && !rc && !v->general; a++) rc = guard_set_add_contiguous(&v->guards, a, err);
  if (!rc && !v->general) rc = guard_set_add_disjoint(&v->guards, 0, 1, err);
  parts.graph_hash = 2;
  snprintf(parts.dtypes, sizeof parts.dtypes, "out:f32 x:f32");
  snprintf(parts.layout, sizeof parts.layout, "%s", v->general ? "strided" : "contiguous disjoint");
  snprintf(parts.constraints, sizeof parts.constraints, "n==%lld", (long long)v->param);
  return rc ? rc : spec_key_compose(&parts, &v->key, err);
}

static int twice_compile(void *ctx, const vcache *c, vcache_variant *v, uopc_error *err) {
  (void)ctx;
  char src[512];
  if (v->general) {
    snprintf(v->entry, sizeof v->entry, "twice_any");
    snprintf(src, sizeof src, "#include <stdint.h>\nvoid twice_any(float *out, const float *x, int64_t n, int64_t os,"
             " int64_t xs) { for (int64_t i = 0; i < n; i++) out[i * os] = 2.0f * x[i * xs]; }\n");
  } else {
    snprintf(v->entry, sizeof v->entry, "twice_n%lld", (long long)v->param);
    snprintf(src, sizeof src, "void %s(float *restrict out, const float *restrict x) { for (int i = 0; i < %lld;"
             " i++) out[i] = 2.0f * x[i]; }\n", v->entry, (long long)v->param);
  }
  return uopc_program_new(&v->program, src, v->entry, v->general ? "pplll" : "pp", &c->opts.program, err);
}

static int twice_run(void *ctx, vcache_variant *v, const guard_call *call, uopc_error *err) {
  (void)ctx, (void)err;
  void *out = (void *)call->data[0], *x = (void *)call->data[1];
  int64_t n = call->args[1].shape[0], os = call->args[0].strides[0], xs = call->args[1].strides[0];
  void *args[] = {&out, &x, &n, &os, &xs};
  uopc_program_call(v->program, args);
  return UOPC_OK;
}

/* Even lengths get a variant of their own while there is room; the rest
 * share the general one. */
static int twice_on_miss(void *ctx, vcache *c, const guard_call *call, vcache_variant **out, uopc_error *err) {
  (void)ctx;
  int64_t n = call->args[1].shape[0];
  if (n % 2 == 0 && guard_call_contiguous(call, 0) && guard_call_contiguous(call, 1) && vcache_room(c) > 0) return vcache_build(c, call, 0, n, out, err);
  return vcache_general(c, call, out, err);
}

static float want_twice(const uopc_tensor *const *in, int64_t i) { return 2.0f * at(in[0], i); }

static void test_vcache_hooks_run_an_ops_own_kernels(void **state) {
  (void)state;
  static vcache c;
  uopc_error err = {0};
  vcache_options o = {.op = "twice", .n_inputs = 1, .n_outputs = 1, .inputs = {"x"}, .outputs = {"out"},
                      .hooks = {.on_miss = twice_on_miss, .contract = twice_contract, .compile = twice_compile,
                                .run = twice_run}, .policy = {.max_variants = 3}};
  uopc_counters_reset();
  assert_uopc_ok(vcache_init(&c, &o, &err), err);
  static const int64_t lengths[] = {3, 8, 3, 8, 4, 6, 6, 5};
  static const char *const ran[] = {"twice_any", "twice_n8", "twice_any", "twice_n8", "twice_n4", "twice_any",
                                    "twice_any", "twice_any"};
  for (int k = 0; k < 8; k++) {
    buf x;
    input(&x, lengths[k], 0, 1);
    const uopc_tensor *ins[] = {&x.view};
    assert_string_equal(call1(&c, ins, lengths[k], want_twice)->entry, ran[k]);
    release(&x);
  }
  /* the general variant stays after the specialised ones, whatever the order of building */
  assert_string_equal(c.variants[0]->entry, "twice_n8");
  assert_string_equal(c.variants[1]->entry, "twice_n4");
  assert_string_equal(c.variants[2]->entry, "twice_any");
  assert_true(c.index.usable);
  /* checks: 1; 1 (n8 built); 1 failure + 1; 1; 1 failure + 1 (n4 built); then, three times, 2 failures + 1 */
  assert_counts(&c, 3, 16, 8);
  assert_int_equal(uopc_counter_get("calls twice_any"), 5);
  assert_int_equal(uopc_counter_get(EXEC_C_BUILT), 0);   /* no graph program: the op's own kernels */
  char text[VCACHE_EXPLAIN_MAX];
  explain(&c, text, sizeof text);
  assert_contains(text, "twice_n8 rejected: guard 'n = x.shape[0] in [8, 8]' failed: dim 'n' = 5 outside [8, 8]\n");
  vcache_variant *v;
  buf x, out;
  input(&x, 8, 0, 1);
  output(&out, 8, 0);
  const uopc_tensor *ins[] = {&x.view};
  uopc_tensor *outs[] = {&out.view};
  assert_uopc_ok(vcache_choose(&c, outs, 1, ins, 1, &v, &err), err);
  assert_uopc_code(vcache_run(&c, c.variants[2], &err), UOPC_E_INVALID, err);   /* not the one chosen */
  assert_true(uopc_tensor_get(&out.view, 0) == POISON);
  release(&out), release(&x);
  vcache_fini(&c);
}

/* ---- Explain and arguments. */

static void test_vcache_explain_text(void **state) {
  (void)state;
  vcache_policy p = {.pin_01 = 1};
  vcache *c = new_cache("affine", build_affine, 1, 1, &p);
  affine(c, 1);
  affine(c, 7);
  char text[VCACHE_EXPLAIN_MAX];
  explain(c, text, sizeof text);
  assert_string_equal(text, "call 2 (x: f32 (7)): ran affine_fd0, variant 2 of 2, built by this call\n"
                            "  affine_fk1 rejected: guard 'x.shape[0] == 1' failed: x.shape[0] = 7, not 1\n"
                            "  all 9 guards of affine_fd0 held\n");
  vcache_fini(c);
}

static void test_vcache_rejects_bad_arguments(void **state) {
  (void)state;
  vcache_policy p = {.max_extent = 100, .max_stride = 4};
  vcache *c = new_cache("affine", build_affine, 1, 1, &p);
  uopc_error err = {0};
  buf x, big, wide, out;
  input(&x, 8, 0, 1);
  input(&big, 101, 0, 1);
  input(&wide, 50, 0, 5);
  output(&out, 101, 0);
  const uopc_tensor *ins[] = {&x.view}, *nul[] = {NULL}, *bigs[] = {&big.view}, *wides[] = {&wide.view};
  uopc_tensor *outs[] = {&out.view};
  assert_uopc_code(vcache_call(c, outs, 1, ins, 2, &err), UOPC_E_INVALID, err);
  assert_contains(err.message, "op 'affine' takes 1 outputs and 1 inputs, not 1 and 2");
  assert_uopc_code(vcache_call(c, outs, 1, nul, 1, &err), UOPC_E_INVALID, err);
  assert_contains(err.message, "input 'x' is NULL or released");
  assert_uopc_code(vcache_call(c, outs, 1, bigs, 1, &err), UOPC_E_BOUNDS, err);
  assert_contains(err.message, "input 'x' axis 0 is 101, outside [0, 100] (policy.max_extent)");
  assert_uopc_code(vcache_call(c, outs, 1, wides, 1, &err), UOPC_E_BOUNDS, err);
  assert_contains(err.message, "input 'x' stride 0 is 5, outside [-4, 4] (policy.max_stride)");
  vcache_fini(c);
  vcache bad;
  vcache_options o = {.op = "1x", .n_inputs = 1, .n_outputs = 1, .inputs = {"x"}, .build = build_affine};
  assert_uopc_code(vcache_init(&bad, &o, &err), UOPC_E_INVALID, err);
  o.op = "affine";
  o.policy.max_variants = VCACHE_MAX_VARIANTS + 1;
  assert_uopc_code(vcache_init(&bad, &o, &err), UOPC_E_INVALID, err);
  assert_contains(err.message, "policy.max_variants = 33 outside [1, 32]");
  release(&out), release(&wide), release(&big), release(&x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_vcache_equal_extents_share_one_dim_under_a_guard),
    cmocka_unit_test(test_vcache_unequal_extents_take_another_variant),
    cmocka_unit_test(test_vcache_pins_0_and_1_and_keeps_one_general_variant),
    cmocka_unit_test(test_vcache_length_7_does_not_reuse_the_length_1_variant),
    cmocka_unit_test(test_vcache_length_1_input_broadcasts_through_its_pin),
    cmocka_unit_test(test_vcache_divisibility_is_a_guard),
    cmocka_unit_test(test_vcache_strided_view_takes_the_strided_variant),
    cmocka_unit_test(test_vcache_misaligned_view_takes_another_variant),
    cmocka_unit_test(test_vcache_output_overlapping_an_input_is_refused),
    cmocka_unit_test(test_vcache_wrong_outputs_are_errors),
    cmocka_unit_test(test_vcache_output_extent_is_an_expression_guard),
    cmocka_unit_test(test_vcache_limit_runs_the_general_variant),
    cmocka_unit_test(test_vcache_limit_fails_by_option),
    cmocka_unit_test(test_vcache_index_agrees_with_scan),
    cmocka_unit_test(test_vcache_run_path_keeps_the_checks_no_guard_makes),
    cmocka_unit_test(test_vcache_hooks_run_an_ops_own_kernels),
    cmocka_unit_test(test_vcache_explain_text),
    cmocka_unit_test(test_vcache_rejects_bad_arguments),
  };
  return cmocka_run_group_tests(tests, testutil_fresh_cache, testutil_remove_cache);
}
