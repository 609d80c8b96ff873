"""Decayed linear attention, one op for three gates: S_t = diag(g_t) S_{t-1} + k_t v_t^T, o_t = S_t^T q_t.

``log_g`` (log g_t <= 0) is ``[B, H, T]`` when one decay serves a whole head (RetNet's fixed
gamma; Mamba-2 / SSD's data-dependent a_t) and ``[B, H, T, dk]`` when every key dimension has its
own (GLA's gate). Tensors are ``[B, H, T, d]``; the state S is ``[dk, dv]`` per head.

Chunk form (training). In a chunk of C tokens starting from the state S_0, let b_t = sum of log g
over the chunk up to t (per head, or per key dimension), so the decay from j to t is
exp(b_t - b_j) <= 1 for j <= t. Unrolling the recurrence:

    S_t = diag(e^{b_t}) S_0 + sum_{j<=t} diag(e^{b_t - b_j}) k_j v_j^T
    o_t = (q_t * e^{b_t})^T S_0 + sum_{j<=t} A_tj v_j,  A_tj = sum_d q_td k_jd e^{b_td - b_jd}
    S_C = diag(e^{b_C}) S_0 + sum_j (k_j * e^{b_C - b_j}) v_j^T

Every exponent is a difference b_t - b_j with j <= t (or b_C - b_j), never a lone -b_j: nothing
divides by a small cumulative product, so the chunk form is exact however strong the decay. With
per-dimension gates A needs the [C, C, dk] tensor of decays; the default chunk is then small
(``default_chunk``: 8 up to dk = 16, else 4), which trades that tensor's T C dk for more steps of
the chunk loop (measured at T 128, d_model 64, batch 64, one thread: 1.4 training steps/s at C = 16
with dk = 64, 4.3 at C = 4; at dk = 16 and T 64, 13.5 at C = 16, 17.9 at 8). Cumulative log-gates and the state stay in float32 (float64 stays float64, for tests).
"""
from __future__ import annotations

import math

import torch

SCALAR_CHUNK = 64


def default_chunk(kind: str, dk: int) -> int:
    """The chunk length when none is given: 64 for one decay per head; for per-dimension decays
    8 up to dk = 16, else 4 (the module docstring's measurement)."""
    return SCALAR_CHUNK if kind == "scalar" else (8 if dk <= 16 else 4)


def decayed_attention(q, k, v, log_g, *, mode: str = "chunk", initial_state=None, return_state: bool = False,
                      chunk_size: int | None = None):
    """``o [B, H, T, dv]`` (and the final state ``[B, H, dk, dv]`` with ``return_state``)."""
    if mode not in ("chunk", "recurrent"):
        raise ValueError(f"mode must be 'chunk' or 'recurrent', got {mode!r}")
    if log_g.dim() not in (3, 4):
        raise ValueError(f"log_g must be [B, H, T] or [B, H, T, dk], got shape {tuple(log_g.shape)}")
    out_dtype = v.dtype
    with torch.autocast(device_type=q.device.type, enabled=False):
        dtype = torch.promote_types(q.dtype, torch.float32)
        q, k, v, log_g = (x.to(dtype) for x in (q, k, v, log_g))
        B, H, T, dk = k.shape
        state = None if initial_state is None else initial_state.to(dtype)  # None: zero (skipped in the chunk form)
        if mode == "recurrent":
            state = k.new_zeros(B, H, dk, v.shape[-1]) if state is None else state
            outs = []
            for t in range(T):
                o, state = decayed_step(q[:, :, t], k[:, :, t], v[:, :, t], log_g[:, :, t], state)
                outs.append(o)
            out = torch.stack(outs, dim=2)
        else:
            kind = "vector" if log_g.dim() == 4 else "scalar"
            out, state = _decayed_chunk(q, k, v, log_g, state, chunk_size or default_chunk(kind, dk), need_state=return_state)
    out = out.to(out_dtype)
    return (out, state) if return_state else out


def decayed_step(q, k, v, log_g, state):
    """One token: q, k ``[B, H, dk]``, v ``[B, H, dv]``, log_g ``[B, H]`` or ``[B, H, dk]``."""
    g = torch.exp(log_g)
    g = g[..., None, None] if g.dim() == 2 else g[..., None]                 # [B, H, 1 or dk, 1]
    state = g * state + k[..., :, None] * v[..., None, :]                   # diag(g) S + k v^T
    return (q[..., None, :] @ state).squeeze(-2), state                     # o = S^T q: [B, H, dv]


def _decayed_chunk(q, k, v, log_g, state, chunk_size, need_state: bool = True):
    """The chunk form (module docstring). ``state`` None is the zero state: the first chunk reads
    nothing from it, and without ``need_state`` the state after the last chunk is not formed."""
    B, H, T, dk = k.shape
    C = min(chunk_size, T)
    pad = (-T) % C
    if pad:  # zero keys write nothing and g = 1 changes nothing
        q, k, v = (torch.nn.functional.pad(x, (0, 0, 0, pad)) for x in (q, k, v))
        log_g = torch.nn.functional.pad(log_g, (0, 0, 0, pad) if log_g.dim() == 4 else (0, pad))
    n = (T + pad) // C
    q, k, v = (x.reshape(B, H, n, C, x.shape[-1]) for x in (q, k, v))        # [B, H, T', d] -> [B, H, n, C, d]
    b = log_g.reshape(B, H, n, C, -1).cumsum(-2)                             # b_t: [B, H, n, C, 1 or dk]
    causal = torch.ones(C, C, dtype=torch.bool, device=k.device).tril()
    if b.shape[-1] == 1:  # one decay per head: A = (Q K^T) * e^{b_t - b_j}
        bs = b[..., 0]                                                       # [B, H, n, C]
        decay = torch.exp((bs[..., :, None] - bs[..., None, :]).masked_fill(~causal, -math.inf))
        A = (q @ k.transpose(-1, -2)) * decay                                # [B, H, n, C, C]
    else:  # per key dimension: A_tj = sum_d q_td k_jd e^{b_td - b_jd}
        diff = b[..., :, None, :] - b[..., None, :, :]                       # [B, H, n, C, C, dk]
        decay = torch.exp(diff.masked_fill(~causal[..., None], -math.inf))
        A = torch.einsum("bhntd,bhnsd,bhntsd->bhnts", q, k, decay)          # [B, H, n, C, C]
    intra = A @ v                                                            # [B, H, n, C, dv]
    if state is None and n == 1 and not need_state:  # one chunk from the zero state: nothing carried
        return intra.reshape(B, H, C, -1)[:, :, :T], None
    q_in = q * torch.exp(b)                                                  # decay from the chunk's start to t
    k_out = k * torch.exp(b[..., -1:, :] - b)                                # decay from j to the chunk's end
    chunk_decay = torch.exp(b[..., -1, :])[..., None]                        # e^{b_C}: [B, H, n, 1 or dk, 1]
    outs = []
    # unbind once: indexing chunk c of a tensor inside the loop would make each step's backward
    # allocate a gradient the size of the whole tensor (quadratic in T)
    for c, (q_c, intra_c, decay_c, k_c, v_c) in enumerate(zip(*(x.unbind(2) for x in (q_in, intra, chunk_decay, k_out, v)))):
        outs.append(intra_c if state is None else q_c @ state + intra_c)
        if c == n - 1 and not need_state:
            break
        write = k_c.transpose(-1, -2) @ v_c
        state = write if state is None else decay_c * state + write
    out = torch.stack(outs, dim=2).reshape(B, H, n * C, -1)[:, :, :T]       # [B, H, n, C, dv] -> [B, H, T, dv]
    return out, state


def decayed_attention_matrix(q, k, log_g):
    """``[B, H, T, T]`` weights W with o = W @ v (zero initial state), for analysis (small T)."""
    with torch.autocast(device_type=q.device.type, enabled=False):
        q, k, log_g = q.float(), k.float(), log_g.float()
        T = q.shape[2]
        causal = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
        b = log_g.cumsum(2)                                                  # [B, H, T] or [B, H, T, dk]
        if b.dim() == 3:
            return (q @ k.transpose(-1, -2)) * torch.exp((b[..., :, None] - b[..., None, :]).masked_fill(~causal, -math.inf))
        diff = (b[:, :, :, None, :] - b[:, :, None, :, :]).masked_fill(~causal[..., None], -math.inf)
        return torch.einsum("bhtd,bhsd,bhtsd->bhts", q, k, torch.exp(diff))
