"""Each verdict on synthetic run sets: one that reproduces the finding, one that contradicts it,
one whose failure is not settled (inconclusive), and one where every model sits at chance
(inconclusive for every verdict). Plus the rules a cell applies (learned, settled, escalation)."""
import pandas as pd
import pytest
from click.testing import CliRunner

from evalsuite import frontier
from evalsuite import reproduce as rep
from evalsuite import sweep as sweeps
from evalsuite.cli import main
from evalsuite.reproduce_rules import Cell
from evalsuite.records import RunRecord, Status

LRS = (0.001, 0.003, 0.01)
BEST = 0.003
FLOORS = {"recall": None, "copy": 0.1, "listops": 0.13, "word_problem": 0.5, "induction": 1 / 15}


def cell(model, acc, *, task="recall", d_model=64, seq_len=64, pairs=16, settled=True, long=None, gain=0.0, spread=0.0,
         fmap=None, loss=None, state=8000, analysis=None, **model_cfg):
    """Runs of one configuration as the store would hold them: three rates on seed 0 (the middle
    one best by validation), a second seed at the best rate, and (when it did not learn, or when
    ``long``) a rerun at 4x the budget that gains ``gain``. ``settled=False``: one rate, one seed."""
    fmap = fmap or ("elu1" if model in ("linear", "hybrid") else None)
    floor = FLOORS[task] or 1 / pairs
    learned = acc >= floor + 0.5 * (1 - floor)
    long = (not learned) if long is None else long
    config = {"task": {"name": task, "seq_len": seq_len, "num_kv_pairs": pairs},
              "model": {"name": model, "feature_map": fmap, "d_model": d_model, "n_layers": 2, **model_cfg}}

    def one(a, lr, seed, epochs=3.0):
        c = {**config, "train": {"lr": lr, "epochs": epochs}, "seed": seed}
        m = {"accuracy": a, "val_accuracy": a, "context_chance": floor, "majority_rate": floor, "state_size": state,
             "loss": (2.0 if a < 0.5 else 0.01) if loss is None else loss, "steps": 100, "best_step": 100,
             **({"analysis": analysis} if analysis else {})}
        return RunRecord(run_id=f"{task}{model}{d_model}{seq_len}{pairs}{model_cfg}{lr}{seed}{epochs}", config=c,
                         status="done", metrics=m)

    if not settled:
        return [one(acc, BEST, 0)]
    runs = [one(max(acc - 0.02, 0.0) if lr != BEST else acc, lr, 0) for lr in LRS]
    runs.append(one(acc + 2 * spread, BEST, 1))
    if long:
        runs.append(one(acc + gain, BEST, 0, epochs=12.0))
    return runs


def sharp(entropy, ctx_entropies, mass=0.5):
    return {"retrieval_layer": {"layer": 0, "head": 0},
            "sharpness": [{"layer": 0, "head": 0, "entropy": entropy, "answer_mass": mass}],
            "sharpness_by_context": [{"layer": 0, "head": 0, "context": 10.0 * (i + 1), "entropy": e}
                                     for i, e in enumerate(ctx_entropies)]}


NO_PROBES = pd.DataFrame()


def probes(knees, ran_out=(), max_steps=4000, seeds=(0, 1)):
    """Probe rows with the given knees; memories in ``ran_out`` used their whole step budget at
    every S that failed (they may still have been learning), the others stopped by the paper's rule."""
    rows = []
    for memory, k in knees.items():
        for s in (4, 8, 12, 16, 24, 32, 48, 64):
            acc = 1.0 if s <= k else 1 / s
            steps = max_steps if (s > k and memory in ran_out) else 1000
            rows += [{"memory": memory, "pairs": s, "accuracy": acc, "trained": True, "setting": 1, "d_key": 16,
                      "variant": "schlag", "seed": seed, "steps": steps, "max_steps": max_steps} for seed in seeds]
    return pd.DataFrame(rows)


def linear_width(d32, d64, d128, d64_few, soft=1.0, soft_few=1.0, **kw):
    return (cell("linear", d32, d_model=32, **kw) + cell("linear", d64, **kw) + cell("linear", d128, d_model=128, **kw)
            + cell("linear", d64_few, pairs=4) + cell("softmax", soft) + cell("softmax", soft_few, pairs=4))


def delta(d32, l32, d64, l64, soft=1.0, **kw):
    return (cell("delta", d32, d_model=32, state=7900, long=True) + cell("linear", l32, d_model=32, state=8000, **kw)
            + cell("delta", d64, state=7900, long=True) + cell("linear", l64, state=8000, **kw)
            + cell("softmax", soft, state=16000))


def hybrid(soft, lin, sl, ls, **kw):
    return (cell("softmax", soft) + cell("linear", lin, **kw) + cell("hybrid", sl, pattern="SL")
            + cell("hybrid", ls, pattern="LS"))


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
    "hybrid-recovery": (hybrid(1.0, 0.1, 0.98, 0.1), hybrid(1.0, 0.1, 0.3, 0.1), hybrid(1.0, 0.1, 0.98, 0.1, settled=False),
                        hybrid(1 / 16, 1 / 16, 1 / 16, 1 / 16)),
    "listops-order": (two("listops", 0.36, 0.16), two("listops", 0.30, 0.36, s={"long": True}),
                      two("listops", 0.36, 0.16, l={"settled": False}), two("listops", 0.13, 0.13)),
    "copy": (two("copy", 0.99, 0.98, l={"loss": 0.05}), two("copy", 0.99, 0.3), two("copy", 0.99, 0.3, l={"settled": False}),
             two("copy", 0.1, 0.1)),
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
        "delta": [(0.95, 600), (0.99, 2200)],
        "elu+1": [(0.5, 700), (0.93, 2300)],
        "GLA": [(0.6, 600), (0.92, 2200)],
        "Mamba-2 gate": [(0.4, 600), (0.91, 2200)],
        "RetNet": [(0.3, 600), (0.85, 2200)],
        "sliding window": [(0.3, 1024), (0.5, 2048), (0.95, 4096)],
        "Based": [(0.93, 1500), (0.97, 2600)],
        "Taylor linear": [(0.6, 1400), (0.8, 2500)],
        **families,
    }
    runs = []
    for fam in frontier.families("cpu"):
        for value, (acc, state) in zip(fam.values, world[fam.label]):
            opts = {k.split(".", 1)[1]: v for k, v in {**fam.fixed, fam.axis: value}.items() if k != "model"}
            d_model = opts.pop("d_model")
            fmap = opts.pop("feature_map", None)
            runs += cell(fam.fixed["model"], acc, d_model=d_model, fmap=fmap, state=state, long=acc < 0.95,
                         settled=fam.label not in unsettled, **opts)  # reproduce reruns below 0.95 at 4x
    return runs


CHANCE = 1 / 16
FRONTIER_AT_CHANCE = frontier_runs(**{f.label: [(CHANCE, 1000 * (i + 1)) for i in range(len(f.values))]
                                      for f in frontier.families("cpu")})
CASES.update({
    "frontier-delta": (frontier_runs(), frontier_runs(GLA=[(0.95, 500), (0.99, 2200)]),
                       frontier_runs(unsettled=("delta",), delta=[(0.5, 600), (0.7, 2200)]), FRONTIER_AT_CHANCE),
    "frontier-swa": (frontier_runs(), frontier_runs(**{"sliding window": [(0.95, 1024), (0.97, 2048), (0.99, 4096)]}),
                     frontier_runs(**{"sliding window": [(0.3, 1024), (0.5, 2048), (0.95, 1500)]}), FRONTIER_AT_CHANCE),
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
    def two_settings(model, width, one, two):
        return (cell(model, one, d_model=width, seq_len=96, **kw)
                + retask(cell(model, two, d_model=width, seq_len=96, **kw), "P2", task={"num_passes": 2}))
    return two_settings("linear", 16, lin1, lin2) + two_settings("delta", 16, d1, d2) + two_settings("softmax", 32, s1, s2)


def parity(neg, pos, lin, **kw):
    task = {"group": "Z2", "num_kv_pairs": None}
    return (retask(cell("delta", neg, task="word_problem", d_model=32, **kw.get("n", {})), "neg", task,
                   {"negative_eigenvalues": True})
            + retask(cell("delta", pos, task="word_problem", d_model=32, **kw.get("p", {})), "pos", task)
            + retask(cell("linear", lin, task="word_problem", d_model=32, **kw.get("l", {})), "lin", task))


SEGMENTS = [{"seq_len": 128}, {"seq_len": 256}, {"seq_len": 1024}]


def induction(soft, soft_long, delta_acc, delta_long, **kw):
    def one(model, acc, long_accs, **more):
        metrics = {f"eval_{i}_accuracy": a for i, a in enumerate(long_accs)}
        return retask(cell(model, acc, task="induction", **more), "", {"eval_segments": SEGMENTS, "num_kv_pairs": None},
                      metrics=metrics)
    return one("softmax", soft, soft_long, **kw) + one("delta", delta_acc, delta_long)


CASES.update({
    "jrt": (jrt(0.3, 0.9, 0.4, 0.95), jrt(0.3, 0.3, 0.4, 0.4), jrt(0.3, 0.9, 0.4, 0.95, settled=False),
            jrt(*[1 / 16] * 6)),
    "parity-negative-eigenvalues": (parity(1.0, 0.55, 0.5), parity(1.0, 0.99, 0.5), parity(1.0, 0.55, 0.5, p={"settled": False}),
                                    parity(0.5, 0.5, 0.5)),
    "induction-extrapolation": (induction(1.0, [1.0, 0.3, 0.07], 1.0, [1.0, 1.0, 1.0]),
                                induction(1.0, [1.0, 1.0, 0.99], 1.0, [1.0, 1.0, 1.0]),
                                induction(1.0, [1.0, 0.3, 0.07], 1.0, [1.0, 1.0, 1.0], settled=False),
                                induction(1 / 15, [1 / 15] * 3, 1 / 15, [1 / 15] * 3)),
})


def test_jrt_needs_one_pass_to_fall_short():
    """Where one pass already reaches softmax there is nothing for a second pass to raise."""
    v = judge("jrt", jrt(0.99, 0.99, 0.99, 0.99))
    assert v.status == rep.NOT_REPRODUCED and "one pass falls short" in v.why


def test_parity_without_the_positive_control_is_inconclusive():
    v = judge("parity-negative-eigenvalues", parity(0.55, 0.5, 0.5))
    assert v.status == rep.INCONCLUSIVE and "positive control" in v.why
    figures = " ".join(judge("parity-negative-eigenvalues", parity(1.0, 0.55, 0.5)).figures)
    assert "Grazzi" in figures


def test_induction_reports_every_test_length():
    v = judge("induction-extrapolation", induction(1.0, [1.0, 0.3, 0.07], 1.0, [1.0, 0.9, 0.8]))
    text = " ".join(v.figures)
    assert "T=1024 0.070" in text and "T=1024 0.800" in text and "Deviations" in text

def test_pareto_and_smallest_state():
    rows = [{"state": 100, "accuracy": 0.5}, {"state": 200, "accuracy": 0.4}, {"state": 300, "accuracy": 0.9},
            {"state": 300, "accuracy": 0.8}, {"state": 50, "accuracy": 0.1}]
    assert [(r["state"], r["accuracy"]) for r in frontier.pareto(rows)] == [(50, 0.1), (100, 0.5), (300, 0.9)]
    fam = frontier.cells(frontier_runs(), "cpu", {"task.seq_len": 64, "task.num_kv_pairs": 16})
    assert frontier.smallest_state(fam["delta"]) == 600 and frontier.smallest_state(fam["RetNet"]) is None
    assert frontier.never_reaches(fam["RetNet"]) and not frontier.never_reaches(fam["GLA"])


def judge(name, runs, pr=NO_PROBES):
    return rep.EXPERIMENTS[name].judge(runs, pr, "cpu")


@pytest.mark.parametrize("name", CASES)
def test_verdict_returns_every_outcome(name):
    good, bad, unsettled, chance = CASES[name]
    v = judge(name, good)
    assert v.status == rep.REPRODUCED, (v.figures, v.why)
    assert v.figures and v.finding
    w = judge(name, bad)
    assert w.status == rep.NOT_REPRODUCED, (w.figures, w.why)
    assert w.why
    u = judge(name, unsettled)
    assert u.status == rep.INCONCLUSIVE, (u.figures, u.why)
    assert u.why
    assert judge(name, []).status == rep.INCONCLUSIVE  # nothing measured, nothing claimed


@pytest.mark.parametrize("name", CASES)
def test_everything_at_chance_is_inconclusive(name):
    good, bad, unsettled, chance = CASES[name]
    v = judge(name, chance)
    assert v.status == rep.INCONCLUSIVE, (v.figures, v.why)


def test_capacity_verdict_every_outcome():
    good = probes({"linear/elu1": 12, "linear/dpfp(nu=1)": 24, "linear/dpfp(nu=2)": 48, "linear/dpfp(nu=3)": 64, "softmax": 64})
    bad = probes({"linear/elu1": 4, "linear/dpfp(nu=1)": 24, "linear/dpfp(nu=2)": 16, "linear/dpfp(nu=3)": 8, "softmax": 32})
    assert judge("capacity-knee", [], good).status == rep.REPRODUCED
    v = judge("capacity-knee", [], bad)
    assert v.status == rep.NOT_REPRODUCED and "DPFP" in v.why and "softmax" in v.why
    assert judge("capacity-knee", [], NO_PROBES).status == rep.INCONCLUSIVE
    at_chance = probes({m: 0 for m in ("linear/elu1", "linear/dpfp(nu=1)", "linear/dpfp(nu=2)", "linear/dpfp(nu=3)", "softmax")})
    assert judge("capacity-knee", [], at_chance).status == rep.INCONCLUSIVE
    other_dkey = good.assign(d_key=64)  # probes of another d_key are not pooled in
    assert judge("capacity-knee", [], other_dkey).status == rep.INCONCLUSIVE
    tied = good.assign(variant="tied")  # nor rows of the earlier probe
    assert judge("capacity-knee", [], tied).status == rep.INCONCLUSIVE
    # nu=1 no further out than elu+1: contradicted when settled, undecided while its failing S ran out of steps
    flat = {"linear/elu1": 12, "linear/dpfp(nu=1)": 12, "linear/dpfp(nu=2)": 48, "linear/dpfp(nu=3)": 64, "softmax": 64}
    assert judge("capacity-knee", [], probes(flat)).status == rep.NOT_REPRODUCED
    open_ = judge("capacity-knee", [], probes(flat, ran_out=("linear/dpfp(nu=1)",)))
    assert open_.status == rep.INCONCLUSIVE and "4x the steps" in open_.why
    longer = probes({"linear/dpfp(nu=1)": 24}, ran_out=("linear/dpfp(nu=1)",), max_steps=16000)
    settled = pd.concat([probes(flat, ran_out=("linear/dpfp(nu=1)",)), longer])  # the 4x probe decides
    assert judge("capacity-knee", [], settled).status == rep.REPRODUCED
    one_seed = judge("capacity-knee", [], probes(flat, seeds=(0,)))  # a failure on one seed is not settled
    assert one_seed.status == rep.INCONCLUSIVE and "a second seed" in one_seed.why


def test_delta_verdict_tests_the_small_width_clause():
    wider_gap = delta(0.6, 0.1, 0.99, 0.1)  # delta wins, but by more at the larger width
    v = judge("delta-vs-linear", wider_gap)
    assert v.status == rep.NOT_REPRODUCED and "gap at d_model 32" in v.why


def test_linear_width_drop_needs_the_small_d_learned():
    # 1/4 vs 1/16 is a "drop" between two models at chance: it must not count
    runs = linear_width(0.07, 0.3, 0.9, 0.25)
    v = judge("linear-width", runs)
    assert "drops from D=4 to D=16: undecided" in v.figures[-1]


def test_failed_runs_do_not_count():
    good = CASES["softmax-mqar"][0]
    failed = [r.model_copy(update=dict(status=Status.FAILED, metrics={})) for r in good]
    assert judge("softmax-mqar", failed).status == rep.INCONCLUSIVE


def test_selection_is_by_validation_not_test():
    runs = cell("softmax", 0.9, pairs=4)
    runs[0].metrics["accuracy"] = 1.0  # the test-best run has the worst validation accuracy
    runs[0].metrics["val_accuracy"] = 0.1
    c = Cell.of(runs, "x", model__name="softmax")
    assert c.best_lr == BEST


def test_escalation_order_edge_then_seed_then_4x():
    runs = cell("linear", 0.07, settled=False)
    c = Cell.of(runs, "x", model__name="linear")
    lrs = [r["train"]["lr"] for r in c.next_configs()]
    assert lrs and all(lr != BEST for lr in lrs)  # one rate: extend the grid first
    three = [r.model_copy(deep=True) for r in cell("linear", 0.07, long=False)][:3]
    three[1].metrics["val_accuracy"] = 0.0
    three[0].metrics["val_accuracy"] = 0.2  # best at the low edge
    c = Cell.of(three, "x", model__name="linear")
    (nxt,) = c.next_configs()
    assert nxt["train"]["lr"] == pytest.approx(0.001 / 3, rel=1e-2) and nxt["seed"] == 0
    full = cell("linear", 0.07, long=False)
    c = Cell.of(full, "x", model__name="linear")
    (nxt,) = c.next_configs()
    assert nxt["train"]["epochs"] == 12.0 and nxt["train"]["lr"] == BEST
    settled = Cell.of(cell("linear", 0.07), "x", model__name="linear")
    assert settled.settled and not settled.next_configs()
    short = Cell.of(cell("linear", 0.9, long=False), "x", model__name="linear")  # learned, but below 0.95
    assert short.learned and short.next_configs()[0]["train"]["epochs"] == 12.0  # a shortfall is settled too
    overturned = Cell.of(cell("linear", 0.07, gain=0.5), "x", model__name="linear")
    assert not overturned.settled and "4x rerun gained" in "; ".join(overturned.missing_for_settled())


@pytest.mark.parametrize("scale", rep.SCALES)
def test_every_experiment_spec_is_valid(scale):
    for exp in rep.EXPERIMENTS.values():
        spec = exp.spec(scale)
        if spec is not None:
            assert sweeps.expand(spec)
        assert exp.spec(scale) is not None or exp.probes.get(scale)
        assert exp.params(scale) is not None


def test_paper_scale_verdicts_read_the_papers_widths():
    p = rep.EXPERIMENTS["linear-width"].params("paper")
    assert p["widths"] == [64, 128, 256, 512]
    spec_widths = {pt.config["model"]["d_model"] for pt in sweeps.expand(rep.EXPERIMENTS["linear-width"].spec("paper"))}
    assert set(p["widths"]) <= spec_widths


def test_cli_list_and_unknown_name():
    res = CliRunner().invoke(main, ["reproduce", "--list"])
    assert res.exit_code == 0 and all(name in res.output for name in rep.EXPERIMENTS)
    bad = CliRunner().invoke(main, ["reproduce", "sharpnes"])
    assert bad.exit_code == 2 and "did you mean 'sharpness'" in bad.output


def test_escalation_runs_shared_by_two_experiments_count_for_both(tmp_path):
    """Two experiments that need the same extra run both record it (else the second one would ask
    for it again forever)."""
    from evalsuite.store import Store

    store = Store(tmp_path / "s.db")
    point = sweeps.expand(sweeps.SweepSpec(base={"task": "recall", "model": "softmax", "preset": "tiny"}))[0]
    store.finish(RunRecord(run_id=point.run_id, config=point.config, status="done", metrics={"accuracy": 1.0}))
    for name in ("reproduce-a-cpu-escalation", "reproduce-b-cpu-escalation"):
        out = sweeps.run_configs([point.config], name=name, store=store, echo=lambda *_: None)
        assert out["ran"] == 0
    names = {s["name"] for s in store.sweeps()}
    assert {"reproduce-a-cpu-escalation", "reproduce-b-cpu-escalation"} <= names
    for s in store.sweeps():
        assert store.sweep_runs(s["sweep_id"])[1] == [point.run_id]


def test_a_comparison_stands_when_the_weaker_model_given_4x_still_falls_short():
    # elu+1 gains 0.3 at 4x (its own figure is not stable) but stays far below delta: "beats" holds,
    # while the gap-by-width clause, which more budget would move, stays undecided
    v = judge("delta-vs-linear", delta(0.99, 0.3, 0.99, 0.3, gain=0.3))
    assert "delta above elu+1 at equal or smaller state: yes" in v.figures[-1]
    assert v.status == rep.INCONCLUSIVE and "gap at d_model 32" in v.why
    # at 4x elu+1 catches up with delta at both widths: the finding is contradicted
    closed = judge("delta-vs-linear", delta(0.99, 0.3, 0.99, 0.3, gain=0.69))
    assert "delta above elu+1 at equal or smaller state: no" in closed.figures[-1]
    assert closed.status == rep.NOT_REPRODUCED


def test_an_ordering_reversed_at_both_budgets_is_contradicted():
    # neither figure is stable (both gain > 0.05 at 4x), but elu+1 stays above softmax at both budgets
    runs = two("listops", 0.39, 0.41, s={"long": True, "gain": 0.066}, l={"gain": 0.08})
    v = judge("listops-order", runs)
    assert v.status == rep.NOT_REPRODUCED, (v.figures, v.why)
    flipped = two("listops", 0.39, 0.41, s={"long": True, "gain": 0.3}, l={"gain": 0.0})  # softmax pulls ahead at 4x
    assert judge("listops-order", flipped).status == rep.INCONCLUSIVE


def test_a_shortfall_that_4x_the_budget_closes_is_contradicted():
    # elu+1 at d64, D=16 reaches softmax when given 4x the budget: it does not "fall short"
    runs = linear_width(0.07, 0.38, 0.99, 0.99)
    runs = [r for r in runs if not (r.config["model"]["d_model"] == 64 and r.config["task"]["num_kv_pairs"] == 16
                                    and r.config["model"]["name"] == "linear")]
    runs += cell("linear", 0.38, gain=0.6)
    v = judge("linear-width", runs)
    assert v.status == rep.NOT_REPRODUCED and "falls short of softmax" in v.why
    h = judge("hybrid-recovery", hybrid(1.0, 0.38, 0.99, 0.1, gain=0.6))
    assert h.status == rep.INCONCLUSIVE and "nothing to recover" in h.why


def test_frontier_sweep_file_is_the_experiments_sweep(repo_root):
    """examples/sweeps/frontier-cpu.yaml runs exactly what `reproduce frontier` runs first."""
    in_file = {p.run_id for p in sweeps.expand(sweeps.load_spec(repo_root / "examples/sweeps/frontier-cpu.yaml"))}
    assert in_file == {p.run_id for p in sweeps.expand(rep.EXPERIMENTS["frontier-delta"].spec("cpu"))}
    assert len(in_file) == 54
