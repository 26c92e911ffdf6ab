/* debug.h: the one debug knob, UOPC_DEBUG (read once per process).
 *   1  the counters, printed to stderr at exit
 *   2  compile and cache events (hits, misses, compiler runs and their time),
 *      and at exit the statistics of each disk cache the process used
 *   3  guard decisions (labs that dispatch report each choice)
 *   4  the generated source of every program compiled
 * Output goes to stderr, prefixed "uopc: "; at 0 (unset) nothing is printed,
 * which is the only way library code ever prints. Introduced in 23.6. */
#ifndef UOPC_DEBUG_H
#define UOPC_DEBUG_H

/* The level from UOPC_DEBUG: 0 when unset or not a number. */
int uopc_debug_level(void);

/* Prints one line at the given level or above. */
void uopc_debug(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
