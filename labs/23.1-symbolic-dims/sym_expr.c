/* sym_expr.c: the expression arena, evaluation, intervals and text (lab 23.1).
 * Nodes are hash-consed: the arena keeps a hash table of every node, and a
 * constructor returns the existing node when an equal one exists. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sym_expr.h"

#define CHUNK_NODES 256

typedef struct chunk { struct chunk *next; sym_expr nodes[CHUNK_NODES]; } chunk;

struct sym_arena {
  chunk *chunks;
  int used;                  /* nodes used in the first chunk */
  const sym_expr **table;    /* open addressing, size a power of two */
  size_t table_size, count;
  uopc_error error;          /* the first construction error */
};

int sym_arena_new(sym_arena **out, uopc_error *err) {
  sym_arena *a = calloc(1, sizeof *a);
  if (a) a->table = calloc(a->table_size = 1024, sizeof *a->table);
  if (!a || !a->table) {
    free(a);
    return UOPC_FAIL(err, UOPC_E_NOMEM, "expression arena: out of memory");
  }
  a->used = CHUNK_NODES;
  *out = a;
  return UOPC_OK;
}

void sym_arena_free(sym_arena *a) {
  if (!a) return;
  for (chunk *c = a->chunks, *next; c; c = next) { next = c->next; free(c); }
  free(a->table);
  free(a);
}

const uopc_error *sym_arena_error(const sym_arena *a) { return &a->error; }

static void arena_fail(sym_arena *a, int code, const char *fmt, const char *what) {
  if (a->error.code == UOPC_OK) uopc_fail(&a->error, code, "sym_expr", fmt, what);
}

static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}

static uint64_t hash_of(const sym_expr *e) {
  uint64_t h = mix(0, (uint64_t)e->kind);
  h = mix(h, (uint64_t)e->value);
  for (const char *p = e->dim.name; *p; p++) h = mix(h, (unsigned char)*p);
  if (e->dim.loop)   /* a loop variable is its name and bounds (sym_dim_same) */
    h = mix(mix(mix(h, (uint64_t)e->dim.lo), (uint64_t)e->dim.hi), (uint64_t)e->dim.multiple_of);
  h = mix(h, e->a ? e->a->hash : 1);
  return mix(h, e->b ? e->b->hash : 2);
}

/* Operands are already unique, so pointer equality suffices for them. */
static int same_node(const sym_expr *x, const sym_expr *y) {
  return x->kind == y->kind && x->value == y->value && x->a == y->a && x->b == y->b &&
         (x->kind != SYM_DIM || sym_dim_same(&x->dim, &y->dim));
}

static int table_grow(sym_arena *a) {
  size_t size = a->table_size * 2;
  const sym_expr **t = calloc(size, sizeof *t);
  if (!t) return -1;
  for (size_t i = 0; i < a->table_size; i++) {
    const sym_expr *e = a->table[i];
    if (!e) continue;
    size_t j = e->hash & (size - 1);
    while (t[j]) j = (j + 1) & (size - 1);
    t[j] = e;
  }
  free(a->table);
  a->table = t;
  a->table_size = size;
  return 0;
}

static sym_expr *node_alloc(sym_arena *a) {
  if (a->used == CHUNK_NODES) {
    chunk *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->next = a->chunks;
    a->chunks = c;
    a->used = 0;
  }
  return &a->chunks->nodes[a->used++];
}

/* The unique node equal to *key: an existing one, or a new copy. */
static const sym_expr *intern(sym_arena *a, sym_expr *key) {
  key->hash = hash_of(key);
  size_t mask = a->table_size - 1, j = key->hash & mask;
  for (; a->table[j]; j = (j + 1) & mask)
    if (a->table[j]->hash == key->hash && same_node(a->table[j], key)) return a->table[j];
  if (2 * (a->count + 1) > a->table_size) {
    if (table_grow(a)) goto nomem;
    return intern(a, key);
  }
  sym_expr *e = node_alloc(a);
  if (!e) goto nomem;
  *e = *key;
  a->table[j] = e;
  a->count++;
  return e;
nomem:
  arena_fail(a, UOPC_E_NOMEM, "%s: out of memory", "expression arena");
  return NULL;
}

const sym_expr *sym_expr_const(sym_arena *a, int64_t value) {
  sym_expr key = {.kind = SYM_CONST, .value = value};
  return intern(a, &key);
}

/* A dim is its name within an arena (sym_dim_same), so a second declaration
 * with other bounds is refused rather than merged: a proof made from one
 * would not hold for the other. Narrowing goes through a scope instead. */
const sym_expr *sym_expr_dim(sym_arena *a, const sym_dim *d) {
  sym_expr key = {.kind = SYM_DIM, .dim = *d};
  const sym_expr *e = intern(a, &key);
  const sym_dim *was = e ? &e->dim : NULL;
  if (!was || (was->lo == d->lo && was->hi == d->hi && was->multiple_of == d->multiple_of)) return e;
  if (a->error.code == UOPC_OK)
    uopc_fail(&a->error, UOPC_E_INVALID, "sym_expr", "dim '%s' is declared as [%" PRId64 ", %" PRId64
              "] multiple of %" PRId64 " and as [%" PRId64 ", %" PRId64 "] multiple of %" PRId64
              " in one arena (narrow a bound with sym_scope_narrow)", d->name, was->lo, was->hi,
              was->multiple_of, d->lo, d->hi, d->multiple_of);
  return NULL;
}

static const sym_expr *binary(sym_arena *a, sym_kind kind, const sym_expr *x,
                              const sym_expr *y) {
  if (!x || !y) return NULL;
  sym_expr key = {.kind = kind, .a = x, .b = y};
  key.depth = 1 + (x->depth > y->depth ? x->depth : y->depth);
  return intern(a, &key);
}

/* Divisors are positive by construction, so // and % never divide by zero
 * and the interval rules stay simple (chapter 23.1, "Expressions"). The
 * compiler core divides by max(extent, 1) when it unravels a reshape. */
static const sym_expr *division(sym_arena *a, sym_kind kind, const sym_expr *x,
                                const sym_expr *y) {
  if (!x || !y) return NULL;
  sym_interval iv;
  uopc_error err;
  int ok = (y->kind == SYM_CONST && y->value >= 1) || (y->kind == SYM_DIM && y->dim.lo >= 1) ||
           (sym_expr_interval(y, &iv, &err) == UOPC_OK && iv.lo >= 1);
  if (!ok) {
    arena_fail(a, UOPC_E_INVALID, "divisor of %s must be provably >= 1 (a constant, a dim with lo >= 1"
               " or an expression whose interval starts at 1)", kind == SYM_MOD ? "%" : "//");
    return NULL;
  }
  return binary(a, kind, x, y);
}

const sym_expr *sym_expr_add(sym_arena *a, const sym_expr *x, const sym_expr *y) {
  return binary(a, SYM_ADD, x, y);
}
const sym_expr *sym_expr_sub(sym_arena *a, const sym_expr *x, const sym_expr *y) {
  return binary(a, SYM_SUB, x, y);
}
const sym_expr *sym_expr_mul(sym_arena *a, const sym_expr *x, const sym_expr *y) {
  return binary(a, SYM_MUL, x, y);
}
const sym_expr *sym_expr_floordiv(sym_arena *a, const sym_expr *x, const sym_expr *y) {
  return division(a, SYM_FLOORDIV, x, y);
}
const sym_expr *sym_expr_mod(sym_arena *a, const sym_expr *x, const sym_expr *y) {
  return division(a, SYM_MOD, x, y);
}
const sym_expr *sym_expr_min(sym_arena *a, const sym_expr *x, const sym_expr *y) {
  return binary(a, SYM_MIN, x, y);
}
const sym_expr *sym_expr_max(sym_arena *a, const sym_expr *x, const sym_expr *y) {
  return binary(a, SYM_MAX, x, y);
}

const sym_expr *sym_expr_copy(sym_arena *to, const sym_expr *e) {
  if (!e) return NULL;
  if (e->kind == SYM_CONST) return sym_expr_const(to, e->value);
  if (e->kind == SYM_DIM) return sym_expr_dim(to, &e->dim);
  /* A divisor was proved >= 1 from its structure and its dims' declared
   * bounds, which the copy keeps (to refuses a dim declared otherwise). */
  const sym_expr *x = sym_expr_copy(to, e->a), *y = sym_expr_copy(to, e->b);
  return binary(to, e->kind, x, y);
}

static int cmp_i64(int64_t x, int64_t y) { return (x > y) - (x < y); }

int sym_expr_compare(const sym_expr *x, const sym_expr *y) {
  if (x == y) return 0;
  if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
  if (x->kind == SYM_CONST) return cmp_i64(x->value, y->value);
  if (x->kind == SYM_DIM) {
    int c = strcmp(x->dim.name, y->dim.name);
    if (c) return c < 0 ? -1 : 1;
    if ((c = cmp_i64(x->dim.loop, y->dim.loop)) || !x->dim.loop) return c;   /* a dim is its name */
    if ((c = cmp_i64(x->dim.lo, y->dim.lo)) || (c = cmp_i64(x->dim.hi, y->dim.hi))) return c;
    return cmp_i64(x->dim.multiple_of, y->dim.multiple_of);
  }
  int c = sym_expr_compare(x->a, y->a);
  return c ? c : sym_expr_compare(x->b, y->b);
}

/* Lab 23.1: helper functions for your code go here. */

int sym_expr_eval(const sym_expr *e, const sym_binding *b, int64_t *out,
                  uopc_error *err) {
  /* Lab 23.1: write sym_expr_eval here. See README.md in this folder. */
  (void)e; (void)b; (void)out;
  return UOPC_FAIL(err, UOPC_E_NOT_IMPLEMENTED, "lab 23.1: sym_expr_eval is not implemented yet");
}

int sym_expr_interval(const sym_expr *e, sym_interval *out, uopc_error *err) {
  /* Lab 23.1: write sym_expr_interval here. See README.md in this folder. */
  (void)e; (void)out;
  return UOPC_FAIL(err, UOPC_E_NOT_IMPLEMENTED, "lab 23.1: sym_expr_interval is not implemented yet");
}

/* The position, among e's dims in leftmost order (*at counts them), of the
 * first one named name, or -1. Positions, not pointers: a hash-consed dim
 * that occurs twice is one node at two positions. */
static int first_dim(const sym_expr *e, const char *name, int *at) {
  if (e->kind == SYM_CONST) return -1;
  if (e->kind == SYM_DIM) return strcmp(e->dim.name, name) == 0 ? *at : ((*at)++, -1);
  int r = first_dim(e->a, name, at);
  return r >= 0 ? r : first_dim(e->b, name, at);
}

static void each_dim(const sym_expr *root, const sym_expr *e, int *at,
                     void (*fn)(const sym_dim *, void *), void *ctx) {
  if (e->kind == SYM_DIM) {
    int from = 0;
    if (first_dim(root, e->dim.name, &from) == (*at)++) fn(&e->dim, ctx);
  } else if (e->kind != SYM_CONST) {
    each_dim(root, e->a, at, fn, ctx);
    each_dim(root, e->b, at, fn, ctx);
  }
}

void sym_expr_each_dim(const sym_expr *e, void (*fn)(const sym_dim *, void *), void *ctx) {
  int at = 0;
  each_dim(e, e, &at, fn, ctx);
}

/* ---- Text: one printer for both notations. */

typedef struct printer { char *buf; size_t size, len; int c; } printer;

static void put(printer *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(printer *p, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  size_t room = p->len < p->size ? p->size - p->len : 0;
  int n = vsnprintf(p->buf + (p->len < p->size ? p->len : p->size - 1), room, fmt, ap);
  va_end(ap);
  if (n > 0) p->len += (size_t)n;
}

/* In C, // and % are calls (floordiv_i64), so they bind like atoms. */
static int precedence(const printer *p, const sym_expr *e) {
  switch (e->kind) {
  case SYM_ADD: case SYM_SUB: return 1;
  case SYM_MUL: return 2;
  case SYM_FLOORDIV: case SYM_MOD: return p->c ? 3 : 2;
  case SYM_CONST: return e->value < 0 ? 0 : 3;
  default: return 3;
  }
}

static void print_expr(printer *p, const sym_expr *e, int min_prec);

static void print_call(printer *p, const char *name, const sym_expr *e) {
  put(p, "%s(", name);
  print_expr(p, e->a, 0);
  put(p, ", ");
  print_expr(p, e->b, 0);
  put(p, ")");
}

/* Operands bind at min_prec or tighter; a right operand of - // % * needs one
 * level more, since those operators are not associative with their own kind. */
static void print_expr(printer *p, const sym_expr *e, int min_prec) {
  int prec = precedence(p, e), paren = prec < min_prec;
  if (paren) put(p, "(");
  switch (e->kind) {
  case SYM_CONST:
    if (p->c && (e->value > INT32_MAX || e->value < INT32_MIN))
      put(p, "INT64_C(%" PRId64 ")", e->value);
    else put(p, "%" PRId64, e->value);
    break;
  case SYM_DIM: put(p, "%s", e->dim.name); break;
  case SYM_ADD: case SYM_SUB: case SYM_MUL: {
    const char *op = e->kind == SYM_ADD ? " + " : e->kind == SYM_SUB ? " - " : "*";
    print_expr(p, e->a, prec);
    put(p, "%s", op);
    print_expr(p, e->b, prec + 1);
    break;
  }
  case SYM_FLOORDIV: case SYM_MOD:
    if (p->c) { print_call(p, e->kind == SYM_MOD ? "mod_i64" : "floordiv_i64", e); break; }
    print_expr(p, e->a, prec);
    put(p, "%s", e->kind == SYM_MOD ? " % " : "//");
    print_expr(p, e->b, prec + 1);
    break;
  case SYM_MIN: print_call(p, p->c ? "min_i64" : "min", e); break;
  case SYM_MAX: print_call(p, p->c ? "max_i64" : "max", e); break;
  }
  if (paren) put(p, ")");
}

static int print_to(const sym_expr *e, char *buf, size_t size, int c, uopc_error *err) {
  if (!buf || size == 0) return UOPC_FAIL(err, UOPC_E_INVALID, "no room to print into");
  printer p = {buf, size, 0, c};
  print_expr(&p, e, 0);
  if (p.len >= size)
    return UOPC_FAIL(err, UOPC_E_LIMIT, "expression needs %zu bytes of text, %zu given",
                     p.len + 1, size);
  return UOPC_OK;
}

int sym_expr_format(const sym_expr *e, char *buf, size_t size, uopc_error *err) {
  return print_to(e, buf, size, 0, err);
}

int sym_expr_to_c(const sym_expr *e, char *buf, size_t size, uopc_error *err) {
  return print_to(e, buf, size, 1, err);
}

int sym_expr_needs_helpers(const sym_expr *e) {
  if (e->kind == SYM_CONST || e->kind == SYM_DIM) return 0;
  if (e->kind == SYM_FLOORDIV || e->kind == SYM_MOD || e->kind == SYM_MIN ||
      e->kind == SYM_MAX) return 1;
  return sym_expr_needs_helpers(e->a) || sym_expr_needs_helpers(e->b);
}

/* Divisors are >= 1 in every expression (sym_expr.h), which these rely on. */
const char SYM_C_HELPERS[] =
    "/* Python's // and % for divisors >= 1 (C's / and % truncate toward zero). */\n"
    "static inline int64_t floordiv_i64(int64_t a, int64_t b) {\n"
    "  int64_t q = a / b;\n"
    "  return (a % b != 0 && a < 0) ? q - 1 : q;\n"
    "}\n"
    "static inline int64_t mod_i64(int64_t a, int64_t b) {\n"
    "  int64_t r = a % b;\n"
    "  return r < 0 ? r + b : r;\n"
    "}\n"
    "static inline int64_t min_i64(int64_t a, int64_t b) { return a < b ? a : b; }\n"
    "static inline int64_t max_i64(int64_t a, int64_t b) { return a > b ? a : b; }\n";
