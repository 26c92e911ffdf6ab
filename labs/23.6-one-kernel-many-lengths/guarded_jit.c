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
  jit->variants_slot = uopc_counter_slot(GUARDED_JIT_C_VARIANTS);
  jit->compiled_slot = uopc_counter_slot(GUARDED_JIT_C_COMPILED);
  jit->fallback_slot = uopc_counter_slot(GUARDED_JIT_C_FALLBACKS);
  jit->trace = uopc_debug_level() >= 3;
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
  return UOPC_OK;
}

static int alias_error(uopc_error *err) {
  return UOPC_FAIL(err, UOPC_E_ALIAS, "out partly overlaps x; pass x itself (in place) or a disjoint buffer");
}

/* Only tests build without the contiguity guard (tests/broken/23.6.mk), to
 * prove that the strided-input test catches the wrong dispatch. */
#ifdef GUARDED_JIT_NO_CONTIGUITY_GUARD
enum { CONTIGUITY_GUARD = 0 };
#else
enum { CONTIGUITY_GUARD = 1 };
#endif

/* A vector is contiguous when its stride is 1; one element has no stride to speak of. */
static int is_unit_stride(const uopc_tensor *v) { return v->strides[0] == 1 || v->shape[0] == 1; }

/* The layout guard: every assumption of KERNEL_SOURCE, checked on both tensors.
 * A shape check alone would let x[::2] through, and the kernel would read
 * x[1] where the view means x[2]. The checks are written for vectors, which
 * is all this kernel takes, because they run on every call (see make bench). */
static int compiled_path_holds(const uopc_tensor *x, const uopc_tensor *out, const float *xp, const float *op) {
  if (x->dtype != UOPC_F32) return 0;
  if ((uintptr_t)xp % sizeof(float) != 0 || (uintptr_t)op % sizeof(float) != 0) return 0;
  if (CONTIGUITY_GUARD && (!is_unit_stride(x) || !is_unit_stride(out))) return 0;
  return 1;
}

static int run_compiled(guarded_jit *jit, int64_t n, const float *xp, float *op, uopc_error *err) {
  uintptr_t a = (uintptr_t)xp, b = (uintptr_t)op, bytes = (uintptr_t)n * sizeof(float);
  if (a != b && (a < b ? b - a : a - b) < bytes) return alias_error(err);
  if (!jit->program) {
    int rc = uopc_program_new(&jit->program, KERNEL_SOURCE, "square_plus_one", "ppp", &jit->options, err);
    if (rc) return rc;
    jit->variants_built++;
    uopc_counter_bump(jit->variants_slot, 1);
  }
  int32_t length = (int32_t)n;   /* fits: maximum <= INT32_MAX */
  const int32_t *lp = &length;
  void *args[] = {&xp, &op, &lp};
  uopc_program_call(jit->program, args);
  jit->compiled_calls++;
  uopc_counter_bump(jit->compiled_slot, 1);
  jit->last_path = GUARDED_JIT_COMPILED;
  return UOPC_OK;
}

/* The eager fallback computes in x's own dtype, in logical order, so f32
 * stays f32 (as NumPy's x*x + 1 does) and a reversed view comes out reversed.
 * Elements move through memcpy because a view need not be aligned (a NumPy
 * array can sit at any byte); the compiler turns each into one load. */
static void fallback_f32(int64_t n, const char *x, int64_t xs, char *out, int64_t os) {
  for (int64_t i = 0; i < n; i++) {
    float v;
    memcpy(&v, x + i * xs, sizeof v);
    v = v * v + 1.0f;
    memcpy(out + i * os, &v, sizeof v);
  }
}

static void fallback_f64(int64_t n, const char *x, int64_t xs, char *out, int64_t os) {
  for (int64_t i = 0; i < n; i++) {
    double v;
    memcpy(&v, x + i * xs, sizeof v);
    v = v * v + 1.0;
    memcpy(out + i * os, &v, sizeof v);
  }
}

static int run_fallback(guarded_jit *jit, const uopc_tensor *x, uopc_tensor *out, uopc_error *err) {
  if (!uopc_tensor_same_view(x, out) && uopc_tensor_may_overlap(x, out)) return alias_error(err);
  int64_t size = (int64_t)uopc_dtype_size(x->dtype);
  int64_t xs = x->strides[0] * size, os = out->strides[0] * size;   /* in bytes */
  if (x->dtype == UOPC_F32) fallback_f32(x->shape[0], uopc_tensor_data(x), xs, uopc_tensor_data(out), os);
  else fallback_f64(x->shape[0], uopc_tensor_data(x), xs, uopc_tensor_data(out), os);
  jit->layout_fallbacks++;
  uopc_counter_bump(jit->fallback_slot, 1);
  jit->last_path = GUARDED_JIT_FALLBACK;
  return UOPC_OK;
}

int guarded_jit_call(guarded_jit *jit, const uopc_tensor *x, uopc_tensor *out, uopc_error *err) {
  int rc = check_vector(x, jit->maximum, err);
  if (rc == UOPC_OK) rc = check_output(x, out, err);
  if (rc != UOPC_OK) return rc;
  const float *xp = uopc_tensor_data(x);
  float *op = uopc_tensor_data(out);
  int compiled = compiled_path_holds(x, out, xp, op);
  if (jit->trace)
    uopc_debug(3, "square_plus_one: length %lld, %s, strides x %lld out %lld -> %s", (long long)x->shape[0],
               uopc_dtype_name(x->dtype), (long long)x->strides[0], (long long)out->strides[0],
               compiled ? "compiled kernel (every guard holds)" : "layout fallback (a guard failed)");
  rc = compiled ? run_compiled(jit, x->shape[0], xp, op, err) : run_fallback(jit, x, out, err);
  if (rc == UOPC_OK) uopc_tensor_bump_version(out);   /* either path wrote out (23.3 reads versions) */
  return rc;
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
