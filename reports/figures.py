"""A reproduction's headline figures as PNG files: the plots of the sections that lead its report
(the capacity law's collapse plot, the frontier), drawn from the same runs, for a Markdown page
(the README) that cannot embed the report. ``evalsuite reproduce --figures DIR`` writes them, so
the README's result figures are generated from the store, never drawn or typed by hand."""
from __future__ import annotations

import base64
from pathlib import Path
import pandas as pd

from evalsuite import files
from evalsuite.records import RunRecord

from .builder import _slices, summarize
from .sections import ReportData, sections

# the sections whose plots head a reproduction's results, each drawn from the runs of the experiments it heads
HEADLINES = {"capacity-law": ("capacity-law",), "frontier": ("frontier-delta", "frontier-swa", "frontier-based"),
             "capacity-argmax": ("capacity-argmax", "capacity-trained")}
# headline sections drawn from the probes as well as from runs: they draw where the named experiments
# were judged, runs or not (capacity-argmax's probe runs no model)
FROM_PROBES = {"capacity-argmax"}


def headline_figures(runs_by_experiment: dict[str, list[RunRecord]],
                     probes: pd.DataFrame | None = None) -> list[tuple[str, str, bytes]]:
    """``(file name, title, PNG bytes)`` per plot of each headline section, drawn from the runs of
    the experiments it heads (``HEADLINES``; the collapse plot from capacity-law's runs, the frontier
    from the frontier experiments', not every recall run the store holds), in the report's order and
    named by what it shows so a page's links survive new runs: ``capacity-law-collapse.png``
    (accuracy against D / d'), ``capacity-law-retrieved.png`` (pairs retrieved against d'),
    ``capacity-argmax-against-d.png`` (the argmax probe's n* against d, both laws drawn; from the
    probes, so it draws once capacity-argmax or capacity-trained is named, runs or not),
    ``capacity-argmax-collapse.png`` (trained mixed-D models against D over the probe's n*),
    ``frontier-recall-T64-D16-3ep.png`` ... (accuracy against state, one per setting and base budget,
    here 3 epochs, its 4x reruns drawn hollow on it). A section whose
    experiments are not in ``runs_by_experiment``, or have no runs, draws nothing."""
    out = []
    for section in sections():
        if section.id not in HEADLINES:
            continue
        runs = list({r.run_id: r for name in HEADLINES[section.id] for r in runs_by_experiment.get(name, [])}.values())
        named = any(name in runs_by_experiment for name in HEADLINES[section.id])
        if not runs and not (section.id in FROM_PROBES and named and probes is not None and len(probes)):
            continue
        summary = summarize(runs)
        data = ReportData(runs, summary, _slices(runs, {row["anchor"] for row in summary}), probes, compact=True)
        for k, plot in enumerate((section.build(data, "png") or {}).get("plots", []), 1):
            header, encoded = plot["uri"].split(",", 1)
            assert header == "data:image/png;base64", header
            out.append((f"{section.id}-{plot.get('name', k)}.png", plot["title"], base64.b64decode(encoded)))
    return out


def write_figures(figures: list[tuple[str, str, bytes]], folder: Path) -> list[Path]:
    """Write each figure into ``folder`` (atomically; paths already checked by the caller)."""
    return [files.atomic_write(folder / name, lambda f, data=data: f.write(data)) for name, _, data in figures]
