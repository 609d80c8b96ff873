"""Causal softmax attention (the baseline every linear-time mixer is measured against)."""
from __future__ import annotations

import torch.nn.functional as F
from torch import nn

from .backbone import Mixer
from . import MODELS


@MODELS.register("softmax")
class SoftmaxAttention(Mixer):
    """Multi-head causal attention through ``scaled_dot_product_attention``."""

    def __init__(self, d_model, n_heads, options, feature_map=None):
        super().__init__(d_model, n_heads, options)
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.out = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x):
        q, k, v = (self.split_heads(t) for t in self.qkv(x).chunk(3, dim=-1))
        return self.out(self.merge_heads(F.scaled_dot_product_attention(q, k, v, is_causal=True)))

    def state_size(self, seq_len: int) -> int:
        return 2 * seq_len * self.d_model  # the KV cache: a key and a value per head and token
