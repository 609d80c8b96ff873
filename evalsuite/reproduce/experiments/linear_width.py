"""elu+1 linear attention falls short of softmax at the same width, improves as d_model grows,
and drops as D grows (docs/FINDINGS.md; Zoology, Figure 2; Based's recall/state trade-off).

CPU setting (issue 62: where the state binds): the width is fixed at 64 and the state grows instead,
d_k = d_v = 8, 16, 32 (``feature_dim``, ``value_dim``; two mixer layers), in the binding setting
(``settings.bind_base``: vocabulary 256, trained on D = 2 ... 32 at once, read at each D). At D = 16
the trained argmax probe holds about 2 pairs at (8, 8) and 13 at (16, 16), so "falls short" is read
at (16, 16), where the state binds a little, beside its controls: softmax, and elu+1 at (32, 32)
(4x the state; its probe holds about 37). "Improves" is read from (8, 8) to (32, 32) at D = 16 and
"drops" at (16, 16) from D = 4 (under its capacity) to 16. Why the state and not the width: the
width also sets the value side (64 per head), where the state never bound (capacity-argmax). Paper
scale: Zoology's widths with the head-size query/key, as published. The earlier CPU setting
(d' = d_model / 16 at value size d_model, D = 16) is what docs/RESULTS.md shows until the
reproduction is regenerated."""
from __future__ import annotations

from evalsuite.reproduce.experiment import CellSpec, Design, Experiment, register
from evalsuite.reproduce.settings import (CPU_LRS, PAPER_BASE, PAPER_LRS, bind_base, bind_metric, bind_point,
                                         state_label)
from evalsuite.reproduce.compare import failure_guard
from evalsuite.reproduce.verdict import above, runnable, unsettled


def verdict(cells, probes, p, judge):
    lo, hi = p["pairs"]
    w0, w1, ref = p["widths"][0], p["widths"][-1], p["ref_width"]
    axis = p.get("axis", "d_model")
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
        figures.append(f"falls short of softmax at {axis} {ref}: the ordering holds, but not as a failure: {why}")
    return judge.decide(figures, {f"falls short of softmax at {axis} {ref}": short,
                                  f"improves from {axis} {w0} to {w1}": above(cells["elu+1", w1, hi], cells["elu+1", w0, hi]),
                                  f"drops from D={lo} to D={hi}": drops}, unsettled(cs), can_run=runnable(cs))


def reads(D, w, lo, hi, ref, role="test") -> str:
    return ("" if role != "test" else "improves with width" if D == hi and w != ref else
            "drops as D grows" if D == lo else "falls short of softmax; improves; drops")


def bound_design(rates, states=(8, 16, 32), ref=16, pairs=(4, 16)) -> Design:
    """The CPU scale (module docstring): elu+1 at d_k = d_v = each of ``states`` at the larger D and
    at ``ref`` at the smaller; softmax at both (the larger D's is the control). Every cell is read
    from the binding setting's mixed-D runs, so it shares them with capacity-trained."""
    lo, hi = pairs

    def lin(d, D):
        return CellSpec(("elu+1", d, D), state_label("elu+1", d, d, 2, D), bind_point("elu+1", d, d),
                        metric=bind_metric(D), reads=reads(D, d, lo, hi, ref) + (
                            f"; the same family at {(states[-1] // ref) ** 2}x the state, the failure's control"
                            if d == states[-1] else ""))
    cells = [lin(d, hi) for d in states] + [lin(ref, lo)]
    cells += [CellSpec(("softmax", D), state_label("softmax", D=D), bind_point("softmax"), metric=bind_metric(D),
                       role="control" if D == hi else "test",
                       reads="the positive control" if D == hi else "shown beside elu+1 at the smaller D") for D in pairs]
    return Design(bind_base("cpu"), cells, rates, {"widths": list(states), "ref_width": ref, "pairs": pairs,
                                                   "axis": "d_k = d_v"})


def design(base, rates, widths, ref, pairs, seq_len, every_width_at_both=False) -> Design:
    """The paper scale: elu+1 at every width at the larger D and at the reference width at the
    smaller; softmax at the reference width at both (the larger D's is the control), the query/key
    the head size. ``every_width_at_both``: Zoology's grid, every width at both D (the other widths
    at the smaller D are reported, not read)."""
    lo, hi = pairs
    at = {"task.seq_len": seq_len}

    def lin(w, D, role="test"):
        return CellSpec(("elu+1", w, D), f"elu+1 d{w} D={D}",
                        {"model": "linear", "model.d_model": w, "task.num_kv_pairs": D, **at}, role=role,
                        reads=reads(D, w, lo, hi, ref, role))
    cells = [lin(w, hi) for w in widths] + [lin(ref, lo)]
    if every_width_at_both:
        cells += [lin(w, lo, role="reported") for w in widths if w != ref]
    cells += [CellSpec(("softmax", D), f"softmax d{ref} D={D}",
                       {"model": "softmax", "model.d_model": ref, "task.num_kv_pairs": D, **at},
                       role="control" if D == hi else "test",
                       reads="the positive control" if D == hi else "shown beside elu+1 at the smaller D") for D in (lo, hi)]
    return Design(base, cells, rates, {"widths": list(widths), "ref_width": ref, "pairs": pairs, "seq_len": seq_len})


register(Experiment(
    "linear-width", "elu+1 linear attention falls short of softmax at the same width, improves as its state grows (d_model "
    "in Zoology; d_k = d_v at CPU scale), and drops as D grows.", "Zoology Figure 2; Based recall/state trade-off", verdict,
    designs={"cpu": bound_design(CPU_LRS),
             "paper": design({**PAPER_BASE, "model": "linear"}, PAPER_LRS, [64, 128, 256, 512], 64, (4, 16), 256,
                             every_width_at_both=True)},
    minutes={"cpu": (30, 78), "paper": 240}, order=20))
