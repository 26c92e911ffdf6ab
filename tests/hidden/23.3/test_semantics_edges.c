/* test_semantics_edges.c: lab 23.3, instructor-only (tests/hidden/, not in the handout): the
 * values written by hand (semantics.c) against an eager reference. Held out because the
 * reference computes the answers the student is asked to decide before any kernel does; the
 * visible suite (tests/23.3/test_semantics.c) says only which case is wrong, through the
 * fingerprints of semantics_digest.h, which compare() checks here against the reference.
 * The reference is plain C over arrays and follows the rule literally: copy the inputs, compute
 * the right-hand side completely into a temporary, then store it through the target view. A
 * view is never a copy: reading it reads its storage now. Graded with visibility after_due_date. */
#include "semantics.h"
#include "testutil.h"
#include "23.3/semantics_digest.h"

enum { N = 8 };

/* a[start::step], len elements: a view of an array, as NumPy's slice gives. */
typedef struct view { int start, step, len; } view;

static const view WHOLE = {0, 1, N};

static double *at(double *a, view v, int i) { return &a[v.start + v.step * i]; }

static void arange_by_10(double *a) {
  for (int i = 0; i < N; i++) a[i] = 10.0 * i;
}

static void store(double *a, view dst, const double *tmp) {
  for (int i = 0; i < dst.len; i++) *at(a, dst, i) = tmp[i];
}

typedef enum rhs_kind { DST_PLUS_SRC, SRC_PLUS_1, SRC_TIMES_2 } rhs_kind;

/* a[dst] = rhs, where rhs reads a[src] (and a[dst] for the in-place +=). */
static void eager_statement(double *a, view dst, view src, rhs_kind kind) {
  double tmp[N];
  for (int i = 0; i < dst.len; i++) {
    double s = *at(a, src, i);
    tmp[i] = kind == DST_PLUS_SRC ? *at(a, dst, i) + s : kind == SRC_PLUS_1 ? s + 1 : s * 2;
  }
  store(a, dst, tmp);
}

/* The student's values against the reference's; and the reference against the fingerprint the
 * visible suite checks, so that the visible feedback says what this suite grades. */
static void compare(semantics_case c, const double *want, int count) {
  double got[N];
  uopc_error err = {0};
  expect_int(semantics_count(c), count, "semantics_count of case %d", (int)c);
  if (semantics_digest(want, count) != SEMANTICS_DIGESTS[c])
    fail_msg("case %d (%s): tests/23.3/semantics_digest.h holds 0x%016llx, the eager reference's digest is "
             "0x%016llx: the visible suite's fingerprint is stale", (int)c, SEMANTICS_PROGRAMS[c],
             (unsigned long long)SEMANTICS_DIGESTS[c], (unsigned long long)semantics_digest(want, count));
  assert_uopc_ok(semantics_expect(c, got, N, &err), err);
  for (int i = 0; i < count; i++)
    if (got[i] != want[i])
      fail_msg("case %d (%s), value %d: the eager reference gives %g, semantics_expect says %g", (int)c,
               SEMANTICS_PROGRAMS[c], i, want[i], got[i]);
}

static void check_array_case(semantics_case c, view dst, view src, rhs_kind kind) {
  double a[N];
  arange_by_10(a);
  eager_statement(a, dst, src, kind);
  compare(c, a, N);
}

static void test_semantics_disjoint_halves_match_eager_reference(void **state) {
  (void)state;   /* a[:4] += a[4:] */
  check_array_case(SEM_DISJOINT_HALVES, (view){0, 1, 4}, (view){4, 1, 4}, DST_PLUS_SRC);
}

static void test_semantics_shift_right_matches_eager_reference(void **state) {
  (void)state;   /* a[1:] = a[:-1] + 1 */
  check_array_case(SEM_SHIFT_RIGHT, (view){1, 1, 7}, (view){0, 1, 7}, SRC_PLUS_1);
}

static void test_semantics_shift_left_matches_eager_reference(void **state) {
  (void)state;   /* a[:-1] = a[1:] + 1 */
  check_array_case(SEM_SHIFT_LEFT, (view){0, 1, 7}, (view){1, 1, 7}, SRC_PLUS_1);
}

static void test_semantics_reversed_self_add_matches_eager_reference(void **state) {
  (void)state;   /* a[::-1] += a */
  check_array_case(SEM_REVERSED_SELF, (view){7, -1, 8}, WHOLE, DST_PLUS_SRC);
}

static void test_semantics_interleaved_matches_eager_reference(void **state) {
  (void)state;   /* a[0::2] = a[1::2] * 2 */
  check_array_case(SEM_INTERLEAVED, (view){0, 2, 4}, (view){1, 2, 4}, SRC_TIMES_2);
}

static void test_semantics_view_survives_a_write_to_its_base(void **state) {
  (void)state;   /* y = x[::2]; x[...] = v; y */
  double x[N], v[N], tmp[N], y[4];
  for (int i = 0; i < N; i++) x[i] = i, v[i] = 100 + i;
  view yv = {0, 2, 4};
  for (int i = 0; i < N; i++) tmp[i] = v[i];
  store(x, WHOLE, tmp);
  for (int i = 0; i < 4; i++) y[i] = *at(x, yv, i);   /* read through the view after the write */
  compare(SEM_VIEW_SURVIVES, y, 4);
}

static double sum_of_products(const double *x, const double *w) {
  double s = 0;
  for (int i = 0; i < 4; i++) s += x[i] * w[i];
  return s;
}

static void test_semantics_param_update_reads_w_at_each_call(void **state) {
  (void)state;   /* f(w) = sum(x * w); f(w); w -= 0.5 * g; f(w) */
  double x[4] = {1, 1, 1, 1}, w[4] = {1, 2, 3, 4}, g[4] = {2, 2, 2, 2}, tmp[4], want[2];
  want[0] = sum_of_products(x, w);
  for (int i = 0; i < 4; i++) tmp[i] = w[i] - 0.5 * g[i];
  store(w, (view){0, 1, 4}, tmp);
  want[1] = sum_of_products(x, w);
  compare(SEM_PARAM_UPDATE, want, 2);
}

/* Why the rule matters: an element-by-element loop that stores as it goes
 * reads values it has already overwritten, and gets another answer. */
static void test_semantics_shift_right_is_not_a_naive_in_place_loop(void **state) {
  (void)state;
  double a[N], got[N];
  uopc_error err = {0};
  arange_by_10(a);
  for (int i = 1; i < N; i++) a[i] = a[i - 1] + 1;
  assert_uopc_ok(semantics_expect(SEM_SHIFT_RIGHT, got, N, &err), err);
  if (a[7] != 7 || got[7] != 61)
    fail_msg("a[7]: the naive loop gives %g (expected 7), the semantics %g (expected 61)", a[7], got[7]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_semantics_disjoint_halves_match_eager_reference),
      cmocka_unit_test(test_semantics_shift_right_matches_eager_reference),
      cmocka_unit_test(test_semantics_shift_left_matches_eager_reference),
      cmocka_unit_test(test_semantics_reversed_self_add_matches_eager_reference),
      cmocka_unit_test(test_semantics_interleaved_matches_eager_reference),
      cmocka_unit_test(test_semantics_view_survives_a_write_to_its_base),
      cmocka_unit_test(test_semantics_param_update_reads_w_at_each_call),
      cmocka_unit_test(test_semantics_shift_right_is_not_a_naive_in_place_loop),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
