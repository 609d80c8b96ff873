"""Sliding-window softmax attention: each token attends to itself and the window - 1 before it.

Its state is the window's KV cache, 2 x min(T, window) x d_model floats a layer: recall is exact
inside the window and nothing outside it (Mistral; Based pairs a small window with linear attention).
Decoding keeps a ring buffer of the last ``window`` keys and values.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from pydantic import Field
from torch import nn

from . import MODELS
from .backbone import AttentionView, Mixer, MixerOptions


class SWAOptions(MixerOptions):
    window: int = Field(64, ge=1, description="tokens each query sees, itself included")


def band_mask(T: int, window: int, device=None) -> torch.Tensor:
    """``[T, T]`` True where query t may attend to key j: t - window < j <= t."""
    i = torch.arange(T, device=device)
    return (i[None, :] <= i[:, None]) & (i[None, :] > i[:, None] - window)


def sliding_window_attention(q, k, v, window: int):
    """Causal attention of ``[B, H, T, d]`` inputs within ``window`` in O(T window): queries in blocks
    of ``window`` tokens, each attending to its own block and the one before, under a band mask."""
    B, H, T, d = q.shape
    W = window
    if T <= W:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    pad = (-T) % W  # padded keys lie after every real query: the mask hides them
    if pad:
        q, k, v = (F.pad(x, (0, 0, 0, pad)) for x in (q, k, v))
    n = (T + pad) // W
    qb, kb, vb = (x.reshape(B, H, n, W, d) for x in (q, k, v))               # [B, H, T', d] -> [B, H, n, W, d]
    shift = lambda x: torch.cat([torch.zeros_like(x[:, :, :1]), x[:, :, :-1]], 2)  # noqa: E731 - the block before
    keys, values = torch.cat([shift(kb), kb], 3), torch.cat([shift(vb), vb], 3)  # [B, H, n, 2W, d]
    i, j = torch.arange(W, device=q.device)[:, None], torch.arange(2 * W, device=q.device)[None, :]
    mask = (j > i) & (j <= i + W)                                            # key j - W sits at i - W < . <= i
    first = mask & (j >= W)                                                  # block 0 has no block before it
    mask = torch.stack([first] + [mask] * (n - 1))                           # [n, W, 2W]
    o = F.scaled_dot_product_attention(qb, keys, values, attn_mask=mask)    # [B, H, n, W, d]
    return o.reshape(B, H, n * W, d)[:, :, :T]


@MODELS.register("swa")
class SlidingWindowAttention(Mixer):
    """Causal softmax attention within a sliding window; its state is the window's KV cache."""
    no_memory = "its window keeps every pair inside it exactly and none outside: its capacity is the window"

    rotary = True

    Options = SWAOptions

    def __init__(self, d_model, n_heads, options: SWAOptions, feature_map=None):
        super().__init__(d_model, n_heads, options)
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.out = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x):
        q, k, v = (self.split_heads(t) for t in self.qkv(x).chunk(3, dim=-1))
        q, k = self.rotate(q, k)
        return self.out(self.merge_heads(sliding_window_attention(q, k, v, self.options.window)))

    def attention(self, x):
        q, k, v = (self.split_heads(t) for t in self.qkv(x).chunk(3, dim=-1))
        q, k = self.rotate(q, k)
        scores = (q @ k.transpose(-1, -2)).float() / self.head_dim ** 0.5
        allowed = band_mask(x.shape[1], self.options.window, x.device)
        return AttentionView(torch.softmax(scores.masked_fill(~allowed, -torch.inf), -1), k, v)

    def state_size(self, seq_len: int) -> int:
        return 2 * min(seq_len, self.options.window) * self.d_model  # a key and a value per head and token

    def init_state(self, batch, max_len, device=None):
        size = min(max_len, self.options.window)
        return {"cache": torch.zeros(2, batch, self.n_heads, size, self.head_dim, device=device), "length": 0}

    def step(self, x, state):
        cache, n = state["cache"], state["length"]
        size = cache.shape[3]
        q, k, v = (t.view(x.shape[0], self.n_heads, 1, self.head_dim) for t in self.qkv(x).chunk(3, dim=-1))
        q, k = self.rotate(q, k, start=n)
        slot = n % size  # the oldest entry leaves the window (order does not matter to softmax)
        cache[0, :, :, slot], cache[1, :, :, slot] = k[:, :, 0], v[:, :, 0]
        filled = min(n + 1, size)
        o = F.scaled_dot_product_attention(q, cache[0, :, :, :filled], cache[1, :, :, :filled])
        return self.out(o.reshape(x.shape[0], self.d_model)), {"cache": cache, "length": n + 1}
