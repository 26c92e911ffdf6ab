/* test_dispatch.c: lab 23.2, the guarded dispatcher, against an eager reference.
 * The reference is computed here, element by element in f32 (as NumPy's
 * x*x + 1 on float32). Outputs carry a poisoned tail, so a write past the end
 * is caught too. tests/broken/23.2.mk builds the reference without its
 * divisibility guard (test_dispatch_length_33_matches_eager must fail) and
 * without its alignment guard (test_dispatch_misaligned_view_takes_generic_path
 * must fail: it checks the decision before any kernel touches memory) and
 * without out's contiguity guard (test_dispatch_strided_out_takes_generic_path).
 * The fast kernel also runs on vectors that end at a PROT_NONE page, so a read
 * or a same-value rewrite past the end faults. */
#include <sys/mman.h>
#include "dispatch.h"
#include "testutil.h"

#ifndef __SANITIZE_ADDRESS__
/* Allocation failure on demand: this executable's realloc comes before glibc's for the labs'
 * libraries too and passes every call through while reallocs_left is negative; otherwise the
 * call after reallocs_left more fails. AddressSanitizer brings its own allocator: not there. */
extern void *__libc_realloc(void *p, size_t size);
static int reallocs_left = -1;
void *realloc(void *p, size_t size) {
  if (reallocs_left == 0) return NULL;
  if (reallocs_left > 0) reallocs_left--;
  return __libc_realloc(p, size);
}
#endif

enum { POISON_TAIL = 16 };
static const double POISON = -12345.0;

typedef struct view {
  uopc_tensor base, x, buf, out;
} view;

/* x = (arange(total) - 3)[start::step]; out = the head of a poisoned buffer,
 * starting out_offset elements in (to misalign it). */
static void make_view(view *v, int64_t total, int64_t start, int64_t step, int64_t out_offset) {
  uopc_error err = {0};
  memset(v, 0, sizeof *v);
  assert_uopc_ok(uopc_tensor_empty(&v->base, UOPC_F32, 1, &total, &err), err);
  for (int64_t i = 0; i < total; i++) uopc_tensor_set(&v->base, i, (double)i - 3.0);
  assert_uopc_ok(uopc_tensor_slice(&v->x, &v->base, 0, start, UOPC_SLICE_NONE, step, &err), err);
  int64_t n = v->x.shape[0], size = out_offset + n + POISON_TAIL;
  assert_uopc_ok(uopc_tensor_empty(&v->buf, UOPC_F32, 1, &size, &err), err);
  for (int64_t i = 0; i < size; i++) uopc_tensor_set(&v->buf, i, POISON);
  assert_uopc_ok(uopc_tensor_slice(&v->out, &v->buf, 0, out_offset, out_offset + n, 1, &err), err);
}

static void release_view(view *v) {
  uopc_tensor_release(&v->out);
  uopc_tensor_release(&v->buf);
  uopc_tensor_release(&v->x);
  uopc_tensor_release(&v->base);
}

/* out == x*x + 1 in f32, and nothing written past out's end. */
static void check_eager(const view *v) {
  int64_t n = v->x.shape[0];
  for (int64_t i = 0; i < n; i++) {
    float a = (float)uopc_tensor_get(&v->x, i), want = a * a + 1.0f;
    double got = uopc_tensor_get(&v->out, i);
    if (got != (double)want)
      fail_msg("n = %lld, x stride %lld: index %lld expected %.9g, got %.9g", (long long)n,
               (long long)v->x.strides[0], (long long)i, (double)want, got);
  }
  int64_t end = v->out.offset + n;
  for (int64_t i = end; i < end + POISON_TAIL; i++)
    if (uopc_tensor_get(&v->buf, i) != POISON)
      fail_msg("n = %lld: the kernel wrote past the end, at buffer index %lld", (long long)n, (long long)i);
}

/* A test-only check before the fast kernel runs: a misaligned buffer in its
 * aligned vector loads would fault (and under ASan end the whole suite), so
 * that wrong dispatch is caught here, deterministically. Other wrong
 * dispatches show as wrong values. */
static void check_alignment(const dispatch_choice *c, const view *v) {
  if (c->path != DISPATCH_PATH_FAST) return;
  if (!uopc_tensor_is_aligned(&v->x, VARIANT_ALIGN) || !uopc_tensor_is_aligned(&v->out, VARIANT_ALIGN))
    fail_msg("%s (aligned %d-byte loads) was chosen for x at offset %lld, out at offset %lld", c->variant->entry,
             VARIANT_ALIGN, (long long)v->x.offset, (long long)v->out.offset);
}

/* One checked call; returns the path it took. */
static dispatch_path run_case(dispatcher *d, int64_t total, int64_t start, int64_t step, int64_t out_offset) {
  view v;
  uopc_error err = {0};
  dispatch_choice c;
  make_view(&v, total, start, step, out_offset);
  assert_uopc_ok(dispatch_choose(d, &v.x, &v.out, &c, &err), err);
  check_alignment(&c, &v);
  assert_uopc_ok(dispatch_run(d, &c, &err), err);
  check_eager(&v);
  release_view(&v);
  return dispatch_last_path(d);
}

static dispatcher *new_dispatcher(const dispatch_options *opts) {
  static dispatcher d;
  uopc_error err = {0};
  assert_uopc_ok(dispatch_init(&d, opts, &err), err);
  return &d;
}

/* The driver's sequence of calls: lengths 32, 48, 33, 32, 64, 17, then a strided view of 64 and a
 * view of 33 4 bytes past a boundary. Each test below runs it on a fresh dispatcher with fresh
 * counters and checks one family of what it must give. */
static const int64_t SEQ_LENGTHS[] = {32, 48, 33, 32, 64, 17};

static dispatcher *run_driver_sequence(dispatch_path *paths) {
  uopc_counters_reset();
  dispatcher *d = new_dispatcher(NULL);
  for (int i = 0; i < 6; i++) paths[i] = run_case(d, SEQ_LENGTHS[i], 0, 1, 0);
  paths[6] = run_case(d, 64, 0, 2, 0);   /* strided */
  paths[7] = run_case(d, 33, 1, 1, 0);   /* misaligned */
  return d;
}

static void test_dispatch_driver_sequence_paths(void **state) {
  (void)state;
  static const dispatch_path want[] = {DISPATCH_PATH_FAST, DISPATCH_PATH_FAST, DISPATCH_PATH_GENERIC,
                                       DISPATCH_PATH_FAST, DISPATCH_PATH_FAST, DISPATCH_PATH_GENERIC,
                                       DISPATCH_PATH_GENERIC, DISPATCH_PATH_GENERIC};
  dispatch_path paths[8];
  dispatcher *d = run_driver_sequence(paths);
  for (int i = 0; i < 8; i++) assert_int_equal(paths[i], want[i]);
  dispatch_fini(d);
}

static void test_dispatch_driver_sequence_counts_guard_checks(void **state) {
  (void)state;
  dispatch_path paths[8];
  dispatcher *d = run_driver_sequence(paths);
  assert_int_equal(d->cache.stats.guard_checks, 12);
  assert_int_equal(d->cache.stats.guard_failures, 4);
  assert_int_equal(uopc_counter_get(DISPATCH_C_GUARD_CHECKS), 12);
  assert_int_equal(uopc_counter_get(DISPATCH_C_GUARD_FAILURES), 4);
  dispatch_fini(d);
}

static void test_dispatch_driver_sequence_counts_fast_and_generic_calls(void **state) {
  (void)state;
  dispatch_path paths[8];
  dispatcher *d = run_driver_sequence(paths);
  assert_int_equal(d->stats.fast_calls, 4);
  assert_int_equal(d->stats.generic_calls, 4);
  assert_int_equal(uopc_counter_get(DISPATCH_C_FAST_CALLS), 4);
  assert_int_equal(uopc_counter_get(DISPATCH_C_GENERIC_CALLS), 4);
  dispatch_fini(d);
}

static void test_dispatch_driver_sequence_builds_two_variants(void **state) {
  (void)state;
  dispatch_path paths[8];
  dispatcher *d = run_driver_sequence(paths);
  assert_int_equal(d->cache.stats.variants_built, 2);
  assert_int_equal(uopc_counter_get(DISPATCH_C_VARIANTS_BUILT), 2);
  assert_int_equal(uopc_counter_get(UOPC_C_PROGRAMS_CONSTRUCTED), 2);
  dispatch_fini(d);
}

/* Without the divisibility guard, n = 33 reaches the fast kernel, which
 * computes 32 elements and leaves the last one as it was. */
static void test_dispatch_length_33_matches_eager(void **state) {
  (void)state;
  dispatcher *d = new_dispatcher(NULL);
  assert_int_equal(run_case(d, 32, 0, 1, 0), DISPATCH_PATH_FAST);
  run_case(d, 33, 0, 1, 0);
  run_case(d, 47, 0, 1, 0);
  assert_int_equal(dispatch_last_path(d), DISPATCH_PATH_GENERIC);
  dispatch_fini(d);
}

/* x starts 4 bytes past a 64-byte boundary. The decision is checked before
 * anything runs: aligned vector loads on it would fault, not fail a test. */
static void test_dispatch_misaligned_view_takes_generic_path(void **state) {
  (void)state;
  dispatcher *d = new_dispatcher(NULL);
  uopc_error err = {0};
  assert_int_equal(run_case(d, 32, 0, 1, 0), DISPATCH_PATH_FAST);
  view v;
  make_view(&v, 33, 1, 1, 0);
  assert_false(uopc_tensor_is_aligned(&v.x, VARIANT_ALIGN));
  dispatch_choice c;
  assert_uopc_ok(dispatch_choose(d, &v.x, &v.out, &c, &err), err);
  if (c.path != DISPATCH_PATH_GENERIC)
    fail_msg("a view 4 bytes past a 64-byte boundary was sent to %s (%s)", c.variant->entry,
             dispatch_path_name(c.path));
  assert_uopc_ok(dispatch_run(d, &c, &err), err);
  check_eager(&v);
  release_view(&v);
  dispatch_fini(d);
}

static void test_dispatch_misaligned_out_takes_generic_path(void **state) {
  (void)state;
  dispatcher *d = new_dispatcher(NULL);
  assert_int_equal(run_case(d, 32, 0, 1, 0), DISPATCH_PATH_FAST);
  uopc_error err = {0};
  view v;
  make_view(&v, 32, 0, 1, 3);
  dispatch_choice c;
  assert_uopc_ok(dispatch_choose(d, &v.x, &v.out, &c, &err), err);
  assert_int_equal(c.path, DISPATCH_PATH_GENERIC);
  assert_uopc_ok(dispatch_run(d, &c, &err), err);
  check_eager(&v);
  release_view(&v);
  dispatch_fini(d);
}

static void test_dispatch_strided_view_takes_generic_path(void **state) {
  (void)state;
  dispatcher *d = new_dispatcher(NULL);
  assert_int_equal(run_case(d, 64, 0, 2, 0), DISPATCH_PATH_GENERIC);
  assert_int_equal(run_case(d, 96, 2, 3, 0), DISPATCH_PATH_GENERIC);
  assert_int_equal(dispatch_fast_count(d), 0);
  dispatch_fini(d);
}

static void test_dispatch_reversed_view_matches_eager(void **state) {
  (void)state;
  dispatcher *d = new_dispatcher(NULL);
  assert_int_equal(run_case(d, 32, UOPC_SLICE_NONE, -1, 0), DISPATCH_PATH_GENERIC);
  dispatch_fini(d);
}

/* The fast kernel's pointers are restrict: an in-place call must not reach it. */
static void test_dispatch_in_place_call_takes_generic_path(void **state) {
  (void)state;
  dispatcher *d = new_dispatcher(NULL);
  uopc_error err = {0};
  uopc_tensor x = {0};
  int64_t n = 32;
  assert_int_equal(run_case(d, 32, 0, 1, 0), DISPATCH_PATH_FAST);
  assert_uopc_ok(uopc_tensor_empty(&x, UOPC_F32, 1, &n, &err), err);
  for (int64_t i = 0; i < n; i++) uopc_tensor_set(&x, i, (double)i - 5.0);
  assert_uopc_ok(dispatch_call(d, &x, &x, &err), err);
  assert_int_equal(dispatch_last_path(d), DISPATCH_PATH_GENERIC);
  for (int64_t i = 0; i < n; i++) assert_true(uopc_tensor_get(&x, i) == (double)((i - 5) * (i - 5) + 1));
  char text[DISPATCH_EXPLAIN_MAX];
  assert_uopc_ok(dispatch_explain(d, text, sizeof text, &err), err);
  assert_contains(text, "guard 'out and x do not overlap' failed: out and x overlap");
  uopc_tensor_release(&x);
  dispatch_fini(d);
}

static void test_dispatch_random_views_match_eager(void **state) {
  (void)state;
  dispatcher *d = new_dispatcher(NULL);
  srand(232);
  for (int i = 0; i < 60; i++) {
    int64_t step = 1 + rand() % 3, start = rand() % 4, n = 1 + rand() % 300;
    run_case(d, start + n * step, start, step, rand() % 2 ? 0 : rand() % 4);
  }
  for (int64_t n = 16; n <= 256; n += 16) assert_int_equal(run_case(d, n, 0, 1, 0), DISPATCH_PATH_FAST);
  assert_true(d->cache.stats.variants_built <= 2);
  assert_int_equal(dispatch_fast_count(d), 1);
  dispatch_fini(d);
}

/* Each variant checks its calls through a plan compiled from its own guard
 * set (in the broken builds too, whose sets lack a guard); on random calls the
 * plan says "all hold" exactly when guard_set_check finds no failing guard. */
static void test_dispatch_variant_plans_agree_with_guard_set_check(void **state) {
  (void)state;
  dispatch_options o = {.specialize_length = 1, .max_variants = 6};
  dispatcher *d = new_dispatcher(&o);
  uopc_error err = {0};
  for (int64_t n = 16; n <= 64; n += 16) run_case(d, n, 0, 1, 0);
  run_case(d, 64, 0, 2, 0);   /* strided: the generic variant, in every build */
  assert_non_null(dispatch_generic(d));
  srand(2321);
  for (int i = 0; i < 400; i++) {
    view v;
    int64_t step = rand() % 4 ? 1 : 2, n = rand() % 2 ? 16 * (1 + rand() % 4) : 1 + rand() % 70;
    make_view(&v, rand() % 4 + n * step, rand() % 4, step, rand() % 3 ? 0 : rand() % 4);
    const uopc_tensor *args[] = {&v.out, &v.x}, *in_place[] = {&v.x, &v.x};
    guard_call c;
    assert_uopc_ok(guard_call_init(&c, DISPATCH_N_ARGS, i % 5 ? args : in_place, &err), err);
    for (int k = 0; k <= dispatch_fast_count(d); k++) {
      const dispatch_variant *var = k < dispatch_fast_count(d) ? d->cache.variants[k] : dispatch_generic(d);
      int failed;
      assert_uopc_ok(guard_set_check(&var->guards, &c, &failed, NULL, &err), err);
      if (dispatch_variant_holds(var, &c) != (failed < 0))
        fail_msg("%s, call %d (n = %lld, x stride %lld): guard_set_check's first failure is %d, the plan says %s",
                 var->entry, i, (long long)v.x.shape[0], (long long)step, failed,
                 dispatch_variant_holds(var, &c) ? "all hold" : "one fails");
    }
    release_view(&v);
  }
  dispatch_fini(d);
}

/* The exact-length index gives the ordered scan's answer and counts on every
 * call: random lengths (some with a variant, some without), misaligned,
 * strided and in-place views, while variants are being added. */
static void test_dispatch_index_agrees_with_scan(void **state) {
  (void)state;
  dispatch_options o = {.specialize_length = 1, .max_variants = 12};
  dispatcher *d = new_dispatcher(&o);
  uopc_error err = {0};
  srand(2322);
  for (int i = 0; i < 500; i++) {
    view v;
    int64_t step = rand() % 5 ? 1 : 2, n = rand() % 4 ? 16 * (1 + rand() % 14) : 1 + rand() % 200;
    make_view(&v, n * step + rand() % 3, rand() % 5 ? 0 : rand() % 3, step, rand() % 6 ? 0 : 1 + rand() % 3);
    const uopc_tensor *args[] = {&v.out, &v.x}, *in_place[] = {&v.x, &v.x};
    guard_call c;
    assert_uopc_ok(guard_call_init(&c, DISPATCH_N_ARGS, i % 7 ? args : in_place, &err), err);
    vcache_stats s0 = d->cache.stats;
    int scan = -7, indexed = -7;
    assert_uopc_ok(dispatch_select(d, &c, &scan, &err), err);
    vcache_stats s1 = d->cache.stats;
    assert_uopc_ok(vcache_index_select(&d->cache, &c, &indexed, &err), err);
    if (scan != indexed || s1.guard_checks - s0.guard_checks != d->cache.stats.guard_checks - s1.guard_checks ||
        s1.guard_failures - s0.guard_failures != d->cache.stats.guard_failures - s1.guard_failures)
      fail_msg("call %d (n = %lld, x stride %lld, %d variants): the scan gives %d with %lld checks and %lld failures, "
               "the index %d with %lld and %lld", i, (long long)v.x.shape[0], (long long)step, dispatch_fast_count(d), scan,
               (long long)(s1.guard_checks - s0.guard_checks), (long long)(s1.guard_failures - s0.guard_failures),
               indexed, (long long)(d->cache.stats.guard_checks - s1.guard_checks),
               (long long)(d->cache.stats.guard_failures - s1.guard_failures));
    dispatch_choice ch;
    int before = dispatch_fast_count(d);
    assert_uopc_ok(dispatch_choose(d, &v.x, i % 7 ? &v.out : &v.x, &ch, &err), err);
    check_alignment(&ch, &v);
    assert_int_equal(d->cache.last.n_rejected, scan >= 0 ? scan : before);   /* those before the winner, or all */
    if (scan >= 0) assert_ptr_equal(ch.variant, d->cache.variants[scan]);
    assert_uopc_ok(dispatch_run(d, &ch, &err), err);
    if (i % 7) check_eager(&v);
    release_view(&v);
  }
  assert_true(d->cache.index.usable);
  assert_true(dispatch_fast_count(d) >= 8);
  dispatch_fini(d);
  d = new_dispatcher(NULL);   /* a variant for every length pins nothing: the index retires */
  run_case(d, 32, 0, 1, 0);
  int index;
  assert_uopc_code(vcache_index_select(&d->cache, &d->cache.last.call, &index, &err), UOPC_E_UNSUPPORTED, err);
  dispatch_fini(d);
}

/* explain finds the rejected variants' failing guards by checking the
 * recorded call again: each variant before the one that ran, with its own
 * reason, in order. */
static void test_dispatch_explain_rederives_rejections(void **state) {
  (void)state;
  dispatch_options o = {.specialize_length = 1, .max_variants = 5};
  dispatcher *d = new_dispatcher(&o);
  uopc_error err = {0};
  char text[DISPATCH_EXPLAIN_MAX];
  for (int64_t n = 16; n <= 48; n += 16) assert_int_equal(run_case(d, n, 0, 1, 0), DISPATCH_PATH_FAST);
  assert_int_equal(run_case(d, 48, 0, 1, 0), DISPATCH_PATH_FAST);
  assert_int_equal(d->cache.last.n_rejected, 2);
  assert_uopc_ok(dispatch_explain(d, text, sizeof text, &err), err);
  assert_contains(text, "call 4: n = 48, fast path (square_plus_one_fast16_n48)\n"
                        "  square_plus_one_fast16_n16 rejected: guard 'n = x.shape[0] in [16, 16]' failed: "
                        "dim 'n' = 48 outside [16, 16]\n"
                        "  square_plus_one_fast16_n32 rejected: guard 'n = x.shape[0] in [32, 32]' failed: "
                        "dim 'n' = 48 outside [32, 32]\n"
                        "  all ");
  assert_int_equal(run_case(d, 33, 1, 1, 0), DISPATCH_PATH_GENERIC);   /* n = 32, 4 bytes past a boundary */
  assert_int_equal(d->cache.last.n_rejected, 3);
  assert_uopc_ok(dispatch_explain(d, text, sizeof text, &err), err);
  assert_contains(text, "  square_plus_one_fast16_n32 rejected: guard 'x is aligned to 64 bytes' failed: x is not "
                        "aligned to 64 bytes (element 0 is 4 bytes past a 64-byte boundary)\n"
                        "  square_plus_one_fast16_n48 rejected: guard 'n = x.shape[0] in [48, 48]' failed: "
                        "dim 'n' = 32 outside [48, 48]\n");
  dispatch_fini(d);
}

/* The explain tests: each runs the calls before the one it explains, then checks that one. */
static void test_dispatch_explain_before_any_call_is_an_error(void **state) {
  (void)state;
  dispatcher *d = new_dispatcher(NULL);
  uopc_error err = {0};
  char text[DISPATCH_EXPLAIN_MAX];
  assert_uopc_code(dispatch_explain(d, text, sizeof text, &err), UOPC_E_INVALID, err);
  /* a call no variant takes (x is f64: every variant's dtype guard fails) ran nothing, and says no more */
  uopc_tensor x, out;
  int64_t n = 32;
  assert_uopc_ok(uopc_tensor_empty(&x, UOPC_F64, 1, &n, &err), err);
  assert_uopc_ok(uopc_tensor_empty(&out, UOPC_F32, 1, &n, &err), err);
  assert_int_not_equal(dispatch_call(d, &x, &out, &err), UOPC_OK);
  assert_uopc_ok(dispatch_explain(d, text, sizeof text, &err), err);
  assert_string_equal(text, "call 1: n = 32, no kernel ran\n");
  uopc_tensor_release(&x);
  uopc_tensor_release(&out);
  dispatch_fini(d);
}

static void test_dispatch_explain_names_the_variant_built(void **state) {
  (void)state;
  dispatcher *d = new_dispatcher(NULL);
  uopc_error err = {0};
  char text[DISPATCH_EXPLAIN_MAX];
  run_case(d, 32, 0, 1, 0);
  assert_uopc_ok(dispatch_explain(d, text, sizeof text, &err), err);
  assert_contains(text, "call 1: n = 32, fast path (square_plus_one_fast16)");
  assert_contains(text, "it was built by this call");
  dispatch_fini(d);
}

static void test_dispatch_explain_names_the_failed_divisibility_guard(void **state) {
  (void)state;
  dispatcher *d = new_dispatcher(NULL);
  uopc_error err = {0};
  char text[DISPATCH_EXPLAIN_MAX];
  run_case(d, 32, 0, 1, 0);
  run_case(d, 33, 0, 1, 0);
  assert_uopc_ok(dispatch_explain(d, text, sizeof text, &err), err);
  assert_contains(text, "call 2: n = 33, generic (square_plus_one_generic)\n"
                        "  square_plus_one_fast16 rejected: guard 'n = x.shape[0] is a multiple of 16' failed: "
                        "n = 33 is not a multiple of 16\n");
  /* The same into 60 bytes inside a larger array: its first 59 characters, and no byte outside moves. */
  char boxed[100];
  memset(boxed, '#', sizeof boxed);
  assert_uopc_ok(dispatch_explain(d, boxed + 20, 60, &err), err);
  if (strlen(boxed + 20) != 59 || strncmp(boxed + 20, text, 59) != 0)
    fail_msg("explained into 60 bytes: expected the first 59 characters of \"%s\", got \"%.60s\"", text,
             boxed + 20);
  for (int i = 0; i < 100; i++)
    if ((i < 20 || i >= 80) && boxed[i] != '#') fail_msg("explained into bytes [20, 80): byte %d changed", i);
  dispatch_fini(d);
}

static void test_dispatch_explain_names_the_failed_contiguity_guard(void **state) {
  (void)state;
  dispatcher *d = new_dispatcher(NULL);
  uopc_error err = {0};
  char text[DISPATCH_EXPLAIN_MAX];
  run_case(d, 32, 0, 1, 0);
  run_case(d, 33, 0, 1, 0);
  run_case(d, 64, 0, 2, 0);
  assert_uopc_ok(dispatch_explain(d, text, sizeof text, &err), err);
  assert_contains(text, "guard 'x is contiguous' failed: x is not contiguous (strides (2) for shape (32))");
  dispatch_fini(d);
}

static void test_dispatch_explain_names_the_failed_alignment_guard(void **state) {
  (void)state;
  dispatcher *d = new_dispatcher(NULL);
  uopc_error err = {0};
  char text[DISPATCH_EXPLAIN_MAX];
  run_case(d, 32, 0, 1, 0);
  run_case(d, 33, 0, 1, 0);
  run_case(d, 64, 0, 2, 0);
  run_case(d, 33, 1, 1, 0);
  assert_uopc_ok(dispatch_explain(d, text, sizeof text, &err), err);
  assert_contains(text, "guard 'x is aligned to 64 bytes' failed: x is not aligned to 64 bytes "
                        "(element 0 is 4 bytes past a 64-byte boundary)");
  dispatch_fini(d);
}

/* The seed's corrupted guard, caught by explain: a fast variant whose compiled
 * plan rejects every call while its guards hold. The call runs generic (the
 * limit leaves no place for a second fast variant), and explain, which checks
 * the recorded call against the guards themselves, says they disagree. */
static void test_dispatch_explain_names_a_variant_rejected_while_its_guards_hold(void **state) {
  (void)state;
  dispatch_options o = {.max_variants = 2};
  dispatcher *d = new_dispatcher(&o);
  uopc_error err = {0};
  char text[DISPATCH_EXPLAIN_MAX];
  assert_int_equal(run_case(d, 32, 0, 1, 0), DISPATCH_PATH_FAST);
  d->cache.variants[0]->plan.never = 1;   /* the corruption: the compiled form fails every call */
  assert_int_equal(run_case(d, 32, 0, 1, 0), DISPATCH_PATH_GENERIC);
  assert_uopc_ok(dispatch_explain(d, text, sizeof text, &err), err);
  assert_string_equal(text, "call 2: n = 32, generic (square_plus_one_generic)\n"
                            "  square_plus_one_fast16 rejected, yet all its guards hold on this call\n"
                            "  a new fast variant was wanted, but the variant limit (2) is reached: "
                            "ran the generic variant\n"
                            "  all 6 guards of square_plus_one_generic held; it was built by this call\n");
  dispatch_fini(d);
}

/* With no fast variant yet, explain says why the call cannot have one. */
static void test_dispatch_explain_first_call_generic(void **state) {
  (void)state;
  dispatcher *d = new_dispatcher(NULL);
  uopc_error err = {0};
  char text[DISPATCH_EXPLAIN_MAX];
  run_case(d, 17, 0, 1, 0);
  assert_uopc_ok(dispatch_explain(d, text, sizeof text, &err), err);
  assert_contains(text, "no fast variant can serve it: guard 'n = x.shape[0] is a multiple of 16' failed: "
                        "n = 17 is not a multiple of 16");
#ifndef __SANITIZE_ADDRESS__
  /* No memory for the fast guards it checks again: UOPC_E_NOMEM after the first line, naming no guard
   * it could not check (an explain that needs no memory gives the whole text). */
  char full[DISPATCH_EXPLAIN_MAX];
  strcpy(full, text);
  memset(text, '#', sizeof text);
  reallocs_left = 0;
  int rc = dispatch_explain(d, text, sizeof text, &err);
  reallocs_left = -1;
  if (rc == UOPC_OK) {
    assert_string_equal(text, full);
  } else {
    assert_uopc_code(rc, UOPC_E_NOMEM, err);
    assert_string_equal(text, "call 1: n = 17, generic (square_plus_one_generic)\n");
  }
#endif
  dispatch_fini(d);
}

/* One fast variant per length, limit 3: two fast ones, the third place is the
 * generic's. Past the limit, the default policy runs the generic variant. */
static void test_dispatch_variant_limit_runs_generic(void **state) {
  (void)state;
  dispatch_options o = {.specialize_length = 1, .max_variants = 3};
  dispatcher *d = new_dispatcher(&o);
  uopc_error err = {0};
  assert_int_equal(run_case(d, 16, 0, 1, 0), DISPATCH_PATH_FAST);
  assert_int_equal(run_case(d, 32, 0, 1, 0), DISPATCH_PATH_FAST);
  assert_int_equal(run_case(d, 16, 0, 1, 0), DISPATCH_PATH_FAST);
  assert_string_equal(d->cache.variants[1]->entry, "square_plus_one_fast16_n32");
  assert_int_equal(run_case(d, 48, 0, 1, 0), DISPATCH_PATH_GENERIC);
  assert_int_equal(run_case(d, 64, 0, 1, 0), DISPATCH_PATH_GENERIC);
  assert_int_equal(dispatch_fast_count(d), 2);
  assert_int_equal(d->cache.stats.variants_built, 3);
  assert_int_equal(d->cache.stats.limit_hits, 2);
  char text[DISPATCH_EXPLAIN_MAX];
  assert_uopc_ok(dispatch_explain(d, text, sizeof text, &err), err);
  assert_contains(text, "square_plus_one_fast16_n16 rejected: guard 'n = x.shape[0] in [16, 16]' failed: "
                        "dim 'n' = 64 outside [16, 16]");
  assert_contains(text, "the variant limit (3) is reached: ran the generic variant");
#ifndef __SANITIZE_ADDRESS__
  /* A miss with no memory for the guard set it checks: that error, not a kernel. Here either answer
   * of a check would run the generic variant, already built (no allocation): only the error stops it. */
  view v;
  make_view(&v, 80, 0, 1, 0);
  reallocs_left = 0;
  int rc = dispatch_call(d, &v.x, &v.out, &err);
  reallocs_left = -1;
  assert_uopc_code(rc, UOPC_E_NOMEM, err);
  for (int64_t i = 0; i < 80 + POISON_TAIL; i++) assert_true(uopc_tensor_get(&v.buf, i) == POISON);
  assert_int_equal(d->cache.stats.variants_built, 3);
  assert_int_equal(d->cache.stats.limit_hits, 2);
  assert_uopc_ok(dispatch_call(d, &v.x, &v.out, &err), err);   /* with memory, the same call runs generic */
  assert_int_equal(dispatch_last_path(d), DISPATCH_PATH_GENERIC);
  check_eager(&v);
  release_view(&v);
#endif
  dispatch_fini(d);
}

static void test_dispatch_variant_limit_fails_by_option(void **state) {
  (void)state;
  dispatch_options o = {.specialize_length = 1, .max_variants = 2, .on_limit = DISPATCH_LIMIT_FAIL};
  dispatcher *d = new_dispatcher(&o);
  uopc_error err = {0};
  assert_int_equal(run_case(d, 16, 0, 1, 0), DISPATCH_PATH_FAST);
  assert_int_equal(run_case(d, 17, 0, 1, 0), DISPATCH_PATH_GENERIC);   /* no fast kernel wanted */
  view v;
  make_view(&v, 32, 0, 1, 0);
  assert_uopc_code(dispatch_call(d, &v.x, &v.out, &err), UOPC_E_LIMIT, err);
  assert_contains(err.message, "a call with n = 32 needs a new fast variant, but the variant limit (2");
  for (int64_t i = 0; i < 32 + POISON_TAIL; i++) assert_true(uopc_tensor_get(&v.buf, i) == POISON);
  char text[DISPATCH_EXPLAIN_MAX];
  assert_uopc_ok(dispatch_explain(d, text, sizeof text, &err), err);
  assert_contains(text, "no kernel ran");
  assert_contains(text, "refused with UOPC_E_LIMIT");
  release_view(&v);
  assert_int_equal(d->cache.stats.variants_built, 2);
  dispatch_fini(d);
}

/* The dispatcher is the variant cache with its own steps: the generic
 * variant is the cache's general one, kept after the fast ones whatever the
 * order of building, and found on a miss; the kernels are the dispatcher's
 * own, so the core builds no graph program. */
static void test_dispatch_generic_is_the_caches_general_variant(void **state) {
  (void)state;
  uopc_counters_reset();
  dispatch_options o = {.specialize_length = 1, .max_variants = 4};
  dispatcher *d = new_dispatcher(&o);
  uopc_error err = {0};
  assert_int_equal(run_case(d, 17, 0, 1, 0), DISPATCH_PATH_GENERIC);
  assert_int_equal(run_case(d, 16, 0, 1, 0), DISPATCH_PATH_FAST);
  assert_int_equal(run_case(d, 17, 0, 1, 0), DISPATCH_PATH_GENERIC);
  assert_int_equal(d->cache.count, 2);
  assert_int_equal(d->cache.n_general, 1);
  assert_string_equal(d->cache.variants[0]->entry, "square_plus_one_fast16_n16");
  assert_ptr_equal(dispatch_generic(d), d->cache.variants[1]);
  assert_true(dispatch_generic(d)->general);
  assert_int_equal(d->cache.last.chosen, 1);
  assert_int_equal(d->cache.last.n_rejected, 1);
  /* checks: 1 (generic built); 1 (n16 built); 1 failure + 1 */
  assert_int_equal(d->cache.stats.guard_checks, 4);
  assert_int_equal(d->cache.stats.guard_failures, 1);
  assert_int_equal(uopc_counter_get(EXEC_C_BUILT), 0);
  assert_int_equal(uopc_counter_get(UOPC_C_PROGRAMS_CONSTRUCTED), 2);
  char text[DISPATCH_EXPLAIN_MAX];
  assert_uopc_ok(vcache_explain(&d->cache, text, sizeof text, &err), err);
  assert_contains(text, "ran square_plus_one_generic, variant 2 of 2\n");
  dispatch_fini(d);
}

/* A runtime value enters the key only when the code specializes on it. */
static void test_dispatch_variant_keys(void **state) {
  (void)state;
  uopc_error err = {0};
  dispatcher *d = new_dispatcher(NULL);
  spec_key a, b, g;
  assert_uopc_ok(dispatch_variant_key(d, DISPATCH_PATH_FAST, 0, &a, &err), err);
  assert_uopc_ok(dispatch_variant_key(d, DISPATCH_PATH_FAST, 48, &b, &err), err);
  assert_uopc_ok(dispatch_variant_key(d, DISPATCH_PATH_GENERIC, 0, &g, &err), err);
  assert_contains(a.text, "op=square_plus_one graph=");
  assert_contains(a.text, "layout=contiguous aligned64 disjoint numerics=ieee fp-contract=off");
  assert_contains(a.text, "n%16==0");
  assert_contains(b.text, "constraints=n==48");
  assert_contains(g.text, "layout=strided any-alignment");
  assert_false(spec_key_equal(&a, &b));
  assert_false(spec_key_equal(&a, &g));
  run_case(d, 32, 0, 1, 0);
  run_case(d, 48, 0, 1, 0);
  assert_int_equal(dispatch_fast_count(d), 1);   /* n is no part of the fast key: one variant serves both */
  assert_true(spec_key_equal(&d->cache.variants[0]->key, &a));
  dispatch_fini(d);
  dispatch_options o = {.fast_math = 1};
  d = new_dispatcher(&o);
  assert_uopc_ok(dispatch_variant_key(d, DISPATCH_PATH_FAST, 0, &b, &err), err);
  assert_contains(b.text, "numerics=fast-math");
  assert_contains(b.text, "-ffast-math");
  assert_false(spec_key_equal(&a, &b));
  dispatch_fini(d);
}

static void expect_rejected(dispatcher *d, const uopc_tensor *x, uopc_tensor *out, int code, const char *text) {
  uopc_error err = {0};
  int64_t before = d->stats.fast_calls + d->stats.generic_calls;
  assert_uopc_code(dispatch_call(d, x, out, &err), code, err);
  assert_contains(err.message, text);
  assert_int_equal(d->stats.fast_calls + d->stats.generic_calls, before);
}

static void test_dispatch_rejects_bad_inputs(void **state) {
  (void)state;
  uopc_error err = {0};
  dispatcher bad;
  dispatch_options o = {.max_variants = DISPATCH_MAX_VARIANTS + 1};
  assert_uopc_code(dispatch_init(&bad, &o, &err), UOPC_E_INVALID, err);
  assert_contains(err.message, "max_variants = 33 outside [1, 32]");
  o = (dispatch_options){.max_length = -1};
  assert_uopc_code(dispatch_init(&bad, &o, &err), UOPC_E_INVALID, err);
  o = (dispatch_options){.max_length = 64};
  dispatcher *d = new_dispatcher(&o);
  uopc_tensor f64 = {0}, m = {0}, f = {0}, big = {0}, shifted = {0}, head = {0}, empty = {0};
  int64_t n = 16, n65 = 65, zero = 0, shape2[2] = {2, 8};
  assert_uopc_ok(uopc_tensor_empty(&f64, UOPC_F64, 1, &n, &err), err);
  assert_uopc_ok(uopc_tensor_empty(&m, UOPC_F32, 2, shape2, &err), err);
  assert_uopc_ok(uopc_tensor_empty(&f, UOPC_F32, 1, &n, &err), err);
  assert_uopc_ok(uopc_tensor_empty(&big, UOPC_F32, 1, &n65, &err), err);
  assert_uopc_ok(uopc_tensor_empty(&empty, UOPC_F32, 1, &zero, &err), err);
  assert_uopc_ok(uopc_tensor_slice(&shifted, &f, 0, 1, 16, 1, &err), err);
  assert_uopc_ok(uopc_tensor_slice(&head, &f, 0, 0, 15, 1, &err), err);
  expect_rejected(d, &f64, &f64, UOPC_E_DTYPE, "x has dtype f64 and out f64");
  expect_rejected(d, &m, &m, UOPC_E_INVALID, "got ranks 2 and 2");
  expect_rejected(d, &head, &f, UOPC_E_INVALID, "out has length 16 but x has 15");
  expect_rejected(d, &big, &big, UOPC_E_BOUNDS, "dim 'n' = 65 outside [1, 64]");
  expect_rejected(d, &empty, &empty, UOPC_E_BOUNDS, "dim 'n' = 0 outside [1, 64]");
  expect_rejected(d, &head, &shifted, UOPC_E_ALIAS, "out partly overlaps x");
  assert_int_equal(d->cache.stats.variants_built, 0);
  uopc_tensor *all[] = {&f64, &m, &f, &big, &shifted, &head, &empty};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) uopc_tensor_release(all[i]);
  dispatch_fini(d);
}

/* The generated text carries its contract, and the fast one has no tail loop. */
static void test_dispatch_generated_source_banner(void **state) {
  (void)state;
  dispatcher *d = new_dispatcher(NULL);
  run_case(d, 32, 0, 1, 0);
  char path[4200], text[8192];
  snprintf(path, sizeof path, "%s/kernel.c", uopc_program_dir(d->cache.variants[0]->program));
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  size_t len = fread(text, 1, sizeof text - 1, f);
  text[len] = '\0';
  fclose(f);
  assert_contains(text, "/* square_plus_one_fast16: out = add(mul(x, x), 1) elementwise");
  assert_contains(text, " * dims: n in [1, 16777216]\n");
  assert_contains(text, "n = x.shape[0] is a multiple of 16;\n");
  assert_contains(text, " * cache key: op=square_plus_one graph=");
  assert_contains(text, "void square_plus_one_fast16(float *restrict out_p, const float *restrict x_p, int64_t n)");
  assert_contains(text, "__builtin_assume_aligned(x_p, 64)");
  assert_contains(text, "for (int64_t i0 = 0; i0 < n / 16; i0++) {\n    for (int64_t i1 = 0; i1 < 16; i1++) {");
  assert_contains(text, "\n      out[i0 * 16 + i1] = t");   /* the body one level inside both loops */
  assert_contains(text, ";\n    }\n  }\n}\n");
#ifndef __SANITIZE_ADDRESS__
  /* The same source again, memory running out at each growth of its text in turn: an error
   * that leaves nothing held, since the dispatcher frees a source only when it was made. */
  vcache_variant *v = d->cache.variants[0];
  variant_spec spec = {&d->graph, d->op, d->op_name, &d->n, v->param, &v->guards, &v->key};
  uopc_error err = {0};
  int k = 0, rc = UOPC_E_NOMEM;
  for (; k < 64 && rc == UOPC_E_NOMEM; k++) {
    variant_source src;
    reallocs_left = k;
    rc = variant_codegen_fast16(&src, &spec, &err);
    reallocs_left = -1;
    if (rc == UOPC_E_NOMEM && src.text.data)
      fail_msg("out of memory at growth %d: the error keeps %zu bytes of source the caller never frees", k,
               src.text.cap);
    if (rc == UOPC_OK) variant_source_fini(&src);
  }
  assert_uopc_ok(rc, err);
  assert_true(k > 1);   /* at least one growth failed before the one that had room */
#endif
  dispatch_fini(d);
}

/* ---- The fast contract, assumption by assumption. Each call below breaks
 * exactly one assumption of the fast kernel and keeps every other; the set
 * dispatch_fast16_guards builds must reject it. The decision is the given
 * compiled plan's (guard_plan.h), so this judges the set, not guard_check.
 * The views are wrapped around one 64-byte aligned arena; nothing runs.
 * The dispatcher's own argument checks (dispatch_op.c: ranks, dtypes, equal
 * lengths, the bounds of n, a partial overlap) refuse many of these calls
 * before any guard is asked, so only this test sees a set that leaves those
 * guards out; it carries most of the function's points. */

enum { ARENA_BYTES = 1 << 16, OUT_AT = 1 << 14 };

typedef struct contract_case {
  const char *breaks;          /* the assumption the call breaks */
  uopc_dtype out_dt, x_dt;
  int out_rank, x_rank;        /* rank 2: shape (n, 1) */
  int64_t out_n, x_n, out_step, x_step, out_at, x_at;   /* lengths, strides, byte offsets */
} contract_case;

static void wrap_arg(uopc_tensor *t, char *arena, uopc_dtype dt, int rank, int64_t n, int64_t step, int64_t at) {
  uopc_error err = {0};
  int64_t shape[2] = {n, 1}, strides[2] = {step, 1};
  assert_uopc_ok(uopc_tensor_wrap(t, arena + at, dt, rank, shape, strides, &err), err);
}

/* 1 when the compiled fast set (exact_n, 0 for none) holds for the case. */
static int contract_holds(const dispatcher *d, int64_t exact_n, char *arena, const contract_case *k, char *set,
                          size_t size) {
  uopc_error err = {0};
  guard_set s;
  guard_plan plan;
  uopc_tensor out = {0}, x = {0};
  guard_call c;
  assert_uopc_ok(dispatch_fast16_guards(d, exact_n, &s, &err), err);
  assert_uopc_ok(guard_plan_compile(&plan, &s, &err), err);
  wrap_arg(&out, arena, k->out_dt, k->out_rank, k->out_n, k->out_step, k->out_at);
  wrap_arg(&x, arena, k->x_dt, k->x_rank, k->x_n, k->x_step, k->x_at);
  const uopc_tensor *args[] = {&out, &x};
  assert_uopc_ok(guard_call_init(&c, DISPATCH_N_ARGS, args, &err), err);
  int holds = guard_plan_holds(&plan, &c);
  guard_set_describe(&s, "; ", set, size);
  uopc_tensor_release(&out), uopc_tensor_release(&x);
  guard_plan_fini(&plan), guard_set_fini(&s);
  return holds;
}

static void test_dispatch_fast16_guards_cover_every_assumption(void **state) {
  (void)state;
#define F UOPC_F32
#define D UOPC_F64
  static const contract_case ok = {"nothing", F, F, 1, 1, 32, 32, 1, 1, OUT_AT, 0};
  static const contract_case bad[] = {
    {"x's dtype f32", F, D, 1, 1, 32, 32, 1, 1, OUT_AT, 0},
    {"out's dtype f32", D, F, 1, 1, 32, 32, 1, 1, OUT_AT, 0},
    {"x's rank 1", F, F, 1, 2, 32, 32, 1, 1, OUT_AT, 0},
    {"out's rank 1", F, F, 2, 1, 32, 32, 1, 1, OUT_AT, 0},
    {"equal lengths (out longer)", F, F, 1, 1, 48, 32, 1, 1, OUT_AT, 0},
    {"equal lengths (out shorter)", F, F, 1, 1, 16, 32, 1, 1, OUT_AT, 0},
    {"n <= max_length (64)", F, F, 1, 1, 80, 80, 1, 1, OUT_AT, 0},
    {"n >= 1", F, F, 1, 1, 0, 0, 1, 1, OUT_AT, 0},
    {"n % 16 == 0 (n = 40)", F, F, 1, 1, 40, 40, 1, 1, OUT_AT, 0},
    {"n % 16 == 0 (n = 33)", F, F, 1, 1, 33, 33, 1, 1, OUT_AT, 0},
    {"x contiguous (stride 2)", F, F, 1, 1, 32, 32, 1, 2, OUT_AT, 0},
    {"out contiguous (stride 2)", F, F, 1, 1, 32, 32, 2, 1, OUT_AT, 0},
    {"out contiguous (stride -1)", F, F, 1, 1, 32, 32, -1, 1, OUT_AT + 31 * 4, 0},
    {"x 64-byte aligned (32 past)", F, F, 1, 1, 32, 32, 1, 1, OUT_AT, 32},
    {"out 64-byte aligned (32 past)", F, F, 1, 1, 32, 32, 1, 1, OUT_AT + 32, 0},
    {"out disjoint from x (partial overlap)", F, F, 1, 1, 32, 32, 1, 1, 64, 0},
    {"out disjoint from x (in place)", F, F, 1, 1, 32, 32, 1, 1, 0, 0},
  };
  dispatch_options o = {.max_length = 64};
  dispatcher *d = new_dispatcher(&o);
  char *arena = aligned_alloc(64, ARENA_BYTES), set[2048];
  assert_non_null(arena);
  static const int64_t exact[] = {0, 32};
  for (int e = 0; e < 2; e++) {
    if (!contract_holds(d, exact[e], arena, &ok, set, sizeof set))
      fail_msg("exact_n %lld: the fast set rejects a call that meets every assumption (n = 32, packed, aligned, "
               "disjoint); set: %s", (long long)exact[e], set);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
      if (contract_holds(d, exact[e], arena, &bad[i], set, sizeof set))
        fail_msg("exact_n %lld: the fast set holds for a call that breaks only \"%s\", which the fast kernel "
                 "assumes; set: %s", (long long)exact[e], bad[i].breaks, set);
  }
  contract_case other_n = ok;   /* an exact variant serves its own length only */
  other_n.out_n = other_n.x_n = 48;
  if (contract_holds(d, 32, arena, &other_n, set, sizeof set))
    fail_msg("exact_n 32: the fast set holds for n = 48; set: %s", set);
#undef F
#undef D
  free(arena);
  dispatch_fini(d);
}

/* A strided out in the fast kernel's packed stores would write the gaps
 * and miss half its elements. The decision is checked before it runs. */
static void test_dispatch_strided_out_takes_generic_path(void **state) {
  (void)state;
  dispatcher *d = new_dispatcher(NULL);
  uopc_error err = {0};
  assert_int_equal(run_case(d, 32, 0, 1, 0), DISPATCH_PATH_FAST);
  for (int64_t step = 2; step <= 3; step++) {
    view v;
    make_view(&v, 32, 0, 1, 0);
    uopc_tensor_release(&v.out);
    uopc_tensor_release(&v.buf);
    int64_t size = 32 * step + POISON_TAIL;
    assert_uopc_ok(uopc_tensor_empty(&v.buf, UOPC_F32, 1, &size, &err), err);
    for (int64_t i = 0; i < size; i++) uopc_tensor_set(&v.buf, i, POISON);
    assert_uopc_ok(uopc_tensor_slice(&v.out, &v.buf, 0, 0, 32 * step, step, &err), err);
    dispatch_choice c;
    assert_uopc_ok(dispatch_choose(d, &v.x, &v.out, &c, &err), err);
    if (c.path != DISPATCH_PATH_GENERIC)
      fail_msg("an out of stride %lld (n = 32, aligned, disjoint) was sent to %s (%s)", (long long)step,
               c.variant->entry, dispatch_path_name(c.path));
    assert_uopc_ok(dispatch_run(d, &c, &err), err);
    for (int64_t i = 0; i < 32; i++) {
      float a = (float)uopc_tensor_get(&v.x, i);
      if (uopc_tensor_get(&v.out, i) != (double)(a * a + 1.0f))
        fail_msg("out stride %lld: index %lld expected %.9g, got %.9g", (long long)step, (long long)i,
                 (double)(a * a + 1.0f), uopc_tensor_get(&v.out, i));
    }
    for (int64_t i = 0; i < size; i++)
      if (i % step && uopc_tensor_get(&v.buf, i) != POISON)
        fail_msg("out stride %lld: buffer index %lld, between out's elements, was written", (long long)step,
                 (long long)i);
    release_view(&v);
  }
  dispatch_fini(d);
}

/* A length-n f32 vector that ends where a PROT_NONE page starts: any read or
 * write past its end faults, whatever value it would have written back. */
typedef struct fenced {
  char *map;
  size_t bytes;
  uopc_tensor t;
} fenced;

static void fence(fenced *f, int64_t n, double first) {
  uopc_error err = {0};
  long page = sysconf(_SC_PAGESIZE);
  size_t body = ((size_t)n * 4 + (size_t)page - 1) / (size_t)page * (size_t)page;
  f->bytes = body + (size_t)page;
  f->map = mmap(NULL, f->bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  assert_true(f->map != MAP_FAILED);
  assert_int_equal(mprotect(f->map + body, (size_t)page, PROT_NONE), 0);
  int64_t one = 1;
  assert_uopc_ok(uopc_tensor_wrap(&f->t, f->map + body - n * 4, UOPC_F32, 1, &n, &one, &err), err);
  for (int64_t i = 0; i < n; i++) uopc_tensor_set(&f->t, i, first + (double)i);
}

static void unfence(fenced *f) {
  uopc_tensor_release(&f->t);
  munmap(f->map, f->bytes);
}

static void test_dispatch_fast_kernel_stays_inside_out(void **state) {
  (void)state;
  static const int64_t lengths[] = {16, 32, 48, 256, 1024};
  for (int exact = 0; exact <= 1; exact++) {
    dispatch_options o = {.specialize_length = exact};
    dispatcher *d = new_dispatcher(&o);
    for (size_t k = 0; k < sizeof lengths / sizeof *lengths; k++) {
      int64_t n = lengths[k];
      fenced x, out;
      uopc_error err = {0};
      dispatch_choice c;
      fence(&x, n, -7.0);
      fence(&out, n, -12345.0);
      assert_uopc_ok(dispatch_choose(d, &x.t, &out.t, &c, &err), err);
      if (c.path != DISPATCH_PATH_FAST)
        fail_msg("n = %lld, packed, 64-byte aligned and disjoint: expected the fast path, got %s", (long long)n,
                 dispatch_path_name(c.path));
      assert_uopc_ok(dispatch_run(d, &c, &err), err);   /* a touch past either end faults here */
      for (int64_t i = 0; i < n; i++) {
        float a = (float)(-7.0 + (double)i);
        if (uopc_tensor_get(&out.t, i) != (double)(a * a + 1.0f))
          fail_msg("%s, n = %lld: index %lld expected %.9g, got %.9g", c.variant->entry, (long long)n, (long long)i,
                   (double)(a * a + 1.0f), uopc_tensor_get(&out.t, i));
      }
      unfence(&x), unfence(&out);
    }
    dispatch_fini(d);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_dispatch_driver_sequence_paths),
    cmocka_unit_test(test_dispatch_driver_sequence_counts_guard_checks),
    cmocka_unit_test(test_dispatch_driver_sequence_counts_fast_and_generic_calls),
    cmocka_unit_test(test_dispatch_driver_sequence_builds_two_variants),
    cmocka_unit_test(test_dispatch_length_33_matches_eager),
    cmocka_unit_test(test_dispatch_misaligned_view_takes_generic_path),
    cmocka_unit_test(test_dispatch_misaligned_out_takes_generic_path),
    cmocka_unit_test(test_dispatch_strided_view_takes_generic_path),
    cmocka_unit_test(test_dispatch_reversed_view_matches_eager),
    cmocka_unit_test(test_dispatch_in_place_call_takes_generic_path),
    cmocka_unit_test(test_dispatch_random_views_match_eager),
    cmocka_unit_test(test_dispatch_variant_plans_agree_with_guard_set_check),
    cmocka_unit_test(test_dispatch_index_agrees_with_scan),
    cmocka_unit_test(test_dispatch_explain_before_any_call_is_an_error),
    cmocka_unit_test(test_dispatch_explain_names_the_variant_built),
    cmocka_unit_test(test_dispatch_explain_names_the_failed_divisibility_guard),
    cmocka_unit_test(test_dispatch_explain_names_the_failed_contiguity_guard),
    cmocka_unit_test(test_dispatch_explain_names_the_failed_alignment_guard),
    cmocka_unit_test(test_dispatch_explain_rederives_rejections),
    cmocka_unit_test(test_dispatch_explain_names_a_variant_rejected_while_its_guards_hold),
    cmocka_unit_test(test_dispatch_explain_first_call_generic),
    cmocka_unit_test(test_dispatch_variant_limit_runs_generic),
    cmocka_unit_test(test_dispatch_variant_limit_fails_by_option),
    cmocka_unit_test(test_dispatch_generic_is_the_caches_general_variant),
    cmocka_unit_test(test_dispatch_variant_keys),
    cmocka_unit_test(test_dispatch_rejects_bad_inputs),
    cmocka_unit_test(test_dispatch_generated_source_banner),
    cmocka_unit_test(test_dispatch_fast16_guards_cover_every_assumption),
    cmocka_unit_test(test_dispatch_strided_out_takes_generic_path),
    cmocka_unit_test(test_dispatch_fast_kernel_stays_inside_out),
  };
  return cmocka_run_group_tests(tests, testutil_fresh_cache, testutil_remove_cache);
}
