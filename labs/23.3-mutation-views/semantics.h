/* semantics.h: the lab's first task, written before any code (lab 23.3).
 * For each case below, on the fixed inputs of README's table, the values the
 * workbook's semantics give (NumPy's): the student writes them by hand, and
 * the tests compare them with an eager reference. Chapter 23.3, "Semantics
 * first". */
#ifndef SEMANTICS_H
#define SEMANTICS_H

#include "uopc/uopc.h"

typedef enum semantics_case {
  SEM_DISJOINT_HALVES,   /* a[:4] += a[4:]                       a = 0, 10, ..., 70 */
  SEM_SHIFT_RIGHT,       /* a[1:] = a[:-1] + 1                   a = 0, 10, ..., 70 */
  SEM_SHIFT_LEFT,        /* a[:-1] = a[1:] + 1                   a = 0, 10, ..., 70 */
  SEM_REVERSED_SELF,     /* a[::-1] += a                         a = 0, 10, ..., 70 */
  SEM_INTERLEAVED,       /* a[0::2] = a[1::2] * 2                a = 0, 10, ..., 70 */
  SEM_VIEW_SURVIVES,     /* y = x[::2]; x[...] = v; y (4 values) x = 0..7, v = 100..107 */
  SEM_PARAM_UPDATE,      /* f(w) = sum(x * w); f(w), then w -= 0.5 * g; f(w) (2 values)
                            x = 1, 1, 1, 1; w = 1, 2, 3, 4; g = 2, 2, 2, 2 */
  SEM_COUNT
} semantics_case;

/* The number of values case c yields (8 for the array cases). */
int semantics_count(semantics_case c);

/* Writes case c's values into out[0 .. semantics_count(c) - 1].
 * Errors: UOPC_E_INVALID (c unknown, n below the count). */
int semantics_expect(semantics_case c, double *out, int n, uopc_error *err);

#endif
