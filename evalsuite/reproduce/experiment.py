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

    def judge(self, runs: list[RunRecord], probes: pd.DataFrame, scale: str) -> Verdict:
        return self.verdict(runs, probes, self.params[scale], Judge(self.name, self.finding, self.source))


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
