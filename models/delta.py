"""DeltaNet-style mixer: the delta rule with SiLU + L2-normalised queries and keys, beta = sigmoid."""
from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F
from pydantic import Field
from torch import nn

from . import MODELS, ops
from .backbone import Mixer, MixerOptions


class DeltaOptions(MixerOptions):
    mode: Literal["chunk", "recurrent"] = Field("chunk", description="kernel used for training")
    chunk_size: int = Field(64, ge=1, description="chunk length of the WY form")


@MODELS.register("delta")
class DeltaRule(Mixer):
    """Delta rule (Schlag et al. 2021; DeltaNet): edits its fixed d_k x d_v state per head."""

    Options = DeltaOptions

    def __init__(self, d_model, n_heads, options: DeltaOptions, feature_map=None):
        super().__init__(d_model, n_heads, options)
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.beta = nn.Linear(d_model, n_heads)
        self.out = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x):
        q, k, v = (self.split_heads(t) for t in self.qkv(x).chunk(3, dim=-1))
        # unnormalised keys make the triangular inverse explode
        q, k = (F.normalize(F.silu(t), dim=-1, eps=1e-6) for t in (q, k))
        beta = torch.sigmoid(self.beta(x)).transpose(1, 2)  # [B, H, T]
        o = ops.delta_rule(q, k, v, beta, mode=self.options.mode, chunk_size=self.options.chunk_size)
        return self.out(self.merge_heads(o))

    def state_size(self, seq_len: int) -> int:
        return self.n_heads * self.head_dim * self.head_dim  # S is d_k x d_v per head
