"""Softmax concentrates its weight on the queried key; elu+1's implicit weights are much flatter,
and their entropy grows with context length (the seed documents' geometric reading).

Softmax is the growth clause's control: its retrieval layer's entropy can grow with the context too
(the committed CPU runs: softmax +0.19, +0.09, +0.28 nats from context 12 to 60, elu+1 +0.15,
+0.21, +0.08), so the clause reads elu+1's growth against softmax's, seed by seed, not against 0."""
from __future__ import annotations

from evalsuite.protocol import MARGIN, MIN_SEEDS
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
    growth = {label: {r.seed: _growth(ctx) for r, (_, ctx) in zip(cells[label].best_runs, rows[label])}
              for label in ("softmax", "elu+1")}
    for label in ("softmax", "elu+1"):
        for r, (_, ctx) in zip(cells[label].best_runs, rows[label]):
            if (g := _growth(ctx)) is not None:
                ctx = sorted(ctx, key=lambda c: c["context"])
                figures.append(f"{label} entropy from context {ctx[0]['context']:.0f} to {ctx[-1]['context']:.0f} (seed "
                               f"{r.seed}): {fmt(ctx[0]['entropy'])} -> {fmt(ctx[-1]['entropy'])} ({g:+.3f})")
    grows = grows_beyond(growth["elu+1"], growth["softmax"])
    diff = {s: g - growth["softmax"][s] for s, g in growth["elu+1"].items()
            if g is not None and growth["softmax"].get(s) is not None}
    todo = ("" if grows is not None else
            f"more seeds: elu+1's growth less softmax's, per seed, {', '.join(f'{d:+.3f}' for d in diff.values())}"
            if len(diff) >= MIN_SEEDS else f"{MIN_SEEDS} seeds with the by-context analysis on both models")
    return judge.decide(figures, {"softmax's entropy below half of elu+1's (every seed)": sharper,
                                  f"elu+1's entropy grows with context by more than softmax's, by > {MARGIN} nats "
                                  "(seed by seed; softmax is the control)": grows}, todo)


def _growth(ctx: list[dict]) -> float | None:
    """The retrieval layer's entropy at the longest context less at the shortest (None: one context)."""
    ctx = sorted(ctx, key=lambda c: c["context"])
    return ctx[-1]["entropy"] - ctx[0]["entropy"] if len(ctx) >= 2 else None


def grows_beyond(lin: dict[int, float | None], soft: dict[int, float | None]) -> bool | None:
    """elu+1's entropy growth over softmax's on the seeds both have: True when it exceeds it by more
    than ``MARGIN`` on every one (``MIN_SEEDS`` or more); False when it is no larger on every one
    (the growth is the task's, which softmax shows too); otherwise None."""
    seeds = [s for s in lin if s in soft and lin[s] is not None and soft[s] is not None]
    if len(seeds) < MIN_SEEDS:
        return None
    diff = [lin[s] - soft[s] for s in seeds]
    return True if all(d > MARGIN for d in diff) else False if all(d <= 0 for d in diff) else None


def design(base, rates, d_model, pairs, seq_len) -> Design:
    return Design(base, pair(reads="softmax sharper than elu+1; elu+1's entropy grows with context",
                             **{"model.d_model": d_model, "task.num_kv_pairs": pairs, "task.seq_len": seq_len}), rates)


register(Experiment(
    "sharpness", "Softmax concentrates its weight on the queried key; elu+1's implicit weights are much flatter, and their "
    "entropy grows with context length.", "the seed documents' geometric reading", verdict,
    designs={"cpu": design(CPU_BASE, CPU_LRS, 64, 4, 64), "paper": design(PAPER_BASE, PAPER_LRS, 64, 16, 256)},
    minutes={"cpu": (9, 44), "paper": 30}, analyses=("retrieval_layer", "sharpness", "sharpness_by_context"), order=80))
