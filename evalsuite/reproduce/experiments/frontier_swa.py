"""Frontier (2 of 3): sliding-window attention needs far more state than fixed-state mixers for
the same recall (docs/FINDINGS.md, finding 9)."""
from __future__ import annotations

from evalsuite.reproduce import frontier as fr
from evalsuite.reproduce.cells import Cell
from evalsuite.reproduce.experiment import Experiment, register

FIXED_STATE = ("delta", "elu+1", "GLA", "Mamba-2", "RetNet")


def check(fam: dict[str, list[Cell]]) -> tuple[dict[str, bool | None], list[str], list[Cell]]:
    """Sliding windows need FAR times the state of the best fixed-state family for LEVEL.

    A grid places each family's least state reaching LEVEL between its last point shown to fall
    short (``frontier.shown_short_to``) and its first point that reaches (``smallest_state``). The
    clause holds when the windows are shown short up to FAR x the best fixed-state point that
    reaches (a settled window of that state or more stays below LEVEL): the windows' next point
    reaching at FAR x or more is not enough, since a window between the two could reach at less.
    It is contradicted when a window reaches with less than CLOSE x the state up to which every
    fixed-state family is shown short. The clause waits on the cells that could still move it:
    with the windows' ratio at FAR or more, only the windows cheaper than FAR x the best and the
    cheapest one at FAR x or more (a fixed-state point that learns later only raises the ratio);
    below CLOSE, only the fixed-state points cheaper than the window's state / CLOSE."""
    clause = f"sliding window needs >= {fr.FAR:g}x the state"
    windows, fixed = fam["sliding window"], [c for k in FIXED_STATE for c in fam[k]]
    reached = [s for s in (fr.smallest_state(fam[k]) for k in FIXED_STATE) if s is not None]
    window = fr.smallest_state(windows)
    best = min(reached) if reached else None
    figures = [f"least state reaching {fr.LEVEL}: sliding window {fr.state_text(window)}, "
               f"best fixed-state mixer {fr.state_text(best)}"]
    if best is None:
        return {clause: None}, figures, fixed
    short = fr.shown_short_to(windows)
    if short is not None:
        figures.append(f"sliding window shown below {fr.LEVEL} up to {fr.state_text(short)} floats "
                       f"({short / best:.1f}x the best fixed-state mixer)")
    if window is None:  # never reached: its largest window's state is a lower bound
        bound = max(fr.state(c) for c in windows) / best
        figures.append(f"sliding window never reached {fr.LEVEL}: more than {bound:.1f}x the state")
        figures += fr.learned_nowhere(fam, ["sliding window"])
        shown = bound >= fr.FAR and fr.never_reaches(windows) and fr.optimises(windows)
        # at FAR or more, a fixed-state point that learns later only raises the bound
        return {clause: True if shown else None}, figures, ([] if shown else windows if bound >= fr.FAR
                                                            else windows + fixed)
    ratio = window / best
    figures.append(f"ratio {ratio:.1f}x")
    if ratio >= fr.FAR:
        verdict = True if short is not None and short >= fr.FAR * best else None
        # the windows that could show it: one of FAR x the best or more, below the one that reaches
        showing = sorted((c for c in windows if fr.FAR * best <= fr.state(c) < window), key=fr.state)
        waits = [c for c in windows if fr.state(c) < fr.FAR * best] + showing[:1]
        if verdict is None and not showing:
            figures.append(f"the grid does not resolve {fr.FAR:g}x: no window of {fr.state_text(fr.FAR * best)} "
                           f"floats or more below {fr.state_text(window)} was run, and one that stays below "
                           f"{fr.LEVEL} would show it")
    elif ratio < fr.CLOSE:
        bounds = [fr.shown_short_to(fam[k]) for k in FIXED_STATE]
        verdict = False if all(b is not None and window < fr.CLOSE * b for b in bounds) else None
        waits = [c for c in fixed if fr.state(c) < window / fr.CLOSE]
    else:
        verdict, waits = None, windows + fixed
    return {clause: verdict}, figures, [] if verdict is not None else waits


register(Experiment(
    "frontier-swa",
    f"Sliding-window attention needs far more state ({fr.FAR:g}x or more) than fixed-state mixers for the same recall.",
    fr.SOURCE, fr.verdict_of(check), fr.DESIGNS, fr.MINUTES, group="frontier",
    order=131))
