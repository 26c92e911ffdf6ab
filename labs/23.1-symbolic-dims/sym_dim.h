/* sym_dim.h: bounded symbolic dims and their runtime bindings (lab 23.1).
 * A dim is a constrained value: a name (its identity), inclusive bounds
 * lo <= N <= hi and an optional multiple_of. The bounds are the dim's
 * declaration; a scope may narrow them without making a new dim
 * (sym_scope_narrow in sym_fact.h). A binding, kept apart from the dims,
 * gives dims their values for one call. Chapter 23.1, "A dim is a
 * constrained value". */
#ifndef SYM_DIM_H
#define SYM_DIM_H

#include <stdint.h>
#include "uopc/uopc.h"

#define SYM_NAME_MAX 32      /* a dim's name, NUL included */
#define SYM_BINDING_MAX 64   /* dims one binding can hold: every dim of a program (UOPC_SIGNATURE_MAX) */

typedef struct sym_dim {
  char name[SYM_NAME_MAX];   /* a C identifier; it names the kernel parameter */
  int64_t lo, hi;            /* inclusive bounds, lo <= hi */
  int64_t multiple_of;       /* 1 when unconstrained */
  int loop;                  /* 1 for a loop variable: see sym_dim_same */
} sym_dim;

typedef struct sym_binding {
  int count;
  sym_dim dims[SYM_BINDING_MAX];    /* copies: a binding outlives nothing */
  int64_t values[SYM_BINDING_MAX];  /* values[k] is dims[k]'s value */
} sym_binding;

/* Fills *d. Errors: UOPC_E_INVALID when name is not a C identifier, is
 * reserved for generated code (i0.., r0.., t0..), lo > hi, multiple_of < 1,
 * or no multiple of multiple_of lies in [lo, hi]. */
int sym_dim_init(sym_dim *d, const char *name, int64_t lo, int64_t hi,
                 int64_t multiple_of, uopc_error *err);

/* UOPC_OK when value satisfies d's constraints. Errors: UOPC_E_BOUNDS with
 * "dim 'n' = 65 outside [1, 64]" or "dim 'n' = 20 is not a multiple of 16". */
int sym_dim_check(const sym_dim *d, int64_t value, uopc_error *err);

/* 1 when a and b are the same dim: the same name. A loop variable (loop = 1,
 * made by sym_scope_open_loop or the lowering) is a name and its bounds, since
 * loops one after the other reuse a name (i0) with other extents. */
int sym_dim_same(const sym_dim *a, const sym_dim *b);

/* An empty binding. */
void sym_binding_init(sym_binding *b);

/* Checks value against d (as sym_dim_check) and records it, replacing an
 * earlier value for the same name. On error b is unchanged.
 * Errors: UOPC_E_BOUNDS, UOPC_E_LIMIT (SYM_BINDING_MAX dims already bound). */
int sym_dim_bind(sym_binding *b, const sym_dim *d, int64_t value, uopc_error *err);

/* The value bound to the dim named like d, or -1 when none. Identity is the
 * name: the plan checks the value against its own copy of the bounds. */
int sym_binding_find(const sym_binding *b, const char *name);

/* *value = d's value. Errors: UOPC_E_UNBOUND ("dim 'n' is unbound"). */
int sym_binding_get(const sym_binding *b, const sym_dim *d, int64_t *value,
                    uopc_error *err);

#endif
