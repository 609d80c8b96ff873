"""Accuracy against width, pairs and length: one line per model, at each configuration's best rate."""
from __future__ import annotations

import pandas as pd

from evalsuite.reports import plots

from . import ReportData, Section, _distinguish


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
            part = _distinguish(part, ("pairs", "seq_len"))
            if part[x].nunique() > 1:
                out.append({"title": f"{task}: accuracy against {label}",
                            "uri": plots.lines(part, x, "accuracy", "model", title=f"{task}: accuracy vs {label}",
                                               xlabel=label, logx=logx, fmt=fmt)})
    for key, label in (("num_kv_pairs", "number of pairs"), ("seq_len", "sequence length")):
        if slices.empty or key not in slices:
            continue
        for task, part in slices.dropna(subset=[key]).groupby("task"):
            part = _distinguish(part, ("d_model",))
            if part[key].nunique() > 1:
                out.append({"title": f"{task}: accuracy against {label}",
                            "uri": plots.lines(part, key, "accuracy", "model", title=f"{task}: accuracy vs {label}",
                                               xlabel=label, logx=True, fmt=fmt)})
    return out
