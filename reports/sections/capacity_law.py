"""The capacity law in trained models: accuracy against D / d' for every fixed-state model whose
state has a key-side size d' (``models.key_features``), curves that fall together on
min(1, d' / D) when a state of d' features holds d' pairs (the squared-error law; capacity-argmax
has the argmax one); pairs retrieved past d' against d';
and the capacity each map shows in the trained probe beside what trained models retrieve. It no
longer leads a report: capacity-law is retired, and a sweep over D leads with its own answer."""
from __future__ import annotations

import pandas as pd

from evalsuite.analysis.capacity import probe_capacities
from evalsuite.protocol import setting_key
from evalsuite.reports import plots

from . import ReportData, Section, section, mark_budgets, numbered

MIN_POINTS = 3  # a curve needs this many D values to be drawn


@section
class CapacityLaw(Section):
    id, title, order = "capacity-law", "Capacity law", 4
    leads = False  # retired: the squared-error law is not what a trained model's state holds (capacity-argmax)

    def build(self, data: ReportData, fmt: str) -> dict | None:
        configs = {r.run_id: r.config for r in data.runs}
        rows = pd.DataFrame([{"model": r["model"], "d_prime": r.get("d_prime"), "D": r["pairs"], "layers": r["n_layers"],
                              "width": r["d_model"], "accuracy": r["accuracy"], "std": r["accuracy_std"],
                              "seeds": r["seeds"], "floor": r["chance"], "epochs": r["epochs"],
                              "point": setting_key(configs[r["anchor"]]),
                              "curve": curve_key(configs[r["anchor"]])}
                             for r in data.summary if r["task"] == "recall" and r.get("d_prime") and r["pairs"]
                             and r["accuracy"] is not None and r["anchor"] in configs])
        if rows.empty:
            return None
        # one curve is one setting swept over D (its length with it) at one base budget: runs of
        # another width, vocabulary or budget (another experiment's) never join it. A point's 4x
        # rerun (BUDGET_FACTOR x a budget the point also ran) is drawn hollow beside its base: a
        # capacity does not move with budget, a shortfall of budget does
        rows = mark_budgets(rows)
        rows["curve"] = rows.curve + "|" + rows.base.map(lambda e: f"{e:.4g}")
        rows, long = rows[~rows.long], rows[rows.long]
        rows = rows.groupby("curve").filter(lambda g: g.D.nunique() >= MIN_POINTS).copy()
        if rows.empty:
            return None
        long = long[long.curve.isin(set(rows.curve))].copy()
        names = series_names(rows)
        for df in (rows, long):
            df["series"] = df.curve.map(names)
            df["ratio"] = df.D / df.d_prime
        rows["pairs_retrieved"] = rows.accuracy * rows.D
        past = rows[rows.D > rows.d_prime]
        plateau = past.groupby(["series", "model", "d_prime"], sort=True).pairs_retrieved.mean().rename("retrieved").reset_index()
        probe = probe_capacities(data.probes)
        table = []
        for r in plateau.itertuples():
            p = probe.get((r.model, int(r.d_prime)))
            table.append({"series": r.series, "d_prime": int(r.d_prime), "trained": r.retrieved,
                          "trained_ratio": r.retrieved / r.d_prime, "probe": p,
                          "ratio": None if not p else r.retrieved / p})
        plots_ = [{"title": "accuracy against D / d' (the law: min(1, d'/D), dashed)", "name": "collapse",
                   "uri": plots.collapse(rows, title="MQAR: accuracy against D / d'", fmt=fmt, long=long)}]
        if not plateau.empty:
            plots_.append({"title": "pairs retrieved past d' against d'", "name": "retrieved",
                           "uri": plots.retrieved_against_d(plateau, title="pairs retrieved against d'", fmt=fmt)})
        points = rows.sort_values(["series", "D"]).to_dict("records")
        return {"plots": plots_, "table": table, "points": points}


def curve_key(config: dict) -> str:
    """A run's curve: its setting (``config.setting_key``: less seed, rate and budget) less D and
    what a capacity sweep scales with it: the length and the model's position table."""
    task = {k: v for k, v in config["task"].items() if k not in ("num_kv_pairs", "seq_len")}
    model = {k: v for k, v in config["model"].items() if k != "max_len"}
    return setting_key({**config, "task": task, "model": model})


def series_names(rows: pd.DataFrame) -> dict[str, str]:
    """Curve -> its legend name: the model, d' and a layer count other than 2; where two curves
    would share a name, their width and base budget (epochs) too, then a number."""
    first = rows.groupby("curve").first()
    short = {c: f"{r.model} d'={int(r.d_prime)}" + ("" if r.layers == 2 else f", {r.layers} layer{'s' * (r.layers != 1)}")
             for c, r in first.iterrows()}
    counts = pd.Series(short).value_counts()
    names = {c: n if counts[n] == 1 else f"{n}, width {first.width[c]}, {first.base[c]:g} epochs" for c, n in short.items()}
    return numbered(names)
