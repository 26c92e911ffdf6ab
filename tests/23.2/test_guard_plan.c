/* test_guard_plan.c: lab 23.2, compiled guard sets against guard_set_check.
 * A plan must give guard_set_check's answer (the index of the first failing
 * guard, or -1) on every call: random lengths (multiples of 16 and not),
 * offsets that misalign element 0, strided and reversed views, in-place and
 * overlapping calls, other dtypes and ranks. The sets are the dispatcher's
 * own, the sets of the broken builds (tests/broken/23.2.mk removes the
 * divisibility or the alignment guards), and random sets. */
#include "dispatch.h"
#include "testutil.h"

enum { CALLS = 3000 };
static const char *const NAMES[] = {"out", "x"};

/* A random view over a fresh buffer or over `other`'s storage. */
typedef struct pool {
  uopc_tensor base[2], view[2];
} pool;

static int64_t pick(const int64_t *v, int n) { return v[rand() % n]; }

/* x: a random slice of base[1]; out: x itself, a slice of base[0], or a
 * slice of base[1] that may overlap x. Sometimes f64, a 2-D view or a scalar. */
static void make_call(pool *p, guard_call *c) {
  static const int64_t steps[] = {1, 1, 1, 2, 3, -1};
  uopc_error err = {0};
  int64_t n = rand() % 3 ? 16 * (1 + rand() % 12) : 1 + rand() % 200, step = pick(steps, 6);
  int64_t total = n * (step < 0 ? 1 : step) + 8;
  uopc_dtype dt = rand() % 10 ? UOPC_F32 : UOPC_F64;
  for (int k = 0; k < 2; k++) {
    uopc_tensor_release(&p->base[k]);
    uopc_tensor_release(&p->view[k]);
    assert_uopc_ok(uopc_tensor_empty(&p->base[k], dt, 1, &total, &err), err);
  }
  int64_t start = step < 0 ? n - 1 + rand() % 4 : rand() % 4, stop = step < 0 ? start - n * 1 : start + n * step;
  assert_uopc_ok(uopc_tensor_slice(&p->view[1], &p->base[1], 0, start, stop < 0 ? UOPC_SLICE_NONE : stop, step, &err), err);
  int how = rand() % 4, off = rand() % 4;
  const uopc_tensor *src = how == 2 ? &p->base[1] : &p->base[0];
  if (how == 3) assert_uopc_ok(uopc_tensor_slice(&p->view[0], &p->view[1], 0, 0, UOPC_SLICE_NONE, 1, &err), err);
  else assert_uopc_ok(uopc_tensor_slice(&p->view[0], src, 0, off, off + p->view[1].shape[0], 1, &err), err);
  if (rand() % 12 == 0) {   /* a 2-D or 0-D argument */
    uopc_tensor t = {0};
    int64_t shape2[2] = {2, 4};
    if (rand() % 2) assert_uopc_ok(uopc_tensor_empty(&t, UOPC_F32, 2, shape2, &err), err);
    else assert_uopc_ok(uopc_tensor_empty(&t, UOPC_F32, 0, NULL, &err), err);
    uopc_tensor_release(&p->view[rand() % 2 ? 0 : 1]);
    if (!p->view[0].storage) p->view[0] = t;
    else p->view[1] = t;
  }
  const uopc_tensor *args[] = {&p->view[0], &p->view[1]};
  assert_uopc_ok(guard_call_init(c, 2, args, &err), err);
}

static void release_pool(pool *p) {
  for (int k = 0; k < 2; k++) {
    uopc_tensor_release(&p->base[k]);
    uopc_tensor_release(&p->view[k]);
  }
}

/* The plan of s and guard_set_check agree on c (which set: what). */
static void expect_agree(const guard_set *s, const guard_plan *plan, const guard_call *c, const char *what) {
  uopc_error e1 = {0}, e2 = {0};
  int want = -7, got = -7;
  int rc1 = guard_set_check(s, c, &want, NULL, &e1), rc2 = guard_plan_check(plan, c, &got, &e2);
  if (rc1 != rc2 || (!rc1 && want != got)) {
    const uopc_tensor *o = &c->args[0], *x = &c->args[1];
    fail_msg("%s: guard_set_check gives rc %d, guard %d; the plan rc %d, guard %d (x: rank %d n %lld stride %lld "
             "at %#llx; out: rank %d n %lld stride %lld at %#llx)", what, rc1, want, rc2, got, x->rank,
             (long long)x->shape[0], (long long)x->strides[0], (unsigned long long)c->data[1], o->rank,
             (long long)o->shape[0], (long long)o->strides[0], (unsigned long long)c->data[0]);
  }
}

/* s without its guards of one kind: what a broken build's set is. */
static void without(const guard_set *s, guard_kind kind, guard_set *out) {
  *out = *s;
  out->count = 0;
  for (int k = 0; k < s->count; k++)
    if (s->guards[k].kind != kind) out->guards[out->count++] = s->guards[k];
}

/* A random guard of every kind, on random arguments, axes and values. */
static void add_random_guard(guard_set *s) {
  static const int64_t values[] = {-1, 0, 1, 2, 3, 4, 16, 32, 48, 64, 128};
  uopc_error err = {0};
  int arg = rand() % 2, axis = rand() % 3;
  sym_dim d;
  int64_t lo = pick(values, 11), m = 1 + rand() % 20, hi = lo + m + rand() % 100;   /* a multiple fits */
  switch (rand() % 9) {
  case 0: assert_uopc_ok(guard_set_add_dtype(s, arg, rand() % 4 ? UOPC_F32 : UOPC_F64, &err), err); break;
  case 1: assert_uopc_ok(guard_set_add_rank(s, arg, rand() % 3, &err), err); break;
  case 2: assert_uopc_ok(guard_set_add_contiguous(s, arg, &err), err); break;
  case 3: assert_uopc_ok(guard_set_add_aligned(s, arg, (int64_t)1 << (rand() % 8), &err), err); break;
  case 4: assert_uopc_ok(guard_set_add_divisible(s, "n", arg, axis, m, &err), err); break;
  case 5:
    assert_uopc_ok(sym_dim_init(&d, "n", lo, hi, rand() % 2 ? 1 : m, &err), err);
    assert_uopc_ok(guard_set_add_dim_bounds(s, &d, arg, axis, &err), err);
    break;
  case 6: assert_uopc_ok(guard_set_add_dims_equal(s, arg, axis, 1 - arg, rand() % 2, &err), err); break;
  case 7: assert_uopc_ok(guard_set_add_stride(s, arg, axis, pick(values, 11), &err), err); break;
  default: assert_uopc_ok(guard_set_add_disjoint(s, arg, 1 - arg, &err), err); break;
  }
}

static void compile(const guard_set *s, guard_plan *p) {
  uopc_error err = {0};
  assert_uopc_ok(guard_plan_compile(s, p, &err), err);
}

static void test_guard_plan_agrees_with_guard_set_check(void **state) {
  (void)state;
  enum { FIXED = 8, RANDOM = 40, SETS = FIXED + RANDOM };
  static guard_set sets[SETS];
  static guard_plan plans[SETS];
  static const char *const what[FIXED] = {"fast16", "fast16 n==16", "fast16 n==48", "generic",
                                          "fast16 without divisibility", "fast16 without alignment",
                                          "fast16 n==32 without divisibility", "fast16 without alignment, n==64"};
  uopc_error err = {0};
  dispatch_options o = {.max_length = 4096};
  dispatcher d;
  guard_set full;
  assert_uopc_ok(dispatch_init(&d, &o, &err), err);
  assert_uopc_ok(dispatch_fast16_guards(&d, 0, &sets[0], &err), err);
  assert_uopc_ok(dispatch_fast16_guards(&d, 16, &sets[1], &err), err);
  assert_uopc_ok(dispatch_fast16_guards(&d, 48, &sets[2], &err), err);
  assert_uopc_ok(dispatch_generic_guards(&d, &sets[3], &err), err);
  without(&sets[0], GUARD_DIVISIBLE, &sets[4]);
  without(&sets[0], GUARD_ALIGNED, &sets[5]);
  assert_uopc_ok(dispatch_fast16_guards(&d, 32, &full, &err), err);
  without(&full, GUARD_DIVISIBLE, &sets[6]);
  assert_uopc_ok(dispatch_fast16_guards(&d, 64, &full, &err), err);
  without(&full, GUARD_ALIGNED, &sets[7]);
  srand(2302);
  for (int k = FIXED; k < SETS; k++) {
    assert_uopc_ok(guard_set_init(&sets[k], 2, NAMES, &err), err);
    for (int g = 1 + rand() % GUARD_SET_MAX; g > 0; g--) add_random_guard(&sets[k]);
  }
  for (int k = 0; k < SETS; k++) compile(&sets[k], &plans[k]);
  pool p = {0};
  guard_call c;
  char name[64];
  for (int i = 0; i < CALLS; i++) {
    make_call(&p, &c);
    for (int k = 0; k < SETS; k++) {
      snprintf(name, sizeof name, "%s (call %d)", k < FIXED ? what[k] : "a random set", i);
      expect_agree(&sets[k], &plans[k], &c, name);
    }
  }
  release_pool(&p);
  dispatch_fini(&d);
}

/* The removal of a guard reaches the plan: without the divisibility guard,
 * the fast contract holds for n = 33, as the broken build's does. */
static void test_guard_plan_follows_a_removed_guard(void **state) {
  (void)state;
  uopc_error err = {0};
  dispatcher d;
  guard_set s, broken;
  guard_plan plan, broken_plan;
  assert_uopc_ok(dispatch_init(&d, NULL, &err), err);
  assert_uopc_ok(dispatch_fast16_guards(&d, 0, &s, &err), err);
  without(&s, GUARD_DIVISIBLE, &broken);
  compile(&s, &plan);
  compile(&broken, &broken_plan);
  uopc_tensor x = {0}, out = {0};
  int64_t n = 33;
  assert_uopc_ok(uopc_tensor_empty(&x, UOPC_F32, 1, &n, &err), err);
  assert_uopc_ok(uopc_tensor_empty(&out, UOPC_F32, 1, &n, &err), err);
  const uopc_tensor *args[] = {&out, &x};
  guard_call c;
  assert_uopc_ok(guard_call_init(&c, 2, args, &err), err);
  int failed = -2;
  assert_uopc_ok(guard_plan_check(&plan, &c, &failed, &err), err);
  assert_string_equal(s.guards[failed].what, "n = x.shape[0] is a multiple of 16");
  assert_uopc_ok(guard_plan_check(&broken_plan, &c, &failed, &err), err);
  assert_int_equal(failed, -1);
  uopc_tensor_release(&x);
  uopc_tensor_release(&out);
  dispatch_fini(&d);
}

/* A guard the adders could not have made has no plan; a short call is an error. */
static void test_guard_plan_refuses_what_it_cannot_compile(void **state) {
  (void)state;
  uopc_error err = {0};
  guard_set s;
  guard_plan plan;
  assert_uopc_ok(guard_set_init(&s, 2, NAMES, &err), err);
  assert_uopc_ok(guard_set_add_contiguous(&s, 1, &err), err);
  s.guards[0].kind = (guard_kind)42;
  assert_uopc_code(guard_plan_compile(&s, &plan, &err), UOPC_E_UNSUPPORTED, err);
  assert_contains(err.message, "has no compiled form");
  assert_uopc_ok(guard_set_init(&s, 2, NAMES, &err), err);
  assert_uopc_ok(guard_set_add_divisible(&s, "n", 1, 0, 16, &err), err);
  s.guards[0].value = 0;
  assert_uopc_code(guard_plan_compile(&s, &plan, &err), UOPC_E_UNSUPPORTED, err);
  s.guards[0].value = 16;
  compile(&s, &plan);
  uopc_tensor v = {0};
  int64_t n = 4;
  assert_uopc_ok(uopc_tensor_empty(&v, UOPC_F32, 1, &n, &err), err);
  const uopc_tensor *one[] = {&v};
  guard_call c;
  assert_uopc_ok(guard_call_init(&c, 1, one, &err), err);
  int failed;
  assert_uopc_code(guard_plan_check(&plan, &c, &failed, &err), UOPC_E_INVALID, err);
  assert_contains(err.message, "a call with 1 arguments checked against a set over 2");
  uopc_tensor_release(&v);
}

/* The inline record of two vectors is guard_call_init's: the same views,
 * addresses and facts on random calls (other ranks fall back to it), and the
 * same error for a released argument. */
static void test_guard_call_init_pair_matches_guard_call_init(void **state) {
  (void)state;
  uopc_error err = {0};
  pool p = {0};
  guard_call want, got;
  srand(2303);
  for (int i = 0; i < CALLS; i++) {
    make_call(&p, &want);
    memset(&got, 0x5a, sizeof got);
    assert_uopc_ok(guard_call_init_pair(&got, &p.view[0], &p.view[1], &err), err);
    if (got.count != want.count || got.facts != want.facts)
      fail_msg("call %d: count %d facts %#llx, guard_call_init gives count %d facts %#llx", i, got.count,
               (unsigned long long)got.facts, want.count, (unsigned long long)want.facts);
    for (int a = 0; a < 2; a++) {
      const uopc_tensor *g = &got.args[a], *w = &want.args[a];
      int same = got.data[a] == want.data[a] && g->storage == w->storage && g->dtype == w->dtype &&
                 g->rank == w->rank && g->offset == w->offset;
      for (int k = 0; same && k < w->rank; k++) same = g->shape[k] == w->shape[k] && g->strides[k] == w->strides[k];
      if (!same) fail_msg("call %d: argument %d's view or address differs from guard_call_init's", i, a);
    }
  }
  uopc_tensor_release(&p.view[1]);
  assert_uopc_code(guard_call_init_pair(&got, &p.view[0], &p.view[1], &err), UOPC_E_INVALID, err);
  assert_contains(err.message, "argument 1 is NULL or released");
  release_pool(&p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_guard_plan_agrees_with_guard_set_check),
    cmocka_unit_test(test_guard_plan_follows_a_removed_guard),
    cmocka_unit_test(test_guard_plan_refuses_what_it_cannot_compile),
    cmocka_unit_test(test_guard_call_init_pair_matches_guard_call_init),
  };
  return cmocka_run_group_tests(tests, testutil_fresh_cache, testutil_remove_cache);
}
