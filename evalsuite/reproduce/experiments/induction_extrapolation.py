"""On induction heads, softmax attention with positional encodings generalises to at most about 2x
its training length (Mamba, Gu and Dao 2023, Table 2; docs/FINDINGS.md, finding 11).

The claim is about attention with positions, so the judged cells are softmax with each encoding
the paper's attention variants used (absolute, RoPE, xPos; models/positions.py), as plain
multi-head attention: no short convolution (which supplies order by itself). Learned absolute
positions cannot run past the trained length at all, so "absolute" is the sinusoidal table.
Reported beside them, not judged: the suite's default backbone (short convolution, kernel 4)
without positions and with RoPE, and the delta rule. Runs that have no positioned softmax say
"not tested".

Rates: [3e-4, 1e-3, 3e-3], one step below the suite's CPU grid, where the positioned models
without a convolution learn (docs/guide/designs.md).

Budget: every run trains its whole budget (``train.stop_at_target=false``): how long a model
trains past fitting the training length decides its extrapolation, so a figure read at a stop on
reaching the target is not settled (docs/guide/designs.md). The judged figure is each encoding's accuracy at the shortest test length of at least
``beyond`` x the training length (``Cell(metric="eval_i_accuracy")``), judged by the claim's own
criterion (``compare.below_far``: below the learned level on every seed at every rung reached), not by the
0.05 settledness test, which does not fit a metric no run trains for; the rate is chosen on
validation at the training length.
"""
from __future__ import annotations

from evalsuite.protocol import LEARNED_FRACTION
from evalsuite.reproduce.compare import below_far
from evalsuite.reproduce.experiment import CellSpec, Design, Experiment, far_segment, register
from evalsuite.reproduce.settings import PAPER_LRS
from evalsuite.reproduce.verdict import runnable, unsettled


def verdict(cells, probes, p, judge):
    judged = [cells[label] for label in p["judged"]]
    reported = [cells[label] for label in p["reported"]]
    if not any(c.present for c in judged) and any(c.present for c in reported):
        return judge.decide([c.figure() for c in cells.values() if c.present],
                            {f"{c.label} below the learned level far beyond the training length": None for c in judged},
                            untested="the claim is about attention with positional encodings (absolute, RoPE, xPos), and "
                                     "these runs have no positioned softmax (model.positions=none; learned absolute "
                                     "positions cannot reach past the trained length); run `evalsuite reproduce "
                                     "induction-extrapolation` for the sinusoidal, RoPE and xPos cells")
    if (v := judge.missing(judged)):
        return v
    shown = [c for c in judged + reported if c.present]
    figures = [c.figure() for c in shown]
    by_len = {c.label: c.eval_accuracies() for c in shown}
    for label, accs in by_len.items():
        figures.append(f"{label}, trained at T={p['seq_len']}, tested at: " + ", ".join(f"T={T} {a:.3f}" for T, a in accs.items()))
    for c in judged:
        if (v := judge.control(c, figures)):
            return v
    far = p["far"]
    if far is None:
        return judge.inconclusive(figures, f"no test length of at least {p['beyond']}x the training length")
    reads = {label: cells["far", label] for label in p["judged"]}
    figures += [c.figure() for c in reads.values()]
    checks = {}
    for c in judged:
        level = c.floor + LEARNED_FRACTION * (1 - c.floor)
        checks[f"{c.label} below {level:.3f} at T={far[1]} ({p['beyond']}x the training length)"] = below_far(reads[c.label], level)
    level = judged[0].floor + LEARNED_FRACTION * (1 - judged[0].floor)
    figures.append(f"learned level: halfway from the floor (at the training length) to 1 ({level:.3f} at floor "
                   f"{judged[0].floor:.3f}); judged at T={far[1]}")
    figures += [f"{c.label} holds the learned level at T={far[1]}: "
                f"{'yes' if by_len[c.label].get(far[1], 0.0) >= level else 'no'} (reported, not judged)"
                for c in reported if c.present]
    figures.append("published (docs/FINDINGS.md, finding 11; Mamba, Table 2: vocab 16, train 256): attention variants "
                   "(absolute, RoPE, xPos) generalise to at most about 2x the training length, Mamba to 2^20. "
                   f"Deviations: we train at T {p['seq_len']} and test to 16x (the paper to 2^20 = 4,096x); absolute "
                   "positions are the sinusoidal table scaled to the embeddings' initial std (models/positions.py); "
                   "rates and seeds by the suite's protocol")
    cs = list(reads.values())
    return judge.decide(figures, checks, unsettled(cs), can_run=runnable(cs))


POSITIONED = [("softmax, sinusoidal", "softmax", "sinusoidal", 0), ("softmax, RoPE", "softmax", "rope", 0),
              ("softmax, xPos", "softmax", "xpos", 0)]
REPORTED = [("softmax + conv, no positions", "softmax", "none", 4), ("softmax + conv, RoPE", "softmax", "rope", 4),
            ("delta + conv", "delta", "none", 4)]
INDUCTION_LRS = (0.0003, 0.001, 0.003)


def design(base: dict, rates, seq_len: int = 64, d_model: int = 64, beyond: float = 4) -> Design:
    """Every encoding at the training length (the judged ones' is their control: they must learn the
    task) and the judged ones again at the far test length (``metric``: that eval segment's accuracy)."""
    at = {"task.seq_len": seq_len, "model.d_model": d_model}

    def point(model, positions, conv):
        return {"model": model, "model.positions": positions, "model.conv_kernel": conv, **at}
    cells = [CellSpec(label, label, point(*rest), role="control", reads="learns at the training length")
             for label, *rest in POSITIONED]
    cells += [CellSpec(label, label, point(*rest), role="reported") for label, *rest in REPORTED]
    far = far_segment({**base, **point(*POSITIONED[0][1:])}, seq_len, beyond)
    if far is not None:
        cells += [CellSpec(("far", label), f"{label} at T={far[1]}", point(*rest), metric=f"eval_{far[0]}_accuracy",
                           reads=f"below the learned level at {beyond:g}x the training length")
                  for label, *rest in POSITIONED]
    return Design(base, cells, rates, {"seq_len": seq_len, "d_model": d_model, "beyond": beyond, "far": far,
                                       "judged": [label for label, *_ in POSITIONED],
                                       "reported": [label for label, *_ in REPORTED]})


register(Experiment(
    "induction-extrapolation", "On induction heads, softmax attention with positional encodings (absolute, RoPE, xPos) "
    "generalises to at most about 2x its training length.",
    "Mamba (Gu and Dao 2023), Table 2 (FINDINGS 11)", verdict,
    designs={"cpu": design({"task": "induction", "model": "softmax", "train.epochs": 3, "train.stop_at_target": False},
                           INDUCTION_LRS),
             "paper": design({"task": "induction", "model": "softmax", "preset": "mamba", "train.stop_at_target": False},
                             PAPER_LRS, seq_len=256)},
    minutes={"cpu": (26, 149), "paper": 120}, order=120))
