/* run.c: a mutating program compiled through the core and run, versioned or
 * functionalized (given code, lab 23.3).
 * Versioned: one core program per statement, in program order. Where a store
 * writes is decided once, when the runner is built, from the alias analysis
 * of the target against every load of its storage: straight into the view
 * (DIRECT: each load is disjoint from it, or is the very view read at the
 * element being written), through a temporary (STAGED: an overlap that is not
 * in place), or per call (GUARDED: an UNKNOWN answer, settled by the
 * disjointness guard on the call's views). Functional: one program for the
 * whole pure graph, its results copied back. Chapter 23.3, "Running a program
 * two ways". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "functionalize.h"
#include "run.h"

/* A temporary kept between runs: a staged store's value, or a functional
 * result copied back into the caller's tensor. A fresh zero-filled one per
 * call cost more than the kernel at 16M elements, mostly in page faults
 * (chapter 23.3, "Measuring it"). */
typedef struct scratch {
  void *data;
  size_t bytes;
} scratch;

struct mv_runner {
  const mv_program *p;
  mv_mode mode;
  int n_stmts, n_storages;
  exec **execs;                 /* versioned: one per statement; functional: execs[0] */
  mv_store_plan *plan;          /* per statement */
  unsigned char **guard;        /* guard[k][j]: load j of store k is checked per call */
  int *let_buffer;              /* per let: the storage whose buffer it writes */
  ir_graph *fgraph;             /* functional: the pure graph, its outputs and their storages */
  const ir_node **fout;
  int *fout_storage, n_fout;
  uopc_tensor *tensors;         /* per storage, after a run */
  scratch *scratch;             /* versioned: [0], the staged stores'; functional: per output */
  int has_run;
};

/* The views' layouts need the program's arena; building them changes no
 * meaning of the program. */
static mv_program *arena_owner(const mv_program *p) { return (mv_program *)p; }

static int same_layout(const mv_layout *a, const mv_layout *b) {
  if (a->rank != b->rank || sym_expr_compare(a->offset, b->offset)) return 0;
  for (int k = 0; k < a->rank; k++)
    if (sym_expr_compare(a->shape[k], b->shape[k]) || sym_expr_compare(a->strides[k], b->strides[k])) return 0;
  return 1;
}

/* A store's plan, and the flags its program is lowered with. */
static int plan_store(mv_runner *r, int k, unsigned *flags, uopc_error *err) {
  const mv_stmt *st = mv_program_stmt(r->p, k);
  mv_program *p = arena_owner(r->p);
  mv_layout target, load;
  int rc = mv_view_layout(p, &st->target, &target, err);
  r->plan[k] = MV_STORE_DIRECT;
  for (int j = 0; j < st->n_loads && !rc; j++) {
    if (st->loads[j].view.storage != st->storage) continue;
    alias_result a;
    rc = mv_view_layout(p, &st->loads[j].view, &load, err);
    if (!rc) rc = alias_decide(&target, &load, mv_program_arena(p), &a, err);
    if (rc) break;
    char view[MV_VIEW_TEXT_MAX];
    mv_view_format(p, &st->loads[j].view, view, sizeof view);
    uopc_debug(2, "statement %d: load %s against the target: %s (%s)", k, view, alias_answer_name(a.answer),
               a.reason);
    if (a.answer == ALIAS_DISJOINT) continue;
    if (same_layout(&target, &load) && mv_stmt_reads_at_output_index(st, j)) {
      *flags |= LOWER_MAY_ALIAS;           /* read and written at the same element, by the same iteration */
      continue;
    }
    if (a.answer == ALIAS_OVERLAP) r->plan[k] = MV_STORE_STAGED;
    else {
      r->guard[k][j] = 1;
      if (r->plan[k] == MV_STORE_DIRECT) r->plan[k] = MV_STORE_GUARDED;
    }
  }
  return rc;
}

static int plan_let(mv_runner *r, int k, unsigned *flags, uopc_error *err) {
  const mv_stmt *st = mv_program_stmt(r->p, k);
  r->let_buffer[k] = st->storage;
  for (int s = 0; s < r->n_storages; s++) {
    if (!reuse_candidate(r->p, k, s)) continue;
    reuse_decision d;
    int rc = reuse_decide(r->p, k, s, &d, err);
    if (rc) return rc;
    uopc_counter_add(d.verdict == REUSE_OK ? REUSE_C_REUSED
                     : d.verdict == REUSE_REFUSED_ALIAS ? REUSE_C_REFUSED_ALIAS : REUSE_C_REFUSED_LIVE, 1);
    uopc_debug(2, "statement %d: reuse of '%s': %s", k, mv_program_storage(r->p, s)->name, d.reason);
    if (d.verdict == REUSE_OK && r->let_buffer[k] == st->storage) {
      r->let_buffer[k] = s;
      *flags |= LOWER_MAY_ALIAS;
    }
  }
  return UOPC_OK;
}

void mv_runner_free(mv_runner *r) {
  if (!r) return;
  for (int k = 0; k < r->n_stmts; k++) {
    if (r->execs) exec_free(r->execs[k]);
    if (r->guard) free(r->guard[k]);
  }
  if (r->tensors)
    for (int s = 0; s < r->n_storages; s++) uopc_tensor_release(&r->tensors[s]);
  if (r->scratch)
    for (int s = 0; s <= r->n_storages; s++) free(r->scratch[s].data);
  free(r->execs);
  free(r->plan);
  free(r->guard);
  free(r->let_buffer);
  free(r->fout);
  free(r->fout_storage);
  ir_graph_free(r->fgraph);
  free(r->tensors);
  free(r->scratch);
  free(r);
}

static int build_versioned(mv_runner *r, const uopc_program_options *opts, uopc_error *err) {
  int rc = UOPC_OK;
  for (int k = 0; k < r->n_stmts && !rc; k++) {
    const mv_stmt *st = mv_program_stmt(r->p, k);
    unsigned flags = 0;
    if (!(r->guard[k] = calloc((size_t)st->n_loads + 1, 1))) return UOPC_FAIL(err, UOPC_E_NOMEM, "runner: out of memory");
    rc = st->kind == MV_STORE ? plan_store(r, k, &flags, err) : plan_let(r, k, &flags, err);
    char entry[64];
    snprintf(entry, sizeof entry, "mv_%d_%s_%.24s", k, st->kind == MV_STORE ? "store" : "let",
             mv_program_storage(r->p, st->storage)->name);
    if (!rc) rc = exec_new_flags(&r->execs[k], st->graph, &st->value, 1, entry, flags, opts, err);
    if (!rc) uopc_counter_add(MV_C_PLANS, 1);
  }
  return rc;
}

static int build_functional(mv_runner *r, const uopc_program_options *opts, uopc_error *err) {
  const ir_node **outs = NULL;
  int rc = functionalize(r->p, &r->fgraph, &outs, err);
  if (rc) return rc;
  r->fout = calloc((size_t)r->n_storages + 1, sizeof *r->fout);
  r->fout_storage = calloc((size_t)r->n_storages + 1, sizeof *r->fout_storage);
  if (!r->fout || !r->fout_storage) rc = UOPC_FAIL(err, UOPC_E_NOMEM, "runner: out of memory");
  for (int s = 0; s < r->n_storages && !rc; s++)
    if (outs[s]) {
      r->fout[r->n_fout] = outs[s];
      r->fout_storage[r->n_fout++] = s;
    }
  free(outs);
  if (!rc && !r->n_fout) rc = UOPC_FAIL(err, UOPC_E_INVALID, "runner: the program writes nothing");
  if (!rc) rc = exec_new(&r->execs[0], r->fgraph, r->fout, r->n_fout, "mv_functional", opts, err);
  if (!rc) uopc_counter_add(MV_C_PLANS, 1);
  return rc;
}

int mv_runner_new(mv_runner **out, const mv_program *p, mv_mode mode, const uopc_program_options *opts,
                  uopc_error *err) {
  if (!out || !p) return UOPC_FAIL(err, UOPC_E_INVALID, "runner: NULL argument");
  if (mv_open_graph(arena_owner(p)))
    return UOPC_FAIL(err, UOPC_E_INVALID, "runner: statement %d is still open (close it with a store or a let)",
                     mv_program_stmt_count(p));
  if (!mv_program_stmt_count(p)) return UOPC_FAIL(err, UOPC_E_INVALID, "runner: the program has no statements");
  mv_runner *r = calloc(1, sizeof *r);
  if (!r) return UOPC_FAIL(err, UOPC_E_NOMEM, "runner: out of memory");
  r->p = p;
  r->mode = mode;
  r->n_stmts = mv_program_stmt_count(p);
  r->n_storages = mv_program_storage_count(p);
  r->execs = calloc((size_t)r->n_stmts, sizeof *r->execs);
  r->plan = calloc((size_t)r->n_stmts, sizeof *r->plan);
  r->guard = calloc((size_t)r->n_stmts, sizeof *r->guard);
  r->let_buffer = calloc((size_t)r->n_stmts, sizeof *r->let_buffer);
  r->tensors = calloc((size_t)r->n_storages, sizeof *r->tensors);
  r->scratch = calloc((size_t)r->n_storages + 1, sizeof *r->scratch);
  int rc = !r->execs || !r->plan || !r->guard || !r->let_buffer || !r->tensors || !r->scratch
               ? UOPC_FAIL(err, UOPC_E_NOMEM, "runner: out of memory")
               : mode == MV_FUNCTIONAL ? build_functional(r, opts, err) : build_versioned(r, opts, err);
  if (rc) { mv_runner_free(r); return rc; }
  *out = r;
  return UOPC_OK;
}

/* ---- Running. */

/* Binds the dims of every external storage's shape into b (after the
 * caller's dims), then checks every extent against its expression. */
static int bind_storages(const mv_runner *r, uopc_tensor *const *storages, sym_binding *b, uopc_error *err) {
  int rc = UOPC_OK;
  for (int pass = 0; pass < 2 && !rc; pass++)
    for (int s = 0, i = 0; s < r->n_storages && !rc; s++) {
      const mv_storage *st = mv_program_storage(r->p, s);
      if (!st->external) continue;
      const uopc_tensor *t = storages[i++];
      for (int k = 0; k < st->rank && !rc; k++) {
        const sym_expr *e = st->shape[k];
        int64_t want;
        const sym_expr *d = e;
        int64_t scale = 1;               /* an extent c * d binds d = extent / c, when it divides */
        if (e->kind == SYM_MUL && e->a->kind == SYM_CONST && e->b->kind == SYM_DIM && e->a->value > 0)
          d = e->b, scale = e->a->value;
        if (e->kind == SYM_MUL && e->b->kind == SYM_CONST && e->a->kind == SYM_DIM && e->b->value > 0)
          d = e->a, scale = e->b->value;
        if (pass == 0 && d->kind == SYM_DIM && sym_binding_find(b, d->dim.name) < 0) {
          if (t->shape[k] % scale == 0) rc = sym_dim_bind(b, &d->dim, t->shape[k] / scale, err);
          else
            rc = UOPC_FAIL(err, UOPC_E_BOUNDS, "storage '%s': axis %d is %lld, not a multiple of %lld (the extent"
                           " is %lld * %s)", st->name, k, (long long)t->shape[k], (long long)scale, (long long)scale,
                           d->dim.name);
          continue;
        }
        if (pass == 1 && !(rc = sym_expr_eval(e, b, &want, err)) && want != t->shape[k]) {
          char text[96];
          sym_expr_format(e, text, sizeof text, NULL);
          rc = UOPC_FAIL(err, UOPC_E_BOUNDS, "storage '%s': axis %d is %lld, but %s = %lld in this call", st->name, k,
                         (long long)t->shape[k], text, (long long)want);
        }
      }
    }
  return rc;
}

static int check_storages(const mv_runner *r, uopc_tensor *const *storages, int n, uopc_error *err) {
  int want = 0;
  for (int s = 0; s < r->n_storages; s++) want += mv_program_storage(r->p, s)->external;
  if (n != want || (n && !storages))
    return UOPC_FAIL(err, UOPC_E_INVALID, "run: the program takes %d storages, not %d", want, n);
  for (int s = 0, i = 0; s < r->n_storages; s++) {
    const mv_storage *st = mv_program_storage(r->p, s);
    if (!st->external) continue;
    const uopc_tensor *t = storages[i];
    if (!t || !t->storage) return UOPC_FAIL(err, UOPC_E_INVALID, "run: storage '%s' is NULL or released", st->name);
    if (t->dtype != st->dtype || t->rank != st->rank)
      return UOPC_FAIL(err, t->dtype != st->dtype ? UOPC_E_DTYPE : UOPC_E_INVALID,
                       "run: storage '%s' is %s of rank %d, the program's is %s of rank %d", st->name,
                       uopc_dtype_name(t->dtype), t->rank, uopc_dtype_name(st->dtype), st->rank);
    if (!uopc_tensor_is_contiguous(t))
      return UOPC_FAIL(err, UOPC_E_LAYOUT, "run: storage '%s' is not contiguous (its views are the program's)",
                       st->name);
    for (int j = 0; j < i; j++)
      if (uopc_tensor_numel(t) && uopc_tensor_may_overlap(t, storages[j]))
        return UOPC_FAIL(err, UOPC_E_ALIAS, "run: storage '%s' shares memory with storage %d: the program"
                         " treats storages as distinct (make one a view of the other instead)", st->name, j);
    i++;
  }
  return UOPC_OK;
}

/* Calls e on raw buffers: outputs, then each input at its storage's element
 * 0 (a load's offset counts from there). Dims come from b, checked against
 * the program's own bounds. */
static int call(exec *e, void *const *buffers, const sym_binding *b, uopc_error *err) {
  const lower_program *lp = exec_lowered(e);
  int64_t dims[lp->n_dims + 1];
  for (int d = 0; d < lp->n_dims; d++) {
    int rc = sym_binding_get(b, &lp->dims[d], &dims[d], err);
    if (!rc) rc = sym_dim_check(&lp->dims[d], dims[d], err);
    if (rc) return rc;
  }
  return exec_run_checked(e, buffers, dims, err);
}

/* Output k of e for this call: a new packed tensor of its dtype and shape
 * (exec_output_shape evaluates the shape; the dtype is the lowered node's). */
static int value_tensor(const exec *e, int k, const sym_binding *b, uopc_tensor *out, uopc_error *err) {
  int64_t shape[UOPC_MAX_RANK];
  int rank, rc = exec_output_shape(e, k, b, shape, &rank, err);
  return rc ? rc : uopc_tensor_empty(out, exec_lowered(e)->buffers[k].node->dtype, rank, shape, err);
}

/* Output k of e for this call over s's buffer, grown when too small: packed
 * and not zeroed, since the kernel writes every element. */
static int scratch_tensor(scratch *s, const exec *e, int k, const sym_binding *b, uopc_tensor *out,
                          uopc_error *err) {
  uopc_dtype dt = exec_lowered(e)->buffers[k].node->dtype;
  int64_t shape[UOPC_MAX_RANK], strides[UOPC_MAX_RANK], bytes = (int64_t)uopc_dtype_size(dt);
  int rank, rc = exec_output_shape(e, k, b, shape, &rank, err);
  if (rc) return rc;
  for (int a = 0; a < rank; a++)
    if (shape[a] < 0 || __builtin_mul_overflow(bytes, shape[a], &bytes) || bytes > INT64_MAX - 64)
      return UOPC_FAIL(err, UOPC_E_OVERFLOW, "runner: a temporary of more than %lld bytes", (long long)INT64_MAX);
  if (!s->data || (size_t)bytes > s->bytes) {
    size_t rounded = ((size_t)bytes + 63) / 64 * 64;
    void *p = aligned_alloc(64, rounded ? rounded : 64);
    if (!p)
      return UOPC_FAIL(err, UOPC_E_NOMEM, "runner: out of memory for a temporary of %lld bytes", (long long)bytes);
    free(s->data);
    s->data = p, s->bytes = rounded;
  }
  uopc_layout_packed_strides(rank, shape, strides);
  return uopc_tensor_wrap(out, s->data, dt, rank, shape, strides, err);
}

static int run_store(mv_runner *r, int k, const sym_binding *b, void **buffers, uopc_error *err) {
  const mv_stmt *st = mv_program_stmt(r->p, k);
  uopc_tensor target = {0}, temp = {0};
  int rc = mv_view_tensor(r->p, &st->target, b, &r->tensors[st->storage], &target, err);
  int direct = !rc && r->plan[k] != MV_STORE_STAGED && uopc_tensor_is_contiguous(&target);
  for (int j = 0; j < st->n_loads && !rc && direct; j++) {
    if (!r->guard[k][j]) continue;
    uopc_tensor load = {0};
    int disjoint = 0;
    rc = mv_view_tensor(r->p, &st->loads[j].view, b, &r->tensors[st->loads[j].view.storage], &load, err);
    if (!rc) rc = alias_guard_disjoint(&target, &load, &disjoint, err);
    uopc_tensor_release(&load);
    uopc_counter_add(MV_C_GUARDS, 1);
    if (!rc && !disjoint) {
      uopc_counter_add(MV_C_GUARD_OVERLAP, 1);
      direct = 0;
    }
  }
  if (!rc && !direct) rc = scratch_tensor(&r->scratch[0], r->execs[k], 0, b, &temp, err);
  if (!rc) {
    buffers[0] = uopc_tensor_data(direct ? &target : &temp);
    rc = call(r->execs[k], buffers, b, err);
  }
  /* The value is complete; only now is any element of the target stored. */
  if (!rc && direct) uopc_tensor_bump_version(&target);
  if (!rc && !direct) rc = uopc_tensor_copy(&target, &temp, err);
  if (!rc) {
    uopc_counter_add(direct ? MV_C_DIRECT : MV_C_STAGED, 1);
    uopc_counter_add(MV_C_VERSIONS, 1);
  }
  uopc_tensor_release(&temp);
  uopc_tensor_release(&target);
  return rc;
}

static int run_let(mv_runner *r, int k, const sym_binding *b, void **buffers, uopc_error *err) {
  const mv_stmt *st = mv_program_stmt(r->p, k);
  uopc_tensor *out = &r->tensors[st->storage];
  uopc_tensor_release(out);
  int rc = UOPC_OK;
  if (r->let_buffer[k] != st->storage) uopc_tensor_retain(out, &r->tensors[r->let_buffer[k]]);
  else rc = value_tensor(r->execs[k], 0, b, out, err);
  if (rc) return rc;
  buffers[0] = uopc_tensor_data(out);
  rc = call(r->execs[k], buffers, b, err);
  if (!rc) uopc_tensor_bump_version(out);
  return rc;
}

static int run_versioned(mv_runner *r, const sym_binding *b, uopc_error *err) {
  int rc = UOPC_OK;
  for (int k = 0; k < r->n_stmts && !rc; k++) {
    const mv_stmt *st = mv_program_stmt(r->p, k);
    void *buffers[st->n_loads + 2];
    for (int j = 0; j < st->n_loads; j++) buffers[1 + j] = uopc_tensor_data(&r->tensors[st->loads[j].view.storage]);
    rc = st->kind == MV_STORE ? run_store(r, k, b, buffers, err) : run_let(r, k, b, buffers, err);
  }
  return rc;
}

static int run_functional(mv_runner *r, const sym_binding *b, uopc_error *err) {
  uopc_tensor results[r->n_fout + 1];
  void *buffers[r->n_fout + r->n_storages + 1];
  memset(results, 0, sizeof results);
  int rc = UOPC_OK, n = 0;
  for (int k = 0; k < r->n_fout && !rc; k++) {
    if (mv_program_storage(r->p, r->fout_storage[k])->external)
      rc = scratch_tensor(&r->scratch[k], r->execs[0], k, b, &results[k], err);
    else rc = value_tensor(r->execs[0], k, b, &results[k], err);   /* a let's value outlives the run */
    buffers[n++] = uopc_tensor_data(&results[k]);
  }
  for (int s = 0; s < r->n_storages; s++)
    if (mv_program_storage(r->p, s)->external) buffers[n++] = uopc_tensor_data(&r->tensors[s]);
  if (!rc) rc = call(r->execs[0], buffers, b, err);
  for (int k = 0; k < r->n_fout && !rc; k++) {
    int s = r->fout_storage[k];
    if (mv_program_storage(r->p, s)->external) {   /* the caller's tensor is mutated, as eager code would */
      rc = uopc_tensor_copy(&r->tensors[s], &results[k], err);
      uopc_counter_add(MV_C_WRITEBACKS, 1);
    } else {
      uopc_tensor_release(&r->tensors[s]);
      uopc_tensor_retain(&r->tensors[s], &results[k]);
    }
  }
  for (int k = 0; k < r->n_fout; k++) uopc_tensor_release(&results[k]);
  return rc;
}

int mv_run(mv_runner *r, uopc_tensor *const *storages, int n, const sym_binding *dims, uopc_error *err) {
  if (!r) return UOPC_FAIL(err, UOPC_E_INVALID, "run: NULL runner");
  sym_binding b;
  if (dims) b = *dims;
  else sym_binding_init(&b);
  int rc = check_storages(r, storages, n, err);
  if (!rc) rc = bind_storages(r, storages, &b, err);
  if (rc) return rc;
  for (int s = 0; s < r->n_storages; s++) uopc_tensor_release(&r->tensors[s]);
  for (int s = 0, i = 0; s < r->n_storages; s++)
    if (mv_program_storage(r->p, s)->external) uopc_tensor_retain(&r->tensors[s], storages[i++]);
  r->has_run = 1;
  return r->mode == MV_FUNCTIONAL ? run_functional(r, &b, err) : run_versioned(r, &b, err);
}

const uopc_tensor *mv_runner_result(const mv_runner *r, int s) {
  return r && r->has_run && s >= 0 && s < r->n_storages && r->tensors[s].storage ? &r->tensors[s] : NULL;
}
mv_mode mv_runner_mode(const mv_runner *r) { return r->mode; }
mv_store_plan mv_runner_store_plan(const mv_runner *r, int k) { return r->plan[k]; }
int mv_runner_let_buffer(const mv_runner *r, int k) { return r->let_buffer[k]; }
const char *mv_runner_source(const mv_runner *r, int k) {
  if (r->mode == MV_FUNCTIONAL) return exec_source(r->execs[0]);
  return k >= 0 && k < r->n_stmts ? exec_source(r->execs[k]) : NULL;
}
