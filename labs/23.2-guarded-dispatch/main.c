/* main.c: the driver of lab 23.2 (`make lab-23.2`).
 * Calls out = x*x + 1 through one guarded dispatcher with lengths 32, 48, 33,
 * 32, 64, 17 (contiguous, aligned), then a strided view arange(64)[::2] and a
 * misaligned view arange(33)[1:]. Prints each call's path (and, for generic
 * calls, why), checks every output against an eager loop here, then prints
 * the counters. Exit: 0 all checks passed, 1 a check failed, 2 the runtime
 * refused (unsafe cache, no compiler), 3 a student function is a stub;
 * --help prints the usage.
 *
 * The expected lines (also in expected.log), on any cache state:
 * expect: variants built=2
 * expect: guard checks=12
 * expect: guard failures=4
 * expect: fast path calls=4
 * expect: generic calls=4
 * expect: programs constructed=2
 * The runtime's cache lines are printed too but depend on the cache: a cold
 * run shows compiler invocations=2, disk cache hits=0; a warm one 0 and 2. */
#include <stdio.h>
#include <string.h>
#include "dispatch.h"
#include "uopc/driver.h"

/* out must equal v*v + 1 computed in float, element by element. */
static int check(const uopc_tensor *x, const uopc_tensor *out) {
  for (int64_t i = 0; i < x->shape[0]; i++) {
    float v = (float)uopc_tensor_get(x, i), want = v * v + 1.0f, got = (float)uopc_tensor_get(out, i);
    if (got != want) {
      fflush(stdout);
      fprintf(stderr, "lab 23.2: wrong value at index %lld of length %lld: expected %.9g, got %.9g\n",
              (long long)i, (long long)x->shape[0], want, got);
      return 0;
    }
  }
  return 1;
}

/* One call on x = arange(total)[start::step] (as f32, minus 3 so signs vary)
 * into a fresh contiguous out. */
static int run_one(dispatcher *d, const char *what, int64_t total, int64_t start, int64_t step,
                   uopc_error *err) {
  uopc_tensor base = {0}, x = {0}, out = {0};
  int rc = uopc_tensor_empty(&base, UOPC_F32, 1, &total, err);
  for (int64_t i = 0; rc == UOPC_OK && i < total; i++) uopc_tensor_set(&base, i, (double)i - 3.0);
  if (rc == UOPC_OK) rc = uopc_tensor_slice(&x, &base, 0, start, UOPC_SLICE_NONE, step, err);
  if (rc == UOPC_OK) rc = uopc_tensor_empty(&out, UOPC_F32, 1, x.shape, err);
  if (rc == UOPC_OK) rc = dispatch_call(d, &x, &out, err);
  if (rc == UOPC_OK) {
    printf("call %lld: n = %-3lld %-11s -> %s\n", (long long)d->cache.last.number, (long long)x.shape[0], what,
           dispatch_path_name(dispatch_last_path(d)));
    char why[DISPATCH_EXPLAIN_MAX];
    /* explain's first line repeats the one above; its reasons follow. */
    if (dispatch_last_path(d) == DISPATCH_PATH_GENERIC && (rc = dispatch_explain(d, why, sizeof why, err)) == UOPC_OK)
      printf("%s", strchr(why, '\n') ? strchr(why, '\n') + 1 : why);
    if (rc == UOPC_OK && !check(&x, &out)) rc = -1;
  }
  uopc_tensor_release(&out);
  uopc_tensor_release(&x);
  uopc_tensor_release(&base);
  return rc;
}

int main(int argc, char **argv) {
  static const int64_t lengths[] = {32, 48, 33, 32, 64, 17};
  int start = uopc_driver_start(argc, argv, "23.2",
                                "out = x*x + 1 through one guarded dispatcher at lengths 32, 48, 33, 32, 64, 17, then\n"
                                "x[::2] and a misaligned view: each call's path and why, every output checked, the counters.");
  if (start != UOPC_DRIVER_RUN) return start;
  uopc_error err = {0};
  dispatcher d;
  printf("lab 23.2: guarded dispatch of out = x*x + 1 (fast path: contiguous, %d-byte aligned, n %% %d == 0)\n",
         VARIANT_ALIGN, VARIANT_LANES);
  if (dispatch_init(&d, NULL, &err)) return uopc_driver_fail("23.2", &err);
  int rc = UOPC_OK;
  for (size_t i = 0; rc == UOPC_OK && i < sizeof lengths / sizeof *lengths; i++)
    rc = run_one(&d, "contiguous", lengths[i], 0, 1, &err);
  if (rc == UOPC_OK) rc = run_one(&d, "stride 2", 64, 0, 2, &err);      /* arange(64)[::2] */
  if (rc == UOPC_OK) rc = run_one(&d, "misaligned", 33, 1, 1, &err);    /* arange(33)[1:], 4 bytes in */
  if (rc == UOPC_OK) {
    printf("variants: %d fast, %d generic\n", dispatch_fast_count(&d), dispatch_generic(&d) ? 1 : 0);
    for (int k = 0; k < d.cache.count; k++)   /* the fast ones first, then the generic one */
      printf("  %s: %s/kernel.c\n", d.cache.variants[k]->entry, uopc_program_dir(d.cache.variants[k]->program));
    printf("counters:\n");
    uopc_counters_print(stdout);
  }
  dispatch_fini(&d);
  if (rc > 0) return uopc_driver_fail("23.2", &err);
  return rc == UOPC_OK ? 0 : 1;
}
