/* model.c: the decoder, its programs and its uncached reference (given
 * code, lab 23.5). Chapter 23.5. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "model.h"

enum { W_Q, W_K, W_V, W_O, W_1, W_2, W_PER_LAYER };

struct kv_model {
  kv_model_config cfg;
  int head_dim;
  uopc_tensor *w;            /* [layers * W_PER_LAYER]: wq, wk, wv, wo (d, d), w1 (d, ff), w2 (ff, d) */
  uopc_tensor embed, pos, out;   /* (vocab, d), (capacity_max, d), (d, vocab) */
  ir_graph *g[5];
  exec *qkv, *attn, *masked, *post, *logits;
};

kv_model_config kv_model_default(int capacity_max) {
  return (kv_model_config){.layers = 2, .d_model = 64, .heads = 4, .vocab = 256, .d_ff = 256,
                           .capacity_max = capacity_max, .seed = 2311};
}

const kv_model_config *kv_model_config_of(const kv_model *m) { return &m->cfg; }

/* xorshift64*, scaled to [-scale, scale): deterministic weights, no download. */
static void fill(uopc_tensor *t, uint64_t *s, double scale) {
  float *p = uopc_tensor_data(t);
  for (int64_t i = 0; i < uopc_tensor_numel(t); i++) {
    *s ^= *s >> 12, *s ^= *s << 25, *s ^= *s >> 27;
    double u = (double)((*s * 0x2545f4914f6cdd1dull) >> 11) / 9007199254740992.0;
    p[i] = (float)((2 * u - 1) * scale);
  }
}

static int matrix(uopc_tensor *t, int64_t rows, int64_t cols, uint64_t *s, uopc_error *err) {
  int64_t shape[2] = {rows, cols};
  int rc = uopc_tensor_empty(t, UOPC_F32, 2, shape, err);
  if (!rc) fill(t, s, 1.0 / sqrt((double)rows));
  return rc;
}

/* ---- The graphs. */

static const sym_expr *K(ir_graph *g, int64_t v) { return sym_expr_const(ir_graph_arena(g), v); }

static const ir_node *input(ir_graph *g, const char *name, int rank, int64_t a, int64_t b) {
  const sym_expr *shape[2] = {K(g, a), K(g, b)};
  return ir_input(g, name, UOPC_F32, rank, shape);
}

/* Layer norm without gain and bias: (x - mean) / sqrt(var + 1e-5). */
static const ir_node *layer_norm(ir_graph *g, const ir_node *x) {
  const ir_node *xc = ir_binary(g, IR_SUB, x, ir_reduce(g, IR_MEAN, x, 1u, 0));
  const ir_node *var = ir_reduce(g, IR_MEAN, ir_binary(g, IR_MUL, xc, xc), 1u, 0);
  return ir_binary(g, IR_DIV, xc, ir_unary(g, IR_SQRT, ir_binary(g, IR_ADD, var, ir_const(g, 1e-5, UOPC_F32))));
}

/* x (n) @ w (n, m) -> (m) */
static const ir_node *matvec(ir_graph *g, const ir_node *x, const ir_node *w, int64_t n, int64_t m) {
  const sym_expr *row[2] = {K(g, 1), K(g, n)}, *out[1] = {K(g, m)};
  return ir_reshape(g, ir_matmul(g, ir_reshape(g, x, 2, row), w), 1, out);
}

static int plan(exec **e, const ir_graph *g, const ir_node *const *outs, int n, const char *entry, uopc_error *err) {
  int rc = exec_new_rule(e, g, outs, n, entry, KV_LOWER_FLAGS, &KV_FUSE_RULE, NULL, err);
  if (!rc) uopc_counter_add(KV_C_PLANS, 1);
  return rc;
}

static int built(ir_graph *g, const ir_node *const *outs, int n, const char *entry, exec **e, uopc_error *err) {
  for (int k = 0; k < n; k++)
    if (!outs[k]) { *err = *ir_graph_error(g); return err->code ? err->code : UOPC_E_NOMEM; }
  return plan(e, g, outs, n, entry, err);
}

static int build_qkv(kv_model *m, uopc_error *err) {
  int d = m->cfg.d_model, h = m->cfg.heads, hd = m->head_dim;
  int rc = ir_graph_new(&m->g[0], err);
  if (rc) return rc;
  ir_graph *g = m->g[0];
  const ir_node *x = input(g, "x", 1, d, 0), *n = layer_norm(g, x);
  const sym_expr *heads[2] = {K(g, h), K(g, hd)};
  const ir_node *outs[3];
  static const char *const names[3] = {"wq", "wk", "wv"};
  for (int k = 0; k < 3; k++) outs[k] = ir_reshape(g, matvec(g, n, input(g, names[k], 2, d, d), d, d), 2, heads);
  return built(g, outs, 3, "kv_qkv", &m->qkv, err);
}

static int build_post(kv_model *m, uopc_error *err) {
  int d = m->cfg.d_model, ff = m->cfg.d_ff;
  int rc = ir_graph_new(&m->g[1], err);
  if (rc) return rc;
  ir_graph *g = m->g[1];
  const ir_node *x = input(g, "x", 1, d, 0), *o = input(g, "o", 2, m->cfg.heads, m->head_dim);
  const sym_expr *flat[1] = {K(g, d)};
  const ir_node *x2 = ir_binary(g, IR_ADD, x, matvec(g, ir_reshape(g, o, 1, flat), input(g, "wo", 2, d, d), d, d));
  const ir_node *hid = ir_binary(g, IR_MAXIMUM, matvec(g, layer_norm(g, x2), input(g, "w1", 2, d, ff), d, ff),
                                 ir_const(g, 0, UOPC_F32));
  const ir_node *x3 = ir_binary(g, IR_ADD, x2, matvec(g, hid, input(g, "w2", 2, ff, d), ff, d));
  return built(g, &x3, 1, "kv_post", &m->post, err);
}

static int build_logits(kv_model *m, uopc_error *err) {
  int d = m->cfg.d_model, v = m->cfg.vocab;
  int rc = ir_graph_new(&m->g[2], err);
  if (rc) return rc;
  ir_graph *g = m->g[2];
  const ir_node *x = input(g, "x", 1, d, 0), *w = input(g, "wout", 2, d, v);   /* inputs in call order */
  const ir_node *y = matvec(g, layer_norm(g, x), w, d, v);
  return built(g, &y, 1, "kv_logits", &m->logits, err);
}

static int build_attention(kv_model *m, uopc_error *err) {
  attn_dims dims;
  sym_dim cap;
  const ir_node *o = NULL;
  int rc = attn_dims_init(&dims, m->cfg.heads, m->head_dim, m->cfg.capacity_max, err);
  if (!rc) rc = ir_graph_new(&m->g[3], err);
  if (!rc) rc = attn_build(m->g[3], &dims, &o, err);
  if (!rc) rc = plan(&m->attn, m->g[3], &o, 1, "kv_attention", err);
  if (!rc) rc = sym_dim_init(&cap, "capacity", 1, m->cfg.capacity_max, 1, err);
  if (!rc) rc = ir_graph_new(&m->g[4], err);
  if (!rc) rc = attn_build_masked(m->g[4], &dims, &cap, &o, err);
  if (!rc) rc = plan(&m->masked, m->g[4], &o, 1, "kv_attention_masked", err);
  return rc;
}

void kv_model_free(kv_model *m) {
  if (!m) return;
  exec_free(m->qkv), exec_free(m->attn), exec_free(m->masked), exec_free(m->post), exec_free(m->logits);
  for (int k = 0; k < 5; k++) ir_graph_free(m->g[k]);
  if (m->w)
    for (int k = 0; k < m->cfg.layers * W_PER_LAYER; k++) uopc_tensor_release(&m->w[k]);
  free(m->w);
  uopc_tensor_release(&m->embed), uopc_tensor_release(&m->pos), uopc_tensor_release(&m->out);
  free(m);
}

int kv_model_new(kv_model **out, const kv_model_config *cfg, uopc_error *err) {
  if (!out || !cfg || cfg->layers < 1 || cfg->d_model < 1 || cfg->heads < 1 || cfg->vocab < 1 || cfg->d_ff < 1 ||
      cfg->capacity_max < 1 || cfg->d_model % cfg->heads)
    return UOPC_FAIL(err, UOPC_E_INVALID, "kv_model: sizes must be >= 1 and heads must divide d_model");
  kv_model *m = calloc(1, sizeof *m);
  if (!m) return UOPC_FAIL(err, UOPC_E_NOMEM, "kv_model: out of memory");
  m->cfg = *cfg;
  m->head_dim = cfg->d_model / cfg->heads;
  uint64_t s = cfg->seed ? cfg->seed : 1;
  int d = cfg->d_model, rc = (m->w = calloc((size_t)cfg->layers * W_PER_LAYER, sizeof *m->w)) ? UOPC_OK
                                 : UOPC_FAIL(err, UOPC_E_NOMEM, "kv_model: out of memory");
  for (int l = 0; l < cfg->layers && !rc; l++) {
    uopc_tensor *w = &m->w[l * W_PER_LAYER];
    for (int k = W_Q; k <= W_O && !rc; k++) rc = matrix(&w[k], d, d, &s, err);
    if (!rc) rc = matrix(&w[W_1], d, cfg->d_ff, &s, err);
    if (!rc) rc = matrix(&w[W_2], cfg->d_ff, d, &s, err);
  }
  if (!rc) rc = matrix(&m->embed, cfg->vocab, d, &s, err);
  if (!rc) rc = matrix(&m->pos, cfg->capacity_max, d, &s, err);
  if (!rc) rc = matrix(&m->out, d, cfg->vocab, &s, err);
  if (!rc) rc = build_qkv(m, err);
  if (!rc) rc = build_post(m, err);
  if (!rc) rc = build_logits(m, err);
  if (!rc) rc = build_attention(m, err);
  if (rc) { kv_model_free(m); return rc; }
  *out = m;
  return UOPC_OK;
}

/* ---- A decode step. */

static int run(exec *e, uopc_tensor **outs, int n_out, const uopc_tensor **ins, int n_in, uopc_error *err) {
  return exec_run(e, outs, n_out, ins, n_in, err);
}

static int step_row(kv_model *m, kv_cache *c, int b, int token, float *logits, int masked, uopc_error *err) {
  int d = m->cfg.d_model, p = (int)c->length[b];
  int64_t dd = d, hs[2] = {m->cfg.heads, m->head_dim}, vocab = m->cfg.vocab;
  uopc_tensor x, q, k, v, o, x2, lg, bias = {0};
  int rc = uopc_tensor_empty(&x, UOPC_F32, 1, &dd, err);
  if (rc) return rc;
  const float *e = (const float *)uopc_tensor_data(&m->embed) + (int64_t)token * d;
  const float *ps = (const float *)uopc_tensor_data(&m->pos) + (int64_t)p * d;
  float *xp = uopc_tensor_data(&x);
  for (int i = 0; i < d; i++) xp[i] = e[i] + ps[i];
  if (masked) {    /* 0 for slots 0 .. p, -inf beyond: the baseline reads every slot */
    int64_t cap = c->capacity;
    rc = uopc_tensor_empty(&bias, UOPC_F32, 1, &cap, err);
    float *bp = rc ? NULL : uopc_tensor_data(&bias);
    for (int64_t j = 0; bp && j < cap; j++) bp[j] = j <= p ? 0.0f : -INFINITY;
  }
  for (int l = 0; l < m->cfg.layers && !rc; l++) {
    uopc_tensor *w = &m->w[l * W_PER_LAYER];
    rc = uopc_tensor_empty(&q, UOPC_F32, 2, hs, err);
    if (!rc) rc = uopc_tensor_empty(&k, UOPC_F32, 2, hs, err);
    if (!rc) rc = uopc_tensor_empty(&v, UOPC_F32, 2, hs, err);
    if (!rc) rc = uopc_tensor_empty(&o, UOPC_F32, 2, hs, err);
    if (!rc) rc = uopc_tensor_empty(&x2, UOPC_F32, 1, &dd, err);
    uopc_tensor *qkv_out[3] = {&q, &k, &v};
    const uopc_tensor *qkv_in[4] = {&x, &w[W_Q], &w[W_K], &w[W_V]};
    if (!rc) rc = run(m->qkv, qkv_out, 3, qkv_in, 4, err);
    if (!rc) rc = kv_append(c, l, b, &k, &v, err);
    uopc_tensor kp = {0}, vp = {0};
    if (!rc && !masked) rc = kv_row_prefix(c, l, b, 1, &kp, &vp, err);
    if (!rc && masked) {
      rc = uopc_tensor_select(&kp, &c->k[l], 0, b, err);
      if (!rc) rc = uopc_tensor_select(&vp, &c->v[l], 0, b, err);
    }
    uopc_tensor *attn_out[1] = {&o};
    const uopc_tensor *attn_in[4] = {&q, &kp, &vp, &bias};
    if (!rc) rc = run(masked ? m->masked : m->attn, attn_out, 1, attn_in, masked ? 4 : 3, err);
    uopc_tensor *post_out[1] = {&x2};
    const uopc_tensor *post_in[5] = {&x, &o, &w[W_O], &w[W_1], &w[W_2]};
    if (!rc) rc = run(m->post, post_out, 1, post_in, 5, err);
    if (!rc) {
      uopc_tensor_release(&x);
      uopc_tensor_retain(&x, &x2);
    }
    uopc_tensor_release(&kp), uopc_tensor_release(&vp);
    uopc_tensor_release(&q), uopc_tensor_release(&k), uopc_tensor_release(&v), uopc_tensor_release(&o),
        uopc_tensor_release(&x2);
  }
  if (!rc) rc = uopc_tensor_empty(&lg, UOPC_F32, 1, &vocab, err);
  uopc_tensor *lg_out[1] = {&lg};
  const uopc_tensor *lg_in[2] = {&x, &m->out};
  if (!rc) {
    rc = run(m->logits, lg_out, 1, lg_in, 2, err);
    if (!rc) memcpy(logits, uopc_tensor_data(&lg), (size_t)vocab * sizeof *logits);
    uopc_tensor_release(&lg);
  }
  uopc_tensor_release(&x), uopc_tensor_release(&bias);
  return rc;
}

int kv_decode_step(kv_model *m, kv_cache *c, const int *tokens, float *logits, int masked, uopc_error *err) {
  if (!m || !c || !tokens || !logits) return UOPC_FAIL(err, UOPC_E_INVALID, "kv_decode_step: NULL argument");
  if (c->layers != m->cfg.layers || c->heads != m->cfg.heads || c->head_dim != m->head_dim ||
      c->capacity > m->cfg.capacity_max)
    return UOPC_FAIL(err, UOPC_E_INVALID, "kv_decode_step: a cache of %d layers, %d heads of %d, capacity %d; the"
                     " model needs %d layers, %d heads of %d, capacity at most %d", c->layers, c->heads, c->head_dim,
                     c->capacity, m->cfg.layers, m->cfg.heads, m->head_dim, m->cfg.capacity_max);
  for (int b = 0; b < c->batch; b++) {    /* every row checked before anything is written */
    if (tokens[b] < -1 || tokens[b] >= m->cfg.vocab)
      return UOPC_FAIL(err, UOPC_E_INVALID, "kv_decode_step: row %d: token %d outside the vocabulary [0, %d)", b,
                       tokens[b], m->cfg.vocab);
    if (tokens[b] >= 0 && c->length[b] >= c->capacity)
      return UOPC_FAIL(err, UOPC_E_LIMIT, "kv_decode_step: row %d is full (%lld of %d slots): reset it first", b,
                       (long long)c->length[b], c->capacity);
  }
  for (int b = 0; b < c->batch; b++) {
    if (tokens[b] < 0) continue;
    int rc = step_row(m, c, b, tokens[b], logits + (int64_t)b * m->cfg.vocab, masked, err);
    if (!rc) rc = kv_advance(c, b, err);
    if (rc) return rc;
  }
  uopc_counter_add(KV_C_STEPS, 1);
  return UOPC_OK;
}

/* ---- The uncached reference: plain loops, every position recomputed. */

static void ref_layer_norm(const float *x, float *y, int d) {
  float mean = 0, var = 0;
  for (int i = 0; i < d; i++) mean += x[i];
  mean /= (float)d;
  for (int i = 0; i < d; i++) var += (x[i] - mean) * (x[i] - mean);
  var /= (float)d;
  for (int i = 0; i < d; i++) y[i] = (x[i] - mean) / sqrtf(var + 1e-5f);
}

static void ref_matvec(const float *x, const uopc_tensor *w, float *y, int n, int m) {
  const float *wp = uopc_tensor_data(w);
  for (int j = 0; j < m; j++) {
    float s = 0;
    for (int i = 0; i < n; i++) s += x[i] * wp[(int64_t)i * m + j];
    y[j] = s;
  }
}

int kv_reference_logits(const kv_model *m, const int *tokens, int n, float *logits, uopc_error *err) {
  const kv_model_config *cf = &m->cfg;
  int d = cf->d_model, hd = m->head_dim, H = cf->heads, ff = cf->d_ff;
  if (!tokens || !logits || n < 1 || n > cf->capacity_max)
    return UOPC_FAIL(err, UOPC_E_INVALID, "kv_reference_logits: 1 to %d tokens, not %d", cf->capacity_max, n);
  for (int i = 0; i < n; i++)
    if (tokens[i] < 0 || tokens[i] >= cf->vocab)
      return UOPC_FAIL(err, UOPC_E_INVALID, "kv_reference_logits: token %d outside the vocabulary", tokens[i]);
  size_t kv = (size_t)cf->layers * (size_t)n * (size_t)d;
  float *ks = malloc(kv * sizeof *ks), *vs = malloc(kv * sizeof *vs), *x = malloc((size_t)(4 * d + ff + n) * sizeof *x);
  if (!ks || !vs || !x) { free(ks), free(vs), free(x); return UOPC_FAIL(err, UOPC_E_NOMEM, "kv_reference: out of memory"); }
  float *h = x + d, *q = h + d, *o = q + d, *hid = o + d, *w = hid + ff;
  for (int i = 0; i < n; i++) {          /* position i sees positions 0 .. i */
    const float *e = (const float *)uopc_tensor_data(&m->embed) + (int64_t)tokens[i] * d;
    const float *ps = (const float *)uopc_tensor_data(&m->pos) + (int64_t)i * d;
    for (int a = 0; a < d; a++) x[a] = e[a] + ps[a];
    for (int l = 0; l < cf->layers; l++) {
      const uopc_tensor *W = &m->w[l * W_PER_LAYER];
      float *kl = ks + ((size_t)l * n + (size_t)i) * d, *vl = vs + ((size_t)l * n + (size_t)i) * d;
      ref_layer_norm(x, h, d);
      ref_matvec(h, &W[W_Q], q, d, d), ref_matvec(h, &W[W_K], kl, d, d), ref_matvec(h, &W[W_V], vl, d, d);
      for (int hh = 0; hh < H; hh++) {
        float mx = -INFINITY, sum = 0;
        for (int j = 0; j <= i; j++) {
          float s = 0;
          for (int a = 0; a < hd; a++) s += q[hh * hd + a] * ks[((size_t)l * n + (size_t)j) * d + (size_t)(hh * hd + a)];
          w[j] = s / sqrtf((float)hd);
          mx = fmaxf(mx, w[j]);
        }
        for (int j = 0; j <= i; j++) sum += (w[j] = expf(w[j] - mx));
        for (int a = 0; a < hd; a++) {
          float acc = 0;
          for (int j = 0; j <= i; j++) acc += w[j] / sum * vs[((size_t)l * n + (size_t)j) * d + (size_t)(hh * hd + a)];
          o[hh * hd + a] = acc;
        }
      }
      ref_matvec(o, &W[W_O], h, d, d);
      for (int a = 0; a < d; a++) x[a] += h[a];
      ref_layer_norm(x, h, d);
      ref_matvec(h, &W[W_1], hid, d, ff);
      for (int a = 0; a < ff; a++) hid[a] = fmaxf(hid[a], 0.0f);
      ref_matvec(hid, &W[W_2], h, ff, d);
      for (int a = 0; a < d; a++) x[a] += h[a];
    }
  }
  ref_layer_norm(x, h, d);
  ref_matvec(h, &m->out, logits, d, cf->vocab);
  free(ks), free(vs), free(x);
  return UOPC_OK;
}
