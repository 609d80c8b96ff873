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
from pydantic import Field, model_validator
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
    chunk_size: int | None = Field(None, ge=1, description="chunk length; default 64 (fixed, scalar) or, for vector, 8 up to a query/key size of 16 and 4 above")
    feature_dim: int | None = Field(None, ge=1, description="query and key size per head (d', the state's key side: "
                                                           "S is feature_dim x head size); default: the head size")
    output_gate: bool = Field(False, description="the normalised read times swish(W_g x) before the output projection "
                              "(RetNet's and GLA's output gate; Mamba-2's z gate)")
    value_expansion: int = Field(1, ge=1, le=4, description="d_v = this x the head size (RetNet: 2); the state is "
                                 "d_k x d_v per head")
    step_size: bool = Field(False, description="gate scalar only: Mamba-2's parametrisation, a_t = exp(-A_h dt_t) with "
                            "dt_t = softplus(w . x_t + dt_bias_h) and the write scaled by dt_t (A_h, dt_bias_h learned)")
    skip: bool = Field(False, description="Mamba-2's D skip: each head's read plus D_h v_t (D_h learned, 1 at start)")
    value_dim: int | None = Field(None, ge=1, le=4096, description="value size per head (d_v, the state's value "
                                  "side: S is d_k x d_v), independent of the width; default: value_expansion x the head size")

    LATE_FIELDS = frozenset({"feature_dim", "output_gate", "value_expansion", "step_size", "skip", "value_dim"})

    @model_validator(mode="after")
    def _one_value_size(self):
        if self.value_dim is not None and self.value_expansion != 1:
            raise ValueError("value_dim sets d_v itself: leave value_expansion at 1 with it")
        return self

    @model_validator(mode="after")
    def _step_size_needs_scalar_gate(self):
        if self.step_size and self.gate != "scalar":
            raise ValueError("step_size is Mamba-2's parametrisation of the scalar gate: set gate 'scalar'")
        return self


@MODELS.register("gla")
class GatedLinearAttention(Mixer):
    """Decayed linear attention S_t = diag(g_t) S_{t-1} + k_t v_t^T (RetNet, Mamba-2 or GLA gate)."""
    no_memory = ("its decays forget by design, so write-then-read capacity mixes memory with forgetting; at decay 1 "
                 "it is the linear memory with the identity map (probe memory linear)")

    Options = GLAOptions

    def __init__(self, d_model, n_heads, options: GLAOptions, feature_map=None):
        super().__init__(d_model, n_heads, options)
        self.qk_dim = options.feature_dim or self.head_dim
        self.v_dim = options.value_dim or options.value_expansion * self.head_dim
        H, d = n_heads, self.qk_dim
        self.qkv = nn.Linear(d_model, 2 * H * d + H * self.v_dim, bias=False)
        self.out = nn.Linear(H * self.v_dim, d_model, bias=False)
        if options.gate == "fixed":
            gamma = 1 - 2.0 ** (-5.0 - torch.arange(H, dtype=torch.float32))
            self.register_buffer("log_gamma", torch.log(gamma), persistent=False)
        elif options.gate == "scalar":
            self.gate = nn.Linear(d_model, H)
        else:
            self.gate = nn.Sequential(nn.Linear(d_model, GATE_RANK, bias=False), nn.Linear(GATE_RANK, H * d))
        # the faithful parts, created only when asked (so the simplified forms keep their parameters)
        self.out_gate = nn.Linear(d_model, H * self.v_dim, bias=False) if options.output_gate else None
        if options.step_size:  # Mamba-2's initialisation: A_h ~ U[1, 16], dt ~ log-uniform in [0.001, 0.1]
            self.A_log = nn.Parameter(torch.empty(H).uniform_(1, 16).log())
            dt = torch.empty(H).uniform_(math.log(1e-3), math.log(0.1)).exp()
            self.dt_bias = nn.Parameter(dt + torch.log(-torch.expm1(-dt)))  # softplus(dt_bias) = dt
        self.D = nn.Parameter(torch.ones(H)) if options.skip else None

    def _project(self, x):
        """q (scaled), k ``[B, H, T, d_k]``, v ``[B, H, T, d_v]``, log g ``[B, H, T]`` or ``[B, H, T, d_k]``
        and the step size dt ``[B, H, T]`` (None without ``step_size``) of ``x [B, T, d_model]``."""
        B, T, _ = x.shape
        qk = self.n_heads * self.qk_dim
        q, k, v = (self.split_heads(t) for t in self.qkv(x).split([qk, qk, self.n_heads * self.v_dim], dim=-1))
        q = q * self.qk_dim ** -0.5
        dt = None
        if self.options.gate == "fixed":
            log_g = self.log_gamma[None, :, None].expand(B, -1, T)
        elif self.options.step_size:  # Mamba-2: log a_t = -A_h dt_t
            gate = self.gate(x).to(torch.promote_types(x.dtype, torch.float32))           # float32 at least
            dt = F.softplus(gate + self.dt_bias).transpose(1, 2)                           # [B, T, H] -> [B, H, T]
            log_g = -self.A_log.exp()[None, :, None] * dt
        elif self.options.gate == "scalar":
            log_g = -F.softplus(self.gate(x).float() + SCALAR_GATE_OFFSET).transpose(1, 2)  # [B, T, H] -> [B, H, T]
        else:
            log_g = F.logsigmoid(self.gate(x).float()) / GATE_TEMPERATURE            # [B, T, H*d]
            log_g = self.split_heads(log_g)                                           # -> [B, H, T, d_k]
        return q, k, v, log_g, dt

    def read(self, o, x=None):
        """RMS-normalise each head's read ``o [B, H, T, d_v]``, gate it by swish(W_g x) (with
        ``output_gate``; ``x [B, T, d_model]``), then the output projection."""
        wide = o.to(torch.promote_types(o.dtype, torch.float32))  # the norm in float32 at least
        o = o * torch.rsqrt(wide.square().mean(-1, keepdim=True) + 1e-6).to(o.dtype)
        if self.out_gate is not None:
            o = o * F.silu(self.split_heads(self.out_gate(x)))
        return self.out(self.merge_heads(o))

    def _skip(self, o, v):
        if self.D is None:
            return o
        return o + self.D.view(-1, *[1] * (o.dim() - 2)) * v  # Mamba-2's D: + D_h v_t per head ([B, H, (T,) d])

    def forward(self, x):
        q, k, v, log_g, dt = self._project(x)
        written = v if dt is None else v * dt[..., None]                             # Mamba-2 writes dt_t v_t
        o = decayed_attention(q, k, written, log_g, mode=self.options.mode, chunk_size=self.options.chunk_size)
        return self.read(self._skip(o, v), x)

    def attention(self, x):
        """The explicit weights before the per-head normalisation (which rescales each row), with
        the step size on each column and the D skip on the diagonal."""
        q, k, v, log_g, dt = self._project(x)
        weights = decayed_attention_matrix(q, k, log_g)
        if dt is not None:
            weights = weights * dt[:, :, None, :]                                     # column j scaled by dt_j
        if self.D is not None:
            weights = weights + torch.diag_embed(self.D[:, None].expand(-1, x.shape[1]))  # [H, T, T]
        return AttentionView(weights, k, v)

    def key_features(self) -> int:
        return self.qk_dim

    def value_features(self) -> int:
        return self.v_dim

    def state_size(self, seq_len: int) -> int:
        return self.n_heads * self.qk_dim * self.v_dim  # S is d_k x d_v per head

    def init_state(self, batch, max_len, device=None):
        return torch.zeros(batch, self.n_heads, self.qk_dim, self.v_dim, device=device)

    def step(self, x, state):
        q, k, v, log_g, dt = (None if t is None else t[:, :, 0] for t in self._project(x[:, None]))  # one token: drop T
        written = v if dt is None else v * dt[..., None]
        o, state = decayed_step(q.float(), k.float(), written.float(), log_g.float(), state)
        o = self._skip(o.to(x.dtype), v)
        return self.read(o[:, :, None], x[:, None])[:, 0], state
