/* ir_passes.c: the graph passes in their order (the compiler core; issue
 * 27): decompose, fold, CSE, DCE, each over the previous one's graph, each
 * graph but the last freed as soon as the next exists. The order is the one
 * where each pass leaves work for the next only: decomposition makes sums
 * (CSE's, when the graph also sums the same operand) and sizes (folding's,
 * when the count is a number), folding makes equal constants (CSE's) and
 * unreached operands (DCE's), CSE unreached duplicates (DCE's), and DCE
 * makes nothing. With IR_PASS_PRINT or UOPC_DEBUG >= 4 (the level that
 * prints generated source) the graph is printed before and after each pass.
 * Chapter 23.1, "Passes over the graph". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ir_pass.h"
#include "uopc/debug.h"

/* "== <title>: N nodes ==" and the graph, to trace or stderr. */
static int show(codegen_text *trace, const char *title, const ir_graph *g, const ir_node *const *outputs, int n,
                uopc_error *err) {
  codegen_text own = {0}, *t = trace ? trace : &own;
  int rc = codegen_printf(t, err, "== %s: %d nodes ==\n", title, ir_graph_node_count(g));
  if (!rc) rc = ir_print(t, g, outputs, n, err);
  if (!rc && !trace) fputs(own.data, stderr);
  codegen_text_fini(&own);
  return rc;
}

static const struct {
  unsigned flag;
  const char *name;
  ir_pass_fn *run;
} PASSES[] = {
  {IR_PASS_DECOMPOSE, "decompose", ir_pass_decompose},
  {IR_PASS_FOLD, "fold", ir_pass_fold},
  {IR_PASS_CSE, "cse", ir_pass_cse},
  {IR_PASS_DCE, "dce", ir_pass_dce},
};

int ir_passes_run(ir_graph **out, const ir_node **new_outputs, const ir_graph *g, const ir_node *const *outputs,
                  int n, unsigned flags, codegen_text *trace, uopc_error *err) {
  int print = (flags & IR_PASS_PRINT) || uopc_debug_level() >= 4, rc = UOPC_OK;
  codegen_text *to = (flags & IR_PASS_PRINT) ? trace : NULL;
  const ir_node **cur = calloc((size_t)(n > 0 ? n : 1), sizeof *cur);
  if (!cur) return UOPC_FAIL(err, UOPC_E_NOMEM, "passes: out of memory");
  if (n > 0 && outputs) memcpy(cur, outputs, (size_t)n * sizeof *cur);
  const ir_graph *at = g;
  ir_graph *owned = NULL;
  if (print) rc = show(to, "before the passes", g, outputs, n, err);
  for (size_t k = 0; k < sizeof PASSES / sizeof *PASSES && !rc; k++) {
    if (!(flags & PASSES[k].flag)) continue;
    ir_graph *next = NULL;
    rc = PASSES[k].run(&next, new_outputs, at, cur, n, err);
    if (rc) break;
    ir_graph_free(owned);
    at = owned = next;
    memcpy(cur, new_outputs, (size_t)n * sizeof *cur);
    if (print) {
      char title[64];
      snprintf(title, sizeof title, "after %s", PASSES[k].name);
      rc = show(to, title, at, cur, n, err);
    }
  }
  if (!rc && !owned) {          /* no pass selected: a copy, so the caller always owns *out */
    rc = ir_pass_dce(&owned, new_outputs, g, outputs, n, err);
    at = owned;
  }
  free(cur);
  if (rc) { ir_graph_free(owned); return rc; }
  *out = owned;
  return UOPC_OK;
}
