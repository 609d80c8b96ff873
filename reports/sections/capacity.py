"""Capacity: probe curves and trained models against stored pairs, knees marked; accuracy against state size."""
from __future__ import annotations

import pandas as pd

from evalsuite.reports import plots

from . import ReportData, Section, section, _distinguish, _lines_only


@section
class Capacity(Section):
    id, title, order = "capacity", "Capacity", 30

    def build(self, data: ReportData, fmt: str) -> dict | None:
        section = _capacity(data.slices, data.summary, data.probes, fmt)
        return section if section["plots"] else None


def _capacity(slices: pd.DataFrame, summary: list[dict], probes: pd.DataFrame | None, fmt: str) -> dict:
    from evalsuite.analysis import half_point, knee

    section: dict = {"plots": [], "table": []}
    if probes is not None and "probe" in probes:  # the argmax probes are drawn in their own section
        probes = probes[~probes.probe.isin(["argmax", "calibration"])]
    if probes is not None and not probes.empty:
        if "variant" in probes:  # one curve per objective: the cross-entropy probe is not the paper's
            ce = probes.variant == "schlag-ce"
            probes = probes.assign(memory=probes.memory.where(~ce, probes.memory + " (cross-entropy)"))
        for (setting, trained), part in probes.groupby(["setting", "trained"]):
            knees = {}
            for mem, m in part.groupby("memory"):
                k = knee(m)
                section["table"].append({"source": f"probe ({'trained' if trained else 'analytic'}, setting {setting})",
                                         "model": mem, "d_key": int(m.d_key.iloc[0]), "knee": k,
                                         "half": half_point(m), "max_pairs": int(m.pairs.max())})
                if k:
                    knees[mem] = (k, float(m[m.pairs == k].accuracy.iloc[0]))
            kind = "trained" if trained else "analytic"
            part = part.assign(floor=1.0 / part.pairs)  # the read is matched among the S stored values: chance 1/S
            section["plots"].append({"title": f"capacity probe ({kind}, setting {setting})", "uri": plots.lines(
                part, "pairs", "accuracy", "memory", title=f"capacity probe ({kind}, setting {setting})",
                xlabel="stored pairs S", logx=True, knees=knees, floor="floor", fmt=fmt)})
    if not slices.empty and "num_kv_pairs" in slices:
        for task, rows in slices.dropna(subset=["num_kv_pairs"]).groupby("task"):  # one task per accuracy axis
            part = _lines_only(_distinguish(rows, ("d_model",)), "num_kv_pairs")
            if part.empty:
                continue
            knees = {}
            for model, m in part.groupby("model"):
                curve = m.groupby("num_kv_pairs").accuracy.mean().reset_index().rename(columns={"num_kv_pairs": "pairs"})
                k = knee(curve)
                section["table"].append({"source": f"trained models ({task} test slices)", "model": model, "d_key": None,
                                         "knee": k, "half": half_point(curve), "max_pairs": int(curve.pairs.max())})
                if k:
                    knees[model] = (k, float(curve[curve.pairs == k].accuracy.iloc[0]))
            section["plots"].append({"title": f"{task}: accuracy against stored pairs (trained models)", "uri": plots.lines(
                part, "num_kv_pairs", "accuracy", "model", title=f"{task}: trained models, accuracy vs pairs",
                xlabel="key-value pairs in context", logx=True, knees=knees, floor="floor", fmt=fmt)})
    states = pd.DataFrame([r for r in summary if r["accuracy"] is not None and r["state_size"]])
    for task, part in (states.groupby("task") if not states.empty else []):  # one task per accuracy axis
        part = _lines_only(_distinguish(part, ("pairs",)), "state_size")
        if part.empty:
            continue
        section["plots"].append({"title": f"{task}: accuracy against state size", "uri": plots.lines(
            part, "state_size", "accuracy", "model", title=f"{task}: accuracy vs state size (floats per sequence)",
            xlabel="state size", logx=True, floor="chance", fmt=fmt)})
    return section
