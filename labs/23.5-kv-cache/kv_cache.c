/* kv_cache.c: appending, advancing, resetting and reading the populated
 * prefix (lab 23.5, student file). Every refusal leaves the cache as it
 * was: a full row, a bad layer or row, a key of the wrong shape. Chapter
 * 23.5, "The cache's shape and ownership". */
#include <string.h>
#include "kv.h"

/* Lab 23.5: helper functions for your code go here. */

int kv_append(kv_cache *c, int l, int b, const uopc_tensor *k, const uopc_tensor *v, uopc_error *err) {
  /* Lab 23.5: write kv_append here. See README.md in this folder. */
  (void)c; (void)l; (void)b; (void)k; (void)v;
  return UOPC_FAIL(err, UOPC_E_NOT_IMPLEMENTED, "lab 23.5: kv_append is not implemented yet");
}

int kv_advance(kv_cache *c, int b, uopc_error *err) {
  /* Lab 23.5: write kv_advance here. See README.md in this folder. */
  (void)c; (void)b;
  return UOPC_FAIL(err, UOPC_E_NOT_IMPLEMENTED, "lab 23.5: kv_advance is not implemented yet");
}

int kv_reset_rows(kv_cache *c, int b, uopc_error *err) {
  /* Lab 23.5: write kv_reset_rows here. See README.md in this folder. */
  (void)c; (void)b;
  return UOPC_FAIL(err, UOPC_E_NOT_IMPLEMENTED, "lab 23.5: kv_reset_rows is not implemented yet");
}

int kv_row_prefix(const kv_cache *c, int l, int b, int extra, uopc_tensor *k_out, uopc_tensor *v_out,
                  uopc_error *err) {
  /* Lab 23.5: write kv_row_prefix here. See README.md in this folder. */
  (void)c; (void)l; (void)b; (void)extra; (void)k_out; (void)v_out;
  return UOPC_FAIL(err, UOPC_E_NOT_IMPLEMENTED, "lab 23.5: kv_row_prefix is not implemented yet");
}
