"""Attention sharpness: how concentrated each graded query's weights over its context are.

Softmax weights, linear attention's implicit weights phi(q).phi(k_j) / phi(q).z, and the delta
rule's effective attention are all rows of a mixing matrix (``Mixer.attention``). A row is turned
into a distribution p_j = |w_j| / sum |w| (delta and unnormalised rows can be negative)."""
from __future__ import annotations

import math
from typing import Iterable

import pandas as pd
import torch

from evalsuite.tasks import IGNORE

from .attention import (Chunk, answer_positions, answer_reach, answer_window, attention_views, graded_chunks,
                        mixer_name)
from .runs import AnalysisInput, run_analysis

TOP_K = 4


def row_stats(weights: torch.Tensor, answer: torch.Tensor | None = None, top_k: int = TOP_K) -> dict[str, torch.Tensor]:
    """Per row of ``weights [..., n]``: entropy (nats), largest weight, top-k mass and the mass on
    the answer: column ``answer`` (an index, ``-1`` for none) or the columns of a boolean mask of
    the same shape as ``weights``. A one-hot row has entropy 0; a uniform row log n."""
    p = weights.abs()
    p = p / p.sum(-1, keepdim=True).clamp_min(1e-30)
    entropy = -(p * torch.log(p.clamp_min(1e-30))).sum(-1)
    stats = {"entropy": entropy, "max_weight": p.amax(-1),
             "topk_mass": p.topk(min(top_k, p.shape[-1]), dim=-1).values.sum(-1)}
    if answer is not None:
        if answer.dtype == torch.bool:
            mass, found = (p * answer).sum(-1), answer.any(-1)
        else:
            mass, found = p.gather(-1, answer.clamp_min(0)[..., None]).squeeze(-1), answer >= 0
        stats["answer_mass"] = torch.where(found, mass, torch.full_like(mass, math.nan))
    return stats


@torch.no_grad()
def attention_sharpness(model, inputs: torch.Tensor, targets: torch.Tensor, answers: torch.Tensor | None = None, *,
                        batch_size: int = 32, top_k: int = TOP_K, chunks: Iterable[Chunk] | None = None) -> pd.DataFrame:
    """One row per (layer, head, graded query): entropy, entropy / log(context), largest weight,
    top-k mass, mass on the answer (its position and the next conv_kernel - 1, which the short
    convolution lets carry it), whether the model answered correctly. ``chunks``: a pass over the
    examples already made (``graded_chunks``)."""
    reach = answer_reach(model)
    frames = []
    for c in chunks if chunks is not None else graded_chunks(model, inputs, targets, answers, batch_size):
        graded = (c.targets != IGNORE).nonzero(as_tuple=False)          # [Q, 2] (example, position)
        if graded.numel() == 0:
            continue
        ex, pos = graded[:, 0], graded[:, 1]
        found = c.found[ex, pos]
        correct = (c.logits.argmax(-1) == c.targets)[ex, pos]
        for layer, (view, block) in enumerate(zip(c.views, model.blocks)):
            rows = view.per_token(view.weights[ex, :, pos])            # [Q, H, T] (|w| per token with substeps)
            T = rows.shape[-1]
            causal = torch.arange(T, device=rows.device)[None, None, :] <= pos[:, None, None]
            rows = rows.masked_fill(~causal, 0.0)
            window = answer_window(found, pos, T, reach)[:, None, :].expand_as(rows)
            stats = row_stats(rows, window, top_k)
            H = rows.shape[1]
            context = (pos + 1).float()
            frame = pd.DataFrame({
                "layer": layer, "mixer": mixer_name(block),
                "head": torch.arange(H).repeat(len(ex)).numpy(),
                "example": (c.lo + ex).repeat_interleave(H).cpu().numpy(),
                "position": pos.repeat_interleave(H).cpu().numpy(),
                "context": context.repeat_interleave(H).cpu().numpy(),
                "correct": correct.repeat_interleave(H).cpu().numpy(),
                **{k: v.reshape(-1).float().cpu().numpy() for k, v in stats.items()},
            })
            frame["norm_entropy"] = frame["entropy"] / frame["context"].map(lambda c: math.log(c) if c > 1 else 1.0)
            frames.append(frame)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


COLUMNS = ["entropy", "norm_entropy", "max_weight", "topk_mass", "answer_mass"]


def summarize(df: pd.DataFrame) -> list[dict]:
    """Means per layer and head (NaN answer masses, where no answer is in context, are skipped)."""
    if df.empty:
        return []
    out = df.groupby(["layer", "head", "mixer"])[COLUMNS].mean().reset_index()
    return out.to_dict("records")


def retrieval_layer(summary_rows: list[dict]) -> dict | None:
    """The (layer, head) that puts the most mass on the answer: where the model reads its memory."""
    rows = [r for r in summary_rows if r.get("answer_mass") == r.get("answer_mass")]  # skip NaN
    return max(rows, key=lambda r: r["answer_mass"]) if rows else None


def by_context(df: pd.DataFrame, bins: int = 8) -> pd.DataFrame:
    """Mean sharpness against context length (query position + 1), in equal-width bins."""
    if df.empty:
        return df
    edges = pd.cut(df["context"], bins=min(bins, df["context"].nunique()))
    out = df.groupby(["layer", "head", edges], observed=True)[COLUMNS].mean().reset_index()
    out["context"] = out["context"].map(lambda iv: float(iv.mid))
    return out


@run_analysis("sharpness")
def sharpness_analysis(inp: AnalysisInput) -> dict:
    """Per layer and head, the layer and head that read the answers, one query's attention row
    there, and sharpness against context length."""
    sharp = attention_sharpness(inp.model, inp.inputs, inp.targets, inp.answers, chunks=inp.chunks)
    out: dict = {"sharpness": summarize(sharp)}
    best = retrieval_layer(out["sharpness"])
    if best is not None:
        out["retrieval_layer"] = {"layer": int(best["layer"]), "head": int(best["head"])}
        out["example"] = _example(inp.model, inp.inputs, inp.targets, inp.answers, int(best["layer"]), int(best["head"]))
    out["sharpness_by_context"] = by_context(sharp).to_dict("records")
    return out


MAX_EXAMPLE_LEN = 2048  # longest attention row kept for the report


def _example(model, inputs, targets, answers, layer: int, head: int) -> dict | None:
    """One graded query of the first example that has one, at the retrieval layer and head: its
    attention row, where the answer was, and the Gram matrix of the keys where answers are read."""
    from .interference import gram

    for b in range(inputs.shape[0]):
        found = answer_positions(inputs[b:b + 1], targets[b:b + 1], None if answers is None else answers[b:b + 1])[0]
        graded = ((targets[b] != IGNORE) & (found >= 0)).nonzero().flatten()
        if graded.numel():
            break
    else:
        return None
    t = int(graded[-1])
    if t + 1 > MAX_EXAMPLE_LEN:
        return None
    _, views = attention_views(model, inputs[b:b + 1])
    view = views[layer]
    row = view.per_token(view.weights[0, head, t].float())[:t + 1]
    reach = answer_reach(model)
    offset = int(torch.stack([row[min(int(found[t]) + o, t)].abs() for o in range(reach)]).argmax())
    written = (found[graded] + offset).clamp(max=inputs.shape[1] - 1).unique()
    return {"layer": layer, "head": head, "query_position": t, "answer_position": int(found[t]),
            "reach": reach, "weights": [round(float(w), 5) for w in row],
            "gram": [[round(float(g), 4) for g in r] for r in gram(view.keys[0, head, view.columns(written)].float())],
            "key_positions": written.tolist() if view.substeps == 1 else  # a key per write: "position.step"
            [f"{p}.{s}" for p in written.tolist() for s in range(view.substeps)]}
