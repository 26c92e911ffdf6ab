/* vcache.c: the variant cache's lifecycle and its explain (lab 23.2, given
 * code). Calls are vcache_call.c's, building variants vcache_build.c's.
 * Chapter 23.2, "One variant cache for every graph". */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "vcache_internal.h"

/* ---- Lifecycle. */

static int identifier(const char *s, size_t max) {
  if (!s || !((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_') || strlen(s) > max) return 0;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_')) return 0;
  return 1;
}

/* Input k's preferred dim names, "m n": one usable dim name per axis. */
static int parse_axes(vcache *c, int k, uopc_error *err) {
  const char *text = c->opts.axes[k];
  char copy[256], *save = NULL;
  int axis = 0;
  if (!text) return UOPC_OK;
  snprintf(copy, sizeof copy, "%s", text);
  for (char *w = strtok_r(copy, " ", &save); w; w = strtok_r(NULL, " ", &save), axis++) {
    sym_dim probe;
    uopc_error e;
    if (axis == UOPC_MAX_RANK || sym_dim_init(&probe, w, 0, 0, 1, &e) != UOPC_OK)
      return UOPC_FAIL(err, UOPC_E_INVALID, "option axes[%d] = \"%s\": '%s' is not a usable dim name, or past"
                       " %d axes", k, text, w, UOPC_MAX_RANK);
    strcpy(c->axis_names[c->opts.n_outputs + k][axis], w);
  }
  return UOPC_OK;
}

static int check_policy(const vcache_policy *p, uopc_error *err) {
  if (p->max_variants < 1 || p->max_variants > VCACHE_MAX_VARIANTS)
    return UOPC_FAIL(err, UOPC_E_INVALID, "policy.max_variants = %d outside [1, %d]", p->max_variants,
                     VCACHE_MAX_VARIANTS);
  if (p->max_extent < 1 || p->max_extent > (INT64_C(1) << 40) || p->max_stride < 1 || p->max_stride > (INT64_C(1) << 40))
    return UOPC_FAIL(err, UOPC_E_INVALID, "policy.max_extent = %" PRId64 " and max_stride = %" PRId64
                     " must lie in [1, 2^40]", p->max_extent, p->max_stride);
  if (p->multiple < 0 || p->align < 0 || (p->align > 1 && (p->align & (p->align - 1))))
    return UOPC_FAIL(err, UOPC_E_INVALID, "policy.multiple = %" PRId64 " must be >= 0 and policy.align = %" PRId64
                     " a power of two (or 0)", p->multiple, p->align);
  if (p->on_limit != VCACHE_LIMIT_GENERAL && p->on_limit != VCACHE_LIMIT_FAIL)
    return UOPC_FAIL(err, UOPC_E_INVALID, "policy.on_limit = %d is not a vcache_on_limit", (int)p->on_limit);
  return UOPC_OK;
}

static int check_options(vcache *c, uopc_error *err) {
  const vcache_options *o = &c->opts;
  if (!identifier(o->op, 40)) return UOPC_FAIL(err, UOPC_E_INVALID, "option op must be a C identifier of 1 to 40"
                                               " characters");
  int own = (o->hooks.contract != NULL) + (o->hooks.compile != NULL) + (o->hooks.run != NULL);
  if (own != 0 && own != 3)
    return UOPC_FAIL(err, UOPC_E_INVALID, "op '%s': hooks contract, compile and run go together (%d of 3 given)",
                     o->op, own);
  if (!o->build && !own) return UOPC_FAIL(err, UOPC_E_INVALID, "op '%s': option build is NULL", o->op);
  if (o->n_outputs < (own ? 0 : 1) || o->n_inputs < 0 || o->n_outputs + o->n_inputs < 1 ||
      o->n_outputs + o->n_inputs > GUARD_MAX_ARGS)
    return UOPC_FAIL(err, UOPC_E_INVALID, "op '%s': %d outputs and %d inputs; at least one output (none only when"
                     " the hooks run the kernels) and at most %d in all", o->op, o->n_outputs, o->n_inputs,
                     GUARD_MAX_ARGS);
  for (int a = 0; a < o->n_outputs + o->n_inputs; a++) {
    int input = a >= o->n_outputs, k = input ? a - o->n_outputs : a;
    char out[SYM_NAME_MAX];
    snprintf(out, sizeof out, "out%d", k);
    const char *name = input ? o->inputs[k] : o->outputs[k] ? o->outputs[k] : out;
    if (!identifier(name, SYM_NAME_MAX - 1))
      return UOPC_FAIL(err, UOPC_E_INVALID, "op '%s': %s %d needs a C identifier as its name", o->op,
                       input ? "input" : "output", k);
    for (int j = 0; j < a; j++)
      if (strcmp(c->names[j], name) == 0)
        return UOPC_FAIL(err, UOPC_E_INVALID, "op '%s': the name '%s' is used twice", o->op, name);
    strcpy(c->names[a], name);
    int rc = input ? parse_axes(c, k, err) : UOPC_OK;
    if (rc) return rc;
  }
  return check_policy(&o->policy, err);
}

/* The key parts no call changes. */
static void base_parts(vcache *c) {
  spec_key_parts *p = &c->base;
  const uopc_program_options *po = &c->opts.program;
  const char *cc = po->compiler ? po->compiler : getenv("UOPC_CC");
  const char *flags = po->opt_flags ? po->opt_flags : "-O3";
  snprintf(p->op, sizeof p->op, "%s", c->opts.op);
  spec_key_target(p->target, sizeof p->target);
  snprintf(p->numerics, sizeof p->numerics, "%s", strstr(flags, "fast-math") ? "fast-math" : "ieee fp-contract=off");
  snprintf(p->compiler, sizeof p->compiler, "%s %s%s", cc && cc[0] ? cc : "gcc", flags,
           po->march_native ? " -march=native" : "");
}

int vcache_init(vcache *c, const vcache_options *opts, uopc_error *err) {
  memset(c, 0, sizeof *c);
  if (!opts) return UOPC_FAIL(err, UOPC_E_INVALID, "a variant cache needs its options (op, inputs, build)");
  c->opts = *opts;
  vcache_policy *p = &c->opts.policy;
  if (!p->max_variants) p->max_variants = VCACHE_DEFAULT_MAX_VARIANTS;
  if (!p->max_extent) p->max_extent = VCACHE_DEFAULT_MAX_EXTENT;
  if (!p->max_stride) p->max_stride = VCACHE_DEFAULT_MAX_STRIDE;
  int rc = check_options(c, err);
  if (rc) return rc;
  base_parts(c);
  static const char *const names[] = {VCACHE_C_VARIANTS_BUILT, VCACHE_C_GUARD_CHECKS, VCACHE_C_GUARD_FAILURES};
  for (int k = VCACHE_SLOT_BUILT; k <= VCACHE_SLOT_FAILURES; k++) {
    const char *name = opts->counters[k] ? opts->counters[k] : names[k];
    c->slots[k] = name[0] ? uopc_counter_slot(name) : UOPC_COUNTER_NONE;
  }
  c->last.chosen = -1;
  c->index.usable = !opts->scan_only;
  c->trace = uopc_debug_level() >= 3;
  return UOPC_OK;
}

void vcache_variant_free(vcache_variant *v) {
  if (!v) return;
  exec_free(v->exec);
  uopc_program_free(v->program);
  guard_plan_fini(&v->plan);
  guard_set_fini(&v->guards);
  ir_graph_free(v->graph);
  free(v);
}

void vcache_fini(vcache *c) {
  for (int k = 0; k < c->count; k++) vcache_variant_free(c->variants[k]);
  c->count = c->n_general = 0;
  memset(&c->index, 0, sizeof c->index);
}

/* ---- Explain. */

void vcache_call_text(const vcache *c, const guard_call *call, char *buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  for (int a = c->opts.n_outputs; a < call->count && used + 1 < size; a++) {
    const guard_view *x = &call->args[a];
    used += (size_t)snprintf(buf + used, size - used, "%s%s: %s (", a > c->opts.n_outputs ? "; " : "", c->names[a],
                             uopc_dtype_name(x->dtype));
    for (int k = 0; k < x->rank && used + 1 < size; k++)
      used += (size_t)snprintf(buf + used, size - used, "%s%" PRId64, k ? ", " : "", x->shape[k]);
    if (used + 1 < size) used += (size_t)snprintf(buf + used, size - used, ")");
  }
}

__attribute__((format(printf, 4, 5)))
static void append(char *buf, size_t size, size_t *used, const char *fmt, ...) {
  if (*used >= size) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf + *used, size - *used, fmt, ap);
  va_end(ap);
  if (n > 0) *used += (size_t)n;
}

int vcache_explain(const vcache *c, char *buf, size_t size, uopc_error *err) {
  const vcache_record *r = &c->last;
  if (r->number == 0) return UOPC_FAIL(err, UOPC_E_INVALID, "op '%s': no call to explain yet", c->opts.op);
  const vcache_variant *v = r->chosen >= 0 ? c->variants[r->chosen] : NULL;
  char text[512];
  size_t used = 0;
  if (size) buf[0] = '\0';
  if (r->have_call) vcache_call_text(c, &r->call, text, sizeof text);
  append(buf, size, &used, "call %" PRId64 " (%s): ", r->number, r->have_call ? text : "arguments refused");
  if (v) append(buf, size, &used, "ran %s, variant %d of %d%s\n", v->entry, r->chosen + 1, c->count,
                r->built ? ", built by this call" : "");
  else append(buf, size, &used, "no variant ran: %s: %s\n", uopc_error_name(r->error.code), r->error.message);
  for (int k = 0; k < r->n_rejected && k < c->count; k++) {   /* rechecked for their reasons */
    const vcache_variant *f = c->variants[k];
    guard_reason why;
    int failed, rc = guard_set_check(&f->guards, &r->call, &failed, &why, err);
    if (rc) return rc;
    if (failed < 0) append(buf, size, &used, "  %s rejected, yet all its guards hold on this call\n", f->entry);
    else append(buf, size, &used, "  %s rejected: guard '%s' failed: %s\n", f->entry,
                f->guards.guards[failed].what, why.text);
  }
  if (r->limit_hit)
    append(buf, size, &used, "  a new variant was wanted past the variant limit (%d): %s\n",
           c->opts.policy.max_variants, !v ? "refused" : r->built ? "built the general variant" : "ran the general variant");
  if (v) append(buf, size, &used, "  all %d guards of %s held\n", v->guards.count, v->entry);
  return UOPC_OK;
}
