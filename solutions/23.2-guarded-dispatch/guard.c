/* guard.c: checking guards, one by one (lab 23.2).
 * The reference check: each guard's condition read from the call's views
 * and addresses, and, when asked, the reason it failed with the values it
 * found. The compiled form (guard_plan.h) must agree with it on every call;
 * explain and a variant's first call use it. Building sets is given
 * (guard_set.c). Chapter 23.2, "A guard is an executable check". */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "guard.h"

// STUDENT 23.2 helpers
/* Row-major contiguity, axes of size 1 ignored (as uopc_tensor_is_contiguous). */
static int contiguous(const guard_view *x) {
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
static int byte_range(const guard_view *x, uintptr_t p, uintptr_t *lo, uintptr_t *hi) {
  int64_t first = 0, last = 0;
  for (int i = 0; i < x->rank; i++) {
    if (x->shape[i] == 0) return 0;
    int64_t reach = (x->shape[i] - 1) * x->strides[i];
    if (reach < 0) first += reach;
    else last += reach;
  }
  int64_t size = (int64_t)uopc_dtype_size(x->dtype);
  *lo = p + (uintptr_t)(first * size);
  *hi = p + (uintptr_t)((last + 1) * size);
  return 1;
}

static int disjoint(const guard_call *c, int a, int b) {
  uintptr_t a0, a1, b0, b1;
  if (!byte_range(&c->args[a], c->data[a], &a0, &a1) || !byte_range(&c->args[b], c->data[b], &b0, &b1)) return 1;
  return a1 <= b0 || b1 <= a0;
}

/* An integer division costs tens of cycles: powers of two take a mask. */
static int multiple_of(int64_t v, int64_t m) {
  return (m & (m - 1)) == 0 ? (v & (m - 1)) == 0 : v % m == 0;
}

static int sited(const guard *g) {
  return g->kind == GUARD_RANGE || g->kind == GUARD_DIVISIBLE || g->kind == GUARD_EQUAL || g->kind == GUARD_EXPR;
}

/* 1 when g holds for c; the arguments it names exist. */
static int evaluate(const guard_set *s, const guard *g, const guard_call *c) {
  const guard_view *x = &c->args[g->arg];
  int64_t v, want;
  switch (g->kind) {
  case GUARD_DTYPE: return x->dtype == (uopc_dtype)g->value;
  case GUARD_RANK: return x->rank == g->value;
  case GUARD_CONTIGUOUS: return contiguous(x);
  case GUARD_ALIGNED: return (c->data[g->arg] & (uintptr_t)(g->value - 1)) == 0;   /* a power of two */
  case GUARD_DISJOINT: return disjoint(c, g->arg, g->arg2);
  default: break;
  }
  if (!guard_site_exists(c, g->site) || !guard_site_exists(c, g->site2)) return 0;   /* no axis: it fails */
  v = guard_site_value(c, g->site);
  switch (g->kind) {
  case GUARD_RANGE: return v >= g->lo && v <= g->hi;
  case GUARD_DIVISIBLE: return multiple_of(v, g->value);
  case GUARD_EQUAL: return v == guard_site_value(c, g->site2);
  case GUARD_EXPR: return guard_expr_value(s, g->expr, c, &want) && v == want;
  default: return 0;
  }
}

/* "(2, 3)" for n values; "(10)" for one. */
static void tuple_text(const int64_t *v, int n, char *buf, size_t size) {
  size_t used = (size_t)snprintf(buf, size, "(");
  for (int i = 0; i < n && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, "%s%" PRId64, i ? ", " : "", v[i]);
  if (used < size) snprintf(buf + used, size - used, ")");
}

/* A range's reason: a named one is lab 23.1's text for its dim. */
static void range_reason(const guard *g, const char *site, int64_t v, char *buf, size_t size) {
  uopc_error e = {0};
  if (g->dim.name[0] && sym_dim_check(&g->dim, v, &e) == UOPC_E_BOUNDS) snprintf(buf, size, "%.200s", e.message);
  else if (g->lo == g->hi) snprintf(buf, size, "%s = %" PRId64 ", not %" PRId64, site, v, g->lo);
  else snprintf(buf, size, "%s = %" PRId64 " is outside [%" PRId64 ", %" PRId64 "]", site, v, g->lo, g->hi);
}

/* The reason of a guard on a site: what the site holds. */
static void site_reason(const guard_set *s, const guard *g, const guard_call *c, char *buf, size_t size) {
  char site[64], site2[64], text[96] = "?";
  int64_t v = guard_site_value(c, g->site), want;
  guard_site_format(s, g->site, site, sizeof site);
  guard_site_format(s, g->site2, site2, sizeof site2);
  switch (g->kind) {
  case GUARD_RANGE: range_reason(g, site, v, buf, size); break;
  case GUARD_DIVISIBLE:
    snprintf(buf, size, "%s = %" PRId64 " is not a multiple of %" PRId64, g->dim.name[0] ? g->dim.name : site, v,
             g->value);
    break;
  case GUARD_EQUAL:
    snprintf(buf, size, "%s = %" PRId64 " differs from %s = %" PRId64, site, v, site2, guard_site_value(c, g->site2));
    break;
  default:
    sym_expr_format(g->expr, text, sizeof text, NULL);
    if (guard_expr_value(s, g->expr, c, &want))
      snprintf(buf, size, "%s = %" PRId64 ", but %s = %" PRId64 " on this call", site, v, text, want);
    else snprintf(buf, size, "%s = %" PRId64 ", and %s cannot be evaluated on this call", site, v, text);
    break;
  }
}

/* Why g failed on c, with what was found. */
static void reason(const guard_set *s, const guard *g, const guard_call *c, char *buf, size_t size) {
  const guard_view *x = &c->args[g->arg];
  const char *name = s->names[g->arg];
  char shape[192], strides[192];
  if (sited(g) && (!guard_site_exists(c, g->site) || !guard_site_exists(c, g->site2))) {
    int first = !guard_site_exists(c, g->site);
    snprintf(buf, size, "%s has no axis for '%s' (rank %d)", s->names[first ? g->site.arg : g->site2.arg], g->what,
             c->args[first ? g->site.arg : g->site2.arg].rank);
    return;
  }
  switch (g->kind) {
  case GUARD_DTYPE:
    snprintf(buf, size, "%s has dtype %s, not %s", name, uopc_dtype_name(x->dtype),
             uopc_dtype_name((uopc_dtype)g->value));
    break;
  case GUARD_RANK: snprintf(buf, size, "%s has rank %d, not %" PRId64, name, x->rank, g->value); break;
  case GUARD_CONTIGUOUS:
    tuple_text(x->shape, x->rank, shape, sizeof shape);
    tuple_text(x->strides, x->rank, strides, sizeof strides);
    snprintf(buf, size, "%s is not contiguous (strides %.100s for shape %.100s)", name, strides, shape);
    break;
  case GUARD_ALIGNED:
    snprintf(buf, size, "%s is not aligned to %" PRId64 " bytes (element 0 is %" PRIuPTR " bytes past a %" PRId64
             "-byte boundary)", name, g->value, c->data[g->arg] % (uintptr_t)g->value, g->value);
    break;
  case GUARD_DISJOINT:
    snprintf(buf, size, "%s and %s overlap (they share bytes of one buffer)", name, s->names[g->arg2]);
    break;
  default: site_reason(s, g, c, buf, size); break;
  }
}
// END STUDENT

int guard_check(const guard_set *s, int k, const guard_call *call, int *holds, guard_reason *why,
                uopc_error *err) {
// STUDENT 23.2 guard_check
  if (k < 0 || k >= s->count)
    return UOPC_FAIL(err, UOPC_E_INVALID, "guard %d of a set of %d", k, s->count);
  const guard *g = &s->guards[k];
  int top = g->arg > g->arg2 ? g->arg : g->arg2;
  if (top >= call->count)
    return UOPC_FAIL(err, UOPC_E_INVALID, "guard '%s' reads argument %d of a call with %d", g->what, top,
                     call->count);
  *holds = evaluate(s, g, call);
  if (!*holds && why) reason(s, g, call, why->text, sizeof why->text);
  return UOPC_OK;
// END STUDENT
}

int guard_set_check(const guard_set *s, const guard_call *call, int *failed, guard_reason *why,
                    uopc_error *err) {
// STUDENT 23.2 guard_set_check
  if (call->count < s->n_args)   /* then every guard's arguments exist: the adders checked */
    return UOPC_FAIL(err, UOPC_E_INVALID, "a call with %d arguments checked against a set over %d", call->count,
                     s->n_args);
  *failed = -1;
  for (int k = 0; k < s->count; k++) {
    int holds, rc = guard_check(s, k, call, &holds, why, err);
    if (rc) return rc;
    if (!holds) {
      *failed = k;
      return UOPC_OK;
    }
  }
  return UOPC_OK;
// END STUDENT
}
