"""Recurrent decoding: token-by-token steps give the parallel forward pass's logits."""
import pytest
import torch

from evalsuite import models

CASES = {
    "softmax": dict(name="softmax"),
    "linear-elu1": dict(name="linear"),
    "linear-taylor-rmsnorm": dict(name="linear", feature_map="taylor", normalize="rmsnorm"),
    "linear-taylor-based": dict(name="linear", feature_map="taylor", feature_dim=4),
    "linear-performer": dict(name="linear", feature_map="performer"),
    "linear-dpfp": dict(name="linear", feature_map="dpfp", feature_map_options={"nu": 2}),
    "delta": dict(name="delta", chunk_size=4),
    "gated-delta": dict(name="delta", gated=True, chunk_size=4),
    "hybrid": dict(name="hybrid", pattern="LDS"),
    "retnet": dict(name="gla", gate="fixed", chunk_size=4),
    "mamba2-gate": dict(name="gla", gate="scalar", chunk_size=4),
    "gla": dict(name="gla", gate="vector", chunk_size=4),
    "swa-window-4": dict(name="swa", window=4),
    "based": dict(name="based", window=3, feature_dim=4),
}


@pytest.mark.parametrize("case", CASES)
def test_step_logits_equal_forward(case):
    torch.manual_seed(0)
    opts = dict(CASES[case])
    n_layers = 3 if opts["name"] == "hybrid" else 2
    model = models.build(opts.pop("name"), vocab_size=30, d_model=16, n_layers=n_layers, n_heads=2, max_len=11,
                         mlp_ratio=2.0, **opts).eval()
    tokens = torch.randint(0, 30, (3, 11))
    with torch.no_grad():
        parallel = model(tokens)
    state = model.init_state(3)
    stepped = []
    for t in range(tokens.shape[1]):
        logits, state = model.step(tokens[:, t], state)
        stepped.append(logits)
    torch.testing.assert_close(torch.stack(stepped, 1), parallel, rtol=1e-4, atol=1e-4)


def test_fixed_state_does_not_grow():
    model = models.build("delta", vocab_size=30, d_model=16, n_layers=1, n_heads=2, positions="none")
    state = model.init_state(2)
    sizes = set()
    for _ in range(50):
        _, state = model.step(torch.zeros(2, dtype=torch.long), state)
        sizes.add(sum(t.numel() for t in state["layers"][0] if t is not None))
    assert sizes == {2 * (3 * 16 + 2 * 8 * 8)}  # conv window + S per head; matches state_size for a batch of 2
    assert model.state_size(10**6) * 2 == sizes.pop()
