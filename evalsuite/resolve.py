"""From what a user asks for (a task, a model, a preset, ``--set`` overrides, a seed) to one
validated ``RunConfig`` (``evalsuite.config``), refusing bad input before anything is built or
written: every error names the parameter and what is allowed (``ConfigError``)."""
from __future__ import annotations

import dataclasses
import json
import math
from typing import Any, Iterable, Mapping

from pydantic import ValidationError

from evalsuite import models as model_zoo
from evalsuite import resources
from evalsuite import tasks as task_zoo
from evalsuite.config import MAX_EXAMPLES, MAX_SEGMENTS, PRESETS, RunConfig, TaskSpec, TrainConfig
from evalsuite.models import ModelConfig, ModelSpec
from evalsuite.errors import ConfigError, did_you_mean
from evalsuite.overrides import apply_overrides
from evalsuite.params import MAX_SEED
from evalsuite.registry import UnknownName

__all__ = ["ConfigError", "preset_base", "resolve", "resolve_task", "section_keys"]


def _format_validation(section: str, err: ValidationError) -> str:
    parts = []
    for e in err.errors():
        loc = ".".join(str(x) for x in e["loc"])
        where = f"{section}.{loc}" if loc else section
        if e["type"] == "extra_forbidden":
            parts.append(f"{where}: unknown key")
        else:
            parts.append(f"{where}: {e['msg']} (got {e.get('input')!r})")
    return "; ".join(parts)


def _task_class(name: str):
    try:
        cls = task_zoo.TASKS.get(name)
    except UnknownName as exc:
        raise ConfigError(f"--task: {exc}") from None
    if not (isinstance(cls, type) and issubclass(cls, task_zoo.Task)):
        raise ConfigError(f"--task: {name!r} is not a Task subclass")
    return cls


def _mixer_class(name: str):
    try:
        return model_zoo.mixer_class(name)
    except UnknownName as exc:
        raise ConfigError(f"--model: {exc}") from None
    except TypeError as exc:
        raise ConfigError(f"--model: {exc}") from None


def section_keys(task: str, model: str) -> dict[str, set[str]]:
    """Every key each section accepts, for the given task and model."""
    mixer = _mixer_class(model)
    return {
        "task": set(_task_class(task).Params.model_fields) | {"segments", "eval_segments"},
        "model": set(ModelConfig.model_fields) | set(model_zoo.BackboneOptions.model_fields) | set(mixer.Options.model_fields),
        "train": set(TrainConfig.model_fields),
    }


def resolve(task: str, model: str, *, preset: str = "default", overrides: Iterable[str] | Mapping[str, Any] = (),
            feature_map: str | None = None, seed: int = 0) -> RunConfig:
    """The validated ``RunConfig`` of a task, a model, a preset and overrides (``--set`` strings,
    or a mapping of keys to values). Raises ``ConfigError`` (naming the parameter and the allowed
    values) on any invalid input, before anything is built or written."""
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed <= MAX_SEED:
        raise ConfigError(f"--seed: must be an integer from 0 to {MAX_SEED}, got {seed!r}")
    task_cls, mixer_cls = _task_class(task), _mixer_class(model)
    if preset not in PRESETS and preset not in task_cls.presets:
        available = sorted(set(PRESETS) | set(task_cls.presets))
        raise ConfigError(f"--preset: unknown preset {preset!r} for task {task!r}.{did_you_mean(preset, available)} "
                          f"Available: {', '.join(available)}")
    general = PRESETS[preset_base(task_cls, preset)]
    sections = {
        "task": dict(task_cls.presets.get(preset, {})),
        "model": dict(general.get("model", {})),
        "train": dict(general.get("train", {})),
    }
    if feature_map is not None:
        sections["model"]["feature_map"] = feature_map
    apply_overrides(sections, overrides, section_keys(task, model))
    if mixer_cls.uses_feature_map and sections["model"].get("feature_map") is None:
        # spelled out so the store and reports name it
        sections["model"]["feature_map"] = getattr(mixer_cls, "default_feature_map", "elu1")

    task_spec = _resolve_task(task, task_cls, sections["task"])
    plugins, model = _plugin_files(sections["model"], model)
    spec = _resolve_model(model, sections["model"], task_spec)
    try:
        train = TrainConfig(**sections["train"])
    except ValidationError as err:
        raise ConfigError(_format_validation("train", err)) from None
    if train.batch_size > train.num_train:
        raise ConfigError(f"train.batch_size: {train.batch_size} is more than the {train.num_train} training "
                          f"examples (train.num_train); each step could only use {train.num_train}")
    _check_resources(task_spec, spec, train, least_parameters(spec, task_spec.vocab_size))  # by arithmetic, first
    n_params = _check_model_builds(spec, task_spec.vocab_size, mixer_cls)
    _check_resources(task_spec, spec, train, n_params)
    return RunConfig(task_spec, spec, train, seed, plugins, preset)


def _resolve_model(model: str, options: dict, task: TaskSpec) -> ModelSpec:
    """The one place a model section is split and checked against the task's lengths (and given
    the readout its task is read by: MAD's compression is read by the autoencoder)."""
    needs = {getattr(t, "readout", "causal") for t in task.tasks}
    if len(needs) > 1:
        raise ConfigError(f"task: {task.name}'s segments need different readouts ({', '.join(sorted(needs))})")
    need = needs.pop()
    if options.get("readout", need) != need:
        raise ConfigError(f"model.readout: task {task.name} is read by the {need} readout, got {options['readout']!r}")
    if need != "causal":
        options = {**options, "readout": need}
        if len({t.seq_len for t in task.tasks}) > 1:  # a padded shorter sequence would be read at its padding
            raise ConfigError(f"task.segments: {task.name} is read from each sequence's last position, so every "
                              f"segment needs the same seq_len")
    try:
        spec = ModelSpec.parse({"name": model, **options})
    except ValidationError as err:
        raise ConfigError(_format_validation("model", err)) from None
    backbone = spec.backbone
    if backbone.positions != "learned":
        return spec
    longest = max(t.seq_len for t in task.train_tasks)
    if backbone.max_len is None:
        spec = dataclasses.replace(spec, backbone=backbone.model_copy(update={"max_len": longest}))
    for i, (t, _) in enumerate(task.evals):
        if t.seq_len > spec.backbone.max_len:
            raise ConfigError(f"task.eval_segments[{i}]: length {t.seq_len} exceeds the model's {spec.backbone.max_len} "
                              f"learned positions; use model.positions=none to test length extrapolation "
                              f"(the short convolution supplies order)")
    if longest > spec.backbone.max_len:
        raise ConfigError(f"model.max_len: {spec.backbone.max_len} is shorter than the training length {longest}")
    return spec


def _sizes(task: TaskSpec, model: ModelSpec, train: TrainConfig, n_params: int) -> tuple[list, int]:
    """``(data sets, model bytes)`` of a run, as ``resources.check_memory`` reads them."""
    m = model.base
    longest_train = max(t.seq_len for t in task.train_tasks)
    sizes = ([(t, train.num_train + train.num_val + train.num_test) for t in task.train_tasks]
             + list(zip([t for t, _ in task.evals], task.eval_sizes(train.num_test))))
    return sizes, max(resources.training_bytes(n_params, train.batch_size, longest_train, m.d_model, m.n_layers, m.n_heads),
                      resources.evaluation_bytes(n_params, max(t.seq_len for t in task.tasks), m.d_model, m.n_layers))


def estimated_bytes(config: RunConfig) -> int:
    """The memory one run of ``config`` takes, as the check before it runs estimates it."""
    n_params = sum(p.numel() for p in config.model.build(config.task.vocab_size).parameters())
    sizes, model_bytes = _sizes(config.task, config.model, config.train, n_params)
    return resources.data_bytes(sizes) + model_bytes


def _check_resources(task: TaskSpec, model: ModelSpec, train: TrainConfig, n_params: int) -> None:
    """Refuse a run whose data, model and activations do not fit in memory, or whose budget is a typo."""
    sizes, model_bytes = _sizes(task, model, train, n_params)
    resources.check_memory(sizes, what="sizes (train.num_*, task.seq_len, model.d_model, model.n_layers, train.batch_size)",
                           model_bytes=model_bytes)
    resources.check_steps(train.epochs, train.num_train, train.batch_size)


def _plugin_files(model_options: dict, model: str) -> tuple[dict[str, str], str]:
    """``file.py:Attr`` references of the model and feature map made absolute (a run can be
    analysed from any folder; the feature map in ``model_options``), with the SHA-256 of each
    file's contents: ``(digests, model)``."""
    from evalsuite.registry import file_digest, file_ref

    out = {}
    for key, ref in (("name", model), ("feature_map", model_options.get("feature_map"))):
        found = file_ref(ref)
        if found is None:
            continue
        path, attr = found
        try:
            digest = file_digest(path)
        except OSError as exc:
            raise ConfigError(f"--{'model' if key == 'name' else 'feature-map'}: cannot read {path}: {exc.strerror}") from None
        if key == "feature_map":
            model_options["feature_map"] = f"{path}:{attr}"
        else:
            model = f"{path}:{attr}"
        out[str(path)] = digest
    return out, model


def preset_base(task_cls, preset: str) -> str:
    """The global preset whose model and train settings a task preset runs with (no fallback)."""
    base = task_cls.preset_bases.get(preset, preset)
    if base not in PRESETS:
        raise ConfigError(f"--preset: task {task_cls.name!r} preset {preset!r} names no model and train settings: "
                          f"add it to {task_cls.__name__}.preset_bases (one of {', '.join(PRESETS)})")
    return base


def _resolve_task(name: str, task_cls, params: dict) -> TaskSpec:
    """Validate the task's parameters and its optional segments.

    ``segments``: the training mixture, a list of parameter overrides each with a ``share``;
    ``eval_segments``: extra test sets (longer contexts, more pairs) the model never trained on."""
    params = dict(params)
    segments = params.pop("segments", None)
    eval_segments = params.pop("eval_segments", None)

    def build(where: str, values: dict):
        try:
            return task_cls(**values)
        except ValidationError as err:
            raise ConfigError(_format_validation(where, err)) from None
        except ValueError as err:
            raise ConfigError(f"{where}: {err}") from None

    base = build("task", params)
    section = {"name": name, **base.params.model_dump()}
    mixture, evals = [(base, 1.0)], []
    for key, segs in (("segments", segments), ("eval_segments", eval_segments)):
        if segs is None:
            continue
        if not isinstance(segs, list) or not segs or not all(isinstance(s, dict) for s in segs):
            raise ConfigError(f"task.{key}: expected a non-empty list of parameter dicts, got {segs!r}")
        count = len(segs) + (len(segments or []) if key == "eval_segments" else 0)
        if count > MAX_SEGMENTS:
            raise ConfigError(f"task.{key}: at most {MAX_SEGMENTS} segments (training and eval together), got {count}")
        canonical, built = [], []
        for i, seg in enumerate(segs):
            seg = dict(seg)
            share = seg.pop("share", 1.0)
            if key == "segments" and (not isinstance(share, (int, float)) or isinstance(share, bool)
                                      or not math.isfinite(share) or share <= 0):
                raise ConfigError(f"task.segments[{i}].share: must be a positive finite number, got {share!r}")
            extra = {"share": float(share)} if key == "segments" else {}
            num_test = None
            if key == "eval_segments" and "num_test" in seg:  # this test set's size (long segments cost more)
                num_test = seg.pop("num_test")
                if not isinstance(num_test, int) or isinstance(num_test, bool) or not 1 <= num_test <= MAX_EXAMPLES:
                    raise ConfigError(f"task.eval_segments[{i}].num_test: must be an integer in [1, {MAX_EXAMPLES:,}], "
                                      f"got {num_test!r}")
                extra = {"num_test": num_test}
            t = build(f"task.{key}[{i}]", {**base.params.model_dump(), **seg})
            built.append((t, float(share)) if key == "segments" else (t, num_test))
            canonical.append({**t.params.model_dump(), **extra})
        section[key] = canonical
        if key == "segments":
            mixture = built
        else:
            evals = built
    return TaskSpec(name, section, tuple(mixture), tuple(evals))


def resolve_task(task: str, *, preset: str = "default", overrides: Iterable[str] | Mapping[str, Any] = ()):
    """The task alone (for ``evalsuite sample``): ``(canonical task section, task object)``."""
    task_cls = _task_class(task)
    if preset not in task_cls.presets:
        raise ConfigError(f"--preset: task {task!r} has no preset {preset!r}; available: {', '.join(task_cls.presets)}")
    sections: dict[str, dict] = {"task": dict(task_cls.presets[preset]), "model": {}, "train": {}}
    apply_overrides(sections, overrides, {"task": set(task_cls.Params.model_fields), "model": set(), "train": set()})
    spec = _resolve_task(task, task_cls, sections["task"])
    return spec.section, spec.train_tasks[0]


_BUILT: dict[tuple, int] = {}  # (model spec, vocabulary, mixer, feature map) -> parameters, of models that built
_BUILT_MAX = 512


def check_stored(config: RunConfig) -> None:
    """A stored configuration (``RunConfig.from_dict``) checked as ``resolve`` checks a new one's
    model: it builds (on the meta device), its feature map is one its mixer takes. ``ConfigError``."""
    _check_model_builds(config.model, config.task.vocab_size, _mixer_class(config.model.name))


def least_parameters(spec: ModelSpec, vocab_size: int) -> int:
    """A lower bound on a model's parameters, by arithmetic: its embedding and, in every layer, at
    least a d_model x d_model projection (every mixer has one). What the memory check reads before
    anything is built, so that a typo such as ``model.n_layers=100000`` is refused at once."""
    m = spec.base
    return vocab_size * m.d_model + m.n_layers * m.d_model * m.d_model


def _check_model_builds(spec: ModelSpec, vocab_size: int, mixer_cls) -> int:
    """Build the model without allocating memory to surface constraints (divisibility, maps);
    returns its number of parameters. A model that built is remembered by its spec, so a sweep's
    points that differ only in rate, seed or task settings build it once (a meta-device build still
    runs every initialiser: about 17 ms, 28 s for the 1,500 points of ``reproduce mad --scale paper``)."""
    import torch

    fmap = spec.base.feature_map
    if fmap is not None and not mixer_cls.uses_feature_map:
        raise ConfigError(f"model.feature_map: model {spec.name!r} uses no feature map (got {fmap!r})")
    from evalsuite.models.feature_maps import FEATURE_MAPS

    try:  # the map's object, not only its name: a name registered again is a different map
        fmap_obj = FEATURE_MAPS.get(fmap) if fmap is not None else None
        key = (json.dumps(spec.section(), sort_keys=True, default=repr), vocab_size, mixer_cls, fmap_obj)
        hash(key)
    except Exception:  # an unknown map, an unloadable reference (the build below says what is wrong), an unhashable map
        key = None
    if key is not None and key in _BUILT:
        return _BUILT[key]
    try:
        with torch.device("meta"):
            n = spec.build(vocab_size).num_parameters()
        if key is not None:
            if len(_BUILT) >= _BUILT_MAX:
                _BUILT.clear()
            _BUILT[key] = n
        return n
    except UnknownName as exc:
        raise ConfigError(f"--feature-map: {exc}") from None
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"model: {exc}") from None
