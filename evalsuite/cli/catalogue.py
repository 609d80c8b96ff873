"""What `evalsuite list` prints, kept in a file beside the code it describes (``catalogue.json``),
so that listing imports no torch: the task, model and feature-map classes live in modules that
import it (about 1.4 s on the 2-core machine), and the listing is only their names, parameters and
first docstring lines.

The file records the SHA-256 of the sources it was made from (``SOURCES``). It is read only when
those sources are unchanged and no installed package adds entries (the ``evalsuite.plugins``
entry points); otherwise `list` imports the classes and lists them live. Regenerate it after
changing a task, a model, a feature map or a preset:

    python -m evalsuite.cli.catalogue

(a test compares it with the live listing, so a stale file fails the suite, not a user).
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import re
from pathlib import Path

PATH = Path(__file__).with_name("catalogue.json")
KINDS = ("tasks", "models", "feature-maps", "presets")


def _package_dir(name: str) -> Path:
    """A subpackage's folder, found without running it (its ``__init__`` would import torch)."""
    spec = importlib.util.find_spec(name)
    return Path(next(iter(spec.submodule_search_locations)))


def sources() -> list[Path]:
    """The files whose contents decide the listing: every module of the tasks and models packages,
    the presets and the listing's own formatting (this file)."""
    root = Path(__file__).parents[1]
    files = [p for pkg in ("evalsuite.tasks", "evalsuite.models") for p in sorted(_package_dir(pkg).glob("*.py"))]
    return files + [root / "config.py", root / "params.py", Path(__file__)]


def fingerprint() -> str:
    h = hashlib.sha256()
    for path in sources():
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def _plugins_installed() -> bool:
    from importlib.metadata import entry_points

    from evalsuite.registry import ENTRY_POINT_GROUP

    return bool(list(entry_points(group=ENTRY_POINT_GROUP)))


def read() -> dict[str, list[str]] | None:
    """The listing from the file, or None where it may not say what a live one would: no file, a
    source changed since it was made, or an installed plug-in package adds entries."""
    try:
        data = json.loads(PATH.read_text())
    except (OSError, ValueError):
        return None
    if data.get("sources") != fingerprint() or _plugins_installed():
        return None
    listing = data.get("listing")
    return listing if isinstance(listing, dict) and set(listing) == set(KINDS) else None


def live() -> dict[str, list[str]]:
    return {kind: live_listing(kind) for kind in KINDS}


def write(path: Path = PATH) -> Path:
    path.write_text(json.dumps({"sources": fingerprint(), "listing": live()}, indent=1) + "\n")
    return path


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


def live_listing(kind: str) -> list[str]:
    """What `list` prints for ``kind``, from the registered classes themselves (``catalogue`` keeps a copy)."""
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


if __name__ == "__main__":
    print(f"wrote {write()}")
