"""What ``evalsuite reproduce`` runs next for a cell a verdict reads, so that the settledness rule
(``protocol.settled``) can be met: a rate past an edge of the sweep, reported seeds, then the
ladder's rungs (4x, then 16x the base budget) on every reported seed at the rates the cell climbs at
(``Cell.long_rates``). A cell climbs past the first rung only where a clause's outcome depends on
it (``climb=True``: the runner's ``decisive``)."""
from __future__ import annotations

import math

from evalsuite import selection
from evalsuite.config import RunConfig
from evalsuite.protocol import CEILING, LADDER, LR_LIMITS, MIN_RATES, PLATEAU_ABOVE, PLATEAU_GAIN
from evalsuite.protocol.settled import climb as settle, edge_at_limit

from .cells import Cell


def next_changes(cell: Cell, climb: bool = True) -> list[dict]:
    """What would make this cell citable, as changes to one of its runs, in order: a rate beyond
    an edge on the voting seed (``{"lr": x, "seed": 0}``, when the cell is below ``CEILING``),
    then reported seeds at the chosen rate (``{"seed": s}``, up to ``MIN_SEEDS``, or ``MAX_SEEDS``
    when they disagree), then the next rung of the ladder its figure needs, on every reported seed
    at every rate it climbs at (``{"seed": s, "lr": x, "epochs": e, "rung": k}``, below ``CEILING``;
    past the first rung only with ``climb``). Empty when nothing is missing."""
    if not cell.present or not cell.accuracy.n:
        return []
    rates, chosen_by = cell.rates, selection.voters(cell.base_runs)
    short = cell.acc < CEILING
    if short and (len(rates) < MIN_RATES or (cell.at_edge and not edge_at_limit(cell))):
        step = rates[1] / rates[0] if len(rates) > 1 else math.sqrt(10)
        lr = cell.best_lr * step if cell.best_lr == rates[-1] else cell.best_lr / step
        if LR_LIMITS[0] <= lr <= LR_LIMITS[1]:
            return [{"lr": float(f"{lr:.3g}"), "seed": min(chosen_by)}]
    held_out = [s for s in cell.seeds if s not in chosen_by]
    if held_out or len(cell.seeds) < cell.seeds_needed:  # every seed at every rate needs no held-out seeds
        want = cell.seeds_needed - len(held_out)
        if want > 0:
            used = chosen_by | set(cell.seeds)  # a seed that ran only other rates did not vote: it can report
            return [{"seed": s} for s in [s for s in range(len(used) + want + 1) if s not in used][:want]]
    if not short:
        return []
    rung, _ = settle(cell)
    if rung is not None:
        return []
    k = cell.top_rung + 1  # the rung it lacks
    if k >= len(LADDER) or (k > 1 and not climb):
        return []
    have = {(r.seed, round(r.lr, 12)) for r in cell._rung(k)}
    epochs = LADDER[k] * cell.base_epochs
    return [{"seed": s, "lr": lr, "epochs": epochs, "rung": k} for s in cell.seeds for lr in cell.long_rates
            if (s, round(lr, 12)) not in have]


def next_configs(cell: Cell, climb: bool = True) -> list[RunConfig]:
    """``next_changes`` as configurations (``evalsuite reproduce`` escalates with these). A rung
    keeps the base run's warm-up in steps: at the same peak rate it is the same schedule, only held
    longer, so it continues the rung below it from the snapshot that rung saved where its decay
    began (``train.branch``; the store keeps it). Above the base it stops on a plateau
    (``protocol.PLATEAU_GAIN`` over a window as long as the base budget, at ``PLATEAU_ABOVE`` or
    more), never inside the steps it shares with the rung below it."""
    changes = next_changes(cell, climb)
    if not changes:
        return []
    run = cell.best_runs[0]
    best = RunConfig.from_dict(run.config)
    base_steps = run.metrics.get("budget_steps")
    warmup = best.train.warmup(base_steps) if base_steps else None
    out = []
    for c in changes:
        rung = c.pop("rung", None)
        extra = {}
        if rung is not None:
            extra = {"warmup_steps": warmup} if warmup is not None else {}
            if base_steps:
                extra.update(plateau_window=max(1, math.ceil(base_steps / best.train.eval_every)), plateau_gain=PLATEAU_GAIN,
                             plateau_above=PLATEAU_ABOVE, plateau_after=base_steps * LADDER[rung - 1])
        out.append(best.replace(**c, **extra))
    return out
