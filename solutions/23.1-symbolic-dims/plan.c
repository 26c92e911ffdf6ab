/* plan.c: one compiled kernel for every binding within the bounds (lab 23.1).
 * A plan translates the lab's kernel graph into the compiler core's IR, which
 * it owns with the lowered program (the core writes the text, its loops
 * through codegen.c), so the kernel graph can go. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "plan.h"
#include "uopc/layout.h"

struct plan {
  ir_graph *graph;                               /* the kernel graph in the core's IR */
  lower_program *low;                            /* entry, dims, index, source */
  int n_buffers;                                 /* out, then the inputs */
  char names[PLAN_MAX_BUFFERS][SYM_NAME_MAX];
  int rank[PLAN_MAX_BUFFERS];
  size_t itemsize[PLAN_MAX_BUFFERS];             /* bytes of one element */
  const sym_expr *shape[PLAN_MAX_BUFFERS][KERNEL_MAX_RANK];   /* in graph's arena */
  /* Each extent as the launch reads it: the index of the plan dim it is, or
   * EXTENT_CONST (extent_value), or EXTENT_EXPR (evaluated under a binding).
   * Plain dims and constants, the common case, cost a multiply per launch. */
  int extent_dim[PLAN_MAX_BUFFERS][KERNEL_MAX_RANK];
  int64_t extent_value[PLAN_MAX_BUFFERS][KERNEL_MAX_RANK];
  int has_expr_extent;
  uopc_program *program;
};

enum { EXTENT_CONST = -1, EXTENT_EXPR = -2 };

/* Which plan dim (or constant) extent k of buffer b is; see struct plan. */
static void classify_extent(plan *p, int b, int k) {
  const sym_expr *e = p->shape[b][k];
  p->extent_dim[b][k] = EXTENT_EXPR;
  p->extent_value[b][k] = e->kind == SYM_CONST ? e->value : 0;
  if (e->kind == SYM_CONST) p->extent_dim[b][k] = EXTENT_CONST;
  for (int d = 0; d < p->low->n_dims && e->kind == SYM_DIM; d++)
    if (sym_dim_same(&e->dim, &p->low->dims[d])) p->extent_dim[b][k] = d;
  if (p->extent_dim[b][k] == EXTENT_EXPR) p->has_expr_extent = 1;
}

static void keep_shape(plan *p, const char *name, const ir_node *n) {
  int b = p->n_buffers++;
  snprintf(p->names[b], sizeof p->names[b], "%s", name);
  p->rank[b] = n->rank;
  p->itemsize[b] = uopc_dtype_size(n->dtype);
  for (int k = 0; k < n->rank; k++) {
    p->shape[b][k] = n->shape[k];
    classify_extent(p, b, k);
  }
}

static int check_graph(const kernel_graph *g, const kernel_node *out, const char *name, uopc_error *err) {
  if (!g || !out || out < g->nodes || out >= g->nodes + g->count)
    return UOPC_FAIL(err, UOPC_E_INVALID, "plan '%s': the output is not a node of the graph", name ? name : "?");
  if (out->rank == 0)
    return UOPC_FAIL(err, UOPC_E_INVALID, "plan '%s': the output '%s' is a scalar, not a tensor",
                     name ? name : "?", kernel_op_name(out->op));
  return UOPC_OK;
}

int plan_new(plan **out, const kernel_graph *g, const kernel_node *output,
             const char *name, const uopc_program_options *opts, uopc_error *err) {
  int rc = check_graph(g, output, name, err);
  if (rc) return rc;
  plan *p = calloc(1, sizeof *p);
  if (!p) return UOPC_FAIL(err, UOPC_E_NOMEM, "plan '%s': out of memory", name ? name : "?");
  const ir_node *result = NULL;
  rc = ir_graph_new(&p->graph, err);
  if (!rc) rc = kernel_graph_to_ir(g, output, p->graph, 0, &result, err);
  if (!rc) rc = lower_program_new(&p->low, p->graph, &result, 1, name, LOWER_C, err);
  if (!rc) {
    keep_shape(p, "out", result);
    for (int i = 0; i < g->n_inputs; i++) keep_shape(p, g->inputs[i]->name, ir_graph_input(p->graph, i));
    rc = uopc_program_new(&p->program, p->low->source.data, p->low->entry, p->low->signature, opts, err);
  }
  if (rc) { plan_free(p); return rc; }
  uopc_counter_add(PLAN_C_BUILT, 1);
  *out = p;
  return UOPC_OK;
}

void plan_free(plan *p) {
  if (!p) return;
  uopc_program_free(p->program);
  lower_program_free(p->low);
  ir_graph_free(p->graph);
  free(p);
}

const char *plan_name(const plan *p) { return p->low->entry; }
int plan_dim_count(const plan *p) { return p->low->n_dims; }
const sym_dim *plan_dim(const plan *p, int k) { return &p->low->dims[k]; }
const sym_index_plan *plan_index(const plan *p) { return &p->low->index; }
const char *plan_source(const plan *p) { return p->low->source.data; }
const uopc_program *plan_program(const plan *p) { return p->program; }

int plan_resolve_dims(const plan *p, const sym_binding *b, int64_t *values,
                      uopc_error *err) {
// STUDENT 23.1 plan_resolve_dims
  for (int k = 0; k < plan_dim_count(p); k++) {
    const sym_dim *d = plan_dim(p, k);
    int at = b ? sym_binding_find(b, d->name) : -1;
    if (at < 0)
      return UOPC_FAIL(err, UOPC_E_UNBOUND, "kernel '%s' launched with dim '%s' unbound",
                       plan_name(p), d->name);
    int rc = sym_dim_check(d, b->values[at], err);   /* the plan's bounds, not the binding's */
    if (rc) return rc;
    values[k] = b->values[at];
  }
  return UOPC_OK;
// END STUDENT
}

/* Every buffer must hold its logical size under the binding. */
/* Extent d of buffer k under the plan's dim values (b serves expressions). */
static int extent_of(const plan *p, int k, int d, const int64_t *values, const sym_binding *b,
                     int64_t *extent, uopc_error *err) {
  int which = p->extent_dim[k][d];
  if (which >= 0) *extent = values[which];
  else if (which == EXTENT_CONST) *extent = p->extent_value[k][d];
  else return sym_expr_eval(p->shape[k][d], b, extent, err);
  return UOPC_OK;
}

static int check_buffer(const plan *p, int k, const plan_buffer *buf, const int64_t *values,
                        const sym_binding *b, int64_t *need, uopc_error *err) {
  if (!buf->data) return UOPC_FAIL(err, UOPC_E_INVALID, "kernel '%s': buffer '%s' is NULL",
                                   plan_name(p), p->names[k]);
  *need = 1;
  for (int d = 0; d < p->rank[k]; d++) {
    int64_t extent;
    int rc = extent_of(p, k, d, values, b, &extent, err);
    if (rc) return rc;
    if (__builtin_mul_overflow(*need, extent, need))
      return UOPC_FAIL(err, UOPC_E_OVERFLOW, "kernel '%s': size of '%s' overflows", plan_name(p),
                       p->names[k]);
  }
  if (buf->capacity < *need)
    return UOPC_FAIL(err, UOPC_E_BOUNDS, "kernel '%s': buffer '%s' holds %" PRId64
                     " elements, the binding needs %" PRId64, plan_name(p), p->names[k],
                     buf->capacity, *need);
  return UOPC_OK;
}

/* The kernel declares its buffers restrict (emit.c), a promise to gcc that
 * out shares no byte with an input; this is the guard that keeps it. Inputs
 * may share bytes with each other: they are only read. need[k] elements of
 * buffer k are what the call reaches. */
static int check_disjoint(const plan *p, void *const *data, const int64_t *need, uopc_error *err) {
  static const int64_t unit = 1;
  uopc_layout_bytes out = uopc_layout_byte_range(1, &need[0], &unit, p->itemsize[0], data[0]);
  for (int k = 1; k < p->n_buffers; k++)
    if (uopc_layout_overlap(out, uopc_layout_byte_range(1, &need[k], &unit, p->itemsize[k], data[k])))
      return UOPC_FAIL(err, UOPC_E_ALIAS, "kernel '%s': buffers '%s' and '%s' share memory; the"
                       " kernel's buffers are restrict, so out must not overlap an input", plan_name(p),
                       p->names[0], p->names[k]);
  return UOPC_OK;
}

int plan_launch(plan *p, const sym_binding *b, plan_buffer out,
                const plan_buffer *inputs, int n_inputs, uopc_error *err) {
  if (!p || n_inputs != p->n_buffers - 1 || (n_inputs && !inputs))
    return UOPC_FAIL(err, UOPC_E_INVALID, "kernel '%s' takes %d inputs, %d given",
                     p ? plan_name(p) : "?", p ? p->n_buffers - 1 : 0, n_inputs);
  int64_t values[UOPC_SIGNATURE_MAX];
  int rc = plan_resolve_dims(p, b, values, err);
  if (rc) return rc;
  sym_binding own;                       /* the checked values, by the plan's dims, for */
  own.count = 0;                         /* extents that are expressions (not sym_binding_init: */
  for (int k = 0; p->has_expr_extent && k < p->low->n_dims && !rc; k++)   /* its memset is 1 KB) */
    rc = sym_dim_bind(&own, plan_dim(p, k), values[k], err);
  int64_t need[PLAN_MAX_BUFFERS];
  void *ptrs[PLAN_MAX_BUFFERS];
  for (int k = 0; k < p->n_buffers && !rc; k++) {
    rc = check_buffer(p, k, k ? &inputs[k - 1] : &out, values, &own, &need[k], err);
    ptrs[k] = k ? inputs[k - 1].data : out.data;
  }
  if (!rc) rc = check_disjoint(p, ptrs, need, err);
  if (rc) return rc;
  int32_t narrow[UOPC_SIGNATURE_MAX];      /* exact: the plan proved each fits */
  void *args[PLAN_MAX_BUFFERS + UOPC_SIGNATURE_MAX];
  int n = 0;
  for (int k = 0; k < p->n_buffers; k++) args[n++] = &ptrs[k];
  for (int k = 0; k < p->low->n_dims; k++) {
    narrow[k] = (int32_t)values[k];
    args[n++] = p->low->index.bits == 32 ? (void *)&narrow[k] : (void *)&values[k];
  }
  uopc_program_call(p->program, args);
  return UOPC_OK;
}

void plan_describe(const plan *p, char *buf, size_t size) {
  size_t used = (size_t)snprintf(buf, size, "plan %s: dims%s", plan_name(p),
                                plan_dim_count(p) ? "" : " none");
  for (int k = 0; k < p->low->n_dims && used < size; k++) {
    const sym_dim *d = plan_dim(p, k);
    used += (size_t)snprintf(buf + used, size - used, "%s %s in [%" PRId64 ", %" PRId64 "]",
                             k ? "," : "", d->name, d->lo, d->hi);
    if (d->multiple_of > 1 && used < size)
      used += (size_t)snprintf(buf + used, size - used, " multiple of %" PRId64, d->multiple_of);
  }
  if (used < size)
    snprintf(buf + used, size - used, "; index %s (at most %" PRId64 " elements)",
             sym_index_ctype(plan_index(p)), plan_index(p)->max_elements);
}
