"""Positional encodings that are not learned: sinusoidal absolute, rotary (RoPE) and xPos.

Learned absolute positions (the backbone's ``nn.Embedding``) cannot reach past the trained
length; these can, which is what a length-extrapolation claim about attention needs:

- ``sinusoidal`` (Vaswani et al. 2017): ``pe[t, 2i] = sin(t w_i)``, ``pe[t, 2i + 1] = cos(t w_i)``,
  ``w_i = 10000^(-2i/d)``, added to the token embeddings. Deviation: the table is scaled so that
  each coordinate's RMS equals the embeddings' initial std (0.02), where Vaswani et al. multiply
  the embeddings by sqrt(d); at amplitude 1 the positions drown the tokens in a model initialised
  at 0.02 and trained for minutes.
- ``rope`` (Su et al. 2021): each head's query and key rotated pair-wise by angle ``t w_i``
  (``w_i = 10000^(-2i/d)``, the halves convention of GPT-NeoX), so that ``q_m . k_n`` depends on
  ``m - n`` only.
- ``xpos`` (Sun et al. 2022): RoPE with the query scaled by ``zeta_i^(m / 512)`` and the key by
  ``zeta_i^(-n / 512)``, ``zeta_i = (2i/d + 0.4) / 1.4``, so the score decays with distance
  (torchscale's defaults: gamma 0.4, scale base 512).

Rotary encodings act on queries and keys, so only attention mixers (``Mixer.rotary``) take them.
All are computed in float32 from the absolute position, in one forward or one decoding step.
"""
from __future__ import annotations

import math

import torch

ROTARY = ("rope", "xpos")
BASE = 10000.0
XPOS_GAMMA, XPOS_SCALE_BASE = 0.4, 512.0
SINUSOID_RMS = 0.02  # the token embeddings' initial std (backbone._init_weights)


def _frequencies(d: int, device) -> torch.Tensor:
    return BASE ** (-torch.arange(0, d, 2, device=device, dtype=torch.float32) / d)  # [ceil(d/2)]


def sinusoidal(positions: torch.Tensor, d: int) -> torch.Tensor:
    """The table ``[len(positions), d]`` for integer ``positions``, RMS ``SINUSOID_RMS`` per coordinate."""
    angle = positions.float()[:, None] * _frequencies(d, positions.device)[None]   # [T, ceil(d/2)]
    table = torch.stack([angle.sin(), angle.cos()], -1).flatten(-2)[:, :d]          # sin, cos interleaved
    return table * (SINUSOID_RMS * math.sqrt(2))


def rotate(x: torch.Tensor, start: int, kind: str, role: str) -> torch.Tensor:
    """``x [..., T, d]`` (queries if ``role == "q"``, else keys) at positions ``start .. start + T - 1``
    under ``kind`` ("rope" or "xpos"); ``d`` must be even. Returns ``x``'s dtype, computed in float32."""
    d, T = x.shape[-1], x.shape[-2]
    if d % 2:
        raise ValueError(f"rotary positions need an even head size, got {d}")
    pos = torch.arange(start, start + T, device=x.device, dtype=torch.float32)
    angle = pos[:, None] * _frequencies(d, x.device)[None]                         # [T, d/2]
    cos, sin = angle.cos(), angle.sin()
    x1, x2 = x.float()[..., : d // 2], x.float()[..., d // 2:]
    out = torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1)                 # [..., T, d]
    if kind == "xpos":
        zeta = (torch.arange(0, d, 2, device=x.device, dtype=torch.float32) / d + XPOS_GAMMA) / (1 + XPOS_GAMMA)
        sign = 1.0 if role == "q" else -1.0
        scale = zeta[None] ** (sign * pos[:, None] / XPOS_SCALE_BASE)               # [T, d/2]
        out = out * torch.cat([scale, scale], -1)
    elif kind != "rope":
        raise ValueError(f"unknown rotary kind {kind!r}; allowed: {ROTARY}")
    return out.to(x.dtype)
