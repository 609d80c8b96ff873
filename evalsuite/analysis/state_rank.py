"""State rank: how many directions of its memory a model uses once it has read a sequence.

The model decodes the first ``EXAMPLES`` test sequences token by token (its own ``step``), and for
each layer and head the matrix its last read multiplies is taken from the decoding state: S for
linear attention ([m, dv]; the normaliser z, carried as an extra column, is left out) and for the
delta rule ([dk, dv]);
the cached keys for softmax attention ([T, d]). Its effective rank, exp(H(sigma / sum sigma))
(Roy & Vetterli 2007), is reported beside the largest it could be (the smaller side). A fixed
state near its largest rank is full: more pairs must overwrite or interfere.

This file is also the worked example of a run analysis: registering it here is all it takes for
every run to record it (``metrics["analysis"]["state_rank"]``); its report section is
``reports/sections/state_rank.py``.
"""
from __future__ import annotations

import math

import torch

from .attention import mixer_name
from .runs import AnalysisInput, run_analysis

EXAMPLES = 16    # sequences decoded token by token
MAX_LEN = 1024   # longer sequences are skipped (a step per token)


def effective_rank(matrix: torch.Tensor) -> float:
    """exp of the entropy of the normalised singular values of ``matrix [r, c]`` (0 for zeros)."""
    s = torch.linalg.svdvals(matrix.double())
    if float(s.sum()) == 0.0:
        return 0.0
    p = s / s.sum()
    return math.exp(float(-(p * torch.log(p.clamp_min(1e-300))).sum()))


def memory_matrix(mixer_state) -> torch.Tensor | None:
    """``[B, H, r, c]`` from a mixer's decoding state: a KV cache's keys, or the state tensor."""
    if isinstance(mixer_state, dict) and "cache" in mixer_state:
        return mixer_state["cache"][0][:, :, :mixer_state["length"]]      # keys: [B, H, T, d]
    if isinstance(mixer_state, tuple):                                     # (S, running maximum)
        mixer_state = mixer_state[0]
    return mixer_state if torch.is_tensor(mixer_state) and mixer_state.dim() == 4 else None


@run_analysis("state_rank")
@torch.no_grad()
def state_rank_analysis(inp: AnalysisInput) -> dict:
    x = inp.inputs[:EXAMPLES]
    B, T = x.shape
    if T > MAX_LEN or B == 0:
        return {}
    model = inp.model
    try:
        state = model.init_state(B, T, device=x.device)
        for t in range(T):
            _, state = model.step(x[:, t], state)
    except NotImplementedError:  # a plug-in mixer that does not decode step by step
        return {}
    rows = []
    for layer, (block, (_, mixer_state)) in enumerate(zip(model.blocks, state["layers"])):
        memory = memory_matrix(mixer_state)
        if memory is None:
            continue
        if getattr(getattr(block.mixer, "options", None), "normalize", None) == "z":
            memory = memory[..., :-1]  # z rides along as S's last column
        for head in range(memory.shape[1]):
            ranks = [effective_rank(memory[b, head].float()) for b in range(B)]
            rows.append({"layer": layer, "head": head, "mixer": mixer_name(block),
                         "effective_rank": sum(ranks) / len(ranks), "max_rank": min(memory.shape[-2:])})
    return {"state_rank": rows}
