"""How a configuration's figure is chosen and stated: one path for the report's summary rows and
the verdicts of ``evalsuite reproduce`` alike.

Over learning rates, a configuration is read at the rate whose mean validation accuracy is
highest (``records.SELECT_RATE_BY``; never by test accuracy) over the seeds that ran at every rate
(the *voters*; when none did, those that ran the widest grid, see ``voters``); a tie goes to the
smaller rate. So that the choice does not bias the figure, the
figure is the mean over the seeds at that rate that did **not** vote, when there are any (the
reproduction sweeps rates on seed 0 and reports seeds 1, 2, 3 at the chosen rate); otherwise
every seed ran at every rate and the figure is over all of them. Beside the mean: the sample
standard deviation, n and the per-seed values.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Iterable

from evalsuite.records import SELECT_RATE_BY, RunRecord


def by_rate(runs: Iterable[RunRecord]) -> dict[float, list[RunRecord]]:
    """Done runs by learning rate, rates ascending."""
    out: dict[float, list[RunRecord]] = {}
    for r in runs:
        if r.ok:
            out.setdefault(r.lr, []).append(r)
    return dict(sorted(out.items()))


def _grids(runs: Iterable[RunRecord]) -> dict[int, set[float]]:
    """Seed -> the rates it has a done run at."""
    out: dict[int, set[float]] = {}
    for lr, members in by_rate(runs).items():
        for r in members:
            out.setdefault(r.seed, set()).add(lr)
    return out


def _vote(runs: list[RunRecord]) -> tuple[set[int], list[float]]:
    """``(voters, grid)``: see ``voters`` and ``grid``."""
    grids = _grids(runs)
    if not grids:
        return set(), []
    every = set.union(*grids.values())
    chosen = {s for s, g in grids.items() if g == every}
    if not chosen:
        widest = max(len(g) for g in grids.values())
        wide = grids[min(s for s, g in grids.items() if len(g) == widest)]
        chosen = {s for s, g in grids.items() if g >= wide}
    return chosen, sorted(set.intersection(*(grids[s] for s in chosen)))


def voters(runs: Iterable[RunRecord]) -> set[int]:
    """The seeds that choose the rate: those with a done run at every rate present, or, when no
    seed ran every rate, those that ran the widest grid any seed ran (of equally wide grids, the
    smallest seed's). The second case arises when the reported seeds ran rates of an earlier
    design (a rate past an old edge, half of a 4x rate) that the voting seed's sweep lacks:
    without it no seed would vote and no rate could be chosen."""
    return _vote(list(runs))[0]


def grid(runs: Iterable[RunRecord]) -> list[float]:
    """The rates the choice is made among, ascending: those every voter ran."""
    return _vote(list(runs))[1]


def rate_means(runs: Iterable[RunRecord]) -> dict[float, float]:
    """Each rate of ``grid`` -> the mean validation accuracy of the voters' runs at it."""
    runs = list(runs)
    (chosen_by, rates), members = _vote(runs), by_rate(runs)
    means = {}
    for lr in rates:
        values = _values([r for r in members[lr] if r.seed in chosen_by], SELECT_RATE_BY)
        if values:
            means[lr] = statistics.fmean(values)
    return means


def ranked_rates(runs: Iterable[RunRecord]) -> list[float]:
    """The rates of ``grid``, best mean validation accuracy first (ties: the smaller rate)."""
    means = rate_means(runs)
    return sorted(means, key=lambda lr: (-means[lr], lr))


def best_rate(runs: Iterable[RunRecord]) -> float | None:
    """The rate of ``grid`` with the best mean validation accuracy over the voters (ties: the
    smaller rate); None when no done run has a validation accuracy."""
    ranked = ranked_rates(runs)
    return ranked[0] if ranked else None


def at_best_rate(runs: Iterable[RunRecord]) -> tuple[float | None, list[RunRecord]]:
    """``(rate, the runs its figure is read from)``, seeds ascending: the runs at that rate of the
    seeds that did not choose it, or, when every seed chose it, all of them."""
    runs = list(runs)
    lr = best_rate(runs)
    if lr is None:
        return None, []
    chosen_by = voters(runs)
    members = sorted(by_rate(runs)[lr], key=lambda r: r.seed)
    held_out = [r for r in members if r.seed not in chosen_by]
    return lr, held_out or members


@dataclass(frozen=True)
class Figure:
    """A metric over seeds: the per-seed values (seeds ascending), their mean, and the sample
    standard deviation (None below two seeds)."""

    values: tuple[float, ...]
    seeds: tuple[int, ...]

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.values) if self.values else math.nan

    @property
    def std(self) -> float | None:
        return statistics.stdev(self.values) if self.n >= 2 else None

    def text(self, digits: int = 3, per_seed: int = 5) -> str:
        """``0.812 +- 0.034 sd (n=3: 0.801, 0.784, 0.851)``; the seeds' values when there are at
        most ``per_seed`` of them."""
        if not self.values:
            return "n/a"
        out = f"{self.mean:.{digits}f}"
        if self.std is None:
            return out + " (n=1)"
        out += f" +- {self.std:.{digits}f} sd (n={self.n}"
        if self.n <= per_seed:
            out += ": " + ", ".join(f"{v:.{digits}f}" for v in self.values)
        return out + ")"


def figure(runs: Iterable[RunRecord], metric: str = "accuracy") -> Figure:
    """``metric`` over ``runs`` (one per seed), seeds ascending; runs without it are left out."""
    pairs = sorted((r.seed, r.metrics[metric]) for r in runs if _finite(r.metrics.get(metric)))
    return Figure(tuple(v for _, v in pairs), tuple(s for s, _ in pairs))


def _values(runs: list[RunRecord], metric: str) -> list[float]:
    return [r.metrics[metric] for r in runs if _finite(r.metrics.get(metric))]


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
