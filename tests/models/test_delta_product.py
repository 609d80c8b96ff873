"""DeltaProduct (``ops.delta_product``) against its definition written out in float64 with explicit
matrices: per token, the state is decayed once and then edited by n generalised Householder
factors, H_{t,s} = I - beta_{t,s} k_{t,s} k_{t,s}^T, each with its write; the read is after the
last one. The kernel runs it as the delta rule on n T sub-steps (chunked and recurrent)."""
import pytest
import torch

from evalsuite.models import ops


def naive_delta_product(q, k, v, beta, s0, alpha=None):
    """S <- Diag(alpha_t) S (or alpha_t S), then for s = 1..n: S <- H_{t,s} S + beta_{t,s} k_{t,s} v_{t,s}^T;
    o_t = S^T q_t. Every matrix built explicitly."""
    B, H, T, n, dk = k.shape
    out = torch.zeros(B, H, T, v.shape[-1], dtype=q.dtype)
    state = s0.clone()
    eye = torch.eye(dk, dtype=q.dtype)
    for b in range(B):
        for h in range(H):
            S = state[b, h]
            for t in range(T):
                if alpha is not None:
                    a = alpha[b, h, t]
                    S = (torch.diag(a) if a.dim() else a * eye) @ S
                for s in range(n):
                    kt, bt = k[b, h, t, s], beta[b, h, t, s]
                    S = (eye - bt * torch.outer(kt, kt)) @ S + bt * torch.outer(kt, v[b, h, t, s])
                out[b, h, t] = S.T @ q[b, h, t]
            state[b, h] = S
    return out, state


def unit(x):
    return torch.nn.functional.normalize(x, dim=-1)


def inputs(n, T=11, dk=4, dv=3, gate=None, seed=0):
    g = torch.Generator().manual_seed(seed)
    r = lambda *s: torch.randn(*s, generator=g, dtype=torch.float64)  # noqa: E731
    q, k, v = unit(r(2, 2, T, dk)), unit(r(2, 2, T, n, dk)), r(2, 2, T, n, dv)
    beta = 2 * torch.rand(2, 2, T, n, generator=g, dtype=torch.float64)  # (0, 2): eigenvalues in (-1, 1)
    alpha = None
    if gate == "scalar":
        alpha = 0.1 + 0.9 * torch.rand(2, 2, T, generator=g, dtype=torch.float64)
    elif gate == "channel":
        alpha = 0.1 + 0.9 * torch.rand(2, 2, T, dk, generator=g, dtype=torch.float64)
    return q, k, v, beta, r(2, 2, dk, dv), alpha


CASES = [(n, gate, mode) for n in (1, 2, 3) for gate in (None, "scalar", "channel") for mode in ("chunk", "recurrent")
         if not (gate == "channel" and mode == "chunk")]


@pytest.mark.parametrize("n,gate,mode", CASES, ids=[f"n{n}-{gate or 'ungated'}-{mode}" for n, gate, mode in CASES])
def test_delta_product_matches_the_householder_products(n, gate, mode):
    q, k, v, beta, s0, alpha = inputs(n, gate=gate)
    out, state = ops.delta_product(q, k, v, beta, mode=mode, initial_state=s0, return_state=True, chunk_size=5,
                                   log_alpha=None if alpha is None else alpha.log())
    ref_out, ref_state = naive_delta_product(q, k, v, beta, s0, alpha)
    torch.testing.assert_close(out, ref_out, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(state, ref_state, rtol=1e-10, atol=1e-10)


def test_one_step_per_token_is_the_delta_rule():
    q, k, v, beta, s0, alpha = inputs(1, gate="scalar")
    want = ops.delta_rule(q, k[:, :, :, 0], v[:, :, :, 0], beta[..., 0], initial_state=s0, log_alpha=alpha.log(),
                          chunk_size=4)
    torch.testing.assert_close(ops.delta_product(q, k, v, beta, initial_state=s0, log_alpha=alpha.log(), chunk_size=4),
                               want, rtol=0, atol=0)


def test_two_reflections_make_a_rotation():
    """With beta = 2 each factor is a reflection (det -1); two compose to a rotation (orthogonal,
    det +1), which no single factor is unless it is the identity (I - beta k k^T is orthogonal only
    at beta 0 or 2). A token with v = 0 rotates the state: S_t = R S_{t-1}."""
    k = unit(torch.randn(1, 1, 1, 2, 3, dtype=torch.float64))
    v = torch.zeros(1, 1, 1, 2, 3, dtype=torch.float64)
    s0 = torch.randn(1, 1, 3, 3, dtype=torch.float64)
    beta = torch.full((1, 1, 1, 2), 2.0, dtype=torch.float64)
    _, state = ops.delta_product(torch.zeros(1, 1, 1, 3, dtype=torch.float64), k, v, beta, initial_state=s0,
                                 return_state=True, mode="recurrent")
    transition = state[0, 0] @ torch.linalg.inv(s0[0, 0])
    torch.testing.assert_close(transition @ transition.T, torch.eye(3, dtype=torch.float64))
    assert torch.linalg.det(transition) == pytest.approx(1.0)


def test_chunked_gradients_match_the_recurrent_loop():
    q, k, v, beta, s0, alpha = inputs(2, T=9, gate="scalar")
    grads = []
    for mode in ("chunk", "recurrent"):
        leaves = [t.clone().requires_grad_() for t in (q, k, v, beta)]
        ops.delta_product(*leaves, mode=mode, chunk_size=4, log_alpha=alpha.log()).square().sum().backward()
        grads.append([t.grad for t in leaves])
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-9)


def test_shapes_must_agree():
    q, k, v, beta, s0, _ = inputs(2)
    with pytest.raises(ValueError, match="must share"):
        ops.delta_product(q, k, v[:, :, :, :1], beta)
