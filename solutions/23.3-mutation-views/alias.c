/* alias.c: can two views of one storage share an element? (lab 23.3)
 * alias_decide answers at compile time, from the views' affine forms, for
 * every binding at once, and says UNKNOWN rather than guess; the executor
 * then asks alias_guard_disjoint about the call's actual views, which it
 * answers from their numbers. Chapter 23.3, "Alias analysis over symbolic
 * views". */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "alias.h"

const char *alias_answer_name(alias_answer a) {
  switch (a) {
  case ALIAS_DISJOINT: return "disjoint";
  case ALIAS_OVERLAP: return "overlap";
  case ALIAS_UNKNOWN: return "unknown";
  }
  return "?";
}

// STUDENT 23.3 helpers
/* A layout with its expressions simplified, and what the rules read from it.
 * A progression is a view of rank <= 1 once its axes of constant extent 1
 * are dropped (they never move the index), with a constant stride: its
 * elements are offset + stride*i for i in [0, count). A view of rank 0 is a
 * progression of one element and stride 0. */
typedef struct norm {
  mv_layout l;
  int empty;                 /* an extent's interval is [0, 0] */
  int nonempty;              /* every extent's interval has lo >= 1 */
  int progression;
  int64_t stride;
  sym_interval count;
} norm;

static int check_layout(const mv_layout *l, char which, uopc_error *err) {
  if (!l) return UOPC_FAIL(err, UOPC_E_INVALID, "layout %c is NULL", which);
  if (l->rank < 0 || l->rank > UOPC_MAX_RANK)
    return UOPC_FAIL(err, UOPC_E_INVALID, "layout %c has rank %d outside [0, %d]", which, l->rank, UOPC_MAX_RANK);
  if (!l->offset) return UOPC_FAIL(err, UOPC_E_INVALID, "layout %c has no offset", which);
  for (int k = 0; k < l->rank; k++)
    if (!l->shape[k] || !l->strides[k])
      return UOPC_FAIL(err, UOPC_E_INVALID, "layout %c has no extent or stride on axis %d", which, k);
  return UOPC_OK;
}

/* The arena's recorded error, for a constructor that returned NULL. */
static int arena_failed(sym_arena *arena, uopc_error *err) {
  const uopc_error *e = sym_arena_error(arena);
  if (err && e->code) *err = *e;
  return e->code ? e->code : UOPC_FAIL(err, UOPC_E_NOMEM, "expression arena failed");
}

/* *out = e simplified, where e was just built in arena (NULL: that failed). */
static int simplify_built(sym_arena *arena, const sym_expr *e, const sym_expr **out, uopc_error *err) {
  return e ? sym_expr_simplify(arena, e, out, err) : arena_failed(arena, err);
}

/* Axis k of n->l, simplified: its extent's interval and what it does to the
 * progression (an axis of constant extent 1 is dropped). */
static int add_axis(norm *n, const mv_layout *in, int k, sym_arena *arena, int *kept, uopc_error *err) {
  sym_interval iv;
  int rc = sym_expr_simplify(arena, in->shape[k], &n->l.shape[k], err);
  if (!rc) rc = sym_expr_simplify(arena, in->strides[k], &n->l.strides[k], err);
  if (!rc) rc = sym_expr_interval(n->l.shape[k], &iv, err);
  if (rc) return rc;
  n->empty |= iv.lo == 0 && iv.hi == 0;
  n->nonempty &= iv.lo >= 1;
  const sym_expr *e = n->l.shape[k], *s = n->l.strides[k];
  if (e->kind == SYM_CONST && e->value == 1) return UOPC_OK;
  if (++*kept > 1 || s->kind != SYM_CONST) n->progression = 0;
  n->stride = s->kind == SYM_CONST ? s->value : 0;
  n->count = iv;
  return UOPC_OK;
}

static int normalise(const mv_layout *in, sym_arena *arena, norm *n, uopc_error *err) {
  memset(n, 0, sizeof *n);
  n->l.rank = in->rank;
  n->nonempty = n->progression = 1;
  n->count = (sym_interval){1, 1};
  int kept = 0, rc = sym_expr_simplify(arena, in->offset, &n->l.offset, err);
  for (int k = 0; k < in->rank && !rc; k++) rc = add_axis(n, in, k, arena, &kept, err);
  return rc;
}

/* One end of the hull: offset + sum_k min(0, reach_k) (lo) or max (hi),
 * where reach_k = strides[k] * (max(shape[k], 1) - 1). */
static int hull_end(const mv_layout *l, int hi, sym_arena *ar, const sym_expr **out, uopc_error *err) {
  const sym_expr *zero = sym_expr_const(ar, 0), *one = sym_expr_const(ar, 1), *acc = l->offset;
  for (int k = 0; k < l->rank; k++) {
    const sym_expr *reach = sym_expr_mul(ar, l->strides[k], sym_expr_sub(ar, sym_expr_max(ar, l->shape[k], one), one));
    acc = sym_expr_add(ar, acc, hi ? sym_expr_max(ar, zero, reach) : sym_expr_min(ar, zero, reach));
  }
  return simplify_built(ar, acc, out, err);
}

/* *proved = 1 when x < y for every binding: the difference's interval. */
static int proved_below(const sym_expr *x, const sym_expr *y, sym_arena *ar, int *proved, uopc_error *err) {
  const sym_expr *d;
  sym_interval iv;
  int rc = simplify_built(ar, sym_expr_sub(ar, y, x), &d, err);
  if (!rc) rc = sym_expr_interval(d, &iv, err);
  if (!rc) *proved = iv.lo >= 1;
  return rc;
}

static const char *text(const sym_expr *e, char *buf, size_t size) {
  if (sym_expr_format(e, buf, size, NULL) != UOPC_OK) snprintf(buf, size, "...");
  return buf;
}

static void decided(alias_result *out, alias_answer answer, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void decided(alias_result *out, alias_answer answer, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  out->answer = answer;
  vsnprintf(out->reason, sizeof out->reason, fmt, ap);
  va_end(ap);
}

/* Rule 2: DISJOINT when one hull ends before the other starts. */
static int rule_ranges(const norm *a, const norm *b, sym_arena *ar, alias_result *out, uopc_error *err) {
  const sym_expr *lo_a, *hi_a, *lo_b, *hi_b;
  int below = 0, above = 0;
  int rc = hull_end(&a->l, 0, ar, &lo_a, err);
  if (!rc) rc = hull_end(&a->l, 1, ar, &hi_a, err);
  if (!rc) rc = hull_end(&b->l, 0, ar, &lo_b, err);
  if (!rc) rc = hull_end(&b->l, 1, ar, &hi_b, err);
  if (!rc) rc = proved_below(hi_a, lo_b, ar, &below, err);
  if (!rc && !below) rc = proved_below(hi_b, lo_a, ar, &above, err);
  if (rc || !(below || above)) return rc;
  char t[4][40];
  decided(out, ALIAS_DISJOINT, "ranges (a in [%s, %s], b in [%s, %s])", text(lo_a, t[0], 40), text(hi_a, t[1], 40),
          text(lo_b, t[2], 40), text(hi_b, t[3], 40));
  return UOPC_OK;
}

/* 1 when the element at distance c from p's first is one of p's, for every
 * binding: c = stride * i with 0 <= i <= count - 1 (128-bit: c may be
 * INT64_MIN and the stride -1). *i is that element's index. */
static int holds_element(const norm *p, __int128 c, __int128 *i) {
  if (p->stride == 0) return *i = 0, c == 0;
  if (c % p->stride != 0) return 0;
  *i = c / p->stride;
  return *i >= 0 && *i < p->count.lo;
}

static uint64_t magnitude(int64_t v) { return v < 0 ? -(uint64_t)v : (uint64_t)v; }

static uint64_t gcd_u64(uint64_t x, uint64_t y) {
  while (y) { uint64_t r = x % y; x = y; y = r; }
  return x;
}

/* Rules 3 and 4, for two progressions whose offsets differ by a constant. */
static void rule_progressions(const norm *a, const norm *b, int64_t c, alias_result *out) {
  uint64_t g = gcd_u64(magnitude(a->stride), magnitude(b->stride));
  __int128 i;
#ifdef ALIAS_NO_RESIDUE_CHECK   /* a test-only build: any two different offsets are "disjoint" (tests/broken/23.3.mk) */
  int apart = c != 0;
#else
  int apart = g >= 1 && (__int128)c % g != 0;
#endif
  if (apart) {
    decided(out, ALIAS_DISJOINT, "residues mod %" PRIu64 " (the offsets differ by %" PRId64 ")", g, c);
  } else if (a->nonempty && b->nonempty && holds_element(a, c, &i)) {
    decided(out, ALIAS_OVERLAP, "shared element (b's first is a's element %" PRId64 ")", (int64_t)i);
  } else if (a->nonempty && b->nonempty && holds_element(b, -(__int128)c, &i)) {
    decided(out, ALIAS_OVERLAP, "shared element (a's first is b's element %" PRId64 ")", (int64_t)i);
  }
}

static int same_layout(const mv_layout *a, const mv_layout *b) {
  if (a->rank != b->rank || sym_expr_compare(a->offset, b->offset) != 0) return 0;
  for (int k = 0; k < a->rank; k++)
    if (sym_expr_compare(a->shape[k], b->shape[k]) != 0 || sym_expr_compare(a->strides[k], b->strides[k]) != 0)
      return 0;
  return 1;
}

/* Rules 3 to 5, once the hulls could not separate the views. */
static int rule_elements(const norm *a, const norm *b, sym_arena *ar, alias_result *out, uopc_error *err) {
  if (a->progression && b->progression) {
    const sym_expr *c;
    int rc = simplify_built(ar, sym_expr_sub(ar, b->l.offset, a->l.offset), &c, err);
    if (rc) return rc;
    if (c->kind == SYM_CONST) rule_progressions(a, b, c->value, out);
    if (out->answer != ALIAS_UNKNOWN) return UOPC_OK;
  }
  if (a->nonempty && b->nonempty && same_layout(&a->l, &b->l)) decided(out, ALIAS_OVERLAP, "same view");
  else decided(out, ALIAS_UNKNOWN, "depends on the binding");
  return UOPC_OK;
}

/* ---- The run-time guard. */

/* A view of rank <= 1 (after dropping axes of extent 1) as the progression
 * first, first + step, ..., last with step >= 0: a negative stride walks it
 * from the other end, and a single element has step 0. */
typedef struct progression { __int128 first, last, step; } progression;

static int check_view(const uopc_tensor *x, char which, uopc_error *err) {
  if (!x) return UOPC_FAIL(err, UOPC_E_INVALID, "view %c is NULL", which);
  if (!x->storage) return UOPC_FAIL(err, UOPC_E_INVALID, "view %c is released", which);
  if (x->rank < 0 || x->rank > UOPC_MAX_RANK)
    return UOPC_FAIL(err, UOPC_E_INVALID, "view %c has rank %d outside [0, %d]", which, x->rank, UOPC_MAX_RANK);
  for (int k = 0; k < x->rank; k++)
    if (x->shape[k] < 0)
      return UOPC_FAIL(err, UOPC_E_INVALID, "view %c has extent %" PRId64 " on axis %d", which, x->shape[k], k);
  return UOPC_OK;
}

static int is_empty(const uopc_tensor *x) {
  for (int k = 0; k < x->rank; k++)
    if (x->shape[k] == 0) return 1;
  return 0;
}

/* 1 when x is a progression *p. An offset and a stride times an extent
 * are below 2^63 and 2^126 in magnitude: they fit in 128 bits. */
static int as_progression(const uopc_tensor *x, progression *p) {
  int axis = -1;
  for (int k = 0; k < x->rank; k++) {
    if (x->shape[k] == 1) continue;
    if (axis >= 0) return 0;
    axis = k;
  }
  p->first = p->last = x->offset;
  p->step = 0;
  if (axis < 0) return 1;
  __int128 reach = (__int128)x->strides[axis] * (x->shape[axis] - 1);
  if (reach < 0) p->first += reach;
  else p->last += reach;
  p->step = magnitude(x->strides[axis]);
  return 1;
}

static __int128 floor_mod(__int128 x, __int128 m) {
  __int128 r = x % m;
  return r < 0 ? r + m : r;
}

/* gcd(x, y) for x, y >= 1, and *u with u*x = gcd (mod y): extended Euclid.
 * The coefficients stay below y in magnitude. */
static __int128 gcd_ext(__int128 x, __int128 y, __int128 *u) {
  __int128 u0 = 1, u1 = 0;
  while (y) {
    __int128 q = x / y, r = x % y, t = u0 - q * u1;
    x = y, y = r, u0 = u1, u1 = t;
  }
  *u = u0;
  return x;
}

static int on_progression(const progression *p, __int128 x) {
  if (x < p->first || x > p->last) return 0;
  return p->step == 0 ? x == p->first : (x - p->first) % p->step == 0;
}

/* 1 when the progressions share an element. The common elements of the two
 * infinite progressions are x0 + L*k (L = lcm of the steps), if any; the
 * first one at or past both starts must not pass either end. Once the
 * ranges overlap, each difference below lies within one view's span, so
 * nothing leaves 128 bits (the elements themselves may reach 2^126). */
static int progressions_meet(const progression *a, const progression *b) {
  __int128 lo = a->first > b->first ? a->first : b->first, hi = a->last < b->last ? a->last : b->last;
  if (lo > hi) return 0;
  if (a->step == 0) return on_progression(b, a->first);
  if (b->step == 0) return on_progression(a, b->first);
  __int128 u, g = gcd_ext(a->step, b->step, &u), d = b->first - a->first;
  if (d % g != 0) return 0;
  __int128 q = b->step / g, lcm = a->step / g * b->step;                 /* < 2^126 */
  __int128 t = floor_mod(floor_mod(d / g, q) * floor_mod(u, q), q);    /* a->step*t = d (mod b->step) */
  __int128 x0_from_lo = a->step * t - (lo - a->first);                 /* x0 = a->first + a->step*t */
  return floor_mod(x0_from_lo, lcm) <= hi - lo;
}
// END STUDENT

int alias_decide(const mv_layout *a, const mv_layout *b, sym_arena *arena, alias_result *out,
                 uopc_error *err) {
// STUDENT 23.3 alias_decide
  if (!out || !arena) return UOPC_FAIL(err, UOPC_E_INVALID, "%s is NULL", out ? "arena" : "out");
  decided(out, ALIAS_UNKNOWN, "not decided");
  int rc = check_layout(a, 'a', err);
  if (!rc) rc = check_layout(b, 'b', err);
  if (rc) return rc;
  norm na, nb;
  rc = normalise(a, arena, &na, err);
  if (!rc) rc = normalise(b, arena, &nb, err);
  if (rc) return rc;
  if (na.empty || nb.empty) {
    decided(out, ALIAS_DISJOINT, "empty (%s has an extent that is always 0)", na.empty ? "a" : "b");
    return UOPC_OK;
  }
  rc = rule_ranges(&na, &nb, arena, out, err);
  if (rc || out->answer != ALIAS_UNKNOWN) return rc;
  return rule_elements(&na, &nb, arena, out, err);
// END STUDENT
}

int alias_guard_disjoint(const uopc_tensor *a, const uopc_tensor *b, int *disjoint, uopc_error *err) {
// STUDENT 23.3 alias_guard_disjoint
  int rc = check_view(a, 'a', err);
  if (!rc) rc = check_view(b, 'b', err);
  if (rc) return rc;
  if (!disjoint) return UOPC_FAIL(err, UOPC_E_INVALID, "disjoint is NULL");
  if (a->storage != b->storage) return UOPC_FAIL(err, UOPC_E_INVALID, "a and b are views of different storages");
  if (a->dtype != b->dtype)
    return UOPC_FAIL(err, UOPC_E_INVALID, "a is %s but b is %s: one storage has one dtype",
                     uopc_dtype_name(a->dtype), uopc_dtype_name(b->dtype));
  progression pa, pb;
  if (is_empty(a) || is_empty(b)) *disjoint = 1;
#ifdef ALIAS_GUARD_RANGES_ONLY   /* a test-only build: byte ranges for 1-D too (tests/broken/23.3.mk) */
  else if (0 && as_progression(a, &pa) && as_progression(b, &pb)) *disjoint = !progressions_meet(&pa, &pb);
#else
  else if (as_progression(a, &pa) && as_progression(b, &pb)) *disjoint = !progressions_meet(&pa, &pb);
#endif
  else *disjoint = !uopc_tensor_may_overlap(a, b);   /* conservative: the byte ranges */
  return UOPC_OK;
// END STUDENT
}
