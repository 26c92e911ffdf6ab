/* vcache_call.c: a call through the variant cache (lab 23.2, given code).
 * The per-call path, in one file so that it inlines: the call read once
 * (inline for one output and one input, both vectors), the index or the
 * scan over the specialised variants' plans, and the program called with
 * the dims read at their sites: no second check of what the guards have just
 * checked (exec_run's binder). A miss goes to the op's hook or the cache's
 * own, and the variant it gives runs only after its guards held on the
 * call: checked once more and counted (as lab 23.2's dispatcher counts
 * it), and, for a new variant, also by guard_set_check, which its plan must
 * agree with. Chapter 23.2, "One variant cache for every graph". */
#include <stdio.h>
#include <string.h>
#include "vcache_internal.h"

/* ---- The call. */

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

/* The call read into c->last.call. */
static inline __attribute__((always_inline)) int record(vcache *c, uopc_tensor *const *outputs, int n_outputs,
                                                        const uopc_tensor *const *inputs, int n_inputs,
                                                        uopc_error *err) {
  guard_call *call = &c->last.call;
  if (n_outputs == 1 && n_inputs == 1 && c->opts.n_outputs == 1 && c->opts.n_inputs == 1 && outputs && inputs &&
      outputs[0] && inputs[0] && outputs[0]->storage && inputs[0]->storage)
    return guard_call_init_pair(call, outputs[0], inputs[0], err);
  /* inputs alone (tensorjit's calls) are already one argument list; a refused one goes to gather for its message */
  if (!n_outputs && !c->opts.n_outputs && n_inputs == c->opts.n_inputs && inputs &&
      guard_call_init(call, n_inputs, inputs, NULL) == UOPC_OK)
    return UOPC_OK;
  const uopc_tensor *args[GUARD_MAX_ARGS];
  int rc = gather(c, outputs, n_outputs, inputs, n_inputs, args, err);
  return rc ? rc : guard_call_init(call, n_outputs + n_inputs, args, err);
}

/* ---- Selection among the specialised variants. */

static inline __attribute__((always_inline)) int scan(vcache *c, const guard_call *call) {
  int n = vcache_n_specialised(c), k = 0;
  while (k < n && !vcache_variant_holds(c->variants[k], call)) k++;
  vcache_count_checks(c, k + (k < n), k);   /* one count per call: no store per variant */
  return k < n ? k : -1;
}

int vcache_select(vcache *c, const guard_call *call, int *index, uopc_error *err) {
  (void)err;   /* a plan's check cannot fail */
  *index = scan(c, call);
  return UOPC_OK;
}

/* The only specialised variant that can hold for call, or -1 (vcache_build.c
 * says why). */
static inline __attribute__((always_inline)) int index_find(const vcache_index *ix, const guard_call *call) {
  if (!ix->entries || ix->site.arg >= call->count || ix->site.axis >= call->args[ix->site.arg].rank) return -1;
  int64_t m = GUARD_AT(call, ix->at);
  for (unsigned s = vcache_index_slot(m); ix->variant[s]; s = (s + 1) & VCACHE_INDEX_MASK)
    if (ix->value[s] == m) return ix->variant[s] - 1;
  return -1;
}

/* scan's answer and counts, through the index. */
static inline __attribute__((always_inline)) int index_scan(vcache *c, const guard_call *call) {
  int k = index_find(&c->index, call), found = k >= 0 && vcache_variant_holds(c->variants[k], call);
  int checked = found ? k + 1 : vcache_n_specialised(c);
  vcache_count_checks(c, checked, checked - found);
  return found ? k : -1;
}

int vcache_index_select(vcache *c, const guard_call *call, int *index, uopc_error *err) {
  if (!c->index.usable)
    return UOPC_FAIL(err, UOPC_E_UNSUPPORTED, "op '%s': the specialised variants pin no common site to values of"
                     " their own", c->opts.op);
  *index = index_scan(c, call);
  return UOPC_OK;
}

/* ---- A miss. */

/* The variant from a miss runs only after its guards held on the call. */
static int verify(vcache *c, const vcache_variant *v, const guard_call *call, uopc_error *err) {
  int holds = vcache_variant_holds(v, call), failed = -1;
  guard_reason why = {"?"};
  int rc = c->last.built || !holds ? guard_set_check(&v->guards, call, &failed, &why, err) : UOPC_OK;
  if (rc) return rc;
  vcache_count_checks(c, 1, !holds);
  if (holds && failed < 0) return UOPC_OK;
  if (holds)
    return UOPC_FAIL(err, UOPC_E_GUARD, "op '%s': variant %s: its plan holds on this call, but guard_set_check"
                     " finds guard '%s' failing (%s); not run", c->opts.op, v->entry, v->guards.guards[failed].what,
                     why.text);
  if (failed < 0)
    return UOPC_FAIL(err, UOPC_E_GUARD, "op '%s': variant %s: its plan fails on this call, but guard_set_check"
                     " finds every guard holding; not run", c->opts.op, v->entry);
  return UOPC_FAIL(err, UOPC_E_GUARD, "op '%s': variant %s was chosen for this call, but its guard '%s' fails (%s);"
                   " not run", c->opts.op, v->entry, v->guards.guards[failed].what, why.text);
}

static int miss(vcache *c, const guard_call *call, vcache_variant **out, uopc_error *err) {
  const vcache_hooks *h = &c->opts.hooks;
  vcache_variant *v = NULL;
  int rc = h->on_miss ? h->on_miss(c->opts.ctx, c, call, &v, err) : vcache_on_miss(c, call, &v, err);
  if (!rc && !v) rc = UOPC_FAIL(err, UOPC_E_INVALID, "op '%s': the miss gave no variant", c->opts.op);
  if (!rc) rc = verify(c, v, call, err);
  if (rc) return rc;
  int k = 0;
  while (k < c->count && c->variants[k] != v) k++;
  if (k == c->count) return UOPC_FAIL(err, UOPC_E_INVALID, "op '%s': the miss gave a variant of no cache", c->opts.op);
  c->last.chosen = k;
  *out = v;
  return UOPC_OK;
}

/* ---- Choosing and running. */

static inline __attribute__((always_inline)) int decide(vcache *c, const guard_call *call, vcache_variant **out,
                                                        uopc_error *err) {
  const vcache_hooks *h = &c->opts.hooks;
  int k = -1, n = vcache_n_specialised(c), rc = UOPC_OK;
  if (c->index.usable) k = index_scan(c, call);
  else if (!h->select) k = scan(c, call);
  else if ((rc = h->select(c->opts.ctx, c, call, &k, err)) == UOPC_OK && (k < -1 || k >= n))
    rc = UOPC_FAIL(err, UOPC_E_INVALID, "op '%s': selection gave variant %d of %d", c->opts.op, k, n);
  if (rc) return rc;
  c->last.n_rejected = k >= 0 ? k : n;   /* the first that holds wins */
  if (k < 0) return miss(c, call, out, err);
  c->last.chosen = k;
  *out = c->variants[k];
  return UOPC_OK;
}

/* UOPC_DEBUG=3: the decision just made, in explain's words. */
static void trace_decision(const vcache *c) {
  char text[VCACHE_EXPLAIN_MAX];
  const vcache_hooks *h = &c->opts.hooks;
  int rc = h->explain ? h->explain(c->opts.ctx, c, text, sizeof text, NULL) : vcache_explain(c, text, sizeof text, NULL);
  if (rc != UOPC_OK) return;
  size_t n = strlen(text);
  while (n > 0 && text[n - 1] == '\n') text[--n] = '\0';
  uopc_debug(3, "%s", text);
}

/* A new record, the call read, the variant chosen (or built); errors are
 * kept in the record for explain. */
static inline __attribute__((always_inline)) int choose(vcache *c, uopc_tensor *const *outputs, int n_outputs,
                                                        const uopc_tensor *const *inputs, int n_inputs,
                                                        vcache_variant **out, uopc_error *err) {
  vcache_record *r = &c->last;
  r->number++;
  r->chosen = -1;
  r->n_rejected = r->built = r->limit_hit = r->have_call = 0;
  r->error.code = UOPC_OK;
  r->n_outputs = 0;
  int rc = record(c, outputs, n_outputs, inputs, n_inputs, &r->error);
  for (int k = 0; !rc && k < n_outputs && k < GUARD_MAX_ARGS; k++) r->outputs[r->n_outputs++] = outputs[k];
  if (!rc) {
    r->have_call = 1;
    rc = decide(c, &r->call, out, &r->error);
  }
  if (rc && err) *err = r->error;
  if (c->trace) trace_decision(c);
  return rc;
}

/* A graph op's program: element 0 of each argument, each dim at its site. */
static inline int run_graph(vcache *c, vcache_variant *v, const guard_call *call, uopc_error *err) {
  void *buffers[GUARD_MAX_ARGS];
  int64_t dims[UOPC_SIGNATURE_MAX];
  for (int a = 0; a < c->opts.n_outputs + c->opts.n_inputs; a++) buffers[a] = (void *)call->data[a];
  for (int d = 0; d < v->n_dims; d++) dims[d] = GUARD_AT(call, v->dim_at[d]);
  return exec_run_checked(v->exec, buffers, dims, err);
}

static inline __attribute__((always_inline)) int run(vcache *c, vcache_variant *v, const guard_call *call,
                                                     uopc_error *err) {
  const vcache_hooks *h = &c->opts.hooks;
  int rc = h->run ? h->run(c->opts.ctx, v, call, err) : run_graph(c, v, call, err);
  if (rc) return rc;
  for (int k = 0; k < c->last.n_outputs; k++) uopc_tensor_bump_version(c->last.outputs[k]);   /* written */
  v->calls++;
  c->stats.calls++;
  return UOPC_OK;
}

int vcache_choose(vcache *c, uopc_tensor *const *outputs, int n_outputs, const uopc_tensor *const *inputs,
                  int n_inputs, vcache_variant **out, uopc_error *err) {
  return choose(c, outputs, n_outputs, inputs, n_inputs, out, err);
}

int vcache_run(vcache *c, vcache_variant *v, uopc_error *err) {
  const vcache_record *r = &c->last;
  if (!v || r->chosen < 0 || c->variants[r->chosen] != v)
    return UOPC_FAIL(err, UOPC_E_INVALID, "op '%s': vcache_run runs the variant vcache_choose gave for the call it"
                     " recorded, and %s", c->opts.op, r->chosen < 0 ? "that call chose none" : "this is another");
  return run(c, v, &c->last.call, err);
}

int vcache_call(vcache *c, uopc_tensor *const *outputs, int n_outputs, const uopc_tensor *const *inputs,
                int n_inputs, uopc_error *err) {
  vcache_variant *v;
  int rc = choose(c, outputs, n_outputs, inputs, n_inputs, &v, err);
  return rc ? rc : run(c, v, &c->last.call, err);
}
