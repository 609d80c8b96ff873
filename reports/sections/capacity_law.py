"""The capacity law in trained models: accuracy against D / d' for every fixed-state model whose
state has a key-side size d' (``models.key_features``), curves that fall together on
min(1, d' / D) when a state of d' features holds d' pairs; pairs retrieved past d' against d';
and the capacity each map shows in the trained probe beside what trained models retrieve. Leads
the report where recall runs sweep D across d' (``evalsuite reproduce capacity-law``)."""
from __future__ import annotations

import pandas as pd

from evalsuite.analysis.capacity import probe_capacities
from evalsuite.reports import plots

from . import ReportData, Section

MIN_POINTS = 3  # a curve needs this many D values to be drawn


class CapacityLaw(Section):
    id, title, order = "capacity-law", "Capacity law", 4
    leads = True

    def build(self, data: ReportData, fmt: str) -> dict | None:
        rows = pd.DataFrame([{"model": r["model"], "d_prime": r.get("d_prime"), "D": r["pairs"], "layers": r["n_layers"],
                              "accuracy": r["accuracy"], "std": r["accuracy_std"], "seeds": r["seeds"],
                              "floor": r["chance"], "epochs": r["epochs"]}
                             for r in data.summary if r["task"] == "recall" and r.get("d_prime") and r["pairs"]
                             and r["accuracy"] is not None])
        if rows.empty:
            return None
        # the base budget of each point draws its curve; its 4x rerun (the longest budget, when longer)
        # is drawn hollow beside it: a capacity does not move with budget, a shortfall of budget does
        keys = ["model", "d_prime", "D", "layers"]
        ordered = rows.sort_values("epochs")
        rows, longest = ordered.groupby(keys).head(1), ordered.groupby(keys).tail(1)
        long = longest[longest.epochs.to_numpy() > rows.set_index(keys).loc[
            longest.set_index(keys).index].epochs.to_numpy()].copy()
        for df in (rows, long):
            df["series"] = df.model + " d'=" + df.d_prime.astype(int).astype(str) + df.layers.map(
                lambda n: "" if n == 2 else f", {n} layer{'s' * (n != 1)}")
            df["ratio"] = df.D / df.d_prime
        rows = rows.groupby("series").filter(lambda g: g.D.nunique() >= MIN_POINTS)
        if rows.empty:
            return None
        long = long[long.series.isin(set(rows.series))]
        rows["pairs_retrieved"] = rows.accuracy * rows.D
        past = rows[rows.D > rows.d_prime]
        plateau = past.groupby(["series", "model", "d_prime"]).pairs_retrieved.mean().rename("retrieved").reset_index()
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
