"""Score one map: train and measure it (``measure``), its MQAR runs through the store (a second call
reads them back instead of training), into one ``Card``."""
from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

from .card import Card
from . import measure


def describe(ref: str | None) -> tuple[str, str, dict]:
    """(label, identity, the MQAR point's stored configuration) of a map reference (None: softmax):
    a plug-in is named by its class and a short hash of its file's contents (``labels``)."""
    from evalsuite.labels import feature_map_label

    config = measure.mqar_configs(ref, seeds=(0,), rates=measure.MQAR_RATES[:1])[0].as_dict()
    if ref is None:
        return "softmax", "softmax", config
    plugins = config.get("plugins") or {}
    fmap = config["model"]["feature_map"]
    path, _, attr = fmap.rpartition(":")
    identity = f"{attr}@{plugins[path]}" if path in plugins else fmap
    return feature_map_label(fmap, plugins=plugins), identity, config


def cache_path(ref, store, quick: bool) -> Path:
    """Where a map's scorecard is kept beside the store: named by the map's identity (a plug-in's
    contents), the size, and ``measure.VERSION`` (raised when a measurement changes)."""
    key = json.dumps([describe(ref)[1], quick, measure.VERSION])
    return Path(store.cache_dir) / "scorecards" / f"{hashlib.sha256(key.encode()).hexdigest()[:16]}.json"


def cached(ref, store, quick: bool = False) -> Card | None:
    """The stored scorecard of ``ref`` at this size, or None."""
    path = cache_path(ref, store, quick)
    try:
        return Card.model_validate_json(path.read_text())
    except (OSError, ValueError):
        return None


def mqar_runs(ref, store, *, quick: bool, workers: int, device: str, echo) -> list:
    """Seed 0 at both rates, then seeds 1 and 2 at the rate it validates best at (stored runs are
    read back, not trained again). Returns the finished records."""
    from evalsuite.sweep import Point, run_points

    def run(configs, name):
        points = [Point({"lr": c.train.lr, "seed": c.seed}, c) for c in configs]
        run_points(points, name=name, spec={"scorecard": ref or "softmax"}, store=store, workers=workers,
                   device=device, echo=echo)
        return [r for r in store.runs([p.run_id for p in points]) if r.status == "done"]

    label = ref or "softmax"
    first = run(measure.mqar_configs(ref, seeds=(0,), quick=quick), f"scorecard {label}: seed 0 at both rates")
    lr = measure.chosen_rate(first)
    if lr is None or quick:
        return first
    rest = run(measure.mqar_configs(ref, seeds=measure.SEEDS[1:], rates=(lr,)), f"scorecard {label}: seeds 1, 2 at lr {lr:g}")
    return first + rest


def score(ref: str | None, store, *, quick: bool = False, workers: int = 1, device: str = "auto", echo=print,
          elu1_seconds: float | None = None) -> Card:
    """Every figure of ``ref``'s scorecard (``ref`` None: softmax, which has no probe memory)."""
    from evalsuite.environment import resolve_device

    start = time.perf_counter()
    device = str(resolve_device(device))  # "auto": CUDA where present; the probes and timings run there too
    label, identity, config = describe(ref)
    figures = []
    if ref is not None:
        echo(f"{label}: capacity probes at (d_k, d_v) = {', '.join(str(s) for s in measure.SIZES)}")
        figures += measure.probe_figures(ref, quick=quick, echo=echo, device=device)
    echo(f"{label}: MQAR where the state binds (d_k = d_v = {measure.MQAR_STATE}, two layers, read at D = "
         f"{', '.join(str(d) for d in measure.MQAR_READ)})")
    runs = mqar_runs(ref, store, quick=quick, workers=workers, device=device, echo=echo)
    figures += measure.mqar_figures(runs, quick=quick)
    echo(f"{label}: sharpness and cost")
    figures += measure.sharpness_figures(ref)
    figures += measure.cost_figures(ref, elu1_seconds, seeds=measure.SEEDS[:1] if quick else measure.SEEDS,
                                    device=device)
    card = Card(label=label, ref=ref or "softmax", identity=identity, kind="softmax" if ref is None else "linear",
                quick=quick, settings={"mqar": {k: v for k, v in config.items() if k not in ("seed", "plugins")},
                                       "probe_sizes": [list(s) for s in measure.SIZES], "seeds": list(measure.SEEDS)},
                figures=figures, run_ids=[r.run_id for r in runs], seconds=round(time.perf_counter() - start, 1))
    from evalsuite.files import write_text

    path = cache_path(ref, store, quick)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, card.model_dump_json(indent=1))
    return card
