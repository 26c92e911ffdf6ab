/* vcache_spec.c: what a variant is built for, and what it must check (lab
 * 23.2, given code). A call's specialisation follows the policy: each
 * extent becomes a constant (0/1, an exact size) or a dim, shared with an
 * earlier extent only when this call has the two equal; a strided input's
 * strides become dims. The guards are read back from the specialisation and
 * the graph, so every assumption the code may rest on is checked: a removed
 * guard (the broken build, tests/broken/23.2.mk) lets a call through that
 * the code was not built for. Chapter 23.2, "One variant cache for every
 * graph". */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "vcache.h"

/* ---- The specialisation. */

static int name_taken(const vcache *c, const vcache_spec *spec, const char *name) {
  for (int d = 0; d < spec->n_dims; d++)
    if (strcmp(spec->dims[d].name, name) == 0) return 1;
  for (int a = 0; a < c->opts.n_outputs + c->opts.n_inputs; a++)
    if (strcmp(c->names[a], name) == 0) return 1;
  return 0;
}

/* A new dim read at site at, named by the first free candidate: the
 * preferred name of its axis, "<input>_<axis>" ("_s<axis>" for a stride),
 * "dim<index>". Generated code takes it as a parameter of that name. */
static int new_dim(const vcache *c, vcache_spec *spec, guard_site at, int64_t lo, int64_t hi, int64_t multiple,
                   int *out, uopc_error *err) {
  if (spec->n_dims == SYM_BINDING_MAX)
    return UOPC_FAIL(err, UOPC_E_LIMIT, "op '%s': input '%s' needs more than %d dims", c->opts.op, c->names[at.arg],
                     SYM_BINDING_MAX);
  char cand[3][SYM_NAME_MAX + 16];
  snprintf(cand[0], sizeof cand[0], "%s", at.field == GUARD_SHAPE ? c->axis_names[at.arg][at.axis] : "");
  snprintf(cand[1], sizeof cand[1], "%s_%s%d", c->names[at.arg], at.field == GUARD_SHAPE ? "" : "s", at.axis);
  snprintf(cand[2], sizeof cand[2], "dim%d", spec->n_dims);
  for (int k = 0; k < 3; k++) {
    uopc_error e;
    if (!cand[k][0] || strlen(cand[k]) >= SYM_NAME_MAX || name_taken(c, spec, cand[k])) continue;
    if (sym_dim_init(&spec->dims[spec->n_dims], cand[k], lo, hi, multiple, &e) != UOPC_OK) continue;
    spec->dim_sites[spec->n_dims] = at;
    *out = spec->n_dims++;
    return UOPC_OK;
  }
  return UOPC_FAIL(err, UOPC_E_INVALID, "op '%s': no free name for the dim of %s axis %d", c->opts.op,
                   c->names[at.arg], at.axis);
}

/* Extent k of input arg a: a constant, the dim of an equal earlier extent, or a new dim. */
static int extent_of(const vcache *c, vcache_spec *spec, const guard_call *call, guard_site at,
                     vcache_extent *e, uopc_error *err) {
  const vcache_policy *p = &c->opts.policy;
  int64_t v = guard_site_value(call, at);
  e->dim = -1;
  e->value = v;
  if (v < 0 || v > p->max_extent)
    return UOPC_FAIL(err, UOPC_E_BOUNDS, "op '%s': input '%s' axis %d is %" PRId64 ", outside [0, %" PRId64
                     "] (policy.max_extent)", c->opts.op, c->names[at.arg], at.axis, v, p->max_extent);
  if ((p->exact_sizes && !spec->general) || (p->pin_01 && v <= 1)) return UOPC_OK;
  for (int d = 0; d < spec->n_dims; d++)   /* equal in this call: one dim, and a guard says so */
    if (spec->dim_sites[d].field == GUARD_SHAPE && guard_site_value(call, spec->dim_sites[d]) == v) {
      e->dim = d;
      return UOPC_OK;
    }
  int64_t m = !spec->general && p->multiple > 1 && v % p->multiple == 0 ? p->multiple : 1;
  return new_dim(c, spec, at, p->pin_01 ? 2 : 0, p->max_extent, m, &e->dim, err);
}

static int stride_of(const vcache *c, vcache_spec *spec, const guard_call *call, guard_site at, int *dim,
                     uopc_error *err) {
  int64_t v = guard_site_value(call, at), limit = c->opts.policy.max_stride;
  if (v < -limit || v > limit)
    return UOPC_FAIL(err, UOPC_E_BOUNDS, "op '%s': input '%s' stride %d is %" PRId64 ", outside [%" PRId64 ", %"
                     PRId64 "] (policy.max_stride)", c->opts.op, c->names[at.arg], at.axis, v, -limit, limit);
  return new_dim(c, spec, at, -limit, limit, 1, dim, err);
}

static int64_t alignment(const vcache_policy *p, const guard_call *call, int a, int general) {
  return !general && p->align > 1 && (call->data[a] & (uintptr_t)(p->align - 1)) == 0 ? p->align : 0;
}

static int input_spec(const vcache *c, vcache_spec *spec, const guard_call *call, int a, uopc_error *err) {
  vcache_arg *arg = &spec->args[a];
  int rc = UOPC_OK;
  arg->dtype = call->args[a].dtype;
  arg->rank = call->args[a].rank;
  arg->align = alignment(&c->opts.policy, call, a, spec->general);
  arg->strided = spec->general || c->opts.policy.strided_only || !guard_call_contiguous(call, a);
  for (int k = 0; k < arg->rank && !rc; k++)
    rc = extent_of(c, spec, call, (guard_site){a, GUARD_SHAPE, k}, &arg->shape[k], err);
  for (int k = 0; k < arg->rank && arg->strided && !rc; k++)
    rc = stride_of(c, spec, call, (guard_site){a, GUARD_STRIDE, k}, &arg->strides[k], err);
  return rc;
}

int vcache_spec_of(const vcache *c, const guard_call *call, int general, vcache_spec *spec, uopc_error *err) {
  int n_out = c->opts.n_outputs, n = n_out + c->opts.n_inputs, rc = UOPC_OK;
  memset(spec, 0, sizeof *spec);
  if (call->count != n)
    return UOPC_FAIL(err, UOPC_E_INVALID, "op '%s' takes %d arguments, not %d", c->opts.op, n, call->count);
  spec->n_outputs = n_out;
  spec->n_inputs = c->opts.n_inputs;
  spec->general = general;
  for (int a = 0; a < n_out; a++) {
    spec->args[a].dtype = call->args[a].dtype;
    spec->args[a].rank = call->args[a].rank;
    spec->args[a].align = alignment(&c->opts.policy, call, a, general);
  }
  for (int a = n_out; a < n && !rc; a++) rc = input_spec(c, spec, call, a, err);
  return rc;
}

/* ---- The guards. */

static int input_guards(const vcache_spec *spec, int a, guard_set *s, uopc_error *err) {
  const vcache_arg *arg = &spec->args[a];
  int rc = UOPC_OK;
  for (int k = 0; k < arg->rank && !rc; k++) {
    guard_site at = {a, GUARD_SHAPE, k};
    const vcache_extent *e = &arg->shape[k];
    const sym_dim *d = e->dim >= 0 ? &spec->dims[e->dim] : NULL;
    guard_site first = d ? spec->dim_sites[e->dim] : at;
#ifndef VCACHE_NO_CONSTANT_GUARD   /* a test-only build removes it: tests/broken/23.2.mk */
    if (!d) rc = guard_set_add_range(s, NULL, at, e->value, e->value, err);
#endif
    if (d && (first.arg != at.arg || first.axis != at.axis)) rc = guard_set_add_equal(s, at, first, err);
    else if (d) rc = guard_set_add_bounds(s, d, at, err);
  }
  for (int k = 0; k < arg->rank && arg->strided && !rc; k++)
    rc = guard_set_add_bounds(s, &spec->dims[arg->strides[k]], (guard_site){a, GUARD_STRIDE, k}, err);
  return rc || arg->strided ? rc : guard_set_add_contiguous(s, a, err);
}

/* The dim of spec named like expression e's, or -1. */
static int dim_named(const vcache_spec *spec, const sym_expr *e) {
  for (int d = 0; e->kind == SYM_DIM && d < spec->n_dims; d++)
    if (strcmp(spec->dims[d].name, e->dim.name) == 0) return d;
  return -1;
}

/* Output o: packed rows (exec writes them) of the shape the graph computes. */
static int output_guards(const vcache_spec *spec, int o, const ir_node *n, guard_set *s, uopc_error *err) {
  int rc = UOPC_OK;
  for (int k = 0; k < n->rank && !rc; k++) {
    guard_site at = {o, GUARD_SHAPE, k};
    const sym_expr *e = n->shape[k];
    int d = dim_named(spec, e);
    if (e->kind == SYM_CONST) rc = guard_set_add_range(s, NULL, at, e->value, e->value, err);
    else if (d >= 0) rc = guard_set_add_equal(s, at, spec->dim_sites[d], err);
    else rc = guard_set_add_expr(s, at, e, err);
  }
  return rc ? rc : guard_set_add_contiguous(s, o, err);
}

int vcache_spec_guards(const vcache *c, const vcache_spec *spec, const ir_node *const *outputs, guard_set *s,
                       uopc_error *err) {
  int n_out = spec->n_outputs, n = n_out + spec->n_inputs;
  const char *names[GUARD_MAX_ARGS] = {0};
  for (int a = 0; a < n && a < GUARD_MAX_ARGS; a++) names[a] = c->names[a];
  int rc = guard_set_init(s, n, names, err);
  for (int a = 0; a < n && !rc; a++) {
    rc = guard_set_add_dtype(s, a, a < n_out ? outputs[a]->dtype : spec->args[a].dtype, err);
    if (!rc) rc = guard_set_add_rank(s, a, a < n_out ? outputs[a]->rank : spec->args[a].rank, err);
  }
  for (int a = n_out; a < n && !rc; a++) rc = input_guards(spec, a, s, err);
  for (int o = 0; o < n_out && !rc; o++) rc = output_guards(spec, o, outputs[o], s, err);
  for (int a = 0; a < n && !rc; a++)
    if (spec->args[a].align) rc = guard_set_add_aligned(s, a, spec->args[a].align, err);
  for (int o = 0; o < n_out && !rc; o++)   /* exec's buffers are restrict */
    for (int b = o + 1; b < n && !rc; b++) rc = guard_set_add_disjoint(s, o, b, err);
  return rc;
}

/* ---- The key and the entry. */

void vcache_text_add(char *buf, size_t size, const char *fmt, ...) {
  size_t used = strlen(buf);
  if (used + 1 >= size) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + used, size - used, fmt, ap);
  va_end(ap);
}

void vcache_key_part(char *part, const char *text) {
  size_t len = strlen(text);
  if (len < SPEC_KEY_PART_MAX) { memcpy(part, text, len + 1); return; }
  snprintf(part, SPEC_KEY_PART_MAX, "%.*s~%016" PRIx64, SPEC_KEY_PART_MAX - 18, text,
           spec_key_fnv(SPEC_KEY_FNV_BASIS, text, len));
}

static void extent_text(const vcache_spec *spec, const vcache_extent *e, char *buf, size_t size) {
  if (e->dim < 0) vcache_text_add(buf, size, "%" PRId64, e->value);
  else vcache_text_add(buf, size, "%s", spec->dims[e->dim].name);
}

/* "x(n,1)/(x_s0,x_s1) y(n) n:[2,16777216]%16": shapes, strides, then each dim's bounds. */
static void constraints_text(const vcache *c, const vcache_spec *spec, char *buf, size_t size) {
  buf[0] = '\0';
  for (int a = spec->n_outputs; a < spec->n_outputs + spec->n_inputs; a++) {
    const vcache_arg *arg = &spec->args[a];
    vcache_text_add(buf, size, "%s%s(", a > spec->n_outputs ? " " : "", c->names[a]);
    for (int k = 0; k < arg->rank; k++) {
      vcache_text_add(buf, size, "%s", k ? "," : "");
      extent_text(spec, &arg->shape[k], buf, size);
    }
    vcache_text_add(buf, size, ")");
    for (int k = 0; k < arg->rank && arg->strided; k++)
      vcache_text_add(buf, size, "%s%s", k ? "," : "/(", spec->dims[arg->strides[k]].name);
    if (arg->strided && arg->rank) vcache_text_add(buf, size, ")");
  }
  for (int d = 0; d < spec->n_dims; d++) {
    const sym_dim *x = &spec->dims[d];
    vcache_text_add(buf, size, " %s:[%" PRId64 ",%" PRId64 "]", x->name, x->lo, x->hi);
    if (x->multiple_of > 1) vcache_text_add(buf, size, "%%%" PRId64, x->multiple_of);
  }
  if (spec->general) vcache_text_add(buf, size, " general");
}

int vcache_spec_key(const vcache *c, const vcache_spec *spec, const ir_graph *g, const ir_node *const *outputs,
                    spec_key *key, uopc_error *err) {
  spec_key_parts p = c->base;
  char dtypes[1024] = "", layout[1024] = "", constraints[2048];
  int n = spec->n_outputs + spec->n_inputs;
  p.graph_hash = ir_graph_hash(g, outputs, spec->n_outputs);
  if (!p.graph_hash) return UOPC_FAIL(err, UOPC_E_NOMEM, "op '%s': no memory to hash the graph", c->opts.op);
  for (int a = 0; a < n; a++) {
    uopc_dtype dt = a < spec->n_outputs ? outputs[a]->dtype : spec->args[a].dtype;
    vcache_text_add(dtypes, sizeof dtypes, "%s%s:%s", a ? " " : "", c->names[a], uopc_dtype_name(dt));
    vcache_text_add(layout, sizeof layout, "%s%s:%s", a ? " " : "", c->names[a], spec->args[a].strided ? "strided" : "contiguous");
    if (spec->args[a].align) vcache_text_add(layout, sizeof layout, ",aligned%" PRId64, spec->args[a].align);
    if (a < spec->n_outputs) vcache_text_add(layout, sizeof layout, ",disjoint");
  }
  constraints_text(c, spec, constraints, sizeof constraints);
  vcache_key_part(p.dtypes, dtypes);
  vcache_key_part(p.layout, layout);
  vcache_key_part(p.constraints, constraints);
  return spec_key_compose(&p, key, err);
}

static char dtype_letter(uopc_dtype dt) {
  static const char letters[] = {[UOPC_F32] = 'f', [UOPC_F64] = 'd', [UOPC_I32] = 'i', [UOPC_I64] = 'l',
                                 [UOPC_BOOL] = 'b'};
  return (unsigned)dt <= UOPC_BOOL ? letters[dt] : 'x';
}

void vcache_spec_entry(const vcache *c, const vcache_spec *spec, const spec_key *key, char *entry, size_t size) {
  char text[512];
  if (size > LOWER_ENTRY_MAX + 1) size = LOWER_ENTRY_MAX + 1;   /* a longer name is one lower_program refuses */   /* a longer name is one lower_program refuses */
  snprintf(text, sizeof text, "%s", c->opts.op);
  for (int a = spec->n_outputs; a < spec->n_outputs + spec->n_inputs; a++) {
    const vcache_arg *arg = &spec->args[a];
    vcache_text_add(text, sizeof text, "_%c", dtype_letter(arg->dtype));
    for (int k = 0; k < arg->rank; k++) {
      const vcache_extent *e = &arg->shape[k];
      if (e->dim < 0) vcache_text_add(text, sizeof text, "k%" PRId64, e->value);
      else vcache_text_add(text, sizeof text, "d%d", e->dim);
      if (e->dim >= 0 && spec->dims[e->dim].multiple_of > 1)
        vcache_text_add(text, sizeof text, "m%" PRId64, spec->dims[e->dim].multiple_of);
    }
    if (arg->strided) vcache_text_add(text, sizeof text, "s");
    if (arg->align) vcache_text_add(text, sizeof text, "a%" PRId64, arg->align);
  }
  for (int o = 0; o < spec->n_outputs; o++)
    if (spec->args[o].align) vcache_text_add(text, sizeof text, "_o%da%" PRId64, o, spec->args[o].align);
  if (strlen(text) < size && strlen(text) + 1 < sizeof text) snprintf(entry, size, "%s", text);
  else snprintf(entry, size, "%.*s_h%016" PRIx64, (int)(size > 19 ? size - 19 : 0), c->opts.op, key->hash);
}
