"""Self-contained HTML reports: Jinja2 templates, inline CSS and JavaScript, plots as data: URIs,
the raw results embedded as JSON. Nothing refers to any URL outside the file.

A section appears when the data for it exists: summary, accuracy against width / state /
pairs / length, needle heat map, capacity, interference, sharpness, then one section per run.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Iterable

import jinja2
import pandas as pd

from evalsuite import files
from evalsuite.labels import model_label
from evalsuite.records import METRICS, SELECT_RATE_BY, RunRecord
from evalsuite.train import convergence_note

from . import plots

PLOT_FORMATS = ("png", "svg")
MAX_MODEL_PANELS = 6  # attention maps and Gram matrices: one per model label, at most this many

_env = jinja2.Environment(
    loader=jinja2.PackageLoader("evalsuite.reports", "templates"),
    autoescape=True,  # every user-controlled string (names, config values, errors) is escaped
    undefined=jinja2.StrictUndefined,
)


def _fmt(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, int) and abs(value) >= 10_000:
        return f"{value:,}"
    return str(value)


_env.filters["fmt"] = _fmt


def config_key(config: dict) -> str:
    """A configuration: everything but the learning rate and the seed (the axes aggregated over)."""
    train = {k: v for k, v in config["train"].items() if k != "lr"}
    return json.dumps({"task": config["task"], "model": config["model"], "train": train}, sort_keys=True, default=str)


def summarize(runs: list[RunRecord]) -> list[dict]:
    """One row per configuration: the best learning rate by mean validation accuracy over seeds, the
    mean and spread of test accuracy over seeds at that rate beside the task's chance floor, how
    many of those runs were undertrained, and every run's status (failed and diverged counted)."""
    groups: dict[str, list[RunRecord]] = {}
    for run in runs:
        groups.setdefault(config_key(run.config), []).append(run)
    rows = []
    for members in groups.values():
        cfg = members[0].config
        done = [r for r in members if r.ok and r.metrics.get("accuracy") is not None]
        by_lr: dict[float, list[RunRecord]] = {}
        for r in done:
            by_lr.setdefault(r.config["train"]["lr"], []).append(r)
        best_lr, best = None, []
        if by_lr:
            best_lr, best = max(by_lr.items(), key=lambda kv: METRICS[SELECT_RATE_BY].reduce(
                [r.metrics.get(SELECT_RATE_BY, r.metrics["accuracy"]) for r in kv[1]]))
        accs = [r.metrics["accuracy"] for r in best]
        mean = sum(accs) / len(accs) if accs else None
        std = (sum((a - mean) ** 2 for a in accs) / (len(accs) - 1)) ** 0.5 if len(accs) > 1 else None
        statuses: dict[str, int] = {}
        for r in members:
            statuses[r.status.value] = statuses.get(r.status.value, 0) + 1
        anchor = max(best, key=lambda r: r.metrics["accuracy"]) if best else members[0]
        task = cfg["task"]
        rows.append({
            "anchor": anchor.run_id, "task": task["name"], "seq_len": task.get("seq_len"),
            "pairs": task.get("num_kv_pairs"), "model": model_label(cfg), "d_model": cfg["model"]["d_model"],
            "n_layers": cfg["model"]["n_layers"], "state_size": anchor.metrics.get("state_size"),
            "best_lr": best_lr, "lrs": len(by_lr), "accuracy": mean, "accuracy_std": std, "seeds": len(accs),
            "chance": _aggregate(best, "context_chance"), "epochs": cfg["train"].get("epochs"),
            "undertrained": _aggregate(best, "undertrained") or 0,
            "runs": len(members), "status": ", ".join(f"{n} {s}" for s, n in sorted(statuses.items())),
            "failed": sum(n for s, n in statuses.items() if s != "done"),
            "error": next((r.first_error_line() for r in members if r.error), None),
        })
    return sorted(rows, key=lambda r: (r["task"], r["model"], r["d_model"], r["seq_len"] or 0, r["pairs"] or 0))


def _aggregate(runs: list[RunRecord], name: str):
    """A metric over seeds, as the metric declares (``records.METRICS``)."""
    return METRICS[name].reduce([r.metrics.get(name) for r in runs])


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


def _distinguish(df: pd.DataFrame, keys) -> pd.DataFrame:
    """Name the settings that vary within a plot in its line labels (so D=4 and D=16 are two lines)."""
    df = df.copy()
    for key in keys:
        if key in df and df[key].nunique() > 1:
            df["model"] = df["model"] + f" {key}=" + df[key].map(_short)
    return df


def _short(value) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def _slices(runs: list[RunRecord], best: set[str]) -> pd.DataFrame:
    """Per-slice test accuracies of the best run of each configuration (best learning rate)."""
    rows = []
    for r in runs:
        if not r.ok or r.run_id not in best:
            continue
        for s in r.metrics.get("slices") or []:
            rows.append({"task": r.config["task"]["name"], "model": model_label(r.config), "run_id": r.run_id,
                         "d_model": r.config["model"]["d_model"], **s})
    return pd.DataFrame(rows)


def _needle(slices: pd.DataFrame, fmt: str) -> list[dict]:
    if slices.empty or "depth_bin" not in slices:
        return []
    out = []
    for model, part in slices[slices.task == "needle"].dropna(subset=["depth_bin"]).groupby("model"):
        grid = part.pivot_table(index="depth_bin", columns="seq_len", values="accuracy", aggfunc="mean")
        grid.index = [f"{10 * int(d)}-{10 * int(d) + 10}%" for d in grid.index]
        out.append({"title": f"needle: {model}", "uri": plots.heatmap(
            grid, title=f"needle in a haystack: {model}", xlabel="context length", ylabel="needle depth",
            vmin=0, vmax=1, cmap="RdYlGn", fmt=fmt)})
    return out


def _capacity(slices: pd.DataFrame, summary: list[dict], probes: pd.DataFrame | None, fmt: str) -> dict:
    from evalsuite.analysis import half_point, knee

    section: dict = {"plots": [], "table": []}
    if probes is not None and not probes.empty:
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
            section["plots"].append({"title": f"capacity probe ({kind}, setting {setting})", "uri": plots.lines(
                part, "pairs", "accuracy", "memory", title=f"capacity probe ({kind}, setting {setting})",
                xlabel="stored pairs S", logx=True, knees=knees, fmt=fmt)})
    if not slices.empty and "num_kv_pairs" in slices:
        part = _distinguish(slices.dropna(subset=["num_kv_pairs"]), ("d_model",))
        if part.num_kv_pairs.nunique() > 1:
            knees = {}
            for model, m in part.groupby("model"):
                curve = m.groupby("num_kv_pairs").accuracy.mean().reset_index().rename(columns={"num_kv_pairs": "pairs"})
                k = knee(curve)
                section["table"].append({"source": "trained models (test slices)", "model": model, "d_key": None,
                                         "knee": k, "half": half_point(curve), "max_pairs": int(curve.pairs.max())})
                if k:
                    knees[model] = (k, float(curve[curve.pairs == k].accuracy.iloc[0]))
            section["plots"].append({"title": "accuracy against stored pairs (trained models)", "uri": plots.lines(
                part, "num_kv_pairs", "accuracy", "model", title="trained models: accuracy vs pairs",
                xlabel="key-value pairs in context", logx=True, knees=knees, fmt=fmt)})
    states = pd.DataFrame([r for r in summary if r["accuracy"] is not None and r["state_size"]])
    if not states.empty and len(states) > 1:
        states = _distinguish(states, ("task", "pairs"))
        section["plots"].append({"title": "accuracy against state size", "uri": plots.lines(
            states, "state_size", "accuracy", "model", title="accuracy vs state size (floats per sequence)",
            xlabel="state size", logx=True, fmt=fmt)})
    return section


def _best_per_model(runs: list[RunRecord]) -> list[dict]:
    """The best done run of each model label that carries an analysis, best accuracy first."""
    best: dict[str, RunRecord] = {}
    for r in runs:
        if not r.ok or "sharpness" not in (r.metrics.get("analysis") or {}):
            continue
        label = f"{model_label(r.config)} on {r.config['task']['name']}"
        if label not in best or r.metrics["accuracy"] > best[label].metrics["accuracy"]:
            best[label] = r
    return [dict(label=k, run=v) for k, v in list(best.items())[:MAX_MODEL_PANELS]]


def _interference(runs: list[RunRecord], fmt: str) -> dict:
    section: dict = {"plots": [], "table": []}
    rows, by_keys = [], []
    for r in runs:
        a = r.metrics.get("analysis") or {} if r.ok else {}
        for row in a.get("interference", []):
            rows.append({"run": r.run_id, "model": model_label(r.config), "task": r.config["task"]["name"],
                         **row})
        for row in a.get("interference_by_keys", []):
            by_keys.append({"model": f"{model_label(r.config)} L{row['layer']}H{row['head']}", **row})
    section["table"] = rows
    for item in _best_per_model(runs):
        ex = item["run"].metrics["analysis"].get("example")
        if ex and ex.get("gram"):
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
        section["plots"].append({"title": "cross-talk per layer and head", "uri": plots.bars(
            df, "layer/head", "crosstalk_median", "model", title="median cross-talk |noise| / |signal|",
            ylabel="cross-talk (log scale)", logy=True, fmt=fmt)})
    return section


def _sharpness(runs: list[RunRecord], fmt: str) -> dict:
    section: dict = {"plots": [], "table": []}
    rows, ctx = [], []
    for r in runs:
        a = r.metrics.get("analysis") or {} if r.ok else {}
        for row in a.get("sharpness", []):
            rows.append({"run": r.run_id, "model": model_label(r.config), "task": r.config["task"]["name"], **row})
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


def _json_for_script(data) -> str:
    # "<" escaped so that no "</script>" (or "<!--") inside a string can end the element
    return json.dumps(data, default=str, allow_nan=False).replace("<", "\\u003c")


def _clean(value):
    """NaN/inf to None so the embedded JSON is valid."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


SCALAR_METRICS = ("accuracy", "val_accuracy", "context_chance", "majority_rate", "loss", "steps", "budget_steps",
                  "best_step", "stopped", "undertrained", "last_quarter_gain", "wall_time_s",
                  "steps_per_s", "parameters", "state_size", "state_bytes_fp32", "seq_len")


def render(runs: Iterable[RunRecord], title: str = "evalsuite report", *, probes: pd.DataFrame | None = None,
           plot_format: str = "png", preamble: str | None = None) -> str:
    """``runs``: run records. ``probes``: capacity-probe rows (``evalsuite.analysis.capacity_probe``
    output, several memories)."""
    if plot_format not in PLOT_FORMATS:
        raise ValueError(f"plot_format must be one of {PLOT_FORMATS}, got {plot_format!r}")
    runs = list(runs)
    summary = summarize(runs)
    slices = _slices(runs, {row["anchor"] for row in summary})
    views = [_view(r) for r in runs]  # what the template shows of each run
    raw = _clean([r.model_dump(mode="json", exclude={"history"}) for r in runs])
    context = dict(
        title=title, preamble=preamble, runs=views, summary=summary,
        failed=[v for v in views if v["status"] != "done"],
        scaling=_scaling_plots(summary, slices, plot_format),
        needle=_needle(slices, plot_format),
        capacity=_capacity(slices, summary, probes, plot_format),
        interference=_interference(runs, plot_format),
        sharpness=_sharpness(runs, plot_format),
        raw_json=_json_for_script({"runs": raw, "probes": None if probes is None else _clean(probes.to_dict("records"))}),
    )
    return _env.get_template("report.html.j2").render(**context)


def _view(r: RunRecord) -> dict:
    return {**r.model_dump(exclude={"history"}), "status": r.status.value, "label": model_label(r.config),
            "curve": plots.training_curves(r.history, fmt="png"),  # small, many of them
            "config_json": json.dumps(r.config, indent=2, sort_keys=True),
            "scalars": [(k, r.metrics[k]) for k in SCALAR_METRICS if k in r.metrics],
            "convergence": convergence_note(r.metrics), "errors": (r.metrics.get("analysis") or {}).get("errors")}


def write(runs: Iterable[dict], path: str | Path, title: str = "evalsuite report", **options) -> Path:
    """Render and write atomically (a half-written report never appears at ``path``)."""
    html = render(runs, title, **options)
    return files.write_text(path, html)
