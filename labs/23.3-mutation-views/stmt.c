/* stmt.c: statements (given code, lab 23.3). A statement is built in a
 * graph of its own: its inputs are its loads, so the core lowers it with
 * exactly the views it reads. The store rule is the student's (store.c); a
 * let and the in-place forms are built on it here, with the printer. Uses
 * the program's storages (mprog.c) and views (view.c). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mprog_internal.h"

ir_graph *mv_begin(mv_program *p, uopc_error *err) {
  if (!p) { UOPC_FAIL(err, UOPC_E_INVALID, "program: NULL"); return NULL; }
  if (p->open) {
    UOPC_FAIL(err, UOPC_E_INVALID, "statement %d is already open: close it with a store or a let",
              p->n_stmts);
    return NULL;
  }
  if (ir_graph_new(&p->open, err)) return NULL;
  p->n_open = 0;
  return p->open;
}

/* A load's error is kept in the program until the statement closes (the
 * store or let that closes it reports it), as the graph keeps a builder's. */
__attribute__((format(printf, 3, 4)))
static void load_failed(mv_program *p, int code, const char *fmt, ...) {
  if (p->error.code) return;
  char msg[UOPC_ERROR_MESSAGE_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  uopc_fail(&p->error, code, "mv_load", "%s", msg);
}

const ir_node *mv_load(mv_program *p, const mv_view *v) {
  if (!p) return NULL;
  if (!p->open) {
    load_failed(p, UOPC_E_INVALID, "load with no open statement (mv_begin first)");
    return NULL;
  }
  if (!v) {
    load_failed(p, UOPC_E_INVALID, "load of a NULL view");
    return NULL;
  }
  if (ir_graph_error(p->open)->code) return NULL;
  mv_layout l;
  uopc_error err;
  ir_graph *g = p->open;
  if (!mv_program_storage(p, v->storage)) {
    load_failed(p, UOPC_E_INVALID, "load: storage %d does not exist", v->storage);
    return NULL;
  }
  if (mv_view_layout(p, v, &l, &err)) {
    if (!p->error.code) p->error = err;
    return NULL;
  }
  const mv_storage *s = &p->storages[v->storage];
  char name[SYM_NAME_MAX + 16];           /* storage names leave 7 characters (check_name) */
  snprintf(name, sizeof name, "%.*s_l%d", SYM_NAME_MAX - 8, s->name, p->n_open);
  const sym_expr *shape[UOPC_MAX_RANK], *strides[UOPC_MAX_RANK];
  sym_arena *a = ir_graph_arena(g);
  for (int k = 0; k < l.rank; k++) {
    shape[k] = sym_expr_copy(a, l.shape[k]);
    strides[k] = sym_expr_copy(a, l.strides[k]);
  }
  const ir_node *n = ir_input_view(g, name, s->dtype, l.rank, shape, strides, sym_expr_copy(a, l.offset));
  if (!n) return NULL;
  if (!mv_grow((void **)&p->open_loads, &p->cap_open, p->n_open + 1, sizeof *p->open_loads)) {
    load_failed(p, UOPC_E_NOMEM, "load: out of memory");
    return NULL;
  }
  p->open_loads[p->n_open++] = (mv_loaded){.node = n, .view = *v, .version = s->version};
  return n;
}

int mv_view_shape(mv_program *p, const mv_view *v, int *rank, const sym_expr **shape, uopc_error *err) {
  mv_layout l;
  int rc = mv_view_layout(p, v, &l, err);
  if (rc) return rc;
  sym_arena *a = p->open ? ir_graph_arena(p->open) : p->arena;
  *rank = l.rank;
  for (int k = 0; k < l.rank; k++) {
    rc = sym_expr_simplify(a, sym_expr_copy(a, l.shape[k]), &shape[k], err);
    if (rc) return rc;
  }
  return UOPC_OK;
}

int mv_commit(mv_program *p, mv_stmt_kind kind, const mv_view *target, const ir_node *value, int storage,
              int version_in, int version_out, uopc_error *err) {
  if (!mv_grow((void **)&p->stmts, &p->cap_stmts, p->n_stmts + 1, sizeof *p->stmts))
    return UOPC_FAIL(err, UOPC_E_NOMEM, "program: out of memory");
  mv_stmt st = {.kind = kind, .graph = p->open, .value = value, .n_loads = p->n_open, .target = *target,
                .storage = storage, .version_in = version_in, .version_out = version_out};
  if (p->n_open) {
    st.loads = malloc((size_t)p->n_open * sizeof *st.loads);
    if (!st.loads) return UOPC_FAIL(err, UOPC_E_NOMEM, "program: out of memory");
    memcpy(st.loads, p->open_loads, (size_t)p->n_open * sizeof *st.loads);
  }
  p->stmts[p->n_stmts++] = st;
  p->open = NULL;
  p->n_open = 0;
  p->error = (uopc_error){0};
  return UOPC_OK;
}

/* The checks a store and a let share: an open statement, no failed load, a
 * graph without error, a value of its graph. */
int mv_check_value(mv_program *p, const ir_node *value, uopc_error *err) {
  if (!p || !p->open)
    return UOPC_FAIL(err, UOPC_E_INVALID, "no open statement (mv_begin first)");
  if (p->error.code) { *err = p->error; return err->code; }
  const uopc_error *ge = ir_graph_error(p->open);
  if (ge->code) { *err = *ge; return ge->code; }
  if (!value || ir_graph_node(p->open, value->id) != value)
    return UOPC_FAIL(err, UOPC_E_INVALID, "the value is not a node of the open statement's graph");
  return UOPC_OK;
}

int mv_let(mv_program *p, const char *name, const ir_node *value, int *storage, uopc_error *err) {
  int rc = mv_check_value(p, value, err), id;
  if (!rc) rc = mv_add_storage(p, name, value->dtype, value->rank, value->shape, 0, &id, err);
  if (rc) { mv_abandon(p); return rc; }
  mv_view whole;
  mv_view_whole(p, id, &whole);
  rc = mv_commit(p, MV_LET, &whole, value, id, -1, 0, err);
  if (rc) { p->n_storages--; mv_abandon(p); return rc; }
  if (storage) *storage = id;
  return UOPC_OK;
}

int mv_add_(mv_program *p, const mv_view *target, const ir_node *value, uopc_error *err) {
  ir_graph *g = mv_open_graph(p);
  if (!g) return mv_store(p, target, value, err);   /* reports the missing statement */
  const ir_node *sum = ir_binary(g, IR_ADD, mv_load(p, target), value);
  return mv_store(p, target, sum ? sum : value, err);
}

int mv_copy_(mv_program *p, const mv_view *target, const mv_view *src, uopc_error *err) {
  if (!mv_open_graph(p)) return mv_store(p, target, NULL, err);
  return mv_store(p, target, mv_load(p, src), err);
}

int mv_escape(mv_program *p, const mv_view *v, uopc_error *err) {
  mv_storage *s = v ? mv_program_storage_mut(p, v->storage) : NULL;
  if (!s) return UOPC_FAIL(err, UOPC_E_INVALID, "escape: no such storage");
  s->escaped = 1;
  return UOPC_OK;
}

static int elementwise(const ir_node *n) {
  ir_kind k = ir_op_info_of(n->op)->kind;
  return k == IR_KIND_UNARY || k == IR_KIND_MATH || k == IR_KIND_CAST || k == IR_KIND_BINARY ||
         k == IR_KIND_COMPARE || k == IR_KIND_WHERE;
}

static int same_extents(const ir_node *a, const ir_node *b) {
  if (a->rank != b->rank) return 0;
  for (int k = 0; k < a->rank; k++)
    if (a->shape[k] != b->shape[k]) return 0;
  return 1;
}

int mv_stmt_reads_at_output_index(const mv_stmt *st, int j) {
  if (!st || j < 0 || j >= st->n_loads) return 0;
  const ir_node *load = st->loads[j].node;
  int count = ir_graph_node_count(st->graph), ok = same_extents(load, st->value);
  unsigned char *reaches = calloc((size_t)count, 1);
  if (!reaches) return 0;
  reaches[load->id] = 1;
  /* Ids are a topological order: a node reads the load when an operand does,
   * and must then be elementwise over operands of its own shape. */
  for (int id = load->id + 1; id < count && ok; id++) {
    const ir_node *n = ir_graph_node(st->graph, id);
    for (int i = 0; i < 3 && n->src[i]; i++) {
      if (!reaches[n->src[i]->id]) continue;
      reaches[id] = 1;
      if (!elementwise(n) || !same_extents(n->src[i], n)) ok = 0;
    }
  }
  ok = ok && reaches[st->value->id];
  free(reaches);
  return ok;
}

/* ---- The printer. */

int mv_program_print(codegen_text *t, const mv_program *p, uopc_error *err) {
  int rc = UOPC_OK;
  char view[MV_VIEW_TEXT_MAX], shape[128];
  for (int s = 0; s < p->n_storages && !rc; s++) {
    const mv_storage *st = &p->storages[s];
    if (!st->external) continue;
    size_t used = (size_t)snprintf(shape, sizeof shape, "[");
    for (int k = 0; k < st->rank && used < sizeof shape; k++) {
      if (k) used += (size_t)snprintf(shape + used, sizeof shape - used, ", ");
      if (used < sizeof shape) sym_expr_format(st->shape[k], shape + used, sizeof shape - used, NULL);
      used = strlen(shape);
    }
    if (used < sizeof shape) snprintf(shape + used, sizeof shape - used, "]");
    rc = codegen_printf(t, err, "storage %s : %s%s @M0 (the caller's)%s\n", st->name, ir_dtype_name(st->dtype), shape,
                        st->escaped ? ", escapes" : "");
  }
  for (int k = 0; k < p->n_stmts && !rc; k++) {
    const mv_stmt *st = &p->stmts[k];
    rc = codegen_printf(t, err, "statement %d:\n", k);
    for (int j = 0; j < st->n_loads && !rc; j++) {
      mv_view_format(p, &st->loads[j].view, view, sizeof view);
      rc = codegen_printf(t, err, "  %%%d = load %s @M%d\n", st->loads[j].node->id, view, st->loads[j].version);
    }
    /* The value's own nodes, loads excluded (printed above with versions). */
    codegen_text body = {0};
    if (!rc) rc = ir_print_prefixed(&body, st->graph, &st->value, 1, NULL, "  ", err);
    for (const char *line = body.data; !rc && line && *line;) {
      const char *end = strchr(line, '\n');
      size_t len = end ? (size_t)(end - line) + 1 : strlen(line);
      if (!strstr(line, "= input(") || (end && strstr(line, "= input(") > end))
        rc = codegen_printf(t, err, "%.*s", (int)len, line);
      line += len;
    }
    codegen_text_fini(&body);
    mv_view_format(p, &st->target, view, sizeof view);
    const mv_storage *s = &p->storages[st->storage];
    if (!rc && st->kind == MV_STORE)
      rc = codegen_printf(t, err, "  M%d = store %s <- %%%d (M%d -> M%d)\n", st->version_out, view, st->value->id,
                          st->version_in, st->version_out);
    else if (!rc)
      rc = codegen_printf(t, err, "  let %s = %%%d%s\n", s->name, st->value->id, s->escaped ? " (escapes)" : "");
  }
  return rc;
}
