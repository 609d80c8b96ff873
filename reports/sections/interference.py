"""Key interference: key coherence and effective rank beside random keys, and cross-talk."""
from __future__ import annotations

import pandas as pd

from evalsuite.labels import model_label
from evalsuite.records import RunRecord
from evalsuite.reports import plots

from . import ReportData, Section, section, _best_per_model, per_head, setting_label


CROSSTALK_CAP = 1e3  # cross-talk above this is a near-zero signal, not interference


@section
class Interference(Section):
    id, title, order = "interference", "Interference", 40

    def build(self, data: ReportData, fmt: str) -> dict | None:
        section = _interference(data.runs, fmt)
        section["table"] = per_head(section["table"], data.compact)
        return section if section["table"] else None


def _interference(runs: list[RunRecord], fmt: str) -> dict:
    section: dict = {"plots": [], "table": []}
    rows, by_keys = [], []
    for r in runs:
        a = r.metrics.get("analysis") or {} if r.ok else {}
        for row in a.get("interference", []):
            rows.append({"run": r.run_id, "model": model_label(r.config), "task": r.config["task"]["name"],
                         "setting": setting_label(r.config), **row})
        for row in a.get("interference_by_keys", []):
            by_keys.append({"model": f"{model_label(r.config)} L{row['layer']}H{row['head']}", **row})
    section["table"] = rows
    for item in _best_per_model(runs):
        ex = item["run"].metrics["analysis"].get("example")
        if ex and ex.get("gram") and len(ex["gram"]) > 1:  # a 1 x 1 Gram matrix says nothing
            grid = pd.DataFrame(ex["gram"], index=ex["key_positions"], columns=ex["key_positions"])
            section["plots"].append({"title": f"key Gram matrix: {item['label']}", "uri": plots.heatmap(
                grid, title=f"key cosines, layer {ex['layer']} head {ex['head']}: {item['label']}",
                xlabel="key position", ylabel="key position", vmin=-1, vmax=1, cmap="vlag", center=0, fmt=fmt)})
    keys = pd.DataFrame(by_keys)
    if not keys.empty and keys.n_keys.nunique() > 1:
        for col, label in (("coherence_mean", "mean |cosine| between keys"), ("effective_rank", "effective rank of keys")):
            section["plots"].append({"title": f"{label} against keys", "uri": plots.lines(
                keys, "n_keys", col, "model", title=f"{label} vs number of keys", xlabel="stored keys",
                ylabel=label, target=False, fmt=fmt)})
    df = pd.DataFrame(rows)
    if not df.empty:
        df["layer/head"] = "L" + df.layer.astype(str) + "H" + df["head"].astype(str)
        # a head that reads almost nothing from the answer has a near-zero denominator: its ratio
        # says "no signal", not "the worst interference"; capped at CROSSTALK_CAP and marked
        capped = df.crosstalk_median > CROSSTALK_CAP
        df["crosstalk_shown"] = df.crosstalk_median.clip(upper=CROSSTALK_CAP)
        title = "median cross-talk |noise| / |signal|" + (f" (capped at {CROSSTALK_CAP:g}: no signal)" if capped.any() else "")
        section["plots"].append({"title": "cross-talk per layer and head" + (
            f"; {int(capped.sum())} bar(s) capped at {CROSSTALK_CAP:g}, where the head reads almost nothing from the answer"
            if capped.any() else ""), "uri": plots.bars(
            df, "layer/head", "crosstalk_shown", "model", title=title, ylabel="cross-talk (log scale)", logy=True, fmt=fmt)})
    return section
