/* reuse.h: writing a let's value into an input's buffer, only with a proof
 * (lab 23.3). A let may reuse storage s only if no other view reaches s
 * (alias) and nothing reads s after it (liveness). Chapter 23.3, "Buffer
 * reuse needs two proofs". */
#ifndef REUSE_H
#define REUSE_H

#include "mprog.h"

#define REUSE_C_REUSED "buffers reused"
#define REUSE_C_REFUSED_ALIAS "reuse refused (alias)"
#define REUSE_C_REFUSED_LIVE "reuse refused (live)"
#define REUSE_REASON_MAX 200

typedef enum reuse_verdict { REUSE_OK, REUSE_REFUSED_ALIAS, REUSE_REFUSED_LIVE } reuse_verdict;

typedef struct reuse_decision {
  reuse_verdict verdict;
  char reason[REUSE_REASON_MAX];   /* which proof failed, naming the view or the statement */
} reuse_decision;

/* 1 when let statement k loads storage s and s has the let value's dtype
 * and shape: a buffer the value would fit. Given. */
int reuse_candidate(const mv_program *p, int k, int s);

/* 1 when load j of statement k reads its whole storage at the output's own
 * index: every path from the load to the value is elementwise with no
 * broadcast, so each element is read by the iteration that overwrites it,
 * before it does. Given. */
int reuse_reads_in_place(const mv_program *p, int k, int j);

/* Decides whether let statement k may write into candidate storage s:
 *   alias: REUSE_REFUSED_ALIAS when s is external (the caller's tensor:
 *     views of it outside the program are not known) or escaped (a view of
 *     it outlives the program), or when a load of s in statement k does not
 *     read in place (reuse_reads_in_place: s[1:], s.T, a broadcast);
 *   liveness: REUSE_REFUSED_LIVE when a statement after k loads any view of
 *     s or stores into one (s's value is still needed);
 *   otherwise REUSE_OK. Alias is checked first. The reason names the
 *   storage and the view or the statement. Two reasons are exact (tests
 *   compare them), for a storage named t: escaped, "a view of 't' outlives
 *   the program"; live, for the first statement j after k that uses s,
 *   "'t' is written again by statement j" when j stores into s, else
 *   "'t' is read again by statement j".
 *   Errors: UOPC_E_INVALID (k not a let, s not a storage). */
int reuse_decide(const mv_program *p, int k, int s, reuse_decision *out, uopc_error *err);

#endif
