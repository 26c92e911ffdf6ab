/* test_alias.c: lab 23.3, alias analysis. alias_decide's five rules on
 * symbolic layouts built by hand (as mv_view_layout would build them: a
 * view's element idx is offset + sum_k strides[k]*idx[k] of its storage),
 * and a property test on constant layouts against brute-force element sets;
 * alias_guard_disjoint exhaustively against brute force on small views, on
 * strides near the int64 limits, and on its errors. */
#include "alias.h"
#include "testutil.h"

typedef struct fixture { sym_arena *ar; } fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  uopc_error err = {0};
  if (!f || sym_arena_new(&f->ar, &err)) return -1;
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  sym_arena_free(f->ar);
  free(f);
  return 0;
}

/* ---- Building layouts. */

static const sym_expr *k(fixture *f, int64_t v) { return sym_expr_const(f->ar, v); }

static const sym_expr *dim(fixture *f, const char *name, int64_t lo, int64_t hi, int64_t multiple_of) {
  sym_dim d;
  uopc_error err = {0};
  assert_uopc_ok(sym_dim_init(&d, name, lo, hi, multiple_of, &err), err);
  return sym_expr_dim(f->ar, &d);
}

static const sym_expr *add(fixture *f, const sym_expr *x, const sym_expr *y) { return sym_expr_add(f->ar, x, y); }
static const sym_expr *sub(fixture *f, const sym_expr *x, const sym_expr *y) { return sym_expr_sub(f->ar, x, y); }
static const sym_expr *mul(fixture *f, const sym_expr *x, const sym_expr *y) { return sym_expr_mul(f->ar, x, y); }
static const sym_expr *div2(fixture *f, const sym_expr *x) { return sym_expr_floordiv(f->ar, x, k(f, 2)); }

/* offset + stride*i, i in [0, extent). */
static mv_layout line(const sym_expr *extent, const sym_expr *stride, const sym_expr *offset) {
  mv_layout l = {0};
  l.rank = 1;
  l.shape[0] = extent, l.strides[0] = stride, l.offset = offset;
  return l;
}

static mv_layout grid(const sym_expr *e0, const sym_expr *e1, const sym_expr *s0, const sym_expr *s1,
                      const sym_expr *offset) {
  mv_layout l = {0};
  l.rank = 2;
  l.shape[0] = e0, l.shape[1] = e1, l.strides[0] = s0, l.strides[1] = s1, l.offset = offset;
  return l;
}

static alias_result decide(fixture *f, const mv_layout *a, const mv_layout *b) {
  alias_result r;
  uopc_error err = {0};
  assert_uopc_ok(alias_decide(a, b, f->ar, &r, &err), err);
  return r;
}

/* Both orders give want, for the rule whose name is in reason. */
static void expect_answer(fixture *f, const mv_layout *a, const mv_layout *b, alias_answer want, const char *reason,
                          const char *what) {
  for (int order = 0; order < 2; order++) {
    alias_result r = order ? decide(f, b, a) : decide(f, a, b);
    if (r.answer != want || !strstr(r.reason, reason))
      fail_msg("%s%s: expected %s (\"%s\"), got %s (\"%s\")", what, order ? ", operands exchanged" : "",
               alias_answer_name(want), reason, alias_answer_name(r.answer), r.reason);
  }
}

/* ---- alias_decide, rule by rule. */

static void test_alias_answer_name_names_each_answer(void **state) {
  (void)state;
  assert_string_equal(alias_answer_name(ALIAS_DISJOINT), "disjoint");
  assert_string_equal(alias_answer_name(ALIAS_OVERLAP), "overlap");
  assert_string_equal(alias_answer_name(ALIAS_UNKNOWN), "unknown");
}

static void test_alias_empty_view_is_disjoint_from_everything(void **state) {
  fixture *f = *state;
  const sym_expr *n = dim(f, "n", 1, 64, 1), *z = dim(f, "z", 0, 0, 1);
  mv_layout whole = line(n, k(f, 1), k(f, 0)), none = line(k(f, 0), k(f, 1), k(f, 0));
  mv_layout none_sym = grid(n, z, k(f, 1), k(f, 1), k(f, 3));
  expect_answer(f, &none, &whole, ALIAS_DISJOINT, "empty", "a[0:0] and a");
  expect_answer(f, &none, &none, ALIAS_DISJOINT, "empty", "a[0:0] and itself");
  expect_answer(f, &none_sym, &whole, ALIAS_DISJOINT, "empty", "an extent z in [0, 0]");
}

static void test_alias_halves_split_at_n_over_2_are_disjoint_by_ranges(void **state) {
  fixture *f = *state;
  const sym_expr *n = dim(f, "n", 2, 64, 2), *h = div2(f, n);
  mv_layout lower = line(h, k(f, 1), k(f, 0));        /* a[:n//2] */
  mv_layout upper = line(sub(f, n, h), k(f, 1), h);   /* a[n//2:] */
  expect_answer(f, &lower, &upper, ALIAS_DISJOINT, "ranges", "a[:n//2] and a[n//2:]");
  alias_result r = decide(f, &lower, &upper);
  assert_contains(r.reason, "a in [0, n//2 - 1]");
  /* Each end's text is whole up to 39 characters: b's last element is a 31-character name + 12345. */
  const sym_expr *m = dim(f, "a_dimension_named_in_31_letters", 1, 64, 1);
  mv_layout head = line(k(f, 4), k(f, 1), k(f, 0)), far = line(m, k(f, 1), k(f, 12346));
  r = decide(f, &head, &far);
  assert_string_equal(r.reason, "ranges (a in [0, 3], b in [12346, a_dimension_named_in_31_letters + 12345])");
}

static void test_alias_reversed_half_is_disjoint_by_ranges_from_the_other_half(void **state) {
  fixture *f = *state;
  const sym_expr *n = dim(f, "n", 1, 64, 1);
  mv_layout reversed = line(n, k(f, -1), sub(f, n, k(f, 1)));   /* b[:n][::-1] of b with 2n elements */
  mv_layout upper = line(n, k(f, 1), n);                        /* b[n:] */
  expect_answer(f, &reversed, &upper, ALIAS_DISJOINT, "ranges", "b[:n][::-1] and b[n:]");
}

static void test_alias_interleaved_slices_are_disjoint_by_residue(void **state) {
  fixture *f = *state;
  const sym_expr *n = dim(f, "n", 2, 64, 2);
  mv_layout even = line(div2(f, add(f, n, k(f, 1))), k(f, 2), k(f, 0));   /* a[0::2] */
  mv_layout odd = line(div2(f, n), k(f, 2), k(f, 1));                     /* a[1::2] */
  expect_answer(f, &even, &odd, ALIAS_DISJOINT, "residues mod 2", "a[0::2] and a[1::2]");
}

static void test_alias_residue_rule_uses_the_gcd_of_the_strides(void **state) {
  fixture *f = *state;
  const sym_expr *n = dim(f, "n", 2, 64, 1);
  mv_layout by4 = line(n, k(f, 4), k(f, 1)), by6 = line(n, k(f, -6), k(f, 2));   /* 1 + 4i and 2 - 6j: gcd 2 */
  mv_layout by6_from_5 = line(n, k(f, 6), k(f, 5));                             /* 5 - 1 = 4: even, so maybe */
  expect_answer(f, &by4, &by6, ALIAS_DISJOINT, "residues mod 2", "strides 4 and -6, offsets 1 and 2");
  expect_answer(f, &by4, &by6_from_5, ALIAS_OVERLAP, "shared element", "5 is 1 + 4*1");
  assert_contains(decide(f, &by4, &by6_from_5).reason, "b's first is a's element 1");
}

static void test_alias_drops_axes_of_extent_one_before_the_residue_rule(void **state) {
  fixture *f = *state;
  const sym_expr *n = dim(f, "n", 2, 64, 2);
  /* a[0:1, 0::2] and a[0:1, 1::2] of an (m, n) array: rank 2, but one axis of extent 1. */
  mv_layout even = grid(k(f, 1), div2(f, add(f, n, k(f, 1))), n, k(f, 2), k(f, 0));
  mv_layout odd = grid(k(f, 1), div2(f, n), n, k(f, 2), k(f, 1));
  expect_answer(f, &even, &odd, ALIAS_DISJOINT, "residues mod 2", "rows of extent 1, interleaved columns");
}

static void test_alias_shifted_slices_are_unknown_when_n_may_be_2(void **state) {
  fixture *f = *state;
  const sym_expr *n = dim(f, "n", 2, 64, 1), *m1 = sub(f, n, k(f, 1));
  mv_layout tail = line(m1, k(f, 1), k(f, 1)), head = line(m1, k(f, 1), k(f, 0));   /* a[1:], a[:-1] */
  /* n = 2: {1} and {0}, disjoint; n = 3: {1, 2} and {0, 1}, overlapping. */
  expect_answer(f, &tail, &head, ALIAS_UNKNOWN, "depends on the binding", "a[1:] and a[:-1], n in [2, 64]");
}

static void test_alias_shifted_slices_overlap_when_n_is_at_least_3(void **state) {
  fixture *f = *state;
  const sym_expr *n = dim(f, "n", 3, 64, 1), *m1 = sub(f, n, k(f, 1));
  mv_layout tail = line(m1, k(f, 1), k(f, 1)), head = line(m1, k(f, 1), k(f, 0));
  expect_answer(f, &tail, &head, ALIAS_OVERLAP, "shared element", "a[1:] and a[:-1], n in [3, 64]");
  alias_result r = decide(f, &head, &tail);
  assert_contains(r.reason, "b's first is a's element 1");
}

static void test_alias_shared_element_needs_both_views_nonempty(void **state) {
  fixture *f = *state;
  const sym_expr *m = dim(f, "m", 0, 4, 1), *m1 = dim(f, "m1", 1, 4, 1);
  mv_layout a = line(k(f, 8), k(f, 1), k(f, 0));
  mv_layout maybe_empty = line(m, k(f, 1), k(f, 3)), nonempty = line(m1, k(f, 1), k(f, 3));   /* a[3:3+m] */
  expect_answer(f, &a, &maybe_empty, ALIAS_UNKNOWN, "depends on the binding", "a[3:3+m], m in [0, 4]");
  expect_answer(f, &a, &nonempty, ALIAS_OVERLAP, "shared element", "a[3:3+m], m in [1, 4]");
}

static void test_alias_negative_stride_constant_views_use_residues_and_shared_elements(void **state) {
  fixture *f = *state;
  mv_layout rev2 = line(k(f, 4), k(f, -2), k(f, 7));   /* a[::-2] of 8: 7, 5, 3, 1 */
  mv_layout even = line(k(f, 4), k(f, 2), k(f, 0));    /* a[::2]: 0, 2, 4, 6 */
  mv_layout rev = line(k(f, 8), k(f, -1), k(f, 7));    /* a[::-1] */
  mv_layout mid = line(k(f, 2), k(f, 1), k(f, 3));     /* a[3:5] */
  mv_layout rev3 = line(k(f, 3), k(f, -3), k(f, 7));   /* a[::-3]: 7, 4, 1 */
  mv_layout from2 = line(k(f, 2), k(f, 3), k(f, 2));   /* a[2::3]: 2, 5 */
  expect_answer(f, &rev2, &even, ALIAS_DISJOINT, "residues mod 2", "a[::-2] and a[::2]");
  expect_answer(f, &rev, &mid, ALIAS_OVERLAP, "shared element", "a[::-1] and a[3:5]");
  expect_answer(f, &rev3, &from2, ALIAS_DISJOINT, "residues mod 3", "a[::-3] and a[2::3]");
}

static void test_alias_same_view_overlaps(void **state) {
  fixture *f = *state;
  const sym_expr *n = dim(f, "n", 1, 16, 1);
  mv_layout a = grid(n, k(f, 4), k(f, 4), k(f, 1), k(f, 0));
  /* The same layout written differently: 2n - n rows, stride 2*2, offset n - n. */
  mv_layout b = grid(sub(f, mul(f, k(f, 2), n), n), k(f, 4), mul(f, k(f, 2), k(f, 2)), k(f, 1), sub(f, n, n));
  expect_answer(f, &a, &b, ALIAS_OVERLAP, "same view", "a and a, 2-D");
  mv_layout scalar = {0};
  scalar.rank = 0, scalar.offset = n;
  expect_answer(f, &scalar, &scalar, ALIAS_OVERLAP, "shared element", "a[n] and a[n], rank 0");
}

static void test_alias_same_view_that_may_be_empty_is_unknown(void **state) {
  fixture *f = *state;
  const sym_expr *n = dim(f, "n", 0, 16, 1);
  mv_layout a = grid(n, k(f, 4), k(f, 4), k(f, 1), k(f, 0));
  expect_answer(f, &a, &a, ALIAS_UNKNOWN, "depends on the binding", "a and a, n may be 0");
}

static void test_alias_two_dim_views_are_decided_by_ranges_or_left_unknown(void **state) {
  fixture *f = *state;
  const sym_expr *n = dim(f, "n", 4, 64, 1);
  /* a[:, 0::2] and a[:, 1::2] of an (n, 4) array: disjoint, but no rule sees it at rank 2. */
  mv_layout even = grid(n, k(f, 2), k(f, 4), k(f, 2), k(f, 0)), odd = grid(n, k(f, 2), k(f, 4), k(f, 2), k(f, 1));
  expect_answer(f, &even, &odd, ALIAS_UNKNOWN, "depends on the binding", "a[:, 0::2] and a[:, 1::2]");
  /* a[:2] and a[2:4]: rows 0-1 end at element 7, rows 2-3 start at 8. */
  mv_layout top = grid(k(f, 2), k(f, 4), k(f, 4), k(f, 1), k(f, 0)), next = grid(k(f, 2), k(f, 4), k(f, 4), k(f, 1), k(f, 8));
  expect_answer(f, &top, &next, ALIAS_DISJOINT, "ranges", "a[:2] and a[2:4]");
  alias_result r = decide(f, &top, &next);   /* the reason gives each hull's own ends */
  assert_string_equal(r.reason, "ranges (a in [0, 7], b in [8, 15])");
  /* a[:, 1] and a[1] share a[1, 1], but rule 4 looks only at each view's first element. */
  mv_layout column = line(n, k(f, 4), k(f, 1)), row = line(k(f, 4), k(f, 1), k(f, 4));
  expect_answer(f, &column, &row, ALIAS_UNKNOWN, "depends on the binding", "a[:, 1] and a[1]");
}

static void test_alias_decide_rejects_null_and_bad_rank(void **state) {
  fixture *f = *state;
  mv_layout good = line(k(f, 4), k(f, 1), k(f, 0)), bad = good, hole = good;
  alias_result r;
  uopc_error err = {0};
  assert_uopc_code(alias_decide(NULL, &good, f->ar, &r, &err), UOPC_E_INVALID, err);
  assert_uopc_code(alias_decide(&good, NULL, f->ar, &r, &err), UOPC_E_INVALID, err);
  assert_uopc_code(alias_decide(&good, &good, NULL, &r, &err), UOPC_E_INVALID, err);
  assert_uopc_code(alias_decide(&good, &good, f->ar, NULL, &err), UOPC_E_INVALID, err);
  bad.rank = UOPC_MAX_RANK + 1;
  assert_uopc_code(alias_decide(&good, &bad, f->ar, &r, &err), UOPC_E_INVALID, err);
  assert_contains(err.message, "rank 9 outside [0, 8]");
  bad.rank = -1;
  assert_uopc_code(alias_decide(&bad, &good, f->ar, &r, &err), UOPC_E_INVALID, err);
  hole.strides[0] = NULL;
  assert_uopc_code(alias_decide(&good, &hole, f->ar, &r, &err), UOPC_E_INVALID, err);
}

/* ---- alias_decide on random constant layouts, against brute force. */

enum { STORE = 64 };

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t next_random(void) {   /* xorshift64: the same sequence on every run */
  rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
  return rng_state;
}

static int64_t uniform(int64_t lo, int64_t hi) { return lo + (int64_t)(next_random() % (uint64_t)(hi - lo + 1)); }

typedef struct small_view { int rank; int64_t shape[2], strides[2], offset; } small_view;

/* A random view of rank 1 or 2, extents in [0, 5] and strides in [-s, s],
 * whose elements lie in [0, window): a small window makes overlaps common.
 * The span is at most 2*s*4, so window > 8*s always leaves room. */
static small_view random_view(int64_t s, int64_t window) {
  small_view v;
  int64_t lo = 0, hi = 0;
  v.rank = (int)uniform(1, 2);
  for (int i = 0; i < v.rank; i++) {
    v.shape[i] = uniform(0, 5), v.strides[i] = uniform(-s, s);
    int64_t reach = v.strides[i] * (v.shape[i] > 0 ? v.shape[i] - 1 : 0);
    if (reach < 0) lo += reach;
    else hi += reach;
  }
  v.offset = uniform(-lo, window - 1 - hi);
  return v;
}

static uint64_t elements(const small_view *v) {
  uint64_t set = 0;
  int64_t n1 = v->rank == 2 ? v->shape[1] : 1, s1 = v->rank == 2 ? v->strides[1] : 0;
  for (int64_t i = 0; i < v->shape[0]; i++)
    for (int64_t j = 0; j < n1; j++) set |= 1ull << (v->offset + i * v->strides[0] + j * s1);
  return set;
}

static mv_layout constant_layout(sym_arena *ar, const small_view *v) {
  mv_layout l = {0};
  l.rank = v->rank;
  l.offset = sym_expr_const(ar, v->offset);
  for (int i = 0; i < v->rank; i++)
    l.shape[i] = sym_expr_const(ar, v->shape[i]), l.strides[i] = sym_expr_const(ar, v->strides[i]);
  return l;
}

static void test_alias_decide_property_answers_hold_for_random_constant_layouts(void **state) {
  (void)state;
  int counts[3] = {0, 0, 0};
  for (int trial = 0; trial < 8000; trial++) {
    sym_arena *ar;
    uopc_error err = {0};
    assert_uopc_ok(sym_arena_new(&ar, &err), err);
    int64_t s = trial % 2 ? 2 : 6, window = trial % 2 ? 20 : STORE;
    small_view va = random_view(s, window), vb = random_view(s, window);
    mv_layout a = constant_layout(ar, &va), b = constant_layout(ar, &vb);
    alias_result r;
    assert_uopc_ok(alias_decide(&a, &b, ar, &r, &err), err);
    int shared = (elements(&va) & elements(&vb)) != 0;
    if ((r.answer == ALIAS_DISJOINT && shared) || (r.answer == ALIAS_OVERLAP && !shared))
      fail_msg("trial %d: a = rank %d shape (%lld, %lld) strides (%lld, %lld) offset %lld, b = rank %d shape (%lld, "
               "%lld) strides (%lld, %lld) offset %lld: said %s (\"%s\") but they %s",
               trial, va.rank, (long long)va.shape[0], (long long)(va.rank > 1 ? va.shape[1] : 0),
               (long long)va.strides[0], (long long)(va.rank > 1 ? va.strides[1] : 0), (long long)va.offset, vb.rank,
               (long long)vb.shape[0], (long long)(vb.rank > 1 ? vb.shape[1] : 0), (long long)vb.strides[0],
               (long long)(vb.rank > 1 ? vb.strides[1] : 0), (long long)vb.offset, alias_answer_name(r.answer),
               r.reason, shared ? "share an element" : "share none");
    counts[r.answer]++;
    sym_arena_free(ar);
  }
  /* Not vacuous: each answer occurs often. */
  if (counts[ALIAS_DISJOINT] < 1000 || counts[ALIAS_OVERLAP] < 200 || counts[ALIAS_UNKNOWN] < 500)
    fail_msg("answers: %d disjoint, %d overlap, %d unknown; expected each to occur", counts[0], counts[1], counts[2]);
}

/* ---- alias_guard_disjoint. */

enum { GUARD_STORE = 16 };

/* A view of base's storage with hand-set numbers (no reference of its own:
 * the guard only reads it, and it is never released). */
static uopc_tensor raw_view(const uopc_tensor *base, int rank, const int64_t *shape, const int64_t *strides,
                            int64_t offset) {
  uopc_tensor v = *base;
  v.rank = rank;
  for (int i = 0; i < rank; i++) v.shape[i] = shape[i], v.strides[i] = strides[i];
  v.offset = offset;
  return v;
}

static int guard(const uopc_tensor *a, const uopc_tensor *b) {
  int disjoint = -1;
  uopc_error err = {0};
  assert_uopc_ok(alias_guard_disjoint(a, b, &disjoint, &err), err);
  return disjoint;
}

typedef struct guard_case { uopc_tensor view; uint64_t set; } guard_case;

/* Every 1-D view of GUARD_STORE elements with offset in [0, 16), stride in
 * [-3, 3] and length in [0, 4], in bounds; each also as (1, n) and (n, 1),
 * whose axis of extent 1 carries a stride that must not matter. */
static int all_small_views(const uopc_tensor *base, guard_case *out) {
  int count = 0;
  for (int64_t o = 0; o < GUARD_STORE; o++)
    for (int64_t s = -3; s <= 3; s++)
      for (int64_t n = 0; n <= 4; n++) {
        int64_t last = o + s * (n > 0 ? n - 1 : 0);
        if (last < 0 || last >= GUARD_STORE) continue;
        uint64_t set = 0;
        for (int64_t i = 0; i < n; i++) set |= 1ull << (o + i * s);
        int64_t row[2] = {1, n}, row_s[2] = {7, s}, col[2] = {n, 1}, col_s[2] = {s, -5};
        out[count++] = (guard_case){raw_view(base, 1, &n, &s, o), set};
        out[count++] = (guard_case){raw_view(base, 2, row, row_s, o), set};
        out[count++] = (guard_case){raw_view(base, 2, col, col_s, o), set};
      }
  return count;
}

static void test_alias_guard_disjoint_matches_brute_force_on_every_small_1d_view(void **state) {
  (void)state;
  uopc_tensor base = {0};
  uopc_error err = {0};
  int64_t n = GUARD_STORE;
  assert_uopc_ok(uopc_tensor_empty(&base, UOPC_F32, 1, &n, &err), err);
  static guard_case cases[GUARD_STORE * 7 * 5 * 3];
  int count = all_small_views(&base, cases);
  long pairs = 0, disjoint_pairs = 0;
  for (int i = 0; i < count; i++)
    for (int j = 0; j < count; j++) {
      int want = (cases[i].set & cases[j].set) == 0, got = guard(&cases[i].view, &cases[j].view);
      if (got != want) {
        const uopc_tensor *a = &cases[i].view, *b = &cases[j].view;
        fail_msg("a: rank %d shape %lld stride %lld offset %lld; b: rank %d shape %lld stride %lld offset %lld: "
                 "expected disjoint = %d, got %d",
                 a->rank, (long long)a->shape[0], (long long)a->strides[0], (long long)a->offset, b->rank,
                 (long long)b->shape[0], (long long)b->strides[0], (long long)b->offset, want, got);
      }
      pairs++, disjoint_pairs += want;
    }
  if (pairs < 500000 || disjoint_pairs < pairs / 4) fail_msg("only %ld pairs, %ld disjoint", pairs, disjoint_pairs);
  uopc_tensor_release(&base);
}

static void test_alias_guard_disjoint_is_conservative_beyond_rank_1(void **state) {
  (void)state;
  uopc_tensor base = {0};
  uopc_error err = {0};
  int64_t n = STORE;
  assert_uopc_ok(uopc_tensor_empty(&base, UOPC_F32, 1, &n, &err), err);
  for (int trial = 0; trial < 20000; trial++) {
    small_view va = random_view(6, STORE), vb = random_view(6, STORE);
    uopc_tensor a = raw_view(&base, va.rank, va.shape, va.strides, va.offset);
    uopc_tensor b = raw_view(&base, vb.rank, vb.shape, vb.strides, vb.offset);
    if ((elements(&va) & elements(&vb)) != 0 && guard(&a, &b) != 0)
      fail_msg("trial %d: views that share an element were called disjoint", trial);
  }
  /* In a 4x4 array: a[:2] and a[2:] are apart; a[:, 0::2] and a[:, 1::2] interleave, which the
   * byte ranges cannot tell from an overlap. */
  int64_t half[2] = {2, 4}, rows[2] = {4, 1}, cols[2] = {4, 2}, st[2] = {4, 2};
  uopc_tensor top = raw_view(&base, 2, half, rows, 0), bottom = raw_view(&base, 2, half, rows, 8);
  uopc_tensor even = raw_view(&base, 2, cols, st, 0), odd = raw_view(&base, 2, cols, st, 1);
  expect_truth(guard(&top, &bottom), 1, "a 4x4 a: a[:2] and a[2:] disjoint");
  expect_truth(guard(&even, &odd), 0, "a 4x4 a: a[:, 0::2] and a[:, 1::2] disjoint (a guard on byte ranges cannot tell)");
  /* the most axes a tensor has (UOPC_MAX_RANK) are judged like any others; one more is refused */
  int64_t tall[UOPC_MAX_RANK], tall_strides[UOPC_MAX_RANK];
  for (int k = 0; k < UOPC_MAX_RANK; k++) tall[k] = 1, tall_strides[k] = 1;
  tall[UOPC_MAX_RANK - 1] = 4;
  uopc_tensor first = raw_view(&base, UOPC_MAX_RANK, tall, tall_strides, 0);
  uopc_tensor after = raw_view(&base, UOPC_MAX_RANK, tall, tall_strides, 4);
  uopc_tensor across = raw_view(&base, UOPC_MAX_RANK, tall, tall_strides, 2);
  expect_truth(guard(&first, &after), 1, "rank-%d views of 4 elements at offsets 0 and 4: disjoint", UOPC_MAX_RANK);
  expect_truth(guard(&first, &across), 0, "rank-%d views of 4 elements at offsets 0 and 2: disjoint", UOPC_MAX_RANK);
  after.rank = UOPC_MAX_RANK + 1;
  int disjoint = -1;
  assert_uopc_code(alias_guard_disjoint(&first, &after, &disjoint, &err), UOPC_E_INVALID, err);
  assert_names(err.message, "b", "the view");   /* alias.h: the view, its rank and the limit */
  assert_names_int(err.message, UOPC_MAX_RANK + 1, "the rank");
  assert_names_int(err.message, UOPC_MAX_RANK, "the limit, UOPC_MAX_RANK");
  uopc_tensor_release(&base);
}

typedef struct far_case { int64_t na, sa, oa, nb, sb, ob; int disjoint; const char *what; } far_case;

static void test_alias_guard_disjoint_handles_strides_near_int64_limits(void **state) {
  (void)state;
  /* p, q: coprime strides past 2^32, so lcm(p, q) is past int64. The first element common to
   * 0 + p*i and 2 + q*j is x = 4812194191150758037 = p*1120426267 = 2 + q*1120426255. */
  const int64_t p = 4294967311, q = 4294967357, ia = 1120426267, ib = 1120426255, x = 4812194191150758037;
  const far_case cases[] = {
      {ia + 1, p, 0, ib + 1, q, 2, 0, "both reach x"},
      {ia, p, 0, ib + 1, q, 2, 1, "a stops one element before x"},
      {ia + 1, p, 0, ib, q, 2, 1, "b stops one element before x"},
      {ia + 1, -p, x, ib + 1, q, 2, 0, "a reversed, from x down to 0"},
      {ia + 1, p, 0, ib + 1, -q, x, 0, "b reversed, from x down to 2"},
      {2, INT64_MAX, 0, 1, 1, INT64_MAX, 0, "{0, 2^63 - 1} and {2^63 - 1}"},
      {2, INT64_MAX, 0, 1, 1, INT64_MAX - 1, 1, "{0, 2^63 - 1} and {2^63 - 2}"},
      {2, INT64_MIN, INT64_MAX, 1, 1, -1, 0, "{2^63 - 1, -1} and {-1}"},
      {2, INT64_MIN, INT64_MAX, 3, 1, -2, 0, "{2^63 - 1, -1} and {-2, -1, 0}"},
      {2, INT64_MIN, INT64_MAX, 5, 1, 0, 1, "{2^63 - 1, -1} and {0..4}"},
      {3, INT64_MAX, 0, 2, INT64_MAX, INT64_MAX, 0, "a span past int64: {0, m, 2m} and {m, 2m}"},
      {3, INT64_MAX, 0, 3, INT64_MAX, 1, 1, "{0, m, 2m} and {1, m + 1, 2m + 1}"},
      {3, INT64_MAX, 0, 1, 1, 5, 1, "{0, m, 2m} and {5}"},
      {INT64_MAX, INT64_MIN, INT64_MIN, 1, 1, 0, 1, "-2^63 * (1 + i) never reaches 0"},
      {INT64_MAX, INT64_MIN, INT64_MIN, 1, 1, INT64_MIN, 0, "and starts at -2^63"},
      {INT64_MAX, INT64_MAX, 0, INT64_MAX, INT64_MAX - 1, 0, 0, "both start at 0"},
      {INT64_MAX, INT64_MAX, 1, INT64_MAX, INT64_MAX - 1, 0, 0, "1 + m*i = (m - 1)*j first at i = m - 2"},
      {INT64_MAX - 2, INT64_MAX, 1, INT64_MAX, INT64_MAX - 1, 0, 1, "one element short of that"},
  };
  uopc_tensor base = {0};
  uopc_error err = {0};
  int64_t n = 4;
  assert_uopc_ok(uopc_tensor_empty(&base, UOPC_I64, 1, &n, &err), err);
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const far_case *fc = &cases[c];
    uopc_tensor a = raw_view(&base, 1, &fc->na, &fc->sa, fc->oa), b = raw_view(&base, 1, &fc->nb, &fc->sb, fc->ob);
    int ab = guard(&a, &b), ba = guard(&b, &a);
    if (ab != fc->disjoint || ba != fc->disjoint)
      fail_msg("%s: expected disjoint = %d, got %d (and %d exchanged)", fc->what, fc->disjoint, ab, ba);
  }
  uopc_tensor_release(&base);
}

static void test_alias_guard_disjoint_says_empty_views_are_disjoint(void **state) {
  (void)state;
  uopc_tensor base = {0}, none = {0};
  uopc_error err = {0};
  int64_t shape[2] = {4, 4};
  assert_uopc_ok(uopc_tensor_empty(&base, UOPC_F64, 2, shape, &err), err);
  assert_uopc_ok(uopc_tensor_slice(&none, &base, 1, 2, 2, 1, &err), err);   /* base[:, 2:2] */
  expect_truth(guard(&none, &base), 1, "base[:, 2:2] (empty) and a 4x4 base: disjoint");
  expect_truth(guard(&base, &none), 1, "a 4x4 base and base[:, 2:2] (empty): disjoint");
  expect_truth(guard(&none, &none), 1, "base[:, 2:2] (empty) and itself: disjoint");
  expect_truth(guard(&base, &base), 0, "a 4x4 base and itself: disjoint");
  uopc_tensor_release(&none);
  uopc_tensor_release(&base);
}

static void test_alias_guard_disjoint_rejects_null_released_and_mismatched_views(void **state) {
  (void)state;
  uopc_tensor a = {0}, other = {0}, released = {0};
  uopc_error err = {0};
  int64_t n = 8;
  int disjoint = -1;
  assert_uopc_ok(uopc_tensor_empty(&a, UOPC_F32, 1, &n, &err), err);
  assert_uopc_ok(uopc_tensor_empty(&other, UOPC_F32, 1, &n, &err), err);
  uopc_tensor as_int = a;
  as_int.dtype = UOPC_I32;
  assert_uopc_code(alias_guard_disjoint(NULL, &a, &disjoint, &err), UOPC_E_INVALID, err);
  assert_uopc_code(alias_guard_disjoint(&a, NULL, &disjoint, &err), UOPC_E_INVALID, err);
  assert_uopc_code(alias_guard_disjoint(&a, &a, NULL, &err), UOPC_E_INVALID, err);
  assert_uopc_code(alias_guard_disjoint(&a, &released, &disjoint, &err), UOPC_E_INVALID, err);
  assert_contains(err.message, "released");
  assert_uopc_code(alias_guard_disjoint(&a, &other, &disjoint, &err), UOPC_E_INVALID, err);
  assert_contains(err.message, "different storages");
  assert_uopc_code(alias_guard_disjoint(&a, &as_int, &disjoint, &err), UOPC_E_INVALID, err);
  assert_contains(err.message, "f32");
  int64_t shape2[2] = {2, 2}, strides2[2] = {2, 1};
  uopc_tensor bad = raw_view(&a, 2, shape2, strides2, 0);
  for (int axis = 0; axis < 2; axis++) {   /* a negative extent on either axis */
    bad.shape[axis] = -1, bad.shape[1 - axis] = 2;
    assert_uopc_code(alias_guard_disjoint(&bad, &a, &disjoint, &err), UOPC_E_INVALID, err);
    assert_uopc_code(alias_guard_disjoint(&a, &bad, &disjoint, &err), UOPC_E_INVALID, err);
  }
  bad.shape[0] = 2, bad.rank = UOPC_MAX_RANK + 1;
  assert_uopc_code(alias_guard_disjoint(&a, &bad, &disjoint, &err), UOPC_E_INVALID, err);
  expect_int(disjoint, -1, "after ten refused calls: *disjoint (untouched by every error)");
  uopc_tensor_release(&other);
  uopc_tensor_release(&a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_alias_answer_name_names_each_answer),
      cmocka_unit_test_setup_teardown(test_alias_empty_view_is_disjoint_from_everything, setup, teardown),
      cmocka_unit_test_setup_teardown(test_alias_halves_split_at_n_over_2_are_disjoint_by_ranges, setup, teardown),
      cmocka_unit_test_setup_teardown(test_alias_reversed_half_is_disjoint_by_ranges_from_the_other_half, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_alias_interleaved_slices_are_disjoint_by_residue, setup, teardown),
      cmocka_unit_test_setup_teardown(test_alias_residue_rule_uses_the_gcd_of_the_strides, setup, teardown),
      cmocka_unit_test_setup_teardown(test_alias_drops_axes_of_extent_one_before_the_residue_rule, setup, teardown),
      cmocka_unit_test_setup_teardown(test_alias_shifted_slices_are_unknown_when_n_may_be_2, setup, teardown),
      cmocka_unit_test_setup_teardown(test_alias_shifted_slices_overlap_when_n_is_at_least_3, setup, teardown),
      cmocka_unit_test_setup_teardown(test_alias_shared_element_needs_both_views_nonempty, setup, teardown),
      cmocka_unit_test_setup_teardown(test_alias_negative_stride_constant_views_use_residues_and_shared_elements,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_alias_same_view_overlaps, setup, teardown),
      cmocka_unit_test_setup_teardown(test_alias_same_view_that_may_be_empty_is_unknown, setup, teardown),
      cmocka_unit_test_setup_teardown(test_alias_two_dim_views_are_decided_by_ranges_or_left_unknown, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_alias_decide_rejects_null_and_bad_rank, setup, teardown),
      cmocka_unit_test(test_alias_decide_property_answers_hold_for_random_constant_layouts),
      cmocka_unit_test(test_alias_guard_disjoint_matches_brute_force_on_every_small_1d_view),
      cmocka_unit_test(test_alias_guard_disjoint_is_conservative_beyond_rank_1),
      cmocka_unit_test(test_alias_guard_disjoint_handles_strides_near_int64_limits),
      cmocka_unit_test(test_alias_guard_disjoint_says_empty_views_are_disjoint),
      cmocka_unit_test(test_alias_guard_disjoint_rejects_null_released_and_mismatched_views),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
