"""One memory layer, S pairs then one read, under Schlag et al.'s squared error (the law of that
objective, not of argmax retrieval: capacity-argmax): a linear memory holds about d' pairs, its feature
dimension (elu+1: d_key; DPFP: 2 nu d_key), so past S = d' it retrieves about d' of them; softmax
has no limit in the range (Schlag et al. 2021, section 6.1).

Capacity is read as the field defines it: the pairs retrieved (accuracy x S) where S exceeds the
feature dimension, compared with that dimension per map. The 0.99 knee is shown where the S grid
resolves it (3 points or more between d'/2 and 4 d'), not judged: on a coarse grid two knees tie at
one grid point while the retrieved pairs differ twofold."""
from __future__ import annotations

import math

from evalsuite.analysis.capacity import probe_curves, retrieved
from evalsuite.analysis.capacity import probe_feature_dim as feature_dim
from evalsuite.labels import memory_label
from evalsuite.records import TARGET_ACCURACY
from evalsuite.protocol import BUDGET_FACTOR, MIN_SEEDS
from evalsuite.reproduce.experiment import Design, Experiment, register
from evalsuite.reproduce.probes import knee_unsettled

# the memories of the verdict, named by the one function that names probe rows
MEMORIES = [memory_label(*m) for m in (("linear", "elu1"), ("linear", "dpfp", {"nu": 1}), ("linear", "dpfp", {"nu": 2}),
                                       ("linear", "dpfp", {"nu": 3}), ("softmax",))]
PAPER_PAIRS = [20, 40, 60, 80, 100, 150, 200, 300, 400, 500, 600]


CPU_PAIRS = [4, 8, 12, 16, 20, 24, 32, 40, 48, 64, 96, 128]  # S points from d'/2 to past 4 d' for elu+1 and DPFP nu=1..3
RESOLVES = 3  # a knee is read only where the grid has this many S points between d'/2 and 4 d'


def verdict(cells, probes, p, judge):
    from evalsuite.analysis import half_point, knee

    need, d_key = MEMORIES, p["d_key"]
    curves = probe_curves(probes, d_key)
    gone = [m for m in need if m not in curves]
    if gone:
        return judge.inconclusive([], f"no probes of {', '.join(gone)} at d_key {d_key}: run `evalsuite reproduce "
                                      f"{judge.name}`")
    open_ = {m: knee_unsettled(curves[m]) for m in need}
    largest = int(min(curves[m].pairs.max() for m in need))
    dims = {m: feature_dim(m, d_key) for m in need}
    caps = {m: retrieved(curves[m], d) for m, d in dims.items() if d is not None}
    figures = [f"d_key {d_key}, S up to {largest}: pairs retrieved past the feature dimension d' (the most of accuracy x S "
               f"over S > d', held-out sequences, mean over seeds): "
               + ", ".join(f"{m} " + ("n/a (the grid ends at d')" if c is None else f"{c:.1f}") + f" of d' = {dims[m]}"
                           + (" (unsettled)" if open_[m] else "") for m, c in caps.items())]
    knees = {}
    for m in need:
        d = dims[m] or d_key
        points = int(((curves[m].pairs >= d / 2) & (curves[m].pairs <= 4 * d)).sum())
        knees[m] = knee(curves[m]) if points >= RESOLVES else None
    figures.append(f"knee (largest S at >= {TARGET_ACCURACY}), read where the grid has {RESOLVES}+ S points in "
                   "[d'/2, 4 d']: " + ", ".join(f"{m} {'not resolved by the grid' if k is None else k}" for m, k in knees.items()))
    figures.append("50% point (S where accuracy falls through 0.5, log-interpolated): "
                   + ", ".join(f"{m} " + (f"{h:.0f}" if math.isfinite(h := half_point(curves[m])) else f">= {largest}")
                               for m in need))
    figures += [f"{m}: " + ", ".join(f"S={int(r.pairs)} {r.accuracy:.3f}" for r in curves[m].itertuples())
                + f" ({int(curves[m].seeds.min())}-{int(curves[m].seeds.max())} seeds, up to {int(curves[m].max_steps.max()):,} steps)"
                for m in need]
    # positive control: every memory retrieves the smallest S, or the probe did not train
    untrained = [m for m in need if curves[m].accuracy.iloc[0] < TARGET_ACCURACY]
    if untrained:
        return judge.inconclusive(figures, f"positive control failed: {', '.join(untrained)} did not retrieve even "
                                           f"{int(curves[untrained[0]].pairs.iloc[0])} pairs")

    def decided(value: bool | None, *memories) -> bool | None:
        return value if value is None or not any(open_[m] for m in memories) else None

    def about(m: str) -> bool | None:  # holds about d' pairs: within [d'/2, 2 d']
        c, d = caps[m], dims[m]
        return decided(None if c is None else bool(d / 2 <= c <= 2 * d), m)

    def grows(a: str, b: str) -> bool | None:
        return decided(None if caps[a] is None or caps[b] is None else bool(caps[b] > caps[a]), a, b)

    elu, d1, d2, d3 = need[:4]
    short = [m for m, c in caps.items() if c is None]
    todo = "; ".join([f"{m} at S {open_[m][1]}: "
                      + (f"seeds up to {MIN_SEEDS}" if open_[m][0] == "seed" else f"{BUDGET_FACTOR}x the steps")
                      for m in need if open_[m]]
                     + ([f"probe S past d' (up to 4 d') for {', '.join(short)}"] if short else []))
    return judge.decide(figures, {
        **{f"{m} retrieves about d' = {dims[m]} pairs (within [d'/2, 2 d'])": about(m) for m in (elu, d1, d2, d3)},
        "retrieved pairs grow with d' (elu+1 < DPFP nu=1 < nu=2 < nu=3)": (
            None if None in (g := [grows(elu, d1), grows(d1, d2), grows(d2, d3)]) and False not in g else all(g)),
        "softmax retrieves every S in the range": decided(bool(curves["softmax"].accuracy.iloc[-1] >= TARGET_ACCURACY), "softmax")},
        todo)


def _probes(**extra) -> list[dict]:
    return [dict(memory="linear", feature_map="elu1", **extra),
            *[dict(memory="linear", feature_map="dpfp", feature_map_options={"nu": n}, **extra) for n in (1, 2, 3)],
            dict(memory="softmax", **extra)]


register(Experiment(
    "capacity-knee", "One memory layer, S pairs then one read: a linear memory retrieves about d' pairs past S = d' "
    "(elu+1: d' = d_key; DPFP: 2 nu d_key), softmax every S in the range.", "Schlag et al. 2021, section 6.1, setting 1", verdict,
    designs={"cpu": Design(params={"d_key": 16}), "paper": Design(params={"d_key": 64})}, minutes={"cpu": 6, "paper": 30},
    probes={"cpu": _probes(pairs=CPU_PAIRS), "paper": _probes(d_key=64, pairs=PAPER_PAIRS)}, order=30))
