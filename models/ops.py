"""Sequence-mixing kernels. Tensors are ``[B, H, T, d]``.

States, cumulative sums and denominators are computed in float32 whatever the input dtype
(autocast is switched off inside); the result is cast back to the dtype of ``v``.
"""
from __future__ import annotations

import math

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


def apply_feature_map(feature_map, q, k, causal: bool = True, stabilize: bool = True):
    """phi(q), phi(k) for a map (name, FeatureMap, callable or None); maps with ``sequence_shift``
    get ``shifted_features`` unless ``stabilize`` is off (unnormalised reads)."""
    if feature_map is None:
        return q, k  # already feature-mapped
    if isinstance(feature_map, str):
        feature_map = fm.get(feature_map, q.shape[-1])
    if isinstance(feature_map, fm.FeatureMap):
        if stabilize and getattr(feature_map, "sequence_shift", False):
            return shifted_features(feature_map.query_exponent(q), feature_map.key_exponent(k), causal)
        return feature_map.forward_query(q), feature_map.forward_key(k)
    return feature_map(q), feature_map(k)


MAX_QUERY_EXPONENT = 80.0  # exp(80) ~ 5e34: below float32's limit, far above any sane spread


def shifted_features(eq, ek, causal: bool = True):
    """phi(q), phi(k) = exp(eq), exp(ek) ``[..., T, m]`` up to factors that cancel in a normalised
    read, scaled so that every denominator phi(q_t).z_t is at least 1.

    With c_t[i] = max_{j<=t} ek[j, i] and s_t = max_i (eq[t, i] + c_t[i]), query t's weights
    exp(eq[t] + ek[j] - s_t) are at most 1 and the largest is exactly 1, whatever the head size or
    input scale. As a product of per-key and per-query factors: phi(k_j) = exp(ek[j] - C) with
    C[i] = max_j ek[j, i] over the sequence, phi(q_t) = exp(eq[t] + C - s_t). The shifts are
    detached: they cancel exactly in phi(q).S / phi(q).z, so their gradient is zero."""
    C = ek.detach().amax(-2, keepdim=True)                                   # [..., 1, m]
    seen = ek.detach().cummax(-2).values if causal else C.expand_as(ek)     # c_t
    s = (eq.detach() + seen).amax(-1, keepdim=True)                          # [..., T, 1]
    return torch.exp((eq + C - s).clamp(max=MAX_QUERY_EXPONENT)), torch.exp(ek - C)


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
        phi_q, phi_k = apply_feature_map(feature_map, q.to(dtype), k.to(dtype), causal, stabilize=norm != "none")
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
        out = normalize_output(out, norm, eps)
    return out.to(out_dtype)


def normalize_output(out, normalize: str, eps: float):
    """'z': divide by the last column (the denominator phi(q).z); 'rmsnorm': RMS-normalise; 'none'."""
    if normalize == "z":
        return out[..., :-1] / (out[..., -1:] + eps)
    if normalize == "rmsnorm":
        return out * torch.rsqrt(out.square().mean(-1, keepdim=True) + eps)
    return out


def linear_attention_step(phi_q, phi_k, v, state):
    """One RNN step: ``state`` ``[B, H, m, dv]`` += phi(k) v^T, read phi(q)^T state.

    Used by the recurrent mode and by decoding (where v carries the ones column for z)."""
    state = state + phi_k[..., :, None] * v[..., None, :]
    return (phi_q[..., None, :] @ state).squeeze(-2), state


def _linear_recurrent(phi_q, phi_k, v):
    """The RNN: one rank-1 state update per token."""
    B, H, T, m = phi_k.shape
    state = phi_k.new_zeros(B, H, m, v.shape[-1])
    outs = []
    for t in range(T):
        out, state = linear_attention_step(phi_q[:, :, t], phi_k[:, :, t], v[:, :, t], state)
        outs.append(out)
    return torch.stack(outs, dim=2)


def _pad_time(x, multiple):
    pad = (-x.shape[2]) % multiple
    return F.pad(x, (0, 0, 0, pad)) if pad else x


def _linear_chunk(phi_q, phi_k, v, chunk_size):
    """Chunkwise form: exclusive prefix sums of per-chunk states, plus masked attention inside a chunk.

    Zero-padded keys add nothing to the state, so any T works."""
    B, H, T, m = phi_k.shape
    C = min(chunk_size, T)
    if C == T:  # one chunk: no state before it, so only the masked attention inside it (the same sums)
        return (phi_q @ phi_k.transpose(-1, -2)).tril() @ v
    q, k, vv = (_pad_time(x, C) for x in (phi_q, phi_k, v))
    n = q.shape[2] // C
    q, k, vv = (x.reshape(B, H, n, C, x.shape[-1]) for x in (q, k, vv))
    chunk_states = k.transpose(-1, -2) @ vv                    # [B, H, n, m, dv]
    states = F.pad(chunk_states.cumsum(dim=2)[:, :, :-1], (0, 0, 0, 0, 1, 0))  # state before each chunk
    inter = q @ states
    intra = (q @ k.transpose(-1, -2)).tril() @ vv
    return (inter + intra).reshape(B, H, n * C, -1)[:, :, :T]


def delta_rule_step(q, k, v, beta, state, log_alpha=None):
    """One step of the (gated) delta rule on ``state`` ``[B, H, dk, dv]``; q, k, v ``[B, H, d]``,
    beta and log_alpha ``[B, H]``. Returns ``(o, new_state)``."""
    if log_alpha is not None:  # [B, H]: one decay per head; [B, H, dk]: one per key channel (KDA)
        decay = torch.exp(log_alpha)
        state = state * (decay[..., :, None] if decay.dim() == state.dim() - 1 else decay[..., None, None])
    u = beta[..., None] * (v - (k[..., None, :] @ state).squeeze(-2))
    state = state + k[..., :, None] * u[..., None, :]
    return (q[..., None, :] @ state).squeeze(-2), state


def delta_rule(q, k, v, beta, *, mode: str = "chunk", initial_state=None, return_state: bool = False,
               chunk_size: int = DEFAULT_CHUNK, log_alpha=None):
    """The delta rule (Schlag et al. 2021; DeltaNet): S_t = S_{t-1} + k_t u_t^T with
    u_t = beta_t (v_t - S_{t-1}^T k_t); o_t = S_t^T q_t.

    With ``log_alpha`` ``[B, H, T]`` (log of a gate in (0, 1]) it is the gated delta rule,
    S_t = alpha_t (I - beta_t k_t k_t^T) S_{t-1} + beta_t k_t v_t^T; with ``[B, H, T, dk]``, one gate
    per key channel (Kimi Delta Attention's diagonal decay), S_t = (I - beta_t k_t k_t^T) Diag(alpha_t)
    S_{t-1} + beta_t k_t v_t^T, computed by the recurrent loop only (``mode="recurrent"``): the
    chunked form's within-chunk ratios would divide by per-channel products that underflow.
    q, k ``[B, H, T, dk]`` (keys should be L2-normalised), v ``[B, H, T, dv]``, beta ``[B, H, T]``;
    ``initial_state`` ``[B, H, dk, dv]``. Computed in float32; returns ``o`` (and the final state)."""
    if mode not in ("chunk", "recurrent"):
        raise ValueError(f"mode must be 'chunk' or 'recurrent', got {mode!r}")
    if mode == "chunk" and log_alpha is not None and log_alpha.dim() == 4:
        raise ValueError("per-channel gates (log_alpha [B, H, T, dk]) have no chunked form here: use mode='recurrent'")
    out_dtype = v.dtype
    with torch.autocast(device_type=q.device.type, enabled=False):
        dtype = torch.promote_types(q.dtype, torch.float32)  # float64 stays float64 (tests)
        q, k, v, beta = (x.to(dtype) for x in (q, k, v, beta))
        log_alpha = None if log_alpha is None else log_alpha.to(dtype)
        B, H, T, dk = k.shape
        state = None if initial_state is None else initial_state.to(dtype)  # None: zero (skipped in the chunked form)
        if mode == "recurrent":
            state = k.new_zeros(B, H, dk, v.shape[-1]) if state is None else state
            outs = []
            for t in range(T):
                gate = None if log_alpha is None else log_alpha[:, :, t]
                o, state = delta_rule_step(q[:, :, t], k[:, :, t], v[:, :, t], beta[:, :, t], state, gate)
                outs.append(o)
            out = torch.stack(outs, dim=2)
        else:
            out, state = _delta_chunk(q, k, v, beta, state, chunk_size, log_alpha, need_state=return_state)
    out = out.to(out_dtype)
    return (out, state) if return_state else out


def delta_product(q, k, v, beta, *, mode: str = "chunk", initial_state=None, return_state: bool = False,
                  chunk_size: int = DEFAULT_CHUNK, log_alpha=None):
    """DeltaProduct (Siems et al. 2025): n delta-rule steps per token, each with its own key, value
    and beta, so the state transition of one token is a product of n generalised Householder
    factors (eigenvalues in [-1, 1] when beta is in (0, 2)):

        S_t = (I - beta_{t,n} k_{t,n} k_{t,n}^T) ... (I - beta_{t,1} k_{t,1} k_{t,1}^T) alpha_t S_{t-1}
              + (the n rank-one writes, each edited by the factors after it),      o_t = S_t^T q_t.

    It is the delta rule on the sequence of n T sub-steps (token t's step s at n t + s), read only
    after each token's last step and gated (``log_alpha`` ``[B, H, T]`` or ``[B, H, T, dk]``) only
    before its first, as fla's gated_delta_product runs it; so the chunked WY form of
    ``delta_rule`` (``chunk_size`` counts sub-steps) and its recurrent reference carry over
    unchanged, and n = 1 is the delta rule itself. q ``[B, H, T, dk]``; k ``[B, H, T, n, dk]``, v
    ``[B, H, T, n, dv]``, beta ``[B, H, T, n]``."""
    B, H, T, n, dk = k.shape
    if v.shape[:4] != (B, H, T, n) or beta.shape != (B, H, T, n):
        raise ValueError(f"k {tuple(k.shape)}, v {tuple(v.shape)} and beta {tuple(beta.shape)} must share [B, H, T, n]")
    if n > 1:
        read = q.new_zeros(B, H, T, n, dk)
        read[:, :, :, -1] = q                                         # read after the last step only
        q = read.reshape(B, H, T * n, dk)                             # [B, H, T, n, dk] -> [B, H, T n, dk]
        if log_alpha is not None:                                     # the gate before the first step only
            gate = log_alpha.new_zeros(B, H, T, n, *log_alpha.shape[3:])
            gate[:, :, :, 0] = log_alpha
            log_alpha = gate.flatten(2, 3)                            # [B, H, T, n(, dk)] -> [B, H, T n(, dk)]
    out = delta_rule(q, k.flatten(2, 3), v.flatten(2, 3), beta.flatten(2, 3), mode=mode, initial_state=initial_state,
                     return_state=return_state, chunk_size=chunk_size, log_alpha=log_alpha)
    o, state = out if return_state else (out, None)
    o = o.unflatten(2, (T, n))[:, :, :, -1]                            # [B, H, T n, dv] -> [B, H, T, dv]
    return (o, state) if return_state else o


def _delta_chunk(q, k, v, beta, state, chunk_size, log_alpha=None, need_state: bool = True):
    """The delta rule chunk by chunk, in the WY form (Yang et al. 2024, "Parallelizing linear
    transformers with the delta rule over sequence length"); ``delta_rule(mode="recurrent")`` is the
    reference it is tested against.

    Conventions: the state S is [dk, dv]; a read is o_t = S_t^T q_t (row form: q_t^T S_t), and

        S_t = alpha_t (I - beta_t k_t k_t^T) S_{t-1} + beta_t k_t v_t^T     (alpha_t = 1 without gates).

    Inside one chunk of C tokens that starts from the state S_0, write G_t = alpha_1 ... alpha_t
    (G_0 = 1) and Gamma_tj = G_t / G_j for j <= t. Every S_t is S_0 decayed plus rank-one writes
    of "pseudo-values" u_j:

        S_t = G_t S_0 + sum_{j<=t} Gamma_tj k_j u_j^T.                                   (1)

    Putting (1) for S_{t-1} into the recurrence gives u_t = beta_t (v_t - alpha_t S_{t-1}^T k_t):

        u_t = beta_t (v_t - G_t S_0^T k_t - sum_{j<t} Gamma_tj (k_j^T k_t) u_j).

    With rows stacked (U, V, K, Q are [C, d]) and A = diag(beta) (tril(K K^T, -1) * Gamma):

        (I + A) U = diag(beta) V - diag(beta) diag(G) K S_0
        U = u - w S_0,   u = (I + A)^{-1} diag(beta) V,   w = (I + A)^{-1} diag(beta) diag(G) K.  (2)

    (I + A) is unit lower triangular, so u and w are one triangular solve each, for all chunks at
    once; they do not depend on S_0. Only the short loop over chunks needs the carried state:

        U   = u - w S_0                                            (the pseudo-values of this chunk)
        O   = diag(G) Q S_0 + (tril(Q K^T) * Gamma) U              (reads, from (1))
        S_C = G_C S_0 + (K * (G_C / G))^T U                        (the state handed on, from (1))

    Gates enter only through ratios G_t / G_j <= 1 (j <= t) and G_C / G_j, never by dividing by a
    small product, and the cumulative log-gates stay in float32. Padding the last chunk with
    beta = 0 and k = 0 (and gate 1) writes nothing and changes no output.

    ``state`` None is the zero state: the first chunk then skips the products with it (they are
    zero), and without ``need_state`` the state after the last chunk is not formed at all."""
    B, H, T, dk = k.shape
    C = min(chunk_size, T)
    pad = (-T) % C
    if pad:
        q, k, v = (F.pad(x, (0, 0, 0, pad)) for x in (q, k, v))
        beta = F.pad(beta, (0, pad))
        log_alpha = None if log_alpha is None else F.pad(log_alpha, (0, pad))
    n = (T + pad) // C
    q, k, v = (x.reshape(B, H, n, C, x.shape[-1]) for x in (q, k, v))  # [B, H, T', d] -> [B, H, n, C, d]
    beta = beta.reshape(B, H, n, C, 1)                                   # [B, H, T'] -> [B, H, n, C, 1]
    eye = torch.eye(C, dtype=k.dtype, device=k.device)
    kk = (k @ k.transpose(-1, -2)).tril(-1)                             # tril(K K^T, -1): [B, H, n, C, C]
    attn = (q @ k.transpose(-1, -2)).tril()                             # tril(Q K^T): [B, H, n, C, C]
    k_w, q_in = k, q
    if log_alpha is not None:
        g = log_alpha.reshape(B, H, n, C).cumsum(-1)                      # log G_t: [B, H, n, C]
        diff = g[..., :, None] - g[..., None, :]                           # log Gamma_tj: [B, H, n, C, C]
        ratio = torch.exp(diff.masked_fill(~torch.ones(C, C, dtype=torch.bool, device=k.device).tril(), -math.inf))
        kk, attn = kk * ratio, attn * ratio
        k_w, q_in = k * g.exp()[..., None], q * g.exp()[..., None]          # diag(G) K, diag(G) Q
        decay_to_end = (g[..., -1:] - g).exp()[..., None]                   # G_C / G_j: [B, H, n, C, 1]
        chunk_decay = g[..., -1].exp()[..., None, None]                     # G_C: [B, H, n, 1, 1]
    system = eye + beta * kk                                               # I + A
    u = torch.linalg.solve_triangular(system, beta * v, upper=False, unitriangular=True)    # (2): [B, H, n, C, dv]
    ws = [None] * n  # w only ever multiplies a carried state: none in one chunk from the zero state
    if state is not None or n > 1:
        ws = torch.linalg.solve_triangular(system, beta * k_w, upper=False, unitriangular=True).unbind(2)  # (2): w
    outs = []
    # unbind once: indexing chunk c inside the loop would make each step's backward allocate a
    # gradient the size of the whole tensor (quadratic in T)
    k_end = k if log_alpha is None else k * decay_to_end                      # K * (G_C / G)
    decays = chunk_decay.unbind(2) if log_alpha is not None else [None] * n
    for c, (u_c, w_c, q_c, attn_c, k_c, decay_c) in enumerate(
            zip(u.unbind(2), ws, *(x.unbind(2) for x in (q_in, attn, k_end)), decays)):
        if state is None:  # the zero state: U = u, O = (tril(Q K^T) * Gamma) U
            outs.append(attn_c @ u_c)
            if c < n - 1 or need_state:
                state = k_c.transpose(-1, -2) @ u_c  # S_C = K^T U (the decay G_C / G is in k_end)
            continue
        u_c = u_c - w_c @ state  # U = u - w S_0: the pseudo-values given the carried state
        outs.append(q_c @ state + attn_c @ u_c)  # O = diag(G) Q S_0 + (tril(Q K^T) * Gamma) U
        if c == n - 1 and not need_state:
            break
        if decay_c is None:
            state = state + k_c.transpose(-1, -2) @ u_c  # S_C = S_0 + K^T U
        else:
            state = decay_c * state + k_c.transpose(-1, -2) @ u_c  # S_C = G_C S_0 + (K * G_C / G)^T U
    out = torch.stack(outs, dim=2).reshape(B, H, n * C, -1)[:, :, :T]   # [B, H, n, C, dv] -> [B, H, T, dv]
    return out, state


# Explicit mixing matrices for analysis: each mixer's output is weights @ values, so sharpness
# and interference are measured the same way for every mixer. Small T only (T x T memory).

def linear_attention_matrix(phi_q, phi_k, normalize: str = "z", eps: float = 1e-6):
    """[B, H, T, T] weights w with o = w @ v: phi(q_t).phi(k_j) / (phi(q_t).z_t + eps) for j <= t.
    Without the z-denominator the raw scores are returned (rmsnorm rescales each row afterwards)."""
    with torch.autocast(device_type=phi_q.device.type, enabled=False):
        scores = (phi_q.float() @ phi_k.float().transpose(-1, -2)).tril()
        if normalize == "z":
            scores = scores / (scores.sum(-1, keepdim=True) + eps)
    return scores


def delta_rule_attention(q, k, beta, log_alpha=None):
    """The delta rule's effective attention (zero initial state): o = M @ v with
    M = (tril(Q K^T) * Gamma) (I + A)^{-1} diag(beta), the whole sequence as one chunk."""
    if log_alpha is not None and log_alpha.dim() == 4:  # per-channel gates: the map v -> o read off
        T = k.shape[2]                                   # the recurrence with one-hot values
        eye = torch.eye(T, dtype=torch.promote_types(q.dtype, torch.float32), device=k.device)
        return delta_rule(q, k, eye.expand(*k.shape[:2], T, T), beta, mode="recurrent", log_alpha=log_alpha)
    with torch.autocast(device_type=q.device.type, enabled=False):
        dtype = torch.promote_types(q.dtype, torch.float32)
        q, k, beta = (x.to(dtype) for x in (q, k, beta))
        T = k.shape[2]
        kk = (k @ k.transpose(-1, -2)).tril(-1)
        attn = (q @ k.transpose(-1, -2)).tril()
        if log_alpha is not None:
            g = log_alpha.to(dtype).cumsum(-1)
            lower = torch.ones(T, T, dtype=torch.bool, device=k.device).tril()
            ratio = torch.exp((g[..., :, None] - g[..., None, :]).masked_fill(~lower, -math.inf))
            kk, attn = kk * ratio, attn * ratio
        system = torch.eye(T, dtype=dtype, device=k.device) + beta[..., :, None] * kk
        inv_beta = torch.linalg.solve_triangular(system, torch.diag_embed(beta), upper=False, unitriangular=True)
    return attn @ inv_beta
