/* run.h: a mutating program compiled and run, two ways (lab 23.3).
 * Versioned: each statement is one program of the compiler core, run in
 * order on the caller's storages; a store writes its value straight into
 * the target view when no load of the statement can reach the target's
 * elements (proved, or checked for this call by the disjointness guard), and
 * through a temporary otherwise, so the value is complete before any element
 * is stored. Functional: the program functionalized into one pure graph, one
 * core program, whose results are copied back into the storages written.
 * Both give NumPy's results; counters say what each did. Dims are symbolic:
 * a runner serves every binding within the bounds with the plans it built
 * once. Chapter 23.3, "Running a program two ways". */
#ifndef RUN_H
#define RUN_H

#include "alias.h"
#include "exec.h"
#include "reuse.h"

#define MV_C_PLANS "plans built"                 /* core programs built by runners */
#define MV_C_VERSIONS "memory versions"          /* stores run: each makes M<k+1> */
#define MV_C_DIRECT "direct stores"              /* written straight into the view */
#define MV_C_STAGED "staged stores"              /* through a temporary */
#define MV_C_GUARDS "alias guards run"           /* disjointness checked at run time */
#define MV_C_GUARD_OVERLAP "alias guards found overlap"
#define MV_C_WRITEBACKS "functional write-backs" /* storages copied back after a functional run */

typedef enum mv_mode { MV_VERSIONED, MV_FUNCTIONAL } mv_mode;

/* How a versioned store is run, decided when the runner is built. */
typedef enum mv_store_plan {
  MV_STORE_DIRECT,    /* every load of the target's storage is proved disjoint, or reads in place */
  MV_STORE_GUARDED,   /* some are UNKNOWN: the guard decides per call */
  MV_STORE_STAGED     /* some overlap, or the target is not contiguous */
} mv_store_plan;

typedef struct mv_runner mv_runner;

/* Builds the plans of p (which must outlive the runner) for mode: versioned,
 * one core program per statement, the alias decisions and the reuse
 * decisions (counted: buffers reused, reuse refused (alias|live));
 * functional, one program. opts may be NULL. The caller owns *out.
 * Errors: UOPC_E_INVALID (an open statement, no statements), those of
 * alias_decide, reuse_decide, functionalize and exec_new. */
int mv_runner_new(mv_runner **out, const mv_program *p, mv_mode mode, const uopc_program_options *opts,
                  uopc_error *err);
void mv_runner_free(mv_runner *r);

/* Runs the program on the external storages (in creation order, each
 * contiguous, of its dtype, and of a shape that binds the dims within their
 * bounds); dims (NULL: none) gives the dims no storage's shape determines,
 * such as a symbolic slice's start. Storages are mutated in place; lets are
 * kept for mv_runner_result. The runner keeps the temporaries of staged
 * stores and of functional results copied back (the largest so far) until
 * mv_runner_free, so repeated runs do not allocate them again.
 * Errors: UOPC_E_INVALID (count, NULL, a released tensor), UOPC_E_LAYOUT
 * (not contiguous), UOPC_E_ALIAS (two storages sharing memory),
 * UOPC_E_DTYPE, UOPC_E_BOUNDS, UOPC_E_UNBOUND (the binder's), UOPC_E_NOMEM;
 * on any error before the first statement runs, nothing is written. */
int mv_run(mv_runner *r, uopc_tensor *const *storages, int n, const sym_binding *dims, uopc_error *err);

/* Storage s's tensor after the last run (a let's value, or the external
 * storage); NULL before a run. Borrowed: valid until the next run or free. */
const uopc_tensor *mv_runner_result(const mv_runner *r, int s);
mv_mode mv_runner_mode(const mv_runner *r);
/* Statement k's store plan (versioned runners). */
mv_store_plan mv_runner_store_plan(const mv_runner *r, int k);
/* The storage let statement k writes into: its own, or the one it reuses. */
int mv_runner_let_buffer(const mv_runner *r, int k);
/* The source of statement k's program (versioned) or of the one program. */
const char *mv_runner_source(const mv_runner *r, int k);

#endif
