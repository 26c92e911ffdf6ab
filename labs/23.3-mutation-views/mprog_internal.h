/* mprog_internal.h: the program's fields, shared by its three layers (given
 * code, lab 23.3), each using only those before it: mprog.c (the program and
 * its storages), view.c (views over a storage), stmt.c (statements). Not for
 * callers. */
#ifndef MPROG_INTERNAL_H
#define MPROG_INTERNAL_H

#include "mprog.h"

struct mv_program {
  sym_arena *arena;        /* storages' shapes, views' bounds, layouts */
  int n_storages, cap_storages;
  mv_storage *storages;
  int n_stmts, cap_stmts;
  mv_stmt *stmts;
  ir_graph *open;          /* the open statement's graph, or NULL */
  int n_open, cap_open;
  mv_loaded *open_loads;
  uopc_error error;        /* mv_load's error when no statement is open */
};

/* ---- mprog.c */

/* Grows *items (of size bytes each) to hold need; 0 when out of memory. */
int mv_grow(void **items, int *cap, int need, size_t size);
/* Appends a storage (external: an input of the program, else a let's value)
 * after checking its name, rank, dtype and extents; *id is its index. */
int mv_add_storage(mv_program *p, const char *name, uopc_dtype dt, int rank, const sym_expr *const *shape,
                   int external, int *id, uopc_error *err);

/* ---- view.c */

/* A fresh graph holding a contiguous input of v's storage and v applied to
 * it: *g (the caller frees it) and *node. Errors: the steps' errors. */
int mv_view_on_fresh_graph(const mv_program *p, const mv_view *v, ir_graph **g, const ir_node **node,
                           uopc_error *err);

#endif
