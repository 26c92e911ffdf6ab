/* main.c: the lab 23.5 driver (make lab-23.5).
 * Decodes fixed tokens for three rows of different lengths and checks, at
 * every step, each row's cached logits against the uncached reference
 * (every position recomputed from the tokens, in plain C); the masked
 * fixed-capacity baseline against the same reference; one set of plans for
 * every position; a reset that gives a fresh cache's logits; batch
 * isolation bit for bit; the step past the capacity refused with the cache
 * unchanged, then decoding again after a reset; and bad input. Exit status:
 * 0 all checks passed, 1 a check failed, 2 the runtime refused, 3 a student
 * function is not implemented yet. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model.h"
#include "uopc/driver.h"

static int failed_checks;

static void check(int ok, const char *what) {
  if (ok) return;
  failed_checks++;
  printf("FAILED: %s\n", what);
}

enum { BATCH = 3, CAPACITY = 64, STEPS = 40 };
static const int ROW_LENGTH[BATCH] = {20, 11, 33};   /* rows stop at different lengths */

static int token_of(int row, int step) { return (row * 71 + step * 37 + 5) % 256; }

/* |a - b| relative to the reference's largest logit: f32, sums in another order. */
static double logit_error(const float *got, const float *want, int n) {
  double scale = 1, worst = 0;
  for (int i = 0; i < n; i++) scale = fmax(scale, fabs(want[i]));
  for (int i = 0; i < n; i++) {
    double d = fabs((double)got[i] - want[i]) / scale;
    if (!(d <= worst)) worst = d;
  }
  return worst;
}

#define TOLERANCE 1e-4

/* Decodes STEPS steps (a row takes -1 once it reached its length) and
 * compares every row's logits with the reference at every step. */
static int decode_checked(kv_model *m, kv_cache *c, int masked, double *worst, uopc_error *err) {
  int vocab = kv_model_config_of(m)->vocab, history[BATCH][STEPS];
  float *logits = malloc((size_t)BATCH * vocab * sizeof *logits), *ref = malloc((size_t)vocab * sizeof *ref);
  int rc = logits && ref ? UOPC_OK : UOPC_FAIL(err, UOPC_E_NOMEM, "out of memory");
  for (int s = 0; s < STEPS && !rc; s++) {
    int tokens[BATCH];
    for (int b = 0; b < BATCH; b++) tokens[b] = s < ROW_LENGTH[b] ? token_of(b, s) : -1;
    rc = kv_decode_step(m, c, tokens, logits, masked, err);
    for (int b = 0; b < BATCH && !rc; b++) {
      if (tokens[b] < 0) continue;
      history[b][s] = tokens[b];
      rc = kv_reference_logits(m, history[b], s + 1, ref, err);
      double e = rc ? 0 : logit_error(logits + (size_t)b * vocab, ref, vocab);
      if (!(e <= *worst)) *worst = e;
    }
  }
  free(logits), free(ref);
  return rc;
}

static int scenario_decode(kv_model *m, uopc_error *err) {
  kv_cache c;
  int rc = kv_cache_init(&c, 2, BATCH, 4, CAPACITY, 16, err);
  int64_t plans = uopc_counter_get(KV_C_PLANS), compiles = uopc_counter_get("compiler invocations");
  double worst = 0, worst_masked = 0;
  if (!rc) rc = decode_checked(m, &c, 0, &worst, err);
  for (int b = 0; b < BATCH && !rc; b++) check(c.length[b] == ROW_LENGTH[b], "a row's length is not its token count");
  check(rc || worst <= TOLERANCE, "cached logits differ from the uncached reference");
  if (!rc) rc = kv_reset(&c, -1, err);
  if (!rc) rc = decode_checked(m, &c, 1, &worst_masked, err);
  check(rc || worst_masked <= TOLERANCE, "masked baseline logits differ from the uncached reference");
  check(rc || (uopc_counter_get(KV_C_PLANS) == plans && uopc_counter_get("compiler invocations") == compiles),
        "decoding built a plan or ran the compiler");
  if (!rc)
    printf("%-34s rows of 20, 11, 33 tokens: cached = uncached within %.1e, masked within %.1e, no plan built: %s\n",
           "decode, every step checked", worst, worst_masked, failed_checks ? "FAILED" : "ok");
  kv_cache_free(&c);
  return rc;
}

/* Row 1 reset and given a new sequence: the logits of a fresh cache. Row 1
 * changed: row 0's logits bit for bit the same. */
static int scenario_reset_and_isolation(kv_model *m, uopc_error *err) {
  int vocab = kv_model_config_of(m)->vocab, before = failed_checks;
  kv_cache a, fresh, other;
  float *la = malloc((size_t)BATCH * vocab * sizeof *la), *lf = malloc((size_t)BATCH * vocab * sizeof *lf),
        *lo = malloc((size_t)BATCH * vocab * sizeof *lo);
  int rc = la && lf && lo ? UOPC_OK : UOPC_FAIL(err, UOPC_E_NOMEM, "out of memory");
  if (!rc) rc = kv_cache_init(&a, 2, BATCH, 4, CAPACITY, 16, err);
  if (!rc) rc = kv_cache_init(&fresh, 2, BATCH, 4, CAPACITY, 16, err);
  if (!rc) rc = kv_cache_init(&other, 2, BATCH, 4, CAPACITY, 16, err);
  for (int s = 0; s < 6 && !rc; s++) {        /* a: an old sequence in row 1 */
    int t[BATCH] = {-1, token_of(2, s), -1};
    rc = kv_decode_step(m, &a, t, la, 0, err);
  }
  if (!rc) rc = kv_reset(&a, 1, err);
  int same = 1, isolated = 1;
  for (int s = 0; s < 5 && !rc; s++) {
    int t[BATCH] = {token_of(0, s), token_of(1, s), -1}, u[BATCH] = {token_of(0, s), token_of(2, s + 9), -1};
    rc = kv_decode_step(m, &a, t, la, 0, err);
    if (!rc) rc = kv_decode_step(m, &fresh, t, lf, 0, err);
    if (!rc) rc = kv_decode_step(m, &other, u, lo, 0, err);
    if (!rc) same &= memcmp(la + vocab, lf + vocab, (size_t)vocab * sizeof *la) == 0;
    if (!rc) isolated &= memcmp(la, lo, (size_t)vocab * sizeof *la) == 0;
  }
  check(rc || same, "after a reset, row 1's logits differ from a fresh cache's");
  check(rc || isolated, "changing row 1's tokens changed row 0's logits");
  if (!rc) printf("%-34s reset row = fresh cache, row 0 bit for bit unchanged by row 1: %s\n", "reset and isolation",
                  failed_checks > before ? "FAILED" : "ok");
  kv_cache_free(&a), kv_cache_free(&fresh), kv_cache_free(&other);
  free(la), free(lf), free(lo);
  return rc;
}

/* The step past the capacity: refused, the cache unchanged; then decoding
 * again after a reset. Bad input: refused, the cache unchanged. */
static int scenario_overflow_and_bad_input(kv_model *m, uopc_error *err) {
  int vocab = kv_model_config_of(m)->vocab, before = failed_checks;
  kv_cache c, wrong;
  float *lg = malloc((size_t)BATCH * vocab * sizeof *lg);
  int rc = lg ? kv_cache_init(&c, 2, BATCH, 4, 4, 16, err) : UOPC_FAIL(err, UOPC_E_NOMEM, "out of memory");
  for (int s = 0; s < 4 && !rc; s++) {
    int t[BATCH] = {token_of(0, s), s < 2 ? token_of(1, s) : -1, -1};
    rc = kv_decode_step(m, &c, t, lg, 0, err);
  }
  if (!rc) {
    size_t bytes = (size_t)uopc_tensor_numel(&c.k[0]) * sizeof(float);
    float *snapshot = malloc(bytes);
    if (snapshot) memcpy(snapshot, uopc_tensor_data(&c.k[1]), bytes);
    int64_t lengths[BATCH];
    memcpy(lengths, c.length, sizeof lengths);
    uopc_error e = {0};
    int t[BATCH] = {token_of(0, 4), token_of(1, 2), -1};          /* row 0 is full: nothing may change */
    int over = kv_decode_step(m, &c, t, lg, 0, &e);
    check(over == UOPC_E_LIMIT && strstr(e.message, "row 0"), "the step past the capacity was not refused");
    check(memcmp(lengths, c.length, sizeof lengths) == 0 && snapshot &&
              memcmp(snapshot, uopc_tensor_data(&c.k[1]), bytes) == 0, "a refused step changed the cache");
    int bad[BATCH] = {-1, 300, -1};
    check(kv_decode_step(m, &c, bad, lg, 0, &e) == UOPC_E_INVALID && memcmp(lengths, c.length, sizeof lengths) == 0,
          "a token outside the vocabulary was not refused, or changed the cache");
    free(snapshot);
    rc = kv_reset(&c, 0, err);
    if (!rc) rc = kv_decode_step(m, &c, t, lg, 0, err);            /* decoding goes on after the reset */
    check(rc || (c.length[0] == 1 && c.length[1] == 3), "decoding after the reset");
  }
  if (!rc) rc = kv_cache_init(&wrong, 2, BATCH, 4, 8, 8, err);     /* head_dim 8, not 16 */
  if (!rc) {
    uopc_error e = {0};
    int t[BATCH] = {1, 2, 3};
    check(kv_decode_step(m, &wrong, t, lg, 0, &e) == UOPC_E_INVALID, "a cache of another head_dim was accepted");
    kv_cache_free(&wrong);
  }
  if (!rc) printf("%-34s refused with the cache unchanged, then decoding after a reset; bad input refused: %s\n",
                  "step at p == capacity", failed_checks > before ? "FAILED" : "ok");
  kv_cache_free(&c);
  free(lg);
  return rc;
}

int main(int argc, char **argv) {
  int start = uopc_driver_start(argc, argv, "23.5",
                                "Decodes three rows through the KV cache, each step checked against the uncached reference;\nthe masked baseline, a reset, batch isolation, the step past the capacity, bad input.");
  if (start != UOPC_DRIVER_RUN) return start;
  printf("lab 23.5: a true KV cache (decoding that appends one position per step, checked every step)\n");
  uopc_error err = {0};
  kv_model_config cfg = kv_model_default(4096);
  kv_model *m = NULL;
  int rc = kv_model_new(&m, &cfg, &err);
  if (!rc) rc = scenario_decode(m, &err);
  if (!rc) rc = scenario_reset_and_isolation(m, &err);
  if (!rc) rc = scenario_overflow_and_bad_input(m, &err);
  kv_model_free(m);
  if (rc) return uopc_driver_fail("23.5", &err);
  uopc_counters_print(stdout);
  return failed_checks ? 1 : 0;
}
