"""`evalsuite list`: tasks, models, feature maps and presets, with their parameters."""
from __future__ import annotations

import re

import click

from evalsuite.cli.app import main


LISTABLE = ("tasks", "models", "feature-maps", "presets")


@main.command(name="list")
@click.argument("what", required=False, type=click.Choice(LISTABLE))
def list_(what):
    """List tasks, models, feature maps or presets (all of them when WHAT is omitted)."""
    for kind in ([what] if what else LISTABLE):
        click.echo(f"{kind}:")
        for line in _listing(kind):
            click.echo(f"  {line}")


def _fields(model_cls) -> str:
    return ", ".join(f"{name}={f.get_default(call_default_factory=True)!r}" for name, f in model_cls.model_fields.items())


def _preset_fields(task_cls) -> str:
    """The parameters a run gets with no --preset: the default preset's values over the
    generator's defaults (what `evalsuite run --task NAME` trains on), the preset's own marked *."""
    preset = task_cls.presets.get("default", {})
    parts = []
    for name, f in task_cls.Params.model_fields.items():
        value = preset[name] if name in preset else f.get_default(call_default_factory=True)
        parts.append(f"{name}={value!r}" + ("*" if name in preset else ""))
    extra = [k for k in preset if k not in task_cls.Params.model_fields]  # segments, eval_segments
    return ", ".join(parts + [f"{k}=...*" for k in extra]) + ("  (* set by the default preset)" if preset else "")


def _first_line(obj, width: int = 100) -> str:
    """The docstring's first sentence (or paragraph), on one line."""
    paragraph = " ".join((obj.__doc__ or "").strip().split("\n\n")[0].split())
    sentence = re.split(r"\.\s+(?=[A-Z`])", paragraph)[0].rstrip(".")  # not at "et al. 2021"
    return sentence if len(sentence) <= width else sentence[:width - 3] + "..."


def _map_options(cls) -> str:
    from evalsuite.models.feature_maps import map_options

    shown = [f"{name}={default!r}" for name, default in map_options(cls).items()]
    return f"\n{'':<17}options: {', '.join(shown)}" if shown else ""


def _listing(kind: str) -> list[str]:
    from evalsuite.config import PRESETS
    from evalsuite import models, tasks
    from evalsuite.models import feature_maps

    if kind == "tasks":
        return [f"{name:<14} {cls.description}\n{'':<17}params (default preset): {_preset_fields(cls)}\n"
                f"{'':<17}presets: {', '.join(cls.presets) or '-'}" for name, cls in tasks.TASKS.items()]
    if kind == "models":
        return [f"{name:<14} {_first_line(cls)}"
                + (f"\n{'':<17}options: {_fields(cls.Options)}" if cls.Options.model_fields else "")
                for name, cls in models.MODELS.items()]
    if kind == "feature-maps":
        return [f"{name:<14} {_first_line(cls)}{_map_options(cls)}"
                for name, cls in feature_maps.FEATURE_MAPS.items()]
    return [f"{name:<14} {p['description']}" for name, p in PRESETS.items()]
