/* tj_fixture.h: what lab 23.7's suites share (tests/23.7 and tests/hidden/23.7).
 * A student function is called directly on the state tensorjit's given code
 * would hand it: a real group (tj_group_new, the given code's), the call's
 * guard record (23.2's guard_call_init), fresh size classes (as capture
 * starts them). Tensors hold small integers, so every value the suites
 * compare is exact in f32. */
#ifndef TJ_FIXTURE_H
#define TJ_FIXTURE_H

#include "tj_internal.h"
#include "testutil.h"

#define TJF_MAX_EXTENT INT64_C(16777216)   /* the variant cache's default max_extent (2^24) */

/* A model never traced here: the fixture's groups only hand out extents. */
static int tjf_unused_model(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {
  (void)in, (void)out, (void)user;
  return tp_status(c);
}

/* One call's state before its capture: f compiled with o, g the group of
 * args (top-level and container tensors alike), call its guard record, s
 * every site its own class, dim_of_root all -1, spec empty. */
typedef struct tjf {
  tj_function *f;
  tj_group *g;
  guard_call call;
  tj_sizes s;
  int dim_of_root[TJ_SITES];
  vcache_spec spec;
  uopc_error err;
} tjf;

static inline void tjf_sizes_fresh(tj_sizes *s) {
  for (int x = 0; x < TJ_SITES; x++) s->parent[x] = x, s->pinned[x] = 0, s->lo[x] = INT64_MIN, s->hi[x] = INT64_MAX;
}

static inline void tjf_init(tjf *x, const tj_options *o, const tj_arg *args, int n) {
  tj_flat flat;
  const uopc_tensor *tensors[TJ_MAX_TENSORS];
  memset(x, 0, sizeof *x);
  assert_uopc_ok(tj_compile(&x->f, tjf_unused_model, NULL, o, &x->err), x->err);
  assert_uopc_ok(tj_check_args(x->f, args, n, &flat, &x->err), x->err);
  assert_uopc_ok(tj_fix_signature(x->f, args, n, &x->err), x->err);
  assert_uopc_ok(tj_group_new(x->f, &flat, &x->g, &x->err), x->err);
  for (int k = 0; k < flat.n_tensors; k++) tensors[k] = flat.at[flat.tensor_node[k]]->tensor;
  assert_uopc_ok(guard_call_init(&x->call, flat.n_tensors, tensors, &x->err), x->err);
  tjf_sizes_fresh(&x->s);
  memset(x->dim_of_root, -1, sizeof x->dim_of_root);
  x->spec.n_inputs = x->g->n_tensors;
}

static inline void tjf_fini(tjf *x) { tj_free(x->f); }

/* A status: rc is want, else the failure names both codes and rc's message
 * (a stub's "not implemented yet" among them). */
#define tjf_expect_code(rc, want, err, ...)                                                  \
  do {                                                                                        \
    int rc_ = (rc), want_ = (want);                                                           \
    char what_[512];                                                                          \
    if (snprintf(what_, sizeof what_, __VA_ARGS__) < 0) what_[0] = 0;                         \
    if (rc_ != want_)                                                                         \
      fail_msg("%s: the status: got %s (%s), expected %s", what_, uopc_error_name(rc_),        \
               rc_ ? (err).message : "no error", uopc_error_name(want_));                     \
  } while (0)

static inline guard_site tjf_at(int arg, int axis) { return (guard_site){arg, GUARD_SHAPE, axis}; }

/* tj_extent_of for tensor arg's axis; fails the test on an error. */
static inline vcache_extent tjf_extent(tjf *x, int arg, int axis) {
  vcache_extent e = {-2, -2};
  int rc = tj_extent_of(x->g, &x->s, &x->call, tjf_at(arg, axis), x->dim_of_root, &x->spec, &e, &x->err);
  if (rc) fail_msg("tj_extent_of(argument %d, axis %d): expected UOPC_OK, got %s: %s", arg, axis, uopc_error_name(rc),
                   x->err.message);
  return e;
}

/* e is the constant value (dim -1). */
static inline void tjf_expect_constant(vcache_extent e, int64_t value, const char *what) {
  expect_int(e.dim, -1, "%s: the extent's dim (-1: a constant)", what);
  expect_int(e.value, value, "%s: the constant's value", what);
}

/* e is dim d of x's spec, named name, with bounds [lo, hi]. */
static inline void tjf_expect_dim(const tjf *x, vcache_extent e, int d, const char *name, int64_t lo, int64_t hi,
                                  const char *what) {
  expect_int(e.dim, d, "%s: the extent's dim (-1 would be a constant)", what);
  const sym_dim *dim = &x->spec.dims[d];
  if (strcmp(dim->name, name)) fail_msg("%s: dim %d is named '%s', expected '%s'", what, d, dim->name, name);
  expect_int(dim->lo, lo, "%s: dim '%s''s lower bound", what, name);
  expect_int(dim->hi, hi, "%s: dim '%s''s upper bound", what, name);
}

/* A new f32 tensor of shape, element i = i % 7 - 3. */
static inline uopc_tensor tjf_tensor(int rank, const int64_t *shape) {
  uopc_tensor t;
  uopc_error err = {0};
  assert_uopc_ok(uopc_tensor_empty(&t, UOPC_F32, rank, shape, &err), err);
  for (int64_t i = 0; i < uopc_tensor_numel(&t); i++) uopc_tensor_set(&t, i, (double)(i % 7) - 3);
  return t;
}

static inline uopc_tensor tjf_vec(int64_t n) { return tjf_tensor(1, &n); }
static inline uopc_tensor tjf_mat(int64_t a, int64_t b) { return tjf_tensor(2, (int64_t[]){a, b}); }

static inline tj_function *tjf_compile(tj_model m, const tj_options *o) {
  tj_function *f = NULL;
  uopc_error err = {0};
  assert_uopc_ok(tj_compile(&f, m, NULL, o, &err), err);
  return f;
}

/* f's artifacts built and hits so far are exactly built and hits. */
static inline void tjf_expect_counts(const tj_function *f, int64_t built, int64_t hits, const char *what) {
  tj_counts c = tj_stats(f);
  expect_int(c.artifacts_built, built, "%s: artifacts built", what);
  expect_int(c.artifact_hits, hits, "%s: artifact hits", what);
}

/* out (element i) against want[i], n of them, exactly: small integers. */
static inline void tjf_expect_values(const uopc_tensor *out, const float *want, int64_t n, const char *what) {
  expect_int(uopc_tensor_numel(out), n, "%s: the output's elements", what);
  for (int64_t i = 0; i < n; i++)
    expect_close(uopc_tensor_get(out, i), want[i], 0, "%s: element %lld", what, (long long)i);
}

static inline void tjf_explain(const tj_function *f, const tj_arg *args, char *buf, size_t size) {
  uopc_error err = {0};
  assert_uopc_ok(tj_explain(f, args, buf, size, &err), err);
}

#endif
