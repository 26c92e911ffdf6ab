/* tj_available.c: whether compiled execution can run here (section 23.7,
 * given code). For the C back end: the compiler the runtime would spawn and
 * the cache directory it would use, asked of the runtime without building;
 * for CUDA: tensorjit has no CUDA back end yet, and what the machine has is
 * said beside it. Each answer is asked once per process and kept: the only
 * state of tensorjit outside a function, written under pthread_once so two
 * threads asking first never race. It calls no other file of tensorjit.
 * Chapter 23.7, "Checking availability". */
#include <pthread.h>
#include <stdio.h>
#include "tensorjit.h"
#include "uopc/cuda.h"
#include "uopc/program.h"

typedef struct tj_answer {
  int ok;
  char reason[UOPC_ERROR_MESSAGE_MAX + 256];
} tj_answer;

static tj_answer answers[2];   /* [0] C, [1] CUDA: written once each, by ask_c and ask_cuda */
static pthread_once_t asked[2] = {PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT};

static void ask_c(void) {
  uopc_error err = {0};
  tj_answer *a = &answers[0];
  a->ok = uopc_program_check(NULL, &err) == UOPC_OK;
  if (a->ok) snprintf(a->reason, sizeof a->reason, "available: the C compiler is found and the cache directory is usable");
  else if (err.code == UOPC_E_UNSAFE_CACHE) snprintf(a->reason, sizeof a->reason, "the cache directory is refused: %s", err.message);
  else snprintf(a->reason, sizeof a->reason, "%s", err.message);
}

static void ask_cuda(void) {
  uopc_error driver = {0}, compiler = {0};
  int has_driver = uopc_cuda_available(&driver) == UOPC_OK;
  int has_compiler = uopc_cuda_compiler_available(&compiler) == UOPC_OK;
  tj_answer *a = &answers[1];
  a->ok = 0;   /* whatever the machine has: tensorjit generates C only */
  snprintf(a->reason, sizeof a->reason, "the CUDA back end is not built into tensorjit yet; this machine: %.900s; %.900s",
           has_driver ? "a CUDA driver and GPU are usable" : driver.message,
           has_compiler ? "a CUDA compiler (NVRTC or nvcc) is found" : compiler.message);
}

int tj_is_available(tj_backend backend, char *reason, size_t size) {
  if (backend != TJ_BACKEND_C && backend != TJ_BACKEND_CUDA) {
    if (reason && size) snprintf(reason, size, "backend %d is not a tj_backend", (int)backend);
    return 0;
  }
  int k = backend == TJ_BACKEND_CUDA;
  pthread_once(&asked[k], k ? ask_cuda : ask_c);
  if (reason && size) snprintf(reason, size, "%s", answers[k].reason);
  return answers[k].ok;
}
