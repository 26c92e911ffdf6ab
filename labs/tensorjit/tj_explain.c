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

void tj_call_text(const tj_function *f, const guard_call *call, const tj_arg *args, char *buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  for (int k = 0, t = 0; k < f->n_args; k++)
    if (f->kinds[k] == TJ_TENSOR) {
      const guard_view *x = &call->args[t++];
      append(buf, size, &used, "%s%s: %s (", k ? "; " : "", f->arg_names[k], uopc_dtype_name(x->dtype));
      for (int a = 0; a < x->rank; a++) append(buf, size, &used, "%s%" PRId64, a ? ", " : "", x->shape[a]);
      append(buf, size, &used, ")%s", guard_call_contiguous(call, t - 1) ? "" : " strided");
    } else if (f->kinds[k] == TJ_INT) append(buf, size, &used, "%s%s = %" PRId64, k ? "; " : "", f->arg_names[k], args[k].i);
    else if (f->kinds[k] == TJ_DOUBLE) append(buf, size, &used, "%s%s = %.17g", k ? "; " : "", f->arg_names[k], args[k].d);
}

/* "scale == 2": scalar argument k's guard. */
static void scalar_text(const tj_function *f, const tj_arg *value, int k, char *buf, size_t size) {
  if (f->kinds[k] == TJ_INT) snprintf(buf, size, "%s == %" PRId64, f->arg_names[k], value->i);
  else snprintf(buf, size, "%s == %.17g", f->arg_names[k], value->d);
}

/* "a0_0 - 4 > 0 is false": a trace guard. */
static void trace_text(const tp_guard *g, char *buf, size_t size) {
  char e[GUARD_TEXT_MAX];
  uopc_error ignore;
  if (sym_expr_format(g->diff, e, sizeof e, &ignore)) snprintf(e, sizeof e, "?");
  snprintf(buf, size, "%.100s %s 0 is %s", e, tp_cmp_text(g->op), g->truth ? "true" : "false");
}

int tj_reject_text(const tj_function *f, const tj_artifact *a, const guard_call *call, const tj_arg *args,
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
  if (!tj_scalars_hold(f, a, args, &failed)) {
    scalar_text(f, &a->scalars[failed], failed, what, sizeof what);
    char now[GUARD_TEXT_MAX];
    scalar_text(f, &args[failed], failed, now, sizeof now);
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

/* Artifact k and every guard it holds, one a line. */
static void describe(const tj_function *f, int k, char *buf, size_t size, size_t *used) {
  const tj_artifact *a = &f->arts[k];
  const vcache_variant *v = a->v;
  append(buf, size, used, "artifact %d: %s (built by call %" PRId64 ", %s), %" PRId64 " call%s\n", k + 1, v->entry,
         a->number, !a->n_computed ? "views only, no kernel" : a->interpreted ? "interpreted" : "compiled", v->calls, v->calls == 1 ? "" : "s");
  tj_guards_text(f, a, "  ", buf, size, used);
}

void tj_guards_text(const tj_function *f, const tj_artifact *a, const char *indent, char *buf, size_t size,
                    size_t *used) {
  const vcache_variant *v = a->v;
  for (int g = 0; g < v->guards.count; g++) append(buf, size, used, "%s%s\n", indent, v->guards.guards[g].what);
  for (int s = 0; s < f->n_args; s++) {
    char t[GUARD_TEXT_MAX];
    if (f->kinds[s] == TJ_TENSOR) continue;
    scalar_text(f, &a->scalars[s], s, t, sizeof t);
    append(buf, size, used, "%s%s (a scalar argument)\n", indent, t);
  }
  for (int g = 0; g < a->n_guards; g++) {
    char t[GUARD_TEXT_MAX];
    trace_text(&a->guards[g], t, sizeof t);
    append(buf, size, used, "%s%s (a branch at %s:%d)\n", indent, t, a->guards[g].at.file ? a->guards[g].at.file : "?",
           a->guards[g].at.line);
  }
}

static int explain_call(const tj_function *f, const tj_arg *args, char *buf, size_t size, uopc_error *err) {
  const uopc_tensor *tensors[TJ_MAX_TENSORS];
  guard_call call;
  char text[512], why[GUARD_REASON_MAX + GUARD_TEXT_MAX + 128];
  size_t used = 0;
  for (int k = 0; k < f->n_tensors; k++) tensors[k] = args[f->tensor_arg[k]].tensor;
  int rc = guard_call_init(&call, f->n_tensors, tensors, err);
  if (rc) return rc;
  tj_call_text(f, &call, args, text, sizeof text);
  append(buf, size, &used, "call (%s):\n", text);
  for (int k = 0; k < f->n_arts; k++) {
    if ((rc = tj_reject_text(f, &f->arts[k], &call, args, why, sizeof why, err))) return rc;
    if (!why[0]) {
      append(buf, size, &used, "  would run %s (artifact %d of %d)\n", f->arts[k].v->entry, k + 1, f->n_arts);
      return UOPC_OK;
    }
    append(buf, size, &used, "  %s rejected: %s\n", f->arts[k].v->entry, why);
  }
  if (f->n_arts < f->opts.max_variants)
    append(buf, size, &used, "  no artifact serves it: a new one would be traced and built (%d of %d kept)\n",
           f->n_arts, f->opts.max_variants);
  else append(buf, size, &used, "  no artifact serves it and the specialization limit (max_variants = %d) is"
              " reached: %s\n", f->opts.max_variants, f->opts.on_limit == TJ_LIMIT_EAGER ? "it would run eagerly"
              : f->opts.on_limit == TJ_LIMIT_UNKEPT ? "a new one would run, not kept" : "the call would be refused");
  return UOPC_OK;
}

int tj_explain(const tj_function *f, const tj_arg *args, char *buf, size_t size, uopc_error *err) {
  if (!f || !buf || !size) return UOPC_FAIL(err, UOPC_E_INVALID, "tj_explain: NULL function or buffer");
  buf[0] = '\0';
  if (!f->fixed) return UOPC_FAIL(err, UOPC_E_INVALID, "tensorjit '%s': no call yet, nothing to explain", f->label);
  if (args) {
    int rc = tj_check_args(f, args, f->n_args, err);
    return rc ? rc : explain_call(f, args, buf, size, err);
  }
  size_t used = 0;
  for (int k = 0; k < f->n_arts; k++) describe(f, k, buf, size, &used);
  return UOPC_OK;
}
