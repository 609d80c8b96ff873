"""Copy: softmax and elu+1 linear attention both reach a low loss; linear may converge more
slowly (Katharopoulos et al. 2020, Figure 2).

A positive control, not a finding: its words (8 to 15 symbols of 10) are far inside what elu+1's
state holds at d_model 64 (a 64 x 64 state per layer), so it shows the set-up
trains both models, not what a fixed state loses. "Linear may converge more slowly" is a speed
claim, read as steps to the runs' own target (0.99 validation accuracy, where they stop) per seed,
a run that never reached it censored at its budget; reported, not judged ("may").
"""
from __future__ import annotations

from evalsuite.protocol import MIN_SEEDS
from evalsuite.records import TARGET_ACCURACY
from evalsuite.reproduce.experiment import Design, Experiment, register
from evalsuite.reproduce.settings import CPU_LRS, PAPER_LRS, pair
from evalsuite.reproduce.compare import faster, speed_figure
from evalsuite.reproduce.verdict import WORD, fmt, runnable, unsettled

LOW_LOSS = 0.1
SPEED_LEVEL = TARGET_ACCURACY  # validation accuracy whose steps the speed figure compares: where the runs stop


def _steps(cell) -> str:
    return ", ".join(f"{r.metrics['best_step']} of {r.metrics['steps']}" for r in cell.best_runs)


def verdict(cells, probes, p, judge):
    soft, lin = cells["softmax"], cells["elu+1"]
    if (v := judge.missing([soft, lin])):
        return v
    figures = [f"{c.figure()}; test loss {fmt(c.loss)}, best validation at step {_steps(c)}" for c in (soft, lin)]
    # "linear may converge more slowly": a speed claim, read as steps to a level with censoring (reported)
    figures.append(speed_figure([soft, lin], SPEED_LEVEL) + f"; softmax reaches it first on every seed: "
                   f"{WORD[faster(soft, lin, SPEED_LEVEL)]} (reported, not judged)")
    if soft.loss >= LOW_LOSS:
        return judge.inconclusive(figures, f"positive control failed: softmax's test loss {fmt(soft.loss)} is not below "
                                           f"{LOW_LOSS}")
    low = (True if lin.loss < LOW_LOSS and len(lin.seeds) >= MIN_SEEDS and len(soft.seeds) >= MIN_SEEDS
           else False if lin.loss >= LOW_LOSS and lin.stable else None)
    return judge.decide(figures, {f"both test losses below {LOW_LOSS}": low}, unsettled([lin]) or f"{MIN_SEEDS} reported seeds",
                        can_run=runnable([soft, lin]))


CELLS = pair(reads=f"both test losses below {LOW_LOSS}")

register(Experiment(
    "copy", "Copy: softmax and elu+1 linear attention both reach a low loss (linear may converge more slowly).",
    "Katharopoulos et al. 2020, Figure 2", verdict,
    # cpu: 5 epochs pinned (the default preset's budget may change)
    designs={"cpu": Design({"task": "copy", "model": "softmax", "train.epochs": 5}, CELLS, CPU_LRS),
             "paper": Design({"task": "copy", "model": "softmax", "preset": "paper"}, CELLS, PAPER_LRS)},
    minutes={"cpu": (5, 27), "paper": 60}, order=70, control=True))
