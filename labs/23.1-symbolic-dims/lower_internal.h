/* lower_internal.h: what lower.c, lower_kernel.c and emit.c share (given
 * code; the compiler core, lab 23.1). Not for callers. */
#ifndef LOWER_INTERNAL_H
#define LOWER_INTERNAL_H

#include "lower.h"

#define LOWER_EXPR_MAX 1024
/* A reduction keeps this many partial sums per output element, named LANES
 * in the text, as lab 23.1's row sum does (chapter 23.1, "The order of a sum"). */
#define LOWER_LANES 32
/* Elementwise ops fused into one value nest at most this deep: each level is
 * a recursion of the lowering, so a deeper chain is refused (UOPC_E_LIMIT)
 * rather than run out of stack. */
#define LOWER_NESTING_MAX 4096

/* A value already computed in this loop body: node at idx is in t<tmp>. */
typedef struct lower_memo {
  const ir_node *node;
  const sym_expr *idx[UOPC_MAX_RANK];
  int tmp;
} lower_memo;

typedef struct lower_ctx {
  const lower_program *p;
  codegen_text *t;
  sym_arena *arena;
  uopc_error *err;
  const char *ix;           /* the index type's C name */
  const ir_node *root;      /* the node this kernel computes (never loaded) */
  int depth;                /* indentation, two spaces a level */
  int next_tmp;
  int nesting;              /* values being computed, one inside the other */
  lower_memo *memo;
  int n_memo, cap_memo;
  int needs64;              /* an address left int32: the caller re-emits at 64 bits */
} lower_ctx;

int lower_ctx_printf(lower_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int lower_ctx_expr(lower_ctx *c, const sym_expr *e, char *buf, size_t size, const char *what);

/* Appends kernel k's loop nest (C) or __global__ body (CUDA) to c->t. */
int lower_emit_kernel(lower_ctx *c, int k);
/* The whole text: banner, prelude, then the function(s). */
int lower_emit_source(lower_program *p, uopc_error *err);

#endif
