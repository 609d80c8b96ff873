"""Sweeps: a spec file -> validated points -> an executor -> the store, resumable by run id.

A spec (YAML or TOML)::

    name: mqar-cpu                       # optional; shown in --status and reports
    base: {task: recall, model: linear, preset: default}
    grid:                                # the product of every axis
      model: [softmax, linear, delta]
      train.lr: [0.001, 0.003]
    points:                              # optional explicit points, each merged over base (+ grid)
      - {model: hybrid, model.pattern: LS}
    base_point: true                     # with no grid, the base alone is a run too (false: only the points)
    seeds: [0, 1]
    set: {train.epochs: 1}               # overrides applied to every point

An axis is ``task``, ``model``, ``feature_map``, ``preset``, or any config key (``task.seq_len``,
``model.d_model``, ``train.lr``, or a bare key when unambiguous); a joint axis names several keys
that move together: ``"task.seq_len,task.num_kv_pairs": [[64, 4], [128, 8]]``. Every point is validated before
the first run starts. The driver is the only process that writes the store; workers also drop
each finished result into ``<store dir>/incoming/`` (written then renamed), which the driver
ingests, so a killed driver loses nothing.
"""
from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from evalsuite.config import RunConfig
from evalsuite.errors import ConfigError, Interrupted, UserError
from evalsuite.persist import incoming_dir, ingest_incoming, record  # noqa: F401 - part of this module's interface
from evalsuite.records import RunRecord, Status, floor_of
from evalsuite.resolve import resolve
from evalsuite.sweep_spec import SweepError, SweepSpec, load_spec  # noqa: F401 - part of this module's interface
from evalsuite import snapshots
from evalsuite.heartbeat import Heartbeat
from evalsuite.segments import HELD_BACK
from evalsuite.store import Store

NAMED_AXES = ("task", "model", "feature_map", "preset")


@dataclass
class Point:
    axes: dict[str, Any]          # the values that make this point (for messages and reports)
    config: RunConfig             # validated

    @property
    def run_id(self) -> str:
        return self.config.run_id


def _resolve_point(values: dict[str, Any], seed: int) -> RunConfig:
    named = {k: values[k] for k in NAMED_AXES if k in values}
    overrides = {k: v for k, v in values.items() if k not in NAMED_AXES}
    if "task" not in named or "model" not in named:
        raise ConfigError("every point needs a task and a model (in base, grid or points)")
    return resolve(named["task"], named["model"], preset=named.get("preset", "default"),
                       feature_map=named.get("feature_map"), overrides=overrides, seed=seed)


def expand(spec: SweepSpec) -> list[Point]:
    """Every point of the spec (grid product, then explicit points, times seeds), validated.
    Raises ``SweepError`` listing every invalid point with its axis values; duplicates collapse."""
    axes = list(spec.grid)
    combos = [dict(zip(axes, values)) for values in itertools.product(*(spec.grid[a] for a in axes))]
    raw = [_split_joint(c) for c in combos] if (axes or spec.base_point or not spec.points) else []
    raw += [_split_joint(dict(p)) for p in spec.points]
    points, errors, seen = [], [], set()
    total = len(raw) * len(spec.seeds)
    # a few ms a point: show progress on a terminal when validation takes more than a few seconds
    bar = tqdm(total=total, desc="validating points", disable=None if total > 500 else True, leave=False)
    for values in raw:
        for seed in spec.seeds:
            merged = {**spec.base, **spec.set, **values}
            shown = {**values, "seed": seed}
            bar.update(1)
            try:
                point = Point(shown, _resolve_point(merged, seed))
            except UserError as exc:
                errors.append(f"  {describe(shown)}: {exc}")
                continue
            if point.run_id not in seen:
                seen.add(point.run_id)
                points.append(point)
    bar.close()
    if errors:
        raise SweepError(f"{len(errors)} of {len(raw) * len(spec.seeds)} points are invalid; nothing was run:\n"
                         + "\n".join(errors[:20]) + ("\n  ..." if len(errors) > 20 else ""))
    return points


def _split_joint(values: dict) -> dict:
    """A joint axis ``"task.seq_len,task.num_kv_pairs": [[64, 4], [128, 8]]`` moves its keys together."""
    out = {}
    for key, value in values.items():
        if "," not in key:
            out[key] = value
            continue
        names = [k.strip() for k in key.split(",")]
        if not isinstance(value, (list, tuple)) or len(value) != len(names):
            raise SweepError(f"joint axis {key!r}: each value must be a list of {len(names)} items, got {value!r}")
        out.update(zip(names, value))
    return out


def describe(values: dict) -> str:
    """A point's swept values, one line: ``model=delta, train.lr=0.003``; a list of segments as the
    shapes it spans (``task.segments=5 segments: T 8-128, D 2-32``), not its dicts."""
    return ", ".join(f"{k}={_short(v)}" for k, v in values.items()) or "(base)"


def _short(value) -> str:
    if isinstance(value, list) and value and all(isinstance(x, dict) for x in value):
        from evalsuite.labels import mixture

        span = mixture({"segments": value})
        extra = sorted({f"{k} {x[k]}" for x in value for k in x if k not in ("seq_len", "num_kv_pairs", "share")})
        return (f"{len(value)} segments" + (f": T {span['T']}, D {span['D']}" if span else "")
                + (f" ({', '.join(extra)})" if extra else ""))
    return str(value)


def sweep_id(points: list[Point]) -> str:
    return hashlib.sha256(",".join(sorted(p.run_id for p in points)).encode()).hexdigest()[:12]


@dataclass
class PointStates:
    """A sweep's points by how their runs stand: done; running (by a live process, another sweep or
    run); interrupted (interrupted, or stale: started by a process that is gone); failed (failed or
    diverged); left (never started)."""

    done: list[Point] = field(default_factory=list)
    running: list[Point] = field(default_factory=list)
    interrupted: list[Point] = field(default_factory=list)
    failed: list[Point] = field(default_factory=list)
    left: list[Point] = field(default_factory=list)

    def counts(self) -> str:
        return ", ".join(f"{len(getattr(self, k))} {k}" for k in ("done", "running", "interrupted", "failed", "left"))


def status(points: list[Point], store: Store) -> PointStates:
    """Points by state (``PointStates``). A sweep reruns interrupted and left points (failed ones on
    request)."""
    rows = {r["run_id"]: r for r in store.statuses([p.run_id for p in points])} if store.path.exists() else {}
    out = PointStates()
    for p in points:
        row = rows.get(p.run_id) or {}
        s = row.get("status")
        if s is Status.RUNNING and row.get("pid") == os.getpid():
            s = Status.STALE  # started by this very process, which is not running it now
        group = (out.left if s is None else out.done if s is Status.DONE else out.running if s is Status.RUNNING
                 else out.interrupted if s.unfinished else out.failed)
        group.append(p)
    return out


def run_sweep(spec_path: str | os.PathLike | SweepSpec, *, store: Store, executor: str = "local", workers: int | None = None,
              device: str = "auto", retry_failed: bool = False, address: str | None = None, threads: int | None = None,
              group: str = "auto", echo=print) -> dict:
    """Validate every point, skip those done, run the rest, record each result as it arrives."""
    spec = spec_path if isinstance(spec_path, SweepSpec) else load_spec(spec_path)
    name = spec.name or Path(spec_path).stem
    return run_points(expand(spec), name=name, spec=spec.model_dump(), store=store, executor=executor, workers=workers,
                      device=device, retry_failed=retry_failed, address=address, threads=threads, group=group, echo=echo)


def run_points(points: list[Point], *, name: str, spec: dict, store: Store, executor: str = "local",
               workers: int | None = None, device: str = "auto", retry_failed: bool = False, address: str | None = None,
               threads: int | None = None, group: str = "auto", echo=print, sid: str | None = None,
               deadline: float | None = None) -> dict:
    """``group``: auto, on or off: train points that differ only in learning rate and seed together
    (``executors.grouping``). ``deadline`` (``time.monotonic()``, local executor): no run starts
    after it, nor one whose configuration's finished runs say it would not end by then
    (``expected_seconds``; a run with none starts until the deadline); a run in flight at the deadline
    saves its checkpoint and stops (``train.loop``: the workers get it as ``EVALSUITE_DEADLINE``), and
    it and those never started are recorded interrupted, so the next invocation resumes them (a
    segment of a long reproduction)."""
    from evalsuite.executors import get_executor

    runner = get_executor(executor, workers=workers, device=device, address=address, threads=threads,
                          group=group)  # refuse bad options first
    if executor == "local" and getattr(runner, "workers", 1) > 1:
        _check_workers(points, runner.workers)
    sid = sid or sweep_id(points)
    store.add_sweep(sid, name, spec, [p.run_id for p in points])
    recovered = ingest_incoming(store)
    state = status(points, store)
    todo = state.left + state.interrupted + (state.failed if retry_failed else [])
    echo(f"sweep {name} ({sid}): {len(points)} runs; {len(state.done)} done"
         + (f" ({recovered} recovered from incoming/)" if recovered else "")
         + (f", {len(state.running)} running in another live process (skipped; rerun the sweep after it ends)"
            if state.running else "")
         + (f", {len(state.interrupted)} interrupted or stale (run again)" if state.interrupted else "")
         + (f", {len(state.failed)} failed (--retry-failed reruns them)" if state.failed and not retry_failed else "")
         + f", {len(todo)} to run")
    if not todo:
        return {"sweep_id": sid, "points": len(points), "ran": 0, "failed": 0}
    if deadline is not None and time.monotonic() >= deadline:
        echo(f"sweep {name}: the segment is over; {len(todo)} runs left for the next invocation")
        return {"sweep_id": sid, "points": len(points), "ran": 0, "failed": 0, "left": len(todo)}
    if hasattr(runner, "connect"):
        runner.connect()  # a cluster is joined before any point is claimed: nothing left running if it fails
    claims = store.claim({p.run_id: p.config.as_dict() for p in todo}, redo_done=False)
    if claims["held"] or claims["done"]:  # another driver took them between the status read and now
        echo(f"sweep {name}: {len(claims['held'])} runs were claimed by another live process and "
             f"{len(claims['done'])} finished meanwhile; skipped")
    mine = set(claims["claimed"])
    todo = [p for p in todo if p.run_id in mine]
    if not todo:
        return {"sweep_id": sid, "points": len(points), "ran": 0, "failed": 0}
    progress = Progress(len(todo), echo, {p.run_id: describe(p.axes) for p in todo})
    failed, finished = 0, set()
    runner.deadline = deadline
    if deadline is not None and hasattr(runner, "estimates"):  # a segment starts no run it cannot finish
        runner.estimates = expected_seconds(store, [p.config.as_dict() for p in todo])
        known = [e for e in runner.estimates if e is not None]
        if known:
            workers = max(1, min(getattr(runner, "workers", 1), len(todo)))
            echo(f"sweep {name}: {len(known)} of {len(todo)} runs timed from their configurations' finished runs: "
                 f"about {sum(known) / 60:.0f} run-min, {sum(known) / 60 / workers:.0f} min on {workers} workers; "
                 f"{(deadline - time.monotonic()) / 60:.0f} min left in this segment")
    snapshots.materialize(store, store.cache_dir, [p.config for p in todo])  # what a rung continues from
    with Heartbeat(store, [p.run_id for p in todo]) as beat, progress.ticking():
        try:
            for result in runner.run([p.config for p in todo], incoming_dir(store)):
                record(store, result)
                snapshots.absorb(store, store.cache_dir)  # each rung's snapshot goes with the store
                snapshots.release(store, result)
                finished.add(result.run_id)
                beat.done(result.run_id)
                failed += not result.ok
                progress.update(result)
        except (KeyboardInterrupt, Interrupted) as exc:
            ingest_incoming(store)  # results the workers finished before the signal
            store.interrupt([p.run_id for p in todo],
                            "sweep interrupted by " + ("Ctrl-C" if isinstance(exc, KeyboardInterrupt) else "SIGTERM"))
            raise
    progress.close()
    left = [p.run_id for p in todo if p.run_id not in finished]
    if left:
        store.interrupt(left, HELD_BACK)
        echo(f"sweep {name}: the segment is over; {len(left)} runs left for the next invocation")
    return {"sweep_id": sid, "points": len(points), "ran": len(finished), "failed": failed, "left": len(left)}


# a run's expected time is its configuration's finished runs' time per step times its budget, and
# this much more: what load and evaluation add beyond the runs it was measured on
ESTIMATE_MARGIN = 1.15


# training settings that change a run's time only through its step count, or not at all (a 4x rerun
# fixes its warm-up steps where the base run had a fraction: the same time per step)
_UNTIMED = ("lr", "epochs", "warmup_steps", "warmup_frac", "decay_frac", "schedule", "patience", "target_accuracy",
            "weight_decay", "grad_clip", "plateau_window", "plateau_gain", "plateau_above", "plateau_after")


def _budget_key(config: dict) -> str:
    """A configuration without what changes a run's time only through its step count (the seed and
    ``_UNTIMED``)."""
    train = {k: v for k, v in config.get("train", {}).items() if k not in _UNTIMED}
    return json.dumps({**{k: v for k, v in config.items() if k not in ("seed", "train")}, "train": train},
                      sort_keys=True, default=str)


def expected_seconds(store: Store, configs: list[dict]) -> list[float | None]:
    """Each config's expected wall time at its full budget: the median seconds per step of the
    store's done runs of the same configuration (any rate, seed or epochs) times the steps its epochs
    give (their budget_steps per epoch), times ``ESTIMATE_MARGIN``; None where no such run exists.
    Early stops make runs shorter, so this is an upper estimate, what a segment's deadline needs."""
    import statistics

    per_step: dict[str, list[float]] = {}
    per_epoch: dict[str, list[float]] = {}
    for config, wall, steps, budget in (store.timings() if store.path.exists() else []):
        key = _budget_key(config)
        per_step.setdefault(key, []).append(wall / steps)
        epochs = config.get("train", {}).get("epochs")
        if budget and epochs:
            per_epoch.setdefault(key, []).append(budget / epochs)
    out: list[float | None] = []
    for config in configs:
        key, epochs = _budget_key(config), config.get("train", {}).get("epochs")
        if key not in per_step or key not in per_epoch or not epochs:
            out.append(None)
            continue
        out.append(ESTIMATE_MARGIN * statistics.median(per_step[key]) * statistics.median(per_epoch[key]) * epochs)
    return out


def _check_workers(points: list[Point], workers: int) -> None:
    """Refuse more local workers than the memory holds, from the largest point's estimate (rates
    and seeds do not change the memory a run takes, so each other configuration is built once)."""
    from evalsuite import resources
    from evalsuite.resolve import estimated_bytes

    distinct: dict[str, RunConfig] = {}
    for p in points:
        c = p.config.as_dict()
        key = {**{k: v for k, v in c.items() if k != "seed"}, "train": {k: v for k, v in c["train"].items() if k != "lr"}}
        distinct.setdefault(json.dumps(key, sort_keys=True, default=str), p.config)
    resources.check_workers(min(workers, len(points)), max(map(estimated_bytes, distinct.values())))


class Progress:
    """Runs done, failures so far and an ETA from the mean time per finished run; while runs are in
    flight, a line every ``TICK_S`` seconds (``ticking``), so a long run is never minutes of silence."""

    TICK_S = 60.0

    def __init__(self, total: int, echo, labels: dict[str, str] | None = None):
        self.total, self.done, self.failed, self.interrupted, self.echo = total, 0, 0, 0, echo
        self.labels = labels or {}  # run id -> the swept values that make its point
        self.start = time.perf_counter()

    @contextlib.contextmanager
    def ticking(self, every: float | None = None):
        """A block in which a daemon thread says, every ``every`` seconds, how far the sweep is."""
        every = self.TICK_S if every is None else every
        stop = threading.Event()

        def tick():
            while not stop.wait(every):
                elapsed = time.perf_counter() - self.start
                self.echo(f"... {self.done} of {self.total} runs done, {self.total - self.done} left, "
                          f"{elapsed / 60:.1f} min in (runs in flight report when they finish)")

        thread = threading.Thread(target=tick, name="evalsuite-progress", daemon=True)
        thread.start()
        try:
            yield self
        finally:
            stop.set()
            thread.join(timeout=5)

    def update(self, result: RunRecord) -> None:
        self.done += 1
        # a run a segment's end (or a signal) stopped is not a failure: the next invocation resumes it
        self.interrupted += result.status is Status.INTERRUPTED
        self.failed += not result.ok and result.status is not Status.INTERRUPTED
        elapsed = time.perf_counter() - self.start
        eta = elapsed / self.done * (self.total - self.done)
        acc, floor = result.metric("accuracy"), floor_of(result.metrics)
        detail = result.first_error_line(80)
        if acc is not None:
            detail = f"accuracy {acc:.4f}" + (f" (floor {floor:.3f})" if floor is not None else "") \
                + (" undertrained" if result.metric("undertrained") else "")
        point = self.labels.get(result.run_id)
        self.echo(f"[{self.done}/{self.total}] {result.status.value:<8} {result.model} on {result.task}"
                  + (f" [{point}]" if point else "")
                  + f" ({result.run_id}) {detail}  | {self._ended()}, {elapsed:.0f} s elapsed, ETA {eta:.0f} s")

    def _ended(self) -> str:
        return f"{self.failed} failed" + (f", {self.interrupted} interrupted (resumed by the next invocation)"
                                          if self.interrupted else "")

    def close(self) -> None:
        self.echo(f"finished {self.done} runs in {time.perf_counter() - self.start:.0f} s of training (from the first "
                  f"run's start; start-up and the report are not counted), {self._ended()}")
