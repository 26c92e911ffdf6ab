/* test_decode.c: lab 23.5's model decoded through the cache (model.h, given)
 * with the student's cache and attention: cached logits against the
 * uncached reference at every step, one set of plans for every position,
 * the step at p == capacity refused with the cache unchanged, batch rows
 * isolated and a reset row equal to a fresh cache, bit for bit, and bad
 * input refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>
#include "model.h"
#include "testutil.h"

enum { VOCAB = 256, LAYERS = 2, HEADS = 4, HD = 16, CAP_MAX = 256 };
#define TOLERANCE 1e-4          /* relative to the largest logit: f32, sums in another order */

/* The model, built once per process (its five plans), freed with the group. */
static kv_model *model_built;

static kv_model *model(void) {
  if (!model_built) {
    uopc_error err = {0};
    kv_model_config cfg = kv_model_default(CAP_MAX);
    assert_uopc_ok(kv_model_new(&model_built, &cfg, &err), err);
  }
  return model_built;
}

static int group_setup(void **state) { return testutil_fresh_cache(state); }

static int group_teardown(void **state) {
  kv_model_free(model_built);
  return testutil_remove_cache(state);
}

static int token_of(int row, int step) { return (row * 71 + step * 37 + 5) % VOCAB; }

static double logit_error(const float *got, const float *want) {
  double scale = 1, worst = 0;
  for (int i = 0; i < VOCAB; i++) scale = fmax(scale, fabs(want[i]));
  for (int i = 0; i < VOCAB; i++) {
    double d = fabs((double)got[i] - want[i]) / scale;
    if (!(d <= worst)) worst = d;
  }
  return worst;
}

static void cache_new(kv_cache *c, int batch, int capacity) {
  uopc_error err = {0};
  assert_uopc_ok(kv_cache_init(c, LAYERS, batch, HEADS, capacity, HD, &err), err);
}

static void step(kv_cache *c, const int *tokens, float *logits, int masked) {
  uopc_error err = {0};
  assert_uopc_ok(kv_decode_step(model(), c, tokens, logits, masked, &err), err);
}

/* Row b's logits equal the uncached reference after history[0 .. n-1]. */
static void assert_logits_match(const float *logits, const int *history, int n, int b, const char *what) {
  float want[VOCAB];
  uopc_error err = {0};
  assert_uopc_ok(kv_reference_logits(model(), history, n, want, &err), err);
  double e = logit_error(logits, want);
  if (!(e <= TOLERANCE))
    fail_msg("%s: row %d after %d tokens: logits differ from the uncached reference by %.3g (relative; at most %g)",
             what, b, n, e, TOLERANCE);
}

/* A snapshot of a whole cache (every layer's K and V, every length). */
typedef struct snap {
  float *kv[2 * LAYERS];
  int64_t length[8];
  size_t bytes;
} snap;

static void snap_take(snap *s, const kv_cache *c) {
  s->bytes = (size_t)uopc_tensor_numel(&c->k[0]) * sizeof(float);
  for (int l = 0; l < LAYERS; l++) {
    s->kv[2 * l] = malloc(s->bytes), s->kv[2 * l + 1] = malloc(s->bytes);
    assert_non_null(s->kv[2 * l]);
    assert_non_null(s->kv[2 * l + 1]);
    memcpy(s->kv[2 * l], uopc_tensor_data(&c->k[l]), s->bytes);
    memcpy(s->kv[2 * l + 1], uopc_tensor_data(&c->v[l]), s->bytes);
  }
  assert_true(c->batch <= 8);
  memcpy(s->length, c->length, (size_t)c->batch * sizeof *c->length);
}

static void snap_assert_equal(const snap *s, const kv_cache *c, const char *after) {
  for (int l = 0; l < LAYERS; l++)
    if (memcmp(s->kv[2 * l], uopc_tensor_data(&c->k[l]), s->bytes) ||
        memcmp(s->kv[2 * l + 1], uopc_tensor_data(&c->v[l]), s->bytes))
      fail_msg("after %s: layer %d's K or V changed", after, l);
  for (int b = 0; b < c->batch; b++)
    if (s->length[b] != c->length[b])
      fail_msg("after %s: row %d's length is %lld, was %lld", after, b, (long long)c->length[b],
               (long long)s->length[b]);
}

static void snap_free(snap *s) {
  for (int i = 0; i < 2 * LAYERS; i++) free(s->kv[i]);
}

/* Decodes steps steps into a batch of 2 (row 1 stops after stop1 tokens)
 * and checks both rows against the reference at every step. */
static void decode_checked(int masked, int steps, int stop1, int capacity) {
  kv_cache c;
  cache_new(&c, 2, capacity);
  float logits[2 * VOCAB];
  int history[2][64];
  assert_true(steps <= 64);
  for (int s = 0; s < steps; s++) {
    int tokens[2] = {token_of(0, s), s < stop1 ? token_of(1, s) : -1};
    step(&c, tokens, logits, masked);
    for (int b = 0; b < 2; b++) {
      if (tokens[b] < 0) continue;
      history[b][s] = tokens[b];
      assert_logits_match(logits + b * VOCAB, history[b], s + 1, b, masked ? "masked decode" : "decode");
    }
  }
  assert_int_equal(c.length[0], steps);
  assert_int_equal(c.length[1], stop1 < steps ? stop1 : steps);
  kv_cache_free(&c);
}

/* ---- attn_build, through the model */

static void test_decode_cached_logits_match_the_uncached_reference_at_every_step(void **state) {
  (void)state;
  decode_checked(0, 24, 9, 64);
  decode_checked(0, 6, 6, 256);          /* another capacity, the same plans */
}

static void test_decode_builds_no_plan_over_30_steps(void **state) {
  (void)state;
  model();
  int64_t plans = uopc_counter_get(KV_C_PLANS), built = uopc_counter_get(EXEC_C_BUILT);
  int64_t compiles = uopc_counter_get("compiler invocations");
  kv_cache c, wide;
  cache_new(&c, 2, 32);
  cache_new(&wide, 1, CAP_MAX);
  float logits[2 * VOCAB];
  for (int s = 0; s < 30; s++) {
    int tokens[2] = {token_of(0, s), s % 3 ? token_of(1, s) : -1};
    step(&c, tokens, logits, 0);
    step(&wide, tokens, logits, 0);
    if (uopc_counter_get(KV_C_PLANS) != plans || uopc_counter_get(EXEC_C_BUILT) != built ||
        uopc_counter_get("compiler invocations") != compiles)
      fail_msg("step %d (positions up to %lld) built a plan or ran the compiler", s, (long long)c.length[0] - 1);
  }
  kv_cache_free(&c), kv_cache_free(&wide);
}

/* ---- attn_build_masked, through the model */

static void test_decode_masked_logits_match_the_uncached_reference(void **state) {
  (void)state;
  decode_checked(1, 12, 5, 64);
}

/* ---- kv_append, through the model */

static void test_decode_step_at_capacity_is_refused_and_leaves_the_cache_unchanged(void **state) {
  (void)state;
  kv_cache c;
  cache_new(&c, 2, 4);
  float logits[2 * VOCAB];
  for (int s = 0; s < 4; s++) {
    int tokens[2] = {token_of(0, s), s < 2 ? token_of(1, s) : -1};
    step(&c, tokens, logits, 0);
  }
  snap before;
  snap_take(&before, &c);
  uopc_error e = {0};
  int over[2] = {token_of(0, 4), token_of(1, 2)};     /* row 0 is full; row 1 is not */
  assert_uopc_code(kv_decode_step(model(), &c, over, logits, 0, &e), UOPC_E_LIMIT, e);
  assert_contains(e.message, "row 0");
  snap_assert_equal(&before, &c, "the step at p == capacity");
  assert_uopc_code(kv_decode_step(model(), &c, over, logits, 0, &e), UOPC_E_LIMIT, e);   /* still full */
  snap_assert_equal(&before, &c, "a second step at p == capacity");
  snap_free(&before);
  uopc_error err = {0};
  assert_uopc_ok(kv_reset(&c, 0, &err), err);       /* decoding goes on after a reset */
  int again[2] = {token_of(2, 0), token_of(1, 2)};
  step(&c, again, logits, 0);
  assert_int_equal(c.length[0], 1);
  assert_int_equal(c.length[1], 3);
  int h0[1] = {token_of(2, 0)}, h1[3] = {token_of(1, 0), token_of(1, 1), token_of(1, 2)};
  assert_logits_match(logits, h0, 1, 0, "after the reset");
  assert_logits_match(logits + VOCAB, h1, 3, 1, "after the reset");
  kv_cache_free(&c);
}

/* ---- kv_row_prefix, through the model */

static void test_decode_rows_are_isolated_bit_for_bit(void **state) {
  (void)state;
  kv_cache a, b;
  cache_new(&a, 3, 64);
  cache_new(&b, 3, 64);
  float la[3 * VOCAB], lb[3 * VOCAB];
  for (int s = 0; s < 10; s++) {     /* row 1 differs; rows 0 and 2 are the same in both */
    int ta[3] = {token_of(0, s), token_of(1, s), s < 7 ? token_of(2, s) : -1};
    int tb[3] = {token_of(0, s), s < 4 ? token_of(3, s + 5) : token_of(1, s), s < 7 ? token_of(2, s) : -1};
    step(&a, ta, la, 0);
    step(&b, tb, lb, 0);
    if (memcmp(la, lb, VOCAB * sizeof *la)) fail_msg("step %d: row 1's tokens changed row 0's logits", s);
    if (s < 7 && memcmp(la + 2 * VOCAB, lb + 2 * VOCAB, VOCAB * sizeof *la))
      fail_msg("step %d: row 1's tokens changed row 2's logits", s);
  }
  kv_cache_free(&a), kv_cache_free(&b);
}

/* ---- kv_reset_rows, through the model */

static void test_decode_reset_row_gives_the_logits_of_a_fresh_cache(void **state) {
  (void)state;
  kv_cache a, fresh;
  cache_new(&a, 2, 64);
  cache_new(&fresh, 2, 64);
  float la[2 * VOCAB], lf[2 * VOCAB];
  for (int s = 0; s < 8; s++) {          /* an old sequence in row 1, longer than the new one */
    int t[2] = {-1, token_of(4, s)};
    step(&a, t, la, 0);
  }
  uopc_error err = {0};
  assert_uopc_ok(kv_reset(&a, 1, &err), err);
  for (int s = 0; s < 5; s++) {
    int t[2] = {token_of(0, s), token_of(1, s)};
    step(&a, t, la, 0);
    step(&fresh, t, lf, 0);
    if (memcmp(la, lf, 2 * VOCAB * sizeof *la)) fail_msg("step %d after the reset: logits differ from a fresh cache's", s);
  }
  assert_uopc_ok(kv_reset(&a, -1, &err), err);
  assert_uopc_ok(kv_reset(&fresh, -1, &err), err);
  int t[2] = {token_of(5, 0), token_of(6, 0)};
  step(&a, t, la, 0);
  step(&fresh, t, lf, 0);
  assert_memory_equal(la, lf, 2 * VOCAB * sizeof *la);
  kv_cache_free(&a), kv_cache_free(&fresh);
}

/* ---- kv_decode_step's checks (given) */

static void test_decode_rejects_bad_input_and_changes_nothing(void **state) {
  (void)state;
  kv_cache c, other_hd, too_long;
  cache_new(&c, 2, 8);
  float logits[2 * VOCAB];
  int t[2] = {token_of(0, 0), token_of(1, 0)};
  step(&c, t, logits, 0);
  snap before;
  snap_take(&before, &c);
  uopc_error e = {0};
  int vocab[2] = {1, VOCAB}, minus2[2] = {-2, 3}, minus2b[2] = {3, -2};
  assert_uopc_code(kv_decode_step(model(), &c, vocab, logits, 0, &e), UOPC_E_INVALID, e);
  assert_contains(e.message, "256");
  assert_uopc_code(kv_decode_step(model(), &c, minus2, logits, 0, &e), UOPC_E_INVALID, e);
  assert_uopc_code(kv_decode_step(model(), &c, minus2b, logits, 1, &e), UOPC_E_INVALID, e);
  snap_assert_equal(&before, &c, "refused tokens");
  snap_free(&before);
  uopc_error err = {0};
  assert_uopc_ok(kv_cache_init(&other_hd, LAYERS, 2, HEADS, 8, HD / 2, &err), err);
  assert_uopc_code(kv_decode_step(model(), &other_hd, t, logits, 0, &e), UOPC_E_INVALID, e);
  assert_int_equal(other_hd.length[0], 0);
  assert_uopc_ok(kv_cache_init(&too_long, LAYERS, 1, HEADS, CAP_MAX + 1, HD, &err), err);
  assert_uopc_code(kv_decode_step(model(), &too_long, t, logits, 0, &e), UOPC_E_INVALID, e);
  kv_cache_free(&c), kv_cache_free(&other_hd), kv_cache_free(&too_long);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_decode_cached_logits_match_the_uncached_reference_at_every_step),
      cmocka_unit_test(test_decode_builds_no_plan_over_30_steps),
      cmocka_unit_test(test_decode_masked_logits_match_the_uncached_reference),
      cmocka_unit_test(test_decode_step_at_capacity_is_refused_and_leaves_the_cache_unchanged),
      cmocka_unit_test(test_decode_rows_are_isolated_bit_for_bit),
      cmocka_unit_test(test_decode_reset_row_gives_the_logits_of_a_fresh_cache),
      cmocka_unit_test(test_decode_rejects_bad_input_and_changes_nothing),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
