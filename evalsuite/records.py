"""The one shape of a run: ``RunRecord`` (typed, pydantic), its ``Status``, the declared metrics
and how a run's convergence reads (``convergence_note``); and the one shape of a reproduction's
judgement: ``Verdict`` with its ``Outcome``.

Every layer speaks it: the trainer returns one, executors send one back (as JSON through
``incoming/``), the store writes and reads one, and the CLI summary, sweeps, reports and
``reproduce`` read one. A metric is declared once here (``register_metric``), with its type,
whether higher is better, and how it aggregates over seeds; over learning rates every metric is
read at the rate chosen by ``SELECT_RATE_BY`` (the best mean validation accuracy), as published
MQAR results are.

Stored records written before this module (plain JSON rows) load unchanged: unknown metric names
are kept as they are (per-segment accuracies, analyses), and declared ones are checked.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from enum import Enum
from typing import Any, Callable

from pydantic import PrivateAttr, BaseModel, ConfigDict, Field, field_validator

from evalsuite.protocol import cut_short

TARGET_ACCURACY = 0.99  # Zoology's early-stopping target; the default of train.target_accuracy
SELECT_RATE_BY = "val_accuracy"  # the learning rate of a configuration is chosen by this, never by test


class Status(str, Enum):
    """How a run stands. ``stale`` is never written: it is how a ``running`` row whose process is
    gone reads."""

    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    DIVERGED = "diverged"
    INTERRUPTED = "interrupted"
    STALE = "stale"

    def __str__(self) -> str:
        return self.value

    @property
    def unfinished(self) -> bool:
        """Started and never finished: a sweep runs it again."""
        return self in (Status.RUNNING, Status.STALE, Status.INTERRUPTED)


@dataclass(frozen=True)
class Metric:
    name: str
    kind: type  # float, int, str or bool
    higher_is_better: bool | None  # None: neither (a size, a count, a label)
    aggregate: str  # over seeds: "mean", "max", "min", "sum" or "first"
    description: str
    bounds: tuple[float, float] | None = None  # what a recorded value may be (an imported run is checked)

    def reduce(self, values: list[Any]) -> Any:
        values = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
        if not values:
            return None
        return AGGREGATES[self.aggregate](values)


AGGREGATES: dict[str, Callable[[list], Any]] = {
    "mean": statistics.fmean, "max": max, "min": min, "sum": sum, "first": lambda xs: xs[0]}
METRICS: dict[str, Metric] = {}


def register_metric(name: str, kind: type, *, higher_is_better: bool | None, aggregate: str = "mean",
                    description: str, bounds: tuple[float, float] | None = None) -> Metric:
    """Declare a metric (as lm-evaluation-harness's ``register_metric``); a run may then record it."""
    if aggregate not in AGGREGATES:
        raise ValueError(f"aggregate must be one of {', '.join(AGGREGATES)}, got {aggregate!r}")
    metric = Metric(name, kind, higher_is_better, aggregate, description, bounds)
    if name in METRICS and METRICS[name] != metric:
        raise ValueError(f"metric {name!r} is already declared differently: {METRICS[name]}")
    METRICS[name] = metric
    return metric


UNIT, NONNEGATIVE = (0.0, 1.0), (0.0, math.inf)
FRACTIONS = {"accuracy", "val_accuracy", "tvd", "tvd_floor", "context_chance", "majority_rate", "floor"}
SIGNED = {"last_quarter_gain"}

for _name, _kind, _better, _agg, _text in [
    ("accuracy", float, True, "mean", "test accuracy over graded positions, at the checkpoint that validated best"),
    ("val_accuracy", float, True, "mean", "best validation accuracy (selects the checkpoint and the learning rate)"),
    ("loss", float, False, "mean", "test cross-entropy over graded positions"),
    ("tvd", float, False, "mean", "test total variation distance to the true next-token distribution (tasks that "
                                  "know it: RegBench)"),
    ("tvd_floor", float, None, "mean", "the best tvd of an in-context bigram or trigram model on the same positions (RegBench's floor)"),
    ("train_loss", float, False, "mean", "training loss at the last step"),
    ("context_chance", float, None, "mean", "the task's chance floor (MQAR: 1/D, answering some value of the context)"),
    ("majority_rate", float, None, "mean", "accuracy of always answering the most common test label"),
    ("chance_rule", str, None, "first", "how the chance floor is computed"),
    ("floor", float, None, "mean", "the best accuracy of a reader with no memory of what the task tests, on the test "
                                   "split (tasks.readers; fitted readers learn from the training split)"),
    ("floor_reader", str, None, "first", "the reader that sets the floor"),
    ("graded", int, None, "mean", "graded test positions"),
    ("steps", int, None, "mean", "optimisation steps taken"),
    ("budget_steps", int, None, "first", "steps the budget allowed"),
    ("best_step", int, None, "mean", "step of the checkpoint that validated best"),
    ("stopped", str, None, "first", "target, budget, patience or plateau"),
    ("undertrained", bool, False, "sum", "validation accuracy still rose in the last quarter of the budget"),
    ("last_quarter_gain", float, None, "mean", "best validation accuracy of the last quarter minus before"),
    ("steps_per_s", float, True, "mean", "training throughput (the steps this run took itself)"),
    ("branched_from", str, None, "first", "the run whose saved state this run started from (train.branch)"),
    ("branched_from_step", int, None, "first", "the step it started from: the steps before it were that run's"),
    ("resumed_from_step", int, None, "first", "the step its own checkpoint resumed it from (a segment ended in it)"),
    ("train_time_s", float, False, "mean", "seconds spent training"),
    ("wall_time_s", float, False, "mean", "seconds for the whole run"),
    ("time_data_s", float, False, "mean", "seconds generating and staging the run's data and building its model"),
    ("time_steps_s", float, False, "mean", "seconds in training steps (train_time_s less the validation passes)"),
    ("time_eval_s", float, False, "mean", "seconds in validation passes (early stopping, checkpoint choice)"),
    ("time_test_s", float, False, "mean", "seconds testing the best checkpoint (test split and eval segments)"),
    ("time_analysis_s", float, False, "mean", "seconds in the run analyses (sharpness, interference, errors, state rank)"),
    ("parameters", int, None, "first", "trainable parameters"),
    ("state_size", int, None, "first", "floats of decoding state per sequence at seq_len (model.state_size)"),
    ("state_bytes_fp32", int, None, "first", "bytes of that state in fp32"),
    ("seq_len", int, None, "first", "training sequence length"),
]:
    register_metric(_name, _kind, higher_is_better=_better, aggregate=_agg, description=_text,
                    bounds=UNIT if _name in FRACTIONS else NONNEGATIVE if _kind in (int, float) and _name not in SIGNED
                    else None)


def metric_problem(name: str, value: Any) -> str | None:
    """What is wrong with a recorded value, as an import checks it (None: nothing): a number that is
    not finite, or outside its metric's bounds (an undeclared ``*_accuracy`` is a fraction too)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if not math.isfinite(value):
        return f"{name} is {value}, not a finite number"
    metric = METRICS.get(name)
    bounds = metric.bounds if metric is not None else UNIT if name.endswith("_accuracy") else None
    if bounds is not None and not bounds[0] <= value <= bounds[1]:
        return f"{name} is {value:g}, outside [{bounds[0]:g}, {bounds[1]:g}]"
    return None


def _check_metric(name: str, value: Any) -> Any:
    metric = METRICS.get(name)
    if metric is None or value is None:
        return value  # undeclared (eval_0_accuracy, slices, analysis): kept as is
    if metric.kind is float and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if metric.kind is int and isinstance(value, float) and value.is_integer():
        return int(value)
    if not isinstance(value, metric.kind) or (metric.kind is int and isinstance(value, bool)):
        raise ValueError(f"metric {name!r} must be {metric.kind.__name__}, got {value!r}")
    return value


class RunRecord(BaseModel):
    """One run: what was asked (``config``), how it ended, what it measured, what it ran on."""

    model_config = ConfigDict(extra="forbid", use_enum_values=False)

    run_id: str
    config: dict[str, Any]
    status: Status
    metrics: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None
    warnings: list[str] = Field(default_factory=list)
    env: dict[str, Any] = Field(default_factory=dict)
    history: list[dict[str, Any]] = Field(default_factory=list)
    _weights: bytes | None = PrivateAttr(default=None)  # from a remote worker, on its way to the driver (never stored)
    started_at: float | None = None
    finished_at: float | None = None
    pid: int | None = None
    host: str | None = None
    cached: bool = Field(False, exclude=True)  # read from the store instead of trained (not stored)

    @field_validator("metrics")
    @classmethod
    def _typed_metrics(cls, metrics: dict[str, Any]) -> dict[str, Any]:
        return {k: _check_metric(k, v) for k, v in metrics.items()}

    @property
    def ok(self) -> bool:
        return self.status is Status.DONE

    @property
    def task(self) -> str:
        return self.config["task"]["name"]

    @property
    def model(self) -> str:
        return self.config["model"]["name"]

    @property
    def seed(self) -> int:
        return self.config["seed"]

    @property
    def preset(self) -> str | None:
        """The named preset the run was resolved from (recorded in its ``env``; runs stored before
        it was recorded have none). Not part of the run id: the configuration it resolved to is."""
        return self.env.get("preset")

    @property
    def lr(self) -> float:
        return self.config["train"]["lr"]

    def metric(self, name: str, default: Any = None) -> Any:
        return self.metrics.get(name, default)

    def first_error_line(self, width: int = 200) -> str:
        lines = (self.error or "").strip().splitlines()
        return lines[0][:width] if lines else ""


CURVE_POINTS = 64  # a learning curve as a report embeds it: at most this many points per run


SEGMENT_PREFIX = "val_accuracy@"  # a mixture's per-segment validation accuracy in a history entry


def segment_curves(history: list[dict[str, Any]]) -> dict[str, list[tuple[int, float]]]:
    """A mixed run's learning curve per segment (``"num_kv_pairs=8"`` -> ``[(step, validation
    accuracy)]``), from the history entries ``train.loop.segment_accuracies`` wrote."""
    out: dict[str, list[tuple[int, float]]] = {}
    for h in history:
        for k, v in h.items():
            if k.startswith(SEGMENT_PREFIX) and isinstance(v, (int, float)) and math.isfinite(v):
                out.setdefault(k[len(SEGMENT_PREFIX):], []).append((int(h["step"]), float(v)))
    return {k: sorted(v) for k, v in out.items()}


def thin_history(history: list[dict[str, Any]], points: int = CURVE_POINTS) -> list[dict[str, Any]]:
    """A run's learning curve as reports embed it: its validation passes (step, validation accuracy,
    training loss), at most ``points`` of them, evenly spaced by index with the first, the last and
    the best-validating one kept (where it plateaued, when it escaped, whether it still rose),
    figures rounded to 4 digits."""
    evals = [h for h in history if h.get("val_accuracy") is not None]
    if not evals:
        return []
    n = len(evals)
    best = max(range(n), key=lambda i: evals[i]["val_accuracy"])
    if n <= points:
        keep = list(range(n))
    else:
        keep = sorted({round(i * (n - 1) / (points - 2)) for i in range(points - 1)} | {best})
    out = []
    for i in keep:
        h = evals[i]
        row = {"step": int(h["step"]), "val_accuracy": round(float(h["val_accuracy"]), 4)}
        loss = h.get("train_loss")
        if isinstance(loss, (int, float)) and math.isfinite(loss):
            row["train_loss"] = round(float(loss), 4)
        row.update({k: round(float(v), 4) for k, v in h.items() if k.startswith(SEGMENT_PREFIX)
                    and isinstance(v, (int, float)) and math.isfinite(v)})  # a mixture's segments
        out.append(row)
    return out


def flat_row(record: RunRecord) -> dict[str, Any]:
    """A run as one flat row (``evalsuite runs`` and ``export``): id, status, seed, preset, every config
    field as ``task.x`` / ``model.x`` / ``train.x`` (dicts as JSON), and every scalar metric; nested
    metrics (analyses, slices) are left out."""
    import json

    row: dict[str, Any] = {"run_id": record.run_id, "status": record.status.value, "seed": record.config.get("seed"),
                           "preset": record.preset}
    for section in ("task", "model", "train"):
        for key, value in (record.config.get(section) or {}).items():
            row[f"{section}.{key}"] = json.dumps(value, sort_keys=True) if isinstance(value, (dict, list)) else value
    for key, value in record.metrics.items():
        if isinstance(value, (int, float, str, bool)) or value is None:
            row[key] = value
    row["error"] = record.error
    row["started_at"], row["finished_at"] = record.started_at, record.finished_at
    return row


def floor_of(metrics: dict) -> float | None:
    """A run's floor: the best no-memory reader's accuracy (``floor``), or, for a record made before
    readers existed, the task's chance rule, else the majority rate."""
    for name in ("floor", "context_chance", "majority_rate"):
        value = metrics.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    return None


def against_floor(acc: float, floor: float) -> str:
    """Where an accuracy stands against its floor (the best reader with no memory of the task), in
    words that match the numbers: "below the floor" more than ``MARGIN`` under it (worse than
    guessing as that reader does: a model that has not learned the task's format, or a smoke run),
    "at the floor" within ``MARGIN`` of it, "above the floor" beyond that."""
    from evalsuite.protocol import MARGIN

    return "below the floor" if acc < floor - MARGIN else "at the floor" if acc < floor + MARGIN else "above the floor"


def convergence_note(metrics: dict) -> str:
    """One line on how a run ended, for the CLI summary and the reports."""
    stopped, gain = metrics.get("stopped"), metrics.get("last_quarter_gain")
    acc, floor = metrics.get("accuracy"), floor_of(metrics)
    if stopped is None:
        return ""
    if stopped == "target":
        return f"reached the target validation accuracy at step {metrics.get('best_step')}"
    if stopped == "plateau":
        return (f"stopped on a plateau: no validation gain of 0.005 over its window (best at step "
                f"{metrics.get('best_step')})" + ("; below the ceiling, where the plateau rule no longer stops a "
                                                  "run: cut short, so `reproduce` reads it as no rung and runs it "
                                                  "again" if cut_short(metrics) else ""))
    if stopped == "patience":
        return f"stopped early: validation accuracy stopped improving (best at step {metrics.get('best_step')})"
    if metrics.get("undertrained"):
        rise = f" by {gain:+.3f}" if isinstance(gain, float) and math.isfinite(gain) else ""
        return (f"UNDERTRAINED: validation accuracy still rose{rise} in the last quarter of the budget, so this is "
                f"not the model's limit (more train.epochs may change it)")
    note = f"budget spent; validation accuracy flat over its last quarter ({gain:+.3f})" if isinstance(gain, float) else "budget spent"
    if acc is not None and floor is not None and (where := against_floor(acc, floor)) != "above the floor":
        note += (f"; {where} ({acc:.3f} against {floor:.3f}), where MQAR models often plateau and then jump: calling "
                 "this a failure needs a learning-rate sweep, three seeds and 4x the budget on each (evalsuite reproduce "
                 "does that)")
    return note


class Outcome(str, Enum):
    """What a reproduction concludes of a finding."""

    REPRODUCED = "reproduced"
    NOT_REPRODUCED = "not reproduced"
    INCONCLUSIVE = "inconclusive"
    NOT_TESTED = "not tested"  # the runs test a different model or setting than the claim names

    def __str__(self) -> str:
        return self.value


class VerdictCell(BaseModel):
    """A cell a verdict read, as its small figure draws it: the test accuracy per seed at the
    chosen rate and base budget, per seed at 4x the budget (where run), and the task's floor; and
    the ids of those runs (``run_ids``, ``long_run_ids``: seed -> run id), whose learning curves a
    report draws beside the verdict."""

    model_config = ConfigDict(extra="forbid")

    label: str
    metric: str = "accuracy"  # the figure read (a mixed-D run's ``eval_{i}_accuracy``: one eval segment)
    floor: float | None = None
    seeds: dict[int, float] = Field(default_factory=dict)
    long: dict[int, float] = Field(default_factory=dict)
    run_ids: dict[int, str] = Field(default_factory=dict)
    long_run_ids: dict[int, str] = Field(default_factory=dict)


class Verdict(BaseModel):
    """One finding judged from stored runs: the claim, where it comes from, the outcome, the figures
    it rests on, each clause of the claim (True shown, False contradicted, None undecided) and why
    the outcome is what it is. Data only: the report's verdict section renders it."""

    model_config = ConfigDict(extra="forbid")

    name: str
    finding: str
    source: str = ""
    status: Outcome
    figures: list[str] = Field(default_factory=list)
    checks: dict[str, bool | None] = Field(default_factory=dict)
    why: str = ""
    cells: list[VerdictCell] = Field(default_factory=list)  # what the verdict read, for its figure
    control: bool = False  # a positive control of the suite (what a working set-up shows), not a finding
    retired: str = ""  # why the finding is no longer run (its outcome kept as judged); "" while it is run
