"""RWKV-7 time mixing, its core (Peng et al. 2025, "RWKV-7 Goose with expressive dynamic state
evolution"): the generalised delta rule, with a vector-valued decay w_t and a vector-valued
in-context learning rate a_t. In RWKV's row form (S is d_v x d_k, read o_t = S_t r_t):

    S_t = S_{t-1} (Diag(w_t) - kappa_t^T (a_t * kappa_t)) + v_t^T ktilde_t

with kappa_t = normalise(k_t * xi) (the removal key), ktilde_t = k_t * (1 + (a_t - 1) * alpha)
(the replacement key), w_t = exp(-e^{-1/2} sigmoid(W_w x_t + w_0)) in (0.545, 1) and
a_t = sigmoid(W_a x_t + a_0); xi and alpha are learned per channel (initialised 0.85 and 1, as
RWKV-7's k_k and k_a). Here S is stored transposed, d_k x d_v as in models/ops.py:

    S_t = (Diag(w_t) - (a_t * kappa_t) kappa_t^T) S_{t-1} + ktilde_t v_t^T,    o_t = S_t^T r_t.

With a_t = 1, alpha = 1 and w_t = 1 this is the delta rule with beta = 1.

Initialisation (``decay_init``, default ``rwkv7``): RWKV-7 starts w_0 at a ramp over the layer's
channels, w_0[n] = -6.5 + 5 (n / (C - 1))^(0.85 + sqrt(l / (L - 1))) for layer l of L, so the
decays start between exp(-e^{-1/2} sigmoid(-6.5)) = 0.999 and exp(-e^{-1/2} sigmoid(-1.5)) = 0.896:
most channels remember hundreds of tokens from the first step. The backbone's generic
initialisation zeroes every bias, which would start every decay at exp(-e^{-1/2} / 2) = 0.738 per
token (a memory of a few tokens; ``uniform``, the form trained here before 2026-12-06: the
configurations of those runs have no ``decay_init``, and read back they get ``uniform``,
``Params.LEGACY``). The ramp is a fixed offset added to the decay's pre-activation (``w0``), the
learned bias starting at zero beside it: the same function and gradients as RWKV-7's learned w_0
started at the ramp.

Deviations from RWKV-7 (docs/MODELS.md): no token shift (the backbone's short convolution mixes
neighbours), plain linear maps for w, a (RWKV-7 uses low-rank ones), no bonus term u, no value
residual, no GroupNorm or output gate; trained with the recurrent loop (no chunked kernel here)."""
from __future__ import annotations

import math
from typing import Literal

import torch
import torch.nn.functional as F
from pydantic import Field
from torch import nn

from . import MODELS
from .backbone import AttentionView, Mixer, MixerOptions

DECAY_SCALE = math.exp(-0.5)  # RWKV-7: w = exp(-0.606531 sigmoid(.)), so w lies in (0.545, 1)


class RWKV7Options(MixerOptions):
    feature_dim: int | None = Field(None, ge=1, description="key (and receptance) size per head, d_k: the state is "
                                                           "d_k x head size; default: the head size")
    decay_init: Literal["rwkv7", "uniform"] = Field(
        "rwkv7", description="rwkv7: w_0 starts at RWKV-7's ramp over channels (decays 0.896 to 0.999 at the first "
                             "step); uniform: w_0 = 0 (every decay 0.738 per token, a memory of a few tokens)")
    value_dim: int | None = Field(None, ge=1, le=4096, description="value size per head (d_v, the state's value side: "
                                  "S is d_k x d_v), independent of the width; default: the head size")
    LEGACY = {"decay_init": "uniform"}  # what RWKV-7 runs stored before the option (2026-12-06) trained with
    LATE_FIELDS = frozenset({"value_dim"})


def decay_offset(channels: int, layer: int = 0, n_layers: int = 1) -> torch.Tensor:
    """RWKV-7's initial w_0 over a layer's ``channels`` (all heads' key channels, in order):
    -7 + 5 (n / (C - 1))^(0.85 + sqrt(layer / (n_layers - 1))) + 0.5 (the 0.5 is its softplus
    offset), float32 ``[channels]``."""
    ratio = layer / (n_layers - 1) if n_layers > 1 else 0.0
    n = torch.arange(channels, dtype=torch.float64) / max(channels - 1, 1)
    return (-7 + 5 * n ** (0.85 + ratio ** 0.5) + 0.5).float()


def step(r, k, v, w, a, kappa, state):
    """One token: ``state [B, H, dk, dv]``; r, k (the replacement key), w, a, kappa ``[B, H, dk]``,
    v ``[B, H, dv]``. Returns ``(o, new_state)``; computed in the inputs' dtype."""
    removed = (a * kappa)[..., :, None] * (kappa[..., None, :] @ state)  # (a * kappa) (kappa^T S): [B, H, dk, dv]
    state = w[..., :, None] * state - removed + k[..., :, None] * v[..., None, :]
    return (r[..., None, :] @ state).squeeze(-2), state


def recurrence(r, k, v, w, a, kappa, state=None):
    """The whole sequence, token by token, in float32 (float64 stays float64): inputs ``[B, H, T, d]``."""
    dtype = torch.promote_types(r.dtype, torch.float32)
    r, k, v, w, a, kappa = (x.to(dtype) for x in (r, k, v, w, a, kappa))
    B, H, T, dk = k.shape
    state = k.new_zeros(B, H, dk, v.shape[-1]) if state is None else state.to(dtype)
    outs = []
    for t in range(T):
        o, state = step(r[:, :, t], k[:, :, t], v[:, :, t], w[:, :, t], a[:, :, t], kappa[:, :, t], state)
        outs.append(o)
    return torch.stack(outs, dim=2), state


@MODELS.register("rwkv7")
class RWKV7(Mixer):
    """RWKV-7's generalised delta rule (core; see the module docstring): a fixed d_k x d_v state per
    head, decayed per channel and edited with a learned in-context rate per channel."""
    no_memory = ("its update decays and replaces along a separate key; at no decay it is the delta rule (probe "
                 "memory delta)")

    Options = RWKV7Options

    def __init__(self, d_model, n_heads, options: RWKV7Options, feature_map=None, layer: int = 0, n_layers: int = 1):
        super().__init__(d_model, n_heads, options)
        self.qk_dim = options.feature_dim or self.head_dim
        inner = n_heads * self.qk_dim
        self.v_dim = options.value_dim or self.head_dim
        self.rkv = nn.Linear(d_model, 2 * inner + n_heads * self.v_dim, bias=False)
        self.decay = nn.Linear(d_model, inner)           # w_t (its bias is w_0)
        self.rate = nn.Linear(d_model, inner)            # a_t (its bias is a_0)
        self.xi = nn.Parameter(torch.full((n_heads, self.qk_dim), 0.85))     # RWKV-7's k_k
        self.alpha = nn.Parameter(torch.ones(n_heads, self.qk_dim))          # RWKV-7's k_a
        self.out = nn.Linear(n_heads * self.v_dim, d_model, bias=False)
        # RWKV-7's initial w_0 as a fixed offset beside the learned bias (which the backbone zeroes);
        # computed from the options, so not saved with the weights
        w0 = decay_offset(inner, layer, n_layers) if options.decay_init == "rwkv7" else torch.zeros(inner)
        self.register_buffer("w0", w0, persistent=False)

    @classmethod
    def build_layers(cls, d_model, n_heads, n_layers, options: RWKV7Options, feature_map=None):
        """Each layer knows its depth: RWKV-7's initial decays depend on it."""
        return [cls(d_model, n_heads, options, feature_map=feature_map, layer=i, n_layers=n_layers)
                for i in range(n_layers)]

    def _project(self, x):
        """r, the replacement key, v, w, a and kappa of ``x [..., d_model]``, heads split off
        (``[..., H, d]``)."""
        inner = self.n_heads * self.qk_dim
        r, k, v = self.rkv(x).split([inner, inner, self.n_heads * self.v_dim], dim=-1)
        r, k = (t.unflatten(-1, (self.n_heads, self.qk_dim)) for t in (r, k))  # [..., H*dk] -> [..., H, dk]
        v = v.unflatten(-1, (self.n_heads, self.v_dim))
        w = torch.exp(-DECAY_SCALE * torch.sigmoid(self.decay(x) + self.w0)).unflatten(-1, (self.n_heads, self.qk_dim))
        a = torch.sigmoid(self.rate(x)).unflatten(-1, (self.n_heads, self.qk_dim))
        kappa = F.normalize(k * self.xi, dim=-1, eps=1e-6)
        k = k * (1 + (a - 1) * self.alpha)
        return r, k, v, w, a, kappa

    def _heads_first(self, x):
        return [t.transpose(1, 2) for t in self._project(x)]  # [B, T, H, d] -> [B, H, T, d]

    def forward(self, x):
        o, _ = recurrence(*self._heads_first(x))
        return self.out(self.merge_heads(o.to(x.dtype)))

    def attention(self, x):
        """Exact: the output is linear in the values, so the recurrence run with one-hot values
        (value j = e_j) gives the weights row by row."""
        r, k, v, w, a, kappa = self._heads_first(x)
        T = k.shape[2]
        eye = torch.eye(T, dtype=torch.promote_types(x.dtype, torch.float32), device=x.device)
        weights, _ = recurrence(r, k, eye.expand(*k.shape[:2], T, T), w, a, kappa)
        return AttentionView(weights, kappa, v)

    def key_features(self) -> int:
        return self.qk_dim

    def value_features(self) -> int:
        return self.v_dim

    def state_size(self, seq_len: int) -> int:
        return self.n_heads * self.qk_dim * self.v_dim  # S is d_k x d_v per head, whatever the length

    def init_state(self, batch, max_len, device=None):
        return torch.zeros(batch, self.n_heads, self.qk_dim, self.v_dim, device=device)

    def step(self, x, state):
        r, k, v, w, a, kappa = (t.float() for t in self._project(x))
        o, state = step(r, k, v, w, a, kappa, state)
        return self.out(o.reshape(x.shape[0], self.n_heads * self.v_dim).to(x.dtype)), state
