"""MAD's compression: the generator, its floor in closed form, the autoencoder readout it is read by."""
import pytest
import torch

from evalsuite import models, tasks
from evalsuite.errors import ConfigError
from evalsuite.resolve import resolve
from evalsuite.tasks import readers


def test_random_tokens_then_the_compression_token_and_every_position_is_a_target():
    task = tasks.get("compression", vocab_size=8, seq_len=12)
    b = task.generate(500, 0)
    assert (b.inputs[:, -1] == 7).all() and (b.inputs[:, :-1] < 7).all() and (b.inputs[:, :-1] >= 0).all()
    assert torch.equal(b.targets, b.inputs) and b.score_mask.all()
    counts = torch.bincount(b.inputs[:, :-1].flatten(), minlength=7).double()
    assert (counts / counts.sum() - 1 / 7).abs().max() < 0.02                 # uniform over the 7 symbols (4 sd)
    assert task.decode(b.inputs[0])[-1] == "C"


def test_floor_is_the_readers_that_see_no_token_in_closed_form():
    task = tasks.get("compression", vocab_size=16, seq_len=32)
    value, reader, scores = readers.floor(task, task.generate(400, 1), task.generate(2000, 0))
    assert set(scores) == {"majority", "position"} and reader == "position"
    # the last position is always the compression token; elsewhere a fixed guess is right 1 time in 15
    assert value == pytest.approx((1 + 31 / 15) / 32, abs=0.01)


def _model(readout):
    torch.manual_seed(0)
    return models.build("softmax", vocab_size=8, d_model=16, n_layers=2, n_heads=1, readout=readout, max_len=12).eval()


@torch.no_grad()
def test_the_autoencoder_readout_decodes_every_position_from_the_last():
    """Changing the last token moves every position's logits under the autoencoder readout, and only
    the last position's under the causal one; changing an earlier token moves the autoencoder's
    output everywhere too (it reaches every position through the encoding)."""
    x = tasks.get("compression", vocab_size=8, seq_len=12).generate(4, 0).inputs
    last, first = x.clone(), x.clone()
    last[:, -1] = (last[:, -1] + 1) % 8
    first[:, 0] = (first[:, 0] + 1) % 8
    causal, auto = _model("causal"), _model("autoencoder")
    moved = lambda m, y: (m(x) - m(y)).abs().amax(-1) > 1e-6                  # [n, T] per position
    assert moved(auto, last).all() and moved(auto, first).all()
    assert moved(causal, last)[:, -1].all() and not moved(causal, last)[:, :-1].any()
    with pytest.raises(ValueError, match="autoencoder"):
        auto.step(x[:, 0], auto.init_state(4))


def test_resolving_compression_sets_the_readout_and_refuses_the_causal_one():
    config = resolve("compression", "delta", preset="tiny")
    assert config.model.backbone.readout == "autoencoder"
    assert "readout" not in resolve("recall", "delta", preset="tiny").model.section()   # a late field: old ids stay
    with pytest.raises(ConfigError, match="model.readout"):
        resolve("compression", "delta", preset="tiny", overrides=["model.readout=causal"])
    segments = '[{"seq_len": 12, "share": 1}, {"seq_len": 16, "share": 1}]'
    with pytest.raises(ConfigError, match="task.segments"):   # the shorter would be read at its padding
        resolve("compression", "delta", preset="tiny", overrides=[f"task.segments={segments}"])
