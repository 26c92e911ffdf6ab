/* ir_ops.h: the graph IR's op table (given code; the compiler core).
 * One row per op: its name, arity, kind and, for elementwise math, the C
 * function of its f64 form (the f32 form adds 'f'). Everything that differs
 * by op (builders' shape rules, the printer, both back ends) reads this table,
 * and a later stage adds a column (the derivative, 23.4) rather than a switch
 * of its own. Chapter 23.1, "The graph IR". */
#ifndef IR_OPS_H
#define IR_OPS_H

/*  X(OP,       name,       arity, kind,          C function or operator) */
#define IR_OPS(X)                                                        \
  X(INPUT,      "input",      0, IR_KIND_LEAF,    NULL)                  \
  X(CONST,      "const",      0, IR_KIND_LEAF,    NULL)                  \
  X(NEG,        "neg",        1, IR_KIND_UNARY,   "-")                   \
  X(ABS,        "abs",        1, IR_KIND_UNARY,   "fabs")                \
  X(EXP,        "exp",        1, IR_KIND_MATH,    "exp")                 \
  X(LOG,        "log",        1, IR_KIND_MATH,    "log")                 \
  X(SQRT,       "sqrt",       1, IR_KIND_MATH,    "sqrt")                \
  X(TANH,       "tanh",       1, IR_KIND_MATH,    "tanh")                \
  X(CAST,       "cast",       1, IR_KIND_CAST,    NULL)                  \
  X(ADD,        "add",        2, IR_KIND_BINARY,  "+")                   \
  X(SUB,        "sub",        2, IR_KIND_BINARY,  "-")                   \
  X(MUL,        "mul",        2, IR_KIND_BINARY,  "*")                   \
  X(DIV,        "div",        2, IR_KIND_BINARY,  "/")                   \
  X(MAXIMUM,    "maximum",    2, IR_KIND_BINARY,  ">")                   \
  X(MINIMUM,    "minimum",    2, IR_KIND_BINARY,  "<")                   \
  X(POW,        "pow",        2, IR_KIND_BINARY,  "pow")                 \
  X(LT,         "less",       2, IR_KIND_COMPARE, "<")                   \
  X(LE,         "less_equal", 2, IR_KIND_COMPARE, "<=")                  \
  X(GT,         "greater",    2, IR_KIND_COMPARE, ">")                   \
  X(GE,         "greater_equal", 2, IR_KIND_COMPARE, ">=")               \
  X(EQ,         "equal",      2, IR_KIND_COMPARE, "==")                  \
  X(NE,         "not_equal",  2, IR_KIND_COMPARE, "!=")                  \
  X(WHERE,      "where",      3, IR_KIND_WHERE,   NULL)                  \
  X(EXPAND,     "expand",     1, IR_KIND_MOVE,    NULL)                  \
  X(RESHAPE,    "reshape",    1, IR_KIND_MOVE,    NULL)                  \
  X(PERMUTE,    "permute",    1, IR_KIND_MOVE,    NULL)                  \
  X(SLICE,      "slice",      1, IR_KIND_MOVE,    NULL)                  \
  X(SELECT,     "select",     1, IR_KIND_MOVE,    NULL)                  \
  X(SUM,        "sum",        1, IR_KIND_REDUCE,  "+")                   \
  X(MAX,        "max",        1, IR_KIND_REDUCE,  ">")                   \
  X(MEAN,       "mean",       1, IR_KIND_REDUCE,  "+")                   \
  X(MATMUL,     "matmul",     2, IR_KIND_MATMUL,  "*")                   \
  X(SLICE_SET,  "slice_set",  2, IR_KIND_SET,     NULL)                  \
  X(SELECT_SET, "select_set", 2, IR_KIND_SET,     NULL)                  \
  X(SIZE,       "size",       0, IR_KIND_LEAF,    NULL)

typedef enum ir_kind {
  IR_KIND_LEAF,      /* an input view or a constant */
  IR_KIND_UNARY,     /* any numeric dtype, same dtype out */
  IR_KIND_MATH,      /* float dtypes only: the C library function */
  IR_KIND_CAST,      /* to the node's dtype */
  IR_KIND_BINARY,    /* equal dtypes after broadcasting; DIV and POW float only */
  IR_KIND_COMPARE,   /* equal dtypes; bool out */
  IR_KIND_WHERE,     /* where(bool, a, b) */
  IR_KIND_MOVE,      /* changes which element is read, never a value */
  IR_KIND_SET,       /* a base with a view's elements replaced (23.3's functional store) */
  IR_KIND_REDUCE,    /* over a set of axes, keepdims or not */
  IR_KIND_MATMUL     /* (..., m, k) @ (..., k, n) */
} ir_kind;

typedef enum ir_op {
#define IR_ENUM(op, name, arity, kind, c) IR_##op,
  IR_OPS(IR_ENUM)
#undef IR_ENUM
  IR_OP_COUNT
} ir_op;

typedef struct ir_op_info {
  const char *name;
  int arity;
  ir_kind kind;
  const char *c;
} ir_op_info;

/* The row of op; op must be below IR_OP_COUNT. */
const ir_op_info *ir_op_info_of(ir_op op);

#endif
