"""Causal softmax attention (the baseline every linear-time mixer is measured against)."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from . import MODELS
from .backbone import AttentionView, Mixer
from .memory import SoftmaxMemory


@MODELS.register("softmax")
class SoftmaxAttention(Mixer):
    """Multi-head causal attention through ``scaled_dot_product_attention``; decodes with a KV cache
    (of rotated keys when positions are rotary)."""
    memory = SoftmaxMemory

    rotary = True

    def __init__(self, d_model, n_heads, options, feature_map=None):
        super().__init__(d_model, n_heads, options)
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.out = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x):
        q, k, v = (self.split_heads(t) for t in self.qkv(x).chunk(3, dim=-1))
        q, k = self.rotate(q, k)
        return self.out(self.merge_heads(F.scaled_dot_product_attention(q, k, v, is_causal=True)))

    def attention(self, x):
        q, k, v = (self.split_heads(t) for t in self.qkv(x).chunk(3, dim=-1))
        q, k = self.rotate(q, k)
        T = x.shape[1]
        scores = (q @ k.transpose(-1, -2)) / self.head_dim ** 0.5
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        return AttentionView(torch.softmax(scores.float().masked_fill(mask, -torch.inf), -1), k, v)

    def state_size(self, seq_len: int) -> int:
        return 2 * seq_len * self.d_model  # the KV cache: a key and a value per head and token

    def init_state(self, batch, max_len, device=None):
        cache = torch.zeros(2, batch, self.n_heads, max_len, self.head_dim, device=device)
        return {"cache": cache, "length": 0}

    def step(self, x, state):
        cache, n = state["cache"], state["length"]
        if n >= cache.shape[3]:
            raise ValueError(f"KV cache is full ({n} tokens); pass a larger max_len to init_state")
        q, k, v = (t.view(x.shape[0], self.n_heads, 1, self.head_dim) for t in self.qkv(x).chunk(3, dim=-1))
        q, k = self.rotate(q, k, start=n)
        cache[0, :, :, n], cache[1, :, :, n] = k[:, :, 0], v[:, :, 0]  # written in place: the cache is the state
        o = F.scaled_dot_product_attention(q, cache[0, :, :, :n + 1], cache[1, :, :, :n + 1])
        return self.out(o.reshape(x.shape[0], self.d_model)), {"cache": cache, "length": n + 1}
