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

// STUDENT 23.2 helpers
/* Row-major contiguity, dims of size 1 ignored (as uopc_tensor_is_contiguous). */
static inline int contiguous(const uopc_tensor *x) {
  int64_t expected = 1;
  for (int i = x->rank - 1; i >= 0; i--) {
    if (x->shape[i] == 0) return 1;
    if (x->shape[i] == 1) continue;
    if (x->strides[i] != expected) return 0;
    expected *= x->shape[i];
  }
  return 1;
}

/* [*lo, *hi) are the bytes x reaches from element 0 at address p; empty: 0. */
static inline int byte_range(const uopc_tensor *x, uintptr_t p, uintptr_t *lo, uintptr_t *hi) {
  int64_t first = 0, last = 0;
  for (int i = 0; i < x->rank; i++) {
    if (x->shape[i] == 0) return 0;
    int64_t reach = (x->shape[i] - 1) * x->strides[i];
    if (reach < 0) first += reach;
    else last += reach;
  }
  int64_t size = (int64_t)uopc_dtype_size(x->dtype);   /* no call on the hot path */
  *lo = p + (uintptr_t)(first * size);
  *hi = p + (uintptr_t)((last + 1) * size);
  return 1;
}

static inline int disjoint(const guard_call *c, int a, int b) {
  uintptr_t a0, a1, b0, b1;
  if (!byte_range(&c->args[a], c->data[a], &a0, &a1) || !byte_range(&c->args[b], c->data[b], &b0, &b1))
    return 1;
  return a1 <= b0 || b1 <= a0;
}

/* "(2, 3)" for n values; "(10)" for one. */
static void tuple_text(const int64_t *v, int n, char *buf, size_t size) {
  size_t used = (size_t)snprintf(buf, size, "(");
  for (int i = 0; i < n && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, "%s%" PRId64, i ? ", " : "", v[i]);
  if (used < size) snprintf(buf + used, size - used, ")");
}

/* An integer division costs tens of cycles, more than the rest of a guard:
 * powers of two (the usual multiples) take a mask instead. */
static inline int multiple_of(int64_t v, int64_t m) {
  return (m & (m - 1)) == 0 ? (v & (m - 1)) == 0 : v % m == 0;
}

/* sym_dim_check's condition, inline: the hot path calls no function. */
static inline int within(const sym_dim *d, int64_t v) {
  return v >= d->lo && v <= d->hi && (d->multiple_of == 1 || multiple_of(v, d->multiple_of));
}

/* 1 when the guard's axes exist in the call's arguments; a missing axis is a
 * failed guard (the assumption "x has an axis 0" does not hold), not an error. */
static int axes_exist(const guard *g, const guard_call *c) {
  switch (g->kind) {
  case GUARD_DIVISIBLE: case GUARD_DIM_BOUNDS: case GUARD_STRIDE:
    return g->axis < c->args[g->arg].rank;
  case GUARD_DIMS_EQUAL:
    return g->axis < c->args[g->arg].rank && g->axis2 < c->args[g->arg2].rank;
  default:
    return 1;
  }
}
/* 1 when g holds for c; the arguments are known to exist. Nothing is
 * formatted and nothing is called: this runs for every variant checked. */
static inline int evaluate(const guard *g, const guard_call *c) {
  const uopc_tensor *x = &c->args[g->arg];
  switch (g->kind) {
  case GUARD_DTYPE: return x->dtype == (uopc_dtype)g->value;
  case GUARD_RANK: return x->rank == g->value;
  case GUARD_CONTIGUOUS: return contiguous(x);
  case GUARD_ALIGNED: return (c->data[g->arg] & (uintptr_t)(g->value - 1)) == 0;   /* a power of two */
  case GUARD_DIVISIBLE: return g->axis < x->rank && multiple_of(x->shape[g->axis], g->value);
  case GUARD_DIM_BOUNDS: return g->axis < x->rank && within(&g->dim, x->shape[g->axis]);
  case GUARD_DIMS_EQUAL:
    return g->axis < x->rank && g->axis2 < c->args[g->arg2].rank &&
           x->shape[g->axis] == c->args[g->arg2].shape[g->axis2];
  case GUARD_STRIDE: return g->axis < x->rank && x->strides[g->axis] == g->value;
  case GUARD_DISJOINT: return disjoint(c, g->arg, g->arg2);
  }
  return 0;
}

/* Fills why (when asked) with what the failed guard found. */
static int explain_failure(const guard *g, const guard_call *c, guard_reason *why, uopc_error *err) {
  const uopc_tensor *x = &c->args[g->arg];
  if (!axes_exist(g, c)) {
    snprintf(why->text, sizeof why->text, "%s has no axis for '%s' (rank %d)", g->names[0], g->what, x->rank);
    return UOPC_OK;
  }
  char shape[64], strides[64];
  size_t sz = sizeof why->text;
  switch (g->kind) {
  case GUARD_DTYPE:
    snprintf(why->text, sz, "%s has dtype %s, not %s", g->names[0], uopc_dtype_name(x->dtype),
             uopc_dtype_name((uopc_dtype)g->value));
    break;
  case GUARD_RANK:
    snprintf(why->text, sz, "%s has rank %d, not %" PRId64, g->names[0], x->rank, g->value);
    break;
  case GUARD_CONTIGUOUS:
    tuple_text(x->shape, x->rank, shape, sizeof shape);
    tuple_text(x->strides, x->rank, strides, sizeof strides);
    snprintf(why->text, sz, "%s is not contiguous (strides %s for shape %s)", g->names[0], strides, shape);
    break;
  case GUARD_ALIGNED:
    snprintf(why->text, sz, "%s is not aligned to %" PRId64 " bytes (element 0 is %" PRIuPTR
             " bytes past a %" PRId64 "-byte boundary)", g->names[0], g->value,
             c->data[g->arg] % (uintptr_t)g->value, g->value);
    break;
  case GUARD_DIVISIBLE:
    snprintf(why->text, sz, "%s = %" PRId64 " is not a multiple of %" PRId64, g->dim.name,
             x->shape[g->axis], g->value);
    break;
  case GUARD_DIM_BOUNDS: {   /* the text is lab 23.1's */
    uopc_error e = {0};
    int rc = sym_dim_check(&g->dim, x->shape[g->axis], &e);
    if (rc != UOPC_E_BOUNDS) return rc ? sym_dim_check(&g->dim, x->shape[g->axis], err)
                                       : UOPC_FAIL(err, UOPC_E_INVALID, "sym_dim_check accepts what '%s' refused", g->what);
    snprintf(why->text, sz, "%.200s", e.message);
    break;
  }
  case GUARD_DIMS_EQUAL:
    snprintf(why->text, sz, "%s.shape[%d] = %" PRId64 " differs from %s.shape[%d] = %" PRId64, g->names[0],
             g->axis, x->shape[g->axis], g->names[1], g->axis2, c->args[g->arg2].shape[g->axis2]);
    break;
  case GUARD_STRIDE:
    snprintf(why->text, sz, "%s.strides[%d] = %" PRId64 ", not %" PRId64, g->names[0], g->axis,
             x->strides[g->axis], g->value);
    break;
  case GUARD_DISJOINT:
    snprintf(why->text, sz, "%s and %s overlap (they share bytes of one buffer)", g->names[0], g->names[1]);
    break;
  }
  return UOPC_OK;
}

// END STUDENT

int guard_check(const guard *g, const guard_call *call, int *holds, guard_reason *why,
                uopc_error *err) {
// STUDENT 23.2 guard_check
  if (g->arg >= call->count || g->arg2 >= call->count)
    return UOPC_FAIL(err, UOPC_E_INVALID, "guard '%s' reads argument %d of a call with %d",
                     g->what, g->arg > g->arg2 ? g->arg : g->arg2, call->count);
  *holds = evaluate(g, call);
  return !*holds && why ? explain_failure(g, call, why, err) : UOPC_OK;
// END STUDENT
}

int guard_set_check(const guard_set *s, const guard_call *call, int *failed,
                    guard_reason *why, uopc_error *err) {
// STUDENT 23.2 guard_set_check
  if (call->count < s->n_args)   /* then every guard's arguments exist: the adders checked */
    return UOPC_FAIL(err, UOPC_E_INVALID, "a call with %d arguments checked against a set over %d",
                     call->count, s->n_args);
  *failed = -1;
  for (int k = 0; k < s->count; k++) {
    if (evaluate(&s->guards[k], call)) continue;
    *failed = k;
    return why ? explain_failure(&s->guards[k], call, why, err) : UOPC_OK;
  }
  return UOPC_OK;
// END STUDENT
}
