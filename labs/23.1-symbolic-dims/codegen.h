/* codegen.h: the loops of every generated kernel (lab 23.1).
 * The compiler core (lower.h) decides what each kernel computes; the loops it
 * writes come from here: a loop whose bound is a runtime argument, opened as
 * a scope that knows its variable is below that bound, and the blocked
 * reduction whose order the banner states. Every kernel of the book, from
 * this lab's plans to tensorjit's, is written through these two functions.
 * Chapter 23.1, "Reading the generated loop" and "The order of a sum". */
#ifndef CODEGEN_H
#define CODEGEN_H

#include "sym_fact.h"
#include "sym_index.h"

/* Partial results of a reduction, LANES in the text (chapter 23.1, "The order
 * of a sum"): 32 independent additions that gcc vectorises without
 * reassociating any. */
#define CODEGEN_LANES 32
#define CODEGEN_MAX_SCOPES 40
#define CODEGEN_EXPR_MAX 1024
#define CODEGEN_LINE_MAX (CODEGEN_EXPR_MAX + 256)   /* one generated line, its NUL included */

typedef struct codegen_text {      /* a growing NUL-terminated string */
  char *data;
  size_t len, cap;
} codegen_text;

/* Appends printf-style text. Errors: UOPC_E_NOMEM. */
int codegen_printf(codegen_text *t, uopc_error *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void codegen_text_fini(codegen_text *t);

/* A loop nest being written: the text, indented two spaces a level, and a
 * stack of scopes whose facts hold at the current line (the innermost last). */
typedef struct codegen_nest {
  codegen_text *t;
  sym_arena *arena;                 /* where loop variables and proofs are built */
  const char *ix;                   /* the index type, "int32_t" or "int64_t" */
  int depth;                        /* indentation level */
  int n_scopes;                     /* scopes[0] is the root */
  sym_scope scopes[CODEGEN_MAX_SCOPES];
  uopc_error *err;                  /* every failure is recorded here */
} codegen_nest;

/* ---- Given. */

void codegen_nest_init(codegen_nest *n, codegen_text *t, sym_arena *a, const char *ix, int depth,
                       uopc_error *err);
/* The innermost scope: the facts that hold where the next line goes. */
const sym_scope *codegen_scope(const codegen_nest *n);
/* A new scope inside the innermost one (for the caller to open as a loop or
 * fill with facts); closed by codegen_close. Errors: UOPC_E_LIMIT. */
int codegen_push_scope(codegen_nest *n, sym_scope **scope);
/* Appends one line at the current indentation. Errors: UOPC_E_LIMIT (a line of
 * CODEGEN_LINE_MAX characters or more), UOPC_E_NOMEM. */
int codegen_line(codegen_nest *n, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends line (ending in "{") and indents what follows, inside a new empty
 * scope. */
int codegen_open(codegen_nest *n, const char *line);
/* Appends "}" one level out and drops the innermost scope. */
int codegen_close(codegen_nest *n);
/* The C text of e, simplified first. Errors: those of sym_expr. */
int codegen_expr_c(codegen_nest *n, const sym_expr *e, char *buf, size_t size);
/* Fails with UOPC_E_INVALID ("codegen: cannot prove r0 + r1 < n") unless
 * lhs < rhs is proved in the innermost scope: the text relies on it. */
int codegen_require_lt(codegen_nest *n, const sym_expr *lhs, const sym_expr *rhs);

/* What a reduction adds, for codegen_emit_lanes. */
typedef struct codegen_reducer {
  const char *type;       /* the accumulator's C type, "float" */
  const char *identity;   /* each lane's starting value, "0.0f" */
  /* Appends the lines computing the element at index j of the reduced axis
   * (inside the nest's innermost scope) and writes its C value ("t3") into
   * value. */
  int (*element)(void *ctx, codegen_nest *n, const sym_expr *j, char *value, size_t size);
  /* Appends `acc = acc (+) value;` for this reduction's (+). */
  int (*combine)(void *ctx, codegen_nest *n, const char *acc, const char *value);
  void *ctx;
} codegen_reducer;

/* ---- The student's part. */

/* Appends `for (<ix> <name> = 0; <name> < <extent>; <name>++) {`, the extent
 * printed from its expression (a runtime argument, never a size of a call),
 * and opens the loop's scope inside the innermost one (sym_scope_open_loop),
 * so that name < extent holds until codegen_close. *var is the variable.
 * err is where the nest records failures (n->err). Errors: UOPC_E_LIMIT
 * (scopes), those of sym_scope_open_loop. */
int codegen_open_loop(codegen_nest *n, const char *name, const sym_expr *extent,
                      const sym_expr **var, uopc_error *err);

/* Appends the reduction of the elements 0 <= j < extent in the order the
 * banner states: `<type> acc0[LANES]` set to the identity; whole blocks,
 * `for (; r0 <= <extent> - LANES; r0 += LANES)` over `for (r1 = 0; r1 <
 * LANES; r1++)`; the tail, `for (r1 = 0; r0 + r1 < <extent>; r1++)`; each
 * element j = r0 + r1 added into lane r1 through r->combine, with j < extent
 * and r1 < LANES proved from the loops' facts (codegen_require_lt; in the
 * tail, whose scope states only its condition, from r0 + r1 < extent and
 * extent < r0 + LANES, each proved); then the
 * lanes pairwise, `for (r1 = LANES / 2; r1 > 0; r1 /= 2)` over `for (r2 = 0;
 * r2 < r1; r2++)`, lane r2 with lane r2 + r1. The result is acc0[0].
 * Errors: UOPC_E_INVALID (a bound not proved), those of the callbacks. */
int codegen_emit_lanes(codegen_nest *n, const sym_expr *extent, const codegen_reducer *r,
                       uopc_error *err);

#endif
