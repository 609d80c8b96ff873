"""Attention sharpness: entropy and answer mass per layer and head, one query's attention row."""
from __future__ import annotations

import pandas as pd

from evalsuite.labels import model_label
from evalsuite.records import RunRecord
from evalsuite.reports import plots

from . import ReportData, Section, section, _best_per_model, per_head, setting_label


@section
class Sharpness(Section):
    id, title, order = "sharpness", "Sharpness", 50

    def build(self, data: ReportData, fmt: str) -> dict | None:
        section = _sharpness(data.runs, fmt)
        section["table"] = per_head(section["table"], data.compact)
        return section if section["table"] else None


def _sharpness(runs: list[RunRecord], fmt: str) -> dict:
    section: dict = {"plots": [], "table": []}
    rows, ctx = [], []
    for r in runs:
        a = r.metrics.get("analysis") or {} if r.ok else {}
        for row in a.get("sharpness", []):
            rows.append({"run": r.run_id, "model": model_label(r.config), "task": r.config["task"]["name"],
                         "setting": setting_label(r.config), **row})
        for row in a.get("sharpness_by_context", []):
            ctx.append({"model": f"{model_label(r.config)} L{row['layer']}H{row['head']}", **row})
    section["table"] = rows
    df = pd.DataFrame(rows)
    if not df.empty:
        df["layer/head"] = "L" + df.layer.astype(str) + "H" + df["head"].astype(str)
        for col, label in (("entropy", "entropy of the weights (nats)"), ("answer_mass", "weight on the answer")):
            section["plots"].append({"title": label, "uri": plots.bars(
                df, "layer/head", col, "model", title=f"{label}, per layer and head", ylabel=label, fmt=fmt)})
    c = pd.DataFrame(ctx)
    if not c.empty and c.context.nunique() > 1:
        section["plots"].append({"title": "normalised entropy against context length", "uri": plots.lines(
            c, "context", "norm_entropy", "model", title="entropy / log(context) vs context length",
            xlabel="context length at the query", ylabel="normalised entropy", target=False, fmt=fmt)})
    for item in _best_per_model(runs):
        ex = item["run"].metrics["analysis"].get("example")
        if ex:
            section["plots"].append({"title": f"one query's attention: {item['label']}", "uri": plots.attention_row(
                ex["weights"], answer=ex["answer_position"], reach=ex["reach"], query=ex["query_position"],
                title=f"{item['label']}: layer {ex['layer']} head {ex['head']}, query at {ex['query_position']}",
                fmt=fmt)})
    return section
