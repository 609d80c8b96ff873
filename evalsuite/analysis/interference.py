"""Key interference: how much the stored keys overlap, and how much the other pairs' values leak
into a read.

For a layer and head: the Gram matrix of the memory's keys (feature-mapped for linear attention)
at the positions where the answers are read (the answer's position, or the one after it that
the short convolution carries it to and the head weights most); its mean and largest off-diagonal cosine
(coherence) and its effective rank. Both are measured twice, on the raw key projections and on
the keys the memory stores (after the feature map), and each beside the value that as many random
Gaussian keys give in that space (``random_*``): elu+1's all-positive features make even random
keys coherent (mean cosine ~0.6-0.9 against ~0.1 raw), so only the excess over random is learned. At each graded position the cross-talk ratio
|sum_{j not in A} w_j v_j| / |sum_{j in A} w_j v_j|, with A the positions that can carry the
answer: the read noise from every other position against the signal from the right ones."""
from __future__ import annotations

import math
from typing import Iterable

import pandas as pd
import torch
import torch.nn.functional as F

from evalsuite.tasks import IGNORE

from .attention import Chunk, answer_reach, answer_window, graded_chunks, mixer_name
from .runs import AnalysisInput, run_analysis


def gram(keys: torch.Tensor) -> torch.Tensor:
    """Cosine Gram matrix of ``keys [n, m]``."""
    unit = F.normalize(keys.double(), dim=-1)
    return unit @ unit.T


def coherence(keys: torch.Tensor) -> dict[str, float]:
    """Mean and largest |off-diagonal cosine| and effective rank (exp of the entropy of the
    normalised singular values; Roy & Vetterli 2007) of ``keys [n, m]``."""
    n = keys.shape[0]
    if n < 2:
        return {"coherence_mean": 0.0, "coherence_max": 0.0, "effective_rank": float(n)}
    g = gram(keys)
    off = g[~torch.eye(n, dtype=torch.bool)].abs()
    s = torch.linalg.svdvals(F.normalize(keys.double(), dim=-1))
    p = s / s.sum()
    rank = math.exp(float(-(p * torch.log(p.clamp_min(1e-300))).sum()))
    return {"coherence_mean": float(off.mean()), "coherence_max": float(off.max()), "effective_rank": rank}


RANDOM_DRAWS = 16


@torch.no_grad()
def random_coherence(n: int, dim: int, key_map=None, draws: int = RANDOM_DRAWS, seed: int = 0) -> dict[str, float]:
    """Mean coherence and effective rank of ``n`` random N(0, 1) keys of size ``dim``, raw and
    through ``key_map`` (what the map's geometry alone gives), averaged over ``draws``."""
    gen = torch.Generator().manual_seed(seed)
    keys = torch.randn(draws, n, dim, generator=gen)
    mapped = key_map(keys) if key_map is not None else keys
    raw = [coherence(k) for k in keys]
    out = [coherence(k.float()) for k in mapped]
    mean = lambda rows, key: sum(r[key] for r in rows) / len(rows)  # noqa: E731
    return {"random_raw_coherence_mean": mean(raw, "coherence_mean"), "random_raw_effective_rank": mean(raw, "effective_rank"),
            "random_coherence_mean": mean(out, "coherence_mean"), "random_effective_rank": mean(out, "effective_rank")}


def crosstalk(weights: torch.Tensor, values: torch.Tensor, answer) -> float:
    """|sum_{j not in answer} w_j v_j| / |sum_{j in answer} w_j v_j| for one row ``weights [n]``,
    ``values [n, d]``; ``answer`` is an index or a boolean mask over the n positions."""
    if not isinstance(answer, torch.Tensor) or answer.dtype != torch.bool:
        answer = torch.arange(len(weights)) == int(answer)
    signal = (weights * answer) @ values
    noise = weights @ values - signal
    return float(noise.norm() / signal.norm().clamp_min(1e-30))


@torch.no_grad()
def key_interference(model, inputs: torch.Tensor, targets: torch.Tensor, answers: torch.Tensor | None = None, *,
                     batch_size: int = 32, chunks: Iterable[Chunk] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(queries, examples)``: per (layer, head, graded query) the cross-talk ratio and whether
    the answer was right; per (layer, head, example) the keys' coherence and effective rank and
    the number of wrong answers. ``chunks``: a pass over the examples already made."""
    reach = answer_reach(model)
    query_rows, example_rows = [], []
    baselines: dict[tuple[int, int], dict] = {}  # (layer, number of keys) -> random-key coherence
    for c in chunks if chunks is not None else graded_chunks(model, inputs, targets, answers, batch_size):
        lo, x, y, views, found = c.lo, c.inputs, c.targets, c.views, c.found
        correct = c.logits.argmax(-1) == y
        graded = ((y != IGNORE) & (found >= 0)).nonzero(as_tuple=False)   # [Q, 2]
        if graded.numel() == 0:
            continue
        ex, pos = graded[:, 0], graded[:, 1]
        ans = found[ex, pos]
        for layer, (view, block) in enumerate(zip(views, model.blocks)):
            T = view.weights.shape[-1] // view.substeps  # tokens (a column per write with substeps)
            causal = view.token_columns(torch.arange(T, device=x.device)[None, None, :] <= pos[:, None, None])
            rows = view.weights[ex, :, pos].float().masked_fill(~causal, 0.0)          # [Q, H, T n]
            values = view.values[ex].float()                                           # [Q, H, T n, d]
            window = view.token_columns(answer_window(ans, pos, T, reach))[:, None, :].float()  # [Q, 1, T n]
            signal = (rows * window)[:, :, None, :] @ values                           # [Q, H, 1, d]
            noise = (rows[:, :, None, :] @ values) - signal
            ratio = noise.norm(dim=-1).squeeze(-1) / signal.norm(dim=-1).squeeze(-1).clamp_min(1e-30)
            H = rows.shape[1]
            query_rows.append(pd.DataFrame({
                "layer": layer, "head": torch.arange(H).repeat(len(ex)).numpy(), "mixer": mixer_name(block),
                "example": (lo + ex).repeat_interleave(H).cpu().numpy(), "position": pos.repeat_interleave(H).cpu().numpy(),
                "crosstalk": ratio.reshape(-1).cpu().numpy(),
                "correct": correct[ex, pos].repeat_interleave(H).cpu().numpy()}))
            # keys where each head reads the answers: the offset in the window it weights most
            mass = view.per_token(rows)                                                # [Q, H, T]
            offsets = torch.stack([mass.gather(-1, (ans + o).clamp(max=T - 1)[:, None, None].expand(-1, H, 1)).squeeze(-1)
                                   for o in range(reach)], -1).abs().mean(0).argmax(-1)  # [H]
            raw_keys = view.keys if view.raw_keys is None else view.raw_keys
            for b in ex.unique().tolist():
                mine = ex == b
                wrong = int((~correct[b, pos[mine]]).sum())
                for h in range(H):
                    written = view.columns((ans[mine] + offsets[h]).clamp(max=T - 1).unique())
                    raw = coherence(raw_keys[b, h, written].float())
                    n = len(written)
                    if (layer, n) not in baselines:
                        baselines[layer, n] = random_coherence(n, raw_keys.shape[-1], view.key_map)
                    example_rows.append({"layer": layer, "head": h, "mixer": mixer_name(block), "example": lo + b,
                                         "n_keys": n, "wrong": wrong, "read_offset": int(offsets[h]),
                                         **coherence(view.keys[b, h, written].float()),
                                         "raw_coherence_mean": raw["coherence_mean"], "raw_effective_rank": raw["effective_rank"],
                                         **baselines[layer, n]})
    return (pd.concat(query_rows, ignore_index=True) if query_rows else pd.DataFrame(),
            pd.DataFrame(example_rows))


RANDOM_COLUMNS = ("raw_coherence_mean", "raw_effective_rank", "random_coherence_mean", "random_effective_rank",
                  "random_raw_coherence_mean", "random_raw_effective_rank")


def summarize(queries: pd.DataFrame, examples: pd.DataFrame) -> list[dict]:
    """Per layer and head: coherence, effective rank, median cross-talk overall and for right and
    wrong answers (how interference relates to errors)."""
    if queries.empty:
        return []
    out = []
    for (layer, head, mixer), q in queries.groupby(["layer", "head", "mixer"]):
        e = examples[(examples["layer"] == layer) & (examples["head"] == head)]
        wrong = q[~q.correct]
        out.append({"layer": layer, "head": head, "mixer": mixer,
                    "read_offset": int(e["read_offset"].iloc[0]) if len(e) else 0,
                    "coherence_mean": float(e.coherence_mean.mean()), "coherence_max": float(e.coherence_max.mean()),
                    "effective_rank": float(e.effective_rank.mean()), "n_keys": float(e.n_keys.mean()),
                    **{k: float(e[k].mean()) for k in RANDOM_COLUMNS if k in e},
                    "crosstalk_median": float(q.crosstalk.median()),
                    "crosstalk_correct": float(q[q.correct].crosstalk.median()) if q.correct.any() else math.nan,
                    "crosstalk_wrong": float(wrong.crosstalk.median()) if len(wrong) else math.nan})
    return out


def by_keys(examples: pd.DataFrame) -> pd.DataFrame:
    """Coherence and effective rank against the number of stored keys."""
    if examples.empty:
        return examples
    return examples.groupby(["layer", "head", "n_keys"])[["coherence_mean", "coherence_max", "effective_rank",
                                                          "wrong"]].mean().reset_index()


@run_analysis("interference")
def interference_analysis(inp: AnalysisInput) -> dict:
    queries, examples = key_interference(inp.model, inp.inputs, inp.targets, inp.answers, chunks=inp.chunks)
    return {"interference": summarize(queries, examples), "interference_by_keys": by_keys(examples).to_dict("records")}
