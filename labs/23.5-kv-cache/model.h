/* model.h: a small decoder-only transformer decoded with the KV cache
 * (given code, lab 23.5). f32; its weights are made in-process from a seed
 * (nothing is downloaded). Each decode step embeds one token per row, and
 * per layer: layer norm, q/k/v projections, the keys and values appended to
 * the cache, attention over the row's populated prefix (attn.h), the output
 * projection and an MLP, each with a residual; then the logits. Every part
 * runs as a program of the compiler core whose weights are inputs, never
 * constants in the source. Chapter 23.5. */
#ifndef MODEL_H
#define MODEL_H

#include "attn.h"
#include "kv.h"

typedef struct kv_model_config {
  int layers, d_model, heads, vocab, d_ff;
  int capacity_max;          /* the largest capacity a cache for this model may have */
  uint64_t seed;
} kv_model_config;

/* 2 layers, d_model 64, 4 heads of 16, vocabulary 256, d_ff 256. */
kv_model_config kv_model_default(int capacity_max);

typedef struct kv_model kv_model;

/* Makes the weights and builds the programs (qkv, attention, masked
 * attention, the post-attention block, the logits). The caller owns *out.
 * Errors: UOPC_E_INVALID (a size, heads not dividing d_model), those of
 * building and compiling. */
int kv_model_new(kv_model **out, const kv_model_config *cfg, uopc_error *err);
void kv_model_free(kv_model *m);
const kv_model_config *kv_model_config_of(const kv_model *m);

/* One decode step: rows whose token is >= 0 take token tokens[b] at their
 * next position and write logits[b * vocab ...]; rows with -1 are left
 * alone. masked: attend with the fixed-capacity masked baseline instead.
 * Every row is checked before anything is written: on any error the cache
 * is unchanged. Errors: UOPC_E_INVALID (a token outside the vocabulary, a
 * cache of another shape), UOPC_E_LIMIT (a full row: reset it first), those
 * of running. Counts KV_C_STEPS once per step. */
int kv_decode_step(kv_model *m, kv_cache *c, const int *tokens, float *logits, int masked, uopc_error *err);

/* The uncached reference, in plain C: the logits after tokens[0 .. n-1],
 * recomputing every position's keys and values from the tokens (work
 * growing with n squared). Errors: UOPC_E_INVALID, UOPC_E_NOMEM. */
int kv_reference_logits(const kv_model *m, const int *tokens, int n, float *logits, uopc_error *err);

#endif
