"""Trained capacity probes (Schlag et al. 2021, section 6.1, setting 1) as an experiment runs them:
what a knee still needs before it can be cited (``knee_unsettled``), and the runner that probes,
then adds seeds and steps until it is settled. The curves a verdict reads are
``analysis.capacity.probe_curves`` (the report reads them too)."""
from __future__ import annotations

import pandas as pd

from evalsuite.analysis.capacity import probe_curves
from evalsuite.labels import memory_label
from evalsuite.records import TARGET_ACCURACY

from evalsuite.protocol import BUDGET_FACTOR, MIN_SEEDS

PROBE_STEPS = 4000  # the paper trains up to 100,000 steps; 4,000 at CPU scale (the knee is read from held-out loss and accuracy)
MAX_PROBE_ROUNDS = 4


def knee_unsettled(curve: pd.DataFrame, threshold: float = TARGET_ACCURACY) -> tuple[str, list[int]] | None:
    """What the first S below ``threshold`` still needs before the knee can be cited, and the S
    values from it on: ``("seed", S)`` (more seeds: a failure rests on ``MIN_SEEDS``, as a trained
    model's does), ``("steps", S)`` (4x the steps: a seed ran out of steps and may still have been
    learning); ``None`` when settled."""
    failing = curve[curve.accuracy < threshold]
    if failing.empty:  # retrieves every S: read at the largest, which rests on MIN_SEEDS seeds too
        last = curve.iloc[-1]
        return ("seed", [int(last.pairs)]) if last.seeds < MIN_SEEDS else None
    first = failing.iloc[0]
    pending = [int(x) for x in curve.pairs if x >= first.pairs]
    if first.seeds < MIN_SEEDS:
        return "seed", pending
    if first.ran_out and first.max_steps < BUDGET_FACTOR * first.base_steps:
        return "steps", pending
    return None  # MIN_SEEDS seeds, each probed at 4x or stopped by the paper's rule (10 evaluations without a better loss)


def next_seeds(probes: pd.DataFrame, call: dict, S: int, steps: int) -> list[int]:
    """The seeds a knee that needs more seeds (``knee_unsettled``) gets at ``S`` and budget
    ``steps``: the lowest not probed there yet, up to ``MIN_SEEDS``."""
    rows = _probed(probes, call, steps)
    have = {int(x) for x in rows[rows.pairs == S].get("seed", pd.Series(dtype=float)).fillna(0)}
    return [s for s in range(MIN_SEEDS + len(have)) if s not in have][:max(0, MIN_SEEDS - len(have))]


def _probed(probes: pd.DataFrame | None, call: dict, steps: int) -> pd.DataFrame:
    """The stored rows of ``call``'s memory at its d_key, setting 1 and variant, at budget ``steps``."""
    if probes is None or probes.empty or not {"memory", "trained", "d_key", "setting"} <= set(probes):
        return pd.DataFrame(columns=["pairs", "seed"])
    variant = probes.get("variant", pd.Series("schlag", index=probes.index)).fillna("schlag")
    budget = probes.get("max_steps", pd.Series(0, index=probes.index)).fillna(0)
    return probes[(probes.memory == probe_name(call)) & (probes.trained == True)  # noqa: E712
                  & (probes.d_key == call["d_key"]) & (probes.setting == 1) & (variant == call["variant"])
                  & (budget == steps)]


def probe_name(call: dict) -> str:
    return memory_label(call["memory"], call.get("feature_map"), call.get("feature_map_options"))


def _full(call: dict) -> dict:
    from evalsuite.analysis.capacity import PAIRS

    return {"d_key": 16, "pairs": list(PAIRS), "variant": "schlag", "steps": PROBE_STEPS, **call}


def run_probes(calls: list[dict], store, echo=print) -> None:
    """Trained capacity probes (setting 1), stored in the store's probes table; skips those done.
    A knee whose first failing S has fewer than ``MIN_SEEDS`` seeds gets more (at that S's budget);
    one that ran out of steps, 4x the steps on ``MIN_SEEDS`` seeds."""
    from evalsuite.analysis import capacity_probe

    have = store.probes()
    for call in map(_full, calls):
        name = probe_name(call)
        if set(call["pairs"]) <= set(_probed(have, call, call["steps"]).pairs):
            echo(f"  probe {name}: cached")
            continue
        echo(f"  probe {name}, d_key {call['d_key']}, S in {call['pairs']}")
        store.add_probes(capacity_probe(trained=True, echo=echo, **call))
    for _ in range(MAX_PROBE_ROUNDS):
        pending_any = False
        for call in map(_full, calls):
            curve = probe_curves(store.probes(), call["d_key"]).get(probe_name(call))
            todo = None if curve is None else knee_unsettled(curve)
            if todo is None:
                continue
            pending_any = True
            need, pairs = todo
            steps = int(curve.max_steps.max())
            if need == "steps":
                steps, seeds = BUDGET_FACTOR * steps, list(range(MIN_SEEDS))
            else:
                seeds = next_seeds(store.probes(), call, pairs[0], steps)
            echo(f"  probe {probe_name(call)} again ({'4x the steps' if need == 'steps' else 'more seeds'}), "
                 f"S in {pairs}, {steps} steps, seeds {seeds}")
            for seed in seeds:
                # past the first budget (4x), no stop on patience: every seed gets the steps the others got
                more = {"min_steps": steps} if steps > call["steps"] and call["variant"] == "schlag" else {}
                store.add_probes(capacity_probe(trained=True, echo=echo, **{**call, "pairs": pairs, "steps": steps,
                                                                            "seed": seed, **more}))  # 4x: no patience stop
        if not pending_any:
            return
