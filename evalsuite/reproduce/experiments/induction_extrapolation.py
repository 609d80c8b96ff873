"""On induction heads, softmax attention generalises to at most about 2x its training length
(Mamba, Gu and Dao 2023, Table 2; docs/FINDINGS.md, finding 11)."""
from __future__ import annotations

from evalsuite.reproduce.cells import LEARNED_FRACTION, MIN_SEEDS, Cell, eval_accuracies
from evalsuite.reproduce.experiment import Experiment, register
from evalsuite.reproduce.protocol import CPU_LRS, PAPER_LRS, lrs
from evalsuite.reproduce.verdict import runnable, unsettled


def cells_by_model(runs, p) -> dict[str, Cell]:
    where = {"task__name": "induction", "task__seq_len": p["seq_len"], "model__d_model": p["d_model"]}
    return {label: Cell.of(runs, label, model__name=model, **more, **where) for label, model, more in p["models"]}


def verdict(runs, probes, p, judge):
    cells = cells_by_model(runs, p)
    if (v := judge.missing(list(cells.values()))):
        return v
    figures = [c.figure() for c in cells.values()]
    by_len = {label: c.eval_accuracies() for label, c in cells.items()}
    for label, accs in by_len.items():
        figures.append(f"{label}, trained at T={p['seq_len']}, tested at: " + ", ".join(f"T={T} {a:.3f}" for T, a in accs.items()))
    soft = cells["softmax"]
    if (v := judge.control(soft, figures)):
        return v
    level = soft.floor + LEARNED_FRACTION * (1 - soft.floor)
    far = [T for T in by_len["softmax"] if T >= p["beyond"] * p["seq_len"]]
    if not far:
        return judge.inconclusive(figures, f"no test length of at least {p['beyond']}x the training length")
    # contradicted when the best rate's seeds (two or more) all hold the learned level at every far
    # length; shown when every run of the cell (every rate, seed and budget) falls below it there
    seeds_ok = len(soft.seeds) >= MIN_SEEDS
    if seeds_ok and all(all(a.get(T, 0.0) >= level for T in far) for a in map(eval_accuracies, soft.best_runs)):
        drops = False
    elif seeds_ok and all(all(a.get(T, 1.0) < level for T in far) for a in map(eval_accuracies, soft.runs)):
        drops = True
    else:
        drops = None
    holds = {label: all(accs.get(T, 0.0) >= level for T in far) for label, accs in by_len.items() if label != "softmax"}
    figures.append(f"learned level {level:.3f} (halfway from the floor {soft.floor:.3f} to 1); lengths judged: {far}")
    figures.append("published (docs/FINDINGS.md, finding 11; Mamba, Table 2: vocab 16, train 256): attention variants "
                   "generalise to at most about 2x the training length, Mamba to 2^20. Deviations: we train at T 64 and "
                   "test to 1,024 (16x); our softmax has no positional encoding (a short convolution supplies order), "
                   "where the paper's attention variants used absolute, RoPE and xPos positions")
    checks = {f"softmax below {level:.3f} at {p['beyond']}x the training length and beyond": drops}
    positions = {r.config["model"].get("positions") for r in soft.runs}
    untested = ("the claim is about attention with positional encodings (absolute, RoPE, xPos), and these softmax "
                "runs have none (model.positions=none; learned absolute positions cannot reach past the trained "
                "length, and sinusoidal or rotary encodings are not implemented yet)") if positions == {"none"} else ""
    return judge.decide(figures + [f"{label} holds the learned level at {p['beyond']}x and beyond: "
                                   f"{'yes' if h else 'no'} (reported, not judged)" for label, h in holds.items()],
                        checks, unsettled([soft]) or "more reported seeds", can_run=runnable([soft]), untested=untested)


MODELS = [("softmax", "softmax", {}), ("delta", "delta", {})]
register(Experiment(
    "induction-extrapolation", "On induction heads, softmax attention generalises to at most about 2x its training length.",
    "Mamba (Gu and Dao 2023), Table 2 (FINDINGS 11)", verdict,
    params={"cpu": {"seq_len": 64, "d_model": 64, "beyond": 4, "models": MODELS},
            "paper": {"seq_len": 256, "d_model": 64, "beyond": 4, "models": MODELS}},
    minutes={"cpu": 5, "paper": 60},
    specs={"cpu": {"base": {"task": "induction", "model": "softmax"}, "set": {"train.epochs": 3},
                   "grid": {"model": ["softmax", "delta"], **lrs(CPU_LRS)}},
           "paper": {"base": {"task": "induction", "model": "softmax", "preset": "mamba"},
                     "grid": {"model": ["softmax", "delta"], **lrs(PAPER_LRS)}}},
    cells=lambda runs, p: list(cells_by_model(runs, p).values()), order=120))
