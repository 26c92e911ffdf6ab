/* test_sym_fact.c: lab 23.1, scoped facts and the index-width decision.
 * The chapter's example: N in [1, 4096] and j in [0, N). Intervals alone
 * give j <= 4095 and N >= 1, which cannot show j < N; the loop's scope can,
 * and only inside the loop. */
#include "sym_fact.h"
#include "sym_index.h"
#include "testutil.h"

typedef struct fixture { sym_arena *arena; sym_dim n; const sym_expr *en; } fixture;

#ifndef __SANITIZE_ADDRESS__
/* Allocation failure on demand, as in test_sym_expr.c: this executable's calloc comes before
 * glibc's for the lab's library too (ELF interposition). */
extern void *__libc_calloc(size_t n, size_t size);
static int fail_calloc;
void *calloc(size_t n, size_t size) { return fail_calloc ? NULL : __libc_calloc(n, size); }
#endif

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  uopc_error err = {0};
  if (!f || sym_arena_new(&f->arena, &err) || sym_dim_init(&f->n, "N", 1, 4096, 1, &err)) return -1;
  f->en = sym_expr_dim(f->arena, &f->n);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  sym_arena_free(f->arena);
  free(f);
  return 0;
}

static int prove(const sym_scope *s, const sym_expr *l, const sym_expr *r) {
  int proved = -1;
  uopc_error err = {0};
  assert_uopc_ok(sym_scope_prove_lt(s, l, r, &proved, &err), err);
  return proved;
}

static void expect_proof(const sym_scope *s, const sym_expr *l, const sym_expr *r, int want,
                         const char *where) {
  char lt[128], rt[128];
  sym_expr_format(l, lt, sizeof lt, NULL);
  sym_expr_format(r, rt, sizeof rt, NULL);
  int got = prove(s, l, r);
  if (got != want)
    fail_msg("%s: query %s < %s: expected %s, got %s", where, lt, rt, want ? "proved" : "not proved",
             got ? "proved" : "not proved");
}

static void test_sym_scope_prove_lt_uses_the_loop_fact_inside_the_loop(void **state) {
  fixture *f = *state;
  sym_scope root, loop;
  const sym_expr *j;
  uopc_error err = {0};
  sym_scope_init(&root, NULL, f->arena);
  assert_uopc_ok(sym_scope_open_loop(&loop, &root, f->arena, "j", f->en, &j, &err), err);
  expect_proof(&loop, j, f->en, 1, "inside for j in [0, N)");
  expect_proof(&loop, j, sym_expr_add(f->arena, f->en, sym_expr_const(f->arena, 1)), 1,
               "inside the loop, a weaker bound");
  expect_proof(&loop, sym_expr_add(f->arena, j, sym_expr_const(f->arena, 1)), f->en, 0,
               "inside the loop, j + 1 < N is not implied");
}

static void test_sym_scope_prove_lt_fails_outside_the_loop(void **state) {
  fixture *f = *state;
  sym_scope root, loop, sibling;
  const sym_expr *j, *k;
  uopc_error err = {0};
  sym_scope_init(&root, NULL, f->arena);
  assert_uopc_ok(sym_scope_open_loop(&loop, &root, f->arena, "j", f->en, &j, &err), err);
  expect_proof(&root, j, f->en, 0, "in the enclosing scope");
  assert_uopc_ok(sym_scope_open_loop(&sibling, &root, f->arena, "k", f->en, &k, &err), err);
  expect_proof(&sibling, j, f->en, 0, "in a sibling loop");
  expect_proof(&sibling, k, f->en, 1, "in the sibling, its own variable");
}

static void test_sym_scope_intervals_alone_cannot_prove_j_below_n(void **state) {
  fixture *f = *state;
  sym_scope root, loop;
  const sym_expr *j;
  uopc_error err = {0};
  sym_interval ji, ni;
  sym_scope_init(&root, NULL, f->arena);
  assert_uopc_ok(sym_scope_open_loop(&loop, &root, f->arena, "j", f->en, &j, &err), err);
  assert_uopc_ok(sym_expr_interval(j, &ji, &err), err);
  assert_uopc_ok(sym_expr_interval(f->en, &ni, &err), err);
  if (ji.lo != 0 || ji.hi != 4095 || ni.lo != 1 || ni.hi != 4096)
    fail_msg("intervals: expected j in [0, 4095], N in [1, 4096]; got j in [%lld, %lld], N in [%lld, %lld]",
             (long long)ji.lo, (long long)ji.hi, (long long)ni.lo, (long long)ni.hi);
  /* Strictly below: 3 < 3 is not proved, 2 < 3 is, N < N + 1 is and N < N is not. */
  expect_proof(&root, sym_expr_const(f->arena, 3), sym_expr_const(f->arena, 3), 0, "3 < 3");
  expect_proof(&root, sym_expr_const(f->arena, 2), sym_expr_const(f->arena, 3), 1, "2 < 3");
  expect_proof(&root, f->en, sym_expr_add(f->arena, f->en, sym_expr_const(f->arena, 1)), 1, "N < N + 1");
  expect_proof(&root, f->en, f->en, 0, "N < N");
  /* A scope with no facts answers from intervals alone. */
  sym_scope bare;
  sym_scope_init(&bare, NULL, f->arena);
  expect_proof(&bare, j, f->en, 0, "intervals alone");
  expect_proof(&bare, j, sym_expr_const(f->arena, 4096), 1, "intervals alone, j < 4096");
}

/* The dim n in [1, 128] of f's arena; inner, a child of root, narrows it to
 * [16, 64], a multiple of 16. */
static const sym_expr *narrowed_n(fixture *f, sym_scope *root, sym_scope *inner) {
  sym_dim n;
  uopc_error err = {0};
  assert_uopc_ok(sym_dim_init(&n, "n", 1, 128, 1, &err), err);
  const sym_expr *en = sym_expr_dim(f->arena, &n);
  assert_non_null(en);
  sym_scope_init(root, NULL, f->arena);
  sym_scope_init(inner, root, f->arena);
  assert_uopc_ok(sym_scope_narrow(inner, en, 16, 64, 16, &err), err);
  return en;
}

static const sym_expr *cst(fixture *f, int64_t v) { return sym_expr_const(f->arena, v); }

/* Inside the scope that narrowed n (and in its descendants) n - 16 >= 0,
 * n % 16 == 0 and n < 65 hold; outside they are not proved. A fact k < n
 * made in the root proves k < 65 only where n <= 64. */
static void test_sym_scope_prove_lt_reads_bounds_narrowed_in_the_scope(void **state) {
  fixture *f = *state;
  sym_scope root, inner, loop;
  const sym_expr *n = narrowed_n(f, &root, &inner), *j;
  const sym_expr *n16 = sym_expr_sub(f->arena, n, cst(f, 16)), *mod = sym_expr_mod(f->arena, n, cst(f, 16));
  uopc_error err = {0};
  expect_proof(&inner, cst(f, -1), n16, 1, "n in [16, 64]: -1 < n - 16");
  expect_proof(&inner, mod, cst(f, 1), 1, "n a multiple of 16: n % 16 < 1");
  expect_proof(&inner, n, cst(f, 65), 1, "n in [16, 64]: n < 65");
  expect_proof(&root, cst(f, -1), n16, 0, "outside, n in [1, 128]: -1 < n - 16");
  expect_proof(&root, mod, cst(f, 1), 0, "outside: n % 16 < 1");
  expect_proof(&root, n, cst(f, 65), 0, "outside: n < 65");
  assert_uopc_ok(sym_scope_open_loop(&loop, &inner, f->arena, "j", n, &j, &err), err);
  expect_proof(&loop, cst(f, -1), n16, 1, "a loop inside the narrowed scope: -1 < n - 16");
  expect_proof(&loop, mod, cst(f, 1), 1, "a loop inside the narrowed scope: n % 16 < 1");
  sym_dim kd;
  assert_uopc_ok(sym_dim_init(&kd, "k", 0, 200, 1, &err), err);
  const sym_expr *k = sym_expr_dim(f->arena, &kd);
  assert_uopc_ok(sym_scope_assume_lt(&root, k, n, &err), err);
  expect_proof(&inner, k, cst(f, 65), 1, "the root's fact k < n with n <= 64 here");
  expect_proof(&root, k, cst(f, 65), 0, "the root's fact k < n with n <= 128");
}

/* n % 16 is 0 and n - 16 is [0, 48] in the narrowed scope; outside, and in a
 * NULL scope, the declared bounds answer. */
static void test_sym_scope_interval_reads_narrowed_bounds(void **state) {
  fixture *f = *state;
  sym_scope root, inner, sibling;
  const sym_expr *n = narrowed_n(f, &root, &inner);
  sym_scope_init(&sibling, &root, f->arena);
  struct { const sym_scope *s; const char *where; const sym_expr *e; int64_t lo, hi; } cases[] = {
    {&inner, "narrowed", sym_expr_mod(f->arena, n, cst(f, 16)), 0, 0},
    {&inner, "narrowed", sym_expr_sub(f->arena, n, cst(f, 16)), 0, 48},
    {&inner, "narrowed", sym_expr_floordiv(f->arena, n, cst(f, 16)), 1, 4},
    {&inner, "narrowed", sym_expr_sub(f->arena, sym_expr_mul(f->arena, n, cst(f, 2)), n), 16, 64},
    {&root, "root", sym_expr_mod(f->arena, n, cst(f, 16)), 0, 15},
    {&root, "root", sym_expr_sub(f->arena, n, cst(f, 16)), -15, 112},
    {&sibling, "sibling", sym_expr_sub(f->arena, n, cst(f, 16)), -15, 112},
    {NULL, "NULL scope", sym_expr_sub(f->arena, n, cst(f, 16)), -15, 112},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    sym_interval r;
    char text[64];
    uopc_error err = {0};
    assert_uopc_ok(sym_scope_interval(cases[c].s, cases[c].e, &r, &err), err);
    sym_expr_format(cases[c].e, text, sizeof text, NULL);
    if (r.lo != cases[c].lo || r.hi != cases[c].hi)
      fail_msg("%s: interval of %s: expected [%lld, %lld], got [%lld, %lld]", cases[c].where, text,
               (long long)cases[c].lo, (long long)cases[c].hi, (long long)r.lo, (long long)r.hi);
  }
}

/* Narrowing changes no node: n is the same pointer before and after, its
 * declaration is unchanged, and n - 16 + 16 simplifies to that node. */
static void test_sym_scope_narrow_keeps_the_dim_the_same_node(void **state) {
  fixture *f = *state;
  sym_scope root, inner;
  const sym_expr *n = narrowed_n(f, &root, &inner), *back;
  uopc_error err = {0};
  sym_dim again;
  assert_uopc_ok(sym_dim_init(&again, "n", 1, 128, 1, &err), err);
  assert_ptr_equal(sym_expr_dim(f->arena, &again), n);
  assert_uopc_ok(sym_expr_simplify(f->arena, sym_expr_add(f->arena, sym_expr_sub(f->arena, n, cst(f, 16)),
                                                          cst(f, 16)), &back, &err), err);
  assert_ptr_equal(back, n);
  const sym_dim *in = sym_scope_dim(&inner, &n->dim), *out = sym_scope_dim(&root, &n->dim);
  if (in->lo != 16 || in->hi != 64 || in->multiple_of != 16 || strcmp(in->name, "n") != 0)
    fail_msg("n in the narrowed scope: expected [16, 64] multiple of 16, got '%s' [%lld, %lld] multiple of %lld",
             in->name, (long long)in->lo, (long long)in->hi, (long long)in->multiple_of);
  assert_ptr_equal(out, &n->dim);
  if (n->dim.lo != 1 || n->dim.hi != 128 || n->dim.multiple_of != 1)
    fail_msg("n's declaration changed: [%lld, %lld] multiple of %lld", (long long)n->dim.lo,
             (long long)n->dim.hi, (long long)n->dim.multiple_of);
  /* Narrowing again in the same scope replaces the entry; a child narrows further. */
  sym_scope child;
  sym_scope_init(&child, &inner, f->arena);
  assert_uopc_ok(sym_scope_narrow(&inner, n, 32, 64, 16, &err), err);
  assert_uopc_ok(sym_scope_narrow(&child, n, 32, 32, 32, &err), err);
  assert_int_equal(inner.n_narrowed, 1);
  assert_int_equal(sym_scope_dim(&inner, &n->dim)->lo, 32);
  assert_int_equal(sym_scope_dim(&child, &n->dim)->multiple_of, 32);
}

static void expect_narrow_refused(sym_scope *s, const sym_expr *dim, int64_t lo, int64_t hi, int64_t m,
                                  int code, const char *message) {
  uopc_error err = {0};
  int before = s->n_narrowed;
  assert_uopc_code(sym_scope_narrow(s, dim, lo, hi, m, &err), code, err);
  if (strcmp(err.message, message) != 0)
    fail_msg("narrow to [%lld, %lld] multiple of %lld: expected \"%s\", got \"%s\"", (long long)lo, (long long)hi,
             (long long)m, message, err.message);
  assert_int_equal(s->n_narrowed, before);
}

/* A widening (past the bounds the scope already has, or a weaker multiple)
 * and an empty range are refused with both ranges named; the scope is
 * unchanged. */
static void test_sym_scope_narrow_refuses_widening_and_empty_ranges(void **state) {
  fixture *f = *state;
  sym_scope root, inner, child;
  const sym_expr *n = narrowed_n(f, &root, &inner);
  sym_scope_init(&child, &inner, f->arena);
  expect_narrow_refused(&root, n, 0, 64, 16, UOPC_E_INVALID,
                        "narrow dim 'n' to [0, 64] multiple of 16: wider than its [1, 128] multiple of 1 here");
  expect_narrow_refused(&child, n, 16, 80, 16, UOPC_E_INVALID,
                        "narrow dim 'n' to [16, 80] multiple of 16: wider than its [16, 64] multiple of 16 here");
  expect_narrow_refused(&child, n, 16, 64, 8, UOPC_E_INVALID,
                        "narrow dim 'n' to [16, 64] multiple of 8: wider than its [16, 64] multiple of 16 here");
  expect_narrow_refused(&child, n, 40, 47, 16, UOPC_E_INVALID,
                        "narrow dim 'n' to [40, 47] multiple of 16: no value is left");
  expect_narrow_refused(&child, n, 50, 40, 1, UOPC_E_INVALID, "narrow dim 'n' to [50, 40] multiple of 1: no value is left");
  expect_narrow_refused(&child, n, 16, 64, 0, UOPC_E_INVALID, "narrow dim 'n' to [16, 64] multiple of 0: no value is left");
  expect_narrow_refused(&child, sym_expr_add(f->arena, n, cst(f, 1)), 16, 64, 16, UOPC_E_INVALID,
                        "narrow: 'n + 1' is not a dim");
  uopc_error err = {0};
  for (int d = 0; d < SYM_SCOPE_NARROW_MAX; d++) {
    sym_dim dd;
    char name[8];
    snprintf(name, sizeof name, "d%d", d);
    assert_uopc_ok(sym_dim_init(&dd, name, 0, 10, 1, &err), err);
    assert_uopc_ok(sym_scope_narrow(&child, sym_expr_dim(f->arena, &dd), 1, 9, 1, &err), err);
  }
  expect_narrow_refused(&child, n, 16, 32, 16, UOPC_E_LIMIT, "narrow dim 'n': a scope narrows at most 8 dims");
  assert_int_equal(sym_scope_dim(&child, &n->dim)->hi, 64);
}

static void test_sym_scope_assume_lt_rejects_too_many_facts(void **state) {
  fixture *f = *state;
  sym_scope s;
  uopc_error err = {0};
  sym_scope_init(&s, NULL, f->arena);
  for (int k = 0; k < SYM_SCOPE_FACTS_MAX; k++)
    assert_uopc_ok(sym_scope_assume_lt(&s, sym_expr_const(f->arena, k), f->en, &err), err);
  assert_uopc_code(sym_scope_assume_lt(&s, f->en, f->en, &err), UOPC_E_LIMIT, err);
}

static void test_sym_scope_open_loop_checks_its_name_and_bound(void **state) {
  fixture *f = *state;
  sym_scope root, loop;
  const sym_expr *j = NULL;
  uopc_error err = {0};
  char longest[SYM_NAME_MAX], too_long[SYM_NAME_MAX + 1];
  memset(longest, 'j', sizeof longest - 1), longest[sizeof longest - 1] = '\0';
  memset(too_long, 'j', sizeof too_long - 1), too_long[sizeof too_long - 1] = '\0';
  sym_scope_init(&root, NULL, f->arena);
  assert_uopc_code(sym_scope_open_loop(&loop, &root, f->arena, NULL, f->en, &j, &err), UOPC_E_INVALID, err);
  assert_uopc_code(sym_scope_open_loop(&loop, &root, f->arena, too_long, f->en, &j, &err), UOPC_E_INVALID, err);
  assert_uopc_code(sym_scope_open_loop(&loop, &root, f->arena, "j", sym_expr_const(f->arena, 0), &j, &err),
                   UOPC_E_INVALID, err);
  assert_contains(err.message, "loop 'j' never runs: bound at most 0");
  assert_uopc_ok(sym_scope_open_loop(&loop, &root, f->arena, longest, f->en, &j, &err), err);
  /* The variable is the loop variable j in [0, N - 1] (a multiple of 1): the same node, and it
   * binds and evaluates like a dim. */
  assert_uopc_ok(sym_scope_open_loop(&loop, &root, f->arena, "j", f->en, &j, &err), err);
  sym_dim same;
  assert_uopc_ok(sym_dim_init(&same, "j", 0, 4095, 1, &err), err);
  same.loop = 1;
  if (sym_expr_dim(f->arena, &same) != j)
    fail_msg("loop j over [0, N): expected the dim j in [0, 4095], multiple of 1; got [%lld, %lld], multiple of %lld",
             (long long)loop.var.lo, (long long)loop.var.hi, (long long)loop.var.multiple_of);
  sym_binding b;
  int64_t v = 0;
  sym_binding_init(&b);
  assert_uopc_code(sym_dim_bind(&b, &loop.var, 4096, &err), UOPC_E_BOUNDS, err);
  assert_uopc_ok(sym_dim_bind(&b, &loop.var, 4095, &err), err);
  assert_uopc_ok(sym_expr_eval(sym_expr_add(f->arena, j, sym_expr_const(f->arena, 1)), &b, &v, &err), err);
  if (v != 4096) fail_msg("j + 1 at j = 4095: expected 4096, got %lld", (long long)v);
}

/* ---- Index width. */

static int width(int64_t b_hi, int64_t n_hi, int64_t *max_elements, uopc_error *err) {
  sym_arena *a;
  sym_dim b, n;
  sym_index_plan ix;
  assert_uopc_ok(sym_arena_new(&a, err), *err);
  assert_uopc_ok(sym_dim_init(&b, "B", 1, b_hi, 1, err), *err);
  assert_uopc_ok(sym_dim_init(&n, "N", 1, n_hi, 1, err), *err);
  const sym_expr *shape[2] = {sym_expr_dim(a, &b), sym_expr_dim(a, &n)};
  sym_index_init(&ix);
  int rc = sym_index_width(&ix, "x", shape, 2, err);
  *max_elements = ix.max_elements;
  sym_arena_free(a);
  return rc ? -rc : ix.bits;
}

static void expect_width(int64_t b_hi, int64_t n_hi, int want) {
  uopc_error err = {0};
  int64_t max;
  int got = width(b_hi, n_hi, &max, &err);
  if (got != want)
    fail_msg("(B, N) with B <= %lld, N <= %lld: expected %d-bit indices, got %d (%s)",
             (long long)b_hi, (long long)n_hi, want, got, err.message);
}

static void test_sym_index_width_is_32_when_bounds_allow(void **state) {
  (void)state;
  sym_index_plan fresh;
  sym_index_init(&fresh);   /* no extent seen yet: 32 bits, 0 elements */
  if (fresh.bits != 32 || fresh.max_elements != 0)
    fail_msg("sym_index_init: expected 32 bits and 0 elements, got %d and %lld", fresh.bits,
             (long long)fresh.max_elements);
  expect_width(8, 4096, 32);
  expect_width(1, INT32_MAX, 32);      /* every address and bound fits */
  expect_width(65535, 32768, 32);      /* 2147450880 elements */
}

static void test_sym_index_width_is_64_past_int32(void **state) {
  (void)state;
  expect_width(2, 1073741824, 64);     /* 2^31 elements: one past INT32_MAX */
  expect_width(65536, 65536, 64);
  expect_width(INT32_MAX, INT32_MAX, 64);
}

static void test_sym_index_width_rejects_products_past_int64(void **state) {
  (void)state;
  uopc_error err = {0};
  int64_t max;
  int got = width(INT64_C(1) << 40, INT64_C(1) << 40, &max, &err);
  if (got != -UOPC_E_OVERFLOW)
    fail_msg("B, N <= 2^40: expected UOPC_E_OVERFLOW, got %d (%s)", got, err.message);
  assert_contains(err.message, "buffer 'x' may hold 1099511627776 * 1099511627776 elements, past int64");
  /* The message names every extent, those after the one that overflowed too. */
  sym_arena *a;
  sym_dim b, n, c;
  sym_index_plan ix;
  assert_uopc_ok(sym_arena_new(&a, &err), err);
  assert_uopc_ok(sym_dim_init(&b, "B", 1, INT64_C(1) << 40, 1, &err), err);
  assert_uopc_ok(sym_dim_init(&n, "N", 1, INT64_C(1) << 40, 1, &err), err);
  assert_uopc_ok(sym_dim_init(&c, "C", 1, 3, 1, &err), err);
  const sym_expr *shape[5] = {sym_expr_dim(a, &c), sym_expr_dim(a, &b), sym_expr_dim(a, &n), sym_expr_dim(a, &c),
                              sym_expr_const(a, 5)};
  sym_index_init(&ix);
  assert_uopc_code(sym_index_width(&ix, "y", shape, 5, &err), UOPC_E_OVERFLOW, err);
  assert_contains(err.message, "buffer 'y' may hold 3 * 1099511627776 * 1099511627776 * 3 * 5 elements, past int64");
  /* A product too long to write is cut at 255 characters: 70 ones, then the overflow. */
  enum { ONES = 70 };
  const sym_expr *wide[ONES + 2];
  char want[512] = "";
  for (int k = 0; k < ONES; k++) wide[k] = sym_expr_const(a, 1);
  wide[ONES] = wide[ONES + 1] = sym_expr_dim(a, &b);
  for (int k = 0; k < ONES + 2; k++) strcat(want, k < ONES ? (k ? " * 1" : "1") : " * 1099511627776");
  snprintf(want + 255, sizeof want - 255, " elements, past int64");
  sym_index_init(&ix);
  assert_uopc_code(sym_index_width(&ix, "z", wide, ONES + 2, &err), UOPC_E_OVERFLOW, err);
  assert_contains(err.message, want);
  sym_arena_free(a);
}

static void test_sym_index_width_rejects_negative_extent(void **state) {
  (void)state;
  sym_arena *a;
  sym_dim m;
  sym_index_plan ix;
  uopc_error err = {0};
  assert_uopc_ok(sym_arena_new(&a, &err), err);
  assert_uopc_ok(sym_dim_init(&m, "m", -2, 5, 1, &err), err);
  const sym_expr *shape[1] = {sym_expr_dim(a, &m)};
  sym_index_init(&ix);
  assert_uopc_code(sym_index_width(&ix, "x", shape, 1, &err), UOPC_E_INVALID, err);
  /* An extent that may be 0 is not negative: an empty buffer is a buffer. */
  sym_dim z;
  assert_uopc_ok(sym_dim_init(&z, "z", 0, 5, 1, &err), err);
  const sym_expr *empty[2] = {sym_expr_const(a, 3), sym_expr_dim(a, &z)};
  assert_uopc_ok(sym_index_width(&ix, "y", empty, 2, &err), err);
  assert_int_equal(ix.max_elements, 15);
  assert_int_equal(ix.bits, 32);
  sym_arena_free(a);
}

/* A comparison with a fact that cannot be simplified (the arena is out of memory) is an error,
 * not "not proved": k < N + 1 is not shown by intervals (k in [0, 10]), so the prover goes on to
 * the loop's fact j < N, whose comparisons need nodes the arena no longer has. */
static void test_sym_scope_prove_lt_reports_a_failed_simplification(void **state) {
  fixture *f = *state;
#ifdef __SANITIZE_ADDRESS__
  (void)f;
  testutil_skip_under_asan("glibc's calloc, made to fail");
#else
  sym_arena *a = f->arena;
  sym_scope root, loop;
  sym_dim k;
  const sym_expr *j = NULL;
  uopc_error err = {0};
  assert_uopc_ok(sym_dim_init(&k, "k", 0, 10, 1, &err), err);
  const sym_expr *ek = sym_expr_dim(a, &k), *rhs = sym_expr_add(a, f->en, sym_expr_const(a, 1));
  sym_scope_init(&root, NULL, a);
  assert_uopc_ok(sym_scope_open_loop(&loop, &root, a, "j", f->en, &j, &err), err);
  expect_proof(&root, ek, rhs, 0, "no fact in scope");   /* the interval test's nodes, made once */
  const sym_expr *rhs2 = sym_expr_add(a, f->en, sym_expr_const(a, 2));   /* k + 1 <= N + 2: not made yet */
  fail_calloc = 1;   /* fill the arena: its next new node fails */
  for (int v = 0; v < 100000 && sym_expr_const(a, 1000000 + v); v++) {}
  int proved = -1, rc = sym_scope_prove_lt(&loop, ek, rhs, &proved, &err);
  assert_int_equal(sym_arena_error(a)->code, UOPC_E_NOMEM);
  if (rc == UOPC_OK) fail_msg("k < N + 1 in the loop j < N with the arena out of memory: expected an error, got UOPC_OK");
  assert_int_equal(proved, 0);
  /* where no fact is left to try, the interval test's own failure is the answer */
  proved = -1, rc = sym_scope_prove_lt(&root, ek, rhs2, &proved, &err);
  fail_calloc = 0;
  if (rc == UOPC_OK) fail_msg("k < N + 2 with no fact and the arena out of memory: expected an error, got UOPC_OK");
  assert_int_equal(proved, 0);
#endif
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_sym_scope_prove_lt_uses_the_loop_fact_inside_the_loop, setup, teardown),
    cmocka_unit_test_setup_teardown(test_sym_scope_prove_lt_fails_outside_the_loop, setup, teardown),
    cmocka_unit_test_setup_teardown(test_sym_scope_intervals_alone_cannot_prove_j_below_n, setup, teardown),
    cmocka_unit_test_setup_teardown(test_sym_scope_prove_lt_reads_bounds_narrowed_in_the_scope, setup, teardown),
    cmocka_unit_test_setup_teardown(test_sym_scope_interval_reads_narrowed_bounds, setup, teardown),
    cmocka_unit_test_setup_teardown(test_sym_scope_narrow_keeps_the_dim_the_same_node, setup, teardown),
    cmocka_unit_test_setup_teardown(test_sym_scope_narrow_refuses_widening_and_empty_ranges, setup, teardown),
    cmocka_unit_test_setup_teardown(test_sym_scope_assume_lt_rejects_too_many_facts, setup, teardown),
    cmocka_unit_test_setup_teardown(test_sym_scope_open_loop_checks_its_name_and_bound, setup, teardown),
    cmocka_unit_test_setup_teardown(test_sym_scope_prove_lt_reports_a_failed_simplification, setup, teardown),
    cmocka_unit_test(test_sym_index_width_is_32_when_bounds_allow),
    cmocka_unit_test(test_sym_index_width_is_64_past_int32),
    cmocka_unit_test(test_sym_index_width_rejects_products_past_int64),
    cmocka_unit_test(test_sym_index_width_rejects_negative_extent),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
