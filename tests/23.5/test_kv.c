/* test_kv.c: lab 23.5's cache operations (kv_append, kv_advance,
 * kv_reset_rows, kv_row_prefix) against whole-tensor snapshots: each call
 * changes exactly the bytes its contract names, and every refusal changes
 * none; a write moves the storage versions, a refusal leaves them (kv.h).
 * Lengths are set through the public struct, so each function is
 * tested without the others. No test appends into the last slot of the last
 * row: a broken build that writes slot p + 1 (tests/broken/23.5.mk) must fail
 * a comparison, never write past the buffer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>
#include "kv.h"
#include "testutil.h"

enum { LAYERS = 2, BATCH = 3, HEADS = 2, CAP = 7, HD = 4 };

/* A cache whose every element has a value of its own (nonzero, exact in f32)
 * and the given lengths, and a snapshot of it. */
typedef struct fx {
  kv_cache c;
  float *k[LAYERS], *v[LAYERS];     /* the snapshot */
  int64_t length[BATCH];
  uopc_error err;
} fx;

static size_t layer_bytes(const kv_cache *c) { return (size_t)uopc_tensor_numel(&c->k[0]) * sizeof(float); }

static void snapshot(fx *f) {
  for (int l = 0; l < LAYERS; l++) {
    memcpy(f->k[l], uopc_tensor_data(&f->c.k[l]), layer_bytes(&f->c));
    memcpy(f->v[l], uopc_tensor_data(&f->c.v[l]), layer_bytes(&f->c));
  }
  memcpy(f->length, f->c.length, sizeof f->length);
}

static void fx_init(fx *f, const int64_t *lengths) {
  memset(f, 0, sizeof *f);
  assert_uopc_ok(kv_cache_init(&f->c, LAYERS, BATCH, HEADS, CAP, HD, &f->err), f->err);
  for (int l = 0; l < LAYERS; l++) {
    float *k = uopc_tensor_data(&f->c.k[l]), *v = uopc_tensor_data(&f->c.v[l]);
    for (int64_t i = 0; i < uopc_tensor_numel(&f->c.k[l]); i++) {
      k[i] = (float)(1000 * l + i + 1);
      v[i] = -(float)(1000 * l + i + 1);
    }
    f->k[l] = malloc(layer_bytes(&f->c));
    f->v[l] = malloc(layer_bytes(&f->c));
    assert_non_null(f->k[l]);
    assert_non_null(f->v[l]);
  }
  for (int b = 0; b < BATCH; b++) f->c.length[b] = lengths[b];
  snapshot(f);
}

static void fx_fini(fx *f) {
  for (int l = 0; l < LAYERS; l++) free(f->k[l]), free(f->v[l]);
  kv_cache_free(&f->c);
}

static int64_t at(int b, int h, int64_t slot, int a) { return (((int64_t)b * HEADS + h) * CAP + slot) * HD + a; }

/* The cache equals the snapshot bit for bit: every layer's K and V and every
 * length; a difference names the first element that differs. */
static void assert_cache_is_snapshot(const fx *f, const char *after) {
  for (int l = 0; l < LAYERS; l++)
    for (int kv = 0; kv < 2; kv++) {
      const float *got = uopc_tensor_data(kv ? &f->c.v[l] : &f->c.k[l]), *want = kv ? f->v[l] : f->k[l];
      if (memcmp(got, want, layer_bytes(&f->c)) == 0) continue;
      int64_t i = 0;
      while (memcmp(&got[i], &want[i], sizeof *got) == 0) i++;
      int64_t a = i % HD, s = i / HD % CAP, h = i / HD / CAP % HEADS, b = i / HD / CAP / HEADS;
      fail_msg("after %s: layer %d %s[row %lld, head %lld, slot %lld, %lld] is %g, expected %g", after, l,
               kv ? "V" : "K", (long long)b, (long long)h, (long long)s, (long long)a, got[i], want[i]);
    }
  for (int b = 0; b < BATCH; b++)
    if (f->c.length[b] != f->length[b])
      fail_msg("after %s: row %d's length is %lld, expected %lld", after, b, (long long)f->c.length[b],
               (long long)f->length[b]);
}

/* A token's key and value, (HEADS, HD) f32, with values no cache element has. */
static void token(uopc_tensor *k, uopc_tensor *v, float base, uopc_error *err) {
  int64_t shape[2] = {HEADS, HD};
  assert_uopc_ok(uopc_tensor_empty(k, UOPC_F32, 2, shape, err), *err);
  assert_uopc_ok(uopc_tensor_empty(v, UOPC_F32, 2, shape, err), *err);
  float *kp = uopc_tensor_data(k), *vp = uopc_tensor_data(v);
  for (int i = 0; i < HEADS * HD; i++) kp[i] = base + 0.25f * (float)i, vp[i] = -base - 0.25f * (float)i;
}

/* Every layer's K and V storage version (uopc_tensor_version), to check
 * that a write through the storage is recorded (the README's hint: bump the
 * version, chapter 23.3) and that a refusal records none. */
typedef struct versions { uint64_t k[LAYERS], v[LAYERS]; } versions;

static versions versions_of(const fx *f) {
  versions s;
  for (int l = 0; l < LAYERS; l++) s.k[l] = uopc_tensor_version(&f->c.k[l]), s.v[l] = uopc_tensor_version(&f->c.v[l]);
  return s;
}

/* Layer l's K and V (every layer for l = -1) were bumped since before; the
 * others may have been too. */
static void assert_bumped(const fx *f, const versions *before, int l, const char *after) {
  versions now = versions_of(f);
  for (int i = 0; i < LAYERS; i++)
    if ((l < 0 || i == l) && (now.k[i] <= before->k[i] || now.v[i] <= before->v[i]))
      fail_msg("after %s: layer %d's K or V version did not move (K %llu -> %llu, V %llu -> %llu): "
               "bump the version after writing through the storage", after, i, (unsigned long long)before->k[i],
               (unsigned long long)now.k[i], (unsigned long long)before->v[i], (unsigned long long)now.v[i]);
}

static void assert_not_bumped(const fx *f, const versions *before, const char *after) {
  versions now = versions_of(f);
  for (int i = 0; i < LAYERS; i++)
    if (now.k[i] != before->k[i] || now.v[i] != before->v[i])
      fail_msg("after %s: layer %d's K or V version moved, but nothing was written", after, i);
}

/* ---- kv_append */

static void test_kv_append_writes_slot_length_of_row_b_only(void **state) {
  (void)state;
  static const int64_t lengths[BATCH] = {2, 0, 5};
  fx f;
  fx_init(&f, lengths);
  static const int order[][2] = {{0, 0}, {1, 1}, {0, 2}, {1, 0}, {0, 1}, {1, 2}};   /* (layer, row) */
  for (size_t n = 0; n < sizeof order / sizeof order[0]; n++) {
    int l = order[n][0], b = order[n][1];
    uopc_tensor k, v;
    token(&k, &v, 0.5f + 100000.0f * (float)(n + 1), &f.err);
    versions before = versions_of(&f);
    assert_uopc_ok(kv_append(&f.c, l, b, &k, &v, &f.err), f.err);
    const float *kp = uopc_tensor_data(&k), *vp = uopc_tensor_data(&v);
    for (int h = 0; h < HEADS; h++)     /* the expected cache: slot length[b] of row b, every head */
      for (int a = 0; a < HD; a++) {
        f.k[l][at(b, h, lengths[b], a)] = kp[h * HD + a];
        f.v[l][at(b, h, lengths[b], a)] = vp[h * HD + a];
      }
    char what[64];
    snprintf(what, sizeof what, "kv_append(layer %d, row %d) at length %lld", l, b, (long long)lengths[b]);
    assert_cache_is_snapshot(&f, what);       /* the lengths too: kv_append does not move them */
    assert_bumped(&f, &before, l, what);
    uopc_tensor_release(&k), uopc_tensor_release(&v);
  }
  fx_fini(&f);
}

static void test_kv_append_fills_every_slot_up_to_the_capacity(void **state) {
  (void)state;
  static const int64_t lengths[BATCH] = {0, 0, 0};
  fx f;
  fx_init(&f, lengths);
  for (int p = 0; p < CAP; p++) {     /* row 0: its last slot is still inside the layer */
    uopc_tensor k, v;
    token(&k, &v, 0.5f + 100000.0f * (float)(p + 1), &f.err);
    assert_uopc_ok(kv_append(&f.c, 1, 0, &k, &v, &f.err), f.err);
    const float *kp = uopc_tensor_data(&k);
    for (int h = 0; h < HEADS; h++)
      for (int a = 0; a < HD; a++) f.k[1][at(0, h, p, a)] = kp[h * HD + a], f.v[1][at(0, h, p, a)] = -kp[h * HD + a];
    f.c.length[0] = f.length[0] = p + 1;
    assert_cache_is_snapshot(&f, "an append at the next slot");
    uopc_tensor_release(&k), uopc_tensor_release(&v);
  }
  fx_fini(&f);
}

static void test_kv_append_refuses_a_full_row_and_changes_nothing(void **state) {
  (void)state;
  static const int64_t lengths[BATCH] = {3, CAP, 1};
  fx f;
  fx_init(&f, lengths);
  uopc_tensor k, v;
  token(&k, &v, 0.5f, &f.err);
  assert_uopc_ok(kv_append(&f.c, 0, 0, &k, &v, &f.err), f.err);      /* a row with room: accepted */
  snapshot(&f);
  uopc_error e = {0};
  assert_uopc_code(kv_append(&f.c, 1, 1, &k, &v, &e), UOPC_E_LIMIT, e);
  assert_contains(e.message, "row 1");
  assert_contains(e.message, "7");        /* the capacity (and the row's length) */
  assert_cache_is_snapshot(&f, "a refused append to a full row");
  uopc_tensor_release(&k), uopc_tensor_release(&v);
  fx_fini(&f);
}

static void test_kv_append_rejects_bad_layer_row_shape_and_dtype(void **state) {
  (void)state;
  static const int64_t lengths[BATCH] = {1, 2, 0};
  fx f;
  fx_init(&f, lengths);
  uopc_tensor k, v, wide, tall, flat, f64;
  token(&k, &v, 0.5f, &f.err);
  assert_uopc_ok(kv_append(&f.c, 0, 0, &k, &v, &f.err), f.err);
  snapshot(&f);
  int64_t s_wide[2] = {HEADS, HD + 1}, s_tall[2] = {HEADS + 1, HD}, s_flat[1] = {HEADS * HD};
  int64_t s_ok[2] = {HEADS, HD};
  assert_uopc_ok(uopc_tensor_empty(&wide, UOPC_F32, 2, s_wide, &f.err), f.err);
  assert_uopc_ok(uopc_tensor_empty(&tall, UOPC_F32, 2, s_tall, &f.err), f.err);
  assert_uopc_ok(uopc_tensor_empty(&flat, UOPC_F32, 1, s_flat, &f.err), f.err);
  assert_uopc_ok(uopc_tensor_empty(&f64, UOPC_F64, 2, s_ok, &f.err), f.err);
  versions before = versions_of(&f);
  uopc_error e = {0};
  assert_uopc_code(kv_append(&f.c, -1, 0, &k, &v, &e), UOPC_E_INVALID, e);
  assert_contains(e.message, "layer -1 outside [0, 2)");   /* the value, then the range */
  assert_uopc_code(kv_append(&f.c, LAYERS, 0, &k, &v, &e), UOPC_E_INVALID, e);
  assert_uopc_code(kv_append(&f.c, 0, -1, &k, &v, &e), UOPC_E_INVALID, e);
  assert_contains(e.message, "row -1 outside [0, 3)");
  assert_uopc_code(kv_append(&f.c, 0, BATCH, &k, &v, &e), UOPC_E_INVALID, e);
  assert_uopc_code(kv_append(NULL, 0, 0, &k, &v, &e), UOPC_E_INVALID, e);
  assert_uopc_code(kv_append(&f.c, 0, 1, NULL, &v, &e), UOPC_E_INVALID, e);
  assert_contains(e.message, "key");       /* kv.h: the message says which of the two */
  assert_uopc_code(kv_append(&f.c, 0, 1, &k, NULL, &e), UOPC_E_INVALID, e);
  assert_contains(e.message, "value");
  assert_uopc_code(kv_append(&f.c, 0, 1, &wide, &v, &e), UOPC_E_BOUNDS, e);
  assert_contains(e.message, "key");
  assert_uopc_code(kv_append(&f.c, 0, 1, &tall, &v, &e), UOPC_E_BOUNDS, e);
  assert_uopc_code(kv_append(&f.c, 0, 1, &flat, &v, &e), UOPC_E_BOUNDS, e);
  assert_uopc_code(kv_append(&f.c, 0, 1, &f64, &v, &e), UOPC_E_DTYPE, e);
  /* A good key with a bad value: refused before the key is written. */
  assert_uopc_code(kv_append(&f.c, 1, 1, &k, &wide, &e), UOPC_E_BOUNDS, e);
  assert_contains(e.message, "value");
  assert_uopc_code(kv_append(&f.c, 1, 1, &k, &f64, &e), UOPC_E_DTYPE, e);
  assert_contains(e.message, "value");
  assert_cache_is_snapshot(&f, "refused appends");
  assert_not_bumped(&f, &before, "refused appends");
  uopc_tensor_release(&k), uopc_tensor_release(&v), uopc_tensor_release(&wide), uopc_tensor_release(&tall);
  uopc_tensor_release(&flat), uopc_tensor_release(&f64);
  fx_fini(&f);
}

/* ---- kv_advance */

static void test_kv_advance_moves_one_row_and_refuses_a_full_one(void **state) {
  (void)state;
  static const int64_t lengths[BATCH] = {0, CAP - 1, 3};
  fx f;
  fx_init(&f, lengths);
  assert_uopc_ok(kv_advance(&f.c, 0, &f.err), f.err);
  f.length[0] = 1;
  assert_cache_is_snapshot(&f, "kv_advance(row 0)");
  assert_uopc_ok(kv_advance(&f.c, 1, &f.err), f.err);
  f.length[1] = CAP;
  assert_cache_is_snapshot(&f, "kv_advance(row 1) to the capacity");
  uopc_error e = {0};
  assert_uopc_code(kv_advance(&f.c, 1, &e), UOPC_E_LIMIT, e);
  assert_cache_is_snapshot(&f, "kv_advance of a full row");
  fx_fini(&f);
  kv_cache one;        /* a cache of one layer: layer 0 is its only one */
  assert_uopc_ok(kv_cache_init(&one, 1, 2, HEADS, CAP, HD, &e), e);
  assert_uopc_ok(kv_advance(&one, 1, &e), e);
  assert_int_equal(one.length[0], 0);
  assert_int_equal(one.length[1], 1);
  kv_cache_free(&one);
}

static void test_kv_advance_rejects_a_bad_row(void **state) {
  (void)state;
  static const int64_t lengths[BATCH] = {1, 2, 3};
  fx f;
  fx_init(&f, lengths);
  assert_uopc_ok(kv_advance(&f.c, 2, &f.err), f.err);
  f.length[2] = 4;
  uopc_error e = {0};
  assert_uopc_code(kv_advance(&f.c, -1, &e), UOPC_E_INVALID, e);
  assert_uopc_code(kv_advance(&f.c, BATCH, &e), UOPC_E_INVALID, e);
  assert_uopc_code(kv_advance(NULL, 0, &e), UOPC_E_INVALID, e);
  assert_cache_is_snapshot(&f, "refused kv_advance calls");
  fx_fini(&f);
}

/* ---- kv_reset_rows, kv_reset */

static void zero_row(fx *f, int b) {
  for (int l = 0; l < LAYERS; l++)
    for (int h = 0; h < HEADS; h++)
      for (int s = 0; s < CAP; s++)
        for (int a = 0; a < HD; a++) f->k[l][at(b, h, s, a)] = f->v[l][at(b, h, s, a)] = 0.0f;
  f->length[b] = 0;
}

static void test_kv_reset_rows_empties_one_row_and_leaves_the_others(void **state) {
  (void)state;
  static const int64_t lengths[BATCH] = {4, 6, 2};
  fx f;
  fx_init(&f, lengths);
  versions before = versions_of(&f);
  assert_uopc_ok(kv_reset_rows(&f.c, 1, &f.err), f.err);
  zero_row(&f, 1);       /* every slot, not only the populated ones */
  assert_cache_is_snapshot(&f, "kv_reset_rows(row 1)");
  assert_bumped(&f, &before, -1, "kv_reset_rows(row 1)");      /* every layer was written */
  assert_uopc_ok(kv_reset_rows(&f.c, 0, &f.err), f.err);
  zero_row(&f, 0);
  assert_cache_is_snapshot(&f, "kv_reset_rows(row 0)");
  fx_fini(&f);
}

static void test_kv_reset_rows_minus_one_empties_every_row(void **state) {
  (void)state;
  static const int64_t lengths[BATCH] = {4, CAP, 2};
  fx f;
  fx_init(&f, lengths);
  versions before = versions_of(&f);
  assert_uopc_ok(kv_reset_rows(&f.c, -1, &f.err), f.err);
  for (int b = 0; b < BATCH; b++) zero_row(&f, b);
  assert_cache_is_snapshot(&f, "kv_reset_rows(-1)");
  assert_bumped(&f, &before, -1, "kv_reset_rows(-1)");
  fx_fini(&f);
}

static void test_kv_reset_rows_rejects_a_row_out_of_range(void **state) {
  (void)state;
  static const int64_t lengths[BATCH] = {4, 1, 2};
  fx f;
  fx_init(&f, lengths);
  assert_uopc_ok(kv_reset_rows(&f.c, 2, &f.err), f.err);
  zero_row(&f, 2);
  versions before = versions_of(&f);
  uopc_error e = {0};
  assert_uopc_code(kv_reset_rows(&f.c, -2, &e), UOPC_E_INVALID, e);
  assert_uopc_code(kv_reset_rows(&f.c, BATCH, &e), UOPC_E_INVALID, e);
  assert_uopc_code(kv_reset_rows(NULL, 0, &e), UOPC_E_INVALID, e);
  assert_cache_is_snapshot(&f, "refused resets");
  assert_not_bumped(&f, &before, "refused resets");
  fx_fini(&f);
}

static void test_kv_reset_counts_each_reset_that_succeeds(void **state) {
  (void)state;
  static const int64_t lengths[BATCH] = {4, 1, 2};
  fx f;
  fx_init(&f, lengths);
  int64_t before = uopc_counter_get(KV_C_RESETS);
  assert_uopc_ok(kv_reset(&f.c, 1, &f.err), f.err);
  assert_uopc_ok(kv_reset(&f.c, -1, &f.err), f.err);
  uopc_error e = {0};
  assert_uopc_code(kv_reset(&f.c, BATCH, &e), UOPC_E_INVALID, e);
  assert_int_equal(uopc_counter_get(KV_C_RESETS) - before, 2);
  fx_fini(&f);
}

static void test_kv_cache_init_rejects_bad_sizes(void **state) {
  (void)state;
  kv_cache c;
  uopc_error e = {0};
  assert_uopc_code(kv_cache_init(&c, 0, 1, 1, 1, 1, &e), UOPC_E_INVALID, e);
  assert_uopc_code(kv_cache_init(&c, 1, 1, 1, 0, 1, &e), UOPC_E_INVALID, e);
  assert_uopc_code(kv_cache_init(&c, 1, 1024, 1024, 1024, 2, &e), UOPC_E_OVERFLOW, e);
  assert_uopc_code(kv_cache_init(&c, 1, 65536, 65536, 65536, 65536, &e), UOPC_E_OVERFLOW, e);   /* 2^64 */
  assert_uopc_ok(kv_cache_init(&c, 1, 2, 3, 4, 5, &e), e);
  const float *k = uopc_tensor_data(&c.k[0]);
  for (int64_t i = 0; i < uopc_tensor_numel(&c.k[0]); i++) assert_true(k[i] == 0.0f);
  assert_int_equal(c.length[0] + c.length[1], 0);
  kv_cache_free(&c);
  kv_cache_free(&c);     /* freeing twice is harmless: the struct is zeroed */
}

/* ---- kv_row_prefix */

/* The view's element (h, j, a) is the cache's (b, h, j, a), by address. */
static void assert_prefix_view(const uopc_tensor *t, const float *layer, int b, int64_t n) {
  assert_int_equal(t->dtype, UOPC_F32);
  assert_int_equal(t->rank, 3);
  if (t->shape[0] != HEADS || t->shape[1] != n || t->shape[2] != HD)
    fail_msg("row %d: the view is (%lld, %lld, %lld), expected (%d, %lld, %d)", b, (long long)t->shape[0],
             (long long)t->shape[1], (long long)t->shape[2], HEADS, (long long)n, HD);
  if (t->strides[0] != (int64_t)CAP * HD || t->strides[1] != HD || t->strides[2] != 1)
    fail_msg("row %d: strides (%lld, %lld, %lld), expected (%d, %d, 1)", b, (long long)t->strides[0],
             (long long)t->strides[1], (long long)t->strides[2], CAP * HD, HD);
  const float *p = uopc_tensor_data(t);
  assert_ptr_equal(p, layer + at(b, 0, 0, 0));       /* a view of the cache, not a copy */
  for (int h = 0; h < HEADS; h++)
    for (int64_t j = 0; j < n; j++)
      for (int a = 0; a < HD; a++) assert_true(p[h * CAP * HD + j * HD + a] == layer[at(b, h, j, a)]);
}

static void test_kv_row_prefix_views_the_populated_slots(void **state) {
  (void)state;
  static const int64_t lengths[BATCH] = {3, 0, CAP - 1};
  fx f;
  fx_init(&f, lengths);
  for (int l = 0; l < LAYERS; l++)
    for (int b = 0; b < BATCH; b++)
      for (int extra = 0; extra <= 1; extra++) {
        uopc_tensor k, v;
        int64_t n = lengths[b] + extra;
        assert_uopc_ok(kv_row_prefix(&f.c, l, b, extra, &k, &v, &f.err), f.err);
        if (n == 0) {                /* no slot yet: an empty view, whose strides are the implementation's */
          assert_int_equal(k.rank, 3), assert_int_equal(v.rank, 3);
          assert_int_equal(k.shape[1], 0), assert_int_equal(v.shape[1], 0);
          uopc_tensor_release(&k), uopc_tensor_release(&v);
          continue;
        }
        assert_prefix_view(&k, uopc_tensor_data(&f.c.k[l]), b, n);
        assert_prefix_view(&v, uopc_tensor_data(&f.c.v[l]), b, n);
        uopc_tensor_release(&k), uopc_tensor_release(&v);
        assert_int_equal(uopc_tensor_storage_refs(&f.c.k[l]), 1);
      }
  assert_cache_is_snapshot(&f, "reading prefixes");
  fx_fini(&f);
}

static void test_kv_row_prefix_refuses_a_length_past_the_capacity(void **state) {
  (void)state;
  static const int64_t lengths[BATCH] = {CAP, CAP - 1, 0};
  fx f;
  fx_init(&f, lengths);
  uopc_tensor k, v;
  assert_uopc_ok(kv_row_prefix(&f.c, 0, 0, 0, &k, &v, &f.err), f.err);     /* a full row: every slot */
  assert_int_equal(k.shape[1], CAP);
  uopc_tensor_release(&k), uopc_tensor_release(&v);
  uopc_error e = {0};
  assert_uopc_code(kv_row_prefix(&f.c, 0, 0, 1, &k, &v, &e), UOPC_E_BOUNDS, e);
  assert_uopc_code(kv_row_prefix(&f.c, 1, 1, 2, &k, &v, &e), UOPC_E_BOUNDS, e);
  assert_uopc_code(kv_row_prefix(&f.c, 1, 2, CAP + 1, &k, &v, &e), UOPC_E_BOUNDS, e);
  assert_cache_is_snapshot(&f, "refused prefixes");
  fx_fini(&f);
}

static void test_kv_row_prefix_rejects_a_bad_layer_or_row(void **state) {
  (void)state;
  static const int64_t lengths[BATCH] = {2, 2, 2};
  fx f;
  fx_init(&f, lengths);
  uopc_tensor k, v;
  assert_uopc_ok(kv_row_prefix(&f.c, 1, 2, 1, &k, &v, &f.err), f.err);
  uopc_tensor_release(&k), uopc_tensor_release(&v);
  uopc_error e = {0};
  assert_uopc_code(kv_row_prefix(&f.c, LAYERS, 0, 0, &k, &v, &e), UOPC_E_INVALID, e);
  assert_uopc_code(kv_row_prefix(&f.c, -1, 0, 0, &k, &v, &e), UOPC_E_INVALID, e);
  assert_uopc_code(kv_row_prefix(&f.c, 0, BATCH, 0, &k, &v, &e), UOPC_E_INVALID, e);
  assert_uopc_code(kv_row_prefix(&f.c, 0, -1, 0, &k, &v, &e), UOPC_E_INVALID, e);
  assert_uopc_code(kv_row_prefix(NULL, 0, 0, 0, &k, &v, &e), UOPC_E_INVALID, e);
  /* No place for the value's view: refused, and the key's view made first is released. */
  assert_uopc_code(kv_row_prefix(&f.c, 0, 1, 0, &k, NULL, &e), UOPC_E_INVALID, e);
  assert_int_equal(uopc_tensor_storage_refs(&f.c.k[0]), 1);     /* nothing leaked a view */
  assert_int_equal(uopc_tensor_storage_refs(&f.c.v[0]), 1);
  fx_fini(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kv_append_writes_slot_length_of_row_b_only),
      cmocka_unit_test(test_kv_append_fills_every_slot_up_to_the_capacity),
      cmocka_unit_test(test_kv_append_refuses_a_full_row_and_changes_nothing),
      cmocka_unit_test(test_kv_append_rejects_bad_layer_row_shape_and_dtype),
      cmocka_unit_test(test_kv_advance_moves_one_row_and_refuses_a_full_one),
      cmocka_unit_test(test_kv_advance_rejects_a_bad_row),
      cmocka_unit_test(test_kv_reset_rows_empties_one_row_and_leaves_the_others),
      cmocka_unit_test(test_kv_reset_rows_minus_one_empties_every_row),
      cmocka_unit_test(test_kv_reset_rows_rejects_a_row_out_of_range),
      cmocka_unit_test(test_kv_reset_counts_each_reset_that_succeeds),
      cmocka_unit_test(test_kv_cache_init_rejects_bad_sizes),
      cmocka_unit_test(test_kv_row_prefix_views_the_populated_slots),
      cmocka_unit_test(test_kv_row_prefix_refuses_a_length_past_the_capacity),
      cmocka_unit_test(test_kv_row_prefix_rejects_a_bad_layer_or_row),
  };
  return cmocka_run_group_tests(tests, testutil_fresh_cache, testutil_remove_cache);
}
