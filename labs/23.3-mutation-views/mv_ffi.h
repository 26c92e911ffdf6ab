/* mv_ffi.h: one slice assignment for foreign callers (lab 23.3, given).
 * The harness (through ctypes) never mirrors a program or a runner: it asks
 * for a handle that holds both, for `a[dst] = a[src] <op> c` or
 * `a[dst] += a[src]` over one external f32 or f64 storage `a` whose extent
 * is a dim n in [lo, hi], then runs the handle on its own arrays, of any
 * length within the bounds, with the plans built once. Nothing here is
 * student work. */
#ifndef MV_FFI_H
#define MV_FFI_H

#include "run.h"

/* The statement: a[dst] = a[src] + c, - c, * c, or a[dst] += a[src] (c unused). */
typedef enum mv_ffi_op { MV_FFI_ADD, MV_FFI_SUB, MV_FFI_MUL, MV_FFI_IADD } mv_ffi_op;

#define MV_FFI_RUNS "runs"   /* mv_ffi_stat: the handle's runs that succeeded */

typedef struct mv_ffi mv_ffi;

/* ---- Lifecycle. */

/* The program over storage a (dtype UOPC_F32 or UOPC_F64, extent the dim n
 * in [lo, hi]) and its runner for mode (an mv_mode). dst and src are slice
 * triples {start, stop, step}, Python's rules, UOPC_SLICE_NONE omitting one
 * (an omitted step is 1);
 * op is an mv_ffi_op. The caller owns the result (mv_ffi_free). NULL on
 * failure, with err filled: UOPC_E_INVALID (NULL triples, op or mode out of
 * range), UOPC_E_DTYPE, those of sym_dim_init, mv_slice, mv_store (a value
 * that does not broadcast to a[dst]: UOPC_E_INVALID) and mv_runner_new. */
mv_ffi *mv_ffi_new(int dtype, int64_t lo, int64_t hi, const int64_t *dst, const int64_t *src, int op, double c,
                   int mode, uopc_error *err);
/* Frees h (NULL is fine). */
void mv_ffi_free(mv_ffi *h);

/* ---- Running and reading. */

/* Runs the statement on a (the caller's tensor, mutated in place). Errors:
 * UOPC_E_INVALID (NULL h), those of mv_run (a released tensor, a length
 * outside the dim's bounds, ...), after which a is unchanged. */
int mv_ffi_run(mv_ffi *h, uopc_tensor *a, uopc_error *err);
/* The store's plan (an mv_store_plan) of a versioned handle; -1 for a
 * functional one or NULL. */
int mv_ffi_store_plan(const mv_ffi *h);
/* The handle's own share of a run.h counter (MV_C_PLANS, MV_C_VERSIONS,
 * MV_C_DIRECT, MV_C_STAGED, MV_C_GUARDS, MV_C_GUARD_OVERLAP,
 * MV_C_WRITEBACKS) or MV_FFI_RUNS; -1 for any other name. */
int64_t mv_ffi_stat(const mv_ffi *h, const char *name);

#endif
