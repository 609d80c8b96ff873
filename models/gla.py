"""Decayed linear attention as a mixer, with the gate of RetNet, Mamba-2 or GLA (``models/decayed.py``).

* ``gate=fixed`` (RetNet, Sun et al. 2023): one constant decay per head, gamma_h = 1 - 2^(-5 - h);
* ``gate=scalar`` (Mamba-2 / SSD, Dao & Gu 2024): one data-dependent decay per head and token,
  log a_t = -softplus(w . x_t + b), started near a_t = 0.95;
* ``gate=vector`` (GLA, Yang et al. 2024): one data-dependent decay per key dimension,
  log g_t = logsigmoid(W2 W1 x_t) / 16 (low rank 16, temperature 16, as GLA).

Queries are scaled by d^-1/2; the read of each head is RMS-normalised (no weights) before the
output projection, as RetNet's and GLA's group norm do. The state is d_k x d_v per head (d_k =
``feature_dim``, default the head size).
"""
from __future__ import annotations

import math
from typing import Literal

import torch
import torch.nn.functional as F
from pydantic import Field
from torch import nn

from . import MODELS
from .backbone import AttentionView, Mixer, MixerOptions
from .decayed import decayed_attention, decayed_attention_matrix, decayed_step

GATE_RANK, GATE_TEMPERATURE = 16, 16.0  # GLA's low-rank gate and its normaliser
SCALAR_DECAY_START = 0.95               # the Mamba-2-style gate's decay at initialisation
# added to the scalar gate's logit in forward (the backbone's generic init zeroes every bias, which
# would start the decay at exp(-softplus(0)) = 0.5 per token: no memory beyond a few tokens)
SCALAR_GATE_OFFSET = math.log(math.expm1(-math.log(SCALAR_DECAY_START)))


class GLAOptions(MixerOptions):
    gate: Literal["fixed", "scalar", "vector"] = Field(
        "vector", description="fixed: RetNet (a constant decay per head); scalar: Mamba-2 (one data-dependent decay "
                              "per head); vector: GLA (one per key dimension)")
    mode: Literal["chunk", "recurrent"] = Field("chunk", description="kernel used for training")
    chunk_size: int | None = Field(None, ge=1, description="chunk length; default 64 (fixed, scalar) or 16 (vector)")
    feature_dim: int | None = Field(None, ge=1, description="query and key size per head (d', the state's key side: "
                                                           "S is feature_dim x head size); default: the head size")

    LATE_FIELDS = frozenset({"feature_dim"})


@MODELS.register("gla")
class GatedLinearAttention(Mixer):
    """Decayed linear attention S_t = diag(g_t) S_{t-1} + k_t v_t^T (RetNet, Mamba-2 or GLA gate)."""

    Options = GLAOptions

    def __init__(self, d_model, n_heads, options: GLAOptions, feature_map=None):
        super().__init__(d_model, n_heads, options)
        self.qk_dim = options.feature_dim or self.head_dim
        self.qkv = nn.Linear(d_model, 2 * n_heads * self.qk_dim + d_model, bias=False)
        self.out = nn.Linear(d_model, d_model, bias=False)
        H, d = n_heads, self.qk_dim
        if options.gate == "fixed":
            gamma = 1 - 2.0 ** (-5.0 - torch.arange(H, dtype=torch.float32))
            self.register_buffer("log_gamma", torch.log(gamma), persistent=False)
        elif options.gate == "scalar":
            self.gate = nn.Linear(d_model, H)
        else:
            self.gate = nn.Sequential(nn.Linear(d_model, GATE_RANK, bias=False), nn.Linear(GATE_RANK, H * d))

    def _project(self, x):
        """q (scaled), k ``[B, H, T, d_k]``, v ``[B, H, T, d_v]`` and log g ``[B, H, T]`` or ``[B, H, T, d_k]``
        of ``x [B, T, d_model]``."""
        B, T, _ = x.shape
        qk = self.n_heads * self.qk_dim
        q, k, v = (self.split_heads(t) for t in self.qkv(x).split([qk, qk, self.d_model], dim=-1))
        q = q * self.qk_dim ** -0.5
        if self.options.gate == "fixed":
            log_g = self.log_gamma[None, :, None].expand(B, -1, T)
        elif self.options.gate == "scalar":
            log_g = -F.softplus(self.gate(x).float() + SCALAR_GATE_OFFSET).transpose(1, 2)  # [B, T, H] -> [B, H, T]
        else:
            log_g = F.logsigmoid(self.gate(x).float()) / GATE_TEMPERATURE            # [B, T, H*d]
            log_g = self.split_heads(log_g)                                           # -> [B, H, T, d_k]
        return q, k, v, log_g

    def read(self, o):
        """RMS-normalise each head's read, then the output projection: ``o [B, H, T, d]``."""
        o = o * torch.rsqrt(o.float().square().mean(-1, keepdim=True) + 1e-6).to(o.dtype)
        return self.out(self.merge_heads(o))

    def forward(self, x):
        q, k, v, log_g = self._project(x)
        o = decayed_attention(q, k, v, log_g, mode=self.options.mode, chunk_size=self.options.chunk_size)
        return self.read(o)

    def attention(self, x):
        """The explicit weights before the per-head normalisation (which rescales each row)."""
        q, k, v, log_g = self._project(x)
        return AttentionView(decayed_attention_matrix(q, k, log_g), k, v)

    def key_features(self) -> int:
        return self.qk_dim

    def state_size(self, seq_len: int) -> int:
        return self.n_heads * self.qk_dim * self.head_dim  # S is d_k x d_v per head

    def init_state(self, batch, max_len, device=None):
        return torch.zeros(batch, self.n_heads, self.qk_dim, self.head_dim, device=device)

    def step(self, x, state):
        q, k, v, log_g = (t[:, :, 0] for t in self._project(x[:, None]))           # one token: drop T
        o, state = decayed_step(q.float(), k.float(), v.float(), log_g.float(), state)
        return self.read(o[:, :, None].to(x.dtype))[:, 0], state
