"""The run itself, first, when a report holds one run (`evalsuite run`'s report): its accuracy
beside the task's floor and the target, how training ended, and its learning curve with the floor
and the target drawn; the analyses follow."""
from __future__ import annotations

from evalsuite.labels import model_label
from evalsuite.records import TARGET_ACCURACY, convergence_note, floor_of
from evalsuite.reports import plots

from . import ReportData, Section, section


@section
class Run(Section):
    id, title, order = "run", "The run", 1
    leads = True

    def build(self, data: ReportData, fmt: str) -> dict | None:
        if len(data.runs) != 1:
            return None
        r = data.runs[0]
        m, cfg = r.metrics, r.config
        target = cfg["train"].get("target_accuracy", TARGET_ACCURACY)
        floor = floor_of(m)
        acc = m.get("accuracy")
        label = f"{model_label(cfg)} on {cfg['task']['name']}"
        return {"run": r.run_id, "label": label, "status": r.status.value, "accuracy": acc,
                "val": m.get("val_accuracy"), "floor": floor, "floor_reader": m.get("floor_reader") or "chance rule",
                "target": target, "above_floor": None if acc is None or floor is None else acc - floor,
                "steps": m.get("steps"), "budget": m.get("budget_steps"), "best_step": m.get("best_step"),
                "tvd": m.get("tvd"), "tvd_floor": m.get("tvd_floor"),
                "undertrained": bool(m.get("undertrained")), "note": convergence_note(m), "error": r.first_error_line()
                if r.error else None, "warnings": r.warnings,
                "curve": plots.run_curve(r.history, floor=floor, target=target, title=label, fmt=fmt)}
