/* tj.c: tensorjit's entry points (section 23.7, given code): options, the
 * signature a first call fixes, a call through the variant cache, and the
 * eager fallback past the limit. The artifacts are tj_artifact.c's, the
 * explanations tj_explain.c's, the arguments' check tj_args.c's (each file
 * calls only the ones below it: tj_internal.h). Chapter 23.7, "The contract". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tj_internal.h"

/* ---- Options. */

static int identifier(const char *s, size_t max) {
  if (!s || !((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_') || strlen(s) > max) return 0;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_')) return 0;
  return 1;
}

static int resolve(tj_function *f, const tj_options *o, uopc_error *err) {
  f->opts = o ? *o : (tj_options){0};
  tj_options *p = &f->opts;
  const char *name = p->name ? p->name : "f";
  if (!identifier(name, 24)) return UOPC_FAIL(err, UOPC_E_INVALID, "tj_compile: option name must be a C identifier of 1 to 24 characters");
  snprintf(f->name, sizeof f->name, "tj_%s", name);
  snprintf(f->label, sizeof f->label, "%s", name);
  if (!p->n_outputs) p->n_outputs = 1;
  if (!p->max_variants) p->max_variants = TJ_DEFAULT_MAX_VARIANTS;
  if (!p->dynamic) p->dynamic = TJ_ON;
  if (!p->specialize_01) p->specialize_01 = TJ_ON;
  if (p->n_outputs < 1 || p->n_outputs > TJ_MAX_OUTPUTS)
    return UOPC_FAIL(err, UOPC_E_INVALID, "tj_compile: n_outputs = %d outside [1, %d]", p->n_outputs, TJ_MAX_OUTPUTS);
  if (p->max_variants < 1 || p->max_variants > TJ_MAX_VARIANTS)
    return UOPC_FAIL(err, UOPC_E_INVALID, "tj_compile: max_variants = %d outside [1, %d]", p->max_variants, TJ_MAX_VARIANTS);
  if ((p->dynamic != TJ_ON && p->dynamic != TJ_OFF) || (p->specialize_01 != TJ_ON && p->specialize_01 != TJ_OFF))
    return UOPC_FAIL(err, UOPC_E_INVALID, "tj_compile: dynamic and specialize_01 are TJ_DEFAULT, TJ_ON or TJ_OFF");
  if (p->on_limit != TJ_LIMIT_ERROR && p->on_limit != TJ_LIMIT_EAGER && p->on_limit != TJ_LIMIT_UNKEPT)
    return UOPC_FAIL(err, UOPC_E_INVALID, "tj_compile: on_limit = %d is not a tj_on_limit", (int)p->on_limit);
  if (p->program) f->program = *p->program;
  p->program = &f->program;
  return UOPC_OK;
}

int tj_compile(tj_function **out, tj_model model, void *user, const tj_options *opts, uopc_error *err) {
  if (!out || !model) return UOPC_FAIL(err, UOPC_E_INVALID, "tj_compile: needs a model and a place for the function");
  tj_function *f = calloc(1, sizeof *f);
  if (!f) return UOPC_FAIL(err, UOPC_E_NOMEM, "tj_compile: out of memory");
  f->model = model, f->user = user;
  int rc = resolve(f, opts, err);
  if (rc) { free(f); return rc; }
  /* every counter in the log from the start, at zero */
  uopc_counter_slot(TJ_C_BUILT);
  f->hits = uopc_counter_slot(TJ_C_HITS);
  uopc_counter_slot(TJ_C_GUARD_FAILURES);
  f->eager = uopc_counter_slot(TJ_C_EAGER);
  f->limit = uopc_counter_slot(TJ_C_LIMIT);
  f->unkept = uopc_counter_slot(TJ_C_UNKEPT);
  *out = f;
  return UOPC_OK;
}

void tj_free(tj_function *f) {
  if (!f) return;
  if (f->fixed) vcache_fini(&f->cache);
  for (int k = 0; k < f->n_arts; k++) free(f->arts[k].guards);
  free(f);
}

tj_counts tj_stats(const tj_function *f) {
  tj_counts s = f ? f->counts : (tj_counts){0};
  if (f) s.artifacts = f->n_arts;
  return s;
}

/* ---- The signature. */

static int declare_signature(tj_function *f, const tj_arg *args, int n_args, uopc_error *err) {
  const char *const *names = f->opts.arg_names;
  f->n_args = n_args;
  for (int k = 0; k < n_args; k++) {
    if (names && !identifier(names[k], SYM_NAME_MAX - 8))
      return UOPC_FAIL(err, UOPC_E_INVALID, "tensorjit '%s': arg_names[%d] must be a C identifier of at most %d"
                       " characters", f->label, k, SYM_NAME_MAX - 8);
    if (names) snprintf(f->arg_names[k], sizeof f->arg_names[k], "%s", names[k]);
    else snprintf(f->arg_names[k], sizeof f->arg_names[k], "a%d", k);
    f->kinds[k] = args[k].kind;
    if (args[k].kind != TJ_TENSOR) continue;
    if (f->n_tensors == TJ_MAX_TENSORS)
      return UOPC_FAIL(err, UOPC_E_LIMIT, "tensorjit '%s': more than %d tensor arguments (the limit)", f->label,
                       TJ_MAX_TENSORS);
    f->dtypes[k] = args[k].tensor->dtype;
    f->ranks[k] = args[k].tensor->rank;
    f->tensor_arg[f->n_tensors++] = k;
  }
  if (!f->n_tensors)
    return UOPC_FAIL(err, UOPC_E_INVALID, "tensorjit '%s': a call needs at least one tensor argument", f->label);
  vcache_options o;
  tj_cache_options(f, &o);
  return vcache_init(&f->cache, &o, err);
}

int tj_fix_signature(tj_function *f, const tj_arg *args, int n_args, uopc_error *err) {
  int rc = declare_signature(f, args, n_args, err);
  if (rc) {   /* a refused first call fixes nothing */
    memset(&f->cache, 0, sizeof f->cache);
    f->n_tensors = f->n_args = 0;
    return rc;
  }
  f->fixed = 1;
  return UOPC_OK;
}

/* ---- The eager fallback: 23.4's eager mode on the same model. */

static int run_eager(tj_function *f, const tj_arg *args, uopc_tensor *outs, uopc_error *err) {
  tp_ctx *c = NULL;
  uopc_tensor packed[TJ_MAX_ARGS];
  tj_in in[TJ_MAX_ARGS];
  tp_tensor *o[TJ_MAX_OUTPUTS] = {0};
  memset(packed, 0, sizeof packed);
  memset(in, 0, sizeof in);
  int rc = tp_ctx_new_eager(&c, err);
  for (int k = 0; !rc && k < f->n_args; k++) {
    in[k].i = args[k].i, in[k].d = args[k].d;
    if (args[k].kind != TJ_TENSOR) continue;
    const uopc_tensor *t = args[k].tensor;
    if (!uopc_tensor_is_contiguous(t)) {   /* eager inputs are read as packed rows */
      rc = uopc_tensor_empty(&packed[k], t->dtype, t->rank, t->shape, err);
      if (!rc) rc = uopc_tensor_copy(&packed[k], t, err);
      t = &packed[k];
    }
    if (!rc && !(in[k].t = tp_wrap(c, t))) rc = UOPC_FAIL(err, tp_status(c), "%s", tp_error(c)->message);
  }
  if (!rc) f->model(c, in, o, f->user);
  if (!rc && tp_status(c)) rc = UOPC_FAIL(err, tp_status(c), "%s", tp_error(c)->message);
  for (int k = 0; !rc && k < f->opts.n_outputs; k++)
    if (!tp_value(o[k])) rc = UOPC_FAIL(err, UOPC_E_INVALID, "tensorjit '%s': the model left output %d unset", f->label, k);
  for (int k = 0; !rc && k < f->opts.n_outputs; k++) uopc_tensor_retain(&outs[k], tp_value(o[k]));
  for (int k = 0; k < f->n_args; k++) uopc_tensor_release(&packed[k]);
  tp_ctx_free(c);
  if (!rc) uopc_counter_bump(f->eager, 1), f->counts.eager_fallbacks++;
  return rc;
}

/* ---- Calls. */

int tj_call(tj_function *f, const tj_arg *args, int n_args, uopc_tensor *outs, uopc_error *err) {
  if (!f || !outs) return UOPC_FAIL(err, UOPC_E_INVALID, "tj_call: NULL function or outputs");
  int rc = tj_check_args(f, args, n_args, err);
  if (!rc && !f->fixed) rc = tj_fix_signature(f, args, n_args, err);
  if (rc) return rc;
  f->cur.args = args;
  f->cur.eager = f->cur.unkept = 0;
  for (int k = 0; k < f->n_tensors; k++) f->cur.tensors[k] = args[f->tensor_arg[k]].tensor;
  vcache_variant *v = NULL;
  rc = vcache_choose(&f->cache, NULL, 0, f->cur.tensors, f->n_tensors, &v, err);
  if (!rc && !f->cache.last.built) uopc_counter_bump(f->hits, 1), f->counts.artifact_hits++;
  if (!rc) rc = vcache_run(&f->cache, v, err);
  else if (f->cur.eager) rc = run_eager(f, args, f->cur.outs, err);
  else if (f->cur.unkept) rc = tj_run_unkept(f, &f->cache.last.call, err);
  if (rc) return rc;
  f->counts.calls++;
  memcpy(outs, f->cur.outs, (size_t)f->opts.n_outputs * sizeof *outs);   /* handed over, not retained twice */
  memset(f->cur.outs, 0, (size_t)f->opts.n_outputs * sizeof *outs);
  f->cur.args = NULL;
  return UOPC_OK;
}
