/* tj_sizes.c: which extents of a call become dims, which stay constants, and
 * how the trace's needs narrow them (lab 23.7, student file). The given
 * capture loop (tj_artifact.c, capture) calls these three functions: it asks
 * tj_extent_of for each axis of each input, traces the model on the result,
 * and when the trace needs two sizes equal (tj_sizes_unify) or compares a
 * size with a constant (tj_sizes_narrow), it changes the classes and traces
 * again. Chapter 23.7, "The contract, rule by rule". */
#include <inttypes.h>
#include <stdio.h>
#include "tj_internal.h"

int tj_extent_of(const tj_group *g, const tj_sizes *s, const guard_call *call, guard_site at, int *dim_of_root,
                 vcache_spec *spec, vcache_extent *e, uopc_error *err) {
  // STUDENT 23.7 tj_extent_of
  const tj_function *f = g->f;
  int64_t v = guard_site_value(call, at), hi = g->cache.opts.policy.max_extent;
  int x = tj_site(at), r = tj_sizes_root(s, x), pin01 = f->opts.specialize_01 == TJ_ON;
#ifdef TJ_NO_01_PIN   /* a test-only build: sizes 0 and 1 become dims like any other (tests/broken/23.7.mk) */
  pin01 = 0;
#endif
  e->dim = -1;
  e->value = v;
  if (v < 0 || v > hi)
    return UOPC_FAIL(err, UOPC_E_BOUNDS, "tensorjit '%s': argument '%s' axis %d is %" PRId64 ", outside [0, %" PRId64
                     "]", f->label, g->nodes[g->tensor_node[at.arg]].path, at.axis, v, hi);
  /* a container's tensor is specialised on its shape: the structure and its members' sizes are one key */
  int member = g->nodes[g->tensor_node[at.arg]].depth > 0;
  if (f->opts.dynamic == TJ_OFF || member || (pin01 && v <= 1) || s->pinned[r]) return UOPC_OK;
#ifdef TJ_DUCK_SIZING   /* a test-only build: two axes of one size share a dim, needed or not */
  for (int d = 0; d < spec->n_dims; d++)
    if (spec->dim_sites[d].field == GUARD_SHAPE && guard_site_value(call, spec->dim_sites[d]) == v) {
      e->dim = d;
      return UOPC_OK;
    }
#endif
  if (dim_of_root[r] >= 0) { e->dim = dim_of_root[r]; return UOPC_OK; }   /* the trace needed them equal */
  int64_t lo = pin01 ? 2 : 0;
  int rc = tj_new_dim(g, spec, at, s->lo[r] > lo ? s->lo[r] : lo, s->hi[r] < hi ? s->hi[r] : hi, &e->dim, err);
  if (!rc) dim_of_root[r] = e->dim;
  return rc;
  // END STUDENT
}

int tj_sizes_unify(tj_sizes *s, int a, int b, uopc_error *err) {
  // STUDENT 23.7 tj_sizes_unify
  if (a < 0 || a >= TJ_SITES || b >= TJ_SITES)
    return UOPC_FAIL(err, UOPC_E_INVALID, "tj_sizes_unify: site %d or %d outside [0, %d)", a, b, TJ_SITES);
  int ra = tj_sizes_root(s, a), rb = b >= 0 ? tj_sizes_root(s, b) : -1;
  if (rb < 0) {   /* the trace needs a's size itself: a constant from now on */
    s->pinned[ra] = 1;
    return UOPC_OK;
  }
  if (ra == rb) return UOPC_OK;
  s->parent[rb] = ra;   /* one class, within both classes' bounds; pinned if either was */
  s->lo[ra] = s->lo[rb] > s->lo[ra] ? s->lo[rb] : s->lo[ra];
  s->hi[ra] = s->hi[rb] < s->hi[ra] ? s->hi[rb] : s->hi[ra];
#ifndef TJ_UNIFY_DROPS_PIN   /* a test-only build: a class joined to another forgets that it was pinned */
  s->pinned[ra] |= s->pinned[rb];
#endif
  return UOPC_OK;
  // END STUDENT
}

// STUDENT 23.7 helpers
static int64_t div_floor(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }
static int64_t div_ceil(int64_t a, int64_t b) { return -div_floor(-a, b); }
// END STUDENT

int tj_sizes_narrow(tj_sizes *s, int site, int64_t c, int64_t k, tp_cmp op, int truth, int *changed,
                    uopc_error *err) {
  // STUDENT 23.7 tj_sizes_narrow
  if (site < 0 || site >= TJ_SITES || c == 0)
    return UOPC_FAIL(err, UOPC_E_INVALID, "tj_sizes_narrow: site %d outside [0, %d) or coefficient 0", site,
                     TJ_SITES);
  static const tp_cmp negation[] = {[TP_LT] = TP_GE, [TP_LE] = TP_GT, [TP_GT] = TP_LE, [TP_GE] = TP_LT,
                                    [TP_EQ] = TP_NE, [TP_NE] = TP_EQ};
  if (!truth) op = negation[op];
  if (op == TP_NE) return UOPC_OK;   /* a hole in a range is no bound */
  const int64_t big = INT64_C(1) << 40;   /* past every extent; no overflow below */
  /* the range of c*d + k that the comparison's outcome says */
  int64_t vlo = op == TP_GT ? 1 : op == TP_GE || op == TP_EQ ? 0 : -big;
  int64_t vhi = op == TP_LT ? -1 : op == TP_LE || op == TP_EQ ? 0 : big;
#ifdef TJ_STRICT_AS_LOOSE   /* a test-only build: d > k taken as d >= k */
  if (op == TP_GT) vlo = 0;
  if (op == TP_LT) vhi = 0;
#endif
  int64_t lo = c > 0 ? div_ceil(vlo - k, c) : div_ceil(vhi - k, c);
  int64_t hi = c > 0 ? div_floor(vhi - k, c) : div_floor(vlo - k, c);
  int r = tj_sizes_root(s, site);
  if (lo > s->lo[r]) s->lo[r] = lo, *changed = 1;
  if (hi < s->hi[r]) s->hi[r] = hi, *changed = 1;
  return UOPC_OK;
  // END STUDENT
}
