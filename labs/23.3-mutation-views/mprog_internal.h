/* mprog_internal.h: the program's fields, shared by mprog.c and view.c
 * (given code, lab 23.3). Not for callers. */
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

/* A fresh graph holding a contiguous input of v's storage and v applied to
 * it: *g (the caller frees it) and *node. Errors: the steps' errors. */
int mv_view_on_fresh_graph(const mv_program *p, const mv_view *v, ir_graph **g, const ir_node **node,
                           uopc_error *err);

#endif
