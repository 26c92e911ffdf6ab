/* plan.h: one compiled kernel for every binding within the bounds (lab 23.1).
 * A plan records its dims with their bounds, the index width and the program
 * (which it owns). One plan serves every length in bounds: the lengths travel
 * as arguments of the plan's index type (int32_t when every bound allows it,
 * else int64_t; plan_launch narrows the int64_t values it resolved). A launch
 * resolves and checks every dim and buffer before any kernel runs. Chapter
 * 23.1, "The plan count". */
#ifndef PLAN_H
#define PLAN_H

#include "kernel.h"
#include "lower.h"

/* The process counter this lab adds (see uopc/counters.h). */
#define PLAN_C_BUILT "plans built"
#define PLAN_MAX_BUFFERS (1 + KERNEL_MAX_INPUTS)

/* A contiguous f32 buffer: the logical tensor is its first elements (packed
 * row-major under the binding); capacity may be larger (an allocation sized
 * for the upper bounds). */
typedef struct plan_buffer {
  void *data;
  int64_t capacity;   /* elements */
} plan_buffer;

typedef struct plan plan;

/* Lowers out's graph, compiles it through uopc (or finds it in the disk
 * cache) and counts "plans built". name is the kernel's entry name; opts may
 * be NULL. The caller owns *out (plan_free). The graph may be freed after.
 * Errors: UOPC_E_INVALID (the output is not a node of g, or a scalar),
 * those of lower_program_new and uopc_program_new. */
int plan_new(plan **out, const kernel_graph *g, const kernel_node *output,
             const char *name, const uopc_program_options *opts, uopc_error *err);
void plan_free(plan *p);

/* The student's part: values[k] = the value of the plan's k-th dim under b
 * (b may be NULL: every dim is then unbound). Errors: UOPC_E_UNBOUND
 * ("kernel 'add_n' launched with dim 'n' unbound"), UOPC_E_BOUNDS (as
 * sym_dim_check, against the plan's bounds). */
int plan_resolve_dims(const plan *p, const sym_binding *b, int64_t *values,
                      uopc_error *err);

/* Runs the kernel: out receives the result; inputs in graph order. Checks,
 * before running anything, every dim (plan_resolve_dims), that every buffer
 * holds its logical size, and that out's logical elements share no byte with
 * an input's (the kernel's buffers are restrict; inputs may overlap each
 * other). Errors: UOPC_E_UNBOUND, UOPC_E_BOUNDS, UOPC_E_INVALID (NULL data,
 * wrong count), UOPC_E_ALIAS ("kernel 'chain_f32_n': buffers 'out' and 'a'
 * share memory; ..."). */
int plan_launch(plan *p, const sym_binding *b, plan_buffer out,
                const plan_buffer *inputs, int n_inputs, uopc_error *err);

/* ---- The contract, for people and tests. */
const char *plan_name(const plan *p);
int plan_dim_count(const plan *p);
const sym_dim *plan_dim(const plan *p, int k);
const sym_index_plan *plan_index(const plan *p);
const char *plan_source(const plan *p);          /* the generated C */
const uopc_program *plan_program(const plan *p);
/* "plan add_n: dims n in [1, 64]; index int32_t (at most 64 elements)".
 * Truncates to size. */
void plan_describe(const plan *p, char *buf, size_t size);

#endif
