/* spec_key.h: the key of one specialization (lab 23.2).
 * Two calls may share compiled code only when every fact the code depends on
 * is the same: what it computes (a canonical hash of the operation's graph),
 * the target, the dtypes, the layout class, the numerical policy, the
 * compiler and its flags, and the specialization constraints. A runtime value
 * (a length) is a part only when the code specializes on it. The dispatcher
 * compares these keys in memory to decide which variant a call needs; the
 * text also goes into the generated banner, so uopc's disk key (a SHA-256 of
 * the source, compiler identity and version, flags and target) covers it.
 * Chapter 23.2, "The cache key, part by part". */
#ifndef SPEC_KEY_H
#define SPEC_KEY_H

#include <stdint.h>
#include "kernel.h"

#define SPEC_KEY_PART_MAX 96
#define SPEC_KEY_TEXT_MAX 768

typedef struct spec_key_parts {
  char op[SPEC_KEY_PART_MAX];           /* "square_plus_one" */
  uint64_t graph_hash;                  /* spec_key_graph_hash of the op */
  char target[SPEC_KEY_PART_MAX];       /* "x86_64" */
  char dtypes[SPEC_KEY_PART_MAX];       /* "out:f32 x:f32" */
  char layout[SPEC_KEY_PART_MAX];       /* "contiguous aligned64 disjoint" or "strided" */
  char numerics[SPEC_KEY_PART_MAX];     /* "ieee fp-contract=off" */
  char compiler[SPEC_KEY_PART_MAX];     /* "gcc -O3" */
  char constraints[SPEC_KEY_PART_MAX];  /* "n%16==0", "n==48", "none" */
} spec_key_parts;

typedef struct spec_key {
  char text[SPEC_KEY_TEXT_MAX];   /* "op=... graph=... target=... ..." */
  uint64_t hash;                  /* FNV-1a 64 of text */
} spec_key;

/* A canonical hash of what out computes in g: op kinds, constants (by their
 * bits), input names and dtypes and the structure, from out down; two graphs
 * that build the same expression in a different node order hash equally.
 * Shapes are left out: they are the constraints' business. */
uint64_t spec_key_graph_hash(const kernel_graph *g, const kernel_node *out);

/* The machine the generated code is compiled for ("x86_64"), from uname. */
void spec_key_target(char *buf, size_t size);

/* The student's part: *key = the canonical text of parts, in the fixed order
 * op, graph, target, dtypes, layout, numerics, compiler, constraints, as
 * "name=value" separated by single spaces (the graph hash as 16 hex digits),
 * and its FNV-1a hash. Errors: UOPC_E_INVALID when a part is empty ("cache
 * key part 'layout' is empty": a key without it would let two calls that
 * need different code share one variant), UOPC_E_LIMIT (text too long). */
int spec_key_compose(const spec_key_parts *parts, spec_key *key, uopc_error *err);

/* 1 when the keys are equal (hash and text). */
int spec_key_equal(const spec_key *a, const spec_key *b);

/* FNV-1a 64 of n bytes, continuing from h (start with SPEC_KEY_FNV_BASIS). */
#define SPEC_KEY_FNV_BASIS 0xcbf29ce484222325ull
uint64_t spec_key_fnv(uint64_t h, const void *data, size_t n);

#endif
