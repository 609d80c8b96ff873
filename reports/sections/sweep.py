"""A sweep's own question first: when a report's runs vary along one or two settings (a model x D
sweep, say), it leads with their pivot (``evalsuite.pivot``): test accuracy mean +- sd over seeds
per cell, beside the floor, the rate chosen by validation. A reproduction leads with its verdicts
instead, and a single run with itself."""
from __future__ import annotations

from evalsuite import pivot
from evalsuite.reports import plots

from . import ReportData, Section, section


@section
class Sweep(Section):
    id, title, order = "sweep", "The sweep's answer", 2
    leads = True

    def build(self, data: ReportData, fmt: str) -> dict | None:
        if data.verdicts or len(data.runs) < 2:
            return None
        axes = pivot.varying_axes(data.runs)
        if axes is None:
            return None
        found = pivot.cells(data.runs, axes)
        if not found:
            return None
        rows = sorted({c[axes[0]] for c in found}, key=str)
        # numbers in order, then words, then "not set" (None: the column of runs that leave the key out)
        cols = sorted({c[axes[1]] for c in found}, key=lambda v: (v is None, isinstance(v, str),
                                                                   v if isinstance(v, (int, float)) else 0, str(v)))
        at = {(c[axes[0]], c[axes[1]]): c for c in found}
        by_id = {r.run_id: r for r in data.runs}
        panels = {c: {r: [by_id[i].history for i in at[r, c]["run_ids"] if i in by_id] for r in rows if (r, c) in at}
                  for c in cols}
        floors = {c: _mean([at[r, c]["floor"] for r in rows if (r, c) in at and at[r, c]["floor"] is not None])
                  for c in cols}
        curves = plots.overlaid_curves(panels, floors, rows=axes[0], cols=axes[1], fmt=fmt)
        return {"axes": axes, "cols": cols,
                "rows": [{"name": r, "cells": [at.get((r, c)) for c in cols]} for r in rows],
                "command": f"evalsuite runs --pivot {axes[0]},{axes[1]}", "curves": curves}


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None
