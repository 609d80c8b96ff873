"""Models: a shared language-model backbone with a pluggable sequence mixer.

``names()`` lists the mixers, ``build(name, ...)`` returns an ``nn.Module`` mapping
``inputs [n, T]`` to logits ``[n, T, vocab_size]``.
"""
from __future__ import annotations

if __name__ != "evalsuite.models":  # the checkout's models/ folder imported by its bare name (from the repository root)
    raise ImportError(f"import evalsuite.models, not {__name__}: models/ installs as evalsuite.models, and a second copy "
                      "under another name would keep a registry of its own")

from dataclasses import dataclass
from typing import Any

from pydantic import ConfigDict, Field

from evalsuite.params import Params
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


def probe_memory(name: str, d_key: int, **options):
    """The one-layer memory of mixer ``name`` at key size ``d_key`` (``models.memory``; a capacity
    probe's), built with ``options`` (feature_map, feature_map_options, ...). ``ValueError`` naming
    why for a mixer that has none."""
    cls = mixer_class(name)
    if getattr(cls, "memory", None) is None:
        have = sorted(n for n, c in MODELS.items() if getattr(c, "memory", None) is not None)
        raise ValueError(f"model {name!r} has no probe memory: {cls.no_memory}; memories: {', '.join(have)}")
    return cls.memory(d_key, **options)


def split_options(name, options: dict, stored: bool = False) -> tuple[BackboneOptions, MixerOptions]:
    """Separate backbone options from the mixer's own; unknown keys raise ``ValueError``.
    ``stored``: the options of a stored run (``Params.stored_section``: a field it leaves out that
    changed what runs compute takes the value of the runs stored before it)."""
    cls = mixer_class(name)
    backbone_keys = set(BackboneOptions.model_fields)
    mixer_keys = set(cls.Options.model_fields)
    unknown = set(options) - backbone_keys - mixer_keys
    if unknown:
        raise ValueError(f"unknown option(s) {sorted(unknown)} for model {name!r}; valid: "
                         f"{sorted(backbone_keys | mixer_keys)}")
    backbone = {k: v for k, v in options.items() if k in backbone_keys}
    mixer = {k: v for k, v in options.items() if k in mixer_keys}
    if stored:
        backbone, mixer = BackboneOptions.stored_section(backbone), cls.Options.stored_section(mixer)
    return BackboneOptions(**backbone), cls.Options(**mixer)


class ModelConfig(Params):
    model_config = ConfigDict(extra="forbid", frozen=True)

    # bounded so that a typo is refused by arithmetic before a model is built (a suite of small models)
    d_model: int = Field(64, ge=1, le=16384, description="model width")
    n_layers: int = Field(2, ge=1, le=256, description="number of blocks")
    n_heads: int = Field(1, ge=1, le=1024, description="heads per mixer; must divide d_model")
    feature_map: str | None = Field(None, description="feature map for linear mixers (name, module:Attr or file.py:Attr)")
    feature_map_options: dict[str, Any] = Field(default_factory=dict, description='options of the feature map, e.g. {"nu": 2} for dpfp')



@dataclass(frozen=True)
class ModelSpec:
    """A model, validated once and carried typed: the registered name, its size (``base``), the
    backbone's options and the mixer's own. ``section()`` is the canonical dict a run's config
    stores; ``parse`` reads one back; ``build`` makes the module."""

    name: str
    base: ModelConfig
    backbone: BackboneOptions
    mixer: MixerOptions

    @classmethod
    def parse(cls, section: dict, stored: bool = False) -> "ModelSpec":
        """Split a flat model section (``name``, size, backbone and mixer options) into typed parts;
        pydantic ``ValidationError`` or ``ValueError`` (unknown option) on bad input. ``stored``: a
        section a run stored (``split_options``)."""
        values = dict(section)
        name = values.pop("name")
        base = ModelConfig(**{k: values.pop(k) for k in list(values) if k in ModelConfig.model_fields})
        backbone, mixer = split_options(name, values, stored=stored)
        return cls(name, base, backbone, mixer)

    def section(self) -> dict:
        return {"name": self.name, **self.base.model_dump(), **self.backbone.model_dump(), **self.mixer.model_dump()}

    def build(self, vocab_size: int, feature_map=None) -> LanguageModel:
        """The language model; each layer that takes a feature map gets its own. ``feature_map``: a
        class or instance in place of the named map (the Python API; a section names maps only)."""
        cls = mixer_class(self.name)
        fmap = feature_map if feature_map is not None else self.base.feature_map
        if fmap is not None and not cls.uses_feature_map:
            raise ValueError(f"model {self.name!r} takes no feature map (got {fmap!r})")
        if self.base.feature_map_options:
            fmap = MapSpec(fmap or "elu1", dict(self.base.feature_map_options))
        mixers = cls.build_layers(self.base.d_model, self.base.n_heads, self.base.n_layers, self.mixer, feature_map=fmap)
        return LanguageModel(vocab_size, self.base.d_model, mixers, self.backbone)


def key_features(section: dict) -> int | None:
    """d' of a stored model section (``Mixer.key_features`` of its first layer that has one),
    read from the model built on the meta device (no memory, no weights)."""
    return state_sides(section)[0]


def state_sides(section: dict) -> tuple[int | None, int | None]:
    """``(d_k, d_v)`` of a stored model section: the key and value sides of the first layer with a
    fixed state (``Mixer.key_features``, ``value_features``), from the model built on the meta device;
    ``(None, None)`` where no layer has one."""
    import torch

    with torch.device("meta"):
        model = ModelSpec.parse({**section, "positions": "none", "max_len": None}).build(vocab_size=8)  # sizes only
    return next(((d, b.mixer.value_features()) for b in model.blocks if (d := b.mixer.key_features()) is not None),
                (None, None))


def build(name, *, vocab_size: int, d_model: int, n_layers: int, n_heads: int, feature_map=None,
          feature_map_options: dict | None = None, **options) -> LanguageModel:
    """A language model whose layers use mixer ``name``; ``feature_map`` (a name, ref, class or
    instance) and its options go to the layers that take one, each layer getting its own map."""
    named = feature_map if isinstance(feature_map, str) or feature_map is None else None
    spec = ModelSpec.parse({"name": name, "d_model": d_model, "n_layers": n_layers, "n_heads": n_heads,
                            "feature_map": named, "feature_map_options": feature_map_options or {}, **options})
    return spec.build(vocab_size, feature_map=None if named is not None else feature_map)


__all__ = ["MODELS", "AttentionView", "probe_memory", "BackboneOptions", "LanguageModel", "Mixer", "MixerOptions", "ModelConfig",
           "ModelSpec", "build", "key_features", "names", "state_sides"]
