/* tj_graph.c: capture only (section 23.7, given code). The contract of the
 * artifact a call would build, made and printed but never compiled: the
 * graph with its symbolic shapes (or concrete ones), and every guard.
 * Chapter 23.7, "Reading the guards". */
#include <stdlib.h>
#include <string.h>
#include "tj_internal.h"

struct tj_graph {
  tj_function *f;       /* the signature */
  tj_group *group;      /* the call's structure and the cache's names (f's) */
  vcache_variant v;     /* spec, graph, guard set: a variant never placed */
  tj_artifact a;
  codegen_text text;
};

void tj_graph_free(tj_graph *g) {
  if (!g) return;
  ir_graph_free(g->v.graph);
  guard_set_fini(&g->v.guards);
  free(g->a.guards);
  tj_callouts_free(g->a.callouts);
  codegen_text_fini(&g->text);
  tj_free(g->f);
  free(g);
}

const char *tj_graph_text(const tj_graph *g) { return g && g->text.data ? g->text.data : ""; }

const ir_graph *tj_graph_ir(const tj_graph *g, const ir_node *const **outputs, int *n_outputs) {
  if (outputs) *outputs = g->v.outputs;
  if (n_outputs) *n_outputs = g->f->opts.n_outputs;
  return g->v.graph;
}

static int print(tj_graph *g, uopc_error *err) {
  char guards[8192];
  size_t used = 0;
  guards[0] = '\0';
  tj_guards_text(g->group, &g->a, "  ", guards, sizeof guards, &used);
  tj_callouts_text(&g->a, "  ", guards, sizeof guards);   /* where the graph is split */
  int rc = codegen_printf(&g->text, err, "graph:\n");
  if (!rc) rc = ir_print_prefixed(&g->text, g->v.graph, g->v.outputs, g->f->opts.n_outputs, NULL, "  ", err);
  if (!rc) rc = codegen_printf(&g->text, err, "guards:\n%s", guards);
  return rc;
}

static int capture(tj_graph *g, const tj_arg *args, int n_args, uopc_error *err) {
  tj_function *f = g->f;
  guard_call call;
  int rc = tj_check_args(f, args, n_args, &f->cur.flat, err);
  if (!rc) rc = tj_fix_signature(f, args, n_args, err);
  if (!rc) rc = tj_group_new(f, &f->cur.flat, &g->group, err);
  if (rc) return rc;
  const tj_group *gr = g->group;
  f->cur.args = args;
  for (int k = 0; k < gr->n_tensors; k++) f->cur.tensors[k] = tj_flat_tensor(&f->cur.flat, k);
  if ((rc = guard_call_init(&call, gr->n_tensors, f->cur.tensors, err))) return rc;
  g->a.v = &g->v;
  rc = tj_contract(g->group, &call, &g->v, &g->a, err);
  return rc ? rc : print(g, err);
}

int tj_make_graph(tj_graph **out, tj_model model, void *user, const tj_arg *args, int n_args, unsigned mode,
                  uopc_error *err) {
  if (!out || !model || (mode != TJ_SYMBOLIC && mode != TJ_CONCRETE))
    return UOPC_FAIL(err, UOPC_E_INVALID, "tj_make_graph: a model, and mode TJ_SYMBOLIC or TJ_CONCRETE");
  for (int k = 0; args && k < n_args && k < TJ_MAX_ARGS; k++)
    if (args[k].kind == TJ_TENSOR && args[k].tensor && !args[k].tensor->storage)
      return UOPC_FAIL(err, UOPC_E_UNSUPPORTED, "tj_make_graph: argument %d has no storage; storage-free (\"fake\")"
                       " tracing is not supported, so pass a real tensor of the shape", k);
  tj_graph *g = calloc(1, sizeof *g);
  if (!g) return UOPC_FAIL(err, UOPC_E_NOMEM, "tj_make_graph: out of memory");
  /* strict: capture only, so a graph break is refused by its line, never run in regions */
  const tj_options o = {.name = "graph", .dynamic = mode == TJ_CONCRETE ? TJ_OFF : TJ_ON, .strict_native = 1};
  int rc = tj_compile(&g->f, model, user, &o, err);
  if (!rc) rc = capture(g, args, n_args, err);
  if (rc) { tj_graph_free(g); return rc; }
  *out = g;
  return UOPC_OK;
}
