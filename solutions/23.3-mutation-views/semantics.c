/* semantics.c: what each of the lab's programs must give, worked out by hand
 * before any code (lab 23.3). The values are NumPy's: a write through a view
 * is seen through every view of its storage, and `x[s] = e` evaluates e
 * completely before it stores. Chapter 23.3, "Semantics first". */
#include <string.h>
#include "semantics.h"

int semantics_count(semantics_case c) {
  if ((int)c < 0 || (int)c >= SEM_COUNT) return 0;   /* unknown: no values */
  return c == SEM_VIEW_SURVIVES ? 4 : c == SEM_PARAM_UPDATE ? 2 : 8;
}

int semantics_expect(semantics_case c, double *out, int n, uopc_error *err) {
// STUDENT 23.3 semantics_expect
  /* One row per case, in semantics_case order; unused slots are 0. */
  static const double table[SEM_COUNT][8] = {
      /* a[:4] += a[4:]: a[i] + a[i + 4] for i < 4; the upper half is only read. */
      [SEM_DISJOINT_HALVES] = {40, 60, 80, 100, 40, 50, 60, 70},
      /* a[1:] = a[:-1] + 1: the right side (1, 11, ..., 61) is computed before any store. */
      [SEM_SHIFT_RIGHT] = {0, 1, 11, 21, 31, 41, 51, 61},
      /* a[:-1] = a[1:] + 1: 11, 21, ..., 71 into the first seven; a[7] keeps 70. */
      [SEM_SHIFT_LEFT] = {11, 21, 31, 41, 51, 61, 71, 70},
      /* a[::-1] += a: element i becomes a[7 - i] + a[i] = 70, old values on both sides. */
      [SEM_REVERSED_SELF] = {70, 70, 70, 70, 70, 70, 70, 70},
      /* a[0::2] = a[1::2] * 2: the even slots get 20, 60, 100, 140; the odd keep theirs. */
      [SEM_INTERLEAVED] = {20, 10, 60, 30, 100, 50, 140, 70},
      /* y is a view: it sees the write to x, so y = v[::2]. */
      [SEM_VIEW_SURVIVES] = {100, 102, 104, 106},
      /* sum(x * w) = 1 + 2 + 3 + 4; then w = 0, 1, 2, 3 and the sum is 6: w is read at each call. */
      [SEM_PARAM_UPDATE] = {10, 6},
  };
  int count = semantics_count(c);
  if (count == 0) return UOPC_FAIL(err, UOPC_E_INVALID, "semantics case %d outside [0, %d)", (int)c, SEM_COUNT);
  if (!out || n < count)
    return UOPC_FAIL(err, UOPC_E_INVALID, "case %d yields %d values; the buffer holds %d", (int)c, count,
                     out ? n : 0);
  memcpy(out, table[c], (size_t)count * sizeof *out);
  return UOPC_OK;
// END STUDENT
}
