"""Grouped training (``evalsuite.train.group``): each member of a group ends with the metrics it
gets trained alone (the reference is ``train_one``, the ordinary one-run loop), and a member's
divergence or a failed group never costs the others their runs.

"The same" is within float32 rounding: the batched step sums in another order. At the rates used
here the two agree to about 1e-6 in loss at every evaluation; at a rate high enough for loss
spikes (0.03 on the tiny preset) a 1e-7 difference grows like any other rounding difference and
the trajectories part after about 30 steps, as they would between two BLAS builds."""
import pytest
import torch
from click.testing import CliRunner

from evalsuite.resolve import resolve
from evalsuite.train import group as tg
from evalsuite.cli import main
from evalsuite.executors.grouping import MAX_GROUP, plan
from evalsuite.store import Store
from evalsuite.train import TrainingState, train_one

CPU = torch.device("cpu")
TINY = {"train.epochs": 4, "train.eval_every": 8}


def configs(model="linear", lrs=(1e-3, 1e-2), seeds=(0, 1), feature_map=None, **overrides):
    return [resolve("recall", model, preset="tiny", feature_map=feature_map, seed=s,
                        overrides={**TINY, **overrides, "train.lr": lr}) for lr in lrs for s in seeds]


def assert_same_run(grouped, alone, batched=True):
    g, a = grouped.record, alone.record
    assert g.run_id == a.run_id and g.status == a.status == "done"
    for key in ("steps", "best_step", "budget_steps", "stopped", "graded"):
        assert g.metrics[key] == a.metrics[key], key
    for key in ("accuracy", "val_accuracy"):  # a near-tie may flip one prediction in float32
        assert g.metrics[key] == pytest.approx(a.metrics[key], abs=2 / g.metrics["graded"]), key
    assert [h["step"] for h in g.history] == [h["step"] for h in a.history]
    for hg, ha in zip(g.history, a.history):
        for key in ("train_loss", "val_loss", "lr"):
            assert hg[key] == pytest.approx(ha[key], rel=1e-3, abs=1e-4), (key, hg["step"])
    assert "group_size" not in a.metrics and (g.metrics["group_size"] >= 2 if batched else "group_size" not in g.metrics)
    assert set(grouped.model.state_dict()) == set(alone.model.state_dict())
    # weights as a whole: Adam divides by sqrt(v), so an element whose gradient is ~0 (a rarely
    # used embedding row) may step by +-lr on the sign of a rounding difference
    for name, value in grouped.model.state_dict().items():
        other = alone.model.state_dict()[name].float()
        assert (value.float() - other).norm() <= 1e-2 * other.norm() + 1e-4, name


@pytest.mark.parametrize("model, feature_map, overrides", [
    ("linear", None, {}),
    ("softmax", None, {}),
    ("delta", None, {}),
    ("linear", "performer", {"train.resample_every": 3}),  # random features redrawn from each run's own stream
    ("gla", None, {"train.patience": 1}),                   # members leave the group at different steps
], ids=["linear", "softmax", "delta", "performer-resampled", "gla-patience"])
def test_each_member_of_a_group_gets_the_metrics_it_gets_alone(model, feature_map, overrides):
    cs = configs(model, feature_map=feature_map, **overrides)
    grouped = tg.train_group(cs, CPU)
    for c, g in zip(cs, grouped):
        assert_same_run(g, train_one(c, CPU))


def test_members_stop_at_their_own_target():
    """A low target: the members at the higher rate reach it and stop, the others train on."""
    cs = configs("softmax", lrs=(3e-4, 3e-3), **{"train.target_accuracy": 0.05, "train.epochs": 8})
    grouped = tg.train_group(cs, CPU)
    alone = [train_one(c, CPU) for c in cs]
    for g, a in zip(grouped, alone):
        assert_same_run(g, a)
    assert len({g.record.metrics["steps"] for g in grouped}) > 1  # the case this test is for


def test_a_diverging_member_leaves_and_the_others_are_unaffected(monkeypatch):
    cs = configs("linear")
    poisoned = cs[1].seed, cs[1].train.lr
    prepare = TrainingState.prepare

    def prepare_with_nan(self, cache_dir=None):
        prepare(self, cache_dir)
        if (self.seed, self.train.lr) == poisoned:
            with torch.no_grad():
                self.model.embed.weight.fill_(float("nan"))

    monkeypatch.setattr(TrainingState, "prepare", prepare_with_nan)
    grouped = tg.train_group(cs, CPU)
    assert grouped[1].record.status == "diverged" and "training loss became nan" in grouped[1].record.error
    assert grouped[1].model is None
    monkeypatch.setattr(TrainingState, "prepare", prepare)
    for i in (0, 2, 3):
        assert_same_run(grouped[i], train_one(cs[i], CPU))


def test_a_group_whose_step_fails_trains_its_members_alone(monkeypatch):
    def broken(active, bar):
        raise RuntimeError("CUDA out of memory (simulated)")

    monkeypatch.setattr(tg, "_train_together", broken)
    cs = configs("linear", lrs=(1e-3,))
    grouped = tg.train_group(cs, CPU)
    for c, g in zip(cs, grouped):
        assert g.record.status == "done"
        assert any("grouped training failed (RuntimeError: CUDA out of memory" in w for w in g.record.warnings)
        assert g.record.metrics["accuracy"] == train_one(c, CPU).record.metrics["accuracy"]


def test_configurations_that_differ_in_more_than_rate_and_seed_are_refused():
    cs = configs("linear", lrs=(1e-3,))
    cs[1] = resolve("recall", "linear", preset="tiny", seed=cs[1].seed, overrides={**TINY, "task.num_kv_pairs": 2})
    with pytest.raises(ValueError, match="differ only in train.lr and seed"):
        tg.train_group(cs, CPU)


def test_group_key_ignores_only_the_rate_and_the_seed():
    a, b, c, d = configs("linear")
    assert len({tg.group_key(x) for x in (a, b, c, d)}) == 1
    other = resolve("recall", "linear", preset="tiny", overrides={**TINY, "train.batch_size": 16})
    assert tg.group_key(other) != tg.group_key(a)
    assert tg.group_key(resolve("recall", "softmax", preset="tiny", overrides=TINY)) != tg.group_key(a)
    assert tg.group_key(resolve("recall", "linear", preset="tiny", overrides={"train.compile": True})) is None


def test_plan_groups_by_key_and_spreads_over_workers():
    lin = configs("linear", lrs=(1e-3, 3e-3, 1e-2, 3e-2))        # 8 points, one key
    soft = configs("softmax", lrs=(1e-3,))                        # 2 points, another key
    compiled = [resolve("recall", "linear", preset="tiny", overrides={"train.compile": True})]
    points = lin + soft + compiled
    assert plan(points, "off") == [[i] for i in range(11)]
    assert plan(points, "auto", cuda=True) == plan(points, "on")  # the worker then times both ways (train.group.pays)
    assert plan(points, "auto") == plan(points, "off")  # on CPU the batched step measured no faster
    assert plan(points, "on", slots=1) == [list(range(8)), [8, 9], [10]]
    assert plan(points, "on", slots=2) == [[0, 1, 2, 3, 4, 5], [6, 7], [8, 9], [10]]
    many = configs("linear", lrs=[1e-3 * (1 + i) for i in range(10)])  # 20 points: never above MAX_GROUP
    assert max(len(u) for u in plan(many, "on")) == MAX_GROUP
    for units in (plan(points, "on", slots=s) for s in (1, 2, 3, 11)):
        assert sorted(i for u in units for i in u) == list(range(11))
        assert all(len({tg.group_key(points[i]) for i in u}) == 1 for u in units)


def test_a_grouped_sweep_records_every_run_and_resumes(tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text("base: {task: recall, model: linear, preset: tiny}\n"
                    "grid: {train.lr: [0.001, 0.01]}\nseeds: [0, 1]\nset: {train.epochs: 2}\n")
    store = tmp_path / "s.db"
    args = ["sweep", str(spec), "--group", "on", "--workers", "1", "--store", str(store), "--no-report"]
    out = CliRunner().invoke(main, args)
    assert out.exit_code == 0, out.output
    rows = Store(store).runs()
    assert len(rows) == 4 and all(r.status == "done" and r.metrics["group_size"] == 4 for r in rows)
    assert all(Store(store).weights_path(r.run_id).exists() for r in rows)
    again = CliRunner().invoke(main, args)
    assert again.exit_code == 0 and "4 done" in again.output and "0 to run" in again.output


KILLED_IN_A_GROUP = '''
import os, signal
import torch
from evalsuite.models.softmax import SoftmaxAttention

class DiesWhenBatched(SoftmaxAttention):
    """Kills its own process under vmap (as the out-of-memory killer would a group's worker)."""
    def forward(self, x):
        if torch._C._functorch.is_batchedtensor(x):
            os.kill(os.getpid(), signal.SIGKILL)
        return super().forward(x)
'''


def test_a_group_whose_worker_dies_is_retried_one_run_at_a_time(tmp_path):
    (tmp_path / "dies.py").write_text(KILLED_IN_A_GROUP)
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"base: {{task: recall, model: '{tmp_path / 'dies.py'}:DiesWhenBatched', preset: tiny}}\n"
                    "grid: {train.lr: [0.001, 0.01]}\nseeds: [0]\nset: {train.epochs: 2}\n")
    store = tmp_path / "s.db"
    out = CliRunner().invoke(main, ["sweep", str(spec), "--group", "on", "--workers", "1", "--store", str(store),
                                    "--no-report"])
    assert out.exit_code == 0, out.output
    rows = Store(store).runs()
    assert len(rows) == 2 and all(r.status == "done" and "group_size" not in r.metrics for r in rows)


@pytest.mark.parametrize("grouped", [True, False], ids=["batched-faster", "alone-faster"])
def test_auto_trains_the_faster_way_and_says_which(monkeypatch, grouped):
    """``decide`` (``--group auto``): a few timed steps choose; either way each member ends as it
    would alone, and its record keeps the timing that chose."""
    real = tg.pays
    monkeypatch.setattr(tg, "pays", lambda members: {**real(members), "grouped": grouped})
    cs = configs("linear", lrs=(1e-3,))
    out = tg.train_group(cs, CPU, decide=True)
    for c, g in zip(cs, out):
        calibration = g.record.metrics["group_calibration"]
        assert calibration["grouped"] is grouped and calibration["alone_steps_per_s"] > 0
        assert_same_run(g, train_one(c, CPU), batched=grouped)


def test_timing_the_two_ways_leaves_the_members_untouched():
    cs = configs("linear", lrs=(1e-3,))
    members = [tg.TrainingState(c, CPU) for c in cs]
    for m in members:
        m.prepare()
    before = [{k: v.clone() for k, v in m.model.state_dict().items()} for m in members]
    rng = torch.get_rng_state()
    tg.pays(members)
    assert torch.equal(rng, torch.get_rng_state())
    for m, state in zip(members, before):
        assert all(torch.equal(v, m.model.state_dict()[k]) for k, v in state.items()) and m.step == 0
