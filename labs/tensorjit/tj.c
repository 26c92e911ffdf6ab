/* tj.c: tensorjit's entry points (section 23.7, given code): options, the
 * signature a first call fixes, the group of artifacts a call's structure
 * selects (made on its first call), a call through that group's variant
 * cache, and the eager fallback past the limit. The artifacts are tj_artifact.c's, the
 * explanations tj_explain.c's, the arguments' check tj_args.c's (each file
 * calls only the ones below it: tj_internal.h). Chapter 23.7, "The contract". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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
  if (!p->backend) p->backend = TJ_BACKEND_C;
  if (p->backend != TJ_BACKEND_C && p->backend != TJ_BACKEND_CUDA)
    return UOPC_FAIL(err, UOPC_E_INVALID, "tj_compile: backend = %d is not a tj_backend", (int)p->backend);
  char why[UOPC_ERROR_MESSAGE_MAX];
  if (p->backend == TJ_BACKEND_CUDA && !tj_is_available(TJ_BACKEND_CUDA, why, sizeof why))   /* refused, not run on C */
    return UOPC_FAIL(err, UOPC_E_UNSUPPORTED, "tj_compile: backend TJ_BACKEND_CUDA: %.1900s", why);
  /* tensorjit compiles where its artifacts run, so by default for this CPU's vector width: the
   * CPU joins each entry's key, and -ffp-contract=off keeps every result the portable build's
   * (under valgrind the runtime builds for plain x86-64: uopc_under_valgrind) */
  if (p->program) f->program = *p->program;
  else f->program.march_native = 1;
  p->program = &f->program;
  return UOPC_OK;
}

/* The bytes symbolic ints' carriers view (tj_flat_tensor): address space only, PROT_NONE, so
 * no tensor's bytes lie inside a carrier's (the cache's overlap facts stay the call's tensors')
 * and a read of one faults. */
static int reserve_carrier(tj_function *f, uopc_error *err) {
  size_t bytes = (size_t)TJ_MAX_EXTENT + 1;
  void *map = mmap(NULL, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (map == MAP_FAILED)
    return UOPC_FAIL(err, UOPC_E_NOMEM, "tj_compile: no address space for symbolic ints' carriers (%zu bytes)", bytes);
  int64_t shape = TJ_MAX_EXTENT + 1, stride = 1;
  int rc = uopc_tensor_wrap(&f->carrier, map, UOPC_BOOL, 1, &shape, &stride, err);
  if (rc) munmap(map, bytes);
  else f->carrier_map = map, f->carrier_bytes = bytes;
  return rc;
}

static void free_function(tj_function *f) {
  uopc_tensor_release(&f->carrier);
  if (f->carrier_map) munmap(f->carrier_map, f->carrier_bytes);
  free(f);
}

int tj_compile(tj_function **out, tj_model model, void *user, const tj_options *opts, uopc_error *err) {
  if (!out || !model) return UOPC_FAIL(err, UOPC_E_INVALID, "tj_compile: needs a model and a place for the function");
  tj_function *f = calloc(1, sizeof *f);
  if (!f) return UOPC_FAIL(err, UOPC_E_NOMEM, "tj_compile: out of memory");
  f->model = model, f->user = user;
  int rc = resolve(f, opts, err);
  if (!rc) rc = reserve_carrier(f, err);
  if (rc) { free_function(f); return rc; }
  /* every counter in the log from the start, at zero */
  uopc_counter_slot(TJ_C_BUILT);
  f->hits = uopc_counter_slot(TJ_C_HITS);
  f->failures = uopc_counter_slot(TJ_C_GUARD_FAILURES);
  f->eager = uopc_counter_slot(TJ_C_EAGER);
  f->limit = uopc_counter_slot(TJ_C_LIMIT);
  f->unkept = uopc_counter_slot(TJ_C_UNKEPT);
  *out = f;
  return UOPC_OK;
}

void tj_free(tj_function *f) {
  if (!f) return;
  if (f->train_release) f->train_release(f->train);   /* the backward function (tj_train.c) */
  for (int k = 0; k < TJ_MAX_OUTPUTS; k++) uopc_tensor_release(&f->spare[k]);
  for (int k = 0; k < f->n_groups; k++) {
    tj_group *g = f->groups[k];
    for (int a = 0; a < g->n_arts; a++) free(g->arts[a].guards), tj_callouts_free(g->arts[a].callouts);
    vcache_fini(&g->cache);
    for (int a = 0; a < g->n_arts; a++) ir_graph_free(g->arts[a].passed);   /* after the execs on them */
    tp_region_cache_free(g->regions);
    free(g);
  }
  free_function(f);
}

tj_counts tj_stats(const tj_function *f) {
  tj_counts s = f ? f->counts : (tj_counts){0};
  for (int k = 0; f && k < f->n_groups; k++) s.artifacts += f->groups[k]->n_arts;
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
    f->dtypes[k] = args[k].tensor->dtype;
    f->ranks[k] = args[k].tensor->rank;
  }
  return UOPC_OK;
}

int tj_fix_signature(tj_function *f, const tj_arg *args, int n_args, uopc_error *err) {
  int rc = declare_signature(f, args, n_args, err);
  if (rc) {   /* a refused first call fixes nothing */
    f->n_args = 0;
    return rc;
  }
  f->fixed = 1;
  f->plain = 1;
  for (int k = 0; k < n_args; k++) f->plain &= args[k].kind != TJ_LIST && args[k].kind != TJ_RECORD;
  return UOPC_OK;
}

/* ---- Structures: a group of artifacts each. */

/* The cache's name of tensor node k: a top-level argument's own; a member's
 * path as an identifier ("params_2_bias"), or "leaf<k>" when that is taken
 * or too long. */
static void input_name(tj_group *g, int k, const tj_node *n) {
  char *out = g->inputs[k];
  size_t j = 0;
  for (const char *p = n->path; *p && j + 1 < SYM_NAME_MAX; p++)
    if (*p != ']') out[j++] = *p == '[' || *p == '.' ? '_' : *p;
  out[j] = '\0';
  /* a symbolic int's dim takes its name ("n"), so its carrier's buffer is "n_carrier" */
  if (n->kind == TJ_SYM_INT && j + 8 < SYM_NAME_MAX) strcpy(out + j, "_carrier");
  int taken = strlen(n->path) >= SYM_NAME_MAX - 8 || (n->kind == TJ_SYM_INT && j + 8 >= SYM_NAME_MAX);
  for (int i = 0; i < k; i++) taken |= !strcmp(g->inputs[i], out);
  if (taken && (n->depth || n->kind == TJ_SYM_INT)) snprintf(out, SYM_NAME_MAX, "leaf%d", k);
}

static int structure_limit(tj_function *f, const tj_flat *flat, uopc_error *err) {
  char why[1536] = "", text[512];
  const uopc_tensor *tensors[TJ_MAX_TENSORS];
  guard_call call;
  for (int k = 0; k < flat->n_tensors; k++) tensors[k] = tj_flat_tensor(flat, k);
  int rc = guard_call_init(&call, flat->n_tensors, tensors, err);
  if (rc) return rc;
  tj_call_text(flat, &call, text, sizeof text);
  for (int k = 0; k < f->n_groups; k++) {
    size_t used = strlen(why);
    if (used + 16 >= sizeof why) break;
    snprintf(why + used, sizeof why - used, "; structure %d: ", k + 1);
    tj_structure_reject(f->groups[k], flat, why + strlen(why), sizeof why - strlen(why));
  }
  uopc_counter_bump(f->limit, 1);
  f->counts.limit_hits++;
  f->cur.eager = f->opts.on_limit == TJ_LIMIT_EAGER;
  return UOPC_FAIL(err, UOPC_E_LIMIT, "tensorjit '%s': structure limit reached (TJ_MAX_STRUCTURES = %d): no kept"
                   " structure is this call's (%s)%s", f->label, TJ_MAX_STRUCTURES, text, why);
}

int tj_group_new(tj_function *f, const tj_flat *flat, tj_group **out, uopc_error *err) {
  if (!flat->n_tensors)
    return UOPC_FAIL(err, UOPC_E_INVALID, "tensorjit '%s': a call needs at least one tensor argument", f->label);
  if (f->n_groups == TJ_MAX_STRUCTURES) return structure_limit(f, flat, err);
  tj_group *g = calloc(1, sizeof *g);
  if (!g) return UOPC_FAIL(err, UOPC_E_NOMEM, "tensorjit '%s': out of memory", f->label);
  g->f = f, g->number = f->n_groups + 1;
  g->n_nodes = flat->n_nodes, g->n_tensors = flat->n_tensors, g->containers = flat->containers;
  memcpy(g->nodes, flat->nodes, sizeof g->nodes);
  memcpy(g->tensor_node, flat->tensor_node, sizeof g->tensor_node);
  for (int k = 0; k < g->n_tensors; k++) input_name(g, k, &g->nodes[g->tensor_node[k]]);
  for (int k = 0; k < g->n_nodes; k++) g->n_scalars += g->nodes[k].kind == TJ_INT || g->nodes[k].kind == TJ_DOUBLE;
  if (g->number == 1) snprintf(g->op, sizeof g->op, "%s", f->name);
  else snprintf(g->op, sizeof g->op, "%.24s_s%d", f->name, g->number);   /* entries stay apart by structure */
  vcache_options o;
  tj_cache_options(g, &o);
  int rc = vcache_init(&g->cache, &o, err);
  if (rc) { free(g); return rc; }
  f->groups[f->n_groups++] = g;
  *out = g;
  return UOPC_OK;
}

/* ---- The eager fallback: 23.4's eager mode on the same model. */

static int run_eager(tj_function *f, const tj_flat *flat, uopc_tensor *outs, uopc_error *err) {
  tp_ctx *c = NULL;
  uopc_tensor packed[TJ_MAX_TENSORS];
  tp_tensor *leaves[TJ_MAX_TENSORS] = {0};
  tj_in in[TJ_MAX_ARGS], pool[TJ_MAX_NODES];
  tp_tensor *o[TJ_MAX_OUTPUTS] = {0};
  memset(packed, 0, sizeof packed);
  int rc = tp_ctx_new_eager(&c, err);
  for (int k = 0; !rc && k < flat->n_tensors; k++) {
    const uopc_tensor *t = flat->at[flat->tensor_node[k]]->tensor;
    if (!t) continue;   /* a symbolic int's carrier: the model gets its value */
    if (!uopc_tensor_is_contiguous(t)) {   /* eager inputs are read as packed rows */
      rc = uopc_tensor_empty(&packed[k], t->dtype, t->rank, t->shape, err);
      if (!rc) rc = uopc_tensor_copy(&packed[k], t, err);
      t = &packed[k];
    }
    if (!rc && !(leaves[k] = tp_wrap(c, t))) rc = UOPC_FAIL(err, tp_status(c), "%s", tp_error(c)->message);
  }
  if (!rc) tj_in_tree(c, flat, f->n_args, leaves, in, pool);
  if (!rc) f->model(c, in, o, f->user);
  if (!rc && tp_status(c)) rc = UOPC_FAIL(err, tp_status(c), "%s", tp_error(c)->message);
  for (int k = 0; !rc && k < f->opts.n_outputs; k++)
    if (!tp_value(o[k])) rc = UOPC_FAIL(err, UOPC_E_INVALID, "tensorjit '%s': the model left output %d unset", f->label, k);
  for (int k = 0; !rc && k < f->opts.n_outputs; k++) uopc_tensor_retain(&outs[k], tp_value(o[k]));
  for (int k = 0; k < flat->n_tensors; k++) uopc_tensor_release(&packed[k]);
  tp_ctx_free(c);
  if (!rc) uopc_counter_bump(f->eager, 1), f->counts.eager_fallbacks++;
  return rc;
}

/* ---- Calls. */

/* The group of the call in f->cur.flat: a kept one, or a new one (a new
 * structure fails the structure guard of every kept one: one guard failure). */
static int choose_group(tj_function *f, int first, tj_group **g, uopc_error *err) {
  if ((*g = tj_group_of(f, &f->cur.flat))) return UOPC_OK;
  if (f->n_groups) uopc_counter_bump(f->failures, 1), f->counts.guard_failures++;
  int rc = tj_group_new(f, &f->cur.flat, g, err);
  if (rc && first) f->fixed = 0, f->n_args = 0;   /* a refused first call fixes nothing */
  return rc;
}

/* Through g's cache: the artifact whose guards hold, a new one, or the limit's choice. */
static int run_group(tj_function *f, tj_group *g, uopc_error *err) {
  for (int k = 0; k < g->n_tensors; k++) f->cur.tensors[k] = tj_flat_tensor(&f->cur.flat, k);
  vcache_variant *v = NULL;
  int rc = vcache_choose(&g->cache, NULL, 0, f->cur.tensors, g->n_tensors, &v, err);
  if (!rc && !g->cache.last.built) uopc_counter_bump(f->hits, 1), f->counts.artifact_hits++;
  if (!rc) return vcache_run(&g->cache, v, err);
  if (f->cur.unkept && !f->cur.eager) rc = tj_run_unkept(g, &g->cache.last.call, err);
  if (rc && f->cur.eager) rc = run_eager(f, &f->cur.flat, f->cur.outs, err);   /* also a break past the regions' limit */
  else if (rc && f->cur.broke) rc = UOPC_OK, *err = (uopc_error){0};         /* the regions ran (tj_contract) */
  return rc;
}

int tj_call(tj_function *f, const tj_arg *args, int n_args, uopc_tensor *outs, uopc_error *err) {
  if (!f || !outs) return UOPC_FAIL(err, UOPC_E_INVALID, "tj_call: NULL function or outputs");
  int rc = tj_check_args(f, args, n_args, &f->cur.flat, err), first = !f->fixed;
  if (!rc && first) rc = tj_fix_signature(f, args, n_args, err);
  if (rc) return rc;
  f->cur.args = args;
  f->cur.eager = f->cur.unkept = f->cur.broke = 0;
  tj_group *g = NULL;
  rc = choose_group(f, first, &g, err);
  if (!rc) rc = run_group(f, g, err);
  else if (f->cur.eager) rc = run_eager(f, &f->cur.flat, f->cur.outs, err);   /* past the structure limit */
  f->cur.args = NULL;
  if (rc) return rc;
  f->counts.calls++;
  memcpy(outs, f->cur.outs, (size_t)f->opts.n_outputs * sizeof *outs);   /* handed over, not retained twice */
  memset(f->cur.outs, 0, (size_t)f->opts.n_outputs * sizeof *outs);
  return UOPC_OK;
}
