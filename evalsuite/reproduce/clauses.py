"""How a verdict's clauses read a cell beyond its mean figure: a capability shown (``reaches``),
an impossibility shown (``stays_below``), and a control that learned only at 4x the budget
(``learned_at_4x``). Each reads the cell's seeds at the base budget and at 4x it (the same two for
a metric no run trains for, read at every rung: ``compare.reaches_far``, ``compare.below_far``)."""
from __future__ import annotations

from .cells import Cell
from evalsuite.protocol import MIN_SEEDS


def rerun_on_every_seed(cell: Cell) -> bool:
    """Every reported seed has a 4x run at ``long_lr`` (what a 4x figure needs to stand for the cell)."""
    long = cell.long_runs
    return bool(long) and len(long) == len(cell.seeds)


def seeds_at(cell: Cell, level: float) -> tuple[int, int]:
    """``(k, n)``: k of the n reported seeds at or above ``level`` at the base budget or at 4x it
    (the seed's rerun at ``long_lr``)."""
    m = cell.metric
    long = {r.seed: r.metrics[m] for r in cell.long_runs if m in r.metrics}
    base = {r.seed: r.metrics[m] for r in cell.best_runs if m in r.metrics}
    return sum(max(a, long.get(s, a)) >= level for s, a in base.items()), len(base)


def reaches(cell: Cell, level: float) -> bool:
    """A capability shown: ``MIN_SEEDS`` or more reported seeds, and at ``level`` by the mean figure
    (at the base budget, or at 4x where every reported seed was rerun: a late learner counts, as
    ``Cell.final_acc`` reads it) or on a majority of the seeds, each at the base budget or at 4x.
    One seed stuck in a local optimum at the chosen rate does not undo what the others show
    (DeltaProduct's control: four of five seeds at 0.997 or more, one at 0.511 at both budgets);
    the cell's figure still shows the stuck seed."""
    if not cell.present or len(cell.seeds) < MIN_SEEDS:
        return False
    k, n = seeds_at(cell, level)
    return (cell.acc >= level or (rerun_on_every_seed(cell) and cell.long_acc >= level)
            or (k >= MIN_SEEDS and 2 * k > n))


def stays_below(cell: Cell, level: float) -> bool | None:
    """An impossibility clause ("does not reach ``level``"): True when the cell is settled below it
    and no seed reached it at either budget; False when the mean is at it at either budget;
    otherwise None (undecided: a seed that reached the level is a counterexample the mean hides,
    or the figure is not settled)."""
    if cell.learned_at(level) or (cell.long_acc is not None and cell.long_acc >= level):
        return False
    return True if cell.settled_below(level) and seeds_at(cell, level)[0] == 0 else None


def learned_at_4x(cell: Cell) -> bool:
    """Learned at 4x the budget by the mean of every reported seed's rerun (a late-learning control)."""
    return rerun_on_every_seed(cell) and cell.learned_seed(cell.long_acc)

