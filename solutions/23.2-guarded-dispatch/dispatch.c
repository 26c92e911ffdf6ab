/* dispatch.c: a guarded dispatcher for one operation (lab 23.2).
 * dispatch_choose decides and counts; dispatch_run runs. A kernel runs only
 * when its own guard set held for the call: a selected variant has just
 * passed its check, and a variant handed out by dispatch_on_miss is checked
 * again before it is used. Chapter 23.2, "The dispatcher". */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dispatch.h"

enum { SLOT_VARIANTS_BUILT, SLOT_CHECKS, SLOT_FAILURES, SLOT_FAST, SLOT_GENERIC };

const char *dispatch_path_name(dispatch_path p) {
  return p == DISPATCH_PATH_FAST ? "fast path" : p == DISPATCH_PATH_GENERIC ? "generic" : "none";
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

/* The parts of every key that no call changes. */
static void base_parts(dispatcher *d) {
  spec_key_parts *p = &d->base;
  const char *cc = d->opts.program.compiler ? d->opts.program.compiler : getenv("UOPC_CC");
  snprintf(p->op, sizeof p->op, "%s", d->op_name);
  p->graph_hash = spec_key_graph_hash(&d->graph, d->op);
  spec_key_target(p->target, sizeof p->target);
  snprintf(p->dtypes, sizeof p->dtypes, "out:f32 x:f32");
  snprintf(p->numerics, sizeof p->numerics, "%s", d->opts.fast_math ? "fast-math" : "ieee fp-contract=off");
  snprintf(p->compiler, sizeof p->compiler, "%s %s%s", cc && cc[0] ? cc : "gcc", d->opts.program.opt_flags,
           d->opts.program.march_native ? " -march=native" : "");
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
  if (rc) { dispatch_fini(d); return rc; }
  base_parts(d);
  static const char *const names[] = {DISPATCH_C_VARIANTS_BUILT, DISPATCH_C_GUARD_CHECKS, DISPATCH_C_GUARD_FAILURES,
                                      DISPATCH_C_FAST_CALLS, DISPATCH_C_GENERIC_CALLS};
  for (int k = 0; k < 5; k++) d->slots[k] = uopc_counter_slot(names[k]);
  d->last.chosen = -2;
  d->index.usable = 1;
  d->trace = uopc_debug_level() >= 3;
  return UOPC_OK;
}

/* UOPC_DEBUG=3: the decision just made, in explain's words. */
static void trace_decision(const dispatcher *d) {
  char text[DISPATCH_EXPLAIN_MAX];
  if (dispatch_explain(d, text, sizeof text, NULL) != UOPC_OK) return;
  size_t n = strlen(text);
  while (n > 0 && text[n - 1] == '\n') text[--n] = '\0';
  uopc_debug(3, "%s", text);
}

static void variant_free(dispatch_variant *v) {
  if (!v) return;
  uopc_program_free(v->program);
  guard_plan_fini(&v->plan);
  guard_set_fini(&v->guards);
  free(v);
}

void dispatch_fini(dispatcher *d) {
  for (int k = 0; k < d->count; k++) variant_free(d->fast[k]);
  variant_free(d->generic);
  sym_arena_free(d->arena);
  d->arena = NULL;
  d->count = 0;
  d->generic = NULL;
  memset(&d->index, 0, sizeof d->index);
}

/* ---- Keys and variants. */

int dispatch_variant_key(const dispatcher *d, dispatch_path path, int64_t exact_n,
                         spec_key *key, uopc_error *err) {
  spec_key_parts p = d->base;
  if (path == DISPATCH_PATH_FAST) {
    snprintf(p.layout, sizeof p.layout, "contiguous aligned%d disjoint", VARIANT_ALIGN);
    if (exact_n) snprintf(p.constraints, sizeof p.constraints, "n==%" PRId64, exact_n);
    else snprintf(p.constraints, sizeof p.constraints, "n in [%" PRId64 ", %" PRId64 "] n%%%d==0",
                  d->n.lo, d->n.hi, VARIANT_LANES);
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

/* Guards, plan, key, source and program of a new variant. */
static int make_variant(dispatcher *d, dispatch_variant *v, uopc_error *err) {
  int rc = v->path == DISPATCH_PATH_FAST ? dispatch_fast16_guards(d, v->exact_n, &v->guards, err)
                                         : dispatch_generic_guards(d, &v->guards, err);
  if (!rc) rc = guard_plan_compile(&v->plan, &v->guards, err);
  if (!rc) rc = dispatch_variant_key(d, v->path, v->exact_n, &v->key, err);
  if (rc) return rc;
  variant_spec spec = {&d->graph, d->op, d->op_name, &d->n, v->exact_n, &v->guards, &v->key};
  variant_source src;
  rc = v->path == DISPATCH_PATH_FAST ? variant_codegen_fast16(&src, &spec, err)
                                     : variant_codegen_generic(&src, &spec, err);
  if (rc) return rc;
  snprintf(v->entry, sizeof v->entry, "%s", src.entry);
  rc = uopc_program_new(&v->program, src.text.data, src.entry, src.signature, &d->opts.program, err);
  variant_source_fini(&src);
  return rc;
}

/* ---- The exact-length index (dispatch.h, dispatch_index).
 *
 * Why it gives the ordered scan's answer. Say fast variant v pins
 * args[arg].shape[axis] to p_v: its set holds a bounds guard [p_v, p_v], which
 * fails on a call whose value m differs from p_v, or whose args[arg] lacks the
 * axis; then v's whole set fails, in the plan as in guard_set_check. The p_v
 * are distinct (a second variant for one value retires the index). So on a
 * call with value m, every variant fails but the one variant c with p_c = m,
 * if there is one. The scan rejects every variant before c, then returns c if
 * c's guards hold; otherwise, or with no c, it rejects them all and returns
 * -1. The index checks c alone and returns the same, and it counts the same
 * checks and failures: a variant it passes over is one whose pinned guard it
 * has found failing, by the lookup. tests/23.2 compares the two on random
 * call sequences. */

enum { INDEX_MASK = DISPATCH_INDEX_SLOTS - 1 };
_Static_assert((DISPATCH_INDEX_SLOTS & INDEX_MASK) == 0 && DISPATCH_INDEX_SLOTS >= 2 * DISPATCH_MAX_VARIANTS,
               "a power of two with room to probe");

static unsigned index_slot(int64_t value) {   /* Fibonacci hashing: the top six bits */
  return (unsigned)(((uint64_t)value * UINT64_C(0x9E3779B97F4A7C15)) >> 58) & INDEX_MASK;
}

/* The extent s pins, through its first range guard [p, p] on a shape; 0 when none. */
static int pinned_dim(const guard_set *s, int *arg, int *axis, int64_t *value) {
  for (int k = 0; k < s->count; k++) {
    const guard *g = &s->guards[k];
    if (g->kind != GUARD_RANGE || g->lo != g->hi || g->site.field != GUARD_SHAPE) continue;
    *arg = g->site.arg, *axis = g->site.axis, *value = g->lo;
    return 1;
  }
  return 0;
}

/* Adds fast variant k; a variant that pins no dim, another dim than the
 * others, or a value already taken retires the index (calls then scan). */
static void index_add(dispatch_index *ix, const dispatch_variant *v, int k) {
  int arg, axis;
  int64_t value;
  if (!ix->usable) return;
  ix->usable = v->guards.n_args == DISPATCH_N_ARGS && pinned_dim(&v->guards, &arg, &axis, &value) &&
               (ix->entries == 0 || (arg == ix->arg && axis == ix->axis));
  if (!ix->usable) return;
  unsigned s = index_slot(value);
  while (ix->variant[s] && ix->value[s] != value) s = (s + 1) & INDEX_MASK;
  if (ix->variant[s]) { ix->usable = 0; return; }
  ix->arg = arg, ix->axis = axis;
  ix->value[s] = value;
  ix->variant[s] = (uint8_t)(k + 1);
  ix->entries++;
}

/* The only fast variant that can hold for call, or -1. */
static inline __attribute__((always_inline)) int index_find(const dispatch_index *ix, const guard_call *call) {
  const guard_view *t = &call->args[ix->arg];
  if (ix->axis >= t->rank) return -1;
  int64_t m = t->shape[ix->axis];
  for (unsigned s = index_slot(m); ix->variant[s]; s = (s + 1) & INDEX_MASK)
    if (ix->value[s] == m) return ix->variant[s] - 1;
  return -1;
}

int dispatch_build(dispatcher *d, dispatch_path path, int64_t exact_n, dispatch_variant **out,
                   uopc_error *err) {
  if (path == DISPATCH_PATH_FAST && d->count == DISPATCH_MAX_VARIANTS)
    return UOPC_FAIL(err, UOPC_E_LIMIT, "a dispatcher holds at most %d fast variants", DISPATCH_MAX_VARIANTS);
  if (path == DISPATCH_PATH_GENERIC && d->generic) { *out = d->generic; return UOPC_OK; }
  dispatch_variant *v = calloc(1, sizeof *v);
  if (!v) return UOPC_FAIL(err, UOPC_E_NOMEM, "no memory for a variant");
  v->path = path;
  v->exact_n = path == DISPATCH_PATH_FAST ? exact_n : 0;
  int rc = make_variant(d, v, err);
  if (rc) { variant_free(v); return rc; }
  if (path == DISPATCH_PATH_FAST) {
    index_add(&d->index, v, d->count);
    d->fast[d->count++] = v;
  } else {
    d->generic = v;
  }
  d->stats.variants_built++;
  uopc_counter_bump(d->slots[SLOT_VARIANTS_BUILT], 1);
  *out = v;
  return UOPC_OK;
}

/* ---- Calls. */

/* The bytes [*lo, *hi) a rank-1 view reaches from element 0 at p. */
static void vector_range(const guard_view *t, uintptr_t p, uintptr_t *lo, uintptr_t *hi) {
  int64_t reach = (t->shape[0] - 1) * t->strides[0] * 4;
  *lo = reach < 0 ? p + (uintptr_t)reach : p;
  *hi = (reach < 0 ? p : p + (uintptr_t)reach) + 4;
}

/* What no variant can serve is an error, not a guard failure. */
static int check_args(const dispatcher *d, const guard_call *c, uopc_error *err) {
  const guard_view *out = &c->args[DISPATCH_ARG_OUT], *x = &c->args[DISPATCH_ARG_X];
  if (x->rank != 1 || out->rank != 1)
    return UOPC_FAIL(err, UOPC_E_INVALID, "x and out must be vectors (rank 1), got ranks %d and %d",
                     x->rank, out->rank);
  if (x->dtype != UOPC_F32 || out->dtype != UOPC_F32)
    return UOPC_FAIL(err, UOPC_E_DTYPE, "x has dtype %s and out %s; %s takes f32 only",
                     uopc_dtype_name(x->dtype), uopc_dtype_name(out->dtype), d->op_name);
  if (out->shape[0] != x->shape[0])
    return UOPC_FAIL(err, UOPC_E_INVALID, "out has length %" PRId64 " but x has %" PRId64,
                     out->shape[0], x->shape[0]);
  if (x->shape[0] < d->n.lo || x->shape[0] > d->n.hi) {
    int rc = sym_dim_check(&d->n, x->shape[0], err);
    return rc ? rc : UOPC_FAIL(err, UOPC_E_BOUNDS, "n = %" PRId64 " outside [%" PRId64 ", %" PRId64 "]",
                               x->shape[0], d->n.lo, d->n.hi);
  }
  uintptr_t x0, x1, o0, o1;
  vector_range(x, c->data[DISPATCH_ARG_X], &x0, &x1);
  vector_range(out, c->data[DISPATCH_ARG_OUT], &o0, &o1);
  int same = c->data[DISPATCH_ARG_X] == c->data[DISPATCH_ARG_OUT] && x->strides[0] == out->strides[0];
  if (!same && x0 < o1 && o0 < x1)
    return UOPC_FAIL(err, UOPC_E_ALIAS, "out partly overlaps x; pass x itself (in place) or a disjoint buffer");
  return UOPC_OK;
}

/* The facts that answer check_args for most calls: two f32 vectors, disjoint. */
#define ARGS_MASK (guard_fact(DISPATCH_ARG_OUT, GUARD_FACT_DTYPE | GUARD_FACT_RANK) | \
                   guard_fact(DISPATCH_ARG_X, GUARD_FACT_DTYPE | GUARD_FACT_RANK))
#define ARGS_FACTS (guard_fact(DISPATCH_ARG_OUT, UOPC_F32 | 1u << 3) | guard_fact(DISPATCH_ARG_X, UOPC_F32 | 1u << 3))

/* check_args, answered from the call's facts when they hold (the ranks, the
 * dtypes and the disjointness it would test again; disjoint views cannot
 * partly overlap); anything else (in place, an error) takes check_args. */
static inline __attribute__((always_inline)) int args_ok(const dispatcher *d, const guard_call *c, uopc_error *err) {
  int64_t n = c->args[DISPATCH_ARG_X].shape[0];
  if ((c->facts & ARGS_MASK) == ARGS_FACTS && (c->apart & guard_pair_bit(DISPATCH_ARG_OUT, DISPATCH_ARG_X)) &&
      c->args[DISPATCH_ARG_OUT].shape[0] == n && n >= d->n.lo && n <= d->n.hi)
    return UOPC_OK;
  return check_args(d, c, err);
}

/* Counts checks and failures, in this dispatcher and the process. */
static inline __attribute__((always_inline)) void count_checks(dispatcher *d, int64_t checks, int64_t failures) {
  d->stats.guard_checks += checks;
  d->stats.guard_failures += failures;
  uopc_counter_bump(d->slots[SLOT_CHECKS], checks);
  if (failures) uopc_counter_bump(d->slots[SLOT_FAILURES], failures);
}

/* A variant from dispatch_on_miss runs only after its own guards held. Its
 * first call is checked by guard_set_check, the reference, and its plan
 * must agree; later calls use the plan. */
static int verify(dispatcher *d, const dispatch_variant *v, const guard_call *call, uopc_error *err) {
  int holds = dispatch_variant_holds(v, call), failed = -1, rc = UOPC_OK;
  if (d->last.built || !holds) rc = guard_set_check(&v->guards, call, &failed, NULL, err);
  if (rc) return rc;
  count_checks(d, 1, !holds);
  if (holds != (failed < 0))
    return UOPC_FAIL(err, UOPC_E_GUARD, "variant %s: guard_set_check finds %s but its compiled guards %s; not run",
                     v->entry, failed < 0 ? "no failing guard" : "a failing guard", holds ? "hold" : "fail");
  if (holds) return UOPC_OK;
  return UOPC_FAIL(err, UOPC_E_GUARD, "variant %s was chosen but its guard '%s' does not hold; not run",
                   v->entry, v->guards.guards[failed].what);
}

/* dispatch_select through the index when it is usable; 1 when it was. */
static inline __attribute__((always_inline)) int index_select(dispatcher *d, const guard_call *call, int *index) {
  if (!d->index.usable) return 0;
  int k = index_find(&d->index, call);
  *index = k >= 0 && dispatch_variant_holds(d->fast[k], call) ? k : -1;
  int checked = *index >= 0 ? k + 1 : d->count;
  count_checks(d, checked, checked - (*index >= 0));
  return 1;
}

int dispatch_index_select(dispatcher *d, const guard_call *call, int *index, uopc_error *err) {
  if (call->count < DISPATCH_N_ARGS)
    return UOPC_FAIL(err, UOPC_E_INVALID, "a call with %d arguments checked against sets over %d", call->count,
                     DISPATCH_N_ARGS);
  if (!index_select(d, call, index))
    return UOPC_FAIL(err, UOPC_E_UNSUPPORTED, "%s: the fast variants pin no common dim to values of their own",
                     d->op_name);
  return UOPC_OK;
}

/* The first half of a call, shared by dispatch_choose and dispatch_call:
 * a new record, the arguments checked, the variant chosen (or built). */
static inline int choose(dispatcher *d, const uopc_tensor *x, uopc_tensor *out, dispatch_variant **chosen,
                         uopc_error *err) {
  dispatch_record *r = &d->last;
  r->number++;
  r->chosen = -2;
  r->n_rejected = r->built = r->limit_hit = 0;
  r->path = DISPATCH_PATH_NONE;
  int rc = guard_call_init_pair(&r->call, out, x, err);
  if (!rc) rc = args_ok(d, &r->call, err);
  int index = -1, count = d->count;
  if (!rc && !index_select(d, &r->call, &index)) rc = dispatch_select(d, &r->call, &index, err);
  if (rc) return rc;
  r->n_rejected = index >= 0 ? index : count;   /* the first that holds wins */
  dispatch_variant *v = index >= 0 ? d->fast[index] : NULL;
  if (!v) {
    rc = dispatch_on_miss(d, &r->call, &v, err);
    if (!rc) rc = verify(d, v, &r->call, err);
    if (rc) return rc;
  }
  r->chosen = v == d->generic ? -1 : index >= 0 ? index : d->count - 1;
  r->path = v->path;
  *chosen = v;
  if (d->trace) trace_decision(d);
  return UOPC_OK;
}

/* The second half: the kernel on the recorded call, and its path counted. */
static inline void run(dispatcher *d, dispatch_variant *v, const guard_call *call) {
  void *out = (void *)call->data[DISPATCH_ARG_OUT], *x = (void *)call->data[DISPATCH_ARG_X];
  int64_t n = call->args[DISPATCH_ARG_X].shape[0];
  int64_t os = call->args[DISPATCH_ARG_OUT].strides[0], xs = call->args[DISPATCH_ARG_X].strides[0];
  void *args[] = {&out, &x, &n, &os, &xs};
  uopc_program_call(v->program, args);
  v->calls++;
  if (v->path == DISPATCH_PATH_FAST) {
    d->stats.fast_calls++;
    uopc_counter_bump(d->slots[SLOT_FAST], 1);
  } else {
    d->stats.generic_calls++;
    uopc_counter_bump(d->slots[SLOT_GENERIC], 1);
  }
}

int dispatch_choose(dispatcher *d, const uopc_tensor *x, uopc_tensor *out,
                    dispatch_choice *c, uopc_error *err) {
  dispatch_variant *v;
  int rc = choose(d, x, out, &v, err);
  if (rc) return rc;
  c->variant = v;
  c->path = v->path;
  c->call = &d->last.call;
  return UOPC_OK;
}

void dispatch_run(dispatcher *d, const dispatch_choice *c) {
  run(d, c->variant, c->call);
}

int dispatch_call(dispatcher *d, const uopc_tensor *x, uopc_tensor *out, uopc_error *err) {
  dispatch_variant *v;
  int rc = choose(d, x, out, &v, err);
  if (!rc) run(d, v, &d->last.call);
  return rc;
}

/* ---- The steps. */

int dispatch_fast16_guards(const dispatcher *d, int64_t exact_n, guard_set *s, uopc_error *err) {
// STUDENT 23.2 dispatch_fast16_guards
  static const char *const names[] = {"out", "x"};
  enum { OUT = DISPATCH_ARG_OUT, X = DISPATCH_ARG_X };
  const guard_site n = {X, GUARD_SHAPE, 0}, out_n = {OUT, GUARD_SHAPE, 0};
  int rc = guard_set_init(s, DISPATCH_N_ARGS, names, err);
  /* The guards that tell variants apart come first: a rejection is cheap. */
  if (!rc) rc = exact_n ? guard_set_add_range(s, "n", n, exact_n, exact_n, err) : guard_set_add_bounds(s, &d->n, n, err);
#ifndef DISPATCH_NO_DIVISIBILITY_GUARD   /* a test-only build removes it: tests/broken/23.2.mk */
  if (!rc) rc = guard_set_add_divisible(s, "n", n, VARIANT_LANES, err);
#endif
  if (!rc) rc = guard_set_add_rank(s, X, 1, err);
  if (!rc) rc = guard_set_add_rank(s, OUT, 1, err);
  if (!rc) rc = guard_set_add_equal(s, out_n, n, err);
  if (!rc) rc = guard_set_add_dtype(s, X, UOPC_F32, err);
  if (!rc) rc = guard_set_add_dtype(s, OUT, UOPC_F32, err);
  if (!rc) rc = guard_set_add_contiguous(s, X, err);
  if (!rc) rc = guard_set_add_contiguous(s, OUT, err);
#ifndef DISPATCH_NO_ALIGNMENT_GUARD      /* a test-only build removes it: tests/broken/23.2.mk */
  if (!rc) rc = guard_set_add_aligned(s, X, VARIANT_ALIGN, err);
  if (!rc) rc = guard_set_add_aligned(s, OUT, VARIANT_ALIGN, err);
#endif
  if (!rc) rc = guard_set_add_disjoint(s, OUT, X, err);
  return rc;
// END STUDENT
}

int dispatch_select(dispatcher *d, const guard_call *call, int *index, uopc_error *err) {
// STUDENT 23.2 dispatch_select
  (void)err;   /* a compiled check cannot fail */
  int k = 0;
  while (k < d->count && !dispatch_variant_holds(d->fast[k], call)) k++;
  *index = k < d->count ? k : -1;
  count_checks(d, k + (*index >= 0), k);   /* one count per call: no store per variant */
  return UOPC_OK;
// END STUDENT
}

int dispatch_on_miss(dispatcher *d, const guard_call *call, dispatch_variant **out,
                     uopc_error *err) {
// STUDENT 23.2 dispatch_on_miss
  int64_t n = call->args[DISPATCH_ARG_X].shape[0], exact = d->opts.specialize_length ? n : 0;
  guard_set wanted;
  int failed, rc = dispatch_fast16_guards(d, exact, &wanted, err);
  if (!rc) rc = guard_set_check(&wanted, call, &failed, NULL, err);
  guard_set_fini(&wanted);
  if (rc) return rc;
  if (failed < 0 && d->count + 1 < d->opts.max_variants) {   /* one place stays for the generic */
    rc = dispatch_build(d, DISPATCH_PATH_FAST, exact, out, err);
    d->last.built = rc == UOPC_OK;
    return rc;
  }
  if (failed < 0) {
    d->last.limit_hit = 1;
    d->stats.limit_hits++;
    if (d->opts.on_limit == DISPATCH_LIMIT_FAIL)
      return UOPC_FAIL(err, UOPC_E_LIMIT, "%s: a call with n = %" PRId64 " needs a new fast variant, but the "
                       "variant limit (%d, the generic one included) is reached", d->op_name, n,
                       d->opts.max_variants);
  }
  d->last.built = d->generic == NULL;
  return dispatch_build(d, DISPATCH_PATH_GENERIC, 0, out, err);
// END STUDENT
}

// STUDENT 23.2 helpers
/* Appends printf-style text at *used, never past size. */
static void append(char *buf, size_t size, size_t *used, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void append(char *buf, size_t size, size_t *used, const char *fmt, ...) {
  if (*used >= size) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf + *used, size - *used, fmt, ap);
  va_end(ap);
  if (n > 0) *used += (size_t)n;
}

static const dispatch_variant *chosen_variant(const dispatcher *d) {
  if (d->last.chosen == -1) return d->generic;
  return d->last.chosen >= 0 ? d->fast[d->last.chosen] : NULL;
}
// END STUDENT

int dispatch_explain(const dispatcher *d, char *buf, size_t size, uopc_error *err) {
// STUDENT 23.2 dispatch_explain
  const dispatch_record *r = &d->last;
  if (r->number == 0) return UOPC_FAIL(err, UOPC_E_INVALID, "%s: no call to explain yet", d->op_name);
  const dispatch_variant *v = chosen_variant(d);
  size_t used = 0;
  if (size) buf[0] = '\0';
  append(buf, size, &used, "call %" PRId64 ": n = %" PRId64 ", ", r->number, r->call.args[DISPATCH_ARG_X].shape[0]);
  if (v) append(buf, size, &used, "%s (%s)\n", dispatch_path_name(v->path), v->entry);
  else append(buf, size, &used, "no kernel ran\n");
  for (int k = 0; k < r->n_rejected; k++) {   /* the first n_rejected, rechecked for their reasons */
    const dispatch_variant *f = d->fast[k];
    guard_reason why;
    int failed, rc = guard_set_check(&f->guards, &r->call, &failed, &why, err);
    if (rc) return rc;
    if (failed < 0) append(buf, size, &used, "  %s rejected, yet all its guards hold on this call\n", f->entry);
    else append(buf, size, &used, "  %s rejected: guard '%s' failed: %s\n", f->entry, f->guards.guards[failed].what,
                why.text);
  }
  if (r->limit_hit)
    append(buf, size, &used, "  a new fast variant was wanted, but the variant limit (%d) is reached: %s\n",
           d->opts.max_variants, d->opts.on_limit == DISPATCH_LIMIT_FAIL ? "refused with UOPC_E_LIMIT"
                                                                          : "ran the generic variant");
  else if (v && v->path == DISPATCH_PATH_GENERIC && r->n_rejected == 0) {
    guard_set wanted;
    guard_reason why;
    int failed, rc = dispatch_fast16_guards(d, d->opts.specialize_length ? r->call.args[DISPATCH_ARG_X].shape[0] : 0,
                                            &wanted, err);
    if (!rc) rc = guard_set_check(&wanted, &r->call, &failed, &why, err);
    if (!rc && failed >= 0)
      append(buf, size, &used, "  no fast variant can serve it: guard '%s' failed: %s\n",
             wanted.guards[failed].what, why.text);
    guard_set_fini(&wanted);
    if (rc) return rc;
  }
  if (v) append(buf, size, &used, "  all %d guards of %s held%s\n", v->guards.count, v->entry,
                r->built ? "; it was built by this call" : "");
  return UOPC_OK;
// END STUDENT
}
