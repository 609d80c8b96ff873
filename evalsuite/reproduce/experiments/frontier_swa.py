"""Frontier (2 of 3): sliding-window attention needs far more state than fixed-state mixers for
the same recall (docs/FINDINGS.md, finding 9)."""
from __future__ import annotations

from evalsuite.reproduce import frontier as fr
from evalsuite.reproduce.cells import Cell
from evalsuite.reproduce.experiment import Experiment, register

FIXED_STATE = ("delta", "elu+1", "GLA", "Mamba-2", "RetNet")


def check(fam: dict[str, list[Cell]]) -> tuple[dict[str, bool | None], list[str], list[Cell]]:
    """Sliding windows need FAR times the state of the best fixed-state family for LEVEL (only
    settled shortfalls of the cheaper windows, and of the cheaper fixed-state points, count). The
    clause waits on the cells that could still move it: with the ratio at FAR or more, only the
    windows cheaper than FAR x the best (a fixed-state point that learns later only raises the
    ratio, or the bound where no window reached it); below CLOSE, only the fixed-state points
    cheaper than the window's state / CLOSE."""
    clause = f"sliding window needs >= {fr.FAR:g}x the state"
    windows, fixed = fam["sliding window"], [c for k in FIXED_STATE for c in fam[k]]
    reached = [s for s in (fr.smallest_state(fam[k]) for k in FIXED_STATE) if s is not None]
    window = fr.smallest_state(windows)
    best = min(reached) if reached else None
    figures = [f"least state reaching {fr.LEVEL}: sliding window {fr.state_text(window)}, "
               f"best fixed-state mixer {fr.state_text(best)}"]
    if best is None:
        return {clause: None}, figures, fixed
    windows_settled = fr.settled_under(windows, fr.FAR * best)
    if window is None:  # never reached: its largest window's state is a lower bound
        bound = max(c.state for c in windows) / best
        figures.append(f"sliding window never reached {fr.LEVEL}: more than {bound:.1f}x the state")
        figures += fr.learned_nowhere(fam, ["sliding window"])
        shown = bound >= fr.FAR and fr.never_reaches(windows) and fr.optimises(windows)
        # at FAR or more, a fixed-state point that learns later only raises the bound
        return {clause: True if shown else None}, figures, ([] if shown else windows if bound >= fr.FAR
                                                            else windows + fixed)
    ratio = window / best
    figures.append(f"ratio {ratio:.1f}x")
    fixed_settled = all(fr.settled_under(fam[k], window / fr.CLOSE) for k in FIXED_STATE)
    if ratio >= fr.FAR:
        verdict, waits = (True if windows_settled else None), [c for c in windows if c.state < fr.FAR * best]
    elif ratio < fr.CLOSE:
        verdict, waits = (False if fixed_settled else None), [c for c in fixed if c.state < window / fr.CLOSE]
    else:
        verdict, waits = None, windows + fixed
    return {clause: verdict}, figures, [] if verdict is not None else waits


register(Experiment(
    "frontier-swa",
    f"Sliding-window attention needs far more state ({fr.FAR:g}x or more) than fixed-state mixers for the same recall.",
    fr.SOURCE, fr.verdict_of(check), fr.PARAMS, fr.MINUTES, specs=fr.SPECS, cells=fr.all_cells, group="frontier",
    order=131))
