/* test_sym_expr.c: lab 23.1, expressions: Python's // and %, the rewrite
 * rules, and an exhaustive check of the simplifier on small bounded dims.
 * For a generated set of expressions over x, y in [-4, 4] and d in [1, 4]
 * and every assignment of them: the simplified expression equals the
 * original under the evaluator, both values lie in the computed intervals,
 * and one compiled C program (through uopc) computes the same values from
 * the generated C text of both. */
#include <malloc.h>
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

/* The rules, in three families: identities and folding, a divisor's multiples, and a quotient
 * decided by the bounds. */
static void test_sym_expr_simplify_applies_identities_and_folds_constants(void **state) {
  fixture *f = *state;
  sym_arena *a = f->arena;
  const sym_expr *x = f->ex, *y = f->ey, *c = sym_expr_const(a, 3);
  const sym_expr *zero = sym_expr_const(a, 0), *one = sym_expr_const(a, 1);
  expect_same(f, sym_expr_mul(a, x, one), x);                                   /* x*1 */
  expect_same(f, sym_expr_add(a, x, zero), x);                                  /* x+0 */
  expect_same(f, sym_expr_sub(a, x, x), zero);
  expect_same(f, sym_expr_add(a, x, y), sym_expr_add(a, y, x));                 /* order */
  expect_same(f, sym_expr_add(a, x, x), sym_expr_mul(a, sym_expr_const(a, 2), x));
  expect_same(f, sym_expr_add(a, sym_expr_mul(a, sym_expr_const(a, 2), c), one), sym_expr_const(a, 7));
  expect_same(f, sym_expr_min(a, x, sym_expr_add(a, x, one)), x);
}

/* A product of two non-constants is one atom of its operands' primitive parts (coprime
 * coefficients, the least atom's positive) times their contents, so that equal products are
 * one node however the constants were spread: m*(min(3, k-1) + 1)*6 and m*(3*min(3, k-1) + 3)*2
 * are the two element counts of a reshape check_core's seed 1554471 found refused. */
static void test_sym_expr_simplify_takes_the_content_out_of_a_product(void **state) {
  fixture *f = *state;
  sym_arena *a = f->arena;
  const sym_expr *x = f->ex, *y = f->ey;
  const sym_expr *k2 = sym_expr_const(a, 2), *k3 = sym_expr_const(a, 3), *k6 = sym_expr_const(a, 6);
  const sym_expr *one = sym_expr_const(a, 1), *m = sym_expr_min(a, k3, sym_expr_sub(a, y, one));
  expect_same(f, sym_expr_mul(a, sym_expr_mul(a, x, sym_expr_add(a, m, one)), k6),
              sym_expr_mul(a, sym_expr_mul(a, x, sym_expr_add(a, sym_expr_mul(a, m, k3), k3)), k2));
  expect_same(f, sym_expr_mul(a, x, sym_expr_mul(a, y, k2)), sym_expr_mul(a, sym_expr_mul(a, x, y), k2));
  expect_same(f, sym_expr_mul(a, x, sym_expr_sub(a, sym_expr_const(a, 0), y)),       /* x*-y and -(x*y) */
              sym_expr_sub(a, sym_expr_const(a, 0), sym_expr_mul(a, x, y)));
  expect_same(f, sym_expr_mul(a, sym_expr_sub(a, x, y), y),                          /* (x-y)*y and -((y-x)*y) */
              sym_expr_sub(a, sym_expr_const(a, 0), sym_expr_mul(a, sym_expr_sub(a, y, x), y)));
  /* and the value is kept: 6*x*(min(3, y-1) + 1) at a few bindings */
  const sym_expr *e = simplified(f, sym_expr_mul(a, sym_expr_mul(a, x, sym_expr_add(a, sym_expr_mul(a, m, k3), k3)), k2));
  for (int64_t xv = LO; xv <= LO + 3; xv++)
    for (int64_t yv = LO; yv <= LO + 5; yv++) {
      int64_t mv = yv - 1 < 3 ? yv - 1 : 3;
      assert_int_equal(eval3(f, e, xv, yv, 1), 6 * xv * (mv + 1));
    }
}

static void test_sym_expr_simplify_divides_out_the_divisors_multiples(void **state) {
  fixture *f = *state;
  sym_arena *a = f->arena;
  const sym_expr *x = f->ex, *y = f->ey, *d = f->ed, *c = sym_expr_const(a, 3);
  const sym_expr *zero = sym_expr_const(a, 0);
  expect_same(f, sym_expr_floordiv(a, sym_expr_mul(a, x, c), c), x);            /* (x*c)//c */
  expect_same(f, sym_expr_mod(a, sym_expr_mul(a, x, c), c), zero);              /* (x*c)%c */
  expect_same(f, sym_expr_floordiv(a, sym_expr_mul(a, x, d), d), x);            /* (x*d)//d */
  expect_same(f, sym_expr_mod(a, sym_expr_mul(a, d, y), d), zero);              /* (d*y)%d */
  /* a symbolic divisor on either side of the product: (d*e)//d and (d*e)//e */
  sym_dim de;
  uopc_error err = {0};
  assert_uopc_ok(sym_dim_init(&de, "e", 1, DHI, 1, &err), err);
  const sym_expr *e = sym_expr_dim(a, &de), *de_prod = sym_expr_mul(a, d, e);
  expect_same(f, sym_expr_floordiv(a, de_prod, d), e);
  expect_same(f, sym_expr_floordiv(a, de_prod, e), d);
  expect_same(f, sym_expr_mod(a, de_prod, e), zero);
}

/* A product goes to the quotient only when one of its factors is the divisor itself: g*h over d,
 * with g and h made after d (so their nodes lie past d's in the arena), stays a quotient, which
 * the evaluator checks against Python's // at every value. */
static void test_sym_expr_simplify_divides_out_only_the_divisor_itself(void **state) {
  fixture *f = *state;
  sym_arena *a = f->arena;
  sym_dim g, h;
  uopc_error err = {0};
  assert_uopc_ok(sym_dim_init(&g, "g", 1, 4, 1, &err), err);
  assert_uopc_ok(sym_dim_init(&h, "h", 1, 4, 1, &err), err);
  const sym_expr *e = sym_expr_floordiv(a, sym_expr_mul(a, sym_expr_dim(a, &g), sym_expr_dim(a, &h)), f->ed);
  const sym_expr *s = simplified(f, e);
  for (int64_t gv = 1; gv <= 4; gv++)
    for (int64_t hv = 1; hv <= 4; hv++)
      for (int64_t dv = 1; dv <= DHI; dv++) {
        sym_binding b;
        int64_t got = 0;
        sym_binding_init(&b);
        assert_uopc_ok(sym_dim_bind(&b, &g, gv, &err), err);
        assert_uopc_ok(sym_dim_bind(&b, &h, hv, &err), err);
        assert_uopc_ok(sym_dim_bind(&b, &f->d, dv, &err), err);
        assert_uopc_ok(sym_expr_eval(s, &b, &got, &err), err);
        if (got != gv * hv / dv)
          fail_msg("%s simplified to %s: at g=%lld h=%lld d=%lld expected %lld, got %lld", text(e), text(s),
                   (long long)gv, (long long)hv, (long long)dv, (long long)(gv * hv / dv), (long long)got);
      }
}

static void test_sym_expr_simplify_decides_the_quotient_from_bounds(void **state) {
  fixture *f = *state;
  sym_arena *a = f->arena;
  const sym_expr *x = f->ex, *d = f->ed;
  const sym_expr *zero = sym_expr_const(a, 0), *one = sym_expr_const(a, 1);
  expect_same(f, sym_expr_mod(a, sym_expr_add(a, x, sym_expr_const(a, 4)), sym_expr_const(a, 9)),
              sym_expr_add(a, x, sym_expr_const(a, 4)));                        /* x+4 in [0, 8] */
  const sym_expr *four = sym_expr_const(a, 4), *minus_d = sym_expr_sub(a, zero, d);
  expect_same(f, sym_expr_floordiv(a, minus_d, four), sym_expr_const(a, -1));   /* -d in [-4, -1] */
  expect_same(f, sym_expr_mod(a, minus_d, four), sym_expr_sub(a, four, d));
  sym_dim w;   /* w in [5, 7]: one period of 4 above the first, so w//4 is 1 */
  uopc_error err = {0};
  assert_uopc_ok(sym_dim_init(&w, "w", 5, 7, 1, &err), err);
  const sym_expr *ew = sym_expr_dim(a, &w);
  expect_same(f, sym_expr_floordiv(a, ew, four), one);
  expect_same(f, sym_expr_mod(a, ew, four), sym_expr_sub(a, ew, four));
  /* v in [-1, 1] spans two periods of 3 (floor(-1/3) is -1): its quotient is no constant. */
  sym_dim v;
  sym_binding b;
  int64_t got = 0;
  assert_uopc_ok(sym_dim_init(&v, "v", -1, 1, 1, &err), err);
  const sym_expr *q = simplified(f, sym_expr_floordiv(a, sym_expr_dim(a, &v), sym_expr_const(a, 3)));
  sym_binding_init(&b);
  assert_uopc_ok(sym_dim_bind(&b, &v, -1, &err), err);
  assert_uopc_ok(sym_expr_eval(q, &b, &got, &err), err);
  if (q->kind == SYM_CONST || got != -1)
    fail_msg("v // 3, v in [-1, 1], simplified to %s: at v = -1 expected -1, got %lld", text(q), (long long)got);
}

/* Equal forms are one node, in four families: like terms combined, one form in any order, a sum
 * of SYM_LINEAR_MAX terms, and one term past the limit. */
static void test_sym_linear_add_combines_like_terms(void **state) {
  fixture *f = *state;
  sym_arena *a = f->arena;
  const sym_expr *two = sym_expr_const(a, 2);
  const sym_expr *p = sym_expr_sub(a, sym_expr_add(a, sym_expr_mul(a, f->ex, two), f->ey), f->ex);
  const sym_expr *q = sym_expr_add(a, f->ey, f->ex);
  if (simplified(f, p) != simplified(f, q))
    fail_msg("%s and %s: expected one node, got %s and %s", text(p), text(q),
             text(simplified(f, p)), text(simplified(f, q)));
}

static void test_sym_linear_add_gives_one_node_in_any_order(void **state) {
  fixture *f = *state;
  sym_arena *a = f->arena;
  const sym_expr *yd = sym_expr_mul(a, f->ey, f->ed);
  const sym_expr *pairs[][2] = {
    {sym_expr_add(a, sym_expr_mul(a, f->ex, sym_expr_const(a, -1)), f->ey), sym_expr_sub(a, f->ey, f->ex)},
    {sym_expr_mul(a, f->ex, yd), sym_expr_mul(a, yd, f->ex)},
    {sym_expr_max(a, f->ex, yd), sym_expr_max(a, yd, f->ex)},
  };
  for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; k++)
    if (simplified(f, pairs[k][0]) != simplified(f, pairs[k][1]))
      fail_msg("%s and %s: expected one node, got %s and %s", text(pairs[k][0]), text(pairs[k][1]),
               text(simplified(f, pairs[k][0])), text(simplified(f, pairs[k][1])));
}

/* 1 + d0 + ... + d15 (SYM_LINEAR_MAX dims, the limit), built upward into *up and downward into
 * *down; dims[SYM_LINEAR_MAX] is one more. */
static void sum_of_dims(fixture *f, sym_dim *dims, const sym_expr **up, const sym_expr **down) {
  sym_arena *a = f->arena;
  uopc_error err = {0};
  *up = sym_expr_const(a, 1), *down = sym_expr_const(a, 1);
  for (int k = 0; k <= SYM_LINEAR_MAX; k++) {
    char name[8];
    snprintf(name, sizeof name, "d%d", k);
    assert_uopc_ok(sym_dim_init(&dims[k], name, 1, 4, 1, &err), err);
  }
  for (int k = 0; k < SYM_LINEAR_MAX; k++) {
    *up = sym_expr_add(a, *up, sym_expr_dim(a, &dims[k]));
    *down = sym_expr_add(a, sym_expr_dim(a, &dims[SYM_LINEAR_MAX - 1 - k]), *down);
  }
}

/* A sum of SYM_LINEAR_MAX dims (the limit) and a constant, in two orders, is one node. */
static void test_sym_linear_add_holds_a_sum_at_the_term_limit(void **state) {
  fixture *f = *state;
  sym_arena *a = f->arena;
  sym_dim dims[SYM_LINEAR_MAX + 1];
  const sym_expr *up, *down;
  sum_of_dims(f, dims, &up, &down);
  if (simplified(f, up) != simplified(f, down))
    fail_msg("%s and %s: expected one node, got %s and %s", text(up), text(down),
             text(simplified(f, up)), text(simplified(f, down)));
  simplified(f, sym_expr_floordiv(a, up, sym_expr_const(a, 3)));   /* 16 terms in the remainder, none in q */
}

/* One more dim than SYM_LINEAR_MAX is UOPC_E_LIMIT. */
static void test_sym_linear_add_refuses_a_term_past_the_limit(void **state) {
  fixture *f = *state;
  sym_arena *a = f->arena;
  sym_dim dims[SYM_LINEAR_MAX + 1];
  const sym_expr *up, *down;
  uopc_error err = {0};
  sum_of_dims(f, dims, &up, &down);
  const sym_expr *more = sym_expr_add(a, up, sym_expr_dim(a, &dims[SYM_LINEAR_MAX])), *s = NULL;
  assert_uopc_code(sym_expr_simplify(a, more, &s, &err), UOPC_E_LIMIT, err);
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

/* big in [1, 2^62]: the intervals of big*4, big*(-4) + (-1), big*(-4) - 1 and big*4 - (-1) saturate instead of
 * overflowing, each end the way it overflows: down at INT64_MIN, up at INT64_MAX. */
static void expect_interval(const sym_expr *e, const char *what, int64_t lo, int64_t hi) {
  uopc_error err = {0};
  sym_interval r;
  assert_uopc_ok(sym_expr_interval(e, &r, &err), err);
  if (r.lo != lo || r.hi != hi)
    fail_msg("%s: expected [%lld, %lld], got [%lld, %lld]", what, (long long)lo, (long long)hi,
             (long long)r.lo, (long long)r.hi);
}

static sym_arena *big_arena(sym_dim *big) {
  sym_arena *a;
  uopc_error err = {0};
  assert_uopc_ok(sym_arena_new(&a, &err), err);
  assert_uopc_ok(sym_dim_init(big, "big", 1, INT64_MAX / 2, 1, &err), err);
  return a;
}

static void test_sym_expr_interval_saturates_a_product(void **state) {
  (void)state;
  sym_dim big;
  sym_arena *a = big_arena(&big);
  expect_interval(sym_expr_mul(a, sym_expr_dim(a, &big), sym_expr_const(a, 4)), "big*4 (big in [1, 2^62])", 4, INT64_MAX);
  /* w in [INT64_MIN, -1]: w*w is positive, and (-1) * INT64_MIN saturates up, not down */
  sym_dim w;
  uopc_error err = {0};
  assert_uopc_ok(sym_dim_init(&w, "w", INT64_MIN, -1, 1, &err), err);
  const sym_expr *ew = sym_expr_dim(a, &w);
  expect_interval(sym_expr_mul(a, ew, ew), "w*w for w in [INT64_MIN, -1]", 1, INT64_MAX);
  /* the negative factor first: (-4) * 2^62 saturates down, as big * (-4) does */
  expect_interval(sym_expr_mul(a, sym_expr_const(a, -4), sym_expr_dim(a, &big)), "(-4)*big (big in [1, 2^62])",
                  INT64_MIN, -4);
  sym_arena_free(a);
}

static void test_sym_expr_interval_saturates_a_sum_downward(void **state) {
  (void)state;
  sym_dim big;
  sym_arena *a = big_arena(&big);
  const sym_expr *e = sym_expr_add(a, sym_expr_mul(a, sym_expr_dim(a, &big), sym_expr_const(a, -4)),
                                   sym_expr_const(a, -1));
  expect_interval(e, "big*(-4) + (-1) (big in [1, 2^62])", INT64_MIN, -5);
  const sym_expr *down = sym_expr_mul(a, sym_expr_dim(a, &big), sym_expr_const(a, -4));
  expect_interval(sym_expr_sub(a, down, sym_expr_const(a, 1)), "big*(-4) - 1 (big in [1, 2^62])", INT64_MIN, -5);
  sym_arena_free(a);
}

/* A sum that overflows upward saturates to INT64_MAX, even when it adds only 1. */
static void test_sym_expr_interval_saturates_a_sum_upward(void **state) {
  (void)state;
  sym_dim big, top;
  uopc_error err = {0};
  sym_arena *a = big_arena(&big);
  const sym_expr *up = sym_expr_mul(a, sym_expr_dim(a, &big), sym_expr_const(a, 4));
  expect_interval(sym_expr_add(a, up, sym_expr_const(a, 1)), "big*4 + 1 (big in [1, 2^62])", 5, INT64_MAX);
  assert_uopc_ok(sym_dim_init(&top, "top", 0, INT64_MAX, 1, &err), err);
  expect_interval(sym_expr_add(a, sym_expr_dim(a, &top), sym_expr_const(a, 1)), "top + 1 (top in [0, INT64_MAX])",
                  1, INT64_MAX);
  sym_arena_free(a);
}

static void test_sym_expr_interval_saturates_a_difference_upward(void **state) {
  (void)state;
  sym_dim big;
  sym_arena *a = big_arena(&big);
  const sym_expr *e = sym_expr_sub(a, sym_expr_mul(a, sym_expr_dim(a, &big), sym_expr_const(a, 4)),
                                   sym_expr_const(a, -1));
  expect_interval(e, "big*4 - (-1) (big in [1, 2^62])", 5, INT64_MAX);
  sym_arena_free(a);
}

static void test_sym_expr_eval_reports_overflow(void **state) {
  fixture *f = *state;
  sym_arena *a = f->arena;
  const sym_expr *max = sym_expr_const(a, INT64_MAX), *min = sym_expr_const(a, INT64_MIN);
  const sym_expr *half = sym_expr_const(a, INT64_C(1) << 62), *one = sym_expr_const(a, 1), *two = sym_expr_const(a, 2);
  const struct { const sym_expr *e; const char *message; } cases[] = {
    {sym_expr_add(a, max, one), "9223372036854775807 + 1 overflows int64"},
    {sym_expr_sub(a, min, one), "-9223372036854775808 - 1 overflows int64"},
    {sym_expr_mul(a, half, two), "4611686018427387904 * 2 overflows int64"},
  };
  sym_binding b;
  sym_binding_init(&b);
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    uopc_error err = {0};
    int64_t v = 0;
    assert_uopc_code(sym_expr_eval(cases[k].e, &b, &v, &err), UOPC_E_OVERFLOW, err);
    assert_contains(err.message, cases[k].message);
  }
}

/* Tight, not only sound: a dim's bounds pulled in to its multiples, and min and max of
 * independent operands taken end by end. */
static void test_sym_expr_interval_is_tight_for_dims_min_and_max(void **state) {
  (void)state;
  sym_arena *a;
  uopc_error err = {0};
  static const int64_t cases[][5] = {   /* lo, hi, multiple_of, then the interval */
    {1, 4096, 16, 16, 4096}, {-7, 21, 4, -4, 20}, {-9, -1, 4, -8, -4}, {0, 10, 5, 0, 10}, {3, 9, 1, 3, 9},
  };
  assert_uopc_ok(sym_arena_new(&a, &err), err);
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    sym_dim n;
    sym_interval r;
    char name[8];   /* one arena holds one declaration of a name */
    snprintf(name, sizeof name, "n%zu", k);
    assert_uopc_ok(sym_dim_init(&n, name, cases[k][0], cases[k][1], cases[k][2], &err), err);
    assert_uopc_ok(sym_expr_interval(sym_expr_dim(a, &n), &r, &err), err);
    if (r.lo != cases[k][3] || r.hi != cases[k][4])
      fail_msg("n in [%lld, %lld], a multiple of %lld: expected [%lld, %lld], got [%lld, %lld]",
               (long long)cases[k][0], (long long)cases[k][1], (long long)cases[k][2], (long long)cases[k][3],
               (long long)cases[k][4], (long long)r.lo, (long long)r.hi);
  }
  sym_dim x;
  sym_interval r;
  assert_uopc_ok(sym_dim_init(&x, "x", -4, 4, 1, &err), err);
  const sym_expr *ex = sym_expr_dim(a, &x), *two = sym_expr_const(a, 2);
  const sym_expr *ends[4] = {sym_expr_min(a, ex, two), sym_expr_max(a, two, ex), sym_expr_max(a, ex, two),
                             sym_expr_min(a, two, ex)};
  static const int64_t want[4][2] = {{-4, 2}, {2, 4}, {2, 4}, {-4, 2}};
  for (int k = 0; k < 4; k++) {
    assert_uopc_ok(sym_expr_interval(ends[k], &r, &err), err);
    if (r.lo != want[k][0] || r.hi != want[k][1])
      fail_msg("%s with x in [-4, 4]: expected [%lld, %lld], got [%lld, %lld]", text(ends[k]),
               (long long)want[k][0], (long long)want[k][1], (long long)r.lo, (long long)r.hi);
  }
  sym_arena_free(a);
}

/* ---- Given: the arena, the dims of an expression, copies and text. */

#ifndef __SANITIZE_ADDRESS__
/* Allocation failure on demand: this executable's calloc comes before glibc's for the lab's
 * library too (ELF interposition) and passes every call through unless fail_calloc is set.
 * AddressSanitizer brings its own allocator, so its builds keep glibc's calloc. */
extern void *__libc_calloc(size_t n, size_t size);
static int fail_calloc;
void *calloc(size_t n, size_t size) { return fail_calloc ? NULL : __libc_calloc(n, size); }
#endif

static void test_sym_expr_simplify_reports_an_exhausted_arena(void **state) {
  fixture *f = *state;
#ifdef __SANITIZE_ADDRESS__
  (void)f;
  testutil_skip_under_asan("glibc's calloc, made to fail");
#else
  sym_arena *a;
  uopc_error err = {0};
  const sym_expr *out = NULL;
  assert_uopc_ok(sym_arena_new(&a, &err), err);
  const sym_expr *x = sym_expr_dim(a, &f->x), *xx = sym_expr_add(a, x, x);
  for (int k = 0; k < 254; k++) assert_non_null(sym_expr_const(a, 1000 + k));   /* 256 nodes: a full chunk */
  fail_calloc = 1;   /* x + x is 2*x: a new node, and no memory for it */
  int quiet = sym_expr_simplify(a, xx, &out, NULL);
  int rc = sym_expr_simplify(a, xx, &out, &err);
  fail_calloc = 0;
  assert_int_equal(quiet, UOPC_E_NOMEM);
  assert_uopc_code(rc, UOPC_E_NOMEM, err);
  assert_contains(err.message, "expression arena: out of memory");
  sym_arena_free(a);
#endif
}

/* x // 3 and x % 3 for x = v + 4 (v in [0, 10]) need the remainder v + 1, a node the full arena
 * cannot make: the division reports UOPC_E_NOMEM and leaves *out alone. */
static void test_sym_simplify_divmod_reports_an_exhausted_arena(void **state) {
  (void)state;
#ifdef __SANITIZE_ADDRESS__
  testutil_skip_under_asan("glibc's calloc, made to fail");
#else
  sym_arena *a;
  sym_dim v;
  uopc_error err = {0};
  assert_uopc_ok(sym_arena_new(&a, &err), err);
  assert_uopc_ok(sym_dim_init(&v, "v", 0, 10, 1, &err), err);
  const sym_expr *x = sym_expr_add(a, sym_expr_dim(a, &v), sym_expr_const(a, 4)), *three = sym_expr_const(a, 3);
  const sym_kind kinds[] = {SYM_FLOORDIV, SYM_MOD};
  for (int k = 0; k < 2; k++) {
    const sym_expr *out = three;
    fail_calloc = 1;   /* fill the arena: its next new node fails */
    for (int c = 0; c < 100000 && sym_expr_const(a, 1000000 + 100000 * k + c); c++) {}
    int rc = sym_simplify_divmod(a, kinds[k], x, three, &out, &err);
    fail_calloc = 0;
    assert_uopc_code(rc, UOPC_E_NOMEM, err);
    assert_ptr_equal(out, three);
  }
  sym_arena_free(a);
#endif
}

static void test_sym_expr_compare_is_a_total_order(void **state) {
  fixture *f = *state;
  sym_arena *a = f->arena;
  const sym_expr *x = f->ex, *y = f->ey, *d = f->ed, *two = sym_expr_const(a, 2);
  const sym_expr *e[] = {two, sym_expr_const(a, -3), x, y, d, sym_expr_add(a, x, y), sym_expr_add(a, y, x),
                         sym_expr_sub(a, x, two), sym_expr_mul(a, x, d), sym_expr_floordiv(a, x, d),
                         sym_expr_mod(a, y, d), sym_expr_min(a, x, y), sym_expr_max(a, x, y), sym_expr_max(a, x, d)};
  enum { N = sizeof e / sizeof e[0] };
  if (sym_expr_compare(sym_expr_mul(a, d, x), sym_expr_mul(a, x, y)) >= 0)   /* operands left to right */
    fail_msg("d*x and x*y: expected d*x first (d before x), got x*y first");
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      int ij = sym_expr_compare(e[i], e[j]), ji = sym_expr_compare(e[j], e[i]);
      if ((ij == 0) != (i == j) || (ij > 0) != (ji < 0))
        fail_msg("compare(%s, %s) = %d but compare(%s, %s) = %d", text(e[i]), text(e[j]), ij, text(e[j]),
                 text(e[i]), ji);
      for (int k = 0; k < N; k++)
        if (ij < 0 && sym_expr_compare(e[j], e[k]) < 0 && sym_expr_compare(e[i], e[k]) >= 0)
          fail_msg("%s < %s < %s, but not %s < %s", text(e[i]), text(e[j]), text(e[k]), text(e[i]), text(e[k]));
    }
}

static void test_sym_expr_null_operand_gives_null(void **state) {
  fixture *f = *state;
  sym_arena *a = f->arena;
  const sym_expr *(*const make[])(sym_arena *, const sym_expr *, const sym_expr *) = {
    sym_expr_add, sym_expr_sub, sym_expr_mul, sym_expr_floordiv, sym_expr_mod, sym_expr_min, sym_expr_max};
  for (size_t k = 0; k < sizeof make / sizeof make[0]; k++) {
    assert_null(make[k](a, NULL, f->ed));
    assert_null(make[k](a, f->ed, NULL));
  }
  assert_null(sym_expr_copy(a, NULL));
}

static void test_sym_arena_interns_equal_nodes_after_growing(void **state) {
  (void)state;
  enum { N = 3000 };   /* past the table's first sizes: it grows twice */
  sym_arena *a;
  uopc_error err = {0};
  static const sym_expr *first[N];
  assert_uopc_ok(sym_arena_new(&a, &err), err);
  for (int k = 0; k < N; k++) first[k] = sym_expr_add(a, sym_expr_const(a, k), sym_expr_const(a, -k));
  for (int k = 0; k < N; k++) {
    const sym_expr *again = sym_expr_add(a, sym_expr_const(a, k), sym_expr_const(a, -k));
    if (!first[k] || again != first[k])
      fail_msg("%d + %d built twice in one arena of %d nodes: expected one node, got two", k, -k, 3 * N);
  }
  sym_arena_free(a);
}

static size_t heap_in_use(void) {
  struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

static void test_sym_arena_free_returns_every_node(void **state) {
  (void)state;
  uopc_error err = {0};
  sym_arena *a;
  size_t before = heap_in_use();
  assert_uopc_ok(sym_arena_new(&a, &err), err);
  for (int k = 0; k < 20000; k++) assert_non_null(sym_expr_const(a, k));
  size_t full = heap_in_use();
  sym_arena_free(a);
  size_t after = heap_in_use();
  if (after > before + 65536)
    fail_msg("an arena of 20000 nodes held %zu bytes; after sym_arena_free %zu are still in use",
             full - before, after - before);
}

typedef struct dim_list { char names[8][SYM_NAME_MAX]; int count; } dim_list;

static void note_dim(const sym_dim *d, void *ctx) {
  dim_list *l = ctx;
  if (l->count < 8) snprintf(l->names[l->count], SYM_NAME_MAX, "%s", d->name);
  l->count++;
}

static void expect_dims(const sym_expr *e, const char *want) {
  dim_list l = {0};
  char got[128] = "";
  sym_expr_each_dim(e, note_dim, &l);
  for (int k = 0; k < l.count && k < 8; k++)
    snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", k ? " " : "", l.names[k]);
  if (strcmp(got, want) != 0)
    fail_msg("the dims of %s: expected \"%s\", got \"%s\" (%d calls)", text(e), want, got, l.count);
}

static void test_sym_expr_each_dim_names_each_dim_once_leftmost_first(void **state) {
  fixture *f = *state;
  sym_arena *a = f->arena;
  const sym_expr *x = f->ex, *y = f->ey, *d = f->ed, *two = sym_expr_const(a, 2);
  expect_dims(x, "x");
  expect_dims(two, "");
  expect_dims(sym_expr_add(a, sym_expr_mul(a, y, x), y), "y x");
  expect_dims(sym_expr_add(a, sym_expr_add(a, x, y), sym_expr_mul(a, d, x)), "x y d");
  expect_dims(sym_expr_max(a, sym_expr_sub(a, two, d), sym_expr_floordiv(a, sym_expr_add(a, x, d), d)), "d x");
  expect_dims(sym_expr_add(a, x, sym_expr_mul(a, x, y)), "x y");   /* one dim, one call */
}

/* A dim is its name within an arena: declaring it again with the same
 * bounds gives the same node, with other bounds is refused (the arena keeps
 * the error, naming both); loop variables of one name and two extents stay
 * two nodes, since loops one after the other reuse a name. */
static void test_sym_expr_dim_is_its_name_within_an_arena(void **state) {
  fixture *f = *state;
  sym_arena *a = f->arena;
  sym_dim again = f->ex->dim, wide, i_short, i_long;
  uopc_error err = {0};
  assert_ptr_equal(sym_expr_dim(a, &again), f->ex);
  assert_uopc_ok(sym_dim_init(&wide, "x", -8, 8, 1, &err), err);
  assert_uopc_ok(sym_dim_init(&i_short, "j", 0, 15, 1, &err), err);
  i_long = i_short;
  i_short.loop = i_long.loop = 1;
  i_long.hi = 63;
  const sym_expr *s = sym_expr_dim(a, &i_short), *l = sym_expr_dim(a, &i_long);
  assert_non_null(s);
  assert_non_null(l);
  assert_true(s != l);
  assert_true(sym_expr_compare(s, l) != 0);
  assert_int_equal(sym_arena_error(a)->code, UOPC_OK);
  assert_null(sym_expr_dim(a, &wide));
  assert_uopc_code(sym_arena_error(a)->code, UOPC_E_INVALID, *sym_arena_error(a));
  assert_string_equal(sym_arena_error(a)->message,
                      "dim 'x' is declared as [-4, 4] multiple of 1 and as [-8, 8] multiple of 1 in one arena"
                      " (narrow a bound with sym_scope_narrow)");
  assert_true(sym_dim_same(&wide, &f->ex->dim));
  assert_false(sym_dim_same(&i_short, &i_long));
}

static void test_sym_expr_copy_rebuilds_every_kind(void **state) {
  fixture *f = *state;
  sym_arena *a = f->arena, *b;
  uopc_error err = {0};
  const sym_expr *x = f->ex, *y = f->ey, *d = f->ed, *m3 = sym_expr_const(a, -3);
  const sym_expr *e = sym_expr_max(a, sym_expr_min(a, sym_expr_sub(a, x, y), sym_expr_mul(a, y, m3)),
                                   sym_expr_add(a, sym_expr_floordiv(a, x, d), sym_expr_mod(a, y, d)));
  assert_uopc_ok(sym_arena_new(&b, &err), err);
  const sym_expr *c = sym_expr_copy(b, e);
  if (!c) fail_msg("copy of %s: NULL (%s)", text(e), sym_arena_error(b)->message);
  if (sym_expr_compare(c, e) != 0 || strcmp(text(c), text(e)) != 0)
    fail_msg("copy of %s: got %s", text(e), text(c));
  /* A node's depth is one more than its deeper operand's, on either side. */
  const sym_expr *left = sym_expr_add(a, sym_expr_mul(a, sym_expr_add(a, x, y), d), x);
  const sym_expr *right = sym_expr_sub(a, y, sym_expr_mul(a, d, sym_expr_add(a, x, y)));
  if (e->depth != 3 || left->depth != 3 || right->depth != 3 || sym_expr_copy(b, left)->depth != 3)
    fail_msg("depths of %s, %s and %s: expected 3 each, got %d, %d and %d", text(e), text(left), text(right),
             e->depth, left->depth, right->depth);
  sym_arena_free(b);
}

static void expect_text(const sym_expr *e, const char *python, const char *c) {
  char got[256];
  uopc_error err = {0};
  assert_uopc_ok(sym_expr_format(e, got, sizeof got, &err), err);
  if (strcmp(got, python) != 0) fail_msg("expected the text \"%s\", got \"%s\"", python, got);
  assert_uopc_ok(sym_expr_to_c(e, got, sizeof got, &err), err);
  if (strcmp(got, c) != 0) fail_msg("%s: expected the C text \"%s\", got \"%s\"", python, c, got);
}

static void test_sym_expr_text_has_parentheses_only_where_needed(void **state) {
  fixture *f = *state;
  sym_arena *a = f->arena;
  const sym_expr *x = f->ex, *y = f->ey, *d = f->ed, *two = sym_expr_const(a, 2);
  const sym_expr *big = sym_expr_const(a, INT64_C(1) << 40), *neg = sym_expr_const(a, -3);
  expect_text(sym_expr_mul(a, x, two), "x*2", "x*2");
  expect_text(sym_expr_add(a, x, sym_expr_floordiv(a, y, two)), "x + y//2", "x + floordiv_i64(y, 2)");
  expect_text(sym_expr_floordiv(a, x, sym_expr_mul(a, d, two)), "x//(d*2)", "floordiv_i64(x, d*2)");
  expect_text(sym_expr_mul(a, sym_expr_mod(a, x, d), y), "x % d*y", "mod_i64(x, d)*y");
  expect_text(sym_expr_sub(a, x, sym_expr_sub(a, y, two)), "x - (y - 2)", "x - (y - 2)");
  expect_text(sym_expr_add(a, x, neg), "x + (-3)", "x + (-3)");
  expect_text(sym_expr_add(a, neg, x), "(-3) + x", "(-3) + x");
  expect_text(sym_expr_mul(a, x, sym_expr_const(a, -1)), "x*(-1)", "x*(-1)");
  char small[4];
  uopc_error err = {0};
  assert_uopc_code(sym_expr_format(sym_expr_add(a, x, y), small, sizeof small, &err), UOPC_E_LIMIT, err);
  assert_contains(err.message, "expression needs 6 bytes of text, 4 given");
  expect_text(sym_expr_mul(a, sym_expr_add(a, x, y), big), "(x + y)*1099511627776",
              "(x + y)*INT64_C(1099511627776)");
  expect_text(sym_expr_min(a, x, sym_expr_max(a, y, d)), "min(x, max(y, d))", "min_i64(x, max_i64(y, d))");
}

static void test_sym_expr_needs_helpers_for_division_min_and_max(void **state) {
  fixture *f = *state;
  sym_arena *a = f->arena;
  const sym_expr *x = f->ex, *y = f->ey, *d = f->ed;
  const sym_expr *plain = sym_expr_sub(a, sym_expr_mul(a, x, y), sym_expr_add(a, d, sym_expr_const(a, 1)));
  const sym_expr *calls[] = {sym_expr_floordiv(a, x, d), sym_expr_mod(a, x, d), sym_expr_min(a, x, y),
                             sym_expr_max(a, x, y), sym_expr_add(a, x, sym_expr_mul(a, y, sym_expr_mod(a, x, d)))};
  if (sym_expr_needs_helpers(x) || sym_expr_needs_helpers(plain))
    fail_msg("%s: expected no helpers, got a need", text(plain));
  for (size_t k = 0; k < sizeof calls / sizeof calls[0]; k++)
    if (!sym_expr_needs_helpers(calls[k])) fail_msg("%s: expected it to need SYM_C_HELPERS", text(calls[k]));
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_sym_expr_eval_floors_negative_operands, setup, teardown),
    cmocka_unit_test_setup_teardown(test_sym_expr_eval_reports_unbound_dim, setup, teardown),
    cmocka_unit_test_setup_teardown(test_sym_expr_eval_reports_overflow, setup, teardown),
    cmocka_unit_test(test_sym_expr_divisor_must_be_positive),
    cmocka_unit_test_setup_teardown(test_sym_expr_simplify_applies_identities_and_folds_constants, setup, teardown),
    cmocka_unit_test_setup_teardown(test_sym_expr_simplify_takes_the_content_out_of_a_product, setup, teardown),
    cmocka_unit_test_setup_teardown(test_sym_expr_simplify_divides_out_the_divisors_multiples, setup, teardown),
    cmocka_unit_test_setup_teardown(test_sym_expr_simplify_divides_out_only_the_divisor_itself, setup, teardown),
    cmocka_unit_test_setup_teardown(test_sym_expr_simplify_decides_the_quotient_from_bounds, setup, teardown),
    cmocka_unit_test_setup_teardown(test_sym_linear_add_combines_like_terms, setup, teardown),
    cmocka_unit_test_setup_teardown(test_sym_linear_add_gives_one_node_in_any_order, setup, teardown),
    cmocka_unit_test_setup_teardown(test_sym_linear_add_holds_a_sum_at_the_term_limit, setup, teardown),
    cmocka_unit_test_setup_teardown(test_sym_linear_add_refuses_a_term_past_the_limit, setup, teardown),
    cmocka_unit_test_setup_teardown(test_sym_expr_simplify_exhaustive_small_dims, setup, teardown),
    cmocka_unit_test(test_sym_expr_interval_saturates_a_product),
    cmocka_unit_test(test_sym_expr_interval_saturates_a_sum_downward),
    cmocka_unit_test(test_sym_expr_interval_saturates_a_sum_upward),
    cmocka_unit_test(test_sym_expr_interval_saturates_a_difference_upward),
    cmocka_unit_test(test_sym_expr_interval_is_tight_for_dims_min_and_max),
    cmocka_unit_test(test_sym_arena_interns_equal_nodes_after_growing),
    cmocka_unit_test_setup_teardown(test_sym_expr_simplify_reports_an_exhausted_arena, setup, teardown),
    cmocka_unit_test_setup_teardown(test_sym_simplify_divmod_reports_an_exhausted_arena, setup, teardown),
    cmocka_unit_test_setup_teardown(test_sym_expr_compare_is_a_total_order, setup, teardown),
    cmocka_unit_test_setup_teardown(test_sym_expr_null_operand_gives_null, setup, teardown),
    cmocka_unit_test(test_sym_arena_free_returns_every_node),
    cmocka_unit_test_setup_teardown(test_sym_expr_each_dim_names_each_dim_once_leftmost_first, setup, teardown),
    cmocka_unit_test_setup_teardown(test_sym_expr_dim_is_its_name_within_an_arena, setup, teardown),
    cmocka_unit_test_setup_teardown(test_sym_expr_copy_rebuilds_every_kind, setup, teardown),
    cmocka_unit_test_setup_teardown(test_sym_expr_text_has_parentheses_only_where_needed, setup, teardown),
    cmocka_unit_test_setup_teardown(test_sym_expr_needs_helpers_for_division_min_and_max, setup, teardown),
  };
  return cmocka_run_group_tests(tests, testutil_fresh_cache, testutil_remove_cache);
}
