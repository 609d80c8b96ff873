"""The recall-memory frontier: accuracy against state size, one line per model setting, the
Pareto frontier marked, and the least state that reaches 0.9 and 0.99 per line (the frontier
experiments of ``evalsuite reproduce`` judge this picture). Leads the report when a task was run
with several models at several state sizes.

One plot is one task setting (task, T, D) at one base budget: runs trained for another budget
(another experiment's) never share a plot or a frontier with it, and a line is one setting swept
over the axis that sets its state (``state_axis``), so runs of another width or layer count never
join it. A point's 4x rerun (``BUDGET_FACTOR`` x a budget the same point also ran, the protocol's
escalation) is drawn hollow beside its base point: a capacity does not move with budget, a
shortfall of budget does. State is counted as Zoology counts it per mixer (docs/FINDINGS.md,
finding 21; ``reproduce.frontier.state``, which the frontier verdicts read): the mixers' floats,
the short convolution's window left out."""
from __future__ import annotations

import math
import re

import pandas as pd

from evalsuite.protocol import BUDGET_FACTOR, setting_key
from evalsuite.records import TARGET_ACCURACY
from evalsuite.reports import plots

from . import ReportData, Section, section, mark_budgets, numbered

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


def state_axis(model: dict) -> str:
    """The model key that sets a run's state along its line: both sides of the state where they
    are set equal (``feature_dim+value_dim``, the binding setting's grid), else the key-side feature
    size where set (width then fixed), else the window of a windowed mixer, else the width."""
    if model.get("feature_dim") is not None and model.get("value_dim") == model["feature_dim"]:
        return "feature_dim+value_dim"
    if model.get("feature_dim") is not None:
        return "feature_dim"
    if model.get("window") is not None:
        return "window"
    return "d_model"


def line_key(config: dict) -> str:
    """A run's line: its setting (``config.setting_key``: less seed, rate and budget) less the key
    that sets its state (``state_axis``)."""
    axis = state_axis(config["model"]).split("+")
    return setting_key({**config, "model": {k: v for k, v in config["model"].items() if k not in axis}})


def line_names(rows: pd.DataFrame) -> dict[str, str]:
    """Line -> its legend name: the model label; where two lines of a plot would share one, the
    width (a line over the width says so) and a layer count other than 2, then a number."""
    first = rows.groupby("line").first()
    # a line over both sides of the state names neither side's size (its anchor's), but the axis
    names = {c: (re.sub(r" \(d_k [^,]+, d_v [^)]+\)", "", r.model) + " (over d_k = d_v)"
                 if r.axis == "feature_dim+value_dim" else r.model) for c, r in first.iterrows()}
    counts = pd.Series(names).value_counts()
    for c, r in first.iterrows():
        if counts[names[c]] > 1:
            names[c] = (f"{r.model}, " + ("over width" if r.axis == "d_model" else f"width {r.width}")
                        + ("" if r.layers == 2 else f", {r.layers} layer{'s' * (r.layers != 1)}"))
    return numbered(names)


def segments_read(verdicts) -> dict[str, set[int]]:
    """Run id -> the eval segments (``eval_{i}_accuracy``) the report's verdicts read of it."""
    read: dict[str, set[int]] = {}
    for v in verdicts:
        for c in v.cells:
            if m := re.fullmatch(r"eval_(\d+)_accuracy", c.metric):
                for run_id in (*c.run_ids.values(), *c.long_run_ids.values()):
                    read.setdefault(run_id, set()).add(int(m.group(1)))
    return read


def shapes(row: dict, read: dict[str, set[int]]) -> list[dict]:
    """A summary row's (T, D, accuracy) points: its own for a run of one shape; for a run trained
    on a mixture of shapes, one per eval segment (the figure a verdict at that D reads, such as the
    binding setting's frontier at D = 16), only the segments the report's verdicts read of it where
    they read some (``read``), not the mixture's overall accuracy, which no verdict reads (drawn,
    labelled as the mixture, only for a run that kept no per-segment figure)."""
    segments = row.get("eval_segments") if row.get("mixture") else None
    if segments and read.get(row["anchor"]):
        segments = [s for s in segments if s["index"] in read[row["anchor"]]]
    points = segments or [row]  # none kept: the mixture's own
    return [{"T": p["seq_len"], "D": p["pairs"], "accuracy": p["accuracy"], "std": p.get("accuracy_std"),
             "seeds": p.get("seeds"), "floor": p.get("chance")} for p in points]


@section
class Frontier(Section):
    id, title, order = "frontier", "Frontier", 5
    leads = True  # the recall-memory picture heads a reproduction report

    def build(self, data: ReportData, fmt: str) -> dict | None:
        configs = {r.run_id: r.config for r in data.runs}
        read = segments_read(data.verdicts)
        rows = pd.DataFrame([{**point, "task": r["task"], "model": r["model"],
                              "mix": (f"trained on mixed D {r['mixture']['D']} (T {r['mixture']['T']})"
                                      if r.get("mixture") else ""),
                              "state": r["state_zoology"] / 4, "ours": r["state_size"], "zoology": r["state_zoology"],
                              "epochs": r["epochs"], "layers": r["n_layers"], "width": r["d_model"], "run": r["anchor"],
                              "axis": state_axis(configs[r["anchor"]]["model"]),
                              "point": setting_key(configs[r["anchor"]]), "line": line_key(configs[r["anchor"]])}
                             for r in data.summary if r["accuracy"] is not None and r["state_size"]
                             and r.get("state_zoology") is not None and r["anchor"] in configs
                             for point in shapes(r, read)])
        if rows.empty:
            return None
        rows = mark_budgets(rows)  # a point's 4x rerun (long) and the base budget it is drawn beside
        rows["line"] = rows.line + "|" + rows.base.map(lambda e: "" if pd.isna(e) else f"{e:.4g}")
        plots_, table, points, sizes = [], [], [], []
        for (task, T, D, mix, base), part in rows.groupby(["task", "T", "D", "mix", "base"], dropna=False, sort=True):
            short, long = part[~part.long].copy(), part[part.long].copy()
            if short.model.nunique() < MIN_MODELS or len(short) < MIN_POINTS:
                continue
            long = long[long.line.isin(set(short.line))]
            names = line_names(short)
            for df in (short, long):
                df["series"] = df.line.map(names)
            both = pd.concat([short, long])
            front = pd.DataFrame(pareto(both.to_dict("records")))
            shape = (f", T={T:g}, D={D:g}" if pd.notna(T) and pd.notna(D) else "") + (f", {mix}" if mix else "")
            budget = "" if pd.isna(base) else f", {base:g} epochs" + (" (hollow: 4x)" if len(long) else "")
            setting = f"{task}{shape}" + ("" if pd.isna(base) else f", {base:g} epochs")
            sizes.append((len(both), 0 if pd.isna(D) else D))
            plots_.append({"title": f"accuracy against state size: {task}{shape}{budget}",
                           "name": f"{task}" + (f"-T{T:g}-D{D:g}" if pd.notna(T) and pd.notna(D) else "") + ("-mixed" if mix else "") + ("" if pd.isna(base) else f"-{base:g}ep"),
                           "uri": plots.frontier(short, front, title=f"accuracy against state: {task}{shape}{budget}",
                                                 fmt=fmt, long=long)})
            on_front = set(front.run)
            for name, m in short.groupby("series", sort=True):
                ml = long[long.series == name]
                reach = {lvl: m[m.accuracy >= lvl].state.min() for lvl in LEVELS}
                with_4x = pd.concat([m, ml])
                reach_4x = with_4x[with_4x.accuracy >= LEVELS[0]].sort_values("state").head(1)
                table.append({"setting": setting, "model": name, "points": len(m), "best": m.accuracy.max(),
                              "best_4x": None if ml.empty else ml.accuracy.max(),
                              **{f"state_{lvl}": (None if pd.isna(s) else s) for lvl, s in reach.items()},
                              "state_4x": None if reach_4x.empty else reach_4x.state.iloc[0],
                              "zoology": (None if reach_4x.empty or pd.isna(reach_4x.zoology.iloc[0])
                                          else reach_4x.zoology.iloc[0])})
            points += [{**r, "setting": setting, "budget": "4x" if r["long"] else "base", "frontier": r["run"] in on_front}
                       for r in both.sort_values(["series", "state", "long"]).to_dict("records")]
        if not plots_:
            return None
        # the most points first, then the most pairs (a mixture's hardest eval segment before its easiest)
        plots_ = [p for _, p in sorted(zip(sizes, plots_), key=lambda sp: (-sp[0][0], -sp[0][1]))]
        return {"plots": plots_, "table": table, "points": points, "levels": LEVELS, "factor": BUDGET_FACTOR}
