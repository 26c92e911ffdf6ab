/* tj_view.c: outputs that are views of an input (section 23.7, given code).
 * An output that only moves an input's elements (a chain of slices,
 * selects, permutes and expands over it, and reshapes that need no copy:
 * of a packed layout) is returned as a view: a tensor
 * that shares the input's storage, whose shape, strides and offset are the
 * chain's affine form (ir_view_layout) evaluated per call from the binding.
 * No kernel computes it, so a write through it is a write of the input, as
 * NumPy's and PyTorch's views are. Which outputs are views is planned here;
 * each is made per call by lab 23.7's tj_view_make (labs/23.7-tensorjit/).
 * Chapter 23.7, "Views". */
#include <string.h>
#include "tj_internal.h"

int tj_view_plan(tj_artifact *a, const vcache_variant *v, int n_outputs, uopc_error *err) {
  a->n_computed = 0;
  for (int k = 0; k < n_outputs; k++) {
    const ir_node *n = v->outputs[k], *base = ir_view_base(n);
    a->view_of[k] = -1;
    /* in the graph's arena (v owns both); a reshape of a layout that is not packed needs a copy */
    uopc_error why = {0};
    if (base->op != IR_INPUT || ir_view_layout_reshaped(ir_graph_arena(v->graph), n, &a->view[k], &why)) {
      if (why.code && why.code != UOPC_E_INVALID) return (*err = why, why.code);
      a->n_computed++;
      continue;
    }
    a->view_of[k] = base->input;
  }
  return UOPC_OK;
}
