"""The mixer zoo's models: sliding-window attention against a naive loop, state sizes against the
tensors decoding carries, and a tiny end-to-end run of each."""
import math

import pytest
import torch

import evalsuite
from evalsuite import models
from evalsuite.models.swa import band_mask


def test_band_mask_and_swa_against_a_naive_float64_loop():
    torch.manual_seed(0)
    mixer = models.MODELS.get("swa")(16, 2, models.MODELS.get("swa").Options(window=3)).double()
    x = torch.randn(2, 9, 16, dtype=torch.float64)
    q, k, v = (mixer.split_heads(t) for t in mixer.qkv(x).chunk(3, dim=-1))
    want = torch.zeros_like(q)
    for t in range(9):
        lo = max(0, t - 2)  # the window: t - 2, t - 1, t
        w = torch.softmax(q[:, :, t:t + 1] @ k[:, :, lo:t + 1].transpose(-1, -2) / math.sqrt(8), -1)
        want[:, :, t] = (w @ v[:, :, lo:t + 1])[:, :, 0]
    assert torch.allclose(mixer(x), mixer.out(mixer.merge_heads(want)), atol=1e-10)
    assert band_mask(4, 2).tolist() == [[True, False, False, False], [True, True, False, False],
                                        [False, True, True, False], [False, False, True, True]]


@pytest.mark.parametrize("T, W", [(10, 3), (9, 3), (5, 8), (17, 1)], ids=["T10-W3", "T9-W3", "T5-W8", "T17-W1"])
def test_blocked_window_attention_equals_the_band_mask(T, W):
    from evalsuite.models.swa import sliding_window_attention

    q, k, v = (torch.randn(2, 3, T, 4, dtype=torch.float64) for _ in range(3))
    want = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=band_mask(T, W))
    assert torch.allclose(sliding_window_attention(q, k, v, W), want, atol=1e-12)


def test_a_window_as_long_as_the_sequence_is_softmax_attention():
    torch.manual_seed(0)
    swa = models.build("swa", vocab_size=20, d_model=16, n_layers=2, n_heads=2, max_len=12, window=12)
    soft = models.build("softmax", vocab_size=20, d_model=16, n_layers=2, n_heads=2, max_len=12)
    soft.load_state_dict(swa.state_dict())
    tokens = torch.randint(0, 20, (3, 12))
    assert torch.allclose(swa(tokens), soft(tokens), atol=1e-6)


@pytest.mark.parametrize("model", ["gla", "swa", "based", "rwkv7"])
def test_tiny_runs_end_to_end(model):
    result = evalsuite.run("recall", model, preset="tiny", store=False)
    assert result.ok, result.error
    assert result.metrics["state_size"] > 0 and result.metrics["analysis"]["state_rank"]
    if model == "based":
        assert result.config["model"]["feature_map"] == "taylor"


@pytest.mark.parametrize("gate, start", [("scalar", 0.95), ("vector", 0.958), ("fixed", 1 - 2 ** -5)])
def test_decay_at_initialisation_is_the_documented_one(gate, start):
    """The gate of a freshly built model (after the backbone's generic init, which zeroes biases)
    keeps about ``start`` of the state per token; a decay of 0.5 would erase recall from the start."""
    from evalsuite.models import build

    torch.manual_seed(0)
    model = build("gla", vocab_size=16, d_model=32, n_layers=1, n_heads=1, gate=gate, positions="none")
    mixer = next(m for m in model.modules() if type(m).__name__ == "GatedLinearAttention")
    x = torch.randn(2, 9, 32)
    log_g = mixer._project(x)[3]
    assert torch.allclose(log_g.exp().mean(), torch.tensor(start), atol=0.01), float(log_g.exp().mean())
