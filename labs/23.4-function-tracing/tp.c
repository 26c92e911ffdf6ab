/* tp.c: the tensor API's two modes (given code, lab 23.4).
 * Every operation builds its node with the compiler core's builder, so the
 * shape rules and their messages are the IR's. In eager mode the node is
 * evaluated at once by the core's interpreter (ir_eval.h) and its value
 * becomes an input of the context's graph, standing for the result; under
 * the tracer the node stays in the current region's graph, with symbolic
 * shapes, to be compiled. Each handle also keeps its operands: the tape that
 * tp_backward walks. Chapter 23.4, "What is captured". */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ir_eval.h"
#include "tp_internal.h"

static int grow(void **items, int *cap, int need, size_t size) {
  if (need <= *cap) return 1;
  int n = *cap ? 2 * *cap : 16;
  while (n < need) n *= 2;
  void *q = realloc(*items, (size_t)n * size);
  if (!q) return 0;
  *items = q;
  *cap = n;
  return 1;
}

/* ---- Errors: the first one wins, with the model's line. */

int tp_fail(tp_ctx *c, tp_site at, int code, const char *fmt, ...) {
  if (c->error.code) return c->error.code;
  char msg[UOPC_ERROR_MESSAGE_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  uopc_fail(&c->error, code, "tp", "%s:%d: %s", at.file ? at.file : "?", at.line, msg);
  return code;
}

int tp_fail_with(tp_ctx *c, tp_site at, const uopc_error *err) {
  return tp_fail(c, at, err->code ? err->code : UOPC_E_NOMEM, "%s", err->code ? err->message : "out of memory");
}

tp_mode tp_ctx_mode(const tp_ctx *c) { return c->mode; }
int tp_status(const tp_ctx *c) { return c ? c->error.code : UOPC_E_INVALID; }
const uopc_error *tp_error(const tp_ctx *c) { return &c->error; }
const uopc_tensor *tp_value(const tp_tensor *t) { return t && t->value.storage ? &t->value : NULL; }

/* ---- Contexts. */

int tp_ctx_init(tp_ctx *c, tp_mode mode, uopc_error *err) {
  memset(c, 0, sizeof *c);
  c->mode = mode;
  sym_binding_init(&c->binding);
  return ir_graph_new(&c->g, err);
}

void tp_ctx_fini(tp_ctx *c) {
  for (int k = 0; k < c->n_tensors; k++) {
    uopc_tensor_release(&c->tensors[k]->value);
    free(c->tensors[k]);
  }
  free(c->tensors);
  free(c->inputs);
  free(c->guards);
  free(c->callouts);
  for (int k = 0; k < c->n_retired; k++) ir_graph_free(c->retired[k]);
  free(c->retired);
  if (!c->g_cached) ir_graph_free(c->g);   /* else the region cache's */
  memset(c, 0, sizeof *c);
}

int tp_ctx_new_eager(tp_ctx **out, uopc_error *err) {
  tp_ctx *c = calloc(1, sizeof *c);
  if (!c) return UOPC_FAIL(err, UOPC_E_NOMEM, "tp: out of memory");
  int rc = tp_ctx_init(c, TP_EAGER, err);
  if (rc) { free(c); return rc; }
  *out = c;
  return UOPC_OK;
}

void tp_ctx_free(tp_ctx *c) {
  if (!c) return;
  tp_ctx_fini(c);
  free(c);
}

int tp_ctx_add_input(tp_ctx *c, const ir_node *node, const uopc_tensor *value) {
  if (!grow((void **)&c->inputs, &c->cap_inputs, c->n_inputs + 1, sizeof *c->inputs)) return UOPC_E_NOMEM;
  c->inputs[c->n_inputs++] = (tp_region_input){node, value};
  return UOPC_OK;
}

static tp_tensor *new_handle(tp_ctx *c, const ir_node *node, tp_site at) {
  tp_tensor *t = calloc(1, sizeof *t);
  if (!t || !grow((void **)&c->tensors, &c->cap_tensors, c->n_tensors + 1, sizeof *c->tensors)) {
    free(t);
    tp_fail(c, at, UOPC_E_NOMEM, "out of memory");
    return NULL;
  }
  t->id = c->n_tensors;
  t->node = t->ref = node;
  t->region = c->region;
  t->at = at;
  c->tensors[c->n_tensors++] = t;
  return t;
}

/* A constant shape's extents, for eager inputs. */
static void const_shape(ir_graph *g, const uopc_tensor *v, const sym_expr **shape) {
  for (int k = 0; k < v->rank; k++) shape[k] = sym_expr_const(ir_graph_arena(g), v->shape[k]);
}

/* Eager: t's value as a new input of the graph, which later nodes read. */
static int stand_in(tp_ctx *c, tp_tensor *t, tp_site at) {
  const sym_expr *shape[UOPC_MAX_RANK];
  char name[32];
  snprintf(name, sizeof name, "v%d", t->id);
  const_shape(c->g, &t->value, shape);
  const ir_node *in = ir_input(c->g, name, t->value.dtype, t->value.rank, shape);
  if (!in) return tp_fail_with(c, at, ir_graph_error(c->g));
  t->ref = in;
  return tp_ctx_add_input(c, in, &t->value) ? tp_fail(c, at, UOPC_E_NOMEM, "out of memory") : UOPC_OK;
}

int tp_contiguous(uopc_tensor *out, const uopc_tensor *v, uopc_error *err) {
  if (uopc_tensor_is_contiguous(v)) {
    uopc_tensor_retain(out, v);
    return UOPC_OK;
  }
  int rc = uopc_tensor_empty(out, v->dtype, v->rank, v->shape, err);
  if (!rc && (rc = uopc_tensor_copy(out, v, err))) uopc_tensor_release(out);
  return rc;
}

tp_tensor *tp_wrap(tp_ctx *c, const uopc_tensor *v) {
  tp_site at = {"tp_wrap", 0};
  if (!c || c->error.code) return NULL;
  if (!v || !v->storage) { tp_fail(c, at, UOPC_E_INVALID, "tp_wrap of a NULL or released tensor"); return NULL; }
  if (c->mode != TP_EAGER) { tp_fail(c, at, UOPC_E_INVALID, "a tracing context makes its own inputs"); return NULL; }
  tp_tensor *t = new_handle(c, NULL, at);
  if (!t) return NULL;
  t->is_input = 1;
  uopc_error err = {0};
  if (tp_contiguous(&t->value, v, &err)) { tp_fail_with(c, at, &err); return NULL; }
  if (stand_in(c, t, at)) return NULL;
  t->node = t->ref;
  return t;
}

tp_tensor *tp_input_handle(tp_ctx *c, const ir_node *node, const uopc_tensor *value, tp_site at) {
  tp_tensor *t = new_handle(c, node, at);
  if (!t) return NULL;
  t->is_input = 1;
  uopc_tensor_retain(&t->value, value);
  if (tp_ctx_add_input(c, node, &t->value)) { tp_fail(c, at, UOPC_E_NOMEM, "out of memory"); return NULL; }
  return t;
}

/* The values of the graph's inputs, in order, for ir_eval. */
static int eval_node(tp_ctx *c, const ir_node *n, uopc_tensor *out, tp_site at) {
  const uopc_tensor **in = malloc((size_t)(c->n_inputs + 1) * sizeof *in);
  if (!in) return tp_fail(c, at, UOPC_E_NOMEM, "out of memory");
  for (int k = 0; k < c->n_inputs; k++) in[k] = c->inputs[k].value;
  uopc_error err = {0};
  int rc = ir_eval(c->g, &n, 1, in, c->n_inputs, &c->binding, out, &err);
  free(in);
  return rc ? tp_fail_with(c, at, &err) : UOPC_OK;
}

static int read_saved(tp_ctx *c, tp_tensor *t, tp_site at);

/* The handle of a node just built from operands src (NULL: the builder
 * failed and its error becomes the context's). */
static tp_tensor *made(tp_ctx *c, const ir_node *n, tp_tensor *a, tp_tensor *b, tp_tensor *w, tp_site at) {
  if (!n) { tp_fail_with(c, at, ir_graph_error(c->g)); return NULL; }
  tp_tensor *t = new_handle(c, n, at);
  if (!t) return NULL;
  t->src[0] = a, t->src[1] = b, t->src[2] = w;
  if (c->mode == TP_EAGER && (eval_node(c, n, &t->value, at) || stand_in(c, t, at))) return NULL;
  if (c->mode == TP_TRACE && c->n_stand_ins && tp_saves_value(c, n) && read_saved(c, t, at)) return NULL;
  return t;
}

/* The node later operations read x through; NULL (an error in c) when x is
 * NULL or another context's. */
static const ir_node *operand(tp_ctx *c, tp_tensor *x, tp_site at) {
  if (c->error.code) return NULL;
  if (!x) { tp_fail(c, at, UOPC_E_INVALID, "an operand is NULL"); return NULL; }
  if (x->id >= c->n_tensors || c->tensors[x->id] != x) {
    tp_fail(c, at, UOPC_E_INVALID, "an operand belongs to another context");
    return NULL;
  }
  return x->ref;
}

#define CHECK_CTX(c) do { if (!(c) || (c)->error.code) return NULL; } while (0)

/* ---- A capture's sizes (tp_capture_run, for tensorjit). Two sizes that are
 * different expressions but equal in this call are never assumed equal: when
 * an operation needs them equal, the trace stops and says which, and the
 * capture is made again with one dim (or the constant), guarded per call.
 * Chapter 23.7, "Equal sizes are never assumed equal". */

/* 1 (an error in c) when p and q are different expressions, neither a dim
 * against a dim or a constant, that are equal in this call: the IR would
 * call them different sizes. A dim against an expression (y's a1_0 against
 * a0_0*a0_1) stops the trace with c->need saying so, and the caller reads
 * the dim as the expression; two expressions, or a constant against one
 * (max(0, n - 3) against 0), or an expression a broadcast would stretch, are
 * refused as what they are, never faked. */
static int expression_pair(tp_ctx *c, const sym_expr *p, const sym_expr *q, int broadcast, tp_site at) {
  int64_t vp, vq;
  uopc_error err;
  if ((p->kind == SYM_DIM || p->kind == SYM_CONST) && (q->kind == SYM_DIM || q->kind == SYM_CONST)) return 0;
  if (broadcast && ((p->kind == SYM_CONST && p->value == 1) || (q->kind == SYM_CONST && q->value == 1))) return 0;
  if (sym_expr_eval(p, &c->binding, &vp, &err) || sym_expr_eval(q, &c->binding, &vq, &err)) return 0;
  /* An expression that is 1 here and broadcasts: stretching it is a decision on
   * its value, which a capture can pin for a dim but not for an expression. */
  int stretch = broadcast && vp != vq && ((vp == 1 && p->kind != SYM_DIM && p->kind != SYM_CONST) ||
                                          (vq == 1 && q->kind != SYM_DIM && q->kind != SYM_CONST));
  if (vp != vq && !stretch) return 0;
  char tp_[96], tq[96];
  if (sym_expr_format(p, tp_, sizeof tp_, &err)) snprintf(tp_, sizeof tp_, "(a size)");
  if (sym_expr_format(q, tq, sizeof tq, &err)) snprintf(tq, sizeof tq, "(a size)");
  if (!stretch && (p->kind == SYM_DIM || q->kind == SYM_DIM)) {
    /* a dim equal here to an expression of others: the caller may read the
     * dim's input as that expression, checked per call (tensorjit does) */
    if (q->kind == SYM_DIM) { const sym_expr *t = p; p = q; q = t; }
    c->need = (tp_unify){{0}, {0}, 0, q, at};
    snprintf(c->need.a, sizeof c->need.a, "%s", p->dim.name);
    c->need_unify = 1;
    tp_fail(c, at, UOPC_E_GUARD, "sizes %s and %s are both %lld in this call and the operation needs them equal:"
            " capture again with dim '%s' read as the expression", tp_, tq, (long long)vp, p->dim.name);
    return 1;
  }
  if (stretch)
    tp_fail(c, at, UOPC_E_UNSUPPORTED, "sizes %s and %s are %lld and %lld in this call and the operation broadcasts"
            " the 1; a capture pins a dim to 1, not with an expression (give the operation a size-1 axis, e.g. by"
            " tp_unsqueeze)", tp_, tq, (long long)vp, (long long)vq);
  else
    tp_fail(c, at, UOPC_E_UNSUPPORTED, "sizes %s and %s are both %lld in this call and the operation needs them equal;"
            " neither is a dim, and a capture makes a dim one with a size, never one expression with another (give the"
            " operation tensors whose sizes are the same expression, e.g. by a reshape)", tp_, tq, (long long)vp);
  return 1;
}

/* 1 with c->need set when p and q (one a dim) must be made one size; p and q
 * meet in a broadcast (a constant 1 stretches) or must be equal. */
static int need_pair(tp_ctx *c, const sym_expr *p, const sym_expr *q, int broadcast, tp_site at) {
  if (p != q && expression_pair(c, p, q, broadcast, at)) return 1;
  if (p == q || (p->kind != SYM_DIM && q->kind != SYM_DIM)) return 0;
  if (p->kind != SYM_DIM) { const sym_expr *t = p; p = q; q = t; }
  if ((q->kind != SYM_DIM && q->kind != SYM_CONST) || (q->kind == SYM_DIM && !strcmp(p->dim.name, q->dim.name)))
    return 0;
  if (broadcast && q->kind == SYM_CONST && q->value == 1) return 0;
  int64_t vp, vq;
  uopc_error err;
  if (sym_expr_eval(p, &c->binding, &vp, &err) || sym_expr_eval(q, &c->binding, &vq, &err)) return 0;
  tp_unify u = {{0}, {0}, 0, NULL, at};
  snprintf(u.a, sizeof u.a, "%s", p->dim.name);
  if (vp == vq && q->kind == SYM_DIM) snprintf(u.b, sizeof u.b, "%s", q->dim.name);
  else if (vp == vq) u.value = vq;
  else if (broadcast && vp == 1) u.value = 1;          /* p stretches: a size-1 decision */
  else if (broadcast && q->kind == SYM_DIM && vq == 1) snprintf(u.a, sizeof u.a, "%s", q->dim.name), u.value = 1;
  else return 0;                                        /* a real mismatch: the IR's error */
  c->need = u;
  c->need_unify = 1;
  return 1;
}

/* Checks x's and y's axes, aligned from the right; skip_last leaves the
 * last `skip_last` axes out (a matmul's). */
static int need_any(tp_ctx *c, const ir_node *x, const ir_node *y, int skip_last, int broadcast, tp_site at) {
  int r = x->rank < y->rank ? x->rank : y->rank;
  for (int k = skip_last; k < r; k++)
    if (need_pair(c, x->shape[x->rank - 1 - k], y->shape[y->rank - 1 - k], broadcast, at)) return 1;
  return 0;
}

/* 1 (an error in c) when the operands' sizes must be unified first. */
static int unify_stop(tp_ctx *c, const ir_node *const *src, int n, int matmul, tp_site at) {
  if (!c->unify || c->mode != TP_TRACE) return 0;
  int stop = 0;
  if (matmul) stop = src[0]->rank >= 2 && src[1]->rank >= 2 &&
                     (need_pair(c, src[0]->shape[src[0]->rank - 1], src[1]->shape[src[1]->rank - 2], 0, at) ||
                      need_any(c, src[0], src[1], 2, 0, at));
  for (int i = 0; !matmul && !stop && i < n; i++)
    for (int j = i + 1; !stop && j < n; j++) stop = need_any(c, src[i], src[j], 0, 1, at);
  if (!stop) return 0;
  if (c->error.code) return 1;   /* expression_pair said why */
  if (c->need.b[0]) tp_fail(c, at, UOPC_E_GUARD, "dims '%s' and '%s' are equal in this call and the operation needs"
                            " them equal: capture again with one dim", c->need.a, c->need.b);
  else tp_fail(c, at, UOPC_E_GUARD, "dim '%s' is %lld in this call and the operation depends on it: capture again"
               " with the constant", c->need.a, (long long)c->need.value);
  return 1;
}

/* ---- Saved values read for the nodes that made them (tp_stand_in_saved). */

int tp_saves_value(const tp_ctx *c, const ir_node *n) {
  ir_kind kind = ir_op_info_of(n->op)->kind;
  if (kind != IR_KIND_MATMUL && kind != IR_KIND_REDUCE && !(kind == IR_KIND_MATH && c->save_math)) return 0;
  for (int d = 0; d < n->rank; d++)
    if (n->shape[d]->kind != SYM_DIM && n->shape[d]->kind != SYM_CONST) return 0;
  return 1;
}

int tp_saved_values(const tp_ctx *c, tp_tensor **out, int max) {
  int n = 0;
  for (int k = 0; c && k < c->n_tensors; k++) {
    tp_tensor *t = c->tensors[k];
    if (t->is_input || !tp_saves_value(c, t->node)) continue;
    if (out && n < max) out[n] = t;
    n++;
  }
  return n;
}

void tp_save_math(tp_ctx *c, int on) {
  if (c) c->save_math = on;
}

void tp_stand_in_saved(tp_ctx *c, tp_tensor *const *saved, int n) {
  if (!c) return;
  c->stand_ins = n > 0 ? saved : NULL;
  c->n_stand_ins = n > 0 ? n : 0;
  c->next_stand_in = 0;
}

int tp_stand_ins_end(tp_ctx *c, tp_site at) {
  if (!c || c->error.code) return tp_status(c);
  int n = c->n_stand_ins, used = c->next_stand_in;
  tp_stand_in_saved(c, NULL, 0);   /* the backward's own matmuls and reductions are computed */
  if (c->mode == TP_TRACE && used != n)   /* eager mode (past a limit) computes them all */
    return tp_fail(c, at, UOPC_E_UNSUPPORTED, "the trace made %d of the %d values its forward saved: it took another"
                   " path than the forward's", used, n);
  return UOPC_OK;
}

static int read_saved(tp_ctx *c, tp_tensor *t, tp_site at) {
  const ir_node *n = t->node;
  if (c->next_stand_in >= c->n_stand_ins)
    return tp_fail(c, at, UOPC_E_UNSUPPORTED, "the trace makes more than the %d values its forward saved: it took"
                   " another path than the forward's", c->n_stand_ins);
  tp_tensor *s = c->stand_ins[c->next_stand_in++];
  const ir_node *v = operand(c, s, at);
  if (!v) return tp_status(c);
  if (v->dtype != n->dtype || v->rank != n->rank)
    return tp_fail(c, at, UOPC_E_UNSUPPORTED, "saved value %d is %s of rank %d, the node it stands for %s of rank %d:"
                   " the trace took another path than the forward's", c->next_stand_in - 1, ir_dtype_name(v->dtype),
                   v->rank, ir_dtype_name(n->dtype), n->rank);
  ir_node target = {.rank = n->rank};   /* the shape alone, for a capture's unification */
  memcpy(target.shape, n->shape, (size_t)n->rank * sizeof *n->shape);
  if (unify_stop(c, (const ir_node *[]){v, &target}, 2, 0, at)) return tp_status(c);
  const ir_node *e = ir_expand(c->g, v, n->rank, n->shape);
  if (!e) return tp_fail_with(c, at, ir_graph_error(c->g));
  t->ref = e;
  return UOPC_OK;
}

tp_tensor *tp_unary_at(tp_ctx *c, ir_op op, tp_tensor *x, tp_site at) {
  CHECK_CTX(c);
  const ir_node *a = operand(c, x, at);
  return a ? made(c, ir_unary(c->g, op, a), x, NULL, NULL, at) : NULL;
}

tp_tensor *tp_binary_at(tp_ctx *c, ir_op op, tp_tensor *x, tp_tensor *y, tp_site at) {
  CHECK_CTX(c);
  const ir_node *a = operand(c, x, at), *b = a ? operand(c, y, at) : NULL;
  if (b && unify_stop(c, (const ir_node *[]){a, b}, 2, 0, at)) return NULL;
  return b ? made(c, ir_binary(c->g, op, a, b), x, y, NULL, at) : NULL;
}

tp_tensor *tp_scalar_at(tp_ctx *c, double v, uopc_dtype dt, tp_site at) {
  CHECK_CTX(c);
  return made(c, ir_const(c->g, v, dt), NULL, NULL, NULL, at);
}

tp_tensor *tp_relu_at(tp_ctx *c, tp_tensor *x, tp_site at) {
  CHECK_CTX(c);
  const ir_node *a = operand(c, x, at);
  if (!a) return NULL;
  tp_tensor *zero = tp_scalar_at(c, 0, a->dtype, at);
  return zero ? tp_binary_at(c, IR_MAXIMUM, x, zero, at) : NULL;
}

tp_tensor *tp_matmul_at(tp_ctx *c, tp_tensor *x, tp_tensor *y, tp_site at) {
  CHECK_CTX(c);
  const ir_node *a = operand(c, x, at), *b = a ? operand(c, y, at) : NULL;
  if (b && unify_stop(c, (const ir_node *[]){a, b}, 2, 1, at)) return NULL;
  return b ? made(c, ir_matmul(c->g, a, b), x, y, NULL, at) : NULL;
}

tp_tensor *tp_reduce_at(tp_ctx *c, ir_op op, tp_tensor *x, unsigned axes, int keepdims, tp_site at) {
  CHECK_CTX(c);
  const ir_node *a = operand(c, x, at);
  if (!a) return NULL;
  if (!axes) axes = (1u << a->rank) - 1u;      /* every axis */
  if (a->rank == 0) return x;                  /* a scalar is its own sum, max and mean */
  return made(c, ir_reduce(c->g, op, a, axes, keepdims), x, NULL, NULL, at);
}

tp_tensor *tp_transpose_at(tp_ctx *c, tp_tensor *x, tp_site at) {
  CHECK_CTX(c);
  const ir_node *a = operand(c, x, at);
  if (!a) return NULL;
  if (a->rank < 2) { tp_fail(c, at, UOPC_E_INVALID, "transpose of a rank-%d tensor (needs 2 or more)", a->rank); return NULL; }
  return made(c, ir_transpose(c->g, a, a->rank - 2, a->rank - 1), x, NULL, NULL, at);
}

/* A size's expression in this context's graph. */
static const sym_expr *int_expr(tp_ctx *c, tp_int v) {
  return v.expr ? sym_expr_copy(ir_graph_arena(c->g), v.expr) : sym_expr_const(ir_graph_arena(c->g), v.value);
}

tp_tensor *tp_expand_at(tp_ctx *c, tp_tensor *x, int rank, const tp_int *shape, tp_site at) {
  CHECK_CTX(c);
  const ir_node *a = operand(c, x, at);
  if (!a) return NULL;
  if (rank < 0 || rank > UOPC_MAX_RANK || (rank && !shape)) {
    tp_fail(c, at, UOPC_E_INVALID, "expand to rank %d (at most %d)", rank, UOPC_MAX_RANK);
    return NULL;
  }
  const sym_expr *to[UOPC_MAX_RANK];
  for (int k = 0; k < rank; k++) to[k] = int_expr(c, shape[k]);
  ir_node target = {.rank = rank};   /* the shape alone, for a capture's unification */
  memcpy(target.shape, to, (size_t)rank * sizeof *to);
  if (unify_stop(c, (const ir_node *[]){a, &target}, 2, 0, at)) return NULL;
  return made(c, ir_expand(c->g, a, rank, to), x, NULL, NULL, at);
}

tp_tensor *tp_where_at(tp_ctx *c, tp_tensor *cond, tp_tensor *x, tp_tensor *y, tp_site at) {
  CHECK_CTX(c);
  const ir_node *w = operand(c, cond, at), *a = w ? operand(c, x, at) : NULL, *b = a ? operand(c, y, at) : NULL;
  if (b && unify_stop(c, (const ir_node *[]){w, a, b}, 3, 0, at)) return NULL;
  return b ? made(c, ir_where(c->g, w, a, b), x, y, cond, at) : NULL;
}

tp_tensor *tp_from_int_at(tp_ctx *c, tp_int v, uopc_dtype dt, tp_site at) {
  CHECK_CTX(c);
  return made(c, ir_size(c->g, int_expr(c, v), dt), NULL, NULL, NULL, at);
}

/* ---- Sizes. */

tp_int tp_size_at(tp_ctx *c, tp_tensor *x, int axis, tp_site at) {
  tp_int r = {0, NULL};
  const ir_node *a = c && !c->error.code ? operand(c, x, at) : NULL;
  if (!a) return r;
  if (axis < 0) axis += a->rank;
  if (axis < 0 || axis >= a->rank) {
    tp_fail(c, at, UOPC_E_INVALID, "size of axis %d of a rank-%d tensor", axis, a->rank);
    return r;
  }
  r.expr = c->mode == TP_TRACE ? a->shape[axis] : NULL;
  uopc_error err = {0};
  if (sym_expr_eval(a->shape[axis], &c->binding, &r.value, &err)) tp_fail_with(c, at, &err);
  return r;
}

tp_int tp_int_const(tp_ctx *c, int64_t v) {
  (void)c;
  return (tp_int){v, NULL};
}

static tp_int int_op(tp_ctx *c, tp_int a, tp_int b, int mul) {
  tp_int r = {mul ? a.value * b.value : a.value + b.value, NULL};
  if (c && c->mode == TP_TRACE && (a.expr || b.expr)) {
    sym_arena *ar = ir_graph_arena(c->g);
    const sym_expr *x = int_expr(c, a), *y = int_expr(c, b), *s = NULL;
    uopc_error err;
    if (!sym_expr_simplify(ar, mul ? sym_expr_mul(ar, x, y) : sym_expr_add(ar, x, y), &s, &err)) r.expr = s;
  }
  return r;
}

tp_int tp_int_add(tp_ctx *c, tp_int a, tp_int b) { return int_op(c, a, b, 0); }
tp_int tp_int_mul(tp_ctx *c, tp_int a, tp_int b) { return int_op(c, a, b, 1); }

/* ---- For tp_index.c: the same steps as the operations above. */

const ir_node *tp_operand(tp_ctx *c, tp_tensor *x, tp_site at) { return operand(c, x, at); }
tp_tensor *tp_made(tp_ctx *c, const ir_node *n, tp_tensor *x, tp_site at) { return made(c, n, x, NULL, NULL, at); }
const sym_expr *tp_int_expr(tp_ctx *c, tp_int v) { return int_expr(c, v); }

int tp_cmp_holds(int64_t v, tp_cmp op) {
  switch (op) {
  case TP_LT: return v < 0;
  case TP_LE: return v <= 0;
  case TP_GT: return v > 0;
  case TP_GE: return v >= 0;
  case TP_EQ: return v == 0;
  case TP_NE: return v != 0;
  }
  return 0;
}

const char *tp_cmp_text(tp_cmp op) {
  static const char *const text[] = {"<", "<=", ">", ">=", "==", "!="};
  return (unsigned)op < 6 ? text[op] : "?";
}

int tp_guard_add(tp_ctx *c, const sym_expr *diff, tp_cmp op, int truth, tp_site at) {
  if (!grow((void **)&c->guards, &c->cap_guards, c->n_guards + 1, sizeof *c->guards))
    return tp_fail(c, at, UOPC_E_NOMEM, "out of memory");
  c->guards[c->n_guards++] = (tp_guard){diff, op, truth, at};
  uopc_counter_add(TP_C_GUARDS, 1);
  return UOPC_OK;
}

int tp_compare_at(tp_ctx *c, tp_int a, tp_cmp op, tp_int b, tp_site at) {
  if (!c || c->error.code) return 0;
  if ((unsigned)op > TP_NE) return tp_fail(c, at, UOPC_E_INVALID, "comparison %d", (int)op), 0;
  int truth = 0;
  uopc_error err = {0};
  int rc = tp_student(c, at, tp_compare_record(c, a, op, b, at, &truth, &err), &err);
  return rc ? 0 : truth;
}

/* ---- Data and effects. */

int tp_student(tp_ctx *c, tp_site at, int rc, const uopc_error *err) {
  if (rc && !c->error.code) tp_fail_with(c, at, err);
  return rc;
}

static int effect(tp_ctx *c, tp_effect e, int pure, tp_site at) {
  uopc_error err = {0};
  return tp_student(c, at, tp_effect_check(c, e, pure, at, &err), &err);
}

double tp_item_at(tp_ctx *c, tp_tensor *x, tp_site at) {
  if (!c || c->error.code || !operand(c, x, at)) return NAN;
  uopc_error err = {0};
  /* a capture keeps no data: an input's value would be baked into every later call */
  if ((!x->value.storage || c->capture || c->items_break) && c->mode == TP_TRACE) {
    int breaks = c->breaks;
    int rc = tp_student(c, at, tp_on_break(c, "tp_item", at, &err), &err);
    uopc_counter_add(TP_C_BREAKS, c->breaks - breaks);   /* the breaks tp_on_break counted */
    if (rc && c->strict) c->refused_break = 1;           /* tensorjit runs such a call region by region */
    if (rc) return NAN;
  }
  if (!x->value.storage) return tp_fail(c, at, UOPC_E_INVALID, "tp_item: the tensor has no value"), NAN;
  if (uopc_tensor_numel(&x->value) != 1)
    return tp_fail(c, at, UOPC_E_INVALID, "tp_item of a tensor of %lld elements (needs exactly 1)",
                   (long long)uopc_tensor_numel(&x->value)), NAN;
  return uopc_tensor_get(&x->value, 0);
}

int tp_print_at(tp_ctx *c, tp_tensor *x, tp_site at) {
  if (!c || c->error.code) return tp_status(c);
  if (!operand(c, x, at) || effect(c, TP_EFFECT_PRINT, 0, at)) return tp_status(c);
  printf("tensor %d (%s, %lld elements):", x->id, uopc_dtype_name(x->value.dtype), (long long)uopc_tensor_numel(&x->value));
  for (int64_t i = 0; i < uopc_tensor_numel(&x->value) && i < 16; i++) printf(" %g", uopc_tensor_get(&x->value, i));
  printf("\n");
  return UOPC_OK;
}

tp_tensor *tp_global_at(tp_ctx *c, const uopc_tensor *v, tp_site at) {
  CHECK_CTX(c);
  if (effect(c, TP_EFFECT_GLOBAL, 0, at)) return NULL;
  return tp_wrap(c, v);
}

int tp_callback_at(tp_ctx *c, void (*fn)(void *), void *user, int pure, tp_site at) {
  if (!c || c->error.code) return tp_status(c);
  if (!fn) return tp_fail(c, at, UOPC_E_INVALID, "tp_callback of NULL");
  if (effect(c, TP_EFFECT_IMPURE_CALLBACK, pure, at)) return tp_status(c);
  fn(user);
  return UOPC_OK;
}

tp_tensor *tp_rand_like_at(tp_ctx *c, tp_tensor *x, int has_seed, uint64_t seed, tp_site at) {
  CHECK_CTX(c);
  if (!operand(c, x, at)) return NULL;
  if (!has_seed && effect(c, TP_EFFECT_RANDOM, 0, at)) return NULL;
  if (c->mode == TP_TRACE) {   /* the IR has no random op: a seeded stream would be a constant of the trace */
    tp_fail(c, at, UOPC_E_UNSUPPORTED, "tp_rand_like: the tracer has no random operation; draw the numbers"
            " outside the model and pass them in");
    return NULL;
  }
  uopc_tensor v;
  uopc_error err = {0};
  if (uopc_tensor_empty(&v, x->value.dtype, x->value.rank, x->value.shape, &err)) { tp_fail_with(c, at, &err); return NULL; }
  uint64_t s = has_seed ? seed : 0x9e3779b97f4a7c15ull;
  for (int64_t i = 0; i < uopc_tensor_numel(&v); i++) {   /* xorshift64*: reproducible, not cryptographic */
    s ^= s >> 12, s ^= s << 25, s ^= s >> 27;
    uopc_tensor_set(&v, i, (double)((s * 0x2545f4914f6cdd1dull) >> 11) / 9007199254740992.0);
  }
  tp_tensor *t = tp_wrap(c, &v);
  uopc_tensor_release(&v);
  return t;
}
