/* tj_args.c: a call's arguments checked against the function's signature
 * (section 23.7, given code): the count, each argument's kind, a tensor
 * present, and once the first call has fixed the signature, each tensor's
 * dtype and rank; every error names the argument. Then the arguments
 * flattened depth first, containers' members checked on the way (each error
 * naming the member's path), and the model's view of them built back. A
 * call checks them before anything runs, and tj_explain before it explains,
 * so this is the lowest of tensorjit's files. Chapter 23.7, "Containers". */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "tj_internal.h"

static const char *kind_name(tj_kind k) {
  return k == TJ_TENSOR ? "a tensor" : k == TJ_INT ? "an int" : k == TJ_DOUBLE ? "a double" : k == TJ_LIST ? "a list"
         : k == TJ_RECORD ? "a record" : k == TJ_SYM_INT ? "a symbolic int" : "no kind";
}

static int is_kind(tj_kind k) { return k >= TJ_TENSOR && k <= TJ_SYM_INT; }

/* A symbolic int is a size: what an extent may be. */
static int size_value(int64_t v) { return v >= 0 && v <= TJ_MAX_EXTENT; }

/* Tensor k of fl is the carrier of the symbolic int v (checked: size_value). */
static void carry(const tj_function *f, tj_flat *fl, int k, int64_t v) {
  fl->carriers[k] = f->carrier;
  fl->carriers[k].shape[0] = v;
}

/* 1 when argument k matches the fixed signature: its kind and, for a
 * tensor, one present of the dtype and rank (a container's insides are its
 * structure's). The warm path's test and check_arg's. */
static int arg_matches(const tj_function *f, const tj_arg *a, int k) {
  if (a->kind != f->kinds[k]) return 0;
  return a->kind != TJ_TENSOR || (a->tensor && a->tensor->storage && a->tensor->dtype == f->dtypes[k] &&
                                  a->tensor->rank == f->ranks[k]);
}

/* Argument k against the signature: the one error that names it. */
static int check_arg(const tj_function *f, const tj_arg *a, int k, uopc_error *err) {
  if (arg_matches(f, a, k)) return UOPC_OK;
  const char *name = f->arg_names[k];
  if (a->kind != f->kinds[k])
    return UOPC_FAIL(err, UOPC_E_INVALID, "tensorjit '%s': argument %d ('%s') is %s; the function takes %s",
                     f->label, k, name, kind_name(a->kind), kind_name(f->kinds[k]));
  if (!a->tensor || !a->tensor->storage)   /* a tensor, then: every other kind that matches is taken */
    return UOPC_FAIL(err, UOPC_E_INVALID, "tensorjit '%s': argument %d ('%s') is a NULL or released tensor", f->label,
                     k, name);
  return UOPC_FAIL(err, a->tensor->dtype != f->dtypes[k] ? UOPC_E_DTYPE : UOPC_E_INVALID,
                   "tensorjit '%s': argument %d ('%s') is %s of rank %d; the function was traced for %s of rank %d",
                   f->label, k, name, uopc_dtype_name(a->tensor->dtype), a->tensor->rank,
                   uopc_dtype_name(f->dtypes[k]), f->ranks[k]);
}

/* ---- Flattening. */

static int member_name(const char *s) {
  if (!s || !((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_') || strlen(s) > 24) return 0;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_')) return 0;
  return 1;
}

/* A container's members: present, named when a record (unique C identifiers). */
static int check_container(const tj_function *f, const tj_arg *a, const char *path, int depth, uopc_error *err) {
  if (depth >= TJ_MAX_DEPTH)
    return UOPC_FAIL(err, UOPC_E_INVALID, "tensorjit '%s': '%s' nests containers %d deep; the limit is %d"
                     " (TJ_MAX_DEPTH)", f->label, path, depth + 1, TJ_MAX_DEPTH);
  if (a->n < 0 || (a->n > 0 && !a->items))
    return UOPC_FAIL(err, UOPC_E_INVALID, "tensorjit '%s': '%s' has %d members%s", f->label, path, a->n,
                     a->n < 0 ? "" : " and no items");
  for (int k = 0; a->kind == TJ_RECORD && k < a->n; k++) {
    if (!a->names || !member_name(a->names[k]))
      return UOPC_FAIL(err, UOPC_E_INVALID, "tensorjit '%s': member %d of record '%s' needs a name, a C identifier"
                       " of 1 to 24 characters", f->label, k, path);
    for (int j = 0; j < k; j++)
      if (!strcmp(a->names[j], a->names[k]))
        return UOPC_FAIL(err, UOPC_E_INVALID, "tensorjit '%s': record '%s' names two members '%s'", f->label, path,
                         a->names[k]);
  }
  return UOPC_OK;
}

static int flatten(const tj_function *f, const tj_arg *a, const char *path, int depth, tj_flat *fl, uopc_error *err) {
  if (fl->n_nodes == TJ_MAX_NODES)
    return UOPC_FAIL(err, UOPC_E_LIMIT, "tensorjit '%s': '%s' is past the limit of %d arguments and members in a call"
                     " (TJ_MAX_NODES)", f->label, path, TJ_MAX_NODES);
  if (!is_kind(a->kind))
    return UOPC_FAIL(err, UOPC_E_INVALID, "tensorjit '%s': '%s' has kind %d, not a tj_kind", f->label, path, (int)a->kind);
  int k = fl->n_nodes++;
  tj_node *n = &fl->nodes[k];
  size_t len = strlen(path);   /* below TJ_PATH_MAX: a name or a checked path; no snprintf on the warm path */
  *n = (tj_node){.kind = a->kind, .depth = depth, .n = a->n};
  memcpy(n->path, path, len < TJ_PATH_MAX ? len : TJ_PATH_MAX - 1);
  fl->at[k] = a;
  if (a->kind == TJ_TENSOR) {
    if (!a->tensor || !a->tensor->storage)
      return UOPC_FAIL(err, UOPC_E_INVALID, "tensorjit '%s': '%s' is a NULL or released tensor", f->label, path);
    if (fl->n_tensors == TJ_MAX_TENSORS)
      return UOPC_FAIL(err, UOPC_E_LIMIT, "tensorjit '%s': '%s' is tensor %d of the call; the limit is %d tensors,"
                       " containers' included (TJ_MAX_TENSORS: the variant cache's inputs)", f->label, path,
                       TJ_MAX_TENSORS + 1, TJ_MAX_TENSORS);
    n->dtype = a->tensor->dtype, n->rank = a->tensor->rank;
    fl->tensor_node[fl->n_tensors++] = k;
  }
  if (a->kind == TJ_SYM_INT) {
    if (!size_value(a->i))
      return UOPC_FAIL(err, UOPC_E_BOUNDS, "tensorjit '%s': '%s' is the symbolic int %" PRId64 "; a symbolic int is a"
                       " size, in [0, %" PRId64 "] (pass tj_int for a value the artifact is specialised on)", f->label,
                       path, a->i, (int64_t)TJ_MAX_EXTENT);
    if (fl->n_tensors == TJ_MAX_TENSORS)
      return UOPC_FAIL(err, UOPC_E_LIMIT, "tensorjit '%s': '%s' is tensor %d of the call (a symbolic int enters the"
                       " variant cache as a tensor's extent); the limit is %d (TJ_MAX_TENSORS)", f->label, path,
                       TJ_MAX_TENSORS + 1, TJ_MAX_TENSORS);
    n->dtype = UOPC_BOOL, n->rank = 1;
    carry(f, fl, fl->n_tensors, a->i);
    fl->tensor_node[fl->n_tensors++] = k;
  }
  if (a->kind != TJ_LIST && a->kind != TJ_RECORD) return UOPC_OK;
  fl->containers = 1;
  int rc = check_container(f, a, path, depth, err);
  for (int j = 0; !rc && j < a->n; j++) {
    char sub[TJ_PATH_MAX + 32];
    if (a->kind == TJ_LIST) snprintf(sub, sizeof sub, "%s[%d]", path, j);
    else snprintf(sub, sizeof sub, "%s.%s", path, a->names[j]);
    if (strlen(sub) >= TJ_PATH_MAX)
      return UOPC_FAIL(err, UOPC_E_INVALID, "tensorjit '%s': the path '%s' is longer than %d characters", f->label,
                       sub, TJ_PATH_MAX - 1);
    rc = flatten(f, &a->items[j], sub, depth + 1, fl, err);
  }
  return rc;
}

static int flatten_all(const tj_function *f, const tj_arg *args, int n_args, tj_flat *fl, uopc_error *err) {
  fl->n_nodes = fl->n_tensors = fl->containers = 0;
  int rc = UOPC_OK;
  for (int k = 0; !rc && k < n_args; k++) {
    char name[SYM_NAME_MAX];
    const char *const *names = f->opts.arg_names;
    if (f->fixed) rc = flatten(f, &args[k], f->arg_names[k], 0, fl, err);
    else {   /* the names the signature will take (checked there) */
      if (names && names[k]) snprintf(name, sizeof name, "%s", names[k]);
      else snprintf(name, sizeof name, "a%d", k);
      rc = flatten(f, &args[k], name, 0, fl, err);
    }
  }
  return rc;
}

static void fill(tp_ctx *c, const tj_flat *fl, int *node, tp_tensor *const *leaves, int *leaf, tj_in *slot,
                 tj_in *pool, int *used) {
  const tj_arg *a = fl->at[(*node)++];
  memset(slot, 0, sizeof *slot);
  slot->i = a->i, slot->d = a->d, slot->kind = a->kind;
  if (a->kind == TJ_INT) slot->size = tp_int_const(c, a->i);
  if (a->kind == TJ_TENSOR) slot->t = leaves[(*leaf)++];
  if (a->kind == TJ_SYM_INT) {
    tp_tensor *carrier = leaves[(*leaf)++];
    slot->i = TJ_NOT_A_VALUE;
    slot->size = carrier ? tp_size(c, carrier, 0) : tp_int_const(c, a->i);
  }
  if (a->kind != TJ_LIST && a->kind != TJ_RECORD) return;
  tj_in *items = pool + *used;   /* a container's members side by side, so items[j] indexes them */
  *used += a->n;
  slot->items = items, slot->n = a->n, slot->names = a->names;
  for (int j = 0; j < a->n; j++) fill(c, fl, node, leaves, leaf, &items[j], pool, used);
}

void tj_in_tree(tp_ctx *c, const tj_flat *flat, int n_args, tp_tensor *const *leaves, tj_in *in, tj_in *pool) {
  int node = 0, leaf = 0, used = 0;
  for (int k = 0; k < n_args; k++) fill(c, flat, &node, leaves, &leaf, &in[k], pool, &used);
}

const tj_in *tj_member(const tj_in *in, const char *name) {
  static const tj_in none;   /* read only: no tensor, so the model's next operation names its line */
  for (int k = 0; in && name && in->names && k < in->n; k++)
    if (in->names[k] && !strcmp(in->names[k], name)) return &in->items[k];
  return &none;
}

/* The warm path of a signature without containers: 1 when every argument
 * matches it, with flat's nodes refilled where a call may change them; 0
 * (flat untouched but for what the full path rewrites) sends the call down
 * the full path, which says what is wrong. The rest of each node (its path,
 * kind, depth, dtype, rank) is the signature's, written by the full flatten
 * that set flat->signature_nodes, and the same on every call let through. */
static int plain_matches(const tj_function *f, const tj_arg *args, tj_flat *flat) {
  int n_tensors = 0;
  for (int k = 0; k < f->n_args; k++) {
    const tj_arg *a = &args[k];
    if (!arg_matches(f, a, k) || (a->kind == TJ_SYM_INT && !size_value(a->i))) return 0;
    flat->nodes[k].n = a->n;
    flat->at[k] = a;
    if (a->kind == TJ_SYM_INT) carry(f, flat, n_tensors, a->i);
    if (a->kind == TJ_TENSOR || a->kind == TJ_SYM_INT) flat->tensor_node[n_tensors++] = k;
  }
  flat->n_tensors = n_tensors;
  return 1;
}

int tj_check_args(const tj_function *f, const tj_arg *args, int n_args, tj_flat *flat, uopc_error *err) {
  if (args && f->fixed && f->plain && n_args == f->n_args && flat->signature_nodes && plain_matches(f, args, flat))
    return UOPC_OK;
  if (!args || n_args < 1 || n_args > TJ_MAX_ARGS || (f->fixed && n_args != f->n_args))
    return UOPC_FAIL(err, UOPC_E_INVALID, "tensorjit '%s': %d arguments; the function takes %s%d", f->label, n_args,
                     f->fixed ? "" : "1 to ", f->fixed ? f->n_args : TJ_MAX_ARGS);
  for (int k = 0; k < n_args; k++) {   /* before anything is fixed, so a bad first call fixes nothing */
    tj_kind kind = args[k].kind;
    if (!is_kind(kind))
      return UOPC_FAIL(err, UOPC_E_INVALID, "tensorjit '%s': argument %d has kind %d, not a tj_kind", f->label, k,
                       (int)kind);
    const char *name = f->fixed ? f->arg_names[k] : f->opts.arg_names ? f->opts.arg_names[k] : NULL;
    if (kind == TJ_TENSOR && (!args[k].tensor || !args[k].tensor->storage))
      return UOPC_FAIL(err, UOPC_E_INVALID, "tensorjit '%s': argument %d%s%s%s is a NULL or released tensor", f->label,
                       k, name ? " ('" : "", name ? name : "", name ? "')" : "");
  }
  for (int k = 0; f->fixed && k < n_args; k++) {
    int rc = check_arg(f, &args[k], k, err);
    if (rc) return rc;
  }
  flat->signature_nodes = 0;
  int rc = flatten_all(f, args, n_args, flat, err);
  flat->signature_nodes = !rc && f->fixed && f->plain;
  return rc;
}
