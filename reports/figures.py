"""A reproduction's headline figures as PNG files: the plots of the sections that lead its report
(the capacity law's collapse plot, the frontier), drawn from the same runs, for a Markdown page
(the README) that cannot embed the report. ``evalsuite reproduce --figures DIR`` writes them, so
the README's result figures are generated from the store, never drawn or typed by hand."""
from __future__ import annotations

import base64
from pathlib import Path
from typing import Iterable

import pandas as pd

from evalsuite import files
from evalsuite.records import RunRecord

from .builder import _slices, summarize
from .sections import ReportData, sections

HEADLINES = ("capacity-law", "frontier")  # the sections whose plots head a reproduction's results


def headline_figures(runs: Iterable[RunRecord], probes: pd.DataFrame | None = None) -> list[tuple[str, str, bytes]]:
    """``(file name, title, PNG bytes)`` per plot of each headline section the runs fill, in the
    report's order, named by what it shows so a page's links survive new runs:
    ``capacity-law-collapse.png`` (accuracy against D / d'), ``capacity-law-retrieved.png`` (pairs
    retrieved against d'), ``frontier-recall-T64-D16.png`` ... (accuracy against state, one per
    setting). Empty when no run fills a headline section."""
    runs = list(runs)
    summary = summarize(runs)
    data = ReportData(runs, summary, _slices(runs, {row["anchor"] for row in summary}), probes, compact=True)
    out = []
    for section in sections():
        if section.id not in HEADLINES or not (built := section.build(data, "png")):
            continue
        for k, plot in enumerate(built["plots"], 1):
            header, encoded = plot["uri"].split(",", 1)
            assert header == "data:image/png;base64", header
            out.append((f"{section.id}-{plot.get('name', k)}.png", plot["title"], base64.b64decode(encoded)))
    return out


def write_figures(figures: list[tuple[str, str, bytes]], folder: Path) -> list[Path]:
    """Write each figure into ``folder`` (atomically; paths already checked by the caller)."""
    return [files.atomic_write(folder / name, lambda f, data=data: f.write(data)) for name, _, data in figures]
