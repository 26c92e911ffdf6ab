/* exec.c: compiling a lowered graph and calling it with tensors (given code;
 * the compiler core). The binder reads every extent, stride and
 * offset of the call's tensors once and checks it against the graph's
 * expression for it, so a kernel never runs on a shape it was not planned
 * for. Chapter 23.1, "Running a graph". */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "exec.h"
#include "uopc/debug.h"

_Static_assert(UOPC_SIGNATURE_MAX <= SYM_BINDING_MAX, "a program's dims fit one binding");

/* A scratch block a call holds while it runs. One exec may be called from
 * several threads at once: each call takes a free slot (an atomic flag, so
 * no lock) and grows it to its own binding's size; with every slot taken, a
 * call allocates a block of its own and frees it after. Calls of one thread
 * after another reuse slot 0's block, as the single grow-only block did. */
enum { EXEC_SCRATCH_SLOTS = 8 };

typedef struct scratch_slot {
  atomic_int busy;
  void *mem;
  size_t cap;
} scratch_slot;

struct exec {
  lower_program *low;
  uopc_program *program;
  scratch_slot slots[EXEC_SCRATCH_SLOTS];
};

/* UOPC_DEBUG=4, beside the source: a LOWER_FUSE program's groups and plan
 * (lower_program_print_groups). A text that cannot be made is not shown. */
static void show_groups(const lower_program *p) {
  if (uopc_debug_level() < 4) return;
  codegen_text t = {0};
  uopc_error err = {0};
  if (lower_program_print_groups(&t, p, &err) == UOPC_OK) uopc_debug(4, "fusion groups of %s:\n%s", p->entry, t.data);
  codegen_text_fini(&t);
}

int exec_new(exec **out, const ir_graph *g, const ir_node *const *outputs, int n_outputs,
             const char *entry, const uopc_program_options *opts, uopc_error *err) {
  return exec_new_flags(out, g, outputs, n_outputs, entry, 0, opts, err);
}

int exec_new_flags(exec **out, const ir_graph *g, const ir_node *const *outputs, int n_outputs,
                   const char *entry, unsigned flags, const uopc_program_options *opts, uopc_error *err) {
  return exec_new_rule(out, g, outputs, n_outputs, entry, flags, NULL, opts, err);
}

int exec_new_rule(exec **out, const ir_graph *g, const ir_node *const *outputs, int n_outputs,
                  const char *entry, unsigned flags, const lower_fuse_rule *rule,
                  const uopc_program_options *opts, uopc_error *err) {
  exec *e = calloc(1, sizeof *e);
  if (!e) return UOPC_FAIL(err, UOPC_E_NOMEM, "exec '%s': out of memory", entry ? entry : "?");
  int rc = lower_program_new_rule(&e->low, g, outputs, n_outputs, entry, LOWER_C, flags, rule, err);
  uopc_program_options with = {0};
  if (opts) with = *opts;
  with.openmp |= !rc && e->low->uses_openmp;       /* the text holds an omp loop */
  if (!rc) rc = uopc_program_new(&e->program, e->low->source.data, e->low->entry, e->low->signature,
                                 &with, err);
  if (rc) { exec_free(e); return rc; }
  if (flags & LOWER_FUSE) show_groups(e->low);
  uopc_counter_add(EXEC_C_BUILT, 1);
  *out = e;
  return UOPC_OK;
}

void exec_free(exec *e) {
  if (!e) return;
  uopc_program_free(e->program);
  lower_program_free(e->low);
  for (int k = 0; k < EXEC_SCRATCH_SLOTS; k++) free(e->slots[k].mem);
  free(e);
}

const lower_program *exec_lowered(const exec *e) { return e->low; }
const char *exec_source(const exec *e) { return e->low->source.data; }
const uopc_program *exec_program(const exec *e) { return e->program; }

/* ---- The shape binder. */

typedef struct site { const char *input; const char *what; int axis; } site;

/* Binds e = value: a dim is bound (or must equal its earlier value, bound at
 * origin[k] for binding k), a constant must match; anything else is checked
 * after every dim is bound. */
static int bind_one(const site *s, const sym_expr *e, int64_t value, sym_binding *b, site *origin,
                    int *deferred, uopc_error *err) {
  if (e->kind == SYM_CONST) {
    if (e->value == value) return UOPC_OK;
    return UOPC_FAIL(err, UOPC_E_BOUNDS, "input '%s' %s %d is %lld, the graph needs %lld", s->input, s->what,
                     s->axis, (long long)value, (long long)e->value);
  }
  if (e->kind != SYM_DIM) { *deferred = 1; return UOPC_OK; }
  int at = sym_binding_find(b, e->dim.name);
  if (at >= 0 && b->values[at] != value)
    return UOPC_FAIL(err, UOPC_E_BOUNDS, "input '%s' %s %d is %lld, but dim '%s' is %lld from input '%s'"
                     " %s %d", s->input, s->what, s->axis, (long long)value, e->dim.name,
                     (long long)b->values[at], origin[at].input, origin[at].what, origin[at].axis);
  if (at >= 0) return UOPC_OK;
  uopc_error inner;
  if (sym_dim_bind(b, &e->dim, value, &inner) == UOPC_OK) {
    origin[sym_binding_find(b, e->dim.name)] = *s;
    return UOPC_OK;
  }
  return UOPC_FAIL(err, inner.code, "input '%s' %s %d: %s", s->input, s->what, s->axis, inner.message);
}

static int check_one(const site *s, const sym_expr *e, int64_t value, const sym_binding *b, uopc_error *err) {
  int64_t want;
  int rc = sym_expr_eval(e, b, &want, err);
  if (rc) return rc;
  if (want == value) return UOPC_OK;
  char text[256] = "?";
  sym_expr_format(e, text, sizeof text, NULL);
  return UOPC_FAIL(err, UOPC_E_BOUNDS, "input '%s' %s %d is %lld, the graph needs %s = %lld", s->input, s->what,
                   s->axis, (long long)value, text, (long long)want);
}

/* pass 0 binds, pass 1 checks what pass 0 deferred. */
static int bind_input(const ir_node *n, const uopc_tensor *t, int pass, sym_binding *b, site *origin,
                      int *deferred, uopc_error *err) {
  int rc = UOPC_OK;
  for (int k = 0; k < n->rank && !rc; k++) {
    site s = {n->name, "axis", k};
    rc = pass ? (n->shape[k]->kind > SYM_DIM ? check_one(&s, n->shape[k], t->shape[k], b, err) : UOPC_OK)
              : bind_one(&s, n->shape[k], t->shape[k], b, origin, deferred, err);
  }
  for (int k = 0; k < n->rank && !rc && !n->contiguous; k++) {
    site s = {n->name, "stride", k};
    rc = pass ? (n->strides[k]->kind > SYM_DIM ? check_one(&s, n->strides[k], t->strides[k], b, err) : UOPC_OK)
              : bind_one(&s, n->strides[k], t->strides[k], b, origin, deferred, err);
  }
  site s = {n->name, "offset", 0};
  if (!rc && !(n->offset->kind == SYM_CONST && n->offset->value == 0))
    rc = pass ? (n->offset->kind > SYM_DIM ? check_one(&s, n->offset, t->offset, b, err) : UOPC_OK)
              : bind_one(&s, n->offset, t->offset, b, origin, deferred, err);
  return rc;
}

static int check_input(const ir_node *n, const uopc_tensor *t, uopc_error *err) {
  if (!t || !t->storage) return UOPC_FAIL(err, UOPC_E_INVALID, "input '%s' is NULL or released", n->name);
  if (t->dtype != n->dtype)
    return UOPC_FAIL(err, UOPC_E_DTYPE, "input '%s' is %s, the graph takes %s", n->name,
                     uopc_dtype_name(t->dtype), uopc_dtype_name(n->dtype));
  if (t->rank != n->rank)
    return UOPC_FAIL(err, UOPC_E_INVALID, "input '%s' has rank %d, the graph takes rank %d", n->name, t->rank,
                     n->rank);
  if (n->contiguous && !uopc_tensor_is_contiguous(t))
    return UOPC_FAIL(err, UOPC_E_LAYOUT, "input '%s' is not contiguous; this program reads packed rows"
                     " (a strided variant takes its strides as dims)", n->name);
  return UOPC_OK;
}

static int check_bound(const lower_program *p, const sym_binding *b, uopc_error *err) {
  for (int d = 0; d < p->n_dims; d++)
    if (sym_binding_find(b, p->dims[d].name) < 0)
      return UOPC_FAIL(err, UOPC_E_UNBOUND, "dim '%s' of '%s' is not determined by any input's extents,"
                       " strides or offset", p->dims[d].name, p->entry);
  for (int k = 0; k < p->n_nonempty; k++) {
    int64_t v;
    int rc = sym_expr_eval(p->nonempty[k].extent, b, &v, err);
    if (rc) return rc;
    if (v < 1) return UOPC_FAIL(err, UOPC_E_BOUNDS, "max %%%d over an empty axis (extent %lld): NumPy refuses"
                                " it too", p->nonempty[k].node->id, (long long)v);
  }
  return UOPC_OK;
}

static int bind_lowered(const lower_program *p, const uopc_tensor *const *inputs, int n_inputs, sym_binding *b,
                        uopc_error *err) {
  if (n_inputs != p->n_inputs || (n_inputs && !inputs))
    return UOPC_FAIL(err, UOPC_E_INVALID, "'%s' takes %d inputs, not %d", p->entry, p->n_inputs, n_inputs);
  b->count = 0;   /* not sym_binding_init: its memset of every slot (2 KB) is most of a bind */
  site origin[SYM_BINDING_MAX];
  int deferred = 0, rc = UOPC_OK;
  for (int i = 0; i < n_inputs && !rc; i++) rc = check_input(p->buffers[p->n_outputs + i].node, inputs[i], err);
  for (int pass = 0; pass < 2 && !rc; pass++)
    for (int i = 0; i < n_inputs && !rc && (pass == 0 || deferred); i++)
      rc = bind_input(p->buffers[p->n_outputs + i].node, inputs[i], pass, b, origin, &deferred, err);
  return rc ? rc : check_bound(p, b, err);
}

int exec_bind(const exec *e, const uopc_tensor *const *inputs, int n_inputs, sym_binding *b,
              uopc_error *err) {
  return bind_lowered(e->low, inputs, n_inputs, b, err);
}

static int output_shape(const lower_program *p, int k, const sym_binding *b, int64_t *shape, int *rank,
                        uopc_error *err) {
  const ir_node *n = p->buffers[k].node;
  *rank = n->rank;
  for (int a = 0; a < n->rank; a++) {
    int rc = sym_expr_eval(n->shape[a], b, &shape[a], err);
    if (rc) return rc;
  }
  return UOPC_OK;
}

int exec_output_shape(const exec *e, int k, const sym_binding *b, int64_t *shape, int *rank,
                      uopc_error *err) {
  return output_shape(e->low, k, b, shape, rank, err);
}

/* ---- Running. */

/* "(2, 5)"; "()" for a scalar. */
static void shape_text(const int64_t *shape, int rank, char *buf, size_t size) {
  size_t used = (size_t)snprintf(buf, size, "(");
  for (int k = 0; k < rank && used < size; k++)
    used += (size_t)snprintf(buf + used, size - used, "%s%lld", k ? ", " : "", (long long)shape[k]);
  if (used < size) snprintf(buf + used, size - used, ")");
}

static int check_output(const lower_program *p, int k, const uopc_tensor *t, const sym_binding *b,
                        uopc_error *err) {
  const ir_node *n = p->buffers[k].node;
  int64_t shape[UOPC_MAX_RANK];
  int rank, rc = output_shape(p, k, b, shape, &rank, err);
  if (rc) return rc;
  if (!t || !t->storage) return UOPC_FAIL(err, UOPC_E_INVALID, "output %d is NULL or released", k);
  if (t->dtype != n->dtype)
    return UOPC_FAIL(err, UOPC_E_DTYPE, "output %d is %s, the graph makes %s", k, uopc_dtype_name(t->dtype),
                     uopc_dtype_name(n->dtype));
  int same = t->rank == rank;
  for (int a = 0; a < rank && same; a++) same = t->shape[a] == shape[a];
  if (!same) {
    char got[256], want[256];
    shape_text(t->shape, t->rank, got, sizeof got);
    shape_text(shape, rank, want, sizeof want);
    return UOPC_FAIL(err, UOPC_E_BOUNDS, "output %d has shape %s, this call makes %s", k, got, want);
  }
  if (!uopc_tensor_is_contiguous(t))
    return UOPC_FAIL(err, UOPC_E_LAYOUT, "output %d is not contiguous; the program writes packed rows", k);
  return UOPC_OK;
}

int exec_check_call_lowered(const lower_program *p, uopc_tensor *const *outputs, int n_outputs,
                            const uopc_tensor *const *inputs, int n_inputs, sym_binding *b, uopc_error *err) {
  if (n_outputs != p->n_outputs || !outputs)
    return UOPC_FAIL(err, UOPC_E_INVALID, "'%s' makes %d outputs, not %d", p->entry, p->n_outputs, n_outputs);
  int rc = bind_lowered(p, inputs, n_inputs, b, err);
  for (int k = 0; k < n_outputs && !rc; k++) rc = check_output(p, k, outputs[k], b, err);
  return rc;
}

static int check_aliases(uopc_tensor *const *outputs, int n_outputs, const uopc_tensor *const *inputs,
                         int n_inputs, const lower_program *p, uopc_error *err) {
  for (int k = 0; k < n_outputs; k++) {
    for (int i = 0; i < n_inputs; i++)
      if (uopc_tensor_numel(outputs[k]) && uopc_tensor_may_overlap(outputs[k], inputs[i]))
        return UOPC_FAIL(err, UOPC_E_ALIAS, "output %d shares memory with input '%s': the kernel's"
                         " restrict buffers forbid it", k, p->buffers[p->n_outputs + i].name);
    for (int j = 0; j < k; j++)
      if (uopc_tensor_numel(outputs[k]) && uopc_tensor_may_overlap(outputs[k], outputs[j]))
        return UOPC_FAIL(err, UOPC_E_ALIAS, "outputs %d and %d share memory", j, k);
  }
  return UOPC_OK;
}

/* One call's scratch: slot k's block (slot = k) or, with every slot taken,
 * a block of the call's own (slot = -1); mem NULL with no temporaries. */
typedef struct scratch_hold {
  void *mem;
  int slot;
} scratch_hold;

/* EXEC_C_PEAK_TEMP: raised to bytes when above its value (so a counter
 * reset starts a new peak). Only for LOWER_FUSE programs: the logs of labs
 * 23.1-23.4 (goldens) stay as they were. A lock: read and raise are one step. */
static void note_peak(int64_t bytes) {
  static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_lock(&lock);
  int64_t seen = uopc_counter_get(EXEC_C_PEAK_TEMP);
  if (bytes > seen) uopc_counter_add(EXEC_C_PEAK_TEMP, bytes - seen);
  pthread_mutex_unlock(&lock);
}

static int scratch_take(exec *e, const sym_binding *b, scratch_hold *h, uopc_error *err) {
  int64_t bytes = 0;
  h->mem = NULL;
  h->slot = -1;
  int rc = e->low->scratch_bytes ? sym_expr_eval(e->low->scratch_bytes, b, &bytes, err) : UOPC_OK;
  if (rc || !e->low->scratch_bytes) return rc;
  if (e->low->flags & LOWER_FUSE) note_peak(bytes);
  for (int k = 0; k < EXEC_SCRATCH_SLOTS && h->slot < 0; k++)
    if (!atomic_exchange(&e->slots[k].busy, 1)) h->slot = k;
  scratch_slot *s = h->slot >= 0 ? &e->slots[h->slot] : NULL;
  if (s && (size_t)bytes <= s->cap) { h->mem = s->mem; return UOPC_OK; }
  /* aligned_alloc wants a multiple of the alignment; the plan's total is one. */
  size_t size = ((size_t)bytes + 63) / 64 * 64;
  void *mem = aligned_alloc(64, size ? size : 64);
  if (!mem) {
    if (s) atomic_store(&s->busy, 0);
    return UOPC_FAIL(err, UOPC_E_NOMEM, "'%s': no memory for %lld bytes of temporaries", e->low->entry,
                     (long long)bytes);
  }
  if (s) {
    free(s->mem);
    s->mem = mem;
    s->cap = size;
  }
  h->mem = mem;
  return UOPC_OK;
}

static void scratch_give(exec *e, scratch_hold *h) {
  if (h->slot >= 0) atomic_store(&e->slots[h->slot].busy, 0);
  else free(h->mem);
  h->mem = NULL;
}

/* The kernel on buffers (outputs, inputs, as the kernel takes them), the
 * value of each lowered dim and the call's scratch. */
static void call_program(exec *e, void *const *buffers, const int64_t *dims, void *scratch) {
  const lower_program *p = e->low;
  int n_ptrs = p->n_outputs + p->n_inputs, n = 0;
  void *ptrs[n_ptrs + 1];
  int32_t d32[p->n_dims + 1];
  void *args[p->n_buffers + p->n_dims + 2];
  for (int k = 0; k < n_ptrs; k++) ptrs[k] = buffers[k];
  ptrs[n_ptrs] = scratch;
  for (int k = 0; k < n_ptrs + (p->n_temps ? 1 : 0); k++) args[n++] = &ptrs[k];
  for (int d = 0; d < p->n_dims; d++) {
    d32[d] = (int32_t)dims[d];            /* the plan chose 32 bits only when every bound fits */
    args[n++] = p->index.bits == 32 ? (void *)&d32[d] : (void *)&dims[d];
  }
  uopc_program_call(e->program, args);
}

int exec_run(exec *e, uopc_tensor *const *outputs, int n_outputs, const uopc_tensor *const *inputs,
             int n_inputs, uopc_error *err) {
  const lower_program *p = e->low;
  sym_binding b;
  int rc = exec_check_call_lowered(p, outputs, n_outputs, inputs, n_inputs, &b, err);
  if (!rc) rc = check_aliases(outputs, n_outputs, inputs, n_inputs, p, err);
  if (rc) return rc;
  void *ptrs[p->n_outputs + p->n_inputs + 1];
  int64_t d64[p->n_dims + 1];
  for (int k = 0; k < n_outputs; k++) ptrs[k] = uopc_tensor_data(outputs[k]);
  for (int i = 0; i < n_inputs; i++) {
    const ir_node *node = p->buffers[p->n_outputs + i].node;
    int at_base = !(node->offset->kind == SYM_CONST && node->offset->value == 0);
    ptrs[n_outputs + i] = at_base ? (void *)inputs[i]->storage->base : uopc_tensor_data(inputs[i]);
  }
  for (int d = 0; d < p->n_dims && !rc; d++) rc = sym_binding_get(&b, &p->dims[d], &d64[d], err);
  scratch_hold h;
  if (!rc) rc = scratch_take(e, &b, &h, err);
  if (rc) return rc;
  call_program(e, ptrs, d64, h.mem);
  scratch_give(e, &h);
  for (int k = 0; k < n_outputs; k++) uopc_tensor_bump_version(outputs[k]);   /* written (23.3) */
  return UOPC_OK;
}

/* Only what no guard states: a max over an empty axis, and the scratch,
 * both read from a binding made of the values given. */
int exec_run_checked(exec *e, void *const *buffers, const int64_t *dims, uopc_error *err) {
  const lower_program *p = e->low;
  scratch_hold h = {NULL, -1};
  if (p->n_nonempty || p->scratch_bytes) {
    sym_binding b;
    b.count = 0;
    for (int d = 0; d < p->n_dims; d++) {
      b.dims[d] = p->dims[d];
      b.values[d] = dims[d];
    }
    b.count = p->n_dims;
    int rc = check_bound(p, &b, err);
    if (!rc) rc = scratch_take(e, &b, &h, err);
    if (rc) return rc;
  }
  call_program(e, buffers, dims, h.mem);
  if (p->scratch_bytes) scratch_give(e, &h);
  return UOPC_OK;
}
