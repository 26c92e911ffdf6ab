/* coreutil.h: helpers shared by the compiler core's suites (tests/core/)
 * and lab 23.7's fusion suite: a graph per test, dims and shapes in one
 * line, builder errors checked by code and text, tensors over buffers whose
 * tails are poisoned so that a write past the logical end is seen, a fusion
 * rule for the mechanism's tests, and compiled text and results against
 * the interpreter. */
#ifndef COREUTIL_H
#define COREUTIL_H

#include <math.h>
#include "exec.h"
#include "ir_eval.h"
#include "testutil.h"

/* A shape literal: SHAPE(n, cst(c, 4)). */
#define SHAPE(...) ((const sym_expr *const[]){__VA_ARGS__})
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

typedef struct core {
  ir_graph *g;
  sym_arena *a;
} core;

static int core_setup(void **state) {
  core *c = calloc(1, sizeof *c);
  uopc_error err = {0};
  if (!c || ir_graph_new(&c->g, &err)) return -1;
  c->a = ir_graph_arena(c->g);
  *state = c;
  return 0;
}

static int core_teardown(void **state) {
  core *c = *state;
  ir_graph_free(c->g);
  free(c);
  return 0;
}

/* A dim in [lo, hi] (a multiple of mult) as an expression of c's arena. */
static inline const sym_expr *dim_m(core *c, const char *name, int64_t lo, int64_t hi, int64_t mult) {
  sym_dim d;
  uopc_error err = {0};
  assert_uopc_ok(sym_dim_init(&d, name, lo, hi, mult, &err), err);
  const sym_expr *e = sym_expr_dim(c->a, &d);
  assert_non_null(e);
  return e;
}

static inline const sym_expr *dim(core *c, const char *name, int64_t lo, int64_t hi) {
  return dim_m(c, name, lo, hi, 1);
}

static inline const sym_expr *cst(core *c, int64_t v) { return sym_expr_const(c->a, v); }

/* Fails with the graph's error when n is NULL. */
static inline const ir_node *ok_node(core *c, const ir_node *n, const char *what) {
  if (!n) fail_msg("%s: expected a node, got NULL: %s: %s", what, uopc_error_name(ir_graph_error(c->g)->code),
                   ir_graph_error(c->g)->message);
  return n;
}

static inline const ir_node *input(core *c, const char *name, uopc_dtype dt, int rank,
                                   const sym_expr *const *shape) {
  return ok_node(c, ir_input(c->g, name, dt, rank, shape), name);
}

/* The builder that gave got failed with code and a message containing each
 * needle (NULL ends the list). */
static inline void expect_graph_error(core *c, const ir_node *got, int code, const char *what, ...) {
  const uopc_error *e = ir_graph_error(c->g);
  if (got) fail_msg("%s: expected NULL and %s, got node %%%d", what, uopc_error_name(code), got->id);
  if (e->code != code)
    fail_msg("%s: expected %s, got %s: %s", what, uopc_error_name(code), uopc_error_name(e->code), e->message);
  va_list ap;
  va_start(ap, what);
  for (const char *needle; (needle = va_arg(ap, const char *));)
    if (!strstr(e->message, needle))
      fail_msg("%s: expected the message to contain \"%s\"; it was \"%s\"", what, needle, e->message);
  va_end(ap);
}

/* n's shape as ir_shape_format writes it, "(n, 4)". */
static inline void expect_shape(const ir_node *n, const char *want, const char *what) {
  char got[256];
  ir_shape_format(n, got, sizeof got);
  if (strcmp(got, want) != 0) fail_msg("%s: expected shape %s, got %s", what, want, got);
}

static inline const char *expr_text(const sym_expr *e) {
  static char buf[4][256];
  static int next;
  char *b = buf[next++ % 4];
  if (sym_expr_format(e, b, 256, NULL)) snprintf(b, 256, "(too long)");
  return b;
}

/* ---- The fusion rule of the mechanism's tests (LOWER_FUSE): the core's
 * own that stores every exp (lower.h), which lab 23.5 ships too. */
static inline const lower_fuse_rule *core_store_exps_rule(void) { return &LOWER_RULE_STORE_EXPS; }

/* ---- Tensors with poisoned tails. */

enum { TAIL_BYTES = 64 };
#define POISON_BYTE 0xA5

typedef struct buf {
  uopc_tensor t;
  unsigned char *mem;       /* numel elements, then TAIL_BYTES of poison */
  size_t bytes;             /* the logical bytes */
} buf;

/* A contiguous tensor of shape over fresh memory, every byte poisoned. */
static inline void buf_new(buf *b, uopc_dtype dt, int rank, const int64_t *shape) {
  int64_t strides[UOPC_MAX_RANK], numel = 1;
  for (int k = rank - 1; k >= 0; k--) {
    strides[k] = numel;
    numel *= shape[k];
  }
  uopc_error err = {0};
  b->bytes = (size_t)numel * uopc_dtype_size(dt);
  b->mem = malloc(b->bytes + TAIL_BYTES);
  assert_non_null(b->mem);
  memset(b->mem, POISON_BYTE, b->bytes + TAIL_BYTES);
  assert_uopc_ok(uopc_tensor_wrap(&b->t, b->mem, dt, rank, shape, strides, &err), err);
}

static inline void buf_free(buf *b) {
  uopc_tensor_release(&b->t);
  free(b->mem);
  memset(b, 0, sizeof *b);
}

static inline void expect_tail_untouched(const buf *b, const char *what) {
  for (size_t i = b->bytes; i < b->bytes + TAIL_BYTES; i++)
    if (b->mem[i] != POISON_BYTE)
      fail_msg("%s: byte %zu past the logical end (%zu bytes) was written (0x%02x)", what, i - b->bytes,
               b->bytes, b->mem[i]);
}

/* ---- Generated text and compiled results. */

static inline int count_of(const char *text, const char *needle) {
  int k = 0;
  for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle)) k++;
  return k;
}

/* The function's body: the text after the banner (which prints the graph). */
static inline const char *body_of(const exec *e) {
  const char *s = exec_source(e), *end = strstr(s, "*/");
  return end ? end : s;
}

enum { CORE_MAX_IO = 8 };

/* Runs e on ins into fresh outputs (the nodes' dtypes, the shapes of this
 * binding, poisoned tails; the caller frees them); *b gets the binding. */
static inline void run_into(exec *e, const ir_node *const *outs, int n_out, buf *ins, int n_in, buf *got,
                            sym_binding *b) {
  const uopc_tensor *in[CORE_MAX_IO];
  uopc_tensor *o[CORE_MAX_IO];
  uopc_error err = {0};
  for (int k = 0; k < n_in; k++) in[k] = &ins[k].t;
  assert_uopc_ok(exec_bind(e, in, n_in, b, &err), err);
  for (int k = 0; k < n_out; k++) {
    int64_t shape[UOPC_MAX_RANK];
    int rank;
    assert_uopc_ok(exec_output_shape(e, k, b, shape, &rank, &err), err);
    buf_new(&got[k], outs[k]->dtype, rank, shape);
    o[k] = &got[k].t;
  }
  assert_uopc_ok(exec_run(e, o, n_out, in, n_in, &err), err);
}

/* Runs e on inputs and compares each output with the interpreter's (within
 * rel, relative, for sums whose lane order rounds differently); every
 * output's poisoned tail must be untouched. */
static inline void check_against_eval(core *c, exec *e, const ir_node *const *outs, int n_out, buf *ins, int n_in,
                                      double rel, const char *what) {
  const uopc_tensor *in[CORE_MAX_IO];
  uopc_tensor want[CORE_MAX_IO];
  buf got[CORE_MAX_IO];
  sym_binding b;
  uopc_error err = {0};
  for (int k = 0; k < n_in; k++) in[k] = &ins[k].t;
  run_into(e, outs, n_out, ins, n_in, got, &b);
  assert_uopc_ok(ir_eval(c->g, outs, n_out, in, n_in, &b, want, &err), err);
  for (int k = 0; k < n_out; k++) {
    for (int64_t i = 0; i < uopc_tensor_numel(&want[k]); i++) {
      double g = uopc_tensor_get(&got[k].t, i), w = uopc_tensor_get(&want[k], i);
      if (!(fabs(g - w) <= rel * fabs(w)) && !(g != g && w != w))
        fail_msg("%s: output %d element %lld: compiled %.9g, interpreter %.9g", what, k, (long long)i, g, w);
    }
    expect_tail_untouched(&got[k], what);
    uopc_tensor_release(&want[k]);
    buf_free(&got[k]);
  }
}

#endif
