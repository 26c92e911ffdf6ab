/* emit.c: the text around the loop nests, for the C and the CUDA back end
 * (given code; the compiler core, lab 23.1). Both share the banner (what is
 * computed, the graph, the dims with their bounds, the index width, the
 * reduction order, the temporaries, what the cache key covers) and the
 * parameter list: outputs, inputs, scratch, then the dims. Chapter 23.1,
 * "Reading the generated code". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lower_internal.h"

static int has_reduction(const lower_program *p) {
  for (int k = 0; k < p->n_kernels; k++)
    if (ir_op_info_of(p->buffers[p->kernel_buffer[k]].node->op)->kind >= IR_KIND_REDUCE) return 1;
  return 0;
}

static int banner(lower_ctx *c) {
  const lower_program *p = c->p;
  codegen_text *t = c->t;
  uopc_error *err = c->err;
  const ir_node *outs[p->n_outputs];
  for (int k = 0; k < p->n_outputs; k++) outs[k] = p->buffers[k].node;
  int rc = codegen_printf(t, err, "/* %s: lowered by the compiler core (lower.c) for the %s back end.\n"
                          " * graph:\n", p->entry, p->backend == LOWER_C ? "C" : "CUDA");
  if (!rc) rc = ir_print_prefixed(t, p->graph, outs, p->n_outputs, " *   ", err);
  if (!rc) rc = codegen_printf(t, err, " * dims:%s", p->n_dims ? "" : " none (every size is fixed)");
  for (int d = 0; d < p->n_dims && !rc; d++) {
    const sym_dim *dim = &p->dims[d];
    rc = codegen_printf(t, err, "%s %s in [%lld, %lld]", d ? "," : "", dim->name, (long long)dim->lo,
                        (long long)dim->hi);
    if (!rc && dim->multiple_of > 1) rc = codegen_printf(t, err, " multiple of %lld", (long long)dim->multiple_of);
  }
  if (!rc) rc = codegen_printf(t, err, "\n * index: %s (every address and element count fits)\n", c->ix);
  if (!rc && has_reduction(p))
    rc = codegen_printf(t, err, " * reduction order (each loop nest says which): 'lanes' adds element j of the\n"
                        " *   innermost reduced axis into lane j %% LANES (LANES = %d), other reduced axes\n"
                        " *   in row-major order around it, each lane from its identity, then the lanes\n"
                        " *   pairwise, lane k with lane k + LANES/2, then k + LANES/4, ..., k + 1, the\n"
                        " *   result in lane 0; 'serial' (when the last axis is kept) adds each output\n"
                        " *   element's elements one at a time in row-major order of the reduced axes\n",
                        LOWER_LANES);
  for (int b = 0; b < p->n_buffers && !rc; b++) {
    const lower_buffer *buf = &p->buffers[b];
    char off[LOWER_EXPR_MAX];
    if (buf->role != LOWER_TEMP) continue;
    rc = sym_expr_format(buf->scratch_offset, off, sizeof off, err);
    if (!rc) rc = codegen_printf(t, err, " * temporary %s holds %%%d at scratch + %s bytes\n", buf->name,
                                 buf->node->id, off);
  }
  if (!rc) rc = codegen_printf(t, err, " * guards: none inside; the caller binds and checks every dim, shape,"
                               " stride and\n *   buffer before the call\n"
                               " * cache key: SHA-256 of this text, the entry, the signature, the compiler"
                               " and\n *   its version, the flags, the target and the ABI version */\n");
  return rc;
}

static int prelude(lower_ctx *c) {
  const lower_program *p = c->p;
  int rc;
  if (p->backend == LOWER_C)
    rc = codegen_printf(c->t, c->err, "#include <math.h>\n#include <stdint.h>\n\n");
  else
    rc = codegen_printf(c->t, c->err, "typedef int int32_t;\ntypedef long long int64_t;\n"
                        "typedef unsigned int uint32_t;\ntypedef unsigned long long uint64_t;\n"
                        "typedef unsigned char uint8_t;\n#define INT32_MIN (-2147483647 - 1)\n"
                        "#define INT64_MIN (-9223372036854775807LL - 1)\n#define INT64_C(x) x##LL\n\n");
  if (!rc && has_reduction(p))
    rc = codegen_printf(c->t, c->err, "enum { LANES = %d };   /* partial results per output element */\n\n",
                        LOWER_LANES);
  if (rc) return rc;
  if (p->backend == LOWER_C) return codegen_printf(c->t, c->err, "%s\n", SYM_C_HELPERS);
  /* The same helpers, compiled for the device. */
  const char *s = SYM_C_HELPERS;
  for (const char *at; (at = strstr(s, "static inline")) && !rc; s = at + strlen("static inline"))
    rc = codegen_printf(c->t, c->err, "%.*s__device__ static inline", (int)(at - s), s);
  return rc ? rc : codegen_printf(c->t, c->err, "%s\n", s);
}

/* Appends one parameter, starting a new line past 96 columns. */
static int parameter(codegen_text *t, size_t *line_start, int first, const char *text, uopc_error *err) {
  if (!first && t->len - *line_start + strlen(text) + 2 > 96) {
    *line_start = t->len + 2;
    return codegen_printf(t, err, ",\n    %s", text);
  }
  return codegen_printf(t, err, "%s%s", first ? "" : ", ", text);
}

static int signature(lower_ctx *c, const char *qualifier, const char *name) {
  const lower_program *p = c->p;
  const char *restrict_kw = p->backend == LOWER_C ? "restrict" : "__restrict__";
  size_t line_start = c->t->len;
  char text[128];
  int rc = codegen_printf(c->t, c->err, "%svoid %s(", qualifier, name), first = 1;
  for (int b = 0; b < p->n_outputs + p->n_inputs && !rc; b++, first = 0) {
    const lower_buffer *buf = &p->buffers[b];
    snprintf(text, sizeof text, "%s%s *%s %s", buf->role == LOWER_INPUT ? "const " : "",
             ir_dtype_ctype(buf->node->dtype), restrict_kw, buf->name);
    rc = parameter(c->t, &line_start, first, text, c->err);
  }
  if (!rc && p->n_temps) {
    snprintf(text, sizeof text, "void *%s scratch", restrict_kw);
    rc = parameter(c->t, &line_start, 0, text, c->err);
  }
  for (int d = 0; d < p->n_dims && !rc; d++) {
    snprintf(text, sizeof text, "%s %s", c->ix, p->dims[d].name);
    rc = parameter(c->t, &line_start, 0, text, c->err);
  }
  return rc ? rc : codegen_printf(c->t, c->err, ") {\n");
}

static int temporaries(lower_ctx *c) {
  const lower_program *p = c->p;
  int rc = UOPC_OK;
  for (int b = 0; b < p->n_buffers && !rc; b++) {
    const lower_buffer *buf = &p->buffers[b];
    char off[LOWER_EXPR_MAX];
    if (buf->role != LOWER_TEMP) continue;
    rc = lower_ctx_expr(c, buf->scratch_offset, off, sizeof off, "the scratch offset");
    const char *T = ir_dtype_ctype(buf->node->dtype);
    if (!rc) rc = lower_ctx_printf(c, "%s *%s = (%s *)((unsigned char *)scratch + %s);\n", T, buf->name, T, off);
  }
  return rc;
}

static int kernel_comment(lower_ctx *c, int k) {
  const lower_buffer *buf = &c->p->buffers[c->p->kernel_buffer[k]];
  const ir_node *n = buf->node;
  const char *order = lower_reduces_serially(n) ? ", order: serial"
                      : ir_op_info_of(n->op)->kind >= IR_KIND_REDUCE ? ", order: lanes" : "";
  return lower_ctx_printf(c, "/* loop nest %d: %s = %%%d (%s%s) */\n", k, buf->name, n->id,
                          ir_op_info_of(n->op)->name, order);
}

static int functions(lower_ctx *c) {
  const lower_program *p = c->p;
  int rc = UOPC_OK;
  if (p->backend == LOWER_C) {
    c->depth = 1;
    rc = signature(c, "", p->entry);
    if (!rc) rc = temporaries(c);
    for (int k = 0; k < p->n_kernels && !rc; k++) {
      rc = kernel_comment(c, k);
      if (!rc) rc = lower_emit_kernel(c, k);
    }
    return rc ? rc : codegen_printf(c->t, c->err, "}\n");
  }
  for (int k = 0; k < p->n_kernels && !rc; k++) {
    char name[96];
    snprintf(name, sizeof name, "%s_k%d", p->entry, k);
    c->depth = 1;
    rc = codegen_printf(c->t, c->err, "%s", k ? "\n" : "");
    if (!rc) rc = signature(c, "extern \"C\" __global__ ", name);
    if (!rc) rc = temporaries(c);
    if (!rc) rc = kernel_comment(c, k);
    if (!rc) rc = lower_emit_kernel(c, k);
    if (!rc) rc = codegen_printf(c->t, c->err, "}\n");
  }
  return rc;
}

/* Written once at the index width planned from the element counts; an address
 * that leaves int32 (a strided view) sends it round again at 64 bits. */
int lower_emit_source(lower_program *p, uopc_error *err) {
  for (;;) {
    codegen_text_fini(&p->source);
    lower_ctx c = {.p = p, .t = &p->source, .arena = ir_graph_arena((ir_graph *)p->graph), .err = err,
                   .ix = sym_index_ctype(&p->index)};
    int rc = banner(&c);
    if (!rc) rc = prelude(&c);
    if (!rc) rc = functions(&c);
    free(c.memo);
    if (rc || !c.needs64 || p->index.bits == 64) return rc;
    p->index.bits = 64;
  }
}
