"""Softmax concentrates its weight on the queried key; elu+1's implicit weights are much flatter,
and their entropy grows with context length (the seed documents' geometric reading)."""
from __future__ import annotations

from evalsuite.protocol import MARGIN
from evalsuite.reproduce.experiment import Design, Experiment, register
from evalsuite.reproduce.settings import CPU_BASE, CPU_LRS, PAPER_BASE, PAPER_LRS, pair
from evalsuite.reproduce.verdict import fmt


def _retrieval(run):
    """The retrieval layer's sharpness row of a run's analysis, and its rows by context length."""
    a = run.metrics.get("analysis") or {}
    sel = a.get("retrieval_layer")
    for row in a.get("sharpness") or []:
        if sel and row["layer"] == sel["layer"] and row["head"] == sel["head"]:
            return row, [c for c in a.get("sharpness_by_context", []) if c["layer"] == row["layer"] and c["head"] == row["head"]]
    return None, []


def verdict(cells, probes, p, judge):
    soft, lin = cells["softmax"], cells["elu+1"]
    if (v := judge.missing([soft, lin])):
        return v
    figures = [c.figure() for c in (soft, lin)]
    not_learned = [c.label for c in (soft, lin) if not c.learned]
    if not_learned:
        return judge.inconclusive(figures, f"{' and '.join(not_learned)} did not learn this setting; sharpness is compared "
                                           "between models that both solved it")
    rows = {c.label: [_retrieval(r) for r in c.best_runs] for c in (soft, lin)}
    if any(row is None for c in rows.values() for row, _ in c):
        return judge.inconclusive(figures, "the runs carry no sharpness analysis")
    ent = {k: [row["entropy"] for row, _ in v] for k, v in rows.items()}
    mass = {k: [row["answer_mass"] for row, _ in v] for k, v in rows.items()}
    figures.append("retrieval layer (most weight on the answer), mean over seeds: " + "; ".join(
        f"{k} entropy {fmt(sum(ent[k]) / len(ent[k]))} nats (seeds {', '.join(fmt(e) for e in ent[k])}), answer mass "
        f"{fmt(sum(mass[k]) / len(mass[k]))}" for k in ent))
    sharper = max(ent["softmax"]) < 0.5 * min(ent["elu+1"])
    growth = []
    for _, ctx in rows["elu+1"]:
        ctx = sorted(ctx, key=lambda c: c["context"])
        if len(ctx) >= 2:
            growth.append(ctx[-1]["entropy"] - ctx[0]["entropy"])
            figures.append(f"elu+1 entropy from context {ctx[0]['context']:.0f} to {ctx[-1]['context']:.0f}: "
                           f"{fmt(ctx[0]['entropy'])} -> {fmt(ctx[-1]['entropy'])}")
    grows = (min(growth) > MARGIN) if growth else None
    return judge.decide(figures, {"softmax's entropy below half of elu+1's (every seed)": sharper,
                                  f"elu+1's entropy grows with context by > {MARGIN} nats (every seed)": grows})


def design(base, rates, d_model, pairs, seq_len) -> Design:
    return Design(base, pair(reads="softmax sharper than elu+1; elu+1's entropy grows with context",
                             **{"model.d_model": d_model, "task.num_kv_pairs": pairs, "task.seq_len": seq_len}), rates)


register(Experiment(
    "sharpness", "Softmax concentrates its weight on the queried key; elu+1's implicit weights are much flatter, and their "
    "entropy grows with context length.", "the seed documents' geometric reading", verdict,
    designs={"cpu": design(CPU_BASE, CPU_LRS, 64, 4, 64), "paper": design(PAPER_BASE, PAPER_LRS, 64, 16, 256)},
    minutes={"cpu": (9, 44), "paper": 30}, analyses=("retrieval_layer", "sharpness", "sharpness_by_context"), order=80))
