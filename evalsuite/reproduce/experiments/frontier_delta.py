"""Frontier (1 of 3): the delta rule reaches MQAR accuracy 0.9 with less state than additive
(elu+1) and decayed (GLA, Mamba-2, RetNet) linear attention (docs/FINDINGS.md, finding 9)."""
from __future__ import annotations

from evalsuite.reproduce import frontier as fr
from evalsuite.reproduce.cells import Cell
from evalsuite.reproduce.experiment import Experiment, register

DECAYED_AND_ADDITIVE = ("elu+1", "GLA", "Mamba-2", "RetNet")


def check(fam: dict[str, list[Cell]]) -> tuple[dict[str, bool | None], list[str], list[Cell]]:
    """The delta rule reaches LEVEL with less state than every additive and decayed family (each
    clause waits on the delta rule's cells and its rival's)."""
    others = {k: v for k, v in fam.items() if k in DECAYED_AND_ADDITIVE}
    figures = [f"least state reaching {fr.LEVEL} (base or 4x budget) as the grid places it (above the last point "
               f"settled below, at or below the first that reaches; floats): " + ", ".join(
                   f"{k} {fr.least_state_range(v)}" for k, v in {"delta": fam["delta"], **others}.items())]
    figures += fr.learned_nowhere(fam, ["delta", *others])
    checks = {k: fr.less_state(fam["delta"], v) for k, v in others.items()}
    waits = [c for k in ["delta", *(k for k, x in checks.items() if x is None)] for c in fam[k]]
    return ({f"delta reaches {fr.LEVEL} with less state than {k}": x for k, x in checks.items()}, figures,
            waits if any(x is None for x in checks.values()) else [])


register(Experiment(
    "frontier-delta",
    f"The delta rule reaches MQAR accuracy {fr.LEVEL} with less state than additive (elu+1) and decayed "
    "(GLA, Mamba-2, RetNet) linear attention.",
    fr.SOURCE, fr.verdict_of(check), fr.DESIGNS, fr.MINUTES, group="frontier",
    order=130))
