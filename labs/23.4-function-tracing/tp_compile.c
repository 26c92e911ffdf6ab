/* tp_compile.c: the variant cache over traces, and regions at graph breaks
 * (given code, lab 23.4). Chapter 23.4, "A variant cache over traces". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tp_compile.h"

/* A region's program, keyed by what its outputs compute (hash) and by what its signature takes:
 * every input of its graph (inputs), used or not, since the program is called with them all. */
typedef struct tp_region_entry { uint64_t hash, inputs; int n_inputs; ir_graph *graph; exec *program; } tp_region_entry;
struct tp_region_cache { tp_region_entry *items; int n, cap, max; };   /* max 0: no limit (tp_call's) */

struct tp_compiled {
  tp_model model;
  void *user;
  int n_in, n_out, n_grads;
  tp_arg *args;
  tp_options opts;
  sym_arena *arena;                 /* the args' shapes */
  tp_variant variants[TP_VARIANTS_MAX];
  int n_variants;
  int traced;                       /* traces so far: a later variant is a recompilation */
  struct tp_region_cache regions;
};

static int grow(void **items, int *cap, int need, size_t size) {
  if (need <= *cap) return 1;
  int n = *cap ? 2 * *cap : 8;
  void *q = realloc(*items, (size_t)n * size);
  if (!q) return 0;
  *items = q;
  *cap = n;
  return 1;
}

static void variant_fini(tp_variant *v) {
  exec_free(v->forward);
  exec_free(v->backward);
  ir_graph_free(v->graph);
  free(v->guards);
  memset(v, 0, sizeof *v);
}

static void regions_fini(struct tp_region_cache *r) {
  for (int k = 0; k < r->n; k++) {
    exec_free(r->items[k].program);
    ir_graph_free(r->items[k].graph);
  }
  free(r->items);
  memset(r, 0, sizeof *r);
}

void tp_compiled_free(tp_compiled *f) {
  if (!f) return;
  for (int k = 0; k < f->n_variants; k++) variant_fini(&f->variants[k]);
  regions_fini(&f->regions);
  free(f->args);
  sym_arena_free(f->arena);
  free(f);
}

int tp_compiled_new(tp_compiled **out, tp_model model, void *user, const tp_arg *args, int n_in, int n_out,
                    const tp_options *opts, uopc_error *err) {
  if (!out || !model || n_in < 0 || n_in > 30 || n_out < 1 || (n_in && !args))
    return UOPC_FAIL(err, UOPC_E_INVALID, "tp_compiled_new: a model, 0..30 inputs and 1 or more outputs");
  tp_compiled *f = calloc(1, sizeof *f);
  if (!f) return UOPC_FAIL(err, UOPC_E_NOMEM, "tp: out of memory");
  f->model = model, f->user = user, f->n_in = n_in, f->n_out = n_out;
  if (opts) f->opts = *opts;
  f->n_grads = __builtin_popcount(f->opts.grad_inputs);
  int rc = sym_arena_new(&f->arena, err);
  if (!rc && !(f->args = calloc((size_t)n_in + 1, sizeof *f->args))) rc = UOPC_FAIL(err, UOPC_E_NOMEM, "tp: out of memory");
  if (!rc && (f->opts.grad_inputs >> n_in))
    rc = UOPC_FAIL(err, UOPC_E_INVALID, "tp_compiled_new: grad_inputs 0x%x names inputs past %d", f->opts.grad_inputs, n_in);
  for (int k = 0; k < n_in && !rc; k++) {
    f->args[k] = args[k];
    if (args[k].rank < 0 || args[k].rank > UOPC_MAX_RANK)
      rc = UOPC_FAIL(err, UOPC_E_INVALID, "argument %d: rank %d", k, args[k].rank);
    for (int a = 0; a < args[k].rank && !rc; a++) {
      const sym_expr *e = args[k].shape[a];
      if (!e || (e->kind != SYM_CONST && e->kind != SYM_DIM))
        rc = UOPC_FAIL(err, UOPC_E_INVALID, "argument '%s': extent %d must be a constant or a dim",
                       args[k].name ? args[k].name : "?", a);
      else f->args[k].shape[a] = sym_expr_copy(f->arena, e);
    }
  }
  if (rc) { tp_compiled_free(f); return rc; }
  *out = f;
  return UOPC_OK;
}

int tp_compiled_variant_count(const tp_compiled *f) { return f->n_variants; }
const tp_variant *tp_compiled_variant(const tp_compiled *f, int k) {
  return k >= 0 && k < f->n_variants ? &f->variants[k] : NULL;
}

/* ---- Binding a call's arguments. */

static int bind_args(const tp_compiled *f, const uopc_tensor *const *in, sym_binding *b, uopc_error *err) {
  sym_binding_init(b);
  for (int k = 0; k < f->n_in; k++) {
    const tp_arg *a = &f->args[k];
    const uopc_tensor *t = in ? in[k] : NULL;
    if (!t || !t->storage) return UOPC_FAIL(err, UOPC_E_INVALID, "argument '%s' is NULL or released", a->name);
    if (t->dtype != a->dtype || t->rank != a->rank)
      return UOPC_FAIL(err, t->dtype != a->dtype ? UOPC_E_DTYPE : UOPC_E_INVALID,
                       "argument '%s' is %s of rank %d, the function takes %s of rank %d", a->name,
                       uopc_dtype_name(t->dtype), t->rank, uopc_dtype_name(a->dtype), a->rank);
    for (int x = 0; x < a->rank; x++) {
      const sym_expr *e = a->shape[x];
      if (e->kind == SYM_CONST) {
        if (t->shape[x] != e->value)
          return UOPC_FAIL(err, UOPC_E_BOUNDS, "argument '%s': axis %d is %lld, the function takes %lld", a->name, x,
                           (long long)t->shape[x], (long long)e->value);
        continue;
      }
      int at = sym_binding_find(b, e->dim.name);
      if (at >= 0 && b->values[at] != t->shape[x])
        return UOPC_FAIL(err, UOPC_E_BOUNDS, "argument '%s': axis %d is %lld, but dim '%s' is %lld from an earlier"
                         " argument", a->name, x, (long long)t->shape[x], e->dim.name, (long long)b->values[at]);
      int rc = at >= 0 ? UOPC_OK : sym_dim_bind(b, &e->dim, t->shape[x], err);
      if (rc) return rc;
    }
  }
  return UOPC_OK;
}

/* ---- Running a program on the call's tensors. */

/* Runs e on in, its n outputs into new tensors out[0 .. n) (shapes from
 * exec_output_shape under b); on error none is left allocated. */
static int run_program(exec *e, int n, const sym_binding *b, const uopc_tensor *const *in, int n_in, uopc_tensor *out,
                       uopc_error *err) {
  int rc = UOPC_OK, k;
  memset(out, 0, (size_t)n * sizeof *out);
  for (k = 0; k < n && !rc; k++) {
    int64_t shape[UOPC_MAX_RANK] = {0};
    int rank = 0;
    rc = exec_output_shape(e, k, b, shape, &rank, err);
    if (!rc) rc = uopc_tensor_empty(&out[k], exec_lowered(e)->buffers[k].node->dtype, rank, shape, err);
  }
  uopc_tensor **ptrs = rc ? NULL : malloc((size_t)(n + 1) * sizeof *ptrs);
  if (!rc && !ptrs) rc = UOPC_FAIL(err, UOPC_E_NOMEM, "tp: out of memory");
  for (int j = 0; !rc && j < n; j++) ptrs[j] = &out[j];
  if (!rc) rc = exec_run(e, ptrs, n, in, n_in, err);
  free(ptrs);
  if (rc)
    for (int j = 0; j < k; j++) uopc_tensor_release(&out[j]);
  return rc;
}

static int run_variant(tp_compiled *f, tp_variant *v, const sym_binding *b, const uopc_tensor *const *in,
                       uopc_tensor *out, uopc_tensor *grads, uopc_error *err) {
  int rc = run_program(v->forward, f->n_out, b, in, f->n_in, out, err);
  if (rc || !v->backward || !grads) return rc;
  rc = run_program(v->backward, f->n_grads, b, in, f->n_in, grads, err);
  if (rc)
    for (int k = 0; k < f->n_out; k++) uopc_tensor_release(&out[k]);
  return rc;
}

/* ---- Regions (a trace that breaks): the plumbing of tp_break.c's
 * tp_region_close and tp_on_break. */

/* The region cache's program for the current graph and outs, built and
 * added (with c->g, c->g_cached set) when it has none. */
static int region_program(tp_ctx *c, const ir_node *const *outs, int n, exec **e, uopc_error *err) {
  struct tp_region_cache *rcache = c->regions;
  uint64_t hash = ir_graph_hash(c->g, outs, n), inputs = 0;
  int n_inputs = ir_graph_input_count(c->g);
  for (int k = 0; k < n_inputs; k++) {   /* each input's name, dtype and shape, in order */
    const ir_node *in = ir_graph_input(c->g, k);
    inputs = (inputs ^ ir_graph_hash(c->g, &in, 1)) * 0x100000001b3ull;
  }
  if (!hash || (n_inputs && !inputs)) return UOPC_FAIL(err, UOPC_E_NOMEM, "tp: no memory to hash a region");
  for (int k = 0; k < rcache->n; k++)
    if (rcache->items[k].hash == hash && rcache->items[k].inputs == inputs && rcache->items[k].n_inputs == n_inputs)
      return *e = rcache->items[k].program, UOPC_OK;
  if (rcache->max && rcache->n >= rcache->max)
    return UOPC_FAIL(err, UOPC_E_LIMIT, "a new region's program, past the %d the region cache keeps", rcache->max);
  char entry[32];
  snprintf(entry, sizeof entry, "tp_region%d", rcache->n);
  int rc = exec_new(e, c->g, outs, n, entry, c->opts, err);
  if (!rc && !grow((void **)&rcache->items, &rcache->cap, rcache->n + 1, sizeof *rcache->items)) {
    exec_free(*e);                       /* the graph stays the context's */
    return UOPC_FAIL(err, UOPC_E_NOMEM, "tp: out of memory");
  }
  if (!rc) rcache->items[rcache->n++] = (tp_region_entry){hash, inputs, n_inputs, c->g, *e}, c->g_cached = 1;
  return rc;
}

int tp_region_run(tp_ctx *c, const ir_node *const *outs, int n, uopc_tensor *vals, tp_site at) {
  if (c->error.code) return c->error.code;
  if (n < 1 || !outs || !vals)
    return tp_fail(c, at, UOPC_E_INVALID, "tp_region_run: %d outputs (needs 1 or more)", n);
  exec *e = NULL;
  uopc_error err = {0};
  /* A tracing context of its own (a test's) has no region cache: the program is built, run and freed. */
  int rc = c->regions ? region_program(c, outs, n, &e, &err) : exec_new(&e, c->g, outs, n, "tp_region", c->opts, &err);
  const uopc_tensor **in = rc ? NULL : malloc((size_t)(c->n_inputs + 1) * sizeof *in);
  if (!rc && !in) rc = UOPC_FAIL(&err, UOPC_E_NOMEM, "tp: out of memory");
  for (int k = 0; !rc && k < c->n_inputs; k++) in[k] = c->inputs[k].value;
  if (!rc) rc = run_program(e, n, &c->binding, in, c->n_inputs, vals, &err);
  free(in);
  if (!c->regions) exec_free(e);
  return rc ? tp_fail_with(c, at, &err) : UOPC_OK;
}

int tp_region_open(tp_ctx *c, tp_site at) {
  if (c->error.code) return c->error.code;
  /* A graph the cache did not take is kept to the end: sizes the model holds point into it. */
  if (!c->g_cached && !grow((void **)&c->retired, &c->cap_retired, c->n_retired + 1, sizeof *c->retired))
    return tp_fail(c, at, UOPC_E_NOMEM, "out of memory");
  if (!c->g_cached) c->retired[c->n_retired++] = c->g;
  c->g = NULL;
  c->g_cached = 0;
  uopc_error err = {0};
  if (ir_graph_new(&c->g, &err)) return tp_fail_with(c, at, &err);
  c->region++;
  c->n_inputs = 0;
  return UOPC_OK;
}

int tp_region_read(tp_ctx *c, tp_tensor *t, tp_site at) {
  if (c->error.code) return c->error.code;
  if (!t || !t->value.storage) return tp_fail(c, at, UOPC_E_INVALID, "tp_region_read of a handle without a value");
  const sym_expr *shape[UOPC_MAX_RANK];
  for (int a = 0; a < t->ref->rank; a++) shape[a] = sym_expr_copy(ir_graph_arena(c->g), t->ref->shape[a]);
  char name[SYM_NAME_MAX];
  snprintf(name, sizeof name, "v%d", t->id);
  const ir_node *in = ir_input(c->g, name, t->value.dtype, t->ref->rank, shape);
  if (!in) return tp_fail_with(c, at, ir_graph_error(c->g));
  t->ref = t->node = in;
  t->region = c->region;
  return tp_ctx_add_input(c, in, &t->value) ? tp_fail(c, at, UOPC_E_NOMEM, "out of memory") : UOPC_OK;
}

/* ---- Tracing a call. */

static int trace(tp_compiled *f, const sym_binding *b, const uopc_tensor *const *in, uopc_tensor *out,
                 uopc_tensor *grads, uopc_error *err) {
  tp_ctx c;
  int rc = tp_ctx_init(&c, TP_TRACE, err);
  if (rc) return rc;
  c.strict = f->opts.strict;
  c.regions = &f->regions;
  c.opts = f->opts.program;
  c.binding = *b;
  tp_tensor *args[f->n_in + 1], *outs[f->n_out + 1], *wrt[f->n_in + 1], *gr[f->n_in + 1];
  tp_site here = {"tp_call", 0};
  for (int k = 0; k < f->n_in && !c.error.code; k++) {
    const sym_expr *shape[UOPC_MAX_RANK];
    for (int a = 0; a < f->args[k].rank; a++) shape[a] = sym_expr_copy(ir_graph_arena(c.g), f->args[k].shape[a]);
    const ir_node *node = ir_input(c.g, f->args[k].name, f->args[k].dtype, f->args[k].rank, shape);
    if (!node) tp_fail_with(&c, here, ir_graph_error(c.g));
    else args[k] = tp_input_handle(&c, node, in[k], here);
  }
  memset(outs, 0, sizeof outs);
  uopc_counter_add(TP_C_TRACES, 1);
  if (!c.error.code) f->model(&c, args, outs, f->user);
  for (int k = 0; k < f->n_out && !c.error.code; k++)
    if (!outs[k]) tp_fail(&c, here, UOPC_E_INVALID, "the model left output %d unset", k);
  int n_wrt = 0;
  for (int k = 0; k < f->n_in; k++)
    if (f->opts.grad_inputs >> k & 1u) wrt[n_wrt++] = args[k];
  if (!c.error.code && n_wrt) tp_backward_at(&c, outs[0], wrt, n_wrt, gr, outs[0]->at);   /* its errors name the loss's line */
  if (c.error.code) {
    *err = c.error;
    tp_ctx_fini(&c);
    return err->code;
  }
  f->traced++;
  if (c.breaks) {                  /* run what is left; the trace is not kept */
    uopc_error cerr = {0};
    rc = tp_student(&c, here, tp_region_close(&c, here, &cerr), &cerr);
    for (int k = 0; k < f->n_out && !rc; k++)   /* a tp_region_close that left one out */
      if (!outs[k]->value.storage) rc = tp_fail(&c, here, UOPC_E_INVALID, "output %d has no value after the last region ran", k);
    if (rc) *err = c.error;
    for (int k = 0; k < f->n_out && !rc; k++) uopc_tensor_retain(&out[k], &outs[k]->value);
    tp_ctx_fini(&c);
    return rc;
  }
  if (f->n_variants == TP_VARIANTS_MAX) {
    tp_ctx_fini(&c);
    return UOPC_FAIL(err, UOPC_E_LIMIT, "no variant's guards hold for this call and %d variants exist (the limit):"
                     " the model's shape branches take too many paths", TP_VARIANTS_MAX);
  }
  tp_variant *v = &f->variants[f->n_variants];
  const ir_node *nodes[f->n_out + n_wrt + 1];
  for (int k = 0; k < f->n_out; k++) nodes[k] = outs[k]->ref;
  for (int k = 0; k < n_wrt; k++) nodes[f->n_out + k] = gr[k]->ref;
  char entry[48];
  snprintf(entry, sizeof entry, "tp_forward_v%d", f->n_variants);
  rc = exec_new(&v->forward, c.g, nodes, f->n_out, entry, f->opts.program, err);
  snprintf(entry, sizeof entry, "tp_backward_v%d", f->n_variants);
  if (!rc && n_wrt) rc = exec_new(&v->backward, c.g, nodes + f->n_out, n_wrt, entry, f->opts.program, err);
  if (!rc && c.n_guards && !(v->guards = malloc((size_t)c.n_guards * sizeof *v->guards)))
    rc = UOPC_FAIL(err, UOPC_E_NOMEM, "tp: out of memory");
  if (rc) {
    exec_free(v->forward), exec_free(v->backward);
    free(v->guards);
    memset(v, 0, sizeof *v);
    tp_ctx_fini(&c);
    return rc;
  }
  if (c.n_guards) memcpy(v->guards, c.guards, (size_t)c.n_guards * sizeof *v->guards);
  v->n_guards = c.n_guards;
  v->graph = c.g;                  /* the variant keeps the trace's graph (and its guards' expressions) */
  c.g = NULL;
  f->n_variants++;
  uopc_counter_add(TP_C_VARIANTS, 1);
  if (f->n_variants > 1) uopc_counter_add(TP_C_RECOMPILATIONS, 1);
  tp_ctx_fini(&c);
  return run_variant(f, v, b, in, out, grads, err);
}

static int call_bound(tp_compiled *f, const sym_binding *b, const uopc_tensor *const *in, uopc_tensor *out,
                      uopc_tensor *grads, uopc_error *err) {
  for (int k = 0; k < f->n_variants; k++) {
    int holds = 0;
    int rc = tp_variant_holds(&f->variants[k], b, &holds, err);
    if (rc) return rc;
    if (holds) return run_variant(f, &f->variants[k], b, in, out, grads, err);
    uopc_counter_add(TP_C_GUARD_FAILURES, 1);
  }
  return trace(f, b, in, out, grads, err);
}

int tp_call(tp_compiled *f, const uopc_tensor *const *in, uopc_tensor *out, uopc_tensor *grads, uopc_error *err) {
  if (!f || !out || (f->n_grads && !grads)) return UOPC_FAIL(err, UOPC_E_INVALID, "tp_call: NULL function or outputs");
  sym_binding b;
  int rc = bind_args(f, in, &b, err);
  if (rc) return rc;
  /* The variants take contiguous inputs: a strided argument is read through a packed copy. */
  uopc_tensor packed[f->n_in + 1];
  const uopc_tensor *args[f->n_in + 1];
  memset(packed, 0, sizeof packed);
  int n = 0;
  for (; n < f->n_in && !rc; n++) {
    rc = tp_contiguous(&packed[n], in[n], err);
    args[n] = &packed[n];
  }
  if (!rc) rc = call_bound(f, &b, args, out, grads, err);
  for (int k = 0; k < n; k++) uopc_tensor_release(&packed[k]);
  return rc;
}

/* ---- One capture (tp_compile.h): trace's first half, for tensorjit. */

static const ir_node *declare(tp_ctx *c, const tp_input_decl *d) {
  sym_arena *ar = ir_graph_arena(c->g);
  const sym_expr *shape[UOPC_MAX_RANK], *strides[UOPC_MAX_RANK];
  int strided = 0;
  for (int a = 0; a < d->rank && a < UOPC_MAX_RANK; a++) {
    shape[a] = sym_expr_copy(ar, d->shape[a]);
    strides[a] = d->strides[a] ? sym_expr_copy(ar, d->strides[a]) : NULL;
    strided |= strides[a] != NULL;
  }
  return strided ? ir_input_view(c->g, d->name, d->dtype, d->rank, shape, strides, NULL)
                 : ir_input(c->g, d->name, d->dtype, d->rank, shape);
}

/* The context's graph, outputs and guards moved into cap. */
static int keep_capture(tp_ctx *c, tp_capture *cap, tp_tensor *const *outs, int n_out, uopc_error *err) {
  cap->outputs = malloc((size_t)n_out * sizeof *cap->outputs);
  cap->guards = c->n_guards ? malloc((size_t)c->n_guards * sizeof *cap->guards) : NULL;
  if (!cap->outputs || (c->n_guards && !cap->guards)) return UOPC_FAIL(err, UOPC_E_NOMEM, "tp: out of memory");
  for (int k = 0; k < n_out; k++) cap->outputs[k] = outs[k]->ref;
  if (c->n_guards) memcpy(cap->guards, c->guards, (size_t)c->n_guards * sizeof *cap->guards);
  cap->n_outputs = n_out;
  cap->n_guards = c->n_guards;
  cap->graph = c->g;           /* the guards' expressions live in its arena */
  c->g = NULL;
  cap->callouts = c->callouts, cap->n_callouts = c->n_callouts;   /* their nodes are the graph's */
  c->callouts = NULL, c->n_callouts = 0;
  return UOPC_OK;
}

/* The inputs declared by decl, with their values, and the model run on them
 * into outs[0 .. n_out); an error (the model's, naming its line) is c's. */
static void run_declared(tp_ctx *c, tp_model model, void *user, const tp_input_decl *decl,
                         const uopc_tensor *const *values, int n_in, tp_tensor **outs, int n_out, tp_site here) {
  tp_tensor *args[n_in + 1];
  memset(outs, 0, (size_t)n_out * sizeof *outs);
  for (int k = 0; k < n_in && !c->error.code; k++) {
    const ir_node *node = declare(c, &decl[k]);
    if (!node) tp_fail_with(c, here, ir_graph_error(c->g));
    else args[k] = tp_input_handle(c, node, values[k], here);
  }
  if (!c->error.code) model(c, args, outs, user);
  for (int k = 0; k < n_out && !c->error.code; k++)
    if (!outs[k]) tp_fail(c, here, UOPC_E_INVALID, "the model left output %d unset", k);
}

int tp_capture_run(tp_capture *cap, tp_model model, void *user, const tp_input_decl *decl,
                   const uopc_tensor *const *values, int n_in, int n_out, const sym_binding *b, int unify,
                   uopc_error *err) {
  memset(cap, 0, sizeof *cap);
  if (!model || !b || n_in < 0 || n_in > 30 || n_out < 1 || (n_in && (!decl || !values)))
    return UOPC_FAIL(err, UOPC_E_INVALID, "tp_capture_run: a model, a binding, 0..30 inputs and 1 or more outputs");
  tp_ctx c;
  int rc = tp_ctx_init(&c, TP_TRACE, err);
  if (rc) return rc;
  c.strict = 1;
  c.capture = 1;
  c.unify = unify;
  c.binding = *b;
  tp_tensor *outs[n_out + 1];
  run_declared(&c, model, user, decl, values, n_in, outs, n_out, (tp_site){"tp_capture", 0});
  if (c.error.code) {
    *err = c.error;
    rc = c.error.code;
    cap->need_unify = c.need_unify;
    cap->need = c.need;
    cap->broke = c.refused_break;
    if (c.need_unify && c.need.expr) {   /* the graph's arena goes with c: the expression is copied out */
      int copied = sym_arena_new(&cap->need_arena, err) == UOPC_OK &&
                   (cap->need.expr = sym_expr_copy(cap->need_arena, c.need.expr)) != NULL;
      if (!copied) cap->need_unify = 0, cap->need.expr = NULL, rc = UOPC_FAIL(err, UOPC_E_NOMEM, "tp: out of memory");
    }
  } else rc = keep_capture(&c, cap, outs, n_out, err);
  tp_ctx_fini(&c);
  return rc;
}

void tp_capture_fini(tp_capture *cap) {
  if (!cap) return;
  ir_graph_free(cap->graph);
  free(cap->outputs);
  free(cap->guards);
  free(cap->callouts);
  sym_arena_free(cap->need_arena);
  memset(cap, 0, sizeof *cap);
}

/* ---- A call whose capture stopped at a graph break (tensorjit). */

int tp_region_cache_new(tp_region_cache **out, int max, uopc_error *err) {
  if (max < 1) return UOPC_FAIL(err, UOPC_E_INVALID, "tp_region_cache_new: at most %d programs (needs 1 or more)", max);
  if (!(*out = calloc(1, sizeof **out))) return UOPC_FAIL(err, UOPC_E_NOMEM, "tp: out of memory");
  (*out)->max = max;
  return UOPC_OK;
}

void tp_region_cache_free(tp_region_cache *r) {
  if (!r) return;
  regions_fini(r);
  free(r);
}

int tp_run_breaking(tp_region_cache *regions, tp_model model, void *user, const tp_input_decl *decl,
                    const uopc_tensor *const *values, int n_in, int n_out, const sym_binding *b,
                    const uopc_program_options *opts, uopc_tensor *out, uopc_error *err) {
  if (!regions || !model || !b || !out || n_in < 0 || n_in > 30 || n_out < 1 || (n_in && (!decl || !values)))
    return UOPC_FAIL(err, UOPC_E_INVALID, "tp_run_breaking: a region cache, a model, a binding, 0..30 inputs and 1"
                     " or more outputs");
  tp_ctx c;
  int rc = tp_ctx_init(&c, TP_TRACE, err);
  if (rc) return rc;
  c.items_break = 1;   /* an input's value read in a region would be baked into its program */
  c.regions = regions;
  c.opts = opts;
  c.binding = *b;
  tp_tensor *outs[n_out + 1];
  tp_site here = {"tp_run_breaking", 0};
  uopc_counter_add(TP_C_TRACES, 1);
  run_declared(&c, model, user, decl, values, n_in, outs, n_out, here);
  if (!c.error.code) {   /* the last region (the only one, if this call did not break) */
    uopc_error cerr = {0};
    tp_student(&c, here, tp_region_close(&c, here, &cerr), &cerr);
  }
  for (int k = 0; k < n_out && !c.error.code; k++)
    if (!outs[k]->value.storage) tp_fail(&c, here, UOPC_E_INVALID, "output %d has no value after the last region ran", k);
  rc = c.error.code;
  if (rc) *err = c.error;
  for (int k = 0; k < n_out && !rc; k++) uopc_tensor_retain(&out[k], &outs[k]->value);
  tp_ctx_fini(&c);
  return rc;
}

int tp_run_eager(tp_model model, void *user, const uopc_tensor *const *in, int n_in, int n_out, unsigned grad_inputs,
                 uopc_tensor *out, uopc_tensor *grads, uopc_error *err) {
  if (!model || n_in < 0 || n_in > 30 || n_out < 1 || !out) return UOPC_FAIL(err, UOPC_E_INVALID, "tp_run_eager: bad arguments");
  tp_ctx *c;
  int rc = tp_ctx_new_eager(&c, err);
  if (rc) return rc;
  tp_tensor *args[n_in + 1], *outs[n_out + 1], *wrt[n_in + 1], *gr[n_in + 1];
  memset(outs, 0, sizeof outs);
  for (int k = 0; k < n_in; k++) args[k] = tp_wrap(c, in[k]);
  if (!c->error.code) model(c, args, outs, user);
  tp_site here = {"tp_run_eager", 0};
  for (int k = 0; k < n_out && !c->error.code; k++)
    if (!outs[k]) tp_fail(c, here, UOPC_E_INVALID, "the model left output %d unset", k);
  int n_wrt = 0;
  for (int k = 0; k < n_in; k++)
    if (grad_inputs >> k & 1u) wrt[n_wrt++] = args[k];
  if (!c->error.code && n_wrt) tp_backward_at(c, outs[0], wrt, n_wrt, gr, outs[0]->at);
  if (c->error.code) {
    *err = c->error;
    tp_ctx_free(c);
    return err->code;
  }
  for (int k = 0; k < n_out; k++) uopc_tensor_retain(&out[k], &outs[k]->value);
  for (int k = 0; k < n_wrt; k++) uopc_tensor_retain(&grads[k], &gr[k]->value);
  tp_ctx_free(c);
  return UOPC_OK;
}
