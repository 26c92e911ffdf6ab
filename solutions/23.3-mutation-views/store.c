/* store.c: the store/version rule (lab 23.3, student file).
 * A store is where mutation enters the IR: it checks that `target = value`
 * means what NumPy's assignment means (dtype, broadcasting, no colliding
 * elements), then consumes the target storage's memory version M<k> and
 * produces M<k+1>, so every later load names the version it reads.
 * Chapter 23.3, "Memory versions". */
#include <stdio.h>
#include <string.h>
#include "mprog.h"

// STUDENT 23.3 helpers
static void shape_text(int rank, const sym_expr *const *shape, char *buf, size_t size) {
  size_t used = (size_t)snprintf(buf, size, "(");
  for (int k = 0; k < rank && used < size; k++) {
    if (k) used += (size_t)snprintf(buf + used, size - used, ", ");
    if (used < size) sym_expr_format(shape[k], buf + used, size - used, NULL);
    used = strlen(buf);
  }
  if (used < size) snprintf(buf + used, size - used, ")");
}

/* UOPC_E_ALIAS when a zero-stride axis of target may hold two elements or more. */
static int check_no_collision(mv_program *p, const mv_view *target, const char *view, uopc_error *err) {
  mv_layout l;
  int rc = mv_view_layout(p, target, &l, err);
  for (int k = 0; k < l.rank && !rc; k++) {
    sym_interval iv;
    if (!(l.strides[k]->kind == SYM_CONST && l.strides[k]->value == 0)) continue;
    rc = sym_expr_interval(l.shape[k], &iv, err);
    if (!rc && iv.hi > 1)
      rc = UOPC_FAIL(err, UOPC_E_ALIAS, "store into %s: axis %d has stride 0 and up to %lld elements, which"
                     " would all be written to one element (a broadcast view is read-only)", view, k,
                     (long long)iv.hi);
  }
  return rc;
}
// END STUDENT

int mv_store(mv_program *p, const mv_view *target, const ir_node *value, uopc_error *err) {
  // STUDENT 23.3 mv_store
  int rc = mv_check_value(p, value, err);
  mv_storage *s = rc || !target ? NULL : mv_program_storage_mut(p, target->storage);
  if (!rc && !s) rc = UOPC_FAIL(err, UOPC_E_INVALID, "store: the target's storage does not exist");
  char view[MV_VIEW_TEXT_MAX] = "?", want[128], got[128];
  if (!rc) mv_view_format(p, target, view, sizeof view);
  if (!rc && value->dtype != s->dtype)
    rc = UOPC_FAIL(err, UOPC_E_DTYPE, "store into %s (%s) of a %s value (cast it first)", view,
                   ir_dtype_name(s->dtype), ir_dtype_name(value->dtype));
  int rank = 0;
  const sym_expr *shape[UOPC_MAX_RANK];
  if (!rc) rc = mv_view_shape(p, target, &rank, shape, err);
  const ir_node *v = value;
  int same = !rc && rank == value->rank;
  for (int k = 0; same && k < rank; k++) same = shape[k] == value->shape[k];
  if (!rc && !same && !(v = ir_expand(mv_open_graph(p), value, rank, shape))) {
    shape_text(value->rank, value->shape, got, sizeof got);
    shape_text(rank, shape, want, sizeof want);
    rc = UOPC_FAIL(err, UOPC_E_INVALID, "store into %s: a value of shape %s does not broadcast to the view's"
                   " shape %s", view, got, want);
  }
#ifdef MV_STORE_NO_COLLISION_CHECK   /* a test-only build stores into broadcast views (tests/broken/23.3.mk) */
  if (0 && !rc) rc = check_no_collision(p, target, view, err);
#else
  if (!rc) rc = check_no_collision(p, target, view, err);
#endif
  /* The version rule: this store reads M<k> of the storage and makes M<k+1>. */
  if (!rc) rc = mv_commit(p, MV_STORE, target, v, target->storage, s->version, s->version + 1, err);
  if (rc) {
    mv_abandon(p);
    return rc;
  }
  s->version++;
  return UOPC_OK;
  // END STUDENT
}
