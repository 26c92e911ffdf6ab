/* lower.c: the graph IR to a program (given code; the compiler core).
 * The lowering runs as passes in sequence, each file using only those before
 * it: planning (lower_plan.c: buffers, dims, scratch, the index width), the
 * loop nest of each materialised node (lower_kernel.c: a value is computed at
 * an index vector; a movement op rewrites the vector, an elementwise op
 * combines its operands' values at the same vector, a materialised node is a
 * load), and the text around them for the C or the CUDA back end (emit.c:
 * banner, prelude, functions). This file is the pipeline and the program's
 * lifetime. Chapter 23.1, "One lowering, two back ends". */
#include <stdio.h>
#include <stdlib.h>
#include "lower_internal.h"

int lower_program_new(lower_program **out, const ir_graph *g, const ir_node *const *outputs,
                      int n_outputs, const char *entry, lower_backend backend, uopc_error *err) {
  return lower_program_new_flags(out, g, outputs, n_outputs, entry, backend, 0, err);
}

int lower_program_new_flags(lower_program **out, const ir_graph *g, const ir_node *const *outputs,
                            int n_outputs, const char *entry, lower_backend backend, unsigned flags,
                            uopc_error *err) {
  return lower_program_new_rule(out, g, outputs, n_outputs, entry, backend, flags, NULL, err);
}

int lower_program_new_rule(lower_program **out, const ir_graph *g, const ir_node *const *outputs,
                           int n_outputs, const char *entry, lower_backend backend, unsigned flags,
                           const lower_fuse_rule *rule, uopc_error *err) {
  int rc = lower_plan_check_outputs(g, outputs, n_outputs, entry, err);
  if (rc) return rc;
  lower_program *p = calloc(1, sizeof *p);
  if (!p) return UOPC_FAIL(err, UOPC_E_NOMEM, "lower: out of memory");
  snprintf(p->entry, sizeof p->entry, "%s", entry);
  p->backend = backend;
  p->flags = flags & (LOWER_MAY_ALIAS | LOWER_FUSE | LOWER_VEC_EXP | LOWER_VEC_TANH | LOWER_PARALLEL);
  p->fuse_rule = p->flags & LOWER_FUSE ? rule : NULL;
  p->graph = g;
  p->n_outputs = n_outputs;
  rc = lower_plan(p, outputs, err);
  if (!rc) rc = lower_emit_source(p, err);       /* may widen the index and re-emit */
  if (!rc) rc = lower_plan_signature(p, err);
  if (rc) { lower_program_free(p); return rc; }
  *out = p;
  return UOPC_OK;
}

void lower_program_free(lower_program *p) {
  if (!p) return;
  free(p->buffers);
  free(p->kernel_buffer);
  free(p->dims);
  free(p->nonempty);
  codegen_text_fini(&p->source);
  free(p);
}

int lower_kernel_threads(const lower_program *p, int k, const sym_binding *b, int64_t *threads,
                         uopc_error *err) {
  const ir_node *n = p->buffers[p->kernel_buffer[k]].node;
  int64_t total = 1;
  for (int a = 0; a < n->rank; a++) {
    int64_t v;
    int rc = sym_expr_eval(n->shape[a], b, &v, err);
    if (rc) return rc;
    if (__builtin_mul_overflow(total, v, &total))
      return UOPC_FAIL(err, UOPC_E_OVERFLOW, "kernel %d of '%s': thread count overflows", k, p->entry);
  }
  *threads = total;
  return UOPC_OK;
}
