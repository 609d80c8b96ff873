"""Whether a clause's outcome depends on a cell: what lets a cell climb the ladder past its first
rung (16x the base budget costs four times the 4x rung, so only cells that can change a verdict
climb).

A cell is **decisive** when the experiment's verdict differs between two worlds that agree on
everything but that cell: one where the cell is settled at the ceiling on every seed, one where it
is settled at its floor (its runs' figures replaced, a next rung added that moves no seed). A
verdict that reads the same either way does not wait on the cell, whatever it shows.
"""
from __future__ import annotations

from evalsuite.protocol import LADDER
from evalsuite.records import RunRecord

from .cells import Cell


def _settled_at(cell: Cell, value: float) -> list[RunRecord]:
    """The cell's runs with every figure at ``value`` (other rates a little lower, so the choice
    stands) and its first rung above the base on every reported seed at ``value``: a cell settled
    there."""
    m, chosen = cell.metric, set(cell.long_rates)
    out = []
    for r in cell.runs:
        x = value if any(abs(r.lr - lr) < 1e-12 for lr in chosen) else max(0.0, value - 0.02)
        out.append(r.model_copy(update={"metrics": {**r.metrics, m: x, "accuracy": x if m == "accuracy" else
                                                    r.metrics.get("accuracy"), "val_accuracy": x, "undertrained": False}}))
    have = {(r.seed, round(r.lr, 12)) for r in cell._rung(1)}
    for r in cell.best_runs:
        for lr in cell.long_rates:
            if (r.seed, round(lr, 12)) not in have:
                config = {**r.config, "train": {**r.config["train"], "lr": lr, "epochs": LADDER[1] * cell.base_epochs}}
                out.append(r.model_copy(update={"run_id": f"{r.run_id}~{lr}~rung1", "config": config,
                                                "metrics": {**r.metrics, m: value, "val_accuracy": value,
                                                            "undertrained": False}}))
    return out


def decisive(exp, runs: list[RunRecord], probes, scale: str, cell: Cell) -> bool:
    """Whether ``exp``'s verdict depends on ``cell`` (module docstring)."""
    ids = {r.run_id for r in cell.runs}
    rest = [r for r in runs if r.run_id not in ids]
    floor = cell.floor if cell.floor == cell.floor else 0.0

    def outcome(value):
        v = exp.judge(rest + _settled_at(cell, value), probes, scale)
        return v.status, tuple(sorted(v.checks.items()))
    return outcome(1.0) != outcome(floor)
