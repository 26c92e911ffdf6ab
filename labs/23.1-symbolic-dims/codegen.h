/* codegen.h: lowering a kernel graph to C source (lab 23.1).
 * The kernel's parameters are the output buffer, the input buffers in graph
 * order, then each dim in order of first appearance (output shape, then
 * inputs), typed as the index (int32_t or int64_t, the plan's decision).
 * Loop bounds and strides read those parameters: no size of a call is
 * pasted into the text. The text is deterministic. Chapter 23.1,
 * "Reading the generated loop". */
#ifndef CODEGEN_H
#define CODEGEN_H

#include "kernel.h"
#include "sym_index.h"

#define CODEGEN_MAX_DIMS 8

typedef struct codegen_text {      /* a growing NUL-terminated string */
  char *data;
  size_t len, cap;
} codegen_text;

typedef struct codegen_kernel {
  char entry[64];
  char signature[UOPC_SIGNATURE_MAX];   /* "pp..l..", for uopc_program_new */
  int n_dims;
  sym_dim dims[CODEGEN_MAX_DIMS];       /* the trailing int64 parameters */
  sym_index_plan index;
  int uses_libm;                        /* the source calls expf: link -lm */
  codegen_text source;                  /* owned */
} codegen_kernel;

/* Appends printf-style text. Errors: UOPC_E_NOMEM. */
int codegen_printf(codegen_text *t, uopc_error *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void codegen_text_fini(codegen_text *t);

/* The dims of out's graph, in parameter order. Errors: UOPC_E_LIMIT. */
int codegen_collect_dims(const kernel_graph *g, const kernel_node *out,
                         sym_dim *dims, int *n_dims, uopc_error *err);

/* Lowers the graph computing out to a C function named entry (a C
 * identifier that says the operation and the variant, "add_f32_n").
 * Decides the index width from every buffer's shape. The caller owns k and
 * frees it with codegen_kernel_fini. Errors: UOPC_E_INVALID, UOPC_E_OVERFLOW
 * (index width), UOPC_E_UNSUPPORTED (a sum that is not the output),
 * UOPC_E_NOMEM. */
int codegen_kernel_new(codegen_kernel *k, const kernel_graph *g, const kernel_node *out,
                       const char *entry, uopc_error *err);
void codegen_kernel_fini(codegen_kernel *k);

/* The temporaries of one loop body: each node is computed once. */
typedef struct codegen_values {
  const char *addr;                  /* the C index of the current element */
  const char *indent;
  int next;                          /* the next free temporary number */
  int tmp_of[KERNEL_MAX_NODES];      /* node id -> temporary + 1, 0 if none */
} codegen_values;

/* Starts a loop body's values at the element whose index is addr. */
void codegen_values_init(codegen_values *v, const char *addr, const char *indent);

/* Appends "const float t<k> = ...;" lines computing node at v->addr and
 * sets *tmp to the temporary that holds it. Errors: UOPC_E_UNSUPPORTED (a
 * sum inside an expression), UOPC_E_NOMEM. */
int codegen_emit_value(codegen_text *t, codegen_values *v, const kernel_node *node,
                       int *tmp, uopc_error *err);

/* The student's part: appends the function body's loop nest for out: one
 * loop per axis, `for (<ix> i0 = 0; i0 < <extent>; i0++)`, whose extent is
 * the shape expression in C (a runtime parameter, never a size of a call);
 * the element's index is the simplified expression i0*n + i1 of the loop
 * variables; a sum adds a blocked reduction loop r0 (r1 within a block)
 * into LANES partial sums acc0[], combined pairwise (the order the banner
 * states, chapter 23.1 "The order of a sum"). Loop variables are
 * opened as scopes of g's arena (sym_scope_open_loop).
 * Errors: UOPC_E_UNSUPPORTED, UOPC_E_NOMEM, those of sym_expr. */
int codegen_emit_loops(codegen_text *t, const kernel_graph *g, const kernel_node *out,
                       const char *ix, uopc_error *err);

#endif
