/* lower_matmul.c: the matmul's loop nest in rows (given code; the compiler
 * core), for the C back end under LOWER_FUSE (tensorjit, the passes' tests).
 * Each output row is set to zero, then for each k the row gets
 * a[i, k] * b[k, :] added: the innermost loop runs over contiguous columns
 * of the output and of b, so the C compiler vectorises it, and each output
 * element adds its products one at a time in order of k, the interpreter's
 * (ir_eval.c) order. A right operand that is not a unit-stride read (a
 * transpose, a broadcast, a strided view) is stored contiguous first, as
 * planning decides (lower_plan_matmul_rows): a packed copy of K*N elements
 * that the M rows then read.
 * Labs 23.1-23.4 keep the lane form of lower_kernel.c. Chapter 23.7,
 * "The matmul in rows". */
#include <stdio.h>
#include <string.h>
#include "lower_internal.h"

/* Values of k per pass over an output row (chapter 23.7, "The matmul in
 * rows": measured against one and against register blocks). */
enum { MATMUL_STEP = 4 };

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
  int last = n->rank - 1, mark = c->n_memo, tmp = c->next_tmp, tb[MATMUL_STEP], fl = uopc_dtype_is_float(n->dtype);
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
  const sym_expr *ks[MATMUL_STEP], *ia[UOPC_MAX_RANK];
  int last = n->rank - 1, mark = c->n_memo, tmp = c->next_tmp, ta[MATMUL_STEP], rc = UOPC_OK;
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

/* r0, the variable of a loop over [0, extent) by step: r0 + step - 1 < extent. */
static const sym_expr *step_var(lower_ctx *c, const sym_expr *extent, int step) {
  sym_interval iv;
  if (sym_expr_interval(extent, &iv, c->n.err)) return NULL;
  sym_dim d;
  memset(&d, 0, sizeof d);
  snprintf(d.name, sizeof d.name, "r0");
  d.hi = iv.hi > step ? iv.hi - step : 0;
  d.multiple_of = 1;
  d.loop = 1;
  return sym_expr_dim(c->n.arena, &d);
}

/* One output row i: zeroed, then MATMUL_STEP rows of b added per pass over
 * it, and the k left over one at a time. */
static int row(lower_ctx *c, const lower_buffer *buf, const sym_expr **idx) {
  const ir_node *n = buf->node, *a = n->src[0];
  const sym_expr *extent = a->shape[a->rank - 1], *r0 = step_var(c, extent, MATMUL_STEP);
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
  if (!(r0 = step_var(c, extent, 1))) return c->n.err->code;
  snprintf(line, sizeof line, "for (; r0 < %s; r0++) {", ext);
  if (!rc) rc = codegen_open(&c->n, line);
  if (!rc) rc = k_body(c, buf, idx, r0, 1);
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
  if (n->rank > 1) rc = lower_ctx_open_parallel(c);
  for (int d = 0; d < n->rank - 1 && !rc; d++, opened++) {   /* the batch axes and the rows */
    snprintf(name, sizeof name, "i%d", d);
    rc = codegen_open_loop(&c->n, name, n->shape[d], &idx[d], c->n.err);
  }
  if (!rc) rc = row(c, buf, idx);
  while (opened-- > 0 && !rc) rc = codegen_close(&c->n);
  return rc;
}
