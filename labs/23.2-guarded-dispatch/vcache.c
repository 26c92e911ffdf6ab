/* vcache.c: one guarded variant cache for graphs (lab 23.2, given code).
 * vcache_choose decides and counts; vcache_run runs through exec. A variant
 * runs only when its own guards held for the call: a selected one has just
 * passed them, and one built on a miss is checked once more (and counted,
 * as lab 23.2's dispatcher counts it). Chapter 23.2, "One variant cache for
 * every graph". */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "vcache.h"

enum { SLOT_BUILT, SLOT_CHECKS, SLOT_FAILURES };

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
  if (!o->build) return UOPC_FAIL(err, UOPC_E_INVALID, "op '%s': option build is NULL", o->op);
  if (o->n_outputs < 1 || o->n_inputs < 0 || o->n_outputs + o->n_inputs > GUARD_MAX_ARGS)
    return UOPC_FAIL(err, UOPC_E_INVALID, "op '%s': %d outputs and %d inputs; at least one output and at most %d"
                     " in all", o->op, o->n_outputs, o->n_inputs, GUARD_MAX_ARGS);
  for (int k = 0; k < o->n_outputs; k++) snprintf(c->names[k], SYM_NAME_MAX, "out%d", k);
  for (int k = 0; k < o->n_inputs; k++) {
    if (!identifier(o->inputs[k], SYM_NAME_MAX - 1))
      return UOPC_FAIL(err, UOPC_E_INVALID, "op '%s': input %d needs a C identifier as its name", o->op, k);
    for (int j = 0; j < o->n_outputs + k; j++)
      if (strcmp(c->names[j], o->inputs[k]) == 0)
        return UOPC_FAIL(err, UOPC_E_INVALID, "op '%s': the name '%s' is used twice", o->op, o->inputs[k]);
    strcpy(c->names[o->n_outputs + k], o->inputs[k]);
    int rc = parse_axes(c, k, err);
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
  for (int k = 0; k < 3; k++) c->slots[k] = uopc_counter_slot(names[k]);
  c->last.chosen = -1;
  c->trace = uopc_debug_level() >= 3;
  return UOPC_OK;
}

static void variant_free(vcache_variant *v) {
  if (!v) return;
  exec_free(v->exec);
  guard_plan_fini(&v->plan);
  guard_set_fini(&v->guards);
  ir_graph_free(v->graph);
  free(v);
}

void vcache_fini(vcache *c) {
  for (int k = 0; k < c->count; k++) variant_free(c->variants[k]);
  c->count = c->n_general = 0;
}

/* ---- Building a variant. */

static void count_checks(vcache *c, int64_t checks, int64_t failures) {
  c->stats.guard_checks += checks;
  c->stats.guard_failures += failures;
  uopc_counter_bump(c->slots[SLOT_CHECKS], checks);
  if (failures) uopc_counter_bump(c->slots[SLOT_FAILURES], failures);
}

/* The inputs of v's spec declared in its graph: extents dims or constants;
 * a strided input's strides dims, element 0 at the pointer passed. */
static int declare_inputs(const vcache *c, vcache_variant *v, const ir_node **inputs) {
  const vcache_spec *spec = &v->spec;
  sym_arena *a = ir_graph_arena(v->graph);
  for (int i = 0; i < spec->n_inputs; i++) {
    const vcache_arg *arg = &spec->args[spec->n_outputs + i];
    const sym_expr *shape[UOPC_MAX_RANK], *strides[UOPC_MAX_RANK];
    for (int k = 0; k < arg->rank; k++) {
      const vcache_extent *e = &arg->shape[k];
      shape[k] = e->dim >= 0 ? sym_expr_dim(a, &spec->dims[e->dim]) : sym_expr_const(a, e->value);
      if (arg->strided) strides[k] = sym_expr_dim(a, &spec->dims[arg->strides[k]]);
    }
    const char *name = c->names[spec->n_outputs + i];
    inputs[i] = arg->strided ? ir_input_view(v->graph, name, arg->dtype, arg->rank, shape, strides, NULL)
                             : ir_input(v->graph, name, arg->dtype, arg->rank, shape);
  }
  return ir_graph_error(v->graph)->code;
}

/* The graph of v's spec: the inputs, then the op's builder. */
static int build_graph(vcache *c, vcache_variant *v, const ir_node **outputs, uopc_error *err) {
  const ir_node *inputs[GUARD_MAX_ARGS] = {0};
  uopc_error inner = {0};
  int rc = ir_graph_new(&v->graph, err);
  if (rc) return rc;
  if (declare_inputs(c, v, inputs)) inner = *ir_graph_error(v->graph);
  else if ((rc = c->opts.build(c->opts.ctx, v->graph, inputs, &v->spec, outputs, &inner)) == UOPC_OK)
    inner = *ir_graph_error(v->graph);
  if (!inner.code && rc) inner.code = rc;
  for (int k = 0; k < c->opts.n_outputs && !inner.code; k++)
    if (!outputs[k]) return UOPC_FAIL(err, UOPC_E_INVALID, "op '%s': the builder gave no output %d", c->opts.op, k);
  if (!inner.code) return UOPC_OK;
  return UOPC_FAIL(err, inner.code, "op '%s': the graph for this call: %s", c->opts.op, inner.message);
}

/* Before compiling: a guard that fails on the call the variant is built for
 * is an output the graph cannot write (a wrong dtype or shape, a strided or
 * overlapping output), or a bug (an input guard). */
static int refuse(const vcache *c, const vcache_variant *v, const guard_call *call, uopc_error *err) {
  int failed;
  guard_reason why;
  int rc = guard_set_check(&v->guards, call, &failed, &why, err);
  if (rc || failed < 0) return rc;
  const guard *g = &v->guards.guards[failed];
  int output = g->arg < v->spec.n_outputs;
  int code = !output ? UOPC_E_GUARD : g->kind == GUARD_DTYPE ? UOPC_E_DTYPE : g->kind == GUARD_CONTIGUOUS
             ? UOPC_E_LAYOUT : g->kind == GUARD_DISJOINT ? UOPC_E_ALIAS : UOPC_E_BOUNDS;
  return UOPC_FAIL(err, code, "op '%s': %s '%s' cannot serve this call: guard '%s' failed: %s", c->opts.op,
                   output ? "output" : "input", c->names[g->arg], g->what, why.text);
}

/* Every dim the program takes is read from the call. */
static int check_dims(const vcache *c, const vcache_variant *v, uopc_error *err) {
  const lower_program *p = exec_lowered(v->exec);
  for (int d = 0; d < p->n_dims; d++) {
    int found = 0;
    for (int k = 0; k < v->spec.n_dims && !found; k++) found = strcmp(v->spec.dims[k].name, p->dims[d].name) == 0;
    if (!found)
      return UOPC_FAIL(err, UOPC_E_UNBOUND, "op '%s': the graph's dim '%s' is no extent or stride of an input, so"
                       " no call can bind it", c->opts.op, p->dims[d].name);
  }
  return UOPC_OK;
}

static int check_new_key(const vcache *c, const spec_key *key, uopc_error *err) {
  for (int k = 0; k < c->count; k++)
    if (spec_key_equal(&c->variants[k]->key, key))
      return UOPC_FAIL(err, UOPC_E_GUARD, "op '%s': a new variant has the key of %s, whose guards failed on this"
                       " call (a bug); not built", c->opts.op, c->variants[k]->entry);
  return UOPC_OK;
}

static int make_variant(vcache *c, vcache_variant *v, const guard_call *call, int general, uopc_error *err) {
  const ir_node *outputs[GUARD_MAX_ARGS] = {0};
  int rc = vcache_spec_of(c, call, general, &v->spec, err);
  if (!rc) rc = build_graph(c, v, outputs, err);
  if (!rc) rc = vcache_spec_guards(c, &v->spec, outputs, &v->guards, err);
  if (!rc) rc = refuse(c, v, call, err);
  if (!rc) rc = guard_plan_compile(&v->plan, &v->guards, err);
  if (!rc) rc = vcache_spec_key(c, &v->spec, v->graph, outputs, &v->key, err);
  if (!rc) rc = check_new_key(c, &v->key, err);
  if (rc) return rc;
  vcache_spec_entry(c, &v->spec, &v->key, v->entry, sizeof v->entry);
  rc = exec_new(&v->exec, v->graph, outputs, c->opts.n_outputs, v->entry, &c->opts.program, err);
  return rc ? rc : check_dims(c, v, err);
}

static int build(vcache *c, const guard_call *call, int general, vcache_variant **out, uopc_error *err) {
  vcache_variant *v = calloc(1, sizeof *v);
  if (!v) return UOPC_FAIL(err, UOPC_E_NOMEM, "op '%s': no memory for a variant", c->opts.op);
  int rc = make_variant(c, v, call, general, err);
  if (rc) { variant_free(v); return rc; }
  c->variants[c->count++] = v;
  c->n_general += general;
  c->stats.variants_built++;
  uopc_counter_bump(c->slots[SLOT_BUILT], 1);
  *out = v;
  return UOPC_OK;
}

/* ---- Calls. */

/* "x: f32 (7, 3); y: f32 (7)" for messages. */
static void call_text(const vcache *c, const guard_call *call, char *buf, size_t size) {
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

/* The first variant whose guards hold, or -1; checks and failures counted. */
static int select_variant(vcache *c, const guard_call *call) {
  int k = 0;
  while (k < c->count && !guard_plan_holds(&c->variants[k]->plan, call)) k++;
  int found = k < c->count;
  count_checks(c, k + found, k);
  return found ? k : -1;
}

/* No variant held: a new one, specialised while the limit allows (one place
 * is kept for a general variant), past it as the policy says. */
static int miss(vcache *c, const guard_call *call, vcache_variant **out, uopc_error *err) {
  const vcache_policy *p = &c->opts.policy;
  vcache_record *r = &c->last;
  int general = c->count - c->n_general + 1 >= p->max_variants;
  if (general) {
    char text[256];
    r->limit_hit = 1;
    c->stats.limit_hits++;
    call_text(c, call, text, sizeof text);
    if (p->on_limit == VCACHE_LIMIT_FAIL || c->count >= p->max_variants)
      return UOPC_FAIL(err, UOPC_E_LIMIT, "op '%s': the call (%s) needs a new variant, but the variant limit (%d,"
                       " general ones included) is reached%s", c->opts.op, text, p->max_variants,
                       p->on_limit == VCACHE_LIMIT_FAIL ? "" : " and no general variant serves it");
  }
  int rc = build(c, call, general, out, err);
  r->built = rc == UOPC_OK;
  return rc;
}

/* A variant from miss runs only after its own guards held (one check). */
static int verify(vcache *c, const vcache_variant *v, const guard_call *call, uopc_error *err) {
  int holds = guard_plan_holds(&v->plan, call), failed = -1;
  guard_reason why = {"?"};
  count_checks(c, 1, !holds);
  if (holds) return UOPC_OK;
  guard_set_check(&v->guards, call, &failed, &why, NULL);
  return UOPC_FAIL(err, UOPC_E_GUARD, "op '%s': variant %s was built for this call, but its guard '%s' fails (%s);"
                   " not run", c->opts.op, v->entry, failed >= 0 ? v->guards.guards[failed].what : "?", why.text);
}

/* The call's tensors as one argument list (outputs, then inputs). */
static int gather(const vcache *c, uopc_tensor *const *outputs, int n_outputs, const uopc_tensor *const *inputs,
                  int n_inputs, const uopc_tensor **args, uopc_error *err) {
  if (n_outputs != c->opts.n_outputs || n_inputs != c->opts.n_inputs || (n_outputs && !outputs) ||
      (n_inputs && !inputs))
    return UOPC_FAIL(err, UOPC_E_INVALID, "op '%s' takes %d outputs and %d inputs, not %d and %d", c->opts.op,
                     c->opts.n_outputs, c->opts.n_inputs, n_outputs, n_inputs);
  for (int a = 0; a < n_outputs + n_inputs; a++) {
    args[a] = a < n_outputs ? outputs[a] : inputs[a - n_outputs];
    if (!args[a] || !args[a]->storage)
      return UOPC_FAIL(err, UOPC_E_INVALID, "op '%s': %s '%s' is NULL or released", c->opts.op,
                       a < n_outputs ? "output" : "input", c->names[a]);
  }
  return UOPC_OK;
}

static void trace_decision(const vcache *c) {
  char text[VCACHE_EXPLAIN_MAX];
  if (vcache_explain(c, text, sizeof text, NULL) != UOPC_OK) return;
  size_t n = strlen(text);
  while (n > 0 && text[n - 1] == '\n') text[--n] = '\0';
  uopc_debug(3, "%s", text);
}

static int choose(vcache *c, const uopc_tensor **args, vcache_variant **out, uopc_error *err) {
  vcache_record *r = &c->last;
  int rc = guard_call_init(&r->call, c->opts.n_outputs + c->opts.n_inputs, args, err);
  if (rc) return rc;
  r->have_call = 1;
  int k = select_variant(c, &r->call);
  r->n_rejected = k >= 0 ? k : c->count;
  vcache_variant *v = k >= 0 ? c->variants[k] : NULL;
  if (!v) {
    rc = miss(c, &r->call, &v, err);
    if (!rc) rc = verify(c, v, &r->call, err);
    if (rc) return rc;
  }
  r->chosen = k >= 0 ? k : c->count - 1;
  *out = v;
  return UOPC_OK;
}

int vcache_choose(vcache *c, uopc_tensor *const *outputs, int n_outputs, const uopc_tensor *const *inputs,
                  int n_inputs, vcache_variant **out, uopc_error *err) {
  vcache_record *r = &c->last;
  const uopc_tensor *args[GUARD_MAX_ARGS];
  r->number++;
  r->chosen = -1;
  r->n_rejected = r->built = r->limit_hit = r->have_call = 0;
  uopc_error_clear(&r->error);
  int rc = gather(c, outputs, n_outputs, inputs, n_inputs, args, &r->error);
  if (!rc) rc = choose(c, args, out, &r->error);
  if (rc && err) *err = r->error;
  if (c->trace) trace_decision(c);
  return rc;
}

int vcache_run(vcache *c, vcache_variant *v, uopc_tensor *const *outputs, const uopc_tensor *const *inputs,
               uopc_error *err) {
  int rc = exec_run(v->exec, outputs, c->opts.n_outputs, inputs, c->opts.n_inputs, err);
  if (rc) return rc;
  v->calls++;
  c->stats.calls++;
  return UOPC_OK;
}

int vcache_call(vcache *c, uopc_tensor *const *outputs, int n_outputs, const uopc_tensor *const *inputs,
                int n_inputs, uopc_error *err) {
  vcache_variant *v;
  int rc = vcache_choose(c, outputs, n_outputs, inputs, n_inputs, &v, err);
  return rc ? rc : vcache_run(c, v, outputs, inputs, err);
}

/* ---- Explain. */

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
  if (r->have_call) call_text(c, &r->call, text, sizeof text);
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
           c->opts.policy.max_variants, v ? "built the general variant" : "refused");
  if (v) append(buf, size, &used, "  all %d guards of %s held\n", v->guards.count, v->entry);
  return UOPC_OK;
}
