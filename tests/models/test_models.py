import pytest
import torch

from evalsuite import models
from evalsuite.models import feature_maps, ops

# The seed document's running example (n = 4, d = 2, elu+1).
Q = torch.tensor([[1., 0], [0, 1], [1, 1], [2, 0]])
K = torch.tensor([[0., 1], [1, 0], [1, 1], [0, 2]])
V = torch.tensor([[1., 0], [0, 1], [1, 1], [2, 0]])
CAUSAL = torch.tensor([[1.0, 0.0], [5 / 9, 4 / 9], [0.7, 0.7], [25 / 26, 15 / 26]])


@pytest.mark.parametrize("mode", ops.MODES)
def test_running_example_causal(mode):
    out = ops.linear_attention(Q[None, None], K[None, None], V[None, None], mode=mode, eps=0.0, chunk_size=3)
    torch.testing.assert_close(out[0, 0], CAUSAL)
    # the numbers as printed in the seed document
    assert [[round(x, 3) for x in row] for row in out[0, 0].tolist()] == [
        [1.0, 0.0], [0.556, 0.444], [0.7, 0.7], [0.962, 0.577]]


@pytest.mark.parametrize("mode", ops.MODES)
def test_running_example_noncausal(mode):
    out = ops.linear_attention(Q[None, None], K[None, None], V[None, None], causal=False, mode=mode, eps=0.0)
    torch.testing.assert_close(out[0, 0, 0], torch.tensor([1.00, 0.55]))


def test_elu1_is_stable_in_bf16():
    x = torch.tensor([-20.0, -8.5, -1.0, 0.0, 2.0], dtype=torch.bfloat16)
    phi = feature_maps.get("elu1", 5)(x)
    assert (phi > 0).all()
    exact = torch.nn.functional.elu(x.double()) + 1  # float64: exp(x) - 1 + 1 keeps exp(-20)
    assert exact[0] > 0
    torch.testing.assert_close(phi.double(), exact, rtol=1e-2, atol=0)


@pytest.mark.parametrize("name", ["softmax", "linear"])
def test_shapes_and_causality(name):
    torch.manual_seed(0)
    model = models.build(name, vocab_size=50, d_model=32, n_layers=2, n_heads=2, max_len=16)
    x = torch.randint(0, 50, (3, 16))
    logits = model(x)
    assert logits.shape == (3, 16, 50)
    y = x.clone()
    y[:, 10:] = (y[:, 10:] + 1) % 50  # change the future
    torch.testing.assert_close(model(y)[:, :10], logits[:, :10])


def test_state_size_accounting():
    common = dict(vocab_size=50, d_model=32, n_layers=2, n_heads=4, max_len=128, conv_kernel=4)
    soft = models.build("softmax", **common)
    lin = models.build("linear", **common)
    conv = 2 * 3 * 32  # kernel-1 past inputs of width d_model, per layer
    assert soft.state_size(100) == 2 * (2 * 100 * 32) + conv  # K and V for every token, every layer
    assert lin.state_size(100) == 2 * 4 * (8 * 8 + 8) + conv  # per head m x dv + m, independent of T
    assert lin.state_size(10_000) == lin.state_size(100)


def test_learned_positions_refuse_longer_inputs():
    model = models.build("softmax", vocab_size=20, d_model=16, n_layers=1, n_heads=1, max_len=8)
    with pytest.raises(ValueError, match="exceeds the 8 learned positions"):
        model(torch.zeros(1, 9, dtype=torch.long))
    free = models.build("softmax", vocab_size=20, d_model=16, n_layers=1, n_heads=1, positions="none")
    assert free(torch.zeros(1, 9, dtype=torch.long)).shape == (1, 9, 20)


def test_readme_plugin_feature_map_trains_end_to_end(repo_root, store_path):
    import evalsuite

    ref = f"{repo_root / 'examples' / 'exp_feature_map.py'}:ExpMap"
    result = evalsuite.run("recall", "linear", preset="tiny", feature_map=ref, store=store_path)
    assert result.status == "done", result.error
    assert result.config["model"]["feature_map"] == ref
    model = models.build("linear", vocab_size=20, d_model=16, n_layers=1, n_heads=2, max_len=8, feature_map=ref)
    fmap = model.blocks[0].mixer.feature_map
    assert type(fmap).__name__ == "ExpMap" and fmap.out_dim == 8
    assert (fmap(torch.randn(3, 8)) > 0).all()


def test_hybrid_patterns_ratios_and_state_size():
    common = dict(vocab_size=50, d_model=32, n_heads=2, max_len=64, conv_kernel=0)
    kinds = lambda m: [type(b.mixer).__name__ for b in m.blocks]  # noqa: E731
    m = models.build("hybrid", n_layers=4, pattern="LLLS", **common)
    assert kinds(m) == ["LinearAttention"] * 3 + ["SoftmaxAttention"]
    assert kinds(models.build("hybrid", n_layers=4, pattern="delta,softmax", **common)) == ["DeltaRule", "SoftmaxAttention"] * 2
    assert kinds(models.build("hybrid", n_layers=4, ratio="3:1", ratio_mixer="delta", **common)) == ["DeltaRule"] * 3 + ["SoftmaxAttention"]
    soft, lin = models.build("softmax", n_layers=1, **common), models.build("linear", n_layers=1, **common)
    assert m.state_size(100) == 3 * lin.state_size(100) + soft.state_size(100)
    gated = models.build("hybrid", n_layers=2, pattern="DS", layer_options={"delta": {"gated": True}}, **common)
    assert gated.blocks[0].mixer.gate is not None
    with pytest.raises(ValueError, match="multiple of the pattern length"):
        models.build("hybrid", n_layers=3, pattern="LS", **common)
    with pytest.raises(ValueError, match="use letters"):
        models.build("hybrid", n_layers=2, pattern="LX", **common)
    with pytest.raises(ValueError, match="ratio must look like"):
        models.build("hybrid", n_layers=2, ratio="three", **common)


@pytest.mark.parametrize("case", [dict(name="softmax"), dict(name="linear"), dict(name="linear", feature_map="taylor"),
                                  dict(name="linear", normalize="none"), dict(name="delta"),
                                  dict(name="delta", gated=True)])
def test_attention_view_reproduces_the_mixer_output(case):
    """weights @ values, through the output projection, is exactly what the mixer computes."""
    torch.manual_seed(0)
    opts = dict(case)
    model = models.build(opts.pop("name"), vocab_size=20, d_model=16, n_layers=1, n_heads=2, max_len=12, **opts)
    mixer = model.blocks[0].mixer
    x = torch.randn(3, 12, 16)
    view = mixer.attention(x)
    assert view.weights.shape == (3, 2, 12, 12)
    assert (view.weights.triu(1) == 0).all()  # causal
    mixed = mixer.merge_heads(view.weights @ view.values.float())
    torch.testing.assert_close(mixer.out(mixed), mixer(x), rtol=1e-4, atol=1e-5)


