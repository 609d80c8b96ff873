"""Frontier (3 of 3): Based sits above both of its parts (Taylor linear attention, sliding-window
attention) at no more state (docs/FINDINGS.md, finding 9)."""
from __future__ import annotations

from evalsuite.reproduce import frontier as fr
from evalsuite.reproduce.cells import Cell
from evalsuite.reproduce.experiment import Experiment, register
from evalsuite.reproduce.verdict import above

PARTS = ("Taylor linear", "sliding window")


def check(fam: dict[str, list[Cell]]) -> tuple[dict[str, bool | None], list[str], list[Cell]]:
    """The best Based point above the strongest of each part with no more (x1.25) state (the
    clauses wait on Based's cells and on those rivals)."""
    based = [c for c in fam["Based"] if c.present]
    if not based:
        return {"Based above its parts": None}, ["no finished Based run"], fam["Based"]
    top = max(based, key=lambda c: c.val)  # the Based setting chosen by validation, never by test
    checks, figures, waits = {}, [f"Based: {top.label} {top.acc:.3f} at {fr.state_text(fr.state(top))} floats"], []
    for part in PARTS:
        rivals = [c for c in fam[part] if c.present and fr.state(c) <= fr.EQUAL_STATE * fr.state(top)]
        name = f"Based above {part} at no more state"
        if not rivals:
            checks[name] = None
            figures.append(f"{part}: no point with at most {fr.EQUAL_STATE}x Based's state")
            continue
        rival = max(rivals, key=lambda c: c.val)  # shown; the check reads every rival
        figures.append(f"{part}: {rival.label} {rival.acc:.3f} at {fr.state_text(fr.state(rival))} floats")
        orders = [above(top, r) for r in rivals]  # an ordering at every rung both reached (compare.ordered)
        checks[name] = True if all(o is True for o in orders) else False if any(o is False for o in orders) else None
        if checks[name] is None:
            waits += rivals
    return checks, figures, (based + waits) if any(v is None for v in checks.values()) else []


register(Experiment(
    "frontier-based", "Based sits above both of its parts (Taylor linear attention, sliding-window attention) at no more state.",
    fr.SOURCE, fr.verdict_of(check), fr.DESIGNS, fr.MINUTES, group="frontier",
    order=132))
