"""One run end to end: validate, look up the store, train, record."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from evalsuite import config as cfg
from evalsuite import environment
from evalsuite.errors import Interrupted
from evalsuite.store import Store
from evalsuite.train import RunResult, train_run


def execute(config: dict, *, device: str = "auto", store: Store | None = None, force: bool = False,
            progress: bool | None = None) -> RunResult:
    """Train ``config`` unless the store already holds it done (``force`` retrains)."""
    dev = environment.resolve_device(device)
    run_id = cfg.run_id(config)
    if store is not None and not force:
        row = store.get(run_id)
        if row is not None and row["status"] == "done":
            return RunResult(run_id=run_id, config=row["config"], status="done", metrics=row["metrics"],
                             env=row["env"], history=store.history(run_id).to_dict("records"), cached=True,
                             warnings=row["warnings"])
    env = environment.describe(dev)
    if store is None:
        result = train_run(config, dev, progress=progress)  # no store: no cache either
        result.env = env
        return result
    store.start(run_id, config, env)
    try:
        result = train_run(config, dev, progress=progress, cache_dir=store.cache_dir)
    except (KeyboardInterrupt, Interrupted) as exc:
        store.interrupt([run_id], "interrupted by " + ("Ctrl-C" if isinstance(exc, KeyboardInterrupt) else "SIGTERM"))
        raise
    result.env = env
    persist(store, result)
    return result


def persist(store: Store, result: RunResult) -> None:
    """Metrics first; then the weights, whose failure is a warning on a finished run, not a lost run."""
    store.finish(result.run_id, result.status, result.metrics, result.error, result.history)
    if result.ok and result.model is not None:
        try:
            store.save_weights(result.run_id, result.model.state_dict())  # for `evalsuite analyze --run`
        except OSError as exc:
            message = f"weights not saved ({exc}); `evalsuite analyze --run` needs them: rerun with --force"
            store.warn(result.run_id, message)
            result.warnings.append(message)


def run(task: str, model: str, *, preset: str = "default", seed: int = 0, feature_map: str | None = None,
        device: str = "auto", store: str | Path | None | bool = None, force: bool = False,
        progress: bool | None = False, **overrides: Any) -> RunResult:
    """Train and evaluate ``model`` on ``task``; ``result.metrics["accuracy"]`` is the test accuracy.

    ``overrides`` are config keys, bare (``lr=3e-3``) when unambiguous or dotted through a dict
    (``**{"train.lr": 3e-3}``). ``store``: a path, ``None`` for the default store, ``False`` for none.
    """
    config = cfg.resolve(task, model, preset=preset, overrides=overrides, feature_map=feature_map, seed=seed)
    environment.resolve_device(device)  # refuse a bad device before anything is written
    target = None if store is False else Store(None if store in (None, True) else store)
    return execute(config, device=device, store=target, force=force, progress=progress)
