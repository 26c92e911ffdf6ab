/* main.c: the lab 23.7 driver (make lab-23.7).
 * Calls small models through tensorjit and prints the artifact table of the
 * contract's examples: for each, the calls, the artifacts built against the
 * number the contract allows, and every output checked against the same
 * model computed here in plain C. Then the counters, and the generated
 * source of one fused kernel. Each example leans on one of your functions
 * (the table's last column). Exit status: 0 all checks passed, 1 a check
 * failed, 2 the runtime refused, 3 a student function is not implemented
 * yet. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tensorjit.h"
#include "uopc/driver.h"

static int failed_checks;

static void check(int ok, const char *what) {
  if (ok) return;
  failed_checks++;
  printf("FAILED: %s\n", what);
}

/* ---- The models, each with its plain-C reference. */

/* The seed's flatten_rows: x.reshape(x.size(0), -1) * 2. */
static int flatten_rows(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {
  (void)user;
  tp_tensor *x = in[0].t;
  tp_int rows = tp_size(c, x, 0), numel = tp_int_mul(c, rows, tp_size(c, x, 1));
  tp_int shape[2] = {rows, tp_int_op_at(c, TP_INT_FLOORDIV, numel, rows, TP_HERE)};   /* -1 */
  out[0] = tp_mul(c, tp_reshape_at(c, x, 2, shape, TP_HERE), tp_scalar(c, 2));
  return tp_status(c);
}

static int affine(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* 2x + 1 */
  (void)user;
  out[0] = tp_add(c, tp_mul(c, tp_scalar(c, 2), in[0].t), tp_scalar(c, 1));
  return tp_status(c);
}

static int add_rows(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* (a, b) + (b,) */
  (void)user;
  out[0] = tp_add(c, in[0].t, in[1].t);
  return tp_status(c);
}

static int branchy(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* x+1 if len(x) > 4 else 2x */
  (void)user;
  if (tp_gt(c, tp_size(c, in[0].t, 0), tp_int_const(c, 4))) out[0] = tp_add(c, in[0].t, tp_scalar(c, 1));
  else out[0] = tp_mul(c, in[0].t, tp_scalar(c, 2));
  return tp_status(c);
}

static int pick(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* x[len(y)] * 3 */
  (void)user;
  out[0] = tp_mul(c, tp_select(c, in[0].t, 0, tp_size(c, in[1].t, 0)), tp_scalar(c, 3));
  return tp_status(c);
}

static int inner(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {   /* x[1:len(x)-1], a view */
  (void)user;
  tp_int stop = tp_int_add(c, tp_size(c, in[0].t, 0), tp_int_const(c, -1));
  out[0] = tp_slice(c, in[0].t, 0, tp_int_const(c, 1), stop, 1);
  return tp_status(c);
}

/* The softmax of each row, fused: max, exp and sum over a row, then a divide. */
static int softmax_rows(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {
  (void)user;
  tp_tensor *x = in[0].t;
  tp_tensor *e = tp_exp(c, tp_sub(c, x, tp_reduce_at(c, IR_MAX, x, 1u << 1, 1, TP_HERE)));
  out[0] = tp_div(c, e, tp_sum(c, e, 1u << 1, 1));
  return tp_status(c);
}

/* x[i] = (i % 7) - 3 + i / 64: small integers and their sums are exact in f32. */
static int make(uopc_tensor *t, int rank, const int64_t *shape, uopc_error *err) {
  int rc = uopc_tensor_empty(t, UOPC_F32, rank, shape, err);
  for (int64_t i = 0; !rc && i < uopc_tensor_numel(t); i++) uopc_tensor_set(t, i, (double)(i % 7) - 3 + (double)(i / 64));
  return rc;
}

/* ---- The table. */

typedef struct example {
  const char *rule, *model, *calls, *yours;
  int built, allowed;   /* artifacts built, and the contract's count */
} example;

static void row(const example *e) {
  printf("%-34s %-26s %-38s %d (the contract: %d) %-4s %s\n", e->rule, e->model, e->calls, e->built, e->allowed,
         e->built == e->allowed ? "ok" : "FAILED", e->yours);
  check(e->built == e->allowed, e->rule);
}

static int compiled(tj_function **f, tj_model m, const char *name, int strict, uopc_error *err) {
  tj_options o = {.name = name, .strict_native = strict};
  return tj_compile(f, m, NULL, &o, err);
}

/* Calls f on x (and y when given), compares output 0 with want[0 .. n). */
static int call(tj_function *f, const uopc_tensor *x, const uopc_tensor *y, const float *want, int64_t n,
                uopc_tensor *keep, uopc_error *err) {
  tj_arg args[2] = {tj_tensor(x), y ? tj_tensor(y) : tj_int(0)};
  uopc_tensor out = {0};
  int rc = tj_call(f, args, y ? 2 : 1, &out, err);
  if (rc) return rc;
  int same = uopc_tensor_numel(&out) == n;
  for (int64_t i = 0; same && i < n; i++) same = fabs(uopc_tensor_get(&out, i) - want[i]) <= 1e-5 * (1 + fabs(want[i]));
  check(same, "an output differs from the plain-C reference");
  if (keep) *keep = out;
  else uopc_tensor_release(&out);
  return UOPC_OK;
}

/* The reference of a pointwise example: element x of an input of shape. */
typedef float pointwise_ref(float x, const int64_t *shape);

static float twice(float x, const int64_t *shape) { (void)shape; return 2 * x; }
static float twice_plus_one(float x, const int64_t *shape) { (void)shape; return 2 * x + 1; }
static float branch_ref(float x, const int64_t *shape) { return shape[0] > 4 ? x + 1 : 2 * x; }

/* f on a new input of each of the n shapes (rank 1 or 2; at most 121 elements),
 * each output against ref, then e's row with the artifacts f built. */
static int pointwise(tj_function *f, int rank, const int64_t (*shapes)[2], int n, pointwise_ref *ref, example e,
                     uopc_error *err) {
  int rc = UOPC_OK;
  for (int k = 0; k < n && !rc; k++) {
    uopc_tensor x;
    float want[121];
    if ((rc = make(&x, rank, shapes[k], err))) break;
    for (int64_t i = 0; i < uopc_tensor_numel(&x); i++) want[i] = ref((float)uopc_tensor_get(&x, i), shapes[k]);
    rc = call(f, &x, NULL, want, uopc_tensor_numel(&x), NULL, err);
    uopc_tensor_release(&x);
  }
  if (!rc) e.built = (int)tj_stats(f).artifacts_built, row(&e);
  return rc;
}

static int scenario_flatten_rows(uopc_error *err) {
  static const int64_t shapes[][2] = {{3, 7}, {5, 11}};
  tj_function *f = NULL;
  int rc = compiled(&f, flatten_rows, "flatten_rows", 1, err);
  if (!rc) rc = pointwise(f, 2, shapes, 2, twice, (example){"one artifact across sizes", "x.reshape(x.size(0), -1)*2",
                          "(3, 7), (5, 11), strict_native", "tj_extent_of", 0, 1}, err);
  tj_free(f);
  return rc;
}

/* 2x+1 over n: sizes 0 and 1 constants, then equal sizes not assumed equal. */
static int scenario_affine(uopc_error *err) {
  static const int64_t lengths[][2] = {{3}, {1}, {0}, {7}, {1}, {0}, {11}}, squares[][2] = {{3, 3}, {3, 5}};
  tj_function *f = NULL, *g = NULL;
  int rc = compiled(&f, affine, "affine", 0, err);
  if (!rc) rc = pointwise(f, 1, lengths, 7, twice_plus_one, (example){"sizes 0 and 1 are specialised", "2x+1",
                          "n = 3, 1, 0, 7, 1, 0, 11", "tj_extent_of", 0, 3}, err);
  if (!rc) rc = compiled(&g, affine, "affine2", 0, err);
  if (!rc) rc = pointwise(g, 2, squares, 2, twice_plus_one, (example){"equal sizes are not assumed equal", "2x+1",
                          "(3, 3), (3, 5)", "tj_extent_of", 0, 1}, err);
  tj_free(f), tj_free(g);
  return rc;
}

static int scenario_needed_equality(uopc_error *err) {
  static const int64_t shapes[][2] = {{3, 3}, {5, 5}, {7, 1}, {11, 11}, {13, 1}};
  tj_function *f = NULL;
  int rc = compiled(&f, add_rows, "add_rows", 0, err);
  for (int k = 0; k < 5 && !rc; k++) {
    uopc_tensor x, y;
    float want[121];
    if ((rc = make(&x, 2, shapes[k], err))) break;
    if ((rc = make(&y, 1, &shapes[k][1], err))) { uopc_tensor_release(&x); break; }
    for (int64_t i = 0; i < uopc_tensor_numel(&x); i++)
      want[i] = (float)uopc_tensor_get(&x, i) + (float)uopc_tensor_get(&y, i % shapes[k][1]);
    rc = call(f, &x, &y, want, uopc_tensor_numel(&x), NULL, err);
    uopc_tensor_release(&x), uopc_tensor_release(&y);
  }
  if (!rc) row(&(example){"a needed equality is a guard", "(a, b) + (b,)", "(3,3) (5,5) (7,1) (11,11) (13,1)",
                          "tj_sizes_unify", (int)tj_stats(f).artifacts_built, 2});
  tj_free(f);
  return rc;
}

static int scenario_branch(uopc_error *err) {
  static const int64_t lengths[][2] = {{3}, {7}, {2}, {9}, {4}, {11}};
  tj_function *f = NULL;
  int rc = compiled(&f, branchy, "branchy", 0, err);
  if (!rc) rc = pointwise(f, 1, lengths, 6, branch_ref, (example){"a branch on a size is a bound",
                          "x+1 if len(x) > 4 else 2x", "n = 3, 7, 2, 9, 4, 11", "tj_sizes_narrow", 0, 2}, err);
  tj_free(f);
  return rc;
}

/* x[len(y)]: the index is a size, so its bound is a comparison of two dims,
 * checked on every call; a call whose index is past x is refused. */
static int scenario_index(uopc_error *err) {
  static const int64_t sizes[][2] = {{5, 2}, {7, 3}, {9, 8}};
  tj_function *f = NULL;
  int rc = compiled(&f, pick, "pick", 0, err);
  for (int k = 0; k < 3 && !rc; k++) {
    uopc_tensor x, y;
    if ((rc = make(&x, 1, &sizes[k][0], err))) break;
    if ((rc = make(&y, 1, &sizes[k][1], err))) { uopc_tensor_release(&x); break; }
    float want[1] = {3 * (float)uopc_tensor_get(&x, sizes[k][1])};
    rc = call(f, &x, &y, want, 1, NULL, err);
    uopc_tensor_release(&x), uopc_tensor_release(&y);
  }
  int refused = 0;
  if (!rc) {   /* len(y) = 4 past len(x) = 3 */
    uopc_tensor x, y;
    uopc_error e = {0};
    rc = make(&x, 1, (int64_t[]){3}, err);
    if (!rc && !(rc = make(&y, 1, (int64_t[]){4}, err))) {
      tj_arg args[2] = {tj_tensor(&x), tj_tensor(&y)};
      uopc_tensor out = {0};
      int got = tj_call(f, args, 2, &out, &e);
      refused = got == UOPC_E_BOUNDS;
      if (!got) uopc_tensor_release(&out);
      uopc_tensor_release(&y);
    }
    if (!rc) uopc_tensor_release(&x);
    check(rc || refused, "x[len(y)] with len(y) = 4 past len(x) = 3 was not refused with UOPC_E_BOUNDS");
  }
  if (!rc) row(&(example){"an index is a guard", "x[len(y)] * 3", "(5,2) (7,3) (9,8), then (3,4) refused",
                          "tj_trace_holds", (int)tj_stats(f).artifacts_built, 1});
  tj_free(f);
  return rc;
}

/* x[1:len(x)-1] shares x's storage: no kernel, one artifact. */
static int scenario_view(uopc_error *err) {
  static const int64_t lengths[] = {5, 9, 12};
  tj_function *f = NULL;
  int rc = compiled(&f, inner, "inner", 0, err);
  for (int k = 0; k < 3 && !rc; k++) {
    uopc_tensor x, out = {0};
    float want[12];
    if ((rc = make(&x, 1, &lengths[k], err))) break;
    for (int64_t i = 0; i < lengths[k] - 2; i++) want[i] = (float)uopc_tensor_get(&x, i + 1);
    rc = call(f, &x, NULL, want, lengths[k] - 2, &out, err);
    if (!rc) {
      check(out.storage == x.storage && out.offset == x.offset + 1, "x[1:len(x)-1] is not a view of x at offset 1");
      uopc_tensor_release(&out);
    }
    uopc_tensor_release(&x);
  }
  if (!rc) row(&(example){"a slice of an input is a view", "x[1:len(x)-1]", "n = 5, 9, 12", "tj_view_make",
                          (int)tj_stats(f).artifacts_built, 1});
  tj_free(f);
  return rc;
}

/* The softmax over rows at two sizes, one artifact; its source printed. */
static int scenario_fused(uopc_error *err) {
  static const int64_t shapes[][2] = {{4, 6}, {3, 100}};
  tj_function *f = NULL;
  int rc = compiled(&f, softmax_rows, "softmax_rows", 1, err);
  for (int k = 0; k < 2 && !rc; k++) {
    uopc_tensor x;
    float want[300];
    if ((rc = make(&x, 2, shapes[k], err))) break;
    for (int64_t r = 0; r < shapes[k][0]; r++) {
      int64_t n = shapes[k][1];
      double m = -INFINITY, s = 0;
      for (int64_t i = 0; i < n; i++) m = fmax(m, uopc_tensor_get(&x, r * n + i));
      for (int64_t i = 0; i < n; i++) s += exp(uopc_tensor_get(&x, r * n + i) - m);
      for (int64_t i = 0; i < n; i++) want[r * n + i] = (float)(exp(uopc_tensor_get(&x, r * n + i) - m) / s);
    }
    rc = call(f, &x, NULL, want, uopc_tensor_numel(&x), NULL, err);
    uopc_tensor_release(&x);
  }
  if (!rc) row(&(example){"a fused softmax over rows", "softmax(x, -1)", "(4, 6), (3, 100), strict_native", "tj_fuse_rule",
                          (int)tj_stats(f).artifacts_built, 1});
  const char *src = rc ? NULL : tj_artifact_source(f, 0);
  if (!rc) check(src != NULL, "the softmax's artifact has no generated source");
  if (src) printf("\nthe softmax's artifact, as generated (beside its cache entry on disk):\n%s\n", src);
  tj_free(f);
  return rc;
}

int main(int argc, char **argv) {
  int start = uopc_driver_start(argc, argv, "23.7",
                                "Calls small models through tensorjit at several sizes and prints the artifact table of the\n"
                                "contract's examples, each output checked against plain C; then the counters and one fused kernel.");
  if (start != UOPC_DRIVER_RUN) return start;
  printf("lab 23.7: tensorjit, one artifact across sizes (each output checked against plain C)\n");
  printf("%-34s %-26s %-38s %-26s %s\n", "rule", "model", "calls", "artifacts built", "your function");
  uopc_error err = {0};
  int rc = scenario_flatten_rows(&err);
  if (!rc) rc = scenario_affine(&err);
  if (!rc) rc = scenario_needed_equality(&err);
  if (!rc) rc = scenario_branch(&err);
  if (!rc) rc = scenario_index(&err);
  if (!rc) rc = scenario_view(&err);
  if (!rc) rc = scenario_fused(&err);
  if (rc) return uopc_driver_fail("23.7", &err);
  uopc_counters_print(stdout);
  return failed_checks ? 1 : 0;
}
