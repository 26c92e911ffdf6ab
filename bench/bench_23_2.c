/* bench_23_2.c: the figures of lab 23.2.
 *   the dispatcher's overhead per call (the call's record, guard checks,
 *   counting and the run hook: the variant cache's per-call path) with 1
 *   and with 8 variants, against a direct call of the same kernel, at n =
 *   16 per variant so that the kernel itself costs little;
 *   the fast path against the generic kernel at 16M elements;
 *   the variant cache (vcache.h) on the same op as a graph, with 1 and 8
 *   exact-size variants, over a direct call of the chosen kernel (and, for
 *   scale, exec_run's checked call, which the cache's path skips).
 * Prints `bench 23.2 <case> n=<n> ns=<ns per call>` and `ratio 23.2 ...`
 * lines; each figure is the best of several repetitions. */
#include <stdio.h>
#include <time.h>
#include "bench.h"
#include "dispatch.h"
#include "vcache.h"

enum { REPS = 7, CALLS = 1000000 };

typedef void (*fast_fn)(float *, const float *, int64_t);
typedef void (*generic_fn)(float *, const float *, int64_t, int64_t, int64_t);

/* Best ns per call of `calls` dispatched calls (fn NULL) or direct calls of fn. */
static double best_dispatch(dispatcher *d, uopc_tensor *x, uopc_tensor *out, fast_fn fn, int calls) {
  uopc_error err;
  float *xp = uopc_tensor_data(x), *op = uopc_tensor_data(out);
  double best = 1e30;
  for (int r = 0; r < REPS; r++) {
    double t0 = bench_now_ns();
    for (int i = 0; i < calls; i++) {
      if (fn) fn(op, xp, x->shape[0]);
      else dispatch_call(d, x, out, &err);
    }
    double t = (bench_now_ns() - t0) / calls;
    if (t < best) best = t;
  }
  return best;
}

static int fail(const uopc_error *err) {
  fprintf(stderr, "bench 23.2: %s: %s\n", uopc_error_name(err->code), err->message);
  return 1;
}

/* variants fast variants (one per length 16, 32, ...; the call's is last). */
static int bench_overhead(int variants, uopc_error *err) {
  dispatch_options o = {.specialize_length = variants > 1, .max_variants = variants + 1};
  dispatcher d;
  uopc_tensor x = {0}, out = {0};
  int64_t n = 16 * variants;
  int rc = dispatch_init(&d, &o, err);
  for (int64_t k = 1; !rc && k <= variants; k++) {
    int64_t len = 16 * k;
    uopc_tensor_release(&x);
    uopc_tensor_release(&out);
    rc = uopc_tensor_empty(&x, UOPC_F32, 1, &len, err);
    if (!rc) rc = uopc_tensor_empty(&out, UOPC_F32, 1, &len, err);
    if (!rc) rc = dispatch_call(&d, &x, &out, err);
  }
  if (rc || dispatch_fast_count(&d) != variants || dispatch_last_path(&d) != DISPATCH_PATH_FAST) {
    if (!rc) fprintf(stderr, "bench 23.2: expected %d fast variants, got %d\n", variants, dispatch_fast_count(&d));
    dispatch_fini(&d);
    return rc ? fail(err) : 1;
  }
  fast_fn direct = (fast_fn)uopc_program_entry(d.cache.variants[variants - 1]->program);
  double guarded = best_dispatch(&d, &x, &out, NULL, CALLS);
  double plain = best_dispatch(&d, &x, &out, direct, CALLS);
  printf("bench 23.2 dispatch_%d_variants n=%lld ns=%.1f\n", variants, (long long)n, guarded);
  printf("bench 23.2 direct_%d_variants n=%lld ns=%.1f\n", variants, (long long)n, plain);
  printf("ratio 23.2 dispatch_%d_variants overhead=%.1f ns (goal with 8 variants: <= 25 ns)\n", variants,
         guarded - plain);
  uopc_tensor_release(&x);
  uopc_tensor_release(&out);
  dispatch_fini(&d);
  return 0;
}

static int bench_kernels(int64_t n, uopc_error *err) {
  dispatcher d;
  uopc_tensor x = {0}, out = {0}, odd = {0}, odd_out = {0};
  int64_t n1 = n - 1;
  int rc = dispatch_init(&d, NULL, err);
  if (!rc) rc = uopc_tensor_empty(&x, UOPC_F32, 1, &n, err);
  if (!rc) rc = uopc_tensor_empty(&out, UOPC_F32, 1, &n, err);
  if (!rc) rc = uopc_tensor_slice(&odd, &x, 0, 0, n1, 1, err);
  if (!rc) rc = uopc_tensor_slice(&odd_out, &out, 0, 0, n1, 1, err);
  if (!rc) rc = dispatch_call(&d, &x, &out, err);
  if (!rc) rc = dispatch_call(&d, &odd, &odd_out, err);   /* builds the generic variant */
  if (rc || !dispatch_generic(&d) || dispatch_fast_count(&d) != 1) { dispatch_fini(&d); return rc ? fail(err) : 1; }
  fast_fn fast = (fast_fn)uopc_program_entry(d.cache.variants[0]->program);
  generic_fn generic = (generic_fn)uopc_program_entry(dispatch_generic(&d)->program);
  float *xp = uopc_tensor_data(&x), *op = uopc_tensor_data(&out);
  double tf = 1e30, tg = 1e30;
  for (int r = 0; r < REPS; r++) {
    double t0 = bench_now_ns();
    fast(op, xp, n);
    double t1 = bench_now_ns();
    generic(op, xp, n, 1, 1);
    double t2 = bench_now_ns();
    if (t1 - t0 < tf) tf = t1 - t0;
    if (t2 - t1 < tg) tg = t2 - t1;
  }
  printf("bench 23.2 fast16 n=%lld ns=%.0f (%.1f GB/s)\n", (long long)n, tf, 8.0 * n / tf);
  printf("bench 23.2 generic n=%lld ns=%.0f (%.1f GB/s)\n", (long long)n, tg, 8.0 * n / tg);
  printf("ratio 23.2 fast16 n=%lld generic/fast16=%.2f\n", (long long)n, tg / tf);
  uopc_tensor_release(&odd);
  uopc_tensor_release(&odd_out);
  uopc_tensor_release(&x);
  uopc_tensor_release(&out);
  dispatch_fini(&d);
  return 0;
}

/* ---- The variant cache (vcache.h) on the same op, as a graph of the core. */

static int build_square_plus_one(void *ctx, ir_graph *g, const ir_node *const *in, const vcache_spec *spec,
                                 const ir_node **out, uopc_error *err) {
  (void)ctx, (void)spec, (void)err;
  out[0] = ir_binary(g, IR_ADD, ir_binary(g, IR_MUL, in[0], in[0]), ir_const(g, 1.0, UOPC_F32));
  return UOPC_OK;
}

typedef void (*exact_fn)(float *, const float *);   /* an exact-size variant takes no dims */

/* Best ns per call: vcache_call (which=0), exec_run on the chosen variant
 * (1: the binder and checks the cache's path skips), or its kernel called
 * directly (2). */
static double best_vcache(vcache *c, vcache_variant *v, uopc_tensor *x, uopc_tensor *out, int which) {
  uopc_error err;
  const uopc_tensor *ins[] = {x};
  uopc_tensor *outs[] = {out};
  exact_fn fn = (exact_fn)uopc_program_entry(exec_program(v->exec));
  float *xp = uopc_tensor_data(x), *op = uopc_tensor_data(out);
  double best = 1e30;
  for (int r = 0; r < REPS; r++) {
    double t0 = bench_now_ns();
    for (int i = 0; i < CALLS; i++) {
      if (which == 0) vcache_call(c, outs, 1, ins, 1, &err);
      else if (which == 1) exec_run(v->exec, outs, 1, ins, 1, &err);
      else fn(op, xp);
    }
    double t = (bench_now_ns() - t0) / CALLS;
    if (t < best) best = t;
  }
  return best;
}

/* variants exact-size variants (lengths 16, 32, ...; the call's is last). */
static int bench_vcache(int variants, uopc_error *err) {
  vcache c;
  vcache_options o = {.op = "vsq", .n_inputs = 1, .n_outputs = 1, .inputs = {"x"}, .build = build_square_plus_one,
                      .policy = {.exact_sizes = 1, .max_variants = variants + 1}};
  uopc_tensor x = {0}, out = {0};
  vcache_variant *v = NULL;
  int rc = vcache_init(&c, &o, err);
  for (int64_t k = 1; !rc && k <= variants; k++) {
    int64_t len = 16 * k;
    const uopc_tensor *ins[] = {&x};
    uopc_tensor *outs[] = {&out};
    uopc_tensor_release(&x);
    uopc_tensor_release(&out);
    rc = uopc_tensor_empty(&x, UOPC_F32, 1, &len, err);
    if (!rc) rc = uopc_tensor_empty(&out, UOPC_F32, 1, &len, err);
    if (!rc) rc = vcache_choose(&c, outs, 1, ins, 1, &v, err);
  }
  if (!rc && c.count != variants) rc = UOPC_FAIL(err, UOPC_E_INVALID, "expected %d variants, got %d", variants, c.count);
  if (!rc) {
    double call = best_vcache(&c, v, &x, &out, 0), run = best_vcache(&c, v, &x, &out, 1);
    double direct = best_vcache(&c, v, &x, &out, 2);
    printf("bench 23.2 vcache_%d_variants n=%lld ns=%.1f\n", variants, (long long)(16 * variants), call);
    printf("bench 23.2 vcache_exec_run_%d_variants n=%lld ns=%.1f\n", variants, (long long)(16 * variants), run);
    printf("ratio 23.2 vcache_%d_variants overhead=%.1f ns (goal with 8 variants: <= 25 ns; exec_run alone: %.1f ns)\n",
           variants, call - direct, run - direct);
  }
  uopc_tensor_release(&x);
  uopc_tensor_release(&out);
  vcache_fini(&c);
  return rc ? fail(err) : 0;
}

int main(void) {
  uopc_error err = {0};
  int rc = bench_overhead(1, &err);
  if (!rc) rc = bench_overhead(8, &err);
  if (!rc) rc = bench_kernels(1 << 24, &err);
  if (!rc) rc = bench_vcache(1, &err);
  if (!rc) rc = bench_vcache(8, &err);
  return rc;
}
