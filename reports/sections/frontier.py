"""The recall-memory frontier: accuracy against state size, one line per model, the Pareto
frontier marked, and the least state that reaches 0.9 and 0.99 per model (the frontier
experiments of ``evalsuite reproduce`` judge this picture). Leads the report when a task was run
with several models at several state sizes."""
from __future__ import annotations

import math

import pandas as pd

from evalsuite.records import TARGET_ACCURACY
from evalsuite.reports import plots

from . import ReportData, Section

MIN_MODELS, MIN_POINTS = 2, 4  # below this there is no picture to draw
LEVELS = (0.9, TARGET_ACCURACY)  # the accuracies whose least state the table shows


def pareto(rows: list[dict]) -> list[dict]:
    """The rows (``state``, ``accuracy``) that no other row beats with no more state."""
    ordered = sorted(rows, key=lambda r: (r["state"], -r["accuracy"]))
    front, best = [], -math.inf
    for r in ordered:
        if r["accuracy"] > best:
            front.append(r)
            best = r["accuracy"]
    return front


class Frontier(Section):
    id, title, order = "frontier", "Frontier", 5
    leads = True  # the recall-memory picture heads a reproduction report

    def build(self, data: ReportData, fmt: str) -> dict | None:
        rows = pd.DataFrame([{"task": r["task"], "T": r["seq_len"], "D": r["pairs"], "model": r["model"],
                              "state": r["state_size"], "zoology": r.get("state_zoology"), "accuracy": r["accuracy"], "val": r.get("val_accuracy"), "floor": r.get("chance"),
                              "epochs": r["epochs"], "run": r["anchor"]}
                             for r in data.summary if r["accuracy"] is not None and r["state_size"]])
        if rows.empty:
            return None
        # one point per model and state: of its budgets (a 4x rerun is part of the protocol), the one that
        # validates best (never chosen by test accuracy)
        rows = rows.sort_values(["val", "epochs"], na_position="first").groupby(
            ["task", "T", "D", "model", "state"], dropna=False).tail(1)
        plots_, table, points = [], [], []
        for (task, T, D), part in rows.groupby(["task", "T", "D"], dropna=False):
            if part.model.nunique() < MIN_MODELS or len(part) < MIN_POINTS:
                continue
            front = pd.DataFrame(pareto(part.to_dict("records")))
            setting = f"{task}" + (f", T={T:g}, D={D:g}" if pd.notna(T) and pd.notna(D) else "")
            plots_.append({"title": f"accuracy against state size: {setting}",
                           "name": f"{task}" + (f"-T{T:g}-D{D:g}" if pd.notna(T) and pd.notna(D) else ""),
                           "uri": plots.frontier(part, front, title=f"recall against state: {setting}", fmt=fmt)})
            on_front = set(front.run)
            for model, m in part.groupby("model"):
                reach = {lvl: m[m.accuracy >= lvl].sort_values("state").head(1) for lvl in LEVELS}
                table.append({"setting": setting, "model": model, "points": len(m), "best": m.accuracy.max(),
                              **{f"state_{lvl}": (None if r.empty else r.state.iloc[0]) for lvl, r in reach.items()},
                              "zoology": (None if reach[LEVELS[0]].empty or pd.isna(reach[LEVELS[0]].zoology.iloc[0])
                                          else reach[LEVELS[0]].zoology.iloc[0])})
            points += [{**r, "setting": setting, "frontier": r["run"] in on_front}
                       for r in part.sort_values(["model", "state"]).to_dict("records")]
        if not plots_:
            return None
        return {"plots": plots_, "table": table, "points": points, "levels": LEVELS}
