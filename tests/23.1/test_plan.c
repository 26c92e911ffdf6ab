/* test_plan.c: lab 23.1, plans: the generated loop reads its bounds from
 * arguments, one plan serves every length in bounds, results match an eager
 * loop (with poisoned tails), and bad launches fail before any kernel runs. */
#include <ctype.h>
#include <math.h>
#include "plan.h"
#include "testutil.h"

enum { NMAX = 4096, TAIL = 16 };
static const float POISON = -12345.0f;

typedef struct fixture {
  sym_arena *arena;
  sym_dim n, b;
  plan *chain, *rowsum;
} fixture;

/* out = (a + b)*c - a over n in [1, NMAX]. */
static plan *chain_plan(fixture *f, const sym_dim *n, const char *name) {
  kernel_graph g;
  uopc_error err = {0};
  plan *p = NULL;
  kernel_graph_init(&g, f->arena);
  const sym_expr *shape[1] = {sym_expr_dim(f->arena, n)};
  const kernel_node *a, *b, *c, *s, *m, *r;
  assert_uopc_ok(kernel_input(&g, "a", UOPC_F32, 1, shape, &a, &err), err);
  assert_uopc_ok(kernel_input(&g, "b", UOPC_F32, 1, shape, &b, &err), err);
  assert_uopc_ok(kernel_input(&g, "c", UOPC_F32, 1, shape, &c, &err), err);
  assert_uopc_ok(kernel_binary(&g, KERNEL_ADD, a, b, &s, &err), err);
  assert_uopc_ok(kernel_binary(&g, KERNEL_MUL, s, c, &m, &err), err);
  assert_uopc_ok(kernel_binary(&g, KERNEL_SUB, m, a, &r, &err), err);
  assert_uopc_ok(plan_new(&p, &g, r, name, NULL, &err), err);
  return p;
}

static plan *rowsum_plan(fixture *f, int rank) {
  kernel_graph g;
  uopc_error err = {0};
  plan *p = NULL;
  kernel_graph_init(&g, f->arena);
  const sym_expr *shape2[2] = {sym_expr_dim(f->arena, &f->b), sym_expr_dim(f->arena, &f->n)};
  const sym_expr *const *shape = rank == 2 ? shape2 : shape2 + 1;
  const kernel_node *x, *s;
  assert_uopc_ok(kernel_input(&g, "x", UOPC_F32, rank, shape, &x, &err), err);
  assert_uopc_ok(kernel_sum(&g, x, &s, &err), err);
  assert_uopc_ok(plan_new(&p, &g, s, rank == 2 ? "rowsum_f32_bn" : "sum_f32_n", NULL, &err), err);
  return p;
}

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  uopc_error err = {0};
  if (!f || sym_arena_new(&f->arena, &err) || sym_dim_init(&f->n, "n", 1, NMAX, 1, &err) ||
      sym_dim_init(&f->b, "b", 1, 8, 1, &err)) return -1;
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  plan_free(f->chain);
  plan_free(f->rowsum);
  sym_arena_free(f->arena);
  free(f);
  return 0;
}

static void fill(float *x, int64_t n, int seed) {
  for (int64_t i = 0; i < n; i++) x[i] = (float)((i * 7 + seed * 13) % 23) * 0.25f - 2.0f;
}

static void poison(float *x, int64_t n) {
  for (int64_t i = 0; i < n; i++) x[i] = POISON;
}

static void expect_untouched(const float *out, int64_t from, int64_t to, const char *what) {
  for (int64_t i = from; i < to; i++)
    if (out[i] != POISON)
      fail_msg("%s: element %lld past the logical end %lld was written (%g)", what, (long long)i,
               (long long)from, out[i]);
}

static void run_chain(fixture *f, plan *p, int64_t n) {
  static float a[NMAX], b[NMAX], c[NMAX], out[NMAX + TAIL];
  sym_binding bind;
  uopc_error err = {0};
  fill(a, n, 1), fill(b, n, 2), fill(c, n, 3);
  poison(out, NMAX + TAIL);
  sym_binding_init(&bind);
  assert_uopc_ok(sym_dim_bind(&bind, &f->n, n, &err), err);
  plan_buffer in[3] = {{a, NMAX}, {b, NMAX}, {c, NMAX}};
  assert_uopc_ok(plan_launch(p, &bind, (plan_buffer){out, NMAX + TAIL}, in, 3, &err), err);
  for (int64_t i = 0; i < n; i++) {
    float want = (a[i] + b[i]) * c[i] - a[i];   /* the same f32 operations, in order */
    if (out[i] != want)
      fail_msg("chain n=%lld: out[%lld] = (%g + %g)*%g - %g: expected %.9g, got %.9g", (long long)n,
               (long long)i, a[i], b[i], c[i], a[i], want, out[i]);
  }
  char what[32];
  snprintf(what, sizeof what, "chain n=%lld", (long long)n);
  expect_untouched(out, n, NMAX + TAIL, what);
}

/* The lane count a sum's text declares (`enum { LANES = 32 };`), 0 if none. */
static int declared_lanes(const char *src) {
  const char *p = strstr(src, "enum { LANES = ");
  return p ? atoi(p + strlen("enum { LANES = ")) : 0;
}

/* Whether the literal at start is directly preceded by prefix. */
static int after(const char *src, const char *start, const char *prefix) {
  size_t len = strlen(prefix);
  return (size_t)(start - src) >= len && strncmp(start - len, prefix, len) == 0;
}

/* Comments dropped; every number that is not part of a name collected. Only 0 and 0.0f may
 * appear, and in a sum's text the two constants of its numerical policy: the lane count, as
 * `enum { LANES = <count> };` (the count the banner states), and the 2 that halves the lanes
 * when they are combined (`LANES / 2`, `r1 /= 2`). No size of a call or bound of a dim
 * (1, 7, 4096...) may appear anywhere else. */
static void expect_no_size_literals(const char *src, const char *what) {
  int lanes = declared_lanes(src);
  if (lanes) {
    char banner[64];
    snprintf(banner, sizeof banner, "(LANES = %d)", lanes);
    assert_contains(src, banner);
  }
  for (const char *p = src; *p;) {
    if (p[0] == '/' && p[1] == '*') { const char *e = strstr(p + 2, "*/"); p = e ? e + 2 : p + strlen(p); continue; }
    if (isalpha((unsigned char)*p) || *p == '_') { while (isalnum((unsigned char)*p) || *p == '_') p++; continue; }
    if (isdigit((unsigned char)*p)) {
      const char *start = p;
      while (isalnum((unsigned char)*p) || *p == '.') p++;
      int len = (int)(p - start);
      int policy = lanes && ((after(src, start, "enum { LANES = ") && atoi(start) == lanes) ||
                             (len == 1 && *start == '2' &&
                              (after(src, start, "LANES / ") || after(src, start, "r1 /= "))));
      if (!(len == 1 && *start == '0') && strncmp(start, "0.0f", 4) != 0 && !policy)
        fail_msg("%s: the literal %.*s appears in the generated code:\n%s", what, len, start, src);
      continue;
    }
    p++;
  }
}

static char *read_kernel_file(const plan *p) {
  char path[4200];
  snprintf(path, sizeof path, "%s/kernel.c", uopc_program_dir(plan_program(p)));
  FILE *fp = fopen(path, "r");
  if (!fp) fail_msg("cannot open %s", path);
  char *buf = calloc(1, 1 << 16);
  size_t n = fread(buf, 1, (1 << 16) - 1, fp);
  fclose(fp);
  buf[n] = '\0';
  return buf;
}

static void test_plan_source_reads_bounds_from_arguments(void **state) {
  fixture *f = *state;
  f->chain = chain_plan(f, &f->n, "chain_f32_n");
  char *disk = read_kernel_file(f->chain);
  const char *src = plan_source(f->chain);
  if (strncmp(disk, src, strlen(src)) != 0)
    fail_msg("kernel.c on disk does not start with the plan's source:\n%s\n---\n%s", disk, src);
  assert_contains(src, "int32_t n) {");
  assert_contains(src, "for (int32_t i0 = 0; i0 < n; i0++)");
  assert_contains(src, " * dims: n in [1, 4096]");
  expect_no_size_literals(src, "chain_f32_n");
  for (int64_t n = 1; n <= 64; n = n * 2 + 1) run_chain(f, f->chain, n);
  free(disk);
}

/* The lane form's start, through codegen_emit_lanes itself with a reducer whose identity is
 * given: a zero fills every lane by C's initialiser, any other value (a max's -INFINITY) in a
 * loop over the lanes, before the first block. */
static int lane_element(void *ctx, codegen_nest *n, const sym_expr *j, char *value, size_t size) {
  (void)ctx, (void)n, (void)j;
  snprintf(value, size, "x[r0 + r1]");
  return UOPC_OK;
}

static int lane_combine(void *ctx, codegen_nest *n, const char *acc, const char *value) {
  (void)ctx;
  return codegen_line(n, "%s = fmaxf(%s, %s);", acc, acc, value);
}

static void expect_lanes_start(fixture *f, const char *identity, const char *want) {
  codegen_text text = {0};
  codegen_nest nest;
  uopc_error err = {0};
  codegen_reducer r = {"float", identity, lane_element, lane_combine, NULL};
  codegen_nest_init(&nest, &text, f->arena, "int32_t", 0, &err);
  assert_uopc_ok(codegen_emit_lanes(&nest, sym_expr_dim(f->arena, &f->n), &r, &err), err);
  if (strncmp(text.data, want, strlen(want)) != 0)
    fail_msg("codegen_emit_lanes with the identity %s: expected the text to start with\n%s\ngot\n%.300s",
             identity, want, text.data);
  codegen_text_fini(&text);
}

/* Inside the lanes the enclosing loops' facts still hold: an element that needs i0 < b (the
 * outer loop's fact) is proved in the whole blocks and in the tail. */
typedef struct outer_ctx { const sym_expr *i0, *b; int proved; } outer_ctx;

static int outer_element(void *ctx, codegen_nest *n, const sym_expr *j, char *value, size_t size) {
  outer_ctx *c = ctx;
  (void)j;
  int rc = codegen_require_lt(n, c->i0, c->b);
  c->proved += rc == UOPC_OK;
  snprintf(value, size, "x[i0*n + r0 + r1]");
  return rc;
}

static void expect_outer_fact_inside_lanes(fixture *f) {
  codegen_text text = {0};
  codegen_nest nest;
  uopc_error err = {0};
  outer_ctx c = {NULL, sym_expr_dim(f->arena, &f->b), 0};
  codegen_reducer r = {"float", "0.0f", outer_element, lane_combine, &c};
  codegen_nest_init(&nest, &text, f->arena, "int32_t", 0, &err);
  assert_uopc_ok(codegen_open_loop(&nest, "i0", c.b, &c.i0, &err), err);
  assert_uopc_ok(codegen_emit_lanes(&nest, sym_expr_dim(f->arena, &f->n), &r, &err), err);
  assert_uopc_ok(codegen_close(&nest), err);
  assert_int_equal(c.proved, 2);   /* the blocks' element and the tail's */
  assert_int_equal(nest.n_scopes, 1);
  codegen_text_fini(&text);
}

/* The blocks' fact is r0 + LANES - 1 < n and no more: an element that reads one past j (it needs
 * j + 1 < n) is refused already in the whole blocks, before any proof of it succeeds. */
static int past_element(void *ctx, codegen_nest *n, const sym_expr *j, char *value, size_t size) {
  outer_ctx *c = ctx;
  int rc = codegen_require_lt(n, sym_expr_add(n->arena, j, sym_expr_const(n->arena, 1)), c->b);
  c->proved += rc == UOPC_OK;
  snprintf(value, size, "x[r0 + r1 + 1]");
  return rc;
}

static void expect_no_element_past_the_blocks(fixture *f) {
  codegen_text text = {0};
  codegen_nest nest;
  uopc_error err = {0};
  outer_ctx c = {NULL, sym_expr_dim(f->arena, &f->n), 0};
  codegen_reducer r = {"float", "0.0f", past_element, lane_combine, &c};
  codegen_nest_init(&nest, &text, f->arena, "int32_t", 0, &err);
  assert_uopc_code(codegen_emit_lanes(&nest, c.b, &r, &err), UOPC_E_INVALID, err);
  assert_int_equal(c.proved, 0);
  codegen_text_fini(&text);
}

static void test_plan_rowsum_source_reads_runtime_stride(void **state) {
  fixture *f = *state;
  f->rowsum = rowsum_plan(f, 2);
  const char *src = plan_source(f->rowsum);
  assert_contains(src, " * reduction order: element j of a row is added into lane j % LANES");
  assert_contains(src, "for (int32_t i0 = 0; i0 < b; i0++)");
  assert_contains(src, "float acc0[LANES] = {0.0f};");
  assert_contains(src, "for (; r0 <= n - LANES; r0 += LANES)");      /* whole blocks */
  assert_contains(src, "for (int32_t r1 = 0; r1 < LANES; r1++)");
  assert_contains(src, "for (int32_t r1 = 0; r0 + r1 < n; r1++)");   /* the tail */
  assert_contains(src, "x[i0*n + r0 + r1]");
  assert_contains(src, "acc0[r1] += t0;");
  assert_contains(src, "out[i0] = acc0[0];");
  expect_no_size_literals(src, "rowsum_f32_bn");
  expect_lanes_start(f, "0.0f", "float acc0[LANES] = {0.0f};\nint32_t r0 = 0;\nfor (; r0 <= n - LANES; r0 += LANES) {\n");
  expect_lanes_start(f, "-INFINITY", "float acc0[LANES];\nfor (int32_t r1 = 0; r1 < LANES; r1++) acc0[r1] = -INFINITY;\n"
                     "int32_t r0 = 0;\nfor (; r0 <= n - LANES; r0 += LANES) {\n");
  expect_outer_fact_inside_lanes(f);
  expect_no_element_past_the_blocks(f);
  /* A parameter named LANES would shadow the lane count: refused before any text. Its own
   * arena: the lanes above declared the generated code's LANES in f's, and an arena holds one
   * declaration of a name. */
  sym_dim lanes;
  sym_arena *own;
  uopc_error err = {0};
  assert_uopc_ok(sym_arena_new(&own, &err), err);
  assert_uopc_ok(sym_dim_init(&lanes, "LANES", 1, 64, 1, &err), err);
  kernel_graph g;
  kernel_graph_init(&g, own);
  const sym_expr *shape[2] = {sym_expr_dim(own, &f->b), sym_expr_dim(own, &lanes)};
  const kernel_node *x, *s;
  plan *p = NULL;
  assert_uopc_ok(kernel_input(&g, "x", UOPC_F32, 2, shape, &x, &err), err);
  assert_uopc_ok(kernel_sum(&g, x, &s, &err), err);
  assert_uopc_code(plan_new(&p, &g, s, "rowsum_f32_blanes", NULL, &err), UOPC_E_INVALID, err);
  assert_contains(err.message, "dim 'LANES'");
  assert_null(p);
  sym_arena_free(own);
}

static void test_plan_fixed_length_variant_pastes_its_size(void **state) {
  fixture *f = *state;
  sym_dim fixed;
  uopc_error err = {0};
  assert_uopc_ok(sym_dim_init(&fixed, "n", 1, 4096, 1, &err), err);
  kernel_graph g;
  kernel_graph_init(&g, f->arena);
  const sym_expr *shape[1] = {sym_expr_const(f->arena, 4096)};
  const kernel_node *x, *y;
  plan *p = NULL;
  assert_uopc_ok(kernel_input(&g, "x", UOPC_F32, 1, shape, &x, &err), err);
  assert_uopc_ok(kernel_unary(&g, KERNEL_NEG, x, &y, &err), err);
  assert_uopc_ok(plan_new(&p, &g, y, "neg_f32_4096", NULL, &err), err);
  assert_contains(plan_source(p), "i0 < 4096");
  assert_int_equal(plan_dim_count(p), 0);
  char text[128];
  plan_describe(p, text, sizeof text);
  assert_string_equal(text, "plan neg_f32_4096: dims none; index int32_t (at most 4096 elements)");
  plan_free(p);
}

static void test_plan_serves_every_length_with_one_plan(void **state) {
  fixture *f = *state;
  int64_t before = uopc_counter_get(PLAN_C_BUILT);
  f->chain = chain_plan(f, &f->n, "chain_f32_n");
  const int64_t lengths[] = {1, 7, 31, 64, NMAX};
  for (size_t k = 0; k < sizeof lengths / sizeof lengths[0]; k++) run_chain(f, f->chain, lengths[k]);
  srand(2301);
  for (int k = 0; k < 40; k++) run_chain(f, f->chain, 1 + rand() % NMAX);
  int64_t built = uopc_counter_get(PLAN_C_BUILT) - before;
  if (built != 1) fail_msg("45 lengths: expected 1 plan built, got %lld", (long long)built);
  assert_int_equal(uopc_counter_get("calls chain_f32_n") >= 45, 1);
}

/* The banner's reduction order, written here independently of the code generator: element j
 * goes into lane j % lanes, each lane adds left to right from 0; then lane k += lane k + w for
 * w = lanes/2, ..., 1, and lane 0 is the sum. */
static float lane_order_sum(const float *x, int64_t n, int lanes) {
  float lane[256] = {0.0f};
  for (int64_t j = 0; j < n; j++) lane[j % lanes] += x[j];
  for (int w = lanes / 2; w > 0; w /= 2)
    for (int k = 0; k < w; k++) lane[k] += lane[k + w];
  return lane[0];
}

/* Values whose sum depends on the order: magnitudes from 2^-8 to 2^8, both signs. */
static void fill_rough(float *x, int64_t n, int seed) {
  uint32_t s = 2654435761u * (uint32_t)(seed + 1);
  for (int64_t i = 0; i < n; i++) {
    s = s * 1664525u + 1013904223u;
    x[i] = ldexpf((float)(s >> 8) / 16777216.0f - 0.5f, (int)(s % 17) - 8);
  }
}

/* rough: bit for bit the documented order; otherwise quarters, whose sum is exact in any order
 * (multiples of 1/4 below 2^15), so it must equal the exact sum. */
static void run_rowsum(fixture *f, int64_t rows, int64_t cols, int rough) {
  static float x[8 * NMAX], out[8 + TAIL];
  sym_binding bind;
  uopc_error err = {0};
  if (rough) fill_rough(x, rows * cols, (int)cols);
  else fill(x, rows * cols, (int)cols);
  poison(out, 8 + TAIL);
  sym_binding_init(&bind);
  assert_uopc_ok(sym_dim_bind(&bind, &f->b, rows, &err), err);
  assert_uopc_ok(sym_dim_bind(&bind, &f->n, cols, &err), err);
  plan_buffer in = {x, 8 * NMAX};
  assert_uopc_ok(plan_launch(f->rowsum, &bind, (plan_buffer){out, 8 + TAIL}, &in, 1, &err), err);
  int lanes = declared_lanes(plan_source(f->rowsum));
  if (lanes < 1 || lanes > 256) fail_msg("rowsum: the source declares %d lanes", lanes);
  for (int64_t r = 0; r < rows; r++) {
    double exact = 0;
    for (int64_t j = 0; j < cols; j++) exact += x[r * cols + j];
    float want = rough ? lane_order_sum(x + r * cols, cols, lanes) : (float)exact;
    if (memcmp(&out[r], &want, sizeof want) != 0)
      fail_msg("rowsum b=%lld n=%lld (%s data): out[%lld]: expected %.9g (%s), got %.9g",
               (long long)rows, (long long)cols, rough ? "rough" : "quarters", (long long)r, want,
               rough ? "the banner's lane order" : "exact", out[r]);
  }
  char what[48];
  snprintf(what, sizeof what, "rowsum b=%lld n=%lld", (long long)rows, (long long)cols);
  expect_untouched(out, rows, 8 + TAIL, what);
}

static void test_plan_rowsum_with_runtime_n(void **state) {
  fixture *f = *state;
  f->rowsum = rowsum_plan(f, 2);
  const int64_t cols[] = {1, 7, 31, 32, 33, 63, 64, 65, 1000, NMAX};
  for (size_t k = 0; k < sizeof cols / sizeof cols[0]; k++)
    for (int rough = 0; rough < 2; rough++) run_rowsum(f, 1 + (int64_t)k % 8, cols[k], rough);
  srand(2302);
  for (int k = 0; k < 20; k++) run_rowsum(f, 1 + rand() % 8, 1 + rand() % NMAX, k % 2);
}

static void test_plan_sum_of_vector(void **state) {
  fixture *f = *state;
  plan *p = rowsum_plan(f, 1);
  float x[100], out[1 + TAIL];
  sym_binding bind;
  uopc_error err = {0};
  for (int i = 0; i < 100; i++) x[i] = (float)i;
  poison(out, 1 + TAIL);
  sym_binding_init(&bind);
  assert_uopc_ok(sym_dim_bind(&bind, &f->n, 100, &err), err);
  plan_buffer in = {x, 100};
  assert_uopc_ok(plan_launch(p, &bind, (plan_buffer){out, 1 + TAIL}, &in, 1, &err), err);
  if (out[0] != 4950.0f) fail_msg("sum of 0..99: expected 4950, got %.9g", out[0]);
  expect_untouched(out, 1, 1 + TAIL, "sum n=100");
  plan_free(p);
  /* A vector of one element: no whole block, a tail of one. */
  kernel_graph g;
  const sym_expr *one[1] = {sym_expr_const(f->arena, 1)};
  const kernel_node *v, *s;
  kernel_graph_init(&g, f->arena);
  assert_uopc_ok(kernel_input(&g, "x", UOPC_F32, 1, one, &v, &err), err);
  assert_uopc_ok(kernel_sum(&g, v, &s, &err), err);
  assert_uopc_ok(plan_new(&p, &g, s, "sum_f32_1", NULL, &err), err);
  poison(out, 1 + TAIL);
  x[0] = 2.5f;
  in = (plan_buffer){x, 1};
  assert_uopc_ok(plan_launch(p, &bind, (plan_buffer){out, 1 + TAIL}, &in, 1, &err), err);
  if (out[0] != 2.5f) fail_msg("sum of the vector [2.5]: expected 2.5, got %.9g", out[0]);
  expect_untouched(out, 1, 1 + TAIL, "sum of one element");
  plan_free(p);
}

/* exp, maximum, div, neg and a scalar: out = maximum(exp(-x) / 2, x). */
static void test_plan_unary_binary_and_scalar_ops(void **state) {
  fixture *f = *state;
  kernel_graph g;
  uopc_error err = {0};
  plan *p = NULL;
  kernel_graph_init(&g, f->arena);
  const sym_expr *shape[1] = {sym_expr_dim(f->arena, &f->n)};
  const kernel_node *x, *neg, *ex, *two, *half, *mx;
  assert_uopc_ok(kernel_input(&g, "x", UOPC_F32, 1, shape, &x, &err), err);
  assert_uopc_ok(kernel_unary(&g, KERNEL_NEG, x, &neg, &err), err);
  assert_uopc_ok(kernel_unary(&g, KERNEL_EXP, neg, &ex, &err), err);
  assert_uopc_ok(kernel_scalar(&g, 2.0f, &two, &err), err);
  assert_uopc_ok(kernel_binary(&g, KERNEL_DIV, ex, two, &half, &err), err);
  assert_uopc_ok(kernel_binary(&g, KERNEL_MAXIMUM, half, x, &mx, &err), err);
  assert_uopc_ok(plan_new(&p, &g, mx, "expmax_f32_n", NULL, &err), err);
  assert_contains(plan_source(p), "= 2.0f;");
  /* exp(-x)/2 for these x, from NumPy float32: x = 0, 1, -1, 2, -2.5. */
  const float xs[] = {0.0f, 1.0f, -1.0f, 2.0f, -2.5f, NAN};
  const float want[] = {0.5f, 1.0f, 1.35914091f, 2.0f, 6.09124708f, NAN};
  float out[6 + TAIL];
  poison(out, 6 + TAIL);
  sym_binding bind;
  sym_binding_init(&bind);
  assert_uopc_ok(sym_dim_bind(&bind, &f->n, 6, &err), err);
  plan_buffer in = {(void *)xs, 6};
  assert_uopc_ok(plan_launch(p, &bind, (plan_buffer){out, 6 + TAIL}, &in, 1, &err), err);
  for (int i = 0; i < 6; i++) {
    int ok = isnan(want[i]) ? isnan(out[i]) : fabsf(out[i] - want[i]) <= 1e-6f * fabsf(want[i]);
    if (!ok) fail_msg("maximum(exp(-x)/2, x) at x=%g: expected %.9g, got %.9g", xs[i], want[i], out[i]);
  }
  expect_untouched(out, 6, 6 + TAIL, "expmax n=6");
  plan_free(p);
}

static void test_plan_launch_rejects_unbound_dim(void **state) {
  fixture *f = *state;
  f->rowsum = rowsum_plan(f, 2);
  float x[8], out[8 + TAIL];
  sym_binding bind;
  uopc_error err = {0};
  poison(out, 8 + TAIL);
  sym_binding_init(&bind);
  assert_uopc_ok(sym_dim_bind(&bind, &f->b, 2, &err), err);
  plan_buffer in = {x, 8};
  int64_t calls = uopc_counter_get("calls rowsum_f32_bn");
  assert_uopc_code(plan_launch(f->rowsum, &bind, (plan_buffer){out, 8}, &in, 1, &err), UOPC_E_UNBOUND, err);
  if (strcmp(err.message, "kernel 'rowsum_f32_bn' launched with dim 'n' unbound") != 0)
    fail_msg("expected \"kernel 'rowsum_f32_bn' launched with dim 'n' unbound\", got \"%s\"", err.message);
  assert_int_equal(uopc_counter_get("calls rowsum_f32_bn"), calls);
  expect_untouched(out, 0, 8 + TAIL, "unbound launch");
  /* no binding at all: every dim is unbound, the first one named */
  assert_uopc_code(plan_launch(f->rowsum, NULL, (plan_buffer){out, 8}, &in, 1, &err), UOPC_E_UNBOUND, err);
  assert_contains(err.message, "launched with dim '");
  assert_int_equal(uopc_counter_get("calls rowsum_f32_bn"), calls);
}

/* A binding made against a wider dim of the same name is checked against
 * the plan's own bounds, before the kernel runs. */
static void test_plan_launch_rejects_binding_outside_plan_bounds(void **state) {
  fixture *f = *state;
  sym_dim narrow, wide;
  uopc_error err = {0};
  assert_uopc_ok(sym_dim_init(&narrow, "n", 1, 64, 1, &err), err);
  assert_uopc_ok(sym_dim_init(&wide, "n", 1, NMAX, 1, &err), err);
  f->chain = chain_plan(f, &narrow, "chain_f32_n64");
  static float a[NMAX], out[NMAX];
  sym_binding bind;
  sym_binding_init(&bind);
  assert_uopc_ok(sym_dim_bind(&bind, &wide, 65, &err), err);
  poison(out, NMAX);
  plan_buffer in[3] = {{a, NMAX}, {a, NMAX}, {a, NMAX}};
  assert_uopc_code(plan_launch(f->chain, &bind, (plan_buffer){out, NMAX}, in, 3, &err), UOPC_E_BOUNDS, err);
  if (strcmp(err.message, "dim 'n' = 65 outside [1, 64]") != 0)
    fail_msg("expected \"dim 'n' = 65 outside [1, 64]\", got \"%s\"", err.message);
  expect_untouched(out, 0, NMAX, "rejected launch");
}

static void test_plan_launch_rejects_small_buffer(void **state) {
  fixture *f = *state;
  f->chain = chain_plan(f, &f->n, "chain_f32_n");
  float a[64], out[64];
  sym_binding bind;
  uopc_error err = {0};
  sym_binding_init(&bind);
  assert_uopc_ok(sym_dim_bind(&bind, &f->n, 64, &err), err);
  plan_buffer in[3] = {{a, 64}, {a, 63}, {a, 64}};
  assert_uopc_code(plan_launch(f->chain, &bind, (plan_buffer){out, 64}, in, 3, &err), UOPC_E_BOUNDS, err);
  assert_contains(err.message, "buffer 'b' holds 63 elements, the binding needs 64");
  /* Extents that are expressions (2*n) are evaluated under the binding: 10 fits, 9 does not. */
  kernel_graph g;
  const sym_expr *twice[1] = {sym_expr_mul(f->arena, sym_expr_const(f->arena, 2), sym_expr_dim(f->arena, &f->n))};
  const kernel_node *x, *y;
  plan *p = NULL;
  kernel_graph_init(&g, f->arena);
  assert_uopc_ok(kernel_input(&g, "x", UOPC_F32, 1, twice, &x, &err), err);
  assert_uopc_ok(kernel_unary(&g, KERNEL_NEG, x, &y, &err), err);
  assert_uopc_ok(plan_new(&p, &g, y, "neg_f32_2n", NULL, &err), err);
  assert_uopc_ok(sym_dim_bind(&bind, &f->n, 5, &err), err);
  for (int i = 0; i < 10; i++) a[i] = (float)i;
  assert_uopc_ok(plan_launch(p, &bind, (plan_buffer){out, 10}, &(plan_buffer){a, 10}, 1, &err), err);
  if (out[9] != -9.0f) fail_msg("neg of 2*n = 10 elements: expected out[9] = -9, got %g", out[9]);
  assert_uopc_code(plan_launch(p, &bind, (plan_buffer){out, 10}, &(plan_buffer){a, 9}, 1, &err), UOPC_E_BOUNDS, err);
  assert_contains(err.message, "buffer 'x' holds 9 elements, the binding needs 10");
  plan_free(p);
}

/* The kernel's buffers are restrict: out may share no byte with an input's
 * logical elements, so in place (out = a) and a partial overlap are refused
 * before the kernel runs; inputs sharing memory, and out in an input's unused
 * capacity, are not overlaps. */
static void test_plan_launch_refuses_out_overlapping_an_input(void **state) {
  fixture *f = *state;
  f->chain = chain_plan(f, &f->n, "chain_f32_n");
  static float buf[4 * 64];
  float *a = buf, *c = buf + 128;
  sym_binding bind;
  uopc_error err = {0};
  sym_binding_init(&bind);
  assert_uopc_ok(sym_dim_bind(&bind, &f->n, 64, &err), err);
  fill(buf, 4 * 64, 7);
  plan_buffer in[3] = {{a, 64}, {a, 64}, {c, 64}};
  int64_t calls = uopc_counter_get("calls chain_f32_n");
  assert_uopc_code(plan_launch(f->chain, &bind, (plan_buffer){a, 64}, in, 3, &err), UOPC_E_ALIAS, err);
  assert_string_equal(err.message, "kernel 'chain_f32_n': buffers 'out' and 'a' share memory; the kernel's"
                                   " buffers are restrict, so out must not overlap an input");
  assert_uopc_code(plan_launch(f->chain, &bind, (plan_buffer){c + 63, 64}, in, 3, &err), UOPC_E_ALIAS, err);
  assert_contains(err.message, "buffers 'out' and 'c' share memory");   /* one element in common */
  assert_int_equal(uopc_counter_get("calls chain_f32_n"), calls);
  float want = (a[5] + a[5]) * c[5] - a[5];
  assert_uopc_ok(plan_launch(f->chain, &bind, (plan_buffer){buf + 64, 64}, in, 3, &err), err);   /* just past a */
  if (buf[64 + 5] != want) fail_msg("out just past a: out[5] expected %g, got %g", want, buf[64 + 5]);
  /* At n = 10, out may lie in a's capacity past its 10 logical elements. */
  assert_uopc_ok(sym_dim_bind(&bind, &f->n, 10, &err), err);
  assert_uopc_ok(plan_launch(f->chain, &bind, (plan_buffer){a + 10, 54}, in, 3, &err), err);
  assert_int_equal(uopc_counter_get("calls chain_f32_n"), calls + 2);
}

static void test_plan_new_rejects_overflowing_shape(void **state) {
  fixture *f = *state;
  sym_dim huge;
  uopc_error err = {0};
  assert_uopc_ok(sym_dim_init(&huge, "m", 1, INT64_C(1) << 40, 1, &err), err);
  kernel_graph g;
  kernel_graph_init(&g, f->arena);
  const sym_expr *shape[2] = {sym_expr_dim(f->arena, &huge), sym_expr_dim(f->arena, &huge)};
  const kernel_node *x, *y;
  plan *p = NULL;
  int64_t before = uopc_counter_get(PLAN_C_BUILT);
  assert_uopc_ok(kernel_input(&g, "x", UOPC_F32, 2, shape, &x, &err), err);
  assert_uopc_ok(kernel_unary(&g, KERNEL_NEG, x, &y, &err), err);
  assert_uopc_code(plan_new(&p, &g, y, "neg_f32_mm", NULL, &err), UOPC_E_OVERFLOW, err);
  assert_null(p);
  assert_int_equal(uopc_counter_get(PLAN_C_BUILT), before);
}

/* The output must be a node of g: its first node (out = x, a copy) is one; a node of the graph
 * stored just before g in memory is not. */
static void test_plan_new_takes_only_a_node_of_its_graph(void **state) {
  fixture *f = *state;
  static kernel_graph gs[2];
  uopc_error err = {0};
  const sym_expr *shape[1] = {sym_expr_dim(f->arena, &f->n)};
  const kernel_node *x, *other;
  plan *p = NULL;
  kernel_graph_init(&gs[0], f->arena);
  kernel_graph_init(&gs[1], f->arena);
  assert_uopc_ok(kernel_input(&gs[0], "w", UOPC_F32, 1, shape, &other, &err), err);
  assert_uopc_ok(kernel_input(&gs[1], "x", UOPC_F32, 1, shape, &x, &err), err);
  assert_uopc_code(plan_new(&p, &gs[1], other, "copy_f32_w", NULL, &err), UOPC_E_INVALID, err);
  assert_contains(err.message, "plan 'copy_f32_w': the output is not a node of the graph");
  assert_null(p);
  assert_uopc_ok(plan_new(&p, &gs[1], x, "copy_f32_n", NULL, &err), err);
  float in[5] = {1, 2, 3, 4, 5}, out[5] = {0};
  sym_binding bind;
  sym_binding_init(&bind);
  assert_uopc_ok(sym_dim_bind(&bind, &f->n, 5, &err), err);
  assert_uopc_ok(plan_launch(p, &bind, (plan_buffer){out, 5}, &(plan_buffer){in, 5}, 1, &err), err);
  if (memcmp(in, out, sizeof in) != 0) fail_msg("out = x over 5 elements: got %g %g %g %g %g", out[0], out[1], out[2], out[3], out[4]);
  plan_free(p);
}

static void test_plan_index_is_64_bit_for_large_bounds(void **state) {
  fixture *f = *state;
  sym_dim big;
  uopc_error err = {0};
  assert_uopc_ok(sym_dim_init(&big, "n", 1, INT64_C(1) << 33, 1, &err), err);
  f->chain = chain_plan(f, &big, "chain_f32_nbig");
  assert_int_equal(plan_index(f->chain)->bits, 64);
  assert_contains(plan_source(f->chain), "for (int64_t i0 = 0; i0 < n; i0++)");
  char text[256];
  plan_describe(f->chain, text, sizeof text);
  assert_string_equal(text, "plan chain_f32_nbig: dims n in [1, 8589934592]; index int64_t (at most 8589934592 elements)");
  static float a[64], out[64 + TAIL];      /* a small call still works */
  sym_binding bind;
  sym_binding_init(&bind);
  assert_uopc_ok(sym_dim_bind(&bind, &big, 64, &err), err);
  fill(a, 64, 5);
  poison(out, 64 + TAIL);
  plan_buffer in[3] = {{a, 64}, {a, 64}, {a, 64}};
  assert_uopc_ok(plan_launch(f->chain, &bind, (plan_buffer){out, 64 + TAIL}, in, 3, &err), err);
  assert_true(out[5] == (a[5] + a[5]) * a[5] - a[5]);
  expect_untouched(out, 64, 64 + TAIL, "64-bit plan n=64");
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_plan_source_reads_bounds_from_arguments, setup, teardown),
    cmocka_unit_test_setup_teardown(test_plan_rowsum_source_reads_runtime_stride, setup, teardown),
    cmocka_unit_test_setup_teardown(test_plan_fixed_length_variant_pastes_its_size, setup, teardown),
    cmocka_unit_test_setup_teardown(test_plan_serves_every_length_with_one_plan, setup, teardown),
    cmocka_unit_test_setup_teardown(test_plan_rowsum_with_runtime_n, setup, teardown),
    cmocka_unit_test_setup_teardown(test_plan_sum_of_vector, setup, teardown),
    cmocka_unit_test_setup_teardown(test_plan_unary_binary_and_scalar_ops, setup, teardown),
    cmocka_unit_test_setup_teardown(test_plan_launch_rejects_unbound_dim, setup, teardown),
    cmocka_unit_test_setup_teardown(test_plan_launch_rejects_binding_outside_plan_bounds, setup, teardown),
    cmocka_unit_test_setup_teardown(test_plan_launch_rejects_small_buffer, setup, teardown),
    cmocka_unit_test_setup_teardown(test_plan_launch_refuses_out_overlapping_an_input, setup, teardown),
    cmocka_unit_test_setup_teardown(test_plan_new_rejects_overflowing_shape, setup, teardown),
    cmocka_unit_test_setup_teardown(test_plan_index_is_64_bit_for_large_bounds, setup, teardown),
    cmocka_unit_test_setup_teardown(test_plan_new_takes_only_a_node_of_its_graph, setup, teardown),
  };
  return cmocka_run_group_tests(tests, testutil_fresh_cache, testutil_remove_cache);
}
