/* bench_tensorjit.c: what tensorjit's dispatch costs, and how many artifacts
 * it builds (section 23.7, issue 25). The warm call: tj_call of 2x+1 at
 * length 1, an artifact already built (arguments checked, the call read,
 * the guards checked, the output made and released), against a direct call
 * of the same graph's kernel through the core (exec_run_checked, the output
 * made once). Then the artifacts built over lengths 0..64, dynamic and
 * static (the static one stops at the cache's limit of 32 and runs the rest
 * eagerly). Prints `bench tj <case> n=1 ns=<time per call>`, `ratio tj
 * warm-call n=1 tj/kernel=<x>` and `count tj ...` (best of REPS). */
#include <stdio.h>
#include "bench.h"
#include "tensorjit.h"
#include "exec.h"

enum { REPS = 7, CALLS = 100000, LENGTHS = 65 };

static int affine(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {
  (void)user;
  out[0] = tp_add(c, tp_mul(c, tp_scalar(c, 2), in[0].t), tp_scalar(c, 1));
  return tp_status(c);
}

static double warm_call_ns(uopc_error *err) {
  tj_function *f = NULL;
  uopc_tensor x, out[1];
  int64_t one = 1;
  double best = -1;
  if (tj_compile(&f, affine, NULL, NULL, err) || uopc_tensor_empty(&x, UOPC_F32, 1, &one, err)) return -1;
  tj_arg args[1] = {tj_tensor(&x)};
  int rc = tj_call(f, args, 1, out, err);   /* builds the artifact */
  if (!rc) uopc_tensor_release(&out[0]);
  for (int r = 0; r < REPS && !rc; r++) {
    double t0 = bench_now_ns();
    for (int k = 0; k < CALLS && !rc; k++) {
      rc = tj_call(f, args, 1, out, err);
      uopc_tensor_release(&out[0]);
    }
    double ns = (bench_now_ns() - t0) / CALLS;
    if (best < 0 || ns < best) best = ns;
  }
  uopc_tensor_release(&x);
  tj_free(f);
  return rc ? -1 : best;
}

/* The same graph, lowered once with n a dim, its kernel called directly. */
static double kernel_call_ns(uopc_error *err) {
  ir_graph *g = NULL;
  exec *e = NULL;
  sym_dim n;
  uopc_tensor x, out;
  int64_t one = 1, dims[1] = {1};
  double best = -1;
  if (ir_graph_new(&g, err) || sym_dim_init(&n, "n", 0, INT64_C(1) << 24, 1, err)) return -1;
  const sym_expr *shape[1] = {sym_expr_dim(ir_graph_arena(g), &n)};
  const ir_node *in = ir_input(g, "x", UOPC_F32, 1, shape);
  const ir_node *y = ir_binary(g, IR_ADD, ir_binary(g, IR_MUL, ir_const(g, 2, UOPC_F32), in), ir_const(g, 1, UOPC_F32));
  int rc = y ? exec_new(&e, g, &y, 1, "bench_tj_kernel", NULL, err) : (*err = *ir_graph_error(g), err->code);
  if (!rc) rc = uopc_tensor_empty(&x, UOPC_F32, 1, &one, err);
  if (!rc) rc = uopc_tensor_empty(&out, UOPC_F32, 1, &one, err);
  void *buffers[2] = {rc ? NULL : uopc_tensor_data(&out), rc ? NULL : uopc_tensor_data(&x)};
  for (int r = 0; r < REPS && !rc; r++) {
    double t0 = bench_now_ns();
    for (int k = 0; k < CALLS && !rc; k++) rc = exec_run_checked(e, buffers, dims, err);
    double ns = (bench_now_ns() - t0) / CALLS;
    if (best < 0 || ns < best) best = ns;
  }
  if (buffers[0]) uopc_tensor_release(&x), uopc_tensor_release(&out);
  exec_free(e);
  ir_graph_free(g);
  return rc ? -1 : best;
}

/* 2x+1 over lengths 0..64: the artifacts kept, and the calls past the limit. */
static int count_artifacts(tj_switch dynamic, tj_counts *counts, uopc_error *err) {
  tj_function *f = NULL;
  tj_options o = {.dynamic = dynamic, .max_variants = TJ_MAX_VARIANTS, .on_limit = TJ_LIMIT_EAGER};
  int rc = tj_compile(&f, affine, NULL, &o, err);
  for (int64_t n = 0; n < LENGTHS && !rc; n++) {
    uopc_tensor x, out[1];
    if ((rc = uopc_tensor_empty(&x, UOPC_F32, 1, &n, err))) break;
    tj_arg args[1] = {tj_tensor(&x)};
    if (!(rc = tj_call(f, args, 1, out, err))) uopc_tensor_release(&out[0]);
    uopc_tensor_release(&x);
  }
  *counts = tj_stats(f);
  tj_free(f);
  return rc;
}

int main(void) {
  uopc_error err = {0};
  double tj = warm_call_ns(&err), kernel = tj < 0 ? -1 : kernel_call_ns(&err);
  tj_counts dyn = {0}, fixed = {0};
  int rc = tj < 0 || kernel < 0 || count_artifacts(TJ_ON, &dyn, &err) || count_artifacts(TJ_OFF, &fixed, &err);
  if (rc) {
    fprintf(stderr, "bench tj: %s\n", err.message);
    return 1;
  }
  printf("bench tj warm-call n=1 ns=%.0f\n", tj);
  printf("bench tj kernel-call n=1 ns=%.0f\n", kernel);
  printf("ratio tj warm-call n=1 tj/kernel=%.2f\n", tj / kernel);
  printf("count tj lengths=0..64 dynamic: artifacts=%d\n", dyn.artifacts);
  printf("count tj lengths=0..64 static: artifacts=%d (the limit), then %lld calls past it run eagerly\n",
         fixed.artifacts, (long long)fixed.limit_hits);
  return 0;
}
