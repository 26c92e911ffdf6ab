/* vguard.c: guards as predicates over the expressions of a call (lab 23.2,
 * given code). Building a guard writes its description once; the compiled
 * set reads a call's facts word, its disjoint pairs, its addresses and a few
 * integers; the reference check (vguard_set_first_failure) says what it
 * found. Both state each condition once, in the helpers below. Chapter 23.2,
 * "One variant cache for every graph". */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "vguard.h"

_Static_assert(VGUARD_MAX_ARGS * 8 <= 64, "the facts of every argument fit one word");
_Static_assert(VGUARD_MAX_ARGS * (VGUARD_MAX_ARGS - 1) / 2 <= 32, "the pairs fit 32 bits");

/* ---- Facts: per argument 8 bits, dtype in bits 0-2, rank in 3-6, contiguous in 7. */

enum { FACT_DTYPE = 0x07, FACT_RANK = 0x78, FACT_CONTIGUOUS = 0x80 };

static uint64_t fact(int arg, uint64_t bits) { return bits << (8 * arg); }

static uint32_t pair_bit(int a, int b) {
  int lo = a < b ? a : b, hi = a < b ? b : a;
  return (uint32_t)1 << (lo * (2 * VGUARD_MAX_ARGS - lo - 1) / 2 + (hi - lo - 1));
}

/* Row-major contiguity, axes of size 1 ignored (as uopc_tensor_is_contiguous). */
static int contiguous(const vguard_view *x) {
  int64_t expected = 1;
  for (int i = x->rank - 1; i >= 0; i--) {
    if (x->shape[i] == 0) return 1;
    if (x->shape[i] == 1) continue;
    if (x->strides[i] != expected) return 0;
    expected *= x->shape[i];
  }
  return 1;
}

/* [*lo, *hi) are the bytes x reaches from element 0 at p; 0 when it reaches none. */
static int byte_range(const vguard_view *x, uintptr_t p, uintptr_t *lo, uintptr_t *hi) {
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

static uint32_t apart_pairs(const vguard_call *c) {
  int reaches[VGUARD_MAX_ARGS];
  uintptr_t lo[VGUARD_MAX_ARGS] = {0}, hi[VGUARD_MAX_ARGS] = {0};
  uint32_t apart = 0;
  for (int a = 0; a < c->count; a++) reaches[a] = byte_range(&c->args[a], c->data[a], &lo[a], &hi[a]);
  for (int a = 0; a < c->count; a++)
    for (int b = a + 1; b < c->count; b++)
      if (!reaches[a] || !reaches[b] || hi[a] <= lo[b] || hi[b] <= lo[a]) apart |= pair_bit(a, b);
  return apart;
}

int vguard_call_init(vguard_call *c, int count, const uopc_tensor *const *args, uopc_error *err) {
  if (count < 1 || count > VGUARD_MAX_ARGS)
    return UOPC_FAIL(err, UOPC_E_INVALID, "a call has 1 to %d arguments, not %d", VGUARD_MAX_ARGS, count);
  c->count = count;
  c->facts = 0;
  for (int a = 0; a < count; a++) {
    const uopc_tensor *t = args[a];
    if (!t || !t->storage) return UOPC_FAIL(err, UOPC_E_INVALID, "argument %d is NULL or released", a);
    if ((unsigned)t->dtype > UOPC_BOOL || t->rank < 0 || t->rank > UOPC_MAX_RANK)
      return UOPC_FAIL(err, UOPC_E_INVALID, "argument %d has dtype %d and rank %d", a, (int)t->dtype, t->rank);
    vguard_view *v = &c->args[a];
    v->dtype = t->dtype;
    v->rank = t->rank;
    memcpy(v->shape, t->shape, (size_t)t->rank * sizeof *v->shape);
    memcpy(v->strides, t->strides, (size_t)t->rank * sizeof *v->strides);
    c->data[a] = (uintptr_t)uopc_tensor_data(t);
    c->facts |= fact(a, ((uint64_t)t->dtype & FACT_DTYPE) | ((uint64_t)t->rank << 3 & FACT_RANK) |
                            (contiguous(v) ? FACT_CONTIGUOUS : 0));
  }
  c->apart = apart_pairs(c);
  return UOPC_OK;
}

int vguard_call_contiguous(const vguard_call *c, int arg) {
  return (c->facts & fact(arg, FACT_CONTIGUOUS)) != 0;
}

int64_t vguard_site_value(const vguard_call *c, vguard_site s) {
  const vguard_view *v = &c->args[s.arg];
  return s.field == VGUARD_SHAPE ? v->shape[s.axis] : v->strides[s.axis];
}

static int site_exists(const vguard_call *c, vguard_site s) { return s.axis < c->args[s.arg].rank; }

void vguard_site_format(const vguard_set *s, vguard_site at, char *buf, size_t size) {
  snprintf(buf, size, "%s.%s[%d]", s->names[at.arg], at.field == VGUARD_SHAPE ? "shape" : "strides", at.axis);
}

/* ---- Building. */

int vguard_set_init(vguard_set *s, int n_args, const char *const *names, uopc_error *err) {
  memset(s, 0, sizeof *s);
  if (n_args < 1 || n_args > VGUARD_MAX_ARGS)
    return UOPC_FAIL(err, UOPC_E_INVALID, "a guard set covers 1 to %d arguments, not %d", VGUARD_MAX_ARGS, n_args);
  for (int i = 0; i < n_args; i++) {
    if (!names[i] || !names[i][0] || strlen(names[i]) >= SYM_NAME_MAX)
      return UOPC_FAIL(err, UOPC_E_INVALID, "argument %d needs a name of 1 to %d characters", i, SYM_NAME_MAX - 1);
    strcpy(s->names[i], names[i]);
  }
  s->n_args = n_args;
  return UOPC_OK;
}

void vguard_set_fini(vguard_set *s) {
  free(s->guards);
  free(s->tests);
  s->guards = NULL;
  s->tests = NULL;
  s->count = s->cap = s->n_tests = 0;
}

static int valid_site(const vguard_set *s, vguard_site at) {
  return at.arg >= 0 && at.arg < s->n_args && at.axis >= 0 && at.axis < UOPC_MAX_RANK &&
         (at.field == VGUARD_SHAPE || at.field == VGUARD_STRIDE);
}

/* Appends a guard of kind on argument arg; the caller fills the rest. */
static int append(vguard_set *s, vguard_kind kind, int arg, vguard **out, uopc_error *err) {
  if (arg < 0 || arg >= s->n_args)
    return UOPC_FAIL(err, UOPC_E_INVALID, "guard on argument %d of a set over %d", arg, s->n_args);
  if (s->count == s->cap) {
    int cap = s->cap ? 2 * s->cap : 16;
    vguard *g = realloc(s->guards, (size_t)cap * sizeof *g);
    if (!g) return UOPC_FAIL(err, UOPC_E_NOMEM, "no memory for guard %d", s->count);
    s->guards = g;
    s->cap = cap;
  }
  vguard *g = &s->guards[s->count++];
  memset(g, 0, sizeof *g);
  g->kind = kind;
  g->arg = g->arg2 = g->site.arg = g->site2.arg = arg;
  s->compiled = 0;
  *out = g;
  return UOPC_OK;
}

static int append_at(vguard_set *s, vguard_kind kind, vguard_site at, vguard **out, uopc_error *err) {
  if (!valid_site(s, at))
    return UOPC_FAIL(err, UOPC_E_INVALID, "guard on argument %d axis %d of a set over %d", at.arg, at.axis,
                     s->n_args);
  int rc = append(s, kind, at.arg, out, err);
  if (!rc) (*out)->site = (*out)->site2 = at;
  return rc;
}

int vguard_add_dtype(vguard_set *s, int arg, uopc_dtype dt, uopc_error *err) {
  vguard *g;
  if ((unsigned)dt > UOPC_BOOL) return UOPC_FAIL(err, UOPC_E_INVALID, "dtype guard: %d is not a dtype", (int)dt);
  int rc = append(s, VGUARD_DTYPE, arg, &g, err);
  if (rc) return rc;
  g->value = dt;
  snprintf(g->what, sizeof g->what, "%s is %s", s->names[arg], uopc_dtype_name(dt));
  return UOPC_OK;
}

int vguard_add_rank(vguard_set *s, int arg, int rank, uopc_error *err) {
  vguard *g;
  if (rank < 0 || rank > UOPC_MAX_RANK) return UOPC_FAIL(err, UOPC_E_INVALID, "rank guard: rank %d", rank);
  int rc = append(s, VGUARD_RANK, arg, &g, err);
  if (rc) return rc;
  g->value = rank;
  snprintf(g->what, sizeof g->what, "%s has rank %d", s->names[arg], rank);
  return UOPC_OK;
}

int vguard_add_contiguous(vguard_set *s, int arg, uopc_error *err) {
  vguard *g;
  int rc = append(s, VGUARD_CONTIGUOUS, arg, &g, err);
  if (!rc) snprintf(g->what, sizeof g->what, "%s is contiguous", s->names[arg]);
  return rc;
}

int vguard_add_aligned(vguard_set *s, int arg, int64_t bytes, uopc_error *err) {
  vguard *g;
  if (bytes < 1 || (bytes & (bytes - 1)))
    return UOPC_FAIL(err, UOPC_E_INVALID, "alignment guard: %" PRId64 " bytes is not a power of two", bytes);
  int rc = append(s, VGUARD_ALIGNED, arg, &g, err);
  if (rc) return rc;
  g->value = bytes;
  snprintf(g->what, sizeof g->what, "%s is aligned to %" PRId64 " bytes", s->names[arg], bytes);
  return UOPC_OK;
}

int vguard_add_disjoint(vguard_set *s, int arg, int arg2, uopc_error *err) {
  vguard *g;
  if (arg == arg2 || arg2 < 0 || arg2 >= s->n_args)
    return UOPC_FAIL(err, UOPC_E_INVALID, "disjoint guard: arguments %d and %d of a set over %d", arg, arg2,
                     s->n_args);
  int rc = append(s, VGUARD_DISJOINT, arg, &g, err);
  if (rc) return rc;
  g->arg2 = arg2;
  snprintf(g->what, sizeof g->what, "%s and %s do not overlap", s->names[arg], s->names[arg2]);
  return UOPC_OK;
}

int vguard_add_range(vguard_set *s, const char *name, vguard_site at, int64_t lo, int64_t hi,
                     uopc_error *err) {
  vguard *g;
  char site[64];
  if (lo > hi) return UOPC_FAIL(err, UOPC_E_INVALID, "range guard: empty [%" PRId64 ", %" PRId64 "]", lo, hi);
  int rc = append_at(s, VGUARD_RANGE, at, &g, err);
  if (rc) return rc;
  g->lo = lo;
  g->hi = hi;
  vguard_site_format(s, at, site, sizeof site);
  if (lo == hi) snprintf(g->what, sizeof g->what, "%s == %" PRId64, site, lo);
  else snprintf(g->what, sizeof g->what, "%s%s%s in [%" PRId64 ", %" PRId64 "]", name ? name : "", name ? " = " : "",
                site, lo, hi);
  return UOPC_OK;
}

int vguard_add_divisible(vguard_set *s, const char *name, vguard_site at, int64_t multiple,
                         uopc_error *err) {
  vguard *g;
  char site[64];
  if (multiple < 1) return UOPC_FAIL(err, UOPC_E_INVALID, "divisibility guard: multiple %" PRId64, multiple);
  int rc = append_at(s, VGUARD_DIVISIBLE, at, &g, err);
  if (rc) return rc;
  g->value = multiple;
  vguard_site_format(s, at, site, sizeof site);
  snprintf(g->what, sizeof g->what, "%s%s%s is a multiple of %" PRId64, name ? name : "", name ? " = " : "", site,
           multiple);
  return UOPC_OK;
}

int vguard_add_equal(vguard_set *s, vguard_site at, vguard_site to, uopc_error *err) {
  vguard *g;
  char a[64], b[64];
  if (!valid_site(s, to))
    return UOPC_FAIL(err, UOPC_E_INVALID, "equality guard on argument %d axis %d of a set over %d", to.arg,
                     to.axis, s->n_args);
  int rc = append_at(s, VGUARD_EQUAL, at, &g, err);
  if (rc) return rc;
  g->site2 = to;
  g->arg2 = to.arg;
  vguard_site_format(s, at, a, sizeof a);
  vguard_site_format(s, to, b, sizeof b);
  snprintf(g->what, sizeof g->what, "%s == %s", a, b);
  return UOPC_OK;
}

int vguard_add_dim(vguard_set *s, const sym_dim *d, vguard_site at, uopc_error *err) {
  if (!valid_site(s, at)) return UOPC_FAIL(err, UOPC_E_INVALID, "dim '%s': no such site", d->name);
  if (s->n_dims == SYM_BINDING_MAX)
    return UOPC_FAIL(err, UOPC_E_LIMIT, "dim '%s': a guard set reads at most %d dims", d->name, SYM_BINDING_MAX);
  s->dims[s->n_dims] = *d;
  s->dim_sites[s->n_dims++] = at;
  return UOPC_OK;
}

int vguard_add_expr(vguard_set *s, vguard_site at, const sym_expr *e, uopc_error *err) {
  vguard *g;
  char site[64], text[96] = "?";
  if (!e) return UOPC_FAIL(err, UOPC_E_INVALID, "expression guard: no expression");
  int rc = append_at(s, VGUARD_EXPR, at, &g, err);
  if (rc) return rc;
  g->expr = e;
  vguard_site_format(s, at, site, sizeof site);
  sym_expr_format(e, text, sizeof text, NULL);
  snprintf(g->what, sizeof g->what, "%s == %s", site, text);
  return UOPC_OK;
}

void vguard_set_describe(const vguard_set *s, const char *sep, char *buf, size_t size) {
  size_t used = 0;
  if (size) buf[0] = '\0';
  for (int k = 0; k < s->count && used < size; k++) {
    int n = snprintf(buf + used, size - used, "%s%s", k ? sep : "", s->guards[k].what);
    if (n < 0) return;
    used += (size_t)n;
  }
}

/* ---- Conditions, stated once for both forms. */

static int multiple_of(int64_t v, int64_t m) {
  return (m & (m - 1)) == 0 ? (v & (m - 1)) == 0 : v % m == 0;
}

/* *v = e under the dims read at their sites; 0 when a site is missing or e
 * cannot be evaluated (then the guard fails). */
static int expr_value(const vguard_set *s, const sym_expr *e, const vguard_call *c, int64_t *v) {
  sym_binding b;
  b.count = s->n_dims;
  for (int k = 0; k < s->n_dims; k++) {
    if (!site_exists(c, s->dim_sites[k])) return 0;
    b.dims[k] = s->dims[k];
    b.values[k] = vguard_site_value(c, s->dim_sites[k]);
  }
  return sym_expr_eval(e, &b, v, NULL) == UOPC_OK;
}

/* 1 when g holds for c (every argument g names exists in c). */
static int evaluate(const vguard_set *s, const vguard *g, const vguard_call *c) {
  const vguard_view *x = &c->args[g->arg];
  int64_t v;
  switch (g->kind) {
  case VGUARD_DTYPE: return x->dtype == (uopc_dtype)g->value;
  case VGUARD_RANK: return x->rank == g->value;
  case VGUARD_CONTIGUOUS: return contiguous(x);
  case VGUARD_ALIGNED: return (c->data[g->arg] & (uintptr_t)(g->value - 1)) == 0;
  case VGUARD_DISJOINT: return (c->apart & pair_bit(g->arg, g->arg2)) != 0;
  default: break;
  }
  if (!site_exists(c, g->site) || !site_exists(c, g->site2)) return 0;
  v = vguard_site_value(c, g->site);
  switch (g->kind) {
  case VGUARD_RANGE: return v >= g->lo && v <= g->hi;
  case VGUARD_DIVISIBLE: return multiple_of(v, g->value);
  case VGUARD_EQUAL: return v == vguard_site_value(c, g->site2);
  case VGUARD_EXPR: {
    int64_t want;
    return expr_value(s, g->expr, c, &want) && v == want;
  }
  default: return 0;
  }
}

int vguard_set_exprs_hold(const vguard_set *s, const vguard_call *c) {
  for (int k = 0; k < s->count; k++)
    if (s->guards[k].kind == VGUARD_EXPR && !evaluate(s, &s->guards[k], c)) return 0;
  return 1;
}

/* The reason g failed on c, with what was found. */
static void reason(const vguard_set *s, const vguard *g, const vguard_call *c, char *buf, size_t size) {
  const vguard_view *x = &c->args[g->arg];
  const char *name = s->names[g->arg];
  char site[64], site2[64];
  vguard_site_format(s, g->site, site, sizeof site);
  vguard_site_format(s, g->site2, site2, sizeof site2);
  int sited = g->kind >= VGUARD_RANGE;
  if (sited && (!site_exists(c, g->site) || !site_exists(c, g->site2))) {
    snprintf(buf, size, "%s has no axis %d (rank %d)", site_exists(c, g->site) ? s->names[g->site2.arg] : name,
             site_exists(c, g->site) ? g->site2.axis : g->site.axis,
             site_exists(c, g->site) ? c->args[g->site2.arg].rank : x->rank);
    return;
  }
  int64_t v = sited ? vguard_site_value(c, g->site) : 0, want = 0;
  switch (g->kind) {
  case VGUARD_DTYPE:
    snprintf(buf, size, "%s is %s, not %s", name, uopc_dtype_name(x->dtype), uopc_dtype_name((uopc_dtype)g->value));
    break;
  case VGUARD_RANK: snprintf(buf, size, "%s has rank %d, not %" PRId64, name, x->rank, g->value); break;
  case VGUARD_CONTIGUOUS: {
    char shape[192] = "(", strides[192] = "(";
    for (int i = 0; i < x->rank; i++) {
      snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%s%" PRId64, i ? ", " : "", x->shape[i]);
      snprintf(strides + strlen(strides), sizeof strides - strlen(strides), "%s%" PRId64, i ? ", " : "", x->strides[i]);
    }
    strcat(shape, ")");   /* room: 8 values of at most 20 characters each */
    strcat(strides, ")");
    snprintf(buf, size, "%s is not contiguous (strides %s for shape %s)", name, strides, shape);
    break;
  }
  case VGUARD_ALIGNED:
    snprintf(buf, size, "%s is not aligned to %" PRId64 " bytes (element 0 is %" PRIuPTR " bytes past a %" PRId64
             "-byte boundary)", name, g->value, c->data[g->arg] % (uintptr_t)g->value, g->value);
    break;
  case VGUARD_DISJOINT:
    snprintf(buf, size, "%s and %s overlap (they share bytes of one buffer)", name, s->names[g->arg2]);
    break;
  case VGUARD_RANGE:
    if (g->lo == g->hi) snprintf(buf, size, "%s = %" PRId64 ", not %" PRId64, site, v, g->lo);
    else snprintf(buf, size, "%s = %" PRId64 " is outside [%" PRId64 ", %" PRId64 "]", site, v, g->lo, g->hi);
    break;
  case VGUARD_DIVISIBLE: snprintf(buf, size, "%s = %" PRId64 " is not a multiple of %" PRId64, site, v, g->value); break;
  case VGUARD_EQUAL:
    snprintf(buf, size, "%s = %" PRId64 " differs from %s = %" PRId64, site, v, site2, vguard_site_value(c, g->site2));
    break;
  case VGUARD_EXPR: {
    char text[96] = "?";
    sym_expr_format(g->expr, text, sizeof text, NULL);
    if (expr_value(s, g->expr, c, &want))
      snprintf(buf, size, "%s = %" PRId64 ", but %s = %" PRId64 " on this call", site, v, text, want);
    else snprintf(buf, size, "%s = %" PRId64 ", and %s cannot be evaluated on this call", site, v, text);
    break;
  }
  }
}

int vguard_set_first_failure(const vguard_set *s, const vguard_call *c, int *failed, vguard_reason *why,
                             uopc_error *err) {
  if (c->count < s->n_args)
    return UOPC_FAIL(err, UOPC_E_INVALID, "a call with %d arguments checked against a set over %d", c->count,
                     s->n_args);
  *failed = -1;
  for (int k = 0; k < s->count; k++) {
    if (evaluate(s, &s->guards[k], c)) continue;
    *failed = k;
    if (why) reason(s, &s->guards[k], c, why->text, sizeof why->text);
    return UOPC_OK;
  }
  return UOPC_OK;
}

/* ---- The compiled form. */

static uint32_t site_at(vguard_site at) {
  size_t field = at.field == VGUARD_SHAPE ? offsetof(vguard_view, shape) : offsetof(vguard_view, strides);
  return (uint32_t)(offsetof(vguard_call, args) + (size_t)at.arg * sizeof(vguard_view) + field +
                    (size_t)at.axis * sizeof(int64_t));
}

static void need_site(vguard_set *s, vguard_site at) {
  if (s->rank_min[at.arg] < at.axis + 1) s->rank_min[at.arg] = at.axis + 1;
}

/* The test of an integer guard (RANGE, DIVISIBLE, EQUAL). */
static vguard_test test_of(vguard_set *s, const vguard *g) {
  vguard_test t = {.value_at = site_at(g->site), .other_at = site_at(g->site), .lo = INT64_MIN, .hi = INT64_MAX};
  need_site(s, g->site);
  if (g->kind == VGUARD_RANGE) {
    t.lo = g->lo;
    t.hi = g->hi;
  } else if (g->kind == VGUARD_DIVISIBLE) {
    int pow2 = (g->value & (g->value - 1)) == 0;
    t.mask = pow2 ? (uint64_t)(g->value - 1) : 0;
    t.modulus = pow2 ? 0 : g->value;
  } else {   /* EQUAL: the difference is 0 */
    need_site(s, g->site2);
    t.other_at = site_at(g->site2);
    t.other_mask = ~(uint64_t)0;
    t.lo = t.hi = 0;
  }
  return t;
}

/* The facts of arg under field must equal want; a second guard that wants
 * another value of the same field makes the set one that never holds. */
static void want_fact(vguard_set *s, int arg, uint64_t field, uint64_t want) {
  uint64_t mask = fact(arg, field), bits = fact(arg, want & field);
  if ((s->facts_mask & mask) && (s->facts_want & mask) != bits) s->never = 1;
  s->facts_mask |= mask;
  s->facts_want |= bits;
}

/* Adds g to the summary: a fact, a pair, an address mask or a test. */
static void compile_guard(vguard_set *s, const vguard *g) {
  switch (g->kind) {
  case VGUARD_DTYPE: want_fact(s, g->arg, FACT_DTYPE, (uint64_t)g->value); break;
  case VGUARD_RANK: want_fact(s, g->arg, FACT_RANK, (uint64_t)g->value << 3); break;
  case VGUARD_CONTIGUOUS: want_fact(s, g->arg, FACT_CONTIGUOUS, FACT_CONTIGUOUS); break;
  case VGUARD_ALIGNED: s->align[g->arg] |= (uintptr_t)(g->value - 1); break;
  case VGUARD_DISJOINT: s->apart |= pair_bit(g->arg, g->arg2); break;
  case VGUARD_EXPR: s->n_exprs++; break;
  default: s->tests[s->n_tests++] = test_of(s, g); break;
  }
}

int vguard_set_compile(vguard_set *s, uopc_error *err) {
  free(s->tests);
  s->tests = malloc(((size_t)s->count + 1) * sizeof *s->tests);
  if (!s->tests) return UOPC_FAIL(err, UOPC_E_NOMEM, "no memory to compile %d guards", s->count);
  s->facts_mask = s->facts_want = 0;
  s->apart = 0;
  s->never = 0;
  memset(s->align, 0, sizeof s->align);
  memset(s->rank_min, 0, sizeof s->rank_min);
  s->n_tests = s->n_exprs = 0;
  for (int k = 0; k < s->count; k++) compile_guard(s, &s->guards[k]);
  s->compiled = 1;
  return UOPC_OK;
}
