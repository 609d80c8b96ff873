"""How models are named for people (plot lines, tables, verdict figures): one place.

Labels are for reading only. Code that selects runs compares config fields
(``reproduce_rules.matches``), never label text, so a change of format here cannot change a verdict.
"""
from __future__ import annotations

from typing import Any


def plugin_label(ref: str, plugins: dict[str, str] | None = None) -> str:
    """A ``file.py:Attr`` plug-in as people read it: its attribute and the first 7 hex digits of its
    file's SHA-256 (``ExpMap@3f2a1bc``), never its path: the same file in another folder is the same
    plug-in, an edited one another (a label made one run at a time cannot know whether another
    content shares the name, so the hash is always there). A module reference (``pkg.mod:Attr``) is
    named by its attribute."""
    path, _, attr = ref.rpartition(":")
    digest = (plugins or {}).get(path)
    return f"{attr}@{digest[:7]}" if digest else attr


def _is_ref(name: object) -> bool:
    return isinstance(name, str) and ":" in name


def feature_map_label(name: str | None, options: dict[str, Any] | None = None, plugins: dict[str, str] | None = None) -> str:
    """``elu1``, ``dpfp(nu=2)``, ``ExpMap@3f2a1bc``: a feature map and its options."""
    label = plugin_label(name, plugins) if _is_ref(name) else (name or "elu1")
    if options:
        label += "(" + ",".join(f"{k}={v}" for k, v in sorted(options.items())) + ")"
    return label


def model_label(config: dict) -> str:
    """A run's model: ``softmax``, ``linear/dpfp(nu=2)``, ``hybrid/elu1[SL]``, ``gla[scalar]``, ``delta+gate``,
    ``softmax+rope`` (sinusoidal, rotary and xPos positions are named; learned and none are not)."""
    model, plugins = config["model"], config.get("plugins")
    label = plugin_label(model["name"], plugins) if _is_ref(model["name"]) else model["name"]
    if model.get("feature_map"):
        label += "/" + feature_map_label(model["feature_map"], model.get("feature_map_options"), plugins)
    if model["name"] == "hybrid":
        label += f"[{model.get('ratio') or model.get('pattern')}]"
    if model.get("gate"):  # gla: fixed (RetNet), scalar (Mamba-2), vector (GLA)
        label += f"[{model['gate']}]"
    if model.get("gated"):
        label += "+gate"
    if model.get("positions") in ("sinusoidal", "rope", "xpos"):  # the encodings a label must not hide
        label += f"+{model['positions']}"
    if model.get("value_dim"):  # the state's sides, where the value side is set apart from the width
        label += f" (d_k {model.get('feature_dim') or 'head'}, d_v {model['value_dim']})"
    return label


def memory_label(memory: str, feature_map: str | None = None, options: dict[str, Any] | None = None) -> str:
    """A capacity probe's memory: ``softmax``, ``delta``, ``linear/elu1``, ``linear/dpfp(nu=2)``."""
    return memory if memory != "linear" else "linear/" + feature_map_label(feature_map, options)


def mixture(task: dict) -> dict | None:
    """A run trained on a mixture of task shapes (``task.segments`` of more than one length or pair
    count): the ranges it was trained over, ``{"T": "8-128", "D": "2-32"}``; None for one shape.
    Such a run's top-level ``seq_len`` and ``num_kv_pairs`` describe none of its training, so a
    table or plot must not show them as its setting."""
    segments = task.get("segments") or []
    shapes = {(s.get("seq_len", task.get("seq_len")), s.get("num_kv_pairs", task.get("num_kv_pairs"))) for s in segments}
    if len(shapes) < 2:
        return None

    def span(values):
        values = sorted(v for v in values if v is not None)
        return "n/a" if not values else f"{values[0]:g}" if values[0] == values[-1] else f"{values[0]:g}-{values[-1]:g}"

    return {"T": span(T for T, _ in shapes), "D": span(D for _, D in shapes)}
