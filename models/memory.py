"""One memory layer, as the capacity probes use it: write S (key, value) pairs, read queries.

A probe asks what a mixer's state holds, so each memory here is a mixer's own state update through
the same kernels (``ops``), with nothing around it: no projections, no short convolution, no
gates. A mixer names its memory in the model registry (``Mixer.memory``); one that has none says
why in ``Mixer.no_memory`` (the probe's error quotes it). Keys are ``[N, S, d_k]``, values
``[N, S, d_v]`` (any size: the state's value side is a setting of its own), queries
``[N, R, d_k]``; the read is ``[N, R, d_v]``.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from . import feature_maps, ops


class Memory(nn.Module):
    """Write ``keys``/``values`` (with optional ``beta [N, S]``), read ``queries``."""

    kind = ""

    def __init__(self, d_key: int, feature_map=None, feature_map_options=None, **options):
        super().__init__()
        if feature_map is not None or feature_map_options:
            raise ValueError(f"memory {self.kind!r} takes no feature map (got {feature_map!r})")
        if options:
            raise ValueError(f"memory {self.kind!r} takes no options {sorted(options)}")
        self.d_key = d_key

    def key_features(self) -> int | None:
        """d': the state's key side (None: the state keeps every pair)."""
        return self.d_key

    def state_floats(self, n_pairs: int, d_value: int) -> int:
        return self.key_features() * d_value


class SoftmaxMemory(Memory):
    """Every pair kept; the read is the softmax-weighted mean of the values. With no ``scale`` (a
    probe on random vectors) scores are cosines at a fixed sharp temperature: unit keys give
    q.k_i = 1 against ~N(0, 1/d) for the others, and a scale of 2 d separates them."""

    kind = "softmax"

    def __init__(self, d_key: int, softmax_scale: float | None = None, **rest):
        super().__init__(d_key, **rest)
        self.softmax_scale = 2.0 * d_key if softmax_scale is None else softmax_scale

    def key_features(self) -> None:
        return None

    def state_floats(self, n_pairs: int, d_value: int) -> int:
        return n_pairs * (self.d_key + d_value)

    def forward(self, keys, values, queries, beta=None, scale=None):
        if scale is None:
            queries, keys, scale = F.normalize(queries, dim=-1), F.normalize(keys, dim=-1), self.softmax_scale
        return torch.softmax(scale * queries @ keys.transpose(-1, -2), -1) @ values


class LinearMemory(Memory):
    """S = sum phi(k) v^T read as phi(q)^T S, divided by phi(q).z (``normalize="z"``, the paper's;
    the map must be non-negative) or not (``"none"``: the signed correlation-matrix memory with the
    identity map, sum v k^T, as Barnfield et al. 2026 analyse it)."""

    kind = "linear"

    def __init__(self, d_key: int, feature_map=None, feature_map_options=None, normalize: str = "z"):
        nn.Module.__init__(self)
        self.d_key = d_key
        if normalize not in ("z", "none"):
            raise ValueError(f"normalize must be z or none, got {normalize!r}")
        self.fmap = feature_maps.get(feature_map or "elu1", d_key, **(feature_map_options or {}))
        if normalize == "z" and not self.fmap.nonnegative:
            raise ValueError(f"feature map {feature_map!r} can be negative; the z-denominator needs a non-negative map "
                             f"(use normalize none)")
        self.normalize = normalize

    def key_features(self) -> int:
        return self.fmap.out_dim

    def state_floats(self, n_pairs: int, d_value: int) -> int:
        return self.fmap.out_dim * (d_value + (self.normalize == "z"))

    def forward(self, keys, values, queries, beta=None, scale=None):
        phi_q, phi_k = ops.apply_feature_map(self.fmap, queries, keys, causal=False,
                                             stabilize=self.normalize == "z")
        read = phi_q @ (phi_k.transpose(-1, -2) @ values)                                  # [N, R, dv]
        if self.normalize == "none":
            return read
        z = phi_k.sum(-2)                                                                  # [N, m]
        return read / ((phi_q * z[:, None]).sum(-1, keepdim=True) + 1e-6)


class DeltaMemory(Memory):
    """The delta rule's state after S edits (unit keys: the triangular solve stays bounded), read
    as S^T q; ``beta`` 1 where none is given."""

    kind = "delta"

    def forward(self, keys, values, queries, beta=None, scale=None):
        beta = torch.ones(keys.shape[:2], device=keys.device, dtype=keys.dtype) if beta is None else beta
        _, state = ops.delta_rule(keys[:, None], keys[:, None], values[:, None], beta[:, None], return_state=True)
        return queries @ state[:, 0]
