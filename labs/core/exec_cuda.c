/* exec_cuda.c: a lowered graph compiled for the GPU and called with host
 * tensors (given code; the compiler core). Every device buffer
 * lives for one call: an input's copy covers its storage from the base to
 * the last byte the view reaches, so the pointer the kernel takes (element 0,
 * or the base when the offset is an expression) lies inside the copy. */
#include <stdlib.h>
#include <string.h>
#include "exec_cuda.h"

struct exec_cuda {
  lower_program *low;
  uopc_cuda_program *program;
};

/* "<entry>_k<k>" for every loop nest, as lower.h names them. */
static int kernel_names(const lower_program *p, char (**names)[UOPC_COUNTER_NAME_MAX],
                        const char ***entries, uopc_error *err) {
  *names = calloc((size_t)p->n_kernels, sizeof **names);
  *entries = calloc((size_t)p->n_kernels, sizeof **entries);
  if (!*names || !*entries)
    return UOPC_FAIL(err, UOPC_E_NOMEM, "'%s': no memory for %d kernel names", p->entry, p->n_kernels);
  for (int k = 0; k < p->n_kernels; k++) {
    snprintf((*names)[k], sizeof (*names)[k], "%s_k%d", p->entry, k);
    (*entries)[k] = (*names)[k];
  }
  return UOPC_OK;
}

int exec_cuda_new(exec_cuda **out, const ir_graph *g, const ir_node *const *outputs, int n_outputs,
                  const char *entry, const uopc_cuda_options *opts, uopc_error *err) {
  exec_cuda *e = calloc(1, sizeof *e);
  if (!e) return UOPC_FAIL(err, UOPC_E_NOMEM, "exec_cuda '%s': out of memory", entry ? entry : "?");
  char (*names)[UOPC_COUNTER_NAME_MAX] = NULL;
  const char **entries = NULL;
  int rc = uopc_cuda_available(err);
  if (!rc) rc = lower_program_new(&e->low, g, outputs, n_outputs, entry, LOWER_CUDA, err);
  if (!rc) rc = kernel_names(e->low, &names, &entries, err);
  if (!rc) rc = uopc_cuda_program_new_kernels(&e->program, e->low->source.data, entries, e->low->n_kernels,
                                              opts, err);
  free(names);
  free(entries);
  if (rc) { exec_cuda_free(e); return rc; }
  uopc_counter_add(EXEC_CUDA_C_BUILT, 1);
  *out = e;
  return UOPC_OK;
}

void exec_cuda_free(exec_cuda *e) {
  if (!e) return;
  uopc_cuda_program_free(e->program);
  lower_program_free(e->low);
  free(e);
}

const lower_program *exec_cuda_lowered(const exec_cuda *e) { return e->low; }

/* ---- One call's device memory. */

typedef struct device_call {
  int n;                           /* buffers allocated so far */
  unsigned long long *mem;         /* outputs, inputs, then the scratch */
  size_t *bytes;
} device_call;

static int device_alloc(device_call *d, size_t bytes, uopc_error *err) {
  d->bytes[d->n] = bytes;
  return uopc_cuda_alloc(&d->mem[d->n++], bytes ? bytes : 1, err);   /* an empty view still gets an address */
}

static void device_release(device_call *d) {
  for (int k = 0; k < d->n; k++) uopc_cuda_free(d->mem[k], NULL);
  free(d->mem);
  free(d->bytes);
}

/* Copies input t from its storage base to the end of what it reaches; the
 * kernel's pointer is element 0, or the base when at_base. */
static int copy_input(device_call *d, const uopc_tensor *t, int at_base, unsigned long long *ptr,
                      uopc_error *err) {
  const unsigned char *base = t->storage->base;
  uopc_layout_bytes r = uopc_tensor_byte_range(t);
  const unsigned char *elem0 = uopc_tensor_data(t);
  size_t end = r.hi > (uintptr_t)elem0 ? r.hi - (uintptr_t)base : (size_t)(elem0 - base);
  int rc = device_alloc(d, end, err);
  if (!rc) rc = uopc_cuda_copy_to_device(d->mem[d->n - 1], base, end, err);
  *ptr = d->mem[d->n - 1] + (at_base ? 0 : (unsigned long long)(elem0 - base));
  return rc;
}

/* Every loop nest in order, each over its output's elements. */
static int launch_all(exec_cuda *e, const sym_binding *b, void **args, uopc_error *err) {
  const lower_program *p = e->low;
  int rc = UOPC_OK;
  for (int k = 0; k < p->n_kernels && !rc; k++) {
    int64_t threads;
    rc = lower_kernel_threads(p, k, b, &threads, err);
    if (rc || threads == 0) continue;
    int64_t blocks = (threads + EXEC_CUDA_BLOCK - 1) / EXEC_CUDA_BLOCK;
    unsigned grid[3] = {blocks < EXEC_CUDA_GRID_MAX ? (unsigned)blocks : EXEC_CUDA_GRID_MAX, 1, 1};
    unsigned block[3] = {EXEC_CUDA_BLOCK, 1, 1};
    rc = uopc_cuda_launch_kernel(e->program, k, grid, block, 0, args, err);
  }
  return rc;
}

int exec_cuda_run(exec_cuda *e, uopc_tensor *const *outputs, int n_outputs, const uopc_tensor *const *inputs,
                  int n_inputs, uopc_error *err) {
  const lower_program *p = e->low;
  sym_binding b;
  int rc = exec_check_call_lowered(p, outputs, n_outputs, inputs, n_inputs, &b, err);
  if (rc) return rc;
  int n_ptrs = p->n_outputs + p->n_inputs;
  device_call d = {0, calloc((size_t)n_ptrs + 1, sizeof *d.mem), calloc((size_t)n_ptrs + 1, sizeof *d.bytes)};
  unsigned long long ptrs[n_ptrs + 1];
  int64_t d64[p->n_dims + 1];
  int32_t d32[p->n_dims + 1];
  void *args[p->n_buffers + p->n_dims + 2];
  if (!d.mem || !d.bytes) rc = UOPC_FAIL(err, UOPC_E_NOMEM, "'%s': no memory for a call", p->entry);
  for (int k = 0; k < n_outputs && !rc; k++) {
    rc = device_alloc(&d, uopc_tensor_numel(outputs[k]) * uopc_dtype_size(outputs[k]->dtype), err);
    ptrs[k] = d.mem[k];
  }
  for (int i = 0; i < n_inputs && !rc; i++) {
    const ir_node *node = p->buffers[p->n_outputs + i].node;
    int at_base = !(node->offset->kind == SYM_CONST && node->offset->value == 0);
    rc = copy_input(&d, inputs[i], at_base, &ptrs[n_outputs + i], err);
  }
  int64_t scratch = 0;
  if (!rc && p->scratch_bytes) rc = sym_expr_eval(p->scratch_bytes, &b, &scratch, err);
  if (!rc && p->n_temps) rc = device_alloc(&d, (size_t)scratch, err);
  if (!rc && p->n_temps) ptrs[n_ptrs] = d.mem[d.n - 1];
  int n = 0;
  for (int k = 0; k < n_ptrs + (p->n_temps ? 1 : 0); k++) args[n++] = &ptrs[k];
  for (int k = 0; k < p->n_dims && !rc; k++) {
    rc = sym_binding_get(&b, &p->dims[k], &d64[k], err);
    d32[k] = (int32_t)d64[k];              /* the plan chose 32 bits only when every bound fits */
    args[n++] = p->index.bits == 32 ? (void *)&d32[k] : (void *)&d64[k];
  }
  if (!rc) rc = launch_all(e, &b, args, err);
  for (int k = 0; k < n_outputs && !rc; k++)
    rc = uopc_cuda_copy_to_host(uopc_tensor_data(outputs[k]), d.mem[k], d.bytes[k], err);
  device_release(&d);
  if (rc) return rc;
  for (int k = 0; k < n_outputs; k++) uopc_tensor_bump_version(outputs[k]);   /* written (23.3) */
  return UOPC_OK;
}
