/* guard.c: guards as data (lab 23.2).
 * Building a guard writes its description once; checking it reads a few
 * fields of the call and formats nothing unless a reason is asked for, so a
 * dispatcher can check many variants per call. Chapter 23.2. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "guard_plan.h"

static const char *const KIND_NAMES[] = {
  [GUARD_DTYPE] = "dtype", [GUARD_RANK] = "rank", [GUARD_CONTIGUOUS] = "contiguous",
  [GUARD_ALIGNED] = "aligned", [GUARD_DIVISIBLE] = "divisible", [GUARD_DIM_BOUNDS] = "dim bounds",
  [GUARD_DIMS_EQUAL] = "dims equal", [GUARD_STRIDE] = "stride", [GUARD_DISJOINT] = "disjoint",
};

const char *guard_kind_name(guard_kind k) {
  return k <= GUARD_DISJOINT ? KIND_NAMES[k] : "?";
}

/* guard_call_init is in guard_plan.c: it computes a call's facts as it copies
 * the views, in the same pass. */

/* ---- Building. */

int guard_set_init(guard_set *s, int n_args, const char *const *names, uopc_error *err) {
  memset(s, 0, sizeof *s);
  if (n_args < 1 || n_args > GUARD_MAX_ARGS)
    return UOPC_FAIL(err, UOPC_E_INVALID, "a guard set covers 1 to %d arguments, not %d", GUARD_MAX_ARGS, n_args);
  for (int i = 0; i < n_args; i++) {
    if (!names[i] || !names[i][0] || strlen(names[i]) >= SYM_NAME_MAX)
      return UOPC_FAIL(err, UOPC_E_INVALID, "argument %d needs a name shorter than %d", i, SYM_NAME_MAX);
    strcpy(s->names[i], names[i]);
  }
  s->n_args = n_args;
  return UOPC_OK;
}

/* Appends a guard of kind over arg (and arg2); the caller fills the rest. */
static int append(guard_set *s, guard_kind kind, int arg, int arg2, guard **out, uopc_error *err) {
  if (s->count == GUARD_SET_MAX)
    return UOPC_FAIL(err, UOPC_E_LIMIT, "a guard set holds at most %d guards", GUARD_SET_MAX);
  if (arg < 0 || arg >= s->n_args || arg2 < 0 || arg2 >= s->n_args)
    return UOPC_FAIL(err, UOPC_E_INVALID, "%s guard on argument %d of a set over %d",
                     guard_kind_name(kind), arg < 0 || arg >= s->n_args ? arg : arg2, s->n_args);
  guard *g = &s->guards[s->count++];
  memset(g, 0, sizeof *g);
  g->kind = kind;
  g->arg = arg;
  g->arg2 = arg2;
  strcpy(g->names[0], s->names[arg]);
  strcpy(g->names[1], s->names[arg2]);
  *out = g;
  return UOPC_OK;
}

int guard_set_add_dtype(guard_set *s, int arg, uopc_dtype dt, uopc_error *err) {
  guard *g;
  int rc = append(s, GUARD_DTYPE, arg, arg, &g, err);
  if (rc) return rc;
  g->value = dt;
  snprintf(g->what, sizeof g->what, "%s is %s", g->names[0], uopc_dtype_name(dt));
  return UOPC_OK;
}

int guard_set_add_rank(guard_set *s, int arg, int rank, uopc_error *err) {
  guard *g;
  if (rank < 0 || rank > UOPC_MAX_RANK) return UOPC_FAIL(err, UOPC_E_INVALID, "rank guard: rank %d", rank);
  int rc = append(s, GUARD_RANK, arg, arg, &g, err);
  if (rc) return rc;
  g->value = rank;
  snprintf(g->what, sizeof g->what, "%s has rank %d", g->names[0], rank);
  return UOPC_OK;
}

int guard_set_add_contiguous(guard_set *s, int arg, uopc_error *err) {
  guard *g;
  int rc = append(s, GUARD_CONTIGUOUS, arg, arg, &g, err);
  if (rc) return rc;
  snprintf(g->what, sizeof g->what, "%s is contiguous", g->names[0]);
  return UOPC_OK;
}

int guard_set_add_aligned(guard_set *s, int arg, int64_t bytes, uopc_error *err) {
  guard *g;
  if (bytes < 1 || (bytes & (bytes - 1)))
    return UOPC_FAIL(err, UOPC_E_INVALID, "alignment guard: %" PRId64 " bytes is not a power of two", bytes);
  int rc = append(s, GUARD_ALIGNED, arg, arg, &g, err);
  if (rc) return rc;
  g->value = bytes;
  snprintf(g->what, sizeof g->what, "%s is aligned to %" PRId64 " bytes", g->names[0], bytes);
  return UOPC_OK;
}

int guard_set_add_divisible(guard_set *s, const char *dim_name, int arg, int axis,
                            int64_t multiple, uopc_error *err) {
  guard *g;
  if (multiple < 1 || axis < 0 || axis >= UOPC_MAX_RANK || !dim_name || strlen(dim_name) >= SYM_NAME_MAX)
    return UOPC_FAIL(err, UOPC_E_INVALID, "divisibility guard: multiple %" PRId64 ", axis %d", multiple, axis);
  int rc = append(s, GUARD_DIVISIBLE, arg, arg, &g, err);
  if (rc) return rc;
  g->axis = axis;
  g->value = multiple;
  strcpy(g->dim.name, dim_name);
  snprintf(g->what, sizeof g->what, "%s = %s.shape[%d] is a multiple of %" PRId64, dim_name,
           g->names[0], axis, multiple);
  return UOPC_OK;
}

int guard_set_add_dim_bounds(guard_set *s, const sym_dim *d, int arg, int axis,
                             uopc_error *err) {
  guard *g;
  if (!d || axis < 0 || axis >= UOPC_MAX_RANK)
    return UOPC_FAIL(err, UOPC_E_INVALID, "bounds guard: no dim, or axis %d", axis);
  int rc = append(s, GUARD_DIM_BOUNDS, arg, arg, &g, err);
  if (rc) return rc;
  g->axis = axis;
  g->dim = *d;
  int n = snprintf(g->what, sizeof g->what, "%s = %s.shape[%d] in [%" PRId64 ", %" PRId64 "]", d->name,
                   g->names[0], axis, d->lo, d->hi);
  if (d->multiple_of > 1 && n > 0 && (size_t)n < sizeof g->what)
    snprintf(g->what + n, sizeof g->what - (size_t)n, ", a multiple of %" PRId64, d->multiple_of);
  return UOPC_OK;
}

int guard_set_add_dims_equal(guard_set *s, int arg, int axis, int arg2, int axis2,
                             uopc_error *err) {
  guard *g;
  if (axis < 0 || axis >= UOPC_MAX_RANK || axis2 < 0 || axis2 >= UOPC_MAX_RANK)
    return UOPC_FAIL(err, UOPC_E_INVALID, "dims-equal guard: axes %d and %d", axis, axis2);
  int rc = append(s, GUARD_DIMS_EQUAL, arg, arg2, &g, err);
  if (rc) return rc;
  g->axis = axis;
  g->axis2 = axis2;
  snprintf(g->what, sizeof g->what, "%s.shape[%d] == %s.shape[%d]", g->names[0], axis, g->names[1], axis2);
  return UOPC_OK;
}

int guard_set_add_stride(guard_set *s, int arg, int axis, int64_t stride, uopc_error *err) {
  guard *g;
  if (axis < 0 || axis >= UOPC_MAX_RANK) return UOPC_FAIL(err, UOPC_E_INVALID, "stride guard: axis %d", axis);
  int rc = append(s, GUARD_STRIDE, arg, arg, &g, err);
  if (rc) return rc;
  g->axis = axis;
  g->value = stride;
  snprintf(g->what, sizeof g->what, "%s.strides[%d] == %" PRId64, g->names[0], axis, stride);
  return UOPC_OK;
}

int guard_set_add_disjoint(guard_set *s, int arg, int arg2, uopc_error *err) {
  guard *g;
  if (arg == arg2) return UOPC_FAIL(err, UOPC_E_INVALID, "disjoint guard: argument %d with itself", arg);
  int rc = append(s, GUARD_DISJOINT, arg, arg2, &g, err);
  if (rc) return rc;
  snprintf(g->what, sizeof g->what, "%s and %s do not overlap", g->names[0], g->names[1]);
  return UOPC_OK;
}

void guard_set_describe(const guard_set *s, const char *sep, char *buf, size_t size) {
  size_t used = 0;
  if (size) buf[0] = '\0';
  for (int k = 0; k < s->count && used < size; k++) {
    int n = snprintf(buf + used, size - used, "%s%s", k ? sep : "", s->guards[k].what);
    if (n < 0) return;
    used += (size_t)n;
  }
}

/* ---- Checking: these read only the copied views and addresses. */

/* Lab 23.2: helper functions for your code go here. */

int guard_check(const guard *g, const guard_call *call, int *holds, guard_reason *why,
                uopc_error *err) {
  /* Lab 23.2: write guard_check here. See README.md in this folder. */
  (void)g; (void)call; (void)holds; (void)why;
  return UOPC_FAIL(err, UOPC_E_NOT_IMPLEMENTED, "lab 23.2: guard_check is not implemented yet");
}

int guard_set_check(const guard_set *s, const guard_call *call, int *failed,
                    guard_reason *why, uopc_error *err) {
  /* Lab 23.2: write guard_set_check here. See README.md in this folder. */
  (void)s; (void)call; (void)failed; (void)why;
  return UOPC_FAIL(err, UOPC_E_NOT_IMPLEMENTED, "lab 23.2: guard_set_check is not implemented yet");
}
