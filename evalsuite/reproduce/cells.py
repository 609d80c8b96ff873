"""Cells: what a verdict reads of stored runs, and when a cell's figure can be cited.

A *cell* is one configuration (task setting and model) over every learning rate, seed and budget
the store holds for it. Its rate is chosen by **validation** at the base budget (the smallest
``train.epochs`` present) by the seeds that ran at every rate (or the widest grid), and its
figure is read from the seeds that did not choose it (``evalsuite.selection``: the reproduction
sweeps rates on seed 0 and reports seeds 1, 2, 3): the mean test accuracy, the sample standard deviation with n, and "k
of n seeds learned", beside the task's floor (the best reader with no memory of what it tests).

- **learned**: mean test accuracy at least halfway from the floor to 1:
  ``acc >= floor + LEARNED_FRACTION * (1 - floor)`` (per seed the same test).
- **settled**: the one rule of ``settled.unsettled``, read through ``stable``, ``settled`` (a
  failure) and ``settled_below`` (a shortfall).
- Orderings (``compare.ordered``) are judged at every rung both cells reached, seed by seed, by
  ``MARGIN`` plus both cells' spreads.
- ``reproduce`` escalates every cell below ``CEILING`` (not only those that did not learn), so that
  a shortfall ("elu+1 falls short of softmax") can be cited as well as a failure.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from evalsuite import selection
from evalsuite.records import RunRecord, floor_of

from evalsuite.protocol import CEILING, LADDER, LEARNED_FRACTION, MAX_SEEDS, MIN_SEEDS, cut_short, settled

from .ladder import Ladder


def get(config: dict, path: str) -> Any:
    """``get(cfg, "model.d_model")``; ``seed`` is top-level."""
    node: Any = config
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def matches(run: RunRecord, where: dict[str, Any]) -> bool:
    return all(get(run.config, k) == v for k, v in where.items())


def _mean(xs):
    return sum(xs) / len(xs) if xs else math.nan


def eval_accuracies(run: RunRecord) -> dict[int, float]:
    """Test length -> one run's accuracy on each eval segment (lengths beyond training)."""
    out = {}
    for i, seg in enumerate(run.config["task"].get("eval_segments") or []):
        acc = run.metrics.get(f"eval_{i}_accuracy")
        if acc is not None:
            out[seg["seq_len"]] = acc
    return out


@dataclass
class Cell(Ladder):
    """One configuration's runs and what they show (see the module docstring; its rungs above the
    base budget: ``ladder.Ladder``)."""

    label: str
    where: dict[str, Any]
    runs: list[RunRecord] = field(default_factory=list)  # done runs of this configuration
    metric: str = "accuracy"  # what the figure, 4x gains and ceiling read (eval_1_accuracy: a longer test length)
    cut: list[RunRecord] = field(default_factory=list)  # rung runs an older plateau rule cut short (left out of runs)

    @classmethod
    def of(cls, runs: list[RunRecord], label: str, where: dict[str, Any], metric: str = "accuracy") -> "Cell":
        """The done runs of ``runs`` whose configuration has every dotted path of ``where`` at its
        value (None: absent, as a late field at its default is stored), less those an older plateau
        rule cut short (``protocol.cut_short``: their rung runs again)."""
        kept, cut = [], []
        for r in runs:
            if r.ok and matches(r, where):
                (cut if cut_short(r.metrics) else kept).append(r)
        return cls(label, dict(where), kept, metric, cut)

    # --- budgets, rates, seeds ----------------------------------------------------------------
    @property
    def base_epochs(self) -> float | None:
        epochs = [get(r.config, "train.epochs") for r in self.runs]
        return min(epochs) if epochs else None

    def _at(self, epochs: float | None = None, lr: float | None = None) -> list[RunRecord]:
        epochs = self.base_epochs if epochs is None else epochs
        return [r for r in self.runs if math.isclose(get(r.config, "train.epochs"), epochs)
                and (lr is None or math.isclose(get(r.config, "train.lr"), lr))]

    @property
    def base_runs(self) -> list[RunRecord]:
        """Every run at the base budget (every rate and seed): what the rate choice reads."""
        return self._at()

    @property
    def rates(self) -> list[float]:  # those the choice is made among (every voter ran them)
        return selection.grid(self._at())

    @property
    def best_lr(self) -> float | None:
        """The rate with the best mean validation accuracy over seeds at the base budget
        (``selection.best_rate``: ties go to the smaller rate)."""
        return selection.best_rate(self._at()) if self.runs else None

    @property
    def best_runs(self) -> list[RunRecord]:
        """The base budget's runs at the best rate, seeds ascending."""
        return selection.at_best_rate(self._at())[1] if self.runs else []

    @property
    def seeds(self) -> list[int]:
        return sorted({r.config["seed"] for r in self.best_runs})

    @property
    def at_edge(self) -> bool:
        return bool(self.rates) and self.best_lr in (self.rates[0], self.rates[-1])

    # --- figures --------------------------------------------------------------------------------
    def _metric(self, name: str, runs=None) -> list[float]:
        return [r.metrics[name] for r in (self.best_runs if runs is None else runs) if name in r.metrics]

    @property
    def accuracy(self) -> selection.Figure:
        """Test accuracy over the seeds at the best rate (``selection.figure``)."""
        return selection.figure(self.best_runs, self.metric)

    @property
    def acc(self) -> float:
        return self.accuracy.mean

    @property
    def spread(self) -> float:
        """The sample standard deviation of test accuracy over seeds at the best rate (0 for one
        seed, NaN for none)."""
        fig = self.accuracy
        return math.nan if not fig.n else fig.std or 0.0

    @property
    def val(self) -> float:
        """Mean validation accuracy of the reported seeds: what a choice among cells reads (never test)."""
        return _mean(self._metric("val_accuracy"))

    @property
    def loss(self) -> float:
        return _mean(self._metric("loss"))

    @property
    def floor(self) -> float:
        """The mean over the best runs of each run's floor (``records.floor_of``: the best reader with
        no memory of what the task tests); for a figure read on an eval segment (one D of a mixed-D
        run, a longer test length), that segment's own floor where the run recorded it."""
        own = self.metric[:-len("accuracy")] + "floor" if self.metric.startswith("eval_") else None
        xs = [f for r in self.best_runs
              if (f := (r.metrics.get(own) if own and isinstance(r.metrics.get(own), float) else floor_of(r.metrics)))
              is not None]
        return _mean(xs) if xs else 0.0

    @property
    def state(self) -> float:
        """Ours: the floats a sequence keeps (``state_size``), the short convolution's window included."""
        return _mean(self._metric("state_size"))

    @property
    def mixer_state(self) -> float | None:
        """The state as Zoology counts it per mixer (docs/FINDINGS.md, finding 21): the mixers' floats
        summed over layers, the short convolution's window left out (``models.state.zoology_units``
        / 4). What a comparison of states reads: at width 64, two layers, kernel 4, the window's 384
        floats are more than half the smallest fixed states."""
        from evalsuite.models.state import zoology_units

        xs = [zoology_units(r.metrics["state_size"], r.config["model"]) / 4 for r in self.runs if r.metrics.get("state_size")]
        return _mean(xs) if xs else None

    # --- judgements -----------------------------------------------------------------------------
    @property
    def present(self) -> bool:
        return bool(self.runs)

    def learned_seed(self, acc: float) -> bool:
        return acc >= self.floor + LEARNED_FRACTION * (1 - self.floor)

    @property
    def learned(self) -> bool:
        return self.present and self.accuracy.n > 0 and self.learned_seed(self.acc)

    def learned_at(self, level: float) -> bool:
        return self.present and self.accuracy.n > 0 and self.acc >= level

    @property
    def seeds_learned(self) -> tuple[int, int]:
        """``(k, n)``: k of the n reported seeds learned."""
        values = self.accuracy.values
        return sum(self.learned_seed(v) for v in values), len(values)

    @property
    def seeds_disagree(self) -> bool:
        k, n = self.seeds_learned
        return 0 < k < n

    @property
    def seeds_needed(self) -> int:
        """``MIN_SEEDS``, or ``MAX_SEEDS`` when the seeds disagree (some learned, some not)."""
        return MAX_SEEDS if self.seeds_disagree else MIN_SEEDS

    @property
    def at_ceiling(self) -> bool:
        return self.present and self.accuracy.n > 0 and self.acc >= CEILING - 1e-9  # a mean of 0.95s is 0.9499...

    def incomplete(self) -> list[str]:
        """What the rate sweep and the seeds still lack (``settled.incomplete``; empty: complete)."""
        return settled.incomplete(self)

    def unsettled(self) -> list[str]:
        """The one settledness rule every verdict reads (``settled.unsettled``; empty: final)."""
        return settled.unsettled(self)

    @property
    def settled_rung(self) -> int:
        """The rung whose figure a verdict cites: the one where the settledness rule settled the
        cell (its next rung moved no seed), or the first whose every seed reached the ceiling; the
        base where the cell is not settled yet."""
        return settled.settled_rung(self)

    @property
    def final_acc(self) -> float:
        """The figure a comparison reads: the figure at ``settled_rung``."""
        acc = self.rung_acc(self.settled_rung)
        return self.acc if acc is None else acc

    @property
    def stable(self) -> bool:
        """Its figure can stand in a comparison either way (``unsettled`` is empty)."""
        return self.present and self.accuracy.n > 0 and not self.unsettled()

    @property
    def settled(self) -> bool:
        """A failure (not learned) that passes the settledness rule."""
        return self.stable and not self.learned

    def settled_below(self, level: float) -> bool:
        """A shortfall that passes the settledness rule: below ``level`` at every rung it reached."""
        accs = [a for k in range(self.top_rung + 1) if (a := self.rung_acc(k)) is not None]
        return self.stable and bool(accs) and all(a < level for a in accs)

    def floor_reader(self) -> str:
        names = sorted({r.metrics.get("floor_reader") or "chance rule" for r in self.best_runs})
        return "/".join(names) or "chance rule"

    def figure(self) -> str:
        if not self.present:
            return f"{self.label}: no finished run"
        k, n = self.seeds_learned
        voters, lr = sorted(selection.voters(self.base_runs)), self.best_lr  # None: no run has a validation accuracy
        text = (f"{self.label}: {self.accuracy.text()}, {k} of {n} seeds learned"
                + f" (floor {self.floor:.3f}, {self.floor_reader()}; lr {'none' if lr is None else f'{lr:g}'} of "
                + "[" + ", ".join(f"{lr:g}" for lr in self.rates) + "] chosen by validation on seed "
                + ", ".join(map(str, voters)) + f", {self.base_epochs:g} epochs")
        for k in range(1, len(LADDER)):
            gains = self.gains_at(k)
            if gains:
                text += (f"; at {LADDER[k]}x the budget (lr {self.rung_lr(k):g}) {self.rung_acc(k):.3f}, per seed "
                         + ", ".join(f"{g:+.3f}" for _, g in sorted(gains.items())))
        under = sum(bool(r.metrics.get("undertrained")) for r in self.best_runs)
        if under:
            text += f"; {under} undertrained"
        return text + ")"

    def eval_accuracies(self) -> dict[int, float]:
        """Test length -> mean accuracy over the best runs' seeds on each eval segment."""
        out: dict[int, list[float]] = {}
        for r in self.best_runs:
            for T, acc in eval_accuracies(r).items():
                out.setdefault(T, []).append(acc)
        return {T: sum(v) / len(v) for T, v in sorted(out.items())}

    def status_word(self) -> str:
        if not self.present:
            return "missing"
        return "learned" if self.learned else "settled failure" if self.settled else "unsettled"
