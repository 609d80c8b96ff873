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
        dtype = torch.promote_types(q.dtype, torch.float32)  # at least float32; float64 stays (tests)
        phi_q, phi_k = _apply_map(feature_map, q.to(dtype), k.to(dtype))
        vv = v.to(dtype)
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


def delta_rule(q, k, v, beta, *, mode: str = "chunk", initial_state=None, return_state: bool = False,
               chunk_size: int = DEFAULT_CHUNK):
    """The delta rule (Schlag et al. 2021; DeltaNet): S_t = S_{t-1} + k_t u_t^T with
    u_t = beta_t (v_t - S_{t-1}^T k_t); o_t = S_t^T q_t.

    q, k ``[B, H, T, dk]`` (keys should be L2-normalised), v ``[B, H, T, dv]``, beta ``[B, H, T]``;
    ``initial_state`` ``[B, H, dk, dv]``. Computed in float32; returns ``o`` (and the final state)."""
    if mode not in ("chunk", "recurrent"):
        raise ValueError(f"mode must be 'chunk' or 'recurrent', got {mode!r}")
    out_dtype = v.dtype
    with torch.autocast(device_type=q.device.type, enabled=False):
        dtype = torch.promote_types(q.dtype, torch.float32)  # float64 stays float64 (tests)
        q, k, v, beta = (x.to(dtype) for x in (q, k, v, beta))
        B, H, T, dk = k.shape
        state = (k.new_zeros(B, H, dk, v.shape[-1]) if initial_state is None else initial_state.to(dtype))
        if mode == "recurrent":
            outs = []
            for t in range(T):
                kt = k[:, :, t]
                u = beta[:, :, t, None] * (v[:, :, t] - (kt[:, :, None, :] @ state).squeeze(-2))
                state = state + kt[..., :, None] * u[..., None, :]
                outs.append((q[:, :, t, None, :] @ state).squeeze(-2))
            out = torch.stack(outs, dim=2)
        else:
            out, state = _delta_chunk(q, k, v, beta, state, chunk_size)
    out = out.to(out_dtype)
    return (out, state) if return_state else out


def _delta_chunk(q, k, v, beta, state, chunk_size):
    """Chunkwise WY form: a unit-triangular solve per chunk (all chunks at once), then a short
    loop over chunks. Padding with beta = 0 and k = 0 changes nothing."""
    B, H, T, dk = k.shape
    C = min(chunk_size, T)
    pad = (-T) % C
    if pad:
        q, k, v = (F.pad(x, (0, 0, 0, pad)) for x in (q, k, v))
        beta = F.pad(beta, (0, pad))
    n = (T + pad) // C
    q, k, v = (x.reshape(B, H, n, C, x.shape[-1]) for x in (q, k, v))
    beta = beta.reshape(B, H, n, C, 1)
    eye = torch.eye(C, dtype=k.dtype, device=k.device)
    system = eye + (beta * (k @ k.transpose(-1, -2))).tril(-1)           # I + A
    w = torch.linalg.solve_triangular(system, beta * k, upper=False, unitriangular=True)
    u = torch.linalg.solve_triangular(system, beta * v, upper=False, unitriangular=True)
    attn = (q @ k.transpose(-1, -2)).tril()
    outs = []
    for c in range(n):
        u_c = u[:, :, c] - w[:, :, c] @ state
        outs.append(q[:, :, c] @ state + attn[:, :, c] @ u_c)
        state = state + k[:, :, c].transpose(-1, -2) @ u_c
    out = torch.stack(outs, dim=2).reshape(B, H, n * C, -1)[:, :, :T]
    return out, state
