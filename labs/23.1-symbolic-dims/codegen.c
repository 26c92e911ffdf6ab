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
  /* Lab 23.1: write codegen_open_loop here. See README.md in this folder. */
  (void)n; (void)name; (void)extent; (void)var;
  return UOPC_FAIL(err, UOPC_E_NOT_IMPLEMENTED, "lab 23.1: codegen_open_loop is not implemented yet");
}

/* Lab 23.1: helper functions for your code go here. */

int codegen_emit_lanes(codegen_nest *n, const sym_expr *extent, const codegen_reducer *r,
                       uopc_error *err) {
  /* Lab 23.1: write codegen_emit_lanes here. See README.md in this folder. */
  (void)n; (void)extent; (void)r;
  return UOPC_FAIL(err, UOPC_E_NOT_IMPLEMENTED, "lab 23.1: codegen_emit_lanes is not implemented yet");
}
