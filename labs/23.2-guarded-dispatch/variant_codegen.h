/* variant_codegen.h: the C source of one dispatch variant (lab 23.2).
 * The operation is a lab 23.1 kernel graph with one input x (a pointwise
 * expression); its loop body comes from the compiler core's one value
 * emitter (lower_emit_value), on the graph rebuilt in the core's IR. The
 * loops around it are written here: the generic variant reads x and writes
 * out through their own runtime strides, out possibly x itself (the core's
 * programs write contiguous outputs that alias nothing), and the fast variant
 * walks 16-lane blocks of aligned memory with no tail loop. Chapter 23.2,
 * "Two kernels". */
#ifndef VARIANT_CODEGEN_H
#define VARIANT_CODEGEN_H

#include "kernel.h"
#include "lower.h"
#include "guard.h"
#include "spec_key.h"

#define VARIANT_LANES 16   /* f32 lanes in one fast-path block */
#define VARIANT_ALIGN 64   /* bytes: a block's alignment (VARIANT_LANES * 4) */

typedef struct variant_spec {
  const kernel_graph *graph;   /* the operation: out = f(x), pointwise, f32 */
  const kernel_node *out;
  const char *op_name;         /* "square_plus_one": the entry's prefix */
  const sym_dim *n;            /* the length, with its bounds */
  int64_t exact_n;             /* 0, or the one length the fast code is built for */
  const guard_set *guards;     /* the variant's contract, for the banner */
  const spec_key *key;
} variant_spec;

typedef struct variant_source {
  char entry[64];                       /* "square_plus_one_fast16" */
  char signature[UOPC_SIGNATURE_MAX];   /* for uopc_program_new */
  codegen_text text;                    /* owned */
} variant_source;

/* The banner every variant opens with: entry, operation, dims with bounds,
 * index type, guards and cache key. Errors: UOPC_E_NOMEM. */
int variant_codegen_banner(codegen_text *t, const variant_spec *spec, const char *entry,
                           uopc_error *err);

/* The generic kernel, `<op>_generic(float *out, const float *x, int64_t n,
 * int64_t out_s0, int64_t x_s0)`, signature "pplll": runtime length and
 * strides (negative included), any alignment, out may be x (no restrict).
 * The caller owns src (variant_source_fini) after a success; after an error
 * src holds nothing (what was made is freed). Errors: UOPC_E_UNSUPPORTED (a
 * graph that is not a pointwise function of one input), UOPC_E_NOMEM. */
int variant_codegen_generic(variant_source *src, const variant_spec *spec, uopc_error *err);

/* The student's part: the fast kernel, `<op>_fast16(float *restrict out_p,
 * const float *restrict x_p, int64_t n)` (`<op>_fast16_n<N>` when exact_n):
 * both pointers re-declared through __builtin_assume_aligned(.., 64), an
 * outer loop i0 over n / 16 blocks (the constant exact_n / 16 when exact_n)
 * and an inner loop i1 over exactly 16 lanes at i0 * 16 + i1; no tail loop.
 * Signature "ppl" (an exact variant takes n too, and ignores it).
 * The guards make every assumption true. Errors: as variant_codegen_generic. */
int variant_codegen_fast16(variant_source *src, const variant_spec *spec, uopc_error *err);

void variant_source_fini(variant_source *src);

#endif
