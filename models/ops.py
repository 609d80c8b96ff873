"""Sequence-mixing kernels. Tensors are ``[B, H, T, d]``.

States, cumulative sums and denominators are computed in float32 whatever the input dtype
(autocast is switched off inside); the result is cast back to the dtype of ``v``.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from . import feature_maps as fm

MODES = ("chunk", "recurrent", "quadratic")
NORMALIZE = ("z", "rmsnorm", "none")
DEFAULT_CHUNK = 64


def normalize_option(normalize) -> str:
    """``True`` -> 'z', ``False``/``None`` -> 'none'; strings are checked."""
    if normalize is True:
        return "z"
    if normalize is False or normalize is None:
        return "none"
    if normalize not in NORMALIZE:
        raise ValueError(f"normalize must be one of {NORMALIZE} (or True/False), got {normalize!r}")
    return normalize


def _apply_map(feature_map, q, k):
    if feature_map is None:
        return q, k  # already feature-mapped
    if isinstance(feature_map, str):
        feature_map = fm.get(feature_map, q.shape[-1])
    if isinstance(feature_map, fm.FeatureMap):
        return feature_map.forward_query(q), feature_map.forward_key(k)
    return feature_map(q), feature_map(k)


def linear_attention(q, k, v, *, feature_map="elu1", causal: bool = True, normalize="z",
                     mode: str = "chunk", eps: float = 1e-6, chunk_size: int = DEFAULT_CHUNK):
    """o_t = phi(q_t)^T S_t / (phi(q_t) . z_t + eps), S_t = sum_{j<=t} phi(k_j) v_j^T, z_t = sum phi(k_j).

    ``feature_map``: a registered name, a FeatureMap, any callable, or ``None`` when q and k are
    already mapped. ``normalize``: 'z' (the paper's denominator), 'rmsnorm' (an RMS norm of the
    unnormalised output, no weights), or 'none'. Non-causal attention sums over all positions.
    """
    norm = normalize_option(normalize)
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    out_dtype = v.dtype
    with torch.autocast(device_type=q.device.type, enabled=False):
        phi_q, phi_k = _apply_map(feature_map, q.float(), k.float())
        vv = v.float()
        if norm == "z":  # a ones column turns the denominator into one more output column
            vv = torch.cat([vv, torch.ones_like(vv[..., :1])], dim=-1)
        if not causal:
            state = phi_k.transpose(-1, -2) @ vv
            out = phi_q @ state
        elif mode == "quadratic":
            scores = (phi_q @ phi_k.transpose(-1, -2)).tril()
            out = scores @ vv
        elif mode == "recurrent":
            out = _linear_recurrent(phi_q, phi_k, vv)
        else:
            out = _linear_chunk(phi_q, phi_k, vv, chunk_size)
        if norm == "z":
            out = out[..., :-1] / (out[..., -1:] + eps)
        elif norm == "rmsnorm":
            out = out * torch.rsqrt(out.square().mean(-1, keepdim=True) + eps)
    return out.to(out_dtype)


def _linear_recurrent(phi_q, phi_k, v):
    """The RNN: one rank-1 state update per token."""
    B, H, T, m = phi_k.shape
    state = phi_k.new_zeros(B, H, m, v.shape[-1])
    outs = []
    for t in range(T):
        state = state + phi_k[:, :, t, :, None] * v[:, :, t, None, :]
        outs.append((phi_q[:, :, t, None, :] @ state).squeeze(-2))
    return torch.stack(outs, dim=2)


def _pad_time(x, multiple):
    pad = (-x.shape[2]) % multiple
    return F.pad(x, (0, 0, 0, pad)) if pad else x


def _linear_chunk(phi_q, phi_k, v, chunk_size):
    """Chunkwise form: exclusive prefix sums of per-chunk states, plus masked attention inside a chunk.

    Zero-padded keys add nothing to the state, so any T works."""
    B, H, T, m = phi_k.shape
    C = min(chunk_size, T)
    q, k, vv = (_pad_time(x, C) for x in (phi_q, phi_k, v))
    n = q.shape[2] // C
    q, k, vv = (x.reshape(B, H, n, C, x.shape[-1]) for x in (q, k, vv))
    chunk_states = k.transpose(-1, -2) @ vv                    # [B, H, n, m, dv]
    states = F.pad(chunk_states.cumsum(dim=2)[:, :, :-1], (0, 0, 0, 0, 1, 0))  # state before each chunk
    inter = q @ states
    intra = (q @ k.transpose(-1, -2)).tril() @ vv
    return (inter + intra).reshape(B, H, n * C, -1)[:, :, :T]
