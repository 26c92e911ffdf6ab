/* lower_matmul.c: the matmul's loop nest in rows (given code; the compiler
 * core), for the C back end under LOWER_FUSE (tensorjit, the passes' tests).
 * Each output row is set to zero, then for each k the row gets
 * a[i, k] * b[k, :] added: the innermost loop runs over contiguous columns
 * of the output and of b, so the C compiler vectorises it, and each output
 * element adds its products one at a time in order of k, the interpreter's
 * (ir_eval.c) order. The rows go in tiles of MATMUL_TILE_ROWS: for each
 * pass over MATMUL_TILE_STEP values of k, every row of the tile, so the
 * rows of b the pass reads stay in L1 for the whole tile and consecutive
 * rows' additions do not wait on each other; only a product with one row
 * per batch keeps the row alone. In f32, a tile whose b is read along its
 * rows is written in vectors instead: each of its rows one f32v accumulator
 * of F32_LANES columns (the target's width, emit.c's prelude), stored once. A right operand that is not a unit-stride
 * read (a transpose, a broadcast, a strided view) is stored contiguous first, as
 * planning decides (lower_plan_matmul_rows): a packed copy of K*N elements
 * that the M rows then read. One row per batch whose right operand is a
 * transpose of a row-major matrix (decode attention's q @ k^T) is written
 * in columns instead: MATMUL_COLUMNS output columns at a time, each a dot
 * product added in order of k, b read in place. Same order, same bits.
 * Labs 23.1-23.4 keep the lane form of lower_kernel.c. Chapter 23.7,
 * "The matmul in rows". */
#include <stdio.h>
#include <string.h>
#include "lower_internal.h"

/* Values of k per pass over a lone output row, one row per batch (chapter
 * 23.7, "The matmul in rows": measured against one and against register
 * blocks). */
enum { MATMUL_STEP = 4 };
/* Output columns per pass of the columns form: one AVX-512 register of
 * f32, four of SSE; measured against packing b for decode attention's
 * scores (L 4096, head_dim 16): 50 against 177 us a call. */
enum { MATMUL_COLUMNS = 16 };
/* The tiles form's rows per tile and values of k per pass, measured on the
 * two-layer training step's five shapes (chapter 23.7, "The matmul in
 * rows"): 8 k a pass against 4, and 8 rows a tile, which at batch 16 still
 * gives both threads a tile, against 16 (2 % faster from batch 64). */
enum { MATMUL_TILE_ROWS = 8, MATMUL_TILE_STEP = 8 };

/* ---- The nest. */

static int always_empty(lower_ctx *c, const sym_expr *extent, int *empty) {
  sym_interval iv;
  int rc = sym_expr_interval(extent, &iv, c->n.err);
  *empty = !rc && iv.hi < 1;
  return rc;
}

/* out[row-major address of idx] as text into buf. */
static int out_at(lower_ctx *c, const lower_buffer *buf, const sym_expr *const *idx, char *at, size_t size) {
  char addr[LOWER_EXPR_MAX], what[64];
  snprintf(what, sizeof what, "buffer '%s': the address", buf->name);
  int rc = lower_ctx_expr(c, lower_ctx_row_major(c, idx, buf->node), addr, sizeof addr, what);
  if (!rc) snprintf(at, size, "%s[%s]", buf->name, addr);
  return rc;
}

/* `for (j) out[i, j] = 0;` */
static int zero_row(lower_ctx *c, const lower_buffer *buf, const sym_expr **idx) {
  const ir_node *n = buf->node;
  char at[LOWER_EXPR_MAX + 64], zero[64], name[16];
  snprintf(name, sizeof name, "i%d", n->rank - 1);
  int rc = codegen_open_loop(&c->n, name, n->shape[n->rank - 1], &idx[n->rank - 1], c->n.err);
  if (!rc) rc = out_at(c, buf, idx, at, sizeof at);
  lower_ctx_literal(c, 0, n->dtype, zero, sizeof zero);
  if (!rc) rc = codegen_line(&c->n, "%s = %s;", at, zero);
  return rc ? rc : codegen_close(&c->n);
}

/* `for (j) out[i, j] = out[i, j] + a[i, k0] * b[k0, j] + ...;` over the nk
 * values of k, t<ta[u]> holding a[i, k_u]. C's + groups left to right, so
 * each element still adds its products one at a time in order of k; four
 * per pass load and store the output row a quarter as often. Integers wrap
 * (unsigned arithmetic), as NumPy's. */
static int add_rows(lower_ctx *c, const lower_buffer *buf, const sym_expr **idx, const sym_expr *const *ks,
                    const int *ta, int nk) {
  const ir_node *n = buf->node, *b = n->src[1];
  const sym_expr *ib[UOPC_MAX_RANK];
  char at[LOWER_EXPR_MAX + 64], sum[4 * LOWER_EXPR_MAX], name[16];
  int last = n->rank - 1, mark = c->n_memo, tmp = c->next_tmp, tb[MATMUL_TILE_STEP], fl = uopc_dtype_is_float(n->dtype);
  const char *T = ir_dtype_ctype(n->dtype), *U = n->dtype == UOPC_I64 ? "uint64_t" : "uint32_t";
  snprintf(name, sizeof name, "i%d", last);
  int rc = codegen_open_loop(&c->n, name, n->shape[last], &idx[last], c->n.err);
  for (int d = 0; d < last - 1; d++) ib[d] = idx[d];
  ib[last] = idx[last];
  for (int u = 0; u < nk && !rc; u++) {
    ib[last - 1] = ks[u];
    rc = lower_ctx_value(c, b, ib, &tb[u]);
  }
  if (!rc) rc = out_at(c, buf, idx, at, sizeof at);
  int len = fl ? snprintf(sum, sizeof sum, "%s", at) : snprintf(sum, sizeof sum, "(%s)%s", U, at);
  for (int u = 0; u < nk && !rc; u++)
    len += fl ? snprintf(sum + len, sizeof sum - (size_t)len, " + t%d * t%d", ta[u], tb[u])
              : snprintf(sum + len, sizeof sum - (size_t)len, " + (%s)t%d * (%s)t%d", U, ta[u], U, tb[u]);
  if (!rc && fl) rc = codegen_line(&c->n, "%s = %s;", at, sum);
  else if (!rc) rc = codegen_line(&c->n, "%s = (%s)(%s);", at, T, sum);
  lower_ctx_forget(c, mark);
  c->next_tmp = tmp;
  return rc ? rc : codegen_close(&c->n);
}

/* The body of a loop over k at r0: a[i, r0 + u] for u < nk, then the row added. */
static int k_body(lower_ctx *c, const lower_buffer *buf, const sym_expr **idx, const sym_expr *r0, int nk) {
  const ir_node *n = buf->node;
  const sym_expr *ks[MATMUL_TILE_STEP], *ia[UOPC_MAX_RANK];
  int last = n->rank - 1, mark = c->n_memo, tmp = c->next_tmp, ta[MATMUL_TILE_STEP], rc = UOPC_OK;
  for (int d = 0; d < last; d++) ia[d] = idx[d];
  for (int u = 0; u < nk && !rc; u++) {
    ks[u] = lower_ctx_simp(c, sym_expr_add(c->n.arena, r0, sym_expr_const(c->n.arena, u)));
    ia[last] = ks[u];
    rc = ks[u] ? lower_ctx_value(c, n->src[0], ia, &ta[u]) : c->n.err->code;
  }
  if (!rc) rc = add_rows(c, buf, idx, ks, ta, nk);
  lower_ctx_forget(c, mark);
  c->next_tmp = tmp;
  return rc;
}

/* name, the variable of a loop over [0, extent) by step: name + step - 1 < extent. */
static const sym_expr *step_var(lower_ctx *c, const char *name, const sym_expr *extent, int step) {
  sym_interval iv;
  if (sym_expr_interval(extent, &iv, c->n.err)) return NULL;
  sym_dim d;
  memset(&d, 0, sizeof d);
  snprintf(d.name, sizeof d.name, "%s", name);
  d.hi = iv.hi > step ? iv.hi - step : 0;
  d.multiple_of = 1;
  d.loop = 1;
  return sym_expr_dim(c->n.arena, &d);
}

/* One output row i: zeroed, then MATMUL_STEP rows of b added per pass over
 * it, and the k left over one at a time. */
static int row(lower_ctx *c, const lower_buffer *buf, const sym_expr **idx) {
  const ir_node *n = buf->node, *a = n->src[0];
  const sym_expr *extent = a->shape[a->rank - 1], *r0 = step_var(c, "r0", extent, MATMUL_STEP);
  char ext[LOWER_EXPR_MAX], line[LOWER_EXPR_MAX + 64];
  int rc = zero_row(c, buf, idx), empty = 0;
  if (!rc) rc = always_empty(c, extent, &empty);
  if (rc || empty) return rc;
  if (!r0) return c->n.err->code;
  rc = lower_ctx_expr(c, extent, ext, sizeof ext, "the extent");
  if (!rc) rc = codegen_line(&c->n, "%s r0 = 0;", c->n.ix);
  snprintf(line, sizeof line, "for (; r0 <= %s - %d; r0 += %d) {", ext, MATMUL_STEP, MATMUL_STEP);
  if (!rc) rc = codegen_open(&c->n, line);
  if (!rc) rc = k_body(c, buf, idx, r0, MATMUL_STEP);
  if (!rc) rc = codegen_close(&c->n);
  if (!(r0 = step_var(c, "r0", extent, 1))) return c->n.err->code;
  snprintf(line, sizeof line, "for (; r0 < %s; r0++) {", ext);
  if (!rc) rc = codegen_open(&c->n, line);
  if (!rc) rc = k_body(c, buf, idx, r0, 1);
  return rc ? rc : codegen_close(&c->n);
}

/* `for (ix i = row0; i < row1; i++) {`: the rows of the tile. */
static int open_rows(lower_ctx *c, const char *name) {
  char line[96];
  snprintf(line, sizeof line, "for (%s %s = row0; %s < row1; %s++) {", c->n.ix, name, name, name);
  return codegen_open(&c->n, line);
}

/* ---- The vectors form: the tiles of an f32 product, their columns in vector registers. */

/* The fewest lanes the prelude's f32v has (SSE's 4): a bound on the column
 * variable of the vectors' loop, whose step, F32_LANES, is the target's. */
enum { MATMUL_MIN_LANES = 4 };

static int dot_columns(lower_ctx *c, const ir_node *n, const sym_expr **idx, const sym_expr *j0, int block);
static int store_columns(lower_ctx *c, const lower_buffer *buf, const sym_expr **idx, const sym_expr *j0, int block);

/* `acc = acc + a * b` would keep a tile's accumulators in memory (gcc does
 * not promote an array of them to registers); one f32v per row does. For
 * the tile's rows (nrows of them, rows[r] their indices): the columns
 * F32_LANES at a time, acc<r> zeroed, then for each k in order
 * acc<r> = acc<r> + a[row r, k] * b[k, j..j+F32_LANES) and the vectors
 * stored; the columns left over one at a time, as dot products in order of
 * k. Every element adds its products one at a time in order of k from 0:
 * the rows form's order, so its bits at every width. */
static int vector_rows(lower_ctx *c, const lower_buffer *buf, const sym_expr **idx, const sym_expr *const *rows,
                       int nrows) {
  const ir_node *n = buf->node, *a = n->src[0], *b = n->src[1];
  const int last = n->rank - 1, at = last - 1;
  const sym_expr *extent = n->shape[last], *j0 = NULL, *k = NULL, *ia[UOPC_MAX_RANK], *ib[UOPC_MAX_RANK];
  char ext[LOWER_EXPR_MAX], line[LOWER_EXPR_MAX + 96], name[16], addr[LOWER_EXPR_MAX + 64], zero[64];
  int mark = c->n_memo, tmp = c->next_tmp, ta = 0;
  snprintf(name, sizeof name, "i%d", last);
  lower_ctx_literal(c, 0, n->dtype, zero, sizeof zero);
  int rc = lower_ctx_expr(c, extent, ext, sizeof ext, "the extent");
  if (!rc) rc = codegen_line(&c->n, "%s %s = 0;", c->n.ix, name);
  if (!rc && !(j0 = step_var(c, name, extent, MATMUL_MIN_LANES))) rc = c->n.err->code;
  snprintf(line, sizeof line, "for (; %s <= %s - F32_LANES; %s += F32_LANES) {", name, ext, name);
  if (!rc) rc = codegen_open(&c->n, line);
  for (int r = 0; r < nrows && !rc; r++) rc = codegen_line(&c->n, "f32v acc%d = {0};", r);
  if (!rc) rc = codegen_open_loop(&c->n, "r0", a->shape[a->rank - 1], &k, c->n.err);
  for (int d = 0; d < at; d++) ia[d] = ib[d] = idx[d];
  ib[at] = k, ib[last] = j0;
  if (!rc) rc = lower_ctx_address(c, b, ib, addr, sizeof addr);
  if (!rc) rc = codegen_line(&c->n, "const f32v v0 = *(const f32v *)&%s;", addr);
  for (int r = 0; r < nrows && !rc; r++) {
    ia[at] = rows[r], ia[last] = k;
    rc = lower_ctx_value(c, a, ia, &ta);
    if (!rc) rc = codegen_line(&c->n, "acc%d = acc%d + t%d * v0;", r, r, ta);
  }
  if (!rc) rc = codegen_close(&c->n);
  lower_ctx_forget(c, mark);
  c->next_tmp = tmp;
  for (int r = 0; r < nrows && !rc; r++) {
    idx[at] = rows[r], idx[last] = j0;
    rc = out_at(c, buf, idx, addr, sizeof addr);
    if (!rc) rc = codegen_line(&c->n, "*(f32v *)&%s = acc%d;", addr, r);
  }
  if (!rc) rc = codegen_close(&c->n);
  snprintf(line, sizeof line, "for (; %s < %s; %s++) {", name, ext, name);
  if (!rc && !(j0 = step_var(c, name, extent, 1))) rc = c->n.err->code;
  if (!rc) rc = codegen_open(&c->n, line);
  for (int r = 0; r < nrows && !rc; r++) {
    idx[at] = rows[r];
    rc = codegen_open(&c->n, "{");
    if (!rc) rc = codegen_line(&c->n, "%s acc0 = %s;", ir_dtype_ctype(n->dtype), zero);
    if (!rc) rc = dot_columns(c, n, idx, j0, 0);
    if (!rc) rc = store_columns(c, buf, idx, j0, 0);
    if (!rc) rc = codegen_close(&c->n);
  }
  return rc ? rc : codegen_close(&c->n);
}

/* A tile of the vectors form: its MATMUL_TILE_ROWS rows at once, or (the
 * last, shorter tile) its rows one at a time. */
static int vector_tile(lower_ctx *c, const lower_buffer *buf, const sym_expr **idx) {
  const ir_node *n = buf->node;
  const int at = n->rank - 2;
  const sym_expr *rows[MATMUL_TILE_ROWS], *row0 = step_var(c, "row0", n->shape[at], MATMUL_TILE_ROWS), *i = NULL;
  char line[96], name[16];
  if (!row0) return c->n.err->code;
  for (int r = 0; r < MATMUL_TILE_ROWS; r++)
    if (!(rows[r] = lower_ctx_simp(c, sym_expr_add(c->n.arena, row0, sym_expr_const(c->n.arena, r)))))
      return c->n.err->code;
  snprintf(line, sizeof line, "if (row1 - row0 == %d) {", MATMUL_TILE_ROWS);
  int rc = codegen_open(&c->n, line);
  if (!rc) rc = vector_rows(c, buf, idx, rows, MATMUL_TILE_ROWS);
  if (!rc) rc = codegen_close(&c->n);
  if (!rc) rc = codegen_open(&c->n, "else {");
  snprintf(name, sizeof name, "i%d", at);
  if (!rc && !(i = step_var(c, name, n->shape[at], 1))) rc = c->n.err->code;
  if (!rc) rc = open_rows(c, name);
  if (!rc) rc = vector_rows(c, buf, idx, &i, 1);
  if (!rc) rc = codegen_close(&c->n);
  return rc ? rc : codegen_close(&c->n);
}

/* ---- The tiles form: several output rows share each pass over b's rows. */

/* Output rows in tiles of MATMUL_TILE_ROWS (row0 to row1, the last one
 * shorter): the tile's rows zeroed, then for MATMUL_TILE_STEP values of k at
 * a time each row of the tile gets their products added, then the k left
 * over one at a time. The pass's rows of b serve the whole tile from L1,
 * and consecutive rows' additions do not wait on each other. Each output
 * element still adds its products one at a time in order of k: the rows
 * form's order, its bits. idx holds the batch axes; the row is idx[rank-2]. */
static int tiles(lower_ctx *c, const lower_buffer *buf, const sym_expr **idx) {
  const ir_node *n = buf->node, *a = n->src[0];
  const int at = n->rank - 2;
  const sym_expr *rows = n->shape[at], *extent = a->shape[a->rank - 1], *r0;
  char m[LOWER_EXPR_MAX], k[LOWER_EXPR_MAX], line[LOWER_EXPR_MAX + 96], name[16];
  int empty = 0;
  snprintf(name, sizeof name, "i%d", at);
  int rc = lower_ctx_expr(c, rows, m, sizeof m, "the rows");
  if (!rc) rc = lower_ctx_expr(c, extent, k, sizeof k, "the extent");
  snprintf(line, sizeof line, "for (%s row0 = 0; row0 < %s; row0 += %d) {", c->n.ix, m, MATMUL_TILE_ROWS);
  if (!rc) rc = codegen_open(&c->n, line);
  if (!rc) rc = codegen_line(&c->n, "const %s row1 = min_i64(row0 + %d, %s);", c->n.ix, MATMUL_TILE_ROWS, m);
  int no_k = 0;   /* k's extent 0 for every binding: the tiles form's zeroed rows, no loop over k */
  if (!rc) rc = always_empty(c, extent, &no_k);
  if (!rc && !no_k && n->dtype == UOPC_F32 && lower_ctx_loads_rows(c, n->src[1])) {
    rc = vector_tile(c, buf, idx);
    return rc ? rc : codegen_close(&c->n);
  }
  if (!rc && !(idx[at] = step_var(c, name, rows, 1))) rc = c->n.err->code;
  if (!rc) rc = open_rows(c, name);
  if (!rc) rc = zero_row(c, buf, idx);
  if (!rc) rc = codegen_close(&c->n);
  if (!rc) rc = always_empty(c, extent, &empty);
  if (rc || empty) return rc ? rc : codegen_close(&c->n);
  if (!(r0 = step_var(c, "r0", extent, MATMUL_TILE_STEP))) return c->n.err->code;
  rc = codegen_line(&c->n, "%s r0 = 0;", c->n.ix);
  snprintf(line, sizeof line, "for (; r0 <= %s - %d; r0 += %d) {", k, MATMUL_TILE_STEP, MATMUL_TILE_STEP);
  if (!rc) rc = codegen_open(&c->n, line);
  if (!rc) rc = open_rows(c, name);
  if (!rc) rc = k_body(c, buf, idx, r0, MATMUL_TILE_STEP);
  if (!rc) rc = codegen_close(&c->n);
  if (!rc) rc = codegen_close(&c->n);
  if (!rc && !(r0 = step_var(c, "r0", extent, 1))) rc = c->n.err->code;
  snprintf(line, sizeof line, "for (; r0 < %s; r0++) {", k);
  if (!rc) rc = codegen_open(&c->n, line);
  if (!rc) rc = open_rows(c, name);
  if (!rc) rc = k_body(c, buf, idx, r0, 1);
  if (!rc) rc = codegen_close(&c->n);
  if (!rc) rc = codegen_close(&c->n);
  return rc ? rc : codegen_close(&c->n);
}

/* ---- The columns form: one output row, b a transpose read in place. */

/* `acc = acc + a[i, r0] * b[r0, j];` as C, integers wrapping as add_rows's. */
static int add_product(lower_ctx *c, const ir_node *n, const char *acc, int ta, int tb) {
  const char *T = ir_dtype_ctype(n->dtype), *U = n->dtype == UOPC_I64 ? "uint64_t" : "uint32_t";
  if (uopc_dtype_is_float(n->dtype)) return codegen_line(&c->n, "%s = %s + t%d * t%d;", acc, acc, ta, tb);
  return codegen_line(&c->n, "%s = (%s)((%s)%s + (%s)t%d * (%s)t%d);", acc, T, U, acc, U, ta, U, tb);
}

/* *col = the column the statements after it address: j0, or in a block
 * j0 + r1 inside a new loop over its MATMUL_COLUMNS lanes (closed by the
 * caller). */
static int open_column(lower_ctx *c, const sym_expr *j0, int block, const sym_expr **col) {
  const sym_expr *lane = NULL;
  *col = j0;
  if (!block) return UOPC_OK;
  int rc = codegen_open_loop(&c->n, "r1", sym_expr_const(c->n.arena, MATMUL_COLUMNS), &lane, c->n.err);
  if (!rc && !(*col = lower_ctx_simp(c, sym_expr_add(c->n.arena, j0, lane)))) rc = c->n.err->code;
  return rc;
}

/* For r0 over k: t = a[i, r0], then acc0 += t * b[r0, j0] for the one
 * column j0, or, in a block, acc0[r1] += t * b[r0, j0 + r1] for each of its
 * MATMUL_COLUMNS lanes. idx holds the row (its batch axes and i). */
static int dot_columns(lower_ctx *c, const ir_node *n, const sym_expr **idx, const sym_expr *j0, int block) {
  const ir_node *a = n->src[0], *b = n->src[1];
  const sym_expr *ia[UOPC_MAX_RANK], *ib[UOPC_MAX_RANK], *k = NULL;
  int last = n->rank - 1, mark = c->n_memo, tmp = c->next_tmp, ta = 0, tb = 0;
  int rc = codegen_open_loop(&c->n, "r0", a->shape[a->rank - 1], &k, c->n.err);
  for (int d = 0; d < last; d++) ia[d] = ib[d] = idx[d];
  ia[last] = k;
  ib[last - 1] = k;
  if (!rc) rc = lower_ctx_value(c, a, ia, &ta);
  if (!rc) rc = open_column(c, j0, block, &ib[last]);
  if (!rc) rc = lower_ctx_value(c, b, ib, &tb);
  if (!rc) rc = add_product(c, n, block ? "acc0[r1]" : "acc0", ta, tb);
  if (!rc && block) rc = codegen_close(&c->n);
  if (!rc) rc = codegen_close(&c->n);
  lower_ctx_forget(c, mark);
  c->next_tmp = tmp;
  return rc;
}

/* out[i, j0 + r1] = acc0[r1] over the block's lanes, or out[i, j0] = acc0. */
static int store_columns(lower_ctx *c, const lower_buffer *buf, const sym_expr **idx, const sym_expr *j0, int block) {
  char at[LOWER_EXPR_MAX + 64];
  int rc = open_column(c, j0, block, &idx[buf->node->rank - 1]);
  if (!rc) rc = out_at(c, buf, idx, at, sizeof at);
  if (!rc) rc = codegen_line(&c->n, "%s = %s;", at, block ? "acc0[r1]" : "acc0");
  return rc || !block ? rc : codegen_close(&c->n);
}

/* One output row i in columns: blocks of MATMUL_COLUMNS columns, each with
 * its lanes' accumulators zeroed, then the products added in order of k;
 * the columns left over one at a time. Each output element starts from 0
 * and adds its products one at a time in order of k: the rows form's order. */
static int columns(lower_ctx *c, const lower_buffer *buf, const sym_expr **idx) {
  const ir_node *n = buf->node;
  const sym_expr *extent = n->shape[n->rank - 1], *j0 = NULL;
  char ext[LOWER_EXPR_MAX], line[LOWER_EXPR_MAX + 96], zero[64], name[16];
  const char *T = ir_dtype_ctype(n->dtype);
  int last = n->rank - 1;
  snprintf(name, sizeof name, "i%d", last);
  lower_ctx_literal(c, 0, n->dtype, zero, sizeof zero);
  int rc = lower_ctx_expr(c, extent, ext, sizeof ext, "the extent");
  if (!rc) rc = codegen_line(&c->n, "%s %s = 0;", c->n.ix, name);
  snprintf(line, sizeof line, "for (; %s <= %s - %d; %s += %d) {", name, ext, MATMUL_COLUMNS, name, MATMUL_COLUMNS);
  if (!rc && !(j0 = step_var(c, name, extent, MATMUL_COLUMNS))) rc = c->n.err->code;
  if (!rc) rc = codegen_open(&c->n, line);
  if (!rc) rc = codegen_line(&c->n, "%s acc0[%d];", T, MATMUL_COLUMNS);
  if (!rc) rc = codegen_line(&c->n, "for (%s r1 = 0; r1 < %d; r1++) acc0[r1] = %s;", c->n.ix, MATMUL_COLUMNS, zero);
  if (!rc) rc = dot_columns(c, n, idx, j0, 1);
  if (!rc) rc = store_columns(c, buf, idx, j0, 1);
  if (!rc) rc = codegen_close(&c->n);
  snprintf(line, sizeof line, "for (; %s < %s; %s++) {", name, ext, name);
  if (!rc && !(j0 = step_var(c, name, extent, 1))) rc = c->n.err->code;
  if (!rc) rc = codegen_open(&c->n, line);
  if (!rc) rc = codegen_line(&c->n, "%s acc0 = %s;", T, zero);
  if (!rc) rc = dot_columns(c, n, idx, j0, 0);
  if (!rc) rc = store_columns(c, buf, idx, j0, 0);
  return rc ? rc : codegen_close(&c->n);
}

int lower_matmul_kernel_c(lower_ctx *c, int kernel) {
  const lower_buffer *buf = &c->p->buffers[c->p->kernel_buffer[kernel]];
  const ir_node *n = buf->node;
  const sym_expr *idx[UOPC_MAX_RANK];
  char name[16];
  int rc = UOPC_OK, empty = 0, opened = 0;
  c->root = n;
  lower_ctx_forget(c, 0);
  c->next_tmp = 0;
  for (int d = 0; d < n->rank && !rc && !empty; d++) rc = always_empty(c, n->shape[d], &empty);
  if (rc || empty) return rc ? rc : codegen_line(&c->n, "/* no element: an extent is 0 for every binding */");
  /* rows in tiles, unless there is one row to a batch (a matrix-vector product) */
  const sym_expr *rows = n->rank > 1 ? n->shape[n->rank - 2] : NULL;
  int tiled = !buf->columns && rows && !(rows->kind == SYM_CONST && rows->value == 1);
  if (n->rank > 1) rc = lower_ctx_open_parallel(c);
  for (int d = 0; d < n->rank - 1 - tiled && !rc; d++, opened++) {   /* the batch axes (and the rows) */
    snprintf(name, sizeof name, "i%d", d);
    rc = codegen_open_loop(&c->n, name, n->shape[d], &idx[d], c->n.err);
  }
  if (!rc) rc = buf->columns ? columns(c, buf, idx) : tiled ? tiles(c, buf, idx) : row(c, buf, idx);
  while (opened-- > 0 && !rc) rc = codegen_close(&c->n);
  return rc;
}
