"""With beta in (0, 2) (eigenvalues in (-1, 1)) the delta rule learns parity, where beta in (0, 1)
and elu+1 linear attention do not (Grazzi et al. 2024; docs/FINDINGS.md, finding 12)."""
from __future__ import annotations

from evalsuite.reproduce.clauses import reaches, stays_below
from evalsuite.protocol import CEILING, MIN_SEEDS
from evalsuite.reproduce.experiment import CellSpec, Design, Experiment, register
from evalsuite.reproduce.settings import CPU_LRS, PAPER_LRS
from evalsuite.reproduce.verdict import runnable, unsettled

LEVEL = CEILING  # "learns parity": at least this accuracy at every position of the training length


def verdict(cells, probes, p, judge):
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


def design(rates, d_model, epochs, seq_len=64) -> Design:
    at = {"task.group": "Z2", "task.seq_len": seq_len, "model.d_model": d_model}
    return Design({"task": "word_problem", "model": "delta", "train.epochs": epochs}, [
        CellSpec("delta, beta in (0, 2)", "delta, beta in (0, 2)", {"model": "delta", "model.negative_eigenvalues": True, **at},
                 role="control", reads=f"the positive control: reaches {LEVEL}"),
        CellSpec("delta, beta in (0, 1)", "delta, beta in (0, 1)", {"model": "delta", "model.negative_eigenvalues": False, **at},
                 reads=f"stays below {LEVEL}"),
        CellSpec("elu+1", "elu+1", {"model": "linear", **at}, reads=f"stays below {LEVEL}")], rates)


register(Experiment(
    "parity-negative-eigenvalues", "With beta in (0, 2) (eigenvalues in (-1, 1)) the delta rule learns parity, where "
    "beta in (0, 1) and elu+1 linear attention do not.", "Grazzi et al. 2024, negative eigenvalues (FINDINGS 12)", verdict,
    designs={"cpu": design(CPU_LRS, 32, 3), "paper": design(PAPER_LRS, 128, 20)},
    minutes={"cpu": (10, 48), "paper": 60}, order=110))
