"""Frontier (2 of 3): sliding-window attention needs far more state than fixed-state mixers for
the same recall (docs/FINDINGS.md, finding 9)."""
from __future__ import annotations

from evalsuite.reproduce import frontier as fr
from evalsuite.reproduce.cells import Cell
from evalsuite.reproduce.experiment import Experiment, register

FIXED_STATE = ("delta", "elu+1", "GLA", "Mamba-2", "RetNet")


def check(fam: dict[str, list[Cell]]) -> tuple[dict[str, bool | None], list[str]]:
    """Sliding windows need FAR times the state of the best fixed-state family for LEVEL (only
    settled shortfalls of the cheaper windows, and of the cheaper fixed-state points, count)."""
    clause = f"sliding window needs >= {fr.FAR:g}x the state"
    reached = [s for s in (fr.smallest_state(fam[k]) for k in FIXED_STATE) if s is not None]
    window = fr.smallest_state(fam["sliding window"])
    best = min(reached) if reached else None
    figures = [f"least state reaching {fr.LEVEL}: sliding window {fr.state_text(window)}, "
               f"best fixed-state mixer {fr.state_text(best)}"]
    if best is None:
        return {clause: None}, figures
    windows_settled = fr.settled_under(fam["sliding window"], fr.FAR * best)
    if window is None:  # never reached: its largest window's state is a lower bound
        bound = max(c.state for c in fam["sliding window"]) / best
        figures.append(f"sliding window never reached {fr.LEVEL}: more than {bound:.1f}x the state")
        figures += fr.learned_nowhere(fam, ["sliding window"])
        return {clause: True if bound >= fr.FAR and fr.never_reaches(fam["sliding window"])
                and fr.optimises(fam["sliding window"]) else None}, figures
    ratio = window / best
    figures.append(f"ratio {ratio:.1f}x")
    fixed_settled = all(fr.settled_under(fam[k], window / fr.CLOSE) for k in FIXED_STATE)
    verdict = (True if ratio >= fr.FAR and windows_settled
               else False if ratio < fr.CLOSE and fixed_settled else None)
    return {clause: verdict}, figures


register(Experiment(
    "frontier-swa",
    f"Sliding-window attention needs far more state ({fr.FAR:g}x or more) than fixed-state mixers for the same recall.",
    fr.SOURCE, fr.verdict_of(check), fr.PARAMS, fr.MINUTES, specs=fr.SPECS, cells=fr.all_cells, group="frontier",
    order=131))
