"""elu+1 linear attention falls short of softmax at the same width, improves as d_model grows,
and drops as D grows (docs/FINDINGS.md; Zoology, Figure 2; Based's recall/state trade-off).

CPU setting: the query/key size grows with the width, d' = d_model / 16 (2, 4, 8 at widths 32, 64,
128; ``feature_dim``, so the width itself stays trainable, FINDINGS 16), at D = 16. Paper scale:
Zoology's widths with the head-size query/key, as published. What the CPU runs showed at this
setting is in docs/RESULTS.md."""
from __future__ import annotations

from evalsuite.reproduce.experiment import CellSpec, Design, Experiment, register
from evalsuite.reproduce.settings import CPU_BASE, CPU_FEATURE_DIM, CPU_LRS, PAPER_BASE, PAPER_LRS
from evalsuite.reproduce.compare import failure_guard
from evalsuite.reproduce.verdict import above, runnable, unsettled

WIDTH_PER_FEATURE = 64 // CPU_FEATURE_DIM  # CPU scale: d' = d_model / 16 (CPU_FEATURE_DIM at the reference width)


def verdict(cells, probes, p, judge):
    lo, hi = p["pairs"]
    w0, w1, ref = p["widths"][0], p["widths"][-1], p["ref_width"]
    cs = list(cells.values())
    if (v := judge.missing(cs)):
        return v
    figures = [c.figure() for c in cs]
    if (v := judge.control(cells["softmax", hi], figures)):
        return v
    few, many = cells["elu+1", ref, lo], cells["elu+1", ref, hi]
    # drops as D grows (at the reference width): the small D must be learned, then an ordering
    order = above(few, many)
    drops = order if few.learned or order is None else None
    # a decided shortfall stands beside its controls (compare.failure_guard): softmax learned at that
    # budget, elu+1 at 4x the state (the widest cell) reaches 0.9, and the short cell is above its floor
    short = above(cells["softmax", hi], many)
    if short is True and (why := failure_guard(many, cells["softmax", hi], cells["elu+1", w1, hi])):
        short = None
        figures.append(f"falls short of softmax at d_model {ref}: the ordering holds, but not as a failure: {why}")
    return judge.decide(figures, {f"falls short of softmax at d_model {ref}": short,
                                  f"improves from d_model {w0} to {w1}": above(cells["elu+1", w1, hi], cells["elu+1", w0, hi]),
                                  f"drops from D={lo} to D={hi}": drops}, unsettled(cs), can_run=runnable(cs))


def design(base, rates, widths, ref, pairs, seq_len, width_per_feature=None, every_width_at_both=False) -> Design:
    """elu+1 at every width at the larger D and at the reference width at the smaller; softmax at the
    reference width at both (the larger D's is the control). ``width_per_feature``: d' = width / it
    (None: the head size). ``every_width_at_both``: Zoology's grid, every width at both D (the other
    widths at the smaller D are reported, not read)."""
    lo, hi = pairs
    at = {"task.seq_len": seq_len}

    def lin(w, D, role="test"):
        fd = w // width_per_feature if width_per_feature else None
        return CellSpec(("elu+1", w, D), f"elu+1 d{w}" + (f" d'{fd}" if fd else "") + f" D={D}",
                        {"model": "linear", "model.d_model": w, "task.num_kv_pairs": D, **at,
                         **({"model.feature_dim": fd} if fd else {})}, role=role,
                        reads="" if role != "test" else "improves with width" if D == hi and w != ref else
                        "drops as D grows" if D == lo else "falls short of softmax; improves; drops")
    cells = [lin(w, hi) for w in widths] + [lin(ref, lo)]
    if every_width_at_both:
        cells += [lin(w, lo, role="reported") for w in widths if w != ref]
    cells += [CellSpec(("softmax", D), f"softmax d{ref} D={D}",
                       {"model": "softmax", "model.d_model": ref, "task.num_kv_pairs": D, **at},
                       role="control" if D == hi else "test",
                       reads="the positive control" if D == hi else "shown beside elu+1 at the smaller D") for D in (lo, hi)]
    return Design(base, cells, rates, {"widths": list(widths), "ref_width": ref, "pairs": pairs, "seq_len": seq_len})


register(Experiment(
    "linear-width", "elu+1 linear attention falls short of softmax at the same width, improves as d_model grows, and drops "
    "as D grows.", "Zoology Figure 2; Based recall/state trade-off", verdict,
    designs={"cpu": design(CPU_BASE, CPU_LRS, [32, 64, 128], 64, (4, 16), 64, WIDTH_PER_FEATURE),
             "paper": design({**PAPER_BASE, "model": "linear"}, PAPER_LRS, [64, 128, 256, 512], 64, (4, 16), 256,
                             every_width_at_both=True)},
    minutes={"cpu": (25, 124), "paper": 240}, order=20))
