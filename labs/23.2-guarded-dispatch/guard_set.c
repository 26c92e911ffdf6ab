/* guard_set.c: building guard sets, and the sites of a call (lab 23.2,
 * given code). Each adder checks its arguments and writes the guard's
 * description once; checking is guard.c's (guard_check, the student's) and
 * guard_plan.c's (the compiled form). Chapter 23.2, "A guard is an
 * executable check". */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "guard.h"

static const char *const KIND_NAMES[] = {
  [GUARD_DTYPE] = "dtype", [GUARD_RANK] = "rank", [GUARD_CONTIGUOUS] = "contiguous", [GUARD_ALIGNED] = "aligned",
  [GUARD_DISJOINT] = "disjoint", [GUARD_RANGE] = "range", [GUARD_DIVISIBLE] = "divisible",
  [GUARD_EQUAL] = "equal", [GUARD_EXPR] = "expression",
};

const char *guard_kind_name(guard_kind k) {
  return (unsigned)k <= GUARD_EXPR ? KIND_NAMES[k] : "?";
}

/* ---- Sites. */

int guard_site_exists(const guard_call *c, guard_site s) {
  return s.arg >= 0 && s.arg < c->count && s.axis >= 0 && s.axis < c->args[s.arg].rank;
}

int64_t guard_site_value(const guard_call *c, guard_site s) {
  const guard_view *v = &c->args[s.arg];
  return s.field == GUARD_SHAPE ? v->shape[s.axis] : v->strides[s.axis];
}

void guard_site_format(const guard_set *s, guard_site at, char *buf, size_t size) {
  snprintf(buf, size, "%s.%s[%d]", s->names[at.arg], at.field == GUARD_SHAPE ? "shape" : "strides", at.axis);
}

int guard_expr_value(const guard_set *s, const sym_expr *e, const guard_call *c, int64_t *v) {
  sym_binding b;
  b.count = s->n_dims;
  for (int k = 0; k < s->n_dims; k++) {
    if (!guard_site_exists(c, s->dim_sites[k])) return 0;
    b.dims[k] = s->dims[k];
    b.values[k] = guard_site_value(c, s->dim_sites[k]);
  }
  return sym_expr_eval(e, &b, v, NULL) == UOPC_OK;
}

/* ---- Sets. */

int guard_set_init(guard_set *s, int n_args, const char *const *names, uopc_error *err) {
  memset(s, 0, sizeof *s);
  if (n_args < 1 || n_args > GUARD_MAX_ARGS)
    return UOPC_FAIL(err, UOPC_E_INVALID, "a guard set covers 1 to %d arguments, not %d", GUARD_MAX_ARGS, n_args);
  for (int i = 0; i < n_args; i++) {
    if (!names[i] || !names[i][0] || strlen(names[i]) >= SYM_NAME_MAX)
      return UOPC_FAIL(err, UOPC_E_INVALID, "argument %d needs a name of 1 to %d characters", i, SYM_NAME_MAX - 1);
    strcpy(s->names[i], names[i]);
  }
  s->n_args = n_args;
  return UOPC_OK;
}

void guard_set_fini(guard_set *s) {
  free(s->guards);
  s->guards = NULL;
  s->count = s->cap = 0;
}

static int valid_site(const guard_set *s, guard_site at) {
  return at.arg >= 0 && at.arg < s->n_args && at.axis >= 0 && at.axis < UOPC_MAX_RANK &&
         (at.field == GUARD_SHAPE || at.field == GUARD_STRIDE);
}

/* Appends a guard of kind on argument arg; the caller fills the rest. */
static int append(guard_set *s, guard_kind kind, int arg, guard **out, uopc_error *err) {
  if (arg < 0 || arg >= s->n_args)
    return UOPC_FAIL(err, UOPC_E_INVALID, "%s guard on argument %d of a set over %d", guard_kind_name(kind), arg,
                     s->n_args);
  if (s->count == s->cap) {
    int cap = s->cap ? 2 * s->cap : 16;
    guard *g = realloc(s->guards, (size_t)cap * sizeof *g);
    if (!g) return UOPC_FAIL(err, UOPC_E_NOMEM, "no memory for guard %d", s->count);
    s->guards = g;
    s->cap = cap;
  }
  guard *g = &s->guards[s->count++];
  memset(g, 0, sizeof *g);
  g->kind = kind;
  g->arg = g->arg2 = g->site.arg = g->site2.arg = arg;
  *out = g;
  return UOPC_OK;
}

static int append_at(guard_set *s, guard_kind kind, guard_site at, guard **out, uopc_error *err) {
  if (!valid_site(s, at))
    return UOPC_FAIL(err, UOPC_E_INVALID, "%s guard on argument %d axis %d of a set over %d", guard_kind_name(kind),
                     at.arg, at.axis, s->n_args);
  int rc = append(s, kind, at.arg, out, err);
  if (!rc) (*out)->site = (*out)->site2 = at;
  return rc;
}

int guard_set_add_dtype(guard_set *s, int arg, uopc_dtype dt, uopc_error *err) {
  guard *g;
  if ((unsigned)dt > UOPC_BOOL) return UOPC_FAIL(err, UOPC_E_INVALID, "dtype guard: %d is not a dtype", (int)dt);
  int rc = append(s, GUARD_DTYPE, arg, &g, err);
  if (rc) return rc;
  g->value = dt;
  snprintf(g->what, sizeof g->what, "%s is %s", s->names[arg], uopc_dtype_name(dt));
  return UOPC_OK;
}

int guard_set_add_rank(guard_set *s, int arg, int rank, uopc_error *err) {
  guard *g;
  if (rank < 0 || rank > UOPC_MAX_RANK)
    return UOPC_FAIL(err, UOPC_E_INVALID, "rank guard: rank %d outside [0, %d]", rank, UOPC_MAX_RANK);
  int rc = append(s, GUARD_RANK, arg, &g, err);
  if (rc) return rc;
  g->value = rank;
  snprintf(g->what, sizeof g->what, "%s has rank %d", s->names[arg], rank);
  return UOPC_OK;
}

int guard_set_add_contiguous(guard_set *s, int arg, uopc_error *err) {
  guard *g;
  int rc = append(s, GUARD_CONTIGUOUS, arg, &g, err);
  if (!rc) snprintf(g->what, sizeof g->what, "%s is contiguous", s->names[arg]);
  return rc;
}

int guard_set_add_aligned(guard_set *s, int arg, int64_t bytes, uopc_error *err) {
  guard *g;
  if (bytes < 1 || (bytes & (bytes - 1)))
    return UOPC_FAIL(err, UOPC_E_INVALID, "alignment guard: %" PRId64 " bytes is not a power of two", bytes);
  int rc = append(s, GUARD_ALIGNED, arg, &g, err);
  if (rc) return rc;
  g->value = bytes;
  snprintf(g->what, sizeof g->what, "%s is aligned to %" PRId64 " bytes", s->names[arg], bytes);
  return UOPC_OK;
}

int guard_set_add_disjoint(guard_set *s, int arg, int arg2, uopc_error *err) {
  guard *g;
  if (arg == arg2 || arg2 < 0 || arg2 >= s->n_args)
    return UOPC_FAIL(err, UOPC_E_INVALID, "disjoint guard: arguments %d and %d of a set over %d", arg, arg2,
                     s->n_args);
  int rc = append(s, GUARD_DISJOINT, arg, &g, err);
  if (rc) return rc;
  g->arg2 = arg2;
  snprintf(g->what, sizeof g->what, "%s and %s do not overlap", s->names[arg], s->names[arg2]);
  return UOPC_OK;
}

/* The dim a RANGE or DIVISIBLE guard reads, for its texts: a name ("" when
 * none) with bounds [lo, hi]. Filled here, not by sym_dim_init: a text
 * needs no validation. */
static int name_dim(sym_dim *d, const char *name, int64_t lo, int64_t hi, uopc_error *err) {
  if (name && strlen(name) >= SYM_NAME_MAX)
    return UOPC_FAIL(err, UOPC_E_INVALID, "guard: dim name '%s' is longer than %d", name, SYM_NAME_MAX - 1);
  snprintf(d->name, sizeof d->name, "%s", name ? name : "");
  d->lo = lo;
  d->hi = hi;
  d->multiple_of = 1;
  return UOPC_OK;
}

int guard_set_add_range(guard_set *s, const char *name, guard_site at, int64_t lo, int64_t hi,
                        uopc_error *err) {
  guard *g;
  char site[64];
  if (lo > hi) return UOPC_FAIL(err, UOPC_E_INVALID, "range guard: empty [%" PRId64 ", %" PRId64 "]", lo, hi);
  int rc = append_at(s, GUARD_RANGE, at, &g, err);
  if (!rc) rc = name_dim(&g->dim, name, lo, hi, err);
  if (rc) return rc;
  g->lo = lo;
  g->hi = hi;
  guard_site_format(s, at, site, sizeof site);
  if (g->dim.name[0])
    snprintf(g->what, sizeof g->what, "%s = %s in [%" PRId64 ", %" PRId64 "]", g->dim.name, site, lo, hi);
  else if (lo == hi) snprintf(g->what, sizeof g->what, "%s == %" PRId64, site, lo);
  else snprintf(g->what, sizeof g->what, "%s in [%" PRId64 ", %" PRId64 "]", site, lo, hi);
  return UOPC_OK;
}

int guard_set_add_divisible(guard_set *s, const char *name, guard_site at, int64_t multiple,
                            uopc_error *err) {
  guard *g;
  char site[64];
  if (multiple < 1) return UOPC_FAIL(err, UOPC_E_INVALID, "divisibility guard: multiple %" PRId64, multiple);
  int rc = append_at(s, GUARD_DIVISIBLE, at, &g, err);
  if (!rc) rc = name_dim(&g->dim, name, INT64_MIN, INT64_MAX, err);
  if (rc) return rc;
  g->value = multiple;
  guard_site_format(s, at, site, sizeof site);
  snprintf(g->what, sizeof g->what, "%s%s%s is a multiple of %" PRId64, g->dim.name, g->dim.name[0] ? " = " : "",
           site, multiple);
  return UOPC_OK;
}

int guard_set_add_equal(guard_set *s, guard_site at, guard_site to, uopc_error *err) {
  guard *g;
  char a[64], b[64];
  if (!valid_site(s, to))
    return UOPC_FAIL(err, UOPC_E_INVALID, "equal guard on argument %d axis %d of a set over %d", to.arg, to.axis,
                     s->n_args);
  int rc = append_at(s, GUARD_EQUAL, at, &g, err);
  if (rc) return rc;
  g->site2 = to;
  g->arg2 = to.arg;
  guard_site_format(s, at, a, sizeof a);
  guard_site_format(s, to, b, sizeof b);
  snprintf(g->what, sizeof g->what, "%s == %s", a, b);
  return UOPC_OK;
}

int guard_set_add_bounds(guard_set *s, const sym_dim *d, guard_site at, uopc_error *err) {
  if (!d || !valid_site(s, at))
    return UOPC_FAIL(err, UOPC_E_INVALID, "bounds guard: no dim, or argument %d axis %d of a set over %d", at.arg,
                     at.axis, s->n_args);
  if (s->n_dims == SYM_BINDING_MAX)
    return UOPC_FAIL(err, UOPC_E_LIMIT, "dim '%s': a guard set reads at most %d dims", d->name, SYM_BINDING_MAX);
  int rc = guard_set_add_range(s, d->name, at, d->lo, d->hi, err);
  if (!rc && d->multiple_of > 1) rc = guard_set_add_divisible(s, d->name, at, d->multiple_of, err);
  if (rc) return rc;
  s->dims[s->n_dims] = *d;
  s->dim_sites[s->n_dims++] = at;
  return UOPC_OK;
}

int guard_set_add_expr(guard_set *s, guard_site at, const sym_expr *e, uopc_error *err) {
  guard *g;
  char site[64], text[96] = "?";
  if (!e) return UOPC_FAIL(err, UOPC_E_INVALID, "expression guard: no expression");
  int rc = append_at(s, GUARD_EXPR, at, &g, err);
  if (rc) return rc;
  g->expr = e;
  guard_site_format(s, at, site, sizeof site);
  sym_expr_format(e, text, sizeof text, NULL);
  snprintf(g->what, sizeof g->what, "%s == %s", site, text);
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
