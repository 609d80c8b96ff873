"""The rules that turn cells into a verdict: comparisons with margins, positive controls, and how
clauses combine into an outcome (``Judge.decide``). A verdict is data (``records.Verdict``); the
report's verdict section renders it.

A verdict never claims what was not measured: a finding whose runs are missing or failed is
inconclusive, and so is one whose clauses rest on a cell that more budget, rates or seeds could
still move: every clause reads its cells through the one settledness rule (``Cell.unsettled``,
via ``stable``, ``settled`` and ``settled_below``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from evalsuite.records import Outcome, Verdict, VerdictCell

from evalsuite.protocol import MARGIN

from .cells import Cell
from .clauses import learned_at_4x
from .compare import ordered
from .escalation import next_changes

REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, NOT_TESTED = (Outcome.REPRODUCED, Outcome.NOT_REPRODUCED, Outcome.INCONCLUSIVE,
                                                      Outcome.NOT_TESTED)
WORD = {True: "yes", False: "no", None: "undecided"}


def _paired(a: Cell, b: Cell) -> list[tuple[float, float]]:
    """Per-seed accuracies of the seeds both cells report."""
    xa, xb = dict(zip(a.accuracy.seeds, a.accuracy.values)), dict(zip(b.accuracy.seeds, b.accuracy.values))
    return [(xa[s], xb[s]) for s in sorted(set(xa) & set(xb))]


def higher(a: Cell, b: Cell, margin: float = MARGIN) -> bool:
    """``a`` above ``b`` by more than the margin plus both cells' seed spreads (sample standard
    deviations over seeds), and above it on every seed both report."""
    if not (a.present and b.present and a.accuracy.n and b.accuracy.n):
        return False
    return a.acc - b.acc > margin + _spread(a) + _spread(b) and all(x > y for x, y in _paired(a, b))


def not_higher(a: Cell, b: Cell, margin: float = MARGIN) -> bool:
    """``a`` is not above ``b`` by the margin, beyond both spreads: the gap plus both spreads is
    within the margin, and so is every seed's gap (between this and ``higher``: undecided)."""
    if not (a.present and b.present and a.accuracy.n and b.accuracy.n):
        return False
    return a.acc - b.acc + _spread(a) + _spread(b) <= margin and all(x - y <= margin for x, y in _paired(a, b))


def _spread(c: Cell) -> float:
    return 0.0 if math.isnan(c.spread) else c.spread


def contradicted(a: Cell, b: Cell) -> bool:
    """``a`` is not above ``b``, and both figures are settled (``Cell.stable``): more budget, rates
    or seeds would not change them. Where 4x the budget took ``b`` to the ceiling, its 4x figure
    is the one compared (``Cell.final_acc``)."""
    if not (a.stable and b.stable):
        return False
    if b.final_acc != b.acc:
        return a.final_acc - b.final_acc <= MARGIN
    return not_higher(a, b)


def above(a: Cell, b: Cell) -> bool | None:
    """``a`` above ``b``, judged as an ordering at every rung both reached (``compare.ordered``):
    True, False (contradicted) or None (undecided)."""
    return ordered(a, b)


def summary(cell: Cell) -> VerdictCell:
    """What a verdict's figure draws of one cell: per-seed figures at base budget and at 4x, the floor."""
    m = cell.metric
    floor = cell.floor
    return VerdictCell(label=cell.label, metric=m, floor=None if math.isnan(floor) else float(floor),
                       seeds={r.seed: float(r.metrics[m]) for r in cell.best_runs if m in r.metrics},
                       long={r.seed: float(r.metrics[m]) for r in cell.long_runs if m in r.metrics},
                       run_ids={r.seed: r.run_id for r in cell.best_runs},
                       long_run_ids={r.seed: r.run_id for r in cell.long_runs})


def unsettled(cells: list[Cell]) -> str:
    """What each cell whose figure could still move with more budget, rates or seeds lacks, and
    where `reproduce` has nothing left to run for it (every seed's 4x rerun is done and one moved),
    that no run it can add settles it: only more budget than 4x or another setting would. Where
    that holds for every cell, the verdict says it once (``STUCK_ALL``), not after each cell."""
    some = runnable(cells)
    return "; ".join(f"{c.label}: {'; '.join(c.unsettled())}" + ("" if next_changes(c) or not some else f" ({STUCK})")
                     for c in cells if c.present and not c.stable and c.unsettled())


STUCK = "no run `reproduce` can add settles this cell at this setting"
STUCK_ALL = ("no run `reproduce` can add settles these cells at this setting: only another setting, such as a "
             "longer base budget, would")


def runnable(cells: list[Cell]) -> bool:
    """Whether `reproduce` can still run something that settles these cells (else only a harder
    setting can: a 4x rerun already moved a figure)."""
    return any(next_changes(c) for c in cells)


def fmt(x) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


@dataclass(frozen=True)
class Judge:
    """Makes the verdicts of one experiment (its name, finding and source on each)."""

    name: str
    finding: str
    source: str
    read: list[Cell] = field(default_factory=list, compare=False)  # the cells shown to ``missing``
    is_control: bool = False  # the experiment is a positive control (``Experiment.control``)
    retired: str = ""  # why the experiment is no longer run (``Experiment.retired``)

    def verdict(self, status: Outcome, figures: list[str], why: str = "",
                checks: dict[str, bool | None] | None = None) -> Verdict:
        return Verdict(name=self.name, finding=self.finding, source=self.source, status=status, figures=figures,
                       checks=checks or {}, why=why, cells=[summary(c) for c in self.read if c.present],
                       control=self.is_control, retired=self.retired)

    def inconclusive(self, figures: list[str], why: str) -> Verdict:
        return self.verdict(INCONCLUSIVE, figures, why)

    def missing(self, cells: list[Cell]) -> Verdict | None:
        """Inconclusive when a cell has no finished run. These are the cells the verdict reads: its
        figure draws them."""
        self.read[:] = cells
        gone = [c.label for c in cells if not c.present]
        if gone:
            return self.inconclusive([c.figure() for c in cells],
                                     f"no finished run for {', '.join(gone)}: run `evalsuite reproduce {self.name}`")
        return None

    def control(self, control: Cell, figures: list[str]) -> Verdict | None:
        """Inconclusive unless the positive control (the model that should succeed) learned, at the
        base budget or at 4x it on every reported seed (a late learner is a working control)."""
        if control.learned or learned_at_4x(control):
            return None
        return self.inconclusive(figures, f"positive control failed: {control.label} did not learn this setting "
                                          f"({fmt(control.acc)}, chance {fmt(control.floor)}), so a failure here says "
                                          f"nothing about the model")

    def decide(self, figures: list[str], checks: dict[str, bool | None], todo: str = "",
               can_run: bool = True, untested: str = "") -> Verdict:
        """Each clause is True (shown), False (contradicted by settled runs) or None (not decidable:
        a run it rests on is unsettled). Reproduced when every clause holds; not reproduced when
        one is contradicted; otherwise inconclusive, saying what to run. ``untested``: why these
        runs test another model or setting than the claim names; then the outcome is "not tested"
        whatever the clauses say (they are still shown)."""
        figures = figures + ["; ".join(f"{k}: {WORD[v]}" for k, v in checks.items())]
        if untested:
            return self.verdict(NOT_TESTED, figures, f"not tested: {untested}", checks)
        if all(v is True for v in checks.values()):
            return self.verdict(REPRODUCED, figures, checks=checks)
        hint = (f"; `evalsuite reproduce {self.name}` runs what is missing" if can_run
                else f"; {STUCK_ALL}")
        open_ = [k for k, v in checks.items() if v is None]
        undecided = ("undecided: " + ", ".join(open_) + (f" (to settle: {todo}{hint})" if todo else "")) if open_ else ""
        if any(v is False for v in checks.values()):
            # the clauses a contradiction leaves open are named too, with what would settle them
            why = "contradicted: " + ", ".join(k for k, v in checks.items() if v is False)
            return self.verdict(NOT_REPRODUCED, figures, why + (f"; {undecided}" if undecided else ""), checks)
        return self.verdict(INCONCLUSIVE, figures, undecided, checks)
