/* dispatch.c: the dispatcher's own steps (lab 23.2).
 * The dispatcher is an instance of the variant cache (dispatch_op.c gives
 * the cache these steps as hooks): the fast kernel's contract, the
 * selection among the fast variants, what a call that none serves gets,
 * and why the last call took its path. Chapter 23.2, "The dispatcher". */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include "dispatch.h"

int dispatch_fast16_guards(const dispatcher *d, int64_t exact_n, guard_set *s, uopc_error *err) {
// STUDENT 23.2 dispatch_fast16_guards
  static const char *const names[] = {"out", "x"};
  enum { OUT = DISPATCH_ARG_OUT, X = DISPATCH_ARG_X };
  const guard_site n = {X, GUARD_SHAPE, 0}, out_n = {OUT, GUARD_SHAPE, 0};
  int rc = guard_set_init(s, DISPATCH_N_ARGS, names, err);
  /* The guards that tell variants apart come first: a rejection is cheap. */
  if (!rc) rc = exact_n ? guard_set_add_range(s, "n", n, exact_n, exact_n, err) : guard_set_add_bounds(s, &d->n, n, err);
#ifndef DISPATCH_NO_DIVISIBILITY_GUARD   /* a test-only build removes it: tests/broken/23.2.mk */
  if (!rc) rc = guard_set_add_divisible(s, "n", n, VARIANT_LANES, err);
#endif
  if (!rc) rc = guard_set_add_rank(s, X, 1, err);
  if (!rc) rc = guard_set_add_rank(s, OUT, 1, err);
  if (!rc) rc = guard_set_add_equal(s, out_n, n, err);
  if (!rc) rc = guard_set_add_dtype(s, X, UOPC_F32, err);
  if (!rc) rc = guard_set_add_dtype(s, OUT, UOPC_F32, err);
  if (!rc) rc = guard_set_add_contiguous(s, X, err);
#ifndef DISPATCH_NO_OUT_CONTIGUITY_GUARD   /* a test-only build removes it: tests/broken/23.2.mk */
  if (!rc) rc = guard_set_add_contiguous(s, OUT, err);
#endif
#ifndef DISPATCH_NO_ALIGNMENT_GUARD      /* a test-only build removes it: tests/broken/23.2.mk */
  if (!rc) rc = guard_set_add_aligned(s, X, VARIANT_ALIGN, err);
  if (!rc) rc = guard_set_add_aligned(s, OUT, VARIANT_ALIGN, err);
#endif
  if (!rc) rc = guard_set_add_disjoint(s, OUT, X, err);
  return rc;
// END STUDENT
}

int dispatch_select(dispatcher *d, const guard_call *call, int *index, uopc_error *err) {
// STUDENT 23.2 dispatch_select
  (void)err;   /* a compiled check cannot fail */
  vcache *c = &d->cache;
  int fast = vcache_n_specialised(c), k = 0;
  while (k < fast && !dispatch_variant_holds(c->variants[k], call)) k++;
  *index = k < fast ? k : -1;
  vcache_count_checks(c, k + (*index >= 0), k);   /* once per call: no store per variant */
  return UOPC_OK;
// END STUDENT
}

int dispatch_on_miss(dispatcher *d, const guard_call *call, dispatch_variant **out, uopc_error *err) {
// STUDENT 23.2 dispatch_on_miss
  vcache *c = &d->cache;
  int64_t n = call->args[DISPATCH_ARG_X].shape[0], exact = d->opts.specialize_length ? n : 0;
  guard_set wanted;
  int failed, rc = dispatch_fast16_guards(d, exact, &wanted, err);
  if (!rc) rc = guard_set_check(&wanted, call, &failed, NULL, err);
  guard_set_fini(&wanted);
  if (rc) return rc;
  if (failed < 0 && vcache_room(c) > 0) return vcache_build(c, call, 0, exact, out, err);
  if (failed < 0) {   /* it qualifies, but the last place is the generic variant's */
    vcache_limit_hit(c);
    if (d->opts.on_limit == DISPATCH_LIMIT_FAIL)
      return UOPC_FAIL(err, UOPC_E_LIMIT, "%s: a call with n = %" PRId64 " needs a new fast variant, but the "
                       "variant limit (%d, the generic one included) is reached", d->op_name, n, d->opts.max_variants);
  }
  return vcache_general(c, call, out, err);   /* the generic variant, built on first use */
// END STUDENT
}

// STUDENT 23.2 helpers
/* Appends printf-style text at *used, never past size. */
static void append(char *buf, size_t size, size_t *used, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void append(char *buf, size_t size, size_t *used, const char *fmt, ...) {
  if (*used >= size) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf + *used, size - *used, fmt, ap);
  va_end(ap);
  if (n > 0) *used += (size_t)n;
}

/* Each rejected fast variant (the first n_rejected) with the guard that
 * failed, found by checking the recorded call again. */
static int rejections(const dispatcher *d, char *buf, size_t size, size_t *used, uopc_error *err) {
  const vcache_record *r = &d->cache.last;
  for (int k = 0; k < r->n_rejected; k++) {
    const dispatch_variant *f = d->cache.variants[k];
    guard_reason why;
    int failed, rc = guard_set_check(&f->guards, &r->call, &failed, &why, err);
    if (rc) return rc;
    if (failed < 0) append(buf, size, used, "  %s rejected, yet all its guards hold on this call\n", f->entry);
    else append(buf, size, used, "  %s rejected: guard '%s' failed: %s\n", f->entry, f->guards.guards[failed].what,
                why.text);
  }
  return UOPC_OK;
}

/* Why a generic call that rejected no fast variant could have none. */
static int no_fast(const dispatcher *d, char *buf, size_t size, size_t *used, uopc_error *err) {
  const guard_call *call = &d->cache.last.call;
  guard_set wanted;
  guard_reason why;
  int failed, rc = dispatch_fast16_guards(d, d->opts.specialize_length ? call->args[DISPATCH_ARG_X].shape[0] : 0,
                                          &wanted, err);
  if (!rc) rc = guard_set_check(&wanted, call, &failed, &why, err);
  if (!rc && failed >= 0)
    append(buf, size, used, "  no fast variant can serve it: guard '%s' failed: %s\n", wanted.guards[failed].what,
           why.text);
  guard_set_fini(&wanted);
  return rc;
}
// END STUDENT

int dispatch_explain(const dispatcher *d, char *buf, size_t size, uopc_error *err) {
// STUDENT 23.2 dispatch_explain
  const vcache_record *r = &d->cache.last;
  if (r->number == 0) return UOPC_FAIL(err, UOPC_E_INVALID, "%s: no call to explain yet", d->op_name);
  const dispatch_variant *v = r->chosen >= 0 ? d->cache.variants[r->chosen] : NULL;
  size_t used = 0;
  if (size) buf[0] = '\0';
  if (r->have_call) append(buf, size, &used, "call %" PRId64 ": n = %" PRId64 ", ", r->number,
                           r->call.args[DISPATCH_ARG_X].shape[0]);
  else append(buf, size, &used, "call %" PRId64 ": arguments refused, ", r->number);
  if (v) append(buf, size, &used, "%s (%s)\n", dispatch_path_name(dispatch_variant_path(v)), v->entry);
  else append(buf, size, &used, "no kernel ran\n");
  int rc = r->have_call ? rejections(d, buf, size, &used, err) : UOPC_OK;
  if (!rc && r->limit_hit)
    append(buf, size, &used, "  a new fast variant was wanted, but the variant limit (%d) is reached: %s\n",
           d->opts.max_variants, v ? "ran the generic variant" : "refused with UOPC_E_LIMIT");
  else if (!rc && v && v->general && r->n_rejected == 0) rc = no_fast(d, buf, size, &used, err);
  if (!rc && v) append(buf, size, &used, "  all %d guards of %s held%s\n", v->guards.count, v->entry,
                       r->built ? "; it was built by this call" : "");
  return rc;
// END STUDENT
}
