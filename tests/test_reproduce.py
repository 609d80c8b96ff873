"""Each verdict on synthetic stored results that should pass and that should fail."""
import pandas as pd
import pytest
from click.testing import CliRunner

from evalsuite import reproduce as rep
from evalsuite import sweep as sweeps
from evalsuite.cli import main


def run(model, acc, *, d_model=64, seq_len=64, pairs=8, task="recall", fmap=None, lr=0.003, status="done", **metrics):
    fmap = fmap or ("elu1" if model in ("linear", "hybrid") else None)
    cfg = {"task": {"name": task, "seq_len": seq_len, "num_kv_pairs": pairs},
           "model": {"name": model, "feature_map": fmap, "d_model": d_model, "n_layers": 2,
                     **({"pattern": metrics.pop("pattern")} if "pattern" in metrics else {})},
           "train": {"lr": lr}, "seed": 0}
    m = {"accuracy": acc, "state_size": metrics.pop("state_size", 8000), "loss": metrics.pop("loss", 1.0),
         "steps": 100, "best_step": 100, **metrics}
    return {"run_id": f"{model}{d_model}{seq_len}{pairs}{lr}{task}", "config": cfg, "status": status,
            "metrics": m if status == "done" else {}, "error": None}


def sharp(entropy, ctx_entropies, mass):
    return {"analysis": {"retrieval_layer": {"layer": 0, "head": 0},
                         "sharpness": [{"layer": 0, "head": 0, "entropy": entropy, "answer_mass": mass}],
                         "sharpness_by_context": [{"layer": 0, "head": 0, "context": 10.0 * (i + 1), "entropy": e}
                                                  for i, e in enumerate(ctx_entropies)]}}


NO_PROBES = pd.DataFrame()


def probes(knees):
    rows = []
    for memory, k in knees.items():
        for s in (4, 8, 12, 16, 24, 32, 48, 64):
            rows.append({"memory": memory, "pairs": s, "accuracy": 1.0 if s <= k else 0.5, "trained": True,
                         "setting": 1, "d_key": 16})
    return pd.DataFrame(rows)


CASES = {
    "softmax-mqar": (
        [run("softmax", 1.0, seq_len=64, pairs=4), run("softmax", 0.995, seq_len=128, pairs=8)],
        [run("softmax", 1.0, seq_len=64, pairs=4), run("softmax", 0.7, seq_len=128, pairs=8)], NO_PROBES),
    "linear-width": (
        [run("linear", a, d_model=w, pairs=D) for (w, D), a in {(32, 4): .5, (64, 4): .7, (128, 4): .9, (32, 16): .2,
                                                                (64, 16): .4, (128, 16): .6}.items()]
        + [run("softmax", 1.0, pairs=16)],
        [run("linear", 0.5, d_model=w, pairs=D) for w in (32, 64, 128) for D in (4, 16)] + [run("softmax", 1.0, pairs=16)],
        NO_PROBES),
    "delta-vs-linear": (
        [run("delta", .99, d_model=32, state_size=100), run("linear", .3, d_model=32, state_size=110),
         run("delta", .99, d_model=64, state_size=200), run("linear", .5, d_model=64, state_size=210)],
        [run("delta", .99, d_model=32, state_size=100), run("linear", .98, d_model=32, state_size=110),
         run("delta", .05, d_model=64, state_size=200), run("linear", .05, d_model=64, state_size=210)], NO_PROBES),
    "hybrid-recovery": (
        [run("softmax", 1.0), run("linear", .1), run("hybrid", .95, pattern="SL"), run("hybrid", .1, pattern="LS")],
        [run("softmax", 1.0), run("linear", .1), run("hybrid", .3, pattern="SL")], NO_PROBES),
    "listops-order": (
        [run("softmax", .36, task="listops", majority_rate=.13), run("linear", .16, task="listops")],
        [run("softmax", .16, task="listops"), run("linear", .36, task="listops")], NO_PROBES),
    "copy": (
        [run("softmax", .99, task="copy", loss=.01), run("linear", .98, task="copy", loss=.05)],
        [run("softmax", .99, task="copy", loss=.01), run("linear", .3, task="copy", loss=2.0)], NO_PROBES),
    "sharpness": (
        [run("softmax", 1.0, **sharp(0.3, [0.3, 0.3], 0.9)), run("linear", .1, **sharp(2.4, [2.0, 3.0], 0.2))],
        [run("softmax", 1.0, **sharp(2.0, [2.0, 2.0], 0.3)), run("linear", .1, **sharp(2.4, [2.0, 3.0], 0.2))],
        NO_PROBES),
}


@pytest.mark.parametrize("name", CASES)
def test_verdict_passes_and_fails(name):
    good, bad, pr = CASES[name]
    verdict = rep.EXPERIMENTS[name].verdict
    v = verdict(good, pr)
    assert v.status == rep.REPRODUCED, (v.figures, v.why)
    assert v.figures and v.finding
    w = verdict(bad, pr)
    assert w.status == rep.NOT_REPRODUCED, (w.figures, w.why)
    assert w.why
    assert verdict([], pr).status == rep.INCONCLUSIVE  # nothing measured, nothing claimed


def test_capacity_verdict():
    good = probes({"linear/elu1": 12, "linear/dpfp(nu=1)": 24, "linear/dpfp(nu=2)": 48, "linear/dpfp(nu=3)": 64, "softmax": 64})
    bad = probes({"linear/elu1": 4, "linear/dpfp(nu=1)": 24, "linear/dpfp(nu=2)": 16, "linear/dpfp(nu=3)": 8, "softmax": 32})
    verdict = rep.EXPERIMENTS["capacity-knee"].verdict
    assert verdict([], good).status == rep.REPRODUCED
    v = verdict([], bad)
    assert v.status == rep.NOT_REPRODUCED and "DPFP" in v.why and "softmax" in v.why
    assert verdict([], NO_PROBES).status == rep.INCONCLUSIVE


def test_failed_runs_do_not_count():
    good, _, pr = CASES["softmax-mqar"]
    failed = [dict(r, status="failed", metrics={}) for r in good]
    assert rep.EXPERIMENTS["softmax-mqar"].verdict(failed, pr).status == rep.INCONCLUSIVE


@pytest.mark.parametrize("scale", rep.SCALES)
def test_every_experiment_spec_is_valid(scale):
    for exp in rep.EXPERIMENTS.values():
        spec = exp.spec(scale)
        if spec is not None:
            assert sweeps.expand(spec)
        assert exp.spec(scale) is not None or exp.probes.get(scale)


def test_cli_list_and_unknown_name():
    res = CliRunner().invoke(main, ["reproduce", "--list"])
    assert res.exit_code == 0 and all(name in res.output for name in rep.EXPERIMENTS)
    bad = CliRunner().invoke(main, ["reproduce", "sharpnes"])
    assert bad.exit_code == 2 and "did you mean 'sharpness'" in bad.output


def test_delta_verdict_skips_a_width_where_neither_learned():
    runs = [run("delta", .05, d_model=32, state_size=100), run("linear", .05, d_model=32, state_size=110),
            run("delta", .99, d_model=64, state_size=200), run("linear", .1, d_model=64, state_size=210)]
    v = rep.EXPERIMENTS["delta-vs-linear"].verdict(runs, NO_PROBES)
    assert v.status == rep.REPRODUCED and "does not count" in v.figures[0]
    both_fail = [dict(r, metrics={**r["metrics"], "accuracy": 0.05}) for r in runs]
    assert rep.EXPERIMENTS["delta-vs-linear"].verdict(both_fail, NO_PROBES).status == rep.INCONCLUSIVE
