/* tj_explain.c: why a call takes its artifact (section 23.7, given code).
 * Every guard of an artifact has a printed form: the guard set's own texts
 * (23.2's), each scalar's value, each comparison the trace made with its
 * line in the model. tj_explain prints them, and for a call which artifact
 * would run or which guard rejects each one, with this call's values; the
 * limit's error quotes the same lines. Chapter 23.7, "Reading the guards". */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "tj_internal.h"

__attribute__((format(printf, 4, 5)))
static void append(char *buf, size_t size, size_t *used, const char *fmt, ...) {
  if (*used + 1 >= size) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf + *used, size - *used, fmt, ap);
  va_end(ap);
  if (n > 0) *used = *used + (size_t)n < size ? *used + (size_t)n : size - 1;
}

void tj_call_text(const tj_flat *flat, const guard_call *call, char *buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  for (int k = 0, t = 0, first = 1; k < flat->n_nodes; k++) {
    const tj_node *n = &flat->nodes[k];
    const tj_arg *a = flat->at[k];
    const char *sep = first ? "" : "; ";
    if (n->kind == TJ_TENSOR) {
      const guard_view *x = &call->args[t++];
      append(buf, size, &used, "%s%s: %s (", sep, n->path, uopc_dtype_name(x->dtype));
      for (int d = 0; d < x->rank; d++) append(buf, size, &used, "%s%" PRId64, d ? ", " : "", x->shape[d]);
      append(buf, size, &used, ")%s", guard_call_contiguous(call, t - 1) ? "" : " strided");
    } else if (n->kind == TJ_SYM_INT) {
      append(buf, size, &used, "%s%s = %" PRId64 " (symbolic)", sep, n->path, call->args[t++].shape[0]);
    } else if (n->kind == TJ_INT) append(buf, size, &used, "%s%s = %" PRId64, sep, n->path, a->i);
    else if (n->kind == TJ_DOUBLE) append(buf, size, &used, "%s%s = %.17g", sep, n->path, a->d);
    else continue;   /* a container: its members say it */
    first = 0;
  }
}

/* "scale == 2": scalar node k's guard, for value. */
static void scalar_text(const tj_group *g, const tj_arg *value, int k, char *buf, size_t size) {
  if (g->nodes[k].kind == TJ_INT) snprintf(buf, size, "%s == %" PRId64, g->nodes[k].path, value->i);
  else snprintf(buf, size, "%s == %.17g", g->nodes[k].path, value->d);
}

/* "a0_0 - 4 > 0 is false": a trace guard. */
static void trace_text(const tp_guard *g, char *buf, size_t size) {
  char e[GUARD_TEXT_MAX];
  uopc_error ignore;
  if (sym_expr_format(g->diff, e, sizeof e, &ignore)) snprintf(e, sizeof e, "?");
  snprintf(buf, size, "%.100s %s 0 is %s", e, tp_cmp_text(g->op), g->truth ? "true" : "false");
}

int tj_reject_text(const tj_group *g, const tj_artifact *a, const guard_call *call, const tj_flat *flat,
                   char *buf, size_t size, uopc_error *err) {
  int failed, rc;
  int64_t value;
  guard_reason why;
  char what[GUARD_TEXT_MAX + 64];
  buf[0] = '\0';
  if ((rc = guard_set_check(&a->v->guards, call, &failed, &why, err))) return rc;
  if (failed >= 0) {
    snprintf(buf, size, "guard '%s' failed: %s", a->v->guards.guards[failed].what, why.text);
    return UOPC_OK;
  }
  if (!tj_scalars_hold(g, a, flat, &failed)) {
    scalar_text(g, &a->scalars[failed], failed, what, sizeof what);
    char now[GUARD_TEXT_MAX];
    scalar_text(g, flat->at[failed], failed, now, sizeof now);
    snprintf(buf, size, "guard '%s' failed: this call has %s", what, strchr(now, '=') ? now : "another value");
    return UOPC_OK;
  }
  if ((rc = tj_trace_holds(a, call, &failed, &value, err))) return rc;
  if (failed >= 0) {
    const tp_guard *g = &a->guards[failed];
    trace_text(g, what, sizeof what);
    snprintf(buf, size, "guard '%s' (%s:%d) failed: the difference is %" PRId64 " on this call", what,
             g->at.file ? g->at.file : "?", g->at.line, value);
  }
  return UOPC_OK;
}

/* Artifact k of g and every guard it holds, one a line. */
static void describe(const tj_group *g, int k, char *buf, size_t size, size_t *used) {
  const tj_artifact *a = &g->arts[k];
  const vcache_variant *v = a->v;
  append(buf, size, used, "artifact %d: %s (built by call %" PRId64 ", %s), %" PRId64 " call%s\n", k + 1, v->entry,
         a->number, !a->n_computed ? "views only, no kernel" : a->interpreted ? "interpreted" : "compiled", v->calls, v->calls == 1 ? "" : "s");
  tj_guards_text(g, a, "  ", buf, size, used);
  if (*used + 1 < size) tj_callouts_text(a, "  ", buf, size), *used = strlen(buf);   /* what runs between its regions */
}

void tj_guards_text(const tj_group *g, const tj_artifact *a, const char *indent, char *buf, size_t size,
                    size_t *used) {
  const vcache_variant *v = a->v;
  for (int k = 0; k < v->guards.count; k++) append(buf, size, used, "%s%s\n", indent, v->guards.guards[k].what);
  for (int s = 0; s < g->n_nodes; s++) {
    char t[GUARD_TEXT_MAX];
    if (g->nodes[s].kind != TJ_INT && g->nodes[s].kind != TJ_DOUBLE) continue;
    scalar_text(g, &a->scalars[s], s, t, sizeof t);
    append(buf, size, used, "%s%s (a scalar %s)\n", indent, t, g->nodes[s].depth ? "member" : "argument");
  }
  for (int k = 0; k < a->n_guards; k++) {
    char t[GUARD_TEXT_MAX];
    trace_text(&a->guards[k], t, sizeof t);
    append(buf, size, used, "%s%s (%s at %s:%d)\n", indent, t, k < a->n_branches ? "a branch" : "an extent read as an"
           " expression", a->guards[k].at.file ? a->guards[k].at.file : "?", a->guards[k].at.line);
  }
}

/* Which of g's artifacts would serve the call, or why each rejects it. */
static int explain_group(const tj_function *f, const tj_group *g, const guard_call *call, const tj_flat *flat,
                         char *buf, size_t size, size_t *used, uopc_error *err) {
  char why[GUARD_REASON_MAX + GUARD_TEXT_MAX + 128];
  for (int k = 0; k < g->n_arts; k++) {
    int rc = tj_reject_text(g, &g->arts[k], call, flat, why, sizeof why, err);
    if (rc) return rc;
    if (!why[0]) {
      append(buf, size, used, "  would run %s (artifact %d of %d)\n", g->arts[k].v->entry, k + 1, g->n_arts);
      return UOPC_OK;
    }
    append(buf, size, used, "  %s rejected: %s\n", g->arts[k].v->entry, why);
  }
  if (g->n_arts < f->opts.max_variants)
    append(buf, size, used, "  no artifact serves it: a new one would be traced and built (%d of %d kept)\n",
           g->n_arts, f->opts.max_variants);
  else append(buf, size, used, "  no artifact serves it and the specialization limit (max_variants = %d) is"
              " reached: %s\n", f->opts.max_variants, f->opts.on_limit == TJ_LIMIT_EAGER ? "it would run eagerly"
              : f->opts.on_limit == TJ_LIMIT_UNKEPT ? "a new one would run, not kept" : "the call would be refused");
  return UOPC_OK;
}

static int explain_call(const tj_function *f, const tj_flat *flat, char *buf, size_t size, uopc_error *err) {
  const uopc_tensor *tensors[TJ_MAX_TENSORS];
  guard_call call;
  char text[512], why[512];
  size_t used = 0;
  for (int k = 0; k < flat->n_tensors; k++) tensors[k] = tj_flat_tensor(flat, k);
  int rc = guard_call_init(&call, flat->n_tensors, tensors, err);
  if (rc) return rc;
  tj_call_text(flat, &call, text, sizeof text);
  append(buf, size, &used, "call (%s):\n", text);
  const tj_group *g = tj_group_of(f, flat);
  for (int k = 0; flat->containers && k < f->n_groups; k++) {   /* the structure first: it picks the group */
    if (f->groups[k] == g) {
      append(buf, size, &used, "  structure %d of %d: its own\n", k + 1, f->n_groups);
      break;
    }
    tj_structure_reject(f->groups[k], flat, why, sizeof why);
    append(buf, size, &used, "  structure %d rejected: %s\n", k + 1, why);
  }
  if (g) return explain_group(f, g, &call, flat, buf, size, &used, err);
  if (f->n_groups < TJ_MAX_STRUCTURES)
    append(buf, size, &used, "  no structure serves it: a new one and its artifact would be traced and built (%d of"
           " %d structures kept)\n", f->n_groups, TJ_MAX_STRUCTURES);
  else append(buf, size, &used, "  no structure serves it and the structure limit (TJ_MAX_STRUCTURES = %d) is"
              " reached: the call would be refused\n", TJ_MAX_STRUCTURES);
  return UOPC_OK;
}

int tj_explain(const tj_function *f, const tj_arg *args, char *buf, size_t size, uopc_error *err) {
  if (!f || !buf || !size) return UOPC_FAIL(err, UOPC_E_INVALID, "tj_explain: NULL function or buffer");
  buf[0] = '\0';
  if (!f->fixed) return UOPC_FAIL(err, UOPC_E_INVALID, "tensorjit '%s': no call yet, nothing to explain", f->label);
  if (args) {
    tj_flat flat;
    flat.signature_nodes = 0;   /* a new flat: its nodes are not the signature's yet */
    int rc = tj_check_args(f, args, f->n_args, &flat, err);
    return rc ? rc : explain_call(f, &flat, buf, size, err);
  }
  size_t used = 0;
  for (int k = 0; k < f->n_groups; k++) {
    const tj_group *g = f->groups[k];
    if (g->containers) {   /* containers: the structure before its artifacts */
      char text[2048];
      tj_structure_text(g, text, sizeof text);
      append(buf, size, &used, "structure %d: %s\n", k + 1, text);
    }
    for (int a = 0; a < g->n_arts; a++) describe(g, a, buf, size, &used);
  }
  return UOPC_OK;
}

const char *tj_artifact_source(const tj_function *f, int k) {
  for (int i = 0; i < f->n_groups && k >= 0; k -= f->groups[i]->n_arts, i++)
    if (k < f->groups[i]->n_arts) {
      const tj_artifact *a = &f->groups[i]->arts[k];
      return a->interpreted || a->callouts || !a->v->exec ? NULL : exec_source(a->v->exec);
    }
  return NULL;
}
