/* tj_args.c: a call's arguments checked against the function's signature
 * (section 23.7, given code): the count, each argument's kind, a tensor
 * present, and once the first call has fixed the signature, each tensor's
 * dtype and rank; every error names the argument. A call checks them before
 * anything runs, and tj_explain before it explains, so this is the lowest
 * of tensorjit's files. */
#include "tj_internal.h"

static const char *kind_name(tj_kind k) {
  return k == TJ_TENSOR ? "a tensor" : k == TJ_INT ? "an int" : k == TJ_DOUBLE ? "a double" : "no kind";
}

/* Argument k against the signature: the one error that names it. */
static int check_arg(const tj_function *f, const tj_arg *a, int k, uopc_error *err) {
  const char *name = f->arg_names[k];
  if (a->kind != f->kinds[k])
    return UOPC_FAIL(err, UOPC_E_INVALID, "tensorjit '%s': argument %d ('%s') is %s; the function takes %s",
                     f->label, k, name, kind_name(a->kind), kind_name(f->kinds[k]));
  if (a->kind != TJ_TENSOR) return UOPC_OK;
  if (!a->tensor || !a->tensor->storage)
    return UOPC_FAIL(err, UOPC_E_INVALID, "tensorjit '%s': argument %d ('%s') is a NULL or released tensor", f->label,
                     k, name);
  if (a->tensor->dtype != f->dtypes[k] || a->tensor->rank != f->ranks[k])
    return UOPC_FAIL(err, a->tensor->dtype != f->dtypes[k] ? UOPC_E_DTYPE : UOPC_E_INVALID,
                     "tensorjit '%s': argument %d ('%s') is %s of rank %d; the function was traced for %s of rank %d",
                     f->label, k, name, uopc_dtype_name(a->tensor->dtype), a->tensor->rank,
                     uopc_dtype_name(f->dtypes[k]), f->ranks[k]);
  return UOPC_OK;
}

int tj_check_args(const tj_function *f, const tj_arg *args, int n_args, uopc_error *err) {
  if (!args || n_args < 1 || n_args > TJ_MAX_ARGS || (f->fixed && n_args != f->n_args))
    return UOPC_FAIL(err, UOPC_E_INVALID, "tensorjit '%s': %d arguments; the function takes %s%d", f->label, n_args,
                     f->fixed ? "" : "1 to ", f->fixed ? f->n_args : TJ_MAX_ARGS);
  for (int k = 0; k < n_args; k++) {   /* before anything is fixed, so a bad first call fixes nothing */
    tj_kind kind = args[k].kind;
    if (kind != TJ_TENSOR && kind != TJ_INT && kind != TJ_DOUBLE)
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
  return UOPC_OK;
}
