/* lower_internal.h: what lower.c, lower_kernel.c and emit.c share (given
 * code; the compiler core, lab 23.1). Not for callers. */
#ifndef LOWER_INTERNAL_H
#define LOWER_INTERNAL_H

#include "lower.h"

#define LOWER_EXPR_MAX CODEGEN_EXPR_MAX
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

/* Writing one program: the nest (text, indentation, scopes: codegen.h) and
 * what the values of the current loop body are. */
typedef struct lower_ctx {
  codegen_nest n;
  const lower_program *p;
  const ir_node *root;      /* the node this loop nest computes (never loaded) */
  int next_tmp;
  int nesting;              /* values being computed, one inside the other */
  lower_memo *memo;
  int n_memo, cap_memo;
  int needs64;              /* an address left int32: the caller re-emits at 64 bits */
} lower_ctx;

int lower_ctx_expr(lower_ctx *c, const sym_expr *e, char *buf, size_t size, const char *what);

/* 1 when reduction n keeps its source's last axis: its elements are added
 * one at a time (serially) rather than into lanes. */
int lower_reduces_serially(const ir_node *n);
/* Appends kernel k's loop nest (C) or __global__ body (CUDA). */
int lower_emit_kernel(lower_ctx *c, int k);
/* The whole text: banner, prelude, then the function(s). */
int lower_emit_source(lower_program *p, uopc_error *err);

#endif
