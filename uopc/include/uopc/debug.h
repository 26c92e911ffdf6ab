/* debug.h: the one debug knob, UOPC_DEBUG (read once per process).
 *   1  the counters, printed to stderr at exit
 *   2  compile and cache events (hits, misses, compiler runs and their time),
 *      and at exit the statistics of each disk cache the process used
 *   3  guard decisions (labs that dispatch report each choice)
 *   4  the generated source of every program compiled
 * Output goes to stderr, prefixed "uopc: "; at 0 (unset) nothing is printed
 * but uopc_warn's warnings, which is the only way library code ever prints.
 * Introduced in 23.6. */
#ifndef UOPC_DEBUG_H
#define UOPC_DEBUG_H

/* The level from UOPC_DEBUG: 0 when unset or not a number (a value that is
 * not one, "banana", is warned about once). */
int uopc_debug_level(void);

/* Prints one line at the given level or above. */
void uopc_debug(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prints "uopc: warning: <text>" on stderr whatever the level: a setting from
 * the environment that the runtime cannot use and goes on without (the
 * message names the variable and its value). Never fails. */
void uopc_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
