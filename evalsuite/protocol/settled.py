"""The one settledness rule: when a cell's figure is final, so that a verdict may rest on it.

Every verdict reads its cells through ``unsettled`` (``Cell.stable``, ``Cell.settled`` and
``Cell.settled_below`` are its three readings). A figure is final when: the sweep has at least
``MIN_RATES`` rates with the best not at an edge (or at ``LR_LIMITS``); ``MIN_SEEDS`` seeds are
reported at the chosen rate (``MAX_SEEDS`` when some learned and some did not); and, below
``CEILING``, every reported seed was rerun at ``BUDGET_FACTOR`` x the budget at the chosen rate and
half of it, read at the one that validates best, with a gain within ``MAX_GAIN`` on every seed
(a rise says the budget decides the figure; a fall says the schedule does: "unstable") and no 4x
run still undertrained. 4x the budget that takes every seed to the ceiling is final as well.
"""
from __future__ import annotations

from evalsuite.protocol import BUDGET_FACTOR, CEILING, LR_LIMITS, MAX_GAIN, MIN_RATES


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

def unsettled(cell) -> list[str]:
    """The one settledness rule every verdict reads (empty: the cell's figure is final). A cell
    at or above ``CEILING`` needs only a complete sweep and its seeds. Below it: a complete
    sweep (``MIN_RATES`` rates or more, the best not at an edge), ``MIN_SEEDS`` reported seeds
    (``MAX_SEEDS`` when they disagree), a 4x rerun on **every** reported seed (at the chosen
    rate and half of it, read at the one that validates best), a 4x gain within ``MARGIN`` on
    every seed (a rise says the budget decides the figure; a fall says the rate no longer fits:
    "unstable"), and no 4x run still undertrained."""
    lack = incomplete(cell)
    if lack or cell.at_ceiling:
        return lack
    long = {r.seed: r for r in cell.long_runs}
    if long and len(long) == len(cell.seeds) and all(r.metrics.get(cell.metric, 0.0) >= CEILING for r in long.values()):
        return []  # 4x the budget takes every seed to the ceiling: that figure is final (``final_acc``)
    missing = [s for s in cell.seeds if s not in long]
    tried = {round(r.lr, 12) for r in cell._long()}
    if missing or len(tried) < len(cell.long_rates):
        lack.append(f"needs {BUDGET_FACTOR}x reruns at lr {', '.join(f'{x:g}' for x in cell.long_rates)} on every seed"
                    + (f" (seed {', '.join(map(str, missing))} has none)" if missing else ""))
        return lack
    rose = {s: g for s, g in cell.gains.items() if g >= MAX_GAIN}
    fell = {s: g for s, g in cell.gains.items() if g <= -MAX_GAIN}
    if rose:
        lack.append(f"its {BUDGET_FACTOR}x rerun gained " + ", ".join(f"{g:+.3f} (seed {s})" for s, g in rose.items())
                    + f" (>= {MAX_GAIN}), so the budget, not the model, decides this figure")
    if fell:
        lack.append(f"unstable: its {BUDGET_FACTOR}x rerun fell " + ", ".join(f"{g:+.3f} (seed {s})" for s, g in fell.items())
                    + ", so the schedule, not the model, decides this figure")
    under = [r.seed for r in cell.long_runs if r.metrics.get("undertrained")]
    if under:
        lack.append(f"its {BUDGET_FACTOR}x rerun is still undertrained (seed {', '.join(map(str, under))})")
    return lack
