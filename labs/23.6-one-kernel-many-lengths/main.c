/* main.c: the driver of lab 23.6 (`make lab-23.6`).
 * Runs the chapter's example: lengths 1, 7, 31, 64, 7 on contiguous f32 through
 * one compiled kernel, then x[::2] through the layout fallback. Every output
 * is checked against an eager computation here. Exit: 0 all checks passed,
 * 1 a check failed, 2 the runtime refused (unsafe cache, compiler, I/O);
 * --help prints the usage. */
#include <stdio.h>
#include "guarded_jit.h"
#include "uopc/driver.h"

enum { MAXIMUM = 64 };

/* out must equal v*v + 1 computed in float, element by element. */
static int check(const uopc_tensor *x, const uopc_tensor *out) {
  for (int64_t i = 0; i < x->shape[0]; i++) {
    float v = (float)uopc_tensor_get(x, i), want = v * v + 1.0f, got = (float)uopc_tensor_get(out, i);
    if (got != want) {
      fflush(stdout);
      fprintf(stderr, "lab 23.6: wrong value at index %lld of length %lld: expected %.9g, got %.9g\n",
              (long long)i, (long long)x->shape[0], want, got);
      return 0;
    }
  }
  return 1;
}

/* One call: x is arange(n)[::step] in f32, out a fresh contiguous vector. */
static int run_one(guarded_jit *jit, int64_t n, int64_t step, uopc_error *err) {
  uopc_tensor base = {0}, x = {0}, out = {0};
  int64_t len = (n + step - 1) / step;
  int rc = uopc_tensor_empty(&base, UOPC_F32, 1, &n, err);
  for (int64_t i = 0; rc == UOPC_OK && i < n; i++) uopc_tensor_set(&base, i, (double)i);
  if (rc == UOPC_OK) rc = uopc_tensor_slice(&x, &base, 0, UOPC_SLICE_NONE, UOPC_SLICE_NONE, step, err);
  if (rc == UOPC_OK) rc = uopc_tensor_empty(&out, UOPC_F32, 1, &len, err);
  if (rc == UOPC_OK) rc = guarded_jit_call(jit, &x, &out, err);
  if (rc == UOPC_OK) {
    printf("  length %-3lld %-11s -> %s\n", (long long)len, step == 1 ? "contiguous" : "stride 2",
           jit->last_path == GUARDED_JIT_COMPILED ? "compiled kernel" : "layout fallback");
    if (!check(&x, &out)) rc = -1;
  }
  uopc_tensor_release(&out);
  uopc_tensor_release(&x);
  uopc_tensor_release(&base);
  return rc;
}

int main(int argc, char **argv) {
  static const int64_t lengths[] = {1, 7, 31, 64, 7};
  int start = uopc_driver_start(argc, argv, "23.6",
                                "out = x*x + 1 at lengths 1, 7, 31, 64, 7 through one compiled kernel, then x[::2]\n"
                                "through the layout fallback; every output checked, then the counters.");
  if (start != UOPC_DRIVER_RUN) return start;
  uopc_error err = {0};
  guarded_jit jit;
  printf("lab 23.6: one C kernel for many lengths (maximum %d)\n", MAXIMUM);
  if (guarded_jit_init(&jit, MAXIMUM, NULL, &err)) return uopc_driver_fail("23.6", &err);
  int rc = UOPC_OK;
  for (size_t i = 0; rc == UOPC_OK && i < sizeof lengths / sizeof *lengths; i++) rc = run_one(&jit, lengths[i], 1, &err);
  if (rc == UOPC_OK) rc = run_one(&jit, 20, 2, &err);   /* arange(20)[::2] */
  if (rc == UOPC_OK) {
    printf("variants built=%lld, compiled calls=%lld, layout fallbacks=%lld\n", (long long)jit.variants_built,
           (long long)jit.compiled_calls, (long long)jit.layout_fallbacks);
    printf("generated source: %s/kernel.c\nruntime counters:\n", uopc_program_dir(jit.program));
    uopc_counters_print(stdout);
  }
  guarded_jit_fini(&jit);
  if (rc > 0) return uopc_driver_fail("23.6", &err);
  return rc == UOPC_OK ? 0 : 1;
}
