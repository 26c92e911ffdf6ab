/* ir_layout.c: the affine form of a view (given code; the compiler core).
 * A chain of movement nodes over an input reads element
 * offset + sum_k strides[k] * idx[k] of the input's memory: each slice,
 * select, permute and expand rewrites the strides and offset of the chain
 * below it. The builders have normalised every bound already (Python's
 * clamping and negative indices), so the form is read off the nodes as they
 * are. Lab 23.3's alias proofs and executor ask it about a program's views;
 * it lives here because it is a fact about the IR's nodes, which views and
 * outputs of later stages share. */
#include <string.h>
#include "ir.h"

static const sym_expr *simplified(sym_arena *a, const sym_expr *e, uopc_error *err) {
  const sym_expr *s = NULL;
  return e && sym_expr_simplify(a, e, &s, err) == UOPC_OK ? s : NULL;
}

/* 1 when out (of src's shape) is row-major packed: each stride the product of the extents after
 * it, compared once simplified; an axis of the constant extent 1 may have any stride. */
static int packed(sym_arena *a, const ir_node *src, const ir_layout *out) {
  uopc_error err;
  const sym_expr *run = sym_expr_const(a, 1);
  for (int k = src->rank - 1; k >= 0; k--) {
    const sym_expr *n = src->shape[k];
    if (!(n->kind == SYM_CONST && n->value == 1)) {
      const sym_expr *want = simplified(a, run, &err), *got = simplified(a, out->strides[k], &err);
      if (!want || !got || sym_expr_compare(want, got) != 0) return 0;
    }
    run = sym_expr_mul(a, run, sym_expr_copy(a, n));
  }
  return 1;
}

/* The form in out, unsimplified; UOPC_E_INVALID at a node it cannot express (a reshape only
 * with reshapes set, and over a packed layout). */
static int layout_of(sym_arena *a, const ir_node *n, ir_layout *out, int reshapes) {
  if (n->op == IR_INPUT) {
    out->rank = n->rank;
    if (!n->contiguous) {                  /* a strided input: its own strides and offset */
      for (int k = 0; k < n->rank; k++) out->strides[k] = sym_expr_copy(a, n->strides[k]);
      out->offset = n->offset ? sym_expr_copy(a, n->offset) : sym_expr_const(a, 0);
      return UOPC_OK;
    }
    const sym_expr *stride = sym_expr_const(a, 1);   /* row-major */
    for (int k = n->rank - 1; k >= 0; k--) {
      out->strides[k] = stride;
      stride = sym_expr_mul(a, stride, sym_expr_copy(a, n->shape[k]));
    }
    out->offset = sym_expr_const(a, 0);
    return UOPC_OK;
  }
  if (n->op != IR_SLICE && n->op != IR_SELECT && n->op != IR_PERMUTE && n->op != IR_EXPAND &&
      !(reshapes && n->op == IR_RESHAPE))
    return UOPC_E_INVALID;
  int rc = layout_of(a, n->src[0], out, reshapes);
  if (rc) return rc;
  const ir_node *src = n->src[0];
  if (n->op == IR_RESHAPE) {   /* the same elements in the same order: packed strides of the new shape */
    if (!packed(a, src, out)) return UOPC_E_INVALID;
    const sym_expr *stride = sym_expr_const(a, 1);
    for (int k = n->rank - 1; k >= 0; k--) {
      out->strides[k] = stride;
      stride = sym_expr_mul(a, stride, sym_expr_copy(a, n->shape[k]));
    }
    out->rank = n->rank;
    return UOPC_OK;
  }
  switch (n->op) {
  case IR_SLICE:
    out->offset = sym_expr_add(a, out->offset, sym_expr_mul(a, sym_expr_copy(a, n->start), out->strides[n->axis]));
    out->strides[n->axis] = sym_expr_mul(a, out->strides[n->axis], sym_expr_copy(a, n->step));
    break;
  case IR_SELECT:
    out->offset = sym_expr_add(a, out->offset, sym_expr_mul(a, sym_expr_copy(a, n->index), out->strides[n->axis]));
    for (int k = n->axis; k < n->rank; k++) out->strides[k] = out->strides[k + 1];
    break;
  case IR_PERMUTE: {
    const sym_expr *s[UOPC_MAX_RANK];
    for (int k = 0; k < n->rank; k++) s[k] = out->strides[n->perm[k]];
    memcpy(out->strides, s, sizeof s);
    break;
  }
  default: {                               /* IR_EXPAND: new leading axes and extent-1 axes read one element */
    const sym_expr *s[UOPC_MAX_RANK], *zero = sym_expr_const(a, 0);
    int lead = n->rank - src->rank;
    for (int k = 0; k < n->rank; k++) {
      int j = k - lead;
      s[k] = j < 0 || (src->shape[j]->kind == SYM_CONST && src->shape[j]->value == 1) ? zero : out->strides[j];
    }
    memcpy(out->strides, s, sizeof s);
    break;
  }
  }
  out->rank = n->rank;
  return UOPC_OK;
}

static int view_layout(sym_arena *a, const ir_node *n, ir_layout *out, int reshapes, uopc_error *err) {
  if (!a || !n || !out) return UOPC_FAIL(err, UOPC_E_INVALID, "ir_view_layout: NULL argument");
  memset(out, 0, sizeof *out);
  if (layout_of(a, n, out, reshapes))
    return UOPC_FAIL(err, UOPC_E_INVALID, "view: a step the layout cannot express (%%%d = %s)", n->id,
                     ir_op_info_of(n->op)->name);
  for (int k = 0; k < n->rank; k++) {
    out->shape[k] = simplified(a, sym_expr_copy(a, n->shape[k]), err);
    out->strides[k] = simplified(a, out->strides[k], err);
    if (!out->shape[k] || !out->strides[k]) return err->code ? err->code : UOPC_E_NOMEM;
  }
  if (!(out->offset = simplified(a, out->offset, err))) return err->code ? err->code : UOPC_E_NOMEM;
  return UOPC_OK;
}

int ir_view_layout(sym_arena *a, const ir_node *n, ir_layout *out, uopc_error *err) {
  return view_layout(a, n, out, 0, err);
}

int ir_view_layout_reshaped(sym_arena *a, const ir_node *n, ir_layout *out, uopc_error *err) {
  return view_layout(a, n, out, 1, err);
}

const ir_node *ir_view_base(const ir_node *n) {
  while (n && (n->op == IR_SLICE || n->op == IR_SELECT || n->op == IR_PERMUTE || n->op == IR_EXPAND ||
               n->op == IR_RESHAPE))
    n = n->src[0];
  return n;
}
