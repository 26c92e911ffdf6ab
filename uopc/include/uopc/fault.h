/* fault.h: injected failures, for tests only (STYLE item 13).
 * In a build with -DUOPC_FAULT_INJECTION (the Makefile's "fault injection" section makes one), a test
 * can make the k-th compiler spawn, dlopen, cache file write or rename from
 * now on fail, or the k-th entry about to be loaded vanish, so every error
 * path of the runtime runs under test. In every
 * other build these functions do not exist and the checks compile away. */
#ifndef UOPC_FAULT_H
#define UOPC_FAULT_H

typedef enum uopc_fault_site {
  UOPC_FAULT_SPAWN,        /* starting the compiler */
  UOPC_FAULT_DLOPEN,       /* loading a shared object */
  UOPC_FAULT_CACHE_WRITE,  /* writing a file into the cache */
  UOPC_FAULT_RENAME,       /* publishing a cache entry, or moving one out to evict it */
  UOPC_FAULT_EVICT,        /* the entry is gone before dlopen, as another process's eviction does */
  UOPC_FAULT_SITES
} uopc_fault_site;

#ifdef UOPC_FAULT_INJECTION
/* k for every call at a site to fail, until it is disarmed: a peer that evicts
 * each entry before this process loads it, which one failure cannot model. */
#define UOPC_FAULT_ALWAYS (-1)
/* The k-th call at site from now (k >= 1) fails once, every call fails
 * (UOPC_FAULT_ALWAYS), or none (0: the site is disarmed). */
void uopc_fault_arm(uopc_fault_site site, int k);
/* 1 when this call at site must fail (and counts the call). */
int uopc_fault_hit(uopc_fault_site site);
#else
static inline int uopc_fault_hit(uopc_fault_site site) { (void)site; return 0; }
#endif

#endif
