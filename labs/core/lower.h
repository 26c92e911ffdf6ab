/* lower.h: one lowering of the graph IR to loops, and its two back ends
 * (given code; the compiler core).
 * A program computes a graph's outputs. Lowering decides which nodes are
 * materialised (the outputs, and every reduction or matmul, into planned
 * temporaries), the kernel parameters (outputs, inputs, scratch, then each dim
 * in order of first appearance) and the index width; each materialised node
 * becomes one loop nest whose extents, strides and offsets are expressions
 * over those parameters, and everything else fuses into the loops that read
 * it. The C back end writes the loop nests one after another in one
 * function; the CUDA back end writes one __global__ function per loop nest,
 * with the output's loops spread over threads. No size of a call appears in
 * the text. Chapter 23.1, "One lowering, two back ends". */
#ifndef LOWER_H
#define LOWER_H

#include "ir.h"

typedef enum lower_backend { LOWER_C, LOWER_CUDA } lower_backend;

typedef enum lower_role { LOWER_OUTPUT, LOWER_INPUT, LOWER_TEMP } lower_role;

/* Why a node has a buffer (and a loop nest of its own): the fusion group's
 * boundary, as lower_program_print_groups says it. */
typedef enum lower_reason {
  LOWER_WHY_INPUT,                  /* a parameter, no nest */
  LOWER_WHY_OUTPUT,
  LOWER_WHY_REDUCE,                 /* a reduction or a matmul: always */
  LOWER_WHY_MATMUL_OPERAND,         /* computed, read by a matmul many times */
  LOWER_WHY_COST,                   /* LOWER_FUSE's cost rule: ops x (reads - 1) > LOWER_STORE_COST */
  LOWER_WHY_CHAIN,                  /* LOWER_FUSE's chain cut: depth > LOWER_CHAIN_CUT */
  LOWER_WHY_PACKED                  /* a matmul in rows' right operand not read with unit stride: packed once */
} lower_reason;

typedef struct lower_buffer {
  char name[SYM_NAME_MAX];          /* out0.., the input's name, tmp0.. */
  lower_role role;
  const ir_node *node;              /* the value it holds (an input: its view) */
  const sym_expr *scratch_offset;   /* LOWER_TEMP: bytes from the scratch base */
  lower_reason reason;
  int64_t ops, reads;               /* LOWER_WHY_COST: the rule's two numbers; CHAIN: ops = depth */
  int columns;                      /* a matmul in rows written as dot products of columns (lower_matmul.c) */
} lower_buffer;

/* An extent that must be at least 1 when the program runs (a max over it). */
typedef struct lower_nonempty {
  const sym_expr *extent;
  const ir_node *node;
} lower_nonempty;

/* lower_program_new_flags: an output may be the very memory of an input,
 * read only at the output's own index (23.3's in-place stores and reused
 * buffers): the buffers are then not declared restrict. */
#define LOWER_MAY_ALIAS 1u
/* lower_program_new_flags: fusion groups (chapter 23.1, "Fusion and its
 * cost rule"; lower_fuse.c): besides the outputs, reductions and matmuls, a
 * caller's fusion rule (lower_program_new_rule) picks the computed nodes to
 * store once in a temporary instead of recomputing them in each nest that
 * reads them, and an elementwise chain is cut into temporaries every
 * LOWER_CHAIN_CUT levels instead of refused; temporaries whose lifetimes do
 * not overlap share scratch. Off for labs 23.1-23.4, whose text (and cache
 * keys) stay the given rule's; lab 23.5 (KV_LOWER_FLAGS), the passes' tests
 * and tensorjit turn it on. */
#define LOWER_FUSE 2u
/* lower_program_new_flags, C back end: an f32 exp is exp_f32, a function of
 * the generated text without a call or a branch, so gcc vectorises the loop
 * that holds it (libm's expf is one call an element). It is within
 * LOWER_EXP_F32_ULPS of expf over every finite f32 (and of a subnormal
 * result), and NaN, infinities, overflow to inf and underflow to 0 are as
 * expf's (chapter 23.7, "A vectorisable exp"). */
#define LOWER_VEC_EXP 4u
#define LOWER_EXP_F32_ULPS 3
/* The same for f32 tanh: tanh_f32, odd, an odd polynomial of degree 21 below
 * |x| = 0.625 and 1 - 2/(exp_f32(2|x|) + 1) above (exp_f32 is emitted with
 * it), within LOWER_TANH_F32_ULPS of tanhf over every f32; tanh(+-inf) is
 * +-1, a NaN stays NaN, -0 stays -0 (chapter 23.7, "A vectorisable exp"). */
#define LOWER_VEC_TANH 8u
#define LOWER_TANH_F32_ULPS 3
/* lower_program_new_flags, C back end, with LOWER_FUSE: each loop nest whose
 * work (its output's elements times the elements each one reduces, or times
 * k for a matmul) reaches LOWER_PARALLEL_WORK runs its outermost loop on
 * OpenMP's threads (`#pragma omp parallel for schedule(static) if (...)`,
 * compiled with -fopenmp: lower_program.uses_openmp). Only loops over
 * disjoint outputs are split, never a reduction's own axes, so each element
 * is computed by the same operations in the same order whatever the thread
 * count: results are bit for bit those of the serial program. A nest of rank
 * 0 (a full reduction) stays serial. Chapter 23.7, "Two cores". */
#define LOWER_PARALLEL 16u
/* Measured (bench_fuse's threshold lines: the 6-op chain's threaded copy
 * forced on, against the serial program, two cores): threads lose below
 * 8192 elements (1.3 to 1.5 times the serial time), break even near 16384,
 * and win from 32768 (0.6). */
#define LOWER_PARALLEL_WORK 32768

/* ---- A fusion rule (LOWER_FUSE) ------------------------------------------
 * The lowering decides nothing about cost: a compiler gives it a rule
 * (tensorjit's is lab 23.7's tj_fuse_rule, chapter 23.7 "Fusion with a cost
 * rule"). The units a rule counts in, and what the printed groups quote: */
#define LOWER_CALL_COST 8          /* a libm call or pow, in units of one add */
#define LOWER_STORE_COST 4         /* a store and a load of one element */
#define LOWER_BROADCAST_READS 16   /* a broadcast operand: read "many" times */
/* A chain is stored every this many elementwise levels (< LOWER_NESTING_MAX). */
#define LOWER_CHAIN_CUT 256

/* What fusion decided for one node: why it is stored (0: it is fused into
 * each nest that reads it) and, for a rule's and the chain cut's decisions,
 * their numbers (printed with the groups). */
typedef struct lower_stored {
  lower_reason why;
  int64_t ops, reads;
} lower_stored;

/* decide: store[id] for each node id of g (ir_graph_node_count entries) comes
 * with why set for the outputs (LOWER_WHY_OUTPUT) and for every reduction
 * and matmul (LOWER_WHY_REDUCE) that the outputs reach (used[id] != 0); the
 * rule sets {LOWER_WHY_COST, ops, reads} for each other computed node it
 * stores, and changes nothing else (the lowering refuses a decision about a
 * node that is not a computed one the outputs reach, with UOPC_E_INVALID).
 * name: how the generated banner states the rule. */
typedef struct lower_fuse_rule {
  const char *name;
  int (*decide)(const ir_graph *g, const unsigned char *used, lower_stored *store, uopc_error *err);
} lower_fuse_rule;

/* For a rule: the op units of n alone (LOWER_CALL_COST for a libm call or
 * pow, 1 for any other op that computes, 0 for a leaf, a move, a reduction
 * or a matmul); whether n computes (a node a rule may store: not a leaf, a
 * move, a reduction or a matmul); whether consumer m reads operand s at
 * fewer distinct elements than it has (s is broadcast: an EXPAND, or
 * NumPy's implicit broadcast), so that each element of s is read many times. */
/* The state the lowering hands a rule: used[id] = 1 for each node the
 * outputs reach and, when store is not NULL, store[id].why for the outputs
 * (LOWER_WHY_OUTPUT) and the reductions and matmuls among them
 * (LOWER_WHY_REDUCE). Both hold ir_graph_node_count(g) zeroed entries. */
void lower_fuse_marks(const ir_graph *g, const ir_node *const *outputs, int n, unsigned char *used,
                      lower_stored *store);
int64_t lower_op_units(const ir_node *n);
int lower_computes(const ir_node *n);
int lower_broadcasts(const ir_node *m, const ir_node *s);

/* A rule a program may take as it is: every exp the outputs reach is
 * stored, its numbers its op units and no reads. Where each exp is read by
 * two nests or more (a softmax's, by its sum and by its weights) that
 * computes it once; lab 23.5 takes it (KV_FUSE_RULE), and the mechanism's
 * tests. A cost rule (lab 23.7's) decides the same from the reads. */
extern const lower_fuse_rule LOWER_RULE_STORE_EXPS;

/* The longest entry name a program takes: a C identifier that, with the
 * "_k<n>" of its kernels, stays inside lower_program's entry field. */
#define LOWER_ENTRY_MAX 47

typedef struct lower_program {
  char entry[64];
  lower_backend backend;
  unsigned flags;                   /* LOWER_MAY_ALIAS, LOWER_FUSE, LOWER_VEC_EXP, LOWER_VEC_TANH, LOWER_PARALLEL */
  const lower_fuse_rule *fuse_rule; /* LOWER_FUSE's rule, or NULL (borrowed: static) */
  const ir_graph *graph;            /* borrowed: outlives the program */
  int n_buffers;                    /* parameter order: outputs, inputs, temps */
  lower_buffer *buffers;
  int n_outputs, n_inputs, n_temps;
  int n_kernels;                    /* loop nests, in execution order */
  int *kernel_buffer;               /* kernel k writes buffers[kernel_buffer[k]] */
  int n_dims;
  sym_dim *dims;                    /* the trailing parameters */
  sym_index_plan index;             /* 32- or 64-bit loop and address arithmetic */
  const sym_expr *scratch_bytes;    /* NULL when there are no temporaries */
  int n_nonempty;
  lower_nonempty *nonempty;
  char signature[UOPC_SIGNATURE_MAX];  /* for uopc_program_new (C back end) */
  int uses_libm;
  int uses_openmp;                  /* LOWER_PARALLEL wrote an omp loop: compile with -fopenmp */
  codegen_text source;              /* the generated text */
} lower_program;

/* Lowers the graph computing outputs to a program named entry (a C
 * identifier saying the operation and the variant) for backend. The caller
 * owns *out and frees it with lower_program_free; g must outlive it.
 * Errors: UOPC_E_INVALID (no outputs, a foreign node, a bad entry, an input
 * or dim named like the generated code's own names: out0, t3, g, float...,
 * two dims of one name with different bounds),
 * UOPC_E_OVERFLOW (an address or element count past int64, naming the
 * buffer), UOPC_E_LIMIT (more parameters than UOPC_SIGNATURE_MAX - 1,
 * elementwise ops nested more than 4096 deep without LOWER_FUSE), UOPC_E_NOMEM, those of
 * sym_expr. */
int lower_program_new(lower_program **out, const ir_graph *g, const ir_node *const *outputs,
                      int n_outputs, const char *entry, lower_backend backend, uopc_error *err);
/* The same with flags (LOWER_MAY_ALIAS, LOWER_FUSE, LOWER_VEC_EXP, LOWER_VEC_TANH, LOWER_PARALLEL), stated in
 * the banner. */
int lower_program_new_flags(lower_program **out, const ir_graph *g, const ir_node *const *outputs,
                            int n_outputs, const char *entry, lower_backend backend, unsigned flags,
                            uopc_error *err);
/* The same with LOWER_FUSE's rule (NULL: the outputs, reductions, matmuls
 * and chain cuts only; ignored without LOWER_FUSE). Errors: those above, and
 * the rule's. */
int lower_program_new_rule(lower_program **out, const ir_graph *g, const ir_node *const *outputs,
                           int n_outputs, const char *entry, lower_backend backend, unsigned flags,
                           const lower_fuse_rule *rule, uopc_error *err);
void lower_program_free(lower_program *p);

/* The fusion groups and the plan of temporaries, as text appended to t: one
 * paragraph per loop nest in execution order, "nest k: <buffer> = %<id>
 * (<why it is stored>), reads <buffers>", then each node computed in that
 * nest (the root and everything fused into it, as ir_print writes them: a
 * node fused into two nests is computed in both); then each temporary's
 * scratch offset and the block's size. Chapter 23.7, "Fusion with a cost
 * rule". Errors: UOPC_E_NOMEM, those of sym_expr_format. */
int lower_program_print_groups(codegen_text *t, const lower_program *p, uopc_error *err);

/* The CUDA back end's kernel k is named "<entry>_k<k>"; launch it over
 * ceil(threads / block) blocks, where threads is its output's element count. */
int lower_kernel_threads(const lower_program *p, int k, const sym_binding *b, int64_t *threads,
                         uopc_error *err);

/* The one body emitter, for loops written elsewhere (lab 23.2's variants):
 * appends to n the lines computing node at the index vector idx (one
 * expression per axis, in n's loop variables) and sets *tmp to the
 * temporary that holds it. Inputs are read through their strides and
 * offset; a node that lowering would materialise (a reduction, a matmul)
 * is refused. Errors: UOPC_E_INVALID, those of sym_expr. */
int lower_emit_value(codegen_nest *n, lower_backend backend, const ir_node *node, const sym_expr *const *idx,
                     int *tmp);

#endif
