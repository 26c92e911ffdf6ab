/* emit.c: the text around the loop nests, for the C and the CUDA back end
 * (given code; the compiler core). Both share the banner (what is
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
  codegen_text *t = c->n.t;
  uopc_error *err = c->n.err;
  const ir_node *outs[p->n_outputs];
  const char *names[p->n_outputs];
  for (int k = 0; k < p->n_outputs; k++) {
    outs[k] = p->buffers[k].node;
    names[k] = p->buffers[k].name;
  }
  int rc = codegen_printf(t, err, "/* %s: lowered by the compiler core (lower.c) for the %s back end.\n"
                          " * graph:\n", p->entry, p->backend == LOWER_C ? "C" : "CUDA");
  if (!rc) rc = ir_print_prefixed(t, p->graph, outs, p->n_outputs, names, " *   ", err);
  if (!rc) rc = codegen_printf(t, err, " * dims:%s", p->n_dims ? "" : " none (every size is fixed)");
  for (int d = 0; d < p->n_dims && !rc; d++) {
    const sym_dim *dim = &p->dims[d];
    rc = codegen_printf(t, err, "%s %s in [%lld, %lld]", d ? "," : "", dim->name, (long long)dim->lo,
                        (long long)dim->hi);
    if (!rc && dim->multiple_of > 1) rc = codegen_printf(t, err, " multiple of %lld", (long long)dim->multiple_of);
  }
  if (!rc) rc = codegen_printf(t, err, "\n * index: %s (every buffer holds at most %lld elements; every address fits)\n",
                               c->n.ix, (long long)p->index.max_elements);
  if (!rc && (p->flags & LOWER_MAY_ALIAS))
    rc = codegen_printf(t, err, " * aliasing: an output may be an input's memory, read only at the element it\n"
                        " *   writes (lab 23.3's proof), so no buffer is restrict\n");
  if (!rc && (p->flags & LOWER_FUSE))
    rc = codegen_printf(t, err, " * fusion: %s;\n *   and a chain is cut every %d levels (chapter 23.1)\n",
                        p->fuse_rule ? p->fuse_rule->name : "no rule: the outputs, reductions and matmuls are stored",
                        LOWER_CHAIN_CUT);
  if (!rc && (p->flags & LOWER_VEC_EXP) && p->backend == LOWER_C)
    rc = codegen_printf(t, err, " * exp: an f32 exp is exp_f32 below, without a call, at most %d ulps from expf\n",
                        LOWER_EXP_F32_ULPS);
  if (!rc && c->uses_tanh_f32)   /* only where used: other programs keep their text and keys */
    rc = codegen_printf(t, err, " * tanh: an f32 tanh is tanh_f32 below, without a call, at most %d ulps from tanhf\n",
                        LOWER_TANH_F32_ULPS);
  if (!rc && c->uses_vectors)    /* only where used, as tanh's line */
    rc = codegen_printf(t, err, " * vectors: a matmul's tiles of f32 add F32_LANES columns at a time, each row's\n"
                        " *   in an f32v register (16 lanes with AVX-512, 8 with AVX, else 4); each element\n"
                        " *   still adds its products one at a time in order of k, so the bits do not\n"
                        " *   depend on the width\n");
  if (!rc && c->uses_openmp)     /* only where used, as tanh's line */
    rc = codegen_printf(t, err, " * threads: a loop under `omp parallel for` (a nest's outermost, over disjoint\n"
                        " *   outputs) runs on OpenMP's threads; a nest whose work (its elements, times what\n"
                        " *   each one reduces) may fall below %d is written twice, the threaded copy\n"
                        " *   under `if`. Each element's operations and their order are the serial ones,\n"
                        " *   so the results do not depend on the thread count (compiled with -fopenmp)\n",
                        LOWER_PARALLEL_WORK);
  if (!rc && has_reduction(p))
    rc = codegen_printf(t, err, " * reduction order: element j of a row is added into lane j %% LANES (LANES = %d),\n"
                        " *   each lane left to right from its identity; then the lanes pairwise, lane k\n"
                        " *   += lane k + LANES/2, then k + LANES/4, ..., k + 1; the row's result is lane 0\n"
                        " *   (loop nests marked 'lanes'; a row is the last reduced axis, and the rows of\n"
                        " *   other reduced axes add their results one at a time, in row-major order).\n"
                        " *   A nest marked 'serial' keeps the last axis: each output element adds its\n"
                        " *   elements one at a time in row-major order of the reduced axes. The order\n"
                        " *   fixes the rounding, so it is part of this text and of the cache key\n",
                        CODEGEN_LANES);
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

/* LOWER_VEC_EXP's exp for f32 (lower.h states its bound): no call and no
 * branch, so a loop holding it vectorises. exp(x) = 2^k exp(r), k = x/ln 2
 * rounded (adding 1.5*2^23 rounds to an integer, the low bits hold it),
 * r = x - k ln 2 in two parts (Cody and Waite), |r| <= ln(2)/2, exp(r) by
 * its Taylor polynomial of degree 6; 2^k as two exact powers of 2, so a
 * subnormal result is rounded once. x is clamped to [-104, 89] first (exp
 * is 0 below, inf above); a NaN is returned quiet. Selects are masks: gcc
 * does not if-convert a float comparison, which may trap. */
static const char EXP_F32[] =
  "static inline float exp_f32(float x) {\n"
  "  union { float f; uint32_t u; } v = {x}, k, s1, s2, y;\n"
  "  uint32_t xu = v.u, a = v.u & 0x7fffffffu, neg = 0u - (v.u >> 31);\n"
  "  uint32_t top = (0x42d00000u & neg) | (0x42b20000u & ~neg);      /* 104 below 0, 89 above */\n"
  "  uint32_t over = 0u - (uint32_t)(a > top), nan = 0u - (uint32_t)(a > 0x7f800000u);\n"
  "  v.u = ((top | (xu & 0x80000000u)) & over) | (xu & ~over);\n"
  "  k.f = v.f * 1.44269504f + 12582912.0f;\n"
  "  float kf = k.f - 12582912.0f;\n"
  "  float r = (v.f - kf * 0.693145751953125f) - kf * 1.42860677e-06f;\n"
  "  float p = 1.0f + r * (1.0f + r * (0.5f + r * (0.166666672f + r * (0.0416666679f +\n"
  "            r * (0.00833333377f + r * 0.00138888892f)))));\n"
  "  int32_t ki = (int32_t)(k.u - 0x4b400000u), k1 = ki >> 1;\n"
  "  s1.u = (uint32_t)(k1 + 127) << 23;\n"
  "  s2.u = (uint32_t)(ki - k1 + 127) << 23;\n"
  "  y.f = p * s1.f * s2.f;\n"
  "  y.u = ((xu | 0x00400000u) & nan) | (y.u & ~nan);\n"
  "  return y.f;\n"
  "}\n\n";

/* LOWER_VEC_TANH's tanh for f32 (lower.h states its bound), after exp_f32:
 * tanh is odd, so it works on |x| and puts x's sign bit back (-0 stays -0,
 * NaN stays NaN). Below |x| = 0.625 the Taylor series to x^21 (the next term
 * is under a tenth of an ulp there); above, 1 - 2/(e^2|x| + 1), whose
 * cancellation is mild once tanh is past 0.55; exp_f32's inf for large |x|
 * gives 1. Both are computed and one kept by a mask, as exp_f32's selects. */
static const char TANH_F32[] =
  "static inline float tanh_f32(float x) {\n"
  "  union { float f; uint32_t u; } v = {x}, a, s, b, r;\n"
  "  a.u = v.u & 0x7fffffffu;\n"
  "  float z = a.f * a.f;\n"
  "  s.f = a.f + a.f * z * (-0.333333333f + z * (0.133333333f + z * (-0.0539682540f + z * (0.0218694885f +\n"
  "        z * (-0.00886323552f + z * (0.00359212803f + z * (-0.00145583438f + z * (0.000590027440f +\n"
  "        z * (-0.000239129115f + z * 0.0000969153795f)))))))));\n"
  "  b.f = 1.0f - 2.0f / (exp_f32(2.0f * a.f) + 1.0f);\n"
  "  uint32_t small = 0u - (uint32_t)(a.u < 0x3f200000u);   /* |x| < 0.625 */\n"
  "  r.u = ((s.u & small) | (b.u & ~small)) | (v.u & 0x80000000u);\n"
  "  return r.f;\n"
  "}\n\n";

/* The vectors form's type (lower_matmul.c): f32 lanes as wide as the
 * target's vector registers, chosen by the compiler's own macros, so one
 * text serves a portable and a native build. Measured on the two-layer
 * step's shapes: with 16 lanes where AVX-512 exists the tiles run about
 * twice as fast as the tiles form, with 8 (AVX2) 1.3 times, with SSE's 4
 * as fast. Unaligned (aligned(4)) and may_alias: it reads and writes f32
 * buffers in place. */
static const char F32_VECTORS[] =
  "#if defined(__AVX512F__)\n"
  "enum { F32_LANES = 16 };\n"
  "#elif defined(__AVX__)\n"
  "enum { F32_LANES = 8 };\n"
  "#else\n"
  "enum { F32_LANES = 4 };\n"
  "#endif\n"
  "typedef float f32v __attribute__((vector_size(4 * F32_LANES), aligned(4), may_alias));\n\n";

static int prelude(lower_ctx *c, int helpers, int exp_f32, int tanh_f32, int vectors) {
  const lower_program *p = c->p;
  codegen_text *t = c->n.t;
  uopc_error *err = c->n.err;
  int rc;
  if (p->backend == LOWER_C) rc = codegen_printf(t, err, "#include <math.h>\n#include <stdint.h>\n\n");
  else
    rc = codegen_printf(t, err, "typedef int int32_t;\ntypedef long long int64_t;\n"
                        "typedef unsigned int uint32_t;\ntypedef unsigned long long uint64_t;\n"
                        "typedef unsigned char uint8_t;\n#define INT32_MIN (-2147483647 - 1)\n"
                        "#define INT64_MIN (-9223372036854775807LL - 1)\n#define INT64_C(x) x##LL\n\n");
  if (!rc && has_reduction(p))
    rc = codegen_printf(t, err, "enum { LANES = %d };   /* partial results per output element */\n\n",
                        CODEGEN_LANES);
  if (!rc && (exp_f32 || tanh_f32)) rc = codegen_printf(t, err, "%s", EXP_F32);
  if (!rc && tanh_f32) rc = codegen_printf(t, err, "%s", TANH_F32);
  if (!rc && vectors) rc = codegen_printf(t, err, "%s", F32_VECTORS);
  if (rc || !helpers) return rc;
  if (p->backend == LOWER_C) return codegen_printf(t, err, "%s\n", SYM_C_HELPERS);
  /* The same helpers, compiled for the device. */
  const char *s = SYM_C_HELPERS;
  for (const char *at; (at = strstr(s, "static inline")) && !rc; s = at + strlen("static inline"))
    rc = codegen_printf(t, err, "%.*s__device__ static inline", (int)(at - s), s);
  return rc ? rc : codegen_printf(t, err, "%s\n", s);
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
  size_t line_start = c->n.t->len;
  char text[128];
  int rc = codegen_printf(c->n.t, c->n.err, "%svoid %s(", qualifier, name), first = 1;
  for (int b = 0; b < p->n_outputs + p->n_inputs && !rc; b++, first = 0) {
    const lower_buffer *buf = &p->buffers[b];
    if (p->flags & LOWER_MAY_ALIAS)       /* an output may be an input's memory */
      snprintf(text, sizeof text, "%s%s *%s", buf->role == LOWER_INPUT ? "const " : "",
               ir_dtype_ctype(buf->node->dtype), buf->name);
    else
      snprintf(text, sizeof text, "%s%s *%s %s", buf->role == LOWER_INPUT ? "const " : "",
               ir_dtype_ctype(buf->node->dtype), restrict_kw, buf->name);
    rc = parameter(c->n.t, &line_start, first, text, c->n.err);
  }
  if (!rc && p->n_temps) {
    snprintf(text, sizeof text, "void *%s scratch", restrict_kw);
    rc = parameter(c->n.t, &line_start, 0, text, c->n.err);
  }
  for (int d = 0; d < p->n_dims && !rc; d++) {
    snprintf(text, sizeof text, "%s %s", c->n.ix, p->dims[d].name);
    rc = parameter(c->n.t, &line_start, 0, text, c->n.err);
  }
  return rc ? rc : codegen_printf(c->n.t, c->n.err, ") {\n");
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
    if (!rc) rc = codegen_line(&c->n, "%s *%s = (%s *)((unsigned char *)scratch + %s);", T, buf->name, T, off);
  }
  return rc;
}

static int kernel_comment(lower_ctx *c, int k) {
  const lower_buffer *buf = &c->p->buffers[c->p->kernel_buffer[k]];
  const ir_node *n = buf->node;
  const char *order = lower_reduces_serially(n) || lower_plan_matmul_rows(c->p, n) ? ", order: serial"
                      : ir_op_info_of(n->op)->kind >= IR_KIND_REDUCE ? ", order: lanes" : "";
  return codegen_line(&c->n, "/* loop nest %d: %s = %%%d (%s%s) */", k, buf->name, n->id,
                      ir_op_info_of(n->op)->name, order);
}

/* A function's body starts at depth 1 with no loop open. */
static void enter_function(lower_ctx *c) {
  codegen_nest_init(&c->n, c->n.t, c->n.arena, c->n.ix, 1, c->n.err);
}

/* Loop nest k of the C function. Under LOWER_PARALLEL a nest whose work
 * may or may not reach the threshold is written twice, the threaded copy
 * under `if`: a parallel region that runs on one thread still costs libgomp
 * a team and a call, which a small call must not pay. */
static int kernel_c(lower_ctx *c, int k) {
  const ir_node *n = c->p->buffers[c->p->kernel_buffer[k]].node;
  int (*nest)(lower_ctx *, int) = lower_plan_matmul_rows(c->p, n) ? lower_matmul_kernel_c : lower_emit_kernel;
  char cond[LOWER_EXPR_MAX * 2], line[LOWER_EXPR_MAX * 2 + 64];
  lower_split split;
  int rc = lower_ctx_parallel(c, n, cond, sizeof cond, &split);
  if (rc || split == LOWER_SPLIT_NEVER) return rc ? rc : nest(c, k);
  if (split == LOWER_SPLIT_ALWAYS) {
    c->parallel_next = 1;
    return nest(c, k);
  }
  snprintf(line, sizeof line, "if (%s) {   /* enough work for OpenMP's threads */", cond);
  rc = codegen_open(&c->n, line);
  c->parallel_next = 1;
  if (!rc) rc = nest(c, k);
  c->parallel_next = 0;
  if (!rc) rc = codegen_close(&c->n);
  if (!rc) rc = codegen_open(&c->n, "else {");
  if (!rc) rc = nest(c, k);
  return rc ? rc : codegen_close(&c->n);
}

static int functions(lower_ctx *c) {
  const lower_program *p = c->p;
  int rc = UOPC_OK;
  if (p->backend == LOWER_C) {
    enter_function(c);
    rc = signature(c, "", p->entry);
    if (!rc) rc = temporaries(c);
    for (int k = 0; k < p->n_kernels && !rc; k++) {
      rc = kernel_comment(c, k);
      if (!rc) rc = kernel_c(c, k);
    }
    return rc ? rc : codegen_printf(c->n.t, c->n.err, "}\n");
  }
  for (int k = 0; k < p->n_kernels && !rc; k++) {
    char name[96];
    snprintf(name, sizeof name, "%s_k%d", p->entry, k);
    enter_function(c);
    rc = codegen_printf(c->n.t, c->n.err, "%s", k ? "\n" : "");
    if (!rc) rc = signature(c, "extern \"C\" __global__ ", name);
    if (!rc) rc = temporaries(c);
    if (!rc) rc = kernel_comment(c, k);
    if (!rc) rc = lower_emit_kernel(c, k);
    if (!rc) rc = codegen_printf(c->n.t, c->n.err, "}\n");
  }
  return rc;
}

/* The functions first, into their own text, so the prelude knows whether
 * they call the // and % helpers; then banner + prelude + functions. Written
 * at the index width planned from the element counts; an address that
 * leaves int32 (a strided view) sends it round again at 64 bits. */
int lower_emit_source(lower_program *p, uopc_error *err) {
  for (;;) {
    codegen_text body = {0};
    codegen_text_fini(&p->source);
    lower_ctx c = {.p = p};
    codegen_nest_init(&c.n, &body, ir_graph_arena((ir_graph *)p->graph), sym_index_ctype(&p->index), 1, err);
    int rc = functions(&c);
    c.n.t = &p->source;
    c.uses_tanh_f32 = body.data && strstr(body.data, "tanh_f32(") != NULL;
    c.uses_vectors = body.data && strstr(body.data, "f32v ") != NULL;
    p->uses_openmp = c.uses_openmp;
    if (!rc) rc = banner(&c);
    if (!rc)
      rc = prelude(&c, strstr(body.data, "_i64(") != NULL, strstr(body.data, "exp_f32(") != NULL, c.uses_tanh_f32,
                   c.uses_vectors);
    if (!rc) rc = codegen_printf(&p->source, err, "%s", body.data);
    free(c.memo);
    free(c.memo_head);
    codegen_text_fini(&body);
    if (rc || !c.needs64 || p->index.bits == 64) return rc;
    p->index.bits = 64;
  }
}
