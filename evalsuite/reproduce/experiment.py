"""What an experiment is, and the registry that finds them.

An experiment is one finding of docs/FINDINGS.md made testable: its claim, its source, the sweep
(or capacity probes) that measure it at each scale, the cells its verdict rests on, and the
verdict function. Each lives in its own module of ``evalsuite.reproduce.experiments`` and calls
``register``; every module there is discovered on first use, so a new experiment is one new file.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import pandas as pd

from evalsuite.config import setting_key
from evalsuite.records import RunRecord, Verdict
from evalsuite.registry import Registry

from .cells import Cell
from .verdict import Judge

SCALES = ("cpu", "paper")
EXPERIMENTS = Registry("experiment", builtin_package="evalsuite.reproduce.experiments")


@dataclass(frozen=True)
class Experiment:
    """``specs``: scale -> sweep spec (the dict form of ``sweep.SweepSpec``); ``params``: scale ->
    what the verdict and cell functions read (widths, settings); ``verdict(runs, probes, params,
    judge)`` returns a ``Verdict``; ``cells(runs, params)`` lists the cells it rests on (what the
    escalation makes citable); ``probes``: scale -> capacity-probe calls; ``minutes``: the expected
    run time per scale (2-core CPU / a GPU): at cpu scale a (low, high) pair from
    ``benchmarks/project_reproduce.py`` (docs/PROJECTION.md: every cell a verdict settles learned /
    every one below the ceiling with its 4x reruns), or one figure where nothing trains; ``analyses``:
    the keys of a run's ``metrics["analysis"]`` the verdict reads (a compact report keeps those for
    the experiment's runs, and no others: they are most of a run's size); ``group``: experiments that share one sweep (and
    what each one's escalation adds) and are named together on the command line; ``order``: the
    place in listings and reports."""

    name: str
    finding: str
    source: str
    verdict: Callable[[list[RunRecord], pd.DataFrame, dict, Judge], Verdict]
    params: dict[str, dict]
    minutes: dict[str, float | tuple[float, float]]
    specs: dict[str, dict] = field(default_factory=dict)
    cells: Callable[[list[RunRecord], dict], list[Cell]] | None = None
    probes: dict[str, list[dict]] = field(default_factory=dict)
    analyses: tuple[str, ...] = ()
    group: str | None = None
    order: int = 100

    def spec(self, scale: str):
        from evalsuite.sweep import SweepSpec

        data = self.specs.get(scale)
        return None if data is None else SweepSpec(name=f"reproduce-{self.name}-{scale}", **data)

    def own_runs(self, runs: list[RunRecord], scale: str) -> list[RunRecord]:
        """``runs`` less those trained below its base budget (the least ``train.epochs`` of its
        sweep points): another experiment's shorter run of the same configuration (capacity-law
        trains 8 epochs where delta-vs-linear trains 3; DeltaProduct's first design trained 2) would
        otherwise become this one's base budget, since a cell takes the least budget it holds as its
        base. So a verdict reads the same runs from its own store as from a report or store that
        holds other experiments' runs too."""
        base = _sweep(self, scale)[0]
        return runs if base is None else [r for r in runs if r.config["train"]["epochs"] >= base - 1e-9]

    def of_points(self, runs: list[RunRecord], scale: str) -> list[RunRecord]:
        """The runs of its sweep's points at any seed, rate, budget and warm-up (what its
        escalation adds; ``config.setting_key``): a run another experiment's sweep trained on
        another configuration is not this experiment's, whichever sweep of the store lists it
        (a store merged before reports said whose each run is gave every run to every experiment).
        All of ``runs`` where it has no sweep. Read by the check of a published report's
        membership (tests/reports/test_rederive.py), not where runs are judged: the verdict tests'
        synthetic run sets carry only the keys their cells read."""
        keys = _sweep(self, scale)[1]
        return runs if keys is None else [r for r in runs if setting_key(r.config) in keys]

    def judge(self, runs: list[RunRecord], probes: pd.DataFrame, scale: str) -> Verdict:
        return self.verdict(self.own_runs(runs, scale), probes, self.params[scale],
                            Judge(self.name, self.finding, self.source))

    def judged_cells(self, runs: list[RunRecord], scale: str) -> list[Cell]:
        """The cells its verdict rests on (``cells``), read from its own runs (``own_runs``)."""
        return [] if self.cells is None else self.cells(self.own_runs(runs, scale), self.params[scale])


_SWEEPS: dict[tuple[str, str], tuple[float | None, frozenset[str] | None]] = {}


def _sweep(experiment: "Experiment", scale: str) -> tuple[float | None, frozenset[str] | None]:
    """The least ``train.epochs`` of the experiment's sweep points at ``scale`` and the points'
    ``setting_key``s (None, None: no sweep)."""
    key = (experiment.name, scale)
    if key not in _SWEEPS:
        from evalsuite.sweep import expand

        spec = experiment.spec(scale)
        points = expand(spec) if spec is not None else []
        _SWEEPS[key] = ((min(p.config.train.epochs for p in points),
                         frozenset(setting_key(p.config.as_dict()) for p in points)) if points else (None, None))
    return _SWEEPS[key]


def register(experiment: Experiment) -> Experiment:
    """Add an experiment to ``reproduce``'s list (call it at the top level of its module)."""
    missing = [s for s in SCALES if s not in experiment.params]
    if missing:
        raise ValueError(f"experiment {experiment.name!r} has no params for scale {', '.join(missing)}")
    EXPERIMENTS.register(experiment.name, obj=experiment)
    return experiment


def all_experiments() -> list[Experiment]:
    """Every registered experiment, in listing order."""
    return sorted((e for _, e in EXPERIMENTS.items()), key=lambda e: (e.order, e.name))


def members(experiment: Experiment) -> list[Experiment]:
    """The experiments that share ``experiment``'s sweep (itself alone when it has no group)."""
    if experiment.group is None:
        return [experiment]
    return [e for e in all_experiments() if e.group == experiment.group]
