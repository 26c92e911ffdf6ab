/* lower_internal.h: what the lowering's passes share (given code; the
 * compiler core). Not for callers. The passes run in sequence and each file
 * calls only those before it: lower_fuse.c (with LOWER_FUSE), lower_plan.c,
 * lower_kernel.c, emit.c, then lower.c, the pipeline. */
#ifndef LOWER_INTERNAL_H
#define LOWER_INTERNAL_H

#include "lower.h"

#define LOWER_EXPR_MAX CODEGEN_EXPR_MAX
/* Elementwise ops fused into one value nest at most this deep: each level is
 * a recursion of the lowering, so a deeper chain is refused (UOPC_E_LIMIT)
 * rather than run out of stack. */
#define LOWER_NESTING_MAX 4096

/* A value already computed in this loop body: node at idx is in t<tmp>.
 * Entries are a stack (a branch's values are popped after it) and a hash
 * over it: memo_head[h] is the newest entry of hash h, next the one before,
 * so popping the newest entry unlinks it from its chain's head. */
typedef struct lower_memo {
  const ir_node *node;
  const sym_expr *idx[UOPC_MAX_RANK];
  int tmp;
  int next;                 /* the older entry of the same chain, or -1 */
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
  int *memo_head;           /* cap_memo chains (a power of 2), -1 when empty */
  int needs64;              /* an address left int32: the caller re-emits at 64 bits */
  int uses_tanh_f32;        /* the body calls tanh_f32: the banner says so (emit.c) */
  int uses_vectors;         /* the body holds f32v (lower_matmul.c's vectors form): the prelude defines it */
  int uses_openmp;          /* the body holds an omp loop (LOWER_PARALLEL): the banner says so */
  int parallel_next;        /* the nest being written opens with the omp pragma */
} lower_ctx;

/* ---- Pass 0, lower_fuse.c (LOWER_FUSE only): which other nodes to store. */

/* store[id].why != 0 for each node of p's graph to materialise: to the
 * marks of lower_fuse_marks (used and store, both made by it), those p's
 * fusion rule adds (checked: computed nodes the outputs reach) and the
 * chain cut's. */
int lower_fuse_decide(const lower_program *p, const unsigned char *used, lower_stored *store, uopc_error *err);

/* LOWER_FUSE (lower_share.c, called by planning): each temporary's scratch
 * offset, sharing a place with one whose readers have all run, and the
 * block's size, once buffers and kernels are planned. */
int lower_share_scratch(lower_program *p, uopc_error *err);

/* ---- Pass 1, lower_plan.c: the plan, into the program. */

/* UOPC_E_INVALID unless outputs are n nodes of g (which has no error) and
 * entry is a C identifier of at most 47 characters. */
int lower_plan_check_outputs(const ir_graph *g, const ir_node *const *outputs, int n, const char *entry,
                             uopc_error *err);
/* Buffers, dims, scratch, the index width and the non-empty extents of p,
 * whose graph, outputs count, backend and flags are set. */
int lower_plan(lower_program *p, const ir_node *const *outputs, uopc_error *err);
/* 1 when matmul n of p is written in rows (lower_matmul.c; C back end,
 * LOWER_FUSE): its order is then 'serial', and planning packs its right
 * operand into a contiguous temporary unless it is read with unit stride
 * along its columns (a buffer, or an input whose last stride is 1), or the
 * matmul has one row per batch and that operand is a transpose of such a
 * matrix: then it is read in place, as dot products (its buffer's columns). */
int lower_plan_matmul_rows(const lower_program *p, const ir_node *n);
/* The signature, once the text has settled the index width. */
int lower_plan_signature(lower_program *p, uopc_error *err);

/* ---- Pass 2, lower_kernel.c: loop nests. */

/* The C text of e (simplified) into buf; widens the index type to 64 bits
 * when a part of e may leave int32, and refuses what may leave int64. */
int lower_ctx_expr(lower_ctx *c, const sym_expr *e, char *buf, size_t size, const char *what);

/* 1 when reduction n keeps its source's last axis: its elements are added
 * one at a time (serially) rather than into lanes. */
int lower_reduces_serially(const ir_node *n);
/* Appends kernel k's loop nest (C) or __global__ body (CUDA). */
int lower_emit_kernel(lower_ctx *c, int k);
/* LOWER_PARALLEL: whether n's nest runs its outermost loop (over disjoint
 * outputs) on OpenMP's threads: never (no flag, the CUDA back end, no such
 * loop, or work whose upper bound stays below LOWER_PARALLEL_WORK), always
 * (its lower bound reaches it), or when cond, C text, holds; the caller then
 * writes the nest twice, `if (cond)` threaded, else serial. A nest written
 * with c->parallel_next set gets the pragma before its outermost loop
 * (lower_ctx_open_parallel, which clears it). */
typedef enum lower_split { LOWER_SPLIT_NEVER, LOWER_SPLIT_ALWAYS, LOWER_SPLIT_IF } lower_split;
int lower_ctx_parallel(lower_ctx *c, const ir_node *n, char *cond, size_t size, lower_split *split);
int lower_ctx_open_parallel(lower_ctx *c);

/* The values of lower_kernel.c's loop bodies, for loops written elsewhere:
 * n at idx into t<*tmp> (memoised); the memo popped back to a mark
 * (c->n_memo) when a scope closes; idx's row-major address in n's shape
 * (simplified; NULL with c->n.err set); a literal of dtype dt. */
int lower_ctx_value(lower_ctx *c, const ir_node *n, const sym_expr *const *idx, int *tmp);
void lower_ctx_forget(lower_ctx *c, int mark);
const sym_expr *lower_ctx_simp(lower_ctx *c, const sym_expr *e);   /* NULL with c->n.err set */
const sym_expr *lower_ctx_row_major(lower_ctx *c, const sym_expr *const *idx, const ir_node *n);
void lower_ctx_literal(const lower_ctx *c, double v, uopc_dtype dt, char *buf, size_t size);
/* 1 when n is read by a load (an input, or a node with a buffer) whose last
 * axis has unit stride; then lower_ctx_address writes `name[address]` of n at
 * idx, the element a vector load of the next lanes starts from. */
int lower_ctx_loads_rows(const lower_ctx *c, const ir_node *n);
int lower_ctx_address(lower_ctx *c, const ir_node *n, const sym_expr *const *idx, char *at, size_t size);

/* ---- lower_matmul.c (C back end, LOWER_FUSE): the matmul in rows. */

/* Appends kernel k's nest, a matmul for which lower_plan_matmul_rows holds. */
int lower_matmul_kernel_c(lower_ctx *c, int k);

/* ---- Pass 3, emit.c: the text around the nests. */

/* The whole text: banner, prelude, then the function(s). */
int lower_emit_source(lower_program *p, uopc_error *err);

#endif
