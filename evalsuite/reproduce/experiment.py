"""What an experiment is: one declaration, from which its sweep, its runs and its cells derive.

An experiment is one finding of docs/FINDINGS.md made testable. It declares, per scale, a
``Design``: the base configuration every point shares, its cells (``CellSpec``: a name, a label,
the config point that sets it, its role), the learning rates, and the parameters its verdict
reads. Everything else is derived here by shared code:

- the sweep (``Design.spec``): every cell's point at every rate, on the base;
- which runs belong to the experiment (``members``, the one place that answers it): those of its
  cells' settings (``protocol.setting_key``) at its base budget or a longer rung of the ladder;
- each cell's runs (``Design.cells``): the experiment's runs whose configuration has the cell's
  point (the keys it sets, read in their canonical stored form);
- what the escalation settles (the cells whose role is ``TEST`` or ``CONTROL``).

Config paths have one spelling everywhere: the dotted one users type (``task.num_kv_pairs``;
``model`` and ``task`` name the model and the task, ``preset`` a preset). Each experiment lives
in its own module of ``evalsuite.reproduce.experiments`` and calls ``register``; every module
there is discovered on first use, so a new experiment is one new file (docs/guide/layout.md has a
worked example).
"""
from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Mapping, Sequence

import pandas as pd

from evalsuite.protocol import LADDER, is_escalated, setting_key
from evalsuite.records import RunRecord, Verdict
from evalsuite.registry import Registry

from .cells import Cell, get
from .verdict import Judge

SCALES = ("cpu", "paper")
EXPERIMENTS = Registry("experiment", builtin_package="evalsuite.reproduce.experiments")

TEST, CONTROL, REPORTED = "test", "control", "reported"
ROLES = (TEST, CONTROL, REPORTED)
NAMED = {"task": "task.name", "model": "model.name", "feature_map": "model.feature_map"}  # the sweep's named axes


@dataclass(frozen=True)
class CellSpec:
    """One cell of a design. ``point``: the dotted config keys that set it on the design's base
    (never a rate: every cell runs at the design's rates, or its own ``rates``). ``role``: ``TEST``
    (a clause reads it), ``CONTROL`` (a positive control: it must learn for a failure to mean
    anything) or ``REPORTED`` (shown beside the verdict, read by no clause: trained, never
    escalated). ``reads``: the clause that reads it, in words (``reproduce --plan`` says it).
    ``metric``: what its figure reads (``eval_1_accuracy``: a longer test length). ``rates`` and
    ``epochs``: its own rate grid and base budget, where they are not the design's."""

    key: Hashable
    label: str
    point: Mapping[str, Any]
    role: str = TEST
    reads: str = ""
    metric: str = "accuracy"
    rates: tuple[float, ...] | None = None
    epochs: float | None = None

    def __post_init__(self):
        if self.role not in ROLES:
            raise ValueError(f"cell {self.label!r}: role must be one of {', '.join(ROLES)}, got {self.role!r}")
        bad = [k for k in self.point if is_escalated(NAMED.get(k, k)) or "__" in k]
        if bad:
            raise ValueError(f"cell {self.label!r}: a point sets no rate, budget, seed or warm-up (the protocol does) "
                             f"and names keys with dots: {bad}")


class Cells(dict):
    """Cell key -> ``Cell``, in declaration order, with the runs they were read from (``runs``)."""

    def __init__(self, items, runs: list[RunRecord]):
        super().__init__(items)
        self.runs = runs


@dataclass(frozen=True)
class Design:
    """An experiment at one scale: ``base`` (dotted keys every point shares), ``cells``, ``rates``
    and ``params`` (what the verdict reads beyond its cells). A design with no cells trains
    nothing (a probe-only experiment)."""

    base: Mapping[str, Any] = field(default_factory=dict)
    cells: Sequence[CellSpec] = ()
    rates: Sequence[float] = ()
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        keys = [c.key for c in self.cells]
        if len(set(keys)) != len(keys):
            raise ValueError(f"cell keys repeat: {sorted({str(k) for k in keys if keys.count(k) > 1})}")

    # --- the sweep -------------------------------------------------------------------------------
    def points(self) -> list[dict]:
        """Every cell's point at each of its rates (cells that share a point share its runs)."""
        out: dict[str, dict] = {}
        for c in self.cells:
            for lr in c.rates or self.rates:
                p = {**c.point, **({"train.epochs": c.epochs} if c.epochs is not None else {}), "train.lr": lr}
                out.setdefault(json.dumps(p, sort_keys=True, default=str), p)
        return list(out.values())

    def spec(self, name: str):
        """The sweep (``sweep.SweepSpec``), or None for a design that trains nothing. Its base is no
        run of its own (``base_point=False``)."""
        from evalsuite.sweep import SweepSpec

        points = self.points()
        return SweepSpec(name=name, base=dict(self.base), points=points, base_point=False) if points else None

    # --- cells and membership --------------------------------------------------------------------
    @functools.cached_property
    def _resolved(self) -> dict[Hashable, dict]:
        """Cell key -> the canonical stored configuration of its point (at its first rate, seed 0)."""
        return {c.key: resolved({**self.base, **c.point, **({"train.epochs": c.epochs} if c.epochs is not None else {}),
                                 "train.lr": (c.rates or self.rates)[0]}) for c in self.cells}

    def match(self, cell: CellSpec) -> dict[str, Any]:
        """The keys a run of ``cell`` has, as stored (a late field at its default is absent: None):
        the task and model names and every key its point sets."""
        config = self._resolved[cell.key]
        paths = ["task.name", "model.name", *(NAMED.get(k, k) for k in cell.point if k != "preset")]
        return {p: get(config, p) for p in dict.fromkeys(paths)}

    @functools.cached_property
    def budgets(self) -> dict[str, float]:
        """Setting key -> its base budget (``train.epochs``): the settings this design trains."""
        return {setting_key(c): c["train"]["epochs"] for c in self._resolved.values()}

    @property
    def base_epochs(self) -> float | None:
        return min(self.budgets.values()) if self.cells else None

    def cells_of(self, runs: list[RunRecord], roles: Sequence[str] = ROLES) -> Cells:
        """Each declared cell (of ``roles``) read from ``runs``."""
        return Cells(((c.key, Cell.of(runs, c.label, self.match(c), metric=c.metric)) for c in self.cells
                      if c.role in roles), runs)


def resolved(values: Mapping[str, Any]) -> dict:
    """The canonical stored configuration (seed 0) of a point's dotted keys, as a sweep resolves it."""
    from evalsuite.sweep import _resolve_point

    return _resolve_point(dict(values), 0).as_dict()


def far_segment(base: dict, seq_len: int, beyond: float) -> tuple[int, int] | None:
    """(index, length) of the shortest eval segment of at least ``beyond`` x the training length,
    as the design's base configures its test lengths."""
    segs = [(i, s["seq_len"]) for i, s in enumerate(resolved(base)["task"].get("eval_segments") or [])
            if s["seq_len"] >= beyond * seq_len]
    return min(segs, key=lambda x: x[1]) if segs else None


def on_ladder(epochs: float, base: float) -> bool:
    """``epochs`` is a rung of the ladder above ``base`` (``protocol.LADDER``)."""
    return any(math.isclose(epochs, f * base, rel_tol=1e-9) for f in LADDER)


@dataclass(frozen=True)
class Experiment:
    """``designs``: scale -> ``Design``; ``verdict(cells, probes, params, judge)`` returns a
    ``Verdict`` from the design's cells (``Cells``) read from the experiment's runs; ``probes``:
    scale -> capacity-probe calls; ``minutes``: the expected run time per scale (2-core CPU / a
    GPU): at cpu scale a (low, high) pair from ``benchmarks/project_reproduce.py``
    (docs/PROJECTION.md), or one figure where nothing trains; ``analyses``: the keys of a run's
    ``metrics["analysis"]`` the verdict reads (a compact report keeps those for the experiment's
    runs, and no others); ``group``: experiments that share one sweep, named together on the
    command line; ``order``: the place in listings and reports; ``control``: a positive control of
    the suite (what a working set-up must show), labelled so in every table, never a finding;
    ``retired``: why the finding is no longer run (``reproduce`` with no names leaves it out; named,
    it still judges and runs its cells), shown beside its outcome."""

    name: str
    finding: str
    source: str
    verdict: Callable[[Cells, pd.DataFrame, Mapping, Judge], Verdict]
    designs: Mapping[str, Design]
    minutes: Mapping[str, float | tuple[float, float]]
    probes: Mapping[str, list[dict]] = field(default_factory=dict)
    analyses: tuple[str, ...] = ()
    group: str | None = None
    order: int = 100
    control: bool = False
    retired: str = ""

    def params(self, scale: str) -> Mapping[str, Any]:
        return self.designs[scale].params

    def spec(self, scale: str):
        return self.designs[scale].spec(f"reproduce-{self.name}-{scale}")

    def members(self, runs: list[RunRecord], scale: str) -> list[RunRecord]:
        """Which of ``runs`` belong to this experiment (the one place that says it): runs of one of
        its cells' settings (``protocol.setting_key``: the same configuration at any seed, rate,
        budget and warm-up) whose budget is that setting's base budget or a rung of the ladder above
        it. A run of another experiment's design (another budget, width or layer count) is not
        this one's, whichever store or report holds it."""
        budgets = self.designs[scale].budgets
        return [r for r in runs if (b := budgets.get(setting_key(r.config))) is not None
                and on_ladder(r.config["train"]["epochs"], b)]

    def own_runs(self, runs: list[RunRecord], scale: str) -> list[RunRecord]:
        """``runs`` less those trained below its base budget: another experiment's shorter run of the
        same configuration would otherwise become this one's base budget (a cell takes the least
        budget it holds as its base)."""
        base = self.designs[scale].base_epochs
        return runs if base is None else [r for r in runs if r.config["train"]["epochs"] >= base - 1e-9]

    def cells(self, runs: list[RunRecord], scale: str, roles: Sequence[str] = ROLES, *, every_budget: bool = False) -> Cells:
        """Its declared cells read from ``runs`` (its own: ``own_runs``; ``every_budget``: every run
        given, as a smoke run's few steps are read)."""
        return self.designs[scale].cells_of(runs if every_budget else self.own_runs(runs, scale), roles)

    def judge(self, runs: list[RunRecord], probes: pd.DataFrame, scale: str, *, every_budget: bool = False) -> Verdict:
        return self.verdict(self.cells(runs, scale, every_budget=every_budget), probes, self.params(scale),
                            Judge(self.name, self.finding, self.source, is_control=self.control, retired=self.retired))

    def judged_cells(self, runs: list[RunRecord], scale: str) -> list[Cell]:
        """The cells the escalation settles: those a clause or a control reads."""
        return list(self.cells(runs, scale, roles=(TEST, CONTROL)).values())


def register(experiment: Experiment) -> Experiment:
    """Add an experiment to ``reproduce``'s list (call it at the top level of its module)."""
    missing = [s for s in SCALES if s not in experiment.designs]
    if missing:
        raise ValueError(f"experiment {experiment.name!r} has no design for scale {', '.join(missing)}")
    EXPERIMENTS.register(experiment.name, obj=experiment)
    return experiment


def all_experiments() -> list[Experiment]:
    """Every registered experiment, in listing order."""
    return sorted((e for _, e in EXPERIMENTS.items()), key=lambda e: (e.order, e.name))


def group_of(experiment: Experiment) -> list[Experiment]:
    """The experiments that share ``experiment``'s sweep (itself alone when it has no group)."""
    if experiment.group is None:
        return [experiment]
    return [e for e in all_experiments() if e.group == experiment.group]
