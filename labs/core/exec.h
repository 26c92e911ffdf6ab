/* exec.h: a lowered graph compiled for the CPU and called with tensors
 * (given code; the compiler core).
 * exec_new lowers the graph (lower.h), compiles the C through uopc (or finds
 * it in the disk cache) and keeps the program. exec_bind is the shape binder:
 * it turns one call's tensors into a binding of the graph's dims, checking
 * every extent, stride and offset against its expression and every dim
 * against its bounds; two equal extents are equal because one dim is bound
 * twice to one value, never by assumption. exec_run binds, checks the
 * outputs, and calls the kernel. Chapter 23.1, "Running a graph". */
#ifndef EXEC_H
#define EXEC_H

#include "lower.h"

/* The process counter of the core: programs lowered and built (a disk-cache
 * hit counts too; "compiler invocations" says whether gcc ran). */
#define EXEC_C_BUILT "graph programs built"

/* The most bytes of temporaries one call of a LOWER_FUSE program has held
 * since the counters were last reset (a maximum kept as a counter: it rises
 * by the excess over its value). */
#define EXEC_C_PEAK_TEMP "peak temporary bytes"

typedef struct exec exec;

/* Lowers and builds. g must outlive *out; opts may be NULL. The caller owns
 * *out (exec_free). Errors: those of lower_program_new and uopc_program_new. */
int exec_new(exec **out, const ir_graph *g, const ir_node *const *outputs, int n_outputs,
             const char *entry, const uopc_program_options *opts, uopc_error *err);
/* The same, lowered with lower_program_new_flags' flags. */
int exec_new_flags(exec **out, const ir_graph *g, const ir_node *const *outputs, int n_outputs,
                   const char *entry, unsigned flags, const uopc_program_options *opts, uopc_error *err);
/* The same with LOWER_FUSE's rule (lower_program_new_rule). */
int exec_new_rule(exec **out, const ir_graph *g, const ir_node *const *outputs, int n_outputs,
                  const char *entry, unsigned flags, const lower_fuse_rule *rule,
                  const uopc_program_options *opts, uopc_error *err);
void exec_free(exec *e);

/* Binds the graph's dims from inputs (in ir_graph_input order).
 * Errors: UOPC_E_INVALID (count, NULL), UOPC_E_DTYPE, UOPC_E_BOUNDS (a dim
 * outside its bounds, an extent or stride that differs from its expression,
 * a max over an empty axis), UOPC_E_LAYOUT (a contiguous input that is not),
 * UOPC_E_UNBOUND (a dim that no input determines). Each message names the
 * input, the axis, the value and the rule. */
int exec_bind(const exec *e, const uopc_tensor *const *inputs, int n_inputs, sym_binding *b,
              uopc_error *err);

/* Output k's shape under b. Errors: those of sym_expr_eval. */
int exec_output_shape(const exec *e, int k, const sym_binding *b, int64_t *shape, int *rank,
                      uopc_error *err);

/* exec_run and exec_run_checked may be called on one exec from several
 * threads at once: each call takes its own scratch block for the
 * temporaries (a free one of a few kept, or one of its own).
 * Runs the program: outputs must be contiguous, of the output's dtype and
 * shape under this call's binding, and share no byte with any input or each
 * other. Errors: those of exec_bind, UOPC_E_LAYOUT, UOPC_E_ALIAS, UOPC_E_NOMEM. */
int exec_run(exec *e, uopc_tensor *const *outputs, int n_outputs, const uopc_tensor *const *inputs,
             int n_inputs, uopc_error *err);

/* Runs the program on a call the caller has checked: lab 23.2's variant
 * cache, whose guards state everything exec_run checks but a max over an
 * empty axis. buffers: element 0 of each output, then of each input, as the
 * kernel takes them (the storage base for an input whose offset is an
 * expression); dims: each lowered dim's value, in exec_lowered(e)->dims
 * order. Nothing else is checked: a wrong pointer or value is a wrong result
 * or a fault. Errors: UOPC_E_BOUNDS (a max over an empty axis),
 * UOPC_E_NOMEM (the temporaries), those of sym_expr_eval. */
int exec_run_checked(exec *e, void *const *buffers, const int64_t *dims, uopc_error *err);

/* exec_run's checks of a call, for runners that call the program elsewhere
 * (exec_cuda.h): the inputs bound into *b (as exec_bind), and each output of
 * its dtype, of its shape under b, and contiguous. Errors: those of
 * exec_bind, UOPC_E_INVALID (the output count, a NULL output), UOPC_E_DTYPE,
 * UOPC_E_BOUNDS, UOPC_E_LAYOUT. */
int exec_check_call_lowered(const lower_program *p, uopc_tensor *const *outputs, int n_outputs,
                            const uopc_tensor *const *inputs, int n_inputs, sym_binding *b, uopc_error *err);

const lower_program *exec_lowered(const exec *e);
const char *exec_source(const exec *e);
const uopc_program *exec_program(const exec *e);

#endif
