"""A reproduction's verdicts (``records.Verdict``): each finding, its source, the figures it rests
on, each clause of the claim, the outcome with why, and one small figure of the cells it read
(each seed at the chosen rate and at 4x the budget, beside the task's floor), and, when opened, the
learning curves of those seeds drawn from the runs' embedded histories. Leads the report."""
from __future__ import annotations

from evalsuite.records import Outcome

from .. import plots
from . import ReportData, Section, section


@section
class Verdicts(Section):
    id, title, order = "verdicts", "Verdicts", 1
    leads = True

    def build(self, data: ReportData, fmt: str) -> dict | None:
        if not data.verdicts:
            return None
        counts = {o.value: sum(v.status is o for v in data.verdicts) for o in Outcome}
        figures = [plots.verdict_cells([c.model_dump() for c in v.cells], fmt=fmt) for v in data.verdicts]
        # what the page draws each verdict's learning curves from (the runs' embedded histories)
        cells = [[{"label": c.label, "floor": c.floor, "run_ids": c.run_ids, "long_run_ids": c.long_run_ids}
                  for c in v.cells] for v in data.verdicts]
        # what stands in the figure's place where a verdict read no trained cell: none run yet, or a probe's
        empty = ["no finished run yet: nothing trained to draw" if (v.why or "").startswith("no finished run")
                 else "no trained cells: a probe, drawn in its section" for v in data.verdicts]
        return {"verdicts": data.verdicts, "counts": counts, "figures": figures, "cells": cells, "empty": empty}
