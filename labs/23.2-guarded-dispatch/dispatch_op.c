/* dispatch_op.c: the dispatcher as an instance of the variant cache (lab
 * 23.2, given code). The operation's graph, the hooks that give the cache
 * this dispatcher's steps (your dispatch_select and dispatch_on_miss, and
 * the contract, kernels and run of a fast or generic variant), the argument
 * checks no variant can waive, and the calls. Chapter 23.2, "The
 * dispatcher". */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "dispatch.h"

enum { SLOT_FAST, SLOT_GENERIC };
_Static_assert((int)DISPATCH_LIMIT_RUN_GENERIC == (int)VCACHE_LIMIT_GENERAL &&
               (int)DISPATCH_LIMIT_FAIL == (int)VCACHE_LIMIT_FAIL, "the policies are the cache's");

const char *dispatch_path_name(dispatch_path p) {
  return p == DISPATCH_PATH_FAST ? "fast path" : p == DISPATCH_PATH_GENERIC ? "generic" : "none";
}

dispatch_path dispatch_last_path(const dispatcher *d) {
  int k = d->cache.last.chosen;
  return k >= 0 ? dispatch_variant_path(d->cache.variants[k]) : DISPATCH_PATH_NONE;
}

int dispatch_fast_count(const dispatcher *d) { return vcache_n_specialised(&d->cache); }

dispatch_variant *dispatch_generic(const dispatcher *d) {
  return d->cache.n_general ? d->cache.variants[d->cache.count - 1] : NULL;
}

/* ---- Keys and contracts. */

int dispatch_variant_key(const dispatcher *d, dispatch_path path, int64_t exact_n, spec_key *key,
                         uopc_error *err) {
  spec_key_parts p = d->cache.base;   /* op, target, numerics, compiler */
  p.graph_hash = spec_key_graph_hash(&d->graph, d->op);
  snprintf(p.dtypes, sizeof p.dtypes, "out:f32 x:f32");
  if (path == DISPATCH_PATH_FAST) {
    snprintf(p.layout, sizeof p.layout, "contiguous aligned%d disjoint", VARIANT_ALIGN);
    if (exact_n) snprintf(p.constraints, sizeof p.constraints, "n==%" PRId64, exact_n);
    else snprintf(p.constraints, sizeof p.constraints, "n in [%" PRId64 ", %" PRId64 "] n%%%d==0", d->n.lo, d->n.hi,
                  VARIANT_LANES);
  } else {
    snprintf(p.layout, sizeof p.layout, "strided any-alignment");
    snprintf(p.constraints, sizeof p.constraints, "n in [%" PRId64 ", %" PRId64 "]", d->n.lo, d->n.hi);
  }
  return spec_key_compose(&p, key, err);
}

int dispatch_generic_guards(const dispatcher *d, guard_set *s, uopc_error *err) {
  static const char *const names[] = {"out", "x"};
  const guard_site n = {DISPATCH_ARG_X, GUARD_SHAPE, 0}, out_n = {DISPATCH_ARG_OUT, GUARD_SHAPE, 0};
  int rc = guard_set_init(s, DISPATCH_N_ARGS, names, err);
  if (!rc) rc = guard_set_add_rank(s, DISPATCH_ARG_X, 1, err);
  if (!rc) rc = guard_set_add_rank(s, DISPATCH_ARG_OUT, 1, err);
  if (!rc) rc = guard_set_add_bounds(s, &d->n, n, err);
  if (!rc) rc = guard_set_add_equal(s, out_n, n, err);
  if (!rc) rc = guard_set_add_dtype(s, DISPATCH_ARG_X, UOPC_F32, err);
  if (!rc) rc = guard_set_add_dtype(s, DISPATCH_ARG_OUT, UOPC_F32, err);
  return rc;
}

/* ---- The argument checks: what no variant can serve is an error, not a
 * guard failure. A call a fast variant serves has passed them all in its
 * guards; every other call reaches the miss, which checks them first. */

/* The bytes a rank-1 f32 view reaches from element 0 at p (uopc/layout.h). */
static uopc_layout_bytes vector_range(const guard_view *t, uintptr_t p) {
  return uopc_layout_byte_range(1, t->shape, t->strides, 4, (const void *)p);
}

static int check_args(const dispatcher *d, const guard_call *c, uopc_error *err) {
  const guard_view *out = &c->args[DISPATCH_ARG_OUT], *x = &c->args[DISPATCH_ARG_X];
  if (x->rank != 1 || out->rank != 1)
    return UOPC_FAIL(err, UOPC_E_INVALID, "x and out must be vectors (rank 1), got ranks %d and %d", x->rank,
                     out->rank);
  if (x->dtype != UOPC_F32 || out->dtype != UOPC_F32)
    return UOPC_FAIL(err, UOPC_E_DTYPE, "x has dtype %s and out %s; %s takes f32 only", uopc_dtype_name(x->dtype),
                     uopc_dtype_name(out->dtype), d->op_name);
  if (out->shape[0] != x->shape[0])
    return UOPC_FAIL(err, UOPC_E_INVALID, "out has length %" PRId64 " but x has %" PRId64, out->shape[0],
                     x->shape[0]);
  if (x->shape[0] < d->n.lo || x->shape[0] > d->n.hi) {
    int rc = sym_dim_check(&d->n, x->shape[0], err);
    return rc ? rc : UOPC_FAIL(err, UOPC_E_BOUNDS, "n = %" PRId64 " outside [%" PRId64 ", %" PRId64 "]",
                               x->shape[0], d->n.lo, d->n.hi);
  }
  int same = c->data[DISPATCH_ARG_X] == c->data[DISPATCH_ARG_OUT] && x->strides[0] == out->strides[0];
  if (!same && uopc_layout_overlap(vector_range(x, c->data[DISPATCH_ARG_X]),
                                   vector_range(out, c->data[DISPATCH_ARG_OUT])))
    return UOPC_FAIL(err, UOPC_E_ALIAS, "out partly overlaps x; pass x itself (in place) or a disjoint buffer");
  return UOPC_OK;
}

/* ---- The hooks: this dispatcher's steps in the cache. */

static int hook_select(void *ctx, vcache *c, const guard_call *call, int *index, uopc_error *err) {
  (void)c;
  return dispatch_select(ctx, call, index, err);
}

static int hook_on_miss(void *ctx, vcache *c, const guard_call *call, vcache_variant **out, uopc_error *err) {
  (void)c;
  int rc = check_args(ctx, call, err);
  return rc ? rc : dispatch_on_miss(ctx, call, out, err);
}

static int hook_explain(void *ctx, const vcache *c, char *buf, size_t size, uopc_error *err) {
  (void)c;
  return dispatch_explain(ctx, buf, size, err);
}

/* `make break LAB=23.2 GUARD=...` and the grader's experiment compile this
 * file with one of these macros (tests/student/guards.txt): a fast variant
 * then lacks that guard, whatever your dispatch_fast16_guards wrote, and
 * your tests/student/23.2/test_my_guard.c must notice the wrong dispatch.
 * Never defined in a normal build. */
static int removed_by_experiment(const guard *g) {
#ifdef DISPATCH_NO_DIVISIBILITY_GUARD
  if (g->kind == GUARD_DIVISIBLE) return 1;
#endif
#ifdef DISPATCH_NO_ALIGNMENT_GUARD
  if (g->kind == GUARD_ALIGNED) return 1;
#endif
#ifdef DISPATCH_NO_OUT_CONTIGUITY_GUARD
  if (g->kind == GUARD_CONTIGUOUS && g->arg == DISPATCH_ARG_OUT) return 1;
#endif
  (void)g;
  return 0;
}

static void remove_experiment_guards(guard_set *s) {
  int kept = 0;
  for (int i = 0; i < s->count; i++)
    if (!removed_by_experiment(&s->guards[i])) s->guards[kept++] = s->guards[i];
  s->count = kept;
}

/* A variant's contract: your fast guards (exactly v->param when not 0) or
 * the generic ones, and its key. */
static int hook_contract(void *ctx, const vcache *c, vcache_variant *v, uopc_error *err) {
  (void)c;
  const dispatcher *d = ctx;
  int rc = v->general ? dispatch_generic_guards(d, &v->guards, err) : dispatch_fast16_guards(d, v->param, &v->guards, err);
  if (!rc && !v->general) remove_experiment_guards(&v->guards);
  return rc ? rc : dispatch_variant_key(d, dispatch_variant_path(v), v->param, &v->key, err);
}

/* A variant's kernel: its source (your variant_codegen_fast16, or the
 * generic one), compiled or found on disk. */
static int hook_compile(void *ctx, const vcache *c, vcache_variant *v, uopc_error *err) {
  const dispatcher *d = ctx;
  variant_spec spec = {&d->graph, d->op, d->op_name, &d->n, v->param, &v->guards, &v->key};
  variant_source src;
  int rc = v->general ? variant_codegen_generic(&src, &spec, err) : variant_codegen_fast16(&src, &spec, err);
  if (rc) return rc;
  snprintf(v->entry, sizeof v->entry, "%s", src.entry);
  rc = uopc_program_new(&v->program, src.text.data, src.entry, src.signature, &c->opts.program, err);
  variant_source_fini(&src);
  return rc;
}

/* The kernel on the recorded call (out, x, n, then the generic's strides),
 * and its path counted. */
static int hook_run(void *ctx, vcache_variant *v, const guard_call *call, uopc_error *err) {
  (void)err;
  dispatcher *d = ctx;
  void *out = (void *)call->data[DISPATCH_ARG_OUT], *x = (void *)call->data[DISPATCH_ARG_X];
  int64_t n = call->args[DISPATCH_ARG_X].shape[0];
  int64_t os = call->args[DISPATCH_ARG_OUT].strides[0], xs = call->args[DISPATCH_ARG_X].strides[0];
  void *args[] = {&out, &x, &n, &os, &xs};
  uopc_program_call(v->program, args);
  int generic = v->general;
  if (generic) d->stats.generic_calls++;
  else d->stats.fast_calls++;
  uopc_counter_bump(d->slots[generic ? SLOT_GENERIC : SLOT_FAST], 1);
  return UOPC_OK;
}

/* ---- Lifecycle. */

static int check_options(const dispatch_options *o, uopc_error *err) {
  if (o->max_length < 1 || o->max_length > INT32_MAX)
    return UOPC_FAIL(err, UOPC_E_INVALID, "max_length = %" PRId64 " outside [1, %d]", o->max_length, INT32_MAX);
  if (o->max_variants < 1 || o->max_variants > DISPATCH_MAX_VARIANTS)
    return UOPC_FAIL(err, UOPC_E_INVALID, "max_variants = %d outside [1, %d]", o->max_variants,
                     DISPATCH_MAX_VARIANTS);
  if (o->on_limit != DISPATCH_LIMIT_RUN_GENERIC && o->on_limit != DISPATCH_LIMIT_FAIL)
    return UOPC_FAIL(err, UOPC_E_INVALID, "on_limit = %d is not a dispatch_on_limit", (int)o->on_limit);
  return UOPC_OK;
}

/* out = x*x + 1 over (n), as a lab 23.1 graph. */
static int build_graph(dispatcher *d, uopc_error *err) {
  const sym_expr *shape[1] = {sym_expr_dim(d->arena, &d->n)};
  if (!shape[0]) return UOPC_FAIL(err, UOPC_E_NOMEM, "no memory for the graph's shape");
  const kernel_node *x, *sq, *one;
  kernel_graph_init(&d->graph, d->arena);
  int rc = kernel_input(&d->graph, "x", UOPC_F32, 1, shape, &x, err);
  if (!rc) rc = kernel_binary(&d->graph, KERNEL_MUL, x, x, &sq, err);
  if (!rc) rc = kernel_scalar(&d->graph, 1.0f, &one, err);
  if (!rc) rc = kernel_binary(&d->graph, KERNEL_ADD, sq, one, &d->op, err);
  return rc;
}

/* The cache this dispatcher is: one output and one input, its steps as hooks. */
static int init_cache(dispatcher *d, uopc_error *err) {
  vcache_options o = {.op = d->op_name, .n_inputs = 1, .n_outputs = 1, .inputs = {"x"}, .outputs = {"out"},
                      .ctx = d, .program = d->opts.program,
                      .hooks = {.select = hook_select, .on_miss = hook_on_miss, .contract = hook_contract,
                                .compile = hook_compile, .run = hook_run, .explain = hook_explain},
                      .policy = {.max_variants = d->opts.max_variants, .on_limit = (vcache_on_limit)d->opts.on_limit}};
  return vcache_init(&d->cache, &o, err);
}

int dispatch_init(dispatcher *d, const dispatch_options *opts, uopc_error *err) {
  memset(d, 0, sizeof *d);
  if (opts) d->opts = *opts;
  if (!d->opts.max_length) d->opts.max_length = DISPATCH_DEFAULT_MAX_LENGTH;
  if (!d->opts.max_variants) d->opts.max_variants = DISPATCH_DEFAULT_MAX_VARIANTS;
  int rc = check_options(&d->opts, err);
  if (rc) return rc;
  /* The numerical policy reaches the compiler only through these flags. */
  d->opts.program.opt_flags = d->opts.fast_math ? "-O3 -ffast-math" : "-O3";
  snprintf(d->op_name, sizeof d->op_name, "square_plus_one");
  rc = sym_dim_init(&d->n, "n", 1, d->opts.max_length, 1, err);
  if (!rc) rc = sym_arena_new(&d->arena, err);
  if (!rc) rc = build_graph(d, err);
  if (!rc) rc = init_cache(d, err);
  if (rc) { dispatch_fini(d); return rc; }
  static const char *const names[] = {DISPATCH_C_FAST_CALLS, DISPATCH_C_GENERIC_CALLS};
  for (int k = 0; k < 2; k++) d->slots[k] = uopc_counter_slot(names[k]);
  return UOPC_OK;
}

void dispatch_fini(dispatcher *d) {
  vcache_fini(&d->cache);
  sym_arena_free(d->arena);
  d->arena = NULL;
}

/* ---- Calls. */

int dispatch_call(dispatcher *d, const uopc_tensor *x, uopc_tensor *out, uopc_error *err) {
  uopc_tensor *outs[1] = {out};
  const uopc_tensor *ins[1] = {x};
  return vcache_call(&d->cache, outs, 1, ins, 1, err);
}

int dispatch_choose(dispatcher *d, const uopc_tensor *x, uopc_tensor *out, dispatch_choice *c,
                    uopc_error *err) {
  uopc_tensor *outs[1] = {out};
  const uopc_tensor *ins[1] = {x};
  dispatch_variant *v;
  int rc = vcache_choose(&d->cache, outs, 1, ins, 1, &v, err);
  if (rc) return rc;
  c->variant = v;
  c->path = dispatch_variant_path(v);
  c->call = &d->cache.last.call;
  return UOPC_OK;
}

int dispatch_run(dispatcher *d, const dispatch_choice *c, uopc_error *err) {
  return vcache_run(&d->cache, c->variant, err);
}
