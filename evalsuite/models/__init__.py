"""Models: a shared language-model backbone with a pluggable sequence mixer.

``names()`` lists the mixers, ``build(name, ...)`` returns an ``nn.Module`` mapping
``inputs [n, T]`` to logits ``[n, T, vocab_size]``.
"""
from __future__ import annotations

from evalsuite.registry import Registry

MODELS = Registry("model", builtin_package=__name__)  # every module here; a new mixer is one new file

from .backbone import AttentionView, BackboneOptions, LanguageModel, Mixer, MixerOptions  # noqa: E402
from .feature_maps import MapSpec  # noqa: E402


def names() -> list[str]:
    return MODELS.names()


def mixer_class(name) -> type[Mixer]:
    """A model of the registry: a ``Mixer`` subclass, or a layer recipe such as ``Hybrid`` (a class
    with ``Options``, ``uses_feature_map`` and ``build_layers``)."""
    cls = MODELS.get(name)
    recipe = isinstance(cls, type) and all(hasattr(cls, a) for a in ("Options", "uses_feature_map", "build_layers"))
    if not recipe:
        raise TypeError(f"model {name!r} must be a subclass of evalsuite.models.Mixer")
    return cls


def split_options(name, options: dict) -> tuple[BackboneOptions, MixerOptions]:
    """Separate backbone options from the mixer's own; unknown keys raise ``ValueError``."""
    cls = mixer_class(name)
    backbone_keys = set(BackboneOptions.model_fields)
    mixer_keys = set(cls.Options.model_fields)
    unknown = set(options) - backbone_keys - mixer_keys
    if unknown:
        raise ValueError(f"unknown option(s) {sorted(unknown)} for model {name!r}; valid: "
                         f"{sorted(backbone_keys | mixer_keys)}")
    backbone = BackboneOptions(**{k: v for k, v in options.items() if k in backbone_keys})
    mixer = cls.Options(**{k: v for k, v in options.items() if k in mixer_keys})
    return backbone, mixer


def build(name, *, vocab_size: int, d_model: int, n_layers: int, n_heads: int, feature_map=None,
          feature_map_options: dict | None = None, **options) -> LanguageModel:
    """A language model whose layers use mixer ``name``; ``feature_map`` (a name, ref, class or
    instance) and its options go to the layers that take one, each layer getting its own map."""
    cls = mixer_class(name)
    if feature_map is not None and not cls.uses_feature_map:
        raise ValueError(f"model {name!r} takes no feature map (got {feature_map!r})")
    if feature_map_options:
        feature_map = MapSpec(feature_map or "elu1", dict(feature_map_options))
    backbone, mixer_options = split_options(name, options)
    mixers = cls.build_layers(d_model, n_heads, n_layers, mixer_options, feature_map=feature_map)
    return LanguageModel(vocab_size, d_model, mixers, backbone)


__all__ = ["MODELS", "AttentionView", "BackboneOptions", "LanguageModel", "Mixer", "MixerOptions", "build", "names"]
