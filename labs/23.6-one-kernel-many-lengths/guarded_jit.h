/* guarded_jit.h: one C kernel for many lengths (lab 23.6, the worked lab).
 * out = x*x + 1 for a floating vector x. Contiguous, aligned f32 vectors run
 * one compiled kernel whose loop bound is read from an int32 length buffer;
 * every other floating vector takes an eager fallback that keeps the dtype and
 * the logical order. Lengths outside [1, maximum] are rejected. */
#ifndef GUARDED_JIT_H
#define GUARDED_JIT_H

#include <stdint.h>
#include "uopc/uopc.h"

/* The lab's counters, also added to the process counters under these names. */
#define GUARDED_JIT_C_VARIANTS "variants built"
#define GUARDED_JIT_C_COMPILED "compiled calls"
#define GUARDED_JIT_C_FALLBACKS "layout fallbacks"

typedef enum guarded_jit_path { GUARDED_JIT_NONE, GUARDED_JIT_COMPILED, GUARDED_JIT_FALLBACK } guarded_jit_path;

typedef struct guarded_jit {
  int64_t maximum;             /* the declared bound: 1 <= length <= maximum */
  uopc_program_options options;
  uopc_program *program;       /* built on the first compiled call */
  int64_t variants_built;      /* programs constructed by this instance */
  int64_t compiled_calls;
  int64_t layout_fallbacks;
  guarded_jit_path last_path;
  uopc_counter_id variants_slot, compiled_slot, fallback_slot;   /* process counters, looked up once */
  int trace;                   /* UOPC_DEBUG >= 3: each guard decision on stderr */
} guarded_jit;

/* Prepares jit for vectors of length 1..maximum; opts may be NULL.
 * Errors: UOPC_E_INVALID when maximum < 1 or maximum > INT32_MAX (the length
 * travels in an int32 buffer). */
int guarded_jit_init(guarded_jit *jit, int64_t maximum, const uopc_program_options *opts,
                     uopc_error *err);
void guarded_jit_fini(guarded_jit *jit);

/* out = x*x + 1, elementwise. x: rank 1, f32 or f64, any strides; out: the
 * same dtype and length, any strides, either x itself or not overlapping it.
 * Errors: UOPC_E_INVALID (not a vector, lengths differ), UOPC_E_DTYPE (not
 * floating, dtypes differ), UOPC_E_BOUNDS (length outside [1, maximum]),
 * UOPC_E_ALIAS (out partly overlaps x), and the runtime's compile errors. */
int guarded_jit_call(guarded_jit *jit, const uopc_tensor *x, uopc_tensor *out,
                     uopc_error *err);

/* Heap forms for foreign callers (the harness through ctypes); guarded_jit_free(NULL)
 * does nothing. */
guarded_jit *guarded_jit_new(int64_t maximum, uopc_error *err);
void guarded_jit_free(guarded_jit *jit);

#endif
