"""Which points of a sweep train together (``--group``): those that differ only in learning rate
and seed (``train.group_key``), in groups of at most ``MAX_GROUP``, and no larger than it
takes to give every worker a group. ``on`` trains every group batched; ``off`` never groups;
``auto`` groups on CUDA only, and there the worker times a few steps of both ways first and trains
the group batched only where that is faster (``train.group.pays``). On CPU the batched step
measured no faster than the members' own steps at d_model 16, 32 and 64 (README, "Grouped
training": x0.95-1.05 for elu+1 and the delta rule, x0.68-0.89 for softmax), and a group is one
unit of work, which coarsens how a sweep's runs spread over its workers, so ``auto`` does not
group there."""
from __future__ import annotations

import math

GROUP_MODES = ("auto", "on", "off")
MAX_GROUP = 8


def plan(configs: list, mode: str, *, slots: int = 1, cuda: bool = False) -> list[list[int]]:
    """Indices into ``configs``, one list per unit a worker trains (a run alone, or a group), in
    the order of each unit's first point. ``cuda``: the workers train on CUDA (``auto`` groups
    there only)."""
    if mode not in GROUP_MODES:
        raise ValueError(f"--group must be one of {', '.join(GROUP_MODES)}, got {mode!r}")
    if mode == "off" or (mode == "auto" and not cuda):
        return [[i] for i in range(len(configs))]
    from evalsuite.train import group_key

    size = max(1, min(MAX_GROUP, math.ceil(len(configs) / max(1, slots))))
    units, groups = [], {}
    for i, config in enumerate(configs):
        key = group_key(config)
        if key is None:
            units.append([i])
        else:
            groups.setdefault(key, []).append(i)
    for members in groups.values():
        units += [members[j:j + size] for j in range(0, len(members), size)]
    return sorted(units)
