/* tp_ffi.c: the driver's two-layer model for foreign callers (lab 23.4,
 * given). A heap lifecycle, calls on flat buffers, and read-only accessors,
 * so that ctypes never mirrors a tracer struct. Only in labs/: IMPL=labs and
 * IMPL=solutions both build it into liblab23_4.so. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tp_ffi.h"

static const char *const stat_names[] = {TP_C_TRACES, TP_C_BREAKS, TP_C_GUARD_FAILURES, TP_C_RECOMPILATIONS,
                                         TP_C_VARIANTS, TP_C_GUARDS, "programs constructed",
                                         "compiler invocations", "disk cache hits"};
enum { N_STATS = sizeof stat_names / sizeof *stat_names };

typedef struct model_config {
  int activation;              /* tp_ffi_activation; unused when threshold >= 0 */
  int64_t threshold;           /* -1: no branch */
} model_config;

struct tp_ffi {
  model_config config;
  int64_t d_in, d_hid, d_out;
  sym_arena *arena;
  tp_compiled *compiled;
  int64_t stats[N_STATS];
};

/* The model: the driver's two_layer with its activation chosen by the
 * configuration or, with a threshold, by a branch on the batch size. */
static int model(tp_ctx *c, tp_tensor *const *in, tp_tensor **out, void *user) {
  const model_config *m = user;
  int relu = m->activation == TP_FFI_RELU;
  if (m->threshold >= 0) relu = !tp_gt(c, tp_size(c, in[0], 0), tp_int_const(c, m->threshold));
  tp_tensor *z = tp_matmul(c, in[0], in[1]);
  tp_tensor *h = relu ? tp_relu(c, z) : tp_tanh(c, z);
  tp_tensor *d = tp_sub(c, tp_matmul(c, h, in[2]), in[3]);
  out[0] = tp_mean(c, tp_mul(c, d, d));
  return tp_status(c);
}

static tp_ffi *ffi_new(model_config config, int64_t d_in, int64_t d_hid, int64_t d_out, int64_t b_lo, int64_t b_hi,
                       uopc_error *err) {
  if (config.activation != TP_FFI_TANH && config.activation != TP_FFI_RELU) {
    UOPC_FAIL(err, UOPC_E_INVALID, "activation %d (0 tanh, 1 relu)", config.activation);
    return NULL;
  }
  if (d_in < 1 || d_hid < 1 || d_out < 1 || b_lo < 1 || b_lo > b_hi) {
    UOPC_FAIL(err, UOPC_E_INVALID, "sizes d_in %lld, d_hid %lld, d_out %lld, B in [%lld, %lld]: each at least 1,"
              " b_lo <= b_hi", (long long)d_in, (long long)d_hid, (long long)d_out, (long long)b_lo, (long long)b_hi);
    return NULL;
  }
  tp_ffi *f = calloc(1, sizeof *f);
  if (!f) { UOPC_FAIL(err, UOPC_E_NOMEM, "no memory for a tp_ffi (%zu bytes)", sizeof *f); return NULL; }
  f->config = config, f->d_in = d_in, f->d_hid = d_hid, f->d_out = d_out;
  sym_dim B;
  int rc = sym_arena_new(&f->arena, err);
  if (!rc) rc = sym_dim_init(&B, "B", b_lo, b_hi, 1, err);
  if (!rc) {
    sym_arena *ar = f->arena;
    const sym_expr *b = sym_expr_dim(ar, &B), *di = sym_expr_const(ar, d_in), *dh = sym_expr_const(ar, d_hid),
                   *dout = sym_expr_const(ar, d_out);
    tp_arg args[4] = {{"x", UOPC_F32, 2, {b, di}}, {"w1", UOPC_F32, 2, {di, dh}},
                      {"w2", UOPC_F32, 2, {dh, dout}}, {"y", UOPC_F32, 2, {b, dout}}};
    tp_options o = {.grad_inputs = 0x6};   /* w1 and w2 */
    rc = tp_compiled_new(&f->compiled, model, &f->config, args, 4, 1, &o, err);
  }
  if (rc) { tp_ffi_free(f); return NULL; }
  return f;
}

tp_ffi *tp_ffi_two_layer_new(int activation, int64_t d_in, int64_t d_hid, int64_t d_out, int64_t b_lo,
                             int64_t b_hi, uopc_error *err) {
  return ffi_new((model_config){activation, -1}, d_in, d_hid, d_out, b_lo, b_hi, err);
}

tp_ffi *tp_ffi_branch_new(int64_t threshold, int64_t d_in, int64_t d_hid, int64_t d_out, int64_t b_lo,
                          int64_t b_hi, uopc_error *err) {
  if (threshold < 0) {
    UOPC_FAIL(err, UOPC_E_INVALID, "threshold %lld (needs 0 or more)", (long long)threshold);
    return NULL;
  }
  return ffi_new((model_config){TP_FFI_TANH, threshold}, d_in, d_hid, d_out, b_lo, b_hi, err);
}

void tp_ffi_free(tp_ffi *f) {
  if (!f) return;
  tp_compiled_free(f->compiled);
  sym_arena_free(f->arena);
  free(f);
}

/* ---- Calls. */

/* Copies a result into dst after checking it is an f32 tensor of numel
 * elements and rank rank (a wrong shape must not become a write past dst). */
static int take(float *dst, const uopc_tensor *t, int rank, int64_t numel, const char *what, uopc_error *err) {
  if (!t->storage || t->dtype != UOPC_F32 || t->rank != rank || uopc_tensor_numel(t) != numel)
    return UOPC_FAIL(err, UOPC_E_INVALID, "%s: expected f32 of rank %d with %lld elements, got %s of rank %d with"
                     " %lld", what, rank, (long long)numel, t->storage ? uopc_dtype_name(t->dtype) : "nothing",
                     t->rank, (long long)(t->storage ? uopc_tensor_numel(t) : 0));
  for (int64_t i = 0; i < numel; i++) dst[i] = (float)uopc_tensor_get(t, i);
  return UOPC_OK;
}

static int run(tp_ffi *f, int captured, const uopc_tensor *const *in, float *loss, float *grad_w1, float *grad_w2,
               uopc_error *err) {
  uopc_tensor out[1] = {{0}}, grads[2] = {{0}, {0}};
  int rc = captured ? tp_call(f->compiled, in, out, grads, err)
                    : tp_run_eager(model, &f->config, in, 4, 1, 0x6, out, grads, err);
  if (!rc) rc = take(loss, &out[0], 0, 1, "the loss", err);
  if (!rc) rc = take(grad_w1, &grads[0], 2, f->d_in * f->d_hid, "d loss / d w1", err);
  if (!rc) rc = take(grad_w2, &grads[1], 2, f->d_hid * f->d_out, "d loss / d w2", err);
  uopc_tensor_release(&out[0]);
  uopc_tensor_release(&grads[0]), uopc_tensor_release(&grads[1]);
  return rc;
}

int tp_ffi_call(tp_ffi *f, int captured, int64_t batch, const float *x, const float *w1, const float *w2,
                const float *y, float *loss, float *grad_w1, float *grad_w2, uopc_error *err) {
  if (!f || !x || !w1 || !w2 || !y || !loss || !grad_w1 || !grad_w2)
    return UOPC_FAIL(err, UOPC_E_INVALID, "tp_ffi_call: a NULL function or buffer");
  int64_t shapes[4][2] = {{batch, f->d_in}, {f->d_in, f->d_hid}, {f->d_hid, f->d_out}, {batch, f->d_out}};
  const float *data[4] = {x, w1, w2, y};
  uopc_tensor t[4] = {{0}};
  int rc = UOPC_OK;
  for (int k = 0; k < 4 && !rc; k++) {   /* row-major; the model only reads them */
    int64_t strides[2] = {shapes[k][1], 1};
    rc = uopc_tensor_wrap(&t[k], (void *)data[k], UOPC_F32, 2, shapes[k], strides, err);
  }
  int64_t before[N_STATS];
  for (int k = 0; k < N_STATS; k++) before[k] = uopc_counter_get(stat_names[k]);
  const uopc_tensor *in[4] = {&t[0], &t[1], &t[2], &t[3]};
  if (!rc) rc = run(f, captured, in, loss, grad_w1, grad_w2, err);
  for (int k = 0; k < N_STATS; k++) f->stats[k] += uopc_counter_get(stat_names[k]) - before[k];
  for (int k = 0; k < 4; k++) uopc_tensor_release(&t[k]);
  return rc;
}

/* ---- What a caller checks. */

int tp_ffi_variant_count(const tp_ffi *f) { return tp_compiled_variant_count(f->compiled); }

int tp_ffi_guards(const tp_ffi *f, int k, char *text, size_t size) {
  const tp_variant *v = tp_compiled_variant(f->compiled, k);
  if (!v) return -1;
  size_t used = 0;
  if (text && size) text[0] = '\0';
  for (int g = 0; text && g < v->n_guards && used + 1 < size; g++) {
    char diff[128];
    uopc_error err = {0};
    if (sym_expr_format(v->guards[g].diff, diff, sizeof diff, &err)) snprintf(diff, sizeof diff, "?");
    int n = snprintf(text + used, size - used, "(%s) %s 0 is %s\n", diff, tp_cmp_text(v->guards[g].op),
                     v->guards[g].truth ? "true" : "false");
    used = n < 0 ? used : used + (size_t)n < size ? used + (size_t)n : size - 1;
  }
  return v->n_guards;
}

int64_t tp_ffi_stat(const tp_ffi *f, const char *name) {
  for (int k = 0; k < N_STATS; k++)
    if (name && !strcmp(name, stat_names[k])) return f->stats[k];
  return -1;
}
