"""Typed run configuration: sections ``task``, ``model`` and ``train``, presets, overrides, run ids.

A run's identity is the hash of its canonical configuration (every default filled in, keys
sorted) together with its seed; the store caches and resumes by it.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
from typing import Any, Iterable, Literal, Mapping

from pydantic import ConfigDict, Field, ValidationError

from evalsuite import models as model_zoo
from evalsuite import tasks as task_zoo
from evalsuite.errors import UserError
from evalsuite.models import ModelConfig, ModelSpec
from evalsuite.params import MAX_SEED, Params
from evalsuite.registry import UnknownName
from evalsuite.records import TARGET_ACCURACY

SECTIONS = ("task", "model", "train")
MAX_SEGMENTS = 64
MAX_EXAMPLES = 10_000_000  # examples in one eval segment's test set  # training segments plus eval segments: each gets its own data seed
MAX_STEPS = 10_000_000  # days of training at CPU speed; more is a typo (train.epochs=1e9)
MEMORY_CHECK_ENV = "EVALSUITE_MEMORY_CHECK"  # "off": try sizes that the estimate says do not fit


class ConfigError(UserError):
    """Invalid user input; the message names the parameter and what is allowed."""


class TrainConfig(Params):
    model_config = ConfigDict(extra="forbid", frozen=True)

    lr: float = Field(1e-3, gt=0, le=10, description="peak learning rate (AdamW)")
    weight_decay: float = Field(0.1, ge=0, description="AdamW weight decay on matrices")
    batch_size: int = Field(64, ge=1, description="examples per step")
    epochs: float = Field(1.0, gt=0, description="passes over the training split")
    num_train: int = Field(10_000, ge=1, description="training examples")
    num_val: int = Field(500, ge=1, description="validation examples (early stopping)")
    num_test: int = Field(1_000, ge=1, description="test examples (the reported accuracy)")
    warmup_frac: float = Field(0.05, ge=0, lt=1, description="fraction of steps spent warming up the learning rate")
    schedule: Literal["wsd", "constant", "cosine"] = Field(
        "wsd", description="after warm-up: wsd holds the peak rate and decays linearly to 10% over the last decay_frac "
        "of the budget (a late learner is not annealed before it takes off); constant never decays; cosine decays "
        "from the start")
    decay_frac: float = Field(0.2, ge=0, le=1, description="wsd: fraction of the budget spent decaying")
    grad_clip: float = Field(1.0, ge=0, description="gradient-norm clip; 0 disables")
    eval_every: int = Field(100, ge=1, description="steps between validation passes")
    patience: int = Field(0, ge=0, description="validation passes without improvement before stopping; 0 disables")
    target_accuracy: float = Field(TARGET_ACCURACY, gt=0, le=1, description="stop once validation accuracy reaches this (Zoology: 0.99)")
    precision: Literal["auto", "fp32", "bf16"] = Field("auto", description="auto: bf16 autocast on CUDA, fp32 on CPU")
    resample_every: int = Field(0, ge=0, description="steps between redraws of random feature maps (performer); 0 never")
    compile: bool = Field(False, description="train through torch.compile (opt in); falls back to eager with a warning "
                          "where no compiler works; the first step's time, compilation included, is compile_time_s")

    LATE_FIELDS = frozenset({"compile"})


# Named presets: model and train settings; each task adds its own parameters of the same name.
PRESETS: dict[str, dict[str, Any]] = {
    "default": {
        "description": "a few minutes on a laptop CPU at most (softmax stops early); elu+1 learns MQAR at d_model 64, D 8 in it",
        "model": dict(d_model=64, n_layers=2, n_heads=1, conv_kernel=4),
        "train": dict(lr=3e-3, batch_size=64, num_train=40_000, epochs=8, eval_every=50),
    },
    "zoology-readme": {
        "description": "Zoology's README-plot protocol (030325_new_arch): 2 layers, 2 heads, no MLP, no positions, batch 256, 32 epochs of 180,000 examples; GPU scale",
        "model": dict(d_model=128, n_layers=2, n_heads=2, conv_kernel=3, mlp_ratio=0, positions="none"),
        "train": dict(lr=0.00316, batch_size=256, num_train=180_000, num_test=1_000, epochs=32, eval_every=1000),
    },
    "extrapolate": {
        "description": "the default preset without learned positions (the short convolution supplies order), for test lengths beyond training",
        "model": dict(d_model=64, n_layers=2, n_heads=1, conv_kernel=4, positions="none"),
        "train": dict(lr=3e-3, batch_size=64, num_train=40_000, epochs=8, eval_every=50),
    },
    "tiny": {
        "description": "seconds; for tests and smoke checks",
        "model": dict(d_model=32, n_layers=2, n_heads=1, conv_kernel=4),
        "train": dict(lr=3e-3, batch_size=32, num_train=256, num_val=64, num_test=64, epochs=1, eval_every=4),
    },
    "zoology": {
        "description": "Zoology figure 2 protocol (2 layers, 1 head, no MLP, no convolution); GPU scale",
        "model": dict(d_model=64, n_layers=2, n_heads=1, conv_kernel=0, positions="learned"),
        "train": dict(lr=1e-3, batch_size=64, num_train=100_000, num_test=3_000, epochs=64, eval_every=1000),
    },
}


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


def parse_value(text: str, key: str = "") -> Any:
    """``--set`` values: JSON where it parses (numbers, true/false, null, lists), else the string.
    A value that starts like a JSON list, object or string must parse."""
    try:
        return json.loads(text)
    except (json.JSONDecodeError, ValueError) as exc:
        if text.lstrip()[:1] in ("[", "{", '"'):
            raise ConfigError(f"--set {key or text}: the value {text!r} is not valid JSON ({exc})") from None
        return text


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


def apply_overrides(sections: dict[str, dict], overrides: Iterable[str] | Mapping[str, Any], keys: dict[str, set[str]]) -> None:
    """Apply ``section.key=value`` (or an unambiguous bare ``key=value``) in place."""
    if isinstance(overrides, Mapping):
        items = list(overrides.items())
    else:  # command-line strings: parse the values
        items = [(k, parse_value(v, k)) for k, v in map(_split_assignment, overrides)]
    for key, value in items:
        section, _, name = key.rpartition(".")
        if section:
            if section not in SECTIONS:
                raise ConfigError(f"--set {key}: unknown section {section!r}; use one of {', '.join(SECTIONS)}")
            if not keys[section]:
                takes = [s for s in SECTIONS if keys[s]]
                raise ConfigError(f"--set {key}: this command takes no {section} settings, only "
                                  + "; ".join(f"{s}.{{{', '.join(sorted(keys[s]))}}}" for s in takes))
            if name not in keys[section]:
                raise ConfigError(f"--set {key}: unknown key {name!r} in section {section!r}; valid keys: "
                                  f"{', '.join(sorted(keys[section]))}")
        else:
            owners = [s for s in SECTIONS if name in keys[s]]
            if not owners:
                valid = ", ".join(f"{s}.{k}" for s in SECTIONS for k in sorted(keys[s]))
                raise ConfigError(f"--set {key}: unknown key; valid keys: {valid}")
            if len(owners) > 1:
                raise ConfigError(f"--set {key}: ambiguous, it is a key of {' and '.join(owners)}; "
                                  f"write {' or '.join(f'{s}.{name}' for s in owners)}")
            section = owners[0]
        sections[section][name] = value


def _split_assignment(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"--set {text!r}: expected KEY=VALUE, e.g. --set train.lr=0.001")
    return key.strip(), value.strip()


def resolve(task: str, model: str, *, preset: str = "default", overrides: Iterable[str] | Mapping[str, Any] = (),
            feature_map: str | None = None, seed: int = 0) -> dict:
    """Validated, canonical configuration: ``{"task": {...}, "model": {...}, "train": {...}, "seed": n}``.

    Raises ``ConfigError`` (naming the parameter and the allowed values) on any invalid input."""
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed <= MAX_SEED:
        raise ConfigError(f"--seed: must be an integer from 0 to {MAX_SEED}, got {seed!r}")
    task_cls, mixer_cls = _task_class(task), _mixer_class(model)
    if preset not in PRESETS and preset not in task_cls.presets:
        available = sorted(set(PRESETS) | set(task_cls.presets))
        raise ConfigError(f"--preset: unknown preset {preset!r} for task {task!r}; available: {', '.join(available)}")
    task_preset = dict(task_cls.presets.get(preset, {}))
    general = PRESETS[preset_base(task_cls, preset)]
    sections = {
        "task": task_preset,
        "model": dict(general.get("model", {})),
        "train": dict(general.get("train", {})),
    }
    if feature_map is not None:
        sections["model"]["feature_map"] = feature_map
    apply_overrides(sections, overrides, section_keys(task, model))
    if mixer_cls.uses_feature_map and sections["model"].get("feature_map") is None:
        # spelled out so the store and reports name it
        sections["model"]["feature_map"] = getattr(mixer_cls, "default_feature_map", "elu1")

    task_section, task_objs = _resolve_task(task, task_cls, sections["task"])
    seq_lens = [t.seq_len for t in task_objs["train"]]
    vocab = max(t.vocab_size for ts in task_objs.values() for t in ts)

    plugins, model = _plugin_files(sections["model"], model)
    try:
        spec = ModelSpec.parse({"name": model, **sections["model"]})  # the one place a model section is split
    except ValidationError as err:
        raise ConfigError(_format_validation("model", err)) from None
    backbone = spec.backbone
    if backbone.positions == "learned":
        if backbone.max_len is None:
            backbone = backbone.model_copy(update={"max_len": max(seq_lens)})
            spec = dataclasses.replace(spec, backbone=backbone)
        for i, t in enumerate(task_objs["eval"]):
            if t.seq_len > backbone.max_len:
                raise ConfigError(f"task.eval_segments[{i}]: length {t.seq_len} exceeds the model's {backbone.max_len} "
                                  f"learned positions; use model.positions=none to test length extrapolation "
                                  f"(the short convolution supplies order)")
        if max(seq_lens) > backbone.max_len:
            raise ConfigError(f"model.max_len: {backbone.max_len} is shorter than the training length {max(seq_lens)}")
    n_params = _check_model_builds(spec, vocab, mixer_cls)
    model_section = spec.section()
    model_cfg = spec.base

    try:
        train_cfg = TrainConfig(**sections["train"])
    except ValidationError as err:
        raise ConfigError(_format_validation("train", err)) from None
    if train_cfg.batch_size > train_cfg.num_train:
        raise ConfigError(f"train.batch_size: {train_cfg.batch_size} is more than the {train_cfg.num_train} training "
                          f"examples (train.num_train); each step could only use {train_cfg.num_train}")
    all_tasks = task_objs["train"] + task_objs["eval"]
    check_memory([(t, train_cfg.num_train + train_cfg.num_val + train_cfg.num_test) for t in task_objs["train"]]
                 + list(zip(task_objs["eval"], eval_sizes(task_section, train_cfg.num_test))),
                 what="sizes (train.num_*, task.seq_len, model.d_model, model.n_layers, train.batch_size)",
                 model_bytes=max(_model_bytes(n_params, train_cfg, model_cfg, max(t.seq_len for t in task_objs["train"])),
                                 _eval_bytes(n_params, model_cfg, max(t.seq_len for t in all_tasks))))

    _check_budget(train_cfg)
    config = {"task": task_section, "model": model_section, "train": train_cfg.model_dump(), "seed": seed}
    if plugins:
        config["plugins"] = plugins  # contents, not names: an edited file is a new run
    return config


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


def _check_budget(train: "TrainConfig") -> None:
    steps = train.epochs * max(1, train.num_train // train.batch_size)
    if steps > MAX_STEPS:
        raise ConfigError(f"train.epochs: {train.epochs:g} epochs of {train.num_train // train.batch_size} steps is "
                          f"{steps:.3g} steps; at most {MAX_STEPS:,} are allowed")


def available_memory() -> int:
    """Bytes this process may still allocate: MemAvailable, else free physical pages."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 1 << 62


def _model_bytes(n_params: int, train: "TrainConfig", model: "ModelConfig", seq_len: int) -> int:
    # weights, gradients, two AdamW moments and the best checkpoint; activations of one batch
    # (about 32 floats per width unit per layer per token, plus one T x T score matrix per head)
    activations = train.batch_size * seq_len * model.n_layers * (32 * model.d_model + 2 * model.n_heads * seq_len) * 4
    return 5 * 4 * n_params + activations


# tokens per evaluation batch: long test segments are evaluated a few examples at a time
EVAL_TOKENS = 2**18


def eval_batch_size(seq_len: int, cap: int = 256) -> int:
    return max(1, min(cap, EVAL_TOKENS // max(seq_len, 1)))


def _eval_bytes(n_params: int, model: "ModelConfig", seq_len: int) -> int:
    # no gradients: the weights and checkpoint, and one evaluation batch's activations (attention
    # runs through scaled_dot_product_attention, which does not keep T x T scores)
    tokens = eval_batch_size(seq_len) * seq_len
    return 2 * 4 * n_params + tokens * model.n_layers * 32 * model.d_model * 4


def check_memory(sets: list[tuple[Any, int]], *, what: str, model_bytes: int = 0) -> None:
    """Refuse (``ConfigError``, with the figures) data plus model that cannot fit in memory.
    ``sets``: ``(task, examples)``; each example takes inputs and targets of ``seq_len`` int64."""
    data = sum(3 * 8 * int(n) * t.seq_len for t, n in sets)
    gib = 2**30
    examples = sum(int(n) for _, n in sets)
    detail = f"{data / gib:,.1f} GiB for {examples:,} examples of length {max(t.seq_len for t, _ in sets):,}"
    if model_bytes:
        detail += f", {model_bytes / gib:,.1f} GiB for the model, its optimizer and activations"
    require_memory(data + model_bytes, what, detail)


def require_memory(need: int, what: str, detail: str) -> None:
    """``ConfigError`` naming ``what`` when ``need`` bytes exceed the memory available (unless
    ``$EVALSUITE_MEMORY_CHECK`` is ``off``)."""
    have = available_memory()
    if need <= have or os.environ.get(MEMORY_CHECK_ENV) == "off":
        return
    gib = 2**30
    raise ConfigError(f"{what}: needs about {need / gib:,.1f} GiB ({detail}) but {have / gib:,.1f} GiB is available; "
                      f"use smaller sizes, or set {MEMORY_CHECK_ENV}=off to try anyway")


def preset_base(task_cls, preset: str) -> str:
    """The global preset whose model and train settings a task preset runs with (no fallback)."""
    base = task_cls.preset_bases.get(preset, preset)
    if base not in PRESETS:
        raise ConfigError(f"--preset: task {task_cls.name!r} preset {preset!r} names no model and train settings: "
                          f"add it to {task_cls.__name__}.preset_bases (one of {', '.join(PRESETS)})")
    return base


def _resolve_task(name: str, task_cls, params: dict) -> tuple[dict, dict[str, list]]:
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
    objs = {"train": [base], "eval": []}
    for key, segs in (("segments", segments), ("eval_segments", eval_segments)):
        if segs is None:
            continue
        if not isinstance(segs, list) or not segs or not all(isinstance(s, dict) for s in segs):
            raise ConfigError(f"task.{key}: expected a non-empty list of parameter dicts, got {segs!r}")
        if len(segs) + (len(segments or []) if key == "eval_segments" else 0) > MAX_SEGMENTS:
            raise ConfigError(f"task.{key}: at most {MAX_SEGMENTS} segments (training and eval together), "
                              f"got {len(segs) + (len(segments or []) if key == 'eval_segments' else 0)}")
        canonical, built = [], []
        for i, seg in enumerate(segs):
            seg = dict(seg)
            share = seg.pop("share", 1.0)
            if key == "segments" and (not isinstance(share, (int, float)) or isinstance(share, bool)
                                      or not math.isfinite(share) or share <= 0):
                raise ConfigError(f"task.segments[{i}].share: must be a positive finite number, got {share!r}")
            extra = {"share": float(share)} if key == "segments" else {}
            if key == "eval_segments" and "num_test" in seg:  # this test set's size (long segments cost more)
                num_test = seg.pop("num_test")
                if not isinstance(num_test, int) or isinstance(num_test, bool) or not 1 <= num_test <= MAX_EXAMPLES:
                    raise ConfigError(f"task.eval_segments[{i}].num_test: must be an integer in [1, {MAX_EXAMPLES:,}], "
                                      f"got {num_test!r}")
                extra = {"num_test": num_test}
            t = build(f"task.{key}[{i}]", {**base.params.model_dump(), **seg})
            built.append(t)
            canonical.append({**t.params.model_dump(), **extra})
        section[key] = canonical
        objs["train" if key == "segments" else "eval"] = built
    return section, objs


def task_objects(task_section: dict) -> dict[str, list]:
    """Tasks of a canonical task section: ``train`` (with shares) and ``eval`` segments."""
    from evalsuite import tasks

    params = {k: v for k, v in task_section.items() if k not in ("name", "segments", "eval_segments")}
    name = task_section["name"]
    train = [(tasks.get(name, **params), 1.0)]
    if "segments" in task_section:
        train = [(tasks.get(name, **{k: v for k, v in s.items() if k != "share"}), s["share"])
                 for s in task_section["segments"]]
    return {"train": train, "eval": [tasks.get(name, **{k: v for k, v in s.items() if k != "num_test"})
                                     for s in task_section.get("eval_segments", [])]}


def eval_sizes(task_section: dict, num_test: int) -> list[int]:
    """Examples in each eval segment's test set: its own ``num_test``, else the run's."""
    return [s.get("num_test", num_test) for s in task_section.get("eval_segments", [])]


def resolve_task(task: str, *, preset: str = "default", overrides: Iterable[str] | Mapping[str, Any] = ()):
    """The task alone (for ``evalsuite sample``): ``(canonical task section, task object)``."""
    task_cls = _task_class(task)
    if preset not in task_cls.presets:
        raise ConfigError(f"--preset: task {task!r} has no preset {preset!r}; available: {', '.join(task_cls.presets)}")
    params = dict(task_cls.presets[preset])
    sections: dict[str, dict] = {"task": params, "model": {}, "train": {}}
    apply_overrides(sections, overrides, {"task": set(task_cls.Params.model_fields), "model": set(), "train": set()})
    section, objs = _resolve_task(task, task_cls, sections["task"])
    return section, objs["train"][0]


def _check_model_builds(spec: ModelSpec, vocab_size: int, mixer_cls) -> int:
    """Build the model without allocating memory to surface constraints (divisibility, maps);
    returns its number of parameters."""
    import torch

    fmap = spec.base.feature_map
    if fmap is not None and not mixer_cls.uses_feature_map:
        raise ConfigError(f"model.feature_map: model {spec.name!r} uses no feature map (got {fmap!r})")
    try:
        with torch.device("meta"):
            return spec.build(vocab_size).num_parameters()
    except UnknownName as exc:
        raise ConfigError(f"--feature-map: {exc}") from None
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"model: {exc}") from None


def build_model(model_section: dict, vocab_size: int):
    """The model of a canonical (stored) model section."""
    return ModelSpec.parse(model_section).build(vocab_size)


def canonical_json(config: dict) -> str:
    return json.dumps(config, sort_keys=True, separators=(",", ":"), default=str)


def run_id(config: dict) -> str:
    """Identity of a run: hash of the canonical config, which includes the seed."""
    return hashlib.sha256(canonical_json(config).encode()).hexdigest()[:16]
