/* mprog.h: programs that mutate memory, with memory versions (lab 23.3).
 * A program names storages (the caller's tensors, or values it computes),
 * views of them, and statements. A view is a chain of slices, selects,
 * permutes and broadcasts applied to its storage, as NumPy's views are; two
 * views of one storage share its elements. A statement is a pure graph of the
 * compiler core (ir.h) whose inputs are loads of views, closed by a store
 * into a view or by a let that makes its value a new storage.
 *
 * The semantics (chapter 23.3, "Semantics first"): a write through any view
 * is visible through every view of the same storage; `x[s] = e` evaluates e
 * completely before storing; statements run in program order; a program never
 * captures a tensor's values (storages are arguments, read at each run).
 * Each store consumes its storage's memory version M<k> and produces M<k+1>;
 * each load names the version it reads. */
#ifndef MPROG_H
#define MPROG_H

#include "ir.h"

#define MV_VIEW_STEPS_MAX 8
#define MV_VIEW_TEXT_MAX 160

/* ---- Views. */

typedef enum mv_step_kind { MV_SLICE, MV_SELECT, MV_PERMUTE, MV_EXPAND } mv_step_kind;

typedef struct mv_step {
  mv_step_kind kind;
  int axis;                                /* MV_SLICE, MV_SELECT */
  int symbolic;                            /* MV_SLICE: bounds are start_e and stop_e */
  int64_t start, stop, step;               /* MV_SLICE: Python's rules; UOPC_SLICE_NONE omits one */
  const sym_expr *start_e, *stop_e;        /* MV_SLICE, symbolic: 0 <= start <= stop <= extent */
  const sym_expr *index;                   /* MV_SELECT */
  int perm[UOPC_MAX_RANK];                 /* MV_PERMUTE: out axis k is axis perm[k] */
  int rank;                                /* MV_EXPAND: NumPy's broadcast_to(shape); MV_PERMUTE: its rank */
  const sym_expr *shape[UOPC_MAX_RANK];
} mv_step;

typedef struct mv_view {
  int storage;                             /* its storage in the program */
  int n_steps;
  mv_step steps[MV_VIEW_STEPS_MAX];        /* applied first to last */
} mv_view;

/* The affine form of a view: its element idx is element
 * offset + sum_k strides[k] * idx[k] of its storage, counted row-major (the
 * core's ir_layout, ir.h: rank, shape, strides, offset). */
typedef ir_layout mv_layout;

/* ---- Storages and statements. */

typedef struct mv_storage {
  char name[SYM_NAME_MAX];
  uopc_dtype dtype;
  int rank;
  const sym_expr *shape[UOPC_MAX_RANK];    /* in the program's arena */
  int external;                            /* the caller's tensor, an argument of each run */
  int version;                             /* M<version>: what the next load reads */
  int escaped;                             /* views of it live on after the program (mv_escape) */
} mv_storage;

typedef enum mv_stmt_kind { MV_STORE, MV_LET } mv_stmt_kind;

typedef struct mv_loaded {
  const ir_node *node;                     /* the statement graph's input */
  mv_view view;
  int version;                             /* M<version> of view.storage */
} mv_loaded;

typedef struct mv_stmt {
  mv_stmt_kind kind;
  ir_graph *graph;                         /* owned: its inputs are the loads, in order */
  const ir_node *value;                    /* a store's value has the target's shape */
  int n_loads;
  mv_loaded *loads;
  mv_view target;                          /* MV_STORE: where; MV_LET: the new storage, whole */
  int storage;                             /* the storage written (store) or made (let) */
  int version_in, version_out;             /* MV_STORE: M<in> -> M<out>; MV_LET: -1 -> 0 */
} mv_stmt;

typedef struct mv_program mv_program;

/* An empty program. The caller owns *out (mv_program_free). Errors: UOPC_E_NOMEM. */
int mv_program_new(mv_program **out, uopc_error *err);
void mv_program_free(mv_program *p);
/* Where the caller builds dims and expressions for shapes and slice bounds. */
sym_arena *mv_program_arena(mv_program *p);

/* A storage the caller passes to every run (external), with version M0.
 * Errors: UOPC_E_INVALID (a bad or taken name, rank), UOPC_E_DTYPE,
 * UOPC_E_BOUNDS (an extent that may be negative), UOPC_E_NOMEM. */
int mv_storage_new(mv_program *p, const char *name, uopc_dtype dt, int rank,
                   const sym_expr *const *shape, int *id, uopc_error *err);
int mv_program_storage_count(const mv_program *p);
const mv_storage *mv_program_storage(const mv_program *p, int id);
/* Storage id's fields for the store rule (store.c) and the executor. */
mv_storage *mv_program_storage_mut(mv_program *p, int id);

int mv_program_stmt_count(const mv_program *p);
const mv_stmt *mv_program_stmt(const mv_program *p, int k);

/* ---- Building views (each checks its step as the core's builder would:
 * axes, bounds proved from the dims' bounds, permutations, broadcasts).
 * Errors: UOPC_E_INVALID, UOPC_E_BOUNDS, with the core's message. */

void mv_view_whole(const mv_program *p, int storage, mv_view *out);
int mv_slice(mv_program *p, const mv_view *v, int axis, int64_t start, int64_t stop, int64_t step,
             mv_view *out, uopc_error *err);
int mv_slice_sym(mv_program *p, const mv_view *v, int axis, const sym_expr *start, const sym_expr *stop,
                 int64_t step, mv_view *out, uopc_error *err);
int mv_select(mv_program *p, const mv_view *v, int axis, const sym_expr *index, mv_view *out,
              uopc_error *err);
int mv_permute(mv_program *p, const mv_view *v, const int *perm, mv_view *out, uopc_error *err);
int mv_expand(mv_program *p, const mv_view *v, int rank, const sym_expr *const *shape, mv_view *out,
              uopc_error *err);

/* The view's value read from base, a node of g holding its storage's
 * elements (its shape): the steps applied with the core's builders. NULL
 * after recording the builder's error in g. */
const ir_node *mv_view_apply(ir_graph *g, const mv_view *v, const ir_node *base);
/* The view's affine form, in the program's arena. Errors: those of sym_expr. */
int mv_view_layout(mv_program *p, const mv_view *v, mv_layout *out, uopc_error *err);
/* The view as a uopc view of storage (the storage's tensor for one run, its
 * dims bound in b): the same elements NumPy's view would reach. The caller
 * releases *out. Errors: UOPC_E_UNBOUND, UOPC_E_BOUNDS, those of uopc's views. */
int mv_view_tensor(const mv_program *p, const mv_view *v, const sym_binding *b, const uopc_tensor *storage,
                   uopc_tensor *out, uopc_error *err);
/* "a[1:, ::-1]" / "a.T[0]" / "a.expand(n, 4)", for messages and the printer. */
void mv_view_format(const mv_program *p, const mv_view *v, char *buf, size_t size);
/* *broadcast = 1 when v, applied to a node of base's shape, has a broadcast
 * axis: stride 0 over an extent that can exceed 1 (its upper bound), whose
 * elements are all one element, so a store through it collides. A stride-0
 * axis of extent at most 1, such as the new leading axis of a.expand(1, n),
 * holds one element, written once: no broadcast. Given. Errors:
 * UOPC_E_INVALID (NULL, a view that does not apply to base), NOMEM. */
int mv_view_has_broadcast(const mv_view *v, const ir_node *base, int *broadcast, uopc_error *err);

/* ---- Statements. */

/* Opens a statement and returns its graph (owned by the program). Errors
 * (NULL, err filled): UOPC_E_INVALID (a statement is already open), NOMEM. */
ir_graph *mv_begin(mv_program *p, uopc_error *err);
/* A load of v in the open statement: an input of its graph named
 * "<storage>_l<k>" that reads M<version> of v's storage. NULL after
 * recording an error in the graph (no open statement: in p's own error). */
const ir_node *mv_load(mv_program *p, const mv_view *v);

/* The store/version rule (student, store.c): closes the open statement with
 * `target = value` (value broadcast to target's shape, as NumPy's assignment
 * does). Checks, in order, each with the message tests compare (V is
 * mv_view_format's text of target, a shape is "(n, m - 1)" cut after its
 * first 127 characters, a dtype ir_dtype_name's):
 *   mv_check_value: an open statement without error, value a node of its graph;
 *   target and its storage exist: UOPC_E_INVALID,
 *     "store: the target's storage does not exist";
 *   value's dtype is the target's: UOPC_E_DTYPE,
 *     "store into V (f32) of a f64 value (cast it first)";
 *   value broadcasts to the target's shape: UOPC_E_INVALID,
 *     "store into V: a value of shape (n) does not broadcast to the view's shape (n - 1)";
 *   the target has no broadcast axis (stride 0 over an extent that can
 *     exceed 1, as mv_view_has_broadcast says; a.expand(1, n) has none),
 *     whose elements would collide: UOPC_E_ALIAS, "store into V: axis 0 has stride 0 and up to 4 elements,
 *     which would all be written to one element (a broadcast view is read-only)".
 * Then the store consumes M<k> of the target's storage and produces M<k+1>
 * (version_in = k, version_out = k + 1, the storage's version k + 1) and is
 * appended. On error the statement is dropped and the program is as before
 * mv_begin. */
int mv_store(mv_program *p, const mv_view *target, const ir_node *value, uopc_error *err);

/* target += value and target = src, the in-place forms over mv_store (both
 * load target or src in the open statement first). Errors: those of mv_store. */
int mv_add_(mv_program *p, const mv_view *target, const ir_node *value, uopc_error *err);
int mv_copy_(mv_program *p, const mv_view *target, const mv_view *src, uopc_error *err);

/* Closes the open statement with `name = value`: a new storage of value's
 * dtype and shape, computed by the program (not external), M0 once written.
 * Errors: those of mv_store's first two checks, UOPC_E_INVALID (a bad or
 * taken name). */
int mv_let(mv_program *p, const char *name, const ir_node *value, int *storage, uopc_error *err);

/* Says that v (and so its storage) is still reachable after the program, as
 * a result or a view the caller holds: its storage is never reused.
 * Errors: UOPC_E_INVALID (no such storage). */
int mv_escape(mv_program *p, const mv_view *v, uopc_error *err);

/* 1 when load j of st reaches st's value only through elementwise nodes of
 * the value's shape (no broadcast, no movement, no reduction): each output
 * element reads the load only at its own index. */
int mv_stmt_reads_at_output_index(const mv_stmt *st, int j);

/* Appends the program, one statement per block, loads and stores with their
 * versions: "%0 = load a[1:] @M0", "M1 = store a[:-1] <- %2 (M0 -> M1)".
 * Errors: UOPC_E_NOMEM. */
int mv_program_print(codegen_text *t, const mv_program *p, uopc_error *err);

/* Given helpers for store.c. */
/* The first two checks of mv_store (and mv_let): an open statement, no
 * failed load or builder in it (that error is returned), value a node of
 * its graph. Errors: UOPC_E_INVALID, the statement's first error. */
int mv_check_value(mv_program *p, const ir_node *value, uopc_error *err);
/* Appends a checked statement (the open one) and resets the open state. */
int mv_commit(mv_program *p, mv_stmt_kind kind, const mv_view *target, const ir_node *value,
              int storage, int version_in, int version_out, uopc_error *err);
/* Drops the open statement (its graph, its loads). */
void mv_abandon(mv_program *p);
/* The open statement's graph, or NULL. */
ir_graph *mv_open_graph(mv_program *p);
/* The view's shape as the core computes it (in the open graph's arena):
 * fills shape, *rank. Errors: those of the view's steps. */
int mv_view_shape(mv_program *p, const mv_view *v, int *rank, const sym_expr **shape, uopc_error *err);

#endif
