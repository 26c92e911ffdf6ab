/* mv_ffi.c: one slice assignment for foreign callers (lab 23.3, given).
 * A heap handle around a one-statement program and its runner, so that the
 * harness's ctypes never mirrors them; its counts are the process counters'
 * changes across its own calls. Only in labs/: IMPL=labs and IMPL=solutions
 * both build it into liblab23_3.so. */
#include <stdlib.h>
#include <string.h>
#include "mv_ffi.h"

static const char *const STATS[] = {MV_C_PLANS, MV_C_VERSIONS, MV_C_DIRECT, MV_C_STAGED,
                                    MV_C_GUARDS, MV_C_GUARD_OVERLAP, MV_C_WRITEBACKS};
#define N_STATS ((int)(sizeof STATS / sizeof *STATS))

struct mv_ffi {
  mv_program *p;
  mv_runner *r;
  sym_dim n;
  int64_t runs, stats[N_STATS];
};

static void snapshot(int64_t *at) {
  for (int k = 0; k < N_STATS; k++) at[k] = uopc_counter_get(STATS[k]);
}

static void account(mv_ffi *h, const int64_t *before) {
  for (int k = 0; k < N_STATS; k++) h->stats[k] += uopc_counter_get(STATS[k]) - before[k];
}

/* Python's omitted step is 1; mv_slice wants it spelled. */
static int64_t step_of(const int64_t *triple) { return triple[2] == UOPC_SLICE_NONE ? 1 : triple[2]; }

/* The statement, closed by a store into a[dst]. */
static int build(mv_ffi *h, int dtype, const int64_t *dst, const int64_t *src, int op, double c, uopc_error *err) {
  sym_arena *ar = mv_program_arena(h->p);
  const sym_expr *n = sym_expr_dim(ar, &h->n);
  int a;
  mv_view whole, d, s;
  int rc = mv_storage_new(h->p, "a", (uopc_dtype)dtype, 1, &n, &a, err);
  if (!rc) mv_view_whole(h->p, a, &whole);
  if (!rc) rc = mv_slice(h->p, &whole, 0, dst[0], dst[1], step_of(dst), &d, err);
  if (!rc) rc = mv_slice(h->p, &whole, 0, src[0], src[1], step_of(src), &s, err);
  ir_graph *g = rc ? NULL : mv_begin(h->p, err);
  if (!g) return rc ? rc : err->code;
  if (op == MV_FFI_IADD) return mv_add_(h->p, &d, mv_load(h->p, &s), err);
  static const ir_op OPS[] = {IR_ADD, IR_SUB, IR_MUL};
  return mv_store(h->p, &d, ir_binary(g, OPS[op], mv_load(h->p, &s), ir_const(g, c, (uopc_dtype)dtype)), err);
}

mv_ffi *mv_ffi_new(int dtype, int64_t lo, int64_t hi, const int64_t *dst, const int64_t *src, int op, double c,
                   int mode, uopc_error *err) {
  if (!dst || !src || op < MV_FFI_ADD || op > MV_FFI_IADD || (mode != MV_VERSIONED && mode != MV_FUNCTIONAL)) {
    UOPC_FAIL(err, UOPC_E_INVALID, "mv_ffi_new: NULL triple, op %d (0..%d) or mode %d (0..1)", op, MV_FFI_IADD, mode);
    return NULL;
  }
  if (dtype != UOPC_F32 && dtype != UOPC_F64) {
    UOPC_FAIL(err, UOPC_E_DTYPE, "mv_ffi_new: dtype %d is not f32 or f64", dtype);
    return NULL;
  }
  mv_ffi *h = calloc(1, sizeof *h);
  if (!h) { UOPC_FAIL(err, UOPC_E_NOMEM, "mv_ffi_new: out of memory"); return NULL; }
  int64_t before[N_STATS];
  snapshot(before);
  int rc = mv_program_new(&h->p, err);
  if (!rc) rc = sym_dim_init(&h->n, "n", lo, hi, 1, err);
  if (!rc) rc = build(h, dtype, dst, src, op, c, err);
  if (!rc) rc = mv_runner_new(&h->r, h->p, (mv_mode)mode, NULL, err);
  account(h, before);
  if (rc) { mv_ffi_free(h); return NULL; }
  return h;
}

void mv_ffi_free(mv_ffi *h) {
  if (!h) return;
  mv_runner_free(h->r);
  mv_program_free(h->p);
  free(h);
}

int mv_ffi_run(mv_ffi *h, uopc_tensor *a, uopc_error *err) {
  if (!h) return UOPC_FAIL(err, UOPC_E_INVALID, "mv_ffi_run: NULL handle");
  uopc_tensor *args[1] = {a};
  int64_t before[N_STATS];
  snapshot(before);
  int rc = mv_run(h->r, args, 1, NULL, err);
  account(h, before);
  h->runs += rc == UOPC_OK;
  return rc;
}

int mv_ffi_store_plan(const mv_ffi *h) {
  return h && mv_runner_mode(h->r) == MV_VERSIONED ? (int)mv_runner_store_plan(h->r, 0) : -1;
}

int64_t mv_ffi_stat(const mv_ffi *h, const char *name) {
  if (!h || !name) return -1;
  if (!strcmp(name, MV_FFI_RUNS)) return h->runs;
  for (int k = 0; k < N_STATS; k++)
    if (!strcmp(name, STATS[k])) return h->stats[k];
  return -1;
}
