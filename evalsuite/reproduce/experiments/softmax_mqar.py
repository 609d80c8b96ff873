"""Softmax attention solves MQAR at small width (docs/FINDINGS.md; Zoology, Figure 2)."""
from __future__ import annotations

from evalsuite.reproduce.clauses import reaches
from evalsuite.reproduce.cells import CEILING, MIN_SEEDS
from evalsuite.reproduce.experiment import Experiment, register
from evalsuite.reproduce.protocol import CPU_BASE, CPU_SET, PAPER_BASE, PAPER_LRS, lrs, mqar, rows
from evalsuite.reproduce.verdict import INCONCLUSIVE, runnable, unsettled

NEAR_PERFECT = CEILING  # "near 100%"


def cells(runs, p):
    return [mqar(runs, f"softmax d{p['d_model']} (T={T}, D={D})", "softmax", d_model=p["d_model"], seq_len=T, pairs=D)
            for T, D in p["settings"]]


def verdict(runs, probes, p, judge):
    cs = cells(runs, p)
    if (v := judge.missing(cs)):
        return v
    figures = [c.figure() for c in cs]
    if not any(c.learned for c in cs):
        return judge.verdict(INCONCLUSIVE, figures, "positive control failed: softmax learned none of the settings, so "
                                                    "the training set-up, not the model, is in question")
    checks = {f"{c.label} >= {NEAR_PERFECT}": (True if reaches(c, NEAR_PERFECT)
                                               else False if c.settled_below(NEAR_PERFECT) else None) for c in cs}
    return judge.decide(figures, checks, unsettled(cs) or f"{MIN_SEEDS} reported seeds", can_run=runnable(cs))


register(Experiment(
    "softmax-mqar", "Softmax attention solves MQAR at small width (2 layers, 1 head, d_model 64; (T, D) = (64, 4), (128, 8)).",
    "Zoology (Arora et al. 2023), Figure 2", verdict,
    params={"cpu": {"d_model": 64, "settings": [(64, 4), (128, 8)]},
            "paper": {"d_model": 64, "settings": [(64, 4), (128, 8)]}},
    minutes={"cpu": (14, 72), "paper": 60},
    specs={"cpu": {"base": CPU_BASE, "set": CPU_SET, "grid": rows(("softmax", 64, 64, 4), ("softmax", 64, 128, 8))},
           "paper": {"base": PAPER_BASE, "grid": {"task.seq_len,task.num_kv_pairs": [[64, 4], [128, 8]], **lrs(PAPER_LRS)},
                     "set": {"model.d_model": 64}}},
    cells=cells, order=10))
