/* exp_sweep.c: LOWER_VEC_EXP's exp_f32 against libm's expf (or, given
 * "tanh", LOWER_VEC_TANH's tanh_f32 against tanhf) on every one of the 2^32
 * f32 bit patterns (issue 27), through the generated kernel itself: the op
 * over n lowered with LOWER_FUSE and its flag, and run in chunks.
 * Prints the largest distance in ulps where both results are normal, where
 * either is subnormal, and how many patterns differ where either result is
 * 0, inf or NaN (they must not: expf's overflow, underflow and NaN are
 * kept). About a minute each; test_fuse.c checks every 4099th pattern in
 * `make test`. Chapter 23.7, "A vectorisable exp".
 *   build/solutions/bin/exp_sweep [exp | tanh] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "exec.h"

enum { CHUNK = 1 << 24 };

static int64_t ordered(float f) {
  int32_t i;
  memcpy(&i, &f, sizeof i);
  return i < 0 ? (int64_t)INT32_MIN - i : i;
}

typedef struct sweep { int64_t normal, subnormal, special; uint32_t worst; } sweep;

/* What is swept: the op, its flag, libm's function and the bound. */
typedef struct sweep_op {
  const char *arg, *entry, *name;
  ir_op op;
  unsigned flag;
  float (*ref)(float);
  int bound;
} sweep_op;

static const sweep_op OPS[] = {
  {"exp", "exp_sweep", "exp_f32 against expf", IR_EXP, LOWER_VEC_EXP, expf, LOWER_EXP_F32_ULPS},
  {"tanh", "tanh_sweep", "tanh_f32 against tanhf", IR_TANH, LOWER_VEC_TANH, tanhf, LOWER_TANH_F32_ULPS},
};

static void compare(const float *x, const float *y, int64_t n, const sweep_op *o, sweep *s) {
  for (int64_t i = 0; i < n; i++) {
    float want = o->ref(x[i]), got = y[i];
    if (isnan(want) || isnan(got) || want == 0 || got == 0 || isinf(want) || isinf(got)) {
      s->special += !(got == want || (isnan(got) && isnan(want)));
      continue;
    }
    int64_t d = llabs(ordered(got) - ordered(want));
    if (fabsf(want) < 0x1p-126f || fabsf(got) < 0x1p-126f) { if (d > s->subnormal) s->subnormal = d; }
    else if (d > s->normal) { s->normal = d; memcpy(&s->worst, &x[i], sizeof s->worst); }
  }
}

static int run(exec *e, float *x, float *y, const sweep_op *o, sweep *s, uopc_error *err) {
  for (uint64_t base = 0; base < (UINT64_C(1) << 32); base += CHUNK) {
    for (int64_t i = 0; i < CHUNK; i++) {
      uint32_t u = (uint32_t)(base + (uint64_t)i);
      memcpy(&x[i], &u, sizeof u);
    }
    uopc_tensor tx, ty;
    int64_t n = CHUNK;
    int rc = uopc_tensor_wrap(&tx, x, UOPC_F32, 1, &n, (int64_t[]){1}, err);
    if (!rc) rc = uopc_tensor_wrap(&ty, y, UOPC_F32, 1, &n, (int64_t[]){1}, err);
    const uopc_tensor *in[1] = {&tx};
    uopc_tensor *out[1] = {&ty};
    if (!rc) rc = exec_run(e, out, 1, in, 1, err);
    uopc_tensor_release(&tx), uopc_tensor_release(&ty);
    if (rc) return rc;
    compare(x, y, CHUNK, o, s);
  }
  return UOPC_OK;
}

int main(int argc, char **argv) {
  const sweep_op *o = &OPS[0];
  for (size_t k = 0; argc > 1 && k < sizeof OPS / sizeof *OPS; k++)
    if (!strcmp(argv[1], OPS[k].arg)) o = &OPS[k];
  if (argc > 1 && strcmp(argv[1], o->arg)) {
    fprintf(stderr, "exp_sweep: '%s' is not an op it sweeps (exp, tanh)\n", argv[1]);
    return 2;
  }
  uopc_error err = {0};
  ir_graph *g = NULL;
  exec *e = NULL;
  float *x = malloc(sizeof *x * CHUNK), *y = malloc(sizeof *y * CHUNK);
  sweep s = {0};
  sym_dim d;
  int rc = x && y ? ir_graph_new(&g, &err) : UOPC_FAIL(&err, UOPC_E_NOMEM, "exp_sweep: out of memory");
  if (!rc) rc = sym_dim_init(&d, "n", 1, CHUNK, 1, &err);
  if (!rc) {
    const sym_expr *shape[1] = {sym_expr_dim(ir_graph_arena(g), &d)};
    const ir_node *out = ir_unary(g, o->op, ir_input(g, "x", UOPC_F32, 1, shape));
    rc = out ? exec_new_flags(&e, g, &out, 1, o->entry, LOWER_FUSE | o->flag, NULL, &err)
             : (err = *ir_graph_error(g), err.code);
  }
  if (!rc) rc = run(e, x, y, o, &s, &err);
  float worst;
  memcpy(&worst, &s.worst, sizeof worst);
  if (!rc)
    printf("%s over 2^32 patterns: %lld ulps at most where normal (x = %a), %lld where "
           "subnormal, %lld differing where 0, inf or NaN (bound %d)\n", o->name, (long long)s.normal, (double)worst,
           (long long)s.subnormal, (long long)s.special, o->bound);
  else fprintf(stderr, "exp_sweep: %s: %s\n", uopc_error_name(rc), err.message);
  exec_free(e);
  ir_graph_free(g);
  free(x), free(y);
  return rc || s.normal > o->bound || s.subnormal > o->bound || s.special ? 1 : 0;
}
