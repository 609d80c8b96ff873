"""The argmax capacity probes as an experiment runs them (``analysis.argmax_probe``): their calls,
a resumable runner on worker processes, and the capacities a verdict reads.

A call is a dict: ``{"probe": "calibration", "d_key", "d_value", "seed"}`` (random vectors, no
training) or ``{"probe": "argmax", "memory", "feature_map", "memory_options", "objective",
"d_key", "d_value", "pairs", "n_keys", "n_values", "lr", "seed", "steps", "max_steps"}`` (a trained
probe). Rates follow the suite's protocol: seed 0 sweeps ``RATES`` where a call says
``"sweep": True`` (grown a half-decade past an edge whose rate wins by more than 5%); the rate with
the highest capacity on seed 0 (ties: the smaller) is then run on
the reported seeds ``REPORTED`` (1, 2, 3), whose mean the verdict reads; a call without a sweep
takes the rate its ``"rate_from"`` configuration chose. Every call's rows go into the store's
probes table as it finishes, so a segment that ends resumes where it stopped.
"""
from __future__ import annotations

import json
import math
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

import pandas as pd

RATES = (0.003, 0.01, 0.03)
REPORTED = (1, 2, 3)
SWEEP_SEED = 0


def key(call: dict) -> str:
    """What identifies a call's rows in the store (every setting that changes them)."""
    return json.dumps({k: v for k, v in sorted(call.items()) if k not in ("sweep", "rate_from", "label")}, sort_keys=True,
                      default=str)


def config_key(call: dict) -> str:
    """A call's configuration, less its rate and seed (what the rate is chosen for)."""
    return key({k: v for k, v in call.items() if k not in ("lr", "seed")})


def _run(call: dict, deadline: float | None = None) -> pd.DataFrame:
    import torch

    torch.set_num_threads(1)
    from evalsuite.analysis import argmax_probe as ap

    c = {k: v for k, v in call.items() if k not in ("probe", "sweep", "rate_from", "label")}
    if call["probe"] == "calibration":
        cap, df = ap.calibration_capacity(c["d_key"], c["d_value"], seed=c.get("seed", 0))
        df = df.assign(capacity=cap, converged=True)
    else:
        df = ap.trained_argmax_probe(**c, deadline=deadline)
    return df.assign(call=key(call), label=call.get("label", ""))


def done_calls(probes: pd.DataFrame | None) -> set[str]:
    if probes is None or probes.empty or "call" not in probes:
        return set()
    return set(probes.call.dropna())


EDGE_GAIN = 0.05  # a best rate at the grid's edge that beats its neighbour by more than this (relative) grows it


GRID = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3)  # the half-decade steps a sweep grows along


def _beyond(lr: float, up: bool) -> float | None:
    """The next rate of ``GRID`` past ``lr`` (None past its ends)."""
    nxt = [g for g in GRID if (g > lr * 1.01 if up else g < lr / 1.01)]
    return (nxt[0] if up else nxt[-1]) if nxt else None


def sweep_state(calls: list[dict], probes: pd.DataFrame | None) -> dict[str, tuple[float | None, list[dict]]]:
    """Configuration key -> (the rate seed 0 chose, or None while it waits; the sweep calls to run
    first). The rate with the highest final capacity wins (ties: the smaller rate); a winner at the
    edge of the rates tried that beats its neighbour by more than ``EDGE_GAIN`` is no choice yet:
    the grid grows one step past that edge (along ``GRID``), as the suite's sweeps grow."""
    caps = final(probes)
    sweeps: dict[str, list[dict]] = {}
    for c in calls:
        if c.get("sweep") and c["seed"] == SWEEP_SEED:
            sweeps.setdefault(config_key(c), []).append(c)
    out = {}
    for ck, group in sweeps.items():
        group = list({c["lr"]: c for c in group}.values())
        while True:
            todo = [c for c in group if caps.get(key(c)) is None]
            if todo:
                out[ck] = (None, todo)
                break
            got = sorted((caps[key(c)][0] if math.isfinite(caps[key(c)][0]) else 1e9, c["lr"]) for c in group)
            best = max(got, key=lambda x: (x[0], -x[1]))
            rates = sorted(c["lr"] for c in group)
            i = rates.index(best[1])
            edge = i in (0, len(rates) - 1) and len(rates) > 1
            neighbour = dict((lr, cap) for cap, lr in got)[rates[1] if i == 0 else rates[-2]] if edge else None
            nxt = _beyond(best[1], up=i == len(rates) - 1) if edge else None
            if edge and best[0] > (1 + EDGE_GAIN) * max(neighbour, 1e-9) and nxt is not None and nxt not in rates:
                group.append({**group[0], "lr": nxt})
                continue
            out[ck] = (best[1], [])
            break
    return out


def chosen_rates(calls: list[dict], probes: pd.DataFrame | None) -> dict[str, float]:
    """Configuration key -> the rate seed 0 chose (``sweep_state``), for the sweeps that chose."""
    return {ck: lr for ck, (lr, _) in sweep_state(calls, probes).items() if lr is not None}


def final(probes: pd.DataFrame | None) -> dict[str, tuple[float, bool]]:
    """Call key -> (capacity at its last budget, converged there)."""
    if probes is None or probes.empty or "call" not in probes:
        return {}
    out = {}
    for k, rows in probes[probes.call.notna()].groupby("call"):
        last = rows[rows.get("max_steps", pd.Series(0, index=rows.index)).fillna(0) ==
                    rows.get("max_steps", pd.Series(0, index=rows.index)).fillna(0).max()]
        out[k] = (float(last.capacity.iloc[0]), bool(last.get("converged", pd.Series([True])).fillna(False).iloc[0]))
    return out


def pending(calls: list[dict], probes: pd.DataFrame | None) -> list[dict]:
    """The calls to run now, in this order: the reported seeds of every configuration whose rate is
    chosen (at that rate), the calibrations not done, then the sweeps not done (grown where the best
    rate sat at an edge). A configuration whose rate is chosen gets its seeds before another's sweep
    starts, so a segment's time goes first to the figures a clause reads."""
    done, state = done_calls(probes), sweep_state(calls, probes)
    rates = {ck: lr for ck, (lr, _) in state.items() if lr is not None}
    sweeps = [c for _, todo in state.values() for c in todo]  # sweeps not done, the grid's growth among them
    out, calibrations = [], []
    for c in calls:
        if c["probe"] == "calibration":
            if key(c) not in done:
                calibrations.append(c)
            continue
        if c.get("sweep") and c["seed"] == SWEEP_SEED:
            continue
        lr = rates.get(c.get("rate_from") or config_key(c))
        if lr is None:
            continue  # its rate is not chosen yet
        c = {**c, "lr": lr}
        if key(c) not in done:
            out.append(c)
    return list({key(c): c for c in out + calibrations + sweeps}.values())


def expected_seconds(call: dict, probes: pd.DataFrame | None) -> float | None:
    """How long ``call`` should take: the longest that a finished call of the same memory and
    (d_k, d_v) took (None before one has finished)."""
    if probes is None or probes.empty or "seconds" not in probes or "call" not in probes:
        return None
    same = probes[(probes.get("d_key") == call["d_key"]) & (probes.get("d_value") == call["d_value"])
                  & (probes.get("kind") == call.get("memory")) & probes.call.notna()]
    took = same.groupby("call").seconds.max()
    return float(took.max()) if len(took) else None


def run(calls: list[dict], store, *, workers: int = 1, echo=print, deadline: float | None = None) -> bool:
    """Run the pending calls (in ``pending``'s order) on ``workers`` processes, each
    call's rows stored as it finishes; returns False when the deadline (``time.monotonic()``) stopped
    it early. No call starts that its like took longer than the time left, and a call still running
    at the deadline stops there (it runs again next time): a segment ends on time."""
    import multiprocessing

    from evalsuite.analysis.argmax_probe import Stopped

    wall = None if deadline is None else time.time() + deadline - time.monotonic()  # the workers' clock
    failed: set[str] = set()
    skipped = False
    for _ in range(4):  # chosen rates' seeds and the sweeps, then the sweeps' growth, then their seeds
        todo = [c for c in pending(calls, store.probes()) if key(c) not in failed]
        if not todo:
            continue
        echo(f"  argmax probes: {len(todo)} call(s) on {workers} worker(s)")
        with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            running, queue = {}, list(todo)
            while queue or running:
                while queue and len(running) < workers and not (deadline is not None and time.monotonic() >= deadline):
                    c = queue.pop(0)
                    took = expected_seconds(c, store.probes()) if deadline is not None else None
                    if took is not None and time.monotonic() + took > deadline:
                        echo(f"  {c['probe']} {c.get('label') or ''} d_k {c['d_key']} d_v {c['d_value']} seed {c['seed']}: "
                             f"left for the next segment (its like took {took / 60:.0f} min, "
                             f"{(deadline - time.monotonic()) / 60:.0f} left)")
                        skipped = True
                        continue
                    running[pool.submit(_run, c, wall)] = c
                if not running:
                    return False
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for f in finished:
                    c = running.pop(f)
                    try:
                        df = f.result()
                    except Stopped as exc:
                        echo(f"  {c['probe']} {c.get('label') or ''} d_k {c['d_key']} d_v {c['d_value']} seed {c['seed']}: "
                             f"stopped ({exc}); it runs again next segment")
                        continue
                    except Exception as exc:  # noqa: BLE001 - one call's failure is said, the others go on
                        echo(f"  {c['probe']} {c.get('label') or ''} d_k {c['d_key']} d_v {c['d_value']} seed {c['seed']} "
                             f"FAILED ({type(exc).__name__}: {exc}); it stays pending and runs again next time")
                        failed.add(key(c))
                        continue
                    store.add_probes(df)
                    last = df[df.max_steps == df.max_steps.max()] if "max_steps" in df else df
                    echo(f"  {c['probe']} {c.get('label') or ''} d_k {c['d_key']} d_v {c['d_value']} seed {c['seed']}"
                         + (f" lr {c['lr']:g}" if "lr" in c else "")
                         + f": capacity {last.capacity.iloc[0]:.1f}"
                         + ("" if bool(last.get("converged", pd.Series([True])).iloc[0]) else " (not converged)"))
        if skipped or (deadline is not None and time.monotonic() >= deadline):
            return False
    return not pending(calls, store.probes())
