/* tp_ffi.h: the driver's two-layer model for foreign callers (lab 23.4,
 * given). The NumPy check (harness/check_23_4.py) calls the tracer through
 * ctypes; a compiled function, its variants and the tensors it returns are
 * structs whose layout the lab may change, so the caller never mirrors one.
 * It holds an opaque tp_ffi, passes flat f32 arrays and gets the loss and
 * the gradients back in its own buffers. Nothing here is student work.
 * Chapter 23.4, "Gradients with symbolic saved dims". */
#ifndef TP_FFI_H
#define TP_FFI_H

#include "tp_compile.h"

typedef struct tp_ffi tp_ffi;

typedef enum tp_ffi_activation { TP_FFI_TANH, TP_FFI_RELU } tp_ffi_activation;

/* ---- Lifecycle. */

/* loss = mean((act(x @ w1) @ w2 - y)^2) over x (B, d_in), w1 (d_in, d_hid),
 * w2 (d_hid, d_out) and y (B, d_out), all f32, with B a dim in [b_lo, b_hi]:
 * a compiled function (tp_compiled_new) whose grad_inputs are w1 and w2.
 * Nothing is traced until the first call. The caller owns the result and
 * frees it with tp_ffi_free. NULL on failure, with err filled:
 * UOPC_E_INVALID (activation, a size below 1, b_lo > b_hi), UOPC_E_NOMEM,
 * those of sym_dim_init and tp_compiled_new. */
tp_ffi *tp_ffi_two_layer_new(int activation, int64_t d_in, int64_t d_hid, int64_t d_out, int64_t b_lo,
                             int64_t b_hi, uopc_error *err);
/* The same model with a size branch: act is tanh when B > threshold and relu
 * otherwise (if (tp_gt(c, tp_size(c, x, 0), tp_int_const(c, threshold)))),
 * so batches on the two sides need two variants. Errors: as above. */
tp_ffi *tp_ffi_branch_new(int64_t threshold, int64_t d_in, int64_t d_hid, int64_t d_out, int64_t b_lo,
                          int64_t b_hi, uopc_error *err);
/* Frees f (NULL is fine). */
void tp_ffi_free(tp_ffi *f);

/* ---- Calls. */

/* One call with batch rows: x, w1, w2 and y are contiguous row-major
 * buffers of the shapes above, borrowed for the call; *loss, grad_w1
 * (d_in * d_hid elements) and grad_w2 (d_hid * d_out) receive the loss and
 * d loss / d w1, d loss / d w2. captured 1: through the compiled function
 * (tp_call); 0: the same model run eagerly (tp_run_eager). Nothing is
 * written on failure. Errors: those of tp_call and tp_run_eager (the model's
 * error names its line), UOPC_E_INVALID (NULL buffers, a result of another
 * shape or dtype than the model's). */
int tp_ffi_call(tp_ffi *f, int captured, int64_t batch, const float *x, const float *w1, const float *w2,
                const float *y, float *loss, float *grad_w1, float *grad_w2, uopc_error *err);

/* ---- What a caller checks. */

/* tp_compiled_variant_count of the compiled function. */
int tp_ffi_variant_count(const tp_ffi *f);
/* The guards of variant k: how many, and (when text is not NULL) each as
 * "(diff) op 0 is true|false", one a line, into text (size bytes, always
 * NUL-terminated). -1 when there is no variant k. */
int tp_ffi_guards(const tp_ffi *f, int k, char *text, size_t size);
/* This instance's share of a process counter: the sum of its change across
 * this instance's calls (captured and eager). name: one of the TP_C_ names
 * of tp_internal.h ("traces", "graph breaks", "guard failures",
 * "recompilations", "variants built", "guards recorded") or the runtime's
 * "programs constructed", "compiler invocations", "disk cache hits"; -1 for
 * any other name. */
int64_t tp_ffi_stat(const tp_ffi *f, const char *name);

#endif
