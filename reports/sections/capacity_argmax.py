"""What a fixed state holds under argmax (``evalsuite reproduce capacity-argmax`` and
``capacity-trained``): the trained argmax probe's n* against the state's side d on log-log axes,
with the calibration (Gaussian pairs, no training), Schlag et al.'s squared-error control, and both
laws drawn; and trained MQAR models' accuracy against D over the probe's n* at their (d_k, d_v)
(the collapse against the law the data support), with a table of probe against trained n*."""
from __future__ import annotations

import math

import pandas as pd

from evalsuite import selection
from evalsuite.protocol import setting_key
from evalsuite.reports import capacity_plots

from . import ReportData, Section, mark_budgets, section

REPORTED = (1, 2, 3)  # the probe's reported seeds (``reproduce.argmax.REPORTED``)


@section
class CapacityArgmax(Section):
    id, title, order = "capacity-argmax", "Capacity under argmax", 5
    leads = True

    def build(self, data: ReportData, fmt: str) -> dict | None:
        probe = probe_table(data.probes)
        trained = trained_points(data.runs, probe)
        plots = []
        points, laws = against_d(data.probes, probe)
        if not points.empty:
            plots.append({"title": "n* against the state's side d (log-log; both laws drawn)", "name": "against-d",
                          "uri": capacity_plots.capacity_against_d(points, laws, fmt=fmt,
                                                                   title="pairs a d x d state holds")})
        if not trained.empty:
            curve = probe_curve(data.probes, probe)
            plots.append({"title": "trained models: accuracy against D / the probe's n*", "name": "collapse",
                          "uri": capacity_plots.accuracy_over_probe(trained, curve, fmt=fmt,
                                                                    title="MQAR: accuracy against D / n* (probe)")})
        if not plots:
            return None
        return {"plots": plots, "probes": probe.to_dict("records"), "trained": trained_table(trained, probe)}


def probe_table(probes: pd.DataFrame | None) -> pd.DataFrame:
    """One row per trained argmax probe configuration (memory, d_k, d_v, vocabulary): n* at each
    reported seed's last budget, their mean and range, and whether every seed converged."""
    cols = ["label", "d_key", "d_value", "n_keys", "n_values", "n", "lo", "hi", "seeds", "converged"]
    if probes is None or probes.empty or "variant" not in probes or "call" not in probes:
        return pd.DataFrame(columns=cols)
    rows = probes[(probes.variant == "trained") & probes.seed.isin(REPORTED) & probes.call.notna()]
    last = []
    for _, r in rows.groupby("call"):
        top = r[r.max_steps == r.max_steps.max()].iloc[0]
        last.append(top)
    if not last:
        return pd.DataFrame(columns=cols)
    df = pd.DataFrame(last)
    out = []
    for (label, dk, dv, nk, nv), g in df.groupby(["label", "d_key", "d_value", "n_keys", "n_values"]):
        caps = [c for c in g.capacity if math.isfinite(c)]
        out.append({"label": label, "d_key": int(dk), "d_value": int(dv), "n_keys": int(nk), "n_values": int(nv),
                    "n": sum(caps) / len(caps) if caps else math.nan, "lo": min(caps, default=math.nan),
                    "hi": max(caps, default=math.nan), "seeds": len(g), "converged": bool(g.converged.fillna(False).all())})
    return pd.DataFrame(out, columns=cols)


def against_d(probes: pd.DataFrame | None, table: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The points of the log-log plot (the probe on the diagonal per memory and vocabulary, the
    calibration, the squared-error control) and the two laws over their range of d."""
    from evalsuite.analysis.argmax_probe import law_capacity
    from evalsuite.analysis.capacity import probe_capacities

    first = f"{int(table.n_keys.max())} keys" if len(table) else ""  # the largest vocabulary: capacity-argmax's
    pts = [{"series": f"{r.label} (trained; {r.n_keys} keys, {r.n_values} values)", "d": r.d_key,
            "n": r.n, "lo": r.lo, "hi": r.hi, "panel": f"{r.n_keys} keys"} for r in table.itertuples()
           if r.d_key == r.d_value and r.n > 0 and math.isfinite(r.n)]
    first = first or "the probes"
    if probes is not None and not probes.empty and "variant" in probes:
        cal = probes[probes.variant == "calibration"]
        for d, g in cal.groupby("d_key"):
            if "capacity" in g and g.capacity.notna().any() and g.capacity.iloc[-1] > 0:
                n = float(g.capacity.dropna().iloc[-1])
                pts.append({"series": "calibration (Gaussian pairs, M = sum y x^T)", "d": int(d), "n": n, "lo": n, "hi": n,
                            "panel": first})
    schlag = probes is not None and {"trained", "setting", "memory"} <= set(probes.columns)
    for (memory, d), n in (probe_capacities(probes) if schlag else {}).items():
        if memory == "linear/elu1" and n > 0:
            pts.append({"series": "elu+1, squared error (control)", "d": int(d), "n": n, "lo": n, "hi": n, "panel": first})
    points = pd.DataFrame(pts, columns=["series", "d", "n", "lo", "hi", "panel"])
    if len(points):  # the panel of the largest vocabulary (with the calibration and the control) first
        points = points.sort_values("panel", key=lambda p: p != first, kind="stable")
    if points.empty:
        return points, pd.DataFrame(columns=["d", "n", "law"])
    lo, hi = int(points.d.min()), int(points.d.max())
    ds = [lo * (hi / lo) ** (k / 40) for k in range(41)] if hi > lo else [lo]
    laws = pd.DataFrame([{"d": d, "n": law_capacity(d, d), "law": "argmax: n ln n = d^2 / 2"} for d in ds]
                        + [{"d": d, "n": d, "law": "squared error: n = d"} for d in ds])
    return points, laws


def _probe_n(table: pd.DataFrame, label: str, dk: int, dv: int, n_keys: int) -> float | None:
    row = table[(table.label == label) & (table.d_key == dk) & (table.d_value == dv) & (table.n_keys == n_keys)]
    return float(row.n.iloc[0]) if len(row) and row.n.iloc[0] > 0 and math.isfinite(row.n.iloc[0]) else None


def _memory_label(model: dict) -> str | None:
    if model["name"] == "delta":
        return "delta"
    if model["name"] == "linear" and model.get("feature_map") == "elu1":
        return "elu+1"
    return None


def trained_points(runs, table: pd.DataFrame) -> pd.DataFrame:
    """Mixed-D MQAR runs of a state with its own value side: per configuration and budget, at its best
    rate (by validation), the mean accuracy at each eval segment's D over the seeds, with D over the
    probe's n* at its (d_k, d_v) on the run's vocabulary (``ratio``) and the segment's floor."""
    from evalsuite.protocol import config_key

    groups: dict[str, list] = {}
    for r in runs:
        m, task = r.config.get("model", {}), r.config.get("task", {})
        if r.ok and task.get("name") == "recall" and m.get("value_dim") and len(task.get("eval_segments") or []) > 1:
            groups.setdefault(config_key(r.config), []).append(r)
    rows = []
    for members in groups.values():
        _, best = selection.at_best_rate(members)
        if not best:
            continue
        cfg = best[0].config
        m, task = cfg["model"], cfg["task"]
        label = _memory_label(m)
        n_keys = task["vocab_size"] // 2 - 1
        dk, dv = m.get("feature_dim"), m["value_dim"]
        n = _probe_n(table, label, dk, dv, n_keys) if label and dk else None
        if n is None:
            continue
        layers = m["n_layers"]
        series = f"{label} (d_k {dk}, d_v {dv}), {layers} layer{'s' * (layers != 1)}"
        for i, seg in enumerate(task["eval_segments"]):
            accs = [r.metrics.get(f"eval_{i}_accuracy") for r in best]
            floors = [r.metrics.get(f"eval_{i}_floor") for r in best]
            accs = [a for a in accs if a is not None]
            if not accs:
                continue
            D = seg["num_kv_pairs"]
            rows.append({"series": series, "label": label, "d_key": dk, "d_value": dv, "layers": layers, "D": D,
                         "ratio": D / n, "accuracy": sum(accs) / len(accs), "seeds": len(accs),
                         "floor": next((f for f in floors if f is not None), 1 / D), "epochs": cfg["train"]["epochs"],
                         "point": setting_key(cfg), "probe": n})
    df = pd.DataFrame(rows)
    return mark_budgets(df) if not df.empty else df


def probe_curve(probes: pd.DataFrame | None, table: pd.DataFrame) -> pd.DataFrame:
    """The probe's accuracy against n / n* at the (d_k, d_v) of the trained points (its reported
    seeds at their last budget)."""
    if probes is None or probes.empty or table.empty:
        return pd.DataFrame(columns=["label", "state", "ratio", "accuracy"])
    rows = probes[(probes.variant == "trained") & probes.seed.isin(REPORTED)]
    out = []
    for _, r in rows.groupby("call"):
        r = r[r.max_steps == r.max_steps.max()]
        first = r.iloc[0]
        n = _probe_n(table, first.label, int(first.d_key), int(first.d_value), int(first.n_keys))
        if n and first.n_keys < 256:  # the vocabulary of trained MQAR models (256 tokens)
            out += [{"label": first.label, "state": f"{int(first.d_key)}x{int(first.d_value)}", "ratio": p / n,
                     "accuracy": a} for p, a in zip(r.pairs, r.accuracy)]
    return pd.DataFrame(out, columns=["label", "state", "ratio", "accuracy"])


def trained_table(trained: pd.DataFrame, table: pd.DataFrame) -> list[dict]:
    """Per configuration and budget: n* of its mean curve over D, the probe's n*, and their ratio."""
    from evalsuite.analysis.argmax_probe import capacity

    if trained.empty:
        return []
    out = []
    for (series, epochs), g in trained.groupby(["series", "epochs"]):
        g = g.sort_values("D")
        n = capacity(list(g.D), list(g.accuracy))
        probe = float(g.probe.iloc[0])
        text = "< 2" if n == 0 else f"> {int(g.D.max())}" if math.isinf(n) else f"{n:.1f}"
        out.append({"series": series, "epochs": epochs, "seeds": int(g.seeds.min()), "trained": text,
                    "probe": probe, "ratio": "" if n == 0 or math.isinf(n) else f"{n / probe:.2f}"})
    return out
