/* ir_fold.c: constant folding (the compiler core; issue 27). Size
 * expressions are already simplified by the graph's builders; here a size
 * that simplified to a number becomes a constant, and an elementwise op over
 * constants becomes the constant it computes, so its consumers may fold in
 * turn. A folded value must be the one the generated C would compute: each
 * op is computed here with the C the lowering writes for it (lower_kernel.c,
 * op_text): f32 in float, integers wrapping through their unsigned type,
 * NumPy's NaN rule for maximum and minimum. Where the C would be undefined
 * or a double cannot carry the result exactly (an integer past 2^53, a cast
 * of NaN or of an out-of-range float to an integer), the node is kept as it
 * is. Chapter 23.1, "Passes over the graph". */
#include <math.h>
#include <stdint.h>
#include "ir_pass.h"

#define EXACT 9007199254740992.0   /* 2^53: every integer up to it is a double */

static int exact_int(double r) { return r >= -EXACT && r <= EXACT; }

/* op over floats a, b (in float when f32: the C's own arithmetic). */
static int fold_float(ir_op op, int f32, double a, double b, double *r) {
  float fa = (float)a, fb = (float)b;
  switch (op) {
  case IR_NEG: *r = f32 ? (double)-fa : -a; return 1;
  case IR_ABS: *r = f32 ? (double)fabsf(fa) : fabs(a); return 1;
  case IR_EXP: *r = f32 ? (double)expf(fa) : exp(a); return 1;
  case IR_LOG: *r = f32 ? (double)logf(fa) : log(a); return 1;
  case IR_SQRT: *r = f32 ? (double)sqrtf(fa) : sqrt(a); return 1;
  case IR_TANH: *r = f32 ? (double)tanhf(fa) : tanh(a); return 1;
  case IR_ADD: *r = f32 ? (double)(fa + fb) : a + b; return 1;
  case IR_SUB: *r = f32 ? (double)(fa - fb) : a - b; return 1;
  case IR_MUL: *r = f32 ? (double)(fa * fb) : a * b; return 1;
  case IR_DIV: *r = f32 ? (double)(fa / fb) : a / b; return 1;
  case IR_POW: *r = f32 ? (double)powf(fa, fb) : pow(a, b); return 1;
  case IR_MAXIMUM: *r = (a > b || a != a) ? a : b; return 1;   /* a NaN operand wins */
  case IR_MINIMUM: *r = (a < b || a != a) ? a : b; return 1;
  case IR_LT: *r = a < b; return 1;
  case IR_LE: *r = a <= b; return 1;
  case IR_GT: *r = a > b; return 1;
  case IR_GE: *r = a >= b; return 1;
  case IR_EQ: *r = a == b; return 1;
  case IR_NE: *r = a != b; return 1;
  default: return 0;
  }
}

/* op over integers of dtype dt, wrapping as the C's unsigned arithmetic. */
static int fold_int(ir_op op, uopc_dtype dt, int64_t a, int64_t b, double *r) {
  uint64_t ua = (uint64_t)a, ub = (uint64_t)b, u;
  switch (op) {
  case IR_NEG: u = 0u - ua; break;
  case IR_ABS: u = a < 0 ? 0u - ua : ua; break;
  case IR_ADD: u = ua + ub; break;
  case IR_SUB: u = ua - ub; break;
  case IR_MUL: u = ua * ub; break;
  case IR_MAXIMUM: u = a > b ? ua : ub; break;
  case IR_MINIMUM: u = a < b ? ua : ub; break;
  case IR_LT: *r = a < b; return 1;
  case IR_LE: *r = a <= b; return 1;
  case IR_GT: *r = a > b; return 1;
  case IR_GE: *r = a >= b; return 1;
  case IR_EQ: *r = a == b; return 1;
  case IR_NE: *r = a != b; return 1;
  default: return 0;
  }
  int64_t v = dt == UOPC_I32 ? (int64_t)(int32_t)(uint32_t)u : (int64_t)u;
  *r = (double)v;
  return exact_int(*r);
}

/* v to dtype to, as C's cast `(T)v` (bool: v != 0); 0 when undefined or inexact. */
static int fold_cast(uopc_dtype from, uopc_dtype to, double v, double *r) {
  if (to == UOPC_BOOL) { *r = v != 0; return 1; }
  if (to == UOPC_F32) { *r = (double)(float)v; return 1; }
  if (to == UOPC_F64) { *r = v; return 1; }
  if (uopc_dtype_is_float(from) && (v != v || !(v > -EXACT && v < EXACT))) return 0;
  int64_t i = (int64_t)v;                       /* truncation toward zero, as C's */
  if (to == UOPC_I32) {
    if (uopc_dtype_is_float(from) && !(v > -2147483649.0 && v < 2147483648.0)) return 0;
    i = (int64_t)(int32_t)(uint32_t)(uint64_t)i;
  }
  *r = (double)i;
  return 1;
}

/* 1 and *r when x (with operands' values v) folds. */
static int fold(const ir_node *x, const double *v, double *r) {
  ir_kind kind = ir_op_info_of(x->op)->kind;
  if (kind == IR_KIND_WHERE) { *r = v[0] != 0 ? v[1] : v[2]; return 1; }
  uopc_dtype dt = x->src[0]->dtype;
  if (kind == IR_KIND_CAST) return fold_cast(dt, x->dtype, v[0], r);
  if (kind != IR_KIND_UNARY && kind != IR_KIND_MATH && kind != IR_KIND_BINARY && kind != IR_KIND_COMPARE) return 0;
  double b = ir_op_info_of(x->op)->arity > 1 ? v[1] : 0;
  if (uopc_dtype_is_float(dt)) return fold_float(x->op, dt == UOPC_F32, v[0], b, r);
  if (dt == UOPC_I32 || dt == UOPC_I64) return fold_int(x->op, dt, (int64_t)v[0], (int64_t)b, r);
  return kind == IR_KIND_COMPARE && fold_int(x->op, UOPC_I64, (int64_t)v[0], (int64_t)b, r);  /* bool: compare only */
}

/* A size whose expression is a number n: (T)n, when exact. */
static int fold_size(const ir_node *x, double *r) {
  if (x->index->kind != SYM_CONST) return 0;
  double v = (double)x->index->value;
  if (!exact_int(v) || (x->dtype == UOPC_I32 && (v < INT32_MIN || v > INT32_MAX))) return 0;
  *r = x->dtype == UOPC_F32 ? (double)(float)v : v;
  return 1;
}

int ir_pass_fold(ir_graph **out, const ir_node **new_outputs, const ir_graph *g, const ir_node *const *outputs,
                 int n, uopc_error *err) {
  ir_pass_map m;
  int rc = ir_pass_begin(&m, g, outputs, n, err);
  if (rc) return rc;
  for (int id = 0; id < ir_graph_node_count(g); id++) {
    const ir_node *x = ir_graph_node(g, id);
    if (x->op == IR_INPUT) continue;
    double v[3] = {0, 0, 0}, r;
    int arity = ir_op_info_of(x->op)->arity, all = arity > 0, ok;
    for (int i = 0; i < arity; i++) {
      const ir_node *s = m.map[x->src[i]->id];
      if (!s || s->op != IR_CONST) all = 0;
      else v[i] = s->dtype == UOPC_F32 ? (double)(float)s->value : s->value;  /* as the literal is written */
    }
    if (x->op == IR_SIZE) ok = fold_size(x, &r);
    else ok = all && x->rank == 0 && fold(x, v, &r);
    const ir_node *image = ok ? ir_const(m.to, r, x->dtype) : ir_pass_copy(&m, x);
    if (!(m.map[id] = image)) break;
  }
  return ir_pass_end(&m, outputs, n, new_outputs, out, "fold", err);
}
