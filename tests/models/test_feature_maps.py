"""Feature maps against closed forms and independent loops."""
import math

import pytest
import torch

from evalsuite import models
from evalsuite.models import feature_maps as fm, ops

torch.manual_seed(0)


@pytest.mark.parametrize("name", fm.names())
def test_declared_nonnegative_kernels_are_nonnegative(name):
    fmap = fm.get(name, 8)
    q, k = torch.randn(500, 8, dtype=torch.float64) * 3, torch.randn(500, 8, dtype=torch.float64) * 3
    kernel = (fmap.forward_query(q.float()) @ fmap.forward_key(k.float()).T)
    assert fmap(q.float()).shape[-1] == fmap.out_dim
    if fmap.nonnegative:  # up to float32 rounding, relative to the features' norms (ReBased's (z.z')^2 can round to -1e-8)
        norms = fmap.forward_query(q.float()).norm(dim=-1)[:, None] * fmap.forward_key(k.float()).norm(dim=-1)[None]
        assert (kernel >= -1e-6 * norms).all()
    else:
        assert (kernel < 0).any()  # the flag is not merely conservative


def test_taylor_kernel_closed_form():
    d = 6
    q, k = torch.randn(40, d, dtype=torch.float64), torch.randn(40, d, dtype=torch.float64)
    taylor = fm.get("taylor", d)
    assert taylor.out_dim == 1 + d + d * (d + 1) // 2
    dot = q @ k.T
    torch.testing.assert_close(taylor(q) @ taylor(k).T, 1 + dot / math.sqrt(d) + dot ** 2 / (2 * d),
                               rtol=1e-12, atol=1e-12)


def test_rebased_kernel_is_the_papers_square_of_the_normalised_affine_dot_product():
    """ReBased (Aksenov et al. 2024): K(q, k) = ((gamma_q norm(q) + beta_q) . (gamma_k norm(k) + beta_k))^2
    with norm(x) = (x - mean) / sqrt(var + eps) over the head, written out in a float64 loop with
    learned gamma and beta of our choosing; the constant and linear terms of Taylor are gone, so a
    key orthogonal to the query after the affine map gets weight 0."""
    d = 6
    rebased = fm.get("rebased", d).double()
    assert rebased.out_dim == d * (d + 1) // 2 and rebased.nonnegative
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in (rebased.query_gamma, rebased.key_gamma, rebased.query_beta, rebased.key_beta):
            p.copy_(torch.randn(d, generator=gen, dtype=torch.float64))
    q, k = torch.randn(7, d, dtype=torch.float64), torch.randn(9, d, dtype=torch.float64)

    def z(x, gamma, beta):
        out = []
        for row in x.tolist():
            mean = sum(row) / d
            var = sum((v - mean) ** 2 for v in row) / d
            out.append([g * (v - mean) / math.sqrt(var + fm.ReBased.EPS) + b for v, g, b in zip(row, gamma, beta)])
        return out

    zq = z(q, rebased.query_gamma.tolist(), rebased.query_beta.tolist())
    zk = z(k, rebased.key_gamma.tolist(), rebased.key_beta.tolist())
    expected = torch.tensor([[sum(a * b for a, b in zip(x, y)) ** 2 for y in zk] for x in zq], dtype=torch.float64)
    torch.testing.assert_close(rebased.forward_query(q) @ rebased.forward_key(k).T, expected, rtol=1e-12, atol=1e-12)
    fresh = fm.get("rebased", d)  # starts at gamma 1, beta 0: the plain square of the normalised dot product
    assert torch.equal(fresh.query_gamma, torch.ones(d)) and torch.equal(fresh.key_beta, torch.zeros(d))


@pytest.mark.parametrize("nu", [1, 2, 3])
def test_dpfp_matches_the_paper_loop(nu):
    d = 4
    x = torch.randn(5, d, dtype=torch.float64)
    dpfp = fm.get("dpfp", d, nu=nu)
    assert dpfp.out_dim == 2 * d * nu
    expected = torch.zeros(5, 2 * d * nu, dtype=torch.float64)
    for n in range(5):
        r = [max(float(x[n, i]), 0.0) for i in range(d)] + [max(-float(x[n, i]), 0.0) for i in range(d)]
        for j in range(1, nu + 1):
            for i in range(2 * d):
                expected[n, (j - 1) * 2 * d + i] = r[i] * r[(i - j) % (2 * d)]
    torch.testing.assert_close(dpfp(x), expected)
    assert (dpfp(x) >= 0).all()


def test_dpfp_rejects_bad_nu():
    with pytest.raises(ValueError, match="nu must be an integer"):
        fm.get("dpfp", 4, nu=0)


def test_performer_estimate_improves_with_more_features():
    d = 8
    q, k = torch.randn(64, d) * 0.5, torch.randn(64, d) * 0.5
    exact = torch.exp(q @ k.T / math.sqrt(d))
    errors = {}
    for m in (8, 64, 512, 4096):
        trials = []
        for seed in range(5):
            torch.manual_seed(seed)
            perf = fm.get("performer", d, n_features=m)
            trials.append(((perf(q) @ perf(k).T - exact).abs() / exact).mean())
        errors[m] = float(torch.stack(trials).mean())
    values = list(errors.values())
    assert all(a > b for a, b in zip(values, values[1:])), errors
    assert errors[4096] < 0.05, errors


def test_performer_stabilised_attention_equals_the_estimator_and_is_fixed_between_resamples():
    d = 8
    perf = fm.get("performer", d, n_features=32)
    assert "projection" in perf.state_dict()  # a buffer: saved with the model, not trained
    q, k, v = torch.randn(1, 1, 20, d), torch.randn(1, 1, 20, d) * 3, torch.randn(1, 1, 20, 4)
    out = ops.linear_attention(q, k, v, feature_map=perf, mode="chunk", chunk_size=8, eps=1e-12)
    phi_q, phi_k = perf(q), perf(k)  # the unbiased, unstabilised estimator
    ref = ops.linear_attention(phi_q, phi_k, v, feature_map=None, mode="quadratic", eps=0.0)
    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-5)
    before = perf.projection.clone()
    perf(q)
    assert torch.equal(perf.projection, before)
    perf.resample()
    assert not torch.equal(perf.projection, before)


@pytest.mark.parametrize("scale", [1.0, 2.0], ids=["unit-variance", "trained-scale"])
@pytest.mark.parametrize("d", [16, 64, 128], ids=lambda d: f"head{d}")
def test_performer_layer_is_the_exact_ratio_estimator_at_any_head_size(d, scale):
    """With the default eps (1e-6) the layer's output equals the FAVOR+ ratio estimator computed
    from the unshifted features with no eps at all, in float64, to 1e-3 relative."""
    torch.manual_seed(d)
    perf = fm.get("performer", d).double()
    T = 40
    q, k = torch.randn(2, 2, T, d, dtype=torch.float64) * scale, torch.randn(2, 2, T, d, dtype=torch.float64) * scale
    v = torch.randn(2, 2, T, 8, dtype=torch.float64)
    out = ops.linear_attention(q, k, v, feature_map=perf, mode="chunk", chunk_size=16)  # eps 1e-6
    phi_q, phi_k = perf(q), perf(k)                                   # the estimator's own features
    scores = (phi_q @ phi_k.transpose(-1, -2)).tril()
    exact = (scores @ v) / scores.sum(-1, keepdim=True)               # no eps
    rel = (out - exact).norm(dim=-1) / exact.norm(dim=-1)
    assert float(rel.max()) < 1e-3
    phi_q, phi_k = ops.apply_feature_map(perf, q, k)                  # what the layer uses
    z = (phi_q @ phi_k.transpose(-1, -2)).tril().sum(-1)
    assert float(z.min()) >= 1 - 1e-12  # every denominator is at least 1, far above eps


def test_performer_decoding_keeps_the_ratio_exact():
    model = models.build("linear", vocab_size=20, d_model=128, n_layers=1, n_heads=1, max_len=24,
                         feature_map="performer").double().eval()
    tokens = torch.randint(0, 20, (2, 24))
    full = model(tokens)
    state = model.init_state(2)
    stepped = []
    for t in range(24):
        logits, state = model.step(tokens[:, t], state)
        stepped.append(logits)
    torch.testing.assert_close(torch.stack(stepped, 1), full, rtol=1e-6, atol=1e-6)


def test_hedgehog_starts_at_identity_inside_a_model():
    model = models.build("linear", vocab_size=20, d_model=16, n_layers=1, n_heads=2, max_len=8, feature_map="hedgehog")
    hedgehog = model.blocks[0].mixer.feature_map
    x = torch.randn(3, 8)
    torch.testing.assert_close(hedgehog.forward_key(x), torch.softmax(torch.cat([x, -x], -1), -1))
    assert hedgehog.query_proj is not hedgehog.key_proj  # queries and keys are mapped differently once trained


def test_identity_map_refuses_the_z_denominator():
    with pytest.raises(ValueError, match="can be negative"):
        models.build("linear", vocab_size=20, d_model=16, n_layers=1, n_heads=1, max_len=8, feature_map="identity")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=["fp32", "fp64", "bf16"])
def test_elu1_has_the_composed_forms_values_and_gradients_bit_for_bit(dtype):
    """elu1's own backward (min(phi, 1)) against autograd through relu(x) + exp(min(x, 0)),
    including 0, -0 and values far out on both sides; and under vmap (grouped training)."""
    elu1 = fm.get("elu1", 4)
    x = torch.cat([torch.randn(500, dtype=dtype) * 5, torch.tensor([0.0, -0.0, -50.0, 30.0], dtype=dtype)])
    x.requires_grad_()
    g = torch.randn_like(x)
    composed = torch.relu(x) + torch.exp(torch.clamp(x, max=0))
    ours = elu1(x)
    assert torch.equal(ours, composed)
    assert torch.equal(torch.autograd.grad(ours, x, g)[0], torch.autograd.grad(composed, x, g)[0])
    batched = torch.func.vmap(elu1)(x.detach().reshape(4, -1))
    assert torch.equal(batched, composed.detach().reshape(4, -1))
