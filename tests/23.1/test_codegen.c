/* test_codegen.c: lab 23.1, the nest every loop is written into (given code
 * around codegen_open_loop): the growing text, the line limit, and scopes
 * whose facts end with the loop's brace. */
#include "codegen.h"
#include "testutil.h"

#ifndef __SANITIZE_ADDRESS__
/* Allocation failure on demand: this executable's realloc comes before glibc's for the lab's
 * library too (ELF interposition) and passes every call through unless fail_realloc is set.
 * AddressSanitizer brings its own allocator, so its builds keep glibc's realloc. */
extern void *__libc_realloc(void *p, size_t size);
static int fail_realloc;
void *realloc(void *p, size_t size) { return fail_realloc ? NULL : __libc_realloc(p, size); }
#endif

typedef struct fixture { sym_arena *arena; sym_dim n; codegen_text text; codegen_nest nest; uopc_error err; } fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  if (!f || sym_arena_new(&f->arena, &f->err) || sym_dim_init(&f->n, "n", 1, 4096, 1, &f->err)) return -1;
  codegen_nest_init(&f->nest, &f->text, f->arena, "int32_t", 1, &f->err);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  codegen_text_fini(&f->text);
  sym_arena_free(f->arena);
  free(f);
  return 0;
}

static void test_codegen_printf_appends_and_grows(void **state) {
  fixture *f = *state;
  assert_uopc_ok(codegen_printf(&f->text, &f->err, "%s", ""), f->err);   /* nothing, and no error */
  assert_int_equal(f->text.len, 0);
  assert_string_equal(f->text.data, "");
  for (int k = 0; k < 300; k++) assert_uopc_ok(codegen_printf(&f->text, &f->err, "%04d|", k), f->err);
  assert_int_equal(f->text.len, 1500);
  assert_int_equal(strlen(f->text.data), 1500);
  if (strncmp(f->text.data, "0000|0001|", 10) != 0 || strcmp(f->text.data + 1495, "0299|") != 0)
    fail_msg("300 pieces of 5 characters: got \"%.10s...%s\"", f->text.data, f->text.data + 1495);
}

static void test_codegen_printf_reports_out_of_memory(void **state) {
  fixture *f = *state;
#ifdef __SANITIZE_ADDRESS__
  (void)f;
  testutil_skip_under_asan("glibc's realloc, made to fail");
#else
  assert_uopc_ok(codegen_printf(&f->text, &f->err, "kept"), f->err);
  fail_realloc = 1;   /* 2000 more characters need a bigger buffer */
  int rc = codegen_printf(&f->text, &f->err, "%2000s", "");
  fail_realloc = 0;
  assert_uopc_code(rc, UOPC_E_NOMEM, f->err);
  assert_contains(f->err.message, "generated source: out of memory");
  assert_string_equal(f->text.data, "kept");   /* what was written stays */
  assert_int_equal(f->text.len, 4);
#endif
}

static void test_codegen_line_refuses_a_line_of_codegen_line_max(void **state) {
  fixture *f = *state;
  char *line = malloc(CODEGEN_LINE_MAX + 1);
  memset(line, 'x', CODEGEN_LINE_MAX);
  line[CODEGEN_LINE_MAX - 1] = '\0';   /* the longest line: CODEGEN_LINE_MAX - 1 characters */
  assert_uopc_ok(codegen_line(&f->nest, "%s", ""), f->err);   /* an empty line: the indentation */
  assert_string_equal(f->text.data, "  \n");
  codegen_text_fini(&f->text);
  assert_uopc_ok(codegen_line(&f->nest, "%s", line), f->err);
  assert_int_equal(f->text.len, 2 + CODEGEN_LINE_MAX - 1 + 1);   /* indented one level, then \n */
  line[CODEGEN_LINE_MAX - 1] = 'x';
  line[CODEGEN_LINE_MAX] = '\0';
  assert_uopc_code(codegen_line(&f->nest, "%s", line), UOPC_E_LIMIT, f->err);
  assert_contains(f->err.message, "a generated line of 1280 characters");
  free(line);
}

static void test_codegen_close_drops_the_loops_fact(void **state) {
  fixture *f = *state;
  const sym_expr *n = sym_expr_dim(f->arena, &f->n), *i0 = NULL;
  assert_uopc_ok(codegen_open_loop(&f->nest, "i0", n, &i0, &f->err), f->err);
  assert_uopc_ok(codegen_require_lt(&f->nest, i0, n), f->err);   /* inside: i0 < n holds */
  assert_uopc_ok(codegen_line(&f->nest, "out[i0] = 0;"), f->err);
  assert_uopc_ok(codegen_close(&f->nest), f->err);
  assert_string_equal(f->text.data, "  for (int32_t i0 = 0; i0 < n; i0++) {\n    out[i0] = 0;\n  }\n");
  assert_int_equal(f->nest.n_scopes, 1);
  assert_uopc_code(codegen_require_lt(&f->nest, i0, n), UOPC_E_INVALID, f->err);   /* after its brace */
  assert_contains(f->err.message, "codegen: cannot prove i0 < n");
  /* The function's own brace (opened by codegen_line, not as a scope) closes without the root. */
  assert_uopc_ok(codegen_close(&f->nest), f->err);
  assert_int_equal(f->nest.n_scopes, 1);
  assert_int_equal(f->nest.depth, 0);
  assert_ptr_equal(codegen_scope(&f->nest), &f->nest.scopes[0]);
  assert_string_equal(f->text.data + f->text.len - 2, "}\n");
}

/* A loop codegen_open_loop refuses leaves the nest as it was: no scope, no indentation, no
 * text, so the next loop opens where the refused one would have. */
static void test_codegen_open_loop_refused_leaves_the_nest_as_it_was(void **state) {
  fixture *f = *state;
  const sym_expr *n = sym_expr_dim(f->arena, &f->n), *v = NULL;
  assert_uopc_code(codegen_open_loop(&f->nest, "i0", sym_expr_const(f->arena, 0), &v, &f->err), UOPC_E_INVALID,
                   f->err);   /* a loop that never runs */
  assert_uopc_code(codegen_open_loop(&f->nest, NULL, n, &v, &f->err), UOPC_E_INVALID, f->err);   /* no name */
  assert_int_equal(f->nest.n_scopes, 1);
  assert_int_equal(f->nest.depth, 1);
  assert_int_equal(f->text.len, 0);
  memset(&f->err, 0, sizeof f->err);
  assert_uopc_ok(codegen_open_loop(&f->nest, "i0", n, &v, &f->err), f->err);
  assert_uopc_ok(codegen_close(&f->nest), f->err);
  assert_string_equal(f->text.data, "  for (int32_t i0 = 0; i0 < n; i0++) {\n  }\n");
  assert_int_equal(f->nest.n_scopes, 1);
  assert_int_equal(f->nest.depth, 1);
}

/* CODEGEN_MAX_SCOPES scopes at most, the root included: one loop more is UOPC_E_LIMIT, whether
 * its scope is pushed bare or opened as a loop. */
static void test_codegen_nest_refuses_loops_past_its_depth(void **state) {
  fixture *f = *state;
  const sym_expr *n = sym_expr_dim(f->arena, &f->n), *v = NULL;
  sym_scope *s;
  for (int k = 1; k < CODEGEN_MAX_SCOPES - 1; k++) assert_uopc_ok(codegen_push_scope(&f->nest, &s), f->err);
  assert_uopc_ok(codegen_open_loop(&f->nest, "i0", n, &v, &f->err), f->err);   /* the last one fits */
  assert_int_equal(f->nest.n_scopes, CODEGEN_MAX_SCOPES);
  assert_uopc_code(codegen_push_scope(&f->nest, &s), UOPC_E_LIMIT, f->err);
  assert_contains(f->err.message, "codegen: loops nested deeper than 39");
  memset(&f->err, 0, sizeof f->err);
  assert_uopc_code(codegen_open_loop(&f->nest, "i1", n, &v, &f->err), UOPC_E_LIMIT, f->err);
  assert_contains(f->err.message, "codegen: loops nested deeper than 39");
}

/* What each element of a sum sees: the innermost scope's upper bound on the lane variable r1
 * (by the interval of its loop's bound) and whether r1 < LANES and j < n are proved there. */
typedef struct lane_probe {
  int calls;
  int64_t r1_hi[2];
  int lane_proved[2], index_proved[2];
  const sym_expr *n;
} lane_probe;

static int probe_element(void *ctx, codegen_nest *n, const sym_expr *j, char *value, size_t size) {
  lane_probe *p = ctx;
  const sym_scope *s = codegen_scope(n);
  uopc_error err = {0};
  sym_interval r1;
  int k = p->calls++;
  if (k >= 2 || !s->var_expr || sym_expr_interval(s->var_expr, &r1, &err)) return UOPC_FAIL(n->err, UOPC_E_INVALID, "probe");
  p->r1_hi[k] = r1.hi;
  if (sym_scope_prove_lt(s, s->var_expr, sym_expr_const(n->arena, CODEGEN_LANES), &p->lane_proved[k], &err) ||
      sym_scope_prove_lt(s, j, p->n, &p->index_proved[k], &err))
    return UOPC_FAIL(n->err, UOPC_E_INVALID, "probe: %s", err.message);
  snprintf(value, size, "x[r0 + r1]");
  return UOPC_OK;
}

static int probe_combine(void *ctx, codegen_nest *n, const char *acc, const char *value) {
  (void)ctx;
  return codegen_line(n, "%s += %s;", acc, value);
}

/* The tail loop's condition is r0 + r1 < n: its scope may hold that and no more, so r1's bound
 * there is n - r0 (below 4096), not LANES. r1 < LANES, which the lane index needs, must be proved
 * from r0 + r1 < n and n < r0 + LANES (the block loop's exit), not read off a bound the loop does
 * not have. In the blocks it is the lane loop's own bound. */
/* Generated code is read by people: each line is indented two spaces per brace still open
 * before it (a line that starts with '}' closes one first), from the nest's first depth. */
static void expect_indented_by_braces(const char *text, int depth) {
  for (const char *line = text; *line;) {
    const char *end = strchr(line, '\n');
    int len = end ? (int)(end - line) : (int)strlen(line), indent = 0;
    while (indent < len && line[indent] == ' ') indent++;
    if (indent < len && line[indent] == '}') depth--;
    if (indent != 2 * depth)
      fail_msg("line \"%.*s\" is indented by %d, expected %d (depth %d)", len, line, indent, 2 * depth, depth);
    for (int k = indent + (line[indent] == '}'); k < len; k++) depth += (line[k] == '{') - (line[k] == '}');
    line += len + (end != NULL);
  }
}

static void test_codegen_emit_lanes_proves_the_tails_lane_below_lanes(void **state) {
  fixture *f = *state;
  lane_probe p = {.n = sym_expr_dim(f->arena, &f->n)};
  codegen_reducer r = {"float", "0.0f", probe_element, probe_combine, &p};
  assert_uopc_ok(codegen_emit_lanes(&f->nest, p.n, &r, &f->err), f->err);
  assert_int_equal(p.calls, 2);                   /* one element in the blocks, one in the tail */
  assert_int_equal(p.r1_hi[0], CODEGEN_LANES - 1);
  if (p.r1_hi[1] != 4095)
    fail_msg("the tail's r1 is bounded by %lld: its scope assumes r1 < LANES, which its loop"
             " (r0 + r1 < n) does not state; expected n - r0, at most 4095", (long long)p.r1_hi[1]);
  for (int k = 0; k < 2; k++) {
    if (!p.lane_proved[k]) fail_msg("%s: r1 < LANES is not proved", k ? "the tail" : "the blocks");
    if (!p.index_proved[k]) fail_msg("%s: r0 + r1 < n is not proved", k ? "the tail" : "the blocks");
  }
  assert_contains(f->text.data, "for (int32_t r1 = 0; r0 + r1 < n; r1++) {");
  expect_indented_by_braces(f->text.data, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_codegen_printf_appends_and_grows, setup, teardown),
    cmocka_unit_test_setup_teardown(test_codegen_printf_reports_out_of_memory, setup, teardown),
    cmocka_unit_test_setup_teardown(test_codegen_line_refuses_a_line_of_codegen_line_max, setup, teardown),
    cmocka_unit_test_setup_teardown(test_codegen_close_drops_the_loops_fact, setup, teardown),
    cmocka_unit_test_setup_teardown(test_codegen_nest_refuses_loops_past_its_depth, setup, teardown),
    cmocka_unit_test_setup_teardown(test_codegen_emit_lanes_proves_the_tails_lane_below_lanes, setup, teardown),
    cmocka_unit_test_setup_teardown(test_codegen_open_loop_refused_leaves_the_nest_as_it_was, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
