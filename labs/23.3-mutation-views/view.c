/* view.c: views as chains of steps over a storage (given code, lab 23.3).
 * A view keeps the steps it was made by, not only its strides: the versioned
 * executor reads its affine form (mv_view_layout), functionalization replays
 * the steps on a storage's current value (mv_view_apply), and each run makes
 * the same view of the caller's tensor with uopc (mv_view_tensor). Every step
 * is checked by the compiler core's own builder, so a view's rules (Python's
 * slices on symbolic extents, bounds proved from the dims) are the IR's. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "mprog_internal.h"

static const sym_expr *copy_to(ir_graph *g, const sym_expr *e) {
  return e ? sym_expr_copy(ir_graph_arena(g), e) : NULL;
}

static const ir_node *apply_step(ir_graph *g, const mv_step *s, const ir_node *x) {
  switch (s->kind) {
  case MV_SLICE:
    if (!s->symbolic) return ir_slice(g, x, s->axis, s->start, s->stop, s->step);
    return ir_slice_sym(g, x, s->axis, copy_to(g, s->start_e), copy_to(g, s->stop_e), s->step);
  case MV_SELECT: return ir_select(g, x, s->axis, copy_to(g, s->index));
  case MV_PERMUTE: return ir_permute(g, x, s->perm);
  case MV_EXPAND: {
    const sym_expr *shape[UOPC_MAX_RANK];
    for (int k = 0; k < s->rank; k++) shape[k] = copy_to(g, s->shape[k]);
    return ir_expand(g, x, s->rank, shape);
  }
  }
  return NULL;
}

const ir_node *mv_view_apply(ir_graph *g, const mv_view *v, const ir_node *base) {
  const ir_node *x = base;
  for (int k = 0; k < v->n_steps && x; k++) x = apply_step(g, &v->steps[k], x);
  return x;
}

static int graph_failed(ir_graph *g, uopc_error *err) {
  const uopc_error *e = ir_graph_error(g);
  if (e->code == UOPC_OK) return UOPC_FAIL(err, UOPC_E_NOMEM, "view: out of memory");
  *err = *e;
  return e->code;
}

int mv_view_on_fresh_graph(const mv_program *p, const mv_view *v, ir_graph **g, const ir_node **node,
                           uopc_error *err) {
  const mv_storage *s = mv_program_storage(p, v->storage);
  if (!s) return UOPC_FAIL(err, UOPC_E_INVALID, "view: storage %d does not exist", v->storage);
  int rc = ir_graph_new(g, err);
  if (rc) return rc;
  const sym_expr *shape[UOPC_MAX_RANK];
  for (int k = 0; k < s->rank; k++) shape[k] = copy_to(*g, s->shape[k]);
  const ir_node *x = ir_input(*g, s->name, s->dtype, s->rank, shape);
  *node = mv_view_apply(*g, v, x);
  if (*node) return UOPC_OK;
  rc = graph_failed(*g, err);
  ir_graph_free(*g);
  *g = NULL;
  return rc;
}

void mv_view_whole(const mv_program *p, int storage, mv_view *out) {
  (void)p;
  memset(out, 0, sizeof *out);
  out->storage = storage;
}

/* Appends step to a copy of v, checked by building the chain once. */
static int add_step(mv_program *p, const mv_view *v, const mv_step *step, mv_view *out, uopc_error *err) {
  if (!p || !v || !out) return UOPC_FAIL(err, UOPC_E_INVALID, "view: NULL argument");
  if (v->n_steps == MV_VIEW_STEPS_MAX)
    return UOPC_FAIL(err, UOPC_E_LIMIT, "view: a view of at most %d steps", MV_VIEW_STEPS_MAX);
  mv_view next = *v;
  next.steps[next.n_steps++] = *step;
  ir_graph *g;
  const ir_node *n;
  int rc = mv_view_on_fresh_graph(p, &next, &g, &n, err);
  if (rc) return rc;
  if (step->kind == MV_PERMUTE) next.steps[next.n_steps - 1].rank = n->rank;   /* for the text */
  ir_graph_free(g);
  *out = next;
  return UOPC_OK;
}

int mv_slice(mv_program *p, const mv_view *v, int axis, int64_t start, int64_t stop, int64_t step,
             mv_view *out, uopc_error *err) {
  mv_step s = {.kind = MV_SLICE, .axis = axis, .start = start, .stop = stop, .step = step};
  return add_step(p, v, &s, out, err);
}

int mv_slice_sym(mv_program *p, const mv_view *v, int axis, const sym_expr *start, const sym_expr *stop,
                 int64_t step, mv_view *out, uopc_error *err) {
  if (!p) return UOPC_FAIL(err, UOPC_E_INVALID, "view: NULL program");
  mv_step s = {.kind = MV_SLICE, .axis = axis, .symbolic = 1, .step = step, .start = UOPC_SLICE_NONE,
               .stop = UOPC_SLICE_NONE,
               .start_e = start ? sym_expr_copy(p->arena, start) : NULL,
               .stop_e = stop ? sym_expr_copy(p->arena, stop) : NULL};
  return add_step(p, v, &s, out, err);
}

int mv_select(mv_program *p, const mv_view *v, int axis, const sym_expr *index, mv_view *out,
              uopc_error *err) {
  if (!p || !index) return UOPC_FAIL(err, UOPC_E_INVALID, "view: NULL program or index");
  mv_step s = {.kind = MV_SELECT, .axis = axis, .index = sym_expr_copy(p->arena, index)};
  return add_step(p, v, &s, out, err);
}

int mv_permute(mv_program *p, const mv_view *v, const int *perm, mv_view *out, uopc_error *err) {
  if (!perm) return UOPC_FAIL(err, UOPC_E_INVALID, "view: NULL permutation");
  mv_step s = {.kind = MV_PERMUTE};
  memcpy(s.perm, perm, sizeof s.perm);
  return add_step(p, v, &s, out, err);
}

int mv_expand(mv_program *p, const mv_view *v, int rank, const sym_expr *const *shape, mv_view *out,
              uopc_error *err) {
  if (!p || !shape || rank < 0 || rank > UOPC_MAX_RANK)
    return UOPC_FAIL(err, UOPC_E_INVALID, "view: expand to rank %d (at most %d)", rank, UOPC_MAX_RANK);
  mv_step s = {.kind = MV_EXPAND, .rank = rank};
  for (int k = 0; k < rank; k++) s.shape[k] = sym_expr_copy(p->arena, shape[k]);
  return add_step(p, v, &s, out, err);
}

int mv_view_has_broadcast(const mv_view *v, const ir_node *base, int *broadcast, uopc_error *err) {
  if (!v || !base || !broadcast) return UOPC_FAIL(err, UOPC_E_INVALID, "view: NULL view, base or answer");
  *broadcast = 0;
  int expands = 0;
  for (int k = 0; k < v->n_steps; k++) expands |= v->steps[k].kind == MV_EXPAND;
  if (!expands) return UOPC_OK;   /* only an expand makes a stride 0 */
  ir_graph *g;
  int rc = ir_graph_new(&g, err);
  if (rc) return rc;
  const sym_expr *shape[UOPC_MAX_RANK];
  for (int k = 0; k < base->rank; k++) shape[k] = copy_to(g, base->shape[k]);
  const ir_node *x = ir_input(g, "base", base->dtype, base->rank, shape), *n = x ? mv_view_apply(g, v, x) : NULL;
  mv_layout l;
  rc = n ? ir_view_layout(ir_graph_arena(g), n, &l, err) : graph_failed(g, err);
  /* One element along a stride-0 axis is written once: only an extent that can exceed 1 collides. */
  for (int k = 0; !rc && k < l.rank && !*broadcast; k++) {
    sym_interval iv;
    if (!(l.strides[k]->kind == SYM_CONST && l.strides[k]->value == 0)) continue;
    rc = sym_expr_interval(l.shape[k], &iv, err);
    *broadcast = !rc && iv.hi > 1;
  }
  ir_graph_free(g);
  return rc;
}

int mv_view_layout(mv_program *p, const mv_view *v, mv_layout *out, uopc_error *err) {
  ir_graph *g;
  const ir_node *n;
  int rc = mv_view_on_fresh_graph(p, v, &g, &n, err);
  if (rc) return rc;
  rc = ir_view_layout(p->arena, n, out, err);
  ir_graph_free(g);
  return rc;
}

/* ---- The same view of one run's tensor. */

static int eval(const sym_expr *e, const sym_binding *b, int64_t *v, uopc_error *err) {
  return sym_expr_eval(e, b, v, err);
}

int mv_view_tensor(const mv_program *p, const mv_view *v, const sym_binding *b, const uopc_tensor *storage,
                   uopc_tensor *out, uopc_error *err) {
  (void)p;
  uopc_tensor x;
  uopc_tensor_retain(&x, storage);
  int rc = UOPC_OK;
  for (int k = 0; k < v->n_steps && !rc; k++) {
    const mv_step *s = &v->steps[k];
    uopc_tensor next = {0};
    int64_t lo = s->start, hi = s->stop, idx;
    switch (s->kind) {
    case MV_SLICE:
      if (s->symbolic) {
        lo = 0;
        hi = x.shape[s->axis];
        if (s->start_e) rc = eval(s->start_e, b, &lo, err);
        if (!rc && s->stop_e) rc = eval(s->stop_e, b, &hi, err);
      }
      if (!rc) rc = uopc_tensor_slice(&next, &x, s->axis, lo, hi, s->step, err);
      break;
    case MV_SELECT:
      rc = eval(s->index, b, &idx, err);
      if (!rc) rc = uopc_tensor_select(&next, &x, s->axis, idx, err);
      break;
    case MV_PERMUTE: rc = uopc_tensor_permute(&next, &x, s->perm, err); break;
    case MV_EXPAND: {                      /* NumPy's broadcast_to: a zero stride, the same storage */
      uopc_tensor_retain(&next, &x);
      int lead = s->rank - x.rank;
      for (int d = s->rank - 1; d >= 0 && !rc; d--) {
        int j = d - lead;
        int64_t want;
        rc = eval(s->shape[d], b, &want, err);
        if (rc) break;
        if (j >= 0 && x.shape[j] == want) { next.shape[d] = want; next.strides[d] = x.strides[j]; continue; }
        if (j >= 0 && x.shape[j] != 1)
          rc = UOPC_FAIL(err, UOPC_E_BOUNDS, "view: extent %lld of axis %d cannot broadcast to %lld",
                         (long long)x.shape[j], j, (long long)want);
        next.shape[d] = want;
        next.strides[d] = 0;
      }
      next.rank = s->rank;
      break;
    }
    }
    uopc_tensor_release(&x);
    x = next;
  }
  if (rc) { uopc_tensor_release(&x); return rc; }
  *out = x;
  return UOPC_OK;
}

/* ---- Text. */

__attribute__((format(printf, 4, 5)))
static void put(char *buf, size_t size, size_t *used, const char *fmt, ...) {
  if (*used >= size) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf + *used, size - *used, fmt, ap);
  va_end(ap);
  if (n > 0) *used += (size_t)n;
  if (*used >= size) *used = size;
}

static void bound_text(char *buf, size_t size, size_t *used, int64_t v, const sym_expr *e) {
  char t[64];
  if (e) { sym_expr_format(e, t, sizeof t, NULL); put(buf, size, used, "%s", t); }
  else if (v != UOPC_SLICE_NONE) put(buf, size, used, "%lld", (long long)v);
}

static void axes_prefix(char *buf, size_t size, size_t *used, int axis) {
  for (int k = 0; k < axis; k++) put(buf, size, used, ":, ");
}

void mv_view_format(const mv_program *p, const mv_view *v, char *buf, size_t size) {
  const mv_storage *s = mv_program_storage(p, v->storage);
  size_t used = 0;
  if (!size) return;
  buf[0] = 0;
  put(buf, size, &used, "%s", s ? s->name : "?");
  for (int k = 0; k < v->n_steps; k++) {
    const mv_step *st = &v->steps[k];
    char t[64];
    switch (st->kind) {
    case MV_SLICE:
      put(buf, size, &used, "[");
      axes_prefix(buf, size, &used, st->axis);
      bound_text(buf, size, &used, st->start, st->symbolic ? st->start_e : NULL);
      put(buf, size, &used, ":");
      bound_text(buf, size, &used, st->stop, st->symbolic ? st->stop_e : NULL);
      if (st->step != 1) put(buf, size, &used, ":%lld", (long long)st->step);
      put(buf, size, &used, "]");
      break;
    case MV_SELECT:
      sym_expr_format(st->index, t, sizeof t, NULL);
      put(buf, size, &used, "[");
      axes_prefix(buf, size, &used, st->axis);
      put(buf, size, &used, "%s]", t);
      break;
    case MV_PERMUTE:
      put(buf, size, &used, ".permute(");
      for (int a = 0; a < st->rank; a++)
        put(buf, size, &used, "%s%d", a ? ", " : "", st->perm[a]);
      put(buf, size, &used, ")");
      break;
    case MV_EXPAND:
      put(buf, size, &used, ".expand(");
      for (int a = 0; a < st->rank; a++) {
        sym_expr_format(st->shape[a], t, sizeof t, NULL);
        put(buf, size, &used, "%s%s", a ? ", " : "", t);
      }
      put(buf, size, &used, ")");
      break;
    }
  }
}
