"""A sweep's answer as one table: finished runs pivoted on two of their settings (ROWS x COLS),
each cell the test accuracy mean +- sd over seeds beside the floor. What `evalsuite runs --pivot`
prints, what `sweep` prints at its end, and what a sweep's report leads with.

A cell reads its runs as every table and verdict does (``selection``): the rate with the best
validation accuracy over the seeds that ran every rate (never test accuracy), the figure over the
other seeds; settings that differ in more than the rate and share a cell (one and two layers, say)
are told apart by validation too, and the cell says of how many it was chosen.
"""
from __future__ import annotations

import json
from typing import Any

from evalsuite.records import RunRecord, floor_of

# what a pivot can put on its rows or columns: the listing's settings and the model's sizes
PIVOTABLE = ("task", "model", "T", "D", "lr", "epochs", "d_model", "n_layers", "feature_dim", "value_dim")

# a sweep grid's key (its first part, for a joint key such as "model,model.feature_map") -> its axis
GRID_AXES = {"task": "task", "model": "model", "model.feature_map": "model", "feature_map": "model",
             "task.seq_len": "T", "task.num_kv_pairs": "D", "train.lr": "lr", "train.epochs": "epochs",
             "model.d_model": "d_model", "model.n_layers": "n_layers", "model.feature_dim": "feature_dim",
             "model.value_dim": "value_dim"}


def value(r: RunRecord, axis: str) -> Any:
    """A run's value on one axis of ``PIVOTABLE``."""
    from evalsuite.labels import model_label

    if axis == "task":
        return r.config["task"]["name"]
    if axis == "model":
        return model_label(r.config)
    if axis in ("T", "D"):
        return r.config["task"].get("seq_len" if axis == "T" else "num_kv_pairs")
    if axis in ("lr", "epochs"):
        return r.config["train"].get(axis)
    return r.config["model"].get(axis)


def cells(records: list[RunRecord], axes: tuple[str, str]) -> list[dict]:
    """One dict per (row, col) of the finished runs with a test accuracy: ``accuracy`` (mean over
    seeds), ``sd`` (None for one seed), ``seeds``, ``floor``, ``lr`` and ``settings``. Each
    setting's figure is read as every table and verdict reads one (``selection.at_best_rate``: the
    rate with the best validation accuracy over the seeds that ran every rate, the figure over the
    other seeds); where settings that differ in more than the rate share a cell, the one with the
    best validation accuracy is shown and ``settings`` counts them."""
    from evalsuite import selection
    from evalsuite.protocol import config_key

    groups: dict[tuple, dict[str, list]] = {}
    for r in records:
        if not r.ok or r.metrics.get("accuracy") is None:
            continue
        groups.setdefault((value(r, axes[0]), value(r, axes[1])), {}).setdefault(config_key(r.config), []).append(r)
    out = []
    for (row, col), settings in groups.items():
        read = []
        for runs in settings.values():
            lr, held = selection.at_best_rate(runs)
            if held:
                read.append((selection.figure(held, "val_accuracy").mean, lr, held))
        if not read:
            continue
        _, lr, held = max(read, key=lambda x: (x[0] if x[0] == x[0] else -1.0, len(x[2])))
        fig = selection.figure(held)
        floors = [f for x in held if (f := floor_of(x.metrics)) is not None]
        out.append({axes[0]: row, axes[1]: col, "accuracy": fig.mean, "sd": fig.std, "seeds": fig.n, "lr": lr,
                    "floor": sum(floors) / len(floors) if floors else None, "settings": len(settings),
                    "run_ids": [x.run_id for x in held]})
    return out


def text(c: dict) -> str:
    """One cell as the table prints it: "0.850 +- 0.050 (n=3; floor 0.250) [best of 2]"."""
    out = f"{c['accuracy']:.3f}" + (f" +- {c['sd']:.3f}" if c["sd"] is not None else "") + f" (n={c['seeds']}"
    out += f"; floor {c['floor']:.3f})" if c["floor"] is not None else ")"
    return out + (f" [best of {c['settings']}]" if c["settings"] > 1 else "")


def table(found: list[dict], axes: tuple[str, str]):
    """The cells as a ROWS x COLS frame of their text ("-" where no run is); empty for none."""
    import pandas as pd

    if not found:
        return pd.DataFrame()
    frame = pd.DataFrame([{axes[0]: c[axes[0]], axes[1]: c[axes[1]], "cell": text(c)} for c in found])
    return frame.pivot(index=axes[0], columns=axes[1], values="cell").fillna("-")


def sweep_axes(grid_keys) -> tuple[str, str] | None:
    """The pivot that answers a sweep's question: its swept variables (the model down where it is
    swept), the rate left to the choice by validation; a sweep of one variable puts it across the
    tasks. None where nothing swept is pivotable."""
    swept = list(dict.fromkeys(a for k in grid_keys if (a := GRID_AXES.get(k.split(",")[0].strip())) and a != "lr"))
    return _pick(swept)


def varying_axes(records: list[RunRecord]) -> tuple[str, str] | None:
    """The same pivot for runs whose sweep is not known (a report): the axes along which the
    finished runs take more than one value, the rate and budget left out (they are chosen, not
    asked)."""
    done = [r for r in records if r.ok]
    swept = [a for a in PIVOTABLE if a not in ("lr", "epochs") and len({json.dumps(value(r, a), default=str)
                                                                        for r in done}) > 1]
    return _pick(swept)


def _pick(swept: list[str]) -> tuple[str, str] | None:
    swept = sorted(swept, key=lambda a: a != "model")
    if len(swept) >= 2:
        return swept[0], swept[1]
    if len(swept) == 1 and swept[0] != "task":
        return swept[0], "task"
    return None
