"""Needle in a haystack: accuracy by context length and needle depth."""
from __future__ import annotations

import pandas as pd

from evalsuite.reports import plots

from . import ReportData, Section, section


@section
class Needle(Section):
    id, title, order = "needle", "Needle", 20

    def build(self, data: ReportData, fmt: str) -> list[dict]:
        return _needle(data.slices, fmt)


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
