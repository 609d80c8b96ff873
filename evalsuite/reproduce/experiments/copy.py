"""Copy: softmax and elu+1 linear attention both reach a low loss; linear may converge more
slowly (Katharopoulos et al. 2020, Figure 2)."""
from __future__ import annotations

from evalsuite.reproduce.cells import MIN_SEEDS
from evalsuite.reproduce.experiment import Experiment, register
from evalsuite.reproduce.protocol import CPU_LRS, PAPER_LRS, lrs, pair
from evalsuite.reproduce.verdict import fmt, runnable, unsettled

LOW_LOSS = 0.1


def _steps(cell) -> str:
    return ", ".join(f"{r.metrics['best_step']} of {r.metrics['steps']}" for r in cell.best_runs)


def verdict(runs, probes, p, judge):
    soft, lin = pair(runs, "copy")
    if (v := judge.missing([soft, lin])):
        return v
    figures = [f"{c.figure()}; test loss {fmt(c.loss)}, best validation at step {_steps(c)}" for c in (soft, lin)]
    if soft.loss >= LOW_LOSS:
        return judge.inconclusive(figures, f"positive control failed: softmax's test loss {fmt(soft.loss)} is not below "
                                           f"{LOW_LOSS}")
    low = (True if lin.loss < LOW_LOSS and len(lin.seeds) >= MIN_SEEDS and len(soft.seeds) >= MIN_SEEDS
           else False if lin.loss >= LOW_LOSS and lin.stable else None)
    return judge.decide(figures, {f"both test losses below {LOW_LOSS}": low}, unsettled([lin]) or f"{MIN_SEEDS} reported seeds",
                        can_run=runnable([soft, lin]))


register(Experiment(
    "copy", "Copy: softmax and elu+1 linear attention both reach a low loss (linear may converge more slowly).",
    "Katharopoulos et al. 2020, Figure 2", verdict, params={"cpu": {}, "paper": {}}, minutes={"cpu": (5, 27), "paper": 60},
    specs={"cpu": {"base": {"task": "copy", "model": "softmax"}, "grid": {"model": ["softmax", "linear"], **lrs(CPU_LRS)},
                   "set": {"train.epochs": 5}},  # pinned: the default preset's budget may change
           "paper": {"base": {"task": "copy", "model": "softmax", "preset": "paper"},
                     "grid": {"model": ["softmax", "linear"], **lrs(PAPER_LRS)}}},
    cells=lambda runs, p: pair(runs, "copy"), order=70))
