"""Linear attention (Katharopoulos et al. 2020) with any feature map."""
from __future__ import annotations

from typing import Literal

from pydantic import Field
from torch import nn

from . import MODELS, feature_maps, ops
from .backbone import Mixer, MixerOptions


class LinearOptions(MixerOptions):
    normalize: Literal["z", "rmsnorm", "none"] = Field("z", description="z-denominator (the paper's), output RMSNorm, or none")
    mode: Literal["chunk", "recurrent", "quadratic"] = Field("chunk", description="kernel used for training")
    eps: float = Field(1e-6, gt=0, description="added to the z-denominator")


@MODELS.register("linear")
class LinearAttention(Mixer):
    """Causal linear attention phi(q)^T S / phi(q).z with a pluggable feature map (default elu+1)."""

    Options = LinearOptions
    uses_feature_map = True

    def __init__(self, d_model, n_heads, options: LinearOptions, feature_map=None):
        super().__init__(d_model, n_heads, options)
        self.feature_map = feature_maps.get(feature_map or "elu1", self.head_dim)
        if options.normalize == "z" and not self.feature_map.nonnegative:
            raise ValueError(f"feature map {type(self.feature_map).__name__} can be negative, so the z-denominator "
                             f"can vanish; use model.normalize=rmsnorm or none with it")
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.out = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x):
        q, k, v = (self.split_heads(t) for t in self.qkv(x).chunk(3, dim=-1))
        o = ops.linear_attention(q, k, v, feature_map=self.feature_map, normalize=self.options.normalize,
                                 mode=self.options.mode, eps=self.options.eps)
        return self.out(self.merge_heads(o))

    def state_size(self, seq_len: int) -> int:
        m = self.feature_map.out_dim
        z = m if self.options.normalize == "z" else 0
        return self.n_heads * (m * self.head_dim + z)  # S is m x dv per head, z is m
