"""A cell's rungs above its base budget (``protocol.LADDER``: 4x, 16x ...): the rates it climbs at,
its runs and figure at each rung, and each rung's gain over the one below it. ``Cell`` reads its
ladder through this mixin; ``protocol.settled`` decides where it settles."""
from __future__ import annotations

import math

from evalsuite import selection
from evalsuite.protocol import LADDER, RATE_TIE
from evalsuite.records import RunRecord


def _mean(xs):
    return sum(xs) / len(xs) if xs else math.nan


class Ladder:
    """Needs ``runs``, ``metric``, ``base_epochs``, ``best_lr``, ``best_runs``, ``seeds`` and ``_at``
    (``cells.Cell``)."""

    @property
    def long_rates(self) -> list[float]:
        """The rates the cell climbs at: its chosen one, and the runner-up where their validation
        figures are within ``RATE_TIE`` (a choice that noise could turn is made at a higher rung)."""
        if self.best_lr is None:
            return []
        means = selection.rate_means(self._at())
        ranked = selection.ranked_rates(self._at())
        out = [self.best_lr]
        if len(ranked) > 1 and means[ranked[0]] - means[ranked[1]] <= RATE_TIE:
            out.append(ranked[1])
        return out

    def rung_epochs(self, k: int) -> float:
        return LADDER[k] * self.base_epochs

    def _rung(self, k: int, lr: float | None = None) -> list[RunRecord]:
        """The runs at rung ``k`` (``LADDER``) at ``lr``, or at any of the rates the cell climbs at."""
        if not self.runs:
            return []
        rates = [lr] if lr is not None else self.long_rates
        return [r for r in self._at(epochs=self.rung_epochs(k)) if any(math.isclose(r.lr, x) for x in rates)]

    def _long(self, lr: float | None = None) -> list[RunRecord]:
        return self._rung(1, lr)

    def rung_lr(self, k: int) -> float | None:
        """Of the rates the cell climbs at, the one whose runs at rung ``k`` validate best over the
        reported seeds (the base rung's: the chosen rate)."""
        if k == 0:
            return self.best_lr
        seeds = set(self.seeds)
        return selection.best_rate([r for r in self._rung(k) if r.seed in seeds])

    def rung_runs(self, k: int) -> list[RunRecord]:
        """The reported seeds' runs at rung ``k`` at ``rung_lr(k)``, seeds ascending."""
        if k == 0:
            return self.best_runs
        lr, seeds = self.rung_lr(k), set(self.seeds)
        return [] if lr is None else sorted((r for r in self._rung(k, lr) if r.seed in seeds), key=lambda r: r.seed)

    def on_every_seed(self, k: int) -> bool:
        """Rung ``k`` holds a run of every reported seed at every rate the cell climbs at."""
        if not self.seeds:
            return False
        if k == 0:
            return True
        return all({r.seed for r in self._rung(k, lr)} >= set(self.seeds) for lr in self.long_rates)

    @property
    def top_rung(self) -> int:
        """The highest rung every reported seed reached (0: the base budget)."""
        return max([k for k in range(len(LADDER)) if k == 0 or self.on_every_seed(k)], default=0)

    def rung_acc(self, k: int) -> float | None:
        """The mean figure at rung ``k`` (None where no reported seed reached it)."""
        runs = [r for r in self.rung_runs(k) if self.metric in r.metrics]
        return _mean([r.metrics[self.metric] for r in runs]) if runs else None

    def gains_at(self, k: int) -> dict[int, float]:
        """Seed -> its figure at rung ``k`` minus its figure at rung ``k - 1``."""
        m = self.metric
        below = {r.seed: r.metrics[m] for r in self.rung_runs(k - 1) if m in r.metrics}
        return {r.seed: r.metrics[m] - below[r.seed] for r in self.rung_runs(k) if r.seed in below and m in r.metrics}

    # the first rung above the base, by the names verdicts read
    @property
    def long_lr(self) -> float | None:
        return self.rung_lr(1)

    @property
    def long_runs(self) -> list[RunRecord]:
        return self.rung_runs(1)

    @property
    def gains(self) -> dict[int, float]:
        return self.gains_at(1)

    @property
    def gain_4x(self) -> float | None:
        """The mean over seeds of the 4x gain (None without a 4x run)."""
        gains = self.gains
        return _mean(list(gains.values())) if gains else None

    @property
    def long_acc(self) -> float | None:
        """Mean figure of the first rung above the base (None without one)."""
        return self.rung_acc(1)
