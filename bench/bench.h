/* bench.h: the clocks and the median every benchmark uses (bench/). Times
 * are nanoseconds as doubles; a figure is the median of repeated timings
 * (the machine is shared, so the mean would carry its neighbours' noise). */
#ifndef BENCH_H
#define BENCH_H

#include <stdlib.h>
#include <time.h>

static inline double bench_clock_ns(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* The wall clock (monotonic). */
static inline double bench_now_ns(void) { return bench_clock_ns(CLOCK_MONOTONIC); }

/* The process's CPU time: what it ran, not what its neighbours did. */
static inline double bench_cpu_ns(void) { return bench_clock_ns(CLOCK_PROCESS_CPUTIME_ID); }

static inline int bench_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The median of v[0..n-1]; sorts v. */
static inline double bench_median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
  return v[n / 2];
}

#endif
