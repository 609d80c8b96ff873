"""Running a configuration: train it, analyse it, persist it (the record first, then its weights).

"Run" is the one verb for that, at every layer: ``run_one`` runs one ``RunConfig`` against a store
(what ``evalsuite run`` does: the store's copy when it holds the run done), ``run_unit`` trains and
analyses one configuration or a group of them in a sweep's worker, whose driver then ``persist``s
each record. Training itself is ``evalsuite.train``'s (``train_one``, ``train_group``).
"""
from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import torch

from evalsuite import analysis
from evalsuite import environment, snapshots
from evalsuite.heartbeat import Heartbeat
from evalsuite.config import RunConfig
from evalsuite.errors import EvalsuiteError, Interrupted, UserError
from evalsuite.records import RunRecord, Status
from evalsuite.resolve import resolve
from evalsuite.persist import ingest_incoming, keep, persist
from evalsuite.store import Store, WeightsError
from evalsuite.store_file import StoreError
from evalsuite.train import Trained, make_data, train_group, train_one


def analyse(trained: Trained) -> None:
    """Sharpness, interference and error classes of the test set into ``metrics["analysis"]``;
    an analysis that fails is recorded there and never fails the run."""
    if not trained.record.ok or trained.model is None or trained.test is None:
        return
    begin = time.perf_counter()
    try:
        model = trained.model
        batch = trained.test[:analysis.ANALYSIS_EXAMPLES].to(next(model.parameters()).device)
        result = analysis.summary(model, batch.inputs, batch.targets, answers=batch.answers)
    except Exception as exc:  # noqa: BLE001 - recorded, the run's accuracy stands
        result = {"error": f"{type(exc).__name__}: {exc}"}
    trained.record.metrics["analysis"] = result
    trained.record.metrics["time_analysis_s"] = time.perf_counter() - begin


def run_unit(configs: list[RunConfig], device: torch.device, *, progress: bool | None = None,
             cache_dir=None, decide: bool = False) -> list[Trained]:
    """Train and analyse one configuration, or a group trained together (``train_group``; with
    ``decide``, only where a few timed steps say the batched step is faster); what a sweep's worker
    runs. Nothing is stored here: the driver persists the records."""
    if len(configs) == 1:
        out = [train_one(configs[0], device, progress=progress, cache_dir=cache_dir)]
    else:
        out = train_group(configs, device, progress=progress, cache_dir=cache_dir, decide=decide)
    env = environment.describe(device)
    for config, trained in zip(configs, out):
        analyse(trained)
        trained.record.env = {**env, "preset": config.preset} if config.preset else env  # how it was asked for
    return out


WAIT_POLL_S = 5.0  # how often a waiting `run` looks whether the other process finished
WAIT_MINUTES = 120.0  # the longest a `run --wait` waits by default


def run_one(config: RunConfig, *, device: str = "auto", store: Store | None = None, force: bool = False,
            progress: bool | None = None, wait: bool = False, echo=None, wait_minutes: float = WAIT_MINUTES) -> RunRecord:
    """Run ``config`` unless the store already holds it done (``force`` retrains); no store: no
    cache either. A run that another live process is training right now is never trained twice:
    with ``wait``, this waits for it (at most ``wait_minutes``; its holder's heartbeat said as it
    goes) and returns its record; else ``RunningElsewhere``. While it trains, its claim's heartbeat
    is refreshed, so that readers tell it from a dead claim whatever the pid."""
    dev = environment.resolve_device(device)
    if store is None:
        return run_unit([config], dev, progress=progress)[0].record
    if store.path.exists():
        ingest_incoming(store)  # a run or sweep that finished but could not record itself
    give_up = time.monotonic() + 60 * wait_minutes
    while True:
        if not force:
            row = store.get(config.run_id, with_history=True)
            if row is not None and row.ok:
                return row.model_copy(update={"cached": True})
        claims = store.claim({config.run_id: config.as_dict()}, environment.describe(dev), redo_done=force)
        if claims["claimed"]:
            break
        if claims["done"]:
            continue  # finished meanwhile: the store's copy
        holder = store.holder(config.run_id) or {}
        where = f"process {holder.get('pid')} on {holder.get('host')}"
        if not wait:
            raise RunningElsewhere(f"run {config.run_id} is being trained right now by {where} (store {store.path}); "
                                   f"pass --wait to wait for it and show its result")
        if time.monotonic() >= give_up:
            raise RunningElsewhere(f"--wait: gave up after {wait_minutes:g} min waiting for run {config.run_id}, still "
                                   f"trained by {where} (store {store.path}); --wait-minutes waits longer")
        if echo:
            beat = holder.get("heartbeat")
            echo(f"waiting for run {config.run_id}, which {where} is training (its claim refreshed "
                 + (f"{time.time() - beat:.0f} s ago" if beat else "at an unknown time")
                 + f"; at most {wait_minutes:g} min) ...")
            echo = None  # once
        time.sleep(WAIT_POLL_S)
        force = False  # what the other process trains is this configuration: its result is the answer
    snapshots.materialize(store, store.cache_dir, [config])  # a shorter run's snapshot, or its own checkpoint
    try:
        with Heartbeat(store, [config.run_id]):
            trained = run_unit([config], dev, progress=progress, cache_dir=store.cache_dir)[0]
    except (KeyboardInterrupt, Interrupted) as exc:
        store.interrupt([config.run_id], "interrupted by " + ("Ctrl-C" if isinstance(exc, KeyboardInterrupt) else "SIGTERM"))
        raise
    state = trained.model.state_dict() if trained.model is not None else None
    try:
        out = persist(store, trained.record, state)
        snapshots.absorb(store, store.cache_dir)
        snapshots.release(store, trained.record)
        return out
    except (sqlite3.Error, StoreError, OSError) as exc:  # disk full, locked: the trained result is kept
        where = keep(store, trained.record, state)
        acc = trained.record.metrics.get("accuracy")
        raise NotRecorded(f"the run finished ({trained.record.status.value}"
                          + (f", test accuracy {acc:.4f}" if acc is not None else "")
                          + f") but the store {store.path} could not record it ({exc}); its record and weights are "
                          f"kept in {where}, and the next evalsuite run or sweep on this store records them") from None


class NotRecorded(EvalsuiteError):
    """A run that finished but could not be recorded (kept in the crash journal)."""


class RunningElsewhere(UserError):
    """The run is held by another live process (``run_one`` without ``wait``)."""


def load_trained(store: Store, run_id: str):
    """``(config, model with its saved weights, test batch)`` of a finished run, for analysis."""
    row = store.get(run_id)
    if row is None:
        raise KeyError(f"no run {run_id!r} in {store.path}")
    if not row.ok:
        reason = row.first_error_line(120)
        raise KeyError(f"run {run_id} is {row.status}" + (f" ({reason})" if reason else "")
                       + "; only finished runs have weights to analyse")
    config = RunConfig.from_dict(row.config)
    data, _ = make_data(config.task, config.train, config.seed, splits=("test",), cache_dir=store.cache_dir)
    model = config.model.build(config.task.vocab_size)
    state = store.load_weights(row.run_id, row.metrics.get("weights_sha256"))
    try:
        model.load_state_dict(state)
    except (RuntimeError, KeyError, TypeError) as exc:  # wrong shapes or keys: another model's weights
        first = str(exc).strip().splitlines()[0]
        raise WeightsError(f"weights file {store.weights_path(row.run_id)} does not fit run {run_id}'s model "
                           f"({first[:160]})") from None
    return row.config, model.eval(), data["test"]


def run(task: str, model: str, *, preset: str = "default", seed: int = 0, feature_map: str | None = None,
        device: str = "auto", store: str | Path | None | bool = None, force: bool = False,
        progress: bool | None = False, **overrides: Any) -> RunRecord:
    """Train and evaluate ``model`` on ``task``; ``record.metrics["accuracy"]`` is the test accuracy.

    ``overrides`` are config keys, bare (``lr=3e-3``) when unambiguous or dotted through a dict
    (``**{"train.lr": 3e-3}``). ``store``: a path, ``None`` for the default store, ``False`` for none.
    """
    config = resolve(task, model, preset=preset, overrides=overrides, feature_map=feature_map, seed=seed)
    environment.resolve_device(device)  # refuse a bad device before anything is written
    target = None if store is False else Store(None if store in (None, True) else store)
    return run_one(config, device=device, store=target, force=force, progress=progress)


__all__ = ["Status", "analyse", "load_trained", "persist", "run", "run_one", "run_unit"]
