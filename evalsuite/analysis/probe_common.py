"""What every capacity probe shares: its memories (a mixer's own, ``models.probe_memory``), the
check of its arguments, retrieval accuracy, and the row it stores."""
from __future__ import annotations

import torch.nn.functional as F

from evalsuite import models
from evalsuite.labels import memory_label


def memory_names() -> list[str]:
    """The mixers a probe can take as its memory (those that name one, ``Mixer.memory``)."""
    return sorted(n for n, cls in models.MODELS.items() if getattr(cls, "memory", None) is not None)


def check(memory: str, d_key: int, pairs) -> list[int]:
    """``pairs`` as ints; ``ValueError`` naming the argument and what is allowed."""
    if memory not in memory_names():
        why = ""
        if memory in models.MODELS:
            why = f" ({memory}: {models.mixer_class(memory).no_memory})"
        raise ValueError(f"memory must be one of {', '.join(memory_names())}, got {memory!r}{why}")
    if not isinstance(d_key, int) or isinstance(d_key, bool) or d_key < 1:
        raise ValueError(f"d_key must be a positive integer, got {d_key!r}")
    pairs = [int(s) for s in pairs]
    if not pairs or min(pairs) < 1:
        raise ValueError(f"pairs must be positive integers, got {pairs!r}")
    return pairs


def build(memory: str, d_key: int, feature_map=None, feature_map_options=None, **options):
    """The probe memory of mixer ``memory`` (``models.probe_memory``); only a linear memory takes a map."""
    if feature_map is not None or feature_map_options:
        options.update(feature_map=feature_map, feature_map_options=feature_map_options)
    return models.probe_memory(memory, d_key, **options)


def retrieval(read, values_true, candidates) -> tuple[float, float]:
    """(accuracy, mse): the read is nearest (cosine) to its own value among ``candidates`` [N, C, d]."""
    sims = F.normalize(read, dim=-1) @ F.normalize(candidates, dim=-1).transpose(-1, -2)  # [N, R, C]
    target = F.normalize(values_true, dim=-1)
    own = (F.normalize(read, dim=-1) * target).sum(-1, keepdim=True)
    correct = (sims <= own + 1e-6).all(-1)
    return correct.float().mean().item(), F.mse_loss(read, values_true).item()


def memory_feature_dim(memory: str, d_key: int, feature_map=None, feature_map_options=None) -> int | None:
    """d' of a probe's memory, read from the memory itself (``Memory.key_features``): a linear
    memory's feature map output size (elu+1: d_key; DPFP: 2 nu d_key; Performer: 2 x its random
    features), the delta rule's key size; None for softmax, which keeps every pair."""
    return build(memory, d_key, feature_map, feature_map_options).key_features()


def row(memory, feature_map, options, d_key, S, acc, loss, trained, setting, state, **extra) -> dict:
    """The row a probe stores for one S (the store's probes table)."""
    name = memory_label(memory, feature_map, options)
    return {"memory": name, "kind": memory, "feature_map": feature_map if memory == "linear" else None,
            "d_key": d_key, "pairs": S, "accuracy": acc, "loss": loss, "trained": trained, "setting": setting,
            "state_floats": state, "feature_dim": memory_feature_dim(memory, d_key, feature_map, options), **extra}
