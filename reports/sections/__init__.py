"""Report sections: one class per section, each with its template partial.

A section is a subclass of ``Section`` in any module of this package (modules are discovered):
``build(data, fmt)`` returns what its partial ``templates/sections/<id>.html.j2`` shows, or
nothing to leave the section out. ``order`` places it. So a new section is two files: its module
and its partial (``state_rank.py`` is the worked example). ``data`` is the ``ReportData`` every
section reads: the run records, the summary rows (one per configuration, at its best learning
rate), the per-slice accuracies of those best runs, the capacity-probe rows, and a reproduction's
verdicts.
"""
from __future__ import annotations

import importlib
import math
import pkgutil
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pandas as pd

from evalsuite.labels import model_label
from evalsuite.records import RunRecord, Verdict

MAX_MODEL_PANELS = 6  # attention maps and Gram matrices: one per model label, at most this many


@dataclass
class ReportData:
    runs: list[RunRecord]
    summary: list[dict]
    slices: pd.DataFrame
    probes: pd.DataFrame | None
    verdicts: list[Verdict] = field(default_factory=list)


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


def sections() -> list[Section]:
    """One instance of every section class in this package, in order."""
    from evalsuite.reports import sections as package

    for module in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{package.__name__}.{module.name}")
    return sorted((cls() for cls in _subclasses(Section)), key=lambda s: (s.order, s.id))


def _subclasses(cls) -> list[type]:
    out = []
    for sub in cls.__subclasses__():
        out += ([sub] if "id" in vars(sub) else []) + _subclasses(sub)
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
