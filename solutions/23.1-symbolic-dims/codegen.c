/* codegen.c: the loops of every generated kernel (lab 23.1).
 * A loop is text and a scope at once: the header goes into the kernel, and
 * the scope records what the header guarantees (i0 < n) so that the code
 * written inside can prove its indices in range. Chapter 23.1, "Reading the
 * generated loop" and "The order of a sum". */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "codegen.h"

int codegen_printf(codegen_text *t, uopc_error *err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return UOPC_FAIL(err, UOPC_E_INVALID, "bad format '%s'", fmt);
  if (t->len + (size_t)n + 1 > t->cap) {
    size_t cap = t->cap ? t->cap : 1024;
    while (cap < t->len + (size_t)n + 1) cap *= 2;
    char *data = realloc(t->data, cap);
    if (!data) return UOPC_FAIL(err, UOPC_E_NOMEM, "generated source: out of memory");
    t->data = data;
    t->cap = cap;
  }
  va_start(ap, fmt);
  vsnprintf(t->data + t->len, t->cap - t->len, fmt, ap);
  va_end(ap);
  t->len += (size_t)n;
  return UOPC_OK;
}

void codegen_text_fini(codegen_text *t) {
  free(t->data);
  memset(t, 0, sizeof *t);
}

/* ---- The nest: text, indentation and scopes. */

void codegen_nest_init(codegen_nest *n, codegen_text *t, sym_arena *a, const char *ix, int depth,
                       uopc_error *err) {
  n->t = t;
  n->arena = a;
  n->ix = ix;
  n->depth = depth;
  n->err = err;
  n->n_scopes = 1;
  sym_scope_init(&n->scopes[0], NULL, a);
}

const sym_scope *codegen_scope(const codegen_nest *n) { return &n->scopes[n->n_scopes - 1]; }

int codegen_push_scope(codegen_nest *n, sym_scope **scope) {
  if (n->n_scopes == CODEGEN_MAX_SCOPES)
    return UOPC_FAIL(n->err, UOPC_E_LIMIT, "codegen: loops nested deeper than %d", CODEGEN_MAX_SCOPES - 1);
  *scope = &n->scopes[n->n_scopes++];
  sym_scope_init(*scope, &n->scopes[n->n_scopes - 2], n->arena);
  return UOPC_OK;
}

int codegen_line(codegen_nest *n, const char *fmt, ...) {
  char line[CODEGEN_LINE_MAX];
  va_list ap;
  va_start(ap, fmt);
  int len = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (len < 0 || (size_t)len >= sizeof line)
    return UOPC_FAIL(n->err, UOPC_E_LIMIT, "codegen: a generated line of %d characters", len);
  return codegen_printf(n->t, n->err, "%*s%s\n", 2 * n->depth, "", line);
}

int codegen_open(codegen_nest *n, const char *line) {
  sym_scope *s;
  int rc = codegen_push_scope(n, &s);
  if (!rc) rc = codegen_line(n, "%s", line);
  n->depth++;
  return rc;
}

int codegen_close(codegen_nest *n) {
  if (n->n_scopes > 1) n->n_scopes--;
  n->depth--;
  return codegen_line(n, "}");
}

int codegen_expr_c(codegen_nest *n, const sym_expr *e, char *buf, size_t size) {
  const sym_expr *s;
  int rc = sym_expr_simplify(n->arena, e, &s, n->err);
  return rc ? rc : sym_expr_to_c(s, buf, size, n->err);
}

int codegen_require_lt(codegen_nest *n, const sym_expr *lhs, const sym_expr *rhs) {
  char lt[CODEGEN_EXPR_MAX] = "", rt[CODEGEN_EXPR_MAX] = "";
  int proved = 0, rc = sym_scope_prove_lt(codegen_scope(n), lhs, rhs, &proved, n->err);
  if (rc || proved) return rc;
  rc = codegen_expr_c(n, lhs, lt, sizeof lt);
  if (!rc) rc = codegen_expr_c(n, rhs, rt, sizeof rt);
  return rc ? rc : UOPC_FAIL(n->err, UOPC_E_INVALID, "codegen: cannot prove %s < %s", lt, rt);
}

/* ---- The student's part. */

int codegen_open_loop(codegen_nest *n, const char *name, const sym_expr *extent,
                      const sym_expr **var, uopc_error *err) {
// STUDENT 23.1 codegen_open_loop
  char text[CODEGEN_EXPR_MAX] = "";
  sym_scope *s;
  if (n->n_scopes == CODEGEN_MAX_SCOPES)
    return UOPC_FAIL(err, UOPC_E_LIMIT, "codegen: loops nested deeper than %d", CODEGEN_MAX_SCOPES - 1);
  s = &n->scopes[n->n_scopes];
  int rc = sym_scope_open_loop(s, codegen_scope(n), n->arena, name, extent, var, err);
  if (!rc) rc = codegen_expr_c(n, extent, text, sizeof text);
  if (!rc) rc = codegen_line(n, "for (%s %s = 0; %s < %s; %s++) {", n->ix, name, name, text, name);
  if (rc) return rc;
  n->n_scopes++;
  n->depth++;
  return UOPC_OK;
// END STUDENT
}

// STUDENT 23.1 helpers
/* The element j = r0 + r1 into lane r1, after proving both in range. */
static int add_element(codegen_nest *n, const codegen_reducer *r, const sym_expr *j,
                       const sym_expr *r1, const sym_expr *extent, const sym_expr *lanes) {
  char value[CODEGEN_EXPR_MAX] = "";
  int rc = codegen_require_lt(n, j, extent);            /* the index stays in its row */
  if (!rc) rc = codegen_require_lt(n, r1, lanes);       /* and the lane in acc0 */
  if (!rc) rc = r->element(r->ctx, n, j, value, sizeof value);
  return rc ? rc : r->combine(r->ctx, n, "acc0[r1]", value);
}

/* Whole blocks: `for (; r0 <= n - LANES; r0 += LANES)`, so r0 + LANES - 1 < n
 * holds inside, and with r1 < LANES that proves r0 + r1 < n. The bound
 * cannot overflow: n - LANES >= -LANES. (It is n's text followed by
 * "- LANES": the canonical form of 4096 - LANES would print as
 * LANES*(-1) + 4096.) */
static int emit_blocks(codegen_nest *n, const codegen_reducer *r, const sym_expr *extent,
                       const sym_expr *lanes) {
  sym_arena *a = n->arena;
  char text[CODEGEN_EXPR_MAX] = "";
  const sym_expr *r0, *r1;
  sym_scope *blocks;
  int rc = codegen_expr_c(n, extent, text, sizeof text);
  if (!rc) rc = codegen_line(n, "for (; r0 <= %s - LANES; r0 += LANES) {", text);
  if (!rc) rc = codegen_push_scope(n, &blocks);
  n->depth++;
  if (!rc) rc = sym_scope_open_loop(blocks, &n->scopes[n->n_scopes - 2], a, "r0", extent, &r0, n->err);
  if (!rc) rc = sym_scope_assume_lt(blocks, sym_expr_sub(a, sym_expr_add(a, r0, lanes),
                                                         sym_expr_const(a, 1)), extent, n->err);
  if (!rc) rc = codegen_open_loop(n, "r1", lanes, &r1, n->err);
  if (!rc) rc = add_element(n, r, sym_expr_add(a, r0, r1), r1, extent, lanes);
  if (!rc) rc = codegen_close(n);
  return rc ? rc : codegen_close(n);
}

/* The tail: `for (r1 = 0; r0 + r1 < n; r1++)`, fewer than LANES elements.
 * After the blocks r0 is in [0, n] and n < r0 + LANES (the block loop's
 * condition failed). The tail's scope holds its own condition, r0 + r1 < n
 * (with r1 < n - r0, the same, as the loop's bound). r1 < LANES is not this
 * loop's bound, so it is proved: r0 + r1 < n and n < r0 + LANES, each shown
 * by the prover (generation fails otherwise), chain to r0 + r1 < r0 + LANES,
 * that is r1 < LANES, which the one-fact prover cannot follow by itself;
 * only then is it recorded, for add_element's check. */
static int emit_tail(codegen_nest *n, const codegen_reducer *r, const sym_expr *extent,
                     const sym_expr *lanes) {
  sym_arena *a = n->arena;
  char text[CODEGEN_EXPR_MAX] = "";
  const sym_expr *r0, *r1, *j = NULL;
  sym_scope *rest, *lane;
  /* After the blocks r0 is in [0, n]: a variable below n + 1, with n < r0 + LANES. */
  int rc = codegen_push_scope(n, &rest);
  if (!rc) rc = sym_scope_open_loop(rest, &n->scopes[n->n_scopes - 2], a, "r0",
                                    sym_expr_add(a, extent, sym_expr_const(a, 1)), &r0, n->err);
  if (!rc) rc = sym_scope_assume_lt(rest, extent, sym_expr_add(a, r0, lanes), n->err);
  if (!rc) rc = codegen_push_scope(n, &lane);
  if (!rc) rc = sym_scope_open_loop(lane, rest, a, "r1", sym_expr_sub(a, extent, r0), &r1, n->err);
  if (!rc) rc = sym_scope_assume_lt(lane, j = sym_expr_add(a, r0, r1), extent, n->err);
  if (!rc) rc = codegen_require_lt(n, j, extent);                         /* r0 + r1 < n */
  if (!rc) rc = codegen_require_lt(n, extent, sym_expr_add(a, r0, lanes));   /* n < r0 + LANES */
  if (!rc) rc = sym_scope_assume_lt(lane, r1, lanes, n->err);             /* so r1 < LANES */
  if (!rc) rc = codegen_expr_c(n, extent, text, sizeof text);
  if (!rc) rc = codegen_line(n, "for (%s r1 = 0; r0 + r1 < %s; r1++) {", n->ix, text);
  n->depth++;
  if (!rc) rc = add_element(n, r, j, r1, extent, lanes);
  if (!rc) rc = codegen_close(n);   /* the lane scope and the brace */
  if (n->n_scopes > 1) n->n_scopes--;   /* the rest scope, which has no brace */
  return rc;
}

/* The lanes, pairwise: lane k with lane k + LANES/2, then k + LANES/4, ... 1. */
static int emit_combine(codegen_nest *n, const codegen_reducer *r) {
  char head[128];
  snprintf(head, sizeof head, "for (%s r1 = LANES / 2; r1 > 0; r1 /= 2) {", n->ix);
  int rc = codegen_open(n, head);
  snprintf(head, sizeof head, "for (%s r2 = 0; r2 < r1; r2++) {", n->ix);
  if (!rc) rc = codegen_open(n, head);
  if (!rc) rc = r->combine(r->ctx, n, "acc0[r2]", "acc0[r2 + r1]");
  if (!rc) rc = codegen_close(n);
  return rc ? rc : codegen_close(n);
}
// END STUDENT

int codegen_emit_lanes(codegen_nest *n, const sym_expr *extent, const codegen_reducer *r,
                       uopc_error *err) {
// STUDENT 23.1 codegen_emit_lanes
  sym_dim lanes_dim;
  const sym_expr *lanes;
  int rc = sym_dim_init(&lanes_dim, "LANES", CODEGEN_LANES, CODEGEN_LANES, 1, err);
  if (!rc && !(lanes = sym_expr_dim(n->arena, &lanes_dim)))
    rc = UOPC_FAIL(err, UOPC_E_NOMEM, "codegen: the lane count: out of memory");
  if (!rc && r->identity[0] == '0')      /* a zero: C's initialiser fills every lane */
    rc = codegen_line(n, "%s acc0[LANES] = {%s};", r->type, r->identity);
  else if (!rc) {
    rc = codegen_line(n, "%s acc0[LANES];", r->type);
    if (!rc) rc = codegen_line(n, "for (%s r1 = 0; r1 < LANES; r1++) acc0[r1] = %s;", n->ix, r->identity);
  }
  if (!rc) rc = codegen_line(n, "%s r0 = 0;", n->ix);
  if (!rc) rc = emit_blocks(n, r, extent, lanes);
  if (!rc) rc = emit_tail(n, r, extent, lanes);
  return rc ? rc : emit_combine(n, r);
// END STUDENT
}
