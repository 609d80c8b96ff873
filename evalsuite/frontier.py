"""The recall-memory frontier: MQAR accuracy against state size, one curve per mixer family.

Every family is trained over the axis that sets its state (width for the fixed-state mixers, the
window for sliding-window attention, the feature size for Based and its Taylor-linear part), each
point with a learning-rate sweep and two seeds, under the rules of ``reproduce_rules``. What the
literature claims about this picture (docs/FINDINGS.md, finding 9) becomes three verdicts, each
able to fail:

* ``frontier-delta``: the delta rule reaches ``LEVEL`` accuracy with less state than additive
  (elu+1) and decayed (GLA, Mamba-2 gate, RetNet) linear attention;
* ``frontier-swa``: sliding-window attention needs ``FAR`` times more state than the best
  fixed-state mixer for the same recall;
* ``frontier-based``: Based sits above both of its parts (Taylor linear attention, sliding
  window) at no more state.

``smallest_state`` and ``pareto`` are the table and the frontier the report draws
(``reports/sections/frontier.py``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from evalsuite.reproduce_rules import MARGIN, Cell, higher

LEVEL = 0.9  # the accuracy whose cheapest state the verdicts compare (the table also shows 0.99)
FAR = 4.0    # "far more state": at least this factor
CLOSE = 2.0  # below this factor, "far more" is contradicted
EQUAL_STATE = 1.25  # a part "at no more state" than Based: its state at most this factor of Based's


@dataclass(frozen=True)
class Family:
    label: str
    fixed: dict          # config keys every point of the family sets
    axis: str            # the config key that sets its state
    values: tuple        # the axis values at this scale
    kind: str            # "delta", "additive", "decayed", "window", "based", "based-part", "control"


def families(scale: str) -> list[Family]:
    """The families and their axes. ``paper`` follows Zoology's README-plot sweep
    (``zoology/experiments/030325_new_arch`` and ``models_repo.py``): widths 64 / 128 / 256 for the
    fixed-state mixers, softmax and the sliding window at 128, windows 8 ... 1024, Based's feature
    size 8 / 16 / 24 (Zoology crosses it with widths 48 / 64 / 128; here at width 64 only)."""
    widths = (16, 32) if scale == "cpu" else (64, 128, 256)
    width = 32 if scale == "cpu" else 128
    windows = (8, 16, 32) if scale == "cpu" else (8, 16, 32, 64, 128, 256, 512, 1024)
    features = (4, 8) if scale == "cpu" else (8, 16, 24)
    based_width = 32 if scale == "cpu" else 64
    based_window = 8 if scale == "cpu" else 64
    return [
        Family("softmax", {"model": "softmax", "model.d_model": width}, "model.d_model", (width,), "control"),
        Family("delta", {"model": "delta"}, "model.d_model", widths, "delta"),
        Family("elu+1", {"model": "linear", "model.feature_map": "elu1"}, "model.d_model", widths, "additive"),
        Family("GLA", {"model": "gla", "model.gate": "vector"}, "model.d_model", widths, "decayed"),
        Family("Mamba-2 gate", {"model": "gla", "model.gate": "scalar"}, "model.d_model", widths, "decayed"),
        Family("RetNet", {"model": "gla", "model.gate": "fixed"}, "model.d_model", widths, "decayed"),
        Family("sliding window", {"model": "swa", "model.d_model": width}, "model.window", windows, "window"),
        Family("Based", {"model": "based", "model.d_model": based_width, "model.window": based_window}, "model.feature_dim",
               features, "based"),
        Family("Taylor linear", {"model": "linear", "model.feature_map": "taylor", "model.d_model": based_width},
               "model.feature_dim", features, "based-part"),
    ]


def points(scale: str, lrs: list[float]) -> list[dict]:
    """Sweep points: every family at every axis value and learning rate."""
    return [{**f.fixed, f.axis: v, "train.lr": lr} for f in families(scale) for v in f.values for lr in lrs]


def cells(runs, scale: str, setting: dict) -> dict[str, list[Cell]]:
    """Family label -> one cell per axis value (``setting``: the task keys every point shares)."""
    out = {}
    for f in families(scale):
        out[f.label] = []
        for v in f.values:
            where = {**{k: x for k, x in f.fixed.items() if k != "model"}, f.axis: v, **setting}
            out[f.label].append(Cell.of(runs, f"{f.label} {f.axis.split('.')[-1]}={v}", task__name="recall",
                                        model__name=f.fixed["model"],
                                        **{k.replace(".", "__"): x for k, x in where.items()}))
    return out


def reaches(cell: Cell, level: float = LEVEL) -> bool:
    """At the base budget or at 4x it (the protocol's own rerun): a late learner counts."""
    return cell.present and (cell.learned_at(level) or (cell.long_acc is not None and cell.long_acc >= level))


def smallest_state(family_cells: list[Cell], level: float = LEVEL) -> float | None:
    """The least state among a family's cells that reach ``level`` (None: none does)."""
    states = [c.state for c in family_cells if reaches(c, level)]
    return min(states) if states else None


def never_reaches(family_cells: list[Cell], level: float = LEVEL) -> bool:
    """Every cell is present and stays below ``level`` when given 4x the budget, with a full sweep."""
    return all(c.settled_below(level) for c in family_cells)


def pareto(rows: list[dict]) -> list[dict]:
    """The rows (``state``, ``accuracy``) that no other row beats with no more state."""
    ordered = sorted(rows, key=lambda r: (r["state"], -r["accuracy"]))
    front, best = [], -math.inf
    for r in ordered:
        if r["accuracy"] > best:
            front.append(r)
            best = r["accuracy"]
    return front


# ---- the three verdicts: each returns (checks, figures); reproduce.py wraps them ----------------

def settled_under(family_cells: list[Cell], state: float | None, level: float = LEVEL, inclusive: bool = False) -> bool:
    """Every cell of the family with less state than ``state`` (all, for None) that has not reached
    ``level`` stays below it at 4x the budget with a full sweep: more budget cannot make it cheaper."""
    cheaper = [c for c in family_cells
               if state is None or c.state < state or (inclusive and c.state <= state)]
    return all(reaches(c, level) or c.settled_below(level) for c in cheaper)


def less_state(a: list[Cell], b: list[Cell]) -> bool | None:
    """Family ``a`` reaches LEVEL with less state than ``b``: True, False, or None (unsettled)."""
    sa, sb = smallest_state(a), smallest_state(b)
    if sa is not None and (sb is None or sa < sb) and settled_under(b, sa, inclusive=True):
        return True
    if sb is not None and (sa is None or sb <= sa) and settled_under(a, sb):
        return False
    return None


def delta_check(fam: dict[str, list[Cell]]) -> tuple[dict[str, bool | None], list[str]]:
    """The delta rule reaches LEVEL with less state than every additive and decayed family."""
    others = {k: v for k, v in fam.items() if k in ("elu+1", "GLA", "Mamba-2 gate", "RetNet")}
    figures = [f"least state reaching {LEVEL} (base or 4x budget): " + ", ".join(
        f"{k} {_state(smallest_state(v))}" for k, v in {"delta": fam["delta"], **others}.items())]
    return {f"delta reaches {LEVEL} with less state than {k}": less_state(fam["delta"], v)
            for k, v in others.items()}, figures


FIXED_STATE = ("delta", "elu+1", "GLA", "Mamba-2 gate", "RetNet")


def swa_check(fam: dict[str, list[Cell]]) -> tuple[dict[str, bool | None], list[str]]:
    """Sliding windows need FAR times the state of the best fixed-state family for LEVEL (only
    settled shortfalls of the cheaper windows, and of the cheaper fixed-state points, count)."""
    clause = f"sliding window needs >= {FAR:g}x the state"
    reached = [s for s in (smallest_state(fam[k]) for k in FIXED_STATE) if s is not None]
    window = smallest_state(fam["sliding window"])
    best = min(reached) if reached else None
    figures = [f"least state reaching {LEVEL}: sliding window {_state(window)}, best fixed-state mixer {_state(best)}"]
    if best is None:
        return {clause: None}, figures
    windows_settled = settled_under(fam["sliding window"], FAR * best)
    if window is None:  # never reached: its largest window's state is a lower bound
        bound = max(c.state for c in fam["sliding window"]) / best
        figures.append(f"sliding window never reached {LEVEL}: more than {bound:.1f}x the state")
        return {clause: True if bound >= FAR and never_reaches(fam["sliding window"]) else None}, figures
    ratio = window / best
    figures.append(f"ratio {ratio:.1f}x")
    fixed_settled = all(settled_under(fam[k], window / CLOSE) for k in FIXED_STATE)
    verdict = (True if ratio >= FAR and windows_settled
               else False if ratio < CLOSE and fixed_settled else None)
    return {clause: verdict}, figures


def based_check(fam: dict[str, list[Cell]]) -> tuple[dict[str, bool | None], list[str]]:
    """The best Based point above the strongest of each part with no more (x1.25) state."""
    based = [c for c in fam["Based"] if c.present]
    if not based:
        return {"Based above its parts": None}, ["no finished Based run"]
    top = max(based, key=lambda c: c.acc)
    checks, figures = {}, [f"Based: {top.label} {top.acc:.3f} at {_state(top.state)} floats"]
    for part in ("Taylor linear", "sliding window"):
        rivals = [c for c in fam[part] if c.present and c.state <= EQUAL_STATE * top.state]
        if not rivals:
            checks[f"Based above {part} at no more state"] = None
            figures.append(f"{part}: no point with at most {EQUAL_STATE}x Based's state")
            continue
        rival = max(rivals, key=lambda c: c.acc)
        figures.append(f"{part}: {rival.label} {rival.acc:.3f} at {_state(rival.state)} floats")
        above_all = all(higher(top, r) and (r.stable or r.settled_below(top.acc - MARGIN)) for r in rivals)
        checks[f"Based above {part} at no more state"] = (
            True if above_all
            else False if top.stable and any(r.stable and r.acc >= top.acc - MARGIN for r in rivals) else None)
    return checks, figures


def _state(x) -> str:
    return "never" if x is None else f"{x:,.0f}"


# Zoology's README plot, read off by eye (docs/FINDINGS.md, finding 9): what our figures stand beside.
PUBLISHED = ("Zoology README plot (approximate): DeltaNet 0.79 at 9e3 floats, 0.96 at 3.5e4; GLA 0.53 at 4.7e3, "
             "0.95 at 7e4; Mamba-2 0.52 at 8e3 to 0.84 at 1e5; sliding window 0.08 at 1e4 to 0.94 at 5e5; "
             "Based 0.67 at 9e3 rising to 1.0")
