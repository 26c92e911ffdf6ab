/* test_sym_expr.c: lab 23.1, expressions: Python's // and %, the rewrite
 * rules, and an exhaustive check of the simplifier on small bounded dims.
 * For a generated set of expressions over x, y in [-4, 4] and d in [1, 4]
 * and every assignment of them: the simplified expression equals the
 * original under the evaluator, both values lie in the computed intervals,
 * and one compiled C program (through uopc) computes the same values from
 * the generated C text of both. */
#include "sym_expr.h"
#include "testutil.h"

enum { MAX_EXPRS = 8000, LO = -4, HI = 4, DHI = 4 };

typedef struct fixture {
  sym_arena *arena;
  sym_dim x, y, d;
  const sym_expr *ex, *ey, *ed;
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  uopc_error err = {0};
  if (!f || sym_arena_new(&f->arena, &err)) return -1;
  if (sym_dim_init(&f->x, "x", LO, HI, 1, &err) || sym_dim_init(&f->y, "y", LO, HI, 1, &err) ||
      sym_dim_init(&f->d, "d", 1, DHI, 1, &err)) return -1;
  f->ex = sym_expr_dim(f->arena, &f->x);
  f->ey = sym_expr_dim(f->arena, &f->y);
  f->ed = sym_expr_dim(f->arena, &f->d);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  sym_arena_free(f->arena);
  free(f);
  return 0;
}

static const char *text(const sym_expr *e) {
  static char buf[4][512];
  static int next;
  char *b = buf[next++ % 4];
  if (sym_expr_format(e, b, 512, NULL)) snprintf(b, 512, "(too long)");
  return b;
}

static const sym_expr *simplified(fixture *f, const sym_expr *e) {
  const sym_expr *s = NULL;
  uopc_error err = {0};
  if (!e) fail_msg("construction failed: %s", sym_arena_error(f->arena)->message);
  int rc = sym_expr_simplify(f->arena, e, &s, &err);
  if (rc) fail_msg("simplify %s: %s: %s", text(e), uopc_error_name(rc), err.message);
  return s;
}

static int64_t eval3(const fixture *f, const sym_expr *e, int64_t x, int64_t y, int64_t d) {
  sym_binding b;
  uopc_error err = {0};
  int64_t v = 0;
  sym_binding_init(&b);
  assert_uopc_ok(sym_dim_bind(&b, &f->x, x, &err), err);
  assert_uopc_ok(sym_dim_bind(&b, &f->y, y, &err), err);
  assert_uopc_ok(sym_dim_bind(&b, &f->d, d, &err), err);
  int rc = sym_expr_eval(e, &b, &v, &err);
  if (rc) fail_msg("eval %s at x=%lld y=%lld d=%lld: %s", text(e), (long long)x, (long long)y,
                   (long long)d, err.message);
  return v;
}

/* ---- Semantics and single rules. */

static void test_sym_expr_eval_floors_negative_operands(void **state) {
  fixture *f = *state;
  sym_arena *a = f->arena;
  static const int64_t cases[][4] = {   /* x, divisor, x // divisor, x % divisor (Python) */
    {-7, 2, -4, 1}, {7, 2, 3, 1}, {-8, 2, -4, 0}, {-1, 3, -1, 2}, {0, 3, 0, 0}, {-4, 4, -1, 0},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    const sym_expr *x = sym_expr_const(a, cases[k][0]), *c = sym_expr_const(a, cases[k][1]);
    int64_t q = eval3(f, sym_expr_floordiv(a, x, c), 0, 0, 1);
    int64_t r = eval3(f, sym_expr_mod(a, x, c), 0, 0, 1);
    if (q != cases[k][2] || r != cases[k][3])
      fail_msg("%lld //, %% %lld: expected %lld, %lld, got %lld, %lld", (long long)cases[k][0],
               (long long)cases[k][1], (long long)cases[k][2], (long long)cases[k][3],
               (long long)q, (long long)r);
  }
}

static void test_sym_expr_eval_reports_unbound_dim(void **state) {
  fixture *f = *state;
  sym_binding b;
  uopc_error err = {0};
  int64_t v;
  sym_binding_init(&b);
  assert_uopc_code(sym_expr_eval(sym_expr_add(f->arena, f->ex, f->ey), &b, &v, &err), UOPC_E_UNBOUND, err);
  assert_contains(err.message, "dim 'x' is unbound");
}

static void test_sym_expr_divisor_must_be_positive(void **state) {
  (void)state;
  sym_arena *a;
  uopc_error err = {0};
  sym_dim z;
  assert_uopc_ok(sym_arena_new(&a, &err), err);
  assert_uopc_ok(sym_dim_init(&z, "z", 0, 5, 1, &err), err);
  assert_null(sym_expr_floordiv(a, sym_expr_const(a, 3), sym_expr_const(a, 0)));
  assert_int_equal(sym_arena_error(a)->code, UOPC_E_INVALID);
  assert_null(sym_expr_mod(a, sym_expr_const(a, 3), sym_expr_dim(a, &z)));
  sym_arena_free(a);
}

static void expect_same(fixture *f, const sym_expr *e, const sym_expr *want) {
  const sym_expr *s = simplified(f, e), *w = simplified(f, want);
  if (s != w) fail_msg("simplify %s: expected %s, got %s", text(e), text(w), text(s));
}

static void test_sym_expr_simplify_applies_the_rules(void **state) {
  fixture *f = *state;
  sym_arena *a = f->arena;
  const sym_expr *x = f->ex, *y = f->ey, *d = f->ed, *c = sym_expr_const(a, 3);
  const sym_expr *zero = sym_expr_const(a, 0), *one = sym_expr_const(a, 1);
  expect_same(f, sym_expr_mul(a, x, one), x);                                   /* x*1 */
  expect_same(f, sym_expr_add(a, x, zero), x);                                  /* x+0 */
  expect_same(f, sym_expr_floordiv(a, sym_expr_mul(a, x, c), c), x);            /* (x*c)//c */
  expect_same(f, sym_expr_mod(a, sym_expr_mul(a, x, c), c), zero);              /* (x*c)%c */
  expect_same(f, sym_expr_floordiv(a, sym_expr_mul(a, x, d), d), x);            /* (x*d)//d */
  expect_same(f, sym_expr_mod(a, sym_expr_mul(a, d, y), d), zero);              /* (d*y)%d */
  expect_same(f, sym_expr_sub(a, x, x), zero);
  expect_same(f, sym_expr_add(a, x, y), sym_expr_add(a, y, x));                 /* order */
  expect_same(f, sym_expr_add(a, x, x), sym_expr_mul(a, sym_expr_const(a, 2), x));
  expect_same(f, sym_expr_add(a, sym_expr_mul(a, sym_expr_const(a, 2), c), one), sym_expr_const(a, 7));
  expect_same(f, sym_expr_min(a, x, sym_expr_add(a, x, one)), x);
  expect_same(f, sym_expr_mod(a, sym_expr_add(a, x, sym_expr_const(a, 4)), sym_expr_const(a, 9)),
              sym_expr_add(a, x, sym_expr_const(a, 4)));                        /* x+4 in [0, 8] */
}

static void test_sym_expr_equal_forms_are_one_node(void **state) {
  fixture *f = *state;
  sym_arena *a = f->arena;
  const sym_expr *two = sym_expr_const(a, 2);
  const sym_expr *p = sym_expr_sub(a, sym_expr_add(a, sym_expr_mul(a, f->ex, two), f->ey), f->ex);
  const sym_expr *q = sym_expr_add(a, f->ey, f->ex);
  if (simplified(f, p) != simplified(f, q))
    fail_msg("%s and %s: expected one node, got %s and %s", text(p), text(q),
             text(simplified(f, p)), text(simplified(f, q)));
}

/* ---- The exhaustive check. */

typedef struct expr_set { const sym_expr *e[MAX_EXPRS]; int count; } expr_set;

static void add(expr_set *s, const sym_expr *e) {
  if (e && s->count < MAX_EXPRS) s->e[s->count++] = e;
}

static const sym_expr *apply(sym_arena *a, int op, const sym_expr *p, const sym_expr *q) {
  switch (op) {
  case 0: return sym_expr_add(a, p, q);
  case 1: return sym_expr_sub(a, p, q);
  case 2: return sym_expr_mul(a, p, q);
  case 3: return sym_expr_min(a, p, q);
  default: return sym_expr_max(a, p, q);
  }
}

/* Depth 1: every operator on every pair of leaves; depth 2 and 3: each
 * depth-1 expression combined with a leaf (on both sides), divided and
 * reduced by every divisor, then some of those combined again. */
static void generate(fixture *f, expr_set *s) {
  sym_arena *a = f->arena;
  const sym_expr *leaves[] = {f->ex, f->ey, f->ed, sym_expr_const(a, -3), sym_expr_const(a, 0),
                              sym_expr_const(a, 1), sym_expr_const(a, 2)};
  const sym_expr *divisors[] = {sym_expr_const(a, 1), sym_expr_const(a, 2), sym_expr_const(a, 3), f->ed};
  enum { NL = 7, ND = 4 };
  for (int p = 0; p < NL; p++)
    for (int q = 0; q < NL; q++)
      for (int op = 0; op < 5; op++) add(s, apply(a, op, leaves[p], leaves[q]));
  for (int p = 0; p < NL; p++)
    for (int k = 0; k < ND; k++) {
      add(s, sym_expr_floordiv(a, leaves[p], divisors[k]));
      add(s, sym_expr_mod(a, leaves[p], divisors[k]));
    }
  int depth1 = s->count;
  for (int i = 0; i < depth1; i++) {
    for (int op = 0; op < 5; op++) {
      add(s, apply(a, op, s->e[i], leaves[(i + op) % NL]));
      add(s, apply(a, op, leaves[(i + 2 * op + 1) % NL], s->e[i]));
    }
    add(s, sym_expr_floordiv(a, s->e[i], divisors[i % ND]));
    add(s, sym_expr_mod(a, s->e[i], divisors[(i + 1) % ND]));
  }
  int depth2 = s->count;
  for (int i = depth1; i < depth2 && s->count < MAX_EXPRS; i += 3) {
    add(s, apply(a, i % 5, s->e[i], s->e[(i * 7) % depth1]));
    add(s, (i & 1 ? sym_expr_mod : sym_expr_floordiv)(a, s->e[i], divisors[i % ND]));
  }
}

static void check_value(const sym_expr *e, const sym_expr *s, int64_t x, int64_t y, int64_t d,
                        int64_t orig, int64_t simp, sym_interval io, sym_interval is) {
  if (orig != simp)
    fail_msg("x=%lld y=%lld d=%lld: %s = %lld, but its simplified form %s = %lld",
             (long long)x, (long long)y, (long long)d, text(e), (long long)orig, text(s), (long long)simp);
  if (orig < io.lo || orig > io.hi || orig < is.lo || orig > is.hi)
    fail_msg("x=%lld y=%lld d=%lld: %s = %lld outside its interval [%lld, %lld] (simplified: [%lld, %lld])",
             (long long)x, (long long)y, (long long)d, text(e), (long long)orig, (long long)io.lo,
             (long long)io.hi, (long long)is.lo, (long long)is.hi);
}

/* The generated C of every expression (original and simplified), in one
 * function that evaluates all of them for every assignment. */
static char *c_program(const expr_set *s, const sym_expr **simp) {
  size_t cap = 1 << 22, len = 0;
  char *src = malloc(cap), line[1200], c[512];
  uopc_error err = {0};
  assert_non_null(src);
  len += (size_t)snprintf(src, cap, "#include <stdint.h>\n%s\nvoid eval_all(int64_t *restrict out,"
                          " const int64_t *restrict xs, const int64_t *restrict ys,"
                          " const int64_t *restrict ds, int64_t count) {\n"
                          "  for (int64_t a = 0; a < count; a++) {\n"
                          "    const int64_t x = xs[a], y = ys[a], d = ds[a];\n", SYM_C_HELPERS);
  for (int k = 0; k < 2 * s->count; k++) {
    const sym_expr *e = k < s->count ? s->e[k] : simp[k - s->count];
    assert_uopc_ok(sym_expr_to_c(e, c, sizeof c, &err), err);
    int n = snprintf(line, sizeof line, "    out[%d*count + a] = %s;\n", k, c);
    assert_true(len + (size_t)n + 16 < cap);
    memcpy(src + len, line, (size_t)n + 1);
    len += (size_t)n;
  }
  snprintf(src + len, cap - len, "  }\n}\n");
  return src;
}

static void test_sym_expr_simplify_exhaustive_small_dims(void **state) {
  fixture *f = *state;
  expr_set *s = calloc(1, sizeof *s);
  const sym_expr **simp = calloc(MAX_EXPRS, sizeof *simp);
  sym_interval *io = calloc(MAX_EXPRS, sizeof *io), *is = calloc(MAX_EXPRS, sizeof *is);
  uopc_error err = {0};
  generate(f, s);
  assert_int_equal(sym_arena_error(f->arena)->code, UOPC_OK);
  for (int k = 0; k < s->count; k++) {
    simp[k] = simplified(f, s->e[k]);
    assert_uopc_ok(sym_expr_interval(s->e[k], &io[k], &err), err);
    assert_uopc_ok(sym_expr_interval(simp[k], &is[k], &err), err);
  }
  enum { COUNT = (HI - LO + 1) * (HI - LO + 1) * DHI };
  int64_t xs[COUNT], ys[COUNT], ds[COUNT];
  int n = 0;
  for (int64_t x = LO; x <= HI; x++)
    for (int64_t y = LO; y <= HI; y++)
      for (int64_t d = 1; d <= DHI; d++, n++) xs[n] = x, ys[n] = y, ds[n] = d;
  int64_t *values = malloc(sizeof *values * (size_t)COUNT * 2 * (size_t)s->count);
  for (int k = 0; k < s->count; k++)
    for (int a = 0; a < COUNT; a++) {
      int64_t o = eval3(f, s->e[k], xs[a], ys[a], ds[a]), v = eval3(f, simp[k], xs[a], ys[a], ds[a]);
      check_value(s->e[k], simp[k], xs[a], ys[a], ds[a], o, v, io[k], is[k]);
      values[(size_t)k * COUNT + (size_t)a] = o;
    }
  char *src = c_program(s, simp);
  uopc_program *p = NULL;
  uopc_program_options opts = {.opt_flags = "-O0"};
  assert_uopc_ok(uopc_program_new(&p, src, "eval_all", "ppppl", &opts, &err), err);
  int64_t *out = malloc(sizeof *out * (size_t)COUNT * 2 * (size_t)s->count), count = COUNT;
  int64_t *px = xs, *py = ys, *pd = ds;
  void *args[] = {&out, &px, &py, &pd, &count};
  uopc_program_call(p, args);
  for (int k = 0; k < 2 * s->count; k++)
    for (int a = 0; a < COUNT; a++) {
      int64_t want = values[(size_t)(k % s->count) * COUNT + (size_t)a];
      int64_t got = out[(size_t)k * COUNT + (size_t)a];
      const sym_expr *e = k < s->count ? s->e[k] : simp[k - s->count];
      if (got != want)
        fail_msg("generated C of %s at x=%lld y=%lld d=%lld: expected %lld (evaluator), got %lld",
                 text(e), (long long)xs[a], (long long)ys[a], (long long)ds[a], (long long)want,
                 (long long)got);
    }
  print_message("checked %d expressions (and their simplified forms) at %d assignments\n", s->count, COUNT);
  uopc_program_free(p);
  free(out), free(src), free(values), free(io), free(is), free(simp), free(s);
}

static void test_sym_expr_interval_saturates_instead_of_overflowing(void **state) {
  (void)state;
  sym_arena *a;
  sym_dim big;
  uopc_error err = {0};
  sym_interval r;
  assert_uopc_ok(sym_arena_new(&a, &err), err);
  assert_uopc_ok(sym_dim_init(&big, "big", 1, INT64_MAX / 2, 1, &err), err);
  const sym_expr *e = sym_expr_mul(a, sym_expr_dim(a, &big), sym_expr_const(a, 4));
  assert_uopc_ok(sym_expr_interval(e, &r, &err), err);
  if (r.hi != INT64_MAX || r.lo != 4)
    fail_msg("interval of big*4, big in [1, 2^62]: expected [4, INT64_MAX], got [%lld, %lld]",
             (long long)r.lo, (long long)r.hi);
  sym_arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_sym_expr_eval_floors_negative_operands, setup, teardown),
    cmocka_unit_test_setup_teardown(test_sym_expr_eval_reports_unbound_dim, setup, teardown),
    cmocka_unit_test(test_sym_expr_divisor_must_be_positive),
    cmocka_unit_test_setup_teardown(test_sym_expr_simplify_applies_the_rules, setup, teardown),
    cmocka_unit_test_setup_teardown(test_sym_expr_equal_forms_are_one_node, setup, teardown),
    cmocka_unit_test_setup_teardown(test_sym_expr_simplify_exhaustive_small_dims, setup, teardown),
    cmocka_unit_test(test_sym_expr_interval_saturates_instead_of_overflowing),
  };
  return cmocka_run_group_tests(tests, testutil_fresh_cache, testutil_remove_cache);
}
