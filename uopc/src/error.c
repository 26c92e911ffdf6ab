/* error.c: filling and naming uopc_error values (section 23.6). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "uopc/error.h"

int uopc_fail(uopc_error *err, int code, const char *where, const char *fmt, ...) {
  if (!err) return code;
  err->code = code;
  snprintf(err->where, sizeof err->where, "%s", where ? where : "");
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->message, sizeof err->message, fmt, ap);
  va_end(ap);
  return code;
}

void uopc_error_clear(uopc_error *err) {
  if (!err) return;
  err->code = UOPC_OK;
  err->where[0] = '\0';
  err->message[0] = '\0';
}

static const char *const error_names[UOPC_E_COUNT] = {
  [UOPC_OK] = "UOPC_OK",
  [UOPC_E_INVALID] = "UOPC_E_INVALID",
  [UOPC_E_BOUNDS] = "UOPC_E_BOUNDS",
  [UOPC_E_DTYPE] = "UOPC_E_DTYPE",
  [UOPC_E_LAYOUT] = "UOPC_E_LAYOUT",
  [UOPC_E_OVERFLOW] = "UOPC_E_OVERFLOW",
  [UOPC_E_ALIAS] = "UOPC_E_ALIAS",
  [UOPC_E_UNBOUND] = "UOPC_E_UNBOUND",
  [UOPC_E_NOMEM] = "UOPC_E_NOMEM",
  [UOPC_E_IO] = "UOPC_E_IO",
  [UOPC_E_UNSAFE_CACHE] = "UOPC_E_UNSAFE_CACHE",
  [UOPC_E_COMPILE] = "UOPC_E_COMPILE",
  [UOPC_E_LOAD] = "UOPC_E_LOAD",
  [UOPC_E_NO_CUDA] = "UOPC_E_NO_CUDA",
  [UOPC_E_CUDA] = "UOPC_E_CUDA",
  [UOPC_E_GUARD] = "UOPC_E_GUARD",
  [UOPC_E_LIMIT] = "UOPC_E_LIMIT",
  [UOPC_E_UNSUPPORTED] = "UOPC_E_UNSUPPORTED",
  [UOPC_E_NOT_IMPLEMENTED] = "UOPC_E_NOT_IMPLEMENTED",
};

int uopc_error_exit_status(int code) {
  switch (code) {
  case UOPC_E_NOT_IMPLEMENTED: return UOPC_EXIT_NOT_IMPLEMENTED;
  case UOPC_E_COMPILE: case UOPC_E_LOAD: case UOPC_E_IO: case UOPC_E_UNSAFE_CACHE:
  case UOPC_E_NOMEM: case UOPC_E_NO_CUDA: case UOPC_E_CUDA:
    return UOPC_EXIT_RUNTIME;
  default: return UOPC_EXIT_CHECK;
  }
}

const char *uopc_error_name(int code) {
  if (code < 0 || code >= UOPC_E_COUNT) return "UOPC_E_?";
  return error_names[code];
}
