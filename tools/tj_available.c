/* tj_available.c: `make doctor`'s line for tensorjit (section 23.7): whether
 * compiled execution can run here, for each back end, and why not. Exit
 * status 0 when the C back end is available, 1 when it is not. */
#include <stdio.h>
#include "tensorjit.h"

int main(void) {
  char reason[4096];
  int c = tj_is_available(TJ_BACKEND_C, reason, sizeof reason);
  printf("%-22s %s%s\n", "tensorjit C", c ? "" : "UNAVAILABLE: ", reason);
  int cuda = tj_is_available(TJ_BACKEND_CUDA, reason, sizeof reason);
  printf("%-22s %s%s\n", "tensorjit CUDA", cuda ? "" : "unavailable: ", reason);
  return c ? 0 : 1;
}
