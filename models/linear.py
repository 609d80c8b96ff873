"""Linear attention (Katharopoulos et al. 2020) with any feature map."""
from __future__ import annotations

import math
from typing import Literal

import torch
from pydantic import Field
from torch import nn

from . import MODELS, feature_maps, ops
from .backbone import AttentionView, Mixer, MixerOptions
from .memory import LinearMemory


class LinearOptions(MixerOptions):
    normalize: Literal["z", "rmsnorm", "none"] = Field("z", description="z-denominator (the paper's), output RMSNorm, or none")
    mode: Literal["chunk", "recurrent", "quadratic"] = Field("chunk", description="kernel used for training")
    eps: float = Field(1e-6, gt=0, description="added to the z-denominator")
    feature_dim: int | None = Field(None, ge=1, description="project queries and keys to this size per head before the "
                                                           "feature map; default: the map's input_dim (taylor: 16, as "
                                                           "in Based) or else the head size")
    value_dim: int | None = Field(None, ge=1, le=4096, description="value size per head (d_v, the state's value "
                                  "side: S is d_k x d_v), independent of the width; default: the head size")

    LATE_FIELDS = frozenset({"value_dim"})


@MODELS.register("linear")
class LinearAttention(Mixer):
    """Causal linear attention phi(q)^T S / phi(q).z with a pluggable feature map (default elu+1)."""
    memory = LinearMemory

    Options = LinearOptions
    uses_feature_map = True

    def __init__(self, d_model, n_heads, options: LinearOptions, feature_map=None):
        super().__init__(d_model, n_heads, options)
        self.qk_dim = options.feature_dim or _input_dim(feature_map) or self.head_dim
        self.feature_map = feature_maps.get(feature_map or "elu1", self.qk_dim)
        if options.normalize == "z" and not self.feature_map.nonnegative:
            raise ValueError(f"feature map {type(self.feature_map).__name__} can be negative, so the z-denominator "
                             f"can vanish; use model.normalize=rmsnorm or none with it")
        self.v_dim = options.value_dim or self.head_dim
        self.qkv = nn.Linear(d_model, 2 * n_heads * self.qk_dim + n_heads * self.v_dim, bias=False)
        self.out = nn.Linear(n_heads * self.v_dim, d_model, bias=False)

    def _qkv(self, x):
        qk = self.n_heads * self.qk_dim
        return self.qkv(x).split([qk, qk, self.n_heads * self.v_dim], dim=-1)

    def forward(self, x):
        q, k, v = (self.split_heads(t) for t in self._qkv(x))
        o = ops.linear_attention(q, k, v, feature_map=self.feature_map, normalize=self.options.normalize,
                                 mode=self.options.mode, eps=self.options.eps)
        return self.out(self.merge_heads(o))

    def attention(self, x):
        q, k, v = (self.split_heads(t).float() for t in self._qkv(x))
        phi_q, phi_k = ops.apply_feature_map(self.feature_map, q, k, stabilize=self.options.normalize != "none")
        weights = ops.linear_attention_matrix(phi_q, phi_k, self.options.normalize, self.options.eps)
        return AttentionView(weights, phi_k, v, raw_keys=k, key_map=self.feature_map.forward_key)

    def read(self, o, x=None):
        """The view's ``weights @ values`` as the output: with ``normalize=rmsnorm`` the weights are
        the raw scores, and each row is RMS-normalised here as the forward pass does."""
        if self.options.normalize == "rmsnorm":
            o = ops.normalize_output(o, "rmsnorm", self.options.eps)
        return self.out(self.merge_heads(o))

    def key_features(self) -> int:
        return self.feature_map.out_dim

    def value_features(self) -> int:
        return self.v_dim

    def state_size(self, seq_len: int) -> int:
        m = self.feature_map.out_dim
        z = m if self.options.normalize == "z" else 0
        shift = m if self._running_shift else 0  # performer: the running maximum c of the key exponents
        return self.n_heads * (m * self.v_dim + z + shift)  # S is m x dv per head, z is m

    @property
    def _running_shift(self) -> bool:
        """Maps with ``sequence_shift`` (performer) decode with a running per-feature maximum c of
        the key exponents: state row i holds sum_j exp(ek[j, i] - c[i]) v_j, rescaled when c[i]
        grows, and the query reads with exp(eq + c - max(eq + c)); as ``ops.shifted_features``."""
        return getattr(self.feature_map, "sequence_shift", False) and self.options.normalize != "none"

    def init_state(self, batch, max_len, device=None):
        dv = self.v_dim + (self.options.normalize == "z")  # z rides along as S's last column
        state = torch.zeros(batch, self.n_heads, self.feature_map.out_dim, dv, device=device)
        if self._running_shift:
            return state, torch.full((batch, self.n_heads, self.feature_map.out_dim), -math.inf, device=device)
        return state

    def step(self, x, state):
        B = x.shape[0]
        q, k, v = (t.view(B, self.n_heads, -1).float() for t in self._qkv(x))
        if self._running_shift:
            state, c = state
            ek, eq = self.feature_map.key_exponent(k), self.feature_map.query_exponent(q)   # [B, H, m]
            new_c = torch.maximum(c, ek)
            state = state * torch.exp(c - new_c)[..., None]                     # rescale rows already written
            phi_k, c = torch.exp(ek - new_c), new_c
            read = eq + c
            phi_q = torch.exp(read - read.amax(-1, keepdim=True))
        else:
            phi_q, phi_k = self.feature_map.forward_query(q), self.feature_map.forward_key(k)
        if self.options.normalize == "z":
            v = torch.cat([v, torch.ones_like(v[..., :1])], dim=-1)
        o, state = ops.linear_attention_step(phi_q, phi_k, v, state)
        if self._running_shift:
            state = (state, c)
        o = ops.normalize_output(o, self.options.normalize, self.options.eps)
        return self.out(o.reshape(B, self.n_heads * self.v_dim).to(x.dtype)), state


def _input_dim(feature_map) -> int | None:
    """The size a map asks for its inputs (``FeatureMap.input_dim``), if any."""
    ref = feature_map.ref if isinstance(feature_map, feature_maps.MapSpec) else feature_map
    if ref is None or isinstance(ref, feature_maps.FeatureMap):
        return None
    cls = feature_maps.FEATURE_MAPS.get(ref)
    return getattr(cls, "input_dim", None)
