/* test_guard.c: lab 23.2, guards as data and the specialization key.
 * Each guard kind is checked on a call built here, holding and failing, and a
 * failure's reason must carry the actual values. */
#include "dispatch.h"
#include "guard_plan.h"
#include "testutil.h"

static const char *const NAMES[] = {"out", "x"};
enum { OUT, X };

/* A call (out, x) over views of buffers the test owns. */
static void make_call(guard_call *c, const uopc_tensor *out, const uopc_tensor *x) {
  uopc_error err = {0};
  const uopc_tensor *args[] = {out, x};
  assert_uopc_ok(guard_call_init(c, 2, args, &err), err);
}

static void new_set(guard_set *s) {
  uopc_error err = {0};
  assert_uopc_ok(guard_set_init(s, 2, NAMES, &err), err);
}

static guard_site shape(int arg, int axis) { return (guard_site){arg, GUARD_SHAPE, axis}; }

/* The last guard of s must fail on c with exactly this reason. */
static void expect_fails(const guard_set *s, const guard_call *c, const char *reason) {
  uopc_error err = {0};
  guard_reason why = {{0}};
  int holds = 1;
  assert_uopc_ok(guard_check(s, s->count - 1, c, &holds, &why, &err), err);
  if (holds) fail_msg("guard '%s' held; expected it to fail with \"%s\"", s->guards[s->count - 1].what, reason);
  assert_string_equal(why.text, reason);
}

static void expect_holds(const guard_set *s, const guard_call *c) {
  uopc_error err = {0};
  int holds = 0;
  assert_uopc_ok(guard_check(s, s->count - 1, c, &holds, NULL, &err), err);
  if (!holds) fail_msg("guard '%s' failed; expected it to hold", s->guards[s->count - 1].what);
}

/* The views the reason tests call with: base (20 f32), strided (base[::2], 10 elements), shifted
 * (base[1:], 4 bytes past a 64-byte boundary), f64 (20 f64), odd (33 f32), head (base[:19]), tail
 * (base[19:]). One
 * test per guard kind: each adds its guards to a fresh set and checks the last. */
typedef struct reason_views { uopc_tensor base, strided, shifted, f64, odd, head, tail; } reason_views;

static void make_views(reason_views *v) {
  uopc_error err = {0};
  int64_t n20 = 20, n33 = 33;
  memset(v, 0, sizeof *v);
  assert_uopc_ok(uopc_tensor_empty(&v->base, UOPC_F32, 1, &n20, &err), err);
  assert_uopc_ok(uopc_tensor_empty(&v->f64, UOPC_F64, 1, &n20, &err), err);
  assert_uopc_ok(uopc_tensor_empty(&v->odd, UOPC_F32, 1, &n33, &err), err);
  assert_uopc_ok(uopc_tensor_slice(&v->strided, &v->base, 0, 0, UOPC_SLICE_NONE, 2, &err), err);
  assert_uopc_ok(uopc_tensor_slice(&v->shifted, &v->base, 0, 1, UOPC_SLICE_NONE, 1, &err), err);
  assert_uopc_ok(uopc_tensor_slice(&v->head, &v->base, 0, 0, 19, 1, &err), err);
  assert_uopc_ok(uopc_tensor_slice(&v->tail, &v->base, 0, 19, UOPC_SLICE_NONE, 1, &err), err);
}

static void release_views(reason_views *v) {
  uopc_tensor *all[] = {&v->base, &v->strided, &v->shifted, &v->f64, &v->odd, &v->head, &v->tail};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) uopc_tensor_release(all[i]);
}

/* Each reason test's fixture: the views, an empty set over (out, x), and a call. */
typedef struct reason_fx { reason_views v; guard_set s; guard_call c; } reason_fx;

static int reason_setup(void **state) {
  reason_fx *f = calloc(1, sizeof *f);
  if (!f) return -1;
  make_views(&f->v);
  new_set(&f->s);
  *state = f;
  return 0;
}

static int reason_teardown(void **state) {
  reason_fx *f = *state;
  guard_set_fini(&f->s);
  release_views(&f->v);
  free(f);
  return 0;
}

static void test_guard_reason_contiguous_carries_actual_values(void **state) {
  reason_fx *f = *state;
  uopc_error err = {0};
  make_call(&f->c, &f->v.base, &f->v.strided);
  assert_uopc_ok(guard_set_add_contiguous(&f->s, X, &err), err);
  expect_fails(&f->s, &f->c, "x is not contiguous (strides (2) for shape (10))");
}

static void test_guard_reason_range_carries_actual_values(void **state) {
  reason_fx *f = *state;
  uopc_error err = {0};
  make_call(&f->c, &f->v.base, &f->v.strided);
  assert_uopc_ok(guard_set_add_range(&f->s, NULL, (guard_site){X, GUARD_STRIDE, 0}, 1, 1, &err), err);
  assert_string_equal(f->s.guards[f->s.count - 1].what, "x.strides[0] == 1");
  expect_fails(&f->s, &f->c, "x.strides[0] = 2, not 1");
  assert_uopc_ok(guard_set_add_range(&f->s, NULL, shape(OUT, 0), 1, 8, &err), err);
  expect_fails(&f->s, &f->c, "out.shape[0] = 20 is outside [1, 8]");
}

/* A range over a named dim gives lab 23.1's text for it. */
static void test_guard_reason_dim_bounds_carries_actual_values(void **state) {
  reason_fx *f = *state;
  uopc_error err = {0};
  sym_dim n;
  assert_uopc_ok(sym_dim_init(&n, "n", 1, 16, 1, &err), err);
  make_call(&f->c, &f->v.base, &f->v.odd);
  assert_uopc_ok(guard_set_add_bounds(&f->s, &n, shape(X, 0), &err), err);
  expect_fails(&f->s, &f->c, "dim 'n' = 33 outside [1, 16]");
  assert_string_equal(f->s.guards[f->s.count - 1].what, "n = x.shape[0] in [1, 16]");
}

static void test_guard_reason_equal_carries_actual_values(void **state) {
  reason_fx *f = *state;
  uopc_error err = {0};
  make_call(&f->c, &f->v.base, &f->v.strided);
  assert_uopc_ok(guard_set_add_equal(&f->s, shape(OUT, 0), shape(X, 0), &err), err);
  expect_fails(&f->s, &f->c, "out.shape[0] = 20 differs from x.shape[0] = 10");
}

static void test_guard_reason_divisible_carries_actual_values(void **state) {
  reason_fx *f = *state;
  uopc_error err = {0};
  make_call(&f->c, &f->v.base, &f->v.odd);
  assert_uopc_ok(guard_set_add_divisible(&f->s, "n", shape(X, 0), 16, &err), err);
  expect_fails(&f->s, &f->c, "n = 33 is not a multiple of 16");
  assert_uopc_ok(guard_set_add_divisible(&f->s, NULL, shape(X, 0), 3, &err), err);
  expect_holds(&f->s, &f->c);
  assert_uopc_ok(guard_set_add_divisible(&f->s, NULL, shape(X, 0), 5, &err), err);
  expect_fails(&f->s, &f->c, "x.shape[0] = 33 is not a multiple of 5");
}

/* out = x[1:] * 2: out's extent is n - 1, with n = x.shape[0] bound by the set's earlier guards. */
static void test_guard_reason_expr_carries_actual_values(void **state) {
  reason_fx *f = *state;
  uopc_error err = {0};
  sym_dim n;
  sym_arena *arena;
  assert_uopc_ok(sym_dim_init(&n, "n", 1, 16, 1, &err), err);
  assert_uopc_ok(sym_arena_new(&arena, &err), err);
  make_call(&f->c, &f->v.base, &f->v.odd);
  assert_uopc_ok(guard_set_add_divisible(&f->s, "n", shape(X, 0), 16, &err), err);
  assert_uopc_ok(guard_set_add_bounds(&f->s, &n, shape(X, 0), &err), err);
  const sym_expr *less = sym_expr_add(arena, sym_expr_dim(arena, &n), sym_expr_const(arena, -1));
  assert_uopc_ok(sym_expr_simplify(arena, less, &less, &err), err);
  assert_uopc_ok(guard_set_add_expr(&f->s, shape(OUT, 0), less, &err), err);
  expect_fails(&f->s, &f->c, "out.shape[0] = 20, but n - 1 = 32 on this call");
  make_call(&f->c, &f->v.head, &f->v.base);
  expect_holds(&f->s, &f->c);
  sym_arena_free(arena);
}

static void test_guard_reason_aligned_carries_actual_values(void **state) {
  reason_fx *f = *state;
  uopc_error err = {0};
  make_call(&f->c, &f->v.base, &f->v.shifted);
  assert_uopc_ok(guard_set_add_aligned(&f->s, X, 64, &err), err);
  expect_fails(&f->s, &f->c, "x is not aligned to 64 bytes (element 0 is 4 bytes past a 64-byte boundary)");
}

static void test_guard_reason_disjoint_carries_actual_values(void **state) {
  reason_fx *f = *state;
  uopc_error err = {0};
  make_call(&f->c, &f->v.base, &f->v.shifted);
  assert_uopc_ok(guard_set_add_disjoint(&f->s, OUT, X, &err), err);
  expect_fails(&f->s, &f->c, "out and x overlap (they share bytes of one buffer)");
  make_call(&f->c, &f->v.base, &f->v.f64);
  expect_holds(&f->s, &f->c);
  /* Ranges that touch share no byte: out = base[:19] ends where x = base[19:] starts. */
  make_call(&f->c, &f->v.head, &f->v.tail);
  expect_holds(&f->s, &f->c);
  make_call(&f->c, &f->v.tail, &f->v.head);
  expect_holds(&f->s, &f->c);
  /* A view reaches (shape - 1) * |stride| elements past its first: base[::2] ends at element 18,
   * which base[18:] starts with; base[19::-2] runs down to element 1, which base[:2] holds. */
  uopc_tensor from18, rev, first2;
  uopc_error e2 = {0};
  assert_uopc_ok(uopc_tensor_slice(&from18, &f->v.base, 0, 18, UOPC_SLICE_NONE, 1, &e2), e2);
  assert_uopc_ok(uopc_tensor_slice(&rev, &f->v.base, 0, 19, UOPC_SLICE_NONE, -2, &e2), e2);
  assert_uopc_ok(uopc_tensor_slice(&first2, &f->v.base, 0, 0, 2, 1, &e2), e2);
  assert_int_equal(rev.shape[0], 10);
  make_call(&f->c, &f->v.strided, &from18);
  expect_fails(&f->s, &f->c, "out and x overlap (they share bytes of one buffer)");
  make_call(&f->c, &rev, &first2);
  expect_fails(&f->s, &f->c, "out and x overlap (they share bytes of one buffer)");
  make_call(&f->c, &first2, &rev);
  expect_fails(&f->s, &f->c, "out and x overlap (they share bytes of one buffer)");
  uopc_tensor_release(&from18);
  uopc_tensor_release(&rev);
  uopc_tensor_release(&first2);
}

static void test_guard_reason_dtype_carries_actual_values(void **state) {
  reason_fx *f = *state;
  uopc_error err = {0};
  make_call(&f->c, &f->v.base, &f->v.f64);
  assert_uopc_ok(guard_set_add_dtype(&f->s, X, UOPC_F32, &err), err);
  expect_fails(&f->s, &f->c, "x has dtype f64, not f32");
}

static void test_guard_reason_rank_carries_actual_values(void **state) {
  reason_fx *f = *state;
  uopc_error err = {0};
  make_call(&f->c, &f->v.base, &f->v.f64);
  assert_uopc_ok(guard_set_add_rank(&f->s, X, 2, &err), err);
  expect_fails(&f->s, &f->c, "x has rank 1, not 2");
  /* A guard corrupted to no kind at all fails closed: the fast kernel never runs on a guess. */
  assert_uopc_ok(guard_set_add_range(&f->s, NULL, shape(X, 0), 1, 100, &err), err);
  expect_holds(&f->s, &f->c);
  f->s.guards[f->s.count - 1].kind = (guard_kind)99;
  int holds = 1;
  assert_uopc_ok(guard_check(&f->s, f->s.count - 1, &f->c, &holds, NULL, &err), err);
  if (holds) fail_msg("a guard of kind 99 held: a corrupted guard must fail");
}

/* A guard on an axis the tensor lacks fails; a guard set stops at the first failure. */
static void test_guard_set_check_stops_at_first_failure(void **state) {
  (void)state;
  uopc_error err = {0};
  uopc_tensor v = {0}, scalar = {0};
  int64_t n = 32;
  assert_uopc_ok(uopc_tensor_empty(&v, UOPC_F32, 1, &n, &err), err);
  assert_uopc_ok(uopc_tensor_empty(&scalar, UOPC_F32, 0, NULL, &err), err);
  guard_set s;
  guard_call c;
  new_set(&s);
  assert_uopc_ok(guard_set_add_contiguous(&s, X, &err), err);
  assert_uopc_ok(guard_set_add_divisible(&s, "n", shape(X, 0), 16, &err), err);
  assert_uopc_ok(guard_set_add_aligned(&s, OUT, 64, &err), err);
  assert_uopc_ok(guard_set_add_equal(&s, shape(OUT, 0), shape(X, 0), &err), err);
  int failed = 7;
  make_call(&c, &v, &v);
  assert_uopc_ok(guard_set_check(&s, &c, &failed, NULL, &err), err);
  assert_int_equal(failed, -1);
  make_call(&c, &v, &scalar);
  guard_reason why;
  assert_uopc_ok(guard_set_check(&s, &c, &failed, &why, &err), err);
  assert_int_equal(failed, 1);
  assert_string_equal(why.text, "x has no axis for 'n = x.shape[0] is a multiple of 16' (rank 0)");
  assert_uopc_ok(guard_check(&s, 3, &c, &failed, &why, &err), err);
  assert_int_equal(failed, 0);
  assert_string_equal(why.text, "x has no axis for 'out.shape[0] == x.shape[0]' (rank 0)");
  /* a range's site is checked the same way; a dtype guard has no site, so a scalar out is no reason */
  assert_uopc_ok(guard_set_add_range(&s, NULL, shape(X, 0), 1, 8, &err), err);
  assert_uopc_ok(guard_check(&s, 4, &c, &failed, &why, &err), err);
  assert_int_equal(failed, 0);
  assert_string_equal(why.text, "x has no axis for 'x.shape[0] in [1, 8]' (rank 0)");
  assert_uopc_ok(guard_set_add_dtype(&s, X, UOPC_F64, &err), err);
  make_call(&c, &scalar, &v);
  /* the equality's first site missing, its second present: named by the first */
  assert_uopc_ok(guard_check(&s, 3, &c, &failed, &why, &err), err);
  assert_int_equal(failed, 0);
  assert_string_equal(why.text, "out has no axis for 'out.shape[0] == x.shape[0]' (rank 0)");
  assert_uopc_ok(guard_check(&s, 5, &c, &failed, &why, &err), err);
  assert_int_equal(failed, 0);
  assert_string_equal(why.text, "x has dtype f32, not f64");
  guard_set_fini(&s);
  uopc_tensor_release(&v);
  uopc_tensor_release(&scalar);
}

/* An index outside the set is refused, and the message gives the index asked for, then the set's
 * size (7 of 2 is not 2 of 7). */
static void test_guard_check_refuses_an_index_outside_the_set(void **state) {
  (void)state;
  uopc_error err = {0};
  uopc_tensor v = {0};
  int64_t n = 32;
  assert_uopc_ok(uopc_tensor_empty(&v, UOPC_F32, 1, &n, &err), err);
  guard_set s;
  guard_call c;
  new_set(&s);
  assert_uopc_ok(guard_set_add_rank(&s, X, 1, &err), err);
  assert_uopc_ok(guard_set_add_dtype(&s, X, UOPC_F32, &err), err);
  make_call(&c, &v, &v);
  int holds;
  guard_reason why;
  assert_uopc_code(guard_check(&s, 7, &c, &holds, &why, &err), UOPC_E_INVALID, err);
  assert_string_equal(err.message, "guard 7 of a set of 2");
  assert_uopc_code(guard_check(&s, -1, &c, &holds, NULL, &err), UOPC_E_INVALID, err);
  assert_string_equal(err.message, "guard -1 of a set of 2");
  guard_set_fini(&s);
  uopc_tensor_release(&v);
}

static void test_guard_set_rejects_bad_guards(void **state) {
  (void)state;
  uopc_error err = {0};
  guard_set s;
  new_set(&s);
  assert_uopc_code(guard_set_add_aligned(&s, X, 48, &err), UOPC_E_INVALID, err);
  assert_contains(err.message, "48 bytes is not a power of two");
  assert_uopc_code(guard_set_add_rank(&s, 2, 1, &err), UOPC_E_INVALID, err);
  assert_uopc_code(guard_set_add_disjoint(&s, X, X, &err), UOPC_E_INVALID, err);
  assert_uopc_code(guard_set_add_range(&s, "n", shape(X, 0), 5, 4, &err), UOPC_E_INVALID, err);
  assert_uopc_code(guard_set_add_equal(&s, shape(X, 0), shape(2, 0), &err), UOPC_E_INVALID, err);
  assert_uopc_code(guard_set_add_divisible(&s, "n", shape(X, UOPC_MAX_RANK), 4, &err), UOPC_E_INVALID, err);
  for (int k = 0; k < 40; k++) assert_uopc_ok(guard_set_add_contiguous(&s, X, &err), err);   /* sets grow */
  guard_call c;
  uopc_tensor v = {0};
  int64_t n = 4;
  assert_uopc_ok(uopc_tensor_empty(&v, UOPC_F32, 1, &n, &err), err);
  const uopc_tensor *one[] = {&v};
  assert_uopc_ok(guard_call_init(&c, 1, one, &err), err);
  int failed;
  assert_uopc_code(guard_set_check(&s, &c, &failed, NULL, &err), UOPC_E_INVALID, err);
  assert_contains(err.message, "a call with 1 arguments checked against a set over 2");
  int holds;
  assert_uopc_code(guard_check(&s, 0, &c, &holds, NULL, &err), UOPC_E_INVALID, err);
  assert_uopc_code(guard_check(&s, s.count, &c, &holds, NULL, &err), UOPC_E_INVALID, err);
  /* a guard whose second argument (x, 1) is past a call of one: refused by that argument */
  assert_uopc_ok(guard_set_add_disjoint(&s, OUT, X, &err), err);
  assert_uopc_code(guard_check(&s, s.count - 1, &c, &holds, NULL, &err), UOPC_E_INVALID, err);
  guard_set_fini(&s);
  uopc_tensor_release(&v);
}

static void fill_parts(spec_key_parts *p) {
  memset(p, 0, sizeof *p);
  strcpy(p->op, "square_plus_one");
  p->graph_hash = 0x1234;
  strcpy(p->target, "x86_64");
  strcpy(p->dtypes, "out:f32 x:f32");
  strcpy(p->layout, "contiguous");
  strcpy(p->numerics, "ieee");
  strcpy(p->compiler, "gcc -O3");
  strcpy(p->constraints, "n%16==0");
}

static void test_spec_key_compose_text(void **state) {
  (void)state;
  uopc_error err = {0};
  spec_key_parts p;
  spec_key a;
  fill_parts(&p);
  a.hash = 0;
  assert_uopc_ok(spec_key_compose(&p, &a, &err), err);
  assert_string_equal(a.text, "op=square_plus_one graph=0000000000001234 target=x86_64 dtypes=out:f32 x:f32 "
                              "layout=contiguous numerics=ieee compiler=gcc -O3 constraints=n%16==0");
  /* the hash is FNV-1a 64 of the text, without its NUL */
  assert_true(a.hash == 0xcf242bb46c27a50bull);
  assert_true(a.hash == spec_key_fnv(SPEC_KEY_FNV_BASIS, a.text, strlen(a.text)));
}

/* Equal parts give equal keys; one part changed gives another. */
static void test_spec_key_compose_equal_parts_equal_keys(void **state) {
  (void)state;
  uopc_error err = {0};
  spec_key_parts p;
  spec_key a, b;
  fill_parts(&p);
  assert_uopc_ok(spec_key_compose(&p, &a, &err), err);
  assert_uopc_ok(spec_key_compose(&p, &b, &err), err);
  assert_true(spec_key_equal(&a, &b));
  strcpy(p.numerics, "fast-math");
  assert_uopc_ok(spec_key_compose(&p, &b, &err), err);
  assert_false(spec_key_equal(&a, &b));
}

static void test_spec_key_compose_rejects_missing_parts(void **state) {
  (void)state;
  uopc_error err = {0};
  spec_key_parts p;
  spec_key b;
  fill_parts(&p);
  p.layout[0] = '\0';
  assert_uopc_code(spec_key_compose(&p, &b, &err), UOPC_E_INVALID, err);
  assert_contains(err.message, "cache key part 'layout' is empty");
  /* each part, emptied alone, is refused by its own name */
  static const char *const names[] = {"op", "target", "dtypes", "layout", "numerics", "compiler", "constraints"};
  for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
    char *part[] = {p.op, p.target, p.dtypes, p.layout, p.numerics, p.compiler, p.constraints};
    char want[64];
    fill_parts(&p);
    part[k][0] = '\0';
    memset(&err, 0, sizeof err);
    assert_uopc_code(spec_key_compose(&p, &b, &err), UOPC_E_INVALID, err);
    snprintf(want, sizeof want, "cache key part '%s' is empty", names[k]);
    assert_contains(err.message, want);
  }
  fill_parts(&p);
  p.graph_hash = 0;
  assert_uopc_code(spec_key_compose(&p, &b, &err), UOPC_E_INVALID, err);
  assert_contains(err.message, "'graph'");
}

/* x*x + 1 built in two orders hashes alike; x*x - 1 and x*x + 2 differ. */
static void test_spec_key_graph_hash_is_structural(void **state) {
  (void)state;
  uopc_error err = {0};
  sym_arena *arena;
  sym_dim n;
  assert_uopc_ok(sym_arena_new(&arena, &err), err);
  assert_uopc_ok(sym_dim_init(&n, "n", 1, 64, 1, &err), err);
  const sym_expr *shape[1] = {sym_expr_dim(arena, &n)};
  uint64_t h[4];
  for (int v = 0; v < 4; v++) {
    kernel_graph g;
    const kernel_node *x, *sq, *c, *out;
    kernel_graph_init(&g, arena);
    if (v == 1) assert_uopc_ok(kernel_scalar(&g, 1.0f, &c, &err), err);
    assert_uopc_ok(kernel_input(&g, "x", UOPC_F32, 1, shape, &x, &err), err);
    assert_uopc_ok(kernel_binary(&g, KERNEL_MUL, x, x, &sq, &err), err);
    if (v != 1) assert_uopc_ok(kernel_scalar(&g, v == 3 ? 2.0f : 1.0f, &c, &err), err);
    assert_uopc_ok(kernel_binary(&g, v == 2 ? KERNEL_SUB : KERNEL_ADD, sq, c, &out, &err), err);
    h[v] = spec_key_graph_hash(&g, out);
  }
  assert_true(h[0] == h[1]);
  assert_true(h[0] != h[2]);
  assert_true(h[0] != h[3]);
  sym_arena_free(arena);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_guard_reason_contiguous_carries_actual_values, reason_setup, reason_teardown),
    cmocka_unit_test_setup_teardown(test_guard_reason_range_carries_actual_values, reason_setup, reason_teardown),
    cmocka_unit_test_setup_teardown(test_guard_reason_dim_bounds_carries_actual_values, reason_setup, reason_teardown),
    cmocka_unit_test_setup_teardown(test_guard_reason_equal_carries_actual_values, reason_setup, reason_teardown),
    cmocka_unit_test_setup_teardown(test_guard_reason_divisible_carries_actual_values, reason_setup, reason_teardown),
    cmocka_unit_test_setup_teardown(test_guard_reason_expr_carries_actual_values, reason_setup, reason_teardown),
    cmocka_unit_test_setup_teardown(test_guard_reason_aligned_carries_actual_values, reason_setup, reason_teardown),
    cmocka_unit_test_setup_teardown(test_guard_reason_disjoint_carries_actual_values, reason_setup, reason_teardown),
    cmocka_unit_test_setup_teardown(test_guard_reason_dtype_carries_actual_values, reason_setup, reason_teardown),
    cmocka_unit_test_setup_teardown(test_guard_reason_rank_carries_actual_values, reason_setup, reason_teardown),
    cmocka_unit_test(test_guard_set_check_stops_at_first_failure),
    cmocka_unit_test(test_guard_set_rejects_bad_guards),
    cmocka_unit_test(test_guard_check_refuses_an_index_outside_the_set),
    cmocka_unit_test(test_spec_key_compose_text),
    cmocka_unit_test(test_spec_key_compose_equal_parts_equal_keys),
    cmocka_unit_test(test_spec_key_compose_rejects_missing_parts),
    cmocka_unit_test(test_spec_key_graph_hash_is_structural),
  };
  return cmocka_run_group_tests(tests, testutil_fresh_cache, testutil_remove_cache);
}
