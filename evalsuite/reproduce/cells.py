"""Cells: what a verdict reads of stored runs, and when a cell's figure can be cited.

A *cell* is one configuration (task setting and model) over every learning rate, seed and budget
the store holds for it. Its figures come from the learning rate whose mean **validation** accuracy
over seeds is highest at the base budget (the smallest ``train.epochs`` present), chosen as the
report's summary rows choose it (``evalsuite.selection``); test accuracy is reported at that rate
as a mean and a sample standard deviation over seeds, beside the task's chance floor.

- **learned**: mean test accuracy at least halfway from the floor to 1:
  ``acc >= floor + LEARNED_FRACTION * (1 - floor)``.
- **settled** (a negative result that can be cited): the cell did not learn, its sweep spans the
  working window (at least ``MIN_RATES`` rates, the best not at an edge of the grid), it has at
  least ``MIN_SEEDS`` seeds at the best rate, and a rerun at 4x the budget gained less than
  ``MAX_4X_GAIN``. A cell that did not learn and is not settled is *unsettled*: no verdict rests
  on its failure.
- A difference "higher", "grows" or "drops" counts when it exceeds ``MARGIN`` plus the two
  cells' seed spreads (sample standard deviations; ``verdict.higher``).
- ``reproduce`` escalates every cell below ``CEILING`` (not only those that did not learn), so that
  a shortfall ("elu+1 falls short of softmax") can be cited as well as a failure.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from evalsuite import selection
from evalsuite.config import RunConfig
from evalsuite.records import RunRecord

LEARNED_FRACTION = 0.5
MIN_RATES = 3
MIN_SEEDS = 2
MAX_4X_GAIN = 0.05
BUDGET_FACTOR = 4
MARGIN = 0.05
LR_LIMITS = (1e-5, 0.1)  # the grid is extended past an edge only inside these
CEILING = 0.95  # cells below this get the full treatment (edges, seeds, 4x); above it, only a second seed


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
class Cell:
    """One configuration's runs and what they show (see the module docstring)."""

    label: str
    where: dict[str, Any]
    runs: list[RunRecord] = field(default_factory=list)  # done runs of this configuration

    @classmethod
    def of(cls, runs: list[RunRecord], label: str, **where) -> "Cell":
        where = {k.replace("__", "."): v for k, v in where.items()}
        return cls(label, where, [r for r in runs if r.ok and matches(r, where)])

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
    def rates(self) -> list[float]:
        return sorted({get(r.config, "train.lr") for r in self._at()})

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
        return selection.figure(self.best_runs)

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
    def loss(self) -> float:
        return _mean(self._metric("loss"))

    @property
    def floor(self) -> float:
        xs = self._metric("context_chance") or self._metric("majority_rate")
        return _mean(xs) if xs else 0.0

    @property
    def state(self) -> float:
        return _mean(self._metric("state_size"))

    @property
    def long_runs(self) -> list[RunRecord]:
        """Runs at 4x the base budget and the best rate."""
        if not self.runs:
            return []
        return self._at(epochs=BUDGET_FACTOR * self.base_epochs, lr=self.best_lr)

    @property
    def gain_4x(self) -> float | None:
        """Mean test accuracy at 4x the budget minus that at the base budget, same seeds."""
        long = self.long_runs
        if not long:
            return None
        seeds = {r.config["seed"] for r in long}
        base = [r.metrics["accuracy"] for r in self.best_runs if r.config["seed"] in seeds]
        return _mean([r.metrics["accuracy"] for r in long]) - _mean(base)

    # --- judgements -----------------------------------------------------------------------------
    @property
    def present(self) -> bool:
        return bool(self.runs)

    @property
    def learned(self) -> bool:
        return self.present and self.acc >= self.floor + LEARNED_FRACTION * (1 - self.floor)

    def learned_at(self, level: float) -> bool:
        return self.present and self.acc >= level

    def incomplete(self) -> list[str]:
        """What the sweep and seeds still lack (empty: complete)."""
        if not self.present:
            return ["no finished run"]
        lack = []
        if len(self.rates) < MIN_RATES:
            lack.append(f"needs {MIN_RATES} learning rates (has {len(self.rates)})")
        elif self.at_edge:
            lack.append(f"needs a rate beyond the best one ({self.best_lr:g}, at the edge of {self.rates})")
        if len(self.seeds) < MIN_SEEDS:
            lack.append(f"needs {MIN_SEEDS} seeds at the best rate (has {len(self.seeds)})")
        return lack

    @property
    def long_acc(self) -> float | None:
        """Mean test accuracy of the 4x-budget reruns at the best rate (None without one)."""
        long = self.long_runs
        return _mean([r.metrics["accuracy"] for r in long]) if long else None

    def missing_for_settled(self) -> list[str]:
        """What a negative result of this cell still lacks (empty: it is settled)."""
        if not self.present:
            return ["no finished run"]
        lack = self.incomplete()
        gain = self.gain_4x
        if gain is None:
            lack.append(f"needs a rerun at {BUDGET_FACTOR}x the budget")
        elif gain >= MAX_4X_GAIN:
            lack.append(f"its {BUDGET_FACTOR}x rerun gained {gain:+.3f} (>= {MAX_4X_GAIN}), so the budget, not the model, "
                        f"decides this figure")
        return lack

    @property
    def settled(self) -> bool:
        """A failure (not learned) that a fair sweep, two seeds and 4x the budget did not overturn."""
        return self.present and not self.learned and not self.missing_for_settled()

    def settled_below(self, level: float) -> bool:
        """A shortfall that survives more budget: below ``level`` with a complete sweep and seeds,
        and still below it at 4x the budget. (A comparison needs only that: the weaker model
        given 4x the budget still does not reach the stronger one.)"""
        long = self.long_acc
        return self.present and self.acc < level and not self.incomplete() and long is not None and long < level

    @property
    def stable(self) -> bool:
        """Its figure can stand in a comparison either way: near perfect, or a complete sweep whose
        4x rerun gained less than ``MAX_4X_GAIN``."""
        gain = self.gain_4x
        return self.present and (self.acc >= CEILING or (not self.incomplete() and gain is not None and gain < MAX_4X_GAIN))

    def figure(self) -> str:
        if not self.present:
            return f"{self.label}: no finished run"
        text = (f"{self.label}: {self.accuracy.text()}"
                + f" (chance {self.floor:.3f}; best lr {self.best_lr:g} of "
                + "[" + ", ".join(f"{lr:g}" for lr in self.rates) + f"] by validation, {self.base_epochs:g} epochs")
        gain = self.gain_4x
        if gain is not None:
            text += f"; at {BUDGET_FACTOR}x the budget {self.long_acc:.3f} ({gain:+.3f})"
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

    # --- what to run next (``evalsuite reproduce`` escalates with these) --------------------------
    def next_changes(self) -> list[dict]:
        """What would make this cell citable, as changes to its best run, in order: a rate beyond
        an edge (``{"lr": x}``, when it is below ``CEILING``), a second seed at the best rate
        (``{"seed": s}``), then 4x the budget (``{"epochs": e}``, when it is below ``CEILING``).
        Empty when nothing is missing."""
        if not self.present:
            return []
        rates = self.rates
        short = self.acc < CEILING
        if short and (len(rates) < MIN_RATES or self.at_edge):
            step = rates[1] / rates[0] if len(rates) > 1 else math.sqrt(10)
            lr = self.best_lr * step if self.best_lr == rates[-1] else self.best_lr / step
            if LR_LIMITS[0] <= lr <= LR_LIMITS[1]:
                return [{"lr": float(f"{lr:.3g}")}]
        missing_seeds = [s for s in range(MIN_SEEDS) if s not in self.seeds]
        if missing_seeds:
            return [{"seed": s} for s in missing_seeds]
        if short and not self.long_runs:
            return [{"epochs": BUDGET_FACTOR * self.base_epochs}]
        return []

    def next_configs(self) -> list[RunConfig]:
        """``next_changes`` as configurations (``evalsuite reproduce`` escalates with these). A
        longer budget keeps the base run's warm-up in steps: it is the same schedule at the same
        peak rate, only held longer, so it takes the base run's steps up to that run's decay and
        starts from the state the base run saved there (``train.branch``)."""
        changes = self.next_changes()
        if not changes:
            return []
        run = self.best_runs[0]
        best = RunConfig.from_dict(run.config)
        warmup = best.train.warmup(run.metrics["budget_steps"]) if "budget_steps" in run.metrics else None
        return [best.replace(**c, **({"warmup_steps": warmup} if "epochs" in c else {})) for c in changes]
