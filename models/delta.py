"""DeltaNet-style mixer: the delta rule with SiLU + L2-normalised queries and keys, beta = sigmoid;
optionally gated (Gated DeltaNet: the state decays by a learned alpha_t before each edit; with
``gate="channel"`` one decay per key channel, Kimi Delta Attention's diagonal decay), and
optionally with beta in (0, 2) (``negative_eigenvalues``): the transition I - beta k k^T then has
the eigenvalue 1 - beta in (-1, 1) along k, which lets one layer flip a sign per token and so
track parity (Grazzi et al. 2024, "Unlocking state-tracking in linear RNNs through negative
eigenvalues"); with beta in (0, 1) every eigenvalue is in [0, 1]."""
from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F
from pydantic import Field, model_validator
from torch import nn

from . import MODELS, ops
from .backbone import AttentionView, Mixer, MixerOptions

# Added to the gate's logit so a freshly initialised gate keeps ~98% of the state per token
# (the generic init zeroes biases, and alpha = 0.5 would forget everything within a few tokens).
GATE_OFFSET = 4.0


class DeltaOptions(MixerOptions):
    mode: Literal["chunk", "recurrent"] = Field("chunk", description="kernel used for training")
    chunk_size: int = Field(64, ge=1, description="chunk length of the WY form")
    gated: bool = Field(False, description="gated delta rule: S_t = alpha_t (I - beta k k^T) S_{t-1} + beta k v^T")
    negative_eigenvalues: bool = Field(False, description="beta = 2 sigmoid(.) in (0, 2), so I - beta k k^T has an "
                                       "eigenvalue in (-1, 1) (Grazzi et al. 2024); default beta = sigmoid(.) in (0, 1)")
    feature_dim: int | None = Field(None, ge=1, description="query and key size per head (d', the state's key side: "
                                                           "S is feature_dim x head size); default: the head size")
    gate: Literal["scalar", "channel"] = Field("scalar", description="with gated: one decay per head and token "
                                               "(Gated DeltaNet) or one per key channel (Kimi Delta Attention's "
                                               "diagonal decay, S_t = (I - beta k k^T) Diag(alpha_t) S_{t-1} + beta k v^T; "
                                               "trained with the recurrent loop)")

    LATE_FIELDS = frozenset({"negative_eigenvalues", "feature_dim", "gate"})

    @model_validator(mode="after")
    def _channel_gate_needs_gated(self):
        if self.gate == "channel" and not self.gated:
            raise ValueError("gate 'channel' is a form of the gated delta rule: set gated true as well")
        return self


def key_map(x):
    """SiLU, then unit length: what the delta rule writes for a projected key (queries alike)."""
    return F.normalize(F.silu(x), dim=-1, eps=1e-6)


@MODELS.register("delta")
class DeltaRule(Mixer):
    """Delta rule (Schlag et al. 2021; DeltaNet): edits its fixed d_k x d_v state per head
    (d_k = ``feature_dim``, default the head size; d_v = the head size)."""

    Options = DeltaOptions

    def __init__(self, d_model, n_heads, options: DeltaOptions, feature_map=None):
        super().__init__(d_model, n_heads, options)
        self.qk_dim = options.feature_dim or self.head_dim
        self.qkv = nn.Linear(d_model, 2 * n_heads * self.qk_dim + d_model, bias=False)
        self.beta = nn.Linear(d_model, n_heads)
        self.per_channel = options.gated and options.gate == "channel"
        self.gate = nn.Linear(d_model, n_heads * (self.qk_dim if self.per_channel else 1)) if options.gated else None
        self.out = nn.Linear(d_model, d_model, bias=False)

    def _split(self, x):
        """Raw q, k ``[..., H, d_k]`` and v ``[..., H, d_v]`` of ``x [..., d_model]``."""
        qk = self.n_heads * self.qk_dim
        q, k, v = self.qkv(x).split([qk, qk, self.d_model], dim=-1)
        return q.unflatten(-1, (self.n_heads, self.qk_dim)), k.unflatten(-1, (self.n_heads, self.qk_dim)), \
            v.unflatten(-1, (self.n_heads, self.head_dim))

    def _project(self, x):
        """q, k (SiLU then unit length: unnormalised keys make the triangular inverse explode),
        v, beta and the log-gate, heads split off ``x [..., d_model]``."""
        q, k, v = self._split(x)
        q, k = key_map(q), key_map(k)
        beta = torch.sigmoid(self.beta(x))
        if self.options.negative_eigenvalues:
            beta = 2 * beta
        log_alpha = F.logsigmoid(self.gate(x) + GATE_OFFSET) if self.gate is not None else None
        if self.per_channel:
            log_alpha = log_alpha.unflatten(-1, (self.n_heads, self.qk_dim))  # [..., H * dk] -> [..., H, dk]
        return q, k, v, beta, log_alpha

    def forward(self, x):
        q, k, v, beta, log_alpha = self._project(x)                  # [B, T, H, d], [B, T, H]
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        beta = beta.transpose(1, 2)
        log_alpha = None if log_alpha is None else log_alpha.transpose(1, 2)  # [B, H, T] or [B, H, T, dk]
        mode = "recurrent" if self.per_channel else self.options.mode  # per-channel gates: no chunked form yet
        o = ops.delta_rule(q, k, v, beta, mode=mode, chunk_size=self.options.chunk_size, log_alpha=log_alpha)
        return self.out(self.merge_heads(o))

    def attention(self, x):
        q, k, v, beta, log_alpha = self._project(x)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        weights = ops.delta_rule_attention(q, k, beta.transpose(1, 2),
                                           None if log_alpha is None else log_alpha.transpose(1, 2))
        raw = self._split(x)[1].transpose(1, 2)
        return AttentionView(weights, k, v, raw_keys=raw, key_map=key_map)

    def key_features(self) -> int:
        return self.qk_dim

    def state_size(self, seq_len: int) -> int:
        return self.n_heads * self.qk_dim * self.head_dim  # S is d_k x d_v per head

    def init_state(self, batch, max_len, device=None):
        return torch.zeros(batch, self.n_heads, self.qk_dim, self.head_dim, device=device)

    def step(self, x, state):
        q, k, v, beta, log_alpha = (None if t is None else t.float() for t in self._project(x))
        o, state = ops.delta_rule_step(q, k, v, beta, state, log_alpha)
        return self.out(o.reshape(x.shape[0], self.d_model).to(x.dtype)), state
