"""DeltaNet-style mixer: the delta rule with SiLU + L2-normalised queries and keys, beta = sigmoid;
optionally gated (Gated DeltaNet: the state decays by a learned alpha_t before each edit; with
``gate="channel"`` one decay per key channel, Kimi Delta Attention's diagonal decay), and
optionally with beta in (0, 2) (``negative_eigenvalues``): the transition I - beta k k^T then has
the eigenvalue 1 - beta in (-1, 1) along k, which lets one layer flip a sign per token and so
track parity (Grazzi et al. 2024, "Unlocking state-tracking in linear RNNs through negative
eigenvalues"); with beta in (0, 1) every eigenvalue is in [0, 1]. With ``householder`` n > 1 it is
DeltaProduct (Siems et al. 2025): n delta steps per token, each with its own key, value and beta,
so a token's transition is a product of n Householder factors (registered as ``deltaproduct``,
n = 2 by default); the state keeps its size, each token costs n steps."""
from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F
from pydantic import Field, model_validator
from torch import nn

from . import MODELS, ops
from .backbone import AttentionView, Mixer, MixerOptions
from .memory import DeltaMemory

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

    householder: int = Field(1, ge=1, le=16, description="delta steps per token, each with its own key, value and "
                             "beta (DeltaProduct's n_h Householder factors); 1: the delta rule")
    value_dim: int | None = Field(None, ge=1, le=4096, description="value size per head (d_v, the state's value "
                                  "side: S is d_k x d_v), independent of the width; default: the head size")

    LATE_FIELDS = frozenset({"negative_eigenvalues", "feature_dim", "gate", "householder", "value_dim"})

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
    (d_k = ``feature_dim``, d_v = ``value_dim``, each by default the head size)."""
    memory = DeltaMemory

    Options = DeltaOptions

    def __init__(self, d_model, n_heads, options: DeltaOptions, feature_map=None):
        super().__init__(d_model, n_heads, options)
        self.qk_dim = options.feature_dim or self.head_dim
        self.steps = options.householder  # n: one key, value and beta per step (n = 1: today's layout)
        self.v_dim = options.value_dim or self.head_dim
        self.qkv = nn.Linear(d_model, (1 + self.steps) * n_heads * self.qk_dim + self.steps * n_heads * self.v_dim,
                             bias=False)
        self.beta = nn.Linear(d_model, self.steps * n_heads)
        self.per_channel = options.gated and options.gate == "channel"
        self.gate = nn.Linear(d_model, n_heads * (self.qk_dim if self.per_channel else 1)) if options.gated else None
        self.out = nn.Linear(n_heads * self.v_dim, d_model, bias=False)

    def _split(self, x):
        """Raw q ``[..., H, d_k]``, k ``[..., H, n, d_k]`` and v ``[..., H, n, d_v]`` of ``x [..., d_model]``."""
        qk, n = self.n_heads * self.qk_dim, self.steps
        q, k, v = self.qkv(x).split([qk, n * qk, n * self.n_heads * self.v_dim], dim=-1)
        return (q.unflatten(-1, (self.n_heads, self.qk_dim)),
                k.unflatten(-1, (n, self.n_heads, self.qk_dim)).transpose(-2, -3),   # [..., n H dk] -> [..., H, n, dk]
                v.unflatten(-1, (n, self.n_heads, self.v_dim)).transpose(-2, -3))  # [..., n H dv] -> [..., H, n, dv]

    def _project(self, x):
        """q, k (SiLU then unit length: unnormalised keys make the triangular inverse explode),
        v, beta and the log-gate, heads split off ``x [..., d_model]``."""
        q, k, v = self._split(x)
        q, k = key_map(q), key_map(k)
        beta = torch.sigmoid(self.beta(x)).unflatten(-1, (self.steps, self.n_heads)).transpose(-1, -2)  # [..., H, n]
        if self.options.negative_eigenvalues:
            beta = 2 * beta
        log_alpha = F.logsigmoid(self.gate(x) + GATE_OFFSET) if self.gate is not None else None
        if self.per_channel:
            log_alpha = log_alpha.unflatten(-1, (self.n_heads, self.qk_dim))  # [..., H * dk] -> [..., H, dk]
        return q, k, v, beta, log_alpha

    def _heads_first(self, x):
        """q ``[B, H, T, dk]``, k ``[B, H, T, n, dk]``, v ``[B, H, T, n, dv]``, beta ``[B, H, T, n]``
        and the log-gate ``[B, H, T(, dk)]`` of ``x [B, T, d_model]``."""
        q, k, v, beta, log_alpha = self._project(x)                  # [B, T, H(, n), d], [B, T, H, n]
        q, k, v, beta = (t.transpose(1, 2) for t in (q, k, v, beta))
        return q, k, v, beta, None if log_alpha is None else log_alpha.transpose(1, 2)

    def forward(self, x):
        q, k, v, beta, log_alpha = self._heads_first(x)
        mode = "recurrent" if self.per_channel else self.options.mode  # per-channel gates: no chunked form yet
        o = ops.delta_product(q, k, v, beta, mode=mode, chunk_size=self.options.chunk_size, log_alpha=log_alpha)
        return self.out(self.merge_heads(o))

    def attention(self, x):
        """The map v -> o over every step's value: with n steps per token, weights ``[B, H, T, T n]``
        and keys and values ``[B, H, T n, d]`` (token t's step s at column n t + s, ``substeps`` n)."""
        q, k, v, beta, log_alpha = self._heads_first(x)
        n, T = self.steps, q.shape[2]
        read = torch.zeros_like(k)
        read[:, :, :, -1] = q                                        # each token is read after its last step
        if log_alpha is not None and n > 1:                           # the gate before the first step only
            gate = log_alpha.new_zeros(*k.shape[:4], *log_alpha.shape[3:])
            gate[:, :, :, 0] = log_alpha
            log_alpha = gate.flatten(2, 3)
        k, v, read = (t.flatten(2, 3) for t in (k, v, read))          # [B, H, T, n, d] -> [B, H, T n, d]
        weights = ops.delta_rule_attention(read, k, beta.flatten(2, 3), log_alpha)[:, :, n - 1::n]  # rows: last steps
        raw = self._split(x)[1].transpose(1, 2).flatten(2, 3)
        return AttentionView(weights, k, v, raw_keys=raw, key_map=key_map, substeps=n)

    def key_features(self) -> int:
        return self.qk_dim

    def value_features(self) -> int:
        return self.v_dim

    def state_size(self, seq_len: int) -> int:
        return self.n_heads * self.qk_dim * self.v_dim  # S is d_k x d_v per head

    def init_state(self, batch, max_len, device=None):
        return torch.zeros(batch, self.n_heads, self.qk_dim, self.v_dim, device=device)

    def step(self, x, state):
        q, k, v, beta, log_alpha = (None if t is None else t.float() for t in self._project(x))
        for s in range(self.steps):  # the gate before the first step only; the read after the last
            o, state = ops.delta_rule_step(q, k[:, :, s], v[:, :, s], beta[:, :, s], state, log_alpha if s == 0 else None)
        return self.out(o.reshape(x.shape[0], self.n_heads * self.v_dim).to(x.dtype)), state


class DeltaProductOptions(DeltaOptions):
    householder: int = Field(2, ge=1, le=16, description="delta steps per token, each with its own key, value and "
                             "beta (DeltaProduct's n_h Householder factors); 1: the delta rule")
    # measured on this CPU (1 thread, batch 64, T 128, d_k 16, one layer, forward + backward + AdamW):
    # chunk 16 sub-steps 39 ms a step at n_h 1 and 81 at n_h 2, chunk 64 (the delta rule's) 66 and 141
    chunk_size: int = Field(16, ge=1, description="chunk length of the WY form, in sub-steps (n_h per token)")

    LATE_FIELDS = DeltaOptions.LATE_FIELDS - {"householder"}  # a new model: its configs always name n_h


@MODELS.register("deltaproduct")
class DeltaProduct(DeltaRule):
    """DeltaProduct (Siems et al. 2025): the delta rule with n_h = ``householder`` (default 2)
    steps per token; with ``negative_eigenvalues`` each factor's eigenvalue along its key is in
    (-1, 1), and the product of n_h factors can rotate the state (state tracking)."""

    Options = DeltaProductOptions
    memory = None
    no_memory = "n_h edits per token need n_h keys per written pair; its one-step form is the delta rule (probe memory delta)"
