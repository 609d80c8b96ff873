"""A reproduction's verdicts (``records.Verdict``): each finding, its source, the figures it rests
on, each clause of the claim, and the outcome with why. Leads the report."""
from __future__ import annotations

from evalsuite.records import Outcome

from . import ReportData, Section


class Verdicts(Section):
    id, title, order = "verdicts", "Verdicts", 1
    leads = True

    def build(self, data: ReportData, fmt: str) -> dict | None:
        if not data.verdicts:
            return None
        counts = {o.value: sum(v.status is o for v in data.verdicts) for o in Outcome}
        return {"verdicts": data.verdicts, "counts": counts}
