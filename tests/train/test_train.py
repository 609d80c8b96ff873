import textwrap

import pytest
import torch

import evalsuite
from evalsuite import config as cfg
from evalsuite.resolve import resolve
from evalsuite.store import Store, load
from evalsuite.train import split_seed
from evalsuite.records import RunRecord

BAD_MIXERS = textwrap.dedent('''
    import torch
    from evalsuite.models import Mixer

    class NanMixer(Mixer):
        """Outputs NaN: the run must be recorded as diverged."""
        def __init__(self, d_model, n_heads, options, feature_map=None):
            super().__init__(d_model, n_heads, options)
            self.w = torch.nn.Linear(d_model, d_model)
        def forward(self, x):
            return self.w(x) * float("nan")
        def state_size(self, seq_len):
            return 0

    class BrokenMixer(NanMixer):
        """Raises: the run must be recorded as failed, with the error."""
        def forward(self, x):
            raise RuntimeError("kaboom")
''')


def test_tiny_run_end_to_end(store_path):
    result = evalsuite.run("recall", "softmax", preset="tiny", store=store_path)
    assert result.status == "done" and not result.cached
    m = result.metrics
    assert 0.0 <= m["accuracy"] <= 1.0 and m["steps"] == 8 and m["parameters"] > 0
    assert result.run_id == cfg.run_id(result.config)  # the stored dict hashes to the id
    assert result.history and result.history[-1]["step"] == 8

    df = load(store_path)
    assert len(df) == 1
    row = df.iloc[0]
    assert row.run_id == result.run_id and row.status == "done" and row.task == "recall"
    assert row.accuracy == pytest.approx(m["accuracy"])
    assert row.env["torch"] == torch.__version__

    again = evalsuite.run("recall", "softmax", preset="tiny", store=store_path)
    assert again.cached and again.metrics["accuracy"] == pytest.approx(m["accuracy"])
    forced = evalsuite.run("recall", "softmax", preset="tiny", store=store_path, force=True)
    assert not forced.cached and forced.metrics["accuracy"] == pytest.approx(m["accuracy"])  # deterministic
    assert len(load(store_path)) == 1


def test_training_learns_a_tiny_recall_problem():
    result = evalsuite.run("recall", "softmax", preset="tiny", store=False, **{"num_train": 4096, "epochs": 3, "eval_every": 64,
                                                    "vocab_size": 32, "seq_len": 16, "num_kv_pairs": 2,
                                                    "num_val": 256, "num_test": 256})
    assert result.status == "done"
    assert result.metrics["accuracy"] > 0.5  # chance is 1/16


@pytest.mark.parametrize("mixer, status, text", [("NanMixer", "diverged", "loss became nan"),
                                                  ("BrokenMixer", "failed", "kaboom")])
def test_failures_are_recorded(tmp_path, store_path, mixer, status, text):
    plugin = tmp_path / "bad_mixers.py"
    plugin.write_text(BAD_MIXERS)
    result = evalsuite.run("recall", f"{plugin}:{mixer}", preset="tiny", store=store_path)
    assert result.status == status and text in result.error
    row = Store(store_path).get(result.run_id)
    assert row.status == status and text in row.error


def test_splits_use_disjoint_seeds():
    seeds = {split_seed(s, split) for s in range(50) for split in ("train", "val", "test")}
    assert len(seeds) == 150


def test_store_round_trip(store_path):
    store = Store(store_path)
    assert load(store_path).empty and not store_path.exists()  # reading creates nothing
    config = resolve("recall", "linear", preset="tiny").as_dict()  # the stored form
    store.start("abc", config, {"python": "3"})
    assert store.get("abc").status == "running"
    store.finish(RunRecord(run_id="abc", config=config, status="done", metrics={"accuracy": 0.5, "loss": 1.25},
                           history=[{"step": 1, "train_loss": 2.0, "val_accuracy": 0.1},
                                    {"step": 2, "train_loss": float("nan")}]))
    row = store.get("abc", with_history=True)
    assert row.config == config and row.metrics == {"accuracy": 0.5, "loss": 1.25}
    assert row.history == [{"step": 1, "train_loss": 2.0, "val_accuracy": 0.1}, {"step": 2}]
    hist = store.history("abc")
    assert list(hist.step) == [1, 2] and hist.train_loss[0] == 2.0 and hist.train_loss.isna()[1]
    df = load(store_path)
    assert df.loc[0, "accuracy"] == 0.5 and df.loc[0, "model"] == "linear"
    with pytest.raises(ValueError, match="status"):
        RunRecord(run_id="abc", config=config, status="weird")
    with pytest.raises(ValueError, match="metric 'accuracy' must be float"):
        RunRecord(run_id="abc", config=config, status="done", metrics={"accuracy": "high"})


def test_compile_is_opt_in_and_falls_back_with_a_warning(monkeypatch):
    """train.compile leaves the ids of runs without it unchanged; where torch.compile fails the run
    trains eagerly, says so, and matches the eager run."""
    import evalsuite

    plain = resolve("recall", "softmax", preset="tiny")
    assert "compile" not in plain.as_dict()["train"]
    assert plain.run_id == resolve("recall", "softmax", preset="tiny", overrides={"train.compile": False}).run_id

    def broken(*args, **kwargs):
        raise RuntimeError("no compiler here")

    monkeypatch.setattr(torch, "compile", broken)
    eager = evalsuite.run("recall", "softmax", preset="tiny", store=False)
    fallback = evalsuite.run("recall", "softmax", preset="tiny", store=False, **{"train.compile": True})
    assert fallback.status == "done" and "compile_time_s" not in fallback.metrics
    assert any("torch.compile failed (RuntimeError: no compiler here)" in w for w in fallback.warnings)
    assert fallback.metrics["accuracy"] == eager.metrics["accuracy"]
    assert fallback.metrics["loss"] == pytest.approx(eager.metrics["loss"], rel=1e-6)


def test_divergence_is_found_at_the_step_it_happened():
    """Losses are read at evaluation points only; the recorded step is still the first bad one."""
    from evalsuite.train.loop import first_non_finite

    losses = [torch.tensor(1.0), torch.tensor(0.5), torch.tensor(float("inf")), torch.tensor(float("nan"))]
    assert first_non_finite(losses) == 2 and first_non_finite(losses[:2]) is None and first_non_finite([]) is None


def test_the_gathered_loss_equals_the_masked_loss():
    """The training loss gathers K positions per example (``Graded``: fixed shapes, no host sync);
    it is the same loss and gradients as selecting the graded positions by a boolean mask, which
    this test does directly."""
    import torch.nn.functional as F

    from evalsuite.tasks import IGNORE
    from evalsuite.train import Graded, training_loss

    config = resolve("recall", "linear", preset="tiny")
    torch.manual_seed(0)
    model = config.model.build(64)
    batch = config.task.train_tasks[0].generate(8, 0)
    batch.targets[0, batch.targets[0] != IGNORE] = torch.where(torch.arange(int((batch.targets[0] != IGNORE).sum())) % 2 == 0,
                                                               IGNORE, 5)  # an example with fewer graded positions
    graded = Graded.of(batch)
    assert graded.index.shape[1] == int((batch.targets != IGNORE).sum(1).max())
    mask = batch.targets != IGNORE
    masked = F.cross_entropy(model.head(model.hidden(batch.inputs)[mask]).float(), batch.targets[mask])
    gathered = training_loss(model, graded)
    torch.testing.assert_close(gathered, masked, rtol=1e-6, atol=1e-7)
    ga = torch.autograd.grad(masked, list(model.parameters()), allow_unused=True)
    gb = torch.autograd.grad(gathered, list(model.parameters()), allow_unused=True)
    for a, b in zip(ga, gb):
        if a is not None:
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-7)

def test_a_mixed_d_run_reports_accuracy_and_floor_at_each_d():
    """One run trained on a mixture of pair counts is read at each D (``task.eval_segments``): an
    accuracy and a floor for every D, each floor its own (fewer pairs, a higher floor)."""
    from evalsuite.resolve import resolve
    from evalsuite.train import train_one

    Ds = [2, 4, 8]
    seg = [{"num_kv_pairs": D, "seq_len": 4 * D} for D in Ds]
    c = resolve("recall", "linear", preset="tiny", overrides={"task.segments": seg, "task.eval_segments": seg})
    r = train_one(c, torch.device("cpu")).record
    accs = [r.metrics[f"eval_{i}_accuracy"] for i in range(len(Ds))]
    floors = [r.metrics[f"eval_{i}_floor"] for i in range(len(Ds))]
    assert all(0 <= a <= 1 for a in accs) and floors == sorted(floors, reverse=True) and floors[0] > floors[-1]
    # each D's learning curve: the validation accuracy per segment at every evaluation, whose mean
    # weighted by each segment's graded positions (counted from the data) is the mixture's
    from evalsuite.records import segment_curves
    from evalsuite.train.data import make_data

    curves = segment_curves(r.history)
    names = [f"num_kv_pairs={D},seq_len={4 * D}" for D in Ds]
    assert sorted(curves) == sorted(names)
    assert all([s for s, _ in curve] == [h["step"] for h in r.history] for curve in curves.values())
    val = make_data(c.task, c.train, c.seed)[0]["val"]
    graded = {D: int(val.score_mask[val.meta["num_kv_pairs"] == D].sum()) for D in Ds}
    for h in r.history:
        mean = sum(h[f"val_accuracy@{name}"] * graded[D] for name, D in zip(names, Ds)) / sum(graded.values())
        assert abs(mean - h["val_accuracy"]) < 1e-9
