"""Decayed linear attention (RetNet / Mamba-2 / GLA gates) against a naive float64 loop written here."""
import pytest
import torch

from evalsuite.models.decayed import decayed_attention, decayed_attention_matrix


def naive(q, k, v, log_g, state):
    """S_t = diag(g_t) S_{t-1} + k_t v_t^T, o_t = S_t^T q_t, one token at a time."""
    outs = []
    for t in range(q.shape[2]):
        g = log_g[:, :, t].exp()
        decay = g[..., None, None] if g.dim() == 2 else g[..., None]
        state = decay * state + torch.einsum("bhd,bhe->bhde", k[:, :, t], v[:, :, t])
        outs.append(torch.einsum("bhd,bhde->bhe", q[:, :, t], state))
    return torch.stack(outs, 2), state


def inputs(kind, T, dtype=torch.float64, seed=0, strong=False):
    gen = torch.Generator().manual_seed(seed)
    B, H, dk, dv = 2, 3, 5, 4
    q, k, v = (torch.randn(B, H, T, d, generator=gen, dtype=dtype) for d in (dk, dk, dv))
    shape = (B, H, T) if kind == "scalar" else (B, H, T, dk)
    log_g = -torch.rand(*shape, generator=gen, dtype=dtype) * (30.0 if strong else 0.5)
    s0 = torch.randn(B, H, dk, dv, generator=gen, dtype=dtype)
    return q, k, v, log_g, s0


CASES = [(kind, T, C) for kind in ("scalar", "vector") for T, C in ((1, 4), (17, 4), (64, 16), (100, 32))]


@pytest.mark.parametrize("kind, T, C", CASES, ids=[f"{k}-T{t}-C{c}" for k, t, c in CASES])
@pytest.mark.parametrize("mode", ["chunk", "recurrent"])
def test_matches_naive_loop_with_initial_state(kind, T, C, mode):
    q, k, v, log_g, s0 = inputs(kind, T)
    want, want_state = naive(q, k, v, log_g, s0)
    got, state = decayed_attention(q, k, v, log_g, mode=mode, initial_state=s0, return_state=True, chunk_size=C)
    assert torch.allclose(got, want, atol=1e-10) and torch.allclose(state, want_state, atol=1e-10)


@pytest.mark.parametrize("kind, T, C", CASES + [("scalar", 16, 16), ("vector", 8, 16)],
                         ids=[f"{k}-T{t}-C{c}" for k, t, c in CASES + [("scalar", 16, 16), ("vector", 8, 16)]])
def test_from_the_zero_state_matches_naive_loop(kind, T, C):
    """No initial state: the chunk form skips what the zero state contributes (and, unless asked,
    the last state), with the naive loop's outputs and state."""
    q, k, v, log_g, s0 = inputs(kind, T)
    want, want_state = naive(q, k, v, log_g, torch.zeros_like(s0))
    got, state = decayed_attention(q, k, v, log_g, return_state=True, chunk_size=C)
    assert torch.allclose(got, want, atol=1e-10) and torch.allclose(state, want_state, atol=1e-10)
    assert torch.allclose(decayed_attention(q, k, v, log_g, chunk_size=C), want, atol=1e-10)


@pytest.mark.parametrize("kind", ["scalar", "vector"])
def test_strong_decay_stays_finite_and_exact(kind):
    q, k, v, log_g, s0 = inputs(kind, 45, strong=True)  # products of gates down to e^-1000: never divided by
    got = decayed_attention(q, k, v, log_g, initial_state=s0, chunk_size=16)
    assert torch.isfinite(got).all() and torch.allclose(got, naive(q, k, v, log_g, s0)[0], atol=1e-10)


@pytest.mark.parametrize("kind", ["scalar", "vector"])
def test_gradients_match_naive_loop(kind):
    leaves = [x.requires_grad_() for x in inputs(kind, 23)]
    out, state = decayed_attention(*leaves[:4], initial_state=leaves[4], return_state=True, chunk_size=8)
    grads = torch.autograd.grad(out.square().sum() + state.sum(), leaves)
    out_n, state_n = naive(*leaves[:4], leaves[4])
    want = torch.autograd.grad(out_n.square().sum() + state_n.sum(), leaves)
    for name, g, w in zip(("q", "k", "v", "log_g", "initial_state"), grads, want):
        assert torch.allclose(g, w, atol=1e-9), name


@pytest.mark.parametrize("kind", ["scalar", "vector"])
def test_float32_within_relative_error_of_float64(kind):
    x64 = inputs(kind, 130)
    want = naive(*x64[:4], x64[4])[0]
    got = decayed_attention(*(x.float() for x in x64[:4]), initial_state=x64[4].float())
    assert ((got.double() - want).norm() / want.norm()) < 1e-5


@pytest.mark.parametrize("kind", ["scalar", "vector"])
def test_attention_matrix_reproduces_outputs(kind):
    q, k, v, log_g, _ = inputs(kind, 19)
    weights = decayed_attention_matrix(q, k, log_g)
    assert torch.allclose(weights.double() @ v, decayed_attention(q, k, v, log_g), atol=1e-5)
    assert (weights.triu(1) == 0).all()


def test_the_faithful_mamba2_and_retnet_forms_against_their_equations_in_float64():
    """The gla mixer's Mamba-2 form (``step_size``, ``skip``, ``output_gate``): dt_t = softplus(w.x_t
    + dt_bias), S_t = exp(-A dt_t) S_{t-1} + dt_t k_t v_t^T, y_t = S_t^T q_t + D v_t, then the RMS
    norm, the swish gate and the output projection; RetNet's (fixed gammas per head, d_v = 2 d_k,
    output gate). Looped with explicit per-head matrices, against the mixer's forward pass."""
    import torch.nn.functional as F

    from evalsuite.models.gla import GatedLinearAttention as GLA

    torch.manual_seed(0)
    for opts in (dict(gate="scalar", step_size=True, skip=True, output_gate=True),
                 dict(gate="fixed", value_expansion=2, output_gate=True)):
        mixer = GLA(16, 2, GLA.Options(chunk_size=4, **opts)).double()
        x = torch.randn(2, 9, 16, dtype=torch.float64)
        H, dk, dv = 2, mixer.qk_dim, mixer.v_dim
        q, k, v = mixer.qkv(x).split([H * dk, H * dk, H * dv], dim=-1)
        q = q * dk ** -0.5
        out = torch.zeros(2, 9, H, dv, dtype=torch.float64)
        for b in range(2):
            for h in range(H):
                S = torch.zeros(dk, dv, dtype=torch.float64)
                for t in range(9):
                    qt, kt, vt = (z[b, t].view(H, -1)[h] for z in (q, k, v))
                    if opts["gate"] == "scalar":
                        dt = F.softplus(mixer.gate(x[b, t])[h] + mixer.dt_bias[h])
                        S = torch.exp(-mixer.A_log[h].exp() * dt) * S + dt * torch.outer(kt, vt)
                    else:
                        gamma = 1 - 2.0 ** (-5 - h)
                        S = gamma * S + torch.outer(kt, vt)
                    out[b, t, h] = S.T @ qt + (mixer.D[h] * vt if mixer.D is not None else 0)
        out = out * torch.rsqrt(out.square().mean(-1, keepdim=True) + 1e-6)
        out = out * F.silu(mixer.out_gate(x)).view(2, 9, H, dv)
        with torch.no_grad():
            torch.testing.assert_close(mixer(x), mixer.out(out.reshape(2, 9, H * dv)), rtol=1e-9, atol=1e-9)
        assert mixer.state_size(9) == H * dk * dv
    with pytest.raises(ValueError, match="set gate 'scalar'"):
        GLA.Options(gate="vector", step_size=True)


@pytest.mark.parametrize("dk", [5, 32], ids=["dk5-chunk8", "dk32-chunk4"])
def test_default_vector_chunk_matches_naive_loop(dk):
    """Without chunk_size the per-dimension gate takes its small default chunk (8 up to dk 16,
    else 4), over a length that leaves a partial last chunk."""
    from evalsuite.models.decayed import default_chunk

    gen = torch.Generator().manual_seed(1)
    q, k = (torch.randn(2, 1, 21, dk, generator=gen, dtype=torch.float64) for _ in range(2))
    v, s0 = torch.randn(2, 1, 21, 3, generator=gen, dtype=torch.float64), torch.randn(2, 1, dk, 3, generator=gen, dtype=torch.float64)
    log_g = -torch.rand(2, 1, 21, dk, generator=gen, dtype=torch.float64)
    assert default_chunk("vector", dk) == (8 if dk <= 16 else 4) and default_chunk("scalar", dk) == 64
    want, want_state = naive(q, k, v, log_g, s0)
    got, state = decayed_attention(q, k, v, log_g, initial_state=s0, return_state=True)
    assert torch.allclose(got, want, atol=1e-10) and torch.allclose(state, want_state, atol=1e-10)
