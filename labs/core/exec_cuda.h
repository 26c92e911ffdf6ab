/* exec_cuda.h: a lowered graph run on the GPU (given code; the compiler
 * core). The CUDA back end of lower.h writes one __global__
 * function per loop nest; exec_cuda_new compiles them as one module through
 * uopc (NVRTC or nvcc, PTX cached on disk like C), and exec_cuda_run binds
 * host tensors with the very binder of exec.h, copies the inputs to the
 * device, launches the nests in order and copies the outputs back. It is the
 * check that the CUDA text computes what the C text does: each call copies
 * in and out, so it is not a fast path. Chapter 23.1, "One lowering, two
 * back ends". */
#ifndef EXEC_CUDA_H
#define EXEC_CUDA_H

#include "exec.h"
#include "uopc/cuda.h"

/* The process counter: CUDA programs lowered and loaded (a disk-cache hit
 * counts too). Kept apart from EXEC_C_BUILT so that a graph checked on both
 * back ends shows one build of each. */
#define EXEC_CUDA_C_BUILT "graph CUDA programs built"

/* Threads per block of every launch; the kernels loop over a grid stride, so
 * any count of blocks covers any count of elements. */
#define EXEC_CUDA_BLOCK 256
#define EXEC_CUDA_GRID_MAX 65535u

typedef struct exec_cuda exec_cuda;

/* Lowers for LOWER_CUDA, compiles and loads. g must outlive *out; opts may
 * be NULL. Errors: those of lower_program_new, UOPC_E_NO_CUDA (no GPU, no
 * driver or no CUDA compiler, with the reason), UOPC_E_COMPILE, UOPC_E_CUDA. */
int exec_cuda_new(exec_cuda **out, const ir_graph *g, const ir_node *const *outputs, int n_outputs,
                  const char *entry, const uopc_cuda_options *opts, uopc_error *err);
void exec_cuda_free(exec_cuda *e);

/* Runs the graph on host tensors: the inputs are bound and checked exactly
 * as exec_run does, the outputs must be contiguous and of this call's shape
 * (they may share memory with an input: the device works on copies). Each
 * output's storage version is bumped. Errors: those of
 * exec_check_call_lowered, UOPC_E_CUDA (an allocation, copy or launch, with
 * the driver's message), UOPC_E_OVERFLOW (a thread count past int64). */
int exec_cuda_run(exec_cuda *e, uopc_tensor *const *outputs, int n_outputs, const uopc_tensor *const *inputs,
                  int n_inputs, uopc_error *err);

const lower_program *exec_cuda_lowered(const exec_cuda *e);

#endif
