"""A longer budget branched from a shorter run's saved state equals the same run trained from
scratch (``train.branch``): same history, checkpoint and test figures within float rounding, and
the same run id. Runs at another rate, warm-up or schedule never branch."""
import pytest
import torch

from evalsuite.resolve import resolve
from evalsuite.train import branch, train_one

CPU = torch.device("cpu")
BASE = {"train.warmup_steps": 2, "train.eval_every": 3, "train.epochs": 4}  # tiny: 8 steps an epoch, decay at step 26


def config(**overrides):
    return resolve("recall", "linear", preset="tiny", overrides={**BASE, **overrides})


def assert_same_record(a, b):
    assert a.status == b.status == "done"
    for key in ("steps", "best_step", "graded", "budget_steps", "stopped"):
        assert a.metrics[key] == b.metrics[key], key
    for key in ("accuracy", "val_accuracy", "loss", "train_loss"):
        assert a.metrics[key] == pytest.approx(b.metrics[key], rel=1e-5, abs=1e-6), key
    assert [h["step"] for h in a.history] == [h["step"] for h in b.history]
    for ha, hb in zip(a.history, b.history):
        for key in ("train_loss", "val_loss", "val_accuracy", "lr"):
            assert ha[key] == pytest.approx(hb[key], rel=1e-5, abs=1e-6), (ha["step"], key)


def test_a_longer_budget_branched_from_the_shorter_run_equals_it_trained_from_scratch(tmp_path):
    base = train_one(config(), CPU, cache_dir=tmp_path)
    assert base.record.metrics["stopped"] == "budget"  # it reached its decay, where it saved its state
    snapshots = list((tmp_path / branch.FOLDER).rglob("*.pt"))
    assert [p.name for p in snapshots] == ["26.pt"]

    longer = config(**{"train.epochs": 16})
    branched = train_one(longer, CPU, cache_dir=tmp_path).record
    scratch = train_one(longer, CPU).record  # no cache: from the first step
    assert branched.metrics["branched_from"] == base.record.run_id and branched.metrics["branched_from_step"] == 26
    assert "branched_from" not in scratch.metrics
    assert branched.run_id == scratch.run_id == longer.run_id and branched.config == scratch.config
    assert_same_record(branched, scratch)
    assert not snapshots[0].exists()  # consumed: the branched run finished
    # the steps before the branch point are the shorter run's own
    assert [h["val_accuracy"] for h in branched.history if h["step"] <= 24] == \
           [h["val_accuracy"] for h in base.record.history if h["step"] <= 24]


@pytest.mark.parametrize("change", [{"train.lr": 0.01}, {"train.warmup_steps": 3}, {"train.schedule": "cosine"}],
                         ids=["another-rate", "another-warmup", "cosine"])
def test_runs_that_do_not_share_the_trajectory_start_fresh(tmp_path, change):
    train_one(config(), CPU, cache_dir=tmp_path)
    other = train_one(config(**{"train.epochs": 16, **change}), CPU, cache_dir=tmp_path).record
    assert other.status == "done" and "branched_from" not in other.metrics


def test_warmup_steps_is_a_late_field_and_a_fraction_warms_up_in_proportion():
    plain = resolve("recall", "linear", preset="tiny")
    assert "warmup_steps" not in plain.as_dict()["train"]  # ids of runs without it are unchanged
    assert plain.train.warmup(1000) == 50 and config().train.warmup(1000) == 2
    assert config().train.branch_step(32) == 26 and config(**{"train.schedule": "cosine"}).train.branch_step(32) is None


def test_stop_at_target_false_trains_the_whole_budget_and_keeps_the_latest_best():
    """A target every validation pass meets stops the run at its first pass; with
    ``stop_at_target=false`` it trains the whole budget, its checkpoint is the latest of those
    that validate best, and the field leaves the ids of runs that do not set it alone."""
    stop = train_one(config(**{"train.target_accuracy": 1e-6}), CPU).record
    assert stop.metrics["steps"] == 3 and stop.metrics["stopped"] == "target"
    on = config(**{"train.target_accuracy": 1e-6, "train.stop_at_target": False})
    whole = train_one(on, CPU).record
    assert whole.metrics["steps"] == whole.metrics["budget_steps"] == 32 and whole.metrics["stopped"] == "budget"
    best = max(h["val_accuracy"] for h in whole.history)
    assert whole.metrics["best_step"] == max(h["step"] for h in whole.history if h["val_accuracy"] == best)
    assert config().run_id == config(**{"train.stop_at_target": True}).run_id != on.run_id


def test_a_rung_continues_its_run_from_the_store_after_the_cache_is_deleted(tmp_path):
    """The 1x run's snapshot is kept in the store (``evalsuite.snapshots``): with the cache folder
    deleted (a fresh checkout, another machine) the 4x rung still starts from it, and equals the
    same run trained from scratch; the store drops the snapshot once the rung used it."""
    import shutil

    from evalsuite.pipeline import run_one
    from evalsuite.store import Store

    store = Store(tmp_path / "s" / "evalsuite.db")
    base = run_one(config(), device="cpu", store=store)
    with store.connect(create=False) as conn:
        assert conn.execute("SELECT kind, step FROM snapshots").fetchall() == [("branch", 26)]
    shutil.rmtree(store.cache_dir)
    longer = config(**{"train.epochs": 16})
    rung = run_one(longer, device="cpu", store=store)
    scratch = train_one(longer, CPU).record
    assert rung.metrics["branched_from"] == base.run_id and rung.metrics["branched_from_step"] == 26
    assert_same_record(rung, scratch)
    with store.connect(create=False) as conn:
        assert [r for r in conn.execute("SELECT kind, step FROM snapshots") if r[0] == "branch" and r[1] == 26] == []


def test_a_run_stopped_at_its_segments_end_resumes_from_its_checkpoint_and_equals_one_run(tmp_path, monkeypatch):
    """A segment that ends inside a run: the run saves its state and is recorded interrupted; the
    next invocation resumes it from there (``resumed_from_step``) and it ends as the run trained in
    one go (a 16x rung longer than a segment runs in pieces)."""
    import time

    from evalsuite.records import Status
    from evalsuite.train import loop

    c = config(**{"train.epochs": 6})
    whole = train_one(c, CPU).record
    calls = {"n": 0}
    real = loop.TrainingState.save_checkpoint

    def ends_at_step_20(self):
        if self.step == 20 and not calls["n"]:
            calls["n"] += 1
            monkeypatch.setenv("EVALSUITE_DEADLINE", str(time.time() - 1))
            self.deadline = loop.segment_deadline()
        return real(self)
    monkeypatch.setattr(loop.TrainingState, "save_checkpoint", ends_at_step_20)
    first = train_one(c, CPU, cache_dir=tmp_path).record
    assert first.status is Status.INTERRUPTED and "segment ended at step 20" in first.error
    monkeypatch.delenv("EVALSUITE_DEADLINE")
    resumed = train_one(c, CPU, cache_dir=tmp_path).record
    assert resumed.metrics["resumed_from_step"] == 20
    assert_same_record(resumed, whole)
    assert not list((tmp_path / branch.CHECKPOINTS).rglob("*.pt"))  # finished: nothing left to resume


def test_a_plateaued_run_stops_and_one_at_its_floor_trains_on():
    """``plateau_window`` passes without a validation gain of ``plateau_gain`` stop a run that
    stands at ``plateau_above`` or more; below it the run trains its whole budget."""
    flat = {"train.plateau_window": 2, "train.plateau_gain": 1.0, "train.epochs": 8}  # no gain is ever enough
    stopped = train_one(config(**flat), CPU).record
    assert stopped.metrics["stopped"] == "plateau" and stopped.metrics["steps"] == 9  # passes at 3, 6, 9
    assert stopped.metrics["undertrained"] is False
    on = train_one(config(**{**flat, "train.plateau_above": 1.0}), CPU).record
    assert on.metrics["stopped"] == "budget" and on.metrics["steps"] == 64
    assert config(**flat).run_id != config().run_id and "plateau_window" not in config().as_dict()["train"]
