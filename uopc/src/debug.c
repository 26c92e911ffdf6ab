/* debug.c: the UOPC_DEBUG knob. The level is read once, under pthread_once:
 * a process-wide setting by nature, and cheap to test on hot paths. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "uopc/debug.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int level;

static void read_level(void) {
  const char *s = getenv("UOPC_DEBUG");
  level = s ? atoi(s) : 0;
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
