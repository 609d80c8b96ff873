"""Sinusoidal, rotary and xPos positions against naive float64 formulas, their relative-position
property, and the backbone's rules: rotary positions only where there are attention layers, no
length limit for any of them."""
import cmath
import math

import pytest
import torch

from evalsuite import models
from evalsuite.models import positions as pe


def test_sinusoidal_table_is_the_vaswani_formula_scaled():
    d, T = 6, 9
    table = pe.sinusoidal(torch.arange(T), d).double()
    for t in range(T):
        for j in range(d):
            w = 10000 ** (-(j - j % 2) / d)
            want = (math.sin(t * w) if j % 2 == 0 else math.cos(t * w)) * 0.02 * math.sqrt(2)
            assert abs(table[t, j].item() - want) < 1e-6, (t, j)
    long = pe.sinusoidal(torch.arange(4096), 64)
    assert abs(long.pow(2).mean().sqrt().item() - pe.SINUSOID_RMS) < 1e-3  # RMS of the embeddings' init


def naive_rotate(x, start, kind, role):
    """Pair (x_i, x_{i + d/2}) as the complex number x_i + i x_{i + d/2}, times e^{i t w_i}
    (and zeta_i^(+-t/512) for xPos), in float64 with Python's cmath."""
    *lead, T, d = x.shape
    flat = x.double().reshape(-1, T, d)
    out = torch.empty_like(flat)
    for b in range(flat.shape[0]):
        for t in range(T):
            pos = start + t
            for i in range(d // 2):
                w = 10000 ** (-2 * i / d)
                z = complex(flat[b, t, i], flat[b, t, i + d // 2]) * cmath.exp(1j * pos * w)
                if kind == "xpos":
                    zeta = (2 * i / d + 0.4) / 1.4
                    z *= zeta ** ((1 if role == "q" else -1) * pos / 512)
                out[b, t, i], out[b, t, i + d // 2] = z.real, z.imag
    return out.reshape(*lead, T, d)


@pytest.mark.parametrize("kind", ["rope", "xpos"])
@pytest.mark.parametrize("role", ["q", "k"])
def test_rotation_matches_the_complex_form(kind, role):
    x = torch.randn(2, 3, 7, 8)
    torch.testing.assert_close(pe.rotate(x, 5, kind, role).double(), naive_rotate(x, 5, kind, role),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", ["rope", "xpos"])
def test_scores_depend_on_the_offset_only(kind):
    """q_m . k_n is the same for every (m, n) with one m - n: what lets rotary attention run at
    lengths it was not trained on. Angles are float32 (as in every RoPE implementation), so at
    position 2,000 they carry about 2e-4 rad of rounding: the tolerance is 1e-3."""
    q, k = torch.randn(1, 1, 1, 16, dtype=torch.float64), torch.randn(1, 1, 1, 16, dtype=torch.float64)
    score = lambda m, n: (pe.rotate(q, m, kind, "q") * pe.rotate(k, n, kind, "k")).sum().item()  # noqa: E731
    for offset in (0, 3, 40):
        ref = score(offset, 0)
        for n in (7, 300, 2000):
            assert abs(score(n + offset, n) - ref) < 1e-3 * max(1.0, abs(ref)), (offset, n)
    if kind == "rope":  # a rotation keeps norms; xPos shrinks far scores
        assert abs(pe.rotate(q, 123, kind, "q").norm() - q.norm()) < 1e-5


def test_rotary_needs_an_attention_layer():
    with pytest.raises(ValueError, match="rotates the queries and keys of attention layers"):
        models.build("linear", vocab_size=20, d_model=16, n_layers=1, n_heads=1, positions="rope")
    hybrid = models.build("hybrid", vocab_size=20, d_model=16, n_layers=2, n_heads=1, pattern="LS", positions="rope")
    assert [b.mixer.rotary_kind for b in hybrid.blocks] == [None, "rope"]


@pytest.mark.parametrize("positions", ["sinusoidal", "rope", "xpos"])
def test_no_length_limit_and_order_matters(positions):
    """Unlike learned positions, these run at any length; and without the convolution they are
    the only source of order, so permuting the context changes the output."""
    torch.manual_seed(0)
    model = models.build("softmax", vocab_size=20, d_model=16, n_layers=1, n_heads=2, positions=positions,
                         conv_kernel=0).eval()
    tokens = torch.randint(0, 20, (1, 600))
    with torch.no_grad():
        out = model(tokens)
        tokens[0, -3], tokens[0, -2] = 3, 4
        out = model(tokens)
        swapped = tokens.clone()
        swapped[0, [-3, -2]] = swapped[0, [-2, -3]]
        moved = model(swapped)
    assert torch.isfinite(out).all()
    assert not torch.allclose(out[0, -1], moved[0, -1])

