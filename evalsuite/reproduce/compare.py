"""Clauses judged as what they claim, not through one cell's settledness alone.

- **Orderings** ("A above B", ``ordered``): decided at every rung of the ladder both cells reached,
  seed by seed. It holds when, at each such rung, A is above B by more than ``MARGIN`` on every
  seed both report and on average by more than the margin plus both seed spreads; it is
  contradicted when, at each such rung, A is above B by no more than the margin on every seed.
  Neither cell needs to be settled (an ordering can hold at every budget while both still move),
  but both need a complete rate sweep, their seeds (a rate not tried could reverse it) and every
  run the escalation adds to them unasked (``next_changes`` without climbing: the first rung on
  every seed of a cell below the ceiling): an ordering is not decided at the base budget while the
  4x rung that could reverse it is still to run (a base budget that ends on MQAR's plateau measures
  when a cell jumps, not whether it is above). Nor is it decided while the cell behind still rose at
  the last rung both reached (by ``MAX_GAIN`` or more on a seed) by enough that as much again would
  close the gap (``closing``): that cell climbs on, and at the top of the ladder the ordering stays
  undecided. A cell settled at the ceiling stands for its figure at the rungs it did not need.
- **Speed claims** ("A learns faster than B", ``faster``): steps to a validation level, per seed,
  with a run that never reached it censored at its budget, and a run stored without its curve read
  from how it stopped where that says it (``steps_to``).
- **Far past the training length** (``reaches_far``, ``below_far``): a metric no run trains for,
  where more budget can move a seed either way, read at every rung the cell reached, not by the
  0.05 settledness test.
- **Failures** (``failure_guard``): a decided shortfall of state carries its controls: the
  positive control learned at the budget the failure is read at, the same family at ``STATE_FACTOR``
  times the state or more reaches the level there, and the failing cell stands above its floor (it
  learned something: a model at its floor may not have optimised at all). Without them the outcome
  is inconclusive, with the reason named.
"""
from __future__ import annotations

import math

from evalsuite.protocol import CEILING, LADDER, MARGIN, MIN_SEEDS, seeds_above
from evalsuite.protocol.settled import moved_up
from evalsuite.records import TARGET_ACCURACY

from .cells import Cell

STATE_FACTOR = 4  # the larger-state control has at least this many times the failing cell's state
STATE_SLACK = 0.05  # ... counted per mixer (``Cell.mixer_state``), within 5%: doubling d_k and d_v quadruples
#                    S, and elu+1's normaliser of d_k floats leaves less: 3.97x (d' 4 at width 64 against d' 8
#                    at 128), 3.88x ((16, 16) against (32, 32): 272 against 1,056 floats per layer)


def figures_at(cell: Cell, k: int) -> dict[int, float] | None:
    """Seed -> the cell's figure at rung ``k`` (at the rate that validates best there); a cell
    settled at the ceiling below ``k`` stands for its last figures; None where it did not reach ``k``."""
    m = cell.metric
    if k == 0 or cell.on_every_seed(k):
        return {r.seed: r.metrics[m] for r in cell.rung_runs(k) if m in r.metrics}
    if cell.stable and cell.final_acc >= CEILING - 1e-9 and cell.settled_rung < k:
        return figures_at(cell, cell.settled_rung)
    return None


def _far_rungs(cell: Cell) -> list[dict[int, float]] | None:
    """Seed -> figure at each rung the cell reached on ``MIN_SEEDS`` or more seeds (None: not
    judgeable yet: no complete rate sweep, or no such rung)."""
    if not cell.present or cell.incomplete():
        return None
    rungs = [f for k in range(cell.top_rung + 1) if (f := figures_at(cell, k)) is not None and len(f) >= MIN_SEEDS]
    return rungs or None


def below_far(cell: Cell, level: float) -> bool | None:
    """A claim's own criterion for a metric no run trains for (accuracy far past the training
    length, where more budget can move a seed either way: RoPE +0.56, xPos -0.78 at 4x): below
    ``level`` on every reported seed at every rung the cell reached (True: it does not generalise
    that far); at or above it on every seed at some rung (False); otherwise undecided. It needs a
    complete rate sweep and ``MIN_SEEDS`` seeds, not a settled figure."""
    rungs = _far_rungs(cell)
    if rungs is None:
        return None
    if all(v < level for f in rungs for v in f.values()):
        return True
    return False if any(all(v >= level for v in f.values()) for f in rungs) else None


def reaches_far(cell: Cell, level: float) -> bool | None:
    """A capability shown far past the training length (the metric no run trains for, as
    ``below_far`` reads it): at some rung, ``MIN_SEEDS`` or more seeds and a majority of them at or
    above ``level`` (True; one stuck seed does not undo the others, as ``reaches`` reads a cell);
    below it on every seed at every rung reached (False); otherwise undecided."""
    rungs = _far_rungs(cell)
    if rungs is None:
        return None
    if any(sum(v >= level for v in f.values()) >= MIN_SEEDS and 2 * sum(v >= level for v in f.values()) > len(f)
           for f in rungs):
        return True
    return False if all(v < level for f in rungs for v in f.values()) else None


def ordered(a: Cell, b: Cell, margin: float = MARGIN) -> bool | None:
    """``a`` above ``b`` (module docstring): True, False (contradicted) or None (undecided)."""
    from .escalation import next_changes

    if not (a.present and b.present) or a.incomplete() or b.incomplete():
        return None
    if next_changes(a, climb=False) or next_changes(b, climb=False):
        return None  # a rung the runner adds anyway is still to come
    verdicts, last = [], None
    for k in range(len(LADDER)):
        fa, fb = figures_at(a, k), figures_at(b, k)
        if fa is None or fb is None:
            continue
        if len(set(fa) & set(fb)) >= MIN_SEEDS:
            verdicts.append(seeds_above(fa, fb, margin))
            last = (k, fa, fb)
    if not verdicts:
        return None
    outcome = True if all(v is True for v in verdicts) else False if all(v is False for v in verdicts) else None
    if outcome is not None and closing(a, b, *last, above=outcome, margin=margin):
        return None  # the cell behind still rose at the last rung by enough to close the gap at the next
    return outcome


def rises(cell: Cell, k: int) -> dict[int, float]:
    """Seed -> how much the cell rose at rung ``k`` over the rung below, where that is ``MAX_GAIN``
    or more (the protocol's "still moving"); empty at the base, or where the cell's figure at ``k``
    is its ceiling figure standing in."""
    if k == 0 or not cell.on_every_seed(k):
        return {}
    return moved_up(cell.gains_at(k))


def closing(a: Cell, b: Cell, k: int, fa: dict, fb: dict, *, above: bool, margin: float = MARGIN) -> bool:
    """Whether an ordering decided through rung ``k`` (its last) could still turn at the next: the
    cell behind (``b`` where ``a`` is above, ``a`` where it is not) rose there by ``MAX_GAIN`` or
    more on some seed, and as much again would take it past the margin. MQAR models plateau and then
    jump at a seed's own time: a gap read while the cell behind is still climbing measures when it
    catches up, not whether."""
    behind = b if above else a
    up = rises(behind, k)
    for s in set(fa) & set(fb) & set(up):
        gap = fa[s] - fb[s]
        if (gap - up[s] <= margin) if above else (gap + up[s] > margin):
            return True
    return False


def steps_to(run, level: float) -> tuple[int, bool] | None:
    """``(steps, reached)``: the first validation step at or above ``level``, or, where the run never
    reached it, its budget (censored: it would take at least that many). A run stored without its
    curve is read from how it stopped, where that says it: stopping on reaching its target (the
    first evaluation at or above ``train.target_accuracy``) is the step it reached ``level`` when
    ``level`` is that target, and a run that trained its whole budget with the stop on never
    reached it. Otherwise it cannot say (None): it does not guess a step."""
    history = run.history or []
    if history:
        for h in history:
            if h.get("val_accuracy") is not None and h["val_accuracy"] >= level:
                return int(h["step"]), True
        return int(run.metrics.get("budget_steps") or run.metrics.get("steps") or 0), False
    train = run.config.get("train", {})
    target, stop = train.get("target_accuracy", TARGET_ACCURACY), train.get("stop_at_target", True)
    if not stop or not math.isclose(level, target, abs_tol=1e-9) or run.metrics.get("stopped") is None:
        return None
    if run.metrics["stopped"] == "target":
        return int(run.metrics["steps"]), True
    if run.metrics["stopped"] == "budget":
        return int(run.metrics.get("budget_steps") or run.metrics["steps"]), False
    return None


def faster(a: Cell, b: Cell, level: float) -> bool | None:
    """``a`` reaches ``level`` in fewer steps than ``b`` (at the base budget, seed by seed): True when
    on every common seed ``a`` reached it and ``b`` reached it later or never (censored past ``a``'s
    steps); False when on every common seed ``b`` reached it no later than ``a`` (or ``a`` never did);
    None otherwise (fewer than ``MIN_SEEDS`` common seeds, a run whose steps cannot be read, or a
    censored run that cannot be ordered)."""
    ra, rb = ({r.seed: steps_to(r, level) for r in c.best_runs} for c in (a, b))
    seeds = sorted(s for s in set(ra) & set(rb) if ra[s] is not None and rb[s] is not None)
    if len(seeds) < MIN_SEEDS:
        return None
    out = []
    for s in seeds:
        (na, ya), (nb, yb) = ra[s], rb[s]
        if ya and (na < nb):
            out.append(True)       # b reached later, or never within a budget longer than a's steps
        elif yb and (not ya or nb <= na):
            out.append(False)
        else:
            out.append(None)
    return True if all(x is True for x in out) else False if all(x is False for x in out) else None


def speed_figure(cells: list[Cell], level: float) -> str:
    """Steps to ``level`` per seed for each cell, ``>N`` where a run never reached it within its
    budget of N, ``?`` where a run stored without its curve cannot say."""
    parts = []
    for c in cells:
        steps = [steps_to(r, level) for r in c.best_runs]
        parts.append(f"{c.label} " + ", ".join("?" if x is None else f"{x[0]:,}" if x[1] else f">{x[0]:,}" for x in steps))
    return (f"steps to {level} validation accuracy, per seed (>N: not within its budget of N; ?: stored without its "
            "curve): " + "; ".join(parts))


def failure_guard(failing: Cell, control: Cell, larger: Cell | None = None, level: float = 0.9) -> str | None:
    """Why a decided shortfall of state in ``failing`` cannot stand (None: it can; module docstring).
    ``larger``: the same family at ``STATE_FACTOR`` times the state or more, counted per mixer as
    Zoology counts it (``Cell.mixer_state``; None: not run)."""
    from .clauses import reaches

    rung = failing.settled_rung
    acc = control.rung_acc(rung) if control.on_every_seed(rung) else None
    if not (control.learned or (acc is not None and control.learned_seed(acc))):
        return f"its positive control ({control.label}) did not learn at the budget the failure is read at"
    if larger is None or not larger.present:
        return (f"no cell of the same family at {STATE_FACTOR}x the state or more, so the shortfall may be "
                "optimisation, not state")
    big, small = larger.mixer_state or larger.state, failing.mixer_state or failing.state
    if big < STATE_FACTOR * small * (1 - STATE_SLACK):
        return f"{larger.label} has {big / max(small, 1):.2f}x the state, not {STATE_FACTOR}x or more"
    if not reaches(larger, level):
        return (f"the same family at {big / max(small, 1):.1f}x the state ({larger.label}) does not "
                f"reach {level} at this budget, so the shortfall may be optimisation, not state")
    floor, values = failing.floor, failing.accuracy.values
    if not values or not all(v > floor + MARGIN for v in values):
        return (f"{failing.label} sits within {MARGIN} of its floor ({floor:.3f}) on some seed: it may not have "
                "optimised at all")
    return None
