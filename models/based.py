"""Based (Arora et al. 2024, "Simple linear attention language models balance the recall-throughput
tradeoff"): Taylor-map linear attention layers alternating with small sliding-window attention
layers. The linear layers (queries and keys projected to ``feature_dim``, then the 2nd-order
Taylor map: 1 + d' + d'(d'+1)/2 features) hold a global summary; the window layers recall exactly
what is near. The state is the sum of both: S and z of the linear layers, the window's KV cache.

A layer recipe, like ``hybrid``: ``build_layers`` returns linear, window, linear, window, ...
Deviation from the paper: no gated short convolutions (BaseConv) layers; the backbone's short
convolution before each mixer stands in for them.
"""
from __future__ import annotations

from pydantic import Field

from . import MODELS
from .backbone import Mixer, MixerOptions
from .linear import LinearAttention, LinearOptions
from .swa import SlidingWindowAttention, SWAOptions


class BasedOptions(MixerOptions):
    window: int = Field(64, ge=1, description="the sliding-window layers' window (Based: 64 to 128)")
    feature_dim: int = Field(16, ge=1, description="query and key size per head before the Taylor map (Based: 16)")
    value_dim: int | None = Field(None, ge=1, le=4096, description="the linear layers' value size per head (d_v); "
                                  "default: the head size")

    LATE_FIELDS = frozenset({"value_dim"})


@MODELS.register("based")
class Based:
    """Based: Taylor-map linear attention and sliding-window attention in alternate layers."""

    Options = BasedOptions
    uses_feature_map = True  # the linear layers' map
    default_feature_map = "taylor"
    memory = None
    no_memory = "a layer recipe (Taylor linear plus a window): probe its linear layers' memory (linear, feature map taylor)"

    @classmethod
    def build_layers(cls, d_model, n_heads, n_layers, options: BasedOptions, feature_map=None) -> list[Mixer]:
        linear = LinearOptions(feature_dim=options.feature_dim, value_dim=options.value_dim)
        window = SWAOptions(window=options.window)
        return [LinearAttention(d_model, n_heads, linear, feature_map=feature_map or cls.default_feature_map)
                if i % 2 == 0 else SlidingWindowAttention(d_model, n_heads, window) for i in range(n_layers)]
