/* tj_structure.c: which group of artifacts a call's structure selects
 * (section 23.7, given code). A call's arguments, flattened depth first, are
 * its structure: each node's path, kind, member count, and each tensor's
 * dtype and rank. A function keeps one group per structure it has seen; a
 * call takes the group whose structure is its own, and when none is, says
 * why each kept one is rejected, naming the first member that differs
 * (params[2].bias), as a guard does. Chapter 23.7, "Containers". */
#include <stdio.h>
#include <string.h>
#include "tj_internal.h"

static int same_node(const tj_node *a, const tj_node *b) {
  return a->kind == b->kind && a->n == b->n && a->depth == b->depth && a->dtype == b->dtype && a->rank == b->rank &&
         !strcmp(a->path, b->path);
}

tj_group *tj_group_of(const tj_function *f, const tj_flat *flat) {
  /* without containers the structure is the signature, which tj_check_args checked: one group */
  if (!flat->containers && f->n_groups == 1 && !f->groups[0]->containers) return f->groups[0];
  for (int k = 0; k < f->n_groups; k++) {
    const tj_group *g = f->groups[k];
    int same = g->n_nodes == flat->n_nodes;
    for (int i = 0; same && i < g->n_nodes; i++) same = same_node(&g->nodes[i], &flat->nodes[i]);
    if (same) return f->groups[k];
  }
  return NULL;
}

/* "params[1] is a tensor of f32, rank 2": what node n is. */
static void node_text(const tj_node *n, char *buf, size_t size) {
  switch (n->kind) {
  case TJ_TENSOR: snprintf(buf, size, "%s is a tensor of %s, rank %d", n->path, uopc_dtype_name(n->dtype), n->rank); break;
  case TJ_INT: snprintf(buf, size, "%s is an int", n->path); break;
  case TJ_SYM_INT: snprintf(buf, size, "%s is a symbolic int", n->path); break;
  case TJ_DOUBLE: snprintf(buf, size, "%s is a double", n->path); break;
  case TJ_LIST: snprintf(buf, size, "%s is a list of %d", n->path, n->n); break;
  default: snprintf(buf, size, "%s is a record of %d", n->path, n->n); break;
  }
}

void tj_structure_text(const tj_group *g, char *buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; i < g->n_nodes && used + 1 < size; i++) {
    char t[TJ_PATH_MAX + 64];
    node_text(&g->nodes[i], t, sizeof t);
    int n = snprintf(buf + used, size - used, "%s%s", i ? "; " : "", t);
    if (n > 0) used = used + (size_t)n < size ? used + (size_t)n : size - 1;
  }
}

/* The last path component of node i ("bias" of "params[2].bias"). */
static const char *leaf_name(const tj_node *n) {
  const char *dot = strrchr(n->path, '.');
  return dot ? dot + 1 : n->path;
}

/* Record p's member names in g's structure, in order. */
static int traced_members(const tj_group *g, int p, const char **names) {
  int count = 0;
  for (int i = p + 1; i < g->n_nodes && g->nodes[i].depth > g->nodes[p].depth; i++)
    if (g->nodes[i].depth == g->nodes[p].depth + 1) names[count++] = leaf_name(&g->nodes[i]);
  return count;
}

static int has_name(const char *const *names, int n, const char *name) {
  for (int k = 0; k < n; k++)
    if (!strcmp(names[k], name)) return 1;
  return 0;
}

/* Record p's members differ: one missing, one new, or another order. */
static void record_reject(const tj_group *g, const tj_flat *flat, int p, char *buf, size_t size) {
  const char *traced[TJ_MAX_NODES];
  const tj_arg *now = flat->at[p];
  const char *path = g->nodes[p].path;
  int n = traced_members(g, p, traced);
  for (int k = 0; k < n; k++)
    if (!has_name(now->names, now->n, traced[k])) {
      snprintf(buf, size, "structure guard '%s.%s is present' failed: this call's %s has no member '%s'", path,
               traced[k], path, traced[k]);
      return;
    }
  for (int k = 0; k < now->n; k++)
    if (!has_name(traced, n, now->names[k])) {
      snprintf(buf, size, "structure guard '%s is a record of %d' failed: this call's %s.%s is an extra member", path, n,
               path, now->names[k]);
      return;
    }
  for (int k = 0; k < n; k++)
    if (strcmp(traced[k], now->names[k])) {
      snprintf(buf, size, "structure guard '%s.%s is member %d' failed: this call's %s has its members in another"
               " order", path, traced[k], k, path);
      return;
    }
  snprintf(buf, size, "structure guard '%s is a record of %d' failed", path, n);   /* unreachable */
}

/* Node i of both differs, with the same path: its kind, count, dtype or rank. */
static void node_reject(const tj_group *g, const tj_flat *flat, int i, char *buf, size_t size) {
  const tj_node *was = &g->nodes[i], *now = &flat->nodes[i];
  char what[TJ_PATH_MAX + 64], got[TJ_PATH_MAX + 64];
  node_text(was, what, sizeof what);
  node_text(now, got, sizeof got);
  if (was->kind == TJ_RECORD && now->kind == TJ_RECORD) { record_reject(g, flat, i, buf, size); return; }
  if (was->kind == TJ_LIST && now->kind == TJ_LIST) {
    int missing = now->n < was->n;
    snprintf(buf, size, "structure guard '%s' failed: this call's %s has %d members (%s[%d] is %s)", what, now->path,
             now->n, now->path, missing ? now->n : was->n, missing ? "missing" : "extra");
    return;
  }
  snprintf(buf, size, "structure guard '%s' failed: this call's %s", what, got);
}

void tj_structure_reject(const tj_group *g, const tj_flat *flat, char *buf, size_t size) {
  buf[0] = '\0';
  for (int i = 0; i < g->n_nodes && i < flat->n_nodes; i++) {   /* the first difference: before it, both agree */
    if (same_node(&g->nodes[i], &flat->nodes[i])) continue;
    if (!strcmp(g->nodes[i].path, flat->nodes[i].path)) { node_reject(g, flat, i, buf, size); return; }
    int p = i;   /* another name at the same place: the record above it has other members */
    while (p > 0 && g->nodes[p].depth >= g->nodes[i].depth) p--;
    record_reject(g, flat, p, buf, size);
    return;
  }
  if (g->n_nodes != flat->n_nodes)   /* unreachable: a count differs at a container first */
    snprintf(buf, size, "structure guard '%d nodes' failed: this call has %d", g->n_nodes, flat->n_nodes);
}
