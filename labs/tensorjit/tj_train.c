/* tj_train.c: a forward that saves, and a backward run later (section 23.7,
 * given code). The backward is a second compiled function of f, made on the
 * first saving call: its model runs f's model and then 23.4's reverse mode
 * seeded by the incoming gradients (tp_backward_seeded_at), so its artifacts
 * are ordinary tensorjit artifacts over (the saved arguments, the incoming
 * gradients) with the same contract: every size a dim, 0 and 1 pinned, a
 * gradient's dims made one with its output's by a guard. A record holds
 * packed copies of the call's tensors, so its sizes and values are its own.
 * Chapter 23.7, "Training". */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tj_internal.h"

struct tj_train {
  tj_function *forward;                       /* owned: f's model, then the values it saves as outputs */
  tj_function *backward;                      /* owned; made after the forward's first call */
  int n_args;                                 /* the forward's arguments (its first call's) */
  int n_saved;                                /* values the forward saves (matmuls, reductions, math) */
  int save_math;                              /* its math functions' values among them (tp_save_math) */
  char names[TJ_MAX_ARGS][SYM_NAME_MAX];      /* the backward's arguments: f's, saved0.., d_out0.. */
  const char *name_of[TJ_MAX_ARGS];
  int64_t live, peak;                         /* bytes of f's saved records */
  uopc_counter_id peak_counter;
};

struct tj_saved {
  tj_function *f;
  int n_args, n_saved;
  tj_arg args[TJ_MAX_ARGS];                   /* the call's, each tensor one of copies[] */
  uopc_tensor copies[TJ_MAX_ARGS];            /* owned, packed */
  uopc_tensor values[TJ_MAX_OUTPUTS];         /* owned: the forward's saved values */
  int n_outputs;
  uopc_tensor shapes[TJ_MAX_OUTPUTS];         /* the outputs' dtypes and shapes (no storage) */
  int64_t bytes;
};

static void train_release(struct tj_train *t) {
  if (!t) return;
  tj_free(t->forward);
  tj_free(t->backward);
  free(t);
}

/* ---- The models. */

static const tp_site here = {"tj_backward", 0};

/* The forward that saves: f's outputs, then its matmuls', reductions' and
 * (save_math) math functions' values in the order the model made them (as
 * many as the first call's). */
static int forward_model(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {
  const tj_function *f = user;
  int n_out = f->opts.n_outputs, n_saved = f->train->n_saved;
  tp_save_math(c, f->train->save_math);
  if (f->model(c, in, out, f->user)) return tp_status(c);
  int n = tp_saved_values(c, out + n_out, n_saved);
  if (n_saved && n != n_saved)
    return tp_fail(c, here, UOPC_E_UNSUPPORTED, "tensorjit '%s': this call's trace saves %d values, the first saving"
                   " call's %d: the model took another path", f->label, n, n_saved);
  return tp_status(c);
}

/* Counts the values forward_model saves, on a capture of the first call. */
typedef struct counting { const tj_function *f; int math, n; } counting;
static int count_model(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {
  counting *k = user;
  tp_tensor *y[TJ_MAX_OUTPUTS] = {0};
  tp_save_math(c, k->math);
  if (k->f->model(c, in, y, k->f->user)) return tp_status(c);
  k->n = tp_saved_values(c, NULL, 0);
  out[0] = y[0];
  return tp_status(c);
}

/* in: f's arguments, the saved values, then one incoming gradient per output
 * of f; out: the gradients of f's grad_args, in argument order. The model
 * runs with the saved values standing in for the nodes that made them. */
static int backward_model(tp_ctx *c, const tj_in *in, tp_tensor **out, void *user) {
  const tj_function *f = user;
  tp_tensor *y[TJ_MAX_OUTPUTS] = {0}, *saved[TJ_MAX_OUTPUTS], *seeds[TJ_MAX_OUTPUTS], *wrt[TJ_MAX_ARGS];
  int n_out = f->opts.n_outputs, n_saved = f->train->n_saved, n = 0;
  int n_args = f->train->n_args;
  for (int k = 0; k < n_saved; k++) saved[k] = in[n_args + k].t;
  tp_save_math(c, f->train->save_math);
  tp_stand_in_saved(c, saved, n_saved);
  if (f->model(c, in, y, f->user) || tp_stand_ins_end(c, here)) return tp_status(c);
  for (int k = 0; k < n_out; k++) seeds[k] = in[n_args + n_saved + k].t;
  for (int k = 0; k < n_args; k++)
    if (f->opts.grad_args >> k & 1u) wrt[n++] = in[k].t;
  tp_backward_seeded_at(c, y, seeds, n_out, wrt, n, out, here);
  return tp_status(c);
}

/* ---- Checks. */

static int count_grads(unsigned bits) { return __builtin_popcount(bits); }

static int n_tensors_of(const tj_arg *args, int n_args) {
  int n = 0;
  for (int k = 0; k < n_args; k++) n += args[k].kind == TJ_TENSOR;
  return n;
}

/* The backward's arguments fit with n_saved saved values. */
static int fits(const tj_function *f, const tj_arg *args, int n_args, int n_saved) {
  int n_out = f->opts.n_outputs;
  return n_args + n_saved + n_out <= TJ_MAX_ARGS && n_tensors_of(args, n_args) + n_saved + n_out <= TJ_MAX_TENSORS &&
         n_out + n_saved <= TJ_MAX_OUTPUTS;
}

static int check_saving(const tj_function *f, const tj_arg *args, int n_args, uopc_error *err) {
  unsigned bits = f->opts.grad_args;
  if (!bits) return UOPC_FAIL(err, UOPC_E_INVALID, "tensorjit '%s': tj_call_saving needs grad_args (which arguments"
                              " get gradients); it is 0", f->label);
  if (n_args < 1 || n_args > TJ_MAX_ARGS || !args || bits >> n_args)
    return UOPC_FAIL(err, UOPC_E_INVALID, "tensorjit '%s': grad_args 0x%x names arguments past the call's %d",
                     f->label, bits, n_args);
  for (int k = 0; k < n_args; k++) {
    if (args[k].kind == TJ_LIST || args[k].kind == TJ_RECORD)
      return UOPC_FAIL(err, UOPC_E_UNSUPPORTED, "tensorjit '%s': argument %d is a container; a call that saves takes"
                       " tensors, ints and doubles", f->label, k);
    if (args[k].kind == TJ_SYM_INT)
      return UOPC_FAIL(err, UOPC_E_UNSUPPORTED, "tensorjit '%s': argument %d is a symbolic int; a call that saves takes"
                       " ints by value (tj_int), since the backward's arguments are the forward's", f->label, k);
    int is_float = args[k].kind == TJ_TENSOR && args[k].tensor && uopc_dtype_is_float(args[k].tensor->dtype);
    if ((bits >> k & 1u) && !is_float)
      return UOPC_FAIL(err, UOPC_E_INVALID, "tensorjit '%s': grad_args bit %d names argument %d, which is not a f32"
                       " or f64 tensor", f->label, k, k);
  }
  if (!fits(f, args, n_args, 0) || count_grads(bits) > TJ_MAX_OUTPUTS)
    return UOPC_FAIL(err, UOPC_E_LIMIT, "tensorjit '%s': the backward takes %d arguments (%d tensors) and makes %d"
                     " gradients: at most %d, %d and %d", f->label, n_args + f->opts.n_outputs,
                     n_tensors_of(args, n_args) + f->opts.n_outputs, count_grads(bits), TJ_MAX_ARGS, TJ_MAX_TENSORS,
                     TJ_MAX_OUTPUTS);
  return UOPC_OK;
}

/* ---- The forward and backward functions. */

/* How many values the forward saves, on the first call's trace: its
 * matmuls', reductions' and math functions' (a tanh costs tens of
 * operations an element to recompute, against one load to read back); when
 * those would not fit the backward's arguments, the matmuls' and
 * reductions' alone; when those would not either, none (all recomputed). */
static int count_saved(tj_function *f, const tj_arg *args, int n_args, int *n_saved, int *math, uopc_error *err) {
  int rc = UOPC_OK;
  *n_saved = *math = 0;
  for (int m = 1; m >= 0 && !rc; m--) {
    counting k = {f, m, 0};
    tj_graph *g = NULL;
    rc = tj_make_graph(&g, count_model, &k, args, n_args, TJ_SYMBOLIC, err);
    tj_graph_free(g);
    if (!rc && fits(f, args, n_args, k.n)) {
      *n_saved = k.n, *math = m;
      break;
    }
  }
  return rc;
}

static int train_new(tj_function *f, const tj_arg *args, int n_args, uopc_error *err) {
  struct tj_train *t = calloc(1, sizeof *t);
  if (!t) return UOPC_FAIL(err, UOPC_E_NOMEM, "tensorjit '%s': out of memory", f->label);
  f->train = t, f->train_release = train_release;   /* freed with f from here on */
  int rc = count_saved(f, args, n_args, &t->n_saved, &t->save_math, err);
  char name[32];
  snprintf(name, sizeof name, "%.20s_fwd", f->label);
  tj_options o = f->opts;
  o.name = name, o.n_outputs = f->opts.n_outputs + t->n_saved, o.grad_args = 0;
  if (!rc) rc = tj_compile(&t->forward, forward_model, f, &o, err);
  if (!rc) t->forward->no_breaks = 1;   /* a forward that breaks saves nothing its backward could read */
  t->peak_counter = uopc_counter_slot(TJ_C_SAVED_PEAK);
  if (rc) { train_release(t); f->train = NULL, f->train_release = NULL; }
  return rc;
}

/* The backward, once the forward's first call has fixed the names. */
static int backward_new(tj_function *f, uopc_error *err) {
  struct tj_train *t = f->train;
  const tj_function *fw = t->forward;
  int n = fw->n_args, n_saved = t->n_saved;
  for (int k = 0; k < n + n_saved + f->opts.n_outputs; k++) {
    if (k < n) snprintf(t->names[k], sizeof t->names[k], "%s", fw->arg_names[k]);
    else if (k < n + n_saved) snprintf(t->names[k], sizeof t->names[k], "saved%d", k - n);
    else snprintf(t->names[k], sizeof t->names[k], "d_out%d", k - n - n_saved);
    t->name_of[k] = t->names[k];
  }
  t->n_args = n;   /* backward_model finds the saved values after them */
  char name[32];
  snprintf(name, sizeof name, "%.20s_bwd", f->label);
  tj_options o = f->opts;
  o.name = name, o.n_outputs = count_grads(f->opts.grad_args), o.arg_names = t->name_of, o.grad_args = 0;
  int rc = tj_compile(&t->backward, backward_model, f, &o, err);
  if (!rc) t->backward->no_breaks = 1;
  return rc;
}

/* ---- Records. */

static void account(tj_function *f, int64_t delta) {
  struct tj_train *t = f->train;
  t->live += delta;
  if (t->live > t->peak) uopc_counter_bump(t->peak_counter, t->live - t->peak), t->peak = t->live;
}

static int saved_new(tj_function *f, const tj_arg *args, int n_args, uopc_tensor *outs, tj_saved **out,
                     uopc_error *err) {
  tj_saved *s = calloc(1, sizeof *s);
  if (!s) return UOPC_FAIL(err, UOPC_E_NOMEM, "tensorjit '%s': out of memory for a saved record", f->label);
  s->f = f, s->n_args = n_args, s->n_outputs = f->opts.n_outputs, s->n_saved = f->train->n_saved;
  int rc = UOPC_OK;
  for (int k = 0; k < n_args && !rc; k++) {
    s->args[k] = args[k];
    if (args[k].kind != TJ_TENSOR) continue;
    const uopc_tensor *x = args[k].tensor;
    rc = uopc_tensor_empty(&s->copies[k], x->dtype, x->rank, x->shape, err);
    if (!rc) rc = uopc_tensor_copy(&s->copies[k], x, err);
    s->args[k].tensor = &s->copies[k];
    s->bytes += uopc_tensor_numel(x) * (int64_t)uopc_dtype_size(x->dtype);
  }
  for (int k = 0; k < s->n_saved; k++) {   /* handed over from the forward's outputs */
    s->values[k] = outs[s->n_outputs + k];
    memset(&outs[s->n_outputs + k], 0, sizeof outs[0]);
    s->bytes += uopc_tensor_numel(&s->values[k]) * (int64_t)uopc_dtype_size(s->values[k].dtype);
  }
  for (int k = 0; k < s->n_outputs; k++) {   /* the geometry only: the record keeps no output */
    s->shapes[k].dtype = outs[k].dtype, s->shapes[k].rank = outs[k].rank;
    memcpy(s->shapes[k].shape, outs[k].shape, sizeof outs[k].shape);
  }
  if (rc) { s->bytes = 0, s->f = NULL, tj_saved_free(s); return rc; }
  account(f, s->bytes);
  *out = s;
  return UOPC_OK;
}

void tj_saved_free(tj_saved *s) {
  if (!s) return;
  for (int k = 0; k < s->n_args; k++) uopc_tensor_release(&s->copies[k]);
  for (int k = 0; k < s->n_saved; k++) uopc_tensor_release(&s->values[k]);
  if (s->f && s->f->train) account(s->f, -s->bytes);
  free(s);
}

int tj_call_saving(tj_function *f, const tj_arg *args, int n_args, uopc_tensor *outs, tj_saved **saved,
                   uopc_error *err) {
  if (!f || !outs || !saved) return UOPC_FAIL(err, UOPC_E_INVALID, "tj_call_saving: NULL function, outputs or record");
  uopc_tensor all[TJ_MAX_OUTPUTS];
  int rc = check_saving(f, args, n_args, err), ran = 0;
  if (!rc && !f->train) rc = train_new(f, args, n_args, err);
  if (!rc) rc = tj_call(f->train->forward, args, n_args, all, err), ran = !rc;   /* checks the arguments */
  if (!rc && !f->train->backward) rc = backward_new(f, err);
  if (!rc) rc = saved_new(f, args, n_args, all, saved, err);
  int n_all = ran ? f->train->forward->opts.n_outputs : 0;
  if (!rc) memcpy(outs, all, (size_t)f->opts.n_outputs * sizeof *outs);
  for (int k = 0; rc && k < n_all; k++) uopc_tensor_release(&all[k]);   /* nothing written */
  return rc;
}

/* ---- The backward. */

static void shape_text(const uopc_tensor *t, char *buf, size_t size) {
  size_t used = (size_t)snprintf(buf, size, "%s (", uopc_dtype_name(t->dtype));
  for (int d = 0; d < t->rank && used < size; d++)
    used += (size_t)snprintf(buf + used, size - used, "%s%" PRId64, d ? ", " : "", t->shape[d]);
  if (used < size) snprintf(buf + used, size - used, "%s)", t->rank == 1 ? "," : "");
}

static int check_gradient(const tj_function *f, const tj_saved *s, const uopc_tensor *g, int k, uopc_error *err) {
  const uopc_tensor *want = &s->shapes[k];
  char need[96], got[96];
  shape_text(want, need, sizeof need);
  if (!g || !g->storage)
    return UOPC_FAIL(err, UOPC_E_INVALID, "tensorjit '%s': grad_outputs[%d] is NULL; output %d needs a %s gradient",
                     f->label, k, k, need);
  shape_text(g, got, sizeof got);
  int same = g->rank == want->rank;
  for (int d = 0; same && d < g->rank; d++) same = g->shape[d] == want->shape[d];
  if (g->dtype != want->dtype)
    return UOPC_FAIL(err, UOPC_E_DTYPE, "tensorjit '%s': grad_outputs[%d] is %s; output %d is %s", f->label, k, got,
                     k, need);
  if (!same)
    return UOPC_FAIL(err, UOPC_E_INVALID, "tensorjit '%s': grad_outputs[%d] is %s; output %d of the saved call is %s",
                     f->label, k, got, k, need);
  return UOPC_OK;
}

int tj_backward(tj_function *f, const tj_saved *s, const uopc_tensor *const *grad_outputs, uopc_tensor *grads,
                uopc_error *err) {
  if (!f || !s || !grad_outputs || !grads)
    return UOPC_FAIL(err, UOPC_E_INVALID, "tj_backward: NULL function, record, incoming gradients or gradients");
  if (s->f != f || !f->train)
    return UOPC_FAIL(err, UOPC_E_INVALID, "tensorjit '%s': tj_backward of a record another function saved",
                     f->label);
  tj_arg args[TJ_MAX_ARGS];
  int n = s->n_args;
  memcpy(args, s->args, (size_t)n * sizeof *args);
  for (int k = 0; k < s->n_saved; k++) args[n++] = tj_tensor(&s->values[k]);
  for (int k = 0; k < s->n_outputs; k++) {
    int rc = check_gradient(f, s, grad_outputs[k], k, err);
    if (rc) return rc;
    args[n++] = tj_tensor(grad_outputs[k]);
  }
  return tj_call(f->train->backward, args, n, grads, err);
}

tj_counts tj_forward_stats(const tj_function *f) {
  return f && f->train ? tj_stats(f->train->forward) : (tj_counts){0};
}

int tj_saved_values(const tj_function *f) { return f && f->train ? f->train->n_saved : 0; }

tj_counts tj_backward_stats(const tj_function *f) {
  return f && f->train ? tj_stats(f->train->backward) : (tj_counts){0};
}

int64_t tj_saved_bytes(const tj_function *f, int64_t *peak) {
  const struct tj_train *t = f ? f->train : NULL;
  if (peak) *peak = t ? t->peak : 0;
  return t ? t->live : 0;
}

/* ---- The printed form. */

/* Matmuls and reductions reachable from v's outputs (n of them). */
static int count_costly(const vcache_variant *v, int n, int *matmuls, int *reductions) {
  int top = 0;
  for (int k = 0; k < n; k++) top = v->outputs[k]->id > top ? v->outputs[k]->id : top;
  char *seen = calloc((size_t)top + 1, 1);
  const ir_node **stack = malloc(((size_t)top + 1) * 3 * sizeof *stack + sizeof *stack * TJ_MAX_OUTPUTS);
  if (!seen || !stack) { free(seen), free(stack); return UOPC_E_NOMEM; }
  int depth = 0;
  *matmuls = *reductions = 0;
  for (int k = 0; k < n; k++) stack[depth++] = v->outputs[k];
  while (depth) {   /* each node pushed at most once per consumer edge: 3 per node */
    const ir_node *x = stack[--depth];
    if (seen[x->id]) continue;
    seen[x->id] = 1;
    ir_kind kind = ir_op_info_of(x->op)->kind;
    *matmuls += kind == IR_KIND_MATMUL, *reductions += kind == IR_KIND_REDUCE;
    for (int i = 0; i < 3; i++)
      if (x->src[i] && !seen[x->src[i]->id]) stack[depth++] = x->src[i];
  }
  free(seen), free(stack);
  return UOPC_OK;
}

static void node_text(const ir_node *n, char *buf, size_t size) {
  size_t used = (size_t)snprintf(buf, size, "%s (", ir_op_info_of(n->op)->name);
  for (int d = 0; d < n->rank && used < size; d++) {
    char e[64];
    uopc_error ignore;
    if (sym_expr_format(n->shape[d], e, sizeof e, &ignore)) snprintf(e, sizeof e, "?");
    used += (size_t)snprintf(buf + used, size - used, "%s%s", d ? ", " : "", e);
  }
  if (used < size) snprintf(buf + used, size - used, ")");
}

/* One line per artifact of g: its entry and what it computes. */
static void artifacts_text(const char *what, const tj_function *g, char *buf, size_t size) {
  for (int s = 0; g && s < g->n_groups; s++)
    for (int k = 0; k < g->groups[s]->n_arts; k++) {
      const vcache_variant *v = g->groups[s]->arts[k].v;
      int mm = 0, red = 0;
      if (count_costly(v, g->opts.n_outputs, &mm, &red)) mm = red = -1;
      vcache_text_add(buf, size, "%s %s: %d matmul%s, %d reduction%s computed\n", what, v->entry, mm,
                      mm == 1 ? "" : "s", red, red == 1 ? "" : "s");
    }
}

void tj_train_text(const tj_function *f, char *buf, size_t size) {
  if (!buf || !size) return;
  buf[0] = '\0';
  const struct tj_train *t = f ? f->train : NULL;
  if (!t || !t->backward) { snprintf(buf, size, "no call has saved\n"); return; }
  const tj_function *fw = t->forward;
  vcache_text_add(buf, size, "a record holds copies of");
  for (int k = 0; k < fw->n_args; k++)
    if (fw->kinds[k] == TJ_TENSOR) vcache_text_add(buf, size, " %s", fw->arg_names[k]);
  vcache_text_add(buf, size, " and %d saved value%s\n", t->n_saved, t->n_saved == 1 ? "" : "s");
  const vcache_variant *v = fw->n_groups && fw->groups[0]->n_arts ? fw->groups[0]->arts[0].v : NULL;
  for (int k = 0; v && k < t->n_saved; k++) {
    char text[160];
    node_text(v->outputs[f->opts.n_outputs + k], text, sizeof text);
    vcache_text_add(buf, size, "  saved%d = %s\n", k, text);
  }
  artifacts_text("forward", fw, buf, size);
  artifacts_text("backward", t->backward, buf, size);
}
