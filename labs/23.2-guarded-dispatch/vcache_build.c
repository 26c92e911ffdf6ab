/* vcache_build.c: making and placing variants (lab 23.2, given code). A
 * graph op's variant is the call's specialisation, the builder's graph, the
 * guards read back from both, a key and exec's program; an op with its own
 * kernels gives the guards, the key and the program through hooks. Either
 * way, the guards must hold on the call the variant is built for before
 * anything compiles, and its plan must agree with them. A specialised
 * variant goes before the general ones, and into the index when it pins
 * the site the others pin. Chapter 23.2, "One variant cache for every
 * graph". */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "vcache_internal.h"

/* ---- A graph op's steps. */

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
  int output = g->arg < c->opts.n_outputs;
  int code = !output ? UOPC_E_GUARD : g->kind == GUARD_DTYPE ? UOPC_E_DTYPE : g->kind == GUARD_CONTIGUOUS
             ? UOPC_E_LAYOUT : g->kind == GUARD_DISJOINT ? UOPC_E_ALIAS : UOPC_E_BOUNDS;
  return UOPC_FAIL(err, code, "op '%s': %s '%s' cannot serve this call: guard '%s' failed: %s", c->opts.op,
                   output ? "output" : "input", c->names[g->arg], g->what, why.text);
}

/* Where a call holds each dim the program takes: the site the spec reads it
 * at, as an offset (vcache_call.c reads it there). Every input's element 0
 * is the pointer the kernel takes (the cache declared no offsets). */
int vcache_plan_run(const vcache *c, vcache_variant *v, uopc_error *err) {
  const lower_program *p = exec_lowered(v->exec);
  for (int i = 0; i < p->n_inputs; i++) {
    const sym_expr *off = p->buffers[p->n_outputs + i].node->offset;
    if (off->kind != SYM_CONST || off->value != 0)
      return UOPC_FAIL(err, UOPC_E_INVALID, "op '%s': input '%s' has an offset; the cache declares none (a bug)",
                       c->opts.op, p->buffers[p->n_outputs + i].name);
  }
  for (int d = 0; d < p->n_dims; d++) {
    int k = 0;
    while (k < v->spec.n_dims && strcmp(v->spec.dims[k].name, p->dims[d].name) != 0) k++;
    if (k == v->spec.n_dims)
      return UOPC_FAIL(err, UOPC_E_UNBOUND, "op '%s': the graph's dim '%s' is no extent or stride of an input, so"
                       " no call can bind it", c->opts.op, p->dims[d].name);
    v->dim_at[d] = guard_site_offset(v->spec.dim_sites[k]);
  }
  v->n_dims = p->n_dims;
  return UOPC_OK;
}

/* Two variants with one key would be one compiled code under two contracts. */
static int check_new_key(const vcache *c, const spec_key *key, uopc_error *err) {
  for (int k = 0; k < c->count; k++)
    if (spec_key_equal(&c->variants[k]->key, key))
      return UOPC_FAIL(err, UOPC_E_GUARD, "op '%s': a new variant has the key of %s, whose guards failed on this"
                       " call (a bug); not built", c->opts.op, c->variants[k]->entry);
  return UOPC_OK;
}

/* The contract of a graph op's variant: specialisation, graph, guards, key. */
static int graph_contract(vcache *c, vcache_variant *v, const guard_call *call, uopc_error *err) {
  int rc = vcache_spec_of(c, call, v->general, &v->spec, err);
  if (!rc) rc = build_graph(c, v, v->outputs, err);
  if (!rc) rc = vcache_spec_guards(c, &v->spec, v->outputs, &v->guards, err);
  if (!rc) rc = vcache_spec_key(c, &v->spec, v->graph, v->outputs, &v->key, err);
  if (!rc) vcache_spec_entry(c, &v->spec, &v->key, v->entry, sizeof v->entry);
  return rc;
}

static int graph_compile(vcache *c, vcache_variant *v, uopc_error *err) {
  int rc = exec_new(&v->exec, v->graph, v->outputs, c->opts.n_outputs, v->entry, &c->opts.program, err);
  return rc ? rc : vcache_plan_run(c, v, err);
}

/* Contract, the guards on the call, plan, key, then the program. */
static int make_variant(vcache *c, vcache_variant *v, const guard_call *call, uopc_error *err) {
  const vcache_hooks *h = &c->opts.hooks;
  int rc = h->contract ? h->contract(c->opts.ctx, c, v, err) : graph_contract(c, v, call, err);
  if (!rc) rc = refuse(c, v, call, err);
  if (!rc) rc = guard_plan_compile(&v->plan, &v->guards, err);
  if (!rc) rc = check_new_key(c, &v->key, err);
  if (rc) return rc;
  return h->compile ? h->compile(c->opts.ctx, c, v, err) : graph_compile(c, v, err);
}

/* ---- The index (vcache.h, vcache_index).
 *
 * Why it gives the ordered scan's answer. Say specialised variant v pins
 * site s to p_v: its set holds a range guard [p_v, p_v] on s, which fails on
 * a call whose value m at s differs from p_v, or that lacks s; then v's
 * whole set fails, in the plan as in guard_set_check. The p_v are distinct
 * (a second variant for one value retires the index). So on a call with
 * value m, every variant fails but the one variant w with p_w = m, if there
 * is one. The scan rejects every variant before w, then returns w if w's
 * guards hold; otherwise, or with no w, it rejects them all and returns -1.
 * The index checks w alone and returns the same, and it counts the same
 * checks and failures: a variant it passes over is one whose pinned guard it
 * has found failing, by the lookup. General variants are in neither. */

/* The site s pins, through its first range guard [p, p]; 0 when none. */
static int pinned_site(const guard_set *s, guard_site *site, int64_t *value) {
  for (int k = 0; k < s->count; k++) {
    const guard *g = &s->guards[k];
    if (g->kind != GUARD_RANGE || g->lo != g->hi) continue;
    *site = g->site;
    *value = g->lo;
    return 1;
  }
  return 0;
}

/* Adds specialised variant k; one that pins no site, another site than the
 * others, or a value already taken retires the index (calls then scan). */
static void index_add(vcache_index *ix, const vcache_variant *v, int k) {
  guard_site site;
  int64_t value;
  if (!ix->usable) return;
  ix->usable = pinned_site(&v->guards, &site, &value) &&
               (ix->entries == 0 || (site.arg == ix->site.arg && site.field == ix->site.field &&
                                     site.axis == ix->site.axis));
  if (!ix->usable) return;
  unsigned s = vcache_index_slot(value);
  while (ix->variant[s] && ix->value[s] != value) s = (s + 1) & VCACHE_INDEX_MASK;
  if (ix->variant[s]) { ix->usable = 0; return; }
  ix->site = site;
  ix->at = guard_site_offset(site);
  ix->value[s] = value;
  ix->variant[s] = (uint8_t)(k + 1);
  ix->entries++;
}

/* ---- Building and placing. */

/* v goes last if general, else before the general ones (which keeps the
 * specialised variants' places, and so the index, as they were). */
static void place(vcache *c, vcache_variant *v) {
  int at = v->general ? c->count : vcache_n_specialised(c);
  memmove(&c->variants[at + 1], &c->variants[at], (size_t)(c->count - at) * sizeof *c->variants);
  c->variants[at] = v;
  c->count++;
  c->n_general += v->general;
  if (!v->general) index_add(&c->index, v, at);
}

int vcache_build(vcache *c, const guard_call *call, int general, int64_t param, vcache_variant **out,
                 uopc_error *err) {
  if (c->count >= c->opts.policy.max_variants)
    return UOPC_FAIL(err, UOPC_E_LIMIT, "op '%s': %d variants, the limit (policy.max_variants)", c->opts.op,
                     c->count);
  vcache_variant *v = calloc(1, sizeof *v);
  if (!v) return UOPC_FAIL(err, UOPC_E_NOMEM, "op '%s': no memory for a variant", c->opts.op);
  v->general = general != 0;
  v->param = param;
  int rc = make_variant(c, v, call, err);
  if (rc) { vcache_variant_free(v); return rc; }
  place(c, v);
  c->last.built = 1;
  c->stats.variants_built++;
  uopc_counter_bump(c->slots[VCACHE_SLOT_BUILT], 1);
  *out = v;
  return UOPC_OK;
}

int vcache_general(vcache *c, const guard_call *call, vcache_variant **out, uopc_error *err) {
  for (int k = vcache_n_specialised(c); k < c->count; k++) {
    if (vcache_variant_holds(c->variants[k], call)) {
      *out = c->variants[k];
      return UOPC_OK;
    }
    vcache_count_checks(c, 1, 1);
  }
  if (c->count >= c->opts.policy.max_variants) {
    char text[256];
    vcache_call_text(c, call, text, sizeof text);
    return UOPC_FAIL(err, UOPC_E_LIMIT, "op '%s': the call (%s) needs a new variant, but the variant limit (%d,"
                     " general ones included) is reached and no general variant serves it", c->opts.op, text,
                     c->opts.policy.max_variants);
  }
  return vcache_build(c, call, 1, 0, out, err);
}

void vcache_limit_hit(vcache *c) {
  c->last.limit_hit = 1;
  c->stats.limit_hits++;
}

int vcache_on_miss(vcache *c, const guard_call *call, vcache_variant **out, uopc_error *err) {
  if (vcache_room(c) > 0) return vcache_build(c, call, 0, 0, out, err);
  vcache_limit_hit(c);
  if (c->opts.policy.on_limit == VCACHE_LIMIT_FAIL) {
    char text[256];
    vcache_call_text(c, call, text, sizeof text);
    return UOPC_FAIL(err, UOPC_E_LIMIT, "op '%s': the call (%s) needs a new variant, but the variant limit (%d,"
                     " general ones included) is reached", c->opts.op, text, c->opts.policy.max_variants);
  }
  return vcache_general(c, call, out, err);
}
