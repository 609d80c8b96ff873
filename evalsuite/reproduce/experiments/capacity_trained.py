"""What trained language models hold where their fixed state is the bottleneck, set beside what
the trained argmax probe (capacity-argmax's) holds at the same state: the project's own
observation (docs/FINDINGS.md, finding 16), which replaces capacity-law's d' law.

Setting: MQAR (vocabulary 256: 127 keys and 128 values) trained on a mixture of D = 2, 4, 8, 16
and 32 pairs (T = 4 D each, equal shares) and read at each D (``task.eval_segments``; one run
gives every D, each D with its own floor). The backbone is the default one (d_model 64, one head,
a short convolution, no MLP), its mixers' state set apart from the width: d_k with
``model.feature_dim`` and d_v with ``model.value_dim``, at sizes where the probe holds a few to
a few tens of pairs, so that the state, not the width, binds. Softmax at the same width (it keeps
every pair) is the positive control; it must hold every D. This is the binding setting
(``settings.bind_base``) the failure findings are judged in at CPU scale: their cells at these
configurations read these runs.

What is read: per configuration and seed, the trained capacity n*, the most pairs read back at
``SUCCESS`` (0.9, the probe's criterion) log-interpolated over D from each D's settled figure
(``Cell.settled_rung``; censored: below 2 when D = 2 already fails, above 32 when D = 32 holds);
beside it the trained probe's n* at the same (d_k, d_v) and vocabulary (one memory layer, learned
codebooks, three seeds at the rate seed 0 chose, converged). The claim holds for a configuration
when every seed's n* is within ``FACTOR`` (2, fixed before the runs) of the probe's; it is
contradicted when every seed's is outside it. The probe is one memory layer; the models with two
mixer layers are set beside the same probe (a deviation: whether two states add up is what their
row shows).

The plateau near d' pairs (reported, not judged): from each seed's learning curve at D = 32 (the
history of its longest run, every evaluation), the steps during which the pairs retrieved
(accuracy x 32) sat within a factor sqrt 2 of d' = d_k, and whether training left that band
upward ("left at step s") or it lasted to the end ("persists"); "never near d'" where the curve
stayed below it.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from evalsuite.analysis.argmax_probe import SUCCESS, capacity, law_capacity, pair_grid
from evalsuite.protocol import CEILING
from evalsuite.records import segment_curves
from evalsuite.reproduce import argmax
from evalsuite.reproduce.cells import Cell
from evalsuite.reproduce.clauses import reaches
from evalsuite.reproduce.experiment import CellSpec, Design, Experiment, register
from evalsuite.reproduce.settings import (BIND_MODELS, BIND_PAIRS, CPU_LRS, PAPER_LRS, bind_base, bind_metric,
                                         bind_point, state_label)
from evalsuite.reproduce.verdict import runnable, unsettled

VOCAB, N_KEYS, N_VALUES = 256, 127, 128   # MQAR's keys are the lower half less its separator, values the upper
PAIRS = BIND_PAIRS             # the binding setting's mixture (``settings.bind_base``), shared with the failure findings
FACTOR = 2.0                  # trained within this factor of the probe (fixed before the runs)
BAND = math.sqrt(2)           # "near d'": within this factor of it
MODELS = {k: v for k, v in BIND_MODELS.items() if k != "softmax"}
MEMORIES = {"elu+1": ("linear", "elu1"), "delta": ("delta", None)}  # the probe's memory of each
# (model, d_k, d_v, mixer layers): the diagonal at 8 and 16, one and two layers at 8 for elu+1, and
# a value side four times the key side (where the plateau near d' can be left)
CONFIGS = (("elu+1", 8, 8, 2), ("elu+1", 8, 8, 1), ("delta", 8, 8, 2), ("elu+1", 16, 16, 2), ("delta", 16, 16, 2),
           ("elu+1", 8, 32, 2))
# where each state's probe capacity was first measured (seed 0, lr 0.01, this vocabulary): its grid brackets it
CENTER = {(8, 8): 2.5, (16, 16): 15, (8, 32): 12}


def config_label(model: str, dk: int, dv: int, layers: int) -> str:
    return state_label(model, dk, dv, layers)


def design(scale: str, rates) -> Design:
    """Every configuration at every D (one mixed-D point each, read at each D's eval segment), and
    softmax at two layers, the positive control (read at D = 32)."""
    cells = []
    for model, dk, dv, layers in CONFIGS:
        cells += [CellSpec((model, dk, dv, layers, D), f"{config_label(model, dk, dv, layers)} D={D}",
                           bind_point(model, dk, dv, layers), reads="the trained capacity beside the probe's",
                           metric=bind_metric(D)) for D in PAIRS]
    cells += [CellSpec(("softmax", 0, 0, 2, D), f"softmax, 2 layers D={D}", bind_point("softmax"),
                       role="control" if D == PAIRS[-1] else "reported",
                       reads="the positive control" if D == PAIRS[-1] else "softmax at each D (reported)",
                       metric=bind_metric(D)) for D in PAIRS]
    base = bind_base(scale)
    return Design(base, cells, rates, {"pairs": PAIRS})


def probe_calls() -> list[dict]:
    """The trained argmax probe of each configuration's memory at its (d_k, d_v), at MQAR's vocabulary
    here: seed 0's rate sweep, then the reported seeds."""
    out = []
    for model, dk, dv in dict.fromkeys((m, dk, dv) for m, dk, dv, _ in CONFIGS):
        memory, fmap = MEMORIES[model]
        c = {"probe": "argmax", "label": model, "memory": memory, "feature_map": fmap, "memory_options": None,
             "d_key": dk, "d_value": dv, "pairs": pair_grid(CENTER.get((dk, dv), law_capacity(dk, dv) / 3), lo=1 / 8,
                                                             hi=8, most=min(N_KEYS, N_VALUES)),
             "n_keys": N_KEYS, "n_values": N_VALUES, "steps": 2000, "max_steps": 32000}
        out += [{**c, "lr": lr, "seed": argmax.SWEEP_SEED, "sweep": True} for lr in argmax.RATES]
        out += [{**c, "lr": None, "seed": s} for s in argmax.REPORTED]
    return out


def probe_capacity(probes: pd.DataFrame | None, model: str, dk: int, dv: int) -> tuple[float | None, list[float], bool]:
    """The probe's n* at (d_k, d_v) on this vocabulary: (mean over the reported seeds, or None
    short of them; each seed's; every seed converged)."""
    from evalsuite.reproduce.experiments.capacity_argmax import capacities

    caps = capacities(probes, model, n_keys=N_KEYS)
    rows = caps[(caps.d_key == dk) & (caps.d_value == dv)]
    seeds = list(rows.capacity)
    if len(rows) < len(argmax.REPORTED):
        return None, seeds, bool(rows.converged.all())
    return float(np.mean(seeds)), seeds, bool(rows.converged.all())


def trained_capacities(cells: list[Cell]) -> dict[int, float] | None:
    """Seed -> n* over D from each D cell's settled figures (``Cell.settled_rung``), for the seeds
    every D has; None while a D cell is not settled."""
    from evalsuite.reproduce.compare import figures_at

    if not all(c.stable for c in cells):
        return None
    figs = [figures_at(c, c.settled_rung) for c in cells]
    if any(f is None for f in figs):
        return None
    seeds = sorted(set.intersection(*(set(f) for f in figs)))
    return {s: capacity(list(PAIRS), [f[s] for f in figs]) for s in seeds} or None


def within(caps: dict[int, float] | None, probe: float | None) -> bool | None:
    """Every seed's n* within ``FACTOR`` of the probe's (True), every seed's outside it (False),
    else None. A censored n* (0: below the smallest D; inf: above the largest) is outside when its
    bound already is (below 2 against a probe above 4; above 32 against one below 16)."""
    if caps is None or probe is None or probe <= 0:
        return None

    def inside(n: float) -> bool | None:
        if n == 0:
            return False if PAIRS[0] * FACTOR < probe else None
        if math.isinf(n):
            return False if PAIRS[-1] > FACTOR * probe else None
        return probe / FACTOR <= n <= probe * FACTOR

    got = [inside(n) for n in caps.values()]
    return True if all(g is True for g in got) else False if all(g is False for g in got) else None


def plateau(run, d_prime: int) -> str:
    """Where one seed's curve at the largest D sat near d' pairs (the module docstring)."""
    key = f"num_kv_pairs={PAIRS[-1]},seq_len={4 * PAIRS[-1]}"
    curve = segment_curves(run.history).get(key, [])
    if not curve:
        return "no curve recorded"
    lo, hi = d_prime / BAND, d_prime * BAND
    pts = [(s, a * PAIRS[-1]) for s, a in curve]
    entered = next((i for i, (_, p) in enumerate(pts) if p >= lo), None)
    if entered is None:
        return f"never near d' (at most {max(p for _, p in pts):.1f} pairs)"
    left = next((i for i in range(entered, len(pts)) if pts[i][1] > hi), None)
    start = pts[entered][0]
    if left is None:
        return f"persists: near d' from step {start:,} to the end ({pts[-1][0]:,}; {pts[-1][1]:.1f} pairs)"
    if left == entered:
        return f"passed d' at step {start:,} without a plateau"
    return f"left at step {pts[left][0]:,} after {pts[left][0] - start:,} steps near d' (from step {start:,})"


def plateau_line(cells: list[Cell], d_prime: int) -> str | None:
    """Each seed's plateau reading, from its longest run (every rung continues the one below it, so
    its history holds the whole curve)."""
    top = max(cells, key=lambda c: c.top_rung)
    k = top.top_rung
    runs = {r.seed: r for r in top.rung_runs(k)} if k else {r.seed: r for r in top.best_runs}
    readings = {s: plateau(r, d_prime) for s, r in sorted(runs.items())}
    if all(x == "no curve recorded" for x in readings.values()):
        return None  # runs from before curves per D were recorded (or none)
    return "; ".join(f"seed {s}: {x}" for s, x in readings.items())


def _fmt_caps(caps: dict[int, float]) -> str:
    return ", ".join("< 2" if n == 0 else "> 32" if math.isinf(n) else f"{n:.1f}" for n in caps.values())


def verdict(cells, probes, p, judge):
    cs = list(cells.values())
    if (v := judge.missing(cs)):
        return v
    figures = []
    soft = [cells["softmax", 0, 0, 2, D] for D in PAIRS]
    if (v := judge.control(soft[-1], [c.figure() for c in cs])):
        return v
    figures.append("softmax, 2 layers (control): " + ", ".join(f"D={D} {c.acc:.3f}" for D, c in zip(PAIRS, soft)))
    checks, todo = {}, []
    for model, dk, dv, layers in CONFIGS:
        name = config_label(model, dk, dv, layers)
        row = [cells[model, dk, dv, layers, D] for D in PAIRS]
        caps = trained_capacities(row)
        probe, probe_seeds, converged = probe_capacity(probes, model, dk, dv)
        accs = ", ".join(f"D={D} {c.final_acc:.3f} (floor {c.floor:.3f})" for D, c in zip(PAIRS, row))
        text = f"{name}: accuracy at each D's settled figure {accs}; trained n* per seed "
        text += (_fmt_caps(caps) if caps else "n/a (a D is not settled)")
        text += ("; probe n* " + (f"{probe:.1f} [{', '.join(f'{n:.1f}' for n in probe_seeds)}]"
                                  + ("" if converged else " (not converged)") if probe is not None else
                                  "n/a (not probed on every reported seed)"))
        if caps and probe:
            text += "; ratio per seed " + ", ".join(f"{n / probe:.2f}" for n in caps.values())
        figures.append(text)
        if (line := plateau_line(row, dk)):
            figures.append(f"{name}: plateau near d' = {dk} pairs at D = {PAIRS[-1]}: {line}")
        if probe is None or not converged:
            todo.append(f"the probe at (d_k {dk}, d_v {dv}): `evalsuite reproduce {judge.name}` runs it")
        checks[f"{name}: trained n* within x{FACTOR:g} of the probe's on every seed"] = \
            within(caps, probe if converged else None)
    checks[f"softmax (control) at {CEILING} or above at every D"] = (
        True if all(reaches(c, CEILING) for c in soft) else False if any(c.settled_below(CEILING) for c in soft) else None)
    figures.append(f"n*: the most pairs read back at >= {SUCCESS} (per query, as the probe counts), log-interpolated over D "
                   f"in {list(PAIRS)}; the factor x{FACTOR:g} was fixed before the runs")
    figures.append("published: none for trained models at a binding state (FINDINGS 16); the probe is one memory layer with "
                   "learned codebooks (capacity-argmax). Deviations: a mixed-D training mixture (one run gives every D), and "
                   "two-layer models set beside a one-layer probe")
    return judge.decide(figures, checks, "; ".join(filter(None, [unsettled(cs)] + todo)), can_run=runnable(cs) or bool(todo))


register(Experiment(
    "capacity-trained", "Trained language models whose fixed state binds (small d_k and d_v at d_model 64, one and two "
    "mixer layers) hold about what the trained argmax probe holds at the same (d_k, d_v): within a factor of 2.",
    "this project (FINDINGS 16): the trained probe of capacity-argmax against trained MQAR models", verdict,
    designs={"cpu": design("cpu", CPU_LRS), "paper": design("paper", PAPER_LRS)},
    minutes={"cpu": (80, 430), "paper": 120}, order=17, probes={"cpu": probe_calls(), "paper": probe_calls()}))
