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
 * Labs 23.1-23.5 keep the lane form of lower_kernel.c. Chapter 23.7,
 * "The matmul in rows". */
#include <stdio.h>
#include "lower_internal.h"

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

/* `for (j) out[i, j] += a[i, k] * b[k, j];` with t<ta> holding a[i, k]:
 * integers wrap (unsigned arithmetic), as NumPy's. */
static int add_row(lower_ctx *c, const lower_buffer *buf, const sym_expr **idx, const sym_expr *k, int ta) {
  const ir_node *n = buf->node, *b = n->src[1];
  const sym_expr *ib[UOPC_MAX_RANK];
  char at[LOWER_EXPR_MAX + 64], name[16];
  int last = n->rank - 1, mark = c->n_memo, tmp = c->next_tmp, tb = -1;
  const char *T = ir_dtype_ctype(n->dtype), *U = n->dtype == UOPC_I64 ? "uint64_t" : "uint32_t";
  snprintf(name, sizeof name, "i%d", last);
  int rc = codegen_open_loop(&c->n, name, n->shape[last], &idx[last], c->n.err);
  for (int d = 0; d < last - 1; d++) ib[d] = idx[d];
  ib[last - 1] = k;
  ib[last] = idx[last];
  if (!rc) rc = lower_ctx_value(c, b, ib, &tb);
  if (!rc) rc = out_at(c, buf, idx, at, sizeof at);
  if (!rc && uopc_dtype_is_float(n->dtype)) rc = codegen_line(&c->n, "%s += t%d * t%d;", at, ta, tb);
  else if (!rc)
    rc = codegen_line(&c->n, "%s = (%s)((%s)%s + (%s)t%d * (%s)t%d);", at, T, U, at, U, ta, U, tb);
  lower_ctx_forget(c, mark);
  c->next_tmp = tmp;
  return rc ? rc : codegen_close(&c->n);
}

/* One output row i: zeroed, then a row of b added per k. */
static int row(lower_ctx *c, const lower_buffer *buf, const sym_expr **idx) {
  const ir_node *n = buf->node, *a = n->src[0];
  const sym_expr *k = NULL, *ia[UOPC_MAX_RANK];
  int rc = zero_row(c, buf, idx), empty = 0, last = n->rank - 1, ta = -1;
  if (!rc) rc = always_empty(c, a->shape[a->rank - 1], &empty);
  if (rc || empty) return rc;
  rc = codegen_open_loop(&c->n, "r0", a->shape[a->rank - 1], &k, c->n.err);
  int mark = c->n_memo, tmp = c->next_tmp;
  for (int d = 0; d < last; d++) ia[d] = idx[d];
  ia[last] = k;
  if (!rc) rc = lower_ctx_value(c, a, ia, &ta);
  if (!rc) rc = add_row(c, buf, idx, k, ta);
  lower_ctx_forget(c, mark);
  c->next_tmp = tmp;
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
  for (int d = 0; d < n->rank - 1 && !rc; d++, opened++) {   /* the batch axes and the rows */
    snprintf(name, sizeof name, "i%d", d);
    rc = codegen_open_loop(&c->n, name, n->shape[d], &idx[d], c->n.err);
  }
  if (!rc) rc = row(c, buf, idx);
  while (opened-- > 0 && !rc) rc = codegen_close(&c->n);
  return rc;
}
