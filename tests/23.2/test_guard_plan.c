/* test_guard_plan.c: lab 23.2, compiled guard sets against guard_set_check.
 * A plan must say "all hold" exactly when guard_set_check finds no failing
 * guard, on every call: random lengths (multiples of 16 and not), offsets
 * that misalign element 0, strided and reversed views, in-place and
 * overlapping calls, other dtypes and ranks. The sets are the dispatcher's
 * own, those of the broken builds (tests/broken/23.2.mk removes the
 * divisibility or the alignment guards), and random sets of every kind over
 * three arguments of rank up to 2, contradictory ones included. */
#include "dispatch.h"
#include "testutil.h"

enum { CALLS = 3000 };

static int64_t pick(const int64_t *v, int n) { return v[rand() % n]; }

/* s without its guards of one kind: what a broken build's set is. */
static void without(const guard_set *s, guard_kind kind, guard_set *out) {
  *out = *s;   /* names and dims; the guards are copied below */
  out->cap = s->count + 1;
  out->guards = malloc((size_t)out->cap * sizeof *out->guards);
  assert_non_null(out->guards);
  out->count = 0;
  for (int k = 0; k < s->count; k++)
    if (s->guards[k].kind != kind) out->guards[out->count++] = s->guards[k];
}

/* The plan of s and guard_set_check agree on c (which set: what). */
static void expect_agree(const guard_set *s, const guard_plan *plan, const guard_call *c, const char *what) {
  uopc_error err = {0};
  int failed = -7;
  assert_uopc_ok(guard_set_check(s, c, &failed, NULL, &err), err);
  if (guard_plan_holds(plan, c) != (failed < 0)) {
    const guard_view *o = &c->args[0], *x = &c->args[1];
    fail_msg("%s: guard_set_check's first failure is %d ('%s'), the plan says %s (x: rank %d n %lld stride %lld at "
             "%#llx; out: rank %d n %lld stride %lld at %#llx)", what, failed, failed >= 0 ? s->guards[failed].what : "",
             guard_plan_holds(plan, c) ? "all hold" : "one fails", x->rank, (long long)x->shape[0],
             (long long)x->strides[0], (unsigned long long)c->data[1], o->rank, (long long)o->shape[0],
             (long long)o->strides[0], (unsigned long long)c->data[0]);
  }
}

/* ---- The dispatcher's calls: (out, x) vectors, sometimes 2-D or 0-D. */

typedef struct pool {
  uopc_tensor base[2], view[2];
} pool;

/* x: a random slice of base[1]; out: x itself, a slice of base[0], or a
 * slice of base[1] that may overlap x. Sometimes f64, a 2-D view or a scalar. */
static void make_pair(pool *p) {
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
  int64_t start = step < 0 ? n - 1 + rand() % 4 : rand() % 4, stop = step < 0 ? start - n : start + n * step;
  assert_uopc_ok(uopc_tensor_slice(&p->view[1], &p->base[1], 0, start, stop < 0 ? UOPC_SLICE_NONE : stop, step, &err),
                 err);
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
}

static void release_pool(pool *p) {
  for (int k = 0; k < 2; k++) {
    uopc_tensor_release(&p->base[k]);
    uopc_tensor_release(&p->view[k]);
  }
}

static void test_guard_plan_agrees_on_the_dispatchers_sets(void **state) {
  (void)state;
  enum { SETS = 8 };
  static const char *const what[SETS] = {"fast16", "fast16 n==16", "fast16 n==48", "generic",
                                         "fast16 without divisibility", "fast16 without alignment",
                                         "fast16 n==32 without divisibility", "fast16 without alignment, n==64"};
  guard_set sets[SETS], full;
  guard_plan plans[SETS];
  uopc_error err = {0};
  dispatch_options o = {.max_length = 4096};
  dispatcher d;
  assert_uopc_ok(dispatch_init(&d, &o, &err), err);
  assert_uopc_ok(dispatch_fast16_guards(&d, 0, &sets[0], &err), err);
  assert_uopc_ok(dispatch_fast16_guards(&d, 16, &sets[1], &err), err);
  assert_uopc_ok(dispatch_fast16_guards(&d, 48, &sets[2], &err), err);
  assert_uopc_ok(dispatch_generic_guards(&d, &sets[3], &err), err);
  without(&sets[0], GUARD_DIVISIBLE, &sets[4]);
  without(&sets[0], GUARD_ALIGNED, &sets[5]);
  assert_uopc_ok(dispatch_fast16_guards(&d, 32, &full, &err), err);
  without(&full, GUARD_DIVISIBLE, &sets[6]);
  guard_set_fini(&full);
  assert_uopc_ok(dispatch_fast16_guards(&d, 64, &full, &err), err);
  without(&full, GUARD_ALIGNED, &sets[7]);
  guard_set_fini(&full);
  for (int k = 0; k < SETS; k++) assert_uopc_ok(guard_plan_compile(&plans[k], &sets[k], &err), err);
  pool p = {0};
  guard_call c;
  char name[96];
  srand(2302);
  for (int i = 0; i < CALLS; i++) {
    make_pair(&p);
    const uopc_tensor *args[] = {&p.view[0], &p.view[1]};
    assert_uopc_ok(guard_call_init(&c, 2, args, &err), err);
    for (int k = 0; k < SETS; k++) {
      snprintf(name, sizeof name, "%s (call %d)", what[k], i);
      expect_agree(&sets[k], &plans[k], &c, name);
    }
  }
  release_pool(&p);
  for (int k = 0; k < SETS; k++) guard_plan_fini(&plans[k]), guard_set_fini(&sets[k]);
  dispatch_fini(&d);
}

/* ---- Random sets over three arguments of rank up to 2. */

static void random_guard(guard_set *s, sym_arena *a, const sym_dim *dims) {
  uopc_error err = {0};
  int arg = rand() % 3, other = (arg + 1 + rand() % 2) % 3, axis = rand() % 2;
  guard_site at = {arg, rand() % 4 ? GUARD_SHAPE : GUARD_STRIDE, axis}, to = {other, GUARD_SHAPE, rand() % 2};
  int64_t lo = rand() % 8;
  switch (rand() % 9) {
  case 0: guard_set_add_dtype(s, arg, rand() % 2 ? UOPC_F32 : UOPC_F64, &err); break;
  case 1: guard_set_add_rank(s, arg, 1 + rand() % 2, &err); break;
  case 2: guard_set_add_contiguous(s, arg, &err); break;
  case 3: guard_set_add_aligned(s, arg, 1 << (rand() % 7), &err); break;
  case 4: guard_set_add_disjoint(s, arg, other, &err); break;
  case 5: guard_set_add_range(s, rand() % 2 ? "n" : NULL, at, lo, rand() % 3 ? lo + rand() % 40 : lo, &err); break;
  case 6: guard_set_add_divisible(s, "n", at, 1 + rand() % 8, &err); break;
  case 7: guard_set_add_equal(s, at, to, &err); break;
  default: guard_set_add_expr(s, at, sym_expr_add(a, sym_expr_dim(a, &dims[0]), sym_expr_const(a, rand() % 3 - 1)), &err);
  }
}

static void random_tensor(uopc_tensor *t, const uopc_tensor *base) {
  uopc_error err = {0};
  int64_t rows = 1 + rand() % 4, cols = rand() % 9;
  uopc_tensor m = {0};
  if (base && rand() % 4 == 0) { uopc_tensor_retain(t, base); return; }   /* shares bytes with another argument */
  assert_uopc_ok(uopc_tensor_empty(&m, rand() % 5 ? UOPC_F32 : UOPC_F64, 2, (int64_t[]){rows, cols + 1}, &err), err);
  int shape = rand() % 3;
  if (shape == 0) assert_uopc_ok(uopc_tensor_select(t, &m, 0, 0, &err), err);
  else if (shape == 1) assert_uopc_ok(uopc_tensor_slice(t, &m, 1, rand() % 2, UOPC_SLICE_NONE, 1 + rand() % 2, &err), err);
  else assert_uopc_ok(uopc_tensor_transpose(t, &m, 0, 1, &err), err);
  uopc_tensor_release(&m);
}

static void test_guard_plan_agrees_on_random_sets(void **state) {
  (void)state;
  static const char *const names[] = {"out0", "x", "y"};
  uopc_error err = {0};
  sym_arena *a;
  sym_dim dims[1];
  assert_uopc_ok(sym_arena_new(&a, &err), err);
  assert_uopc_ok(sym_dim_init(&dims[0], "n", 0, 100, 1, &err), err);
  srand(2303);
  for (int round = 0; round < 300; round++) {
    guard_set s;
    guard_plan plan;
    char name[64];
    assert_uopc_ok(guard_set_init(&s, 3, names, &err), err);
    assert_uopc_ok(guard_set_add_bounds(&s, &dims[0], (guard_site){1, GUARD_SHAPE, 0}, &err), err);
    for (int g = 1 + rand() % 8; g > 0; g--) random_guard(&s, a, dims);
    assert_uopc_ok(guard_plan_compile(&plan, &s, &err), err);
    for (int k = 0; k < 10; k++) {
      uopc_tensor t[3] = {{0}};
      guard_call call;
      for (int i = 0; i < 3; i++) random_tensor(&t[i], i ? &t[i - 1] : NULL);
      const uopc_tensor *args[] = {&t[0], &t[1], &t[2]};
      assert_uopc_ok(guard_call_init(&call, 3, args, &err), err);
      snprintf(name, sizeof name, "random set %d, call %d", round, k);
      expect_agree(&s, &plan, &call, name);
      for (int i = 0; i < 3; i++) uopc_tensor_release(&t[i]);
    }
    guard_plan_fini(&plan);
    guard_set_fini(&s);
  }
  sym_arena_free(a);
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
  assert_uopc_ok(guard_plan_compile(&plan, &s, &err), err);
  assert_uopc_ok(guard_plan_compile(&broken_plan, &broken, &err), err);
  uopc_tensor x = {0}, out = {0};
  int64_t n = 33;
  assert_uopc_ok(uopc_tensor_empty(&x, UOPC_F32, 1, &n, &err), err);
  assert_uopc_ok(uopc_tensor_empty(&out, UOPC_F32, 1, &n, &err), err);
  const uopc_tensor *args[] = {&out, &x};
  guard_call c;
  int failed;
  assert_uopc_ok(guard_call_init(&c, 2, args, &err), err);
  assert_false(guard_plan_holds(&plan, &c));
  assert_uopc_ok(guard_set_check(&s, &c, &failed, NULL, &err), err);
  assert_string_equal(s.guards[failed].what, "n = x.shape[0] is a multiple of 16");
  assert_true(guard_plan_holds(&broken_plan, &c));
  const uopc_tensor *one[] = {&x};   /* a call shorter than the set holds nothing */
  assert_uopc_ok(guard_call_init(&c, 1, one, &err), err);
  assert_false(guard_plan_holds(&broken_plan, &c));
  uopc_tensor_release(&x);
  uopc_tensor_release(&out);
  guard_plan_fini(&plan), guard_plan_fini(&broken_plan);
  guard_set_fini(&s), guard_set_fini(&broken);
  dispatch_fini(&d);
}

/* The inline record of two vectors is guard_call_init's: the same views,
 * addresses and facts on random calls (other ranks fall back to it), and the
 * same error for a released argument. */
static void test_guard_call_init_pair_matches_guard_call_init(void **state) {
  (void)state;
  uopc_error err = {0};
  pool p = {0};
  guard_call want, got;
  srand(2304);
  for (int i = 0; i < CALLS; i++) {
    make_pair(&p);
    const uopc_tensor *args[] = {&p.view[0], &p.view[1]};
    assert_uopc_ok(guard_call_init(&want, 2, args, &err), err);
    memset(&got, 0x5a, sizeof got);
    assert_uopc_ok(guard_call_init_pair(&got, &p.view[0], &p.view[1], &err), err);
    if (got.count != want.count || memcmp(got.facts, want.facts, sizeof got.facts) ||
        memcmp(got.apart, want.apart, sizeof got.apart))
      fail_msg("call %d: count %d facts %#llx apart %#llx, guard_call_init gives count %d facts %#llx apart %#llx",
               i, got.count, (unsigned long long)got.facts[0], (unsigned long long)got.apart[0], want.count,
               (unsigned long long)want.facts[0], (unsigned long long)want.apart[0]);
    for (int a = 0; a < 2; a++) {
      const guard_view *g = &got.args[a], *w = &want.args[a];
      int same = got.data[a] == want.data[a] && g->dtype == w->dtype && g->rank == w->rank;
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
    cmocka_unit_test(test_guard_plan_agrees_on_the_dispatchers_sets),
    cmocka_unit_test(test_guard_plan_agrees_on_random_sets),
    cmocka_unit_test(test_guard_plan_follows_a_removed_guard),
    cmocka_unit_test(test_guard_call_init_pair_matches_guard_call_init),
  };
  return cmocka_run_group_tests(tests, testutil_fresh_cache, testutil_remove_cache);
}
