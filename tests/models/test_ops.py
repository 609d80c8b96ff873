"""Kernels against naive per-token loops written here (float64), outputs and gradients."""
import pytest
import torch

from evalsuite.models import ops

torch.manual_seed(0)


def naive_linear(q, k, v, eps):
    phi_q, phi_k = torch.nn.functional.elu(q) + 1, torch.nn.functional.elu(k) + 1
    B, H, T, _ = q.shape
    out = torch.zeros_like(v)
    for b in range(B):
        for h in range(H):
            for t in range(T):
                w = torch.stack([phi_q[b, h, t] @ phi_k[b, h, j] for j in range(t + 1)])
                out[b, h, t] = (w[:, None] * v[b, h, :t + 1]).sum(0) / (w.sum() + eps)
    return out


def naive_delta(q, k, v, beta, s0, alpha=None):
    """S_t = alpha_t (I - beta_t k_t k_t^T) S_{t-1} + beta_t k_t v_t^T, written out literally."""
    B, H, T, dk = q.shape
    out = torch.zeros_like(v)
    state = s0.clone()
    eye = torch.eye(dk, dtype=q.dtype)
    for t in range(T):
        for b in range(B):
            for h in range(H):
                a = 1.0 if alpha is None else alpha[b, h, t]
                kt = k[b, h, t]
                state[b, h] = a * (eye - beta[b, h, t] * torch.outer(kt, kt)) @ state[b, h] \
                    + beta[b, h, t] * torch.outer(kt, v[b, h, t])
                out[b, h, t] = state[b, h].T @ q[b, h, t]
    return out, state


def rand(*shape, dtype=torch.float64):
    return torch.randn(*shape, dtype=dtype)


@pytest.mark.parametrize("mode", ops.MODES)
def test_linear_attention_matches_naive_loop_float64(mode):
    q, k, v = rand(2, 2, 13, 4), rand(2, 2, 13, 4), rand(2, 2, 13, 3)
    out = ops.linear_attention(q, k, v, mode=mode, chunk_size=5)
    torch.testing.assert_close(out, naive_linear(q, k, v, 1e-6), rtol=1e-10, atol=1e-10)


def test_linear_attention_modes_agree_float32_with_gradients():
    q, k, v = (rand(2, 3, 70, 8, dtype=torch.float32).requires_grad_() for _ in range(3))
    results = {}
    for mode in ops.MODES:
        out = ops.linear_attention(q, k, v, mode=mode, chunk_size=16)
        grads = torch.autograd.grad(out.square().sum(), (q, k, v))
        results[mode] = (out, *grads)
    for mode in ("chunk", "recurrent"):
        for a, b in zip(results[mode], results["quadratic"]):
            rel = (a - b).square().mean().sqrt() / b.square().mean().sqrt()
            assert rel < 1e-5, (mode, float(rel))


def unit(x):
    return torch.nn.functional.normalize(x, dim=-1)


@pytest.mark.parametrize("mode", ["chunk", "recurrent"])
def test_delta_rule_matches_naive_loop_with_initial_state(mode):
    q, k, v = unit(rand(2, 2, 11, 4)), unit(rand(2, 2, 11, 4)), rand(2, 2, 11, 3)
    beta, s0 = torch.rand(2, 2, 11, dtype=torch.float64), rand(2, 2, 4, 3)
    out, state = ops.delta_rule(q, k, v, beta, mode=mode, initial_state=s0, return_state=True, chunk_size=4)
    ref_out, ref_state = naive_delta(q, k, v, beta, s0)
    torch.testing.assert_close(out, ref_out, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(state, ref_state, rtol=1e-10, atol=1e-10)


def test_delta_chunk_and_recurrent_gradients_agree():
    q, k = (unit(rand(1, 2, 37, 6)).requires_grad_() for _ in range(2))
    v, s0 = rand(1, 2, 37, 5).requires_grad_(), rand(1, 2, 6, 5).requires_grad_()
    beta = torch.rand(1, 2, 37, dtype=torch.float64).requires_grad_()
    grads = {}
    for mode in ("chunk", "recurrent"):
        out, state = ops.delta_rule(q, k, v, beta, mode=mode, initial_state=s0, return_state=True, chunk_size=8)
        grads[mode] = torch.autograd.grad(out.sum() + state.square().sum(), (q, k, v, beta, s0))
    for a, b in zip(grads["chunk"], grads["recurrent"]):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-9)


def test_gradcheck_tiny():
    q, k = unit(rand(1, 1, 5, 3)).requires_grad_(), unit(rand(1, 1, 5, 3)).requires_grad_()
    v, beta = rand(1, 1, 5, 2).requires_grad_(), torch.rand(1, 1, 5, dtype=torch.float64).requires_grad_()
    assert torch.autograd.gradcheck(lambda *a: ops.delta_rule(*a, chunk_size=2), (q, k, v, beta))
    assert torch.autograd.gradcheck(lambda a, b, c: ops.linear_attention(a, b, c, chunk_size=2), (q, k, v))


def test_no_nan_at_long_length_float32():
    q, k, v = (torch.randn(1, 1, 16384, 16) for _ in range(3))
    assert torch.isfinite(ops.linear_attention(q, k, v)).all()
    assert torch.isfinite(ops.delta_rule(unit(q), unit(k), v, torch.rand(1, 1, 16384))).all()


@pytest.mark.parametrize("mode", ["chunk", "recurrent"])
def test_gated_delta_rule_matches_naive_loop(mode):
    q, k, v = unit(rand(2, 2, 13, 4)), unit(rand(2, 2, 13, 4)), rand(2, 2, 13, 3)
    beta, s0 = torch.rand(2, 2, 13, dtype=torch.float64), rand(2, 2, 4, 3)
    alpha = 0.05 + 0.95 * torch.rand(2, 2, 13, dtype=torch.float64)  # strong decay: products reach ~1e-10
    out, state = ops.delta_rule(q, k, v, beta, mode=mode, initial_state=s0, return_state=True, chunk_size=5,
                                log_alpha=alpha.log())
    ref_out, ref_state = naive_delta(q, k, v, beta, s0, alpha)
    torch.testing.assert_close(out, ref_out, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(state, ref_state, rtol=1e-10, atol=1e-10)


def test_gated_delta_gradients_and_gradcheck():
    q, k = unit(rand(1, 2, 21, 4)).requires_grad_(), unit(rand(1, 2, 21, 4)).requires_grad_()
    v, beta = rand(1, 2, 21, 3).requires_grad_(), torch.rand(1, 2, 21, dtype=torch.float64).requires_grad_()
    log_alpha = (-torch.rand(1, 2, 21, dtype=torch.float64)).requires_grad_()
    grads = {}
    for mode in ("chunk", "recurrent"):
        out, state = ops.delta_rule(q, k, v, beta, mode=mode, return_state=True, chunk_size=8, log_alpha=log_alpha)
        grads[mode] = torch.autograd.grad(out.sum() + state.square().sum(), (q, k, v, beta, log_alpha))
    for a, b in zip(grads["chunk"], grads["recurrent"]):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-9)
    small = [x[:, :1, :5].detach().requires_grad_() for x in (q, k, v, beta, log_alpha)]
    assert torch.autograd.gradcheck(lambda a, b, c, d, e: ops.delta_rule(a, b, c, d, chunk_size=2, log_alpha=e), small)


def test_delta_rule_float32_modes_agree_at_odd_length():
    q, k = unit(rand(2, 2, 150, 16, dtype=torch.float32)), unit(rand(2, 2, 150, 16, dtype=torch.float32))
    v, beta = rand(2, 2, 150, 16, dtype=torch.float32), torch.rand(2, 2, 150)
    s0 = rand(2, 2, 16, 16, dtype=torch.float32)
    a = ops.delta_rule(q, k, v, beta, mode="chunk", initial_state=s0, chunk_size=64)
    b = ops.delta_rule(q, k, v, beta, mode="recurrent", initial_state=s0)
    assert ((a - b).square().mean().sqrt() / b.square().mean().sqrt()) < 1e-5


def test_kernels_keep_float32_under_bf16_autocast():
    q, k, v = (torch.randn(1, 1, 40, 8, dtype=torch.bfloat16) for _ in range(3))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        lin = ops.linear_attention(q, k, v)
        delta, state = ops.delta_rule(unit(q.float()).bfloat16(), unit(k.float()).bfloat16(), v,
                                      torch.rand(1, 1, 40).bfloat16(), return_state=True)
    assert lin.dtype == torch.bfloat16 and state.dtype == torch.float32
    ref = ops.linear_attention(q.double(), k.double(), v.double())
    assert ((lin.double() - ref).abs().max()) < 0.05


@pytest.mark.parametrize("mode", ["chunk", "recurrent"])
def test_delta_rule_with_beta_up_to_2_matches_naive_loop(mode):
    """beta in (0, 2) (negative eigenvalues, Grazzi et al. 2024): the chunk form's triangular solve
    stays exact, forward, state and gradients, at a length that is not a multiple of the chunk."""
    q, k = (unit(rand(2, 2, 19, 4)).requires_grad_() for _ in range(2))
    v, s0 = rand(2, 2, 19, 3).requires_grad_(), rand(2, 2, 4, 3)
    beta = (2 * torch.rand(2, 2, 19, dtype=torch.float64)).requires_grad_()
    assert beta.max() > 1.5
    out, state = ops.delta_rule(q, k, v, beta, mode=mode, initial_state=s0, return_state=True, chunk_size=8)
    ref_out, ref_state = naive_delta(q, k, v, beta, s0)
    torch.testing.assert_close(out, ref_out, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(state, ref_state, rtol=1e-10, atol=1e-10)
    # gradients against a loop without in-place writes (naive_delta writes into its state)
    S, outs = s0.clone(), []
    for t in range(19):
        kt = k[:, :, t]
        S = S - beta[:, :, t, None, None] * kt[..., :, None] * (kt[..., None, :] @ S) \
            + beta[:, :, t, None, None] * kt[..., :, None] * v[:, :, t, None, :]
        outs.append((q[:, :, t, None, :] @ S)[..., 0, :])
    loop_out = torch.stack(outs, 2)
    torch.testing.assert_close(loop_out, ref_out.detach(), rtol=1e-10, atol=1e-10)
    g = torch.autograd.grad(out.sum() + state.square().sum(), (q, k, v, beta))
    g_ref = torch.autograd.grad(loop_out.sum() + S.square().sum(), (q, k, v, beta))
    for a, b in zip(g, g_ref):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-9)


def test_negative_eigenvalues_flip_the_state():
    """beta = 2 with a unit key is a reflection: writing nothing (v = 0) twice along one key negates
    the state's component along it and then restores it, which a beta in (0, 1) cannot do."""
    k = unit(rand(1, 1, 1, 4)).expand(1, 1, 2, 4)
    s0 = rand(1, 1, 4, 3)
    _, once = ops.delta_rule(k[:, :, :1], k[:, :, :1], torch.zeros(1, 1, 1, 3, dtype=torch.float64),
                             torch.full((1, 1, 1), 2.0, dtype=torch.float64), initial_state=s0, return_state=True)
    _, twice = ops.delta_rule(k, k, torch.zeros(1, 1, 2, 3, dtype=torch.float64),
                              torch.full((1, 1, 2), 2.0, dtype=torch.float64), initial_state=s0, return_state=True)
    along = k[0, 0, 0] @ s0[0, 0]
    torch.testing.assert_close(k[0, 0, 0] @ once[0, 0], -along)
    torch.testing.assert_close(twice, s0)


@pytest.mark.parametrize("T, C", [(8, 8), (8, 16), (13, 4), (16, 4)], ids=["one-chunk", "shorter-than-a-chunk",
                                                                            "ragged-chunks", "whole-chunks"])
@pytest.mark.parametrize("gated", [False, True], ids=["plain", "gated"])
def test_delta_rule_from_the_zero_state_matches_the_naive_loop(T, C, gated):
    """Without an initial state the chunked form skips the products with the (zero) state and,
    unless asked for it, the last state: the outputs and the state are the naive loop's."""
    q, k, v = unit(rand(2, 2, T, 4)), unit(rand(2, 2, T, 4)), rand(2, 2, T, 3)
    beta = torch.rand(2, 2, T, dtype=torch.float64)
    log_alpha = -torch.rand(2, 2, T, dtype=torch.float64) / 4 if gated else None
    ref_out, ref_state = naive_delta(q, k, v, beta, torch.zeros(2, 2, 4, 3, dtype=torch.float64),
                                     None if log_alpha is None else log_alpha.exp())
    out, state = ops.delta_rule(q, k, v, beta, chunk_size=C, return_state=True, log_alpha=log_alpha)
    torch.testing.assert_close(out, ref_out, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(state, ref_state, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(ops.delta_rule(q, k, v, beta, chunk_size=C, log_alpha=log_alpha), ref_out,
                               rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("T, C", [(8, 8), (8, 64)], ids=["one-chunk", "shorter-than-a-chunk"])
def test_linear_attention_in_one_chunk_matches_the_naive_loop(T, C):
    q, k, v = rand(2, 2, T, 4), rand(2, 2, T, 4), rand(2, 2, T, 3)
    torch.testing.assert_close(ops.linear_attention(q, k, v, chunk_size=C), naive_linear(q, k, v, 1e-6),
                               rtol=1e-10, atol=1e-10)
