"""Accuracy against width, pairs and length: one line per model, at each configuration's best rate."""
from __future__ import annotations

import pandas as pd

from evalsuite.reports import plots

from . import ReportData, Section, section, _distinguish, _lines_only


@section
class Scaling(Section):
    id, title, order = "scaling", "Scaling", 10

    def build(self, data: ReportData, fmt: str) -> list[dict]:
        return _scaling_plots(data.summary, data.slices, fmt)


def _scaling_plots(summary: list[dict], slices: pd.DataFrame, fmt: str) -> list[dict]:
    """Zoology-style: accuracy against width, pairs and length, one line per model (state size is
    in the capacity section)."""
    df = pd.DataFrame([r for r in summary if r["accuracy"] is not None])
    out = []
    if df.empty:
        return out
    for x, label, logx in (("d_model", "model width d_model", True),):
        for task, part in df.groupby("task"):
            part = _lines_only(_distinguish(part, ("pairs", "seq_len")), x)
            if not part.empty:
                out.append({"title": f"{task}: accuracy against {label}",
                            "uri": plots.lines(part, x, "accuracy", "model", title=f"{task}: accuracy vs {label}",
                                               xlabel=label, logx=logx, floor="chance", fmt=fmt)})
    if slices.empty:
        return out
    for task, rows in slices.groupby("task"):
        for key in _plotted_keys(task):  # the task's own slice keys: a new task needs no change here
            if key not in rows:
                continue
            part = _lines_only(_distinguish(rows.dropna(subset=[key]), ("d_model",)), key)
            if not part.empty:
                label = AXIS_LABELS.get(key, key.replace("_", " "))
                out.append({"title": f"{task}: accuracy against {label}",
                            "uri": plots.lines(part, key, "accuracy", "model", title=f"{task}: accuracy vs {label}",
                                               xlabel=label, logx=True, floor="floor", fmt=fmt)})
    return out


AXIS_LABELS = {"num_kv_pairs": "number of pairs", "seq_len": "sequence length"}


def _plotted_keys(task: str) -> tuple[str, ...]:
    """A task's numeric slice keys (``Task.slice_keys``; ``*_bin`` keys are categories, for their own
    sections such as the needle's heat map)."""
    from evalsuite.registry import UnknownName
    from evalsuite.tasks import TASKS

    try:
        return tuple(k for k in TASKS.get(task).slice_keys if not k.endswith("_bin"))
    except UnknownName:
        return ()
