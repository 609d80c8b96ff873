"""Running experiments: their sweeps, the escalation that makes each cell a verdict rests on
citable (rates past an edge, three reported seeds, 4x the budget on each), their capacity probes, and the
verdicts judged from what the store holds.

Every experiment of one invocation runs together: their sweeps as one set of points, then each
escalation round gathers what every experiment still lacks into one set (an experiment alone
often lacks fewer runs than there are workers, which left workers idle round after round). Each
experiment's sweep and escalations are recorded in the store under its own names (provenance:
which invocation asked for a run); which runs are an experiment's is decided by its declaration
alone (``Experiment.members``), whichever invocation trained them.
"""
from __future__ import annotations

import hashlib
import math
from typing import Callable

from evalsuite.records import RunRecord, Verdict

from .decisive import decisive
from .escalation import next_changes, next_configs
from .experiment import Experiment
from . import argmax
from .probes import run_probes

MAX_ROUNDS = 5
# run(points, name, spec): train the points (sweep.run_points with the executor's options)
Run = Callable[[list, str, dict], dict]


def escalation_name(name: str, scale: str) -> str:
    return f"reproduce-{name}-{scale}-escalation"


def stored_runs(store) -> list[RunRecord]:
    """Every run the store holds (none where it does not exist yet)."""
    return store.runs() if store.path.exists() else []


def experiment_runs(exp: Experiment, scale: str, store, runs: list[RunRecord] | None = None) -> list[RunRecord]:
    """The experiment's stored runs (``Experiment.members`` of what the store holds; ``runs``: the
    store's runs when the caller read them already)."""
    return exp.members(stored_runs(store) if runs is None else runs, scale)


def escalation_configs(exp: Experiment, runs: list[RunRecord], probes, scale: str, cell) -> list:
    """What the escalation runs next for ``cell`` (``next_configs``): past the first rung of the
    ladder only where a clause's outcome depends on the cell (``decisive``)."""
    configs = next_configs(cell, climb=False)
    if not configs and next_changes(cell, climb=True) and decisive(exp, runs, probes, scale, cell):
        configs = next_configs(cell, climb=True)
    return configs


def _record(store, name: str, points: list) -> None:
    """``points`` belong to the sweep called ``name`` (an experiment's escalation)."""
    from evalsuite.sweep import sweep_id

    sid = hashlib.sha256((name + ":" + sweep_id(points)).encode()).hexdigest()[:12]
    store.add_sweep(sid, name, {"name": name, "configs": [p.config.as_dict() for p in points]}, [p.run_id for p in points])


def cheapest_first(points, seconds: list[float | None] | None = None) -> list:
    """Escalation points in order of budget (epochs), then of expected time (``seconds``, aligned
    with ``points``: ``sweep.expected_seconds``; unknown ones last), then sequence length, so that
    a segment that ends early has given the missing seeds of many cells before the 4x reruns of a
    few, and the cheap families' 4x reruns (a sliding window's take minutes) before the dear ones'
    (DeltaProduct's take many times that). Each run is independent: the order changes only what a
    short segment settles."""
    points = list(points)
    seconds = seconds or [None] * len(points)

    def cost(i):
        c = points[i].config
        return (c.train.epochs, math.inf if seconds[i] is None else seconds[i],
                max(getattr(t, "seq_len", 0) for t in c.task.train_tasks))
    return [points[i] for i in sorted(range(len(points)), key=cost)]


def run_experiments(experiments: list[Experiment], scale: str, store, run: Run, echo=print,
                    deadline: float | None = None, workers: int = 1) -> bool:
    """Sweep, probe and escalate ``experiments`` (resumable: what the store holds is not rerun).
    ``deadline`` (``time.monotonic()``): start nothing after it (``run`` stops its sweep there too,
    and holds back runs that would end past it: its result's ``left``); returns False when the
    segment ended before everything ran."""
    import time

    ended = False

    def over() -> bool:
        return ended or (deadline is not None and time.monotonic() >= deadline)

    def sweep(points, name, spec) -> None:
        nonlocal ended
        result = run(points, name, spec)
        if deadline is not None and isinstance(result, dict) and result.get("left"):
            ended = True  # runs were held back: the segment is over, whatever the clock says

    from evalsuite.sweep import Point, expand, expected_seconds, sweep_id

    points: dict[str, Point] = {}
    for exp in experiments:
        spec = exp.spec(scale)
        if spec is not None:
            echo(f"== {exp.name}: {exp.finding}")
            mine = expand(spec)
            store.add_sweep(sweep_id(mine), spec.name, spec.model_dump(), [p.run_id for p in mine])  # as `sweep` records it
            points.update({p.run_id: p for p in mine})
    if points:
        sweep(list(points.values()), f"reproduce-{scale}", {"experiments": [e.name for e in experiments], "scale": scale})
    # the probes before the escalation: a verdict that reads a probe (capacity-trained) cannot tell
    # which cells its clauses depend on (``decisive``) until the probe has run, and the probes are a
    # fixed set where the ladder's rungs are not
    for exp in experiments:
        if exp.probes.get(scale) and not over():
            echo(f"== {exp.name}: {exp.finding}")
            schlag, top1 = split_probes(exp.probes[scale])
            if schlag:
                run_probes(schlag, store, echo=echo)
            if top1 and not argmax.run(top1, store, workers=workers, echo=echo, deadline=deadline):
                ended = True
    for round_ in range(1, MAX_ROUNDS + 1):
        if over():
            return False
        todo: dict[str, Point] = {}
        listed: dict[frozenset, str] = {}  # run ids -> the experiment whose listing named them
        stored = stored_runs(store)
        probes = store.probes()
        for exp in experiments:
            mine, why = [], []
            own = experiment_runs(exp, scale, store, stored)
            for cell in exp.judged_cells(own, scale):
                configs = escalation_configs(exp, own, probes, scale, cell)
                if configs:
                    mine += [Point({"seed": c.seed, "lr": c.train.lr, "epochs": c.train.epochs}, c) for c in configs]
                    why.append(f"{cell.label} ({cell.status_word()})")
            if mine:
                mine = list({p.run_id: p for p in mine}.values())  # a mixed-D run serves a cell per D: count it once
                ids = frozenset(p.run_id for p in mine)
                if ids in listed:  # experiments of one sweep (the frontier's three) list the same cells
                    echo(f"  {exp.name}, escalation round {round_}: the same {len(mine)} runs as {listed[ids]}")
                else:
                    listed[ids] = exp.name
                    echo(f"  {exp.name}, escalation round {round_}: {len(mine)} runs for {', '.join(why)}")
                _record(store, escalation_name(exp.name, scale), mine)
                todo.update({p.run_id: p for p in mine})
        if not todo:
            break
        ordered = list(todo.values())
        sweep(cheapest_first(ordered, expected_seconds(store, [p.config.as_dict() for p in ordered])),
              f"reproduce-{scale}-escalation-{round_}", {"round": round_})
    else:
        echo(f"  escalation stopped after {MAX_ROUNDS} rounds; the verdicts say what is still missing")
    return not over()


def split_probes(calls: list[dict]) -> tuple[list[dict], list[dict]]:
    """An experiment's probe calls: Schlag et al.'s knee probes, and the argmax probes (``argmax``)."""
    top1 = [c for c in calls if c.get("probe") in ("argmax", "calibration")]
    return [c for c in calls if c not in top1], top1


def import_runs(store, runs: list[RunRecord], probes) -> None:
    """Write ``runs`` and ``probes`` (a report's embedded data) into ``store``, where
    ``verdicts(experiments, store)`` judges each experiment from its members, as the report's
    store did."""
    for r in runs:
        store.finish(r)
    if probes is not None and len(probes):
        store.add_probes(probes)


def verdicts(experiments: list[Experiment], store, scale: str = "cpu") -> list[Verdict]:
    """Judge each experiment from what the store holds for its points and escalations."""
    probes = store.probes()
    stored = stored_runs(store)
    return [e.judge(experiment_runs(e, scale, store, stored), probes, scale) for e in experiments]
