"""Softmax attention solves MQAR at small width (docs/FINDINGS.md; Zoology, Figure 2)."""
from __future__ import annotations

from evalsuite.protocol import CEILING, MIN_SEEDS
from evalsuite.reproduce.clauses import reaches
from evalsuite.reproduce.experiment import CellSpec, Design, Experiment, register
from evalsuite.reproduce.settings import CPU_BASE, CPU_LRS, PAPER_BASE, PAPER_LRS
from evalsuite.reproduce.verdict import INCONCLUSIVE, runnable, unsettled

NEAR_PERFECT = CEILING  # "near 100%"
SETTINGS = [(64, 4), (128, 8)]


def verdict(cells, probes, p, judge):
    cs = list(cells.values())
    if (v := judge.missing(cs)):
        return v
    figures = [c.figure() for c in cs]
    if not any(c.learned for c in cs):
        return judge.verdict(INCONCLUSIVE, figures, "positive control failed: softmax learned none of the settings, so "
                                                    "the training set-up, not the model, is in question")
    checks = {f"{c.label} >= {NEAR_PERFECT}": (True if reaches(c, NEAR_PERFECT)
                                               else False if c.settled_below(NEAR_PERFECT) else None) for c in cs}
    return judge.decide(figures, checks, unsettled(cs) or f"{MIN_SEEDS} reported seeds", can_run=runnable(cs))


def design(base, rates, width=64) -> Design:
    return Design(base, [CellSpec((T, D), f"softmax d{width} (T={T}, D={D})",
                                  {"model": "softmax", "model.d_model": width, "task.seq_len": T, "task.num_kv_pairs": D},
                                  reads=f"softmax near 100% at (T, D) = ({T}, {D})")
                         for T, D in SETTINGS], rates)


register(Experiment(
    "softmax-mqar", "Softmax attention solves MQAR at small width (2 layers, 1 head, d_model 64; (T, D) = (64, 4), (128, 8)).",
    "Zoology (Arora et al. 2023), Figure 2", verdict,
    designs={"cpu": design(CPU_BASE, CPU_LRS), "paper": design(PAPER_BASE, PAPER_LRS)},
    minutes={"cpu": (14, 72), "paper": 60}, order=10, control=True))
