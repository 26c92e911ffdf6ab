/* driver.h: what every lab driver (labs/23.N/main.c) does first and when it
 * stops, written once: --help, line-buffered output, and the one line that
 * says why it stopped. Header-only and for drivers alone (the runtime library
 * never prints). A driver is usually read through a pipe (make lab-23.N, the
 * grader), where stdout is fully buffered and stderr is not: stdout goes line
 * by line, and the failure line flushes it first, so the banner and every
 * line before the failure come before it. Introduced with the drivers. */
#ifndef UOPC_DRIVER_H
#define UOPC_DRIVER_H

#include <stdio.h>
#include <string.h>
#include "uopc/error.h"

enum { UOPC_DRIVER_RUN = -1, UOPC_DRIVER_EXIT_USAGE = 64 };   /* 64: EX_USAGE (sysexits.h) */

static inline void uopc_driver_usage(FILE *to, const char *lab, const char *about) {
  fprintf(to, "usage: lab-%s [--help]\n%s\n"
          "Run it as `make lab-%s` (then the grader's visible tests of the lab); `IMPL=solutions\n"
          "make lab-%s` runs the reference.\n"
          "Exit status: 0 every check passed, 1 a check failed, 2 the runtime refused (compiler,\n"
          "cache, I/O), 3 a student function is not implemented yet, %d a bad argument.\n"
          "Environment: UOPC_CACHE_DIR (the disk cache), UOPC_CC (the C compiler), UOPC_DEBUG=1..4\n"
          "(counters, compile and cache events, guard decisions, generated source, on stderr),\n"
          "UOPC_COUNTERS_JSON=path (the counters as JSON at exit).\n",
          lab, about, lab, lab, UOPC_DRIVER_EXIT_USAGE);
}

/* Call first in main. Returns UOPC_DRIVER_RUN when the driver should run;
 * otherwise the status main returns: 0 after --help or -h (the usage on
 * stdout), UOPC_DRIVER_EXIT_USAGE after any other argument (the usage on
 * stderr). about: what the driver does, a line or a few. */
static inline int uopc_driver_start(int argc, char **argv, const char *lab, const char *about) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc < 2) return UOPC_DRIVER_RUN;
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    uopc_driver_usage(stdout, lab, about);
    return 0;
  }
  fprintf(stderr, "lab-%s: unknown argument '%s'\n", lab, argv[1]);
  uopc_driver_usage(stderr, lab, about);
  return UOPC_DRIVER_EXIT_USAGE;
}

/* The line that says why the driver stops, into buf. A stub's message is
 * shown from its "lab 23.K: ..." on ("lab 23.1: sym_expr_interval is not
 * implemented yet", whichever lab's stub it is, whatever wrapped it), so it
 * names the lab once; any other error as "lab 23.N: UOPC_E_X in where:
 * message". */
static inline void uopc_driver_failure_text(const char *lab, const uopc_error *err, char *buf, size_t size) {
  const char *stub = err->code == UOPC_E_NOT_IMPLEMENTED ? strstr(err->message, "lab 23.") : NULL;
  if (stub) snprintf(buf, size, "%s", stub);
  else snprintf(buf, size, "lab %s: %s in %s: %s", lab, uopc_error_name(err->code), err->where, err->message);
}

/* Prints that line on stderr, after what stdout holds, and returns the exit
 * status for err (uopc_error_exit_status). */
static inline int uopc_driver_fail(const char *lab, const uopc_error *err) {
  char line[UOPC_ERROR_MESSAGE_MAX + 128];
  uopc_driver_failure_text(lab, err, line, sizeof line);
  fflush(stdout);
  fprintf(stderr, "%s\n", line);
  return uopc_error_exit_status(err->code);
}

#endif
