"""MAD (Poli et al. 2024, "Mechanistic design and scaling of hybrid architectures"; athms/mad-lab):
a task's MAD score is the mean over its difficulty levels of the best test accuracy over a
learning-rate x weight-decay grid. Published (FINDINGS 18; six tasks, width 128): Transformer 74.5,
DeltaNet 71.8, Mamba 69.3, GLA 60.0 overall; in-context recall DeltaNet 100 against GLA 80.8;
memorisation DeltaNet 52.8 against Mamba 89.5. The orderings judged here: softmax above the
fixed-state mixers (elu+1, GLA, the Mamba-2 form) on in-context recall, and the Mamba-2 form
above the delta rule on memorisation.

The protocol (mad-lab ``configs/tasks/*.yml``, ``mad/configs.py``): each task at a baseline and at
levels that change one variable at a time (in-context recall: vocabulary 16 -> 32 / 64 / 128, T 128
-> 256 / 512 / 1,024, 12,800 training examples -> 6,400 ... 800); lr {1e-4, 5e-4, 1e-3} x weight
decay {0, 0.1}; AdamW, cosine, 200 epochs of batch 128; two blocks of (mixer, SwiGLU) at width 128.

CPU scale (cut before the seeds, to fit about 90 min on 2 workers): in-context recall at one of
MAD's levels (vocabulary 64, T 128), memorisation at one (vocabulary 1,024; T 32, 256 training
examples, 200 epochs) and compression at its baseline (vocabulary 16, T 32, 12,800 examples); each
ordering is judged at its task's hardest level here, the score is the mean over the levels;
softmax, elu+1, the delta rule and the Mamba-2 form (GLA runs at paper scale only: its per-channel
gate trained at 4.3 steps/s at T 128 on this CPU since its default chunk became 4, beside the delta
rule's 3.6, and its recall cell with its 4x reruns would add about 30 to 40 min on 2 workers); the
CPU rates at weight decay 0.1 only; the default backbone at width 64 (two layers, a short
convolution, no MLP); recall and compression train 4 epochs of 12,800 (800 steps). The escalation
settles only the cells the verdict reads (``judged``: 4x on every seed where below the
ceiling); the score's other cells stand at the base budget, and the report says so. So the score
printed is a different number from the published one, and is labelled so.

Memorisation's test accuracy is bounded by coverage: 256 training sequences write 4,096 key
occurrences, and a test key that none of them held cannot be recalled by any model, so the most
any model gets is about 1 - exp(-4096 / (V/2)): 0.9997 at V 1,024, 0.865 at V 4,096, 0.632 at
V 8,192 (the delta rule at width 64 measured 0.860 and 0.638 there within 200 steps; at V 1,024
every model of the smoke run was at 0.985-1.0 after 16 steps at lr 3e-3). About the same bound holds in
mad-lab's generator and so in its published means. The CPU cut judges memorisation at V 1,024,
where the bound is not what is read; when the Mamba-2 form and the delta rule both reach the
ceiling there, the level does not test memorisation capacity at this width and the verdict says
"not tested" (not "not reproduced"), unless the recall clause is contradicted. Paper scale: in-context, noisy,
memorisation and compression levels as MAD's configs, selective copying's baseline, the full
grid, width 128, 200 epochs; fuzzy recall (``tasks/fuzzy_mad.py``, mad-lab's generator) at its
baseline and levels, so the paper-scale score covers MAD's six tasks (the CPU cut has no fuzzy or
noisy recall and no selective copying). Deviations: at paper scale fuzzy recall's test keys are
drawn as its training keys are (1 to 3 tokens; MAD tests every key at 3, which the task's
``longest_keys`` gives); at both scales compression is
read by our autoencoder readout (``tasks/compression.py`` names how it differs from MAD's); our wsd schedule and early stop at 0.99
validation instead of cosine for 200 epochs; the rate is chosen by validation on seed 0 (MAD
takes the best test accuracy), then three seeds at it.
"""
from __future__ import annotations

import statistics

from evalsuite.reproduce.cells import Cell
from evalsuite.reproduce.experiment import CellSpec, Design, Experiment, register
from evalsuite.reproduce.settings import CPU_LRS
from evalsuite.reproduce.verdict import above, runnable, unsettled

MODELS = {
    "softmax": {"model": "softmax"},
    "elu+1": {"model": "linear", "model.feature_map": "elu1"},
    "delta": {"model": "delta"},
    "GLA": {"model": "gla", "model.gate": "vector", "model.output_gate": True},
    "Mamba-2": {"model": "gla", "model.gate": "scalar", "model.step_size": True, "model.skip": True,
                "model.output_gate": True},
}
FIXED_STATE = ("elu+1", "GLA", "Mamba-2")  # judged below softmax on recall (DeltaNet ties softmax there)
PUBLISHED = "Transformer 74.5, DeltaNet 71.8, Mamba 69.3, GLA 60.0 (six tasks, the full grid, width 128)"
MAD_LRS = [1e-4, 5e-4, 1e-3]


def level(task_label: str, task: str, name: str, settings: dict, train: dict | None = None) -> dict:
    return {"task_label": task_label, "task": task, "name": name, "settings": settings, "train": train or {}}


def _recall(name, vocab=16, T=128, n=12800, noise=0.0, label="in-context recall"):
    return level(label, "recall_mad", name, {"task.vocab_size": vocab, "task.seq_len": T, "task.noise_fraction": noise},
                 {"train.num_train": n})


def _fuzzy(name, vocab=16, T=128, n=12800):
    return level("fuzzy recall", "fuzzy_recall_mad", name, {"task.vocab_size": vocab, "task.seq_len": T},
                 {"train.num_train": n})


def _compress(name, vocab=16, T=32, n=12800):
    return level("compression", "compression", name, {"task.vocab_size": vocab, "task.seq_len": T},
                 {"train.num_train": n})


def _memorize(name, vocab=256):
    return level("memorization", "memorize", name, {"task.vocab_size": vocab, "task.seq_len": 32},
                 {"train.num_train": 256, "train.epochs": 200})


CPU_LEVELS = [_recall("V64 T128", vocab=64), _memorize("V1024", 1024), _compress("V16 T32")]
PAPER_LEVELS = (
    [_recall("V16 T128")] + [_recall(f"V{v} T128", vocab=v) for v in (32, 64, 128)]
    + [_recall(f"V16 T{T}", T=T) for T in (256, 512, 1024)] + [_recall(f"V16 n{n}", n=n) for n in (6400, 3200, 1600, 800)]
    # noisy: MAD's vocabulary counts its 16 noise tokens (32 = 16 + 16); ours keeps them apart (noise_vocab 16)
    + [_recall("noisy V16 T128 f0.2", noise=0.2, label="noisy recall")]
    + [_recall(f"noisy V{v - 16} T128 f0.2", vocab=v - 16, noise=0.2, label="noisy recall") for v in (48, 80, 144)]
    + [_recall(f"noisy V16 T{T} f0.2", T=T, noise=0.2, label="noisy recall") for T in (256, 512, 1024)]
    + [_recall(f"noisy V16 f{f}", noise=f, label="noisy recall") for f in (0.4, 0.6, 0.8)]
    + [_fuzzy("V16 T128")] + [_fuzzy(f"V{v} T128", vocab=v) for v in (32, 64, 128)]
    + [_fuzzy(f"V16 T{T}", T=T) for T in (256, 512, 1024)] + [_fuzzy(f"V16 n{n}", n=n) for n in (6400, 3200, 1600, 800)]
    + [_memorize("V256")] + [_memorize(f"V{v}", v) for v in (512, 1024, 2048, 4096, 8192)]
    + [_compress("V16 T32")] + [_compress(f"V{v} T32", vocab=v) for v in (32, 64, 128)]
    + [_compress(f"V16 T{T}", T=T) for T in (64, 128, 256)] + [_compress(f"V16 n{n}", n=n) for n in (6400, 3200, 1600, 800)]
    + [level("selective copying", "selective_copy", "V16 T256 k16",
             {"task.vocab_size": 16, "task.seq_len": 256, "task.num_tokens": 16}, {"train.num_train": 12800})])


def label(model: str, lv: dict, wd: float | None = None) -> str:
    return f"{model} on {lv['task_label']} {lv['name']}" + ("" if wd is None else f", wd {wd}")


def best(cells, m: str, lv: dict, p) -> Cell:
    """The weight decay MAD would keep: the better validation figure (one decay at CPU scale)."""
    return max((cells[m, lv["task_label"], lv["name"], wd] for wd in p["weight_decays"]), key=lambda c: c.val)


def scores(cells, p) -> dict[str, dict[str, float]]:
    """model -> task label -> mean accuracy over its levels (the CPU cut's MAD score), and "mean"."""
    out = {}
    for m in p["models"]:
        per_task: dict[str, list[float]] = {}
        for lv in p["levels"]:
            per_task.setdefault(lv["task_label"], []).append(best(cells, m, lv, p).acc)
        out[m] = {t: statistics.fmean(v) for t, v in per_task.items()}
        out[m]["mean"] = statistics.fmean(out[m][t] for t in per_task)
    return out


def _all(values) -> bool | None:
    values = list(values)
    return True if all(v is True for v in values) else False if any(v is False for v in values) else None


def judged(p) -> list[tuple[str, str, str]]:
    """The (model, task label, level name) pairs the verdict rests on, which the escalation settles
    (4x on every seed where below the ceiling): the control (softmax on the first recall level),
    softmax and the fixed-state mixers on the hardest recall level, the Mamba-2 form and the delta
    rule on the hardest memorisation level. The other cells feed only the score, at the base budget."""
    recall = [lv for lv in p["levels"] if lv["task_label"] == "in-context recall"]
    memo = [lv for lv in p["levels"] if lv["task_label"] == "memorization"]
    fixed = [m for m in FIXED_STATE if m in p["models"]]
    pairs = [("softmax", recall[0])] + [(m, recall[-1]) for m in ["softmax", *fixed]]
    pairs += [(m, memo[-1]) for m in ("Mamba-2", "delta")]
    return list(dict.fromkeys((m, lv["task_label"], lv["name"]) for m, lv in pairs))


def verdict(cells, probes, p, judge):
    cs = list(cells.values())
    if (v := judge.missing(cs)):
        return v
    keep = set(judged(p))
    read = [c for (m, t, n, _), c in cells.items() if (m, t, n) in keep]
    figures = [c.figure() for c in cs]
    recall = [lv for lv in p["levels"] if lv["task_label"] == "in-context recall"]
    memo = [lv for lv in p["levels"] if lv["task_label"] == "memorization"]
    control = best(cells, "softmax", recall[0], p)
    if (v := judge.control(control, figures)):
        return v
    s = scores(cells, p)
    others = [c for c in cs if all(c is not d for d in read)]  # the same Cell objects: identity is membership
    for m, per in s.items():
        figures.append(f"MAD score, {p['scale_note']} ({m}): " + ", ".join(f"{t} {100 * a:.1f}" for t, a in per.items()))
    if others:
        figures.append(f"the score's other {len(others)} cells, which no check reads, stand at the base budget (their "
                       "rates and seeds, no 4x reruns), so a score that reads them is not settled")
    figures.append(f"published MAD scores, a different number (FINDINGS 18): {PUBLISHED}; in-context recall DeltaNet "
                   f"100 vs GLA 80.8; memorisation DeltaNet 52.8 vs Mamba 89.5")
    hardest = recall[-1]
    fixed = [m for m in FIXED_STATE if m in p["models"]]
    recall_clause = f"softmax above {', '.join(fixed)} on in-context recall {hardest['name']}"
    memo_clause = f"the Mamba-2 form above the delta rule on memorisation {memo[-1]['name']}"
    mamba, delta = best(cells, "Mamba-2", memo[-1], p), best(cells, "delta", memo[-1], p)
    checks = {recall_clause: _all(above(best(cells, "softmax", hardest, p), best(cells, m, hardest, p)) for m in fixed),
              memo_clause: above(mamba, delta)}
    untested = ""
    if mamba.stable and delta.stable and mamba.at_ceiling and delta.at_ceiling:
        # both memorise the whole map: the level is within this width's capacity, so the published gap
        # (Mamba 89.5, DeltaNet 52.8) has nothing to show in; saying "not reproduced" would claim more
        checks[memo_clause] = None
        untested = (f"the memorisation ordering: the Mamba-2 form ({mamba.acc:.3f}) and the delta rule "
                    f"({delta.acc:.3f}) both memorise the whole map at {memo[-1]['name']}, so this level does not "
                    f"test memorisation capacity at width {p['d_model']}")
        if checks[recall_clause] is False:  # a contradicted clause decides the verdict either way
            untested = ""
    return judge.decide(figures, checks, unsettled(read), can_run=runnable(read), untested=untested)


CPU = {"levels": CPU_LEVELS, "weight_decays": [0.1], "d_model": 64, "models": ["softmax", "elu+1", "delta", "Mamba-2"],
       "scale_note": "CPU cut (1 recall, 1 memorisation, 1 compression level; weight decay 0.1 only)"}
PAPER = {"levels": PAPER_LEVELS, "weight_decays": [0.0, 0.1], "d_model": 128, "models": list(MODELS),
         "scale_note": "MAD's six tasks"}


def design(p: dict, rates, recall_epochs: float) -> Design:
    """Every model at every level and weight decay; the cells a clause reads (``judged``) are settled
    (the control: softmax on the first recall level), the score's others are reported."""
    keep = set(judged(p))
    first_recall = next(lv for lv in p["levels"] if lv["task_label"] == "in-context recall")
    cells = []
    for m in p["models"]:
        for lv in p["levels"]:
            train = {k: v for k, v in lv["train"].items() if k != "train.epochs"}
            for wd in p["weight_decays"]:
                control = (m, lv["name"], lv["task_label"]) == ("softmax", first_recall["name"], first_recall["task_label"])
                role = "control" if control else "test" if (m, lv["task_label"], lv["name"]) in keep else "reported"
                cells.append(CellSpec((m, lv["task_label"], lv["name"], wd),
                                      label(m, lv, wd if len(p["weight_decays"]) > 1 else None),
                                      {"task": lv["task"], **MODELS[m], **lv["settings"], **train,
                                       "model.d_model": p["d_model"], "train.weight_decay": wd},
                                      role=role, epochs=lv["train"].get("train.epochs", recall_epochs),
                                      reads="the positive control" if control else "an ordering" if role == "test" else ""))
    return Design({"task": "memorize", "model": "softmax", "preset": "default"}, cells, rates, p)


register(Experiment(
    "mad", "MAD's published orderings: softmax above the fixed-state mixers on in-context recall; the Mamba-2 form "
    "above the delta rule on memorisation (the scores are shown beside the published ones, labelled as a different "
    "number).", "Poli et al. 2024, MAD (athms/mad-lab)",
    # cpu minutes: projected; docs/guide/designs.md has the per-step times and the cut
    verdict, designs={"cpu": design(CPU, CPU_LRS, 4), "paper": design(PAPER, MAD_LRS, 200)},
    minutes={"cpu": (23, 86), "paper": 3600}, order=116))
