/* error.h: errors as values.
 * Every fallible uopc function returns a status (UOPC_OK is 0) and fills the
 * uopc_error passed last. Messages name the input, the value and the limit.
 * Introduced with the runtime (chapter 23, section 23.6). */
#ifndef UOPC_ERROR_H
#define UOPC_ERROR_H

enum {
  UOPC_OK = 0,
  UOPC_E_INVALID,         /* a bad argument: null, negative count, bad name */
  UOPC_E_BOUNDS,          /* a value outside its declared bounds */
  UOPC_E_DTYPE,           /* a dtype the operation does not accept */
  UOPC_E_LAYOUT,          /* strides or offsets the operation cannot express */
  UOPC_E_OVERFLOW,        /* integer arithmetic would overflow */
  UOPC_E_ALIAS,           /* buffers overlap in a way the operation forbids */
  UOPC_E_UNBOUND,         /* a symbolic dim has no runtime value */
  UOPC_E_NOMEM,           /* an allocation failed */
  UOPC_E_IO,              /* a file or directory operation failed */
  UOPC_E_UNSAFE_CACHE,    /* the cache directory could be written by others */
  UOPC_E_COMPILE,         /* the C or CUDA compiler rejected the source */
  UOPC_E_LOAD,            /* dlopen/dlsym or module load failed */
  UOPC_E_NO_CUDA,         /* no CUDA compiler, driver or GPU */
  UOPC_E_CUDA,            /* a CUDA driver call failed */
  UOPC_E_GUARD,           /* no variant's guards hold and none may be built */
  UOPC_E_LIMIT,           /* a configured limit (variants, capacity) is reached */
  UOPC_E_UNSUPPORTED,     /* an operation outside the supported subset */
  UOPC_E_NOT_IMPLEMENTED, /* a lab stub the student has not written yet */
  UOPC_E_COUNT
};

#define UOPC_ERROR_MESSAGE_MAX 2048

typedef struct uopc_error {
  int code;                              /* UOPC_OK or a UOPC_E_* value */
  char where[64];                        /* the function that failed */
  char message[UOPC_ERROR_MESSAGE_MAX];  /* what was wrong and the limit */
} uopc_error;

/* Fills err (when not NULL) and returns code, so that callers can write
 * `return uopc_fail(err, UOPC_E_BOUNDS, __func__, "n = %lld ...", n);`. */
int uopc_fail(uopc_error *err, int code, const char *where, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The same with the function's name filled in. */
#define UOPC_FAIL(err, code, ...) uopc_fail((err), (code), __func__, __VA_ARGS__)

/* Resets err (when not NULL) to UOPC_OK with an empty message. */
void uopc_error_clear(uopc_error *err);

/* The code's stable upper-case name, "UOPC_E_BOUNDS"; "UOPC_E_?" if unknown. */
const char *uopc_error_name(int code);

/* The exit status every lab driver uses for a failure with this code: 3 for a
 * stub (UOPC_E_NOT_IMPLEMENTED), 2 when the runtime refused or failed (cache,
 * compiler, loader, I/O, memory, CUDA), 1 for everything else (a check). */
enum { UOPC_EXIT_CHECK = 1, UOPC_EXIT_RUNTIME = 2, UOPC_EXIT_NOT_IMPLEMENTED = 3 };
int uopc_error_exit_status(int code);

#endif
