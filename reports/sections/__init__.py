"""Report sections: one class per section, each with its template partial.

A section is a subclass of ``Section`` registered with ``@section`` in any module of this package
(``SECTIONS``, the suite's one ``Registry``, imports every module here on first use):
``build(data, fmt)`` returns what its partial ``templates/sections/<id>.html.j2`` shows, or
nothing to leave the section out. ``order`` places it. So a new section is two files: its module
and its partial (``state_rank.py`` is the worked example). ``data`` is the ``ReportData`` every
section reads: the run records, the summary rows (one per configuration, at its best learning
rate), the per-slice accuracies of those best runs, the capacity-probe rows, and a reproduction's
verdicts.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pandas as pd

from evalsuite.labels import mixture, model_label
from evalsuite.records import RunRecord, Verdict
from evalsuite.registry import Registry

MAX_MODEL_PANELS = 6  # attention maps and Gram matrices: one per model label, at most this many


@dataclass
class ReportData:
    runs: list[RunRecord]
    summary: list[dict]
    slices: pd.DataFrame
    probes: pd.DataFrame | None
    verdicts: list[Verdict] = field(default_factory=list)
    compact: bool = False  # a committed report: tables of per-run rows are summarised (``per_head``)


def mark_budgets(rows: pd.DataFrame) -> pd.DataFrame:
    """``rows`` (one per configuration, with ``point``: its ``config.setting_key``, and ``epochs``)
    with ``long``: a 4x rerun, BUDGET_FACTOR x a budget the same point also ran (the protocol's
    escalation), and ``base``: the budget it is drawn beside (its own for the rest)."""
    from evalsuite.protocol import BUDGET_FACTOR

    budgets = rows.groupby("point").epochs.agg(lambda e: set(e.dropna()))
    rows = rows.copy()
    rows["long"] = [pd.notna(e) and any(math.isclose(e, BUDGET_FACTOR * b) for b in budgets[p])
                    for e, p in zip(rows.epochs, rows.point)]
    rows["base"] = [e / BUDGET_FACTOR if lg else e for e, lg in zip(rows.epochs, rows.long)]
    return rows


def numbered(names: dict[str, str]) -> dict[str, str]:
    """Legend names made distinct: the second and later holders of a name (in key order) get
    " (2)", " (3)" ..."""
    out, seen = dict(names), {}
    for key in sorted(out):
        seen[out[key]] = seen.get(out[key], 0) + 1
        if seen[out[key]] > 1:
            out[key] += f" ({seen[out[key]]})"
    return out


PER_HEAD_KEYS = ["model", "task", "setting", "layer", "head"]


def setting_label(config: dict) -> str:
    """What sets a run's shape apart from others of its model and task, short: length, pairs, width,
    layers and the key-side feature size where set (an analysis table's means never mix these)."""
    task, model, mix = config["task"], config["model"], mixture(config["task"])
    parts = [f"mixed T {mix['T']}, D {mix['D']}" if mix else None,
             f"T {task['seq_len']}" if task.get("seq_len") and not mix else None,
             f"D {task['num_kv_pairs']}" if task.get("num_kv_pairs") and not mix else None,
             f"width {model.get('d_model')}", f"{model.get('n_layers')} layers",
             f"feature_dim {model['feature_dim']}" if model.get("feature_dim") else None]
    return ", ".join(p for p in parts if p)


def per_head(rows: list[dict], compact: bool) -> list[dict]:
    """An analysis table's rows (one per run, layer and head). In a compact report, their means per
    model, task, setting (``setting_label``), layer and head, with ``runs`` counting the runs averaged (a reproduction's thousands
    of runs would otherwise make these tables most of the file); the per-run figures stay in the store."""
    if not compact or not rows:
        return rows
    df = pd.DataFrame(rows)
    numeric = [c for c in df.columns if c not in PER_HEAD_KEYS and c != "run" and pd.api.types.is_numeric_dtype(df[c])
               and not pd.api.types.is_bool_dtype(df[c])]
    groups = df.groupby(PER_HEAD_KEYS, sort=True)
    out = groups[numeric].mean().reset_index()
    out["runs"] = groups.size().to_numpy()
    return out.to_dict("records")


class Section:
    id: ClassVar[str]       # the anchor (``#id``) and the partial's name
    title: ClassVar[str]    # the navigation link
    order: ClassVar[int] = 50
    leads: ClassVar[bool] = False  # shown before the summary table (a headline figure)

    def build(self, data: ReportData, fmt: str) -> Any:
        """What the partial shows (falsy: the section is left out)."""
        raise NotImplementedError

    @property
    def template(self) -> str:
        return f"sections/{self.id}.html.j2"


SECTIONS = Registry("report section", builtin_package=__name__)


def section(cls: type[Section]) -> type[Section]:
    """Register a ``Section`` subclass under its ``id`` (a class decorator)."""
    return SECTIONS.register(cls.id, obj=cls)


def sections() -> list[Section]:
    """One instance of every registered section, in order."""
    return sorted((cls() for _, cls in SECTIONS.items()), key=lambda s: (s.order, s.id))


def _lines_only(df: pd.DataFrame, x: str, series: str = "model") -> pd.DataFrame:
    """The series of ``df`` with two or more distinct ``x``: a line plot draws lines, and a model run
    at one value of its axis is one point beside others, which the summary table already shows (a
    panel of lone points answers no question). Empty when no series has two."""
    if df.empty or x not in df or series not in df:
        return df.iloc[0:0]
    counts = df.dropna(subset=[x]).groupby(series)[x].nunique()
    return df[df[series].isin(counts[counts >= 2].index)]


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
