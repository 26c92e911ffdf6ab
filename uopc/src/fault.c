/* fault.c: injected failures (uopc/fault.h). Only a test build compiles the
 * bodies; the countdowns are process-wide because the sites are deep inside
 * the runtime, where no test can pass a handle. */
#include "uopc/fault.h"

#ifdef UOPC_FAULT_INJECTION
static int countdown[UOPC_FAULT_SITES];

void uopc_fault_arm(uopc_fault_site site, int k) {
  if (site >= 0 && site < UOPC_FAULT_SITES) __atomic_store_n(&countdown[site], k, __ATOMIC_SEQ_CST);
}

int uopc_fault_hit(uopc_fault_site site) {
  if (site < 0 || site >= UOPC_FAULT_SITES) return 0;
  int left = __atomic_load_n(&countdown[site], __ATOMIC_SEQ_CST);
  if (left == UOPC_FAULT_ALWAYS) return 1;
  if (left <= 0) return 0;
  __atomic_store_n(&countdown[site], left - 1, __ATOMIC_SEQ_CST);
  return left == 1;
}
#else
/* ISO C wants at least one declaration in a translation unit. */
typedef int fault_injection_disabled;
#endif
