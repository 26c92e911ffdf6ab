/* test_attn.c: lab 23.5's decode attention (attn_build) and its masked
 * baseline (attn_build_masked), compiled through exec.h and compared with
 * softmax attention computed here in double: every length and capacity
 * through one plan, scores large enough to overflow an exp taken before the
 * maximum is subtracted, and the work of the generated loops, counted from
 * the lowered program's extents under each call's binding. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>
#include "attn.h"
#include "testutil.h"

enum { H = 4, HD = 16, CAP_MAX = 4096 };
#define TOLERANCE 1e-4          /* outputs are averages of values in [-1, 1] */

typedef struct fx {
  attn_dims d;
  sym_dim capacity;             /* the masked graph's */
  ir_graph *g;
  exec *e;
  uopc_error err;
} fx;

/* Builds attn_build's graph (masked: attn_build_masked's) and its plan. */
static void fx_init(fx *f, int masked) {
  memset(f, 0, sizeof *f);
  assert_uopc_ok(attn_dims_init(&f->d, H, HD, CAP_MAX, &f->err), f->err);
  assert_uopc_ok(sym_dim_init(&f->capacity, "capacity", 1, CAP_MAX, 1, &f->err), f->err);
  assert_uopc_ok(ir_graph_new(&f->g, &f->err), f->err);
  const ir_node *out = NULL;
  if (masked)
    assert_uopc_ok(attn_build_masked(f->g, &f->d, &f->capacity, &out, &f->err), f->err);
  else
    assert_uopc_ok(attn_build(f->g, &f->d, &out, &f->err), f->err);
  assert_non_null(out);
  assert_int_equal(out->dtype, UOPC_F32);
  assert_int_equal(out->rank, 2);
  assert_uopc_ok(exec_new_rule(&f->e, f->g, &out, 1, masked ? "attn_masked" : "attn", KV_LOWER_FLAGS, &KV_FUSE_RULE,
                               NULL, &f->err), f->err);
}

static void fx_fini(fx *f) {
  exec_free(f->e);
  ir_graph_free(f->g);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static double uniform(void) {          /* xorshift64*, in [0, 1) */
  rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
  return (double)((rng * 0x2545f4914f6cdd1dull) >> 11) / 9007199254740992.0;
}

/* A cache row's K and V, (H, cap, HD): slots below L hold the populated
 * values; slots from L on hold what must never be read (fill). */
typedef struct row {
  uopc_tensor q, k, v;
  int64_t cap, L;
} row;

static void row_new(row *r, int64_t cap, int64_t L, float fill, uopc_error *err) {
  int64_t qs[2] = {H, HD}, ks[3] = {H, cap, HD};
  r->cap = cap, r->L = L;
  assert_uopc_ok(uopc_tensor_empty(&r->q, UOPC_F32, 2, qs, err), *err);
  assert_uopc_ok(uopc_tensor_empty(&r->k, UOPC_F32, 3, ks, err), *err);
  assert_uopc_ok(uopc_tensor_empty(&r->v, UOPC_F32, 3, ks, err), *err);
  float *q = uopc_tensor_data(&r->q), *k = uopc_tensor_data(&r->k), *v = uopc_tensor_data(&r->v);
  for (int i = 0; i < H * HD; i++) q[i] = (float)(4 * uniform() - 2);
  for (int h = 0; h < H; h++)
    for (int64_t j = 0; j < cap; j++)
      for (int a = 0; a < HD; a++) {
        int64_t i = (h * cap + j) * HD + a;
        k[i] = j < L ? (float)(2 * uniform() - 1) : fill;
        v[i] = j < L ? (float)(2 * uniform() - 1) : fill;
      }
}

static void row_free(row *r) { uopc_tensor_release(&r->q), uopc_tensor_release(&r->k), uopc_tensor_release(&r->v); }

/* Scores q k^T / sqrt(HD) large enough that exp of any of them overflows f32
 * (q.k from 960 to 1000), spread over 10 so that many weigh. */
static void row_make_scores_large(row *r) {
  float *q = uopc_tensor_data(&r->q), *k = uopc_tensor_data(&r->k);
  for (int i = 0; i < H * HD; i++) q[i] = 8.0f;
  for (int h = 0; h < H; h++)
    for (int64_t j = 0; j < r->L; j++) {
      float c = (float)(7.5 + 0.3125 * uniform());
      for (int a = 0; a < HD; a++) k[(h * r->cap + j) * HD + a] = c;
    }
}

/* softmax(q k^T / sqrt(HD)) v over slots 0 .. L - 1 of each head, in double. */
static void reference(const row *r, double *out) {
  const float *q = uopc_tensor_data(&r->q), *k = uopc_tensor_data(&r->k), *v = uopc_tensor_data(&r->v);
  double *s = malloc((size_t)r->L * sizeof *s);
  assert_non_null(s);
  for (int h = 0; h < H; h++) {
    double mx = -INFINITY, sum = 0;
    for (int64_t j = 0; j < r->L; j++) {
      double dot = 0;
      for (int a = 0; a < HD; a++) dot += (double)q[h * HD + a] * k[(h * r->cap + j) * HD + a];
      s[j] = dot / sqrt((double)HD);
      mx = fmax(mx, s[j]);
    }
    for (int64_t j = 0; j < r->L; j++) sum += (s[j] = exp(s[j] - mx));
    for (int a = 0; a < HD; a++) {
      double acc = 0;
      for (int64_t j = 0; j < r->L; j++) acc += s[j] / sum * v[(h * r->cap + j) * HD + a];
      out[h * HD + a] = acc;
    }
  }
  free(s);
}

/* One call's inputs: q and the row's first L slots (masked: every slot and a
 * bias of 0 below L, -inf from L on). */
typedef struct call {
  uopc_tensor k, v, bias;
  const uopc_tensor *ins[4];
  int n;
} call;

static void call_new(call *c, const row *r, int masked, uopc_error *err) {
  int64_t cap = r->cap;
  memset(c, 0, sizeof *c);
  assert_uopc_ok(uopc_tensor_slice(&c->k, &r->k, 1, 0, masked ? cap : r->L, 1, err), *err);
  assert_uopc_ok(uopc_tensor_slice(&c->v, &r->v, 1, 0, masked ? cap : r->L, 1, err), *err);
  if (masked) {
    assert_uopc_ok(uopc_tensor_empty(&c->bias, UOPC_F32, 1, &cap, err), *err);
    float *b = uopc_tensor_data(&c->bias);
    for (int64_t j = 0; j < cap; j++) b[j] = j < r->L ? 0.0f : -INFINITY;
  }
  c->ins[0] = &r->q, c->ins[1] = &c->k, c->ins[2] = &c->v, c->ins[3] = &c->bias;
  c->n = masked ? 4 : 3;
}

static void call_free(call *c) {
  uopc_tensor_release(&c->k), uopc_tensor_release(&c->v), uopc_tensor_release(&c->bias);
}

/* Runs the plan on the row (see call_new) and compares with the reference. */
static void check_row(fx *f, const row *r, int masked, double tolerance) {
  int64_t os[2] = {H, HD};
  uopc_tensor out;
  call c;
  assert_uopc_ok(uopc_tensor_empty(&out, UOPC_F32, 2, os, &f->err), f->err);
  call_new(&c, r, masked, &f->err);
  uopc_tensor *outs[1] = {&out};
  assert_uopc_ok(exec_run(f->e, outs, 1, c.ins, c.n, &f->err), f->err);
  double want[H * HD];
  reference(r, want);
  const float *got = uopc_tensor_data(&out);
  for (int i = 0; i < H * HD; i++)
    if (!(fabs(got[i] - want[i]) <= tolerance))
      fail_msg("%s, capacity %lld, L %lld: out[head %d][%d] = %.9g, the double reference says %.9g",
               masked ? "masked" : "attn", (long long)r->cap, (long long)r->L, i / HD, i % HD, got[i], want[i]);
  uopc_tensor_release(&out);
  call_free(&c);
}

/* ---- The work of a call, measured from the program lowering made */

static int64_t eval(const sym_expr *e, const sym_binding *b) {
  int64_t v = 0;
  uopc_error err = {0};
  assert_uopc_ok(sym_expr_eval(e, b, &v, &err), err);
  return v;
}

static int64_t elements(const ir_node *n, const sym_binding *b) {
  int64_t count = 1;
  for (int a = 0; a < n->rank; a++) count *= eval(n->shape[a], b);
  return count;
}

/* The innermost iterations of every loop nest of the plan in one call on the
 * row, from the lowered program's extents under the call's binding (never its
 * text): a nest runs over its buffer's elements, a reduction over its
 * source's, a matmul (..., m, k) @ (..., k, n) over m * n * k a batch. All a
 * kernel reads or computes is inside these loops, so a loop over anything
 * the capacity sizes, however its extent is spelled, shows here. */
static int64_t call_work(fx *f, const row *r, int masked) {
  call c;
  sym_binding b;
  call_new(&c, r, masked, &f->err);
  sym_binding_init(&b);
  assert_uopc_ok(exec_bind(f->e, c.ins, c.n, &b, &f->err), f->err);
  call_free(&c);
  const lower_program *p = exec_lowered(f->e);
  int64_t total = 0;
  for (int k = 0; k < p->n_kernels; k++) {
    const ir_node *n = p->buffers[p->kernel_buffer[k]].node, *x = n->src[0];
    ir_kind kind = ir_op_info_of(n->op)->kind;
    if (kind == IR_KIND_REDUCE) total += elements(x, &b);
    else if (kind == IR_KIND_MATMUL) total += elements(n, &b) * eval(x->shape[x->rank - 1], &b);
    else total += elements(n, &b);
  }
  return total;
}

/* The work of a call on a fresh row of capacity cap and length L. */
static int64_t work_at(fx *f, int64_t cap, int64_t L, int masked) {
  row r;
  row_new(&r, cap, L, NAN, &f->err);
  int64_t w = call_work(f, &r, masked);
  row_free(&r);
  return w;
}

static const int64_t CAPS[2] = {64, 4096};
static const int64_t LENGTHS[5] = {1, 2, 7, 64, 1000};

/* ---- attn_build */

static void test_attn_build_matches_a_double_reference_for_every_length_and_capacity(void **state) {
  (void)state;
  fx f;
  fx_init(&f, 0);
  assert_int_equal(ir_graph_input_count(f.g), 3);
  assert_string_equal(ir_graph_input(f.g, 0)->name, "q");
  assert_string_equal(ir_graph_input(f.g, 1)->name, "k");
  assert_string_equal(ir_graph_input(f.g, 2)->name, "v");
  for (int c = 0; c < 2; c++)
    for (int n = 0; n < 5 && LENGTHS[n] <= CAPS[c]; n++) {
      row r;
      row_new(&r, CAPS[c], LENGTHS[n], NAN, &f.err);    /* a slot past L read: NaN in the output */
      check_row(&f, &r, 0, TOLERANCE);
      row_free(&r);
    }
  fx_fini(&f);
}

static void test_attn_build_serves_every_length_and_capacity_with_one_plan(void **state) {
  (void)state;
  int64_t built = uopc_counter_get(EXEC_C_BUILT);
  fx f;
  fx_init(&f, 0);
  int64_t compiles = uopc_counter_get("compiler invocations");
  assert_int_equal(uopc_counter_get(EXEC_C_BUILT) - built, 1);
  for (int n = 0; n < 5; n++)
    for (int c = 1; c >= 0; c--) {       /* capacities alternate under one plan */
      if (LENGTHS[n] > CAPS[c]) continue;
      row r;
      row_new(&r, CAPS[c], LENGTHS[n], NAN, &f.err);
      check_row(&f, &r, 0, TOLERANCE);
      row_free(&r);
    }
  assert_int_equal(uopc_counter_get(EXEC_C_BUILT) - built, 1);
  assert_int_equal(uopc_counter_get("compiler invocations"), compiles);
  fx_fini(&f);
}

static void test_attn_build_subtracts_the_maximum_before_exp(void **state) {
  (void)state;
  fx f;
  fx_init(&f, 0);
  for (int c = 0; c < 2; c++)
    for (int n = 0; n < 5 && LENGTHS[n] <= CAPS[c]; n++) {
      row r;
      row_new(&r, CAPS[c], LENGTHS[n], NAN, &f.err);
      row_make_scores_large(&r);       /* exp(250) is inf in f32: inf / inf is NaN */
      check_row(&f, &r, 0, 1e-3);
      row_free(&r);
    }
  fx_fini(&f);
}

/* Work proportional to the populated prefix, measured: at lengths 1, 2, 7 and
 * 64 the plan's loops run as many iterations at capacity 4096 as at 64, and
 * each slot adds the same number (work = a + b L, b > 0). */
static void test_attn_build_loops_to_the_length_never_the_capacity(void **state) {
  (void)state;
  fx f;
  fx_init(&f, 0);
  int64_t w[4];
  for (int n = 0; n < 4; n++) {
    int64_t L = LENGTHS[n], small = work_at(&f, CAPS[0], L, 0), large = work_at(&f, CAPS[1], L, 0);
    if (small != large)
      fail_msg("attn, L %lld: the loop nests run %lld iterations at capacity %lld and %lld at capacity %lld: "
               "the work must follow the populated slots, never the capacity", (long long)L, (long long)small,
               (long long)CAPS[0], (long long)large, (long long)CAPS[1]);
    w[n] = small;
  }
  for (int n = 1; n < 4; n++)   /* (w[n] - w[0]) / (L_n - 1) is the same slope, and positive */
    if (w[n] <= w[0] || (w[n] - w[0]) * (LENGTHS[1] - LENGTHS[0]) != (w[1] - w[0]) * (LENGTHS[n] - LENGTHS[0]))
      fail_msg("attn: the loop nests run %lld, %lld, %lld and %lld iterations at L = 1, 2, 7 and 64 (capacity "
               "4096): each slot must add the same work", (long long)w[0], (long long)w[1], (long long)w[2],
               (long long)w[3]);
  fx_fini(&f);
}

/* A builder that fails inside attn_build (its "q" declared a second time) is the graph's first
 * error, and attn_build returns it, code and message, with no node in *out. */
static void test_attn_build_returns_the_graphs_first_error(void **state) {
  (void)state;
  attn_dims d;
  ir_graph *g;
  uopc_error err = {0};
  assert_uopc_ok(attn_dims_init(&d, H, HD, CAP_MAX, &err), err);
  assert_uopc_ok(ir_graph_new(&g, &err), err);
  const sym_expr *shape[2] = {sym_expr_const(ir_graph_arena(g), H), sym_expr_const(ir_graph_arena(g), HD)};
  assert_non_null(ir_input(g, "q", UOPC_F32, 2, shape));
  const ir_node *out = NULL;
  assert_uopc_code(attn_build(g, &d, &out, &err), UOPC_E_INVALID, err);
  assert_null(out);
  assert_string_equal(err.message, ir_graph_error(g)->message);
  assert_contains(err.message, "input 'q' is declared twice");
  ir_graph_free(g);
}

/* ---- attn_build_masked */

static void test_attn_build_masked_matches_the_reference_with_a_minus_inf_bias(void **state) {
  (void)state;
  fx f;
  fx_init(&f, 1);
  assert_int_equal(ir_graph_input_count(f.g), 4);
  assert_string_equal(ir_graph_input(f.g, 3)->name, "bias");
  static const int64_t cases[][2] = {{64, 1}, {64, 7}, {64, 64}, {4096, 2}, {4096, 1000}, {64, 2}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    row r;
    row_new(&r, cases[i][0], cases[i][1], 3.0f, &f.err);    /* masked slots: large scores unless masked */
    check_row(&f, &r, 1, TOLERANCE);
    row_free(&r);
  }
  fx_fini(&f);
}

static void test_attn_build_masked_subtracts_the_maximum_before_exp(void **state) {
  (void)state;
  fx f;
  fx_init(&f, 1);
  static const int64_t cases[][2] = {{64, 1}, {64, 64}, {4096, 1000}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    row r;
    row_new(&r, cases[i][0], cases[i][1], 0.5f, &f.err);
    row_make_scores_large(&r);
    check_row(&f, &r, 1, 1e-3);
    row_free(&r);
  }
  fx_fini(&f);
}

/* The baseline's cost, measured: its loops run over every slot, populated or
 * not, so the work grows with the capacity and does not change with L. */
static void test_attn_build_masked_loops_over_the_capacity(void **state) {
  (void)state;
  fx f;
  fx_init(&f, 1);
  int64_t small = work_at(&f, CAPS[0], 7, 1), large = work_at(&f, CAPS[1], 7, 1);
  if (large <= small)
    fail_msg("masked, L 7: the loop nests run %lld iterations at capacity %lld and %lld at capacity %lld: "
             "the baseline must read every slot", (long long)small, (long long)CAPS[0], (long long)large,
             (long long)CAPS[1]);
  for (int n = 0; n < 4; n++) {
    int64_t w = work_at(&f, CAPS[1], LENGTHS[n], 1);
    if (w != large)
      fail_msg("masked, capacity %lld: the loop nests run %lld iterations at L %lld and %lld at L 7: the "
               "baseline's work is the capacity's", (long long)CAPS[1], (long long)w, (long long)LENGTHS[n],
               (long long)large);
  }
  fx_fini(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_attn_build_matches_a_double_reference_for_every_length_and_capacity),
      cmocka_unit_test(test_attn_build_serves_every_length_and_capacity_with_one_plan),
      cmocka_unit_test(test_attn_build_subtracts_the_maximum_before_exp),
      cmocka_unit_test(test_attn_build_loops_to_the_length_never_the_capacity),
      cmocka_unit_test(test_attn_build_returns_the_graphs_first_error),
      cmocka_unit_test(test_attn_build_masked_matches_the_reference_with_a_minus_inf_bias),
      cmocka_unit_test(test_attn_build_masked_subtracts_the_maximum_before_exp),
      cmocka_unit_test(test_attn_build_masked_loops_over_the_capacity),
  };
  return cmocka_run_group_tests(tests, testutil_fresh_cache, testutil_remove_cache);
}
