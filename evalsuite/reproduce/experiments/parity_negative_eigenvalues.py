"""With beta in (0, 2) (eigenvalues in (-1, 1)) the delta rule learns parity, where beta in (0, 1)
and elu+1 linear attention do not (Grazzi et al. 2024; docs/FINDINGS.md, finding 12)."""
from __future__ import annotations

from evalsuite.reproduce.clauses import reaches, stays_below
from evalsuite.reproduce.cells import CEILING, MIN_SEEDS, Cell
from evalsuite.reproduce.experiment import Experiment, register
from evalsuite.reproduce.protocol import CPU_LRS, PAPER_LRS, lrs
from evalsuite.reproduce.verdict import runnable, unsettled

LEVEL = CEILING  # "learns parity": at least this accuracy at every position of the training length


def cells_by_model(runs, p) -> dict[str, Cell]:
    where = {"task__name": "word_problem", "task__group": "Z2", "task__seq_len": p["seq_len"], "model__d_model": p["d_model"]}
    return {"delta, beta in (0, 2)": Cell.of(runs, "delta, beta in (0, 2)", model__name="delta",
                                             model__negative_eigenvalues=True, **where),
            "delta, beta in (0, 1)": Cell.of(runs, "delta, beta in (0, 1)", model__name="delta",
                                             model__negative_eigenvalues=None, **where),
            "elu+1": Cell.of(runs, "elu+1", model__name="linear", model__feature_map="elu1", **where)}


def verdict(runs, probes, p, judge):
    cells = cells_by_model(runs, p)
    cs = list(cells.values())
    if (v := judge.missing(cs)):
        return v
    figures = [c.figure() for c in cs]
    for c in cs:
        if (longest := c.eval_accuracies()):
            figures.append(f"{c.label} at test lengths: " + ", ".join(f"T={T} {a:.3f}" for T, a in longest.items()))
    neg = cells["delta, beta in (0, 2)"]
    if not neg.learned_at(LEVEL) and not (neg.long_acc is not None and neg.long_acc >= LEVEL):
        if neg.settled_below(LEVEL) or not neg.unsettled():
            return judge.inconclusive(figures, f"positive control failed: the delta rule with beta in (0, 2) did not reach "
                                               f"{LEVEL} with a full sweep, three seeds and 4x the budget on each, so the others' "
                                               "failure says nothing here")
    learns = True if reaches(neg, LEVEL) else None
    figures.append("published (docs/FINDINGS.md, finding 12; Grazzi et al. 2024): with eigenvalues in [-1, 1] "
                   "(beta in (0, 2)) the delta rule solves parity, which beta in (0, 1) cannot")
    return judge.decide(figures, {
        f"delta, beta in (0, 2) reaches {LEVEL} ({MIN_SEEDS} seeds)": learns,
        f"delta, beta in (0, 1) stays below {LEVEL}": stays_below(cells["delta, beta in (0, 1)"], LEVEL),
        f"elu+1 stays below {LEVEL}": stays_below(cells["elu+1"], LEVEL)}, unsettled(cs), can_run=runnable(cs))


register(Experiment(
    "parity-negative-eigenvalues", "With beta in (0, 2) (eigenvalues in (-1, 1)) the delta rule learns parity, where "
    "beta in (0, 1) and elu+1 linear attention do not.", "Grazzi et al. 2024, negative eigenvalues (FINDINGS 12)", verdict,
    params={"cpu": {"seq_len": 64, "d_model": 32}, "paper": {"seq_len": 64, "d_model": 128}},
    minutes={"cpu": (10, 48), "paper": 60},
    specs={"cpu": {"base": {"task": "word_problem", "model": "delta"}, "set": {"train.epochs": 3, "model.d_model": 32},
                   "grid": {"model.negative_eigenvalues": [True, False], **lrs(CPU_LRS)},
                   "points": [{"model": "linear", "train.lr": lr} for lr in CPU_LRS]},
           "paper": {"base": {"task": "word_problem", "model": "delta"}, "set": {"model.d_model": 128, "train.epochs": 20},
                     "grid": {"model.negative_eigenvalues": [True, False], **lrs(PAPER_LRS)},
                     "points": [{"model": "linear", "train.lr": lr} for lr in PAPER_LRS]}},
    cells=lambda runs, p: list(cells_by_model(runs, p).values()), order=110))
