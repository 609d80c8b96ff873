"""One run end to end: validate, look up the store, train, analyse, persist (metrics first).

The same steps serve a single ``evalsuite run`` (``execute``) and a sweep's workers
(``train_and_analyse`` or ``train_and_analyse_unit`` in the worker, ``persist`` in the driver), so a run is saved one way.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

from evalsuite import analysis
from evalsuite import config as cfg
from evalsuite import environment
from evalsuite.errors import Interrupted
from evalsuite.records import RunRecord, Status
from evalsuite.store import Store
from evalsuite.train import Trained, make_data, train_run


def analyse(trained: Trained) -> None:
    """Sharpness, interference and error classes of the test set into ``metrics["analysis"]``;
    an analysis that fails is recorded there and never fails the run."""
    if not trained.record.ok or trained.model is None or trained.test is None:
        return
    try:
        model = trained.model
        batch = trained.test[:analysis.ANALYSIS_EXAMPLES].to(next(model.parameters()).device)
        result = analysis.summary(model, batch.inputs, batch.targets, answers=batch.answers)
    except Exception as exc:  # noqa: BLE001 - recorded, the run's accuracy stands
        result = {"error": f"{type(exc).__name__}: {exc}"}
    trained.record.metrics["analysis"] = result


def train_and_analyse(config: dict, device: torch.device, *, progress: bool | None = None,
                      cache_dir=None) -> Trained:
    trained = train_run(config, device, progress=progress, cache_dir=cache_dir)
    analyse(trained)
    trained.record.env = environment.describe(device)
    return trained


def train_and_analyse_unit(configs: list[dict], device: torch.device, *, progress: bool | None = None,
                           cache_dir=None) -> list[Trained]:
    """A sweep worker's unit: one run, or a group trained together (``train_group``)."""
    if len(configs) == 1:
        return [train_and_analyse(configs[0], device, progress=progress, cache_dir=cache_dir)]
    from evalsuite.train_group import train_group

    env = environment.describe(device)
    out = train_group(configs, device, progress=progress, cache_dir=cache_dir)
    for trained in out:
        analyse(trained)
        trained.record.env = env
    return out


def execute(config: dict, *, device: str = "auto", store: Store | None = None, force: bool = False,
            progress: bool | None = None) -> RunRecord:
    """Train ``config`` unless the store already holds it done (``force`` retrains)."""
    dev = environment.resolve_device(device)
    run_id = cfg.run_id(config)
    if store is None:
        return train_and_analyse(config, dev, progress=progress).record  # no store: no cache either
    if not force:
        row = store.get(run_id, with_history=True)
        if row is not None and row.ok:
            return row.model_copy(update={"cached": True})
    store.start(run_id, config, environment.describe(dev))
    try:
        trained = train_and_analyse(config, dev, progress=progress, cache_dir=store.cache_dir)
    except (KeyboardInterrupt, Interrupted) as exc:
        store.interrupt([run_id], "interrupted by " + ("Ctrl-C" if isinstance(exc, KeyboardInterrupt) else "SIGTERM"))
        raise
    return persist(store, trained.record, trained.model.state_dict() if trained.model is not None else None)


def persist(store: Store, record: RunRecord, weights: dict | Path | None) -> RunRecord:
    """Record a finished run: the record first, then its weights (a state dict, or a file a worker
    wrote to move into place). A weights failure is a warning on a done run, never a lost run."""
    store.finish(record)
    if record.ok and weights is not None:
        try:
            if isinstance(weights, Path):
                target = store.weights_path(record.run_id)
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(weights, target)
            else:
                store.save_weights(record.run_id, weights)  # for `evalsuite analyze --run`
        except OSError as exc:
            message = f"weights not saved ({exc}); `evalsuite analyze --run` needs them: rerun with --force"
            store.warn(record.run_id, message)
            record.warnings.append(message)
    return record


def load_trained(store: Store, run_id: str):
    """``(config, model with its saved weights, test batch)`` of a finished run, for analysis."""
    row = store.get(run_id)
    if row is None:
        raise KeyError(f"no run {run_id!r} in {store.path}")
    if not row.ok:
        reason = row.first_error_line(120)
        raise KeyError(f"run {run_id} is {row.status}" + (f" ({reason})" if reason else "")
                       + "; only finished runs have weights to analyse")
    config = row.config
    data, _, tasks_ = make_data(config["task"], cfg.TrainConfig(**config["train"]), config["seed"], splits=("test",),
                                cache_dir=store.cache_dir)
    model = cfg.build_model(config["model"], max(t.vocab_size for t in tasks_))
    model.load_state_dict(store.load_weights(row.run_id))
    return config, model.eval(), data["test"]


def run(task: str, model: str, *, preset: str = "default", seed: int = 0, feature_map: str | None = None,
        device: str = "auto", store: str | Path | None | bool = None, force: bool = False,
        progress: bool | None = False, **overrides: Any) -> RunRecord:
    """Train and evaluate ``model`` on ``task``; ``record.metrics["accuracy"]`` is the test accuracy.

    ``overrides`` are config keys, bare (``lr=3e-3``) when unambiguous or dotted through a dict
    (``**{"train.lr": 3e-3}``). ``store``: a path, ``None`` for the default store, ``False`` for none.
    """
    config = cfg.resolve(task, model, preset=preset, overrides=overrides, feature_map=feature_map, seed=seed)
    environment.resolve_device(device)  # refuse a bad device before anything is written
    target = None if store is False else Store(None if store in (None, True) else store)
    return execute(config, device=device, store=target, force=force, progress=progress)


__all__ = ["Status", "analyse", "execute", "load_trained", "persist", "run", "train_and_analyse", "train_and_analyse_unit"]
