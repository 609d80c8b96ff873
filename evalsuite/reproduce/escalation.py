"""What ``evalsuite reproduce`` runs next for a cell a verdict reads, so that the settledness rule
(``Cell.unsettled``) can be met: a rate past an edge of the sweep, reported seeds, then 4x the
budget on every reported seed at the chosen rate and half of it."""
from __future__ import annotations

import math

from evalsuite import selection
from evalsuite.config import RunConfig

from evalsuite.protocol import BUDGET_FACTOR, CEILING, LR_LIMITS, MIN_RATES

from .cells import Cell
from evalsuite.protocol.settled import edge_at_limit


def next_changes(cell: Cell) -> list[dict]:
    """What would make this cell citable, as changes to one of its runs, in order: a rate beyond
    an edge on the voting seed (``{"lr": x, "seed": 0}``, when the cell is below ``CEILING``),
    then reported seeds at the chosen rate (``{"seed": s}``, up to ``MIN_SEEDS``, or ``MAX_SEEDS``
    when they disagree), then 4x the budget on every reported seed at the chosen rate and half
    of it (``{"seed": s, "lr": x, "epochs": e}``, when below ``CEILING``). Empty when nothing is
    missing."""
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
    if short:
        long = {(r.seed, round(r.lr, 12)) for r in cell._long()}
        epochs = BUDGET_FACTOR * cell.base_epochs
        return [{"seed": s, "lr": lr, "epochs": epochs} for s in cell.seeds for lr in cell.long_rates
                if (s, round(lr, 12)) not in long]
    return []

def next_configs(cell: Cell) -> list[RunConfig]:
    """``next_changes`` as configurations (``evalsuite reproduce`` escalates with these). A
    longer budget keeps the base run's warm-up in steps: at the same peak rate it is the same
    schedule, only held longer, so it takes the base run's steps up to that run's decay and
    starts from the state the base run saved there (``train.branch``); at half the rate it
    starts afresh."""
    changes = next_changes(cell)
    if not changes:
        return []
    run = cell.best_runs[0]
    best = RunConfig.from_dict(run.config)
    warmup = best.train.warmup(run.metrics["budget_steps"]) if "budget_steps" in run.metrics else None
    return [best.replace(**c, **({"warmup_steps": warmup} if "epochs" in c else {})) for c in changes]
