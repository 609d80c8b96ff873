"""Every registered mixer, at its default options, through the same checks: no test file is
edited when a mixer is added. Outputs are causal and finite, step-by-step decoding gives the
parallel forward pass's logits, ``state_size(T)`` is what decoding carries after T tokens, and
the attention view (the analyses' reading of the mixer), read as the mixer reads, reproduces its
output."""
import math

import pytest
import torch

from evalsuite import models

NAMES = models.names()
# options whose decoding path differs from the default's (maps, normalisations, gates, windows)
VARIANTS = {
    "linear-taylor-rmsnorm": dict(name="linear", feature_map="taylor", normalize="rmsnorm"),
    "linear-taylor-based": dict(name="linear", feature_map="taylor", feature_dim=4),
    "linear-performer": dict(name="linear", feature_map="performer"),
    "linear-dpfp": dict(name="linear", feature_map="dpfp", feature_map_options={"nu": 2}),
    "delta-chunked": dict(name="delta", chunk_size=4),
    "gated-delta": dict(name="delta", gated=True, chunk_size=4),
    "gated-delta-channel": dict(name="delta", gated=True, gate="channel", feature_dim=4),
    "deltaproduct-3-negative": dict(name="deltaproduct", householder=3, negative_eigenvalues=True, chunk_size=5),
    "gated-deltaproduct": dict(name="deltaproduct", gated=True, chunk_size=4),
    "gated-deltaproduct-channel": dict(name="deltaproduct", gated=True, gate="channel", feature_dim=4),
    "hybrid-LDS": dict(name="hybrid", pattern="LDS", n_layers=3),
    "retnet": dict(name="gla", gate="fixed", chunk_size=4),
    "mamba2-gate": dict(name="gla", gate="scalar", chunk_size=4),
    "gla-chunked": dict(name="gla", gate="vector", chunk_size=4),
    "gla-output-gate": dict(name="gla", gate="vector", output_gate=True, chunk_size=4),
    "retnet-faithful": dict(name="gla", gate="fixed", output_gate=True, value_expansion=2, n_heads=4, chunk_size=4),
    "mamba2-faithful": dict(name="gla", gate="scalar", step_size=True, skip=True, output_gate=True, chunk_size=4),
    "swa-window-4": dict(name="swa", window=4),
    "based-small": dict(name="based", window=3, feature_dim=4),
    "delta-feature-dim-4": dict(name="delta", feature_dim=4, chunk_size=4),
    "gated-delta-feature-dim-12": dict(name="delta", gated=True, feature_dim=12, chunk_size=4),
    "gla-feature-dim-4": dict(name="gla", gate="vector", feature_dim=4, chunk_size=4),
    "mamba2-feature-dim-12": dict(name="gla", gate="scalar", feature_dim=12, chunk_size=4),
    "softmax-sinusoidal": dict(name="softmax", positions="sinusoidal"),
    "softmax-rope": dict(name="softmax", positions="rope"),
    "softmax-xpos": dict(name="softmax", positions="xpos"),
    "swa-rope-window-4": dict(name="swa", window=4, positions="rope"),
    "hybrid-LS-xpos": dict(name="hybrid", pattern="LS", positions="xpos"),
    # the state's value side set apart from the width (d_v != head size): a d_k x d_v state
    "linear-value-dim-3": dict(name="linear", feature_dim=4, value_dim=3),
    "linear-z-value-dim-12": dict(name="linear", value_dim=12),
    "delta-value-dim-5": dict(name="delta", feature_dim=4, value_dim=5, chunk_size=4),
    "gated-delta-value-dim-12": dict(name="delta", gated=True, value_dim=12, chunk_size=4),
    "deltaproduct-value-dim-3": dict(name="deltaproduct", householder=2, value_dim=3, chunk_size=5),
    "gla-value-dim-6": dict(name="gla", gate="vector", value_dim=6, chunk_size=4),
    "mamba2-value-dim-3": dict(name="gla", gate="scalar", step_size=True, skip=True, value_dim=3, chunk_size=4),
    "rwkv7-value-dim-5": dict(name="rwkv7", feature_dim=4, value_dim=5),
    "based-value-dim-3": dict(name="based", window=3, feature_dim=4, value_dim=3),
}
CASES = {**{name: dict(name=name) for name in NAMES}, **VARIANTS}  # every registered mixer, then the variants


def build(name, **extra):
    torch.manual_seed(0)
    options = {"vocab_size": 20, "d_model": 16, "n_layers": 2, "n_heads": 2, "max_len": 24, **extra}
    return models.build(name, **options).eval()


def test_the_registry_has_the_zoo():
    assert {"softmax", "linear", "delta", "gla", "swa", "based", "hybrid"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_outputs_are_causal_and_finite(name):
    model = build(name)
    tokens = torch.randint(0, 20, (2, 24))
    changed = tokens.clone()
    changed[:, 13:] = (changed[:, 13:] + 1) % 20  # change only the future of position 12
    with torch.no_grad():
        a, b = model(tokens), model(changed)
    assert a.shape == (2, 24, 20) and torch.isfinite(a).all()
    torch.testing.assert_close(a[:, :13], b[:, :13], rtol=0, atol=1e-5)
    assert not torch.allclose(a[:, 13:], b[:, 13:])


@pytest.mark.parametrize("case", CASES)
def test_decoding_equals_the_parallel_forward(case):
    options = dict(CASES[case])
    model = build(options.pop("name"), mlp_ratio=2.0, **options)
    tokens = torch.randint(0, 20, (3, 24))
    with torch.no_grad():
        parallel = model(tokens)
        state = model.init_state(3)
        stepped = []
        for t in range(tokens.shape[1]):
            logits, state = model.step(tokens[:, t], state)
            stepped.append(logits)
    torch.testing.assert_close(torch.stack(stepped, 1), parallel, rtol=1e-4, atol=1e-4)


def carried(state) -> int:
    """Floats a decoding state holds for one sequence: convolution windows, fixed states, and the
    entries a KV cache has written so far."""
    total = 0
    for conv, mixer_state in state["layers"]:
        total += conv.numel() if conv is not None else 0
        if isinstance(mixer_state, dict):  # a KV cache
            total += mixer_state["cache"][:, :, :, :mixer_state["length"]].numel()
        else:
            parts = mixer_state if isinstance(mixer_state, tuple) else (mixer_state,)
            total += sum(t.numel() for t in parts if t is not None)
    return total


@pytest.mark.parametrize("case", CASES)
def test_state_size_is_what_decoding_carries(case):
    """``state_size(T)`` per sequence equals the floats of the decoding state after T tokens, for T
    inside and past a window."""
    options = dict(CASES[case])
    model = build(options.pop("name"), **{"positions": "none", **options})
    for T in (3, 20):
        state = model.init_state(1, max_len=T)
        with torch.no_grad():
            for _ in range(T):
                _, state = model.step(torch.zeros(1, dtype=torch.long), state)
        assert model.state_size(T) == carried(state), T


@pytest.mark.parametrize("case", CASES)
def test_the_attention_view_reproduces_the_mixer_output(case):
    options = dict(CASES[case])
    model = build(options.pop("name"), **options)
    x = torch.randn(2, 12, 16)
    for block in model.blocks:
        mixer = block.mixer
        view = mixer.attention(x)
        n = view.substeps  # writes per token (DeltaProduct: one column per write)
        assert view.weights.shape == (2, model.blocks[0].mixer.n_heads, 12, 12 * n) and view.values.shape[2] == view.keys.shape[2] == 12 * n
        future = torch.arange(12)[None, :] < torch.arange(12 * n)[:, None] // n  # [T, T n]: column of a later token
        assert (view.weights[..., future.T] == 0).all()
        torch.testing.assert_close(mixer.read(view.weights @ view.values.float(), x), mixer(x), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("case", [c for c in CASES if "value-dim" in c])
def test_the_state_sides_are_the_ones_asked_for(case):
    """``value_dim`` sets d_v apart from the width: the stored section reads back as (d_k, d_v) and
    the first fixed state is d_k x d_v per head."""
    options = dict(CASES[case])
    name = options.pop("name")
    model = build(name, positions="none", **options)
    mixer = next(b.mixer for b in model.blocks if b.mixer.key_features() is not None)
    assert mixer.value_features() == options["value_dim"]
    assert models.state_sides({"name": name, "d_model": 16, "n_layers": 2, "n_heads": 2, **options}) == (
        mixer.key_features(), options["value_dim"])
    state = mixer.init_state(1, 8)
    state = state[0] if isinstance(state, tuple) else state
    assert state.shape[-2:][1] - (getattr(mixer.options, "normalize", None) == "z") == options["value_dim"]


def test_a_hybrid_sets_its_layers_sides_through_layer_options():
    model = build("hybrid", pattern="LDS", n_layers=3, positions="none",
                  layer_options={"linear": {"value_dim": 3, "feature_dim": 4}, "delta": {"value_dim": 5}})
    sides = [(b.mixer.key_features(), b.mixer.value_features()) for b in model.blocks]
    assert sides == [(4, 3), (8, 5), (None, None)]


def test_a_fixed_state_does_not_grow():
    model = models.build("delta", vocab_size=30, d_model=16, n_layers=1, n_heads=2, positions="none")
    state = model.init_state(2)
    sizes = set()
    for _ in range(50):
        _, state = model.step(torch.zeros(2, dtype=torch.long), state)
        sizes.add(sum(t.numel() for t in state["layers"][0] if t is not None))
    assert sizes == {2 * (3 * 16 + 2 * 8 * 8)}  # conv window + S per head; matches state_size for a batch of 2
    assert model.state_size(10**6) * 2 == sizes.pop()


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("kernel", [0, 3])
def test_zoology_units_are_four_times_the_mixers_floats(case, kernel):
    """Zoology's logged state (``_compute_state_size``): 4 x the sum of each layer's mixer state,
    the short convolution not counted; ``zoology_units`` gets it from our figure and the config."""
    from evalsuite.models.state import zoology_units

    options = dict(CASES[case])
    model = build(options.pop("name"), conv_kernel=kernel, **{"positions": "none", **options})
    T = 20
    want = 4 * sum(block.mixer.state_size(T) for block in model.blocks)
    section = {"n_layers": len(model.blocks), "d_model": model.d_model, "conv_kernel": kernel}
    assert zoology_units(model.state_size(T), section) == want


def test_per_channel_gates_against_a_naive_float64_loop():
    """The gated delta rule with one decay per key channel (Kimi Delta Attention's diagonal decay),
    S_t = (I - beta_t k_t k_t^T) Diag(alpha_t) S_{t-1} + beta_t k_t v_t^T and o_t = S_t^T q_t, written
    out with explicit matrices in float64, against the mixer's forward pass and its attention view."""
    from evalsuite.models.delta import DeltaRule

    torch.manual_seed(0)
    mixer = DeltaRule(16, 2, DeltaRule.Options(gated=True, gate="channel", feature_dim=3)).double()
    with torch.no_grad():
        mixer.gate.weight.normal_(0, 2.0)  # decays spread over (0, 1), not all near the initial 0.98
    x = torch.randn(2, 9, 16, dtype=torch.float64)
    q, k, v, beta, log_alpha = mixer._project(x)  # [B, T, H, d], [B, T, H, n, d], [B, T, H, n], [B, T, H, dk]
    k, v, beta = k[..., 0, :], v[..., 0, :], beta[..., 0]  # one step per token (n = 1)
    alpha = log_alpha.exp()
    assert alpha.min() < 0.5 and alpha.max() > 0.9
    out = torch.zeros_like(v)
    for b in range(2):
        for h in range(2):
            S = torch.zeros(3, 8, dtype=torch.float64)
            for t in range(9):
                kt = k[b, t, h][:, None]
                S = (torch.eye(3, dtype=torch.float64) - beta[b, t, h] * kt @ kt.T) @ torch.diag(alpha[b, t, h]) @ S \
                    + beta[b, t, h] * kt @ v[b, t, h][None, :]
                out[b, t, h] = S.T @ q[b, t, h]
    with torch.no_grad():
        torch.testing.assert_close(mixer(x), mixer.out(mixer.merge_heads(out.transpose(1, 2))), rtol=1e-9, atol=1e-9)
        view = mixer.attention(x)
        torch.testing.assert_close(mixer.read(view.weights @ view.values, x), mixer(x), rtol=1e-9, atol=1e-9)
    with pytest.raises(ValueError, match="set gated true"):
        DeltaRule.Options(gate="channel")


def test_rwkv7_against_the_papers_row_form_in_float64():
    """RWKV-7's state update as its paper writes it (S is d_v x d_k, S_t = S_{t-1} (Diag(w_t) -
    kappa_t^T (a_t * kappa_t)) + v_t^T ktilde_t, o_t = S_t r_t), looped in float64 with explicit
    matrices, against the mixer (which keeps S transposed) and its attention view; the state is
    the formula's H x d_k x d_v per layer (Zoology's RWKV-7 state size was 4 to 16x off, its issue 34)."""
    from evalsuite.models.rwkv7 import RWKV7

    torch.manual_seed(0)
    mixer = RWKV7(16, 2, RWKV7.Options(feature_dim=3)).double()
    with torch.no_grad():
        for lin in (mixer.decay, mixer.rate):
            lin.weight.normal_(0, 2.0)  # decays and rates spread over their ranges
        mixer.xi.uniform_(0.2, 1.5)
        mixer.alpha.uniform_(0.0, 1.0)
    x = torch.randn(2, 9, 16, dtype=torch.float64)
    r, k, v, w, a, kappa = mixer._project(x)  # [B, T, H, d]
    assert w.min() > math.exp(-math.exp(-0.5)) - 1e-12 and w.max() < 1 and a.min() > 0 and a.max() < 1
    out = torch.zeros_like(v)
    for b in range(2):
        for h in range(2):
            S = torch.zeros(8, 3, dtype=torch.float64)  # d_v x d_k
            for t in range(9):
                kap = kappa[b, t, h][None, :]
                S = S @ (torch.diag(w[b, t, h]) - kap.T @ (a[b, t, h][None, :] * kap)) + v[b, t, h][:, None] @ k[b, t, h][None, :]
                out[b, t, h] = S @ r[b, t, h]
    with torch.no_grad():
        torch.testing.assert_close(mixer(x), mixer.out(mixer.merge_heads(out.transpose(1, 2))), rtol=1e-9, atol=1e-9)
        view = mixer.attention(x)
        torch.testing.assert_close(mixer.read(view.weights @ view.values, x), mixer(x), rtol=1e-9, atol=1e-9)
    assert mixer.state_size(100) == 2 * 3 * 8 and mixer.key_features() == 3
    wide = RWKV7(64, 4, RWKV7.Options())
    assert wide.state_size(1) == 64 * 64 // 4  # H x (d/H)^2 = d^2 / H


@pytest.mark.parametrize("n_layers", [1, 2, 4], ids=lambda n: f"{n}-layers")
def test_rwkv7_starts_its_decays_at_the_papers_ramp(n_layers):
    """RWKV-7 initialises w_0[n] = -7 + 5 (n / (C - 1))^(0.85 + (l / (L - 1))^0.5) + 0.5 over the C
    key channels of layer l of L (RWKV-LM's x070 time mixing, written out here as a loop), so a
    freshly built model's decays run from about 0.999 down to 0.896 on every layer; with
    decay_init=uniform (w_0 = 0) every decay starts at exp(-e^{-1/2} / 2) = 0.738."""
    from evalsuite.models import build

    def papers_w0(C, layer, L):
        ratio = layer / (L - 1) if L > 1 else 0.0
        return [-7 + 5 * (n / (C - 1)) ** (0.85 + 1.0 * ratio ** 0.5) + 0.5 for n in range(C)]

    for init in ("rwkv7", "uniform"):
        model = build("rwkv7", vocab_size=16, d_model=32, n_layers=n_layers, n_heads=2, feature_dim=8, decay_init=init,
                      max_len=8)
        x = torch.randn(3, 5, 32)
        for layer, block in enumerate(model.blocks):
            mixer = block.mixer
            expected = papers_w0(16, layer, n_layers) if init == "rwkv7" else [0.0] * 16
            torch.testing.assert_close(mixer.w0, torch.tensor(expected, dtype=torch.float32), rtol=0, atol=1e-5)
            with torch.no_grad():
                mixer.decay.weight.zero_()  # the data-dependent part aside: the decays the offset alone sets
                w = mixer._project(x)[3]  # [B, T, H, dk]
            closed = torch.exp(-math.exp(-0.5) * torch.sigmoid(torch.tensor(expected))).view(2, 8)
            torch.testing.assert_close(w, closed.expand_as(w), rtol=0, atol=1e-6)
            if init == "rwkv7":
                assert 0.999 < w.max() < 1 and 0.895 < w.min() < 0.897  # exp(-e^-0.5 sigmoid(-6.5)), ... (-1.5)
            else:
                assert torch.allclose(w, torch.tensor(math.exp(-math.exp(-0.5) / 2)))  # 0.738
