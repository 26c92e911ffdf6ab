/* tj_artifact.c: artifacts as variants of 23.2's cache (section 23.7, given
 * code). The cache's steps, replaced by hooks: select checks each variant's
 * guard set (the cache's plan) and then what a set cannot say, the scalars
 * and the trace's comparisons; a miss builds while max_variants allows; the
 * contract derives the call's specialisation (no duck sizing: each extent a
 * dim of its own unless the trace needs it equal to another), traces the
 * model on it (capturing again when the trace needs two sizes equal), and
 * reads the guards back with the cache's own vcache_spec_guards; compile and
 * run are the core's, with the outputs made here. Chapter 23.7. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ir_eval.h"
#include "ir_pass.h"
#include "tj_internal.h"

#define TJ_STR_(x) #x
#define TJ_STR(x) TJ_STR_(x)
/* Named in every generated banner, so the text (and the cache key) says which rule drew the groups. */
const lower_fuse_rule TJ_FUSE_RULE = {
    "tensorjit's cost rule (lab 23.7): a computed node is stored when ops x (reads - 1) > " TJ_STR(LOWER_STORE_COST),
    tj_fuse_rule};


/* ---- Selection and misses. */

static int holds_all(tj_group *g, const vcache_variant *v, const guard_call *call, uopc_error *err) {
  const tj_artifact *a = tj_artifact_of(g, v);
  int failed;
  int64_t value;
  if (!a || !vcache_variant_holds(v, call) || (g->n_scalars && !tj_scalars_hold(g, a, &g->f->cur.flat, &failed)))
    return 0;
  return tj_trace_holds(a, call, &failed, &value, err) ? -1 : failed < 0;
}

static int hook_select(void *ctx, vcache *c, const guard_call *call, int *index, uopc_error *err) {
  tj_group *g = ctx;
  tj_function *f = g->f;
  int n = vcache_n_specialised(c), k = 0, h = 0;
  while (k < n && (h = holds_all(g, c->variants[k], call, err)) == 0) k++;
  if (h < 0) return err->code;
  vcache_count_checks(c, k + (k < n), k);
  f->counts.guard_failures += k;
  *index = k < n ? k : -1;
  return UOPC_OK;
}

static int limit_error(tj_group *g, const guard_call *call, uopc_error *err) {
  tj_function *f = g->f;
  char text[512], why[1024] = "";
  tj_call_text(&f->cur.flat, call, text, sizeof text);
  for (int k = 0; k < g->n_arts; k++) {
    size_t used = strlen(why);
    if (used + 8 >= sizeof why) break;
    snprintf(why + used, sizeof why - used, "; %s: ", g->arts[k].v->entry);
    int rc = tj_reject_text(g, &g->arts[k], call, &f->cur.flat, why + strlen(why), sizeof why - strlen(why), err);
    if (rc) return rc;
  }
  return UOPC_FAIL(err, UOPC_E_LIMIT, "tensorjit '%s': specialization limit reached (max_variants = %d): no kept"
                   " artifact serves this call (%s)%s", f->label, f->opts.max_variants, text, why);
}

static int hook_on_miss(void *ctx, vcache *c, const guard_call *call, vcache_variant **out, uopc_error *err) {
  tj_group *g = ctx;
  tj_function *f = g->f;
  if (vcache_n_specialised(c) >= f->opts.max_variants) {
    vcache_limit_hit(c);
    uopc_counter_bump(f->limit, 1);
    f->counts.limit_hits++;
    f->cur.eager = f->opts.on_limit == TJ_LIMIT_EAGER;
    f->cur.unkept = f->opts.on_limit == TJ_LIMIT_UNKEPT;
    return limit_error(g, call, err);
  }
  memset(&g->pending, 0, sizeof g->pending);
  int rc = vcache_build(c, call, 0, 0, out, err);
  if (rc) {
    free(g->pending.guards);
    tj_callouts_free(g->pending.callouts);
    ir_graph_free(g->pending.passed);   /* after the build's cleanup freed the exec on it */
    memset(&g->pending, 0, sizeof g->pending);
    return rc;
  }
  g->pending.v = *out;
  g->pending.number = c->last.number;   /* the call of its structure's cache */
  g->arts[g->n_arts] = g->pending;
  (*out)->own = &g->arts[g->n_arts++];   /* arts never move: the group holds them in place */
  memset(&g->pending, 0, sizeof g->pending);
  f->counts.artifacts_built++;
  return UOPC_OK;
}

/* ---- The contract: the specialisation. Which extents are dims is lab
 * 23.7's tj_extent_of (tj_sizes.c); the classes it reads are below. */

int tj_sizes_root(const tj_sizes *s, int x) {
  while (s->parent[x] != x) x = s->parent[x];
  return x;
}

int tj_new_dim(const tj_group *g, vcache_spec *spec, guard_site at, int64_t lo, int64_t hi, int *out,
               uopc_error *err) {
  if (spec->n_dims == SYM_BINDING_MAX)
    return UOPC_FAIL(err, UOPC_E_LIMIT, "tensorjit '%s': the call needs more than %d dims (the limit)", g->f->label,
                     SYM_BINDING_MAX);
  char name[SYM_NAME_MAX + 16];
  const tj_node *node = &g->nodes[g->tensor_node[at.arg]];
  int sym = node->kind == TJ_SYM_INT && !node->depth;   /* its dim is the int: "n", not "n_carrier_0" */
  for (int d = 0; sym && d < spec->n_dims; d++) sym = strcmp(spec->dims[d].name, node->path) != 0;
  if (sym) snprintf(name, sizeof name, "%s", node->path);
  else snprintf(name, sizeof name, "%s_%s%d", g->inputs[at.arg], at.field == GUARD_SHAPE ? "" : "s", at.axis);
  if (strlen(name) >= SYM_NAME_MAX) snprintf(name, sizeof name, "dim%d", spec->n_dims);
  int rc = sym_dim_init(&spec->dims[spec->n_dims], name, lo, hi, 1, err);
  if (rc) return rc;
  spec->dim_sites[spec->n_dims] = at;
  *out = spec->n_dims++;
  return UOPC_OK;
}

static int spec_of(const tj_group *g, const tj_sizes *s, const guard_call *call, vcache_spec *spec,
                   uopc_error *err) {
  int dim_of_root[TJ_MAX_TENSORS * UOPC_MAX_RANK], rc = UOPC_OK;
  memset(spec, 0, sizeof *spec);
  memset(dim_of_root, -1, sizeof dim_of_root);
  spec->n_inputs = g->n_tensors;
  for (int a = 0; a < g->n_tensors && !rc; a++) {
    vcache_arg *arg = &spec->args[a];
    arg->dtype = call->args[a].dtype;
    arg->rank = call->args[a].rank;
    arg->strided = !guard_call_contiguous(call, a);   /* another layout class: never read as contiguous */
    for (int k = 0; k < arg->rank && !rc; k++)
      rc = tj_extent_of(g, s, call, (guard_site){a, GUARD_SHAPE, k}, dim_of_root, spec, &arg->shape[k], err);
    int64_t lim = g->cache.opts.policy.max_stride;
    for (int k = 0; k < arg->rank && arg->strided && !rc; k++)
      rc = tj_new_dim(g, spec, (guard_site){a, GUARD_STRIDE, k}, -lim, lim, &arg->strides[k], err);
  }
  return rc;
}

/* The site whose dim is named name in spec, as a tj_sizes index; -1 if none. */
static int site_named(const vcache_spec *spec, const char *name) {
  for (int d = 0; d < spec->n_dims; d++)
    if (spec->dim_sites[d].field == GUARD_SHAPE && !strcmp(spec->dims[d].name, name))
      return spec->dim_sites[d].arg * UOPC_MAX_RANK + spec->dim_sites[d].axis;
  return -1;
}

/* What the trace needed, made a fact (lab 23.7's tj_sizes_unify): two
 * dims one, or a dim its constant. */
static int narrow(const tj_function *f, tj_sizes *s, const vcache_spec *spec, const tp_unify *u, uopc_error *err) {
  int a = site_named(spec, u->a), b = u->b[0] ? site_named(spec, u->b) : -1;
  if (a < 0 || (u->b[0] && b < 0))
    return UOPC_FAIL(err, UOPC_E_GUARD, "tensorjit '%s': the trace needs dim '%s' %s%s, which is no input's size (a"
                     " bug)", f->label, u->a, u->b[0] ? "equal to " : "constant", u->b);
  return tj_sizes_unify(s, a, b, err);
}

/* ---- The contract: a dim read as an expression of others. When the trace
 * needs dim d equal to an expression e of other inputs' sizes (the incoming
 * gradient of (x*x)[:, cols//2:] has a dim of its own, the output's extent
 * is cols - cols//2), every input axis of d's class is declared with extent
 * e, and a trace guard d - e == 0 checks each call: one artifact serves
 * every size for which they agree. The expressions are kept by site ("s12"
 * for argument 1's axis 4), since a later unification may rename a class's
 * dim; a site read as an expression is never a leaf of another's (its dim is
 * in no graph), so the chains end. */
typedef struct tj_derived {
  sym_arena *arena;                  /* owned: the expressions, their dims named by site */
  int n;
  int site[TJ_SITES];
  const sym_expr *expr[TJ_SITES];
  tp_site at[TJ_SITES];              /* the operation that needed it (a guard's line in tj_explain) */
} tj_derived;

/* The entry of dv whose site is in x's class; -1 if none. */
static int derived_of(const tj_derived *dv, const tj_sizes *s, int x) {
  for (int k = 0; dv && k < dv->n; k++)
    if (tj_sizes_root(s, dv->site[k]) == tj_sizes_root(s, x)) return k;
  return -1;
}

typedef struct to_sites_ctx { const vcache_spec *spec; const tj_sizes *s; int root; } to_sites_ctx;

/* A shape dim of spec as its site's dim ("s12", the same bounds); NULL for
 * a stride's dim or one of d's own class (d = d // 2 + 1 has no reading). */
static const sym_expr *site_leaf(sym_arena *to, const sym_dim *d, void *ctx) {
  const to_sites_ctx *t = ctx;
  int x = site_named(t->spec, d->name);
  if (x < 0 || tj_sizes_root(t->s, x) == t->root) return NULL;
  sym_dim named = *d;
  snprintf(named.name, sizeof named.name, "s%d", x);
  return sym_expr_dim(to, &named);
}

typedef struct from_sites_ctx { const vcache_spec *spec; const tj_sizes *s; const tj_derived *dv; int depth; } from_sites_ctx;

/* The extent at site x of spec in to as the spec has it: its class's dim or constant. */
static const sym_expr *own_extent(sym_arena *to, const vcache_spec *spec, int x) {
  const vcache_extent *e = &spec->args[x / UOPC_MAX_RANK].shape[x % UOPC_MAX_RANK];
  return e->dim >= 0 ? sym_expr_dim(to, &spec->dims[e->dim]) : sym_expr_const(to, e->value);
}

/* The extent at site x of spec in to: its own, or the expression its class
 * is read as. */
static const sym_expr *extent_expr(sym_arena *to, from_sites_ctx *t, int x);

static const sym_expr *spec_leaf(sym_arena *to, const sym_dim *d, void *ctx) {
  return extent_expr(to, ctx, atoi(d->name + 1));
}

static const sym_expr *extent_expr(sym_arena *to, from_sites_ctx *t, int x) {
  int k = derived_of(t->dv, t->s, x);
  if (k >= 0 && t->depth < TJ_SITES) {
    t->depth++;
    const sym_expr *e = sym_expr_rebuild(to, t->dv->expr[k], spec_leaf, t);
    t->depth--;
    return e;
  }
  return k >= 0 ? NULL : own_extent(to, t->spec, x);
}

/* What the trace needed: dim u->a read as u->expr from now on. Errors:
 * UOPC_E_UNSUPPORTED (the expression reads a stride or the dim itself),
 * UOPC_E_NOMEM. */
static int derive(const tj_function *f, const tj_sizes *s, const vcache_spec *spec, const tp_unify *u,
                  tj_derived *dv, uopc_error *err) {
  int a = site_named(spec, u->a);
  char text[160];
  if (sym_expr_format(u->expr, text, sizeof text, NULL)) snprintf(text, sizeof text, "(a size)");
  if (a < 0 || derived_of(dv, s, a) >= 0)
    return UOPC_FAIL(err, UOPC_E_GUARD, "tensorjit '%s': the trace needs dim '%s' equal to %s, which is no input's"
                     " size or is read as one already (a bug)", f->label, u->a, text);
  if (!dv->arena && sym_arena_new(&dv->arena, err)) return err->code;
  to_sites_ctx t = {spec, s, tj_sizes_root(s, a)};
  const sym_expr *e = sym_expr_rebuild(dv->arena, u->expr, site_leaf, &t);
  if (!e && sym_arena_error(dv->arena)->code) return (*err = *sym_arena_error(dv->arena)).code;
  if (!e)
    return UOPC_FAIL(err, UOPC_E_UNSUPPORTED, "tensorjit '%s': the trace needs dim '%s' equal to %s, which reads a"
                     " stride or '%s' itself: a dim is read as an expression of other inputs' sizes only", f->label,
                     u->a, text, u->a);
  dv->site[dv->n] = a, dv->at[dv->n] = u->at, dv->expr[dv->n++] = e;
  return UOPC_OK;
}

/* A trace guard d - e == 0 for each dim read as an expression, appended to
 * the capture's, built in its graph's arena: the call selects the artifact only when
 * its sizes agree with the expressions (the binder checks the inputs again). */
static int derived_guards(const tj_function *f, const tj_sizes *s, const vcache_spec *spec, const tj_derived *dv,
                          tp_capture *cap, uopc_error *err) {
  if (!dv->n) return UOPC_OK;
  tp_guard *grown = realloc(cap->guards, (size_t)(cap->n_guards + dv->n) * sizeof *grown);
  if (!grown) return UOPC_FAIL(err, UOPC_E_NOMEM, "tensorjit '%s': out of memory", f->label);
  cap->guards = grown;
  sym_arena *ar = ir_graph_arena(cap->graph);
  for (int k = 0; k < dv->n; k++) {
    from_sites_ctx t = {spec, s, dv, 0};
    const sym_expr *d = own_extent(ar, spec, dv->site[k]), *e = sym_expr_rebuild(ar, dv->expr[k], spec_leaf, &t);
    const sym_expr *diff = d && e ? sym_expr_sub(ar, d, e) : NULL;
    if (!diff && sym_arena_error(ar)->code) return (*err = *sym_arena_error(ar)).code;
    if (!diff)
      return UOPC_FAIL(err, UOPC_E_GUARD, "tensorjit '%s': no guard for an extent read as an expression (a bug)",
                       f->label);
    int rc = sym_expr_simplify(ar, diff, &diff, err);
    if (rc) return rc;
    cap->guards[cap->n_guards++] = (tp_guard){diff, TP_EQ, 1, dv->at[k]};
  }
  return UOPC_OK;
}

/* ---- The contract: bounds the trace's comparisons narrow. A comparison of
 * one dim with a constant (c*d + k op 0) is a range of d (lab 23.7's
 * tj_sizes_narrow): made the dim's bounds and captured again, it is a guard
 * of the cache's own kind, and the IR's proofs may use it (issue 25: capture
 * again under the narrowed facts). */
static int narrow_by(tj_sizes *s, const vcache_spec *spec, const tp_guard *g, int *changed, uopc_error *err) {
  sym_linear l;
  int rc = sym_linear_of(g->diff, &l, err);
  if (rc || l.count != 1 || l.atom[0]->kind != SYM_DIM) return rc;
  int at = site_named(spec, l.atom[0]->dim.name);
  return at < 0 ? UOPC_OK : tj_sizes_narrow(s, at, l.coef[0], l.constant, g->op, g->truth, changed, err);
}

/* ---- The contract: the trace. */

typedef struct tj_trampoline { tj_function *f; } tj_trampoline;

/* 23.4's model signature, around tensorjit's: tensors by handle, scalars by value. */
static int trampoline(tp_ctx *c, tp_tensor *const *in, tp_tensor **out, void *user) {
  tj_function *f = ((tj_trampoline *)user)->f;
  tj_in args[TJ_MAX_ARGS], pool[TJ_MAX_NODES];
  tj_in_tree(c, &f->cur.flat, f->n_args, in, args, pool);
  return f->model(c, args, out, f->user);
}

/* The spec's inputs as the tracer declares them, in arena ar: each axis its
 * class's dim or constant, or the expression dv reads it as. */
static void declare(const tj_group *g, const vcache_spec *spec, const tj_sizes *s, const tj_derived *dv,
                    sym_arena *ar, tp_input_decl *decl) {
  for (int a = 0; a < spec->n_inputs; a++) {
    const vcache_arg *arg = &spec->args[a];
    decl[a] = (tp_input_decl){.name = g->inputs[a], .dtype = arg->dtype, .rank = arg->rank};
    for (int k = 0; k < arg->rank; k++) {
      from_sites_ctx t = {spec, s, dv, 0};
      decl[a].shape[k] = extent_expr(ar, &t, a * UOPC_MAX_RANK + k);
      if (arg->strided) decl[a].strides[k] = sym_expr_dim(ar, &spec->dims[arg->strides[k]]);
    }
  }
}

/* The spec's inputs declared in a new arena *ar (the caller frees it) and
 * the call's binding of its dims. */
static int prepare(const tj_group *g, const vcache_spec *spec, const tj_sizes *s, const tj_derived *dv,
                   const guard_call *call, sym_arena **ar, sym_binding *b, tp_input_decl *decl, uopc_error *err) {
  int rc = sym_arena_new(ar, err);
  tj_binding_of(spec, call, b);
  if (!rc) declare(g, spec, s, dv, *ar, decl);
  if (!rc && (rc = sym_arena_error(*ar)->code)) *err = *sym_arena_error(*ar);
  for (int a = 0; !rc && a < spec->n_inputs; a++)
    for (int k = 0; !rc && k < decl[a].rank; k++)
      if (!decl[a].shape[k])
        rc = UOPC_FAIL(err, UOPC_E_GUARD, "tensorjit '%s': input '%s' axis %d has no extent (a bug)", g->f->label,
                       g->inputs[a], k);
  return rc;
}

static int capture_once(tj_group *g, const vcache_spec *spec, const tj_sizes *s, const tj_derived *dv,
                        const guard_call *call, tp_capture *cap, uopc_error *err) {
  tj_function *f = g->f;
  sym_arena *ar = NULL;
  sym_binding b;
  tp_input_decl decl[TJ_MAX_TENSORS];
  tj_trampoline t = {f};
  int rc = prepare(g, spec, s, dv, call, &ar, &b, decl, err);
  if (!rc) rc = tp_capture_run(cap, trampoline, &t, decl, f->cur.tensors, g->n_tensors, f->opts.n_outputs, &b, 1, err);
  sym_arena_free(ar);
  return rc;
}

/* ---- A capture that stopped at a graph break (chapter 23.7, "Graph
 * breaks"). Without strict_native the call runs region by region, 23.4's
 * way (tp_run_breaking): the model traced again on this call's values, each
 * region compiled once by its graph's hash into the group's region cache.
 * Nothing becomes an artifact: what a data read decides differs from call
 * to call, so the next call that no kept artifact serves captures again. */
static int run_breaking(tj_group *g, const vcache_spec *spec, const tj_sizes *s, const tj_derived *dv,
                        const guard_call *call, uopc_error *err) {
  tj_function *f = g->f;
  sym_arena *ar = NULL;
  sym_binding b;
  tp_input_decl decl[TJ_MAX_TENSORS];
  tj_trampoline t = {f};
  int rc = g->regions ? UOPC_OK : tp_region_cache_new(&g->regions, f->opts.max_variants, err);
  if (!rc) rc = prepare(g, spec, s, dv, call, &ar, &b, decl, err);
  if (!rc) rc = tp_run_breaking(g->regions, trampoline, &t, decl, f->cur.tensors, g->n_tensors, f->opts.n_outputs,
                                &b, &f->program, f->cur.outs, err);
  sym_arena_free(ar);
  if (!rc) uopc_counter_bump(uopc_counter_slot(TJ_C_BREAK_RUNS), 1), f->counts.break_runs++;
  return rc;
}

/* Captures until the trace needs nothing more: each retry makes one size
 * fewer, one class's bounds narrower or one dim read as an expression, and a
 * capture under narrowed bounds records no comparison they decide, so the
 * loop ends. *s and *dv are what it found (the caller frees dv->arena). */
static int capture(tj_group *g, const guard_call *call, vcache_spec *spec, tj_sizes *s, tj_derived *dv,
                   tp_capture *cap, uopc_error *err) {
  const tj_function *f = g->f;
  for (int x = 0; x < TJ_SITES; x++) s->parent[x] = x, s->pinned[x] = 0, s->lo[x] = INT64_MIN, s->hi[x] = INT64_MAX;
  for (int tries = 0; tries <= 3 * TJ_SITES; tries++) {
    int rc = spec_of(g, s, call, spec, err), changed = 0;
    if (!rc) rc = capture_once(g, spec, s, dv, call, cap, err);
    if (rc && !cap->need_unify) return rc;
    if (rc) {
      tp_unify need = cap->need;
      rc = need.expr ? derive(f, s, spec, &need, dv, err) : narrow(f, s, spec, &need, err);
      tp_capture_fini(cap);   /* after derive: need.expr is in the capture's arena */
      if (rc) return rc;
      continue;
    }
    for (int g = 0; g < cap->n_guards && !rc; g++) rc = narrow_by(s, spec, &cap->guards[g], &changed, err);
    if (rc || !changed) return rc;
    tp_capture_fini(cap);   /* again, under the narrowed bounds: those guards are decided now */
  }
  return UOPC_FAIL(err, UOPC_E_GUARD, "tensorjit '%s': the trace kept needing sizes unified (a bug)", f->label);
}

/* ---- The contract: the key. */

/* Shapes, strides, dims' bounds, the scalars and the trace's comparisons. */
static void constraints_text(const tj_group *g, const vcache_variant *v, const tj_artifact *a, char *buf,
                             size_t size) {
  const vcache_spec *spec = &v->spec;
  buf[0] = '\0';
  for (int i = 0; i < spec->n_inputs; i++) {
    const vcache_arg *arg = &spec->args[i];
    vcache_text_add(buf, size, "%s%s(", i ? " " : "", g->inputs[i]);
    for (int k = 0; k < arg->rank; k++) {
      const vcache_extent *e = &arg->shape[k];
      if (e->dim < 0) vcache_text_add(buf, size, "%s%" PRId64, k ? "," : "", e->value);
      else vcache_text_add(buf, size, "%s%s", k ? "," : "", spec->dims[e->dim].name);
    }
    vcache_text_add(buf, size, ")%s", arg->strided ? "/strided" : "");
  }
  for (int d = 0; d < spec->n_dims; d++)
    vcache_text_add(buf, size, " %s:[%" PRId64 ",%" PRId64 "]", spec->dims[d].name, spec->dims[d].lo, spec->dims[d].hi);
  for (int k = 0; k < g->n_nodes; k++)
    if (g->nodes[k].kind == TJ_INT) vcache_text_add(buf, size, " %s=%" PRId64, g->nodes[k].path, a->scalars[k].i);
    else if (g->nodes[k].kind == TJ_DOUBLE) vcache_text_add(buf, size, " %s=%a", g->nodes[k].path, a->scalars[k].d);
  for (int k = 0; k < a->n_guards; k++) {
    char e[256];
    uopc_error ignore;
    if (sym_expr_format(a->guards[k].diff, e, sizeof e, &ignore)) snprintf(e, sizeof e, "?");
    vcache_text_add(buf, size, " (%s %s 0)=%d", e, tp_cmp_text(a->guards[k].op), a->guards[k].truth);
  }
  tj_callouts_key(a, v->graph, buf, size);   /* the graph's hash does not reach a call-out's inputs */
}

static int artifact_key(const tj_group *g, vcache_variant *v, const tj_artifact *a, uopc_error *err) {
  const tj_function *f = g->f;
  spec_key_parts p = g->cache.base;
  char dtypes[1024] = "", layout[1024] = "", constraints[4096];
  p.graph_hash = ir_graph_hash(v->graph, v->outputs, f->opts.n_outputs);
  if (!p.graph_hash) return UOPC_FAIL(err, UOPC_E_NOMEM, "tensorjit '%s': no memory to hash the graph", f->label);
  for (int i = 0; i < v->spec.n_inputs; i++) {
    vcache_text_add(dtypes, sizeof dtypes, "%s%s:%s", i ? " " : "", g->inputs[i], uopc_dtype_name(v->spec.args[i].dtype));
    vcache_text_add(layout, sizeof layout, "%s%s:%s", i ? " " : "", g->inputs[i],
        v->spec.args[i].strided ? "strided" : "contiguous");
  }
  for (int o = 0; o < f->opts.n_outputs; o++) vcache_text_add(dtypes, sizeof dtypes, " out%d:%s", o, uopc_dtype_name(v->outputs[o]->dtype));
  constraints_text(g, v, a, constraints, sizeof constraints);
  vcache_key_part(p.dtypes, dtypes);
  vcache_key_part(p.layout, layout);
  vcache_key_part(p.constraints, constraints);
  return spec_key_compose(&p, &v->key, err);
}

int tj_contract(tj_group *g, const guard_call *call, vcache_variant *v, tj_artifact *a, uopc_error *err) {
  const tj_function *f = g->f;
  const vcache *c = &g->cache;
  tp_capture cap;
  memset(&cap, 0, sizeof cap);   /* freed on every error, also one before the first capture */
  tj_sizes s;
  tj_derived dv = {0};
  int rc = capture(g, call, &v->spec, &s, &dv, &cap, err), broke = rc && cap.broke;
  a->n_branches = cap.n_guards;
  if (!rc) rc = derived_guards(f, &s, &v->spec, &dv, &cap, err);
  if (rc) tp_capture_fini(&cap);
  if (broke && !f->no_breaks && !f->opts.strict_native) rc = run_breaking(g, &v->spec, &s, &dv, call, err);
  sym_arena_free(dv.arena);
  if (broke && f->no_breaks) {
    uopc_error why = *err;
    return UOPC_FAIL(err, rc, "tensorjit '%s': a function with gradients takes no graph break: %s", f->label,
                     why.message);
  }
  if (broke && !f->opts.strict_native && !rc)
    return g->f->cur.broke = 1, UOPC_E_UNSUPPORTED;   /* no artifact: tj_call hands over the regions' outputs */
  if (broke && !f->opts.strict_native && rc == UOPC_E_LIMIT)
    return g->f->cur.eager = 1, rc;   /* a new region past max_variants of them: run eagerly, counted */
  if (rc) return rc;
  v->graph = cap.graph;            /* the cache owns the graph now; tensorjit the guards */
  memcpy(v->outputs, cap.outputs, (size_t)cap.n_outputs * sizeof *v->outputs);
  a->guards = cap.guards;
  a->n_guards = cap.n_guards;
  cap.graph = NULL, cap.guards = NULL;
  rc = tj_callouts_take(a, &cap, err);
  tp_capture_fini(&cap);
  if (rc) return rc;
  for (int k = 0; k < g->n_nodes; k++)   /* the values only: the rest is borrowed from the call */
    a->scalars[k] = (tj_arg){.kind = g->nodes[k].kind, .i = f->cur.flat.at[k]->i, .d = f->cur.flat.at[k]->d};
  rc = vcache_spec_guards(c, &v->spec, v->outputs, &v->guards, err);
  if (!rc) rc = tj_view_plan(a, v, f->opts.n_outputs, err);
  if (!rc) rc = artifact_key(g, v, a, err);
  if (rc) return rc;
  char entry[LOWER_ENTRY_MAX + 1 - 4];   /* room for "_v99" */
  vcache_spec_entry(c, &v->spec, &v->key, entry, sizeof entry);
  snprintf(v->entry, sizeof v->entry, "%s_v%d", entry, c->count % 100);   /* scalars and branches share the rest */
  return UOPC_OK;
}

static int hook_contract(void *ctx, const vcache *c, vcache_variant *v, uopc_error *err) {
  return tj_contract(ctx, &c->last.call, v, &((tj_group *)ctx)->pending, err);
}

/* ---- Compiling and running. */

/* The outputs of v that a kernel computes (not views), in order; their count. */
static int computed_outputs(const tj_function *f, const tj_artifact *a, const vcache_variant *v, const ir_node **out) {
  int n = 0;
  for (int k = 0; k < f->opts.n_outputs; k++)
    if (a->view_of[k] < 0) out[n++] = v->outputs[k];
  return n;
}

static int hook_compile(void *ctx, const vcache *c, vcache_variant *v, uopc_error *err) {
  tj_group *g = ctx;
  tj_function *f = g->f;
  uopc_error inner = {0};
  const ir_node *computed[TJ_MAX_OUTPUTS];
  int n = computed_outputs(f, &g->pending, v, computed);   /* the artifact being built */
  if (g->pending.callouts) {   /* the regions before its call-outs */
    int rc = tj_callouts_compile(c, v, &g->pending, err);
    if (rc) return rc;
  }
  if (!n) return UOPC_OK;   /* every output a view: nothing to compile */
  /* the core's passes first (decompose, fold, CSE, DCE: ir_passes.c), then fused by tensorjit's cost rule (a
   * producer read by several consumers is stored once: tj_fuse.c), long chains cut, its temporaries
   * sharing space where their lifetimes allow: the core's lower_fuse.c, lower_share.c. The variant keeps the traced graph
   * (its guards, views and call-outs are expressions in it); the passed one lives beside it. */
  const ir_node *passed[TJ_MAX_OUTPUTS];
  int rc = ir_passes_run(&g->pending.passed, passed, v->graph, computed, n, IR_PASS_ALL, NULL, err);
  if (rc) return rc;
  rc = exec_new_rule(&v->exec, g->pending.passed, passed, n, v->entry, TJ_LOWER_FLAGS, &TJ_FUSE_RULE,
                     &c->opts.program, &inner);
  if (!rc) return vcache_plan_run(c, v, err);
  ir_graph_free(g->pending.passed);   /* nothing was lowered from it */
  g->pending.passed = NULL;
  /* what the code generator cannot do (a lowering's limit, such as an index it cannot prove fits int64;
   * an op; the compiler), not memory or the cache */
  int generation = rc == UOPC_E_COMPILE || rc == UOPC_E_LIMIT || rc == UOPC_E_UNSUPPORTED || rc == UOPC_E_OVERFLOW;
  if (!generation) return (*err = inner, rc);
  if (f->opts.strict_native)
    return UOPC_FAIL(err, rc, "tensorjit '%s': %s could not be generated (strict_native): %s", f->label, v->entry,
                     inner.message);
  g->pending.interpreted = 1;      /* still guarded; the core's interpreter runs it */
  return UOPC_OK;
}

/* The computed outputs of a (not views) under b, new and contiguous, into outs by output. */
/* outs[k] over f's spare storage for output k when the caller has released
 * it and it holds as many elements of dt; else new storage, kept as the
 * spare. A kernel writes every element of its output, so stale values never
 * show. */
static int output_storage(tj_function *f, int k, uopc_dtype dt, int rank, const int64_t *shape, uopc_tensor *out,
                          uopc_error *err) {
  uopc_tensor *spare = &f->spare[k];
  int64_t numel = 1;
  for (int d = 0; d < rank; d++) numel *= shape[d];   /* extents checked by the guards: no overflow */
  if (spare->storage && spare->dtype == dt && uopc_tensor_storage_refs(spare) == 1) {
    int64_t had = 1;
    int same = spare->rank == rank;   /* compared in the loop: ranks are small, a memcmp call costs more */
    for (int d = 0; d < spare->rank; d++) had *= spare->shape[d], same &= d < rank && spare->shape[d] == shape[d];
    if (same) {
      uopc_tensor_retain(out, spare);   /* the same shape again: the common case, no view to make */
      return UOPC_OK;
    }
    if (had == numel) return uopc_tensor_reshape(out, spare, rank, shape, err);
  }
  int rc = uopc_tensor_empty(out, dt, rank, shape, err);
  if (!rc) uopc_tensor_release(spare), uopc_tensor_retain(spare, out);
  return rc;
}

static int make_outputs(tj_function *f, const tj_artifact *a, const sym_binding *b, uopc_tensor *outs,
                        uopc_error *err) {
  int rc = UOPC_OK, k;
  for (k = 0; k < f->opts.n_outputs && !rc; k++) {
    const ir_node *n = a->v->outputs[k];
    int64_t shape[UOPC_MAX_RANK];
    if (a->view_of[k] >= 0) continue;
    for (int d = 0; d < n->rank && !rc; d++) rc = sym_expr_eval(n->shape[d], b, &shape[d], err);
    if (!rc) rc = output_storage(f, k, n->dtype, n->rank, shape, &outs[k], err);
  }
  for (int j = 0; rc && j < k; j++) uopc_tensor_release(&outs[j]);   /* a released or unset tensor: a no-op */
  return rc;
}

/* The views among a's outputs, into outs by output: of the call's tensors,
 * or of the call-outs' outputs (the graph's inputs after them). */
static int make_views(const tj_group *g, const tj_artifact *a, const sym_binding *b, const tj_callout_values *co,
                      uopc_tensor *outs, uopc_error *err) {
  int rc = UOPC_OK;
  for (int k = 0; k < g->f->opts.n_outputs && !rc; k++) {
    int i = a->view_of[k];
    if (i >= 0) rc = tj_view_make(a, k, i < g->n_tensors ? g->f->cur.tensors[i] : &co->outs[i - g->n_tensors], b,
                                  &outs[k], err);
  }
  return rc;
}

/* a's computed outputs into f->cur.outs: its program (or the interpreter) on
 * the call's tensors and the call-outs' outputs co, the graph's inputs in order. */
static int run_computed(tj_group *g, const tj_artifact *a, const vcache_variant *v, const guard_call *call,
                        const sym_binding *b, const tj_callout_values *co, uopc_error *err) {
  tj_function *f = g->f;
  const ir_node *computed[TJ_MAX_OUTPUTS];
  int n = computed_outputs(f, a, v, computed), rc = UOPC_OK;
  if (n && a->interpreted) {
    uopc_tensor got[TJ_MAX_OUTPUTS];
    const uopc_tensor *ins[TJ_MAX_TENSORS + TJ_CALLOUT_VALUES];
    for (int k = 0; k < g->n_tensors + co->n; k++) ins[k] = k < g->n_tensors ? f->cur.tensors[k] : &co->outs[k - g->n_tensors];
    rc = ir_eval(v->graph, computed, n, ins, g->n_tensors + co->n, b, got, err);
    for (int k = 0, j = 0; !rc && k < f->opts.n_outputs; k++)
      if (a->view_of[k] < 0) f->cur.outs[k] = got[j++];
    if (!rc) uopc_counter_bump(f->eager, 1), f->counts.eager_fallbacks++;
  } else if (n && !(rc = make_outputs(f, a, b, f->cur.outs, err))) {
    void *buffers[TJ_MAX_OUTPUTS + TJ_MAX_TENSORS + TJ_CALLOUT_VALUES];
    int64_t dims[UOPC_SIGNATURE_MAX];
    for (int k = 0, j = 0; k < f->opts.n_outputs; k++)
      if (a->view_of[k] < 0) buffers[j++] = uopc_tensor_data(&f->cur.outs[k]);
    for (int k = 0; k < g->n_tensors; k++) buffers[n + k] = (void *)call->data[k];
    for (int q = 0; q < co->n; q++) buffers[n + g->n_tensors + q] = uopc_tensor_data(&co->outs[q]);
    for (int d = 0; d < v->n_dims; d++) dims[d] = GUARD_AT(call, v->dim_at[d]);
    rc = exec_run_checked(v->exec, buffers, dims, err);
  }
  return rc;
}

static int hook_run(void *ctx, vcache_variant *v, const guard_call *call, uopc_error *err) {
  tj_group *g = ctx;
  tj_function *f = g->f;
  const tj_artifact *a = tj_artifact_of(g, v);
  sym_binding b;
  tj_callout_values co;   /* the call-outs' outputs, each after the region before it */
  co.n = 0;
  if (!a) return UOPC_FAIL(err, UOPC_E_INVALID, "tensorjit: a variant of no artifact (a bug)");
  tj_binding_of(&v->spec, call, &b);
  int rc = a->callouts ? tj_callouts_run(g, a, call, &b, &co, err) : UOPC_OK;
  if (!rc) rc = run_computed(g, a, v, call, &b, &co, err);
  if (!rc) rc = make_views(g, a, &b, &co, f->cur.outs, err);
  for (int k = 0; rc && k < f->opts.n_outputs; k++) uopc_tensor_release(&f->cur.outs[k]);
  if (co.n) tj_callout_values_fini(&co);   /* a view of one holds its own reference */
  return rc;
}

int tj_run_unkept(tj_group *g, const guard_call *call, uopc_error *err) {
  tj_function *f = g->f;
  vcache_variant v;
  tj_artifact *a = &g->pending;   /* found by the run as the one being built */
  memset(&v, 0, sizeof v);
  memset(a, 0, sizeof *a);
  a->v = &v;
  int rc = tj_contract(g, call, &v, a, err);
  if (!rc) rc = hook_compile(g, &g->cache, &v, err);
  if (!rc) rc = hook_run(g, &v, call, err);
  exec_free(v.exec);
  ir_graph_free(a->passed);   /* after the exec lowered from it */
  guard_set_fini(&v.guards);
  tj_callouts_free(a->callouts);
  ir_graph_free(v.graph);
  free(a->guards);
  memset(a, 0, sizeof *a);
  if (rc && f->cur.broke) return *err = (uopc_error){0}, UOPC_OK;   /* the regions ran instead */
  if (!rc) uopc_counter_bump(f->unkept, 1), f->counts.unkept_runs++;
  return rc;
}

void tj_cache_options(tj_group *g, vcache_options *o) {
  const tj_function *f = g->f;
  memset(o, 0, sizeof *o);
  o->op = g->op;
  o->n_inputs = g->n_tensors;
  for (int k = 0; k < g->n_tensors; k++) o->inputs[k] = g->inputs[k];
  o->ctx = g;
  o->hooks = (vcache_hooks){.select = hook_select, .on_miss = hook_on_miss, .contract = hook_contract,
                            .compile = hook_compile, .run = hook_run};
  o->policy.max_variants = f->opts.max_variants;
  o->policy.max_extent = TJ_MAX_EXTENT;   /* a symbolic int's carrier reaches this far */
  o->policy.on_limit = VCACHE_LIMIT_FAIL;
  o->program = f->program;
  o->counters[VCACHE_SLOT_BUILT] = TJ_C_BUILT;
  o->counters[VCACHE_SLOT_CHECKS] = "";            /* not one of tensorjit's */
  o->counters[VCACHE_SLOT_FAILURES] = TJ_C_GUARD_FAILURES;
  o->scan_only = 1;                                /* scalars and branches: the index cannot see them */
}
