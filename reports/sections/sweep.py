"""A sweep's own question first: when a report's runs vary along one or two settings (a model x D
sweep, say), it leads with their pivot (``evalsuite.pivot``): test accuracy mean +- sd over seeds
per cell, beside the floor, the rate chosen by validation. A reproduction leads with its verdicts
instead, and a single run with itself."""
from __future__ import annotations

from evalsuite import pivot

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
        cols = sorted({c[axes[1]] for c in found}, key=lambda v: (isinstance(v, str), v if not isinstance(v, str) else 0, str(v)))
        at = {(c[axes[0]], c[axes[1]]): c for c in found}
        return {"axes": axes, "cols": cols,
                "rows": [{"name": r, "cells": [at.get((r, c)) for c in cols]} for r in rows],
                "command": f"evalsuite runs --pivot {axes[0]},{axes[1]}"}
