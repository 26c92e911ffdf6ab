/* debug.c: the UOPC_DEBUG knob. The level is read once, under pthread_once:
 * a process-wide setting by nature, and cheap to test on hot paths. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "uopc/debug.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int level;

/* A value that is not a level (UOPC_DEBUG=banana, 2x, -1) is read as 0 and
 * warned about, once: a typo must neither pass for "off" in silence nor stop
 * the program. */
static void read_level(void) {
  const char *s = getenv("UOPC_DEBUG");
  char *end;
  if (!s || !*s) return;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < 0 || v > INT_MAX) {
    uopc_warn("UOPC_DEBUG='%s' is not a level (0 to 4); debug output stays off", s);
    return;
  }
  level = (int)v;
}

void uopc_warn(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("uopc: warning: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

int uopc_debug_level(void) {
  pthread_once(&once, read_level);
  return level;
}

void uopc_debug(int at, const char *fmt, ...) {
  if (uopc_debug_level() < at) return;
  va_list ap;
  va_start(ap, fmt);
  fputs("uopc: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}
