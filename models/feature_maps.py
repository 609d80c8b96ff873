"""Feature maps phi: R^d -> R^m for linear attention.

A new map is one small class::

    @register("cos")
    class Cos(FeatureMap):
        def forward(self, x):
            return torch.cos(x)

``out_dim`` defaults to the head size; a map that changes it sets ``self.out_dim`` after
``super().__init__``. ``nonnegative`` says whether phi(q).phi(k) >= 0 always holds: only such
maps may be used with the z-denominator. Randomness, if any, lives in ``resample()`` alone.
"""
from __future__ import annotations

from typing import ClassVar

import torch
from torch import nn

from evalsuite.registry import Registry

FEATURE_MAPS = Registry("feature map", builtin_modules=["evalsuite.models.feature_maps"])
register = FEATURE_MAPS.register


class FeatureMap(nn.Module):
    nonnegative: ClassVar[bool] = True

    def __init__(self, head_dim: int, **options):
        super().__init__()
        if options:
            raise TypeError(f"feature map {type(self).__name__} takes no options {sorted(options)}")
        self.head_dim = head_dim
        self.out_dim = head_dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    # Maps that treat queries and keys differently override these two.
    def forward_query(self, x: torch.Tensor) -> torch.Tensor:
        return self(x)

    def forward_key(self, x: torch.Tensor) -> torch.Tensor:
        return self(x)

    def resample(self) -> None:
        """Draw new random parameters (between training steps, never inside a sequence)."""

    def extra_repr(self) -> str:
        return f"head_dim={self.head_dim}, out_dim={self.out_dim}"


@register("elu1")
class Elu1(FeatureMap):
    """elu(x) + 1 (Katharopoulos et al. 2020), branch-wise so bf16 never rounds exp(x) - 1 + 1 to 0."""

    def forward(self, x):
        return torch.where(x >= 0, x + 1, torch.exp(torch.clamp(x, max=0)))


@register("relu")
class ReLU(FeatureMap):
    """relu(x); the denominator can be 0, so eps matters."""

    def forward(self, x):
        return torch.relu(x)


@register("squared_relu")
class SquaredReLU(FeatureMap):
    """relu(x)^2."""

    def forward(self, x):
        return torch.relu(x).square()


@register("identity")
class Identity(FeatureMap):
    """phi(x) = x: plain (unnormalised) linear attention; may be negative."""

    nonnegative = False

    def forward(self, x):
        return x


def names() -> list[str]:
    return FEATURE_MAPS.names()


def get(ref, head_dim: int, **options) -> FeatureMap:
    """Build a feature map from a name, a ``module:Attr`` / ``file.py:Attr`` ref, a class or an instance."""
    if isinstance(ref, FeatureMap):
        return ref
    cls = FEATURE_MAPS.get(ref)
    if not (isinstance(cls, type) and issubclass(cls, FeatureMap)):
        raise TypeError(f"feature map {ref!r} must be a subclass of evalsuite.models.feature_maps.FeatureMap")
    fmap = cls(head_dim, **options)
    if not isinstance(getattr(fmap, "out_dim", None), int) or fmap.out_dim < 1:
        raise TypeError(f"feature map {ref!r} must set a positive integer out_dim")
    return fmap
