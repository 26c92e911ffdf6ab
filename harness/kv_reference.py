"""kv_reference.py: lab 23.5's decoder in NumPy, for harness/check_23_5.py and bench/report.py.

    m = KvModel(capacity_max=256)             # the C model's weights, from the same seed
    cache = m.cache(batch=3, capacity=64)
    logits = m.step(cache, row, token)        # one row, one token: append, attend, logits

The weights are made here, not read from the C model: the same xorshift64* as model.c's fill(),
in the same order (per layer wq, wk, wv, wo, w1, w2; then the embedding, the position table of
capacity_max rows, the output projection), scaled in double and rounded once to f32. So they
equal the C model's bit for bit, and a check that agrees with the C logits has checked the
weights too. The arithmetic is done in `dtype`: float64 for the check (a reference a step more
accurate than the f32 kernels), float32 for the benchmark (the same work as the C step).
"""
import math

import numpy as np

MASK64 = (1 << 64) - 1
MULTIPLIER = 0x2545F4914F6CDD1D


def xorshift_fill(count, state, scale):
  """(count f32 values in [-scale, scale), the state after them): model.c's fill()."""
  ints = [0] * count
  s = state
  for i in range(count):
    s ^= s >> 12
    s ^= (s << 25) & MASK64
    s ^= s >> 27
    ints[i] = ((s * MULTIPLIER) & MASK64) >> 11
  u = np.array(ints, dtype=np.float64) / 9007199254740992.0   # exact: every int is below 2^53
  return ((2 * u - 1) * scale).astype(np.float32), s


class KvCache:
  """K and V of every layer, (layers, batch, heads, capacity, head_dim), and a length per row."""

  def __init__(self, layers, batch, heads, capacity, head_dim, dtype):
    self.k = np.zeros((layers, batch, heads, capacity, head_dim), dtype)
    self.v = np.zeros_like(self.k)
    self.length = [0] * batch
    self.capacity = capacity

  def reset(self, row):
    rows = range(len(self.length)) if row < 0 else [row]
    for b in rows:
      self.k[:, b] = 0
      self.v[:, b] = 0
      self.length[b] = 0


class KvModel:
  """kv_model_default(capacity_max) of model.h, evaluated by NumPy in `dtype`."""

  def __init__(self, capacity_max, layers=2, d_model=64, heads=4, vocab=256, d_ff=256, seed=2311,
               dtype=np.float64):
    self.capacity_max, self.layers, self.d_model, self.heads = capacity_max, layers, d_model, heads
    self.vocab, self.d_ff, self.head_dim, self.dtype = vocab, d_ff, d_model // heads, dtype
    state = seed or 1

    def matrix(rows, cols):
      nonlocal state
      values, state = xorshift_fill(rows * cols, state, 1.0 / math.sqrt(rows))
      return values.reshape(rows, cols).astype(dtype)

    d = d_model
    self.w = []
    for _ in range(layers):
      wq, wk, wv, wo = (matrix(d, d) for _ in range(4))
      self.w.append({"wq": wq, "wk": wk, "wv": wv, "wo": wo, "w1": matrix(d, d_ff), "w2": matrix(d_ff, d)})
    self.embed, self.pos, self.out = matrix(vocab, d), matrix(capacity_max, d), matrix(d, vocab)
    self.scale = dtype(1.0 / math.sqrt(self.head_dim))
    self.eps = dtype(1e-5)

  def cache(self, batch, capacity):
    return KvCache(self.layers, batch, self.heads, capacity, self.head_dim, self.dtype)

  def layer_norm(self, x):
    xc = x - x.mean()
    return xc / np.sqrt((xc * xc).mean() + self.eps)

  def attend(self, q, k, v):
    """q (heads, hd), k and v (heads, L, hd): softmax(q k^T * scale) v per head, the maximum
    subtracted first, as the lab's attention does."""
    scores = (k @ q[:, :, None])[:, :, 0] * self.scale               # (heads, L)
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    w = e / e.sum(axis=1, keepdims=True)
    return (w[:, None, :] @ v)[:, 0, :]                               # (heads, hd)

  def step(self, cache, row, token):
    """Appends token at row's next position and returns its logits (vocab,)."""
    p = cache.length[row]
    if p >= cache.capacity:
      raise ValueError(f"row {row} is full ({p} of {cache.capacity} slots)")
    x = self.embed[token] + self.pos[p]
    shape = (self.heads, self.head_dim)
    for l, w in enumerate(self.w):
      h = self.layer_norm(x)
      q, k, v = ((h @ w[name]).reshape(shape) for name in ("wq", "wk", "wv"))
      cache.k[l, row, :, p], cache.v[l, row, :, p] = k, v
      o = self.attend(q, cache.k[l, row, :, :p + 1], cache.v[l, row, :, :p + 1])
      x = x + o.reshape(-1) @ w["wo"]
      x = x + np.maximum(self.layer_norm(x) @ w["w1"], 0) @ w["w2"]
    cache.length[row] = p + 1
    return self.layer_norm(x) @ self.out
