/* mprog.c: programs and their storages (given code, lab 23.3). The lowest
 * layer of the lab's program: views (view.c) read storages from here, and
 * statements (stmt.c) are built on both. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mprog_internal.h"

int mv_grow(void **items, int *cap, int need, size_t size) {
  if (need <= *cap) return 1;
  int n = *cap ? 2 * *cap : 8;
  while (n < need) n *= 2;
  void *q = realloc(*items, (size_t)n * size);
  if (!q) return 0;
  *items = q;
  *cap = n;
  return 1;
}

int mv_program_new(mv_program **out, uopc_error *err) {
  mv_program *p = calloc(1, sizeof *p);
  if (!p) return UOPC_FAIL(err, UOPC_E_NOMEM, "program: out of memory");
  int rc = sym_arena_new(&p->arena, err);
  if (rc) { free(p); return rc; }
  *out = p;
  return UOPC_OK;
}

void mv_abandon(mv_program *p) {
  if (!p) return;
  ir_graph_free(p->open);
  p->open = NULL;
  p->n_open = 0;
  p->error = (uopc_error){0};
}

void mv_program_free(mv_program *p) {
  if (!p) return;
  mv_abandon(p);
  for (int k = 0; k < p->n_stmts; k++) {
    ir_graph_free(p->stmts[k].graph);
    free(p->stmts[k].loads);
  }
  free(p->stmts);
  free(p->storages);
  free(p->open_loads);
  sym_arena_free(p->arena);
  free(p);
}

sym_arena *mv_program_arena(mv_program *p) { return p->arena; }
int mv_program_storage_count(const mv_program *p) { return p->n_storages; }
const mv_storage *mv_program_storage(const mv_program *p, int id) {
  return p && id >= 0 && id < p->n_storages ? &p->storages[id] : NULL;
}
mv_storage *mv_program_storage_mut(mv_program *p, int id) {
  return p && id >= 0 && id < p->n_storages ? &p->storages[id] : NULL;
}
int mv_program_stmt_count(const mv_program *p) { return p->n_stmts; }
const mv_stmt *mv_program_stmt(const mv_program *p, int k) {
  return k >= 0 && k < p->n_stmts ? &p->stmts[k] : NULL;
}
ir_graph *mv_open_graph(mv_program *p) { return p ? p->open : NULL; }

/* A load's input is named <storage>_l<k>: storage names must leave room. */
static int check_name(const mv_program *p, const char *name, uopc_error *err) {
  int ok = name && (isalpha((unsigned char)name[0]) || name[0] == '_') && strlen(name) <= SYM_NAME_MAX - 8;
  for (const char *c = name; ok && *c; c++) ok = isalnum((unsigned char)*c) || *c == '_';
  if (!ok)
    return UOPC_FAIL(err, UOPC_E_INVALID, "storage name '%s' is not a C identifier of at most %d characters",
                     name ? name : "(null)", SYM_NAME_MAX - 8);
  for (int k = 0; k < p->n_storages; k++)
    if (strcmp(p->storages[k].name, name) == 0)
      return UOPC_FAIL(err, UOPC_E_INVALID, "storage name '%s' is taken", name);
  return UOPC_OK;
}

int mv_add_storage(mv_program *p, const char *name, uopc_dtype dt, int rank, const sym_expr *const *shape,
                       int external, int *id, uopc_error *err) {
  int rc = check_name(p, name, err);
  if (rc) return rc;
  if (rank < 0 || rank > UOPC_MAX_RANK || (rank && !shape))
    return UOPC_FAIL(err, UOPC_E_INVALID, "storage '%s': rank %d outside [0, %d]", name, rank, UOPC_MAX_RANK);
  if ((unsigned)dt > UOPC_BOOL) return UOPC_FAIL(err, UOPC_E_DTYPE, "storage '%s': dtype %d", name, dt);
  mv_storage s = {.dtype = dt, .rank = rank, .external = external};
  snprintf(s.name, sizeof s.name, "%s", name);
  for (int k = 0; k < rank; k++) {
    sym_interval iv;
    if (!shape[k]) return UOPC_FAIL(err, UOPC_E_INVALID, "storage '%s': extent %d is NULL", name, k);
    rc = sym_expr_simplify(p->arena, sym_expr_copy(p->arena, shape[k]), &s.shape[k], err);
    if (!rc) rc = sym_expr_interval(s.shape[k], &iv, err);
    if (rc) return rc;
    if (iv.lo < 0) return UOPC_FAIL(err, UOPC_E_BOUNDS, "storage '%s': extent %d may be negative", name, k);
  }
  if (!mv_grow((void **)&p->storages, &p->cap_storages, p->n_storages + 1, sizeof s))
    return UOPC_FAIL(err, UOPC_E_NOMEM, "program: out of memory");
  p->storages[p->n_storages] = s;
  if (id) *id = p->n_storages;
  p->n_storages++;
  return UOPC_OK;
}

int mv_storage_new(mv_program *p, const char *name, uopc_dtype dt, int rank, const sym_expr *const *shape,
                   int *id, uopc_error *err) {
  if (!p) return UOPC_FAIL(err, UOPC_E_INVALID, "program: NULL");
  return mv_add_storage(p, name, dt, rank, shape, 1, id, err);
}
