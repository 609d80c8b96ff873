"""One memory layer, S pairs then one read: elu+1 errs past about d_key pairs, DPFP's knee moves
out with nu (2 nu d_key), softmax has no knee in the range (Schlag et al. 2021, section 6.1)."""
from __future__ import annotations

import math

from evalsuite.labels import memory_label
from evalsuite.records import TARGET_ACCURACY
from evalsuite.reproduce.cells import BUDGET_FACTOR
from evalsuite.reproduce.experiment import Experiment, register
from evalsuite.reproduce.probes import knee_unsettled, probe_curves

# the memories of the verdict, named by the one function that names probe rows
MEMORIES = [memory_label(*m) for m in (("linear", "elu1"), ("linear", "dpfp", {"nu": 1}), ("linear", "dpfp", {"nu": 2}),
                                       ("linear", "dpfp", {"nu": 3}), ("softmax",))]
PAPER_PAIRS = [20, 40, 60, 80, 100, 150, 200, 300, 400, 500, 600]


def verdict(runs, probes, p, judge):
    from evalsuite.analysis import half_point, knee

    need, d_key = MEMORIES, p["d_key"]
    curves = probe_curves(probes, d_key)
    gone = [m for m in need if m not in curves]
    if gone:
        return judge.inconclusive([], f"no probes of {', '.join(gone)} at d_key {d_key}: run `evalsuite reproduce "
                                      f"{judge.name}`")
    knees = {m: knee(curves[m]) for m in need}
    open_ = {m: knee_unsettled(curves[m]) for m in need}
    largest = int(min(curves[m].pairs.max() for m in need))
    figures = [f"d_key {d_key}, S up to {largest}, knee = largest S retrieved at >= {TARGET_ACCURACY} on held-out sequences "
               f"(mean over seeds): " + ", ".join(f"{m} {knees[m]}" + (" (unsettled)" if open_[m] else "") for m in need)]
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

    def decided(value: bool, *memories) -> bool | None:
        return value if not any(open_[m] for m in memories) else None

    def out(a: str, b: str) -> bool:  # b's knee beyond a's, or both at the top of the range
        return knees[b] > knees[a] or knees[a] == knees[b] >= largest

    elu, d1, d2, d3 = need[:4]
    return judge.decide(figures, {
        f"elu+1 knee within [d_key/2, 2 d_key] = [{d_key // 2}, {2 * d_key}]": decided(d_key / 2 <= knees[elu] <= 2 * d_key, elu),
        "DPFP nu=1 beyond elu+1": decided(out(elu, d1), elu, d1),
        "DPFP nu=2 beyond nu=1": decided(out(d1, d2), d1, d2),
        "DPFP nu=3 beyond nu=2": decided(out(d2, d3), d2, d3),
        "softmax shows no knee in the range": decided(knees["softmax"] >= largest, "softmax")},
        "; ".join(f"{m} at S {open_[m][1]}: " + ("a second seed" if open_[m][0] == "seed" else f"{BUDGET_FACTOR}x the steps")
                  for m in need if open_[m]))


def _probes(**extra) -> list[dict]:
    return [dict(memory="linear", feature_map="elu1", **extra),
            *[dict(memory="linear", feature_map="dpfp", feature_map_options={"nu": n}, **extra) for n in (1, 2, 3)],
            dict(memory="softmax", **extra)]


register(Experiment(
    "capacity-knee", "One memory layer, S pairs then one read: elu+1 errs past about d_key pairs, DPFP's knee moves out "
    "with nu (2 nu d_key), softmax has no knee in the range.", "Schlag et al. 2021, section 6.1, setting 1", verdict,
    params={"cpu": {"d_key": 16}, "paper": {"d_key": 64}}, minutes={"cpu": 6, "paper": 30},
    probes={"cpu": _probes(), "paper": _probes(d_key=64, pairs=PAPER_PAIRS)}, order=30))
