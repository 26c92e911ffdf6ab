/* guarded_jit.c: one C kernel for many lengths (lab 23.6, the worked lab).
 * The length is data: it travels in an int32 buffer that the kernel's loop
 * reads, so one compiled program serves every length in [1, maximum]. The
 * guards decide, on every call, whether that program's assumptions hold. */
#include <string.h>
#include <stdlib.h>
#include "guarded_jit.h"

/* The kernel assumes contiguous f32 vectors with element alignment; no
 * `restrict`, because out may be x itself (an in-place call). */
static const char KERNEL_SOURCE[] =
    "/* square_plus_one: out[i0] = x[i0]*x[i0] + 1 for i0 in [0, length[0]).\n"
    " * Lab 23.6. The caller's guards hold on every call: x and out are contiguous\n"
    " * f32 vectors aligned to 4 bytes, out is x or disjoint from it, and\n"
    " * 1 <= length[0] <= maximum. The length is read at run time, never pasted in,\n"
    " * so this text (and the cache key) is the same for every length. */\n"
    "void square_plus_one(const float *x, float *out, const int *length) {\n"
    "  const int n = length[0];\n"
    "  for (int i0 = 0; i0 < n; i0++) out[i0] = x[i0] * x[i0] + 1.0f;\n"
    "}\n";

int guarded_jit_init(guarded_jit *jit, int64_t maximum, const uopc_program_options *opts,
                     uopc_error *err) {
  memset(jit, 0, sizeof *jit);
  if (maximum < 1 || maximum > INT32_MAX)
    return UOPC_FAIL(err, UOPC_E_INVALID, "maximum = %lld outside [1, %d] (the length travels in an int32 buffer)",
                     (long long)maximum, INT32_MAX);
  jit->maximum = maximum;
  if (opts) jit->options = *opts;
  return UOPC_OK;
}

void guarded_jit_fini(guarded_jit *jit) {
  uopc_program_free(jit->program);
  jit->program = NULL;
}

static int check_vector(const uopc_tensor *x, int64_t maximum, uopc_error *err) {
  if (x->rank != 1) return UOPC_FAIL(err, UOPC_E_INVALID, "x must be a vector (rank 1), got rank %d", x->rank);
  if (!uopc_dtype_is_float(x->dtype))
    return UOPC_FAIL(err, UOPC_E_DTYPE, "x has dtype %s; expected a floating dtype (f32 or f64)",
                     uopc_dtype_name(x->dtype));
  if (x->shape[0] < 1 || x->shape[0] > maximum)
    return UOPC_FAIL(err, UOPC_E_BOUNDS, "length of x = %lld outside the declared bounds [1, %lld]",
                     (long long)x->shape[0], (long long)maximum);
  return UOPC_OK;
}

static int check_output(const uopc_tensor *x, const uopc_tensor *out, uopc_error *err) {
  if (out->rank != 1 || out->shape[0] != x->shape[0])
    return UOPC_FAIL(err, UOPC_E_INVALID, "out must be a vector of length %lld like x, got rank %d length %lld",
                     (long long)x->shape[0], out->rank, (long long)(out->rank ? out->shape[0] : 0));
  if (out->dtype != x->dtype)
    return UOPC_FAIL(err, UOPC_E_DTYPE, "out has dtype %s but x has %s; the result keeps x's dtype",
                     uopc_dtype_name(out->dtype), uopc_dtype_name(x->dtype));
  if (!uopc_tensor_same_view(x, out) && uopc_tensor_may_overlap(x, out))
    return UOPC_FAIL(err, UOPC_E_ALIAS, "out partly overlaps x; pass x itself (in place) or a disjoint buffer");
  return UOPC_OK;
}

/* The layout guard: every assumption of KERNEL_SOURCE, checked on both tensors.
 * A shape check alone would let x[::2] through, and the kernel would read
 * x[1] where the view means x[2]. */
static int compiled_path_holds(const uopc_tensor *x, const uopc_tensor *out) {
  if (x->dtype != UOPC_F32) return 0;
  if (!uopc_tensor_is_aligned(x, sizeof(float)) || !uopc_tensor_is_aligned(out, sizeof(float))) return 0;
#ifndef GUARDED_JIT_NO_CONTIGUITY_GUARD
  if (!uopc_tensor_is_contiguous(x) || !uopc_tensor_is_contiguous(out)) return 0;
#endif
  return 1;
}

static int run_compiled(guarded_jit *jit, const uopc_tensor *x, uopc_tensor *out, uopc_error *err) {
  if (!jit->program) {
    int rc = uopc_program_new(&jit->program, KERNEL_SOURCE, "square_plus_one", "ppp", &jit->options, err);
    if (rc) return rc;
    jit->variants_built++;
    uopc_counter_add(GUARDED_JIT_C_VARIANTS, 1);
  }
  int32_t length = (int32_t)x->shape[0];   /* fits: maximum <= INT32_MAX */
  void *xp = uopc_tensor_data(x), *op = uopc_tensor_data(out), *lp = &length;
  void *args[] = {&xp, &op, &lp};
  uopc_program_call(jit->program, args);
  jit->compiled_calls++;
  uopc_counter_add(GUARDED_JIT_C_COMPILED, 1);
  jit->last_path = GUARDED_JIT_COMPILED;
  return UOPC_OK;
}

/* The eager fallback computes in x's own dtype, in logical order, so f32
 * stays f32 (as NumPy's x*x + 1 does) and a reversed view comes out reversed. */
static void run_fallback(guarded_jit *jit, const uopc_tensor *x, uopc_tensor *out) {
  int64_t n = x->shape[0], xs = x->strides[0], os = out->strides[0];
  if (x->dtype == UOPC_F32) {
    const float *xp = uopc_tensor_data(x);
    float *op = uopc_tensor_data(out);
    for (int64_t i = 0; i < n; i++) { float v = xp[i * xs]; op[i * os] = v * v + 1.0f; }
  } else {
    const double *xp = uopc_tensor_data(x);
    double *op = uopc_tensor_data(out);
    for (int64_t i = 0; i < n; i++) { double v = xp[i * xs]; op[i * os] = v * v + 1.0; }
  }
  jit->layout_fallbacks++;
  uopc_counter_add(GUARDED_JIT_C_FALLBACKS, 1);
  jit->last_path = GUARDED_JIT_FALLBACK;
}

int guarded_jit_call(guarded_jit *jit, const uopc_tensor *x, uopc_tensor *out, uopc_error *err) {
  int rc = check_vector(x, jit->maximum, err);
  if (rc == UOPC_OK) rc = check_output(x, out, err);
  if (rc != UOPC_OK) return rc;
  if (compiled_path_holds(x, out)) return run_compiled(jit, x, out, err);
  run_fallback(jit, x, out);
  return UOPC_OK;
}

guarded_jit *guarded_jit_new(int64_t maximum, uopc_error *err) {
  guarded_jit *jit = malloc(sizeof *jit);
  if (!jit) { UOPC_FAIL(err, UOPC_E_NOMEM, "no memory for a guarded_jit"); return NULL; }
  if (guarded_jit_init(jit, maximum, NULL, err) != UOPC_OK) { free(jit); return NULL; }
  return jit;
}

void guarded_jit_free(guarded_jit *jit) {
  if (!jit) return;
  guarded_jit_fini(jit);
  free(jit);
}
