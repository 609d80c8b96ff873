"""The one settledness rule: when a cell's figure is final, so that a verdict may rest on it.

Every verdict reads its cells through ``unsettled`` (``Cell.stable``, ``Cell.settled`` and
``Cell.settled_below`` are its three readings). A figure is final when: the sweep has at least
``MIN_RATES`` rates with the best not at an edge (or at ``LR_LIMITS``); ``MIN_SEEDS`` seeds are
reported at the chosen rate (``MAX_SEEDS`` when some learned and some did not); and, below
``CEILING``, the cell has climbed the ``LADDER`` until a rung's next rung (each ``BUDGET_FACTOR``
times longer, run on every reported seed at the rates the cell climbs at and read at the one that
validates best there) moved no seed by ``MAX_GAIN`` or more, and that next rung is not still
undertrained. A rise says the budget decides the figure, a fall that the schedule does
("unstable"): either way the cell climbs on, or, at the last rung, stays unsettled. A rung that
takes every seed to the ceiling is final as well. The cell is settled at the rung whose next rung
did not move it (``settled_rung``): its figure there is the one a verdict cites.
"""
from __future__ import annotations

from evalsuite.protocol import CEILING, LADDER, LR_LIMITS, MAX_GAIN, MIN_RATES


def incomplete(cell) -> list[str]:
    """What the rate sweep and the seeds still lack (empty: complete)."""
    if not cell.present:
        return ["no finished run"]
    lack = []
    if len(cell.rates) < MIN_RATES:
        lack.append(f"needs {MIN_RATES} learning rates (has {len(cell.rates)})")
    elif cell.at_edge and not edge_at_limit(cell) and not cell.at_ceiling:  # a figure at the ceiling needs no wider grid
        lack.append(f"needs a rate beyond the best one ({cell.best_lr:g}, at the edge of {cell.rates})")
    if len(cell.seeds) < cell.seeds_needed:
        k, n = cell.seeds_learned
        lack.append(f"needs {cell.seeds_needed} reported seeds at the chosen rate (has {len(cell.seeds)}"
                    + (f"; {k} of {n} learned" if cell.seeds_disagree else "") + ")")
    return lack


def edge_at_limit(cell) -> bool:
    rates = cell.rates
    return (cell.best_lr == rates[0] and rates[0] <= LR_LIMITS[0]) or (cell.best_lr == rates[-1] and rates[-1] >= LR_LIMITS[1])


def _at_ceiling(cell, k: int) -> bool:
    runs = cell.rung_runs(k)
    return cell.on_every_seed(k) and all(r.metrics.get(cell.metric, 0.0) >= CEILING for r in runs)


def climb(cell) -> tuple[int | None, list[str]]:
    """Where the cell stands on the ladder: ``(settled rung, [])`` when its figure is final there,
    or ``(None, what it lacks)``. The base rung needs a complete sweep and its seeds first."""
    lack = incomplete(cell)
    if lack:
        return None, lack
    if cell.at_ceiling:
        return 0, []
    moved: list[str] = []  # why the rung below sends the cell up the ladder
    for k in range(1, len(LADDER)):
        factor = LADDER[k]
        rates = ", ".join(f"{x:g}" for x in cell.long_rates)
        tried = {round(r.lr, 12) for r in cell._rung(k)}
        missing = [s for s in cell.seeds if s not in {r.seed for r in cell.rung_runs(k)}]
        if missing or len(tried) < len(cell.long_rates):
            return None, moved + [f"needs {factor}x reruns at lr {rates} on every seed"
                                  + (f" (seed {', '.join(map(str, missing))} has none)" if missing else "")
                                  + _cut_note(cell, k, missing)]
        if _at_ceiling(cell, k):
            return k, []  # this rung takes every seed to the ceiling: final there
        gains = cell.gains_at(k)
        rose = moved_up(gains)
        fell = {s: g for s, g in gains.items() if g <= -MAX_GAIN}
        under = [r.seed for r in cell.rung_runs(k) if r.metrics.get("undertrained")]
        if not rose and not fell and not under:
            return k - 1, []  # the next rung moved no seed: settled at the one below it
        lack = []
        if rose:
            lack.append(f"its {factor}x rerun gained " + ", ".join(f"{g:+.3f} (seed {s})" for s, g in rose.items())
                        + f" (>= {MAX_GAIN}), so the budget, not the model, decides this figure")
        if fell:
            lack.append(f"unstable: its {factor}x rerun fell " + ", ".join(f"{g:+.3f} (seed {s})" for s, g in fell.items())
                        + ", so the schedule, not the model, decides this figure")
        if under:
            lack.append(f"its {factor}x rerun is still undertrained (seed {', '.join(map(str, under))})")
        if k == len(LADDER) - 1:
            return None, lack  # the last rung moved it: no rung left
        moved = lack
    return None, moved


def moved_up(gains: dict[int, float]) -> dict[int, float]:
    """The seeds (seed -> gain) a rung moved up by ``MAX_GAIN`` or more: still moving."""
    return {s: g for s, g in gains.items() if g >= MAX_GAIN}


def _cut_note(cell, k: int, missing: list[int]) -> str:
    """Where a missing seed's rung run was stopped by an older, lower plateau rule (``cut_short``)."""
    epochs = cell.rung_epochs(k)
    cut = sorted({r.seed for r in getattr(cell, "cut", []) if r.seed in missing
                  and abs(r.config["train"]["epochs"] - epochs) < 1e-9})
    if not cut:
        return ""
    return (f"; seed {', '.join(map(str, cut))} ran it, but a plateau stop below the ceiling (an older rule) "
            f"cut the run short: it runs again")


def unsettled(cell) -> list[str]:
    """The one settledness rule every verdict reads (empty: the cell's figure is final; the module
    docstring). What it lacks is said for the highest rung it reached."""
    return climb(cell)[1]


def settled_rung(cell) -> int:
    """The rung whose figure the cell's verdict cites (0 where it is not settled)."""
    rung, _ = climb(cell)
    return 0 if rung is None else rung
