"""Synthetic run sets as the store would hold them, for the verdict and cell tests: per
experiment, one that reproduces the finding, one that contradicts it, one whose failure is not
settled (inconclusive), and one where every model sits at chance (``CASES``)."""
import functools

import pandas as pd

from evalsuite import reproduce as rep
from evalsuite.records import RunRecord
from evalsuite.reproduce import frontier

LRS = (0.001, 0.003, 0.01)
BEST = 0.003
FLOORS = {"recall": None, "copy": 0.1, "listops": 0.13, "word_problem": 0.5, "induction": 1 / 15}


def rebudget(runs, name: str):
    """``runs`` (made at ``cell``'s 3 epochs, 4x at 12) at experiment ``name``'s own base budget
    (the least epochs of its CPU sweep) and 4x it, as its store holds them: a verdict reads no run
    below its experiment's base budget (``Experiment.own_runs``)."""
    f = rep_get(name).designs["cpu"].base_epochs / 3.0
    return [r.model_copy(update={"config": {**r.config, "train": {**r.config["train"],
                                                                  "epochs": r.config["train"]["epochs"] * f}}})
            for r in runs]


def rep_get(name: str):
    from evalsuite import reproduce as rep
    return rep.get(name)


def cell(model, acc, *, task="recall", d_model=64, seq_len=64, pairs=16, settled=True, long=None, gain=0.0, spread=0.0,
         fmap=None, loss=None, state=8000, analysis=None, seeds=(1, 2, 3), long_seeds=None, long_undertrained=False,
         seed_accs=None, epochs=3.0, gain16=None, **model_cfg):
    """Runs of one configuration as the store would hold them under the reproduction's method:
    three rates on seed 0 (the middle one best by validation), the reported seeds 1-3 at that
    rate (``acc`` -+ ``spread``, or ``seed_accs``), and, when below the ceiling (or ``long``), reruns
    at 4x the budget on ``long_seeds`` (default: every reported seed) at the chosen rate and half of
    it, the chosen rate gaining ``gain`` and validating best; ``gain16``: a 16x rung too, on the
    same seeds at the chosen rate, ``gain16`` above the 4x figure; ``epochs``: the base budget.
    ``settled=False``: one rate, one seed."""
    fmap = fmap or ("elu1" if model in ("linear", "hybrid") else None)
    floor = FLOORS[task] or 1 / pairs
    long = (acc < 0.95) if long is None else long
    config = {"task": {"name": task, "seq_len": seq_len, "num_kv_pairs": pairs},
              "model": {"name": model, "feature_map": fmap, "d_model": d_model, "n_layers": 2, **model_cfg}}

    base_epochs = epochs

    def one(a, lr, seed, epochs=base_epochs, val=None, **more):
        c = {**config, "train": {"lr": lr, "epochs": epochs}, "seed": seed}
        m = {"accuracy": a, "val_accuracy": a if val is None else val, "floor": floor, "floor_reader": "order",
             "context_chance": floor, "majority_rate": floor, "state_size": state,
             "loss": (2.0 if a < 0.5 else 0.01) if loss is None else loss, "steps": 100, "best_step": 100,
             **({"analysis": analysis} if analysis else {}), **more}
        return RunRecord(run_id=f"{task}{model}{d_model}{seq_len}{pairs}{model_cfg}{lr}{seed}{epochs}", config=c,
                         status="done", metrics=m)

    if not settled:
        return [one(acc, BEST, 0)]
    runs = [one(max(acc - 0.02, 0.0) if lr != BEST else acc, lr, 0) for lr in LRS]
    if seed_accs is None:
        offsets = [-1, 0, 1][:len(seeds)] if len(seeds) <= 3 else [-1, 0, 1] + [0] * (len(seeds) - 3)
        seed_accs = [min(1.0, max(0.0, acc + o * spread)) for o in offsets]
    by_seed = dict(zip(seeds, seed_accs))
    runs += [one(a, BEST, s) for s, a in by_seed.items()]
    if long:
        for s in (seeds if long_seeds is None else long_seeds):
            a = min(1.0, max(0.0, by_seed[s] + gain))
            runs.append(one(a, BEST, s, epochs=4 * base_epochs, val=a, undertrained=long_undertrained))
            runs.append(one(max(a - 0.05, 0.0), BEST / 2, s, epochs=4 * base_epochs, val=max(a - 0.05, 0.0)))
            if gain16 is not None:
                b = min(1.0, max(0.0, a + gain16))
                runs.append(one(b, BEST, s, epochs=16 * base_epochs, val=b))
    return runs


def sharp(entropy, ctx_entropies, mass=0.5):
    return {"retrieval_layer": {"layer": 0, "head": 0},
            "sharpness": [{"layer": 0, "head": 0, "entropy": entropy, "answer_mass": mass, "norm_entropy": entropy / 3,
                           "max_weight": mass, "topk_mass": mass}],
            "sharpness_by_context": [{"layer": 0, "head": 0, "context": 10.0 * (i + 1), "entropy": e,
                                      "norm_entropy": e / __import__("math").log(10.0 * (i + 1))}
                                     for i, e in enumerate(ctx_entropies)]}


NO_PROBES = pd.DataFrame()


CPU_PAIRS = (4, 8, 12, 16, 20, 24, 32, 40, 48, 64, 96, 128)


def probes(knees, ran_out=(), max_steps=4000, seeds=(0, 1, 2), grid=CPU_PAIRS):
    """Probe rows of memories that hold ``k`` pairs: every S up to k retrieved, then k of the S
    (accuracy k / S; 0: nothing retrieved); memories in ``ran_out`` used their whole step budget at
    every S that failed (they may still have been learning), the others stopped by the paper's rule."""
    rows = []
    for memory, k in knees.items():
        for s in grid:
            acc = 1.0 if s <= k else k / s
            steps = max_steps if (s > k and memory in ran_out) else 1000
            rows += [{"memory": memory, "pairs": s, "accuracy": acc, "trained": True, "setting": 1, "d_key": 16,
                      "variant": "schlag", "seed": seed, "steps": steps, "max_steps": max_steps} for seed in seeds]
    return pd.DataFrame(rows)


@functools.lru_cache(maxsize=None)
def _state_floats(config_json: str) -> int:
    """The state a configuration's model keeps (its ``state_size``), built as a run builds it."""
    import json

    from evalsuite.config import RunConfig

    config = RunConfig.from_dict(json.loads(config_json))
    T = max(t.seq_len for t in config.task.train_tasks)
    return config.model.build(config.task.vocab_size).state_size(T)


def bound(name, key, at, **kw):
    """Runs of experiment ``name``'s CPU cell ``key`` in the binding setting (``settings.bind_base``:
    one mixed-D configuration read at each D), stored as the reproduction stores them: ``at`` is
    D -> its accuracy (a D not listed reads the nearest listed one; a float: every D), with ``cell``'s
    rates, seeds and ladder (``kw``: spread, gain, settled, seed_accs, ...) moving every D alike;
    the state (``kw["state"]``, or ``kw["mixer_state"]`` without the convolution's window, where
    given) and the floors (1 / D) as a run records them."""
    import json

    from evalsuite.config import run_id
    from evalsuite.reproduce.settings import BIND_PAIRS

    design = rep_get(name).designs["cpu"]
    full = design._resolved[key]
    at = {D: at for D in BIND_PAIRS} if isinstance(at, (int, float)) else dict(at)
    near = {D: at[min(at, key=lambda x: (abs(x - D), x))] for D in BIND_PAIRS}
    kw.setdefault("long", min(near.values()) < 0.95)
    state = kw.pop("state", None) or _state_floats(json.dumps(full, sort_keys=True))
    if (mixer := kw.pop("mixer_state", None)) is not None:  # the mixers' floats: add the convolution's window
        from evalsuite.models.state import zoology_units

        state = mixer + (10 ** 6 - zoology_units(10 ** 6, full["model"]) / 4)
    primary = min(at.values())  # cell's rates, seeds and rungs move it (clamped to [0, 1]); every D moves alike
    out = []
    for r in cell(full["model"]["name"], primary, epochs=design.base_epochs, state=state, **kw):
        shift = r.metrics["accuracy"] - primary
        evals = {f"eval_{i}_accuracy": min(1.0, max(0.0, near[D] + shift)) for i, D in enumerate(BIND_PAIRS)}
        floors = {f"eval_{i}_floor": 1 / D for i, D in enumerate(BIND_PAIRS)}
        config = {**full, "train": {**full["train"], "lr": r.config["train"]["lr"], "epochs": r.config["train"]["epochs"]},
                  "seed": r.config["seed"]}
        out.append(r.model_copy(update={"config": config, "run_id": run_id(config), "metrics": {**r.metrics, **evals, **floors}}))
    return out


def linear_width(d8, d16, d32, d16_few, soft=1.0, soft_few=1.0, **kw):
    """The CPU scale (the binding setting): elu+1 at d_k = d_v = 8, 16, 32 read at D = 16 (``kw``
    moves the three), the middle one at D = 4 too (its own runs: ``d16_few``), softmax at D = 4 and 16."""
    name = "linear-width"
    return (bound(name, ("elu+1", 8, 16), {16: d8}, **kw) + bound(name, ("elu+1", 16, 16), {4: d16_few, 16: d16}, **kw)
            + bound(name, ("elu+1", 32, 16), {16: d32}, **kw) + bound(name, ("softmax", 16), {4: soft_few, 16: soft}))


def delta(d8, l8, d32, l32, soft=1.0, d16=None, l16=None, **kw):
    """The CPU scale (the binding setting): delta and elu+1 at d_k = d_v = 8, 16 (default: as at 32)
    and 32, read at D = 16 (``kw`` moves elu+1's cells), softmax the control."""
    name = "delta-vs-linear"
    d16, l16 = d32 if d16 is None else d16, l32 if l16 is None else l16
    runs = bound(name, "softmax", soft)
    for d, dv, lin in ((8, d8, l8), (16, d16, l16), (32, d32, l32)):
        runs += bound(name, ("delta", d), dv, long=True) + bound(name, ("elu+1", d), lin, **kw)
    return runs


def hybrid(soft, lin, sl, ls, larger=0.97, **kw):
    """The CPU scale (the binding setting): softmax, pure elu+1 at (8, 8) (``kw`` moves it), elu+1 at
    (32, 32) (``larger``: the failure's control) and the hybrids SL and LS, read at D = 16."""
    name = "hybrid-recovery"
    return (bound(name, "softmax", soft) + bound(name, "elu+1", lin, **kw) + bound(name, "elu+1 larger", larger)
            + bound(name, "SL", sl) + bound(name, "LS", ls))


def two(task, soft, lin, **kw):
    return cell("softmax", soft, task=task, **kw.get("s", {})) + cell("linear", lin, task=task, **kw.get("l", {}))


def mqar_softmax(a, b, **kw):
    return cell("softmax", a, pairs=4, **kw) + cell("softmax", b, seq_len=128, pairs=8, **kw)


SHARP, FLAT = sharp(0.3, [0.3, 0.3], 0.9), sharp(2.4, [2.0, 3.0], 0.2)

# name -> (reproduced, not reproduced, inconclusive because a failure is unsettled, everything at chance)
CASES = {
    "softmax-mqar": (mqar_softmax(1.0, 0.995), mqar_softmax(1.0, 0.7, long=True),
                     cell("softmax", 1.0, pairs=4) + cell("softmax", 0.7, seq_len=128, pairs=8, settled=False),
                     mqar_softmax(0.25, 0.125)),
    "linear-width": (linear_width(0.07, 0.3, 0.9, 0.99), linear_width(0.99, 0.99, 0.99, 0.99),
                     linear_width(0.07, 0.3, 0.9, 0.99, settled=False), linear_width(1 / 16, 1 / 16, 1 / 16, 0.25, 1 / 16, 0.25)),
    "delta-vs-linear": (delta(0.9, 0.1, 0.99, 0.5), delta(0.5, 0.5, 0.5, 0.5), delta(0.9, 0.1, 0.99, 0.5, settled=False),
                        delta(1 / 16, 1 / 16, 1 / 16, 1 / 16, 1 / 16)),
    "hybrid-recovery": (hybrid(1.0, 0.3, 0.98, 0.3), hybrid(1.0, 0.3, 0.5, 0.3), hybrid(1.0, 0.3, 0.98, 0.3, settled=False),
                        hybrid(1 / 16, 1 / 16, 1 / 16, 1 / 16)),
    "listops-order": (two("listops", 0.36, 0.16), two("listops", 0.30, 0.36, s={"long": True}),
                      two("listops", 0.36, 0.16, l={"settled": False}), two("listops", 0.13, 0.13)),
    "copy": tuple(rebudget(runs, "copy") for runs in (
        two("copy", 0.99, 0.98, l={"loss": 0.05}), two("copy", 0.99, 0.3), two("copy", 0.99, 0.3, l={"settled": False}),
        two("copy", 0.1, 0.1))),
    "sharpness": (two("recall", 1.0, 0.99, s={"pairs": 4, "analysis": SHARP}, l={"pairs": 4, "analysis": FLAT}),
                  two("recall", 1.0, 0.99, s={"pairs": 4, "analysis": sharp(2.0, [2.0, 2.0])}, l={"pairs": 4, "analysis": FLAT}),
                  two("recall", 1.0, 0.2, s={"pairs": 4, "analysis": SHARP}, l={"pairs": 4, "analysis": FLAT, "settled": False}),
                  two("recall", 0.25, 0.25, s={"pairs": 4, "analysis": SHARP}, l={"pairs": 4, "analysis": FLAT})),
}


def frontier_runs(unsettled=(), **families):
    """A frontier run set: each family's (accuracy, state) per axis value at CPU scale, from a world
    where the literature holds, with ``families`` replacing some of it (``unsettled``: families run
    at one rate and one seed only)."""
    world = {
        "softmax": [(1.0, 8000)],
        "delta": [(0.95, 600), (0.99, 1400), (0.99, 2200)],  # d' 4, 8, 16 at width 64
        "elu+1": [(0.5, 700), (0.7, 1500), (0.93, 2300)],
        "GLA": [(0.6, 600), (0.8, 1400)],  # the decayed families at d_k = d_v 8 and 16 only
        "Mamba-2": [(0.4, 600), (0.7, 1400)],
        "RetNet": [(0.3, 600), (0.6, 1400)],
        "RWKV-7": [(0.9, 600), (0.97, 1400), (0.99, 2200)],
        "DeltaProduct": [(0.97, 600), (0.99, 1400), (0.99, 2200)],
        "sliding window": [(0.2, 1024), (0.4, 2048), (0.6, 3072), (0.95, 4096)],  # shown short to 5x the best
        "Based": [(0.93, 1500), (0.97, 2600)],
        "Taylor linear": [(0.6, 1400), (0.8, 2500)],
        **families,
    }
    runs = []
    for fam in frontier.families("cpu"):
        assert len(world[fam.label]) == len(fam.values), fam.label
        for value, (acc, state) in zip(fam.values, world[fam.label]):
            runs += bound("frontier-delta", (fam.label, value), acc, mixer_state=state, long=acc < 0.95,
                          settled=fam.label not in unsettled)  # reproduce reruns below 0.95 at 4x
    return runs


CHANCE = 1 / 16
FRONTIER_AT_CHANCE = frontier_runs(**{f.label: [(CHANCE, 1000 * (i + 1)) for i in range(len(f.values))]
                                      for f in frontier.families("cpu")})
CASES.update({
    "frontier-delta": (frontier_runs(), frontier_runs(GLA=[(0.95, 500), (0.99, 1400)],
                                                      delta=[(0.6, 600), (0.99, 1400), (0.99, 2200)]),
                       frontier_runs(unsettled=("delta",), delta=[(0.5, 600), (0.6, 1400), (0.7, 2200)]), FRONTIER_AT_CHANCE),
    "frontier-swa": (frontier_runs(), frontier_runs(delta=[(0.6, 600), (0.99, 1400), (0.99, 2200)],
                                   **{"sliding window": [(0.95, 1024), (0.97, 2048), (0.98, 3072), (0.99, 4096)]}),
                     frontier_runs(**{"sliding window": [(0.3, 1024), (0.5, 2048), (0.7, 1300), (0.95, 1500)]}),
                     FRONTIER_AT_CHANCE),
    "frontier-based": (frontier_runs(), frontier_runs(**{"Taylor linear": [(0.99, 1400), (0.99, 2500)]}),
                       frontier_runs(unsettled=("Based", "Taylor linear"), Based=[(0.7, 1500), (0.85, 2600)]),
                       FRONTIER_AT_CHANCE),
})



def retask(runs, tag, task=None, model=None, metrics=None):
    """The same runs with task and model keys added (and new ids, so two settings never collide)."""
    out = []
    for r in runs:
        config = {**r.config, "task": {**r.config["task"], **(task or {})}, "model": {**r.config["model"], **(model or {})}}
        out.append(r.model_copy(update={"run_id": r.run_id + tag, "config": config,
                                        "metrics": {**r.metrics, **(metrics or {})}}))
    return out


def jrt(lin1, lin2, d1, d2, s1=1.0, s2=1.0, **kw):
    """The CPU scale (the binding setting): elu+1 and delta at (8, 8) and softmax, at one and two
    passes, read at D = 8."""
    return [r for label, one, two in (("elu+1", lin1, lin2), ("delta", d1, d2), ("softmax", s1, s2))
            for r in bound("jrt", (label, 1), one, **kw) + bound("jrt", (label, 2), two, **kw)]


def parity(neg, pos, lin, far=None, **kw):
    """Parity at the training length (T 64) and at the claimed length (T 256, the design's test
    segment): ``far`` = (neg, pos, lin) there (default: as at the training length)."""
    task = {"group": "Z2", "num_kv_pairs": None}
    far = far or (neg, pos, lin)

    def at(f):
        return {"eval_0_accuracy": f}
    return (retask(cell("delta", neg, task="word_problem", d_model=32, **kw.get("n", {})), "neg", task,
                   {"negative_eigenvalues": True}, metrics=at(far[0]))
            + retask(cell("delta", pos, task="word_problem", d_model=32, **kw.get("p", {})), "pos", task, metrics=at(far[1]))
            + retask(cell("linear", lin, task="word_problem", d_model=32, **kw.get("l", {})), "lin", task, metrics=at(far[2])))


def deltaproduct(n2neg, n1neg, n1pos, n2pos, **kw):
    """DeltaProduct on S3 at T 128: n_h 2 and 1 with eigenvalues in [-1, 1], then in [0, 1]
    (``kw``: cell options per setting, keys "a" to "d" in that order)."""
    task = {"group": "S3", "num_kv_pairs": None}

    def one(tag, acc, n, negative):
        model = {"householder": n, **({"negative_eigenvalues": True} if negative else {})}
        return retask(cell("deltaproduct", acc, task="word_problem", d_model=32, seq_len=128,
                           **{"epochs": 8.0, **kw.get(tag, {})}),
                      tag, task, model)
    return (one("a", n2neg, 2, True) + one("b", n1neg, 1, True) + one("c", n1pos, 1, False)
            + one("d", n2pos, 2, False))


SEGMENTS = [{"seq_len": 128}, {"seq_len": 256}, {"seq_len": 1024}]


def induction(soft, soft_long, delta_acc, delta_long, encodings=("sinusoidal", "rope", "xpos"), **kw):
    """Softmax with each encoding in ``encodings`` at ``soft`` on the training
    length and ``soft_long`` on the three test lengths (per encoding when a dict), plus the reported
    cells: softmax without positions and the delta rule."""
    def one(model, acc, long_accs, **more):
        metrics = {f"eval_{i}_accuracy": a for i, a in enumerate(long_accs)}
        return retask(cell(model, acc, task="induction", **more), "", {"eval_segments": SEGMENTS, "num_kv_pairs": None},
                      metrics=metrics)
    runs = []
    for pos in encodings:
        long = soft_long[pos] if isinstance(soft_long, dict) else soft_long
        runs += one("softmax", soft, long, positions=pos, conv_kernel=0, **{"long": True, **kw})  # 4x: far figure short
    return (runs + one("softmax", soft, [1.0, 1.0, 1.0], positions="none", conv_kernel=4)
            + one("softmax", soft, [1.0, 1.0, 0.5], positions="rope", conv_kernel=4)
            + one("delta", delta_acc, delta_long, positions="none", conv_kernel=4))


CASES.update({
    "jrt": (jrt(0.3, 0.9, 0.4, 0.95), jrt(0.3, 0.3, 0.4, 0.4), jrt(0.3, 0.9, 0.4, 0.95, settled=False),
            jrt(*[1 / 8] * 6)),  # D = 8: the floor 1 / 8
    "parity-negative-eigenvalues": (parity(1.0, 0.55, 0.5), parity(1.0, 0.99, 0.5), parity(1.0, 0.55, 0.5, p={"settled": False}),
                                    parity(0.5, 0.5, 0.5)),
    "deltaproduct-state-tracking": (deltaproduct(1.0, 0.6, 0.4, 0.45), deltaproduct(1.0, 0.6, 0.4, 0.99),
                                    deltaproduct(1.0, 0.6, 0.4, 0.45, b={"settled": False}),
                                    deltaproduct(0.5, 0.5, 0.5, 0.5)),
    "induction-extrapolation": (induction(1.0, [1.0, 0.3, 0.07], 1.0, [1.0, 1.0, 1.0]),
                                induction(1.0, [1.0, 1.0, 0.99], 1.0, [1.0, 1.0, 1.0]),
                                induction(1.0, [1.0, 0.3, 0.07], 1.0, [1.0, 1.0, 1.0], settled=False),
                                induction(1 / 15, [1 / 15] * 3, 1 / 15, [1 / 15] * 3)),
})




def judge(name, runs, pr=NO_PROBES):
    """``runs`` may be a ``(runs, probes)`` pair, as the probe-reading experiments' cases are."""
    if isinstance(runs, tuple):
        runs, pr = runs
    return rep.get(name).judge(runs, pr, "cpu")


def capacity_law(soft=1.0, moving=0.0, unsettled=(), **caps):
    """MQAR runs at the CPU scale's d' (8) where each map retrieves ``caps[key]`` pairs (accuracy
    min(1, cap / D); softmax ``soft`` at every D, or ``soft[D]``), from a world where the law holds
    (the additive maps d', delta 1.5 d', DPFP at q/k d' 2 d'), with ``caps`` replacing some of it
    (keys: elu, dpfp8, performer, delta, dpfp16, softmax, named for d' = 8: dpfp8 is the map whose
    d' is 8, dpfp16 the one at 16); ``moving``: the gain of every 4x rerun of a cell below the
    ceiling; ``unsettled``: labels run at one rate and one seed."""
    from evalsuite.reproduce.experiments import capacity_law as law

    d = law.SCALES["cpu"]["d_prime"]
    m = law.maps(d)
    world = {"elu+1": d, "DPFP nu=1, q/k d'/2": d, "Performer, d'/2 features": d, "delta": 1.5 * d,
             "DPFP nu=1, q/k d'": 2 * d, "softmax": None, **{law_label(k): v for k, v in caps.items()}}
    runs = []

    def add(label, D, layers=2):
        keys = m[label]
        opts = {k.split(".", 1)[1]: v for k, v in keys.items() if k != "model"}
        fmap = opts.pop("feature_map", None)
        cap = world[label]
        acc = (soft[D] if isinstance(soft, dict) else soft) if cap is None else (1 / D if cap == 0 else min(1.0, cap / D))
        return retask(cell(keys["model"], acc, seq_len=4 * D, pairs=D, fmap=fmap, gain=moving, settled=label not in unsettled,
                           **opts), f"L{layers}", model={"n_layers": layers})

    for label in m:
        for D in law.SCALES["cpu"]["pairs"]:
            runs += add(label, D)
    return rebudget(runs + [r for label in law.LAYERS for r in add(label, 2 * d, layers=1)], "capacity-law")


def law_label(key: str) -> str:
    return {"elu": "elu+1", "dpfp8": "DPFP nu=1, q/k d'/2", "performer": "Performer, d'/2 features", "delta": "delta",
            "dpfp16": "DPFP nu=1, q/k d'", "softmax": "softmax"}[key]


CASES["capacity-law"] = (capacity_law(), capacity_law(dpfp16=8), capacity_law(unsettled=("elu+1",)),
                         capacity_law(soft=1 / 8, **{k: 0 for k in ("elu", "dpfp8", "performer", "delta", "dpfp16")}))


def mad(recall=None, memo=None, unsettled=()):
    """MAD's CPU cut: every model at each level. ``recall`` / ``memo``: model -> accuracy on the
    recall levels / on memorisation (defaults: the published orderings hold); ``unsettled``:
    (model, level name) cells with one run."""
    from evalsuite.reproduce.experiments import mad as m
    recall = {"softmax": 1.0, "delta": 1.0, "elu+1": 0.5, "Mamba-2": 0.6, **(recall or {})}
    memo = {"softmax": 0.9, "elu+1": 0.9, "Mamba-2": 0.9, "delta": 0.5, **(memo or {})}
    runs = []
    for name in m.CPU["models"]:
        keys = m.MODELS[name]
        model = {k.split(".", 1)[1]: v for k, v in keys.items() if k != "model" and k != "model.feature_map"}
        for lv in m.CPU["levels"]:
            acc = (recall if lv["task_label"] == "in-context recall" else memo)[name]
            base = cell(keys["model"], acc, pairs=8, settled=(name, lv["name"]) not in unsettled)
            task = {"name": lv["task"], "num_kv_pairs": None, **{k.split(".", 1)[1]: v for k, v in lv["settings"].items()}}
            train = {"weight_decay": 0.1, **{k.split(".", 1)[1]: v for k, v in lv["train"].items() if k != "train.epochs"}}
            for r in retask(base, f"{name}{lv['name']}", task, model):
                runs.append(r.model_copy(update={"config": {**r.config, "train": {**r.config["train"], **train}}}))
    return rebudget(runs, "mad")


CASES["mad"] = (mad(), mad(recall={"Mamba-2": 1.0}), mad(unsettled=(("Mamba-2", "V64 T128"),)),
                mad(recall={k: 1 / 8 for k in ("softmax", "delta", "elu+1", "Mamba-2")},
                    memo={k: 1 / 8 for k in ("softmax", "delta", "elu+1", "Mamba-2")}))


def as_stored(runs, name: str):
    """``runs`` as a reproduction's store holds them: each run's configuration the whole canonical one
    of the design cell it matches (its rate, budget and seed kept), and its id that configuration's
    hash, so that ``Experiment.members`` (a setting of the design at a rung of the ladder) finds it.
    The hand-made records carry only the keys their cells read; a run that matches no cell stays as
    it is (a store's stranger)."""
    from evalsuite.config import run_id
    from evalsuite.reproduce.cells import matches

    design = rep_get(name).designs["cpu"]
    out = []
    for r in runs:
        spec = next((c for c in design.cells if matches(r, design.match(c))), None)
        if spec is None:
            out.append(r)
            continue
        full = design._resolved[spec.key]
        config = {**full, "train": {**full["train"], "lr": r.config["train"]["lr"], "epochs": r.config["train"]["epochs"]},
                  "seed": r.config["seed"]}
        out.append(r.model_copy(update={"config": config, "run_id": run_id(config)}))
    return out


def argmax_probes(trained=None, calibration=None, control=None, converged=True, control_seeds=(0, 1, 2)):
    """Probe rows of capacity-argmax: ``calibration(d)`` pairs at d_k = d_v = d, ``trained(label,
    d_k, d_v, seed)`` the trained probe's capacity on each reported seed of every configuration the
    experiment calls for (its last budget ``converged`` or not), and the squared-error control's
    elu+1 probes holding ``control(d_key)`` pairs. Defaults: a world where the argmax law holds
    (half the law's n*, both sides counting) and the control grows like d_k."""
    from evalsuite.analysis.argmax_probe import law_capacity
    from evalsuite.reproduce import argmax
    from evalsuite.reproduce.experiments import capacity_argmax as exp

    trained = trained or (lambda label, dk, dv, seed: 0.5 * law_capacity(dk, dv) * (1 + 0.02 * seed))
    calibration = calibration or (lambda d: 0.5 * law_capacity(d, d))
    control = control or (lambda d: float(d))
    rows = [{"probe": "argmax", "variant": "calibration", "d_key": d, "d_value": d, "seed": 0, "capacity": calibration(d),
             "converged": True, "call": argmax.key({"probe": "calibration", "d_key": d, "d_value": d, "seed": 0})}
            for d in exp.CALIBRATION]
    for c in exp.calls():
        if c.get("probe") != "argmax" or c["seed"] not in argmax.REPORTED:
            continue
        cap = trained(c["label"], c["d_key"], c["d_value"], c["seed"])
        rows += [{"probe": "argmax", "variant": "trained", "label": c["label"], "d_key": c["d_key"],
                  "d_value": c["d_value"], "seed": c["seed"], "pairs": n, "accuracy": 1.0 if n <= cap else cap / n,
                  "capacity": cap, "max_steps": steps, "converged": converged if steps == 4000 else False,
                  "call": argmax.key({**c, "lr": 0.01}), "trained": True, "setting": 1, "n_keys": c["n_keys"]}
                 for steps in (2000, 4000) for n in c["pairs"]]
    frames = [pd.DataFrame(rows)]
    for d in exp.CONTROL:
        k = control(d)
        grid = sorted({max(1, round(d * f)) for f in (0.5, 0.75, 1, 1.5, 2, 3, 4)})
        frames.append(probes({"linear/elu1": k}, grid=grid, seeds=control_seeds).assign(d_key=d))
    return pd.concat(frames, ignore_index=True)


def capacity_trained(world=None, probe=None, converged=True, soft=1.0, moving=0.0, unsettled=(), probe_seeds=(1, 2, 3),
                     curve=None):
    """Runs and probe rows of capacity-trained. ``world``: (model, d_k, d_v, layers) -> the pairs a
    trained configuration holds (accuracy 1 up to them, then 0.85 n / D; default 3 at d 8, 14 at d
    16, 10 at (8, 32)); ``probe``: (model, d_k, d_v) -> the probe's n* (default: the trained n* of
    the two-layer configuration, so the claim holds); softmax at ``soft`` at every D; ``moving``: the
    gain of every 4x rerun; ``unsettled``: configurations run at one rate and one seed; ``curve``:
    ``[(step, pairs retrieved at D = 32)]``, every run's learning curve there. Returns ``(runs, probes)``."""
    from evalsuite.analysis.argmax_probe import capacity
    from evalsuite.reproduce import argmax
    from evalsuite.reproduce.experiments import capacity_trained as ct

    held = {(m, dk, dv, L): {8: 3.0, 16: 14.0}.get(dk if dk == dv else 0, 10.0) for m, dk, dv, L in ct.CONFIGS}
    held.update(world or {})

    def accs(n):
        return [soft] * len(ct.PAIRS) if n is None else [1.0 if D <= n else 0.85 * n / D for D in ct.PAIRS]

    def runs_of(key, n, settled):
        history = [{"step": st, "val_accuracy": p / 32, "val_accuracy@num_kv_pairs=32,seq_len=128": p / 32}
                   for st, p in (curve or [])]
        return [r.model_copy(update={"history": history})
                for r in bound("capacity-trained", key, dict(zip(ct.PAIRS, accs(n))), gain=moving, settled=settled)]

    runs = []
    for m, dk, dv, L in ct.CONFIGS:
        runs += runs_of((m, dk, dv, L, ct.PAIRS[0]), held[m, dk, dv, L], (m, dk, dv, L) not in unsettled)
    runs += runs_of(("softmax", 0, 0, 2, ct.PAIRS[0]), None, True)
    caps = {(m, dk, dv): capacity(list(ct.PAIRS), accs(held[m, dk, dv, L])) for m, dk, dv, L in ct.CONFIGS if L == 2}
    caps.update(probe or {})
    rows = [{"probe": "argmax", "variant": "trained", "label": m, "d_key": dk, "d_value": dv, "seed": s,
             "capacity": cap, "converged": converged, "max_steps": 4000, "n_keys": ct.N_KEYS, "n_values": ct.N_VALUES,
             "pairs": n, "accuracy": 1.0 if n <= cap else 0.85 * cap / n,
             "call": argmax.key({"memory": m, "d_key": dk, "d_value": dv, "seed": s, "n_keys": ct.N_KEYS})}
            for (m, dk, dv), cap in caps.items() for s in probe_seeds for n in ct.PAIRS]
    return runs, pd.DataFrame(rows)


_FLOOR = {k: 0.0 for k in [("elu+1", 8, 8, 2), ("elu+1", 8, 8, 1), ("delta", 8, 8, 2), ("elu+1", 16, 16, 2),
                           ("delta", 16, 16, 2), ("elu+1", 8, 32, 2)]}
# (runs, probes) pairs: the probe holds 3 where the models hold about 15; 4x still moves every figure;
# every model (softmax too) at its floor
CASES["capacity-trained"] = (capacity_trained(), capacity_trained(probe={("elu+1", 16, 16): 3.0}),
                             capacity_trained(moving=0.2), capacity_trained(world=_FLOOR, soft=0.03))
