"""State rank: the effective rank of each layer's memory after a sequence (``analysis/state_rank.py``).

The worked example of a report section: this class and its partial
(``templates/sections/state_rank.html.j2``) are all it takes."""
from __future__ import annotations

import pandas as pd

from evalsuite.labels import model_label
from evalsuite.reports import plots

from . import ReportData, Section, section


@section
class StateRank(Section):
    id, title, order = "state_rank", "State rank", 60

    def build(self, data: ReportData, fmt: str) -> dict | None:
        rows = [{"run": r.run_id, "model": model_label(r.config), "task": r.task, **row,
                 "used": row["effective_rank"] / row["max_rank"] if row["max_rank"] else None}
                for r in data.runs if r.ok
                for row in (r.metrics.get("analysis") or {}).get("state_rank", [])]
        if not rows:
            return None
        df = pd.DataFrame(rows)
        df["layer/head"] = "L" + df.layer.astype(str) + "H" + df["head"].astype(str)
        plot = plots.bars(df, "layer/head", "effective_rank", "model", title="effective rank of the state after a sequence",
                          ylabel="effective rank", fmt=fmt)
        return {"table": rows, "plots": [{"title": "effective rank of the state", "uri": plot}]}
